"""ember.backends: every module and member of torch.backends (seed 004) exists with PyTorch's
type and default, answers truthfully for ember on this machine, type-checks assignments with
PyTorch's errors, and the switches with an effect on the CPU change what ember does."""
import subprocess
import sys
import types
import warnings

import pytest

import ember
import ember.nn.attention  # noqa: F401
from ember.nn.attention import SDPBackend, sdpa_kernel

torch = pytest.importorskip("torch")
import torch.nn.attention  # noqa: E402,F401


@pytest.fixture(autouse=True)
def _oracle_flags_mutable():
    """torch.testing._internal (imported by test_op_db.py) calls torch.backends'
    disable_global_flags(); the oracle here is PyTorch with its flags as a program sees them."""
    module_globals = torch.backends.flags_frozen.__globals__  # torch.backends' own namespace
    frozen = torch.backends.flags_frozen()
    module_globals["__allow_nonbracketed_mutation_flag"] = True
    yield
    module_globals["__allow_nonbracketed_mutation_flag"] = not frozen

MODULES = ["cpu", "cuda", "cudnn", "cusparselt", "mha", "mps", "mkl", "mkldnn", "nnpack",
           "openmp", "opt_einsum", "miopen", "kleidiai", "quantized"]

# (module, member) pairs whose type ember shares with PyTorch (functions, classes, flags)
MEMBERS = {
    "cpu": ["get_cpu_capability"],
    "cuda": ["is_built", "matmul", "cufft_plan_cache", "preferred_blas_library",
             "preferred_linalg_library", "preferred_rocm_fa_library", "is_ck_sdpa_available",
             "SDPAParams", "flash_sdp_enabled", "enable_flash_sdp", "mem_efficient_sdp_enabled",
             "enable_mem_efficient_sdp", "math_sdp_enabled", "enable_math_sdp",
             "cudnn_sdp_enabled", "enable_cudnn_sdp", "fp16_bf16_reduction_math_sdp_allowed",
             "allow_fp16_bf16_reduction_math_sdp", "is_flash_attention_available",
             "can_use_flash_attention", "can_use_efficient_attention", "can_use_cudnn_attention",
             "sdp_kernel"],
    "cudnn": ["version", "is_available", "enabled", "allow_tf32", "deterministic", "benchmark",
              "benchmark_limit", "flags", "set_flags", "depthwise_kernel", "rnn"],
    "cusparselt": ["version", "is_available", "get_max_alg_id"],
    "mha": ["get_fastpath_enabled", "set_fastpath_enabled"],
    "mps": ["is_available", "is_built"],
    "mkl": ["is_available", "verbose", "VERBOSE_ON", "VERBOSE_OFF"],
    "mkldnn": ["is_available", "verbose", "enabled", "deterministic", "flags", "set_flags"],
    "nnpack": ["is_available", "flags", "set_flags"],
    "openmp": ["is_available"],
    "opt_einsum": ["is_available", "get_opt_einsum", "enabled", "strategy", "flags"],
    "miopen": ["immediate"],
    "kleidiai": ["is_available"],
    "quantized": ["engine", "supported_engines"],
}


def _kind(x):
    if isinstance(x, types.ModuleType):
        return "module"
    if isinstance(x, type):
        return "class"
    if callable(x):
        return "callable"
    return type(x).__name__


@pytest.mark.parametrize("mod", MODULES)
def test_module_exists_like_torch(mod):
    assert isinstance(getattr(ember.backends, mod), types.ModuleType)
    assert getattr(ember.backends, mod).__name__ == f"ember.backends.{mod}"


@pytest.mark.parametrize("mod,member", [(m, n) for m, ns in MEMBERS.items() for n in ns])
def test_member_type_matches_torch(mod, member):
    mine = getattr(getattr(ember.backends, mod), member)
    theirs = getattr(getattr(torch.backends, mod), member)
    if mod == "cuda" and member in ("matmul", "cufft_plan_cache"):
        assert type(mine).__name__ == type(theirs).__name__
    else:
        assert _kind(mine) == _kind(theirs), (mine, theirs)


def test_defaults_match_torch():
    e, t = ember.backends, torch.backends
    assert e.cudnn.enabled is t.cudnn.enabled is True
    assert e.cudnn.benchmark is t.cudnn.benchmark is False
    assert e.cudnn.deterministic is t.cudnn.deterministic is False
    assert e.cudnn.allow_tf32 is t.cudnn.allow_tf32 is True
    assert e.cudnn.benchmark_limit is t.cudnn.benchmark_limit is None  # no cuDNN
    assert e.cudnn.depthwise_kernel == t.cudnn.depthwise_kernel
    assert e.cuda.matmul.allow_tf32 is t.cuda.matmul.allow_tf32 is False
    for name in ("allow_fp16_reduced_precision_reduction",
                 "allow_bf16_reduced_precision_reduction"):
        assert getattr(e.cuda.matmul, name) == getattr(t.cuda.matmul, name)
    for fn in ("flash_sdp_enabled", "mem_efficient_sdp_enabled", "math_sdp_enabled",
               "cudnn_sdp_enabled", "fp16_bf16_reduction_math_sdp_allowed"):
        assert getattr(e.cuda, fn)() == getattr(t.cuda, fn)(), fn
    assert str(e.cuda.preferred_blas_library()) == str(t.cuda.preferred_blas_library())
    assert str(e.cuda.preferred_linalg_library()) == str(t.cuda.preferred_linalg_library())
    assert str(e.cuda.preferred_rocm_fa_library()) == str(t.cuda.preferred_rocm_fa_library())
    assert e.mha.get_fastpath_enabled() is t.mha.get_fastpath_enabled() is True
    assert e.miopen.immediate is t.miopen.immediate is False
    assert e.mkldnn.enabled is t.mkldnn.enabled is True
    assert e.opt_einsum.enabled == t.opt_einsum.enabled
    assert e.opt_einsum.strategy == t.opt_einsum.strategy
    assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision()


def test_truthful_answers_on_this_machine():
    b = ember.backends
    assert b.cuda.is_built() is False  # no CuPy here, no simulated device asked for
    assert b.cudnn.is_available() is False and b.cudnn.version() is None
    assert b.cusparselt.is_available() is False and b.cusparselt.version() is None
    assert b.mps.is_available() is False and b.mps.is_built() is False
    assert b.mkldnn.is_available() is False and b.nnpack.is_available() is False
    assert b.openmp.is_available() is False  # ember ships no OpenMP-compiled kernels
    assert b.kleidiai.is_available() is False
    import numpy as np
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    assert b.mkl.is_available() is ("mkl" in blas.lower())
    assert b.cuda.is_flash_attention_available() is True  # the op exists (CUDA only)
    assert b.cuda.is_ck_sdpa_available() is False
    assert b.quantized.supported_engines == ["none"] and b.quantized.engine == "none"


def test_cpu_capability_matches_torch_and_env():
    assert ember.backends.cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
    code = ("import ember, warnings; warnings.simplefilter('ignore'); "
            "print(ember.backends.cpu.get_cpu_capability())")
    for env, want in (("default", "DEFAULT"), ("bogus", None)):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={"ATEN_CPU_CAPABILITY": env, "PYTHONPATH": "."}, check=True)
        tout = subprocess.run([sys.executable, "-c", code.replace("ember", "torch")],
                              capture_output=True, text=True,
                              env={"ATEN_CPU_CAPABILITY": env}, check=True)
        assert out.stdout == tout.stdout
        if want:
            assert out.stdout.strip() == want


BAD_ASSIGNMENTS = [
    ("cudnn", "benchmark", "x"), ("cudnn", "enabled", 1), ("cudnn", "deterministic", None),
    ("cudnn", "allow_tf32", 1.0), ("cudnn", "depthwise_kernel", 1),
    ("cudnn", "depthwise_kernel", "bogus"), ("mkldnn", "enabled", "x"),
    ("miopen", "immediate", "x"), ("quantized", "engine", "bogus"),
]


@pytest.mark.parametrize("mod,attr,value", BAD_ASSIGNMENTS)
def test_wrong_type_assignment_raises_like_torch(mod, attr, value):
    with pytest.raises(Exception) as theirs:
        setattr(getattr(torch.backends, mod), attr, value)
    with pytest.raises(type(theirs.value)) as mine:
        setattr(getattr(ember.backends, mod), attr, value)
    assert str(mine.value) == str(theirs.value)


@pytest.mark.parametrize("stmt", [
    "b.cuda.matmul.allow_tf32 = 'x'", "b.cuda.matmul.allow_tf32 = 1",
    "b.cuda.matmul.allow_fp16_reduced_precision_reduction = 1",
    "b.cuda.matmul.allow_fp16_reduced_precision_reduction = (True, 1)",
    "b.cuda.matmul.allow_bf16_reduced_precision_reduction = ()",
    "b.cuda.matmul.foo = 1", "b.cuda.matmul.foo", "b.cuda.enable_flash_sdp(1)",
    "b.cuda.enable_math_sdp('x')", "b.nnpack.set_flags('x')",
    "b.cuda.preferred_blas_library('bogus')", "b.cuda.preferred_blas_library(3)",
    "b.cuda.preferred_linalg_library('bogus')", "b.cuda.cufft_plan_cache[0]",
    "b.cuda.cufft_plan_cache.max_size", "b.quantized.supported_engines = []",
    "b.fp32_precision = 'bogus'", "b.mps.is_macos_or_newer(13, 0)",
])
def test_bad_calls_raise_like_torch(stmt):
    with pytest.raises(Exception) as theirs:
        exec(stmt, {"b": torch.backends})
    with pytest.raises(type(theirs.value)) as mine:
        exec(stmt, {"b": ember.backends})
    assert str(mine.value) == str(theirs.value)


def test_flags_context_managers_restore():
    b = ember.backends
    with b.cudnn.flags(enabled=False, benchmark=True, deterministic=True):
        assert (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic) == (False, True, True)
    assert (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic) == (True, False, False)
    with b.nnpack.flags(enabled=False):
        assert b.nnpack.set_flags(False) == (False,)
    assert b.nnpack.set_flags(True) == (True,)
    with b.mkldnn.flags(enabled=False):
        assert b.mkldnn.enabled is False
    assert b.mkldnn.enabled is True


def test_disable_global_flags_freezes_bare_assignment():
    b = ember.backends
    b.disable_global_flags()
    try:
        assert b.flags_frozen()
        with pytest.raises(RuntimeError, match="not allowed to set ember.backends.cudnn flags"):
            b.cudnn.benchmark = True
        with b.cudnn.flags(benchmark=True):
            assert b.cudnn.benchmark is True
    finally:  # PyTorch has no "enable" counterpart; reset the module global directly
        b.m.__dict__["__allow_nonbracketed_mutation_flag"] = True
    assert not b.flags_frozen()


def test_tf32_and_float32_matmul_precision_are_one_setting():
    b = ember.backends
    try:
        b.cuda.matmul.allow_tf32 = True
        torch.backends.cuda.matmul.allow_tf32 = True
        assert ember.get_float32_matmul_precision() == torch.get_float32_matmul_precision()
        assert b.cuda.matmul.fp32_precision == torch.backends.cuda.matmul.fp32_precision
        ember.set_float32_matmul_precision("highest")
        torch.set_float32_matmul_precision("highest")
        assert b.cuda.matmul.allow_tf32 is torch.backends.cuda.matmul.allow_tf32 is False
        ember.set_float32_matmul_precision("medium")
        assert b.cuda.matmul.allow_tf32 is True
        with pytest.raises(RuntimeError, match="expects a str, but got int"):
            ember.set_float32_matmul_precision(1)
    finally:
        ember.set_float32_matmul_precision("highest")
        torch.set_float32_matmul_precision("highest")


def test_reduced_precision_tuple_forms():
    m = ember.backends.cuda.matmul
    try:
        m.allow_fp16_reduced_precision_reduction = (False, False)
        assert m.allow_fp16_reduced_precision_reduction is False
        assert m.allow_fp16_reduced_precision_reduction_split_k is False
        m.allow_bf16_reduced_precision_reduction = [False]
        assert m.allow_bf16_reduced_precision_reduction_split_k is True
    finally:
        m.allow_fp16_reduced_precision_reduction = True
        m.allow_bf16_reduced_precision_reduction = True


def test_sdp_flags_and_sdpa_kernel():
    c = ember.backends.cuda
    with sdpa_kernel([SDPBackend.MATH]):
        assert (c.flash_sdp_enabled(), c.math_sdp_enabled(), c.mem_efficient_sdp_enabled(),
                c.cudnn_sdp_enabled()) == (False, True, False, False)
    assert c.flash_sdp_enabled() and c.mem_efficient_sdp_enabled() and c.cudnn_sdp_enabled()
    with pytest.warns(FutureWarning, match="sdp_kernel"):
        with c.sdp_kernel(enable_flash=False):
            assert not c.flash_sdp_enabled() and c.math_sdp_enabled()
    assert c.flash_sdp_enabled()
    with pytest.raises(AssertionError, match="got str"):
        with sdpa_kernel("math"):
            pass
    theirs = torch.nn.attention.SDPBackend.__members__
    assert {n: int(v) for n, v in SDPBackend.__members__.items()} == \
        {n: int(v) for n, v in theirs.items()}


def test_can_use_cuda_attention_kernels_say_why_not():
    q = ember.randn(2, 3, 4, 8)
    p = ember.backends.cuda.SDPAParams(q, q, q, None, 0.0, False, False)
    assert (p.dropout, p.is_causal, p.enable_gqa, p.attn_mask) == (0.0, False, False, None)
    assert ember.backends.cuda.can_use_cudnn_attention(p) is False
    with pytest.warns(UserWarning, match="no CUDA"):
        assert ember.backends.cuda.can_use_cudnn_attention(p, debug=True) is False
    # ember has flash and memory-efficient CUDA kernels; CPU tensors are PyTorch's reason here
    for fn in ("can_use_flash_attention", "can_use_efficient_attention"):
        assert getattr(ember.backends.cuda, fn)(p) is False
        with pytest.warns(UserWarning, match="All tensors need to be on cuda device. Got query "
                                             "on device: cpu"):
            getattr(ember.backends.cuda, fn)(p, debug=True)


def test_mkl_mkldnn_verbose_scopes():
    with ember.backends.mkldnn.verbose(ember.backends.mkldnn.VERBOSE_OFF):
        pass
    with pytest.raises(AssertionError, match="Failed to set MKLDNN into verbose mode"):
        with ember.backends.mkldnn.verbose(ember.backends.mkldnn.VERBOSE_ON):
            pass
    if not ember.backends.mkl.is_available():
        with pytest.raises(AssertionError, match="Failed to set MKL into verbose mode"):
            with ember.backends.mkl.verbose(ember.backends.mkl.VERBOSE_ON):
                pass


def test_opt_einsum_validation_and_effect():
    oe = ember.backends.opt_einsum
    if not oe.is_available():
        pytest.skip("opt_einsum not installed")
    with pytest.raises(ValueError, match="must be one of the following"):
        oe.strategy = "bogus"
    a, b, c = ember.randn(4, 50), ember.randn(50, 3), ember.randn(3, 60)
    from ember.utils._python_dispatch import TorchDispatchMode

    class Log(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.shapes = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if "bmm" in str(func):
                self.shapes.append(tuple(out.shape))
            return out

    with oe.flags(enabled=False), Log() as left_to_right:
        ember.einsum("ij,jk,kl->il", c.T, b.T, a.T)
    with oe.flags(enabled=True, strategy="optimal"), Log() as optimal:
        ember.einsum("ij,jk,kl->il", c.T, b.T, a.T)
    assert left_to_right.shapes != optimal.shapes  # a different contraction order ran
    assert oe.enabled is True and oe.strategy == "auto"


def test_is_star_properties_match_torch():
    t, tt = ember.ones(1), torch.ones(1)
    props = [n for n in dir(tt) if n.startswith("is_") and not callable(getattr(tt, n))]
    for n in props:
        assert getattr(t, n) == getattr(tt, n), n


def test_mps_device_raises_torch_message():
    with pytest.raises(NotImplementedError) as theirs:
        torch.empty(1, device="mps")
    with pytest.raises(NotImplementedError) as mine:
        ember.empty(1, device="mps")
    prefix = "Could not run 'aten::empty.memory_format' with arguments from the 'MPS' backend."
    assert str(theirs.value).startswith(prefix) and str(mine.value).startswith(prefix)
    assert ember.device("mps").type == "mps"


def test_deterministic_algorithms_alert_and_fill():
    import math
    idx, src = ember.tensor([0, 1, 1]), ember.ones(3)
    try:
        ember.use_deterministic_algorithms(True)
        assert ember.are_deterministic_algorithms_enabled()
        with pytest.raises(RuntimeError) as mine:
            ember.zeros(5).put_(idx, src)
        torch.use_deterministic_algorithms(True)
        with pytest.raises(RuntimeError) as theirs:
            torch.zeros(5).put_(torch.tensor([0, 1, 1]), torch.ones(3))
        assert str(mine.value) == str(theirs.value)
        # ops PyTorch only alerts for on CUDA run on the CPU
        assert ember.zeros(5).index_add_(0, idx, src).tolist() == [1, 2, 0, 0, 0]
        assert ember.zeros(5).put_(idx, src, accumulate=True).tolist() == [1, 2, 0, 0, 0]
        # fresh memory is filled as PyTorch fills it
        assert all(math.isnan(v) for v in ember.empty(3).tolist())
        assert ember.empty(2, dtype=ember.int64).tolist() == torch.empty(
            2, dtype=torch.int64).tolist()
        assert ember.empty(2, dtype=ember.bool).tolist() == [True, True]
        grown = ember.ones(2).resize_(4).tolist()
        assert grown[:2] == [1, 1] and all(math.isnan(v) for v in grown[2:])
        ember.utils.deterministic.fill_uninitialized_memory = False
        assert ember.utils.deterministic.fill_uninitialized_memory is False
        assert ember.ones(2).resize_(3)[:2].tolist() == [1, 1]
        with pytest.raises(RuntimeError, match="expected a bool"):
            ember.utils.deterministic.fill_uninitialized_memory = 1
        ember.use_deterministic_algorithms(True, warn_only=True)
        with pytest.warns(UserWarning, match="warn_only=True"):
            ember.zeros(5).put_(idx, src)
    finally:
        ember.utils.deterministic.fill_uninitialized_memory = True
        ember.use_deterministic_algorithms(False)
        torch.use_deterministic_algorithms(False)
    assert ember.zeros(5).put_(idx, src).tolist() == [1, 1, 0, 0, 0]
