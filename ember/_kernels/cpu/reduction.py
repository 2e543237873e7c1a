"""cpu/reduction kernels."""
__all__ = []
