"""The backend registry (PyTorch's ``torch._dynamo.backends.registry``): a backend is a callable
``(gm: ember.fx.GraphModule, example_inputs: list[Tensor]) -> callable`` that the captured
graph is handed to; its result is called with the graph's inputs and returns the graph's
outputs.

Registered here: ``"eager"`` (run the captured graph with ember ops, ``gm.forward``);
``"aot_eager"`` and ``"aot_eager_decomp_partition"`` (AOTAutograd, ``ember._functorch``);
``"inductor"`` (``ember._inductor.compile_fx``: fused C/OpenMP kernels), ``ember.compile``'s
default backend.
"""
import functools

__all__ = ["register_backend", "lookup_backend", "list_backends", "register_debug_backend",
           "with_options", "get_default_backend", "set_default_backend"]

_BACKENDS = {}
_TAGS = {}
_default_backend = "inductor"  # what ember.compile uses when given no backend


def register_backend(compiler_fn=None, name=None, tags=()):
    """Register ``compiler_fn`` under ``name`` (its ``__name__`` by default); usable as a
    decorator."""
    if compiler_fn is None:
        return functools.partial(register_backend, name=name, tags=tags)
    name = name or compiler_fn.__name__
    if name in _BACKENDS:
        raise AssertionError(f"duplicate name: {name}")
    _BACKENDS[name] = compiler_fn
    _TAGS[name] = tuple(tags)
    return compiler_fn


register_debug_backend = functools.partial(register_backend, tags=("debug",))


def lookup_backend(compiler_fn):
    """A backend name or a callable -> the callable."""
    if isinstance(compiler_fn, str):
        if compiler_fn not in _BACKENDS:
            from ..exc import InvalidBackend
            raise InvalidBackend(name=compiler_fn)
        return _BACKENDS[compiler_fn]
    if not callable(compiler_fn):
        raise TypeError(f"backend must be a name or a callable, got {compiler_fn!r}")
    return compiler_fn


_WITH_OPTIONS = {}


def with_options(backend, mode=None, options=None):
    """``ember.compile``'s ``mode=``/``options=`` handed to the backend as keyword arguments
    (``mode`` to ``inductor`` only, as PyTorch's wrapper does); one callable per setting, so
    compiled functions with the same settings share their cache."""
    key = (backend if isinstance(backend, str) else id(backend), mode,
           tuple(sorted((options or {}).items())))
    hit = _WITH_OPTIONS.get(key)
    if hit is None:
        fn = lookup_backend(backend)
        kwargs = dict(options or {})
        if mode is not None:
            kwargs["mode"] = mode

        def hit(gm, example_inputs):
            return fn(gm, example_inputs, **kwargs)
        hit.__name__ = getattr(fn, "__name__", "backend")
        _WITH_OPTIONS[key] = hit
    return hit


def set_default_backend(backend):
    """Set the backend ``ember.compile`` uses when no ``backend`` is given; None restores
    ``"inductor"``."""
    global _default_backend
    if backend is None:
        _default_backend = "inductor"
        return
    if not isinstance(backend, str) and not callable(backend):
        raise TypeError(f"backend must be a string or callable, got {type(backend)}")
    _default_backend = backend


def get_default_backend():
    """The backend ``ember.compile`` uses when no ``backend`` is given."""
    return _default_backend


def list_backends(exclude_tags=("debug", "experimental")):
    """Names of the registered backends, without those tagged ``exclude_tags``."""
    exclude = set(exclude_tags or ())
    return sorted(n for n, t in _TAGS.items() if not exclude.intersection(t))


@register_debug_backend
def eager(gm, example_inputs, **kwargs):
    """Run the captured graph with ember's eager ops."""
    return gm.forward


@register_debug_backend
def aot_eager(gm, example_inputs, **kwargs):
    """AOTAutograd with no compiler: the joint graph traced, partitioned into forward and
    backward graphs that run as traced (``ember._functorch.aot_autograd``)."""
    from ..._functorch.aot_autograd import aot_eager as backend
    return backend(gm, example_inputs)


@register_debug_backend
def aot_eager_decomp_partition(gm, example_inputs, **kwargs):
    """``aot_eager`` with the graphs lowered to core ATen and the min-cut partitioner."""
    from ..._functorch.aot_autograd import aot_eager_decomp_partition as backend
    return backend(gm, example_inputs)


@register_backend
def inductor(gm, example_inputs, **kwargs):
    """AOTAutograd, then every graph lowered, fused and compiled to C (``ember._inductor``)."""
    from ..._inductor.compile_fx import compile_fx
    return compile_fx(gm, example_inputs, **kwargs)
