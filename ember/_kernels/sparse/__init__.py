"""Kernels of sparse COO tensors (the SparseCPU and SparseCUDA dispatch keys): written in ember
ops on a sparse tensor's indices and values, which are dense tensors on its device, so one kernel
serves both keys (``coo.py``)."""


def kernel_table():
    """A module's ``{"op.overload": kernel}`` table and the decorator that fills it (the module
    registers the table on its dispatch keys at its end)."""
    table = {}

    def kernel(*names):
        def deco(fn):
            for name in names:
                table[name] = fn
            return fn
        return deco
    return table, kernel
