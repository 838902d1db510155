/* DLRM kernel family (issue #4): embedding bags (one table, and table-batched over up to 32
 * tables in one launch), bias add, sigmoid, concat, lower-triangle gather, the fused dot
 * interaction (alone, or with the table-batched embedding gather fused in), and Linear + bias +
 * activation fused (own SIMT kernel for small batches, cuBLASLt with a bias/ReLU epilogue for
 * large ones, optionally TF32). Host side (schemas, checks, accounting, CPU references,
 * cuBLASLt setup and algorithm timing) in dlrm.c; device code in dlrm.cu. fp32 storage. */
#ifndef GR_KERNELS_DLRM_H
#define GR_KERNELS_DLRM_H

#include <stdint.h>

#include "core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_EMB_MAX_TABLES 32 /* inputs are tables + index buffers, at most GR_MAX_INPUTS = 64 */
#define GR_CONCAT_MAX_INPUTS GR_MAX_INPUTS

enum { GR_DLRM_ACT_NONE = 0, GR_DLRM_ACT_RELU = 1, GR_DLRM_ACT_SIGMOID = 2 };
enum { GR_LINEAR_SIMT = 0, GR_LINEAR_LT = 1 };
enum { GR_MATH_FP32 = 0, GR_MATH_TF32 = 1 };

/* op->ip layouts, shared by dlrm.c (check) and dlrm.cu (launch). A *_PRE slot is 1 when every
 * buffer the kernel may read before its PDL wait (tables, indices, weights) is written by no op
 * of the plan: such reads cannot race with the preceding kernel (see dlrm.cu). */
enum {
    GR_EMB_B,
    GR_EMB_T,
    GR_EMB_D,
    GR_EMB_BAG,
    GR_EMB_IDX64,
    GR_EMB_VEC,
    GR_EMB_MEAN,
    GR_EMB_PRE
};
enum { GR_BIAS_N_TOTAL, GR_BIAS_N };
enum { GR_CAT_ROWS, GR_CAT_COLS, GR_CAT_MAXCOLS };
enum { GR_TRIL_B, GR_TRIL_N, GR_TRIL_P };
enum { GR_INT_B, GR_INT_T, GR_INT_D, GR_INT_P };
/* embedding_interaction: x [B, D], T tables, T index buffers -> R [B, D + P] */
enum { GR_EI_B, GR_EI_T, GR_EI_D, GR_EI_BAG, GR_EI_IDX64, GR_EI_VEC, GR_EI_P, GR_EI_PRE };
enum { GR_LIN_M, GR_LIN_N, GR_LIN_K, GR_LIN_ACT, GR_LIN_IMPL, GR_LIN_BN, GR_LIN_VEC, GR_LIN_FLAGS };
enum {
    GR_LIN_F_PRE = 1, /* W and bias are written by no op: loaded before the PDL wait */
    GR_LIN_F_TF32 = 2 /* math tf32: cuBLASLt may use TF32 tensor cores (the SIMT kernel is fp32) */
};

/* The SIMT linear kernel's tile: 32 rows x GR_LIN_BN (8, 16 or 32) outputs per block of 256
 * threads; K is consumed GR_LIN_KC at a time (every load of a chunk in flight at once), each
 * chunk split over 256 / (8 * BN / 4) thread groups, the groups' partial tiles reduced in
 * shared memory at the end. */
#define GR_LIN_BM 32
#define GR_LIN_KC 128
#define GR_LIN_THREADS 256

/* Launches (dlrm.cu). Each checks its launch and returns a gr_error naming the op. */
gr_status gr_launch_embedding(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_bias_add(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_sigmoid(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_concat(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_tril_gather(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_dot_interaction(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_embedding_interaction(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_linear_simt(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);

/* (i, j), j < i, of pair p in the strictly lower triangle taken row by row:
 * p = i (i - 1) / 2 + j. Shared by the references and tests. */
void gr_tril_pair(int64_t p, int *i, int *j);

extern const gr_kernel_def *const gr_dlrm_kernels[];

#ifdef __cplusplus
}
#endif
#endif
