"""``Mapper`` (``map``): a function over each element, or over some of its columns; and
``Collator`` (``collate``): a Mapper whose function collates a batch (``default_collate``)."""
import functools
from collections import namedtuple
from collections.abc import Callable, Iterator, Sized
from typing import Any, TypeVar

from ...collate import default_collate
from .._decorator import functional_datapipe
from ..dataframe import dataframe_wrapper as df_wrapper
from ..datapipe import IterDataPipe
from ..utils.common import _check_unpickable_fn, validate_input_col

__all__ = ["CollatorIterDataPipe", "MapperIterDataPipe"]

_T_co = TypeVar("_T_co", covariant=True)


@functional_datapipe("map")
class MapperIterDataPipe(IterDataPipe[_T_co]):
    """Applies ``fn`` to each element (functional name: ``map``).

    ``input_col``: ``None`` (the whole element), an index/key, or several (their values are
    ``fn``'s arguments). ``output_col`` (only with ``input_col``): where the result goes —
    ``None`` replaces the (first) input column and drops the others, ``-1`` appends, an
    index/key sets."""

    datapipe: IterDataPipe
    fn: Callable

    def __init__(self, datapipe: IterDataPipe, fn: Callable, input_col=None, output_col=None):
        super().__init__()
        self.datapipe = datapipe
        _check_unpickable_fn(fn)
        self.fn = fn
        self.input_col = input_col
        if input_col is None and output_col is not None:
            raise ValueError("`output_col` must be None when `input_col` is None.")
        if isinstance(output_col, (list, tuple)):
            if len(output_col) > 1:
                raise ValueError("`output_col` must be a single-element list or tuple")
            output_col = output_col[0]
        self.output_col = output_col
        validate_input_col(fn, input_col)

    def _apply_fn(self, data):
        if self.input_col is None and self.output_col is None:
            return self.fn(data)
        if self.input_col is None:
            res = self.fn(data)
        elif isinstance(self.input_col, (list, tuple)):
            res = self.fn(*(data[col] for col in self.input_col))
        else:
            res = self.fn(data[self.input_col])
        t_flag = isinstance(data, tuple)
        if t_flag:  # edited as a list, returned as a tuple
            data = list(data)
        if self.output_col is None:
            if isinstance(self.input_col, (list, tuple)):
                data[self.input_col[0]] = res
                for idx in sorted(self.input_col[1:], reverse=True):
                    del data[idx]
            else:
                data[self.input_col] = res
        elif self.output_col == -1:
            data.append(res)
        else:
            data[self.output_col] = res
        return tuple(data) if t_flag else data

    def __iter__(self) -> Iterator[_T_co]:
        for data in self.datapipe:
            yield self._apply_fn(data)

    def __len__(self) -> int:
        if isinstance(self.datapipe, Sized):
            return len(self.datapipe)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")


def _collate_helper(conversion, item):
    """Collate a batch holding one DataFrame column by column: ``conversion[name]`` for the
    columns it names, TorchArrow's default for the others; a namedtuple of the results."""
    if len(item.items) > 1:
        raise RuntimeError("Only supports one DataFrame per batch")
    df = item[0]
    columns_name = df_wrapper.get_columns(df)
    tuple_names: list = []
    tuple_values: list = []
    for name in conversion:
        if name not in columns_name:
            raise RuntimeError("Conversion keys mismatch")
    for name in columns_name:
        if name in conversion:
            if not callable(conversion[name]):
                raise RuntimeError("Collate (DF)DataPipe requires callable as dict values")
            collation_fn = conversion[name]
        else:
            try:
                import torcharrow.pytorch as tap
                collation_fn = tap.rec.Default()
            except Exception as e:
                raise RuntimeError(
                    "unable to import default collation function from the TorchArrow") from e
        tuple_names.append(str(name))
        tuple_values.append(collation_fn(df[name]))
    tpl_cls = namedtuple("CollateResult", tuple_names)
    return tpl_cls(*tuple_values)


@functional_datapipe("collate")
class CollatorIterDataPipe(MapperIterDataPipe):
    """Collates each element (a batch) with ``collate_fn``, else ``conversion`` (a function,
    default ``default_collate``, or a dict of per-column functions for DataFrame batches)
    (functional name: ``collate``)."""

    def __init__(self, datapipe: IterDataPipe,
                 conversion: Callable[..., Any] | dict[str | Any, Callable | Any] | None
                 = default_collate,
                 collate_fn: Callable | None = None):
        if collate_fn is not None:
            super().__init__(datapipe, fn=collate_fn)
        elif callable(conversion):
            super().__init__(datapipe, fn=conversion)
        else:
            super().__init__(datapipe, fn=functools.partial(_collate_helper, conversion))
