"""c10 core: dtypes, devices, layouts, memory formats, type promotion, sizes, storages, strides.

Nothing here knows about operators or dispatch; every layer above builds on these types.
"""
