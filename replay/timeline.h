/* `graphrun run --timeline FILE` and `--html FILE`: the traced run's trace (replay/trace.c, in a
 * temporary file unless --trace names one) turned into the Chrome Trace Event timeline
 * (cupti_tools/chrome.h) and the self-contained HTML report (cupti_tools/html.h). The HTML's
 * timing table and HBM accounting come from the untraced run, which stays the measurement; its
 * timelines are labelled traced. */
#ifndef GR_REPLAY_TIMELINE_H
#define GR_REPLAY_TIMELINE_H

#include "replay/run.h"
#include "replay/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GR_ERR_USAGE / GR_ERR_IO naming `opt` when `path` cannot be written there (checked before the
 * long untraced run). */
gr_status gr_export_check_path(const char *opt, const char *path, gr_error *err);

/* A fresh temporary trace file for the traced run (TMPDIR or /tmp); out gets its path. */
gr_status gr_export_temp_trace(char *out, size_t size, gr_error *err);

typedef struct gr_export_result {
    size_t procs, flows, nvtx, kernels; /* what the timeline holds */
    int figures;                        /* eager/graph pairs drawn in the HTML */
} gr_export_result;

/* Writes `chrome` and/or `html` (either may be NULL) from the traced run `tr` and the untraced
 * report `r`. `command` goes into the HTML as its source. */
gr_status gr_export_timelines(const gr_run_report *r, const gr_trace_result *tr, const char *chrome,
                              const char *html, const char *command, gr_export_result *res,
                              gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
