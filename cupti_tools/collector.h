/* The CUPTI collector: the process's one CUPTI subscription. It enables the activity kinds and
 * per-API records a launch-overhead trace needs (kernels, memcpy/memset, CUPTI overhead, and API
 * records only for launches, graph launches, copies, syncs and profiler start/stop), streams the
 * records to a trace file through the writer, and runs the callback layer:
 *
 * API records: before CUDA initialises (the injection) per-API enables select them; once CUDA
 * is initialised (in-process) per-API enables alone record nothing (seen on the H200, CUDA 13),
 * so the RUNTIME/DRIVER kinds are enabled and every unwanted API switched off, checked (when the
 * caller gives config.probe_runtime) by a start-up probe, with the unfiltered kinds as the
 * fallback. The end record counts API records against the launch calls the callbacks saw.
 *
 *   - API callbacks (enter/exit) for launches, copies, graph building and event record/wait:
 *     each thread keeps the stack of API calls it is inside (gr_cupti_current_api), which is how
 *     a graph node is attributed to the call that created it
 *   - resource callbacks: context creation (device name into the trace) and graph node
 *     creation/cloning ("node" records: node id -> creating API call, correlation id and the op
 *     tag current then; clones point at their original, as in CUPTI's cuda_graphs_trace sample)
 *   - listeners: other tools in this process (capture checking, #6) register a function that
 *     sees every API callback the collector receives, and can widen the set of APIs it receives
 *     (gr_cupti_watch_api), without a second subscription (CUPTI allows only one)
 *
 * NVTX (config.nvtx, the injection): the traced program's range pushes and pops, and range
 * starts and ends, become "nvtx_push"/"nvtx_pop" records with the thread, the domain and the
 * host time on CUPTI's clock; the reader pairs them into ranges.
 *
 * Op tags (graphrun): gr_cupti_tag_push/pop around each op push a CUPTI external correlation id,
 * so eager kernels map to ops through "ext" records, and graph nodes created meanwhile carry the
 * tag in their "node" record.
 *
 * CUPTI state is process-wide, so the collector is a singleton; callbacks may run on any thread.
 */
#ifndef GR_COLLECTOR_H
#define GR_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_cupti_config {
    const char *trace_path;
    int exclusive;          /* create the file with O_EXCL (never overwrite another process's trace) */
    const char *mode;       /* "injection" or "in-process" (written to the header) */
    const char *command;    /* traced command line (header) */
    int64_t steps;          /* steps the program runs, 0 unknown (header) */
    int latency;            /* queued/submitted timestamps; honoured only before CUDA initialises */
    int driver_api;         /* driver-API records too (default 1) */
    int memcpy;             /* memcpy/memset activity and API records (default 1) */
    int tags;               /* op tags through external correlation (in-process graphrun) */
    int nvtx;               /* the program's NVTX ranges as "nvtx_push"/"nvtx_pop" records (NVTX
                               callbacks: CUPTI gets NVTX calls only when NVTX_INJECTION64_PATH
                               names libcupti, or the injection library, which hands them on) */
    size_t buffer_bytes;    /* activity buffer size (default 8 MiB) */
    int max_buffers;        /* at most this many buffers in memory (default 32) */
    int wait_ms;            /* how long a buffer request waits for the writer (default 60000) */
    const char *device;     /* device name when the caller knows it, else from the first context */
    const char *cc;
    int runtime_version;    /* CUDA runtime version when the caller knows it */
    /* Optional, tracing after CUDA initialised (in-process): a cheap runtime-API call (graphrun:
     * cudaDeviceSynchronize) for the start-up probe, which checks that API records arrive (this
     * call for the runtime domain, cuCtxSynchronize for the driver's) and falls back to the whole
     * RUNTIME/DRIVER kinds where none does. Given only when synchronising is safe then (never
     * inside a stream capture). NULL: no probe. */
    void (*probe_runtime)(void);
} gr_cupti_config;

void gr_cupti_config_default(gr_cupti_config *c);

/* Opens the trace, subscribes and enables tracing. On failure nothing stays enabled; when the
 * trace file could be created it is closed with an end record that carries the error, so a
 * reader learns why the program ran untraced. Another CUPTI client (nsys, ncu,
 * compute-sanitizer) gives GR_ERR_CUDA with gr_cupti_other_subscriber(err) true. */
gr_status gr_cupti_start(const gr_cupti_config *c, gr_error *err);
int gr_cupti_active(void);

typedef struct gr_cupti_result {
    uint64_t records, dropped, buffers, waits, refused, bytes, lines, callback_errors;
    char path[1024];
} gr_cupti_result;

/* Flushes every record (the caller synchronises the device first when it can), stops tracing,
 * writes the end record with `reason` and closes the trace. `finalize` also detaches CUPTI from
 * the process (cuptiFinalize) so tracing can start again later in it; pass 0 at process exit.
 * Safe to call once per start; later calls return GR_OK. */
gr_status gr_cupti_stop(const char *reason, int finalize, gr_cupti_result *res, gr_error *err);

/* CUPTI's clock (ns), the one every record uses, and a time as ns since the trace's t0. */
uint64_t gr_cupti_now(void);
int64_t gr_cupti_rel(uint64_t ts);

/* Op tags: nest per thread. No-ops when tracing is off. */
void gr_cupti_tag_push(uint64_t tag);
void gr_cupti_tag_pop(void);

/* A record line of the caller's (graphrun's "op" and "region"): one JSON object, no newline. */
void gr_cupti_line(const char *json, size_t len);

/* ---- the callback layer ---- */

typedef struct gr_cupti_api_call {
    int driver;          /* 0 runtime API, 1 driver API */
    uint32_t cbid;       /* CUPTI callback id (cupti_runtime_cbid.h / cupti_driver_cbid.h) */
    int enter;           /* 1 at entry, 0 at exit */
    const char *name;    /* function name as CUPTI gives it (static storage) */
    uint32_t corr;       /* correlation id: the "corr" of this call's "api" record */
    int depth;           /* API calls this thread is inside, this one included */
    const void *cbdata;  /* the CUpti_CallbackData (parameters, return value) */
} gr_cupti_api_call;

typedef void (*gr_cupti_listener)(void *user, const gr_cupti_api_call *call);

/* Register a listener (at most 4). It runs inside CUPTI's callback on the calling thread: keep
 * it short and do not call CUDA from it. */
gr_status gr_cupti_add_listener(gr_cupti_listener fn, void *user, gr_error *err);
/* Unregister (fn, user); returns 1 when it was registered. Do not call it from a listener. */
int gr_cupti_remove_listener(gr_cupti_listener fn, void *user);
/* Receive callbacks for one more API (driver 0/1, callback id). */
gr_status gr_cupti_watch_api(int driver, uint32_t cbid, gr_error *err);
/* The outermost API call the calling thread is inside, or 0 when none (fills *out). */
int gr_cupti_current_api(gr_cupti_api_call *out);

/* ---- callbacks only (capture checking, #6) ---- */

/* Receives CUPTI's NVTX callbacks (cbid from cupti_nvtx_cbid.h, data a CUpti_NvtxData). Runs
 * inside the NVTX call on the calling thread: short, no CUDA calls. */
typedef void (*gr_cupti_nvtx_listener)(void *user, uint32_t cbid, const void *nvtx_data);
/* Subscribes for callbacks only: every runtime and driver API call reaches the listeners
 * (gr_cupti_add_listener), NVTX calls reach nvtx_fn when it is not NULL (CUPTI sees NVTX only in
 * programs started with NVTX_INJECTION64_PATH naming libcupti); no trace file, no activity
 * records. Fails under another CUPTI client (gr_cupti_other_subscriber) and while a trace runs. */
gr_status gr_cupti_callbacks_start(gr_cupti_nvtx_listener nvtx_fn, void *nvtx_user, gr_error *err);
/* Unsubscribes; `finalize` detaches CUPTI (cuptiFinalize) so that tracing or checking can start
 * again later in the process and nothing slows API calls meanwhile. GR_OK when not started. */
gr_status gr_cupti_callbacks_stop(int finalize, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
