// aten::add, sub (both with alpha), mul and div on contiguous operands of one dtype, as
// pointwise.py's fast path launches them: out[i] = a[i] op b[i], or with one operand a scalar
// (a wrapped number or 0-dim tensor, passed by value, or a 1-element CUDA tensor, read once).
//
// Layout: a, b and out are n contiguous elements, each 16-byte aligned (the caller checks), read
// and written as 16-byte packs (float4, double2, 8 halves, ...) by a grid-stride loop over the
// n / V whole packs; the fewer than V elements after the last pack are done one each by the
// first threads. One pass: every element is read once and written once.
// Arithmetic runs in PyTorch's opmath type: float for float16 and bfloat16 (rounded once, to
// nearest even, on the store), the dtype itself otherwise; integers wrap around (computed in
// unsigned arithmetic, where overflow is defined). add/sub compute a + alpha * b, a - alpha * b.

// float16 and bfloat16 as their bits, converted by hand: the source needs no cuda_fp16.h
struct __align__(2) f16 { unsigned short bits; };
struct __align__(2) bf16 { unsigned short bits; };

template <typename T> struct Opmath {  // float32, float64: computed as stored
    typedef T type;
    static __device__ __forceinline__ T load(T v) { return v; }
    static __device__ __forceinline__ T store(T v) { return v; }
};
template <> struct Opmath<f16> {
    typedef float type;
    static __device__ __forceinline__ float load(f16 v) {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
        return f;
    }
    static __device__ __forceinline__ f16 store(float f) {
        f16 v;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(v.bits) : "f"(f));
        return v;
    }
};
template <> struct Opmath<bf16> {
    typedef float type;
    static __device__ __forceinline__ float load(bf16 v) {
        return __uint_as_float((unsigned)v.bits << 16);
    }
    // round to nearest even on the upper 16 bits (c10::round_to_nearest_even); NaN stays quiet
    static __device__ __forceinline__ bf16 store(float f) {
        const unsigned u = __float_as_uint(f);
        bf16 v;
        v.bits = (u & 0x7fffffffu) > 0x7f800000u
                     ? (unsigned short)((u >> 16) | 0x40u)
                     : (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        return v;
    }
};
template <typename I> struct IntOpmath {  // integers: computed as stored (Apply wraps them)
    typedef I type;
    static __device__ __forceinline__ I load(I v) { return v; }
    static __device__ __forceinline__ I store(I v) { return v; }
};
template <> struct Opmath<int> : IntOpmath<int> {};
template <> struct Opmath<long long> : IntOpmath<long long> {};

enum BinaryOp { ADD, SUB, MUL, DIV };

template <int OP, typename A>
__device__ __forceinline__ A apply_float(A a, A b, A alpha) {
    switch (OP) {
        case ADD: return a + alpha * b;
        case SUB: return a - alpha * b;
        case MUL: return a * b;
        default: return a / b;  // DIV
    }
}

template <int OP, typename A, typename U>
__device__ __forceinline__ A apply_int(A a, A b, A alpha) {
    switch (OP) {
        case ADD: return (A)((U)a + (U)alpha * (U)b);
        case SUB: return (A)((U)a - (U)alpha * (U)b);
        default: return (A)((U)a * (U)b);  // MUL: integer div promotes to float
    }
}

// the op in opmath type A: floating, or wrapping integers
template <int OP, typename T>
struct Apply {
    typedef typename Opmath<T>::type A;
    static __device__ __forceinline__ A run(A a, A b, A alpha) {
        return apply_float<OP, A>(a, b, alpha);
    }
};
template <int OP>
struct Apply<OP, int> {
    static __device__ __forceinline__ int run(int a, int b, int alpha) {
        return apply_int<OP, int, unsigned>(a, b, alpha);
    }
};
template <int OP>
struct Apply<OP, long long> {
    static __device__ __forceinline__ long long run(long long a, long long b, long long alpha) {
        return apply_int<OP, long long, unsigned long long>(a, b, alpha);
    }
};

template <typename T>
struct alignas(16) Pack16 {
    T v[16 / sizeof(T)];
};

// scalar_pos: 0 both operands are arrays of n elements; 1 `a` is a scalar, 2 `b` is: the
// element its pointer points to, or `scalar` when the pointer is null.
template <int OP, typename T>
__device__ void binary_contiguous(const T* a, const T* b, T* out, long long n,
                                  typename Opmath<T>::type alpha, typename Opmath<T>::type scalar,
                                  int scalar_pos) {
    typedef Opmath<T> M;
    typedef typename M::type A;
    constexpr int V = 16 / sizeof(T);
    const A sa = scalar_pos != 1 ? A(0) : a ? M::load(a[0]) : scalar;
    const A sb = scalar_pos != 2 ? A(0) : b ? M::load(b[0]) : scalar;
    const long long packs = n / V;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long p = first; p < packs; p += stride) {
        Pack16<T> pa, pb, po;
        if (scalar_pos != 1) pa = reinterpret_cast<const Pack16<T>*>(a)[p];
        if (scalar_pos != 2) pb = reinterpret_cast<const Pack16<T>*>(b)[p];
#pragma unroll
        for (int i = 0; i < V; ++i)
            po.v[i] = M::store(Apply<OP, T>::run(scalar_pos == 1 ? sa : M::load(pa.v[i]),
                                                 scalar_pos == 2 ? sb : M::load(pb.v[i]), alpha));
        reinterpret_cast<Pack16<T>*>(out)[p] = po;
    }
    const long long i = packs * V + first;  // the tail
    if (i < n)
        out[i] = M::store(Apply<OP, T>::run(scalar_pos == 1 ? sa : M::load(a[i]),
                                            scalar_pos == 2 ? sb : M::load(b[i]), alpha));
}

// binary_<op>_<dtype>; div only for the floating dtypes (it promotes integers to float)
#define EMBER_BINARY(OP, NAME, T, S)                                                             \
    extern "C" __global__ void binary_##NAME##_##S(const T* a, const T* b, T* out, long long n,  \
                                                   Opmath<T>::type alpha,                        \
                                                   Opmath<T>::type scalar, int scalar_pos) {     \
        binary_contiguous<OP, T>(a, b, out, n, alpha, scalar, scalar_pos);                       \
    }
#define EMBER_BINARY_INT(T, S)                                                                   \
    EMBER_BINARY(ADD, add, T, S) EMBER_BINARY(SUB, sub, T, S) EMBER_BINARY(MUL, mul, T, S)
#define EMBER_BINARY_FLOAT(T, S) EMBER_BINARY_INT(T, S) EMBER_BINARY(DIV, div, T, S)

EMBER_BINARY_FLOAT(float, f32)
EMBER_BINARY_FLOAT(double, f64)
EMBER_BINARY_FLOAT(f16, f16)
EMBER_BINARY_FLOAT(bf16, bf16)
EMBER_BINARY_INT(int, i32)
EMBER_BINARY_INT(long long, i64)
