/* Checked capture and piecewise capture (piecewise.h). The same capture (capture.c) and the
 * same executor (gr_exec_range) as every other mode; what differs is the checker around the
 * capture and, for piecewise runs, which ops go into graphs. */
#include "capture/piecewise.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "cupti_tools/capcheck.h"

void gr_checked_capture_free(gr_checked_capture *cc) {
    if (!cc) return;
    gr_capcheck_result_free(&cc->result);
    gr_capev_list_free(&cc->events);
}

gr_status gr_capture_checker_open(int *available, char *why, size_t why_size, gr_error *err) {
    (void)err;
    *available = 0;
    if (why_size) why[0] = '\0';
    gr_capcheck_opts o;
    memset(&o, 0, sizeof(o));
    snprintf(o.hdr.tool, sizeof(o.hdr.tool), "graphrun");
    snprintf(o.hdr.source, sizeof(o.hdr.source), "in-process");
    gr_error e;
    gr_error_clear(&e);
    if (gr_capcheck_start(&o, &e) != GR_OK) {
        snprintf(why, why_size, "%s", e.msg);
        return GR_OK;
    }
    *available = 1;
    return GR_OK;
}

gr_status gr_capture_checker_close(gr_error *err) {
    if (!gr_capcheck_running()) return GR_OK;
    /* escaped work may still run; let it finish before CUPTI detaches */
    cudaError_t rc = cudaDeviceSynchronize();
    gr_status st = gr_capcheck_stop(1, NULL, err);
    if (rc != cudaSuccess && st == GR_OK)
        st = gr_cuda_fail(rc, "cudaDeviceSynchronize", __FILE__, __LINE__, err);
    return st;
}

typedef struct tag_hooks {
    const gr_exec_hooks *inner;
} tag_hooks;

static void tag_before(void *user, const gr_op *op) {
    tag_hooks *h = user;
    gr_capcheck_set_op(op->index, op->name[0] ? op->name : op->path,
                       op->kind == GR_OP_KERNEL && op->kernel ? op->kernel->flags : 0);
    if (h->inner && h->inner->before_op) h->inner->before_op(h->inner->user, op);
}

static void tag_after(void *user, const gr_op *op) {
    tag_hooks *h = user;
    if (h->inner && h->inner->after_op) h->inner->after_op(h->inner->user, op);
    gr_capcheck_set_op(-1, NULL, 0);
}

gr_status gr_capture_checked(const gr_plan *plan, gr_devstate *dev, int begin, int end,
                             gr_capture_mode mode, const gr_exec_hooks *hooks, gr_graph *graph,
                             gr_checked_capture *cc, gr_error *err) {
    memset(cc, 0, sizeof(*cc));
    memset(graph, 0, sizeof(*graph));
    int on = gr_capcheck_running();
    tag_hooks th = {hooks};
    gr_exec_hooks h = {tag_before, tag_after, &th};
    gr_error ce;
    gr_error_clear(&ce);
    if (on) {
        /* whatever was recorded before this capture is not its business */
        gr_capev_list stale;
        if (gr_capcheck_take(&stale, err) != GR_OK) return err->code;
        gr_capev_list_free(&stale);
    }
    cc->capture_status =
        gr_graph_capture_range(plan, dev, begin, end, mode, on ? &h : hooks, graph, &ce);
    if (cc->capture_status != GR_OK)
        snprintf(cc->capture_error, sizeof(cc->capture_error), "%s", ce.msg);
    if (!on) {
        snprintf(cc->why, sizeof(cc->why), "the capture checker is not running");
        return GR_OK;
    }
    gr_status st = gr_capcheck_take(&cc->events, err);
    if (st != GR_OK) return st;
    gr_capcheck_resolve_hostmem(&cc->events);
    st = gr_capcheck_classify(cc->events.v, cc->events.n, &cc->result, err);
    if (st != GR_OK) {
        gr_checked_capture_free(cc);
        gr_graph_destroy(graph);
        return st;
    }
    cc->result.dropped = cc->events.dropped;
    if (cc->capture_status == GR_OK)
        gr_capcheck_confirm_launches(&cc->result, cc->events.v, cc->events.n, graph->kernel_nodes);
    cc->checked = 1;
    return GR_OK;
}

int gr_piecewise_segments(const gr_plan *plan, const unsigned char *eager, gr_segment *out,
                          int max) {
    int n = 0, i = 0;
    while (i < plan->nops) {
        int b = i, e = i, depth = 0;
        do {
            const gr_op *op = &plan->ops[e];
            if (op->kind == GR_OP_FORK)
                depth++;
            else if (op->kind == GR_OP_JOIN)
                depth--;
            e++;
        } while (e < plan->nops && depth > 0);
        int blk_eager = 0;
        for (int k = b; k < e; k++)
            blk_eager |= eager[k] != 0;
        int graph = !blk_eager;
        if (n > 0 && out[n - 1].graph == graph && out[n - 1].end == b) {
            out[n - 1].end = e;
        } else if (n < max) {
            memset(&out[n], 0, sizeof(out[n]));
            out[n].begin = b;
            out[n].end = e;
            out[n].graph = graph;
            n++;
        }
        i = e;
    }
    return n;
}

static void append_findings(gr_capcheck_result *to, const gr_capcheck_result *from) {
    for (size_t i = 0; i < from->n; i++) {
        to->total++;
        if (to->n >= GR_CAPCHECK_MAX_FINDINGS) continue;
        if (to->n == to->cap) {
            size_t nc = to->cap ? to->cap * 2 : 16;
            gr_finding *v = realloc(to->f, nc * sizeof(*v));
            if (!v) return;
            to->f = v;
            to->cap = nc;
        }
        to->f[to->n++] = from->f[i];
    }
    to->calls += from->calls;
    to->captures += from->captures;
    to->captures_ok += from->captures_ok;
    to->captures_failed += from->captures_failed;
    to->dropped += from->dropped;
    to->unfinished |= from->unfinished;
    to->tracker_overflow |= from->tracker_overflow;
    to->deliberate += from->deliberate;
    to->unconfirmed += from->unconfirmed;
}

typedef struct good {
    int begin, end, used;
    gr_graph g;
} good;

gr_status gr_piecewise_build(const gr_plan *plan, gr_devstate *dev, gr_capture_mode mode,
                             const gr_exec_hooks *hooks, const int *eager_ops, int n,
                             int hazards_too, gr_piecewise *pw, gr_error *err) {
    memset(pw, 0, sizeof(*pw));
    pw->mode = mode;
    if (!gr_capcheck_running())
        return gr_error_set(err, GR_ERR_INTERNAL, NULL,
                            "piecewise capture needs the capture checker running");
    int nops = plan->nops;
    unsigned char *eager = calloc((size_t)nops + 1, 1);
    gr_segment *seg = calloc((size_t)nops + 1, sizeof(*seg));
    good *goods = calloc((size_t)nops + 1, sizeof(*goods));
    int *cul = calloc((size_t)nops + 1, sizeof(int));
    if (!eager || !seg || !goods || !cul) {
        free(eager);
        free(seg);
        free(goods);
        free(cul);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    for (int i = 0; i < n; i++)
        if (eager_ops[i] >= 0 && eager_ops[i] < nops) eager[eager_ops[i]] = 1;
    int ngood = 0, nseg = 0;
    gr_status st = GR_OK;
    for (int round = 0; st == GR_OK; round++) {
        if (round > nops + 1) {
            st = gr_error_set(err, GR_ERR_INTERNAL, NULL,
                              "piecewise capture did not settle after %d rounds", round);
            break;
        }
        pw->rounds = round + 1;
        nseg = gr_piecewise_segments(plan, eager, seg, nops + 1);
        int changed = 0;
        for (int s = 0; s < nseg && st == GR_OK; s++) {
            if (!seg[s].graph) continue;
            int cached = 0;
            for (int k = 0; k < ngood && !cached; k++)
                cached = goods[k].begin == seg[s].begin && goods[k].end == seg[s].end;
            if (cached) continue;
            gr_checked_capture cc;
            gr_graph g;
            st = gr_capture_checked(plan, dev, seg[s].begin, seg[s].end, mode, hooks, &g, &cc, err);
            if (st != GR_OK) break;
            pw->captures++;
            if (cc.capture_status != GR_OK && cc.capture_status != GR_ERR_CAPTURE) {
                st = gr_error_set(err, cc.capture_status, NULL, "capturing ops %d..%d: %s",
                                  seg[s].begin, seg[s].end - 1, cc.capture_error);
                gr_graph_destroy(&g);
                gr_checked_capture_free(&cc);
                break;
            }
            int nc = gr_capcheck_culprit_ops(&cc.result, hazards_too, cul, nops);
            if (cc.capture_status != GR_OK || nc > 0) append_findings(&pw->findings, &cc.result);
            if (cc.capture_status != GR_OK && nc == 0) {
                char first[1400] = "no finding";
                if (cc.result.n) gr_finding_str(&cc.result.f[0], first, sizeof(first));
                const gr_op *op0 = &plan->ops[seg[s].begin];
                st = gr_error_set(err, GR_ERR_CAPTURE, op0->path,
                                  "ops %d..%d cannot be captured and the capture checker names no "
                                  "op to run eagerly "
                                  "(%s); the capture failed with: %s",
                                  seg[s].begin, seg[s].end - 1, first, cc.capture_error);
            } else if (nc > 0) {
                for (int k = 0; k < nc; k++)
                    eager[cul[k]] = 1;
                changed = 1;
                gr_graph_destroy(&g);
            } else {
                goods[ngood].begin = seg[s].begin;
                goods[ngood].end = seg[s].end;
                goods[ngood].g = g;
                ngood++;
            }
            gr_checked_capture_free(&cc);
        }
        if (!changed) break;
    }
    if (st == GR_OK) {
        pw->seg = calloc((size_t)nseg + 1, sizeof(*pw->seg));
        if (!pw->seg) {
            gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
            st = GR_ERR_NOMEM;
        }
    }
    if (st == GR_OK && pw->seg) {
        for (int s = 0; s < nseg; s++) {
            pw->seg[s] = seg[s];
            if (seg[s].graph) {
                for (int k = 0; k < ngood; k++)
                    if (!goods[k].used && goods[k].begin == seg[s].begin &&
                        goods[k].end == seg[s].end) {
                        pw->seg[s].g = goods[k].g;
                        goods[k].used = 1;
                        break;
                    }
                pw->graphs++;
            } else {
                pw->eager_ops += seg[s].end - seg[s].begin;
            }
        }
        pw->nseg = nseg;
    }
    for (int k = 0; k < ngood; k++)
        if (!goods[k].used) gr_graph_destroy(&goods[k].g);
    free(eager);
    free(seg);
    free(goods);
    free(cul);
    if (st != GR_OK) gr_piecewise_destroy(pw);
    return st;
}

gr_status gr_piecewise_step(const gr_piecewise *pw, const gr_plan *plan, gr_devstate *dev,
                            const gr_exec_hooks *hooks, gr_error *err) {
    for (int s = 0; s < pw->nseg; s++) {
        const gr_segment *sg = &pw->seg[s];
        if (sg->graph)
            GR_TRY(gr_graph_launch(&sg->g, dev->streams[0], err));
        else
            GR_TRY(gr_exec_range(plan, dev, sg->begin, sg->end, hooks, err));
    }
    return GR_OK;
}

void gr_piecewise_destroy(gr_piecewise *pw) {
    if (!pw) return;
    for (int s = 0; s < pw->nseg && pw->seg; s++)
        gr_graph_destroy(&pw->seg[s].g);
    free(pw->seg);
    gr_capcheck_result_free(&pw->findings);
    memset(pw, 0, sizeof(*pw));
}

void gr_piecewise_str(const gr_piecewise *pw, const gr_plan *plan, char *out, size_t size) {
    int graph_ops = plan->nops - pw->eager_ops;
    size_t o = (size_t)snprintf(out, size, "%d op%s in %d graph%s, %d eager op%s", graph_ops,
                                graph_ops == 1 ? "" : "s", pw->graphs, pw->graphs == 1 ? "" : "s",
                                pw->eager_ops, pw->eager_ops == 1 ? "" : "s");
    int listed = 0;
    for (int s = 0; s < pw->nseg && o < size; s++) {
        if (pw->seg[s].graph) continue;
        for (int i = pw->seg[s].begin; i < pw->seg[s].end && o < size; i++) {
            if (listed == 8) {
                o += (size_t)snprintf(out + o, size - o, ", ...");
                listed++;
                break;
            }
            if (listed > 8) break;
            const gr_op *op = &plan->ops[i];
            o += (size_t)snprintf(out + o, size - o, "%s%d %s", listed ? ", " : ": ", i,
                                  op->name[0] ? op->name : op->path);
            listed++;
        }
    }
}
