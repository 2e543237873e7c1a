"""PyTorch's functional collectives (``torch.distributed._functional_collectives``): collectives
that return a new tensor instead of writing into one, differentiable, on a group given as a
``ProcessGroup``, a 1-D ``DeviceMesh``, ``(mesh, mesh_dim)``, a group name or a list of ranks.

They are the operators ``_c10d_functional::all_reduce``, ``all_gather_into_tensor``,
``reduce_scatter_tensor``, ``all_to_all_single`` and ``broadcast`` (PyTorch's schemas, a group
named by a string), with CPU/CUDA kernels on ember's c10d, Meta kernels and PyTorch's
backward formulas. ember's collectives finish before returning, so results are plain tensors
(PyTorch returns ``AsyncCollectiveTensor``s that wait at first use) and ``wait_tensor`` returns
its argument.
"""
import warnings

import ember

from . import distributed_c10d as c10d
from .device_mesh import DeviceMesh
from ..library import Library, register_autograd

__all__ = ["all_reduce", "all_gather_single", "all_gather_tensor", "all_gather_tensor_autograd",
           "all_gather_single_autograd", "reduce_scatter_single", "reduce_scatter_tensor",
           "reduce_scatter_single_autograd", "reduce_scatter_tensor_autograd",
           "all_to_all_single", "all_to_all_single_autograd", "broadcast", "wait_tensor",
           "all_reduce_coalesced"]

_REDUCE_OPS = {"sum": "SUM", "avg": "AVG", "product": "PRODUCT", "min": "MIN", "max": "MAX",
               "band": "BAND", "bor": "BOR", "bxor": "BXOR"}

_lib = Library("_c10d_functional", "DEF")


def _group_by_name(name):
    for g in reversed(c10d._World.groups):
        if g.group_name == name:
            return g
    raise ValueError(f"Could not resolve the process group registered under the name {name}")


def _reduce_op(name):
    op = _REDUCE_OPS.get(name.lower())
    if op is None:
        raise RuntimeError(f"Unrecognized reduce_op: {name}")
    return getattr(c10d.ReduceOp, op)


def _rows(input, n):
    return [input.shape[0] * n, *input.shape[1:]] if input.dim() else [n]


# --- the operators: kernels (CPU and CUDA share one), Meta kernels, backward formulas

def _all_reduce(input, reduce_op, group_name):
    out = input.clone(memory_format=ember.contiguous_format)
    c10d.all_reduce(out, op=_reduce_op(reduce_op), group=_group_by_name(group_name))
    return out


def _all_gather_into_tensor(input, group_size, group_name):
    out = input.new_empty(_rows(input, group_size))
    c10d.all_gather_single(out, input.contiguous(), group=_group_by_name(group_name))
    return out


def _reduce_scatter_tensor(input, reduce_op, group_size, group_name):
    out = input.new_empty([input.shape[0] // group_size, *input.shape[1:]])
    c10d.reduce_scatter_single(out, input.contiguous(), op=_reduce_op(reduce_op),
                               group=_group_by_name(group_name))
    return out


def _all_to_all_single(input, output_split_sizes, input_split_sizes, group_name):
    out = input.new_empty([sum(output_split_sizes), *input.shape[1:]])
    c10d.all_to_all_single(out, input.contiguous(), list(output_split_sizes),
                           list(input_split_sizes), group=_group_by_name(group_name))
    return out


def _broadcast(input, src, group_name):
    out = input.clone(memory_format=ember.contiguous_format)
    c10d.broadcast(out, src, group=_group_by_name(group_name))
    return out


_OPS = {
    "all_reduce": ("(Tensor input, str reduce_op, str group_name) -> Tensor", _all_reduce,
                   lambda input, reduce_op, group_name: ember.empty_like(input)),
    "all_gather_into_tensor": (
        "(Tensor input, int group_size, str group_name) -> Tensor", _all_gather_into_tensor,
        lambda input, group_size, group_name: input.new_empty(_rows(input, group_size))),
    "reduce_scatter_tensor": (
        "(Tensor input, str reduce_op, int group_size, str group_name) -> Tensor",
        _reduce_scatter_tensor,
        lambda input, reduce_op, group_size, group_name: input.new_empty(
            [input.shape[0] // group_size, *input.shape[1:]])),
    "all_to_all_single": (
        "(Tensor input, SymInt[] output_split_sizes, SymInt[] input_split_sizes, "
        "str group_name) -> Tensor", _all_to_all_single,
        lambda input, out_sizes, in_sizes, group_name: input.new_empty(
            [sum(out_sizes), *input.shape[1:]])),
    "broadcast": ("(Tensor input, int src, str group_name) -> Tensor", _broadcast,
                  lambda input, src, group_name: ember.empty_like(input)),
}
for _name, (_schema, _kernel, _meta) in _OPS.items():
    _lib.define(_name + _schema)
    _lib.impl(_name, _kernel, "CPU")
    _lib.impl(_name, _kernel, "CUDA")
    _lib.impl(_name, _meta, "Meta")

_ops = ember.ops._c10d_functional


def _all_reduce_setup(ctx, inputs, output):
    ctx.reduce_op, ctx.group_name = inputs[1].lower(), inputs[2]


def _all_reduce_backward(ctx, grad_output):
    if ctx.reduce_op != "sum":
        raise RuntimeError(f"all_reduce backward only supports 'sum' reduction, got "
                           f"'{ctx.reduce_op}'")
    return _ops.all_reduce(grad_output.contiguous(), "sum", ctx.group_name), None, None


def _all_gather_setup(ctx, inputs, output):
    ctx.group_size, ctx.group_name = inputs[1], inputs[2]


def _all_gather_backward(ctx, grad_output):
    return (_ops.reduce_scatter_tensor(grad_output.contiguous(), "sum", ctx.group_size,
                                       ctx.group_name), None, None)


def _reduce_scatter_setup(ctx, inputs, output):
    ctx.reduce_op, ctx.group_size, ctx.group_name = inputs[1].lower(), inputs[2], inputs[3]


def _reduce_scatter_backward(ctx, grad_output):
    if ctx.reduce_op != "sum":
        raise RuntimeError(f"reduce_scatter_tensor backward only supports 'sum' reduction, got "
                           f"'{ctx.reduce_op}'")
    return (_ops.all_gather_into_tensor(grad_output.contiguous(), ctx.group_size,
                                        ctx.group_name), None, None, None)


def _all_to_all_setup(ctx, inputs, output):
    ctx.output_split_sizes, ctx.input_split_sizes, ctx.group_name = inputs[1:]


def _all_to_all_backward(ctx, grad_output):
    return (_ops.all_to_all_single(grad_output.contiguous(), ctx.input_split_sizes,
                                   ctx.output_split_sizes, ctx.group_name), None, None, None)


register_autograd("_c10d_functional::all_reduce", _all_reduce_backward,
                  setup_context=_all_reduce_setup, lib=_lib)
register_autograd("_c10d_functional::all_gather_into_tensor", _all_gather_backward,
                  setup_context=_all_gather_setup, lib=_lib)
register_autograd("_c10d_functional::reduce_scatter_tensor", _reduce_scatter_backward,
                  setup_context=_reduce_scatter_setup, lib=_lib)
register_autograd("_c10d_functional::all_to_all_single", _all_to_all_backward,
                  setup_context=_all_to_all_setup, lib=_lib)


# --- groups

def _resolve_group(group):
    """A ``ProcessGroup`` from any of PyTorch's group forms."""
    if isinstance(group, c10d.ProcessGroup):
        return group
    if isinstance(group, str):
        return _group_by_name(group)
    if isinstance(group, DeviceMesh):
        if group.ndim != 1:
            raise AssertionError("Only 1D mesh is supported, pass in (DeviceMesh, int) together "
                                 "if mesh > 1D")
        return group.get_group(0)
    if isinstance(group, tuple):
        if len(group) == 2 and isinstance(group[0], DeviceMesh) and isinstance(group[1], int):
            return group[0].get_group(group[1])
        raise ValueError(f"Invalid tuple for group must be (DeviceMesh, int). Instead got "
                         f"{(type(group[0]), type(group[1]))}")
    if isinstance(group, list):
        warnings.warn("The combination of ranks + tag as process group identifier has been "
                      "deprecated. Please switch to using ProcessGroup, DeviceMesh, or group "
                      "name instead.", FutureWarning, stacklevel=3)
        ranks = sorted(r for rs in group for r in (rs if isinstance(rs, list) else [rs]))
        for g in c10d._World.groups:
            if sorted(g.global_ranks) == ranks:
                return g
        raise ValueError("")
    raise ValueError(f"Unsupported group type: {type(group)}, {group}")


def _group_name(group):
    return _resolve_group(group).group_name


# --- the user-facing functions

def wait_tensor(tensor):
    """Wait for a collective's result: ember's collectives have finished when they return, so
    this is ``tensor`` itself."""
    return tensor


def broadcast(self, src, group, tag=""):
    return _ops.broadcast(self, src, _group_name(group))


def all_reduce(self, reduceOp, group, tag=""):
    """The reduction (``"sum"``, ``"avg"``, ``"max"``, ...) of ``self`` over the group."""
    return _ops.all_reduce(self, reduceOp.lower(), _group_name(group))


def all_reduce_coalesced(self, reduceOp, group, tag=""):
    return [all_reduce(t, reduceOp, group, tag) for t in self]


def all_gather_single(self, gather_dim, group, tag=""):
    """Every rank's ``self`` concatenated along ``gather_dim``."""
    pg = _resolve_group(group)
    n = pg.size()
    res = _ops.all_gather_into_tensor(self, n, pg.group_name)
    if gather_dim != 0:
        res = ember.cat(ember.chunk(res, n, dim=0), dim=gather_dim)
    return res


def reduce_scatter_single(self, reduceOp, scatter_dim, group, tag=""):
    """The reduction of ``self`` over the group, this rank's chunk along ``scatter_dim``."""
    pg = _resolve_group(group)
    n = pg.size()
    if self.size(scatter_dim) % n != 0:
        raise AssertionError(f"input dimension 0 ({self.size(0)} must be a multiple of "
                             f"group_size {n})")
    if scatter_dim != 0:
        self = ember.cat(ember.chunk(self, n, dim=scatter_dim), dim=0)
    return _ops.reduce_scatter_tensor(self, reduceOp.lower(), n, pg.group_name)


def all_to_all_single(self, output_split_sizes, input_split_sizes, group, tag=""):
    """Rows of ``self`` split by ``input_split_sizes`` sent one part to each rank; the parts
    received, concatenated (``output_split_sizes`` rows from each)."""
    pg = _resolve_group(group)
    n = pg.size()
    if output_split_sizes is None or input_split_sizes is None:
        if not (output_split_sizes is None and input_split_sizes is None):
            raise AssertionError("output_split_sizes and input_split_sizes must either be "
                                 "specified together or both set to None")
        output_split_sizes = input_split_sizes = [self.shape[0] // n] * n
    return _ops.all_to_all_single(self, list(output_split_sizes), list(input_split_sizes),
                                  pg.group_name)


def _deprecated(name, replacement):
    warnings.warn(f"`torch.distributed._functional_collectives.{name}` is deprecated. Please use "
                  f"`torch.distributed._functional_collectives.{replacement}` instead.",
                  FutureWarning, stacklevel=3)


def all_gather_tensor(self, gather_dim, group, tag=""):
    _deprecated("all_gather_tensor", "all_gather_single")
    return all_gather_single(self, gather_dim, group, tag)


def reduce_scatter_tensor(self, reduceOp, scatter_dim, group, tag=""):
    _deprecated("reduce_scatter_tensor", "reduce_scatter_single")
    return reduce_scatter_single(self, reduceOp, scatter_dim, group, tag)


# the collectives above are differentiable: the *_autograd names are the same functions
all_gather_single_autograd = all_gather_single
reduce_scatter_single_autograd = reduce_scatter_single
all_to_all_single_autograd = all_to_all_single


def all_gather_tensor_autograd(self, gather_dim, group, tag=""):
    _deprecated("all_gather_tensor_autograd", "all_gather_single_autograd")
    return all_gather_single(self, gather_dim, group, tag)


def reduce_scatter_tensor_autograd(self, reduceOp, scatter_dim, group, tag=""):
    _deprecated("reduce_scatter_tensor_autograd", "reduce_scatter_single_autograd")
    return reduce_scatter_single(self, reduceOp, scatter_dim, group, tag)
