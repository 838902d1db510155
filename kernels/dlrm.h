/* DLRM kernel family (issue #4): embedding bags (one table, and table-batched over up to 32
 * tables in one launch), bias add, sigmoid, concat, lower-triangle gather, the fused dot
 * interaction (alone, or with the table-batched embedding gather fused in), and Linear + bias +
 * activation fused (own SIMT kernel for small batches, own register-tiled SGEMM for large ones
 * in fp32, cuBLASLt with a bias/ReLU epilogue, optionally TF32). Host side (schemas, checks,
 * accounting, CPU references, cuBLASLt setup and algorithm timing) in dlrm.c; device code in
 * dlrm.cu. fp32 storage. */
#ifndef GR_KERNELS_DLRM_H
#define GR_KERNELS_DLRM_H

#include <stddef.h>
#include <stdint.h>

#include "core/hd.h"
#include "core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_EMB_MAX_TABLES 32 /* inputs are tables + index buffers (2 x 32 = 64) */
/* concat's kernel parameter holds a pointer and two offsets per input: 64 inputs keep it at 1.5 KB
 * (an op may list up to GR_MAX_INPUTS = 512 buffers) */
#define GR_CONCAT_MAX_INPUTS 64

enum { GR_DLRM_ACT_NONE = 0, GR_DLRM_ACT_RELU = 1, GR_DLRM_ACT_SIGMOID = 2 };
enum {
    GR_LINEAR_SIMT = 0,
    GR_LINEAR_LT = 1,
    GR_LINEAR_TILED = 2,
    GR_LINEAR_TC = 3,
    GR_LINEAR_WG = 4,
    GR_LINEAR_RD = 5 /* rowdot: N <= GR_LIN_RD_MAXN */
};
enum { GR_MATH_FP32 = 0, GR_MATH_TF32 = 1, GR_MATH_TF32X3 = 2 };

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
enum { GR_INT_B, GR_INT_T, GR_INT_D, GR_INT_P, GR_INT_RB };
/* embedding_interaction: x [B, D], T tables, T index buffers -> R [B, D + P] */
enum {
    GR_EI_B,
    GR_EI_T,
    GR_EI_D,
    GR_EI_BAG,
    GR_EI_IDX64,
    GR_EI_VEC,
    GR_EI_P,
    GR_EI_PRE,
    GR_EI_RB
};
/* Both interaction kernels (dot_interaction, embedding_interaction): a block of GR_IX_THREADS
 * threads owns RB batch rows (GR_INT_RB / GR_EI_RB: 1, 2 or 4, the op's attr rows_per_block, or
 * with "auto" the most that still give GR_IX_BLOCKS_PER_SM / 2 blocks per SM), at most GR_IX_BLOCKS_PER_SM blocks per
 * SM, grid-stride beyond. A thread computes a 4 x 4 block of one row's dots (design in dlrm.cu). */
#define GR_IX_THREADS 128
#define GR_IX_MAX_RB 4
#define GR_IX_BLOCKS_PER_SM 8 /* 8 x 128 threads at <= 64 registers fill the register file */

/* The interaction's vectors in shared memory (both kernels above): a row's
 * F = T + 1 vectors (0: the bottom MLP's output, 1 + t: table t's embedding) in 4 nb slots,
 * nb = ceil(F / 4), vector v in slot (v % 4) nb + v / 4, so the 4 vectors of one 4 x 4 dot
 * block are nb slots apart; slots ldf floats apart: D rounded up to 4 and then to an odd number
 * of 16-byte units, so 8 consecutive slots start in 8 different bank groups. Slots past F and
 * floats past D are read as zeros. */
GR_HD_INLINE int64_t gr_ix_ldf(int64_t D) {
    const int64_t d4 = (D + 3) / 4 * 4;
    return (d4 / 4) % 2 ? d4 : d4 + 4;
}
GR_HD_INLINE int64_t gr_ix_nb(int64_t T) {
    return (T + 1 + 3) / 4;
}
GR_HD_INLINE int gr_ix_slot(int v, int nb) {
    return (v & 3) * nb + (v >> 2);
}
/* Shared memory of one interaction block, in floats: the vectors of its RB rows, then their
 * output rows [RB][D + P]. */
GR_HD_INLINE int64_t gr_ix_floats(int64_t rb, int64_t T, int64_t D) {
    const int64_t P = (T + 1) * T / 2;
    return rb * 4 * gr_ix_nb(T) * gr_ix_ldf(D) + rb * (D + P);
}
/* GR_LIN_BN: the simt kernel's tile width (8, 16, 32), or the tiled kernel's configuration
 * (GR_LIN_T64 ...); 0 for lt. GR_LIN_VEC: K % 4 == 0, so rows of x and W take 16-byte loads. */
enum { GR_LIN_M, GR_LIN_N, GR_LIN_K, GR_LIN_ACT, GR_LIN_IMPL, GR_LIN_BN, GR_LIN_VEC, GR_LIN_FLAGS };
enum {
    GR_LIN_F_PRE = 1,   /* W and bias are written by no op: loaded before the PDL wait */
    GR_LIN_F_TF32 = 2,  /* math tf32: cuBLASLt and the tc kernel use TF32 tensor cores (the SIMT
                           and tiled kernels are fp32) */
    GR_LIN_F_TF32X3 = 4 /* math tf32x3: the tc kernel's 3xTF32 (fp32-accurate) products */
};

/* The SIMT linear kernel's tile: 32 rows x GR_LIN_BN (8, 16 or 32) outputs per block of 256
 * threads; K is consumed GR_LIN_KC at a time (every load of a chunk in flight at once), each
 * chunk split over 256 / (8 * BN / 4) thread groups, the groups' partial tiles reduced in
 * shared memory at the end. */
#define GR_LIN_BM 32
#define GR_LIN_KC 128
#define GR_LIN_THREADS 256

/* impl rowdot (N <= GR_LIN_RD_MAXN): a warp per row, lanes across K; blocks of
 * GR_LIN_RD_THREADS, at most GR_LIN_RD_BLOCKS_PER_SM per SM, grid-stride beyond. */
#define GR_LIN_RD_MAXN 16
#define GR_LIN_RD_THREADS 256
#define GR_LIN_RD_BLOCKS_PER_SM 8

/* The tiled linear kernel (impl "tiled", large M, fp32; design and measurements in dlrm.cu):
 * a block of 256 threads owns a BM x BN output tile, each thread a TM x TN block of it; the
 * (BM / TM) (BN / TN) threads covering the tile are a group, and a block's KS = 256 / group
 * size groups split each K stage between them and add their partial tiles at the end. K is
 * staged KT at a time through a STAGES-deep cp.async pipeline in dynamic shared memory (x's
 * and W's rows k-contiguous, padded to KT + 4 floats). op->ip[GR_LIN_BN] holds the
 * configuration, one of these (BM, BN, TM, TN, KT, STAGES), chosen by the check: */
#define GR_LIN_TILED_THREADS 256
#define GR_LIN_TCFG_64 64, 64, 4, 4, 16, 3  /* GR_LIN_T64: K <= 64 or K % 4 != 0, 1 group */
#define GR_LIN_TCFG_64W 64, 64, 8, 4, 32, 3 /* GR_LIN_T64W: K > 64, K % 4 == 0, 2 groups */
#define GR_LIN_TCFG_32 32, 32, 4, 4, 32, 3  /* GR_LIN_T32: 4 groups */
#define GR_LIN_TCFG_16 16, 16, 4, 4, 64, 3  /* GR_LIN_T16: 16 groups */
enum { GR_LIN_T64, GR_LIN_T64W, GR_LIN_T32, GR_LIN_T16, GR_LIN_NTCFG };
enum { GR_LIN_TC_BM, GR_LIN_TC_BN, GR_LIN_TC_TM, GR_LIN_TC_TN, GR_LIN_TC_KT, GR_LIN_TC_STAGES };

/* Field f (GR_LIN_TC_*) of configuration c. */
static inline int gr_lin_tcfg(int c, int f) {
    static const int t[GR_LIN_NTCFG][6] = {
        {GR_LIN_TCFG_64}, {GR_LIN_TCFG_64W}, {GR_LIN_TCFG_32}, {GR_LIN_TCFG_16}};
    return c >= 0 && c < GR_LIN_NTCFG && f >= 0 && f < 6 ? t[c][f] : 0;
}

/* Dynamic shared memory of configuration c: the pipeline's stages, or the groups' partial
 * tiles when they need more (they reuse it): 26-54 KB. Above 48 KB the kernel is opted in by
 * setup(). */
static inline size_t gr_lin_tiled_smem(int c) {
    size_t bm = (size_t)gr_lin_tcfg(c, GR_LIN_TC_BM), bn = (size_t)gr_lin_tcfg(c, GR_LIN_TC_BN);
    size_t tm = (size_t)gr_lin_tcfg(c, GR_LIN_TC_TM), tn = (size_t)gr_lin_tcfg(c, GR_LIN_TC_TN);
    if (!bm || !bn || !tm || !tn) return 0;
    size_t ks = GR_LIN_TILED_THREADS / ((bm / tm) * (bn / tn));
    size_t pipe = (size_t)gr_lin_tcfg(c, GR_LIN_TC_STAGES) * (bm + bn) *
                  (size_t)(gr_lin_tcfg(c, GR_LIN_TC_KT) + 4);
    size_t red = ks > 1 ? ks * bm * bn : 0;
    return (pipe > red ? pipe : red) * sizeof(float);
}

/* The tensor-core linear kernel (impl "tc", math tf32 or tf32x3; design in dlrm.cu): a block of
 * (BM / WM) x (BN / WN) warps owns a BM x BN output tile, each warp a WM x WN piece of 16 x 8 MMA
 * tiles; K staged
 * 32 at a time through an S-stage cp.async pipeline (as the tiled kernel). op->ip[GR_LIN_BN]
 * holds the configuration, chosen by the check, or named by the op's attr config (one of the
 * GR_LIN_CNAMES): */
#define GR_LIN_MMA_KT 32
#define GR_LIN_MMA_LD 48 /* row pitch of a stage in floats: KT + 16, see dlrm.cu */
/*                        BM  BN  WM  WN  S */
#define GR_LIN_CCFG_64 64, 64, 32, 32, 3   /* GR_LIN_C64 */
#define GR_LIN_CCFG_6432 64, 32, 32, 16, 3 /* GR_LIN_C6432 */
#define GR_LIN_CCFG_32 32, 32, 16, 16, 3   /* GR_LIN_C32 */
enum { GR_LIN_C64, GR_LIN_C6432, GR_LIN_C32, GR_LIN_NCCFG };
#define GR_LIN_CNAMES {"c64", "c6432", "c32"}
enum { GR_LIN_CF_BM, GR_LIN_CF_BN, GR_LIN_CF_WM, GR_LIN_CF_WN, GR_LIN_CF_S };

/* Field f (GR_LIN_CF_*) of tensor-core configuration c; 0 for an unknown one. */
static inline int gr_lin_ccfg(int c, int f) {
    static const int t[GR_LIN_NCCFG][5] = {
        {GR_LIN_CCFG_64}, {GR_LIN_CCFG_6432}, {GR_LIN_CCFG_32}};
    return c >= 0 && c < GR_LIN_NCCFG && f >= 0 && f < 5 ? t[c][f] : 0;
}

/* Threads per block of tensor-core configuration c: 32 per warp tile; 0 for an unknown one. */
static inline unsigned gr_lin_tc_threads(int c) {
    int wm = gr_lin_ccfg(c, GR_LIN_CF_WM), wn = gr_lin_ccfg(c, GR_LIN_CF_WN);
    if (!wm || !wn) return 0;
    return (unsigned)(gr_lin_ccfg(c, GR_LIN_CF_BM) / wm * (gr_lin_ccfg(c, GR_LIN_CF_BN) / wn) * 32);
}

/* Dynamic shared memory of tensor-core configuration c: S stages of BM + BN rows of 48 floats
 * (36-96 KB; above 48 KB the kernel is opted in by setup()). */
static inline size_t gr_lin_tc_smem(int c) {
    size_t rows = (size_t)gr_lin_ccfg(c, GR_LIN_CF_BM) + (size_t)gr_lin_ccfg(c, GR_LIN_CF_BN);
    return (size_t)gr_lin_ccfg(c, GR_LIN_CF_S) * rows * GR_LIN_MMA_LD * sizeof(float);
}

/* The wgmma linear kernel (impl "wg", math tf32 or tf32x3; design in dlrm_wg_sm90a.cu): a
 * 64 x BN tile per block, whose first warpgroup (128 threads) runs the MMAs; K staged
 * GR_LIN_MMA_KT at a time through S raw stages (tc_copy, rows GR_LIN_WG_LD floats apart) that
 * the threads copy and split into TF32 big and small parts in the wgmma core-matrix layout (3
 * sets: the tensor cores read one while the next ones are written). Built for sm_90a only, so it
 * runs on compute capability 9.0 (H100, H200) and nowhere else; the check refuses it elsewhere.
 * op->ip[GR_LIN_BN] holds the configuration (a GR_LIN_WCFG_* list): BN 64 or 128, NWG warpgroups
 * per block, S raw stages, and the form: FORM 0, the shared-memory form (w64, w128), where every
 * thread copies and splits x and W; FORM 2, the bulk form (w64b; gr_lin_wgb_ok): x's fragments
 * loaded into registers and split there (register A), two MMA warpgroups on alternate stages, a
 * third splitting W, and a producer warp copying x and W as TMA tensor-map boxes into a ring of
 * slots handed over on mbarriers; FORM 3, its tall version (w64b2): 128 x 64 tiles, the two MMA
 * warpgroups on the two 64-row halves, every stage (one wave of blocks for dlrm_small's top.0,
 * 2048 x 512, where 64 x 64 tiles need two). */
#define GR_LIN_WG_BM 64
#define GR_LIN_WG_LD 36 /* KT + 4: room for a shifted row (K % 4 != 0) */
/*                       BN  NWG  S  FORM */
#define GR_LIN_WCFG_64 64, 2, 4, 0   /* GR_LIN_W64 */
#define GR_LIN_WCFG_128 128, 2, 3, 0 /* GR_LIN_W128: 3 x 2 operand sets leave room for 3 stages */
#define GR_LIN_WCFG_64B 64, 3, 6, 2  /* GR_LIN_W64B: register A, 2 MMA warpgroups, TMA copies */
#define GR_LIN_WCFG_64B2 64, 3, 6, 3 /* GR_LIN_W64B2: the same on 128 x 64 tiles */
enum { GR_LIN_W64, GR_LIN_W128, GR_LIN_W64B, GR_LIN_W64B2, GR_LIN_NWCFG };
#define GR_LIN_WNAMES {"w64", "w128", "w64b", "w64b2"}

enum { GR_LIN_WF_BN, GR_LIN_WF_NWG, GR_LIN_WF_S, GR_LIN_WF_FORM };

/* Field f (GR_LIN_WF_*) of wgmma configuration c; 0 for an unknown one. */
static inline int gr_lin_wcfg(int c, int f) {
    static const int t[GR_LIN_NWCFG][4] = {
        {GR_LIN_WCFG_64}, {GR_LIN_WCFG_128}, {GR_LIN_WCFG_64B}, {GR_LIN_WCFG_64B2}};
    return c >= 0 && c < GR_LIN_NWCFG && f >= 0 && f < 4 ? t[c][f] : 0;
}

/* 1 for the bulk forms (FORM 2 and 3): register A, and a producer warp copying every stage as
 * TMA tensor-map boxes into a ring of raw slots handed over on mbarriers (dlrm_wg_sm90a.cu). */
static inline int gr_lin_wg_bulk(int c) {
    return gr_lin_wcfg(c, GR_LIN_WF_FORM) >= 2;
}

/* Rows of x per block (the tile's BM) of wgmma configuration c: 128 for the tall bulk form
 * (w64b2), else GR_LIN_WG_BM = 64; 0 for an unknown one. */
static inline int gr_lin_wg_bm(int c) {
    return !gr_lin_wcfg(c, GR_LIN_WF_BN) ? 0 : gr_lin_wcfg(c, GR_LIN_WF_FORM) == 3 ? 128 : 64;
}

/* The bulk form's row fold f (1, 2 or 4) for rows of K floats. A tensor map needs row strides of
 * a multiple of 16 bytes, so f consecutive rows, f K floats together (a multiple of 4), are one
 * row of the map: [rows / f][f K]. A 64-row tile is then f boxes of 64 / f map rows, box b
 * holding the tile rows f a + b (gr_lin_wgb_slot_row), which start b K floats into the map row.
 * f = 1 where K % 4 == 0, 2 where K % 4 == 2, else 4. */
GR_HD_INLINE int gr_lin_wgb_fold(int64_t K) {
    return K % 4 == 0 ? 1 : K % 2 == 0 ? 2 : 4;
}

/* Where tile row r (0 .. 63) lands in a slot of the bulk form with fold f: box r % f, row r / f
 * of it. */
GR_HD_INLINE int gr_lin_wgb_slot_row(int r, int f) {
    return (r % f) * (GR_LIN_WG_BM / f) + r / f;
}

/* The tensor-map coordinates of box b (0 .. f - 1) of the 64-row tile at row0 (a multiple of 64)
 * and stage column k0, and where the stage's first column lands in the box's rows (*shift). The
 * TMA takes only 16-byte aligned box starts (an unaligned inner coordinate is an illegal
 * instruction, run 63), so with f > 1 box b starts at b K + k0 rounded down to 4 floats and is
 * GR_LIN_WG_LD = 36 floats wide, so the stage's 32 columns are shift = b K % 4 floats into each
 * row; with f = 1 boxes are 32 floats at k0 (shift 0). Past the map (k >= K in box f - 1, rows
 * past rows / f) the TMA fills zeros; in boxes b < f - 1 the columns k >= K are row f a + b + 1's
 * first ones, which the kernel zeroes. */
GR_HD_INLINE void gr_lin_wgb_box(int b, int f, int64_t K, int k0, int row0, int *c0, int *c1,
                                 int *shift) {
    *shift = (int)((b * K) % 4);
    *c0 = (int)(b * K) - *shift + k0;
    *c1 = row0 / f;
}

/* 1 where the bulk form can run an M x N x K layer: both matrices fold into whole map rows
 * (M % f == 0 and N % f == 0), else the check takes gr_lin_wg_unbulk's configuration. */
static inline int gr_lin_wgb_ok(int64_t M, int64_t N, int64_t K) {
    const int f = gr_lin_wgb_fold(K);
    return K >= 1 && M % f == 0 && N % f == 0;
}

/* The configuration a bulk one runs as where gr_lin_wgb_ok fails: the shared-memory form of the
 * same width for w64b (w64), the wide shared-memory form for w64b2 (w128: as many blocks); any
 * other configuration is itself. There is no 128-wide bulk form: its
 * 416-thread block leaves a thread at most 152 registers, fewer than 2 x 64 accumulators and a
 * fragment set need (a first version with one MMA warpgroup and 288 threads already had ptxas
 * serialize the wgmma, C7511). */
static inline int gr_lin_wg_unbulk(int c) {
    return c == GR_LIN_W64B2 ? GR_LIN_W128 : gr_lin_wg_bulk(c) ? GR_LIN_W64 : c;
}

/* The wgmma kernels' operand layout (no swizzle) of a GR_LIN_MMA_KT-wide stage: 8 x 16-byte core
 * matrices (8 rows x 4 k, 128 contiguous bytes), K-adjacent ones GR_LIN_WG_LBO bytes apart (the
 * descriptor's leading byte offset), 8-row groups GR_LIN_WG_SBO apart (its stride byte offset).
 * gr_lin_wg_off: the float offset of the 16-byte piece q (k = 4q .. 4q + 3) of row r. */
#define GR_LIN_WG_LBO 128
#define GR_LIN_WG_SBO (GR_LIN_MMA_KT / 4 * 128)
GR_HD_INLINE int gr_lin_wg_off(int r, int q) {
    return (r >> 3) * (GR_LIN_WG_SBO / 4) + q * (GR_LIN_WG_LBO / 4) + (r & 7) * 4;
}

/* Register A (the bulk forms): the stage column (0 .. 31) that holds logical column c (0 .. 7) of k-step s
 * (0 .. 3). Lane (g, t)'s A fragment is columns t and t + 4 of each k-step, so its columns t of
 * the four k-steps are 8t .. 8t + 3 (one 16-byte load) and its columns t + 4 are 8t + 4 .. 8t + 7.
 */
GR_HD_INLINE int gr_lin_wgr_col(int s, int c) {
    return 8 * (c & 3) + 4 * (c >> 2) + s;
}

/* Register A (the bulk forms), W's splitter pair p (0 .. 2 BN - 1): tile row n and half h (logical columns
 * 4h .. 4h + 3 of every k-step); 8 consecutive pairs take rows n .. n + 7 at one h, the next 8 the
 * other half of the same rows. The pair copies and splits the pieces gr_lin_wgr_col(0, 4h + j) / 4,
 * j = 0 .. 3, of its row. */
GR_HD_INLINE void gr_lin_wgr_pair(int p, int *n, int *h) {
    *n = (p >> 4) * 8 + (p & 7);
    *h = (p >> 3) & 1;
}

/* BN of wgmma configuration c; 0 for an unknown one. */
static inline int gr_lin_wg_bn(int c) {
    return gr_lin_wcfg(c, GR_LIN_WF_BN);
}

/* Threads per block of wgmma configuration c: 128 per warpgroup, and the bulk form's producer
 * warp; 0 for an unknown one. */
static inline unsigned gr_lin_wg_threads(int c) {
    return 128u * (unsigned)gr_lin_wcfg(c, GR_LIN_WF_NWG) + (gr_lin_wg_bulk(c) ? 32u : 0u);
}

/* Raw stages of wgmma configuration c. */
static inline int gr_lin_wg_stages(int c) {
    return gr_lin_wcfg(c, GR_LIN_WF_S);
}

/* Dynamic shared memory of wgmma configuration c: the raw stages and three sets of split operands
 * (big and small, BM + BN rows of GR_LIN_MMA_KT floats each): 168 KB at BN = 64, 225 KB at 128;
 * the bulk forms' ring, W's operand sets and mbarriers below. */
static inline size_t gr_lin_wg_smem(int c) {
    size_t bn = (size_t)gr_lin_wg_bn(c), rows = (size_t)gr_lin_wg_bm(c) + bn;
    size_t s = (size_t)gr_lin_wg_stages(c);
    if (gr_lin_wg_bulk(c)) /* box rows of up to GR_LIN_WG_LD floats (gr_lin_wgb_box); MMA
                              warpgroup 1's sums (not in the tall form, where each warpgroup
                              stores its own rows); mbarriers full, rawfree, opfull, opfree;
                              1024 bytes to align the ring */
        return (s * rows * GR_LIN_WG_LD + (3 * 2 * bn) * GR_LIN_MMA_KT +
                (gr_lin_wg_bm(c) == 128 ? 0 : 128 * bn / 2)) *
                   sizeof(float) +
               (2 * s + 2 * 3) * 8 + 1024;
    return (s * rows * GR_LIN_WG_LD + 3 * 2 * rows * GR_LIN_MMA_KT) * sizeof(float);
}

/* Launches (dlrm.cu). Each checks its launch and returns a gr_error naming the op. */
gr_status gr_launch_embedding(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_bias_add(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_sigmoid(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_concat(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_tril_gather(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_dot_interaction(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_embedding_interaction(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_linear_simt(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_launch_linear_small(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
/* impl tiled, tc and wg (the kernels that stage x and W through dynamic shared memory): the launch,
 * and setup() opting the op's kernel in to shared memory beyond 48 KB (before capture). */
gr_status gr_launch_linear_staged(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_setup_linear_staged(const gr_op *op, gr_error *err);

/* (i, j), j < i, of pair p in the strictly lower triangle taken row by row:
 * p = i (i - 1) / 2 + j. Shared by the references and tests. */
void gr_tril_pair(int64_t p, int *i, int *j);

extern const gr_kernel_def *const gr_dlrm_kernels[];

#ifdef __cplusplus
}
#endif
#endif
