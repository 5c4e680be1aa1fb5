"""A helper the schema imports; the template does not use it."""

def unused():
  return None
