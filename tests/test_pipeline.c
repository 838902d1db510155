/* The run pipeline (CPU): the stage runner's order, records, skips, hooks and error path with
 * stages that need no GPU; the built-in stages' conditions; the report's stage list in JSON; the
 * options the pipeline gave the service (request fields, `graphrun capture` flags) and `tp`
 * (--pdl), checked up to the point where a GPU is needed. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/usermod.h"
#include "replay/load.h"
#include "replay/pipeline.h"
#include "replay/protocol.h"
#include "replay/report.h"
#include "replay/trace.h"
#include "service_util.h"
#include "tests.h"

typedef struct trail {
    char log[256];
    int fail_at; /* stage index that fails, -1 none */
    int skip_at; /* stage index the before hook skips, -1 none */
    int after_fail_at;
    int n;
} trail;

static trail T;

static gr_status step(gr_pipe *p, int i, gr_error *err) {
    (void)p;
    size_t len = strlen(T.log);
    snprintf(T.log + len, sizeof(T.log) - len, "%d", i);
    if (i == T.fail_at) return gr_error_set(err, GR_ERR_INPUT, NULL, "stage %d failed on purpose", i);
    return GR_OK;
}
static gr_status s0(gr_pipe *p, gr_error *e) { return step(p, 0, e); }
static gr_status s1(gr_pipe *p, gr_error *e) { return step(p, 1, e); }
static gr_status s2(gr_pipe *p, gr_error *e) { return step(p, 2, e); }
static const gr_stage st0 = {"zero", s0}, st1 = {"one", s1}, st2 = {"two", s2};
static const gr_stage *const list3[] = {&st0, &st1, &st2};

static int index_of(const gr_stage *s) {
    return s == &st0 ? 0 : s == &st1 ? 1 : s == &st2 ? 2 : -1;
}

static gr_status before(void *user, gr_pipe *p, const gr_stage *s, int *skip, gr_error *err) {
    (void)user, (void)p, (void)err;
    size_t len = strlen(T.log);
    snprintf(T.log + len, sizeof(T.log) - len, "<");
    if (index_of(s) == T.skip_at) *skip = 1;
    return GR_OK;
}

static gr_status after(void *user, gr_pipe *p, const gr_stage *s, gr_status st, gr_error *err) {
    (void)user, (void)p;
    size_t len = strlen(T.log);
    snprintf(T.log + len, sizeof(T.log) - len, ">%s", st == GR_OK ? "" : "!");
    if (st == GR_OK && index_of(s) == T.after_fail_at)
        return gr_error_set(err, GR_ERR_CUDA, NULL, "after hook of stage %d failed", index_of(s));
    return GR_OK;
}

static gr_plan *tiny_plan(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(
        "{\"name\": \"t\", \"params\": {\"n\": 64}, \"buffers\": ["
        "{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [\"n\"], \"init\": \"normal\"},"
        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [\"n\"]}], \"outputs\": [\"y\"],"
        "\"variants\": {\"v\": {\"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"a\"], "
        "\"outputs\": [\"y\"]}]}}}",
        NULL, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    return p;
}

static void run3(gr_variant_run *v, gr_status *st, gr_error *e, const gr_pipe_hooks *h) {
    gr_plan *p = tiny_plan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_run_opts o;
    gr_run_opts_default(&o);
    gr_pipe pipe;
    memset(v, 0, sizeof(*v));
    gr_pipe_init(&pipe, p, 0, &o, v);
    pipe.hooks = h;
    gr_error_clear(e);
    *st = gr_pipe_run(&pipe, list3, 3, e);
    gr_pipe_free(&pipe);
    v->plan = NULL;
    gr_plan_destroy(p);
}

static void reset(int fail_at, int skip_at, int after_fail_at) {
    memset(&T, 0, sizeof(T));
    T.fail_at = fail_at;
    T.skip_at = skip_at;
    T.after_fail_at = after_fail_at;
}

/* stages run in order, each recorded with its status; the first error stops the list and is the
 * variant's status and error */
static void test_order_and_error(void) {
    gr_variant_run v;
    gr_status st;
    gr_error e;
    gr_pipe_hooks h = {before, after, NULL, NULL, NULL};
    reset(-1, -1, -1);
    run3(&v, &st, &e, &h);
    CU_ASSERT_EQUAL(st, GR_OK);
    CU_ASSERT_STRING_EQUAL(T.log, "<0><1><2>");
    CU_ASSERT_EQUAL(v.nstages, 3);
    CU_ASSERT_STRING_EQUAL(v.stages[1].stage, "one");
    CU_ASSERT_TRUE(v.stages[2].ran);
    CU_ASSERT_EQUAL(v.status, GR_OK);
    gr_variant_run_clear(&v);

    reset(1, -1, -1);
    run3(&v, &st, &e, &h);
    CU_ASSERT_EQUAL(st, GR_ERR_INPUT);
    CU_ASSERT_STRING_EQUAL(T.log, "<0><1>!"); /* two never runs; the after hook saw the error */
    CU_ASSERT_EQUAL(v.nstages, 2);
    CU_ASSERT_EQUAL(v.stages[1].status, GR_ERR_INPUT);
    CU_ASSERT_EQUAL(v.status, GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(v.error, "stage 1 failed on purpose");
    gr_variant_run_clear(&v);
}

/* a before hook skips a stage (recorded as not run); an after hook's error fails an OK stage */
static void test_hooks(void) {
    gr_variant_run v;
    gr_status st;
    gr_error e;
    gr_pipe_hooks h = {before, after, NULL, NULL, NULL};
    reset(-1, 1, -1);
    run3(&v, &st, &e, &h);
    CU_ASSERT_EQUAL(st, GR_OK);
    CU_ASSERT_STRING_EQUAL(T.log, "<0><<2>");
    CU_ASSERT_EQUAL(v.nstages, 3);
    CU_ASSERT_FALSE(v.stages[1].ran);
    CU_ASSERT_TRUE(v.stages[0].ran && v.stages[2].ran);
    gr_variant_run_clear(&v);

    reset(-1, -1, 0);
    run3(&v, &st, &e, &h);
    CU_ASSERT_EQUAL(st, GR_ERR_CUDA);
    CU_ASSERT_STRING_EQUAL(T.log, "<0>");
    CU_ASSERT_EQUAL(v.nstages, 1);
    CU_ASSERT_EQUAL(v.stages[0].status, GR_ERR_CUDA);
    GR_ASSERT_CONTAINS(v.error, "after hook of stage 0 failed");
    gr_variant_run_clear(&v);
}

/* built-in stages: the reference is skipped without cpu_reference; a stage that needs the
 * session fails clearly when the list has none; no GPU is touched */
static void test_builtin_conditions(void) {
    gr_plan *p = tiny_plan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_run_opts o;
    gr_run_opts_default(&o);
    o.cpu_reference = 0;
    gr_variant_run v;
    memset(&v, 0, sizeof(v));
    gr_pipe pipe;
    gr_pipe_init(&pipe, p, 0, &o, &v);
    const gr_stage *const l1[] = {&gr_stage_reference, &gr_stage_eager_check};
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_pipe_run(&pipe, l1, 2, &e), GR_ERR_INTERNAL);
    CU_ASSERT_EQUAL(v.nstages, 2);
    CU_ASSERT_STRING_EQUAL(v.stages[0].stage, "reference");
    CU_ASSERT_FALSE(v.stages[0].ran);
    CU_ASSERT_STRING_EQUAL(v.stages[1].stage, "eager_check");
    GR_ASSERT_CONTAINS(e.msg, "without a session stage");
    gr_pipe_free(&pipe);
    gr_variant_run_clear(&v);
    /* the defaults every caller starts from */
    gr_run_opts_default(&o);
    CU_ASSERT_EQUAL(o.steps, 1);
    CU_ASSERT_EQUAL(o.unroll, 1);
    CU_ASSERT_EQUAL(gr_run_opts_warmup(&o), 100); /* iters 1000 / 10 */
    o.iters = 5;
    CU_ASSERT_EQUAL(gr_run_opts_warmup(&o), 3);
    o.warmup = 0;
    CU_ASSERT_EQUAL(gr_run_opts_warmup(&o), 0);
    /* the lists of the commands start with the session and end as documented */
    CU_ASSERT_PTR_EQUAL(gr_pipe_run_stages[0], &gr_stage_session);
    CU_ASSERT_PTR_EQUAL(gr_pipe_run_stages[gr_pipe_run_nstages - 1], &gr_stage_time_device_loop);
    CU_ASSERT_PTR_EQUAL(gr_pipe_capture_stages[gr_pipe_capture_nstages - 1], &gr_stage_verdict);
    /* the device loop's stages run only with --device-loop (recorded as not run otherwise) */
    const gr_stage *const l2[] = {&gr_stage_device_loop, &gr_stage_time_device_loop};
    gr_run_opts_default(&o);
    memset(&v, 0, sizeof(v));
    gr_pipe_init(&pipe, p, 0, &o, &v);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_pipe_run(&pipe, l2, 2, &e), GR_OK);
    CU_ASSERT_EQUAL(v.nstages, 2);
    CU_ASSERT_STRING_EQUAL(v.stages[0].stage, "device_loop");
    CU_ASSERT_FALSE(v.stages[0].ran);
    CU_ASSERT_STRING_EQUAL(v.stages[1].stage, "time_device_loop");
    CU_ASSERT_FALSE(v.stages[1].ran);
    gr_pipe_free(&pipe);
    gr_variant_run_clear(&v);
    o.device_loop = 8; /* asked for: it runs (and needs the session) */
    memset(&v, 0, sizeof(v));
    gr_pipe_init(&pipe, p, 0, &o, &v);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_pipe_run(&pipe, l2, 2, &e), GR_ERR_INTERNAL);
    CU_ASSERT_TRUE(v.stages[0].ran);
    GR_ASSERT_CONTAINS(e.msg, "without a session stage");
    gr_pipe_free(&pipe);
    gr_variant_run_clear(&v);
    gr_plan_destroy(p);
}

/* the report's JSON lists each variant's stages; a report grows past any fixed count */
static void test_report_stages(void) {
    gr_plan *p = tiny_plan();
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_run_report *r = gr_run_report_create(NULL, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    for (int i = 0; i < 40; i++) CU_ASSERT_PTR_NOT_NULL_FATAL(gr_run_report_add(r, p));
    CU_ASSERT_EQUAL(r->nv, 40);
    gr_run_opts o;
    gr_run_opts_default(&o);
    gr_pipe pipe;
    gr_pipe_init(&pipe, p, 0, &o, &r->v[39]);
    reset(-1, -1, -1);
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_pipe_run(&pipe, list3, 3, &e), GR_OK);
    json_t *j = gr_report_json(r);
    json_t *vs = json_object_get(j, "variants");
    CU_ASSERT_EQUAL(json_array_size(vs), 40);
    json_t *stages = json_object_get(json_array_get(vs, 39), "stages");
    CU_ASSERT_EQUAL(json_array_size(stages), 3);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(stages, 2), "stage")), "two");
    CU_ASSERT_TRUE(json_is_true(json_object_get(json_array_get(stages, 2), "ran")));
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(stages, 2), "status")), "ok");
    json_decref(j);
    gr_run_report_destroy(r);
    gr_plan_destroy(p);
}

/* the capture request takes the options the pipeline gives every command */
static void test_request_fields(void) {
    gr_request r;
    gr_error e;
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"capture\",\"workload\":\"/w.json\"}", &r, &e), GR_OK);
    CU_ASSERT_EQUAL(r.pdl, -1); /* absent: the service's GPU decides */
    CU_ASSERT_EQUAL(r.unroll, 1);
    CU_ASSERT_EQUAL(r.capture_check, 1);
    CU_ASSERT_STRING_EQUAL(r.input, "");
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"capture\",\"workload\":\"/w.json\","
                          "\"pdl\":true,\"unroll\":8,\"capture_check\":false,\"input\":\"/d.tsv\","
                          "\"skip_bad_lines\":true}",
                          &r, &e),
                    GR_OK);
    CU_ASSERT_EQUAL(r.pdl, 1);
    CU_ASSERT_EQUAL(r.unroll, 8);
    CU_ASSERT_EQUAL(r.capture_check, 0);
    CU_ASSERT_EQUAL(r.skip_bad_lines, 1);
    CU_ASSERT_STRING_EQUAL(r.input, "/d.tsv");
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"capture\",\"workload\":\"/w.json\","
                          "\"unroll\":0,\"input\":\"d.tsv\",\"pdl\":1}",
                          &r, &e),
                    GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "unroll: 0 is outside [1, 1024]");
    GR_ASSERT_CONTAINS(e.msg, "input: must be an absolute path");
    GR_ASSERT_CONTAINS(e.msg, "pdl: expected true or false");
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"capture\",\"workload\":\"/w.json\","
                          "\"pdl\":false}", &r, &e), GR_OK);
    CU_ASSERT_EQUAL(r.pdl, 0); /* false is --no-pdl, not "absent" */
    gr_request_clear(&r);
    /* replay does not take capture options */
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"replay\",\"pdl\":true}", &r, &e), GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "pdl");
    gr_request_clear(&r);
}

/* `graphrun capture` checks its new options before starting any service */
static void test_capture_flags(void) {
    char out[8192];
    CU_ASSERT_EQUAL(gr_test_graphrun("capture workloads/launch_bound.json --unroll 0", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--unroll takes a whole number of steps in [1, 1024]");
    CU_ASSERT_EQUAL(gr_test_graphrun("capture workloads/launch_bound.json --input /nonexistent/x.tsv", out,
                                     sizeof(out)),
                    2);
    GR_ASSERT_CONTAINS(out, "--input /nonexistent/x.tsv: cannot open the file");
    CU_ASSERT_EQUAL(gr_test_graphrun("capture workloads/launch_bound.json --skip-bad-lines", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--skip-bad-lines needs --input");
    CU_ASSERT_EQUAL(gr_test_graphrun("capture workloads/launch_bound.json --pdl=1", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "option --pdl takes no value");
    /* an input bound to a workload that has no batch param: the local validation says so */
    const char *tsv = gr_test_tmpfile(".tsv", "0\t1\n", 4);
    char args[512];
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --input %s", tsv);
    CU_ASSERT_EQUAL(gr_test_graphrun(args, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "has no param \"B\"");
    CU_ASSERT_EQUAL(gr_test_graphrun("capture --help", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "--pdl");
    GR_ASSERT_CONTAINS(out, "--no-capture-check");
    CU_ASSERT_EQUAL(gr_test_graphrun("tp --help", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "--pdl");
    CU_ASSERT_EQUAL(gr_test_graphrun("tp --pdl=yes", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "option --pdl takes no value");
}

/* PDL is on by default where the GPU has it: the options resolve per GPU, --pdl on a GPU without
 * it is exit 2, --no-pdl turns it off, and the report says which ran and why */
static void test_pdl_default(void) {
    gr_run_opts o;
    gr_error e;
    gr_error_clear(&e);
    gr_run_opts_default(&o);
    CU_ASSERT_EQUAL(o.pdl, GR_PDL_AUTO);
    CU_ASSERT_EQUAL(gr_run_opts_resolve_pdl(&o, 9, 0, &e), GR_OK);
    CU_ASSERT_EQUAL(o.pdl, 1);
    CU_ASSERT_EQUAL(o.pdl_default, 1);
    CU_ASSERT_EQUAL(gr_run_opts_resolve_pdl(&o, 8, 6, &e), GR_OK); /* the default, for this GPU */
    CU_ASSERT_EQUAL(o.pdl, 0);
    gr_run_opts_default(&o);
    CU_ASSERT_EQUAL(gr_run_opts_resolve_pdl(&o, 8, 6, &e), GR_OK);
    CU_ASSERT_EQUAL(o.pdl, 0);
    CU_ASSERT_EQUAL(o.pdl_default, 1);
    gr_run_opts_default(&o);
    o.pdl = GR_PDL_ON;
    CU_ASSERT_EQUAL(gr_run_opts_resolve_pdl(&o, 8, 9, &e), GR_ERR_USAGE);
    CU_ASSERT_EQUAL(gr_exit_code(e.code), 2);
    GR_ASSERT_CONTAINS(e.msg, "this GPU is 8.9");
    gr_error_clear(&e);
    gr_run_opts_default(&o);
    o.pdl = GR_PDL_OFF;
    CU_ASSERT_EQUAL(gr_run_opts_resolve_pdl(&o, 9, 0, &e), GR_OK);
    CU_ASSERT_EQUAL(o.pdl, 0);
    CU_ASSERT_EQUAL(o.pdl_default, 0);

    /* the report: pointwise unfused has 3 PDL-capable kernels per step */
    gr_target t = gr_target_default();
    gr_load_req req = {gr_test_src("workloads/pointwise_fusion.json"), "unfused", NULL, 0, NULL, 0, NULL, 0};
    gr_loaded l;
    gr_status st = gr_load_resolve(&req, &t, &l, &e);
    if (st != GR_OK) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, GR_OK);
    static const struct {
        int cc_major, cc_minor, ask;
        const char *text, *source;
    } cases[] = {
        {9, 0, GR_PDL_AUTO, "programmatic dependent launch (default; --no-pdl turns it off) for the "
                            "kernels that support it, per step: unfused 3", "default"},
        {9, 0, GR_PDL_OFF, "launches are plain (--no-pdl)", "--no-pdl"},
        {9, 0, GR_PDL_ON, "programmatic dependent launch (--pdl) for the kernels", "--pdl"},
        {8, 6, GR_PDL_AUTO, "needs compute capability 9.0+ and this GPU is 8.6",
         "default (GPU without PDL)"},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        gr_run_opts_default(&o);
        o.pdl = cases[c].ask;
        CU_ASSERT_EQUAL(gr_run_opts_resolve_pdl(&o, cases[c].cc_major, cases[c].cc_minor, &e), GR_OK);
        gr_device_info dev;
        memset(&dev, 0, sizeof(dev));
        dev.cc_major = cases[c].cc_major;
        dev.cc_minor = cases[c].cc_minor;
        gr_run_report *r = gr_run_report_create(l.wl, &dev, &o);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        gr_variant_run *v = gr_run_report_add(r, l.plans[0]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(v);
        v->timed = 1;
        v->checks.verified = 1;
        double e_us[3] = {30, 31, 32}, g_us[3] = {10, 11, 12};
        v->eager.step_us = gr_summarize(e_us, 3);
        v->graph_t.step_us = gr_summarize(g_us, 3);
        v->eager.batches = v->graph_t.batches = 3;
        v->eager.steps_per_batch = v->graph_t.steps_per_batch = 10;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        gr_report_text(f, r);
        fclose(f);
        GR_ASSERT_CONTAINS(text, cases[c].text);
        free(text);
        json_t *j = gr_report_json(r);
        CU_ASSERT_EQUAL(json_is_true(json_object_get(j, "pdl")), o.pdl);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "pdl_source")), cases[c].source);
        json_t *jv = json_array_get(json_object_get(j, "variants"), 0);
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(jv, "pdl_kernels_per_step")), o.pdl ? 3 : 0);
        json_decref(j);
        gr_run_report_destroy(r);
    }
    gr_loaded_free(&l);

    /* the flags */
    char out[8192];
    CU_ASSERT_EQUAL(gr_test_graphrun("run workloads/launch_bound.json --pdl --no-pdl", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--pdl and --no-pdl are both given");
    CU_ASSERT_EQUAL(gr_test_graphrun("capture workloads/launch_bound.json --no-pdl --pdl", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--pdl and --no-pdl are both given");
    CU_ASSERT_EQUAL(gr_test_graphrun("tp workloads/decode_tp.json --pdl --no-pdl", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--pdl and --no-pdl are both given");
    CU_ASSERT_EQUAL(gr_test_graphrun("validate workloads/launch_bound.json --no-pdl", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "option --no-pdl is for graphrun run");
    CU_ASSERT_EQUAL(gr_test_graphrun("run --help", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "--no-pdl");
    GR_ASSERT_CONTAINS(out, "--device-loop N");
    /* --device-loop: a whole number of steps, for run only */
    CU_ASSERT_EQUAL(gr_test_graphrun("run workloads/launch_bound.json --device-loop 0", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--device-loop takes a whole number in [1, 100000], got \"0\"");
    CU_ASSERT_EQUAL(gr_test_graphrun("run workloads/launch_bound.json --device-loop", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--device-loop");
    CU_ASSERT_EQUAL(gr_test_graphrun("validate workloads/launch_bound.json --device-loop 4", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "option --device-loop is for graphrun run");
}

/* user kernels: the reference variant is found among the plans (or resolved), and the report
 * says per variant what its outputs were checked against */
static void test_user_reference(void) {
    char cache[128];
    snprintf(cache, sizeof(cache), "/tmp/gr_pipe_cache_%d", (int)getpid());
    gr_usermod_set_cache_dir(cache);
    gr_target t = gr_target_default();
    gr_error e;
    gr_error_clear(&e);
    gr_load_req req = {gr_test_src("workloads/examples/add_mul_act.json"), NULL, NULL, 0, NULL, 0, NULL, 0};
    gr_loaded l;
    gr_status st = gr_load_resolve(&req, &t, &l, &e);
    if (st != GR_OK) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_EQUAL_FATAL(st, GR_OK);
    const gr_plan *fused = NULL, *unfused = NULL;
    for (int i = 0; i < l.nplans; i++) {
        if (!strcmp(l.plans[i]->variant, "fused")) fused = l.plans[i];
        if (!strcmp(l.plans[i]->variant, "unfused")) unfused = l.plans[i];
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(fused);
    CU_ASSERT_PTR_NOT_NULL_FATAL(unfused);
    CU_ASSERT_FALSE(fused->has_cpu_reference);
    const gr_plan *ref = NULL;
    gr_plan *owned = NULL;
    CU_ASSERT_EQUAL(gr_pipe_reference_plan(fused, (const gr_plan *const *)l.plans, l.nplans, l.wl, &t,
                                           &ref, &owned, &e), GR_OK);
    CU_ASSERT_PTR_EQUAL(ref, unfused);
    CU_ASSERT_PTR_NULL(owned);
    /* not among the plans (--variant fused): resolved from the workload */
    CU_ASSERT_EQUAL(gr_pipe_reference_plan(fused, &fused, 1, l.wl, &t, &ref, &owned, &e), GR_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(owned);
    CU_ASSERT_PTR_EQUAL(ref, owned);
    CU_ASSERT_STRING_EQUAL(owned->variant, "unfused");
    gr_plan_destroy(owned);
    /* the reference itself has none */
    CU_ASSERT_EQUAL(gr_pipe_reference_plan(unfused, (const gr_plan *const *)l.plans, l.nplans, l.wl, &t,
                                           &ref, &owned, &e), GR_OK);
    CU_ASSERT_PTR_NULL(ref);
    /* the report */
    gr_run_report *r = gr_run_report_create(l.wl, NULL, NULL);
    gr_run_report_add(r, fused);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    gr_report_text(f, r);
    fclose(f);
    GR_ASSERT_CONTAINS(text, "verified against: ");
    GR_ASSERT_CONTAINS(text, "unfused");
    GR_ASSERT_CONTAINS(text, "against its reference (per variant below)");
    free(text);
    json_t *j = gr_report_json(r);
    json_t *refj = json_object_get(json_array_get(json_object_get(j, "variants"), 0), "reference");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(refj, "kind")), "variant");
    json_decref(j);
    r->opts.cpu_reference = 0;
    j = gr_report_json(r);
    refj = json_object_get(json_array_get(json_object_get(j, "variants"), 0), "reference");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(refj, "kind")), "none");
    json_decref(j);
    gr_run_report_destroy(r);
    gr_loaded_free(&l);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", cache);
    CU_ASSERT_EQUAL(system(cmd), 0);
}

/* --json - puts the JSON document alone on stdout (text to stderr), for every command: kernels,
 * validate, and run (here without a device: the plan goes to stderr, stdout stays empty) */
static void test_json_stdout_only(void) {
    static char out[1 << 20];
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' kernels --json - 2>/dev/null", gr_test_bin("graphrun"));
    CU_ASSERT_EQUAL(gr_test_popen(NULL, cmd, out, sizeof(out)), 0);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_TRUE(json_array_size(json_object_get(j, "kernels")) > 10);
    json_t *k0 = json_array_get(json_object_get(j, "kernels"), 0);
    CU_ASSERT_PTR_NOT_NULL(json_object_get(k0, "attrs"));
    json_decref(j);
    snprintf(cmd, sizeof(cmd), "'%s' kernels add relu --json - 2>/dev/null", gr_test_bin("graphrun"));
    CU_ASSERT_EQUAL(gr_test_popen(NULL, cmd, out, sizeof(out)), 0);
    j = json_loads(out, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(j, "kernels")), 2);
    json_decref(j);
    snprintf(cmd, sizeof(cmd), "'%s' validate workloads/launch_bound.json --set K=10 --json - 2>/dev/null",
             gr_test_bin("graphrun"));
    int rc = gr_test_popen(NULL, cmd, out, sizeof(out));
    if (rc) fprintf(stderr, "\n    rc %d: %.300s", rc, out);
    CU_ASSERT_EQUAL(rc, 0);
    j = json_loads(out, 0, &je);
    CU_ASSERT_PTR_NOT_NULL(j);
    json_decref(j);
    if (gr_test_have_gpu()) return; /* with a device run writes its report; gpu suites check it */
    snprintf(cmd, sizeof(cmd), "'%s' run workloads/launch_bound.json --json - 2>/dev/null",
             gr_test_bin("graphrun"));
    CU_ASSERT_EQUAL(gr_test_popen(NULL, cmd, out, sizeof(out)), 3);
    CU_ASSERT_STRING_EQUAL(out, "");
    CU_ASSERT_EQUAL(gr_test_graphrun("kernels --json", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "option --json needs a value");
}

/* graphrun run --trace's report predicts each variant's graph from its traced eager region and
 * sets it against the untraced graph step (a recorded graphrun trace stands in for the run) */
static void test_trace_prediction(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_trace_result *tr = calloc(1, sizeof(*tr));
    CU_ASSERT_PTR_NOT_NULL_FATAL(tr);
    CU_ASSERT_EQUAL_FATAL(gr_trace_load(gr_test_src("tests/data/pointwise_fusion_n4096.jsonl"), 0, &tr->trace, &e),
                          GR_OK);
    gr_ls_opts lo;
    gr_ls_opts_default(&lo);
    CU_ASSERT_EQUAL_FATAL(gr_ls_analyze(tr->trace, &lo, &tr->analysis, &e), GR_OK);
    gr_pred_opts po;
    gr_pred_opts_default(&po);
    CU_ASSERT_EQUAL_FATAL(gr_pred_run(tr->analysis, &po, &tr->prediction, &e), GR_OK);
    snprintf(tr->path, sizeof(tr->path), "pointwise.jsonl");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    gr_trace_print(f, tr);
    fclose(f);
    GR_ASSERT_CONTAINS(text, "graph prediction (from the eager trace");
    GR_ASSERT_CONTAINS(text, "graph step, predicted");
    GR_ASSERT_CONTAINS(text, "untraced (unfused graph)");
    free(text);
    json_t *j = gr_trace_json(tr);
    CU_ASSERT_PTR_NOT_NULL(json_object_get(j, "prediction"));
    json_decref(j);
    gr_trace_result_free(tr);
    free(tr);
}

static CU_TestInfo pipeline_tests[] = {
    {"run --trace predicts each variant's graph", test_trace_prediction},
    {"--json - writes only JSON to stdout", test_json_stdout_only},
    {"user kernels: the reference variant, and the report's line", test_user_reference},
    {"stages in order; the first error stops the list", test_order_and_error},
    {"before hook skips, after hook fails a stage", test_hooks},
    {"built-in stages' conditions and the commands' lists", test_builtin_conditions},
    {"report: stages in JSON, variants on the heap", test_report_stages},
    {"service capture request: pdl, unroll, input, capture_check", test_request_fields},
    {"graphrun capture / tp: the new options checked locally", test_capture_flags},
    {"PDL by default where the GPU has it; --no-pdl; the report says which", test_pdl_default},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_pipeline_suites[] = {{"pipeline", pipeline_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_pipeline_suites)
