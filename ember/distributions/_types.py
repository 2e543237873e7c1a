"""The ``torch.types`` aliases the distribution modules annotate with."""
from typing import Union

from ember import Size, device, dtype

_size = Union[Size, list, tuple]
_Number = Union[bool, int, float]
Number = Union[int, float, bool]
_dtype = dtype
Device = Union[device, str, int, None]
