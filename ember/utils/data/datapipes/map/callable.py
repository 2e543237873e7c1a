"""``Mapper`` (``map``) over a MapDataPipe: ``fn`` applied to each element as it is read."""
from collections.abc import Callable
from typing import TypeVar

from .._decorator import functional_datapipe
from ..datapipe import MapDataPipe
from ..utils.common import _check_unpickable_fn

__all__ = ["MapperMapDataPipe", "default_fn"]

_T_co = TypeVar("_T_co", covariant=True)


def default_fn(data):
    """The identity, as a module-level function so the datapipe stays picklable."""
    return data


@functional_datapipe("map")
class MapperMapDataPipe(MapDataPipe[_T_co]):
    """``self[i] == fn(datapipe[i])`` (functional name: ``map``)."""

    datapipe: MapDataPipe
    fn: Callable

    def __init__(self, datapipe: MapDataPipe, fn: Callable = default_fn):
        super().__init__()
        self.datapipe = datapipe
        _check_unpickable_fn(fn)
        self.fn = fn

    def __len__(self) -> int:
        return len(self.datapipe)

    def __getitem__(self, index) -> _T_co:
        return self.fn(self.datapipe[index])
