/* The stages and the runner: each stage is a thin step over the session (replay/session.c), the
 * capture checker (replay/capcheck.c) and the timing loops (replay/timing.c). */
#include "replay/pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/timer.h"
#include "kernels/registry.h"
#include "replay/nvtx.h"

void gr_run_opts_default(gr_run_opts *o) {
    memset(o, 0, sizeof(*o));
    o->iters = 1000;
    o->warmup = -1; /* derived from iters */
    o->batches = 20;
    o->mode = GR_CAPTURE_GLOBAL;
    o->cpu_reference = 1;
    o->bandwidth = 1;
    o->launch_floor = 1;
    o->progress = 1;
    o->unroll = 1;
    o->steps = 1;
    o->pdl = GR_PDL_AUTO;
    o->hooks = gr_nvtx_op_hooks(); /* NVTX range per op when a tool is attached */
}

gr_status gr_run_opts_resolve_pdl(gr_run_opts *o, int cc_major, int cc_minor, gr_error *err) {
    int has = cc_major >= GR_PDL_MIN_CC_MAJOR;
    if (o->pdl == GR_PDL_AUTO || o->pdl_default) { /* the default, again for another GPU */
        o->pdl = has;
        o->pdl_default = 1;
    } else if (o->pdl == GR_PDL_ON && !has) {
        return gr_error_set(err, GR_ERR_USAGE, NULL,
                            "--pdl: programmatic dependent launch needs compute capability %d.0 or "
                            "newer and this GPU is %d.%d; leave --pdl out (the default uses PDL "
                            "only where the GPU has it)",
                            GR_PDL_MIN_CC_MAJOR, cc_major, cc_minor);
    }
    return GR_OK;
}

const char *gr_run_opts_pdl_source(const gr_run_opts *o) {
    if (o->pdl_default) return o->pdl ? "default" : "default (GPU without PDL)";
    return o->pdl ? "--pdl" : "--no-pdl";
}

int gr_run_opts_warmup(const gr_run_opts *o) {
    if (o->warmup >= 0) return o->warmup;
    return o->iters / 10 < 3 ? 3 : o->iters / 10;
}

gr_time_opts gr_run_opts_time(const gr_run_opts *o) {
    gr_time_opts t;
    memset(&t, 0, sizeof(t));
    t.warmup = gr_run_opts_warmup(o);
    t.iters = o->iters;
    t.batches = o->batches < o->iters ? o->batches : o->iters;
    if (t.batches < 1) t.batches = 1;
    t.progress = o->progress;
    return t;
}

void gr_variant_run_clear(gr_variant_run *v) {
    if (!v) return;
    gr_checks_free(&v->checks);
    free(v->stages);
    v->stages = NULL;
    v->nstages = v->cap_stages = 0;
}

void gr_pipe_init(gr_pipe *p, const gr_plan *plan, int sm_count, const gr_run_opts *o,
                  gr_variant_run *v) {
    memset(p, 0, sizeof(*p));
    p->plan = plan;
    p->sm_count = sm_count;
    p->o = *o;
    if (p->o.steps < 1) p->o.steps = 1;
    if (p->o.unroll < 1) p->o.unroll = 1;
    p->nplans = 1;
    p->v = v;
    v->plan = plan;
}

gr_status gr_pipe_reference_plan(const gr_plan *p, const gr_plan *const *plans, int n,
                                 const gr_workload *wl, const gr_target *t, const gr_plan **ref,
                                 gr_plan **owned, gr_error *err) {
    *ref = NULL;
    *owned = NULL;
    if (p->has_cpu_reference || p->is_reference_variant || !p->reference_variant[0]) return GR_OK;
    for (int i = 0; i < n; i++)
        if (!strcmp(plans[i]->variant, p->reference_variant)) {
            *ref = plans[i];
            return GR_OK;
        }
    if (!wl)
        return gr_error_set(err, GR_ERR_INTERNAL, NULL, "variant %s: reference variant %s not loaded",
                            p->variant, p->reference_variant);
    gr_status st = gr_plan_resolve(wl, p->reference_variant, t, gr_kernel_find, gr_kernel_all_names,
                                   owned, err);
    if (st != GR_OK) {
        gr_error_prefix(err, "reference variant %s of %s: ", p->reference_variant, p->variant);
        return st;
    }
    *ref = *owned;
    return GR_OK;
}

gr_session *gr_pipe_detach(gr_pipe *p) {
    gr_session *s = p->s;
    p->s = NULL;
    if (s) s->ref_plan = NULL; /* the pipe's to free: the held session needs it no more */
    return s;
}

void gr_pipe_free(gr_pipe *p) {
    if (!p) return;
    gr_session_destroy(p->s); /* before the reference plan its session may point at */
    p->s = NULL;
    gr_plan_destroy(p->ref_owned);
    p->ref_owned = NULL;
}

/* ---- the stages ---- */

static gr_status need_session(gr_pipe *p, gr_error *err) {
    if (!p->s)
        return gr_error_set(err, GR_ERR_INTERNAL, NULL, "stage list without a session stage");
    return GR_OK;
}

static gr_status st_session(gr_pipe *p, gr_error *err) {
    if (p->s) return GR_OK; /* handed in (the service's held graphs) */
    GR_TRY(gr_session_create_ext(p->plan, p->sm_count, p->external, p->lib, &p->s, err));
    if (p->o.pdl == GR_PDL_AUTO) /* a caller that did not resolve it: the plan's GPU decides */
        p->o.pdl = p->plan->target.cc_major >= GR_PDL_MIN_CC_MAJOR;
    p->s->dev->pdl = p->o.pdl == GR_PDL_ON;
    p->s->steps = p->o.steps;
    p->s->rtol = p->o.rtol;
    return GR_OK;
}

static gr_status st_init(gr_pipe *p, gr_error *err) {
    GR_TRY(need_session(p, err));
    return gr_devstate_init_buffers(p->s->dev, err);
}

static gr_status st_reference(gr_pipe *p, gr_error *err) {
    GR_TRY(need_session(p, err));
    if (!p->plan->has_cpu_reference && !p->s->ref_plan) /* user kernels: their reference variant */
        GR_TRY(gr_pipe_reference_plan(p->plan, p->peers, p->npeers, p->wl, &p->plan->target,
                                      &p->s->ref_plan, &p->ref_owned, err));
    gr_status st = gr_session_reference(p->s, err);
    p->v->reference_ms = p->s->reference_ms;
    return st;
}

static gr_status st_eager_check(gr_pipe *p, gr_error *err) {
    GR_TRY(need_session(p, err));
    return gr_session_verify_eager(p->s, err);
}

static gr_status st_capture_check(gr_pipe *p, gr_error *err) {
    GR_TRY(need_session(p, err));
    /* the checker's capture is a capture phase too (NVTX: "... capture checked") */
    gr_nvtx_phase_begin(p->plan, GR_NVTX_CAPTURE, "checked");
    gr_status st = gr_capcheck_run_variant(p->s, &p->o, p->nplans, &p->v->cc, &p->piecewise, err);
    gr_nvtx_phase_end();
    return st;
}

static gr_status st_capture(gr_pipe *p, gr_error *err) {
    GR_TRY(need_session(p, err));
    GR_TRY(gr_session_capture(p->s, p->o.mode, p->o.hooks, err));
    gr_variant_run *v = p->v;
    v->captured = 1;
    v->graph = p->s->graph;
    v->graph.graph = v->graph.exec = NULL;
    if (p->o.dot_path) {
        if (p->nplans > 1)
            snprintf(v->dot_written, sizeof(v->dot_written), "%s.%s.dot", p->o.dot_path,
                     p->plan->variant);
        else
            snprintf(v->dot_written, sizeof(v->dot_written), "%s", p->o.dot_path);
        gr_status st = gr_graph_dot(&p->s->graph, v->dot_written, err);
        if (st != GR_OK) v->dot_written[0] = '\0';
        return st;
    }
    return GR_OK;
}

static gr_status st_graph_check(gr_pipe *p, gr_error *err) {
    GR_TRY(need_session(p, err));
    return gr_session_verify_graph(p->s, err);
}

static gr_status st_unroll(gr_pipe *p, gr_error *err) {
    GR_TRY(need_session(p, err));
    GR_TRY(gr_session_capture_unrolled(p->s, p->o.mode, p->o.unroll, p->o.hooks, err));
    p->v->graph_n = p->s->graph_n;
    p->v->graph_n.graph = p->v->graph_n.exec = NULL;
    return GR_OK;
}

static gr_status st_device_loop(gr_pipe *p, gr_error *err) {
    GR_TRY(need_session(p, err));
    GR_TRY(gr_session_capture_loop(p->s, p->o.mode, p->o.device_loop, p->o.hooks, err));
    p->v->graph_loop = p->s->graph_loop;
    p->v->graph_loop.graph = p->v->graph_loop.exec = p->v->graph_loop.loop_counter = NULL;
    return GR_OK;
}

static gr_status st_verdict(gr_pipe *p, gr_error *err) {
    GR_TRY(need_session(p, err));
    return gr_session_require_verified(p->s, err);
}

static gr_time_opts time_opts(gr_pipe *p, char *label, size_t size, const char *what) {
    gr_time_opts t = gr_run_opts_time(&p->o);
    snprintf(label, size, "%s %s%s%s", p->plan->variant, what, p->label ? ", " : "",
             p->label ? p->label : "");
    t.label = label;
    if (p->hooks) {
        t.on_batch = p->hooks->on_batch;
        t.check = p->hooks->check;
        t.on_batch_user = p->hooks->user;
    }
    return t;
}

static gr_status st_time_eager(gr_pipe *p, gr_error *err) {
    GR_TRY(need_session(p, err));
    char label[160];
    gr_time_opts t = time_opts(p, label, sizeof(label), "eager");
    return gr_session_time_eager(p->s, &t, p->o.hooks, &p->v->eager, err);
}

static gr_status st_time_graph(gr_pipe *p, gr_error *err) {
    GR_TRY(need_session(p, err));
    char label[160];
    gr_time_opts t = time_opts(p, label, sizeof(label), "graph");
    GR_TRY(gr_session_time_graph(p->s, &t, &p->v->graph_t, err));
    p->v->timed = 1;
    return GR_OK;
}

static gr_status st_time_device_loop(gr_pipe *p, gr_error *err) {
    GR_TRY(need_session(p, err));
    char label[160];
    gr_time_opts t = time_opts(p, label, sizeof(label), "device loop");
    GR_TRY(gr_session_time_loop(p->s, &t, &p->v->loop_t, err));
    p->v->loop_timed = 1;
    return GR_OK;
}

const gr_stage gr_stage_session = {"session", st_session};
const gr_stage gr_stage_init = {"init", st_init};
const gr_stage gr_stage_reference = {"reference", st_reference};
const gr_stage gr_stage_eager_check = {"eager_check", st_eager_check};
const gr_stage gr_stage_capture_check = {"capture_check", st_capture_check};
const gr_stage gr_stage_capture = {"capture", st_capture};
const gr_stage gr_stage_graph_check = {"graph_check", st_graph_check};
const gr_stage gr_stage_unroll = {"unroll", st_unroll};
const gr_stage gr_stage_device_loop = {"device_loop", st_device_loop};
const gr_stage gr_stage_verdict = {"verdict", st_verdict};
const gr_stage gr_stage_time_eager = {"time_eager", st_time_eager};
const gr_stage gr_stage_time_graph = {"time_graph", st_time_graph};
const gr_stage gr_stage_time_device_loop = {"time_device_loop", st_time_device_loop};

/* Whether a built-in stage applies to this pipe (a skipped stage is recorded as not run). */
static int applies(const gr_pipe *p, const gr_stage *s) {
    if (s == &gr_stage_reference) return p->o.cpu_reference;
    if (s == &gr_stage_capture_check) return 1; /* records "not checked" itself when off */
    if (s == &gr_stage_capture || s == &gr_stage_graph_check || s == &gr_stage_time_graph)
        return !p->piecewise;
    if (s == &gr_stage_unroll) return !p->piecewise && p->o.unroll > 1;
    if (s == &gr_stage_device_loop || s == &gr_stage_time_device_loop)
        return !p->piecewise && p->o.device_loop > 0;
    if (s == &gr_stage_time_eager) return !p->piecewise;
    return 1;
}

static void record(gr_variant_run *v, const gr_stage *s, int ran, gr_status st, double ms) {
    if (v->nstages == v->cap_stages) {
        int cap = v->cap_stages ? 2 * v->cap_stages : 16;
        gr_stage_record *r = realloc(v->stages, (size_t)cap * sizeof(*r));
        if (!r) return; /* the record is lost, the run is not */
        v->stages = r;
        v->cap_stages = cap;
    }
    v->stages[v->nstages++] = (gr_stage_record){s->name, ran, (int)st, ms};
}

gr_status gr_pipe_run(gr_pipe *p, const gr_stage *const *stages, int n, gr_error *err) {
    gr_status st = GR_OK;
    for (int i = 0; i < n && st == GR_OK; i++) {
        const gr_stage *s = stages[i];
        int skip = !applies(p, s);
        if (!skip && p->hooks && p->hooks->before)
            st = p->hooks->before(p->hooks->user, p, s, &skip, err);
        if (st != GR_OK) break;
        if (skip) {
            record(p->v, s, 0, GR_OK, 0);
            continue;
        }
        double t0 = gr_now_us();
        st = s->run(p, err);
        if (p->hooks && p->hooks->after) {
            gr_status ast = p->hooks->after(p->hooks->user, p, s, st, err);
            if (st == GR_OK) st = ast;
        }
        record(p->v, s, 1, st, (gr_now_us() - t0) / 1e3);
    }
    if (p->s) gr_checks_take(&p->v->checks, &p->s->checks);
    p->v->status = st;
    if (st != GR_OK) snprintf(p->v->error, sizeof(p->v->error), "%s", err->msg);
    return st;
}

/* ---- the commands' lists ---- */

const gr_stage *const gr_pipe_run_stages[] = {
    &gr_stage_session,     &gr_stage_reference,   &gr_stage_eager_check, &gr_stage_capture_check,
    &gr_stage_capture,     &gr_stage_graph_check, &gr_stage_unroll,      &gr_stage_device_loop,
    &gr_stage_verdict,     &gr_stage_time_eager,  &gr_stage_time_graph,  &gr_stage_time_device_loop,
};
const int gr_pipe_run_nstages = (int)(sizeof(gr_pipe_run_stages) / sizeof(gr_pipe_run_stages[0]));

const gr_stage *const gr_pipe_traced_stages[] = {
    &gr_stage_session, &gr_stage_init, &gr_stage_capture, &gr_stage_unroll,
    &gr_stage_time_eager, &gr_stage_time_graph,
};
const int gr_pipe_traced_nstages =
    (int)(sizeof(gr_pipe_traced_stages) / sizeof(gr_pipe_traced_stages[0]));

const gr_stage *const gr_pipe_capture_stages[] = {
    &gr_stage_session,  &gr_stage_reference,   &gr_stage_eager_check, &gr_stage_capture_check,
    &gr_stage_capture,  &gr_stage_graph_check, &gr_stage_unroll,      &gr_stage_verdict,
};
const int gr_pipe_capture_nstages =
    (int)(sizeof(gr_pipe_capture_stages) / sizeof(gr_pipe_capture_stages[0]));
