// The CUDA random kernels: Philox4x32-10 words of (seed, offset), turned into uniform, normal and
// integer numbers exactly as ember/_kernels/cuda/philox.py describes and computes them (the
// simulated device runs that file; benchmarks/gpu_random_check.py compares the two on a GPU).
//
// The file also compiles as C for the host (EMBER_HOST_EMULATION: a kernel's grid-stride loop
// visits every counter; the _rn operations round through a volatile store, so no contraction
// into a fused multiply-add changes a bit): CI compares that build with philox.py.
//
// Thread t of a grid-stride loop computes counter j = t, t + stride, ...: the four words
// 4j .. 4j+3 of the call's stream, i.e. elements 4j .. 4j+3 (float32 uniform), 2j, 2j+1
// (float64 uniform: two words each), 4j .. 4j+3 (float32 normal: pairs of words), 2j, 2j+1
// (float64 normal: one pair of 53-bit uniforms), 4j .. 4j+3 or 2j, 2j+1 (integers of one or two
// words). Outputs are n contiguous elements. The scaling is one multiply and one add, each
// rounded (the _rn intrinsics: no fused multiply-add), as NumPy computes it.

#ifdef EMBER_HOST_EMULATION
#include <math.h>
#define KERNEL static void
#define DEVICE static inline
#define UNROLL
#define FIRST_INDEX 0LL
#define INDEX_STRIDE 1LL
DEVICE unsigned __umulhi(unsigned a, unsigned b) {
    return (unsigned)(((unsigned long long)a * b) >> 32);
}
DEVICE float __fmul_rn(float a, float b) { volatile float r = a * b; return r; }
DEVICE float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
DEVICE double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
DEVICE double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
#else
#define KERNEL extern "C" __global__ void
#define DEVICE __device__ __forceinline__
#define UNROLL _Pragma("unroll")
#define FIRST_INDEX ((long long)blockIdx.x * blockDim.x + threadIdx.x)
#define INDEX_STRIDE ((long long)gridDim.x * blockDim.x)
#endif

DEVICE void philox_words(unsigned long long j, unsigned long long seed, unsigned long long offset,
                         unsigned w[4]) {
    w[0] = (unsigned)j;
    w[1] = (unsigned)(j >> 32);
    w[2] = (unsigned)offset;
    w[3] = (unsigned)(offset >> 32);
    unsigned k0 = (unsigned)seed, k1 = (unsigned)(seed >> 32);
UNROLL
    for (int r = 0; r < 10; ++r) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const unsigned hi0 = __umulhi(0xD2511F53u, w[0]), lo0 = 0xD2511F53u * w[0];
        const unsigned hi1 = __umulhi(0xCD9E8D57u, w[2]), lo1 = 0xCD9E8D57u * w[2];
        const unsigned n0 = hi1 ^ w[1] ^ k0, n2 = hi0 ^ w[3] ^ k1;
        w[0] = n0;
        w[1] = lo1;
        w[2] = n2;
        w[3] = lo0;
    }
}

DEVICE double unit32(unsigned w, double open_low) {
    return ((double)(w >> 8) + open_low) * 5.9604644775390625e-08;  // 2**-24
}

DEVICE double unit53(unsigned a, unsigned b, double open_low) {
    return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6) + open_low) *
           1.1102230246251565e-16;  // 2**-53
}

// A kernel captured in a CUDA graph reads its generator's (seed, offset) from the graph's two
// state words, which philox_set_state writes before each replay, and adds the offset it was
// captured with (its place among the graph's random ops); elsewhere state is NULL and (seed,
// offset) are the arguments.
#define PHILOX_STATE                                                                          \
    if (state) {                                                                              \
        seed = state[0];                                                                      \
        offset += state[1];                                                                   \
    }

KERNEL philox_set_state(unsigned long long *state, unsigned long long seed,
                        unsigned long long offset) {
    state[0] = seed;
    state[1] = offset;
}

#define PHILOX_LOOP(PER_COUNTER)                                                              \
    for (long long j = FIRST_INDEX; j * PER_COUNTER < n; j += INDEX_STRIDE)

// Element j * PER + k (k < PER) of counter j's words w is VALUE, for kernels whose elements each
// take their own words.
#define PHILOX_ELEMENTS(PER, VALUE)                                                           \
    PHILOX_LOOP(PER) {                                                                        \
        unsigned w[4];                                                                        \
        philox_words(j, seed, offset, w);                                                     \
        UNROLL                                                                                \
        for (int k = 0; k < PER; ++k) {                                                       \
            const long long i = j * PER + k;                                                  \
            if (i < n)                                                                        \
                out[i] = VALUE;                                                               \
        }                                                                                     \
    }

KERNEL philox_uniform_f32(float *out, long long n, unsigned long long seed,
                          unsigned long long offset, const unsigned long long *state, float low,
                          float range) {
    PHILOX_STATE;
    PHILOX_ELEMENTS(4, __fadd_rn(__fmul_rn((float)unit32(w[k], 0.0), range), low))
}

KERNEL philox_uniform_f64(double *out, long long n, unsigned long long seed,
                          unsigned long long offset, const unsigned long long *state, double low,
                          double range) {
    PHILOX_STATE;
    PHILOX_ELEMENTS(2, __dadd_rn(__dmul_rn(unit53(w[2 * k], w[2 * k + 1], 0.0), range), low))
}

KERNEL philox_normal_f32(float *out, long long n, unsigned long long seed,
                         unsigned long long offset, const unsigned long long *state, float mean,
                         float std) {
    PHILOX_STATE;
    PHILOX_LOOP(4) {
        unsigned w[4];
        philox_words(j, seed, offset, w);
UNROLL
        for (int p = 0; p < 2; ++p) {
            const double r = sqrt(-2.0 * log(unit32(w[2 * p], 1.0)));
            const double t = 6.283185307179586 * unit32(w[2 * p + 1], 0.0);
            const float z[2] = {(float)(r * cos(t)), (float)(r * sin(t))};
UNROLL
            for (int k = 0; k < 2; ++k) {
                const long long i = j * 4 + 2 * p + k;
                if (i < n)
                    out[i] = __fadd_rn(__fmul_rn(z[k], std), mean);
            }
        }
    }
}

KERNEL philox_normal_f64(double *out, long long n, unsigned long long seed,
                         unsigned long long offset, const unsigned long long *state, double mean,
                         double std) {
    PHILOX_STATE;
    PHILOX_LOOP(2) {
        unsigned w[4];
        philox_words(j, seed, offset, w);
        const double r = sqrt(-2.0 * log(unit53(w[0], w[1], 1.0)));
        const double t = 6.283185307179586 * unit53(w[2], w[3], 0.0);
        const double z[2] = {r * cos(t), r * sin(t)};
UNROLL
        for (int k = 0; k < 2; ++k) {
            const long long i = j * 2 + k;
            if (i < n)
                out[i] = __dadd_rn(__dmul_rn(z[k], std), mean);
        }
    }
}

// low + (a word, or two as a * 2**32 + b) mod count; count == 0 stands for 2**64 (no modulo).
// The sum wraps as int64 arithmetic.
DEVICE unsigned long long wide_word(const unsigned w[4], int k, unsigned long long count) {
    const unsigned long long v = ((unsigned long long)w[2 * k] << 32) | w[2 * k + 1];
    return count ? v % count : v;
}

KERNEL philox_integers(long long *out, long long n, unsigned long long seed,
                       unsigned long long offset, const unsigned long long *state, long long low,
                       unsigned long long count, int wide) {
    PHILOX_STATE;
    if (!wide) {
        PHILOX_ELEMENTS(4, (long long)((unsigned long long)low +
                                       (unsigned long long)w[k] % count))
    } else {
        PHILOX_ELEMENTS(2, (long long)((unsigned long long)low + wide_word(w, k, count)))
    }
}
