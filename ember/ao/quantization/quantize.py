"""``torch.ao.quantization.quantize``, eager mode: ``propagate_qconfig_`` gives the modules a
qconfig names (by type or by qualified name) their qconfig; ``convert``/``swap_module`` swap
each one with a counterpart in a mapping for it (its ``from_float``); ``prepare`` attaches an
observer or fake quantizer (``activation_post_process``, run by a forward hook) to the leaves
that will be quantized; ``prepare_qat`` swaps in the QAT modules, then prepares;
``quantize``, ``quantize_dynamic`` and ``quantize_qat`` run the whole flow."""
import copy
import functools
import inspect
import warnings

import ember
from ... import nn
from ...nn.utils.parametrize import type_before_parametrizations
from ..nn.intrinsic import _FusedModule
from .fake_quantize import FakeQuantizeBase
from .observer import ObserverBase
from .qconfig import (_activation_is_memoryless, _assert_valid_qconfig,
                      default_dynamic_qconfig)
from .quantization_mappings import (_get_special_act_post_process,
                                    _has_special_act_post_process,
                                    get_default_dynamic_quant_module_mappings,
                                    get_default_qat_module_mappings,
                                    get_default_qconfig_propagation_list,
                                    get_default_static_quant_module_mappings)
from .stubs import DeQuantStub, QuantWrapper

__all__ = ["quantize", "quantize_dynamic", "propagate_qconfig_", "convert", "swap_module",
           "prepare", "prepare_qat", "quantize_qat", "add_quant_dequant",
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


def propagate_qconfig_(module, qconfig_dict=None, prepare_custom_config_dict=None):
    """Set ``qconfig`` on ``module`` and its descendants: a module's type or qualified name in
    ``qconfig_dict`` gives it that qconfig, else it inherits its parent's."""
    qconfig_dict = {} if qconfig_dict is None else qconfig_dict
    _propagate(module, qconfig_dict, None, "")


def _propagate(module, qconfig_dict, parent_qconfig, prefix):
    qconfig = qconfig_dict.get(type(module), parent_qconfig)
    qconfig = qconfig_dict.get(prefix, qconfig)
    qconfig = getattr(module, "qconfig", qconfig)
    _assert_valid_qconfig(qconfig, module)
    module.qconfig = qconfig
    for name, child in module.named_children():
        _propagate(child, qconfig_dict, qconfig, prefix + "." + name if prefix else name)


def swap_module(mod, mapping, custom_module_class_mapping=None,
                use_precomputed_fake_quant=False):
    """``mod``'s counterpart when it has a qconfig and ``mapping`` names its type, else
    ``mod``; the counterpart keeps ``mod``'s hooks (not the observer's) and its device."""
    if getattr(mod, "qconfig", None) is None:
        return mod
    custom = custom_module_class_mapping or {}
    mod_type = type_before_parametrizations(mod)
    if mod_type in custom:
        new_mod = custom[mod_type].from_observed(mod)
    elif mod_type in mapping:
        qmod = mapping[mod_type]
        if "use_precomputed_fake_quant" in inspect.signature(qmod.from_float).parameters:
            new_mod = qmod.from_float(mod, use_precomputed_fake_quant=use_precomputed_fake_quant)
        else:
            new_mod = qmod.from_float(mod)
    else:
        return mod
    # (pre-hooks stay: they will see quantized inputs)
    for hook in mod._forward_pre_hooks.values():
        new_mod.register_forward_pre_hook(hook)
    for hook in mod._forward_hooks.values():
        if hook is not _observer_forward_hook:
            new_mod.register_forward_hook(hook)
    devices = _get_unique_devices_(mod)
    if len(devices) > 1:
        raise AssertionError(f"swap_module only works with cpu or single-device CUDA modules, "
                             f"but got devices {devices}")
    if devices:
        new_mod.to(next(iter(devices)))
    return new_mod


@_deprecated
def convert(module, mapping=None, inplace=False, remove_qconfig=True,
            is_reference=False, convert_custom_config_dict=None, use_precomputed_fake_quant=False):
    """Swap every module that has a counterpart in ``mapping`` (default: the static quantized
    ones) for it, made by its ``from_float`` from the observed (or QAT) module."""
    if is_reference:
        raise NotImplementedError("ember has no reference quantized modules (is_reference=True)")
    if mapping is None:
        mapping = get_default_static_quant_module_mappings()
    if not inplace:
        module = copy.deepcopy(module)
    custom = (convert_custom_config_dict or {}).get("observed_to_quantized_custom_module_class",
                                                    {})
    _convert(module, mapping, custom, use_precomputed_fake_quant)
    if remove_qconfig:
        _remove_qconfig(module)
    return module


def _convert(module, mapping, custom, use_precomputed_fake_quant):
    # (a fused module is swapped whole: its parts are not converted on their own)
    reassign = {}
    for name, child in module.named_children():
        if not isinstance(child, _FusedModule) and \
                type_before_parametrizations(child) not in custom:
            _convert(child, mapping, custom, use_precomputed_fake_quant)
        reassign[name] = swap_module(child, mapping, custom, use_precomputed_fake_quant)
    for name, child in reassign.items():
        module._modules[name] = child


def _is_activation_post_process(module):
    return isinstance(module, (ObserverBase, FakeQuantizeBase))


def _remove_activation_post_process(module):
    if hasattr(module, "activation_post_process") and \
            _is_activation_post_process(module.activation_post_process):
        delattr(module, "activation_post_process")
    for hooks, hook in ((module._forward_pre_hooks, _observer_forward_pre_hook),
                        (module._forward_hooks, _observer_forward_hook)):
        for handle_id in [k for k, fn in hooks.items() if fn is hook]:
            hooks.pop(handle_id)


def _remove_qconfig(module):
    for child in module.children():
        _remove_qconfig(child)
    if hasattr(module, "qconfig"):
        del module.qconfig
    _remove_activation_post_process(module)


def _observer_forward_hook(self, input, output):
    """Observe (and fake-quantize) a module's output."""
    return self.activation_post_process(output)


def _observer_forward_pre_hook(self, input):
    """Observe a module's input (memoryless activation observers)."""
    return self.activation_post_process(input[0])


def _register_activation_post_process_hook(module, pre_hook=False):
    if not hasattr(module, "activation_post_process"):
        raise AssertionError("Expect activation_post_process attribute already attached to the "
                             "module")
    if pre_hook:
        module.register_forward_pre_hook(_observer_forward_pre_hook, prepend=True)
    else:
        module.register_forward_hook(_observer_forward_hook, prepend=True)


def _get_unique_devices_(module):
    return ({p.device for p in module.parameters() if p.device.type != "meta"}
            | {b.device for b in module.buffers() if b.device.type != "meta"})


def _add_observer_(module, qconfig_propagation_list=None, non_leaf_module_list=None,
                   device=None, custom_module_class_mapping=None):
    """Attach ``qconfig.activation()`` as ``activation_post_process`` (with its hook) to each
    leaf of ``qconfig_propagation_list`` that has a qconfig, to fused and ``non_leaf`` modules
    as a whole, and the fixed-parameter fake quantizer to sigmoid-like activations."""
    if qconfig_propagation_list is None:
        qconfig_propagation_list = get_default_qconfig_propagation_list()
    custom_module_class_mapping = custom_module_class_mapping or {}
    if device is None:
        devices = _get_unique_devices_(module)
        if len(devices) > 1:
            raise AssertionError(f"_add_observer_ only works with cpu or single-device CUDA "
                                 f"modules, but got devices {devices}")
        device = next(iter(devices)) if devices else None

    def needs_observation(m):
        return getattr(m, "qconfig", None) is not None

    def insert_activation_post_process(m, special_act_post_process=None):
        if needs_observation(m) and not isinstance(m, DeQuantStub):
            activation = (m.qconfig.activation() if special_act_post_process is None
                          else special_act_post_process())
            if device is not None:
                activation.to(device)
            m.add_module("activation_post_process", activation)
            _register_activation_post_process_hook(
                m, pre_hook=_activation_is_memoryless(m.qconfig))

    for name, child in module.named_children():
        child_type = type_before_parametrizations(child)
        if child_type is nn.Dropout:
            continue
        if isinstance(child, _FusedModule) or \
                (non_leaf_module_list is not None and child_type in non_leaf_module_list):
            if needs_observation(child):
                insert_activation_post_process(child)
        elif _has_special_act_post_process(child):
            insert_activation_post_process(child, _get_special_act_post_process(child))
        elif needs_observation(child) and child_type in custom_module_class_mapping:
            observed_child = custom_module_class_mapping[child_type].from_float(child)
            setattr(module, name, observed_child)
            insert_activation_post_process(observed_child)
        else:
            _add_observer_(child, qconfig_propagation_list, non_leaf_module_list, device,
                           custom_module_class_mapping)
    module_type = type_before_parametrizations(module)
    if not isinstance(module, nn.Sequential) and module_type in qconfig_propagation_list and \
            (not list(module.children()) or hasattr(module, "weight_fake_quant")):
        insert_activation_post_process(module)


def add_quant_dequant(module):
    """Wrap each leaf that has a qconfig in a QuantWrapper."""
    if not list(module.children()) and getattr(module, "qconfig", None):
        return QuantWrapper(module)
    for name, child in module.named_children():
        module._modules[name] = add_quant_dequant(child)
    return module


@_deprecated
def prepare(model, inplace=False, allow_list=None, observer_non_leaf_module_list=None,
            prepare_custom_config_dict=None):
    """Propagate the qconfigs and attach their activation observers (calibration or
    quantization-aware training then runs the model)."""
    custom = (prepare_custom_config_dict or {}).get("float_to_observed_custom_module_class", {})
    if not inplace:
        model = copy.deepcopy(model)
    qconfig_propagation_list = allow_list
    if allow_list is None:
        qconfig_propagation_list = get_default_qconfig_propagation_list()
    propagate_qconfig_(model, qconfig_dict=None)
    if not any(getattr(m, "qconfig", None) for m in model.modules()):
        warnings.warn("None of the submodule got qconfig applied. Make sure you passed correct "
                      "configuration through `qconfig_dict` or by assigning the `.qconfig` "
                      "attribute directly on submodules", stacklevel=2)
    _add_observer_(model, qconfig_propagation_list, observer_non_leaf_module_list,
                   custom_module_class_mapping=custom)
    return model


@_deprecated
def prepare_qat(model, mapping=None, inplace=False):
    """Swap the modules with QAT counterparts (``mapping``, default
    ``get_default_qat_module_mappings()``: their weights fake-quantized) and attach the
    activation fake quantizers; the model then trains as usual."""
    if not model.training:
        raise AssertionError("prepare_qat only works on models in training mode")
    if mapping is None:
        mapping = get_default_qat_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    propagate_qconfig_(model, qconfig_dict=None)
    convert(model, mapping=mapping, inplace=True, remove_qconfig=False)
    prepare(model, observer_non_leaf_module_list=set(mapping.values()), inplace=True)
    return model


@_deprecated
def quantize(model, run_fn, run_args, mapping=None, inplace=False):
    """Post-training static quantization: ``prepare``, ``run_fn(model, *run_args)`` (the
    calibration), then ``convert`` to the static quantized modules."""
    if mapping is None:
        mapping = get_default_static_quant_module_mappings()
    if not inplace:
        model = copy.deepcopy(model)
    model.eval()
    prepare(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, mapping, inplace=True)
    return model


@_deprecated
def quantize_qat(model, run_fn, run_args, inplace=False):
    """``prepare_qat``, ``run_fn(model, *run_args)`` (the training), then ``convert``."""
    if not inplace:
        model = copy.deepcopy(model)
    model.train()
    prepare_qat(model, inplace=True)
    run_fn(model, *run_args)
    convert(model, inplace=True)
    return model


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
