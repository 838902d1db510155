/* GEMM through cuBLAS: Y = alpha * op(A) op(B) [+ beta * C], row-major, optionally batched
 * (strided) or with leading dims of A flattened into rows. The library decides how many
 * kernels a call launches, so the plan counts it as one op of unknown launch count. */
#ifndef GR_KERNELS_GEMM_H
#define GR_KERNELS_GEMM_H

#include "core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Point cuBLAS at the op's stream and that stream's workspace (cublasSetStream resets the
 * workspace, so both are set before every call). For kernel families that call cuBLAS. */
gr_status gr_cublas_bind(const gr_launch_ctx *ctx, gr_error *err);

extern const gr_kernel_def *const gr_gemm_kernels[];

#ifdef __cplusplus
}
#endif
#endif
