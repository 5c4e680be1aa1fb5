def GenerateConfig(context):
    return {'resources': [{'name': 'shape-%d' % i, 'type': 'shape'} for i in range(5)]}
