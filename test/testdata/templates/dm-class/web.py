class Tier(object):
  def __init__(self, name):
    self.name = name

def GenerateConfig(context):
  return {'resources': []}
