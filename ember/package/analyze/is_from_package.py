"""``is_from_package``: whether a module or object was loaded from a package."""
from types import ModuleType

from .._mangling import is_mangled


def is_from_package(obj):
    """Whether ``obj`` (a module, or an object by its class's module) came from a
    ``PackageImporter``."""
    if type(obj) is ModuleType:
        return is_mangled(obj.__name__)
    return is_mangled(type(obj).__module__)
