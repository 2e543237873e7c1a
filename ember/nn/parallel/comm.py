"""Copies between CUDA devices for single-process parallelism (PyTorch's
``torch/nn/parallel/comm.py``, also ``ember.cuda.comm``): broadcast a tensor to several devices,
sum tensors from several devices onto one, scatter a tensor's chunks over devices, gather chunks
back into one tensor. Each copy is an ordinary device-to-device copy on the current streams (no
NCCL: one process).

As PyTorch's: the tensors given to ``broadcast``/``broadcast_coalesced`` are the first device's
outputs themselves (they must be on it), a chunk ``scatter`` leaves on its own device is a view of
the input, and ``gather`` writes each piece into its slice of a new tensor on the destination
(the current device by default, ``"cpu"`` for the host).
"""
import warnings

import ember

__all__ = ["broadcast", "broadcast_coalesced", "reduce_add", "reduce_add_coalesced", "scatter",
           "gather"]


def _index(device, optional=False, allow_cpu=False):
    return ember.cuda._get_device_index(device, optional=optional, allow_cpu=allow_cpu)


def _on(device_index):
    return ember.device("cuda", device_index)


def broadcast(tensor, devices=None, *, out=None):
    """``tensor`` on each of ``devices`` (the first output is ``tensor``'s copy there: ``tensor``
    itself when it is on that device), or copied into the tensors of ``out``."""
    if (devices is None) == (out is None):
        raise RuntimeError(f"Exactly one of 'devices' and 'out' must be specified, but got "
                           f"devices={devices} and out={out}")
    if devices is not None:
        return tuple(tensor if tensor.device == _on(d) else tensor.to(_on(d))
                     for d in (_index(d) for d in devices))
    for o in out:
        if o.shape != tensor.shape:
            raise RuntimeError(f"Expected all output tensors to have the same shape as the source "
                               f"tensor {list(tensor.shape)}, but output tensor has shape "
                               f"{list(o.shape)}")
    for o in out:
        o.copy_(tensor)
    return tuple(out)


def broadcast_coalesced(tensors, devices, buffer_size=10485760):
    """Each of ``tensors`` (all on ``devices[0]``) on every device: one tuple per device, the
    first being ``tensors`` themselves."""
    devices = [_index(d) for d in devices]
    for t in tensors:
        if t.device != _on(devices[0]):
            raise RuntimeError(f"broadcast_coalesced: all tensors must be on devices[0], but "
                               f"found one on {t.device} (devices[0] is cuda:{devices[0]})")
    return [tuple(tensors) if i == 0 else tuple(t.to(_on(d)) for t in tensors)
            for i, d in enumerate(devices)]


def reduce_add(inputs, destination=None):
    """The sum of ``inputs`` (one per device, same shape) on ``destination`` (the current device
    by default), which must hold one of them."""
    destination = _index(destination, optional=True)
    input_size = inputs[0].size()
    root = None
    for i, t in enumerate(inputs):
        if t.device.type == "cpu":
            raise AssertionError("reduce_add expects all inputs to be on GPUs")
        if t.get_device() == destination:
            root = i
        if t.size() != input_size:
            got = "x".join(str(x) for x in t.size())
            expected = "x".join(str(x) for x in input_size)
            raise ValueError(f"input {i} has invalid size: got {got}, but expected {expected}")
    if root is None:
        raise RuntimeError("reduce_add expects destination to be on the same GPU with one of the "
                           "tensors")
    if len(inputs) == 1:
        return inputs[0]
    others = [t for i, t in enumerate(inputs) if i != root]
    result = inputs[root] + others[0].to(_on(destination), non_blocking=True)
    for t in others[1:]:
        result.add_(t.to(_on(destination), non_blocking=True))
    return result


def reduce_add_coalesced(inputs, destination=None, buffer_size=10485760):
    """``reduce_add`` of each position of ``inputs`` (one sequence of tensors per device)."""
    return tuple(reduce_add(list(at_devices), destination) for at_devices in zip(*inputs))


def scatter(tensor, devices=None, chunk_sizes=None, dim=0, streams=None, *, out=None):
    """``tensor`` split along ``dim`` into one chunk per device (``chunk_sizes``, or as even as
    ``chunk`` makes them), each on its device; or split into the tensors of ``out``."""
    if out is not None:
        if devices is not None or chunk_sizes is not None:
            raise RuntimeError("'devices' and 'chunk_sizes' must not be given with 'out'")
        pieces = tensor.split([o.size(dim) for o in out], dim)
        for o, p in zip(out, pieces):
            o.copy_(p)
        return tuple(out)
    devices = [_index(d) for d in devices]
    if chunk_sizes is not None:
        if len(chunk_sizes) != len(devices):
            raise RuntimeError(f"Expected devices and chunk_sizes to be of same length, but got "
                               f"len(devices) = {len(devices)} and len(chunk_sizes) = "
                               f"{len(chunk_sizes)}")
        pieces = tensor.split(list(chunk_sizes), dim)
    else:
        pieces = tensor.chunk(len(devices), dim)
    result = []
    for i, (d, p) in enumerate(zip(devices, pieces)):
        if streams is not None and streams[i] is not None:
            with ember.cuda.stream(streams[i]):
                result.append(p.to(_on(d), non_blocking=True))
        else:
            result.append(p if p.device == _on(d) else p.to(_on(d), non_blocking=True))
    return tuple(result)


def gather(tensors, dim=0, destination=None, *, out=None):
    """``tensors`` (one per device) concatenated along ``dim`` on ``destination`` (the current
    device by default; ``"cpu"`` for the host), or into ``out``."""
    if out is not None:
        if destination is not None:
            raise RuntimeError("'destination' must not be given with 'out'")
        return ember.cat([t.to(out.device) for t in tensors], dim, out=out)
    if destination == -1:
        warnings.warn('Using -1 to represent CPU tensor is deprecated. Please use a device object '
                      'or string instead, e.g., "cpu".', FutureWarning, stacklevel=2)
    index = _index(destination, optional=True, allow_cpu=True)
    target = ember.device("cpu") if index == -1 else _on(index)
    return ember.cat([t.to(target) for t in tensors], dim)
