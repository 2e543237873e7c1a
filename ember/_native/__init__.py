"""``ember._native``: operator overrides written in Python DSLs (Triton, CuTe DSL), as PyTorch's
``torch._native``. A DSL registers overrides of aten ops at a backend key, each with a condition;
the registry installs one router kernel per (op, key) that runs the first enabled override whose
condition holds and otherwise the kernel that was there before. ``ember.backends.python_native``
is the user-facing switchboard (disable a DSL, an op or a dispatch key; the original kernels come
back).

ember ships no DSL operations yet: its Triton and CuTe DSL are registered (and report whether
their runtimes are installed), and ``register_op_override`` is the entry point for kernels that
will be written in them.
"""
from . import dsl_registry, registry  # noqa: F401
from .dsl_registry import cutedsl, triton  # noqa: F401
