/* The timeline of a trace and its Chrome Trace Event export (JSON that ui.perfetto.dev and
 * chrome://tracing open). The timeline model places every record of a trace (trace.h) on a
 * track: one process per measured run (graphrun's eager and graph regions per variant, or
 * cudaProfilerStart/Stop ranges; records outside them in a process of their own), and in each a
 * track per GPU stream, one per host thread for API calls, one per host thread for NVTX ranges
 * (graphrun's "nvtx" records and the traced program's own ranges) and one for the run itself.
 * Tracks are split into lanes so that slices on a lane always nest (overlapping kernels under
 * programmatic dependent launch, say, go to a second lane). Launch calls are tied to the GPU work
 * they launched by correlation id: one flow per kernel, so each node of a graph launch gets its
 * own. Everything is traced: the export says so. The HTML report (html.h) draws from the same
 * model. Uses only core and the trace. */
#ifndef GR_CHROME_H
#define GR_CHROME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "cupti_tools/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gr_tl_kind {
    GR_TL_KERNEL = 0,
    GR_TL_MEMCPY,
    GR_TL_MEMSET,
    GR_TL_API,
    GR_TL_NVTX,
    GR_TL_RUN
} gr_tl_kind;
typedef enum gr_tl_track_kind {
    GR_TL_TRACK_RUN = 0,
    GR_TL_TRACK_NVTX,
    GR_TL_TRACK_HOST,
    GR_TL_TRACK_STREAM
} gr_tl_track_kind;

/* An NVTX range: graphrun's own from a trace's "nvtx" records (graphrun writes them while it
 * traces itself), or the traced program's (trace.h: gr_tr_nvtx, from "nvtx_push"/"nvtx_pop"). */
typedef struct gr_tl_nvtx {
    int64_t s, e;
    uint32_t tid;
    int32_t msg, cat, variant, dom; /* strings in the timeline's table */
    int level;                      /* 0 phase, 1 step, 2 op; -1 a range of the program */
    int op;                         /* op index (level 2), else -1 */
    int64_t step;                   /* step number in its phase (level 1), else 0 */
    int32_t prog; /* the program's range: its index in the trace's nvtx, else -1 */
} gr_tl_nvtx;

typedef struct gr_tl_slice {
    int64_t s, e;  /* ns since the trace's t0 */
    int32_t rec;   /* index into the trace's gpu or api records, the timeline's nvtx or regions */
    uint8_t kind;  /* gr_tl_kind */
    uint16_t lane; /* lane of its track after layout */
} gr_tl_slice;

typedef struct gr_tl_track {
    int proc;
    int kind;             /* gr_tl_track_kind */
    uint32_t ctx, stream; /* GPU stream tracks */
    uint32_t tid;         /* host thread of API and NVTX tracks */
    int lanes;
    gr_tl_slice *v; /* sorted by start (longer first at equal starts) */
    size_t n, cap;
} gr_tl_track;

/* A measured run: graphrun's region record or a cudaProfilerStart/Stop range. */
typedef struct gr_tl_region {
    char name[160], variant[64], mode[32];
    int64_t s, e, steps;
    double traced_step_us, untraced_step_us;
    int from_profiler;
} gr_tl_region;

typedef struct gr_tl_proc {
    char name[256];
    char variant[64], mode[32]; /* graphrun regions: "eager" or "graph" */
    int region;                 /* index into regions, -1 for records outside every region */
    int64_t s, e;               /* the region's host interval, or the records' extent */
    int64_t steps;              /* steps in it (region, --steps or the header), 0 unknown */
    double traced_step_us, untraced_step_us;
    size_t gpu, api, nvtx; /* records placed in it */
} gr_tl_proc;

typedef struct gr_timeline {
    const gr_trace *tr;
    gr_tl_region *regions;
    size_t nregions;
    gr_tl_proc *procs;
    size_t nprocs;
    size_t procs_written; /* processes with a track (the others are left out of the export) */
    gr_tl_track *tracks;
    size_t ntracks;
    gr_tl_nvtx *nvtx;
    size_t nnvtx;
    char **str;
    size_t nstr, strcap;
    /* per trace record */
    int32_t *api_top; /* API record: the outermost call it is inside (itself when top-level) */
    int32_t *api_proc, *api_track;
    int32_t *gpu_api; /* GPU record: the top-level API call that launched it, -1 when absent */
    int32_t *gpu_proc, *gpu_track;
    uint16_t *api_lane, *gpu_lane;
    uint64_t *gpu_tag; /* GPU record: graphrun op tag (eager: external correlation; graph: node) */
    int32_t *gpu_op;   /* GPU record: its op record (trace op index), -1 */
    int32_t *nvtx_proc, *nvtx_track;
    uint16_t *nvtx_lane;
    size_t flows;   /* launch call -> GPU work arrows */
    size_t skipped; /* GPU records without timestamps (not placed) */
} gr_timeline;

/* Builds the timeline of `tr`. `nvtx_path`: the trace file to read "nvtx" records from (the
 * reader of trace.h skips them), NULL for none. `steps`: steps of the whole trace or of profiler
 * ranges when the trace does not say (cupti-launchstat --steps), 0 unknown. */
gr_status gr_timeline_build(const gr_trace *tr, const char *nvtx_path, int64_t steps,
                            gr_timeline **out, gr_error *err);
void gr_timeline_destroy(gr_timeline *tl);
const char *gr_tl_str(const gr_timeline *tl, int32_t idx);
/* The workload op a GPU record ran for (graphrun traces), or NULL. */
const gr_tr_op *gr_tl_gpu_op(const gr_timeline *tl, size_t gpu);
/* The process of the region named `name` (NULL: the only region's, else the first process).
 * -1 with an error naming the regions when there is no such region. */
int gr_tl_find_proc(const gr_timeline *tl, const char *name, gr_error *err);

/* Writes the Chrome Trace Event JSON ("traceEvents" with processes, threads, X slices, flow
 * events s/f, timestamps in us with ns precision). It is also a PyTorch-profiler (Kineto) trace
 * as Holistic Trace Analysis reads one: "schemaVersion", "distributedInfo" (rank 0),
 * "deviceProperties"; GPU work carries args "stream", "device" and "correlation" (its launch
 * call carries the same "correlation"), memcpys and memsets are named "Memcpy ..."/"Memset ..."
 * (cat gpu_memcpy, gpu_memset). GR_ERR_IO names the file when it cannot be written. */
gr_status gr_chrome_write(const gr_timeline *tl, const char *path, gr_error *err);
gr_status gr_chrome_write_file(const gr_timeline *tl, FILE *f, const char *label, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
