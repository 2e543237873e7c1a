"""Helpers the generated wrappers call (PyTorch's ``torch._inductor.runtime``)."""
import ember

from .._core.device import CPU
from .._core.storage import _alloc_observers, from_array, get_allocator
from .._core.tensor_impl import _alias, data_ptr, make_tensor
from .._kernels.cpu._util import nd
from ..backends._context import ctx, fill_uninitialized

__all__ = ["check_bounds", "data_ptr", "empty_strided_cpu", "reinterpret_tensor"]

_CPU_ALLOCATOR = get_allocator(CPU)


def empty_strided_cpu(size, stride, dtype, nbytes):
    """``ember.empty_strided(size, stride, dtype=dtype)`` on the CPU without the dispatcher, for
    the wrappers of compiled graphs (Python and C): ``size`` and ``stride`` are tuples the graph's
    tracing checked, ``nbytes`` their storage extent in bytes, computed when the graph
    compiled. The storage is the CPU allocator's NumPy buffer, adopted as an UntypedStorage
    when first asked for (at once while the memory profiler watches), as kernels' results are;
    deterministic mode fills it as ``empty_strided`` does."""
    buf = _CPU_ALLOCATOR.allocate(nbytes)
    t = make_tensor(from_array(buf, CPU) if _alloc_observers else buf, size, stride, 0, dtype,
                    CPU)
    if ctx.deterministic:
        fill_uninitialized(nd(t))
    return t


def reinterpret_tensor(base, size, stride, offset):
    """PyTorch's ``reinterpret_tensor`` of Inductor's wrappers: ``base``'s storage seen with
    ``size``/``stride`` from element ``offset`` of the storage, without the dispatcher (an alias,
    as the ``as_strided`` kernel makes after its checks). The layout is a ReinterpretView's,
    which lies inside its buffer by construction, so there is nothing to check per call; and
    nothing records autograd history in a wrapper (an inference graph's inputs need no grad, a
    training graph's forward and backward run inside its autograd.Function), so the alias
    needs none."""
    return _alias(base, size, stride, offset)


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
