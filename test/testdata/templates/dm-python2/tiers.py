"""Shapes for each tier, the way a Python 2 era Deployment Manager template wrote them."""

import yaml


def Labels(labels):
  out = {}
  for k, v in labels.iteritems():
    if isinstance(v, basestring) and not isinstance(v, (int, long)):
      out['user.' + k] = unicode(v)
  del out['user.internal']  # Internal labels do not reach the instances.
  return out


def GenerateConfig(context):
  props = context.properties
  tiers = dict(props['tiers'])
  if tiers.has_key('debug'):
    del tiers['debug']
  names = sorted(tiers.iterkeys())
  total = 0
  for count in tiers.itervalues():
    total += count
  order = [n for n in names]
  del order[0]
  resources = []
  for i in xrange(len(names)):
    name = names[i]
    size = tiers.get(name)
    if size is None or props.get('missing') is not None:
      continue
    resources.append({
        'name': context.env['name'] + '-' + name,
        'type': 'shape',
        'properties': {
            'description': '%s of %d instances in all; after %s: %s' % (name, total, names[0], order),
            'config': Labels(props['labels']),
            'scaling_maximum': size,
            'instance_template': {'source': {'type': 'image', 'alias': props['image']}},
        },
    })
  return yaml.dump({'resources': resources})
