"""``torch.ao.quantization.quantize``'s eager-mode dynamic quantization: ``quantize_dynamic``
gives the modules a qconfig names (by type or by qualified name) their qconfig
(``propagate_qconfig_``) and swaps each one that has a dynamic quantized counterpart for it
(``convert``, ``swap_module``: the counterpart's ``from_float``)."""
import copy
import functools
import warnings

import ember
from ... import nn
from .qconfig import default_dynamic_qconfig

__all__ = ["quantize_dynamic", "propagate_qconfig_", "convert", "swap_module",
           "get_default_dynamic_quant_module_mappings"]


DEPRECATION_WARNING = (
    "torch.ao.quantization is deprecated and will be removed in 2.10. \n"
    "For migrations of users: \n"
    "1. Eager mode quantization (torch.ao.quantization.quantize, "
    "torch.ao.quantization.quantize_dynamic), please migrate to use torchao eager mode "
    "quantize_ API instead \n"
    "2. FX graph mode quantization (torch.ao.quantization.quantize_fx.prepare_fx,"
    "torch.ao.quantization.quantize_fx.convert_fx, please migrate to use torchao pt2e "
    "quantization API instead (prepare_pt2e, convert_pt2e) \n"
    "3. pt2e quantization has been migrated to torchao "
    "(https://github.com/pytorch/ao/tree/main/torchao/quantization/pt2e) \n"
    "see https://github.com/pytorch/ao/issues/2259 for more details")


def _deprecated(func):
    """PyTorch's ``typing_extensions.deprecated(DEPRECATION_WARNING)``: a DeprecationWarning at
    each call."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        warnings.warn(DEPRECATION_WARNING, DeprecationWarning, stacklevel=2)
        return func(*args, **kwargs)
    return wrapper


def get_default_dynamic_quant_module_mappings():
    """Float module class -> its dynamic quantized class (ember has Linear's)."""
    from ..nn.quantized import dynamic as nnqd
    return {nn.Linear: nnqd.Linear,
            nn.modules.linear.NonDynamicallyQuantizableLinear: nnqd.Linear}


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None):
    """Set ``qconfig`` on ``module`` and its descendants: a module's type or qualified name in
    ``qconfig_dict`` gives it that qconfig, else it inherits its parent's."""
    qconfig_dict = {} if qconfig_dict is None else qconfig_dict
    _propagate(module, qconfig_dict, None, "")


def _propagate(module, qconfig_dict, parent_qconfig, prefix):
    qconfig = qconfig_dict.get(type(module), parent_qconfig)
    qconfig = qconfig_dict.get(prefix, qconfig)
    qconfig = getattr(module, "qconfig", qconfig)
    module.qconfig = qconfig
    for name, child in module.named_children():
        _propagate(child, qconfig_dict, qconfig, prefix + "." + name if prefix else name)


def swap_module(mod, mapping, custom_module_class_mapping=None):
    """``mod``'s quantized counterpart when it has a qconfig and ``mapping`` names its type,
    else ``mod``; the counterpart keeps ``mod``'s forward hooks."""
    if getattr(mod, "qconfig", None) is None or type(mod) not in mapping:
        return mod
    new_mod = mapping[type(mod)].from_float(mod)
    for hook in mod._forward_pre_hooks.values():
        new_mod.register_forward_pre_hook(hook)
    for hook in mod._forward_hooks.values():
        new_mod.register_forward_hook(hook)
    return new_mod


@_deprecated
def convert(module, mapping=None, inplace=False, remove_qconfig=True,
            is_reference=False, convert_custom_config_dict=None, use_precomputed_fake_quant=False):
    """Swap every module that has a quantized counterpart in ``mapping``."""
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        module = copy.deepcopy(module)
    _convert(module, mapping)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def _convert(module, mapping):
    for name, child in list(module.named_children()):
        _convert(child, mapping)
        module._modules[name] = swap_module(child, mapping)


def _remove_qconfig(module):
    for child in module.children():
        _remove_qconfig(child)
    if hasattr(module, "qconfig"):
        del module.qconfig


@_deprecated
def quantize_dynamic(model, qconfig_spec=None, dtype=ember.qint8, mapping=None, inplace=False):
    """``model`` with its Linear modules (or those ``qconfig_spec`` names) replaced by dynamic
    quantized ones: int8 weights, activations quantized per call (PyTorch's eager API)."""
    if qconfig_spec is None:
        if dtype is not ember.qint8:
            raise NotImplementedError(f"ember's quantize_dynamic supports dtype=torch.qint8 only, "
                                      f"got {dtype}")
        qconfig_spec = {nn.Linear: default_dynamic_qconfig}
    elif isinstance(qconfig_spec, set):
        if dtype is not ember.qint8:
            if dtype in (ember.float16, ember.quint8, ember.quint4x2):
                raise NotImplementedError(f"ember's quantize_dynamic supports dtype=torch.qint8 "
                                          f"only, got {dtype}")
            raise ValueError("Don't know how to quantize with default settings for ", dtype,
                             ". Provide full qconfig please")
        qconfig_spec = dict.fromkeys(qconfig_spec, default_dynamic_qconfig)
    if mapping is None:
        mapping = get_default_dynamic_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    propagate_qconfig_(model, qconfig_spec)
    convert(model, mapping, inplace=True)
    return model
