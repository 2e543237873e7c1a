"""``ember._decomp``: decompositions of aten ops into the Core ATen IR, written in ember ops.

A decomposition is a Python function with its op's signature that computes the op with other
aten ops (called through ``ember.ops.aten``, so a tracer records them). ``make_fx`` and
AOTAutograd take a table ``{OpOverload: function}`` and run the function in place of the op.
As in PyTorch: :func:`register_decomposition` fills ``global_decomposition_table``,
:func:`get_decompositions` picks entries for given ops or packets, and
:func:`core_aten_decompositions` is the table that lowers to the ``core``-tagged overloads
(``_core_ops.CORE_ATEN_OPS``, PyTorch 2.13's list). Ops outside the core set that stay in a
decomposed graph are *extern* ops: random ops, custom ops, and ops no decomposition covers.
"""
from .._ops.overload import OpOverload, OpOverloadPacket
from ._core_ops import CORE_ATEN_OPS

__all__ = ["register_decomposition", "get_decompositions", "core_aten_decompositions",
           "global_decomposition_table", "decomposition_table", "is_core"]

global_decomposition_table = {"post_autograd": {}, "pre_autograd": {}, "meta": {}}
decomposition_table = global_decomposition_table["post_autograd"]

_CORE = frozenset(CORE_ATEN_OPS)


def is_core(op):
    """Whether ``op`` (an OpOverload) is in the Core ATen IR (PyTorch 2.13's ``core`` tag)."""
    if not isinstance(op, OpOverload):
        return False
    return (op.namespace == "aten" and f"{op._opname}.{op._overloadname}" in _CORE) \
        or "core" in op.tags


def _overloads(op):
    if isinstance(op, OpOverloadPacket):
        return [getattr(op, o) for o in op.overloads()]
    if isinstance(op, OpOverload):
        return [op]
    raise TypeError(f"expected an OpOverload or OpOverloadPacket, got {op!r}")


def register_decomposition(aten_op, registry=None, *, type="post_autograd", unsafe=False):
    """Decorator: register the function as the decomposition of ``aten_op`` (an overload, a
    packet meaning all its overloads, or a list of them) in ``registry`` (default: the global
    table of ``type``)."""
    if type not in global_decomposition_table:
        raise AssertionError(f"Unknown type {type}")

    def decorator(fn):
        table = global_decomposition_table[type] if registry is None else registry
        ops = aten_op if isinstance(aten_op, (list, tuple)) else [aten_op]
        for op in ops:
            for overload in _overloads(op):
                if overload in table and not unsafe:
                    raise RuntimeError(f"duplicate registrations for {overload}")
                table[overload] = fn
        return fn
    return decorator


def get_decompositions(aten_ops, type="post_autograd"):
    """The registered decompositions of ``aten_ops`` (overloads or packets) as a dict."""
    table = global_decomposition_table[type]
    packets = {op for op in aten_ops if isinstance(op, OpOverloadPacket)}
    wanted = {op for op in aten_ops if isinstance(op, OpOverload)}
    return {op: fn for op, fn in table.items()
            if op in wanted or op.overloadpacket in packets}


def core_aten_decompositions():
    """Decompositions of every registered non-core op: a graph traced with this table holds
    core ops (and extern ops) only."""
    return {op: fn for op, fn in decomposition_table.items() if not is_core(op)}


from . import decompositions  # noqa: E402,F401  (fills the table)
