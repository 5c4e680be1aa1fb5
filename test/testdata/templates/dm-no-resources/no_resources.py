def GenerateConfig(context):
  return ''
