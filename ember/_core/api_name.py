"""The module name in the printed forms of dtypes, layouts, memory formats and ``Size``
(``ember.float32``): ``torch`` while :mod:`ember.as_torch` is installed, since the program then
imports ember as ``torch`` and libraries compare these forms with PyTorch's
(PyTorch Geometric's ``str(layout) == 'torch.sparse_coo'``)."""

name = "ember"


def ember_repr(obj):
    """``repr(obj)`` spelled with ``ember.`` whatever the printed module name is: generated
    code (FX graphs, Inductor wrappers) names ember's values through ``ember``."""
    r = repr(obj)
    if name != "ember" and r.startswith(name + "."):
        return "ember." + r[len(name) + 1:]
    return r
