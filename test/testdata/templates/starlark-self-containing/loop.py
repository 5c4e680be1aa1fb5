def GenerateConfig(context):
    resources = []
    resources.append(resources)
    return yaml.dump({'resources': resources})
