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
/* One template per dtype: rows are `b`, each array's row stride in elements is `s_*`. */
#define LSTM_STEPS(T, EXP, TANH)                                                               \
static void lstm_forward_##T(const T* gi, Py_ssize_t s_gi, const T* gh, Py_ssize_t s_gh,       \
                             const T* c, Py_ssize_t s_c, T* ws, Py_ssize_t s_ws, T* h,         \
                             Py_ssize_t s_h, Py_ssize_t b, Py_ssize_t H)                       \
{                                                                                              \
    for (Py_ssize_t r = 0; r < b; r++) {                                                       \
        const T* x = gi + r * s_gi; const T* y = gh + r * s_gh; const T* cp = c + r * s_c;     \
        T* w = ws + r * s_ws; T* hr = h + r * s_h;                                             \
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
static void lstm_backward_##T(const T* dh, Py_ssize_t s_dh, T* dc, Py_ssize_t s_dc,            \
                              const T* go, Py_ssize_t s_go, const T* ws, Py_ssize_t s_ws,      \
                              const T* cp, Py_ssize_t s_cp, T* d, Py_ssize_t s_d,              \
                              Py_ssize_t b, Py_ssize_t H)                                      \
{                                                                                              \
    for (Py_ssize_t r = 0; r < b; r++) {                                                       \
        const T* w = ws + r * s_ws; T* dr = d + r * s_d; T* dcr = dc + r * s_dc;               \
        _Pragma("omp simd")                                                                    \
        for (Py_ssize_t j = 0; j < H; j++) {                                                   \
            const T i = w[j], f = w[H + j], g = w[2 * H + j], o = w[3 * H + j];                \
            const T tc = TANH(w[4 * H + j]);                                                   \
            const T dhj = dh[r * s_dh + j] + go[r * s_go + j];                                 \
            const T dcj = dcr[j] + dhj * (o * ((T)1 - tc * tc));                               \
            dr[3 * H + j] = dhj * (tc * o * ((T)1 - o));                                       \
            dr[j] = dcj * (g * i * ((T)1 - i));                                                \
            dr[H + j] = dcj * (cp[r * s_cp + j] * f * ((T)1 - f));                             \
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

#define ROW(v) ((v).strides[0] / (v).itemsize)

/* lstm_forward(gi (b, 4H), gh (b, 4H), c (b, H), ws (b, 5H), h (b, H)) */
static PyObject* py_lstm_forward(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    static const int width[5] = {4, 4, 1, 5, 1}, writable[5] = {0, 0, 0, 1, 1};
    if (nargs != 5) { PyErr_SetString(PyExc_TypeError, "lstm_forward: 5 arguments"); return NULL; }
    Py_buffer v[5];
    Py_ssize_t H = 0;
    if (views_of(args, 5, width, writable, v, &H) < 0) return NULL;
    const Py_ssize_t b = v[0].shape[0];
    if (v[0].itemsize == 4)
        lstm_forward_float(v[0].buf, ROW(v[0]), v[1].buf, ROW(v[1]), v[2].buf, ROW(v[2]),
                           v[3].buf, ROW(v[3]), v[4].buf, ROW(v[4]), b, H);
    else
        lstm_forward_double(v[0].buf, ROW(v[0]), v[1].buf, ROW(v[1]), v[2].buf, ROW(v[2]),
                            v[3].buf, ROW(v[3]), v[4].buf, ROW(v[4]), b, H);
    for (int k = 0; k < 5; k++) PyBuffer_Release(&v[k]);
    Py_RETURN_NONE;
}

/* lstm_backward(dh (b, H), dc (b, H), go (b, H), ws (b, 5H), c_prev (b, H), d (b, 4H)) */
static PyObject* py_lstm_backward(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    static const int width[6] = {1, 1, 1, 5, 1, 4}, writable[6] = {0, 1, 0, 0, 0, 1};
    if (nargs != 6) { PyErr_SetString(PyExc_TypeError, "lstm_backward: 6 arguments"); return NULL; }
    Py_buffer v[6];
    Py_ssize_t H = 0;
    if (views_of(args, 6, width, writable, v, &H) < 0) return NULL;
    const Py_ssize_t b = v[0].shape[0];
    if (v[0].itemsize == 4)
        lstm_backward_float(v[0].buf, ROW(v[0]), v[1].buf, ROW(v[1]), v[2].buf, ROW(v[2]),
                            v[3].buf, ROW(v[3]), v[4].buf, ROW(v[4]), v[5].buf, ROW(v[5]), b, H);
    else
        lstm_backward_double(v[0].buf, ROW(v[0]), v[1].buf, ROW(v[1]), v[2].buf, ROW(v[2]),
                             v[3].buf, ROW(v[3]), v[4].buf, ROW(v[4]), v[5].buf, ROW(v[5]), b,
                             H);
    for (int k = 0; k < 6; k++) PyBuffer_Release(&v[k]);
    Py_RETURN_NONE;
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
