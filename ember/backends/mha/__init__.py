"""``ember.backends.mha``: whether ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer``
may take their fused inference fast path."""

_is_fastpath_enabled: bool = True


def get_fastpath_enabled() -> bool:
    """Returns whether fast path for TransformerEncoder and MultiHeadAttention is enabled.

    The fastpath might not be run even if ``get_fastpath_enabled`` returns ``True`` unless all
    conditions on inputs are met."""
    return _is_fastpath_enabled


def set_fastpath_enabled(value: bool) -> None:
    """Sets whether fast path is enabled (stored as given, as PyTorch does)."""
    global _is_fastpath_enabled
    _is_fastpath_enabled = value
