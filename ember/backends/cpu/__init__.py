"""``ember.backends.cpu``: the vector instruction set of this CPU, as PyTorch's dispatch stubs
name it (``get_cpu_capability``)."""
import functools
import os
import platform
import warnings

__all__ = ["get_cpu_capability"]

_capability = None


def _cpu_flags():
    """The feature words of /proc/cpuinfo ("flags" on x86, "Features" on ARM); empty when the
    file cannot be read (not Linux)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return set(value.split())
    except OSError:
        pass
    return set()


def _sve_length_bits():
    """The SVE vector length in bits (Linux exposes it in bytes), or 0 without SVE."""
    try:
        with open("/proc/sys/abi/sve_default_vector_length") as f:
            return int(f.read().strip()) * 8
    except (OSError, ValueError):
        return 0


def _arch():
    """(machine, is x86, is ARM)."""
    machine = platform.machine().lower()
    return machine, machine in ("x86_64", "amd64", "i386", "i686"), machine in ("aarch64", "arm64")


def _compute():
    """PyTorch's ``compute_cpu_capability`` (aten/src/ATen/native/DispatchStub.cpp): an
    ``ATEN_CPU_CAPABILITY`` of a level this architecture has kernels for wins (PyTorch does not
    check the hardware then), an unknown value is ignored with a warning; otherwise the CPU's
    features decide."""
    machine, x86, arm = _arch()
    env = os.environ.get("ATEN_CPU_CAPABILITY")
    if env is not None:
        if x86 and env == "avx512":
            return "AVX512"
        if x86 and env == "avx2":
            return "AVX2"
        if arm and env == "sve256":
            if _sve_length_bits() == 256:
                return "SVE256"
            warnings.warn("SVE256 capability not available on hardware. Falling back to DEFAULT")
            return "DEFAULT"
        if machine.startswith("ppc") and env == "vsx":
            return "VSX"
        if machine == "s390x" and env == "zvector":
            return "ZVECTOR"
        if env == "default":
            return "DEFAULT"
        warnings.warn(f"ignoring invalid value for ATEN_CPU_CAPABILITY: {env}")
    return _hardware_capability()


@functools.lru_cache(maxsize=None)
def _hardware_capability():
    """The best level this CPU's features allow (what no ``ATEN_CPU_CAPABILITY`` gives)."""
    machine, x86, arm = _arch()
    flags = _cpu_flags()
    if x86:
        if {"avx512vl", "avx512bw", "avx512dq", "fma"} <= flags:
            return "AVX512"
        if {"avx2", "fma"} <= flags:
            return "AVX2"
    elif arm:
        if "sve" in flags and _sve_length_bits() == 256:
            return "SVE256"
    elif machine.startswith("ppc") and "vsx" in flags:
        return "VSX"
    elif machine == "s390x":
        return "ZVECTOR"
    return "DEFAULT"


def get_cpu_capability() -> str:
    r"""Return cpu capability as a string value.

    Possible values: "DEFAULT", "VSX", "ZVECTOR", "AVX2", "AVX512", "SVE256". Computed once per
    process, as PyTorch does (``ATEN_CPU_CAPABILITY`` is read then)."""
    global _capability
    if _capability is None:
        _capability = _compute()
    return _capability
