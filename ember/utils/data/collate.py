"""``default_collate`` / ``default_convert``: PyTorch's rules for turning a list of samples into
a batch (tensors stacked, numbers become tensors, containers collated element-wise)."""
import collections.abc
import copy
import re

import numpy as np

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

np_str_obj_array_pattern = re.compile(r"[SaUO]")
default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, "
                                  "numbers, dicts or lists; found {}")


def _is_tensor(x):
    return hasattr(x, "_keyset")


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(x, "_fields")


def default_convert(data):
    """Numpy arrays become tensors, inside any container (no batch dimension is added)."""
    from ... import as_tensor
    elem_type = type(data)
    if _is_tensor(data):
        return data
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        if isinstance(data, np.ndarray) and np_str_obj_array_pattern.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if _is_namedtuple(data):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate_tensor_fn(batch, *, collate_fn_map=None):
    from ... import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr, stack
    elem = batch[0]
    if elem.is_nested:
        raise RuntimeError("Batches of nested tensors are not currently supported by the default "
                           "collate_fn; please provide a custom collate_fn to handle them "
                           "appropriately.")
    if elem.layout in (sparse_coo, sparse_csr, sparse_bsr, sparse_csc, sparse_bsc):
        raise RuntimeError("Batches of sparse tensors are not currently supported by the default "
                           "collate_fn; please provide a custom collate_fn to handle them "
                           "appropriately.")
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    from ... import as_tensor
    if np_str_obj_array_pattern.search(batch[0].dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    from ... import as_tensor
    return as_tensor(np.array(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    from ... import float64, tensor
    return tensor(batch, dtype=float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    from ... import tensor
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


def collate(batch, *, collate_fn_map=None):
    """The general collate function: the element type's function in ``collate_fn_map`` (exact
    type first, then the first entry it is an instance of), else containers collated
    element-wise."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch],
                                           collate_fn_map=collate_fn_map) for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch],
                                           collate_fn_map=collate_fn_map) for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                    for key in elem}
    if _is_namedtuple(elem):
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map)
                           for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map)
                              for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def _default_collate_fn_map():
    from ..._tensor import Tensor
    return {Tensor: collate_tensor_fn,
            np.ndarray: collate_numpy_array_fn,  # (np.memmap too)
            (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,  # (not string scalars)
            float: collate_float_fn, int: collate_int_fn, str: collate_str_fn,
            bytes: collate_str_fn}


# the types ``default_collate`` knows; programs and libraries add their own types here
default_collate_fn_map = _default_collate_fn_map()


def default_collate(batch):
    """Collate a list of samples into a batch with PyTorch's rules."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
