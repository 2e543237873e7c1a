// Memory-efficient attention (aten::_scaled_dot_product_efficient_attention and its backward) for
// float32: softmax(q k^T * scale) v without the L x S score matrix. One thread per query row
// (forward, dQ) or key row (dK, dV), FlashAttention's online softmax over the keys; the
// backward recomputes each probability from the forward's log-sum-exp:
//
//   forward   (b, h, i): m, l, acc over keys j (j <= i when causal): s = scale q_i.k_j,
//             m' = max(m, s), l = l e^(m - m') + e^(s - m'), acc = acc e^(m - m') + e^(s - m') v_j;
//             out_i = acc / l, lse_i = m + log l
//   query     (b, h, i): delta_i = dO_i.O_i (kept for the key pass),
//             dQ_i = scale sum_j p_ij (dO_i.v_j - delta_i) k_j,  p_ij = e^(scale q_i.k_j - lse_i)
//   key       (b, h, j): dV_j = sum_i p_ij dO_i, dK_j = scale sum_i p_ij (dO_i.v_j - delta_i) q_i
//             (i >= j when causal)
//
// "Causal" is PyTorch's top-left alignment (query i sees keys 0..i). Every tensor is addressed
// by (batch, head, row) strides with a unit stride along the head dimension; lse and delta are
// (B, H, rows) with rows padded to lse_stride. Head dimensions up to ATTENTION_MAX_DIM.
//
// The same file compiles as C for the host (EMBER_HOST_EMULATION: a kernel is a function whose
// grid-stride loop visits every row): the simulated device runs these kernels so, and CI checks
// them against the math path.
//
// On a GPU, head dimensions up to WARP_MAX_DIM take the *_warp_f32 kernels instead: one warp per
// row, each lane holding head-dimension elements lane, lane + 32, ... in registers, the dot
// products finished by warp shuffles. A warp reads each key and value row in one coalesced pass
// and keeps its accumulators out of local memory, where a thread per row reads 32 rows' worth of
// scattered addresses and spills its accumulator array. Same equations, same arguments.

#define ATTENTION_MAX_DIM 256

#ifdef EMBER_HOST_EMULATION
#include <math.h>
#define KERNEL static void
#define DEVICE static inline
#define FIRST_INDEX 0LL
#define INDEX_STRIDE 1LL
#define NEG_INF (-INFINITY)
#else
#define KERNEL extern "C" __global__ void
#define DEVICE __device__ __forceinline__
#define FIRST_INDEX ((long long)blockIdx.x * blockDim.x + threadIdx.x)
#define INDEX_STRIDE ((long long)gridDim.x * blockDim.x)
#define NEG_INF (__int_as_float(0xff800000))
#endif

DEVICE float attention_dot(const float *a, const float *b, int n) {
    float s = 0.0f;
    for (int d = 0; d < n; ++d)
        s += a[d] * b[d];
    return s;
}

KERNEL attention_forward_f32(const float *q, const float *k, const float *v, float *out,
                             float *lse, long long rows, int H, int L, int S, int D, int Dv,
                             long long qb, long long qh, long long ql, long long kb,
                             long long kh, long long kl, long long vb, long long vh,
                             long long vl, long long ob, long long oh, long long ol,
                             long long lse_stride, float scale, int causal) {
    for (long long t = FIRST_INDEX; t < rows; t += INDEX_STRIDE) {
        const long long bh = t / L, b = bh / H, h = bh % H;
        const int i = (int)(t % L);
        const float *qi = q + b * qb + h * qh + i * ql;
        const float *kbh = k + b * kb + h * kh, *vbh = v + b * vb + h * vh;
        float acc[ATTENTION_MAX_DIM];
        for (int d = 0; d < Dv; ++d)
            acc[d] = 0.0f;
        float m = NEG_INF, l = 0.0f;
        const int end = causal && i + 1 < S ? i + 1 : S;
        for (int j = 0; j < end; ++j) {
            const float s = scale * attention_dot(qi, kbh + j * kl, D);
            const float m2 = fmaxf(m, s);
            const float c = expf(m - m2), p = expf(s - m2);
            const float *vj = vbh + j * vl;
            l = l * c + p;
            for (int d = 0; d < Dv; ++d)
                acc[d] = acc[d] * c + p * vj[d];
            m = m2;
        }
        float *oi = out + b * ob + h * oh + i * ol;
        for (int d = 0; d < Dv; ++d)
            oi[d] = acc[d] / l;
        lse[bh * lse_stride + i] = m + logf(l);
    }
}

KERNEL attention_backward_query_f32(const float *q, const float *k, const float *v,
                                    const float *out, const float *dout, const float *lse,
                                    float *dq, float *delta, long long rows, int H, int L, int S,
                                    int D, int Dv, long long qb, long long qh, long long ql,
                                    long long kb, long long kh, long long kl, long long vb,
                                    long long vh, long long vl, long long ob, long long oh,
                                    long long ol, long long gb, long long gh, long long gl,
                                    long long lse_stride, float scale, int causal) {
    // dO has (gb, gh, gl) strides; dQ is contiguous (B, H, L, D)
    for (long long t = FIRST_INDEX; t < rows; t += INDEX_STRIDE) {
        const long long bh = t / L, b = bh / H, h = bh % H;
        const int i = (int)(t % L);
        const float *qi = q + b * qb + h * qh + i * ql;
        const float *gi = dout + b * gb + h * gh + i * gl;
        const float *kbh = k + b * kb + h * kh, *vbh = v + b * vb + h * vh;
        const float di = attention_dot(gi, out + b * ob + h * oh + i * ol, Dv);
        const float li = lse[bh * lse_stride + i];
        delta[bh * lse_stride + i] = di;
        float acc[ATTENTION_MAX_DIM];
        for (int d = 0; d < D; ++d)
            acc[d] = 0.0f;
        const int end = causal && i + 1 < S ? i + 1 : S;
        for (int j = 0; j < end; ++j) {
            const float *kj = kbh + j * kl;
            const float p = expf(scale * attention_dot(qi, kj, D) - li);
            const float ds = p * (attention_dot(gi, vbh + j * vl, Dv) - di);
            for (int d = 0; d < D; ++d)
                acc[d] += ds * kj[d];
        }
        float *dqi = dq + t * D;
        for (int d = 0; d < D; ++d)
            dqi[d] = scale * acc[d];
    }
}

KERNEL attention_backward_key_f32(const float *q, const float *k, const float *v,
                                  const float *dout, const float *lse, const float *delta,
                                  float *dk, float *dv, long long rows, int H, int L, int S,
                                  int D, int Dv, long long qb, long long qh, long long ql,
                                  long long kb, long long kh, long long kl, long long vb,
                                  long long vh, long long vl, long long gb, long long gh,
                                  long long gl, long long lse_stride, float scale, int causal) {
    // rows = B * H * S; dK and dV are contiguous (B, H, S, D) and (B, H, S, Dv)
    for (long long t = FIRST_INDEX; t < rows; t += INDEX_STRIDE) {
        const long long bh = t / S, b = bh / H, h = bh % H;
        const int j = (int)(t % S);
        const float *kj = k + b * kb + h * kh + j * kl;
        const float *vj = v + b * vb + h * vh + j * vl;
        const float *qbh = q + b * qb + h * qh, *gbh = dout + b * gb + h * gh;
        float acc_k[ATTENTION_MAX_DIM], acc_v[ATTENTION_MAX_DIM];
        for (int d = 0; d < D; ++d)
            acc_k[d] = 0.0f;
        for (int d = 0; d < Dv; ++d)
            acc_v[d] = 0.0f;
        for (int i = causal ? j : 0; i < L; ++i) {
            const float *qi = qbh + i * ql, *gi = gbh + i * gl;
            const float p = expf(scale * attention_dot(qi, kj, D) - lse[bh * lse_stride + i]);
            const float ds = p * (attention_dot(gi, vj, Dv) - delta[bh * lse_stride + i]);
            for (int d = 0; d < Dv; ++d)
                acc_v[d] += p * gi[d];
            for (int d = 0; d < D; ++d)
                acc_k[d] += ds * qi[d];
        }
        float *dkj = dk + t * D, *dvj = dv + t * Dv;
        for (int d = 0; d < D; ++d)
            dkj[d] = scale * acc_k[d];
        for (int d = 0; d < Dv; ++d)
            dvj[d] = acc_v[d];
    }
}

#ifndef EMBER_HOST_EMULATION
#define WARP_MAX_DIM 128
#define WARP_DIMS (WARP_MAX_DIM / 32)  // elements of a head-dimension row per lane
#define FIRST_WARP (((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5)
#define WARP_STRIDE (((long long)gridDim.x * blockDim.x) >> 5)

// sum over the warp of a[d] * b[d] for the lane's elements d = lane + 32 c < n
DEVICE float warp_dot(const float (&a)[WARP_DIMS], const float *b, int lane, int n) {
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < WARP_DIMS; ++c)
        if (lane + 32 * c < n)
            s += a[c] * b[lane + 32 * c];
    return warp_sum(s);
}

DEVICE void warp_load(float (&r)[WARP_DIMS], const float *p, int lane, int n) {
#pragma unroll
    for (int c = 0; c < WARP_DIMS; ++c)
        r[c] = lane + 32 * c < n ? p[lane + 32 * c] : 0.0f;
}

DEVICE void warp_store(float *p, const float (&r)[WARP_DIMS], float f, int lane, int n) {
#pragma unroll
    for (int c = 0; c < WARP_DIMS; ++c)
        if (lane + 32 * c < n)
            p[lane + 32 * c] = f * r[c];
}

KERNEL attention_forward_warp_f32(const float *q, const float *k, const float *v, float *out,
                                  float *lse, long long rows, int H, int L, int S, int D, int Dv,
                                  long long qb, long long qh, long long ql, long long kb,
                                  long long kh, long long kl, long long vb, long long vh,
                                  long long vl, long long ob, long long oh, long long ol,
                                  long long lse_stride, float scale, int causal) {
    const int lane = threadIdx.x & 31;
    for (long long t = FIRST_WARP; t < rows; t += WARP_STRIDE) {
        const long long bh = t / L, b = bh / H, h = bh % H;
        const int i = (int)(t % L);
        const float *kbh = k + b * kb + h * kh, *vbh = v + b * vb + h * vh;
        float qi[WARP_DIMS], acc[WARP_DIMS];
        warp_load(qi, q + b * qb + h * qh + i * ql, lane, D);
#pragma unroll
        for (int c = 0; c < WARP_DIMS; ++c)
            acc[c] = 0.0f;
        float m = NEG_INF, l = 0.0f;
        const int end = causal && i + 1 < S ? i + 1 : S;
        for (int j = 0; j < end; ++j) {
            const float s = scale * warp_dot(qi, kbh + j * kl, lane, D);
            const float m2 = fmaxf(m, s);
            const float c = expf(m - m2), p = expf(s - m2);
            const float *vj = vbh + j * vl;
            l = l * c + p;
#pragma unroll
            for (int e = 0; e < WARP_DIMS; ++e)
                if (lane + 32 * e < Dv)
                    acc[e] = acc[e] * c + p * vj[lane + 32 * e];
            m = m2;
        }
        warp_store(out + b * ob + h * oh + i * ol, acc, 1.0f / l, lane, Dv);
        if (lane == 0)
            lse[bh * lse_stride + i] = m + logf(l);
    }
}

KERNEL attention_backward_query_warp_f32(const float *q, const float *k, const float *v,
                                         const float *out, const float *dout, const float *lse,
                                         float *dq, float *delta, long long rows, int H, int L,
                                         int S, int D, int Dv, long long qb, long long qh,
                                         long long ql, long long kb, long long kh, long long kl,
                                         long long vb, long long vh, long long vl, long long ob,
                                         long long oh, long long ol, long long gb, long long gh,
                                         long long gl, long long lse_stride, float scale,
                                         int causal) {
    const int lane = threadIdx.x & 31;
    for (long long t = FIRST_WARP; t < rows; t += WARP_STRIDE) {
        const long long bh = t / L, b = bh / H, h = bh % H;
        const int i = (int)(t % L);
        const float *kbh = k + b * kb + h * kh, *vbh = v + b * vb + h * vh;
        float qi[WARP_DIMS], gi[WARP_DIMS], acc[WARP_DIMS];
        warp_load(qi, q + b * qb + h * qh + i * ql, lane, D);
        warp_load(gi, dout + b * gb + h * gh + i * gl, lane, Dv);
        const float di = warp_dot(gi, out + b * ob + h * oh + i * ol, lane, Dv);
        const float li = lse[bh * lse_stride + i];
        if (lane == 0)
            delta[bh * lse_stride + i] = di;
#pragma unroll
        for (int c = 0; c < WARP_DIMS; ++c)
            acc[c] = 0.0f;
        const int end = causal && i + 1 < S ? i + 1 : S;
        for (int j = 0; j < end; ++j) {
            const float *kj = kbh + j * kl;
            const float p = expf(scale * warp_dot(qi, kj, lane, D) - li);
            const float ds = p * (warp_dot(gi, vbh + j * vl, lane, Dv) - di);
#pragma unroll
            for (int c = 0; c < WARP_DIMS; ++c)
                if (lane + 32 * c < D)
                    acc[c] += ds * kj[lane + 32 * c];
        }
        warp_store(dq + t * D, acc, scale, lane, D);
    }
}

KERNEL attention_backward_key_warp_f32(const float *q, const float *k, const float *v,
                                       const float *dout, const float *lse, const float *delta,
                                       float *dk, float *dv, long long rows, int H, int L, int S,
                                       int D, int Dv, long long qb, long long qh, long long ql,
                                       long long kb, long long kh, long long kl, long long vb,
                                       long long vh, long long vl, long long gb, long long gh,
                                       long long gl, long long lse_stride, float scale,
                                       int causal) {
    const int lane = threadIdx.x & 31;
    for (long long t = FIRST_WARP; t < rows; t += WARP_STRIDE) {
        const long long bh = t / S, b = bh / H, h = bh % H;
        const int j = (int)(t % S);
        const float *qbh = q + b * qb + h * qh, *gbh = dout + b * gb + h * gh;
        float kj[WARP_DIMS], vj[WARP_DIMS], acc_k[WARP_DIMS], acc_v[WARP_DIMS];
        warp_load(kj, k + b * kb + h * kh + j * kl, lane, D);
        warp_load(vj, v + b * vb + h * vh + j * vl, lane, Dv);
#pragma unroll
        for (int c = 0; c < WARP_DIMS; ++c)
            acc_k[c] = acc_v[c] = 0.0f;
        for (int i = causal ? j : 0; i < L; ++i) {
            const float *qi = qbh + i * ql, *gi = gbh + i * gl;
            const float p = expf(scale * warp_dot(kj, qi, lane, D) - lse[bh * lse_stride + i]);
            const float ds = p * (warp_dot(vj, gi, lane, Dv) - delta[bh * lse_stride + i]);
#pragma unroll
            for (int c = 0; c < WARP_DIMS; ++c) {
                if (lane + 32 * c < Dv)
                    acc_v[c] += p * gi[lane + 32 * c];
                if (lane + 32 * c < D)
                    acc_k[c] += ds * qi[lane + 32 * c];
            }
        }
        warp_store(dk + t * D, acc_k, scale, lane, D);
        warp_store(dv + t * Dv, acc_v, 1.0f, lane, Dv);
    }
}
#endif
