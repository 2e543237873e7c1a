"""``ember.utils.backcompat``, as ``torch.utils.backcompat``: the switches of the warnings that
old releases gave where broadcasting or ``keepdim``'s default changed a result. No op of
PyTorch's (or ember's) reads them any more; they are kept, off by default, for code that sets
them."""

_flags = {"broadcast": False, "keepdim": False}


def _setter(name):
    def set_enabled(value):
        if not isinstance(value, bool):
            raise RuntimeError(f"set_backcompat_{name}_warn expects a bool, but got "
                               f"{type(value).__name__}")
        _flags[name] = value
    return set_enabled


def _getter(name):
    return lambda: _flags[name]


class Warning:  # noqa: A001  (PyTorch's name)
    """One switch: ``enabled`` reads and sets it."""

    def __init__(self, setter, getter):
        self.setter = setter
        self.getter = getter

    def set_enabled(self, value):
        self.setter(value)

    def get_enabled(self):
        return self.getter()

    enabled = property(get_enabled, set_enabled)


broadcast_warning = Warning(_setter("broadcast"), _getter("broadcast"))
keepdim_warning = Warning(_setter("keepdim"), _getter("keepdim"))
