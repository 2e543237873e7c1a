"""The decomposition table Inductor traces with (PyTorch's ``torch._inductor.decomposition``).

It is the Core ATen table plus decompositions of core ops that a loop-level compiler would
rather see as pointwise ops and reductions, so that its lowerings fuse them: softmax and
log_softmax (amax, exp, sum), layer and group norm forward and backward (mean, var, rsqrt,
sums), gelu (erf or tanh), elu/leaky_relu/hardtanh (where) and var.dim. The functions live
in ``ember._decomp.decompositions``, registered under PyTorch's names.

PyTorch's table also decomposes index_select and the backward of embedding and max_pool2d
into indexing ops (index, an accumulating index_put, scatter_add). ember keeps them whole:
max_pool2d_with_indices and its backward have their own lowerings (windows unrolled per
element), embedding_dense_backward lowers straight to one accumulating ``Scatter`` kernel,
and index_select runs as a fallback.
"""
from .. import ops
from .._decomp import core_aten_decompositions, get_decompositions

__all__ = ["decompositions", "select_decomp_table"]

aten = ops.aten

# core ops that PyTorch's Inductor table decomposes too (from its own list or from PyTorch's
# core_aten_decompositions, which, unlike ember's, holds some core ops)
inductor_decompositions = get_decompositions([
    aten._softmax,
    aten._log_softmax,
    aten.gelu,
    aten.native_layer_norm,
    aten.native_layer_norm_backward,
    aten.native_group_norm,
    aten.native_group_norm_backward,
    aten.elu,
    aten.leaky_relu,
    aten.hardtanh,
    aten.var.dim,
])

decompositions = {**core_aten_decompositions(), **inductor_decompositions}


_cuda_decompositions = None


def select_decomp_table(device_type="cpu"):
    """The table Inductor's AOT tracing uses: a graph traced with it holds core ops whose
    lowerings are pointwise ops, reductions, views and a few extern kernels.

    For a graph on a CUDA device, whose nodes all run as eager ops (ember's Inductor writes no
    CUDA kernels), the table leaves whole the ops that have a fused CUDA kernel (softmax,
    layer_norm, gelu and their backward ops: ``_kernels/cuda/fused.py``): decomposed, each
    would be several kernels, each a pass over memory."""
    global _cuda_decompositions
    if device_type != "cuda":
        return decompositions
    if _cuda_decompositions is None:
        from .._kernels.cuda import fused
        whole = set(fused.kernels())
        _cuda_decompositions = {op: fn for op, fn in decompositions.items()
                                if op._opname not in whole}
    return _cuda_decompositions
