"""The weight and bias gradients of ``native_layer_norm_backward`` over bfloat16 and float16
inputs, summed as ATen sums them.

Why: ATen's CPU kernel (``LayerNormBackwardKernelImplInternal``) does not sum these gradients
in float. Each of its threads adds its rows' terms ``dy * (rstd * x - rstd * mean)`` (and
``dy``) into a buffer of the *input's* dtype, rounding after every row; the threads' buffers
are then added in float, in thread order. A float sum, or any other grouping of the rows, gives
other numbers (by several bfloat16 ulps after a few hundred rows), and a bfloat16 training run
drifts away from PyTorch's step by step.

How: rows are split into threads as ``at::parallel_for(0, M, 1)`` splits them (``min(threads,
M)`` chunks of ``ceil(M / chunks)`` rows, thread ``t`` taking chunk ``t``) for the thread count
ember reports (``get_num_threads``, PyTorch's setting); each chunk's buffer is rounded to the
dtype after each row (round to nearest even, as c10 converts), and the buffers are added in
float. The chunks run on the OpenMP threads; the result depends on the thread count, not on
how many threads run it.

C-contiguous arrays only; :func:`weight_bias_grads` returns None where the module is not built
(no compiler, ``EMBER_EAGER_CODEGEN=0``): the caller's NumPy loop, which rounds the same way,
runs.
"""
import numpy as np

from ..._core import blas
from ..._inductor.codecache import HandWrittenModule
from . import generated

_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline float bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* c10's round_to_nearest_even */
static inline uint16_t float_to_bf16(float f)
{
    uint32_t u;
    if (f != f) return 0x7FC0;
    memcpy(&u, &f, 4);
    u += 0x7FFF + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

static inline float half_to_float(uint16_t h)
{
    _Float16 v;
    memcpy(&v, &h, 2);
    return (float)v;
}

static inline uint16_t float_to_half(float f)
{
    _Float16 v = (_Float16)f;
    uint16_t h;
    memcpy(&h, &v, 2);
    return h;
}

#define CHUNK_SUMS(NAME, TO_FLOAT, FROM_FLOAT)                                              \
static void NAME(const uint16_t* dy, const uint16_t* x, const float* mean, const float* rstd, \
                 uint16_t* bw, uint16_t* bb, int64_t M, int64_t N, int64_t chunk,            \
                 int64_t used, int64_t nt, int nthreads)                                    \
{                                                                                           \
    _Pragma("omp parallel for schedule(static) num_threads(nthreads)")                     \
    for (int64_t t = 0; t < used; t++) {                                                    \
        uint16_t* w = bw + t * N;                                                           \
        uint16_t* b = bb + t * N;                                                           \
        const int64_t end = (t + 1) * chunk < M ? (t + 1) * chunk : M;                      \
        for (int64_t i = t * chunk; i < end; i++) {                                         \
            const uint16_t* g = dy + i * N;                                                 \
            const uint16_t* xi = x + i * N;                                                 \
            const float a = rstd[i];                                                        \
            const float c = -a * mean[i];                                                   \
            for (int64_t j = 0; j < N; j++) {                                               \
                const float gj = TO_FLOAT(g[j]);                                            \
                w[j] = FROM_FLOAT(TO_FLOAT(w[j]) + gj * (a * TO_FLOAT(xi[j]) + c));         \
                b[j] = FROM_FLOAT(TO_FLOAT(b[j]) + gj);                                     \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
}

CHUNK_SUMS(chunk_sums_bf16, bf16_to_float, float_to_bf16)
CHUNK_SUMS(chunk_sums_half, half_to_float, float_to_half)

static int check(PyObject* o, int ndim, int itemsize, Py_buffer* view)
{
    if (PyObject_GetBuffer(o, view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) return 0;
    if (view->ndim != ndim || view->itemsize != itemsize) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "weight_bias_grads: bad array");
        return 0;
    }
    return 1;
}

/* weight_bias_grads(dy, x, mean, rstd, gw, gb, nt, nthreads, half): dy and x (M, N) uint16
 * (the bits), mean and rstd (M,) float32, gw and gb (N,) float32 outputs; nt the thread count
 * ATen's split follows, nthreads the OpenMP team. */
static PyObject* py_weight_bias_grads(PyObject* self, PyObject* const* args, Py_ssize_t n)
{
    Py_buffer v[6];
    const int ndims[6] = {2, 2, 1, 1, 1, 1}, sizes[6] = {2, 2, 4, 4, 4, 4};
    int got = 0;
    if (n != 9) {
        PyErr_SetString(PyExc_TypeError, "weight_bias_grads takes 9 arguments");
        return NULL;
    }
    for (; got < 6; got++)
        if (!check(args[got], ndims[got], sizes[got], &v[got])) break;
    PyObject* result = NULL;
    if (got == 6) {
        const int64_t M = v[0].shape[0], N = v[0].shape[1];
        const int64_t nt = PyLong_AsLongLong(args[6]);
        const int nthreads = (int)PyLong_AsLong(args[7]);
        const int half = PyObject_IsTrue(args[8]);
        const int64_t used = M < nt ? M : nt;
        uint16_t* buf = used > 0 ? calloc((size_t)(2 * used * N) + 1, sizeof(uint16_t)) : NULL;
        if (used > 0 && buf == NULL) {
            PyErr_NoMemory();
        } else {
            if (used > 0) {
                const int64_t chunk = (M + used - 1) / used;
                Py_BEGIN_ALLOW_THREADS
                (half ? chunk_sums_half : chunk_sums_bf16)(
                    v[0].buf, v[1].buf, v[2].buf, v[3].buf, buf, buf + used * N, M, N, chunk,
                    used, nt, nthreads);
                Py_END_ALLOW_THREADS
            }
            float* gw = v[4].buf;
            float* gb = v[5].buf;
            for (int64_t j = 0; j < N; j++) {
                float sw = 0.0f, sb = 0.0f;
                /* the threads past `used` kept zero buffers: adding them changes nothing */
                for (int64_t t = 0; t < used; t++) {
                    const uint16_t w = buf[t * N + j], b = buf[(used + t) * N + j];
                    sw += half ? half_to_float(w) : bf16_to_float(w);
                    sb += half ? half_to_float(b) : bf16_to_float(b);
                }
                gw[j] = sw;
                gb[j] = sb;
            }
            free(buf);
            result = Py_None;
            Py_INCREF(result);
        }
    }
    for (int i = 0; i < got; i++) PyBuffer_Release(&v[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"weight_bias_grads", (PyCFunction)(void (*)(void))py_weight_bias_grads, METH_FASTCALL,
     "layer_norm's weight and bias gradients over 16-bit float inputs"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_layer_norm_reduced", NULL, -1,
                                    methods};

PyMODINIT_FUNC PyInit_ember_layer_norm_reduced(void) { return PyModule_Create(&module); }
"""

_BUILT = HandWrittenModule("ember_layer_norm_reduced", lambda: _SOURCE,
                           "layer_norm's 16-bit weight gradients sum in a NumPy loop",
                           available=generated.enabled)


def weight_bias_grads(dy, x, mean, rstd, dtype, threads):
    """The float32 ``(N,)`` weight and bias gradients of layer_norm from ``(M, N)`` arrays
    ``dy`` and ``x`` of 16-bit float ``dtype`` (a NumPy dtype: ml_dtypes' bfloat16 or
    float16) and float32 ``(M,)`` ``mean`` and ``rstd``, for ``threads`` of ATen's."""
    m, n = x.shape
    half = dtype == np.float16
    module = _BUILT.get() if generated.enabled() else None
    if module is not None:
        gw, gb = np.empty(n, np.float32), np.empty(n, np.float32)
        team = 1 if blas.in_one_thread() or m * n < (1 << 15) else generated._threads()
        module.weight_bias_grads(
            np.ascontiguousarray(dy).view(np.uint16), np.ascontiguousarray(x).view(np.uint16),
            np.ascontiguousarray(mean, np.float32), np.ascontiguousarray(rstd, np.float32),
            gw, gb, threads, team, half)
        return gw, gb
    used = min(threads, m)
    if used == 0:
        return np.zeros(n, np.float32), np.zeros(n, np.float32)
    chunk = -(-m // used)
    g32, x32 = dy.astype(np.float32), x.astype(np.float32)
    a = rstd.astype(np.float32)
    c = -a * mean.astype(np.float32)
    bw = np.zeros((used, n), np.float32)
    bb = np.zeros((used, n), np.float32)
    # row k of every chunk at once; a chunk past its end adds nothing
    for k in range(chunk):
        rows = np.arange(used) * chunk + k
        live = rows < m
        r = rows[live]
        bw[live] = (bw[live] + g32[r] * (a[r, None] * x32[r] + c[r, None])).astype(dtype)
        bb[live] = (bb[live] + g32[r]).astype(dtype)
    gw, gb = np.zeros(n, np.float32), np.zeros(n, np.float32)
    for t in range(used):
        gw += bw[t]
        gb += bb[t]
    return gw, gb
