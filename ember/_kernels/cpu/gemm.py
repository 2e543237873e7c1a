"""ember's own GEMM for float32 and float64 on AVX-512 CPUs, in generated C.

NumPy's products go to the OpenBLAS it was built with, whose kernel is picked at run time for
the CPU -- or for ``OPENBLAS_CORETYPE`` when the environment sets it. On the development and CI
machines (AMD EPYC, AVX-512) it is set to ``Haswell``: OpenBLAS then runs its AVX2 kernels, half
the width this CPU has (measured: 1024^3 float32 on 2 cores, OpenBLAS 258 GFLOP/s, PyTorch's
mm 222, this kernel 470). ember does not override a user's environment; it brings a kernel of its
own, written the way BLIS and OpenBLAS write theirs:

- A is copied ("packed") into panels of ``MR`` rows, KC deep, and B into panels of ``NR``
  columns (two 64-byte vectors), so the micro-kernel reads both in memory order whatever the
  operands' strides; operands whose K runs along memory (``x``, and the weight of
  ``x @ w.T``) are packed through 16 x 16 register transposes. A B whose rows are contiguous
  is read where it lies, its next columns prefetched, the copy saved;
- the micro-kernel keeps an ``MR x NR`` block of C in ``2 * MR`` vector registers (28 of the 32)
  and adds one rank-1 update per step of K: two loads of B, ``MR`` broadcasts of A, ``2 * MR``
  FMAs; a block's short last panel (64 rows = 4 x 14 + 8) takes an 8-row kernel;
- K is cut into blocks of about ``KC``, C's rows into blocks of ``MC`` that OpenMP threads take
  with their chunk of columns; the packing of a block is shared by the threads;
- rows of A or B may be given as offsets into a flat array, and a batch of products may be
  summed into one C: the convolutions multiply their padded input's shifted rows through
  these (``conv.py``), with no column matrix.

Each element of C is summed in the same order on any thread count and at any position (over K's
blocks in turn, each in order), so results do not depend on ``ember.set_num_threads``. Edge
tiles are computed whole over zero-padded panels and stored through AVX-512 masks. NaN and
infinity propagate as IEEE says: padding only ever multiplies padding.

Used by the CPU matrix products (``mm``, ``bmm``, ``addmm``, ``matmul``, ``linear``,
convolution, RNN layers) through :func:`matmul`, :func:`add_product` and :func:`rows_product`
when the CPU has AVX-512 (the capability
generated kernels are built for), the generated kernels are enabled and the product is large
enough; everything else goes to :func:`ember._core.blas.matmul`.
"""

import numpy as np

from ..._core import blas
from ..._inductor import cpu_vec_isa
from ..._inductor.codecache import HandWrittenModule
from . import generated

MR = 14  # rows of the micro-kernel's register block
TAIL_ROWS = 8  # rows of the kernel for a block's last panel where it has no more rows
NV = 2  # 64-byte vectors across its columns: NR = NV * lanes (32 floats, 16 doubles)
# depth of a block of K (the actual block splits K evenly into blocks of at most this): each block
# reads and writes the C tile once more; measured on 2 cores, 576 beats 256 by 4% on a 3x3x64
# convolution (K = 576) and 1024^3, 768 is no better (A's block, 168 x 576, stays in L2)
KC = 576
MC_PANELS = 12  # MR-row panels in a block of rows that one task multiplies (MC = 168)
NC = 4096  # columns of B packed at once
MG = 1024  # rows of A packed at once
WORKSPACE_KEEP = 64 << 20  # bytes of packing workspace a thread keeps between products

# Products of fewer multiply-adds go to NumPy: measured on 2 cores, packing and the call cost
# as much as they save below this (a 64 x 64 x 64 product takes 5 us either way).
MIN_WORK = 1 << 18
# Products of fewer multiply-adds run on one thread: an OpenMP team costs a few microseconds.
PARALLEL_WORK = 1 << 19
# The dtypes the kernel has (float32, float64), and for each the fewest columns it takes:
# products narrower than half a register block go to NumPy, the block's padding columns
# costing more than the kernel saves (128 x 256 x 10 float32: NumPy 10 us, this kernel 15).
_NARROW = {"f": 16, "d": 8}

_VECTOR = {"float": ("__m512", "ps", "__mmask16", 16), "double": ("__m512d", "pd", "__mmask8", 8)}


def _micro_kernel(T, dt, rows):
    """The register-blocked ``rows x NR`` kernel, unrolled (its accumulators must be named
    variables for the compiler to keep them in registers)."""
    vec, sfx, _, lanes = _VECTOR[T]
    nr = NV * lanes
    acc = [[f"c{i}_{v}" for v in range(NV)] for i in range(rows)]
    out = [f"/* {T}: C[0:mr, 0:{nr}] = (C +) Ap (kc x MR, its first mr <= {rows} rows)",
           f" * @ B (kc x {nr}: row p at b + row[p]; row[] readable 4 past kc); columns past the",
           " * masks are not stored */",
           f"static inline void micro{rows}_{dt}(int64_t kc, const {T}* restrict a, "
           f"const {T}* restrict b, const int64_t* restrict row, {T}* restrict c,",
           f"                            int64_t ldc, int mr, const mask_{dt}* m, int accumulate)",
           "{"]
    out += [f"    {vec} " + ", ".join(f"{name} = _mm512_setzero_{sfx}()" for name in row) + ";"
            for row in acc]
    out.append("    for (int64_t p = 0; p < kc; p++, a += MR) {")
    out.append(f"        const {T}* restrict bp = b + row[p];")
    out += [f"        const {vec} b{v} = _mm512_loadu_{sfx}(bp + {v * lanes});" for v in range(NV)]
    # into L2, a few rows ahead: the same rows of the next panel (B read in place: the next
    # columns, which the next call reads from memory otherwise; packed: this panel's next row)
    out += [f"        _mm_prefetch((const char*)(b + row[p + 4] + NR_{dt} + {v * lanes}), "
            "_MM_HINT_T1);" for v in range(NV)]
    for i, row in enumerate(acc):
        fmas = " ".join(f"{name} = _mm512_fmadd_{sfx}(x, b{v}, {name});"
                        for v, name in enumerate(row))
        out.append(f"        {{ const {vec} x = _mm512_set1_{sfx}(a[{i}]); {fmas} }}")
    out.append("    }")
    out.append(f"    {vec} r;")
    for i, row in enumerate(acc):
        stores = " ".join(
            f"r = {name}; if (accumulate) r = _mm512_add_{sfx}(r, "
            f"_mm512_maskz_loadu_{sfx}(m[{v}], c + {i} * ldc + {v * lanes})); "
            f"_mm512_mask_storeu_{sfx}(c + {i} * ldc + {v * lanes}, m[{v}], r);"
            for v, name in enumerate(row))
        out.append(f"    if (mr > {i}) {{ {stores} }}")
    out.append("}")
    return "\n".join(out)


_DRIVER = r"""
/* {T}: kc x nc of B into panels of NR columns, each kc x NR, row-major; columns past nc are
 * zero. Row p of B is at B + row[p], its columns cs apart; rs is the rows' common stride where
 * they have one (1: columns along memory), else 0. */
static void pack_b_{dt}(int64_t kc, int64_t nc, const {T}* B, const int64_t* row, int64_t rs,
                        int64_t cs, {T}* restrict P)
{{
    enum {{ NR = NR_{dt} }};
    for (int64_t j0 = 0; j0 < nc; j0 += NR, P += kc * NR) {{
        const int64_t w = nc - j0 < NR ? nc - j0 : NR;
        if (cs == 1) {{
            for (int64_t p = 0; p < kc; p++) {{
                memcpy(P + p * NR, B + row[p] + j0, w * sizeof({T}));
                for (int64_t j = w; j < NR; j++) P[p * NR + j] = 0;
            }}
            continue;
        }}{pack_b_columns}
        for (int64_t j = 0; j < w; j++)  /* read each column in its memory order */
            for (int64_t p = 0; p < kc; p++) P[p * NR + j] = B[row[p] + (j0 + j) * cs];
        for (int64_t p = 0; p < kc; p++)
            for (int64_t j = w; j < NR; j++) P[p * NR + j] = 0;
    }}
}}

/* {T}: h <= MR rows x kc of A into one panel, kc x MR, row-major; rows past h are zero. Row i
 * starts at rows[i], its columns cs apart; rs is the rows' common stride where they have one,
 * else 0. */
static void pack_a_{dt}(int h, int64_t kc, const {T}* const* rows, int64_t rs, int64_t cs,
                        {T}* restrict P)
{{
    if (rs == 1 && h == MR) {{
        for (int64_t p = 0; p < kc; p++) memcpy(P + p * MR, rows[0] + p * cs, MR * sizeof({T}));
        return;
    }}{pack_a_rows}
    for (int i = 0; i < h; i++)
        for (int64_t p = 0; p < kc; p++) P[p * MR + i] = rows[i][p * cs];
    for (int64_t p = 0; p < kc; p++)
        for (int i = h; i < MR; i++) P[p * MR + i] = 0;
}}

/* {T}: C[b] = (C[b] +) A[b] @ B[b] for b < batch, where C's columns are contiguous and
 * - row i of A[b] starts at A + b * a_b + (a_row ? a_row[i] : i * a_r), its columns a_c apart;
 * - row p of B[b] starts at B + b * b_b + (b_row ? b_row[p] : p * b_r), its columns b_c apart;
 * - with c_b == 0, C is the sum of the batch's products (C = (C +) sum of A[b] @ B[b]).
 * Strides and offsets in elements. Returns nonzero when the workspace could not be allocated. */
static int gemm_{dt}(int64_t batch, int64_t M, int64_t N, int64_t K,
                     const {T}* A, int64_t a_b, int64_t a_r, int64_t a_c, const int64_t* a_row,
                     const {T}* B, int64_t b_b, int64_t b_r, int64_t b_c, const int64_t* b_row,
                     {T}* C, int64_t c_b, int64_t ldc, int accumulate, int nthreads)
{{
    enum {{ NR = NR_{dt} }};
    const int64_t kblocks = (K + KC - 1) / KC, kcmax = (K + kblocks - 1) / kblocks;
    const int64_t ncmax = ((N < NC ? N : NC) + NR - 1) / NR * NR;
    const int64_t mgmax = ((M < MG ? M : MG) + MR - 1) / MR * MR;
    /* workspace: packed B, packed A, then the offsets of B's rows (4 more for the
     * micro-kernel's prefetch) and of a packed panel's rows */
    {T}* Bp = workspace(sizeof({T}) * kcmax * (ncmax + mgmax)
                        + sizeof(int64_t) * (K + 4 + kcmax + 4));
    if (Bp == NULL) return 1;
    {T}* Ap = Bp + kcmax * ncmax;
    int64_t* brow = (int64_t*)(Ap + kcmax * mgmax);
    int64_t* packed_row = brow + K + 4;
    for (int64_t p = 0; p < K + 4; p++) {{
        const int64_t q = p < K ? p : K - 1;
        brow[p] = b_row ? b_row[q] : q * b_r;
    }}
    for (int64_t p = 0; p < kcmax + 4; p++) packed_row[p] = p * NR;
    /* B with contiguous rows is read where it lies (but for a last, partial panel) */
    const int direct = b_c == 1;
    const int64_t a_rs = a_row ? 0 : a_r, b_rs = b_row ? 0 : b_r;
    #pragma omp parallel num_threads(nthreads)
    for (int64_t bi = 0; bi < batch; bi++)
    for (int64_t jc = 0; jc < N; jc += NC) {{
        const int64_t nc = N - jc < NC ? N - jc : NC, npanels = (nc + NR - 1) / NR;
        for (int64_t pc = 0; pc < K; pc += kcmax) {{
            const int64_t kc = K - pc < kcmax ? K - pc : kcmax;
            const int add = accumulate || pc > 0 || (c_b == 0 && bi > 0);
            const {T}* Ab = A + bi * a_b + pc * a_c;
            const {T}* Bb = B + bi * b_b + jc * b_c;
            #pragma omp for schedule(static) nowait
            for (int64_t pn = 0; pn < npanels; pn++) {{
                const int64_t j0 = pn * NR;
                if (!(direct && nc - j0 >= NR))
                    pack_b_{dt}(kc, nc - j0 < NR ? nc - j0 : NR, Bb + j0 * b_c, brow + pc, b_rs,
                                b_c, Bp + j0 * kc);
            }}
            for (int64_t ig = 0; ig < M; ig += MG) {{
                const int64_t mg = M - ig < MG ? M - ig : MG, apanels = (mg + MR - 1) / MR;
                #pragma omp for schedule(static)
                for (int64_t pa = 0; pa < apanels; pa++) {{
                    const int64_t i0 = ig + pa * MR, h = mg - pa * MR < MR ? mg - pa * MR : MR;
                    const {T}* rows[16];  /* a transposed pack reads 16 (past h: unused) */
                    for (int i = 0; i < h; i++)
                        rows[i] = Ab + (a_row ? a_row[i0 + i] : (i0 + i) * a_r);
                    pack_a_{dt}((int)h, kc, rows, a_rs, a_c, Ap + pa * MR * kc);
                }}
                /* tasks: a block of MC rows times a chunk of column panels; chunks shrink
                 * until every thread has about four tasks */
                const int64_t mblocks = (mg + MC - 1) / MC;
                int64_t per = npanels;
                while (per > 1 && mblocks * ((npanels + per - 1) / per) < 4 * nthreads)
                    per = (per + 1) / 2;
                const int64_t chunks = (npanels + per - 1) / per;
                #pragma omp for schedule(dynamic) collapse(2)
                for (int64_t ib = 0; ib < mblocks; ib++)
                for (int64_t ch = 0; ch < chunks; ch++) {{
                    const int64_t i1 = ib * MC, mc = mg - i1 < MC ? mg - i1 : MC;
                    const int64_t p1 = (ch + 1) * per < npanels ? (ch + 1) * per : npanels;
                    for (int64_t pn = ch * per; pn < p1; pn++) {{
                        const int64_t j0 = pn * NR, w = nc - j0;
                        const int in_place = direct && w >= NR;
                        mask_{dt} m[NV];
                        for (int v = 0; v < NV; v++) {{
                            const int64_t r = w - v * LANES_{dt};
                            m[v] = r >= LANES_{dt} ? (mask_{dt})-1
                                 : r <= 0 ? 0 : (mask_{dt})((1u << r) - 1);
                        }}
                        const {T}* b = in_place ? Bb + j0 : Bp + j0 * kc;
                        const int64_t* row = in_place ? brow + pc : packed_row;
                        for (int64_t i0 = 0; i0 < mc; i0 += MR) {{
                            const {T}* a = Ap + (i1 + i0) * kc;
                            {T}* c = C + bi * c_b + (ig + i1 + i0) * ldc + jc + j0;
                            const int h = (int)(mc - i0 < MR ? mc - i0 : MR);
                            /* a short last panel (64 rows = 4 x 14 + 8) takes a kernel of
                             * fewer rows: its padding rows would cost whole FMAs */
                            if (h > TAIL_ROWS)
                                micro{MR}_{dt}(kc, a, b, row, c, ldc, h, m, add);
                            else
                                micro{TAIL_ROWS}_{dt}(kc, a, b, row, c, ldc, h, m, add);
                        }}
                    }}
                }}
            }}
        }}
    }}
    workspace_trim();
    return 0;
}}
"""

# float32 only: operands whose K runs along memory (a row-major A, a transposed B -- the
# activations and the weight of ``x @ w.T``) are packed 16 x 16 blocks at a time through a
# register transpose, ~4x the rate of the element loop (double keeps the loop).
_TRANSPOSING_PACKS = r"""
/* r[i] holds row i of a 16 x 16 block; after, r[j] holds its column j */
static inline void transpose16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0x88);
        t[4 + i] = _mm512_shuffle_f32x4(r[i], r[4 + i], 0xDD);
        t[8 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0x88);
        t[12 + i] = _mm512_shuffle_f32x4(r[8 + i], r[12 + i], 0xDD);
    }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0x88);
        r[8 + i] = _mm512_shuffle_f32x4(t[i], t[8 + i], 0xDD);
    }
}

/* elements p .. p + q - 1 (q <= 16) of the first n (<= 16) lines, written transposed to dst,
 * dst + ldd, ... (q lines of 16, lanes past n zero), each through mask m */
static inline void transposed_block(const float* const* lines, int n, int64_t p, int q,
                                    float* dst, int64_t ldd, __mmask16 m)
{
    const __mmask16 lm = (__mmask16)((1u << q) - 1);
    __m512 r[16];
    for (int i = 0; i < 16; i++)
        r[i] = i < n ? _mm512_maskz_loadu_ps(lm, lines[i] + p) : _mm512_setzero_ps();
    transpose16(r);
    for (int x = 0; x < q; x++) _mm512_mask_storeu_ps(dst + x * ldd, m, r[x]);
}
"""

_PACK_A_ROWS = """
    if (cs == 1) {  /* rows along memory: 16 steps of K at a time, transposed */
        for (int64_t p = 0; p < kc; p += 16)
            transposed_block(rows, h, p, kc - p < 16 ? (int)(kc - p) : 16, P + p * MR, MR,
                             (__mmask16)((1u << MR) - 1));
        return;
    }"""

_PACK_B_COLUMNS = """
        if (rs == 1) {  /* columns along memory: 16 x 16 blocks, transposed */
            for (int64_t h0 = 0; h0 < NR; h0 += 16) {
                const float* cols[16];
                const int n = w - h0 < 0 ? 0 : w - h0 < 16 ? (int)(w - h0) : 16;
                for (int j = 0; j < n; j++) cols[j] = B + row[0] + (j0 + h0 + j) * cs;
                for (int64_t p = 0; p < kc; p += 16)
                    transposed_block(cols, n, p, kc - p < 16 ? (int)(kc - p) : 16,
                                     P + p * NR + h0, NR, (__mmask16)0xFFFF);
            }
            continue;
        }"""

_BINDINGS = r"""
/* The workspace of the calling thread (packed panels), kept between calls: a fresh one per
 * call would be fresh pages, and a page fault costs microseconds. Freed when the thread ends. */
static pthread_key_t workspace_key;
static pthread_once_t workspace_once = PTHREAD_ONCE_INIT;
typedef struct { void* p; size_t size; } workspace_t;
static void workspace_free(void* w) { free(((workspace_t*)w)->p); free(w); }
static void workspace_init(void) { pthread_key_create(&workspace_key, workspace_free); }

/* After a product: a workspace above WORKSPACE_KEEP bytes (a very long K) is not kept. */
static void workspace_trim(void)
{
    workspace_t* w = pthread_getspecific(workspace_key);
    if (w != NULL && w->size > WORKSPACE_KEEP) {
        free(w->p);
        w->p = NULL;
        w->size = 0;
    }
}

static void* workspace(size_t bytes)
{
    pthread_once(&workspace_once, workspace_init);
    workspace_t* w = pthread_getspecific(workspace_key);
    if (w == NULL) {
        if ((w = calloc(1, sizeof *w)) == NULL) return NULL;
        pthread_setspecific(workspace_key, w);
    }
    if (w->size < bytes) {
        free(w->p);
        w->p = aligned_alloc(64, (bytes + 63) / 64 * 64);
        w->size = w->p ? bytes : 0;
    }
    return w->p;
}

/* gemm(A, B, C, accumulate, nthreads, a_rows, b_rows): C = (C +) A @ B for arrays of one
 * float type. C is (batch or 1, M, N), its columns contiguous; a C of one matrix under a
 * larger batch receives the sum of the batch's products. A is (batch or 1, M, K) -- or, with
 * a_rows (M int64 offsets), (batch or 1, L) with row i starting at element a_rows[i]; B alike,
 * (batch or 1, K, N) or (batch or 1, L) with b_rows (K offsets). Strides must be whole
 * elements. The caller checks what it passes; a layout this cannot take is a ValueError. */
static PyObject* py_gemm(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    if (nargs != 7) { PyErr_SetString(PyExc_TypeError, "gemm: 7 arguments"); return NULL; }
    const int accumulate = PyObject_IsTrue(args[3]);
    const long nthreads = PyLong_AsLong(args[4]);
    if (PyErr_Occurred()) return NULL;
    Py_buffer v[5];
    int got = 0;
    const char* bad = NULL;
    const int has_rows[2] = {args[5] != Py_None, args[6] != Py_None};
    for (; got < 3; got++)
        if (PyObject_GetBuffer(args[got], &v[got],
                               PyBUF_STRIDES | PyBUF_FORMAT | (got == 2 ? PyBUF_WRITABLE : 0)) < 0)
            { bad = ""; break; }
    const int64_t* rows[2] = {NULL, NULL};
    for (int a = 0; a < 2 && !bad; a++) {
        if (!has_rows[a]) continue;
        if (PyObject_GetBuffer(args[5 + a], &v[got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
            { bad = ""; break; }
        if (v[got].itemsize != 8 || (strcmp(v[got].format, "l") && strcmp(v[got].format, "q")))
            bad = "int64 row offsets";
        rows[a] = v[got++].buf;
    }
    int64_t st[3][3] = {{0}}, n[3][3] = {{0}};
    for (int a = 0; a < 3 && !bad; a++) {
        const int want = a < 2 && has_rows[a] ? 2 : 3;
        if (v[a].ndim != want || v[a].itemsize != v[0].itemsize
                || strcmp(v[a].format, v[0].format) != 0
                || (strcmp(v[a].format, "f") != 0 && strcmp(v[a].format, "d") != 0))
            bad = "arrays of one float type, 3-d (2-d with row offsets)";
        for (int d = 0; d < want && !bad; d++) {
            if (v[a].strides[d] % v[a].itemsize) bad = "strides of whole elements";
            st[a][d] = v[a].strides[d] / v[a].itemsize;
            n[a][d] = v[a].shape[d];
        }
    }
    int64_t batch = 0, M = 0, N = 0, K = 0;
    if (!bad) {
        M = n[2][1], N = n[2][2];
        K = has_rows[1] ? (int64_t)(v[3 + has_rows[0]].len / 8) : n[1][1];
        batch = n[0][0] > n[1][0] ? n[0][0] : n[1][0];
        if (has_rows[0] && (int64_t)(v[3].len / 8) != M) bad = "one offset per row of A";
        else if (!has_rows[0] && (n[0][1] != M || n[0][2] != K)) bad = "A of (M, K)";
        else if (!has_rows[1] && n[1][2] != N) bad = "B of (K, N)";
        else if ((n[0][0] != batch && n[0][0] != 1) || (n[1][0] != batch && n[1][0] != 1)
                 || (n[2][0] != batch && n[2][0] != 1))
            bad = "batches of one size (or 1)";
        else if (st[2][2] != 1 && N > 1)
            bad = "contiguous columns of C";
        else if (K == 0)
            bad = "a nonzero inner dimension";
    }
    /* row offsets must keep every row inside its array */
    for (int a = 0; a < 2 && !bad && M && N && K; a++) {
        if (!has_rows[a]) continue;
        const int64_t count = a ? K : M, last = (a ? N - 1 : K - 1) * st[a][1];
        if (st[a][1] < 0) bad = "row offsets inside the array";
        for (int64_t i = 0; i < count && !bad; i++)
            if (rows[a][i] < 0 || rows[a][i] + last >= n[a][1])
                bad = "row offsets inside the array";
    }
    int oom = 0;
    if (!bad && M && N && batch) {
        const int64_t a_b = n[0][0] == 1 ? 0 : st[0][0], b_b = n[1][0] == 1 ? 0 : st[1][0];
        const int64_t c_b = n[2][0] == 1 ? 0 : st[2][0];
        const int64_t a_r = has_rows[0] ? 0 : st[0][1], a_c = has_rows[0] ? st[0][1] : st[0][2];
        const int64_t b_r = has_rows[1] ? 0 : st[1][1], b_c = has_rows[1] ? st[1][1] : st[1][2];
        Py_BEGIN_ALLOW_THREADS
        if (v[0].itemsize == 8)
            oom = gemm_float64(batch, M, N, K, v[0].buf, a_b, a_r, a_c, rows[0], v[1].buf, b_b,
                               b_r, b_c, rows[1], v[2].buf, c_b, st[2][1], accumulate,
                               (int)nthreads);
        else
            oom = gemm_float32(batch, M, N, K, v[0].buf, a_b, a_r, a_c, rows[0], v[1].buf, b_b,
                               b_r, b_c, rows[1], v[2].buf, c_b, st[2][1], accumulate,
                               (int)nthreads);
        Py_END_ALLOW_THREADS
    }
    for (int a = 0; a < got; a++) PyBuffer_Release(&v[a]);
    if (bad) {
        if (*bad) PyErr_Format(PyExc_ValueError, "gemm: needs %s", bad);
        return NULL;
    }
    if (oom) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"gemm", (PyCFunction)(void (*)(void))py_gemm, METH_FASTCALL, "C = (C +) A @ B"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_gemm", NULL, -1, methods};

PyMODINIT_FUNC PyInit_ember_gemm(void) { return PyModule_Create(&module); }
"""


def _source():
    from ..._inductor.codegen.cpp import prelude
    parts = [prelude(False), "#include <immintrin.h>", "#include <pthread.h>",
             "#include <stdlib.h>", "",
             f"enum {{ MR = {MR}, TAIL_ROWS = {TAIL_ROWS}, NV = {NV}, KC = {KC}, "
             f"MC = {MR * MC_PANELS}, NC = {NC}, "
             f"MG = {MG} }};",
             "static void* workspace(size_t bytes);", "static void workspace_trim(void);",
             f"#define WORKSPACE_KEEP ((size_t){WORKSPACE_KEEP})"]
    parts.append(_TRANSPOSING_PACKS)
    for T, dt in (("float", "float32"), ("double", "float64")):
        _, _, mask, lanes = _VECTOR[T]
        fast = T == "float"
        parts += [f"typedef {mask} mask_{dt};",
                  f"enum {{ LANES_{dt} = {lanes}, NR_{dt} = NV * {lanes} }};",
                  _micro_kernel(T, dt, MR), _micro_kernel(T, dt, TAIL_ROWS),
                  _DRIVER.format(T=T, dt=dt, MR=MR, TAIL_ROWS=TAIL_ROWS,
                                 pack_a_rows=_PACK_A_ROWS if fast else "",
                                 pack_b_columns=_PACK_B_COLUMNS if fast else "")]
    parts.append(_BINDINGS)
    return "\n".join(parts)


def _avx512():
    return cpu_vec_isa.pick_vec_isa() is cpu_vec_isa.VecAVX512


_BUILT = HandWrittenModule("ember_gemm", _source, "matrix products keep NumPy's BLAS",
                           available=_avx512)


def module():
    """The built GEMM module, or None where the CPU lacks AVX-512, there is no compiler or the
    build failed (NumPy's BLAS is used then)."""
    return _BUILT.get()


def _takes(a, b):
    """Whether the C kernel multiplies these operands (NumPy arrays)."""
    if a.dtype != b.dtype or a.dtype.char not in _NARROW or a.ndim < 2 or b.ndim < 2:
        return False
    if b.shape[-1] < _NARROW[a.dtype.char]:
        return False
    return _product_work(a, b) >= MIN_WORK and usable(a.dtype)


def _product_work(a, b):
    """The multiply-adds of one product the kernel runs for ``a @ b``: a stack of matrices
    times one matrix is one taller product; a batch of products is judged by one of them,
    since the kernel runs them one after another (with a thread team's barriers each): 1024
    products of 1 x 9 x 196 (a depthwise convolution) took 150 ms there, 0.3 ms in NumPy."""
    if b.ndim == 2:
        return a.size * b.shape[-1]
    return a.shape[-2] * a.shape[-1] * b.shape[-1]


def _threads(work):
    if work < PARALLEL_WORK or blas.in_one_thread():  # then the threads are the caller's
        return 1
    return generated._threads()


def _as3d(x):
    """x (..., r, c) as (batch, r, c); a copy only where the batch dims cannot be merged."""
    return x if x.ndim == 3 else x.reshape(-1, *x.shape[-2:])


def _target(out, shape):
    """``out`` reshaped as a view the kernel can write (contiguous columns), or None where that
    takes a copy."""
    v = out.reshape(shape)
    if not np.may_share_memory(v, out) or (v.strides[-1] != v.itemsize and shape[-1] > 1):
        return None
    return v


def matmul(a, b, out=None):
    """``np.matmul(a, b, out=out)`` for NumPy arrays of two or more dims, on the C kernel where
    it takes them (:func:`_takes`), else on :func:`ember._core.blas.matmul`."""
    if not _takes(a, b):
        return blas.matmul(a, b, out)
    if a.ndim == 2 and b.ndim == 2 and out is None:  # the common case, in fewer steps
        c = np.empty((1, a.shape[0], b.shape[1]), a.dtype)
        try:
            module().gemm(a[None], b[None], c, False, _threads(c.size * a.shape[1]), None, None)
        except ValueError:  # a layout the kernel refuses (strides of part elements): NumPy's
            return blas.matmul(a, b)
        return c[0]
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    shape = batch + (a.shape[-2], b.shape[-1])
    if b.ndim == 2:  # a stack of matrices times one: one taller product
        a3, b3 = a.reshape(1, -1, a.shape[-1]), b[None]
    else:
        a3 = _as3d(np.broadcast_to(a, batch + a.shape[-2:]))
        b3 = _as3d(np.broadcast_to(b, batch + b.shape[-2:]))
    shape3 = (a3.shape[0], a3.shape[1], b3.shape[2])
    c = None if out is None else _target(out, shape3)
    target = c if c is not None else np.empty(shape3, a.dtype)
    try:
        module().gemm(a3, b3, target, False, _threads(_product_work(a, b)), None, None)
    except ValueError:  # as above
        return np.matmul(a, b, out=out)
    if out is None:
        return target.reshape(shape)
    if c is None:
        out[...] = target.reshape(shape)
    return out


def add_product(c, a, b):
    """``c + a @ b`` for matrices ``a``, ``b`` and a ``c`` that broadcasts to the product (addmm
    with alpha = beta = 1: ``linear``'s bias), ``c`` copied into the result and the product
    added by the kernel (one pass over the result less than adding after); None where the
    kernel does not take these operands."""
    if a.ndim != 2 or b.ndim != 2 or c.dtype != a.dtype or not _takes(a, b):
        return None
    out = np.empty((1, a.shape[0], b.shape[1]), a.dtype)
    out[0] = c
    try:
        module().gemm(a[None], b[None], out, True, _threads(out.size * a.shape[1]), None, None)
    except ValueError:  # as in matmul
        return None
    return out[0]


def usable(dtype):
    """Whether the kernel is there for ``dtype`` (a NumPy dtype) now."""
    return dtype.char in _NARROW and generated.enabled() and module() is not None


def rows_product(a, b, out, a_rows=None, b_rows=None):
    """``out = sum over the batch of A[i] @ B[i]`` (``out`` of one matrix, (1, M, N)) or
    ``out[i] = A[i] @ B[i]``, where A is (batch or 1, M, K) -- or, with ``a_rows`` (int64, one
    offset per row), the flat (batch or 1, L) array whose row r starts at ``a_rows[r]`` -- and
    B alike with ``b_rows``. Rows given by offsets let a convolution multiply its input's
    shifted windows where they lie (``conv.py``). The caller checks :func:`usable`."""
    work = out.shape[1] * out.shape[2] * max(a.shape[0], b.shape[0]) * (
        len(b_rows) if b_rows is not None else b.shape[1])
    module().gemm(a, b, out, False, _threads(work), a_rows, b_rows)
    return out
