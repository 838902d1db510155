/* Tensor parallelism on the host: the degree checks, the sharding arithmetic, loading and
 * cross-checking the unsharded and per-rank plans, the ranks' shards of the unsharded initial
 * data, and the lockstep CPU reference of the sharded step. Nothing here touches a GPU, so all
 * of it is tested on the CPU machine (tests/test_tp.c). */
#include "replay/tp_shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/device.h"
#include "kernels/tp.h"

/* ---------- sharding arithmetic ---------- */

/* Column-parallel gate/up (each rank owns f/P output rows), row-parallel down (f/P columns of
 * its input dim); what the rest of the layer needs whole is replicated. */
static const struct {
    const char *stem;
    gr_tp_split split;
} split_table[] = {
    {"x", GR_TP_REPL},      {"w_norm", GR_TP_REPL}, {"A_gate", GR_TP_REPL}, {"A_up", GR_TP_REPL},
    {"B_down", GR_TP_REPL}, {"W_gate", GR_TP_ROWS}, {"W_up", GR_TP_ROWS},   {"B_gate", GR_TP_ROWS},
    {"B_up", GR_TP_ROWS},   {"W_down", GR_TP_COLS}, {"A_down", GR_TP_COLS},
};

gr_tp_split gr_tp_split_of(const char *name) {
    size_t len = strcspn(name, ".");
    for (size_t i = 0; i < sizeof(split_table) / sizeof(split_table[0]); i++)
        if (strlen(split_table[i].stem) == len && !strncmp(split_table[i].stem, name, len))
            return split_table[i].split;
    return GR_TP_LOCAL;
}

const char *gr_tp_split_name(gr_tp_split s) {
    switch (s) {
    case GR_TP_REPL:
        return "replicated";
    case GR_TP_ROWS:
        return "rows";
    case GR_TP_COLS:
        return "columns";
    default:
        return "rank-local";
    }
}

void gr_tp_owned(int64_t n, int P, int p, int64_t *lo, int64_t *hi) {
    *lo = n / P * p;
    *hi = n / P * (p + 1);
}

void gr_tp_shard_copy(gr_tp_split s, const void *full, int64_t rows, int64_t cols, size_t esize,
                      int P, int p, void *shard) {
    const unsigned char *src = full;
    unsigned char *dst = shard;
    int64_t lo, hi;
    if (s == GR_TP_ROWS) {
        gr_tp_owned(rows, P, p, &lo, &hi);
        memcpy(dst, src + (size_t)(lo * cols) * esize, (size_t)((hi - lo) * cols) * esize);
    } else if (s == GR_TP_COLS) {
        gr_tp_owned(cols, P, p, &lo, &hi);
        size_t w = (size_t)(hi - lo) * esize;
        for (int64_t i = 0; i < rows; i++)
            memcpy(dst + (size_t)i * w, src + (size_t)(i * cols + lo) * esize, w);
    } else {
        memcpy(dst, src, (size_t)(rows * cols) * esize);
    }
}

void gr_tp_unshard_copy(gr_tp_split s, const void *shard, int64_t rows, int64_t cols, size_t esize,
                        int P, int p, void *full) {
    const unsigned char *src = shard;
    unsigned char *dst = full;
    int64_t lo, hi;
    if (s == GR_TP_ROWS) {
        gr_tp_owned(rows, P, p, &lo, &hi);
        memcpy(dst + (size_t)(lo * cols) * esize, src, (size_t)((hi - lo) * cols) * esize);
    } else if (s == GR_TP_COLS) {
        gr_tp_owned(cols, P, p, &lo, &hi);
        size_t w = (size_t)(hi - lo) * esize;
        for (int64_t i = 0; i < rows; i++)
            memcpy(dst + (size_t)(i * cols + lo) * esize, src + (size_t)i * w, w);
    } else {
        memcpy(dst, src, (size_t)(rows * cols) * esize);
    }
}

/* ---------- shape and degree ---------- */

int gr_tp_buffer(const gr_plan *p, const char *name) {
    for (int b = 0; b < p->nbufs; b++)
        if (!strcmp(p->bufs[b].name, name)) return b;
    return -1;
}

gr_status gr_tp_shape_of(const gr_plan *base, gr_tp_shape *out, gr_error *err) {
    memset(out, 0, sizeof(*out));
    int x = gr_tp_buffer(base, "x"), wg = gr_tp_buffer(base, "W_gate.0"),
        ag = gr_tp_buffer(base, "A_gate.0");
    if (x < 0 || wg < 0 || ag < 0 || base->bufs[x].ndim != 2 || base->bufs[wg].ndim != 2 ||
        base->bufs[ag].ndim != 2)
        return gr_error_set(err, GR_ERR_INPUT, base->source,
                            "workload \"%s\" is not a decode step: graphrun tp shards a workload "
                            "with buffers x [B, d], W_gate.{i} [f, d] and A_gate.{i} [r, d] per "
                            "layer (workloads/decode_step.json)",
                            base->workload);
    out->B = base->bufs[x].shape[0];
    out->d = base->bufs[x].shape[1];
    out->f = base->bufs[wg].shape[0];
    out->r = base->bufs[ag].shape[0];
    out->dtype = base->bufs[x].dtype;
    for (int b = 0; b < base->nbufs; b++)
        if (base->bufs[b].used && !strncmp(base->bufs[b].name, "W_gate.", 7)) out->L++;
    return GR_OK;
}

int gr_tp_vec(const gr_tp_shape *s) {
    size_t e = gr_dtype_size(s->dtype);
    return e ? (int)(16 / e) : 1;
}

static int degree_ok(const gr_tp_shape *s, int P) {
    return P >= 1 && P <= GR_TP_MAX_RANKS && s->f % P == 0 && (s->f / P) % gr_tp_vec(s) == 0;
}

gr_status gr_tp_check_degree(const gr_tp_shape *s, int P, gr_error *err) {
    char ok[256];
    size_t o = 0;
    ok[0] = '\0';
    for (int q = 1; q <= GR_TP_MAX_RANKS; q++)
        if (degree_ok(s, q))
            o += (size_t)snprintf(ok + o, sizeof(ok) - o, "%s%d", o ? ", " : "", q);
    int vec = gr_tp_vec(s);
    gr_status st = GR_OK;
    char where[32];
    snprintf(where, sizeof(where), "--tp %d", P);
    if (P < 1 || P > GR_TP_MAX_RANKS)
        return gr_error_set(err, GR_ERR_USAGE, where,
                            "the tensor-parallel degree P must be in [1, %d]; at f = %lld these "
                            "work: %s",
                            GR_TP_MAX_RANKS, (long long)s->f, ok);
    if (s->f % P != 0)
        st = gr_error_set(err, GR_ERR_USAGE, where,
                          "P = %d does not divide f = %lld: each rank owns f/P rows of W_gate and "
                          "W_up and f/P columns of W_down, so f must split into P equal shards. "
                          "Use P in {%s} (or --set f=... a multiple of %d)",
                          P, (long long)s->f, ok, P * vec);
    else if ((s->f / P) % vec != 0)
        st = gr_error_set(err, GR_ERR_USAGE, where,
                          "f/P = %lld/%d = %lld is not a multiple of %d: the fused decode kernels "
                          "read a rank's f/P-wide rows of W_down 16 bytes (%d %s elements) at a "
                          "time. Use P in {%s}",
                          (long long)s->f, P, (long long)(s->f / P), vec, vec,
                          gr_dtype_name(s->dtype), ok);
    return st;
}

gr_status gr_tp_check_devices(int P, int visible, gr_error *err) {
    if (visible >= P) return GR_OK;
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    char where[32];
    snprintf(where, sizeof(where), "--tp %d", P);
    if (visible <= 0)
        return gr_error_set(err, GR_ERR_NODEV, where,
                            "needs %d CUDA device%s (one per rank), found 0%s%s%s: graphrun tp "
                            "needs NVIDIA GPUs and their driver. `graphrun tp --plan` shows the "
                            "sharded plans without one",
                            P, P == 1 ? "" : "s", cvd ? " (CUDA_VISIBLE_DEVICES=" : "",
                            cvd ? cvd : "", cvd ? ")" : "");
    return gr_error_set(err, GR_ERR_NODEV, where,
                        "needs %d CUDA device%s (one per rank), found %d%s%s%s. Use --tp %d or "
                        "fewer on this machine",
                        P, P == 1 ? "" : "s", visible, cvd ? " (CUDA_VISIBLE_DEVICES=" : "",
                        cvd ? cvd : "", cvd ? ")" : "", visible > 0 ? visible : 1);
}

/* ---------- plans ---------- */

static gr_status check_sets(const gr_tp_req *req, gr_error *err) {
    gr_status st = GR_OK;
    for (int i = 0; i < req->nsets; i++) {
        const char *s = req->sets[i];
        if (!strncmp(s, "P=", 2))
            st = gr_error_set(
                err, GR_ERR_USAGE, "--set",
                "\"%s\": the tensor-parallel degree is chosen with --tp (e.g. --tp %s)", s, s + 2);
        else if (!strncmp(s, "rank=", 5))
            st = gr_error_set(err, GR_ERR_USAGE, "--set",
                              "\"%s\": graphrun tp sets each rank's rank itself; remove it", s);
    }
    return st;
}

gr_status gr_tp_load_base(const gr_tp_req *req, const gr_target *t, gr_tp_plans *tp,
                          gr_error *err) {
    memset(tp, 0, sizeof(*tp));
    GR_TRY(check_sets(req, err));
    if (req->base) {
        snprintf(tp->base_path, sizeof(tp->base_path), "%s", req->base);
    } else {
        const char *slash = strrchr(req->workload, '/');
        int dirlen = slash ? (int)(slash - req->workload) + 1 : 0;
        snprintf(tp->base_path, sizeof(tp->base_path), "%.*sdecode_step.json", dirlen,
                 req->workload);
    }
    gr_load_req lr = {tp->base_path, "fused", req->sets, req->nsets, req->seed, 0, NULL, 0};
    gr_status st = gr_load_resolve(&lr, t, &tp->base_ld, err);
    if (st != GR_OK) {
        gr_error_prefix(err, "the unsharded step (--base %s): ", tp->base_path);
        return st;
    }
    tp->base = tp->base_ld.plans[0];
    return gr_tp_shape_of(tp->base, &tp->shape, err);
}

void gr_tp_free_ranks(gr_tp_plans *tp) {
    for (int p = 0; p < GR_TP_MAX_RANKS; p++) {
        gr_loaded_free(&tp->rank_ld[p]);
        memset(&tp->rank_ld[p], 0, sizeof(tp->rank_ld[p]));
        tp->rank[p] = NULL;
        free(tp->base_buf[p]);
        free(tp->split[p]);
        tp->base_buf[p] = NULL;
        tp->split[p] = NULL;
    }
    tp->P = 0;
    tp->ncollectives = 0;
}

void gr_tp_plans_free(gr_tp_plans *tp) {
    if (!tp) return;
    gr_tp_free_ranks(tp);
    gr_loaded_free(&tp->base_ld);
    tp->base = NULL;
}

static int same_shape(const gr_buffer *a, const int64_t *shape, int ndim) {
    if (a->ndim != ndim) return 0;
    for (int i = 0; i < ndim; i++)
        if (a->shape[i] != shape[i]) return 0;
    return 1;
}

static void shape_str(const int64_t *shape, int ndim, char *out, size_t size) {
    size_t o = (size_t)snprintf(out, size, "[");
    for (int i = 0; i < ndim && o < size; i++)
        o += (size_t)snprintf(out + o, size - o, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (o < size) snprintf(out + o, size - o, "]");
}

/* Rank p's buffers against the unsharded ones they are cut from. */
static gr_status check_rank_buffers(gr_tp_plans *tp, int p, gr_error *err) {
    const gr_plan *rp = tp->rank[p], *base = tp->base;
    int P = tp->P;
    tp->base_buf[p] = malloc(((size_t)rp->nbufs + 1) * sizeof(int));
    tp->split[p] = calloc((size_t)rp->nbufs + 1, sizeof(gr_tp_split));
    if (!tp->base_buf[p] || !tp->split[p])
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    gr_status st = GR_OK;
    for (int b = 0; b < rp->nbufs; b++) {
        const gr_buffer *rb = &rp->bufs[b];
        tp->base_buf[p][b] = -1;
        gr_tp_split s = rb->used ? gr_tp_split_of(rb->name) : GR_TP_LOCAL;
        tp->split[p][b] = s;
        if (s == GR_TP_LOCAL) continue;
        int bi = gr_tp_buffer(base, rb->name);
        if (bi < 0 || !base->bufs[bi].used) {
            st = gr_error_set(err, GR_ERR_INPUT, rb->path,
                              "%s: buffer \"%s\" is sharded by %s, but the unsharded step %s "
                              "(variant %s) uses no buffer of that name",
                              rp->source, rb->name, gr_tp_split_name(s), base->source,
                              base->variant);
            continue;
        }
        const gr_buffer *fb = &base->bufs[bi];
        int64_t want[GR_MAX_DIMS];
        memcpy(want, fb->shape, sizeof(want));
        int ok = fb->dtype == rb->dtype;
        if (s != GR_TP_REPL) {
            int dim = s == GR_TP_ROWS ? 0 : 1;
            ok = ok && fb->ndim == 2 && fb->shape[dim] % P == 0;
            if (fb->ndim == 2) want[dim] = fb->shape[dim] / P;
        }
        ok = ok && same_shape(rb, want, fb->ndim);
        if (!ok) {
            char have[96], need[96], full[96];
            shape_str(rb->shape, rb->ndim, have, sizeof(have));
            shape_str(want, fb->ndim, need, sizeof(need));
            shape_str(fb->shape, fb->ndim, full, sizeof(full));
            st = gr_error_set(err, GR_ERR_INPUT, rb->path,
                              "%s: rank %d's \"%s\" is %s %s; as the %s shard (P = %d) of the "
                              "unsharded %s %s in %s it must be %s %s",
                              rp->source, p, rb->name, gr_dtype_name(rb->dtype), have,
                              gr_tp_split_name(s), P, gr_dtype_name(fb->dtype), full, base->source,
                              gr_dtype_name(fb->dtype), need);
            continue;
        }
        tp->base_buf[p][b] = bi;
    }
    return st;
}

/* Every rank runs the same ops in the same order (only the buffers differ), so that the
 * collectives line up and the lockstep reference is well defined. */
static gr_status check_rank_ops(gr_tp_plans *tp, int p, gr_error *err) {
    const gr_plan *r0 = tp->rank[0], *rp = tp->rank[p];
    if (rp->nops != r0->nops)
        return gr_error_set(err, GR_ERR_INPUT, rp->source,
                            "rank %d has %d ops and rank 0 has %d: every rank must run the same "
                            "ops (the collectives must line up)",
                            p, rp->nops, r0->nops);
    int ncoll = 0;
    for (int i = 0; i < rp->nops; i++) {
        const gr_op *a = &r0->ops[i], *o = &rp->ops[i];
        if (a->kind != o->kind || a->kernel != o->kernel || strcmp(a->name, o->name) != 0)
            return gr_error_set(err, GR_ERR_INPUT, o->path,
                                "%s: op %d is \"%s\" (%s) on rank %d but \"%s\" (%s) on rank 0: "
                                "every rank must run the same ops in the same order",
                                rp->source, i, o->name, o->kernel ? o->kernel->name : "fork/join",
                                p, a->name, a->kernel ? a->kernel->name : "fork/join");
        if (gr_tp_is_collective(o)) {
            ncoll++;
            if (o->ip[GR_TP_AR_RANKS] != tp->P)
                return gr_error_set(err, GR_ERR_INPUT, o->path,
                                    "%s: op \"%s\" spans ranks = %lld but P = %d (give it "
                                    "\"ranks\": \"P\")",
                                    rp->source, o->name, (long long)o->ip[GR_TP_AR_RANKS], tp->P);
        }
    }
    if (ncoll == 0)
        return gr_error_set(err, GR_ERR_INPUT, rp->source,
                            "the rank plan has no allreduce_sum op: nothing combines the ranks' "
                            "partial outputs, so it is not a tensor-parallel step");
    tp->ncollectives = ncoll;
    return GR_OK;
}

gr_status gr_tp_load_ranks(const gr_tp_req *req, int P, const gr_target *t, gr_tp_plans *tp,
                           gr_error *err) {
    gr_tp_free_ranks(tp);
    GR_TRY(gr_tp_check_degree(&tp->shape, P, err));
    const char **sets = calloc((size_t)req->nsets + 3, sizeof(char *));
    if (!sets) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    char pset[32], rset[32];
    gr_status st = GR_OK;
    for (int p = 0; p < P && st == GR_OK; p++) {
        for (int i = 0; i < req->nsets; i++)
            sets[i] = req->sets[i];
        snprintf(pset, sizeof(pset), "P=%d", P);
        snprintf(rset, sizeof(rset), "rank=%d", p);
        sets[req->nsets] = pset;
        sets[req->nsets + 1] = rset;
        gr_load_req lr = {req->workload, NULL, sets, req->nsets + 2, req->seed, 0, NULL, 0};
        st = gr_load_resolve(&lr, t, &tp->rank_ld[p], err);
        if (st == GR_OK && tp->rank_ld[p].nplans != 1)
            st = gr_error_set(err, GR_ERR_INPUT, req->workload,
                              "a tensor-parallel workload has one step (top-level \"ops\"); this "
                              "one has %d variants",
                              tp->rank_ld[p].nplans);
        if (st != GR_OK) {
            gr_error_prefix(err, "rank %d of P = %d: ", p, P);
            break;
        }
        tp->rank[p] = tp->rank_ld[p].plans[0];
    }
    free(sets);
    if (st != GR_OK) {
        gr_tp_free_ranks(tp);
        return st;
    }
    tp->P = P;
    for (int p = 0; p < P && st == GR_OK; p++) {
        if (check_rank_buffers(tp, p, err) != GR_OK) st = err->code;
        if (check_rank_ops(tp, p, err) != GR_OK) st = err->code;
    }
    if (st != GR_OK) gr_tp_free_ranks(tp);
    return st;
}

/* ---------- the ranks' initial data ---------- */

static void dims_of(const gr_buffer *b, int64_t *rows, int64_t *cols) {
    *cols = b->ndim > 0 ? b->shape[b->ndim - 1] : 1;
    *rows = *cols ? b->numel / *cols : 0;
}

void gr_tp_host_free(gr_tp_host *h) {
    if (!h) return;
    for (int p = 0; p < GR_TP_MAX_RANKS; p++) {
        if (h->data[p] && h->owned[p])
            for (int b = 0; b < h->nbufs[p]; b++)
                if (h->owned[p][b]) free(h->data[p][b]);
        free(h->data[p]);
        free(h->owned[p]);
        h->data[p] = NULL;
        h->owned[p] = NULL;
    }
    h->P = 0;
}

gr_status gr_tp_host_shard(const gr_tp_plans *tp, void *const *base_init, gr_tp_host *out,
                           gr_error *err) {
    memset(out, 0, sizeof(*out));
    out->P = tp->P;
    const gr_plan *base = tp->base;
    for (int p = 0; p < tp->P; p++) {
        const gr_plan *rp = tp->rank[p];
        out->data[p] = calloc((size_t)rp->nbufs + 1, sizeof(void *));
        out->owned[p] = calloc((size_t)rp->nbufs + 1, 1);
        if (!out->data[p] || !out->owned[p]) {
            gr_tp_host_free(out);
            return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
        }
        out->nbufs[p] = rp->nbufs;
        for (int b = 0; b < rp->nbufs; b++) {
            int bi = tp->base_buf[p][b];
            if (bi < 0) continue;
            const gr_buffer *fb = &base->bufs[bi], *rb = &rp->bufs[b];
            gr_tp_split s = tp->split[p][b];
            if (!base_init[bi]) {
                gr_tp_host_free(out);
                return gr_error_set(err, GR_ERR_INTERNAL, fb->path,
                                    "no host copy of \"%s\" to shard", fb->name);
            }
            int64_t rows, cols;
            dims_of(fb, &rows, &cols);
            size_t esize = gr_dtype_size(fb->dtype);
            if (fb->first_write < 0 && (s == GR_TP_REPL || s == GR_TP_ROWS)) {
                int64_t lo = 0, hi = 0;
                if (s == GR_TP_ROWS) gr_tp_owned(rows, tp->P, p, &lo, &hi);
                out->data[p][b] = (unsigned char *)base_init[bi] + (size_t)(lo * cols) * esize;
                continue;
            }
            void *dst = malloc(rb->bytes ? rb->bytes : 1);
            if (!dst) {
                gr_tp_host_free(out);
                return gr_error_set(err, GR_ERR_NOMEM, rb->path,
                                    "out of host memory for rank %d's shard of \"%s\" (%.1f MB)", p,
                                    rb->name, (double)rb->bytes / 1e6);
            }
            gr_tp_shard_copy(s, base_init[bi], rows, cols, esize, tp->P, p, dst);
            out->data[p][b] = dst;
            out->owned[p][b] = 1;
            out->bytes_copied += (double)rb->bytes;
        }
    }
    return GR_OK;
}

void gr_tp_host_bind(gr_tp_plans *tp, const gr_tp_host *h) {
    for (int p = 0; p < tp->P && p < h->P; p++)
        for (int b = 0; b < tp->rank[p]->nbufs; b++) {
            if (!h->data[p][b]) continue;
            gr_buffer *rb = &tp->rank[p]->bufs[b];
            rb->init.kind = GR_INIT_HOST;
            rb->host_data = h->data[p][b];
        }
}

/* ---------- the sharded CPU reference ---------- */

void gr_tp_ref_destroy(gr_tp_ref *r) {
    if (!r) return;
    for (int p = 0; p < GR_TP_MAX_RANKS; p++) {
        if (r->hptr[p] && r->owned[p])
            for (int b = 0; b < r->tp->rank[p]->nbufs; b++)
                if (r->owned[p][b]) free(r->hptr[p][b]);
        free(r->hptr[p]);
        free(r->owned[p]);
    }
    free(r);
}

gr_status gr_tp_ref_create(const gr_tp_plans *tp, gr_tp_ref **out, gr_error *err) {
    *out = NULL;
    gr_tp_ref *r = calloc(1, sizeof(*r));
    if (!r) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    r->tp = tp;
    for (int p = 0; p < tp->P; p++) {
        const gr_plan *rp = tp->rank[p];
        r->hptr[p] = calloc((size_t)rp->nbufs + 1, sizeof(void *));
        r->owned[p] = calloc((size_t)rp->nbufs + 1, 1);
        if (!r->hptr[p] || !r->owned[p]) {
            gr_tp_ref_destroy(r);
            return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
        }
        for (int b = 0; b < rp->nbufs; b++) {
            const gr_buffer *buf = &rp->bufs[b];
            if (!buf->used) continue;
            int host = buf->init.kind == GR_INIT_HOST;
            if (host && !buf->host_data) {
                gr_tp_ref_destroy(r);
                return gr_error_set(err, GR_ERR_INTERNAL, buf->path,
                                    "rank %d: buffer \"%s\" has init \"host\" but no data", p,
                                    buf->name);
            }
            if (host && buf->first_write < 0) { /* read-only: use the shard in place */
                r->hptr[p][b] = (void *)buf->host_data;
                continue;
            }
            r->hptr[p][b] = malloc(buf->bytes ? buf->bytes : 1);
            if (!r->hptr[p][b]) {
                gr_tp_ref_destroy(r);
                return gr_error_set(err, GR_ERR_NOMEM, buf->path,
                                    "out of host memory for rank %d's reference copy of \"%s\" "
                                    "(%.1f MB); use --no-cpu-ref",
                                    p, buf->name, (double)buf->bytes / 1e6);
            }
            r->owned[p][b] = 1;
            gr_status st = GR_OK;
            if (host)
                memcpy(r->hptr[p][b], buf->host_data, buf->bytes);
            else
                st = gr_fill_host(r->hptr[p][b], buf->dtype, buf->numel, &buf->init, err);
            if (st != GR_OK) {
                gr_error_prefix(err, "rank %d, buffer \"%s\": ", p, buf->name);
                gr_tp_ref_destroy(r);
                return st;
            }
        }
    }
    *out = r;
    return GR_OK;
}

/* dst = sum over ranks of src, element by element in rank order (double), on every rank. */
static void reduce_step(gr_tp_ref *r, int i) {
    const gr_tp_plans *tp = r->tp;
    const gr_op *op0 = &tp->rank[0]->ops[i];
    gr_dtype t = (gr_dtype)op0->ip[GR_TP_AR_DTYPE];
    int64_t n = op0->ip[GR_TP_AR_COUNT];
    for (int64_t e = 0; e < n; e++) {
        double s = 0;
        for (int p = 0; p < tp->P; p++)
            s += gr_load(r->hptr[p][tp->rank[p]->ops[i].inputs[0]], t, (size_t)e);
        for (int p = 0; p < tp->P; p++)
            gr_store(r->hptr[p][tp->rank[p]->ops[i].outputs[0]], t, (size_t)e, s);
    }
}

gr_status gr_tp_ref_step(gr_tp_ref *r, gr_error *err) {
    const gr_tp_plans *tp = r->tp;
    const gr_plan *r0 = tp->rank[0];
    for (int i = 0; i < r0->nops; i++) {
        const gr_op *op0 = &r0->ops[i];
        if (op0->kind != GR_OP_KERNEL) continue;
        if (gr_tp_is_collective(op0)) {
            reduce_step(r, i);
            continue;
        }
        for (int p = 0; p < tp->P; p++) {
            const gr_op *op = &tp->rank[p]->ops[i];
            if (!op->kernel->reference)
                return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                                    "kernel \"%s\" has no CPU reference", op->kernel->name);
            gr_status st = op->kernel->reference(op, tp->rank[p], r->hptr[p], err);
            if (st != GR_OK) {
                gr_error_prefix(err, "sharded reference, rank %d: ", p);
                return st;
            }
        }
    }
    return GR_OK;
}

gr_status gr_tp_gather(const gr_tp_plans *tp, const char *name, gr_tp_split how, int sum,
                       void *const *rank_data, void *out, gr_error *err) {
    int b = gr_tp_buffer(tp->rank[0], name);
    if (b < 0)
        return gr_error_set(err, GR_ERR_INTERNAL, tp->rank[0]->source,
                            "no rank buffer \"%s\" to reassemble", name);
    const gr_buffer *buf = &tp->rank[0]->bufs[b];
    if (sum) {
        if (buf->dtype != GR_FP32)
            return gr_error_set(err, GR_ERR_INTERNAL, buf->path,
                                "summing \"%s\" over ranks needs fp32 partials, it is %s",
                                buf->name, gr_dtype_name(buf->dtype));
        float *o = out;
        for (int64_t e = 0; e < buf->numel; e++) {
            double s = 0;
            for (int p = 0; p < tp->P; p++)
                s += ((const float *)rank_data[p])[e];
            o[e] = (float)s;
        }
        return GR_OK;
    }
    if (how == GR_TP_COLS) {
        int64_t rows, cols;
        dims_of(buf, &rows, &cols);
        for (int p = 0; p < tp->P; p++)
            gr_tp_unshard_copy(GR_TP_COLS, rank_data[p], rows, cols * tp->P,
                               gr_dtype_size(buf->dtype), tp->P, p, out);
        return GR_OK;
    }
    if (how == GR_TP_ROWS) {
        int64_t rows, cols;
        dims_of(buf, &rows, &cols);
        for (int p = 0; p < tp->P; p++)
            gr_tp_unshard_copy(GR_TP_ROWS, rank_data[p], rows * tp->P, cols,
                               gr_dtype_size(buf->dtype), tp->P, p, out);
        return GR_OK;
    }
    memcpy(out, rank_data[0], buf->bytes);
    return GR_OK;
}
