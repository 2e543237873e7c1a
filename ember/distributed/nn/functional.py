"""The collectives as autograd functions (PyTorch's ``torch/distributed/nn/functional.py``):
each forward runs the ``ember.distributed`` collective on a fresh output (the collectives work
in place), and each backward runs the collective that is its adjoint, so gradients flow across
ranks: broadcast <-> reduce, gather <-> scatter, all_gather -> reduce-scatter of the gradients
(summed), all_reduce -> all_reduce, all_to_all -> all_to_all back. Every rank must run
backward through the same collectives in the same order, as in forward.

``src``/``dst`` are global ranks, as in PyTorch; where PyTorch compares them with the rank in
``group`` (which differs on a subgroup whose ranks do not start at 0), this module compares them
with the global rank, so the functions also work on such subgroups.
"""
import warnings

import ember
import ember.distributed as dist
from ember.autograd import Function
from ember.distributed import ReduceOp


def _not_supported_under_compile(name, *, suggestion=None):
    msg = f"torch.distributed.nn.functional.{name} is not supported under torch.compile."
    if suggestion:
        msg += f" Use {suggestion} instead."
    raise RuntimeError(msg)


def _deprecated(name, suggestion):
    warnings.warn(f"torch.distributed.nn.functional.{name} is deprecated, use {suggestion} "
                  f"instead.", category=FutureWarning, stacklevel=3)


def _check_eager(name, suggestion=None):
    if ember.compiler.is_compiling():
        _not_supported_under_compile(name, suggestion=suggestion)


def broadcast(tensor, src, group=None):
    """``src``'s ``tensor`` on every rank; the gradient is the sum of every rank's gradient, on
    ``src`` (zero elsewhere)."""
    suggestion = "torch.distributed._functional_collectives.broadcast"
    _check_eager("broadcast", suggestion)
    _deprecated("broadcast", suggestion)
    return _Broadcast.apply(src, group, tensor)


def gather(tensor, dst=0, group=None):
    """Every rank's ``tensor`` as a tuple on ``dst`` (zeros elsewhere)."""
    _check_eager("gather")
    return _Gather.apply(dst, group, tensor)


def scatter(tensors, src=0, group=None):
    """Rank ``i`` gets ``src``'s ``tensors[i]``; every rank passes tensors of the right shape."""
    _check_eager("scatter")
    return _Scatter.apply(src, group, *tensors)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None):
    """The reduction of every rank's ``tensor`` on ``dst``."""
    _check_eager("reduce")
    return _Reduce.apply(dst, op, group, tensor)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None):
    """Rank ``i`` gets the reduction over the ranks of their ``input_list[i]``."""
    suggestion = "torch.distributed._functional_collectives.reduce_scatter_single"
    _check_eager("reduce_scatter", suggestion)
    _deprecated("reduce_scatter", suggestion)
    return _Reduce_Scatter.apply(op, group, output, *input_list)


def all_gather(tensor, group=None):
    """Every rank's ``tensor``, as a tuple in rank order, on every rank."""
    suggestion = "torch.distributed._functional_collectives.all_gather_single"
    _check_eager("all_gather", suggestion)
    _deprecated("all_gather", suggestion)
    return _AllGather.apply(group, tensor)


def _all_gather_base(output_tensor, input_tensor, group=None):
    """Every rank's ``input_tensor`` concatenated into ``output_tensor``."""
    _check_eager("_all_gather_base")
    return _AllGatherBase.apply(output_tensor, input_tensor, group)


def all_to_all(output_tensor_list, input_tensor_list, group=None):
    """Rank ``j``'s ``output_tensor_list[i]`` gets rank ``i``'s ``input_tensor_list[j]``."""
    _check_eager("all_to_all")
    return _AlltoAll.apply(group, output_tensor_list, *input_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None):
    """:func:`all_to_all` on the dim-0 splits of one input and one output tensor."""
    suggestion = "torch.distributed._functional_collectives.all_to_all_single"
    _check_eager("all_to_all_single", suggestion)
    _deprecated("all_to_all_single", suggestion)
    return _AlltoAllSingle.apply(group, output, output_split_sizes, input_split_sizes, input)


def all_reduce(tensor, op=ReduceOp.SUM, group=None):
    """The reduction of every rank's ``tensor``, on every rank."""
    suggestion = "torch.distributed._functional_collectives.all_reduce"
    _check_eager("all_reduce", suggestion)
    _deprecated("all_reduce", suggestion)
    return _AllReduce.apply(op, group, tensor)


def _reduces_by_reduce_scatter(group):
    """Whether the backend has a native reduce-scatter, which PyTorch then uses for
    all_gather's backward (elsewhere an all-to-all and a local sum)."""
    return dist.get_backend(group=group) in (dist.Backend.NCCL, "xccl")


class _Broadcast(Function):
    @staticmethod
    def forward(ctx, src, group, tensor):
        ctx.src = src
        ctx.group = group
        ctx.rank = dist.get_rank()
        tensor = tensor.clone()
        dist.broadcast(tensor, src, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        gx = _Reduce.apply(ctx.src, ReduceOp.SUM, ctx.group, grad_output)
        if ctx.src != ctx.rank:
            gx.zero_()
        return None, None, gx


class _Gather(Function):
    @staticmethod
    def forward(ctx, dst, group, tensor):
        ctx.dst = dst
        ctx.group = group
        tensor_list = [ember.zeros_like(tensor) for _ in range(dist.get_world_size(group=group))]
        tensor = tensor.contiguous()
        if dist.get_rank() == dst:
            dist.gather(tensor, tensor_list, dst, group=group)
        else:
            dist.gather(tensor, None, dst, group=group)
        return tuple(tensor_list)

    @staticmethod
    def backward(ctx, *grad_outputs):
        return (None, None) + (_Scatter.apply(ctx.dst, ctx.group, *grad_outputs),)


class _Scatter(Function):
    @staticmethod
    def forward(ctx, src, group, *tensors):
        ctx.src = src
        ctx.group = group
        if not all(t.size() == tensors[0].size() for t in tensors):
            raise AssertionError
        output = ember.zeros_like(tensors[0])
        if dist.get_rank() == src:
            dist.scatter(output, list(tensors), src, group=group)
        else:
            dist.scatter(output, None, src, group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None) + _Gather.apply(ctx.src, ctx.group, grad_output)


class _Reduce(Function):
    @staticmethod
    def forward(ctx, src, op, group, tensor):
        ctx.src = src
        ctx.group = group
        tensor = tensor.clone()
        dist.reduce(tensor, src, op=op, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None, None) + (_Broadcast.apply(ctx.src, ctx.group, grad_output),)


class _Reduce_Scatter(Function):  # noqa: N801 (PyTorch's name)
    @staticmethod
    def forward(ctx, op, group, tensor, *input_tensor_list):
        ctx.group = group
        tensor = tensor.contiguous()
        input_tensor_list = tuple(t.contiguous() for t in input_tensor_list)
        dist.reduce_scatter(tensor, list(input_tensor_list), op=op, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None, None) + _AllGather.apply(ctx.group, grad_output)


class _AllGather(Function):
    @staticmethod
    def forward(ctx, group, tensor):
        tensor = tensor.contiguous()
        ctx.group = group
        out_tensor_list = [ember.empty_like(tensor)
                           for _ in range(dist.get_world_size(group=group))]
        dist.all_gather(out_tensor_list, tensor, group=group)
        return tuple(out_tensor_list)

    @staticmethod
    def backward(ctx, *grad_outputs):
        if _reduces_by_reduce_scatter(ctx.group):
            rank = dist.get_rank(group=ctx.group)
            gx = ember.empty_like(grad_outputs[rank])
            gx = _Reduce_Scatter.apply(ReduceOp.SUM, ctx.group, gx, *grad_outputs)
        else:
            tensor_list = [ember.empty_like(tensor) for tensor in grad_outputs]
            gxs = _AlltoAll.apply(ctx.group, tensor_list, *grad_outputs)
            gx = ember.sum(ember.stack(gxs), dim=0)
        return None, gx


class _AllGatherBase(Function):
    @staticmethod
    def forward(ctx, output_tensor, input_tensor, group):
        ctx.group = group
        dist._all_gather_base(output_tensor, input_tensor.contiguous(), group=group)
        return output_tensor

    @staticmethod
    def backward(ctx, grad_output):
        # (PyTorch runs this on NCCL only and raises "Backend not supported!" elsewhere;
        # ember's MPI backends reduce-scatter too)
        world_size = dist.get_world_size(group=ctx.group)
        out_size = list(grad_output.size())
        if out_size[0] % world_size != 0:
            raise RuntimeError(f"Tensor with dimensions: {out_size} does not have first "
                               f"dimension divisible by world_size: {world_size}")
        out_size[0] = out_size[0] // world_size
        gx = ember.empty(out_size, device=grad_output.device, dtype=grad_output.dtype)
        dist._reduce_scatter_base(gx, grad_output.contiguous(), ReduceOp.SUM, ctx.group)
        return None, gx, None


class _AlltoAll(Function):
    @staticmethod
    def forward(ctx, group, out_tensor_list, *tensors):
        ctx.group = group
        ctx.input_tensor_size_list = [tensors[i].size()
                                      for i in range(dist.get_world_size(group=group))]
        tensors = tuple(t.contiguous() for t in tensors)
        dist.all_to_all(out_tensor_list, list(tensors), group=group)
        return tuple(out_tensor_list)

    @staticmethod
    def backward(ctx, *grad_outputs):
        tensor_list = [ember.empty(size, device=grad_outputs[0].device,
                                   dtype=grad_outputs[0].dtype)
                       for size in ctx.input_tensor_size_list]
        return (None, None) + _AlltoAll.apply(ctx.group, tensor_list, *grad_outputs)


class _AlltoAllSingle(Function):
    @staticmethod
    def forward(ctx, group, output, output_split_sizes, input_split_sizes, input):
        ctx.group = group
        ctx.input_size = input.size()
        ctx.output_split_sizes = input_split_sizes
        ctx.input_split_sizes = output_split_sizes
        dist.all_to_all_single(output, input, output_split_sizes=output_split_sizes,
                               input_split_sizes=input_split_sizes, group=group)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        tensor = ember.empty(ctx.input_size, device=grad_output.device, dtype=grad_output.dtype)
        return (None, None, None, None) + (
            _AlltoAllSingle.apply(ctx.group, tensor, ctx.output_split_sizes,
                                  ctx.input_split_sizes, grad_output.contiguous()),)


class _AllReduce(Function):
    @staticmethod
    def forward(ctx, op, group, tensor):
        ctx.group = group
        ctx.op = op
        tensor = tensor.clone(memory_format=ember.contiguous_format)
        dist.all_reduce(tensor, op=op, group=group)
        return tensor

    @staticmethod
    def backward(ctx, grad_output):
        return (None, None) + (_AllReduce.apply(ctx.op, ctx.group, grad_output),)


# PyTorch's module exports the group namespace too (the functions' parameter of that name
# shadows it inside them)
group = dist.group
