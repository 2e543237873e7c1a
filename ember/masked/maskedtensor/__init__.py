"""PyTorch's ``torch.masked.maskedtensor``: MaskedTensor, a ``__torch_dispatch__`` wrapper
subclass that carries a data tensor and a boolean mask and runs each op on both (``core``), with
its op tables (``unary``, ``binary``, ``reductions``, ``passthrough``, ``_ops_refs``) and its
constructors (``creation``)."""
from .binary import _apply_native_binary, _is_native_binary
from .core import is_masked_tensor, MaskedTensor
from .passthrough import _apply_pass_through_fn, _is_pass_through_fn
from .reductions import _apply_reduction, _is_reduction
from .unary import _apply_native_unary, _is_native_unary

__all__ = ["MaskedTensor", "is_masked_tensor", "_apply_native_binary", "_is_native_binary",
           "_apply_pass_through_fn", "_is_pass_through_fn", "_apply_reduction", "_is_reduction",
           "_apply_native_unary", "_is_native_unary"]
