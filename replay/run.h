/* `graphrun run`: every selected variant through reference, eager, capture, replay, checks and
 * timings, and the report of it all (text and JSON). */
#ifndef GR_RUN_H
#define GR_RUN_H

#include <stdio.h>

#include "capture/capture.h"
#include "core/device.h"
#include "core/workload.h"
#include "replay/capcheck.h"
#include "replay/session.h"
#include "replay/timing.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_run_opts {
    int iters, warmup, batches;
    gr_capture_mode mode;
    int cpu_reference;   /* run the CPU reference (default on) */
    int bandwidth;       /* measure copy bandwidth (default on) */
    const char *dot_path;
    int progress;
    const gr_exec_hooks *hooks; /* around each op in eager runs and capture (NVTX) */
    int pdl;             /* programmatic dependent launch for GR_KF_PDL kernels (--pdl) */
    int unroll;          /* graph timing: this many steps per captured graph (--unroll) */
    int no_capture_check; /* --no-capture-check: capture without the checker (replay/capcheck.h) */
    int piecewise;       /* gr_piecewise_mode: auto (default), on (--piecewise), off (--no-piecewise) */
    const char *capture_record; /* --capture-check-record FILE: write each full capture's recording */
} gr_run_opts;

void gr_run_opts_default(gr_run_opts *o);

typedef struct gr_variant_run {
    const gr_plan *plan;
    int status;              /* gr_status of this variant */
    char error[1024];
    gr_check checks[GR_MAX_CHECKS];
    int nchecks;
    int verified;
    int captured, timed;
    gr_graph graph;          /* counts and times only; handles are gone */
    gr_graph graph_n;        /* the --unroll graph, when made */
    gr_timing eager, graph_t;
    double reference_ms;
    char dot_written[600];
    gr_capcheck_variant cc;  /* capture check, piecewise run and fixed plan (replay/capcheck.h) */
} gr_variant_run;

typedef struct gr_run_report {
    const gr_workload *wl;
    gr_device_info dev;
    gr_bandwidth bw;
    int have_bw;
    gr_run_opts opts;
    gr_variant_run v[32];
    int nv;
    char date[64];
} gr_run_report;

/* Runs every plan; failures are recorded per variant and the worst status is returned. */
gr_status gr_run_plans(const gr_workload *wl, const gr_plan *const *plans, int nplans,
                       const gr_device_info *dev, const gr_run_opts *o, gr_run_report *r,
                       gr_error *err);

void gr_report_text(FILE *f, const gr_run_report *r);
void *gr_report_json(const gr_run_report *r); /* json_t * */

/* Per-step kernel count the report uses: graph kernel nodes when captured, else the plan's. */
int gr_variant_kernels(const gr_variant_run *v);

#ifdef __cplusplus
}
#endif
#endif
