/* Checked capture and piecewise capture. A checked capture is an ordinary capture (capture.c)
 * with the capture checker recording (cupti_tools/capcheck.h) and each call tagged with the op
 * in progress; its recording is classified into findings (cupti_tools/capclass.h). Piecewise
 * capture splits a plan's ops into maximal capturable segments around the ops that break or
 * escape capture, captures each segment into its own graph (checked, so that a segment that
 * still breaks names its next culprit), and replays the step as graph launches with the breaking
 * ops run eagerly in between, on the same streams and through the same launch path as eager
 * runs. */
#ifndef GR_PIECEWISE_H
#define GR_PIECEWISE_H

#include "capture/capture.h"
#include "core/device.h"
#include "cupti_tools/capclass.h"
#include "cupti_tools/capevents.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_checked_capture {
    int checked;              /* 1: the checker recorded the capture; 0: see why */
    char why[512];            /* why it ran unchecked (another CUPTI client, --no-capture-check) */
    gr_status capture_status; /* of the capture itself (GR_ERR_CAPTURE when it failed) */
    char capture_error[1024];
    gr_capcheck_result result;
    gr_capev_list events; /* the recording (for --capture-check-record) */
} gr_checked_capture;

void gr_checked_capture_free(gr_checked_capture *cc);

/* A checker session: one CUPTI subscription for several checked captures. Unavailability
 * (another CUPTI client) is not an error: *available is 0 and `why` says so. */
gr_status gr_capture_checker_open(int *available, char *why, size_t why_size, gr_error *err);
/* Closes the session and detaches CUPTI (nothing slows the timing runs after it). */
gr_status gr_capture_checker_close(gr_error *err);

/* Captures ops [begin, end) with the checker recording when a session is open (else plainly,
 * cc->checked = 0). The capture's own failure goes to cc->capture_status / capture_error, not
 * to the return value, which is GR_ERR_NOMEM or a checker failure only. On success *graph
 * holds the instantiated graph. */
gr_status gr_capture_checked(const gr_plan *plan, gr_devstate *dev, int begin, int end,
                             gr_capture_mode mode, const gr_exec_hooks *hooks, gr_graph *graph,
                             gr_checked_capture *cc, gr_error *err);

typedef struct gr_segment {
    int begin, end; /* ops [begin, end) */
    int graph;      /* 1: replayed as a captured graph; 0: run eagerly */
    gr_graph g;
} gr_segment;

/* Pure: the segments of `plan` when the ops flagged in `eager` (one byte per op) run eagerly.
 * Graph segments are maximal runs of the other ops; a fork..join region never straddles a
 * boundary (a region holding an eager op runs eagerly whole). Returns the count (<= max). */
int gr_piecewise_segments(const gr_plan *plan, const unsigned char *eager, gr_segment *out,
                          int max);

typedef struct gr_piecewise {
    gr_segment *seg;
    int nseg;
    int graphs;    /* graph segments */
    int eager_ops; /* ops run eagerly */
    int captures;  /* checked captures made to find the segments */
    int rounds;
    gr_capture_mode mode;
    gr_capcheck_result findings; /* findings of the segment captures that broke (copies) */
} gr_piecewise;

/* Splits the plan: `eager_ops` (n of them) run eagerly from the start (the culprits of a full
 * capture); every graph segment is captured checked, and ops charged with blocking findings
 * (with `hazards_too`, with any finding) join the eager ones until every segment captures
 * cleanly. Needs an open checker session. Fails (GR_ERR_CAPTURE) when a segment cannot be
 * captured and no op is to blame. */
gr_status gr_piecewise_build(const gr_plan *plan, gr_devstate *dev, gr_capture_mode mode,
                             const gr_exec_hooks *hooks, const int *eager_ops, int n,
                             int hazards_too, gr_piecewise *pw, gr_error *err);
/* Enqueues one step: graph launches on the main stream, eager ops on their own streams. */
gr_status gr_piecewise_step(const gr_piecewise *pw, const gr_plan *plan, gr_devstate *dev,
                            const gr_exec_hooks *hooks, gr_error *err);
void gr_piecewise_destroy(gr_piecewise *pw);
/* "8 ops in 2 graphs, 1 eager op: 8 stream_sync" into out. */
void gr_piecewise_str(const gr_piecewise *pw, const gr_plan *plan, char *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif
