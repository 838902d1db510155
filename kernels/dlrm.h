/* DLRM kernel family (issue #4): embedding bags (one table, and table-batched over up to 32
 * tables in one launch), bias add, sigmoid, concat, lower-triangle gather, the fused dot
 * interaction, and Linear + bias + activation fused (own SIMT kernel for small batches,
 * cuBLASLt with a bias/ReLU epilogue for large ones). Host side (schemas, checks, accounting,
 * CPU references, cuBLASLt setup) in dlrm.c; device code in dlrm.cu. fp32 throughout. */
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

/* op->ip layouts, shared by dlrm.c (check) and dlrm.cu (launch). */
enum { GR_EMB_B, GR_EMB_T, GR_EMB_D, GR_EMB_BAG, GR_EMB_IDX64, GR_EMB_VEC, GR_EMB_MEAN };
enum { GR_BIAS_N_TOTAL, GR_BIAS_N };
enum { GR_CAT_ROWS, GR_CAT_COLS, GR_CAT_MAXCOLS };
enum { GR_TRIL_B, GR_TRIL_N, GR_TRIL_P };
enum { GR_INT_B, GR_INT_T, GR_INT_D, GR_INT_P };
enum { GR_LIN_M, GR_LIN_N, GR_LIN_K, GR_LIN_ACT, GR_LIN_IMPL, GR_LIN_BN, GR_LIN_VEC };

/* The SIMT linear kernel's tile: 32 rows x GR_LIN_BN (16 or 32) outputs per block of 256
 * threads, K split over 256 / (8 * BN / 4) thread groups and reduced in shared memory. */
#define GR_LIN_BM 32
#define GR_LIN_THREADS 256

/* Launches (dlrm.cu). Each checks its launch and returns a gr_error naming the op. */
gr_status gr_launch_embedding(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_bias_add(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_sigmoid(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_concat(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_tril_gather(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_dot_interaction(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_linear_simt(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);

/* (i, j), j < i, of pair p in the strictly lower triangle taken row by row:
 * p = i (i - 1) / 2 + j. Shared by the references and tests. */
void gr_tril_pair(int64_t p, int *i, int *j);

extern const gr_kernel_def *const gr_dlrm_kernels[];

#ifdef __cplusplus
}
#endif
#endif
