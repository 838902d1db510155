/* Launch-measurement kernels: `empty` (does nothing; the pure launch cost) and `tiny` (y = x + c
 * on a small buffer; chained in place it makes a dependent sequence where launch overhead is
 * everything). */
#ifndef GR_KERNELS_PROBE_H
#define GR_KERNELS_PROBE_H

#include "core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

gr_status gr_launch_empty(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
/* op->ip[0] = n, op->fp[0] = c */
gr_status gr_launch_tiny(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);

extern const gr_kernel_def *const gr_probe_kernels[];

#ifdef __cplusplus
}
#endif
#endif
