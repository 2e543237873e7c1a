"""Depthwise convolutions (``groups == in_channels``, weight ``(C * mult, 1, KH, KW)``) in C, on
the OpenMP threads: the forward, the input gradient and the weight gradient.

Why: ``conv.py`` makes any grouped convolution from column matrices and a batched GEMM of one
row per group, so a depthwise one spends its time copying columns for products of 9 or 25
multiply-adds per output (MobileNet's and EfficientNet's shapes: 3-10x PyTorch's time; here
2 x 120 x 16 x 16 with 5 x 5 takes 0.08 ms on one thread, the column path 0.80, PyTorch 0.12).

How: a channel's output row is often a few elements wide (EfficientNet's last stages: 4 x 4
planes), too narrow for vectors along the columns. So, as oneDNN does, the lanes of a vector
are ``V`` channels (one 64-byte vector: 16 float32 or 8 float64) and every multiply-add of the
kernel is one full-width vector operation, whatever the plane's size or the padding:

* a block of ``V`` planes is transposed into a tile of cells, ``(positions, V)``, for the
  block's input, weight (kernel offset, ``V``) and output-side array; the transposes go in
  ``V x V`` squares that the compiler turns into register shuffles;
* the forward sums each output over the kernel in order (kh, then kw), from 0. Where every
  kernel column's window is inside the input, eight (then four) output cells of a row at a time
  are summed in registers; the cells near the edges are summed in the tile, one kernel offset at
  a time over the range of output columns whose window column is inside the input. So the zero
  padding is never read (no padded copy, and a padding position never multiplies an infinite
  weight into a NaN);
* the input gradient, for stride 1 (and padding within the kernel's extent), is that forward
  of the output gradient with the kernel flipped; otherwise the forward's loops with each
  product added to the input cell it came from (the transposed convolution's scatter). It sums
  the input channel's ``mult`` output channels in turn; cells no window reaches keep their 0;
* the weight gradient sums, per kernel offset, the products of the input's and the gradient's
  cells over the batch and the output positions, in four interleaved partial sums (one chain of
  dependent additions would wait on the adder's latency), added at the end.

Threads: the forward and the input gradient split the (sample, block of channels) pairs among
``ember.get_num_threads()`` OpenMP threads, the weight gradient the blocks of channels alone
(each block sums its whole batch itself), so every result is the same on any thread count.
Small problems run on the calling thread. A weight gradient of one block (16 float32 channels)
has one thread. Each thread holds one block's tiles: (H * W + OH * OW + KH * KW) * 64 bytes.

The arrays are C-contiguous NCHW (the functions copy other layouts); 1-D convolutions run as
2-D ones of height 1, 3-D ones are declined. Where the module is not built (no compiler,
``EMBER_EAGER_CODEGEN=0``) the functions return None and the caller's column path runs.
"""
import math

import numpy as np

from ..._core import blas
from ..._core.allocator import cpu_cache as _cpu_cache
from ..._inductor.codecache import HandWrittenModule
from . import generated

# Below this many multiply-adds a call runs on the calling thread (an OpenMP team costs
# microseconds; the kernel does about ten multiply-adds a nanosecond).
PARALLEL_WORK = 1 << 18

_PRELUDE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    VBYTES = 64,  /* a cell: one 64-byte vector of channels */
    R = 8,        /* output cells the forward sums in registers at once */
};

/* x (N, C, H, W), w (O, 1, KH, KW), y (N, O, OH, OW), O = C * mult */
typedef struct {
    int64_t n, c, o, mult, h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
    /* kernel column kw reads inside the input for output columns lo[kw] <= ow < hi[kw]; every
     * kernel column does for inner_lo <= ow < inner_hi */
    const int64_t *lo, *hi;
    int64_t inner_lo, inner_hi;
} Geom;

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && a < 0); }

static int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* g's column ranges, kept in cols (2 * KW elements): output column ow of kernel column kw
 * reads input column ow * sw + kw * dw - pw. */
static void columns(Geom* g, int64_t* cols)
{
    g->inner_lo = 0;
    g->inner_hi = g->ow;
    for (int64_t kw = 0; kw < g->kw; kw++) {
        const int64_t off = kw * g->dw - g->pw;
        const int64_t lo = clamp(floor_div(-off + g->sw - 1, g->sw), 0, g->ow);
        const int64_t hi = clamp(floor_div(g->w - 1 - off, g->sw) + 1, lo, g->ow);
        cols[kw] = lo;
        cols[g->kw + kw] = hi;
        g->inner_lo = lo > g->inner_lo ? lo : g->inner_lo;
        g->inner_hi = hi < g->inner_hi ? hi : g->inner_hi;
    }
    if (g->inner_hi < g->inner_lo) g->inner_hi = g->inner_lo;
    g->lo = cols;
    g->hi = cols + g->kw;
}

/* A thread's tiles: `cells` 64-byte cells, 64-byte aligned (cells are read as vectors). */
static void* tiles(int64_t cells) { return aligned_alloc(VBYTES, (size_t)(cells + 1) * VBYTES); }
"""

# The kernels of one dtype; T (the element type), V (lanes) and F(name) (the dtype's name for a
# function) are defined around it, once per dtype.
_KERNELS = r"""
typedef T F(vec) __attribute__((vector_size(VBYTES)));

/* The first plane elements to copy one by one: up to where planes[0] is 64-byte aligned, so
 * that the squares' vector loads and stores do not straddle cache lines where the planes are a
 * multiple of 64 bytes apart (a 2 x 64 x 64 x 64 forward from a NumPy array 16 bytes past a
 * line: 1.4x faster); none for a short plane (4 x 4), whose one square is faster straddling. */
static int64_t F(head)(const T* plane, int64_t count)
{
    if (count < 4 * V) return 0;
    return (int64_t)((VBYTES - (uintptr_t)plane % VBYTES) % VBYTES / sizeof(T));
}

/* tile[p][l] = planes[l][p] for p < count. The V x V squares have constant trip counts: the
 * compiler makes them V vector loads, shuffles and V vector stores. */
static void F(load_tile)(T* restrict tile, const T* const* planes, int64_t count)
{
    int64_t p0 = 0;
    for (const int64_t head = F(head)(planes[0], count); p0 < head; p0++)
        for (int l = 0; l < V; l++)
            tile[p0 * V + l] = planes[l][p0];
    for (; p0 + V <= count; p0 += V)
        for (int p = 0; p < V; p++)
            for (int l = 0; l < V; l++)
                tile[(p0 + p) * V + l] = planes[l][p0 + p];
    for (; p0 < count; p0++)
        for (int l = 0; l < V; l++)
            tile[p0 * V + l] = planes[l][p0];
}

/* planes[l][p] = tile[p][l] for p < count and the first `lanes` lanes (the others are a
 * block's padding channels). A V x V square goes through a transposed copy on the stack: a
 * transpose straight into the planes becomes scattered stores. */
static void F(store_tile)(T* const* planes, int lanes, const T* restrict tile, int64_t count)
{
    int64_t p0 = 0;
    if (lanes == V) {
        for (const int64_t head = F(head)(planes[0], count); p0 < head; p0++)
            for (int l = 0; l < V; l++)
                planes[l][p0] = tile[p0 * V + l];
        for (; p0 + V <= count; p0 += V) {
            T square[V][V];
            for (int l = 0; l < V; l++)
                for (int p = 0; p < V; p++)
                    square[l][p] = tile[(p0 + p) * V + l];
            for (int l = 0; l < V; l++)
                memcpy(planes[l] + p0, square[l], sizeof square[l]);
        }
    }
    for (; p0 < count; p0++)
        for (int l = 0; l < lanes; l++)
            planes[l][p0] = tile[p0 * V + l];
}

/* Output row oh of kernel row kh reads input row `ih`: -1 where that row is padding. */
static inline int64_t F(input_row)(const Geom* g, int64_t oh, int64_t kh)
{
    const int64_t ih = oh * g->sh - g->ph + kh * g->dh;
    return ih >= 0 && ih < g->h ? ih : -1;
}

/* out[ow] += in[ow * sw + off] * wv for lo <= ow < hi */
static inline void F(taps)(F(vec)* restrict out, const F(vec)* restrict in, F(vec) wv,
                           int64_t lo, int64_t hi, int64_t sw, int64_t off)
{
    if (sw == 1)  /* (the common case, with its plain addressing) */
        for (int64_t ow = lo; ow < hi; ow++) out[ow] += in[ow + off] * wv;
    else
        for (int64_t ow = lo; ow < hi; ow++) out[ow] += in[ow * sw + off] * wv;
}

/* out[ow0 + j] += output row oh's sums over the kernel, in registers, for j < r: the columns
 * ow0 .. ow0 + r - 1 of every kernel column inside the input. (Inlined with a constant r.) */
static inline __attribute__((always_inline)) void F(block)(
    F(vec)* restrict out, const F(vec)* restrict xt, const F(vec)* restrict wt, const Geom* g,
    int64_t oh, int64_t ow0, const int r)
{
    const int64_t sw = g->sw, dw = g->dw;
    F(vec) acc[R];
    for (int j = 0; j < r; j++) acc[j] = out[ow0 + j];
    for (int64_t kh = 0; kh < g->kh; kh++) {
        const int64_t ih = F(input_row)(g, oh, kh);
        if (ih < 0) continue;
        const F(vec)* in = xt + ih * g->w + ow0 * sw - g->pw;  /* (ow0 * sw >= pw) */
        for (int64_t kw = 0; kw < g->kw; kw++) {
            const F(vec) wv = wt[kh * g->kw + kw];
            for (int j = 0; j < r; j++) acc[j] += in[j * sw + kw * dw] * wv;
        }
    }
    for (int j = 0; j < r; j++) out[ow0 + j] = acc[j];
}

/* yt (OH * OW cells) = the convolution of xt (H * W cells) with wt (KH * KW cells), added to
 * yt where `accumulate`. Each output is summed over the kernel in order (kh, then kw): in
 * registers for R or R / 2 cells at a time where every kernel column is inside the input, in
 * yt for the columns near the edges. */
static void F(forward_tile)(F(vec)* restrict yt, const F(vec)* restrict xt,
                            const F(vec)* restrict wt, const Geom* g, int accumulate)
{
    const int64_t sw = g->sw, dw = g->dw, pw = g->pw, a = g->inner_lo;
    for (int64_t oh = 0; oh < g->oh; oh++) {
        F(vec)* restrict out = yt + oh * g->ow;
        if (!accumulate)
            for (int64_t ow = 0; ow < g->ow; ow++) out[ow] = (F(vec)){0};
        int64_t e = a;  /* the register blocks' end */
        for (; e + R <= g->inner_hi; e += R) F(block)(out, xt, wt, g, oh, e, R);
        if (e + R / 2 <= g->inner_hi) {
            F(block)(out, xt, wt, g, oh, e, R / 2);
            e += R / 2;
        }
        if (a == 0 && e == g->ow) continue;
        for (int64_t kh = 0; kh < g->kh; kh++) {  /* the edges, one kernel offset at a time */
            const int64_t ih = F(input_row)(g, oh, kh);
            if (ih < 0) continue;
            for (int64_t kw = 0; kw < g->kw; kw++) {
                const F(vec) wv = wt[kh * g->kw + kw];
                const int64_t lo = g->lo[kw], hi = g->hi[kw], off = kw * dw - pw;
                F(taps)(out, xt + ih * g->w, wv, lo, hi < a ? hi : a, sw, off);
                F(taps)(out, xt + ih * g->w, wv, lo > e ? lo : e, hi, sw, off);
            }
        }
    }
}

/* gxt (H * W cells) += the input gradient of gyt (OH * OW cells) through wt: the forward's
 * loops, each product added to the input cell it came from (the transposed convolution's
 * scatter, for any stride). */
static void F(grad_input_tile)(F(vec)* restrict gxt, const F(vec)* restrict gyt,
                               const F(vec)* restrict wt, const Geom* g)
{
    const int64_t sw = g->sw;
    for (int64_t oh = 0; oh < g->oh; oh++) {
        const F(vec)* restrict gout = gyt + oh * g->ow;
        for (int64_t kh = 0; kh < g->kh; kh++) {
            const int64_t ih = F(input_row)(g, oh, kh);
            if (ih < 0) continue;
            for (int64_t kw = 0; kw < g->kw; kw++) {
                const F(vec) wv = wt[kh * g->kw + kw];
                F(vec)* in = gxt + ih * g->w;
                const int64_t off = kw * g->dw - g->pw;
                for (int64_t ow = g->lo[kw]; ow < g->hi[kw]; ow++)
                    in[ow * sw + off] += gout[ow] * wv;
            }
        }
    }
}

/* acc (KH * KW * 4 cells, four partial sums per kernel offset) += the products of xt's and
 * gyt's cells that each kernel offset pairs, a row's output columns lo + 4i + j into partial
 * sum j. */
static void F(grad_weight_tile)(F(vec)* restrict acc, const F(vec)* restrict xt,
                                const F(vec)* restrict gyt, const Geom* g)
{
    const int64_t sw = g->sw;
    for (int64_t kh = 0; kh < g->kh; kh++)
        for (int64_t kw = 0; kw < g->kw; kw++) {
            F(vec)* sum = acc + (kh * g->kw + kw) * 4;
            F(vec) s0 = sum[0], s1 = sum[1], s2 = sum[2], s3 = sum[3];
            const int64_t lo = g->lo[kw], hi = g->hi[kw], off = kw * g->dw - g->pw;
            for (int64_t oh = 0; oh < g->oh; oh++) {
                const int64_t ih = F(input_row)(g, oh, kh);
                if (ih < 0) continue;
                const F(vec)* in = xt + ih * g->w;
                const F(vec)* gout = gyt + oh * g->ow;
                int64_t ow = lo;
                for (; ow + 4 <= hi; ow += 4) {
                    s0 += in[ow * sw + off] * gout[ow];
                    s1 += in[(ow + 1) * sw + off] * gout[ow + 1];
                    s2 += in[(ow + 2) * sw + off] * gout[ow + 2];
                    s3 += in[(ow + 3) * sw + off] * gout[ow + 3];
                }
                if (ow < hi) s0 += in[ow * sw + off] * gout[ow];
                if (ow + 1 < hi) s1 += in[(ow + 1) * sw + off] * gout[ow + 1];
                if (ow + 2 < hi) s2 += in[(ow + 2) * sw + off] * gout[ow + 2];
            }
            sum[0] = s0; sum[1] = s1; sum[2] = s2; sum[3] = s3;
        }
}

/* One call: out from a and b (forward: y from x and w; grad_input: gx from gy and w;
 * grad_weight: gw from x and gy). */
typedef struct {
    T* out;
    const T *a, *b;
    const Geom *g, *flipped;
} F(Job);

/* The channel of lane l of the block from `first`, of `lanes` real channels: a padding lane
 * computes the last real channel again (and is not stored). */
static inline int64_t F(lane)(int64_t first, int l, int lanes)
{
    return first + (l < lanes ? l : lanes - 1);
}

/* Forward item: sample item / blocks, output channels from item % blocks * V. */
static void F(forward_item)(const F(Job)* job, F(vec)* tile, int64_t item)
{
    const Geom* g = job->g;
    const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, k = g->kh * g->kw;
    const int64_t blocks = (g->o + V - 1) / V, n = item / blocks, o0 = item % blocks * V;
    const int lanes = g->o - o0 < V ? (int)(g->o - o0) : V;
    F(vec) *xt = tile, *yt = xt + hw, *wt = yt + ohw;
    const T* in[V];
    const T* weight[V];
    T* out[V];
    for (int l = 0; l < V; l++) {
        const int64_t o = F(lane)(o0, l, lanes);
        in[l] = job->a + (n * g->c + o / g->mult) * hw;
        weight[l] = job->b + o * k;
        out[l] = job->out + (n * g->o + o) * ohw;
    }
    F(load_tile)((T*)xt, in, hw);
    F(load_tile)((T*)wt, weight, k);
    F(forward_tile)(yt, xt, wt, g, 0);
    F(store_tile)(out, lanes, (const T*)yt, ohw);
}

/* Input gradient item: sample item / blocks, input channels from item % blocks * V, each
 * summing its `mult` output channels in turn. With `flipped` (stride 1, padding at most the
 * kernel's extent) the forward of gy with the kernel flipped: sums in registers, no scatter. */
static void F(grad_input_item)(const F(Job)* job, F(vec)* tile, int64_t item)
{
    const Geom* g = job->g;
    const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, k = g->kh * g->kw;
    const int64_t blocks = (g->c + V - 1) / V, n = item / blocks, c0 = item % blocks * V;
    const int lanes = g->c - c0 < V ? (int)(g->c - c0) : V;
    F(vec) *gxt = tile, *gyt = gxt + hw, *wt = gyt + ohw;
    const T* gout[V];
    const T* weight[V];
    T* gin[V];
    if (!job->flipped) memset(gxt, 0, (size_t)hw * VBYTES);
    for (int64_t m = 0; m < g->mult; m++) {
        for (int l = 0; l < V; l++) {
            const int64_t o = F(lane)(c0, l, lanes) * g->mult + m;
            gout[l] = job->a + (n * g->o + o) * ohw;
            weight[l] = job->b + o * k;
        }
        F(load_tile)((T*)gyt, gout, ohw);
        F(load_tile)((T*)wt, weight, k);
        if (job->flipped) {
            for (int64_t i = 0; i < k / 2; i++) {
                const F(vec) t = wt[i];
                wt[i] = wt[k - 1 - i];
                wt[k - 1 - i] = t;
            }
            F(forward_tile)(gxt, gyt, wt, job->flipped, m > 0);
        } else {
            F(grad_input_tile)(gxt, gyt, wt, g);
        }
    }
    for (int l = 0; l < V; l++) gin[l] = job->out + (n * g->c + F(lane)(c0, l, lanes)) * hw;
    F(store_tile)(gin, lanes, (const T*)gxt, hw);
}

/* Weight gradient item: output channels from item * V, summed over the whole batch in order
 * (so on one thread, whatever the thread count). */
static void F(grad_weight_item)(const F(Job)* job, F(vec)* tile, int64_t item)
{
    const Geom* g = job->g;
    const int64_t hw = g->h * g->w, ohw = g->oh * g->ow, k = g->kh * g->kw, o0 = item * V;
    const int lanes = g->o - o0 < V ? (int)(g->o - o0) : V;
    F(vec) *xt = tile, *gyt = xt + hw, *acc = gyt + ohw, *gwt = acc + 4 * k;
    const T* in[V];
    const T* gout[V];
    T* weight[V];
    memset(acc, 0, (size_t)(4 * k) * VBYTES);
    for (int64_t n = 0; n < g->n; n++) {
        for (int l = 0; l < V; l++) {
            const int64_t o = F(lane)(o0, l, lanes);
            in[l] = job->a + (n * g->c + o / g->mult) * hw;
            gout[l] = job->b + (n * g->o + o) * ohw;
        }
        F(load_tile)((T*)xt, in, hw);
        F(load_tile)((T*)gyt, gout, ohw);
        F(grad_weight_tile)(acc, xt, gyt, g);
    }
    for (int64_t i = 0; i < k; i++)
        gwt[i] = (acc[4 * i] + acc[4 * i + 1]) + (acc[4 * i + 2] + acc[4 * i + 3]);
    for (int l = 0; l < V; l++) weight[l] = job->out + F(lane)(o0, l, lanes) * k;
    F(store_tile)(weight, lanes, (const T*)gwt, k);
}

/* work(job, tiles, i) for i < count on `nthreads` OpenMP threads, each with its own tiles of
 * `cells` cells; on one thread without entering OpenMP (whose pool a forked child lacks).
 * -1 where tiles could not be allocated. */
static int F(each)(void (*work)(const F(Job)*, F(vec)*, int64_t), const F(Job)* job,
                   int64_t count, int64_t cells, int nthreads)
{
    if (nthreads > count) nthreads = (int)count;
    if (nthreads <= 1) {
        F(vec)* tile = tiles(cells);
        if (!tile) return -1;
        for (int64_t i = 0; i < count; i++) work(job, tile, i);
        free(tile);
        return 0;
    }
    int failed = 0;
    #pragma omp parallel num_threads(nthreads)
    {
        F(vec)* tile = tiles(cells);
        if (!tile) {
            #pragma omp atomic write
            failed = 1;
        }
        #pragma omp for schedule(static)
        for (int64_t i = 0; i < count; i++)
            if (tile) work(job, tile, i);
        free(tile);
    }
    return failed ? -1 : 0;
}

/* The three ops: items and tile sizes */
static int F(forward)(T* y, const T* x, const T* w, const Geom* g, const Geom* flipped,
                      int nthreads)
{
    const F(Job) job = {y, x, w, g, flipped};
    return F(each)(F(forward_item), &job, g->n * ((g->o + V - 1) / V),
                   g->h * g->w + g->oh * g->ow + g->kh * g->kw, nthreads);
}

static int F(grad_input)(T* gx, const T* gy, const T* w, const Geom* g, const Geom* flipped,
                         int nthreads)
{
    const F(Job) job = {gx, gy, w, g, flipped};
    return F(each)(F(grad_input_item), &job, g->n * ((g->c + V - 1) / V),
                   g->h * g->w + g->oh * g->ow + g->kh * g->kw, nthreads);
}

static int F(grad_weight)(T* gw, const T* x, const T* gy, const Geom* g, const Geom* flipped,
                          int nthreads)
{
    const F(Job) job = {gw, x, gy, g, flipped};
    return F(each)(F(grad_weight_item), &job, (g->o + V - 1) / V,
                   g->h * g->w + g->oh * g->ow + 5 * g->kh * g->kw, nthreads);
}
"""

_BINDINGS = r"""
typedef int (*kernel_f)(float*, const float*, const float*, const Geom*, const Geom*, int);
typedef int (*kernel_d)(double*, const double*, const double*, const Geom*, const Geom*, int);

enum { X, W, Y };  /* the arrays' roles: input, weight, output-side */

/* The geometry of x (N, C, H, W), w (O, 1, KH, KW), y (N, O, OH, OW) with the stride, padding
 * and dilation p[0..5] (h, w each); NULL, or what is wrong. */
static const char* geometry(Geom* g, Py_buffer* const* a, const int64_t* p)
{
    const Py_ssize_t *x = a[X]->shape, *w = a[W]->shape, *y = a[Y]->shape;
    if (a[X]->ndim != 4 || a[W]->ndim != 4 || a[Y]->ndim != 4)
        return "4-dim x (N, C, H, W), w (O, 1, KH, KW) and y (N, O, OH, OW)";
    if (a[X]->itemsize != a[W]->itemsize || a[X]->itemsize != a[Y]->itemsize
            || strcmp(a[X]->format, a[W]->format) || strcmp(a[X]->format, a[Y]->format))
        return "arrays of one dtype";
    if (p[0] < 1 || p[1] < 1 || p[2] < 0 || p[3] < 0 || p[4] < 1 || p[5] < 1)
        return "strides and dilations >= 1, paddings >= 0";
    *g = (Geom){.n = x[0], .c = x[1], .o = w[0], .h = x[2], .w = x[3], .oh = y[2], .ow = y[3],
                .kh = w[2], .kw = w[3], .sh = p[0], .sw = p[1], .ph = p[2], .pw = p[3],
                .dh = p[4], .dw = p[5]};
    if (g->c < 1 || g->o < 1 || g->o % g->c || w[1] != 1 || y[0] != g->n || y[1] != g->o
            || g->kh < 1 || g->kw < 1)
        return "O a positive multiple of C, w (O, 1, KH, KW), y (N, O, OH, OW)";
    g->mult = g->o / g->c;
    if (g->oh != (g->h + 2 * g->ph - g->dh * (g->kh - 1) - 1) / g->sh + 1
            || g->ow != (g->w + 2 * g->pw - g->dw * (g->kw - 1) - 1) / g->sw + 1 || g->oh < 1
            || g->ow < 1)
        return "y's spatial size the convolution's";
    return NULL;
}

/* run(a0, a1, a2, sh, sw, ph, pw, dh, dw, nthreads): roles[i] is a_i's role, a0 the result. */
static PyObject* run(PyObject* const* args, Py_ssize_t nargs, const char* name,
                     const int* roles, kernel_f kf, kernel_d kd)
{
    if (nargs != 10) return PyErr_Format(PyExc_TypeError, "%s: 10 arguments", name);
    int64_t p[7];
    for (int i = 0; i < 7; i++) {
        p[i] = PyLong_AsLongLong(args[3 + i]);
        if (p[i] == -1 && PyErr_Occurred()) return NULL;
    }
    Py_buffer buf[3];
    Py_buffer* a[3];
    int got = 0;
    const char* bad = NULL;
    for (; got < 3; got++) {
        const int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (got == 0 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(args[got], &buf[got], flags) < 0) break;
        a[roles[got]] = &buf[got];
        if (strcmp(buf[got].format, "f") && strcmp(buf[got].format, "d")) {
            bad = "float32 or float64 arrays";
            got++;
            break;
        }
    }
    int64_t* cols = NULL;
    Geom g, flip;
    if (got == 3 && !bad) bad = geometry(&g, a, p);
    if (got == 3 && !bad && !(cols = malloc(4 * g.kw * sizeof(int64_t)))) bad = "memory";
    int failed = 0;
    if (got == 3 && !bad) {
        columns(&g, cols);
        /* stride 1's input gradient: the forward of the output gradient with the kernel flipped,
         * padded by the kernel's extent less the padding */
        flip = (Geom){.n = g.n, .c = g.c, .o = g.o, .mult = g.mult, .h = g.oh, .w = g.ow,
                      .oh = g.h, .ow = g.w, .kh = g.kh, .kw = g.kw, .sh = 1, .sw = 1,
                      .ph = g.dh * (g.kh - 1) - g.ph, .pw = g.dw * (g.kw - 1) - g.pw,
                      .dh = g.dh, .dw = g.dw};
        const int flipped = g.sh == 1 && g.sw == 1 && flip.ph >= 0 && flip.pw >= 0;
        if (flipped) columns(&flip, cols + 2 * g.kw);
        const int nthreads = (int)(p[6] < 1 ? 1 : p[6]);
        Py_BEGIN_ALLOW_THREADS
        if (buf[0].itemsize == 4)
            failed = kf(buf[0].buf, buf[1].buf, buf[2].buf, &g, flipped ? &flip : NULL,
                        nthreads);
        else
            failed = kd(buf[0].buf, buf[1].buf, buf[2].buf, &g, flipped ? &flip : NULL,
                        nthreads);
        Py_END_ALLOW_THREADS
    }
    free(cols);
    for (int i = 0; i < got; i++) PyBuffer_Release(&buf[i]);
    if (got < 3 && !bad) return NULL;  /* (PyObject_GetBuffer's error) */
    if (bad && !strcmp(bad, "memory")) return PyErr_NoMemory();
    if (bad) return PyErr_Format(PyExc_ValueError, "%s: needs %s", name, bad);
    if (failed) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject* py_forward(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    static const int roles[3] = {Y, X, W};
    return run(args, nargs, "forward", roles, forward_float, forward_double);
}

static PyObject* py_grad_input(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    static const int roles[3] = {X, Y, W};
    return run(args, nargs, "grad_input", roles, grad_input_float, grad_input_double);
}

static PyObject* py_grad_weight(PyObject* self, PyObject* const* args, Py_ssize_t nargs)
{
    static const int roles[3] = {W, X, Y};
    return run(args, nargs, "grad_weight", roles, grad_weight_float, grad_weight_double);
}

static PyMethodDef methods[] = {
    {"forward", (PyCFunction)(void (*)(void))py_forward, METH_FASTCALL,
     "forward(y, x, w, sh, sw, ph, pw, dh, dw, nthreads)"},
    {"grad_input", (PyCFunction)(void (*)(void))py_grad_input, METH_FASTCALL,
     "grad_input(gx, gy, w, sh, sw, ph, pw, dh, dw, nthreads)"},
    {"grad_weight", (PyCFunction)(void (*)(void))py_grad_weight, METH_FASTCALL,
     "grad_weight(gw, x, gy, sh, sw, ph, pw, dh, dw, nthreads)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ember_depthwise", NULL, -1, methods};

PyMODINIT_FUNC PyInit_ember_depthwise(void) { return PyModule_Create(&module); }
"""


def _source():
    per_dtype = [f"#define T {t}\n#define V {lanes}\n#define F(name) name##_{t}\n{_KERNELS}"
                 "#undef T\n#undef V\n#undef F\n" for t, lanes in (("float", 16), ("double", 8))]
    return _PRELUDE + "".join(per_dtype) + _BINDINGS


_BUILT = HandWrittenModule("ember_depthwise", _source,
                           "depthwise convolutions take the column path",
                           available=generated.enabled)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def module():
    """The built module, or None (no compiler, ``EMBER_EAGER_CODEGEN=0``)."""
    return _BUILT.get() if generated.enabled() else None


def _usable(a, b, channels, w_shape):
    """Whether the module takes arrays ``a`` and ``b`` of a convolution of ``channels`` input
    channels and a weight of ``w_shape``."""
    return (type(a) is np.ndarray and type(b) is np.ndarray and a.dtype in _FLOATS
            and b.dtype == a.dtype and a.ndim == b.ndim == len(w_shape)
            and channels >= 1 and w_shape[1] == 1 and w_shape[0] >= channels
            and w_shape[0] % channels == 0 and module() is not None)


def takes(x, w, groups):
    """Whether this module computes the convolution of ``x`` (N, C, *S) with ``w`` in ``groups``
    groups, and its gradients: NumPy arrays of one dtype, float32 or float64, of 1 or 2 spatial
    dims (3-D convolutions are declined), ``groups == C``, ``w`` (C * mult, 1, *K), and the
    module built. Any strides: the functions copy arrays that are not C-contiguous and
    aligned."""
    return (type(x) is np.ndarray and type(w) is np.ndarray and x.ndim in (3, 4)
            and groups == x.shape[1] and _usable(x, w, groups, w.shape))


def forward(x, w, stride, padding, dilation):
    """The convolution y (N, C * mult, *O) of x (N, C, *S) with w (C * mult, 1, *K), no bias,
    output channel o reading input channel o // mult; stride, padding and dilation each an int
    or one per spatial dim. None where :func:`takes` says no (``groups`` being C), or where the
    output would be empty (the caller's checks raise)."""
    if not (type(x) is np.ndarray and x.ndim in (3, 4) and takes(x, w, x.shape[1])):
        return None
    params = _params(stride, padding, dilation, x.ndim)
    x4, w4 = _planar(x), _planar(w)
    (n, _, h, wd), (o, _, kh, kw) = x4.shape, w4.shape
    oh, ow = _size(h, kh, *params[0::2]), _size(wd, kw, *params[1::2])
    if oh < 1 or ow < 1:
        return None
    y = _empty((n, o, oh, ow), x.dtype)
    module().forward(y, x4, w4, *params, _threads(y.size * kh * kw))
    return y if x.ndim == 4 else y.reshape(n, o, ow)


def grad_input(gy, w, x_shape, stride, padding, dilation):
    """The input gradient, of ``x_shape``, of :func:`forward` for its output's gradient gy: each
    input element's gradient summed over the windows that read it in its channel's ``mult``
    output channels (0 where none does). None where :func:`takes` would say no; a ValueError
    where gy's shape is not the forward's output's."""
    if not (type(w) is np.ndarray and w.ndim in (3, 4) and len(x_shape) == w.ndim
            and _usable(gy, w, x_shape[1], w.shape)):
        return None
    gx = _empty(tuple(x_shape) if w.ndim == 4 else (*x_shape[:2], 1, x_shape[2]), gy.dtype)
    gy4 = _planar(gy)
    module().grad_input(gx, gy4, _planar(w), *_params(stride, padding, dilation, w.ndim),
                        _threads(gy4.size * w[0].size))
    return gx if w.ndim == 4 else gx.reshape(x_shape)


def grad_weight(x, gy, w_shape, stride, padding, dilation):
    """The weight gradient, of ``w_shape``, of :func:`forward` for its output's gradient gy,
    summed over the batch (zeros for a batch of 0), each block of channels summing its whole
    batch on one thread: the same on any thread count. None where :func:`takes` would say no;
    a ValueError where gy's shape is not the forward's output's."""
    if not (type(x) is np.ndarray and x.ndim in (3, 4) and len(w_shape) == x.ndim
            and _usable(x, gy, x.shape[1], w_shape)):
        return None
    gw = np.empty(tuple(w_shape) if x.ndim == 4 else (*w_shape[:2], 1, w_shape[2]), x.dtype)
    gy4 = _planar(gy)
    module().grad_weight(gw, _planar(x), gy4, *_params(stride, padding, dilation, x.ndim),
                         _threads(gy4.size * gw[0].size))
    return gw if x.ndim == 4 else gw.reshape(w_shape)


def _planar(a):
    """``a`` C-contiguous and aligned, with 2 spatial dims (a 1-D convolution's arrays get a
    height of 1)."""
    if not (a.flags.c_contiguous and a.flags.aligned):
        a = a.copy(order="C")
    return a[:, :, None] if a.ndim == 3 else a


def _params(stride, padding, dilation, ndim):
    """[sh, sw, ph, pw, dh, dw] of the 2-D convolution that computes this ``ndim``-dim one (the
    height of a 1-D one: stride 1, no padding, dilation 1)."""
    params = []
    for v, height in ((stride, 1), (padding, 0), (dilation, 1)):
        v = tuple(v) if isinstance(v, (tuple, list)) else (v,)
        params += (height, *v) if ndim == 3 else v * 2 if len(v) == 1 else v
    return params


def _size(size, k, stride, padding, dilation):
    return (size + 2 * padding - dilation * (k - 1) - 1) // stride + 1


def _empty(shape, dtype):
    """A result from the caching allocator (fresh pages of a large one cost a fault per 4 KiB)."""
    return _cpu_cache.empty(shape, dtype, math.prod(shape) * dtype.itemsize)


def _threads(work):
    """OpenMP threads for ``work`` multiply-adds: the calling thread alone for a small call, or
    inside a parallel_for chunk (its caller's threads are busy)."""
    one = work < PARALLEL_WORK or blas.in_one_thread()
    return 1 if one else generated._threads()
