"""Importers: where ``PackageExporter`` finds modules and objects (``sys_importer``: the Python
environment; a ``PackageImporter``: a loaded package), and how pickling names an object."""
import importlib
import logging
import sys
from abc import ABC, abstractmethod
from pickle import _getattribute, _Pickler, whichmodule as _pickle_whichmodule

from ._mangling import demangle, get_mangle_prefix, is_mangled

__all__ = ["ObjNotFoundError", "ObjMismatchError", "Importer", "OrderedImporter"]

log = logging.getLogger(__name__)


class ObjNotFoundError(Exception):
    """An object that cannot be found under the module and name it claims."""


class ObjMismatchError(Exception):
    """An object whose module and name give a different object in this importer's
    environment."""


def _lookup(module, name):
    # (pickle's _getattribute takes a dotted string before Python 3.14, its parts after)
    if sys.version_info >= (3, 14):
        return _getattribute(module, name.split("."))
    return _getattribute(module, name)[0]


class Importer(ABC):
    """Imports modules by name (``import_module``) and finds the module and name of an object
    (``get_name``), as pickling needs them."""

    modules: dict

    @abstractmethod
    def import_module(self, module_name):
        """The module named ``module_name`` (ModuleNotFoundError if there is none)."""

    def get_name(self, obj, name=None):
        """``(module_name, name)`` under which ``obj`` is found in this importer's environment
        (demangled). Raises ObjNotFoundError, or ObjMismatchError when that name gives another
        object."""
        if name is None and obj and _Pickler.dispatch.get(type(obj)) is None:
            # an object whose __reduce__ returns a string pickles as that global (pickle's rule)
            reduce = getattr(obj, "__reduce__", None)
            if reduce is not None:
                try:
                    rv = reduce()
                    if isinstance(rv, str):
                        name = rv
                except Exception:
                    pass
        if name is None:
            name = getattr(obj, "__qualname__", None)
        if name is None:
            name = obj.__name__
        module_name = demangle(self.whichmodule(obj, name))
        try:
            obj2 = _lookup(self.import_module(module_name), name)
        except (ImportError, KeyError, AttributeError):
            raise ObjNotFoundError(f"{obj} was not found as {module_name}.{name}") from None
        if obj is obj2:
            return module_name, name

        def get_obj_info(o):
            module_name = self.whichmodule(o, name)
            mangled = is_mangled(module_name)
            location = (get_mangle_prefix(module_name) if mangled
                        else "the current Python environment")
            importer_name = (f"the importer for {get_mangle_prefix(module_name)}" if mangled
                             else "'sys_importer'")
            return module_name, location, importer_name

        obj_module, obj_location, obj_importer = get_obj_info(obj)
        obj2_module, obj2_location, obj2_importer = get_obj_info(obj2)
        raise ObjMismatchError(
            f"\n\nThe object provided is from '{obj_module}', which is coming from "
            f"{obj_location}.\nHowever, when we import '{obj2_module}', it's coming from "
            f"{obj2_location}.\nTo fix this, make sure this 'PackageExporter's importer lists "
            f"{obj_importer} before {obj2_importer}.")

    def whichmodule(self, obj, name):
        """The name of the module ``obj`` belongs to (``__module__``, else a search of this
        importer's modules, else ``__main__``)."""
        module_name = getattr(obj, "__module__", None)
        if module_name is not None:
            return module_name
        for module_name, module in self.modules.copy().items():
            if module_name in ("__main__", "__mp_main__") or module is None:
                continue
            try:
                if _lookup(module, name) is obj:
                    return module_name
            except AttributeError:
                pass
        return "__main__"


class _SysImporter(Importer):
    """The Python environment: ``importlib.import_module`` and ``sys.modules``."""

    def import_module(self, module_name):
        return importlib.import_module(module_name)

    def whichmodule(self, obj, name):
        module_name = getattr(obj, "__module__", None)
        if module_name is not None:
            return module_name
        return _pickle_whichmodule(obj, name)


sys_importer = _SysImporter()


class OrderedImporter(Importer):
    """Several importers, asked in order: the first that has the module (or object) answers."""

    def __init__(self, *args):
        self._importers = list(args)

    def _is_torchpackage_dummy(self, module):
        # a package's directory module without an __init__.py of its own: the next importer
        # may hold the real one
        if not getattr(module, "__torch_package__", False):
            return False
        if not hasattr(module, "__path__"):
            return False
        if not hasattr(module, "__file__"):
            return True
        return module.__file__ is None

    def get_name(self, obj, name=None):
        for importer in self._importers:
            try:
                return importer.get_name(obj, name)
            except (ObjNotFoundError, ObjMismatchError) as e:
                log.warning(f"Tried to call get_name with obj {obj}, and name {name} on "
                            f"{importer} and got {e}")
        raise ObjNotFoundError(f"Could not find obj {obj} and name {name} in any of the "
                               f"importers {self._importers}")

    def import_module(self, module_name):
        last_err = None
        for importer in self._importers:
            if not isinstance(importer, Importer):
                raise TypeError(f"{importer} is not a Importer. All importers in "
                                f"OrderedImporter must inherit from Importer.")
            try:
                module = importer.import_module(module_name)
                if self._is_torchpackage_dummy(module):
                    continue
                return module
            except ModuleNotFoundError as err:
                last_err = err
        if last_err is not None:
            raise last_err
        raise ModuleNotFoundError(module_name)

    def whichmodule(self, obj, name):
        for importer in self._importers:
            module_name = importer.whichmodule(obj, name)
            if module_name != "__main__":
                return module_name
        return "__main__"
