"""c10 core: dtypes, devices, layouts, memory formats, type promotion, sizes, storages, strides.

Nothing here knows about operators; every layer above builds on these types. TensorImpl
construction (``tensor_impl``) sets a tensor's dispatch key set from the c10-level key and TLS
modules (``ember/_dispatch/keys.py``, ``tls.py``), which import nothing above them.
"""
