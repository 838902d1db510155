/* `graphrun run --trace FILE`: after the untraced run, the same variants again with CUPTI
 * tracing on, in this process: one eager timing and one graph timing per variant, each a region
 * of the trace, every op tagged (eager kernels by external correlation, graph nodes at capture)
 * so kernels map back to workload ops. Reports traced vs untraced step time per variant (the
 * inflation tracing causes), then the trace's analysis. The untraced numbers stay graphrun's. */
#ifndef GR_REPLAY_TRACE_H
#define GR_REPLAY_TRACE_H

#include <stdio.h>

#include "cupti_tools/analysis.h"
#include "cupti_tools/collector.h"
#include "cupti_tools/predict.h"
#include "cupti_tools/trace.h"
#include "replay/report.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_trace_opts {
    const char *path;
    int iters;           /* traced steps per mode (default: the run's iters, at most 200) */
    const char *command; /* command line for the trace header */
} gr_trace_opts;

typedef struct gr_traced_variant {
    const gr_plan *plan;
    int status;          /* gr_status */
    char error[512];
    int done;
    gr_timing eager, graph;  /* CUDA events, traced */
    double untraced_eager_us, untraced_graph_us;
    int kernels;         /* per step */
} gr_traced_variant;

typedef struct gr_trace_result {
    char path[1024];
    int iters, warmup;
    gr_traced_variant *v; /* nv of them (heap) */
    int nv, cap;
    gr_cupti_result cupti;
    gr_trace *trace;        /* the written trace, read back */
    gr_ls_report *analysis; /* and analysed */
    gr_pred_report *prediction; /* each variant's graph step predicted from its traced eager
                                   region, against its untraced graph step (cupti_tools/predict) */
} gr_trace_result;

/* GR_ERR_IO when FILE cannot be written there (checked before the long untraced run). */
gr_status gr_trace_check_path(const char *path, gr_error *err);

/* Runs every variant the untraced run timed, traced. Fails (without touching the untraced
 * results) when tracing cannot start, e.g. under another CUPTI client. */
gr_status gr_trace_run(const gr_run_report *untraced, const gr_run_opts *o, const gr_trace_opts *t,
                       gr_trace_result *out, gr_error *err);
void gr_trace_result_free(gr_trace_result *r);
void gr_trace_print(FILE *f, const gr_trace_result *r);
void *gr_trace_json(const gr_trace_result *r); /* json_t * */

#ifdef __cplusplus
}
#endif
#endif
