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
 * the worst status is returned. */
gr_status gr_run_plans(const gr_plan *const *plans, int nplans, gr_run_report *r, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
