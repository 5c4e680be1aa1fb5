"""Reads a property nobody gave."""


def GenerateConfig(context):
    port = context.properties['port']
    return {'resources': []}
