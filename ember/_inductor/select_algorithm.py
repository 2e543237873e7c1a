"""Choosing an implementation by timing (PyTorch's ``torch._inductor.select_algorithm``).

Under ``config.max_autotune`` a matrix product has several *choices*: the extern call of the
eager op (NumPy/OpenBLAS: :class:`ExternKernelChoice`) and the C GEMM template in each of its
configurations (:class:`CppTemplateChoice`). :class:`AlgorithmSelectorCache` builds every
template choice into one C module, times each choice once on random inputs with the product's
sizes, strides and dtype, and keeps the winner, in memory and in the Inductor cache directory
(``autotune/``, written atomically), under a key of the op, the operands' layouts, the dtype, the
thread count, the template's source and the compiler: a second compile, or a second process,
reuses the choice without timing again.

``TORCH_LOGS=inductor`` shows each decision as PyTorch's autotune log does::

    AUTOTUNE addmm(128x256, 128x784, 784x256)
      cpp_gemm_mr6_nr16_bm48_bn64_bk512_t2 0.2410 ms 100.0%
      aten_addmm 0.3120 ms 77.2%
    AUTOTUNE benchmarking took 0.41 s; chose cpp_gemm_mr6_nr16_bm48_bn64_bk512_t2
"""
import collections
import hashlib
import json
import logging
import os
import statistics
import time

import numpy as np

import ember

from . import codecache
from .codegen import cpp_gemm_template
from .codegen.cpp import STORAGE_CTYPES, module_source

__all__ = ["ExternKernelChoice", "CppTemplateChoice", "AlgorithmSelectorCache",
           "autotune_select_algorithm", "counters"]

log = logging.getLogger(__name__)

# "benchmark": choices timed; "memory_hit" / "disk_hit": a decision reused
counters = collections.Counter()

# each choice is timed over about this long, in _MIN_CALLS.._MAX_CALLS calls _PAUSE apart
_BENCH_SECONDS = 0.02
_MIN_CALLS, _MAX_CALLS = 5, 50
_PAUSE = 0.0005


class ExternKernelChoice:
    """The eager op on the op's own arguments."""

    def __init__(self, op, kwargs):
        self.op = op
        self.kwargs = kwargs
        self.name = f"aten_{str(getattr(op, 'overloadpacket', op)).split('.')[-1]}"

    def benchmark_fn(self, module, tensors, out):
        views = [view for view, _ in tensors]
        return lambda: self.op(*views, **self.kwargs)


class CppTemplateChoice:
    """The C GEMM template in one configuration; when timed it computes ``C = A @ B`` of the
    last two inputs into a fresh ``out``, no epilogue."""

    def __init__(self, template, config):
        self.template = template
        self.config = config
        self.name = config.name

    def source(self, dtype):
        t = STORAGE_CTYPES[dtype]
        a, b, out = self.template.a, self.template.b, self.template.out
        names = list(dict.fromkeys([a.name, b.name]))
        params = [f"const {t}* restrict ptr_{n}" for n in names] + [f"{t}* restrict ptr_{out.name}"]
        src = self.template.render(self.name, self.config, params,
                                   comment=f"GEMM template {self.name}, timed by autotuning")
        return self.name, src, len(params), [t] * len(params)

    def benchmark_fn(self, module, tensors, out):
        fn = getattr(module, self.name)
        # the operands' storages: the template adds the views' offsets itself
        ptrs = list(dict.fromkeys(ptr for _, ptr in tensors[-2:])) + [out.data_ptr()]
        return lambda: fn(*ptrs)


def _random_view(size, stride, offset, dtype, gen):
    """``(view, storage pointer)``: a tensor of ``size``/``stride`` at ``offset`` elements into
    fresh random storage (NumPy's generator: ember's own random stream is left alone), and the
    storage's start, the pointer generated code receives."""
    extent = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
    base = ember.tensor(gen.standard_normal(extent), dtype=dtype)
    return ember.as_strided(base, size, stride, offset), base.data_ptr()


def _time(fn):
    """Seconds per call: the median of calls timed one by one, each after a pause. In a graph
    a product runs between other kernels and eager ops, with the OpenMP workers gone to sleep
    (libgomp spins only briefly: codecache sets GOMP_SPINCOUNT); timed back to back, a
    multi-threaded kernel would find them awake and look faster than it will be."""
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    samples = []
    for _ in range(max(_MIN_CALLS, min(_MAX_CALLS, int(_BENCH_SECONDS / once)))):
        time.sleep(_PAUSE)
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def _template_digest():
    with open(cpp_gemm_template.__file__, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]


class AlgorithmSelectorCache:
    """Decisions by key: ``__call__`` returns the fastest of ``choices``, timing them only when
    neither this process nor the disk has decided for this key before."""

    def __init__(self):
        self.decisions = {}

    def cache_clear(self):
        """Forget this process's decisions (the disk keeps its own)."""
        self.decisions.clear()

    def __call__(self, name, choices, inputs, out, dtype, threads):
        """``inputs``: ``(size, stride, offset)`` of the op's tensor arguments in order (the
        last two are the matrix operands); ``out``: the product's ``(size, stride)``."""
        if len(choices) == 1:
            return choices[0]
        key = self._key(name, choices, inputs, out, dtype, threads)
        by_name = {c.name: c for c in choices}
        chosen = self.decisions.get(key)
        if chosen in by_name:
            counters["memory_hit"] += 1
            return by_name[chosen]
        path = os.path.join(codecache.cache_dir(), "autotune", key[:2], f"{key}.json")
        try:
            with open(path) as f:
                chosen = json.load(f)["choice"]
        except (OSError, ValueError, KeyError):
            chosen = None
        if chosen in by_name:
            counters["disk_hit"] += 1
            log.debug("autotune %s: %s from %s", name, chosen, path)
        else:
            timings = self.benchmark(name, choices, inputs, out, dtype)
            chosen = min(timings, key=timings.get)
            codecache.write_atomic(path, json.dumps({
                "op": name, "inputs": inputs, "dtype": dtype.name, "threads": threads,
                "choice": chosen, "timings": timings}))
        self.decisions[key] = chosen
        return by_name[chosen]

    @staticmethod
    def _key(name, choices, inputs, out, dtype, threads):
        compiler = codecache.compiler_features()
        parts = [name, inputs, out, dtype.name, threads, [c.name for c in choices],
                 _template_digest(), compiler["version"], compiler["cflags"], codecache._cpu()]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()

    def benchmark(self, name, choices, inputs, out, dtype):
        """Seconds per call of each choice, logged as PyTorch's AUTOTUNE table."""
        counters["benchmark"] += 1
        start = time.perf_counter()
        templates = [c for c in choices if isinstance(c, CppTemplateChoice)]
        module = None
        if templates:
            kernels = [c.source(dtype) for c in templates]
            digest = hashlib.sha256("".join(k[1] for k in kernels).encode()).hexdigest()[:16]
            module_name = f"ember_autotune_{digest}"
            module = codecache.CppCodeCache.load(module_source(module_name, kernels), module_name)
        built = time.perf_counter() - start
        gen = np.random.default_rng(0)
        tensors = [_random_view(size, stride, offset, dtype, gen)
                   for size, stride, offset in inputs]
        result = ember.empty_strided(out[0], out[1], dtype=dtype)
        timings = {c.name: _time(c.benchmark_fn(module, tensors, result)) for c in choices}
        best = min(timings.values())
        shapes = ", ".join("x".join(map(str, size)) for size, _, _ in inputs)
        lines = [f"AUTOTUNE {name}({shapes})"]
        for cname, t in sorted(timings.items(), key=lambda kv: kv[1]):
            lines.append(f"  {cname} {t * 1e3:.4f} ms {best / t * 100:.1f}%")
        lines.append(f"AUTOTUNE benchmarking took {time.perf_counter() - start:.2f} s "
                     f"({built:.2f} s building the templates); chose "
                     f"{min(timings, key=timings.get)}")
        log.info("\n".join(lines))
        return timings


autotune_select_algorithm = AlgorithmSelectorCache()
