"""``python -m ember.utils.collect_env``: the environment report to paste into a bug report, in
``torch.utils.collect_env``'s format: the library's version and build, the OS, compilers,
Python, CUDA, the CPU and the versions of the relevant packages. The "PyTorch version" line is
ember's version (``ember.__version__``; PyTorch's API release while ``ember.as_torch`` is
installed)."""
import locale
import os
import platform as _platform
import re
import subprocess
import sys
from collections import namedtuple

try:
    import ember
    TORCH_AVAILABLE = True
except (ImportError, NameError, AttributeError, OSError):
    TORCH_AVAILABLE = False

SystemEnv = namedtuple("SystemEnv", [
    "torch_version", "is_debug_build", "cuda_compiled_version", "gcc_version", "clang_version",
    "cmake_version", "os", "libc_version", "python_version", "python_platform",
    "is_cuda_available", "cuda_runtime_version", "cuda_module_loading", "nvidia_driver_version",
    "nvidia_gpu_models", "cudnn_version", "is_xpu_available", "pip_version", "pip_packages",
    "conda_packages", "hip_compiled_version", "hip_runtime_version", "miopen_runtime_version",
    "caching_allocator_config", "is_xnnpack_available", "cpu_info"])

# package names worth listing (PyTorch's lists, and ember's own dependencies)
COMMON_PATTERNS = ["torch", "numpy", "triton", "optree", "ember", "scipy", "ml_dtypes",
                   "cupy", "sympy"]
NVIDIA_PATTERNS = ["cuda-cudart", "cuda-cupti", "cuda-libraries", "cuda-opencl", "cuda-nvrtc",
                   "cuda-runtime", "cublas", "cudnn", "cufft", "curand", "cusolver", "cusparse",
                   "nccl", "nvjitlink", "nvtx"]
ONEAPI_PATTERNS = ["dpcpp-cpp-rt", "intel-cmplr-lib-rt", "intel-cmplr-lib-ur",
                   "intel-cmplr-lic-rt", "intel-opencl-rt", "intel-sycl-rt", "mkl",
                   "onemkl-sycl-blas", "onemkl-sycl-dft", "onemkl-sycl-lapack",
                   "onemkl-sycl-rng", "onemkl-sycl-sparse", "intel-openmp", "tbb", "impi-rt",
                   "impi-devel", "oneccl", "oneccl-devel", "intel-pti", "umf", "tcmlib"]
CONDA_PATTERNS = ["cudatoolkit", "soumith", "mkl", "magma"]
PIP_PATTERNS = ["mypy", "flake8", "onnx"]


def run(command):
    """``(return code, stdout, stderr)`` of a command (a string runs in the shell)."""
    p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         shell=type(command) is str)
    raw_output, raw_err = p.communicate()
    enc = "oem" if get_platform() == "win32" else locale.getpreferredencoding()
    return p.returncode, raw_output.decode(enc).strip(), raw_err.decode(enc).strip()


def run_and_read_all(run_lambda, command):
    """The command's whole output, None if it failed."""
    rc, out, _ = run_lambda(command)
    return None if rc != 0 else out


def run_and_parse_first_match(run_lambda, command, regex):
    """The first group of ``regex``'s first match in the command's output (None if the
    command failed or nothing matched)."""
    rc, out, _ = run_lambda(command)
    if rc != 0:
        return None
    match = re.search(regex, out)
    return None if match is None else match.group(1)


def run_and_return_first_line(run_lambda, command):
    rc, out, _ = run_lambda(command)
    return None if rc != 0 else out.split("\n")[0]


def get_conda_packages(run_lambda, patterns=None):
    if patterns is None:
        patterns = CONDA_PATTERNS + COMMON_PATTERNS + NVIDIA_PATTERNS + ONEAPI_PATTERNS
    out = run_and_read_all(run_lambda, "{} list".format(os.environ.get("CONDA_EXE", "conda")))
    if out is None:
        return out
    return "\n".join(line for line in out.splitlines()
                     if not line.startswith("#") and any(name in line for name in patterns))


def get_gcc_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "gcc --version", r"gcc (.*)")


def get_clang_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "clang --version", r"clang version (.*)")


def get_cmake_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "cmake --version", r"cmake (.*)")


def get_nvidia_smi():
    return "nvidia-smi"


def get_nvidia_driver_version(run_lambda):
    if get_platform() == "darwin":
        return run_and_parse_first_match(run_lambda, "kextstat | grep -i cuda",
                                         r"com[.]nvidia[.]CUDA [(](.*?)[)]")
    return run_and_parse_first_match(run_lambda, get_nvidia_smi(), r"Driver Version: (.*?) ")


def get_gpu_info(run_lambda):
    if get_platform() == "darwin":
        if TORCH_AVAILABLE and ember.cuda.is_available():
            return ember.cuda.get_device_name(None)
        return None
    rc, out, _ = run_lambda(get_nvidia_smi() + " -L")
    if rc != 0:
        return None
    return re.sub(re.compile(r" \(UUID: .+?\)"), "", out)  # (GPUs anonymized)


def get_running_cuda_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "nvcc --version", r"release .+ V(.*)")


def get_cudnn_version(run_lambda):
    """The libcudnn libraries found (it is hard to tell which one is used)."""
    if get_platform() == "darwin":
        cudnn_cmd = "ls /usr/local/cuda/lib/libcudnn*"
    else:
        cudnn_cmd = 'ldconfig -p | grep libcudnn | rev | cut -d" " -f1 | rev'
    rc, out, _ = run_lambda(cudnn_cmd)
    if len(out) == 0 or (rc != 1 and rc != 0):
        lib = os.environ.get("CUDNN_LIBRARY")
        if lib is not None and os.path.isfile(lib):
            return os.path.realpath(lib)
        return None
    files = sorted({os.path.realpath(fn) for fn in out.split("\n")
                    if os.path.isfile(os.path.realpath(fn))})
    if not files:
        return None
    if len(files) == 1:
        return files[0]
    return "Probably one of the following:\n{}".format("\n".join(files))


def get_cpu_info(run_lambda):
    rc, out, err = 0, "", ""
    if get_platform() == "linux":
        rc, out, err = run_lambda("lscpu")
    elif get_platform() == "darwin":
        rc, out, err = run_lambda("sysctl -n machdep.cpu.brand_string")
    else:
        out = _platform.processor()
    return out if rc == 0 else err


def get_platform():
    for name in ("linux", "win32", "cygwin", "darwin"):
        if sys.platform.startswith(name):
            return name
    return sys.platform


def get_mac_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "sw_vers -productVersion", r"(.*)")


def get_lsb_version(run_lambda):
    return run_and_parse_first_match(run_lambda, "lsb_release -a", r"Description:\t(.*)")


def check_release_file(run_lambda):
    return run_and_parse_first_match(run_lambda, "cat /etc/*-release", r'PRETTY_NAME="(.*)"')


def get_os(run_lambda):
    platform = get_platform()
    machine = _platform.machine()
    if platform in ("win32", "cygwin"):
        return f"{_platform.system()} {_platform.release()} ({_platform.version()} {machine})"
    if platform == "darwin":
        version = get_mac_version(run_lambda)
        return None if version is None else "macOS {} ({})".format(version, machine)
    if platform == "linux":
        desc = get_lsb_version(run_lambda) or check_release_file(run_lambda)
        return "{} ({})".format(desc if desc is not None else platform, machine)
    return platform


def get_python_platform():
    return _platform.platform()


def get_libc_version():
    if get_platform() != "linux":
        return "N/A"
    return "-".join(_platform.libc_ver())


def get_pip_packages(run_lambda, patterns=None):
    """``pip list``'s lines naming a relevant package, and the pip's name."""
    if patterns is None:
        patterns = PIP_PATTERNS + COMMON_PATTERNS + NVIDIA_PATTERNS + ONEAPI_PATTERNS
    pip_version = "pip3" if sys.version_info.major == 3 else "pip"
    os.environ["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    out = run_and_read_all(run_lambda, [sys.executable, "-mpip", "list", "--format=freeze"])
    if out is None:
        return pip_version, out
    return pip_version, "\n".join(line for line in out.splitlines()
                                  if any(name in line for name in patterns))


def get_cachingallocator_config():
    """The caching allocator's settings from the environment."""
    return {var: os.environ.get(var)
            for var in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF",
                        "PYTORCH_ALLOC_CONF")
            if os.environ.get(var)}


def get_cuda_module_loading_config():
    if TORCH_AVAILABLE and ember.cuda.is_available():
        ember.cuda.init()
        return os.environ.get("CUDA_MODULE_LOADING", "")
    return "N/A"


def is_xnnpack_available():
    # (ember has no XNNPACK backend)
    return str(False) if TORCH_AVAILABLE else "N/A"


def get_env_info():
    """The environment as a :data:`SystemEnv`."""
    run_lambda = run
    pip_version, pip_list_output = get_pip_packages(run_lambda)
    if TORCH_AVAILABLE:
        version_str = ember.__version__
        debug_mode_str = str(ember.version.debug)
        cuda_available_str = str(ember.cuda.is_available())
        cuda_version_str = ember.version.cuda
        xpu_available_str = str(ember.xpu.is_available())
    else:
        version_str = debug_mode_str = cuda_available_str = cuda_version_str = \
            xpu_available_str = "N/A"
    # (ember builds against no HIP)
    hip_compiled_version = hip_runtime_version = miopen_runtime_version = "N/A"
    return SystemEnv(
        torch_version=version_str,
        is_debug_build=debug_mode_str,
        python_version="{} ({}-bit runtime)".format(sys.version.replace("\n", " "),
                                                    sys.maxsize.bit_length() + 1),
        python_platform=get_python_platform(),
        is_cuda_available=cuda_available_str,
        cuda_compiled_version=cuda_version_str,
        cuda_runtime_version=get_running_cuda_version(run_lambda),
        cuda_module_loading=get_cuda_module_loading_config(),
        nvidia_gpu_models=get_gpu_info(run_lambda),
        nvidia_driver_version=get_nvidia_driver_version(run_lambda),
        cudnn_version=get_cudnn_version(run_lambda),
        is_xpu_available=xpu_available_str,
        hip_compiled_version=hip_compiled_version,
        hip_runtime_version=hip_runtime_version,
        miopen_runtime_version=miopen_runtime_version,
        pip_version=pip_version,
        pip_packages=pip_list_output,
        conda_packages=get_conda_packages(run_lambda),
        os=get_os(run_lambda),
        libc_version=get_libc_version(),
        gcc_version=get_gcc_version(run_lambda),
        clang_version=get_clang_version(run_lambda),
        cmake_version=get_cmake_version(run_lambda),
        caching_allocator_config=get_cachingallocator_config(),
        is_xnnpack_available=is_xnnpack_available(),
        cpu_info=get_cpu_info(run_lambda))


env_info_fmt = """
PyTorch version: {torch_version}
Is debug build: {is_debug_build}
CUDA used to build PyTorch: {cuda_compiled_version}
ROCM used to build PyTorch: {hip_compiled_version}

OS: {os}
GCC version: {gcc_version}
Clang version: {clang_version}
CMake version: {cmake_version}
Libc version: {libc_version}

Python version: {python_version}
Python platform: {python_platform}
Is CUDA available: {is_cuda_available}
CUDA runtime version: {cuda_runtime_version}
CUDA_MODULE_LOADING set to: {cuda_module_loading}
GPU models and configuration: {nvidia_gpu_models}
Nvidia driver version: {nvidia_driver_version}
cuDNN version: {cudnn_version}
Is XPU available: {is_xpu_available}
HIP runtime version: {hip_runtime_version}
MIOpen runtime version: {miopen_runtime_version}
Is XNNPACK available: {is_xnnpack_available}
Caching allocator config: {caching_allocator_config}

CPU:
{cpu_info}

Versions of relevant libraries:
{pip_packages}
{conda_packages}
""".strip()


def pretty_str(envinfo):
    """``envinfo`` in the report's format: None as "Could not collect", booleans as Yes/No,
    package lines tagged with their installer."""
    mutable_dict = envinfo._asdict()
    gpus = envinfo.nvidia_gpu_models
    if gpus is not None and len(gpus.split("\n")) > 1:  # several lines: start on the next
        mutable_dict["nvidia_gpu_models"] = "\n{}\n".format(gpus)
    dynamic_cuda_fields = ["cuda_runtime_version", "nvidia_gpu_models", "nvidia_driver_version"]
    if TORCH_AVAILABLE and not ember.cuda.is_available() and \
            all(mutable_dict[field] is None for field in dynamic_cuda_fields):
        for field in dynamic_cuda_fields + ["cudnn_version"]:
            mutable_dict[field] = "No CUDA"
        if envinfo.cuda_compiled_version is None:
            mutable_dict["cuda_compiled_version"] = "None"
    for key, value in mutable_dict.items():
        if value is True or value is False:
            mutable_dict[key] = "Yes" if value else "No"
        elif value is None:
            mutable_dict[key] = "Could not collect"
    for key in ("pip_packages", "conda_packages"):
        if mutable_dict[key] is not None and len(mutable_dict[key]) == 0:
            mutable_dict[key] = "No relevant packages"
    # (a list that could not be collected shows as "[conda] Could not collect")
    mutable_dict["pip_packages"] = "\n".join(
        f"[{envinfo.pip_version}] {line}" for line in mutable_dict["pip_packages"].split("\n"))
    mutable_dict["conda_packages"] = "\n".join(
        f"[conda] {line}" for line in mutable_dict["conda_packages"].split("\n"))
    mutable_dict["cpu_info"] = envinfo.cpu_info
    mutable_dict["caching_allocator_config"] = envinfo.caching_allocator_config or "N/A"
    return env_info_fmt.format(**mutable_dict)


def get_pretty_env_info():
    """The environment report as a string (:func:`get_env_info` formatted)."""
    return pretty_str(get_env_info())


def main():
    print("Collecting environment information...")
    print(get_pretty_env_info())


if __name__ == "__main__":
    main()
