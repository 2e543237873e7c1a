"""OpenBLAS's parallel calls on the OpenMP pool (ember._inductor.blas_threads): installed when
codecache first loads a module, parallel products counted there and equal to one-thread ones,
products from several Python threads at once kept apart, and a forked child's products run
without the parent's pool."""
import ctypes
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import ember
from ember._core import blas
from ember._inductor import blas_threads, codecache


def _callback_module():
    if blas.openblas_function("set_threads_callback_function") is None:
        pytest.skip("NumPy's BLAS is not an OpenBLAS with a thread callback (0.3.27+)")
    try:
        if not codecache.compiler_features().get("openmp"):
            pytest.skip("the C compiler has no OpenMP")
    except Exception as e:
        pytest.skip(f"no C compiler: {e}")
    module = blas_threads.install()
    assert module is not None
    return module


@pytest.fixture
def two_threads():
    before = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(before)


def _operands(seed, n=512):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n),
                                                                             dtype=np.float32)


def test_parallel_products_run_on_the_openmp_pool_with_openblas_own_bits(two_threads):
    module = _callback_module()
    a, b = _operands(0)
    before = module.parallel_call_count()
    ours = blas.matmul(a, b)  # 512^3 multiply-adds: above SMALL_WORK, so split over the pool
    assert module.parallel_call_count() > before
    setter = blas.openblas_function("set_threads_callback_function")
    setter(None)  # OpenBLAS's own pool for one product: the same jobs on other threads
    try:
        own = blas.matmul(a, b)
    finally:
        module.install(ctypes.cast(setter, ctypes.c_void_p).value)
    assert np.array_equal(ours, own)
    assert np.allclose(ours, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)


def test_products_from_several_python_threads_at_once(two_threads):
    _callback_module()
    pairs = [_operands(seed) for seed in range(4)]
    expected = [a @ b for a, b in pairs]  # one at a time, on the pool
    results = [None] * len(pairs)
    start = threading.Barrier(len(pairs), timeout=30)

    def work(i):
        start.wait()
        for _ in range(5):
            results[i] = np.matmul(*pairs[i])
            assert np.array_equal(results[i], expected[i])
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(pairs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert all(np.array_equal(r, e) for r, e in zip(results, expected))


# the start of a script whose products use the callback (two threads)
_INSTALLED = """
import numpy as np
import ember
from ember._core import blas
from ember._inductor import blas_threads
ember.set_num_threads(2)
module = blas_threads.install()
"""


def _run(code, installed=False, **env):
    """Run ``code`` in a fresh interpreter; ``installed``: after ``_INSTALLED``."""
    script = (_INSTALLED if installed else "") + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.getcwd(), **env})


def test_installed_when_the_first_generated_kernel_loads():
    _callback_module()
    proc = _run("""
        import ember
        from ember._inductor import blas_threads
        assert not blas_threads._state["tried"]
        ember.set_num_threads(2)
        x = ember.randn(1 << 16)
        (x.exp() + 1).sum()  # 64k elements: a generated eager kernel
        assert blas_threads._state["module"] is not None
        print("ok")
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_a_forked_child_runs_its_products_without_the_parents_pool():
    _callback_module()
    proc = _run(installed=True, code="""
        import os
        import signal
        a = np.ones((512, 512), np.float32)
        assert (blas.matmul(a, a) == 512).all()  # the parent's OpenMP pool now has threads
        pid = os.fork()
        if pid == 0:
            signal.alarm(100)  # a hung child must not outlive the test
            calls = module.parallel_call_count()
            ok = (blas.matmul(a, a) == 512).all() and module.parallel_call_count() == calls
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
    """)
    assert proc.returncode == 0 and proc.stdout.strip() == "0", proc.stderr


def test_without_an_openmp_team_each_job_gets_a_thread():
    # OMP_DYNAMIC lets OpenMP hand out fewer threads than asked for; a GEMM's jobs wait for
    # each other, so they run on threads of their own (and are not counted as pool calls)
    _callback_module()
    proc = _run(installed=True, code="""
        rng = np.random.default_rng(0)
        a, b = rng.standard_normal((2, 512, 512), dtype=np.float32)
        for _ in range(3):
            assert np.allclose(blas.matmul(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
        print(module.parallel_call_count())
    """, OMP_DYNAMIC="true")
    assert proc.returncode == 0 and proc.stdout.strip() == "0", proc.stderr
