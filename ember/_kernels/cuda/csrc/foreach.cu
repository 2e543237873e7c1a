// The multi-tensor ("foreach") ops the optimizers and gradient clipping call, one launch for a
// whole list of tensors, as PyTorch's multi_tensor_apply: aten::_foreach_add_, _mul_, _div_,
// _lerp_, _addcmul_, _addcdiv_, _maximum_, _clamp_min_/_clamp_max_, _foreach_sqrt and the sum of
// squares behind _foreach_norm (ord 2).
//
// Layout: the host passes a table in device memory with one Row per tensor of the list (the
// addresses of self and of up to two other operands and the result, the element count, and that
// tensor's scalar); every tensor is contiguous and of the kernel's dtype (the caller checks).
// blockIdx.y picks the row, blockIdx.x a chunk of `chunk` elements of it (blocks past the end of
// a short tensor return at once), and the block's threads stride through the chunk.
//
// Arithmetic is the CPU foreach kernels' (cpu/foreach.py), step by step in the dtype: products
// and sums use the _rn intrinsics, so no multiply-add is contracted into an FMA that NumPy's
// separate passes would round twice.

struct Row {
    unsigned long long self, other1, other2, out;
    long long n;
    double scalar;
};

enum ForeachOp {
    ADD_SCALAR,     // self += s
    ADD_LIST,       // self += other1 * alpha
    MUL_SCALAR,     // self *= s
    MUL_DEVICE,     // self *= *other1 (a 0-dim tensor on the device: read there, no sync)
    MUL_LIST,       // self *= other1
    DIV_SCALAR,     // self /= s (the row's scalar)
    LERP,           // self = lerp(self, other1, alpha), PyTorch's two-sided formula
    ADDCMUL,        // self += (other1 * other2) * s
    ADDCDIV,        // self += (other1 / other2) * s
    MAXIMUM,        // self = maximum(self, other1), NaN propagating
    CLAMP_MIN,      // self = maximum(self, s)
    CLAMP_MAX,      // self = minimum(self, s)
    SQRT,           // out = sqrt(self)
};

__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float sqrt_rn(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double sqrt_rn(double a) { return __dsqrt_rn(a); }

// NumPy's maximum/minimum: a NaN in either operand is the result
template <typename T>
__device__ __forceinline__ T nan_maximum(T a, T b) { return (a != a) ? a : (b != b) ? b : (a > b ? a : b); }
template <typename T>
__device__ __forceinline__ T nan_minimum(T a, T b) { return (a != a) ? a : (b != b) ? b : (a < b ? a : b); }

template <typename T>
__device__ void foreach_apply(const Row* rows, int op, double alpha, long long chunk) {
    const Row r = rows[blockIdx.y];
    const long long begin = (long long)blockIdx.x * chunk;
    if (begin >= r.n) return;
    const long long end = begin + chunk < r.n ? begin + chunk : r.n;
    T* self = (T*)r.self;
    const T* x = (const T*)r.other1;
    const T* y = (const T*)r.other2;
    const T s = (T)r.scalar, a = (T)alpha;
    const T device_scalar = op == MUL_DEVICE ? x[0] : T(0);
    const bool near_start = fabs(alpha) < 0.5;  // lerp's weight
    const T one_minus = sub_rn(T(1), a);
    for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) {
        const T v = self[i];
        switch (op) {
            case ADD_SCALAR: self[i] = add_rn(v, s); break;
            case ADD_LIST: self[i] = fma(x[i], a, v); break;  // as ATen's a + alpha * b
            case MUL_SCALAR: self[i] = mul_rn(v, s); break;
            case MUL_DEVICE: self[i] = mul_rn(v, device_scalar); break;
            case MUL_LIST: self[i] = mul_rn(v, x[i]); break;
            case DIV_SCALAR: self[i] = div_rn(v, s); break;
            case LERP: {
                const T diff = sub_rn(x[i], v);
                self[i] = near_start ? add_rn(v, mul_rn(diff, a))
                                     : sub_rn(x[i], mul_rn(diff, one_minus));
                break;
            }
            case ADDCMUL: self[i] = add_rn(v, mul_rn(mul_rn(x[i], y[i]), s)); break;
            case ADDCDIV: self[i] = add_rn(v, mul_rn(div_rn(x[i], y[i]), s)); break;
            case MAXIMUM: self[i] = nan_maximum(v, x[i]); break;
            case CLAMP_MIN: self[i] = nan_maximum(v, s); break;
            case CLAMP_MAX: self[i] = nan_minimum(v, s); break;
            case SQRT: ((T*)r.out)[i] = sqrt_rn(v); break;
        }
    }
}

// _foreach_norm, ord 2, stage 1: the sum of squares of each chunk, to partial[first + chunk]
// where `first` (the row's scalar) is the row's first slot; stage 2 adds a row's slots in order
// (a fixed order: the same result every run) and takes the square root.
template <typename T>
__device__ void foreach_sumsq_partials(const Row* rows, T* partial, long long chunk) {
    __shared__ T scratch[EMBER_MAX_WARPS];
    const Row r = rows[blockIdx.y];
    const long long begin = (long long)blockIdx.x * chunk;
    if (begin >= r.n) return;  // the whole block leaves: no thread waits at a barrier
    const long long end = begin + chunk < r.n ? begin + chunk : r.n;
    const T* self = (const T*)r.self;
    T acc = T(0);
    for (long long i = begin + threadIdx.x; i < end; i += blockDim.x) acc += self[i] * self[i];
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) partial[(long long)r.scalar + blockIdx.x] = acc;
}

template <typename T>
__device__ void foreach_norm_finish(const Row* rows, const T* partial, long long chunk) {
    __shared__ T scratch[EMBER_MAX_WARPS];
    const Row r = rows[blockIdx.x];
    const long long chunks = (r.n + chunk - 1) / chunk;
    T acc = T(0);
    for (long long c = threadIdx.x; c < chunks; c += blockDim.x) acc += partial[(long long)r.scalar + c];
    acc = block_sum(acc, scratch);
    if (threadIdx.x == 0) *(T*)r.out = sqrt_rn(acc);
}

#define EMBER_FOREACH(T, S)                                                                      \
    extern "C" __global__ void foreach_apply_##S(const Row* rows, int op, double alpha,          \
                                                 long long chunk) {                              \
        foreach_apply<T>(rows, op, alpha, chunk);                                                \
    }                                                                                            \
    extern "C" __global__ void foreach_sumsq_partials_##S(const Row* rows, T* partial,           \
                                                          long long chunk) {                     \
        foreach_sumsq_partials<T>(rows, partial, chunk);                                         \
    }                                                                                            \
    extern "C" __global__ void foreach_norm_finish_##S(const Row* rows, const T* partial,        \
                                                       long long chunk) {                        \
        foreach_norm_finish<T>(rows, partial, chunk);                                            \
    }

EMBER_FOREACH(float, f32)
EMBER_FOREACH(double, f64)
