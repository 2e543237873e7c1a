"""ember's raw CUDA sources compile for sm_90 with NVRTC (through NVIDIA's cuda-bindings), with no
GPU: a syntax or type error in a kernel cannot land unseen on machines that cannot run it. Each
compiled program must define every kernel ``ember/_kernels/cuda/fused.py`` and ``pointwise.py``
launch from it (``fused.kernel_names()``: the loop kernels, each register-row configuration, the
binary ops)."""
import json
import os
import re
import subprocess
import sys

import pytest

from ember._kernels.cuda import fused

nvrtc = pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-bindings (the test extra)")


def _compile(text, name, arch=b"sm_90", options=()):
    err, prog = nvrtc.nvrtcCreateProgram(text.encode(), name.encode(), 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    opts = [b"--gpu-architecture=" + arch, b"-std=c++17"] + [o.encode() for o in options]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    # a bytearray: NVRTC writes into the buffer, and b" " * 1 would be CPython's shared one-byte
    # bytes object (writing its NUL into it turned every b" " of the process into b"\x00")
    log = bytearray(size)
    nvrtc.nvrtcGetProgramLog(prog, log)
    if arch.startswith(b"compute_"):  # a virtual architecture: the PTX text is the output
        _, size = nvrtc.nvrtcGetPTXSize(prog)
        out = bytearray(size)
        nvrtc.nvrtcGetPTX(prog, out)
        out = bytes(out).decode(errors="replace")
    else:
        _, out = nvrtc.nvrtcGetCUBINSize(prog)
    nvrtc.nvrtcDestroyProgram(prog)
    return err, bytes(log).decode(errors="replace").strip("\x00 \n"), out


@pytest.mark.parametrize("filename", fused.SOURCES)
def test_source_compiles_for_sm90(filename):
    err, log, cubin = _compile(fused.source(filename), filename)
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, log
    assert "warning" not in log.lower(), log
    assert cubin > 0


def test_every_launched_kernel_is_defined():
    """The kernel names fused.py asks for (``name_{sfx}`` for each dtype suffix) are extern "C"
    kernels of the source it asks them from."""
    with open(fused.__file__) as f:
        code = f.read()
    launched = re.findall(r'_kernel\("(\w+\.cu)", f"(\w+)_\{sfx\}"\)', code)
    assert len(launched) >= 7
    for filename, name in launched:
        text = fused.source(filename)
        for sfx in ("f32", "f64"):
            defined = re.search(rf'extern "C" __global__ void {name}_{sfx}\(', text) or \
                re.search(rf"void {name}_##S\(", text)
            assert defined, f"{filename} has no kernel {name}_{sfx}"


@pytest.mark.parametrize("filename", fused.SOURCES)
def test_every_listed_kernel_is_an_entry(filename):
    """Every name kernel_names() lists for a source (the register-row kernels' names are built
    from fused.py's _VEC and _REG_K tables, the binary ops' from pointwise.py's) is an entry point
    of the compiled program; and the source defines no kernel that is never launched."""
    err, log, ptx = _compile(fused.source(filename), filename, b"compute_90")
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, log
    entries = set(re.findall(r"\.entry (\w+)\(", ptx))
    listed = fused.kernel_names()[filename]
    assert len(set(listed)) == len(listed)
    assert set(listed) == entries, (set(listed) - entries, entries - set(listed))


def test_register_rows_fit_the_launch_bounds():
    """The register-row configurations fused.py picks: whole warps, at most the kernels'
    __launch_bounds__ threads, every element of the row in some thread's registers; 16-byte packs
    only for lengths that are a multiple of the pack and 16-byte aligned arrays."""
    for sfx in ("f32", "f64"):
        pack = fused._VEC[sfx]
        for n in (1, 3, 32, 33, 128, 1000, 1024, 1025, 4096, 4097, 8192, 16384, 20000):
            for p in (0, 256, 256 + 4 * (3 - pack)):
                cfg = fused._register_rows("softmax_forward", sfx, n, 512, p)
                if cfg is None:
                    assert n > fused._REG_THREADS * fused._REG_K[sfx][-1]
                    continue
                name, (bx, by), per_block = cfg
                vec, k = map(int, re.fullmatch(rf"softmax_forward_reg_{sfx}_v(\d+)_k(\d+)",
                                               name).groups())
                assert name in fused.kernel_names()["softmax.cu"]
                assert bx % 32 == 0 and bx * by <= fused._REG_THREADS and by == per_block
                assert by == 1 or bx == 32
                assert bx * k >= n
                assert vec == (pack if n % pack == 0 and p % 16 == 0 else 1)


def test_a_broken_source_is_reported():
    """The check itself works: a type error fails with the compiler's message."""
    err, log, _ = _compile('extern "C" __global__ void k(float* x) { x[0] = undefined_name; }',
                           "broken.cu")
    assert err != nvrtc.nvrtcResult.NVRTC_SUCCESS
    assert "undefined_name" in log


# CuPy 14.2's compiler module as far as its compile options go (cupy/cuda/compiler.py): each
# function finds the next through the module's globals, as there
_CUPY_COMPILER = """
def _compile_module_with_cache(source, options=(), *, arch=None, backend="nvrtc"):
    return _compile_with_cache_cuda(source, options, arch, backend=backend)

def _compile_with_cache_cuda(source, options, arch, extra_source=None, backend="nvrtc"):
    options += ("-ftz=true",)
    if backend == "nvcc":
        return compile_using_nvcc(source, options, arch)
    return _compile_using_nvrtc_no_warning(source, options, arch)

def _compile_using_nvrtc_no_warning(source, options, arch, filename="kern.cu"):
    return ptx(source, options)

def compile_using_nvcc(source, options=(), arch=None, filename="kern.cu"):
    return ptx(source, options)
"""


def _flushing_instructions(ptx):
    return [line.strip() for line in ptx.splitlines() if ".ftz." in line]


def test_cupy_kernels_keep_float32_subnormals():
    """ember's CUDA runtime makes CuPy compile without flushing float32 subnormals (CuPy appends
    -ftz=true to every compile; PyTorch's kernels keep them): the PTX NVRTC makes of a kernel
    CuPy's compiler module is asked for has no .ftz instruction once ember has wrapped it, and
    had before; a compile that does not come through _compile_module_with_cache still flushes."""
    import types
    from ember.cuda import _subnormals

    def ptx(source, options):
        err, log, out = _compile(source, "kern.cu", b"compute_90", options)
        assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, log
        return out

    compiler = types.ModuleType("cupy.cuda.compiler")
    compiler.ptx = ptx
    exec(_CUPY_COMPILER, compiler.__dict__)
    source = 'extern "C" __global__ void k(float* x) { x[0] = sqrtf(x[0]) * x[1]; }'
    assert len(_flushing_instructions(compiler._compile_module_with_cache(source))) == 2
    assert _subnormals.keep_subnormals(compiler)
    assert _subnormals.keep_subnormals(compiler)  # once only
    for options in ((), ("-std=c++17",), (_subnormals.KEEP,)):
        assert _flushing_instructions(compiler._compile_module_with_cache(source, options)) == []
    assert _flushing_instructions(compiler._compile_module_with_cache(source,
                                                                      backend="nvcc")) == []
    assert len(_flushing_instructions(compiler._compile_with_cache_cuda(source, (), None))) == 2
    assert not _subnormals.keep_subnormals(types.ModuleType("cupy.cuda.compiler"))


# sm_90's most shared memory a block may take (227 KiB): Triton checks it only when it loads a
# kernel on a GPU
_SM90_SHARED = 232448

_COMPILE_ATTENTION = """
import json
from triton.backends.compiler import GPUTarget
import ember
from ember._kernels.cuda import flash_attention
print(json.dumps({dtype: [(name, k.metadata.target.arch, len(k.asm["cubin"]), k.metadata.shared)
                          for name, k in flash_attention.compile_for(
                              GPUTarget("cuda", 90, 32), getattr(ember, dtype), causal=True)]
                  for dtype in ("float32", "float16", "bfloat16")}))
"""


def test_triton_attention_compiles_for_sm90():
    """The fused attention's Triton kernels (the forward and the backward's three) compile for
    sm_90, in each dtype, to cubins whose shared memory fits: CI runs them under Triton's
    interpreter, which checks neither. (A process of its own: where TRITON_INTERPRET=1 is set,
    as on CI's machines, Triton's language library is decorated for the interpreter.)"""
    pytest.importorskip("triton", reason="Triton (the test extra)")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-c", _COMPILE_ATTENTION], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    by_dtype = json.loads(done.stdout.splitlines()[-1])
    assert sorted(by_dtype) == ["bfloat16", "float16", "float32"]
    for dtype, kernels in by_dtype.items():
        assert [k[0] for k in kernels] == ["_fwd_kernel", "_delta_kernel", "_dkdv_kernel",
                                           "_dq_kernel"], dtype
        for name, arch, cubin, shared in kernels:
            assert arch == 90 and cubin > 0, (dtype, name)
            assert 0 < shared <= _SM90_SHARED, (dtype, name, shared)
