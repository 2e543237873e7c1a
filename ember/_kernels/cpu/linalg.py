"""cpu/linalg kernels."""
__all__ = []
