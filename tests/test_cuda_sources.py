"""ember's raw CUDA sources compile for sm_90 with NVRTC (through NVIDIA's cuda-bindings), with no
GPU: a syntax or type error in a kernel cannot land unseen on machines that cannot run it. Each
compiled program must define every kernel ``ember/_kernels/cuda/fused.py`` launches from it."""
import re

import pytest

from ember._kernels.cuda import fused

nvrtc = pytest.importorskip("cuda.bindings.nvrtc", reason="cuda-bindings (the test extra)")


def _compile(text, name):
    err, prog = nvrtc.nvrtcCreateProgram(text.encode(), name.encode(), 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    opts = [b"--gpu-architecture=sm_90", b"-std=c++17"]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, size = nvrtc.nvrtcGetProgramLogSize(prog)
    # a bytearray: NVRTC writes into the buffer, and b" " * 1 would be CPython's shared one-byte
    # bytes object (writing its NUL into it turned every b" " of the process into b"\x00")
    log = bytearray(size)
    nvrtc.nvrtcGetProgramLog(prog, log)
    _, cubin_size = nvrtc.nvrtcGetCUBINSize(prog)
    nvrtc.nvrtcDestroyProgram(prog)
    return err, bytes(log).decode(errors="replace").strip("\x00 \n"), cubin_size


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


def test_a_broken_source_is_reported():
    """The check itself works: a type error fails with the compiler's message."""
    err, log, _ = _compile('extern "C" __global__ void k(float* x) { x[0] = undefined_name; }',
                           "broken.cu")
    assert err != nvrtc.nvrtcResult.NVRTC_SUCCESS
    assert "undefined_name" in log
