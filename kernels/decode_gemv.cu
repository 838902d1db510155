// Fused decode-step kernels (device side): weight-streaming GEMVs for a LoRA MLP layer.
//
// Per layer the fused variant runs two kernels (plus one norm_stats kernel per step):
//   gate_up: act = silu(g) * u with g = rstd * (W_gate (x*w) + s B_gate tin_g), u likewise;
//            tdown += A_down act (per-block partial, fp32 atomics).
//   down:    x += W_down act + s B_down tdown; then the *next* layer's RMSNorm statistics
//            (sum x^2, A_gate (x*w_next), A_up (x*w_next)) are accumulated from the new x rows,
//            so no separate rmsnorm kernel runs between layers. rstd factors out of the LoRA-A
//            product: A (x*w*rstd) = rstd * A (x*w).
// Napkin math, bf16, B = 1, d = 2048, f = 8192: gate_up streams 2 x 32 MiB of weights and does
// 2 flops per weight element per batch row; down streams 32 MiB. At B <= 8 that is <= 16 flops
// per 2-byte weight: memory-bound by far, so the kernels are built to keep HBM busy:
//   - weights are read once with 16-byte ld.global.nc.L1::no_allocate loads, 4 rows x U chunks
//     (8 to 16 loads) in flight per thread before the first use;
//   - the activations of a batch tile (BT <= 8 rows) sit in shared memory (fp32 x*w_norm for
//     gate_up; act in the weight dtype for down), read as 16-byte vectors without bank conflicts;
//   - each task (4 output rows) is computed by a team of TW warps splitting K, fp32 partial sums
//     reduced with warp shuffles and a small shared buffer; epilogues (silu*mul, LoRA, residual,
//     next-layer statistics) run on the reduced values;
//   - the grid is 1-2 blocks per SM and blocks loop over tasks, so the per-block setup (staging
//     the activations) is paid once per block, not per row;
//   - before the dependency wait each thread prefetches its first weight chunks into L2, which
//     overlaps the staging, and with programmatic dependent launch (--pdl) the previous
//     kernel's tail.
// B > 8: batch tiles of 8 run as separate blocks (blockIdx.x % tiles) that visit the same rows at
// about the same time, so the re-reads of a weight row mostly hit L2; correct for any B, fast for
// B <= 8.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "core/cuda_check.h"
#include "core/dtype.h"
#include "kernels/decode.h"
#include "kernels/launch.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRows = 4; // output rows per task (gate_up: 2 gate + 2 up rows)

// Chunks in flight per row and thread: more when the batch tile (and so the accumulators) is
// small, fewer when registers go to accumulators (kRows x BT of them).
template <typename T, int BT, bool DOWN> constexpr int unroll_of() {
    return BT <= (DOWN && sizeof(T) == 4 ? 1 : 2) ? 4 : 2;
}
// Whether the LoRA-B chunks are loaded into registers before the weight stream: where that fits
// in 128 registers without spills (checked with -Xptxas -v).
template <typename T, int BT, bool DOWN> constexpr bool lora_early() {
    return BT <= 4 && !(DOWN && sizeof(T) == 4 && BT == 4);
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

// acc[r][b] += rows[r][k] * act[b][k] over this thread's chunks: chunks tt, tt + tthreads, ...
// U chunks per row (kRows * U 16-byte loads) are issued before the first is used.
template <typename T, int BT, int U, bool ACT_F32>
__device__ __forceinline__ void gemv_rows(const T *const *rows, int nch, int tt, int tthreads,
                                          const unsigned char *sx, float (&acc)[kRows][BT]) {
    constexpr int VEC = 16 / (int)sizeof(T);
    for (int c0 = tt; c0 < nch; c0 += tthreads * U) {
        uint4 wv[U][kRows];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int c = c0 + u * tthreads;
#pragma unroll
            for (int r = 0; r < kRows; r++)
                wv[u][r] = c < nch ? ld_stream(rows[r] + (size_t)c * VEC) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int c = c0 + u * tthreads;
            if (c >= nch) break;
            float wf[kRows][VEC];
#pragma unroll
            for (int r = 0; r < kRows; r++)
                unpack16<T>(wv[u][r], wf[r]);
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
    }
}

// The LoRA-B part of each row as extra chunks: acc[r][b] += sum_j Bm_r[j] * lora[(kind_r * rank
// + j) * BT + b], where lora already holds scale * (A x) in fp32. Thread tt's first chunk of
// each row (the only one unless rank > 16 bytes x team threads) is loaded by lora_load before
// the weight stream, so its latency hides behind it instead of stalling the epilogue.
// EARLY: into registers (16 of them); otherwise, where registers are short (large batch tiles,
// see lora_early), only an L2 prefetch now and the four loads together at the end.
template <typename T, bool EARLY>
__device__ __forceinline__ void lora_load(const T *const *brows, int rank, int tt,
                                          uint4 (&lb)[kRows]) {
    constexpr int VEC = 16 / (int)sizeof(T);
    const bool has = tt < rank / VEC;
#pragma unroll
    for (int r = 0; r < kRows; r++) {
        if (EARLY) {
            lb[r] = has ? ld_stream(brows[r] + (size_t)tt * VEC) : make_uint4(0, 0, 0, 0);
        } else {
            if (has) prefetch_l2(brows[r] + (size_t)tt * VEC);
            lb[r] = make_uint4(0, 0, 0, 0);
        }
    }
}

template <typename T, int BT, bool EARLY>
__device__ __forceinline__ void lora_rows(const T *const *brows, const int *kind, int rank, int tt,
                                          int tthreads, const float *lora, const uint4 (&lb)[kRows],
                                          float (&acc)[kRows][BT]) {
    constexpr int VEC = 16 / (int)sizeof(T);
    const int nlch = rank / VEC;
    for (int lc = tt; lc < nlch; lc += tthreads) {
        uint4 v[kRows];
#pragma unroll
        for (int r = 0; r < kRows; r++)
            v[r] = EARLY && lc == tt ? lb[r] : ld_stream(brows[r] + (size_t)lc * VEC);
#pragma unroll
        for (int r = 0; r < kRows; r++) {
            float bf[VEC];
            unpack16<T>(v[r], bf);
            const float *lt = lora + ((size_t)kind[r] * rank + (size_t)lc * VEC) * BT;
#pragma unroll
            for (int e = 0; e < VEC; e++)
#pragma unroll
                for (int b = 0; b < BT; b++)
                    acc[r][b] = fmaf(bf[e], lt[e * BT + b], acc[r][b]);
        }
    }
}

// Sum each acc[r][b] over the warp, leaving the sums in every lane.
template <int BT> __device__ __forceinline__ void warp_allreduce(float (&acc)[kRows][BT]) {
#pragma unroll
    for (int r = 0; r < kRows; r++)
#pragma unroll
        for (int b = 0; b < BT; b++)
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                acc[r][b] += __shfl_xor_sync(0xffffffffu, acc[r][b], o);
}

// Sum each acc[r][b] over the warp; lane 0 stores the kRows * BT sums at red_warp.
template <int BT>
__device__ __forceinline__ void warp_reduce_store(float (&acc)[kRows][BT], float *red_warp,
                                                  int lane) {
#pragma unroll
    for (int r = 0; r < kRows; r++)
#pragma unroll
        for (int b = 0; b < BT; b++) {
            float v = acc[r][b];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                v += __shfl_xor_sync(0xffffffffu, v, o);
            if (lane == 0) red_warp[r * BT + b] = v;
        }
}

template <typename T> struct GateUpArgs {
    const T *x, *w, *Wg, *Wu, *Bg, *Bu, *Ad;
    const float *ssq, *tin;
    T *act;
    float *td, *zero_ssq, *zero_tin;
    int B, K, N, rank, tw, ntiles;
    float scale, eps;
};

template <typename T> struct DownArgs {
    const T *x_in, *act, *Wd, *Bd;
    const float *td;
    const T *w_next, *Ag_next, *Au_next;
    T *x_out; // may be x_in (in place): each element is read and written by one thread
    float *ssq_next, *tin_next, *zero_td;
    int B, K, N, rank, tw, ntiles;
    float scale;
};

// Block b of the grid works on batch tile b % tiles; the blocks of one tile split the tasks.
struct block_pos {
    int tile, bib, bpt, b0, nb;
};
__device__ __forceinline__ block_pos block_position(int ntiles, int B, int BT) {
    block_pos p;
    p.tile = (int)blockIdx.x % ntiles;
    p.bib = (int)blockIdx.x / ntiles;
    p.bpt = (int)gridDim.x / ntiles;
    p.b0 = p.tile * BT;
    p.nb = min(BT, B - p.b0);
    return p;
}

template <typename T, int BT, int U>
__global__ void __launch_bounds__(kThreads, 2) gate_up_kernel(const GateUpArgs<T> p) {
    constexpr int VEC = 16 / (int)sizeof(T);
    constexpr int P = VEC / 4; // fp32 planes per chunk
    extern __shared__ __align__(16) unsigned char smem[];
    const gr_dec_layout L = gr_dec_smem_layout(0, BT, p.K, p.rank, (int)sizeof(T));
    unsigned char *sx = smem + L.act;
    float *lora = reinterpret_cast<float *>(smem + L.lora);
    float *red = reinterpret_cast<float *>(smem + L.red);
    float *srstd = reinterpret_cast<float *>(smem + L.misc);
    float *sact = srstd + BT; // [team][pair][BT]
    float *std_acc = reinterpret_cast<float *>(smem + L.acc);

    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int TW = p.tw, teams = kWarps / TW, team = warp / TW;
    const int tt = (warp % TW) * 32 + lane, tthreads = TW * 32;
    const block_pos bp = block_position(p.ntiles, p.B, BT);
    const int nch = p.K / VEC, rank = p.rank, N = p.N, K = p.K;
    const int ntasks = (N + 1) / 2;

    { // weights only before the wait: warm L2 with this thread's first chunks
        const int task = bp.bib * teams + team;
        if (task < ntasks)
            for (int r = 0; r < kRows; r++) {
                const int n = min(2 * task + r / 2, N - 1);
                const T *row = ((r & 1) ? p.Wu : p.Wg) + (size_t)n * K;
                for (int u = 0; u < U; u++) {
                    const int c = tt + u * tthreads;
                    if (c < nch) prefetch_l2(row + (size_t)c * VEC);
                }
            }
    }
    gr_pdl_enter();        // weights only above; everything below may depend on the previous kernel
    if (blockIdx.x == 0) { // the next layer's statistics, accumulated by the down kernel next
        if (p.zero_ssq)
            for (int i = tid; i < p.B; i += kThreads)
                p.zero_ssq[i] = 0.f;
        if (p.zero_tin)
            for (int i = tid; i < 2 * rank * p.B; i += kThreads)
                p.zero_tin[i] = 0.f;
    }
    // stage x * w_norm (fp32) for the tile's rows; rows past B are zero
    for (int i = tid; i < BT * nch; i += kThreads) {
        const int b = i / nch, c = i - b * nch;
        float xf[VEC];
        if (b < bp.nb) {
            float wf[VEC];
            unpack16<T>(
                *reinterpret_cast<const uint4 *>(p.x + (size_t)(bp.b0 + b) * K + (size_t)c * VEC),
                xf);
            unpack16<T>(*reinterpret_cast<const uint4 *>(p.w + (size_t)c * VEC), wf);
#pragma unroll
            for (int e = 0; e < VEC; e++)
                xf[e] *= wf[e];
        } else {
#pragma unroll
            for (int e = 0; e < VEC; e++)
                xf[e] = 0.f;
        }
        float4 *s4 = reinterpret_cast<float4 *>(sx);
#pragma unroll
        for (int q = 0; q < P; q++)
            s4[(size_t)(b * P + q) * nch + c] =
                make_float4(xf[4 * q], xf[4 * q + 1], xf[4 * q + 2], xf[4 * q + 3]);
    }
    for (int i = tid; i < 2 * rank * BT; i += kThreads) { // [kind * rank + j][b]
        const int b = i % BT, kj = i / BT;
        lora[i] = b < bp.nb ? p.scale * p.tin[(size_t)kj * p.B + bp.b0 + b] : 0.f;
    }
    if (tid < BT) srstd[tid] = tid < bp.nb ? rsqrtf(p.ssq[bp.b0 + tid] / (float)K + p.eps) : 0.f;
    for (int i = tid; i < rank * BT; i += kThreads)
        std_acc[i] = 0.f;
    __syncthreads();

    if (TW == 1 && BT <= 4) {
        // One warp per task: the reduction and the epilogue stay inside the warp, so the warps
        // stream independently; no block barrier until the end. (At BT = 8 the all-reduced
        // accumulators would not fit in registers next to the loads: the team path below.)
        for (int task = bp.bib * teams + team; task < ntasks; task += bp.bpt * teams) {
            const int n0 = 2 * task;
            float adr[2] = {0.f, 0.f}; // A_down[lane][n0 + pp] for the epilogue, loaded early
            if (lane < rank)
                for (int pp = 0; pp < 2; pp++)
                    if (n0 + pp < N) adr[pp] = to_f(p.Ad[(size_t)lane * N + n0 + pp]);
            float acc[kRows][BT];
#pragma unroll
            for (int r = 0; r < kRows; r++)
#pragma unroll
                for (int b = 0; b < BT; b++)
                    acc[r][b] = 0.f;
            const T *rows[kRows], *brows[kRows];
            int kind[kRows];
#pragma unroll
            for (int r = 0; r < kRows; r++) {
                const int n = min(n0 + r / 2, N - 1); // a clamped row is computed, not stored
                kind[r] = r & 1;
                rows[r] = (kind[r] ? p.Wu : p.Wg) + (size_t)n * K;
                brows[r] = (kind[r] ? p.Bu : p.Bg) + (size_t)n * rank;
            }
            uint4 lb[kRows];
            lora_load<T, lora_early<T, BT, false>()>(brows, rank, lane, lb);
            gemv_rows<T, BT, U, true>(rows, nch, lane, 32, sx, acc);
            lora_rows<T, BT, lora_early<T, BT, false>()>(brows, kind, rank, lane, 32, lora, lb,
                                                         acc);
            warp_allreduce<BT>(acc);
            // lane pp * BT + b finishes (pair pp, batch row b); compile-time indices keep acc in
            // registers
            float zg = 0.f, zu = 0.f;
#pragma unroll
            for (int pp = 0; pp < 2; pp++)
#pragma unroll
                for (int b = 0; b < BT; b++)
                    if (lane == pp * BT + b) {
                        zg = acc[2 * pp][b];
                        zu = acc[2 * pp + 1][b];
                    }
            const int mpp = lane / BT, mb = lane - mpp * BT;
            float a = 0.f;
            if (lane < 2 * BT && n0 + mpp < N && mb < bp.nb) {
                const float g = srstd[mb] * zg, u = srstd[mb] * zu;
                const T at = from_f<T>(g / (1.f + __expf(-g)) * u);
                p.act[(size_t)(bp.b0 + mb) * N + n0 + mpp] = at;
                a = to_f(at); // the rounded value, as the down kernel will read it
            }
#pragma unroll
            for (int pp = 0; pp < 2; pp++)
#pragma unroll
                for (int b = 0; b < BT; b++) {
                    const float av = __shfl_sync(0xffffffffu, a, pp * BT + b);
                    if (n0 + pp >= N || b >= bp.nb) continue; // warp-uniform
                    if (lane < rank) atomicAdd(&std_acc[lane * BT + b], adr[pp] * av);
                    for (int j = lane + 32; j < rank; j += 32)
                        atomicAdd(&std_acc[j * BT + b], to_f(p.Ad[(size_t)j * N + n0 + pp]) * av);
                }
        }
    } else
        // Teams of several warps reduce through shared memory. The loop bound depends only on the
        // block, so the barriers inside are block-uniform.
        for (int tb = bp.bib; tb * teams < ntasks; tb += bp.bpt) {
            const int task = tb * teams + team;
            const bool valid = task < ntasks;
            const int n0 = 2 * task;
            float acc[kRows][BT];
#pragma unroll
            for (int r = 0; r < kRows; r++)
#pragma unroll
                for (int b = 0; b < BT; b++)
                    acc[r][b] = 0.f;
            if (valid) {
                const T *rows[kRows], *brows[kRows];
                int kind[kRows];
#pragma unroll
                for (int r = 0; r < kRows; r++) {
                    const int n = min(n0 + r / 2, N - 1); // a clamped row is computed, not stored
                    kind[r] = r & 1;
                    rows[r] = (kind[r] ? p.Wu : p.Wg) + (size_t)n * K;
                    brows[r] = (kind[r] ? p.Bu : p.Bg) + (size_t)n * rank;
                }
                uint4 lb[kRows];
                lora_load<T, lora_early<T, BT, false>()>(brows, rank, tt, lb);
                gemv_rows<T, BT, U, true>(rows, nch, tt, tthreads, sx, acc);
                lora_rows<T, BT, lora_early<T, BT, false>()>(brows, kind, rank, tt, tthreads, lora,
                                                             lb, acc);
            }
            warp_reduce_store<BT>(acc, red + warp * kRows * BT, lane);
            __syncthreads();
            if (valid && tt < 2 * BT) { // one thread per (pair, batch row)
                const int pp = tt / BT, b = tt - pp * BT, n = n0 + pp;
                float a = 0.f;
                if (n < N && b < bp.nb) {
                    float zg = 0.f, zu = 0.f;
                    for (int w = 0; w < TW; w++) {
                        const float *rw = red + (team * TW + w) * kRows * BT;
                        zg += rw[(2 * pp) * BT + b];
                        zu += rw[(2 * pp + 1) * BT + b];
                    }
                    const float g = srstd[b] * zg, u = srstd[b] * zu;
                    const T at = from_f<T>(g / (1.f + __expf(-g)) * u);
                    p.act[(size_t)(bp.b0 + b) * N + n] = at;
                    a = to_f(at); // the rounded value, as the down kernel will read it
                }
                sact[(team * 2 + pp) * BT + b] = a;
            }
            __syncthreads();
            if (valid)
                for (int j = tt; j < rank; j += tthreads)
                    for (int pp = 0; pp < 2; pp++) {
                        const int n = n0 + pp;
                        if (n >= N) break;
                        const float ad = to_f(p.Ad[(size_t)j * N + n]);
                        for (int b = 0; b < bp.nb; b++)
                            atomicAdd(&std_acc[j * BT + b], ad * sact[(team * 2 + pp) * BT + b]);
                    }
            // No barrier here: the next iteration writes red and sact only after barriers that
            // every reader of this iteration has passed.
        }
    __syncthreads();
    for (int i = tid; i < rank * bp.nb; i += kThreads) {
        const int j = i / bp.nb, b = i - j * bp.nb;
        atomicAdd(&p.td[(size_t)j * p.B + bp.b0 + b], std_acc[j * BT + b]);
    }
}

template <typename T, int BT, int U>
__global__ void __launch_bounds__(kThreads, 2) down_kernel(const DownArgs<T> p) {
    constexpr int VEC = 16 / (int)sizeof(T);
    extern __shared__ __align__(16) unsigned char smem[];
    const gr_dec_layout L = gr_dec_smem_layout(1, BT, p.K, p.rank, (int)sizeof(T));
    unsigned char *sx = smem + L.act;
    float *lora = reinterpret_cast<float *>(smem + L.lora); // [j][b] scale * tdown
    float *red = reinterpret_cast<float *>(smem + L.red);
    float *sxn = reinterpret_cast<float *>(smem + L.misc); // [team][row][b] new x
    float *sst = reinterpret_cast<float *>(smem + L.acc);  // [2r+1][b] next-layer statistics

    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int TW = p.tw, teams = kWarps / TW, team = warp / TW;
    const int tt = (warp % TW) * 32 + lane, tthreads = TW * 32;
    const block_pos bp = block_position(p.ntiles, p.B, BT);
    const int nch = p.K / VEC, rank = p.rank, N = p.N, K = p.K;
    const int ntasks = (N + kRows - 1) / kRows;
    const int nstat = 2 * rank + 1;

    {
        const int task = bp.bib * teams + team;
        if (task < ntasks)
            for (int r = 0; r < kRows; r++) {
                const T *row = p.Wd + (size_t)min(task * kRows + r, N - 1) * K;
                for (int u = 0; u < U; u++) {
                    const int c = tt + u * tthreads;
                    if (c < nch) prefetch_l2(row + (size_t)c * VEC);
                }
            }
    }
    gr_pdl_enter(); // weights only above; everything below may depend on the previous kernel
    if (blockIdx.x == 0 && p.zero_td) // the next layer's gate_up accumulates into it
        for (int i = tid; i < rank * p.B; i += kThreads)
            p.zero_td[i] = 0.f;
    {
        uint4 *s4 = reinterpret_cast<uint4 *>(sx);
        for (int i = tid; i < BT * nch; i += kThreads) {
            const int b = i / nch, c = i - b * nch;
            s4[i] = b < bp.nb ? *reinterpret_cast<const uint4 *>(p.act + (size_t)(bp.b0 + b) * K +
                                                                 (size_t)c * VEC)
                              : make_uint4(0, 0, 0, 0);
        }
    }
    for (int i = tid; i < rank * BT; i += kThreads) {
        const int b = i % BT, j = i / BT;
        lora[i] = b < bp.nb ? p.scale * p.td[(size_t)j * p.B + bp.b0 + b] : 0.f;
    }
    for (int i = tid; i < nstat * BT; i += kThreads)
        sst[i] = 0.f;
    __syncthreads();

    for (int tb = bp.bib; tb * teams < ntasks; tb += bp.bpt) {
        const int task = tb * teams + team;
        const bool valid = task < ntasks;
        const int m0 = task * kRows;
        float acc[kRows][BT];
#pragma unroll
        for (int r = 0; r < kRows; r++)
#pragma unroll
            for (int b = 0; b < BT; b++)
                acc[r][b] = 0.f;
        // The epilogue's operands, loaded before the weights so that their latency hides behind
        // the stream: this thread's x element, and its next-layer statistic's coefficients.
        float xo = 0.f, coef[kRows];
#pragma unroll
        for (int r = 0; r < kRows; r++)
            coef[r] = 0.f;
        if (valid) {
            if (tt < kRows * BT) {
                const int r = tt / BT, b = tt - r * BT, m = m0 + r;
                if (m < N && b < bp.nb) xo = to_f(p.x_in[(size_t)(bp.b0 + b) * N + m]);
            }
            if (p.ssq_next && tt > 0 && tt < nstat) {
                const int kind = (tt - 1) / rank, jj = (tt - 1) - kind * rank;
                const T *A = kind ? p.Au_next : p.Ag_next;
#pragma unroll
                for (int r = 0; r < kRows; r++)
                    if (m0 + r < N)
                        coef[r] = to_f(A[(size_t)jj * N + m0 + r]) * to_f(p.w_next[m0 + r]);
            }
        }
        if (valid) {
            const T *rows[kRows], *brows[kRows];
            int kind[kRows];
#pragma unroll
            for (int r = 0; r < kRows; r++) {
                const int m = min(m0 + r, N - 1);
                rows[r] = p.Wd + (size_t)m * K;
                brows[r] = p.Bd + (size_t)m * rank;
                kind[r] = 0;
            }
            uint4 lb[kRows];
            lora_load<T, lora_early<T, BT, true>()>(brows, rank, tt, lb);
            gemv_rows<T, BT, U, false>(rows, nch, tt, tthreads, sx, acc);
            lora_rows<T, BT, lora_early<T, BT, true>()>(brows, kind, rank, tt, tthreads, lora, lb,
                                                        acc);
        }
        warp_reduce_store<BT>(acc, red + warp * kRows * BT, lane);
        __syncthreads();
        if (valid && tt < kRows * BT) { // one thread per (row, batch row)
            const int r = tt / BT, b = tt - r * BT, m = m0 + r;
            float xf = 0.f;
            if (m < N && b < bp.nb) {
                float y = 0.f;
                for (int w = 0; w < TW; w++)
                    y += red[(team * TW + w) * kRows * BT + r * BT + b];
                const size_t idx = (size_t)(bp.b0 + b) * N + m;
                const T xn = from_f<T>(xo + y);
                p.x_out[idx] = xn;
                xf = to_f(xn);
            }
            sxn[(team * kRows + r) * BT + b] = xf;
        }
        __syncthreads();
        if (valid && p.ssq_next)
            for (int j = tt; j < nstat; j += tthreads)
#pragma unroll
                for (int r = 0; r < kRows; r++) {
                    const int m = m0 + r;
                    if (m >= N) break;
                    float c = coef[r]; // j == tt: loaded early; beyond one pass over the team: now
                    if (j != tt && j > 0) {
                        const int kind = (j - 1) / rank, jj = (j - 1) - kind * rank;
                        const T *A = kind ? p.Au_next : p.Ag_next;
                        c = to_f(A[(size_t)jj * N + m]) * to_f(p.w_next[m]);
                    }
                    for (int b = 0; b < bp.nb; b++) {
                        const float v = sxn[(team * kRows + r) * BT + b];
                        atomicAdd(&sst[j * BT + b], j == 0 ? v * v : c * v);
                    }
                }
    }
    __syncthreads();
    if (p.ssq_next)
        for (int i = tid; i < nstat * bp.nb; i += kThreads) {
            const int j = i / bp.nb, b = i - j * bp.nb;
            const float v = sst[j * BT + b];
            if (j == 0)
                atomicAdd(&p.ssq_next[bp.b0 + b], v);
            else
                atomicAdd(&p.tin_next[(size_t)(j - 1) * p.B + bp.b0 + b], v);
        }
}

// One block per (statistic j, batch row b): j = 0 is sum x^2, j = 1..r is A_gate[j-1] . (x*w),
// j = r+1..2r is A_up[j-r-1] . (x*w). Plain stores: every element of ssq and tin is written.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    norm_stats_kernel(const T *x, const T *w, const T *Ag, const T *Au, float *ssq, float *tin,
                      float *zero_td, int B, int d, int rank) {
    __shared__ float warp_sums[kWarps];
    gr_pdl_enter(); // x was written by the previous step's last kernel
    const int j = (int)blockIdx.x, b = (int)blockIdx.y, tid = (int)threadIdx.x;
    if (zero_td && j == 0 && b == 0)
        for (int i = tid; i < rank * B; i += kThreads)
            zero_td[i] = 0.f;
    const T *xb = x + (size_t)b * d;
    float s = 0.f;
    if (j == 0) {
        for (int k = tid; k < d; k += kThreads) {
            const float v = to_f(xb[k]);
            s = fmaf(v, v, s);
        }
    } else {
        const int kind = (j - 1) / rank, jj = (j - 1) - kind * rank;
        const T *A = (kind ? Au : Ag) + (size_t)jj * d;
        for (int k = tid; k < d; k += kThreads)
            s = fmaf(to_f(A[k]), to_f(xb[k]) * to_f(w[k]), s);
    }
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if ((tid & 31) == 0) warp_sums[tid >> 5] = s;
    __syncthreads();
    if (tid == 0) {
        float t = 0.f;
        for (int i = 0; i < kWarps; i++)
            t += warp_sums[i];
        if (j == 0)
            ssq[b] = t;
        else
            tin[(size_t)(j - 1) * B + b] = t;
    }
}

// The op's launch dims from the check; PDL when the run asks for it (ctx->pdl).
template <typename... KArgs, typename... Args>
cudaError_t launch(void (*kernel)(KArgs...), const gr_op *op, const gr_launch_ctx *ctx,
                   Args... args) {
    return gr_launch(kernel, dim3(op->grid[0], op->grid[1], op->grid[2]),
                     dim3(op->block[0], op->block[1], op->block[2]), op->smem, ctx, args...);
}

template <typename T, int BT> struct pick_gate_up {
    static void (*get())(GateUpArgs<T>) {
        return gate_up_kernel<T, BT, unroll_of<T, BT, false>()>;
    }
};
template <typename T, int BT> struct pick_down {
    static void (*get())(DownArgs<T>) {
        return down_kernel<T, BT, unroll_of<T, BT, true>()>;
    }
};

template <typename K> gr_status allow_smem(K kernel, int bytes, gr_error *err) {
    GR_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), err);
    return GR_OK;
}

template <typename T> gr_status setup_t(const gr_op *op, int bytes, bool down, gr_error *err) {
    switch (op->ip[GR_DEC_BT]) {
    case 1:
        return down ? allow_smem(pick_down<T, 1>::get(), bytes, err)
                    : allow_smem(pick_gate_up<T, 1>::get(), bytes, err);
    case 2:
        return down ? allow_smem(pick_down<T, 2>::get(), bytes, err)
                    : allow_smem(pick_gate_up<T, 2>::get(), bytes, err);
    case 4:
        return down ? allow_smem(pick_down<T, 4>::get(), bytes, err)
                    : allow_smem(pick_gate_up<T, 4>::get(), bytes, err);
    case 8:
        return down ? allow_smem(pick_down<T, 8>::get(), bytes, err)
                    : allow_smem(pick_gate_up<T, 8>::get(), bytes, err);
    default:
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "%s: batch tile %lld", op->kernel->name,
                            (long long)op->ip[GR_DEC_BT]);
    }
}

template <typename T>
gr_status launch_gate_up_t(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    void *const *d = ctx->dptr;
    GateUpArgs<T> a;
    a.x = (const T *)d[op->inputs[0]];
    a.w = (const T *)d[op->inputs[1]];
    a.ssq = (const float *)d[op->inputs[2]];
    a.tin = (const float *)d[op->inputs[3]];
    a.Wg = (const T *)d[op->inputs[4]];
    a.Wu = (const T *)d[op->inputs[5]];
    a.Bg = (const T *)d[op->inputs[6]];
    a.Bu = (const T *)d[op->inputs[7]];
    a.Ad = (const T *)d[op->inputs[8]];
    a.act = (T *)d[op->outputs[0]];
    a.td = (float *)d[op->outputs[1]];
    a.zero_ssq = op->noutputs > 2 ? (float *)d[op->outputs[2]] : nullptr;
    a.zero_tin = op->noutputs > 3 ? (float *)d[op->outputs[3]] : nullptr;
    a.B = (int)op->ip[GR_DEC_B];
    a.K = (int)op->ip[GR_DEC_K];
    a.N = (int)op->ip[GR_DEC_N];
    a.rank = (int)op->ip[GR_DEC_RANK];
    a.tw = (int)op->ip[GR_DEC_TW];
    a.ntiles = (int)op->ip[GR_DEC_TILES];
    a.scale = (float)op->fp[0];
    a.eps = (float)op->fp[1];
    cudaError_t rc;
    switch (op->ip[GR_DEC_BT]) {
    case 1:
        rc = launch(pick_gate_up<T, 1>::get(), op, ctx, a);
        break;
    case 2:
        rc = launch(pick_gate_up<T, 2>::get(), op, ctx, a);
        break;
    case 4:
        rc = launch(pick_gate_up<T, 4>::get(), op, ctx, a);
        break;
    case 8:
        rc = launch(pick_gate_up<T, 8>::get(), op, ctx, a);
        break;
    default:
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "decode_gate_up: batch tile %lld",
                            (long long)op->ip[GR_DEC_BT]);
    }
    GR_CUDA(rc, err);
    return gr_launch_status(op->kernel->name, op->path, err);
}

template <typename T>
gr_status launch_down_t(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    void *const *d = ctx->dptr;
    DownArgs<T> a;
    a.x_in = (const T *)d[op->inputs[0]];
    a.act = (const T *)d[op->inputs[1]];
    a.Wd = (const T *)d[op->inputs[2]];
    a.Bd = (const T *)d[op->inputs[3]];
    a.td = (const float *)d[op->inputs[4]];
    const bool next = (op->ip[GR_DEC_FLAGS] & GR_DEC_F_NEXT) != 0;
    a.w_next = next ? (const T *)d[op->inputs[5]] : nullptr;
    a.Ag_next = next ? (const T *)d[op->inputs[6]] : nullptr;
    a.Au_next = next ? (const T *)d[op->inputs[7]] : nullptr;
    a.x_out = (T *)d[op->outputs[0]];
    a.ssq_next = next ? (float *)d[op->outputs[1]] : nullptr;
    a.tin_next = next ? (float *)d[op->outputs[2]] : nullptr;
    a.zero_td = (op->ip[GR_DEC_FLAGS] & GR_DEC_F_ZERO) ? (float *)d[op->outputs[op->noutputs - 1]]
                                                       : nullptr;
    a.B = (int)op->ip[GR_DEC_B];
    a.K = (int)op->ip[GR_DEC_K];
    a.N = (int)op->ip[GR_DEC_N];
    a.rank = (int)op->ip[GR_DEC_RANK];
    a.tw = (int)op->ip[GR_DEC_TW];
    a.ntiles = (int)op->ip[GR_DEC_TILES];
    a.scale = (float)op->fp[0];
    cudaError_t rc;
    switch (op->ip[GR_DEC_BT]) {
    case 1:
        rc = launch(pick_down<T, 1>::get(), op, ctx, a);
        break;
    case 2:
        rc = launch(pick_down<T, 2>::get(), op, ctx, a);
        break;
    case 4:
        rc = launch(pick_down<T, 4>::get(), op, ctx, a);
        break;
    case 8:
        rc = launch(pick_down<T, 8>::get(), op, ctx, a);
        break;
    default:
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "decode_down: batch tile %lld",
                            (long long)op->ip[GR_DEC_BT]);
    }
    GR_CUDA(rc, err);
    return gr_launch_status(op->kernel->name, op->path, err);
}

template <typename T>
gr_status launch_norm_stats_t(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    void *const *d = ctx->dptr;
    float *zero_td = op->noutputs > 2 ? (float *)d[op->outputs[2]] : nullptr;
    cudaError_t rc =
        launch(norm_stats_kernel<T>, op, ctx, (const T *)d[op->inputs[0]],
               (const T *)d[op->inputs[1]], (const T *)d[op->inputs[2]],
               (const T *)d[op->inputs[3]], (float *)d[op->outputs[0]], (float *)d[op->outputs[1]],
               zero_td, (int)op->ip[GR_DEC_B], (int)op->ip[GR_DEC_K], (int)op->ip[GR_DEC_RANK]);
    GR_CUDA(rc, err);
    return gr_launch_status(op->kernel->name, op->path, err);
}

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

gr_dtype weight_dtype(const gr_op *op, const gr_launch_ctx *ctx) {
    return ctx->plan->bufs[op->inputs[0]].dtype; // x: the check made every weight match it
}

} // namespace

extern "C" gr_status gr_launch_decode_norm_stats(const gr_op *op, const gr_launch_ctx *ctx,
                                                 gr_error *err) {
    GR_DEC_DISPATCH(weight_dtype(op, ctx), launch_norm_stats_t)
}

extern "C" gr_status gr_launch_decode_gate_up(const gr_op *op, const gr_launch_ctx *ctx,
                                              gr_error *err) {
    GR_DEC_DISPATCH(weight_dtype(op, ctx), launch_gate_up_t)
}

extern "C" gr_status gr_launch_decode_down(const gr_op *op, const gr_launch_ctx *ctx,
                                           gr_error *err) {
    GR_DEC_DISPATCH(weight_dtype(op, ctx), launch_down_t)
}

// Before any capture: allow the op's dynamic shared memory. The limit is set to the device's
// opt-in maximum (not the op's size) so that ops sharing a kernel instance never lower it for
// each other.
extern "C" gr_status gr_setup_decode_gemv(const gr_op *op, const gr_launch_ctx *ctx, void **state,
                                          gr_error *err) {
    *state = nullptr;
    if (op->smem <= 48u * 1024u) return GR_OK;
    int dev = 0, optin = 0;
    GR_CUDA(cudaGetDevice(&dev), err);
    GR_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), err);
    if ((size_t)optin < op->smem)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\" needs %.1f KB of shared memory per block for a batch "
                            "tile of %lld rows of %lld elements; this device allows %.1f KB. Use "
                            "a smaller B, d or f",
                            op->kernel->name, (double)op->smem / 1024.0,
                            (long long)op->ip[GR_DEC_BT], (long long)op->ip[GR_DEC_K],
                            (double)optin / 1024.0);
    const bool down = op->kernel->launch == gr_launch_decode_down;
    switch (ctx->plan->bufs[op->inputs[0]].dtype) {
    case GR_FP32:
        return setup_t<float>(op, optin, down, err);
    case GR_BF16:
        return setup_t<__nv_bfloat16>(op, optin, down, err);
    case GR_FP16:
        return setup_t<__half>(op, optin, down, err);
    default:
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "%s: unsupported dtype",
                            op->kernel->name);
    }
}
