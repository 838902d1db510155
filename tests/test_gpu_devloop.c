/* GPU suite for --device-loop: a conditional WHILE node runs N steps per launch. Each loop is
 * checked against N eager steps (as --unroll is), a second launch must run N more (the counter is
 * reloaded on every launch), and the pipeline's stages time it per step. Without a device every
 * test prints "SKIPPED: no CUDA device" and counts as skipped. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/workload.h"
#include "kernels/registry.h"
#include "replay/pipeline.h"
#include "replay/session.h"
#include "tests.h"

static gr_device_info info;

static int device_ready(void) {
    gr_error e;
    gr_error_clear(&e);
    return gr_device_probe(0, &info, &e) == GR_OK;
}

static gr_plan *bundled(const char *file, const char *variant, const char *set1, const char *set2) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(gr_test_src(file), &wl, &e) != GR_OK) return NULL;
    if (set1) gr_workload_set(wl, set1, &e);
    if (set2) gr_workload_set(wl, set2, &e);
    gr_plan *p = NULL;
    gr_target t = gr_target_from_info(&info);
    gr_plan_resolve(wl, variant, &t, gr_kernel_find, gr_kernel_all_names, &p, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    gr_workload_destroy(wl);
    return p;
}

static int loop_supported(void) {
    char why[200];
    if (gr_graph_loop_supported(why, sizeof(why))) return 1;
    gr_test_skip("device loop", "%s", why);
    return 0;
}

/* Every loop against N eager steps, with and without PDL; kernels, nodes and edges per body (less
 * the tail kernel and its in-edges) = the one-step graph's. */
static void test_loop_matches_eager(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    if (!loop_supported()) return;
    static const struct {
        const char *file, *variant, *set1, *set2;
        int steps;
    } cases[] = {
        {"workloads/launch_bound.json", "tiny", "K=300", NULL, 7},
        {"workloads/launch_bound.json", "empty", "K=50", NULL, 1},
        {"workloads/pointwise_fusion.json", "unfused", "n=1000003", NULL, 5},
        {"workloads/pointwise_fusion.json", "fused_vec", "n=4096", NULL, 20},
        {"workloads/decode_step.json", "fused", "L=2", "dtype=fp32", 3},
        {"workloads/decode_step.json", "unfused", "L=2", "d=256", 4},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int pdl = 0; pdl < 2; pdl++) {
            gr_plan *p = bundled(cases[i].file, cases[i].variant, cases[i].set1, cases[i].set2);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            gr_error e;
            gr_error_clear(&e);
            gr_session *s = NULL;
            CU_ASSERT_EQUAL_FATAL(gr_session_create(p, info.sm_count, &s, &e), GR_OK);
            s->dev->pdl = pdl && info.cc_major >= 9;
            CU_ASSERT_EQUAL(gr_session_reference(s, &e), GR_OK);
            CU_ASSERT_EQUAL(gr_session_verify_eager(s, &e), GR_OK);
            CU_ASSERT_EQUAL(gr_session_capture(s, GR_CAPTURE_GLOBAL, NULL, &e), GR_OK);
            gr_status st = gr_session_capture_loop(s, GR_CAPTURE_GLOBAL, cases[i].steps, NULL, &e);
            if (st != GR_OK || !s->checks.verified)
                fprintf(stderr, "\n    %s %s pdl %d: %s", cases[i].file, cases[i].variant, pdl, e.msg);
            CU_ASSERT_EQUAL(st, GR_OK);
            CU_ASSERT_TRUE(s->checks.verified);
            CU_ASSERT_EQUAL(s->graph_loop.steps, cases[i].steps);
            CU_ASSERT_TRUE(s->graph_loop.device_loop);
            CU_ASSERT_EQUAL(s->graph_loop.kernel_nodes, s->graph.kernel_nodes);
            CU_ASSERT_EQUAL(s->graph_loop.nodes, s->graph.nodes);
            CU_ASSERT_EQUAL(s->graph_loop.edges, s->graph.edges); /* less the tail's in-edges */
            gr_timing t;
            gr_time_opts o = {3, 10 * cases[i].steps, 5, 0, NULL, NULL, NULL, NULL};
            CU_ASSERT_EQUAL(gr_session_time_loop(s, &o, &t, &e), GR_OK);
            CU_ASSERT_EQUAL(t.steps_per_launch, cases[i].steps);
            CU_ASSERT_TRUE(t.step_us.median > 0);
            gr_session_destroy(s);
            gr_plan_destroy(p);
        }
    }
}

/* Two launches run 2N steps: the counter is reloaded and the condition reset on every launch.
 * launch_bound tiny adds c to x K times per step, so x after k steps tells k. */
static void test_loop_relaunch(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    if (!loop_supported()) return;
    gr_plan *p = bundled("workloads/launch_bound.json", "tiny", "K=10", "n=256");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_error e;
    gr_error_clear(&e);
    gr_session *s = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_session_create(p, info.sm_count, &s, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_session_capture_loop(s, GR_CAPTURE_GLOBAL, 6, NULL, &e), GR_OK);
    int out = -1;
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].is_output) out = b;
    CU_ASSERT_TRUE_FATAL(out >= 0);
    size_t bytes = p->bufs[out].bytes;
    float *loop2 = malloc(bytes), *eager12 = malloc(bytes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(loop2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(eager12);
    CU_ASSERT_EQUAL(gr_devstate_init_buffers(s->dev, &e), GR_OK);
    for (int k = 0; k < 12; k++) CU_ASSERT_EQUAL(gr_exec_step(p, s->dev, NULL, &e), GR_OK);
    CU_ASSERT_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    CU_ASSERT_EQUAL(gr_devstate_download(s->dev, out, eager12, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_devstate_init_buffers(s->dev, &e), GR_OK);
    for (int k = 0; k < 2; k++) CU_ASSERT_EQUAL(gr_graph_launch(&s->graph_loop, s->dev->streams[0], &e), GR_OK);
    CU_ASSERT_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
    CU_ASSERT_EQUAL(gr_devstate_download(s->dev, out, loop2, &e), GR_OK);
    size_t bad = 0;
    for (size_t i = 0; i < bytes / sizeof(float); i++) bad += !(loop2[i] == eager12[i]);
    CU_ASSERT_EQUAL(bad, 0);
    if (bad) fprintf(stderr, "\n    two launches of a 6-step loop differ from 12 eager steps at %zu elements", bad);
    free(loop2);
    free(eager12);
    gr_session_destroy(s);
    gr_plan_destroy(p);
}

/* The run pipeline with --device-loop: its stages run, the variant is verified and timed. */
static void test_loop_pipeline(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    if (!loop_supported()) return;
    gr_plan *p = bundled("workloads/pointwise_fusion.json", "unfused", "n=4096", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_run_opts o;
    gr_run_opts_default(&o);
    o.iters = 200;
    o.batches = 5;
    o.progress = 0;
    o.hooks = NULL;
    o.unroll = 10;
    o.device_loop = 10;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_run_opts_resolve_pdl(&o, info.cc_major, info.cc_minor, &e), GR_OK);
    gr_variant_run v;
    memset(&v, 0, sizeof(v));
    gr_pipe pipe;
    gr_pipe_init(&pipe, p, info.sm_count, &o, &v);
    gr_status st = gr_pipe_run(&pipe, gr_pipe_run_stages, gr_pipe_run_nstages, &e);
    if (st != GR_OK) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_EQUAL(st, GR_OK);
    CU_ASSERT_TRUE(v.checks.verified);
    CU_ASSERT_TRUE(v.loop_timed);
    CU_ASSERT_EQUAL(v.loop_t.steps_per_launch, 10);
    int saw = 0;
    for (int i = 0; i < v.nstages; i++)
        if (!strcmp(v.stages[i].stage, "device_loop") || !strcmp(v.stages[i].stage, "time_device_loop"))
            saw += v.stages[i].ran;
    CU_ASSERT_EQUAL(saw, 2);
    fprintf(stderr, "\n    pointwise unfused n=4096: graph --unroll 10 %.2f us/step (host %.3f), device loop 10 %.2f us/step (host %.3f)",
            v.graph_t.step_us.median, v.graph_t.submit_us.median, v.loop_t.step_us.median,
            v.loop_t.submit_us.median);
    gr_pipe_free(&pipe);
    gr_variant_run_clear(&v);
    gr_plan_destroy(p);
}

static CU_TestInfo devloop_tests[] = {
    {"device loop == N eager steps (PDL on and off)", test_loop_matches_eager},
    {"two launches run 2N steps", test_loop_relaunch},
    {"run pipeline with --device-loop", test_loop_pipeline},
    CU_TEST_INFO_NULL};
static gr_suite_def gr_devloop_suites[] = {{"gpu_device_loop", devloop_tests, 1}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_devloop_suites)
