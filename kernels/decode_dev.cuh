// Device helpers of the fused decode kernels (decode_gemv.cu): element
// conversions, 16-byte weight loads, the 4-row pipeline step (issue / consume), the LoRA-B rows
// and the warp reduce-scatter. Everything is in an anonymous namespace: each kernel file gets its
// own inline copies. Design: docs/decode_step.md.
#ifndef GR_KERNELS_DECODE_DEV_CUH
#define GR_KERNELS_DECODE_DEV_CUH
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "kernels/decode.h"

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRows = 4; // output rows per task (gate_up: 2 gate + 2 up rows)
constexpr unsigned kFull = 0xffffffffu;

// Pipeline depth P: steps (kRows 16-byte loads each) in flight per lane. A block of 256 threads
// keeps 256 x P x 64 bytes in flight; HBM needs ~40 KB per SM (4.3 TB/s x ~1.2 us / 132 SMs).
// BT <= 4: 2 blocks per SM, so at most 128 registers per thread; P = 4 (128 KB per SM) fits
// next to the 4 x BT accumulators and the unpacked chunk at BT = 1 and 2, P = 3 or 2 (96 or
// 64 KB) at BT = 4 and for down at BT = 2 in 2-byte types (P = 4 spilled there). BT = 8: 32
// accumulators and 8-float activation chunks do not fit 128 registers next to any useful P,
// so one block per SM with up to 255 registers and P = 4 (64 KB per SM). -Xptxas -v: no
// instance spills. GR_DEC_BLOCKS_PER_SM (decode.h) gives the check the same block count.
template <typename T, int BT, bool DOWN> constexpr int depth_of() {
    return BT == 1 || BT == 8 ? 4
           : BT == 2          ? (DOWN && sizeof(T) == 2 ? 3 : 4)
                              : (sizeof(T) == 4 ? 3 : 2);
}

template <typename T> __device__ __forceinline__ float to_f(T v);
template <> __device__ __forceinline__ float to_f<float>(float v) {
    return v;
}
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
template <> __device__ __forceinline__ float to_f<__half>(__half v) {
    return __half2float(v);
}

template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) {
    return v;
}
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ __half from_f<__half>(float v) {
    return __float2half_rn(v);
}

// One element that another block of the grid may have written, read through L2 (ld.global.cg).
// CUDA's own __ldcg for __nv_bfloat16 and __half is a non-volatile asm with no memory clobber,
// which the compiler may merge with an earlier load of the same address: a persistent step kernel
// (decode_step_stream, since removed) read layer 0's x again in its last layer's residual, in
// 2-byte dtypes only (runs 32-34); the unsigned-short overload is volatile.
template <typename T> __device__ __forceinline__ T ldcg_elem(const T *p) {
    if constexpr (sizeof(T) == 2) {
        const unsigned short u = __ldcg(reinterpret_cast<const unsigned short *>(p));
        T v;
        memcpy(&v, &u, sizeof(v));
        return v;
    } else {
        return __ldcg(p);
    }
}

// 16 bytes -> 16 / sizeof(T) floats.
template <typename T> __device__ __forceinline__ void unpack16(const uint4 &v, float *f);
template <> __device__ __forceinline__ void unpack16<float>(const uint4 &v, float *f) {
    f[0] = __uint_as_float(v.x);
    f[1] = __uint_as_float(v.y);
    f[2] = __uint_as_float(v.z);
    f[3] = __uint_as_float(v.w);
}
// bf16 is the top half of an fp32: element 2i is the low half-word of word i (little endian).
template <> __device__ __forceinline__ void unpack16<__nv_bfloat16>(const uint4 &v, float *f) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}
__device__ __forceinline__ float2 half2_bits_to_float2(uint32_t w) {
    return __half22float2(__halves2half2(__ushort_as_half((unsigned short)(w & 0xffffu)),
                                         __ushort_as_half((unsigned short)(w >> 16))));
}
template <> __device__ __forceinline__ void unpack16<__half>(const uint4 &v, float *f) {
    const float2 a = half2_bits_to_float2(v.x), b = half2_bits_to_float2(v.y),
                 c = half2_bits_to_float2(v.z), d = half2_bits_to_float2(v.w);
    f[0] = a.x, f[1] = a.y, f[2] = b.x, f[3] = b.y, f[4] = c.x, f[5] = c.y, f[6] = d.x, f[7] = d.y;
}

// Four consecutive elements (8 bytes for 2-byte types, 16 for fp32; p 8- or 16-byte aligned).
template <typename T> __device__ __forceinline__ void load4(const T *p, float (&f)[4]) {
    if (sizeof(T) == 4) {
        const float4 v = *reinterpret_cast<const float4 *>(p);
        f[0] = v.x, f[1] = v.y, f[2] = v.z, f[3] = v.w;
    } else {
        const uint2 v = *reinterpret_cast<const uint2 *>(p);
        const T *h = reinterpret_cast<const T *>(&v);
#pragma unroll
        for (int i = 0; i < 4; i++)
            f[i] = to_f(h[i]);
    }
}

// Weights: read once per step (the layer's weights far exceed L2), so bypass L1. Not volatile:
// the compiler may schedule these early; weights are never written during a step.
__device__ __forceinline__ uint4 ld_stream(const void *p) {
    uint4 v;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p));
    return v;
}

__device__ __forceinline__ void prefetch_l2(const void *p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}

// A team of tw warps (team = warp / tw) synchronises on its own named barrier (1..8; 0 is
// __syncthreads'), so teams never wait for each other inside the task loop. With a run-time
// barrier id ptxas reserves all 16 barriers of the block ("used 16 barriers"); Hopper has 64
// per SM (cuda_occupancy.h), so that caps residency at 4 blocks per SM, above the 2 we launch.
__device__ __forceinline__ void team_sync(int team, int tw) {
    if (tw == 1)
        __syncwarp();
    else
        asm volatile("bar.sync %0, %1;" ::"r"(team + 1), "r"(tw * 32) : "memory");
}

// dst[0..n) += src[0..n) with fp32 atomics, 4 or 2 at a time where dst's alignment allows
// (vector atomics: sm_90). The caller passes vec = 4 when B and the tile start are multiples of
// 4 (dst 16-byte aligned), 2 likewise, else 1.
__device__ __forceinline__ void red_add(float *dst, const float *src, int n, int vec) {
    int i = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (vec == 4)
        for (; i + 4 <= n; i += 4)
            atomicAdd(reinterpret_cast<float4 *>(dst + i),
                      make_float4(src[i], src[i + 1], src[i + 2], src[i + 3]));
    if (vec >= 2)
        for (; i + 2 <= n; i += 2)
            atomicAdd(reinterpret_cast<float2 *>(dst + i), make_float2(src[i], src[i + 1]));
#else
    (void)vec;
#endif
    for (; i < n; i++)
        atomicAdd(dst + i, src[i]);
}
__device__ __forceinline__ int red_vec(int B, int b0) {
    return (B % 4 == 0 && b0 % 4 == 0) ? 4 : (B % 2 == 0 && b0 % 2 == 0) ? 2 : 1;
}

// Activation chunk c (VEC elements) of tile row b from shared memory, as floats.
// ACT_F32: fp32 tile in 16-byte planes: element e of chunk c lives in plane e / 4, so a warp
// reading consecutive chunks reads consecutive 16-byte words (no bank conflicts).
// Otherwise: the tile is in the weight dtype, chunk c of row b is the 16 bytes at b * nch + c.
template <typename T, bool ACT_F32>
__device__ __forceinline__ void load_act(const unsigned char *sx, int b, int c, int nch,
                                         float *xv) {
    constexpr int VEC = 16 / (int)sizeof(T);
    if (ACT_F32) {
        constexpr int P = VEC / 4;
        const float4 *s4 = reinterpret_cast<const float4 *>(sx);
#pragma unroll
        for (int q = 0; q < P; q++) {
            float4 t = s4[(size_t)(b * P + q) * nch + c];
            xv[4 * q] = t.x;
            xv[4 * q + 1] = t.y;
            xv[4 * q + 2] = t.z;
            xv[4 * q + 3] = t.w;
        }
    } else {
        const uint4 *s4 = reinterpret_cast<const uint4 *>(sx);
        unpack16<T>(s4[(size_t)b * nch + c], xv);
    }
}

// acc[r][b] += w[r] . act[b] over one 16-byte chunk c of the kRows rows.
template <typename T, int BT, bool ACT_F32>
__device__ __forceinline__ void consume(const uint4 (&w)[kRows], int c, int nch,
                                        const unsigned char *sx, float (&acc)[kRows][BT]) {
    constexpr int VEC = 16 / (int)sizeof(T);
    float wf[kRows][VEC];
#pragma unroll
    for (int r = 0; r < kRows; r++)
        unpack16<T>(w[r], wf[r]);
#pragma unroll
    for (int b = 0; b < BT; b++) {
        float xv[VEC];
        load_act<T, ACT_F32>(sx, b, c, nch, xv);
#pragma unroll
        for (int r = 0; r < kRows; r++)
#pragma unroll
            for (int e = 0; e < VEC; e++)
                acc[r][b] = fmaf(wf[r][e], xv[e], acc[r][b]);
    }
}

// One pipeline step of this lane: chunk c of the task's kRows rows (row r starts at
// row_of(r), computed here from the task index rather than kept in registers across the
// step). Steps past the team's K range or of no task load nothing; their consume is skipped
// alike.
template <typename T, typename RowOf>
__device__ __forceinline__ void issue(uint4 (&w)[kRows], RowOf row_of, int c, bool valid) {
    constexpr int VEC = 16 / (int)sizeof(T);
    if (valid) {
#pragma unroll
        for (int r = 0; r < kRows; r++)
            w[r] = ld_stream(row_of(r) + (size_t)c * VEC);
    }
}

// The LoRA-B part of each row as extra chunks: acc[r][b] += sum_j Bm_r[j] * lora[(kind_r * rank
// + j) * BT + b], where lora already holds scale * (A x) in fp32, and Bm_r = brow_of(r) is the
// row's LoRA-B row. lora_prefetch (when the task starts) brings this thread's chunks into L2, so
// the loads after the weight stream hit L2; registers stay with the weight pipeline.
template <typename T, typename BrowOf>
__device__ __forceinline__ void lora_prefetch(BrowOf brow_of, int rank, int tt, int tthreads) {
    constexpr int VEC = 16 / (int)sizeof(T);
    for (int lc = tt; lc < rank / VEC; lc += tthreads)
#pragma unroll
        for (int r = 0; r < kRows; r++)
            prefetch_l2(brow_of(r) + (size_t)lc * VEC);
}

template <typename T, int BT, typename BrowOf>
__device__ __forceinline__ void lora_rows(BrowOf brow_of, bool gate_up, int rank, int tt,
                                          int tthreads, const float *lora,
                                          float (&acc)[kRows][BT]) {
    constexpr int VEC = 16 / (int)sizeof(T);
    for (int lc = tt; lc < rank / VEC; lc += tthreads) {
        uint4 v[kRows];
#pragma unroll
        for (int r = 0; r < kRows; r++)
            v[r] = ld_stream(brow_of(r) + (size_t)lc * VEC);
#pragma unroll
        for (int r = 0; r < kRows; r++) {
            float bf[VEC];
            unpack16<T>(v[r], bf);
            const int kind = gate_up ? (r & 1) : 0; // gate_up: rows gate, up, gate, up
            const float *lt = lora + ((size_t)kind * rank + (size_t)lc * VEC) * BT;
#pragma unroll
            for (int e = 0; e < VEC; e++)
#pragma unroll
                for (int b = 0; b < BT; b++)
                    acc[r][b] = fmaf(bf[e], lt[e * BT + b], acc[r][b]);
        }
    }
}

// Butterfly reduce-scatter of V values (V a power of two <= 32) over a warp: afterwards lane l
// holds the warp-wide sum of value l / (32 / V). Level H keeps half of the 2H values left (the
// upper half where lane bit 32H/V is set) and adds the partner's copy of that half; then the
// 32 / V lanes that share a value sum it. V - 1 + log2(32 / V) shuffles (6 for V = 4, 31 for
// V = 32) instead of 5 V for an all-reduce of each value.
template <int V, int H> struct rs_level {
    static __device__ __forceinline__ void run(float (&v)[V], int lane) {
        constexpr int o = 32 * H / V;
        const bool up = (lane & o) != 0;
#pragma unroll
        for (int i = 0; i < H; i++) {
            const float send = up ? v[i] : v[i + H];
            const float keep = up ? v[i + H] : v[i];
            v[i] = keep + __shfl_xor_sync(kFull, send, o);
        }
        rs_level<V, H / 2>::run(v, lane);
    }
};
template <int V> struct rs_level<V, 0> {
    static __device__ __forceinline__ void run(float (&)[V], int) {}
};
template <int V> __device__ __forceinline__ float reduce_scatter(float (&v)[V], int lane) {
    static_assert(V >= 1 && V <= 32 && (V & (V - 1)) == 0, "V: a power of two <= 32");
    rs_level<V, V / 2>::run(v, lane);
    float t = v[0];
#pragma unroll
    for (int o = (32 / V) / 2; o >= 1; o >>= 1)
        t += __shfl_xor_sync(kFull, t, o);
    return t;
}

// The warp-wide sums of one task's kRows x BT accumulators, reduce-scattered: lane l holds value
// l / (32 / (kRows BT)), that is row * BT + b.
template <int BT>
__device__ __forceinline__ float task_sums(const float (&acc)[kRows][BT], int lane) {
    float v[kRows * BT];
#pragma unroll
    for (int r = 0; r < kRows; r++)
#pragma unroll
        for (int b = 0; b < BT; b++)
            v[r * BT + b] = acc[r][b];
    return reduce_scatter<kRows * BT>(v, lane);
}

// The weight dtype of a decode op (x's: the checks made every weight match it), and a switch
// that returns FN<T>(op, ctx, err) for it (the host side of the kernel files).
#define GR_DEC_DISPATCH(DT, FN)                                                                    \
    switch (DT) {                                                                                  \
    case GR_FP32:                                                                                  \
        return FN<float>(op, ctx, err);                                                            \
    case GR_BF16:                                                                                  \
        return FN<__nv_bfloat16>(op, ctx, err);                                                    \
    case GR_FP16:                                                                                  \
        return FN<__half>(op, ctx, err);                                                           \
    default:                                                                                       \
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "%s: unsupported dtype",               \
                            op->kernel->name);                                                     \
    }

inline gr_dtype weight_dtype(const gr_op *op, const gr_launch_ctx *ctx) {
    return ctx->plan->bufs[op->inputs[0]].dtype; // x: the check made every weight match it
}

} // namespace
#endif
