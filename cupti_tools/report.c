/* Text and JSON reports of the trace analysis. Every heading says "traced": these numbers come
 * from a run with CUPTI activity tracing on, which inflates launch costs several-fold. */
#include "cupti_tools/report.h"

#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

/* The C++ runtime's demangler: from the process when it is loaded, else from libstdc++.so.6;
 * without one names stay mangled. Looked up at run time so C programs need no C++ link. */
static demangle_fn demangler(void) {
    static int tried;
    static demangle_fn fn;
    if (tried) return fn;
    tried = 1;
    void *self = dlopen(NULL, RTLD_LAZY);
    if (self) fn = (demangle_fn)dlsym(self, "__cxa_demangle");
    if (!fn) {
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (h) fn = (demangle_fn)dlsym(h, "__cxa_demangle");
    }
    return fn;
}

const char *const gr_ls_inflation_note =
    "all times are TRACED (CUPTI activity tracing on): tracing inflates launch costs several-fold "
    "(on an H200 eager launch ~4 -> ~16 us, graph node ~0.5 -> 1.3-4 us); untraced timings come "
    "from `graphrun run` without --trace";

const char *gr_ls_kernel_name(const char *name, int width, char *buf, size_t size) {
    const char *src = name ? name : "";
    char *dem = NULL;
    demangle_fn fn = src[0] == '_' && src[1] == 'Z' ? demangler() : NULL;
    if (fn) {
        int status = -1;
        dem = fn(src, NULL, NULL, &status);
        if (status != 0) {
            free(dem);
            dem = NULL;
        }
        if (dem) src = dem;
    }
    size_t n = strlen(src);
    if (width > 3 && n > (size_t)width) snprintf(buf, size, "%.*s...", width - 3, src);
    else snprintf(buf, size, "%s", src);
    free(dem);
    return buf;
}

/* Numbers with the precision their size needs, in rotating static buffers (single-threaded
 * report code; up to 16 in one printf). */
static const char *num(double v) {
    static char bufs[16][32];
    static unsigned next;
    char *buf = bufs[next++ % 16];
    size_t size = sizeof(bufs[0]);
    double a = v < 0 ? -v : v;
    if (a == 0) snprintf(buf, size, "0");
    else if (a < 10) snprintf(buf, size, "%.3f", v);
    else if (a < 1000) snprintf(buf, size, "%.2f", v);
    else snprintf(buf, size, "%.0f", v);
    return buf;
}

#define N(v) num(v)

static void summary_line(FILE *f, const char *what, const gr_summary *s, const char *unit) {
    if (s->n == 0) {
        fprintf(f, "  %-46s (none)\n", what);
        return;
    }
    fprintf(f, "  %-46s median %s %s, p10 %s, p90 %s, max %s (n %zu)\n", what, N(s->median), unit, N(s->p10),
            N(s->p90), N(s->max), s->n);
}

static void print_header(FILE *f, const gr_ls_report *r) {
    const gr_trace *t = r->tr;
    char when[64] = "";
    if (t->start_unix_ns > 0) {
        time_t sec = (time_t)(t->start_unix_ns / 1000000000LL);
        struct tm tmv;
        gmtime_r(&sec, &tmv);
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tmv);
    }
    fprintf(f, "trace    %s (schema %d, %s %s, %s mode%s%s)\n", t->path, t->schema_version,
            t->tool[0] ? t->tool : "?", t->tool_version, t->mode[0] ? t->mode : "?", when[0] ? ", " : "", when);
    if (t->command[0]) fprintf(f, "command  %s\n", t->command);
    fprintf(f, "device   %s%s%s%s; driver %d.%d; CUPTI API %d\n", t->device[0] ? t->device : "(unknown)",
            t->cc[0] ? " (cc " : "", t->cc, t->cc[0] ? ")" : "", t->driver_version / 1000,
            (t->driver_version % 1000) / 10, t->cupti_version);
    fprintf(f, "records  %zu kernels, %zu memcpy/memset, %zu API calls (%zu made inside another traced call), "
               "%zu graph nodes; %llu dropped by CUPTI; %zu CUPTI overhead records (%.1f us)\n",
            r->all.kernels, r->all.memcpys + r->all.memsets, t->api.n, r->nested_api, t->node.n,
            (unsigned long long)t->dropped, r->ovh_count, r->ovh_total_us);
    for (size_t i = 0; i < r->novh; i++)
        fprintf(f, "         overhead %-30s %6zu records, %.1f us\n", gr_trace_str(t, r->ovh[i].kind), r->ovh[i].count,
                r->ovh[i].total_us);
    fprintf(f, "tracing  kinds: %s; APIs: %s; latency timestamps %s\n", t->kinds[0] ? t->kinds : "?",
            t->apis[0] ? t->apis : "?", t->latency ? "on" : "off");
    if (t->end_reason[0]) fprintf(f, "ended    %s\n", t->end_reason);
    if (t->notes[0]) fprintf(f, "note     %s\n", t->notes);
    if (!t->has_end) fprintf(f, "note     the trace has no end record (--partial): numbers cover what was written\n");
    if (t->unknown_records) fprintf(f, "note     %zu records of kinds this reader does not know were skipped\n", t->unknown_records);
    if (r->all.incomplete)
        fprintf(f, "note     %zu GPU records without timestamps (CUPTI could not collect them) are counted but not timed\n",
                r->all.incomplete);
    if (t->nvtx.n > 0) {
        fprintf(f, "nvtx     %zu ranges of the program's own NVTX annotation in %zu scopes",
                t->nvtx.n, r->nnvtx);
        if (t->has_nvtx_calls)
            fprintf(f, " (%llu NVTX range calls seen)", (unsigned long long)t->end_nvtx_calls);
        fprintf(f, "\n");
        if (r->nvtx_unattributed)
            fprintf(f,
                    "note     %zu GPU records have no launching API record: no NVTX range claims "
                    "them\n",
                    r->nvtx_unattributed);
    } else if (t->nvtx_traced && t->has_nvtx_calls && t->end_nvtx_calls == 0) {
        fprintf(f, "nvtx     recorded, but no NVTX range call reached CUPTI: the program made "
                   "none, or its NVTX library started before NVTX_INJECTION64_PATH named CUPTI "
                   "(cupti-launchstat sets it for CMD)\n");
    }
    fprintf(f, "note     %s\n", gr_ls_inflation_note);
}

void gr_ls_print_regions(FILE *f, const gr_ls_report *r) {
    if (r->nregions == 0) return;
    fprintf(f, "\nregions (traced; us/step = host span of the region / steps; untraced = graphrun's own "
               "measurement without tracing)\n");
    fprintf(f, "  %-24s %7s %10s %10s %11s %12s %9s %7s %7s %10s %10s\n", "region", "steps", "krn/step",
            "calls/step", "us/step", "untraced us", "inflation", "busy%", "idle%", "short-gap%", "gap us");
    for (size_t i = 0; i < r->nregions; i++) {
        const gr_ls_scope *s = &r->regions[i];
        double st = s->steps > 0 ? (double)s->steps : 0;
        char steps[24], kps[24], cps[24], ups[24], unt[24], inf[24];
        snprintf(steps, sizeof(steps), "%lld", (long long)s->steps);
        snprintf(kps, sizeof(kps), "%s", st > 0 ? N((double)s->kernels / st) : "-");
        snprintf(cps, sizeof(cps), "%s", st > 0 ? N((double)(s->launch_calls + s->graph_launch_calls) / st) : "-");
        snprintf(ups, sizeof(ups), "%s", s->step_us > 0 ? N(s->step_us) : "-");
        snprintf(unt, sizeof(unt), "%s", s->untraced_step_us > 0 ? N(s->untraced_step_us) : "-");
        if (s->untraced_step_us > 0 && s->step_us > 0) snprintf(inf, sizeof(inf), "%.2fx", s->step_us / s->untraced_step_us);
        else snprintf(inf, sizeof(inf), "-");
        fprintf(f, "  %-24.24s %7s %10s %10s %11s %12s %9s %6.1f%% %6.1f%% %9.1f%% %10s\n", s->name, steps, kps, cps,
                ups, unt, inf, s->gpu_span_us > 0 ? 100.0 * s->busy_us / s->gpu_span_us : 0.0, 100.0 * s->idle_frac,
                100.0 * s->short_share, s->gap_us.n ? N(s->gap_us.median) : "-");
    }
    fprintf(f, "  (calls = kernel launch + graph launch API calls; short-gap%% = share of GPU idle time in "
               "holes < %.0f us; gap = median GPU idle before a kernel on its stream)\n",
            r->opts.short_gap_us);
}

const char *const gr_ls_nvtx_membership =
    "a record belongs to every NVTX range open on its thread when its API call entered (GPU work: "
    "its launch call; start/end ranges: on any thread); a range inside one of the same name counts "
    "once; names are aggregated: \"step 17\" -> \"step #\", PyTorch's \", seq = N\" decorations "
    "cut";

void gr_ls_print_nvtx(FILE *f, const gr_ls_report *r) {
    if (r->nnvtx == 0) return;
    size_t top = (size_t)(r->opts.top > 0 ? r->opts.top : 15);
    fprintf(
        f,
        "\nNVTX ranges of the program (traced; us/step = the instances' host time / steps, steps = "
        "instances unless --steps; GPU figures per instance, summed)\n");
    fprintf(f, "  %-34s %7s %7s %11s %9s %10s %10s %7s %7s %10s %8s\n", "range", "inst", "steps",
            "us/step", "krn/step", "calls/step", "latency us", "busy%", "idle%", "short-gap%",
            "gap us");
    for (size_t i = 0; i < r->nnvtx && i < top; i++) {
        const gr_ls_scope *s = &r->nvtx[i];
        double st = s->steps > 0 ? (double)s->steps : 0;
        char name[40], kps[24], cps[24], ups[24], lat[24];
        size_t nl = strlen(s->name);
        /* a long name keeps its end, where the range's own part is */
        if (nl > 34)
            snprintf(name, sizeof(name), "...%s", s->name + nl - 31);
        else
            snprintf(name, sizeof(name), "%s", s->name);
        snprintf(kps, sizeof(kps), "%s", st > 0 ? N((double)s->kernels / st) : "-");
        snprintf(cps, sizeof(cps), "%s",
                 st > 0 ? N((double)(s->launch_calls + s->graph_launch_calls) / st) : "-");
        snprintf(ups, sizeof(ups), "%s", s->steps > 0 ? N(s->step_us) : "-");
        snprintf(lat, sizeof(lat), "%s", s->latency_us.n ? N(s->latency_us.median) : "-");
        fprintf(f, "  %-34s %7zu %7lld %11s %9s %10s %10s %6.1f%% %6.1f%% %9.1f%% %8s\n", name,
                s->instances, (long long)s->steps, ups, kps, cps, lat,
                s->gpu_span_us > 0 ? 100.0 * s->busy_us / s->gpu_span_us : 0.0,
                100.0 * s->idle_frac, 100.0 * s->short_share,
                s->gap_us.n ? N(s->gap_us.median) : "-");
    }
    if (r->nnvtx > top)
        fprintf(f, "  (%zu more NVTX ranges: --top N shows more, --json has all)\n",
                r->nnvtx - top);
    fprintf(f,
            "  (%s)\n  (calls = kernel launch + graph launch API calls; latency = median kernel "
            "start - launch call entry; gap = median GPU idle before a kernel on its stream, "
            "within its instance)\n",
            gr_ls_nvtx_membership);
}

static void print_scope(FILE *f, const gr_ls_report *r, const gr_ls_scope *s) {
    const gr_trace *t = r->tr;
    int top = r->opts.top > 0 ? r->opts.top : 15;
    if (s->is_nvtx) {
        fprintf(f, "\n== NVTX range \"%s\" (traced): %zu instance%s on %zu thread%s", s->name,
                s->instances, s->instances == 1 ? "" : "s", s->threads, s->threads == 1 ? "" : "s");
        if (s->parent_path[0]) fprintf(f, ", inside \"%s\"", s->parent_path);
        if (s->raw_names > 1) fprintf(f, ", %zu names", s->raw_names);
        if (s->nested_ranges)
            fprintf(f, ", %zu more nested in one of the same name", s->nested_ranges);
        if (s->open_instances) fprintf(f, ", %zu never popped", s->open_instances);
        fprintf(f, "\n");
        summary_line(f, "host time per instance", &s->instance_us, "us");
    } else if (s->is_region) {
        fprintf(f, "\n== region \"%s\"%s (traced)\n", s->name, s->from_profiler ? " (cudaProfilerStart..Stop)" : "");
    } else {
        fprintf(f, "\n== whole trace (traced)\n");
    }
    fprintf(f, "  %-22s GPU %s us (first start .. last end%s)", "span", N(s->gpu_span_us),
            s->is_nvtx ? ", per instance, summed" : "");
    if (s->has_host_span)
        fprintf(f, "; host %s us (%s)", N(s->host_span_us),
                s->is_nvtx ? "instances" : "region bounds");
    fprintf(f, "\n");
    if (s->steps > 0) {
        fprintf(f, "  %-22s %s us/step traced (%s span / %lld steps, steps from %s)", "step time", N(s->step_us),
                s->has_host_span ? "host" : "GPU", (long long)s->steps, s->steps_from);
        if (s->traced_event_step_us > 0) fprintf(f, "; CUDA events in the traced run %s us", N(s->traced_event_step_us));
        if (s->untraced_step_us > 0)
            fprintf(f, "; untraced %s us (inflation %.2fx)", N(s->untraced_step_us),
                    s->step_us / s->untraced_step_us);
        fprintf(f, "\n");
    } else {
        fprintf(f, "  %-22s unknown steps (give --steps N for per-step numbers)\n", "step time");
    }
    fprintf(f, "  %-22s %zu kernels (%zu eager, %zu in graphs), %zu memcpy, %zu memset; %zu launch calls, %zu "
               "graph launches",
            "work", s->kernels, s->eager_kernels, s->graph_kernels, s->memcpys, s->memsets, s->launch_calls,
            s->graph_launch_calls);
    if (s->steps > 0)
        fprintf(f, " (per step: %s kernels, %s launch calls, %s graph launches)", N((double)s->kernels / (double)s->steps),
                N((double)s->launch_calls / (double)s->steps), N((double)s->graph_launch_calls / (double)s->steps));
    fprintf(f, "\n");
    fprintf(f, "  %-22s busy %s us of %s us span: idle %.1f%%; %.1f%% of idle is in holes < %.0f us "
               "(launch-bound gaps)\n",
            "GPU (all streams)", N(s->busy_us), N(s->gpu_span_us), 100.0 * s->idle_frac, 100.0 * s->short_share,
            r->opts.short_gap_us);

    fprintf(f, "\n  API calls (host time per call, traced; top-level calls; nested = calls made inside another traced call)\n");
    if (s->napi == 0) fprintf(f, "    (no API records)\n");
    else
        fprintf(f, "    %-34s %-12s %9s %11s %11s %12s %8s\n", "api", "kind", "calls", "median us", "p90 us",
                "total us", "nested");
    for (size_t i = 0; i < s->napi && (int)i < top * 2; i++) {
        const gr_ls_api_row *a = &s->api[i];
        fprintf(f, "    %-34.34s %-12s %9zu %11s %11s %12s %8zu\n", gr_trace_str(t, a->name),
                gr_api_cat_name((gr_api_cat)a->cat), a->count, N(a->host_us.median), N(a->host_us.p90),
                N(a->total_us), a->nested);
    }
    if (s->napi > (size_t)top * 2) fprintf(f, "    (%zu more)\n", s->napi - (size_t)top * 2);

    fprintf(f, "\n  kernel launches (traced)\n");
    summary_line(f, "launch latency (start - API entry), eager", &s->latency_us, "us");
    if (s->queued_us.n) {
        summary_line(f, "queued -> submitted", &s->queued_us, "us");
        summary_line(f, "submitted -> start", &s->submit_us, "us");
    } else {
        fprintf(f, "  %-46s %s\n", "queued -> submitted -> start",
                t->latency ? "(no kernel had them)" : "(latency timestamps off: cupti-launchstat --latency)");
    }
    summary_line(f, "GPU idle gap before kernel, same stream", &s->gap_us, "us");
    summary_line(f, "kernel duration", &s->dur_us, "us");
    summary_line(f, "launch API host time", &s->launch_host_us, "us");
    if (s->no_api) fprintf(f, "  (%zu eager kernels have no API record: launch latency not known for them)\n", s->no_api);

    fprintf(f, "\n  streams (traced; busy and idle over the GPU span above)\n");
    if (s->nstreams == 0) fprintf(f, "    (none)\n");
    else
        fprintf(f, "    %5s %8s %8s %8s %12s %7s %11s %14s\n", "ctx", "stream", "ops", "kernels", "busy us", "idle%",
                "short-gap%", "median gap us");
    for (size_t i = 0; i < s->nstreams && (int)i < top; i++) {
        const gr_ls_stream_row *x = &s->streams[i];
        fprintf(f, "    %5u %8u %8zu %8zu %12s %6.1f%% %10.1f%% %14s\n", x->ctx, x->stream, x->ops, x->kernels,
                N(x->busy_us), s->gpu_span_us > 0 ? 100.0 * x->idle_us / s->gpu_span_us : 0.0,
                x->idle_us > 0 ? 100.0 * x->short_idle_us / x->idle_us : 0.0, x->gap_us.n ? N(x->gap_us.median) : "-");
    }

    fprintf(f, "\n  kernels by name (traced; top %d by total time)\n", top);
    if (s->nkern == 0) fprintf(f, "    (none)\n");
    else
        fprintf(f, "    %8s %12s %11s %14s  %s\n", "count", "total us", "median us", "median gap us", "name");
    for (size_t i = 0; i < s->nkern && (int)i < top; i++) {
        const gr_ls_kernel_row *k = &s->kern[i];
        char nm[256];
        fprintf(f, "    %8zu %12s %11s %14s  %s\n", k->count, N(k->total_us), N(k->dur_us.median),
                k->gap_us.n ? N(k->gap_us.median) : "-", gr_ls_kernel_name(gr_trace_str(t, k->name), 90, nm, sizeof(nm)));
    }
    if (s->nkern > (size_t)top) fprintf(f, "    (%zu more)\n", s->nkern - (size_t)top);

    const gr_ls_graph *g = &s->graph;
    fprintf(f, "\n  graph launches (traced)\n");
    if (g->launches == 0) {
        fprintf(f, "    (none)\n");
    } else {
        fprintf(f, "    %zu launches, %zu kernel nodes run\n", g->launches, g->node_kernels);
        summary_line(f, "kernel nodes per launch", &g->nodes, "");
        summary_line(f, "span per launch (first start .. last end)", &g->span_us, "us");
        summary_line(f, "busy per launch", &g->busy_us, "us");
        summary_line(f, "gap between consecutive nodes", &g->gap_us, "us");
        fprintf(f, "  %-46s %s us in %zu gaps\n", "gaps between nodes, total", N(g->gap_total_us), g->gaps);
        summary_line(f, "graph launch API host time", &g->host_us, "us");
        summary_line(f, "first node start - graph launch API entry", &g->first_latency_us, "us");
        fprintf(f, "    node kernels mapped to the API call that created them: %zu of %zu", g->mapped_api, g->node_kernels);
        if (t->op.n) fprintf(f, "; to a workload op: %zu of %zu", g->mapped_op, g->node_kernels);
        fprintf(f, "\n");
    }

    if (t->op.n) {
        fprintf(f, "\n  workload ops (graphrun; traced; eager kernels by external correlation, graph kernels by "
                   "their node): %zu of %zu kernels mapped\n",
                s->kernels_with_op, s->kernels);
        if (s->nops) fprintf(f, "    %-12s %-24s %-16s %7s %7s %11s %12s\n", "variant", "op", "kernel", "eager", "graph",
                             "median us", "total us");
        for (size_t i = 0; i < s->nops && (int)i < top; i++) {
            const gr_ls_op_row *o = &s->ops[i];
            fprintf(f, "    %-12.12s %-24.24s %-16.16s %7zu %7zu %11s %12s\n", gr_trace_str(t, o->variant),
                    gr_trace_str(t, o->name), gr_trace_str(t, o->kernel), o->eager, o->graph, N(o->dur_us.median),
                    N(o->total_us));
        }
        if (s->nops > (size_t)top) fprintf(f, "    (%zu more)\n", s->nops - (size_t)top);
    }
}

size_t gr_ls_mode_pairs(const gr_ls_report *r, const gr_ls_scope **eager, const gr_ls_scope **graph, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < r->nregions && n < max; i++) {
        const gr_ls_scope *e = &r->regions[i];
        if (strcmp(e->mode, "eager") != 0) continue;
        for (size_t j = 0; j < r->nregions; j++) {
            const gr_ls_scope *g = &r->regions[j];
            if (!strcmp(g->mode, "graph") && !strcmp(g->variant, e->variant)) {
                eager[n] = e;
                graph[n] = g;
                n++;
                break;
            }
        }
    }
    return n;
}

size_t gr_ls_warnings(const gr_ls_report *r, gr_ls_warning *out, size_t max) {
    const gr_trace *t = r->tr;
    const gr_ls_scope *all = &r->all;
    size_t n = 0;
#define WARN(...)                                                                                  \
    do {                                                                                           \
        if (n < max) snprintf(out[n].msg, sizeof(out[n].msg), __VA_ARGS__);                        \
        n++;                                                                                       \
    } while (0)
    if (t->excl_backwards.n)
        WARN("%zu record%s excluded: end before start (first at line %d); the figures leave %s out",
             t->excl_backwards.n, t->excl_backwards.n == 1 ? "" : "s", t->excl_backwards.first_line,
             t->excl_backwards.n == 1 ? "it" : "them");
    if (t->excl_outside.n)
        WARN("%zu record%s excluded: a time outside the trace's span, 0 to %lld ns after t0%s "
             "(first at line %d); the figures leave %s out",
             t->excl_outside.n, t->excl_outside.n == 1 ? "" : "s", (long long)t->span_end,
             t->has_end && t->end_ts > 0 ? " (end record)" : "", t->excl_outside.first_line,
             t->excl_outside.n == 1 ? "it" : "them");
    if (t->excl_latency.n)
        WARN("%zu kernel%s with queued/submitted timestamps out of order (queued <= submitted <= start "
             "fails; first at line %d): their latency is left out",
             t->excl_latency.n, t->excl_latency.n == 1 ? "" : "s", t->excl_latency.first_line);
    if (t->api.n == 0 && all->eager_kernels > 0) {
        char seen[96] = "";
        if (t->has_api_counts)
            snprintf(seen, sizeof(seen), " (the collector's callbacks saw %llu launch calls)",
                     (unsigned long long)t->end_launch_calls_seen);
        WARN("no API records: CUPTI recorded no runtime or driver API call%s although the trace "
             "has %zu eager kernels, so launch calls, launch API host time and launch latency are "
             "unknown%s",
             seen, all->eager_kernels,
             t->op.n ? ", and eager kernels map to no workload op (external correlation comes with "
                       "API records). In-process traces written before the collector enabled the "
                       "RUNTIME/DRIVER kinds have none: record them again"
                     : "");
    } else if (t->has_api_counts && t->end_launch_calls_seen > t->end_launch_api_records) {
        WARN("CUPTI recorded %llu launch API records for %llu top-level launch calls the "
             "collector's callbacks saw: %llu launches have no API record (launch counts and "
             "latencies are short)",
             (unsigned long long)t->end_launch_api_records,
             (unsigned long long)t->end_launch_calls_seen,
             (unsigned long long)(t->end_launch_calls_seen - t->end_launch_api_records));
    }
    if (t->api.n > 0 && all->no_api > 0)
        WARN("%zu of %zu eager kernels have no launch API record (launched through an API the "
             "trace does not record, e.g. the driver API under --no-driver): launch latency is "
             "unknown for them",
             all->no_api, all->eager_kernels);
    if (t->op.n > 0 && t->api.n > 0 && t->ext.n == 0 && all->eager_kernels > 0)
        WARN("no external-correlation records although the trace has API records: eager kernels "
             "map to no workload op");
    /* graphrun regions: every kernel of a measured run is one of the workload's ops */
    if (t->op.n > 0 && (t->api.n > 0 || t->ext.n > 0)) {
        for (size_t i = 0; i < r->nregions; i++) {
            const gr_ls_scope *s = &r->regions[i];
            if (s->from_profiler || s->kernels_with_op >= s->kernels) continue;
            WARN("region \"%s\": %zu of %zu kernels map to no workload op", s->name,
                 s->kernels - s->kernels_with_op, s->kernels);
        }
    }
    if (t->nvtx_unmatched_pop.n)
        WARN("%zu NVTX pop%s without a matching push on %s thread and domain (first at line %d): "
             "ignored. A range pushed before tracing began (before the program initialised CUDA) "
             "ends this way, and so do more pops than pushes",
             t->nvtx_unmatched_pop.n, t->nvtx_unmatched_pop.n == 1 ? "" : "s",
             t->nvtx_unmatched_pop.n == 1 ? "its" : "their", t->nvtx_unmatched_pop.first_line);
    if (t->nvtx_open.n)
        WARN("%zu NVTX range%s never popped (first pushed at line %d): analysed up to the end of "
             "the trace",
             t->nvtx_open.n, t->nvtx_open.n == 1 ? " was" : "s were", t->nvtx_open.first_line);
#undef WARN
    return n;
}

void gr_ls_print(FILE *f, const gr_ls_report *r) {
    print_header(f, r);
    if (r->tr->dropped)
        fprintf(f, "WARNING  CUPTI dropped %llu activity records: counts and gaps below are incomplete\n",
                (unsigned long long)r->tr->dropped);
    if (r->tr->dropped_detail[0])
        fprintf(f, "note     dropped records reported: %s\n", r->tr->dropped_detail);
    gr_ls_warning w[8];
    size_t nw = gr_ls_warnings(r, w, 8);
    for (size_t i = 0; i < nw && i < 8; i++)
        fprintf(f, "WARNING  %s\n", w[i].msg);
    if (nw > 8) fprintf(f, "WARNING  (%zu more: see --json)\n", nw - 8);
    gr_ls_print_regions(f, r);
    const gr_ls_scope *e[32], *g[32];
    size_t np = gr_ls_mode_pairs(r, e, g, 32);
    for (size_t i = 0; i < np; i++) {
        char la[200], lb[200];
        snprintf(la, sizeof(la), "%s", e[i]->name);
        snprintf(lb, sizeof(lb), "%s", g[i]->name);
        fprintf(f, "\n");
        gr_ls_print_compare(f, la, e[i], lb, g[i]);
    }
    gr_ls_print_nvtx(f, r);
    if (r->nregions == 0) {
        print_scope(f, r, &r->all);
    } else {
        size_t shown = r->nregions < 16 ? r->nregions : 16;
        for (size_t i = 0; i < shown; i++) print_scope(f, r, &r->regions[i]);
        if (shown < r->nregions) fprintf(f, "\n(%zu more regions: see --json)\n", r->nregions - shown);
    }
    /* the largest NVTX ranges in full; the table above has the rest */
    size_t shown = r->nnvtx < GR_LS_NVTX_DETAILS ? r->nnvtx : GR_LS_NVTX_DETAILS;
    for (size_t i = 0; i < shown; i++)
        print_scope(f, r, &r->nvtx[i]);
    if (shown < r->nnvtx)
        fprintf(f,
                "\n(details of %zu more NVTX ranges: --json, or --region NAME --compare OTHER)\n",
                r->nnvtx - shown);
}

void gr_ls_print_compare(FILE *f, const char *label_a, const gr_ls_scope *a, const char *label_b,
                         const gr_ls_scope *b) {
    const gr_ls_scope *s[2] = {a, b};
    /* long labels (paths) keep their end, where the region name is */
    char la[32], lb[32];
    size_t na = strlen(label_a), nb = strlen(label_b);
    snprintf(la, sizeof(la), "%s%s", na > 28 ? "..." : "", na > 28 ? label_a + na - 25 : label_a);
    snprintf(lb, sizeof(lb), "%s%s", nb > 28 ? "..." : "", nb > 28 ? label_b + nb - 25 : label_b);
    fprintf(f, "compare (traced)          %28s %28s\n", la, lb);
    char c[2][48];
    for (int i = 0; i < 2; i++) snprintf(c[i], sizeof(c[i]), "%lld", (long long)s[i]->steps);
    fprintf(f, "  %-24s %28s %28s\n", "steps", c[0], c[1]);
#define ROW(label, expr, ok)                                                                       \
    do {                                                                                           \
        for (int i_ = 0; i_ < 2; i_++) {                                                           \
            const gr_ls_scope *x = s[i_];                                                          \
            snprintf(c[i_], sizeof(c[i_]), "%s", (ok) ? N(expr) : "-");                            \
        }                                                                                          \
        fprintf(f, "  %-24s %28s %28s\n", label, c[0], c[1]);                                      \
    } while (0)
    ROW("us/step", x->step_us, x->steps > 0);
    ROW("untraced us/step", x->untraced_step_us, x->untraced_step_us > 0);
    ROW("kernels/step", (double)x->kernels / (double)x->steps, x->steps > 0);
    ROW("launch calls/step", (double)x->launch_calls / (double)x->steps, x->steps > 0);
    ROW("graph launches/step", (double)x->graph_launch_calls / (double)x->steps, x->steps > 0);
    ROW("kernels", (double)x->kernels, 1);
    ROW("launch API median us", x->launch_host_us.median, x->launch_host_us.n > 0);
    ROW("launch latency median us", x->latency_us.median, x->latency_us.n > 0);
    ROW("gap median us", x->gap_us.median, x->gap_us.n > 0);
    ROW("gap p90 us", x->gap_us.p90, x->gap_us.n > 0);
    ROW("kernel median us", x->dur_us.median, x->dur_us.n > 0);
    ROW("GPU busy us", x->busy_us, 1);
    ROW("idle %", 100.0 * x->idle_frac, x->gpu_span_us > 0);
    ROW("short-gap % of idle", 100.0 * x->short_share, x->idle_us > 0);
#undef ROW
    char why[400];
    if (gr_ls_compare_mismatch(a, b, why, sizeof(why))) {
        double ka = (double)a->kernels / (double)a->steps, kb = (double)b->kernels / (double)b->steps;
        fprintf(f, "  WARNING: %s\n", why);
        fprintf(f, "  per kernel: a %s us (%s us / %s kernels per step), b ", N(a->step_us / ka), N(a->step_us),
                N(ka));
        if (kb > 0) {
            fprintf(f, "%s us (%s us / %s kernels per step); a - b = %s us per kernel, traced\n",
                    N(b->step_us / kb), N(b->step_us), N(kb), N(a->step_us / ka - b->step_us / kb));
        } else {
            fprintf(f, "- (no kernels)\n");
        }
    } else if (a->steps > 0 && b->steps > 0 && a->kernels > 0) {
        double ka = (double)a->kernels / (double)a->steps;
        double d = a->step_us - b->step_us;
        fprintf(f, "  (a - b) per kernel: (%s - %s) us / %s kernels per step = %s us per kernel, traced",
                N(a->step_us), N(b->step_us), N(ka), N(d / ka));
        if (a->untraced_step_us > 0 && b->untraced_step_us > 0)
            fprintf(f, "; untraced %s us per kernel", N((a->untraced_step_us - b->untraced_step_us) / ka));
        fprintf(f, "\n");
    }
}

int gr_ls_compare_mismatch(const gr_ls_scope *a, const gr_ls_scope *b, char *msg, size_t size) {
    if (a->steps <= 0 || b->steps <= 0 || a->kernels == 0) return 0;
    double ka = (double)a->kernels / (double)a->steps, kb = (double)b->kernels / (double)b->steps;
    if (fabs(ka - kb) <= 0.01 * (ka > kb ? ka : kb)) return 0;
    if (msg)
        snprintf(msg, size,
                 "kernels per step differ (%.4g in a, %.4g in b): the compared regions ran different "
                 "work, so per-kernel figures divide each side by its own count",
                 ka, kb);
    return 1;
}

static json_t *sum_json(const gr_summary *s) {
    return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f}", "n", (json_int_t)s->n, "median", s->median, "p10",
                     s->p10, "p90", s->p90, "min", s->min, "max", s->max, "mean", s->mean);
}

static json_t *scope_json(const gr_ls_report *r, const gr_ls_scope *s) {
    const gr_trace *t = r->tr;
    json_t *j = json_object();
    json_object_set_new(j, "name", json_string(s->name));
    json_object_set_new(j, "is_region", json_boolean(s->is_region));
    if (s->variant[0]) json_object_set_new(j, "variant", json_string(s->variant));
    if (s->mode[0]) json_object_set_new(j, "mode", json_string(s->mode));
    json_object_set_new(j, "from_profiler", json_boolean(s->from_profiler));
    json_object_set_new(j, "steps", json_integer(s->steps));
    json_object_set_new(j, "steps_from", json_string(s->steps_from));
    json_object_set_new(j, "gpu_span_us", json_real(s->gpu_span_us));
    if (s->has_host_span) json_object_set_new(j, "host_span_us", json_real(s->host_span_us));
    json_object_set_new(j, "step_us", s->steps > 0 ? json_real(s->step_us) : json_null());
    if (s->traced_event_step_us > 0) json_object_set_new(j, "traced_event_step_us", json_real(s->traced_event_step_us));
    if (s->untraced_step_us > 0) json_object_set_new(j, "untraced_step_us", json_real(s->untraced_step_us));
    json_object_set_new(j, "kernels", json_integer((json_int_t)s->kernels));
    json_object_set_new(j, "eager_kernels", json_integer((json_int_t)s->eager_kernels));
    json_object_set_new(j, "graph_kernels", json_integer((json_int_t)s->graph_kernels));
    json_object_set_new(j, "memcpys", json_integer((json_int_t)s->memcpys));
    json_object_set_new(j, "memsets", json_integer((json_int_t)s->memsets));
    json_object_set_new(j, "incomplete", json_integer((json_int_t)s->incomplete));
    json_object_set_new(j, "launch_calls", json_integer((json_int_t)s->launch_calls));
    json_object_set_new(j, "graph_launch_calls", json_integer((json_int_t)s->graph_launch_calls));
    json_object_set_new(j, "busy_us", json_real(s->busy_us));
    json_object_set_new(j, "idle_us", json_real(s->idle_us));
    json_object_set_new(j, "idle_fraction", json_real(s->idle_frac));
    json_object_set_new(j, "short_idle_us", json_real(s->short_idle_us));
    json_object_set_new(j, "short_gap_share", json_real(s->short_share));
    json_object_set_new(j, "launch_latency_us", sum_json(&s->latency_us));
    json_object_set_new(j, "queued_to_submitted_us", sum_json(&s->queued_us));
    json_object_set_new(j, "submitted_to_start_us", sum_json(&s->submit_us));
    json_object_set_new(j, "gap_us", sum_json(&s->gap_us));
    json_object_set_new(j, "kernel_us", sum_json(&s->dur_us));
    json_object_set_new(j, "launch_api_us", sum_json(&s->launch_host_us));
    json_object_set_new(j, "kernels_with_op", json_integer((json_int_t)s->kernels_with_op));
    json_t *api = json_array();
    for (size_t i = 0; i < s->napi; i++) {
        const gr_ls_api_row *a = &s->api[i];
        json_array_append_new(api, json_pack("{s:s, s:s, s:s, s:I, s:I, s:f, s:o}", "name", gr_trace_str(t, a->name),
                                             "domain", a->driver ? "driver" : "runtime", "kind",
                                             gr_api_cat_name((gr_api_cat)a->cat), "calls", (json_int_t)a->count,
                                             "nested", (json_int_t)a->nested, "total_us", a->total_us, "host_us",
                                             sum_json(&a->host_us)));
    }
    json_object_set_new(j, "api", api);
    json_t *kern = json_array();
    for (size_t i = 0; i < s->nkern; i++) {
        const gr_ls_kernel_row *k = &s->kern[i];
        char nm[512];
        json_array_append_new(kern, json_pack("{s:s, s:s, s:I, s:f, s:o, s:o}", "name", gr_trace_str(t, k->name),
                                              "demangled", gr_ls_kernel_name(gr_trace_str(t, k->name), 0, nm, sizeof(nm)),
                                              "count", (json_int_t)k->count, "total_us", k->total_us, "duration_us",
                                              sum_json(&k->dur_us), "gap_us", sum_json(&k->gap_us)));
    }
    json_object_set_new(j, "kernels_by_name", kern);
    json_t *str = json_array();
    for (size_t i = 0; i < s->nstreams; i++) {
        const gr_ls_stream_row *x = &s->streams[i];
        json_array_append_new(str, json_pack("{s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:o}", "ctx", (json_int_t)x->ctx,
                                             "stream", (json_int_t)x->stream, "ops", (json_int_t)x->ops, "kernels",
                                             (json_int_t)x->kernels, "busy_us", x->busy_us, "idle_us", x->idle_us,
                                             "short_idle_us", x->short_idle_us, "gap_us", sum_json(&x->gap_us)));
    }
    json_object_set_new(j, "streams", str);
    const gr_ls_graph *g = &s->graph;
    json_object_set_new(j, "graph",
                        json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:o, s:o, s:o, s:o, s:o, s:o}", "launches",
                                  (json_int_t)g->launches, "node_kernels", (json_int_t)g->node_kernels, "mapped_api",
                                  (json_int_t)g->mapped_api, "mapped_op", (json_int_t)g->mapped_op, "gaps",
                                  (json_int_t)g->gaps, "gap_total_us", g->gap_total_us, "nodes", sum_json(&g->nodes),
                                  "span_us", sum_json(&g->span_us), "busy_us", sum_json(&g->busy_us), "gap_us",
                                  sum_json(&g->gap_us), "launch_api_us", sum_json(&g->host_us), "first_node_latency_us",
                                  sum_json(&g->first_latency_us)));
    json_t *ops = json_array();
    for (size_t i = 0; i < s->nops; i++) {
        const gr_ls_op_row *o = &s->ops[i];
        json_array_append_new(ops, json_pack("{s:s, s:s, s:s, s:i, s:I, s:I, s:f, s:o}", "variant",
                                             gr_trace_str(t, o->variant), "op", gr_trace_str(t, o->name), "kernel",
                                             gr_trace_str(t, o->kernel), "index", o->index, "eager_kernels",
                                             (json_int_t)o->eager, "graph_kernels", (json_int_t)o->graph, "total_us",
                                             o->total_us, "duration_us", sum_json(&o->dur_us)));
    }
    json_object_set_new(j, "ops", ops);
    if (s->is_nvtx)
        json_object_set_new(j, "nvtx",
                            json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:i, s:f, s:o}",
                                      "key", s->key, "domain", s->domain, "inside", s->parent_path,
                                      "instances", (json_int_t)s->instances, "nested_ranges",
                                      (json_int_t)s->nested_ranges, "never_popped",
                                      (json_int_t)s->open_instances, "names",
                                      (json_int_t)s->raw_names, "threads", (json_int_t)s->threads,
                                      "depth", s->depth, "host_us", s->host_span_us, "instance_us",
                                      sum_json(&s->instance_us)));
    return j;
}

void *gr_ls_json(const gr_ls_report *r) {
    const gr_trace *t = r->tr;
    json_t *root = json_object();
    json_object_set_new(root, "schema_version", json_integer(1));
    json_object_set_new(root, "tool", json_string("cupti-launchstat"));
    json_object_set_new(root, "traced", json_true());
    json_object_set_new(root, "note", json_string(gr_ls_inflation_note));
    json_object_set_new(root, "trace",
                        json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:s, s:i, s:i, s:b, s:I, s:I, s:b, s:s}", "path",
                                  t->path, "schema_version", t->schema_version, "mode", t->mode, "command", t->command,
                                  "device", t->device, "cc", t->cc, "writer_version", t->tool_version,
                                  "driver_version", t->driver_version, "cupti_version", t->cupti_version, "latency",
                                  t->latency, "dropped", (json_int_t)t->dropped, "api_records", (json_int_t)t->api.n,
                                  "complete", t->has_end, "end_reason", t->end_reason));
    json_object_set_new(root, "excluded_records",
                        json_pack("{s:{s:I, s:i}, s:{s:I, s:i}, s:{s:I, s:i}, s:I}", "end_before_start", "count",
                                  (json_int_t)t->excl_backwards.n, "first_line", t->excl_backwards.first_line,
                                  "outside_span", "count", (json_int_t)t->excl_outside.n, "first_line",
                                  t->excl_outside.first_line, "latency_out_of_order", "count",
                                  (json_int_t)t->excl_latency.n, "first_line", t->excl_latency.first_line,
                                  "span_end_ns", (json_int_t)t->span_end));
    if (t->has_api_counts)
        json_object_set_new(root, "collector",
                            json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:s}", "api_records",
                                      (json_int_t)t->end_api_records, "launch_api_records",
                                      (json_int_t)t->end_launch_api_records, "launch_calls_seen",
                                      (json_int_t)t->end_launch_calls_seen, "unwanted_api_records",
                                      (json_int_t)t->end_unwanted_api_records, "ext_records",
                                      (json_int_t)t->end_ext_records, "dropped_before_start",
                                      (json_int_t)t->dropped_before_start, "dropped_detail",
                                      t->dropped_detail));
    {
        size_t nw = gr_ls_warnings(r, NULL, 0);
        gr_ls_warning *w = nw ? calloc(nw, sizeof(*w)) : NULL;
        json_t *ws = json_array();
        if (w) gr_ls_warnings(r, w, nw);
        for (size_t i = 0; w && i < nw; i++)
            json_array_append_new(ws, json_string(w[i].msg));
        free(w);
        json_object_set_new(root, "warnings", ws);
    }
    json_object_set_new(root, "short_gap_us", json_real(r->opts.short_gap_us));
    json_object_set_new(root, "nested_api_calls", json_integer((json_int_t)r->nested_api));
    json_t *ovh = json_array();
    for (size_t i = 0; i < r->novh; i++)
        json_array_append_new(ovh, json_pack("{s:s, s:I, s:f}", "kind", gr_trace_str(t, r->ovh[i].kind), "count",
                                             (json_int_t)r->ovh[i].count, "total_us", r->ovh[i].total_us));
    json_object_set_new(root, "cupti_overhead", ovh);
    json_object_set_new(root, "whole_trace", scope_json(r, &r->all));
    json_t *regs = json_array();
    for (size_t i = 0; i < r->nregions; i++) json_array_append_new(regs, scope_json(r, &r->regions[i]));
    json_object_set_new(root, "regions", regs);
    json_t *nv = json_array();
    for (size_t i = 0; i < r->nnvtx; i++)
        json_array_append_new(nv, scope_json(r, &r->nvtx[i]));
    json_object_set_new(root, "nvtx_ranges", nv);
    json_object_set_new(
        root, "nvtx",
        json_pack("{s:b, s:o, s:I, s:I, s:{s:I, s:i}, s:{s:I, s:i}, s:I, s:s}", "traced",
                  t->nvtx_traced, "calls_seen",
                  t->has_nvtx_calls ? json_integer((json_int_t)t->end_nvtx_calls) : json_null(),
                  "ranges", (json_int_t)t->nvtx.n, "scopes", (json_int_t)r->nnvtx, "unmatched_pops",
                  "count", (json_int_t)t->nvtx_unmatched_pop.n, "first_line",
                  t->nvtx_unmatched_pop.first_line, "never_popped", "count",
                  (json_int_t)t->nvtx_open.n, "first_line", t->nvtx_open.first_line,
                  "unattributed_gpu_records", (json_int_t)r->nvtx_unattributed, "membership",
                  gr_ls_nvtx_membership));
    const gr_ls_scope *e[32], *g[32];
    size_t np = gr_ls_mode_pairs(r, e, g, 32);
    json_t *cmp = json_array();
    for (size_t i = 0; i < np; i++)
        json_array_append_new(cmp, (json_t *)gr_ls_compare_json(e[i]->name, e[i], g[i]->name, g[i]));
    json_object_set_new(root, "eager_vs_graph", cmp);
    return root;
}

static json_t *cmp_side(const char *label, const gr_ls_scope *s) {
    double st = s->steps > 0 ? (double)s->steps : 0;
    json_t *j = json_object();
    json_object_set_new(j, "label", json_string(label));
    json_object_set_new(j, "steps", json_integer(s->steps));
    json_object_set_new(j, "step_us", st > 0 ? json_real(s->step_us) : json_null());
    json_object_set_new(j, "untraced_step_us", s->untraced_step_us > 0 ? json_real(s->untraced_step_us) : json_null());
    json_object_set_new(j, "kernels", json_integer((json_int_t)s->kernels));
    json_object_set_new(j, "kernels_per_step", st > 0 ? json_real((double)s->kernels / st) : json_null());
    json_object_set_new(j, "launch_calls_per_step", st > 0 ? json_real((double)s->launch_calls / st) : json_null());
    json_object_set_new(j, "graph_launches_per_step", st > 0 ? json_real((double)s->graph_launch_calls / st) : json_null());
    json_object_set_new(j, "gap_median_us", json_real(s->gap_us.median));
    json_object_set_new(j, "gap_p90_us", json_real(s->gap_us.p90));
    json_object_set_new(j, "launch_latency_median_us", json_real(s->latency_us.median));
    json_object_set_new(j, "idle_fraction", json_real(s->idle_frac));
    json_object_set_new(j, "short_gap_share", json_real(s->short_share));
    json_object_set_new(j, "busy_us", json_real(s->busy_us));
    return j;
}

void *gr_ls_compare_json(const char *label_a, const gr_ls_scope *a, const char *label_b, const gr_ls_scope *b) {
    json_t *j = json_object();
    json_object_set_new(j, "traced", json_true());
    json_object_set_new(j, "a", cmp_side(label_a, a));
    json_object_set_new(j, "b", cmp_side(label_b, b));
    char why[400];
    int differ = gr_ls_compare_mismatch(a, b, why, sizeof(why));
    json_object_set_new(j, "kernels_per_step_differ", json_boolean(differ));
    if (differ) {
        double ka = (double)a->kernels / (double)a->steps, kb = (double)b->kernels / (double)b->steps;
        json_object_set_new(j, "warning", json_string(why));
        json_object_set_new(j, "per_kernel_us_a", json_real(a->step_us / ka));
        json_object_set_new(j, "per_kernel_us_b", kb > 0 ? json_real(b->step_us / kb) : json_null());
        json_object_set_new(j, "per_kernel_us",
                            kb > 0 ? json_real(a->step_us / ka - b->step_us / kb) : json_null());
        if (a->untraced_step_us > 0 && b->untraced_step_us > 0 && kb > 0)
            json_object_set_new(j, "untraced_per_kernel_us",
                                json_real(a->untraced_step_us / ka - b->untraced_step_us / kb));
    } else if (a->steps > 0 && b->steps > 0 && a->kernels > 0) {
        double ka = (double)a->kernels / (double)a->steps;
        json_object_set_new(j, "per_kernel_us", json_real((a->step_us - b->step_us) / ka));
        if (a->untraced_step_us > 0 && b->untraced_step_us > 0)
            json_object_set_new(j, "untraced_per_kernel_us", json_real((a->untraced_step_us - b->untraced_step_us) / ka));
    }
    return j;
}

gr_status gr_ls_write_json(const char *path, const void *json, const char *what, gr_error *err) {
    int to_stdout = !strcmp(path, "-");
    errno = 0;
    FILE *f = to_stdout ? stdout : fopen(path, "w");
    if (!f)
        return gr_error_set(err, GR_ERR_IO, path, "cannot write %s (is the directory writable?): %s", what,
                            strerror(errno));
    int e = 0;
    /* jansson writes through stdio: a full disk shows at the flush, not at the dump */
    if (json_dumpf((const json_t *)json, f, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) != 0 || fputc('\n', f) == EOF ||
        fflush(f) != 0 || ferror(f))
        e = errno ? errno : EIO;
    if (!to_stdout && fclose(f) != 0 && !e) e = errno ? errno : EIO;
    if (e) return gr_error_set(err, GR_ERR_IO, path, "cannot write %s: %s", what, strerror(e));
    return GR_OK;
}
