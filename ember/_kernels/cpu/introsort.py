"""PyTorch's unstable CPU sort, in C: the order libstdc++'s ``std::sort`` leaves equal values in.

ATen sorts a row with ``std::sort`` (``stable=False``, the default of ``sort`` and ``argsort``)
over (value, index) pairs, comparing values with NaN greater than everything. Equal values do
not keep their input order: 17 equal values come out as indices 8, 16, 15, ..., 9, 0, 7, ...,
1. Programs see that order wherever values tie (the argsort of detection scores that saturate
before an NMS, integer data, counts), so ember replays the algorithm, GCC's introsort
(``bits/stl_algo.h``): median-of-three pivots moved to the front, unguarded Hoare partitions,
recursion on the right part, a heap sort below depth ``2 * floor(log2 n)``, and a final
insertion sort (plain over the first 16 entries, unguarded after them).

Keys are compared as doubles (every float type, exactly) or as int64 (every integer type and
bool). Rows are independent, so threads split them and the result is the same on any count.
:func:`unstable_argsort` returns None where the module is not built (no compiler,
``EMBER_EAGER_CODEGEN=0``); the caller then sorts stably, and only the order among equal
values differs from PyTorch's.
"""
import numpy as np

from ..._core import blas
from ..._inductor.codecache import HandWrittenModule
from . import generated

# Below this many elements the rows are sorted on the calling thread.
PARALLEL_NUMEL = 1 << 15

_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define THRESHOLD 16  /* libstdc++'s _S_threshold */

/* One sort of (key, index) pairs per key type K and comparator LESS(a, b) ("a goes before
   b"), named NAME; the steps are libstdc++'s functions of the same names. */
#define INTROSORT(NAME, K, LESS)                                                            \
typedef struct { K k; int64_t i; } NAME##_pair;                                             \
                                                                                            \
static inline int NAME##_less(const NAME##_pair* a, const NAME##_pair* b)                   \
{ return LESS(a->k, b->k); }                                                                \
                                                                                            \
static inline void NAME##_swap(NAME##_pair* a, NAME##_pair* b)                              \
{ NAME##_pair t = *a; *a = *b; *b = t; }                                                    \
                                                                                            \
static void NAME##_move_median_to_first(NAME##_pair* result, NAME##_pair* a,                \
                                        NAME##_pair* b, NAME##_pair* c)                     \
{                                                                                           \
    if (NAME##_less(a, b)) {                                                                \
        if (NAME##_less(b, c)) NAME##_swap(result, b);                                      \
        else if (NAME##_less(a, c)) NAME##_swap(result, c);                                 \
        else NAME##_swap(result, a);                                                        \
    } else if (NAME##_less(a, c)) NAME##_swap(result, a);                                   \
    else if (NAME##_less(b, c)) NAME##_swap(result, c);                                     \
    else NAME##_swap(result, b);                                                            \
}                                                                                           \
                                                                                            \
static NAME##_pair* NAME##_unguarded_partition(NAME##_pair* first, NAME##_pair* last,       \
                                               NAME##_pair* pivot)                          \
{                                                                                           \
    for (;;) {                                                                              \
        while (NAME##_less(first, pivot)) ++first;                                          \
        --last;                                                                             \
        while (NAME##_less(pivot, last)) --last;                                            \
        if (!(first < last)) return first;                                                  \
        NAME##_swap(first, last);                                                           \
        ++first;                                                                            \
    }                                                                                       \
}                                                                                           \
                                                                                            \
static void NAME##_adjust_heap(NAME##_pair* first, int64_t hole, int64_t len,               \
                               NAME##_pair value)                                           \
{                                                                                           \
    const int64_t top = hole;                                                               \
    int64_t child = hole;                                                                   \
    while (child < (len - 1) / 2) {                                                         \
        child = 2 * (child + 1);                                                            \
        if (NAME##_less(first + child, first + (child - 1))) child--;                       \
        first[hole] = first[child];                                                         \
        hole = child;                                                                       \
    }                                                                                       \
    if ((len & 1) == 0 && child == (len - 2) / 2) {                                         \
        child = 2 * (child + 1);                                                            \
        first[hole] = first[child - 1];                                                     \
        hole = child - 1;                                                                   \
    }                                                                                       \
    int64_t parent = (hole - 1) / 2; /* __push_heap */                                      \
    while (hole > top && NAME##_less(first + parent, &value)) {                             \
        first[hole] = first[parent];                                                        \
        hole = parent;                                                                      \
        parent = (hole - 1) / 2;                                                            \
    }                                                                                       \
    first[hole] = value;                                                                    \
}                                                                                           \
                                                                                            \
static void NAME##_heap_sort(NAME##_pair* first, NAME##_pair* last)                         \
{                                                                                           \
    const int64_t len = last - first;                                                       \
    if (len >= 2)                                  /* __make_heap */                        \
        for (int64_t parent = (len - 2) / 2; ; parent--) {                                  \
            NAME##_adjust_heap(first, parent, len, first[parent]);                          \
            if (parent == 0) break;                                                         \
        }                                                                                   \
    while (last - first > 1) {                     /* __sort_heap */                        \
        --last;                                                                             \
        NAME##_pair value = *last;                                                          \
        *last = *first;                                                                     \
        NAME##_adjust_heap(first, 0, last - first, value);                                  \
    }                                                                                       \
}                                                                                           \
                                                                                            \
static void NAME##_introsort_loop(NAME##_pair* first, NAME##_pair* last, int64_t depth)     \
{                                                                                           \
    while (last - first > THRESHOLD) {                                                      \
        if (depth == 0) { NAME##_heap_sort(first, last); return; }                          \
        --depth;                                                                            \
        NAME##_pair* mid = first + (last - first) / 2;                                      \
        NAME##_move_median_to_first(first, first + 1, mid, last - 1);                       \
        NAME##_pair* cut = NAME##_unguarded_partition(first + 1, last, first);              \
        NAME##_introsort_loop(cut, last, depth);                                            \
        last = cut;                                                                         \
    }                                                                                       \
}                                                                                           \
                                                                                            \
static void NAME##_unguarded_linear_insert(NAME##_pair* last)                               \
{                                                                                           \
    NAME##_pair value = *last;                                                              \
    NAME##_pair* next = last - 1;                                                           \
    while (NAME##_less(&value, next)) { *last = *next; last = next; --next; }               \
    *last = value;                                                                          \
}                                                                                           \
                                                                                            \
static void NAME##_insertion_sort(NAME##_pair* first, NAME##_pair* last)                    \
{                                                                                           \
    if (first == last) return;                                                              \
    for (NAME##_pair* i = first + 1; i != last; ++i) {                                      \
        if (NAME##_less(i, first)) {                                                        \
            NAME##_pair value = *i;                                                         \
            memmove(first + 1, first, (size_t)(i - first) * sizeof(NAME##_pair));          \
            *first = value;                                                                 \
        } else {                                                                            \
            NAME##_unguarded_linear_insert(i);                                              \
        }                                                                                   \
    }                                                                                       \
}                                                                                           \
                                                                                            \
static void NAME##_sort(NAME##_pair* first, int64_t n)                                      \
{                                                                                           \
    if (n == 0) return;                                                                     \
    int64_t lg = 0;                                                                         \
    while ((n >> (lg + 1)) != 0) lg++;                                                      \
    NAME##_introsort_loop(first, first + n, 2 * lg);                                        \
    if (n > THRESHOLD) {                           /* __final_insertion_sort */             \
        NAME##_insertion_sort(first, first + THRESHOLD);                                    \
        for (NAME##_pair* i = first + THRESHOLD; i != first + n; ++i)                      \
            NAME##_unguarded_linear_insert(i);                                              \
    } else {                                                                                \
        NAME##_insertion_sort(first, first + n);                                            \
    }                                                                                       \
}                                                                                           \
                                                                                            \
/* rows [lo, hi) of keys (R, n) -> their orders in idx (R, n) */                            \
static void NAME##_rows(const K* keys, int64_t lo, int64_t hi, int64_t n, int64_t* idx)     \
{                                                                                           \
    NAME##_pair* pairs = (NAME##_pair*)malloc((size_t)(n > 0 ? n : 1) * sizeof(NAME##_pair)); \
    for (int64_t r = lo; r < hi; r++) {                                                     \
        const K* row = keys + r * n;                                                        \
        for (int64_t j = 0; j < n; j++) { pairs[j].k = row[j]; pairs[j].i = j; }            \
        NAME##_sort(pairs, n);                                                              \
        int64_t* out = idx + r * n;                                                         \
        for (int64_t j = 0; j < n; j++) out[j] = pairs[j].i;                                \
    }                                                                                       \
    free(pairs);                                                                            \
}                                                                                           \
                                                                                            \
static void NAME##_all(const K* keys, int64_t rows, int64_t n, int64_t* idx, int nthreads)  \
{                                                                                           \
    if (nthreads <= 1) { NAME##_rows(keys, 0, rows, n, idx); return; }                      \
    _Pragma("omp parallel for schedule(static, 1) num_threads(nthreads)")                  \
    for (int t = 0; t < nthreads; t++)                                                      \
        NAME##_rows(keys, rows * t / nthreads, rows * (t + 1) / nthreads, n, idx);          \
}

/* ATen's KeyValueCompAsc / KeyValueCompDesc: NaN after every number ascending, before every
   number descending */
#define ASC_F(a, b) ((!isnan(a) && isnan(b)) || (a) < (b))
#define DESC_F(a, b) ((isnan(a) && !isnan(b)) || (a) > (b))
#define ASC_I(a, b) ((a) < (b))
#define DESC_I(a, b) ((a) > (b))

INTROSORT(asc_f, double, ASC_F)
INTROSORT(desc_f, double, DESC_F)
INTROSORT(asc_i, int64_t, ASC_I)
INTROSORT(desc_i, int64_t, DESC_I)

/* argsort(keys (R, n) float64 or int64, idx (R, n) int64, descending, nthreads) */
static PyObject* py_argsort(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 4) { PyErr_SetString(PyExc_TypeError, "argsort: 4 arguments"); return NULL; }
    const int descending = PyObject_IsTrue(args[2]);
    const long nthreads = PyLong_AsLong(args[3]);
    if (descending < 0 || (nthreads == -1 && PyErr_Occurred())) return NULL;
    Py_buffer k, o;
    const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (PyObject_GetBuffer(args[0], &k, flags) < 0) return NULL;
    if (PyObject_GetBuffer(args[1], &o, flags | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&k); return NULL;
    }
    const int is_float = strcmp(k.format, "d") == 0;
    const int is_int = k.itemsize == 8 && (!strcmp(k.format, "l") || !strcmp(k.format, "q"));
    const char* bad = NULL;
    if (k.ndim != 2 || o.ndim != 2 || !(is_float || is_int) || o.itemsize != 8
            || (strcmp(o.format, "l") && strcmp(o.format, "q"))
            || k.shape[0] != o.shape[0] || k.shape[1] != o.shape[1])
        bad = "keys (R, n) float64 or int64 and idx (R, n) int64";
    if (!bad) {
        const int64_t rows = k.shape[0], n = k.shape[1];
        Py_BEGIN_ALLOW_THREADS
        if (is_float) {
            if (descending) desc_f_all(k.buf, rows, n, o.buf, (int)nthreads);
            else asc_f_all(k.buf, rows, n, o.buf, (int)nthreads);
        } else {
            if (descending) desc_i_all(k.buf, rows, n, o.buf, (int)nthreads);
            else asc_i_all(k.buf, rows, n, o.buf, (int)nthreads);
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&k); PyBuffer_Release(&o);
    if (bad) { PyErr_Format(PyExc_ValueError, "argsort: needs %s", bad); return NULL; }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"argsort", (PyCFunction)(void (*)(void))py_argsort, METH_FASTCALL,
     "each row's order as std::sort leaves it"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_introsort", NULL, -1, methods};

PyMODINIT_FUNC PyInit_ember_introsort(void) { return PyModule_Create(&module); }
"""

_BUILT = HandWrittenModule("ember_introsort", lambda: _SOURCE,
                           "unstable sorts keep ties in input order",
                           available=generated.enabled)


def unstable_argsort(keys, axis, descending):
    """The indices that sort ``keys`` (a NumPy array of any real dtype) along ``axis`` as
    ATen's unstable CPU sort orders them, ties included; None where the module is not built,
    and for a device array (the CPU body run on the simulated CUDA device: PyTorch's CUDA sort
    is no std::sort either)."""
    if type(keys) is not np.ndarray or not generated.enabled():
        return None
    m = _BUILT.get()
    if m is None:
        return None
    if keys.size == 0:
        return np.empty(keys.shape, np.int64)
    moved = np.moveaxis(keys, axis, -1)
    n = moved.shape[-1]
    as_int = keys.dtype.kind in "biu"
    rows = np.ascontiguousarray(moved, np.int64 if as_int else np.float64).reshape(-1, n)
    idx = np.empty(rows.shape, np.int64)
    one = rows.size < PARALLEL_NUMEL or blas.in_one_thread()
    m.argsort(rows, idx, bool(descending), 1 if one else generated._threads())
    return np.moveaxis(idx.reshape(moved.shape), -1, axis)
