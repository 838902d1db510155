// Linear + bias + activation on Hopper's warpgroup MMA (impl "wg"): TF32 or 3xTF32.
//
// Y[M, N] = act(X[M, K] W[N, K]^T + bias), fp32 accumulation, as the tc kernel (dlrm.cu) computes
// it, but on wgmma.mma_async instead of mma.sync. Why: at B = 2048 the tc kernel's 3 passes run
// at ~220 MAC/clk/SM (bot.1 14.05 us, top.1 13.9; run 26), about 37% of mma.sync's TF32 ceiling
// on the H200 (578-593 MAC/clk/SM, gr_mma_peak), bound by instruction issue: every warp converts
// its own fragments (the split into big and small parts) before each MMA, and A's fragments are
// converted again by every warp that shares its rows. wgmma's dense TF32 rate is about twice
// mma.sync's (~1024 MAC/clk/SM), its operands come from shared memory through descriptors, and
// one instruction covers a 64 x BN x 8 product for the whole warpgroup, so the split is done once
// per element per block, by all 128 threads together, off the tensor cores' critical path.
//
// This file is compiled for sm_90a only (wgmma is an architecture-specific feature; CMake builds
// it as its own object library), so the kernels run on compute capability 9.0 (H100, H200); the
// check (dlrm.c) allows impl wg only there. auto never picks it (measured below); auto_wg does.
//
// Tiling. A block owns a 64 x BN tile (BN = 64 or 128) and has NWG warpgroups (2 by default);
// the first one issues the MMAs: warp w's accumulators hold rows 16 w .. 16 w + 15 (wgmma's fixed
// layout: per 8 columns, rows g and g + 8, columns 2t and 2t + 1 of lane (g, t)). 3xTF32 keeps
// big x big in one accumulator and both small terms in a second (summed small-first in the
// epilogue, as the tc kernel does); BN = 128 holds 2 x 64 floats per thread.
//
// Data flow per stage of KT = 32 k (one per iteration; S raw stages, S - 1 in flight; 3 operand
// sets):
//   1. cp.async copies the stage's X and W rows into a raw buffer in 16-byte pieces (K % 4 != 0:
//      tc_copy's shifted pieces, so K = 367 needs no 4-byte copies);
//   2. once they have landed, every thread splits its pieces into big = tf32(v) and
//      small = v - big (tf32_split, 3 integer/fp ops) and stores both into an operand set in the
//      core-matrix layout wgmma reads without swizzling: 8 x 16-byte core matrices (8 rows x 4 k,
//      128 contiguous bytes), K-adjacent ones 128 B apart (the descriptor's leading byte offset),
//      8-row groups KT / 4 x 128 = 1024 B apart (its stride byte offset); 8 consecutive threads
//      store one whole core matrix;
//   3. fence.proxy.async (the stores are generic-proxy writes, wgmma reads through the async
//      proxy), a barrier, then the MMA warpgroup issues KT / 8 k-steps of 1 (tf32) or 3 (tf32x3)
//      wgmma, committed as one group; wgmma.wait_group 1 lets it run on while the next stage is
//      copied and split (wg_stage has the barrier argument).
//
// Napkin math (H200, 1.98 GHz, 132 SMs; dlrm_small at B = 2048, 3xTF32): bot.1 / top.1 (2048 x
// 256 x 512): 128 blocks of 64 x 64, each 3 x 64 x 64 x 512 = 6.3 M MAC: ~6.1 K clk at 1024
// MAC/clk = 3.1 us of tensor time; L2 -> shared 16 KB per stage and block. Predicted ~4.5-5.5 us
// per layer, top.0 (2048 x 512 x 367, 128 blocks of 64 x 128) ~5.5-7 us.
//
// Measured (H200, 2026-12-01, CUPTI per op, graph; bench/results runs 37-43): correct from the
// first run (3xTF32 error at B = 2048 1.3e-6 / 9.8e-7 / 6.4e-7 on bot / R / y), but bot.1 and
// top.1 take 14.05-14.3 us and top.0 22.6-23.0, against the tc kernel's 14.05 / 13.9 and
// cuBLASLt fp32's 21.7: the prediction missed ~3x. Steps, each measured: one warpgroup 17.5 /
// 29.0 us (run 37); 16-byte padding of the 8-row groups: no change (run 38); a second warpgroup
// copying and splitting: first slower (run 39: ptxas serialized every wgmma, C7517/C7518, because
// the MMA path merged with the other warpgroup's), then 15.9 / 23.5 with separate loops (run 40);
// one barrier per stage with own pieces and 3 operand sets, batched split loads: 14.05 / 22.6
// (run 41); 4 warpgroups, 6 raw stages, 64 x 128 tiles on the N = 256 layers, per-launch piece
// tables: no gain (runs 40-43). Nsight Compute on bot.1 (run 42): tensor pipe ~20% active, issue
// slots ~24% busy, 6.3 cycles per issued instruction led by long-scoreboard stalls (the cp.async
// waits), ~230 instructions per warp and stage: the stage pipeline is latency-bound, not the
// tensor cores. What it would take (not done): a warp-specialized producer with TMA or bulk
// copies and mbarriers instead of per-thread cp.async and block barriers, so copies run stages
// ahead without every warp waiting on them.
//
// The bulk forms (configurations w64b and the tall w64b2, "Bulk form" below: TMA copies,
// mbarriers, two MMA warpgroups, x's fragments split in registers) are the check's choice where
// the rows fold into tensor maps (bot.1 / top.1 11.0 / 11.1 us, top.0 16.0; runs 59-66). The
// shared-memory form above stays for the shapes that do not fold. The lab forms measured against
// these (register A without TMA, one or four warpgroups, 6 raw stages) are in
// docs/removed_designs.md.
//
// PDL as in the tc kernel: with `pre`, the W rows of the first S - 1 stages are copied before
// griddepcontrol.wait; dependents are signalled after the K loop. With --pdl, x3_impl=auto_wg
// (wg where auto takes tc or cuBLASLt) is the fastest fp32-level form of fused_tf32x3 (69.44 us
// at B = 2048 with the mixed forms, run 46; 72.50 with w64 / w128, run 43).
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/dlrm.h"
#include "kernels/dlrm_dev.cuh"
#include "kernels/mbarrier.cuh"

namespace {

constexpr int kWgBM = GR_LIN_WG_BM, kWgKT = GR_LIN_MMA_KT, kWgLD = GR_LIN_WG_LD;
static_assert(kWgKT % 8 == 0, "whole wgmma k-steps per stage");
static_assert(kWgLD >= kWgKT + 4, "a shifted row fits the raw stage's pitch");
static_assert(kWgBM == 64, "one MMA warpgroup, 16 rows per warp");

// Descriptor strides of the core-matrix layout (bytes; gr_lin_wg_off in dlrm.h has the float
// offset of a 16-byte piece).
constexpr uint32_t kWgLBO = GR_LIN_WG_LBO, kWgSBO = GR_LIN_WG_SBO;

// Shared-memory matrix descriptor, no swizzle: start address, leading and stride byte offsets,
// each in 16-byte units (bits 0-13, 16-29, 32-45); base offset and swizzle mode 0.
__device__ __forceinline__ uint64_t wg_desc(const float *p) {
    return (uint64_t)((smem_addr(p) & 0x3FFFFu) >> 4) | ((uint64_t)(kWgLBO >> 4) << 16) |
           ((uint64_t)(kWgSBO >> 4) << 32);
}

__device__ __forceinline__ void wg_fence() {
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wg_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// Keeps the compiler from moving accumulator reads or writes across the asynchronous MMAs (an
// empty asm that "modifies" every register, ordered after the wait by `volatile`).
template <int R> __device__ __forceinline__ void wg_fence_operand(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++)
        asm volatile("" : "+f"(d[i])::"memory");
}

// The accumulator operands of one wgmma: "{%0, ..., %N-1}" and N "+f" constraints on d[0 ..
// N - 1], written once for all the wrappers below.
#define GR_WG_D8(o) "+f"(d[o]), "+f"(d[o + 1]), "+f"(d[o + 2]), "+f"(d[o + 3]), "+f"(d[o + 4]), \
                    "+f"(d[o + 5]), "+f"(d[o + 6]), "+f"(d[o + 7])
#define GR_WG_D32(o) GR_WG_D8(o), GR_WG_D8(o + 8), GR_WG_D8(o + 16), GR_WG_D8(o + 24)
#define GR_WG_R32                                                                                  \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "  \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define GR_WG_R64                                                                                  \
    GR_WG_R32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "  \
              "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define GR_WG_PRED "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n" // scale-d = 1: D += A B

// D[64, 64] += A[64, 8] B[64, 8]^T, A and B K-major in shared memory (descriptors a, b), TF32
// operands (an fp32 bit pattern is truncated to TF32), fp32 accumulation.
__device__ __forceinline__ void wgmma_tf32(float (&d)[32], uint64_t a, uint64_t b) {
    asm volatile(GR_WG_PRED "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 " GR_WG_R32
                            "}, %32, %33, p, 1, 1;\n}\n"
                 : GR_WG_D32(0)
                 : "l"(a), "l"(b));
}

// The same with N = 128 (d[64]).
__device__ __forceinline__ void wgmma_tf32(float (&d)[64], uint64_t a, uint64_t b) {
    asm volatile(GR_WG_PRED "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " GR_WG_R64
                            "}, %64, %65, p, 1, 1;\n}\n"
                 : GR_WG_D32(0), GR_WG_D32(32)
                 : "l"(a), "l"(b));
}

// Raw stages S per configuration (gr_lin_wg_stages: 4 at BN = 64, 3 at BN =
// 128, where 3 operand sets leave no room for a fourth in 227 KB); operand sets: 3, so the MMAs of
// stage kt may still read set kt % 3 while stages kt + 1 and kt + 2 are split into the others (see
// wg_stage).
template <int BN, int S_> struct wg_geom {
    static_assert(S_ >= 3, "two stages in flight while one is split");
    static constexpr int S = S_, SETS = 3;
    static constexpr int ROWS = kWgBM + BN, RAW = ROWS * kWgLD;
    static constexpr int OPS = ROWS * kWgKT;
    static constexpr int FLOATS = S * RAW + SETS * 2 * OPS;
};

// The 16-byte piece u of this thread in a stage (K % 4 == 0): row r (x rows, then W rows) and
// k-quad q. The split takes the same pieces, so a thread splits only what it copied itself and
// needs no barrier between its copy landing and its split: 8 consecutive threads take rows
// r .. r + 7 at one q (their raw reads, 36 floats apart, hit 8 different bank groups; their
// operand stores fill one 128-byte core matrix).
template <int NT> __device__ __forceinline__ void wg_piece(int u, int &r, int &q) {
    constexpr int QR = kWgKT / 4;
    const int p = (int)threadIdx.x + u * NT;
    r = p / (8 * QR) * 8 + (p & 7);
    q = (p >> 3) % QR;
}

// A thread's U 16-byte copy pieces (K % 4 == 0), worked out once per launch: the address of each
// at k = 0, its offset in a raw stage, and which are W rows and inside M or N. The per-stage copy
// is then a pointer add, a compare and the cp.async (an Nsight Compute count of the first
// version, which worked them out per stage: ~230 instructions per warp and stage, over half of
// them integer).
template <int U> struct wg_copies {
    const float *src[U];
    int raw[U], k[U];
    unsigned is_w = 0, in_range = 0; // bit u

    // Piece u: the 16-byte piece q of tile row r (its raw stage row), row `row` of A, which has
    // `rows` rows (w: A is W).
    __device__ __forceinline__ void set(int u, const float *A, int row, int rows, int K, int r,
                                        int q, bool w) {
        const bool ok = row < rows;
        src[u] = A + (size_t)(ok ? row : 0) * (size_t)K + 4 * q;
        raw[u] = r * kWgLD + 4 * q;
        k[u] = 4 * q;
        is_w |= (unsigned)w << u;
        in_range |= (unsigned)ok << u;
    }

    // Copies stage k0's pieces of `which` (TILE_X, TILE_W), zero-filled past M, N and K (K % 4
    // == 0: a piece is wholly inside K or past it).
    __device__ __forceinline__ void copy(float *st, const float *base, int K, int k0,
                                         int which) const {
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (!(which & ((is_w >> u & 1u) ? TILE_W : TILE_X))) continue;
            const bool ok = (in_range >> u & 1u) && k0 + k[u] < K;
            cp_async16(st + raw[u], ok ? src[u] + k0 : base, ok ? 16 : 0);
        }
    }
};

// This thread's pieces in the shared-memory form (wg_piece), with their offsets in an operand set
// for the split.
template <int BN, int NT> struct wg_pieces : wg_copies<(kWgBM + BN) * (kWgKT / 4) / NT> {
    static constexpr int U = (kWgBM + BN) * (kWgKT / 4) / NT;
    static_assert((kWgBM + BN) * (kWgKT / 4) % NT == 0, "every thread has the same pieces");
    int op[U];

    __device__ __forceinline__ wg_pieces(const float *X, const float *W, int M, int N, int K,
                                         int m0, int n0) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            int r, q;
            wg_piece<NT>(u, r, q);
            const bool w = r >= kWgBM;
            this->set(u, w ? W : X, w ? n0 + (r - kWgBM) : m0 + r, w ? N : M, K, r, q, w);
            op[u] = gr_lin_wg_off(r, q);
        }
    }
};

// Stage k0's copy: the thread's own pieces where rows are 16-byte aligned, else tc_copy's
// shifted pieces (any thread's, so the split waits for a barrier).
template <int BN, int NT, bool VEC>
__device__ __forceinline__ void wg_copy(float *st, const wg_pieces<BN, NT> &pc,
                                        const float *__restrict__ X, const float *__restrict__ W,
                                        int M, int N, int K, int m0, int n0, int k0, int which) {
    if (VEC)
        pc.copy(st, X, K, k0, which);
    else
        tc_copy<kWgBM, BN, NT, false, kWgLD>(st, X, W, M, N, K, m0, n0, k0, which);
}

// Stage kt, by every thread of the block: wait for its raw copy, issue stage kt + S - 1's, split
// stage kt into operand set kt % 3, and end in the barrier after which the MMA warpgroup may read
// that set. Returns the set's big part (its small part follows at + OPS floats).
//
// Why this is safe with one barrier per stage (K % 4 == 0): a thread's copy and split touch only
// its own pieces, so its cp.async wait is enough before the split, and the raw buffer the next
// copy overwrites ((kt - 1) % S) was split by the same thread in stage kt - 1. Operand set kt % 3
// was last read by stage kt - 3's MMAs, which the MMA warpgroup waited for (wait_group 1 after
// stage kt - 2's) before it reached the barrier ending stage kt - 1, which every thread has
// passed. K % 4 != 0 (shifted pieces, split by other threads than their copiers) adds a barrier
// after the wait: every copy of stage kt has landed and every split of stage kt - 1 is done.
template <int BN, int S_, int NT, int PASSES, bool VEC>
__device__ __forceinline__ float *wg_stage(float *raw, float *ops, const float *__restrict__ X,
                                           const float *__restrict__ W, int M, int N, int K, int m0,
                                           int n0, int kt, int nk, const wg_pieces<BN, NT> &pc) {
    typedef wg_geom<BN, S_> G;
    constexpr int BM = kWgBM, KT = kWgKT, LD = kWgLD, S = G::S, RAW = G::RAW, OPS = G::OPS;
    constexpr int QR = KT / 4, U = G::ROWS * QR / NT;
    static_assert(G::ROWS * QR % NT == 0, "every thread splits the same number of pieces");
    cp_async_wait<S - 2>();
    if (!VEC) __syncthreads();
    if (kt + S - 1 < nk)
        wg_copy<BN, NT, VEC>(raw + (kt + S - 1) % S * RAW, pc, X, W, M, N, K, m0, n0,
                             (kt + S - 1) * KT, TILE_X | TILE_W);
    cp_async_commit();

    const float *st = raw + kt % S * RAW;
    float *big = ops + kt % G::SETS * 2 * OPS, *small = big + OPS;
    // all loads first, then the stores: the compiler cannot tell the stores from the loads
    // apart (both shared memory), and would otherwise issue each piece's load after the
    // previous piece's store
    float4 v[U];
    int off[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        if (VEC) {
            v[u] = lds128(st + pc.raw[u]);
            off[u] = pc.op[u];
            continue;
        }
        int r, q;
        wg_piece<NT>(u, r, q);
        // K % 4 != 0: the row's elements start `mis` columns into its raw row (tc_copy)
        const int row = r < BM ? m0 + r : n0 + (r - BM);
        const int mis = (int)(((unsigned)row * (unsigned)K) & 3u);
        v[u] = lds4<false>(st + r * LD + mis + 4 * q);
        off[u] = gr_lin_wg_off(r, q);
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        uint4 b4, s4;
        tf32_split<PASSES>(v[u].x, b4.x, s4.x);
        tf32_split<PASSES>(v[u].y, b4.y, s4.y);
        tf32_split<PASSES>(v[u].z, b4.z, s4.z);
        tf32_split<PASSES>(v[u].w, b4.w, s4.w);
        *reinterpret_cast<uint4 *>(big + off[u]) = b4;
        if (PASSES == 3) *reinterpret_cast<uint4 *>(small + off[u]) = s4;
    }
    fence_proxy_async();
    __syncthreads();
    return big;
}

// The epilogue of the MMA warpgroup (thread tid < 128): Y = act(sum of the NACC accumulators +
// bias). Lane (g, t) of warp w holds, per 8 columns c, rows 16 w + g and 16 w + g + 8, columns
// 8c + 2t and 8c + 2t + 1: acc[.][4c + 2h + j] is (row 16 w + g + 8h, column 8c + 2t + j). Two
// accumulators (3xTF32) are summed small-first.
template <int BN, int NACC, int ACT>
__device__ __forceinline__ void wg_store(const float (&acc)[NACC][BN / 2],
                                         const float *__restrict__ bias, float *__restrict__ Y,
                                         int M, int N, int m0, int n0, int tid) {
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int c = 0; c < BN / 8; c++) {
        const int n = n0 + 8 * c + 2 * t;
        const float b0 = n < N ? __ldg(bias + n) : 0.f, b1 = n + 1 < N ? __ldg(bias + n + 1) : 0.f;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int m = m0 + 16 * warp + g + 8 * h;
            if (m >= M) continue;
            const int i = 4 * c + 2 * h;
            const float s0 = NACC == 2 ? acc[NACC - 1][i] + acc[0][i] : acc[0][i];
            const float s1 = NACC == 2 ? acc[NACC - 1][i + 1] + acc[0][i + 1] : acc[0][i + 1];
            const float v0 = act_f<ACT>(s0 + b0), v1 = act_f<ACT>(s1 + b1);
            float *y = Y + (size_t)m * (size_t)N + n;
            if (n + 1 < N && N % 2 == 0) // n even: 8-byte aligned
                *reinterpret_cast<float2 *>(y) = make_float2(v0, v1);
            else {
                if (n < N) y[0] = v0;
                if (n + 1 < N) y[1] = v1;
            }
        }
    }
}

// The MMA warpgroup after its K loop: signal the dependent kernel (only the epilogue is left),
// wait for the last MMAs, store.
template <int BN, int NACC, int ACT>
__device__ __forceinline__ void wg_finish(float (&acc)[NACC][BN / 2], const float *__restrict__ bias,
                                          float *__restrict__ Y, int M, int N, int m0, int n0,
                                          int tid) {
    pdl_trigger();
    wg_wait<0>();
#pragma unroll
    for (int p = 0; p < NACC; p++)
        wg_fence_operand(acc[p]);
    wg_store<BN, NACC, ACT>(acc, bias, Y, M, N, m0, n0, tid);
}

// NWG warpgroups (128 threads each) copy and split every stage together; the first one also
// issues the MMAs and runs the epilogue. The two roles are separate loops over the same barrier
// sequence (wg_stage), so the accumulators live only in the MMA warpgroup's path: a path that
// merges with the others' makes ptxas wait for the MMAs at the merge (C7517), and wgmma under a
// branch it cannot prove warp-uniform is serialized (C7518), hence the shuffled warpgroup index.
template <int BN, int S_, int NWG, int PASSES, int ACT, bool VEC>
__global__ void __launch_bounds__(NWG * 128, 1)
    linear_wg_kernel(const float *__restrict__ X, const float *__restrict__ W,
                     const float *__restrict__ bias, float *__restrict__ Y, int M, int N, int K,
                     int pre) {
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL) // the host pass parses it too
    typedef wg_geom<BN, S_> G;
    constexpr int BM = kWgBM, KT = kWgKT, S = G::S, RAW = G::RAW, OPS = G::OPS, NT = NWG * 128;
    constexpr int NACC = PASSES == 3 ? 2 : 1, R = BN / 2;
    static_assert(PASSES == 1 || PASSES == 3, "TF32 or 3xTF32");
    extern __shared__ __align__(128) float wg_sm[];
    float *const raw = wg_sm;           // S stages of ROWS x LD floats
    float *const ops = wg_sm + S * RAW; // 3 sets of {big, small}, ROWS x KT floats each

    const int tid = (int)threadIdx.x;
    const int wgi = NWG == 1 ? 0 : __shfl_sync(0xffffffffu, tid / 128, 0);
    const int m0 = (int)blockIdx.x * BM, n0 = (int)blockIdx.y * BN;
    const int nk = (K + KT - 1) / KT;

    const wg_pieces<BN, NT> pc(X, W, M, N, K, m0, n0); // (unused when K % 4 != 0)
    if (pre)
        for (int s = 0; s < S - 1 && s < nk; s++)
            wg_copy<BN, NT, VEC>(raw + s * RAW, pc, X, W, M, N, K, m0, n0, s * KT, TILE_W);
    pdl_wait(); // X is the previous kernel's output
    for (int s = 0; s < S - 1; s++) {
        if (s < nk)
            wg_copy<BN, NT, VEC>(raw + s * RAW, pc, X, W, M, N, K, m0, n0, s * KT,
                                 pre ? TILE_X : TILE_X | TILE_W);
        cp_async_commit(); // possibly empty: one group per stage
    }

    if (wgi != 0) { // copy and split only
        for (int kt = 0; kt < nk; kt++)
            wg_stage<BN, S, NT, PASSES, VEC>(raw, ops, X, W, M, N, K, m0, n0, kt, nk, pc);
        pdl_trigger();
        return;
    }

    float acc[NACC][R];
#pragma unroll
    for (int p = 0; p < NACC; p++)
#pragma unroll
        for (int i = 0; i < R; i++)
            acc[p][i] = 0.f;
    for (int kt = 0; kt < nk; kt++) {
        const float *big =
            wg_stage<BN, S, NT, PASSES, VEC>(raw, ops, X, W, M, N, K, m0, n0, kt, nk, pc);
        const float *small = big + OPS;
        wg_fence();
        const uint64_t ab = wg_desc(big), bb = wg_desc(big + BM * KT);
        const uint64_t as = wg_desc(small), bs = wg_desc(small + BM * KT);
#pragma unroll
        for (int s = 0; s < KT / 8; s++) {
            const uint64_t o = (uint64_t)(2 * s * kWgLBO >> 4); // 8 k = 2 core matrices
            wgmma_tf32(acc[0], ab + o, bb + o);
            if (PASSES == 3) {
                wgmma_tf32(acc[NACC - 1], as + o, bb + o);
                wgmma_tf32(acc[NACC - 1], ab + o, bs + o);
            }
        }
        wg_commit();
        wg_wait<1>();
    }
    wg_finish<BN, NACC, ACT>(acc, bias, Y, M, N, m0, n0, tid);
#else
    __trap(); // built for sm_90a only; the check allows impl wg only on compute capability 9.0
#endif
}

// ---- Register A: x's fragments for the bulk form ----
//
// Why: the kernel above moves every element through shared memory three times per stage before
// the tensor cores read it (the cp.async landing, the split's load, the big and small stores) and
// the tensor cores then read A and B from shared memory for each of the three products: per
// 64 x 64 stage of 32 k about 112 KB of shared-memory traffic against 48 KB of MMA operands, ~875
// clk at 128 B/clk, where the MMAs take ~384 (run 42 measured ~1750 per stage). Here x never goes
// through the split's stores: the MMA warpgroup loads its fragments from the raw stage straight
// into registers, splits them there, and issues wgmma with A from registers (the big part for
// big x big and big x small, the small part for small x big); only W's parts go through shared
// memory, split by a W splitter warpgroup. Per stage: 16 KB landing, 8 KB of x fragment loads, 8
// KB of W split loads, 16 KB of W split stores, 24 KB of B operand reads: 72 KB.
//
// The k order inside a stage is permuted so that a lane's fragments are whole 16-byte loads: the
// tf32 A fragment of lane (g, t) in k-step s holds columns t and t + 4 of rows g and g + 8 (the
// mma.m16n8k8 layout), and logical column c of k-step s is stage column kl = 8 (c % 4) + 4 (c / 4)
// + s, so columns t of the four k-steps are kl = 8t .. 8t + 3 (one float4) and columns t + 4 are
// 8t + 4 .. 8t + 7. W's parts are stored in the same order: the 16-byte core-matrix row (k-step
// s, half h = c / 4, columns 4h .. 4h + 3) of W row n holds stage columns 8j + 4h + s, j = 0 .. 3,
// so a producer thread owning (n, h) loads the four pieces 8j + 4h .. 8j + 4h + 3 of its row and
// writes component s of each into k-step s's core-matrix row: 4 loads and 4 (8 with the small
// parts) 16-byte stores, as many as the kernel above. The sum over k is the same in any order.


// D[64, 64] += A[64, 8] B[64, 8]^T, A from registers (lane (g, t) of warp w: rows 16w + g and
// 16w + g + 8, columns t and t + 4 as a[0] (g, t), a[1] (g + 8, t), a[2] (g, t + 4), a[3]
// (g + 8, t + 4): the PTX ISA's register fragment for 32-bit A types, which CUTLASS's CuTe writes
// as ALayout_64x8), B K-major in shared memory (descriptor b), TF32 operands, fp32 accumulation.
__device__ __forceinline__ void wgmma_tf32_ra(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
    asm volatile(GR_WG_PRED "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 " GR_WG_R32
                            "}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
                 : GR_WG_D32(0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}

// W's splitter thread pt in the bulk forms: its PP pairs' pieces v[j][c] (logical column
// 4h + c of k-steps 0 .. 3 of row n, pair pt + 128 j: gr_lin_wgr_pair) split into big and small
// parts and stored as k-step s's core-matrix rows (2s + h) of operand set {big, small}.
template <int PP, int PASSES>
__device__ __forceinline__ void wgr_split_w(const float4 (&v)[PP][4], int pt, float *big,
                                            float *small) {
#pragma unroll
    for (int j = 0; j < PP; j++) {
        int n, h;
        gr_lin_wgr_pair(pt + 128 * j, &n, &h);
#pragma unroll
        for (int s = 0; s < 4; s++) {
            uint4 b4, s4;
            tf32_split<PASSES>(f4(v[j][0], s), b4.x, s4.x);
            tf32_split<PASSES>(f4(v[j][1], s), b4.y, s4.y);
            tf32_split<PASSES>(f4(v[j][2], s), b4.z, s4.z);
            tf32_split<PASSES>(f4(v[j][3], s), b4.w, s4.w);
            *reinterpret_cast<uint4 *>(big + gr_lin_wg_off(n, 2 * s + h)) = b4;
            if (PASSES == 3) *reinterpret_cast<uint4 *>(small + gr_lin_wg_off(n, 2 * s + h)) = s4;
        }
    }
}

// ---- Bulk form (configurations w64b and the tall w64b2; gr_lin_wgb_ok) ----
//
// Why: a register-A kernel with per-thread cp.async copies (w64r, removed: docs/removed_designs.md)
// spent ~1600 clk per 32-k stage of a 64 x 64 tile where its MMAs take ~384 (bot.1 13 us, run 54); Nsight Compute put its warps on their own cp.async waits
// (long scoreboard) and on the block barrier that every stage needs (change 14). Here no thread
// copies and no stage has a block barrier: one producer thread copies each stage's x and W tiles
// with the TMA unit (two tensor-map boxes of 64 rows x 32 k, 128-byte swizzled) into a ring of S
// raw slots, each completing on the slot's `full` mbarrier; the W splitter warpgroup and the MMA
// warpgroup each wait for exactly the slot they read and hand it back on its `rawfree` mbarrier;
// W's split parts go through 3 operand sets handed over on `opfull` / `opfree`. So the producer
// runs up to S stages ahead of the MMAs, the splitter up to 3, and nobody waits on a copy someone
// else issued except through the barrier that tracks it. Two MMA warpgroups take alternate
// stages into accumulators of their own (summed through shared memory at the end), so one can
// load and split its next stage's fragments while the other's MMAs run, and each waits for its
// own MMAs (wgmma.wait_group 0) before it writes a fragment register again: a register-A wgmma
// reads its A registers while it runs (run 44).
//
// Two details the hand-offs need (runs 57-59): the MMA warps __syncwarp after each mbarrier spin
// (wgmma is .aligned: the warp must arrive converged), and every consumer fences the async proxy
// (fence.proxy.async) after its reads of a slot, before it hands the slot back for the TMA to
// rewrite. Without both, the K = 512 shapes, where the ring wraps, gave results that differed
// between runs (runs 57-58: 2 and 5 shapes of 68); with both, every test passes (runs 59-60).
// Both went in together, so the runs do not say which one was needed.
//
// Measured (H200, B = 2048, per op in the graph): first with one 128-byte row per plain bulk
// copy (128 copies per stage, run 56): correct, but bot.1 68.6 us against w64r's 13.0, since the
// TMA unit takes small copies one at a time; with tensor maps (2 copies per stage) bot.1 11.01
// and top.1 11.10 us against w64r's 12.96 / 13.02, and fused_tf32x3 auto_wg --pdl 64.39-64.53 us
// against 67.36-67.57 (runs 59-60). Still ~3.5x the MMA time (16 stages x 384 clk = 3.1 us): Nsight
// Compute (run 57) shows the SMs active 75% of the kernel's cycles and 7.2 cycles per issued
// instruction, and the stall breakdown needs a source-level profile (not taken).
//
// Layout: a slot is x's box then W's, each 64 rows of 128 bytes in which TMA's 128-byte swizzle
// puts 16-byte chunk c of row r at chunk c ^ (r % 8) (so the fragment loads, 8 rows x 4 chunks
// per quarter warp, hit 32 different banks); slots are 1024-byte aligned, as the swizzle needs.
// The tensor maps zero-fill rows past M or N and columns past K, so a ragged tile needs no code.
//
// Rows that are not 16-byte aligned (K % 4 != 0; top.0's K = 367). Tensor maps need 16-byte row
// strides, so f = 4 / gcd(K, 4) consecutive rows are one map row of f K floats (gr_lin_wgb_fold;
// M and N must be multiples of f, gr_lin_wgb_ok, else the check takes gr_lin_wg_unbulk's
// configuration): a 64-row tile is f boxes of 64 / f map rows, box b holding tile rows f a + b
// (gr_lin_wgb_slot_row). Box b's k0 is b K + k0 floats into its map row, and the TMA stops on an
// illegal instruction where a box start is not 16-byte aligned (run 63, compute-sanitizer at
// tma_load_2d), so each box starts at that offset rounded down to 4 floats and is 36 floats wide
// (unswizzled; the stage's 32 columns start shift = b K % 4 floats into its rows,
// gr_lin_wgb_box), and the consumers read 4 floats at a time from there (wgb_ld). In the last
// stage the boxes b < f - 1 run on into the next row's first columns instead of zero fill: the
// consumers zero columns past K (wgb_mask). With K odd the 4 boxes' shifts are 0..3 in some order,
// so a quarter warp's fragment loads still hit 32 different banks. The fold is a template
// parameter (LF), so the f = 1 kernel is the swizzled code above unchanged (a first version with
// the fold at run time took bot.1 from 11.0 to 13.2 us, run 62).
//
// The tall form (w64b2, TALL): 128 x 64 tiles, the two MMA warpgroups on the two 64-row halves of
// x (both take every stage; one split W serves both), each storing its own rows. At M = 2048, N =
// 512 that is one wave of 128 blocks, where 64 x 64 tiles need 256 blocks in two waves on 132 SMs:
// top.0 (K = 367) in w64b 24.54 us per op against w128's 22.88 (run 64), in w64b2 16.29 against
// 22.56 (run 65; alone 17.09 against 23.42 us, and 15.71 against 21.41 at K = 512). The check takes
// it where its blocks reach 3/4 of the SMs (dlrm.c wg_config).
//
// Threads: warpgroups 0 and 1 the MMAs (0 also the epilogue; tall: both), warpgroup 2 W's split,
// warp 12 the copies (416).
// With `pre` the producer copies the W boxes of the first S stages before griddepcontrol.wait.
// Row fold LF (log2 f): slot rows of P = 32 floats, 128-byte swizzled (f = 1), or P = 36,
// unswizzled, for the shifted boxes of f > 1 (gr_lin_wgb_box). TALL: 128 x rows (w64b2), two
// 64-row halves one after the other in the slot, else 64. BYTES, the allocation, is the larger
// (f > 1) size whatever LF (gr_lin_wg_smem).
template <int BN, int S_, int LF = 0, int TALL = 0> struct wgb_geom {
    static constexpr int S = S_, SETS = 3, P = LF ? kWgLD : kWgKT, XR = kWgBM << TALL;
    static constexpr int XBOX = XR * P, RAW = (XR + BN) * P, OPS = BN * kWgKT;
    static constexpr int FLOATS = S * RAW + SETS * 2 * OPS;
    static constexpr int BARS = 2 * S + 2 * SETS; // full, rawfree per slot; opfull, opfree per set
    // MMA warpgroup 1's sums, for warpgroup 0 (TALL: each stores its own rows)
    static constexpr int RED = TALL ? 0 : 128 * (BN / 2);
    // + 1024 bytes to align the ring to 1024 (the dynamic shared memory's base is not)
    static constexpr size_t BYTES =
        (size_t)(S * (XR + BN) * kWgLD + SETS * 2 * OPS + RED) * sizeof(float) +
        (size_t)BARS * 8 + 1024;
    static_assert(RAW * sizeof(float) % (LF ? 128 : 1024) == 0,
                  "every slot 1024-byte aligned (128 unswizzled)");
    static_assert((kWgBM >> LF) * P * sizeof(float) % (LF ? 128 : 1024) == 0,
                  "and every box in it");
    static_assert((size_t)(FLOATS + RED) * sizeof(float) + (size_t)BARS * 8 + 1024 <= BYTES,
                  "inside the allocation");
};

// Float offset of the 16-byte chunk c of row r in a 128-byte swizzled box.
__device__ __forceinline__ int wgb_swz(int r, int c) {
    return r * kWgKT + ((c ^ (r & 7)) << 2);
}

// Stage columns 4c .. 4c + 3 of the slot row sr of an operand tile at st: a swizzled 16-byte
// chunk (LF = 0), or 4 floats `shift` on in a 36-float row (LF > 0: 4-byte aligned only).
template <int LF>
__device__ __forceinline__ float4 wgb_ld(const float *st, int sr, int shift, int c) {
    if (LF == 0) return lds128(st + wgb_swz(sr, c));
    return lds4<false>(st + sr * kWgLD + shift + 4 * c);
}

// Zeroes the elements of a 16-byte chunk at stage columns c0 .. c0 + 3 that are past K (rem: the
// stage's columns inside K). Only a ragged last stage calls it: with a row fold f > 1 the boxes
// of rows f a + b, b < f - 1, run on into row f a + b + 1 there instead of zero fill
// (gr_lin_wgb_fold).
__device__ __forceinline__ float4 wgb_mask(float4 v, int c0, int rem) {
    if (c0 >= rem) v.x = 0.f;
    if (c0 + 1 >= rem) v.y = 0.f;
    if (c0 + 2 >= rem) v.z = 0.f;
    if (c0 + 3 >= rem) v.w = 0.f;
    return v;
}

// The producer's copy of one 64-row operand tile of stage k0 (rows row0 .. row0 + 63 of the map
// with row fold F = 1 << LF: F boxes, box b the rows F a + b, gr_lin_wgb_box).
template <int LF>
__device__ __forceinline__ void wgb_load(float *dst, const CUtensorMap *map, int k0, int row0,
                                         int K, unsigned long long *bar) {
    constexpr int f = 1 << LF, bh = kWgBM >> LF, P = LF ? kWgLD : kWgKT; // map rows per box
#pragma unroll
    for (int b = 0; b < f; b++) {
        int c0, c1, shift;
        gr_lin_wgb_box(b, f, K, k0, row0, &c0, &c1, &shift);
        tma_load_2d(dst + b * bh * P, map, c0, c1, bar);
    }
}

// A thread's A fragments of one stage, split (big; small with 3xTF32): [k-step][register].
struct wgb_frag {
    uint32_t b[4][4], s[4][4];
};

// Makes a fragment set's values final here (before the stage's wgmma.fence), so the compiler
// does not sink the split below the first wgmma (ptxas would then inject a warpgroup.arrive
// before each wgmma that reads a late register, C7519).
template <int PASSES> __device__ __forceinline__ void wgb_pin(wgb_frag &f) {
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            asm volatile("" : "+r"(f.b[i][j]));
            if (PASSES == 3) asm volatile("" : "+r"(f.s[i][j]));
        }
}

// The MMA warpgroup's stage kt: wait for the slot, load and split this lane's fragments (tile
// rows r0 and r0 + 8, at slot rows s0 and s1 with the rows' box shift sh, stage columns 8t ..
// 8t + 7 in the register-A form's k order: chunks 2t, 2t + 1; zero past K), hand the slot back,
// wait for W's parts, issue the stage's wgmma (one commit group).
template <int BN, int S, int PASSES, int LF, int TALL>
__device__ __forceinline__ void wgb_mma_stage(float (&acc)[PASSES == 3 ? 2 : 1][BN / 2],
                                              wgb_frag &f, const float *raw, const float *ops,
                                              unsigned long long *full,
                                              unsigned long long *rawfree,
                                              unsigned long long *opfull, int kt, int s0, int s1,
                                              int sh, int t, int K) {
    typedef wgb_geom<BN, S, LF, TALL> G;
    constexpr int NACC = PASSES == 3 ? 2 : 1, NH = BN / 64;
    const int sl = kt % S, o = kt % G::SETS;
    mbar_wait(full + sl, (unsigned)(kt / S) & 1u);
    __syncwarp();
    const float *st = raw + sl * G::RAW; // (TALL: raw is this warpgroup's half)
    float4 x0 = wgb_ld<LF>(st, s0, sh, 2 * t), x1 = wgb_ld<LF>(st, s0, sh, 2 * t + 1);
    float4 y0 = wgb_ld<LF>(st, s1, sh, 2 * t), y1 = wgb_ld<LF>(st, s1, sh, 2 * t + 1);
    fence_proxy_async(); // these generic reads before the TMA's rewrite of the slot
    mbar_arrive(rawfree + sl);
    const int rem = K - kt * kWgKT;
    if (LF > 0 && rem < kWgKT) { // (row fold 1: the TMA's zero fill)
        x0 = wgb_mask(x0, 8 * t, rem), x1 = wgb_mask(x1, 8 * t + 4, rem);
        y0 = wgb_mask(y0, 8 * t, rem), y1 = wgb_mask(y1, 8 * t + 4, rem);
    }
#pragma unroll
    for (int s = 0; s < 4; s++) {
        tf32_split<PASSES>(f4(x0, s), f.b[s][0], f.s[s][0]);
        tf32_split<PASSES>(f4(y0, s), f.b[s][1], f.s[s][1]);
        tf32_split<PASSES>(f4(x1, s), f.b[s][2], f.s[s][2]);
        tf32_split<PASSES>(f4(y1, s), f.b[s][3], f.s[s][3]);
    }
    mbar_wait(opfull + o, (unsigned)(kt / G::SETS) & 1u);
    __syncwarp(); // wgmma is .aligned: the warp converged after the spin
    const float *wb = ops + o * 2 * G::OPS;
    const uint64_t bb = wg_desc(wb), bs = wg_desc(wb + G::OPS);
    wgb_pin<PASSES>(f);
    wg_fence();
#pragma unroll
    for (int s = 0; s < 4; s++)
#pragma unroll
        for (int hb = 0; hb < NH; hb++) {
            const uint64_t off = (uint64_t)((2 * s * kWgLBO + hb * 8 * kWgSBO) >> 4);
            float(&d0)[32] = *reinterpret_cast<float(*)[32]>(&acc[0][32 * hb]);
            float(&d1)[32] = *reinterpret_cast<float(*)[32]>(&acc[NACC - 1][32 * hb]);
            wgmma_tf32_ra(d0, f.b[s], bb + off);
            if (PASSES == 3) {
                wgmma_tf32_ra(d1, f.s[s], bb + off);
                wgmma_tf32_ra(d1, f.b[s], bs + off);
            }
        }
    wg_commit();
}

template <int BN, int S_, int PASSES, int ACT, int LF, int TALL>
__global__ void __launch_bounds__(416, 1)
    linear_wgb_kernel(const __grid_constant__ CUtensorMap tmx, const __grid_constant__ CUtensorMap tmw,
                      const float *__restrict__ bias, float *__restrict__ Y, int M, int N, int K,
                      int pre) {
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
    typedef wgb_geom<BN, S_, LF, TALL> G;
    constexpr int BM = G::XR, KT = kWgKT, S = G::S, SETS = G::SETS, OPS = G::OPS;
    constexpr int PP = 2 * BN / 128, NACC = PASSES == 3 ? 2 : 1;
    constexpr unsigned STAGE_BYTES = (unsigned)G::RAW * 4u; // whole boxes, zero fill included
    static_assert(PASSES == 1 || PASSES == 3, "TF32 or 3xTF32");
    static_assert(KT == 32, "the k permutation covers 4 k-steps of 8; a box row is 128 bytes");
    static_assert(BN == 64, "gr_lin_wg_unbulk: no 128-wide bulk form (registers)");
    extern __shared__ __align__(128) unsigned char wgb_sm[];
    float *const raw = reinterpret_cast<float *>(
        wgb_sm + ((1024u - (smem_u32(wgb_sm) & 1023u)) & 1023u)); // S slots, 1024-aligned
    float *const ops = raw + S * G::RAW; // 3 sets of W's {big, small}, BN x KT floats each
    unsigned long long *const full = reinterpret_cast<unsigned long long *>(raw + G::FLOATS);
    unsigned long long *const rawfree = full + S, *const opfull = rawfree + S;
    unsigned long long *const opfree = opfull + SETS;

    const int tid = (int)threadIdx.x;
    const int warp = __shfl_sync(0xffffffffu, tid / 32, 0), lane = tid & 31;
    const int m0 = (int)blockIdx.x * BM, n0 = (int)blockIdx.y * BN;
    const int nk = (K + KT - 1) / KT;
    constexpr int f = 1 << LF; // the row fold, gr_lin_wgb_fold(K)
    if (tid == 0) {
        for (int i = 0; i < S; i++) {
            mbar_init(full + i, 1);      // the producer's expect_tx arrival (+ the bytes)
            // the stage's MMA warpgroup (TALL: both) and the splitter, after their reads
            mbar_init(rawfree + i, TALL ? 384 : 256);
        }
        for (int i = 0; i < SETS; i++) {
            mbar_init(opfull + i, 128); // every splitter thread, after its stores
            mbar_init(opfree + i, TALL ? 256 : 128); // the stage's MMA warpgroup(s), after the MMAs
        }
        mbar_init_fence();
    }
    __syncthreads();

    if (warp == 12) { // the producer: one thread
        if (lane == 0) {
            const int npre = min(S, nk);
            // each stage's expected bytes before any of its copies, so no barrier completes early
            for (int kt = 0; kt < npre; kt++) {
                mbar_expect_tx(full + kt, STAGE_BYTES);
                if (pre) wgb_load<LF>(raw + kt * G::RAW + G::XBOX, &tmw, kt * KT, n0, K, full + kt);
            }
            pdl_wait(); // X is the previous kernel's output
            for (int kt = 0; kt < npre; kt++) {
                for (int h = 0; h <= TALL; h++) // x: one 64-row half, or two (TALL)
                    wgb_load<LF>(raw + kt * G::RAW + h * kWgBM * G::P, &tmx, kt * KT,
                                 m0 + h * kWgBM, K, full + kt);
                if (!pre)
                    wgb_load<LF>(raw + kt * G::RAW + G::XBOX, &tmw, kt * KT, n0, K, full + kt);
            }
            for (int kt = npre; kt < nk; kt++) {
                const int sl = kt % S;
                mbar_wait(rawfree + sl, (unsigned)(kt / S - 1) & 1u);
                mbar_expect_tx(full + sl, STAGE_BYTES);
                for (int h = 0; h <= TALL; h++)
                    wgb_load<LF>(raw + sl * G::RAW + h * kWgBM * G::P, &tmx, kt * KT,
                                 m0 + h * kWgBM, K, full + sl);
                wgb_load<LF>(raw + sl * G::RAW + G::XBOX, &tmw, kt * KT, n0, K, full + sl);
            }
        }
        pdl_trigger();
        return;
    }

    if (warp >= 8) { // W's splitter warpgroup
        const int pt = tid - 256;
        int srow[PP], half[PP], shift[PP]; // each pair's slot row, half and box shift
#pragma unroll
        for (int j = 0; j < PP; j++) {
            int n, c0, c1;
            gr_lin_wgr_pair(pt + 128 * j, &n, &half[j]);
            srow[j] = gr_lin_wgb_slot_row(n, f);
            gr_lin_wgb_box(n % f, f, K, 0, 0, &c0, &c1, &shift[j]);
        }
        for (int kt = 0; kt < nk; kt++) {
            const int sl = kt % S, o = kt % SETS;
            mbar_wait(full + sl, (unsigned)(kt / S) & 1u);
            const float *wt = raw + sl * G::RAW + G::XBOX;
            float4 v[PP][4];
#pragma unroll
            for (int j = 0; j < PP; j++)
#pragma unroll
                for (int c = 0; c < 4; c++) // logical column 4h + c of k-steps 0 .. 3: chunk 2c + h
                    v[j][c] = wgb_ld<LF>(wt, srow[j], shift[j], 2 * c + half[j]);
            fence_proxy_async(); // these generic reads before the TMA's rewrite of the slot
            mbar_arrive(rawfree + sl);
            const int rem = K - kt * KT;
            if (LF > 0 && rem < KT)
#pragma unroll
                for (int j = 0; j < PP; j++)
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        v[j][c] = wgb_mask(v[j][c], 8 * c + 4 * half[j], rem);
            if (kt >= SETS) mbar_wait(opfree + o, (unsigned)(kt / SETS - 1) & 1u);
            float *big = ops + o * 2 * OPS, *small = big + OPS;
            wgr_split_w<PP, PASSES>(v, pt, big, small);
            fence_proxy_async(); // the stores are generic-proxy writes; wgmma reads them async
            mbar_arrive(opfull + o);
        }
        pdl_trigger();
        return;
    }

    // the MMA warpgroups: mw takes the stages kt with kt % 2 == mw into its own accumulators
    // (TALL: every stage, for x rows 64 mw .. 64 mw + 63)
    const int mw = warp >> 2, g = lane >> 2, t = lane & 3, r0 = 16 * (warp & 3) + g;
    const int s0 = gr_lin_wgb_slot_row(r0, f), s1 = gr_lin_wgb_slot_row(r0 + 8, f);
    int sh, c0, c1; // rows r0 and r0 + 8 are in one box (f divides 8): one shift
    gr_lin_wgb_box(r0 % f, f, K, 0, 0, &c0, &c1, &sh);
    float acc[NACC][BN / 2];
#pragma unroll
    for (int p = 0; p < NACC; p++)
#pragma unroll
        for (int i = 0; i < BN / 2; i++)
            acc[p][i] = 0.f;
#pragma unroll
    for (int p = 0; p < NACC; p++) // every accumulator defined before the first wgmma (C7515)
        wg_fence_operand(acc[p]);
    wgb_frag fr;
    const float *const xr = raw + (TALL ? mw * kWgBM * G::P : 0);
    for (int kt = TALL ? 0 : mw; kt < nk; kt += TALL ? 1 : 2) {
        wgb_mma_stage<BN, S, PASSES, LF, TALL>(acc, fr, xr, ops, full, rawfree, opfull, kt, s0, s1,
                                               sh, t, K);
        wg_wait<0>(); // before this warpgroup writes any fragment register again
        mbar_arrive(opfree + kt % SETS);
    }
#pragma unroll
    for (int p = 0; p < NACC; p++)
        wg_fence_operand(acc[p]);
    if (TALL) {
        pdl_trigger();
        wg_store<BN, NACC, ACT>(acc, bias, Y, M, N, m0 + kWgBM * mw, n0, tid & 127);
        return;
    }
    // one sum per output (small terms first, as wg_store), then warpgroup 1's sums into 0's
    // through shared memory ([i][thread]: a warp's stores hit 32 banks)
    float *const red = reinterpret_cast<float *>(opfree + SETS);
    const int mt = tid & 127;
#pragma unroll
    for (int i = 0; i < BN / 2; i++) {
        acc[0][i] = NACC == 2 ? acc[NACC - 1][i] + acc[0][i] : acc[0][i];
        if (mw == 1) red[i * 128 + mt] = acc[0][i];
    }
    asm volatile("bar.sync 1, 256;" ::: "memory"); // the MMA warpgroups only
    if (mw == 1) {
        pdl_trigger();
        return;
    }
#pragma unroll
    for (int i = 0; i < BN / 2; i++)
        acc[0][i] += red[i * 128 + mt];
    pdl_trigger();
    wg_store<BN, 1, ACT>(reinterpret_cast<const float(&)[1][BN / 2]>(acc[0]), bias, Y, M, N, m0,
                         n0, mt);
#else
    __trap(); // built for sm_90a only; the check allows impl wg only on compute capability 9.0
#endif
}

// The staged kernel of family F (a struct whose `template <int PASSES, int ACT, bool VEC> static
// gr_lin_staged_kernel_t k()` names one instantiation, and `smem()` its dynamic shared memory)
// for the op's passes (math tf32x3: 3, else 1), activation and copy width (K % 4 == 0: 16-byte
// copies).
template <class F, int P, bool V> gr_lin_staged_kernel_t lin_pick_act(int act) {
    switch (act) {
    case GR_DLRM_ACT_RELU:
        return F::template k<P, GR_DLRM_ACT_RELU, V>();
    case GR_DLRM_ACT_SIGMOID:
        return F::template k<P, GR_DLRM_ACT_SIGMOID, V>();
    default:
        return F::template k<P, GR_DLRM_ACT_NONE, V>();
    }
}

template <class F> gr_lin_staged_kernel_t lin_pick(const gr_op *op, size_t *smem) {
    *smem = F::smem();
    const int act = (int)op->ip[GR_LIN_ACT];
    const bool x3 = (op->ip[GR_LIN_FLAGS] & GR_LIN_F_TF32X3) != 0;
    if (op->ip[GR_LIN_VEC]) return x3 ? lin_pick_act<F, 3, true>(act) : lin_pick_act<F, 1, true>(act);
    return x3 ? lin_pick_act<F, 3, false>(act) : lin_pick_act<F, 1, false>(act);
}

// The kernel family (lin_pick) of configuration CFG (a GR_LIN_WCFG_* list: BN,
// NWG, S, FORM).
template <int BN, int NWG, int S, int FORM> struct wg_family {
    static_assert(wg_geom<BN, S>::FLOATS * sizeof(float) <= 227 * 1024, "fits an H100/H200 block");
    static_assert(FORM == 0, "the shared-memory form");
    template <int PASSES, int ACT, bool VEC> static gr_lin_staged_kernel_t k() {
        return linear_wg_kernel<BN, S, NWG, PASSES, ACT, VEC>;
    }
    static size_t smem() { return (size_t)wg_geom<BN, S>::FLOATS * sizeof(float); }
};

// The bulk form's kernel for the op's passes and activation.
template <int BN, int NWG, int S, int FORM> struct wgb_family {
    static_assert((FORM == 2 || FORM == 3) && NWG == 3,
                  "the bulk form: 2 MMA warpgroups and a splitter");
    static constexpr int TALL = FORM == 3;
    static_assert(wgb_geom<BN, S, 0, TALL>::BYTES <= 227 * 1024, "fits an H100/H200 block");
    template <int PASSES, int LF> static gr_lin_wgb_kernel_t k(int act) {
        switch (act) {
        case GR_DLRM_ACT_RELU:
            return linear_wgb_kernel<BN, S, PASSES, GR_DLRM_ACT_RELU, LF, TALL>;
        case GR_DLRM_ACT_SIGMOID:
            return linear_wgb_kernel<BN, S, PASSES, GR_DLRM_ACT_SIGMOID, LF, TALL>;
        default:
            return linear_wgb_kernel<BN, S, PASSES, GR_DLRM_ACT_NONE, LF, TALL>;
        }
    }
    template <int PASSES> static gr_lin_wgb_kernel_t k(int act, int fold) {
        return fold == 4 ? k<PASSES, 2>(act) : fold == 2 ? k<PASSES, 1>(act) : k<PASSES, 0>(act);
    }
    static size_t smem() { return wgb_geom<BN, S, 0, TALL>::BYTES; }
};

} // namespace

template <class F> gr_lin_wgb_kernel_t wgb_pick(const gr_op *op, size_t *smem) {
    *smem = F::smem();
    const int act = (int)op->ip[GR_LIN_ACT];
    const int fold = gr_lin_wgb_fold(op->ip[GR_LIN_K]);
    return (op->ip[GR_LIN_FLAGS] & GR_LIN_F_TF32X3) ? F::template k<3>(act, fold)
                                                     : F::template k<1>(act, fold);
}

gr_lin_wgb_kernel_t gr_lin_wgb_kernel_of(const gr_op *op, size_t *smem) {
    *smem = 0;
    if (!gr_lin_wgb_ok(op->ip[GR_LIN_M], op->ip[GR_LIN_N], op->ip[GR_LIN_K])) return NULL;
    switch ((int)op->ip[GR_LIN_BN]) {
    case GR_LIN_W64B: return wgb_pick<wgb_family<GR_LIN_WCFG_64B>>(op, smem);
    case GR_LIN_W64B2: return wgb_pick<wgb_family<GR_LIN_WCFG_64B2>>(op, smem);
    default: return NULL;
    }
}

gr_lin_staged_kernel_t gr_lin_wg_kernel_of(const gr_op *op, size_t *smem) {
    switch ((int)op->ip[GR_LIN_BN]) {
    case GR_LIN_W64: return lin_pick<wg_family<GR_LIN_WCFG_64>>(op, smem);
    case GR_LIN_W128: return lin_pick<wg_family<GR_LIN_WCFG_128>>(op, smem);
    default: *smem = 0; return NULL;
    }
}
