def GenerateConfig(context):
    n = 0
    while True:
        n += 1
    return {'resources': []}
