"""Context managers that decorate functions too (``torch.utils._contextlib``): ``no_grad``,
``enable_grad``, ``inference_mode`` and libraries' own managers (``@no_grad()`` and
``@no_grad`` both work). A generator function is wrapped so the context is entered each time
execution returns into the generator and left each time it yields, not held across yields."""
import functools
import inspect
import warnings

__all__ = ["context_decorator"]


def _wrap_generator(ctx_factory, func):
    """``func`` (a generator function) run in a fresh context from ``ctx_factory`` at every
    resumption."""
    @functools.wraps(func)
    def generator_context(*args, **kwargs):
        gen = func(*args, **kwargs)
        # the wrapped generator's end (StopIteration out of send / throw) ends this one with its
        # return value; letting StopIteration escape a generator is a RuntimeError
        try:
            with ctx_factory():
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with ctx_factory():
                        gen.close()
                    raise
                except BaseException as e:
                    with ctx_factory():
                        response = gen.throw(e)
                else:
                    with ctx_factory():
                        response = gen.send(request)
        except StopIteration as e:
            return e.value
    return generator_context


def context_decorator(ctx, func):
    """``func`` run inside ``ctx`` (a reusable context manager, or a callable making one) at
    every call; a class is refused (would only its constructor be wrapped?)."""
    if callable(ctx) and hasattr(ctx, "__enter__"):
        raise AssertionError(
            f"Passed in {ctx} is both callable and also a valid context manager (has "
            f"__enter__), making it ambiguous which interface to use.  If you intended to pass a "
            f"context manager factory, rewrite your call as context_decorator(lambda: ctx()); if "
            f"you intended to pass a context manager directly, rewrite your call as "
            f"context_decorator(lambda: ctx)")
    ctx_factory = ctx if callable(ctx) else (lambda: ctx)
    if inspect.isclass(func):
        raise RuntimeError(
            "Cannot decorate classes; it is ambiguous whether or not only the constructor or all "
            "methods should have the context manager applied; additionally, decorating a class "
            "at definition-site will prevent use of the identifier as a conventional type.  To "
            "specify which methods to decorate, decorate each of them individually.")
    if inspect.isgeneratorfunction(func):
        return _wrap_generator(ctx_factory, func)

    @functools.wraps(func)
    def decorate_context(*args, **kwargs):
        with ctx_factory():
            return func(*args, **kwargs)
    return decorate_context


class _DecoratorContextManager:
    """A context manager that decorates a function too, entering a fresh copy of itself
    (``clone``) around every call."""

    def __call__(self, orig_func):
        func = orig_func
        if inspect.isclass(orig_func):
            warnings.warn("Decorating classes is deprecated and will be disabled in future "
                          "versions. You should only decorate functions or methods. To preserve "
                          "the current behavior of class decoration, you can directly decorate "
                          "the `__init__` method and nothing else.", FutureWarning, stacklevel=2)
            func = lambda *args, **kwargs: orig_func(*args, **kwargs)  # noqa: E731
        return context_decorator(self.clone, func)

    def __enter__(self):
        raise NotImplementedError

    def __exit__(self, exc_type, exc_value, traceback):
        raise NotImplementedError

    def clone(self):
        return self.__class__()  # (a manager with __init__ arguments overrides this)


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """... used as a decorator without parentheses as well (``@no_grad``)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)
