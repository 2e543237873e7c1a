"""Derivative helpers of sparse COO ops (PyTorch's FunctionsManual names): gradients that keep a
sparse input's layout, found at its entries."""
import ember

__all__ = ["values_backward", "sparse_constructor_values_backward", "sparse_mask_backward",
           "mm_mat1_sparse_backward"]


def values_backward(grad, self):
    """``values()``'s gradient: a sparse tensor at ``self``'s (coalesced) indices."""
    return ember._sparse_coo_tensor_unsafe(self.indices(), grad, self.shape, is_coalesced=True)


def sparse_constructor_values_backward(grad, indices):
    """The gradient of a sparse tensor's values: ``grad`` at each of its entries (a dense
    ``grad`` read there, a sparse one looked up)."""
    if grad.is_sparse:
        mask = ember._sparse_coo_tensor_unsafe(indices, grad.new_empty(
            (indices.shape[1],) + tuple(grad.shape[indices.shape[0]:])), grad.shape)
        return grad.sparse_mask(mask)._values()
    return grad[tuple(indices.unbind(0))]


def sparse_mask_backward(grad, mask, self_layout):
    g = grad.sparse_mask(mask) if grad.is_sparse else grad.sparse_mask(mask.coalesce())
    return g if self_layout == ember.sparse_coo else g.to_dense()


def mm_mat1_sparse_backward(grad, mat1, mat2, alpha):
    """The sparse factor's gradient of ``addmm(self, sparse, dense)``: only at its entries."""
    dense = grad.mm(mat2.t().conj())
    if alpha != 1:
        dense = dense * alpha
    return dense.sparse_mask(mat1.coalesce())
