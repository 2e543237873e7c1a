"""Module names of a package's modules inside its importer (``<torch_package_0>.foo``), so that
two loaded packages, and the environment's own ``foo``, never share a name."""
import re

_mangle_index = 0


class PackageMangler:
    """One importer's prefix: ``<torch_package_N>``, N unique in this process."""

    def __init__(self):
        global _mangle_index
        self._mangle_index = _mangle_index
        _mangle_index += 1
        self._mangle_parent = f"<torch_package_{self._mangle_index}>"

    def mangle(self, name):
        if len(name) == 0:
            raise AssertionError("name must not be empty")
        return self._mangle_parent + "." + name

    def demangle(self, mangled):
        """The name without this importer's prefix (other names unchanged)."""
        if mangled.startswith(self._mangle_parent + "."):
            return mangled.partition(".")[2]
        return mangled

    def parent_name(self):
        return self._mangle_parent


def is_mangled(name):
    return bool(re.match(r"<torch_package_\d+>", name))


def demangle(name):
    """The name without any importer's prefix."""
    if is_mangled(name):
        _, sep, last = name.partition(".")
        return last if len(sep) != 0 else ""
    return name


def get_mangle_prefix(name):
    return name.partition(".")[0] if is_mangled(name) else name
