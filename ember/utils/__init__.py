"""``ember.utils``: data loading (``ember.utils.data``), activation checkpointing, hook and
dispatch helpers.

Submodules load on first access: ``ember`` itself imports parts of this package while it is
still initializing, and ``data`` needs the finished ``ember`` namespace.
"""
import importlib

from .backend_registration import (generate_methods_for_privateuse1_backend,  # noqa: F401
                                   rename_privateuse1_backend)

__all__ = ["checkpoint", "data", "deterministic", "dlpack", "hooks", "weak",
           "rename_privateuse1_backend", "generate_methods_for_privateuse1_backend"]


def __getattr__(name):
    if name in __all__:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
