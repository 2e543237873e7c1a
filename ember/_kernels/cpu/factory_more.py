"""cpu/factory_more kernels."""
__all__ = []
