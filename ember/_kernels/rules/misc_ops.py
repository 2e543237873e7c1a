"""Rules of isin, triu_indices and tril_indices, for every backend: argument checks and result
shapes and dtypes, with PyTorch's errors. The CPU kernels (``cpu/misc_ops.py``) and the Meta
kernels (``meta/misc_ops.py``) call them; this module imports no backend."""
from ..._core import dtype as D


def check_tri_indices(name, row, col, dtype):
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    if dtype not in (D.int64, D.int32):
        raise NotImplementedError(f'"{name}" not implemented for \'{dtype._short}\'')


def check_isin(elements, test_elements):
    """isin has no kernel for bool or complex operands (a Python bool counts as Bool)."""
    for x in (elements, test_elements):
        dt = getattr(x, "_dtype", None)
        if dt is None:
            dt = D.bool_ if x.__class__ is bool else (D.complex128 if isinstance(x, complex)
                                                       else None)
        if dt is D.complex32:
            raise NotImplementedError("\"isin_default_cpu\" not implemented for 'ComplexHalf'")
        if dt is not None and (dt is D.bool_ or dt.is_complex):
            raise RuntimeError(f"Unsupported input type encountered for isin(): {dt._short}")
