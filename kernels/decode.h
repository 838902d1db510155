/* decode_step kernel family (issue #3): the small kernels an eager framework launches for an
 * RMSNorm + LoRA MLP decode step (square, mean over the last dim, rsqrt(+eps), broadcast mul,
 * scale-and-add) and the fused weight-streaming kernels of the fused variant (norm statistics,
 * gate/up GEMV with LoRA and silu*mul, down GEMV with LoRA, residual and the next layer's norm
 * statistics). Host side (schemas, checks, accounting, CPU references): decode.c; device side:
 * decode.cu (small kernels) and decode_gemv.cu (fused kernels). Design: docs/decode_step.md. */
#ifndef GR_KERNELS_DECODE_H
#define GR_KERNELS_DECODE_H

#include "core/hd.h"
#include "core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- small kernels (any float dtype per operand; fp32 arithmetic) ---- */

/* elementwise: ip[0] = n, ip[1] = GR_EW_*, ip[2..4] = dtypes of inputs[0], inputs[1] (or 0),
 * outputs[0]; fp[0] = the attr (eps of rsqrt_eps, s of scale_add) */
enum { GR_EW_SQUARE = 0, GR_EW_RSQRT = 1, GR_EW_SCALE_ADD = 2 };
gr_status gr_launch_decode_elementwise(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
/* mean_lastdim: ip[0] = rows, ip[1] = cols, ip[2] = in dtype, ip[3] = out dtype */
gr_status gr_launch_mean_lastdim(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
/* mul_bcast: ip[0] = rows, ip[1] = cols, ip[2] = 1 per-row / 0 per-column, ip[3..5] = dtypes
 * of a, b, y */
gr_status gr_launch_mul_bcast(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);

/* ---- fused kernels ---- */

/* Launch geometry and sizes shared by the check (decode.c) and the launch (decode_gemv.cu).
 * Stored in op->ip: */
enum {
    GR_DEC_B = 0,     /* batch rows */
    GR_DEC_K = 1,     /* inner dim of the GEMV (d for gate_up, f for down) */
    GR_DEC_N = 2,     /* output rows (f for gate_up, d for down) */
    GR_DEC_RANK = 3,  /* LoRA rank r */
    GR_DEC_BT = 4,    /* batch tile (template parameter: 1, 2, 4 or 8) */
    GR_DEC_TW = 5,    /* warps per team (a team computes one task's rows together) */
    GR_DEC_TILES = 6, /* batch tiles = ceil(B / BT); blocks per tile = grid / tiles */
    GR_DEC_FLAGS = 7, /* GR_DEC_F_* */
    GR_DEC_MAXB = 8   /* the op's gemv_max_b attr: the largest B for the GEMV kernels */
};
enum {
    GR_DEC_F_NEXT = 1u << 0, /* down: accumulate the next layer's norm statistics */
    GR_DEC_F_ZERO = 1u << 1, /* zero the accumulators named as extra outputs */
    GR_DEC_F_BLAS = 1u << 2  /* B > the op's gemv_max_b: the main product through cuBLAS into
                                fp32 scratch, LoRA and epilogues in a small kernel
                                (decode_gemv.cu) */
};
/* The hard limit of the weight-streaming GEMV kernels (and of decode_step): batch tiles of at
 * most 8 rows, so a larger batch would re-read the weights once per tile, where a GEMM reads them
 * once. Where the GEMV hands over to cuBLAS is the op's attr gemv_max_b (1..GR_DEC_GEMV_MAX_B,
 * default GR_DEC_GEMV_MAX_B): plan data, set from decode_step.json's param of that name. */
#define GR_DEC_GEMV_MAX_B 8
#define GR_DEC_ATTR_GEMV_MAX_B "gemv_max_b"
/* Most blocks of 256 threads of the fused GEMV kernels per SM that their registers allow (their
 * launch bounds): at a batch tile of 8 they use up to 255 registers per thread (one block), below
 * at most 128 (two). The check may pick fewer when shared memory is short. */
#define GR_DEC_BLOCKS_PER_SM(bt) ((bt) >= 8 ? 1 : 2)
/* Block size of the cuBLAS-path epilogue kernels (one thread per output element of a row). */
#define GR_DEC_EPI_THREADS 128
/* op->fp[0] = LoRA scale (alpha / r), op->fp[1] = RMSNorm eps */

gr_status gr_launch_decode_norm_stats(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_decode_gate_up(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_decode_down(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
/* setup(): raise the kernels' dynamic shared memory limit before any capture; on the cuBLAS path
 * (GR_DEC_F_BLAS) also allocate the op's fp32 scratch, freed by teardown(). */
gr_status gr_setup_decode_gemv(const gr_op *op, const gr_launch_ctx *ctx, void **state,
                               gr_error *err);
void gr_teardown_decode_gemv(void *state);
/* The preferred shared-memory carveout (percent) setup() gives norm_stats, gate_up and down: one
 * value for the whole chain, so PDL's early start is never blocked by an SM changing its L1 /
 * shared split (decode_gemv.cu; docs/decode_step.md, runs 16-17). */
#define GR_DEC_CARVEOUT 100
/* The shared-memory carveout setup() gave the op's GEMV kernel (and, in *norm_stats, the
 * norm_stats kernel) for weights of gr_dtype `dtype`: GR_DEC_CARVEOUT; -1 on the cuBLAS path.
 * For the tests. */
int gr_decode_gemv_carveout(const gr_op *op, int dtype, int *norm_stats);

/* decode_step (one persistent kernel per step, B <= its gemv_max_b attr): inputs x, then per
 * layer GR_DEC_P_PER_LAYER weights in this order (the order decode_step.json declares them): */
enum {
    GR_DEC_P_WNORM = 0,
    GR_DEC_P_WGATE = 1,
    GR_DEC_P_WUP = 2,
    GR_DEC_P_WDOWN = 3,
    GR_DEC_P_AGATE = 4,
    GR_DEC_P_AUP = 5,
    GR_DEC_P_ADOWN = 6,
    GR_DEC_P_BGATE = 7,
    GR_DEC_P_BUP = 8,
    GR_DEC_P_BDOWN = 9,
    GR_DEC_P_PER_LAYER = 10
};
/* Layers one decode_step op serves: its per-layer argument tables are kernel parameters. */
#define GR_DEC_P_MAX_LAYERS 48
/* decode_step uses op->ip like the GEMV kernels (B, K = d, N = f, RANK, BT, TW = the gate_up
 * phase's team width, TILES, MAXB) and this slot (GR_DEC_FLAGS there) for the down phase's. */
#define GR_DEC_S_TW_DOWN 7
gr_status gr_launch_decode_step(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
/* setup(): the step's device scratch (grid barrier counter, per-layer statistics) and its
 * shared-memory limit; checks that the whole grid fits on the device at once. */
gr_status gr_setup_decode_step(const gr_op *op, const gr_launch_ctx *ctx, void **state,
                               gr_error *err);
void gr_teardown_decode_step(void *state);

/* Shared-memory layout of one block of the fused GEMV kernels (byte offsets, 16-byte
 * aligned), shared by the check (which picks the batch tile so that it fits) and the kernels.
 * gate_up: act = x*w_norm tile [BT][K] fp32 (two 16-byte planes per 8-element chunk for 2-byte
 *          types), lora = scale*tin [2][r][BT], misc = rstd [BT] + silu*u [8 teams][2][BT],
 *          acc = A_down.act partial [r][BT].
 * down:    act = act tile [BT][K] in the weight dtype, lora = scale*tdown [r][BT],
 *          misc = new x [8 teams][4][BT], acc = next layer's statistics [2r+1][BT].
 * red = per-warp partial sums [8 warps][4 rows][BT] in both. */
typedef struct gr_dec_layout {
    size_t act, lora, red, misc, acc, total;
} gr_dec_layout;

GR_HD_INLINE size_t gr_dec_align16(size_t b) {
    return (b + 15) & ~(size_t)15;
}

/* is_down: 0 gate_up, 1 down; esize: bytes per weight element */
GR_HD_INLINE gr_dec_layout gr_dec_smem_layout(int is_down, int bt, long long K, long long rank,
                                              int esize) {
    gr_dec_layout l;
    size_t o = 0;
    size_t bts = (size_t)bt;
    l.act = o;
    o += gr_dec_align16(bts * (size_t)K * (is_down ? (size_t)esize : 4u));
    l.lora = o;
    o += gr_dec_align16((is_down ? 1u : 2u) * (size_t)rank * bts * 4u);
    l.red = o;
    o += gr_dec_align16(8u * 4u * bts * 4u);
    l.misc = o;
    o += gr_dec_align16(is_down ? 8u * 4u * bts * 4u : bts * 4u + 8u * 2u * bts * 4u);
    l.acc = o;
    o += gr_dec_align16((is_down ? 2u * (size_t)rank + 1u : (size_t)rank) * bts * 4u);
    l.total = o;
    return l;
}

/* Scratch of the cuBLAS path (written by the GEMMs, read back by the epilogue kernel): gate_up
 * stores x * w_norm in the weight dtype [B, d] (the GEMM's A operand) and the two fp32 products
 * [B, f]; down one fp32 product [B, d]. K, N as in op->ip. Byte offsets of each part: */
typedef struct gr_dec_scratch {
    size_t xw, g, u, y, total;
} gr_dec_scratch;

GR_HD_INLINE gr_dec_scratch gr_dec_scratch_layout(int is_down, long long B, long long K,
                                                  long long N, int esize) {
    gr_dec_scratch s;
    size_t o = 0;
    s.xw = s.g = s.u = s.y = 0;
    if (is_down) {
        s.y = o;
        o += gr_dec_align16((size_t)B * (size_t)N * 4u);
    } else {
        s.xw = o;
        o += gr_dec_align16((size_t)B * (size_t)K * (size_t)esize);
        s.g = o;
        o += gr_dec_align16((size_t)B * (size_t)N * 4u);
        s.u = o;
        o += gr_dec_align16((size_t)B * (size_t)N * 4u);
    }
    s.total = o;
    return s;
}

extern const gr_kernel_def *const gr_decode_kernels[];

#ifdef __cplusplus
}
#endif
#endif
