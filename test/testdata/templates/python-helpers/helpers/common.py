"""Common helpers: a shape's properties."""


def shape(description, maximum):
    return {
        'description': description,
        'config': {},
        'instance_template': {'source': {'type': 'image', 'alias': 'debian/12'}},
        'scaling_minimum': 1,
        'scaling_maximum': maximum,
    }
