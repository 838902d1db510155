/* Helpers shared by the kernel families' checks: shape/dtype rules against the argument
 * schema (errors name the op and the buffer) and launch-dimension choices. */
#ifndef GR_KERNELS_COMMON_H
#define GR_KERNELS_COMMON_H

#include "core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline const gr_buffer *gr_in(const gr_op *op, const gr_plan *plan, int i) {
    return &plan->bufs[op->inputs[i]];
}
static inline const gr_buffer *gr_out(const gr_op *op, const gr_plan *plan, int i) {
    return &plan->bufs[op->outputs[i]];
}

/* Every input and output has the element count and dtype of inputs[0] (or outputs[0] when the
 * op has no inputs). Sets op->ip[0] = element count. */
gr_status gr_check_elementwise(gr_op *op, const gr_plan *plan, gr_error *err);
/* The buffer's dtype is one of `allowed` (GR_DTYPE_INVALID-terminated). */
gr_status gr_check_dtype(const gr_op *op, const gr_buffer *b, const char *role,
                         const gr_dtype *allowed, gr_error *err);
/* Shape string "[2048, 8192]" for messages. */
void gr_shape_str(const gr_buffer *b, char *out, size_t size);
/* Grid-stride launch: `threads` per block, each thread handling `per_thread` elements per
 * iteration; at most `blocks_per_sm` x SM count blocks. */
void gr_grid_stride(gr_op *op, const gr_plan *plan, int64_t work, int threads, int per_thread,
                    int blocks_per_sm);
/* Sum of the bytes of all inputs / outputs. */
double gr_bytes_in(const gr_op *op, const gr_plan *plan);
double gr_bytes_out(const gr_op *op, const gr_plan *plan);

extern const gr_dtype gr_float_dtypes[]; /* fp32, bf16, fp16 */

#ifdef __cplusplus
}
#endif
#endif
