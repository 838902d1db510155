/* Core suites: errors, expressions, dtypes, stats, the workload loader and plan resolution.
 * Every error message a user can hit from a workload file is triggered here and checked to
 * name its place. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "core/expr.h"
#include "core/stats.h"
#include "core/workload.h"
#include "kernels/registry.h"
#include "replay/load.h"
#include "tests.h"

/* ---------- errors ---------- */

static void test_error_accumulates(void) {
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_FALSE(gr_error_failed(&e));
    gr_error_set(&e, GR_ERR_INPUT, "ops[1]", "first %d", 1);
    gr_error_set(&e, GR_ERR_CUDA, "ops[2]", "second");
    CU_ASSERT_EQUAL(e.code, GR_ERR_INPUT);
    CU_ASSERT_EQUAL(e.count, 2);
    CU_ASSERT_STRING_EQUAL(e.path, "ops[1]");
    CU_ASSERT_STRING_EQUAL(e.msg, "ops[1]: first 1\nops[2]: second");
    gr_error_prefix(&e, "w.json: ");
    CU_ASSERT_STRING_EQUAL(e.msg, "w.json: ops[1]: first 1\nw.json: ops[2]: second");
}

static void test_error_at_and_codes(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_error_at(&e, GR_ERR_INPUT, "x.json", 3, 14, "invalid JSON: %s", "boom");
    CU_ASSERT_STRING_EQUAL(e.msg, "x.json:3:14: invalid JSON: boom");
    CU_ASSERT_EQUAL(e.line, 3);
    CU_ASSERT_EQUAL(gr_exit_code(GR_OK), 0);
    CU_ASSERT_EQUAL(gr_exit_code(GR_ERR_INPUT), 2);
    CU_ASSERT_EQUAL(gr_exit_code(GR_ERR_USAGE), 2);
    CU_ASSERT_EQUAL(gr_exit_code(GR_ERR_IO), 2);
    CU_ASSERT_EQUAL(gr_exit_code(GR_ERR_NODEV), 3);
    CU_ASSERT_EQUAL(gr_exit_code(GR_ERR_VERIFY), 1);
    CU_ASSERT_EQUAL(gr_exit_code(GR_ERR_CUDA), 1);
    CU_ASSERT_EQUAL(gr_exit_code(GR_ERR_PROTOCOL), 2);
}

static void test_error_overflow_truncates(void) {
    gr_error e;
    gr_error_clear(&e);
    for (int i = 0; i < 500; i++) gr_error_set(&e, GR_ERR_INPUT, "p", "problem number %d with a long text to fill the buffer quickly", i);
    CU_ASSERT_EQUAL(e.count, 500);
    CU_ASSERT_TRUE(e.truncated);
    CU_ASSERT_TRUE(strlen(e.msg) < sizeof(e.msg));
}

/* ---------- expressions ---------- */

static int test_lookup(void *ctx, const char *name, double *out, gr_error *err) {
    (void)ctx, (void)err;
    if (!strcmp(name, "d")) {
        *out = 2048;
        return 1;
    }
    if (!strcmp(name, "r")) {
        *out = 16;
        return 1;
    }
    return 0;
}

static double ev(const char *s) {
    gr_error e;
    gr_error_clear(&e);
    double v = NAN;
    if (gr_expr_eval(s, test_lookup, NULL, "x", NULL, &v, &e) != GR_OK) return NAN;
    return v;
}

static const char *ev_err(const char *s) {
    static gr_error e;
    gr_error_clear(&e);
    double v;
    gr_expr_eval(s, test_lookup, NULL, "shape[0]", "(params: d, r)", &v, &e);
    return e.msg;
}

static void test_expr_arithmetic(void) {
    CU_ASSERT_DOUBLE_EQUAL(ev("4*d"), 8192, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("1 + 2 * 3"), 7, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("(1 + 2) * 3"), 9, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("2**10"), 1024, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("-2**2"), -4, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("7 // 2"), 3, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("7 / 2"), 3.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("7 % 4"), 3, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("2*r/r"), 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("cdiv(d, 3)"), 683, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("min(d, r) + max(1, 2)"), 18, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("sqrt(16) + floor(2.5) + ceil(2.1)"), 9, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("1e3"), 1000, 0);
    CU_ASSERT_DOUBLE_EQUAL(ev("  d  "), 2048, 0);
}

static void test_expr_errors(void) {
    GR_ASSERT_CONTAINS(ev_err("4*dd"), "shape[0]: expression \"4*dd\": unknown name \"dd\" (params: d, r)");
    GR_ASSERT_CONTAINS(ev_err("d/0"), "division by zero");
    GR_ASSERT_CONTAINS(ev_err("d %% 0"), "unexpected character");
    GR_ASSERT_CONTAINS(ev_err("d % 0"), "modulo by zero");
    GR_ASSERT_CONTAINS(ev_err("(d"), "expected ')'");
    GR_ASSERT_CONTAINS(ev_err("d d"), "unexpected 'd' after the expression");
    GR_ASSERT_CONTAINS(ev_err("foo(1)"), "unknown function \"foo\"");
    GR_ASSERT_CONTAINS(ev_err("min(1)"), "min() takes 2 arguments");
    GR_ASSERT_CONTAINS(ev_err(""), "unexpected end of expression");
    GR_ASSERT_CONTAINS(ev_err("10**400"), "not a finite number");
    GR_ASSERT_CONTAINS(ev_err("sqrt(-1)"), "sqrt of a negative number");
    char deep[300];
    memset(deep, '(', 200);
    deep[200] = '1';
    memset(deep + 201, ')', 90);
    deep[291] = '\0';
    GR_ASSERT_CONTAINS(ev_err(deep), "nested too deeply");
    char longexpr[2000];
    memset(longexpr, '1', sizeof(longexpr) - 1);
    longexpr[sizeof(longexpr) - 1] = '\0';
    GR_ASSERT_CONTAINS(ev_err(longexpr), "longer than");
}

static void test_parse_number(void) {
    double v;
    CU_ASSERT_TRUE(gr_parse_number("4096", &v));
    CU_ASSERT_DOUBLE_EQUAL(v, 4096, 0);
    CU_ASSERT_TRUE(gr_parse_number("1e8", &v));
    CU_ASSERT_TRUE(gr_parse_number("-0.5", &v));
    CU_ASSERT_FALSE(gr_parse_number("relu", &v));
    CU_ASSERT_FALSE(gr_parse_number("4*d", &v));
    CU_ASSERT_FALSE(gr_parse_number("nan", &v));
    CU_ASSERT_FALSE(gr_parse_number("inf", &v));
    CU_ASSERT_FALSE(gr_parse_number("0x10", &v));
    CU_ASSERT_FALSE(gr_parse_number("", &v));
}

/* ---------- dtypes ---------- */

static void test_bf16_conversion(void) {
    CU_ASSERT_EQUAL(gr_f32_to_bf16(1.0f), 0x3f80);
    CU_ASSERT_EQUAL(gr_f32_to_bf16(-2.0f), 0xc000);
    CU_ASSERT_EQUAL(gr_bf16_to_f32(0x3f80), 1.0f);
    /* 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125: ties to even -> 1.0 */
    CU_ASSERT_EQUAL(gr_f32_to_bf16(1.00390625f), 0x3f80);
    /* 1 + 3*2^-8 is halfway between 1.0078125 (odd) and 1.015625: -> 1.015625 */
    CU_ASSERT_EQUAL(gr_f32_to_bf16(1.01171875f), 0x3f82);
    CU_ASSERT_TRUE(isnan(gr_bf16_to_f32(gr_f32_to_bf16(NAN))));
    CU_ASSERT_TRUE(isinf(gr_bf16_to_f32(gr_f32_to_bf16(INFINITY))));
    for (int i = -1000; i < 1000; i++) {
        float f = (float)i * 0.37f;
        float r = gr_bf16_to_f32(gr_f32_to_bf16(f));
        CU_ASSERT_TRUE(fabsf(r - f) <= fabsf(f) * (1.0f / 256.0f) + 1e-30f);
    }
}

static void test_fp16_conversion(void) {
    CU_ASSERT_EQUAL(gr_f32_to_f16(1.0f), 0x3c00);
    CU_ASSERT_EQUAL(gr_f32_to_f16(-2.0f), 0xc000);
    CU_ASSERT_EQUAL(gr_f32_to_f16(65504.0f), 0x7bff);
    CU_ASSERT_EQUAL(gr_f32_to_f16(65520.0f), 0x7c00); /* rounds to inf */
    CU_ASSERT_EQUAL(gr_f32_to_f16(5.9604644775390625e-08f), 0x0001); /* smallest subnormal */
    CU_ASSERT_EQUAL(gr_f32_to_f16(2.98023223876953125e-08f), 0x0000); /* half of it: ties to even */
    CU_ASSERT_EQUAL(gr_f32_to_f16(6.103515625e-05f), 0x0400); /* smallest normal */
    CU_ASSERT_EQUAL(gr_f16_to_f32(0x3c00), 1.0f);
    CU_ASSERT_EQUAL(gr_f16_to_f32(0x0001), 5.9604644775390625e-08f);
    CU_ASSERT_TRUE(isnan(gr_f16_to_f32(gr_f32_to_f16(NAN))));
    for (int i = 0; i < 0x7c00; i += 7) {
        uint16_t h = (uint16_t)i;
        CU_ASSERT_EQUAL(gr_f32_to_f16(gr_f16_to_f32(h)), h);
    }
}

static void test_dtype_names(void) {
    CU_ASSERT_EQUAL(gr_dtype_parse("fp32"), GR_FP32);
    CU_ASSERT_EQUAL(gr_dtype_parse("bfloat16"), GR_BF16);
    CU_ASSERT_EQUAL(gr_dtype_parse("int64"), GR_INT64);
    CU_ASSERT_EQUAL(gr_dtype_parse("float64"), GR_DTYPE_INVALID);
    CU_ASSERT_EQUAL(gr_dtype_size(GR_BF16), 2);
    CU_ASSERT_EQUAL(gr_dtype_size(GR_INT64), 8);
    CU_ASSERT_STRING_EQUAL(gr_dtype_name(GR_FP16), "fp16");
    int32_t iv[2];
    gr_store(iv, GR_INT32, 1, 42.0);
    CU_ASSERT_EQUAL(gr_load(iv, GR_INT32, 1), 42.0);
}

/* ---------- stats ---------- */

static void test_stats(void) {
    double v[] = {5, 1, 4, 2, 3};
    gr_summary s = gr_summarize(v, 5);
    CU_ASSERT_DOUBLE_EQUAL(s.median, 3, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.min, 1, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.max, 5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.mean, 3, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.p10, 1.4, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.p90, 4.6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(s.stddev, sqrt(2.5), 1e-12);
    double w[] = {2, 4};
    s = gr_summarize(w, 2);
    CU_ASSERT_DOUBLE_EQUAL(s.median, 3, 1e-12);
    s = gr_summarize(NULL, 0);
    CU_ASSERT_EQUAL(s.n, 0);
    double one[] = {7};
    s = gr_summarize(one, 1);
    CU_ASSERT_DOUBLE_EQUAL(s.p90, 7, 0);
    CU_ASSERT_DOUBLE_EQUAL(s.stddev, 0, 0);
}

/* ---------- loader ---------- */

#define MINIMAL_BUFFERS                                                                            \
    "\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [\"n\"], \"init\": \"normal\"}," \
    "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [\"n\"]}], \"outputs\": [\"y\"]"
#define MINIMAL_OPS "\"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"y\"]}]"

static const char *load_err(const char *json) {
    static gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = gr_test_load(json, &e);
    if (wl) {
        gr_workload_destroy(wl);
        return "(no error)";
    }
    return e.msg;
}

static void test_loader_syntax_error_position(void) {
    const char *m = load_err("{\n  \"name\": \"x\",\n  \"buffers\": [,]\n}");
    GR_ASSERT_CONTAINS(m, "test.json:3:");
    GR_ASSERT_CONTAINS(m, "invalid JSON");
    GR_ASSERT_CONTAINS(load_err(""), "invalid JSON");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"a\", \"name\": \"b\"}"), "duplicate");
}

static void test_loader_top_level(void) {
    GR_ASSERT_CONTAINS(load_err("[1, 2]"), "(top level): expected an object");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"bufers\": []}"), "(top level)");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"buffers\": [], \"extra\": 1, \"ops\": []}"),
                       "allowed keys");
    GR_ASSERT_CONTAINS(load_err("{\"buffers\": [], \"ops\": []}"), "name");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"buffers\": [], \"outputs\": []}"),
                       "needs \"ops\"");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"buffers\": [], \"ops\": [], \"variants\": {\"a\": {\"ops\": []}}}"),
                       "has both \"ops\" and \"variants\"");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"buffers\": {}, \"ops\": []}"),
                       "buffers: expected an array");
    GR_ASSERT_CONTAINS(load_err("{\"schema_version\": 2, \"name\": \"x\", \"buffers\": [], \"ops\": []}"),
                       "schema_version: this graphrun reads schema_version 1");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"buffers\": [], \"variants\": {}}"),
                       "variants: expected a non-empty object");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"buffers\": [], \"variants\": {\"a\": {\"ops\": []}}, \"default_variant\": \"b\"}"),
                       "default_variant: \"b\" is not one of the variants");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"buffers\": [], \"ops\": [], \"outputs\": 3}"),
                       "outputs: expected an array");
}

static void test_loader_params(void) {
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"buffers\": [], \"ops\": [], \"params\": [1]}"),
                       "params: expected an object");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"buffers\": [], \"ops\": [], \"params\": {\"9x\": 1}}"),
                       "params.9x: a param name must be an identifier");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"buffers\": [], \"ops\": [], \"params\": {\"n\": [1]}}"),
                       "params.n: expected a number or a string");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"buffers\": [], \"ops\": [], \"params\": {\"n\": {\"dflt\": 1}}}"),
                       "params.n:");
    GR_ASSERT_CONTAINS(load_err("{\"name\": \"x\", \"buffers\": [], \"ops\": [], \"params\": {\"n\": {\"default\": 1, \"choices\": 3}}}"),
                       "choices: expected an array");
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = gr_test_load("{\"name\": \"x\", \"buffers\": [], \"ops\": [], \"params\": "
                                   "{\"n\": {\"default\": 4, \"help\": \"elements\", \"min\": 1}, "
                                   "\"act\": \"relu\", \"f\": \"4*n\"}}",
                                   &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wl);
    CU_ASSERT_EQUAL(wl->nparams, 3);
    const gr_param *n = gr_workload_param(wl, "n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(n);
    CU_ASSERT_EQUAL(n->num, 4);
    CU_ASSERT_STRING_EQUAL(n->help, "elements");
    CU_ASSERT_TRUE(gr_workload_param(wl, "act")->is_str);
    CU_ASSERT_EQUAL(gr_workload_set(wl, "n=4096", &e), GR_OK);
    CU_ASSERT_EQUAL(gr_workload_param(wl, "n")->num, 4096);
    CU_ASSERT_EQUAL(gr_workload_set(wl, "act=gelu", &e), GR_OK);
    CU_ASSERT_STRING_EQUAL(gr_workload_param(wl, "act")->str, "gelu");
    CU_ASSERT_EQUAL(gr_workload_set(wl, "nn=3", &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg, "--set nn=3: unknown param \"nn\" (params of x: n, act, f)");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_workload_set(wl, "n", &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg, "expected name=value");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_workload_set(wl, "n=", &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg, "empty value");
    gr_workload_destroy(wl);
}

static void test_loader_file_errors(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    CU_ASSERT_EQUAL(gr_workload_load_file("/nonexistent/w.json", &wl, &e), GR_ERR_IO);
    GR_ASSERT_CONTAINS(e.msg, "/nonexistent/w.json: cannot open the workload file");
    CU_ASSERT_PTR_NULL(wl);
    gr_error_clear(&e);
    const char *p = gr_test_tmpfile(".json", "{\"name\": 1}", 11);
    CU_ASSERT_NOT_EQUAL(gr_workload_load_file(p, &wl, &e), GR_OK);
    GR_ASSERT_CONTAINS(e.msg, p);
}

static void test_variant_selection(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_workload_load_file(gr_test_src("workloads/pointwise_fusion.json"), &wl, &e), GR_OK);
    CU_ASSERT_EQUAL(wl->nvariants, 3);
    CU_ASSERT_STRING_EQUAL(gr_workload_variant(wl, NULL, &e), "fused_vec");
    CU_ASSERT_STRING_EQUAL(gr_workload_variant(wl, "unfused", &e), "unfused");
    CU_ASSERT_PTR_NULL(gr_workload_variant(wl, "fusd", &e));
    GR_ASSERT_CONTAINS(e.msg, "--variant: pointwise_fusion has no variant \"fusd\" (variants: unfused, fused, fused_vec)");
    gr_workload_destroy(wl);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_workload_load_file(gr_test_src("workloads/launch_bound.json"), &wl, &e), GR_OK);
    CU_ASSERT_STRING_EQUAL(gr_workload_variant(wl, NULL, &e), "tiny");
    gr_workload_destroy(wl);
    gr_error_clear(&e);
    wl = gr_test_load("{\"name\": \"one\", \"buffers\": [], \"outputs\": [], \"ops\": []}", &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wl);
    CU_ASSERT_STRING_EQUAL(gr_workload_variant(wl, NULL, &e), "default");
    CU_ASSERT_PTR_NULL(gr_workload_variant(wl, "fused", &e));
    GR_ASSERT_CONTAINS(e.msg, "has no variants");
    gr_workload_destroy(wl);
}

/* ---------- resolve ---------- */

#define WL(body) "{\"name\": \"t\", \"params\": {\"n\": 8}, " body "}"

static void test_resolve_minimal(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(WL(MINIMAL_BUFFERS ", " MINIMAL_OPS), NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->nbufs, 2);
    CU_ASSERT_EQUAL(p->nops, 1);
    CU_ASSERT_EQUAL(p->bufs[0].numel, 8);
    CU_ASSERT_TRUE(p->bufs[1].is_output);
    CU_ASSERT_STRING_EQUAL(p->ops[0].name, "relu#0");
    CU_ASSERT_STRING_EQUAL(p->ops[0].path, "ops[0]");
    CU_ASSERT_EQUAL(p->kernels, 1);
    CU_ASSERT_DOUBLE_EQUAL(p->bytes_read, 32, 0);
    CU_ASSERT_DOUBLE_EQUAL(p->bytes_written, 32, 0);
    CU_ASSERT_STRING_EQUAL(p->params, "n=8");
    gr_plan_destroy(p);
}

static void test_resolve_repeat_and_templates(void) {
    const char *json =
        "{\"name\": \"t\", \"params\": {\"L\": 3, \"d\": 4, \"f\": \"2*d\"},"
        " \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [\"f\"], \"init\": \"normal\"},"
        "  {\"repeat\": \"L\", \"var\": \"i\", \"buffers\": ["
        "    {\"name\": \"w.{i}\", \"dtype\": \"fp32\", \"shape\": [\"f\"], \"init\": {\"kind\": \"uniform\", \"seed\": \"i+1\"}}]}],"
        " \"outputs\": [\"x\"],"
        " \"ops\": [{\"repeat\": \"L\", \"var\": \"i\", \"ops\": ["
        "    {\"name\": \"layer{i}.add\", \"kernel\": \"add\", \"inputs\": [\"x\", \"w.{i}\"], \"outputs\": [\"x\"]},"
        "    {\"repeat\": 2, \"var\": \"j\", \"ops\": ["
        "      {\"name\": \"l{i}.r{j}.{i*10+j}\", \"kernel\": \"relu\", \"inputs\": [\"x\"], \"outputs\": [\"x\"]}]}]}]}";
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(json, NULL, &e);
    if (!p) fprintf(stderr, "%s\n", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->nbufs, 4);
    CU_ASSERT_STRING_EQUAL(p->bufs[3].name, "w.2");
    CU_ASSERT_EQUAL(p->bufs[3].numel, 8);
    CU_ASSERT_NOT_EQUAL(p->bufs[1].init.seed, p->bufs[2].init.seed);
    CU_ASSERT_EQUAL(p->nops, 9);
    CU_ASSERT_STRING_EQUAL(p->ops[3].name, "layer1.add");
    CU_ASSERT_STRING_EQUAL(p->ops[5].name, "l1.r1.11");
    GR_ASSERT_CONTAINS(p->ops[5].path, "ops[0].ops[1].ops[0]{i=1,j=1}");
    CU_ASSERT_EQUAL(p->kernels, 9);
    CU_ASSERT_EQUAL(p->intermediates, 0);
    gr_plan_destroy(p);
}

static void test_resolve_buffer_errors(void) {
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp64\", \"shape\": [4]}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "buffers[0].dtype: unknown dtype \"fp64\" (dtypes: fp32, bf16, fp16, int32, int64)");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [0]}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "buffers[0].shape[0]: 0 is out of range");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [\"n/3\"]}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "buffers[0].shape[0]: expected a whole number, got 2.66667");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": []}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "buffers[0].shape: expected an array of 1 to 6 dimensions");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [\"m\"]}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "buffers[0].shape[0]: expression \"m\": unknown name \"m\" (params: n)");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"size\": 3}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "buffers[0]:");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4]}, {\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4]}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "buffers[1]: buffer \"a\" is already declared at buffers[0]");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [1048576, 1048576, 4]}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "more than 2^40 elements");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a{\", \"dtype\": \"fp32\", \"shape\": [4]}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "'{' without '}'");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"$dt\", \"shape\": [4]}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "buffers[0].dtype: \"$dt\": unknown param \"dt\"");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [3], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "buffers[0]: expected a buffer object");
}

static void test_resolve_init_errors(void) {
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": \"gaussian\"}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "buffers[0].init: unknown init kind \"gaussian\"");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": {\"kind\": \"normal\", \"low\": 1}}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "buffers[0].init.low: init kind \"normal\" takes mean, std, seed only");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": {\"kind\": \"randint\", \"low\": 0, \"high\": 5}}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "makes integers; the buffer is fp32");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"int32\", \"shape\": [4], \"init\": {\"kind\": \"zipf\", \"range\": 0}}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "zipf needs \"range\" >= 1");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": {\"kind\": \"uniform\", \"low\": 2, \"high\": 1}}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "uniform needs low <= high");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": {\"kind\": \"file\"}}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "init \"file\" needs \"path\"");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": {\"kind\": \"file\", \"path\": \"/nonexistent.bin\"}}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "file \"/nonexistent.bin\" not found");
    float data[3] = {1, 2, 3};
    const char *path = gr_test_tmpfile(".bin", data, sizeof(data));
    char json[1024];
    snprintf(json, sizeof(json), WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": {\"kind\": \"file\", \"path\": \"%s\"}}], \"outputs\": [\"a\"], \"ops\": []"), path);
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), "has 12 bytes; buffer \"a\" (fp32, 4 elements) needs exactly 16");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": 5}], \"outputs\": [\"a\"], \"ops\": []"), NULL),
                       "buffers[0].init: expected a kind");
}

static void test_resolve_op_errors(void) {
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"kernel\": \"rleu\", \"inputs\": [\"a\"], \"outputs\": [\"y\"]}]"), NULL),
                       "ops[0].kernel: unknown kernel \"rleu\" (did you mean \"relu\"? `graphrun kernels` lists them)");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"b\"], \"outputs\": [\"y\"]}]"), NULL),
                       "ops[0].inputs[0]: unknown buffer \"b\" (did you mean \"a\"?)");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"kernel\": \"add\", \"inputs\": [\"a\"], \"outputs\": [\"y\"]}]"), NULL),
                       "ops[0]: kernel \"add\" takes 2 inputs (a, b), got 1");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"y\"], \"attrs\": {\"act\": \"relu\"}}]"), NULL),
                       "ops[0].attrs: kernel \"relu\" has no attribute \"act\" (attributes: threads)");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"kernel\": \"act\", \"inputs\": [\"a\"], \"outputs\": [\"y\"]}]"), NULL),
                       "ops[0].attrs: kernel \"act\" needs attribute \"fn\"");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"kernel\": \"act\", \"inputs\": [\"a\"], \"outputs\": [\"y\"], \"attrs\": {\"fn\": \"tanh\"}}]"), NULL),
                       "ops[0].attrs.fn: \"tanh\" is not one of: relu, gelu, silu, none");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"kernel\": \"tiny\", \"inputs\": [\"a\"], \"outputs\": [\"y\"], \"attrs\": {\"c\": \"q\"}}]"), NULL),
                       "ops[0].attrs.c: expression \"q\": unknown name \"q\"");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"kernel\": \"relu\", \"input\": [\"a\"], \"outputs\": [\"y\"]}]"), NULL),
                       "ops[0]:");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"kernel\": \"relu\", \"inputs\": \"a\", \"outputs\": [\"y\"]}]"), NULL),
                       "ops[0].inputs: expected an array of buffer names");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [7]"), NULL), "ops[0]: expected an op object");
}

static void test_resolve_shape_dtype_mismatch(void) {
    const char *bufs = "\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [8], \"init\": \"normal\"},"
                       "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [2, 3], \"init\": \"normal\"},"
                       "{\"name\": \"h\", \"dtype\": \"bf16\", \"shape\": [8], \"init\": \"normal\"},"
                       "{\"name\": \"i\", \"dtype\": \"int32\", \"shape\": [8], \"init\": \"zeros\"},"
                       "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [8]}], \"outputs\": [\"y\"]";
    char json[2048];
    snprintf(json, sizeof(json), "{\"name\": \"t\", %s, \"ops\": [{\"kernel\": \"add\", \"inputs\": [\"a\", \"b\"], \"outputs\": [\"y\"]}]}", bufs);
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL),
                       "ops[0]: kernel \"add\": inputs[1] \"b\" has shape [2, 3] (6 elements) but inputs[0] \"a\" has [8] (8); elementwise operands must match");
    snprintf(json, sizeof(json), "{\"name\": \"t\", %s, \"ops\": [{\"kernel\": \"add\", \"inputs\": [\"a\", \"h\"], \"outputs\": [\"y\"]}]}", bufs);
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL),
                       "ops[0]: kernel \"add\": inputs[1] \"h\" is bf16 but inputs[0] \"a\" is fp32");
    snprintf(json, sizeof(json), "{\"name\": \"t\", %s, \"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"i\"], \"outputs\": [\"y\"]}]}", bufs);
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), "kernel \"relu\": inputs[0] \"i\" is int32; it takes fp32, bf16, fp16");
}

static void test_resolve_dataflow(void) {
    const char *json =
        WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": \"normal\"},"
           "{\"name\": \"t\", \"dtype\": \"fp32\", \"shape\": [4]}, {\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [4]}],"
           "\"outputs\": [\"y\"], \"ops\": [{\"kernel\": \"add\", \"inputs\": [\"a\", \"t\"], \"outputs\": [\"y\"]},"
           "{\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"t\"]}]");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL),
                       "ops[0]: reads buffer \"t\" before any op writes it, and it has no init");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"a\"]}]"), NULL),
                       "buffer \"y\" is listed as an output but no op of variant \"default\" writes it");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": \"ones\"}], \"outputs\": [\"q\"], " MINIMAL_OPS), NULL),
                       "outputs[0]: unknown buffer \"q\"");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": \"ones\"}], \"outputs\": [], \"ops\": []"), NULL),
                       "outputs: list at least one output buffer to verify");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": \"ones\"}], \"ops\": []"), NULL),
                       "outputs: missing");
}

static void test_resolve_streams(void) {
    const char *head = WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": \"normal\"},"
                          "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [4]}, {\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [4]}],"
                          "\"outputs\": [\"y\"], \"ops\": [%s]");
    char json[2048];
    snprintf(json, sizeof(json), head,
             "{\"fork\": \"side\"}, {\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"b\"], \"stream\": \"side\"},"
             "{\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"y\"]}, {\"join\": \"side\"},"
             "{\"kernel\": \"add\", \"inputs\": [\"y\", \"b\"], \"outputs\": [\"y\"]}");
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(json, NULL, &e);
    if (!p) fprintf(stderr, "%s\n", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->nstreams, 2);
    CU_ASSERT_EQUAL(p->nevents, 2);
    CU_ASSERT_EQUAL(p->ops[0].kind, GR_OP_FORK);
    CU_ASSERT_EQUAL(p->ops[1].stream, 1);
    CU_ASSERT_EQUAL(p->ops[3].kind, GR_OP_JOIN);
    CU_ASSERT_EQUAL(p->kernels, 3);
    gr_plan_destroy(p);

    snprintf(json, sizeof(json), head, "{\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"y\"], \"stream\": \"side\"}");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), "ops[0].stream: stream \"side\" is not forked here");
    snprintf(json, sizeof(json), head, "{\"fork\": \"side\"}, {\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"y\"], \"stream\": \"side\"}");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), "ops[0]: stream \"side\" is forked here but never joined back");
    snprintf(json, sizeof(json), head, "{\"join\": \"side\"}, {\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"y\"]}");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), "ops[0]: stream \"side\" was never forked");
    snprintf(json, sizeof(json), head, "{\"fork\": \"side\"}, {\"fork\": \"side\"}, {\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"y\"]}, {\"join\": \"side\"}");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), "ops[1]: stream \"side\" is already forked (at ops[0])");
    snprintf(json, sizeof(json), head, "{\"fork\": \"main\"}, {\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"y\"]}");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), "cannot fork stream \"main\"");
}

static void test_resolve_limits(void) {
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"repeat\": 100000, \"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"y\"]}]}]"), NULL),
                       "ops[0].repeat: 100000 is out of range");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"repeat\": 60000, \"ops\": [{\"repeat\": 60000, \"ops\": []}]}]"), NULL),
                       "repeat blocks expand to more than 1000000 iterations");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"repeat\": 2, \"ops\": 3}]"), NULL),
                       "ops[0].ops: expected an array, got an integer");
    GR_ASSERT_CONTAINS(gr_test_plan_error(WL(MINIMAL_BUFFERS ", \"ops\": [{\"repeat\": 2, \"var\": \"i\", \"ops\": [], \"x\": 1}]"), NULL),
                       "ops[0]: unknown key \"x\" in a repeat block of ops (allowed keys: repeat, var, ops, doc)");
    const char *cyc = "{\"name\": \"t\", \"params\": {\"p\": \"q+1\", \"q\": \"p*2\"}, \"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [\"p\"], \"init\": \"ones\"}], \"outputs\": [\"a\"], \"ops\": []}";
    GR_ASSERT_CONTAINS(gr_test_plan_error(cyc, NULL), "refers back to itself");
}

static void test_resolve_param_constraints(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_workload_load_file(gr_test_src("workloads/pointwise_fusion.json"), &wl, &e), GR_OK);
    gr_workload_set(wl, "act=tanh", &e);
    gr_workload_set(wl, "n=0", &e);
    gr_plan *p = NULL;
    gr_target t = gr_target_default();
    CU_ASSERT_EQUAL(gr_plan_resolve(wl, "fused", &t, gr_kernel_find, gr_kernel_all_names, &p, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "--set params.act: \"tanh\" is not one of: relu, gelu, silu");
    GR_ASSERT_CONTAINS(e.msg, "--set params.n: 0 is outside [1, inf]");
    gr_workload_destroy(wl);
}

/* A bad --set is reported once, not once per variant: gr_workload_check_params checks the params
 * alone (OK for the bundled defaults), and the loader calls it before resolving the variants
 * (pointwise_fusion has several; each would have repeated the message). */
static void test_param_errors_once(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    CU_ASSERT_EQUAL_FATAL(
        gr_workload_load_file(gr_test_src("workloads/pointwise_fusion.json"), &wl, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_workload_check_params(wl, &e), GR_OK);
    CU_ASSERT_EQUAL(e.count, 0);
    gr_workload_set(wl, "act=tanh", &e);
    CU_ASSERT_EQUAL(gr_workload_check_params(wl, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "--set params.act: \"tanh\" is not one of: relu, gelu, silu");
    CU_ASSERT_EQUAL(e.count, 1);
    CU_ASSERT_TRUE(wl->nvariants >= 3);
    gr_workload_destroy(wl);

    const char *sets[] = {"act=tanh", "n=0"};
    gr_load_req req;
    memset(&req, 0, sizeof(req));
    req.path = gr_test_src("workloads/pointwise_fusion.json");
    req.sets = sets;
    req.nsets = 2;
    gr_target t = gr_target_default();
    gr_loaded l;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_load_resolve(&req, &t, &l, &e), GR_ERR_INPUT);
    CU_ASSERT_EQUAL(l.nplans, 0);
    CU_ASSERT_EQUAL(e.count, 2);
    const char *first = strstr(e.msg, "is not one of");
    CU_ASSERT_PTR_NOT_NULL(first);
    if (first) CU_ASSERT_PTR_NULL(strstr(first + 1, "is not one of"));
    GR_ASSERT_CONTAINS(e.msg, "--set params.n: 0 is outside [1, inf]");
    GR_ASSERT_CONTAINS(e.msg, "pointwise_fusion.json: ");
    gr_loaded_free(&l);
}

static void test_resolve_outputs_rtol(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(WL("\"buffers\": [{\"name\": \"a\", \"dtype\": \"bf16\", \"shape\": [4], \"init\": \"normal\"},"
                                 "{\"name\": \"y\", \"dtype\": \"bf16\", \"shape\": [4]}], \"outputs\": [{\"buffer\": \"y\", \"rtol\": 0.05}], " MINIMAL_OPS),
                              NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_DOUBLE_EQUAL(p->bufs[1].rtol, 0.05, 0);
    gr_plan_destroy(p);
    p = gr_test_plan(WL(MINIMAL_BUFFERS ", " MINIMAL_OPS), NULL, &e);
    CU_ASSERT_DOUBLE_EQUAL(p->bufs[1].rtol, 1e-5, 0);
    gr_plan_destroy(p);
}

static CU_TestInfo errors_tests[] = {{"accumulates", test_error_accumulates},
                                     {"position and exit codes", test_error_at_and_codes},
                                     {"overflow truncates", test_error_overflow_truncates},
                                     CU_TEST_INFO_NULL};
static CU_TestInfo expr_tests[] = {{"arithmetic", test_expr_arithmetic},
                                   {"errors name the place", test_expr_errors},
                                   {"parse_number", test_parse_number},
                                   CU_TEST_INFO_NULL};
static CU_TestInfo dtype_tests[] = {{"bf16", test_bf16_conversion},
                                    {"fp16", test_fp16_conversion},
                                    {"names and access", test_dtype_names},
                                    CU_TEST_INFO_NULL};
static CU_TestInfo stats_tests[] = {{"summary", test_stats}, CU_TEST_INFO_NULL};
static CU_TestInfo loader_tests[] = {{"syntax error position", test_loader_syntax_error_position},
                                     {"top level schema", test_loader_top_level},
                                     {"params and --set", test_loader_params},
                                     {"file errors", test_loader_file_errors},
                                     {"variant selection", test_variant_selection},
                                     CU_TEST_INFO_NULL};
static CU_TestInfo resolve_tests[] = {
    {"minimal", test_resolve_minimal},
    {"repeat and templates", test_resolve_repeat_and_templates},
    {"buffer errors", test_resolve_buffer_errors},
    {"init errors", test_resolve_init_errors},
    {"op errors", test_resolve_op_errors},
    {"shape and dtype mismatch", test_resolve_shape_dtype_mismatch},
    {"dataflow", test_resolve_dataflow},
    {"streams", test_resolve_streams},
    {"limits", test_resolve_limits},
    {"param constraints", test_resolve_param_constraints},
    {"param errors once, not per variant", test_param_errors_once},
    {"outputs rtol", test_resolve_outputs_rtol},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_core_suites[] = {{"errors", errors_tests, 0},   {"expr", expr_tests, 0},
                                 {"dtype", dtype_tests, 0},     {"stats", stats_tests, 0},
                                 {"loader", loader_tests, 0},   {"resolve", resolve_tests, 0},
                                 {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_core_suites)

static void test_resolve_templates_in_expressions(void) {
    const char *json =
        "{\"name\": \"t\", \"params\": {\"card_0\": 5, \"card_1\": 500, \"cap\": 100},"
        " \"buffers\": [{\"repeat\": 2, \"var\": \"t\", \"buffers\": ["
        "   {\"name\": \"idx.{t}\", \"dtype\": \"int32\", \"shape\": [\"min(card_{t}, cap)\"],"
        "    \"init\": {\"kind\": \"zipf\", \"range\": \"min(card_{t}, cap)\"}}]}],"
        " \"outputs\": [\"idx.0\"], \"ops\": []}";
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = gr_test_load(json, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wl);
    /* outputs must be written: resolution fails on that, but the buffers resolve first */
    gr_plan *p = NULL;
    gr_target t = gr_target_default();
    gr_plan_resolve(wl, "default", &t, gr_kernel_find, gr_kernel_all_names, &p, &e);
    GR_ASSERT_CONTAINS(e.msg, "buffer \"idx.0\" is listed as an output but no op");
    CU_ASSERT_PTR_NULL(strstr(e.msg, "unknown name"));
    gr_workload_destroy(wl);
    json = "{\"name\": \"t\", \"params\": {\"card_0\": 5, \"cap\": 100},"
           " \"buffers\": [{\"repeat\": 2, \"var\": \"t\", \"buffers\": ["
           "   {\"name\": \"idx.{t}\", \"dtype\": \"int32\", \"shape\": [\"min(card_{t}, cap)\"]}]}],"
           " \"outputs\": [\"idx.0\"], \"ops\": []}";
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), "buffers[0].buffers[0]{t=1}.shape[0]: expression \"min(card_1, cap)\": unknown name \"card_1\"");
}

static CU_TestInfo template_expr_tests[] = {{"templates in expressions", test_resolve_templates_in_expressions}, CU_TEST_INFO_NULL};
static gr_suite_def gr_template_suites[] = {{"resolve_templates", template_expr_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_template_suites)
