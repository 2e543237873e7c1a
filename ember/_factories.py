"""Python-level tensor creation that PyTorch also writes by hand: ``Tensor(...)`` legacy
construction, ``tensor``/``as_tensor``/``from_numpy``, and ``Tensor.to``."""
__all__ = []
