"""Splitting a call's arguments over devices and joining the replicas' results (PyTorch's
``torch/nn/parallel/scatter_gather.py``): tensors are split along ``dim`` (``Scatter``) and
joined along it (``Gather``), through tuples, lists, dicts and named tuples; anything else is
handed to every replica as it is."""
from ._functions import Gather, Scatter

__all__ = ["scatter", "scatter_kwargs", "gather"]


def _is_tensor(obj):
    return hasattr(obj, "_keyset")


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def scatter(inputs, target_gpus, dim=0):
    """``inputs`` as one piece per device: a list of as many pieces as the smallest tensor
    splits into."""
    def scatter_map(obj):
        if _is_tensor(obj):
            return Scatter.apply(target_gpus, None, dim, obj)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in target_gpus]
    return scatter_map(inputs)


def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
    """(per-device positional arguments, per-device keyword arguments), padded to one length."""
    scattered_inputs = scatter(inputs, target_gpus, dim) if inputs else []
    scattered_kwargs = scatter(kwargs, target_gpus, dim) if kwargs else []
    if len(scattered_inputs) < len(scattered_kwargs):
        scattered_inputs.extend(() for _ in range(len(scattered_kwargs) - len(scattered_inputs)))
    elif len(scattered_kwargs) < len(inputs):
        scattered_kwargs.extend({} for _ in range(len(scattered_inputs) - len(scattered_kwargs)))
    return tuple(scattered_inputs), tuple(scattered_kwargs)


def gather(outputs, target_device, dim=0):
    """The replicas' ``outputs`` joined on ``target_device``, keeping their structure."""
    def gather_map(outputs):
        out = outputs[0]
        if _is_tensor(out):
            return Gather.apply(target_device, dim, *outputs)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(len(out) == len(d) for d in outputs):
                raise ValueError("All dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outputs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outputs)))
        return type(out)(map(gather_map, zip(*outputs)))
    return gather_map(outputs)
