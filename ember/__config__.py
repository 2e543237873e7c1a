"""``torch.__config__``: how this ember is built and how it runs in parallel, as text."""
import os
import platform

import numpy as np

__all__ = ["show", "parallel_info"]


def show():
    """The build's description: Python, NumPy and its BLAS, the C compiler ember's generated
    kernels use, and the CPU capability they target."""
    import ember
    from . import backends
    from ._inductor import codecache
    try:
        cc = codecache.compiler_features()
        compiler = f"{cc['path']} ({cc['version'].splitlines()[0]})"
    except Exception as e:  # no compiler: the kernels stay NumPy's
        compiler = f"none ({type(e).__name__})"
    blas = np.show_config(mode="dicts").get("Build Dependencies", {}).get("blas", {})
    lines = ["ember built with:",
             f"  - Python {platform.python_version()}",
             f"  - NumPy {np.__version__}",
             f"  - BLAS: {blas.get('name', 'unknown')} {blas.get('version', '')}".rstrip(),
             f"  - C compiler for generated kernels: {compiler}",
             f"  - CPU capability usage: {backends.cpu.get_cpu_capability()}",
             f"  - Build settings: VERSION={ember.__version__}"]
    return "\n".join(lines) + "\n"


def parallel_info():
    """The thread counts ember's kernels use, and the variables that set them."""
    import ember
    lines = ["ATen/Parallel:",
             f"\tat::get_num_threads() : {ember.get_num_threads()}",
             f"\tat::get_num_interop_threads() : {ember.get_num_interop_threads()}",
             f"std::thread::hardware_concurrency() : {os.cpu_count()}",
             "Environment variables:"]
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        lines.append(f"\t{var} : {os.environ.get(var, '[not set]')}")
    lines.append("ATen parallel backend: OpenMP")
    return "\n".join(lines) + "\n"
