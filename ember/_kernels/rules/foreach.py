"""Rules of the _foreach_* ops, for every backend: argument checks and result shapes and dtypes,
with PyTorch's errors. The CPU kernels (``cpu/foreach.py``) and the Meta kernels
(``meta/foreach.py``) call them; this module imports no backend."""


def _check_lengths(*lists):
    n = len(lists[0])
    if n == 0:
        raise RuntimeError("Tensor list must have at least one tensor.")
    for other in lists[1:]:
        if len(other) != n:
            raise RuntimeError(f"Tensor lists must have the same number of tensors, got {n} and "
                               f"{len(other)}")
