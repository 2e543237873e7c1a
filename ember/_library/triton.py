"""``triton_op`` and ``wrap_triton``: Triton kernels as ember operators.

``wrap_triton(kernel)[grid](*args)`` launches a ``@triton.jit`` kernel on ember tensors (device
memory under CuPy; host memory on the CPU and the simulated device under Triton's interpreter,
``TRITON_INTERPRET=1``, which copies each storage to the host with ``UntypedStorage.cpu()`` and
``Tensor.set_`` and back with ``UntypedStorage.copy_``). On tensors without data (meta tensors,
FakeTensors) a launch does nothing: a Triton kernel only writes into tensors its caller
allocated, so the caller's allocations already carry the output shapes.

``triton_op`` is ``custom_op`` for a function that launches Triton kernels through
``wrap_triton``: the function itself is the op's fake implementation (run on meta or fake
tensors, where its launches are skipped), so no ``register_fake`` is needed.

Not here: PyTorch traces a triton_op's kernel launches into the graph
(``triton_kernel_wrapper_functional``) so that the compiler can see them; ember has no such
higher-order op, and a compiled graph calls the op as a whole.
"""


def _has_data(v):
    from .._subclasses.fake_tensor import FakeTensor
    if isinstance(v, (list, tuple)):
        return all(_has_data(x) for x in v)
    if hasattr(v, "_keyset"):  # an ember Tensor
        return not isinstance(v, FakeTensor) and v.device.type != "meta"
    return True


def _is_triton_kernel(k):
    try:
        from triton.runtime.autotuner import Autotuner
        from triton.runtime.jit import JITFunction
    except ImportError:
        return False
    kinds = (JITFunction, Autotuner)
    try:
        from triton.runtime.interpreter import InterpretedFunction
        kinds += (InterpretedFunction,)
    except ImportError:
        pass
    return isinstance(k, kinds)


class _WrappedTritonKernel:
    """What ``wrap_triton`` returns: index it with the grid, call it with the arguments."""

    def __init__(self, kernel):
        self.kernel = kernel

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            if not (_has_data(args) and _has_data(tuple(kwargs.values()))):
                return None
            return self.kernel[grid](*args, **kwargs)
        return launch

    def run(self, *args, grid, **kwargs):
        return self[grid](*args, **kwargs)

    def __repr__(self):
        return f"wrap_triton({self.kernel!r})"


def wrap_triton(triton_kernel, /):
    """Make a Triton kernel callable from a ``triton_op`` (``wrap_triton(k)[grid](*args)``)."""
    if not _is_triton_kernel(triton_kernel):
        raise RuntimeError("wrap_triton only works on functions annotated with triton.jit or "
                           "triton.autotune")
    return _WrappedTritonKernel(triton_kernel)


def triton_op(name, fn=None, /, *, mutates_args, schema=None):
    """``custom_op`` for a function whose kernels are launched with ``wrap_triton``; its
    function is also its fake implementation."""
    from ..library import custom_op

    def dec(fn):
        op = custom_op(name, fn, mutates_args=mutates_args, schema=schema)
        op.register_fake(fn)
        return op
    return dec(fn) if fn is not None else dec
