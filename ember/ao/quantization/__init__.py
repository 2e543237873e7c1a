"""``torch.ao.quantization``, eager mode, as far as ember quantizes: the stubs a float model
places (``QuantStub``, ``DeQuantStub``, ``QuantWrapper``), observers and fake quantizers,
``QConfig`` and the default qconfigs (``get_default_qconfig``'s histogram observers included),
``QConfigMapping`` and the default mappings (the FX graph mode that consumes them is not
provided), module fusion (``fuse_modules``, ``fuse_modules_qat``),
quantization-aware training (``prepare_qat``: QAT modules whose weights and activations are
fake-quantized, ``quantize_qat``), ``prepare``, static quantization (``convert`` of a calibrated
or QAT model to the static quantized modules ember has: the stubs' ``Quantize``/``DeQuantize``,
``Linear``, ``LinearReLU``; ``quantize``) and dynamic quantization (``quantize_dynamic``)."""
from .fake_quantize import (FakeQuantize, FakeQuantizeBase,  # noqa: F401
                            FixedQParamsFakeQuantize, FusedMovingAvgObsFakeQuantize,
                            default_affine_fixed_qparams_fake_quant, default_dynamic_fake_quant,
                            default_embedding_fake_quant, default_fake_quant,
                            default_fixed_qparams_range_0to1_fake_quant,
                            default_fixed_qparams_range_neg1to1_fake_quant,
                            default_fused_act_fake_quant, default_fused_per_channel_wt_fake_quant,
                            default_fused_wt_fake_quant, default_per_channel_weight_fake_quant,
                            default_symmetric_fixed_qparams_fake_quant,
                            default_weight_fake_quant, disable_fake_quant, disable_observer,
                            enable_fake_quant, enable_observer,
                            fused_per_channel_wt_fake_quant_range_neg_127_to_127,
                            fused_wt_fake_quant_range_neg_127_to_127)
from .fuse_modules import (fuse_conv_bn, fuse_conv_bn_relu,  # noqa: F401
                           fuse_convtranspose_bn, fuse_linear_bn, fuse_modules, fuse_modules_qat,
                           get_fuser_method)
from .observer import (FixedQParamsObserver, MinMaxObserver,  # noqa: F401
                       MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver,
                       NoopObserver, ObserverBase, PerChannelMinMaxObserver,
                       PlaceholderObserver, UniformQuantizationObserverBase,
                       default_affine_fixed_qparams_observer, default_dynamic_quant_observer,
                       default_fixed_qparams_range_0to1_observer,
                       default_fixed_qparams_range_neg1to1_observer, default_observer,
                       default_per_channel_weight_observer, default_placeholder_observer,
                       default_symmetric_fixed_qparams_observer, default_weight_observer,
                       get_observer_state_dict, load_observer_state_dict,
                       per_channel_weight_observer_range_neg_127_to_127,
                       weight_observer_range_neg_127_to_127)
from .qconfig import (QConfig, QConfigDynamic,  # noqa: F401
                      default_activation_only_qconfig, default_dynamic_qconfig,
                      default_per_channel_qconfig, default_qat_qconfig, default_qat_qconfig_v2,
                      default_qconfig, default_weight_only_qconfig, get_default_qat_qconfig,
                      qconfig_equals)
from .quantization_mappings import (get_default_dynamic_quant_module_mappings,  # noqa: F401
                                    get_default_qat_module_mappings,
                                    get_default_qconfig_propagation_list,
                                    get_default_static_quant_module_mappings,
                                    get_static_quant_module_class, no_observer_set)
from .quantize import (add_quant_dequant, convert, prepare, prepare_qat,  # noqa: F401
                       propagate_qconfig_, quantize, quantize_dynamic, quantize_qat,
                       swap_module)
from .stubs import DeQuantStub, QuantStub, QuantWrapper  # noqa: F401
# post-training quantization's histogram observer, qconfigs and qconfig mappings
from .fake_quantize import (default_embedding_fake_quant_4bit,  # noqa: F401
                            default_histogram_fake_quant)
from .observer import (HistogramObserver, RecordingObserver, ReuseInputObserver,  # noqa: F401
                       default_debug_observer, default_float_qparams_observer,
                       default_float_qparams_observer_4bit, default_histogram_observer,
                       default_reuse_input_observer)
from .qconfig import (QConfigAny, default_debug_qconfig,  # noqa: F401
                      default_dynamic_qat_qconfig, default_embedding_qat_qconfig,
                      default_embedding_qat_qconfig_4bit,
                      default_per_channel_symmetric_qnnpack_qat_qconfig,
                      default_per_channel_symmetric_qnnpack_qconfig,
                      default_quint8_weight_qconfig, default_reuse_input_qconfig,
                      default_symmetric_qnnpack_qat_qconfig, default_symmetric_qnnpack_qconfig,
                      float16_dynamic_qconfig, float16_static_qconfig,
                      float_qparams_weight_only_qconfig, float_qparams_weight_only_qconfig_4bit,
                      get_default_qat_qconfig_dict, get_default_qconfig,
                      get_default_qconfig_dict, per_channel_dynamic_qconfig)
from .qconfig_mapping import (QConfigMapping, get_default_qat_qconfig_mapping,  # noqa: F401
                              get_default_qconfig_mapping)



def default_eval_fn(model, calib_data):
    """Run ``model`` on each (input, target) of ``calib_data`` (calibration)."""
    for data, _target in calib_data:
        model(data)


__all__ = [
    "QuantStub", "DeQuantStub", "QuantWrapper", "ObserverBase",
    "UniformQuantizationObserverBase", "MinMaxObserver", "MovingAverageMinMaxObserver",
    "PerChannelMinMaxObserver", "MovingAveragePerChannelMinMaxObserver",
    "FixedQParamsObserver", "PlaceholderObserver", "NoopObserver", "default_observer",
    "default_weight_observer", "default_per_channel_weight_observer",
    "default_dynamic_quant_observer", "default_placeholder_observer",
    "weight_observer_range_neg_127_to_127", "per_channel_weight_observer_range_neg_127_to_127",
    "default_fixed_qparams_range_neg1to1_observer", "default_fixed_qparams_range_0to1_observer",
    "default_symmetric_fixed_qparams_observer", "default_affine_fixed_qparams_observer",
    "get_observer_state_dict", "load_observer_state_dict",
    "FakeQuantizeBase", "FakeQuantize", "FixedQParamsFakeQuantize",
    "FusedMovingAvgObsFakeQuantize", "default_fake_quant", "default_weight_fake_quant",
    "default_dynamic_fake_quant", "default_per_channel_weight_fake_quant",
    "default_embedding_fake_quant", "default_fixed_qparams_range_neg1to1_fake_quant",
    "default_fixed_qparams_range_0to1_fake_quant", "default_symmetric_fixed_qparams_fake_quant",
    "default_affine_fixed_qparams_fake_quant", "default_fused_act_fake_quant",
    "default_fused_wt_fake_quant", "default_fused_per_channel_wt_fake_quant",
    "fused_wt_fake_quant_range_neg_127_to_127",
    "fused_per_channel_wt_fake_quant_range_neg_127_to_127", "disable_fake_quant",
    "disable_observer", "enable_fake_quant", "enable_observer",
    "QConfig", "QConfigDynamic", "default_dynamic_qconfig", "default_qconfig",
    "default_per_channel_qconfig", "default_qat_qconfig", "default_qat_qconfig_v2",
    "default_weight_only_qconfig", "default_activation_only_qconfig", "get_default_qat_qconfig",
    "qconfig_equals", "fuse_modules", "fuse_modules_qat", "fuse_conv_bn", "fuse_conv_bn_relu",
    "fuse_linear_bn", "fuse_convtranspose_bn", "get_fuser_method", "default_eval_fn", "get_default_qat_module_mappings",
    "get_default_dynamic_quant_module_mappings", "get_default_qconfig_propagation_list",
    "get_default_static_quant_module_mappings", "get_static_quant_module_class",
    "no_observer_set", "propagate_qconfig_", "prepare", "prepare_qat", "quantize", "quantize_qat",
    "quantize_dynamic", "convert", "swap_module", "add_quant_dequant",
    "HistogramObserver", "RecordingObserver", "ReuseInputObserver", "default_debug_observer",
    "default_float_qparams_observer", "default_float_qparams_observer_4bit",
    "default_histogram_observer", "default_reuse_input_observer",
    "default_embedding_fake_quant_4bit", "default_histogram_fake_quant", "QConfigAny",
    "get_default_qconfig", "get_default_qconfig_dict", "get_default_qat_qconfig_dict",
    "QConfigMapping", "get_default_qconfig_mapping", "get_default_qat_qconfig_mapping",
    "default_debug_qconfig", "float16_dynamic_qconfig", "float16_static_qconfig",
    "per_channel_dynamic_qconfig", "float_qparams_weight_only_qconfig",
    "float_qparams_weight_only_qconfig_4bit", "default_quint8_weight_qconfig",
    "default_dynamic_qat_qconfig", "default_reuse_input_qconfig",
    "default_symmetric_qnnpack_qconfig", "default_per_channel_symmetric_qnnpack_qconfig",
    "default_symmetric_qnnpack_qat_qconfig", "default_per_channel_symmetric_qnnpack_qat_qconfig",
    "default_embedding_qat_qconfig", "default_embedding_qat_qconfig_4bit"]
