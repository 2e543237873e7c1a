"""Helpers the generated wrappers call (PyTorch's ``torch._inductor.runtime``)."""
import ember

__all__ = ["check_bounds"]


def check_bounds(index, size, op, dim=0, wrap=False):
    """Raise as the eager op does when ``index`` holds a value outside ``[0, size)``
    (``[-size, size)`` with ``wrap``: ops that count negative indices from the end, as Python
    indexing does, and raise its IndexError): compiled kernels load through these indices
    unchecked, so the wrapper checks them first (before any kernel that reads them runs;
    nothing the caller sees has been written yet)."""
    if index.numel() == 0:
        return
    bad = (index < (-size if wrap else 0)) | (index >= size)
    if not bool(bad.any()):
        return
    if op == "embedding":
        raise IndexError("index out of range in self")
    value = int(index[bad].flatten()[0])
    message = f"index {value} is out of bounds for dimension {dim} with size {size}"
    raise (IndexError if wrap else RuntimeError)(message)
