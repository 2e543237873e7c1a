"""``torch.sparse``: the functions of sparse COO tensors that PyTorch keeps in this namespace
(products, sums) and the switch of invariant checks. The tensors themselves are
``ember.sparse_coo_tensor`` and ``Tensor.to_sparse``; their kernels are
``ember/_kernels/sparse/``."""
import functools

import ember

__all__ = ["addmm", "check_sparse_tensor_invariants", "log_softmax", "mm", "softmax", "sum"]


def mm(mat1, mat2, reduce=None):
    """``mat1 @ mat2`` for a sparse ``mat1`` and a dense ``mat2``; its gradient for ``mat1``
    is sparse, at ``mat1``'s entries (``ember.mm``'s is dense)."""
    if reduce is not None:
        raise NotImplementedError("ember.sparse.mm: reduce= (sparse CSR products) is not "
                                  "implemented: ember has sparse COO tensors only")
    if mat1.is_sparse and mat2.is_sparse:
        raise NotImplementedError("ember.sparse.mm: ember has no product of two sparse COO "
                                  "tensors")
    return ember._sparse_mm(mat1, mat2)


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
