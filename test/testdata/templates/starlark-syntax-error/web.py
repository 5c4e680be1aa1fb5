def GenerateConfig(context):
    try:
        return {'resources': []}
    except Exception:
        return {}
