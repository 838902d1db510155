/* The run driver: one pipe per variant, made and freed in turn so that only one variant's
 * buffers occupy the device. */
#include "replay/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "kernels/registry.h"

/* Outputs of the first variant, to check every later variant against it. */
typedef struct cross_ref {
    const gr_plan *plan;
    void **out;
} cross_ref;

static void cross_check(gr_session *s, cross_ref *x) {
    const gr_plan *p = s->plan;
    if (!x->plan) {
        x->plan = p;
        x->out = calloc((size_t)p->nbufs + 1, sizeof(void *));
        if (!x->out) return;
        for (int b = 0; b < p->nbufs; b++)
            if (s->eager_out[b]) {
                x->out[b] = s->eager_out[b];
                s->eager_out[b] = NULL; /* keep it past the session */
            }
        return;
    }
    for (int b = 0; b < p->nbufs; b++) {
        if (!s->eager_out[b]) continue;
        const gr_buffer *buf = &p->bufs[b];
        for (int k = 0; k < x->plan->nbufs; k++) {
            const gr_buffer *kb = &x->plan->bufs[k];
            if (!x->out || !x->out[k] || strcmp(kb->name, buf->name) != 0) continue;
            if (kb->dtype != buf->dtype || kb->numel != buf->numel) continue;
            char what[32];
            snprintf(what, sizeof(what), "eager vs %.20s", x->plan->variant);
            gr_check c = gr_session_compare(p, b, what, s->eager_out[b], x->out[k]);
            gr_checks_add(&s->checks, &c);
        }
    }
}

/* Before the verdict: the later variants' eager outputs against the first's. */
static gr_status before_stage(void *user, gr_pipe *p, const gr_stage *s, int *skip, gr_error *err) {
    (void)skip;
    (void)err;
    if (s == &gr_stage_verdict && p->s) cross_check(p->s, user);
    return GR_OK;
}

/* The launch floor: K empty kernels (one block, no memory traffic) and one tiny kernel in one
 * graph, its buffer filled, captured and timed through a variant's stages, after the variants, so in the
 * process state their graphs were timed in (docs/pipeline.md: what earlier GPU work costs a graph
 * node). Two sizes: the step of a graph is a launch cost plus a cost per node, and dividing one
 * graph's step by its nodes would charge every node a share of the launch (a floor above what a
 * larger graph measures: 0.965 us per node from 257 nodes against a 1001-node graph's 0.949,
 * H100, run 97). Large sizes, and 256 threads as launch_bound and the bare probe run: the slope
 * from 33 to 257 nodes of 32-thread kernels, 0.957 us (H100 run 99), and from 65 to 1025, 0.961
 * (run 100), were above a 1001-node graph's 0.946-0.950 per node; with 256 threads the empty
 * variant sits at 99.9-100.1% of its floor (runs 101-103). A floor must not come out above a
 * measurement. */
static const char launch_floor_json[] =
    "{\"name\": \"launch_floor\", \"params\": {\"K\": {\"default\": 256, \"min\": 1}},"
    " \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [256], \"init\": \"zeros\"}],"
    " \"outputs\": [\"x\"], \"ops\": [{\"repeat\": \"K\", \"var\": \"k\", \"ops\": [{\"name\": \"empty.{k}\","
    " \"kernel\": \"empty\", \"inputs\": [], \"outputs\": [], \"attrs\": {\"threads\": 256}}]},"
    " {\"name\": \"tiny.last\", \"kernel\": \"tiny\", \"inputs\": [\"x\"], \"outputs\": [\"x\"],"
    " \"attrs\": {\"c\": 1}}]}";

gr_status gr_launch_floor_plan(const gr_target *t, int k, gr_plan **out, gr_error *err) {
    gr_workload *wl = NULL;
    *out = NULL;
    GR_TRY(gr_workload_load_string(launch_floor_json, sizeof(launch_floor_json) - 1, "launch floor", &wl, err));
    char set[32];
    snprintf(set, sizeof(set), "K=%d", k);
    gr_status st = gr_workload_set(wl, set, err);
    if (st == GR_OK) st = gr_plan_resolve(wl, NULL, t, gr_kernel_find, gr_kernel_all_names, out, err);
    gr_workload_destroy(wl);
    return st;
}

gr_status gr_launch_floor_fit(double small_us, int small_nodes, double large_us, int large_nodes,
                              double *node_us, double *launch_us, gr_error *err) {
    if (!(large_nodes > small_nodes && small_nodes > 0 && large_us > small_us && small_us > 0))
        return gr_error_set(err, GR_ERR_INTERNAL, NULL,
                            "the %d-node graph (%.2f us) was not slower than the %d-node one (%.2f us): "
                            "no per-node cost to take",
                            large_nodes, large_us, small_nodes, small_us);
    *node_us = (large_us - small_us) / (double)(large_nodes - small_nodes);
    *launch_us = small_us - small_nodes * *node_us;
    if (*launch_us < 0) {
        /* a node costing more in the larger graph: no launch cost to take out, and the slope would
         * put the smaller graph's floor above its step; the lower of the two per-node averages is
         * under both */
        double a = small_us / small_nodes, b = large_us / large_nodes;
        *node_us = a < b ? a : b;
        *launch_us = 0;
    }
    return GR_OK;
}

/* One floor graph of k empty kernels: its median step and its kernel nodes. */
static gr_status floor_graph(gr_run_report *r, int pdl, int k, double *step_us, int *nodes, gr_error *err) {
    static const gr_stage *const stages[] = {&gr_stage_session, &gr_stage_init, &gr_stage_capture,
                                             &gr_stage_time_graph};
    gr_plan *plan = NULL;
    gr_target t = gr_target_from_info(&r->dev);
    gr_status st = gr_launch_floor_plan(&t, k, &plan, err);
    gr_run_opts o;
    gr_run_opts_default(&o);
    o.iters = 200;
    o.batches = 10;
    o.warmup = 20;
    o.progress = 0; /* the stage list alone decides what runs: no reference, checker or probe */
    o.hooks = NULL;
    o.pdl = pdl;
    gr_variant_run v;
    memset(&v, 0, sizeof(v));
    if (st == GR_OK) {
        gr_pipe p;
        gr_pipe_init(&p, plan, r->dev.sm_count, &o, &v);
        st = gr_pipe_run(&p, stages, 4, err);
        gr_pipe_free(&p);
    }
    if (st == GR_OK && (!v.timed || v.graph.kernel_nodes == 0))
        st = gr_error_set(err, GR_ERR_INTERNAL, NULL, "the launch floor's graph was not timed");
    if (st == GR_OK) {
        *step_us = v.graph_t.step_us.median;
        *nodes = (int)v.graph.kernel_nodes;
    }
    gr_variant_run_clear(&v);
    gr_plan_destroy(plan);
    return st;
}

static gr_status floor_one(gr_run_report *r, int pdl, double *node_us, double *launch_us, gr_error *err) {
    double small_us = 0, large_us = 0;
    int small_n = 0, large_n = 0;
    GR_TRY(floor_graph(r, pdl, GR_LAUNCH_FLOOR_K_SMALL, &small_us, &small_n, err));
    GR_TRY(floor_graph(r, pdl, GR_LAUNCH_FLOOR_K, &large_us, &large_n, err));
    return gr_launch_floor_fit(small_us, small_n, large_us, large_n, node_us, launch_us, err);
}

/* Not a failure of the run when it fails: the report says why it is missing. `pdl`: the variants
 * ran with PDL (then the floor is measured with it too). Skipped under a CUDA or NVTX tool (a
 * profiler, cupti-launchstat, graphrun's NVTX recorder): its records would count the floor's
 * launches with the workload's, and its tracing would slow them. */
static void launch_floor(gr_run_report *r, int pdl) {
    gr_error e;
    gr_error_clear(&e);
    r->launch_floor.k_small = GR_LAUNCH_FLOOR_K_SMALL;
    r->launch_floor.k = GR_LAUNCH_FLOOR_K;
    const char *tool = getenv("CUDA_INJECTION64_PATH") && *getenv("CUDA_INJECTION64_PATH")
                           ? "CUDA_INJECTION64_PATH"
                       : getenv("NVTX_INJECTION64_PATH") && *getenv("NVTX_INJECTION64_PATH")
                           ? "NVTX_INJECTION64_PATH"
                           : NULL;
    if (tool) {
        snprintf(r->launch_floor.why, sizeof(r->launch_floor.why),
                 "a tool is attached (%s): it would record and slow the floor's launches", tool);
        return;
    }
    if (floor_one(r, 0, &r->launch_floor.node_us, &r->launch_floor.launch_us, &e) != GR_OK) {
        snprintf(r->launch_floor.why, sizeof(r->launch_floor.why), "%s", e.msg);
        return;
    }
    r->launch_floor.measured = 1;
    if (pdl && floor_one(r, 1, &r->launch_floor.pdl_node_us, &r->launch_floor.pdl_launch_us, &e) != GR_OK) {
        r->launch_floor.pdl_node_us = r->launch_floor.pdl_launch_us = 0;
        snprintf(r->launch_floor.why, sizeof(r->launch_floor.why), "with PDL: %s", e.msg);
    }
}

gr_status gr_run_plans(const gr_plan *const *plans, int nplans, gr_run_report *r, gr_error *err) {
    const gr_run_opts *o = &r->opts;
    gr_status worst = GR_OK;
    if (o->bandwidth) {
        gr_error e;
        gr_error_clear(&e);
        if (gr_bandwidth_probe(gr_bandwidth_bytes(r->dev.mem_free), GR_BANDWIDTH_REPS, &r->bw,
                               &e) == GR_OK)
            r->have_bw = 1;
        else {
            gr_error_set(err, e.code, NULL, "%s", e.msg);
            return e.code;
        }
    }
    cross_ref x = {NULL, NULL};
    gr_pipe_hooks hooks = {before_stage, NULL, NULL, NULL, &x};
    for (int i = 0; i < nplans; i++) {
        gr_variant_run *v = gr_run_report_add(r, plans[i]);
        if (!v) {
            worst = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
            break;
        }
        gr_pipe p;
        gr_pipe_init(&p, plans[i], r->dev.sm_count, o, v);
        p.nplans = nplans;
        p.hooks = &hooks;
        gr_error e;
        gr_error_clear(&e);
        p.wl = r->wl;
        p.peers = plans;
        p.npeers = nplans;
        gr_status st = gr_pipe_run(&p, gr_pipe_run_stages, gr_pipe_run_nstages, &e);
        gr_pipe_free(&p);
        if (st != GR_OK) {
            gr_error_set(err, st, NULL, "variant %s: %s", plans[i]->variant, e.msg);
            if (worst == GR_OK || worst == GR_ERR_VERIFY) worst = st;
            /* a CUDA error may leave the context unusable: stop rather than report numbers
             * from a broken context */
            if (st == GR_ERR_CUDA) break;
        }
    }
    if (x.out) {
        for (int b = 0; b < x.plan->nbufs; b++) free(x.out[b]);
        free(x.out);
    }
    /* after a CUDA error the context may be unusable: no floor from it. PDL as the variants had
     * it (a caller that did not resolve it: the plan's GPU decides, as st_session does) */
    int pdl = o->pdl == GR_PDL_AUTO ? nplans > 0 && plans[0]->target.cc_major >= GR_PDL_MIN_CC_MAJOR
                                    : o->pdl == 1;
    if (o->launch_floor && worst != GR_ERR_CUDA) launch_floor(r, pdl);
    return worst;
}
