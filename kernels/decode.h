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
    GR_DEC_FLAGS = 7  /* GR_DEC_F_* */
};
enum {
    GR_DEC_F_NEXT = 1u << 0, /* down: accumulate the next layer's norm statistics */
    GR_DEC_F_ZERO = 1u << 1, /* zero the accumulators named as extra outputs */
    GR_DEC_F_BLAS = 1u << 2  /* B > GR_DEC_GEMV_MAX_B: the main product through cuBLAS into fp32
                                scratch, LoRA and epilogues in a small kernel (decode_gemv.cu) */
};
/* The weight-streaming GEMV kernels serve batches up to this size; larger batches use cuBLAS for
 * the main product (the GEMV would re-read the weights once per batch tile of 8 rows; a GEMM
 * reads them once). */
#define GR_DEC_GEMV_MAX_B 8
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
/* The shared-memory carveout setup() gave the op's GEMV kernel (and, in *norm_stats, the
 * norm_stats kernel) for weights of gr_dtype `dtype`: 100 unless GR_DEC_CARVEOUT says otherwise
 * (decode_gemv.cu); -1 on the cuBLAS path. For the tests. */
int gr_decode_gemv_carveout(const gr_op *op, int dtype, int *norm_stats);

/* decode_step (one persistent kernel per step, B <= GR_DEC_GEMV_MAX_B): inputs x, then per
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
 * phase's team width, TILES) and this slot (GR_DEC_FLAGS there) for the down phase's. */
#define GR_DEC_S_TW_DOWN 7
gr_status gr_launch_decode_step(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
/* setup(): the step's device scratch (grid barrier counter, per-layer statistics) and its
 * shared-memory limit; checks that the whole grid fits on the device at once. */
gr_status gr_setup_decode_step(const gr_op *op, const gr_launch_ctx *ctx, void **state,
                               gr_error *err);
void gr_teardown_decode_step(void *state);

/* decode_step_stream: the same step and op signature as decode_step, one persistent block per SM
 * whose weights arrive through a ring of shared-memory slots filled by bulk copies (TMA): a
 * producer warp streams every phase's weights in order and never waits at a grid barrier, so
 * HBM keeps streaming while the GR_DEC_S_CWARPS consumer warps wait at one; decode_gemv.cu has
 * the design. It uses op->ip like decode_step (BT = B rounded up to a power of two <= 8, one
 * batch tile, TILES = 1); setup and teardown are decode_step's. */
#define GR_DEC_S_CWARPS 8
#define GR_DEC_S_THREADS ((GR_DEC_S_CWARPS + 1) * 32)
#define GR_DEC_S_SLOT 16384 /* bytes per ring slot */
#define GR_DEC_S_MAX_SLOTS 32
/* Stages a producer keeps in flight (copies issued and not yet landed), at most the ring's slots:
 * what streams at the full rate without queueing every other memory access of the step behind a
 * deep backlog (decode_gemv.cu). GR_DEC_S_INFLIGHT=N overrides it at setup. */
#define GR_DEC_S_INFLIGHT 2
gr_status gr_launch_decode_step_stream(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);

/* decode_step_splitk (the fused_splitk variant): the same step and op signature as decode_step,
 * as L + 2 kernels: a prep kernel (x to fp32, the accumulators zeroed, the published LoRA-A slots
 * reset), one kernel per layer and a finish kernel (x back to the weight dtype). A layer kernel's
 * block owns a contiguous slice of the f outputs: it computes act for the slice (gate and up rows
 * with their LoRA terms, silu * u) and at once the slice's split-K share of the down projection
 * (W_down[:, slice] act[slice] + s B_down A_down[:, slice] act[slice]), which it adds into the
 * layer's fp32 output with vector atomics; [A_gate; A_up] (x * w_norm) is computed by a few warps
 * and published to the others through flag-free stores (decode_splitk.cu has the design). So a
 * layer is one kernel instead of two. One block per SM of GR_DEC_K_THREADS(bt) threads; op->ip as
 * decode_step's, with these slots: */
#define GR_DEC_K_LPR GR_DEC_TW      /* lanes per W_down row in the down pass */
#define GR_DEC_K_NSMAX GR_DEC_TILES /* outputs of the largest slice */
#define GR_DEC_K_THREADS(bt) ((bt) >= 8 ? 256 : 512)
gr_status gr_launch_decode_step_splitk(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
/* setup(): the accumulators (L + 1 x [B, d] fp32) and the published slots (L x [2r, B]), the
 * kernels' shared-memory limit and carveout, and the check that the grid fits at once. */
gr_status gr_setup_decode_step_splitk(const gr_op *op, const gr_launch_ctx *ctx, void **state,
                                      gr_error *err);
void gr_teardown_decode_step_splitk(void *state);

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

/* Shared-memory layout of a decode_step_splitk layer block (byte offsets, 16-byte aligned):
 * h = x * w_norm [BT][d] fp32 in the gate_up planes, ssq [warps][BT] partial sums of x^2, rstd
 * [BT], lora [warps][2r][BT] (each warp's copy of scale * tin), sact [BT][nsmax] the slice's act
 * (fp32 of the rounded value), ad [r][nsmax] the slice's A_down columns (fp32), ts [r][BT] =
 * scale * A_down[:, slice] act[slice]; xpart [BT][d], the block's share of the layer output before
 * the atomics, reuses h (dead once the slice's act is complete). */
typedef struct gr_dec_splitk_layout {
    size_t h, ssq, rstd, lora, sact, ad, ts, xpart, total;
} gr_dec_splitk_layout;

GR_HD_INLINE gr_dec_splitk_layout gr_dec_splitk_smem_layout(int bt, long long d, long long r,
                                                            long long nsmax, int warps) {
    gr_dec_splitk_layout l;
    size_t o = 0, bts = (size_t)bt;
    l.h = o;
    o += gr_dec_align16(bts * (size_t)d * 4u);
    l.ssq = o;
    o += gr_dec_align16((size_t)warps * bts * 4u);
    l.rstd = o;
    o += gr_dec_align16(bts * 4u);
    l.lora = o;
    o += gr_dec_align16((size_t)warps * 2u * (size_t)r * bts * 4u);
    l.sact = o;
    o += gr_dec_align16(bts * (size_t)nsmax * 4u);
    l.ad = o;
    o += gr_dec_align16((size_t)r * (size_t)nsmax * 4u);
    l.ts = o;
    o += gr_dec_align16((size_t)r * bts * 4u);
    l.xpart = l.h;
    l.total = o;
    return l;
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

/* Shared-memory layout of a decode_step_stream block (byte offsets) and the task chunking it
 * implies; one function for the check (decode.c) and the kernel.
 * full/empty: mbarriers of the ring slots; seq: the stage each slot was last filled with (a
 * consumer waits for its stage number there before it waits on the slot's mbarrier, so a parity
 * wait never runs two rounds ahead); act: x * w_norm [BT][d] fp32 (gate_up phases) or act [BT][f]
 * in the weight dtype (down phases), one region for both; lora: scale * tin [2][r][BT] or scale *
 * tdown [r][BT]; rstd [BT]; acc: the block's partial tdown [r][BT] or next-layer statistics
 * [2r+1][BT]; epi: the phase's per-task epilogue weights as fp32 (gate_up: the 4 LoRA-B rows and
 * A_down[:, n0..n0+1] of each task, 6r floats; down: per row the B_down row and the 2r
 * coefficients A[j][m] * w_next[m], 12r floats a task); xo: x[b][m] of the down rows [task][4][BT];
 * dpart: the down chunks' partial sums [task][chunk][4][BT]; xn: the new x of the block's down
 * rows [task][4][BT]; ring: nslots slots of GR_DEC_S_SLOT bytes.
 * Tasks are 4 rows: a gate_up task 2 outputs (gate, up, gate, up rows of d), a down task 4 outputs
 * (rows of f). A task whose 4 rows exceed a slot is split along K into nc chunks of kc elements
 * (a multiple of 16 bytes): a gate_up task's chunks go to one warp, a down task's chunks to
 * different warps (their partial sums meet in dpart). */
typedef struct gr_dec_stream_layout {
    size_t full, empty, seq, act, lora, rstd, acc, epi, xo, dpart, xn, ring, total;
    int nslots;
    int kc_gu, nc_gu, kc_dn, nc_dn; /* elements per chunk and chunks per task */
    int tg, td;                     /* tasks per block at most: gate_up, down */
} gr_dec_stream_layout;

GR_HD_INLINE void gr_dec_stream_chunks(long long K, int rows, int esize, int *kc, int *nc) {
    long long vec = 16 / esize;
    long long kmax = (long long)GR_DEC_S_SLOT / ((long long)rows * esize) / vec * vec;
    long long n = (K + kmax - 1) / kmax;
    long long k = (K + n - 1) / n;
    k = (k + vec - 1) / vec * vec;
    *kc = (int)k;
    *nc = (int)n;
}

/* per_block: the shared memory a block may have; nslots = 0 when not even 2 slots fit. */
GR_HD_INLINE gr_dec_stream_layout gr_dec_stream_smem_layout(int bt, long long d, long long f,
                                                            long long r, int esize, long long grid,
                                                            size_t per_block) {
    gr_dec_stream_layout l;
    size_t o = 0, bts = (size_t)bt, rr = (size_t)r;
    gr_dec_stream_chunks(d, 4, esize, &l.kc_gu, &l.nc_gu);
    gr_dec_stream_chunks(f, 4, esize, &l.kc_dn, &l.nc_dn);
    l.tg = (int)((f / 2 + grid - 1) / grid);
    l.td = (int)((d / 4 + grid - 1) / grid);
    size_t tg = (size_t)l.tg, td = (size_t)l.td;
    l.full = o;
    o += (size_t)GR_DEC_S_MAX_SLOTS * 8u;
    l.empty = o;
    o += (size_t)GR_DEC_S_MAX_SLOTS * 8u;
    l.seq = o;
    o += (size_t)GR_DEC_S_MAX_SLOTS * 4u;
    l.act = o;
    size_t a_gu = bts * (size_t)d * 4u, a_dn = bts * (size_t)f * (size_t)esize;
    o += gr_dec_align16(a_gu > a_dn ? a_gu : a_dn);
    l.lora = o;
    o += gr_dec_align16(2u * rr * bts * 4u);
    l.rstd = o;
    o += gr_dec_align16(bts * 4u);
    l.acc = o;
    o += gr_dec_align16((2u * rr + 1u) * bts * 4u);
    l.epi = o;
    size_t e_gu = tg * 6u * rr, e_dn = td * 12u * rr;
    o += gr_dec_align16((e_gu > e_dn ? e_gu : e_dn) * 4u);
    l.xo = o;
    o += gr_dec_align16(td * 4u * bts * 4u);
    l.dpart = o;
    o += gr_dec_align16(td * (size_t)l.nc_dn * 4u * bts * 4u);
    l.xn = o;
    o += gr_dec_align16(td * 4u * bts * 4u);
    l.ring = (o + 127u) & ~(size_t)127u;
    size_t room = per_block > l.ring ? per_block - l.ring : 0u;
    size_t n = room / (size_t)GR_DEC_S_SLOT;
    if (n > GR_DEC_S_MAX_SLOTS) n = GR_DEC_S_MAX_SLOTS;
    l.nslots = n >= 2 ? (int)n : 0;
    l.total = l.ring + (size_t)l.nslots * (size_t)GR_DEC_S_SLOT;
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
