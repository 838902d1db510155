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
// per 2-byte weight: memory-bound by far (at ~4.3 TB/s: 15.6 us + 7.8 us per layer), so the
// kernels are built to keep HBM busy from their first instruction to their last:
//   - weights are read once with 16-byte ld.global.nc.L1::no_allocate loads through a rolling
//     register pipeline: each lane keeps P steps of 4 rows x 16 bytes in flight (P = 4: 16 loads,
//     256 bytes per lane, 128 KB per SM), issuing one step for every step it consumes, across
//     task boundaries, so the loads of the next task are in flight during this task's reduction
//     and epilogue (the old kernels issued a batch, waited for all of it, computed, repeated);
//   - the first P steps are issued at kernel entry, before griddepcontrol.wait and before the
//     activations are staged: weights depend on nothing, so HBM starts streaming while the
//     block waits for the previous kernel and stages its activations from L2;
//   - the activations of a batch tile (BT <= 8 rows) sit in shared memory (fp32 x*w_norm for
//     gate_up; act in the weight dtype for down), read as 16-byte vectors without bank conflicts;
//   - a task is 4 output rows; a team of TW warps splits its K dim. The warp's partial sums are
//     reduced with a butterfly reduce-scatter (4 BT + 4 - log2(4 BT) shuffles instead of
//     20 BT); teams of one warp need no barrier at all, larger teams a named barrier of their
//     own (bar.sync team+1), never a block-wide one inside the task loop;
//   - per-lane running sums (A_down act, the next layer's statistics) stay in registers across
//     a team's tasks and meet in shared memory once, at the end; each block then adds its
//     partials to the global accumulators with one vector atomic (float4 / float2 on sm_90) per
//     statistic and batch tile where B allows (the old kernels issued one scalar atomic per
//     value and block: at B = 4 the statistics' 34 K same-line atomics per kernel cost ~3 us);
//   - the grid is 1-2 blocks of 256 threads per SM; teams are numbered across blocks first, so
//     a task count that is not a multiple of the team count spreads over all SMs.
// B > the op's gemv_max_b (at most GR_DEC_GEMV_MAX_B = 8; the check sets GR_DEC_F_BLAS): past 8
// rows the GEMV would re-read every weight once per batch tile, and below that the workload may
// hand over earlier where cuBLAS is measured faster; the main products go through cublasGemmEx
// (fp32 output in the op's scratch) and small kernels do x * w_norm before and the LoRA terms,
// silu * u, residual and statistics after.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/cuda_check.h"
#include "core/dtype.h"
#include "kernels/decode.h"
#include "kernels/gemm.h"
#include "kernels/decode_dev.cuh"
#include "kernels/launch.cuh"

namespace {

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
// Teams are numbered across the tile's blocks first (team t of block i is t * bpt + i), so the
// tasks left over after whole rounds spread over all blocks instead of filling the first ones.
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

// gate_up task t computes outputs n0 = 2t and 2t + 1: rows (gate n0, up n0, gate n0+1, up n0+1).
// N is a multiple of 4 (the check: f a multiple of 16 bytes), so both outputs exist; a task past
// the end (issued for a team that has no next task) is clamped, and loads nothing.
template <typename T> struct gate_up_row {
    const GateUpArgs<T> &p;
    size_t n0;
    __device__ gate_up_row(const GateUpArgs<T> &a, int task)
        : p(a), n0((size_t)2 * (size_t)min(task, a.N / 2 - 1)) {}
    __device__ const T *operator()(int r) const {
        return ((r & 1) ? p.Wu : p.Wg) + (n0 + (size_t)(r >> 1)) * (size_t)p.K;
    }
};
template <typename T> struct gate_up_brow {
    const GateUpArgs<T> &p;
    size_t n0;
    __device__ const T *operator()(int r) const {
        return ((r & 1) ? p.Bu : p.Bg) + (n0 + (size_t)(r >> 1)) * (size_t)p.rank;
    }
};
template <typename T> struct down_row {
    const DownArgs<T> &p;
    size_t m0;
    __device__ down_row(const DownArgs<T> &a, int task)
        : p(a), m0((size_t)kRows * (size_t)min(task, a.N / kRows - 1)) {}
    __device__ const T *operator()(int r) const {
        return p.Wd + (m0 + (size_t)r) * (size_t)p.K;
    }
};
template <typename T> struct down_brow {
    const DownArgs<T> &p;
    size_t m0;
    __device__ const T *operator()(int r) const {
        return p.Bd + (m0 + (size_t)r) * (size_t)p.rank;
    }
};

// The kernels' bodies take the point where they may start to depend on earlier work as a
// functor: the per-layer kernels wait for the previous kernel (PDL), the step kernel at a grid
// barrier. Everything before it touches weights only.
struct pdl_wait {
    __device__ __forceinline__ void operator()() const {
        gr_pdl_enter();
    }
};

// Activations, statistics and accumulators are written by other blocks of the same grid in the
// step kernel: they are read through L2 (ld.global.cg), never from a possibly stale L1 line.
template <typename T, int BT, int P, typename Wait>
__device__ __forceinline__ void gate_up_body(const GateUpArgs<T> &p, unsigned char *smem,
                                             const Wait &wait) {
    constexpr int VEC = 16 / (int)sizeof(T);
    constexpr int PL = VEC / 4; // fp32 planes per chunk
    constexpr int V = kRows * BT;
    constexpr int G = 32 / V; // lanes that hold one reduced value
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
    const int ntasks = N / 2;
    const int tstride = bp.bpt * teams;
    const int nsteps = (nch + tthreads - 1) / tthreads;
    const int nsp = (nsteps + P - 1) / P * P; // steps per task, padded to whole pipeline rounds
    int task = team * bp.bpt + bp.bib;

    // Weights only before the wait: the first P steps of this lane's first task.
    uint4 buf[P][kRows];
    {
        const gate_up_row<T> rows(p, task);
#pragma unroll
        for (int s = 0; s < P; s++) {
            const int c = tt + s * tthreads;
            issue<T>(buf[s], rows, c, task < ntasks && s < nsteps && c < nch);
        }
    }
    // w_norm is a weight too: into L2 now, so that staging x * w_norm after the wait only
    // waits for L2 (x is the previous kernel's output and cannot be fetched early)
    for (int c = tid * 8; c < nch; c += kThreads * 8)
        prefetch_l2(p.w + (size_t)c * VEC);
    wait(); // everything below may depend on the previous kernel
    if (blockIdx.x == 0) { // the next layer's statistics, accumulated by the down kernel next
        if (p.zero_ssq)
            for (int i = tid; i < p.B; i += kThreads)
                p.zero_ssq[i] = 0.f;
        if (p.zero_tin)
            for (int i = tid; i < 2 * rank * p.B; i += kThreads)
                p.zero_tin[i] = 0.f;
    }
    // stage x * w_norm (fp32) for the tile's rows; rows past B are zero. U chunks of x and of
    // w_norm in flight per thread, loaded before any is used: BT * nch <= U * 256 (e.g. fp32 B4
    // at d = 1024: 1024 chunks) takes one L2 round trip after the wait instead of one per chunk.
    {
        constexpr int U = 4;
        float4 *s4 = reinterpret_cast<float4 *>(sx);
        for (int i0 = tid; i0 < BT * nch; i0 += U * kThreads) {
            uint4 xv[U], wv[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = i0 + u * kThreads, b = i / nch, c = i - b * nch;
                const bool in = i < BT * nch;
                xv[u] = in && b < bp.nb ? __ldcg(reinterpret_cast<const uint4 *>(
                                              p.x + (size_t)(bp.b0 + b) * K + (size_t)c * VEC))
                                        : make_uint4(0, 0, 0, 0);
                wv[u] = in ? *reinterpret_cast<const uint4 *>(p.w + (size_t)c * VEC)
                           : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = i0 + u * kThreads, b = i / nch, c = i - b * nch;
                if (i >= BT * nch) continue;
                float xf[VEC], wf[VEC];
                unpack16<T>(xv[u], xf); // zero past B
                unpack16<T>(wv[u], wf);
#pragma unroll
                for (int e = 0; e < VEC; e++)
                    xf[e] *= wf[e];
#pragma unroll
                for (int q = 0; q < PL; q++)
                    s4[(size_t)(b * PL + q) * nch + c] =
                        make_float4(xf[4 * q], xf[4 * q + 1], xf[4 * q + 2], xf[4 * q + 3]);
            }
        }
    }
    for (int i = tid; i < 2 * rank * BT; i += kThreads) { // [kind * rank + j][b]
        const int b = i % BT, kj = i / BT;
        lora[i] = b < bp.nb ? p.scale * __ldcg(p.tin + (size_t)kj * p.B + bp.b0 + b) : 0.f;
    }
    if (tid < BT)
        srstd[tid] = tid < bp.nb ? rsqrtf(__ldcg(p.ssq + bp.b0 + tid) / (float)K + p.eps) : 0.f;
    for (int i = tid; i < rank * BT; i += kThreads)
        std_acc[i] = 0.f;
    __syncthreads();

    // A_down act for j = tt (the first of the j this thread owns), summed over the team's tasks
    // in registers; further j (rank > team threads) go to shared memory per task.
    float tda[BT];
#pragma unroll
    for (int b = 0; b < BT; b++)
        tda[b] = 0.f;

    for (; task < ntasks; task += tstride) { // the bound is uniform across the team
        const int n0 = 2 * task;
        const int next = task + tstride;
        // The epilogue's operands (LoRA-B rows, A_down[tt][n0..n0+1]) are prefetched into L2
        // now and loaded after the stream: registers stay with the weight pipeline, and the
        // next task's P steps are in flight while these loads wait on L2.
        const gate_up_brow<T> brows{p, (size_t)n0};
        lora_prefetch<T>(brows, rank, tt, tthreads);
        if (tt < rank) prefetch_l2(p.Ad + (size_t)tt * N + n0);

        float acc[kRows][BT];
#pragma unroll
        for (int r = 0; r < kRows; r++)
#pragma unroll
            for (int b = 0; b < BT; b++)
                acc[r][b] = 0.f;
        for (int s0 = 0; s0 < nsp; s0 += P) {
            // buf[s] holds step s0 + s of this task; refill it with the step P later, which in
            // the last round is step s of the team's next task.
            const bool last = s0 + P >= nsp;
            const int itask = last ? next : task, is0 = last ? 0 : s0 + P;
            const gate_up_row<T> irows(p, itask);
#pragma unroll
            for (int s = 0; s < P; s++) {
                const int c = tt + (s0 + s) * tthreads;
                if (s0 + s < nsteps && c < nch) consume<T, BT, true>(buf[s], c, nch, sx, acc);
                const int ic = tt + (is0 + s) * tthreads;
                issue<T>(buf[s], irows, ic, itask < ntasks && is0 + s < nsteps && ic < nch);
            }
        }
        float adr[2] = {0.f, 0.f}; // A_down[tt][n0 + pp]
        if (tt < rank) {
            const T *a = p.Ad + (size_t)tt * N + n0;
            adr[0] = to_f(a[0]);
            adr[1] = to_f(a[1]);
        }
        lora_rows<T, BT>(brows, true, rank, tt, tthreads, lora, acc);

        float v[V];
#pragma unroll
        for (int r = 0; r < kRows; r++)
#pragma unroll
            for (int b = 0; b < BT; b++)
                v[r * BT + b] = acc[r][b];
        const float tot = reduce_scatter<V>(v, lane); // value (lane / G) = row * BT + b
        if (TW == 1) {
            // Row r + 1 (up) of (pair, b) sits BT * G = 8 lanes above row r (gate); the act of
            // (pair, b) is computed at lane (2 pair BT + b) G.
            const float u = __shfl_down_sync(kFull, tot, 8);
            const int idx = lane / G, r = idx / BT, b = idx - r * BT;
            float a = 0.f;
            if (lane % G == 0 && !(r & 1) && b < bp.nb) {
                const float g = srstd[b] * tot, uu = srstd[b] * u;
                const T at = from_f<T>(g / (1.f + __expf(-g)) * uu);
                p.act[(size_t)(bp.b0 + b) * N + n0 + (r >> 1)] = at;
                a = to_f(at); // the rounded value, as the down kernel will read it
            }
#pragma unroll
            for (int pp = 0; pp < 2; pp++)
#pragma unroll
                for (int b = 0; b < BT; b++) {
                    const float av = __shfl_sync(kFull, a, (2 * pp * BT + b) * G);
                    if (tt < rank) tda[b] = fmaf(adr[pp], av, tda[b]);
                    for (int j = tt + 32; j < rank; j += 32)
                        atomicAdd(&std_acc[j * BT + b], to_f(p.Ad[(size_t)j * N + n0 + pp]) * av);
                }
        } else {
            float *rw = red + warp * V;
            if (lane % G == 0) rw[lane / G] = tot;
            team_sync(team, TW);
            if (tt < 2 * BT) { // one thread per (pair, batch row)
                const int pp = tt / BT, b = tt - pp * BT;
                float at_f = 0.f;
                if (b < bp.nb) {
                    float zg = 0.f, zu = 0.f;
                    for (int w = 0; w < TW; w++) {
                        const float *q = red + (team * TW + w) * V;
                        zg += q[(2 * pp) * BT + b];
                        zu += q[(2 * pp + 1) * BT + b];
                    }
                    const float g = srstd[b] * zg, u = srstd[b] * zu;
                    const T at = from_f<T>(g / (1.f + __expf(-g)) * u);
                    p.act[(size_t)(bp.b0 + b) * N + n0 + pp] = at;
                    at_f = to_f(at);
                }
                sact[(team * 2 + pp) * BT + b] = at_f;
            }
            team_sync(team, TW);
            const float *sa = sact + team * 2 * BT;
#pragma unroll
            for (int pp = 0; pp < 2; pp++)
#pragma unroll
                for (int b = 0; b < BT; b++) {
                    const float av = sa[pp * BT + b];
                    if (tt < rank) tda[b] = fmaf(adr[pp], av, tda[b]);
                    for (int j = tt + tthreads; j < rank; j += tthreads)
                        atomicAdd(&std_acc[j * BT + b], to_f(p.Ad[(size_t)j * N + n0 + pp]) * av);
                }
            // No barrier here: a warp rewrites red only after this task's second team_sync,
            // which the readers of red reach after reading it; sact only after the next task's
            // first, which the readers of sact reach after reading it.
        }
    }
    if (tt < rank)
#pragma unroll
        for (int b = 0; b < BT; b++)
            if (b < bp.nb) atomicAdd(&std_acc[tt * BT + b], tda[b]);
    __syncthreads();
    const int vec = red_vec(p.B, bp.b0);
    for (int j = tid; j < rank; j += kThreads)
        red_add(p.td + (size_t)j * p.B + bp.b0, std_acc + j * BT, bp.nb, vec);
}

template <typename T, int BT, int P>
__global__ void __launch_bounds__(kThreads, GR_DEC_BLOCKS_PER_SM(BT))
    gate_up_kernel(const GateUpArgs<T> p) {
    extern __shared__ __align__(16) unsigned char smem[];
    gate_up_body<T, BT, P>(p, smem, pdl_wait{});
}

template <typename T, int BT, int P, typename Wait>
__device__ __forceinline__ void down_body(const DownArgs<T> &p, unsigned char *smem,
                                          const Wait &wait) {
    constexpr int VEC = 16 / (int)sizeof(T);
    constexpr int V = kRows * BT;
    constexpr int G = 32 / V;
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
    const int ntasks = N / kRows; // N (d) is a multiple of 4
    const int nstat = p.ssq_next ? 2 * rank + 1 : 0;
    const int tstride = bp.bpt * teams;
    const int nsteps = (nch + tthreads - 1) / tthreads;
    const int nsp = (nsteps + P - 1) / P * P;
    int task = team * bp.bpt + bp.bib;

    uint4 buf[P][kRows];
    {
        const down_row<T> rows(p, task);
#pragma unroll
        for (int s = 0; s < P; s++) {
            const int c = tt + s * tthreads;
            issue<T>(buf[s], rows, c, task < ntasks && s < nsteps && c < nch);
        }
    }
    wait(); // everything below may depend on the previous kernel
    if (blockIdx.x == 0 && p.zero_td) // the next layer's gate_up accumulates into it
        for (int i = tid; i < rank * p.B; i += kThreads)
            p.zero_td[i] = 0.f;
    {
        uint4 *s4 = reinterpret_cast<uint4 *>(sx);
        constexpr int U = 8; // loads in flight per thread while staging (fp32 B4 at f = 4096:
                             // 4096 chunks, two round trips to L2 instead of four)
        for (int i0 = tid; i0 < BT * nch; i0 += U * kThreads) {
            uint4 v[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int i = i0 + u * kThreads, b = i / nch, c = i - b * nch;
                v[u] = i < BT * nch && b < bp.nb
                           ? __ldcg(reinterpret_cast<const uint4 *>(
                                 p.act + (size_t)(bp.b0 + b) * K + (size_t)c * VEC))
                           : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int u = 0; u < U; u++)
                if (i0 + u * kThreads < BT * nch) s4[i0 + u * kThreads] = v[u];
        }
    }
    for (int i = tid; i < rank * BT; i += kThreads) {
        const int b = i % BT, j = i / BT;
        lora[i] = b < bp.nb ? p.scale * __ldcg(p.td + (size_t)j * p.B + bp.b0 + b) : 0.f;
    }
    for (int i = tid; i < nstat * BT; i += kThreads)
        sst[i] = 0.f;
    __syncthreads();

    // Statistic j0 = tt (0: sum x^2; 1..r: A_gate (x w); r+1..2r: A_up (x w)) summed over the
    // team's tasks in registers; j0 + team threads (nstat > team threads: TW = 1, r >= 16) with
    // its coefficients also loaded early, but summed in shared memory per task.
    const int j0 = tt, j1 = tt + tthreads;
    float sacc[BT];
#pragma unroll
    for (int b = 0; b < BT; b++)
        sacc[b] = 0.f;

    for (; task < ntasks; task += tstride) { // the bound is uniform across the team
        const int m0 = task * kRows;
        const int next = task + tstride;
        // The epilogue's operands are prefetched into L2 now and loaded after the stream (see
        // gate_up): x at (row, b) for the thread that finishes it, the LoRA-B rows, and the
        // coefficients A[j][m] * w_next[m] of this thread's statistics j0, j1 for the 4 rows.
        const int xi = TW == 1 ? (lane % G == 0 ? lane / G : V) : tt;
        const bool has_x = xi < V && xi % BT < bp.nb;
        const T *xrow = p.x_in + (size_t)(bp.b0 + xi % BT) * N + m0 + xi / BT;
        if (has_x) prefetch_l2(xrow);
        const bool st0 = j0 > 0 && j0 < nstat, st1 = j1 < nstat;
        const T *arow0 = nullptr, *arow1 = nullptr;
        if (st0) {
            const int kd = (j0 - 1) / rank, jj = (j0 - 1) - kd * rank;
            arow0 = (kd ? p.Au_next : p.Ag_next) + (size_t)jj * N + m0;
            prefetch_l2(arow0);
        }
        if (st1) {
            const int kd = (j1 - 1) / rank, jj = (j1 - 1) - kd * rank;
            arow1 = (kd ? p.Au_next : p.Ag_next) + (size_t)jj * N + m0;
            prefetch_l2(arow1);
        }
        if (st0 || st1) prefetch_l2(p.w_next + m0);
        const down_brow<T> brows{p, (size_t)m0};
        lora_prefetch<T>(brows, rank, tt, tthreads);

        float acc[kRows][BT];
#pragma unroll
        for (int r = 0; r < kRows; r++)
#pragma unroll
            for (int b = 0; b < BT; b++)
                acc[r][b] = 0.f;
        for (int s0 = 0; s0 < nsp; s0 += P) {
            const bool last = s0 + P >= nsp;
            const int itask = last ? next : task, is0 = last ? 0 : s0 + P;
            const down_row<T> irows(p, itask);
#pragma unroll
            for (int s = 0; s < P; s++) {
                const int c = tt + (s0 + s) * tthreads;
                if (s0 + s < nsteps && c < nch) consume<T, BT, false>(buf[s], c, nch, sx, acc);
                const int ic = tt + (is0 + s) * tthreads;
                issue<T>(buf[s], irows, ic, itask < ntasks && is0 + s < nsteps && ic < nch);
            }
        }
        const float xo = has_x ? to_f(ldcg_elem(xrow)) : 0.f;
        float c0[kRows], c1[kRows], wn[kRows];
#pragma unroll
        for (int r = 0; r < kRows; r++)
            c0[r] = c1[r] = wn[r] = 0.f;
        if (st0 || st1) load4(p.w_next + m0, wn);
        if (st0) load4(arow0, c0);
        if (st1) load4(arow1, c1);
#pragma unroll
        for (int r = 0; r < kRows; r++)
            c0[r] *= wn[r], c1[r] *= wn[r];
        lora_rows<T, BT>(brows, false, rank, tt, tthreads, lora, acc);

        float v[V];
#pragma unroll
        for (int r = 0; r < kRows; r++)
#pragma unroll
            for (int b = 0; b < BT; b++)
                v[r * BT + b] = acc[r][b];
        const float tot = reduce_scatter<V>(v, lane); // value (lane / G) = row * BT + b
        const float *xs;                              // new x of the task: [row * BT + b]
        float xn_lane = 0.f;
        if (TW == 1) {
            const int idx = lane / G, r = idx / BT, b = idx - r * BT;
            if (lane % G == 0 && b < bp.nb) {
                const T xn = from_f<T>(xo + tot);
                p.x_out[(size_t)(bp.b0 + b) * N + m0 + r] = xn;
                xn_lane = to_f(xn);
            }
            xs = nullptr;
        } else {
            float *rw = red + warp * V;
            if (lane % G == 0) rw[lane / G] = tot;
            team_sync(team, TW);
            float *sx_team = sxn + team * V;
            if (tt < V) { // one thread per (row, batch row)
                const int r = tt / BT, b = tt - r * BT;
                float xf = 0.f;
                if (b < bp.nb) {
                    float y = 0.f;
                    for (int w = 0; w < TW; w++)
                        y += red[(team * TW + w) * V + tt];
                    const T xn = from_f<T>(xo + y);
                    p.x_out[(size_t)(bp.b0 + b) * N + m0 + r] = xn;
                    xf = to_f(xn);
                }
                sx_team[tt] = xf;
            }
            team_sync(team, TW);
            xs = sx_team;
        }
        if (nstat) {
#pragma unroll
            for (int r = 0; r < kRows; r++)
#pragma unroll
                for (int b = 0; b < BT; b++) {
                    const float xv =
                        TW == 1 ? __shfl_sync(kFull, xn_lane, (r * BT + b) * G) : xs[r * BT + b];
                    if (b >= bp.nb) continue;
                    if (j0 < nstat) sacc[b] = fmaf(j0 == 0 ? xv : c0[r], xv, sacc[b]);
                    if (j1 < nstat) atomicAdd(&sst[j1 * BT + b], c1[r] * xv);
                    for (int j = j1 + tthreads; j < nstat; j += tthreads) { // rank > 31: rare
                        const int kd = (j - 1) / rank, jj = (j - 1) - kd * rank;
                        const T *A = kd ? p.Au_next : p.Ag_next;
                        atomicAdd(&sst[j * BT + b],
                                  to_f(A[(size_t)jj * N + m0 + r]) * to_f(p.w_next[m0 + r]) * xv);
                    }
                }
        }
        // No barrier here: a warp rewrites red only after this task's second team_sync, which
        // the readers of red reach after reading it; sxn only after the next task's first,
        // which the readers of sxn (the statistics above) reach after reading it.
    }
    if (j0 < nstat)
#pragma unroll
        for (int b = 0; b < BT; b++)
            if (b < bp.nb) atomicAdd(&sst[j0 * BT + b], sacc[b]);
    __syncthreads();
    if (nstat) {
        const int vec = red_vec(p.B, bp.b0);
        for (int j = tid; j < nstat; j += kThreads)
            red_add(j == 0 ? p.ssq_next + bp.b0 : p.tin_next + (size_t)(j - 1) * p.B + bp.b0,
                    sst + j * BT, bp.nb, vec);
    }
}

template <typename T, int BT, int P>
__global__ void __launch_bounds__(kThreads, GR_DEC_BLOCKS_PER_SM(BT))
    down_kernel(const DownArgs<T> p) {
    extern __shared__ __align__(16) unsigned char smem[];
    down_body<T, BT, P>(p, smem, pdl_wait{});
}

// One block per (statistic j, batch row b): j = 0 is sum x^2, j = 1..r is A_gate[j-1] . (x*w),
// j = r+1..2r is A_up[j-r-1] . (x*w). Plain stores: every element of ssq and tin is written.
// 16-byte loads when d is a multiple of 16 bytes: at d = 2048 bf16 one chunk per thread, so a
// block is one round trip to memory (the scalar version walked d in 8 dependent strides).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    norm_stats_kernel(const T *x, const T *w, const T *Ag, const T *Au, float *ssq, float *tin,
                      float *zero_td, int B, int d, int rank) {
    constexpr int VEC = 16 / (int)sizeof(T);
    __shared__ float warp_sums[kWarps];
    gr_pdl_enter(); // x was written by the previous step's last kernel
    const int j = (int)blockIdx.x, b = (int)blockIdx.y, tid = (int)threadIdx.x;
    if (zero_td && j == 0 && b == 0)
        for (int i = tid; i < rank * B; i += kThreads)
            zero_td[i] = 0.f;
    const T *xb = x + (size_t)b * d;
    const T *A = nullptr;
    if (j > 0) {
        const int kind = (j - 1) / rank, jj = (j - 1) - kind * rank;
        A = (kind ? Au : Ag) + (size_t)jj * d;
    }
    float s = 0.f;
    if (d % VEC == 0) {
        for (int c = tid; c < d / VEC; c += kThreads) {
            float xf[VEC], of[VEC];
            unpack16<T>(*reinterpret_cast<const uint4 *>(xb + (size_t)c * VEC), xf);
            if (j == 0) {
#pragma unroll
                for (int e = 0; e < VEC; e++)
                    s = fmaf(xf[e], xf[e], s);
            } else {
                float wf[VEC];
                unpack16<T>(*reinterpret_cast<const uint4 *>(w + (size_t)c * VEC), wf);
                unpack16<T>(*reinterpret_cast<const uint4 *>(A + (size_t)c * VEC), of);
#pragma unroll
                for (int e = 0; e < VEC; e++)
                    s = fmaf(of[e], xf[e] * wf[e], s);
            }
        }
    } else if (j == 0) {
        for (int k = tid; k < d; k += kThreads) {
            const float v = to_f(xb[k]);
            s = fmaf(v, v, s);
        }
    } else {
        for (int k = tid; k < d; k += kThreads)
            s = fmaf(to_f(A[k]), to_f(xb[k]) * to_f(w[k]), s);
    }
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(kFull, s, o);
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

// ---------- decode_step: the whole step in one persistent kernel ----------
//
// The per-layer kernels stream at 98-99% of copy bandwidth when one launch covers several
// layers (gemv_stream) but ~72% as 2 launches per layer: each launch pays its block launch,
// staging and tail (~5 us), and with PDL the next kernel's blocks only become resident when
// this one's retire. decode_step keeps one grid resident for the whole step and runs the same
// phase bodies back to back: norm statistics, then gate_up and down per layer, separated by grid
// barriers. A phase issues its first P weight steps before it waits at the barrier (weights
// depend on nothing), so HBM keeps streaming through the barrier: at 2 blocks of 256 threads
// per SM that is up to 128 KB in flight per SM, ~17 MB over the GPU, ~4 us of HBM time.
//
// The barrier is a monotonic 64-bit arrival counter in the op's scratch: a launch adds exactly
// 2 L x grid arrivals, so a block learns the launch's base from the value it reads at entry
// (no block can have passed the first barrier before every block arrived at it, so the value
// lies in [base, base + grid)) and no reset node is needed between steps. Arrive: block
// barrier, then thread 0 fences and adds one (the cooperative-groups grid sync pattern). Wait:
// thread 0 spins on an acquire load until the phase's target, then a block barrier. The grid is
// launched cooperatively, so the runtime refuses a grid that could not be resident at once
// instead of letting the barrier hang.

template <typename T> struct StepArgs {
    GateUpArgs<T> gu[GR_DEC_P_MAX_LAYERS];
    DownArgs<T> dn[GR_DEC_P_MAX_LAYERS];
    const T *x, *w0, *Ag0, *Au0; // layer 0's statistics inputs
    float *ssq0, *tin0, *td0;    // layer 0's statistics (plain stores) and tdown (zeroed)
    unsigned long long *bar;
    int L, B, d, rank;
};

__device__ __forceinline__ unsigned long long ld_acquire_u64(const unsigned long long *p) {
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void grid_arrive(unsigned long long *bar) {
    __syncthreads(); // the block's writes of this phase happen before thread 0's release
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(bar, 1ull);
    }
}

struct grid_wait {
    const unsigned long long *bar;
    unsigned long long target; // meaningful in thread 0 only
    __device__ __forceinline__ void operator()() const {
        if (threadIdx.x == 0)
            while (ld_acquire_u64(bar) < target) {
            }
        __syncthreads();
    }
};

// Layer 0's statistics, one warp per (statistic j, batch row b) over the whole grid (the
// norm_stats kernel's work with warps instead of blocks: (2r + 1) B dot products of length d).
// NW: the warps of each block that take part (threads 0 .. 32 NW - 1).
template <typename T, int NW>
__device__ __forceinline__ void step_norm_phase(const T *x, const T *w0, const T *Ag0, const T *Au0,
                                                float *ssq0, float *tin0, float *td0, int B, int d,
                                                int r) {
    constexpr int VEC = 16 / (int)sizeof(T);
    const int lane = (int)threadIdx.x & 31;
    const int gw = (int)blockIdx.x * NW + ((int)threadIdx.x >> 5);
    const int nw = (int)gridDim.x * NW;
    const int nch = d / VEC;
    if (blockIdx.x == 0)
        for (int i = (int)threadIdx.x; i < r * B; i += NW * 32)
            td0[i] = 0.f;
    for (int job = gw; job < (2 * r + 1) * B; job += nw) {
        const int j = job / B, b = job - j * B;
        const T *xb = x + (size_t)b * d;
        const T *A = j == 0 ? nullptr : ((j - 1) / r ? Au0 : Ag0) + (size_t)((j - 1) % r) * d;
        float s = 0.f;
        for (int c = lane; c < nch; c += 32) {
            float xf[VEC];
            unpack16<T>(__ldcg(reinterpret_cast<const uint4 *>(xb + (size_t)c * VEC)), xf);
            if (j == 0) {
#pragma unroll
                for (int e = 0; e < VEC; e++)
                    s = fmaf(xf[e], xf[e], s);
            } else {
                float wf[VEC], of[VEC];
                unpack16<T>(*reinterpret_cast<const uint4 *>(w0 + (size_t)c * VEC), wf);
                unpack16<T>(*reinterpret_cast<const uint4 *>(A + (size_t)c * VEC), of);
#pragma unroll
                for (int e = 0; e < VEC; e++)
                    s = fmaf(of[e], xf[e] * wf[e], s);
            }
        }
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(kFull, s, o);
        if (lane == 0) {
            if (j == 0)
                ssq0[b] = s;
            else
                tin0[(size_t)(j - 1) * B + b] = s;
        }
    }
}

// The argument tables are a __grid_constant__ kernel parameter (~13 KB at 48 layers; CUDA 12.1+
// allows 32 KB): the phases read their layer's pointers from the constant bank with a dynamic
// index instead of holding them in registers.
template <typename T, int BT>
__global__ void __launch_bounds__(kThreads, GR_DEC_BLOCKS_PER_SM(BT))
    step_kernel(const __grid_constant__ StepArgs<T> a) {
    extern __shared__ __align__(16) unsigned char smem[];
    const unsigned long long nb = gridDim.x;
    unsigned long long base = 0;
    if (threadIdx.x == 0) {
        const unsigned long long v = ld_acquire_u64(a.bar);
        base = v - v % (2ull * (unsigned long long)a.L * nb);
    }
    step_norm_phase<T, kWarps>(a.x, a.w0, a.Ag0, a.Au0, a.ssq0, a.tin0, a.td0, a.B, a.d, a.rank);
    grid_arrive(a.bar);
    unsigned long long k = 0;
    for (int l = 0; l < a.L; l++) {
        gate_up_body<T, BT, depth_of<T, BT, false>()>(a.gu[l], smem,
                                                      grid_wait{a.bar, base + (++k) * nb});
        grid_arrive(a.bar);
        down_body<T, BT, depth_of<T, BT, true>()>(a.dn[l], smem,
                                                  grid_wait{a.bar, base + (++k) * nb});
        if (l + 1 < a.L) grid_arrive(a.bar);
    }
}

// ---------- cuBLAS path (B > the op's gemv_max_b: GR_DEC_F_BLAS) ----------

// xw = x * w_norm in the weight dtype (the GEMM's A operand; one rounding, ~0.1% on a dot
// product of d terms in bf16), and the zeroing of the next layer's statistics.
template <typename T>
__global__ void __launch_bounds__(kThreads) xw_kernel(const T *x, const T *w, T *xw, int B, int d,
                                                      float *zero_ssq, float *zero_tin, int ntin) {
    gr_pdl_enter();
    const int stride = (int)(gridDim.x * blockDim.x);
    const int i0 = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    for (int i = i0; i < B * d; i += stride)
        xw[i] = from_f<T>(to_f(x[i]) * to_f(w[i % d]));
    if (zero_ssq)
        for (int i = i0; i < B; i += stride)
            zero_ssq[i] = 0.f;
    if (zero_tin)
        for (int i = i0; i < ntin; i += stride)
            zero_tin[i] = 0.f;
}

// Block (n tile, b): act[b][n] = silu(g) u with g = rstd (G[b][n] + s B_gate[n] . tin_g[b]), u
// likewise, then the block's share of tdown[j][b] += sum_n A_down[j][n] act[b][n] (one atomic
// per j and block). Dynamic shared memory: scale * tin for b [2r], then act of the tile.
template <typename T>
__global__ void __launch_bounds__(GR_DEC_EPI_THREADS)
    gate_up_epi_kernel(const GateUpArgs<T> p, const float *G, const float *U) {
    constexpr int VEC = 16 / (int)sizeof(T);
    extern __shared__ __align__(16) unsigned char smem[];
    float *stin = reinterpret_cast<float *>(smem);
    float *sa = stin + 2 * p.rank;
    gr_pdl_enter();
    const int b = (int)blockIdx.y, tid = (int)threadIdx.x, N = p.N, rank = p.rank;
    const int n = (int)blockIdx.x * GR_DEC_EPI_THREADS + tid;
    for (int i = tid; i < 2 * rank; i += GR_DEC_EPI_THREADS)
        stin[i] = p.scale * p.tin[(size_t)i * p.B + b];
    __syncthreads();
    float a = 0.f;
    if (n < N) {
        const float rstd = rsqrtf(p.ssq[b] / (float)p.K + p.eps);
        float lg = 0.f, lu = 0.f;
        for (int c = 0; c < rank / VEC; c++) {
            float bg[VEC], bu[VEC];
            unpack16<T>(*reinterpret_cast<const uint4 *>(p.Bg + (size_t)n * rank + c * VEC), bg);
            unpack16<T>(*reinterpret_cast<const uint4 *>(p.Bu + (size_t)n * rank + c * VEC), bu);
#pragma unroll
            for (int e = 0; e < VEC; e++) {
                lg = fmaf(bg[e], stin[c * VEC + e], lg);
                lu = fmaf(bu[e], stin[rank + c * VEC + e], lu);
            }
        }
        const float g = rstd * (G[(size_t)b * N + n] + lg), u = rstd * (U[(size_t)b * N + n] + lu);
        const T at = from_f<T>(g / (1.f + __expf(-g)) * u);
        p.act[(size_t)b * N + n] = at;
        a = to_f(at);
    }
    sa[tid] = a;
    __syncthreads();
    const int lane = tid & 31, warp = tid >> 5, n0 = (int)blockIdx.x * GR_DEC_EPI_THREADS;
    for (int j = warp; j < rank; j += GR_DEC_EPI_THREADS / 32) {
        float s = 0.f;
        for (int i = lane; i < GR_DEC_EPI_THREADS && n0 + i < N; i += 32)
            s = fmaf(to_f(p.Ad[(size_t)j * N + n0 + i]), sa[i], s);
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(kFull, s, o);
        if (lane == 0) atomicAdd(&p.td[(size_t)j * p.B + b], s);
    }
}

// Block (m tile, b): x[b][m] += Y[b][m] + s B_down[m] . tdown[b], rounded to the dtype; then the
// block's share of the next layer's statistics (one atomic per statistic and block). Dynamic
// shared memory: scale * tdown for b [r], then new x and new x * w_next of the tile.
template <typename T>
__global__ void __launch_bounds__(GR_DEC_EPI_THREADS)
    down_epi_kernel(const DownArgs<T> p, const float *Y) {
    constexpr int VEC = 16 / (int)sizeof(T);
    extern __shared__ __align__(16) unsigned char smem[];
    float *std_ = reinterpret_cast<float *>(smem);
    float *sx = std_ + p.rank, *sxw = sx + GR_DEC_EPI_THREADS;
    gr_pdl_enter();
    const int b = (int)blockIdx.y, tid = (int)threadIdx.x, N = p.N, rank = p.rank;
    if (p.zero_td && blockIdx.x == 0 && blockIdx.y == 0)
        for (int i = tid; i < rank * p.B; i += GR_DEC_EPI_THREADS)
            p.zero_td[i] = 0.f;
    const int m = (int)blockIdx.x * GR_DEC_EPI_THREADS + tid;
    for (int i = tid; i < rank; i += GR_DEC_EPI_THREADS)
        std_[i] = p.scale * p.td[(size_t)i * p.B + b];
    __syncthreads();
    sx[tid] = 0.f;
    sxw[tid] = 0.f;
    if (m < N) {
        float lo = 0.f;
        for (int c = 0; c < rank / VEC; c++) {
            float bd[VEC];
            unpack16<T>(*reinterpret_cast<const uint4 *>(p.Bd + (size_t)m * rank + c * VEC), bd);
#pragma unroll
            for (int e = 0; e < VEC; e++)
                lo = fmaf(bd[e], std_[c * VEC + e], lo);
        }
        const size_t idx = (size_t)b * N + m;
        const T xn = from_f<T>(to_f(p.x_in[idx]) + (Y[idx] + lo));
        p.x_out[idx] = xn;
        const float xv = to_f(xn);
        sx[tid] = xv;
        if (p.ssq_next) sxw[tid] = xv * to_f(p.w_next[m]);
    }
    __syncthreads();
    if (!p.ssq_next) return;
    const int lane = tid & 31, warp = tid >> 5, m0 = (int)blockIdx.x * GR_DEC_EPI_THREADS;
    for (int j = warp; j < 2 * rank + 1; j += GR_DEC_EPI_THREADS / 32) {
        const T *A = nullptr;
        if (j > 0) {
            const int kd = (j - 1) / rank, jj = (j - 1) - kd * rank;
            A = (kd ? p.Au_next : p.Ag_next) + (size_t)jj * N + m0;
        }
        float s = 0.f;
        for (int i = lane; i < GR_DEC_EPI_THREADS && m0 + i < N; i += 32)
            s = j == 0 ? fmaf(sx[i], sx[i], s) : fmaf(to_f(A[i]), sxw[i], s);
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(kFull, s, o);
        if (lane == 0)
            atomicAdd(j == 0 ? &p.ssq_next[b] : &p.tin_next[(size_t)(j - 1) * p.B + b], s);
    }
}

template <typename T> cudaDataType_t cuda_type();
template <> cudaDataType_t cuda_type<float>() {
    return CUDA_R_32F;
}
template <> cudaDataType_t cuda_type<__nv_bfloat16>() {
    return CUDA_R_16BF;
}
template <> cudaDataType_t cuda_type<__half>() {
    return CUDA_R_16F;
}

// Row-major Y[M, N] (fp32) = A[M, K] Wt[N, K]^T, as cuBLAS's column-major Y^T = Wt A^T
// (the same mapping as the gemm kernel with trans_b).
template <typename T>
gr_status gemm_nt(const gr_launch_ctx *ctx, const T *A, const T *W, float *Y, int M, int N, int K,
                  gr_error *err) {
    const float one = 1.f, zero = 0.f;
    GR_CUBLAS(cublasGemmEx((cublasHandle_t)ctx->cublas, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, W,
                           cuda_type<T>(), K, A, cuda_type<T>(), K, &zero, Y, CUDA_R_32F, N,
                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              err);
    return GR_OK;
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
        return gate_up_kernel<T, BT, depth_of<T, BT, false>()>;
    }
};
template <typename T, int BT> struct pick_down {
    static void (*get())(DownArgs<T>) {
        return down_kernel<T, BT, depth_of<T, BT, true>()>;
    }
};

template <typename K> gr_status allow_smem(K kernel, int bytes, gr_error *err) {
    GR_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes), err);
    return GR_OK;
}

// The shared-memory carveout (the SM's L1 / shared-memory split) of the step's chain of kernels
// (norm_stats, gate_up, down): one value for all of them, so that consecutive kernels never ask
// an SM for a different split, which it can only change once the previous kernel's blocks have
// left it. The driver's own choice follows each kernel's shared memory (gate_up's ~9 KB, down's
// ~17 KB per block at the default size) and cost ~0.4 us per kernel boundary with --pdl (H200,
// runs 16-17: 507.2-507.9 -> 490.9-496.3 us per step; without PDL 565.4 -> 559.4-559.9; fp32
// B4 with PDL 192.4 -> 187.9-188.5). 100 (all shared memory): the kernels read weights past L1
// and activations through L2, so L1 capacity buys them nothing.
template <typename K> gr_status set_carveout(K kernel, int pct, gr_error *err) {
    GR_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, pct), err);
    return GR_OK;
}

// f(kernel) for the GEMV kernel the op launches (gate_up or down at its batch tile); `other`
// for a batch tile without a kernel.
template <typename T, typename R, typename F>
R with_gemv_kernel(const gr_op *op, bool down, R other, F f) {
    switch (op->ip[GR_DEC_BT]) {
    case 1:
        return down ? f(pick_down<T, 1>::get()) : f(pick_gate_up<T, 1>::get());
    case 2:
        return down ? f(pick_down<T, 2>::get()) : f(pick_gate_up<T, 2>::get());
    case 4:
        return down ? f(pick_down<T, 4>::get()) : f(pick_gate_up<T, 4>::get());
    case 8:
        return down ? f(pick_down<T, 8>::get()) : f(pick_gate_up<T, 8>::get());
    default:
        return other;
    }
}

// setup() of a GEMV-path op: the chain's carveout on its kernel and on norm_stats, then its
// dynamic shared memory, allowed up to the device's opt-in maximum (not the op's size) so that
// ops sharing a kernel instance never lower it for each other.
template <typename T>
gr_status setup_gemv_t(const gr_op *op, const gr_launch_ctx *, gr_error *err) {
    const bool down = op->kernel->launch == gr_launch_decode_down;
    const int bt = (int)op->ip[GR_DEC_BT];
    if (bt != 1 && bt != 2 && bt != 4 && bt != 8)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "%s: batch tile %d", op->kernel->name,
                            bt);
    GR_TRY(set_carveout(norm_stats_kernel<T>, GR_DEC_CARVEOUT, err));
    GR_TRY(with_gemv_kernel<T>(op, down, GR_OK,
                               [&](auto k) { return set_carveout(k, GR_DEC_CARVEOUT, err); }));
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
    return with_gemv_kernel<T>(op, down, GR_OK, [&](auto k) { return allow_smem(k, optin, err); });
}

template <typename T> GateUpArgs<T> gate_up_args(const gr_op *op, const gr_launch_ctx *ctx) {
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
    return a;
}

template <typename T> DownArgs<T> down_args(const gr_op *op, const gr_launch_ctx *ctx) {
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
    return a;
}

// The cuBLAS path's scratch is the device state's arena slice (op->scratch bytes, set by the
// check): live only while this op runs, shared with the other ops of its stream.
gr_status need_state(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    if (!ctx->scratch || ctx->scratch_bytes < op->scratch || !ctx->cublas)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                            "%s (B = %lld > gemv_max_b = %lld): no scratch arena of %zu bytes "
                            "(%zu given), or no cuBLAS handle (the kernel must carry "
                            "GR_KF_LIBRARY)",
                            op->kernel->name, (long long)op->ip[GR_DEC_B],
                            (long long)op->ip[GR_DEC_MAXB], op->scratch, ctx->scratch_bytes);
    return GR_OK;
}

// B > gemv_max_b: xw = x * w_norm; G = xw W_gate^T and U = xw W_up^T through cuBLAS (fp32
// out); then the epilogue kernel. The launch of every kernel is checked; cuBLAS returns its status.
template <typename T>
gr_status launch_gate_up_blas(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    GR_TRY(need_state(op, ctx, err));
    const GateUpArgs<T> a = gate_up_args<T>(op, ctx);
    const gr_dec_scratch sl = gr_dec_scratch_layout(0, a.B, a.K, a.N, (int)sizeof(T));
    unsigned char *s = (unsigned char *)ctx->scratch;
    T *xw = (T *)(s + sl.xw);
    float *G = (float *)(s + sl.g), *U = (float *)(s + sl.u);
    const long long n = (long long)a.B * a.K;
    const unsigned blocks =
        (unsigned)((n + kThreads - 1) / kThreads < 4096 ? (n + kThreads - 1) / kThreads : 4096);
    GR_CUDA(gr_launch(xw_kernel<T>, dim3(blocks), dim3(kThreads), 0, ctx, a.x, a.w, xw, a.B, a.K,
                      a.zero_ssq, a.zero_tin, 2 * a.rank * a.B),
            err);
    GR_TRY(gr_launch_status("decode_gate_up (x * w_norm)", op->path, err));
    GR_TRY(gr_cublas_bind(ctx, err));
    GR_TRY(gemm_nt<T>(ctx, xw, a.Wg, G, a.B, a.N, a.K, err));
    GR_TRY(gemm_nt<T>(ctx, xw, a.Wu, U, a.B, a.N, a.K, err));
    GR_CUDA(launch(gate_up_epi_kernel<T>, op, ctx, a, (const float *)G, (const float *)U), err);
    return gr_launch_status(op->kernel->name, op->path, err);
}

template <typename T>
gr_status launch_down_blas(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    GR_TRY(need_state(op, ctx, err));
    const DownArgs<T> a = down_args<T>(op, ctx);
    const gr_dec_scratch sl = gr_dec_scratch_layout(1, a.B, a.K, a.N, (int)sizeof(T));
    float *Y = (float *)((unsigned char *)ctx->scratch + sl.y);
    GR_TRY(gr_cublas_bind(ctx, err));
    GR_TRY(gemm_nt<T>(ctx, a.act, a.Wd, Y, a.B, a.N, a.K, err));
    GR_CUDA(launch(down_epi_kernel<T>, op, ctx, a, (const float *)Y), err);
    return gr_launch_status(op->kernel->name, op->path, err);
}

template <typename T>
gr_status launch_gate_up_t(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    if (op->ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS) return launch_gate_up_blas<T>(op, ctx, err);
    const GateUpArgs<T> a = gate_up_args<T>(op, ctx);
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
    if (op->ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS) return launch_down_blas<T>(op, ctx, err);
    const DownArgs<T> a = down_args<T>(op, ctx);
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

// ---------- decode_step host side ----------

// The step's device scratch: the barrier counter (its own 256-byte line), then per layer the
// statistics ssq [B], tin [2r, B], tdown [r, B] (fp32).
struct step_state {
    unsigned char *scratch;
};
struct step_scratch {
    size_t bar, stats, tin, td, per_layer, total;
};
step_scratch step_scratch_layout(long long L, long long B, long long r) {
    step_scratch s;
    s.bar = 0;
    s.stats = 256;
    s.tin = gr_dec_align16((size_t)B * sizeof(float)); // offsets within a layer's statistics
    s.td = s.tin + gr_dec_align16((size_t)(2 * r * B) * sizeof(float));
    s.per_layer = s.td + gr_dec_align16((size_t)(r * B) * sizeof(float));
    s.total = gr_dec_align16(s.stats + (size_t)L * s.per_layer);
    return s;
}

template <typename T> void (*step_kernel_for(long long bt))(StepArgs<T>) {
    switch (bt) {
    case 1:
        return step_kernel<T, 1>;
    case 2:
        return step_kernel<T, 2>;
    case 4:
        return step_kernel<T, 4>;
    case 8:
        return step_kernel<T, 8>;
    default:
        return nullptr;
    }
}

// One cooperative launch of the op's grid (the runtime refuses a grid that cannot be resident at
// once, which the grid barriers of the step kernels need).
template <typename Args>
cudaError_t launch_cooperative(void (*kernel)(Args), const gr_op *op, const gr_launch_ctx *ctx,
                               const Args &args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(op->grid[0]);
    cfg.blockDim = dim3(op->block[0]);
    cfg.dynamicSmemBytes = op->smem;
    cfg.stream = (cudaStream_t)ctx->stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, args);
}

template <typename T>
gr_status launch_step_t(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    const step_state *st = (const step_state *)ctx->op_state;
    void (*kernel)(StepArgs<T>) = step_kernel_for<T>(op->ip[GR_DEC_BT]);
    if (!st || !kernel)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                            "%s: no scratch from setup() or batch tile %lld", op->kernel->name,
                            (long long)op->ip[GR_DEC_BT]);
    void *const *d = ctx->dptr;
    const int L = (op->ninputs - 1) / GR_DEC_P_PER_LAYER;
    const int B = (int)op->ip[GR_DEC_B], dm = (int)op->ip[GR_DEC_K], f = (int)op->ip[GR_DEC_N];
    const int r = (int)op->ip[GR_DEC_RANK];
    const step_scratch sl = step_scratch_layout(L, B, r);
    auto ssq = [&](int l) { return (float *)(st->scratch + sl.stats + (size_t)l * sl.per_layer); };
    auto tin = [&](int l) { return (float *)((unsigned char *)ssq(l) + sl.tin); };
    auto td = [&](int l) { return (float *)((unsigned char *)ssq(l) + sl.td); };
    auto W = [&](int l, int k) { return (const T *)d[op->inputs[1 + GR_DEC_P_PER_LAYER * l + k]]; };
    T *x = (T *)d[op->outputs[0]], *act = (T *)d[op->outputs[1]];

    static_assert(sizeof(StepArgs<T>) <= 32764, "kernel parameter limit");
    StepArgs<T> *a = (StepArgs<T> *)calloc(1, sizeof(StepArgs<T>));
    if (!a) return gr_error_set(err, GR_ERR_NOMEM, op->path, "out of host memory");
    for (int l = 0; l < L; l++) {
        const bool next = l + 1 < L;
        GateUpArgs<T> &g = a->gu[l];
        g.x = x;
        g.w = W(l, GR_DEC_P_WNORM);
        g.Wg = W(l, GR_DEC_P_WGATE);
        g.Wu = W(l, GR_DEC_P_WUP);
        g.Bg = W(l, GR_DEC_P_BGATE);
        g.Bu = W(l, GR_DEC_P_BUP);
        g.Ad = W(l, GR_DEC_P_ADOWN);
        g.ssq = ssq(l);
        g.tin = tin(l);
        g.act = act;
        g.td = td(l);
        g.zero_ssq = next ? ssq(l + 1) : nullptr;
        g.zero_tin = next ? tin(l + 1) : nullptr;
        g.B = B;
        g.K = dm;
        g.N = f;
        g.rank = r;
        g.tw = (int)op->ip[GR_DEC_TW];
        g.ntiles = (int)op->ip[GR_DEC_TILES];
        g.scale = (float)op->fp[0];
        g.eps = (float)op->fp[1];
        DownArgs<T> &n = a->dn[l];
        n.x_in = x;
        n.act = act;
        n.Wd = W(l, GR_DEC_P_WDOWN);
        n.Bd = W(l, GR_DEC_P_BDOWN);
        n.td = td(l);
        n.w_next = next ? W(l + 1, GR_DEC_P_WNORM) : nullptr;
        n.Ag_next = next ? W(l + 1, GR_DEC_P_AGATE) : nullptr;
        n.Au_next = next ? W(l + 1, GR_DEC_P_AUP) : nullptr;
        n.x_out = x;
        n.ssq_next = next ? ssq(l + 1) : nullptr;
        n.tin_next = next ? tin(l + 1) : nullptr;
        n.zero_td = next ? td(l + 1) : nullptr;
        n.B = B;
        n.K = f;
        n.N = dm;
        n.rank = r;
        n.tw = (int)op->ip[GR_DEC_S_TW_DOWN];
        n.ntiles = (int)op->ip[GR_DEC_TILES];
        n.scale = (float)op->fp[0];
    }
    a->x = x;
    a->w0 = W(0, GR_DEC_P_WNORM);
    a->Ag0 = W(0, GR_DEC_P_AGATE);
    a->Au0 = W(0, GR_DEC_P_AUP);
    a->ssq0 = ssq(0);
    a->tin0 = tin(0);
    a->td0 = td(0);
    a->bar = (unsigned long long *)(st->scratch + sl.bar);
    a->L = L;
    a->B = B;
    a->d = dm;
    a->rank = r;

    cudaError_t rc = launch_cooperative(kernel, op, ctx, *a);
    free(a);
    GR_CUDA(rc, err);
    return gr_launch_status(op->kernel->name, op->path, err);
}

template <typename K>
gr_status setup_resident(K kernel, const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);

template <typename T>
gr_status setup_step_t(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    void (*k)(StepArgs<T>) = step_kernel_for<T>(op->ip[GR_DEC_BT]);
    if (k) return setup_resident(k, op, ctx, err);
    return gr_error_set(err, GR_ERR_INTERNAL, op->path, "%s: batch tile %lld", op->kernel->name,
                        (long long)op->ip[GR_DEC_BT]);
}

// The shared-memory limit of a step kernel, and the checks that its whole grid fits on the
// device at once (cooperative launch, occupancy).
template <typename K>
gr_status setup_resident(K kernel, const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    int dev = 0, optin = 0, per_sm = 0, coop = 0;
    GR_CUDA(cudaGetDevice(&dev), err);
    GR_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), err);
    GR_CUDA(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev), err);
    if (!coop)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\" needs cooperative launch, which this device does not "
                            "support; use the fused variant (per-layer kernels)",
                            op->kernel->name);
    if ((size_t)optin < op->smem)
        return gr_error_set(
            err, GR_ERR_INPUT, op->path,
            "kernel \"%s\" needs %.1f KB of shared memory per block; this device "
            "allows %.1f KB. Use smaller d and f or the fused variant (per-layer kernels)",
            op->kernel->name, (double)op->smem / 1024.0, (double)optin / 1024.0);
    GR_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin), err);
    GR_CUDA(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, (int)op->block[0], op->smem),
        err);
    if ((long long)per_sm * ctx->sm_count < (long long)op->grid[0])
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": its %u blocks must all be resident at once (grid "
                            "barriers), but this device holds %d per SM x %d SMs. The plan was "
                            "made for %d SMs (target %s); run on the device the plan is for, or "
                            "use the fused variant (per-layer kernels)",
                            op->kernel->name, op->grid[0], per_sm, ctx->sm_count,
                            ctx->plan->target.sm_count, ctx->plan->target.name);
    return GR_OK;
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

extern "C" void gr_teardown_decode_gemv(void *state) {
    (void)state; /* setup keeps no state: the cuBLAS path's scratch is the arena's */
}

// Before any capture: on the GEMV path, the kernels' carveout and shared-memory limit
// (setup_gemv_t); the cuBLAS path needs nothing (its scratch is the device state's arena, sized
// from op->scratch before any op is set up).
extern "C" gr_status gr_setup_decode_gemv(const gr_op *op, const gr_launch_ctx *ctx, void **state,
                                          gr_error *err) {
    *state = nullptr;
    if (op->ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS) return GR_OK;
    GR_DEC_DISPATCH(weight_dtype(op, ctx), setup_gemv_t)
}

// The preferred shared-memory carveout (cudaFuncAttributes.preferredShmemCarveout) of the
// GEMV kernel a gate_up or down op launches and of norm_stats, for weights of dtype `dtype`; -1
// for the cuBLAS path, an unknown batch tile or dtype. For the tests.
template <typename K> int carveout_of(K kernel) {
    cudaFuncAttributes a;
    return cudaFuncGetAttributes(&a, kernel) == cudaSuccess ? a.preferredShmemCarveout : -1;
}
template <typename T> int carveout_op_t(const gr_op *op, int *norm) {
    *norm = carveout_of(norm_stats_kernel<T>);
    return with_gemv_kernel<T>(op, op->kernel->launch == gr_launch_decode_down, -1,
                               [](auto k) { return carveout_of(k); });
}
extern "C" int gr_decode_gemv_carveout(const gr_op *op, int dtype, int *norm_stats) {
    *norm_stats = -1;
    if (op->ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS) return -1;
    switch (dtype) {
    case GR_FP32:
        return carveout_op_t<float>(op, norm_stats);
    case GR_BF16:
        return carveout_op_t<__nv_bfloat16>(op, norm_stats);
    case GR_FP16:
        return carveout_op_t<__half>(op, norm_stats);
    default:
        return -1;
    }
}

extern "C" gr_status gr_launch_decode_step(const gr_op *op, const gr_launch_ctx *ctx,
                                           gr_error *err) {
    GR_DEC_DISPATCH(weight_dtype(op, ctx), launch_step_t)
}

extern "C" void gr_teardown_decode_step(void *state) {
    step_state *s = (step_state *)state;
    if (!s) return;
    if (s->scratch) cudaFree(s->scratch);
    free(s);
}

// Before any capture: the scratch (zeroed: the barrier counter starts at a launch boundary), the
// shared-memory limit, and the check that the whole grid can be resident at once.
extern "C" gr_status gr_setup_decode_step(const gr_op *op, const gr_launch_ctx *ctx, void **state,
                                          gr_error *err) {
    *state = nullptr;
    gr_status st;
    switch (ctx->plan->bufs[op->inputs[0]].dtype) {
    case GR_FP32:
        st = setup_step_t<float>(op, ctx, err);
        break;
    case GR_BF16:
        st = setup_step_t<__nv_bfloat16>(op, ctx, err);
        break;
    case GR_FP16:
        st = setup_step_t<__half>(op, ctx, err);
        break;
    default:
        st =
            gr_error_set(err, GR_ERR_INTERNAL, op->path, "%s: unsupported dtype", op->kernel->name);
    }
    if (st != GR_OK) return st;
    const int L = (op->ninputs - 1) / GR_DEC_P_PER_LAYER;
    const step_scratch sl = step_scratch_layout(L, op->ip[GR_DEC_B], op->ip[GR_DEC_RANK]);
    step_state *s = (step_state *)calloc(1, sizeof(step_state));
    if (!s) return gr_error_set(err, GR_ERR_NOMEM, op->path, "out of host memory");
    cudaError_t rc = cudaMalloc(&s->scratch, sl.total);
    if (rc == cudaSuccess) rc = cudaMemset(s->scratch, 0, sl.total);
    if (rc != cudaSuccess) {
        if (s->scratch) cudaFree(s->scratch);
        free(s);
        return gr_cuda_fail(rc, "cudaMalloc/cudaMemset(decode_step scratch)", __FILE__, __LINE__,
                            err);
    }
    *state = s;
    return GR_OK;
}
