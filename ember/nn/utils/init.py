"""``torch.nn.utils.skip_init``: a module built without running its initialization."""
import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """``module_cls(*args, **kwargs)`` with uninitialized parameters and buffers: built on the
    meta device (nothing computed), then given empty memory on ``device`` (default CPU). The
    class must take ``device=`` and compute nothing from its parameters when built."""
    from ..modules.module import Module
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
