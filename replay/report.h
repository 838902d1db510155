/* The report of a run, one module for every command: `graphrun run` (text and JSON), the replay
 * service's capture and replay replies (the same report, one variant), and the JSON pieces
 * (timings, summaries, graphs, checks) that `graphrun tp` and the traced run write with it. */
#ifndef GR_REPORT_H
#define GR_REPORT_H

#include <stdio.h>

#include "core/device.h"
#include "core/workload.h"
#include "replay/pipeline.h"
#include "replay/timing.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_run_report {
    const gr_workload *wl;
    gr_device_info dev;
    gr_bandwidth bw;
    int have_bw;
    /* the launch floor (gr_run_plans, after the variants): graphs of k_small and k empty kernels
     * (and one tiny each) timed in this process; node_us: what one more kernel node costs (the
     * slope between the two), launch_us: what the graph's launch costs besides its nodes (the
     * intercept); pdl_* the same with PDL (pdl_node_us 0: not measured); why: why not, when not */
    struct {
        int measured, k_small, k;
        double node_us, launch_us, pdl_node_us, pdl_launch_us;
        char why[256];
    } launch_floor;
    gr_run_opts opts;
    gr_variant_run *v; /* nv of them, grown by gr_run_report_add */
    int nv, cap;       /* cap 0 with nv > 0: v is borrowed (the service's held result) */
    char date[64];
} gr_run_report;

/* A report dated now, for these options (NULL: the defaults). NULL when out of memory. */
gr_run_report *gr_run_report_create(const gr_workload *wl, const gr_device_info *dev,
                                    const gr_run_opts *o);
/* A new, zeroed variant result for plan p; NULL when out of memory. */
gr_variant_run *gr_run_report_add(gr_run_report *r, const gr_plan *p);
void gr_run_report_destroy(gr_run_report *r);

void gr_report_text(FILE *f, const gr_run_report *r);
void *gr_report_json(const gr_run_report *r); /* json_t *, schema_version 1 */

/* Per-step kernel count the report uses: graph kernel nodes when captured, else the plan's. */
int gr_variant_kernels(const gr_variant_run *v);

/* JSON pieces (json_t *) shared by the reports of run, tp and the traced run. */
void *gr_report_summary_json(const gr_summary *s);
/* The bandwidth probe (JSON "copy_bandwidth"); `where`: e.g. "on device 0", NULL for none. */
void *gr_report_bandwidth_json(const gr_bandwidth *bw, const char *where);
/* `stream`: where the events were recorded, NULL for "main stream" */
void *gr_report_timing_json(const gr_timing *t, const char *stream);
void *gr_report_graph_json(const gr_graph *g);
void *gr_report_checks_json(const gr_check *c, int n);

#ifdef __cplusplus
}
#endif
#endif
