/* DLRM suites (CPU): the kernel family's CPU references on hand-computed values, every check
 * error (each names the op), the triangle pair mapping, launch-dim, tile-width, impl and PDL
 * prefetch choices, the accounting of dlrm_small's variants, the CPU reference of the whole
 * model at a small size against an independent naive forward pass with every variant agreeing,
 * and fused_tf32's tolerances against TF32 emulated on the CPU. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hoststate.h"
#include "core/workload.h"
#include "kernels/dlrm.h"
#include "kernels/registry.h"
#include "tests.h"

static int bidx(const gr_plan *p, const char *name) {
    for (int b = 0; b < p->nbufs; b++)
        if (!strcmp(p->bufs[b].name, name)) return b;
    return -1;
}

static const float *hbuf(const gr_plan *p, const gr_hoststate *hs, const char *name) {
    int b = bidx(p, name);
    CU_ASSERT_TRUE_FATAL(b >= 0);
    return hs->hptr[b];
}

/* A one-op workload: buffers (JSON array body), outputs, op. */
static const char *one_op(const char *bufs, const char *outputs, const char *op) {
    static char json[16384];
    snprintf(json, sizeof(json), "{\"name\": \"k\", \"buffers\": [%s], \"outputs\": [%s], \"ops\": [%s]}",
             bufs, outputs, op);
    return json;
}

/* Resolve, fill the host copies, run the references. */
static gr_hoststate *run_ref(const char *json, gr_plan **pp) {
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(json, NULL, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_hoststate *hs = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_create(p, &hs, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_fill(hs, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_reference_step(p, hs, &e), GR_OK);
    *pp = p;
    return hs;
}

static void expect_floats(const float *got, const double *want, int n, double tol) {
    for (int i = 0; i < n; i++) {
        if (fabs(got[i] - want[i]) > tol) fprintf(stderr, "\n    [%d] got %.7g want %.7g", i, got[i], want[i]);
        CU_ASSERT_DOUBLE_EQUAL(got[i], want[i], tol);
    }
}

static void test_registry_names(void) {
    /* every name of the family finds this family's definition (no other family shadows it) */
    int n = 0;
    for (const gr_kernel_def *const *k = gr_dlrm_kernels; *k; k++, n++) {
        if (gr_kernel_find((*k)->name) != *k) fprintf(stderr, "\n    \"%s\" is shadowed", (*k)->name);
        CU_ASSERT_PTR_EQUAL(gr_kernel_find((*k)->name), *k);
        CU_ASSERT_PTR_NOT_NULL((*k)->reference);
        CU_ASSERT_TRUE(((*k)->flags & GR_KF_PDL) != 0);
    }
    CU_ASSERT_EQUAL(n, 9);
}

static void test_tril_pairs(void) {
    int64_t p = 0;
    for (int i = 1; i < 70; i++)
        for (int j = 0; j < i; j++, p++) {
            int a, b;
            gr_tril_pair(p, &a, &b);
            if (a != i || b != j) fprintf(stderr, "\n    p %lld -> (%d, %d), want (%d, %d)", (long long)p, a, b, i, j);
            CU_ASSERT_TRUE(a == i && b == j);
        }
    int a, b;
    gr_tril_pair(350, &a, &b); /* the last of DLRM's 351 */
    CU_ASSERT_TRUE(a == 26 && b == 25);
    gr_tril_pair((int64_t)100000 * 99999 / 2 + 5, &a, &b);
    CU_ASSERT_TRUE(a == 100000 && b == 5);
}

static void test_embedding_reference(void) {
    /* two tables; indices given by the program: one row out of range in each bag */
    const char *bufs =
        "{\"name\": \"t0\", \"dtype\": \"fp32\", \"shape\": [3, 2], \"init\": \"iota\"},"
        "{\"name\": \"t1\", \"dtype\": \"fp32\", \"shape\": [4, 2], \"init\": {\"kind\": \"iota\", \"start\": 10}},"
        "{\"name\": \"i0\", \"dtype\": \"int32\", \"shape\": [2, 2], \"init\": \"host\"},"
        "{\"name\": \"i1\", \"dtype\": \"int32\", \"shape\": [2, 2], \"init\": \"host\"},"
        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [2, 2, 2]},"
        "{\"name\": \"ym\", \"dtype\": \"fp32\", \"shape\": [2, 2, 2]},"
        "{\"name\": \"y1\", \"dtype\": \"fp32\", \"shape\": [2, 2]}";
    char json[8192];
    snprintf(json, sizeof(json),
             "{\"name\": \"k\", \"buffers\": [%s], \"outputs\": [\"y\", \"ym\", \"y1\"], \"ops\": ["
             "{\"kernel\": \"embedding_bag_tbe\", \"inputs\": [\"t0\", \"t1\", \"i0\", \"i1\"], \"outputs\": [\"y\"]},"
             "{\"kernel\": \"embedding_bag_tbe\", \"inputs\": [\"t0\", \"t1\", \"i0\", \"i1\"], \"outputs\": [\"ym\"], \"attrs\": {\"pooling\": \"mean\"}},"
             "{\"kernel\": \"embedding_bag\", \"inputs\": [\"t1\", \"i1\"], \"outputs\": [\"y1\"]}]}",
             bufs);
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(json, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    static const int32_t i0[] = {2, 0, -1, 1}, i1[] = {3, 3, 99, 0};
    p->bufs[bidx(p, "i0")].host_data = i0;
    p->bufs[bidx(p, "i1")].host_data = i1;
    gr_hoststate *hs = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_create(p, &hs, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_fill(hs, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_reference_step(p, hs, &e), GR_OK);
    /* t0 rows (0,1) (2,3) (4,5); t1 rows (10,11) .. (16,17) */
    const double y[] = {4, 6, 32, 34, 2, 3, 10, 11};
    expect_floats(hbuf(p, hs, "y"), y, 8, 0);
    const double ym[] = {2, 3, 16, 17, 1, 1.5, 5, 5.5}; /* mean divides by bag even when a row is skipped */
    expect_floats(hbuf(p, hs, "ym"), ym, 8, 0);
    const double y1[] = {32, 34, 10, 11};
    expect_floats(hbuf(p, hs, "y1"), y1, 4, 0);
    /* accounting: rows gathered, not whole tables */
    CU_ASSERT_DOUBLE_EQUAL(p->ops[0].bytes_read, 2 * 16 + 2 * 2 * 2 * 2 * 4, 0);
    CU_ASSERT_DOUBLE_EQUAL(p->ops[0].bytes_written, 32, 0);
    CU_ASSERT_EQUAL(p->ops[0].ip[GR_EMB_VEC], 0); /* D = 2: scalar path */
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
}

static void test_small_kernel_references(void) {
    gr_plan *p;
    gr_hoststate *hs;
    hs = run_ref(one_op("{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [2, 3], \"init\": \"iota\"},"
                        "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [3], \"init\": {\"kind\": \"iota\", \"start\": 10, \"step\": 10}},"
                        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [2, 3]}",
                        "\"y\"", "{\"kernel\": \"bias_add\", \"inputs\": [\"x\", \"b\"], \"outputs\": [\"y\"]}"),
                 &p);
    const double ba[] = {10, 21, 32, 13, 24, 35};
    expect_floats(hbuf(p, hs, "y"), ba, 6, 0);
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);

    hs = run_ref(one_op("{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [3], \"init\": {\"kind\": \"iota\", \"start\": -1}},"
                        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [3]}",
                        "\"y\"", "{\"kernel\": \"sigmoid\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}"),
                 &p);
    const double sg[] = {1 / (1 + exp(1.0)), 0.5, 1 / (1 + exp(-1.0))};
    expect_floats(hbuf(p, hs, "y"), sg, 3, 1e-7);
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);

    hs = run_ref(one_op("{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [2, 1], \"init\": \"iota\"},"
                        "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [2, 2], \"init\": {\"kind\": \"iota\", \"start\": 10}},"
                        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [2, 3]}",
                        "\"y\"", "{\"kernel\": \"concat\", \"inputs\": [\"a\", \"b\"], \"outputs\": [\"y\"]}"),
                 &p);
    const double cc[] = {0, 10, 11, 1, 12, 13};
    expect_floats(hbuf(p, hs, "y"), cc, 6, 0);
    CU_ASSERT_EQUAL(p->ops[0].grid[1], 2); /* one grid row per input */
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);

    hs = run_ref(one_op("{\"name\": \"z\", \"dtype\": \"fp32\", \"shape\": [2, 3, 3], \"init\": \"iota\"},"
                        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [2, 3]}",
                        "\"y\"", "{\"kernel\": \"tril_gather\", \"inputs\": [\"z\"], \"outputs\": [\"y\"]}"),
                 &p);
    const double tr[] = {3, 6, 7, 12, 15, 16};
    expect_floats(hbuf(p, hs, "y"), tr, 6, 0);
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);

    /* vectors (1,2), (3,4), (5,6): pairs (1,0) = 11, (2,0) = 17, (2,1) = 39 */
    hs = run_ref(one_op("{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [1, 2], \"init\": {\"kind\": \"iota\", \"start\": 1}},"
                        "{\"name\": \"E\", \"dtype\": \"fp32\", \"shape\": [1, 2, 2], \"init\": {\"kind\": \"iota\", \"start\": 3}},"
                        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [1, 5]}",
                        "\"y\"", "{\"kernel\": \"dot_interaction\", \"inputs\": [\"x\", \"E\"], \"outputs\": [\"y\"]}"),
                 &p);
    const double di[] = {1, 2, 11, 17, 39};
    expect_floats(hbuf(p, hs, "y"), di, 5, 0);
    /* one row per block: its 3 vectors in 4 slots of 4 floats (D = 2 rounded up to a 16-byte
     * unit), then its output row of 5 */
    CU_ASSERT_EQUAL(p->ops[0].ip[GR_INT_RB], 1);
    CU_ASSERT_EQUAL(p->ops[0].smem, (4 * 4 + 5) * sizeof(float));
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);

    /* x (0,1; 2,3), W rows (-2,-1) (0,1) (2,3), bias 0.5: x W^T + b = (-0.5, 1.5, 3.5; -6.5, 3.5, 13.5) */
    hs = run_ref(one_op("{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [2, 2], \"init\": \"iota\"},"
                        "{\"name\": \"W\", \"dtype\": \"fp32\", \"shape\": [3, 2], \"init\": {\"kind\": \"iota\", \"start\": -2}},"
                        "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [3], \"init\": {\"kind\": \"const\", \"value\": 0.5}},"
                        "{\"name\": \"yr\", \"dtype\": \"fp32\", \"shape\": [2, 3]},"
                        "{\"name\": \"yn\", \"dtype\": \"fp32\", \"shape\": [2, 3]},"
                        "{\"name\": \"ys\", \"dtype\": \"fp32\", \"shape\": [2, 3]}",
                        "\"yr\", \"yn\", \"ys\"",
                        "{\"kernel\": \"linear_act\", \"inputs\": [\"x\", \"W\", \"b\"], \"outputs\": [\"yr\"]},"
                        "{\"kernel\": \"linear_act\", \"inputs\": [\"x\", \"W\", \"b\"], \"outputs\": [\"yn\"], \"attrs\": {\"act\": \"none\"}},"
                        "{\"kernel\": \"linear_act\", \"inputs\": [\"x\", \"W\", \"b\"], \"outputs\": [\"ys\"], \"attrs\": {\"act\": \"sigmoid\"}}"),
                 &p);
    const double yn[] = {-0.5, 1.5, 3.5, -6.5, 3.5, 13.5};
    double yr[6], ys[6];
    for (int i = 0; i < 6; i++) {
        yr[i] = yn[i] > 0 ? yn[i] : 0;
        ys[i] = 1 / (1 + exp(-yn[i]));
    }
    expect_floats(hbuf(p, hs, "yr"), yr, 6, 0);
    expect_floats(hbuf(p, hs, "yn"), yn, 6, 0);
    expect_floats(hbuf(p, hs, "ys"), ys, 6, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(p->ops[0].flops, 2 * 2 * 3 * 2 + 2 * 6, 0);
    CU_ASSERT_DOUBLE_EQUAL(p->ops[1].flops, 2 * 2 * 3 * 2 + 6, 0);
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
}

static void test_emb_interaction_reference(void) {
    /* x = (1, 2) and (0, 1); t0 rows (0,1) (2,3) (4,5); t1 rows (10,11) .. (16,17) */
    const char *bufs =
        "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [2, 2], \"init\": \"host\"},"
        "{\"name\": \"t0\", \"dtype\": \"fp32\", \"shape\": [3, 2], \"init\": \"iota\"},"
        "{\"name\": \"t1\", \"dtype\": \"fp32\", \"shape\": [4, 2], \"init\": {\"kind\": \"iota\", \"start\": 10}},"
        "{\"name\": \"i0\", \"dtype\": \"int64\", \"shape\": [2, 2], \"init\": \"host\"},"
        "{\"name\": \"i1\", \"dtype\": \"int64\", \"shape\": [2, 2], \"init\": \"host\"},"
        "{\"name\": \"R\", \"dtype\": \"fp32\", \"shape\": [2, 5]},"
        "{\"name\": \"Rm\", \"dtype\": \"fp32\", \"shape\": [2, 5]},"
        "{\"name\": \"E\", \"dtype\": \"fp32\", \"shape\": [2, 2, 2]},"
        "{\"name\": \"R2\", \"dtype\": \"fp32\", \"shape\": [2, 5]}";
    char json[8192];
    snprintf(json, sizeof(json),
             "{\"name\": \"k\", \"buffers\": [%s], \"outputs\": [\"R\", \"Rm\", \"R2\"], \"ops\": ["
             "{\"kernel\": \"embedding_interaction\", \"inputs\": [\"x\", \"t0\", \"t1\", \"i0\", \"i1\"], \"outputs\": [\"R\"]},"
             "{\"kernel\": \"embedding_interaction\", \"inputs\": [\"x\", \"t0\", \"t1\", \"i0\", \"i1\"], \"outputs\": [\"Rm\"], \"attrs\": {\"pooling\": \"mean\"}},"
             "{\"kernel\": \"embedding_bag_tbe\", \"inputs\": [\"t0\", \"t1\", \"i0\", \"i1\"], \"outputs\": [\"E\"]},"
             "{\"kernel\": \"dot_interaction\", \"inputs\": [\"x\", \"E\"], \"outputs\": [\"R2\"]}]}",
             bufs);
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(json, NULL, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    static const float x[] = {1, 2, 0, 1};
    static const int64_t i0[] = {1, 7, 0, 2}, i1[] = {0, -1, 3, 3}; /* 7 and -1: out of range, skipped */
    p->bufs[bidx(p, "x")].host_data = x;
    p->bufs[bidx(p, "i0")].host_data = i0;
    p->bufs[bidx(p, "i1")].host_data = i1;
    gr_hoststate *hs = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_create(p, &hs, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_fill(hs, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_reference_step(p, hs, &e), GR_OK);
    /* row 0: e0 = (2,3), e1 = (10,11): x.e0 = 8, x.e1 = 32, e1.e0 = 53;
     * row 1: e0 = (0,1) + (4,5) = (4,6), e1 = 2 x (16,17) = (32,34): 6, 34, 332 */
    const double R[] = {1, 2, 8, 32, 53, 0, 1, 6, 34, 332};
    expect_floats(hbuf(p, hs, "R"), R, 10, 0);
    /* mean divides by bag (2) even when a row is skipped: e0 = (1,1.5), e1 = (5,5.5); (2,3), (16,17) */
    const double Rm[] = {1, 2, 4, 16, 13.25, 0, 1, 3, 17, 83};
    expect_floats(hbuf(p, hs, "Rm"), Rm, 10, 0);
    /* the fused reference is the chain's (TBE, then dot_interaction), bit for bit */
    CU_ASSERT_EQUAL(memcmp(hbuf(p, hs, "R"), hbuf(p, hs, "R2"), 10 * sizeof(float)), 0);
    const gr_op *op = &p->ops[0];
    CU_ASSERT_EQUAL(op->ip[GR_EI_T], 2);
    CU_ASSERT_EQUAL(op->ip[GR_EI_P], 3);
    CU_ASSERT_EQUAL(op->ip[GR_EI_BAG], 2);
    CU_ASSERT_EQUAL(op->ip[GR_EI_IDX64], 1);
    CU_ASSERT_EQUAL(op->ip[GR_EI_VEC], 0);
    CU_ASSERT_EQUAL(op->ip[GR_EI_PRE], 1); /* tables and indices: no op writes them */
    CU_ASSERT_EQUAL(op->ip[GR_EI_RB], 1);  /* 2 rows: one per block */
    CU_ASSERT_STRING_EQUAL(op->form, "rows_per_block 1");
    CU_ASSERT_EQUAL(op->smem, (4 * 4 + 5) * sizeof(float));
    CU_ASSERT_EQUAL(op->grid[0], 2);
    /* indices, the gathered rows and x read; R written */
    CU_ASSERT_DOUBLE_EQUAL(op->bytes_read, 2 * 32 + 2 * 2 * 2 * 2 * 4 + 16, 0);
    CU_ASSERT_DOUBLE_EQUAL(op->bytes_written, 40, 0);
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
}

/* PDL prefetch flags: reads before griddepcontrol.wait only of buffers no op writes. */
static void test_pdl_prefetch_flags(void) {
    const char *bufs =
        "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [4, 8], \"init\": \"normal\"},"
        "{\"name\": \"W\", \"dtype\": \"fp32\", \"shape\": [3, 8], \"init\": \"normal\"},"
        "{\"name\": \"d\", \"dtype\": \"fp32\", \"shape\": [8], \"init\": \"normal\"},"
        "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [3], \"init\": \"normal\"},"
        "{\"name\": \"W2\", \"dtype\": \"fp32\", \"shape\": [3, 8]},"
        "{\"name\": \"t0\", \"dtype\": \"fp32\", \"shape\": [5, 8], \"init\": \"normal\"},"
        "{\"name\": \"t1\", \"dtype\": \"fp32\", \"shape\": [5, 8]},"
        "{\"name\": \"i0\", \"dtype\": \"int32\", \"shape\": [4], \"init\": {\"kind\": \"randint\", \"low\": 0, \"high\": 5}},"
        "{\"name\": \"y1\", \"dtype\": \"fp32\", \"shape\": [4, 3]},"
        "{\"name\": \"y2\", \"dtype\": \"fp32\", \"shape\": [4, 3]},"
        "{\"name\": \"E1\", \"dtype\": \"fp32\", \"shape\": [4, 1, 8]},"
        "{\"name\": \"E2\", \"dtype\": \"fp32\", \"shape\": [4, 1, 8]},"
        "{\"name\": \"x2\", \"dtype\": \"fp32\", \"shape\": [4, 8], \"init\": \"normal\"},"
        "{\"name\": \"R1\", \"dtype\": \"fp32\", \"shape\": [4, 9]},"
        "{\"name\": \"R2\", \"dtype\": \"fp32\", \"shape\": [4, 9]}";
    char json[8192];
    snprintf(json, sizeof(json),
             "{\"name\": \"k\", \"buffers\": [%s], \"outputs\": [\"y1\", \"y2\", \"E1\", \"E2\", \"R1\", \"R2\"], \"ops\": ["
             "{\"kernel\": \"linear_act\", \"inputs\": [\"x\", \"W\", \"b\"], \"outputs\": [\"y1\"]},"
             "{\"kernel\": \"bias_add\", \"inputs\": [\"W\", \"d\"], \"outputs\": [\"W2\"]},"
             "{\"kernel\": \"linear_act\", \"inputs\": [\"x\", \"W2\", \"b\"], \"outputs\": [\"y2\"], \"attrs\": {\"math\": \"tf32\"}},"
             "{\"kernel\": \"embedding_bag_tbe\", \"inputs\": [\"t0\", \"i0\"], \"outputs\": [\"E1\"]},"
             "{\"kernel\": \"bias_add\", \"inputs\": [\"t0\", \"d\"], \"outputs\": [\"t1\"]},"
             "{\"kernel\": \"embedding_bag_tbe\", \"inputs\": [\"t1\", \"i0\"], \"outputs\": [\"E2\"]},"
             "{\"kernel\": \"embedding_interaction\", \"inputs\": [\"x2\", \"t0\", \"i0\"], \"outputs\": [\"R1\"]},"
             "{\"kernel\": \"embedding_interaction\", \"inputs\": [\"x2\", \"t1\", \"i0\"], \"outputs\": [\"R2\"]}]}",
             bufs);
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(json, NULL, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->ops[0].ip[GR_LIN_FLAGS], GR_LIN_F_PRE);
    CU_ASSERT_EQUAL(p->ops[2].ip[GR_LIN_FLAGS], GR_LIN_F_TF32); /* W2 is written by op 1 */
    CU_ASSERT_EQUAL(p->ops[3].ip[GR_EMB_PRE], 1);
    CU_ASSERT_EQUAL(p->ops[5].ip[GR_EMB_PRE], 0); /* t1 is written by op 4 */
    CU_ASSERT_EQUAL(p->ops[6].ip[GR_EI_PRE], 1);
    CU_ASSERT_EQUAL(p->ops[7].ip[GR_EI_PRE], 0);
    gr_plan_destroy(p);
}

/* Tile width of the SIMT linear kernel for an M x N output (K = 64) on the default 132 SMs. */
static int bn_for(int M, int N) {
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"name\": \"k\", \"buffers\": ["
             "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [%d, 64], \"init\": \"normal\"},"
             "{\"name\": \"W\", \"dtype\": \"fp32\", \"shape\": [%d, 64], \"init\": \"normal\"},"
             "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [%d], \"init\": \"normal\"},"
             "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [%d, %d]}], \"outputs\": [\"y\"], \"ops\": ["
             "{\"kernel\": \"linear_act\", \"inputs\": [\"x\", \"W\", \"b\"], \"outputs\": [\"y\"], \"attrs\": {\"impl\": \"simt\"}}]}",
             M, N, N, M, N);
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(json, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    int bn = (int)p->ops[0].ip[GR_LIN_BN];
    CU_ASSERT_EQUAL(p->ops[0].grid[0], (unsigned)((N + bn - 1) / bn));
    CU_ASSERT_EQUAL(p->ops[0].grid[1], (unsigned)((M + 31) / 32));
    gr_plan_destroy(p);
    return bn;
}

/* One linear_act of M x N x K with attrs (JSON object body): the op's check ran on the default
 * target (132 SMs). */
/* One linear_act op of x [M, K], W [N, K] planned for a GPU of compute capability cc (a.b as
 * 10 a + b; otherwise the default H200); NULL, with the check's message in *msg, if refused. */
static gr_plan *linear_plan_cc(int M, int N, int K, const char *attrs, int cc, const char **msg) {
    static char json[2048], m[1024];
    snprintf(json, sizeof(json),
             "{\"name\": \"k\", \"buffers\": ["
             "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": \"normal\"},"
             "{\"name\": \"W\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": \"normal\"},"
             "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [%d], \"init\": \"normal\"},"
             "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [%d, %d]}], \"outputs\": [\"y\"], "
             "\"ops\": ["
             "{\"kernel\": \"linear_act\", \"inputs\": [\"x\", \"W\", \"b\"], \"outputs\": "
             "[\"y\"], \"attrs\": {%s}}]}",
             M, K, N, K, N, M, N, attrs);
    gr_error e;
    gr_error_clear(&e);
    m[0] = 0;
    if (msg) *msg = m;
    gr_workload *wl = gr_test_load(json, &e);
    const char *v = wl ? gr_workload_variant(wl, NULL, &e) : NULL;
    gr_target t = gr_target_default();
    if (cc) {
        t.cc_major = cc / 10;
        t.cc_minor = cc % 10;
    }
    gr_plan *p = NULL;
    if (!v || gr_plan_resolve(wl, v, &t, gr_kernel_find, gr_kernel_all_names, &p, &e) != GR_OK) {
        snprintf(m, sizeof(m), "%s", e.msg);
        p = NULL;
    }
    gr_workload_destroy(wl);
    return p;
}

static gr_plan *linear_plan(int M, int N, int K, const char *attrs) {
    const char *msg;
    gr_plan *p = linear_plan_cc(M, N, K, attrs, 0, &msg);
    if (!p) fprintf(stderr, "\n    %d x %d x %d {%s}: %s", M, N, K, attrs, msg);
    return p;
}

/* The impl auto picks: above 256 rows rowdot for N <= 4; else simt up
 * to 256 rows, and for fewer than 128 outputs (latency-bound layers); above, the tiled kernel for
 * sigmoid (no cuBLASLt epilogue) and K <= 64 (one stage), with math tf32x3 the tc kernel (3xTF32)
 * or, for K % 4 != 0, cuBLASLt in fp32 (both fp32-accurate), cuBLASLt with math tf32 and for K % 4
 * != 0 (4-byte copies), else tiled; an impl named is taken as named. */
static void test_linear_impl_choice(void) {
    static const struct {
        int M, N, K;
        const char *attrs;
        int impl;
    } cases[] = {
        {2048, 256, 64, "", GR_LINEAR_TILED},
        {2048, 256, 512, "", GR_LINEAR_TILED},
        {2048, 512, 13, "", GR_LINEAR_TILED},
        {256, 512, 13, "", GR_LINEAR_SIMT},
        {2048, 4, 64, "", GR_LINEAR_RD},
        {257, 1, 64, "", GR_LINEAR_RD},
        {256, 1, 64, "", GR_LINEAR_SIMT},
        {2048, 5, 64, "", GR_LINEAR_SIMT},
        {2048, 16, 64, "", GR_LINEAR_SIMT},
        {128, 1, 256, "\"act\": \"sigmoid\"", GR_LINEAR_SIMT},
        {2048, 512, 367, "", GR_LINEAR_LT},
        {2048, 512, 367, "\"act\": \"sigmoid\"", GR_LINEAR_TILED},
        {2048, 256, 64, "\"math\": \"tf32\"", GR_LINEAR_TILED},
        {2048, 256, 68, "\"math\": \"tf32\"", GR_LINEAR_LT},
        {2048, 512, 13, "\"math\": \"tf32\"", GR_LINEAR_TILED},
        {2048, 256, 66, "", GR_LINEAR_LT},
        {2048, 256, 63, "", GR_LINEAR_TILED},
        {2048, 256, 64, "\"act\": \"sigmoid\"", GR_LINEAR_TILED},
        {2048, 256, 64, "\"act\": \"sigmoid\", \"math\": \"tf32\"", GR_LINEAR_TILED},
        {2048, 256, 64, "\"act\": \"none\"", GR_LINEAR_TILED},
        {2048, 128, 64, "", GR_LINEAR_TILED},
        {2048, 127, 64, "", GR_LINEAR_SIMT},
        {2048, 64, 256, "", GR_LINEAR_SIMT},
        {2048, 64, 256, "\"math\": \"tf32\"", GR_LINEAR_SIMT},
        {2048, 1, 256, "\"act\": \"sigmoid\"", GR_LINEAR_RD},
        {257, 256, 64, "", GR_LINEAR_TILED},
        {256, 256, 64, "", GR_LINEAR_SIMT},
        {128, 256, 64, "", GR_LINEAR_SIMT},
        {128, 256, 64, "\"math\": \"tf32\"", GR_LINEAR_SIMT},
        {1, 256, 64, "", GR_LINEAR_SIMT},
        {2048, 256, 64, "\"impl\": \"simt\"", GR_LINEAR_SIMT},
        {2048, 256, 64, "\"impl\": \"lt\"", GR_LINEAR_LT},
        {128, 256, 64, "\"impl\": \"tiled\"", GR_LINEAR_TILED},
        {128, 256, 64, "\"impl\": \"tiled\", \"math\": \"tf32\"", GR_LINEAR_TILED},
        {2048, 256, 64, "\"impl\": \"auto\"", GR_LINEAR_TILED},
        {2100000, 16, 4, "", GR_LINEAR_TILED}, /* past the simt kernel's 65535 x 32 rows */
        /* math tf32x3 (fp32-level accuracy): the tc kernel's 3 passes for K % 4 == 0 and
         * K > 64, else fp32 FMAs (cuBLASLt, tiled); never wg (test_linear_impl_choice_cc) */
        {2048, 256, 512, "\"math\": \"tf32x3\"", GR_LINEAR_TC},
        {2048, 256, 68, "\"math\": \"tf32x3\"", GR_LINEAR_TC},
        {2048, 512, 367, "\"math\": \"tf32x3\"", GR_LINEAR_LT},
        {2048, 512, 13, "\"math\": \"tf32x3\"", GR_LINEAR_TILED},
        {2048, 256, 64, "\"act\": \"sigmoid\", \"math\": \"tf32x3\"", GR_LINEAR_TILED},
        {2048, 64, 256, "\"math\": \"tf32x3\"", GR_LINEAR_SIMT},
        {256, 256, 512, "\"math\": \"tf32x3\"", GR_LINEAR_SIMT},
        {2048, 256, 512, "\"impl\": \"tiled\", \"math\": \"tf32x3\"", GR_LINEAR_TILED},
        {2048, 256, 512, "\"impl\": \"simt\", \"math\": \"tf32x3\"", GR_LINEAR_SIMT},
        /* impl tc named: taken, with either TF32 math, at any size */
        {1, 64, 8, "\"impl\": \"tc\", \"math\": \"tf32\"", GR_LINEAR_TC},
        {2048, 256, 512, "\"impl\": \"tc\", \"math\": \"tf32\"", GR_LINEAR_TC},
        {128, 16, 64, "\"impl\": \"tc\", \"math\": \"tf32x3\"", GR_LINEAR_TC},
        /* impl rowdot named: likewise */
        {7, 3, 1000, "\"impl\": \"rowdot\"", GR_LINEAR_RD},
        /* impl wg named: likewise */
        {1, 64, 8, "\"impl\": \"wg\", \"math\": \"tf32\"", GR_LINEAR_WG},
        {128, 16, 64, "\"impl\": \"wg\", \"math\": \"tf32x3\"", GR_LINEAR_WG},
        {2048, 512, 367, "\"impl\": \"wg\", \"math\": \"tf32\"", GR_LINEAR_WG},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gr_plan *p = linear_plan(cases[i].M, cases[i].N, cases[i].K, cases[i].attrs);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        if (p->ops[0].ip[GR_LIN_IMPL] != cases[i].impl)
            fprintf(stderr, "\n    %d x %d x %d {%s}: impl %lld, want %d", cases[i].M, cases[i].N,
                    cases[i].K, cases[i].attrs, (long long)p->ops[0].ip[GR_LIN_IMPL],
                    cases[i].impl);
        CU_ASSERT_EQUAL(p->ops[0].ip[GR_LIN_IMPL], cases[i].impl);
        CU_ASSERT_EQUAL(p->ops[0].launches, cases[i].impl == GR_LINEAR_LT ? -1 : 1);
        gr_plan_destroy(p);
    }
}

/* The tiled kernel's configuration and launch dims: the largest tile (64 x 64, 32 x 32) whose
 * blocks reach 3/4 of the 132 SMs (99), else 16 x 16; 64 x 64 with 8 x 4 per thread (T64W)
 * when K % 4 == 0 and K > 64; M tiles in grid x, N tiles in grid y; dynamic shared memory =
 * the stages ((BM + BN) rows of KT + 4 floats each), or the groups' partial tiles if larger. */
static void test_linear_tiled_geometry(void) {
    static const struct {
        int M, N, K, cfg;
        unsigned gx, gy;
    } cases[] = {
        {2048, 512, 367, GR_LIN_T64, 32, 8}, /* 256 blocks; K % 4 != 0 */
        {2048, 512, 512, GR_LIN_T64W, 32, 8},
        {2048, 256, 512, GR_LIN_T64W, 32, 4}, /* 128 */
        {2048, 512, 13, GR_LIN_T64, 32, 8},
        {2048, 256, 64, GR_LIN_T64, 32, 4}, /* K = 64: one stage of 64 */
        {2048, 256, 68, GR_LIN_T64W, 32, 4},
        {2048, 64, 256, GR_LIN_T32, 64, 2}, /* 64 x 64 would be 32 blocks */
        {2048, 16, 64, GR_LIN_T16, 128, 1}, /* 32 x 32 would be 64 */
        {2048, 1, 256, GR_LIN_T16, 128, 1},
        {2000, 300, 13, GR_LIN_T64, 32, 5}, /* ragged: 160 blocks */
        {2000, 300, 512, GR_LIN_T64W, 32, 5},
        {1000, 100, 64, GR_LIN_T32, 32, 4}, /* ragged: 128 */
        {3168, 128, 64, GR_LIN_T64, 50, 2}, /* 100 blocks of 64: enough */
        {3104, 128, 64, GR_LIN_T32, 97, 4}, /* 98 blocks of 64 are not */
        {128, 512, 64, GR_LIN_T16, 8, 32},
        {1, 1, 1, GR_LIN_T16, 1, 1},
        {7, 63, 13, GR_LIN_T16, 1, 4},
        {65, 512, 512, GR_LIN_T16, 5, 32},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gr_plan *p = linear_plan(cases[i].M, cases[i].N, cases[i].K, "\"impl\": \"tiled\"");
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        const gr_op *o = &p->ops[0];
        if (o->ip[GR_LIN_BN] != cases[i].cfg || o->grid[0] != cases[i].gx ||
            o->grid[1] != cases[i].gy)
            fprintf(stderr, "\n    %d x %d x %d: config %lld grid %u x %u, want %d, %u x %u",
                    cases[i].M, cases[i].N, cases[i].K, (long long)o->ip[GR_LIN_BN], o->grid[0],
                    o->grid[1], cases[i].cfg, cases[i].gx, cases[i].gy);
        CU_ASSERT_EQUAL(o->ip[GR_LIN_IMPL], GR_LINEAR_TILED);
        CU_ASSERT_EQUAL(o->ip[GR_LIN_BN], cases[i].cfg);
        CU_ASSERT_EQUAL(o->grid[0], cases[i].gx);
        CU_ASSERT_EQUAL(o->grid[1], cases[i].gy);
        CU_ASSERT_EQUAL(o->grid[2], 1);
        CU_ASSERT_EQUAL(o->block[0], 256);
        CU_ASSERT_EQUAL(o->block[1], 1);
        CU_ASSERT_EQUAL(o->ip[GR_LIN_VEC], cases[i].K % 4 == 0);
        CU_ASSERT_EQUAL(o->smem, gr_lin_tiled_smem(cases[i].cfg));
        CU_ASSERT_EQUAL(o->launches, 1);
        CU_ASSERT_DOUBLE_EQUAL(
            o->flops, 2.0 * cases[i].M * cases[i].N * cases[i].K + 2.0 * cases[i].M * cases[i].N,
            0);
        CU_ASSERT_DOUBLE_EQUAL(
            o->bytes_read,
            4.0 * ((double)cases[i].M * cases[i].K + (double)cases[i].N * cases[i].K + cases[i].N),
            0);
        CU_ASSERT_DOUBLE_EQUAL(o->bytes_written, 4.0 * cases[i].M * cases[i].N, 0);
        gr_plan_destroy(p);
    }
    /* stages x (BM + BN) rows x (KT + 4) floats: 3 x 128 x 20, 3 x 128 x 36, 3 x 64 x 36,
     * 3 x 32 x 68 (each over its groups' partial tiles: -, 2 x 64 x 64, 4 x 32 x 32, 16 x 16 x 16)
     */
    CU_ASSERT_EQUAL(gr_lin_tiled_smem(GR_LIN_T64), 30720);
    CU_ASSERT_EQUAL(gr_lin_tiled_smem(GR_LIN_T64W), 55296);
    CU_ASSERT_EQUAL(gr_lin_tiled_smem(GR_LIN_T32), 27648);
    CU_ASSERT_EQUAL(gr_lin_tiled_smem(GR_LIN_T16), 26112);
    CU_ASSERT_EQUAL(gr_lin_tiled_smem(GR_LIN_NTCFG), 0);
    CU_ASSERT_EQUAL(gr_lin_tcfg(GR_LIN_T64W, GR_LIN_TC_TM), 8);
    CU_ASSERT_EQUAL(gr_lin_tcfg(GR_LIN_T64W, GR_LIN_TC_TN), 4);
}

/* One staged tensor-core geometry case: impl (tc or wg) named with `math`, the check's
 * configuration and grid as expected, grid z 1, `threads` per block and `smem` bytes, VEC only for
 * K % 4 == 0, the pass flag of the math, one launch. */
struct staged_case {
    int M, N, K;
    const char *math;
    int cfg;
    unsigned gx, gy;
};

static void check_staged_geometry(const struct staged_case *c, const char *impl_name, int impl,
                                  unsigned threads, size_t smem) {
    char attrs[96];
    snprintf(attrs, sizeof(attrs), "\"impl\": \"%s\", \"math\": \"%s\"", impl_name, c->math);
    gr_plan *p = linear_plan(c->M, c->N, c->K, attrs);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    const gr_op *o = &p->ops[0];
    if (o->ip[GR_LIN_BN] != c->cfg || o->grid[0] != c->gx || o->grid[1] != c->gy)
        fprintf(stderr, "\n    %s %d x %d x %d: config %lld grid %u x %u", impl_name, c->M, c->N,
                c->K, (long long)o->ip[GR_LIN_BN], o->grid[0], o->grid[1]);
    CU_ASSERT_EQUAL(o->ip[GR_LIN_IMPL], impl);
    CU_ASSERT_EQUAL(o->ip[GR_LIN_BN], c->cfg);
    CU_ASSERT_EQUAL(o->grid[0], c->gx);
    CU_ASSERT_EQUAL(o->grid[1], c->gy);
    CU_ASSERT_EQUAL(o->grid[2], 1);
    CU_ASSERT_EQUAL(o->block[0], threads);
    CU_ASSERT_EQUAL(o->smem, smem);
    CU_ASSERT_EQUAL(o->ip[GR_LIN_VEC], c->K % 4 == 0);
    int x3 = !strcmp(c->math, "tf32x3");
    CU_ASSERT_EQUAL(o->ip[GR_LIN_FLAGS] & (GR_LIN_F_TF32 | GR_LIN_F_TF32X3),
                    x3 ? GR_LIN_F_TF32X3 : GR_LIN_F_TF32);
    CU_ASSERT_EQUAL(o->launches, 1);
    gr_plan_destroy(p);
}

/* The tc kernel's configuration and launch dims: the largest tile (64 x 64, 64 x 32, 32 x 32)
 * whose blocks cover the 132 SMs at least once; 128 threads; M tiles in grid x, N tiles in grid
 * y; dynamic shared memory = 3 stages of BM + BN rows of 48 floats; the 3-pass flag only with
 * math tf32x3, and VEC (16-byte copies) only for K % 4 == 0. */
static void test_linear_tc_geometry(void) {
    static const struct staged_case cases[] = {
        {2048, 512, 367, "tf32x3", GR_LIN_C64, 32, 8},   /* 256 blocks */
        {2048, 256, 512, "tf32x3", GR_LIN_C6432, 32, 8}, /* 64 x 64 would be 128 < 132 */
        {2048, 512, 13, "tf32", GR_LIN_C64, 32, 8},
        {2048, 64, 256, "tf32x3", GR_LIN_C32, 64, 2},
        {4224, 128, 64, "tf32", GR_LIN_C64, 66, 2},   /* exactly 132 blocks */
        {4160, 128, 64, "tf32", GR_LIN_C6432, 65, 4}, /* 130 blocks of 64 x 64 */
        {1, 1, 1, "tf32x3", GR_LIN_C32, 1, 1},
        {100, 1000, 8, "tf32", GR_LIN_C32, 4, 32}, /* 64 x 32 would be 64 blocks */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_staged_geometry(&cases[i], "tc", GR_LINEAR_TC, 128, /* 4 warps */
                              (size_t)3 *
                                  (size_t)(gr_lin_ccfg(cases[i].cfg, GR_LIN_CF_BM) +
                                           gr_lin_ccfg(cases[i].cfg, GR_LIN_CF_BN)) *
                                  GR_LIN_MMA_LD * 4);
    CU_ASSERT_EQUAL(gr_lin_tc_smem(GR_LIN_C64), 73728);
    CU_ASSERT_EQUAL(gr_lin_tc_smem(GR_LIN_C32), 36864);
    CU_ASSERT_EQUAL(gr_lin_tc_smem(GR_LIN_NCCFG), 0);
}

/* The attr config names a tile configuration of the impl the op runs: every name of the tiled,
 * tc and wg kernels is taken as named (its tile, threads and shared memory), "auto" is the
 * check's own choice, and the op's form says which one runs (graphrun validate prints it). */
static void test_linear_config_attr(void) {
    static const struct {
        const char *impl, *math;
        int n;
        const char *const names[4];
        int M, N, K, cc;
    } fams[] = {
        {"tiled", "fp32", 4, {"t64", "t64w", "t32", "t16"}, 2048, 256, 512, 0},
        {"tc", "tf32x3", 3, {"c64", "c6432", "c32"}, 2048, 256, 512, 0},
        {"wg", "tf32x3", 4, {"w64", "w128", "w64b", "w64b2"}, 2048, 256, 512, 90},
    };
    for (int f = 0; f < 3; f++)
        for (int c = 0; c < fams[f].n; c++) {
            char attrs[160], form[64];
            snprintf(attrs, sizeof(attrs), "\"impl\": \"%s\", \"math\": \"%s\", \"config\": \"%s\"",
                     fams[f].impl, fams[f].math, fams[f].names[c]);
            const char *msg = NULL;
            gr_plan *p = linear_plan_cc(fams[f].M, fams[f].N, fams[f].K, attrs, fams[f].cc, &msg);
            if (!p) fprintf(stderr, "\n    {%s}: %s", attrs, msg);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            const gr_op *o = &p->ops[0];
            CU_ASSERT_EQUAL(o->ip[GR_LIN_BN], c);
            snprintf(form, sizeof(form), "%s %s %s", fams[f].impl, fams[f].names[c],
                     !strcmp(fams[f].impl, "tiled") ? "fp32" : fams[f].math);
            CU_ASSERT_STRING_EQUAL(o->form, form);
            if (f == 1) {
                CU_ASSERT_EQUAL(o->grid[0], 2048 / gr_lin_ccfg(c, GR_LIN_CF_BM));
                CU_ASSERT_EQUAL(o->grid[1], 256 / gr_lin_ccfg(c, GR_LIN_CF_BN));
                CU_ASSERT_EQUAL(o->grid[2], 1);
                CU_ASSERT_EQUAL(o->block[0], gr_lin_tc_threads(c));
                CU_ASSERT_EQUAL(o->smem, gr_lin_tc_smem(c));
            }
            if (f == 2) {
                CU_ASSERT_EQUAL(o->block[0], gr_lin_wg_threads(c));
                CU_ASSERT_EQUAL(o->smem, gr_lin_wg_smem(c));
            }
            gr_plan_destroy(p);
        }
    /* "auto" and no attr are the same choice */
    gr_plan *p = linear_plan(2048, 256, 512, "\"impl\": \"tc\", \"math\": \"tf32x3\", \"config\": \"auto\"");
    gr_plan *q = linear_plan(2048, 256, 512, "\"impl\": \"tc\", \"math\": \"tf32x3\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_EQUAL(p->ops[0].ip[GR_LIN_BN], q->ops[0].ip[GR_LIN_BN]);
    CU_ASSERT_EQUAL(q->ops[0].ip[GR_LIN_BN], GR_LIN_C6432);
    CU_ASSERT_STRING_EQUAL(q->ops[0].form, "tc c6432 tf32x3");
    gr_plan_destroy(p);
    gr_plan_destroy(q);
    CU_ASSERT_EQUAL(gr_lin_tc_threads(GR_LIN_C64), 128);
    CU_ASSERT_EQUAL(gr_lin_tc_threads(GR_LIN_NCCFG), 0);
}

/* A config that does not fit is refused, naming the op path, the config, the impl the op runs
 * and the choices that fit; an unknown name is refused with the attr's choices. */
static void test_linear_config_errors(void) {
    const char *msg = NULL;
    /* a wg configuration on an op auto puts on the tiled kernel */
    gr_plan *p = linear_plan_cc(2048, 256, 512, "\"config\": \"w64b\"", 90, &msg);
    CU_ASSERT_PTR_NULL(p);
    gr_plan_destroy(p);
    GR_ASSERT_CONTAINS(msg, "ops[0]: kernel \"linear_act\": config \"w64b\" is a configuration of "
                            "impl \"wg\", but this op runs impl \"tiled\" (math fp32, 2048 x 256 x "
                            "512); use config \"t64\", \"t64w\", \"t32\", \"t16\", \"auto\", or set "
                            "impl \"wg\"");
    /* a tiled configuration on the tc kernel */
    p = linear_plan_cc(2048, 256, 512, "\"impl\": \"tc\", \"math\": \"tf32\", \"config\": \"t32\"", 0, &msg);
    CU_ASSERT_PTR_NULL(p);
    gr_plan_destroy(p);
    GR_ASSERT_CONTAINS(msg, "config \"t32\" is a configuration of impl \"tiled\", but this op runs "
                            "impl \"tc\" (math tf32");
    GR_ASSERT_CONTAINS(msg, "use config \"c64\", \"c6432\", \"c32\", \"auto\"");
    /* an impl without configurations */
    p = linear_plan_cc(128, 256, 64, "\"config\": \"c64\"", 0, &msg);
    CU_ASSERT_PTR_NULL(p);
    gr_plan_destroy(p);
    GR_ASSERT_CONTAINS(msg, "config \"c64\" is a configuration of impl \"tc\", but this op runs "
                            "impl \"simt\"");
    GR_ASSERT_CONTAINS(msg, "use config \"auto\", or set impl \"tc\"");
    /* a bulk wg configuration whose rows do not fold (K odd: M and N multiples of 4) */
    p = linear_plan_cc(2046, 256, 367, "\"impl\": \"wg\", \"math\": \"tf32x3\", \"config\": \"w64b2\"", 90, &msg);
    CU_ASSERT_PTR_NULL(p);
    gr_plan_destroy(p);
    GR_ASSERT_CONTAINS(msg, "ops[0]: kernel \"linear_act\": config \"w64b2\" copies rows as "
                            "tensor-map rows of 16 bytes, folding 4 rows of K = 367 into one, so M "
                            "and N must be multiples of 4 (here 2046 x 256); use config \"w128\" or "
                            "\"auto\"");
    /* a name that is no configuration: the attr's validation lists the choices */
    p = linear_plan_cc(2048, 256, 512, "\"config\": \"w64r\"", 0, &msg);
    CU_ASSERT_PTR_NULL(p);
    gr_plan_destroy(p);
    GR_ASSERT_CONTAINS(msg, "ops[0].attrs.config");
    GR_ASSERT_CONTAINS(msg, "w64r");
    GR_ASSERT_CONTAINS(msg, "w64b2");
}

static void test_linear_tile_width(void) {
    /* least work on the busiest SM (tiles per SM x BN), the wider tile on a tie */
    CU_ASSERT_EQUAL(bn_for(128, 512), 16); /* 128 tiles of 32 x 16 (256 of 32 x 8 is as much per SM) */
    CU_ASSERT_EQUAL(bn_for(128, 256), 8);  /* 128 tiles instead of 64 */
    CU_ASSERT_EQUAL(bn_for(128, 64), 8);
    CU_ASSERT_EQUAL(bn_for(128, 1), 8);
    CU_ASSERT_EQUAL(bn_for(1, 1), 8);
    CU_ASSERT_EQUAL(bn_for(2048, 512), 32); /* 8 tiles per SM however wide: the widest */
    CU_ASSERT_EQUAL(bn_for(2048, 256), 32);
    CU_ASSERT_EQUAL(bn_for(2048, 16), 8);
    CU_ASSERT_EQUAL(bn_for(4224, 32), 32); /* exactly 132 tiles of 32 x 32 */
}

#define F32(name, shape) "{\"name\": \"" name "\", \"dtype\": \"fp32\", \"shape\": " shape ", \"init\": \"normal\"}"
#define OUT(name, shape) "{\"name\": \"" name "\", \"dtype\": \"fp32\", \"shape\": " shape "}"
#define IDX(name, dt, shape, init) "{\"name\": \"" name "\", \"dtype\": \"" dt "\", \"shape\": " shape ", \"init\": " init "}"
#define OP(kernel, ins, outs, attrs) "{\"kernel\": \"" kernel "\", \"inputs\": " ins ", \"outputs\": " outs attrs "}"

typedef struct err_case {
    const char *bufs, *op, *want;
} err_case;

/* The interactions' attr rows_per_block: a named value is taken as named (launch dims, shared
 * memory, form), one that needs more than 48 KB of shared memory is refused naming the op, the
 * value and the fix, and a value that is not a choice is refused with the choices. */
static void test_interaction_rows_attr(void) {
    char json[4096];
    const char *bufs = "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [8, 128], \"init\": \"normal\"},"
                       "{\"name\": \"E\", \"dtype\": \"fp32\", \"shape\": [8, 26, 128], \"init\": \"normal\"},"
                       "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [8, 479]}";
    static const struct {
        const char *rb;
        int want; /* rows per block, 0: refused */
        const char *msg;
    } cases[] = {
        {"auto", 1, NULL},
        {"2", 2, NULL},
        {"1", 1, NULL},
        /* 4 rows of 27 vectors of 128 floats (slots of 132) and 479 outputs: 66800 bytes */
        {"4", 0,
         "ops[0]: kernel \"dot_interaction\": rows_per_block 4 needs 66800 bytes of shared memory "
         "per block (27 vectors of 128 floats and the output row per batch row); at most 48 KB: "
         "use a smaller rows_per_block or \"auto\""},
        {"3", 0, "ops[0].attrs.rows_per_block: \"3\" is not one of: auto, 1, 2, 4"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char op[256];
        snprintf(op, sizeof(op),
                 "{\"kernel\": \"dot_interaction\", \"inputs\": [\"x\", \"E\"], \"outputs\": "
                 "[\"y\"], \"attrs\": {\"rows_per_block\": \"%s\"}}",
                 cases[i].rb);
        snprintf(json, sizeof(json), "%s", one_op(bufs, "\"y\"", op));
        if (!cases[i].want) {
            GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), cases[i].msg);
            continue;
        }
        gr_error e;
        gr_error_clear(&e);
        gr_plan *p = gr_test_plan(json, NULL, &e);
        if (!p) fprintf(stderr, "\n    rows_per_block %s: %s", cases[i].rb, e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        const gr_op *o = &p->ops[0];
        char form[32];
        snprintf(form, sizeof(form), "rows_per_block %d", cases[i].want);
        CU_ASSERT_EQUAL(o->ip[GR_INT_RB], cases[i].want);
        CU_ASSERT_EQUAL(o->grid[0], (unsigned)((8 + cases[i].want - 1) / cases[i].want));
        CU_ASSERT_EQUAL(o->smem, (size_t)gr_ix_floats(cases[i].want, 26, 128) * sizeof(float));
        CU_ASSERT_STRING_EQUAL(o->form, form);
        gr_plan_destroy(p);
    }
}

static void test_check_errors(void) {
    static const err_case cases[] = {
        /* embedding bags */
        {F32("t0", "[5, 4]") "," IDX("i0", "int32", "[3]",
                                     "\"zeros\"") "," F32("t1", "[5, 4]") "," OUT("y", "[3, 1, 4]"),
         OP("embedding_bag_tbe", "[\"t0\", \"i0\", \"t1\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"embedding_bag_tbe\": inputs are the T tables, then their T index "
         "buffers (2 x T inputs); got 3 inputs"},
        {F32("t0", "[5]") "," IDX("i0", "int32", "[3]", "\"zeros\"") "," OUT("y", "[3, 4]"),
         OP("embedding_bag", "[\"t0\", \"i0\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"embedding_bag\": table \"t0\" has shape [5]; a table is [rows, D]"},
        {F32("t0", "[5, 4]") "," IDX("i0", "int32", "[3, 1, 1]", "\"zeros\"") "," OUT("y",
                                                                                      "[3, 4]"),
         OP("embedding_bag", "[\"t0\", \"i0\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"embedding_bag\": index buffer \"i0\" has shape [3, 1, 1]; it must be "
         "[B] or [B, bag]"},
        {F32("t0", "[5, 4]") "," F32("i0", "[3]") "," OUT("y", "[3, 4]"),
         OP("embedding_bag", "[\"t0\", \"i0\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"embedding_bag\": inputs[1] (indices of table 0) \"i0\" is fp32; it "
         "takes int32, int64"},
        {F32("t0", "[5, 4]") "," F32("t1", "[5, 4]") "," IDX(
             "i0", "int32", "[3]", "\"zeros\"") "," IDX("i1", "int64", "[3]",
                                                        "\"zeros\"") "," OUT("y", "[3, 2, 4]"),
         OP("embedding_bag_tbe", "[\"t0\", \"t1\", \"i0\", \"i1\"]", "[\"y\"]", ""),
         "index buffer \"i1\" is int64 but \"i0\" is int32; the index buffers share one dtype"},
        {F32("t0", "[5, 4]") "," F32("t1", "[5, 8]") "," IDX(
             "i0", "int32", "[3]", "\"zeros\"") "," IDX("i1", "int32", "[3]",
                                                        "\"zeros\"") "," OUT("y", "[3, 2, 4]"),
         OP("embedding_bag_tbe", "[\"t0\", \"t1\", \"i0\", \"i1\"]", "[\"y\"]", ""),
         "table \"t1\" has shape [5, 8]; tables are [rows, D] with one D (table \"t0\" has D = 4)"},
        {F32("t0", "[5, 4]") "," F32("t1", "[5, 4]") "," IDX(
             "i0", "int32", "[3]", "\"zeros\"") "," IDX("i1", "int32", "[3, 2]",
                                                        "\"zeros\"") "," OUT("y", "[3, 2, 4]"),
         OP("embedding_bag_tbe", "[\"t0\", \"t1\", \"i0\", \"i1\"]", "[\"y\"]", ""),
         "index buffer \"i1\" has shape [3, 2]; every index buffer has the shape of \"i0\" [3] "
         "([B] or [B, bag])"},
        {F32("t0", "[50, 4]") "," IDX(
             "i0", "int32", "[3]", "{\"kind\": \"zipf\", \"range\": 100}") "," OUT("y", "[3, 4]"),
         OP("embedding_bag", "[\"t0\", \"i0\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"embedding_bag\": index buffer \"i0\" holds rows 0..99 but table \"t0\" "
         "has 50 rows (0..49); make the init's range at most the table's rows"},
        {F32("t0", "[50, 4]") "," IDX(
             "i0", "int64", "[3]",
             "{\"kind\": \"randint\", \"low\": -1, \"high\": 10}") "," OUT("y", "[3, 4]"),
         OP("embedding_bag", "[\"t0\", \"i0\"]", "[\"y\"]", ""),
         "holds rows -1..9 but table \"t0\" has 50 rows"},
        {F32("t0", "[5, 4]") "," F32("t1", "[5, 4]") "," IDX(
             "i0", "int32", "[3]", "\"zeros\"") "," IDX("i1", "int32", "[3]",
                                                        "\"zeros\"") "," OUT("y", "[3, 4]"),
         OP("embedding_bag_tbe", "[\"t0\", \"t1\", \"i0\", \"i1\"]", "[\"y\"]", ""),
         "outputs[0] \"y\" has shape [3, 4]; 2 tables of D = 4 looked up for B = 3 rows give [3, "
         "2, 4]"},
        {F32("t0", "[5, 4]") "," IDX("i0", "int32", "[3]", "\"zeros\"") "," OUT("y", "[4, 3]"),
         OP("embedding_bag", "[\"t0\", \"i0\"]", "[\"y\"]", ""),
         "outputs[0] \"y\" has shape [4, 3]; a table of D = 4 looked up for B = 3 rows gives [3, "
         "4]"},
        {F32("t0", "[5, 4]") "," IDX(
             "i0", "int32", "[3]",
             "\"zeros\"") ",{\"name\": \"y\", \"dtype\": \"bf16\", \"shape\": [3, 4]}",
         OP("embedding_bag", "[\"t0\", \"i0\"]", "[\"y\"]", ""),
         "outputs[0] \"y\" is bf16; it takes fp32"},
        /* bias_add, sigmoid */
        {F32("x", "[2, 3]") "," F32("b", "[2]") "," OUT("y", "[2, 3]"),
         OP("bias_add", "[\"x\", \"b\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"bias_add\": bias \"b\" has shape [2]; x \"x\" [2, 3] needs [3] (its "
         "last dim)"},
        {F32("x", "[2, 3]") "," F32("b", "[3]") "," OUT("y", "[3, 3]"),
         OP("bias_add", "[\"x\", \"b\"]", "[\"y\"]", ""),
         "outputs[0] \"y\" has shape [3, 3]; it must have x's shape [2, 3]"},
        {"{\"name\": \"x\", \"dtype\": \"bf16\", \"shape\": [4], \"init\": \"normal\"},{\"name\": "
         "\"y\", \"dtype\": \"bf16\", \"shape\": [4]}",
         OP("sigmoid", "[\"x\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"sigmoid\": inputs[0] \"x\" is bf16; it takes fp32"},
        /* concat, tril_gather */
        {F32("a", "[2, 3]") "," F32("b", "[3, 3]") "," OUT("y", "[2, 6]"),
         OP("concat", "[\"a\", \"b\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"concat\": inputs[1] \"b\" has shape [3, 3] but outputs[0] \"y\" has [2, "
         "6]; inputs are joined along dim 1, so every first dim must be 2"},
        {F32("a", "[2, 3]") "," F32("b", "[2, 3]") "," OUT("y", "[2, 5]"),
         OP("concat", "[\"a\", \"b\"]", "[\"y\"]", ""),
         "outputs[0] \"y\" has shape [2, 5] (5 per row) but the inputs give 6 per row"},
        {F32("z", "[2, 3, 4]") "," OUT("y", "[2, 3]"), OP("tril_gather", "[\"z\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"tril_gather\": inputs[0] \"z\" has shape [2, 3, 4]; it must be [B, n, "
         "n] with n >= 2"},
        {F32("z", "[2, 4, 4]") "," OUT("y", "[2, 5]"), OP("tril_gather", "[\"z\"]", "[\"y\"]", ""),
         "outputs[0] \"y\" has shape [2, 5]; the strict lower triangle of [2, 4, 4] is [2, 6]"},
        /* dot_interaction */
        {F32("x", "[2, 2, 1]") "," F32("E", "[2, 2, 2]") "," OUT("y", "[2, 5]"),
         OP("dot_interaction", "[\"x\", \"E\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"dot_interaction\": x \"x\" has shape [2, 2, 1]; it must be [B, D]"},
        {F32("x", "[2, 2]") "," F32("E", "[2, 2, 3]") "," OUT("y", "[2, 5]"),
         OP("dot_interaction", "[\"x\", \"E\"]", "[\"y\"]", ""),
         "E \"E\" has shape [2, 2, 3]; with x [2, 2] it must be [2, T, 2]"},
        {F32("x", "[2, 2]") "," F32("E", "[2, 2, 2]") "," OUT("y", "[2, 6]"),
         OP("dot_interaction", "[\"x\", \"E\"]", "[\"y\"]", ""),
         "outputs[0] \"y\" has shape [2, 6]; x and 2 embeddings give [2, 5] (2 of x, then 3 "
         "pairwise dots)"},
        {F32("x", "[1, 300]") "," F32("E", "[1, 40, 300]") "," OUT("y", "[1, 1120]"),
         OP("dot_interaction", "[\"x\", \"E\"]", "[\"y\"]", ""),
         "41 vectors of 300 floats and the output row need 57280 bytes of shared memory for "
         "one batch row; at most 48 KB"},
        /* embedding_interaction */
        {F32("x", "[3, 4]") "," F32("t0", "[5, 4]") "," IDX(
             "i0", "int32", "[3]", "\"zeros\"") "," F32("t1", "[5, 4]") "," OUT("y", "[3, 7]"),
         OP("embedding_interaction", "[\"x\", \"t0\", \"t1\", \"i0\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"embedding_interaction\": inputs are x [B, D], then the T tables, then "
         "their T index buffers (1 + 2 x T inputs); got 4 inputs"},
        {F32("x", "[3, 5]") "," F32("t0", "[5, 4]") "," IDX("i0", "int32", "[3]",
                                                            "\"zeros\"") "," OUT("y", "[3, 5]"),
         OP("embedding_interaction", "[\"x\", \"t0\", \"i0\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"embedding_interaction\": x \"x\" has shape [3, 5]; with tables of D = 4 "
         "and indices for B = 3 rows it must be [3, 4]"},
        {F32("x", "[3, 4]") "," F32("t0", "[5, 4]") "," IDX("i0", "int32", "[3]",
                                                            "\"zeros\"") "," OUT("y", "[3, 6]"),
         OP("embedding_interaction", "[\"x\", \"t0\", \"i0\"]", "[\"y\"]", ""),
         "outputs[0] \"y\" has shape [3, 6]; x and 1 embeddings give [3, 5] (4 of x, then 1 "
         "pairwise dots)"},
        {F32("x", "[3, 4]") "," F32("t0", "[5, 4]") "," IDX(
             "i0", "int32", "[3]", "{\"kind\": \"zipf\", \"range\": 9}") "," OUT("y", "[3, 5]"),
         OP("embedding_interaction", "[\"x\", \"t0\", \"i0\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"embedding_interaction\": index buffer \"i0\" holds rows 0..8 but table "
         "\"t0\" has 5 rows"},
        {F32("x", "[3, 4]") "," F32("t0", "[5, 4]") "," F32("i0", "[3]") "," OUT("y", "[3, 5]"),
         OP("embedding_interaction", "[\"x\", \"t0\", \"i0\"]", "[\"y\"]", ""),
         "inputs[2] (indices of table 0) \"i0\" is fp32; it takes int32, int64"},
        {F32("x", "[1, 300]") "," F32("t0", "[2, 300]") "," IDX(
             "i0", "int32", "[1]", "\"zeros\"") "," OUT("y", "[1, 301]"),
         OP("embedding_interaction",
            "[\"x\", \"t0\", \"i0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", "
            "\"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", "
            "\"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", "
            "\"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", "
            "\"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", "
            "\"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", \"t0\", "
            "\"t0\", \"t0\", \"t0\", \"t0\"]",
            "[\"y\"]", ""),
         "\"embedding_interaction\""},
        /* linear_act */
        {F32("x", "[2, 3]") "," F32("W", "[17, 3]") "," F32("b", "[17]") "," OUT("y", "[2, 17]"),
         OP("linear_act", "[\"x\", \"W\", \"b\"]", "[\"y\"]",
            ", \"attrs\": {\"impl\": \"rowdot\"}"),
         "ops[0]: kernel \"linear_act\": impl \"rowdot\" (a warp per row) takes at most 16 outputs; "
         "W \"W\" [17, 3] has N = 17"},
        {F32("x", "[2, 3]") "," F32("W", "[9]") "," F32("b", "[3]") "," OUT("y", "[2, 3]"),
         OP("linear_act", "[\"x\", \"W\", \"b\"]", "[\"y\"]", ""),
         "ops[0]: kernel \"linear_act\": W \"W\" has shape [9]; a Linear weight is [out, in]"},
        {F32("x", "[2, 3]") "," F32("W", "[4, 5]") "," F32("b", "[4]") "," OUT("y", "[2, 4]"),
         OP("linear_act", "[\"x\", \"W\", \"b\"]", "[\"y\"]", ""),
         "x \"x\" [2, 3] has 3 features but W \"W\" [4, 5] takes 5 (W is [out, in])"},
        {F32("x", "[2, 3]") "," F32("W", "[4, 3]") "," F32("b", "[3]") "," OUT("y", "[2, 4]"),
         OP("linear_act", "[\"x\", \"W\", \"b\"]", "[\"y\"]", ""),
         "bias \"b\" has shape [3]; W [4, 3] needs [4]"},
        {F32("x", "[2, 3]") "," F32("W", "[4, 3]") "," F32("b", "[4]") "," OUT("y", "[2, 3]"),
         OP("linear_act", "[\"x\", \"W\", \"b\"]", "[\"y\"]", ""),
         "outputs[0] \"y\" has shape [2, 3]; x [2, 3] times W^T gives [2, 4]"},
        {F32("x", "[2, 3]") "," F32("W", "[4, 3]") "," F32("b", "[4]") "," OUT("y", "[2, 4]"),
         OP("linear_act", "[\"x\", \"W\", \"b\"]", "[\"y\"]",
            ", \"attrs\": {\"act\": \"sigmoid\", \"impl\": \"lt\"}"),
         "ops[0]: kernel \"linear_act\": impl \"lt\" has no sigmoid epilogue in cuBLASLt; use impl "
         "\"simt\", \"tiled\", \"tc\" or \"auto\" for act \"sigmoid\""},
        {F32("x", "[2, 3]") "," F32("W", "[4, 3]") "," F32("b", "[4]") "," OUT("y", "[2, 4]"),
         OP("linear_act", "[\"x\", \"W\", \"b\"]", "[\"y\"]", ", \"attrs\": {\"impl\": \"tc\"}"),
         "ops[0]: kernel \"linear_act\": impl \"tc\" runs on TF32 tensor cores; set math "
         "\"tf32x3\" "
         "(fp32-accurate) or \"tf32\", or use impl \"tiled\" or \"simt\" for fp32 FMAs"},
        {F32("x", "[2, 3]") "," F32("W", "[4, 3]") "," F32("b", "[4]") "," OUT("y", "[2, 4]"),
         OP("linear_act", "[\"x\", \"W\", \"b\"]", "[\"y\"]",
            ", \"attrs\": {\"impl\": \"lt\", \"math\": \"tf32x3\"}"),
         "ops[0]: kernel \"linear_act\": impl \"lt\" has no math \"tf32x3\" (cuBLASLt's TF32 is "
         "one "
         "pass); use impl \"tc\" or \"auto\", or math \"tf32\" or \"fp32\""},
        {F32("x", "[2, 3]") "," F32("W", "[4, 3]") "," F32("b", "[4]") "," OUT("y", "[2, 4]"),
         OP("linear_act", "[\"x\", \"W\", \"b\"]", "[\"y\"]",
            ", \"attrs\": {\"math\": \"TF32x3\"}"),
         "ops[0].attrs.math: \"TF32x3\" is not one of: fp32, tf32, tf32x3"},
        {F32("x", "[2, 3]") "," F32("W", "[4, 3]") "," F32("b", "[4]") "," OUT("y", "[2, 4]"),
         OP("linear_act", "[\"x\", \"W\", \"b\"]", "[\"y\"]", ", \"attrs\": {\"impl\": \"gpu\"}"),
         "ops[0].attrs.impl: \"gpu\" is not one of: auto, simt, lt, tiled"},
        {F32("x", "[2, 3]") "," F32("W", "[4, 3]") "," F32("b", "[4]") "," OUT("y", "[2, 4]"),
         OP("linear_act", "[\"x\", \"W\", \"b\"]", "[\"y\"]", ", \"attrs\": {\"impl\": \"Tiled\"}"),
         "ops[0].attrs.impl: \"Tiled\" is not one of: auto, simt, lt, tiled"},
        {F32("x", "[2, 3]") "," F32("W", "[4, 3]") "," F32("b", "[4]") "," OUT("y", "[2, 4]"),
         OP("linear_act", "[\"x\", \"W\", \"b\"]", "[\"y\"]", ", \"attrs\": {\"math\": \"fp16\"}"),
         "\"fp16\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *msg = gr_test_plan_error(one_op(cases[i].bufs, "\"y\"", cases[i].op), NULL);
        if (!strstr(msg, cases[i].want)) fprintf(stderr, "\n    case %zu:", i);
        GR_ASSERT_CONTAINS(msg, cases[i].want);
    }
}

static gr_plan *dlrm(const char *variant, const char *s1, const char *s2, const char *s3) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(gr_test_src("workloads/dlrm_small.json"), &wl, &e) != GR_OK) {
        fprintf(stderr, "\n    %s", e.msg);
        return NULL;
    }
    const char *sets[] = {s1, s2, s3};
    for (int i = 0; i < 3; i++)
        if (sets[i] && gr_workload_set(wl, sets[i], &e) != GR_OK) fprintf(stderr, "\n    %s", e.msg);
    gr_plan *p = NULL;
    gr_target t = gr_target_default();
    if (gr_plan_resolve(wl, variant, &t, gr_kernel_find, gr_kernel_all_names, &p, &e) != GR_OK)
        fprintf(stderr, "\n    %s", e.msg);
    gr_workload_destroy(wl);
    return p;
}

static const gr_op *op_named(const gr_plan *p, const char *name) {
    for (int i = 0; i < p->nops; i++)
        if (!strcmp(p->ops[i].name, name)) return &p->ops[i];
    CU_FAIL("op not found");
    return &p->ops[0];
}

static void test_dlrm_accounting(void) {
    gr_plan *u = dlrm("unfused", NULL, NULL, NULL), *f = dlrm("fused", NULL, NULL, NULL),
            *ft = dlrm("fused_tbe", NULL, NULL, NULL), *f2 = dlrm("fused_2stream", NULL, NULL, NULL),
            *f32 = dlrm("fused_tf32", NULL, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(u);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ft);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f32);
    /* unfused: 26 bags, 7 x (gemm, bias, act), concat, bmm, tril, concat */
    CU_ASSERT_EQUAL(u->kernels, 26 + 7 * 3 + 4);
    CU_ASSERT_EQUAL(u->library_ops, 8);
    CU_ASSERT_EQUAL(u->nstreams, 1);
    /* fused: 4 + 3 linear_act and the interaction with the lookups in it; fused_tbe and
     * fused_2stream: TBE, 7 linear_act, interaction; all own kernels at B = 128 */
    CU_ASSERT_EQUAL(f->kernels, 8);
    CU_ASSERT_EQUAL(f->library_ops, 0);
    CU_ASSERT_EQUAL(f32->kernels, 8);
    CU_ASSERT_EQUAL(f32->library_ops, 0);
    CU_ASSERT_EQUAL(ft->kernels, 9);
    CU_ASSERT_EQUAL(ft->nstreams, 1);
    CU_ASSERT_EQUAL(f2->kernels, 9);
    CU_ASSERT_EQUAL(f2->nstreams, 2);
    const gr_op *tbe = op_named(f2, "tbe");
    CU_ASSERT_STRING_EQUAL(f2->streams[tbe->stream], "emb");
    /* TBE reads the indices and the 128 x 26 rows it gathers, not the 357 MB of tables */
    CU_ASSERT_DOUBLE_EQUAL(tbe->bytes_read, 26.0 * 128 * 4 + 128.0 * 26 * 16 * 4, 0);
    CU_ASSERT_DOUBLE_EQUAL(tbe->bytes_written, 128.0 * 26 * 16 * 4, 0);
    CU_ASSERT_EQUAL(tbe->ip[GR_EMB_VEC], 1);
    CU_ASSERT_EQUAL(tbe->ip[GR_EMB_PRE], 1); /* tables and indices: inputs no op writes */
    CU_ASSERT_EQUAL(tbe->block[0], 128);
    CU_ASSERT_EQUAL(tbe->grid[0], 128 * 26 * 4 / 128);
    /* tile widths at B = 128: 128 blocks for N = 512 (BN 16) and N = 256 (BN 8) */
    const gr_op *b1 = op_named(f, "bot.1");
    CU_ASSERT_DOUBLE_EQUAL(b1->flops, 2.0 * 128 * 256 * 512 + 2.0 * 128 * 256, 0);
    CU_ASSERT_EQUAL(b1->ip[GR_LIN_IMPL], GR_LINEAR_SIMT);
    CU_ASSERT_EQUAL(b1->ip[GR_LIN_BN], 8);
    CU_ASSERT_EQUAL(b1->grid[0], 32);
    CU_ASSERT_EQUAL(b1->grid[1], 4);
    CU_ASSERT_EQUAL(b1->block[0], 256);
    CU_ASSERT_EQUAL(b1->ip[GR_LIN_VEC], 1);
    CU_ASSERT_EQUAL(b1->ip[GR_LIN_FLAGS], GR_LIN_F_PRE); /* weights: inputs no op writes */
    CU_ASSERT_EQUAL(op_named(f32, "bot.1")->ip[GR_LIN_FLAGS], GR_LIN_F_PRE | GR_LIN_F_TF32);
    CU_ASSERT_EQUAL(op_named(f, "top.0")->ip[GR_LIN_BN], 16);
    CU_ASSERT_EQUAL(op_named(f, "top.0")->grid[0], 32);
    CU_ASSERT_EQUAL(op_named(f, "top.1")->grid[0] * op_named(f, "top.1")->grid[1], 128);
    CU_ASSERT_EQUAL(op_named(f, "bot.0")->ip[GR_LIN_VEC], 0); /* K = 13 */
    CU_ASSERT_EQUAL(op_named(f, "bot.0")->ip[GR_LIN_BN], 16);
    CU_ASSERT_EQUAL(op_named(f, "top.2")->ip[GR_LIN_BN], 8); /* N = 1 */
    /* the interaction: fused with the lookups (fused) or alone (fused_tbe) */
    const gr_op *it = op_named(f, "interaction"), *it2 = op_named(ft, "interaction");
    CU_ASSERT_STRING_EQUAL(it->kernel->name, "embedding_interaction");
    CU_ASSERT_STRING_EQUAL(it2->kernel->name, "dot_interaction");
    CU_ASSERT_DOUBLE_EQUAL(it2->flops, 2.0 * 128 * 351 * 16, 0);
    CU_ASSERT_DOUBLE_EQUAL(it->flops, 2.0 * 128 * 351 * 16 + 128.0 * 26 * 16, 0);
    CU_ASSERT_EQUAL(it->grid[0], 128);
    CU_ASSERT_EQUAL(it2->grid[0], 128);
    CU_ASSERT_EQUAL(it->ip[GR_EI_PRE], 1);
    CU_ASSERT_EQUAL(it->ip[GR_EI_P], 351);
    /* one row per block: 27 vectors in 4 x 7 slots of 20 floats (16, then to an odd number of
     * 16-byte units), then the output row of 16 + 351 */
    CU_ASSERT_EQUAL(it->smem, (28 * 20 + 367) * sizeof(float));
    /* it moves what TBE and dot_interaction move, less E's round trip */
    CU_ASSERT_DOUBLE_EQUAL(it->bytes_read, tbe->bytes_read + it2->bytes_read - tbe->bytes_written, 0);
    CU_ASSERT_DOUBLE_EQUAL(it->bytes_written, it2->bytes_written, 0);
    CU_ASSERT_EQUAL(op_named(f, "top.2")->ip[GR_LIN_ACT], GR_DLRM_ACT_SIGMOID);
    /* fusion removes HBM round trips: E is one fewer */
    CU_ASSERT_TRUE(f->intermediates < u->intermediates);
    CU_ASSERT_EQUAL(f->intermediates + 1, ft->intermediates);
    CU_ASSERT_TRUE(f->bytes_read + f->bytes_written < ft->bytes_read + ft->bytes_written);
    CU_ASSERT_TRUE(ft->bytes_read + ft->bytes_written < u->bytes_read + u->bytes_written);
    /* fused_tf32 checks at its own, looser tolerances; the others at the workload's 1e-4 */
    CU_ASSERT_DOUBLE_EQUAL(f->bufs[bidx(f, "y")].rtol, 1e-4, 0);
    CU_ASSERT_DOUBLE_EQUAL(f32->bufs[bidx(f32, "bot")].rtol, 1e-2, 0);
    CU_ASSERT_DOUBLE_EQUAL(f32->bufs[bidx(f32, "R")].rtol, 1e-2, 0);
    CU_ASSERT_DOUBLE_EQUAL(f32->bufs[bidx(f32, "y")].rtol, 5e-3, 0);
    gr_plan_destroy(u);
    gr_plan_destroy(f);
    gr_plan_destroy(ft);
    gr_plan_destroy(f2);
    gr_plan_destroy(f32);
    /* B = 2048, auto: the 64- and 16-wide layers stay SIMT, bot.0 (K = 13) is tiled, the 1-wide
     * sigmoid layer takes rowdot; in
     * fp32 the tiled kernel takes bot.1 and top.1 too, cuBLASLt top.0 (K = 367); with math
     * tf32 cuBLASLt takes bot.1, top.0 and top.1 */
    const char *vs[] = {"fused", "fused_tf32"};
    for (int v = 0; v < 2; v++) {
        f = dlrm(vs[v], "B=2048", NULL, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_EQUAL(f->library_ops, v ? 3 : 1);
        CU_ASSERT_EQUAL(f->kernels, 8); /* a library op counts as one */
        CU_ASSERT_EQUAL(op_named(f, "bot.0")->ip[GR_LIN_IMPL], GR_LINEAR_TILED);
        CU_ASSERT_EQUAL(op_named(f, "bot.1")->launches, v ? -1 : 1);
        CU_ASSERT_EQUAL(op_named(f, "bot.1")->ip[GR_LIN_IMPL], v ? GR_LINEAR_LT : GR_LINEAR_TILED);
        CU_ASSERT_EQUAL(op_named(f, "bot.1")->ip[GR_LIN_FLAGS] & GR_LIN_F_TF32, v ? GR_LIN_F_TF32 : 0);
        CU_ASSERT_EQUAL(op_named(f, "bot.2")->ip[GR_LIN_IMPL], GR_LINEAR_SIMT);
        CU_ASSERT_EQUAL(op_named(f, "bot.3")->ip[GR_LIN_IMPL], GR_LINEAR_SIMT);
        CU_ASSERT_EQUAL(op_named(f, "top.0")->ip[GR_LIN_IMPL], GR_LINEAR_LT);
        CU_ASSERT_EQUAL(op_named(f, "top.1")->ip[GR_LIN_IMPL], v ? GR_LINEAR_LT : GR_LINEAR_TILED);
        CU_ASSERT_EQUAL(op_named(f, "top.2")->ip[GR_LIN_IMPL], GR_LINEAR_RD);
        /* 2 rows per block: 1024 blocks (4 rows would give 512, under 132 SMs x
         * GR_IX_BLOCKS_PER_SM / 2), which fit 132 SMs x GR_IX_BLOCKS_PER_SM at once; the vectors
         * of 2 rows (2 x 28 slots of 20 floats) and their output rows (2 x 367) */
        const gr_op *ix = op_named(f, "interaction");
        CU_ASSERT_EQUAL(ix->ip[GR_EI_RB], 2);
        CU_ASSERT_EQUAL(ix->grid[0], 1024);
        CU_ASSERT_EQUAL(ix->block[0], GR_IX_THREADS);
        CU_ASSERT_EQUAL(ix->smem, (2 * 28 * 20 + 2 * 367) * sizeof(float));
        CU_ASSERT_STRING_EQUAL(ix->form, "rows_per_block 2");
        gr_plan_destroy(f);
        /* past that 4 rows, and the blocks stride over the row groups */
        f = dlrm(vs[v], "B=8192", NULL, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_EQUAL(op_named(f, "interaction")->ip[GR_EI_RB], 4);
        CU_ASSERT_EQUAL(op_named(f, "interaction")->grid[0], 132 * GR_IX_BLOCKS_PER_SM);
        gr_plan_destroy(f);
        /* B = 128: one row per block (128 blocks: fewer rows per block leave SMs idle) */
        f = dlrm(vs[v], "B=128", NULL, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_EQUAL(op_named(f, "interaction")->ip[GR_EI_RB], 1);
        CU_ASSERT_EQUAL(op_named(f, "interaction")->grid[0], 128);
        gr_plan_destroy(f);
        /* the workload's param ix_rows (the op's attr rows_per_block) names it */
        f = dlrm(vs[v], "B=128", "ix_rows=4", NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_EQUAL(op_named(f, "interaction")->ip[GR_EI_RB], 4);
        CU_ASSERT_EQUAL(op_named(f, "interaction")->grid[0], 32);
        CU_ASSERT_STRING_EQUAL(op_named(f, "interaction")->form, "rows_per_block 4");
        gr_plan_destroy(f);
    }
    /* fused_tf32x3 at B = 2048, x3_impl=auto (the rule on every GPU; the default auto_wg is it
     * off compute capability 9.0): bot.1 and top.1 on the tc kernel with 3 passes; fp32 FMAs
     * where those are faster: bot.0 (K = 13) tiled, top.0 (K = 367) cuBLASLt's fp32 (the one
     * library op); the narrow ones on the fp32 SIMT kernel, the sigmoid on rowdot */
    f = dlrm("fused_tf32x3", "B=2048", "x3_impl=auto", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->library_ops, 1);
    CU_ASSERT_EQUAL(op_named(f, "bot.0")->ip[GR_LIN_IMPL], GR_LINEAR_TILED);
    CU_ASSERT_EQUAL(op_named(f, "top.0")->ip[GR_LIN_IMPL], GR_LINEAR_LT);
    CU_ASSERT_EQUAL(op_named(f, "top.0")->ip[GR_LIN_FLAGS] & GR_LIN_F_TF32, 0); /* fp32 compute */
    {
        static const char *const tc_ops[] = {"bot.1", "top.1"};
        static const int tc_cfg[] = {GR_LIN_C6432, GR_LIN_C6432};
        for (int i = 0; i < 2; i++) {
            const gr_op *o = op_named(f, tc_ops[i]);
            CU_ASSERT_EQUAL(o->ip[GR_LIN_IMPL], GR_LINEAR_TC);
            CU_ASSERT_EQUAL(o->ip[GR_LIN_BN], tc_cfg[i]);
            CU_ASSERT_EQUAL(o->ip[GR_LIN_FLAGS], GR_LIN_F_PRE | GR_LIN_F_TF32X3);
            CU_ASSERT_EQUAL(o->grid[0] * o->grid[1], 256);
        }
        CU_ASSERT_EQUAL(op_named(f, "bot.2")->ip[GR_LIN_IMPL], GR_LINEAR_SIMT);
        CU_ASSERT_EQUAL(op_named(f, "bot.3")->ip[GR_LIN_IMPL], GR_LINEAR_SIMT);
        CU_ASSERT_EQUAL(op_named(f, "top.2")->ip[GR_LIN_IMPL], GR_LINEAR_RD);
        CU_ASSERT_DOUBLE_EQUAL(f->bufs[bidx(f, "y")].rtol, 1e-4, 0);
    }
    /* op->form names what each layer runs: the fp32 kernels' FMAs, whatever math asked for */
    CU_ASSERT_STRING_EQUAL(op_named(f, "bot.0")->form, "tiled t64 fp32");
    CU_ASSERT_STRING_EQUAL(op_named(f, "bot.1")->form, "tc c6432 tf32x3");
    CU_ASSERT_STRING_EQUAL(op_named(f, "bot.2")->form, "simt fp32");
    CU_ASSERT_STRING_EQUAL(op_named(f, "top.0")->form, "lt fp32");
    CU_ASSERT_STRING_EQUAL(op_named(f, "interaction")->form, "rows_per_block 2");
    gr_plan_destroy(f);
    f = dlrm("fused_tf32", "B=2048", NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_STRING_EQUAL(op_named(f, "bot.1")->form, "lt tf32");
    CU_ASSERT_STRING_EQUAL(op_named(f, "bot.0")->form, "tiled t64 fp32");
    gr_plan_destroy(f);
    /* its layers follow x3_impl, not linear_impl (cuBLASLt has no 3xTF32: linear_impl=lt must
     * still resolve every variant); x3_impl=simt puts them on fp32 FMAs */
    f = dlrm("fused_tf32x3", "B=2048", "linear_impl=lt", "x3_impl=auto");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(op_named(f, "bot.1")->ip[GR_LIN_IMPL], GR_LINEAR_TC);
    gr_plan_destroy(f);
    /* the default x3_impl is auto_wg: on the default target (compute capability 9.0) the three
     * wide layers on the wgmma kernel's bulk forms, top.0 on the tall one */
    f = dlrm("fused_tf32x3", "B=2048", NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->library_ops, 0);
    CU_ASSERT_STRING_EQUAL(op_named(f, "bot.1")->form, "wg w64b tf32x3");
    CU_ASSERT_STRING_EQUAL(op_named(f, "top.0")->form, "wg w64b2 tf32x3");
    CU_ASSERT_STRING_EQUAL(op_named(f, "top.1")->form, "wg w64b tf32x3");
    gr_plan_destroy(f);
    f = dlrm("fused_tf32x3", "B=2048", "x3_impl=tc", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(op_named(f, "bot.1")->ip[GR_LIN_BN], GR_LIN_C6432);
    CU_ASSERT_EQUAL(op_named(f, "top.0")->ip[GR_LIN_IMPL], GR_LINEAR_TC);
    gr_plan_destroy(f);
    /* x3_impl=auto_wg: auto's layers, with wg where auto takes tc or cuBLASLt (bot.1, top.0,
     * top.1): no library op; bot.0 stays tiled, the narrow layers SIMT */
    f = dlrm("fused_tf32x3", "B=2048", "x3_impl=auto_wg", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->library_ops, 0);
    CU_ASSERT_EQUAL(op_named(f, "bot.0")->ip[GR_LIN_IMPL], GR_LINEAR_TILED);
    CU_ASSERT_EQUAL(op_named(f, "bot.2")->ip[GR_LIN_IMPL], GR_LINEAR_SIMT);
    CU_ASSERT_EQUAL(op_named(f, "bot.1")->ip[GR_LIN_IMPL], GR_LINEAR_WG);
    CU_ASSERT_EQUAL(op_named(f, "top.0")->ip[GR_LIN_IMPL], GR_LINEAR_WG);
    CU_ASSERT_EQUAL(op_named(f, "top.1")->ip[GR_LIN_IMPL], GR_LINEAR_WG);
    CU_ASSERT_STRING_EQUAL(op_named(f, "bot.1")->form, "wg w64b tf32x3");
    CU_ASSERT_STRING_EQUAL(op_named(f, "top.1")->form, "wg w64b tf32x3");
    CU_ASSERT_STRING_EQUAL(op_named(f, "top.0")->form, "wg w64b2 tf32x3");
    gr_plan_destroy(f);
    /* x3_impl=wg: every layer with an impl attr on the wgmma kernel, no library op; bot.1 and
     * top.1 in 64 x 64 tiles (bulk form: 3 warpgroups and the producer warp), top.0 (K = 367,
     * rows folded in fours) in the tall bulk form's 128 x 64, 128 blocks each */
    f = dlrm("fused_tf32x3", "B=2048", "x3_impl=wg", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->library_ops, 0);
    CU_ASSERT_EQUAL(op_named(f, "bot.0")->ip[GR_LIN_IMPL], GR_LINEAR_WG);
    CU_ASSERT_EQUAL(op_named(f, "bot.2")->ip[GR_LIN_IMPL], GR_LINEAR_WG);
    CU_ASSERT_EQUAL(op_named(f, "top.2")->ip[GR_LIN_IMPL], GR_LINEAR_RD);
    {
        static const char *const wg_ops[] = {"bot.1", "top.0", "top.1"};
        static const int wg_cfg[] = {GR_LIN_W64B, GR_LIN_W64B2, GR_LIN_W64B};
        static const unsigned wg_threads[] = {416, 416, 416};
        for (int i = 0; i < 3; i++) {
            const gr_op *o = op_named(f, wg_ops[i]);
            CU_ASSERT_EQUAL(o->ip[GR_LIN_IMPL], GR_LINEAR_WG);
            CU_ASSERT_EQUAL(o->ip[GR_LIN_BN], wg_cfg[i]);
            CU_ASSERT_EQUAL(o->ip[GR_LIN_FLAGS], GR_LIN_F_PRE | GR_LIN_F_TF32X3);
            CU_ASSERT_EQUAL(o->grid[0] * o->grid[1], 128);
            CU_ASSERT_EQUAL(o->block[0], wg_threads[i]);
        }
    }
    gr_plan_destroy(f);
    f = dlrm("fused_tf32x3", "B=2048", "x3_impl=simt", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(op_named(f, "top.0")->ip[GR_LIN_IMPL], GR_LINEAR_SIMT);
    gr_plan_destroy(f);
    /* the configurations of the fused variant's layers at B = 2048 (tiled_config in dlrm.c) */
    f = dlrm("fused", "B=2048", "linear_impl=tiled", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->library_ops, 0);
    static const struct {
        const char *op;
        int cfg;
        unsigned gx, gy;
        int vec;
    } want[] = {{"bot.0", GR_LIN_T64, 32, 8, 0}, {"bot.1", GR_LIN_T64W, 32, 4, 1},
                {"bot.2", GR_LIN_T32, 64, 2, 1}, {"bot.3", GR_LIN_T16, 128, 1, 1},
                {"top.0", GR_LIN_T64, 32, 8, 0}, {"top.1", GR_LIN_T64W, 32, 4, 1}};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const gr_op *o = op_named(f, want[i].op);
        if (o->ip[GR_LIN_BN] != want[i].cfg || o->grid[0] != want[i].gx || o->grid[1] != want[i].gy)
            fprintf(stderr, "\n    %s: config %lld grid %u x %u", want[i].op,
                    (long long)o->ip[GR_LIN_BN], o->grid[0], o->grid[1]);
        CU_ASSERT_EQUAL(o->ip[GR_LIN_IMPL], GR_LINEAR_TILED);
        CU_ASSERT_EQUAL(o->ip[GR_LIN_BN], want[i].cfg);
        CU_ASSERT_EQUAL(o->grid[0], want[i].gx);
        CU_ASSERT_EQUAL(o->grid[1], want[i].gy);
        CU_ASSERT_EQUAL(o->grid[2], 1);
        CU_ASSERT_EQUAL(o->block[0], 256);
        CU_ASSERT_EQUAL(o->ip[GR_LIN_VEC], want[i].vec);
        CU_ASSERT_EQUAL(o->smem, gr_lin_tiled_smem(want[i].cfg));
        CU_ASSERT_EQUAL(o->launches, 1);
        CU_ASSERT_EQUAL(o->ip[GR_LIN_FLAGS], GR_LIN_F_PRE);
    }
    /* top.2 has no impl attr: auto keeps the 1-wide sigmoid layer on the SIMT kernel */
    CU_ASSERT_EQUAL(op_named(f, "top.2")->ip[GR_LIN_IMPL], GR_LINEAR_RD);
    b1 = op_named(f, "bot.1");
    CU_ASSERT_DOUBLE_EQUAL(b1->flops, 2.0 * 2048 * 256 * 512 + 2.0 * 2048 * 256, 0);
    CU_ASSERT_DOUBLE_EQUAL(b1->bytes_read, 4.0 * (2048 * 512 + 256 * 512 + 256), 0);
    CU_ASSERT_DOUBLE_EQUAL(b1->bytes_written, 4.0 * 2048 * 256, 0);
    CU_ASSERT_DOUBLE_EQUAL(op_named(f, "top.2")->flops, 2.0 * 2048 * 256 + 2.0 * 2048, 0);
    gr_plan_destroy(f);
    f = dlrm("fused", "B=2048", "linear_impl=simt", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->library_ops, 0);
    b1 = op_named(f, "bot.1");
    CU_ASSERT_EQUAL(b1->ip[GR_LIN_BN], 32);
    CU_ASSERT_EQUAL(b1->grid[0], 8);
    CU_ASSERT_EQUAL(b1->grid[1], 64);
    gr_plan_destroy(f);
    f = dlrm("fused", "B=7", "linear_impl=lt", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->library_ops, 6);
    gr_plan_destroy(f);
    /* multi-hot bags: bytes scale with bag */
    f = dlrm("fused_tbe", "bag=4", NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_DOUBLE_EQUAL(op_named(f, "tbe")->bytes_read, 26.0 * 128 * 4 * 4 + 128.0 * 26 * 4 * 16 * 4, 0);
    gr_plan_destroy(f);
    f = dlrm("fused", "bag=4", NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_DOUBLE_EQUAL(op_named(f, "interaction")->bytes_read,
                           26.0 * 128 * 4 * 4 + 128.0 * 26 * 4 * 16 * 4 + 128.0 * 16 * 4, 0);
    CU_ASSERT_EQUAL(op_named(f, "interaction")->ip[GR_EI_BAG], 4);
    gr_plan_destroy(f);
}

/* v rounded to TF32 (10 explicit mantissa bits): mode 1 to nearest (even), mode 2 toward zero
 * (truncation: what a tensor core does with fp32 bits it is handed unconverted); mode 0: v. */
static double tf32_round(double v, int mode) {
    if (!mode) return v;
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if (mode == 1) u += 0xFFFu + ((u >> 13) & 1u);
    u &= 0xFFFFE000u;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* w h as the tc kernel's math tf32x3 forms it (mode 3): each operand split into a TF32 part
 * rounded to nearest and the remainder truncated to TF32 (the MMA truncates the fp32 bits it is
 * handed), the three products but the small-small one summed; other modes: both operands
 * tf32_round()ed, then multiplied. */
static double tf32_mul(double w, double h, int mode) {
    if (mode != 3) return tf32_round(w, mode) * tf32_round(h, mode);
    double wb = tf32_round(w, 1), hb = tf32_round(h, 1);
    double ws = tf32_round((float)((float)w - (float)wb), 2),
           hs = tf32_round((float)((float)h - (float)hb), 2);
    return ws * hb + wb * hs + wb * hb;
}

/* An independent forward pass from the host buffers (double throughout). With tf32 (a
 * tf32_round mode, or 3 for tf32x3), the products of the six ReLU layers (the ones cuBLASLt
 * or the tc kernel may run on tensor cores) are formed as tf32_mul() does and the activations
 * stored as fp32, as the device does. */
static void naive_forward(const gr_plan *p, const gr_hoststate *hs, int64_t B, int64_t D, int64_t bag,
                          double *y, double *R, int tf32) {
    static const int bot_dims[] = {13, 512, 256, 64, 0}, top_dims[] = {0, 512, 256, 1};
    const int64_t P = 351, RC = D + P;
    double *h = malloc(1024 * sizeof(double)), *h2 = malloc(1024 * sizeof(double));
    double feat[27][256];
    for (int64_t b = 0; b < B; b++) {
        const float *dense = hbuf(p, hs, "dense");
        for (int k = 0; k < 13; k++) h[k] = dense[b * 13 + k];
        int in = 13;
        for (int l = 0; l < 4; l++) {
            int outd = l == 3 ? (int)D : bot_dims[l + 1];
            char wn[16], bn[16];
            snprintf(wn, sizeof(wn), "bot.%d.w", l);
            snprintf(bn, sizeof(bn), "bot.%d.b", l);
            const float *W = hbuf(p, hs, wn), *bb = hbuf(p, hs, bn);
            for (int o = 0; o < outd; o++) {
                double s = bb[o];
                for (int k = 0; k < in; k++)
                    s += tf32_mul(W[o * in + k], h[k], tf32);
                h2[o] = s > 0 ? s : 0;
                if (tf32) h2[o] = (float)h2[o];
            }
            memcpy(h, h2, (size_t)outd * sizeof(double));
            in = outd;
        }
        for (int k = 0; k < D; k++) feat[0][k] = h[k];
        for (int t = 0; t < 26; t++) {
            char en[16], in_[16];
            snprintf(en, sizeof(en), "emb.%d", t);
            snprintf(in_, sizeof(in_), "idx.%d", t);
            const float *E = hbuf(p, hs, en);
            const int32_t *I = hs->hptr[bidx(p, in_)];
            for (int k = 0; k < D; k++) feat[t + 1][k] = 0;
            for (int64_t j = 0; j < bag; j++)
                for (int k = 0; k < D; k++) feat[t + 1][k] += E[I[b * bag + j] * D + k];
        }
        double *r = R + b * RC;
        for (int k = 0; k < D; k++) r[k] = feat[0][k];
        int64_t q = D;
        for (int i = 1; i < 27; i++)
            for (int j = 0; j < i; j++) {
                double s = 0;
                for (int k = 0; k < D; k++) s += feat[i][k] * feat[j][k];
                r[q++] = tf32 ? (double)(float)s : s;
            }
        for (int k = 0; k < RC; k++) h[k] = r[k];
        in = (int)RC;
        for (int l = 0; l < 3; l++) {
            int outd = top_dims[l + 1];
            char wn[16], bn[16];
            snprintf(wn, sizeof(wn), "top.%d.w", l);
            snprintf(bn, sizeof(bn), "top.%d.b", l);
            const float *W = hbuf(p, hs, wn), *bb = hbuf(p, hs, bn);
            int m = l == 2 ? 0 : tf32; /* the sigmoid layer is always the fp32 SIMT kernel */
            for (int o = 0; o < outd; o++) {
                double s = bb[o];
                for (int k = 0; k < in; k++)
                    s += tf32_mul(W[o * in + k], h[k], m);
                h2[o] = l == 2 ? 1 / (1 + exp(-s)) : (s > 0 ? s : 0);
                if (tf32) h2[o] = (float)h2[o];
            }
            memcpy(h, h2, (size_t)outd * sizeof(double));
            in = outd;
        }
        y[b] = h[0];
    }
    free(h);
    free(h2);
}

static double rel_l2(const float *a, const double *ref, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += (a[i] - ref[i]) * (a[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

static double rel_l2f(const float *a, const float *b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

#define NVAR 6
static const char *const all_variants[NVAR] = {"unfused",       "fused",      "fused_tbe",
                                               "fused_2stream", "fused_tf32", "fused_tf32x3"};

static void whole_model(const char *bset, const char *bagset, int64_t B, int64_t bag) {
    gr_plan *p[NVAR];
    gr_hoststate *hs[NVAR];
    gr_error e;
    for (int v = 0; v < NVAR; v++) {
        p[v] = dlrm(all_variants[v], bset, "rows_cap=50", bagset);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p[v]);
        gr_error_clear(&e);
        CU_ASSERT_EQUAL_FATAL(gr_hoststate_create(p[v], &hs[v], &e), GR_OK);
        CU_ASSERT_EQUAL_FATAL(gr_hoststate_fill(hs[v], &e), GR_OK);
        CU_ASSERT_EQUAL_FATAL(gr_reference_step(p[v], hs[v], &e), GR_OK);
    }
    double *y = malloc((size_t)B * sizeof(double)), *R = malloc((size_t)B * 367 * sizeof(double));
    naive_forward(p[1], hs[1], B, 16, bag, y, R, 0);
    for (int v = 0; v < NVAR; v++) {
        double ey = rel_l2(hbuf(p[v], hs[v], "y"), y, B), eR = rel_l2(hbuf(p[v], hs[v], "R"), R, B * 367);
        if (ey > 1e-6 || eR > 1e-6) fprintf(stderr, "\n    %s: y rel %.2e R rel %.2e", all_variants[v], ey, eR);
        CU_ASSERT_TRUE(ey < 1e-6);
        CU_ASSERT_TRUE(eR < 1e-6);
        /* the outputs are not degenerate: y spreads over (0, 1) */
        const float *yv = hbuf(p[v], hs[v], "y");
        float lo = 1, hi = 0;
        for (int64_t b = 0; b < B; b++) {
            lo = yv[b] < lo ? yv[b] : lo;
            hi = yv[b] > hi ? yv[b] : hi;
        }
        CU_ASSERT_TRUE(lo > 0.0f && hi < 1.0f);
        if (B > 4) CU_ASSERT_TRUE(hi - lo > 0.05f);
    }
    /* the variants agree with each other far inside the workload's 1e-4; the fused ones (the
     * same references in another grouping: the lookup inside the interaction or not, bot.2 and
     * bot.3 inside it or not, on one stream or two, TF32 allowed or not) bit for bit */
    const char *outs[] = {"bot", "R", "y"};
    for (int o = 0; o < 3; o++) {
        int64_t n = p[0]->bufs[bidx(p[0], outs[o])].numel;
        CU_ASSERT_TRUE(rel_l2f(hbuf(p[1], hs[1], outs[o]), hbuf(p[0], hs[0], outs[o]), n) < 1e-6);
        for (int v = 2; v < NVAR; v++) {
            int same = !memcmp(hbuf(p[1], hs[1], outs[o]), hbuf(p[v], hs[v], outs[o]), (size_t)n * 4);
            if (!same) fprintf(stderr, "\n    %s: %s differs from fused", all_variants[v], outs[o]);
            CU_ASSERT_TRUE(same);
        }
    }
    /* the unfused E pieces equal the TBE output */
    const float *E = hbuf(p[2], hs[2], "E");
    for (int t = 0; t < 26; t += 5) {
        char n[16];
        snprintf(n, sizeof(n), "ebag.%d", t);
        const float *eb = hbuf(p[0], hs[0], n);
        for (int64_t b = 0; b < B; b++) CU_ASSERT_EQUAL(memcmp(eb + b * 16, E + (b * 26 + t) * 16, 64), 0);
    }
    free(y);
    free(R);
    for (int v = 0; v < NVAR; v++) {
        gr_hoststate_destroy(hs[v]);
        gr_plan_destroy(p[v]);
    }
}

static void test_whole_model_reference(void) {
    whole_model("B=5", NULL, 5, 1);
    whole_model("B=3", "bag=3", 3, 3);
}

/* fused_tf32's tolerances against TF32 emulated on the CPU over the whole model (the six ReLU
 * layers' operands rounded, as cuBLASLt's TF32 kernels do): each tolerance must hold the
 * truncating rounding with room to spare (2x), must not be a blanket (at most 20x), and the
 * fp32 variants' 1e-4 must not hold TF32 (or a separate tolerance would not be needed). */
static void test_tf32_tolerances(void) {
    const int64_t B = 64, D = 16, RC = 367;
    gr_plan *p = dlrm("fused_tf32", "B=64", "rows_cap=1000", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_error e;
    gr_error_clear(&e);
    gr_hoststate *hs = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_create(p, &hs, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_fill(hs, &e), GR_OK);
    double *y[3], *R[3], *bot[3];
    for (int m = 0; m < 3; m++) {
        y[m] = malloc((size_t)B * sizeof(double));
        R[m] = malloc((size_t)(B * RC) * sizeof(double));
        bot[m] = malloc((size_t)(B * D) * sizeof(double));
        naive_forward(p, hs, B, D, 1, y[m], R[m], m);
        for (int64_t b = 0; b < B; b++) memcpy(bot[m] + b * D, R[m] + b * RC, (size_t)D * sizeof(double));
    }
    const char *names[3] = {"bot", "R", "y"};
    double *const *outs[3] = {bot, R, y};
    const int64_t n[3] = {B * D, B * RC, B};
    for (int o = 0; o < 3; o++) {
        double err[3] = {0, 0, 0}, den = 0;
        for (int64_t i = 0; i < n[o]; i++) den += outs[o][0][i] * outs[o][0][i];
        for (int m = 1; m < 3; m++) {
            for (int64_t i = 0; i < n[o]; i++) {
                double d = outs[o][m][i] - outs[o][0][i];
                err[m] += d * d;
            }
            err[m] = sqrt(err[m] / den);
        }
        double rtol = p->bufs[bidx(p, names[o])].rtol;
        printf("\n    %s: TF32 emulated rel L2 %.1e (to nearest), %.1e (truncation); rtol %.0e", names[o],
               err[1], err[2], rtol);
        CU_ASSERT_TRUE(err[1] > 0 && err[2] > err[1]);
        CU_ASSERT_TRUE(rtol >= 2 * err[2]);
        CU_ASSERT_TRUE(rtol <= 20 * err[2]);
        CU_ASSERT_TRUE(err[1] > 1e-4);
    }
    for (int m = 0; m < 3; m++) {
        free(y[m]);
        free(R[m]);
        free(bot[m]);
    }
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
}

/* fused_tf32x3 keeps the fp32 variants' 1e-4 because 3xTF32 is fp32-accurate: emulated over
 * the whole model (the six ReLU layers' products split as the tc kernel splits them), its
 * error must sit well inside 1e-4 (10x), and far below one-pass TF32's (50x), or the split
 * would not be doing its job. */
static void test_tf32x3_tolerances(void) {
    const int64_t B = 64, D = 16, RC = 367;
    gr_plan *p = dlrm("fused_tf32x3", "B=64", "rows_cap=1000", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_error e;
    gr_error_clear(&e);
    gr_hoststate *hs = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_create(p, &hs, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_fill(hs, &e), GR_OK);
    static const int modes[3] = {0, 1, 3};
    double *y[3], *R[3];
    for (int m = 0; m < 3; m++) {
        y[m] = malloc((size_t)B * sizeof(double));
        R[m] = malloc((size_t)(B * RC) * sizeof(double));
        naive_forward(p, hs, B, D, 1, y[m], R[m], modes[m]);
    }
    const char *names[2] = {"R", "y"};
    double *const *outs[2] = {R, y};
    const int64_t n[2] = {B * RC, B};
    for (int o = 0; o < 2; o++) {
        double err[3] = {0, 0, 0}, den = 0;
        for (int64_t i = 0; i < n[o]; i++)
            den += outs[o][0][i] * outs[o][0][i];
        for (int m = 1; m < 3; m++) {
            for (int64_t i = 0; i < n[o]; i++) {
                double d = outs[o][m][i] - outs[o][0][i];
                err[m] += d * d;
            }
            err[m] = sqrt(err[m] / den);
        }
        double rtol = p->bufs[bidx(p, names[o])].rtol;
        printf("\n    %s: rel L2 3xTF32 emulated %.1e, TF32 %.1e; rtol %.0e", names[o], err[2],
               err[1], rtol);
        CU_ASSERT_DOUBLE_EQUAL(rtol, 1e-4, 0);
        CU_ASSERT_TRUE(err[2] > 0 && err[2] < rtol / 10);
        CU_ASSERT_TRUE(err[2] < err[1] / 50);
    }
    for (int m = 0; m < 3; m++) {
        free(y[m]);
        free(R[m]);
    }
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
}

/* auto does not depend on the compute capability (it never picks wg: measured no faster, see
 * check_linear), auto_wg does (wg for tf32x3's tc and lt choices on 9.0 only), and impl wg is
 * refused off compute capability 9.0 (no sm_90a code there) with a message naming the capability
 * and the fix. */
static void test_linear_impl_choice_cc(void) {
    static const struct {
        int M, N, K;
        const char *attrs;
        int impl;
    } cases[] = {
        {2048, 256, 512, "\"math\": \"tf32x3\"", GR_LINEAR_TC},
        {2048, 256, 68, "\"math\": \"tf32x3\"", GR_LINEAR_TC},
        {2048, 512, 367, "\"math\": \"tf32x3\"", GR_LINEAR_LT},
        {2048, 512, 13, "\"math\": \"tf32x3\"", GR_LINEAR_TILED},
        {2048, 256, 512, "", GR_LINEAR_TILED},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        for (int cc = 80; cc <= 100; cc += 10) { /* 8.0, 9.0, 10.0 */
            const char *msg;
            gr_plan *p =
                linear_plan_cc(cases[i].M, cases[i].N, cases[i].K, cases[i].attrs, cc, &msg);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            CU_ASSERT_EQUAL(p->ops[0].ip[GR_LIN_IMPL], cases[i].impl);
            gr_plan_destroy(p);
        }
    const char *msg;
    /* auto_wg: wg on 9.0 where auto takes tc or lt with tf32x3; elsewhere exactly auto */
    for (int cc = 80; cc <= 100; cc += 10) {
        gr_plan *p =
            linear_plan_cc(2048, 512, 367, "\"impl\": \"auto_wg\", \"math\": \"tf32x3\"", cc, &msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(p->ops[0].ip[GR_LIN_IMPL], cc == 90 ? GR_LINEAR_WG : GR_LINEAR_LT);
        gr_plan_destroy(p);
        p = linear_plan_cc(2048, 256, 512, "\"impl\": \"auto_wg\", \"math\": \"tf32x3\"", cc, &msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(p->ops[0].ip[GR_LIN_IMPL], cc == 90 ? GR_LINEAR_WG : GR_LINEAR_TC);
        gr_plan_destroy(p);
        p = linear_plan_cc(2048, 256, 512, "\"impl\": \"auto_wg\"", cc, &msg); /* fp32: tiled */
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(p->ops[0].ip[GR_LIN_IMPL], GR_LINEAR_TILED);
        gr_plan_destroy(p);
        p = linear_plan_cc(2048, 512, 13, "\"impl\": \"auto_wg\", \"math\": \"tf32x3\"", cc, &msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(p->ops[0].ip[GR_LIN_IMPL], GR_LINEAR_TILED);
        gr_plan_destroy(p);
    }
    static const int not90[] = {80, 86, 89, 100, 120};
    for (size_t i = 0; i < sizeof(not90) / sizeof(not90[0]); i++) {
        CU_ASSERT_PTR_NULL(linear_plan_cc(2048, 256, 512, "\"impl\": \"wg\", \"math\": \"tf32x3\"",
                                          not90[i], &msg));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "impl \"wg\" uses sm_90a's wgmma and runs only on "
                                           "compute capability 9.0"));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "use impl \"tc\" or \"auto\""));
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "is 12.0"));
    /* fp32 math on the tensor cores: refused, the fix named */
    CU_ASSERT_PTR_NULL(linear_plan_cc(2048, 256, 512, "\"impl\": \"wg\"", 0, &msg));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(msg, "impl \"wg\" runs on TF32 tensor cores; set math \"tf32x3\""));
    /* the grid's N dimension: 65535 tiles of 128 (one M tile is far from 3/4 of the SMs, but
     * that many N tiles are not) */
    gr_plan *p =
        linear_plan_cc(64, 65535 * 128, 8, "\"impl\": \"wg\", \"math\": \"tf32\"", 0, &msg);
    CU_ASSERT_PTR_NOT_NULL(p);
    gr_plan_destroy(p);
    CU_ASSERT_PTR_NULL(
        linear_plan_cc(64, 65535 * 128 + 1, 8, "\"impl\": \"wg\", \"math\": \"tf32\"", 0, &msg));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "too large for impl \"wg\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "65535 tiles of 128 outputs"));
}

/* The wg kernel's tile (the tall bulk form's 128 x 64 where its blocks reach 3/4 of the 132 SMs,
 * i.e. 99, and the rows fold into tensor-map rows; else 64 x 128 where those do; else 64 x 64,
 * bulk where the rows fold, through shared memory where they do not), launch dims (M tiles in
 * grid x, N tiles in y) and shared memory: 4 or 3 raw stages of BM + BN rows of 36 floats and
 * 3 x 2 operand arrays of BM + BN rows of 32 floats (the shared-memory forms), or the bulk forms'
 * ring, W's operand sets and mbarriers. */
static void test_linear_wg_geometry(void) {
    /* raw stages: 4 (BN = 64) or 3 (BN = 128) x (64 + BN) rows x 36 floats; operands: 3 sets x
     * {big, small} x (64 + BN) rows x 32 floats */
    CU_ASSERT_EQUAL(gr_lin_wg_smem(GR_LIN_W64),
                    (size_t)(4 * 128 * 36 + 6 * 128 * 32) * 4); /* 172032 */
    CU_ASSERT_EQUAL(gr_lin_wg_smem(GR_LIN_W128),
                    (size_t)(3 * 192 * 36 + 6 * 192 * 32) * 4); /* 230400 */
    /* bulk form: 6 raw slots of 128 box rows of up to 36 floats (32 with row fold 1), W's
     * parts, the second MMA warpgroup's 128 x 32 sums, 2 x 6 + 2 x 3 mbarriers of 8 bytes and
     * 1024 bytes of alignment room */
    CU_ASSERT_EQUAL(gr_lin_wg_smem(GR_LIN_W64B),
                    (size_t)(6 * 128 * 36 + 6 * 64 * 32 + 128 * 32) * 4 + 18 * 8 +
                        1024); /* 177296 */
    CU_ASSERT(gr_lin_wg_bulk(GR_LIN_W64B) && !gr_lin_wg_bulk(GR_LIN_W64));
    CU_ASSERT_EQUAL(gr_lin_wg_unbulk(GR_LIN_W64B), GR_LIN_W64);
    CU_ASSERT_EQUAL(gr_lin_wg_unbulk(GR_LIN_W64B2), GR_LIN_W128);
    CU_ASSERT(gr_lin_wg_bulk(GR_LIN_W64B2));
    /* the tall bulk form: 6 slots of 128 x rows and 64 W rows of up to 36 floats, W's parts, no
     * sums (each MMA warpgroup stores its own rows), the mbarriers and the alignment room */
    CU_ASSERT_EQUAL(gr_lin_wg_smem(GR_LIN_W64B2),
                    (size_t)(6 * 192 * 36 + 6 * 64 * 32) * 4 + 18 * 8 + 1024); /* 216208 */
    CU_ASSERT(gr_lin_wg_smem(GR_LIN_W64B2) <= 227 * 1024);
    CU_ASSERT_EQUAL(gr_lin_wg_bm(GR_LIN_NWCFG), 0);
    CU_ASSERT_EQUAL(gr_lin_wg_unbulk(GR_LIN_W128), GR_LIN_W128);
    /* every configuration: BN, threads (128 per warpgroup, the bulk forms' producer warp), raw
     * stages, form */
    static const int cfg[GR_LIN_NWCFG][4] = {[GR_LIN_W64] = {64, 256, 4, 0},
                                             [GR_LIN_W128] = {128, 256, 3, 0},
                                             [GR_LIN_W64B] = {64, 416, 6, 2},
                                             [GR_LIN_W64B2] = {64, 416, 6, 3}};
    for (int c = 0; c < GR_LIN_NWCFG; c++) {
        CU_ASSERT_EQUAL(gr_lin_wg_bm(c), c == GR_LIN_W64B2 ? 128 : 64);
        CU_ASSERT_EQUAL(gr_lin_wg_bn(c), cfg[c][0]);
        CU_ASSERT_EQUAL(gr_lin_wg_threads(c), (unsigned)cfg[c][1]);
        CU_ASSERT_EQUAL(gr_lin_wg_stages(c), cfg[c][2]);
        CU_ASSERT_EQUAL(gr_lin_wcfg(c, GR_LIN_WF_FORM), cfg[c][3]);
    }
    CU_ASSERT(gr_lin_wg_smem(GR_LIN_W128) <= 227 * 1024); /* the H200's opt-in per block */
    CU_ASSERT_EQUAL(gr_lin_wg_threads(GR_LIN_NWCFG), 0);
    CU_ASSERT_EQUAL(gr_lin_wg_bn(GR_LIN_NWCFG), 0);
    static const struct staged_case cases[] = {
        {2048, 512, 367, "tf32x3", GR_LIN_W64B2, 16, 8}, /* 128 tall blocks; rows folded */
        {2046, 512, 367, "tf32x3", GR_LIN_W128, 32, 4},  /* no fold (M % 4 != 0): 64 x 128 */
        {2048, 256, 512, "tf32x3", GR_LIN_W64B, 32, 4},  /* 64 x 128 would be 64 blocks */
        {2048, 256, 68, "tf32", GR_LIN_W64B, 32, 4},
        {2048, 256, 130, "tf32", GR_LIN_W64B, 32, 4},  /* K % 4 == 2: rows folded in pairs */
        {2047, 256, 130, "tf32", GR_LIN_W64, 32, 4},   /* M % 2 != 0: shared-memory form */
        {2048, 254, 367, "tf32", GR_LIN_W64, 32, 4},   /* N % 4 != 0 (K odd): likewise */
        {6336, 128, 64, "tf32", GR_LIN_W64B2, 50, 2},  /* 100 blocks of 128 x 64: enough */
        {6333, 128, 66, "tf32", GR_LIN_W128, 99, 1},   /* no fold: 99 blocks of 64 x 128 */
        {6272, 128, 64, "tf32x3", GR_LIN_W64B, 98, 2}, /* 98 are not */
        {100, 1000, 8, "tf32", GR_LIN_W64B, 2, 16},
        {1, 1, 1, "tf32x3", GR_LIN_W64, 1, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_staged_geometry(&cases[i], "wg", GR_LINEAR_WG, gr_lin_wg_threads(cases[i].cfg),
                              gr_lin_wg_smem(cases[i].cfg));
    /* the attr config names one: w64b on top.0's shape (two waves of 64 x 64), w128 and w64 where
     * the check takes a bulk form, w64b2 on a 256-wide layer */
    const char *attrs = "\"impl\": \"wg\", \"math\": \"tf32x3\"";
    char named[160];
    static const struct {
        const char *cfg;
        struct staged_case c;
    } forced[] = {
        {"w64b", {2048, 512, 367, "tf32x3", GR_LIN_W64B, 32, 8}},
        {"w128", {2048, 256, 512, "tf32x3", GR_LIN_W128, 32, 2}},
        {"w64", {2048, 512, 367, "tf32x3", GR_LIN_W64, 32, 8}},
        {"w64b2", {2048, 256, 512, "tf32x3", GR_LIN_W64B2, 16, 4}},
    };
    for (size_t i = 0; i < sizeof(forced) / sizeof(forced[0]); i++) {
        snprintf(named, sizeof(named), "%s, \"config\": \"%s\"", attrs, forced[i].cfg);
        gr_plan *p = linear_plan(forced[i].c.M, forced[i].c.N, forced[i].c.K, named);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        const gr_op *o = &p->ops[0];
        CU_ASSERT_EQUAL(o->ip[GR_LIN_BN], forced[i].c.cfg);
        CU_ASSERT_EQUAL(o->grid[0], forced[i].c.gx);
        CU_ASSERT_EQUAL(o->grid[1], forced[i].c.gy);
        CU_ASSERT_EQUAL(o->block[0], gr_lin_wg_threads(forced[i].c.cfg));
        CU_ASSERT_EQUAL(o->smem, gr_lin_wg_smem(forced[i].c.cfg));
        gr_plan_destroy(p);
    }
}

/* Register A's x copy piece u (0 .. 3) of lane `lane` of MMA warp w: tile row r (16 w .. 16 w +
 * 15, the rows whose fragments the warp reads) and 16-byte piece q; a warp instruction copies 4
 * whole rows. The emulation below copies a stage with it (the bulk form's TMA copies whole boxes). */
static void wgr_xpiece(int w, int lane, int u, int *r, int *q) {
    const int i = lane + 32 * u;
    *r = 16 * w + (i >> 3);
    *q = i & 7;
}

/* The register-A index maps of the wg bulk form (dlrm.h; the kernel computes its addresses with them): one
 * block's stage emulated on the CPU with wgmma's documented operand semantics (A fragment of lane
 * (g, t) of warp w: rows 16 w + g and + 8, columns t and t + 4; B read through a no-swizzle
 * descriptor starting 2s core matrices on, leading byte offset GR_LIN_WG_LBO, stride byte offset
 * GR_LIN_WG_SBO) must give x W^T exactly (small integers), with every raw piece copied once, by
 * the warp or thread that reads it, and every operand slot written once. */
static void test_linear_wgr_layout(void) {
    enum { BM = 64, KT = GR_LIN_MMA_KT, MAXN = 128 };
    static float raw[BM + MAXN][KT], set[MAXN * KT], A[4][BM][8];
    static int copied[BM + MAXN][KT / 4], written[MAXN * KT], afill[4][BM][8];
    CU_ASSERT_EQUAL(GR_LIN_WG_SBO, KT / 4 * GR_LIN_WG_LBO);
    for (int s = 0; s < 4; s++)
        for (int c = 0; c < 8; c++) /* a lane's columns of the 4 k-steps are 4 consecutive ones */
            CU_ASSERT_EQUAL(gr_lin_wgr_col(s, c), gr_lin_wgr_col(0, c) + s);
    for (int BN = 64; BN <= MAXN; BN += 64) {
        const int rows = BM + BN;
        for (int r = 0; r < rows; r++)
            for (int k = 0; k < KT; k++)
                raw[r][k] = (float)((r * 7 + k * 13) % 11 - 5);
        memset(copied, 0, sizeof(copied));
        memset(written, 0, sizeof(written));
        memset(afill, 0, sizeof(afill));
        int bad = 0;
        /* the MMA warpgroup's copies and fragment loads */
        for (int w = 0; w < 4; w++)
            for (int lane = 0; lane < 32; lane++) {
                for (int u = 0; u < 4; u++) {
                    int r, q;
                    wgr_xpiece(w, lane, u, &r, &q);
                    bad += r < 16 * w || r >= 16 * w + 16 || q < 0 || q >= KT / 4;
                    if (r >= 0 && r < BM && q >= 0 && q < KT / 4) copied[r][q]++;
                }
                const int g = lane >> 2, t = lane & 3, r0 = 16 * w + g;
                for (int s = 0; s < 4; s++)
                    for (int i = 0; i < 4;
                         i++) { /* a[i]: (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4) */
                        const int m = r0 + 8 * (i & 1), c = t + 4 * (i >> 1);
                        A[s][m][c] = raw[m][gr_lin_wgr_col(0, c) + s];
                        afill[s][m][c]++;
                    }
            }
        /* the producers' copies, split loads and operand stores */
        for (int p = 0; p < 2 * BN; p++) {
            int n, h;
            gr_lin_wgr_pair(p, &n, &h);
            bad += n < 0 || n >= BN || h < 0 || h > 1;
            if (n < 0 || n >= BN || h < 0 || h > 1) continue;
            for (int j = 0; j < 4; j++) {
                const int col = gr_lin_wgr_col(0, 4 * h + j);
                bad += col % 4 != 0;
                copied[BM + n][col / 4]++;
                for (int s = 0; s < 4; s++) {
                    const int o = gr_lin_wg_off(n, 2 * s + h) + j;
                    bad += o < 0 || o >= BN * KT;
                    if (o < 0 || o >= BN * KT) continue;
                    set[o] = raw[BM + n][col + s];
                    written[o]++;
                }
            }
        }
        CU_ASSERT_EQUAL(bad, 0);
        int once = 1;
        for (int r = 0; r < rows; r++)
            for (int q = 0; q < KT / 4; q++)
                once &= copied[r][q] == 1;
        for (int o = 0; o < BN * KT; o++)
            once &= written[o] == 1;
        for (int s = 0; s < 4; s++)
            for (int m = 0; m < BM; m++)
                for (int c = 0; c < 8; c++)
                    once &= afill[s][m][c] == 1;
        CU_ASSERT(once);
        /* wgmma, k-step s: B[n][c] at 2s core matrices on, + (c / 4) LBO, + (n / 8) SBO, row n % 8
         */
        int exact = 1;
        for (int m = 0; m < BM; m++)
            for (int n = 0; n < BN; n++) {
                double d = 0, ref = 0;
                for (int s = 0; s < 4; s++)
                    for (int c = 0; c < 8; c++) {
                        const int byte = (2 * s + c / 4) * GR_LIN_WG_LBO + (n / 8) * GR_LIN_WG_SBO +
                                         (n % 8) * 16 + (c % 4) * 4;
                        d += (double)A[s][m][c] * (double)set[byte / 4];
                    }
                for (int k = 0; k < KT; k++)
                    ref += (double)raw[m][k] * (double)raw[BM + n][k];
                exact &= d == ref;
            }
        CU_ASSERT(exact);
    }
}

/* The bulk wg form's folded tensor maps (dlrm.h: gr_lin_wgb_fold, gr_lin_wgb_box,
 * gr_lin_wgb_slot_row; tmap_of in dlrm.cu encodes the map the same way): a TMA box copy emulated
 * on the CPU over the map [rows / f][f K] (zero fill past it; box starts 16-byte aligned, boxes
 * 32 floats wide for f = 1 and 36 for f > 1), then the kernel's zeroing of columns past K, must
 * put x[row0 + r][k0 + c] at slot row gr_lin_wgb_slot_row(r, f), column shift + c, and zeros past
 * K and past the rows, for every stage and tile of ragged and aligned shapes; before the zeroing,
 * anything but the matrix's own value may appear only past K. */
static void test_linear_wgb_fold(void) {
    enum { BM = GR_LIN_WG_BM, KT = GR_LIN_MMA_KT, LD = GR_LIN_WG_LD };
    static const int shapes[][2] = {{64, 512}, {100, 367}, {68, 130},   {132, 13}, {8, 1},
                                    {128, 66}, {4, 3},     {2048, 367}, {64, 68}};
    static float slot[BM][LD];
    CU_ASSERT_EQUAL(gr_lin_wgb_fold(512), 1);
    CU_ASSERT_EQUAL(gr_lin_wgb_fold(130), 2);
    CU_ASSERT_EQUAL(gr_lin_wgb_fold(367), 4);
    CU_ASSERT_EQUAL(gr_lin_wgb_fold(13), 4);
    CU_ASSERT(gr_lin_wgb_ok(2048, 512, 367) && gr_lin_wgb_ok(2048, 256, 130));
    CU_ASSERT(!gr_lin_wgb_ok(2046, 512, 367) && !gr_lin_wgb_ok(2048, 255, 130));
    CU_ASSERT(gr_lin_wgb_ok(2047, 255, 512));
    for (int f = 1; f <= 4; f *= 2) { /* the slot rows are a permutation of the tile's */
        int seen[BM] = {0}, perm = 1;
        for (int r = 0; r < BM; r++) {
            const int sr = gr_lin_wgb_slot_row(r, f);
            if (sr >= 0 && sr < BM)
                seen[sr]++;
            else
                perm = 0;
        }
        for (int r = 0; r < BM; r++)
            perm &= seen[r] == 1;
        CU_ASSERT(perm);
    }
    int bad = 0, leaks_inside = 0, runs_on = 0;
    for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
        const int rows = shapes[si][0], K = shapes[si][1], f = gr_lin_wgb_fold(K);
        CU_ASSERT_EQUAL_FATAL((f * K) % 4, 0); /* 16-byte map rows */
        CU_ASSERT_EQUAL_FATAL(rows % f, 0);
        float *x = malloc((size_t)rows * (size_t)K * sizeof(float));
        CU_ASSERT_PTR_NOT_NULL_FATAL(x);
        for (int i = 0; i < rows * K; i++)
            x[i] = (float)(i % 1000 + 1); /* no zeros: a wrong zero shows */
        const int64_t inner = (int64_t)f * K, outer = rows / f;
        const int width = f > 1 ? LD : KT;
        int shift[4] = {0};
        for (int row0 = 0; row0 < rows; row0 += BM)
            for (int k0 = 0; k0 < K; k0 += KT) {
                for (int b = 0; b < f; b++) { /* box b: width x BM / f map elements */
                    int c0, c1;
                    gr_lin_wgb_box(b, f, K, k0, row0, &c0, &c1, &shift[b]);
                    bad += c0 % 4 != 0 || c0 < 0 || shift[b] < 0 || shift[b] + KT > width;
                    bad += f == 1 && shift[b] != 0;
                    for (int a = 0; a < BM / f; a++)
                        for (int c = 0; c < width; c++) {
                            const int64_t i = c0 + c, o = c1 + a;
                            slot[b * (BM / f) + a][c] =
                                i < inner && o < outer ? x[o * inner + i] : 0.f;
                        }
                }
                for (int r = 0; r < BM; r++)
                    for (int c = 0; c < KT; c++) {
                        const int m = row0 + r, k = k0 + c;
                        const float v = slot[gr_lin_wgb_slot_row(r, f)][shift[r % f] + c];
                        const float want = m < rows && k < K ? x[(int64_t)m * K + k] : 0.f;
                        if (v != want) {
                            if (k < K)
                                leaks_inside++;
                            else
                                runs_on++;
                        }
                        const float z = k - k0 >= K - k0 ? 0.f : v; /* the kernel's zeroing */
                        bad += z != want;
                    }
            }
        free(x);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(leaks_inside, 0);
    CU_ASSERT(runs_on > 0); /* the folded boxes do run on past K: the zeroing is needed */
}

static CU_TestInfo dlrm_tests[] = {
    {"registry names", test_registry_names},
    {"tril pair mapping", test_tril_pairs},
    {"embedding references", test_embedding_reference},
    {"bias/sigmoid/concat/tril/interaction/linear references", test_small_kernel_references},
    {"embedding_interaction reference", test_emb_interaction_reference},
    {"PDL prefetch flags", test_pdl_prefetch_flags},
    {"linear tile width", test_linear_tile_width},
    {"linear impl choice", test_linear_impl_choice},
    {"linear tiled tile and launch dims", test_linear_tiled_geometry},
    {"linear tc tile and launch dims", test_linear_tc_geometry},
    {"linear config attr names the tile configuration", test_linear_config_attr},
    {"linear config attr errors name the op and the choices", test_linear_config_errors},
    {"linear impl choice at compute capability 8.0, 9.0, 10.0; wg refused off 9.0",
     test_linear_impl_choice_cc},
    {"linear wg tile, launch dims and shared memory", test_linear_wg_geometry},
    {"linear wg register-A form: index maps emulated", test_linear_wgr_layout},
    {"linear wg bulk form: folded tensor-map boxes emulated", test_linear_wgb_fold},
    {"check errors name the op", test_check_errors},
    {"interaction rows_per_block attr", test_interaction_rows_attr},
    {"dlrm_small accounting and impl choice", test_dlrm_accounting},
    {"whole model reference vs naive forward", test_whole_model_reference},
    {"fused_tf32 tolerances vs emulated TF32", test_tf32_tolerances},
    {"fused_tf32x3 tolerances vs emulated 3xTF32", test_tf32x3_tolerances},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_dlrm_suites[] = {{"dlrm", dlrm_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_dlrm_suites)
