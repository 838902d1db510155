/* Tensor-parallel suites without a GPU: the sharding arithmetic (which rows and columns each rank
 * owns, shard and unshard copies by hand), the checks on P (it must divide f, f/P must suit the
 * fused kernels, P GPUs must be visible) with their messages, the rank plans of
 * workloads/decode_tp.json against decode_step.json, the ranks' shards of the unsharded data,
 * the sharded CPU reference reassembled against the unsharded one (fp32 to ~1e-6, bf16 within
 * its rounding, several P and batch sizes, several steps), the allreduce_sum kernel's checks and
 * errors, the report's derived numbers and JSON, and `graphrun tp` end to end. */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/device.h"
#include "core/hoststate.h"
#include "core/workload.h"
#include "kernels/registry.h"
#include "kernels/tp.h"
#include "replay/tp.h"
#include "replay/tp_shard.h"
#include "tests.h"

#define TP_JSON "workloads/decode_tp.json"
#define BASE_JSON "workloads/decode_step.json"

/* ---------- sharding arithmetic ---------- */

static void test_owned_ranges(void) {
    int64_t ns[] = {8192, 96, 128};
    int Ps[] = {1, 2, 4, 8, 3, 16};
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
        for (size_t j = 0; j < sizeof(Ps) / sizeof(Ps[0]); j++) {
            int64_t n = ns[i];
            int P = Ps[j];
            if (n % P) continue;
            int64_t next = 0;
            for (int p = 0; p < P; p++) {
                int64_t lo, hi;
                gr_tp_owned(n, P, p, &lo, &hi);
                CU_ASSERT_EQUAL(lo, next); /* contiguous, in rank order, no overlap */
                CU_ASSERT_EQUAL(hi - lo, n / P);
                next = hi;
            }
            CU_ASSERT_EQUAL(next, n); /* covers [0, n) */
        }
    int64_t lo, hi;
    gr_tp_owned(8192, 4, 3, &lo, &hi);
    CU_ASSERT_EQUAL(lo, 6144);
    CU_ASSERT_EQUAL(hi, 8192);
}

static void test_split_table(void) {
    CU_ASSERT_EQUAL(gr_tp_split_of("W_gate.0"), GR_TP_ROWS);
    CU_ASSERT_EQUAL(gr_tp_split_of("W_up.15"), GR_TP_ROWS);
    CU_ASSERT_EQUAL(gr_tp_split_of("B_gate.3"), GR_TP_ROWS);
    CU_ASSERT_EQUAL(gr_tp_split_of("B_up.3"), GR_TP_ROWS);
    CU_ASSERT_EQUAL(gr_tp_split_of("W_down.2"), GR_TP_COLS);
    CU_ASSERT_EQUAL(gr_tp_split_of("A_down.2"), GR_TP_COLS);
    CU_ASSERT_EQUAL(gr_tp_split_of("A_gate.2"), GR_TP_REPL);
    CU_ASSERT_EQUAL(gr_tp_split_of("A_up.2"), GR_TP_REPL);
    CU_ASSERT_EQUAL(gr_tp_split_of("B_down.2"), GR_TP_REPL);
    CU_ASSERT_EQUAL(gr_tp_split_of("w_norm.7"), GR_TP_REPL);
    CU_ASSERT_EQUAL(gr_tp_split_of("x"), GR_TP_REPL);
    CU_ASSERT_EQUAL(gr_tp_split_of("xz"), GR_TP_LOCAL); /* a prefix is not a match */
    CU_ASSERT_EQUAL(gr_tp_split_of("act"), GR_TP_LOCAL);
    CU_ASSERT_EQUAL(gr_tp_split_of("W_gatex.0"), GR_TP_LOCAL);
    CU_ASSERT_STRING_EQUAL(gr_tp_split_name(GR_TP_COLS), "columns");
}

/* A 4 x 6 matrix of int32 r * 10 + c, sharded by hand. */
static void test_shard_copy_by_hand(void) {
    int32_t full[24], shard[24], back[24];
    for (int r = 0; r < 4; r++)
        for (int c = 0; c < 6; c++)
            full[r * 6 + c] = r * 10 + c;
    /* rows, P = 2, rank 1: rows 2 and 3 */
    gr_tp_shard_copy(GR_TP_ROWS, full, 4, 6, 4, 2, 1, shard);
    for (int i = 0; i < 12; i++)
        CU_ASSERT_EQUAL(shard[i], (2 + i / 6) * 10 + i % 6);
    /* columns, P = 3, rank 2: columns 4 and 5 of every row */
    gr_tp_shard_copy(GR_TP_COLS, full, 4, 6, 4, 3, 2, shard);
    int32_t want[8] = {4, 5, 14, 15, 24, 25, 34, 35};
    for (int i = 0; i < 8; i++)
        CU_ASSERT_EQUAL(shard[i], want[i]);
    /* replicated: all of it */
    gr_tp_shard_copy(GR_TP_REPL, full, 4, 6, 4, 3, 2, shard);
    CU_ASSERT_EQUAL(memcmp(shard, full, sizeof(full)), 0);
    /* every split and P: unsharding all the shards gives the matrix back */
    gr_tp_split splits[] = {GR_TP_ROWS, GR_TP_COLS};
    for (int s = 0; s < 2; s++)
        for (int P = 1; P <= 2; P++) {
            memset(back, 0xAB, sizeof(back));
            for (int p = 0; p < P; p++) {
                gr_tp_shard_copy(splits[s], full, 4, 6, 4, P, p, shard);
                gr_tp_unshard_copy(splits[s], shard, 4, 6, 4, P, p, back);
            }
            CU_ASSERT_EQUAL(memcmp(back, full, sizeof(full)), 0);
        }
    memset(back, 0, sizeof(back));
    for (int p = 0; p < 3; p++) {
        gr_tp_shard_copy(GR_TP_COLS, full, 4, 6, 4, 3, p, shard);
        gr_tp_unshard_copy(GR_TP_COLS, shard, 4, 6, 4, 3, p, back);
    }
    CU_ASSERT_EQUAL(memcmp(back, full, sizeof(full)), 0);
}

/* ---------- checks on P ---------- */

static gr_tp_shape shape_of(int64_t f, gr_dtype t) {
    gr_tp_shape s;
    memset(&s, 0, sizeof(s));
    s.B = 1, s.L = 16, s.d = 2048, s.f = f, s.r = 16, s.dtype = t;
    return s;
}

static void test_degree_checks(void) {
    gr_tp_shape s = shape_of(8192, GR_BF16);
    gr_error e;
    int ok[] = {1, 2, 4, 8, 16, 32, 64};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        gr_error_clear(&e);
        CU_ASSERT_EQUAL(gr_tp_check_degree(&s, ok[i], &e), GR_OK);
    }
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tp_check_degree(&s, 3, &e), GR_ERR_USAGE);
    CU_ASSERT_EQUAL(gr_exit_code(e.code), 2);
    GR_ASSERT_CONTAINS(e.msg, "--tp 3: P = 3 does not divide f = 8192");
    GR_ASSERT_CONTAINS(e.msg, "Use P in {1, 2, 4, 8, 16, 32, 64}");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tp_check_degree(&s, 0, &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg, "--tp 0: the tensor-parallel degree P must be in [1, 64]");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tp_check_degree(&s, 65, &e), GR_ERR_USAGE);
    /* f/P must be a multiple of the 16-byte vector: 8 bf16 elements, 4 fp32 */
    gr_tp_shape b96 = shape_of(96, GR_BF16), f96 = shape_of(96, GR_FP32);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tp_check_degree(&b96, 4, &e), GR_OK); /* 24 */
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tp_check_degree(&b96, 8, &e), GR_ERR_USAGE); /* 12 */
    GR_ASSERT_CONTAINS(e.msg, "f/P = 96/8 = 12 is not a multiple of 8");
    GR_ASSERT_CONTAINS(e.msg, "8 bf16 elements");
    GR_ASSERT_CONTAINS(e.msg, "Use P in {1, 2, 3, 4, 6, 12}");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tp_check_degree(&f96, 8, &e), GR_OK); /* 12 is a multiple of 4 */
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tp_check_degree(&f96, 16, &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg, "f/P = 96/16 = 6 is not a multiple of 4");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tp_check_degree(&f96, 5, &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg, "(or --set f=... a multiple of 20)");
}

static void test_device_checks(void) {
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tp_check_devices(2, 2, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_tp_check_devices(1, 8, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_tp_check_devices(4, 1, &e), GR_ERR_NODEV);
    CU_ASSERT_EQUAL(gr_exit_code(e.code), 3);
    GR_ASSERT_CONTAINS(e.msg, "--tp 4: needs 4 CUDA devices (one per rank), found 1");
    GR_ASSERT_CONTAINS(e.msg, "Use --tp 1 or fewer");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tp_check_devices(8, 2, &e), GR_ERR_NODEV);
    GR_ASSERT_CONTAINS(e.msg, "needs 8 CUDA devices (one per rank), found 2. Use --tp 2 or fewer");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tp_check_devices(1, 0, &e), GR_ERR_NODEV);
    GR_ASSERT_CONTAINS(e.msg, "--tp 1: needs 1 CUDA device (one per rank), found 0");
    GR_ASSERT_CONTAINS(e.msg, "NVIDIA GPUs and their driver");
}

/* ---------- plans ---------- */

static gr_tp_req small_req(const char **sets, int nsets) {
    gr_tp_req r = {gr_test_src(TP_JSON), gr_test_src(BASE_JSON), sets, nsets, NULL};
    return r;
}

static gr_tp_plans *load_tp(const char **sets, int nsets, int P) {
    gr_tp_req req = small_req(sets, nsets);
    gr_error e;
    gr_error_clear(&e);
    gr_target t = gr_target_default();
    gr_tp_plans *tp = calloc(1, sizeof(*tp));
    if (gr_tp_load_base(&req, &t, tp, &e) != GR_OK ||
        gr_tp_load_ranks(&req, P, &t, tp, &e) != GR_OK) {
        fprintf(stderr, "\n    %s", e.msg);
        gr_tp_plans_free(tp);
        free(tp);
        return NULL;
    }
    return tp;
}

static void free_tp(gr_tp_plans *tp) {
    gr_tp_plans_free(tp);
    free(tp);
}

static const gr_op *op_named(const gr_plan *p, const char *name) {
    for (int i = 0; i < p->nops; i++)
        if (!strcmp(p->ops[i].name, name)) return &p->ops[i];
    return NULL;
}

static void test_rank_plans(void) {
    const char *sets[] = {"L=3", "d=64", "f=128", "r=8", "B=3", "dtype=fp32"};
    int Ps[] = {1, 2, 4};
    for (int k = 0; k < 3; k++) {
        int P = Ps[k];
        gr_tp_plans *tp = load_tp(sets, 6, P);
        CU_ASSERT_PTR_NOT_NULL_FATAL(tp);
        CU_ASSERT_EQUAL(tp->P, P);
        CU_ASSERT_EQUAL(tp->shape.L, 3);
        CU_ASSERT_EQUAL(tp->shape.f, 128);
        CU_ASSERT_EQUAL(tp->shape.d, 64);
        CU_ASSERT_EQUAL(tp->shape.B, 3);
        CU_ASSERT_EQUAL(tp->ncollectives, 3);
        CU_ASSERT_STRING_EQUAL(tp->base->variant, "fused");
        for (int p = 0; p < P; p++) {
            const gr_plan *rp = tp->rank[p];
            /* per layer: norm_stats, gate_up, down, allreduce */
            CU_ASSERT_EQUAL(rp->nops, 4 * 3);
            CU_ASSERT_EQUAL(rp->kernels, 4 * 3);
            const gr_op *down = op_named(rp, "down.1"), *ar = op_named(rp, "allreduce.1");
            CU_ASSERT_PTR_NOT_NULL_FATAL(down);
            CU_ASSERT_PTR_NOT_NULL_FATAL(ar);
            /* the residual is added on rank 0 only */
            CU_ASSERT_STRING_EQUAL(rp->bufs[down->inputs[0]].name, p == 0 ? "x" : "xz");
            CU_ASSERT_EQUAL(rp->bufs[gr_tp_buffer(rp, "xz")].used, p != 0);
            CU_ASSERT_TRUE(gr_tp_is_collective(ar));
            CU_ASSERT_FALSE(gr_tp_is_collective(down));
            CU_ASSERT_STRING_EQUAL(rp->bufs[ar->inputs[0]].name, "part");
            CU_ASSERT_STRING_EQUAL(rp->bufs[ar->outputs[0]].name, "x");
            CU_ASSERT_EQUAL(ar->ip[GR_TP_AR_RANKS], P);
            CU_ASSERT_EQUAL(ar->ip[GR_TP_AR_COUNT], 3 * 64);
            /* shard shapes, and the unsharded buffer each is cut from */
            int wg = gr_tp_buffer(rp, "W_gate.2"), wd = gr_tp_buffer(rp, "W_down.2"),
                ad = gr_tp_buffer(rp, "A_down.0"), bd = gr_tp_buffer(rp, "B_down.0");
            CU_ASSERT_EQUAL(rp->bufs[wg].shape[0], 128 / P);
            CU_ASSERT_EQUAL(rp->bufs[wg].shape[1], 64);
            CU_ASSERT_EQUAL(rp->bufs[wd].shape[0], 64);
            CU_ASSERT_EQUAL(rp->bufs[wd].shape[1], 128 / P);
            CU_ASSERT_EQUAL(rp->bufs[ad].shape[1], 128 / P);
            CU_ASSERT_EQUAL(rp->bufs[bd].shape[0], 64);
            CU_ASSERT_EQUAL(tp->split[p][wg], GR_TP_ROWS);
            CU_ASSERT_EQUAL(tp->split[p][wd], GR_TP_COLS);
            CU_ASSERT_EQUAL(tp->split[p][bd], GR_TP_REPL);
            CU_ASSERT_STRING_EQUAL(tp->base->bufs[tp->base_buf[p][wd]].name, "W_down.2");
            CU_ASSERT_EQUAL(tp->base_buf[p][gr_tp_buffer(rp, "act")], -1);
            CU_ASSERT_EQUAL(tp->base_buf[p][gr_tp_buffer(rp, "part")], -1);
            /* weights per rank: 3 (f/P x d) per layer plus the replicated LoRA and norm */
            double w = 0;
            for (int b = 0; b < rp->nbufs; b++)
                if (tp->split[p][b] == GR_TP_ROWS || tp->split[p][b] == GR_TP_COLS)
                    w += (double)rp->bufs[b].bytes;
            /* W_gate, W_up [f/P, d], W_down [d, f/P], A_down [r, f/P], B_gate, B_up [f/P, r] */
            CU_ASSERT_DOUBLE_EQUAL(w, 3.0 * 4.0 * (128.0 / P) * (3 * 64 + 3 * 8), 0.5);
        }
        free_tp(tp);
    }
}

/* A copy of decode_tp.json with `from` replaced by `to` (every occurrence with all = 1, else the
 * first), in a temporary file. */
static const char *edited_tp_n(const char *from, const char *to, int all) {
    FILE *f = fopen(gr_test_src(TP_JSON), "rb");
    if (!f) return NULL;
    static char text[1 << 16], out[1 << 16];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    size_t o = 0;
    const char *s = text, *at;
    int done = 0;
    while ((at = strstr(s, from)) && (all || !done) && o < sizeof(out)) {
        o += (size_t)snprintf(out + o, sizeof(out) - o, "%.*s%s", (int)(at - s), s, to);
        s = at + strlen(from);
        done++;
    }
    if (!done || o >= sizeof(out)) return NULL;
    snprintf(out + o, sizeof(out) - o, "%s", s);
    return gr_test_tmpfile(".json", out, strlen(out));
}

static const char *edited_tp(const char *from, const char *to) {
    return edited_tp_n(from, to, 0);
}

static const char *load_error(const char *tp_path, int P) {
    static char msg[GR_ERROR_MSG_MAX];
    const char *sets[] = {"L=2", "d=64", "f=128", "r=8"};
    gr_tp_req req = {tp_path, gr_test_src(BASE_JSON), sets, 4, NULL};
    gr_error e;
    gr_error_clear(&e);
    gr_target t = gr_target_default();
    gr_tp_plans *tp = calloc(1, sizeof(*tp));
    gr_status st = gr_tp_load_base(&req, &t, tp, &e);
    if (st == GR_OK) st = gr_tp_load_ranks(&req, P, &t, tp, &e);
    snprintf(msg, sizeof(msg), "%s", st == GR_OK ? "(no error)" : e.msg);
    free_tp(tp);
    return msg;
}

static void test_plan_structure_errors(void) {
    /* a shard of the wrong shape names the buffer, both shapes and the unsharded file */
    const char *p =
        edited_tp("\"name\": \"W_down.{i}\", \"dtype\": \"$dtype\", \"shape\": [\"d\", \"f/P\"]",
                  "\"name\": \"W_down.{i}\", \"dtype\": \"$dtype\", \"shape\": [\"d\", \"f\"]");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    const char *m = load_error(p, 2);
    /* the down kernel rejects the shapes first (W_down [64, 128] against act [B, 64]) */
    GR_ASSERT_CONTAINS(m, "W_down.0");
    /* every shape unsharded: the kernels are content, the shard check is not, and says what
     * the shard must be */
    p = edited_tp_n("\"f/P\"", "\"f\"", 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_STRING_EQUAL(load_error(p, 1), "(no error)"); /* P = 1: f/P == f */
    m = load_error(p, 2);
    GR_ASSERT_CONTAINS(m, "rank 0's \"W_gate.0\" is bf16 [128, 64]; as the rows shard (P = 2) of "
                          "the unsharded bf16 [128, 64]");
    GR_ASSERT_CONTAINS(m, "it must be bf16 [64, 64]");
    GR_ASSERT_CONTAINS(m, "\"W_down.1\" is bf16 [64, 128]; as the columns shard");
    /* a rank that runs different ops */
    p = edited_tp("\"inputs\": [\"xz\", \"act\", \"W_down.{i}\", \"B_down.{i}\", \"tdown\"], "
                  "\"outputs\": [\"part\"], \"attrs\": {\"scale\": \"alpha/r\"}}",
                  "\"inputs\": [\"xz\", \"act\", \"W_down.{i}\", \"B_down.{i}\", \"tdown\"], "
                  "\"outputs\": [\"part\"], \"attrs\": {\"scale\": \"alpha/r\"}}, {\"name\": "
                  "\"extra.{i}\", \"kernel\": \"allreduce_sum\", \"inputs\": [\"part\"], "
                  "\"outputs\": [\"part\"], \"attrs\": {\"ranks\": \"P\"}}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    m = load_error(p, 2);
    GR_ASSERT_CONTAINS(m, "every rank must run the same ops");
    /* no all-reduce: not a tensor-parallel step */
    p = edited_tp("{\"name\": \"allreduce.{i}\", \"kernel\": \"allreduce_sum\", \"inputs\": "
                  "[\"part\"], \"outputs\": [\"x\"], \"attrs\": {\"ranks\": \"P\"}}",
                  "{\"name\": \"copy.{i}\", \"kernel\": \"scale_add\", \"inputs\": [\"part\", "
                  "\"part\"], \"outputs\": [\"x\"], \"attrs\": {\"s\": 0}}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    m = load_error(p, 1);
    GR_ASSERT_CONTAINS(m, "the rank plan has no allreduce_sum op");
    /* an all-reduce that spans the wrong number of ranks */
    p = edited_tp("\"attrs\": {\"ranks\": \"P\"}", "\"attrs\": {\"ranks\": 1}");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    m = load_error(p, 2);
    GR_ASSERT_CONTAINS(m, "spans ranks = 1 but P = 2");
    /* --set P or rank is refused; the degree is --tp */
    const char *bad[] = {"P=2"};
    gr_tp_req req = {gr_test_src(TP_JSON), NULL, bad, 1, NULL};
    gr_error e;
    gr_error_clear(&e);
    gr_target t = gr_target_default();
    gr_tp_plans *tp = calloc(1, sizeof(*tp));
    CU_ASSERT_EQUAL(gr_tp_load_base(&req, &t, tp, &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg, "--set: \"P=2\": the tensor-parallel degree is chosen with --tp");
    free_tp(tp);
    /* the base defaults to decode_step.json beside the workload; a missing one names itself */
    gr_tp_req req2 = {"/nonexistent/decode_tp.json", NULL, NULL, 0, NULL};
    gr_error_clear(&e);
    tp = calloc(1, sizeof(*tp));
    CU_ASSERT_EQUAL(gr_tp_load_base(&req2, &t, tp, &e), GR_ERR_IO);
    GR_ASSERT_CONTAINS(e.msg, "/nonexistent/decode_step.json");
    free_tp(tp);
    /* a degree that does not divide f */
    m = load_error(gr_test_src(TP_JSON), 3);
    GR_ASSERT_CONTAINS(m, "--tp 3: P = 3 does not divide f = 128");
}

/* ---------- shards and the sharded reference ---------- */

/* The unsharded step's initial data on the host (as graphrun tp downloads it from the GPU). */
static gr_hoststate *base_init(const gr_tp_plans *tp) {
    gr_error e;
    gr_error_clear(&e);
    gr_hoststate *hs = NULL;
    if (gr_hoststate_create(tp->base, &hs, &e) != GR_OK || gr_hoststate_fill(hs, &e) != GR_OK) {
        fprintf(stderr, "\n    %s", e.msg);
        gr_hoststate_destroy(hs);
        return NULL;
    }
    return hs;
}

static void test_host_shards(void) {
    const char *sets[] = {"L=2", "d=64", "f=128", "r=8", "B=2", "dtype=bf16"};
    for (int P = 1; P <= 4; P *= 2) {
        gr_tp_plans *tp = load_tp(sets, 6, P);
        CU_ASSERT_PTR_NOT_NULL_FATAL(tp);
        gr_hoststate *hs = base_init(tp);
        CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
        gr_tp_host h;
        gr_error e;
        gr_error_clear(&e);
        CU_ASSERT_EQUAL_FATAL(gr_tp_host_shard(tp, hs->hptr, &h, &e), GR_OK);
        int checked = 0;
        for (int p = 0; p < P; p++) {
            const gr_plan *rp = tp->rank[p];
            for (int b = 0; b < rp->nbufs; b++) {
                int bi = tp->base_buf[p][b];
                if (bi < 0) {
                    CU_ASSERT_PTR_NULL(h.data[p][b]);
                    continue;
                }
                const gr_buffer *fb = &tp->base->bufs[bi], *rb = &rp->bufs[b];
                const uint16_t *full = hs->hptr[bi], *sh = h.data[p][b];
                CU_ASSERT_PTR_NOT_NULL_FATAL(sh);
                int64_t cols = fb->shape[fb->ndim - 1], rows = fb->numel / cols;
                int64_t rcols = rb->shape[rb->ndim - 1], rrows = rb->numel / rcols;
                /* element (i, j) of the shard is element (i + row0, j + col0) of the full one */
                int64_t row0 = tp->split[p][b] == GR_TP_ROWS ? p * rows / P : 0;
                int64_t col0 = tp->split[p][b] == GR_TP_COLS ? p * cols / P : 0;
                int bad = 0;
                for (int64_t i = 0; i < rrows; i++)
                    for (int64_t j = 0; j < rcols; j++)
                        bad += sh[i * rcols + j] != full[(i + row0) * cols + j + col0];
                CU_ASSERT_EQUAL(bad, 0);
                /* contiguous read-only shards are borrowed, columns and x are copies */
                int borrowed = fb->first_write < 0 && tp->split[p][b] != GR_TP_COLS;
                CU_ASSERT_EQUAL(h.owned[p][b], !borrowed);
                if (borrowed) CU_ASSERT_PTR_EQUAL(sh, full + row0 * cols);
                checked++;
            }
        }
        CU_ASSERT_EQUAL(checked, P * (2 * 10 + 1)); /* 10 weights per layer and x, per rank */
        gr_tp_host_bind(tp, &h);
        int wd = gr_tp_buffer(tp->rank[P - 1], "W_down.1");
        CU_ASSERT_EQUAL(tp->rank[P - 1]->bufs[wd].init.kind, GR_INIT_HOST);
        CU_ASSERT_PTR_EQUAL(tp->rank[P - 1]->bufs[wd].host_data, h.data[P - 1][wd]);
        gr_tp_host_free(&h);
        gr_hoststate_destroy(hs);
        free_tp(tp);
    }
}

static double rel_l2_t(const void *a, const void *ref, gr_dtype t, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = gr_load(a, t, (size_t)i), y = gr_load(ref, t, (size_t)i);
        num += (x - y) * (x - y);
        den += y * y;
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Sharded reference after `steps` steps, reassembled, against the unsharded fused reference:
 * x, the last layer's act (gathered over ranks) and A_down act (summed). Returns the worst
 * relative L2 error, or -1 on a failure. */
static double sharded_vs_unsharded(const char *dtype, int B, int L, int P, int steps,
                                   double *moved) {
    char sb[16], sl[16], st[24];
    snprintf(sb, sizeof(sb), "B=%d", B);
    snprintf(sl, sizeof(sl), "L=%d", L);
    snprintf(st, sizeof(st), "dtype=%s", dtype);
    const char *sets[] = {sb, sl, st, "d=64", "f=128", "r=8"};
    gr_tp_plans *tp = load_tp(sets, 6, P);
    if (!tp) return -1;
    gr_hoststate *hs = base_init(tp);
    gr_error e;
    gr_error_clear(&e);
    gr_tp_host h;
    memset(&h, 0, sizeof(h));
    gr_tp_ref *ref = NULL;
    double worst = -1;
    int xb = gr_tp_buffer(tp->base, "x"), ab = gr_tp_buffer(tp->base, "act");
    char tdn[32];
    snprintf(tdn, sizeof(tdn), "tdown.%d", L - 1);
    int tb = gr_tp_buffer(tp->base, tdn);
    const gr_buffer *bx = &tp->base->bufs[xb], *ba = &tp->base->bufs[ab], *bt = &tp->base->bufs[tb];
    void *x0 = malloc(bx->bytes), *act = malloc(ba->bytes), *td = malloc(bt->bytes);
    if (!hs || gr_tp_host_shard(tp, hs->hptr, &h, &e) != GR_OK) goto out;
    memcpy(x0, hs->hptr[xb], bx->bytes);
    gr_tp_host_bind(tp, &h);
    if (gr_tp_ref_create(tp, &ref, &e) != GR_OK) goto out;
    for (int k = 0; k < steps; k++)
        if (gr_tp_ref_step(ref, &e) != GR_OK || gr_reference_step(tp->base, hs, &e) != GR_OK)
            goto out;
    void *acts[GR_TP_MAX_RANKS], *tds[GR_TP_MAX_RANKS];
    for (int p = 0; p < P; p++) {
        acts[p] = ref->hptr[p][gr_tp_buffer(tp->rank[p], "act")];
        tds[p] = ref->hptr[p][gr_tp_buffer(tp->rank[p], "tdown")];
    }
    if (gr_tp_gather(tp, "act", GR_TP_COLS, 0, acts, act, &e) != GR_OK ||
        gr_tp_gather(tp, "tdown", GR_TP_REPL, 1, tds, td, &e) != GR_OK)
        goto out;
    double ex =
        rel_l2_t(ref->hptr[0][gr_tp_buffer(tp->rank[0], "x")], hs->hptr[xb], bx->dtype, bx->numel);
    double ea = rel_l2_t(act, hs->hptr[ab], ba->dtype, ba->numel);
    double et = rel_l2_t(td, hs->hptr[tb], GR_FP32, bt->numel);
    /* every rank holds the same x after the last all-reduce, bit for bit */
    for (int p = 1; p < P; p++)
        if (memcmp(ref->hptr[p][gr_tp_buffer(tp->rank[p], "x")],
                   ref->hptr[0][gr_tp_buffer(tp->rank[0], "x")], bx->bytes) != 0)
            ex = 1;
    worst = ex > ea ? ex : ea;
    worst = et > worst ? et : worst;
    *moved = rel_l2_t(hs->hptr[xb], x0, bx->dtype, bx->numel);
    if (worst > 1e-5 && !strcmp(dtype, "fp32"))
        fprintf(stderr, "\n    %s B=%d L=%d P=%d steps=%d: x %.2e act %.2e tdown %.2e", dtype, B, L,
                P, steps, ex, ea, et);
out:
    if (gr_error_failed(&e)) fprintf(stderr, "\n    %s", e.msg);
    gr_tp_ref_destroy(ref);
    gr_tp_host_free(&h);
    gr_hoststate_destroy(hs);
    free(x0), free(act), free(td);
    free_tp(tp);
    return worst;
}

static void test_sharded_reference_matches_unsharded(void) {
    struct {
        const char *dtype;
        int B, L, P, steps;
        double tol;
    } cases[] = {{"fp32", 1, 3, 1, 1, 1e-6},  {"fp32", 1, 3, 2, 1, 2e-6},
                 {"fp32", 3, 3, 4, 1, 2e-6},  {"fp32", 2, 2, 8, 1, 2e-6},
                 {"fp32", 13, 2, 2, 1, 2e-6}, {"fp32", 2, 2, 4, 3, 2e-6},
                 {"bf16", 2, 2, 2, 1, 2e-2},  {"fp16", 3, 2, 4, 1, 2e-2}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        double moved = 0;
        double err = sharded_vs_unsharded(cases[c].dtype, cases[c].B, cases[c].L, cases[c].P,
                                          cases[c].steps, &moved);
        if (err < 0 || err > cases[c].tol)
            fprintf(stderr, "\n    case %zu (%s B=%d L=%d P=%d): rel L2 %.3e > %.1e", c,
                    cases[c].dtype, cases[c].B, cases[c].L, cases[c].P, err, cases[c].tol);
        CU_ASSERT_TRUE(err >= 0 && err <= cases[c].tol);
        CU_ASSERT_TRUE(moved > 0.3); /* the step changed x: not a comparison of x with itself */
    }
}

/* The all-reduce of the reference: each rank's dst is the sum over ranks of src. */
static void test_reference_allreduce_sums_ranks(void) {
    const char *sets[] = {"L=1", "d=64", "f=128", "r=8", "B=1", "dtype=fp32"};
    gr_tp_plans *tp = load_tp(sets, 6, 4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tp);
    gr_hoststate *hs = base_init(tp);
    CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
    gr_tp_host h;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_tp_host_shard(tp, hs->hptr, &h, &e), GR_OK);
    gr_tp_host_bind(tp, &h);
    gr_tp_ref *ref = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_tp_ref_create(tp, &ref, &e), GR_OK);
    /* run each rank's ops up to (not including) the all-reduce, then check the sum by hand */
    const gr_plan *r0 = tp->rank[0];
    int ar = -1;
    for (int i = 0; i < r0->nops && ar < 0; i++) {
        if (gr_tp_is_collective(&r0->ops[i])) {
            ar = i;
            break;
        }
        for (int p = 0; p < 4; p++)
            CU_ASSERT_EQUAL(tp->rank[p]->ops[i].kernel->reference(&tp->rank[p]->ops[i], tp->rank[p],
                                                                  ref->hptr[p], &e),
                            GR_OK);
    }
    CU_ASSERT_EQUAL_FATAL(ar, 3);
    float want[64];
    int part = gr_tp_buffer(r0, "part"), x = gr_tp_buffer(r0, "x");
    for (int i = 0; i < 64; i++) {
        double s = 0;
        for (int p = 0; p < 4; p++)
            s += ((const float *)ref->hptr[p][part])[i];
        want[i] = (float)s;
    }
    /* a fresh lockstep step (one layer: it ends with that all-reduce) gives every rank the sum */
    gr_tp_ref_destroy(ref);
    ref = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_tp_ref_create(tp, &ref, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_tp_ref_step(ref, &e), GR_OK);
    for (int p = 0; p < 4; p++)
        for (int i = 0; i < 64; i++)
            CU_ASSERT_EQUAL(((const float *)ref->hptr[p][x])[i], want[i]);
    /* rank 0's partial carries x; the others' do not: the sum is x + the MLP output */
    gr_tp_ref_destroy(ref);
    gr_tp_host_free(&h);
    gr_hoststate_destroy(hs);
    free_tp(tp);
}

/* The checks graphrun tp makes of the ranks' outputs, driven with simulated outputs: the sharded
 * reference's own (a perfect GPU) pass, and a wrong shard or a bad replay fails by name. */
static void test_checks_with_simulated_outputs(void) {
    const char *sets[] = {"L=2", "d=64", "f=128", "r=8", "B=2", "dtype=fp32"};
    for (int P = 2; P <= 4; P += 2) {
        gr_tp_plans *tp = load_tp(sets, 6, P);
        CU_ASSERT_PTR_NOT_NULL_FATAL(tp);
        gr_hoststate *hs = base_init(tp);
        CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
        gr_error e;
        gr_error_clear(&e);
        gr_tp_host h;
        CU_ASSERT_EQUAL_FATAL(gr_tp_host_shard(tp, hs->hptr, &h, &e), GR_OK);
        gr_tp_host_bind(tp, &h);
        CU_ASSERT_EQUAL_FATAL(gr_reference_step(tp->base, hs, &e), GR_OK); /* weights stay */
        gr_tp_refs refs;
        memset(&refs, 0, sizeof(refs));
        refs.ref_x = hs->hptr[gr_tp_buffer(tp->base, "x")];
        refs.ref_act = hs->hptr[gr_tp_buffer(tp->base, "act")];
        refs.ref_tdown = hs->hptr[gr_tp_buffer(tp->base, "tdown.1")];
        refs.single_x = refs.ref_x; /* as if the single-GPU step matched its reference */
        refs.rtol = 1e-5;
        gr_tp_result *x = calloc(1, sizeof(*x));
        CU_ASSERT_EQUAL_FATAL(gr_tp_sharded_reference(tp, 1, &refs, x, &e), GR_OK);
        CU_ASSERT_EQUAL(x->checks.n, 3);
        CU_ASSERT_TRUE(x->checks.v[0].passed && x->checks.v[1].passed && x->checks.v[2].passed);
        /* a perfect device: every rank's outputs are the sharded reference's */
        gr_tp_ref *dev = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_tp_ref_create(tp, &dev, &e), GR_OK);
        CU_ASSERT_EQUAL_FATAL(gr_tp_ref_step(dev, &e), GR_OK);
        gr_tp_outputs out;
        memset(&out, 0, sizeof(out));
        for (int p = 0; p < P; p++) {
            const gr_plan *rp = tp->rank[p];
            out.x_eager[p] = out.x_graph[p] = dev->hptr[p][gr_tp_buffer(rp, "x")];
            out.act[p] = dev->hptr[p][gr_tp_buffer(rp, "act")];
            out.tdown[p] = dev->hptr[p][gr_tp_buffer(rp, "tdown")];
        }
        CU_ASSERT_EQUAL(gr_tp_check_outputs(tp, &out, &refs, x, &e), GR_OK);
        /* the count gpu_tp expects: 3 + P graph-vs-eager + P-1 ranks + 1 GPU + 1 ref + 4 shard */
        CU_ASSERT_EQUAL(x->checks.n, 2 * P + 8);
        CU_ASSERT_TRUE(x->verified);
        for (int i = 0; i < x->checks.n; i++)
            CU_ASSERT_TRUE(x->checks.v[i].passed);
        /* two ranks' act shards swapped: the gathered act is wrong, and says so */
        gr_tp_result *y = calloc(1, sizeof(*y));
        gr_tp_outputs bad = out;
        bad.act[0] = out.act[1];
        bad.act[1] = out.act[0];
        CU_ASSERT_EQUAL(gr_tp_check_outputs(tp, &bad, &refs, y, &e), GR_OK);
        CU_ASSERT_FALSE(y->verified);
        int failed = 0;
        for (int i = 0; i < y->checks.n; i++)
            if (!y->checks.v[i].passed) {
                failed++;
                CU_ASSERT_STRING_EQUAL(y->checks.v[i].buffer, "act (gathered)");
            }
        CU_ASSERT_EQUAL(failed, 1);
        /* a replay that left a NaN in rank 1's x */
        const gr_buffer *xb = &tp->rank[1]->bufs[gr_tp_buffer(tp->rank[1], "x")];
        float *xg = malloc(xb->bytes);
        memcpy(xg, out.x_graph[1], xb->bytes);
        xg[5] = NAN;
        bad = out;
        bad.x_graph[1] = xg;
        gr_checks_free(&y->checks);
        memset(y, 0, sizeof(*y));
        CU_ASSERT_EQUAL(gr_tp_check_outputs(tp, &bad, &refs, y, &e), GR_OK);
        CU_ASSERT_FALSE(y->verified);
        /* rank 0 graph vs eager, then rank 1 graph vs eager, then rank 1 vs rank 0 */
        CU_ASSERT_STRING_EQUAL(y->checks.v[1].buffer, "x (rank 1)");
        CU_ASSERT_STRING_EQUAL(y->checks.v[1].what, "graph vs eager");
        CU_ASSERT_FALSE(y->checks.v[1].passed);
        CU_ASSERT_EQUAL(y->checks.v[1].nonfinite, 1);
        free(xg);
        gr_checks_free(&y->checks);
        free(y);
        gr_tp_ref_destroy(dev);
        gr_tp_refs_free_sharded(&refs);
        gr_checks_free(&x->checks);
        free(x);
        gr_tp_host_free(&h);
        gr_hoststate_destroy(hs);
        free_tp(tp);
    }
}

static void test_gather(void) {
    const char *sets[] = {"L=1", "d=64", "f=128", "r=8", "B=2", "dtype=fp32"};
    gr_tp_plans *tp = load_tp(sets, 6, 4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tp);
    /* act shards [2, 32] of a [2, 128] matrix whose element (b, n) is 1000 b + n */
    float shards[4][64], full[256];
    float td[4][16], tsum[16];
    void *ps[4], *ts[4];
    for (int p = 0; p < 4; p++) {
        for (int b = 0; b < 2; b++)
            for (int j = 0; j < 32; j++)
                shards[p][b * 32 + j] = (float)(1000 * b + 32 * p + j);
        for (int i = 0; i < 16; i++)
            td[p][i] = (float)(p + 1) * 0.5f + (float)i;
        ps[p] = shards[p];
        ts[p] = td[p];
    }
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tp_gather(tp, "act", GR_TP_COLS, 0, ps, full, &e), GR_OK);
    for (int b = 0; b < 2; b++)
        for (int n = 0; n < 128; n++)
            CU_ASSERT_EQUAL(full[b * 128 + n], (float)(1000 * b + n));
    CU_ASSERT_EQUAL(gr_tp_gather(tp, "tdown", GR_TP_REPL, 1, ts, tsum, &e), GR_OK);
    for (int i = 0; i < 16; i++)
        CU_ASSERT_EQUAL(tsum[i], 5.0f + 4.0f * (float)i);
    CU_ASSERT_EQUAL(gr_tp_gather(tp, "nope", GR_TP_REPL, 0, ps, full, &e), GR_ERR_INTERNAL);
    GR_ASSERT_CONTAINS(e.msg, "no rank buffer \"nope\"");
    free_tp(tp);
}

/* ---------- the allreduce_sum kernel ---------- */

static const char *ar_json(char *buf, size_t size, const char *xdt, const char *ydt,
                           const char *yshape, const char *ranks) {
    snprintf(
        buf, size,
        "{\"name\": \"ar\", \"buffers\": ["
        "{\"name\": \"x\", \"dtype\": \"%s\", \"shape\": [4, 8], \"init\": {\"kind\": \"iota\"}},"
        "{\"name\": \"y\", \"dtype\": \"%s\", \"shape\": %s}],"
        "\"outputs\": [\"y\"], \"ops\": [{\"name\": \"sum\", \"kernel\": \"allreduce_sum\", "
        "\"inputs\": [\"x\"], \"outputs\": [\"y\"], \"attrs\": {\"ranks\": %s}}]}",
        xdt, ydt, yshape, ranks);
    return buf;
}

static void test_allreduce_kernel(void) {
    char j[2048];
    GR_ASSERT_CONTAINS(
        gr_test_plan_error(ar_json(j, sizeof(j), "fp32", "bf16", "[4, 8]", "1"), NULL),
        "ops[0]: kernel \"allreduce_sum\": dst \"y\" is bf16 but src \"x\" is fp32");
    GR_ASSERT_CONTAINS(
        gr_test_plan_error(ar_json(j, sizeof(j), "fp32", "fp32", "[4, 7]", "1"), NULL),
        "dst \"y\" [4, 7] has 28 elements but src \"x\" [4, 8] has 32");
    GR_ASSERT_CONTAINS(
        gr_test_plan_error(ar_json(j, sizeof(j), "fp32", "fp32", "[4, 8]", "0"), NULL),
        "ranks = 0; it is the number of ranks the all-reduce spans");
    GR_ASSERT_CONTAINS(
        gr_test_plan_error(ar_json(j, sizeof(j), "int64", "int64", "[4, 8]", "1"), NULL),
        "inputs[0] (src) \"x\" is int64; it takes fp32, bf16, fp16, int32");
    GR_ASSERT_CONTAINS(gr_test_plan_error(ar_json(j, sizeof(j), "fp32", "fp32", "[32]", "1"), NULL),
                       "(no error)");
    /* one rank: the reference copies; accounting as one launch moving src and dst */
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(ar_json(j, sizeof(j), "bf16", "bf16", "[32]", "1"), NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->ops[0].launches, 1);
    CU_ASSERT_DOUBLE_EQUAL(p->ops[0].bytes_read, 64, 0);
    CU_ASSERT_DOUBLE_EQUAL(p->ops[0].bytes_written, 64, 0);
    gr_hoststate *hs = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_create(p, &hs, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_fill(hs, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_reference_step(p, hs, &e), GR_OK);
    CU_ASSERT_EQUAL(memcmp(hs->hptr[0], hs->hptr[1], 64), 0);
    /* without a communicator (graphrun run) the launch refuses before touching the GPU */
    gr_launch_ctx ctx;
    memset(&ctx, 0, sizeof(ctx));
    ctx.plan = p;
    CU_ASSERT_EQUAL(p->ops[0].kernel->launch(&p->ops[0], &ctx, &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg, "ops[0]: kernel \"allreduce_sum\" needs an NCCL communicator");
    GR_ASSERT_CONTAINS(e.msg, "graphrun tp");
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
    /* two ranks: a single plan's reference cannot sum what it does not see */
    gr_error_clear(&e);
    p = gr_test_plan(ar_json(j, sizeof(j), "fp32", "fp32", "[4, 8]", "2"), NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    hs = NULL;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_create(p, &hs, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_fill(hs, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_reference_step(p, hs, &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg,
                       "the CPU reference of a 2-rank all-reduce needs every rank's buffers");
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
    /* the registry lists it */
    CU_ASSERT_PTR_NOT_NULL(gr_kernel_find("allreduce_sum"));
}

/* ---------- the report ---------- */

static gr_timing fake_timing(double median) {
    gr_timing t;
    memset(&t, 0, sizeof(t));
    t.step_us.median = t.step_us.p10 = t.step_us.p90 = median;
    t.step_us.n = 20;
    t.submit_us.median = median / 2;
    t.batches = 20;
    t.steps_per_batch = 50;
    t.warmup = 100;
    return t;
}

static void test_report_numbers_and_json(void) {
    gr_tp_report *r = calloc(1, sizeof(*r));
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    gr_tp_opts_default(&r->opts);
    snprintf(r->workload, sizeof(r->workload), "decode_tp");
    r->shape.f = 8192;
    r->shape.dtype = GR_BF16;
    r->single.timed = 1;
    r->single.verified = 1;
    r->single.eager = fake_timing(600);
    r->single.graph_t = fake_timing(560);
    r->nruns = 1;
    gr_tp_result *x = &r->runs[0];
    x->P = 2;
    x->timed = 1;
    x->verified = 1;
    x->kernels_per_step = 64;
    x->collectives_per_step = 16;
    /* rank 1 is the slower in eager, rank 0 in graph */
    double e[2] = {390, 400}, g[2] = {300, 290}, ec[2] = {340, 330}, gc[2] = {240, 235},
           gm[2] = {50, 52};
    for (int p = 0; p < 2; p++) {
        x->rank[p].rank = p;
        x->rank[p].device = p;
        x->rank[p].floor_us = p ? 190 : 200;
        x->rank[p].t[GR_TP_EAGER] = fake_timing(e[p]);
        x->rank[p].t[GR_TP_GRAPH] = fake_timing(g[p]);
        x->rank[p].t[GR_TP_EAGER_COMPUTE] = fake_timing(ec[p]);
        x->rank[p].t[GR_TP_GRAPH_COMPUTE] = fake_timing(gc[p]);
        x->rank[p].t[GR_TP_GRAPH_COMM] = fake_timing(gm[p]);
        for (int m = 0; m < GR_TP_NMODES; m++)
            x->rank[p].timed[m] = m != GR_TP_EAGER_COMM;
    }
    gr_tp_derived d;
    gr_tp_derive(r, x, &d);
    CU_ASSERT_TRUE(d.valid);
    CU_ASSERT_EQUAL(d.slowest[GR_TP_EAGER], 1);
    CU_ASSERT_EQUAL(d.slowest[GR_TP_GRAPH], 0);
    CU_ASSERT_EQUAL(d.slowest[GR_TP_EAGER_COMM], -1);
    CU_ASSERT_DOUBLE_EQUAL(d.us[GR_TP_EAGER], 400, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(d.us[GR_TP_GRAPH], 300, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(d.comm_share_eager, 1 - 340.0 / 400, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(d.comm_share_graph, 1 - 240.0 / 300, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(d.comm_alone_graph, 52.0 / 300, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(d.floor_us, 200, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(d.removed_us, 100, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(d.removed_per_launch_us, 100.0 / 64, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(d.removed_share_min, 100.0 / (400 - 200), 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(d.graph_over_floor, 1.5, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(d.vs_single_graph, 560.0 / 300, 1e-9);
    /* text */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gr_tp_report_text(f, r);
    fclose(f);
    GR_ASSERT_CONTAINS(buf, "P = 2:");
    GR_ASSERT_CONTAINS(buf, "communication: 15.0% of the eager step, 20.0% of the graph step");
    GR_ASSERT_CONTAINS(buf, "at least 50% of the eager step's overhead");
    GR_ASSERT_CONTAINS(buf, "rank 1 on device 1: rows 4096..8191");
    GR_ASSERT_CONTAINS(buf, "HBM floor per GPU 200.00 us"); /* the larger rank floor */
    GR_ASSERT_CONTAINS(buf, "eager 2.00x, graph 1.50x the floor (50.0%, 66.7% of it)");
    free(buf);
    /* JSON: schema_version, runs, and run-shaped variants for bench/run.sh */
    json_t *j = gr_tp_report_json(r);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "schema_version")), 1);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "command")), "tp");
    json_t *run = json_array_get(json_object_get(j, "runs"), 0);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(run, "P")), 2);
    CU_ASSERT_DOUBLE_EQUAL(
        json_real_value(json_object_get(json_object_get(run, "comm_share"), "graph")), 0.2, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_real_value(json_object_get(json_object_get(run, "launch_overhead"),
                                                           "removed_share_min")),
                           0.5, 1e-9);
    json_t *v = json_array_get(json_object_get(j, "variants"), 1);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(v, "variant")), "tp2");
    CU_ASSERT_DOUBLE_EQUAL(
        json_real_value(json_object_get(
            json_object_get(json_object_get(v, "graph_replay"), "step_us"), "median")),
        300, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_real_value(json_object_get(v, "hbm_floor_us")), 200, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_real_value(json_object_get(v, "graph_pct_of_floor")), 200.0 / 3, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_real_value(json_object_get(v, "eager_pct_of_floor")), 50, 1e-9);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(run, "ranks")), 2);
    json_decref(j);
    gr_tp_report_clear(r);
    free(r);
}

/* ---------- graphrun tp end to end (no GPU needed for any of these) ---------- */


/* graphrun ARGS from the source tree, output captured (tests/test_main.c) */
static int run_cli(const char *args, char *out, size_t size) {
    return gr_test_graphrun(args, out, size);
}

static char out[1 << 20];

static void test_cli(void) {
    CU_ASSERT_EQUAL(run_cli("tp --help", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "usage: graphrun tp");
    GR_ASSERT_CONTAINS(out, "examples:");
    CU_ASSERT_EQUAL(run_cli("help tp", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "--no-comm-share");
    CU_ASSERT_EQUAL(run_cli("--help", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "tp [WORKLOAD]");
    CU_ASSERT_EQUAL(run_cli("tp --tp 3", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--tp 3: P = 3 does not divide f = 8192");
    CU_ASSERT_EQUAL(run_cli("tp --tp 2 --set f=8200", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "f/P = 8200/2 = 4100 is not a multiple of 8");
    CU_ASSERT_EQUAL(run_cli("tp --tp 0", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--tp takes auto or up to 8 different degrees");
    CU_ASSERT_EQUAL(run_cli("tp --tp 2,2", out, sizeof(out)), 2);
    CU_ASSERT_EQUAL(run_cli("tp --set P=4", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "chosen with --tp");
    CU_ASSERT_EQUAL(run_cli("tp --set rank=1", out, sizeof(out)), 2);
    CU_ASSERT_EQUAL(run_cli("tp --set nope=1", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "nope");
    CU_ASSERT_EQUAL(run_cli("tp --tp 2 --capture-mode global", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--capture-mode global: with P = 2");
    CU_ASSERT_EQUAL(run_cli("tp --steps 0", out, sizeof(out)), 2);
    CU_ASSERT_EQUAL(run_cli("tp --devices 1,1", out, sizeof(out)), 2);
    CU_ASSERT_EQUAL(run_cli("tp --bogus", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "unknown option --bogus");
    CU_ASSERT_EQUAL(run_cli("tp workloads/nope.json", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "workloads/nope.json: cannot open the workload file");
    /* more ranks than any machine here has: the sharding, then exit 3 naming the counts */
    CU_ASSERT_EQUAL(run_cli("tp --tp 64 --set L=1", out, sizeof(out)), 3);
    GR_ASSERT_CONTAINS(out, "--tp 64: needs 64 CUDA devices (one per rank), found");
    GR_ASSERT_CONTAINS(out, "rank 0: rows 0..127 of W_gate");
    GR_ASSERT_CONTAINS(out, "... ranks 4..61 alike ...");
    CU_ASSERT_EQUAL(run_cli("tp --tp 32 --plan --set L=1", out, sizeof(out)), 3);
    GR_ASSERT_CONTAINS(out, "rank 1's plan:");
    GR_ASSERT_CONTAINS(out, "allreduce_sum");
    /* the rank workload validates on its own, and the kernel is listed */
    CU_ASSERT_EQUAL(run_cli("validate workloads/decode_tp.json --set P=2 --set rank=1 --set L=2",
                            out, sizeof(out)),
                    0);
    GR_ASSERT_CONTAINS(out, "allreduce_sum");
    GR_ASSERT_CONTAINS(out, "valid");
    CU_ASSERT_EQUAL(run_cli("kernels allreduce_sum", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "ncclAllReduce");
    /* a count for scripts: exit 3 without devices, 0 with */
    int rc = run_cli("tp --count-devices", out, sizeof(out));
    CU_ASSERT_TRUE((rc == 3 && atoi(out) == 0) || (rc == 0 && atoi(out) > 0));
}

static CU_TestInfo tp_shard_tests[] = {{"owned ranges", test_owned_ranges},
                                       {"split table", test_split_table},
                                       {"shard copy by hand", test_shard_copy_by_hand},
                                       {"host shards are the right slices", test_host_shards},
                                       {"gather and sum", test_gather},
                                       CU_TEST_INFO_NULL};
static CU_TestInfo tp_plan_tests[] = {{"degree checks", test_degree_checks},
                                      {"device checks", test_device_checks},
                                      {"rank plans", test_rank_plans},
                                      {"plan structure errors", test_plan_structure_errors},
                                      {"allreduce_sum kernel", test_allreduce_kernel},
                                      CU_TEST_INFO_NULL};
static CU_TestInfo tp_reference_tests[] = {
    {"sharded reference == unsharded", test_sharded_reference_matches_unsharded},
    {"all-reduce sums the ranks", test_reference_allreduce_sums_ranks},
    {"checks of simulated rank outputs", test_checks_with_simulated_outputs},
    CU_TEST_INFO_NULL};
static CU_TestInfo tp_report_tests[] = {
    {"derived numbers, text and JSON", test_report_numbers_and_json},
    {"graphrun tp end to end", test_cli},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_tp_suites[] = {{"tp_shard", tp_shard_tests, 0},
                                      {"tp_plans", tp_plan_tests, 0},
                                      {"tp_reference", tp_reference_tests, 0},
                                      {"tp_report", tp_report_tests, 0},
                                      {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_tp_suites)
