"""Database shapes, built with helpers."""
import json
import helpers.common
import helpers.extra
from helpers.extra import label as make_label


def GenerateConfig(context):
    name = context.env['name']
    props = helpers.common.shape(name, context.properties['size'])
    props['config']['user.label'] = make_label(name)
    props['config']['user.meta'] = json.dumps({'size': context.properties['size']})
    props['config']['user.prefix'] = helpers.extra.PREFIX
    return {'resources': [{'name': name, 'type': 'shape', 'properties': props}]}
