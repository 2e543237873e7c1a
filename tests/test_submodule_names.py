"""The public names (``__all__``) of PyTorch's submodules against ember's: what ember lacks is
exactly the list below, grouped by why. A name added to ember leaves its list (the test says
which); a name PyTorch adds, or one ember loses, fails here until it is implemented or listed
with its reason. tests/test_toplevel_names.py does the same for ``torch`` itself."""
import importlib

import pytest

import ember

# what ember lacks, by submodule; every name has its group's reason beside it
LACKING = {
    # einops' rearrange over first-class dims (functorch.dim): not provided
    "func": {"rearrange"},
    # the engine's policy switches of PyTorch's C++ autograd (gradient layout contracts,
    # activation-memory budgets for its partitioner, CUDA stream bookkeeping of reentrant
    # accumulation) and allow_mutation_on_saved_tensors' cloning context: not provided
    "autograd": {"enforce_grad_layout_policy"},
    "autograd.graph": {"allow_mutation_on_saved_tensors", "region_activation_memory_budget",
                       "set_override_stale_capture_stream",
                       "set_warn_on_accumulate_grad_stream_mismatch"},
    # pluggable flash-attention implementations (FA3/FA4 wheels for Hopper/Blackwell GPUs)
    "nn.attention": {"activate_flash_attention_impl", "current_flash_attention_impl",
                     "list_flash_attention_impls", "register_flash_attention_impl",
                     "restore_flash_attention_impl"},
    # the 300-line optimizer-parameter swapping utility of PyTorch's FSDP2 offload
    "optim": {"swap_in_optimizer_params_and_state"},
    # checkpointing's device-type holder and CUDA-graph execution groups
    "utils.checkpoint": {"DefaultDeviceType", "GraphExecGroup"},
    # SYCL extensions and PyTorch's compiler-ABI probing of its own build
    "utils.cpp_extension": {"SyclExtension", "check_compiler_is_gcc",
                            "check_compiler_ok_for_platform",
                            "get_compiler_abi_compatibility_and_version",
                            "remove_extension_h_precompiler_headers"},
    # draft_export needs data-dependent ops run on real tensors; ember exports no joint graph
    # (ExportBackwardSignature); Constraint is a type alias of private classes
    "export": {"Constraint", "ExportBackwardSignature", "draft_export"},
    # CUDA: typed legacy storages, NVML telemetry, the pluggable/green-context allocators,
    # sync-debug mode, jiterator (runtime CUDA codegen from C++ strings), NCCL bindings of
    # torch.cuda.nccl, cudart handles
    "cuda": {"BFloat16Storage", "BoolStorage", "ByteStorage", "CUDAPluggableAllocator",
             "CharStorage", "ComplexDoubleStorage", "ComplexFloatStorage", "CudaError",
             "DeferredCudaCallError", "DoubleStorage", "FloatStorage", "GreenContext",
             "HalfStorage", "IntStorage", "LongStorage", "ShortStorage",
             "caching_allocator_disabled", "caching_allocator_enable", "can_device_access_peer",
             "change_current_allocator", "check_error", "clock_rate", "cudaStatus", "cudart",
             "current_blas_handle", "current_solver_handle", "device_memory_used",
             "get_stream_from_external", "get_sync_debug_mode", "has_half", "has_magma",
             "ipc_collect", "jiterator", "list_gpu_processes", "memory_usage", "nccl",
             "power_draw", "profiler", "random", "set_sync_debug_mode", "sparse", "temperature",
             "utilization"},
    "cuda.amp": {"amp_definitely_not_available"},
    "backends.cuda": {"blas_workspace_size", "cublas_workspace_size",
                      "cublaslt_workspace_size"},
    # the execution-trace (Chakra) observer; DeviceType is the C++ enum
    "profiler": {"DeviceType", "ExecutionTraceObserver"},
    # (PyTorch's torch.fft re-exports the Tensor class in its __all__)
    "fft": {"Tensor"},
    # 2:4 semi-structured sparsity (cuSPARSELt/CUTLASS kernels), sparse solve, and the
    # gradcheck wrapper for sparse inputs
    "sparse": {"SparseSemiStructuredTensor", "SparseSemiStructuredTensorCUSPARSELT",
               "SparseSemiStructuredTensorCUTLASS", "as_sparse_gradcheck", "solve",
               "to_sparse_semi_structured"},
    "overrides": {"redispatch_function", "resolve_name", "wrap_torch_function"},
    "random": {"thread_safe_generator"},
    # TorchScript's compiler, IR and fusers (see ember.jit's docstring)
    "jit": {"CompilationUnit", "Error", "Future", "enable_onednn_fusion", "export_opnames",
            "freeze", "onednn_fusion_enabled",
            "optimize_for_inference", "set_fusion_strategy", "strict_fusion"},
    "jit.annotations": {"AnyType", "ComplexType", "DictType", "FloatType", "IntType",
                        "ListType", "Module", "StringType", "TensorType", "TupleType",
                        "ann_to_type", "check_fn", "get_param_names", "get_signature",
                        "get_type_line", "parse_type_line", "split_type_line",
                        "try_ann_to_type", "try_real_annotations"},
    "distributed.fsdp": {"DataParallelMeshDims", "share_comm_ctx"},
    # pipelining: the tracing front end that cuts a model with torch.export at pipe_split
    # markers (stages are built by hand), and the schedules that split each backward into its
    # input and weight halves (zero-bubble, DualPipeV)
    "distributed.pipelining": {"Pipe", "SplitPoint", "build_stage", "pipe_split", "pipeline",
                               "ScheduleDualPipeV", "ScheduleInterleavedZeroBubble",
                               "ScheduleZBVZeroBubble"},
    "distributed.pipelining.schedules": {"ScheduleDualPipeV", "ScheduleInterleavedZeroBubble",
                                         "ScheduleZBVZeroBubble"},
    "distributed.pipelining.stage": {"build_stage"},
    # compile caches across processes (ember's compiled code holds live objects) and guard
    # collectives
    "compiler": {"load_cache_artifacts", "load_compiled_function", "save_cache_artifacts",
                 "set_enable_guard_collectives"},
    # Dynamo internals and switches of its C frame evaluator, old-style export
    "_dynamo": {"allow_c_slot", "bytecode_debugger", "disable_nested_graph_breaks",
                "dont_skip_tracing", "export", "nonstrict_trace", "override_cudagraphs",
                "override_optimization_hint", "patch_dynamo_config", "replay",
                "reset_recompile_user_contexts", "set_recursion_limit", "step_unsupported"},
    "accelerator": {"Graph"},
    # Metal shaders and MPS memory controls (ember has no MPS kernels)
    "mps": {"Event", "compile_shader", "load_metallib", "profiler", "recommended_max_memory",
            "set_per_process_memory_fraction"},
    # the new exporter's input-recording helpers and onnx.ops (ONNX ops as torch ops)
    "onnx": {"ExportableModule", "InputObserver", "ops"},
}
# of torch.ao.quantization: eager mode's stubs, observers, fake quantizers, qconfigs, fusion,
# prepare/prepare_qat, static quantization (convert, quantize), dynamic quantization,
# histogram observers and QConfigMapping (the FX flow, TorchScript and pt2e quantization
# are out of scope)
AO_QUANTIZATION_HAS = {
    "DeQuantStub", "FakeQuantize", "FakeQuantizeBase", "FixedQParamsFakeQuantize",
    "FixedQParamsObserver", "FusedMovingAvgObsFakeQuantize", "MinMaxObserver",
    "MovingAverageMinMaxObserver", "MovingAveragePerChannelMinMaxObserver", "NoopObserver",
    "ObserverBase", "PerChannelMinMaxObserver", "PlaceholderObserver", "QConfig",
    "QConfigDynamic", "QuantStub", "QuantWrapper", "UniformQuantizationObserverBase",
    "add_quant_dequant", "convert", "default_affine_fixed_qparams_fake_quant",
    "default_affine_fixed_qparams_observer", "default_dynamic_fake_quant",
    "default_dynamic_quant_observer", "default_embedding_fake_quant", "default_eval_fn",
    "default_fake_quant", "default_fixed_qparams_range_0to1_fake_quant",
    "default_fixed_qparams_range_0to1_observer", "default_fixed_qparams_range_neg1to1_fake_quant",
    "default_fixed_qparams_range_neg1to1_observer", "default_fused_act_fake_quant",
    "default_fused_per_channel_wt_fake_quant", "default_fused_wt_fake_quant", "default_observer",
    "default_per_channel_weight_fake_quant", "default_per_channel_weight_observer",
    "default_placeholder_observer", "default_symmetric_fixed_qparams_fake_quant",
    "default_symmetric_fixed_qparams_observer", "default_weight_fake_quant",
    "default_weight_observer", "disable_fake_quant", "disable_observer", "enable_fake_quant",
    "enable_observer", "fuse_conv_bn", "fuse_conv_bn_relu", "fuse_convtranspose_bn",
    "fuse_linear_bn", "fuse_modules", "fuse_modules_qat",
    "fused_per_channel_wt_fake_quant_range_neg_127_to_127",
    "fused_wt_fake_quant_range_neg_127_to_127", "get_default_dynamic_quant_module_mappings",
    "get_default_qat_module_mappings", "get_default_qat_qconfig",
    "get_default_qconfig_propagation_list", "get_default_static_quant_module_mappings",
    "get_fuser_method", "get_static_quant_module_class", "get_observer_state_dict",
    "load_observer_state_dict", "no_observer_set",
    "per_channel_weight_observer_range_neg_127_to_127", "prepare", "prepare_qat", "propagate_qconfig_", "qconfig_equals", "quantize", "quantize_dynamic",
    "quantize_qat", "swap_module", "weight_observer_range_neg_127_to_127",
    "HistogramObserver", "RecordingObserver", "ReuseInputObserver", "default_debug_observer",
    "default_float_qparams_observer", "default_float_qparams_observer_4bit",
    "default_histogram_observer", "default_reuse_input_observer",
    "default_embedding_fake_quant_4bit", "default_histogram_fake_quant", "QConfigAny",
    "get_default_qconfig", "get_default_qconfig_dict", "get_default_qat_qconfig_dict",
    "QConfigMapping", "get_default_qconfig_mapping", "get_default_qat_qconfig_mapping"}
# submodules whose __all__ ember matches completely
COMPLETE = ["library", "autograd.function", "autograd.forward_ad", "autograd.functional",
            "nn.init", "nn.utils", "nn.utils.parametrize", "nn.utils.rnn", "nn.modules",
            "nn.parameter", "optim.lr_scheduler", "optim.swa_utils", "utils.hooks",
            "utils.dlpack", "utils.flop_counter", "utils.module_tracker", "utils.weak",
            "distributions", "distributions.constraints", "distributions.transforms",
            "distributions.kl", "fx", "amp", "special", "nested", "serialization", "types",
            "hub", "multiprocessing", "distributed.tensor", "signal.windows", "storage",
            "futures", "utils.data", "utils.data.graph", "utils.data.graph_settings",
            "utils.data.datapipes.iter", "utils.data.datapipes.map",
            "utils.data.datapipes.utils.common", "utils.data.datapipes.utils.decoder",
            "distributed.pipelining.microbatch"]


def _lacking(torch, name):
    theirs = importlib.import_module(f"torch.{name}")
    mine = importlib.import_module(f"ember.{name}")
    return {n for n in theirs.__all__ if not hasattr(mine, n)}


@pytest.mark.parametrize("name", sorted(LACKING) + COMPLETE)
def test_lacking_names_are_the_list(torch, name):
    lacking = _lacking(torch, name)
    expected = LACKING.get(name, set())
    assert not (lacking - expected), f"ember.{name} lacks {sorted(lacking - expected)}"
    assert not (expected - lacking), \
        f"ember.{name} has {sorted(expected - lacking)} now: take them off the list"


def test_ao_quantization_is_eager_mode(torch):
    theirs = set(importlib.import_module("torch.ao.quantization").__all__)
    assert _lacking(torch, "ao.quantization") == theirs - AO_QUANTIZATION_HAS
    stub = ember.ao.quantization.QuantWrapper(ember.nn.Linear(2, 2))
    x = ember.ones(1, 2)
    assert ember.equal(stub(x), stub.module(x))
