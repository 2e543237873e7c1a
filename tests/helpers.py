"""Helpers for comparing ember with PyTorch."""
import contextlib
import gc
import importlib.util
import os
import subprocess
import sys

import numpy as np

import ember


def has_c_compiler():
    """Whether a C compiler works here (the hand-written and generated C modules then build;
    their tests fail on a build error instead of skipping)."""
    from ember._inductor import codecache
    from ember._inductor.exc import InvalidCxxCompiler
    try:
        codecache.compiler_features()
    except InvalidCxxCompiler:
        return False
    return True


def real_gpu():
    """Whether a real GPU (CuPy) is here and the simulation is not asked for: the CUDA test
    modules then run on it instead of the simulated device."""
    from ember.cuda import _runtime
    return not _runtime.simulated() and ember.cuda.device_count() > 0


@contextlib.contextmanager
def simulated_cuda(devices=1):
    """The simulated CUDA device (``devices`` of them) for a block, forgotten after it so that
    later code sees this machine as it is."""
    saved = os.environ.get("EMBER_CUDA_SIMULATE")
    ember.cuda._forget_runtime()
    os.environ["EMBER_CUDA_SIMULATE"] = str(devices)
    try:
        yield
    finally:
        if saved is None:
            del os.environ["EMBER_CUDA_SIMULATE"]
        else:
            os.environ["EMBER_CUDA_SIMULATE"] = saved
        gc.collect()
        ember.cuda._forget_runtime()


def to_torch_dtype(torch, d):
    return getattr(torch, d.name)


def to_ember_dtype(d):
    return getattr(ember, str(d).split(".")[-1])


def from_np(a):
    """An ember tensor with the contents of a NumPy array (a copy, by the kernel-result path)."""
    from ember._tensor import wrap_array
    return wrap_array(np.array(a, copy=True))


def to_np(t):
    """An ember or torch tensor's values as a NumPy array (bfloat16 as float32)."""
    if hasattr(t, "_keyset"):
        if t.is_conj() or t.is_neg():  # (a lazy view's memory is not its values)
            t = t.resolve_conj().resolve_neg()
        a = t._nd()
        if t.dtype.name == "bfloat16":
            a = a.astype(np.float32)
        return np.array(a)
    # torch.conj and _neg_view are lazy views; numpy() refuses them
    t = t.detach().cpu().resolve_conj().resolve_neg()
    if str(t.dtype) == "torch.bfloat16":
        t = t.float()
    return t.numpy()


def to_torch(torch, t):
    """An ember CPU tensor as a torch tensor with equal values, shape and dtype."""
    a = to_np(t)
    out = torch.from_numpy(np.ascontiguousarray(a).copy())
    return out.to(to_torch_dtype(torch, t.dtype))


def assert_same(e, t, rtol=1e-5, atol=1e-6, check_stride=False):
    """ember tensor ``e`` equals torch tensor ``t``: dtype, shape (strides if asked), values."""
    assert e.dtype.name == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape), (e.shape, t.shape)
    if check_stride:
        assert e.stride() == t.stride(), (e.stride(), t.stride())
    a, b = to_np(e), to_np(t)
    if np.iscomplexobj(a) and np.iscomplexobj(b):
        # each part on its own: NumPy compares a complex element with an infinite part exactly,
        # so -inf + 4.532360141827194j and -inf + 4.532360141827193j would differ
        np.testing.assert_allclose(a.real, b.real, rtol=rtol, atol=atol, equal_nan=True)
        np.testing.assert_allclose(a.imag, b.imag, rtol=rtol, atol=atol, equal_nan=True)
        return
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def assert_identical(got, want):
    """NumPy arrays ``got`` and ``want`` hold the same values, signs of zero and NaN positions
    (complex: part by part) — stricter than assert_same, for values at zeros and infinities."""
    for x, y in ([(got.real, want.real), (got.imag, want.imag)] if np.iscomplexobj(want)
                 else [(got, want)]):
        assert np.array_equal(np.isnan(x), np.isnan(y)), (x, y)
        ok = ~np.isnan(y)
        assert np.array_equal(x[ok], y[ok]), (x[ok], y[ok])
        assert np.array_equal(np.signbit(x[ok]), np.signbit(y[ok])), (x[ok], y[ok])


TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)


def run_as_torch(script, *args, timeout=600):
    """Run ``tests/<script>`` under ``python -m ember.as_torch`` (its ``import torch`` imports
    ember) with ``args``, from the repository's root; fail with the end of its stderr."""
    p = subprocess.run([sys.executable, "-m", "ember.as_torch", os.path.join(TESTS, script),
                        *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stderr[-4000:]


def results_beside_pytorch(script, directory, theirs, timeout=600):
    """The library-program tests' comparison: ``theirs`` maps each case to PyTorch's result,
    computed here (with the weights ember is to load saved in ``directory``); ``tests/<script>``
    computes the same cases under ember.as_torch and saves ``<case>_ember.npz`` there.
    Case -> (PyTorch's result, ember's)."""
    run_as_torch(script, directory, ",".join(theirs), timeout=timeout)
    return {n: (theirs[n], dict(np.load(os.path.join(directory, f"{n}_ember.npz"))))
            for n in theirs}


def pytorch_beside_ember(script, directory, names, timeout=600):
    """Run the cases ``names`` of ``tests/<script>`` in PyTorch (``python <script> torch``) and
    in ember (``python -m ember.as_torch <script> ember``) at the same time, each process
    saving DIR/<case>_<library>.npz; fail with the end of a failing side's stderr.
    Case -> (PyTorch's result, ember's). For libraries that patch the ``torch`` they import
    (pyro, tensordict's vmap steps, ultralytics' ``torch.save``): their PyTorch side must not
    run in the test process, whose PyTorch the other tests compare against."""
    path = os.path.join(TESTS, script)
    sides = {"torch": [sys.executable, path],
             "ember": [sys.executable, "-m", "ember.as_torch", path]}
    procs = {lib: subprocess.Popen([*cmd, lib, str(directory), ",".join(names)],
                                   cwd=os.path.dirname(TESTS), stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE, text=True)
             for lib, cmd in sides.items()}
    for lib, proc in procs.items():
        _, err = proc.communicate(timeout=timeout)
        assert proc.returncode == 0, f"{lib}:\n{err[-4000:]}"
    return {n: tuple(dict(np.load(os.path.join(directory, f"{n}_{lib}.npz")))
                     for lib in ("torch", "ember")) for n in names}


def libraries_installed(names):
    """Whether every module of ``names`` is installed, found without importing it (some patch
    the torch that the tests compare against on import)."""
    return all(importlib.util.find_spec(n) is not None for n in names)


def installed_cases_beside_ember(script, directory, libraries):
    """:func:`pytorch_beside_ember` for the cases of ``tests/<script>`` whose libraries
    (``libraries``: case -> module names) are installed; the test is skipped when none is."""
    import pytest
    pytest.importorskip("torch")
    names = [n for n, mods in libraries.items() if libraries_installed(mods)]
    if not names:
        pytest.skip("none of the libraries is installed")
    return pytorch_beside_ember(script, directory, names)


def assert_saved_arrays_match(mine, theirs, rtol, atol, finite_scale=False):
    """The library-program tests' verdict on ember's saved arrays (``mine``) beside PyTorch's
    (``theirs``): the same keys, dtypes and shapes; integers, bools and strings equal; floats
    within ``rtol`` and ``atol`` (a number, or a function of the key) times the reference's
    largest magnitude, at least 1 (of its finite values with ``finite_scale``). Programs of a
    few float32 steps: the same draws and steps, rounding apart."""
    assert sorted(mine) == sorted(theirs)
    for key, ref in theirs.items():
        assert mine[key].dtype == ref.dtype and mine[key].shape == ref.shape, key
        if ref.dtype.kind in "biuUS":
            np.testing.assert_array_equal(mine[key], ref, err_msg=key)
            continue
        values = ref[np.isfinite(ref)] if finite_scale else ref
        scale = max(float(np.abs(values).max(initial=0.0)), 1.0)
        tol = atol(key) if callable(atol) else atol
        np.testing.assert_allclose(mine[key], ref, rtol=rtol, atol=tol * scale, err_msg=key)


def report_line(request, line):
    """Print a module's summary line under pytest's output, with or without -s."""
    plugins = request.config.pluginmanager
    tr, capture = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
    if tr is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            tr.write_line("")
            tr.write_line(line)
