"""``out[idx[i]] += src[i]`` for the rows of 2-d float arrays, in C, in ATen's order: into each
row its current value first, then the source rows in index order (``embedding_dense_backward``,
``index_add_``, ``index_put_(accumulate=True)`` on CPU).

Why: NumPy has no ordered scatter-add faster than ``np.add.at`` (an element at a time), and
``_util.add_rows_at``'s rounds of fancy-index adds cost a round per repeat of the most frequent
index: an embedding's backward over real text, where a few tokens fill much of the batch
(8 x 512 indices from 50 values: 24 ms where PyTorch takes 1.8).

Threads split the output rows (each thread scans every index and adds those in its rows), as
ATen's kernel does, so the order into each row, and the result, is the same on any count.
Where the module is not built (no compiler, ``EMBER_EAGER_CODEGEN=0``) :func:`add_rows`
returns False and the caller adds with NumPy.
"""
import numpy as np

from ..._core import blas
from ..._inductor.codecache import HandWrittenModule
from . import generated

# Below this many source elements the adds stay on the calling thread.
PARALLEL_NUMEL = 1 << 16

_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* the adds into output rows [lo, hi), in index order */
#define ADD_ROWS(T)                                                                        \
static void add_range_##T(T* out, int64_t lo, int64_t hi, int64_t d, const int64_t* idx,  \
                          int64_t n, const T* src)                                         \
{                                                                                          \
    for (int64_t i = 0; i < n; i++) {                                                      \
        const int64_t k = idx[i];                                                          \
        if (k < lo || k >= hi) continue;                                                   \
        T* restrict o = out + k * d;                                                       \
        const T* restrict s = src + i * d;                                                 \
        for (int64_t j = 0; j < d; j++) o[j] += s[j];                                      \
    }                                                                                      \
}                                                                                          \
                                                                                           \
static void add_rows_##T(T* out, int64_t rows, int64_t d, const int64_t* idx, int64_t n,  \
                         const T* src, int nthreads)                                       \
{                                                                                          \
    if (nthreads <= 1) { /* (no OpenMP runtime: a forked child may not have its pool) */  \
        add_range_##T(out, 0, rows, d, idx, n, src);                                       \
        return;                                                                            \
    }                                                                                      \
    _Pragma("omp parallel for schedule(static, 1) num_threads(nthreads)")                 \
    for (int t = 0; t < nthreads; t++)                                                     \
        add_range_##T(out, rows * t / nthreads, rows * (t + 1) / nthreads, d, idx, n,      \
                      src);                                                                \
}

ADD_ROWS(float)
ADD_ROWS(double)

/* add_rows(out (R, D), idx (n,) int64 in [0, R), src (n, D), nthreads) */
static PyObject* py_add_rows(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 4) { PyErr_SetString(PyExc_TypeError, "add_rows: 4 arguments"); return NULL; }
    const long nthreads = PyLong_AsLong(args[3]);
    if (nthreads == -1 && PyErr_Occurred()) return NULL;
    Py_buffer o, i, s;
    const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (PyObject_GetBuffer(args[0], &o, flags | PyBUF_WRITABLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[1], &i, flags) < 0) { PyBuffer_Release(&o); return NULL; }
    if (PyObject_GetBuffer(args[2], &s, flags) < 0) {
        PyBuffer_Release(&o); PyBuffer_Release(&i); return NULL;
    }
    const char* bad = NULL;
    if (o.ndim != 2 || s.ndim != 2 || i.ndim != 1 || strcmp(o.format, s.format)
            || (strcmp(o.format, "f") && strcmp(o.format, "d")) || i.itemsize != 8
            || (strcmp(i.format, "l") && strcmp(i.format, "q"))
            || s.shape[0] != i.shape[0] || s.shape[1] != o.shape[1])
        bad = "out (R, D) and src (n, D) of one float dtype, idx (n,) int64";
    const int64_t* idx = i.buf;
    for (Py_ssize_t k = 0; k < i.shape[0] && !bad; k++)
        if (idx[k] < 0 || idx[k] >= o.shape[0]) bad = "indices in [0, R)";
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        if (o.itemsize == 4)
            add_rows_float(o.buf, o.shape[0], o.shape[1], idx, i.shape[0], s.buf,
                           (int)nthreads);
        else
            add_rows_double(o.buf, o.shape[0], o.shape[1], idx, i.shape[0], s.buf,
                            (int)nthreads);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&o); PyBuffer_Release(&i); PyBuffer_Release(&s);
    if (bad) { PyErr_Format(PyExc_ValueError, "add_rows: needs %s", bad); return NULL; }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"add_rows", (PyCFunction)(void (*)(void))py_add_rows, METH_FASTCALL,
     "out[idx[i]] += src[i] in index order"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_add_rows", NULL, -1, methods};

PyMODINIT_FUNC PyInit_ember_add_rows(void) { return PyModule_Create(&module); }
"""

_BUILT = HandWrittenModule("ember_add_rows", lambda: _SOURCE, "ordered row adds stay NumPy's",
                           available=generated.enabled)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def add_rows(out, idx, src):
    """``out[idx[i]] += src[i]`` in index order (``out`` (R, D) C-contiguous, ``idx`` int64 in
    [0, R), ``src`` (n, D) of out's dtype, cast otherwise); False where the module does not
    take it (the caller adds with NumPy)."""
    if (type(out) is not np.ndarray or out.dtype not in _FLOATS or out.ndim != 2
            or not out.flags.c_contiguous or not generated.enabled()):
        return False
    m = _BUILT.get()
    if m is None:
        return False
    one = src.size < PARALLEL_NUMEL or blas.in_one_thread()
    try:
        m.add_rows(out, np.ascontiguousarray(idx, np.int64),
                   np.ascontiguousarray(src, out.dtype), 1 if one else generated._threads())
    except ValueError:  # a layout the C code does not take (unaligned, byte-swapped)
        return False
    return True
