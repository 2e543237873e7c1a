"""``torch.sparse``: the functions of sparse COO tensors that PyTorch keeps in this namespace
(products, a CSR matrix's products with a row reduction, sums) and the switch of invariant
checks. The tensors themselves are
``ember.sparse_coo_tensor`` and ``Tensor.to_sparse``; their kernels are
``ember/_kernels/sparse/``."""
import functools

import ember

__all__ = ["addmm", "check_sparse_tensor_invariants", "log_softmax", "mm", "softmax", "sum"]


def mm(mat1, mat2, reduce=None):
    """``mat1 @ mat2`` for a sparse ``mat1`` and a dense ``mat2``; its gradient for ``mat1``
    is sparse, at ``mat1``'s entries (``ember.mm``'s is dense). With ``reduce`` (a CSR
    ``mat1``), each output element reduces its row's products instead of summing them."""
    if reduce is not None:
        return _mm_reduce(mat1, mat2, reduce)
    if mat1.is_sparse and mat2.is_sparse:
        raise NotImplementedError("ember.sparse.mm: ember has no product of two sparse COO "
                                  "tensors")
    return ember._sparse_mm(mat1, mat2)


def _mm_reduce(mat1, mat2, reduce):
    """PyTorch's ``_sparse_mm_reduce_impl`` in differentiable ember ops: output element
    ``(i, j)`` reduces ``value * mat2[col, j]`` over row ``i``'s entries by ``reduce`` ("sum",
    "mean", "amax"/"max", "amin"/"min"), zero for a row without entries. An extremum's gradient
    goes to the first entry that attains it, as PyTorch's ``arg_out``."""
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    if reduce == "prod":
        raise RuntimeError("sparse_mm_reduce: reduce type of prod has not been enabled.")
    if mat1.layout is not ember.sparse_csr:
        backend = {ember.sparse_coo: "Sparse", ember.strided: ""}.get(mat1.layout, "")
        raise NotImplementedError(
            f"Could not run 'aten::_sparse_mm_reduce_impl' with arguments from the "
            f"'{backend}{mat1.device.type.upper()}' backend. 'aten::_sparse_mm_reduce_impl' is "
            f"only available for these backends: [SparseCsrCPU].")
    if mat2.dim() != 2 or mat2.shape[0] != mat1.shape[1]:
        raise RuntimeError(f"Expected a tensor of dimension 2 and tensor.size[0] == "
                           f"{mat1.shape[1]} but got: dimension {mat2.dim()} and tensor.size[0] = "
                           f"{mat2.shape[0]}")
    values = mat1.values()
    if mat2.dtype is not values.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'other' to have scalar type "
                           f"{values.dtype._short}; but got {mat2.type()} instead (while checking "
                           f"arguments for sparse_mm_reduce)")
    crow, col = mat1.crow_indices(), mat1.col_indices()
    rows = ember._convert_indices_from_csr_to_coo(crow, col)[0]
    src = mat2.index_select(0, col) * values.unsqueeze(1)  # each entry's products
    m, n = mat1.shape[0], mat2.shape[1]
    if reduce in ("sum", "mean"):
        out = mat2.new_zeros((m, n)).index_add(0, rows, src)
        if reduce == "mean":
            count = (crow[1:] - crow[:-1]).clamp(min=1)
            out = out / count.unsqueeze(1).to(out.dtype)
        return out
    nnz = src.shape[0]
    index = rows.unsqueeze(1).expand(nnz, n)
    with ember.no_grad():
        extremum = mat2.new_zeros((m, n)).scatter_reduce(0, index, src, reduce,
                                                         include_self=False)
        position = ember.arange(nnz, device=mat2.device).unsqueeze(1).expand(nnz, n)
        position = position.masked_fill(src != extremum.index_select(0, rows), nnz)
        # the first entry of each row attaining the extremum; position nnz (a zero) if none
        arg = ember.full((m, n), nnz, dtype=ember.int64, device=mat2.device).scatter_reduce(
            0, index, position, "amin")
    return ember.cat([src, src.new_zeros((1, n))]).gather(0, arg)


def addmm(mat, mat1, mat2, *, beta=1.0, alpha=1.0):
    """``beta * mat + alpha * (mat1 @ mat2)`` for a sparse ``mat1`` (gradient as :func:`mm`)."""
    return ember._sparse_addmm(mat, mat1, mat2, beta=beta, alpha=alpha)


def sum(input, dim=None, dtype=None):
    """The sum of a sparse tensor's elements over ``dim`` (all by default): sparse while a
    sparse dim remains, dense otherwise; its gradient is sparse."""
    if dtype is None:
        return ember._sparse_sum(input) if dim is None else ember._sparse_sum(input, dim)
    if dim is None:
        return ember._sparse_sum(input, dtype=dtype)
    return ember._sparse_sum(input, dim, dtype=dtype)


def softmax(input, dim, *, dtype=None):
    """A softmax over the specified elements along ``dim`` (the others count as -inf): a
    sparse tensor with the input's (coalesced) entries."""
    return ember._sparse_softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """``softmax(...).log()`` computed stably, with the same entries."""
    return ember._sparse_log_softmax(input, dim, dtype=dtype)


class check_sparse_tensor_invariants:
    """Whether ``sparse_coo_tensor`` checks its indices against the size (off by default, as
    in PyTorch): a switch (``enable``/``disable``/``is_enabled``), a context manager and a
    decorator."""
    _enabled = False

    @staticmethod
    def is_enabled():
        return check_sparse_tensor_invariants._enabled

    @staticmethod
    def enable():
        check_sparse_tensor_invariants._enabled = True

    @staticmethod
    def disable():
        check_sparse_tensor_invariants._enabled = False

    def __init__(self, enable=True):
        self.state = enable
        self.saved_state = None

    def __enter__(self):
        if self.saved_state is not None:
            raise RuntimeError("This context manager instance is already activated. Use a "
                               "different context manager instance for context nesting.")
        self.saved_state = self.is_enabled()
        check_sparse_tensor_invariants._enabled = self.state

    def __exit__(self, type, value, traceback):
        check_sparse_tensor_invariants._enabled = self.saved_state
        self.saved_state = None

    def __call__(self, mth):
        @functools.wraps(mth)
        def test_mth(*args, **kwargs):
            with check_sparse_tensor_invariants(self.state):
                return mth(*args, **kwargs)
        return test_mth
