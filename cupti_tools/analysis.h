/* Analysis of a trace: per API kind, per kernel launch, per stream, per kernel name, per graph
 * launch and per workload op, for the whole trace and for each region (graphrun's eager/graph
 * runs, or cudaProfilerStart/Stop ranges). Every number is traced. Definitions (also in
 * cupti_tools/README.md):
 *   - launch latency: kernel start - entry of the API call that launched it (top-level call:
 *     a call made inside another traced call on the same thread, such as cuLaunchKernel inside
 *     cudaLaunchKernel, counts as that outer call); eager kernels only
 *   - gap before a kernel: its start - the latest end of earlier work on its stream (>= 0); the
 *     first kernel of a stream in the scope has none
 *   - GPU span: first start .. last end of the scope's kernels/memcpys/memsets; busy: length of
 *     the union of their intervals; idle = span - busy, split into the holes between busy
 *     intervals; short-gap share = idle in holes shorter than short_gap_us / idle
 *   - per stream: the same with that stream's work, over the scope's GPU span (so idle before
 *     its first and after its last op counts as holes too)
 *   - graph launch: the kernels sharing a graph launch's correlation id; span, busy, gaps between
 *     consecutive nodes (start - latest earlier end, >= 0), first-node latency
 *   - step time: host span / steps for regions (host clock bounds), else GPU span / steps
 * A record belongs to the region whose host interval contains its API call's entry (kernels:
 * the launching call; without one, the kernel's start).
 *
 * NVTX ranges of the traced program (trace.h: gr_tr_nvtx) are scopes too, one per name and domain:
 *   - the name is aggregated (gr_ls_nvtx_key): PyTorch's emit_nvtx decorations (", seq = N",
 *     ", op_id = N", ", sizes = [...]") are cut and a trailing number after a separator becomes
 *     "#", so "step 17" and "step 18" are the instances of one scope "step #"
 *   - a record belongs to every range open on its thread (push/pop ranges; start/end ranges: on
 *     any thread) when its top-level API call entered (GPU work: when the call that launched it
 *     entered), so "step #" holds all its kernels and "forward" inside it only its own; a record
 *     inside two ranges of one scope (a range nested in a range of the same name) counts once;
 *     GPU work without a launching API record belongs to no range (counted: nvtx_unattributed)
 *   - instances are the ranges not inside another range of the same scope; steps = instances
 *     (--steps overrides); host span = the instances' total host time, so us/step is the mean
 *     instance; GPU span, busy and idle, and gaps before kernels, are per instance and summed
 *     (the work between instances is not the scope's idle time) */
#ifndef GR_ANALYSIS_H
#define GR_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/stats.h"
#include "cupti_tools/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_ls_opts {
    double short_gap_us; /* holes shorter than this are launch-bound gaps (default 10) */
    int64_t steps;       /* steps override (0: from the region records or the header) */
    int top;             /* rows per table in the text report (default 15) */
} gr_ls_opts;

void gr_ls_opts_default(gr_ls_opts *o);

typedef struct gr_ls_api_row {
    int32_t name; /* string index in the trace */
    int driver, cat;
    size_t count;  /* top-level calls */
    size_t nested; /* calls made inside another traced call (not top-level) */
    double total_us;
    gr_summary host_us; /* per top-level call (per nested call when there are none) */
} gr_ls_api_row;

typedef struct gr_ls_kernel_row {
    int32_t name;
    size_t count;
    double total_us;
    gr_summary dur_us, gap_us;
} gr_ls_kernel_row;

typedef struct gr_ls_stream_row {
    uint32_t ctx, stream;
    size_t ops, kernels;
    double busy_us, idle_us, short_idle_us;
    gr_summary gap_us; /* gaps before its kernels */
} gr_ls_stream_row;

typedef struct gr_ls_op_row {
    uint64_t tag;
    int32_t name, kernel, variant;
    int index;
    size_t eager, graph; /* kernels mapped to it */
    double total_us;
    gr_summary dur_us;
} gr_ls_op_row;

typedef struct gr_ls_graph {
    size_t launches, node_kernels, mapped_api, mapped_op, gaps;
    double gap_total_us;
    gr_summary nodes;            /* kernel nodes per launch */
    gr_summary span_us, busy_us; /* per launch */
    gr_summary gap_us;           /* between consecutive nodes, all launches */
    gr_summary host_us;          /* graph launch API call, host time */
    gr_summary first_latency_us; /* first node start - graph launch API entry */
} gr_ls_graph;

typedef struct gr_ls_scope {
    char name[160], variant[64], mode[32];
    int is_region, from_profiler;
    int64_t steps;
    const char *steps_from; /* "region", "--steps", "header" or "" */
    int has_host_span;
    double host_span_us, gpu_span_us, step_us;
    double traced_event_step_us, untraced_step_us; /* graphrun regions */
    size_t kernels, eager_kernels, graph_kernels, memcpys, memsets, incomplete, no_api;
    size_t launch_calls, graph_launch_calls, api_calls;
    double busy_us, idle_us, idle_frac, short_idle_us, short_share;
    gr_summary latency_us;   /* eager kernels: start - launching API entry */
    gr_summary queued_us;    /* submitted - queued (latency timestamps) */
    gr_summary submit_us;    /* start - submitted */
    gr_summary gap_us;       /* before each kernel on its stream */
    gr_summary dur_us;       /* kernel duration */
    gr_summary launch_host_us; /* host time of top-level launch calls */
    size_t kernels_with_op;
    gr_ls_api_row *api;
    size_t napi;
    gr_ls_kernel_row *kern; /* by total time, descending */
    size_t nkern;
    gr_ls_stream_row *streams;
    size_t nstreams;
    gr_ls_op_row *ops; /* by op index / tag */
    size_t nops;
    gr_ls_graph graph;
    /* the scope's records, as indices into the trace's gpu and api vectors (any order): what
     * predict.c simulates */
    size_t *gpu_idx, *api_idx;
    size_t ngpu_idx, napi_idx;
    /* NVTX range scopes (is_nvtx; name is "domain: key", or the key in the default domain) */
    int is_nvtx;
    char domain[64], key[160];
    char parent_path[256];  /* keys of the ranges around its first instance, "outer > inner" */
    size_t instances;       /* ranges not inside another range of this scope */
    size_t nested_ranges;   /* ranges inside one of the same scope (their records count once) */
    size_t open_instances;  /* never popped: they end at the trace's end */
    size_t raw_names;       /* distinct names aggregated into the key */
    size_t threads;         /* threads that opened its instances */
    int depth;              /* least nesting depth of its ranges (0: outermost on its thread) */
    gr_summary instance_us; /* host time of each instance */
} gr_ls_scope;

typedef struct gr_ls_ovh_row {
    int32_t kind;
    size_t count;
    double total_us;
} gr_ls_ovh_row;

typedef struct gr_ls_report {
    const gr_trace *tr;
    gr_ls_opts opts;
    gr_ls_scope all;
    gr_ls_scope *regions;
    size_t nregions;
    gr_ls_ovh_row *ovh;
    size_t novh;
    double ovh_total_us;
    size_t ovh_count;
    size_t nested_api; /* API calls made inside another traced call */
    /* NVTX range scopes, by total host time (largest first); GPU records without a launching API
     * record, which no range can claim */
    gr_ls_scope *nvtx;
    size_t nnvtx;
    size_t nvtx_unattributed;
} gr_ls_report;

/* The trace must outlive the report (names point into it). */
gr_status gr_ls_analyze(const gr_trace *tr, const gr_ls_opts *o, gr_ls_report **out, gr_error *err);
void gr_ls_report_destroy(gr_ls_report *r);
/* The scope a comparison uses: the region named `region`, else the NVTX range scope of that
 * name (NULL: the only region when there is exactly one, else the whole trace). NULL with an
 * error when no region or NVTX range has that name. */
const gr_ls_scope *gr_ls_main_scope(const gr_ls_report *r, const char *region, gr_error *err);
/* The scope key of an NVTX range's name (see the top of this file) into `out`: "aten::addmm, seq
 * = 12, op_id = 40" -> "aten::addmm", "step 17" -> "step #", "" -> "(unnamed)". Returns its
 * length. */
size_t gr_ls_nvtx_key(const char *name, char *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif
