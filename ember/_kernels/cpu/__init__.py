"""CPU kernels on NumPy. Each accepts tensors of any strides (through cached NumPy views of their
storage) and returns fresh tensors built from the arrays NumPy produced, without copies.

Kernels reach the dispatcher by reference (``ember/_kernels/registration.py``) or by the name
``native_functions.yaml`` gives them, which ``ember/_ops/registry.py`` finds as a ``def`` or an
assignment in one of this package's modules."""
