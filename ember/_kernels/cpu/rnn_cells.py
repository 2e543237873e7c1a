"""The gate math of one LSTM time step in C, forward and backward (``rnn.py`` runs the
recurrence; the ``h @ W_hh^T`` product of each step stays a BLAS call).

A step of the LSTM layer kernel was ten NumPy calls on ``(batch, 4H)`` rows (the gate sum,
three activations, the cell update, ``tanh`` of the cell, the products) and its backward eight,
each a microsecond or two at the word-language-model size (batch 20, hidden 16) where the
arithmetic is a few hundred operations: the recurrence cost ~16 us a step in Python and NumPy.
Here a step is one call, its loop over the hidden units vectorised (glibc's vector ``exp`` and
``tanh``, as compiled graphs use; IEEE NaN and inf go through as NumPy's do). The math is the
NumPy code's, in the same order of operations.

* :func:`lstm_forward` -- the activated gates ``i, f, g, o`` and the new cell into a step's
  workspace rows, the new hidden state into its output rows;
* :func:`lstm_backward` -- from the incoming hidden and cell gradients, the gradients of the four
  pre-activations, and the cell gradient carried to the step before (in place).

Where the module is not built (no compiler, ``EMBER_EAGER_CODEGEN=0``) or for other dtypes,
NumPy computes the steps (``rnn.py``).
"""
import numpy as np

from ..._inductor.codecache import HandWrittenModule
from . import generated

_SOURCE = r"""
/* One template per dtype: `b` rows, array k at p[k] with a row stride of s[k] elements. */
#define LSTM_STEPS(T, EXP, TANH)                                                               \
/* p: gi (b, 4H), gh (b, 4H), c (b, H), ws (b, 5H), h (b, H) */                            \
static void lstm_forward_##T(void* const* p, const Py_ssize_t* s, Py_ssize_t b, Py_ssize_t H) \
{                                                                                              \
    for (Py_ssize_t r = 0; r < b; r++) {                                                       \
        const T* x = (const T*)p[0] + r * s[0]; const T* y = (const T*)p[1] + r * s[1];        \
        const T* cp = (const T*)p[2] + r * s[2];                                               \
        T* w = (T*)p[3] + r * s[3]; T* hr = (T*)p[4] + r * s[4];                               \
        _Pragma("omp simd")                                                                    \
        for (Py_ssize_t j = 0; j < H; j++) {                                                   \
            const T i = (T)1 / ((T)1 + EXP(-(x[j] + y[j])));                                   \
            const T f = (T)1 / ((T)1 + EXP(-(x[H + j] + y[H + j])));                           \
            const T g = TANH(x[2 * H + j] + y[2 * H + j]);                                     \
            const T o = (T)1 / ((T)1 + EXP(-(x[3 * H + j] + y[3 * H + j])));                   \
            w[j] = i; w[H + j] = f; w[2 * H + j] = g; w[3 * H + j] = o;                        \
            const T cn = f * cp[j] + i * g;                                                    \
            w[4 * H + j] = cn;                                                                 \
            hr[j] = o * TANH(cn);                                                              \
        }                                                                                      \
    }                                                                                          \
}                                                                                              \
                                                                                               \
/* p: dh (b, H), dc (b, H), go (b, H), ws (b, 5H), c_prev (b, H), d (b, 4H) */              \
static void lstm_backward_##T(void* const* p, const Py_ssize_t* s, Py_ssize_t b, Py_ssize_t H)\
{                                                                                              \
    for (Py_ssize_t r = 0; r < b; r++) {                                                       \
        const T* dh = (const T*)p[0] + r * s[0]; T* dcr = (T*)p[1] + r * s[1];                 \
        const T* go = (const T*)p[2] + r * s[2]; const T* w = (const T*)p[3] + r * s[3];       \
        const T* cp = (const T*)p[4] + r * s[4]; T* dr = (T*)p[5] + r * s[5];                  \
        _Pragma("omp simd")                                                                    \
        for (Py_ssize_t j = 0; j < H; j++) {                                                   \
            const T i = w[j], f = w[H + j], g = w[2 * H + j], o = w[3 * H + j];                \
            const T tc = TANH(w[4 * H + j]);                                                   \
            const T dhj = dh[j] + go[j];                                                       \
            const T dcj = dcr[j] + dhj * (o * ((T)1 - tc * tc));                               \
            dr[3 * H + j] = dhj * (tc * o * ((T)1 - o));                                       \
            dr[j] = dcj * (g * i * ((T)1 - i));                                                \
            dr[H + j] = dcj * (cp[j] * f * ((T)1 - f));                                        \
            dr[2 * H + j] = dcj * (i * ((T)1 - g * g));                                        \
            dcr[j] = dcj * f;                                                                  \
        }                                                                                      \
    }                                                                                          \
}

LSTM_STEPS(float, expf, tanhf)
LSTM_STEPS(double, exp, tanh)

/* The 2-d float32/float64 arrays of `args`, their last dim contiguous, of one dtype and `b`
 * rows; `width[k]` times H columns each (H from the first). Fills views; 0 or -1. */
static int views_of(PyObject* const* args, int n, const int* width, const int* writable,
                    Py_buffer* views, Py_ssize_t* H)
{
    int got = 0;
    const char* bad = NULL;
    for (; got < n; got++) {
        int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable[got] ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(args[got], &views[got], flags) < 0) break;
        Py_buffer* v = &views[got];
        if (v->ndim != 2 || (strcmp(v->format, "f") && strcmp(v->format, "d")) ||
                v->strides[1] != v->itemsize || v->strides[0] % v->itemsize) {
            bad = "2-d float32/float64 arrays with contiguous rows";
            got++;
            break;
        }
        if (got == 0) *H = v->shape[1] / width[0];
        if (v->itemsize != views[0].itemsize || v->shape[0] != views[0].shape[0] ||
                v->shape[1] != width[got] * *H || *H <= 0) {
            bad = "one dtype, one number of rows and the gates' widths";
            got++;
            break;
        }
    }
    if (got == n && !bad) return 0;
    for (int k = 0; k < got; k++) PyBuffer_Release(&views[k]);
    if (bad) PyErr_Format(PyExc_ValueError, "rnn_cells: needs %s", bad);
    return -1;
}

typedef void (*step_kernel)(void* const* p, const Py_ssize_t* s, Py_ssize_t b, Py_ssize_t H);

/* One binding for both steps: the n arrays of `args` checked (views_of), their data pointers and
 * row strides in elements handed to the float or double kernel. */
static PyObject* run_step(PyObject* const* args, Py_ssize_t nargs, int n, const int* width,
                          const int* writable, const char* name, step_kernel f32,
                          step_kernel f64)
{
    if (nargs != n) {
        PyErr_Format(PyExc_TypeError, "%s: %d arguments", name, n);
        return NULL;
    }
    Py_buffer v[6];
    void* p[6];
    Py_ssize_t s[6], H = 0;
    if (views_of(args, n, width, writable, v, &H) < 0) return NULL;
    for (int k = 0; k < n; k++) {
        p[k] = v[k].buf;
        s[k] = v[k].strides[0] / v[k].itemsize;
    }
    (v[0].itemsize == 4 ? f32 : f64)(p, s, v[0].shape[0], H);
    for (int k = 0; k < n; k++) PyBuffer_Release(&v[k]);
    Py_RETURN_NONE;
}

static PyObject* py_lstm_forward(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    static const int width[5] = {4, 4, 1, 5, 1}, writable[5] = {0, 0, 0, 1, 1};
    return run_step(args, nargs, 5, width, writable, "lstm_forward", lstm_forward_float,
                    lstm_forward_double);
}

static PyObject* py_lstm_backward(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    static const int width[6] = {1, 1, 1, 5, 1, 4}, writable[6] = {0, 1, 0, 0, 0, 1};
    return run_step(args, nargs, 6, width, writable, "lstm_backward", lstm_backward_float,
                    lstm_backward_double);
}

static PyMethodDef methods[] = {
    {"lstm_forward", (PyCFunction)(void (*)(void))py_lstm_forward, METH_FASTCALL,
     "lstm_forward(gi, gh, c, ws, h): one LSTM step's gates, cell and hidden state"},
    {"lstm_backward", (PyCFunction)(void (*)(void))py_lstm_backward, METH_FASTCALL,
     "lstm_backward(dh, dc, go, ws, c_prev, d): one LSTM step's pre-activation gradients"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_rnn_cells",
                                    "LSTM time steps in C", -1, methods};

PyMODINIT_FUNC PyInit_ember_rnn_cells(void) { return PyModule_Create(&module); }
"""

def _source():
    from ..._inductor.codecache import compiler_features
    from ..._inductor.codegen.cpp import prelude
    # the prelude declares libmvec's vector exp/tanh: the `omp simd` loops call them
    return prelude(compiler_features()["mvec"]) + _SOURCE


_BUILT = HandWrittenModule("ember_rnn_cells", _source, "LSTM steps run in NumPy",
                           available=generated.enabled, parallel=False)

_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def module(dtype):
    """The built module for arrays of NumPy ``dtype``, or None (NumPy computes the steps)."""
    if dtype not in _DTYPES or not generated.enabled():
        return None
    return _BUILT.get()
