/* Pointwise kernel family: add, mul, relu/gelu/silu, the fused add-mul-activation kernel and its
 * 16-byte vectorized version (the Fusing Kernels lecture's y = act((a + b) * c)). */
#ifndef GR_KERNELS_POINTWISE_H
#define GR_KERNELS_POINTWISE_H

#include "core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GR_ACT_NONE = 0, GR_ACT_RELU = 1, GR_ACT_GELU = 2, GR_ACT_SILU = 3 };
enum { GR_BIN_ADD = 0, GR_BIN_MUL = 1 };
/* add_mul_act_vec's forms (attr "form"): a grid-stride loop over an SM-sized grid with streaming
 * hints (today's default); one tile per block over cdiv(n, tile) blocks with default caching (the
 * shape of Inductor's Triton kernel); the same tile with streaming hints. docs/pointwise.md. */
enum { GR_PW_GRID_STRIDE = 0, GR_PW_TILE = 1, GR_PW_TILE_CS = 2 };

/* op->ip[0] = n, op->ip[1] = GR_BIN_* */
gr_status gr_launch_binary(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
/* op->ip[0] = n, op->ip[1] = GR_ACT_* */
gr_status gr_launch_act(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
/* op->ip[0] = n, op->ip[1] = GR_ACT_*; scalar (one element per thread per iteration) */
gr_status gr_launch_add_mul_act(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
/* same, 16-byte loads/stores with several in flight, scalar tail for n % (16/size);
 * op->ip[2] = GR_PW_* form, op->ip[3] = 16-byte vectors per operand per thread (1, 2, 4) */
gr_status gr_launch_add_mul_act_vec(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);

/* Host-side activation, the same formulas as the device's (erf GELU). */
double gr_act_host(double x, int act);
int gr_act_parse(const char *name); /* -1 if unknown */

extern const gr_kernel_def *const gr_pointwise_kernels[];

#ifdef __cplusplus
}
#endif
#endif
