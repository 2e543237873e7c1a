"""Meta kernels: compute only output shapes, strides and dtypes; no data is touched. Each
allocates what the rules (``ember/_kernels/rules``) say.

Kernels reach the dispatcher by reference (``ember/_kernels/registration.py``) or by the name
``native_functions.yaml`` gives them, which ``ember/_ops/registry.py`` finds as a ``def`` or an
assignment in one of this package's modules."""
