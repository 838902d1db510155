/* The report of an analysed trace: text (every number says it is traced) and JSON
 * (schema_version 1), and the side-by-side comparison of two scopes (eager vs graph run, or any
 * two traces). */
#ifndef GR_LS_REPORT_H
#define GR_LS_REPORT_H

#include <stdio.h>

#include "cupti_tools/analysis.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One line on what tracing does to the numbers, printed at the top of every traced report. */
extern const char *const gr_ls_inflation_note;

/* Full text report: header, region table, NVTX range table, then per scope (each region, or the
 * whole trace when there are no regions, then the largest NVTX ranges) API calls, kernel
 * launches, streams, kernel names, graph launches, ops. */
void gr_ls_print(FILE *f, const gr_ls_report *r);
/* Just the region table (graphrun --trace prints this one). */
void gr_ls_print_regions(FILE *f, const gr_ls_report *r);
/* The table of the program's NVTX range scopes (the first opts.top, then "N more"); gr_ls_print
 * adds the full sections of the GR_LS_NVTX_DETAILS largest. The membership rule, in words. */
void gr_ls_print_nvtx(FILE *f, const gr_ls_report *r);
#define GR_LS_NVTX_DETAILS 4
extern const char *const gr_ls_nvtx_membership;
/* Records the reader excluded (end before start, times outside the trace's span), and what the
 * trace failed to record that leaves numbers missing: no API records at all (launch
 * calls, launch host time and latency unknown; eager kernels unmapped to ops), fewer launch API
 * records than the launch calls the collector saw, eager kernels without a launch API record,
 * graphrun region kernels without an op. Dropped records are reported apart. Writes at most
 * `max` and returns how many there are. */
typedef struct gr_ls_warning {
    char msg[768];
} gr_ls_warning;
size_t gr_ls_warnings(const gr_ls_report *r, gr_ls_warning *out, size_t max);
/* 1 when the two scopes ran different kernels per step (more than 1% apart), with the warning
 * in msg: per-kernel figures then divide each side by its own count. */
int gr_ls_compare_mismatch(const gr_ls_scope *a, const gr_ls_scope *b, char *msg, size_t size);
/* Side by side: step time, launches, gaps, idle fraction; and (a - b) per kernel. */
void gr_ls_print_compare(FILE *f, const char *label_a, const gr_ls_scope *a, const char *label_b,
                         const gr_ls_scope *b);
/* json_t * of the report / of a comparison. */
void *gr_ls_json(const gr_ls_report *r);
void *gr_ls_compare_json(const char *label_a, const gr_ls_scope *a, const char *label_b, const gr_ls_scope *b);
/* Writes a json_t * to `path` ("-": stdout), indented; GR_ERR_IO with the OS's reason (a full
 * disk included: every write, the flush and the close are checked). `what` names it. */
gr_status gr_ls_write_json(const char *path, const void *json, const char *what, gr_error *err);
/* Demangled (when the C++ runtime is linked) and shortened to at most `width` characters. */
const char *gr_ls_kernel_name(const char *name, int width, char *buf, size_t size);
/* Graphrun traces hold eager and graph regions per variant: pairs (eager, graph) by variant, for
 * the automatic comparison. Returns the count written. */
size_t gr_ls_mode_pairs(const gr_ls_report *r, const gr_ls_scope **eager, const gr_ls_scope **graph, size_t max);

#ifdef __cplusplus
}
#endif
#endif
