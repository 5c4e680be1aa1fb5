def GenerateConfig(context):
  resources = []
  del resources
  return {'resources': []}
