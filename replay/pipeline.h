/* One run of one variant as an ordered list of stages over a session (a pass manager): session,
 * reference, eager check, capture check, capture, graph check, unrolled graph, verdict, timings.
 * `graphrun run`, its traced run, the replay service's capture and replay and each rank of
 * `graphrun tp` are stage lists plus hooks; the options every caller fills are gr_run_opts. */
#ifndef GR_PIPELINE_H
#define GR_PIPELINE_H

#include "capture/capture.h"
#include "core/device.h"
#include "core/workload.h"
#include "replay/capcheck.h"
#include "replay/session.h"
#include "replay/timing.h"
#include "replay/verify.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The options of a run, one struct for every caller (CLI flags, service request fields, tp). */
typedef struct gr_run_opts {
    int iters, warmup, batches; /* timing: warmup < 0 derives it (iters / 10, at least 3) */
    gr_capture_mode mode;
    int cpu_reference;    /* run the CPU reference (default on) */
    int bandwidth;        /* run the bandwidth probe: the HBM floor (default on) */
    int launch_floor;     /* after the variants, time a graph of empty kernels: the cost of a graph
                           * node in this process (default on; gr_run_plans only) */
    const char *dot_path; /* --dot FILE: write each captured graph */
    int progress;         /* progress bars on stderr (a terminal only) */
    const gr_exec_hooks *hooks; /* around each op in eager runs and captures (NVTX, trace tags) */
    int pdl;              /* programmatic dependent launch for PDL-capable kernels: GR_PDL_AUTO
                           * (default: on where the GPU has it), GR_PDL_ON (--pdl), GR_PDL_OFF
                           * (--no-pdl); 0 or 1 once gr_run_opts_resolve_pdl ran */
    int pdl_default;      /* the resolved pdl came from GR_PDL_AUTO (the report says "default") */
    int unroll;           /* graph timing: this many steps per captured graph (--unroll) */
    int device_loop;      /* > 0: also a device-resident loop of this many steps per launch,
                           * checked and timed beside the graph (--device-loop) */
    int no_capture_check; /* --no-capture-check: capture without the checker */
    int piecewise;        /* gr_piecewise_mode: auto (default), on, off */
    const char *capture_record; /* --capture-check-record FILE */
    int steps;            /* steps the reference and the checks run without re-initialising (1) */
    double rtol;          /* > 0: every output checked at this rtol instead of its own */
} gr_run_opts;

/* What a run asks of PDL, before the GPU is known. */
enum { GR_PDL_AUTO = -1, GR_PDL_OFF = 0, GR_PDL_ON = 1 };
/* The PDL compute capability: griddepcontrol and the programmatic launch attributes are sm_90+. */
#define GR_PDL_MIN_CC_MAJOR 9

void gr_run_opts_default(gr_run_opts *o);
/* Turns o->pdl into 0 or 1 for a GPU of compute capability cc_major.x: GR_PDL_AUTO is on where
 * the GPU has PDL (sets pdl_default); GR_PDL_ON on an older GPU is GR_ERR_USAGE (exit 2) naming
 * the GPU. Resolved from the default before: resolved again for this GPU; asked for (--pdl,
 * --no-pdl): kept. */
gr_status gr_run_opts_resolve_pdl(gr_run_opts *o, int cc_major, int cc_minor, gr_error *err);
/* Where resolved options' PDL came from, in the words of the flags (reports' "pdl_source"):
 * "default", "default (GPU without PDL)", "--pdl" or "--no-pdl". */
const char *gr_run_opts_pdl_source(const gr_run_opts *o);
/* The warm-up steps the options give (derived when warmup < 0). */
int gr_run_opts_warmup(const gr_run_opts *o);
/* The timing loop's options from these (warm-up derived, batches at most iters, no label). */
gr_time_opts gr_run_opts_time(const gr_run_opts *o);

/* What one stage did. */
typedef struct gr_stage_record {
    const char *stage; /* the stage's name (static) */
    int ran;           /* 0: skipped (its condition did not hold) */
    int status;        /* gr_status */
    double host_ms;    /* host time the stage took */
} gr_stage_record;

/* The result of one variant: heap-grown (gr_run_report_add, or zeroed by the caller). */
typedef struct gr_variant_run {
    const gr_plan *plan;
    int status; /* gr_status of this variant */
    char error[1024];
    gr_checks checks; /* every check; checks.verified is the variant's verdict */
    int captured, timed;
    gr_graph graph;   /* counts and times only; handles are gone */
    gr_graph graph_n; /* the --unroll graph, when made */
    gr_graph graph_loop; /* the --device-loop graph (the body's counts), when made */
    gr_timing eager, graph_t;
    gr_timing loop_t; /* --device-loop: per plan step (GPU, and host submit / steps) */
    int loop_timed;
    double reference_ms;
    char dot_written[600];
    gr_capcheck_variant cc; /* capture check, piecewise run and fixed plan */
    gr_stage_record *stages;
    int nstages, cap_stages;
} gr_variant_run;

void gr_variant_run_clear(gr_variant_run *v); /* frees what v holds; v itself stays */

typedef struct gr_pipe gr_pipe;
typedef gr_status (*gr_stage_fn)(gr_pipe *p, gr_error *err);

/* A stage: its name (in records, progress and NVTX) and what it does. */
typedef struct gr_stage {
    const char *name;
    gr_stage_fn run;
} gr_stage;

/* The built-in stages. Each skips itself (recorded as not run) when its condition fails. */
extern const gr_stage gr_stage_session;       /* device state for the plan (pdl set) */
extern const gr_stage gr_stage_init;          /* buffers initialised (no reference) */
extern const gr_stage gr_stage_reference;     /* CPU reference (when cpu_reference) */
extern const gr_stage gr_stage_eager_check;   /* eager steps vs the reference; outputs kept */
extern const gr_stage gr_stage_capture_check; /* the checker; piecewise when the graph is unusable */
extern const gr_stage gr_stage_capture;       /* the step as one graph (unless piecewise) */
extern const gr_stage gr_stage_graph_check;   /* graph replay vs reference and eager */
extern const gr_stage gr_stage_unroll;        /* --unroll N graph vs N eager steps */
extern const gr_stage gr_stage_device_loop;   /* capture and check the device loop */
extern const gr_stage gr_stage_verdict;       /* GR_ERR_VERIFY when any check failed */
extern const gr_stage gr_stage_time_eager;    /* eager step time (CUDA events) */
extern const gr_stage gr_stage_time_graph;       /* graph step time (unless piecewise) */
extern const gr_stage gr_stage_time_device_loop; /* device-loop step time (--device-loop) */

/* Hooks of a caller around the stages (all optional). */
typedef struct gr_pipe_hooks {
    /* Before a stage runs: progress, cancellation, barriers. *skip = 1 skips the stage (recorded
     * as not run); an error stops the list. */
    gr_status (*before)(void *user, gr_pipe *p, const gr_stage *s, int *skip, gr_error *err);
    /* After a stage ran, with its status (trace regions, rank checks); an error it returns
     * replaces an OK status. */
    gr_status (*after)(void *user, gr_pipe *p, const gr_stage *s, gr_status st, gr_error *err);
    /* Timing stages: after each batch (progress, cancellation) and inside long batches. */
    gr_status (*on_batch)(void *user, int done, int total, gr_error *err);
    gr_status (*check)(void *user, gr_error *err);
    void *user;
} gr_pipe_hooks;

struct gr_pipe {
    const gr_plan *plan;
    int sm_count;
    gr_run_opts o;
    int nplans;            /* variants in the run: per-variant record and DOT paths when > 1 */
    const char *label;     /* appended to timing labels ("traced") */
    const gr_pipe_hooks *hooks;
    gr_session *s;         /* made by gr_stage_session or handed in; owned by the pipe */
    gr_variant_run *v;     /* results go here */
    int piecewise;         /* the capture check ran the variant piecewise: no full graph */
    void *const *external; /* device buffers the session uses instead of its own (buckets) */
    const gr_devlib *lib;  /* library handles and workspace to borrow (buckets); NULL: its own */
    /* where a user plan's "reference": true variant is found (the reference stage): among the
     * run's plans, else resolved from wl for the plan's target into ref_owned */
    const gr_workload *wl;
    const gr_plan *const *peers;
    int npeers;
    gr_plan *ref_owned;
};

/* A pipe over plan p writing into v (not owned). */
void gr_pipe_init(gr_pipe *p, const gr_plan *plan, int sm_count, const gr_run_opts *o,
                  gr_variant_run *v);
/* Runs the stages in order, stopping at the first error; records each in v->stages, moves the
 * session's checks into v->checks, and sets v->status and v->error. */
gr_status gr_pipe_run(gr_pipe *p, const gr_stage *const *stages, int n, gr_error *err);
/* The plan of p's "reference": true variant (user kernels: docs/verification.md): one of
 * `plans` when it is there, else resolved from wl for target t into *owned (the caller destroys
 * it). *ref is NULL when p has a CPU reference, is the reference, or names none. */
gr_status gr_pipe_reference_plan(const gr_plan *p, const gr_plan *const *plans, int n,
                                 const gr_workload *wl, const gr_target *t, const gr_plan **ref,
                                 gr_plan **owned, gr_error *err);
/* Hands the session to the caller (the service keeps it); the pipe no longer owns it. */
gr_session *gr_pipe_detach(gr_pipe *p);
/* Destroys the session it still owns and the reference plan it resolved. */
void gr_pipe_free(gr_pipe *p);

/* The stage lists of the commands (counts alongside). */
extern const gr_stage *const gr_pipe_run_stages[];    /* graphrun run */
extern const int gr_pipe_run_nstages;
extern const gr_stage *const gr_pipe_traced_stages[]; /* run --trace: capture, time, traced */
extern const int gr_pipe_traced_nstages;
extern const gr_stage *const gr_pipe_capture_stages[]; /* the service's capture */
extern const int gr_pipe_capture_nstages;

#ifdef __cplusplus
}
#endif
#endif
