/* Counter-based random numbers for buffer inits: element i of a buffer is a pure function of
 * (seed, i), so the device fills in parallel and the host can reproduce any element. Shared by
 * C (host) and CUDA (device) code. */
#ifndef GR_RNG_H
#define GR_RNG_H

#include <stdint.h>

#ifdef __CUDACC__
#define GR_HD __host__ __device__ __forceinline__
#else
#define GR_HD static inline
#endif

GR_HD uint64_t gr_rng_mix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Uniform in (0, 1), 24 random bits: exactly representable in float. */
GR_HD float gr_rng_uniform(uint64_t seed, uint64_t i, uint64_t stream) {
    uint64_t h = gr_rng_mix(seed ^ gr_rng_mix(i * 2u + stream));
    return ((float)(h >> 40) + 0.5f) * (1.0f / 16777216.0f);
}

#endif
