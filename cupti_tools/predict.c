/* The graph prediction: an eager scope's kernels, copies and memsets in launch order, split into
 * steps, replayed as graph nodes (own duration + node cost, one launch cost per step, streams
 * overlapping unless the trace shows a wait), the same with PDL and with fusable chains fused,
 * and what in the trace breaks the model's assumptions. */
#include "cupti_tools/predict.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_tools/capclass.h"
#include "cupti_tools/report.h"
#include "cupti_tools/u64map.h"

#define US(ns) ((double)(ns) / 1000.0)

/* Rows per GPU model: every figure untraced, from raw reports (docs/predict.md derives each). */
static const gr_pred_calib calib_table[] = {
    {"NVIDIA H200", "9.0", 0.28, 0.72, 1.30, 0.50, 4000.0,
     "H200 (132 SMs, driver 580.159.04, CUDA 13.0), untraced, "
     "bench/results/2026-11-29-run5-benchmarks: "
     "node 0.28 us = launch_bound K=1000 tiny graph 1196.04 us / 1000 nodes - the tiny kernel's "
     "0.912 us; "
     "launch 0.72 us = pointwise n=4096 graph at 1 vs 20 steps per launch (median of 3 variants); "
     "host "
     "floor 1.30 us = pointwise graph submit; PDL 0.50 us = launch_bound tiny graph with --pdl "
     "(685.58 us / 1000); 4.0 TB/s = copy kernel, shared/GPU.md (2026-12-03)"},
    {"NVIDIA H100 80GB HBM3", "9.0", 0.0, 1.00, 2.13, 0.10, 2986.0,
     "H100 80GB HBM3 (132 SMs, CUDA 13.0), untraced, `cupti-launchstat calibrate` in "
     "bench/results/2026-12-05-run100-h100 (2026-12-05): node 0 us (measured -0.116: the tiny "
     "chain's 0.940 us per node is below the tiny kernel's traced 1.056 us), launch 1.00 us (1- vs "
     "20-node graphs of spins), host 2.13 us per cudaGraphLaunch, PDL 0.10 us per pair (tiny chain "
     "0.940 -> 0.842 us per node), 2986 GB/s = cudaMemcpyAsync D2D of 256 MiB"},
};

const gr_pred_calib *gr_pred_calib_table(size_t *n) {
    *n = sizeof(calib_table) / sizeof(calib_table[0]);
    return calib_table;
}

const gr_pred_calib *gr_pred_calib_lookup(const char *device, const char *cc, int *exact) {
    size_t n;
    const gr_pred_calib *t = gr_pred_calib_table(&n);
    for (size_t i = 0; i < n; i++)
        if (device && !strcmp(device, t[i].gpu)) {
            *exact = 1;
            return &t[i];
        }
    *exact = 0;
    double want = cc && cc[0] ? atof(cc) : 0;
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (fabs(atof(t[i].cc) - want) < fabs(atof(t[best].cc) - want)) best = i;
    return &t[best];
}

void gr_pred_opts_default(gr_pred_opts *o) {
    memset(o, 0, sizeof(*o));
    o->node_us = -1;
    o->launch_us = -1;
    o->noise_frac = 0.03;
    o->small_us = 10;
    o->elem_bytes = 4;
    o->top = 5;
    o->nvtx_scopes = 4;
}

/* ---- labels and categories ---- */

/* "void at::native::vectorized_elementwise_kernel<4, ...>(...)" -> "vectorized_elementwise_kernel"
 */
static void short_name(const char *raw, char *out, size_t size) {
    char dem[1024];
    const char *s = gr_ls_kernel_name(raw, 0, dem, sizeof(dem));
    if (!strncmp(s, "void ", 5)) s += 5;
    size_t end = strcspn(s, "<(");
    size_t start = 0;
    for (size_t i = 0; i + 1 < end; i++)
        if (s[i] == ':' && s[i + 1] == ':') start = i + 2;
    snprintf(out, size, "%.*s", (int)(end - start), s + start);
    if (!out[0]) snprintf(out, size, "%.60s", raw);
}

/* Matrix products and the like: not the element-wise or small kernels fusion targets. */
static int gemm_like(const char *name) {
    static const char *pat[] = {"gemm",  "gemv", "nvjet", "cublas", "cutlass",   "matmul", "splitK",
                                "wgmma", "mma",  "conv",  "flash",  "attention", "linear", NULL};
    char low[512];
    size_t i = 0;
    for (; name[i] && i + 1 < sizeof(low); i++)
        low[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] + 32 : name[i]);
    low[i] = '\0';
    for (const char **p = pat; *p; p++) {
        char lp[32];
        size_t k = 0;
        for (; (*p)[k] && k + 1 < sizeof(lp); k++)
            lp[k] = (char)((*p)[k] >= 'A' && (*p)[k] <= 'Z' ? (*p)[k] + 32 : (*p)[k]);
        lp[k] = '\0';
        if (strstr(low, lp)) return 1;
    }
    return 0;
}

/* The capture checker's category of an API call that does not belong inside a graph step, or -1. */
static int break_kind(const char *api) {
    if (strstr(api, "Synchronize")) return GR_FK_SYNC;
    if (strstr(api, "Query")) return GR_FK_QUERY;
    if (!strncmp(api, "cudaMallocHost", 14) || !strncmp(api, "cudaHostAlloc", 13) ||
        !strncmp(api, "cuMemAllocHost", 14) || !strncmp(api, "cuMemHostAlloc", 14))
        return GR_FK_HOST_ALLOC;
    if (!strncmp(api, "cudaMalloc", 10) || !strncmp(api, "cuMemAlloc", 10)) return GR_FK_ALLOC;
    if (!strncmp(api, "cudaFree", 8) || !strncmp(api, "cuMemFree", 9)) return GR_FK_FREE;
    if ((!strncmp(api, "cudaMemcpy", 10) || !strncmp(api, "cudaMemset", 10) ||
         !strncmp(api, "cuMemcpy", 8) || !strncmp(api, "cuMemset", 8)) &&
        !strstr(api, "Async"))
        return GR_FK_SYNC_COPY;
    return -1;
}

static int is_wait_api(const char *api) {
    return strstr(api, "StreamWaitEvent") != NULL;
}

/* ---- one scope ---- */

typedef struct item {
    size_t gi;
    int64_t key;  /* launch order: the launching call's entry, else the start */
    int64_t ls;   /* launching call's entry, 0 none */
    uint32_t tid; /* launching thread, 0 unknown */
    int stream;   /* index */
    int64_t step;
    int kernel;   /* a kernel (PDL and fusion apply), else a copy or memset node */
    double dur;   /* own duration, us; for a kernel that started before its predecessor on the
                     stream ended (PDL in the eager run), only the part after that end */
    int overlap;  /* that kernel: its launch was hidden behind the predecessor (no node cost) */
    double elems; /* threads launched */
    long op;      /* the graphrun op it belongs to (index into the trace's op records), -1 none */
    char label[96];
    /* fusion */
    int removed; /* folded into the chain's head */
    double fdur; /* the head's fused duration */
    /* cross-stream dependencies: indices into the item array */
    size_t *dep;
    size_t ndep;
    double end; /* simulated */
} item;

typedef struct pctx {
    const gr_trace *t;
    const gr_pred_report *p;
    int32_t *outer;
    gr_u64map api_by_corr, ext_by_corr, op_by_tag;
} pctx;

static int cmp_item(const void *x, const void *y) {
    const item *a = x, *b = y;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->gi > b->gi) - (a->gi < b->gi);
}

static const gr_tr_api *launch_api(const pctx *c, uint32_t corr) {
    int64_t i;
    if (!corr || !gr_u64map_get(&c->api_by_corr, corr, &i)) return NULL;
    if (c->outer[i] >= 0) i = c->outer[i];
    return &c->t->api.v[i];
}

/* Simulates the scope as one graph launch per step. mode 0 plain, 1 PDL, 2 fused. Returns the
 * predicted us per step; *host_hit counts steps the host floor set. */
static double simulate(item *it, size_t n, size_t nstreams, int64_t steps, const gr_pred_calib *c,
                       int mode, size_t *host_hit) {
    double *ready = calloc(nstreams + 1, sizeof(double));
    long *last = malloc((nstreams + 1) * sizeof(long));
    if (!ready || !last) {
        free(ready);
        free(last);
        return NAN;
    }
    double t = 0;
    size_t i = 0;
    *host_hit = 0;
    for (int64_t s = 0; s < steps; s++) {
        double base = t, start0 = t + c->launch_us, end = start0;
        for (size_t k = 0; k < nstreams; k++) {
            ready[k] = start0;
            last[k] = -1;
        }
        for (; i < n && it[i].step == s; i++) {
            item *x = &it[i];
            if (mode == 2 && x->removed) {
                x->end = ready[x->stream];
                continue;
            }
            double dur = mode == 2 && x->fdur > 0 ? x->fdur : x->dur;
            double st = ready[x->stream] + (x->overlap ? 0 : c->node_us), dep = 0;
            for (size_t d = 0; d < x->ndep; d++)
                if (it[x->dep[d]].step == s && it[x->dep[d]].end + c->node_us > dep)
                    dep = it[x->dep[d]].end + c->node_us;
            if (mode == 1 && x->kernel && last[x->stream] >= 0 && it[last[x->stream]].kernel) {
                /* the next kernel launches while its predecessor drains: at most pdl_us, and not
                 * more than half of either kernel */
                double prev = it[last[x->stream]].dur, save = c->pdl_us;
                if (save > prev / 2) save = prev / 2;
                if (save > dur / 2) save = dur / 2;
                st -= save;
            }
            if (dep > st) st = dep;
            x->end = st + dur;
            ready[x->stream] = x->end;
            last[x->stream] = (long)i;
            if (x->end > end) end = x->end;
        }
        double step = end - base;
        if (step < c->launch_host_us) {
            step = c->launch_host_us;
            (*host_hit)++;
        }
        t = base + step;
    }
    free(ready);
    free(last);
    return steps > 0 ? t / (double)steps : NAN;
}

static int cmp_chain(const void *x, const void *y) {
    const gr_pred_chain *a = x, *b = y;
    return (a->saved_us < b->saved_us) - (a->saved_us > b->saved_us);
}

/* Chains: maximal runs (>= 2) of consecutive small, non-GEMM kernels on one stream within a step,
 * with no cross-stream wait inside. Marks the items (the head gets the fused duration, the rest
 * are removed) and aggregates the chains by their labels. */
typedef struct chain_acc {
    gr_pred_scope *ps;
    size_t cap;
    item *it;
    const gr_pred_calib *cal;
    const gr_pred_opts *o;
    const gr_trace *t;
    /* plan_bytes' answers by the chain's ops: a chain recurs every step with the same ops */
    struct plan_memo {
        long *ops;
        size_t m;
        int ok;
        double bu, bf;
    } *memo;
    size_t nmemo, capmemo;
} chain_acc;

/* The next buffer index of a "3,5" list (the reader checked its syntax); 0 at its end. */
static int next_index(const char **p, long *v) {
    char *end;
    if (!**p) return 0;
    *v = strtol(*p, &end, 10);
    if (end == *p) return 0;
    *p = *end == ',' ? end + 1 : end;
    return 1;
}

/* Whether buffer index `b` is in a "3,5" list. */
static int in_list(const char *list, int b) {
    long v;
    while (next_index(&list, &v))
        if (v == b) return 1;
    return 0;
}

/* The chain's bytes from graphrun's plan (its op records' dataflow, written since session 19):
 * unfused, what its ops read and write; fused, less each value that an op of the chain writes
 * and only later ops of the chain read: its write and its reads are the round trips fusing
 * removes. A value lives from its write to the buffer's next write in plan order (an op that
 * reads and writes the buffer reads the old value); with no next write it lives to the step's end
 * and is kept when the buffer is an output or is read before its first write in the step (the
 * next step reads it). A scratch buffer that later layers write again is an intermediate of each
 * layer (run 100: the decode chains' bytes came out unchanged when any other writer kept it). 0
 * when the trace lacks the dataflow, a kernel of the chain is not a one-kernel graphrun op, or an
 * op comes twice. */
static int plan_bytes(const chain_acc *a, const size_t *mem, size_t m, double *bu, double *bf) {
    const gr_trace *t = a->t;
    const char *variant = NULL;
    double unfused = 0, saved = 0;
    for (size_t k = 0; k < m; k++) {
        long oi = a->it[mem[k]].op;
        if (oi < 0) return 0;
        const gr_tr_op *op = &t->op.v[oi];
        if (!op->has_flow || op->launches != 1) return 0;
        const char *v = gr_trace_str(t, op->variant);
        if (variant && strcmp(variant, v) != 0) return 0;
        variant = v;
        for (size_t j = 0; j < k; j++)
            if (a->it[mem[j]].op == oi) return 0;
        unfused += op->rd + op->wr;
    }
    for (size_t k = 0; k < m; k++) {
        const gr_tr_op *op = &t->op.v[a->it[mem[k]].op];
        const char *outs = gr_trace_str(t, op->out);
        long w;
        while (next_index(&outs, &w)) {
            const gr_tr_buf *buf = NULL;
            for (size_t b = 0; b < t->buf.n && !buf; b++)
                if (t->buf.v[b].index == w && !strcmp(gr_trace_str(t, t->buf.v[b].variant), variant))
                    buf = &t->buf.v[b];
            if (!buf) return 0;
            int ik = op->index, next = INT_MAX, first = INT_MAX;
            for (size_t o = 0; o < t->op.n; o++) { /* the buffer's next write and its first */
                const gr_tr_op *x = &t->op.v[o];
                if (!x->has_flow || strcmp(gr_trace_str(t, x->variant), variant) != 0) continue;
                if (!in_list(gr_trace_str(t, x->out), (int)w)) continue;
                if (x->index > ik && x->index < next) next = x->index;
                if (x->index < first) first = x->index;
            }
            int inside = next != INT_MAX || !buf->output, reads = 0;
            /* a round trip is at most what the writer writes and each reader reads (an op that
             * writes or reads part of a buffer counts that part in its rd / wr) */
            double trip = buf->bytes < op->wr ? buf->bytes : op->wr;
            for (size_t o = 0; o < t->op.n && inside; o++) {
                const gr_tr_op *x = &t->op.v[o];
                if (!x->has_flow || strcmp(gr_trace_str(t, x->variant), variant) != 0) continue;
                if (!in_list(gr_trace_str(t, x->in), (int)w)) continue;
                int live = x->index > ik && x->index <= next; /* reads this value */
                if (next == INT_MAX && x->index <= first) live = 1; /* the next step reads it */
                if (!live) continue;
                size_t pos = m;
                for (size_t j = 0; j < m; j++)
                    if (a->it[mem[j]].op == (long)o) pos = j;
                if (pos == m || pos <= k) inside = 0; /* read outside the chain */
                else {
                    reads++;
                    trip += buf->bytes < x->rd ? buf->bytes : x->rd;
                }
            }
            if (inside && reads > 0) saved += trip;
        }
    }
    *bu = unfused;
    *bf = unfused - saved > 0 ? unfused - saved : 0;
    return 1;
}

/* plan_bytes, asked once per sequence of ops (its scan is over every op record of the trace). */
static int plan_bytes_memo(chain_acc *a, const size_t *mem, size_t m, double *bu, double *bf) {
    for (size_t k = 0; k < m; k++)
        if (a->it[mem[k]].op < 0) return 0;
    for (size_t e = 0; e < a->nmemo; e++) {
        struct plan_memo *x = &a->memo[e];
        size_t k = 0;
        while (x->m == m && k < m && x->ops[k] == a->it[mem[k]].op)
            k++;
        if (x->m != m || k < m) continue;
        if (x->ok) *bu = x->bu, *bf = x->bf;
        return x->ok;
    }
    double u = *bu, f = *bf;
    int ok = plan_bytes(a, mem, m, &u, &f);
    if (ok) *bu = u, *bf = f;
    if (a->nmemo == a->capmemo) { /* out of memory: answer without remembering */
        size_t nc = a->capmemo ? 2 * a->capmemo : 16;
        struct plan_memo *v = realloc(a->memo, nc * sizeof(*v));
        if (!v) return ok;
        a->memo = v;
        a->capmemo = nc;
    }
    long *ops = malloc(m * sizeof(long));
    if (!ops) return ok;
    for (size_t k = 0; k < m; k++)
        ops[k] = a->it[mem[k]].op;
    a->memo[a->nmemo++] = (struct plan_memo){ops, m, ok, u, f};
    return ok;
}

static int chain_ok(const chain_acc *a, const item *x) {
    return x->kernel && x->dur < a->o->small_us && !gemm_like(x->label) && x->ndep == 0;
}

static gr_status chain_flush(chain_acc *a, const size_t *mem, size_t m, gr_error *err) {
    if (m < 2) return GR_OK;
    gr_pred_scope *ps = a->ps;
    char names[512] = "";
    size_t off = 0;
    double sum = 0, mind = 1e300, elems = 0;
    for (size_t k = 0; k < m; k++) {
        const item *x = &a->it[mem[k]];
        size_t rep = 1; /* a run of one label is written once: "add x200" */
        while (k + rep < m && !strcmp(a->it[mem[k + rep]].label, x->label))
            rep++;
        if (off < sizeof(names) - 4) {
            if (rep > 1)
                off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s x%zu",
                                        k ? " > " : "", x->label, rep);
            else
                off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s", k ? " > " : "",
                                        x->label);
        }
        for (size_t r = 0; r < rep; r++) {
            const item *y = &a->it[mem[k + r]];
            sum += y->dur;
            if (y->dur < mind) mind = y->dur;
            if (y->elems > elems) elems = y->elems;
        }
        k += rep - 1;
    }
    double eb = a->o->elem_bytes;
    double bu = 3.0 * (double)m * elems * eb, bf = ((double)m + 2.0) * elems * eb;
    int from_plan = plan_bytes_memo(a, mem, m, &bu, &bf);
    double floor_us = bf / (a->cal->hbm_gbps * 1e3);
    double fused = floor_us > mind ? floor_us : mind;
    double unfused = sum + (double)(m - 1) * a->cal->node_us;
    if (!(fused < unfused)) return GR_OK;
    a->it[mem[0]].fdur = fused;
    for (size_t k = 1; k < m; k++)
        a->it[mem[k]].removed = 1;
    size_t ci = 0;
    while (ci < ps->nchains && strcmp(ps->chains[ci].names, names) != 0)
        ci++;
    if (ci == ps->nchains) {
        if (ps->nchains == a->cap) {
            size_t nc = a->cap ? 2 * a->cap : 16;
            gr_pred_chain *c = realloc(ps->chains, nc * sizeof(gr_pred_chain));
            if (!c)
                return gr_error_set(err, GR_ERR_NOMEM, NULL,
                                    "out of host memory in the prediction");
            ps->chains = c;
            a->cap = nc;
        }
        gr_pred_chain *ch = &ps->chains[ps->nchains++];
        memset(ch, 0, sizeof(*ch));
        snprintf(ch->names, sizeof(ch->names), "%s", names);
        ch->len = (int)m;
    }
    gr_pred_chain *ch = &ps->chains[ci];
    ch->count++;
    ch->unfused_us += unfused;
    ch->fused_us += fused;
    ch->bytes_unfused += bu;
    ch->bytes_fused += bf;
    ch->elems += elems;
    ch->from_plan += (size_t)from_plan;
    return GR_OK;
}

static gr_status find_chains(const pctx *c, gr_pred_scope *ps, item *it, size_t n, size_t nstreams,
                             gr_error *err) {
    chain_acc a = {ps, 0, it, &c->p->calib, &c->p->opts, c->t, NULL, 0, 0};
    size_t *mem = malloc((n + 1) * sizeof(size_t));
    if (!mem) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory in the prediction");
    gr_status st = GR_OK;
    for (size_t sidx = 0; sidx < nstreams && st == GR_OK; sidx++) {
        size_t m = 0;
        for (size_t i = 0; i < n && st == GR_OK; i++) {
            if (it[i].stream != (int)sidx)
                continue; /* another stream's work does not break a chain */
            int ok = chain_ok(&a, &it[i]);
            if (ok && (m == 0 || it[mem[0]].step == it[i].step)) {
                mem[m++] = i;
                continue;
            }
            st = chain_flush(&a, mem, m, err);
            m = 0;
            if (ok) mem[m++] = i;
        }
        if (st == GR_OK) st = chain_flush(&a, mem, m, err);
    }
    free(mem);
    for (size_t e = 0; e < a.nmemo; e++)
        free(a.memo[e].ops);
    free(a.memo);
    if (st != GR_OK) return st;
    for (size_t ci = 0; ci < ps->nchains; ci++) {
        gr_pred_chain *ch = &ps->chains[ci];
        double k = (double)ch->count;
        ch->per_step = k / (double)ps->steps;
        ch->saved_us = (ch->unfused_us - ch->fused_us) / (double)ps->steps;
        ch->unfused_us /= k;
        ch->fused_us /= k;
        ch->bytes_unfused /= k;
        ch->bytes_fused /= k;
        ch->elems /= k;
        ps->fused_saved_us += ch->saved_us;
    }
    if (ps->nchains > 1) qsort(ps->chains, ps->nchains, sizeof(gr_pred_chain), cmp_chain);
    return GR_OK;
}

static gr_status add_break(gr_pred_scope *ps, size_t *cap, int kind, const char *api, int uncertain,
                           gr_error *err) {
    for (size_t i = 0; i < ps->nbreaks; i++)
        if (ps->breaks[i].kind == kind && !strcmp(ps->breaks[i].api, api)) {
            ps->breaks[i].count++;
            return GR_OK;
        }
    if (ps->nbreaks == *cap) {
        size_t nc = *cap ? 2 * *cap : 8;
        gr_pred_break *b = realloc(ps->breaks, nc * sizeof(gr_pred_break));
        if (!b)
            return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory in the prediction");
        ps->breaks = b;
        *cap = nc;
    }
    gr_pred_break *b = &ps->breaks[ps->nbreaks++];
    memset(b, 0, sizeof(*b));
    b->kind = kind;
    snprintf(b->api, sizeof(b->api), "%s", api);
    b->count = 1;
    b->uncertain = uncertain;
    return GR_OK;
}

static gr_status find_breaks(const pctx *c, gr_pred_scope *ps, const gr_ls_scope *sc,
                             gr_error *err) {
    const gr_trace *t = c->t;
    size_t cap = 0;
    for (size_t k = 0; k < sc->napi_idx; k++) {
        size_t i = sc->api_idx[k];
        if (c->outer[i] >= 0) continue; /* counted as its outer call */
        char nm[128];
        gr_api_strip_version(gr_trace_str(t, t->api.v[i].name), nm, sizeof(nm));
        int kind = break_kind(nm);
        if (kind >= 0 && add_break(ps, &cap, kind, nm, 0, err) != GR_OK) return GR_ERR_NOMEM;
    }
    for (size_t k = 0; k < sc->ngpu_idx; k++) {
        const gr_tr_gpu *g = &t->gpu.v[sc->gpu_idx[k]];
        if (g->kind != GR_GPU_MEMCPY) continue;
        const char *kind = gr_trace_str(t, g->name);
        if (!strcmp(kind, "HtoD") || !strcmp(kind, "DtoH")) {
            char what[64];
            snprintf(what, sizeof(what), "%s copy", kind);
            if (add_break(ps, &cap, GR_FK_PAGEABLE_COPY, what, 1, err) != GR_OK)
                return GR_ERR_NOMEM;
        }
    }
    for (size_t i = 0; i < ps->nbreaks; i++) {
        gr_pred_break *b = &ps->breaks[i];
        b->per_step = (double)b->count / (double)ps->steps;
        b->in_step = b->per_step >= 1.0 - 1e-9;
    }
    return GR_OK;
}

/* Cross-stream waits as seen: a cudaStreamWaitEvent on the launching thread between an item's
 * previous launch on its stream and its own makes it depend, on every other stream, on the latest
 * item launched before the wait that had ended when it started in the eager run. */
typedef struct wait_rec {
    int64_t s;
    uint32_t tid;
} wait_rec;

static int cmp_wait(const void *x, const void *y) {
    const wait_rec *a = x, *b = y;
    return (a->s > b->s) - (a->s < b->s);
}

static gr_status find_deps(const pctx *c, gr_pred_scope *ps, const gr_ls_scope *sc, item *it,
                           size_t n, size_t nstreams, gr_error *err) {
    const gr_trace *t = c->t;
    size_t nw = 0;
    wait_rec *w = malloc((sc->napi_idx + 1) * sizeof(wait_rec));
    int64_t *prev_ls = malloc((nstreams + 1) * sizeof(int64_t));
    size_t *off = calloc(nstreams + 2, sizeof(size_t)),
           *fill = calloc(nstreams + 1, sizeof(size_t));
    size_t *by_stream = malloc((n + 1) * sizeof(size_t));
    gr_status st = GR_OK;
    if (!w || !prev_ls || !off || !fill || !by_stream) {
        st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory in the prediction");
        goto done;
    }
    for (size_t k = 0; k < sc->napi_idx; k++) {
        const gr_tr_api *x = &t->api.v[sc->api_idx[k]];
        char nm[128];
        gr_api_strip_version(gr_trace_str(t, x->name), nm, sizeof(nm));
        if (x->cat == GR_API_EVENT || is_wait_api(nm)) ps->deps_recorded = 1;
        if (is_wait_api(nm) && c->outer[sc->api_idx[k]] < 0) w[nw++] = (wait_rec){x->s, x->tid};
    }
    if (!ps->deps_recorded && strstr(t->apis, "event")) ps->deps_recorded = 1;
    if (nw == 0 || nstreams < 2) goto done;
    qsort(w, nw, sizeof(wait_rec), cmp_wait);
    /* per stream, its launched items in launch order (ascending launch entry) */
    for (size_t i = 0; i < n; i++)
        if (it[i].ls) off[it[i].stream + 1]++;
    for (size_t s = 0; s < nstreams; s++) {
        off[s + 1] += off[s];
        prev_ls[s] = INT64_MIN;
    }
    for (size_t i = 0; i < n; i++)
        if (it[i].ls) by_stream[off[it[i].stream] + fill[it[i].stream]++] = i;
    for (size_t i = 0; i < n; i++) {
        item *x = &it[i];
        if (!x->ls) continue;
        /* the latest wait on its thread after the stream's previous launch, before this one */
        size_t lo = 0, hi = nw;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (w[mid].s < x->ls)
                lo = mid + 1;
            else
                hi = mid;
        }
        int64_t wait = INT64_MIN;
        for (size_t k = lo; k-- > 0 && w[k].s > prev_ls[x->stream];)
            if (w[k].tid == x->tid) {
                wait = w[k].s;
                break;
            }
        prev_ls[x->stream] = x->ls;
        if (wait == INT64_MIN) continue;
        const gr_tr_gpu *g = &t->gpu.v[x->gi];
        x->dep = malloc(nstreams * sizeof(size_t));
        if (!x->dep) {
            st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory in the prediction");
            goto done;
        }
        for (size_t o = 0; o < nstreams; o++) {
            if ((int)o == x->stream || off[o + 1] == off[o]) continue;
            /* the latest item of stream o launched before the wait */
            size_t a = off[o], b = off[o + 1];
            while (a < b) {
                size_t mid = (a + b) / 2;
                if (it[by_stream[mid]].ls < wait)
                    a = mid + 1;
                else
                    b = mid;
            }
            if (a == off[o]) continue;
            size_t j = by_stream[a - 1];
            if (t->gpu.v[it[j].gi].e <= g->s) {
                x->dep[x->ndep++] = j;
                ps->cross_deps++;
            }
        }
    }
done:
    free(w);
    free(prev_ls);
    free(off);
    free(fill);
    free(by_stream);
    return st;
}

static gr_status predict_scope(const pctx *c, const gr_ls_scope *sc, gr_pred_scope *ps,
                               gr_error *err) {
    const gr_trace *t = c->t;
    const gr_pred_calib *cal = &c->p->calib;
    snprintf(ps->name, sizeof(ps->name), "%s", sc->name);
    snprintf(ps->variant, sizeof(ps->variant), "%s", sc->variant);
    ps->steps = sc->steps > 0 ? sc->steps : 1;
    ps->steps_from = sc->steps > 0 ? sc->steps_from : "none (the scope as one step)";
    ps->measured_us = sc->untraced_step_us > 0 ? sc->untraced_step_us : sc->step_us;
    ps->measured_traced = !(sc->untraced_step_us > 0);
    ps->measured_host = sc->has_host_span;
    if (sc->graph_kernels > 0) {
        snprintf(ps->why, sizeof(ps->why), "already a graph run (%zu kernels in graphs)",
                 sc->graph_kernels);
        return GR_OK;
    }
    item *it = calloc(sc->ngpu_idx + 1, sizeof(item));
    gr_u64map smap;
    gr_u64map_init(&smap);
    if (!it) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory in the prediction");
    size_t n = 0, nstreams = 0;
    gr_status st = GR_OK;
    for (size_t k = 0; k < sc->ngpu_idx && st == GR_OK; k++) {
        const gr_tr_gpu *g = &t->gpu.v[sc->gpu_idx[k]];
        if (g->incomplete) continue;
        item *x = &it[n];
        x->gi = sc->gpu_idx[k];
        const gr_tr_api *a = launch_api(c, g->corr);
        x->key = a ? a->s : g->s;
        x->ls = a ? a->s : 0;
        x->tid = a ? a->tid : 0;
        x->kernel = g->kind == GR_GPU_KERNEL;
        x->dur = US(g->e - g->s);
        x->elems =
            (double)g->grid[0] * g->grid[1] * g->grid[2] * g->block[0] * g->block[1] * g->block[2];
        int64_t si;
        uint64_t key = ((uint64_t)g->ctx << 32) | g->stream;
        if (!gr_u64map_get(&smap, key, &si)) {
            si = (int64_t)nstreams++;
            if (!gr_u64map_put(&smap, key, si))
                st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
        }
        x->stream = (int)si;
        int64_t tag = 0, oi;
        x->op = -1;
        if (x->kernel && g->corr && gr_u64map_get(&c->ext_by_corr, g->corr, &tag) &&
            gr_u64map_get(&c->op_by_tag, (uint64_t)tag, &oi))
            x->op = (long)oi;
        if (x->op >= 0 && gr_trace_str(t, t->op.v[oi].kernel)[0])
            snprintf(x->label, sizeof(x->label), "%s", gr_trace_str(t, t->op.v[oi].kernel));
        else if (x->kernel)
            short_name(gr_trace_str(t, g->name), x->label, sizeof(x->label));
        else
            snprintf(x->label, sizeof(x->label), "%s %s",
                     g->kind == GR_GPU_MEMCPY ? "memcpy" : "memset",
                     g->kind == GR_GPU_MEMCPY ? gr_trace_str(t, g->name) : "");
        if (x->kernel)
            ps->kernels++;
        else
            ps->memops++;
        n++;
    }
    gr_u64map_free(&smap);
    ps->streams = nstreams;
    if (st == GR_OK && ps->kernels == 0) {
        snprintf(ps->why, sizeof(ps->why), "no timed kernels in this scope");
        free(it);
        return GR_OK;
    }
    if (st == GR_OK && (uint64_t)ps->steps > n) {
        snprintf(ps->why, sizeof(ps->why),
                 "more steps (%lld, %s) than kernels, copies and memsets (%zu): check --steps",
                 (long long)ps->steps, ps->steps_from, n);
        free(it);
        return GR_OK;
    }
    if (st == GR_OK) {
        qsort(it, n, sizeof(item), cmp_item);
        for (size_t i = 0; i < n; i++) {
            it[i].step = (int64_t)((double)i * (double)ps->steps / (double)n);
            ps->kernel_us += it[i].dur;
        }
        ps->kernel_us /= (double)ps->steps;
        ps->nodes_per_step = (double)n / (double)ps->steps;
        /* PDL already in use: kernels of one stream overlap in the eager run */
        int64_t *last_e = calloc(nstreams + 1, sizeof(int64_t));
        if (!last_e)
            st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory in the prediction");
        for (size_t i = 0; st == GR_OK && i < n; i++) {
            const gr_tr_gpu *g = &t->gpu.v[it[i].gi];
            int64_t prev_e = last_e[it[i].stream];
            if (prev_e && g->s < prev_e) {
                /* launched early (PDL): its traced duration includes waiting at
                 * griddepcontrol.wait for the predecessor; the step only sees what runs after the
                 * predecessor's end, and its launch was hidden (docs/predict.md, PDL) */
                ps->pdl_seen = 1;
                if (it[i].kernel) {
                    it[i].dur = g->e > prev_e ? US(g->e - prev_e) : 0;
                    it[i].overlap = 1;
                }
            }
            if (g->e > last_e[it[i].stream]) last_e[it[i].stream] = g->e;
        }
        free(last_e);
    }
    if (st == GR_OK) st = find_deps(c, ps, sc, it, n, nstreams, err);
    if (st == GR_OK) st = find_breaks(c, ps, sc, err);
    size_t hit = 0, hit2 = 0;
    if (st == GR_OK) {
        ps->pred_us = simulate(it, n, nstreams, ps->steps, cal, 0, &hit);
        ps->host_floor_hit = (double)hit / (double)ps->steps;
        if (!ps->pdl_seen) ps->pred_pdl_us = simulate(it, n, nstreams, ps->steps, cal, 1, &hit2);
        st = find_chains(c, ps, it, n, nstreams, err);
    }
    if (st == GR_OK && ps->nchains > 0)
        ps->pred_fused_us = simulate(it, n, nstreams, ps->steps, cal, 2, &hit2);
    for (size_t i = 0; i < n; i++)
        free(it[i].dep);
    free(it);
    if (st != GR_OK) return st;
    if (isnan(ps->pred_us) || isnan(ps->pred_pdl_us) || isnan(ps->pred_fused_us))
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory in the prediction");
    ps->ok = 1;
    if (ps->measured_us > 0) {
        ps->saved_us = ps->measured_us - ps->pred_us;
        ps->speedup = ps->pred_us > 0 ? ps->measured_us / ps->pred_us : 0;
        ps->gain_frac = ps->saved_us / ps->measured_us;
        ps->verdict = ps->gain_frac >= c->p->opts.noise_frac ? GR_PRED_HELPS : GR_PRED_NO_GAIN;
    }
    return GR_OK;
}

void gr_pred_set_truth(gr_pred_scope *ps, const gr_ls_scope *g, const char *label) {
    double v = g->untraced_step_us > 0 ? g->untraced_step_us : g->step_us;
    if (!(v > 0)) return;
    ps->has_truth = 1;
    snprintf(ps->truth_name, sizeof(ps->truth_name), "%s", label);
    ps->truth_us = v;
    ps->truth_traced = !(g->untraced_step_us > 0);
    ps->error_pct = ps->ok ? 100.0 * (ps->pred_us - v) / v : 0;
    /* a traced graph step is often set by the traced host (graph launch calls inflated
     * several-fold): the GPU span of one launch, when a launch is a step, is the figure tracing
     * leaves alone */
    if (g->graph.launches > 0 && g->steps > 0 && (int64_t)g->graph.launches == g->steps &&
        g->graph.span_us.n > 0) {
        ps->truth_gpu_us = g->graph.span_us.median;
        ps->error_gpu_pct =
            ps->ok ? 100.0 * (ps->pred_us - ps->truth_gpu_us) / ps->truth_gpu_us : 0;
    }
}

gr_status gr_pred_run(const gr_ls_report *r, const gr_pred_opts *o, gr_pred_report **out,
                      gr_error *err) {
    *out = NULL;
    const gr_trace *t = r->tr;
    gr_pred_report *p = calloc(1, sizeof(*p));
    if (!p) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory in the prediction");
    if (o)
        p->opts = *o;
    else
        gr_pred_opts_default(&p->opts);
    /* the device: the header's name, else the first context's */
    const char *dev = t->device, *cc = t->cc;
    if (!dev[0] && t->ctx.n > 0) {
        dev = gr_trace_str(t, t->ctx.v[0].name);
        cc = t->ctx.v[0].cc;
    }
    snprintf(p->device, sizeof(p->device), "%s", dev[0] ? dev : "unknown GPU");
    int exact = 0;
    if (p->opts.calib) {
        /* a calibration file (report --calibration): measured on one GPU, said when the trace
         * comes from another */
        p->calib = *p->opts.calib;
        p->calib_exact = 3;
        const char *file = p->opts.calib_file ? p->opts.calib_file : "(no name)";
        if (!dev[0])
            snprintf(p->calib_note, sizeof(p->calib_note),
                     "the trace does not name its GPU: the calibration file %s (measured on %s, "
                     "cc %s) cannot be checked against it",
                     file, p->calib.gpu, p->calib.cc);
        else if (strcmp(dev, p->calib.gpu) != 0)
            snprintf(p->calib_note, sizeof(p->calib_note),
                     "the calibration file %s was measured on %s (cc %s), the trace comes from "
                     "%s (cc %s): its graph costs may not hold for this GPU; run `cupti-launchstat "
                     "calibrate -o FILE` on the traced GPU",
                     file, p->calib.gpu, p->calib.cc, p->device, cc[0] ? cc : "unknown");
    } else {
        p->calib = *gr_pred_calib_lookup(dev, cc, &exact);
        p->calib_exact = exact;
        if (!exact)
            snprintf(p->calib_note, sizeof(p->calib_note),
                     "no graph calibration for %s (cc %s): using the %s row, the nearest compute "
                     "capability; measure this GPU (`cupti-launchstat calibrate -o FILE`, then "
                     "--calibration FILE) or give --graph-node-us and --graph-launch-us",
                     p->device, cc[0] ? cc : "unknown", p->calib.gpu);
    }
    if (p->opts.node_us >= 0 || p->opts.launch_us >= 0) {
        if (p->opts.node_us >= 0) p->calib.node_us = p->opts.node_us;
        if (p->opts.launch_us >= 0) p->calib.launch_us = p->opts.launch_us;
        if (p->calib_exact == 3) {
            snprintf(p->calib_source, sizeof(p->calib_source),
                     "given on the command line (--graph-node-us / --graph-launch-us); the rest "
                     "from the %s",
                     p->opts.calib->source);
            p->calib.source = p->calib_source;
        } else {
            p->calib.source = "given on the command line (--graph-node-us / --graph-launch-us); "
                              "the rest from the table";
            p->calib_note[0] = '\0';
        }
        p->calib_exact = 2;
    }
    pctx c;
    memset(&c, 0, sizeof(c));
    c.t = t;
    c.p = p;
    gr_u64map_init(&c.api_by_corr);
    gr_u64map_init(&c.ext_by_corr);
    gr_u64map_init(&c.op_by_tag);
    gr_status st = GR_OK;
    c.outer = malloc((t->api.n + 1) * sizeof(int32_t));
    if (!c.outer || gr_trace_api_outermost(t, c.outer) != 0)
        st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    for (size_t i = 0; st == GR_OK && i < t->api.n; i++) {
        int64_t prev;
        uint32_t corr = t->api.v[i].corr;
        if (!corr) continue;
        if (gr_u64map_get(&c.api_by_corr, corr, &prev) && c.outer[prev] < 0) continue;
        if (!gr_u64map_put(&c.api_by_corr, corr, (int64_t)i))
            st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    for (size_t i = 0; st == GR_OK && i < t->ext.n; i++)
        if (!gr_u64map_put_new(&c.ext_by_corr, t->ext.v[i].corr, (int64_t)t->ext.v[i].id) &&
            c.ext_by_corr.oom)
            st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    for (size_t i = 0; st == GR_OK && i < t->op.n; i++)
        if (!gr_u64map_put(&c.op_by_tag, t->op.v[i].tag, (int64_t)i))
            st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    size_t ns = r->nregions ? r->nregions : 1;
    /* NVTX range scopes (largest by host time first): those whose kernels all ran eagerly */
    const gr_ls_scope **nv = calloc(r->nnvtx + 1, sizeof(*nv));
    size_t nnv = 0;
    if (!nv) st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    for (size_t k = 0; nv && k < r->nnvtx && (int)nnv < p->opts.nvtx_scopes; k++)
        if (r->nvtx[k].eager_kernels > 0 && r->nvtx[k].graph_kernels == 0) nv[nnv++] = &r->nvtx[k];
    if (st == GR_OK) {
        p->scopes = calloc(ns + nnv, sizeof(gr_pred_scope));
        if (!p->scopes) st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    for (size_t k = 0; st == GR_OK && k < ns; k++) {
        const gr_ls_scope *sc = r->nregions ? &r->regions[k] : &r->all;
        p->n++;
        st = predict_scope(&c, sc, &p->scopes[k], err);
        /* graphrun: the same variant's graph run is the truth */
        if (st == GR_OK && p->scopes[k].ok && sc->variant[0])
            for (size_t j = 0; j < r->nregions; j++) {
                const gr_ls_scope *g = &r->regions[j];
                if (g != sc && !strcmp(g->variant, sc->variant) && !strcmp(g->mode, "graph") &&
                    g->graph_kernels > 0)
                    gr_pred_set_truth(&p->scopes[k], g, g->name);
            }
    }
    for (size_t k = 0; st == GR_OK && k < nnv; k++) {
        gr_pred_scope *ps = &p->scopes[ns + k];
        p->n++;
        st = predict_scope(&c, nv[k], ps, err);
        ps->is_nvtx = 1;
        ps->nvtx_instances = nv[k]->instances;
        char name[sizeof(ps->name)];
        snprintf(name, sizeof(name), "NVTX range \"%.140s\"", nv[k]->name);
        memcpy(ps->name, name, sizeof(name));
    }
    free(nv);
    free(c.outer);
    gr_u64map_free(&c.api_by_corr);
    gr_u64map_free(&c.ext_by_corr);
    gr_u64map_free(&c.op_by_tag);
    if (st != GR_OK) {
        gr_pred_report_destroy(p);
        return st;
    }
    *out = p;
    return GR_OK;
}

void gr_pred_report_destroy(gr_pred_report *p) {
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) {
        free(p->scopes[i].breaks);
        free(p->scopes[i].chains);
    }
    free(p->scopes);
    free(p);
}

/* ---- output ---- */

static const char *num(double v) {
    static char bufs[16][32];
    static unsigned next;
    char *b = bufs[next++ % 16];
    double a = fabs(v);
    if (a >= 1000 || a == 0)
        snprintf(b, 32, "%.0f", v);
    else if (a >= 100)
        snprintf(b, 32, "%.1f", v);
    else if (a >= 10)
        snprintf(b, 32, "%.2f", v);
    else
        snprintf(b, 32, "%.3f", v);
    return b;
}

static void bytes_str(double b, char *out, size_t size) {
    if (b >= 1e9)
        snprintf(out, size, "%.2f GB", b / 1e9);
    else if (b >= 1e6)
        snprintf(out, size, "%.2f MB", b / 1e6);
    else if (b >= 1e3)
        snprintf(out, size, "%.1f KB", b / 1e3);
    else
        snprintf(out, size, "%.0f B", b);
}

void gr_pred_print(FILE *f, const gr_pred_report *p) {
    const gr_pred_calib *c = &p->calib;
    fprintf(f, "graph prediction (from the eager trace; docs/predict.md)\n");
    fprintf(f,
            "  model     per step: one graph launch (%s us) + per node (kernel, copy, memset) its "
            "own traced duration "
            "+ %s us; streams overlap unless the trace shows a wait; no step under the host's %s "
            "us graph submit\n",
            num(c->launch_us), num(c->node_us), num(c->launch_host_us));
    fprintf(f, "  costs     %s\n", c->source);
    if (p->calib_note[0]) fprintf(f, "  WARNING   %s\n", p->calib_note);
    fprintf(f, "  assumes   the same kernels in the same order, their traced durations (tracing "
               "does not stretch "
               "kernels), no host work inside the step; traced launch gaps are not used\n");
    for (size_t i = 0; i < p->n; i++) {
        const gr_pred_scope *s = &p->scopes[i];
        fprintf(f, "\n  == %s\n", s->name);
        if (!s->ok) {
            fprintf(f, "    not predicted: %s\n", s->why);
            continue;
        }
        fprintf(f,
                "    steps                 %lld (%s); %s nodes per step (%zu kernels, %zu "
                "copies/memsets in the "
                "scope), %zu stream%s\n",
                (long long)s->steps, s->steps_from, num(s->nodes_per_step), s->kernels, s->memops,
                s->streams, s->streams == 1 ? "" : "s");
        fprintf(f, "    kernel time           %s us per step (own durations, traced)\n",
                num(s->kernel_us));
        if (s->measured_us > 0)
            fprintf(f, "    eager step, measured  %s us %s\n", num(s->measured_us),
                    s->measured_traced
                        ? (s->measured_host ? "TRACED (host span / steps: tracing inflates eager "
                                              "launches, so the gain below is overstated; time "
                                              "the program untraced)"
                                            : "TRACED (GPU span / steps: tracing inflates eager "
                                              "launches, so the gain below is overstated; time "
                                              "the program untraced)")
                        : "untraced (graphrun's measurement)");
        fprintf(f, "    graph step, predicted %s us", num(s->pred_us));
        if (s->measured_us > 0)
            fprintf(f, ": %.2fx, %s us saved per step (%.1f%%)", s->speedup, num(s->saved_us),
                    100 * s->gain_frac);
        fprintf(f, "\n");
        if (s->has_truth)
            fprintf(f, "    graph step, measured  %s us %s (%s): prediction %+.1f%%\n",
                    num(s->truth_us), s->truth_traced ? "TRACED, host span / steps" : "untraced",
                    s->truth_name, s->error_pct);
        if (s->has_truth && s->truth_traced && s->truth_gpu_us > 0)
            fprintf(f,
                    "    graph GPU span        %s us per launch, traced (first node start .. last "
                    "node end): "
                    "prediction %+.1f%%\n",
                    num(s->truth_gpu_us), s->error_gpu_pct);
        if (s->measured_us > 0)
            fprintf(f, "    verdict               %s\n",
                    s->verdict == GR_PRED_HELPS
                        ? "a CUDA graph would help"
                        : "graphs would not help: the predicted gain is within noise (< 3% "
                          "of the step)");
        if (s->host_floor_hit > 0)
            fprintf(f,
                    "    host-bound            %.0f%% of steps are set by the host's graph submit, "
                    "not the GPU\n",
                    100 * s->host_floor_hit);
        if (s->pdl_seen)
            fprintf(f, "    with PDL              not modelled: kernels of one stream already "
                       "overlap (PDL in use)\n");
        else
            fprintf(f,
                    "    with PDL              %s us (each dependent kernel pair on a stream "
                    "overlaps by min(%s us, "
                    "half of either kernel): an upper bound, kernels must call "
                    "cudaGridDependencySynchronize)\n",
                    num(s->pred_pdl_us), num(c->pdl_us));
        if (s->streams > 1)
            fprintf(
                f, "    streams               %s\n",
                s->cross_deps ? "cross-stream waits seen in the trace are kept as dependencies"
                : s->deps_recorded
                    ? "no cross-stream wait seen: streams overlap within a step"
                    : "the trace records no event calls: streams are assumed to overlap within a "
                      "step");
        if (s->nbreaks) {
            fprintf(f, "    breaks the assumption (capture checker's categories):\n");
            for (size_t b = 0; b < s->nbreaks; b++) {
                const gr_pred_break *x = &s->breaks[b];
                fprintf(f, "      %-14s %-28s %zu (%s per step)%s\n", gr_find_kind_name(x->kind),
                        x->api, x->count, num(x->per_step),
                        x->uncertain
                            ? ": pinned or pageable is not recorded; a pageable copy breaks capture"
                        : x->in_step
                            ? ": inside the step, remove it or move it out"
                            : ": fewer than one per step, likely between steps (the timing loop)");
            }
        }
        if (s->nchains) {
            fprintf(f,
                    "    fusion what-if (ESTIMATE): %zu chain%s of small kernels on one stream, "
                    "fused at the "
                    "memory floor (%s GB/s) but no faster than the chain's shortest kernel:\n",
                    s->nchains, s->nchains == 1 ? "" : "s", num(c->hbm_gbps));
            int top = p->opts.top > 0 ? p->opts.top : 5;
            for (size_t k = 0; k < s->nchains && k < (size_t)top; k++) {
                const gr_pred_chain *ch = &s->chains[k];
                char bu[32], bf[32];
                bytes_str(ch->bytes_unfused, bu, sizeof(bu));
                bytes_str(ch->bytes_fused, bf, sizeof(bf));
                fprintf(f,
                        "      %s per step: %s\n        %s -> %s us each (nodes included), saves "
                        "%s us/step; bytes %s%s -> %s ",
                        num(ch->per_step), ch->names, num(ch->unfused_us), num(ch->fused_us),
                        num(ch->saved_us), ch->from_plan ? "" : "assumed ", bu, bf);
                if (ch->from_plan == ch->count)
                    fprintf(f, "(graphrun's plan: what its ops read and write, less the values only "
                               "the chain reads back)\n");
                else if (ch->from_plan)
                    fprintf(f, "(mean of graphrun's plan for %zu of %zu occurrences and the "
                               "per-element assumption for the rest)\n",
                            ch->from_plan, ch->count);
                else
                    fprintf(f, "(%.0f elements x %.0f B)\n", ch->elems, p->opts.elem_bytes);
            }
            if (s->nchains > (size_t)top)
                fprintf(f, "      (%zu more)\n", s->nchains - (size_t)top);
            fprintf(f, "      graph step with them fused: %s us (estimate)\n",
                    num(s->pred_fused_us));
            int assumed = 0; /* the footnote of the assumption, where a chain above used it */
            for (size_t k = 0; k < s->nchains && k < (size_t)top; k++)
                assumed |= s->chains[k].from_plan < s->chains[k].count;
            if (assumed)
                fprintf(f,
                        "      assumed bytes: each kernel reads two and writes one tensor of the "
                        "chain's largest launch (one element per thread), and each output is read "
                        "only by the next kernel\n");
        }
    }
}

void *gr_pred_json(const gr_pred_report *p) {
    const gr_pred_calib *c = &p->calib;
    json_t *j = json_object();
    json_object_set_new(j, "device", json_string(p->device));
    json_object_set_new(
        j, "calibration",
        json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:f, s:s, s:s}", "gpu", c->gpu, "from",
                  p->calib_exact == 3   ? "file"
                  : p->calib_exact == 2 ? "user"
                  : p->calib_exact == 1 ? "table"
                                        : "nearest",
                  "node_us", c->node_us, "launch_us", c->launch_us, "launch_host_us",
                  c->launch_host_us, "pdl_us", c->pdl_us, "hbm_gbps", c->hbm_gbps, "source",
                  c->source, "warning", p->calib_note));
    if (p->opts.calib) { /* a calibration file, also under user values */
        json_t *cal = json_object_get(j, "calibration");
        json_object_set_new(cal, "file", json_string(p->opts.calib_file ? p->opts.calib_file : ""));
        json_object_set_new(cal, "date", json_string(p->opts.calib_date ? p->opts.calib_date : ""));
    }
    json_object_set_new(j, "noise_frac", json_real(p->opts.noise_frac));
    json_t *arr = json_array();
    for (size_t i = 0; i < p->n; i++) {
        const gr_pred_scope *s = &p->scopes[i];
        json_t *o = json_pack("{s:s, s:b}", "scope", s->name, "predicted", s->ok);
        if (s->is_nvtx) {
            json_object_set_new(o, "nvtx_range", json_true());
            json_object_set_new(o, "nvtx_instances", json_integer((json_int_t)s->nvtx_instances));
        }
        if (!s->ok) {
            json_object_set_new(o, "why", json_string(s->why));
            json_array_append_new(arr, o);
            continue;
        }
        json_t *more = json_pack(
            "{s:I, s:s, s:f, s:I, s:I, s:I, s:f, s:f, s:b, s:f, s:f, s:f, s:f, s:s, s:f, s:b, s:b, "
            "s:I}",
            "steps", (json_int_t)s->steps, "steps_from", s->steps_from, "nodes_per_step",
            s->nodes_per_step, "kernels", (json_int_t)s->kernels, "copies_memsets",
            (json_int_t)s->memops, "streams", (json_int_t)s->streams, "kernel_us_per_step",
            s->kernel_us, "eager_measured_us", s->measured_us, "eager_measured_traced",
            s->measured_traced, "graph_predicted_us", s->pred_us, "speedup", s->speedup,
            "saved_us_per_step", s->saved_us, "gain_frac", s->gain_frac, "verdict",
            s->verdict == GR_PRED_HELPS ? "helps" : "no_gain", "host_bound_steps",
            s->host_floor_hit, "pdl_seen", s->pdl_seen, "deps_recorded", s->deps_recorded,
            "cross_stream_deps", (json_int_t)s->cross_deps);
        json_object_set_new(more, "eager_measured_from",
                            json_string(!s->measured_traced ? "untraced (graphrun)"
                                        : s->measured_host  ? "traced host span / steps"
                                                            : "traced GPU span / steps"));
        json_object_update(o, more);
        json_decref(more);
        json_object_set_new(o, "graph_pdl_predicted_us",
                            s->pdl_seen ? json_null() : json_real(s->pred_pdl_us));
        if (s->has_truth) {
            json_t *gm =
                json_pack("{s:s, s:f, s:b, s:f}", "scope", s->truth_name, "us", s->truth_us,
                          "traced", s->truth_traced, "error_pct", s->error_pct);
            if (s->truth_gpu_us > 0) {
                json_object_set_new(gm, "gpu_span_us", json_real(s->truth_gpu_us));
                json_object_set_new(gm, "gpu_span_error_pct", json_real(s->error_gpu_pct));
            }
            json_object_set_new(o, "graph_measured", gm);
        }
        json_t *br = json_array();
        for (size_t b = 0; b < s->nbreaks; b++) {
            const gr_pred_break *x = &s->breaks[b];
            json_array_append_new(br, json_pack("{s:s, s:s, s:I, s:f, s:b, s:b}", "kind",
                                                gr_find_kind_name(x->kind), "api", x->api, "count",
                                                (json_int_t)x->count, "per_step", x->per_step,
                                                "in_step", x->in_step, "uncertain", x->uncertain));
        }
        json_object_set_new(o, "breaks", br);
        json_t *fu = json_object();
        json_object_set_new(fu, "estimate", json_true());
        json_object_set_new(fu, "graph_fused_predicted_us",
                            s->nchains ? json_real(s->pred_fused_us) : json_null());
        json_object_set_new(fu, "saved_us_per_step", json_real(s->fused_saved_us));
        json_t *ch = json_array();
        for (size_t k = 0; k < s->nchains; k++) {
            const gr_pred_chain *x = &s->chains[k];
            json_array_append_new(
                ch, json_pack("{s:s, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:s}", "kernels", x->names,
                              "len", x->len, "per_step", x->per_step, "unfused_us", x->unfused_us,
                              "fused_us", x->fused_us, "saved_us_per_step", x->saved_us,
                              "bytes_unfused", x->bytes_unfused, "bytes_fused", x->bytes_fused,
                              "elements", x->elems, "bytes_from",
                              x->from_plan == x->count ? "plan" : x->from_plan ? "mixed" : "assumed"));
        }
        json_object_set_new(fu, "chains", ch);
        json_object_set_new(o, "fusion", fu);
        json_array_append_new(arr, o);
    }
    json_object_set_new(j, "scopes", arr);
    return j;
}
