"""Max pooling in C, on the OpenMP threads: the forward with indices of 2-D and 3-D pooling
(``max_pool2d_with_indices``, ``max_pool3d_with_indices``) and the backward of every pooling
that returns indices (the gradient added at each output's index).

Why: NumPy takes a padded copy of the input, an ``argmax`` over an ``as_strided`` window view
(which it walks element by element) and index arithmetic: 5.5 ms for a ResNet's stem pooling
(2 x 64 x 64 x 64, 3 x 3, stride 2, padding 1) on one thread or two, PyTorch about 0.5 on one.
The backward's ``bincount`` sums in double and rounds once, where ATen adds in the input's
dtype output by output: results that differ in the last bit where windows overlap.

How, as ATen's ``cpu_max_pool`` (MaxPoolKernel.cpp) for contiguous inputs: each output scans
its window's positions inside the input (no padded copy: the padding is never read), depth,
then height, then width, keeping a value when it is greater than the maximum so far or NaN, so
the first maximum wins and the last NaN; the index starts at the window's first position
inside the input, which an all ``-inf`` window keeps. The windows' bounds along each dim are
tables made once per call. The backward zeroes each plane of the input gradient and adds the
outputs' gradients at their indices in output order, in the dtype (ATen's
``cpu_max_pool_backward``).

Threads: the forward splits the rows of outputs (plane, depth, height), the backward the planes
(two outputs of one plane may share an index); each result is summed in one order on any
thread count. Small calls run on the calling thread.

float32/float64 C-contiguous arrays only; :func:`forward` and :func:`backward` return None for
anything else, and where the module is not built (no compiler, ``EMBER_EAGER_CODEGEN=0``): the
caller's NumPy code runs.
"""
import numpy as np

from ..._core import blas
from ..._inductor.codecache import HandWrittenModule
from . import generated

# Below this many window positions (forward) or gradient elements (backward) a call runs on the
# calling thread (an OpenMP team costs microseconds).
PARALLEL_WORK = 1 << 16

_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* Along one dim of an input of n positions, output o reads positions lo[o], lo[o] + dil, ...
 * below hi[o]: the window's positions inside the input (ATen's bounds). */
static void bounds(int64_t* lo, int64_t* hi, int64_t out, int64_t n, int64_t k, int64_t s,
                   int64_t p, int64_t dil)
{
    for (int64_t o = 0; o < out; o++) {
        int64_t a = o * s - p;
        const int64_t b = a + (k - 1) * dil + 1;
        while (a < 0) a += dil;
        lo[o] = a;
        hi[o] = b < n ? b : n;
    }
}

/* Outputs lo <= ow < hi of a row, whose window column reads input position ow * S + off of
 * the input row at pr (flat index row + that position), each kept where it is greater than the
 * output's maximum so far or NaN. Written without branches for the compiler to vectorize it
 * (which value wins follows the data, not a pattern); S a constant where it is inlined. */
#define SCAN(T)                                                                            \
static inline __attribute__((always_inline)) void scan_##T(                               \
    const T* restrict pr, int64_t row, int64_t off, int64_t S, int64_t lo, int64_t hi,     \
    T* restrict m, int64_t* restrict best)                                                 \
{                                                                                          \
    for (int64_t ow = lo; ow < hi; ow++) {                                                 \
        const int64_t i = ow * S + off;                                                    \
        const T v = pr[i];                                                                 \
        const int take = (v > m[ow]) | isnan(v);                                           \
        m[ow] = take ? v : m[ow];                                                          \
        best[ow] = take ? row + i : best[ow];                                              \
    }                                                                                      \
}

/* x (planes, D, H, W) pooled into y and ind (planes, OD, OH, OW). tab holds the bounds of the
 * windows: lo and hi of depth (OD each), then of height (OH each), then lo of width (OW); and
 * per kernel column kw, the outputs klo[kw] <= ow < khi[kw] whose window column kw is inside
 * the input. A row of outputs is scanned a window position at a time (depth, height, then
 * kernel column), all its outputs at once: each output sees its positions in ATen's order. */
#define FORWARD(T)                                                                         \
static void forward_##T(const T* x, T* y, int64_t* ind, int64_t planes, const int64_t* in,  \
                        const int64_t* out, const int64_t* tab, int64_t kw, int64_t sw,     \
                        int64_t pw, int64_t dd, int64_t dh, int64_t dw, int nthreads)       \
{                                                                                          \
    const int64_t* dlo = tab;                                                              \
    const int64_t* dhi = dlo + out[0];                                                     \
    const int64_t* hlo = dhi + out[0];                                                     \
    const int64_t* hhi = hlo + out[1];                                                     \
    const int64_t* wlo = hhi + out[1];                                                     \
    const int64_t* klo = wlo + out[2];                                                     \
    const int64_t* khi = klo + kw;                                                         \
    const int64_t rows = planes * out[0] * out[1], plane = in[0] * in[1] * in[2];          \
    _Pragma("omp parallel for schedule(static) num_threads(nthreads)")                    \
    for (int64_t r = 0; r < rows; r++) {                                                   \
        const int64_t oh = r % out[1], od = r / out[1] % out[0], pl = r / (out[1] * out[0]); \
        const T* px = x + pl * plane;                                                      \
        T* m = y + r * out[2];                                                             \
        int64_t* best = ind + r * out[2];                                                  \
        const int64_t first = (dlo[od] * in[1] + hlo[oh]) * in[2];                         \
        for (int64_t ow = 0; ow < out[2]; ow++) {                                          \
            m[ow] = -INFINITY;                                                             \
            best[ow] = first + wlo[ow];                                                    \
        }                                                                                  \
        for (int64_t id = dlo[od]; id < dhi[od]; id += dd)                                 \
            for (int64_t ih = hlo[oh]; ih < hhi[oh]; ih += dh) {                           \
                const int64_t row = (id * in[1] + ih) * in[2];                             \
                for (int64_t k = 0; k < kw; k++) {                                         \
                    const int64_t off = k * dw - pw;                                       \
                    if (sw == 1)                                                           \
                        scan_##T(px + row, row, off, 1, klo[k], khi[k], m, best);          \
                    else if (sw == 2)                                                      \
                        scan_##T(px + row, row, off, 2, klo[k], khi[k], m, best);          \
                    else                                                                   \
                        scan_##T(px + row, row, off, sw, klo[k], khi[k], m, best);         \
                }                                                                          \
            }                                                                              \
    }                                                                                      \
}

/* gx (planes, n) = 0, then gy (planes, m) added at ind (planes, m) in order. An index outside
 * the plane (ATen's -1, or the first position of a window with none inside the input) adds
 * nothing, where ATen writes wherever it points. */
#define BACKWARD(T)                                                                        \
static void backward_##T(const T* gy, const int64_t* ind, T* gx, int64_t planes, int64_t m, \
                         int64_t n, int nthreads)                                          \
{                                                                                          \
    _Pragma("omp parallel for schedule(static) num_threads(nthreads)")                    \
    for (int64_t p = 0; p < planes; p++) {                                                 \
        T* g = gx + p * n;                                                                 \
        memset(g, 0, sizeof(T) * n);                                                       \
        for (int64_t i = p * m; i < (p + 1) * m; i++) {                                    \
            const int64_t j = ind[i];                                                      \
            if (j >= 0 && j < n) g[j] += gy[i];                                            \
        }                                                                                  \
    }                                                                                      \
}

SCAN(float)
SCAN(double)
FORWARD(float)
FORWARD(double)
BACKWARD(float)
BACKWARD(double)

/* The buffer of a C-contiguous array: of int64 where `index`, else of float32/float64 (of the
 * format `fmt` where it is not NULL). */
static int get(PyObject* obj, Py_buffer* view, int writable, int index, const char* fmt)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT
                                      | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    const char* f = view->format;
    const int ok = index ? (!strcmp(f, "l") || !strcmp(f, "q")) && view->itemsize == 8
                 : fmt ? !strcmp(f, fmt) : !strcmp(f, "f") || !strcmp(f, "d");
    if (!ok) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "max_pool: float32/float64 values and int64 indices");
        return -1;
    }
    return 0;
}

/* forward(x (P, D, H, W), y, ind (P, OD, OH, OW), params (int64: k, s, p, dil, each for D, H,
 * W), nthreads) */
static PyObject* py_forward(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 5) { PyErr_SetString(PyExc_TypeError, "forward: 5 arguments"); return NULL; }
    const long nthreads = PyLong_AsLong(args[4]);
    if (nthreads == -1 && PyErr_Occurred()) return NULL;
    Py_buffer x, y, ind, prm;
    if (get(args[0], &x, 0, 0, NULL) < 0) return NULL;
    if (get(args[1], &y, 1, 0, x.format) < 0) { PyBuffer_Release(&x); return NULL; }
    if (get(args[2], &ind, 1, 1, NULL) < 0) {
        PyBuffer_Release(&x); PyBuffer_Release(&y); return NULL;
    }
    if (get(args[3], &prm, 0, 1, NULL) < 0) {
        PyBuffer_Release(&x); PyBuffer_Release(&y); PyBuffer_Release(&ind); return NULL;
    }
    const int64_t* k = prm.buf;  /* k[0:3], then s, p, dil at k + 3, 6, 9 */
    int ok = x.ndim == 4 && y.ndim == 4 && ind.ndim == 4 && prm.len == 12 * 8
             && x.shape[0] == y.shape[0];
    for (int d = 0; ok && d < 4; d++) ok = ind.shape[d] == y.shape[d];
    /* (the bounds keep every read inside the input whatever the sizes: a window with no
     * position inside it, which ATen's output sizes allow, gives -inf) */
    for (int d = 0; ok && d < 3; d++) ok = k[d] > 0 && k[3 + d] > 0 && k[9 + d] > 0;
    int64_t* tab = NULL;
    if (ok) {
        tab = PyMem_Malloc(sizeof(int64_t) * (2 * (y.shape[1] + y.shape[2] + y.shape[3] + k[2])));
        if (!tab) {
            PyBuffer_Release(&x); PyBuffer_Release(&y); PyBuffer_Release(&ind);
            PyBuffer_Release(&prm);
            return PyErr_NoMemory();
        }
        int64_t in[3], out[3];
        int64_t* t = tab;
        for (int d = 0; d < 3; d++) {
            in[d] = x.shape[1 + d];
            out[d] = y.shape[1 + d];
            /* (the width's hi, unused, is overwritten by the kernel columns' ranges) */
            bounds(t, t + out[d], out[d], in[d], k[d], k[3 + d], k[6 + d], k[9 + d]);
            t += 2 * out[d];
        }
        int64_t* klo = tab + 2 * (out[0] + out[1]) + out[2];
        for (int64_t c = 0; c < k[2]; c++) {
            /* kernel column c of output ow reads position ow * sw + c * dw - pw: inside the
             * input for the outputs lo <= ow < hi */
            const int64_t off = c * k[11] - k[8], sw = k[5];
            const int64_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
            int64_t hi = in[2] - 1 - off < 0 ? 0 : (in[2] - 1 - off) / sw + 1;
            hi = hi < out[2] ? hi : out[2];
            klo[c] = lo < out[2] ? lo : out[2];
            klo[k[2] + c] = hi > klo[c] ? hi : klo[c];
        }
        Py_BEGIN_ALLOW_THREADS
        if (x.format[0] == 'f')
            forward_float(x.buf, y.buf, ind.buf, x.shape[0], in, out, tab, k[2], k[5], k[8],
                          k[9], k[10], k[11], (int)nthreads);
        else
            forward_double(x.buf, y.buf, ind.buf, x.shape[0], in, out, tab, k[2], k[5], k[8],
                           k[9], k[10], k[11], (int)nthreads);
        Py_END_ALLOW_THREADS
        PyMem_Free(tab);
    }
    PyBuffer_Release(&x); PyBuffer_Release(&y); PyBuffer_Release(&ind); PyBuffer_Release(&prm);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "forward: x (P, D, H, W), y and ind (P, OD, OH, OW), "
                                          "12 parameters");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* backward(gy (P, M), ind (P, M), gx (P, N), nthreads) */
static PyObject* py_backward(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 4) { PyErr_SetString(PyExc_TypeError, "backward: 4 arguments"); return NULL; }
    const long nthreads = PyLong_AsLong(args[3]);
    if (nthreads == -1 && PyErr_Occurred()) return NULL;
    Py_buffer gy, ind, gx;
    if (get(args[0], &gy, 0, 0, NULL) < 0) return NULL;
    if (get(args[1], &ind, 0, 1, NULL) < 0) { PyBuffer_Release(&gy); return NULL; }
    if (get(args[2], &gx, 1, 0, gy.format) < 0) {
        PyBuffer_Release(&gy); PyBuffer_Release(&ind); return NULL;
    }
    const int ok = gy.ndim == 2 && ind.ndim == 2 && gx.ndim == 2 && gy.shape[0] == gx.shape[0]
                   && ind.shape[0] == gy.shape[0] && ind.shape[1] == gy.shape[1];
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        if (gy.format[0] == 'f')
            backward_float(gy.buf, ind.buf, gx.buf, gy.shape[0], gy.shape[1], gx.shape[1],
                           (int)nthreads);
        else
            backward_double(gy.buf, ind.buf, gx.buf, gy.shape[0], gy.shape[1], gx.shape[1],
                            (int)nthreads);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&gy); PyBuffer_Release(&ind); PyBuffer_Release(&gx);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "backward: gy and ind (P, M), gx (P, N)");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"forward", (PyCFunction)(void (*)(void))py_forward, METH_FASTCALL, "values and indices"},
    {"backward", (PyCFunction)(void (*)(void))py_backward, METH_FASTCALL, "the input gradient"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_max_pool", NULL, -1, methods};

PyMODINIT_FUNC PyInit_ember_max_pool(void) { return PyModule_Create(&module); }
"""

_BUILT = HandWrittenModule("ember_max_pool", lambda: _SOURCE, "max pooling stays NumPy's",
                           available=generated.enabled)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _module(x, work):
    """The built module and a thread count where it takes ``x``; (None, 0) else."""
    if type(x) is not np.ndarray or x.dtype not in _FLOATS or not generated.enabled():
        return None, 0
    one = work < PARALLEL_WORK or blas.in_one_thread()
    return _BUILT.get(), (1 if one else generated._threads())


def forward(x, kernel_size, stride, padding, dilation, out):
    """(values, int64 indices into each plane) of the max pooling of x (B, *S) (2 or 3 spatial
    dims) over windows of ``kernel_size`` into ``out``; or None."""
    k = len(kernel_size)
    m, threads = _module(x, x.shape[0] * np.prod(out) * np.prod(kernel_size))
    if m is None:
        return None
    lead = [1] * (3 - k)  # 2-D pooling: a depth of one
    x4 = np.ascontiguousarray(x).reshape(x.shape[0], *lead, *x.shape[1:])
    y = np.empty((x.shape[0], *lead, *out), x.dtype)
    ind = np.empty(y.shape, np.int64)
    params = np.asarray([*lead, *kernel_size, *lead, *stride, *[0] * (3 - k), *padding,
                         *lead, *dilation], np.int64)
    m.forward(x4, y, ind, params, threads)
    return y.reshape(x.shape[0], *out), ind.reshape(x.shape[0], *out)


def backward(grad, indices, planes, plane_size):
    """The input gradient (planes, plane_size) of outputs ``grad`` with their ``indices`` into
    the planes (both of ``planes`` rows), an index outside its plane adding nothing; or None."""
    m, threads = _module(grad, grad.size)
    if m is None or indices.dtype != np.int64:
        return None
    gy = np.ascontiguousarray(grad).reshape(planes, -1)
    gx = np.empty((planes, plane_size), grad.dtype)
    m.backward(gy, np.ascontiguousarray(indices).reshape(planes, -1), gx, threads)
    return gx
