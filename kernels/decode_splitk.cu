// decode_step_splitk (the fused_splitk variant of decode_step.json): a LoRA MLP decode step as
// one kernel per layer, plus a prep and a finish kernel per step.
//
// Why: with two GEMV kernels per layer (fused --pdl) a step at fp32 L8 d1024 f4096 B4 pays ~3.4
// us at each of its 16 kernel boundaries, ~55 of its 181 us (docs/decode_step.md). The only
// all-to-all dependence inside a layer is down's need for the whole of act; split along K, the
// down projection needs only the slice of act a block has just computed. So a block owns a
// contiguous slice [n0, n0 + ns) of the f outputs and does, in one kernel:
//   1. x_l from the previous layer's fp32 accumulator, rounded to the weight dtype (where the
//      per-layer kernels store it), its sum of squares (rstd) and h = x * w_norm in shared
//      memory: every block stages all of x (B x d, from L2);
//   2. the gate/up rows of its slice (4-row tasks of 2 outputs, one warp each, the rolling
//      register pipeline of decode_gate_up), their LoRA terms and act = silu(g) * u, kept in
//      shared memory (and written to act, which the op exposes like decode_step);
//   3. its split-K share of the layer output: W_down[:, slice] act[slice] + s B_down ts with
//      ts = A_down[:, slice] act[slice] (the LoRA-down term is linear in act, so the slices'
//      terms add up to the whole), plus x_l in block 0, added into the layer's fp32 output with
//      float4 atomics, one per 4 outputs and batch row per block.
// The LoRA-A products tin = [A_gate; A_up] (x * w_norm) (2r rows of d) are needed by every block
// but depend on the whole of x_l, which exists only once the previous kernel is done; instead of
// every block recomputing them (2r x d weights from L2 per block), r / 2 four-row tasks are given
// to the last warp of the last blocks (where the slices leave a warp short of a task), which
// publish each value with one relaxed store into a slot that the prep kernel set to a signalling
// NaN pattern arithmetic never produces; a warp polls the slots when it first needs them, after
// its first task's weights have streamed (a single 32-bit store is seen whole or not at all, so
// no fence or flag is needed). The whole grid is resident at once (one block per SM, checked at
// setup), so the publishers always run; every poll traps after 10 s instead of hanging.
// Accumulators and slots are per layer and reset by the prep kernel, so every step (eager, graph
// replay, --unroll) starts clean and no kernel depends on an earlier step.
//
// Rounding points are decode_step's (x and act rounded to the weight dtype once per layer,
// everything else fp32), so ref_step is the reference; only the fp32 summation order differs.
//
// Measured (H200, runs 71-76, docs/decode_step.md): 225.7-227.9 us per step at fp32 L8 d1024 f4096
// B4 with PDL, against 180.8 for the per-layer kernels (fused --pdl): the 7 boundaries it removes
// are worth less than what the down pass loses, whose reads of ~124 bytes of each W_down row per
// block stream at ~1.6 TB/s (~10.5 us of a ~27 us layer).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/cuda_check.h"
#include "core/dtype.h"
#include "kernels/decode.h"
#include "kernels/decode_dev.cuh"
#include "kernels/launch.cuh"
#include "kernels/mbarrier.cuh"

namespace {

// The value a published slot holds until its producer stores: a signalling NaN. GPU arithmetic
// returns the canonical quiet NaN 0x7fffffff, so no computed tin equals it.
constexpr unsigned kUnpublished = 0x7fbadbadu;

template <typename T> struct SplitkArgs {
    const float *xin; // [B, d] fp32: the layer's input (complete: the previous kernel is done)
    float *xout;      // [B, d] fp32: the layer's output, zeroed by the prep kernel
    const T *w, *Wg, *Wu, *Wd, *Ag, *Au, *Ad, *Bg, *Bu, *Bd;
    float *tin;             // [2r, B]: published [A_gate; A_up] (x * w_norm)
    T *act;                 // [B, f]
    unsigned long long *ts; // GR_STEP_TIMES: this layer's per-block stamps, else null
    int B, d, f, rank, lpr, nsmax;
    float scale, eps;
};

__device__ __forceinline__ void publish(float *p, float v) {
    asm volatile("st.relaxed.gpu.global.f32 [%0], %1;" ::"l"(p), "f"(v) : "memory");
}
__device__ __forceinline__ float ld_relaxed(const float *p) {
    float v;
    asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
    return v;
}
__device__ float wait_published(const float *p) {
    float v = ld_relaxed(p);
    if (__float_as_uint(v) != kUnpublished) return v;
    const unsigned long long t0 = global_ns();
    for (;;) {
        __nanosleep(100);
        v = ld_relaxed(p);
        if (__float_as_uint(v) != kUnpublished) return v;
        if (global_ns() - t0 > kSpinLimitNs) __trap(); // a publisher that never ran: a bug
    }
}

// GR_STEP_TIMES (a diagnostic): thread 0 of each block stamps the global timer at 0 entry, 1 past
// the wait, 2 x staged, 3 warp 0's items done, 4 act complete (barrier), 5 ts ready, 6 down pass
// done, 7 atomics issued. One uniform branch when off.
constexpr int kKMarks = 8;
__device__ __forceinline__ void kmark(unsigned long long *ts, int point) {
    if (ts && threadIdx.x == 0) ts[(size_t)blockIdx.x * kKMarks + point] = global_ns();
}

// Block k's slice of the f / VEC granules (16 bytes of a W_down row each).
struct slice {
    int n0, ns; // first output, outputs (a multiple of VEC)
};
template <int VEC> __device__ __forceinline__ slice slice_of(int f) {
    const long long ng = f / VEC, k = blockIdx.x, G = gridDim.x;
    const int g0 = (int)(k * ng / G), g1 = (int)((k + 1) * ng / G);
    return slice{g0 * VEC, (g1 - g0) * VEC};
}

template <typename T, int BT, int NT>
__global__ void __launch_bounds__(NT, 1) splitk_layer_kernel(const SplitkArgs<T> p) {
    constexpr int VEC = 16 / (int)sizeof(T);
    constexpr int PL = VEC / 4;
    constexpr int NW = NT / 32;
    constexpr int P = sizeof(T) == 2 && BT <= 2 ? 3 : depth_of<T, BT, false>(); // no spills
    constexpr int PD = sizeof(T) == 4 && BT == 1 ? 6 : 8; // down-pass steps in flight (2 loads)
    constexpr int V = kRows * BT;
    constexpr int G = 32 / V;
    extern __shared__ __align__(16) unsigned char smem[];
    const gr_dec_splitk_layout Ly = gr_dec_splitk_smem_layout(BT, p.d, p.rank, p.nsmax, NW);
    unsigned char *sx = smem + Ly.h;
    float *ssq_w = reinterpret_cast<float *>(smem + Ly.ssq);
    float *srstd = reinterpret_cast<float *>(smem + Ly.rstd);
    float *wl = reinterpret_cast<float *>(smem + Ly.lora);
    float *sact = reinterpret_cast<float *>(smem + Ly.sact);
    float *sad = reinterpret_cast<float *>(smem + Ly.ad);
    float *sts = reinterpret_cast<float *>(smem + Ly.ts);
    float *xpart = reinterpret_cast<float *>(smem + Ly.xpart);

    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int B = p.B, d = p.d, f = p.f, rank = p.rank, nb = min(B, BT);
    const int nch = d / VEC, nsteps = (nch + 31) / 32, nsp = (nsteps + P - 1) / P * P;
    const slice sl = slice_of<VEC>(f);
    const int nt = sl.ns / 2; // act tasks of the slice (2 outputs each)
    const int Gd = (int)gridDim.x, kb = (int)blockIdx.x;
    // LoRA-A tasks (4 of the 2r rows each) go to the last warp of the blocks with the smaller
    // slices (q granules, the others q + 1), where that warp is short of an act task: the
    // small block of rank s among them gets a = s + j nsmall; s = k (q + 1) - g0(k) counts the
    // small blocks before k (the sizes before k sum to g0 = k q + the number of large ones).
    const int nA = 2 * rank / kRows;
    const int ng = f / VEC, qg = ng / Gd, g0 = sl.n0 / VEC;
    const int nsmall = Gd - (ng - qg * Gd);
    const bool small = sl.ns / VEC == qg;
    const int a0 = kb * (qg + 1) - g0, astride = nsmall;
    const int nAw = warp == NW - 1 && small && a0 < nA ? (nA - a0 + astride - 1) / astride : 0;
    const int nAct = warp < nt ? (nt - warp + NW - 1) / NW : 0;
    const int nI = nAw + nAct;
    // item q: a LoRA-A task (q < nAw) or act task (q - nAw): its row r's start
    auto row_of = [&](int it, int r) -> const T * {
        if (it < nAw) {
            const int i = (a0 + it * astride) * kRows + r;
            return i < rank ? p.Ag + (size_t)i * d : p.Au + (size_t)(i - rank) * d;
        }
        const size_t n = (size_t)sl.n0 + 2u * (size_t)(warp + (it - nAw) * NW) + (size_t)(r >> 1);
        return ((r & 1) ? p.Wu : p.Wg) + n * (size_t)d;
    };

    kmark(p.ts, 0);
    uint4 buf[P][kRows];
    if (nI > 0) {
        auto rows = [&](int r) { return row_of(0, r); };
#pragma unroll
        for (int s = 0; s < P; s++) {
            const int c = lane + s * 32;
            issue<T>(buf[s], rows, c, s < nsteps && c < nch);
        }
    }
    for (int c = tid * 8; c < nch; c += NT * 8)
        prefetch_l2(p.w + (size_t)c * VEC);
    for (int j = tid; j < rank; j += NT)
        prefetch_l2(p.Ad + (size_t)j * f + sl.n0);
    gr_pdl_enter(); // everything below may depend on the previous kernel
    kmark(p.ts, 1);

    // 1. stage h = x * w_norm (x rounded to T) and the sums of squares
    {
        constexpr int U = 4;
        float sq[BT];
#pragma unroll
        for (int b = 0; b < BT; b++)
            sq[b] = 0.f;
        float4 *s4 = reinterpret_cast<float4 *>(sx);
        for (int i0 = tid; i0 < BT * nch; i0 += U * NT) {
            float4 xv[U][PL];
            uint4 wv[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = i0 + u * NT, b = i / nch, c = i - b * nch;
                const bool in = i < BT * nch && b < nb;
#pragma unroll
                for (int q = 0; q < PL; q++)
                    xv[u][q] = in ? __ldcg(reinterpret_cast<const float4 *>(
                                        p.xin + (size_t)b * d + (size_t)c * VEC + 4 * q))
                                  : make_float4(0.f, 0.f, 0.f, 0.f);
                wv[u] = i < BT * nch ? *reinterpret_cast<const uint4 *>(p.w + (size_t)c * VEC)
                                     : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = i0 + u * NT, b = i / nch, c = i - b * nch;
                if (i >= BT * nch) continue;
                float xf[VEC], wf[VEC];
#pragma unroll
                for (int q = 0; q < PL; q++) {
                    xf[4 * q] = xv[u][q].x, xf[4 * q + 1] = xv[u][q].y;
                    xf[4 * q + 2] = xv[u][q].z, xf[4 * q + 3] = xv[u][q].w;
                }
                unpack16<T>(wv[u], wf);
                float s = 0.f;
#pragma unroll
                for (int e = 0; e < VEC; e++) {
                    xf[e] = to_f(from_f<T>(xf[e])); // x as the per-layer kernels store it
                    s = fmaf(xf[e], xf[e], s);
                    xf[e] *= wf[e];
                }
#pragma unroll
                for (int bb = 0; bb < BT; bb++)
                    if (bb == b) sq[bb] += s;
#pragma unroll
                for (int q = 0; q < PL; q++)
                    s4[(size_t)(b * PL + q) * nch + c] =
                        make_float4(xf[4 * q], xf[4 * q + 1], xf[4 * q + 2], xf[4 * q + 3]);
            }
        }
#pragma unroll
        for (int b = 0; b < BT; b++) {
            float v = sq[b];
#pragma unroll
            for (int o = 16; o >= 1; o >>= 1)
                v += __shfl_xor_sync(kFull, v, o);
            if (lane == 0) ssq_w[warp * BT + b] = v;
        }
    }
    // the slice's A_down columns, for ts after the task loop (one L2 round trip now, not one
    // per column then)
    for (int i = tid; i < rank * (sl.ns / VEC); i += NT) {
        const int j = i / (sl.ns / VEC), c = i - j * (sl.ns / VEC);
        float a[VEC];
        unpack16<T>(*reinterpret_cast<const uint4 *>(p.Ad + (size_t)j * f + sl.n0 + c * VEC), a);
#pragma unroll
        for (int e = 0; e < VEC; e++)
            sad[j * p.nsmax + c * VEC + e] = a[e];
    }
    __syncthreads();
    if (tid < BT) {
        float s = 0.f;
        for (int w = 0; w < NW; w++)
            s += ssq_w[w * BT + tid];
        srstd[tid] = tid < nb ? rsqrtf(s / (float)d + p.eps) : 0.f;
    }
    __syncthreads();
    kmark(p.ts, 2);

    // 3. the slice's share of the layer output. Lanes of a row: LPR (a power of two >= the
    // slice's 16-byte chunks per W_down row and the r / VEC chunks of a B_down row); lane j of a
    // row loads W_down chunk j (HBM) and B_down chunk j (L2) of it.
    const int LPR = p.lpr, RG = NT / LPR, lir = lane & (LPR - 1), rsub = tid / LPR;
    const int nsv = sl.ns / VEC, rv = rank / VEC;
    const bool hasW = lir < nsv, hasB = lir < rv;
    const int nit = (d + RG - 1) / RG;
    uint4 dw[PD], db[PD];
    auto dissue = [&](int s, int it) {
        const int m = it * RG + rsub;
        const bool ok = it < nit && m < d;
        dw[s] = ok && hasW ? ld_stream(p.Wd + (size_t)m * f + sl.n0 + (size_t)lir * VEC)
                           : make_uint4(0, 0, 0, 0);
        db[s] = ok && hasB ? ld_stream(p.Bd + (size_t)m * rank + (size_t)lir * VEC)
                           : make_uint4(0, 0, 0, 0);
    };
    // 2. the warp's items: the rolling pipeline of decode_gate_up (one warp per task)
    float *my_lora = wl + (size_t)warp * 2 * rank * BT;
    bool have_lora = false;
    for (int q = 0; q < nI; q++) {
        const bool is_a = q < nAw;
        const int n0 = is_a ? 0 : sl.n0 + 2 * (warp + (q - nAw) * NW);
        auto brows = [&](int r) {
            return ((r & 1) ? p.Bu : p.Bg) + ((size_t)n0 + (size_t)(r >> 1)) * (size_t)rank;
        };
        if (!is_a) lora_prefetch<T>(brows, rank, lane, 32);
        float acc[kRows][BT];
#pragma unroll
        for (int r = 0; r < kRows; r++)
#pragma unroll
            for (int b = 0; b < BT; b++)
                acc[r][b] = 0.f;
        for (int s0 = 0; s0 < nsp; s0 += P) {
            const bool last = s0 + P >= nsp;
            const int iq = last ? q + 1 : q, is0 = last ? 0 : s0 + P;
            auto irows = [&](int r) { return row_of(iq, r); };
#pragma unroll
            for (int s = 0; s < P; s++) {
                const int c = lane + (s0 + s) * 32;
                if (s0 + s < nsteps && c < nch) consume<T, BT, true>(buf[s], c, nch, sx, acc);
                const int ic = lane + (is0 + s) * 32;
                issue<T>(buf[s], irows, ic, iq < nI && is0 + s < nsteps && ic < nch);
            }
        }
        if (is_a) {
            const float tot = task_sums<BT>(acc, lane);
            const int idx = lane / G, r = idx / BT, b = idx - r * BT;
            if (lane % G == 0 && b < nb)
                publish(p.tin + (size_t)((a0 + q * astride) * kRows + r) * B + b, tot);
            continue;
        }
        if (!have_lora) {
            // 4 slots per lane at a time, loaded before any is looked at (one L2 round trip
            // each time, not one per slot)
            for (int i0 = lane; i0 < 2 * rank * BT; i0 += 4 * 32) {
                float v[4];
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    const int i = i0 + u * 32, kj = i / BT, b = i - kj * BT;
                    v[u] =
                        i < 2 * rank * BT && b < nb ? ld_relaxed(p.tin + (size_t)kj * B + b) : 0.f;
                }
#pragma unroll
                for (int u = 0; u < 4; u++) {
                    const int i = i0 + u * 32, kj = i / BT, b = i - kj * BT;
                    if (i >= 2 * rank * BT) continue;
                    if (b < nb && __float_as_uint(v[u]) == kUnpublished)
                        v[u] = wait_published(p.tin + (size_t)kj * B + b);
                    my_lora[i] = p.scale * v[u];
                }
            }
            __syncwarp();
            have_lora = true;
        }
        lora_rows<T, BT>(brows, true, rank, lane, 32, my_lora, acc);
        const float tot = task_sums<BT>(acc, lane);
        const float u = __shfl_down_sync(kFull, tot, 8); // up row: BT * G = 8 lanes above
        const int idx = lane / G, r = idx / BT, b = idx - r * BT;
        if (lane % G == 0 && !(r & 1) && b < nb) {
            const float g = srstd[b] * tot, uu = srstd[b] * u;
            const T at = from_f<T>(g / (1.f + __expf(-g)) * uu);
            const int n = n0 + (r >> 1);
            p.act[(size_t)b * f + n] = at;
            sact[b * p.nsmax + (n - sl.n0)] = to_f(at);
        }
    }

    // the first PD down steps: in flight during the act barrier (issued any earlier, in the task
    // loop, they spill the pipeline's registers)
#pragma unroll
    for (int s = 0; s < PD; s++)
        dissue(s, s);
    kmark(p.ts, 3);
    __syncthreads(); // the slice's act is complete
    kmark(p.ts, 4);
    for (int i = tid; i < rank * BT; i += NT) {
        const int j = i / BT, b = i - j * BT;
        const float *a = sad + j * p.nsmax;
        float s = 0.f;
        for (int n = 0; n < sl.ns; n++)
            s = fmaf(a[n], sact[b * p.nsmax + n], s);
        sts[i] = p.scale * s;
    }
    __syncthreads();
    kmark(p.ts, 5);
    for (int it0 = 0; it0 < nit; it0 += PD) {
#pragma unroll
        for (int s = 0; s < PD; s++) {
            const int it = it0 + s;
            if (it >= nit) break; // uniform across the block
            float a[BT];
#pragma unroll
            for (int b = 0; b < BT; b++)
                a[b] = 0.f;
            float wf[VEC];
            if (hasW) {
                unpack16<T>(dw[s], wf);
#pragma unroll
                for (int b = 0; b < BT; b++) {
                    const float *sa = sact + b * p.nsmax + lir * VEC;
#pragma unroll
                    for (int e = 0; e < VEC; e++)
                        a[b] = fmaf(wf[e], sa[e], a[b]);
                }
            }
            unpack16<T>(db[s], wf);
            if (hasB)
#pragma unroll
                for (int e = 0; e < VEC; e++)
#pragma unroll
                    for (int b = 0; b < BT; b++)
                        a[b] = fmaf(wf[e], sts[(lir * VEC + e) * BT + b], a[b]);
            for (int o = LPR / 2; o >= 1; o >>= 1)
#pragma unroll
                for (int b = 0; b < BT; b++)
                    a[b] += __shfl_xor_sync(kFull, a[b], o);
            const int m = it * RG + rsub;
            if (lir == 0 && m < d)
#pragma unroll
                for (int b = 0; b < BT; b++)
                    if (b < nb) xpart[b * d + m] = a[b];
            dissue(s, it + PD);
        }
    }
    __syncthreads();
    kmark(p.ts, 6);
    for (int i = tid; i < nb * (d / 4); i += NT) {
        const int b = i / (d / 4), m = (i - b * (d / 4)) * 4;
        float4 v = *reinterpret_cast<const float4 *>(xpart + b * d + m);
        if (kb == 0) { // the residual x_l, as rounded where the per-layer kernels store it
            const float4 x = __ldcg(reinterpret_cast<const float4 *>(p.xin + (size_t)b * d + m));
            v.x += to_f(from_f<T>(x.x)), v.y += to_f(from_f<T>(x.y));
            v.z += to_f(from_f<T>(x.z)), v.w += to_f(from_f<T>(x.w));
        }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        atomicAdd(reinterpret_cast<float4 *>(p.xout + (size_t)b * d + m), v);
#else
        float *o = p.xout + (size_t)b * d + m;
        atomicAdd(o, v.x), atomicAdd(o + 1, v.y), atomicAdd(o + 2, v.z), atomicAdd(o + 3, v.w);
#endif
    }
    kmark(p.ts, 7);
}

// prep: xs[0] = x in fp32, xs[1 .. L] = 0, every published slot reset.
template <typename T>
__global__ void __launch_bounds__(256)
    splitk_prep_kernel(const T *x, float *xs, long long nx, long long nxs, float *tin,
                       long long ntin) {
    gr_pdl_enter();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nxs; i += stride)
        xs[i] = i < nx ? to_f(ldcg_elem(x + i)) : 0.f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < ntin; i += stride)
        tin[i] = __uint_as_float(kUnpublished);
}

// finish: x = the last layer's accumulator, rounded to the weight dtype.
template <typename T>
__global__ void __launch_bounds__(256) splitk_finish_kernel(const float *xl, T *x, long long nx) {
    gr_pdl_enter();
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < nx; i += stride)
        x[i] = from_f<T>(__ldcg(xl + i));
}

template <typename T> void (*layer_kernel_for(long long bt))(SplitkArgs<T>) {
    switch (bt) {
    case 1:
        return splitk_layer_kernel<T, 1, GR_DEC_K_THREADS(1)>;
    case 2:
        return splitk_layer_kernel<T, 2, GR_DEC_K_THREADS(2)>;
    case 4:
        return splitk_layer_kernel<T, 4, GR_DEC_K_THREADS(4)>;
    case 8:
        return splitk_layer_kernel<T, 8, GR_DEC_K_THREADS(8)>;
    default:
        return nullptr;
    }
}

struct splitk_state {
    float *scratch; // xs [(L + 1) B d], then tin [L 2r B], then the GR_STEP_TIMES stamps
    size_t times_off, times_n;
    unsigned grid;
    char times_path[512];
};
size_t xs_floats(long long L, long long B, long long d) {
    return (size_t)((L + 1) * B * d + 3) / 4 * 4;
}

int aux_blocks(long long n, int sm_count) {
    long long b = (n + 255) / 256;
    if (b > 2LL * sm_count) b = 2LL * sm_count;
    return b < 1 ? 1 : (int)b;
}

template <typename T>
gr_status launch_splitk_t(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    const splitk_state *st = (const splitk_state *)ctx->op_state;
    void (*kernel)(SplitkArgs<T>) = layer_kernel_for<T>(op->ip[GR_DEC_BT]);
    if (!st || !kernel)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                            "%s: no scratch from setup() or batch tile %lld", op->kernel->name,
                            (long long)op->ip[GR_DEC_BT]);
    void *const *dp = ctx->dptr;
    const int L = (op->ninputs - 1) / GR_DEC_P_PER_LAYER;
    const int B = (int)op->ip[GR_DEC_B], d = (int)op->ip[GR_DEC_K], f = (int)op->ip[GR_DEC_N];
    const int r = (int)op->ip[GR_DEC_RANK];
    const long long nx = (long long)B * d;
    float *xs = st->scratch, *tin = st->scratch + xs_floats(L, B, d);
    T *x = (T *)dp[op->outputs[0]];
    const int aux = aux_blocks((long long)(L + 1) * nx, ctx->sm_count > 0 ? ctx->sm_count : 1);
    GR_CUDA(gr_launch(splitk_prep_kernel<T>, dim3(aux), dim3(256), 0, ctx, (const T *)x, xs, nx,
                      (long long)(L + 1) * nx, tin, (long long)L * 2 * r * B),
            err);
    for (int l = 0; l < L; l++) {
        auto W = [&](int k) { return (const T *)dp[op->inputs[1 + GR_DEC_P_PER_LAYER * l + k]]; };
        SplitkArgs<T> a;
        a.xin = xs + (size_t)l * nx;
        a.xout = xs + (size_t)(l + 1) * nx;
        a.w = W(GR_DEC_P_WNORM);
        a.Wg = W(GR_DEC_P_WGATE);
        a.Wu = W(GR_DEC_P_WUP);
        a.Wd = W(GR_DEC_P_WDOWN);
        a.Ag = W(GR_DEC_P_AGATE);
        a.Au = W(GR_DEC_P_AUP);
        a.Ad = W(GR_DEC_P_ADOWN);
        a.Bg = W(GR_DEC_P_BGATE);
        a.Bu = W(GR_DEC_P_BUP);
        a.Bd = W(GR_DEC_P_BDOWN);
        a.tin = tin + (size_t)l * 2 * r * B;
        a.act = (T *)dp[op->outputs[1]];
        a.B = B;
        a.d = d;
        a.f = f;
        a.rank = r;
        a.lpr = (int)op->ip[GR_DEC_K_LPR];
        a.nsmax = (int)op->ip[GR_DEC_K_NSMAX];
        a.ts = st->times_n ? (unsigned long long *)((unsigned char *)st->scratch + st->times_off) +
                                 (size_t)l * op->grid[0] * kKMarks
                           : nullptr;
        a.scale = (float)op->fp[0];
        a.eps = (float)op->fp[1];
        GR_CUDA(gr_launch(kernel, dim3(op->grid[0]), dim3(op->block[0]), op->smem, ctx, a), err);
    }
    const int fin = aux_blocks(nx, ctx->sm_count > 0 ? ctx->sm_count : 1);
    GR_CUDA(gr_launch(splitk_finish_kernel<T>, dim3(fin), dim3(256), 0, ctx,
                      (const float *)(xs + (size_t)L * nx), x, nx),
            err);
    return gr_launch_status(op->kernel->name, op->path, err);
}

template <typename K> gr_status carveout_100(K kernel, gr_error *err) {
    GR_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, 100), err);
    return GR_OK;
}

// The layer kernel's shared-memory limit, one carveout for the three kernels (a change of L1 /
// shared split between kernels keeps PDL from starting the next kernel's blocks early:
// docs/decode_step.md), and the check that the grid is resident at once (the published slots).
template <typename T>
gr_status setup_splitk_t(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    void (*kernel)(SplitkArgs<T>) = layer_kernel_for<T>(op->ip[GR_DEC_BT]);
    if (!kernel)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "%s: batch tile %lld", op->kernel->name,
                            (long long)op->ip[GR_DEC_BT]);
    int dev = 0, optin = 0, per_sm = 0;
    GR_CUDA(cudaGetDevice(&dev), err);
    GR_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), err);
    if ((size_t)optin < op->smem)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\" needs %.1f KB of shared memory per block; this device "
                            "allows %.1f KB. Use smaller d or B, or the fused variant",
                            op->kernel->name, (double)op->smem / 1024.0, (double)optin / 1024.0);
    GR_CUDA(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)op->smem),
        err);
    GR_TRY(carveout_100(kernel, err));
    GR_TRY(carveout_100(splitk_prep_kernel<T>, err));
    GR_TRY(carveout_100(splitk_finish_kernel<T>, err));
    GR_CUDA(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, (int)op->block[0], op->smem),
        err);
    if ((long long)per_sm * ctx->sm_count < (long long)op->grid[0])
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": its %u blocks must all be resident at once (they "
                            "wait for values other blocks publish), but this device holds %d per "
                            "SM x %d SMs. The plan was made for %d SMs (target %s); run on the "
                            "device the plan is for, or use the fused variant",
                            op->kernel->name, op->grid[0], per_sm, ctx->sm_count,
                            ctx->plan->target.sm_count, ctx->plan->target.name);
    return GR_OK;
}

gr_status setup_splitk_kernel(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    GR_DEC_DISPATCH(weight_dtype(op, ctx), setup_splitk_t)
}

} // namespace

extern "C" gr_status gr_launch_decode_step_splitk(const gr_op *op, const gr_launch_ctx *ctx,
                                                  gr_error *err) {
    GR_DEC_DISPATCH(weight_dtype(op, ctx), launch_splitk_t)
}

// GR_STEP_TIMES: "layer,block,t0,...,t7" in ns from the last launch's earliest stamp.
static void write_splitk_times(const splitk_state *s) {
    const size_t grid = s->grid;
    write_stamps(s->times_path, (unsigned char *)s->scratch + s->times_off, s->times_n, kKMarks,
                 "layer,block,t0,t1,t2,t3,t4,t5,t6,t7",
                 [grid](FILE *f, size_t i) { fprintf(f, "%zu,%zu", i / grid, i % grid); });
}

extern "C" void gr_teardown_decode_step_splitk(void *state) {
    splitk_state *s = (splitk_state *)state;
    if (!s) return;
    if (s->times_n) write_splitk_times(s);
    if (s->scratch) cudaFree(s->scratch);
    free(s);
}

extern "C" gr_status gr_setup_decode_step_splitk(const gr_op *op, const gr_launch_ctx *ctx,
                                                 void **state, gr_error *err) {
    *state = nullptr;
    GR_TRY(setup_splitk_kernel(op, ctx, err));
    const long long L = (op->ninputs - 1) / GR_DEC_P_PER_LAYER, B = op->ip[GR_DEC_B];
    const long long d = op->ip[GR_DEC_K], r = op->ip[GR_DEC_RANK];
    const size_t n = xs_floats(L, B, d) + (size_t)(L * 2 * r * B);
    splitk_state *s = (splitk_state *)calloc(1, sizeof(splitk_state));
    if (!s) return gr_error_set(err, GR_ERR_NOMEM, op->path, "out of host memory");
    const char *times = getenv("GR_STEP_TIMES");
    size_t bytes = (n * sizeof(float) + 7u) / 8u * 8u;
    if (times && *times) {
        snprintf(s->times_path, sizeof(s->times_path), "%s", times);
        s->times_off = bytes;
        s->times_n = (size_t)L * op->grid[0] * kKMarks;
        s->grid = op->grid[0];
        bytes += s->times_n * 8u;
    }
    cudaError_t rc = cudaMalloc(&s->scratch, bytes);
    if (rc == cudaSuccess) rc = cudaMemset(s->scratch, 0, bytes);
    if (rc != cudaSuccess) {
        if (s->scratch) cudaFree(s->scratch);
        free(s);
        return gr_cuda_fail(rc, "cudaMalloc/cudaMemset(decode_step_splitk scratch)", __FILE__,
                            __LINE__, err);
    }
    *state = s;
    return GR_OK;
}
