/* A session is one plan made live on the device: its device state, the CPU reference, the
 * captured graph, and the checks and timings taken on it. `graphrun run` makes one per variant;
 * the replay service keeps them between requests. */
#ifndef GR_SESSION_H
#define GR_SESSION_H

#include "capture/capture.h"
#include "core/device.h"
#include "core/hoststate.h"
#include "replay/timing.h"
#include "replay/verify.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_session {
    const gr_plan *plan;
    gr_devstate *dev;
    gr_hoststate *ref;  /* reference results (NULL when skipped or when there is none) */
    unsigned char *ref_valid; /* per buffer: ref holds its reference (user plans: the outputs
                                 with an expect file or a reference variant's output) */
    const gr_plan *ref_plan;  /* a user plan's "reference": true variant, or NULL */
    void **eager_out;   /* eager outputs per output buffer (host), for graph vs eager */
    gr_graph graph;
    int captured;
    gr_graph graph_n;   /* --unroll N: N steps in one graph, used for timing when present */
    int captured_n;
    gr_graph graph_loop; /* --device-loop N: one launch runs N steps on the GPU */
    int captured_loop;
    gr_checks checks;   /* checks.verified: at least one check, and every check passed */
    double reference_ms; /* host time of the CPU reference */
    int steps;          /* steps the reference and the checks run without re-initialising (1) */
    double rtol;        /* > 0: every output checked at this rtol instead of its own (tp --rtol) */
} gr_session;

gr_status gr_session_create(const gr_plan *plan, int sm_count, gr_session **out, gr_error *err);
/* With the caller's device buffers where external[b] is set, and lib's library handles and
 * workspace when lib is not NULL (core/device.h: gr_devstate_create_shared). */
gr_status gr_session_create_ext(const gr_plan *plan, int sm_count, void *const *external,
                                const gr_devlib *lib, gr_session **out, gr_error *err);
void gr_session_destroy(gr_session *s);

/* Initialise device buffers, copy the inputs to the host and run the CPU reference there
 * (s->steps steps). A plan with user ops (no CPU reference) takes its outputs' expect files and
 * the eager outputs of s->ref_plan instead; with neither, s->ref stays NULL. */
gr_status gr_session_reference(gr_session *s, gr_error *err);
/* Re-initialise (outputs without an init poisoned with NaN, in-place outputs re-seeded from
 * their init), run s->steps eager steps, compare outputs to the reference; the outputs are kept
 * (s->eager_out) for the graph check. */
gr_status gr_session_verify_eager(gr_session *s, gr_error *err);
gr_status gr_session_capture(gr_session *s, gr_capture_mode mode, const gr_exec_hooks *hooks,
                             gr_error *err);
/* Re-initialise, replay the graph s->steps times, compare to the reference and to the eager
 * outputs. */
gr_status gr_session_verify_graph(gr_session *s, gr_error *err);
/* Output buffer b of plan p against ref with b's tolerances (gr_buffer_tol), or at rtol when
 * rtol > 0; a "... vs eager" check that is not bitwise identical notes the ops that write b. */
gr_check gr_session_compare(const gr_plan *p, int b, const char *what, const void *out,
                            const void *ref);
gr_check gr_session_compare_rtol(const gr_plan *p, int b, const char *what, const void *out,
                                 const void *ref, double rtol);
/* The outputs on the device now, checked as "MODE vs ref" (when there is a reference) and, unless
 * keep is given, "MODE vs eager"; with keep, the host copies are stored there (keep[b]). */
gr_status gr_session_check_outputs(gr_session *s, const char *mode, void **keep, gr_error *err);
/* Fails with GR_ERR_VERIFY naming the buffers when a check failed. */
gr_status gr_session_require_verified(const gr_session *s, gr_error *err);

/* Capture `steps` steps into one graph and check it against `steps` eager steps (--unroll).
 * Graph timing then uses this graph and reports time per step. */
gr_status gr_session_capture_unrolled(gr_session *s, gr_capture_mode mode, int steps,
                                      const gr_exec_hooks *hooks, gr_error *err);

/* Capture the device-resident loop of `steps` steps (--device-loop) and check one launch of it
 * against `steps` eager steps. */
gr_status gr_session_capture_loop(gr_session *s, gr_capture_mode mode, int steps,
                                  const gr_exec_hooks *hooks, gr_error *err);
/* Times launches of the device loop: per step = per launch / steps (GPU and host submit). */
gr_status gr_session_time_loop(gr_session *s, const gr_time_opts *o, gr_timing *out, gr_error *err);

gr_status gr_session_time_eager(gr_session *s, const gr_time_opts *o, const gr_exec_hooks *hooks,
                                gr_timing *out, gr_error *err);
gr_status gr_session_time_graph(gr_session *s, const gr_time_opts *o, gr_timing *out, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
