"""A tier: one node template per replica.

Written as a Deployment Manager Python template would be.
"""

def GenerateConfig(context):
    replicas = context.properties.get('replicas', 1)
    label = context.properties.get('label')
    if label is None:
        label = 'tier %s of %s' % (context.env['name'], context.env['deployment'])
    resources = []
    for i in range(replicas):
        resources.append({
            'name': '%s-node%d' % (context.env['name'], i),
            'type': 'node.star',
            'properties': {
                'image': context.properties['image'],
                'label': label,
            },
        })
    return {'resources': resources}
