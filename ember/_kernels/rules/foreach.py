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


def check_scalar_list(self, scalars):
    """A ``Scalar[]`` argument has one number per tensor."""
    if len(scalars) != len(self):
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")


def check_scalar_tensor(t):
    """The ``Tensor other`` of a foreach op is one number, as a 0-dim tensor."""
    if t.dim() != 0:
        raise RuntimeError(f"scalar tensor expected to be 0 dim but it has {t.dim()} dimensions "
                           f"and {t.numel()} elements.")


def foreach_norm_check(self, ord):
    """``_foreach_norm``'s own checks; each tensor's are ``linalg.vector_norm``'s. The infinity
    norm of an empty tensor is refused for the whole list first, with the foreach op's message."""
    _check_lengths(self)
    if float(ord) == float("inf") and any(t.numel() == 0 for t in self):
        raise RuntimeError("_foreach_norm cannot compute the infinity norm on an empty tensor "
                           "because the operation does not have an identity")
