"""C++ extensions: build and load times of a load_inline extension, and the per-call cost of a
C++ kernel behind the dispatcher against a Python custom op, in ember and (when installed) in
PyTorch.

    python benchmarks/cpp_extension.py            # ember, and PyTorch when installed
    python benchmarks/cpp_extension.py --no-torch

Build times are taken in fresh processes (a first build into an empty TORCH_EXTENSIONS_DIR, then
a load of the cached build); per-call times are the best of 15 interleaved rounds of 500 calls, in microseconds.
"""
import os
import subprocess
import sys
import tempfile
import textwrap
import timeit

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

SOURCE = r"""
#include <torch/library.h>
using at::Tensor;
TORCH_LIBRARY(benchops, m) {
  m.def("triple(Tensor x) -> Tensor");
}
Tensor triple_cpu(const Tensor& x) { return x * 3; }
TORCH_LIBRARY_IMPL(benchops, CPU, m) { m.impl("triple", triple_cpu); }
Tensor triple_fn(const Tensor& x) { return x * 3; }
"""

CHILD = r"""
import os, sys, time
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
import {lib} as torch
from {lib}.utils import cpp_extension
t1 = time.perf_counter()
m = cpp_extension.load_inline("bench_triple", {source!r}, functions=["triple_fn"])
t2 = time.perf_counter()
assert torch.ops.benchops.triple(torch.ones(2)).tolist() == [3.0, 3.0]
print(f"{{t2 - t1:.3f}}")
"""


def build_times(lib, ext_dir):
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=ext_dir)
    code = CHILD.format(root=ROOT, lib=lib, source=SOURCE)
    out = []
    for _ in range(2):  # first build, then the cached load
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        out.append(float(p.stdout.strip().splitlines()[-1]))
    return out


def per_call(lib, ext_dir):
    os.environ["TORCH_EXTENSIONS_DIR"] = ext_dir
    if lib == "ember":
        sys.path.insert(0, ROOT)
    mod = __import__(lib)
    from importlib import import_module
    cpp_extension = import_module(f"{lib}.utils.cpp_extension")
    m = cpp_extension.load_inline("bench_triple", SOURCE, functions=["triple_fn"])

    @mod.library.custom_op("benchpy::triple", mutates_args=())
    def triple_py(x: mod.Tensor) -> mod.Tensor:
        return x * 3

    x = mod.ones(4)
    cases = {
        "x * 3 (the kernels' inner op)": lambda: x * 3,
        "C++ op through the dispatcher (ops.benchops.triple)": lambda: mod.ops.benchops.triple(x),
        "Python custom op (ops.benchpy.triple)": lambda: mod.ops.benchpy.triple(x),
        "pybind11 function, no dispatcher (m.triple_fn)": lambda: m.triple_fn(x),
    }
    # rounds interleave the cases, so that load on the machine hits them alike; best round
    res = {name: float("inf") for name in cases}
    n = 500
    for _ in range(15):
        for name, fn in cases.items():
            res[name] = min(res[name], timeit.timeit(fn, number=n) / n * 1e6)
    return res


def main():
    libs = ["ember"]
    if "--no-torch" not in sys.argv:
        try:
            import torch  # noqa: F401
            libs.append("torch")
        except ImportError:
            pass
    if len(sys.argv) > 2 and sys.argv[1] == "--per-call":
        lib, ext_dir = sys.argv[2], sys.argv[3]
        for k, v in per_call(lib, ext_dir).items():
            print(f"{v:.2f}\t{k}")
        return
    for lib in libs:
        ext_dir = tempfile.mkdtemp(prefix=f"bench_{lib}_ext_")
        first, cached = build_times(lib, ext_dir)
        print(f"{lib}: load_inline first build {first:.2f} s, cached load {cached * 1e3:.1f} ms")
        p = subprocess.run([sys.executable, __file__, "--per-call", lib, ext_dir],
                           capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr)
        print(textwrap.indent(p.stdout, f"  {lib} µs/call  "))


if __name__ == "__main__":
    main()
