/* The self-contained HTML report of a traced run: per variant, one step of the eager run above
 * one step of the graph replay on one time scale (inline SVG, each kernel a box coloured by
 * kernel, gaps labelled), a histogram of the GPU idle gaps before each kernel in both modes, the
 * step-time table (untraced numbers are the measurement; traced ones are labelled traced) and
 * the HBM accounting. One file: inline CSS and SVG, no scripts, no network; hovering a box shows
 * its details (SVG <title>). Draws from the timeline model (chrome.h); uses only core. */
#ifndef GR_HTML_H
#define GR_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/plan.h"
#include "core/stats.h"
#include "cupti_tools/chrome.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One step of a run, picked for drawing: a typical (median-length) step from the second half of
 * the run, where warm-up is over. Steps are found from graph launches (graph runs), from the
 * run's step count (eager runs: kernels per step = kernels / steps), or from op tags. */
typedef struct gr_html_step {
    int ok;
    char why[256];        /* when not ok, or how the steps were found */
    int graph;            /* steps are graph launches */
    int per_launch;       /* plan steps per graph launch (--unroll), else 1 */
    int64_t index, count; /* the step shown (1-based) of the steps found */
    int64_t s, e;         /* its window: first GPU op start .. the next step's first start */
    int64_t w0;           /* drawing origin: the window start or the launch call before it */
    size_t *gpu;          /* its GPU records (trace indices), by start */
    size_t ngpu, kernels;
    double span_us, busy_us, idle_us, max_gap_us;
    size_t ngaps; /* idle gaps inside the step, per stream */
} gr_html_step;

gr_status gr_html_pick_step(const gr_timeline *tl, int proc, gr_html_step *out, gr_error *err);
void gr_html_step_free(gr_html_step *s);

/* Histogram of the gap before each kernel on its stream (its start - the latest end of earlier
 * work there, >= 0; none for a stream's first), over a whole run. Bin b holds gaps in
 * [edge[b], edge[b+1]) us; the last bin is open. */
#define GR_HTML_GAP_BINS 11
extern const double gr_html_gap_edges[GR_HTML_GAP_BINS];
typedef struct gr_html_gaps {
    size_t count[GR_HTML_GAP_BINS];
    size_t n;
    double total_us;
} gr_html_gaps;
void gr_html_proc_gaps(const gr_timeline *tl, int proc, gr_html_gaps *out);

typedef struct gr_html_side {
    const gr_timeline *tl;
    int proc;
    char label[96]; /* "eager", "graph replay", or a trace's name */
} gr_html_side;

typedef struct gr_html_figure {
    char title[192];
    gr_html_side side[2];
    int nsides;
} gr_html_figure;

/* graphrun traces: one figure per variant that has an eager and a graph run. Returns the count. */
size_t gr_html_mode_figures(const gr_timeline *tl, gr_html_figure *out, size_t max);

/* A row of the step-time table: the untraced measurement (graphrun run), n == 0 when absent. */
typedef struct gr_html_timing {
    char variant[64];
    int kernels; /* per step */
    gr_summary eager_us, graph_us;
    double eager_submit_us, graph_submit_us;
} gr_html_timing;

typedef struct gr_html_doc {
    const char *title;         /* e.g. the workload name */
    const char *subtitle;      /* params, device, date */
    const char *source;        /* the command or trace it came from */
    const char *timing_method; /* how the untraced table was measured; NULL: no untraced run */
    const gr_html_timing *timing;
    int ntiming;
    const gr_plan *const *plans; /* HBM accounting; NULL: not available (a bare trace) */
    int nplans;
    const double *floor_us; /* per plan: its HBM floor per step from the caller's model (0 or
                               NULL: unknown) */
    const char *floor_model; /* that model in words, NULL when no floor */
    const gr_html_figure *figs;
    int nfigs;
} gr_html_doc;

gr_status gr_html_write(const gr_html_doc *d, const char *path, gr_error *err);

/* Predicted vs measured step (cupti-launchstat --predict, cupti_tools/predict.h): one group of
 * bars per eager scope. 0 means "none" for every figure. */
typedef struct gr_html_pred_row {
    char label[160];
    double eager_us;           /* measured eager step */
    int eager_traced;
    double graph_us;           /* predicted graph step */
    double pdl_us, fused_us;   /* predicted with PDL, with the fusion what-if (estimate) */
    double truth_us;           /* measured graph step */
    int truth_traced;
    double truth_gpu_us;       /* traced graph runs: GPU span of one launch */
} gr_html_pred_row;

/* gr_html_write with a "predicted vs measured" section of bars above the step-time table;
 * `note` says where the graph costs came from. */
gr_status gr_html_write_pred(const gr_html_doc *d, const gr_html_pred_row *rows, int nrows, const char *note,
                             const char *path, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
