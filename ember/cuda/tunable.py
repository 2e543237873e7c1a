"""``ember.cuda.tunable``: TunableOp for CUDA matrix products, PyTorch's API and results file.

With TunableOp enabled, every ``mm``/``bmm``/``addmm``/``baddbmm`` on CUDA asks the results
table for the solution of its GEMM — keyed as PyTorch keys it: ``GemmTunableOp_float_NN`` (dtype
and which operands are transposed) and ``nn_<m>_<n>_<k>`` (``..._B_<batch>`` for batched ones).
A GEMM without an entry is tuned when tuning is enabled: each candidate runs at least once and up
to ``max_tuning_iterations`` times or ``max_tuning_duration`` milliseconds, whichever ends first;
a candidate whose result differs from the ``Default`` solution's beyond the numerical-check
tolerances, or that fails, is dropped; the fastest remaining one is recorded. Candidates are
``Default`` (the array module's matmul: cuBLAS's default algorithm on a GPU) and, on a GPU,
``Gemm_Cublas_<algo>`` — ``cublasGemmEx`` with each algorithm id ``CUBLAS_GEMM_DEFAULT_TENSOR_OP``
and 0…23 (dense, 2-d contiguous operands).

The results file is PyTorch's CSV: ``Validator,<name>,<value>`` lines, then one line per GEMM:
``op,params,solution,milliseconds``. ``Validator`` lines name the ember version, the CUDA runtime,
cuBLAS and the device; a file whose validators differ is refused with a warning (its tunings were
made under other software or hardware). The file is read at the first tunable call and written
when tuning found something new (at exit, or by ``write_file``). The ``PYTORCH_TUNABLEOP_*``
environment variables (``ENABLED``, ``TUNING``, ``RECORD_UNTUNED``, ``FILENAME``,
``MAX_TUNING_DURATION_MS``, ``MAX_TUNING_ITERATIONS``, ``NUMERICAL_CHECK``, ``VERBOSE``) take
precedence over the calls, as in PyTorch.
"""
import atexit
import os
import time
import warnings

import numpy as np

__all__ = ["enable", "is_enabled", "tuning_enable", "tuning_is_enabled", "record_untuned_enable",
           "record_untuned_is_enabled", "set_max_tuning_duration", "get_max_tuning_duration",
           "set_max_tuning_iterations", "get_max_tuning_iterations", "set_filename",
           "get_filename", "get_results", "get_validators", "write_file_on_exit", "write_file",
           "read_file", "set_numerical_check_tolerances", "tune_gemm_in_file"]


def _env_flag(name):
    v = os.environ.get(name)
    return None if v is None else v not in ("0", "", "false", "False")


def _env_int(name):
    v = os.environ.get(name)
    return None if v is None else int(v)


class _TuningContext:
    def __init__(self):
        self.enabled = False
        self.tuning = True
        self.record_untuned = False
        self.max_duration_ms = 30
        self.max_iterations = 100
        self.filename = "tunableop_results.csv"
        self.insert_device_ordinal = True
        self.write_on_exit = True
        self.numerical_check = (True, 1e-5, 1e-5)
        self.results = {}  # (op, params) -> (solution, ms)
        self.untuned = []
        self.loaded = False
        self.dirty = False


_ctx = _TuningContext()


def _setting(env, value):
    return value if env is None else env


# -- the switches (environment variables win) ---------------------------------------------------

def enable(val=True):
    """The on/off switch of every TunableOp."""
    _ctx.enabled = bool(val)


def is_enabled():
    return _setting(_env_flag("PYTORCH_TUNABLEOP_ENABLED"), _ctx.enabled)


def tuning_enable(val=True):
    """Tune GEMMs that have no entry yet (else they run the Default solution)."""
    _ctx.tuning = bool(val)


def tuning_is_enabled():
    return _setting(_env_flag("PYTORCH_TUNABLEOP_TUNING"), _ctx.tuning)


def record_untuned_enable(val=True):
    """Write the GEMMs without an entry to ``tunableop_untuned<device>.csv`` (offline tuning)."""
    _ctx.record_untuned = bool(val)


def record_untuned_is_enabled():
    return _setting(_env_flag("PYTORCH_TUNABLEOP_RECORD_UNTUNED"), _ctx.record_untuned)


def set_max_tuning_duration(duration):
    """Milliseconds to spend on each candidate (at least one run)."""
    _ctx.max_duration_ms = int(duration)


def get_max_tuning_duration():
    return _setting(_env_int("PYTORCH_TUNABLEOP_MAX_TUNING_DURATION_MS"), _ctx.max_duration_ms)


def set_max_tuning_iterations(iterations):
    """Runs of each candidate at most (at least one)."""
    _ctx.max_iterations = int(iterations)


def get_max_tuning_iterations():
    return _setting(_env_int("PYTORCH_TUNABLEOP_MAX_TUNING_ITERATIONS"), _ctx.max_iterations)


def set_numerical_check_tolerances(enable, atol=1e-5, rtol=1e-5):
    """Whether candidates are checked against Default, and the tolerances."""
    _ctx.numerical_check = (bool(enable), float(atol), float(rtol))


def set_filename(filename, insert_device_ordinal=False):
    _ctx.filename = filename
    _ctx.insert_device_ordinal = insert_device_ordinal


def get_filename():
    name = os.environ.get("PYTORCH_TUNABLEOP_FILENAME") or _ctx.filename
    if "%d" in name or _ctx.insert_device_ordinal:
        from . import current_device
        dev = current_device() if _device_ready() else 0
        if "%d" in name:
            return name.replace("%d", str(dev))
        base, dot, ext = name.rpartition(".")
        return f"{base}{dev}.{ext}" if dot else f"{name}{dev}"
    return name


def write_file_on_exit(val):
    _ctx.write_on_exit = bool(val)


def _device_ready():
    from . import is_initialized
    return is_initialized()


# -- validators and the results file ------------------------------------------------------------

def get_validators():
    """(name, value) pairs a results file must match: ember's version, the CUDA runtime, cuBLAS,
    the device."""
    import ember
    from . import _lazy_init, current_device, get_device_name
    rt = _lazy_init()
    if rt.simulated:
        cuda, cublas = "simulated", "none"
    else:
        import cupy
        cuda = str(cupy.cuda.runtime.runtimeGetVersion())
        from cupy_backends.cuda.libs import cublas as _cublas
        cublas = str(_cublas.getVersion(cupy.cuda.device.get_cublas_handle()))
    return (("PT_VERSION", ember.__version__), ("CUDA_VERSION", cuda),
            ("CUBLAS_VERSION", cublas), ("GPU_NAME", get_device_name(current_device())))


def get_results():
    """The table: (op, params, solution, milliseconds) per tuned GEMM."""
    _ensure_loaded()
    return tuple((op, params, sol, ms) for (op, params), (sol, ms) in _ctx.results.items())


def read_file(filename=None):
    """Load a results file into the table; False (with a warning) when it is missing, malformed
    or made under other validators."""
    filename = filename or get_filename()
    if not os.path.exists(filename):
        return False
    validators, rows = {}, {}
    with open(filename) as f:
        for n, line in enumerate(f, 1):
            fields = line.rstrip("\n").split(",")
            if not line.strip():
                continue
            if fields[0] == "Validator" and len(fields) == 3:
                validators[fields[1]] = fields[2]
            elif len(fields) in (3, 4):
                ms = float(fields[3]) if len(fields) == 4 and fields[3] else 0.0
                rows[(fields[0], fields[1])] = (fields[2], ms)
            else:
                warnings.warn(f"TunableOp: {filename}:{n}: not a results line: {line.strip()!r}")
                return False
    mine = dict(get_validators())
    for key, value in mine.items():
        if validators.get(key) != value:
            warnings.warn(f"TunableOp: {filename} was tuned for {key}={validators.get(key)!r}, "
                          f"this process has {key}={value!r}: its results are not used")
            return False
    _ctx.results.update(rows)
    return True


def write_file(filename=None):
    """Write the validators and every result to ``filename`` (default: ``get_filename()``)."""
    filename = filename or get_filename()
    lines = [f"Validator,{k},{v}" for k, v in get_validators()]
    lines += [f"{op},{params},{sol},{ms:.6g}" for (op, params), (sol, ms) in
              _ctx.results.items()]
    tmp = f"{filename}.tmp{os.getpid()}"
    with open(tmp, "w") as f:  # then renamed: a reader never sees half a file
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, filename)
    _ctx.dirty = False
    return True


def _ensure_loaded():
    if not _ctx.loaded:
        _ctx.loaded = True
        read_file()


@atexit.register
def _write_at_exit():
    if _ctx.dirty and _ctx.write_on_exit and _device_ready():
        try:
            write_file()
        except OSError as e:  # a read-only directory must not fail the program's exit
            warnings.warn(f"TunableOp: could not write {get_filename()}: {e}")


# -- the tunable GEMM -----------------------------------------------------------------------------

_DTYPE_NAMES = {"float32": "float", "float64": "double", "float16": "Half",
                "bfloat16": "BFloat16"}


def _trans(t):
    """'T' for an operand that is a transposed contiguous matrix (batch), else 'N'."""
    s = t._stride
    return "T" if len(s) >= 2 and s[-2] == 1 and s[-1] != 1 else "N"


def gemm_key(a, b):
    """(op, params) of ``a @ b`` in PyTorch's naming."""
    tt = _trans(a) + _trans(b)
    m, k = a._size[-2], a._size[-1]
    n = b._size[-1]
    dt = _DTYPE_NAMES.get(a._dtype.name, a._dtype.name)
    if len(a._size) == 3:
        return (f"GemmStridedBatchedTunableOp_{dt}_{tt}",
                f"{tt.lower()}_{m}_{n}_{k}_B_{a._size[0]}")
    return f"GemmTunableOp_{dt}_{tt}", f"{tt.lower()}_{m}_{n}_{k}"


def _cublas_candidates(xp, a, b):
    """``Gemm_Cublas_<algo>`` solutions for 2-d contiguous operands on a GPU."""
    if xp.__name__ != "cupy" or a.ndim != 2 or not (a.flags.c_contiguous and
                                                      b.flags.c_contiguous):
        return {}
    from cupy_backends.cuda.libs import cublas
    types = {np.dtype(np.float32): (0, 68), np.dtype(np.float64): (1, 70),
             np.dtype(np.float16): (2, 68)}  # CUDA_R_* and CUBLAS_COMPUTE_32F/64F
    if a.dtype not in types:
        return {}
    data_type, compute = types[a.dtype]
    m, k = a.shape
    n = b.shape[1]
    scalar = np.float64 if a.dtype == np.float64 else np.float32

    def solution(algo):
        def run(a_, b_):
            # row-major C = A @ B is column-major C^T = B^T A^T: cuBLAS sees (n×k)(k×m)
            c = xp.empty((m, n), a_.dtype)
            one, zero = np.ones(1, scalar), np.zeros(1, scalar)
            cublas.gemmEx(xp.cuda.device.get_cublas_handle(), 0, 0, n, m, k,
                          one.ctypes.data, b_.data.ptr, data_type, n, a_.data.ptr, data_type, k,
                          zero.ctypes.data, c.data.ptr, data_type, n, compute, algo)
            return c
        return run
    return {f"Gemm_Cublas_{algo}": solution(algo) for algo in [99] + list(range(24))}


def _time(fn, a, b, sync):
    iters, budget = max(1, get_max_tuning_iterations()), get_max_tuning_duration() / 1e3
    fn(a, b)  # warm-up
    sync()
    start, runs = time.perf_counter(), 0
    while runs < iters:
        fn(a, b)
        runs += 1
        sync()
        if time.perf_counter() - start >= budget:
            break
    return (time.perf_counter() - start) / runs * 1e3


def matmul(xp, a_t, b_t, a, b, sync):
    """``a @ b`` (arrays of tensors ``a_t``, ``b_t``) through TunableOp: the recorded solution,
    or a tuning run, or Default."""
    _ensure_loaded()
    key = gemm_key(a_t, b_t)
    default = xp.matmul
    entry = _ctx.results.get(key)
    if entry is None and tuning_is_enabled():
        entry = _tune(xp, key, a, b, sync)
    elif entry is None and record_untuned_is_enabled():
        _record_untuned(key)
    if entry is None or entry[0] == "Default":
        return default(a, b)
    solution = _cublas_candidates(xp, a, b).get(entry[0])
    return solution(a, b) if solution is not None else default(a, b)


def _tune(xp, key, a, b, sync):
    check, atol, rtol = _ctx.numerical_check
    want = xp.matmul(a, b)
    best = ("Default", _time(xp.matmul, a, b, sync))
    for name, fn in _cublas_candidates(xp, a, b).items():
        try:
            got = fn(a, b)
            sync()
            if check and not bool(xp.allclose(got, want, atol=atol, rtol=rtol)):
                continue  # a wrong answer is not a solution
            ms = _time(fn, a, b, sync)
        except Exception:  # noqa: BLE001  (an algorithm this GEMM does not support)
            continue
        if ms < best[1]:
            best = (name, ms)
    if _env_flag("PYTORCH_TUNABLEOP_VERBOSE"):
        print(f"TunableOp: {key[0]},{key[1]} -> {best[0]} ({best[1]:.4f} ms)")
    _ctx.results[key] = best
    _ctx.dirty = True
    return best


def _record_untuned(key):
    from . import current_device
    with open(f"tunableop_untuned{current_device()}.csv", "a") as f:
        f.write(f"{key[0]},{key[1]}\n")


def tune_gemm_in_file(filename):
    """Tune every GEMM line of an untuned file (offline tuning), with random operands."""
    import ember
    if not is_enabled():
        raise AssertionError("TunableOp is not enabled")
    if not tuning_is_enabled():
        raise AssertionError("Tuning is not enabled")
    names = {v: k for k, v in _DTYPE_NAMES.items()}
    with open(filename) as f:
        for line in f:
            if not line.startswith("Gemm"):
                continue
            op, params = line.strip().split(",")[:2]
            dtype = getattr(ember, names[op.split("_")[1]])
            fields = params.split("_")
            tt, (m, n, k) = fields[0].upper(), map(int, fields[1:4])
            batch = (int(fields[5]),) if "_B_" in params else ()
            a = ember.randn(*batch, k, m, device="cuda").transpose(-1, -2) if tt[0] == "T" \
                else ember.randn(*batch, m, k, device="cuda")
            b = ember.randn(*batch, n, k, device="cuda").transpose(-1, -2) if tt[1] == "T" \
                else ember.randn(*batch, k, n, device="cuda")
            ember.matmul(a.to(dtype), b.to(dtype))
