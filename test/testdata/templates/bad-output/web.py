def GenerateConfig(context):
    return {'resources': [{'name': 'x', 'type': 'shape', 'propreties': {}}]}
