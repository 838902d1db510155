/* The cupti-launchstat trace: the record kinds of the JSONL format (schema_version 1, documented
 * in cupti_tools/README.md) as they are held in memory after reading, and the reader. Reading
 * needs no GPU and no CUPTI: recorded traces are analysed anywhere. */
#ifndef GR_TRACE_H
#define GR_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "gr_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_TRACE_SCHEMA_VERSION 1
/* the tools' one version, project(VERSION) in CMakeLists.txt (gr_version.h is generated) */
#define GR_LAUNCHSTAT_VERSION GR_VERSION

/* API categories, from the function name (cudaLaunchKernel -> LAUNCH, ...). The collector uses
 * them to choose which APIs to record, the analysis to group them. */
typedef enum gr_api_cat {
    GR_API_OTHER = 0,
    GR_API_LAUNCH,       /* cudaLaunchKernel*, cuLaunchKernel*, cooperative launches */
    GR_API_GRAPH_LAUNCH, /* cudaGraphLaunch, cuGraphLaunch */
    GR_API_MEMCPY,
    GR_API_MEMSET,
    GR_API_SYNC,         /* *Synchronize */
    GR_API_PROFILER,     /* cudaProfilerStart/Stop, cuProfilerStart/Stop: region markers */
    GR_API_GRAPH_BUILD,  /* graph node creation, instantiation, stream capture begin/end */
    GR_API_EVENT,        /* event record / stream wait (captured as graph nodes) */
    GR_API_NCAT
} gr_api_cat;

gr_api_cat gr_api_category(const char *name);
const char *gr_api_cat_name(gr_api_cat c);
/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (into out). */
void gr_api_strip_version(const char *name, char *out, size_t size);

typedef enum gr_gpu_kind { GR_GPU_KERNEL = 0, GR_GPU_MEMCPY, GR_GPU_MEMSET } gr_gpu_kind;

/* A kernel, memcpy or memset execution. Times are ns since the header's t0. */
typedef struct gr_tr_gpu {
    int64_t s, e;
    int64_t q, sub;     /* kernel: queued / submitted (latency timestamps), 0 when not collected */
    uint64_t node;      /* graph node id when launched by a graph, else 0 */
    uint64_t bytes;     /* memcpy / memset */
    uint32_t corr, stream, ctx, dev, graph;
    int32_t name;       /* kernel: string index of its name; memcpy: of its copy kind; else -1 */
    int32_t grid[3], block[3];
    uint8_t kind;       /* gr_gpu_kind */
    uint8_t incomplete; /* CUPTI could not collect its timestamps ("inc":1): not timed */
    int line;
} gr_tr_gpu;

/* A runtime or driver API call. */
typedef struct gr_tr_api {
    int64_t s, e;
    uint32_t corr, tid;
    int32_t cbid, name, ret;
    uint8_t driver;     /* 1 = driver API, 0 = runtime API */
    uint8_t cat;        /* gr_api_cat */
    int line;
} gr_tr_api;

typedef struct gr_tr_ext {
    uint32_t corr;
    uint64_t id;
    int kind;
} gr_tr_ext;

/* A graph node as created (by the API call that was running then) or cloned (at instantiate). */
typedef struct gr_tr_node {
    uint64_t node, orig; /* orig: the node this one was cloned from, 0 when created */
    uint32_t graph, corr;
    int32_t api;         /* string index of the creating API's name, -1 unknown */
    uint64_t tag;        /* op tag current when it was created (graphrun), 0 none */
    int type;
    int line;
} gr_tr_node;

/* A workload op (graphrun in-process traces): kernels carry its tag through external
 * correlation (eager) or through the node that captured them (graph). */
typedef struct gr_tr_op {
    uint64_t tag;
    int32_t name, kernel, variant;
    int index;
    /* the plan's dataflow (graphrun traces since session 19; has_flow 0 in older ones): the
     * buffers it reads and writes (string indices of "3,5" lists, -1 none), the bytes the plan
     * counts for it, and the kernels it launches (-1: a library decides) */
    int has_flow;
    int32_t in, out;
    double rd, wr;
    int launches;
} gr_tr_op;

/* A buffer of a graphrun variant (with the ops' dataflow): its size and whether it is an output
 * of the step (checked against the reference), so that a buffer written and read back only inside
 * a fused chain is known to be an intermediate. */
typedef struct gr_tr_buf {
    int32_t variant, name;
    int index;
    double bytes;
    int output;
} gr_tr_buf;

/* A traced region with host-clock bounds (graphrun: one per variant and mode). */
typedef struct gr_tr_region {
    int32_t name, variant, mode;
    int64_t s, e;
    int64_t steps;
    double traced_step_us;   /* CUDA events per step inside the traced run, 0 unknown */
    double untraced_step_us; /* the same workload's untraced measurement, 0 unknown */
    int from_profiler;       /* 1 when made from cudaProfilerStart/Stop calls */
    int line;
} gr_tr_region;

/* A range of the traced program's own NVTX annotation (nvtxRangePush/Pop, nvtxDomainRangePushEx/
 * Pop, nvtxRangeStart/End, nvtxDomainRangeStartEx/End), paired by the reader from the collector's
 * "nvtx_push" and "nvtx_pop" records: push/pop ranges per thread and domain in time order (NVTX
 * nests them per thread per domain), start/end ranges by their id, from any thread. */
typedef struct gr_tr_nvtx {
    int64_t s, e; /* push and pop, host clock, ns since t0; an open range ends at the trace's end */
    uint32_t tid; /* the thread that pushed it (a start/end range: that started it) */
    int32_t name, dom; /* strings: its message ("" none), its domain ("" the default domain) */
    int32_t parent;    /* the push/pop range it is nested in (same thread and domain), -1 none */
    int depth;         /* push/pop ranges it is nested in (0 outermost); start/end ranges 0 */
    uint8_t start_end; /* 1: nvtxRangeStart/End (tied to no thread), 0: push/pop */
    uint8_t open;      /* never popped before the trace ended */
    int line;          /* of its push */
} gr_tr_nvtx;

typedef struct gr_tr_ovh {
    int32_t kind;
    int64_t s, e;
    int line;
} gr_tr_ovh;

/* Records the reader kept out of the analysis for one reason: how many, and the first one's line
 * (the report says so; figures never include them). */
typedef struct gr_tr_excluded {
    size_t n;
    int first_line;
} gr_tr_excluded;

/* The longest a trace without an end time may span (its records' times count from t0, in ns):
 * times beyond this are absurd and their records are excluded. */
#define GR_TRACE_MAX_SPAN_NS (30LL * 24 * 3600 * 1000000000LL)

typedef struct gr_tr_ctx {
    uint32_t ctx, dev;
    int32_t name;
    int sms;
    char cc[16];
} gr_tr_ctx;

#define GR_VEC(T)                                                                                  \
    struct {                                                                                       \
        T *v;                                                                                      \
        size_t n, cap;                                                                             \
    }

typedef struct gr_trace {
    char path[512];
    int lines;
    /* header */
    int schema_version;
    char tool[64], tool_version[32], mode[32];
    char command[2048];
    char device[128], cc[16];
    char apis[512], kinds[256];
    int64_t t0, start_unix_ns, steps;
    int pid, driver_version, runtime_version, cupti_version;
    int latency;
    /* end record */
    int has_end;
    uint64_t end_records, dropped, buffers, buffer_waits, write_errors;
    int64_t end_ts;
    char end_reason[128];
    char end_error[512];  /* set when the collector could not trace (e.g. another subscriber) */
    /* the collector's own counts (end record; has_api_counts 0 in traces written before them):
     * API records it wrote, those of launch APIs, top-level launch calls its callbacks saw,
     * API records of APIs it meant to filter out, external-correlation records, dropped counts
     * CUPTI reported before the traced work (not in `dropped`), and where drops were reported */
    int has_api_counts;
    uint64_t end_api_records, end_launch_api_records, end_launch_calls_seen,
        end_unwanted_api_records;
    uint64_t end_ext_records, dropped_before_start;
    char dropped_detail[1024];
    /* records */
    GR_VEC(gr_tr_gpu) gpu;
    GR_VEC(gr_tr_api) api;
    GR_VEC(gr_tr_ext) ext;
    GR_VEC(gr_tr_node) node;
    GR_VEC(gr_tr_op) op;
    GR_VEC(gr_tr_buf) buf;
    GR_VEC(gr_tr_region) region;
    GR_VEC(gr_tr_ovh) ovh;
    GR_VEC(gr_tr_ctx) ctx;
    /* the program's NVTX ranges (push order); nvtx_traced: the header says the collector recorded
     * them (cupti-launchstat's injection), has_nvtx_calls: the end record counts the NVTX range
     * calls its callbacks saw (end_nvtx_calls); pops without a push on their thread and domain (an
     * end without a start of its id) are ignored and counted, ranges never popped are kept open */
    GR_VEC(gr_tr_nvtx) nvtx;
    int nvtx_traced, has_nvtx_calls;
    uint64_t end_nvtx_calls;
    gr_tr_excluded nvtx_unmatched_pop, nvtx_open;
    size_t activity_records; /* gpu + api + ext + ovh lines: checked against the end record */
    size_t unknown_records;  /* lines of record kinds this reader does not know (skipped) */
    char notes[512];         /* what --partial skipped, for the report */
    /* kernel, memcpy, memset, API, overhead and region records excluded: end before start, or a time
     * outside the trace's span [0, span_end] (the end record's "e", else GR_TRACE_MAX_SPAN_NS) */
    gr_tr_excluded excl_backwards, excl_outside;
    gr_tr_excluded excl_latency; /* kernels kept, their queued/submitted stamps (out of order) not */
    int64_t span_end;
    /* strings (kernel and API names, op names, ...) by index */
    GR_VEC(char *) str;
} gr_trace;

/* Reads a trace file: a regular file (core/fileio.h: no FIFO, device or directory, at most the
 * trace limit of 8 GiB) of lines of at most GR_JSONL_MAX_LINE bytes. Any malformed, overlong or
 * truncated line is an error naming the file and line (GR_ERR_INPUT). Records whose times are
 * impossible are excluded and counted (excl_backwards, excl_outside), not analysed. A trace
 * without its end record (the traced program was killed before the trace was flushed) is an
 * error unless `partial`. GR_ERR_IO when the file cannot be read. */
gr_status gr_trace_load(const char *path, int partial, gr_trace **out, gr_error *err);
/* The same from memory (tests); `label` names it in messages. */
gr_status gr_trace_load_mem(const char *text, size_t len, const char *label, int partial,
                            gr_trace **out, gr_error *err);
void gr_trace_destroy(gr_trace *t);
/* String by index; "" for -1 or out of range. */
const char *gr_trace_str(const gr_trace *t, int32_t idx);

/* For every API record, the outermost traced call on the same thread that encloses it in time
 * (cuLaunchKernel inside cudaLaunchKernel, or the runtime's internal __cudaLaunchKernel inside
 * cudaLaunchKernel), or -1 for a top-level call. `outer` holds t->api.n entries. Returns 0, or
 * -1 when out of memory. */
int gr_trace_api_outermost(const gr_trace *t, int32_t *outer);

/* A measured range between a top-level cudaProfilerStart and the next cudaProfilerStop
 * (torch.cuda.profiler.start/stop): from the start call's end to the stop call's start;
 * open_end when no stop followed (e = INT64_MAX). */
typedef struct gr_tr_range {
    int64_t s, e;
    int open_end;
} gr_tr_range;
/* Pairs the profiler calls `calls` (indices into t->api, any order; the caller decides which
 * are top-level) into ranges, in time order. `out` holds at least n / 2 + 1 entries. Returns
 * the number of ranges. */
size_t gr_trace_profiler_ranges(const gr_trace *t, const size_t *calls, size_t n, gr_tr_range *out);

#ifdef __cplusplus
}
#endif
#endif
