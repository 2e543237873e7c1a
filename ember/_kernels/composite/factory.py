"""composite/factory kernels."""
__all__ = []
