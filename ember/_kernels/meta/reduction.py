"""meta/reduction kernels."""
__all__ = []
