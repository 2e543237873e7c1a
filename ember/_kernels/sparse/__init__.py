"""Kernels of sparse tensors: COO (the SparseCPU and SparseCUDA dispatch keys, ``coo.py``) and
the compressed layouts CSR, CSC, BSR, BSC (SparseCsrCPU and SparseCsrCUDA, ``compressed.py``),
written in ember ops on a sparse tensor's parts, which are dense tensors on its device, so one
kernel serves both keys of a layout."""


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
