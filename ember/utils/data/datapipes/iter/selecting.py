"""``Filter`` (``filter``): keeps the elements for which a function returns True (on
DataFrames, a boolean column keeps those rows)."""
from collections.abc import Callable, Iterator
from typing import TypeVar

from .._decorator import functional_datapipe
from ..dataframe import dataframe_wrapper as df_wrapper
from ..datapipe import IterDataPipe
from ..utils.common import StreamWrapper, _check_unpickable_fn, validate_input_col

__all__ = ["FilterIterDataPipe"]

_T = TypeVar("_T")
_T_co = TypeVar("_T_co", covariant=True)


@functional_datapipe("filter")
class FilterIterDataPipe(IterDataPipe[_T_co]):
    """Keeps the elements for which ``filter_fn`` (applied to the element, or to its
    ``input_col`` columns) returns True; the streams of dropped elements are closed
    (functional name: ``filter``)."""

    datapipe: IterDataPipe[_T_co]
    filter_fn: Callable

    def __init__(self, datapipe: IterDataPipe[_T_co], filter_fn: Callable, input_col=None):
        super().__init__()
        self.datapipe = datapipe
        _check_unpickable_fn(filter_fn)
        self.filter_fn = filter_fn
        self.input_col = input_col
        validate_input_col(filter_fn, input_col)

    def _apply_filter_fn(self, data) -> bool:
        if self.input_col is None:
            return self.filter_fn(data)
        if isinstance(self.input_col, (list, tuple)):
            return self.filter_fn(*(data[col] for col in self.input_col))
        return self.filter_fn(data[self.input_col])

    def __iter__(self) -> Iterator[_T_co]:
        for data in self.datapipe:
            condition, filtered = self._returnIfTrue(data)
            if condition:
                yield filtered
            else:
                StreamWrapper.close_streams(data)

    def _returnIfTrue(self, data):
        condition = self._apply_filter_fn(data)
        if df_wrapper.is_column(condition):  # a DataFrame and a mask column: keep those rows
            result = [df_wrapper.get_item(data, idx)
                      for idx, mask in enumerate(df_wrapper.iterate(condition)) if mask]
            if result:
                return True, df_wrapper.concat(result)
            return False, None
        if not isinstance(condition, bool):
            raise ValueError("Boolean output is required for `filter_fn` of FilterIterDataPipe, "
                             "got", type(condition))
        return condition, data
