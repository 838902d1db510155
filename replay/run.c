/* The run driver: one pipe per variant, made and freed in turn so that only one variant's
 * buffers occupy the device. */
#include "replay/run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return worst;
}
