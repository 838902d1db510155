/* gemm: cuBLAS GEMM (cublasGemmEx / cublasGemmStridedBatchedEx) as a registry kernel, with
 * its shape rules, accounting (2*M*N*K flops; A, B, Y and C bytes) and a CPU reference with
 * double accumulation. Row-major Y[M,N] = A[M,K] B[K,N] is computed as the column-major
 * Y^T = B^T A^T, so no transposes are materialised. */
#include "kernels/gemm.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/parallel.h"
#include "kernels/common.h"

enum { P_M, P_N, P_K, P_BATCH, P_TA, P_TB, P_BBATCHED, P_HASC };

gr_status gr_cublas_bind(const gr_launch_ctx *ctx, gr_error *err) {
    if (!ctx->cublas)
        return gr_error_set(err, GR_ERR_INTERNAL, NULL, "cuBLAS handle missing (the op's kernel "
                            "must carry GR_KF_LIBRARY so the device state creates one)");
    GR_CUBLAS(cublasSetStream((cublasHandle_t)ctx->cublas, (cudaStream_t)ctx->stream), err);
    GR_CUBLAS(cublasSetWorkspace((cublasHandle_t)ctx->cublas, ctx->workspace, ctx->workspace_bytes), err);
    return GR_OK;
}

static gr_status check_gemm(gr_op *op, const gr_plan *plan, gr_error *err) {
    const gr_buffer *A = gr_in(op, plan, 0), *B = gr_in(op, plan, 1), *Y = gr_out(op, plan, 0);
    const gr_buffer *C = op->ninputs > 2 ? gr_in(op, plan, 2) : NULL;
    gr_status st = gr_check_dtype(op, A, "inputs[0] (A)", gr_float_dtypes, err);
    if (st != GR_OK) return st;
    if (B->dtype != A->dtype)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"gemm\": B \"%s\" is %s but A \"%s\" is %s; A and B share a dtype",
                            B->name, gr_dtype_name(B->dtype), A->name, gr_dtype_name(A->dtype));
    if (Y->dtype != A->dtype && Y->dtype != GR_FP32)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"gemm\": Y \"%s\" is %s; it must be %s (A's dtype) or fp32",
                            Y->name, gr_dtype_name(Y->dtype), gr_dtype_name(A->dtype));
    int ta = gr_op_attr_num(op, "trans_a", 0) != 0, tb = gr_op_attr_num(op, "trans_b", 0) != 0;
    char sa[96], sb[96], sy[96];
    gr_shape_str(A, sa, sizeof(sa));
    gr_shape_str(B, sb, sizeof(sb));
    gr_shape_str(Y, sy, sizeof(sy));
    if (B->ndim != 2 && B->ndim != 3)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"gemm\": B \"%s\" has shape %s; it must be 2-D [K, N] or "
                            "3-D [batch, K, N]", B->name, sb);
    int64_t K = tb ? B->shape[B->ndim - 1] : B->shape[B->ndim - 2];
    int64_t N = tb ? B->shape[B->ndim - 2] : B->shape[B->ndim - 1];
    int64_t batch = 1, M;
    if (B->ndim == 3) {
        batch = B->shape[0];
        if (A->ndim != 3 || A->shape[0] != batch)
            return gr_error_set(err, GR_ERR_INPUT, op->path,
                                "kernel \"gemm\": B \"%s\" is batched %s, so A \"%s\" must be "
                                "[%lld, M, K]; it is %s", B->name, sb, A->name, (long long)batch, sa);
        M = ta ? A->shape[2] : A->shape[1];
        if ((ta ? A->shape[1] : A->shape[2]) != K)
            return gr_error_set(err, GR_ERR_INPUT, op->path,
                                "kernel \"gemm\": inner dims differ: A \"%s\" %s%s vs B \"%s\" %s%s (K = %lld)",
                                A->name, sa, ta ? " (transposed)" : "", B->name, sb,
                                tb ? " (transposed)" : "", (long long)K);
    } else {
        int64_t a_inner;
        if (ta) {
            if (A->ndim != 2)
                return gr_error_set(err, GR_ERR_INPUT, op->path,
                                    "kernel \"gemm\": a transposed A must be 2-D [K, M]; \"%s\" is %s", A->name, sa);
            a_inner = A->shape[0];
            M = A->shape[1];
        } else {
            a_inner = A->shape[A->ndim - 1];
            M = A->numel / a_inner; /* leading dims flattened into rows */
        }
        if (a_inner != K)
            return gr_error_set(err, GR_ERR_INPUT, op->path,
                                "kernel \"gemm\": inner dims differ: A \"%s\" %s%s has K = %lld, B "
                                "\"%s\" %s%s has K = %lld",
                                A->name, sa, ta ? " (transposed)" : "", (long long)a_inner, B->name,
                                sb, tb ? " (transposed)" : "", (long long)K);
    }
    if (Y->numel != batch * M * N || Y->shape[Y->ndim - 1] != N)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"gemm\": Y \"%s\" has shape %s; A %s x B %s gives %s[%lld, %lld]",
                            Y->name, sy, sa, sb, batch > 1 ? "batch x " : "", (long long)M, (long long)N);
    if (C && (C->numel != Y->numel || C->dtype != Y->dtype))
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"gemm\": C \"%s\" must have Y's shape and dtype (%s, %lld elements)",
                            C->name, gr_dtype_name(Y->dtype), (long long)Y->numel);
    if (M > 2147483647 || N > 2147483647 || K > 2147483647)
        return gr_error_set(err, GR_ERR_INPUT, op->path, "kernel \"gemm\": a dimension exceeds 2^31");
    op->ip[P_M] = M;
    op->ip[P_N] = N;
    op->ip[P_K] = K;
    op->ip[P_BATCH] = batch;
    op->ip[P_TA] = ta;
    op->ip[P_TB] = tb;
    op->ip[P_BBATCHED] = B->ndim == 3;
    op->ip[P_HASC] = C != NULL;
    op->fp[0] = gr_op_attr_num(op, "alpha", 1.0);
    op->fp[1] = C ? gr_op_attr_num(op, "beta", 1.0) : 0.0;
    op->bytes_read = (double)A->bytes + (double)B->bytes + (C ? (double)C->bytes : 0.0);
    op->bytes_written = (double)Y->bytes;
    op->flops = 2.0 * (double)batch * (double)M * (double)N * (double)K;
    op->launches = -1;
    op->grid[0] = op->grid[1] = op->grid[2] = 0;
    op->block[0] = op->block[1] = op->block[2] = 0;
    return GR_OK;
}

static cudaDataType_t cuda_type(gr_dtype t) {
    switch (t) {
    case GR_BF16: return CUDA_R_16BF;
    case GR_FP16: return CUDA_R_16F;
    default: return CUDA_R_32F;
    }
}

static gr_status launch_gemm(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    const gr_plan *p = ctx->plan;
    const gr_buffer *A = &p->bufs[op->inputs[0]], *Y = &p->bufs[op->outputs[0]];
    void *dA = ctx->dptr[op->inputs[0]], *dB = ctx->dptr[op->inputs[1]], *dY = ctx->dptr[op->outputs[0]];
    int M = (int)op->ip[P_M], N = (int)op->ip[P_N], K = (int)op->ip[P_K];
    int batch = (int)op->ip[P_BATCH], ta = (int)op->ip[P_TA], tb = (int)op->ip[P_TB];
    float alpha = (float)op->fp[0], beta = (float)op->fp[1];
    if (op->ip[P_HASC]) {
        void *dC = ctx->dptr[op->inputs[2]];
        if (dC != dY)
            GR_CUDA(cudaMemcpyAsync(dY, dC, Y->bytes, cudaMemcpyDeviceToDevice, (cudaStream_t)ctx->stream), err);
    }
    GR_TRY(gr_cublas_bind(ctx, err));
    cublasHandle_t h = (cublasHandle_t)ctx->cublas;
    /* column-major: Y^T (N x M) = op(B)^T (N x K) * op(A)^T (K x M) */
    cublasOperation_t opB = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opA = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    int ldb = tb ? K : N, lda = ta ? M : K, ldy = N;
    cudaDataType_t tin = cuda_type(A->dtype), tout = cuda_type(Y->dtype);
    cublasComputeType_t ct = CUBLAS_COMPUTE_32F;
    if (A->dtype == GR_FP32 && gr_op_attr_num(op, "tf32", 0) != 0) ct = CUBLAS_COMPUTE_32F_FAST_TF32;
    if (batch == 1) {
        GR_CUBLAS(cublasGemmEx(h, opB, opA, N, M, K, &alpha, dB, tin, ldb, dA, tin, lda, &beta, dY,
                               tout, ldy, ct, CUBLAS_GEMM_DEFAULT),
                  err);
    } else {
        long long sB = op->ip[P_BBATCHED] ? (long long)K * N : 0;
        GR_CUBLAS(cublasGemmStridedBatchedEx(h, opB, opA, N, M, K, &alpha, dB, tin, ldb, sB, dA, tin,
                                             lda, (long long)M * K, &beta, dY, tout, ldy,
                                             (long long)M * N, batch, ct, CUBLAS_GEMM_DEFAULT),
                  err);
    }
    return GR_OK;
}

/* The reference GEMM, in parallel (core/parallel.h): over output rows when there are many, else
 * over column chunks of each row. Every output is the same k-ordered double sum either way, so
 * the result does not depend on the thread count. */
typedef struct gemm_ref {
    const gr_buffer *A, *B, *Y;
    const void *a, *b, *c;
    void *y;
    int64_t M, N, K;
    int ta, tb, bb;
    double alpha, beta;
    int64_t row; /* columns mode: the row (s * M + i) being computed */
} gemm_ref;

/* Outputs [j0, j1) of row r (= s * M + i); acol holds A's row, out scratch of j1 - j0. */
static void gemm_ref_cols(const gemm_ref *g, int64_t r, int64_t j0, int64_t j1, const double *acol,
                          double *out) {
    int64_t s = r / g->M, i = r % g->M, N = g->N, K = g->K;
    size_t boff = g->bb ? (size_t)(s * K * N) : 0, yoff = (size_t)(s * g->M * N);
    for (int64_t j = j0; j < j1; j++) out[j - j0] = 0;
    if (!g->tb) {
        for (int64_t k = 0; k < K; k++) {
            double av = acol[k];
            if (av == 0) continue;
            for (int64_t j = j0; j < j1; j++)
                out[j - j0] += av * gr_load(g->b, g->B->dtype, boff + (size_t)(k * N + j));
        }
    } else {
        /* B stored [N, K]: each output is a dot product of two contiguous rows */
        for (int64_t j = j0; j < j1; j++) {
            double sum = 0;
            size_t brow = boff + (size_t)(j * K);
            for (int64_t k = 0; k < K; k++) sum += acol[k] * gr_load(g->b, g->B->dtype, brow + (size_t)k);
            out[j - j0] = sum;
        }
    }
    for (int64_t j = j0; j < j1; j++) {
        double v = g->alpha * out[j - j0];
        if (g->c) v += g->beta * gr_load(g->c, g->Y->dtype, yoff + (size_t)(i * N + j));
        gr_store(g->y, g->Y->dtype, yoff + (size_t)(i * N + j), v);
    }
}

static void gemm_ref_acol(const gemm_ref *g, int64_t r, double *acol) {
    int64_t s = r / g->M, i = r % g->M, M = g->M, K = g->K;
    size_t aoff = (size_t)(s * M * K);
    for (int64_t k = 0; k < K; k++)
        acol[k] = gr_load(g->a, g->A->dtype, aoff + (size_t)(g->ta ? k * M + i : i * K + k));
}

static int gemm_ref_rows(void *ctx, int64_t chunk, int64_t r0, int64_t r1) {
    const gemm_ref *g = ctx;
    (void)chunk;
    double *acol = malloc((size_t)(g->K ? g->K : 1) * sizeof(double));
    double *out = malloc((size_t)(g->N ? g->N : 1) * sizeof(double));
    if (!acol || !out) {
        free(acol), free(out);
        return -1;
    }
    for (int64_t r = r0; r < r1; r++) {
        gemm_ref_acol(g, r, acol);
        gemm_ref_cols(g, r, 0, g->N, acol, out);
    }
    free(acol), free(out);
    return 0;
}

typedef struct gemm_ref_row {
    const gemm_ref *g;
    const double *acol;
} gemm_ref_row;

static int gemm_ref_colchunk(void *ctx, int64_t chunk, int64_t j0, int64_t j1) {
    const gemm_ref_row *R = ctx;
    (void)chunk;
    double *out = malloc((size_t)(j1 - j0) * sizeof(double));
    if (!out) return -1;
    gemm_ref_cols(R->g, R->g->row, j0, j1, R->acol, out);
    free(out);
    return 0;
}

static gr_status ref_gemm(const gr_op *op, const gr_plan *plan, void *const *host, gr_error *err) {
    gemm_ref g;
    g.A = gr_in(op, plan, 0), g.B = gr_in(op, plan, 1), g.Y = gr_out(op, plan, 0);
    g.a = host[op->inputs[0]], g.b = host[op->inputs[1]];
    g.c = op->ip[P_HASC] ? host[op->inputs[2]] : NULL;
    g.y = host[op->outputs[0]];
    g.M = op->ip[P_M], g.N = op->ip[P_N], g.K = op->ip[P_K];
    int64_t rows = op->ip[P_BATCH] * g.M;
    g.ta = (int)op->ip[P_TA], g.tb = (int)op->ip[P_TB], g.bb = (int)op->ip[P_BBATCHED];
    g.alpha = op->fp[0], g.beta = op->fp[1];
    g.row = 0;
    int rc = 0;
    if (rows >= 4 * (int64_t)gr_parallel_threads()) {
        rc = gr_parallel_for(rows, 1, gemm_ref_rows, &g);
    } else {
        double *acol = malloc((size_t)(g.K ? g.K : 1) * sizeof(double));
        if (!acol) rc = -1;
        for (int64_t r = 0; r < rows && rc == 0; r++) {
            g.row = r;
            gemm_ref_acol(&g, r, acol);
            gemm_ref_row R = {&g, acol};
            rc = gr_parallel_for(g.N, 256, gemm_ref_colchunk, &R);
        }
        free(acol);
    }
    if (rc != 0) return gr_error_set(err, GR_ERR_NOMEM, op->path, "out of host memory");
    return GR_OK;
}

static const gr_attr_spec gemm_attrs[] = {
    {"trans_a", GR_ATTR_BOOL, 0, 0, NULL, NULL, "A is stored [K, M]"},
    {"trans_b", GR_ATTR_BOOL, 0, 0, NULL, NULL, "B is stored [N, K] (a Linear layer's weight)"},
    {"alpha", GR_ATTR_FLOAT, 0, 1.0, NULL, NULL, "scale of A*B (default 1)"},
    {"beta", GR_ATTR_FLOAT, 0, 1.0, NULL, NULL, "scale of C when C is given (default 1)"},
    {"tf32", GR_ATTR_BOOL, 0, 0, NULL, NULL, "fp32 inputs: allow TF32 tensor cores"}};

static const gr_kernel_def k_gemm = {
    "gemm",
    "Y = alpha * op(A) op(B) [+ beta * C] through cuBLAS (fp32 accumulation); batched when B is 3-D",
    "A [..., M, K], B [K, N] or [batch, K, N], optional C (Y's shape; may be Y itself)",
    "Y [..., M, N] (A's dtype or fp32)",
    2, 3, 1, 1, gemm_attrs, 5, GR_KF_LIBRARY | GR_KF_INPLACE,
    check_gemm, launch_gemm, ref_gemm, NULL, NULL};

const gr_kernel_def *const gr_gemm_kernels[] = {&k_gemm, NULL};
