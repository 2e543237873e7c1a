"""Causal masks as objects ``scaled_dot_product_attention`` understands, as
``torch.nn.attention.bias``: ``causal_upper_left`` (query i sees keys 0..i, what
``is_causal=True`` means) and ``causal_lower_right`` (the diagonal aligned to the last key: query
i of L sees keys 0..i + S - L, the mask of a query block appended to a key cache).

A ``CausalBias`` is a tensor subclass whose ``__torch_function__`` takes the attention call,
as PyTorch's: the upper-left variant, and the lower-right one where L == S, become
``is_causal=True``; the lower-right one where L != S runs the CUDA flash op (whose causal mask is
bottom-right) where it can take the inputs, else attention with the mask materialized (PyTorch
would try its memory-efficient kernel's bottom-right mask in between; ember's takes none)."""
from enum import IntEnum, auto
from warnings import warn

import ember

from ...backends.cuda import SDPAParams, can_use_flash_attention
from . import _raise_kernel_warnings

__all__ = ["causal_upper_left", "causal_lower_right", "CausalVariant", "CausalBias"]


class CausalVariant(IntEnum):
    """Where a causal mask's diagonal starts: ``UPPER_LEFT`` (``tril(ones(L, S))``) or
    ``LOWER_RIGHT`` (``tril(ones(L, S), diagonal=S - L)``); the same when L == S."""
    UPPER_LEFT = auto()
    LOWER_RIGHT = auto()


class CausalBias(ember.Tensor):
    """A causal mask of ``seq_len_q`` x ``seq_len_kv`` (see :class:`CausalVariant`), made by
    :func:`causal_upper_left` or :func:`causal_lower_right` and passed as the ``attn_mask`` of
    ``scaled_dot_product_attention``."""

    def __init__(self, variant, seq_len_q, seq_len_kv):
        if not isinstance(variant, CausalVariant):
            raise AssertionError(
                f"variant must be a CausalVariant, got {type(variant).__name__}")
        super().__init__()
        self.variant = variant
        self.seq_len_q = seq_len_q
        self.seq_len_kv = seq_len_kv
        if seq_len_q > seq_len_kv and variant == CausalVariant.LOWER_RIGHT:
            warn("Lower right causal bias will produce NaNs in the output when seq_len_q > "
                 "seq_len_kv!", stacklevel=2)

    def _upper_left(self, device):
        return ember.tril(ember.ones(self.seq_len_q, self.seq_len_kv, device=device,
                                     dtype=ember.bool))

    def _lower_right(self, device):
        return ember.tril(ember.ones(self.seq_len_q, self.seq_len_kv, device=device,
                                     dtype=ember.bool),
                          diagonal=self.seq_len_kv - self.seq_len_q)

    def _materialize(self, device=None):
        """The mask as a boolean tensor (True: may attend) on ``device`` (the CPU by default)."""
        device = ember.device("cpu") if device is None else device
        if self.variant == CausalVariant.UPPER_LEFT:
            return self._upper_left(device)
        if self.variant == CausalVariant.LOWER_RIGHT:
            return self._lower_right(device)
        return None

    @staticmethod
    def _dispatch(query, key, value, attn_mask, dropout_p=0.0, is_causal=False, scale=None,
                  enable_gqa=False):
        """scaled_dot_product_attention under this mask (see the module docstring)."""
        if is_causal:
            raise ValueError("CausalBias should not be used with causal=True")
        F = ember.nn.functional
        if (attn_mask.seq_len_q == attn_mask.seq_len_kv
                or attn_mask.variant == CausalVariant.UPPER_LEFT):
            return F.scaled_dot_product_attention(query, key, value, attn_mask=None,
                                                  dropout_p=dropout_p, is_causal=True,
                                                  scale=scale, enable_gqa=enable_gqa)
        if attn_mask.variant == CausalVariant.LOWER_RIGHT:
            params = SDPAParams(query, key, value, None, dropout_p, is_causal, enable_gqa)
            if can_use_flash_attention(params):
                return ember.ops.aten._scaled_dot_product_flash_attention(
                    query, key, value, dropout_p, is_causal=True, scale=scale)[0]
            _raise_kernel_warnings(params)
            return F.scaled_dot_product_attention(
                query, key, value, attn_mask=attn_mask._materialize(query.device),
                dropout_p=dropout_p, is_causal=False, scale=scale, enable_gqa=enable_gqa)
        raise ValueError(f"CausalBias.variant must be a CausalVariant type, but found: "
                         f"{attn_mask.variant}")

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        if func is ember.nn.functional.scaled_dot_product_attention:
            return cls._dispatch(*args, **kwargs)
        return super().__torch_function__(func, types, args, kwargs)

    def __repr__(self):
        return self._materialize().__repr__()


def causal_upper_left(*size):
    """The upper-left causal mask of ``size`` = (seq_len_q, seq_len_kv): what
    ``is_causal=True`` means."""
    if len(size) != 2:
        raise AssertionError("causal_upper_left only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.UPPER_LEFT, seq_len_q, seq_len_kv)


def causal_lower_right(*size):
    """The lower-right causal mask of ``size`` = (seq_len_q, seq_len_kv): the diagonal ends at
    the last key (``tril(ones(size), diagonal=seq_len_kv - seq_len_q)``)."""
    if len(size) != 2:
        raise AssertionError("causal_lower_right only supports 2D tensors")
    seq_len_q, seq_len_kv = size
    return CausalBias(CausalVariant.LOWER_RIGHT, seq_len_q, seq_len_kv)
