"""``torch.functional``: the module PyTorch's Python-level tensor functions live in, re-exported
at the top level (``torch.functional.einsum is torch.einsum``). Code that imports them from here
gets ember's same functions."""
from ._functional_ops import (atleast_1d, atleast_2d, atleast_3d, block_diag,  # noqa: F401
                              broadcast_shapes, broadcast_tensors, cartesian_prod, cdist,
                              chain_matmul, einsum, meshgrid, norm, tensordot, unique,
                              unique_consecutive, unravel_index)
from ._linalg_functional import lu  # noqa: F401
from ._lowrank import pca_lowrank, svd_lowrank  # noqa: F401
from ._spectral import stft  # noqa: F401

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors",
           "cartesian_prod", "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu",
           "norm", "meshgrid", "pca_lowrank", "split", "stft", "svd_lowrank", "tensordot",
           "unique", "unique_consecutive", "unravel_index"]


# PyTorch defines these in torch/functional.py: their __module__ names them so (in
# __torch_function__'s errors, in FX code, in pickles)
for _name in __all__:
    if _name not in ("split", "istft", "pca_lowrank", "svd_lowrank"):
        globals()[_name].__module__ = __name__
del _name


def __getattr__(name):
    # split and istft are bound at ember's top level after this package's modules load
    if name in ("split", "istft"):
        import ember
        return getattr(ember, name)
    raise AttributeError(f"module 'ember.functional' has no attribute '{name}'")
