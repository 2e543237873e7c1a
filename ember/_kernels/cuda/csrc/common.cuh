// Helpers shared by ember's CUDA sources: block-wide reductions for one-block-per-row kernels,
// and the register-row layout (loads, stores, row reductions) of softmax.cu and layer_norm.cu.
// Every source of this folder is compiled for sm_90 in CI with NVRTC (tests/test_cuda_sources.py)
// and at run time by CuPy (ember/_kernels/cuda/fused.py), which prepends this file.

#define EMBER_MAX_WARPS 32

template <typename T> __device__ __forceinline__ T neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return __int_as_float(0xff800000); }
template <> __device__ __forceinline__ double neg_inf<double>() {
    return __longlong_as_double(0xfff0000000000000LL);
}

template <typename T>
__device__ __forceinline__ T nan_max(T a, T b) {
    // NaN wins, as PyTorch's max: a softmax row with a NaN is all NaN
    return (a != a || a > b) ? a : b;
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename T>
__device__ __forceinline__ T warp_max(T v) {
    for (int o = 16; o > 0; o >>= 1) v = nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// The sum of v over the block, returned to every thread. blockDim.x is a multiple of 32;
// `scratch` holds EMBER_MAX_WARPS values and is free again when this returns.
template <typename T>
__device__ T block_sum(T v, T* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : T(0);
    v = warp_sum(v);
    __syncthreads();
    return v;
}

template <typename T>
__device__ T block_max(T v, T* scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : neg_inf<T>();
    v = warp_max(v);
    __syncthreads();
    return v;
}

// ---- Register-resident rows (softmax.cu, layer_norm.cu)
// A row is read from global memory once into registers: thread t of the row's group holds K
// elements, as K / VEC packs of VEC consecutive elements; pack j of thread t is pack
// j * blockDim.x + t of the row, so each load instruction of a warp covers consecutive memory.
// VEC * sizeof(T) is 16 bytes (one ld.global.v4) when the row length is a multiple of VEC and
// every row pointer is 16-byte aligned (checked by the caller), else VEC is 1.
// A row's group is the whole block (blockDim.y == 1) or, for short rows, one warp
// (blockDim.x == 32, blockDim.y rows per block): the row reductions below serve both.

template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
    T v[VEC];
};

// Whether pack j of this thread lies inside a row of `packs` packs.
__device__ __forceinline__ bool pack_in_row(int j, int packs) {
    return j * (int)blockDim.x + (int)threadIdx.x < packs;
}

// v[0..K) = this thread's elements of row r (n elements); `pad` where the row has ended.
template <typename T, int VEC, int K>
__device__ __forceinline__ void load_row(const T* r, T (&v)[K], int n, T pad) {
    const Pack<T, VEC>* p = reinterpret_cast<const Pack<T, VEC>*>(r);
#pragma unroll
    for (int j = 0; j < K / VEC; ++j) {
        if (pack_in_row(j, n / VEC)) {
            const Pack<T, VEC> q = p[j * blockDim.x + threadIdx.x];
#pragma unroll
            for (int i = 0; i < VEC; ++i) v[j * VEC + i] = q.v[i];
        } else {
#pragma unroll
            for (int i = 0; i < VEC; ++i) v[j * VEC + i] = pad;
        }
    }
}

template <typename T, int VEC, int K>
__device__ __forceinline__ void store_row(T* r, const T (&v)[K], int n) {
    Pack<T, VEC>* p = reinterpret_cast<Pack<T, VEC>*>(r);
#pragma unroll
    for (int j = 0; j < K / VEC; ++j) {
        if (pack_in_row(j, n / VEC)) {
            Pack<T, VEC> q;
#pragma unroll
            for (int i = 0; i < VEC; ++i) q.v[i] = v[j * VEC + i];
            p[j * blockDim.x + threadIdx.x] = q;
        }
    }
}

// The row of this thread: one per block, or one per warp (threadIdx.y) in warp-per-row blocks.
__device__ __forceinline__ long long group_row() {
    return (long long)blockIdx.x * blockDim.y + threadIdx.y;
}

// Reductions over a row's group: a warp shuffle tree when the group is one warp (no shared
// memory, no __syncthreads, so the warps of a block proceed independently), else block_sum.
template <typename T>
__device__ __forceinline__ T row_sum(T v, T* scratch) {
    return blockDim.x == 32 ? warp_sum(v) : block_sum(v, scratch);
}

template <typename T>
__device__ __forceinline__ T row_max(T v, T* scratch) {
    return blockDim.x == 32 ? warp_max(v) : block_max(v, scratch);
}

// Applies macro M(T, suffix, VEC, K) to every register-row configuration fused.py launches:
// 16-byte packs (float4, double2) and single elements, K from 4 to 32 float32 values (16 to
// 128 bytes) a thread; fused.py's _VEC and _REG_K tables list the same.
#define EMBER_REG_KERNELS(M)                                                                     \
    M(float, f32, 4, 4) M(float, f32, 4, 8) M(float, f32, 4, 16) M(float, f32, 4, 32)            \
    M(float, f32, 1, 4) M(float, f32, 1, 8) M(float, f32, 1, 16) M(float, f32, 1, 32)            \
    M(double, f64, 2, 2) M(double, f64, 2, 4) M(double, f64, 2, 8) M(double, f64, 2, 16)         \
    M(double, f64, 1, 2) M(double, f64, 1, 4) M(double, f64, 1, 8) M(double, f64, 1, 16)
