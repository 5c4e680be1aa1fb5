def GenerateConfig(context):
  return {'resources': None}
