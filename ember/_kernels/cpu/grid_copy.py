"""The data movement of the convolutions' grid path (``conv.py``) in C, on the OpenMP threads.

The grid path multiplies shifted rows of a zero-padded copy of the input and keeps the outputs
among the grid's positions: two copies around one GEMM, ~0.8 ms of a 5 ms convolution (8 x 64 x
56 x 56, 3 x 3) when NumPy makes them on one thread. Split over Python threads they got slower
(5.0 -> 5.4 ms): the GEMM's OpenMP threads spin on the cores for a while after each product.
Here both copies run as OpenMP loops over rows, in the pool the GEMM uses.

* :func:`padded` -- ``(N, C, *S)`` zero-padded to ``(N, C, *(before + S + after))``, each row of
  the result written once (zeros and the source row);
* :func:`copy` -- ``dst[...] = src`` for arrays of one shape and float dtype, dst's last dim
  contiguous (the grid's output positions into the result; the column matrices of strided
  convolutions, whose source rows are strided);
* :func:`transpose_rows` -- the transpose of some of a matrix's rows (the weight gradient, which
  the GEMM makes as (kernel offset x channel, output channel), into the weight's layout).

Where the module is not built (no compiler, ``EMBER_EAGER_CODEGEN=0``), or for other dtypes and
layouts, NumPy makes the copies.
"""
import numpy as np

from ..._core import blas
from ..._core.allocator import cpu_cache as _cpu_cache
from ..._inductor.codecache import HandWrittenModule
from . import generated

# Below this many bytes a copy stays on the calling thread (an OpenMP team costs microseconds).
PARALLEL_BYTES = 1 << 20

_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum { MAX_DIMS = 10 };

/* The element offsets of row r of an array of `nd` dims (rows: every index but the last):
 * index[d] for d < nd - 1, most significant first. */
static void row_index(int64_t r, int nd, const Py_ssize_t* shape, int64_t* index)
{
    for (int d = nd - 2; d >= 0; d--) {
        index[d] = r % shape[d];
        r /= shape[d];
    }
}

/* dst (N, C, *P) = src (N, C, *S) zero-padded by before[d] elements ahead of spatial dim d
 * (and P - S - before after it); both C-contiguous, `size` bytes per element. */
static void pad(char* dst, const Py_ssize_t* pshape, const char* src, const Py_ssize_t* sshape,
                const int64_t* before, int nd, size_t size, int nthreads)
{
    int64_t rows = 1;
    for (int d = 0; d < nd - 1; d++) rows *= pshape[d];
    const size_t prow = (size_t)pshape[nd - 1] * size, srow = (size_t)sshape[nd - 1] * size;
    const size_t lead = (size_t)before[nd - 3] * size;
    #pragma omp parallel for schedule(static) num_threads(nthreads)
    for (int64_t r = 0; r < rows; r++) {
        int64_t index[MAX_DIMS];
        row_index(r, nd, pshape, index);
        char* out = dst + r * prow;
        int64_t s = 0;  /* the source row, when this row is inside the source */
        int inside = 1;
        for (int d = 0; d < nd - 1; d++) {
            int64_t i = index[d];
            if (d >= 2) {
                i -= before[d - 2];
                if (i < 0 || i >= sshape[d]) { inside = 0; break; }
            }
            s = s * sshape[d] + i;
        }
        if (!inside) { memset(out, 0, prow); continue; }
        memset(out, 0, lead);
        memcpy(out + lead, src + s * srow, srow);
        memset(out + lead + srow, 0, prow - lead - srow);
    }
}

/* dst = src, elementwise; one shape, `size`-byte elements (4 or 8), byte strides, dst's last
 * dim contiguous; src's last dim contiguous (a row is one memcpy) or strided (the columns of a
 * strided convolution: every stride-th input element). Each thread takes a run of rows and
 * steps through their offsets (rows can be a few elements: a division per dim per row cost as
 * much as the copy). */
static void copy(char* dst, const Py_ssize_t* dstrides, const char* src,
                 const Py_ssize_t* sstrides, const Py_ssize_t* shape, int nd, size_t size,
                 int nthreads)
{
    int64_t rows = 1;
    for (int d = 0; d < nd - 1; d++) rows *= shape[d];
    const int64_t n = shape[nd - 1], step = sstrides[nd - 1];
    const int contiguous = n <= 1 || step == (Py_ssize_t)size;
    #pragma omp parallel for schedule(static) num_threads(nthreads)
    for (int t = 0; t < nthreads; t++) {
        const int64_t r0 = rows * t / nthreads, r1 = rows * (t + 1) / nthreads;
        int64_t index[MAX_DIMS];
        row_index(r0, nd, shape, index);
        int64_t d_off = 0, s_off = 0;
        for (int d = 0; d < nd - 1; d++) {
            d_off += index[d] * dstrides[d];
            s_off += index[d] * sstrides[d];
        }
        for (int64_t r = r0; r < r1; r++) {
            char* out = dst + d_off;
            const char* in = src + s_off;
            if (contiguous)
                memcpy(out, in, (size_t)n * size);
            else if (size == 4)
                for (int64_t j = 0; j < n; j++) ((float*)out)[j] = *(const float*)(in + j * step);
            else
                for (int64_t j = 0; j < n; j++) ((double*)out)[j] = *(const double*)(in + j * step);
            for (int d = nd - 2; d >= 0; d--) {  /* the next row's index and offsets */
                d_off += dstrides[d];
                s_off += sstrides[d];
                if (++index[d] < shape[d]) break;
                d_off -= shape[d] * dstrides[d];
                s_off -= shape[d] * sstrides[d];
                index[d] = 0;
            }
        }
    }
}

/* dst (O, J) = src (R, O) transposed with its rows picked: dst[o][j] = src[rows[j]][o], in
 * tiles of TILE x TILE (both sides then read and write whole cache lines), `size`-byte
 * elements. */
enum { TILE = 32 };

static void transpose_rows(char* dst, const char* src, const int64_t* rows, int64_t o_count,
                           int64_t j_count, size_t size, int nthreads)
{
    const int64_t tiles = (o_count + TILE - 1) / TILE;
    #pragma omp parallel for schedule(static) num_threads(nthreads)
    for (int64_t t = 0; t < tiles; t++) {
        const int64_t o0 = t * TILE, o1 = o0 + TILE < o_count ? o0 + TILE : o_count;
        for (int64_t j0 = 0; j0 < j_count; j0 += TILE) {
            const int64_t j1 = j0 + TILE < j_count ? j0 + TILE : j_count;
            for (int64_t j = j0; j < j1; j++) {
                const char* in = src + ((size_t)rows[j] * o_count + o0) * size;
                if (size == 4)
                    for (int64_t o = o0; o < o1; o++)
                        ((float*)dst)[o * j_count + j] = ((const float*)in)[o - o0];
                else
                    for (int64_t o = o0; o < o1; o++)
                        ((double*)dst)[o * j_count + j] = ((const double*)in)[o - o0];
            }
        }
    }
}

static int float_buffer(PyObject* obj, Py_buffer* view, int flags)
{
    if (PyObject_GetBuffer(obj, view, flags | PyBUF_FORMAT) < 0) return -1;
    if ((strcmp(view->format, "f") && strcmp(view->format, "d")) || view->ndim < 1
            || view->ndim > MAX_DIMS) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "grid_copy: float32/float64 arrays of 1-10 dims");
        return -1;
    }
    return 0;
}

/* pad(dst, src, before (int64 array, one per spatial dim), nthreads) */
static PyObject* py_pad(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 4) { PyErr_SetString(PyExc_TypeError, "pad: 4 arguments"); return NULL; }
    const long nthreads = PyLong_AsLong(args[3]);
    if (nthreads == -1 && PyErr_Occurred()) return NULL;
    Py_buffer d, s, b;
    if (float_buffer(args[0], &d, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return NULL;
    if (float_buffer(args[1], &s, PyBUF_C_CONTIGUOUS) < 0) { PyBuffer_Release(&d); return NULL; }
    if (PyObject_GetBuffer(args[2], &b, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&d); PyBuffer_Release(&s); return NULL;
    }
    const char* bad = NULL;
    const int nd = d.ndim;
    const int64_t* before = b.buf;
    if (s.ndim != nd || nd < 3 || s.itemsize != d.itemsize || b.itemsize != 8
            || b.len / 8 != nd - 2)
        bad = "(N, C, *S) into (N, C, *P) of one dtype, one int64 offset per spatial dim";
    for (int i = 0; i < nd && !bad; i++) {
        const int64_t lo = i < 2 ? 0 : before[i - 2];
        if (lo < 0 || s.shape[i] + lo > d.shape[i] || (i < 2 && s.shape[i] != d.shape[i]))
            bad = "a source inside the padded array";
    }
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        pad(d.buf, d.shape, s.buf, s.shape, before, nd, (size_t)d.itemsize, (int)nthreads);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&d); PyBuffer_Release(&s); PyBuffer_Release(&b);
    if (bad) { PyErr_Format(PyExc_ValueError, "pad: needs %s", bad); return NULL; }
    Py_RETURN_NONE;
}

/* copy(dst, src, nthreads) */
static PyObject* py_copy(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "copy: 3 arguments"); return NULL; }
    const long nthreads = PyLong_AsLong(args[2]);
    if (nthreads == -1 && PyErr_Occurred()) return NULL;
    Py_buffer d, s;
    if (float_buffer(args[0], &d, PyBUF_STRIDES | PyBUF_WRITABLE) < 0) return NULL;
    if (float_buffer(args[1], &s, PyBUF_STRIDES) < 0) { PyBuffer_Release(&d); return NULL; }
    const char* bad = NULL;
    const int nd = d.ndim;
    if (s.ndim != nd || s.itemsize != d.itemsize) bad = "arrays of one shape and dtype";
    for (int i = 0; i < nd && !bad; i++)
        if (s.shape[i] != d.shape[i]) bad = "arrays of one shape and dtype";
    if (!bad && d.shape[nd - 1] > 1 && d.strides[nd - 1] != d.itemsize)
        bad = "a contiguous last dim in dst";
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        copy(d.buf, d.strides, s.buf, s.strides, d.shape, nd, (size_t)d.itemsize, (int)nthreads);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&d); PyBuffer_Release(&s);
    if (bad) { PyErr_Format(PyExc_ValueError, "copy: needs %s", bad); return NULL; }
    Py_RETURN_NONE;
}

/* transpose_rows(dst, src, rows, nthreads) */
static PyObject* py_transpose_rows(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "transpose_rows: 4 arguments");
        return NULL;
    }
    const long nthreads = PyLong_AsLong(args[3]);
    if (nthreads == -1 && PyErr_Occurred()) return NULL;
    Py_buffer d, s, r;
    if (float_buffer(args[0], &d, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return NULL;
    if (float_buffer(args[1], &s, PyBUF_C_CONTIGUOUS) < 0) { PyBuffer_Release(&d); return NULL; }
    if (PyObject_GetBuffer(args[2], &r, PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&d); PyBuffer_Release(&s); return NULL;
    }
    const char* bad = NULL;
    const int64_t* rows = r.buf;
    if (d.ndim != 2 || s.ndim != 2 || s.itemsize != d.itemsize || r.itemsize != 8
            || s.shape[1] != d.shape[0] || r.len / 8 != d.shape[1])
        bad = "dst (O, J), src (R, O) of one dtype and J int64 rows";
    for (int64_t j = 0; j < d.shape[1] && !bad; j++)
        if (rows[j] < 0 || rows[j] >= s.shape[0]) bad = "rows inside src";
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        transpose_rows(d.buf, s.buf, rows, d.shape[0], d.shape[1], (size_t)d.itemsize,
                       (int)nthreads);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&d); PyBuffer_Release(&s); PyBuffer_Release(&r);
    if (bad) { PyErr_Format(PyExc_ValueError, "transpose_rows: needs %s", bad); return NULL; }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"transpose_rows", (PyCFunction)(void (*)(void))py_transpose_rows, METH_FASTCALL,
     "dst[o][j] = src[rows[j]][o]"},
    {"pad", (PyCFunction)(void (*)(void))py_pad, METH_FASTCALL, "zero-padded copy"},
    {"copy", (PyCFunction)(void (*)(void))py_copy, METH_FASTCALL, "dst[...] = src"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_grid_copy", NULL, -1, methods};

PyMODINIT_FUNC PyInit_ember_grid_copy(void) { return PyModule_Create(&module); }
"""

_BUILT = HandWrittenModule("ember_grid_copy", lambda: _SOURCE, "grid copies stay NumPy's",
                           available=generated.enabled)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _module(nbytes, dtype):
    """The built module where it takes this copy, and its thread count; (None, 0) else."""
    if dtype not in _FLOATS or not generated.enabled():
        return None, 0
    m = _BUILT.get()
    # one thread for a small copy, or inside a parallel_for chunk (its caller's threads)
    one = nbytes < PARALLEL_BYTES or blas.in_one_thread()
    return m, (1 if one else generated._threads())


def padded(x, before, after=None):
    """(N, C, *S + before + after) zero-padded copy of x (N, C, *S), ``before`` elements ahead of
    each spatial dim and ``after`` (default: the same) behind it. From the caching allocator:
    the grid path's buffers are several MiB each, and fresh pages cost a page fault per 4 KiB."""
    n, c, *s = x.shape
    after = before if after is None else after
    xp = _cpu_cache.empty((n, c, *[a + p + q for a, p, q in zip(s, before, after)]), x.dtype)
    m, threads = _module(xp.nbytes, x.dtype)
    if m is not None and x.flags.c_contiguous:
        try:
            m.pad(xp, x, np.asarray(before, np.int64), threads)
            return xp
        except ValueError:  # a layout the C code does not take (unaligned, byte-swapped)
            pass
    for d, (p, q) in enumerate(zip(before, after)):
        lead = (slice(None),) * (2 + d)
        if p:
            xp[lead + (slice(0, p),)] = 0
        if q:
            xp[lead + (slice(p + s[d], None),)] = 0
    xp[(slice(None), slice(None), *[slice(p, p + a) for a, p in zip(s, before)])] = x
    return xp


def copy(dst, src):
    """``dst[...] = src`` (one shape and dtype)."""
    m, threads = _module(dst.nbytes, dst.dtype)
    if (m is not None and src.dtype == dst.dtype and src.shape == dst.shape
            and dst.ndim and dst.strides[-1] == dst.itemsize):
        try:
            m.copy(dst, src, threads)
            return
        except ValueError:  # a layout the C code does not take (unaligned, byte-swapped)
            pass
    np.copyto(dst, src)


def transpose_rows(src, rows):
    """``src[rows].T`` (src (R, O) C-contiguous, rows (J,) int64): the (O, J) transpose of the
    picked rows, in tiles (NumPy's strided copy of a transpose reads a cache line per element:
    30x a plain copy's time for 2048 x 512)."""
    out = np.empty((src.shape[1], len(rows)), src.dtype)
    m, threads = _module(out.nbytes, src.dtype)
    if m is not None and src.flags.c_contiguous:
        try:
            m.transpose_rows(out, src, np.ascontiguousarray(rows, np.int64), threads)
            return out
        except ValueError:  # a layout the C code does not take (unaligned, byte-swapped)
            pass
    np.copyto(out, src[rows].T)
    return out
