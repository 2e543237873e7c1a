"""The multi-tensor ``_foreach_*`` ops (the optimizers' foreach path): each position of the
tensor lists is propagated as the matching single-tensor op (``_foreach_add_.List`` as
``add_.Tensor``, ``_foreach_addcdiv_.ScalarList`` as ``addcdiv_`` with that position's scalar,
...), its inputs redistributed as that op needs, and the foreach op runs once on the local
lists. An in-place foreach op never redistributes ``self``."""
import ember

from .._op_schema import OpSchema
from .._redistribute import redistribute_local_tensor

_OVERLOAD = {"List": "Tensor", "Scalar": "Scalar", "ScalarList": "Scalar", "Tensor": "Tensor",
             "default": "default"}


def elementwise_op(op):
    """The single-tensor op one position of ``op`` runs (None if there is none with a
    strategy)."""
    from .utils import _propagator
    base = op._schema.base_name[len("_foreach_"):]
    overload = op._overloadname
    for name in (base, base.rstrip("_")):
        packet = getattr(ember.ops.aten, name, None)
        if packet is None:
            continue
        for ov in (_OVERLOAD.get(overload, overload), "default"):
            elem = getattr(packet, ov, None) if ov in packet.overloads() else None
            if elem is not None and _propagator().has_strategy(elem):
                return elem
    return None


def dispatch_foreach(dispatcher, op_call, args, kwargs):
    elem_op = elementwise_op(op_call)
    if elem_op is None:
        raise NotImplementedError(f"Operator {op_call} does not have a sharding strategy "
                                  f"registered.")
    schema, local_args, local_kwargs, mesh = dispatcher.unwrap(op_call, args, kwargs)
    n = next(len(a) for a in schema.args_schema if isinstance(a, (list, tuple)))
    inplace = op_call._schema.base_name.endswith("_")
    out_specs = []
    # the foreach op's trailing positional scalars are keyword-only in the single-tensor op
    npos = sum(1 for a in elem_op._schema.arguments if not a.kwarg_only)
    kw_names = [a.name for a in elem_op._schema.arguments if a.kwarg_only]
    if len(schema.args_schema) > npos + len(kw_names):
        raise NotImplementedError(f"Operator {op_call} does not have a sharding strategy "
                                  f"registered.")
    for i in range(n):
        elem_args = [a[i] if isinstance(a, (list, tuple)) else a for a in schema.args_schema]
        elem_schema = OpSchema(elem_op, elem_args[:npos], {**dict(zip(kw_names, elem_args[npos:])),
                                                            **schema.kwargs_schema})
        sharding = dispatcher.sharding_propagator.propagate_op_sharding(elem_schema)
        out_specs.append(sharding.output_spec)
        if not sharding.needs_redistribute:
            continue
        targets = sharding.redistribute_schema.args_schema
        if inplace and targets[0] != elem_args[0]:
            raise RuntimeError(f"{op_call}: in-place operations that require placement "
                               f"changes are not supported. The input has placement "
                               f"{elem_args[0].placements}, but no valid strategy preserves "
                               f"this placement. Please use the out-of-place version of this "
                               f"operation instead.")
        for j, a in enumerate(schema.args_schema):
            if isinstance(a, (list, tuple)) and a and hasattr(a[i], "placements") \
                    and a[i] != targets[j]:
                local_list = list(local_args[j])
                local_list[i] = redistribute_local_tensor(local_list[i], a[i], targets[j])
                local_args[j] = local_list
            elif hasattr(a, "placements") and a != targets[j]:
                raise NotImplementedError(f"{op_call}: the tensor argument shared by every "
                                          f"position would need another layout; redistribute "
                                          f"it first")
    result = op_call(*local_args, **local_kwargs)
    if inplace or result is None:
        return result
    return [dispatcher.wrap(r, s) for r, s in zip(result, out_specs)]
