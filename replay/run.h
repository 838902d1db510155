/* `graphrun run`: every selected variant through the run stage list (replay/pipeline.h), one
 * variant's buffers on the device at a time, each later variant's outputs checked against the
 * first's; the results in a gr_run_report (replay/report.h). */
#ifndef GR_RUN_H
#define GR_RUN_H

#include "core/device.h"
#include "core/workload.h"
#include "replay/pipeline.h"
#include "replay/report.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs every plan into r (made by gr_run_report_create); failures are recorded per variant and
 * the worst status is returned. Then, unless opts.launch_floor is 0 or a CUDA error stopped the
 * run, the launch floor (r->launch_floor; a failure there is recorded, not returned). */
gr_status gr_run_plans(const gr_plan *const *plans, int nplans, gr_run_report *r, gr_error *err);

/* A launch floor plan (gr_run_plans times two, GR_LAUNCH_FLOOR_K_SMALL and GR_LAUNCH_FLOOR_K,
 * after the variants, when opts.launch_floor): k empty kernels and one tiny kernel adding 1 to x,
 * for this target. */
enum { GR_LAUNCH_FLOOR_K_SMALL = 64, GR_LAUNCH_FLOOR_K = 1024 };
gr_status gr_launch_floor_plan(const gr_target *t, int k, gr_plan **out, gr_error *err);

/* The launch floor's two figures from the two graphs' steps (us) and kernel nodes: node_us the
 * slope, launch_us the intercept; when the intercept is below 0, launch_us 0 and node_us the lower
 * of the two graphs' per-node averages (a floor under both). GR_ERR_INTERNAL when the larger graph
 * was not slower: no slope to take. */
gr_status gr_launch_floor_fit(double small_us, int small_nodes, double large_us, int large_nodes,
                              double *node_us, double *launch_us, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
