// DLRM kernels (device side), fp32. Every kernel calls gr_pdl_enter() before touching memory and
// is launched through gr_launch(), so --pdl may overlap its launch with the previous kernel.
//
// Napkin math at B = 128, D = 16, 26 tables, bag 1 (the reference DLRM Kaggle shape):
// - embedding: 128 x 26 rows of 64 B gathered = 213 KB read, 213 KB written; one launch for all
//   tables (TBE) instead of 26. Latency-bound: ~3 K independent 16-byte loads.
// - MLPs: bottom 13-512-256-64-16 is 155 K MAC per row, top 367-512-256-1 is 319 K MAC per row:
//   61 M MAC at B = 128 (~1 us of the H200's 67 TFLOP/s fp32 if the SMs were all busy; they are
//   not: a 128 x 256 output is 32 tiles of 32 x 32), 971 M MAC at B = 2048 (~29 us at peak).
//   Weights: 1.4 MB, read once per step.
// - interaction: 351 dots of 16 per row = 11 K flop per row; the fused kernel reads x and E
//   once (1.7 KB per row) and writes 367 floats; unfused it is concat (write T), a batched GEMM
//   (27 x 27 per row, half of it wasted), the triangle gather and a second concat.
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/cuda_check.h"
#include "kernels/dlrm.h"
#include "kernels/launch.cuh"

namespace {

// ---------- embedding bags (one table, or T tables in one launch) ----------

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
};

// One thread per 16-byte piece (VEC, D % 4 == 0) or per float of an output row (b, t); adjacent
// threads take adjacent pieces, then adjacent tables of one batch row, so the output is written
// contiguously. Rows outside [0, rows) are skipped (they contribute zeros), as in the CPU
// reference: a bad index never reads outside a table.
template <typename IDX, bool VEC>
__global__ void __launch_bounds__(128) embedding_kernel(const __grid_constant__ emb_args a) {
    gr_pdl_enter();
    const int per_row = VEC ? a.D / 4 : a.D;
    const int64_t total = a.B * a.T * per_row;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < total; g += stride) {
        const int q = (int)(g % per_row);
        const int64_t bt = g / per_row; // b * T + t
        const int t = (int)(bt % a.T);
        const int64_t b = bt / a.T;
        const IDX *ix = static_cast<const IDX *>(a.idx[t]) + b * a.bag;
        const float *tab = a.table[t];
        const int64_t rows = a.rows[t];
        if (VEC) {
            float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
            for (int j = 0; j < a.bag; j++) {
                const int64_t r = (int64_t)ix[j];
                if (r < 0 || r >= rows) continue;
                const float4 v = __ldg(reinterpret_cast<const float4 *>(tab + r * a.D) + q);
                acc.x += v.x;
                acc.y += v.y;
                acc.z += v.z;
                acc.w += v.w;
            }
            acc.x *= a.scale;
            acc.y *= a.scale;
            acc.z *= a.scale;
            acc.w *= a.scale;
            reinterpret_cast<float4 *>(a.out + bt * a.D)[q] = acc;
        } else {
            float acc = 0.f;
            for (int j = 0; j < a.bag; j++) {
                const int64_t r = (int64_t)ix[j];
                if (r < 0 || r >= rows) continue;
                acc += __ldg(tab + r * a.D + q);
            }
            a.out[bt * a.D + q] = acc * a.scale;
        }
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

// Pair p of the strict lower triangle, row by row: p = i (i - 1) / 2 + j, j < i.
__device__ __forceinline__ void tril_pair(int64_t p, int &i, int &j) {
    int64_t r = (int64_t)((1.0 + sqrt(1.0 + 8.0 * (double)p)) * 0.5);
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

// ---------- fused dot interaction ----------

// One block per batch row (grid-stride over rows): the F = T + 1 vectors (x first, then the T
// embeddings) go to shared memory once, padded to D + 1 floats so that the threads of a warp,
// each on a different pair, mostly hit different banks; each thread then makes whole dots.
// Output row: x (D floats), then the P = F (F - 1) / 2 dots of pairs j < i, row by row.
__global__ void __launch_bounds__(128)
interaction_kernel(const float *__restrict__ x, const float *__restrict__ E, float *__restrict__ R,
                   int64_t B, int T, int D, int P) {
    extern __shared__ float f[];
    gr_pdl_enter();
    const int F = T + 1, ld = D + 1;
    for (int64_t b = blockIdx.x; b < B; b += gridDim.x) {
        const float *xb = x + b * D;
        const float *eb = E + b * (int64_t)T * D;
        for (int e = threadIdx.x; e < F * D; e += blockDim.x) {
            const int i = e / D, k = e - i * D;
            f[i * ld + k] = i == 0 ? xb[k] : eb[e - D];
        }
        __syncthreads();
        float *out = R + b * (int64_t)(D + P);
        for (int k = threadIdx.x; k < D; k += blockDim.x) out[k] = f[k];
        for (int p = threadIdx.x; p < P; p += blockDim.x) {
            int i, j;
            tril_pair(p, i, j);
            const float *fi = f + i * ld, *fj = f + j * ld;
            float s = 0.f;
            for (int k = 0; k < D; k++) s = fmaf(fi[k], fj[k], s);
            out[D + p] = s;
        }
        __syncthreads(); // the next row overwrites f
    }
}

// ---------- Linear + bias + activation, SIMT ----------

template <int ACT> __device__ __forceinline__ float act_f(float v) {
    if (ACT == GR_DLRM_ACT_RELU) return v > 0.f ? v : 0.f;
    if (ACT == GR_DLRM_ACT_SIGMOID) return 1.f / (1.f + expf(-v));
    return v;
}

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

// Y[M, N] = act(X[M, K] W[N, K]^T + bias). A block owns a 32 x BN output tile; its 256 threads
// form G = 256 / TPG groups of TPG = 8 x BN/4 threads, each thread a 4 x 4 micro-tile, and the
// groups split every 32-wide K chunk between them (G-way split-K inside the block, reduced
// through shared memory at the end). Small batches give few tiles, so the split is what keeps
// each block's dependent chain short. Chunks are staged k-major in shared memory (transposed on
// the way in) so each k step is two 16-byte shared loads and 16 FMAs; the next chunk's global
// loads are issued before the current chunk is consumed.
template <int BN, int ACT, bool VEC>
__global__ void __launch_bounds__(GR_LIN_THREADS)
linear_simt_kernel(const float *__restrict__ X, const float *__restrict__ W,
                   const float *__restrict__ bias, float *__restrict__ Y, int M, int N, int K,
                   int vec_out) {
    constexpr int BM = GR_LIN_BM, KC = 32;
    constexpr int TPG = (BM / 4) * (BN / 4);
    constexpr int G = GR_LIN_THREADS / TPG;
    constexpr int KPG = KC / G;
    constexpr int XS = BM + 4, WS = BN + 4; // row strides, multiples of 4 floats
    static_assert(GR_LIN_THREADS == 256 && BM == 32 && (BN == 16 || BN == 32), "tile shape");
    static_assert(KPG * G == KC, "K chunk split");
    __shared__ __align__(16) float xs[KC * XS];
    __shared__ __align__(16) float ws[KC * WS];
    __shared__ float red[(G - 1) * 16 * TPG];
    gr_pdl_enter();
    const int tid = threadIdx.x, g = tid / TPG, t = tid % TPG;
    const int tx = t % (BN / 4), ty = t / (BN / 4);
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int lr = tid / 8, lk = (tid % 8) * 4; // loader: row, first k of a 32 x 32 chunk
    float xr[4], wr[4];
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) acc[i][j] = 0.f;

    load4<VEC>(X, M, K, m0 + lr, lk, xr);
    if (lr < BN) load4<VEC>(W, N, K, n0 + lr, lk, wr);
    for (int k0 = 0; k0 < K; k0 += KC) {
#pragma unroll
        for (int u = 0; u < 4; u++) xs[(lk + u) * XS + lr] = xr[u];
        if (lr < BN)
#pragma unroll
            for (int u = 0; u < 4; u++) ws[(lk + u) * WS + lr] = wr[u];
        __syncthreads();
        if (k0 + KC < K) { // next chunk in flight while this one is consumed
            load4<VEC>(X, M, K, m0 + lr, k0 + KC + lk, xr);
            if (lr < BN) load4<VEC>(W, N, K, n0 + lr, k0 + KC + lk, wr);
        }
#pragma unroll
        for (int kk = 0; kk < KPG; kk++) {
            const int k = g * KPG + kk;
            const float4 a = *reinterpret_cast<const float4 *>(&xs[k * XS + ty * 4]);
            const float4 b = *reinterpret_cast<const float4 *>(&ws[k * WS + tx * 4]);
            const float av[4] = {a.x, a.y, a.z, a.w}, bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
        __syncthreads();
    }
    if (g > 0) {
#pragma unroll
        for (int e = 0; e < 16; e++) red[((g - 1) * 16 + e) * TPG + t] = acc[e / 4][e % 4];
    }
    __syncthreads();
    if (g != 0) return;
    for (int gg = 1; gg < G; gg++)
#pragma unroll
        for (int e = 0; e < 16; e++) acc[e / 4][e % 4] += red[((gg - 1) * 16 + e) * TPG + t];
    const int n = n0 + tx * 4;
    float bv[4];
#pragma unroll
    for (int j = 0; j < 4; j++) bv[j] = n + j < N ? __ldg(bias + n + j) : 0.f;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int m = m0 + ty * 4 + i;
        if (m >= M || n >= N) break;
        float v[4];
#pragma unroll
        for (int j = 0; j < 4; j++) v[j] = act_f<ACT>(acc[i][j] + bv[j]);
        float *yr = Y + (size_t)m * N + n;
        if (vec_out) { // N % 4 == 0, so n..n+3 are inside and 16-byte aligned
            *reinterpret_cast<float4 *>(yr) = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
            for (int j = 0; j < 4; j++)
                if (n + j < N) yr[j] = v[j];
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
cudaError_t linear_dispatch_act(int act, const gr_op *op, const gr_launch_ctx *ctx,
                                const float *X, const float *W, const float *b, float *Y, int M,
                                int N, int K, int vec_out) {
    switch (act) {
    case GR_DLRM_ACT_RELU:
        return gr_launch(linear_simt_kernel<BN, GR_DLRM_ACT_RELU, VEC>, grid_of(op), block_of(op), 0,
                         ctx, X, W, b, Y, M, N, K, vec_out);
    case GR_DLRM_ACT_SIGMOID:
        return gr_launch(linear_simt_kernel<BN, GR_DLRM_ACT_SIGMOID, VEC>, grid_of(op), block_of(op),
                         0, ctx, X, W, b, Y, M, N, K, vec_out);
    default:
        return gr_launch(linear_simt_kernel<BN, GR_DLRM_ACT_NONE, VEC>, grid_of(op), block_of(op), 0,
                         ctx, X, W, b, Y, M, N, K, vec_out);
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
    cudaError_t rc = gr_launch(interaction_kernel, grid_of(op), block_of(op), op->smem, ctx,
                               static_cast<const float *>(ctx->dptr[op->inputs[0]]),
                               static_cast<const float *>(ctx->dptr[op->inputs[1]]),
                               static_cast<float *>(ctx->dptr[op->outputs[0]]), op->ip[GR_INT_B],
                               (int)op->ip[GR_INT_T], (int)op->ip[GR_INT_D], (int)op->ip[GR_INT_P]);
    return finish(rc, op, err);
}

extern "C" gr_status gr_launch_linear_simt(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    const float *X = static_cast<const float *>(ctx->dptr[op->inputs[0]]);
    const float *W = static_cast<const float *>(ctx->dptr[op->inputs[1]]);
    const float *b = static_cast<const float *>(ctx->dptr[op->inputs[2]]);
    float *Y = static_cast<float *>(ctx->dptr[op->outputs[0]]);
    const int M = (int)op->ip[GR_LIN_M], N = (int)op->ip[GR_LIN_N], K = (int)op->ip[GR_LIN_K];
    const int act = (int)op->ip[GR_LIN_ACT], vec_out = N % 4 == 0;
    const bool vec = op->ip[GR_LIN_VEC] != 0;
    cudaError_t rc;
    if (op->ip[GR_LIN_BN] == 32)
        rc = vec ? linear_dispatch_act<32, true>(act, op, ctx, X, W, b, Y, M, N, K, vec_out)
                 : linear_dispatch_act<32, false>(act, op, ctx, X, W, b, Y, M, N, K, vec_out);
    else
        rc = vec ? linear_dispatch_act<16, true>(act, op, ctx, X, W, b, Y, M, N, K, vec_out)
                 : linear_dispatch_act<16, false>(act, op, ctx, X, W, b, Y, M, N, K, vec_out);
    return finish(rc, op, err);
}
