"""``ember.__future__`` (PyTorch's ``torch.__future__``): switches for behaviours that PyTorch
plans to make the default, read by ``nn.Module``'s conversions (``_apply``: ``.to()``,
``.float()``, ``.cuda()`` ...) and ``load_state_dict``."""

_overwrite_module_params_on_conversion = False
_swap_module_params_on_conversion = False


def set_overwrite_module_params_on_conversion(value):
    """Whether a module's conversions assign new Parameter objects instead of changing the
    existing ones in place (through ``.data``)."""
    global _overwrite_module_params_on_conversion
    _overwrite_module_params_on_conversion = value


def get_overwrite_module_params_on_conversion():
    """See :func:`set_overwrite_module_params_on_conversion`; defaults to False."""
    return _overwrite_module_params_on_conversion


def set_swap_module_params_on_conversion(value):
    """Whether a module's conversions and ``load_state_dict`` swap each parameter's contents
    with its new value (``ember.utils.swap_tensors``, the parameter objects keep their
    identity) instead of setting ``.data`` / copying; takes precedence over
    :func:`set_overwrite_module_params_on_conversion`. ``load_state_dict`` then swaps in
    ``param.module_load(state_dict[key], assign=assign)``."""
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = value


def get_swap_module_params_on_conversion():
    """See :func:`set_swap_module_params_on_conversion`; defaults to False."""
    return _swap_module_params_on_conversion
