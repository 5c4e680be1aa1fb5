def GenerateConfig(context):
    return {'resources': [{'name': context.env['name'] + '-a', 'type': 'a.jinja'}]}
