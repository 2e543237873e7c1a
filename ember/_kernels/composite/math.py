"""composite/math kernels."""
__all__ = []
