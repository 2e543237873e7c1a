"""``torch.ao.quantization.quantization_mappings``: which module class each eager-mode step swaps
a float module for (QAT: ``prepare_qat``; static: ``convert``; dynamic: ``quantize_dynamic``),
which modules a
qconfig propagates to and gets an observer on, and the activations whose outputs have fixed
quantization parameters in training."""
import copy

from ... import nn
from ...nn.utils.parametrize import type_before_parametrizations
from ..nn import intrinsic as nni
from ..nn import qat as nnqat
from ..nn import quantized as nnq
from ..nn.intrinsic import qat as nniqat
from ..nn.intrinsic import quantized as nniq
from .stubs import DeQuantStub, QuantStub
from .fake_quantize import (default_fixed_qparams_range_0to1_fake_quant,
                            default_fixed_qparams_range_neg1to1_fake_quant)

__all__ = ["DEFAULT_STATIC_QUANT_MODULE_MAPPINGS", "DEFAULT_QAT_MODULE_MAPPINGS",
           "DEFAULT_MODULE_TO_ACT_POST_PROCESS", "get_default_static_quant_module_mappings",
           "get_static_quant_module_class", "get_default_qat_module_mappings",
           "get_default_dynamic_quant_module_mappings",
           "get_default_qconfig_propagation_list", "no_observer_set"]

DEFAULT_QAT_MODULE_MAPPINGS = {
    nn.Conv2d: nnqat.Conv2d,
    nn.Conv3d: nnqat.Conv3d,
    nn.Linear: nnqat.Linear,
    nn.modules.linear.NonDynamicallyQuantizableLinear: nnqat.Linear,
    nni.ConvBn1d: nniqat.ConvBn1d,
    nni.ConvBn2d: nniqat.ConvBn2d,
    nni.ConvBn3d: nniqat.ConvBn3d,
    nni.ConvBnReLU1d: nniqat.ConvBnReLU1d,
    nni.ConvBnReLU2d: nniqat.ConvBnReLU2d,
    nni.ConvBnReLU3d: nniqat.ConvBnReLU3d,
    nni.ConvReLU2d: nniqat.ConvReLU2d,
    nni.ConvReLU3d: nniqat.ConvReLU3d,
    nni.LinearReLU: nniqat.LinearReLU,
}

# PyTorch's table, for the static quantized modules ember has (the stubs, Linear, LinearReLU,
# the convolutions, transposed or not, and their ReLU fusions)
DEFAULT_STATIC_QUANT_MODULE_MAPPINGS = {
    QuantStub: nnq.Quantize,
    DeQuantStub: nnq.DeQuantize,
    nn.Conv1d: nnq.Conv1d,
    nn.Conv2d: nnq.Conv2d,
    nn.Conv3d: nnq.Conv3d,
    nn.ConvTranspose1d: nnq.ConvTranspose1d,
    nn.ConvTranspose2d: nnq.ConvTranspose2d,
    nn.ConvTranspose3d: nnq.ConvTranspose3d,
    nni.ConvReLU1d: nniq.ConvReLU1d,
    nni.ConvReLU2d: nniq.ConvReLU2d,
    nni.ConvReLU3d: nniq.ConvReLU3d,
    nniqat.ConvBn1d: nnq.Conv1d,
    nniqat.ConvBn2d: nnq.Conv2d,
    nniqat.ConvBn3d: nnq.Conv3d,
    nniqat.ConvBnReLU1d: nniq.ConvReLU1d,
    nniqat.ConvBnReLU2d: nniq.ConvReLU2d,
    nniqat.ConvBnReLU3d: nniq.ConvReLU3d,
    nniqat.ConvReLU2d: nniq.ConvReLU2d,
    nniqat.ConvReLU3d: nniq.ConvReLU3d,
    nnqat.Conv2d: nnq.Conv2d,
    nnqat.Conv3d: nnq.Conv3d,
    nn.modules.linear.NonDynamicallyQuantizableLinear: nnq.Linear,
    nn.Linear: nnq.Linear,
    nni.LinearReLU: nniq.LinearReLU,
    nniqat.LinearReLU: nniq.LinearReLU,
    nnqat.Linear: nnq.Linear,
}

# the float modules PyTorch's static quantization maps (ember has quantized modules for the
# table's above only, but the qconfig propagates to all and prepare observes their outputs)
_STATIC_QUANT_FLOAT_MODULES = {
    nn.BatchNorm2d, nn.BatchNorm3d, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d,
    nn.ConvTranspose2d, nn.ConvTranspose3d, nn.Dropout, nn.ELU, nn.Embedding, nn.EmbeddingBag,
    nn.GroupNorm, nn.Hardswish, nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d,
    nn.LayerNorm, nn.LeakyReLU, nn.modules.linear.NonDynamicallyQuantizableLinear, nn.Linear,
    nn.ReLU6, nn.PReLU, nni.BNReLU2d, nni.BNReLU3d, nni.ConvReLU1d, nni.ConvReLU2d,
    nni.ConvReLU3d, nni.LinearReLU, nni.ConvBn1d, nni.ConvBn2d, nni.ConvBn3d, nni.ConvBnReLU1d,
    nni.ConvBnReLU2d, nni.ConvBnReLU3d, nni.LinearBn1d, nniqat.ConvBn1d, nniqat.ConvBn2d,
    nniqat.ConvBn3d, nniqat.ConvBnReLU1d, nniqat.ConvBnReLU2d, nniqat.ConvBnReLU3d,
    nniqat.ConvReLU2d, nniqat.ConvReLU3d, nniqat.LinearReLU, nnqat.Linear, nnqat.Conv2d,
    nnqat.Conv3d,
}
_DYNAMIC_QUANT_FLOAT_MODULES = {nn.GRUCell, nn.Linear,
                                nn.modules.linear.NonDynamicallyQuantizableLinear, nn.LSTMCell,
                                nn.RNNCell, nn.LSTM, nn.GRU}

DEFAULT_MODULE_TO_ACT_POST_PROCESS = {
    nn.Hardsigmoid: default_fixed_qparams_range_0to1_fake_quant,
    nn.Sigmoid: default_fixed_qparams_range_0to1_fake_quant,
    nn.Softmax: default_fixed_qparams_range_0to1_fake_quant,
    nn.Tanh: default_fixed_qparams_range_neg1to1_fake_quant,
}


def get_default_static_quant_module_mappings():
    """Float (observed or QAT) module class -> its static quantized class."""
    return copy.deepcopy(DEFAULT_STATIC_QUANT_MODULE_MAPPINGS)


def get_static_quant_module_class(float_module_class, additional_static_quant_mapping=None,
                                  is_reference=False):
    """The static quantized class of ``float_module_class`` (ember has no reference
    modules)."""
    if is_reference:
        raise NotImplementedError("ember has no reference quantized modules (is_reference=True)")
    all_mappings = {**DEFAULT_STATIC_QUANT_MODULE_MAPPINGS,
                    **(additional_static_quant_mapping or {})}
    static_quant_module_class = all_mappings.get(float_module_class, None)
    if static_quant_module_class is None:
        raise AssertionError(f"Floating point module class {str(float_module_class)}"
                             + " does not have a corresponding quantized module class")
    return copy.deepcopy(static_quant_module_class)


def get_default_qat_module_mappings():
    return copy.deepcopy(DEFAULT_QAT_MODULE_MAPPINGS)


def get_default_dynamic_quant_module_mappings():
    """Float module class -> its dynamic quantized class (ember has Linear's)."""
    from ..nn.quantized import dynamic as nnqd
    return {nn.Linear: nnqd.Linear,
            nn.modules.linear.NonDynamicallyQuantizableLinear: nnqd.Linear}


def get_default_qconfig_propagation_list():
    """The module classes ``prepare`` gives an output observer (when they have a qconfig)."""
    from .stubs import DeQuantStub, QuantStub
    return (_STATIC_QUANT_FLOAT_MODULES | set(DEFAULT_QAT_MODULE_MAPPINGS)
            | _DYNAMIC_QUANT_FLOAT_MODULES | {QuantStub, DeQuantStub, nn.Sequential})


def no_observer_set():
    """Custom modules that observe themselves (ember has none of PyTorch's: quantizable LSTM
    and MultiheadAttention)."""
    return set()


def _get_special_act_post_process(module):
    return DEFAULT_MODULE_TO_ACT_POST_PROCESS.get(type_before_parametrizations(module))


def _has_special_act_post_process(module):
    return module.training and type(module) in DEFAULT_MODULE_TO_ACT_POST_PROCESS

