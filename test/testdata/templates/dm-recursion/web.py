def flatten(tree):
  out = []
  for child in tree.get('children', []):
    out.extend(flatten(child))
  return out

def GenerateConfig(context):
  return {'resources': flatten({})}
