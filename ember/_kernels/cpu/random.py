"""cpu/random kernels."""
__all__ = []
