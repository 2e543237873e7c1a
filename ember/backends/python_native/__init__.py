"""``ember.backends.python_native``: switches for the operator overrides written in Python DSLs
(``ember._native``): turn a whole DSL off (``python_native.triton.enabled = False``), an op
across DSLs (``disable_operations("topk")``) or a dispatch key (``disable_dispatch_keys("CUDA")``),
each with a context-manager form. Disabling reinstalls the ops' native kernels; enabling puts
the overrides back.

``available_dsls`` lists the DSLs whose runtimes are installed (Triton 3.6+ or CuTe DSL, with
ember's CUDA backend), ``all_dsls`` every registered one.
"""
import functools
import sys
from contextlib import contextmanager

from .. import PropModule, flags_frozen


def _registry():
    from ... import _native
    return _native.registry


def _dsl_registry():
    from ... import _native
    return _native.dsl_registry.dsl_registry


def _get_dsl_module(dsl_name):
    module = _dsl_registry().get_dsl_module(dsl_name)
    if module is None:
        raise ValueError(f"Unknown DSL: {dsl_name}. Available DSLs: "
                         f"{_dsl_registry().list_all_dsls()}")
    return module


class DSLController:
    """One DSL's switch (``ember.backends.python_native.triton``)."""

    def __init__(self, dsl_name):
        self._dsl_name = dsl_name

    @property
    def name(self):
        return self._dsl_name

    @property
    def available(self):
        """Whether the DSL's runtime is installed."""
        return _dsl_registry().is_dsl_available(self._dsl_name)

    @property
    def version(self):
        return _dsl_registry().get_dsl_version(self._dsl_name)

    @property
    def enabled(self):
        return self._dsl_name not in _registry()._filter_state._dsl_names

    @enabled.setter
    def enabled(self, value):
        if flags_frozen():
            raise RuntimeError(f"not allowed to set {self._dsl_name} DSL flags after "
                               f"disable_global_flags; please use flags() context manager "
                               f"instead")
        self.enable() if value else self.disable()

    def disable(self):
        """Disable all operations of this DSL."""
        _get_dsl_module(self._dsl_name).deregister_op_overrides()

    def enable(self):
        """Re-enable all operations of this DSL."""
        _registry().reenable_op_overrides(enable_dsl_names=self._dsl_name)

    @contextmanager
    def disabled(self):
        """Disable this DSL for the block."""
        was_enabled = self.enabled
        try:
            self.disable()
            yield
        finally:
            if was_enabled:
                self.enable()

    def __repr__(self):
        return (f"DSLController({self._dsl_name}, "
                f"{'available' if self.available else 'unavailable'}, "
                f"{'enabled' if self.enabled else 'disabled'})")


class PythonNativeModule(PropModule):
    """The module object: DSL controllers appear as attributes named after the DSLs."""

    def __init__(self, original_module):
        super().__init__(original_module, original_module.__name__)

    @property
    def available_dsls(self):
        return list(_dsl_registry().list_available_dsls())

    @property
    def all_dsls(self):
        return list(_dsl_registry().list_all_dsls())

    def get_dsl_operations(self, dsl_name):
        """Sorted names of the operations ``dsl_name`` overrides."""
        return _registry().get_dsl_operations(dsl_name)

    def disable_operations(self, *op_symbols):
        """Disable these operations in every DSL."""
        _registry().deregister_op_overrides(disable_op_symbols=list(op_symbols))

    def enable_operations(self, *op_symbols):
        _registry().reenable_op_overrides(enable_op_symbols=list(op_symbols))

    def disable_dispatch_keys(self, *dispatch_keys):
        """Disable every override at these dispatch keys (``"CUDA"``, ``"CPU"``)."""
        _registry().deregister_op_overrides(disable_dispatch_keys=list(dispatch_keys))

    def enable_dispatch_keys(self, *dispatch_keys):
        _registry().reenable_op_overrides(enable_dispatch_keys=list(dispatch_keys))

    @contextmanager
    def operations_disabled(self, *op_symbols):
        """Disable these operations for the block (those disabled before stay disabled)."""
        before = set(_registry()._filter_state._op_symbols)
        self.disable_operations(*op_symbols)
        try:
            yield
        finally:
            again = [op for op in op_symbols if op not in before]
            if again:
                self.enable_operations(*again)

    def is_operation_disabled(self, op_symbol):
        return op_symbol in _registry()._filter_state._op_symbols

    def is_dsl_disabled(self, dsl_name):
        return dsl_name in _registry()._filter_state._dsl_names

    @functools.lru_cache(maxsize=16)  # noqa: B019 (one controller per DSL)
    def _get_dsl_controller(self, name):
        return DSLController(name)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")
        if name in self.all_dsls:
            return self._get_dsl_controller(name)
        try:
            return super().__getattr__(name)
        except AttributeError:
            raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'") from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.all_dsls) | {
            "available_dsls", "all_dsls", "get_dsl_operations", "disable_operations",
            "enable_operations", "disable_dispatch_keys", "enable_dispatch_keys",
            "operations_disabled", "is_operation_disabled", "is_dsl_disabled"})


sys.modules[__name__] = PythonNativeModule(sys.modules[__name__])
