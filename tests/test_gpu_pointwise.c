/* GPU suite of add_mul_act_vec's forms (grid_stride, tile, tile_cs; docs/pointwise.md): each
 * against the CPU reference, eager and captured, outputs poisoned first, for every dtype and sizes
 * around the vector and tile edges, with PDL too. Skips without a device. */
#include <stdio.h>
#include <string.h>

#include "core/device.h"
#include "core/workload.h"
#include "kernels/registry.h"
#include "replay/session.h"
#include "tests.h"

static gr_device_info info;

/* The configurations one plan runs side by side: form, threads, vecs, act. 96 threads is a
 * block size that is not a power of two; every act appears. */
static const struct {
    const char *form;
    int threads;
    const char *vecs, *act;
} configs[] = {
    {"grid_stride", 256, "auto", "relu"}, {"grid_stride", 256, "1", "gelu"},
    {"grid_stride", 128, "2", "silu"},    {"tile", 128, "auto", "relu"},
    {"tile", 256, "1", "none"},           {"tile", 256, "4", "gelu"},
    {"tile", 96, "2", "silu"},            {"tile_cs", 128, "2", "relu"},
    {"tile_cs", 256, "4", "silu"},        {"tile_cs", 1024, "1", "gelu"},
};
#define NCONFIGS (int)(sizeof(configs) / sizeof(configs[0]))

/* One plan: inputs a, b, c of n elements and one output per configuration. */
static gr_plan *forms_plan(const char *dtype, long n) {
    static char json[8192];
    int o = snprintf(json, sizeof(json),
                     "{\"name\": \"forms\", \"buffers\": ["
                     "{\"name\": \"a\", \"dtype\": \"%s\", \"shape\": [%ld], \"init\": \"normal\"},"
                     "{\"name\": \"b\", \"dtype\": \"%s\", \"shape\": [%ld], \"init\": \"normal\"},"
                     "{\"name\": \"c\", \"dtype\": \"%s\", \"shape\": [%ld], \"init\": {\"kind\": "
                     "\"uniform\", \"low\": -2, \"high\": 2}}",
                     dtype, n, dtype, n, dtype, n);
    for (int k = 0; k < NCONFIGS; k++)
        o += snprintf(json + o, sizeof(json) - (size_t)o,
                      ",{\"name\": \"y%d\", \"dtype\": \"%s\", \"shape\": [%ld]}", k, dtype, n);
    o += snprintf(json + o, sizeof(json) - (size_t)o, "], \"outputs\": [");
    for (int k = 0; k < NCONFIGS; k++)
        o += snprintf(json + o, sizeof(json) - (size_t)o, "%s\"y%d\"", k ? ", " : "", k);
    o += snprintf(json + o, sizeof(json) - (size_t)o, "], \"ops\": [");
    for (int k = 0; k < NCONFIGS; k++)
        o += snprintf(json + o, sizeof(json) - (size_t)o,
                      "%s{\"kernel\": \"add_mul_act_vec\", \"inputs\": [\"a\", \"b\", \"c\"], "
                      "\"outputs\": [\"y%d\"], \"attrs\": {\"form\": \"%s\", \"threads\": %d, "
                      "\"vecs\": \"%s\", \"act\": \"%s\"}}",
                      k ? ", " : "", k, configs[k].form, configs[k].threads, configs[k].vecs,
                      configs[k].act);
    snprintf(json + o, sizeof(json) - (size_t)o, "]}");
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = gr_test_load(json, &e);
    gr_plan *p = NULL;
    gr_target t = gr_target_from_info(&info);
    if (wl) gr_plan_resolve(wl, NULL, &t, gr_kernel_find, gr_kernel_all_names, &p, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    gr_workload_destroy(wl);
    return p;
}

/* reference, eager, capture, graph (with PDL when asked); 1 when every output agreed */
static int verify(gr_plan *p, int pdl) {
    gr_error e;
    gr_error_clear(&e);
    gr_session *s = NULL;
    int ok = 0;
    if (gr_session_create(p, info.sm_count, &s, &e) == GR_OK) {
        s->dev->pdl = pdl;
        if (gr_session_reference(s, &e) == GR_OK && gr_session_verify_eager(s, &e) == GR_OK &&
            gr_session_capture(s, GR_CAPTURE_GLOBAL, NULL, &e) == GR_OK &&
            gr_session_verify_graph(s, &e) == GR_OK) {
            ok = s->checks.verified && s->checks.n >= 2 &&
                 s->graph.kernel_nodes == (size_t)p->kernels;
            for (int i = 0; i < s->checks.n; i++)
                if (!s->checks.v[i].passed)
                    fprintf(stderr, "\n    %s %s: rel %.3e nonfinite %lld", s->checks.v[i].buffer,
                            s->checks.v[i].what, s->checks.v[i].rel_l2,
                            (long long)s->checks.v[i].nonfinite);
        }
    }
    if (!ok && e.msg[0]) fprintf(stderr, "\n    %s", e.msg);
    gr_session_destroy(s);
    return ok;
}

static void test_forms_vs_reference(void) {
    GR_REQUIRE_GPU();
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_device_probe(0, &info, &e), GR_OK);
    static const char *const dtypes[] = {"fp32", "bf16", "fp16"};
    /* 1 and 3: less than a vector, tail only; 4095, 4096, 4097: around a vector's and a tile's
     * edges (fp32 tile of 128 x 2 x 4 = 1024: 4096 is 4 full tiles, no tail); 1000003: many
     * tiles, a partial one and a tail of 3 in every dtype (4 x 250000 + 3, 8 x 125000 + 3) */
    static const long sizes[] = {1, 3, 4095, 4096, 4097, 1000003};
    int fails = 0, runs = 0;
    for (int d = 0; d < 3; d++)
        for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
            gr_plan *p = forms_plan(dtypes[d], sizes[si]);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            CU_ASSERT_EQUAL(p->kernels, NCONFIGS);
            int ok = verify(p, 0);
            if (!ok) fprintf(stderr, "\n    failed: dtype %s n %ld", dtypes[d], sizes[si]);
            fails += !ok;
            runs++;
            gr_plan_destroy(p);
        }
    CU_ASSERT_EQUAL(fails, 0);
    CU_ASSERT_EQUAL(runs, 18);
}

/* With PDL every tile kernel waits (gr_pdl_enter) before it touches memory: a chain of
 * dependent ops stays correct eager and captured. */
static void test_forms_pdl(void) {
    GR_REQUIRE_GPU();
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_device_probe(0, &info, &e), GR_OK);
    const char *json =
        "{\"name\": \"chain\", \"buffers\": ["
        "{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [100003], \"init\": \"normal\"},"
        "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [100003], \"init\": \"normal\"},"
        "{\"name\": \"c\", \"dtype\": \"fp32\", \"shape\": [100003], \"init\": {\"kind\": \"uniform\", \"low\": -1, \"high\": 1}},"
        "{\"name\": \"s\", \"dtype\": \"fp32\", \"shape\": [100003]},"
        "{\"name\": \"t\", \"dtype\": \"fp32\", \"shape\": [100003]},"
        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [100003]}], \"outputs\": [\"y\"], \"ops\": ["
        "{\"kernel\": \"add_mul_act_vec\", \"inputs\": [\"a\", \"b\", \"c\"], \"outputs\": [\"s\"], \"attrs\": {\"form\": \"tile\", \"act\": \"silu\"}},"
        "{\"kernel\": \"add_mul_act_vec\", \"inputs\": [\"s\", \"a\", \"c\"], \"outputs\": [\"t\"], \"attrs\": {\"form\": \"tile_cs\", \"act\": \"gelu\"}},"
        "{\"kernel\": \"add_mul_act_vec\", \"inputs\": [\"t\", \"s\", \"b\"], \"outputs\": [\"y\"], \"attrs\": {\"form\": \"tile\", \"vecs\": \"4\", \"threads\": 128}}]}";
    gr_workload *wl = gr_test_load(json, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wl);
    gr_plan *p = NULL;
    gr_target t = gr_target_from_info(&info);
    CU_ASSERT_EQUAL(gr_plan_resolve(wl, NULL, &t, gr_kernel_find, gr_kernel_all_names, &p, &e), GR_OK);
    gr_workload_destroy(wl);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_TRUE(verify(p, 1));
    gr_plan_destroy(p);
}

/* pointwise_fusion's fused_vec with each form through the workload's params */
static void test_forms_workload(void) {
    GR_REQUIRE_GPU();
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_device_probe(0, &info, &e), GR_OK);
    static const char *const forms[] = {"form=grid_stride", "form=tile", "form=tile_cs"};
    for (int f = 0; f < 3; f++) {
        gr_workload *wl = NULL;
        CU_ASSERT_EQUAL_FATAL(
            gr_workload_load_file(gr_test_src("workloads/pointwise_fusion.json"), &wl, &e), GR_OK);
        CU_ASSERT_EQUAL(gr_workload_set(wl, "n=1000003", &e), GR_OK);
        CU_ASSERT_EQUAL(gr_workload_set(wl, forms[f], &e), GR_OK);
        gr_plan *p = NULL;
        gr_target t = gr_target_from_info(&info);
        CU_ASSERT_EQUAL(gr_plan_resolve(wl, "fused_vec", &t, gr_kernel_find, gr_kernel_all_names, &p, &e), GR_OK);
        gr_workload_destroy(wl);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        int ok = verify(p, 0);
        if (!ok) fprintf(stderr, "\n    failed: %s", forms[f]);
        CU_ASSERT_TRUE(ok);
        CU_ASSERT_EQUAL(p->ops[0].ip[2], f);
        gr_plan_destroy(p);
    }
}

/* A block bigger than the kernel's registers allow (grid_stride with 4 vectors and silu uses ~77
 * registers: 1024 threads need more than an SM's 64 K) fails with a message naming the op and
 * the fix, exit 1; a compiler that fits it runs and verifies. Either way no bare CUDA error. */
static void test_block_too_big(void) {
    GR_REQUIRE_GPU();
    char out[16384];
    int rc = gr_test_graphrun("run workloads/pointwise_fusion.json --variant fused_vec --set act=silu "
                              "--set threads=1024 --set n=100000 --iters 20 --no-bandwidth",
                              out, sizeof(out));
    if (rc == 0) {
        GR_ASSERT_CONTAINS(out, "fused_vec");
        fprintf(stderr, "\n    silu grid_stride at 1024 threads launched (registers fit this build)");
    } else {
        CU_ASSERT_EQUAL(rc, 1);
        GR_ASSERT_CONTAINS(out, "give the op fewer threads");
        GR_ASSERT_CONTAINS(out, "add_mul_act_vec");
    }
}

static CU_TestInfo gpu_pointwise_tests[] = {
    {"a block too big for the registers is named", test_block_too_big},
    {"add_mul_act_vec forms vs reference", test_forms_vs_reference},
    {"forms chained with PDL", test_forms_pdl},
    {"pointwise_fusion form param", test_forms_workload},
    CU_TEST_INFO_NULL};
static gr_suite_def gr_gpu_pointwise_suites[] = {{"gpu_pointwise", gpu_pointwise_tests, 1},
                                                 {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_gpu_pointwise_suites)
