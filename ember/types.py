"""``torch.types``: the type aliases PyTorch's signatures are written with — ``_int``,
``_size``, ``Number``, ``Device``, ``FileLike`` ... — over ember's classes (``_dtype`` is
:class:`ember.dtype`, ``_size`` admits :class:`ember.Size`), and ``Storage``, the interface a
storage class offers to serialization. Programs import them to annotate their own code
(``from torch.types import Number``), so they are the same kinds of objects as PyTorch's: type
aliases, and the tuples ``_Number`` and ``py_sym_types`` for ``isinstance`` checks.
"""
# The underscore names let signatures use these builtins where a module attribute of the same
# name (``torch.int``, ``torch.float``, ``torch.bool`` are dtypes) shadows them.
import os
from builtins import (  # noqa: F401
    bool as _bool,
    bytes as _bytes,
    complex as _complex,
    float as _float,
    int as _int,
    str as _str,
)
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any, Self, TypeAlias, Union

from ._C import DispatchKey
from ._core.device import device as _device, layout as _layout  # noqa: F401
from ._core.quantizer import qscheme as _qscheme  # noqa: F401
from ._core.dtype import dtype as _dtype
from ._core.size import Size
from ._core.symint import SymBool, SymFloat, SymInt
from ._tensor import Tensor

if TYPE_CHECKING:
    from .autograd.graph import GradientEdge

__all__ = ["Number", "Device", "FileLike", "Storage"]

# what autograd functions take for outputs, inputs and gradients
_TensorOrTensors: TypeAlias = Tensor | Sequence[Tensor]
_TensorOrOptionalTensors: TypeAlias = Tensor | Sequence[Tensor | None]
_TensorOrTensorsOrGradEdge: TypeAlias = Union[
    Tensor, Sequence[Tensor], "GradientEdge", Sequence["GradientEdge"]]

_size: TypeAlias = Size | list[int] | tuple[int, ...]
_symsize: TypeAlias = Size | Sequence[int | SymInt]
_dispatchkey: TypeAlias = str | DispatchKey

IntLikeType: TypeAlias = int | SymInt
FloatLikeType: TypeAlias = float | SymFloat
BoolLikeType: TypeAlias = bool | SymBool

py_sym_types = (SymInt, SymFloat, SymBool)
PySymType: TypeAlias = SymInt | SymFloat | SymBool

Number: TypeAlias = int | float | bool
_Number = (int, float, bool)  # the tuple form, which PyTorch's own isinstance checks use

FileLike: TypeAlias = str | os.PathLike[str] | IO[bytes]

# a device, its name, or a CUDA index; None for the default device
Device: TypeAlias = _device | str | int | None


class Storage:
    """What serialization expects of a storage class (PyTorch's protocol, spelled as a base
    class whose methods each storage class provides): its device and dtype, its bytes and
    their size, sharing, and reading and writing files."""

    _cdata: int
    device: _device
    dtype: _dtype
    _torch_load_uninitialized: bool

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        raise NotImplementedError

    def _new_shared(self, size: int) -> Self:
        raise NotImplementedError

    def _write_file(self, f: Any, is_real_file: bool, save_size: bool,
                    element_size: int) -> None:
        raise NotImplementedError

    def element_size(self) -> int:
        raise NotImplementedError

    def is_shared(self) -> bool:
        raise NotImplementedError

    def share_memory_(self) -> Self:
        raise NotImplementedError

    def nbytes(self) -> int:
        raise NotImplementedError

    def cpu(self) -> Self:
        raise NotImplementedError

    def data_ptr(self) -> int:
        raise NotImplementedError

    def from_file(self, filename: str, shared: bool = False, nbytes: int = 0) -> Self:
        raise NotImplementedError

    def _new_with_file(self, f: Any, element_size: int) -> Self:
        raise NotImplementedError
