"""``torch._utils``: the private helpers programs reach for — flattening a list of tensors into
one buffer and back (gradient bucketing in older DDP/apex code), grouping tensors into chunks,
device indices — and the checkpoint rebuild functions (``ember/serialization.py``'s)."""
from collections import defaultdict

import ember
from ._toplevel import classproperty  # noqa: F401
from ._tensor import _set_obj_state  # noqa: F401
from .serialization import (_rebuild_parameter, _rebuild_parameter_with_state,  # noqa: F401
                            _rebuild_sparse_tensor, _rebuild_tensor_v2, _rebuild_tensor_v3)

__all__ = []


def _flatten_dense_tensors(tensors):
    """One contiguous 1-d tensor holding every element of ``tensors`` (of one dtype) in
    order."""
    tensors = list(tensors)
    if len(tensors) == 1:
        return tensors[0].contiguous().view(-1)
    return ember.cat([t.contiguous().view(-1) for t in tensors], 0)


def _unflatten_dense_tensors(flat, tensors):
    """Views of ``flat`` shaped as each of ``tensors`` (the inverse of
    :func:`_flatten_dense_tensors`)."""
    outputs, offset = [], 0
    for t in tensors:
        n = t.numel()
        outputs.append(flat.narrow(0, offset, n).view_as(t))
        offset += n
    return tuple(outputs)


def _take_tensors(tensors, size_limit):
    """Chunks of ``tensors`` of one type each, of at most ``size_limit`` bytes (a tensor
    larger than that is a chunk of its own), in their order within each type."""
    buf_dict = defaultdict(lambda: [[], 0])
    for tensor in tensors:
        t = tensor.type()
        if tensor.is_sparse:
            indices, values = tensor._indices(), tensor._values()
            size = indices.numel() * indices.element_size() + \
                values.numel() * values.element_size()
        else:
            size = tensor.numel() * tensor.element_size()
        buf_and_size = buf_dict[t]
        if buf_and_size[1] + size > size_limit and buf_and_size[1] > 0:
            yield buf_and_size[0]
            buf_and_size = buf_dict[t] = [[], 0]
        buf_and_size[0].append(tensor)
        buf_and_size[1] += size
    for buf, _ in buf_dict.values():
        if len(buf) > 0:
            yield buf


def _reorder_tensors_as(tensors, ordered_tensors):
    """``tensors`` (in ``ordered_tensors``' order within each type, as ``_take_tensors``
    leaves them) in ``ordered_tensors``' order."""
    type_dict = defaultdict(list)
    for tensor in tensors:
        type_dict[tensor.type()].append(tensor)
    iters = {t: iter(coll) for t, coll in type_dict.items()}
    return tuple(next(iters[tensor.type()]) for tensor in ordered_tensors)


def _get_device_index(device, optional=False, allow_cpu=False):
    """The index of ``device`` (a device, a string or an int); the current device of the
    available accelerator when it names none and ``optional``; -1 for the CPU when
    ``allow_cpu``."""
    if isinstance(device, str):
        device = ember.device(device)
    index = None
    if isinstance(device, ember.device):
        if not allow_cpu and device.type == "cpu":
            raise ValueError(f"Expected a non cpu device, but got: {device}")
        index = -1 if device.type == "cpu" else device.index
    if isinstance(device, int):
        index = device
    if index is None:
        if optional:
            index = ember.cuda.current_device() if ember.cuda.is_available() else -1
        else:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, "
                             f"but got:{device}")
    return index


def _get_available_device_type():
    if ember.cuda.is_available():
        return "cuda"
    for name in ("mps", "xpu", "mtia"):
        if getattr(ember, name).is_available():
            return name
    return None


def _get_device_module(device_type):
    """``ember.<device_type>`` (``ember.cuda`` ...), the module of a device type's runtime."""
    module = getattr(ember, device_type, None)
    if module is None:
        raise RuntimeError(f"Device '{device_type}' does not have a corresponding module "
                           f"registered as 'torch.{device_type}'.")
    return module


def _get_device_attr(get_member):
    """``get_member(<the available accelerator's module>)``, or None without one."""
    device_type = _get_available_device_type()
    return None if device_type is None else get_member(_get_device_module(device_type))


def _get_current_device_index():
    return _get_device_attr(lambda m: m.current_device())


def _get_all_device_indices():
    return _get_device_attr(lambda m: list(range(m.device_count())))


def _get_devices_properties(device_ids):
    return [_get_device_attr(lambda m: m.get_device_properties(i)) for i in device_ids]


def get_current_device_index():
    """The current accelerator's index; -1 with none."""
    return _get_current_device_index() if ember.accelerator.device_count() > 0 else -1


def _element_size(dtype):
    """Bytes per element of ``dtype``."""
    if not isinstance(dtype, ember.dtype):
        raise RuntimeError(f"expected torch.dtype, but got {type(dtype)}")
    return dtype.itemsize


def _handle_complex(tensor):
    """A real view of a complex tensor (``view_as_real``); any other tensor as it is."""
    if isinstance(tensor, ember.nn.UninitializedParameter) or not tensor.is_complex():
        return tensor
    return ember.view_as_real(tensor)


def _import_dotted_name(name):
    """The object a dotted path names: ``"ember.nn.Linear"`` -> the class."""
    import importlib
    module, *attrs = name.split(".")
    obj = importlib.import_module(module)
    for attr in attrs:
        obj = getattr(obj, attr)
    return obj
