def even(n):
  if n == 0:
    return True
  return odd(n - 1)

def odd(n):
  if n == 0:
    return False
  return even(n - 1)

def GenerateConfig(context):
  return {'resources': [] if even(2) else []}
