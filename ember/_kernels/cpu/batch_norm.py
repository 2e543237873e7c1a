"""The batch norm's two passes over its input in C, in ATen's arithmetic (``batch_norm_kernel.cpp``
for contiguous inputs), on the OpenMP threads:

* :func:`stats` -- per channel of x (N, C, M): the mean, from one sum in double in index order,
  and the sum of squared deviations from it (each square in x's dtype, summed in double); for
  one position per channel (``BatchNorm1d`` on (N, C)) ATen takes its channels-last loop,
  whose order depends on its thread count, ``ember.get_num_threads()`` here;
* :func:`transform` -- y = x * alpha[c] + beta[c], one fused multiply-add per element, where
  ``alpha = invstd * weight`` (``native_batch_norm`` computes it) and ``beta = bias - mean *
  alpha`` (a fused multiply-add too);
* :func:`backward` -- the per-channel sums of the gradient and of its product with the centred
  input (in double), and ATen's input gradient from them: two passes where NumPy makes eight.
  (ATen sums in float vectors, whose lanes depend on the CPU: the gradients agree to rounding.)

Why: NumPy's ``(x - mean) * invstd * weight + bias`` is four passes over the activations (half a
MobileNet's batch norms' time at batch 2) and rounds differently from PyTorch's one FMA: a third
of float32 results differed by an ulp. In ATen's order the forward is PyTorch's bit for bit.

Where the module is not built (no compiler, ``EMBER_EAGER_CODEGEN=0``), or for other dtypes and
layouts, the functions return None and the caller computes with NumPy.
"""
import numpy as np

from ..._core import blas
from ..._core.parallel import num_threads
from ..._inductor.codecache import HandWrittenModule
from . import generated

# Below this many elements a pass stays on the calling thread (an OpenMP team costs microseconds).
PARALLEL_NUMEL = 1 << 15

_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define STATS(T)                                                                           \
static void stats_##T(const T* x, int64_t n, int64_t c, int64_t m, T* mean, T* var_sum,   \
                      int nthreads)                                                        \
{                                                                                          \
    _Pragma("omp parallel for schedule(static) num_threads(nthreads)")                    \
    for (int64_t k = 0; k < c; k++) {                                                      \
        double sum = 0;                                                                    \
        for (int64_t b = 0; b < n; b++) {                                                  \
            const T* p = x + (b * c + k) * m;                                              \
            for (int64_t i = 0; i < m; i++) sum += p[i];                                   \
        }                                                                                  \
        const T mu = (T)(sum / (double)(n * m));                                           \
        double sq = 0;                                                                     \
        for (int64_t b = 0; b < n; b++) {                                                  \
            const T* p = x + (b * c + k) * m;                                              \
            for (int64_t i = 0; i < m; i++) {                                              \
                const T d = p[i] - mu;                                                     \
                sq += (T)(d * d);                                                          \
            }                                                                              \
        }                                                                                  \
        mean[k] = mu;                                                                      \
        var_sum[k] = (T)sq;                                                                \
    }                                                                                      \
}

/* Inputs of one position per channel (N, C): ATen's channels-last order when N exceeds its thread
 * count `parts`: each thread's block of rows summed in T into a row of `buf` (parts x C), the
 * blocks then summed in double; the squares likewise, each added by a fused multiply-add. */
#define STATS_ROWS(T, FMA)                                                                 \
static void stats_rows_##T(const T* x, int64_t n, int64_t c, int64_t parts, T* mean,       \
                           T* var_sum, T* buf)                                             \
{                                                                                          \
    const int64_t chunk = (n + parts - 1) / parts;                                         \
    memset(buf, 0, sizeof(T) * parts * c);                                                 \
    for (int64_t r = 0; r < n; r++)                                                        \
        for (int64_t k = 0; k < c; k++) buf[r / chunk * c + k] += x[r * c + k];            \
    for (int64_t k = 0; k < c; k++) {                                                      \
        double s = 0;                                                                      \
        for (int64_t p = 0; p < parts; p++) s += buf[p * c + k];                           \
        mean[k] = (T)(s / (double)n);                                                      \
    }                                                                                      \
    memset(buf, 0, sizeof(T) * parts * c);                                                 \
    for (int64_t r = 0; r < n; r++)                                                        \
        for (int64_t k = 0; k < c; k++) {                                                  \
            const T d = x[r * c + k] - mean[k];                                            \
            T* b = buf + r / chunk * c + k;                                                \
            *b = FMA(d, d, *b);                                                            \
        }                                                                                  \
    for (int64_t k = 0; k < c; k++) {                                                      \
        double s = 0;                                                                      \
        for (int64_t p = 0; p < parts; p++) s += buf[p * c + k];                           \
        var_sum[k] = (T)s;                                                                 \
    }                                                                                      \
}

#define TRANSFORM(T, FMA)                                                                  \
static void transform_##T(const T* x, int64_t n, int64_t c, int64_t m, const T* alpha,    \
                          const T* mean, const T* bias, T* y, int nthreads)                \
{                                                                                          \
    _Pragma("omp parallel for schedule(static) num_threads(nthreads)")                    \
    for (int64_t r = 0; r < n * c; r++) {                                                  \
        const T a = alpha[r % c], b = FMA(-mean[r % c], a, bias[r % c]);                   \
        const T* restrict p = x + r * m;                                                   \
        T* restrict q = y + r * m;                                                         \
        for (int64_t i = 0; i < m; i++) q[i] = FMA(p[i], a, b);                            \
    }                                                                                      \
}

/* The backward: per channel, the sum of dy and of (x - mean) * dy (in double), then, where gx is
 * given, ATen's input gradient: training, (dy - sum / count - (x - mean) * k) * invstd * w with
 * k = dotp * invstd^2 / count; eval, dy * invstd * w. */
#define BACKWARD(T)                                                                        \
static void backward_##T(const T* x, const T* dy, int64_t n, int64_t c, int64_t m,         \
                         const T* mean, const T* invstd, const T* weight, int train, T* gx, \
                         T* sum_out, T* dotp_out, int nthreads)                            \
{                                                                                          \
    const double count = (double)(n * m);                                                  \
    _Pragma("omp parallel for schedule(static) num_threads(nthreads)")                    \
    for (int64_t k = 0; k < c; k++) {                                                      \
        const T mu = mean[k];                                                              \
        double sum = 0, dotp = 0;                                                          \
        for (int64_t b = 0; b < n; b++) {                                                  \
            const T* px = x + (b * c + k) * m;                                             \
            const T* pg = dy + (b * c + k) * m;                                            \
            for (int64_t i = 0; i < m; i++) {                                              \
                sum += pg[i];                                                              \
                dotp += (double)((px[i] - mu) * pg[i]);                                    \
            }                                                                              \
        }                                                                                  \
        sum_out[k] = (T)sum;                                                               \
        dotp_out[k] = (T)dotp;                                                             \
        if (!gx) continue;                                                                 \
        const T is = invstd[k], w = weight[k];                                             \
        const T scale = (T)(dotp * is * is / count), grad_mean = (T)(sum / count);         \
        for (int64_t b = 0; b < n; b++) {                                                  \
            const T* restrict px = x + (b * c + k) * m;                                    \
            const T* restrict pg = dy + (b * c + k) * m;                                   \
            T* restrict q = gx + (b * c + k) * m;                                          \
            if (train)                                                                     \
                for (int64_t i = 0; i < m; i++)                                            \
                    q[i] = (pg[i] - grad_mean - (px[i] - mu) * scale) * is * w;            \
            else                                                                           \
                for (int64_t i = 0; i < m; i++) q[i] = pg[i] * is * w;                     \
        }                                                                                  \
    }                                                                                      \
}

STATS(float)
STATS(double)
BACKWARD(float)
BACKWARD(double)
STATS_ROWS(float, fmaf)
STATS_ROWS(double, fma)
TRANSFORM(float, fmaf)
TRANSFORM(double, fma)

/* The buffer of a C-contiguous float32/float64 array; its format char in *kind. */
static int get(PyObject* obj, Py_buffer* view, int writable, char* kind)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT
                                      | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (strcmp(view->format, "f") && strcmp(view->format, "d")) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "batch_norm: float32/float64 arrays");
        return -1;
    }
    *kind = view->format[0];
    return 0;
}

/* stats(x, mean, var_sum, nthreads, parts) for x (N, C, M); mean and var_sum (C,). With M == 1
 * and N > parts: the rows' order of ATen's `parts` threads. */
static PyObject* py_stats(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 5) { PyErr_SetString(PyExc_TypeError, "stats: 5 arguments"); return NULL; }
    const long nthreads = PyLong_AsLong(args[3]);
    if (nthreads == -1 && PyErr_Occurred()) return NULL;
    const long parts = PyLong_AsLong(args[4]);
    if (parts == -1 && PyErr_Occurred()) return NULL;
    Py_buffer x, mean, var;
    char kx, km, kv;
    if (get(args[0], &x, 0, &kx) < 0) return NULL;
    if (get(args[1], &mean, 1, &km) < 0) { PyBuffer_Release(&x); return NULL; }
    if (get(args[2], &var, 1, &kv) < 0) {
        PyBuffer_Release(&x); PyBuffer_Release(&mean); return NULL;
    }
    int ok = x.ndim == 3 && kx == km && kx == kv && mean.len == var.len
             && mean.len / mean.itemsize == x.shape[1] && parts > 0;
    void* buf = NULL;
    if (ok && x.shape[2] == 1 && x.shape[0] > parts) {
        buf = malloc((size_t)x.itemsize * parts * x.shape[1] + 1);
        if (!buf) {
            PyBuffer_Release(&x); PyBuffer_Release(&mean); PyBuffer_Release(&var);
            return PyErr_NoMemory();
        }
        Py_BEGIN_ALLOW_THREADS
        if (kx == 'f')
            stats_rows_float(x.buf, x.shape[0], x.shape[1], parts, mean.buf, var.buf, buf);
        else
            stats_rows_double(x.buf, x.shape[0], x.shape[1], parts, mean.buf, var.buf, buf);
        Py_END_ALLOW_THREADS
        free(buf);
    } else if (ok) {
        Py_BEGIN_ALLOW_THREADS
        if (kx == 'f')
            stats_float(x.buf, x.shape[0], x.shape[1], x.shape[2], mean.buf, var.buf,
                        (int)nthreads);
        else
            stats_double(x.buf, x.shape[0], x.shape[1], x.shape[2], mean.buf, var.buf,
                         (int)nthreads);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&x); PyBuffer_Release(&mean); PyBuffer_Release(&var);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "stats: x (N, C, M), mean and var_sum (C,), one dtype");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* transform(x, alpha, mean, bias, y, nthreads) for x and y (N, C, M); alpha, mean and
 * bias (C,) */
static PyObject* py_transform(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 6) { PyErr_SetString(PyExc_TypeError, "transform: 6 arguments"); return NULL; }
    const long nthreads = PyLong_AsLong(args[5]);
    if (nthreads == -1 && PyErr_Occurred()) return NULL;
    Py_buffer v[5];
    char k[5];
    int got = 0;
    for (; got < 5; got++)
        if (get(args[got], &v[got], got == 4, &k[got]) < 0) break;
    int ok = got == 5;
    if (ok) {
        ok = v[0].ndim == 3 && v[4].ndim == 3 && v[0].len == v[4].len;
        for (int i = 1; ok && i < 4; i++)
            ok = v[i].len / v[i].itemsize == v[0].shape[1] && v[i].len == v[1].len;
        for (int i = 1; ok && i < 5; i++) ok = k[i] == k[0];
        for (int d = 0; ok && d < 3; d++) ok = v[0].shape[d] == v[4].shape[d];
        if (ok) {
            Py_BEGIN_ALLOW_THREADS
            if (k[0] == 'f')
                transform_float(v[0].buf, v[0].shape[0], v[0].shape[1], v[0].shape[2], v[1].buf,
                                v[2].buf, v[3].buf, v[4].buf, (int)nthreads);
            else
                transform_double(v[0].buf, v[0].shape[0], v[0].shape[1], v[0].shape[2],
                                 v[1].buf, v[2].buf, v[3].buf, v[4].buf, (int)nthreads);
            Py_END_ALLOW_THREADS
        } else {
            PyErr_SetString(PyExc_ValueError, "transform: x and y (N, C, M), alpha, mean and "
                                              "bias (C,), one dtype");
        }
    }
    for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

/* backward(x, dy, mean, invstd, weight, train, gx or None, sum, dotp, nthreads): x, dy and gx
 * (N, C, M); mean, invstd, weight, sum and dotp (C,) */
static PyObject* py_backward(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 10) { PyErr_SetString(PyExc_TypeError, "backward: 10 arguments"); return NULL; }
    const int train = PyObject_IsTrue(args[5]);
    const long nthreads = PyLong_AsLong(args[9]);
    if (train < 0 || (nthreads == -1 && PyErr_Occurred())) return NULL;
    const int has_gx = args[6] != Py_None;
    /* operands in the order x, dy, mean, invstd, weight, sum, dotp, gx */
    PyObject* objs[8] = {args[0], args[1], args[2], args[3], args[4], args[7], args[8], args[6]};
    Py_buffer v[8];
    char k[8];
    int got = 0;
    for (; got < 7 + has_gx; got++)
        if (get(objs[got], &v[got], got >= 5, &k[got]) < 0) break;
    int ok = got == 7 + has_gx;
    if (ok) {
        ok = v[0].ndim == 3 && v[1].ndim == 3 && v[0].len == v[1].len
             && (!has_gx || (v[7].ndim == 3 && v[7].len == v[0].len));
        for (int d = 0; ok && d < 3; d++)
            ok = v[1].shape[d] == v[0].shape[d] && (!has_gx || v[7].shape[d] == v[0].shape[d]);
        for (int i = 2; ok && i < 7; i++) ok = v[i].len / v[i].itemsize == v[0].shape[1];
        for (int i = 1; ok && i < got; i++) ok = k[i] == k[0];
        if (ok) {
            const int64_t n = v[0].shape[0], c = v[0].shape[1], m = v[0].shape[2];
            Py_BEGIN_ALLOW_THREADS
            if (k[0] == 'f')
                backward_float(v[0].buf, v[1].buf, n, c, m, v[2].buf, v[3].buf, v[4].buf, train,
                               has_gx ? v[7].buf : NULL, v[5].buf, v[6].buf, (int)nthreads);
            else
                backward_double(v[0].buf, v[1].buf, n, c, m, v[2].buf, v[3].buf, v[4].buf, train,
                                has_gx ? v[7].buf : NULL, v[5].buf, v[6].buf, (int)nthreads);
            Py_END_ALLOW_THREADS
        } else {
            PyErr_SetString(PyExc_ValueError, "backward: x, dy and gx (N, C, M), the per-channel "
                                              "arrays (C,), one dtype");
        }
    }
    for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"backward", (PyCFunction)(void (*)(void))py_backward, METH_FASTCALL, "the gradients"},
    {"stats", (PyCFunction)(void (*)(void))py_stats, METH_FASTCALL, "mean and var_sum"},
    {"transform", (PyCFunction)(void (*)(void))py_transform, METH_FASTCALL, "x * alpha + beta"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_batch_norm", NULL, -1, methods};

PyMODINIT_FUNC PyInit_ember_batch_norm(void) { return PyModule_Create(&module); }
"""

_BUILT = HandWrittenModule("ember_batch_norm", lambda: _SOURCE, "batch norm stays NumPy's",
                           available=generated.enabled)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _module(x):
    """The built module and a thread count where it takes ``x``; (None, 0) else."""
    if (type(x) is not np.ndarray or x.dtype not in _FLOATS or x.ndim < 2
            or not x.flags.c_contiguous or not generated.enabled()):
        return None, 0
    one = x.size < PARALLEL_NUMEL or blas.in_one_thread()
    return _BUILT.get(), (1 if one else generated._threads())


def _as3d(x):
    return x.reshape(x.shape[0], x.shape[1], -1)


def stats(x):
    """(mean, sum of squared deviations) per channel of x (N, C, *S), or None."""
    m, threads = _module(x)
    if m is None:
        return None
    mean, var_sum = np.empty(x.shape[1], x.dtype), np.empty(x.shape[1], x.dtype)
    m.stats(_as3d(x), mean, var_sum, threads, num_threads())
    return mean, var_sum


def transform(x, alpha, mean, bias):
    """x * alpha + beta per channel of x (N, C, *S), beta = bias - mean * alpha (arrays (C,) of
    x's dtype), each one rounding; or None."""
    m, threads = _module(x)
    if m is None:
        return None
    y = np.empty_like(x)
    m.transform(_as3d(x), *[np.ascontiguousarray(a) for a in (alpha, mean, bias)], _as3d(y),
                threads)
    return y


def backward(x, dy, mean, invstd, weight, train, grad_input):
    """(grad_input or None, sum of dy, sum of (x - mean) * dy) per channel of x (N, C, *S), from
    the per-channel mean, invstd and weight (arrays of x's dtype); or None."""
    m, threads = _module(x)
    if m is None or type(dy) is not np.ndarray or dy.dtype != x.dtype or dy.shape != x.shape:
        return None
    dy = np.ascontiguousarray(dy)
    gx = np.empty_like(x) if grad_input else None
    sums, dotp = np.empty(x.shape[1], x.dtype), np.empty(x.shape[1], x.dtype)
    m.backward(_as3d(x), _as3d(dy), *[np.ascontiguousarray(a, x.dtype) for a in
                                      (mean, invstd, weight)],
               bool(train), None if gx is None else _as3d(gx), sums, dotp, threads)
    return gx, sums, dotp
