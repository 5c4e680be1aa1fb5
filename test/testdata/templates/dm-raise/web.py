def GenerateConfig(context):
  if 'image' not in context.properties:
    raise Exception('image is required')
  return {'resources': []}
