"""The DSLs that may provide operator overrides, and whether their runtimes are here.

A DSL is an object with ``runtime_available()``, ``runtime_version()``,
``register_op_override(...)`` and ``deregister_op_overrides()`` (``DSLModuleProtocol``).
Availability never imports the DSL's package: it looks for it (``importlib.util.find_spec``).
"""
import functools
import importlib.metadata
import importlib.util
import logging

from . import registry

log = logging.getLogger(__name__)

_REQUIRED = ("runtime_available", "runtime_version", "register_op_override",
             "deregister_op_overrides")


class DSLRegistry:
    """Name -> DSL module."""

    def __init__(self):
        self._dsl_modules = {}

    def register_dsl(self, name, dsl_module):
        if not isinstance(name, str):
            raise TypeError(f"DSL name must be string, got {type(name).__name__}")
        if not name.strip():
            raise ValueError("DSL name cannot be empty or whitespace")
        missing = [m for m in _REQUIRED if not hasattr(dsl_module, m)]
        if missing:
            raise TypeError(f"DSL module '{name}' missing required methods: {missing}")
        if self._dsl_modules.get(name) not in (None, dsl_module):
            log.warning("DSL '%s' re-registered with different module object", name)
        self._dsl_modules[name] = dsl_module

    def is_dsl_available(self, dsl_name):
        module = self._dsl_modules.get(dsl_name)
        if module is None:
            return False
        try:
            return bool(module.runtime_available())
        except Exception:
            log.debug("Error checking availability for DSL %s", dsl_name, exc_info=True)
            return False

    def get_dsl_version(self, dsl_name):
        module = self._dsl_modules.get(dsl_name)
        return None if module is None else module.runtime_version()

    def list_available_dsls(self):
        return tuple(n for n in self._dsl_modules if self.is_dsl_available(n))

    def list_all_dsls(self):
        return tuple(sorted(self._dsl_modules))

    def get_dsl_module(self, name):
        return self._dsl_modules.get(name)


dsl_registry = DSLRegistry()


class PackageDSL:
    """A DSL whose runtime is a Python package (``triton``, ``cutlass``) that needs ember's
    CUDA backend; its overrides go through :func:`registry.register_op_override`."""

    def __init__(self, name, distribution, module, minimum=None):
        self.name, self.distribution, self.module, self.minimum = (name, distribution, module,
                                                                   minimum)

    @functools.cache  # noqa: B019 (one DSL object per name, for the process)
    def _runtime(self):
        from ..backends import cuda
        try:
            found = importlib.util.find_spec(self.module) is not None
        except (ModuleNotFoundError, ValueError):
            found = False
        if not (cuda.is_built() and found):
            return False, None
        try:
            version = importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return False, None
        numbers = tuple(int(p) for p in version.split("+")[0].split(".")[:2] if p.isdigit())
        return (self.minimum is None or numbers >= self.minimum), version

    def runtime_available(self):
        return self._runtime()[0]

    def runtime_version(self):
        return self._runtime()[1]

    def register_op_override(self, lib_symbol, op_symbol, dispatch_key, cond, impl, *,
                             allow_multiple_override=False, unconditional_override=False):
        registry.register_op_override(self.name, lib_symbol, op_symbol, dispatch_key, cond, impl,
                                      allow_multiple_override=allow_multiple_override,
                                      unconditional_override=unconditional_override)

    def deregister_op_overrides(self):
        registry.deregister_op_overrides(disable_dsl_names=self.name)


# PyTorch's two DSLs (Triton from 3.6, as PyTorch requires)
triton = PackageDSL("triton", "triton", "triton", minimum=(3, 6))
cutedsl = PackageDSL("cutedsl", "nvidia-cutlass-dsl", "cutlass")
dsl_registry.register_dsl("triton", triton)
dsl_registry.register_dsl("cutedsl", cutedsl)
