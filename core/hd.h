/* Functions shared by host code (C, tests) and device code (CUDA): layouts and index maps that a
 * kernel and its host-side check or test must agree on. */
#ifndef GR_CORE_HD_H
#define GR_CORE_HD_H

#ifdef __CUDACC__
#define GR_HD_INLINE __host__ __device__ static inline
#else
#define GR_HD_INLINE static inline
#endif

#endif
