/* GPU suite for cupti-launchstat: graphrun's in-process traced run of small plans (API records
 * arrive although CUDA initialised before tracing, launch counts match the plan, every eager
 * kernel and every graph node kernel maps to its op, the callback layer's listeners see the
 * launches, no records dropped in either of two traces in one process), the collector started
 * after CUDA initialised (its start-up probe), cupti-launchstat around graphrun end to end
 * (counts, latency timestamps, node mapping), exit code passthrough of a failing command,
 * another CUPTI subscriber, and zero dropped records with a deliberately tiny buffer pool.
 * Every test prints what it saw (record counts by kind, the collector's own counts, how API
 * records were enabled, warnings, per-region numbers), so a failure is diagnosable from the log.
 * Without a device every test prints "SKIPPED: no CUDA device" and counts as skipped. */
#include <cuda_runtime_api.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/device.h"
#include "core/workload.h"
#include "cupti_tools/analysis.h"
#include "cupti_tools/collector.h"
#include "cupti_tools/report.h"
#include "cupti_tools/trace.h"
#include "kernels/registry.h"
#include "replay/run.h"
#include "replay/trace.h"
#include "tests.h"

static gr_device_info info;

static int device_ready(void) {
    gr_error e;
    gr_error_clear(&e);
    return gr_device_probe(0, &info, &e) == GR_OK;
}

static const char *bin(const char *name) {
    return gr_test_bin(name);
}

static char out[1 << 20];

static int sh(const char *cmd_fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *cmd_fmt, ...) {
    char cmd[8192], full[8400];
    va_list ap;
    va_start(ap, cmd_fmt);
    vsnprintf(cmd, sizeof(cmd), cmd_fmt, ap);
    va_end(ap);
    snprintf(full, sizeof(full), "cd '%s' && %s 2>&1", GR_SOURCE_DIR, cmd);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static gr_plan *plan_for_device(const char *json, gr_workload **wl, gr_error *e) {
    *wl = gr_test_load(json, e);
    if (!*wl) return NULL;
    const char *v = gr_workload_variant(*wl, NULL, e);
    gr_plan *p = NULL;
    gr_target t = gr_target_from_info(&info);
    if (v) gr_plan_resolve(*wl, v, &t, gr_kernel_find, gr_kernel_all_names, &p, e);
    return p;
}

/* Everything a failed assertion below needs to be understood, on stdout. */
static void diag_trace(const char *label, const gr_trace *t, const gr_ls_report *r) {
    if (!t) {
        printf("\n    [%s] no trace read back", label);
        return;
    }
    size_t eager = 0, graph = 0;
    for (size_t i = 0; i < t->gpu.n; i++)
        if (t->gpu.v[i].kind == GR_GPU_KERNEL) {
            if (t->gpu.v[i].graph || t->gpu.v[i].node)
                graph++;
            else
                eager++;
        }
    printf("\n    [%s] %s (%s mode), CUPTI %d", label, t->path, t->mode, t->cupti_version);
    printf("\n      kinds: %s", t->kinds);
    printf("\n      apis:  %s", t->apis);
    printf("\n      records: %zu kernels (%zu eager, %zu graph), %zu api, %zu ext, %zu node, "
           "%zu op, %zu region, %zu ovh, %zu unknown",
           eager + graph, eager, graph, t->api.n, t->ext.n, t->node.n, t->op.n, t->region.n,
           t->ovh.n, t->unknown_records);
    if (t->has_api_counts)
        printf("\n      collector: %llu api records (%llu launch, %llu unwanted), "
               "%llu launch calls seen by callbacks, %llu ext records",
               (unsigned long long)t->end_api_records, (unsigned long long)t->end_launch_api_records,
               (unsigned long long)t->end_unwanted_api_records,
               (unsigned long long)t->end_launch_calls_seen, (unsigned long long)t->end_ext_records);
    else
        printf("\n      collector: (no counts in the end record)");
    printf("\n      end: reason \"%s\", dropped %llu, dropped before start %llu, "
           "buffers %llu, waits %llu%s%s",
           t->end_reason, (unsigned long long)t->dropped,
           (unsigned long long)t->dropped_before_start, (unsigned long long)t->buffers,
           (unsigned long long)t->buffer_waits, t->dropped_detail[0] ? "; drops: " : "",
           t->dropped_detail);
    if (!r) return;
    gr_ls_warning w[8];
    size_t nw = gr_ls_warnings(r, w, 8);
    for (size_t i = 0; i < nw && i < 8; i++)
        printf("\n      WARNING: %s", w[i].msg);
    for (size_t i = 0; i < r->all.napi && i < 12; i++)
        printf("\n      api %-28s %s %-12s calls %zu nested %zu",
               gr_trace_str(t, r->all.api[i].name), r->all.api[i].driver ? "drv" : "rt ",
               gr_api_cat_name((gr_api_cat)r->all.api[i].cat), r->all.api[i].count,
               r->all.api[i].nested);
    for (size_t i = 0; i < r->nregions; i++) {
        const gr_ls_scope *s = &r->regions[i];
        printf("\n      region %-16s steps %lld: kernels %zu (eager %zu, graph %zu), "
               "launch calls %zu, graph launches %zu (graph.launches %zu), with op %zu, "
               "no api %zu, ops %zu, mapped api/op %zu/%zu of %zu nodes",
               s->name, (long long)s->steps, s->kernels, s->eager_kernels, s->graph_kernels,
               s->launch_calls, s->graph_launch_calls, s->graph.launches, s->kernels_with_op,
               s->no_api, s->nops, s->graph.mapped_api, s->graph.mapped_op, s->graph.node_kernels);
    }
}

typedef struct launch_count {
    int enters, exits, max_depth;
} launch_count;

static void count_launches(void *user, const gr_cupti_api_call *c) {
    launch_count *lc = user;
    if (!c->name || !strstr(c->name, "LaunchKernel")) return;
    if (c->enter) lc->enters++;
    else lc->exits++;
    if (c->depth > lc->max_depth) lc->max_depth = c->depth;
}

/* A fork/join plan (3 kernels on 2 streams) through graphrun's traced run. */
static void test_in_process_trace(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *json =
        "{\"name\": \"fj\", \"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4096], \"init\": \"normal\"},"
        "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [4096]}, {\"name\": \"c\", \"dtype\": \"fp32\", \"shape\": [4096]},"
        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [4096]}], \"outputs\": [\"y\"],"
        "\"ops\": [{\"fork\": \"side\"}, {\"name\": \"g\", \"kernel\": \"gelu\", \"inputs\": [\"a\"], \"outputs\": [\"b\"], \"stream\": \"side\"},"
        "{\"name\": \"s\", \"kernel\": \"silu\", \"inputs\": [\"a\"], \"outputs\": [\"c\"]}, {\"join\": \"side\"},"
        "{\"name\": \"sum\", \"kernel\": \"add\", \"inputs\": [\"b\", \"c\"], \"outputs\": [\"y\"]}]}";
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    gr_plan *p = plan_for_device(json, &wl, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->kernels, 3);
    gr_run_opts o;
    gr_run_opts_default(&o);
    o.iters = 40;
    o.batches = 4;
    o.bandwidth = 0;
    o.progress = 0;
    gr_run_report *r = gr_run_report_create(wl, &info, &o);
    const gr_plan *plans[1] = {p};
    CU_ASSERT_EQUAL_FATAL(gr_run_plans(plans, 1, r, &e), GR_OK);
    launch_count lc = {0, 0, 0};
    CU_ASSERT_EQUAL(gr_cupti_add_listener(count_launches, &lc, &e), GR_OK);
    const char *path = "/tmp/gr_gpu_cupti_inproc.jsonl";
    gr_trace_opts topt = {path, 20, "test_in_process_trace"};
    gr_trace_result *tr = calloc(1, sizeof(*tr));
    gr_status st = gr_trace_run(r, &o, &topt, tr, &e);
    if (st != GR_OK) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, GR_OK);
    gr_cupti_remove_listener(count_launches, &lc);
    diag_trace("in-process, first trace", tr->trace, tr->analysis);
    printf("\n      listener: %d launch enters, %d exits, max depth %d; cupti result: %llu "
           "records, %llu dropped, "
           "%llu callback errors",
           lc.enters, lc.exits, lc.max_depth, (unsigned long long)tr->cupti.records,
           (unsigned long long)tr->cupti.dropped, (unsigned long long)tr->cupti.callback_errors);
    CU_ASSERT_EQUAL(tr->cupti.dropped, 0);
    CU_ASSERT_TRUE(tr->cupti.records > 0);
    CU_ASSERT_EQUAL(tr->cupti.callback_errors, 0);
    /* API records although CUDA initialised (the untraced run) before tracing started: the
     * H200 run of 2026-11-29 had none in-process, so no launch calls and no eager op mapping */
    const gr_trace *t = tr->trace;
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_TRUE(t->api.n > 0);
    CU_ASSERT_TRUE(t->ext.n > 0); /* CUPTI writes external-correlation records with API records */
    CU_ASSERT_TRUE(t->has_api_counts);
    CU_ASSERT_TRUE(t->end_launch_calls_seen > 0);
    CU_ASSERT_TRUE(t->end_launch_api_records >= t->end_launch_calls_seen);
    GR_ASSERT_CONTAINS(t->apis, "start-up probe:");
    CU_ASSERT_PTR_NULL(strstr(t->apis, "NO API RECORDS"));
    CU_ASSERT_EQUAL(gr_ls_warnings(tr->analysis, NULL, 0), 0);
    CU_ASSERT_EQUAL(tr->nv, 1);
    CU_ASSERT_TRUE(tr->v[0].done);
    CU_ASSERT_TRUE(tr->v[0].eager.step_us.median > 0 && tr->v[0].graph.step_us.median > 0);
    const gr_ls_report *a = tr->analysis;
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL_FATAL(a->nregions, 2);
    const gr_ls_scope *eg[2], *gg[2];
    CU_ASSERT_EQUAL_FATAL(gr_ls_mode_pairs(a, eg, gg, 2), 1);
    const gr_ls_scope *ea = eg[0], *ga = gg[0];
    int64_t steps = ea->steps;
    CU_ASSERT_EQUAL(steps, (int64_t)tr->v[0].eager.warmup + (int64_t)tr->v[0].eager.batches * tr->v[0].eager.steps_per_batch);
    /* launch counts match the plan: 3 kernels and 3 launch calls per eager step */
    CU_ASSERT_EQUAL(ea->kernels, (size_t)(3 * steps));
    CU_ASSERT_EQUAL(ea->eager_kernels, (size_t)(3 * steps));
    CU_ASSERT_EQUAL(ea->launch_calls, (size_t)(3 * steps));
    CU_ASSERT_EQUAL(ea->incomplete, 0);
    CU_ASSERT_EQUAL(ea->no_api, 0);                    /* every eager kernel has its launch call */
    CU_ASSERT_EQUAL(ea->kernels_with_op, ea->kernels); /* every eager kernel mapped to its op */
    CU_ASSERT_EQUAL(ea->nstreams, 2);
    /* graph: 3 node kernels per launch, one launch per step, every node mapped to API and op */
    CU_ASSERT_EQUAL(ga->graph_kernels, (size_t)(3 * ga->steps));
    CU_ASSERT_EQUAL(ga->graph_launch_calls, (size_t)ga->steps);
    CU_ASSERT_EQUAL(ga->graph.launches, (size_t)ga->steps);
    CU_ASSERT_EQUAL(ga->graph.mapped_api, ga->graph.node_kernels);
    CU_ASSERT_EQUAL(ga->graph.mapped_op, ga->graph.node_kernels);
    CU_ASSERT_EQUAL(ga->kernels_with_op, ga->kernels);
    CU_ASSERT_TRUE(ga->graph.nodes.median == 3.0);
    CU_ASSERT_EQUAL(ea->nops, 3);
    for (size_t i = 0; i < ea->nops; i++) CU_ASSERT_EQUAL(ea->ops[i].eager, (size_t)steps);
    for (size_t i = 0; i < ga->nops; i++) CU_ASSERT_EQUAL(ga->ops[i].graph, (size_t)ga->steps);
    /* regions carry both timings */
    CU_ASSERT_TRUE(ea->untraced_step_us > 0 && ea->traced_event_step_us > 0);
    /* the ops' dataflow for the fusion what-if: every kernel op says what it reads and writes,
     * every used buffer its size and whether it is an output (y only) */
    CU_ASSERT_EQUAL(t->buf.n, 4);
    for (size_t i = 0; i < t->buf.n; i++) {
        const gr_tr_buf *bf = &t->buf.v[i];
        CU_ASSERT_EQUAL(bf->bytes, 4096.0 * 4);
        CU_ASSERT_EQUAL(bf->output, !strcmp(gr_trace_str(t, bf->name), "y"));
    }
    size_t flows = 0;
    for (size_t i = 0; i < t->op.n; i++) {
        const gr_tr_op *op = &t->op.v[i];
        if (!op->has_flow) continue;
        flows++;
        CU_ASSERT_EQUAL(op->launches, 1);
        if (!strcmp(gr_trace_str(t, op->name), "sum")) {
            CU_ASSERT_STRING_EQUAL(gr_trace_str(t, op->in), "1,2");
            CU_ASSERT_STRING_EQUAL(gr_trace_str(t, op->out), "3");
            CU_ASSERT_EQUAL(op->rd, 2 * 4096.0 * 4);
            CU_ASSERT_EQUAL(op->wr, 4096.0 * 4);
        }
    }
    CU_ASSERT_EQUAL(flows, 3); /* the fork and the join carry none */
    /* the listener saw every eager launch (runtime, and the driver inside it if traced) */
    CU_ASSERT_TRUE(lc.enters >= 3 * (int)steps);
    CU_ASSERT_EQUAL(lc.enters, lc.exits);
    /* printing and JSON work on real data */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gr_trace_print(f, tr);
    fclose(f);
    GR_ASSERT_CONTAINS(buf, "inflation");
    GR_ASSERT_CONTAINS(buf, "compare (traced)");
    free(buf);
    void *j = gr_trace_json(tr);
    CU_ASSERT_PTR_NOT_NULL(j);
    json_decref((json_t *)j);
    gr_trace_result_free(tr);
    /* tracing starts again in the same process after a finalized stop. On the H200 this second
     * trace reported dropped records. CUPTI keeps one dropped count and hands it over (resetting
     * it) only when asked: what the first trace's end left was reported by the second one. Now
     * asked at stop and at start, what was left shown as "dropped before start", and each count's
     * phase, buffer and time in the end record's dropped_detail (printed above). */
    memset(tr, 0, sizeof(*tr));
    topt.iters = 5;
    gr_error_clear(&e);
    st = gr_trace_run(r, &o, &topt, tr, &e);
    if (st != GR_OK) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_EQUAL(st, GR_OK);
    diag_trace("in-process, second trace", tr->trace, tr->analysis);
    CU_ASSERT_EQUAL(tr->cupti.dropped, 0);
    if (tr->trace) {
        CU_ASSERT_TRUE(tr->trace->api.n > 0);
        CU_ASSERT_TRUE(tr->trace->ext.n > 0);
    }
    if (tr->analysis) CU_ASSERT_EQUAL(gr_ls_warnings(tr->analysis, NULL, 0), 0);
    gr_trace_result_free(tr);
    free(tr);
    gr_run_report_destroy(r);
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
    unlink(path);
}

/* The collector started after CUDA initialised, with nothing launched: its start-up probe
 * (cuCtxSynchronize, and cudaDeviceSynchronize as the runtime probe) must find API records. */
static void probe_sync(void) {
    (void)cudaDeviceSynchronize();
}

static void test_collector_twice(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    CU_ASSERT_EQUAL_FATAL(cudaFree(NULL), cudaSuccess); /* a current context, as in graphrun */
    gr_cupti_config c;
    gr_cupti_config_default(&c);
    c.trace_path = "/tmp/gr_gpu_cupti_twice.jsonl";
    c.probe_runtime = probe_sync;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_cupti_start(&c, &e), GR_OK);
    CU_ASSERT_TRUE(gr_cupti_active());
    gr_error e2;
    gr_error_clear(&e2);
    CU_ASSERT_EQUAL(gr_cupti_start(&c, &e2), GR_ERR_INTERNAL);
    GR_ASSERT_CONTAINS(e2.msg, "a CUPTI trace is already being written in this process");
    gr_cupti_result res;
    CU_ASSERT_EQUAL(gr_cupti_stop("test", 1, &res, &e), GR_OK);
    CU_ASSERT_FALSE(gr_cupti_active());
    gr_trace *t = NULL;
    CU_ASSERT_EQUAL(gr_trace_load(c.trace_path, 0, &t, &e), GR_OK);
    diag_trace("collector after CUDA init", t, NULL);
    if (t) {
        CU_ASSERT_STRING_EQUAL(t->end_reason, "test");
        CU_ASSERT_STRING_EQUAL(t->device, info.name);
        /* the probe's two sync calls, one per domain */
        GR_ASSERT_CONTAINS(t->apis, "start-up probe:");
        CU_ASSERT_PTR_NULL(strstr(t->apis, "NO API RECORDS"));
        int rt = 0, drv = 0;
        for (size_t i = 0; i < t->api.n; i++) {
            const char *n = gr_trace_str(t, t->api.v[i].name);
            rt += t->api.v[i].driver == 0 && !strcmp(n, "cudaDeviceSynchronize");
            drv += t->api.v[i].driver == 1 && !strcmp(n, "cuCtxSynchronize");
        }
        CU_ASSERT_TRUE(rt >= 1);
        CU_ASSERT_TRUE(drv >= 1);
        CU_ASSERT_EQUAL(t->dropped, 0);
    }
    gr_trace_destroy(t);
    unlink(c.trace_path);
}

/* cupti-launchstat around graphrun: counts are exact for the tiny kernel. */
static void test_injection_end_to_end(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *path = "/tmp/gr_gpu_cupti_e2e.jsonl";
    int rc = sh("'%s' -o %s --latency --json /tmp/gr_gpu_cupti_e2e.json -- '%s' run workloads/launch_bound.json "
                "--variant tiny --set K=50 --iters 100 --batches 20 --no-bandwidth --quiet",
                bin("cupti-launchstat"), path, bin("graphrun"));
    if (rc != 0) fprintf(stderr, "\n%s", out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    GR_ASSERT_CONTAINS(out, "trace written to");
    GR_ASSERT_CONTAINS(out, "all times are TRACED");
    gr_error e;
    gr_error_clear(&e);
    gr_trace *t = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_trace_load(path, 0, &t, &e), GR_OK);
    gr_ls_report *r = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_ls_analyze(t, NULL, &r, &e), GR_OK);
    diag_trace("injection", t, r);
    CU_ASSERT_EQUAL(t->dropped, 0);
    CU_ASSERT_STRING_EQUAL(t->mode, "injection");
    /* before CUDA initialises per-API enables work (unchanged), and the counts agree */
    CU_ASSERT_TRUE(t->api.n > 0);
    CU_ASSERT_TRUE(t->has_api_counts);
    CU_ASSERT_TRUE(t->end_launch_api_records >= t->end_launch_calls_seen);
    CU_ASSERT_EQUAL(r->all.no_api, 0);
    CU_ASSERT_EQUAL(gr_ls_warnings(r, NULL, 0), 0);
    CU_ASSERT_STRING_EQUAL(t->device, info.name);
    CU_ASSERT_TRUE(t->latency);
    /* graphrun: 1 verification step + 10 warm-up + 100 timed, eager and graph, 50 tiny kernels each */
    size_t tiny = 0;
    for (size_t i = 0; i < r->all.nkern; i++) {
        char nm[256];
        if (strstr(gr_ls_kernel_name(gr_trace_str(t, r->all.kern[i].name), 0, nm, sizeof(nm)), "tiny"))
            tiny += r->all.kern[i].count;
    }
    CU_ASSERT_EQUAL(tiny, (size_t)(2 * 111 * 50));
    CU_ASSERT_EQUAL(r->all.graph_kernels, (size_t)(111 * 50));
    CU_ASSERT_EQUAL(r->all.graph.launches, 111);
    CU_ASSERT_EQUAL(r->all.graph.mapped_api, r->all.graph.node_kernels);
    CU_ASSERT_TRUE(r->all.queued_us.n > 0); /* --latency */
    CU_ASSERT_TRUE(r->all.launch_calls >= (size_t)(111 * 50));
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    json_error_t je;
    json_t *j = json_load_file("/tmp/gr_gpu_cupti_e2e.json", 0, &je);
    CU_ASSERT_PTR_NOT_NULL(j);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "command_exit_code")), 0);
    json_decref(j);
    unlink(path);
    unlink("/tmp/gr_gpu_cupti_e2e.json");
}

/* The command's exit code passes through, and its trace is still complete. */
static void test_injection_exit_code(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *path = "/tmp/gr_gpu_cupti_fail.jsonl";
    int rc = sh("'%s' -o %s -- '%s' run /nonexistent/workload.json", bin("cupti-launchstat"), path, bin("graphrun"));
    CU_ASSERT_EQUAL(rc, 2); /* graphrun's own exit code for a missing file */
    GR_ASSERT_CONTAINS(out, "exited with code 2");
    gr_error e;
    gr_error_clear(&e);
    gr_trace *t = NULL;
    CU_ASSERT_EQUAL(gr_trace_load(path, 0, &t, &e), GR_OK); /* initialised CUDA, so traced, and flushed at exit */
    gr_trace_destroy(t);
    unlink(path);
    /* killed by SIGTERM: flushed by the injection's signal thread, 128+15 passed through */
    rc = sh("'%s' -o %s -- sh -c \"'%s' run workloads/launch_bound.json --iters 1000000 --no-bandwidth --quiet & "
            "sleep 8; kill -TERM \\$!; wait \\$!\"",
            bin("cupti-launchstat"), path, bin("graphrun"));
    CU_ASSERT_EQUAL(rc, 128 + 15);
    gr_error_clear(&e);
    t = NULL;
    CU_ASSERT_EQUAL(gr_trace_load(path, 0, &t, &e), GR_OK);
    if (t) GR_ASSERT_CONTAINS(t->end_reason, "SIGTERM");
    else fprintf(stderr, "\n    %s", e.msg);
    gr_trace_destroy(t);
    unlink(path);
}

/* Under the injection graphrun's own --trace meets another subscriber: a clear message, the
 * untraced results stand, exit 1 passed through. */
static void test_other_subscriber(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    int rc = sh("'%s' -o /tmp/gr_gpu_cupti_outer.jsonl --no-report -- '%s' run workloads/launch_bound.json --set K=10 "
                "--iters 20 --no-bandwidth --quiet --trace /tmp/gr_gpu_cupti_inner.jsonl",
                bin("cupti-launchstat"), bin("graphrun"));
    CU_ASSERT_EQUAL(rc, 1);
    GR_ASSERT_CONTAINS(out, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
    GR_ASSERT_CONTAINS(out, "the results above are from the untraced run and stand");
    GR_ASSERT_CONTAINS(out, "eager us/step"); /* the untraced report was printed */
    gr_error e;
    gr_error_clear(&e);
    gr_trace *t = NULL;
    CU_ASSERT_EQUAL(gr_trace_load("/tmp/gr_gpu_cupti_inner.jsonl", 0, &t, &e), GR_OK);
    if (t) GR_ASSERT_CONTAINS(t->end_error, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
    gr_trace_destroy(t);
    unlink("/tmp/gr_gpu_cupti_outer.jsonl");
    unlink("/tmp/gr_gpu_cupti_inner.jsonl");
}

/* 1 MiB buffers, at most 4 in memory, 600k kernels: the program waits for the writer rather than
 * losing records. (bench/suites/cupti.sh runs the full 10,000 x 300.) */
static void test_zero_dropped_small_pool(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *path = "/tmp/gr_gpu_cupti_pool.jsonl";
    int rc = sh("'%s' -o %s --buffer-mb 1 --max-buffers 4 --no-report -- '%s' run workloads/launch_bound.json "
                "--variant tiny --set K=300 --iters 1000 --no-bandwidth --no-cpu-ref --quiet",
                bin("cupti-launchstat"), path, bin("graphrun"));
    if (rc != 0) fprintf(stderr, "\n%s", out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    gr_error e;
    gr_error_clear(&e);
    gr_trace *t = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_trace_load(path, 0, &t, &e), GR_OK);
    CU_ASSERT_EQUAL(t->dropped, 0);
    CU_ASSERT_TRUE(t->buffers <= 4);
    gr_ls_report *r = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_ls_analyze(t, NULL, &r, &e), GR_OK);
    /* 1 + 100 + 1000 eager steps and as many graph launches of 300 kernels, plus init kernels */
    CU_ASSERT_TRUE(r->all.kernels >= (size_t)2 * 1101 * 300);
    CU_ASSERT_EQUAL(r->all.graph_kernels, (size_t)1101 * 300);
    printf("\n    %zu kernels traced with %llu buffers of 1 MiB, %llu waits for the writer, 0 dropped", r->all.kernels,
           (unsigned long long)t->buffers, (unsigned long long)t->buffer_waits);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    unlink(path);
}

static CU_TestInfo gpu_cupti_tests[] = {{"graphrun traced run maps kernels to ops", test_in_process_trace},
                                        {"one collector at a time", test_collector_twice},
                                        {"cupti-launchstat around graphrun", test_injection_end_to_end},
                                        {"exit codes pass through, SIGTERM flushes", test_injection_exit_code},
                                        {"another CUPTI subscriber", test_other_subscriber},
                                        {"zero dropped with a tiny buffer pool", test_zero_dropped_small_pool},
                                        CU_TEST_INFO_NULL};

static gr_suite_def gr_gpu_cupti_suites[] = {{"gpu_cupti", gpu_cupti_tests, 1}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_gpu_cupti_suites)
