"""A package whose __init__ imports a sibling helper."""
import helpers.common

PREFIX = 'x-'


def label(name):
    return '%s%s (max %d)' % (PREFIX, name, helpers.common.shape(name, 4)['scaling_maximum'])
