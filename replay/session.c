/* Sessions: reference, verification, capture and timing of one plan on the device. */
#include "replay/session.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/expect.h"
#include "core/kernel.h"
#include "core/timer.h"
#include "replay/nvtx.h"

gr_status gr_session_create(const gr_plan *plan, int sm_count, gr_session **out, gr_error *err) {
    return gr_session_create_ext(plan, sm_count, NULL, NULL, out, err);
}

gr_status gr_session_create_ext(const gr_plan *plan, int sm_count, void *const *external,
                                const gr_devlib *lib, gr_session **out, gr_error *err) {
    *out = NULL;
    gr_session *s = calloc(1, sizeof(*s));
    if (!s) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    s->plan = plan;
    s->steps = 1;
    s->eager_out = calloc((size_t)plan->nbufs + 1, sizeof(void *));
    s->ref_valid = calloc((size_t)plan->nbufs + 1, 1);
    if (!s->eager_out || !s->ref_valid) {
        free(s->eager_out);
        free(s->ref_valid);
        free(s);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    gr_status st = gr_devstate_create_shared(plan, sm_count, external, lib, &s->dev, err);
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
    gr_graph_destroy(&s->graph_n);
    gr_graph_destroy(&s->graph_loop);
    gr_devstate_destroy(s->dev);
    gr_hoststate_destroy(s->ref);
    gr_checks_free(&s->checks);
    if (s->eager_out)
        for (int b = 0; b < s->plan->nbufs; b++) free(s->eager_out[b]);
    free(s->eager_out);
    free(s->ref_valid);
    free(s);
}

/* A plan with user ops has no CPU reference: its outputs are checked against their "expect"
 * files, and the others against the eager outputs of the reference variant (s->ref_plan) run
 * `steps` steps from the same initial data. ref_valid marks the outputs that have a reference. */
static gr_status user_reference(gr_session *s, gr_error *err) {
    const gr_plan *p = s->plan;
    GR_TRY(gr_devstate_init_buffers(s->dev, err));
    if (!s->ref) GR_TRY(gr_hoststate_create(p, &s->ref, err));
    int any = 0;
    for (int b = 0; b < p->nbufs; b++) {
        const gr_buffer *buf = &p->bufs[b];
        if (!buf->is_output || !buf->expect_path[0]) continue;
        GR_TRY(gr_expect_read(buf, s->ref->hptr[b], err));
        s->ref_valid[b] = 1;
        any = 1;
    }
    const gr_plan *rp = s->ref_plan;
    if (rp && rp != p) {
        double t0 = gr_now_us();
        gr_session *rs = NULL;
        GR_TRY(gr_session_create(rp, s->dev->sm_count, &rs, err));
        rs->dev->pdl = 0; /* the reference is the plain eager step */
        gr_status st = gr_devstate_init_buffers(rs->dev, err);
        for (int k = 0; k < s->steps && st == GR_OK; k++) st = gr_exec_step(rp, rs->dev, NULL, err);
        if (st == GR_OK && cudaDeviceSynchronize() != cudaSuccess)
            st = gr_cuda_fail(cudaGetLastError(), "cudaDeviceSynchronize", __FILE__, __LINE__, err);
        for (int b = 0; b < p->nbufs && st == GR_OK; b++) {
            const gr_buffer *buf = &p->bufs[b];
            if (!buf->is_output || s->ref_valid[b]) continue;
            for (int k = 0; k < rp->nbufs; k++) {
                const gr_buffer *rb = &rp->bufs[k];
                if (!rb->used || strcmp(rb->name, buf->name) || rb->bytes != buf->bytes ||
                    rb->dtype != buf->dtype)
                    continue;
                st = gr_devstate_download(rs->dev, k, s->ref->hptr[b], err);
                s->ref_valid[b] = st == GR_OK;
                any |= s->ref_valid[b];
            }
        }
        gr_session_destroy(rs);
        s->reference_ms = (gr_now_us() - t0) / 1e3;
        if (st != GR_OK) {
            gr_error_prefix(err, "reference variant %s: ", rp->variant);
            return st;
        }
    }
    if (!any) { /* nothing to check against: graph == eager only (the report says so) */
        gr_hoststate_destroy(s->ref);
        s->ref = NULL;
    }
    return GR_OK;
}

gr_status gr_session_reference(gr_session *s, gr_error *err) {
    const gr_plan *p = s->plan;
    if (!p->has_cpu_reference) return user_reference(s, err);
    GR_TRY(gr_devstate_init_buffers(s->dev, err));
    if (!s->ref) GR_TRY(gr_hoststate_create(p, &s->ref, err));
    /* The reference starts from exactly the device's initial contents. */
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].used) GR_TRY(gr_devstate_download(s->dev, b, s->ref->hptr[b], err));
    double t0 = gr_now_us();
    gr_status st = GR_OK;
    for (int k = 0; k < s->steps && st == GR_OK; k++) st = gr_reference_step(p, s->ref, err);
    s->reference_ms = (gr_now_us() - t0) / 1e3;
    for (int b = 0; b < p->nbufs; b++) s->ref_valid[b] = 1;
    return st;
}

static void add_check(gr_session *s, gr_check c) {
    gr_checks_add(&s->checks, &c);
}

/* Graph vs eager differs only where an op's result depends on the order of its work (atomics,
 * split reductions): name the ops that write the buffer, distinct kernels, as the suspects. */
static void writers_note(const gr_plan *p, int b, char *out, size_t size) {
    size_t len = (size_t)snprintf(out, size, "not bitwise identical; written by");
    int n = 0;
    for (int i = 0; i < p->nops && len < size; i++) {
        const gr_op *op = &p->ops[i];
        if (op->kind != GR_OP_KERNEL || !op->kernel) continue;
        int writes = 0, seen = 0;
        for (int j = 0; j < op->noutputs; j++) writes |= op->outputs[j] == b;
        if (!writes) continue;
        for (int k = 0; k < i && !seen; k++) { /* one op per kernel: "down.15 (decode_down)" */
            const gr_op *q = &p->ops[k];
            if (q->kind != GR_OP_KERNEL || q->kernel != op->kernel) continue;
            for (int j = 0; j < q->noutputs; j++) seen |= q->outputs[j] == b;
        }
        if (seen) continue;
        len += (size_t)snprintf(out + len, size - len, "%s %s (%s)", n ? "," : "", op->name,
                                op->kernel->name);
        n++;
    }
    if (!n) snprintf(out, size, "not bitwise identical");
}

gr_check gr_session_compare(const gr_plan *p, int b, const char *what, const void *out,
                            const void *ref) {
    return gr_session_compare_rtol(p, b, what, out, ref, 0);
}

gr_check gr_session_compare_rtol(const gr_plan *p, int b, const char *what, const void *out,
                                 const void *ref, double rtol) {
    const gr_buffer *buf = &p->bufs[b];
    gr_tol tol = rtol > 0 ? gr_tol_from_rtol(buf->dtype, rtol) : gr_buffer_tol(buf);
    gr_check c = gr_compare_tol(buf->name, what, out, ref, buf->dtype, buf->numel, &tol);
    if (!c.identical && strstr(what, "vs eager")) writers_note(p, b, c.note, sizeof(c.note));
    return c;
}

gr_status gr_session_check_outputs(gr_session *s, const char *mode, void **keep, gr_error *err) {
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
        if (s->ref && s->ref_valid[b]) {
            snprintf(what, sizeof(what), "%s vs ref", mode);
            add_check(s, gr_session_compare_rtol(p, b, what, host, s->ref->hptr[b], s->rtol));
        }
        if (!keep && s->eager_out[b]) {
            snprintf(what, sizeof(what), "%s vs eager", mode);
            add_check(s, gr_session_compare_rtol(p, b, what, host, s->eager_out[b], s->rtol));
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
    for (int k = 0; k < s->steps; k++) GR_TRY(gr_exec_step(s->plan, s->dev, NULL, err));
    GR_CUDA(cudaDeviceSynchronize(), err);
    return gr_session_check_outputs(s, "eager", s->eager_out, err);
}

gr_status gr_session_capture(gr_session *s, gr_capture_mode mode, const gr_exec_hooks *hooks,
                             gr_error *err) {
    gr_graph_destroy(&s->graph);
    s->captured = 0;
    gr_nvtx_phase_begin(s->plan, GR_NVTX_CAPTURE, "");
    gr_status st = gr_graph_capture(s->plan, s->dev, mode, hooks, &s->graph, err);
    gr_nvtx_phase_end();
    GR_TRY(st);
    s->captured = 1;
    return GR_OK;
}

gr_status gr_session_verify_graph(gr_session *s, gr_error *err) {
    if (!s->captured) return gr_error_set(err, GR_ERR_INTERNAL, NULL, "no graph captured");
    GR_TRY(gr_devstate_init_buffers(s->dev, err));
    for (int k = 0; k < s->steps; k++) GR_TRY(gr_graph_launch(&s->graph, s->dev->streams[0], err));
    GR_CUDA(cudaDeviceSynchronize(), err);
    return gr_session_check_outputs(s, "graph", NULL, err);
}

gr_status gr_session_require_verified(const gr_session *s, gr_error *err) {
    gr_status st = GR_OK;
    if (s->checks.oom)
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "variant %s: out of host memory for the checks",
                            s->plan->variant);
    for (int i = 0; i < s->checks.n; i++) {
        const gr_check *c = &s->checks.v[i];
        if (c->passed) continue;
        char line[256];
        gr_check_str(c, line, sizeof(line));
        st = gr_error_set(err, GR_ERR_VERIFY, NULL,
                          "variant %s: output \"%s\" %s: %s (tolerance rel L2 %.1e, element "
                          "%.1e rms + %.1e |ref|)",
                          s->plan->variant, c->buffer, c->what, line, c->rtol, c->atol,
                          c->rtol_elem);
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
    return gr_graph_launch(s->captured_n ? &s->graph_n : &s->graph, s->dev->streams[0], err);
}

/* Outputs of `steps` eager steps from the initial state (host copies, one per output). */
static gr_status eager_n_outputs(gr_session *s, int steps, void **out, gr_error *err) {
    const gr_plan *p = s->plan;
    GR_TRY(gr_devstate_init_buffers(s->dev, err));
    for (int k = 0; k < steps; k++) GR_TRY(gr_exec_step(p, s->dev, NULL, err));
    GR_CUDA(cudaDeviceSynchronize(), err);
    for (int b = 0; b < p->nbufs; b++) {
        if (!p->bufs[b].is_output) continue;
        out[b] = malloc(p->bufs[b].bytes ? p->bufs[b].bytes : 1);
        if (!out[b]) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
        GR_TRY(gr_devstate_download(s->dev, b, out[b], err));
    }
    return GR_OK;
}

typedef gr_status (*capture_n_fn)(const gr_plan *plan, gr_devstate *dev, gr_capture_mode mode,
                                  int steps, const gr_exec_hooks *hooks, gr_graph *out,
                                  gr_error *err);

/* A graph of `steps` steps per launch (unrolled, or a device loop), made by `cap` and checked
 * after one launch against `steps` eager steps as "LABEL xN vs eager xN". */
static gr_status capture_n_checked(gr_session *s, gr_capture_mode mode, int steps,
                                   const gr_exec_hooks *hooks, capture_n_fn cap, const char *label,
                                   const char *nvtx, gr_graph *g, gr_error *err) {
    const gr_plan *p = s->plan;
    gr_graph_destroy(g);
    void **want = calloc((size_t)p->nbufs + 1, sizeof(void *));
    if (!want) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    gr_status st = eager_n_outputs(s, steps, want, err);
    if (st == GR_OK) {
        gr_nvtx_phase_begin(p, GR_NVTX_CAPTURE, nvtx);
        st = cap(p, s->dev, mode, steps, hooks, g, err);
        gr_nvtx_phase_end();
    }
    if (st == GR_OK) st = gr_devstate_init_buffers(s->dev, err);
    if (st == GR_OK) st = gr_graph_launch(g, s->dev->streams[0], err);
    if (st == GR_OK && cudaDeviceSynchronize() != cudaSuccess)
        st = gr_cuda_fail(cudaGetLastError(), "cudaDeviceSynchronize", __FILE__, __LINE__, err);
    for (int b = 0; b < p->nbufs && st == GR_OK; b++) {
        const gr_buffer *buf = &p->bufs[b];
        if (!buf->is_output) continue;
        void *host = malloc(buf->bytes ? buf->bytes : 1);
        if (!host) {
            st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
            break;
        }
        st = gr_devstate_download(s->dev, b, host, err);
        if (st == GR_OK) {
            char what[48];
            snprintf(what, sizeof(what), "%s x%d vs eager x%d", label, steps, steps);
            add_check(s, gr_session_compare_rtol(p, b, what, host, want[b], s->rtol));
        }
        free(host);
    }
    for (int b = 0; b < p->nbufs; b++) free(want[b]);
    free(want);
    return st;
}

gr_status gr_session_capture_unrolled(gr_session *s, gr_capture_mode mode, int steps,
                                      const gr_exec_hooks *hooks, gr_error *err) {
    s->captured_n = 0;
    GR_TRY(capture_n_checked(s, mode, steps, hooks, gr_graph_capture_steps, "graph",
                             steps > 1 ? "of unrolled steps" : "", &s->graph_n, err));
    s->captured_n = 1;
    return GR_OK;
}

gr_status gr_session_capture_loop(gr_session *s, gr_capture_mode mode, int steps,
                                  const gr_exec_hooks *hooks, gr_error *err) {
    s->captured_loop = 0;
    GR_TRY(capture_n_checked(s, mode, steps, hooks, gr_graph_capture_loop, "device loop",
                             "of the device loop", &s->graph_loop, err));
    s->captured_loop = 1;
    return GR_OK;
}

gr_status gr_session_time_eager(gr_session *s, const gr_time_opts *o, const gr_exec_hooks *hooks,
                                gr_timing *out, gr_error *err) {
    eager_ctx c = {s, hooks};
    gr_nvtx_phase_begin(s->plan, GR_NVTX_EAGER, "timing");
    gr_status st = gr_time_steps(eager_step, &c, s->dev->streams[0], o, out, err);
    gr_nvtx_phase_end();
    return st;
}

static gr_status time_per_step(gr_session *s, gr_step_fn step, int steps, const gr_time_opts *o,
                               gr_timing *out, gr_error *err);

gr_status gr_session_time_graph(gr_session *s, const gr_time_opts *o, gr_timing *out, gr_error *err) {
    if (!s->captured) return gr_error_set(err, GR_ERR_INTERNAL, NULL, "no graph captured");
    return time_per_step(s, graph_step, s->captured_n ? s->graph_n.steps : 1, o, out, err);
}

static gr_status loop_step(void *user, gr_error *err) {
    gr_session *s = user;
    return gr_graph_launch(&s->graph_loop, s->dev->streams[0], err);
}

gr_status gr_session_time_loop(gr_session *s, const gr_time_opts *o, gr_timing *out, gr_error *err) {
    if (!s->captured_loop) return gr_error_set(err, GR_ERR_INTERNAL, NULL, "no device loop captured");
    return time_per_step(s, loop_step, s->graph_loop.steps, o, out, err);
}

/* Launches of `step` (each `steps` plan steps) for as many plan steps as the eager timing,
 * reported per plan step. */
static gr_status time_per_step(gr_session *s, gr_step_fn step, int steps, const gr_time_opts *o,
                               gr_timing *out, gr_error *err) {
    gr_time_opts t = *o;
    /* the same number of plan steps as the eager timing: fewer graph launches */
    t.iters = o->iters / steps > 0 ? o->iters / steps : 1;
    t.warmup = o->warmup / steps;
    gr_nvtx_phase_begin(s->plan, GR_NVTX_REPLAY, "timing");
    gr_status st = gr_time_steps(step, s, s->dev->streams[0], &t, out, err);
    gr_nvtx_phase_end();
    GR_TRY(st);
    out->steps_per_launch = steps;
    if (steps > 1) {
        gr_summary *sm[2] = {&out->step_us, &out->submit_us};
        for (int i = 0; i < 2; i++) {
            sm[i]->min /= steps;
            sm[i]->max /= steps;
            sm[i]->mean /= steps;
            sm[i]->stddev /= steps;
            sm[i]->median /= steps;
            sm[i]->p10 /= steps;
            sm[i]->p90 /= steps;
        }
    }
    return GR_OK;
}
