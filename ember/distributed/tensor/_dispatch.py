"""``OpDispatcher``: what ``DTensor.__torch_dispatch__`` does with an op call. Unwrap the DTensor
arguments into their specs and local tensors (a plain one-element tensor counts as replicated),
propagate sharding, redistribute the local arguments the chosen strategy needs, run the op on
the local tensors, and wrap the results with the output specs. An in-place op returns its
``self`` DTensor; an op without a strategy that has a CompositeImplicitAutograd kernel is
decomposed into ops that do; a few ops have handlers of their own (``_ops``: squeeze, random
ops, the foreach ops).
"""
import warnings

import ember

from . import _api as dtensor
from ._dtensor_spec import DTensorSpec, TensorMeta
from ._op_schema import OpSchema
from ._redistribute import redistribute_local_tensor
from ._sharding_prop import ShardingPropagator
from .placement_types import Replicate

aten = ember.ops.aten


def _is_same_size_handler(dispatcher, op_call, args, kwargs):
    return args[0].shape == args[1].shape


def _is_pinned_handler(dispatcher, op_call, args, kwargs):
    return args[0]._local_tensor.is_pinned()


class OpDispatcher:
    def __init__(self):
        self.sharding_propagator = ShardingPropagator()
        # PyTorch's implicit_replication(): plain tensors of any size count as replicated
        self._allow_implicit_replication = False
        # op -> fn(dispatcher, op, args, kwargs), for ops that are more than a layout rule
        self._custom_op_handlers = {aten.is_same_size.default: _is_same_size_handler,
                                    aten.is_pinned.default: _is_pinned_handler}

    def dispatch(self, op_call, args, kwargs):
        handler = self._custom_op_handlers.get(op_call)
        if handler is not None:
            return handler(self, op_call, args, kwargs)
        if op_call.name().startswith("aten::_foreach_"):
            from ._ops._foreach_ops import dispatch_foreach
            return dispatch_foreach(self, op_call, args, kwargs)
        return self.propagate_and_run(op_call, args, kwargs)

    def propagate_and_run(self, op_call, args, kwargs):
        schema, local_args, local_kwargs, mesh = self.unwrap(op_call, args, kwargs)
        try:
            sharding = self.sharding_propagator.propagate_op_sharding(schema)
        except NotImplementedError:
            if op_call.has_kernel_for_dispatch_key("CompositeImplicitAutograd"):
                return op_call.decompose(*args, **kwargs)
            raise
        except Exception as e:
            raise RuntimeError(f"{e}\n\nSharding propagation failed for {schema}") from e
        if mesh._is_current_rank_part_of_mesh():
            if sharding.needs_redistribute:
                local_args, local_kwargs = self.redistribute_local_args(
                    schema, local_args, local_kwargs, sharding.redistribute_schema,
                    sharding.use_val_from_redistribute_schema)
            local_results = op_call(*local_args, **local_kwargs)
        else:
            local_results = _default_results(sharding.output_spec)
        if sharding.output_spec is None:
            return local_results
        if schema.is_inplace_op():  # its strategies keep self's layout
            return args[0]
        return self.wrap(local_results, sharding.output_spec)

    # --- unwrap / wrap

    def unwrap(self, op_call, args, kwargs):
        """(OpSchema, local args, local kwargs, mesh) of a call."""
        mesh = None
        for v in list(args) + list(kwargs.values()):
            for x in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(x, dtensor.DTensor):
                    mesh = x.device_mesh
                    break
            if mesh is not None:
                break
        if mesh is None:
            raise AssertionError(f"found no DeviceMesh from dtensor args for {op_call}!")

        def one(v):
            if isinstance(v, dtensor.DTensor):
                return v._spec, v._local_tensor
            if isinstance(v, ember.Tensor):
                return self._replicate_spec_for_plain_tensor(op_call, v, mesh), v
            return v, v

        def convert(v):
            if isinstance(v, (list, tuple)) and any(isinstance(x, ember.Tensor) for x in v):
                pairs = [one(x) for x in v]
                return type(v)(p[0] for p in pairs), type(v)(p[1] for p in pairs)
            return one(v)
        args_schema, local_args = [], []
        for a in args:
            s, local = convert(a)
            args_schema.append(s)
            local_args.append(local)
        kwargs_schema, local_kwargs = {}, {}
        for k, v in kwargs.items():
            kwargs_schema[k], local_kwargs[k] = convert(v)
        return OpSchema(op_call, args_schema, kwargs_schema), local_args, local_kwargs, mesh

    def _replicate_spec_for_plain_tensor(self, op_call, tensor, mesh):
        if tensor.numel() == 1 and tensor.ndim == 1:
            warnings.warn("Found a non-scalar tensor with numel=1 and ndim!=0, we are implicitly "
                          "creating a replicated DTensor for it. However, please consider "
                          "changing it to a scalar tensor or explicitly create a DTensor under "
                          "distributed environment.", stacklevel=2)
        if tensor.numel() == 1 or self._allow_implicit_replication:
            return DTensorSpec(mesh, (Replicate(),) * mesh.ndim,
                               tensor_meta=TensorMeta(ember.Size(tensor.shape),
                                                      tuple(tensor.stride()), tensor.dtype))
        raise RuntimeError(f"{op_call} got mixed torch.Tensor and DTensor, need to convert all "
                           f"torch.Tensor to DTensor before calling distributed operators!")

    @staticmethod
    def redistribute_local_args(schema, local_args, local_kwargs, target_schema, use_values):
        """The local arguments redistributed to ``target_schema``'s specs (and, where
        ``use_values``, its other arguments, e.g. local shapes)."""
        def move(current, target, local):
            if isinstance(current, DTensorSpec):
                if current != target:
                    return redistribute_local_tensor(local, current, target)
                return local
            if isinstance(current, (list, tuple)) and any(isinstance(x, DTensorSpec)
                                                          for x in current):
                return type(local)(move(c, t, x) for c, t, x in zip(current, target, local))
            return target if use_values else local
        args = [move(c, t, x) for c, t, x in zip(schema.args_schema, target_schema.args_schema,
                                                 local_args)]
        kwargs = {k: move(schema.kwargs_schema[k], target_schema.kwargs_schema[k], v)
                  for k, v in local_kwargs.items()}
        return args, kwargs

    @staticmethod
    def wrap(res, spec):
        if isinstance(res, ember.Tensor):
            return dtensor.DTensor(res, spec, requires_grad=res.requires_grad)
        if isinstance(res, (list, tuple)):
            out = [OpDispatcher.wrap(e, s) for e, s in zip(res, spec)]
            return tuple(out) if isinstance(res, tuple) else out
        return res


def _default_results(spec):
    """What a rank outside the mesh holds: empty tensors (zero-dim where the output is)."""
    if spec is None:
        return None
    if isinstance(spec, DTensorSpec):
        meta = spec.tensor_meta
        return ember.zeros((), dtype=meta.dtype) if len(meta.shape) == 0 else \
            ember.tensor([], dtype=meta.dtype)
    return [_default_results(s) for s in spec]
