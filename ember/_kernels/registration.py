"""Kernels that register themselves by reference.

A kernel module hands the dispatcher a function object for an operator overload and a dispatch
key, ``register("sin", "CPU", kernel)``, where the kernel is made, the way PyTorch's
``@register_decomposition(aten.x)`` sits on the function it registers. Table rows (``BINARY``,
``UNARY``, the Meta reductions, the activations ...) register the kernels generated from them
while the table is built, so those kernels need no name at all.

``ember/_ops/registry.py`` defines every op of ``native_functions.yaml``, then imports the kernel
packages, whose tables fill ``KERNELS``, and passes each registration through
:meth:`ember.library.Library.impl`. An op that ``native_functions.yaml`` also gives a kernel for
the same key, or a registration for an op the yaml does not define, is an error at import.
"""

from .rules import float8 as _float8

# "op.overload" (as native_functions.yaml spells it, "sin" for a default overload)
#     -> {dispatch key name: kernel function}
KERNELS = {}


def register(op, key, fn):
    """Register kernel ``fn`` of ``op`` for dispatch key ``key`` (a name, "CPU" or "Meta");
    returns ``fn``. A CPU kernel of an op ATen has no float8 kernel for is registered behind
    that check (``rules/float8.py``)."""
    row = KERNELS.setdefault(op, {})
    if key in row:
        if row[key] is not fn and getattr(row[key], "__wrapped__", None) is not fn:
            raise RuntimeError(f"two {key} kernels registered for aten::{op}: {row[key]!r} and "
                               f"{fn!r}")
        return fn
    row[key] = _float8.gate(op, fn) if key == "CPU" else fn
    return fn


def kernels_of(op):
    """The kernels registered for ``op``, by key name (empty if none)."""
    return KERNELS.get(op, {})
