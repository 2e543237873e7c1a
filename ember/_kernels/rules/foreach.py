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


def check_packed_scalars(self, scalars):
    """The ``Tensor scalars`` of ``_foreach_addcmul``/``_foreach_addcdiv``: one number per tensor,
    packed in a 1-dim CPU tensor (PyTorch's ``convert_tensor_to_scalar_list``)."""
    if scalars.device.type != "cpu":
        raise RuntimeError(f"Expected scalars to be on CPU, got {scalars.device} instead.")
    if scalars.dim() != 1:
        raise RuntimeError(f"Expected packed scalar Tensor to be of dimension 1. Got "
                           f"{scalars.dim()} instead.")
    if scalars.numel() != len(self):
        raise RuntimeError(f"Expected length of scalars to match input of length {len(self)} "
                           f"but got {scalars.numel()} instead.")


def foreach_max_check(self):
    """``_foreach_max``: every tensor has elements (a max over none is undefined)."""
    _check_lengths(self)
    if any(t.numel() == 0 for t in self):
        raise RuntimeError("_foreach_max cannot compute the maximum of an empty tensor; max over "
                           "zero elements is undefined.")


def foreach_powsum_check(self):
    """``_foreach_powsum``: floating or complex tensors, as its kernel computes."""
    _check_lengths(self)
    for t in self:
        if not (t._dtype.is_floating_point or t._dtype.is_complex):
            raise NotImplementedError(f"\"powsum_cpu\" not implemented for '{t._dtype._short}'")
