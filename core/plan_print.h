/* The plan as text (graphrun validate, and the head of graphrun run) and as JSON (an "ops" array
 * with kernel, buffers, shapes, launch dims and bytes per op, plus totals), and the HBM
 * accounting comparison across variants (round trips saved by fusion). */
#ifndef GR_PLAN_PRINT_H
#define GR_PLAN_PRINT_H

#include <stdio.h>

#include "core/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* "1.20 GB", "512.0 KB": decimal units. */
void gr_fmt_bytes(double bytes, char *out, size_t size);
/* max_ops: ops listed before the rest are summarised (<= 0: all). */
void gr_plan_print(FILE *f, const gr_plan *plan, int max_ops);
/* json_t * (jansson), caller owns. */
void *gr_plan_to_json(const gr_plan *plan);
/* What the variant's outputs are checked against besides graph == eager, one line: "the CPU
 * reference", "the eager outputs of variant naive (\"reference\": true)", "expected data from files
 * (y)", or "nothing but graph == eager: ..." when there is no CPU reference, reference variant
 * or expect file. Returns 1 when something besides graph == eager checks the outputs. The run
 * report prints the line; `kind` (may be NULL) gets "cpu", "variant", "expect" or "none". */
int gr_plan_checks_text(const gr_plan *plan, char *out, size_t size, const char **kind);
/* The modules the plan's user ops use, one line each ("mine: source k.cu, NVRTC 13.0 for
 * sm_90, from the cache"). */
void gr_plan_print_modules(FILE *f, const gr_plan *plan);

/* Accounting across variants of one workload: bytes, kernels, round trips per step, and what
 * each variant saves against the one that moves the most bytes. */
void gr_accounting_print(FILE *f, const gr_plan *const *plans, int n);
void *gr_accounting_to_json(const gr_plan *const *plans, int n);

#ifdef __cplusplus
}
#endif
#endif
