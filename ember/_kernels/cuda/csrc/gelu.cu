// aten::gelu and aten::gelu_backward on contiguous tensors, one element per thread (grid-stride):
// the exact form 0.5 * x * (1 + erf(x / sqrt(2))) and approximate="tanh", in one pass where the
// array-module body makes a dozen.

template <typename T>
__device__ __forceinline__ void gelu_at(const T* x, T* y, long long i, bool tanh_form) {
    const T v = x[i];
    if (tanh_form) {
        const T inner = T(0.7978845608028654) * (v + T(0.044715) * v * v * v);
        y[i] = T(0.5) * v * (T(1) + tanh(inner));
    } else {
        y[i] = T(0.5) * v * (T(1) + erf(v * T(0.7071067811865476)));
    }
}

template <typename T>
__device__ __forceinline__ void gelu_backward_at(const T* g, const T* x, T* gx, long long i,
                                                 bool tanh_form) {
    const T v = x[i];
    if (tanh_form) {
        const T v2 = v * v;
        const T t = tanh(T(0.7978845608028654) * (v + T(0.044715) * v2 * v));
        const T dinner = T(0.7978845608028654) * (T(1) + T(3 * 0.044715) * v2);
        gx[i] = g[i] * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t * t) * dinner);
    } else {
        const T cdf = T(0.5) * (T(1) + erf(v * T(0.7071067811865476)));
        const T pdf = exp(T(-0.5) * v * v) * T(0.3989422804014327);
        gx[i] = g[i] * (cdf + v * pdf);
    }
}

#define EMBER_GELU(T, S)                                                                         \
    extern "C" __global__ void gelu_forward_##S(const T* x, T* y, long long n, int tanh_form) {  \
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;              \
             i += (long long)gridDim.x * blockDim.x)                                             \
            gelu_at<T>(x, y, i, tanh_form != 0);                                                 \
    }                                                                                            \
    extern "C" __global__ void gelu_backward_##S(const T* g, const T* x, T* gx, long long n,     \
                                                 int tanh_form) {                                \
        for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;              \
             i += (long long)gridDim.x * blockDim.x)                                             \
            gelu_backward_at<T>(g, x, gx, i, tanh_form != 0);                                    \
    }

EMBER_GELU(float, f32)
EMBER_GELU(double, f64)
