"""The helpers PyTorch's data-parallel wrappers share (``torch/distributed/utils.py``): walking
nested inputs (moving, casting, packing keyword arguments), checking and synchronising module
states across ranks, freeing and refilling a tensor's storage, and renaming state-dict keys.
DistributedDataParallel, both FSDPs and the checkpoint wrapper use these; this module is their
one implementation."""
import dataclasses
import traceback
from collections import OrderedDict

import ember
import ember.distributed as dist

__all__ = []


def _pack_kwargs(*args, **kwargs):
    """``(args + kwarg values, kwarg keys)``: keyword arguments as trailing positional ones
    (for a function that takes positional inputs only, as a reentrant checkpoint);
    :func:`_unpack_kwargs` undoes it."""
    kwarg_keys = []
    flat_args = list(args)
    for k, v in kwargs.items():
        kwarg_keys.append(k)
        flat_args.append(v)
    return tuple(flat_args), tuple(kwarg_keys)


def _unpack_kwargs(flat_args, kwarg_keys):
    """See :func:`_pack_kwargs`."""
    if len(kwarg_keys) > len(flat_args):
        raise AssertionError(f"too many keys {len(kwarg_keys)} vs. {len(flat_args)}")
    if len(kwarg_keys) == 0:
        return flat_args, {}
    args = flat_args[:-len(kwarg_keys)]
    kwargs = dict(zip(kwarg_keys, flat_args[-len(kwarg_keys):]))
    return args, kwargs


def _cast_forward_inputs(dtype, *args, **kwargs):
    """``(args, kwargs)`` with their floating-point tensors cast to ``dtype`` (None: as they
    are); ``requires_grad`` is kept, the cast being recorded by autograd."""
    if dtype is None:
        return args, kwargs

    def cast_fn(x):
        if not ember.is_floating_point(x) or x.dtype == dtype:
            return x
        return x.to(dtype)

    return _apply_to_tensors(cast_fn, args), _apply_to_tensors(cast_fn, kwargs)


def _is_namedtuple(obj):
    from ..nn.parallel.scatter_gather import _is_namedtuple as is_namedtuple
    return is_namedtuple(obj)


_streams = {}


def _get_stream(device):
    """The background stream of ``device`` that host-to-device input copies run on (one per
    device, made on first use, as ``torch.nn.parallel._functions._get_stream``)."""
    if device.type == "cpu":
        return None
    if device not in _streams:
        _streams[device] = ember.cuda.Stream(device)
    return _streams[device]


def _recursive_to(inputs, target_device, use_side_stream_for_tensor_copies):
    """``inputs`` moved to ``target_device`` through tuples, lists, dicts and named tuples, as a
    one-element list (the form DDP's scatter gives for one device)."""
    from ..nn.utils.rnn import PackedSequence

    def to_map(obj):
        if isinstance(obj, (ember.Tensor, PackedSequence)):
            device = obj.data.device if isinstance(obj, PackedSequence) else obj.device
            if device == target_device:
                return (obj,)
            # (a copy to the host has no side stream: PyTorch fails there, ember copies)
            if not use_side_stream_for_tensor_copies or "cpu" in (device.type,
                                                                  target_device.type):
                return (obj.to(target_device),)
            # the copy runs on a side stream; the current stream waits for it and the
            # result's memory is not reused before the current stream's work on it
            stream = _get_stream(target_device)
            with ember.cuda.stream(stream):
                output = obj.to(target_device)
            with ember.accelerator.device_index(target_device.index):
                current_stream = ember.accelerator.current_stream()
                current_stream.wait_stream(stream)
                if isinstance(obj, PackedSequence):
                    output.data.record_stream(current_stream)
                else:
                    output.record_stream(current_stream)
            return (output,)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(to_map, obj))]
        if isinstance(obj, tuple) and len(obj) > 0:
            return list(zip(*map(to_map, obj)))
        if isinstance(obj, list) and len(obj) > 0:
            return [list(i) for i in zip(*map(to_map, obj))]
        if isinstance(obj, dict) and len(obj) > 0:
            return [type(obj)(i) for i in zip(*map(to_map, obj.items()))]
        return [obj]

    try:
        res = to_map(inputs)
    finally:
        to_map = None  # the closure refers to itself: break the cycle
    return res


def _p_assert(cond, s, raise_assertion_error=True):
    """``assert cond, s`` that also prints ``s`` and the stack: an assertion raised inside
    backward may otherwise be swallowed."""
    if not cond:
        print(s)
        traceback.print_stack()
        if raise_assertion_error:
            raise AssertionError(s)


def _storage_numel(tensor):
    return tensor.untyped_storage().nbytes() // tensor.element_size()


def _alloc_storage(tensor, size):
    """Give ``tensor``'s freed storage (see :func:`_free_storage`) room for ``size`` elements
    again; views of it see the new memory."""
    with ember.no_grad():
        if _storage_numel(tensor) != size.numel():
            _p_assert(_storage_numel(tensor) == 0,
                      "Tensor storage should have been resized to be 0 but got PLACEHOLDER")
            tensor.untyped_storage().resize_(size.numel() * tensor.element_size())


def _free_storage(tensor):
    """Free ``tensor``'s storage (resize it to 0 bytes), keeping the tensor and its views."""
    with ember.no_grad():
        if _storage_numel(tensor) != 0:
            _p_assert(tensor.storage_offset() == 0,
                      f"Freeing a tensor's storage is unsafe when it is not the sole occupant\n"
                      f"storage offset: {tensor.storage_offset()}\n"
                      f"storage size: {_storage_numel(tensor)}\n"
                      f"tensor shape: {tensor.shape}")
            tensor.untyped_storage().resize_(0)


def _apply_to_tensors(fn, container):
    """``container`` with ``fn`` applied to each tensor in it, through dataclasses, (ordered)
    dicts, named tuples, lists, tuples and sets; a PackedSequence's data is visited and the
    sequence itself returned."""
    from ..nn.utils.rnn import PackedSequence

    def apply(x):
        if isinstance(x, ember.Tensor):
            return fn(x)
        if hasattr(x, "__dataclass_fields__"):
            dc = dataclasses.replace(x)
            changes = {f.name: apply(getattr(dc, f.name)) for f in dataclasses.fields(dc)}
            return dataclasses.replace(dc, **changes)
        if isinstance(x, OrderedDict):
            od = x.__class__()
            for key, value in x.items():
                od[key] = apply(value)
            return od
        if isinstance(x, PackedSequence):
            apply(x.data)
            return x
        if isinstance(x, dict):
            return {key: apply(value) for key, value in x.items()}
        if _is_namedtuple(x):
            return type(x)(*(apply(el) for el in x))
        if isinstance(x, (list, tuple, set)):
            return type(x)(apply(el) for el in x)
        return x

    return apply(container)


def _to_kwargs(inputs, kwargs, target_device, use_side_stream_for_tensor_copies):
    """``(inputs, kwargs)`` moved to ``target_device``, each wrapped in a one-element tuple
    (the form of a scatter over one device); an empty side is padded to match the other."""
    moved_inputs = (_recursive_to(inputs, target_device, use_side_stream_for_tensor_copies)
                    if inputs else [])
    moved_kwargs = (_recursive_to(kwargs, target_device, use_side_stream_for_tensor_copies)
                    if kwargs else [])
    if len(moved_inputs) < len(moved_kwargs):
        moved_inputs.extend([() for _ in range(len(moved_kwargs) - len(inputs))])
    elif len(moved_kwargs) < len(moved_inputs):
        moved_kwargs.extend([{} for _ in range(len(moved_inputs) - len(moved_kwargs))])
    return tuple(moved_inputs), tuple(moved_kwargs)


def _verify_param_shape_across_processes(process_group, tensors, logger=None):
    """Every rank holds as many tensors as the others, with rank 0's sizes and strides, or
    PyTorch's error (``dist._verify_params_across_processes``)."""
    return dist._verify_params_across_processes(process_group, tensors, logger)


def _sync_module_states(module, process_group, broadcast_bucket_size, src,
                        params_and_buffers_to_ignore, broadcast_buffers=True):
    """Rank ``src``'s parameters (and buffers, with ``broadcast_buffers``) of ``module`` on
    every rank, except those named in ``params_and_buffers_to_ignore``; the shapes are assumed
    to agree (see :func:`_verify_param_shape_across_processes`)."""
    module_states = [param.detach() for name, param in module.named_parameters()
                     if name not in params_and_buffers_to_ignore]
    if broadcast_buffers:
        module_states.extend(buffer.detach() for name, buffer in module.named_buffers()
                             if name not in params_and_buffers_to_ignore)
    _sync_params_and_buffers(process_group, module_states, broadcast_bucket_size, src)


def _sync_params_and_buffers(process_group, module_states, broadcast_bucket_size, src):
    """Rank ``src``'s values of ``module_states`` on every rank, in coalesced broadcasts."""
    if len(module_states) > 0:
        dist._broadcast_coalesced(process_group, module_states, broadcast_bucket_size, src)


def _replace_by_prefix(state_dict, old_prefix, new_prefix):
    """Rename the keys of ``state_dict`` that start with ``old_prefix`` to start with
    ``new_prefix`` instead, in place (renamed keys move to the end)."""
    if old_prefix == new_prefix:
        raise ValueError("old_prefix and new_prefix must be distinct")
    for key in list(state_dict.keys()):
        if not key.startswith(old_prefix):
            continue
        new_key = new_prefix + key[len(old_prefix):]
        state_dict[new_key] = state_dict[key]
        del state_dict[key]


def _data_ptr_allocated(tensor):
    return tensor.untyped_storage().data_ptr() > 0


def _get_root_modules(modules):
    """The modules of ``modules`` that are not a submodule of another one in the list."""
    module_to_modules = {module: set(module.modules()) for module in modules}
    root_modules = []
    for candidate in modules:
        if not any(candidate is not module and candidate in submodules
                   for module, submodules in module_to_modules.items()):
            root_modules.append(candidate)
    return root_modules
