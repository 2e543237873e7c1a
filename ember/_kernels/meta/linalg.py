"""meta/linalg kernels."""
__all__ = []
