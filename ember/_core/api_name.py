"""The module name in the printed forms of dtypes, layouts, memory formats and ``Size``
(``ember.float32``): ``torch`` while :mod:`ember.as_torch` is installed, since the program then
imports ember as ``torch`` and libraries compare these forms with PyTorch's
(PyTorch Geometric's ``str(layout) == 'torch.sparse_coo'``). ember's classes and functions
carry ``torch.`` module names then too (:func:`ember.as_torch.install`), and ember's own checks
of an object's ``__module__`` read it through :func:`as_ember`."""

name = "ember"


def ember_repr(obj):
    """``repr(obj)`` spelled with ``ember.`` whatever the printed module name is: generated
    code (FX graphs, Inductor wrappers) names ember's values through ``ember``."""
    r = repr(obj)
    if name != "ember" and r.startswith(name + "."):
        return "ember." + r[len(name) + 1:]
    return r


def as_ember(module):
    """An object's ``__module__`` spelled from ``ember`` (``"ember.nn.functional"``) whatever
    the printed module name is. While as_torch is installed no other ``torch`` is importable,
    so a ``torch.`` module name is one of ember's."""
    if name != "ember" and module and (module == name or module.startswith(name + ".")):
        return "ember" + module[len(name):]
    return module
