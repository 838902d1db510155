/* Verification: gr_compare's bounds (relative L2 and element-wise), NaN never agreeing, the
 * derived tolerances of outputs and their JSON errors, decode_step outputs with a few corrupted
 * elements failing, and what the run report says about its checks (docs/verification.md). */
#define _GNU_SOURCE /* open_memstream, setenv */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hoststate.h"
#include "core/plan_print.h"
#include "core/workload.h"
#include "kernels/registry.h"
#include "replay/knobs.h"
#include "replay/run.h"
#include "replay/session.h"
#include "replay/verify.h"
#include "tests.h"

/* ---------- gr_compare ---------- */

static void fill_normal(float *v, int n, unsigned seed) {
    srand(seed);
    for (int i = 0; i < n; i += 2) { /* Box-Muller */
        double u1 = (rand() + 1.0) / (RAND_MAX + 2.0), u2 = (rand() + 1.0) / (RAND_MAX + 2.0);
        double r = sqrt(-2 * log(u1));
        v[i] = (float)(r * cos(2 * M_PI * u2));
        if (i + 1 < n) v[i + 1] = (float)(r * sin(2 * M_PI * u2));
    }
}

static void test_nan_never_agrees(void) {
    float a[4] = {1, 2, NAN, 4}, b[4] = {1, 2, NAN, 4};
    /* bitwise identical, NaN in both (poison neither eager nor graph wrote): fails */
    gr_check c = gr_compare("y", "graph vs eager", a, b, GR_FP32, 4, 1e-5);
    CU_ASSERT_TRUE(c.identical);
    CU_ASSERT_FALSE(c.passed);
    CU_ASSERT_EQUAL(c.nonfinite, 1);
    CU_ASSERT_EQUAL(c.first_bad, 2);
    char line[256];
    gr_check_str(&c, line, sizeof(line));
    GR_ASSERT_CONTAINS(line, "FAIL: 1 non-finite (first at [2]");
    /* Inf == Inf is no agreement either */
    a[2] = b[2] = INFINITY;
    c = gr_compare("y", "eager vs ref", a, b, GR_FP32, 4, 1e-5);
    CU_ASSERT_FALSE(c.passed);
    /* a NaN on the reference side only */
    a[2] = 3;
    b[2] = NAN;
    c = gr_compare("y", "eager vs ref", a, b, GR_FP32, 4, 0.5);
    CU_ASSERT_FALSE(c.passed);
    /* the same in bf16 (NaN bit patterns) */
    uint16_t h[3] = {gr_f32_to_bf16(1), gr_f32_to_bf16(NAN), gr_f32_to_bf16(2)};
    c = gr_compare("y", "graph vs eager", h, h, GR_BF16, 3, 1e-2);
    CU_ASSERT_FALSE(c.passed);
    /* finite and identical passes */
    b[2] = 3;
    c = gr_compare("y", "graph vs eager", a, b, GR_FP32, 4, 0);
    CU_ASSERT_TRUE(c.passed);
    CU_ASSERT_TRUE(c.identical);
    gr_check_str(&c, line, sizeof(line));
    CU_ASSERT_STRING_EQUAL(line, "identical");
}

/* A few wrong elements in a large buffer pass the L2 test and fail the element bound, which
 * names the worst of them. */
static void test_element_bound_names_worst(void) {
    enum { N = 100000 };
    float *ref = malloc(N * sizeof(float)), *out = malloc(N * sizeof(float));
    CU_ASSERT_PTR_NOT_NULL_FATAL(ref);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    fill_normal(ref, N, 11);
    for (int i = 0; i < N; i++) out[i] = ref[i] * (1 + 1e-6f * (float)((i % 7) - 3));
    gr_check c = gr_compare("y", "eager vs ref", out, ref, GR_FP32, N, 1e-2);
    CU_ASSERT_TRUE(c.passed);
    CU_ASSERT_FALSE(c.identical);
    CU_ASSERT_EQUAL(c.over, 0);
    static const int bad[5] = {17, 4242, 50000, 77777, 99998};
    for (int k = 0; k < 5; k++) out[bad[k]] = ref[bad[k]] + (k == 2 ? 0.9f : 0.5f);
    c = gr_compare("y", "eager vs ref", out, ref, GR_FP32, N, 1e-2);
    CU_ASSERT_TRUE(c.rel_l2 < 1e-2); /* L2 alone would have passed it */
    CU_ASSERT_FALSE(c.passed);
    CU_ASSERT_EQUAL(c.over, 5);
    CU_ASSERT_EQUAL(c.worst_index, 50000);
    CU_ASSERT_DOUBLE_EQUAL(c.worst_out, out[50000], 0);
    CU_ASSERT_DOUBLE_EQUAL(c.worst_ref, ref[50000], 0);
    char line[256];
    gr_check_str(&c, line, sizeof(line));
    GR_ASSERT_CONTAINS(line, "5 elements over");
    GR_ASSERT_CONTAINS(line, "worst [50000]");
    json_t *j = gr_check_json(&c);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(j, "worst"), "index")), 50000);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "over_bound")), 5);
    json_decref(j);
    free(ref);
    free(out);
}

/* The element bound's relative part covers one ulp of the final store in bf16, however small
 * atol is: a rounding that lands the other way is not a bug. */
static void test_element_bound_one_ulp(void) {
    uint16_t ref[2] = {gr_f32_to_bf16(100.0f), gr_f32_to_bf16(0.01f)};
    uint16_t out[2] = {(uint16_t)(ref[0] + 1), ref[1]};
    gr_tol t = {1, 0, 2 * gr_dtype_unit_roundoff(GR_BF16)};
    gr_check c = gr_compare_tol("y", "eager vs ref", out, ref, GR_BF16, 2, &t);
    CU_ASSERT_TRUE(c.passed);
    out[0] = (uint16_t)(ref[0] + 2);
    c = gr_compare_tol("y", "eager vs ref", out, ref, GR_BF16, 2, &t);
    CU_ASSERT_FALSE(c.passed);
}

/* ---------- the formula ---------- */

static void test_tolerance_formula(void) {
    double u32 = ldexp(1, -24), u16 = ldexp(1, -8);
    gr_tol t = gr_tol_derive(GR_FP32, 17 * 16, 16 * (2048 + 8192));
    CU_ASSERT_DOUBLE_EQUAL(t.rtol, GR_TOL_C * u32 * sqrt(17 * 16 + 16 * 10240.0), 1e-12);
    CU_ASSERT_TRUE(t.rtol > 1e-5 && t.rtol < 1.3e-5);
    CU_ASSERT_DOUBLE_EQUAL(t.atol, GR_TOL_ATOL_K * t.rtol, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(t.rtol_elem, t.rtol, 0);
    CU_ASSERT_DOUBLE_EQUAL(gr_tol_from_rtol(GR_FP32, 1e-8).rtol_elem, 2 * u32, 0); /* one ulp */
    t = gr_tol_derive(GR_BF16, 17 * 16, 16 * (2048 + 8192));
    CU_ASSERT_TRUE(t.rtol > 0.025 * 1.2 && t.rtol < 0.025 * 1.4); /* just above the measured 2.5% */
    CU_ASSERT_DOUBLE_EQUAL(t.rtol_elem, t.rtol, 0);
    CU_ASSERT_DOUBLE_EQUAL(gr_tol_from_rtol(GR_BF16, 1e-3).rtol_elem, 2 * u16, 0);
    t = gr_tol_derive(GR_INT32, 100, 100);
    CU_ASSERT_DOUBLE_EQUAL(t.rtol, 0, 0);
}

/* ---------- outputs entries ---------- */

#define TOL_WL(outputs)                                                                            \
    "{\"name\": \"t\", \"params\": {\"n\": 8, \"L\": 4}, \"buffers\": [{\"name\": \"a\", "       \
    "\"dtype\": \"bf16\", \"shape\": [\"n\"], \"init\": \"normal\"}, {\"name\": \"y\", \"dtype\": " \
    "\"bf16\", \"shape\": [\"n\"]}], \"outputs\": [" outputs "], \"ops\": [{\"kernel\": \"relu\", " \
    "\"inputs\": [\"a\"], \"outputs\": [\"y\"]}]}"

static void test_outputs_derived(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(TOL_WL("{\"buffer\": \"y\", \"roundings\": \"2*L\", \"depth\": \"L*n\"}"),
                              NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    const gr_buffer *y = &p->bufs[1];
    CU_ASSERT_EQUAL(y->tol_source, GR_TOL_DERIVED);
    CU_ASSERT_DOUBLE_EQUAL(y->rtol, gr_tol_derive(GR_BF16, 8, 32).rtol, 0);
    CU_ASSERT_DOUBLE_EQUAL(y->tol_roundings, 8, 0);
    CU_ASSERT_DOUBLE_EQUAL(y->tol_depth, 32, 0);
    gr_tol t = gr_buffer_tol(y);
    CU_ASSERT_DOUBLE_EQUAL(t.atol, GR_TOL_ATOL_K * y->rtol, 1e-15);
    gr_plan_destroy(p);
    p = gr_test_plan(TOL_WL("{\"buffer\": \"y\", \"rtol\": 0.02, \"atol\": 0.3, \"doc\": \"why\"}"), NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    t = gr_buffer_tol(&p->bufs[1]);
    CU_ASSERT_DOUBLE_EQUAL(t.rtol, 0.02, 0);
    CU_ASSERT_DOUBLE_EQUAL(t.atol, 0.3, 0);
    CU_ASSERT_EQUAL(p->bufs[1].tol_source, GR_TOL_EXPLICIT);
    gr_plan_destroy(p);
    /* rtol_elem_k multiplies the element-wise relative bound only (bf16: at least 2 u first) */
    p = gr_test_plan(TOL_WL("{\"buffer\": \"y\", \"depth\": \"n\", \"rtol_elem_k\": 6, "
                            "\"doc\": \"rows share their sum's error\"}"),
                     NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    t = gr_buffer_tol(&p->bufs[1]);
    gr_tol d = gr_tol_from_rtol(GR_BF16, p->bufs[1].rtol);
    CU_ASSERT_DOUBLE_EQUAL(t.rtol, d.rtol, 0);
    CU_ASSERT_DOUBLE_EQUAL(t.atol, d.atol, 0);
    CU_ASSERT_DOUBLE_EQUAL(t.rtol_elem, 6 * d.rtol_elem, 1e-15);
    CU_ASSERT(t.rtol_elem > t.rtol);
    gr_plan_destroy(p);
}

static void test_outputs_refused(void) {
    static const struct {
        const char *entry, *want;
    } cases[] = {
        {"{\"buffer\": \"y\", \"rtol\": -0.01}", "outputs[0].rtol: rtol -0.01 is refused"},
        {"{\"buffer\": \"y\", \"rtol\": 1}", "outputs[0].rtol: rtol 1 is refused"},
        {"{\"buffer\": \"y\", \"rtol\": \"sqrt(0-1)\"}", "outputs[0].rtol"},
        {"{\"buffer\": \"y\", \"atol\": 2}", "outputs[0].atol: atol 2 is refused"},
        {"{\"buffer\": \"y\", \"atol\": -1}", "outputs[0].atol: atol -1 is refused"},
        {"{\"buffer\": \"y\", \"depth\": 0}", "outputs[0].depth: depth 0 is refused"},
        {"{\"buffer\": \"y\", \"roundings\": \"L-5\"}", "outputs[0].roundings: roundings -1 is refused"},
        {"{\"buffer\": \"y\", \"rtol\": 0.1, \"depth\": 4}", "outputs[0]: give either \"rtol\""},
        {"{\"buffer\": \"y\", \"rtl\": 0.1}", "outputs[0]"},
        {"{\"buffer\": \"y\", \"rtol_elem_k\": 0.5, \"doc\": \"x\"}",
         "outputs[0].rtol_elem_k: rtol_elem_k 0.5 is refused"},
        {"{\"buffer\": \"y\", \"rtol_elem_k\": 4}", "outputs[0]: rtol_elem_k loosens"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[2048];
        snprintf(json, sizeof(json), TOL_WL("%s"), cases[i].entry);
        GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), cases[i].want);
    }
}

/* The rule "a tolerance may only be loosened with a measured reason written next to it", for the
 * bundled workloads: every explicit rtol or atol carries a doc, and no x of the decode workloads
 * is back at a fixed rtol. */
static int outputs_documented(json_t *outputs, const char *file, const char *where) {
    int bad = 0;
    size_t i;
    json_t *el;
    json_array_foreach(outputs, i, el) {
        if (!json_is_object(el)) continue;
        int expl = json_object_get(el, "rtol") || json_object_get(el, "atol") ||
                   json_object_get(el, "rtol_elem_k");
        const char *doc = json_string_value(json_object_get(el, "doc"));
        if (expl && (!doc || strlen(doc) < 20)) {
            fprintf(stderr, "\n    %s %s[%zu]: an explicit tolerance without its reason in \"doc\"",
                    file, where, i);
            bad++;
        }
    }
    return bad;
}

static void test_bundled_tolerances_documented(void) {
    static const char *files[] = {"decode_step.json", "decode_tp.json", "dlrm_small.json",
                                  "launch_bound.json", "pointwise_fusion.json",
                                  "capture_breakers.json"};
    int bad = 0;
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        char rel[96];
        snprintf(rel, sizeof(rel), "workloads/%s", files[f]);
        json_error_t je;
        json_t *j = json_load_file(gr_test_src(rel), 0, &je);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        bad += outputs_documented(json_object_get(j, "outputs"), files[f], "outputs");
        const char *name;
        json_t *v;
        json_object_foreach(json_object_get(j, "variants"), name, v) {
            char where[128];
            snprintf(where, sizeof(where), "variants.%s.outputs", name);
            bad += outputs_documented(json_object_get(v, "outputs"), files[f], where);
        }
        if (!strncmp(files[f], "decode", 6)) {
            json_t *x = json_array_get(json_object_get(j, "outputs"), 0);
            CU_ASSERT_PTR_NULL(json_object_get(x, "rtol"));
            CU_ASSERT_PTR_NOT_NULL(json_object_get(x, "depth"));
        }
        json_decref(j);
    }
    CU_ASSERT_EQUAL(bad, 0);
}

/* graphrun validate: exit 2 naming the path; the plan lists each output's tolerances */
static void test_validate_cli(void) {
    static char out[1 << 20];
    const char *bad = gr_test_tmpfile(".json", TOL_WL("{\"buffer\": \"y\", \"rtol\": -1}"),
                                      strlen(TOL_WL("{\"buffer\": \"y\", \"rtol\": -1}")));
    char args[600];
    snprintf(args, sizeof(args), "validate %s", bad);
    CU_ASSERT_EQUAL(gr_test_graphrun(args, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "outputs[0].rtol");
    CU_ASSERT_EQUAL(gr_test_graphrun("validate workloads/decode_step.json --variant fused --set dtype=fp32",
                                     out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "rtol 1.2");
    GR_ASSERT_CONTAINS(out, "derived: 0.5 sqrt(272 u_fp32^2 + 163840 u_fp32^2)");
    GR_ASSERT_CONTAINS(out, "re-seeded from its init before each run");
    CU_ASSERT_EQUAL(gr_test_graphrun("validate workloads/decode_step.json --variant fused --set L=16 "
                                     "--set d=512 --set f=3584 --json -", out, sizeof(out)), 0);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    json_t *plan = json_is_array(j) ? json_array_get(j, 0) : j;
    json_t *bufs = json_object_get(plan, "buffers");
    int found = 0;
    size_t i;
    json_t *b;
    json_array_foreach(bufs, i, b) {
        if (strcmp(json_string_value(json_object_get(b, "name")), "x") != 0) continue;
        found = 1;
        double rtol = json_real_value(json_object_get(b, "rtol"));
        /* bf16: 0.5 u sqrt(17 L) plus a negligible fp32 term: the depth, not d, decides */
        CU_ASSERT_TRUE(rtol > 0.03 && rtol < 0.034);
        CU_ASSERT_DOUBLE_EQUAL(json_real_value(json_object_get(b, "atol")), GR_TOL_ATOL_K * rtol, 1e-12);
    }
    CU_ASSERT_TRUE(found);
    json_decref(j);
}

/* ---------- decode_step: a few corrupted elements must fail ---------- */

static gr_plan *decode_plan(const char *variant, const char *dtype, int L, int d, int f) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(gr_test_src("workloads/decode_step.json"), &wl, &e) != GR_OK) {
        fprintf(stderr, "\n    %s", e.msg);
        return NULL;
    }
    char sets[5][32];
    snprintf(sets[0], sizeof(sets[0]), "dtype=%s", dtype);
    snprintf(sets[1], sizeof(sets[1]), "L=%d", L);
    snprintf(sets[2], sizeof(sets[2]), "d=%d", d);
    snprintf(sets[3], sizeof(sets[3]), "f=%d", f);
    snprintf(sets[4], sizeof(sets[4]), "B=1");
    for (int i = 0; i < 5; i++)
        if (gr_workload_set(wl, sets[i], &e) != GR_OK) fprintf(stderr, "\n    %s", e.msg);
    gr_plan *p = NULL;
    gr_target t = gr_target_default();
    if (gr_plan_resolve(wl, variant, &t, gr_kernel_find, gr_kernel_all_names, &p, &e) != GR_OK)
        fprintf(stderr, "\n    %s", e.msg);
    gr_workload_destroy(wl);
    return p;
}

static int find_buf(const gr_plan *p, const char *name) {
    for (int b = 0; b < p->nbufs; b++)
        if (!strcmp(p->bufs[b].name, name)) return b;
    return -1;
}

/* x after one reference step of `variant` (malloc'd copy), its plan in *pp. */
static void *decode_x(const char *variant, const char *dtype, int L, int d, int f, gr_plan **pp) {
    gr_plan *p = decode_plan(variant, dtype, L, d, f);
    *pp = p;
    if (!p) return NULL;
    gr_error e;
    gr_error_clear(&e);
    gr_hoststate *hs = NULL;
    void *x = NULL;
    int b = find_buf(p, "x");
    if (b >= 0 && gr_hoststate_create(p, &hs, &e) == GR_OK && gr_hoststate_fill(hs, &e) == GR_OK &&
        gr_reference_step(p, hs, &e) == GR_OK) {
        x = malloc(p->bufs[b].bytes);
        if (x) memcpy(x, hs->hptr[b], p->bufs[b].bytes);
    } else {
        fprintf(stderr, "\n    %s", e.msg);
    }
    gr_hoststate_destroy(hs);
    return x;
}

/* In each dtype: fused against unfused (the cross-variant check, different rounding points)
 * passes at x's derived tolerances; the fused x with a handful of elements left at their value
 * before the last layer (a down projection that skipped them), or poisoned, fails and names the
 * worst of them. */
static void corrupt_case(const char *dtype, int L, int d, int f, int nbad) {
    gr_plan *pf = NULL, *pu = NULL, *pl = NULL;
    void *xf = decode_x("fused", dtype, L, d, f, &pf);
    void *xu = decode_x("unfused", dtype, L, d, f, &pu);
    void *xl = decode_x("fused", dtype, L - 1, d, f, &pl); /* x before the last layer */
    CU_ASSERT_PTR_NOT_NULL_FATAL(xf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(xu);
    CU_ASSERT_PTR_NOT_NULL_FATAL(xl);
    int b = find_buf(pf, "x");
    const gr_buffer *xb = &pf->bufs[b];
    gr_check real = gr_session_compare(pf, b, "eager vs unfused", xf, xu);
    char line[256];
    gr_check_str(&real, line, sizeof(line));
    printf("\n    %s L=%d d=%d: rtol %.2e atol %.2e; fused vs unfused %s (worst |d| / bound %.2f)",
           dtype, L, d, real.rtol, real.atol, line, real.worst_ratio);
    CU_ASSERT_TRUE(real.passed);
    size_t bytes = xb->bytes;
    void *bad = malloc(bytes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
    memcpy(bad, xf, bytes);
    int64_t stride = xb->numel / nbad;
    for (int k = 0; k < nbad; k++) {
        int64_t i = k * stride + 3;
        gr_store(bad, xb->dtype, (size_t)i, gr_load(xl, xb->dtype, (size_t)i));
    }
    gr_check c = gr_session_compare(pf, b, "eager vs ref", bad, xf);
    gr_check_str(&c, line, sizeof(line));
    printf("\n    %s: %d of %lld elements stale: %s", dtype, nbad, (long long)xb->numel, line);
    CU_ASSERT_FALSE(c.passed);
    CU_ASSERT_TRUE(c.over > 0);
    CU_ASSERT_EQUAL((c.worst_index - 3) % stride, 0); /* the worst is one of the stale ones */
    /* the same stale elements against the unfused output (the cross-variant check) */
    c = gr_session_compare(pf, b, "eager vs unfused", bad, xu);
    CU_ASSERT_FALSE(c.passed);
    /* two poisoned elements */
    memcpy(bad, xf, bytes);
    gr_store(bad, xb->dtype, 5, NAN);
    gr_store(bad, xb->dtype, (size_t)xb->numel - 1, NAN);
    c = gr_session_compare(pf, b, "eager vs ref", bad, xf);
    CU_ASSERT_FALSE(c.passed);
    CU_ASSERT_EQUAL(c.nonfinite, 2);
    CU_ASSERT_EQUAL(c.first_bad, 5);
    free(bad);
    free(xf), free(xu), free(xl);
    gr_plan_destroy(pf), gr_plan_destroy(pu), gr_plan_destroy(pl);
}

static void test_decode_corrupt_small(void) {
    corrupt_case("fp32", 4, 256, 1024, 8);
    corrupt_case("bf16", 4, 256, 1024, 8);
}

/* The default depth and width (L = 16, d = 2048, f = 8192): 64 of 2048 outputs stale */
static void test_decode_corrupt_default(void) {
    corrupt_case("fp32", 16, 2048, 8192, 64);
    corrupt_case("bf16", 16, 2048, 8192, 64);
}

/* ---------- the report ---------- */

/* A report of one fused decode_step variant with checks made on host data, as run_one fills it:
 * text and JSON say whether a CPU reference was used, what was poisoned and what re-seeded, the
 * tolerances, graph vs eager identity with the writing ops, and the knobs set. */
static void test_report_says_what_was_checked(void) {
    gr_plan *p = decode_plan("fused", "fp32", 2, 64, 128);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    int b = find_buf(p, "x");
    CU_ASSERT_TRUE_FATAL(b >= 0);
    float *x = malloc(p->bufs[b].bytes), *y = malloc(p->bufs[b].bytes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    fill_normal(x, (int)p->bufs[b].numel, 5);
    memcpy(y, x, p->bufs[b].bytes);
    y[7] += 1e-6f; /* an atomic's order: not bitwise identical, within tolerance */
    gr_run_report *r = gr_run_report_create(NULL, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    r->opts.cpu_reference = 0;
    snprintf(r->dev.name, sizeof(r->dev.name), "test");
    gr_variant_run *v = gr_run_report_add(r, p);
    gr_check gc = gr_session_compare(p, b, "graph vs eager", y, x);
    gr_checks_add(&v->checks, &gc);
    CU_ASSERT_TRUE(v->checks.v[0].passed);
    GR_ASSERT_CONTAINS(v->checks.v[0].note, "not bitwise identical; written by");
    GR_ASSERT_CONTAINS(v->checks.v[0].note, "(decode_down)");
    /* the report lists graphrun's environment variables that are set (replay/knobs.c: all
     * plumbing, none changes a kernel) */
    const char *nccl = getenv("GR_NCCL_LIBRARY");
    char *old_nccl = nccl ? strdup(nccl) : NULL;
    setenv("GR_NCCL_LIBRARY", "/knob-test/libnccl.so.2", 1);
    unsetenv("GRAPHRUN_SOCKET");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    gr_report_text(f, r);
    fclose(f);
    GR_ASSERT_CONTAINS(text, "verification: NO CPU REFERENCE (--no-cpu-ref): graph against eager only");
    GR_ASSERT_CONTAINS(text, "re-seeded from their init, not poisoned (in-place): x");
    GR_ASSERT_CONTAINS(text, "no output is poisoned");
    CU_ASSERT_PTR_NULL(strstr(text, "outputs poisoned with NaN"));
    GR_ASSERT_CONTAINS(text, "tolerance rtol ");
    GR_ASSERT_CONTAINS(text, "(derived)");
    GR_ASSERT_CONTAINS(text, "not bitwise identical; written by");
    GR_ASSERT_CONTAINS(text, "GR_NCCL_LIBRARY=/knob-test/libnccl.so.2");
    CU_ASSERT_PTR_NULL(strstr(text, "HOME=")); /* general variables are read, not reported */
    CU_ASSERT_PTR_NULL(strstr(text, "kernel choice"));
    free(text);
    json_t *j = gr_report_json(r);
    CU_ASSERT_TRUE(json_is_false(json_object_get(j, "cpu_reference")));
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(j, "checked_against")), "graph against eager");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(j, "knobs"), "GR_NCCL_LIBRARY")), "/knob-test/libnccl.so.2");
    CU_ASSERT_PTR_NULL(json_object_get(json_object_get(j, "knobs"), "GRAPHRUN_SOCKET"));
    json_t *jv = json_array_get(json_object_get(j, "variants"), 0);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(jv, "outputs_poisoned_nan")), 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_array_get(json_object_get(jv, "outputs_reseeded_not_poisoned"), 0)), "x");
    json_t *tx = json_object_get(json_object_get(jv, "tolerances"), "x");
    CU_ASSERT_DOUBLE_EQUAL(json_real_value(json_object_get(tx, "rtol")), p->bufs[b].rtol, 0);
    CU_ASSERT_PTR_NOT_NULL(json_object_get(tx, "atol"));
    json_t *jc = json_array_get(json_object_get(jv, "checks"), 0);
    CU_ASSERT_TRUE(json_is_false(json_object_get(jc, "identical")));
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(jc, "note")), "written by");
    json_decref(j);
    /* with the reference: said so, and nothing claims a NaN poisoning that did not happen */
    r->opts.cpu_reference = 1;
    f = open_memstream(&text, &len);
    gr_report_text(f, r);
    fclose(f);
    GR_ASSERT_CONTAINS(text, "verification: each variant's outputs against its CPU reference");
    free(text);
    if (old_nccl)
        setenv("GR_NCCL_LIBRARY", old_nccl, 1);
    else
        unsetenv("GR_NCCL_LIBRARY");
    free(old_nccl);
    gr_run_report_destroy(r);
    free(x);
    free(y);
    gr_plan_destroy(p);
}


/* The knobs table is whole: every environment variable the sources read (getenv, and the
 * injection library's env_long) is in replay/knobs.c's table, and kernels/ reads none but the
 * plumbing ones the table names for it (no variable changes a kernel choice: issue #23). */
static int knob_listed(const char *name) {
    for (const gr_knob *k = gr_knobs(); k->name; k++)
        if (!strcmp(k->name, name)) return 1;
    return 0;
}

static void test_knobs_table_whole(void) {
    static const char *const dirs[] = {"core", "kernels", "capture", "cupti_tools", "replay", "cli"};
    static const char *const calls[] = {"getenv(\"", "env_long(\""};
    int files = 0, reads = 0;
    for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
        char dir[1024];
        snprintf(dir, sizeof(dir), "%s", gr_test_src(dirs[d]));
        DIR *dp = opendir(dir);
        CU_ASSERT_PTR_NOT_NULL_FATAL(dp);
        for (struct dirent *de; (de = readdir(dp));) {
            const char *dot = strrchr(de->d_name, '.');
            if (!dot || (strcmp(dot, ".c") && strcmp(dot, ".cu") && strcmp(dot, ".h") &&
                         strcmp(dot, ".cuh")))
                continue;
            char path[2048];
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            FILE *f = fopen(path, "rb");
            CU_ASSERT_PTR_NOT_NULL_FATAL(f);
            static char text[1 << 21];
            size_t n = fread(text, 1, sizeof(text) - 1, f);
            text[n] = 0;
            fclose(f);
            files++;
            for (size_t c = 0; c < 2; c++)
                for (const char *q = strstr(text, calls[c]); q; q = strstr(q + 1, calls[c])) {
                    char name[96];
                    const char *b = q + strlen(calls[c]), *e = strchr(b, '"');
                    if (!e || e - b >= (long)sizeof(name)) continue;
                    snprintf(name, sizeof(name), "%.*s", (int)(e - b), b);
                    reads++;
                    if (!knob_listed(name))
                        fprintf(stderr, "\n    %s/%s reads %s, which replay/knobs.c does not list",
                                dirs[d], de->d_name, name);
                    CU_ASSERT_TRUE(knob_listed(name));
                }
        }
        closedir(dp);
    }
    CU_ASSERT_TRUE(files > 50);
    CU_ASSERT_TRUE(reads >= 10);
    /* none of the former kernel-choice overrides is read or listed */
    static const char *const gone[] = {"GR_DEC_CARVEOUT", "GR_IX_RB",       "GR_IX_REG",
                                       "GR_MI_RB",        "GR_LIN_TC_CFG",  "GR_LIN_WG_CFG",
                                       "GR_LIN_WG_REGA",  "GR_LIN_WG_BULK", "GR_LIN_WG_TALL",
                                       "GR_STEP_TIMES",   "GR_DEC_S_INFLIGHT"};
    for (size_t g = 0; g < sizeof(gone) / sizeof(gone[0]); g++)
        CU_ASSERT_FALSE(knob_listed(gone[g]));
}

static CU_TestInfo verify_tests[] = {
    {"NaN never agrees", test_nan_never_agrees},
    {"element bound names the worst", test_element_bound_names_worst},
    {"element bound: one bf16 ulp", test_element_bound_one_ulp},
    {"tolerance formula", test_tolerance_formula},
    {"outputs: derived and explicit", test_outputs_derived},
    {"outputs: refused values", test_outputs_refused},
    {"validate prints tolerances", test_validate_cli},
    {"bundled tolerances carry their reasons", test_bundled_tolerances_documented},
    {"decode: corrupted x fails (small)", test_decode_corrupt_small},
    {"report says what was checked", test_report_says_what_was_checked},
    {"knobs table lists every environment variable read", test_knobs_table_whole},
    CU_TEST_INFO_NULL,
};

/* a suite of its own: the unfused CPU reference at the default size takes most of a minute */
static CU_TestInfo verify_decode_tests[] = {
    {"decode: corrupted x fails (default size)", test_decode_corrupt_default},
    CU_TEST_INFO_NULL,
};

static gr_suite_def gr_verify_suites[] = {{"verify", verify_tests, 0},
                                          {"verify_decode", verify_decode_tests, 0},
                                          {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_verify_suites)
