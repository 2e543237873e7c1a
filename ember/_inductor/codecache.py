"""``ember._inductor.codecache`` (PyTorch's ``torch._inductor.codecache``): builds a generated C
translation unit into a CPython extension module with the system compiler, caches it on disk
and in the process, and loads it.

The on-disk key covers everything that changes the machine code: the source, the compiler's
flags (the vector ISA's among them: ``cpu_vec_isa``), the compiler's ``--version``, the CPU
capability and feature flags (``-march=native`` builds for this CPU) and the Python ABI. A build
goes to a temporary file beside its final path and is renamed into place, so processes that
compile the same source at once each finish with a complete module and a failed build leaves
nothing at the final path."""
import collections
import hashlib
import importlib.machinery
import importlib.util
import json
import logging
import os
import platform
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time

from ember._inductor import blas_threads, cpu_vec_isa
from ember._inductor.exc import CppCompileError, InvalidCxxCompiler

__all__ = ["CFLAGS", "LIBS", "cache_dir", "compile_command", "compiler_features",
           "source_path", "CppCodeCache", "HandWrittenModule", "counters"]

log = logging.getLogger(__name__)

# The compile line for generated kernels, after the vector ISA's flags (cpu_vec_isa.build_flags:
# -march=native, or the explicit flags of a lower ATEN_CPU_CAPABILITY). Not -ffast-math: it
# would let gcc assume no NaN/inf; -fno-math-errno and -fno-trapping-math are the parts of it
# that keep IEEE results and still let gcc vectorise math calls (through libmvec, for functions
# the generated code declares with __attribute__((simd("notinbranch")))).
CFLAGS = ("-O3", "-fno-math-errno", "-fno-trapping-math", "-fopenmp", "-fPIC", "-shared",
          "-Wall", "-std=gnu11")
LIBS = ("-lm", "-lmvec")
# Flags a compiler may not have (clang on macOS: no -fopenmp, no libmvec; a compiler without
# the ISA's flags); probed once per compiler and dropped when rejected. Every other flag is
# required.
_OPTIONAL = {"openmp": ("-fopenmp",), "mvec": ("-lmvec",)}


def _optional():
    """The optional flag groups by feature name, the vector ISA's first."""
    return {"vec_isa": cpu_vec_isa.build_flags(), **_OPTIONAL}


# macOS links extension modules against the interpreter's symbols at load time
_PLATFORM_LDFLAGS = ("-undefined", "dynamic_lookup") if sys.platform == "darwin" else ()
_EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX") or ".so"

counters = collections.Counter()

_lock = threading.Lock()
_compilers = {}  # (compiler argv, vector ISA flags) -> its description (version, flags, features)


def cache_dir():
    """``$TORCHINDUCTOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/ember/inductor`` (``~/.cache`` when
    XDG_CACHE_HOME is unset); created on demand."""
    path = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if not path:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = os.path.join(base, "ember", "inductor")
    path = os.path.abspath(path)
    os.makedirs(path, exist_ok=True)
    return path


def _includes():
    """Python's headers, and NumPy's (for hand-written modules that read arrays directly)."""
    import numpy
    paths = sysconfig.get_paths()
    dirs = [numpy.get_include()]
    for name in ("include", "platinclude"):
        d = paths.get(name)
        if d and d not in dirs:
            dirs.append(d)
    return tuple(f"-I{d}" for d in dirs)


def _candidates():
    """The compilers to try, in order, as ``(origin, argv, language flags)``. A compiler named in
    CC (or CXX) is the only candidate: the user asked for it, so failing over to another would
    hide a mistake. A C++ driver from CXX compiles the C source with ``-x c``."""
    cc = os.environ.get("CC")
    if cc:
        return [("CC", tuple(shlex.split(cc)), ())]
    cxx = os.environ.get("CXX")
    if cxx:
        return [("CXX", tuple(shlex.split(cxx)), ("-x", "c"))]
    return [("cc", ("cc",), ()), ("gcc", ("gcc",), ())]


_PROBE_SOURCE = r"""
#include <math.h>
float sinf(float) __attribute__((simd("notinbranch")));
void probe(float *restrict out, const float *restrict in, long n) {
    #pragma omp parallel for
    for (long i = 0; i < n; i++) out[i] = sinf(in[i]);
}
"""


def _try_compile(argv, flags, libs, tmpdir):
    """Build the probe source with these flags; ``(ok, compiler output)``."""
    src = os.path.join(tmpdir, "probe.c")
    if not os.path.exists(src):
        with open(src, "w") as f:
            f.write(_PROBE_SOURCE)
    out = os.path.join(tmpdir, "probe.so")
    cmd = [*argv, *flags, *_PLATFORM_LDFLAGS, src, "-o", out, *libs]
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    except OSError as e:
        return False, str(e)
    return proc.returncode == 0, proc.stdout.strip()


class _ProbeFailed(Exception):
    pass


def _probe(argv):
    """Which optional flags this compiler accepts: first everything at once (the usual case, one
    compile), then, if that fails, the required flags alone and each optional group on top.
    ``mvec`` also asks that the probe's ``__attribute__((simd("notinbranch")))`` declaration
    draws no warning (gcc takes it; a compiler that ignores it would warn under -Wall), since
    that is what the codegen emits when ``mvec`` is on."""
    optional = _optional()
    isa = optional["vec_isa"]
    with tempfile.TemporaryDirectory(prefix="ember_cc_probe_") as tmpdir:
        ok, output = _try_compile(argv, isa + CFLAGS, LIBS, tmpdir)
        if ok and not output:
            return {name: True for name in optional} | {"openmp_simd": False}
        dropped = {f for group in optional.values() for f in group}
        base_flags = tuple(f for f in CFLAGS if f not in dropped)
        base_libs = tuple(f for f in LIBS if f not in dropped)
        ok, output = _try_compile(argv, base_flags, base_libs, tmpdir)
        if not ok:
            raise _ProbeFailed(f"cannot build a trivial shared library with "
                               f"{' '.join(base_flags + base_libs)}: {output}")
        features = {}
        for name, group in optional.items():
            if name == "mvec":
                ok, output = _try_compile(argv, base_flags, base_libs + group, tmpdir)
                features[name] = ok and not output
            else:
                features[name] = _try_compile(argv, group + base_flags, base_libs, tmpdir)[0]
        # without the OpenMP runtime, -fopenmp-simd still honours `#pragma omp simd`
        features["openmp_simd"] = (not features["openmp"] and
                                   _try_compile(argv, base_flags + ("-fopenmp-simd",),
                                                base_libs, tmpdir)[0])
        return features


def _describe(origin, argv, lang):
    """Find, version and probe one compiler; the probe's answer is kept on disk beside the
    modules (keyed by the compiler's path and version) so a second process skips it."""
    path = shutil.which(argv[0])
    if path is None:
        return None, f"{argv[0]!r} not found"
    try:
        proc = subprocess.run([*argv, "--version"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"'{path} --version' failed: {e}"
    if proc.returncode != 0:
        return None, f"'{path} --version' exited with {proc.returncode}: {proc.stdout.strip()}"
    version = proc.stdout.strip()
    argv = argv + lang
    optional = _optional()
    ident = hashlib.sha256(json.dumps([list(argv), os.path.realpath(path), version, CFLAGS, LIBS,
                                       optional, sys.platform]).encode()).hexdigest()
    probe_file = os.path.join(cache_dir(), "compilers", f"{ident}.json")
    try:
        with open(probe_file) as f:
            features = json.load(f)
    except (OSError, ValueError):
        try:
            features = _probe(argv)
        except _ProbeFailed as e:
            return None, str(e)
        write_atomic(probe_file, json.dumps(features))
    dropped = [f for name, group in optional.items() if not features.get(name) for f in group]
    flags = tuple(f for f in optional["vec_isa"] + CFLAGS if f not in dropped)
    if features.get("openmp_simd"):
        flags += ("-fopenmp-simd",)
    libs = tuple(f for f in LIBS if f not in dropped)
    if dropped:
        log.info("compiler %s does not accept %s; building without", " ".join(argv),
                 " ".join(dropped))
    return {"origin": origin, "compiler": list(argv), "path": os.path.realpath(path),
            "version": version, "cflags": flags, "libs": libs, "dropped": dropped,
            **features}, None


def _compiler():
    """The description of the compiler in use now (CC/CXX are read on every call, the work of
    finding and probing one is done once per process)."""
    tried = []
    for origin, argv, lang in _candidates():
        if not argv:
            tried.append((origin, "", "empty"))
            continue
        key = (argv + lang, cpu_vec_isa.build_flags())
        with _lock:
            info = _compilers.get(key)
        if info is not None:
            return info
        info, why = _describe(origin, argv, lang)
        if info is None:
            tried.append((origin, " ".join(argv), why))
            continue
        with _lock:
            _compilers[key] = info
        return info
    raise InvalidCxxCompiler(tried)


def compiler_features():
    """What the compiler in use supports, as a dict: ``compiler`` (argv), ``origin`` (``CC``,
    ``CXX``, ``cc`` or ``gcc``), ``path``, ``version``, the booleans ``vec_isa`` (the vector
    ISA's flags are taken: see ``cpu_vec_isa``), ``openmp``, ``openmp_simd`` (the fallback when
    the OpenMP runtime is missing) and ``mvec`` (glibc's vector math library links and
    ``__attribute__((simd))`` math declarations are taken), and ``dropped``, the flags of
    ``CFLAGS``/``LIBS`` left out. Raises ``InvalidCxxCompiler``."""
    info = _compiler()
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in info.items()}


def compile_command(src_path, out_path):
    """The argv that builds ``src_path`` into the extension module ``out_path``."""
    info = _compiler()
    return [*info["compiler"], *info["cflags"], *_includes(), *_PLATFORM_LDFLAGS, src_path,
            "-o", out_path, *info["libs"]]


def _module_dir(key):
    return os.path.join(cache_dir(), key[:2], key)


def source_path(source, module_name):
    """Where ``CppCodeCache.load(source, module_name)`` keeps the source (its directory is
    created, so callers may put files of their own, such as a Python wrapper, beside it)."""
    directory = _module_dir(_key(source, module_name))
    os.makedirs(directory, exist_ok=True)
    return os.path.join(directory, f"{module_name}.c")


_cpu_identity = None


def _cpu():
    """The CPU capability plus a digest of the CPU's feature flags: -march=native code built on
    one AVX512 machine may use instructions another AVX512 machine lacks (a cache directory on a
    shared file system sees both)."""
    global _cpu_identity
    if _cpu_identity is None:
        from ember.backends.cpu import _cpu_flags
        flags = " ".join(sorted(_cpu_flags()))
        _cpu_identity = (platform.machine(), hashlib.sha256(flags.encode()).hexdigest()[:16])
    from ember.backends.cpu import get_cpu_capability
    return [get_cpu_capability(), *_cpu_identity]


def _key(source, module_name):
    info = _compiler()
    parts = [source, module_name, compile_command("SRC", "OUT"), info["path"], info["version"],
             _cpu(), sys.version, sys.implementation.cache_tag, _EXT_SUFFIX]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def write_atomic(path, text):
    """Write through a temporary file in the same directory and rename it into place, so a
    reader never sees half a file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _build(src_path, so_path):
    """Compile into a temporary file beside ``so_path`` and rename it into place: a concurrent
    builder of the same key renames a complete module over a complete module, and a failed build
    leaves nothing behind."""
    directory, name = os.path.split(so_path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    os.close(fd)
    cmd = compile_command(src_path, tmp)
    start = time.perf_counter()
    try:
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True)
        except OSError as e:
            raise InvalidCxxCompiler([("compiler", cmd[0], str(e))]) from e
        if proc.returncode != 0:
            raise CppCompileError(cmd, proc.stdout, src_path)
        os.replace(tmp, so_path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    elapsed = time.perf_counter() - start
    if proc.stdout.strip():
        # generated code is meant to compile cleanly under -Wall
        log.warning("compiler output for %s:\n%s", src_path, proc.stdout)
    log.info("compiled %s in %.3f s: %s", os.path.basename(so_path), elapsed, " ".join(cmd))


def _load_module(module_name, path):
    """Import the extension module at ``path`` without leaving it in ``sys.modules``: modules of
    different graphs may share a name, and CPython keeps extension modules apart by file path.
    (CPython itself enters a single-phase-init module, one made by ``PyModule_Create``, into
    ``sys.modules`` under its name; that entry is put back as it was.)"""
    # OpenMP threads spin for a while after a kernel before they sleep; spinning long takes
    # the core the eager ops' Python threads need (examples/train_digits.py --compile on 2
    # cores, when OpenBLAS still had its own pool: 14 s with OMP_WAIT_POLICY=ACTIVE, 5-6 s with
    # a short spin), not spinning at all makes back-to-back kernels wait for a wake-up. A short
    # spin it is, unless the user chose; libgomp reads it when the first kernel module loads the
    # library.
    if "OMP_WAIT_POLICY" not in os.environ and "GOMP_SPINCOUNT" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = "30000"
    missing = object()
    previous = sys.modules.get(module_name, missing)
    loader = importlib.machinery.ExtensionFileLoader(module_name, path)
    spec = importlib.util.spec_from_file_location(module_name, path, loader=loader)
    try:
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    finally:
        if previous is missing:
            sys.modules.pop(module_name, None)
        else:
            sys.modules[module_name] = previous
    return module


class CppCodeCache:
    """Generated C modules by key: ``load(source, module_name)`` returns the module, building it
    only when neither this process nor the disk has it."""
    cache = {}
    _key_locks = collections.defaultdict(threading.Lock)

    @classmethod
    def cache_clear(cls):
        """Forget the modules loaded in this process (the disk cache stays)."""
        cls.cache.clear()

    @classmethod
    def load(cls, source, module_name, parallel=True):
        """Build (or find) ``source``, a C translation unit defining ``PyInit_<module_name>``,
        and return the loaded extension module. ``parallel``: the module runs OpenMP regions
        (then OpenBLAS's threads move onto the OpenMP pool: ``blas_threads``)."""
        if not (module_name.isidentifier() and module_name.isascii()):
            raise ValueError(f"module_name must be a C identifier, got {module_name!r}")
        key = _key(source, module_name)
        module = cls.cache.get(key)
        if module is not None:
            counters["memory_hit"] += 1
            log.debug("memory hit for %s (%s)", module_name, key)
            return module
        with _lock:
            key_lock = cls._key_locks[key]
        with key_lock:  # one build per key among this process's threads
            module = cls.cache.get(key)
            if module is not None:
                counters["memory_hit"] += 1
                return module
            directory = _module_dir(key)
            src_path = os.path.join(directory, f"{module_name}.c")
            so_path = os.path.join(directory, module_name + _EXT_SUFFIX)
            module = None
            if os.path.exists(so_path):
                try:
                    module = _load_module(module_name, so_path)
                    counters["disk_hit"] += 1
                    log.debug("disk hit for %s: %s", module_name, so_path)
                except ImportError as e:
                    # not a module this Python can load (damaged by hand, a full disk): rebuild
                    log.warning("rebuilding %s: %s", so_path, e)
                    os.unlink(so_path)
            if module is None:
                write_atomic(src_path, source)
                _build(src_path, so_path)
                counters["compile"] += 1
                module = _load_module(module_name, so_path)
            cls.cache[key] = module
        if parallel:  # the first module on OpenMP: OpenBLAS's parallel calls move onto its pool
            blas_threads.install()
        return module


class HandWrittenModule:
    """A hand-written C module (the eager kernels' attention and GEMM in ``ember/_kernels/cpu``,
    the tensor constructors of ``ember/_core/tensor_impl.c``), built through :class:`CppCodeCache` on first use, once per process. ``get()`` is the
    module, or None where ``available()`` says no, there is no compiler or the build failed:
    the reason is logged (``fallback`` says what runs instead) and the caller's NumPy code
    runs. ``source`` is a function, as a source may depend on the compiler's features;
    ``parallel`` as in ``CppCodeCache.load``."""

    def __init__(self, name, source, fallback, available=lambda: True, parallel=True):
        self.name, self._source, self._fallback, self._available = (name, source, fallback,
                                                                     available)
        self._parallel = parallel
        self._lock = threading.Lock()
        self._tried = False
        self._module = None

    def get(self):
        if self._tried:
            return self._module
        with self._lock:
            if not self._tried:
                if self._available():
                    try:
                        self._module = CppCodeCache.load(self._source(), self.name,
                                                        self._parallel)
                    except (InvalidCxxCompiler, CppCompileError) as e:
                        log.info("%s: %s", self._fallback, e)
                self._tried = True
        return self._module
