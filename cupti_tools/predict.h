/* What a CUDA graph (and kernel fusion) would give, predicted from one eager trace: per eager
 * scope, the step simulated as a graph from the kernels' own durations, the streams, and a
 * per-node and per-launch cost calibrated untraced per GPU model. Model and proof: docs/predict.md.
 */
#ifndef GR_PREDICT_H
#define GR_PREDICT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "cupti_tools/analysis.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Graph costs of one GPU model, measured untraced. */
typedef struct gr_pred_calib {
    const char *gpu;  /* device name as the trace's header gives it */
    const char *cc;   /* compute capability, "9.0": the nearest one stands in for an unknown GPU */
    double node_us;   /* GPU time a kernel node adds to its kernel's own duration */
    double launch_us; /* GPU time per graph launch beyond its nodes (launches back to back) */
    double launch_host_us; /* host time to submit one graph launch: no step is shorter */
    double pdl_us;         /* what programmatic dependent launch saves per dependent kernel pair */
    double hbm_gbps;       /* streaming bandwidth, bytes read + written: the fusion floor */
    const char *source;    /* the run that measured them */
} gr_pred_calib;

/* The table's entries (read-only); n set to the count. */
const gr_pred_calib *gr_pred_calib_table(size_t *n);
/* The entry for `device` (exact name), else the nearest compute capability (*exact = 0). */
const gr_pred_calib *gr_pred_calib_lookup(const char *device, const char *cc, int *exact);

typedef struct gr_pred_opts {
    double node_us,
        launch_us;     /* user given (--graph-node-us, --graph-launch-us); < 0: the table's */
    double noise_frac; /* a predicted gain under this share of the eager step is noise (0.03) */
    double small_us;   /* fusion candidates: kernels shorter than this (10 us) */
    double elem_bytes; /* bytes per element the fusion estimate assumes (4) */
    int top;           /* fusion chains shown (5) */
    int nvtx_scopes;   /* NVTX range scopes predicted besides the regions: the largest by host
                          time whose kernels all ran eagerly (4; 0: none) */
    /* a calibration file's row (report --calibration, calibrate.h gr_cal_load) in place of the
     * table's; node_us / launch_us above still override it. NULL: the table */
    const gr_pred_calib *calib;
    const char *calib_file, *calib_date; /* its path and measurement date, for the report */
} gr_pred_opts;

void gr_pred_opts_default(gr_pred_opts *o);

/* Something in the step that the graph prediction assumes away, in the capture checker's
 * categories (capclass.h gr_find_kind). */
typedef struct gr_pred_break {
    int kind;     /* gr_find_kind */
    char api[64]; /* the API, or the copy kind ("HtoD copy") */
    size_t count; /* in the scope */
    double per_step;
    int in_step;   /* at least one per step: inside the step, not the harness between steps */
    int uncertain; /* the trace cannot tell (a host copy: pinned or pageable is not recorded) */
} gr_pred_break;

/* A chain of consecutive small kernels on one stream, fused (estimate). */
typedef struct gr_pred_chain {
    char names[512];   /* labels joined by " > " */
    int len;           /* kernels */
    size_t count;      /* occurrences in the scope */
    double per_step;   /* occurrences per step */
    double unfused_us; /* per occurrence: the kernels' durations + their nodes */
    double
        fused_us; /* per occurrence: the fused kernel (max of the floor and its shortest kernel) */
    double saved_us;                   /* per step */
    double bytes_unfused, bytes_fused; /* per occurrence: from the plan, or assumed */
    double elems; /* elements assumed: the most threads any kernel of the chain launched */
    size_t from_plan; /* occurrences whose bytes came from graphrun's plan (the op records'
                         dataflow); the others' are assumed. All of them (== count): "plan" */
} gr_pred_chain;

enum { GR_PRED_HELPS = 1, GR_PRED_NO_GAIN = 0 };

typedef struct gr_pred_scope {
    char name[160], variant[64];
    int is_nvtx;             /* the scope is an NVTX range name of the traced program */
    size_t nvtx_instances;   /* its ranges (the steps unless --steps) */
    int ok; /* predicted; else why says why not */
    char why[256];
    int64_t steps;
    const char *steps_from;
    size_t kernels, memops, streams; /* in the scope */
    double nodes_per_step;
    double measured_us; /* the eager step: untraced when the trace has it, else traced */
    int measured_traced;
    int measured_host;     /* traced: from the region's host span (else the GPU span) */
    double kernel_us;      /* per step: sum of the kernels' and copies' own durations */
    double pred_us;        /* predicted graph step */
    double pred_pdl_us;    /* ... with PDL between dependent kernels (0: not modelled) */
    double pred_fused_us;  /* ... with the chains below fused (0: no chain) */
    double host_floor_hit; /* steps where the host submit, not the GPU, set the time (share) */
    double speedup, saved_us, gain_frac;
    int verdict;       /* GR_PRED_HELPS / GR_PRED_NO_GAIN */
    int deps_recorded; /* the trace records event calls: cross-stream waits were looked for */
    size_t cross_deps; /* cross-stream dependencies inferred */
    int pdl_seen;      /* kernels of one stream already overlap (PDL in the eager run) */
    gr_pred_break *breaks;
    size_t nbreaks;
    gr_pred_chain *chains; /* by saved time, descending */
    size_t nchains;
    double fused_saved_us; /* per step, all chains */
    /* the truth, when known: the same variant's graph run (graphrun) or --compare's scope */
    int has_truth;
    char truth_name[200];
    double truth_us;
    int truth_traced;
    double error_pct;    /* (predicted - measured) / measured, % */
    double truth_gpu_us; /* traced graph runs: GPU span of one launch (median), 0 unknown */
    double error_gpu_pct;
} gr_pred_scope;

typedef struct gr_pred_report {
    gr_pred_calib calib;
    int calib_exact; /* 1 exact GPU, 0 nearest (warning), 2 user given, 3 calibration file */
    char calib_note[768];
    char calib_source[1400]; /* calib.source when it is built here (user values over a file) */
    char device[128];
    gr_pred_opts opts;
    gr_pred_scope *scopes;
    size_t n;
} gr_pred_report;

/* Predicts every eager scope of the report: each region whose kernels are all eager (graphrun's
 * "<variant> eager", profiler ranges), or the whole trace without regions; then the largest NVTX
 * range scopes (o->nvtx_scopes) with eager kernels and none in graphs, one step per range
 * instance. GR_ERR_NOMEM only. */
gr_status gr_pred_run(const gr_ls_report *r, const gr_pred_opts *o, gr_pred_report **out,
                      gr_error *err);
void gr_pred_report_destroy(gr_pred_report *p);
/* Sets the truth of `ps` from a graph scope (another trace's, with --compare): its untraced step
 * when it has one, else its traced step. */
void gr_pred_set_truth(gr_pred_scope *ps, const gr_ls_scope *graph, const char *label);

void gr_pred_print(FILE *f, const gr_pred_report *p);
/* json_t * of the prediction. */
void *gr_pred_json(const gr_pred_report *p);

#ifdef __cplusplus
}
#endif
#endif
