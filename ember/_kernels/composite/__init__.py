"""Device-independent kernels: view ops (pure metadata, via ``ember._core.strides``) and
CompositeImplicitAutograd decompositions written in ember ops.

Kernels reach the dispatcher by reference (``ember/_kernels/registration.py``) or by the name
``native_functions.yaml`` gives them, which ``ember/_ops/registry.py`` finds as a ``def`` or an
assignment in one of this package's modules."""
