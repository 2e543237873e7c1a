"""``torch.utils._foreach_utils``: which devices have multi-tensor (foreach) and fused
kernels, and the grouping of parallel tensor lists by device and dtype that every foreach
path (the optimizers, gradient clipping, SWA averaging) runs before its ``_foreach_*`` calls,
since each such call takes tensors of one device and dtype."""
from typing import TypeAlias

from .._core.dtype import bfloat16, float32, float64
from .._tensor import Tensor
from ..autograd.grad_mode import no_grad
from .backend_registration import _get_privateuse1_backend_name


def _get_foreach_kernels_supported_devices():
    r"""Return the device type list that supports foreach kernels."""
    return ["cuda", "xpu", "mtia", _get_privateuse1_backend_name()]


def _get_fused_kernels_supported_devices():
    r"""Return the device type list that supports fused kernels in optimizer."""
    return ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", _get_privateuse1_backend_name()]


TensorListList: TypeAlias = list[list[Tensor | None]]
Indices: TypeAlias = list[int]
_foreach_supported_types = [Tensor]


_SIGNATURE = (
    "_group_tensors_by_device_and_dtype(): incompatible function arguments. The following "
    "argument types are supported:\n    1. (arg0: collections.abc.Sequence[collections.abc."
    "Sequence[torch.Tensor | None]], arg1: bool) -> dict[tuple[torch.device, torch.dtype], "
    "tuple[list[list[torch.Tensor | None]], list[int]]]\n\nInvoked with: ")


def _check_nested(tensorlistlist, with_indices):
    """The argument check of PyTorch's binding: a sequence of sequences of tensors or None."""
    def ok_list(x):
        return (isinstance(x, (list, tuple))
                and all(t is None or isinstance(t, Tensor) for t in x))
    if not (isinstance(tensorlistlist, (list, tuple)) and all(map(ok_list, tensorlistlist))):
        raise TypeError(f"{_SIGNATURE}{tensorlistlist!r}, {with_indices!r}")


def _expected(cond):
    return (f"Expected {cond} to be true, but got false.  (Could this error message be "
            f"improved?  If so, please report an enhancement request to PyTorch.)")


_MISMATCH = ("Tensors of the same index must be on the same device and the same dtype except "
             "`step` tensors that can be CPU and float32/64, and optimizer states that can be "
             "bfloat16 for mixed-precision training")


def _shares(key, t):
    """Whether ``t`` may stand beside a first-list tensor of (device, dtype) ``key``: same device
    and dtype, or an optimizer's float32/float64 step count (also on the CPU) or bfloat16
    state (on the same device)."""
    device, dtype = key
    if t.device == device:
        return t.dtype in (dtype, float32, float64, bfloat16)
    return t.device.type == "cpu" and t.dtype in (float32, float64)


@no_grad()
def _group_tensors_by_device_and_dtype(tensorlistlist, with_indices=False):
    """Split the columns of ``tensorlistlist`` (parallel lists; the first holds tensors, the
    others tensors or None, or are empty) by the (device, dtype) of the first list's tensor:
    ``{(device, dtype): (lists, indices)}``, where ``lists`` holds the group's entries of every
    list (an empty list stays empty) and ``indices``, with ``with_indices``, their positions
    in the input. The entries are the input's own tensors, so writing to them in place writes
    to the input; groups come in the order their first column appears (PyTorch's C++ map has
    no defined order). An entry of another list must share the first's device and dtype,
    except as ``_shares`` allows."""
    _check_nested(tensorlistlist, with_indices)
    if not tensorlistlist:
        raise RuntimeError(_expected("!nested_tensorlist.empty()"))
    first = tensorlistlist[0]
    if not first:
        raise RuntimeError(_expected("!nested_tensorlist[0].empty()"))
    num_tensors = len(first)
    if not all(len(lst) in (num_tensors, 0) for lst in tensorlistlist):
        raise RuntimeError(_expected(
            "std::all_of( nested_tensorlist.cbegin(), nested_tensorlist.cend(), [&](const auto& "
            "tensorlist) -> bool { return tensorlist.size() == num_tensors || tensorlist.size() "
            "== 0; })"))
    present = [(j, lst) for j, lst in enumerate(tensorlistlist) if lst]
    groups = {}
    for i, t in enumerate(first):
        if t is None:
            raise RuntimeError(f"Tensors of the first list of nested Tensor lists are supposed "
                               f"to be defined but the {i}-th Tensor is not.")
        key = (t.device, t.dtype)
        for _, lst in present:
            o = lst[i]
            if o is not None and o is not t and not _shares(key, o):
                raise RuntimeError(_MISMATCH)
        group = groups.get(key)
        if group is None:
            group = groups[key] = ([[] for _ in tensorlistlist], [])
        lists = group[0]
        for j, lst in present:
            lists[j].append(lst[i])
        if with_indices:
            group[1].append(i)
    return groups


def _device_has_foreach_support(device):
    from .. import jit
    return (device.type in (_get_foreach_kernels_supported_devices() + ["cpu"])
            and not jit.is_scripting())


def _has_foreach_support(tensors, device):
    return _device_has_foreach_support(device) and all(
        t is None or type(t) in _foreach_supported_types for t in tensors)
