// Helpers shared by ember's CUDA sources: block-wide reductions for one-block-per-row kernels.
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
