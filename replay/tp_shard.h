/* Tensor parallelism without a GPU (issue #9): the plans of `graphrun tp` (the unsharded
 * decode_step step and one decode_tp plan per rank), the checks on the degree P, the sharding
 * arithmetic (which rows and columns of each weight a rank owns), the rank shards of the
 * unsharded initial data, and the CPU reference of the sharded step: every rank's ops in
 * lockstep, each all-reduce summing all ranks' buffers. The GPU side is replay/tp.c. */
#ifndef GR_TP_SHARD_H
#define GR_TP_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "core/plan.h"
#include "replay/load.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_TP_MAX_RANKS 64

/* How a rank's buffer is made from the unsharded step's buffer of the same name. */
typedef enum gr_tp_split {
    GR_TP_LOCAL = 0, /* the rank's own (scratch, xz): no unsharded counterpart */
    GR_TP_REPL,      /* the whole buffer on every rank (x, w_norm, A_gate, A_up, B_down) */
    GR_TP_ROWS,      /* rows [p f/P, (p+1) f/P) of an [f, k] matrix (W_gate, W_up, B_gate, B_up) */
    GR_TP_COLS       /* columns [p f/P, (p+1) f/P) of a [k, f] matrix (W_down, A_down) */
} gr_tp_split;

gr_tp_split gr_tp_split_of(const char *buffer_name);
const char *gr_tp_split_name(gr_tp_split s);

/* The decode step's dims, read off the unsharded plan's buffers. */
typedef struct gr_tp_shape {
    int64_t B, L, d, f, r;
    gr_dtype dtype;
} gr_tp_shape;

gr_status gr_tp_shape_of(const gr_plan *base, gr_tp_shape *out, gr_error *err);
/* 16 / element size: the fused kernels' vector width, which f/P must be a multiple of. */
int gr_tp_vec(const gr_tp_shape *s);
/* P against the shape: 1 <= P <= GR_TP_MAX_RANKS, P divides f, f/P a multiple of the vector
 * width. Every problem in one pass, each naming --tp and the fix (GR_ERR_USAGE, exit 2). */
gr_status gr_tp_check_degree(const gr_tp_shape *s, int P, gr_error *err);
/* P against the visible devices: GR_ERR_NODEV (exit 3), "--tp 4 needs 4 CUDA devices, found 1". */
gr_status gr_tp_check_devices(int P, int visible, gr_error *err);
/* Rows (ROWS) or columns (COLS) [lo, hi) of the f dim that rank p of P owns (P divides n). */
void gr_tp_owned(int64_t n, int P, int p, int64_t *lo, int64_t *hi);

/* Rank p's shard of a row-major [rows, cols] matrix of esize-byte elements (rows, cols are the
 * full matrix's), and the inverse (writes shard p into the full matrix). REPL copies it all. */
void gr_tp_shard_copy(gr_tp_split s, const void *full, int64_t rows, int64_t cols, size_t esize,
                      int P, int p, void *shard);
void gr_tp_unshard_copy(gr_tp_split s, const void *shard, int64_t rows, int64_t cols, size_t esize,
                        int P, int p, void *full);

/* ---- plans ---- */

typedef struct gr_tp_req {
    const char *workload;    /* decode_tp.json */
    const char *base;        /* decode_step.json; NULL: the file beside the workload */
    const char *const *sets; /* --set name=value, for both (not P or rank) */
    int nsets;
    const char *seed; /* --seed, NULL for the workloads' */
} gr_tp_req;

typedef struct gr_tp_plans {
    char base_path[1024];
    gr_loaded base_ld; /* decode_step, variant fused */
    gr_plan *base;     /* base_ld.plans[0] */
    gr_tp_shape shape;
    int P; /* 0 until gr_tp_load_ranks */
    gr_loaded rank_ld[GR_TP_MAX_RANKS];
    gr_plan *rank[GR_TP_MAX_RANKS]; /* rank_ld[p].plans[0] */
    int *base_buf[GR_TP_MAX_RANKS]; /* per rank buffer: the unsharded buffer it is cut from, -1 */
    gr_tp_split *split[GR_TP_MAX_RANKS];
    int ncollectives; /* allreduce_sum ops per step (the same on every rank) */
} gr_tp_plans;

/* The unsharded step: `base` (or decode_step.json beside `workload`), variant fused, with the
 * --set and --seed of the request. Errors name the file (exit 2). */
gr_status gr_tp_load_base(const gr_tp_req *req, const gr_target *t, gr_tp_plans *tp, gr_error *err);
/* After gr_tp_load_base: check P, resolve the P rank plans (P and rank set per rank) and check
 * that they fit the unsharded plan: the same ops on every rank, the collectives at the same
 * places, every sharded buffer the right slice of its unsharded buffer. Replaces the ranks of
 * an earlier call. */
gr_status gr_tp_load_ranks(const gr_tp_req *req, int P, const gr_target *t, gr_tp_plans *tp,
                           gr_error *err);
void gr_tp_free_ranks(gr_tp_plans *tp);
void gr_tp_plans_free(gr_tp_plans *tp);
/* Index of the buffer named `name` in the plan, or -1. */
int gr_tp_buffer(const gr_plan *p, const char *name);

/* ---- the ranks' initial data ---- */

typedef struct gr_tp_host {
    int P;
    void **data[GR_TP_MAX_RANKS];          /* per rank buffer: initial contents, or NULL (the
                                              buffer keeps its own init: scratch, xz) */
    unsigned char *owned[GR_TP_MAX_RANKS]; /* 1 where data was allocated here, not borrowed */
    int nbufs[GR_TP_MAX_RANKS];
    double bytes_copied; /* host bytes allocated for shards (COLS, x) */
} gr_tp_host;

/* Rank shards of the unsharded step's initial contents (`base_init`: host copies per base
 * buffer). Shards of read-only buffers that are contiguous (REPL, ROWS) point into base_init,
 * which must outlive the result; columns and buffers the step writes (x) are copied. */
gr_status gr_tp_host_shard(const gr_tp_plans *tp, void *const *base_init, gr_tp_host *out,
                           gr_error *err);
void gr_tp_host_free(gr_tp_host *h);
/* Give every sharded buffer of the rank plans its data: init "host" (device fills and the
 * reference copy it). */
void gr_tp_host_bind(gr_tp_plans *tp, const gr_tp_host *h);

/* ---- the sharded CPU reference ---- */

typedef struct gr_tp_ref {
    const gr_tp_plans *tp;
    void **hptr[GR_TP_MAX_RANKS]; /* per rank buffer, as gr_hoststate */
    unsigned char *owned[GR_TP_MAX_RANKS];
} gr_tp_ref;

/* Host state of every rank from its plan's inits (bound "host" data of read-only buffers is
 * used in place, not copied). */
gr_status gr_tp_ref_create(const gr_tp_plans *tp, gr_tp_ref **out, gr_error *err);
void gr_tp_ref_destroy(gr_tp_ref *r);
/* One step on every rank, op by op in lockstep: kernel ops run their CPU reference on each
 * rank's buffers; an allreduce_sum sums src over the ranks in rank order (double) and stores
 * the sum, rounded to the dtype, into every rank's dst. */
gr_status gr_tp_ref_step(gr_tp_ref *r, gr_error *err);

/* Reassembly of per-rank copies of the rank buffer `name` (rank_data[p] = rank p's contents)
 * into the unsharded layout `out`: GR_TP_COLS gathers column shards (act [B, f/P] -> [B, f]),
 * GR_TP_REPL takes rank 0's copy, and with `sum` the fp32 partials are added element-wise
 * (tdown: each rank's A_down[:, shard] act_shard; the sum is A_down act). */
gr_status gr_tp_gather(const gr_tp_plans *tp, const char *name, gr_tp_split how, int sum,
                       void *const *rank_data, void *out, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
