/* Tensor-parallel GPU suite: `graphrun tp` through gr_tp_run. On one GPU (P = 1) the all-reduce
 * is a real NCCL call in the eager step and in the graph (a one-rank communicator turns it into
 * a device copy); the result is checked against the unsharded decode step on the same GPU, the
 * unsharded and the sharded CPU references, graph against eager, in fp32 (tight) and bf16 at the
 * default width, for B = 1 and 3, several consecutive steps, and every capture mode. P = 2, 4
 * and 8 run the same checks in suites of their own (gpu_tp_p2, _p4, _p8), each skipped
 * ("needs N CUDA devices, found M") when fewer devices are visible, so that a one-GPU machine
 * shows them as not run and gpu_tp as passed. Without a device every test is skipped. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/workload.h"
#include "kernels/registry.h"
#include "kernels/tp.h"
#include "replay/session.h"
#include "replay/tp.h"
#include "tests.h"

static int skip_unless_devices(int n, const char *test) {
    int found = gr_tp_visible_devices();
    if (found >= n) return 0;
    gr_test_skip(test, "needs %d CUDA devices, found %d", n, found);
    return 1;
}

static void print_failures(const gr_tp_report *r, const gr_error *e, const char *label) {
    if (gr_error_failed(e)) fprintf(stderr, "\n    %s: %s", label, e->msg);
    for (int i = 0; i < r->single.checks.n; i++)
        if (!r->single.checks.v[i].passed)
            fprintf(stderr, "\n    %s: 1 GPU %s %s rel %.3e (rtol %.1e)", label,
                    r->single.checks.v[i].buffer, r->single.checks.v[i].what,
                    r->single.checks.v[i].rel_l2, r->single.checks.v[i].rtol);
    for (int k = 0; k < r->nruns; k++)
        for (int i = 0; i < r->runs[k].checks.n; i++) {
            const gr_check *c = &r->runs[k].checks.v[i];
            if (!c->passed)
                fprintf(stderr, "\n    %s: P=%d %s %s rel %.3e max %.3e nonfinite %lld (rtol %.1e)",
                        label, r->runs[k].P, c->buffer, c->what, c->rel_l2, c->max_abs,
                        (long long)c->nonfinite, c->rtol);
        }
}

static void quick_opts(gr_tp_opts *o) {
    gr_tp_opts_default(o);
    o->run.iters = 40;
    o->run.warmup = 4;
    o->run.batches = 4;
    o->run.progress = 0;
}

/* Runs Ps at the given sets and checks everything a run reports. Returns the report (free it)
 * or NULL after an assertion failed. */
static gr_tp_report *run_tp(const char **sets, int nsets, const int *Ps, int nP,
                            const gr_tp_opts *o, const char *label) {
    gr_tp_req req = {gr_test_src("workloads/decode_tp.json"), NULL, sets, nsets, NULL};
    gr_tp_report *r = calloc(1, sizeof(*r));
    gr_error e;
    gr_error_clear(&e);
    gr_status st = gr_tp_run(&req, Ps, nP, o, r, &e);
    if (st != GR_OK) print_failures(r, &e, label);
    CU_ASSERT_EQUAL(st, GR_OK);
    CU_ASSERT_TRUE(r->single.verified);
    CU_ASSERT_EQUAL(r->nruns, nP);
    int L = (int)r->shape.L;
    for (int k = 0; k < r->nruns; k++) {
        const gr_tp_result *x = &r->runs[k];
        CU_ASSERT_TRUE(x->verified);
        /* graph vs eager per rank, ranks against rank 0, against the single GPU; with the CPU
         * references: the sharded one reassembled against the unsharded one (x, act, tdown),
         * eager against the unsharded one, eager and graph x and the gathered act and summed
         * tdown against the sharded one */
        int want = x->P + (x->P - 1) + 1 + (o->run.cpu_reference ? 3 + 5 : 0);
        if (x->checks.n != want)
            fprintf(stderr, "\n    %s: %d checks, want %d", label, x->checks.n, want);
        CU_ASSERT_EQUAL(x->checks.n, want);
        for (int i = 0; i < x->checks.n; i++) {
            CU_ASSERT_TRUE(x->checks.v[i].passed);
            CU_ASSERT_EQUAL(x->checks.v[i].nonfinite, 0);
            /* NCCL sends every rank the same reduced values in practice (not an API promise) */
            if (!strcmp(x->checks.v[i].what, "eager vs rank 0") && !x->checks.v[i].identical)
                fprintf(stderr, "\n    %s: %s is not bitwise identical to rank 0's (rel %.1e)",
                        label, x->checks.v[i].buffer, x->checks.v[i].rel_l2);
        }
        for (int p = 0; p < x->P; p++) {
            const gr_graph *g = &x->rank[p].graph;
            /* 3 kernels per layer, and each all-reduce inside the graph: a kernel across ranks, a
             * device copy on one rank */
            CU_ASSERT_TRUE(g->kernel_nodes >= (size_t)(3 * L));
            CU_ASSERT_TRUE(g->kernel_nodes + g->memcpy_nodes >= (size_t)(4 * L));
            if (x->P == 1) CU_ASSERT_EQUAL(g->kernel_nodes + g->memcpy_nodes, (size_t)(4 * L));
            if (o->comm_share) {
                /* no all-reduce left in the compute-only graph; only them in the other */
                CU_ASSERT_EQUAL(x->rank[p].graph_compute.kernel_nodes, (size_t)(3 * L));
                CU_ASSERT_EQUAL(x->rank[p].graph_compute.memcpy_nodes, 0);
                CU_ASSERT_TRUE(x->rank[p].graph_comm.nodes >= (size_t)L);
            }
            if (p == 0 || g->kernel_nodes + g->memcpy_nodes < (size_t)(4 * L))
                fprintf(
                    stderr,
                    "\n    %s P=%d rank %d graph: %zu nodes, %zu kernels, %zu copies, %zu edges",
                    label, x->P, p, g->nodes, g->kernel_nodes, g->memcpy_nodes, g->edges);
        }
        gr_tp_derived d;
        gr_tp_derive(r, x, &d);
        CU_ASSERT_TRUE(d.valid);
        CU_ASSERT_TRUE(d.us[GR_TP_EAGER] > 0 && d.us[GR_TP_GRAPH] > 0);
        if (o->comm_share) {
            CU_ASSERT_TRUE(d.us[GR_TP_GRAPH_COMPUTE] > 0 && d.us[GR_TP_GRAPH_COMM] > 0);
            CU_ASSERT_TRUE(d.comm_share_graph < 1.0);
        }
        if (d.valid)
            fprintf(stderr,
                    "\n    %s P=%d: eager %.1f us, graph %.1f us, no all-reduce %.1f us, "
                    "all-reduces alone %.1f us",
                    label, x->P, d.us[GR_TP_EAGER], d.us[GR_TP_GRAPH], d.us[GR_TP_GRAPH_COMPUTE],
                    d.us[GR_TP_GRAPH_COMM]);
    }
    if (r->single.timed) CU_ASSERT_TRUE(r->single.graph_t.step_us.median > 0);
    CU_ASSERT_TRUE(r->nccl_version[0] != '\0');
    return r;
}

static const char *small_fp32[] = {"L=2", "d=256", "f=512", "r=16", "B=1", "dtype=fp32"};
/* for P up to 8: f/P >= 128 */
static const char *multi_fp32[] = {"L=2", "d=256", "f=1024", "r=16", "B=2", "dtype=fp32"};

static void test_p1_fp32(void) {
    GR_REQUIRE_GPU();
    gr_tp_opts o;
    quick_opts(&o);
    o.run.rtol = 1e-4; /* fp32: the sharded and the unsharded steps agree to ~1e-6 */
    int P1[] = {1};
    free(run_tp(small_fp32, 6, P1, 1, &o, "fp32 B=1"));
    const char *b3[] = {"L=3", "d=256", "f=512", "r=16", "B=3", "dtype=fp32"};
    free(run_tp(b3, 6, P1, 1, &o, "fp32 B=3"));
}

/* bf16 at the default width and depth 4, the documented tolerance */
static void test_p1_bf16_default_width(void) {
    GR_REQUIRE_GPU();
    gr_tp_opts o;
    quick_opts(&o);
    const char *sets[] = {"L=4"};
    int P1[] = {1};
    gr_tp_report *r = run_tp(sets, 1, P1, 1, &o, "bf16 d2048 f8192 L4");
    if (r) {
        CU_ASSERT_EQUAL(r->shape.d, 2048);
        CU_ASSERT_EQUAL(r->shape.f, 8192);
    }
    gr_tp_report_clear(r);
    free(r);
}

/* three steps without re-initialisation: the accumulators are re-zeroed inside each step, in
 * the eager loop and in three replays of one graph */
static void test_three_steps(void) {
    GR_REQUIRE_GPU();
    gr_tp_opts o;
    quick_opts(&o);
    o.run.rtol = 1e-4;
    o.run.steps = 3;
    o.comm_share = 0;
    o.single_timing = 0;
    int P1[] = {1};
    free(run_tp(small_fp32, 6, P1, 1, &o, "fp32 3 steps"));
}

static void test_capture_modes(void) {
    GR_REQUIRE_GPU();
    gr_capture_mode modes[] = {GR_CAPTURE_THREAD_LOCAL, GR_CAPTURE_RELAXED, GR_CAPTURE_GLOBAL};
    for (int m = 0; m < 3; m++) {
        gr_tp_opts o;
        quick_opts(&o);
        o.run.rtol = 1e-4;
        o.run.mode = modes[m];
        o.single_timing = 0;
        o.run.cpu_reference = m != 1; /* and once without the CPU references */
        char label[64];
        snprintf(label, sizeof(label), "capture %s", gr_capture_mode_name(modes[m]));
        int P1[] = {1};
        free(run_tp(small_fp32, 6, P1, 1, &o, label));
    }
}

static void multi(int P) {
    char name[32];
    snprintf(name, sizeof(name), "P = %d", P);
    if (skip_unless_devices(P, name)) return;
    gr_tp_opts o;
    quick_opts(&o);
    o.run.rtol = 1e-4;
    int Ps[] = {P};
    free(run_tp(multi_fp32, 6, Ps, 1, &o, name));
    /* bf16 at the default width, two layers */
    gr_tp_opts ob;
    quick_opts(&ob);
    const char *bf[] = {"L=2"};
    free(run_tp(bf, 1, Ps, 1, &ob, name));
}

static void test_p2(void) {
    GR_REQUIRE_GPU();
    multi(2);
}

static void test_p4(void) {
    GR_REQUIRE_GPU();
    multi(4);
}

static void test_p8(void) {
    GR_REQUIRE_GPU();
    multi(8);
}

/* every P the machine has, in one run (as bench/suites/tp.sh does on a multi-GPU machine) */
static void test_sweep(void) {
    GR_REQUIRE_GPU();
    if (skip_unless_devices(2, "sweep over P")) return;
    int n = gr_tp_visible_devices(), Ps[4], nP = 0;
    for (int P = 1; P <= 8 && P <= n; P *= 2)
        Ps[nP++] = P;
    gr_tp_opts o;
    quick_opts(&o);
    o.run.rtol = 1e-4;
    free(run_tp(multi_fp32, 6, Ps, nP, &o, "sweep"));
}

/* The all-reduce outside graphrun tp: a session of a rank plan has no communicator, and the
 * eager step says so by name. */
static void test_allreduce_needs_tp(void) {
    GR_REQUIRE_GPU();
    gr_device_info info;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_device_probe(0, &info, &e), GR_OK);
    gr_workload *wl = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_workload_load_file(gr_test_src("workloads/decode_tp.json"), &wl, &e),
                          GR_OK);
    gr_workload_set(wl, "L=1", &e);
    gr_workload_set(wl, "d=256", &e);
    gr_plan *p = NULL;
    gr_target t = gr_target_from_info(&info);
    const char *v = gr_workload_variant(wl, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    CU_ASSERT_EQUAL_FATAL(gr_plan_resolve(wl, v, &t, gr_kernel_find, gr_kernel_all_names, &p, &e),
                          GR_OK);
    gr_session *s = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_session_create(p, info.sm_count, &s, &e), GR_OK);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_session_verify_eager(s, &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg, "kernel \"allreduce_sum\" needs an NCCL communicator");
    cudaDeviceSynchronize();
    gr_session_destroy(s);
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
}

static CU_TestInfo gpu_tp_tests[] = {
    {"P = 1 fp32 (the all-reduce through NCCL)", test_p1_fp32},
    {"P = 1 bf16 at the default width", test_p1_bf16_default_width},
    {"three steps without re-initialisation", test_three_steps},
    {"capture modes", test_capture_modes},
    {"allreduce_sum needs graphrun tp", test_allreduce_needs_tp},
    CU_TEST_INFO_NULL};
static CU_TestInfo gpu_tp_p2_tests[] = {
    {"P = 2", test_p2}, {"every P of this machine in one run", test_sweep}, CU_TEST_INFO_NULL};
static CU_TestInfo gpu_tp_p4_tests[] = {{"P = 4", test_p4}, CU_TEST_INFO_NULL};
static CU_TestInfo gpu_tp_p8_tests[] = {{"P = 8", test_p8}, CU_TEST_INFO_NULL};

/* one suite per device count, so that each CTest either ran all its tests or skipped them */
static gr_suite_def gr_gpu_tp_suites[] = {{"gpu_tp", gpu_tp_tests, 1},
                                          {"gpu_tp_p2", gpu_tp_p2_tests, 1},
                                          {"gpu_tp_p4", gpu_tp_p4_tests, 1},
                                          {"gpu_tp_p8", gpu_tp_p8_tests, 1},
                                          {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_gpu_tp_suites)
