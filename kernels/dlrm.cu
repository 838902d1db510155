// DLRM kernels (device side), fp32. Every kernel is launched through gr_launch(), so --pdl may
// overlap its launch with the previous kernel's tail.
//
// PDL protocol of the fused-path kernels (embedding bags, the interactions, linear_act): read only data that no op writes (tables, indices, weights: the check sets *_PRE
// when that holds for the plan) before griddepcontrol.wait, everything else after it; and signal
// griddepcontrol.launch_dependents only after that wait, never before. Signalling at entry,
// before waiting (what gr_pdl_enter() does, and what these kernels did first), lets the next
// kernel launch at once, that one signals at its entry and lets the one after it launch, and so
// on: the blocks of several later kernels sit on the SMs waiting, and when each finally runs,
// its blocks are wherever there was room, several to an SM, instead of one per SM. That is our
// reading of the H200 measurement with entry signalling: B = 128 fused took 58.3 us per batch
// with PDL against 40.8 us without (and nothing was read before the wait, so PDL bought no
// overlap). A kernel that signals only after its own wait has at most one successor on the
// SMs. The light kernels (embedding bags, interactions) signal right after the wait, so the
// next Linear layer loads its first weights while they work; the Linear kernel, whose
// successor is as heavy as itself, signals after its K loop (as CUTLASS's kernels do). The
// small unfused-path kernels (bias_add, sigmoid,
// concat, tril_gather) keep gr_pdl_enter(): they are short grid-stride loops with nothing to
// prefetch.
//
// Napkin math at B = 128, D = 16, 26 tables, bag 1 (the reference DLRM Kaggle shape):
// - embedding: 128 x 26 rows of 64 B gathered = 213 KB read, 213 KB written; one launch for all
//   tables (TBE) instead of 26, or no launch of its own when fused into the interaction.
//   Latency-bound: two dependent loads (index, then row) per 16-byte piece.
// - MLPs: bottom 13-512-256-64-16 is 155 K MAC per row, top 367-512-256-1 is 319 K MAC per row:
//   61 M MAC at B = 128 (~1.8 us of the H200's 67 TFLOP/s fp32 with all 132 SMs busy), 971 M MAC
//   at B = 2048 (~29 us at the fp32 peak). Weights: 1.4 MB, read once per step (from L2).
// - interaction: 351 dots of 16 per row = 11 K flop per row; the fused kernel reads x and E
//   once (1.7 KB per row) and writes 367 floats; unfused it is concat (write T), a batched GEMM
//   (27 x 27 per row, half of it wasted), the triangle gather and a second concat.
#include <cuda.h>
#include <cudaTypedefs.h> /* PFN_cuTensorMapEncodeTiled */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "core/cuda_check.h"
#include "kernels/dlrm.h"
#include "kernels/dlrm_dev.cuh"
#include "kernels/launch.cuh"

namespace {

// ---------- embedding bags (one table, or T tables in one launch) ----------

// Pooled piece q (16 bytes when VEC, D % 4 == 0; else one float, in .x) of one bag: the rows
// ix[0 .. bag-1] of a table, summed and scaled. Rows outside [0, rows) are skipped (they add
// nothing), as in the CPU reference: a bad index never reads outside a table.
template <typename IDX, bool VEC>
__device__ __forceinline__ float4 bag_piece(const float *tab, const IDX *ix, int64_t rows, int D,
                                            int bag, int q, float scale) {
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int j = 0; j < bag; j++) {
        const int64_t r = (int64_t)ix[j];
        if (r < 0 || r >= rows) continue;
        if (VEC) {
            const float4 v = __ldg(reinterpret_cast<const float4 *>(tab + r * D) + q);
            acc.x += v.x;
            acc.y += v.y;
            acc.z += v.z;
            acc.w += v.w;
        } else {
            acc.x += __ldg(tab + r * D + q);
        }
    }
    acc.x *= scale;
    acc.y *= scale;
    acc.z *= scale;
    acc.w *= scale;
    return acc;
}

// Table and index pointers travel by value in the kernel's parameter block (at most 32 tables:
// 800 bytes of the 4 KB limit). The parameter block is copied into the graph node at capture,
// so no device array of pointers, no setup() copy and no teardown are needed; __grid_constant__
// lets the kernel index it with a runtime table number without a local copy.
struct emb_args {
    const float *table[GR_EMB_MAX_TABLES];
    const void *idx[GR_EMB_MAX_TABLES];
    int64_t rows[GR_EMB_MAX_TABLES];
    float *out;
    int64_t B;
    int T, D, bag;
    float scale;
    int pre; // tables and indices are written by no op: gather before the PDL wait
};

template <typename IDX, bool VEC>
__device__ __forceinline__ float4 emb_piece(const emb_args &a, int64_t g, int per_row) {
    const int q = (int)(g % per_row);
    const int64_t bt = g / per_row; // b * T + t
    const int t = (int)(bt % a.T);
    const int64_t b = bt / a.T;
    return bag_piece<IDX, VEC>(a.table[t], static_cast<const IDX *>(a.idx[t]) + b * a.bag,
                               a.rows[t], a.D, a.bag, q, a.scale);
}

// One thread per 16-byte piece (VEC) or per float of an output row (b, t); adjacent threads take
// adjacent pieces, then adjacent tables of one batch row, so the output is written
// contiguously. With `pre`, a thread's first piece (the only one at small B) is gathered before
// the PDL wait: the two dependent loads overlap the previous kernel; only the store waits.
// Signals its dependents right after the wait (see the protocol at the top).
template <typename IDX, bool VEC>
__global__ void __launch_bounds__(128) embedding_kernel(const __grid_constant__ emb_args a) {
    const int per_row = VEC ? a.D / 4 : a.D;
    const int64_t total = a.B * a.T * per_row;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
    if (a.pre && g < total) v = emb_piece<IDX, VEC>(a, g, per_row);
    pdl_wait();
    pdl_trigger();
    for (bool first = true; g < total; g += stride, first = false) {
        if (!first || !a.pre) v = emb_piece<IDX, VEC>(a, g, per_row);
        if (VEC)
            reinterpret_cast<float4 *>(a.out)[g] = v; // piece g is floats 4g .. 4g + 3
        else
            a.out[g] = v.x;
    }
}

// ---------- bias add, sigmoid ----------

__global__ void bias_add_kernel(const float *x, const float *__restrict__ bias,
                                float *y, int64_t n, int64_t N) {
    gr_pdl_enter();
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = x[i] + bias[i % N];
}

__global__ void sigmoid_kernel(const float *x, float *y, int64_t n) {
    gr_pdl_enter();
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = 1.f / (1.f + expf(-x[i]));
}

// ---------- concat along dim 1, lower-triangle gather ----------

struct cat_args {
    const float *in[GR_CONCAT_MAX_INPUTS];
    int64_t cols[GR_CONCAT_MAX_INPUTS];
    int64_t off[GR_CONCAT_MAX_INPUTS];
    float *out;
    int64_t rows, C;
};

// Grid row blockIdx.y copies input y: contiguous reads, rows written at stride C.
__global__ void concat_kernel(const __grid_constant__ cat_args a) {
    gr_pdl_enter();
    const int i = blockIdx.y;
    const int64_t c = a.cols[i], n = a.rows * c, off = a.off[i];
    const float *src = a.in[i];
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < n; g += stride) {
        const int64_t r = g / c;
        a.out[r * a.C + off + (g - r * c)] = src[g];
    }
}

// Pair p of the strict lower triangle, row by row: p = i (i - 1) / 2 + j, j < i. The row comes
// from a single-precision square root (the fp64 one is a long instruction sequence, paid for
// every pair of every row) and is then corrected exactly in integers, so the result is exact
// for every p: the estimate is off by at most one for p < 2^24 and by a few far beyond.
__device__ __forceinline__ void tril_pair(int64_t p, int &i, int &j) {
    int64_t r = (int64_t)((1.0f + sqrtf(8.0f * (float)p + 1.0f)) * 0.5f);
    if (r < 1) r = 1;
    while (r > 1 && r * (r - 1) / 2 > p) r--;
    while ((r + 1) * r / 2 <= p) r++;
    i = (int)r;
    j = (int)(p - r * (r - 1) / 2);
}

__global__ void tril_kernel(const float *__restrict__ z, float *__restrict__ y, int64_t B,
                            int64_t n, int64_t P) {
    gr_pdl_enter();
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < B * P; g += stride) {
        const int64_t b = g / P, p = g - b * P;
        int i, j;
        tril_pair(p, i, j);
        y[g] = z[(b * n + i) * n + j];
    }
}

// ---------- dot interaction (alone, or with the embedding gather fused in) ----------
//
// One interaction row is the D floats of vector 0 (the bottom MLP's output), then the P = F (F -
// 1) / 2 dots of the pairs j < i of the row's F = T + 1 vectors. The dots are computed as the
// lower triangle of the row's F x F Gram matrix in 4 x 4 blocks (bj <= bi: 28 blocks of 16 dots
// for F = 27, 448 dots for 351): a thread per block loads its 4 + 4 vectors 16 bytes at a time
// (8 loads per 64 FMAs) from their slots (gr_ix_slot: the 4 vectors of a block are nb slots
// apart, and slots an odd number of 16-byte units apart, so the lanes of a warp spread over the
// bank groups). The kernels before this layout made every dot in one thread from scalar loads (2
// loads per FMA) after decoding its pair (i, j) with a square root: Nsight Compute on the H200
// (run 50, B = 2048) showed embedding_interaction issue-bound, 5.78 M warp instructions (2820
// per row, for 176 warp FMAs' worth of work), 57% of the issue slots busy, 9.9 us.
// Each k accumulates in the same order as the reference's dot (k = 0 .. D - 1 from 0), so a dot
// of two vectors is bit-identical to it.

// The 4 x 4 dot blocks of rows 0 .. nrows - 1, one item (row, block) per thread and round; the
// dots go to out rows (row stride rowlen) at D + p. f_s holds the rows' vectors, 4 nb slots of
// ldf floats per row.
template <int NT>
__device__ __forceinline__ void ix_dots(const float *f_s, int nrows, int nb, int ldf, int D, int F,
                                        int rowlen, float *out) {
    const int nblk = nb * (nb + 1) / 2, sstep = nb * ldf, rstep = 4 * nb * ldf;
    for (int it = threadIdx.x; it < nrows * nblk; it += NT) {
        const int r = it / nblk, blk = it - r * nblk;
        int bi = 0;
        while ((bi + 1) * (bi + 2) / 2 <= blk)
            bi++;
        const int bj = blk - bi * (bi + 1) / 2;
        const float *fa = f_s + r * rstep + bi * ldf, *fb = f_s + r * rstep + bj * ldf;
        float z[4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                z[i][j] = 0.f;
        for (int k = 0; k < D; k += 4) { // up to D rounded up to 4: zeros there
            float4 av[4], bv[4];
#pragma unroll
            for (int i = 0; i < 4; i++)
                av[i] = lds128(fa + i * sstep + k);
#pragma unroll
            for (int j = 0; j < 4; j++)
                bv[j] = lds128(fb + j * sstep + k);
            fma4x4(z, av, bv);
        }
        float *o = out + r * rowlen + D;
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const int vi = 4 * bi + i, vj = 4 * bj + j;
                if (vi < F && vj < vi) o[vi * (vi - 1) / 2 + vj] = z[i][j];
            }
    }
}

// n consecutive floats of output rows from shared memory to dst: 16-byte stores where dst is
// 16-byte aligned (the rows of a group are contiguous in R).
template <int NT>
__device__ __forceinline__ void ix_store_rows(const float *out, float *dst, int n) {
    if ((reinterpret_cast<uintptr_t>(dst) & 15) == 0) {
        for (int e = threadIdx.x; e < n / 4; e += NT)
            reinterpret_cast<float4 *>(dst)[e] = lds128(out + 4 * e);
        for (int e = n / 4 * 4 + threadIdx.x; e < n; e += NT)
            dst[e] = out[e];
    } else {
        for (int e = threadIdx.x; e < n; e += NT)
            dst[e] = out[e];
    }
}

// Both kernels' arguments. The table and index pointers travel by value, as emb_args'.
struct ix_args {
    const float *table[GR_EMB_MAX_TABLES];
    const void *idx[GR_EMB_MAX_TABLES];
    int64_t rows[GR_EMB_MAX_TABLES];
    const float *x; // [B, D], the bottom MLP's output
    const float *E; // dot_interaction: [B, T, D]
    float *R;
    int64_t B;
    int T, D, bag, P, rb;
    float scale;
    int pre; // embedding_interaction: tables and indices written by no op
};

// Vectors 1 .. T of rows b0 .. b0 + nrows - 1 into their slots, piece e = (r T + t) per_row + q
// (16 bytes when VEC, else one float): consecutive threads take consecutive pieces of one
// embedding. GATHER: pooled from the tables (bag_piece, as embedding_bag_tbe pools them); else
// read from E.
template <bool GATHER, typename IDX, bool VEC>
__device__ __forceinline__ void ix_fill(const ix_args &a, int64_t b0, int nrows, float *f_s,
                                        int nb, int ldf) {
    const int per_row = VEC ? a.D / 4 : a.D, total = nrows * a.T * per_row, rstep = 4 * nb * ldf;
    for (int e = threadIdx.x; e < total; e += GR_IX_THREADS) {
        const int q = e % per_row, rt = e / per_row, t = rt % a.T, r = rt / a.T;
        float4 v;
        if (GATHER) {
            v = bag_piece<IDX, VEC>(a.table[t], static_cast<const IDX *>(a.idx[t]) + (b0 + r) * a.bag,
                                    a.rows[t], a.D, a.bag, q, a.scale);
        } else {
            const float *src = a.E + ((b0 + r) * a.T + t) * a.D;
            v = VEC ? *reinterpret_cast<const float4 *>(src + 4 * q) : make_float4(src[q], 0.f, 0.f, 0.f);
        }
        float *dst = f_s + r * rstep + gr_ix_slot(1 + t, nb) * ldf + (VEC ? 4 * q : q);
        if (VEC)
            *reinterpret_cast<float4 *>(dst) = v;
        else
            dst[0] = v.x;
    }
}

// A block owns a.rb rows (grid-stride over the row groups). GATHER with `pre`: the first group's
// embeddings are gathered before the PDL wait, so the two dependent loads (index, then row)
// overlap the bottom MLP's last layer; x (and E) are read after it. Signals its dependents right
// after the wait (see the protocol at the top).
template <bool GATHER, typename IDX, bool VEC>
__global__ void __launch_bounds__(GR_IX_THREADS) interaction_kernel(const __grid_constant__ ix_args a) {
    constexpr int NT = GR_IX_THREADS;
    extern __shared__ __align__(16) float ix_sm[];
    const int nb = (int)gr_ix_nb(a.T), ldf = (int)gr_ix_ldf(a.D), rstep = 4 * nb * ldf;
    const int rowlen = a.D + a.P, F = a.T + 1;
    float *const f_s = ix_sm, *const out = ix_sm + a.rb * rstep;
    for (int e = threadIdx.x; e < a.rb * rstep; e += NT) // padding slots and floats: zeros
        f_s[e] = 0.f;
    __syncthreads();
    const int64_t ngroups = (a.B + a.rb - 1) / a.rb;
    int64_t grp = blockIdx.x;
    const bool early = GATHER && a.pre;
    if (early && grp < ngroups)
        ix_fill<GATHER, IDX, VEC>(a, grp * a.rb, (int)min((int64_t)a.rb, a.B - grp * a.rb), f_s,
                                     nb, ldf);
    pdl_wait();
    pdl_trigger();
    for (; grp < ngroups; grp += gridDim.x) {
        const int64_t b0 = grp * a.rb;
        const int nrows = (int)min((int64_t)a.rb, a.B - b0);
        if (!early || grp != (int64_t)blockIdx.x) ix_fill<GATHER, IDX, VEC>(a, b0, nrows, f_s, nb, ldf);
        for (int e = threadIdx.x; e < nrows * a.D; e += NT) { // vector 0, and the rows' first D
            const int r = e / a.D, d = e - r * a.D;
            const float v = a.x[(b0 + r) * a.D + d];
            f_s[r * rstep + d] = v; // vector 0 is slot 0
            out[r * rowlen + d] = v;
        }
        __syncthreads();
        ix_dots<NT>(f_s, nrows, nb, ldf, a.D, F, rowlen, out);
        __syncthreads();
        ix_store_rows<NT>(out, a.R + b0 * rowlen, nrows * rowlen);
        __syncthreads(); // the next group overwrites the vectors and the output rows
    }
}

// ---------- Linear + bias + activation, SIMT ----------

// 4 consecutive k of row r of a row-major [rows, K] matrix; zeros outside it.
template <bool VEC>
__device__ __forceinline__ void load4(const float *__restrict__ A, int rows, int K, int r, int k,
                                      float v[4]) {
    if (r < rows && k < K) {
        const float *p = A + (size_t)r * K + k;
        if (VEC) { // K % 4 == 0: k..k+3 all inside, 16-byte aligned
            const float4 q = __ldg(reinterpret_cast<const float4 *>(p));
            v[0] = q.x;
            v[1] = q.y;
            v[2] = q.z;
            v[3] = q.w;
        } else {
#pragma unroll
            for (int u = 0; u < 4; u++) v[u] = k + u < K ? __ldg(p + u) : 0.f;
        }
    } else {
#pragma unroll
        for (int u = 0; u < 4; u++) v[u] = 0.f;
    }
}

// One thread's share of a K chunk of row r: LPT pieces of 4 k, 32 apart, from k on. The loads
// are independent, so all LPT are in flight together.
template <bool VEC, int LPT>
__device__ __forceinline__ void load_chunk(const float *__restrict__ A, int rows, int K, int r,
                                           int k, float v[LPT][4]) {
#pragma unroll
    for (int u = 0; u < LPT; u++)
        load4<VEC>(A, rows, K, r, k + 32 * u, v[u]);
}

// Y[M, N] = act(X[M, K] W[N, K]^T + bias). A block owns a 32 x BN output tile (BN = 8, 16 or
// 32: the check picks it so that the tiles spread over the SMs); its 256 threads form
// G = 256 / TPG groups of TPG = 8 x BN/4 threads, each thread 4 x 4 outputs: rows ty + 8 i and
// columns tx + BN/4 j (strided, see banks below). K is consumed in chunks of KC = 128: every
// thread issues its LPT = 4 16-byte loads of X (and of W) for the next chunk before the current
// one is consumed, so one load latency covers 128 k instead of 32 (the old 32-wide chunk paid a
// full L2 round trip per 32 k: 12 round trips for K = 367, which made each B = 128 layer take
// ~3-4 us). Each chunk is split between the G groups (KPG = KC / G consecutive k each), and a
// group steps through its k four at a time: four 16-byte loads of X rows, four of W rows, 64
// FMAs. At the end the groups' partial tiles meet in shared memory (reusing xs) and all 256
// threads reduce them, add the bias and apply the activation before the only store, adjacent
// threads on adjacent columns. With `pre` (W and bias written by no op) the first W chunk is
// loaded before the PDL wait.
//
// Shared-memory banks (32 banks of 4 bytes; a 16-byte access is served 8 threads at a time):
// chunks are staged as loaded, k contiguous, rows XS = KC + 4 floats apart (33 16-byte units,
// so row r starts in unit r mod 8). Staging: the 8 threads of a quarter-warp store 8 consecutive
// units of one row: conflict-free. Reading: at one k, the 8 threads ty = 0..7 of a group read
// rows ty + 8 i, which start in 8 different units: conflict-free (rows 4 ty + i would collide 4
// ways), and likewise for W's rows tx + BN/4 j. (A k-major layout, transposed on the way in,
// costs 4-way-conflicted scalar stores: ~3x the shared-memory time of the FMAs at BN = 8.)
template <int BN, int ACT, bool VEC>
__global__ void __launch_bounds__(GR_LIN_THREADS, 1)
    linear_simt_kernel(const float *__restrict__ X, const float *__restrict__ W,
                       const float *__restrict__ bias, float *__restrict__ Y, int M, int N, int K,
                       int pre) {
    constexpr int BM = GR_LIN_BM, KC = GR_LIN_KC, NT = GR_LIN_THREADS;
    constexpr int TPG = (BM / 4) * (BN / 4);
    constexpr int G = NT / TPG;
    constexpr int KPG = KC / G;
    constexpr int XS = KC + 4; // row stride in floats, for X and W
    constexpr int LPT = KC / 32;
    constexpr int CS = BN / 4; // column stride of a thread's outputs
    static_assert(NT == 256 && BM == 32 && (BN == 8 || BN == 16 || BN == 32), "tile shape");
    static_assert(KPG * G == KC && KPG % 4 == 0 && KC % 32 == 0, "K chunk split");
    static_assert(G * 16 * TPG <= BM * XS, "the partial tiles fit in xs");
    __shared__ __align__(16) float xs[BM * XS];
    __shared__ __align__(16) float ws[BN * XS];
    const int tid = threadIdx.x, g = tid / TPG, t = tid % TPG;
    const int tx = t % CS, ty = t / CS;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int lr = tid / 8, lk = (tid % 8) * 4; // loader: row, first k of a 32-wide slice
    const bool wload = lr < BN;                 // threads that also load W rows
    float xr[LPT][4], wr[LPT][4];
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.f;

    if (pre && wload) load_chunk<VEC, LPT>(W, N, K, n0 + lr, lk, wr);
    pdl_wait(); // X is the previous kernel's output
    if (!pre && wload) load_chunk<VEC, LPT>(W, N, K, n0 + lr, lk, wr);
    load_chunk<VEC, LPT>(X, M, K, m0 + lr, lk, xr);
    for (int k0 = 0; k0 < K; k0 += KC) {
#pragma unroll
        for (int u = 0; u < LPT; u++)
            *reinterpret_cast<float4 *>(&xs[lr * XS + lk + 32 * u]) =
                make_float4(xr[u][0], xr[u][1], xr[u][2], xr[u][3]);
        if (wload)
#pragma unroll
            for (int u = 0; u < LPT; u++)
                *reinterpret_cast<float4 *>(&ws[lr * XS + lk + 32 * u]) =
                    make_float4(wr[u][0], wr[u][1], wr[u][2], wr[u][3]);
        __syncthreads();
        if (k0 + KC < K) { // the next chunk in flight while this one is consumed
            load_chunk<VEC, LPT>(X, M, K, m0 + lr, k0 + KC + lk, xr);
            if (wload) load_chunk<VEC, LPT>(W, N, K, n0 + lr, k0 + KC + lk, wr);
        }
        if (k0 + g * KPG < K) { // groups wholly past K (small K, the last chunk) skip
#pragma unroll
            for (int k4 = 0; k4 < KPG; k4 += 4) {
                const int k = g * KPG + k4;
                float4 a[4], b[4];
#pragma unroll
                for (int i = 0; i < 4; i++)
                    a[i] = *reinterpret_cast<const float4 *>(&xs[(ty + 8 * i) * XS + k]);
#pragma unroll
                for (int j = 0; j < 4; j++)
                    b[j] = *reinterpret_cast<const float4 *>(&ws[(tx + CS * j) * XS + k]);
                fma4x4(acc, a, b);
            }
        }
        __syncthreads();
    }
    pdl_trigger(); // only the reduction and the stores are left
    // Partial tiles, thread-major (red[((g * 4 + i) * 4 + j) * TPG + t]: adjacent threads,
    // adjacent words); xs is no longer read.
    float *red = xs;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            red[((g * 4 + i) * 4 + j) * TPG + t] = acc[i][j];
    __syncthreads();
#pragma unroll
    for (int r = 0; r < BM * BN / NT; r++) {
        const int e = tid + r * NT, row = e / BN, col = e % BN;
        const int i = row / 8, j = col / CS, owner = (row % 8) * CS + col % CS;
        float s = 0.f;
#pragma unroll
        for (int gg = 0; gg < G; gg++)
            s += red[((gg * 4 + i) * 4 + j) * TPG + owner];
        const int m = m0 + row, n = n0 + col;
        if (m < M && n < N) Y[(size_t)m * N + n] = act_f<ACT>(s + __ldg(bias + n));
    }
}

// ---------- Linear + bias + activation for small K or small N (exact fp32 FMAs) ----------
//
// Two shapes the tiled and SIMT kernels serve badly at large M (Nsight Compute, run 50, B =
// 2048): bot.0, 2048 x 512 x 13, on the tiled kernel's 64 x 64 tiles (4-byte copies of unaligned
// rows, one stage, a group reduction) took 5.2 us for 14 M FMAs and 4 MB of output, issue-bound
// at 1.97 M warp instructions; top.2, 2048 x 1 x 256, on the SIMT kernel's 32 x 8 tiles (7 of 8
// columns padding, 64 blocks, two dependent 128-k chunks) 3.4 us for 2 MB of input.


// rowdot (N <= GR_LIN_RD_MAXN): a warp per row (rows strided over the grid's warps), its lanes
// across K in 16-byte pieces (K % 4 == 0) or floats, N partial sums per lane, then a butterfly
// sum (fixed order: every lane ends with the same value); lane n writes output n. W (N x K, a few
// KB) is read through L1 by every warp. 2048 x 1 x 256 (top.2): 2048 warps, one round trip for x
// and W each, 5 shuffles; ~1-1.5 us. 2048 x 16 x 64 (bot.3): 16 lanes of 16-byte pieces, 16 W
// loads and 80 shuffles per row.
template <int ACT, bool VEC>
__global__ void __launch_bounds__(GR_LIN_RD_THREADS)
    linear_rowdot_kernel(const float *__restrict__ X, const float *__restrict__ W,
                         const float *__restrict__ bias, float *__restrict__ Y, int M, int N,
                         int K) {
    constexpr int NW = GR_LIN_RD_THREADS / 32, MN = GR_LIN_RD_MAXN;
    const int lane = threadIdx.x & 31;
    const int64_t nwarps = (int64_t)gridDim.x * NW;
    pdl_wait(); // x is the previous kernel's output
    pdl_trigger();
    for (int64_t m = (int64_t)blockIdx.x * NW + threadIdx.x / 32; m < M; m += nwarps) {
        const float *x = X + m * K;
        float acc[MN];
#pragma unroll
        for (int n = 0; n < MN; n++)
            acc[n] = 0.f;
        if (VEC) {
            for (int k = 4 * lane; k < K; k += 128) {
                const float4 xv = __ldg(reinterpret_cast<const float4 *>(x + k));
#pragma unroll
                for (int n = 0; n < MN; n++) {
                    if (n >= N) break;
                    const float4 wv = __ldg(reinterpret_cast<const float4 *>(W + (size_t)n * K + k));
                    acc[n] = fmaf(xv.x, wv.x, acc[n]);
                    acc[n] = fmaf(xv.y, wv.y, acc[n]);
                    acc[n] = fmaf(xv.z, wv.z, acc[n]);
                    acc[n] = fmaf(xv.w, wv.w, acc[n]);
                }
            }
        } else {
            for (int k = lane; k < K; k += 32) {
                const float xv = __ldg(x + k);
#pragma unroll
                for (int n = 0; n < MN; n++) {
                    if (n >= N) break;
                    acc[n] = fmaf(xv, __ldg(W + (size_t)n * K + k), acc[n]);
                }
            }
        }
        float out = 0.f;
#pragma unroll
        for (int n = 0; n < MN; n++) {
            if (n >= N) break;
            float s = acc[n];
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                s += __shfl_xor_sync(0xffffffffu, s, o);
            if (lane == n) out = s;
        }
        if (lane < N) Y[m * N + lane] = act_f<ACT>(out + __ldg(bias + lane));
    }
}

// ---------- Linear + bias + activation, register-tiled SGEMM (large M, fp32) ----------
//
// Y[M, N] = act(X[M, K] W[N, K]^T + bias), exact fp32 FMAs, for the B = 2048 layers where the
// SIMT kernel's 32-row tiles re-read x and W from L2 too often and cuBLASLt's fp32 tiles leave
// the SMs a quarter full (e.g. 128 CTAs of 4 warps for 2048 x 256 x 512).
//
// Tiling. A block of 256 threads owns a BM x BN output tile; each thread keeps a TM x TN block
// of outputs in registers: rows ty + TY i and columns tx + TX j (TY = BM / TM, TX = BN / TN).
// The TX x TY threads covering the tile are a group; the block holds KS = 256 / (TX TY) groups,
// which split every K stage between them (KG = KT / KS consecutive k each) and add their
// partial tiles in shared memory at the end (in group order: deterministic). The check picks
// one of four configurations (dlrm.h GR_LIN_TCFG_*, dlrm.c tiled_config): the largest tile whose
// blocks reach 3/4 of the SMs. dlrm_small at M = 2048:
//   N = 512, 256 with K % 4 == 0, K > 64 (bot.1, top.1): 64 x 64, 8 x 4 per thread, 2 groups,
//     KT 32 (54 KB of shared memory: opted in by setup()); 128 blocks, one per SM
//   N = 512 with K <= 64 or K % 4 != 0 (bot.0, top.0): 64 x 64, 4 x 4, 1 group, KT 16 (30 KB);
//     256 blocks, 2 per SM
//   N = 64 (bot.2): 32 x 32, 4 x 4, 4 groups, KT 32; 128 blocks
//   N = 16, 1 (bot.3, top.2): 16 x 16, 4 x 4, 16 groups, KT 64; 128 blocks
// (impl auto leaves the N < 128 layers and top.0 to the SIMT kernel and cuBLASLt: below.)
//
// Pipeline. K is staged KT at a time through 3 shared-memory stages filled by cp.async, two
// stages in flight while one is consumed; one barrier per stage. Rows are staged as they lie in
// memory, k contiguous (x rows first, then W rows), so with K % 4 == 0 every copy is 16 bytes
// (cp.async.cg: L2 only, no register staging, no transposition); otherwise (K = 13, 367: rows
// are not 16-byte aligned) 4-byte copies. Out-of-range rows and k past K are zero-filled by
// the copy (src-size 0), so the inner loop has no bounds and the padding adds exact zeros.
//
// Inner loop and banks. Per 4 k a thread reads TM float4 of x (its rows) and TN float4 of W
// (its columns), then does the 4 outer products, 4 TM TN FMAs. Rows are KT + 4 floats apart,
// an odd number of 16-byte units, so 8 consecutive rows start in 8 different bank groups. A
// warp is 4 rows (ty) x 8 columns (tx) of threads: each 16-byte load touches 4 (x) or 8 (W)
// consecutive rows, 128 bytes at most, no bank conflicts.
//
// PDL: with `pre` (W and bias written by no op), the W rows of the first two stages are
// copied before griddepcontrol.wait; x after it. Dependents are signalled after the K loop.
//
// Napkin math (H200: 132 SMs x 128 FMA/clk x 1.98 GHz = 33.5 T FMA/s): bot.1 and top.1 are
// 268 M FMA (8.0 us at peak with 132 SMs busy; 128 blocks: 8.3 us), top.0 385 M FMA (11.5 us),
// bot.2 34 M (1.0 us), bot.0 14 M, bot.3 2 M, top.2 0.5 M. L2 traffic: each 64 x 64 block
// reads 64 x K of x and of W: 32 MB for bot.1 (128 blocks x 256 KB).
// Measured (H200, 1.98 GHz, back-to-back launches, us; fp32 peak in parentheses): 2048 x 256 x
// 512 (8.0): 64 x 64 with 4 x 4 per thread 23.0, with 8 x 4 19.5-19.9, 8 x 8 (4 groups) 20.7,
// 512 threads 22-24, deeper or longer stages 20.5-22; cuBLASLt 19.9. K = 367 (11.5): 33.7
// (4-byte copies; 27.5 with K = 368), cuBLASLt 21.8-25.3. Nsight Compute on the 4 x 4 one:
// issue slots 48% busy, FMA pipe 35%, shared-memory pipe 55%, 2 warps per scheduler with 0.76
// eligible. Every variant tried lands at 35-45% of the fp32 peak, as cuBLASLt's fp32 kernels
// do here: these GEMMs are too small for one wave of blocks to hide its latencies, and no
// SIMT tiling changed that. What closes the 60 us target is the TF32 variant (fused_tf32).

// Shared memory of one configuration, in floats: the stages, or the groups' partial tiles.
template <int BM, int BN, int TM, int TN, int KT, int S, int THREADS> struct tiled_cfg {
    static constexpr int NT = THREADS;
    static constexpr int TX = BN / TN, TY = BM / TM, GT = TX * TY, KS = NT / GT, KG = KT / KS;
    static constexpr int LD = KT + 4, STAGE = (BM + BN) * LD;
    static constexpr int PIPE = S * STAGE, RED = KS > 1 ? KS * BM * BN : 0;
    static constexpr int FLOATS = PIPE > RED ? PIPE : RED;
};

template <int BM, int BN, int TM, int TN, int KT, int S, int NTH, int ACT, bool VEC>
__global__ void __launch_bounds__(NTH, NTH * TM * TN >= 256 * 32 ? 1 : 2)
    linear_tiled_kernel(const float *__restrict__ X, const float *__restrict__ W,
                        const float *__restrict__ bias, float *__restrict__ Y, int M, int N, int K,
                        int pre) {
    using C = tiled_cfg<BM, BN, TM, TN, KT, S, NTH>;
    constexpr int NT = C::NT, TX = C::TX, TY = C::TY, GT = C::GT, KS = C::KS, KG = C::KG;
    constexpr int LD = C::LD, STAGE = C::STAGE;
    static_assert(GT * KS == NT && KG * KS == KT && KG % 4 == 0, "K split between the groups");
    static_assert((LD / 4) % 2 == 1, "an odd number of 16-byte units per staged row");
    static_assert(GT % 32 == 0 || 32 % GT == 0, "a warp is in one group, or holds whole groups");
    static_assert(S >= 2, "stages");
    extern __shared__ __align__(16) float lin_sm[];

    const int tid = threadIdx.x, g = tid / GT, t = tid % GT;
    // Warps of 4 rows x 8 columns of threads when the group is 8 or more threads wide (one
    // 128-byte wavefront per shared load, see above); else row-major within the group.
    constexpr bool WARP48 = TX >= 8 && TX % 8 == 0 && GT % 32 == 0 && TY % 4 == 0;
    constexpr int WX = WARP48 ? TX / 8 : 1; // warps across the tile's columns
    int ty, tx;
    if (WARP48) {
        const int lane = t % 32, w = t / 32;
        ty = (w / WX) * 4 + lane / 8;
        tx = (w % WX) * 8 + lane % 8;
    } else {
        ty = t / TX;
        tx = t % TX;
    }
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int nk = (K + KT - 1) / KT;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.f;

    // Prologue: stages 0 .. S-2 in flight, one commit group each. The W rows copied before the
    // wait join group 0, which is waited for first: no stage is read before its rows landed.
    if (pre)
        for (int s = 0; s < S - 1 && s < nk; s++)
            tiled_copy<BM, BN, KT, NT, VEC>(lin_sm + s * STAGE, X, W, M, N, K, m0, n0, s * KT,
                                            TILE_W);
    pdl_wait(); // X is the previous kernel's output
    for (int s = 0; s < S - 1; s++) {
        if (s < nk)
            tiled_copy<BM, BN, KT, NT, VEC>(lin_sm + s * STAGE, X, W, M, N, K, m0, n0, s * KT,
                                            pre ? TILE_X : TILE_X | TILE_W);
        cp_async_commit(); // possibly empty: keeps one group per stage
    }

    int rd = 0, wr = S - 1; // stage buffer consumed, stage buffer refilled
    for (int kt = 0; kt < nk; kt++) {
        // Groups committed so far: S - 1 + kt; at most S - 2 in flight means stage kt landed
        // (this thread's copies); the barrier makes everyone's visible and also ends every
        // thread's reads of stage kt - 1, whose buffer (wr) is refilled next.
        cp_async_wait<S - 2>();
        __syncthreads();
        if (kt + S - 1 < nk)
            tiled_copy<BM, BN, KT, NT, VEC>(lin_sm + wr * STAGE, X, W, M, N, K, m0, n0,
                                            (kt + S - 1) * KT, TILE_X | TILE_W);
        cp_async_commit();
        const float *xs = lin_sm + rd * STAGE, *ws = xs + BM * LD;
#pragma unroll
        for (int k4 = 0; k4 < KG; k4 += 4) {
            const int k = g * KG + k4;
            float4 a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; i++)
                a[i] = *reinterpret_cast<const float4 *>(&xs[(ty + TY * i) * LD + k]);
#pragma unroll
            for (int j = 0; j < TN; j++)
                b[j] = *reinterpret_cast<const float4 *>(&ws[(tx + TX * j) * LD + k]);
            // Outer products, one k at a time: consecutive FMAs on one accumulator are TM x TN
            // instructions apart, so none waits for the previous one's result (a dot of 4 k
            // per accumulator first made chains of 4 dependent FMAs: half the issue rate with
            // 2 warps per scheduler). Each output still sums k in order.
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i].x, b[j].x, acc[i][j]);
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i].y, b[j].y, acc[i][j]);
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i].z, b[j].z, acc[i][j]);
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i].w, b[j].w, acc[i][j]);
        }
        rd = rd == S - 1 ? 0 : rd + 1;
        wr = wr == S - 1 ? 0 : wr + 1;
    }
    pdl_trigger(); // only the epilogue is left

    if (KS == 1) {
        float bj[TN];
#pragma unroll
        for (int j = 0; j < TN; j++) {
            const int n = n0 + tx + TX * j;
            bj[j] = n < N ? __ldg(bias + n) : 0.f;
        }
#pragma unroll
        for (int i = 0; i < TM; i++) {
            const int m = m0 + ty + TY * i;
            if (m >= M) continue;
#pragma unroll
            for (int j = 0; j < TN; j++) {
                const int n = n0 + tx + TX * j;
                if (n < N) Y[(size_t)m * (size_t)N + n] = act_f<ACT>(acc[i][j] + bj[j]);
            }
        }
    } else {
        // The groups' partial tiles, [KS][BM][BN], over the stage buffers: wait for the
        // (empty) trailing copy groups and for every thread's last reads of the stages.
        cp_async_wait<0>();
        __syncthreads();
        float *red = lin_sm;
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++)
                red[(g * BM + ty + TY * i) * BN + tx + TX * j] = acc[i][j];
        __syncthreads();
        // all 256 threads add them up (groups in order: deterministic) and store, adjacent
        // threads on adjacent columns
        static_assert(BM * BN % NT == 0, "whole rounds");
#pragma unroll
        for (int u = 0; u < BM * BN / NT; u++) {
            const int e = tid + u * NT, r = e / BN, c = e % BN;
            const int m = m0 + r, n = n0 + c;
            if (m >= M || n >= N) continue;
            float s = 0.f;
#pragma unroll
            for (int gg = 0; gg < KS; gg++) s += red[(gg * BM + r) * BN + c];
            Y[(size_t)m * (size_t)N + n] = act_f<ACT>(s + __ldg(bias + n));
        }
    }
}

// ---------- Linear + bias + activation on tensor cores: TF32 or 3xTF32 (impl "tc") ----------
//
// Y[M, N] = act(X[M, K] W[N, K]^T + bias) with mma.sync.m16n8k8 TF32 tensor-core products and
// fp32 accumulation. math "tf32": each operand rounded to TF32 once (10-bit mantissa, ~1e-3
// relative error per product, what cuBLASLt's FAST_TF32 does). math "tf32x3": each operand is
// split into a TF32 "big" part and its remainder, a = a_b + a_s (tf32_split), and the product
// is a_s b_b + a_b b_s + a_b b_b (the a_s b_s term, ~2^-22 of the product, is dropped) in three
// MMAs, accumulated in fp32: about the error of an fp32 FMA GEMM, at a third of mma.sync's TF32
// rate. On the H200 that rate is ~590 MAC/clk/SM (gr_mma_peak, bench/results run 25; wgmma's is
// about twice), so 3 passes can at best reach ~1.6x the FFMA pipe's 120; this kernel reaches
// ~37% of the ceiling (run 26).
//
// Tiling. A block of (BM / WM) x (BN / WN) warps (4, or 8 in the W8 configurations) owns a
// BM x BN tile, each warp a WM x WN piece of it: WM / 16 x
// WN / 8 MMA tiles of 16 x 8, whose accumulators stay in registers (4 floats per MMA tile per
// lane; 3xTF32 keeps big x big, small x big and big x small in three accumulators, summed in
// the epilogue). K is staged 32 at a time through S shared-memory stages (3, or 4 in the S4
// configurations) by cp.async, as the tiled SIMT kernel does (rows k-contiguous, zero-filled
// past M, N and K; 16-byte copies, shifted ones when K % 4 != 0: tc_copy), S - 1 stages in
// flight while one is consumed, one barrier per stage.
//
// Fragments. An MMA sums over its 8 k in any order, so A's and B's k may be permuted alike:
// within each 16 k of a stage, lane (g, t) = (lane / 4, lane % 4) takes k = 4t .. 4t + 3 with one
// 16-byte shared load per row, and feeds 4t + 2s and 4t + 2s + 1 to the fragment slots t and
// t + 4 of k-step s (s = 0, 1). So a warp reads a 16 x 16 piece of A with 2 loads per lane and an
// 8 x 16 piece of B with 1 (16 scalar loads before). The row pitch of 48 floats puts the 8 lanes
// of each quarter-warp phase (rows g, g + 1, t = 0 .. 3) on 32 different banks. Shifted rows
// (K % 4 != 0) take 4 scalar loads instead of each 16-byte one.
//
// Issue order. A k-step's MMAs issue tile by tile, pass by pass (all big x big first, then
// all small x big, then all big x small), so consecutive MMAs never share an accumulator: the
// three passes on one accumulator used to issue back to back, each waiting out the previous
// one's latency.
//
// PDL as in the tiled kernel: with `pre`, the W rows of the first S - 1 stages are copied before
// griddepcontrol.wait; dependents are signalled after the K loop.
constexpr int kTcKT = GR_LIN_MMA_KT, kTcLD = GR_LIN_MMA_LD;
static_assert(kTcKT % 16 == 0, "whole 16-k fragment groups per stage");

// No `volatile`: the MMA has no side effects, so the compiler may interleave it with others.
__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <int BM, int BN, int S> struct tc_cfg {
    static constexpr int STAGE = (BM + BN) * kTcLD;
    static constexpr int FLOATS = S * STAGE;
};

// S: pipeline stages (S - 1 in flight while one is consumed).
template <int BM, int BN, int WM, int WN, int S, int PASSES, int ACT, bool VEC>
__global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, 2)
    linear_tc_kernel(const float *__restrict__ X, const float *__restrict__ W,
                     const float *__restrict__ bias, float *__restrict__ Y, int M, int N, int K,
                     int pre) {
    constexpr int KT = kTcKT, LD = kTcLD, STAGE = tc_cfg<BM, BN, S>::STAGE;
    constexpr int WX = BN / WN, MT = WM / 16, NT8 = WN / 8, NT = (BM / WM) * WX * 32;
    // accumulators: [0] big x big, [1] small x big, [2] big x small (3xTF32), so an accumulator
    // takes one MMA per k-step and its MMAs are MT x NT8 issues apart (4 in a 32 x 16 warp tile
    // with two small terms sharing one: less than the MMA's latency)
    constexpr int NACC = PASSES == 3 ? 3 : 1, A1 = NACC > 1 ? 1 : 0, A2 = NACC - 1;
    static_assert(WM % 16 == 0 && WN % 8 == 0, "whole MMA tiles");
    static_assert(PASSES == 1 || PASSES == 3, "TF32 or 3xTF32");
    static_assert(LD % 32 == 16, "conflict-free 16-byte fragment reads");
    static_assert(S >= 3, "two stages in flight");
    extern __shared__ __align__(16) float lin_sm[];

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int wm0 = (warp / WX) * WM, wn0 = (warp % WX) * WN;
    const int m0 = blockIdx.x * BM, n0 = blockIdx.y * BN;
    const int kb = 0, nk = (K + KT - 1) / KT; // first stage and stage count
    // K % 4 != 0: the lane's rows start `mis` columns into their stage rows (tc_copy); rows 8
    // apart share it, so one value covers all of the lane's A rows and one all of its B rows
    const int misx = VEC ? 0 : (int)(((unsigned)(m0 + wm0 + g) * (unsigned)K) & 3u);
    const int misw = VEC ? 0 : (int)(((unsigned)(n0 + wn0 + g) * (unsigned)K) & 3u);

    float acc[NACC][MT][NT8][4];
#pragma unroll
    for (int p = 0; p < NACC; p++)
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int j = 0; j < NT8; j++)
#pragma unroll
                for (int r = 0; r < 4; r++) acc[p][i][j][r] = 0.f;

    if (pre)
        for (int s = 0; s < S - 1 && s < nk; s++)
            tc_copy<BM, BN, NT, VEC>(lin_sm + s * STAGE, X, W, M, N, K, m0, n0, (kb + s) * KT, TILE_W);
    pdl_wait(); // X is the previous kernel's output
    for (int s = 0; s < S - 1; s++) {
        if (s < nk)
            tc_copy<BM, BN, NT, VEC>(lin_sm + s * STAGE, X, W, M, N, K, m0, n0, (kb + s) * KT,
                                 pre ? TILE_X : TILE_X | TILE_W);
        cp_async_commit();
    }

    int rd = 0, wr = S - 1;
    for (int kt = 0; kt < nk; kt++) {
        cp_async_wait<S - 2>(); // stage kt landed (see the tiled kernel)
        __syncthreads();
        if (kt + S - 1 < nk)
            tc_copy<BM, BN, NT, VEC>(lin_sm + wr * STAGE, X, W, M, N, K, m0, n0,
                                 (kb + kt + S - 1) * KT, TILE_X | TILE_W);
        cp_async_commit();
        const float *xs = lin_sm + rd * STAGE + (wm0 + g) * LD + 4 * t + misx;
        const float *ws = lin_sm + rd * STAGE + (BM + wn0 + g) * LD + 4 * t + misw;
#pragma unroll
        for (int k = 0; k < KT; k += 16) {
            float4 xa[MT][2], wb[NT8];
#pragma unroll
            for (int i = 0; i < MT; i++) {
                xa[i][0] = lds4<VEC>(xs + 16 * i * LD + k);
                xa[i][1] = lds4<VEC>(xs + (16 * i + 8) * LD + k);
            }
#pragma unroll
            for (int j = 0; j < NT8; j++) wb[j] = lds4<VEC>(ws + 8 * j * LD + k);
#pragma unroll
            for (int s = 0; s < 2; s++) {
                uint32_t ab[MT][4], as[MT][4], bb[NT8][2], bs[NT8][2];
#pragma unroll
                for (int i = 0; i < MT; i++) {
                    tf32_split<PASSES>(f4(xa[i][0], 2 * s), ab[i][0], as[i][0]);
                    tf32_split<PASSES>(f4(xa[i][1], 2 * s), ab[i][1], as[i][1]);
                    tf32_split<PASSES>(f4(xa[i][0], 2 * s + 1), ab[i][2], as[i][2]);
                    tf32_split<PASSES>(f4(xa[i][1], 2 * s + 1), ab[i][3], as[i][3]);
                }
#pragma unroll
                for (int j = 0; j < NT8; j++) {
                    tf32_split<PASSES>(f4(wb[j], 2 * s), bb[j][0], bs[j][0]);
                    tf32_split<PASSES>(f4(wb[j], 2 * s + 1), bb[j][1], bs[j][1]);
                }
#pragma unroll
                for (int i = 0; i < MT; i++)
#pragma unroll
                    for (int j = 0; j < NT8; j++) mma_tf32(acc[0][i][j], ab[i], bb[j]);
                if (PASSES == 3) {
#pragma unroll
                    for (int i = 0; i < MT; i++)
#pragma unroll
                        for (int j = 0; j < NT8; j++) mma_tf32(acc[A1][i][j], as[i], bb[j]);
#pragma unroll
                    for (int i = 0; i < MT; i++)
#pragma unroll
                        for (int j = 0; j < NT8; j++) mma_tf32(acc[A2][i][j], ab[i], bs[j]);
                }
            }
        }
        rd = rd == S - 1 ? 0 : rd + 1;
        wr = wr == S - 1 ? 0 : wr + 1;
    }
    pdl_trigger(); // only the epilogue is left

    // One sum per output: the small terms first (the smaller addends), then big x big.
    float sum[MT][NT8][4];
#pragma unroll
    for (int i = 0; i < MT; i++)
#pragma unroll
        for (int j = 0; j < NT8; j++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                sum[i][j][r] = NACC == 3 ? (acc[A1][i][j][r] + acc[A2][i][j][r]) + acc[0][i][j][r]
                                         : acc[0][i][j][r];

    // Lane (g, t) holds, per MMA tile, rows g and g + 8, columns 2t and 2t + 1.
#pragma unroll
    for (int j = 0; j < NT8; j++) {
        const int n = n0 + wn0 + 8 * j + 2 * t;
        const float b0 = n < N ? __ldg(bias + n) : 0.f, b1 = n + 1 < N ? __ldg(bias + n + 1) : 0.f;
#pragma unroll
        for (int i = 0; i < MT; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int m = m0 + wm0 + 16 * i + g + 8 * h;
                if (m >= M) continue;
                const float v0 = act_f<ACT>(sum[i][j][2 * h] + b0);
                const float v1 = act_f<ACT>(sum[i][j][2 * h + 1] + b1);
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

dim3 grid_of(const gr_op *op) { return dim3(op->grid[0], op->grid[1], op->grid[2]); }
dim3 block_of(const gr_op *op) { return dim3(op->block[0], op->block[1], op->block[2]); }

gr_status finish(cudaError_t rc, const gr_op *op, gr_error *err) {
    if (rc != cudaSuccess) {
        cudaGetLastError();
        return gr_error_set(err, rc >= cudaErrorStreamCaptureUnsupported &&
                                         rc <= cudaErrorStreamCaptureWrongThread
                                     ? GR_ERR_CAPTURE
                                     : GR_ERR_CUDA,
                            op->path, "launching kernel %s failed: %s (%s)", op->kernel->name,
                            cudaGetErrorName(rc), cudaGetErrorString(rc));
    }
    return gr_launch_status(op->kernel->name, op->path, err);
}

template <int BN, bool VEC>
cudaError_t linear_dispatch_act(int act, const gr_op *op, const gr_launch_ctx *ctx, const float *X,
                                const float *W, const float *b, float *Y, int M, int N, int K,
                                int pre) {
    switch (act) {
    case GR_DLRM_ACT_RELU:
        return gr_launch(linear_simt_kernel<BN, GR_DLRM_ACT_RELU, VEC>, grid_of(op), block_of(op),
                         0, ctx, X, W, b, Y, M, N, K, pre);
    case GR_DLRM_ACT_SIGMOID:
        return gr_launch(linear_simt_kernel<BN, GR_DLRM_ACT_SIGMOID, VEC>, grid_of(op),
                         block_of(op), 0, ctx, X, W, b, Y, M, N, K, pre);
    default:
        return gr_launch(linear_simt_kernel<BN, GR_DLRM_ACT_NONE, VEC>, grid_of(op), block_of(op),
                         0, ctx, X, W, b, Y, M, N, K, pre);
    }
}

// The tiled kernel of configuration CFG (a GR_LIN_TCFG_* list: BM, BN, TM, TN, KT, stages) for
// the op's activation and copy width.
template <int BM, int BN, int TM, int TN, int KT, int S> struct tiled_launcher {
    using C = tiled_cfg<BM, BN, TM, TN, KT, S, GR_LIN_TILED_THREADS>;
    typedef void (*kernel_t)(const float *, const float *, const float *, float *, int, int, int,
                             int);
    template <bool VEC> static kernel_t pick(int act) {
        switch (act) {
        case GR_DLRM_ACT_RELU:
            return linear_tiled_kernel<BM, BN, TM, TN, KT, S, GR_LIN_TILED_THREADS,
                                       GR_DLRM_ACT_RELU, VEC>;
        case GR_DLRM_ACT_SIGMOID:
            return linear_tiled_kernel<BM, BN, TM, TN, KT, S, GR_LIN_TILED_THREADS,
                                       GR_DLRM_ACT_SIGMOID, VEC>;
        default:
            return linear_tiled_kernel<BM, BN, TM, TN, KT, S, GR_LIN_TILED_THREADS,
                                       GR_DLRM_ACT_NONE, VEC>;
        }
    }
    static kernel_t kernel(const gr_op *op) {
        const int act = (int)op->ip[GR_LIN_ACT];
        return op->ip[GR_LIN_VEC] ? pick<true>(act) : pick<false>(act);
    }
    static size_t smem() { return (size_t)C::FLOATS * sizeof(float); }
};

// The kernel and shared memory of the op's configuration; NULL for an unknown one.
typedef tiled_launcher<GR_LIN_TCFG_64>::kernel_t tiled_kernel_t;
template <int BM, int BN, int TM, int TN, int KT, int S>
tiled_kernel_t tiled_pick(const gr_op *op, size_t *smem) {
    *smem = tiled_launcher<BM, BN, TM, TN, KT, S>::smem();
    return tiled_launcher<BM, BN, TM, TN, KT, S>::kernel(op);
}

tiled_kernel_t tiled_kernel_of(const gr_op *op, size_t *smem) {
    switch (op->ip[GR_LIN_BN]) {
    case GR_LIN_T64: return tiled_pick<GR_LIN_TCFG_64>(op, smem);
    case GR_LIN_T64W: return tiled_pick<GR_LIN_TCFG_64W>(op, smem);
    case GR_LIN_T32: return tiled_pick<GR_LIN_TCFG_32>(op, smem);
    case GR_LIN_T16: return tiled_pick<GR_LIN_TCFG_16>(op, smem);
    default: *smem = 0; return NULL;
    }
}

// The tensor-core kernel of configuration CFG (a GR_LIN_CCFG_* list: BM, BN, WM, WN, S)
// for the op's passes (math tf32: 1, tf32x3: 3), activation and copy width.
template <int BM, int BN, int WM, int WN, int S> struct tc_launcher {
    typedef void (*kernel_t)(const float *, const float *, const float *, float *, int, int, int,
                             int);
    template <int PASSES, bool VEC> static kernel_t pick(int act) {
        switch (act) {
        case GR_DLRM_ACT_RELU:
            return linear_tc_kernel<BM, BN, WM, WN, S, PASSES, GR_DLRM_ACT_RELU, VEC>;
        case GR_DLRM_ACT_SIGMOID:
            return linear_tc_kernel<BM, BN, WM, WN, S, PASSES, GR_DLRM_ACT_SIGMOID, VEC>;
        default: return linear_tc_kernel<BM, BN, WM, WN, S, PASSES, GR_DLRM_ACT_NONE, VEC>;
        }
    }
    static kernel_t kernel(const gr_op *op) {
        const int act = (int)op->ip[GR_LIN_ACT];
        const bool x3 = (op->ip[GR_LIN_FLAGS] & GR_LIN_F_TF32X3) != 0;
        if (op->ip[GR_LIN_VEC]) return x3 ? pick<3, true>(act) : pick<1, true>(act);
        return x3 ? pick<3, false>(act) : pick<1, false>(act);
    }
    static size_t smem() { return (size_t)tc_cfg<BM, BN, S>::FLOATS * sizeof(float); }
};

typedef tc_launcher<GR_LIN_CCFG_64>::kernel_t tc_kernel_t;
template <int BM, int BN, int WM, int WN, int S>
tc_kernel_t tc_pick(const gr_op *op, size_t *smem) {
    *smem = tc_launcher<BM, BN, WM, WN, S>::smem();
    return tc_launcher<BM, BN, WM, WN, S>::kernel(op);
}

tc_kernel_t tc_kernel_of(const gr_op *op, size_t *smem) {
    switch (op->ip[GR_LIN_BN]) {
    case GR_LIN_C64: return tc_pick<GR_LIN_CCFG_64>(op, smem);
    case GR_LIN_C6432: return tc_pick<GR_LIN_CCFG_6432>(op, smem);
    case GR_LIN_C32: return tc_pick<GR_LIN_CCFG_32>(op, smem);
    default: *smem = 0; return NULL;
    }
}

} // namespace

extern "C" gr_status gr_launch_embedding(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    emb_args a;
    memset(&a, 0, sizeof(a));
    const int T = (int)op->ip[GR_EMB_T];
    if (T < 1 || T > GR_EMB_MAX_TABLES)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "embedding: %d tables", T);
    for (int t = 0; t < T; t++) {
        a.table[t] = static_cast<const float *>(ctx->dptr[op->inputs[t]]);
        a.idx[t] = ctx->dptr[op->inputs[T + t]];
        a.rows[t] = ctx->plan->bufs[op->inputs[t]].shape[0];
    }
    a.out = static_cast<float *>(ctx->dptr[op->outputs[0]]);
    a.B = op->ip[GR_EMB_B];
    a.T = T;
    a.D = (int)op->ip[GR_EMB_D];
    a.bag = (int)op->ip[GR_EMB_BAG];
    a.scale = (float)op->fp[0];
    a.pre = (int)op->ip[GR_EMB_PRE];
    const bool vec = op->ip[GR_EMB_VEC] != 0, i64 = op->ip[GR_EMB_IDX64] != 0;
    cudaError_t rc;
    if (i64)
        rc = vec ? gr_launch(embedding_kernel<int64_t, true>, grid_of(op), block_of(op), 0, ctx, a)
                 : gr_launch(embedding_kernel<int64_t, false>, grid_of(op), block_of(op), 0, ctx, a);
    else
        rc = vec ? gr_launch(embedding_kernel<int32_t, true>, grid_of(op), block_of(op), 0, ctx, a)
                 : gr_launch(embedding_kernel<int32_t, false>, grid_of(op), block_of(op), 0, ctx, a);
    return finish(rc, op, err);
}

extern "C" gr_status gr_launch_bias_add(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    cudaError_t rc = gr_launch(bias_add_kernel, grid_of(op), block_of(op), 0, ctx,
                               static_cast<const float *>(ctx->dptr[op->inputs[0]]),
                               static_cast<const float *>(ctx->dptr[op->inputs[1]]),
                               static_cast<float *>(ctx->dptr[op->outputs[0]]),
                               op->ip[GR_BIAS_N_TOTAL], op->ip[GR_BIAS_N]);
    return finish(rc, op, err);
}

extern "C" gr_status gr_launch_sigmoid(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    cudaError_t rc = gr_launch(sigmoid_kernel, grid_of(op), block_of(op), 0, ctx,
                               static_cast<const float *>(ctx->dptr[op->inputs[0]]),
                               static_cast<float *>(ctx->dptr[op->outputs[0]]), op->ip[0]);
    return finish(rc, op, err);
}

extern "C" gr_status gr_launch_concat(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    cat_args a;
    memset(&a, 0, sizeof(a));
    if (op->ninputs < 1 || op->ninputs > GR_CONCAT_MAX_INPUTS)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "concat: %d inputs", op->ninputs);
    const int64_t R = op->ip[GR_CAT_ROWS];
    int64_t off = 0;
    for (int i = 0; i < op->ninputs; i++) {
        a.in[i] = static_cast<const float *>(ctx->dptr[op->inputs[i]]);
        a.cols[i] = ctx->plan->bufs[op->inputs[i]].numel / R;
        a.off[i] = off;
        off += a.cols[i];
    }
    a.out = static_cast<float *>(ctx->dptr[op->outputs[0]]);
    a.rows = R;
    a.C = op->ip[GR_CAT_COLS];
    return finish(gr_launch(concat_kernel, grid_of(op), block_of(op), 0, ctx, a), op, err);
}

extern "C" gr_status gr_launch_tril_gather(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    cudaError_t rc = gr_launch(tril_kernel, grid_of(op), block_of(op), 0, ctx,
                               static_cast<const float *>(ctx->dptr[op->inputs[0]]),
                               static_cast<float *>(ctx->dptr[op->outputs[0]]), op->ip[GR_TRIL_B],
                               op->ip[GR_TRIL_N], op->ip[GR_TRIL_P]);
    return finish(rc, op, err);
}

extern "C" gr_status gr_launch_dot_interaction(const gr_op *op, const gr_launch_ctx *ctx,
                                               gr_error *err) {
    ix_args a;
    memset(&a, 0, sizeof(a));
    a.x = static_cast<const float *>(ctx->dptr[op->inputs[0]]);
    a.E = static_cast<const float *>(ctx->dptr[op->inputs[1]]);
    a.R = static_cast<float *>(ctx->dptr[op->outputs[0]]);
    a.B = op->ip[GR_INT_B];
    a.T = (int)op->ip[GR_INT_T];
    a.D = (int)op->ip[GR_INT_D];
    a.P = (int)op->ip[GR_INT_P];
    a.rb = (int)op->ip[GR_INT_RB];
    a.bag = 1;
    a.scale = 1.f;
    const dim3 g = grid_of(op), bl = block_of(op);
    cudaError_t rc = a.D % 4 == 0
                         ? gr_launch(interaction_kernel<false, int32_t, true>, g, bl, op->smem, ctx, a)
                         : gr_launch(interaction_kernel<false, int32_t, false>, g, bl, op->smem, ctx, a);
    return finish(rc, op, err);
}

extern "C" gr_status gr_launch_embedding_interaction(const gr_op *op, const gr_launch_ctx *ctx,
                                                     gr_error *err) {
    ix_args a;
    memset(&a, 0, sizeof(a));
    const int T = (int)op->ip[GR_EI_T];
    if (T < 1 || T > GR_EMB_MAX_TABLES || op->ninputs != 1 + 2 * T)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                            "embedding_interaction: %d tables, %d inputs", T, op->ninputs);
    for (int t = 0; t < T; t++) {
        a.table[t] = static_cast<const float *>(ctx->dptr[op->inputs[1 + t]]);
        a.idx[t] = ctx->dptr[op->inputs[1 + T + t]];
        a.rows[t] = ctx->plan->bufs[op->inputs[1 + t]].shape[0];
    }
    a.x = static_cast<const float *>(ctx->dptr[op->inputs[0]]);
    a.R = static_cast<float *>(ctx->dptr[op->outputs[0]]);
    a.B = op->ip[GR_EI_B];
    a.T = T;
    a.D = (int)op->ip[GR_EI_D];
    a.bag = (int)op->ip[GR_EI_BAG];
    a.P = (int)op->ip[GR_EI_P];
    a.rb = (int)op->ip[GR_EI_RB];
    a.scale = (float)op->fp[0];
    a.pre = (int)op->ip[GR_EI_PRE];
    const bool vec = op->ip[GR_EI_VEC] != 0, i64 = op->ip[GR_EI_IDX64] != 0;
    const dim3 g = grid_of(op), bl = block_of(op);
    const size_t sm = op->smem;
    cudaError_t rc;
    if (i64)
        rc = vec ? gr_launch(interaction_kernel<true, int64_t, true>, g, bl, sm, ctx, a)
                 : gr_launch(interaction_kernel<true, int64_t, false>, g, bl, sm, ctx, a);
    else
        rc = vec ? gr_launch(interaction_kernel<true, int32_t, true>, g, bl, sm, ctx, a)
                 : gr_launch(interaction_kernel<true, int32_t, false>, g, bl, sm, ctx, a);
    return finish(rc, op, err);
}

extern "C" gr_status gr_launch_linear_simt(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    const float *X = static_cast<const float *>(ctx->dptr[op->inputs[0]]);
    const float *W = static_cast<const float *>(ctx->dptr[op->inputs[1]]);
    const float *b = static_cast<const float *>(ctx->dptr[op->inputs[2]]);
    float *Y = static_cast<float *>(ctx->dptr[op->outputs[0]]);
    const int M = (int)op->ip[GR_LIN_M], N = (int)op->ip[GR_LIN_N], K = (int)op->ip[GR_LIN_K];
    const int act = (int)op->ip[GR_LIN_ACT], pre = (op->ip[GR_LIN_FLAGS] & GR_LIN_F_PRE) != 0;
    const bool vec = op->ip[GR_LIN_VEC] != 0;
    cudaError_t rc;
    switch (op->ip[GR_LIN_BN]) {
    case 32:
        rc = vec ? linear_dispatch_act<32, true>(act, op, ctx, X, W, b, Y, M, N, K, pre)
                 : linear_dispatch_act<32, false>(act, op, ctx, X, W, b, Y, M, N, K, pre);
        break;
    case 16:
        rc = vec ? linear_dispatch_act<16, true>(act, op, ctx, X, W, b, Y, M, N, K, pre)
                 : linear_dispatch_act<16, false>(act, op, ctx, X, W, b, Y, M, N, K, pre);
        break;
    case 8:
        rc = vec ? linear_dispatch_act<8, true>(act, op, ctx, X, W, b, Y, M, N, K, pre)
                 : linear_dispatch_act<8, false>(act, op, ctx, X, W, b, Y, M, N, K, pre);
        break;
    default:
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "linear_act: tile width %lld",
                            (long long)op->ip[GR_LIN_BN]);
    }
    return finish(rc, op, err);
}

// rowdot: the op's act as a template argument.
template <int ACT>
static cudaError_t linear_small_act(const gr_op *op, const gr_launch_ctx *ctx, const float *X,
                                    const float *W, const float *b, float *Y, int M, int N, int K) {
    return op->ip[GR_LIN_VEC]
               ? gr_launch(linear_rowdot_kernel<ACT, true>, grid_of(op), block_of(op), 0, ctx, X, W,
                           b, Y, M, N, K)
               : gr_launch(linear_rowdot_kernel<ACT, false>, grid_of(op), block_of(op), 0, ctx, X,
                           W, b, Y, M, N, K);
}

extern "C" gr_status gr_launch_linear_small(const gr_op *op, const gr_launch_ctx *ctx,
                                            gr_error *err) {
    const float *X = static_cast<const float *>(ctx->dptr[op->inputs[0]]);
    const float *W = static_cast<const float *>(ctx->dptr[op->inputs[1]]);
    const float *b = static_cast<const float *>(ctx->dptr[op->inputs[2]]);
    float *Y = static_cast<float *>(ctx->dptr[op->outputs[0]]);
    const int M = (int)op->ip[GR_LIN_M], N = (int)op->ip[GR_LIN_N], K = (int)op->ip[GR_LIN_K];
    cudaError_t rc;
    switch (op->ip[GR_LIN_ACT]) {
    case GR_DLRM_ACT_RELU:
        rc = linear_small_act<GR_DLRM_ACT_RELU>(op, ctx, X, W, b, Y, M, N, K);
        break;
    case GR_DLRM_ACT_SIGMOID:
        rc = linear_small_act<GR_DLRM_ACT_SIGMOID>(op, ctx, X, W, b, Y, M, N, K);
        break;
    default:
        rc = linear_small_act<GR_DLRM_ACT_NONE>(op, ctx, X, W, b, Y, M, N, K);
        break;
    }
    return finish(rc, op, err);
}

// The tiled, tc and wg kernels (one signature): the op's configuration must be one the device
// side knows, with the shared memory the host computed from dlrm.h's tables (gr_lin_tiled_smem,
// gr_lin_tc_smem, gr_lin_wg_smem) equal to the kernel's own.
static_assert(std::is_same<tiled_kernel_t, tc_kernel_t>::value, "one launch path for both");
static_assert(std::is_same<tiled_kernel_t, gr_lin_staged_kernel_t>::value, "and for wg");
static gr_status staged_resolve(const gr_op *op, tiled_kernel_t *k, gr_error *err) {
    size_t smem = 0;
    const int impl = (int)op->ip[GR_LIN_IMPL];
    const bool tc = impl == GR_LINEAR_TC, wg = impl == GR_LINEAR_WG;
    const int cfg = (int)op->ip[GR_LIN_BN];
    *k = wg ? gr_lin_wg_kernel_of(op, &smem) : tc ? tc_kernel_of(op, &smem) : tiled_kernel_of(op, &smem);
    const unsigned z = 1u;
    const unsigned threads = wg   ? gr_lin_wg_threads(cfg)
                             : tc ? gr_lin_tc_threads(cfg)
                                  : (unsigned)GR_LIN_TILED_THREADS;
    if (!*k || smem != op->smem || op->grid[2] != z || op->block[0] != threads)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                            "linear_act (%s): configuration %d, %zu bytes of shared memory "
                            "(kernel: %zu), %u threads, grid z %u (kernel: %u)",
                            wg ? "wg" : tc ? "tc" : "tiled", cfg, op->smem, smem, op->block[0],
                            op->grid[2], z);
    return GR_OK;
}

// The wg kernel's bulk form (tensor maps instead of pointers; its own launch, same checks).
static bool wgb_op(const gr_op *op) {
    return op->ip[GR_LIN_IMPL] == GR_LINEAR_WG && gr_lin_wg_bulk((int)op->ip[GR_LIN_BN]);
}

static gr_status wgb_resolve(const gr_op *op, gr_lin_wgb_kernel_t *k, gr_error *err) {
    size_t smem = 0;
    *k = gr_lin_wgb_kernel_of(op, &smem);
    const int cfg = (int)op->ip[GR_LIN_BN];
    if (!*k || smem != op->smem || op->grid[2] != 1 || op->block[0] != gr_lin_wg_threads(cfg))
        return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                            "linear_act (wg bulk): configuration %d, %lld x %lld x %lld, %zu bytes "
                            "of shared memory (kernel: %zu), %u threads",
                            cfg, (long long)op->ip[GR_LIN_M], (long long)op->ip[GR_LIN_N],
                            (long long)op->ip[GR_LIN_K], op->smem, smem, op->block[0]);
    return GR_OK;
}

// cuTensorMapEncodeTiled, a driver API function, through the runtime's entry-point lookup (so
// graphrun needs no link against libcuda). Resolved by setup(), before any launch.
static PFN_cuTensorMapEncodeTiled_v12000 tmap_encode_fn;

static gr_status tmap_resolve(const gr_op *op, gr_error *err) {
    if (tmap_encode_fn) return GR_OK;
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t rc = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                      cudaEnableDefault, &q);
    if (rc != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn) {
        cudaGetLastError();
        return gr_error_set(err, GR_ERR_CUDA, op->path,
                            "linear_act (wg bulk): the driver has no cuTensorMapEncodeTiled (%s): "
                            "update the NVIDIA driver, or set the op's attr config to \"w64\" or "
                            "\"w128\" (the shared-memory forms)",
                            cudaGetErrorString(rc));
    }
    tmap_encode_fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    return GR_OK;
}

// The tensor map of a rows x K fp32 matrix for the bulk kernel: with the row fold f
// (gr_lin_wgb_fold: f K % 4 == 0, so 16-byte map row strides; rows % f == 0, gr_lin_wgb_ok), the
// matrix as [rows / f][f K], boxes of 64 / f map rows, zero fill outside; f = 1: 32 k wide with
// the 128-byte swizzle, f > 1: GR_LIN_WG_LD = 36 wide, unswizzled, for the 16-byte aligned box
// starts of gr_lin_wgb_box.
static gr_status tmap_of(CUtensorMap *m, const float *p, int rows, int K, const char *what,
                         const gr_op *op, gr_error *err) {
    const int f = gr_lin_wgb_fold(K);
    const cuuint64_t dims[2] = {(cuuint64_t)f * (cuuint64_t)K, (cuuint64_t)(rows / f)};
    const cuuint64_t strides[1] = {(cuuint64_t)f * (cuuint64_t)K * sizeof(float)};
    const cuuint32_t box[2] = {(cuuint32_t)(f > 1 ? GR_LIN_WG_LD : GR_LIN_MMA_KT),
                               (cuuint32_t)(GR_LIN_WG_BM / f)};
    const cuuint32_t estr[2] = {1, 1};
    CUresult r = tmap_encode_fn(m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, const_cast<float *>(p),
                                dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                f > 1 ? CU_TENSOR_MAP_SWIZZLE_NONE : CU_TENSOR_MAP_SWIZZLE_128B,
                                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                            "linear_act (wg bulk): cuTensorMapEncodeTiled refused %s (%d x %d "
                            "floats at %p, row fold %d): CUresult %d",
                            what, rows, K, (const void *)p, f, (int)r);
    return GR_OK;
}

static gr_status wgb_launch(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    gr_lin_wgb_kernel_t k;
    GR_TRY(wgb_resolve(op, &k, err));
    if (!tmap_encode_fn)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "linear_act (wg bulk): setup() did not run");
    const int M = (int)op->ip[GR_LIN_M], N = (int)op->ip[GR_LIN_N], K = (int)op->ip[GR_LIN_K];
    CUtensorMap tx, tw;
    GR_TRY(tmap_of(&tx, static_cast<const float *>(ctx->dptr[op->inputs[0]]), M, K, "x", op, err));
    GR_TRY(tmap_of(&tw, static_cast<const float *>(ctx->dptr[op->inputs[1]]), N, K, "W", op, err));
    const float *b = static_cast<const float *>(ctx->dptr[op->inputs[2]]);
    float *Y = static_cast<float *>(ctx->dptr[op->outputs[0]]);
    const int pre = (op->ip[GR_LIN_FLAGS] & GR_LIN_F_PRE) != 0;
    return finish(gr_launch(k, grid_of(op), block_of(op), op->smem, ctx, tx, tw, b, Y, M, N, K, pre),
                  op, err);
}

static gr_status wg_device_check(const gr_op *op, gr_error *err) {
    int dev = 0, major = 0, minor = 0;
    GR_CUDA(cudaGetDevice(&dev), err);
    GR_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), err);
    GR_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), err);
    if (major != 9 || minor != 0)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": impl \"wg\" runs only on compute "
                            "capability 9.0 (H100, H200); this GPU is %d.%d: use impl \"tc\" "
                            "or \"auto\"",
                            major, minor);
    return GR_OK;
}

extern "C" gr_status gr_setup_linear_staged(const gr_op *op, gr_error *err) {
    if (wgb_op(op)) {
        gr_lin_wgb_kernel_t k;
        GR_TRY(wgb_resolve(op, &k, err));
        GR_TRY(wg_device_check(op, err));
        GR_TRY(tmap_resolve(op, err));
        GR_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)op->smem),
                err);
        return GR_OK;
    }
    tiled_kernel_t k;
    GR_TRY(staged_resolve(op, &k, err));
    if (op->ip[GR_LIN_IMPL] == GR_LINEAR_WG) // sm_90a code: the plan's target may not be this GPU
        GR_TRY(wg_device_check(op, err));
    if (op->smem > 48 * 1024)
        GR_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)op->smem),
                err);
    return GR_OK;
}

extern "C" gr_status gr_launch_linear_staged(const gr_op *op, const gr_launch_ctx *ctx,
                                             gr_error *err) {
    if (wgb_op(op)) return wgb_launch(op, ctx, err);
    tiled_kernel_t k;
    GR_TRY(staged_resolve(op, &k, err));
    const float *X = static_cast<const float *>(ctx->dptr[op->inputs[0]]);
    const float *W = static_cast<const float *>(ctx->dptr[op->inputs[1]]);
    const float *b = static_cast<const float *>(ctx->dptr[op->inputs[2]]);
    float *Y = static_cast<float *>(ctx->dptr[op->outputs[0]]);
    const int M = (int)op->ip[GR_LIN_M], N = (int)op->ip[GR_LIN_N], K = (int)op->ip[GR_LIN_K];
    const int pre = (op->ip[GR_LIN_FLAGS] & GR_LIN_F_PRE) != 0;
    return finish(gr_launch(k, grid_of(op), block_of(op), op->smem, ctx, X, W, b, Y, M, N, K, pre),
                  op, err);
}

