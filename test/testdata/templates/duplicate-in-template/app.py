def GenerateConfig(context):
    return {'resources': [
        {'name': 'worker', 'type': 'shape'},
        {'name': 'worker', 'type': 'shape'},
    ]}
