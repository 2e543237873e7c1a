"""``ember.compiler.config`` (PyTorch's ``torch.compiler.config``): the settings that cut
across the compile stack. Each is an alias of the ``ember._dynamo.config`` setting the capture
reads (reading or assigning one here reads or assigns that one); ``patch`` changes settings
for a block or a decorated function. A name that is not a setting is an ``AttributeError``,
read or assigned."""
import contextlib
import sys
import types

# (the settings are read through the module's class, so they are not module globals)
__all__ = ["assume_static_by_default", "automatic_dynamic_shapes",  # noqa: F822
           "recompile_limit", "patch"]

# setting -> its name in ember._dynamo.config
_ALIASES = {"assume_static_by_default": "assume_static_by_default",
            "automatic_dynamic_shapes": "automatic_dynamic_shapes",
            "recompile_limit": "recompile_limit"}


def _dynamo_config():
    from .._dynamo import config
    return config


class _Patch(contextlib.ContextDecorator):
    """The settings ``changes`` for the duration of a ``with`` block or a decorated call."""

    def __init__(self, module, changes):
        self.module, self.changes, self.saved = module, changes, []

    def __enter__(self):
        self.saved.append({k: getattr(self.module, k) for k in self.changes})
        for k, v in self.changes.items():
            setattr(self.module, k, v)
        return self

    def __exit__(self, *exc):
        for k, v in self.saved.pop().items():
            setattr(self.module, k, v)
        return False


class _ConfigModule(types.ModuleType):
    def __getattr__(self, name):
        if name in _ALIASES:
            return getattr(_dynamo_config(), _ALIASES[name])
        raise AttributeError(f"{self.__name__}.{name} does not exist")

    def __setattr__(self, name, value):
        if name in _ALIASES:
            setattr(_dynamo_config(), _ALIASES[name], value)
        elif name.startswith("__"):
            super().__setattr__(name, value)
        else:
            raise AttributeError(f"{self.__name__}.{name} does not exist")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(_ALIASES))

    def patch(self, arg1=None, arg2=None, **kwargs):
        """Settings changed while a block runs: ``patch(name, value)``, ``patch({name:
        value})`` or ``patch(name=value)``; a context manager and a decorator (an unknown
        name raises on entering it, as PyTorch's)."""
        if isinstance(arg1, str):
            changes = {arg1: arg2}
        else:
            changes = dict(arg1 or {})
        changes.update(kwargs)
        return _Patch(self, changes)


sys.modules[__name__].__class__ = _ConfigModule
