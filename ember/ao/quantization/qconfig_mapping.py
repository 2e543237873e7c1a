"""``torch.ao.quantization.qconfig_mapping``: ``QConfigMapping``, which qconfig each op of a model
gets (globally, by object type, by module name regex, by module name, by module name, object type
and call index), and PyTorch's default mappings for post-training quantization and
quantization-aware training of a backend. (FX graph mode quantization, which consumes these
mappings, is not part of ember.)"""
from collections import OrderedDict

import ember
from ... import nn
from .fake_quantize import FixedQParamsFakeQuantize, default_weight_fake_quant
from .observer import (default_fixed_qparams_range_0to1_observer,
                       default_fixed_qparams_range_neg1to1_observer,
                       default_placeholder_observer, default_weight_observer)
from .qconfig import (QConfig, default_quint8_weight_qconfig, default_reuse_input_qconfig,
                      default_symmetric_qnnpack_qat_qconfig, default_symmetric_qnnpack_qconfig,
                      get_default_qat_qconfig, get_default_qconfig)

__all__ = ["get_default_qconfig_mapping", "get_default_qat_qconfig_mapping", "QConfigMapping"]

_GLOBAL_DICT_KEY = ""
_OBJECT_TYPE_DICT_KEY = "object_type"
_MODULE_NAME_REGEX_DICT_KEY = "module_name_regex"
_MODULE_NAME_DICT_KEY = "module_name"
_MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY = "module_name_object_type_order"

# ops whose quantized output range is fixed by the function (sigmoid's [0, 1], tanh's [-1, 1])
_FIXED_QPARAMS_OP_TO_OBSERVER = {
    nn.Hardsigmoid: default_fixed_qparams_range_0to1_observer,
    nn.functional.hardsigmoid: default_fixed_qparams_range_0to1_observer,
    "hardsigmoid": default_fixed_qparams_range_0to1_observer,
    "hardsigmoid_": default_fixed_qparams_range_0to1_observer,
    nn.Sigmoid: default_fixed_qparams_range_0to1_observer,
    ember.sigmoid: default_fixed_qparams_range_0to1_observer,
    "sigmoid": default_fixed_qparams_range_0to1_observer,
    "sigmoid_": default_fixed_qparams_range_0to1_observer,
    nn.Softmax: default_fixed_qparams_range_0to1_observer,
    nn.Tanh: default_fixed_qparams_range_neg1to1_observer,
    ember.tanh: default_fixed_qparams_range_neg1to1_observer,
    "tanh": default_fixed_qparams_range_neg1to1_observer,
    "tanh_": default_fixed_qparams_range_neg1to1_observer,
}


def _get_default_qconfig_mapping(is_qat, backend, version):
    """The backend's default qconfig globally, with PyTorch's exceptions: transposed
    convolutions' per-tensor weights on fbgemm/x86, float weights for layer norm, reuse of the
    input's observer for reshape, and the fixed-range ops' fixed parameters."""
    if is_qat:
        qconfig = get_default_qat_qconfig(backend, version)
    else:
        qconfig = get_default_qconfig(backend, version)
    default_weight = default_weight_fake_quant if is_qat else default_weight_observer
    # fbgemm's transposed convolutions take no per-channel weights (pytorch/pytorch#47535)
    if backend in ("fbgemm", "x86"):
        qconfig_transpose = QConfig(activation=qconfig.activation, weight=default_weight)
    else:
        qconfig_transpose = qconfig
    # layer norm's weight stays in float
    qconfig_layernorm = QConfig(activation=qconfig.activation,
                                weight=default_placeholder_observer)
    F = nn.functional
    qconfig_mapping = (
        QConfigMapping()
        .set_global(qconfig)
        .set_object_type("reshape", default_reuse_input_qconfig)
        .set_object_type(nn.ConvTranspose1d, qconfig_transpose)
        .set_object_type(nn.ConvTranspose2d, qconfig_transpose)
        .set_object_type(nn.ConvTranspose3d, qconfig_transpose)
        .set_object_type(F.conv_transpose1d, qconfig_transpose)
        .set_object_type(F.conv_transpose2d, qconfig_transpose)
        .set_object_type(F.conv_transpose3d, qconfig_transpose)
        .set_object_type(F.layer_norm, qconfig_layernorm)
        .set_object_type(nn.LayerNorm, qconfig_layernorm)
        .set_object_type(nn.PReLU, default_quint8_weight_qconfig)
    )
    # one qconfig per fixed-parameters observer, shared by its ops
    fixed_qparams_observer_to_qconfig = {}
    for fixed_qparams_op, observer in _FIXED_QPARAMS_OP_TO_OBSERVER.items():
        if observer in fixed_qparams_observer_to_qconfig:
            fixed_qparams_qconfig = fixed_qparams_observer_to_qconfig[observer]
        else:
            activation = (FixedQParamsFakeQuantize.with_args(observer=observer) if is_qat
                          else observer)
            fixed_qparams_qconfig = QConfig(activation=activation, weight=default_weight)
            fixed_qparams_observer_to_qconfig[observer] = fixed_qparams_qconfig
        qconfig_mapping.set_object_type(fixed_qparams_op, fixed_qparams_qconfig)
    return qconfig_mapping


def get_default_qconfig_mapping(backend="x86", version=0):
    """The default ``QConfigMapping`` for post-training quantization on ``backend`` (x86,
    fbgemm, qnnpack or onednn)."""
    return _get_default_qconfig_mapping(False, backend, version)


def get_default_qat_qconfig_mapping(backend="x86", version=1):
    """The default ``QConfigMapping`` for quantization-aware training on ``backend``."""
    return _get_default_qconfig_mapping(True, backend, version)


def _get_symmetric_qnnpack_qconfig_mapping():
    """The qnnpack mapping with ``default_symmetric_qnnpack_qconfig`` as its default."""
    return _get_default_qconfig_mapping_with_default_qconfig(
        False, "qnnpack", default_symmetric_qnnpack_qconfig)


def _get_symmetric_qnnpack_qat_qconfig_mapping():
    """The qnnpack QAT mapping with ``default_symmetric_qnnpack_qat_qconfig`` as its default."""
    return _get_default_qconfig_mapping_with_default_qconfig(
        True, "qnnpack", default_symmetric_qnnpack_qat_qconfig)


def _get_default_qconfig_mapping_with_default_qconfig(is_qat, backend, default_qconfig):
    """The backend's default mapping with ``default_qconfig`` globally and for every object
    type but the fixed-parameters ops."""
    if is_qat:
        qconfig_mapping = get_default_qat_qconfig_mapping(backend)
    else:
        qconfig_mapping = get_default_qconfig_mapping(backend)
    qconfig_mapping.set_global(default_qconfig)
    for pattern in qconfig_mapping.object_type_qconfigs:
        if pattern not in _FIXED_QPARAMS_OP_TO_OBSERVER:
            qconfig_mapping.set_object_type(pattern, default_qconfig)
    return qconfig_mapping


_QCONFIG_STYLE_ORDER = ["global_qconfig", "object_type_qconfigs", "module_name_regex_qconfigs",
                        "module_name_qconfigs", "module_name_object_type_order_qconfigs"]


class QConfigMapping:
    """Which qconfig each op gets. In increasing priority: ``set_global``, ``set_object_type``
    (a module type, function or method name), ``set_module_name_regex`` (the first registered
    regex that matches wins), ``set_module_name``, ``set_module_name_object_type_order``. Each
    setter returns the mapping, so calls chain; setting a key again replaces its qconfig and
    keeps its place."""

    def __init__(self):
        self.global_qconfig = None
        self.object_type_qconfigs = OrderedDict()
        self.module_name_regex_qconfigs = OrderedDict()
        self.module_name_qconfigs = OrderedDict()
        self.module_name_object_type_order_qconfigs = OrderedDict()

    def set_global(self, global_qconfig):
        self.global_qconfig = global_qconfig
        return self

    def set_object_type(self, object_type, qconfig):
        self.object_type_qconfigs[object_type] = qconfig
        return self

    def set_module_name_regex(self, module_name_regex, qconfig):
        self.module_name_regex_qconfigs[module_name_regex] = qconfig
        return self

    def set_module_name(self, module_name, qconfig):
        self.module_name_qconfigs[module_name] = qconfig
        return self

    def set_module_name_object_type_order(self, module_name, object_type, index, qconfig):
        self.module_name_object_type_order_qconfigs[(module_name, object_type, index)] = qconfig
        return self

    def __repr__(self):
        output = self.__class__.__name__ + " ("
        for style_name in _QCONFIG_STYLE_ORDER:
            output += f"\n {style_name}"
            qconfigs = getattr(self, style_name)
            if isinstance(qconfigs, OrderedDict) and len(qconfigs) > 0:
                for key, qconfig in qconfigs.items():
                    output += f"\n  {key}: {qconfig}"
            else:
                output += f"\n  {qconfigs}"
        return output + "\n)"

    def to_dict(self):
        """The mapping as the qconfig_dict of older PyTorch: keys "" (global), "object_type",
        "module_name_regex", "module_name" and "module_name_object_type_order", each style's
        entries as a list of tuples."""
        return {
            _GLOBAL_DICT_KEY: self.global_qconfig,
            _OBJECT_TYPE_DICT_KEY: list(self.object_type_qconfigs.items()),
            _MODULE_NAME_REGEX_DICT_KEY: list(self.module_name_regex_qconfigs.items()),
            _MODULE_NAME_DICT_KEY: list(self.module_name_qconfigs.items()),
            _MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY: [
                (*k, v) for k, v in self.module_name_object_type_order_qconfigs.items()],
        }

    @classmethod
    def from_dict(cls, qconfig_dict):
        """A mapping from a qconfig_dict (``to_dict``'s keys, all optional)."""
        conf = cls()
        if _GLOBAL_DICT_KEY in qconfig_dict:
            conf.set_global(qconfig_dict[_GLOBAL_DICT_KEY])
        for object_type, qconfig in qconfig_dict.get(_OBJECT_TYPE_DICT_KEY, []):
            conf.set_object_type(object_type, qconfig)
        for module_name_regex, qconfig in qconfig_dict.get(_MODULE_NAME_REGEX_DICT_KEY, []):
            conf.set_module_name_regex(module_name_regex, qconfig)
        for module_name, qconfig in qconfig_dict.get(_MODULE_NAME_DICT_KEY, []):
            conf.set_module_name(module_name, qconfig)
        for module_name, object_type, index, qconfig in qconfig_dict.get(
                _MODULE_NAME_OBJECT_TYPE_ORDER_DICT_KEY, []):
            conf.set_module_name_object_type_order(module_name, object_type, index, qconfig)
        return conf
