"""``ember.backends.mkl``: whether the BLAS under ember's matmuls (NumPy's) is Intel MKL, and
MKL's on-demand verbose mode (``MKL_VERBOSE`` through ``mkl_verbose``) when it is."""
import ctypes

_mkl_lib = []  # [ctypes library or None], found once


def _find_mkl():
    """The loaded MKL runtime library NumPy uses, or None (found in this process's maps)."""
    if not _mkl_lib:
        lib = None
        try:
            import numpy.linalg  # noqa: F401  (loads NumPy's BLAS)
            with open("/proc/self/maps") as f:
                paths = sorted({line.split()[-1] for line in f
                                if "libmkl_rt" in line or "libmkl_core" in line})
            for path in paths:
                try:
                    cand = ctypes.CDLL(path)
                except OSError:
                    continue
                if hasattr(cand, "mkl_verbose") or hasattr(cand, "MKL_Verbose"):
                    lib = cand
                    break
        except OSError:  # no /proc: not Linux
            pass
        if lib is None:
            lib = _numpy_config_says_mkl()
        _mkl_lib.append(lib)
    return _mkl_lib[0]


def _numpy_config_says_mkl():
    """True when NumPy's build configuration names MKL as its BLAS (no library handle then)."""
    try:
        import numpy as np
        cfg = np.show_config(mode="dicts")
        name = str(cfg.get("Build Dependencies", {}).get("blas", {}).get("name", ""))
        return True if "mkl" in name.lower() else None
    except Exception:  # older NumPy without mode="dicts"
        return None


def is_available():
    r"""Return whether ember's BLAS (NumPy's) is MKL."""
    return _find_mkl() is not None


VERBOSE_OFF = 0
VERBOSE_ON = 1


def _set_verbose(level):
    lib = _find_mkl()
    fn = getattr(lib, "mkl_verbose", None) if not isinstance(lib, bool) else None
    if fn is None:
        return False
    fn.argtypes = [ctypes.c_int]
    fn.restype = ctypes.c_int
    fn(int(level))
    return True


class verbose:
    """On-demand oneMKL verbosing: ``with ember.backends.mkl.verbose(VERBOSE_ON): ...`` turns
    MKL's per-call log on for the block. Like PyTorch without MKL, entering with VERBOSE_ON
    fails when MKL is not the BLAS."""

    def __init__(self, enable):
        self.enable = enable

    def __enter__(self):
        if self.enable == VERBOSE_OFF:
            return
        st = _set_verbose(self.enable)
        if not st:
            raise AssertionError(
                "Failed to set MKL into verbose mode. Please consider to disable this verbose "
                "scope.")
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _set_verbose(VERBOSE_OFF)
        return False
