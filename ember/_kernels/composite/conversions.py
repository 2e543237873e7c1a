"""composite/conversions kernels."""
__all__ = []
