// softmax and log_softmax over the last dimension of a contiguous [rows, n] tensor, forward and
// backward, as aten::_softmax, _log_softmax, _softmax_backward_data and
// _log_softmax_backward_data compute them. The results are exactly the reference formulas, NaN
// and inf included: a row holding a NaN, an +inf, or only -inf is NaN.
//
// Two layouts (fused.py picks one per call):
// * register rows (softmax_*_reg): the row is read from global memory once into registers, K
//   elements per thread in packs of VEC (common.cuh); the passes (the max, the sum of
//   exponentials, the write) then run over the registers, and the result is written once. One
//   block per row, or one warp per row with several rows per block for short rows.
// * loop rows (softmax_forward, softmax_backward): one block per row, three passes over the row
//   in global memory (the second and third reads come from cache), for rows longer than the
//   registers hold.

template <typename T>
__device__ void softmax_forward(const T* x, T* y, int n, bool log_softmax) {
    __shared__ T scratch[EMBER_MAX_WARPS];
    const long long row = blockIdx.x;
    const T* xr = x + row * n;
    T* yr = y + row * n;
    T m = neg_inf<T>();
    for (int i = threadIdx.x; i < n; i += blockDim.x) m = nan_max(m, xr[i]);
    m = block_max(m, scratch);
    T s = T(0);
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += exp(xr[i] - m);
    s = block_sum(s, scratch);
    if (log_softmax) {
        const T shift = m + log(s);
        for (int i = threadIdx.x; i < n; i += blockDim.x) yr[i] = xr[i] - shift;
    } else {
        for (int i = threadIdx.x; i < n; i += blockDim.x) yr[i] = exp(xr[i] - m) / s;
    }
}

// softmax: gx = y * (g - sum(g * y)); log_softmax: gx = g - exp(y) * sum(g)
template <typename T>
__device__ void softmax_backward(const T* g, const T* y, T* gx, int n, bool log_softmax) {
    __shared__ T scratch[EMBER_MAX_WARPS];
    const long long row = blockIdx.x;
    const T* gr = g + row * n;
    const T* yr = y + row * n;
    T* out = gx + row * n;
    T s = T(0);
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += log_softmax ? gr[i] : gr[i] * yr[i];
    s = block_sum(s, scratch);
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        out[i] = log_softmax ? gr[i] - exp(yr[i]) * s : yr[i] * (gr[i] - s);
}

template <typename T, int VEC, int K>
__device__ void softmax_forward_reg(const T* x, T* y, long long rows, int n, bool log_softmax) {
    __shared__ T scratch[EMBER_MAX_WARPS];
    const long long row = group_row();
    if (row >= rows) return;  // a whole warp of a warp-per-row block: no barrier follows
    T v[K];
    load_row<T, VEC, K>(x + row * n, v, n, neg_inf<T>());
    T m = neg_inf<T>();
#pragma unroll
    for (int k = 0; k < K; ++k) m = nan_max(m, v[k]);
    m = row_max(m, scratch);
    // the padding is left out of the sum explicitly: exp(-inf - m) is NaN when m is -inf.
    // softmax keeps exp(x - m) in the registers (computed once); log_softmax keeps x.
    T s = T(0);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const T e = exp(v[k] - m);
        if (!log_softmax) v[k] = e;
        if (pack_in_row(k / VEC, n / VEC)) s += e;
    }
    s = row_sum(s, scratch);
    if (log_softmax) {
        const T shift = m + log(s);
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = v[k] - shift;
    } else {
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = v[k] / s;
    }
    store_row<T, VEC, K>(y + row * n, v, n);
}

template <typename T, int VEC, int K>
__device__ void softmax_backward_reg(const T* g, const T* y, T* gx, long long rows, int n,
                                     bool log_softmax) {
    __shared__ T scratch[EMBER_MAX_WARPS];
    const long long row = group_row();
    if (row >= rows) return;
    T gv[K], yv[K];
    load_row<T, VEC, K>(g + row * n, gv, n, T(0));
    load_row<T, VEC, K>(y + row * n, yv, n, T(0));
    T s = T(0);  // the padding is 0 in both: it adds nothing
#pragma unroll
    for (int k = 0; k < K; ++k) s += log_softmax ? gv[k] : gv[k] * yv[k];
    s = row_sum(s, scratch);
#pragma unroll
    for (int k = 0; k < K; ++k)
        gv[k] = log_softmax ? gv[k] - exp(yv[k]) * s : yv[k] * (gv[k] - s);
    store_row<T, VEC, K>(gx + row * n, gv, n);
}

extern "C" __global__ void softmax_forward_f32(const float* x, float* y, int n, int log_softmax) {
    softmax_forward<float>(x, y, n, log_softmax != 0);
}
extern "C" __global__ void softmax_forward_f64(const double* x, double* y, int n,
                                               int log_softmax) {
    softmax_forward<double>(x, y, n, log_softmax != 0);
}
extern "C" __global__ void softmax_backward_f32(const float* g, const float* y, float* gx, int n,
                                                int log_softmax) {
    softmax_backward<float>(g, y, gx, n, log_softmax != 0);
}
extern "C" __global__ void softmax_backward_f64(const double* g, const double* y, double* gx,
                                                int n, int log_softmax) {
    softmax_backward<double>(g, y, gx, n, log_softmax != 0);
}

// softmax_forward_reg_<dtype>_v<VEC>_k<K> and softmax_backward_reg_..., for the (VEC, K) pairs
// fused.py launches (its _REG_K and _VEC tables)
#define EMBER_SOFTMAX_REG(T, S, VEC, K)                                                          \
    extern "C" __global__ void __launch_bounds__(512) softmax_forward_reg_##S##_v##VEC##_k##K(  \
        const T* x, T* y, long long rows, int n, int log_softmax) {                              \
        softmax_forward_reg<T, VEC, K>(x, y, rows, n, log_softmax != 0);                         \
    }                                                                                            \
    extern "C" __global__ void __launch_bounds__(512) softmax_backward_reg_##S##_v##VEC##_k##K( \
        const T* g, const T* y, T* gx, long long rows, int n, int log_softmax) {                 \
        softmax_backward_reg<T, VEC, K>(g, y, gx, rows, n, log_softmax != 0);                    \
    }

EMBER_REG_KERNELS(EMBER_SOFTMAX_REG)
