"""meta/pointwise kernels."""
__all__ = []
