/* Kernel suites without a GPU: byte/flop accounting of the bundled workloads and the CPU
 * references against hand-computed values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/hoststate.h"
#include "core/workload.h"
#include "kernels/pointwise.h"
#include "kernels/registry.h"
#include "tests.h"

static gr_plan *bundled(const char *file, const char *variant, const char *set1, const char *set2) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(gr_test_src(file), &wl, &e) != GR_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return NULL;
    }
    if (set1) gr_workload_set(wl, set1, &e);
    if (set2) gr_workload_set(wl, set2, &e);
    gr_plan *p = NULL;
    gr_target t = gr_target_default();
    if (gr_plan_resolve(wl, variant, &t, gr_kernel_find, gr_kernel_all_names, &p, &e) != GR_OK)
        fprintf(stderr, "%s\n", e.msg);
    gr_workload_destroy(wl);
    return p;
}

static void test_pointwise_accounting(void) {
    /* n = 1e8 fp32: unfused reads a,b (800 MB) + s,c (800 MB) + m (400 MB), writes s, m, y
     * (1200 MB): 3.2 GB; fused reads 1.2 GB and writes 0.4 GB: 1.6 GB. 2x. */
    gr_plan *u = bundled("workloads/pointwise_fusion.json", "unfused", NULL, NULL);
    gr_plan *f = bundled("workloads/pointwise_fusion.json", "fused", NULL, NULL);
    gr_plan *v = bundled("workloads/pointwise_fusion.json", "fused_vec", NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_DOUBLE_EQUAL(u->bytes_read, 2.0e9, 1);
    CU_ASSERT_DOUBLE_EQUAL(u->bytes_written, 1.2e9, 1);
    CU_ASSERT_DOUBLE_EQUAL(f->bytes_read, 1.2e9, 1);
    CU_ASSERT_DOUBLE_EQUAL(f->bytes_written, 0.4e9, 1);
    CU_ASSERT_DOUBLE_EQUAL(v->bytes_read + v->bytes_written, 1.6e9, 1);
    CU_ASSERT_EQUAL(u->kernels, 3);
    CU_ASSERT_EQUAL(f->kernels, 1);
    CU_ASSERT_EQUAL(u->intermediates, 2);
    CU_ASSERT_DOUBLE_EQUAL(u->intermediate_bytes, 1.6e9, 1);
    CU_ASSERT_EQUAL(f->intermediates, 0);
    CU_ASSERT_DOUBLE_EQUAL(u->used_bytes, 2.4e9, 1);
    CU_ASSERT_DOUBLE_EQUAL(f->used_bytes, 1.6e9, 1);
    /* launch dims: grid-stride capped at 8 blocks/SM; vec handles 4 floats per thread */
    CU_ASSERT_EQUAL(u->ops[0].grid[0], 132 * 8);
    CU_ASSERT_EQUAL(u->ops[0].block[0], 256);
    gr_plan_destroy(u);
    gr_plan_destroy(f);
    gr_plan_destroy(v);
    /* bf16 halves the bytes; small n sizes the grid to the work */
    gr_plan *b = bundled("workloads/pointwise_fusion.json", "fused_vec", "dtype=bf16", "n=4096");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_DOUBLE_EQUAL(b->bytes_read, 3 * 4096 * 2, 0);
    /* the tile form (the default): 4096 / (256 threads x 2 vectors x 8 bf16) = one block */
    CU_ASSERT_EQUAL(b->ops[0].grid[0], 1);
    gr_plan_destroy(b);
}

static void test_launch_bound_accounting(void) {
    gr_plan *p = bundled("workloads/launch_bound.json", "tiny", NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->nops, 1000);
    CU_ASSERT_EQUAL(p->kernels, 1000);
    CU_ASSERT_EQUAL(p->ops[0].grid[0], 1);
    CU_ASSERT_STRING_EQUAL(p->ops[999].name, "tiny.999");
    CU_ASSERT_DOUBLE_EQUAL(p->bytes_read, 1000.0 * 256 * 4, 0);
    gr_plan_destroy(p);
    p = bundled("workloads/launch_bound.json", "tiny", "K=10", "n=100000");
    CU_ASSERT_PTR_NULL(p); /* n max is 65536 */
}

/* Run a plan's reference on host-filled inputs. */
static gr_hoststate *host_run(gr_plan *p) {
    gr_error e;
    gr_error_clear(&e);
    gr_hoststate *hs = NULL;
    if (gr_hoststate_create(p, &hs, &e) != GR_OK) return NULL;
    if (gr_hoststate_fill(hs, &e) != GR_OK || gr_reference_step(p, hs, &e) != GR_OK) {
        fprintf(stderr, "%s\n", e.msg);
        gr_hoststate_destroy(hs);
        return NULL;
    }
    return hs;
}

static int find(const gr_plan *p, const char *name) {
    for (int b = 0; b < p->nbufs; b++)
        if (!strcmp(p->bufs[b].name, name)) return b;
    return -1;
}

static void test_reference_pointwise_by_hand(void) {
    const char *json =
        "{\"name\": \"t\", \"buffers\": ["
        "{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [5], \"init\": {\"kind\": \"iota\", \"start\": -2, \"step\": 1}},"
        "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [5], \"init\": {\"kind\": \"const\", \"value\": 0.5}},"
        "{\"name\": \"c\", \"dtype\": \"fp32\", \"shape\": [5], \"init\": {\"kind\": \"const\", \"value\": 2}},"
        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [5]}, {\"name\": \"g\", \"dtype\": \"fp32\", \"shape\": [5]},"
        "{\"name\": \"s\", \"dtype\": \"fp32\", \"shape\": [5]}], \"outputs\": [\"y\", \"g\", \"s\"], \"ops\": ["
        "{\"kernel\": \"add_mul_act\", \"inputs\": [\"a\", \"b\", \"c\"], \"outputs\": [\"y\"], \"attrs\": {\"act\": \"relu\"}},"
        "{\"kernel\": \"gelu\", \"inputs\": [\"a\"], \"outputs\": [\"g\"]},"
        "{\"kernel\": \"silu\", \"inputs\": [\"a\"], \"outputs\": [\"s\"]}]}";
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(json, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_hoststate *hs = host_run(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
    const float *y = hs->hptr[find(p, "y")], *g = hs->hptr[find(p, "g")], *s = hs->hptr[find(p, "s")];
    /* a = -2..2: (a + 0.5) * 2 = -3, -1, 1, 3, 5 -> relu 0, 0, 1, 3, 5 */
    float want[5] = {0, 0, 1, 3, 5};
    for (int i = 0; i < 5; i++) CU_ASSERT_DOUBLE_EQUAL(y[i], want[i], 0);
    /* GELU(1) = 0.8413447; GELU(-2) = -0.0455003; SiLU(2) = 1.7615942 */
    CU_ASSERT_DOUBLE_EQUAL(g[3], 0.8413447, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(g[0], -0.0455003, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(g[2], 0.0, 0);
    CU_ASSERT_DOUBLE_EQUAL(s[4], 1.7615942, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(s[0], -0.2384058, 1e-6);
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
}

static void test_reference_variants_agree(void) {
    /* unfused, fused and fused_vec compute the same function on the same inputs */
    const char *sets[] = {"act=relu", "act=gelu", "act=silu"};
    for (int k = 0; k < 3; k++) {
        gr_plan *u = bundled("workloads/pointwise_fusion.json", "unfused", "n=1001", sets[k]);
        gr_plan *v = bundled("workloads/pointwise_fusion.json", "fused_vec", "n=1001", sets[k]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(u);
        CU_ASSERT_PTR_NOT_NULL_FATAL(v);
        gr_hoststate *hu = host_run(u), *hv = host_run(v);
        CU_ASSERT_PTR_NOT_NULL_FATAL(hu);
        CU_ASSERT_PTR_NOT_NULL_FATAL(hv);
        const float *yu = hu->hptr[find(u, "y")], *yv = hv->hptr[find(v, "y")];
        int nonzero = 0;
        for (int i = 0; i < 1001; i++) {
            CU_ASSERT_DOUBLE_EQUAL(yu[i], yv[i], 1e-6 * (1 + fabs(yv[i])));
            nonzero += yv[i] != 0;
        }
        CU_ASSERT_TRUE(nonzero > 300); /* never test on zeros */
        gr_hoststate_destroy(hu);
        gr_hoststate_destroy(hv);
        gr_plan_destroy(u);
        gr_plan_destroy(v);
    }
}

static void test_reference_launch_bound_chain(void) {
    gr_plan *p = bundled("workloads/launch_bound.json", "tiny", "K=37", "n=13");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_error e;
    gr_error_clear(&e);
    gr_hoststate *init = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_create(p, &init, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_fill(init, &e), GR_OK);
    gr_hoststate *hs = host_run(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
    const float *x0 = init->hptr[0], *x = hs->hptr[0];
    for (int i = 0; i < 13; i++) {
        float want = x0[i];
        for (int k = 0; k < 37; k++) want += 1.0f;
        CU_ASSERT_EQUAL(x[i], want);
        CU_ASSERT_NOT_EQUAL(x0[i], 0.0f);
    }
    gr_hoststate_destroy(init);
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
}

static void test_host_inits(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_init in = {GR_INIT_NORMAL, 0.0, 1.0, 12345, ""};
    enum { N = 100000 };
    float *v = malloc(N * sizeof(float));
    CU_ASSERT_EQUAL_FATAL(gr_fill_host(v, GR_FP32, N, &in, &e), GR_OK);
    double sum = 0, sq = 0;
    for (int i = 0; i < N; i++) {
        sum += v[i];
        sq += (double)v[i] * v[i];
    }
    CU_ASSERT_DOUBLE_EQUAL(sum / N, 0.0, 0.02);
    CU_ASSERT_DOUBLE_EQUAL(sq / N, 1.0, 0.02);
    in.kind = GR_INIT_UNIFORM;
    in.a = -1;
    in.b = 3;
    gr_fill_host(v, GR_FP32, N, &in, &e);
    float mn = 1e9f, mx = -1e9f;
    for (int i = 0; i < N; i++) {
        if (v[i] < mn) mn = v[i];
        if (v[i] > mx) mx = v[i];
    }
    CU_ASSERT_TRUE(mn >= -1 && mn < -0.99);
    CU_ASSERT_TRUE(mx < 3 && mx > 2.99);
    free(v);
    /* zipf: in range, skewed (the hottest row is far above average), ranks scattered */
    int32_t *z = malloc(N * sizeof(int32_t));
    gr_init zi = {GR_INIT_ZIPF, 1.05, 1000.0, 99, ""};
    CU_ASSERT_EQUAL_FATAL(gr_fill_host(z, GR_INT32, N, &zi, &e), GR_OK);
    int *count = calloc(1000, sizeof(int));
    int bad = 0;
    for (int i = 0; i < N; i++) {
        if (z[i] < 0 || z[i] >= 1000) bad++;
        else count[z[i]]++;
    }
    CU_ASSERT_EQUAL(bad, 0);
    int hot = 0, hot_row = 0, used = 0;
    for (int r = 0; r < 1000; r++) {
        if (count[r] > hot) {
            hot = count[r];
            hot_row = r;
        }
        used += count[r] > 0;
    }
    CU_ASSERT_TRUE(hot > 20 * (N / 1000));
    CU_ASSERT_TRUE(used > 500);
    CU_ASSERT_NOT_EQUAL(hot_row, 0); /* scattered by the permutation */
    free(count);
    free(z);
    /* randint */
    int64_t r[1000];
    gr_init ri = {GR_INIT_RANDINT, 5, 9, 1, ""};
    gr_fill_host(r, GR_INT64, 1000, &ri, &e);
    int seen[4] = {0};
    for (int i = 0; i < 1000; i++) {
        CU_ASSERT_TRUE(r[i] >= 5 && r[i] < 9);
        if (r[i] >= 5 && r[i] < 9) seen[r[i] - 5] = 1;
    }
    CU_ASSERT_TRUE(seen[0] && seen[1] && seen[2] && seen[3]);
}

static void test_registry(void) {
    CU_ASSERT_PTR_NOT_NULL(gr_kernel_find("add_mul_act_vec"));
    CU_ASSERT_PTR_NULL(gr_kernel_find("nope"));
    int n = 0;
    for (const gr_kernel_def *const *k = gr_kernel_all(); *k; k++) {
        n++;
        CU_ASSERT_PTR_NOT_NULL((*k)->check);
        CU_ASSERT_PTR_NOT_NULL((*k)->launch);
        CU_ASSERT_PTR_NOT_NULL((*k)->reference);
        CU_ASSERT_PTR_NOT_NULL((*k)->summary);
        CU_ASSERT_PTR_EQUAL(gr_kernel_find((*k)->name), *k); /* names are unique */
    }
    CU_ASSERT_TRUE(n >= 10);
}

/* add_mul_act_vec's forms (attrs form and vecs, pointwise_fusion's params of those names): each
 * resolves to its launch dims and form string with the bytes unchanged; a choice that is not one
 * is refused naming the attr and listing the choices; a tile grid past 2^31 - 1 blocks names the
 * fix. */
static void test_pointwise_forms(void) {
    static const struct {
        const char *set1, *set2, *set3;
        unsigned grid, block;
        int form, vecs;
        const char *str;
    } cases[] = {
        /* the default since run 85: tile, auto = 2 vectors (1e8 / 2048 = 48828.1 blocks) */
        {NULL, NULL, NULL, 48829, 256, GR_PW_TILE, 2, "tile 2048, 2 vec"},
        {"form=grid_stride", NULL, NULL, 132 * 8, 256, GR_PW_GRID_STRIDE, 4, "grid_stride, 4 vec, cs"},
        {"form=grid_stride", "vecs=2", NULL, 132 * 8, 256, GR_PW_GRID_STRIDE, 2, "grid_stride, 2 vec, cs"},
        /* 1e8 / (256 threads x 2 vectors x 4 floats) = 48828.1: 48829 blocks */
        {"form=tile", NULL, NULL, 48829, 256, GR_PW_TILE, 2, "tile 2048, 2 vec"},
        /* Inductor's config for n = 1e8: XBLOCK 1024, 4 warps */
        {"form=tile", "threads=128", NULL, 97657, 128, GR_PW_TILE, 2, "tile 1024, 2 vec"},
        {"form=tile_cs", "threads=128", "vecs=4", 48829, 128, GR_PW_TILE_CS, 4, "tile 2048, 4 vec, cs"},
        {"form=tile", "vecs=1", "n=1", 1, 256, GR_PW_TILE, 1, "tile 1024, 1 vec"},
        /* bf16: 8 elements a vector; 4097 = one full tile of 4096 and one element */
        {"form=tile", "dtype=bf16", "n=4097", 2, 256, GR_PW_TILE, 2, "tile 4096, 2 vec"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gr_error e;
        gr_error_clear(&e);
        gr_workload *wl = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_workload_load_file(gr_test_src("workloads/pointwise_fusion.json"), &wl, &e), GR_OK);
        const char *sets[] = {cases[i].set1, cases[i].set2, cases[i].set3};
        for (int k = 0; k < 3; k++)
            if (sets[k]) CU_ASSERT_EQUAL(gr_workload_set(wl, sets[k], &e), GR_OK);
        gr_plan *p = NULL;
        gr_target t = gr_target_default();
        CU_ASSERT_EQUAL(gr_plan_resolve(wl, "fused_vec", &t, gr_kernel_find, gr_kernel_all_names, &p, &e), GR_OK);
        gr_workload_destroy(wl);
        if (!p) fprintf(stderr, "\n    case %zu: %s", i, e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        const gr_op *o = &p->ops[0];
        CU_ASSERT_EQUAL(o->grid[0], cases[i].grid);
        CU_ASSERT_EQUAL(o->block[0], cases[i].block);
        CU_ASSERT_EQUAL(o->ip[2], cases[i].form);
        CU_ASSERT_EQUAL(o->ip[3], cases[i].vecs);
        CU_ASSERT_STRING_EQUAL(o->form, cases[i].str);
        /* the form changes the launch, not the bytes: 16 (fp32) or 8 (bf16) bytes per element */
        double per = strstr(p->params, "bf16") ? 8 : 16;
        CU_ASSERT_DOUBLE_EQUAL(p->bytes_read + p->bytes_written, per * (double)o->ip[0], 0.5);
        gr_plan_destroy(p);
    }
    /* attrs named on the op itself */
    static const struct {
        const char *attrs, *msg;
    } bad[] = {
        {"\"form\": \"tiles\"", "ops[0].attrs.form: \"tiles\" is not one of: grid_stride, tile, tile_cs"},
        {"\"vecs\": \"3\"", "ops[0].attrs.vecs: \"3\" is not one of: auto, 1, 2, 4"},
        {"\"vecs\": 2", "ops[0].attrs.vecs: expected a string"},
        {"\"form\": \"tile\", \"threads\": 32, \"vecs\": \"1\"",
         "ops[0]: kernel \"add_mul_act_vec\": form tile needs 2343750000 blocks of 128 elements for "
         "n = 300000000000; at most 2147483647 (more threads or vecs, or form grid_stride)"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char json[1024];
        snprintf(json, sizeof(json),
                 "{\"name\": \"k\", \"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [%s]},"
                 "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [%s]}], \"outputs\": [\"y\"], \"ops\": "
                 "[{\"kernel\": \"add_mul_act_vec\", \"inputs\": [\"a\", \"a\", \"a\"], \"outputs\": [\"y\"], "
                 "\"attrs\": {%s}}]}",
                 i == 3 ? "300000000000" : "1000", i == 3 ? "300000000000" : "1000", bad[i].attrs);
        GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), bad[i].msg);
    }
}

static CU_TestInfo accounting_tests[] = {{"pointwise_fusion bytes", test_pointwise_accounting},
                                         {"add_mul_act_vec forms", test_pointwise_forms},
                                         {"launch_bound kernels", test_launch_bound_accounting},
                                         {"registry entries complete", test_registry},
                                         CU_TEST_INFO_NULL};
static CU_TestInfo reference_tests[] = {{"pointwise by hand", test_reference_pointwise_by_hand},
                                        {"variants agree", test_reference_variants_agree},
                                        {"launch_bound chain", test_reference_launch_bound_chain},
                                        {"host inits", test_host_inits},
                                        CU_TEST_INFO_NULL};

static gr_suite_def gr_kernel_suites[] = {{"accounting", accounting_tests, 0},
                                   {"reference", reference_tests, 0},
                                   {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_kernel_suites)

/* ---------- gemm (cuBLAS) ---------- */

static void test_gemm_shapes(void) {
    const char *fmt = "{\"name\": \"g\", \"buffers\": ["
                      "{\"name\": \"A\", \"dtype\": \"fp32\", \"shape\": %s, \"init\": \"normal\"},"
                      "{\"name\": \"B\", \"dtype\": \"%s\", \"shape\": %s, \"init\": \"normal\"},"
                      "{\"name\": \"Y\", \"dtype\": \"fp32\", \"shape\": %s}], \"outputs\": [\"Y\"],"
                      "\"ops\": [{\"kernel\": \"gemm\", \"inputs\": [\"A\", \"B\"], \"outputs\": [\"Y\"], \"attrs\": {%s}}]}";
    char json[1024];
    gr_error e;
    gr_error_clear(&e);
    snprintf(json, sizeof(json), fmt, "[2, 3, 4]", "fp32", "[4, 5]", "[2, 3, 5]", "");
    gr_plan *p = gr_test_plan(json, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->ops[0].ip[0], 6); /* leading dims flattened into M */
    CU_ASSERT_EQUAL(p->ops[0].ip[1], 5);
    CU_ASSERT_EQUAL(p->ops[0].ip[2], 4);
    CU_ASSERT_DOUBLE_EQUAL(p->flops, 2.0 * 6 * 5 * 4, 0);
    CU_ASSERT_EQUAL(p->library_ops, 1);
    gr_plan_destroy(p);
    snprintf(json, sizeof(json), fmt, "[3, 4]", "fp32", "[5, 4]", "[3, 5]", "\"trans_b\": true");
    p = gr_test_plan(json, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_plan_destroy(p);
    snprintf(json, sizeof(json), fmt, "[3, 4]", "fp32", "[5, 4]", "[3, 5]", "");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), "inner dims differ: A \"A\" [3, 4] has K = 4, B \"B\" [5, 4] has K = 5");
    snprintf(json, sizeof(json), fmt, "[3, 4]", "bf16", "[4, 5]", "[3, 5]", "");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), "B \"B\" is bf16 but A \"A\" is fp32");
    snprintf(json, sizeof(json), fmt, "[3, 4]", "fp32", "[4, 5]", "[3, 6]", "");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), "Y \"Y\" has shape [3, 6]; A [3, 4] x B [4, 5] gives [3, 5]");
    snprintf(json, sizeof(json), fmt, "[3, 4]", "fp32", "[2, 4, 5]", "[2, 3, 5]", "");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), "so A \"A\" must be [2, M, K]");
}

static void test_gemm_reference_by_hand(void) {
    /* A = [[1,2],[3,4]] (iota from 1), B = ones(2, 3) * 0.5 -> Y = [[1.5]*3, [3.5]*3]; then
     * batched with B^T and beta: Y2 = 2 * A B + 1 * C with C = ones */
    const char *json =
        "{\"name\": \"g\", \"buffers\": ["
        "{\"name\": \"A\", \"dtype\": \"fp32\", \"shape\": [2, 2], \"init\": {\"kind\": \"iota\", \"start\": 1}},"
        "{\"name\": \"B\", \"dtype\": \"fp32\", \"shape\": [2, 3], \"init\": {\"kind\": \"const\", \"value\": 0.5}},"
        "{\"name\": \"Bt\", \"dtype\": \"fp32\", \"shape\": [3, 2], \"init\": {\"kind\": \"iota\"}},"
        "{\"name\": \"C\", \"dtype\": \"fp32\", \"shape\": [2, 3], \"init\": \"ones\"},"
        "{\"name\": \"Y\", \"dtype\": \"fp32\", \"shape\": [2, 3]}, {\"name\": \"Y2\", \"dtype\": \"fp32\", \"shape\": [2, 3]}],"
        "\"outputs\": [\"Y\", \"Y2\"], \"ops\": [{\"kernel\": \"gemm\", \"inputs\": [\"A\", \"B\"], \"outputs\": [\"Y\"]},"
        "{\"kernel\": \"gemm\", \"inputs\": [\"A\", \"Bt\", \"C\"], \"outputs\": [\"Y2\"], \"attrs\": {\"trans_b\": true, \"alpha\": 2}}]}";
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(json, NULL, &e);
    if (!p) fprintf(stderr, "%s\n", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_hoststate *hs = host_run(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
    const float *y = hs->hptr[find(p, "Y")], *y2 = hs->hptr[find(p, "Y2")];
    float want[6] = {1.5f, 1.5f, 1.5f, 3.5f, 3.5f, 3.5f};
    for (int i = 0; i < 6; i++) CU_ASSERT_DOUBLE_EQUAL(y[i], want[i], 0);
    /* Bt = [[0,1],[2,3],[4,5]]; A Bt^T = [[2,8,14],[4,18,32]]; 2x + 1 */
    float want2[6] = {5, 17, 29, 9, 37, 65};
    for (int i = 0; i < 6; i++) CU_ASSERT_DOUBLE_EQUAL(y2[i], want2[i], 0);
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
}

static CU_TestInfo gemm_tests[] = {{"shapes", test_gemm_shapes},
                                   {"reference by hand", test_gemm_reference_by_hand},
                                   CU_TEST_INFO_NULL};
static gr_suite_def gr_gemm_suites[] = {{"gemm", gemm_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_gemm_suites)
