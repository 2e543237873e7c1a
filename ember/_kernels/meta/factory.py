"""meta/factory kernels."""
__all__ = []
