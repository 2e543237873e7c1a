// softmax and log_softmax over the last dimension of a contiguous [rows, n] tensor, forward and
// backward, as aten::_softmax, _log_softmax, _softmax_backward_data and
// _log_softmax_backward_data compute them: one block per row, three passes over the row (the
// max, the sum of exponentials, the write; the second and third reads come from cache). The
// results are exactly the reference formulas, NaN and inf included: a row holding a NaN, an
// +inf, or only -inf is NaN.

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
