/* NVTX annotation of graphrun's work, for Nsight Systems (nvtx3, header-only): the "graphrun"
 * domain with categories eager, capture and replay; a range per phase (a timing run or a
 * capture of one plan), per step inside a timing run, and per op in eager runs and captures;
 * every message names the workload and the variant. Without an NVTX tool attached each call
 * costs a branch (nothing is formatted). While graphrun writes its own CUPTI trace (run --trace,
 * --timeline, --html) the same ranges also go into the trace as "nvtx" records, so the timeline
 * exports can show them (cupti_tools/README.md). State is per thread: sessions on different
 * threads (the replay service) annotate independently. */
#ifndef GR_NVTX_H
#define GR_NVTX_H

#include <stddef.h>
#include <stdint.h>

#include "core/device.h"
#include "core/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_NVTX_DOMAIN "graphrun"

/* NVTX category ids in the "graphrun" domain (named with nvtxDomainNameCategoryA). */
typedef enum gr_nvtx_cat {
    GR_NVTX_NONE = 0,
    GR_NVTX_EAGER = 1,   /* eager launches of the plan's ops */
    GR_NVTX_CAPTURE = 2, /* stream capture of the ops into a graph */
    GR_NVTX_REPLAY = 3   /* graph launches */
} gr_nvtx_cat;

const char *gr_nvtx_cat_name(gr_nvtx_cat c);

/* 1 when an NVTX tool is attached to this process (the domain could be created). The first
 * call initialises NVTX: a tool named in NVTX_INJECTION64_PATH is loaded then. */
int gr_nvtx_tool_attached(void);

/* A phase of one plan on the calling thread: `what` ("timing", "capture", ...) goes into the
 * phase range's message; step and op ranges inside it are numbered and named from it. Phases
 * do not nest: a begin ends the phase still open, and an end closes any step or op range left
 * open by a failure inside it. */
void gr_nvtx_phase_begin(const gr_plan *plan, gr_nvtx_cat cat, const char *what);
void gr_nvtx_phase_end(void);
/* One step of the current phase (numbered from 1 within it). */
void gr_nvtx_step_begin(void);
void gr_nvtx_step_end(void);
/* Executor hooks that put a range around each op (gr_run_opts.hooks; the traced run chains
 * them after its op tags). */
const gr_exec_hooks *gr_nvtx_op_hooks(void);

/* For tests: send the "nvtx" records to `sink` (times from `clock`, ns) instead of graphrun's
 * CUPTI trace, whether or not a trace is being written. NULL restores the trace. Set it while no
 * phase is open. */
typedef void (*gr_nvtx_sink)(void *user, const char *line, size_t len);
void gr_nvtx_set_sink(gr_nvtx_sink sink, void *user, uint64_t (*clock)(void));

#ifdef __cplusplus
}
#endif
#endif
