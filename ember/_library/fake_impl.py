"""The context a fake implementation reads with ``ember.library.get_ctx()`` (PyTorch's
``torch._library.fake_impl``).

A fake implementation gives an op's output metadata without data. When the output's size
depends on the values (a custom ``nonzero``), it asks the context for a new size:
``ember.library.get_ctx().new_dynamic_size()``. PyTorch answers with an unbacked symbolic int
when its FakeTensorMode has a ShapeEnv that allows dynamic output shapes, and otherwise raises
``DynamicOutputShapeException`` — which the compiler turns into a graph break. ember makes no
unbacked symbols, so under FakeTensorMode it always takes the second answer. On meta tensors
(the Meta kernel) asking is an error, as in PyTorch; outside a fake implementation
``get_ctx()`` is None.
"""
import contextlib
import warnings


def get_none():
    return None


# what ember.library.get_ctx() returns: set for the duration of each fake-implementation call
global_ctx_getter = get_none


@contextlib.contextmanager
def set_ctx_getter(ctx_getter):
    global global_ctx_getter
    prev = global_ctx_getter
    try:
        global_ctx_getter = ctx_getter
        yield
    finally:
        global_ctx_getter = prev


def meta_ctx_error(qualname, source):
    """The getter while a fake implementation runs as the Meta kernel."""
    def error_on_ctx():
        raise RuntimeError(
            f"{qualname} ({source}): You're trying to run this operator with meta Tensors (as "
            f"opposed to FakeTensors), but this operator may return an output Tensor with "
            f"data-dependent shape. Meta Tensors don't support operators with outputs that have "
            f"data-dependent shapes but FakeTensors do. If your operator does not return an "
            f"output with data-dependent shape, make sure the FakeTensor and/or meta kernel "
            f"does not call torch.library.get_ctx(). Otherwise, please use FakeTensors.")
    return error_on_ctx


class FakeImplCtx:
    """Context object for writing fake implementations for custom operators."""

    def __init__(self, _fake_mode, _op):
        self._fake_mode = _fake_mode
        self._shape_env = _fake_mode.shape_env
        self._op = _op

    def create_unbacked_symint(self, *, min=2, max=None):
        warnings.warn("`create_unbacked_symint` is deprecated, please use `new_dynamic_size` "
                      "instead", FutureWarning, stacklevel=2)
        return self.new_dynamic_size(min=min, max=max)

    def new_dynamic_size(self, *, min=0, max=None):
        """A size known only once the op has run: under ember's FakeTensorMode always
        ``DynamicOutputShapeException`` (see the module docstring), so tracing stops at this
        op as it stops at ``nonzero``."""
        from .._subclasses.fake_tensor import DynamicOutputShapeException
        raise DynamicOutputShapeException(self._op)
