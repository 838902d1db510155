/* `graphrun run`'s capture check and piecewise run, per variant: the full capture checked
 * (capture/piecewise.h), its findings, and when the full graph cannot be used (a capture error
 * or work escaping the capture) the piecewise run: segments captured into graphs, breaking ops
 * eager in between, verified against the reference like any run, timed against full eager; and,
 * where the breaking ops have clean counterparts (kernels/breakers.h), the full graph of the
 * fixed plan, verified and timed: what fixing the op would give. */
#ifndef GR_REPLAY_CAPCHECK_H
#define GR_REPLAY_CAPCHECK_H

#include <stdio.h>

#include "capture/piecewise.h"
#include "cupti_tools/capclass.h"
#include "replay/timing.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --piecewise / --no-piecewise; the zero value is the default */
typedef enum gr_piecewise_mode {
    GR_PW_AUTO = 0, /* piecewise when the full graph cannot be used */
    GR_PW_ON,       /* always; hazards run eagerly too */
    GR_PW_OFF       /* never: a capture that breaks or escapes fails the variant */
} gr_piecewise_mode;

#define GR_CC_MAX_FINDINGS 24

typedef struct gr_cc_findings {
    gr_finding f[GR_CC_MAX_FINDINGS];
    int n;
    size_t total, blocking;
    int errors, consequences, escapes, hazards;
    int captures, captures_ok, captures_failed;
    size_t calls;
    uint64_t dropped;
    size_t deliberate, unconfirmed; /* see gr_capcheck_result */
} gr_cc_findings;

typedef struct gr_capcheck_variant {
    int attempted;       /* the check ran (or was asked for and unavailable) */
    int checked;         /* the full capture was recorded and classified */
    char why[512];       /* why it was not checked */
    int mode;            /* gr_capture_mode */
    gr_cc_findings full; /* findings of the full capture */
    int full_failed;     /* the full capture failed */
    int full_blocked;    /* ... or work escaped it: the full graph cannot be used */
    char full_error[1024];
    char recorded[600]; /* --capture-check-record: where this variant's recording went */
    /* piecewise */
    int piecewise;
    char pw_desc[512];
    int pw_segments, pw_graphs, pw_eager_ops, pw_captures, pw_rounds;
    gr_cc_findings pw; /* findings of segment captures that still broke */
    int pw_verified, pw_timed;
    gr_timing eager, pw_t;
    /* the fixed plan: breaking ops replaced by their clean counterparts */
    int fixed; /* a fixed plan was run */
    int fixed_ops;
    int fixed_verified, fixed_timed;
    size_t fixed_blocking; /* blocking findings in its capture (0 expected) */
    char fixed_error[512];
    gr_timing fixed_t;
} gr_capcheck_variant;

struct gr_session;
struct gr_run_opts;
struct gr_run_report;

/* Checks the full capture of the session's plan; when its graph cannot be used (or with
 * --piecewise), builds, verifies and times the piecewise run and the fixed plan. *piecewise = 1
 * tells the caller to skip the full-graph path. Findings and timings go to *cv. A capture that
 * cannot be used without a piecewise run (--no-piecewise) fails with GR_ERR_CAPTURE naming the
 * culprit. `label` names the variant in messages; `nplans` > 1 makes record paths per variant. */
gr_status gr_capcheck_run_variant(struct gr_session *s, const struct gr_run_opts *o, int nplans,
                                  gr_capcheck_variant *cv, int *piecewise, gr_error *err);

void gr_cc_findings_set(gr_cc_findings *out, const gr_capcheck_result *r);
/* The capture-check and piecewise sections of `graphrun run`'s report. */
void gr_capcheck_report_text(FILE *f, const struct gr_run_report *r);
/* {"checked":..., "findings": [...], "piecewise": {...}} (json_t *) */
void *gr_capcheck_variant_json(const gr_capcheck_variant *cv);
/* The record path for a variant: FILE itself with one variant, else FILE with ".VARIANT" before
 * its extension. */
void gr_capcheck_record_path(const char *base, const char *variant, int nplans, char *out,
                             size_t size);

#ifdef __cplusplus
}
#endif
#endif
