/* The analysis behind `cupti-launchstat report` and `graphrun run --trace`: one pass of index
 * building (API nesting, correlation maps, graph node resolution, regions), then each scope (the
 * whole trace and every region) computed from its records in start-time order. */
#include "cupti_tools/analysis.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_tools/u64map.h"

void gr_ls_opts_default(gr_ls_opts *o) {
    memset(o, 0, sizeof(*o));
    o->short_gap_us = 10;
    o->top = 15;
}

typedef struct region_def {
    char name[160], variant[64], mode[32];
    int64_t s, e, steps;
    int open_end, from_profiler;
    double traced, untraced;
} region_def;

typedef struct actx {
    const gr_trace *tr;
    const gr_ls_opts *o;
    gr_u64map api_by_corr, ext_by_corr, node_by_id, op_by_tag;
    int32_t *parent; /* per API record: enclosing runtime call, -1 */
    region_def *regions;
    size_t nregions;
    gr_error *err;
} actx;

static gr_status oom(actx *a) {
    gr_error_set(a->err, GR_ERR_NOMEM, a->tr->path, "out of host memory in the analysis");
    return GR_ERR_NOMEM;
}

#define US(ns) ((double)(ns) / 1000.0)

/* ---- index building ---- */

/* A call made inside another traced call on the same thread gets the outermost one as
 * parent, so it is not counted as a second launch. */
static gr_status build_nesting(actx *a) {
    a->parent = malloc((a->tr->api.n + 1) * sizeof(int32_t));
    if (!a->parent || gr_trace_api_outermost(a->tr, a->parent) != 0) return oom(a);
    return GR_OK;
}

static gr_status build_maps(actx *a) {
    const gr_trace *t = a->tr;
    for (size_t i = 0; i < t->api.n; i++) {
        uint32_t c = t->api.v[i].corr;
        if (!c) continue;
        int64_t prev;
        /* a correlation id shared by a runtime call and the driver call inside it: keep the
         * top-level one */
        if (gr_u64map_get(&a->api_by_corr, c, &prev) && a->parent[prev] < 0) continue;
        if (!gr_u64map_put(&a->api_by_corr, c, (int64_t)i)) return oom(a);
    }
    for (size_t i = 0; i < t->ext.n; i++)
        if (!gr_u64map_put_new(&a->ext_by_corr, t->ext.v[i].corr, (int64_t)t->ext.v[i].id) && a->ext_by_corr.oom)
            return oom(a);
    for (size_t i = 0; i < t->node.n; i++) {
        const gr_tr_node *nd = &t->node.v[i];
        int64_t prev;
        if (gr_u64map_get(&a->node_by_id, nd->node, &prev)) {
            /* created and then reported as a clone: the clone knows where it came from */
            if (nd->orig && !t->node.v[prev].orig && !gr_u64map_put(&a->node_by_id, nd->node, (int64_t)i))
                return oom(a);
            continue;
        }
        if (!gr_u64map_put(&a->node_by_id, nd->node, (int64_t)i)) return oom(a);
    }
    for (size_t i = 0; i < t->op.n; i++)
        if (!gr_u64map_put(&a->op_by_tag, t->op.v[i].tag, (int64_t)i)) return oom(a);
    return GR_OK;
}

static int cmp_region(const void *x, const void *y) {
    const region_def *a = x, *b = y;
    return (a->s > b->s) - (a->s < b->s);
}

static gr_status build_regions(actx *a) {
    const gr_trace *t = a->tr;
    if (t->region.n > 0) {
        a->regions = calloc(t->region.n, sizeof(region_def));
        if (!a->regions) return oom(a);
        for (size_t i = 0; i < t->region.n; i++) {
            const gr_tr_region *g = &t->region.v[i];
            region_def *d = &a->regions[a->nregions++];
            snprintf(d->name, sizeof(d->name), "%s", gr_trace_str(t, g->name));
            snprintf(d->variant, sizeof(d->variant), "%s", gr_trace_str(t, g->variant));
            snprintf(d->mode, sizeof(d->mode), "%s", gr_trace_str(t, g->mode));
            d->s = g->s;
            d->e = g->e;
            d->steps = g->steps;
            d->traced = g->traced_step_us;
            d->untraced = g->untraced_step_us;
        }
    } else {
        /* cudaProfilerStart .. cudaProfilerStop ranges (torch.cuda.profiler.start/stop) */
        size_t np = 0;
        size_t *idx = malloc((t->api.n + 1) * sizeof(size_t));
        if (!idx) return oom(a);
        for (size_t i = 0; i < t->api.n; i++)
            if (t->api.v[i].cat == GR_API_PROFILER && a->parent[i] < 0) idx[np++] = i;
        gr_tr_range *r = calloc(np / 2 + 2, sizeof(gr_tr_range));
        a->regions = calloc(np / 2 + 2, sizeof(region_def));
        if (!a->regions || !r) {
            free(r);
            free(idx);
            return oom(a);
        }
        size_t nr = gr_trace_profiler_ranges(t, idx, np, r);
        for (size_t k = 0; k < nr; k++) {
            region_def *d = &a->regions[a->nregions++];
            snprintf(d->name, sizeof(d->name), "profiler range %zu%s", a->nregions,
                     r[k].open_end ? " (no stop)" : "");
            d->s = r[k].s;
            d->e = r[k].e;
            d->open_end = r[k].open_end;
            d->from_profiler = 1;
        }
        free(r);
        free(idx);
    }
    qsort(a->regions, a->nregions, sizeof(region_def), cmp_region);
    return GR_OK;
}

static int region_of(const actx *a, int64_t key) {
    size_t lo = 0, hi = a->nregions;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (a->regions[mid].s <= key) lo = mid + 1;
        else hi = mid;
    }
    /* regions do not normally overlap; look back a few in case they do */
    for (size_t k = lo, n = 0; k > 0 && n < 8; k--, n++)
        if (a->regions[k - 1].s <= key && key <= a->regions[k - 1].e) return (int)(k - 1);
    return -1;
}

static const gr_tr_api *launch_api(const actx *a, uint32_t corr) {
    int64_t i;
    if (!corr || !gr_u64map_get(&a->api_by_corr, corr, &i)) return NULL;
    if (a->parent[i] >= 0) i = a->parent[i];
    return &a->tr->api.v[i];
}

static const gr_tr_node *resolve_node(const actx *a, uint64_t id) {
    int64_t i;
    if (!id || !gr_u64map_get(&a->node_by_id, id, &i)) return NULL;
    const gr_tr_node *n = &a->tr->node.v[i];
    for (int hop = 0; hop < 32 && n->orig; hop++) {
        if (!gr_u64map_get(&a->node_by_id, n->orig, &i)) break;
        n = &a->tr->node.v[i];
    }
    return n;
}

static int is_graph_kernel(const gr_tr_gpu *g) {
    return g->graph != 0 || g->node != 0;
}

/* Op tag of a kernel: eager through external correlation, graph through its node. */
static uint64_t kernel_tag(const actx *a, const gr_tr_gpu *g) {
    if (is_graph_kernel(g)) {
        const gr_tr_node *n = resolve_node(a, g->node);
        return n ? n->tag : 0;
    }
    int64_t id;
    if (g->corr && gr_u64map_get(&a->ext_by_corr, g->corr, &id)) return (uint64_t)id;
    return 0;
}

/* ---- grouped summaries ---- */

/* out[g] = summary of val[i] over i with gid[i] == g (gid < 0 or NaN values skipped). */
static int group_summaries(const int32_t *gid, const double *val, size_t n, size_t ng, gr_summary *out) {
    size_t *off = calloc(ng + 2, sizeof(size_t));
    double *buf = malloc((n + 1) * sizeof(double));
    if (!off || !buf) {
        free(off);
        free(buf);
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        if (gid[i] >= 0 && !isnan(val[i])) off[gid[i] + 1]++;
    for (size_t g = 0; g < ng; g++) off[g + 1] += off[g];
    size_t *pos = malloc((ng + 1) * sizeof(size_t));
    if (!pos) {
        free(off);
        free(buf);
        return 0;
    }
    memcpy(pos, off, (ng + 1) * sizeof(size_t));
    for (size_t i = 0; i < n; i++)
        if (gid[i] >= 0 && !isnan(val[i])) buf[pos[gid[i]]++] = val[i];
    for (size_t g = 0; g < ng; g++) out[g] = gr_summarize(buf + off[g], off[g + 1] - off[g]);
    free(pos);
    free(off);
    free(buf);
    return 1;
}

static gr_summary summarize_list(double *v, size_t n) {
    return gr_summarize(v, n);
}

/* ---- one scope ---- */

static const gr_trace *cmp_trace;
static int cmp_gpu_time(const void *x, const void *y) {
    const gr_tr_gpu *a = &cmp_trace->gpu.v[*(const size_t *)x], *b = &cmp_trace->gpu.v[*(const size_t *)y];
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    return (a->e > b->e) - (a->e < b->e);
}

/* GPU records of a scope split into segments (NVTX instances): by segment, then by time */
typedef struct seg_gpu {
    uint32_t seg;
    size_t gi;
} seg_gpu;

static int cmp_seg_gpu(const void *x, const void *y) {
    const seg_gpu *a = x, *b = y;
    if (a->seg != b->seg) return a->seg < b->seg ? -1 : 1;
    return cmp_gpu_time(&a->gi, &b->gi);
}

static int cmp_kern_row(const void *x, const void *y) {
    const gr_ls_kernel_row *a = x, *b = y;
    return (a->total_us < b->total_us) - (a->total_us > b->total_us);
}

static int cmp_api_row(const void *x, const void *y) {
    const gr_ls_api_row *a = x, *b = y;
    if (a->total_us != b->total_us) return (a->total_us < b->total_us) - (a->total_us > b->total_us);
    return (a->count < b->count) - (a->count > b->count);
}

static int cmp_stream_row(const void *x, const void *y) {
    const gr_ls_stream_row *a = x, *b = y;
    if (a->ctx != b->ctx) return a->ctx < b->ctx ? -1 : 1;
    return (a->stream > b->stream) - (a->stream < b->stream);
}

static int cmp_op_row(const void *x, const void *y) {
    const gr_ls_op_row *a = x, *b = y;
    if (a->variant != b->variant) return a->variant < b->variant ? -1 : 1;
    if (a->index != b->index) return a->index < b->index ? -1 : 1;
    return (a->tag > b->tag) - (a->tag < b->tag);
}

typedef struct stream_state {
    int started;
    int64_t cur_s, cur_e;
} stream_state;

typedef struct launch_state {
    uint32_t corr;
    size_t nodes;
    int64_t min_s, max_e, cur_s, cur_e;
    double busy;
} launch_state;

#define FREE_ALL()                                                                                 \
    do {                                                                                           \
        free(valid);                                                                               \
        free(vseg);                                                                                \
        free(gap);                                                                                 \
        free(vals);                                                                                \
        free(gid);                                                                                 \
        free(sst);                                                                                 \
        free(lst);                                                                                 \
        free(gaps);                                                                                \
        gr_u64map_free(&smap);                                                                     \
        gr_u64map_free(&nmap);                                                                     \
        gr_u64map_free(&lmap);                                                                     \
        gr_u64map_free(&omap);                                                                     \
        gr_u64map_free(&amap);                                                                     \
    } while (0)

/* `gseg` (NULL: one segment): the segment of each GPU record, an NVTX instance. Span, busy,
 * idle and per-stream figures are per segment and summed; a kernel's gap counts only earlier
 * work of its own segment. */
static gr_status scope_compute(actx *a, gr_ls_scope *sc, const size_t *gi, size_t ng,
                               const size_t *ai, size_t na, const uint32_t *gseg) {
    const gr_trace *t = a->tr;
    sc->gpu_idx = malloc((ng + 1) * sizeof(size_t));
    sc->api_idx = malloc((na + 1) * sizeof(size_t));
    if (!sc->gpu_idx || !sc->api_idx) return oom(a);
    memcpy(sc->gpu_idx, gi, ng * sizeof(size_t));
    memcpy(sc->api_idx, ai, na * sizeof(size_t));
    sc->ngpu_idx = ng;
    sc->napi_idx = na;
    const double thr = a->o->short_gap_us;
    size_t *valid = malloc((ng + 1) * sizeof(size_t));
    uint32_t *vseg = calloc(ng + 1, sizeof(uint32_t));
    double *gap = malloc((ng + 1) * sizeof(double));
    double *vals = malloc((ng + na + 1) * sizeof(double));
    int32_t *gid = malloc((ng + na + 1) * sizeof(int32_t));
    stream_state *sst = NULL;
    launch_state *lst = NULL;
    double *gaps = NULL;
    gr_u64map smap, nmap, lmap, omap, amap;
    gr_u64map_init(&smap);
    gr_u64map_init(&nmap);
    gr_u64map_init(&lmap);
    gr_u64map_init(&omap);
    gr_u64map_init(&amap);
    if (!valid || !vseg || !gap || !vals || !gid) {
        FREE_ALL();
        return oom(a);
    }
    size_t nv = 0;
    for (size_t k = 0; k < ng; k++) {
        const gr_tr_gpu *g = &t->gpu.v[gi[k]];
        if (g->kind == GR_GPU_KERNEL) {
            sc->kernels++;
            if (is_graph_kernel(g)) sc->graph_kernels++;
            else sc->eager_kernels++;
        } else if (g->kind == GR_GPU_MEMCPY) {
            sc->memcpys++;
        } else {
            sc->memsets++;
        }
        if (g->incomplete) sc->incomplete++;
        else {
            vseg[nv] = gseg ? gseg[k] : 0;
            valid[nv++] = gi[k];
        }
    }
    cmp_trace = t;
    if (gseg) {
        seg_gpu *sg = malloc((nv + 1) * sizeof(seg_gpu));
        if (!sg) {
            FREE_ALL();
            return oom(a);
        }
        for (size_t k = 0; k < nv; k++)
            sg[k] = (seg_gpu){vseg[k], valid[k]};
        qsort(sg, nv, sizeof(seg_gpu), cmp_seg_gpu);
        for (size_t k = 0; k < nv; k++) {
            vseg[k] = sg[k].seg;
            valid[k] = sg[k].gi;
        }
        free(sg);
    } else {
        qsort(valid, nv, sizeof(size_t), cmp_gpu_time);
    }

    /* overall span, busy, idle holes: per segment, summed */
    if (nv > 0) {
        double span = 0, busy = 0, idle = 0, shrt = 0;
        for (size_t k0 = 0, k1; k0 < nv; k0 = k1) {
            int64_t span_s = t->gpu.v[valid[k0]].s, span_e = t->gpu.v[valid[k0]].e;
            int64_t cs = span_s, ce = span_e;
            for (k1 = k0 + 1; k1 < nv && vseg[k1] == vseg[k0]; k1++) {
                const gr_tr_gpu *g = &t->gpu.v[valid[k1]];
                if (g->e > span_e) span_e = g->e;
                if (g->s > ce) {
                    busy += US(ce - cs);
                    double hole = US(g->s - ce);
                    idle += hole;
                    if (hole < thr) shrt += hole;
                    cs = g->s;
                    ce = g->e;
                } else if (g->e > ce) {
                    ce = g->e;
                }
            }
            busy += US(ce - cs);
            span += US(span_e - span_s);
        }
        sc->busy_us = busy;
        sc->idle_us = idle;
        sc->short_idle_us = shrt;
        sc->gpu_span_us = span;
        sc->idle_frac = sc->gpu_span_us > 0 ? idle / sc->gpu_span_us : 0;
        sc->short_share = idle > 0 ? shrt / idle : 0;
    }

    /* streams: gaps before each op, busy and holes per stream over the scope's span */
    size_t nstreams = 0;
    for (size_t k = 0; k < nv; k++) {
        const gr_tr_gpu *g = &t->gpu.v[valid[k]];
        uint64_t key = ((uint64_t)g->ctx << 32) | g->stream;
        if (gr_u64map_put_new(&smap, key, (int64_t)nstreams)) nstreams++;
        else if (smap.oom) {
            FREE_ALL();
            return oom(a);
        }
    }
    sc->streams = calloc(nstreams + 1, sizeof(gr_ls_stream_row));
    sst = calloc(nstreams + 1, sizeof(stream_state));
    if (!sc->streams || !sst) {
        FREE_ALL();
        return oom(a);
    }
    sc->nstreams = nstreams;
    for (size_t k0 = 0, k1; k0 < nv; k0 = k1) {
        /* one segment: its span, then each stream's work over it (a stream idle all through the
         * segment has the whole span as one hole) */
        int64_t span_s = t->gpu.v[valid[k0]].s, span_e = t->gpu.v[valid[k0]].e;
        for (k1 = k0 + 1; k1 < nv && vseg[k1] == vseg[k0]; k1++)
            if (t->gpu.v[valid[k1]].e > span_e) span_e = t->gpu.v[valid[k1]].e;
        for (size_t r = 0; r < nstreams; r++)
            sst[r].started = 0;
        for (size_t k = k0; k < k1; k++) {
            const gr_tr_gpu *g = &t->gpu.v[valid[k]];
            int64_t r;
            gr_u64map_get(&smap, ((uint64_t)g->ctx << 32) | g->stream, &r);
            gr_ls_stream_row *row = &sc->streams[r];
            stream_state *st = &sst[r];
            row->ctx = g->ctx;
            row->stream = g->stream;
            row->ops++;
            if (g->kind == GR_GPU_KERNEL) row->kernels++;
            gap[k] = NAN;
            if (!st->started) {
                double lead = US(g->s - span_s);
                if (lead > 0) {
                    row->idle_us += lead;
                    if (lead < thr) row->short_idle_us += lead;
                }
                st->started = 1;
                st->cur_s = g->s;
                st->cur_e = g->e;
                continue;
            }
            int64_t d = g->s - st->cur_e;
            gap[k] = d > 0 ? US(d) : 0.0;
            if (g->s > st->cur_e) {
                row->busy_us += US(st->cur_e - st->cur_s);
                double hole = US(g->s - st->cur_e);
                row->idle_us += hole;
                if (hole < thr) row->short_idle_us += hole;
                st->cur_s = g->s;
                st->cur_e = g->e;
            } else if (g->e > st->cur_e) {
                st->cur_e = g->e;
            }
        }
        for (size_t r = 0; r < nstreams; r++) {
            gr_ls_stream_row *row = &sc->streams[r];
            double hole = US(span_e - span_s);
            if (sst[r].started) {
                row->busy_us += US(sst[r].cur_e - sst[r].cur_s);
                hole = US(span_e - sst[r].cur_e);
            }
            if (hole > 0) {
                row->idle_us += hole;
                if (hole < thr) row->short_idle_us += hole;
            }
        }
    }
    /* per-stream gap summaries (kernels only) */
    for (size_t k = 0; k < nv; k++) {
        const gr_tr_gpu *g = &t->gpu.v[valid[k]];
        int64_t r = -1;
        if (g->kind == GR_GPU_KERNEL) gr_u64map_get(&smap, ((uint64_t)g->ctx << 32) | g->stream, &r);
        gid[k] = (int32_t)r;
        vals[k] = gap[k];
    }
    {
        gr_summary *tmp = calloc(nstreams + 1, sizeof(gr_summary));
        if (!tmp || !group_summaries(gid, vals, nv, nstreams, tmp)) {
            free(tmp);
            FREE_ALL();
            return oom(a);
        }
        for (size_t r = 0; r < nstreams; r++) sc->streams[r].gap_us = tmp[r];
        free(tmp);
    }

    /* per kernel: durations, gaps, launch latency, latency timestamps */
    size_t nk = 0;
    double *lat = malloc((nv + 1) * sizeof(double));
    double *que = malloc((nv + 1) * sizeof(double));
    double *sub = malloc((nv + 1) * sizeof(double));
    double *dur = malloc((nv + 1) * sizeof(double));
    double *kg = malloc((nv + 1) * sizeof(double));
    if (!lat || !que || !sub || !dur || !kg) {
        free(lat), free(que), free(sub), free(dur), free(kg);
        FREE_ALL();
        return oom(a);
    }
    size_t nlat = 0, nq = 0, nkg = 0;
    for (size_t k = 0; k < nv; k++) {
        const gr_tr_gpu *g = &t->gpu.v[valid[k]];
        if (g->kind != GR_GPU_KERNEL) continue;
        dur[nk++] = US(g->e - g->s);
        if (!isnan(gap[k])) kg[nkg++] = gap[k];
        if (!is_graph_kernel(g)) {
            const gr_tr_api *x = launch_api(a, g->corr);
            if (x) lat[nlat++] = US(g->s - x->s);
        }
        if (g->q > 0 && g->sub > 0) {
            que[nq] = US(g->sub - g->q);
            sub[nq++] = US(g->s - g->sub);
        }
    }
    for (size_t k = 0; k < ng; k++) {
        const gr_tr_gpu *g = &t->gpu.v[gi[k]];
        if (g->kind == GR_GPU_KERNEL && !is_graph_kernel(g) && !launch_api(a, g->corr)) sc->no_api++;
    }
    sc->dur_us = summarize_list(dur, nk);
    sc->gap_us = summarize_list(kg, nkg);
    sc->latency_us = summarize_list(lat, nlat);
    sc->queued_us = summarize_list(que, nq);
    sc->submit_us = summarize_list(sub, nq);
    free(lat), free(que), free(sub), free(dur), free(kg);

    /* kernel names */
    size_t nnames = 0;
    for (size_t k = 0; k < nv; k++) {
        const gr_tr_gpu *g = &t->gpu.v[valid[k]];
        gid[k] = -1;
        if (g->kind != GR_GPU_KERNEL) continue;
        int64_t r;
        if (!gr_u64map_get(&nmap, (uint64_t)(uint32_t)g->name, &r)) {
            r = (int64_t)nnames++;
            if (!gr_u64map_put(&nmap, (uint64_t)(uint32_t)g->name, r)) {
                FREE_ALL();
                return oom(a);
            }
        }
        gid[k] = (int32_t)r;
    }
    sc->kern = calloc(nnames + 1, sizeof(gr_ls_kernel_row));
    gr_summary *tmp = calloc(nnames + 1, sizeof(gr_summary));
    if (!sc->kern || !tmp) {
        free(tmp);
        FREE_ALL();
        return oom(a);
    }
    sc->nkern = nnames;
    for (size_t k = 0; k < nv; k++) {
        if (gid[k] < 0) continue;
        const gr_tr_gpu *g = &t->gpu.v[valid[k]];
        gr_ls_kernel_row *row = &sc->kern[gid[k]];
        row->name = g->name;
        row->count++;
        vals[k] = US(g->e - g->s);
        row->total_us += vals[k];
    }
    int ok = group_summaries(gid, vals, nv, nnames, tmp);
    for (size_t r = 0; ok && r < nnames; r++) sc->kern[r].dur_us = tmp[r];
    ok = ok && group_summaries(gid, gap, nv, nnames, tmp);
    for (size_t r = 0; ok && r < nnames; r++) sc->kern[r].gap_us = tmp[r];
    free(tmp);
    if (!ok) {
        FREE_ALL();
        return oom(a);
    }
    qsort(sc->kern, sc->nkern, sizeof(gr_ls_kernel_row), cmp_kern_row);

    /* workload ops (graphrun traces) */
    size_t nops = 0;
    for (size_t k = 0; k < nv; k++) {
        const gr_tr_gpu *g = &t->gpu.v[valid[k]];
        gid[k] = -1;
        if (g->kind != GR_GPU_KERNEL) continue;
        uint64_t tag = kernel_tag(a, g);
        int64_t oi;
        if (!tag || !gr_u64map_get(&a->op_by_tag, tag, &oi)) continue;
        int64_t r;
        if (!gr_u64map_get(&omap, tag, &r)) {
            r = (int64_t)nops++;
            if (!gr_u64map_put(&omap, tag, r)) {
                FREE_ALL();
                return oom(a);
            }
        }
        gid[k] = (int32_t)r;
        sc->kernels_with_op++;
    }
    sc->ops = calloc(nops + 1, sizeof(gr_ls_op_row));
    tmp = calloc(nops + 1, sizeof(gr_summary));
    if (!sc->ops || !tmp) {
        free(tmp);
        FREE_ALL();
        return oom(a);
    }
    sc->nops = nops;
    for (size_t k = 0; k < nv; k++) {
        if (gid[k] < 0) continue;
        const gr_tr_gpu *g = &t->gpu.v[valid[k]];
        gr_ls_op_row *row = &sc->ops[gid[k]];
        uint64_t tag = kernel_tag(a, g);
        int64_t oi = 0;
        gr_u64map_get(&a->op_by_tag, tag, &oi);
        const gr_tr_op *op = &t->op.v[oi];
        row->tag = tag;
        row->name = op->name;
        row->kernel = op->kernel;
        row->variant = op->variant;
        row->index = op->index;
        if (is_graph_kernel(g)) row->graph++;
        else row->eager++;
        vals[k] = US(g->e - g->s);
        row->total_us += vals[k];
    }
    if (!group_summaries(gid, vals, nv, nops, tmp)) {
        free(tmp);
        FREE_ALL();
        return oom(a);
    }
    for (size_t r = 0; r < nops; r++) sc->ops[r].dur_us = tmp[r];
    free(tmp);
    qsort(sc->ops, sc->nops, sizeof(gr_ls_op_row), cmp_op_row);

    /* graph launches: kernels grouped by the launch's correlation id, in start order */
    size_t nl = 0;
    for (size_t k = 0; k < nv; k++) {
        const gr_tr_gpu *g = &t->gpu.v[valid[k]];
        if (g->kind != GR_GPU_KERNEL || !is_graph_kernel(g)) continue;
        if (gr_u64map_put_new(&lmap, g->corr, (int64_t)nl)) nl++;
        else if (lmap.oom) {
            FREE_ALL();
            return oom(a);
        }
    }
    lst = calloc(nl + 1, sizeof(launch_state));
    gaps = malloc((sc->graph_kernels + 1) * sizeof(double));
    if (!lst || !gaps) {
        FREE_ALL();
        return oom(a);
    }
    size_t ngaps = 0;
    gr_ls_graph *gs = &sc->graph;
    for (size_t k = 0; k < nv; k++) {
        const gr_tr_gpu *g = &t->gpu.v[valid[k]];
        if (g->kind != GR_GPU_KERNEL || !is_graph_kernel(g)) continue;
        int64_t r;
        gr_u64map_get(&lmap, g->corr, &r);
        launch_state *L = &lst[r];
        gs->node_kernels++;
        const gr_tr_node *nd = resolve_node(a, g->node);
        if (nd && nd->api >= 0 && gr_trace_str(t, nd->api)[0]) gs->mapped_api++;
        int64_t oi;
        if (nd && nd->tag && gr_u64map_get(&a->op_by_tag, nd->tag, &oi)) gs->mapped_op++;
        if (L->nodes == 0) {
            L->corr = g->corr;
            L->min_s = L->cur_s = g->s;
            L->max_e = L->cur_e = g->e;
        } else {
            int64_t d = g->s - L->cur_e;
            gaps[ngaps++] = d > 0 ? US(d) : 0.0;
            if (g->s > L->cur_e) {
                L->busy += US(L->cur_e - L->cur_s);
                L->cur_s = g->s;
                L->cur_e = g->e;
            } else if (g->e > L->cur_e) {
                L->cur_e = g->e;
            }
            if (g->e > L->max_e) L->max_e = g->e;
        }
        L->nodes++;
    }
    gs->launches = nl;
    gs->gaps = ngaps;
    for (size_t i = 0; i < ngaps; i++) gs->gap_total_us += gaps[i];
    gs->gap_us = summarize_list(gaps, ngaps);
    {
        double *nodes = malloc((nl + 1) * sizeof(double)), *span = malloc((nl + 1) * sizeof(double));
        double *busy = malloc((nl + 1) * sizeof(double)), *host = malloc((nl + 1) * sizeof(double));
        double *first = malloc((nl + 1) * sizeof(double));
        if (!nodes || !span || !busy || !host || !first) {
            free(nodes), free(span), free(busy), free(host), free(first);
            FREE_ALL();
            return oom(a);
        }
        size_t nh = 0;
        for (size_t r = 0; r < nl; r++) {
            launch_state *L = &lst[r];
            L->busy += US(L->cur_e - L->cur_s);
            nodes[r] = (double)L->nodes;
            span[r] = US(L->max_e - L->min_s);
            busy[r] = L->busy;
            const gr_tr_api *x = launch_api(a, L->corr);
            if (x) {
                host[nh] = US(x->e - x->s);
                first[nh++] = US(L->min_s - x->s);
            }
        }
        gs->nodes = summarize_list(nodes, nl);
        gs->span_us = summarize_list(span, nl);
        gs->busy_us = summarize_list(busy, nl);
        gs->host_us = summarize_list(host, nh);
        gs->first_latency_us = summarize_list(first, nh);
        free(nodes), free(span), free(busy), free(host), free(first);
    }

    /* API calls: rows per (domain, name); host time of top-level calls */
    size_t nrows = 0;
    for (size_t k = 0; k < na; k++) {
        const gr_tr_api *x = &t->api.v[ai[k]];
        uint64_t key = ((uint64_t)x->driver << 32) | (uint32_t)x->name;
        int64_t r;
        if (!gr_u64map_get(&amap, key, &r)) {
            r = (int64_t)nrows++;
            if (!gr_u64map_put(&amap, key, r)) {
                FREE_ALL();
                return oom(a);
            }
        }
        gid[k] = (int32_t)r;
    }
    sc->api = calloc(nrows + 1, sizeof(gr_ls_api_row));
    gr_summary *top = calloc(nrows + 1, sizeof(gr_summary)), *nest = calloc(nrows + 1, sizeof(gr_summary));
    double *lh = malloc((na + 1) * sizeof(double));
    int32_t *gnest = malloc((na + 1) * sizeof(int32_t));
    if (!sc->api || !top || !nest || !lh || !gnest) {
        free(top), free(nest), free(lh), free(gnest);
        FREE_ALL();
        return oom(a);
    }
    sc->napi = nrows;
    size_t nlh = 0;
    for (size_t k = 0; k < na; k++) {
        const gr_tr_api *x = &t->api.v[ai[k]];
        gr_ls_api_row *row = &sc->api[gid[k]];
        row->name = x->name;
        row->driver = x->driver;
        row->cat = x->cat;
        vals[k] = US(x->e - x->s);
        gnest[k] = -1;
        if (a->parent[ai[k]] >= 0) {
            row->nested++;
            gnest[k] = gid[k];
            gid[k] = -1;
            continue;
        }
        row->count++;
        row->total_us += vals[k];
        sc->api_calls++;
        if (x->cat == GR_API_LAUNCH) {
            sc->launch_calls++;
            lh[nlh++] = vals[k];
        }
        if (x->cat == GR_API_GRAPH_LAUNCH) sc->graph_launch_calls++;
    }
    ok = group_summaries(gid, vals, na, nrows, top) && group_summaries(gnest, vals, na, nrows, nest);
    for (size_t r = 0; ok && r < nrows; r++) {
        sc->api[r].host_us = sc->api[r].count ? top[r] : nest[r];
        if (!sc->api[r].count) sc->api[r].total_us = nest[r].mean * (double)nest[r].n;
    }
    sc->launch_host_us = summarize_list(lh, nlh);
    free(top), free(nest), free(lh), free(gnest);
    if (!ok) {
        FREE_ALL();
        return oom(a);
    }
    qsort(sc->api, sc->napi, sizeof(gr_ls_api_row), cmp_api_row);
    qsort(sc->streams, sc->nstreams, sizeof(gr_ls_stream_row), cmp_stream_row);
    FREE_ALL();
    return GR_OK;
}

static void scope_free(gr_ls_scope *s) {
    free(s->gpu_idx);
    free(s->api_idx);
    free(s->api);
    free(s->kern);
    free(s->streams);
    free(s->ops);
}

static void set_steps(actx *a, gr_ls_scope *sc, int64_t region_steps, int has_regions) {
    const gr_trace *t = a->tr;
    sc->steps = 0;
    sc->steps_from = "";
    if (region_steps > 0) {
        sc->steps = region_steps;
        sc->steps_from = "region";
    } else if (a->o->steps > 0) {
        sc->steps = a->o->steps;
        sc->steps_from = "--steps";
    } else if (t->steps > 0 && (sc->is_region || !has_regions)) {
        sc->steps = t->steps;
        sc->steps_from = "header";
    }
    if (sc->steps > 0) {
        double span = sc->has_host_span ? sc->host_span_us : sc->gpu_span_us;
        sc->step_us = span / (double)sc->steps;
    }
}

/* ---- NVTX range scopes ---- */

size_t gr_ls_nvtx_key(const char *name, char *out, size_t size) {
    static const char *const deco[] = {
        ", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = ", NULL};
    if (!size) return 0;
    if (!name) name = "";
    size_t n = strlen(name);
    for (const char *const *d = deco; *d; d++) {
        const char *p = strstr(name, *d);
        if (p && (size_t)(p - name) < n) n = (size_t)(p - name);
    }
    size_t k = n;
    while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
        k--;
    int numbered = k < n && k > 0 && strchr(" _-:#=/.", name[k - 1]) != NULL;
    if (n == 0) return (size_t)snprintf(out, size, "(unnamed)");
    int w = numbered ? snprintf(out, size, "%.*s#", (int)k, name)
                     : snprintf(out, size, "%.*s", (int)n, name);
    return w < 0 ? 0 : (size_t)w < size ? (size_t)w : size - 1;
}

typedef struct nv_scope {
    char key[160];
    int32_t dom;
    size_t first; /* earliest instance (range index) */
    int64_t first_s;
} nv_scope;

typedef struct nv_work {
    const gr_trace *tr;
    nv_scope *sc;
    size_t nsc, capsc;
    uint32_t *sid;   /* per range: its scope */
    int32_t *inst;   /* per range: the instance it belongs to (itself when it is one) */
    int64_t *inst_e; /* per instance range: where the instance ends (start/end ranges merged) */
    uint32_t *ord;   /* per instance range: its number among its scope's instances, by start */
} nv_work;

static void nv_work_free(nv_work *w) {
    free(w->sc);
    free(w->sid);
    free(w->inst);
    free(w->inst_e);
    free(w->ord);
}

/* by (scope, start): instance numbering and start/end merging */
typedef struct nv_key {
    uint32_t sid;
    int64_t s, e;
    int32_t idx;
} nv_key;

static int cmp_nv_key(const void *x, const void *y) {
    const nv_key *a = x, *b = y;
    if (a->sid != b->sid) return a->sid < b->sid ? -1 : 1;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Scope of every range (name key + domain), and the instance it belongs to. */
static gr_status nv_scopes(actx *a, nv_work *w) {
    const gr_trace *t = a->tr;
    size_t n = t->nvtx.n;
    gr_u64map byhash;
    gr_u64map_init(&byhash);
    w->sid = malloc((n + 1) * sizeof(uint32_t));
    w->inst = malloc((n + 1) * sizeof(int32_t));
    w->inst_e = malloc((n + 1) * sizeof(int64_t));
    w->ord = calloc(n + 1, sizeof(uint32_t));
    nv_key *k = malloc((n + 1) * sizeof(nv_key));
    if (!w->sid || !w->inst || !w->inst_e || !w->ord || !k) {
        free(k);
        return oom(a);
    }
    int failed = 0;
    for (size_t i = 0; i < n && !failed; i++) {
        const gr_tr_nvtx *x = &t->nvtx.v[i];
        char key[160];
        gr_ls_nvtx_key(gr_trace_str(t, x->name), key, sizeof(key));
        uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uint32_t)x->dom;
        for (const unsigned char *p = (const unsigned char *)key; *p; p++)
            h = (h ^ *p) * 1099511628211ULL;
        int64_t sidv = -1;
        for (;; h++) { /* open addressing over the hash: a collision tries the next value */
            if (!gr_u64map_get(&byhash, h, &sidv)) {
                sidv = -1;
                break;
            }
            if (w->sc[sidv].dom == x->dom && !strcmp(w->sc[sidv].key, key)) break;
        }
        if (sidv < 0) {
            if (w->nsc == w->capsc) {
                size_t cap = w->capsc ? 2 * w->capsc : 64;
                nv_scope *g = realloc(w->sc, cap * sizeof(nv_scope));
                if (!g) {
                    failed = 1;
                    break;
                }
                w->sc = g;
                w->capsc = cap;
            }
            sidv = (int64_t)w->nsc++;
            nv_scope *d = &w->sc[sidv];
            snprintf(d->key, sizeof(d->key), "%s", key);
            d->dom = x->dom;
            d->first = i;
            d->first_s = x->s;
            if (!gr_u64map_put(&byhash, h, sidv)) {
                failed = 1;
                break;
            }
        }
        w->sid[i] = (uint32_t)sidv;
        w->inst[i] = (int32_t)i;
        w->inst_e[i] = x->e;
    }
    gr_u64map_free(&byhash);
    if (failed) {
        free(k);
        return oom(a);
    }
    /* push/pop: the outermost range of the same scope around it on its thread and domain */
    for (size_t i = 0; i < n; i++) {
        if (t->nvtx.v[i].start_end) continue;
        int hops = 0;
        for (int32_t p = t->nvtx.v[i].parent; p >= 0 && hops < 1 << 16;
             p = t->nvtx.v[p].parent, hops++)
            if (w->sid[p] == w->sid[i]) w->inst[i] = p;
    }
    /* start/end ranges of one scope that overlap are one instance (their union) */
    size_t nk = 0;
    for (size_t i = 0; i < n; i++)
        if (t->nvtx.v[i].start_end)
            k[nk++] = (nv_key){w->sid[i], t->nvtx.v[i].s, t->nvtx.v[i].e, (int32_t)i};
    qsort(k, nk, sizeof(nv_key), cmp_nv_key);
    for (size_t j = 0, head = 0; j < nk; j++) {
        if (j > 0 && k[j].sid == k[head].sid && k[j].s <= w->inst_e[k[head].idx]) {
            w->inst[k[j].idx] = k[head].idx;
            if (k[j].e > w->inst_e[k[head].idx]) w->inst_e[k[head].idx] = k[j].e;
        } else {
            head = j;
        }
    }
    /* instances numbered by start within their scope */
    nk = 0;
    for (size_t i = 0; i < n; i++)
        if (w->inst[i] == (int32_t)i)
            k[nk++] = (nv_key){w->sid[i], t->nvtx.v[i].s, w->inst_e[i], (int32_t)i};
    qsort(k, nk, sizeof(nv_key), cmp_nv_key);
    for (size_t j = 0, no = 0; j < nk; j++) {
        no = j > 0 && k[j].sid == k[j - 1].sid ? no + 1 : 0;
        w->ord[k[j].idx] = (uint32_t)no;
        if (no == 0) {
            w->sc[k[j].sid].first = (size_t)k[j].idx;
            w->sc[k[j].sid].first_s = k[j].s;
        }
    }
    free(k);
    return GR_OK;
}

/* One record's place in time: the thread and entry of its top-level API call. */
typedef struct nv_query {
    int64_t t;
    uint32_t tid;
    uint8_t gpu;
    size_t rec;
} nv_query;

static int cmp_nv_query(const void *x, const void *y) {
    const nv_query *a = x, *b = y;
    return (a->t > b->t) - (a->t < b->t);
}

typedef struct nv_member {
    uint32_t sid, seg;
    size_t rec;
} nv_member;

typedef struct nv_list {
    nv_member *v;
    size_t n, cap;
} nv_list;

static int nv_list_add(nv_list *l, nv_member m) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 1024;
        nv_member *g = realloc(l->v, cap * sizeof(nv_member));
        if (!g) return 0;
        l->v = g;
        l->cap = cap;
    }
    l->v[l->n++] = m;
    return 1;
}

/* the ranges open now: one set per thread for push/pop ranges, one for start/end ranges */
typedef struct nv_set {
    int32_t *v;
    size_t n, cap;
} nv_set;

static int nv_set_add(nv_set *s, int32_t x) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        int32_t *g = realloc(s->v, cap * sizeof(int32_t));
        if (!g) return 0;
        s->v = g;
        s->cap = cap;
    }
    s->v[s->n++] = x;
    return 1;
}

static int cmp_i64_pair(const void *x, const void *y) {
    const int64_t *a = x, *b = y;
    if (a[0] != b[0]) return a[0] < b[0] ? -1 : 1;
    return (a[1] > b[1]) - (a[1] < b[1]);
}

/* Every record (API calls by their top-level call, GPU work by its launching call) into the
 * scopes of the ranges open on its thread when that call entered: a sweep over time. */
static gr_status nv_assign(actx *a, nv_work *w, nv_list *ml, nv_list *mlg, size_t *unattributed) {
    const gr_trace *t = a->tr;
    size_t n = t->nvtx.n, nq = 0;
    nv_query *q = malloc((t->api.n + t->gpu.n + 1) * sizeof(nv_query));
    int64_t *starts = malloc((n + 1) * 2 * sizeof(int64_t)),
            *ends = malloc((n + 1) * 2 * sizeof(int64_t));
    size_t *seen_at = calloc(w->nsc + 1, sizeof(size_t));
    nv_set *sets = NULL, global = {NULL, 0, 0};
    size_t nsets = 0, capsets = 0;
    gr_u64map slot;
    gr_u64map_init(&slot);
    gr_status st = GR_OK;
    if (!q || !starts || !ends || !seen_at) st = oom(a);
    for (size_t i = 0; st == GR_OK && i < t->api.n; i++) {
        const gr_tr_api *x = a->parent[i] >= 0 ? &t->api.v[a->parent[i]] : &t->api.v[i];
        q[nq++] = (nv_query){x->s, x->tid, 0, i};
    }
    for (size_t i = 0; st == GR_OK && i < t->gpu.n; i++) {
        const gr_tr_api *x = launch_api(a, t->gpu.v[i].corr);
        if (!x) {
            (*unattributed)++;
            continue;
        }
        q[nq++] = (nv_query){x->s, x->tid, 1, i};
    }
    if (st == GR_OK) {
        qsort(q, nq, sizeof(nv_query), cmp_nv_query);
        for (size_t i = 0; i < n; i++) {
            starts[2 * i] = t->nvtx.v[i].s;
            starts[2 * i + 1] = (int64_t)i;
            ends[2 * i] = t->nvtx.v[i].e;
            ends[2 * i + 1] = (int64_t)i;
        }
        qsort(starts, n, 2 * sizeof(int64_t), cmp_i64_pair);
        qsort(ends, n, 2 * sizeof(int64_t), cmp_i64_pair);
        for (size_t c = 0; c <= w->nsc; c++)
            seen_at[c] = SIZE_MAX;
    }
    size_t si = 0, ei = 0;
    for (size_t j = 0; st == GR_OK && j < nq; j++) {
        const nv_query *x = &q[j];
        /* open what started by now, close what ended before now (bounds are inclusive) */
        for (; si < n && starts[2 * si] <= x->t && st == GR_OK; si++) {
            int32_t r = (int32_t)starts[2 * si + 1];
            const gr_tr_nvtx *g = &t->nvtx.v[r];
            nv_set *s = &global;
            if (!g->start_end) {
                int64_t k;
                if (!gr_u64map_get(&slot, g->tid, &k)) {
                    if (nsets == capsets) {
                        size_t cap = capsets ? 2 * capsets : 16;
                        nv_set *gs = realloc(sets, cap * sizeof(nv_set));
                        if (!gs) {
                            st = oom(a);
                            break;
                        }
                        sets = gs;
                        capsets = cap;
                    }
                    sets[nsets] = (nv_set){NULL, 0, 0};
                    k = (int64_t)nsets++;
                    if (!gr_u64map_put(&slot, g->tid, k)) {
                        st = oom(a);
                        break;
                    }
                }
                s = &sets[k];
            }
            if (!nv_set_add(s, r)) st = oom(a);
        }
        for (; ei < n && ends[2 * ei] < x->t && st == GR_OK; ei++) {
            int32_t r = (int32_t)ends[2 * ei + 1];
            const gr_tr_nvtx *g = &t->nvtx.v[r];
            nv_set *s = &global;
            int64_t k;
            if (!g->start_end) {
                if (!gr_u64map_get(&slot, g->tid, &k)) continue; /* not opened yet: never will be */
                s = &sets[k];
            }
            for (size_t m = 0; m < s->n; m++)
                if (s->v[m] == r) {
                    s->v[m] = s->v[--s->n];
                    break;
                }
        }
        if (st != GR_OK) break;
        int64_t k;
        nv_set *mine = gr_u64map_get(&slot, x->tid, &k) ? &sets[k] : NULL;
        for (int pass = 0; pass < 2; pass++) {
            const nv_set *s = pass == 0 ? mine : &global;
            for (size_t m = 0; s && m < s->n; m++) {
                int32_t r = s->v[m];
                uint32_t sid = w->sid[r];
                if (seen_at[sid] == j) continue; /* one scope, one count */
                seen_at[sid] = j;
                nv_member mem = {sid, w->ord[w->inst[r]], x->rec};
                if (!nv_list_add(x->gpu ? mlg : ml, mem)) {
                    st = oom(a);
                    break;
                }
            }
        }
    }
    for (size_t i = 0; i < nsets; i++)
        free(sets[i].v);
    free(sets);
    free(global.v);
    gr_u64map_free(&slot);
    free(q);
    free(starts);
    free(ends);
    free(seen_at);
    return st;
}

static int cmp_nvtx_scope(const void *x, const void *y) {
    const gr_ls_scope *a = x, *b = y;
    if (a->host_span_us != b->host_span_us) return a->host_span_us < b->host_span_us ? 1 : -1;
    return strcmp(a->name, b->name);
}

/* "outer > inner": the keys of the ranges around range i */
static void nv_path(const nv_work *w, const gr_trace *t, size_t i, char *out, size_t size) {
    int32_t chain[64];
    int nc = 0;
    for (int32_t p = t->nvtx.v[i].parent; p >= 0 && nc < 64; p = t->nvtx.v[p].parent)
        chain[nc++] = p;
    size_t o = 0;
    out[0] = '\0';
    for (int c = nc - 1; c >= 0 && o + 1 < size; c--) {
        int wr = snprintf(out + o, size - o, "%s%s", c == nc - 1 ? "" : " > ",
                          w->sc[w->sid[chain[c]]].key);
        if (wr < 0) break;
        o += (size_t)wr;
    }
}

static gr_status build_nvtx_scopes(actx *a, gr_ls_report *r) {
    const gr_trace *t = a->tr;
    if (t->nvtx.n == 0) return GR_OK;
    nv_work w;
    memset(&w, 0, sizeof(w));
    w.tr = t;
    nv_list ml = {NULL, 0, 0}, mlg = {NULL, 0, 0};
    size_t *aoff = NULL, *goff = NULL, *aidx = NULL, *gidx = NULL;
    uint32_t *gseg = NULL;
    double *dur = NULL;
    gr_u64map seen;
    gr_u64map_init(&seen);
    gr_status st = nv_scopes(a, &w);
    if (st == GR_OK) st = nv_assign(a, &w, &ml, &mlg, &r->nvtx_unattributed);
    size_t ns = w.nsc;
    if (st == GR_OK) {
        r->nvtx = calloc(ns + 1, sizeof(gr_ls_scope));
        aoff = calloc(ns + 2, sizeof(size_t));
        goff = calloc(ns + 2, sizeof(size_t));
        aidx = malloc((ml.n + 1) * sizeof(size_t));
        gidx = malloc((mlg.n + 1) * sizeof(size_t));
        gseg = malloc((mlg.n + 1) * sizeof(uint32_t));
        dur = malloc((t->nvtx.n + 1) * sizeof(double));
        if (!r->nvtx || !aoff || !goff || !aidx || !gidx || !gseg || !dur) st = oom(a);
    }
    if (st == GR_OK) {
        /* members by scope (counting sort; records keep their order) */
        for (size_t i = 0; i < ml.n; i++)
            aoff[ml.v[i].sid + 1]++;
        for (size_t i = 0; i < mlg.n; i++)
            goff[mlg.v[i].sid + 1]++;
        for (size_t c = 0; c < ns; c++) {
            aoff[c + 1] += aoff[c];
            goff[c + 1] += goff[c];
        }
        for (size_t i = 0; i < ml.n; i++)
            aidx[aoff[ml.v[i].sid]++] = ml.v[i].rec;
        for (size_t i = 0; i < mlg.n; i++) {
            size_t p = goff[mlg.v[i].sid]++;
            gidx[p] = mlg.v[i].rec;
            gseg[p] = mlg.v[i].seg;
        }
        for (size_t c = ns; c > 0; c--) {
            aoff[c] = aoff[c - 1];
            goff[c] = goff[c - 1];
        }
        aoff[0] = goff[0] = 0;
    }
    for (size_t c = 0; st == GR_OK && c < ns; c++) {
        gr_ls_scope *sc = &r->nvtx[c];
        const nv_scope *d = &w.sc[c];
        const char *dom = gr_trace_str(t, d->dom);
        sc->is_nvtx = 1;
        snprintf(sc->key, sizeof(sc->key), "%s", d->key);
        snprintf(sc->domain, sizeof(sc->domain), "%s", dom);
        if (dom[0])
            snprintf(sc->name, sizeof(sc->name), "%s: %s", dom, d->key);
        else
            snprintf(sc->name, sizeof(sc->name), "%s", d->key);
        nv_path(&w, t, d->first, sc->parent_path, sizeof(sc->parent_path));
        r->nnvtx = c + 1;
        st = scope_compute(a, sc, gidx + goff[c], goff[c + 1] - goff[c], aidx + aoff[c],
                           aoff[c + 1] - aoff[c], gseg + goff[c]);
        sc->depth = INT32_MAX;
    }
    /* instances, their host time, nesting, threads and names, per scope */
    size_t *ndur = calloc(ns + 1, sizeof(size_t));
    if (st == GR_OK && !ndur) st = oom(a);
    for (size_t i = 0; st == GR_OK && i < t->nvtx.n; i++) {
        const gr_tr_nvtx *x = &t->nvtx.v[i];
        gr_ls_scope *sc = &r->nvtx[w.sid[i]];
        if (x->depth < sc->depth) sc->depth = x->depth;
        if (w.inst[i] != (int32_t)i) {
            sc->nested_ranges++;
            continue;
        }
        sc->instances++;
        if (x->open) sc->open_instances++;
        sc->host_span_us += US(w.inst_e[i] - x->s);
        if (gr_u64map_put_new(&seen, ((uint64_t)w.sid[i] << 32) | x->tid, 0))
            sc->threads++;
        else if (seen.oom)
            st = oom(a);
    }
    /* distinct names (a second map: thread ids and name indexes would collide in one) */
    gr_u64map names;
    gr_u64map_init(&names);
    for (size_t i = 0; st == GR_OK && i < t->nvtx.n; i++) {
        uint64_t kn = ((uint64_t)w.sid[i] << 32) | (uint32_t)t->nvtx.v[i].name;
        if (gr_u64map_put_new(&names, kn, 0))
            r->nvtx[w.sid[i]].raw_names++;
        else if (names.oom)
            st = oom(a);
    }
    gr_u64map_free(&names);
    if (st == GR_OK) {
        /* instance durations grouped by scope */
        size_t *off = calloc(ns + 2, sizeof(size_t));
        if (!off) st = oom(a);
        for (size_t i = 0; st == GR_OK && i < t->nvtx.n; i++)
            if (w.inst[i] == (int32_t)i) off[w.sid[i] + 1]++;
        for (size_t c = 0; st == GR_OK && c < ns; c++)
            off[c + 1] += off[c];
        for (size_t i = 0; st == GR_OK && i < t->nvtx.n; i++)
            if (w.inst[i] == (int32_t)i)
                dur[off[w.sid[i]] + ndur[w.sid[i]]++] = US(w.inst_e[i] - t->nvtx.v[i].s);
        for (size_t c = 0; st == GR_OK && c < ns; c++) {
            gr_ls_scope *sc = &r->nvtx[c];
            sc->instance_us = gr_summarize(dur + off[c], off[c + 1] - off[c]);
            if (sc->depth == INT32_MAX) sc->depth = 0;
            sc->has_host_span = 1;
            sc->steps_from = "";
            if (a->o->steps > 0) {
                sc->steps = a->o->steps;
                sc->steps_from = "--steps";
            } else {
                sc->steps = (int64_t)sc->instances;
                sc->steps_from = "instances";
            }
            sc->step_us = sc->steps > 0 ? sc->host_span_us / (double)sc->steps : 0;
        }
        free(off);
    }
    free(ndur);
    if (st == GR_OK) qsort(r->nvtx, r->nnvtx, sizeof(gr_ls_scope), cmp_nvtx_scope);
    gr_u64map_free(&seen);
    free(ml.v);
    free(mlg.v);
    free(aoff);
    free(goff);
    free(aidx);
    free(gidx);
    free(gseg);
    free(dur);
    nv_work_free(&w);
    return st;
}

gr_status gr_ls_analyze(const gr_trace *tr, const gr_ls_opts *o, gr_ls_report **out, gr_error *err) {
    *out = NULL;
    gr_ls_opts defaults;
    if (!o) {
        gr_ls_opts_default(&defaults);
        o = &defaults;
    }
    gr_ls_report *r = calloc(1, sizeof(*r));
    if (!r) return gr_error_set(err, GR_ERR_NOMEM, tr->path, "out of host memory in the analysis");
    r->tr = tr;
    r->opts = *o;
    actx a;
    memset(&a, 0, sizeof(a));
    a.tr = tr;
    a.o = &r->opts;
    a.err = err;
    gr_u64map_init(&a.api_by_corr);
    gr_u64map_init(&a.ext_by_corr);
    gr_u64map_init(&a.node_by_id);
    gr_u64map_init(&a.op_by_tag);
    size_t *gi = NULL, *ai = NULL, *goff = NULL, *aoff = NULL, *gsorted = NULL, *asorted = NULL;
    int32_t *greg = NULL, *areg = NULL;
    gr_status st = build_nesting(&a);
    if (st == GR_OK) st = build_maps(&a);
    if (st == GR_OK) st = build_regions(&a);
    for (size_t i = 0; st == GR_OK && i < tr->api.n; i++)
        if (a.parent[i] >= 0) r->nested_api++;
    /* the whole trace */
    size_t ngpu = tr->gpu.n, napi = tr->api.n;
    if (st == GR_OK) {
        gi = malloc((ngpu + 1) * sizeof(size_t));
        ai = malloc((napi + 1) * sizeof(size_t));
        if (!gi || !ai) st = oom(&a);
    }
    if (st == GR_OK) {
        for (size_t i = 0; i < ngpu; i++) gi[i] = i;
        for (size_t i = 0; i < napi; i++) ai[i] = i;
        snprintf(r->all.name, sizeof(r->all.name), "whole trace");
        st = scope_compute(&a, &r->all, gi, ngpu, ai, napi, NULL);
        if (st == GR_OK) set_steps(&a, &r->all, 0, a.nregions > 0);
    }
    /* regions: bucket every record by the region of its (launching) API call's entry */
    if (st == GR_OK && a.nregions > 0) {
        r->regions = calloc(a.nregions, sizeof(gr_ls_scope));
        greg = malloc((ngpu + 1) * sizeof(int32_t));
        areg = malloc((napi + 1) * sizeof(int32_t));
        goff = calloc(a.nregions + 2, sizeof(size_t));
        aoff = calloc(a.nregions + 2, sizeof(size_t));
        gsorted = malloc((ngpu + 1) * sizeof(size_t));
        asorted = malloc((napi + 1) * sizeof(size_t));
        if (!r->regions || !greg || !areg || !goff || !aoff || !gsorted || !asorted) st = oom(&a);
    }
    if (st == GR_OK && a.nregions > 0) {
        r->nregions = a.nregions;
        for (size_t i = 0; i < ngpu; i++) {
            const gr_tr_gpu *g = &tr->gpu.v[i];
            const gr_tr_api *x = launch_api(&a, g->corr);
            greg[i] = region_of(&a, x ? x->s : g->s);
            if (greg[i] >= 0) goff[greg[i] + 1]++;
        }
        for (size_t i = 0; i < napi; i++) {
            const gr_tr_api *x = &tr->api.v[i];
            /* a nested call belongs where its runtime call does */
            const gr_tr_api *top = a.parent[i] >= 0 ? &tr->api.v[a.parent[i]] : x;
            areg[i] = region_of(&a, top->s);
            if (areg[i] >= 0) aoff[areg[i] + 1]++;
        }
        for (size_t k = 0; k < a.nregions; k++) {
            goff[k + 1] += goff[k];
            aoff[k + 1] += aoff[k];
        }
        size_t *gp = calloc(a.nregions + 1, sizeof(size_t)), *ap = calloc(a.nregions + 1, sizeof(size_t));
        if (!gp || !ap) {
            free(gp);
            free(ap);
            st = oom(&a);
        } else {
            memcpy(gp, goff, a.nregions * sizeof(size_t));
            memcpy(ap, aoff, a.nregions * sizeof(size_t));
            for (size_t i = 0; i < ngpu; i++)
                if (greg[i] >= 0) gsorted[gp[greg[i]]++] = i;
            for (size_t i = 0; i < napi; i++)
                if (areg[i] >= 0) asorted[ap[areg[i]]++] = i;
            free(gp);
            free(ap);
        }
        for (size_t k = 0; st == GR_OK && k < a.nregions; k++) {
            const region_def *d = &a.regions[k];
            gr_ls_scope *sc = &r->regions[k];
            snprintf(sc->name, sizeof(sc->name), "%s", d->name);
            snprintf(sc->variant, sizeof(sc->variant), "%s", d->variant);
            snprintf(sc->mode, sizeof(sc->mode), "%s", d->mode);
            sc->is_region = 1;
            sc->from_profiler = d->from_profiler;
            sc->traced_event_step_us = d->traced;
            sc->untraced_step_us = d->untraced;
            st = scope_compute(&a, sc, gsorted + goff[k], goff[k + 1] - goff[k], asorted + aoff[k],
                               aoff[k + 1] - aoff[k], NULL);
            if (st != GR_OK) break;
            if (!d->open_end) {
                sc->has_host_span = 1;
                sc->host_span_us = US(d->e - d->s);
            }
            set_steps(&a, sc, d->steps, 1);
        }
    }
    if (st == GR_OK) st = build_nvtx_scopes(&a, r);
    /* CUPTI's own overhead */
    if (st == GR_OK && tr->ovh.n > 0) {
        r->ovh = calloc(tr->ovh.n, sizeof(gr_ls_ovh_row));
        if (!r->ovh) st = oom(&a);
        for (size_t i = 0; st == GR_OK && i < tr->ovh.n; i++) {
            const gr_tr_ovh *ov = &tr->ovh.v[i];
            const char *kind = gr_trace_str(tr, ov->kind);
            size_t k = 0;
            while (k < r->novh && strcmp(gr_trace_str(tr, r->ovh[k].kind), kind) != 0) k++;
            if (k == r->novh) r->ovh[r->novh++].kind = ov->kind;
            r->ovh[k].count++;
            r->ovh[k].total_us += US(ov->e - ov->s);
            r->ovh_count++;
            r->ovh_total_us += US(ov->e - ov->s);
        }
    }
    free(gi);
    free(ai);
    free(greg);
    free(areg);
    free(goff);
    free(aoff);
    free(gsorted);
    free(asorted);
    free(a.parent);
    free(a.regions);
    gr_u64map_free(&a.api_by_corr);
    gr_u64map_free(&a.ext_by_corr);
    gr_u64map_free(&a.node_by_id);
    gr_u64map_free(&a.op_by_tag);
    if (st != GR_OK) {
        gr_ls_report_destroy(r);
        return st;
    }
    *out = r;
    return GR_OK;
}

void gr_ls_report_destroy(gr_ls_report *r) {
    if (!r) return;
    scope_free(&r->all);
    for (size_t i = 0; i < r->nregions; i++) scope_free(&r->regions[i]);
    free(r->regions);
    for (size_t i = 0; i < r->nnvtx; i++)
        scope_free(&r->nvtx[i]);
    free(r->nvtx);
    free(r->ovh);
    free(r);
}

const gr_ls_scope *gr_ls_main_scope(const gr_ls_report *r, const char *region, gr_error *err) {
    if (region) {
        for (size_t i = 0; i < r->nregions; i++)
            if (!strcmp(r->regions[i].name, region)) return &r->regions[i];
        for (size_t i = 0; i < r->nnvtx; i++)
            if (!strcmp(r->nvtx[i].name, region)) return &r->nvtx[i];
        char names[1024] = "", ranges[1024] = "";
        size_t o = 0;
        for (size_t i = 0; i < r->nregions && o < sizeof(names) - 80; i++)
            o += (size_t)snprintf(names + o, sizeof(names) - o, "%s\"%s\"", i ? ", " : "", r->regions[i].name);
        o = 0;
        for (size_t i = 0; i < r->nnvtx && o < sizeof(ranges) - 80; i++)
            o += (size_t)snprintf(ranges + o, sizeof(ranges) - o, "%s\"%s\"",
                                  i ? ", " : "; NVTX ranges: ", r->nvtx[i].name);
        gr_error_set(err, GR_ERR_USAGE, "--region", "%s has no region \"%s\" (regions: %s%s)",
                     r->tr->path, region,
                     r->nregions ? names : "none; the whole trace is the only scope", ranges);
        return NULL;
    }
    if (r->nregions == 1) return &r->regions[0];
    return &r->all;
}
