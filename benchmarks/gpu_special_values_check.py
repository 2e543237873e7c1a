"""Pointwise ops at special values on a GPU: ember's CUDA result beside ember's CPU result (what
``tests/test_cuda_ops.py`` compares) and PyTorch's CUDA result. Run where a GPU is lent:

    python benchmarks/gpu_special_values_check.py

The op table's samples are random multiples of 0.25, so an input of exactly 0 (or a product
that overflows) turns up only now and then, and a device that computes such a case otherwise
fails a test now and then. This feeds every unary and binary row of ``rules/pointwise.py``
every pairing of signed zeros, ±1, ±inf, NaN, a subnormal and a few ordinary and huge values, in
float16, float32, float64, complex64 and complex128, and prints each (op, dtype) whose CUDA values
differ from the CPU's: NaN or infinity where the other has none, another sign of zero, or a
relative difference over 1e-3. A PyTorch column says which of the two PyTorch's CUDA kernel
agrees with. Exit status: the number of (op, dtype) pairs that differ from the CPU.
"""
import itertools
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ember  # noqa: E402
from ember._kernels.rules import pointwise as rules  # noqa: E402

try:
    import torch
except ImportError:  # the CPU/CUDA comparison stands without it
    torch = None

DTYPES = ("float16", "float32", "float64", "complex64", "complex128")
_SUBNORMAL = {"float16": 6e-8, "float32": 1e-40, "float64": 5e-324}


def _inputs(dt, n):
    """n lists of Python numbers (complex for a complex dtype), every pairing of the values."""
    vals = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 100.0, 1e30, -1e30, float("inf"),
            float("-inf"), float("nan"), _SUBNORMAL.get(dt, 0.0)]
    if "complex" in dt:
        small = [0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e30]
        vals = [complex(a, b) for a, b in itertools.product(small, small)]
        if n == 2:
            vals = vals[::5]
    cols = list(zip(*itertools.product(vals, repeat=n)))
    return [list(c) for c in cols]


def _parts(a):
    a = np.asarray(a)
    return [a.real.astype(np.float64), a.imag.astype(np.float64)] if np.iscomplexobj(a) \
        else [a.astype(np.float64)]


def _differs(a, b):
    """Mask of the elements where ``a`` and ``b`` differ in a way worth naming."""
    bad = np.zeros(np.shape(a), bool)
    for x, y in zip(_parts(a), _parts(b)):
        nan = np.isnan(x) != np.isnan(y)
        inf = (np.isinf(x) != np.isinf(y)) | (np.isinf(x) & np.isinf(y) & (x != y))
        zero = (x == 0) & (y == 0) & (np.signbit(x) != np.signbit(y))
        with np.errstate(all="ignore"):
            fin = np.isfinite(x) & np.isfinite(y)
            rel = fin & (np.abs(x - y) > 1e-3 * np.maximum(np.abs(y), 1e-30)) & \
                (np.abs(x - y) > 1e-30)
        bad |= nan | inf | zero | rel
    return bad


def _run(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    except Exception as e:  # noqa: BLE001  (an op refusing the dtype: reported as such)
        return e


def _np(t):
    """A result (ember's or PyTorch's tensor) as a NumPy array; an exception as it is."""
    return t if isinstance(t, Exception) else t.cpu().numpy()


def check(name, n, dt):
    """Lines describing where ``name`` on cuda differs from the CPU, or []."""
    op = getattr(ember.ops.aten, name, None)
    if op is None or not hasattr(op, "default"):
        return []
    cols = _inputs(dt, n)
    edt = getattr(ember, dt)
    cpu_in = [ember.tensor(c, dtype=edt) for c in cols]
    cpu = _np(_run(lambda: op.default(*cpu_in)))
    dev = _run(lambda: op.default(*[t.cuda() for t in cpu_in]))
    if not isinstance(dev, Exception):
        ember.cuda.synchronize()
    dev = _np(dev)
    if isinstance(cpu, Exception) or isinstance(dev, Exception):
        if isinstance(cpu, Exception) != isinstance(dev, Exception) or type(cpu) is not type(dev):
            return [f"{name} {dt}: cpu {cpu!r:.80} / cuda {dev!r:.80}"]
        return []
    ref = None
    top = getattr(torch.ops.aten, name, None) if torch is not None else None
    if top is not None and hasattr(top, "default"):
        tdt = getattr(torch, dt)
        ref = _np(_run(lambda: top.default(*[torch.tensor(c, dtype=tdt, device="cuda")
                                              for c in cols])))
        ref = None if isinstance(ref, Exception) else ref
    bad = _differs(dev, cpu)
    if not bad.any():
        return []
    lines = [f"{name} {dt}: {int(bad.sum())} of {bad.size} differ from the CPU"
             + ("" if ref is None else
                f"; PyTorch's CUDA agrees with ember's CUDA at "
                f"{int((~_differs(dev, ref) & bad).sum())} of them")]
    for i in np.flatnonzero(bad)[:4]:
        args = ", ".join(repr(c[i]) for c in cols)
        lines.append(f"    ({args}): cpu {cpu.flat[i]!r} cuda {dev.flat[i]!r}"
                     + ("" if ref is None else f" torch-cuda {ref.flat[i]!r}"))
    return lines


def main():
    failures = 0
    for n in (1, 2):
        for name in sorted(rules.RULES[n]):
            for dt in DTYPES:
                lines = check(name, n, dt)
                if lines:
                    failures += 1
                    print("\n".join(lines))
    print(f"special values: {failures} (op, dtype) pairs differ from the CPU")
    return failures


if __name__ == "__main__":
    sys.exit(min(main(), 100))
