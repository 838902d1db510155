/* Sessions: reference, verification, capture and timing of one plan on the device. */
#include "replay/session.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/timer.h"

gr_status gr_session_create(const gr_plan *plan, int sm_count, gr_session **out, gr_error *err) {
    *out = NULL;
    gr_session *s = calloc(1, sizeof(*s));
    if (!s) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    s->plan = plan;
    s->eager_out = calloc((size_t)plan->nbufs + 1, sizeof(void *));
    if (!s->eager_out) {
        free(s);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    gr_status st = gr_devstate_create(plan, sm_count, &s->dev, err);
    if (st != GR_OK) {
        gr_session_destroy(s);
        return st;
    }
    *out = s;
    return GR_OK;
}

void gr_session_destroy(gr_session *s) {
    if (!s) return;
    gr_graph_destroy(&s->graph);
    gr_devstate_destroy(s->dev);
    gr_hoststate_destroy(s->ref);
    if (s->eager_out)
        for (int b = 0; b < s->plan->nbufs; b++) free(s->eager_out[b]);
    free(s->eager_out);
    free(s);
}

gr_status gr_session_reference(gr_session *s, gr_error *err) {
    const gr_plan *p = s->plan;
    GR_TRY(gr_devstate_init_buffers(s->dev, err));
    if (!s->ref) GR_TRY(gr_hoststate_create(p, &s->ref, err));
    /* The reference starts from exactly the device's initial contents. */
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].used) GR_TRY(gr_devstate_download(s->dev, b, s->ref->hptr[b], err));
    double t0 = gr_now_us();
    gr_status st = gr_reference_step(p, s->ref, err);
    s->reference_ms = (gr_now_us() - t0) / 1e3;
    return st;
}

static void add_check(gr_session *s, gr_check c) {
    if (s->nchecks < GR_MAX_CHECKS) s->checks[s->nchecks++] = c;
    s->verified = 1;
    for (int i = 0; i < s->nchecks; i++)
        if (!s->checks[i].passed) s->verified = 0;
}

static gr_status compare_outputs(gr_session *s, const char *mode, void **keep, gr_error *err) {
    const gr_plan *p = s->plan;
    for (int b = 0; b < p->nbufs; b++) {
        const gr_buffer *buf = &p->bufs[b];
        if (!buf->is_output) continue;
        void *host = malloc(buf->bytes ? buf->bytes : 1);
        if (!host) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
        gr_status st = gr_devstate_download(s->dev, b, host, err);
        if (st != GR_OK) {
            free(host);
            return st;
        }
        char what[32];
        if (s->ref) {
            snprintf(what, sizeof(what), "%s vs ref", mode);
            add_check(s, gr_compare(buf->name, what, host, s->ref->hptr[b], buf->dtype, buf->numel,
                                    buf->rtol));
        }
        if (!keep && s->eager_out[b]) {
            snprintf(what, sizeof(what), "%s vs eager", mode);
            add_check(s, gr_compare(buf->name, what, host, s->eager_out[b], buf->dtype, buf->numel,
                                    buf->rtol));
        }
        if (keep) {
            free(keep[b]);
            keep[b] = host;
        } else {
            free(host);
        }
    }
    return GR_OK;
}

gr_status gr_session_verify_eager(gr_session *s, gr_error *err) {
    GR_TRY(gr_devstate_init_buffers(s->dev, err));
    GR_TRY(gr_exec_step(s->plan, s->dev, NULL, err));
    GR_CUDA(cudaDeviceSynchronize(), err);
    return compare_outputs(s, "eager", s->eager_out, err);
}

gr_status gr_session_capture(gr_session *s, gr_capture_mode mode, const gr_exec_hooks *hooks,
                             gr_error *err) {
    gr_graph_destroy(&s->graph);
    s->captured = 0;
    GR_TRY(gr_graph_capture(s->plan, s->dev, mode, hooks, &s->graph, err));
    s->captured = 1;
    return GR_OK;
}

gr_status gr_session_verify_graph(gr_session *s, gr_error *err) {
    if (!s->captured) return gr_error_set(err, GR_ERR_INTERNAL, NULL, "no graph captured");
    GR_TRY(gr_devstate_init_buffers(s->dev, err));
    GR_TRY(gr_graph_launch(&s->graph, s->dev->streams[0], err));
    GR_CUDA(cudaDeviceSynchronize(), err);
    return compare_outputs(s, "graph", NULL, err);
}

gr_status gr_session_require_verified(const gr_session *s, gr_error *err) {
    gr_status st = GR_OK;
    for (int i = 0; i < s->nchecks; i++) {
        const gr_check *c = &s->checks[i];
        if (c->passed) continue;
        char line[160];
        gr_check_str(c, line, sizeof(line));
        st = gr_error_set(err, GR_ERR_VERIFY, NULL,
                          "variant %s: output \"%s\" %s: %s (tolerance rel L2 %.1e)",
                          s->plan->variant, c->buffer, c->what, line, c->rtol);
    }
    return st;
}

typedef struct eager_ctx {
    gr_session *s;
    const gr_exec_hooks *hooks;
} eager_ctx;

static gr_status eager_step(void *user, gr_error *err) {
    eager_ctx *c = user;
    return gr_exec_step(c->s->plan, c->s->dev, c->hooks, err);
}

static gr_status graph_step(void *user, gr_error *err) {
    gr_session *s = user;
    return gr_graph_launch(&s->graph, s->dev->streams[0], err);
}

gr_status gr_session_time_eager(gr_session *s, const gr_time_opts *o, const gr_exec_hooks *hooks,
                                gr_timing *out, gr_error *err) {
    eager_ctx c = {s, hooks};
    return gr_time_steps(eager_step, &c, s->dev->streams[0], o, out, err);
}

gr_status gr_session_time_graph(gr_session *s, const gr_time_opts *o, gr_timing *out, gr_error *err) {
    if (!s->captured) return gr_error_set(err, GR_ERR_INTERNAL, NULL, "no graph captured");
    return gr_time_steps(graph_step, s, s->dev->streams[0], o, out, err);
}
