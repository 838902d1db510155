// Bandwidth instruments (device side): read-only, write-only and copy over 16-byte words with
// streaming hints (__ldcs/__stcs) and kUnroll independent accesses per thread before any wait.
// Napkin math: read 16 B per word, write 16 B, copy 32 B (16 read + 16 written); no flops.
#include <cuda_runtime.h>
#include <stdint.h>

#include "core/cuda_check.h"
#include "kernels/bwprobe.h"

namespace {
constexpr int kThreads = 256;
// Bytes in flight decide the rate (docs/floors.md: 264 x 256 threads, one load each, reached
// 2.45 TB/s of ~4.4 on an H200): 8 words per thread, every block the SMs hold.
constexpr int kUnroll = 8;
constexpr size_t kChunk = (size_t)kThreads * kUnroll; // words per block per pass

__device__ __forceinline__ unsigned fold(int4 v) {
    return (unsigned)v.x ^ (unsigned)v.y ^ (unsigned)v.z ^ (unsigned)v.w;
}

__device__ __forceinline__ int4 pattern(size_t j, unsigned seed) {
    unsigned lo = (unsigned)j, hi = (unsigned)(j >> 32);
    // .w is never zero: no word of the pattern is all zeros
    return make_int4((int)(lo ^ seed), (int)(lo * 2654435761u + hi), (int)~lo,
                     (int)(seed | 0x80000001u));
}

__global__ void __launch_bounds__(kThreads)
    bw_read(const int4 *__restrict__ src, size_t n, unsigned *__restrict__ sink) {
    unsigned acc = 0;
    for (size_t base = blockIdx.x * kChunk; base < n; base += (size_t)gridDim.x * kChunk) {
        const int4 *p = src + base + threadIdx.x;
        if (base + kChunk <= n) {
            int4 v[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                v[u] = __ldcs(p + u * kThreads);
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                acc ^= fold(v[u]);
        } else {
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                if (base + threadIdx.x + (size_t)u * kThreads < n)
                    acc ^= fold(__ldcs(p + u * kThreads));
        }
    }
    for (int o = 16; o > 0; o >>= 1)
        acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) sink[((size_t)blockIdx.x * kThreads + threadIdx.x) / 32] = acc;
}

__global__ void __launch_bounds__(kThreads)
    bw_write(int4 *__restrict__ dst, size_t n, unsigned seed) {
    for (size_t base = blockIdx.x * kChunk; base < n; base += (size_t)gridDim.x * kChunk) {
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            size_t j = base + threadIdx.x + (size_t)u * kThreads;
            if (j < n) __stcs(dst + j, pattern(j, seed));
        }
    }
}

__global__ void __launch_bounds__(kThreads)
    bw_copy(int4 *__restrict__ dst, const int4 *__restrict__ src, size_t n) {
    for (size_t base = blockIdx.x * kChunk; base < n; base += (size_t)gridDim.x * kChunk) {
        size_t i = base + threadIdx.x;
        if (base + kChunk <= n) {
            int4 v[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                v[u] = __ldcs(src + i + u * kThreads);
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                __stcs(dst + i + u * kThreads, v[u]);
        } else {
#pragma unroll
            for (int u = 0; u < kUnroll; u++)
                if (i + (size_t)u * kThreads < n)
                    __stcs(dst + i + u * kThreads, __ldcs(src + i + u * kThreads));
        }
    }
}

gr_status resident_grid(const void *kernel, int sms, int *grid, gr_error *err) {
    int per_sm = 0;
    GR_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0), err);
    *grid = (per_sm > 0 ? per_sm : 1) * sms;
    return GR_OK;
}

gr_status check_aligned(const void *p, const char *what, gr_error *err) {
    if (((uintptr_t)p & 15) == 0) return GR_OK;
    return gr_error_set(err, GR_ERR_INTERNAL, NULL, "bandwidth probe: %s is not 16-byte aligned",
                        what);
}
} // namespace

extern "C" gr_status gr_bwprobe_shape_get(gr_bwprobe_shape *out, gr_error *err) {
    int dev = 0, sms = 0;
    GR_CUDA(cudaGetDevice(&dev), err);
    GR_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), err);
    out->threads = kThreads;
    out->unroll = kUnroll;
    GR_TRY(resident_grid((const void *)bw_read, sms, &out->grid_read, err));
    GR_TRY(resident_grid((const void *)bw_write, sms, &out->grid_write, err));
    GR_TRY(resident_grid((const void *)bw_copy, sms, &out->grid_copy, err));
    out->sink_words = (size_t)out->grid_read * kThreads / 32;
    return GR_OK;
}

extern "C" gr_status gr_bwprobe_read(const gr_bwprobe_shape *sh, const void *src, size_t bytes,
                                     unsigned *sink, gr_stream_t stream, gr_error *err) {
    GR_TRY(check_aligned(src, "the source", err));
    bw_read<<<sh->grid_read, kThreads, 0, (cudaStream_t)stream>>>((const int4 *)src, bytes / 16,
                                                                  sink);
    return gr_launch_status("bw_read", NULL, err);
}

extern "C" gr_status gr_bwprobe_write(const gr_bwprobe_shape *sh, void *dst, size_t bytes,
                                      unsigned seed, gr_stream_t stream, gr_error *err) {
    GR_TRY(check_aligned(dst, "the destination", err));
    bw_write<<<sh->grid_write, kThreads, 0, (cudaStream_t)stream>>>((int4 *)dst, bytes / 16, seed);
    return gr_launch_status("bw_write", NULL, err);
}

extern "C" gr_status gr_bwprobe_copy(const gr_bwprobe_shape *sh, void *dst, const void *src,
                                     size_t bytes, gr_stream_t stream, gr_error *err) {
    GR_TRY(check_aligned(src, "the source", err));
    GR_TRY(check_aligned(dst, "the destination", err));
    bw_copy<<<sh->grid_copy, kThreads, 0, (cudaStream_t)stream>>>((int4 *)dst, (const int4 *)src,
                                                                  bytes / 16);
    return gr_launch_status("bw_copy", NULL, err);
}
