"""ember._inductor.codecache: generated C built into extension modules, cached in the process and
on disk (TORCHINDUCTOR_CACHE_DIR), safe across processes; and the errors of ember._inductor.exc."""
import collections
import logging
import os
import pickle
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ember._inductor import codecache
from ember._inductor.exc import CppCompileError, InvalidCxxCompiler

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.skipif(
    not (os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")),
    reason="no C compiler on this machine (CC unset, no cc or gcc on PATH)")


def module_source(name, extra_c="", extra_methods=""):
    """A METH_FASTCALL module: ``add(a, b)`` on ints and ``fill(ptr, n, scale)``, which writes
    ``scale * i`` as floats through a raw pointer given as a Python int."""
    return textwrap.dedent("""
        #define PY_SSIZE_T_CLEAN
        #include <Python.h>

        static PyObject *add(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
            if (nargs != 2) {
                PyErr_SetString(PyExc_TypeError, "add() takes 2 arguments");
                return NULL;
            }
            long a = PyLong_AsLong(args[0]);
            if (a == -1 && PyErr_Occurred()) return NULL;
            long b = PyLong_AsLong(args[1]);
            if (b == -1 && PyErr_Occurred()) return NULL;
            return PyLong_FromLong(a + b);
        }

        static PyObject *fill(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
            if (nargs != 3) {
                PyErr_SetString(PyExc_TypeError, "fill() takes 3 arguments");
                return NULL;
            }
            float *out = (float *)PyLong_AsVoidPtr(args[0]);
            Py_ssize_t n = PyLong_AsSsize_t(args[1]);
            double scale = PyFloat_AsDouble(args[2]);
            if (PyErr_Occurred()) return NULL;
            for (Py_ssize_t i = 0; i < n; i++) out[i] = (float)(scale * (double)i);
            Py_RETURN_NONE;
        }
        """) + extra_c + textwrap.dedent(f"""
        static PyMethodDef methods[] = {{
            {{"add", (PyCFunction)(void (*)(void))add, METH_FASTCALL, NULL}},
            {{"fill", (PyCFunction)(void (*)(void))fill, METH_FASTCALL, NULL}},
            {extra_methods}
            {{NULL, NULL, 0, NULL}}
        }};
        static struct PyModuleDef moduledef = {{
            PyModuleDef_HEAD_INIT, "{name}", NULL, -1, methods}};
        PyMODINIT_FUNC PyInit_{name}(void) {{ return PyModule_Create(&moduledef); }}
        """)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache directory, the default compiler, and fresh process state."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(codecache.CppCodeCache, "cache", {})
    monkeypatch.setattr(codecache, "counters", collections.Counter())
    return tmp_path / "cache"


def test_fastcall_module_loads_and_runs(cache):
    mod = codecache.CppCodeCache.load(module_source("ember_cc_basic"), "ember_cc_basic")
    assert mod.add(2, 40) == 42
    assert mod.add(-7, 3) == -4
    with pytest.raises(TypeError, match="takes 2 arguments"):
        mod.add(1)
    arr = np.zeros(1000, dtype=np.float32)
    assert mod.fill(arr.ctypes.data, arr.size, 0.5) is None
    np.testing.assert_array_equal(arr, np.arange(1000, dtype=np.float32) * np.float32(0.5))
    # the files sit at <cache>/<key[:2]>/<key>/<name>.c and .so
    so = mod.__file__
    key_dir = os.path.dirname(so)
    key = os.path.basename(key_dir)
    assert len(key) == 64 and os.path.basename(os.path.dirname(key_dir)) == key[:2]
    assert os.path.dirname(os.path.dirname(key_dir)) == str(cache)
    assert os.path.exists(os.path.join(key_dir, "ember_cc_basic.c"))
    assert os.path.basename(so).startswith("ember_cc_basic.") and so.endswith(".so")
    assert codecache.source_path(module_source("ember_cc_basic"), "ember_cc_basic") == \
        os.path.join(key_dir, "ember_cc_basic.c")


def test_memory_hit_then_disk_hit_without_the_compiler(cache, monkeypatch):
    src = module_source("ember_cc_hits")
    first = codecache.CppCodeCache.load(src, "ember_cc_hits")
    assert codecache.counters == {"compile": 1}

    def no_compiler(*args, **kwargs):
        raise AssertionError("the compiler ran on a cache hit")
    monkeypatch.setattr(codecache, "_build", no_compiler)
    assert codecache.CppCodeCache.load(src, "ember_cc_hits") is first
    assert codecache.counters == {"compile": 1, "memory_hit": 1}
    codecache.CppCodeCache.cache_clear()
    again = codecache.CppCodeCache.load(src, "ember_cc_hits")
    assert again.add(1, 2) == 3
    assert codecache.counters == {"compile": 1, "memory_hit": 1, "disk_hit": 1}


def test_same_module_name_distinct_sources_are_distinct_modules(cache):
    extra = "static PyObject *which(PyObject *s, PyObject *const *a, Py_ssize_t n) " \
            "{{ return PyLong_FromLong({}); }}\n"
    method = '{"which", (PyCFunction)(void (*)(void))which, METH_FASTCALL, NULL},'
    one = codecache.CppCodeCache.load(
        module_source("ember_cc_twin", extra.format(1), method), "ember_cc_twin")
    two = codecache.CppCodeCache.load(
        module_source("ember_cc_twin", extra.format(2), method), "ember_cc_twin")
    assert one is not two and one.__file__ != two.__file__
    assert (one.which(), two.which()) == (1, 2)
    assert "ember_cc_twin" not in sys.modules


def test_key_depends_on_flags_and_cpu_capability(cache, monkeypatch):
    src = module_source("ember_cc_key")
    base = codecache._key(src, "ember_cc_key")
    assert codecache._key(src, "ember_cc_key") == base
    assert codecache._key(src + "\n", "ember_cc_key") != base
    assert codecache._key(src, "ember_cc_other") != base
    import ember.backends.cpu as cpu
    with monkeypatch.context() as m:
        m.setattr(cpu, "_capability",
                  "DEFAULT" if cpu.get_cpu_capability() != "DEFAULT" else "AVX2")
        assert codecache._key(src, "ember_cc_key") != base
    with monkeypatch.context() as m:
        m.setattr(codecache, "_cpu_identity", ("x86_64", "another cpu"))
        assert codecache._key(src, "ember_cc_key") != base
    with monkeypatch.context() as m:
        m.setattr(codecache, "_includes", lambda: ("-I/elsewhere",))
        assert codecache._key(src, "ember_cc_key") != base
    assert codecache._key(src, "ember_cc_key") == base


def test_lowering_exceptions_match_pytorch(torch):
    from ember._inductor import exc
    texc = pytest.importorskip("torch._inductor.exc")
    args, kwargs = ["x", 2], {"dim": 1}
    err = ValueError("bad")
    assert str(exc.LoweringException(err, "aten.foo", args, kwargs)) == \
        str(texc.LoweringException(err, "aten.foo", args, kwargs))
    assert issubclass(exc.LoweringException, exc.OperatorIssue)
    # without a source path the compile error reads as PyTorch's
    assert str(exc.CppCompileError(["cc", "a.c"], "oops")) == \
        str(texc.CppCompileError(["cc", "a.c"], "oops"))


def test_cache_dir_default_and_override(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "a" / "b"))
    assert codecache.cache_dir() == str(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b").is_dir()
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert codecache.cache_dir() == str(tmp_path / "xdg" / "ember" / "inductor")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert codecache.cache_dir() == str(tmp_path / "home" / ".cache" / "ember" / "inductor")


def test_compile_command_and_features(cache):
    feats = codecache.compiler_features()
    cmd = codecache.compile_command("k.c", "k.so")
    assert cmd[:len(feats["compiler"])] == feats["compiler"]
    for flag in codecache.CFLAGS + codecache.LIBS:
        assert (flag in cmd) == (flag not in feats["dropped"]), flag
    import sysconfig
    assert "-I" + sysconfig.get_paths()["include"] in cmd
    i = cmd.index("k.c")
    assert cmd[i + 1:i + 3] == ["-o", "k.so"]
    # libraries come after the source so the linker resolves its references
    assert all(cmd.index(lib) > i for lib in feats["libs"])
    assert set(feats) >= {"compiler", "origin", "version", "vec_isa", "openmp",
                          "openmp_simd", "mvec", "dropped"}
    assert feats["origin"] in ("cc", "gcc")


def test_no_compiler_names_cc(cache, monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    with pytest.raises(InvalidCxxCompiler) as info:
        codecache.CppCodeCache.load(module_source("ember_cc_none"), "ember_cc_none")
    msg = str(info.value)
    assert "/nonexistent/cc" in msg and "CC" in msg and "CXX" in msg
    assert "not found" in msg
    with pytest.raises(InvalidCxxCompiler):
        codecache.compiler_features()
    assert isinstance(pickle.loads(pickle.dumps(info.value)), InvalidCxxCompiler)


def test_broken_compiler_is_reported_with_its_output(cache, tmp_path, monkeypatch):
    fake = tmp_path / "brokencc"
    fake.write_text("#!/bin/sh\ncase \"$1\" in --version) echo brokencc 1.0;; "
                    "*) echo 'brokencc: cannot link' >&2; exit 1;; esac\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    with pytest.raises(InvalidCxxCompiler) as info:
        codecache.compiler_features()
    assert str(fake) in str(info.value) and "brokencc: cannot link" in str(info.value)


def test_compile_error_shows_command_output_and_source(cache):
    src = module_source("ember_cc_broken") + "\nint broken( {\n"
    with pytest.raises(CppCompileError) as info:
        codecache.CppCodeCache.load(src, "ember_cc_broken")
    err = info.value
    msg = str(err)
    assert err.source_path.endswith("ember_cc_broken.c") and err.source_path in msg
    assert "error" in err.output and err.output in msg
    assert " ".join(err.cmd) in msg and err.source_path in err.cmd
    with open(err.source_path) as f:
        assert f.read() == src                 # kept for the person reading the error
    # nothing half-written at the final path, no temporary files left
    assert os.listdir(os.path.dirname(err.source_path)) == ["ember_cc_broken.c"]
    assert codecache.counters["compile"] == 0
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == msg


def test_damaged_module_on_disk_is_rebuilt(cache):
    src = module_source("ember_cc_damaged")
    so = codecache.source_path(src, "ember_cc_damaged")[:-2] + codecache._EXT_SUFFIX
    with open(so, "wb") as f:
        f.write(b"not an ELF file")
    mod = codecache.CppCodeCache.load(src, "ember_cc_damaged")
    assert mod.add(1, 1) == 2
    assert codecache.counters == {"compile": 1}


def test_unsupported_flags_are_dropped(cache, tmp_path, monkeypatch):
    """A compiler without OpenMP or libmvec (clang on macOS): the probe drops those flags, keeps
    `#pragma omp simd` through -fopenmp-simd, and modules still build."""
    real = shutil.which("cc") or shutil.which("gcc")
    if real is None:
        pytest.skip("needs cc or gcc to wrap")
    fake = tmp_path / "limitedcc"
    fake.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        for a in "$@"; do
            case "$a" in -fopenmp|-lmvec) echo "limitedcc: unsupported option $a" >&2; exit 1;;
            esac
        done
        exec {real} "$@"
        """))
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    feats = codecache.compiler_features()
    assert feats["origin"] == "CC" and feats["compiler"] == [str(fake)]
    assert (feats["openmp"], feats["mvec"], feats["openmp_simd"]) == (False, False, True)
    assert sorted(feats["dropped"]) == ["-fopenmp", "-lmvec"]
    cmd = codecache.compile_command("k.c", "k.so")
    assert "-fopenmp" not in cmd and "-lmvec" not in cmd and "-fopenmp-simd" in cmd
    mod = codecache.CppCodeCache.load(module_source("ember_cc_limited"), "ember_cc_limited")
    assert mod.add(3, 4) == 7


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ to pass in CXX")
def test_cxx_driver_compiles_c(cache, monkeypatch):
    monkeypatch.setenv("CXX", "g++")
    feats = codecache.compiler_features()
    assert feats["origin"] == "CXX" and feats["compiler"] == ["g++", "-x", "c"]
    mod = codecache.CppCodeCache.load(module_source("ember_cc_cxx"), "ember_cc_cxx")
    assert mod.add(5, 6) == 11


VECTOR_MATH = """
float sinf(float) __attribute__((simd("notinbranch")));

static PyObject *vsin(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    float *restrict out = (float *)PyLong_AsVoidPtr(args[0]);
    const float *restrict in = (const float *)PyLong_AsVoidPtr(args[1]);
    Py_ssize_t n = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred()) return NULL;
    #pragma omp simd
    for (Py_ssize_t i = 0; i < n; i++) out[i] = sinf(in[i]);
    Py_RETURN_NONE;
}
"""


def test_vector_math_compiles_cleanly_and_uses_libmvec(cache, caplog):
    feats = codecache.compiler_features()
    if not feats["mvec"]:
        pytest.skip("compiler has no libmvec / simd math declarations")
    src = module_source("ember_cc_vsin", "#include <math.h>\n" + VECTOR_MATH,
                        '{"vsin", (PyCFunction)(void (*)(void))vsin, METH_FASTCALL, NULL},')
    with caplog.at_level(logging.WARNING, logger="ember._inductor.codecache"):
        mod = codecache.CppCodeCache.load(src, "ember_cc_vsin")
    assert not caplog.records                  # -Wall printed nothing
    # the same command run by hand: no output at all
    src_path = codecache.source_path(src, "ember_cc_vsin")
    out = os.path.join(os.path.dirname(src_path), "check.so")
    proc = subprocess.run(codecache.compile_command(src_path, out), capture_output=True,
                          text=True)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    # gcc called a vector variant from libmvec (mangled _ZGV<isa>N<lanes>v_sinf)
    with open(mod.__file__, "rb") as f:
        binary = f.read()
    assert b"_ZGV" in binary and b"v_sinf" in binary
    x = np.concatenate([np.linspace(-20, 20, 997, dtype=np.float32),
                        np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype=np.float32)])
    y = np.empty_like(x)
    mod.vsin(y.ctypes.data, x.ctypes.data, x.size)
    with np.errstate(invalid="ignore"):
        expected = np.sin(x)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)  # NaN where NumPy has NaN
    assert np.signbit(y[-1]) and not np.signbit(y[-2])


def test_threads_share_one_build(cache):
    import threading
    src = module_source("ember_cc_threads")
    barrier = threading.Barrier(3)
    got = []

    def work():
        barrier.wait()
        got.append(codecache.CppCodeCache.load(src, "ember_cc_threads"))
    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 3 and got[0] is got[1] is got[2]
    assert codecache.counters == {"compile": 1, "memory_hit": 2}


def test_concurrent_processes_build_the_same_source(cache, tmp_path):
    """Two processes released together compile one source into one cache directory; both load
    a working module, the final file is complete, no temporary file remains, and this process
    then finds it on disk."""
    src = module_source("ember_cc_race")
    (tmp_path / "race.c").write_text(src)
    script = tmp_path / "racer.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {REPO!r})
        from ember._inductor import blas_threads, codecache
        ready, go = sys.argv[1], sys.argv[2]
        src = open({str(tmp_path / "race.c")!r}).read()
        codecache.compiler_features()     # probe first, so the two builds overlap
        blas_threads.install()  # the first load's own module, before the counts below
        compiled = codecache.counters["compile"]
        loads = compiled + codecache.counters["disk_hit"]
        open(ready, "w").close()
        deadline = time.time() + 120
        while not os.path.exists(go):
            if time.time() > deadline:
                sys.exit("never released")
            time.sleep(0.005)
        mod = codecache.CppCodeCache.load(src, "ember_cc_race")
        print(mod.add(20, 22),
              codecache.counters["compile"] + codecache.counters["disk_hit"] - loads)
        print("compiled" if codecache.counters["compile"] > compiled else "disk hit",
              file=sys.stderr)
        """))
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(cache), PYTHONPATH=REPO)
    go = tmp_path / "go"
    readies = [tmp_path / f"ready{i}" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(go)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              cwd=REPO) for r in readies]
    try:
        import time
        deadline = time.time() + 120
        while not all(r.exists() for r in readies) and time.time() < deadline:
            if any(p.poll() is not None for p in procs):
                break
            time.sleep(0.01)
        go.touch()
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for p, (out, err) in zip(procs, results):
        assert p.returncode == 0, err
        assert out.split() == ["42", "1"]
    print("racers:", [err.strip() for _, err in results])   # both "compiled" when they overlapped
    src_path = codecache.source_path(src, "ember_cc_race")
    assert sorted(os.listdir(os.path.dirname(src_path))) == \
        sorted(["ember_cc_race.c", "ember_cc_race" + codecache._EXT_SUFFIX])
    mod = codecache.CppCodeCache.load(src, "ember_cc_race")
    assert mod.add(1, 2) == 3
    assert codecache.counters == {"disk_hit": 1}


_SIMD_LOOP = textwrap.dedent("""
    void scale_add(float *restrict out, const float *restrict a, long n) {
        #pragma omp simd
        for (long i = 0; i < n; i++) out[i] = a[i] * 2.0f + 1.0f;
    }
    """)


def _disassembly(mod):
    return subprocess.run(["objdump", "-d", mod.__file__], stdout=subprocess.PIPE, text=True,
                          check=True).stdout


@pytest.mark.skipif(shutil.which("objdump") is None or
                    __import__("platform").machine() not in ("x86_64", "AMD64"),
                    reason="reads x86 machine code with objdump")
@pytest.mark.parametrize("capability", ["DEFAULT", "AVX2", "AVX512"])
def test_cpu_capability_picks_the_kernels_vector_isa(cache, monkeypatch, capability):
    """ATEN_CPU_CAPABILITY steers compiled kernels: DEFAULT builds use no AVX registers, AVX2
    builds 256-bit ones and no 512-bit ones; the CPU's own level builds with -march=native."""
    import ember.backends.cpu as cpu
    from ember._inductor import cpu_vec_isa
    hardware = cpu._hardware_capability()
    order = ["DEFAULT", "AVX2", "AVX512"]
    if hardware not in order or order.index(capability) > order.index(hardware):
        pytest.skip(f"this CPU's capability is {hardware}")
    monkeypatch.setattr(cpu, "_capability", capability)
    isa = cpu_vec_isa.pick_vec_isa()
    assert isa.capability == capability and bool(isa) == (capability != "DEFAULT")
    assert isa.bit_width == {"DEFAULT": 0, "AVX2": 256, "AVX512": 512}[capability]
    cmd = codecache.compile_command("k.c", "k.so")
    assert ("-march=native" in cmd) == (capability == hardware)
    if capability != hardware:
        assert all(f in cmd for f in isa.arch_flags)
    name = f"ember_cc_isa_{capability.lower()}"
    mod = codecache.CppCodeCache.load(module_source(name, _SIMD_LOOP), name)
    asm = _disassembly(mod)
    assert ("%ymm" in asm) == (capability != "DEFAULT")
    assert "%zmm" not in asm or capability == "AVX512"
