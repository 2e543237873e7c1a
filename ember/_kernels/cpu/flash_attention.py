"""The CPU attention kernel in C: one query row at a time, all of its keys at once.

``attention.py``'s NumPy kernel works on tiles of several heads so that each NumPy call has work;
for the short sequences of a small model (a GPT of 64 tokens, 32 per head) that is still about a
dozen NumPy passes and batched products of 64 x 32 matrices per tile, ~3x PyTorch's kernel. Here
a row is computed in registers and cache: its scores (``q_i . k_s`` along a transposed copy of
the keys, 32 keys per block of vector accumulators, mask added), their maximum, ``exp``
(libmvec's vector variant), the weighted sum of the values; the backward recomputes the row's
probabilities from the saved logsumexp and accumulates the key and value gradients of its head,
FlashAttention's recurrence without tiles. Sums run in an order of their own (blocks of 32,
even and odd keys apart), as PyTorch's kernel sums in the order of its vectorised GEMM.

The work is spread over ``ember.get_num_threads()`` OpenMP threads: the forward by (query head,
block of 16 rows), the backward by key/value head, which owns its key and value gradients and
the query gradients of the query heads that read it (grouped-query attention). Each row's sums
are the same on any thread count.

The semantics are the NumPy kernel's (and PyTorch's): the query pre-scaled, causal masking top
left aligned, a fully masked row gives output 0 and logsumexp 0, a NaN score makes its row NaN.
Keys masked by causality are skipped, so a NaN or infinity there reaches no gradient (PyTorch's
block products multiply it by a zero weight, NaN). Only float32 and float64 (half precision is
computed in float32 by the caller), and only for short sequences (``usable``): longer ones keep
the tiled NumPy kernel, whose products are BLAS's.
"""
import numpy as np

from ..._inductor.codecache import HandWrittenModule
from . import generated

# The C kernel takes a head whose keys and values hold at most this many elements (S * (E + Ev)),
# four times as many under causal masking (which halves its work and not the tiles'): measured
# forward + backward on 2 cores against the NumPy tiles, 2x faster at S = 64, E = 32 (the GPT
# benchmark), 1.5x at S = 192, E = 64 causal, but 1.6x slower at S = 128, E = 64 without a mask
# and 3x slower at S = 1024, where the tiles' BLAS products win.
_HEAD_ELEMENTS = 8192

_TEMPLATE = r"""
/* {T}: 64-byte vectors (GCC's vector extension: a zmm register with AVX-512, two ymm with
 * AVX2), and a block of 32 elements as NV_{dt} of them: the accumulators of a block stay in
 * registers, where arrays indexed in a loop were kept on the stack */
typedef {T} vec_{dt} __attribute__((vector_size(64)));
enum {{ NV_{dt} = 32 * sizeof({T}) / 64, LANES_{dt} = 64 / sizeof({T}) }};
static inline vec_{dt} load_{dt}(const {T}* p) {{ vec_{dt} v; memcpy(&v, p, 64); return v; }}
static inline void store_{dt}({T}* p, vec_{dt} v) {{ memcpy(p, &v, 64); }}

/* {T}: p[s] = q . k_s (+ mask[s * ms]) for the first n keys; kT is the head's keys transposed
 * (E x S), so the sums run along the keys, 32 at a time. A block may run past n (not past S):
 * p must have room for 32 more, and what lies past n is the caller's to overwrite. */
static inline void scores_{dt}({T}* restrict p, const {T}* restrict q, const {T}* restrict kT,
                               const {T}* mask, int64_t ms, int64_t n, int64_t S, int64_t E)
{{
    int64_t s0 = 0;
    for (; s0 < n && s0 + 32 <= S; s0 += 32) {{
        vec_{dt} acc[NV_{dt}];
        for (int v = 0; v < NV_{dt}; v++) acc[v] = (vec_{dt}){{0}};
        for (int64_t e = 0; e < E; e++) {{
            const {T}* restrict row = kT + e * S + s0;
            for (int v = 0; v < NV_{dt}; v++)
                acc[v] += q[e] * load_{dt}(row + v * LANES_{dt});
        }}
        for (int v = 0; v < NV_{dt}; v++) store_{dt}(p + s0 + v * LANES_{dt}, acc[v]);
    }}
    for (int64_t s = s0; s < n; s++) p[s] = 0;  /* the last keys of a head, fewer than 32 */
    for (int64_t e = 0; e < E && s0 < n; e++) {{
        const {T} qe = q[e];
        const {T}* restrict row = kT + e * S;
        for (int64_t s = s0; s < n; s++) p[s] += qe * row[s];
    }}
    if (mask)
        for (int64_t s = 0; s < n; s++) p[s] += mask[s * ms];
}}

/* {T}: out[d] = sum over s < n of w[s] * rows[s][d], for d < D (rows: n x D, row-major); 32
 * columns at a time, even and odd rows in separate sums (two FMA chains) */
static inline void weighted_rows_{dt}({T}* restrict out, const {T}* restrict w,
                                      const {T}* restrict rows, int64_t n, int64_t D)
{{
    int64_t d0 = 0;
    for (; d0 + 32 <= D; d0 += 32) {{
        vec_{dt} a[NV_{dt}], b[NV_{dt}];
        for (int v = 0; v < NV_{dt}; v++) a[v] = b[v] = (vec_{dt}){{0}};
        int64_t s = 0;
        for (; s + 1 < n; s += 2) {{
            const {T}* restrict r0 = rows + s * D + d0;
            for (int v = 0; v < NV_{dt}; v++) {{
                a[v] += w[s] * load_{dt}(r0 + v * LANES_{dt});
                b[v] += w[s + 1] * load_{dt}(r0 + D + v * LANES_{dt});
            }}
        }}
        if (s < n)
            for (int v = 0; v < NV_{dt}; v++)
                a[v] += w[s] * load_{dt}(rows + s * D + d0 + v * LANES_{dt});
        for (int v = 0; v < NV_{dt}; v++) store_{dt}(out + d0 + v * LANES_{dt}, a[v] + b[v]);
    }}
    for (int64_t d = d0; d < D; d++) {{
        {T} acc = 0;
        for (int64_t s = 0; s < n; s++) acc += w[s] * rows[s * D + d];
        out[d] = acc;
    }}
}}

/* {T}: fill p[n:] with -inf up to a multiple of 16, the widest vector of exp's libmvec variant,
 * so the exp loop never ends in its scalar remainder (a libm call per element: on a causal
 * row of a 64-token model, that remainder cost as much as the rest of the row) */
static inline int64_t pad_{dt}({T}* p, int64_t n)
{{
    const int64_t padded = (n + 15) & ~(int64_t)15;
    for (int64_t s = n; s < padded; s++) p[s] = -INFINITY;
    return padded;
}}

/* {T}: one (query head, block of query rows) per task */
static int attention_forward_{dt}(const {T}* q, const {T}* kT, const {T}* v, {T}* out, {T}* lse,
        const {T}* mask, int64_t mb, int64_t mh, int64_t ml, int64_t ms,
        int64_t BHq, int64_t Hq, int64_t Hk, int64_t L, int64_t S, int64_t E, int64_t Ev,
        int causal, int64_t nthreads)
{{
    const int64_t rep = Hq / Hk, block = 16, nblocks = (L + block - 1) / block;
    int oom = 0;
    #pragma omp parallel num_threads((int)nthreads)
    {{
        {T}* p = ({T}*)malloc(sizeof({T}) * (S + 32));
        if (p == NULL) oom = 1;
        #pragma omp for schedule(dynamic)
        for (int64_t task = 0; task < BHq * nblocks; task++) {{
            if (p == NULL) continue;
            const int64_t j = task / nblocks, b = j / Hq, hq = j % Hq;
            const int64_t kvh = b * Hk + hq / rep;
            const {T}* kTh = kT + kvh * E * S;
            const {T}* vh = v + kvh * S * Ev;
            const int64_t i0 = task % nblocks * block, i1 = i0 + block < L ? i0 + block : L;
            for (int64_t i = i0; i < i1; i++) {{
                const {T}* qi = q + (j * L + i) * E;
                {T}* oi = out + (j * L + i) * Ev;
                const int64_t n = causal ? (i + 1 < S ? i + 1 : S) : S;
                scores_{dt}(p, qi, kTh, mask ? mask + b * mb + hq * mh + i * ml : NULL, ms, n, S,
                            E);
                {T} m = -INFINITY;
                int nan = 0;
                #pragma omp simd reduction(max:m) reduction(|:nan)
                for (int64_t s = 0; s < n; s++) {{
                    m = p[s] > m ? p[s] : m;
                    nan |= p[s] != p[s];
                }}
                if (nan) m = NAN;  /* a NaN score makes the row NaN */
                if (m == -INFINITY) {{  /* every key masked: output 0, logsumexp 0 */
                    for (int64_t d = 0; d < Ev; d++) oi[d] = 0;
                    lse[j * L + i] = 0;
                    continue;
                }}
                const {T} shift = isfinite(m) ? m : 0;
                const int64_t padded = pad_{dt}(p, n);
                {T} sum = 0;
                #pragma omp simd reduction(+:sum)
                for (int64_t s = 0; s < padded; s++) {{
                    p[s] = {exp}(p[s] - shift);
                    sum += p[s];
                }}
                weighted_rows_{dt}(oi, p, vh, n, Ev);
                const {T} inv = 1 / sum;
                #pragma omp simd
                for (int64_t d = 0; d < Ev; d++) oi[d] *= inv;
                lse[j * L + i] = m + {log}(sum);
            }}
        }}
        free(p);
    }}
    return oom;
}}

/* {T}: one key/value head per task, with the query heads reading it */
static int attention_backward_{dt}(const {T}* q, const {T}* k, const {T}* kT, const {T}* vT,
        const {T}* dout,
        const {T}* out, const {T}* lse, const {T}* mask, int64_t mb, int64_t mh, int64_t ml,
        int64_t ms, {T}* dq, {T}* dk, {T}* dv, {T} scale,
        int64_t BHq, int64_t Hq, int64_t Hk, int64_t L, int64_t S, int64_t E, int64_t Ev,
        int causal, int64_t nthreads)
{{
    const int64_t rep = Hq / Hk, BHk = BHq / rep;
    int oom = 0;
    #pragma omp parallel num_threads((int)nthreads)
    {{
        {T}* p = ({T}*)malloc(sizeof({T}) * 2 * (S + 32));
        if (p == NULL) oom = 1;
        #pragma omp for schedule(dynamic)
        for (int64_t kvh = 0; kvh < BHk; kvh++) {{
            if (p == NULL) continue;
            {T}* ds = p + S + 32;
            const int64_t b = kvh / Hk, h = kvh % Hk;
            const {T}* kh = k + kvh * S * E;
            const {T}* kTh = kT + kvh * E * S;
            const {T}* vTh = vT + kvh * Ev * S;
            {T}* dkh = dk + kvh * S * E;
            {T}* dvh = dv + kvh * S * Ev;
            for (int64_t x = 0; x < S * E; x++) dkh[x] = 0;
            for (int64_t x = 0; x < S * Ev; x++) dvh[x] = 0;
            for (int64_t r = 0; r < rep; r++) {{
                const int64_t hq = h * rep + r, j = b * Hq + hq;
                for (int64_t i = 0; i < L; i++) {{
                    const int64_t row = j * L + i;
                    const {T}* qi = q + row * E;
                    const {T}* gi = dout + row * Ev;
                    const {T}* oi = out + row * Ev;
                    {T}* dqi = dq + row * E;
                    const int64_t n = causal ? (i + 1 < S ? i + 1 : S) : S;
                    const {T} li = lse[row];
                    {T} delta = 0;
                    #pragma omp simd reduction(+:delta)
                    for (int64_t d = 0; d < Ev; d++) delta += gi[d] * oi[d];
                    scores_{dt}(p, qi, kTh, mask ? mask + b * mb + hq * mh + i * ml : NULL, ms,
                                n, S, E);
                    scores_{dt}(ds, gi, vTh, NULL, 0, n, S, Ev);  /* dout_i . v_s */
                    const int64_t padded = pad_{dt}(p, n);
                    #pragma omp simd
                    for (int64_t s = 0; s < padded; s++) {{
                        p[s] = {exp}(p[s] - li);
                        ds[s] = p[s] * (ds[s] - delta);
                    }}
                    weighted_rows_{dt}(dqi, ds, kh, n, E);
                    for (int64_t s = 0; s < n; s++) {{
                        const {T} ps = p[s], dss = ds[s];
                        {T}* restrict dks = dkh + s * E;
                        {T}* restrict dvs = dvh + s * Ev;
                        #pragma omp simd
                        for (int64_t d = 0; d < Ev; d++) dvs[d] += ps * gi[d];
                        #pragma omp simd
                        for (int64_t e = 0; e < E; e++)
                            dks[e] += dss * qi[e];  /* q carries the scale already */
                    }}
                    #pragma omp simd
                    for (int64_t e = 0; e < E; e++) dqi[e] *= scale;
                }}
            }}
        }}
        free(p);
    }}
    return oom;
}}
"""

_BINDINGS = r"""
static int get(PyObject* obj, Py_buffer* view, int writable)
{
    return PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0));
}

/* forward(dtype, q, kT, v, out, lse, mask or None, mask strides (4), BHq, Hq, Hk, L, S, E, Ev,
 *         causal, nthreads) */
static PyObject* py_forward(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 19) { PyErr_SetString(PyExc_TypeError, "forward: 19 arguments"); return NULL; }
    int64_t n[12];
    for (int a = 0; a < 12; a++) n[a] = PyLong_AsLongLong(args[7 + a]);
    if (PyErr_Occurred()) return NULL;
    int dbl = PyObject_IsTrue(args[0]);
    Py_buffer b[6];
    int got = 0, has_mask = args[6] != Py_None, ok = 1, oom = 0;
    for (; got < 5 + has_mask; got++)
        if (get(args[1 + got], &b[got], got == 3 || got == 4) < 0) { ok = 0; break; }
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        if (dbl)
            oom = attention_forward_float64(b[0].buf, b[1].buf, b[2].buf, b[3].buf, b[4].buf,
                has_mask ? b[5].buf : NULL, n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7],
                n[8], n[9], n[10], (int)n[11] & 1, n[11] >> 1);
        else
            oom = attention_forward_float32(b[0].buf, b[1].buf, b[2].buf, b[3].buf, b[4].buf,
                has_mask ? b[5].buf : NULL, n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7],
                n[8], n[9], n[10], (int)n[11] & 1, n[11] >> 1);
        Py_END_ALLOW_THREADS
    }
    for (int a = 0; a < got; a++) PyBuffer_Release(&b[a]);
    if (!ok) return NULL;
    if (oom) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* backward(dtype, q, k, kT, vT, dout, out, lse, mask or None, dq, dk, dv, scale,
 *          mask strides (4), BHq, Hq, Hk, L, S, E, Ev, causal | nthreads << 1) */
static PyObject* py_backward(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 25) { PyErr_SetString(PyExc_TypeError, "backward: 25 arguments"); return NULL; }
    int64_t n[12];
    for (int a = 0; a < 12; a++) n[a] = PyLong_AsLongLong(args[13 + a]);
    double scale = PyFloat_AsDouble(args[12]);
    if (PyErr_Occurred()) return NULL;
    int dbl = PyObject_IsTrue(args[0]);
    int has_mask = args[8] != Py_None, ok = 1, got = 0, oom = 0;
    Py_buffer b[11];
    void* ptr[11] = {NULL};
    for (int a = 1; a <= 11; a++) {
        if (a == 8 && !has_mask) continue;
        if (get(args[a], &b[got], a >= 9) < 0) { ok = 0; break; }
        ptr[a - 1] = b[got++].buf;
    }
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        if (dbl)
            oom = attention_backward_float64(ptr[0], ptr[1], ptr[2], ptr[3], ptr[4], ptr[5],
                ptr[6], ptr[7], n[0], n[1], n[2], n[3], ptr[8], ptr[9], ptr[10], scale, n[4],
                n[5], n[6], n[7], n[8], n[9], n[10], (int)n[11] & 1, n[11] >> 1);
        else
            oom = attention_backward_float32(ptr[0], ptr[1], ptr[2], ptr[3], ptr[4], ptr[5],
                ptr[6], ptr[7], n[0], n[1], n[2], n[3], ptr[8], ptr[9], ptr[10], (float)scale,
                n[4], n[5], n[6], n[7], n[8], n[9], n[10], (int)n[11] & 1, n[11] >> 1);
        Py_END_ALLOW_THREADS
    }
    for (int a = 0; a < got; a++) PyBuffer_Release(&b[a]);
    if (!ok) return NULL;
    if (oom) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"forward", (PyCFunction)(void (*)(void))py_forward, METH_FASTCALL, "attention forward"},
    {"backward", (PyCFunction)(void (*)(void))py_backward, METH_FASTCALL, "attention backward"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_flash_attention", NULL, -1,
                                    methods};

PyMODINIT_FUNC PyInit_ember_flash_attention(void) { return PyModule_Create(&module); }
"""

def _source():
    from ..._inductor.codecache import compiler_features
    from ..._inductor.codegen.cpp import prelude
    kernels = [_TEMPLATE.format(T="float", dt="float32", exp="expf", log="logf"),
               _TEMPLATE.format(T="double", dt="float64", exp="exp", log="log")]
    return "\n".join([prelude(compiler_features()["mvec"]), "#include <stdlib.h>", *kernels,
                      _BINDINGS])


_BUILT = HandWrittenModule("ember_flash_attention", _source, "attention keeps its NumPy kernel")


def module():
    """The built kernel module, or None where there is no compiler or the build failed (the
    NumPy kernel is used then)."""
    return _BUILT.get()


def usable(P):
    """Whether the C kernel takes this problem (an ``attention._Problem``)."""
    # (the dtype's scalar type, not .name: NumPy computes a dtype's name in Python, ~3 us)
    if P.dt.type not in (np.float32, np.float64) or not generated.enabled():
        return False
    head = P.S * (P.q.shape[-1] + P.v.shape[-1])
    return head <= _HEAD_ELEMENTS * (4 if P.is_causal else 1) and module() is not None


def _mask_args(P):
    """The mask's base array and its element strides over (batch, query head, row, key), 0
    along broadcast dims; (None, 0, 0, 0, 0) without a mask."""
    if P.mask is None:
        return None, 0, 0, 0, 0
    base = P.mask_base
    strides = [0 if n == 1 else s // base.itemsize for n, s in zip(base.shape, base.strides)]
    return (base, *strides)


# Below this many multiply-adds (queries x keys x head widths, over every head) a call runs on
# one thread, as PyTorch's parallel_for runs work under its grain size inline: starting a team
# costs more than such a call (~4 us for a decoding step's row), and on a busy machine a
# descheduled member kept a 2-thread call of that size waiting 1-2 ms.
_PARALLEL_WORK = 1 << 16


def _flags(P):
    """Causal in bit 0, the thread count above it (the last integer argument)."""
    work = P.q.shape[0] * P.L * P.S * (P.q.shape[-1] + P.v.shape[-1])
    threads = generated._threads() if work >= _PARALLEL_WORK else 1
    return int(P.is_causal) | threads << 1


def _transposed(a):
    """(heads, n, d) -> (heads, d, n), C-contiguous: the keys along the fast axis."""
    return np.ascontiguousarray(a.transpose(0, 2, 1))


def forward(P, out, lse):
    """Fill ``out`` (B*Hq, L, Ev) and ``lse`` (B*Hq, L), C-contiguous arrays of P's dtype."""
    mask, *strides = _mask_args(P)
    c = np.ascontiguousarray  # (q * scale keeps a transposed input's layout)
    module().forward(P.dt.type is np.float64, c(P.q), _transposed(P.k), c(P.v), out, lse, mask,
                     *strides, P.q.shape[0], P.Hq, P.Hk, P.L, P.S, P.q.shape[-1],
                     P.v.shape[-1], _flags(P))


def backward(P, do, o, lse, dq, dk, dv):
    """Fill ``dq``, ``dk``, ``dv`` (shaped as P.q, P.k, P.v) from the output gradient ``do``,
    the output ``o`` and the logsumexp ``lse``; every array C-contiguous, of P's dtype."""
    mask, *strides = _mask_args(P)
    c = np.ascontiguousarray
    module().backward(P.dt.type is np.float64, c(P.q), c(P.k), _transposed(P.k), _transposed(P.v),
                      do, o, lse, mask, dq, dk, dv, float(P.scale), *strides, P.q.shape[0],
                      P.Hq, P.Hk, P.L, P.S, P.q.shape[-1], P.v.shape[-1], _flags(P))
