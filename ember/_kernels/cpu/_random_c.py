"""The hot loops of the CPU random kernels (``random.py``) in C, drawing the generator's words
themselves and rounding exactly as ATen's compiled kernels.

``random.py`` emulates ATen's arithmetic in NumPy: the fused multiply-adds of its AVX2 build
through double-precision tricks, the AVX2 Box-Muller (``avx_mathfun.h``'s ``log256_ps`` and
``sincos256_ps``) operation by operation on whole arrays, the C library's ``log``/``log1p``/
``exp``/``tan`` one element at a time through ``math``. That is exact and 10-30x slower than
PyTorch (``randn(1_000_000)`` 88 ms against 3.4 ms), and initialising a large model is mostly
that. Here the same operations are C: ``fmaf``/``fma`` where ATen's build fuses, separate
multiplies and adds where it does not (the file turns GCC's contraction off: ``-std=gnu11``
would otherwise fuse every ``a * b + c``), glibc's functions for the libm calls. NumPy's code
stays the reference: where this module is not built (no compiler, ``EMBER_EAGER_CODEGEN=0``) it
runs, and the tests compare both paths with PyTorch.

The words come straight from the generator's NumPy ``MT19937`` through its C interface (the
``bitgen_t`` of ``BitGenerator.capsule``, ``next_uint32``), in ATen's order: one word for a
float uniform, two for a double (the first the high half), so the engine ends where ATen's does.

* :func:`uniform_float`/:func:`uniform_double` -- ``uniform_``'s values, ``x * (to - from) +
  from`` fused, a value equal to ``to`` made ``from``;
* :func:`normal_fill_float`/:func:`normal_fill_double` -- ``normal_fill``: Box-Muller on blocks
  of 16 uniforms, the last 16 values redrawn when the count is not a multiple of 16 (half and
  bfloat16 draw per block and skip no uniforms);
* :func:`normal_pairs` -- ``normal_distribution<double>``'s pairs (cos, then sin);
* :func:`bernoulli` -- a 53-bit uniform below ``p``, per element (dropout's mask);
* :func:`randperm` -- ``randperm_cpu``'s Fisher-Yates swaps, both variants;
* :func:`libm` and :func:`fma` -- a libm function, or ``fma(x, scale, shift)``, over an array in
  place (the samplers whose words ``random.py`` draws).
"""
from ..._inductor.codecache import HandWrittenModule
from . import generated

_SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ATen's AVX2 build fuses exactly the multiply-adds written here as fmaf/fma; every other
 * product is rounded on its own */
#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC optimize("fp-contract=off")
#endif

/* NumPy's bitgen_t (numpy/random/bitgen.h) */
typedef struct {
    void* state;
    uint64_t (*next_uint64)(void*);
    uint32_t (*next_uint32)(void*);
    double (*next_double)(void*);
    uint64_t (*next_raw)(void*);
} bitgen_t;

/* avx_mathfun.h's constants are double literals cast to float (_PS256_CONST) */
#define F(v) ((float)(v))

static inline uint32_t bits_of(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static inline float float_of(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }

/* uniform_real_distribution<float>(0, 1): 24 bits of a 32-bit draw */
static inline float uniform24(bitgen_t* g)
{
    return (float)(g->next_uint32(g->state) & 0xFFFFFFu) * 0x1p-24f;
}

/* uniform_real_distribution<double>(0, 1): 53 bits of random64(), high word first */
static inline double uniform53(bitgen_t* g)
{
    uint64_t hi = g->next_uint32(g->state);
    uint64_t lo = g->next_uint32(g->state);
    return (double)(((hi << 32) | lo) & ((UINT64_C(1) << 53) - 1)) * 0x1p-53;
}

/* log256_ps, one lane (Cephes' logf) */
static inline float log_ps(float x)
{
    const float min_norm = float_of(0x00800000u);
    x = x > min_norm ? x : min_norm;
    uint32_t b = bits_of(x);
    float e = (float)((int32_t)(b >> 23) - 0x7F) + 1.0f;
    x = float_of((b & ~0x7F800000u) | 0x3F000000u);
    int small = x < F(0.707106781186547524);
    float tmp = small ? x : 0.0f;
    x = x - 1.0f;
    e = e - (small ? 1.0f : 0.0f);
    x = x + tmp;
    float z = x * x;
    float y = F(7.0376836292E-2);
    y = fmaf(y, x, F(-1.1514610310E-1));
    y = fmaf(y, x, F(1.1676998740E-1));
    y = fmaf(y, x, F(-1.2420140846E-1));
    y = fmaf(y, x, F(1.4249322787E-1));
    y = fmaf(y, x, F(-1.6668057665E-1));
    y = fmaf(y, x, F(2.0000714765E-1));
    y = fmaf(y, x, F(-2.4999993993E-1));
    y = fmaf(y, x, F(3.3333331174E-1));
    y = fmaf(y * x, z, e * F(-2.12194440e-4));
    y = fmaf(z, -0.5f, y);
    return fmaf(e, F(0.693359375), x + y);
}

/* sincos256_ps, one lane (Cephes' sinf and cosf) */
static inline void sincos_ps(float x, float* s, float* c)
{
    uint32_t sign_sin = bits_of(x) & 0x80000000u;
    x = fabsf(x);
    int32_t j = (int32_t)(x * F(1.27323954473516));
    j = (j + 1) & ~1;
    float y = (float)j;
    sign_sin ^= (uint32_t)(j & 4) << 29;
    uint32_t sign_cos = (uint32_t)(~(j - 2) & 4) << 29;
    int poly = (j & 2) == 0;
    x = fmaf(y, F(-0.78515625), x);
    x = fmaf(y, F(-2.4187564849853515625e-4), x);
    x = fmaf(y, F(-3.77489497744594108e-8), x);
    float z = x * x;
    float c1 = fmaf(F(2.443315711809948E-005), z, F(-1.388731625493765E-003));
    c1 = fmaf(c1, z, F(4.166664568298827E-002));
    c1 = fmaf(c1 * z, z, -(z * 0.5f)) + 1.0f;
    float s1 = fmaf(F(-1.9515295891E-4), z, F(8.3321608736E-3));
    s1 = fmaf(s1, z, F(-1.6666654611E-1));
    s1 = fmaf(s1 * z, x, x);
    float ysin2 = poly ? s1 : 0.0f;
    float ysin1 = poly ? 0.0f : c1;
    *s = float_of(bits_of(ysin1 + ysin2) ^ sign_sin);
    *c = float_of(bits_of((c1 - ysin1) + (s1 - ysin2)) ^ sign_cos);
}

/* NormalFill16 (AVX2) on 16 float uniforms: u1 = 1 - the first 8, u2 = the last 8 */
static void normal_fill_16_float(const float* u, float* out, float mean, float std)
{
    const float two_pi = F(2.0 * 3.14159265358979323846);
    float radius[8], s[8], c[8];
    for (int k = 0; k < 8; k++) {
        radius[k] = sqrtf(-2.0f * log_ps(1.0f - u[k]));
        sincos_ps(two_pi * u[8 + k], &s[k], &c[k]);
    }
    for (int k = 0; k < 8; k++) {
        out[k] = fmaf(radius[k] * c[k], std, mean);
        out[8 + k] = fmaf(radius[k] * s[k], std, mean);
    }
}

/* normal_fill_16<double>: glibc's log, cos and sin, the last product fused */
static void normal_fill_16_double(const double* u, double* out, double mean, double std)
{
    const double two_pi = 2.0 * 3.14159265358979323846;
    for (int k = 0; k < 8; k++) {
        const double radius = sqrt(-2.0 * log(1.0 - u[k]));
        const double theta = two_pi * u[8 + k];
        out[k] = fma(radius * cos(theta), std, mean);
        out[8 + k] = fma(radius * sin(theta), std, mean);
    }
}

static bitgen_t* engine(PyObject* capsule)
{
    return (bitgen_t*)PyCapsule_GetPointer(capsule, "BitGenerator");
}

static int writable(PyObject* obj, Py_buffer* b, Py_ssize_t itemsize)
{
    if (PyObject_GetBuffer(obj, b, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return 0;
    if (b->len % itemsize) {
        PyBuffer_Release(b);
        PyErr_SetString(PyExc_ValueError, "buffer of the wrong item size");
        return 0;
    }
    return 1;
}

/* uniform_float(engine, out float32, from, to) */
static PyObject* py_uniform_float(PyObject* self, PyObject* args)
{
    PyObject *cap, *o; float lo, hi; Py_buffer b;
    if (!PyArg_ParseTuple(args, "OOff", &cap, &o, &lo, &hi)) return NULL;
    bitgen_t* g = engine(cap);
    if (!g || !writable(o, &b, 4)) return NULL;
    float* out = b.buf;
    const float range = hi - lo;
    for (Py_ssize_t i = 0, n = b.len / 4; i < n; i++) {
        const float x = fmaf(uniform24(g), range, lo);
        out[i] = x == hi ? lo : x;
    }
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* uniform_double(engine, out float64, from, to) */
static PyObject* py_uniform_double(PyObject* self, PyObject* args)
{
    PyObject *cap, *o; double lo, hi; Py_buffer b;
    if (!PyArg_ParseTuple(args, "OOdd", &cap, &o, &lo, &hi)) return NULL;
    bitgen_t* g = engine(cap);
    if (!g || !writable(o, &b, 8)) return NULL;
    double* out = b.buf;
    const double range = hi - lo;
    for (Py_ssize_t i = 0, n = b.len / 8; i < n; i++) {
        const double x = fma(uniform53(g), range, lo);
        out[i] = x == hi ? lo : x;
    }
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* normal_fill_float(engine, out float32 (16 or more), mean, std, skip): a partial last block
 * is recomputed from 16 fresh uniforms after `skip` of them are drawn and dropped */
static PyObject* py_normal_fill_float(PyObject* self, PyObject* args)
{
    PyObject *cap, *o; float mean, std; Py_ssize_t skip; Py_buffer b;
    if (!PyArg_ParseTuple(args, "OOffn", &cap, &o, &mean, &std, &skip)) return NULL;
    bitgen_t* g = engine(cap);
    if (!g || !writable(o, &b, 4)) return NULL;
    float* out = b.buf;
    const Py_ssize_t n = b.len / 4;
    float u[16];
    for (Py_ssize_t i = 0; i + 16 <= n; i += 16) {
        for (int k = 0; k < 16; k++) u[k] = uniform24(g);
        normal_fill_16_float(u, out + i, mean, std);
    }
    if (n % 16) {
        for (Py_ssize_t k = 0; k < skip; k++) g->next_uint32(g->state);
        for (int k = 0; k < 16; k++) u[k] = uniform24(g);
        normal_fill_16_float(u, out + n - 16, mean, std);
    }
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* normal_fill_double(engine, out float64 (16 or more), mean, std, skip) */
static PyObject* py_normal_fill_double(PyObject* self, PyObject* args)
{
    PyObject *cap, *o; double mean, std; Py_ssize_t skip; Py_buffer b;
    if (!PyArg_ParseTuple(args, "OOddn", &cap, &o, &mean, &std, &skip)) return NULL;
    bitgen_t* g = engine(cap);
    if (!g || !writable(o, &b, 8)) return NULL;
    double* out = b.buf;
    const Py_ssize_t n = b.len / 8;
    double u[16];
    for (Py_ssize_t i = 0; i + 16 <= n; i += 16) {
        for (int k = 0; k < 16; k++) u[k] = uniform53(g);
        normal_fill_16_double(u, out + i, mean, std);
    }
    if (n % 16) {
        for (Py_ssize_t k = 0; k < skip; k++) uniform53(g);
        for (int k = 0; k < 16; k++) u[k] = uniform53(g);
        normal_fill_16_double(u, out + n - 16, mean, std);
    }
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* normal_pairs(engine, out float64 (even length)): Box-Muller on two 53-bit uniforms per pair,
 * the first the angle's */
static PyObject* py_normal_pairs(PyObject* self, PyObject* args)
{
    PyObject *cap, *o; Py_buffer b;
    if (!PyArg_ParseTuple(args, "OO", &cap, &o)) return NULL;
    bitgen_t* g = engine(cap);
    if (!g || !writable(o, &b, 16)) return NULL;
    double* out = b.buf;
    const double two_pi = 2.0 * 3.14159265358979323846;
    for (Py_ssize_t i = 0, n = b.len / 8; i < n; i += 2) {
        const double u1 = uniform53(g);
        const double u2 = uniform53(g);
        const double r = sqrt(-2.0 * log1p(-u2));
        const double theta = two_pi * u1;
        out[i] = r * cos(theta);
        out[i + 1] = r * sin(theta);
    }
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* bernoulli(engine, out bool, p): a 53-bit uniform below p */
static PyObject* py_bernoulli(PyObject* self, PyObject* args)
{
    PyObject *cap, *o; double p; Py_buffer b;
    if (!PyArg_ParseTuple(args, "OOd", &cap, &o, &p)) return NULL;
    bitgen_t* g = engine(cap);
    if (!g || !writable(o, &b, 1)) return NULL;
    unsigned char* out = b.buf;
    for (Py_ssize_t i = 0; i < b.len; i++) out[i] = uniform53(g) < p;
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* randperm(engine, out int64): random() % (n - i) swaps, or from uint32_max / 20 elements on
 * the inside-out variant with random64() % (i + 1) */
static PyObject* py_randperm(PyObject* self, PyObject* args)
{
    PyObject *cap, *o; Py_buffer b;
    if (!PyArg_ParseTuple(args, "OO", &cap, &o)) return NULL;
    bitgen_t* g = engine(cap);
    if (!g || !writable(o, &b, 8)) return NULL;
    int64_t* perm = b.buf;
    const int64_t n = b.len / 8;
    if (n < (int64_t)(UINT32_MAX / 20)) {
        for (int64_t i = 0; i < n; i++) perm[i] = i;
        for (int64_t i = 0; i < n - 1; i++) {
            const int64_t z = g->next_uint32(g->state) % (uint64_t)(n - i);
            const int64_t t = perm[i]; perm[i] = perm[i + z]; perm[i + z] = t;
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            uint64_t hi = g->next_uint32(g->state);
            uint64_t w = (hi << 32) | g->next_uint32(g->state);
            const int64_t z = w % (uint64_t)(i + 1);
            perm[i] = perm[z];
            perm[z] = i;
        }
    }
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* libm(name, x float64): x = name(x) in place, glibc's function as ATen calls it */
static PyObject* py_libm(PyObject* self, PyObject* args)
{
    const char* name; PyObject* o; Py_buffer b;
    if (!PyArg_ParseTuple(args, "sO", &name, &o)) return NULL;
    double (*fn)(double) = !strcmp(name, "log") ? log : !strcmp(name, "log1p") ? log1p
        : !strcmp(name, "exp") ? exp : !strcmp(name, "tan") ? tan : NULL;
    if (!fn) {
        PyErr_Format(PyExc_ValueError, "no libm function %s here", name);
        return NULL;
    }
    if (!writable(o, &b, 8)) return NULL;
    double* x = b.buf;
    for (Py_ssize_t i = 0, n = b.len / 8; i < n; i++) x[i] = fn(x[i]);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

/* fma(x float64, scale, shift): x = fma(x, scale, shift) in place */
static PyObject* py_fma(PyObject* self, PyObject* args)
{
    PyObject* o; double scale, shift; Py_buffer b;
    if (!PyArg_ParseTuple(args, "Odd", &o, &scale, &shift)) return NULL;
    if (!writable(o, &b, 8)) return NULL;
    double* x = b.buf;
    for (Py_ssize_t i = 0, n = b.len / 8; i < n; i++) x[i] = fma(x[i], scale, shift);
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"uniform_float", py_uniform_float, METH_VARARGS, "uniform_ in float"},
    {"uniform_double", py_uniform_double, METH_VARARGS, "uniform_ in double"},
    {"normal_fill_float", py_normal_fill_float, METH_VARARGS, "normal_fill (AVX2) in float"},
    {"normal_fill_double", py_normal_fill_double, METH_VARARGS, "normal_fill in double"},
    {"normal_pairs", py_normal_pairs, METH_VARARGS, "normal_distribution<double> pairs"},
    {"bernoulli", py_bernoulli, METH_VARARGS, "bernoulli_distribution<double>"},
    {"randperm", py_randperm, METH_VARARGS, "randperm_cpu"},
    {"libm", py_libm, METH_VARARGS, "a libm function in place"},
    {"fma", py_fma, METH_VARARGS, "fma(x, scale, shift) in place"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_random", NULL, -1, methods};

PyMODINIT_FUNC PyInit_ember_random(void) { return PyModule_Create(&module); }
"""

_BUILT = HandWrittenModule("ember_random", lambda: _SOURCE,
                           "random kernels emulate ATen's arithmetic in NumPy",
                           available=generated.enabled, parallel=False)


def module():
    """The built module, or None (no compiler, ``EMBER_EAGER_CODEGEN=0``: NumPy's code runs)."""
    return _BUILT.get() if generated.enabled() else None
