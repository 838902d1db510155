/* The copy kernel of a lane's io graph (capture/iograph.h): a buffer's bytes from or to mapped
 * host memory, as a kernel node in the same graph as the step, so that a served step is one
 * graph launch with no copy-engine hand-offs. Not a workload kernel (not in the registry). */
#ifndef GR_KERNELS_IOCOPY_H
#define GR_KERNELS_IOCOPY_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One copy: `bytes` from src to dst, then dst[bytes, whole) zeroed (a bucket's padding rows;
 * whole == bytes for none). src or dst may be mapped host memory (read uncached: the host
 * rewrites it between launches). The struct is the node's argument storage. */
typedef struct gr_iocopy_args {
    void *dst;
    const void *src;
    size_t bytes, whole;
    void *argv[4]; /* filled by gr_iocopy_params: what cudaKernelNodeParams points at */
} gr_iocopy_args;

/* Fills *kernel_node_params (a struct cudaKernelNodeParams) for `a`; a's storage must outlive
 * the call that takes the params (CUDA copies the arguments). */
void gr_iocopy_params(gr_iocopy_args *a, void *kernel_node_params);

#ifdef __cplusplus
}
#endif
#endif
