"""``ember.utils.cpp_extension``: build C++ and CUDA sources against ember's extension headers.

The same entry points as PyTorch's ``torch.utils.cpp_extension``: ``load`` and ``load_inline``
compile just in time (with ninja when it is installed, else one compiler call per source) into
``$TORCH_EXTENSIONS_DIR/<name>`` and import the result; ``CppExtension``, ``CUDAExtension`` and
``BuildExtension`` do it ahead of time from a ``setup.py``. The headers are ember's
(``ember/include``: ``<torch/extension.h>``, ``<ATen/ATen.h>`` ... over pybind11), so there is no
library to link against; CUDA sources are compiled by nvcc and linked with the CUDA runtime.

A build is reused when the hash of everything that goes into it (source text, flags, compilers,
ember's headers) matches the one stored beside it; within one process a changed extension is
rebuilt under a new module name (``name_v1`` ...), since Python cannot import a module twice.
"""
import copy
import hashlib
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time

from .._library import cpp as _cpp

_HERE = os.path.dirname(os.path.abspath(__file__))
_EMBER_INCLUDE = os.path.join(os.path.dirname(_HERE), "include")
_CUDA_SUFFIXES = (".cu", ".cuh")
_LIB_EXT = ".so"
# name -> [hash of version 0, hash of version 1, ...]: what this process has built and imported
_versions = {}
# library path -> the module imported from it in this process
_modules = {}


def _is_cuda_file(path):
    return os.path.splitext(path)[1] in _CUDA_SUFFIXES


def _find_cuda_home():
    """CUDA_HOME or CUDA_PATH, else the toolkit nvcc belongs to (a wrapper script on PATH may
    live elsewhere: the candidate must hold the runtime's headers), else /usr/local/cuda."""
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home is not None:
        return home
    candidates = []
    nvcc = shutil.which("nvcc")
    if nvcc is not None:
        candidates.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    candidates.append("/usr/local/cuda")
    for c in candidates:
        if os.path.exists(os.path.join(c, "include", "cuda_runtime_api.h")):
            return c
    return None


CUDA_HOME = _find_cuda_home()


def _join_cuda_home(*paths):
    if CUDA_HOME is None:
        raise OSError("CUDA_HOME environment variable is not set. Please set it to your CUDA "
                      "install root.")
    return os.path.join(CUDA_HOME, *paths)


def _pybind11_include():
    try:
        import pybind11
    except ImportError:
        raise RuntimeError("ember's C++ extensions need pybind11 (pip install pybind11): its "
                           "headers are what <torch/extension.h> is built on") from None
    return pybind11.get_include()


def include_paths(device_type="cpu"):
    """The include directories an extension is compiled with: ember's headers, pybind11's and,
    for ``device_type="cuda"``, the CUDA toolkit's."""
    if isinstance(device_type, bool):  # the pre-2.6 signature: include_paths(cuda=False)
        device_type = "cuda" if device_type else "cpu"
    paths = [_EMBER_INCLUDE, _pybind11_include()]
    if device_type == "cuda":
        paths.append(_join_cuda_home("include"))
    return paths


def library_paths(device_type="cpu"):
    """The library directories an extension is linked with. ember's headers need no library, so
    this is empty on the CPU; ``"cuda"`` gives the CUDA toolkit's (for libcudart)."""
    if isinstance(device_type, bool):
        device_type = "cuda" if device_type else "cpu"
    if device_type != "cuda":
        return []
    for sub in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
        path = _join_cuda_home(sub)
        if os.path.exists(path):
            return [path]
    return [_join_cuda_home("lib64")]


def get_cxx_compiler():
    return os.environ.get("CXX", "c++")


def is_ninja_available():
    return shutil.which("ninja") is not None


def verify_ninja_availability():
    if not is_ninja_available():
        raise RuntimeError("Ninja is required to load C++ extensions")


def get_default_build_root():
    return os.path.realpath(os.path.join(os.path.expanduser("~"), ".cache", "ember_extensions"))


def _get_build_directory(name, verbose):
    root = os.environ.get("TORCH_EXTENSIONS_DIR")
    if root is None:
        py = f"py{sys.version_info.major}{sys.version_info.minor}{getattr(sys, 'abiflags', '')}"
        root = os.path.join(get_default_build_root(), f"{py}_cpu")
    if verbose:
        print(f"Using {root} as PyTorch extensions root...", flush=True)
    build_directory = os.path.join(root, name)
    os.makedirs(build_directory, exist_ok=True)
    return build_directory


def _cuda_arch_flags(cflags):
    """-gencode flags from TORCH_CUDA_ARCH_LIST ("8.0;9.0+PTX"), else the visible GPU's
    capability, else sm_90 (what CI compiles for; nvcc needs no GPU)."""
    if any("-gencode" in f or "-arch" in f for f in cflags):
        return []
    arch_list = os.environ.get("TORCH_CUDA_ARCH_LIST")
    if not arch_list:
        arch_list = _visible_gpu_capability() or "9.0"
    flags = []
    for arch in re.split(r"[;\s]+", arch_list.strip()):
        if not arch:
            continue
        ptx = arch.endswith("+PTX")
        num = arch.replace("+PTX", "").replace(".", "")
        if not num.isdigit():
            raise ValueError(f"Unknown CUDA arch ({arch}) or GPU not supported")
        flags.append(f"-gencode=arch=compute_{num},code=sm_{num}")
        if ptx:
            flags.append(f"-gencode=arch=compute_{num},code=compute_{num}")
    return flags


def _visible_gpu_capability():
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    caps = sorted({c.strip() for c in out.stdout.splitlines() if re.fullmatch(r"\d+\.\d+", c.strip())})
    return ";".join(caps) or None


# ---------------------------------------------------------------------------------------------
# Flags

_COMMON_CXX = ["-fPIC", "-std=c++17", "-fvisibility=hidden"]
_COMMON_NVCC = ["-Xcompiler", "-fPIC", "-Xcompiler", "-fvisibility=hidden", "-std=c++17",
                "--expt-relaxed-constexpr"]


def _flags(name, extra_cflags, extra_cuda_cflags, extra_ldflags, extra_include_paths, with_cuda):
    includes = [os.path.abspath(p) for p in extra_include_paths]
    system = include_paths("cuda" if with_cuda else "cpu") + [sysconfig.get_paths()["include"]]
    defines = [f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H"]
    inc = [f"-I{p}" for p in includes] + [a for p in system for a in ("-isystem", p)]
    cflags = defines + inc + _COMMON_CXX + list(extra_cflags)
    cuda_cflags = []
    if with_cuda:
        cuda_cflags = defines + inc + _COMMON_NVCC + list(extra_cuda_cflags)
        cuda_cflags += _cuda_arch_flags(cuda_cflags)
    ldflags = ["-shared"]
    if with_cuda:
        # the rpath lets the extension find libcudart without LD_LIBRARY_PATH (PyTorch's
        # extensions find the one torch loaded; ember loads none)
        ldflags += [f for p in library_paths("cuda") for f in (f"-L{p}", f"-Wl,-rpath,{p}")]
        ldflags += ["-lcudart"]
    ldflags += list(extra_ldflags)
    return cflags, cuda_cflags, ldflags


def _nvcc():
    return _join_cuda_home("bin", "nvcc")


def _object_name(source):
    base = os.path.splitext(os.path.basename(source))[0]
    return base + (".cuda.o" if _is_cuda_file(source) else ".o")


# ---------------------------------------------------------------------------------------------
# Hashing: what decides whether a build can be reused

_headers_digest = None


def _ember_headers_digest():
    global _headers_digest
    if _headers_digest is None:
        h = hashlib.sha256(str(_cpp.HEADER_VERSION).encode())
        for root, dirs, files in sorted(os.walk(_EMBER_INCLUDE)):
            dirs.sort()
            for f in sorted(files):
                path = os.path.join(root, f)
                h.update(os.path.relpath(path, _EMBER_INCLUDE).encode())
                with open(path, "rb") as fh:
                    h.update(fh.read())
        _headers_digest = h.hexdigest()
    return _headers_digest


def _build_hash(sources, build_arguments, with_cuda):
    h = hashlib.sha256()
    for s in sources:
        h.update(os.path.abspath(s).encode())
        with open(s, "rb") as fh:
            h.update(fh.read())
    h.update(repr(build_arguments).encode())
    h.update(repr((with_cuda, get_cxx_compiler(), sys.version, _ember_headers_digest())).encode())
    return h.hexdigest()


class _Baton:
    """A lock file, so that two processes building one extension take turns."""

    def __init__(self, path, timeout=600):
        self.path, self.timeout = path, timeout
        self.fd = None

    def __enter__(self):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                self.fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                return self
            except FileExistsError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"waited {self.timeout}s for the build lock {self.path}; "
                                       f"delete it if no build is running") from None
                time.sleep(0.1)

    def __exit__(self, *exc):
        os.close(self.fd)
        os.remove(self.path)


# ---------------------------------------------------------------------------------------------
# Building

def _write_ninja_file(path, name, sources, cflags, cuda_cflags, ldflags):
    q = lambda args: " ".join(shlex.quote(a) for a in args)  # noqa: E731
    lines = ["ninja_required_version = 1.3", f"cxx = {get_cxx_compiler()}"]
    if cuda_cflags:
        lines.append(f"nvcc = {_nvcc()}")
    lines += [f"cflags = {q(cflags)}", f"cuda_cflags = {q(cuda_cflags)}", f"ldflags = {q(ldflags)}",
              "",
              "rule compile",
              "  command = $cxx -MMD -MF $out.d $cflags -c $in -o $out",
              "  depfile = $out.d",
              "  deps = gcc",
              ""]
    if cuda_cflags:
        lines += ["rule cuda_compile",
                  "  command = $nvcc --generate-dependencies-with-compile --dependency-output "
                  "$out.d $cuda_cflags -c $in -o $out",
                  "  depfile = $out.d",
                  "  deps = gcc",
                  ""]
    lines += ["rule link", "  command = $cxx $in $ldflags -o $out", ""]
    objects = []
    for s in sources:
        obj = _object_name(s)
        objects.append(obj)
        rule = "cuda_compile" if _is_cuda_file(s) else "compile"
        lines.append(f"build {obj}: {rule} {os.path.abspath(s)}")
    lines += ["", f"build {name}{_LIB_EXT}: link {' '.join(objects)}", "",
              f"default {name}{_LIB_EXT}", ""]
    text = "\n".join(lines)
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)


def _build_error(name, build_directory, output):
    return RuntimeError(f"Error building extension '{name}' (build directory: "
                        f"{build_directory}): {output}")


def _run(command, cwd, verbose):
    """Run one build command; its output, and whether it failed."""
    proc = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.decode(errors="replace")
    if verbose and out:
        sys.stdout.write(out)
        sys.stdout.flush()
    return out, proc.returncode != 0


def _build(name, sources, cflags, cuda_cflags, ldflags, build_directory, verbose):
    if is_ninja_available():
        _write_ninja_file(os.path.join(build_directory, "build.ninja"), name, sources, cflags,
                          cuda_cflags, ldflags)
        command = ["ninja", "-v"]
        jobs = os.environ.get("MAX_JOBS")
        if jobs and jobs.isdigit():
            command += ["-j", jobs]
        out, failed = _run(command, build_directory, verbose)
        if failed:
            raise _build_error(name, build_directory, out)
        return
    # No ninja: one compiler call per source, then the link.
    objects = []
    for s in sources:
        obj = _object_name(s)
        if _is_cuda_file(s):
            command = [_nvcc()] + cuda_cflags + ["-c", os.path.abspath(s), "-o", obj]
        else:
            command = [get_cxx_compiler()] + cflags + ["-c", os.path.abspath(s), "-o", obj]
        if verbose:
            print(shlex.join(command), flush=True)
        out, failed = _run(command, build_directory, verbose)
        if failed:
            raise _build_error(name, build_directory, f"{shlex.join(command)}\n{out}")
        objects.append(obj)
    command = [get_cxx_compiler()] + objects + ldflags + ["-o", name + _LIB_EXT]
    if verbose:
        print(shlex.join(command), flush=True)
    out, failed = _run(command, build_directory, verbose)
    if failed:
        raise _build_error(name, build_directory, f"{shlex.join(command)}\n{out}")


def _import_module_from_library(module_name, path, is_python_module):
    filepath = os.path.join(path, f"{module_name}{_LIB_EXT}")
    if not is_python_module:
        from .._ops.overload import ops
        ops.load_library(filepath)
        return filepath
    spec = importlib.util.spec_from_file_location(module_name, filepath)
    module = importlib.util.module_from_spec(spec)
    with _cpp.loading(filepath):
        spec.loader.exec_module(module)
    return module


def _jit_compile(name, sources, extra_cflags, extra_cuda_cflags, extra_ldflags,
                 extra_include_paths, build_directory, verbose, with_cuda, is_python_module):
    if with_cuda is None:
        with_cuda = any(map(_is_cuda_file, sources))
    build_arguments = [extra_cflags, extra_cuda_cflags, extra_ldflags, extra_include_paths,
                       is_python_module]
    digest = _build_hash(sources, build_arguments, with_cuda)
    seen = _versions.setdefault(name, [])
    if digest not in seen:
        seen.append(digest)
    version = seen.index(digest)
    module_name = name if version == 0 else f"{name}_v{version}"
    if version > 0 and verbose:
        print(f"The input conditions for extension module {name} have changed. Bumping to "
              f"version {version} and re-building as {module_name}...", flush=True)
    library = os.path.join(build_directory, module_name + _LIB_EXT)
    if is_python_module and library in _modules:
        return _modules[library]  # Python imports an extension module once per process

    stamp = os.path.join(build_directory, f"{module_name}.hash")
    with _Baton(os.path.join(build_directory, "lock")):
        fresh = (os.path.exists(library) and os.path.exists(stamp)
                 and open(stamp).read() == digest)
        if fresh:
            if verbose:
                print(f"No modifications detected for re-loaded extension module {module_name}, "
                      f"skipping build step...", flush=True)
        else:
            if os.path.exists(stamp):
                os.remove(stamp)
            cflags, cuda_cflags, ldflags = _flags(module_name, extra_cflags or [],
                                                  extra_cuda_cflags or [], extra_ldflags or [],
                                                  extra_include_paths or [], with_cuda)
            if verbose:
                print(f"Building extension module {module_name}...", flush=True)
            _build(module_name, sources, cflags, cuda_cflags, ldflags, build_directory, verbose)
            with open(stamp, "w") as f:
                f.write(digest)
    if verbose:
        print(f"Loading extension module {module_name}...", flush=True)
    module = _import_module_from_library(module_name, build_directory, is_python_module)
    if is_python_module:
        _modules[library] = module
    return module


def load(name, sources, extra_cflags=None, extra_cuda_cflags=None, extra_ldflags=None,
         extra_include_paths=None, build_directory=None, verbose=False, with_cuda=None,
         is_python_module=True):
    """Compile ``sources`` (C++ and ``.cu`` files) into the extension ``name`` and load it: the
    module (its ``PYBIND11_MODULE`` functions), or with ``is_python_module=False`` the path of
    the shared library, loaded for its ``TORCH_LIBRARY`` registrations only."""
    if isinstance(sources, str):
        sources = [sources]
    sources = [os.path.abspath(s) for s in sources]
    return _jit_compile(name, sources, extra_cflags, extra_cuda_cflags, extra_ldflags,
                        extra_include_paths,
                        build_directory or _get_build_directory(name, verbose), verbose,
                        with_cuda, is_python_module)


def load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                extra_cuda_cflags=None, extra_ldflags=None, extra_include_paths=None,
                build_directory=None, verbose=False, with_cuda=None, is_python_module=True,
                with_pytorch_error_handling=True, no_implicit_headers=False):
    """``load`` from source strings: ``cpp_sources`` go to ``main.cpp`` (after
    ``#include <torch/extension.h>``), ``cuda_sources`` to ``cuda.cu``; ``functions`` (names,
    or a dict name -> docstring) get ``PYBIND11_MODULE`` bindings generated for them."""
    build_directory = build_directory or _get_build_directory(name, verbose)
    if isinstance(cpp_sources, str):
        cpp_sources = [cpp_sources]
    cpp_sources = list(cpp_sources)
    cuda_sources = [cuda_sources] if isinstance(cuda_sources, str) else list(cuda_sources or [])
    if not no_implicit_headers:
        cpp_sources.insert(0, "#include <torch/extension.h>")
    if functions is not None:
        if isinstance(functions, str):
            functions = [functions]
        if isinstance(functions, list):
            functions = {f: f for f in functions}
        elif not isinstance(functions, dict):
            raise ValueError(f"Expected 'functions' to be a list or dict, but was {type(functions)}")
        module_def = ["PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {"]
        for fname, doc in functions.items():
            fn = f"torch::wrap_pybind_function({fname})" if with_pytorch_error_handling else fname
            module_def.append(f'm.def("{fname}", {fn}, "{doc}");')
        module_def.append("}")
        cpp_sources += module_def
    sources = [os.path.join(build_directory, "main.cpp")]
    _maybe_write(sources[0], "\n".join(cpp_sources))
    if cuda_sources:
        if not no_implicit_headers:
            cuda_sources[:0] = ["#include <torch/types.h>", "#include <cuda.h>",
                                "#include <cuda_runtime.h>"]
        sources.append(os.path.join(build_directory, "cuda.cu"))
        _maybe_write(sources[1], "\n".join(cuda_sources))
    return _jit_compile(name, sources, extra_cflags, extra_cuda_cflags, extra_ldflags,
                        extra_include_paths, build_directory, verbose, with_cuda,
                        is_python_module)


def _maybe_write(filename, content):
    # rewriting an unchanged file would make ninja rebuild it
    if os.path.exists(filename):
        with open(filename) as f:
            if f.read() == content:
                return
    with open(filename, "w") as f:
        f.write(content)


# ---------------------------------------------------------------------------------------------
# setuptools

def CppExtension(name, sources, *args, **kwargs):
    """A ``setuptools.Extension`` for C++ sources, with ember's include paths."""
    import setuptools
    kwargs["include_dirs"] = list(kwargs.get("include_dirs", [])) + include_paths("cpu")
    kwargs["language"] = "c++"
    return setuptools.Extension(name, sources, *args, **kwargs)


def CUDAExtension(name, sources, *args, **kwargs):
    """A ``setuptools.Extension`` for C++ and CUDA sources (``.cu`` files are compiled by nvcc
    under BuildExtension), linked with the CUDA runtime."""
    import setuptools
    kwargs["include_dirs"] = list(kwargs.get("include_dirs", [])) + include_paths("cuda")
    kwargs["library_dirs"] = list(kwargs.get("library_dirs", [])) + library_paths("cuda")
    kwargs["runtime_library_dirs"] = list(kwargs.get("runtime_library_dirs", [])) + \
        library_paths("cuda")
    kwargs["libraries"] = list(kwargs.get("libraries", [])) + ["cudart"]
    kwargs["language"] = "c++"
    return setuptools.Extension(name, sources, *args, **kwargs)


def _build_ext_base():
    from setuptools.command.build_ext import build_ext
    return build_ext


def __getattr__(name):
    # BuildExtension subclasses setuptools' build_ext: made on first use, so that importing
    # this module does not import setuptools.
    if name == "BuildExtension":
        return _real_build_extension()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_real = None


def _real_build_extension():
    global _real
    if _real is not None:
        return _real
    base = _build_ext_base()

    class BuildExtension(base):
        """``cmdclass={"build_ext": BuildExtension}``: compiles ``.cu`` sources with nvcc and
        the rest with the C++ compiler, taking ``extra_compile_args`` as a list or as
        ``{"cxx": [...], "nvcc": [...]}``, and adds the flags ember's headers need (C++17,
        hidden visibility, ``TORCH_EXTENSION_NAME``)."""

        @classmethod
        def with_options(cls, **options):
            class cls_with_options(cls):
                def __init__(self, *args, **kwargs):
                    kwargs.update(options)
                    super().__init__(*args, **kwargs)
            return cls_with_options

        def __init__(self, *args, no_python_abi_suffix=False, **kwargs):
            super().__init__(*args, **kwargs)
            self.no_python_abi_suffix = no_python_abi_suffix

        def build_extensions(self):
            for ext in self.extensions:
                args = ext.extra_compile_args
                if isinstance(args, dict):
                    args = {k: list(v) for k, v in args.items()}
                else:
                    args = {"cxx": list(args or []), "nvcc": list(args or [])}
                name = ext.name.split(".")[-1]
                for key in ("cxx", "nvcc"):
                    args.setdefault(key, [])
                    args[key] += [f"-DTORCH_EXTENSION_NAME={name}", "-DTORCH_API_INCLUDE_EXTENSION_H"]
                args["cxx"] += _COMMON_CXX[1:]  # setuptools adds -fPIC itself
                args["nvcc"] += _COMMON_NVCC
                args["nvcc"] += _cuda_arch_flags(args["nvcc"]) if any(
                    map(_is_cuda_file, ext.sources)) else []
                ext.extra_compile_args = args
            self.compiler.src_extensions += list(_CUDA_SUFFIXES)
            original_compile = self.compiler._compile
            compiler = self.compiler

            def wrapped_compile(obj, src, ext, cc_args, extra_postargs, pp_opts):
                cflags = copy.deepcopy(extra_postargs)
                original = compiler.compiler_so
                try:
                    if _is_cuda_file(src):
                        compiler.set_executable("compiler_so", [_nvcc()])
                        cflags = cflags["nvcc"] if isinstance(cflags, dict) else cflags
                    else:
                        cflags = cflags["cxx"] if isinstance(cflags, dict) else cflags
                    original_compile(obj, src, ext, cc_args, cflags, pp_opts)
                finally:
                    compiler.set_executable("compiler_so", original)

            self.compiler._compile = wrapped_compile
            if self.compiler.compiler_type == "unix":
                # link C++ with the C++ compiler
                cxx = get_cxx_compiler()
                self.compiler.set_executable("linker_so", [cxx] + list(self.compiler.linker_so[1:]))
            super().build_extensions()

        def get_ext_filename(self, ext_name):
            filename = super().get_ext_filename(ext_name)
            if self.no_python_abi_suffix:
                parts = filename.split(".")
                filename = ".".join(parts[:-2] + parts[-1:]) if len(parts) > 2 else filename
            return filename

    BuildExtension.__module__ = __name__
    _real = BuildExtension
    return _real
