// aten::native_layer_norm and the input gradient of native_layer_norm_backward over contiguous
// [rows, n] views. Forward: the mean, then the variance about it (two passes, as the CPU kernel:
// no cancellation), then y = (x - mean) * rstd * w + b, saving mean and rstd.
// Backward: dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = g * w.
// The weight and bias gradients are column sums: layer_norm_param_partials writes one partial
// sum per (chunk of rows, column), which the caller adds up.
//
// Two layouts for the row kernels (fused.py picks one per call):
// * register rows (layer_norm_*_reg): the row (and for the backward its gradient) is read from
//   global memory once into registers, K elements per thread in packs of VEC (common.cuh); the
//   mean, variance and output passes run over the registers and the result is written once.
//   One block per row, or one warp per row with several rows per block for short rows.
// * loop rows (layer_norm_forward, layer_norm_backward_input): one block per row, each pass
//   reading the row from global memory, for rows longer than the registers hold.

template <typename T>
__device__ void layer_norm_forward(const T* x, const T* w, const T* b, T* y, T* mean_out,
                                   T* rstd_out, int n, T eps) {
    __shared__ T scratch[EMBER_MAX_WARPS];
    const long long row = blockIdx.x;
    const T* xr = x + row * n;
    T* yr = y + row * n;
    T s = T(0);
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += xr[i];
    const T mean = block_sum(s, scratch) / T(n);
    T q = T(0);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const T d = xr[i] - mean;
        q += d * d;
    }
    const T rstd = T(1) / sqrt(block_sum(q, scratch) / T(n) + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        T v = (xr[i] - mean) * rstd;
        if (w) v *= w[i];
        if (b) v += b[i];
        yr[i] = v;
    }
    if (threadIdx.x == 0) {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
    }
}

template <typename T>
__device__ void layer_norm_backward_input(const T* g, const T* x, const T* mean, const T* rstd,
                                          const T* w, T* dx, int n) {
    __shared__ T scratch[EMBER_MAX_WARPS];
    const long long row = blockIdx.x;
    const T* gr = g + row * n;
    const T* xr = x + row * n;
    T* out = dx + row * n;
    const T mu = mean[row], rs = rstd[row];
    T s1 = T(0), s2 = T(0);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const T d = w ? gr[i] * w[i] : gr[i];
        s1 += d;
        s2 += d * (xr[i] - mu) * rs;
    }
    s1 = block_sum(s1, scratch) / T(n);
    s2 = block_sum(s2, scratch) / T(n);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const T d = w ? gr[i] * w[i] : gr[i];
        out[i] = rs * (d - s1 - (xr[i] - mu) * rs * s2);
    }
}

// grid (ceil(n / blockDim.x), chunks): partial[chunk, j] sums rows chunk, chunk + chunks, ...
template <typename T>
__device__ void layer_norm_param_partials(const T* g, const T* x, const T* mean, const T* rstd,
                                          T* dw_partial, T* db_partial, long long rows, int n) {
    const int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    T dw = T(0), db = T(0);
    for (long long r = blockIdx.y; r < rows; r += gridDim.y) {
        const T gv = g[r * n + j];
        dw += gv * (x[r * n + j] - mean[r]) * rstd[r];
        db += gv;
    }
    dw_partial[(long long)blockIdx.y * n + j] = dw;
    db_partial[(long long)blockIdx.y * n + j] = db;
}

template <typename T, int VEC, int K>
__device__ void layer_norm_forward_reg(const T* x, const T* w, const T* b, T* y, T* mean_out,
                                       T* rstd_out, long long rows, int n, T eps) {
    __shared__ T scratch[EMBER_MAX_WARPS];
    const long long row = group_row();
    if (row >= rows) return;  // a whole warp of a warp-per-row block: no barrier follows
    T v[K];
    load_row<T, VEC, K>(x + row * n, v, n, T(0));
    T s = T(0);  // the padding is 0: it adds nothing
#pragma unroll
    for (int k = 0; k < K; ++k) s += v[k];
    const T mean = row_sum(s, scratch) / T(n);
    T q = T(0);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const T d = v[k] - mean;
        if (pack_in_row(k / VEC, n / VEC)) q += d * d;
    }
    const T rstd = T(1) / sqrt(row_sum(q, scratch) / T(n) + eps);
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = (v[k] - mean) * rstd;
    if (w) {
        T wv[K];
        load_row<T, VEC, K>(w, wv, n, T(0));
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] *= wv[k];
    }
    if (b) {
        T bv[K];
        load_row<T, VEC, K>(b, bv, n, T(0));
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] += bv[k];
    }
    store_row<T, VEC, K>(y + row * n, v, n);
    if (threadIdx.x == 0) {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
    }
}

template <typename T, int VEC, int K>
__device__ void layer_norm_backward_input_reg(const T* g, const T* x, const T* mean,
                                              const T* rstd, const T* w, T* dx, long long rows,
                                              int n) {
    __shared__ T scratch[EMBER_MAX_WARPS];
    const long long row = group_row();
    if (row >= rows) return;
    const T mu = mean[row], rs = rstd[row];
    T d[K], xhat[K];  // dxhat = g * w and xhat = (x - mean) * rstd; 0 in the padding
    load_row<T, VEC, K>(g + row * n, d, n, T(0));
    load_row<T, VEC, K>(x + row * n, xhat, n, mu);
    if (w) {
        T wv[K];
        load_row<T, VEC, K>(w, wv, n, T(0));
#pragma unroll
        for (int k = 0; k < K; ++k) d[k] *= wv[k];
    }
    T s1 = T(0), s2 = T(0);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        xhat[k] = (xhat[k] - mu) * rs;
        s1 += d[k];
        s2 += d[k] * xhat[k];
    }
    s1 = row_sum(s1, scratch) / T(n);
    s2 = row_sum(s2, scratch) / T(n);
#pragma unroll
    for (int k = 0; k < K; ++k) d[k] = rs * (d[k] - s1 - xhat[k] * s2);
    store_row<T, VEC, K>(dx + row * n, d, n);
}

#define EMBER_LAYER_NORM(T, S)                                                                   \
    extern "C" __global__ void layer_norm_forward_##S(const T* x, const T* w, const T* b, T* y,  \
                                                      T* mean, T* rstd, int n, T eps) {          \
        layer_norm_forward<T>(x, w, b, y, mean, rstd, n, eps);                                   \
    }                                                                                            \
    extern "C" __global__ void layer_norm_backward_input_##S(                                    \
        const T* g, const T* x, const T* mean, const T* rstd, const T* w, T* dx, int n) {        \
        layer_norm_backward_input<T>(g, x, mean, rstd, w, dx, n);                                \
    }                                                                                            \
    extern "C" __global__ void layer_norm_param_partials_##S(                                    \
        const T* g, const T* x, const T* mean, const T* rstd, T* dw, T* db, long long rows,      \
        int n) {                                                                                 \
        layer_norm_param_partials<T>(g, x, mean, rstd, dw, db, rows, n);                         \
    }

EMBER_LAYER_NORM(float, f32)
EMBER_LAYER_NORM(double, f64)

// layer_norm_forward_reg_<dtype>_v<VEC>_k<K> and layer_norm_backward_input_reg_..., for the
// (VEC, K) pairs of EMBER_REG_KERNELS
#define EMBER_LAYER_NORM_REG(T, S, VEC, K)                                                       \
    extern "C" __global__ void __launch_bounds__(512)                                            \
        layer_norm_forward_reg_##S##_v##VEC##_k##K(const T* x, const T* w, const T* b, T* y,     \
                                                   T* mean, T* rstd, long long rows, int n,      \
                                                   T eps) {                                      \
        layer_norm_forward_reg<T, VEC, K>(x, w, b, y, mean, rstd, rows, n, eps);                 \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(512)                                            \
        layer_norm_backward_input_reg_##S##_v##VEC##_k##K(const T* g, const T* x, const T* mean, \
                                                          const T* rstd, const T* w, T* dx,      \
                                                          long long rows, int n) {               \
        layer_norm_backward_input_reg<T, VEC, K>(g, x, mean, rstd, w, dx, rows, n);              \
    }

EMBER_REG_KERNELS(EMBER_LAYER_NORM_REG)
