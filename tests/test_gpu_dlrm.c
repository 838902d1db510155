/* DLRM GPU suites: every kernel of the family against its CPU reference at odd sizes (all three
 * linear_act impls: simt and lt at every tile width, tiled at every tile with odd M, N and K,
 * rowdot at ragged edges;
 * K across chunk edges, every activation, fp32 and tf32), out-of-range indices, the fused
 * embedding interaction against the TBE + interaction chain at every rows-per-block, inputs
 * written by an earlier op so that nothing is read before the PDL wait, the tc kernel (TF32 and 3xTF32) at every tile,
 * each with and without PDL; eager == graph ==
 * reference for every dlrm_small variant at B in {1, 7, 128, 2048} (with PDL, multi-hot bags
 * and every Linear impl too, B = 1000 and 2048 all tiled) and the variants against each other,
 * the 2-stream graph's parallel branch (roots and critical path of the captured graph), and
 * --input end to end. Without a device each test prints "SKIPPED: no CUDA device" and counts as skipped. A
 * failure names the case, the check (buffer, eager/graph vs ref/eager) and its error. */
#include <cuda_runtime_api.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/criteo.h"
#include "core/device.h"
#include "core/workload.h"
#include "kernels/dlrm.h"
#include "kernels/registry.h"
#include "replay/run.h"
#include "replay/session.h"
#include "tests.h"

static gr_device_info info;

static int device_ready(void) {
    gr_error e;
    gr_error_clear(&e);
    return gr_device_probe(0, &info, &e) == GR_OK;
}

static gr_plan *plan_for_device(const char *json, gr_error *e) {
    gr_workload *wl = gr_test_load(json, e);
    if (!wl) return NULL;
    const char *v = gr_workload_variant(wl, NULL, e);
    gr_plan *p = NULL;
    gr_target t = gr_target_from_info(&info);
    if (v) gr_plan_resolve(wl, v, &t, gr_kernel_find, gr_kernel_all_names, &p, e);
    gr_workload_destroy(wl);
    return p;
}

static gr_plan *dlrm_for_device(const char *variant, const char *const *sets, int nsets) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(gr_test_src("workloads/dlrm_small.json"), &wl, &e) != GR_OK) {
        fprintf(stderr, "\n    %s", e.msg);
        return NULL;
    }
    for (int i = 0; i < nsets; i++)
        if (gr_workload_set(wl, sets[i], &e) != GR_OK) fprintf(stderr, "\n    %s", e.msg);
    gr_plan *p = NULL;
    gr_target t = gr_target_from_info(&info);
    if (gr_plan_resolve(wl, variant, &t, gr_kernel_find, gr_kernel_all_names, &p, &e) != GR_OK)
        fprintf(stderr, "\n    %s", e.msg);
    gr_workload_destroy(wl);
    return p;
}

static void print_failed_checks(const gr_session *s) {
    for (int i = 0; i < s->checks.n; i++)
        if (!s->checks.v[i].passed)
            fprintf(stderr, "\n    %s %s: rel %.3e nonfinite %lld first_bad %lld", s->checks.v[i].buffer,
                    s->checks.v[i].what, s->checks.v[i].rel_l2, (long long)s->checks.v[i].nonfinite,
                    (long long)s->checks.v[i].first_bad);
}

/* reference, eager, capture, graph; 1 when every check passed. With keep, the session stays. */
static int verify(gr_plan *p, int pdl, gr_session **keep) {
    gr_error e;
    gr_error_clear(&e);
    gr_session *s = NULL;
    int ok = 0;
    if (gr_session_create(p, info.sm_count, &s, &e) == GR_OK) {
        s->dev->pdl = pdl;
        if (gr_session_reference(s, &e) == GR_OK && gr_session_verify_eager(s, &e) == GR_OK &&
            gr_session_capture(s, GR_CAPTURE_GLOBAL, NULL, &e) == GR_OK &&
            gr_session_verify_graph(s, &e) == GR_OK) {
            ok = s->checks.verified && s->checks.n >= 2;
            if (!ok) print_failed_checks(s);
        }
    }
    if (gr_error_failed(&e)) fprintf(stderr, "\n    %s", e.msg);
    if (keep) *keep = s;
    else gr_session_destroy(s);
    return ok;
}

static int verify_json(const char *json, const char *what) {
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = plan_for_device(json, &e);
    if (!p) fprintf(stderr, "\n    %s: %s", what, e.msg);
    CU_ASSERT_PTR_NOT_NULL(p);
    if (!p) return 0;
    int ok = verify(p, 0, NULL) && verify(p, 1, NULL);
    if (!ok) fprintf(stderr, "\n    failed: %s", what);
    gr_plan_destroy(p);
    return ok;
}

static void test_embedding_kernels(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    struct { int B, bag, D; const char *idt, *pool; } cases[] = {
        {1, 1, 16, "int32", "sum"}, {37, 3, 16, "int32", "sum"}, {7, 2, 13, "int64", "mean"},
        {300, 1, 4, "int64", "sum"}, {2048, 1, 16, "int32", "sum"}, {5, 5, 1, "int32", "mean"}};
    const int rows[5] = {1, 3, 17, 1000, 7};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char json[8192];
        int o = snprintf(json, sizeof(json), "{\"name\": \"emb\", \"buffers\": [");
        for (int t = 0; t < 5; t++)
            o += snprintf(json + o, sizeof(json) - (size_t)o,
                          "{\"name\": \"t%d\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": \"normal\"},"
                          "{\"name\": \"i%d\", \"dtype\": \"%s\", \"shape\": [%d, %d], \"init\": {\"kind\": \"zipf\", \"range\": %d}},",
                          t, rows[t], cases[c].D, t, cases[c].idt, cases[c].B, cases[c].bag, rows[t]);
        o += snprintf(json + o, sizeof(json) - (size_t)o,
                      "{\"name\": \"E\", \"dtype\": \"fp32\", \"shape\": [%d, 5, %d]},"
                      "{\"name\": \"y3\", \"dtype\": \"fp32\", \"shape\": [%d, %d]}],"
                      " \"outputs\": [\"E\", \"y3\"], \"ops\": ["
                      "{\"kernel\": \"embedding_bag_tbe\", \"inputs\": [\"t0\", \"t1\", \"t2\", \"t3\", \"t4\", \"i0\", \"i1\", \"i2\", \"i3\", \"i4\"], \"outputs\": [\"E\"], \"attrs\": {\"pooling\": \"%s\"}},"
                      "{\"kernel\": \"embedding_bag\", \"inputs\": [\"t3\", \"i3\"], \"outputs\": [\"y3\"], \"attrs\": {\"pooling\": \"%s\"}}]}",
                      cases[c].B, cases[c].D, cases[c].B, cases[c].D, cases[c].pool, cases[c].pool);
        char what[96];
        snprintf(what, sizeof(what), "embedding B=%d bag=%d D=%d %s %s", cases[c].B, cases[c].bag,
                 cases[c].D, cases[c].idt, cases[c].pool);
        CU_ASSERT_TRUE(verify_json(json, what));
    }
    /* out-of-range rows (negative, == rows, far past) are skipped on the device as in the
     * reference: the indices come from the program (init "host") */
    const char *json =
        "{\"name\": \"oob\", \"buffers\": ["
        "{\"name\": \"t0\", \"dtype\": \"fp32\", \"shape\": [10, 16], \"init\": \"normal\"},"
        "{\"name\": \"t1\", \"dtype\": \"fp32\", \"shape\": [3, 16], \"init\": \"normal\"},"
        "{\"name\": \"i0\", \"dtype\": \"int32\", \"shape\": [4, 2], \"init\": \"host\"},"
        "{\"name\": \"i1\", \"dtype\": \"int32\", \"shape\": [4, 2], \"init\": \"host\"},"
        "{\"name\": \"E\", \"dtype\": \"fp32\", \"shape\": [4, 2, 16]}], \"outputs\": [\"E\"], \"ops\": ["
        "{\"kernel\": \"embedding_bag_tbe\", \"inputs\": [\"t0\", \"t1\", \"i0\", \"i1\"], \"outputs\": [\"E\"]}]}";
    static const int32_t i0[] = {0, 9, -1, 10, 5, 2000000000, 3, 3};
    static const int32_t i1[] = {2, -7, 3, 0, 1, 1, -2147483647 - 1, 2};
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = plan_for_device(json, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (int b = 0; b < p->nbufs; b++) {
        if (!strcmp(p->bufs[b].name, "i0")) p->bufs[b].host_data = i0;
        if (!strcmp(p->bufs[b].name, "i1")) p->bufs[b].host_data = i1;
    }
    CU_ASSERT_TRUE(verify(p, 0, NULL));
    gr_plan_destroy(p);
}

static void test_linear_kernels(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    /* odd sizes around the 32-row tiles, N not a multiple of 4 or of the tile, every tile width
     * (BN 8: 128 x 256, 16: 128 x 512, 32: 2048 x 512), K = 13 and 700 (scalar loads), 129
     * (one k in the second 128-wide chunk), 367 (DLRM's top input, a partial third chunk),
     * both impls, every activation; tf32 (lt) at its own tolerance */
    int shapes[][3] = {{1, 1, 13},     {7, 5, 16},       {33, 17, 64},     {31, 33, 1},
                       {128, 512, 13}, {128, 256, 512},  {300, 33, 367},   {2048, 512, 367},
                       {2048, 1, 256}, {65, 16, 64},     {37, 24, 129},    {5, 40, 700},
                       {96, 100, 256}};
    for (size_t c = 0; c < sizeof(shapes) / sizeof(shapes[0]); c++) {
        int M = shapes[c][0], N = shapes[c][1], K = shapes[c][2];
        char json[8192];
        int o = snprintf(json, sizeof(json),
                         "{\"name\": \"lin\", \"buffers\": ["
                         "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": \"normal\"},"
                         "{\"name\": \"W\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": {\"kind\": \"uniform\", \"low\": -0.2, \"high\": 0.2}},"
                         "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [%d], \"init\": \"normal\"}",
                         M, K, N, K, N);
        /* act, impl, math, rtol: tf32 carries ~1e-3 (single layer, operands truncated) */
        const char *combos[][4] = {{"relu", "simt", "fp32", "1e-4"}, {"none", "simt", "fp32", "1e-4"},
                                   {"sigmoid", "simt", "fp32", "1e-4"}, {"relu", "lt", "fp32", "1e-4"},
                                   {"none", "lt", "fp32", "1e-4"}, {"relu", "lt", "tf32", "5e-3"}};
        /* tf32 only where the output has enough elements for a relative L2 error to mean
         * something: a lone ReLU output near zero can be off by more than 5e-3 of itself */
        const int nc = (int)(sizeof(combos) / sizeof(combos[0])) - (M * N < 256 ? 1 : 0);
        for (int k = 0; k < nc; k++)
            o += snprintf(json + o, sizeof(json) - (size_t)o,
                          ",{\"name\": \"y%d_%s_%s_%s\", \"dtype\": \"fp32\", \"shape\": [%d, %d]}", k,
                          combos[k][0], combos[k][1], combos[k][2], M, N);
        o += snprintf(json + o, sizeof(json) - (size_t)o, "], \"outputs\": [");
        for (int k = 0; k < nc; k++)
            o += snprintf(json + o, sizeof(json) - (size_t)o, "%s{\"buffer\": \"y%d_%s_%s_%s\", \"rtol\": %s}",
                          k ? ", " : "", k, combos[k][0], combos[k][1], combos[k][2], combos[k][3]);
        o += snprintf(json + o, sizeof(json) - (size_t)o, "], \"ops\": [");
        for (int k = 0; k < nc; k++)
            o += snprintf(json + o, sizeof(json) - (size_t)o,
                          "%s{\"kernel\": \"linear_act\", \"inputs\": [\"x\", \"W\", \"b\"], \"outputs\": [\"y%d_%s_%s_%s\"], "
                          "\"attrs\": {\"act\": \"%s\", \"impl\": \"%s\", \"math\": \"%s\"}}",
                          k ? ", " : "", k, combos[k][0], combos[k][1], combos[k][2], combos[k][0], combos[k][1],
                          combos[k][2]);
        snprintf(json + o, sizeof(json) - (size_t)o, "]}");
        char what[64];
        snprintf(what, sizeof(what), "linear_act %d x %d x %d", M, N, K);
        CU_ASSERT_TRUE(verify_json(json, what));
    }
    /* W and bias written by an earlier op: the kernel must not read them before its PDL wait
     * (the plan says so: no prefetch), and with PDL the results still match */
    const char *json =
        "{\"name\": \"lin_w\", \"buffers\": ["
        "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [128, 367], \"init\": \"normal\"},"
        "{\"name\": \"W0\", \"dtype\": \"fp32\", \"shape\": [512, 367], \"init\": {\"kind\": \"uniform\", \"low\": -0.1, \"high\": 0.1}},"
        "{\"name\": \"d\", \"dtype\": \"fp32\", \"shape\": [367], \"init\": {\"kind\": \"uniform\", \"low\": -0.1, \"high\": 0.1}},"
        "{\"name\": \"b0\", \"dtype\": \"fp32\", \"shape\": [512], \"init\": \"normal\"},"
        "{\"name\": \"e\", \"dtype\": \"fp32\", \"shape\": [512], \"init\": \"normal\"},"
        "{\"name\": \"W\", \"dtype\": \"fp32\", \"shape\": [512, 367]},"
        "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [512]},"
        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [128, 512]}],"
        " \"outputs\": [{\"buffer\": \"y\", \"rtol\": 1e-4}], \"ops\": ["
        "{\"kernel\": \"bias_add\", \"inputs\": [\"W0\", \"d\"], \"outputs\": [\"W\"]},"
        "{\"kernel\": \"bias_add\", \"inputs\": [\"b0\", \"e\"], \"outputs\": [\"b\"]},"
        "{\"kernel\": \"linear_act\", \"inputs\": [\"x\", \"W\", \"b\"], \"outputs\": [\"y\"], \"attrs\": {\"impl\": \"simt\"}}]}";
    CU_ASSERT_TRUE(verify_json(json, "linear_act 128 x 512 x 367 with W written by an op"));
}

/* Three linear_act ops (relu, none, sigmoid) on one x [M, K], W [N, K] and bias, each with
 * `attrs` besides its act, against the reference at `rtol`, with and without PDL. */
static int linear_acts_ok(int M, int N, int K, const char *attrs, double rtol) {
    static const char *const acts[] = {"relu", "none", "sigmoid"};
    char json[4096];
    int o = snprintf(
        json, sizeof(json),
        "{\"name\": \"linear\", \"buffers\": ["
        "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": \"normal\"},"
        "{\"name\": \"W\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": {\"kind\": "
        "\"uniform\", \"low\": -0.2, \"high\": 0.2}},"
        "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [%d], \"init\": \"normal\"}",
        M, K, N, K, N);
    for (int a = 0; a < 3; a++)
        o += snprintf(json + o, sizeof(json) - (size_t)o,
                      ",{\"name\": \"y_%s\", \"dtype\": \"fp32\", \"shape\": [%d, %d]}", acts[a], M,
                      N);
    o += snprintf(json + o, sizeof(json) - (size_t)o, "], \"outputs\": [");
    for (int a = 0; a < 3; a++)
        o += snprintf(json + o, sizeof(json) - (size_t)o, "%s{\"buffer\": \"y_%s\", \"rtol\": %g}",
                      a ? ", " : "", acts[a], rtol);
    o += snprintf(json + o, sizeof(json) - (size_t)o, "], \"ops\": [");
    for (int a = 0; a < 3; a++)
        o += snprintf(json + o, sizeof(json) - (size_t)o,
                      "%s{\"kernel\": \"linear_act\", \"inputs\": [\"x\", \"W\", \"b\"], "
                      "\"outputs\": [\"y_%s\"], \"attrs\": {\"act\": \"%s\", %s}}",
                      a ? ", " : "", acts[a], acts[a], attrs);
    snprintf(json + o, sizeof(json) - (size_t)o, "]}");
    char what[160];
    snprintf(what, sizeof(what), "linear_act {%s} %d x %d x %d", attrs, M, N, K);
    return verify_json(json, what);
}

/* Every (M, N, K) of Ms x Ns x Ks (n of each), then the `nextra` shapes of `extra`, into
 * shapes; returns how many. */
static int cross_shapes(const int *Ms, const int *Ns, const int *Ks, int n, const int (*extra)[3],
                        int nextra, int (*shapes)[3]) {
    int ns = 0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            for (int c = 0; c < n; c++) {
                shapes[ns][0] = Ms[a];
                shapes[ns][1] = Ns[b];
                shapes[ns++][2] = Ks[c];
            }
    for (int i = 0; i < nextra; i++, ns++)
        memcpy(shapes[ns], extra[i], sizeof(extra[i]));
    return ns;
}

/* impl tiled against the reference: M x N x K over {1, 7, 65, 2048} x {1, 16, 63, 512} x
 * {1, 13, 367, 512}, each act (three ops on one x, W, bias), so every tile is taken (64:
 * 2048 x 512; 32: 2048 x 63; 16: the rest), K = 1, 13 and 367 take the 4-byte copies (rows not
 * 16-byte aligned), 512 the 16-byte ones across 32, 16 or 8 pipeline stages, and N = 63
 * leaves a ragged last tile; plus ragged M and N for the 64 and 32 tiles (2000 x 300: the
 * last 64 x 64 tile is 16 x 44; 1000 x 100: the last 32 x 32 one is 8 x 4); and W and bias
 * written by an earlier op (nothing read before the PDL wait). Each with and without PDL. */
static void test_linear_tiled(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    static const int Ms[] = {1, 7, 65, 2048}, Ns[] = {1, 16, 63, 512}, Ks[] = {1, 13, 367, 512};
    static const int extra[4][3] = {
        {2000, 300, 13}, {2000, 300, 512}, {1000, 100, 367}, {1000, 100, 64}};
    int shapes[64 + 4][3];
    const int ns = cross_shapes(Ms, Ns, Ks, 4, extra, 4, shapes);
    for (int c = 0; c < ns; c++)
        CU_ASSERT_TRUE(
            linear_acts_ok(shapes[c][0], shapes[c][1], shapes[c][2], "\"impl\": \"tiled\"", 1e-4));
    /* every configuration the attr config can name, also where the check would not take it
     * (t64w on K = 13, 367 and 1: the 4-byte copies; t16 on a wide layer) */
    static const char *const tcfgs[] = {"t64", "t64w", "t32", "t16"};
    static const int forced[][3] = {
        {2048, 512, 13}, {2000, 300, 367}, {257, 70, 130}, {65, 63, 1}, {2048, 256, 512}};
    for (int f = 0; f < 4; f++)
        for (size_t c = 0; c < sizeof(forced) / sizeof(forced[0]); c++) {
            char attrs[96];
            snprintf(attrs, sizeof(attrs), "\"impl\": \"tiled\", \"config\": \"%s\"", tcfgs[f]);
            int ok = linear_acts_ok(forced[c][0], forced[c][1], forced[c][2], attrs, 1e-4);
            if (!ok) fprintf(stderr, "\n    failed: tiled configuration %s", tcfgs[f]);
            CU_ASSERT_TRUE(ok);
        }
    const char *json =
        "{\"name\": \"tiled_w\", \"buffers\": ["
        "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [2048, 367], \"init\": \"normal\"},"
        "{\"name\": \"W0\", \"dtype\": \"fp32\", \"shape\": [512, 367], \"init\": {\"kind\": "
        "\"uniform\", \"low\": -0.1, \"high\": 0.1}},"
        "{\"name\": \"d\", \"dtype\": \"fp32\", \"shape\": [367], \"init\": {\"kind\": "
        "\"uniform\", \"low\": -0.1, \"high\": 0.1}},"
        "{\"name\": \"b0\", \"dtype\": \"fp32\", \"shape\": [512], \"init\": \"normal\"},"
        "{\"name\": \"e\", \"dtype\": \"fp32\", \"shape\": [512], \"init\": \"normal\"},"
        "{\"name\": \"W\", \"dtype\": \"fp32\", \"shape\": [512, 367]},"
        "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [512]},"
        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [2048, 512]}],"
        " \"outputs\": [{\"buffer\": \"y\", \"rtol\": 1e-4}], \"ops\": ["
        "{\"kernel\": \"bias_add\", \"inputs\": [\"W0\", \"d\"], \"outputs\": [\"W\"]},"
        "{\"kernel\": \"bias_add\", \"inputs\": [\"b0\", \"e\"], \"outputs\": [\"b\"]},"
        "{\"kernel\": \"linear_act\", \"inputs\": [\"x\", \"W\", \"b\"], \"outputs\": [\"y\"], "
        "\"attrs\": {\"impl\": \"tiled\"}}]}";
    CU_ASSERT_TRUE(verify_json(json, "linear_act tiled 2048 x 512 x 367 with W written by an op"));
}

/* impl rowdot against the reference: {1, 7, 2051} x {1, 3, 16} x {1, 13, 256, 367, 1000}: float
 * and 16-byte lanes (K % 4), K under one warp's 32 or 128 and over several rounds. Then with W
 * and bias written by an earlier op, and past its 8 blocks per SM (rows strided over the warps).
 * Each with and without PDL. */
static void test_linear_small(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    static const int rM[] = {1, 7, 2051}, rN[] = {1, 3, 16}, rK[] = {1, 13, 256, 367, 1000};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 5; c++)
                CU_ASSERT_TRUE(linear_acts_ok(rM[a], rN[b], rK[c], "\"impl\": \"rowdot\"", 1e-4));
    CU_ASSERT_TRUE(linear_acts_ok(20000, 1, 256, "\"impl\": \"rowdot\"", 1e-4));
    static const struct {
        int N, K;
        const char *impl;
    } wr[] = {{1, 256, "rowdot"}};
    for (int i = 0; i < 1; i++) {
        char json[4096], what[96];
        snprintf(
            json, sizeof(json),
            "{\"name\": \"small_w\", \"buffers\": ["
            "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [2048, %d], \"init\": \"normal\"},"
            "{\"name\": \"W0\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": {\"kind\": "
            "\"uniform\", \"low\": -0.1, \"high\": 0.1}},"
            "{\"name\": \"d\", \"dtype\": \"fp32\", \"shape\": [%d], \"init\": {\"kind\": "
            "\"uniform\", \"low\": -0.1, \"high\": 0.1}},"
            "{\"name\": \"b0\", \"dtype\": \"fp32\", \"shape\": [%d], \"init\": \"normal\"},"
            "{\"name\": \"e\", \"dtype\": \"fp32\", \"shape\": [%d], \"init\": \"normal\"},"
            "{\"name\": \"W\", \"dtype\": \"fp32\", \"shape\": [%d, %d]},"
            "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [%d]},"
            "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [2048, %d]}],"
            " \"outputs\": [{\"buffer\": \"y\", \"rtol\": 1e-4}], \"ops\": ["
            "{\"kernel\": \"bias_add\", \"inputs\": [\"W0\", \"d\"], \"outputs\": [\"W\"]},"
            "{\"kernel\": \"bias_add\", \"inputs\": [\"b0\", \"e\"], \"outputs\": [\"b\"]},"
            "{\"kernel\": \"linear_act\", \"inputs\": [\"x\", \"W\", \"b\"], \"outputs\": [\"y\"], "
            "\"attrs\": {\"impl\": \"%s\"}}]}",
            wr[i].K, wr[i].N, wr[i].K, wr[i].K, wr[i].N, wr[i].N, wr[i].N, wr[i].K, wr[i].N,
            wr[i].N, wr[i].impl);
        snprintf(what, sizeof(what), "linear_act %s 2048 x %d x %d with W written by an op",
                 wr[i].impl, wr[i].N, wr[i].K);
        CU_ASSERT_TRUE(verify_json(json, what));
    }
}

/* impl tc against the reference, math tf32x3 at the fp32 kernels' tolerance (1e-4: 3xTF32 must
 * be fp32-accurate, not merely TF32-accurate; a single output summing 512 terms of both signs
 * measured 2.2e-5 on the H200, as the tensor cores' accumulation is coarser than an fp32 FMA's)
 * and math tf32 at 5e-3: M x N x
 * K over {1, 65, 2048} x {1, 63, 512} x {13, 367, 512}, each act, so every configuration is
 * taken (64 x 64: 2048 x 512; 64 x 32: 4160 x 128; 32 x 32: the rest), K = 13 and 367 take the
 * shifted copies (rows not 16-byte aligned, row starts 1 and 3 floats apart; one stage; 12
 * stages with a ragged last one), as do K = 130 (2 apart) and K = 1 (one float per row, the
 * pieces mostly past K), 512 the aligned 16-byte ones, and N = 1 and 63 leave ragged MMA tiles
 * (odd N: scalar stores); plus ragged M and N for the larger tiles. With and without PDL
 * (verify_json). */
static void test_linear_tc(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    static const int Ms[] = {1, 65, 2048}, Ns[] = {1, 63, 512}, Ks[] = {13, 367, 512};
    static const int extra[5][3] = {
        {2000, 300, 512}, {1000, 100, 367}, {4160, 128, 64}, {257, 70, 130}, {130, 40, 1}};
    int shapes[27 + 5][3];
    const int ns = cross_shapes(Ms, Ns, Ks, 3, extra, 5, shapes);
    static const char *const maths[] = {"\"impl\": \"tc\", \"math\": \"tf32x3\"",
                                        "\"impl\": \"tc\", \"math\": \"tf32\""};
    static const double rtols[] = {1e-4, 5e-3};
    for (int mi = 0; mi < 2; mi++)
        for (int c = 0; c < ns; c++)
            CU_ASSERT_TRUE(
                linear_acts_ok(shapes[c][0], shapes[c][1], shapes[c][2], maths[mi], rtols[mi]));
}

/* Every tc configuration (the op's attr config), not only the one the check picks for a shape:
 * K = 512 (16 stages), 367 (12, shifted rows, ragged last stage), 130 (5 stages), 13 and 1 (one
 * stage), with ragged M and N. tf32x3 at 1e-4, tf32 on one shape at 5e-3; with and without PDL
 * (verify_json). */
static void test_linear_tc_configs(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    static const char *const names[GR_LIN_NCCFG] = GR_LIN_CNAMES;
    static const int shapes[][3] = {
        {2048, 256, 512}, {2000, 300, 367}, {257, 70, 130}, {130, 40, 13}, {65, 63, 1}};
    char attrs[128];
    for (int c = 0; c < GR_LIN_NCCFG; c++) {
        snprintf(attrs, sizeof(attrs), "\"impl\": \"tc\", \"math\": \"tf32x3\", \"config\": \"%s\"",
                 names[c]);
        for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
            int ok = linear_acts_ok(shapes[i][0], shapes[i][1], shapes[i][2], attrs, 1e-4);
            if (!ok) fprintf(stderr, "\n    failed: configuration %s", names[c]);
            CU_ASSERT_TRUE(ok);
        }
        snprintf(attrs, sizeof(attrs), "\"impl\": \"tc\", \"math\": \"tf32\", \"config\": \"%s\"",
                 names[c]);
        CU_ASSERT_TRUE(linear_acts_ok(2000, 300, 367, attrs, 5e-3));
    }
}

/* impl wg runs only on compute capability 9.0 (sm_90a code); elsewhere its tests say so. */
static int wg_device(void) {
    if (info.cc_major == 9 && info.cc_minor == 0) return 1;
    gr_test_skip("impl wg", "needs compute capability 9.0 (this GPU: %d.%d)", info.cc_major,
                 info.cc_minor);
    return 0;
}

/* impl wg against the reference, as the tc kernel: math tf32x3 at the fp32 kernels' 1e-4 and
 * tf32 at 5e-3, M x N x K over {1, 65, 2048} x {1, 63, 512} x {13, 367, 512} and the tc test's
 * extra shapes, each act, with and without PDL (verify_json), in the configuration the check
 * picks (w64b2 and w128 for the wide shapes, w64b where the bulk form's row fold allows it, w64
 * for the rest); then nine shapes (aligned, shifted, one stage, K = 1, the bulk form's folds) with
 * math tf32x3 in each configuration the attr config names (bulk ones only where the rows fold).
 * K = 13, 367, 130 and 1 take the shifted copies (per-row offsets 1-3 floats), 512 and 64 the
 * aligned ones; K = 1 and 13 are one ragged stage (zero-filled past K), 367 twelve; N = 1 and 63
 * leave ragged tiles and odd N the scalar stores. */
static const char *const wg_maths[] = {"\"impl\": \"wg\", \"math\": \"tf32x3\"",
                                       "\"impl\": \"wg\", \"math\": \"tf32\""};

/* Both maths over test_linear_wg's shape cross, in configuration `cfg` (its attr config; NULL:
 * the one the check picks; a bulk one only on the shapes whose rows fold). */
static void wg_cross(const char *cfg) {
    static const int Ms[] = {1, 65, 2048}, Ns[] = {1, 63, 512}, Ks[] = {13, 367, 512};
    static const int extra[5][3] = {
        {2000, 300, 512}, {1000, 100, 367}, {4160, 128, 64}, {257, 70, 130}, {130, 40, 1}};
    int shapes[27 + 5][3];
    const int ns = cross_shapes(Ms, Ns, Ks, 3, extra, 5, shapes);
    static const double rtols[] = {1e-4, 5e-3};
    const int bulk = cfg && (!strcmp(cfg, "w64b") || !strcmp(cfg, "w64b2"));
    char attrs[128];
    for (int mi = 0; mi < 2; mi++)
        for (int c = 0; c < ns; c++) {
            if (bulk && !gr_lin_wgb_ok(shapes[c][0], shapes[c][1], shapes[c][2])) continue;
            snprintf(attrs, sizeof(attrs), "%s%s%s%s", wg_maths[mi], cfg ? ", \"config\": \"" : "",
                     cfg ? cfg : "", cfg ? "\"" : "");
            int ok = linear_acts_ok(shapes[c][0], shapes[c][1], shapes[c][2], attrs, rtols[mi]);
            if (!ok)
                fprintf(stderr, "\n    failed: wg %s, %s", wg_maths[mi],
                        cfg ? cfg : "the check's configuration");
            CU_ASSERT_TRUE(ok);
        }
}

static void test_linear_wg(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    if (!wg_device()) return;
    wg_cross(NULL);
    static const char *const cfgs[GR_LIN_NWCFG] = GR_LIN_WNAMES;
    /* w64b and w64b2 fold rows in fours (K = 367, 13, 1) and pairs (130) where M and N allow it
     * (2048 x 512 x 367 is top.0; 68 x 64 x 1 a box wider than the map's rows); elsewhere the
     * check refuses them (linear config errors, CPU suite) */
    static const int forced[][3] = {{2048, 256, 512}, {2000, 300, 367}, {257, 70, 130},
                                    {130, 40, 13},    {65, 63, 1},      {2048, 512, 367},
                                    {260, 72, 130},   {132, 44, 13},    {68, 64, 1}};
    char attrs[128];
    for (int f = 0; f < GR_LIN_NWCFG; f++) {
        snprintf(attrs, sizeof(attrs), "%s, \"config\": \"%s\"", wg_maths[0], cfgs[f]);
        for (size_t c = 0; c < sizeof(forced) / sizeof(forced[0]); c++) {
            if (gr_lin_wg_bulk(f) && !gr_lin_wgb_ok(forced[c][0], forced[c][1], forced[c][2]))
                continue;
            int ok = linear_acts_ok(forced[c][0], forced[c][1], forced[c][2], attrs, 1e-4);
            if (!ok) fprintf(stderr, "\n    failed: wg configuration %s", cfgs[f]);
            CU_ASSERT_TRUE(ok);
        }
    }
}

/* The bulk forms (w64b, w64b2: TMA copies, x's fragments split in registers, a permuted k order
 * inside each stage) over the whole shape cross whose rows fold, in both maths, with and without
 * PDL: the check picks them only for some shapes of test_linear_wg's cross. */
static void test_linear_wg_bulk(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    if (!wg_device()) return;
    wg_cross("w64b");
    wg_cross("w64b2");
}

static void test_interaction_kernels(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    /* fused interaction vs the unfused chain (concat, batched GEMM, tril, concat), both against
     * the reference. Rows per block (the attr rows_per_block when named, else the check's): B =
     * 7 and 130 one,
     * 1100 two, 4302 four, in 1076 groups (the last one of 2 rows) for 1056 blocks on 132 SMs, so
     * the kernel's group loop is exercised; B = 7 again with 4 rows forced (one partial group). */
    struct {
        int B, T, D;
        const char *rb;
    } cases[] = {{7, 26, 16, NULL}, {130, 3, 5, NULL},    {4302, 2, 4, NULL},
                 {1, 1, 1, NULL},   {1100, 26, 16, NULL}, {7, 26, 16, "4"}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        int B = cases[c].B, T = cases[c].T, D = cases[c].D, F = T + 1, P = F * T / 2;
        char json[8192], rbattr[64] = "";
        if (cases[c].rb)
            snprintf(rbattr, sizeof(rbattr), ", \"attrs\": {\"rows_per_block\": \"%s\"}", cases[c].rb);
        int o = snprintf(json, sizeof(json),
                         "{\"name\": \"int\", \"buffers\": ["
                         "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": \"normal\"},"
                         "{\"name\": \"E\", \"dtype\": \"fp32\", \"shape\": [%d, %d, %d], \"init\": \"normal\"},"
                         "{\"name\": \"R\", \"dtype\": \"fp32\", \"shape\": [%d, %d]},"
                         "{\"name\": \"Tm\", \"dtype\": \"fp32\", \"shape\": [%d, %d, %d]},"
                         "{\"name\": \"Z\", \"dtype\": \"fp32\", \"shape\": [%d, %d, %d]},"
                         "{\"name\": \"zf\", \"dtype\": \"fp32\", \"shape\": [%d, %d]},"
                         "{\"name\": \"R2\", \"dtype\": \"fp32\", \"shape\": [%d, %d]},"
                         "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [%d], \"init\": \"normal\"},"
                         "{\"name\": \"Rb\", \"dtype\": \"fp32\", \"shape\": [%d, %d]},"
                         "{\"name\": \"s\", \"dtype\": \"fp32\", \"shape\": [%d, %d]}],"
                         " \"outputs\": [{\"buffer\": \"R\", \"rtol\": 1e-5}, {\"buffer\": \"R2\", \"rtol\": 1e-5}, \"Rb\", \"s\"], \"ops\": ["
                         "{\"kernel\": \"dot_interaction\", \"inputs\": [\"x\", \"E\"], \"outputs\": [\"R\"]%s},"
                         "{\"kernel\": \"concat\", \"inputs\": [\"x\", \"E\"], \"outputs\": [\"Tm\"]},"
                         "{\"kernel\": \"gemm\", \"inputs\": [\"Tm\", \"Tm\"], \"outputs\": [\"Z\"], \"attrs\": {\"trans_b\": true}},"
                         "{\"kernel\": \"tril_gather\", \"inputs\": [\"Z\"], \"outputs\": [\"zf\"]},"
                         "{\"kernel\": \"concat\", \"inputs\": [\"x\", \"zf\"], \"outputs\": [\"R2\"]},"
                         "{\"kernel\": \"bias_add\", \"inputs\": [\"R\", \"b\"], \"outputs\": [\"Rb\"]},"
                         "{\"kernel\": \"sigmoid\", \"inputs\": [\"Rb\"], \"outputs\": [\"s\"]}]}",
                         B, D, B, T, D, B, D + P, B, F, D, B, F, F, B, P, B, D + P, D + P, B, D + P, B, D + P,
                         rbattr);
        (void)o;
        char what[80];
        snprintf(what, sizeof(what), "interaction B=%d T=%d D=%d%s%s", B, T, D,
                 cases[c].rb ? " rows_per_block=" : "", cases[c].rb ? cases[c].rb : "");
        CU_ASSERT_TRUE(verify_json(json, what));
    }
}

/* embedding_interaction (the lookups gathered inside the interaction) against the reference
 * and against the chain it replaces (embedding_bag_tbe, then dot_interaction), which is checked
 * against its own reference too. B = 4302 is 1076 groups of 4 rows (the last of 2) for 1056
 * blocks on 132 SMs (the group loop, where only the first group is gathered before the PDL wait);
 * 1100 and 2048 are two rows per block, the others one, B = 7 with rows_per_block 4 one partial
 * group of 4; T = 31 is the most tables; D = 5 and 1 take the scalar path; `written` puts an op
 * in front that writes table 0, so the plan forbids gathering before the PDL wait. */
static void test_emb_interaction_kernels(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    struct {
        int B, T, D, bag;
        const char *idt, *pool;
        int written;
        const char *rb;
    } cases[] = {
        {7, 26, 16, 1, "int32", "sum", 0, NULL},    {130, 3, 5, 2, "int64", "mean", 0, NULL},
        {4302, 2, 4, 1, "int32", "sum", 0, NULL},   {1, 1, 1, 1, "int32", "sum", 0, NULL},
        {300, 20, 5, 1, "int64", "mean", 0, NULL},  {2048, 31, 16, 1, "int32", "sum", 0, NULL},
        {33, 31, 8, 3, "int32", "sum", 0, NULL},    {128, 26, 16, 1, "int32", "sum", 1, NULL},
        {2048, 26, 16, 1, "int64", "sum", 0, NULL}, {1100, 26, 16, 1, "int32", "sum", 0, NULL},
        {7, 26, 16, 2, "int32", "mean", 1, "4"}};
    static char json[65536];
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char rbattr[64] = "";
        if (cases[c].rb) snprintf(rbattr, sizeof(rbattr), ", \"rows_per_block\": \"%s\"", cases[c].rb);
        const int B = cases[c].B, T = cases[c].T, D = cases[c].D, bag = cases[c].bag;
        const int P = (T + 1) * T / 2;
        int o = snprintf(json, sizeof(json), "{\"name\": \"ei\", \"buffers\": ["
                         "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": \"normal\"},"
                         "{\"name\": \"d\", \"dtype\": \"fp32\", \"shape\": [%d], \"init\": \"normal\"},"
                         "{\"name\": \"traw\", \"dtype\": \"fp32\", \"shape\": [1, %d], \"init\": \"normal\"},",
                         B, D, D, D); /* traw: table 0's rows (1) before the op that writes t0 */
        for (int t = 0; t < T; t++) {
            const int rows = 1 + (t * 37) % 1000;
            if (t > 0 || !cases[c].written)
                o += snprintf(json + o, sizeof(json) - (size_t)o,
                              "{\"name\": \"t%d\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": \"normal\"},",
                              t, rows, D);
            else
                o += snprintf(json + o, sizeof(json) - (size_t)o,
                              "{\"name\": \"t%d\", \"dtype\": \"fp32\", \"shape\": [%d, %d]},", t, rows, D);
            o += snprintf(json + o, sizeof(json) - (size_t)o,
                          "{\"name\": \"i%d\", \"dtype\": \"%s\", \"shape\": [%d, %d], \"init\": {\"kind\": \"zipf\", \"range\": %d}},",
                          t, cases[c].idt, B, bag, rows);
        }
        o += snprintf(json + o, sizeof(json) - (size_t)o,
                      "{\"name\": \"R\", \"dtype\": \"fp32\", \"shape\": [%d, %d]},"
                      "{\"name\": \"E\", \"dtype\": \"fp32\", \"shape\": [%d, %d, %d]},"
                      "{\"name\": \"R2\", \"dtype\": \"fp32\", \"shape\": [%d, %d]}],"
                      " \"outputs\": [{\"buffer\": \"R\", \"rtol\": 1e-5}, {\"buffer\": \"R2\", \"rtol\": 1e-5}, \"E\"], \"ops\": [",
                      B, D + P, B, T, D, B, D + P);
        if (cases[c].written)
            o += snprintf(json + o, sizeof(json) - (size_t)o,
                          "{\"kernel\": \"bias_add\", \"inputs\": [\"traw\", \"d\"], \"outputs\": [\"t0\"]},");
        char tabs[4096] = "", idxs[4096] = "";
        size_t lt = 0, li = 0;
        for (int t = 0; t < T; t++) {
            lt += (size_t)snprintf(tabs + lt, sizeof(tabs) - lt, ", \"t%d\"", t);
            li += (size_t)snprintf(idxs + li, sizeof(idxs) - li, ", \"i%d\"", t);
        }
        o += snprintf(json + o, sizeof(json) - (size_t)o,
                      "{\"kernel\": \"embedding_interaction\", \"inputs\": [\"x\"%s%s], \"outputs\": [\"R\"], \"attrs\": {\"pooling\": \"%s\"%s}},"
                      "{\"kernel\": \"embedding_bag_tbe\", \"inputs\": [%s%s], \"outputs\": [\"E\"], \"attrs\": {\"pooling\": \"%s\"}},"
                      "{\"kernel\": \"dot_interaction\", \"inputs\": [\"x\", \"E\"], \"outputs\": [\"R2\"]}]}",
                      tabs, idxs, cases[c].pool, rbattr, tabs + 2, idxs, cases[c].pool);
        CU_ASSERT_TRUE_FATAL((size_t)o < sizeof(json));
        char what[128];
        snprintf(what, sizeof(what), "embedding_interaction B=%d T=%d D=%d bag=%d %s %s%s%s%s", B,
                 T, D, bag, cases[c].idt, cases[c].pool,
                 cases[c].written ? " (table written by an op)" : "",
                 cases[c].rb ? " rows_per_block=" : "", cases[c].rb ? cases[c].rb : "");
        CU_ASSERT_TRUE(verify_json(json, what));
        /* the fused kernel and the chain agree with each other as well as with the reference */
        gr_error e;
        gr_error_clear(&e);
        gr_plan *p = plan_for_device(json, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        gr_session *s = NULL;
        if (verify(p, 0, &s) && s) {
            int r = -1, r2 = -1;
            for (int b = 0; b < p->nbufs; b++) {
                if (!strcmp(p->bufs[b].name, "R")) r = b;
                if (!strcmp(p->bufs[b].name, "R2")) r2 = b;
            }
            CU_ASSERT_TRUE_FATAL(r >= 0 && r2 >= 0);
            float *h1 = malloc(p->bufs[r].bytes), *h2 = malloc(p->bufs[r2].bytes);
            CU_ASSERT_TRUE_FATAL(h1 && h2);
            CU_ASSERT_EQUAL(gr_devstate_download(s->dev, r, h1, &e), GR_OK);
            CU_ASSERT_EQUAL(gr_devstate_download(s->dev, r2, h2, &e), GR_OK);
            /* the same fp32 pooled vectors and the same dot order: equal, or within an ulp */
            double num = 0, den = 0;
            int64_t differ = 0;
            for (int64_t i = 0; i < p->bufs[r].numel; i++) {
                num += ((double)h1[i] - h2[i]) * ((double)h1[i] - h2[i]);
                den += (double)h2[i] * h2[i];
                differ += memcmp(&h1[i], &h2[i], sizeof(float)) != 0;
            }
            double rel = sqrt(num / (den > 0 ? den : 1));
            if (rel > 1e-6 || differ)
                fprintf(stderr, "\n    %s: fused vs chain rel L2 %.2e, %lld elements differ", what, rel, (long long)differ);
            CU_ASSERT_TRUE(rel <= 1e-6);
            free(h1);
            free(h2);
        }
        gr_session_destroy(s);
        gr_plan_destroy(p);
    }
    /* out-of-range rows (negative, == rows, far past) are skipped, as in the reference */
    const char *oob =
        "{\"name\": \"oob\", \"buffers\": ["
        "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [4, 16], \"init\": \"normal\"},"
        "{\"name\": \"t0\", \"dtype\": \"fp32\", \"shape\": [10, 16], \"init\": \"normal\"},"
        "{\"name\": \"t1\", \"dtype\": \"fp32\", \"shape\": [3, 16], \"init\": \"normal\"},"
        "{\"name\": \"i0\", \"dtype\": \"int32\", \"shape\": [4, 2], \"init\": \"host\"},"
        "{\"name\": \"i1\", \"dtype\": \"int32\", \"shape\": [4, 2], \"init\": \"host\"},"
        "{\"name\": \"R\", \"dtype\": \"fp32\", \"shape\": [4, 19]}], \"outputs\": [\"R\"], \"ops\": ["
        "{\"kernel\": \"embedding_interaction\", \"inputs\": [\"x\", \"t0\", \"t1\", \"i0\", \"i1\"], \"outputs\": [\"R\"]}]}";
    static const int32_t i0[] = {0, 9, -1, 10, 5, 2000000000, 3, 3};
    static const int32_t i1[] = {2, -7, 3, 0, 1, 1, -2147483647 - 1, 2};
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = plan_for_device(oob, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (int b = 0; b < p->nbufs; b++) {
        if (!strcmp(p->bufs[b].name, "i0")) p->bufs[b].host_data = i0;
        if (!strcmp(p->bufs[b].name, "i1")) p->bufs[b].host_data = i1;
    }
    int ok = verify(p, 0, NULL) && verify(p, 1, NULL);
    if (!ok) fprintf(stderr, "\n    failed: embedding_interaction out-of-range rows");
    CU_ASSERT_TRUE(ok);
    gr_plan_destroy(p);
}

/* Every variant through the run driver: reference, eager, graph, graph == eager, later variants
 * against the first, and timing (a few steps). */
#define NVAR 6
static const char *const variants[NVAR] = {"unfused",       "fused",      "fused_tbe",
                                           "fused_2stream", "fused_tf32", "fused_tf32x3"};

static void run_variants(const char *const *sets, int nsets, int pdl, const char *label) {
    gr_plan *plans[NVAR];
    for (int v = 0; v < NVAR; v++) {
        plans[v] = dlrm_for_device(variants[v], sets, nsets);
        CU_ASSERT_PTR_NOT_NULL_FATAL(plans[v]);
    }
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_workload_load_file(gr_test_src("workloads/dlrm_small.json"), &wl, &e), GR_OK);
    gr_run_opts o;
    gr_run_opts_default(&o);
    o.iters = 20;
    o.batches = 2;
    o.progress = 0;
    o.bandwidth = 0;
    o.pdl = pdl;
    gr_run_report *r = gr_run_report_create(wl, &info, &o);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    gr_status st = gr_run_plans((const gr_plan *const *)plans, NVAR, r, &e);
    if (st != GR_OK) fprintf(stderr, "\n    %s: %s", label, e.msg);
    CU_ASSERT_EQUAL(st, GR_OK);
    CU_ASSERT_EQUAL(r->nv, NVAR);
    for (int v = 0; v < r->nv; v++) {
        const gr_variant_run *vr = &r->v[v];
        if (!vr->checks.verified) {
            fprintf(stderr, "\n    %s %s not verified:", label, variants[v]);
            for (int c = 0; c < vr->checks.n; c++)
                if (!vr->checks.v[c].passed)
                    fprintf(stderr, " %s %s rel %.2e;", vr->checks.v[c].buffer, vr->checks.v[c].what, vr->checks.v[c].rel_l2);
        }
        CU_ASSERT_TRUE(vr->checks.verified);
        CU_ASSERT_TRUE(vr->captured && vr->timed);
        int vs_ref = 0, vs_eager = 0, vs_first = 0;
        for (int c = 0; c < vr->checks.n; c++) {
            vs_ref += strstr(vr->checks.v[c].what, "vs ref") != NULL;
            vs_eager += strstr(vr->checks.v[c].what, "graph vs eager") != NULL;
            vs_first += strstr(vr->checks.v[c].what, "vs unfused") != NULL;
        }
        CU_ASSERT_EQUAL(vs_ref, 6);   /* bot, R, y: eager and graph */
        CU_ASSERT_EQUAL(vs_eager, 3);
        CU_ASSERT_EQUAL(vs_first, v == 0 ? 0 : 3);
        if (!strncmp(variants[v], "fused_tf32", 10)) { /* the error TF32 brings, for the log */
            printf("\n    %s %s rel L2 vs ref:", label, variants[v]);
            for (int c = 0; c < vr->checks.n; c++)
                if (strstr(vr->checks.v[c].what, "graph vs ref"))
                    printf(" %s %.1e (rtol %.0e);", vr->checks.v[c].buffer, vr->checks.v[c].rel_l2, vr->checks.v[c].rtol);
        }
    }
    gr_run_report_destroy(r);
    for (int v = 0; v < NVAR; v++)
        gr_plan_destroy(plans[v]);
    gr_workload_destroy(wl);
}

static void test_dlrm_variants(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *b1[] = {"B=1", "rows_cap=1000"};
    const char *b7[] = {"B=7", "rows_cap=1000"};
    const char *b128[] = {"B=128", "rows_cap=1000"};
    const char *b2048[] = {"B=2048", "rows_cap=1000"};
    run_variants(b1, 2, 0, "B=1");
    run_variants(b7, 2, 0, "B=7");
    run_variants(b128, 2, 0, "B=128");
    run_variants(b2048, 2, 0, "B=2048");
}

static void test_dlrm_variants_more(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *pdl[] = {"B=128", "rows_cap=1000"};
    run_variants(pdl, 2, 1, "B=128 --pdl");
    const char *lt[] = {"B=7", "rows_cap=1000", "linear_impl=lt"};
    run_variants(lt, 3, 0, "B=7 lt");
    const char *simt[] = {"B=2048", "rows_cap=1000", "linear_impl=simt"};
    run_variants(simt, 3, 1, "B=2048 simt --pdl");
    const char *bag[] = {"B=128", "rows_cap=5000", "bag=4"};
    run_variants(bag, 3, 0, "B=128 bag=4");
    /* x3_impl=auto (the tc kernel and cuBLASLt's fp32 for fused_tf32x3's wide layers): the
     * default is auto_wg, which is auto only off compute capability 9.0 */
    const char *x3auto[] = {"B=2048", "rows_cap=1000", "x3_impl=auto"};
    run_variants(x3auto, 3, 0, "B=2048 x3_impl=auto");
}

/* B = 2048 with the Linear layers on the tiled kernel (the sigmoid layer has no impl attr:
 * auto puts it on rowdot), with and without PDL, and B = 1000 (ragged tiles); every
 * variant against the reference and each other */
static void test_dlrm_variants_tiled(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *tiled[] = {"B=2048", "rows_cap=1000", "linear_impl=tiled"};
    gr_plan *p = dlrm_for_device("fused", tiled, 3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (int i = 0; i < p->nops; i++)
        if (p->ops[i].kernel && !strcmp(p->ops[i].kernel->name, "linear_act"))
            CU_ASSERT_EQUAL(p->ops[i].ip[GR_LIN_IMPL],
                            strcmp(p->ops[i].name, "top.2") ? GR_LINEAR_TILED : GR_LINEAR_RD);
    gr_plan_destroy(p);
    run_variants(tiled, 3, 0, "B=2048 tiled");
    run_variants(tiled, 3, 1, "B=2048 tiled --pdl");
    const char *odd[] = {"B=1000", "rows_cap=1000", "linear_impl=tiled"};
    run_variants(odd, 3, 0, "B=1000 tiled");
}

/* fused_tf32x3 at B = 2048 and 1000 with every Linear layer that has an impl attr on the tc kernel
 * (x3_impl=tc: the narrow bot.2 and bot.3 take 32 x 32 tiles too), at the workload's fp32
 * tolerances, with and without PDL. */
static void test_dlrm_tc(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    static const char *const bs[] = {"B=2048", "B=1000"};
    static const char *const vs[] = {"fused_tf32x3"};
    for (int v = 0; v < 1; v++)
        for (int b = 0; b < 2; b++) {
            const char *sets[] = {bs[b], "rows_cap=1000", "x3_impl=tc"};
            gr_plan *p = dlrm_for_device(vs[v], sets, 3);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            for (int i = 0; i < p->nops; i++)
                if (p->ops[i].kernel && !strcmp(p->ops[i].kernel->name, "linear_act"))
                    CU_ASSERT_EQUAL(p->ops[i].ip[GR_LIN_IMPL],
                                    strcmp(p->ops[i].name, "top.2") ? GR_LINEAR_TC : GR_LINEAR_RD);
            for (int pdl = 0; pdl < 2; pdl++) {
                int ok = verify(p, pdl, NULL);
                if (!ok) fprintf(stderr, "\n    failed: %s %s tc pdl %d", vs[v], bs[b], pdl);
                CU_ASSERT_TRUE(ok);
            }
            gr_plan_destroy(p);
        }
}

/* fused_tf32x3 at B = 2048 and 1000 with every Linear layer that has
 * an impl attr on the wg kernel (x3_impl=wg: bot.0's K = 13, the narrow bot.2 and bot.3 too), at
 * the workload's fp32 tolerances, with and without PDL; and with x3_impl=auto_wg (bot.1, top.0
 * and top.1 there, the others as auto). */
static void test_dlrm_wg(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    if (!wg_device()) return;
    static const char *const bs[] = {"B=2048", "B=1000"};
    static const char *const vs[] = {"fused_tf32x3"};
    static const char *const impls[] = {"x3_impl=wg", "x3_impl=auto_wg"};
    for (int v = 0; v < 1; v++)
        for (int b = 0; b < 2; b++)
            for (int im = 0; im < 2; im++) {
                const char *sets[] = {bs[b], "rows_cap=1000", impls[im]};
                gr_plan *p = dlrm_for_device(vs[v], sets, 3);
                CU_ASSERT_PTR_NOT_NULL_FATAL(p);
                int nwg = 0;
                for (int i = 0; i < p->nops; i++)
                    if (p->ops[i].kernel && !strcmp(p->ops[i].kernel->name, "linear_act"))
                        nwg += p->ops[i].ip[GR_LIN_IMPL] == GR_LINEAR_WG;
                /* wg: every layer but top.2; auto_wg: bot.1, top.0, top.1 */
                CU_ASSERT_EQUAL(nwg, im ? 3 : 6);
                for (int pdl = 0; pdl < 2; pdl++) {
                    int ok = verify(p, pdl, NULL);
                    if (!ok)
                        fprintf(stderr, "\n    failed: %s %s %s pdl %d", vs[v], bs[b], impls[im],
                                pdl);
                    CU_ASSERT_TRUE(ok);
                }
                gr_plan_destroy(p);
            }
}

static void test_dlrm_default_cap(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    /* B = 128 with the default 1M-row cap (357 MB of tables): the reference stays fast */
    gr_plan *p = dlrm_for_device("fused", NULL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_session *s = NULL;
    CU_ASSERT_TRUE(verify(p, 0, &s));
    if (s) printf("\n    fused B=128 rows_cap=1e6: CPU reference %.0f ms", s->reference_ms);
    CU_ASSERT_TRUE(s && s->reference_ms < 10000);
    gr_session_destroy(s);
    gr_plan_destroy(p);
}

/* Roots and the longest chain of kernel nodes in a captured graph. */
static int graph_shape(const gr_session *s, size_t *roots, int *depth) {
    cudaGraph_t g = (cudaGraph_t)s->graph.graph;
    size_t n = 0, ne = 0;
    if (cudaGraphGetNodes(g, NULL, &n) != cudaSuccess || cudaGraphGetRootNodes(g, NULL, roots) != cudaSuccess ||
        cudaGraphGetEdges(g, NULL, NULL, NULL, &ne) != cudaSuccess)
        return 0;
    cudaGraphNode_t *nodes = calloc(n + 1, sizeof(*nodes)), *from = calloc(ne + 1, sizeof(*from)),
                    *to = calloc(ne + 1, sizeof(*to));
    cudaGraphEdgeData *ed = calloc(ne + 1, sizeof(*ed));
    int *d = calloc(n + 1, sizeof(int)), ok = 0;
    if (nodes && from && to && ed && d && cudaGraphGetNodes(g, nodes, &n) == cudaSuccess &&
        cudaGraphGetEdges(g, from, to, ed, &ne) == cudaSuccess) {
        int *kern = calloc(n + 1, sizeof(int));
        for (size_t i = 0; kern && i < n; i++) {
            enum cudaGraphNodeType t;
            kern[i] = cudaGraphNodeGetType(nodes[i], &t) == cudaSuccess && t == cudaGraphNodeTypeKernel;
            d[i] = kern[i];
        }
        /* relax n times: depth[to] = max(depth[from] + kernel(to)) */
        for (size_t it = 0; kern && it < n; it++)
            for (size_t k = 0; k < ne; k++) {
                size_t a = n, b = n;
                for (size_t i = 0; i < n; i++) {
                    if (nodes[i] == from[k]) a = i;
                    if (nodes[i] == to[k]) b = i;
                }
                if (a < n && b < n && d[a] + kern[b] > d[b]) d[b] = d[a] + kern[b];
            }
        *depth = 0;
        for (size_t i = 0; i < n; i++)
            if (d[i] > *depth) *depth = d[i];
        ok = kern != NULL;
        free(kern);
    }
    free(nodes);
    free(from);
    free(to);
    free(ed);
    free(d);
    return ok;
}

static void test_dlrm_2stream_branches(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *sets[] = {"B=128", "rows_cap=1000", "linear_impl=simt"};
    /* fused_tbe: one chain of 9 kernels; fused_2stream: TBE is a second root beside the bottom
     * MLP, so the longest chain is 8 (4 bottom layers, interaction, 3 top layers); fused: the
     * lookup is inside the interaction, one chain of 8 */
    const char *vs[] = {"fused_tbe", "fused_2stream", "fused"};
    const size_t want_roots[] = {1, 2, 1};
    const int want_nodes[] = {9, 9, 8}, want_depth[] = {9, 8, 8};
    for (int pdl = 0; pdl < 2; pdl++) {
        for (int v = 0; v < 3; v++) {
            size_t roots = 0;
            int depth = 0, nodes = 0;
            gr_plan *p = dlrm_for_device(vs[v], sets, 3);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            gr_session *s = NULL;
            CU_ASSERT_TRUE(verify(p, pdl, &s));
            CU_ASSERT_PTR_NOT_NULL_FATAL(s);
            nodes = s->graph.kernel_nodes;
            CU_ASSERT_TRUE(graph_shape(s, &roots, &depth));
            if (roots != want_roots[v] || depth != want_depth[v] || nodes != want_nodes[v])
                fprintf(stderr, "\n    pdl %d %s: %d kernel nodes, %zu roots, depth %d; want %d, %zu, %d", pdl,
                        vs[v], nodes, roots, depth, want_nodes[v], want_roots[v], want_depth[v]);
            CU_ASSERT_EQUAL(nodes, want_nodes[v]);
            CU_ASSERT_EQUAL(roots, want_roots[v]);
            CU_ASSERT_EQUAL(depth, want_depth[v]);
            gr_session_destroy(s);
            gr_plan_destroy(p);
        }
    }
}

/* ---------- --input end to end ---------- */

static size_t tsv_line(int r, char *out, size_t size) {
    size_t o = (size_t)snprintf(out, size, "%d", (r * 13) % 3 == 0);
    for (int i = 1; i <= 13; i++) {
        if ((r + i) % 6 == 0) o += (size_t)snprintf(out + o, size - o, "\t");
        else o += (size_t)snprintf(out + o, size - o, "\t%d", (r * 31 + i * 7) % 200 - 5);
    }
    for (int j = 1; j <= 26; j++) {
        if ((r * 3 + j) % 11 == 0) o += (size_t)snprintf(out + o, size - o, "\t");
        else o += (size_t)snprintf(out + o, size - o, "\t%08x", (unsigned)r * 2246822519u + (unsigned)j * 3266489917u);
    }
    o += (size_t)snprintf(out + o, size - o, r % 10 == 3 ? "\r\n" : "\n");
    return o;
}


/* graphrun ARGS from the source tree, output captured (tests/test_main.c) */
static int run_cli(const char *args, char *out, size_t size) {
    return gr_test_graphrun(args, out, size);
}

static char out[1 << 20];

static int json_all_verified(const char *path, int want_variants) {
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) return 0;
    json_t *vars = json_object_get(root, "variants");
    int ok = json_is_array(vars) && (int)json_array_size(vars) == want_variants;
    size_t i;
    json_t *v;
    json_array_foreach(vars, i, v) ok = ok && json_is_true(json_object_get(v, "verified"));
    json_decref(root);
    return ok;
}

static void test_dlrm_input(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    /* 61 lines, line 20 malformed (bad hex), some CRLF, empty and negative fields */
    size_t cap = 61 * 512, o = 0;
    char *text = malloc(cap);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    for (int r = 1; r <= 61; r++) {
        size_t n = tsv_line(r, text + o, cap - o);
        if (r == 20) memcpy(strrchr(text + o, '\t') + 1, "xyz", 3);
        o += n;
    }
    const char *path = gr_test_tmpfile(".tsv", text, o);
    free(text);
    /* in process: the device buffers hold exactly the file's preprocessed rows */
    gr_error e;
    gr_error_clear(&e);
    gr_criteo_data *d = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_criteo_read(path, 0, 0, 1, &d, &e), GR_OK);
    CU_ASSERT_EQUAL(d->rows, 60);
    CU_ASSERT_EQUAL(d->skipped, 1);
    const char *sets[] = {"B=60", "rows_cap=1000"};
    gr_plan *p = dlrm_for_device("fused_2stream", sets, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_criteo_binding *bd = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_criteo_bind(p, d, &bd, &e), GR_OK);
    gr_session *s = NULL;
    CU_ASSERT_TRUE(verify(p, 0, &s));
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(gr_devstate_init_buffers(s->dev, &e), GR_OK);
    for (int b = 0; b < p->nbufs; b++) {
        const gr_buffer *buf = &p->bufs[b];
        if (strcmp(buf->name, "dense") && strcmp(buf->name, "idx.2") && strcmp(buf->name, "idx.8")) continue;
        void *host = malloc(buf->bytes);
        CU_ASSERT_EQUAL(gr_devstate_download(s->dev, b, host, &e), GR_OK);
        CU_ASSERT_EQUAL(memcmp(host, buf->host_data, buf->bytes), 0);
        free(host);
    }
    gr_session_destroy(s);
    gr_criteo_binding_destroy(bd);
    gr_plan_destroy(p);
    gr_criteo_destroy(d);
    /* through the CLI: every variant verified, B = the 60 good rows */
    char json_out[300], args[1200];
    snprintf(json_out, sizeof(json_out), "/tmp/gr_test_%d_dlrm_input.json", (int)getpid());
    snprintf(args, sizeof(args),
             "run workloads/dlrm_small.json --input %s --skip-bad-lines --set rows_cap=1000 --iters 20 "
             "--batches 2 --no-bandwidth --quiet --json %s",
             path, json_out);
    int rc = run_cli(args, out, sizeof(out));
    if (rc != 0) fprintf(stderr, "\n    %s", out);
    CU_ASSERT_EQUAL(rc, 0);
    GR_ASSERT_CONTAINS(out, ": 60 rows (B) from 61 lines, 1 malformed line skipped");
    GR_ASSERT_CONTAINS(out, ":20:");
    CU_ASSERT_TRUE(json_all_verified(json_out, NVAR));
    /* without --skip-bad-lines the run stops at line 20, exit 2, before any GPU work */
    snprintf(args, sizeof(args), "run workloads/dlrm_small.json --input %s", path);
    CU_ASSERT_EQUAL(run_cli(args, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, ":20:");
    GR_ASSERT_CONTAINS(out, "is not 8 hex digits");
    /* the 200-row Kaggle sample, when the checkout has it */
    const char *sample = gr_test_src("tests/data/criteo_sample.tsv");
    if (access(sample, R_OK) == 0) {
        snprintf(args, sizeof(args),
                 "run workloads/dlrm_small.json --input %s --set B=128 --iters 20 --batches 2 "
                 "--no-bandwidth --quiet --json %s",
                 sample, json_out);
        rc = run_cli(args, out, sizeof(out));
        if (rc != 0) fprintf(stderr, "\n    %s", out);
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT_TRUE(json_all_verified(json_out, NVAR));
    }
    unlink(json_out);
}

/* The kernel tests in three suites, so that each fits CTest's 10-minute timeout (the one suite did
 * not on the H200, 2026-12-03) and `ctest -j` runs them side by side. */
static CU_TestInfo gpu_dlrm_kernel_tests[] = {
    {"embedding bags vs reference", test_embedding_kernels},
    {"linear_act (simt, lt) vs reference", test_linear_kernels},
    {"linear_act (tiled) vs reference", test_linear_tiled},
    {"linear_act rowdot vs reference", test_linear_small},
    {"interaction fused and unfused vs reference", test_interaction_kernels},
    {"embedding_interaction vs reference and the chain", test_emb_interaction_kernels},
    CU_TEST_INFO_NULL};
static CU_TestInfo gpu_dlrm_tc_tests[] = {
    {"linear_act (tc: tf32x3, tf32) vs reference", test_linear_tc},
    {"linear_act (tc) in every configuration", test_linear_tc_configs},
    CU_TEST_INFO_NULL};
static CU_TestInfo gpu_dlrm_wg_tests[] = {
    {"linear_act (wg: tf32x3, tf32) vs reference, every configuration", test_linear_wg},
    {"linear_act (wg bulk forms: w64b, w64b2) vs reference", test_linear_wg_bulk},
    CU_TEST_INFO_NULL};
static CU_TestInfo gpu_dlrm_tests[] = {
    {"variants at B = 1, 7, 128, 2048", test_dlrm_variants},
    {"variants with PDL, both impls, bags", test_dlrm_variants_more},
    {"variants at B = 2048 and 1000, tiled, with PDL", test_dlrm_variants_tiled},
    {"fused_tf32x3 with every layer on tc", test_dlrm_tc},
    {"fused_tf32x3 with every layer on wg, and auto_wg", test_dlrm_wg},
    {"default rows cap at B = 128", test_dlrm_default_cap},
    {"2-stream graph has a parallel branch", test_dlrm_2stream_branches},
    {"--input end to end", test_dlrm_input},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_gpu_dlrm_suites[] = {{"gpu_dlrm_kernels", gpu_dlrm_kernel_tests, 1},
                                            {"gpu_dlrm_tc", gpu_dlrm_tc_tests, 1},
                                            {"gpu_dlrm_wg", gpu_dlrm_wg_tests, 1},
                                            {"gpu_dlrm", gpu_dlrm_tests, 1},
                                            {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_gpu_dlrm_suites)
