"""Derivative helpers of sparse ops (PyTorch's FunctionsManual names): gradients that keep a
sparse (COO or compressed) input's layout, found at its entries."""
import ember

__all__ = ["values_backward", "sparse_constructor_values_backward", "sparse_mask_backward",
           "mm_mat1_sparse_backward", "sparse_csr_constructor_values_backward",
           "sparse_compressed_constructor_values_backward", "sparse_conversion_backward"]

_COMPRESSED = (ember.sparse_csr, ember.sparse_csc, ember.sparse_bsr, ember.sparse_bsc)


def _compressed_indices(t):
    """(compressed, plain) indices of a compressed tensor, by its orientation."""
    if t.layout in (ember.sparse_csr, ember.sparse_bsr):
        return t.crow_indices(), t.col_indices()
    return t.ccol_indices(), t.row_indices()


def values_backward(grad, self):
    """``values()``'s gradient: a sparse tensor at ``self``'s (coalesced) indices."""
    if self.layout in _COMPRESSED:
        return ember._sparse_compressed_tensor_unsafe(*_compressed_indices(self), grad,
                                                      self.shape, layout=self.layout)
    return ember._sparse_coo_tensor_unsafe(self.indices(), grad, self.shape, is_coalesced=True)


def sparse_constructor_values_backward(grad, indices):
    """The gradient of a sparse tensor's values: ``grad`` at each of its entries (a dense
    ``grad`` read there, a sparse one looked up)."""
    if grad.is_sparse:
        filler = ember.empty((indices.shape[1],) + tuple(grad.shape[indices.shape[0]:]),
                             dtype=grad.dtype, device=grad.device)
        mask = ember._sparse_coo_tensor_unsafe(indices, filler, grad.shape)
        return grad.sparse_mask(mask)._values()
    return grad[tuple(indices.unbind(0))]


def sparse_mask_backward(grad, mask, self_layout):
    g = grad.sparse_mask(mask) if grad.is_sparse else grad.sparse_mask(mask.coalesce())
    return g if self_layout == ember.sparse_coo else g.to_dense()


def mm_mat1_sparse_backward(grad, mat1, mat2, alpha):
    """The sparse factor's gradient of ``addmm(self, sparse, dense)``: only at its entries
    (PyTorch has none for the CSC, BSR and BSC layouts)."""
    if mat1.layout in _COMPRESSED and mat1.layout != ember.sparse_csr:
        from .._kernels.rules.sparse import layout_name
        raise RuntimeError(f"sparse_addmm_sparse_backward: unsupported combination of layouts, "
                           f"grad: {layout_name(grad.layout)}, mat1: {layout_name(mat1.layout)}, "
                           f"mat2: {layout_name(mat2.layout)}")
    dense = grad.mm(mat2.t().conj())
    if alpha != 1:
        dense = dense * alpha
    # a CSR factor's gradient is CSR with its pattern (a CSR matrix is always coalesced)
    return dense.sparse_mask(mat1 if mat1.layout == ember.sparse_csr else mat1.coalesce())


def sparse_csr_constructor_values_backward(grad, crow_indices, col_indices):
    """The gradient of a CSR matrix's values: ``grad`` at each of its entries."""
    rows = ember.arange(crow_indices.numel() - 1, device=crow_indices.device)
    rows = rows.repeat_interleave(crow_indices[1:] - crow_indices[:-1])
    indices = ember.stack([rows, col_indices])
    return sparse_constructor_values_backward(grad.to_sparse() if grad.layout ==
                                              ember.sparse_csr else grad, indices)


def sparse_compressed_constructor_values_backward(grad, compressed_indices, plain_indices,
                                                  values, layout):
    """The gradient of a compressed tensor's values: ``grad`` at each of its entries (every
    element of a block), in the values' shape."""
    mask = ember._sparse_compressed_tensor_unsafe(compressed_indices, plain_indices,
                                                  values.detach(), grad.shape, layout=layout)
    dense = grad if grad.layout == ember.strided else grad.to_dense()
    return dense.sparse_mask(mask).values()


def sparse_conversion_backward(grad, self):
    """The gradient of a conversion to a sparse layout: dense for a dense input, else at the
    input's entries in its layout."""
    dense = grad if grad.layout == ember.strided else grad.to_dense()
    if self.layout == ember.strided:
        return dense
    return dense.sparse_mask(self if self.layout in _COMPRESSED else self.coalesce())
