/* Turning failed CUDA runtime / cuBLAS calls and kernel launches into gr_errors that name the
 * call, its error name and where in graphrun it was made. */
#ifndef GR_CUDA_CHECK_H
#define GR_CUDA_CHECK_H

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* `code` is a cudaError_t. Returns GR_OK for cudaSuccess. */
gr_status gr_cuda_fail(int code, const char *expr, const char *file, int line, gr_error *err);
/* `status` is a cublasStatus_t. */
gr_status gr_cublas_fail(int status, const char *expr, const char *file, int line, gr_error *err);
/* After a kernel launch: cudaGetLastError, naming the kernel. */
gr_status gr_launch_status(const char *kernel, const char *op_path, gr_error *err);

#define GR_CUDA(call, err)                                                                         \
    do {                                                                                           \
        int gr_rc_ = (int)(call);                                                                  \
        if (gr_rc_ != 0) return gr_cuda_fail(gr_rc_, #call, __FILE__, __LINE__, (err));           \
    } while (0)

#define GR_CUBLAS(call, err)                                                                       \
    do {                                                                                           \
        int gr_rc_ = (int)(call);                                                                  \
        if (gr_rc_ != 0) return gr_cublas_fail(gr_rc_, #call, __FILE__, __LINE__, (err));         \
    } while (0)

/* Propagate a gr_status. */
#define GR_TRY(expr)                                                                               \
    do {                                                                                           \
        gr_status gr_st_ = (expr);                                                                 \
        if (gr_st_ != GR_OK) return gr_st_;                                                        \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
