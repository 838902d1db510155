/* GPU suites: every kernel against its CPU reference on random sizes (odd ones included) and
 * dtypes, eager == graph == reference for the bundled workloads, captured node counts against
 * the plan, capture modes, multi-stream fork/join, and the run driver end to end. Without a
 * device each test prints "SKIPPED: no CUDA device" and counts as skipped. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/workload.h"
#include "kernels/bwprobe.h"
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

static gr_plan *plan_for_device(const char *json, const char *variant, gr_error *e) {
    gr_workload *wl = gr_test_load(json, e);
    if (!wl) return NULL;
    const char *v = gr_workload_variant(wl, variant, e);
    gr_plan *p = NULL;
    gr_target t = gr_target_from_info(&info);
    if (v) gr_plan_resolve(wl, v, &t, gr_kernel_find, gr_kernel_all_names, &p, e);
    gr_workload_destroy(wl);
    return p;
}

/* reference, eager, capture (mode), graph; returns 1 when every check passed */
static int verify_plan(gr_plan *p, gr_capture_mode mode, size_t *kernel_nodes) {
    gr_error e;
    gr_error_clear(&e);
    gr_session *s = NULL;
    int ok = 0;
    if (gr_session_create(p, info.sm_count, &s, &e) == GR_OK && gr_session_reference(s, &e) == GR_OK &&
        gr_session_verify_eager(s, &e) == GR_OK && gr_session_capture(s, mode, NULL, &e) == GR_OK &&
        gr_session_verify_graph(s, &e) == GR_OK) {
        ok = s->checks.verified && s->checks.n >= 2;
        if (kernel_nodes) *kernel_nodes = s->graph.kernel_nodes;
        if (!ok)
            for (int i = 0; i < s->checks.n; i++)
                if (!s->checks.v[i].passed)
                    fprintf(stderr, "\n    %s %s: rel %.3e nonfinite %lld", s->checks.v[i].buffer,
                            s->checks.v[i].what, s->checks.v[i].rel_l2, (long long)s->checks.v[i].nonfinite);
    } else {
        fprintf(stderr, "\n    %s", e.msg);
    }
    gr_session_destroy(s);
    return ok;
}

static const char *dtypes[] = {"fp32", "bf16", "fp16"};

static void test_pointwise_kernels_vs_reference(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *kernels3[] = {"add_mul_act", "add_mul_act_vec"};
    const char *acts[] = {"relu", "gelu", "silu", "none"};
    long sizes[] = {1, 3, 17, 1000, 4097, (1 << 20) + 3, 0};
    srand(1234);
    sizes[6] = 1 + rand() % 3000000;
    int runs = 0, fails = 0;
    for (int d = 0; d < 3; d++)
        for (int si = 0; si < 7; si++) {
            char json[4096];
            /* one plan per (dtype, size) exercising every pointwise kernel */
            int o = snprintf(json, sizeof(json),
                             "{\"name\": \"k\", \"params\": {\"n\": %ld}, \"buffers\": ["
                             "{\"name\": \"a\", \"dtype\": \"%s\", \"shape\": [\"n\"], \"init\": \"normal\"},"
                             "{\"name\": \"b\", \"dtype\": \"%s\", \"shape\": [\"n\"], \"init\": \"normal\"},"
                             "{\"name\": \"c\", \"dtype\": \"%s\", \"shape\": [\"n\"], \"init\": {\"kind\": \"uniform\", \"low\": -2, \"high\": 2}}",
                             sizes[si], dtypes[d], dtypes[d], dtypes[d]);
            const char *outs[] = {"y_add", "y_mul", "y_relu", "y_gelu", "y_silu", "y_act"};
            for (int k = 0; k < 6; k++)
                o += snprintf(json + o, sizeof(json) - (size_t)o, ",{\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": [\"n\"]}", outs[k], dtypes[d]);
            for (int k = 0; k < 2; k++)
                for (int a = 0; a < 4; a++)
                    o += snprintf(json + o, sizeof(json) - (size_t)o, ",{\"name\": \"y_%s_%s\", \"dtype\": \"%s\", \"shape\": [\"n\"]}", kernels3[k], acts[a], dtypes[d]);
            o += snprintf(json + o, sizeof(json) - (size_t)o, "], \"outputs\": [\"y_add\", \"y_mul\", \"y_relu\", \"y_gelu\", \"y_silu\", \"y_act\"");
            for (int k = 0; k < 2; k++)
                for (int a = 0; a < 4; a++)
                    o += snprintf(json + o, sizeof(json) - (size_t)o, ", \"y_%s_%s\"", kernels3[k], acts[a]);
            o += snprintf(json + o, sizeof(json) - (size_t)o,
                          "], \"ops\": [{\"kernel\": \"add\", \"inputs\": [\"a\", \"b\"], \"outputs\": [\"y_add\"]},"
                          "{\"kernel\": \"mul\", \"inputs\": [\"a\", \"c\"], \"outputs\": [\"y_mul\"]},"
                          "{\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"y_relu\"]},"
                          "{\"kernel\": \"gelu\", \"inputs\": [\"a\"], \"outputs\": [\"y_gelu\"]},"
                          "{\"kernel\": \"silu\", \"inputs\": [\"a\"], \"outputs\": [\"y_silu\"]},"
                          "{\"kernel\": \"act\", \"inputs\": [\"a\"], \"outputs\": [\"y_act\"], \"attrs\": {\"fn\": \"gelu\"}}");
            for (int k = 0; k < 2; k++)
                for (int a = 0; a < 4; a++)
                    o += snprintf(json + o, sizeof(json) - (size_t)o,
                                  ",{\"kernel\": \"%s\", \"inputs\": [\"a\", \"b\", \"c\"], \"outputs\": [\"y_%s_%s\"], \"attrs\": {\"act\": \"%s\"}}",
                                  kernels3[k], kernels3[k], acts[a], acts[a]);
            snprintf(json + o, sizeof(json) - (size_t)o, "]}");
            gr_error e;
            gr_error_clear(&e);
            gr_plan *p = plan_for_device(json, NULL, &e);
            if (!p) fprintf(stderr, "\n    %s", e.msg);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            size_t nodes = 0;
            int ok = verify_plan(p, GR_CAPTURE_GLOBAL, &nodes);
            if (!ok) {
                fails++;
                fprintf(stderr, "\n    failed: dtype %s n %ld", dtypes[d], sizes[si]);
            }
            CU_ASSERT_EQUAL(nodes, (size_t)p->kernels);
            runs++;
            gr_plan_destroy(p);
        }
    CU_ASSERT_EQUAL(fails, 0);
    CU_ASSERT_EQUAL(runs, 21);
}

static void test_probe_kernels(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    for (int d = 0; d < 3; d++) {
        char json[1024];
        snprintf(json, sizeof(json),
                 "{\"name\": \"p\", \"buffers\": [{\"name\": \"x\", \"dtype\": \"%s\", \"shape\": [300], \"init\": \"normal\"}],"
                 " \"outputs\": [\"x\"], \"ops\": [{\"kernel\": \"empty\", \"inputs\": [], \"outputs\": [], \"attrs\": {\"blocks\": 2, \"threads\": 64}},"
                 " {\"repeat\": 50, \"ops\": [{\"kernel\": \"tiny\", \"inputs\": [\"x\"], \"outputs\": [\"x\"], \"attrs\": {\"c\": 0.25}}]}]}",
                 dtypes[d]);
        gr_error e;
        gr_error_clear(&e);
        gr_plan *p = plan_for_device(json, NULL, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        size_t nodes = 0;
        CU_ASSERT_TRUE(verify_plan(p, GR_CAPTURE_GLOBAL, &nodes));
        CU_ASSERT_EQUAL(nodes, 51);
        gr_plan_destroy(p);
    }
}

static gr_plan *bundled_plan(const char *file, const char *variant, const char *set1, const char *set2) {
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

static void test_pointwise_fusion_workload(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *variants[] = {"unfused", "fused", "fused_vec"};
    const char *sizes[] = {"n=4096", "n=1000003"};
    for (int s = 0; s < 2; s++)
        for (int v = 0; v < 3; v++) {
            gr_plan *p = bundled_plan("workloads/pointwise_fusion.json", variants[v], sizes[s], "act=gelu");
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            size_t nodes = 0;
            CU_ASSERT_TRUE(verify_plan(p, GR_CAPTURE_GLOBAL, &nodes));
            CU_ASSERT_EQUAL(nodes, (size_t)p->kernels);
            gr_plan_destroy(p);
        }
}

static void test_launch_bound_workload_modes(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    gr_capture_mode modes[] = {GR_CAPTURE_GLOBAL, GR_CAPTURE_THREAD_LOCAL, GR_CAPTURE_RELAXED};
    for (int m = 0; m < 3; m++) {
        gr_plan *p = bundled_plan("workloads/launch_bound.json", "tiny", NULL, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        size_t nodes = 0;
        CU_ASSERT_TRUE(verify_plan(p, modes[m], &nodes));
        CU_ASSERT_EQUAL(nodes, 1000);
        gr_plan_destroy(p);
    }
}

static void test_fork_join_graph(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *json =
        "{\"name\": \"fj\", \"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [100000], \"init\": \"normal\"},"
        "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [100000]}, {\"name\": \"c\", \"dtype\": \"fp32\", \"shape\": [100000]},"
        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [100000]}], \"outputs\": [\"y\"],"
        "\"ops\": [{\"fork\": \"side\"}, {\"kernel\": \"gelu\", \"inputs\": [\"a\"], \"outputs\": [\"b\"], \"stream\": \"side\"},"
        "{\"kernel\": \"silu\", \"inputs\": [\"a\"], \"outputs\": [\"c\"]}, {\"join\": \"side\"},"
        "{\"kernel\": \"add\", \"inputs\": [\"b\", \"c\"], \"outputs\": [\"y\"]}]}";
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = plan_for_device(json, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_session *s = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_session_create(p, info.sm_count, &s, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_session_reference(s, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_session_verify_eager(s, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_session_capture(s, GR_CAPTURE_GLOBAL, NULL, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_session_verify_graph(s, &e), GR_OK);
    CU_ASSERT_TRUE(s->checks.verified);
    CU_ASSERT_EQUAL(s->graph.kernel_nodes, 3);
    /* gelu and silu are parallel branches joining into add: 2 edges */
    CU_ASSERT_EQUAL(s->graph.edges, 2);
    gr_session_destroy(s);
    gr_plan_destroy(p);
}

static void test_run_driver(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_workload_load_file(gr_test_src("workloads/pointwise_fusion.json"), &wl, &e), GR_OK);
    gr_workload_set(wl, "n=65536", &e);
    gr_plan *plans[3];
    gr_target t = gr_target_from_info(&info);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL_FATAL(gr_plan_resolve(wl, wl->variants[i], &t, gr_kernel_find, gr_kernel_all_names, &plans[i], &e), GR_OK);
    gr_run_opts o;
    gr_run_opts_default(&o);
    o.iters = 200;
    o.batches = 10;
    o.progress = 0;
    gr_run_report *r = gr_run_report_create(wl, &info, &o);
    CU_ASSERT_EQUAL(gr_run_plans((const gr_plan *const *)plans, 3, r, &e), GR_OK);
    CU_ASSERT_TRUE(r->have_bw);
    CU_ASSERT_TRUE(r->bw.read_only.gbps.median > 100);
    CU_ASSERT_TRUE(r->bw.memcpy_d2d.gbps.median > 100);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_TRUE(r->v[i].checks.verified);
        CU_ASSERT_TRUE(r->v[i].timed);
        CU_ASSERT_TRUE(r->v[i].eager.step_us.median > 0);
        CU_ASSERT_TRUE(r->v[i].graph_t.step_us.median > 0);
        CU_ASSERT_EQUAL(r->v[i].eager.batches, 10);
        CU_ASSERT_EQUAL(r->v[i].eager.steps_per_batch, 20);
    }
    /* later variants are also checked against the first one's outputs */
    int cross = 0;
    for (int c = 0; c < r->v[1].checks.n; c++) cross += strstr(r->v[1].checks.v[c].what, "vs unfused") != NULL;
    CU_ASSERT_EQUAL(cross, 1);
    /* the launch floor, after the variants: a node costs something, less than a microsecond or
     * so on these GPUs (H100 0.77-0.95, H200 0.48-0.66 per empty node; issue 26), and with PDL
     * (on by default on compute capability 9.0+) less than without it */
    if (!r->launch_floor.measured) fprintf(stderr, "\n    launch floor: %s", r->launch_floor.why);
    CU_ASSERT_TRUE(r->launch_floor.measured);
    CU_ASSERT_TRUE(r->launch_floor.node_us > 0.05 && r->launch_floor.node_us < 5);
    CU_ASSERT_TRUE(r->launch_floor.launch_us >= 0 && r->launch_floor.launch_us < 100);
    if (r->opts.pdl == 1)
        CU_ASSERT_TRUE(r->launch_floor.pdl_node_us > 0 && r->launch_floor.pdl_node_us < r->launch_floor.node_us);
    gr_run_report_destroy(r);
    for (int i = 0; i < 3; i++) gr_plan_destroy(plans[i]);
    gr_workload_destroy(wl);
}

/* The bandwidth probe's kernels move what they count: the write kernel's pattern has no zero
 * 16-byte word and stays in bounds, the copy copies it exactly, and the read kernel's per-warp
 * XORs fold every 32-bit word once; sizes of one partial pass and of several passes plus a tail. */
static void test_bwprobe_kernels(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    gr_error e;
    gr_error_clear(&e);
    gr_bwprobe_shape sh;
    CU_ASSERT_EQUAL_FATAL(gr_bwprobe_shape_get(&sh, &e), GR_OK);
    CU_ASSERT_TRUE(sh.grid_read >= info.sm_count && sh.grid_write >= info.sm_count &&
                   sh.grid_copy >= info.sm_count);
    CU_ASSERT_EQUAL(sh.sink_words, (size_t)sh.grid_read * sh.threads / 32);
    size_t pass = (size_t)sh.grid_copy * sh.threads * sh.unroll; /* 16-byte words per grid pass */
    size_t sizes[2] = {16 * 77, 16 * (3 * pass + 12345)};
    for (int c = 0; c < 2; c++) {
        size_t bytes = sizes[c], guard = 64;
        void *a = NULL, *b = NULL;
        unsigned *sink = NULL;
        CU_ASSERT_EQUAL_FATAL(cudaMalloc(&a, bytes + guard), cudaSuccess);
        CU_ASSERT_EQUAL_FATAL(cudaMalloc(&b, bytes + guard), cudaSuccess);
        CU_ASSERT_EQUAL_FATAL(cudaMalloc((void **)&sink, sh.sink_words * sizeof(unsigned)),
                              cudaSuccess);
        cudaMemset(a, 0, bytes + guard);
        cudaMemset(b, 0, bytes + guard);
        cudaMemset(sink, 0, sh.sink_words * sizeof(unsigned));
        CU_ASSERT_EQUAL(gr_bwprobe_write(&sh, a, bytes, 0x1234567u, NULL, &e), GR_OK);
        CU_ASSERT_EQUAL(gr_bwprobe_copy(&sh, b, a, bytes, NULL, &e), GR_OK);
        CU_ASSERT_EQUAL(gr_bwprobe_read(&sh, a, bytes, sink, NULL, &e), GR_OK);
        CU_ASSERT_EQUAL(cudaDeviceSynchronize(), cudaSuccess);
        uint32_t *ha = malloc(bytes + guard), *hb = malloc(bytes + guard);
        unsigned *hs = malloc(sh.sink_words * sizeof(unsigned));
        CU_ASSERT_PTR_NOT_NULL_FATAL(ha && hb && hs ? ha : NULL);
        cudaMemcpy(ha, a, bytes + guard, cudaMemcpyDeviceToHost);
        cudaMemcpy(hb, b, bytes + guard, cudaMemcpyDeviceToHost);
        cudaMemcpy(hs, sink, sh.sink_words * sizeof(unsigned), cudaMemcpyDeviceToHost);
        size_t zero_words = 0, n32 = bytes / 4;
        uint32_t want = 0, got = 0;
        for (size_t i = 0; i < n32; i += 4)
            zero_words += !(ha[i] | ha[i + 1] | ha[i + 2] | ha[i + 3]);
        for (size_t i = 0; i < n32; i++)
            want ^= ha[i];
        for (size_t i = 0; i < sh.sink_words; i++)
            got ^= hs[i];
        CU_ASSERT_EQUAL(zero_words, 0);
        CU_ASSERT_EQUAL(memcmp(ha, hb, bytes), 0);
        int guard_clean = 1;
        for (size_t i = n32; i < (bytes + guard) / 4; i++)
            guard_clean &= ha[i] == 0 && hb[i] == 0;
        CU_ASSERT_TRUE(guard_clean);
        CU_ASSERT_EQUAL(got, want);
        free(ha);
        free(hb);
        free(hs);
        cudaFree(a);
        cudaFree(b);
        cudaFree(sink);
    }
}

/* The probe as run, service and tp run it: every figure measured, sane and in a plausible order
 * (not exact numbers: those go in bench/results). On the H200 (docs/floors.md) read-only ~4.4,
 * copy kernel ~4.0, cudaMemcpy ~4.3 TB/s. */
static void test_bandwidth_probe(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    gr_error e;
    gr_error_clear(&e);
    gr_bandwidth bw;
    memset(&bw, 0, sizeof(bw));
    size_t bytes = gr_bandwidth_bytes(info.mem_free);
    CU_ASSERT_EQUAL_FATAL(gr_bandwidth_probe(bytes, GR_BANDWIDTH_REPS, &bw, &e), GR_OK);
    CU_ASSERT_EQUAL(bw.buffer_bytes, bytes);
    const gr_bw_figure *fig[4] = {&bw.read_only, &bw.write_only, &bw.copy_kernel, &bw.memcpy_d2d};
    for (int k = 0; k < 4; k++) {
        CU_ASSERT_EQUAL(fig[k]->gbps.n, GR_BANDWIDTH_REPS);
        CU_ASSERT_TRUE(fig[k]->gbps.median > 100);
        CU_ASSERT_TRUE(fig[k]->gbps.p10 <= fig[k]->gbps.median &&
                       fig[k]->gbps.median <= fig[k]->gbps.p90);
        CU_ASSERT_DOUBLE_EQUAL(fig[k]->bytes, (k < 2 ? 1.0 : 2.0) * (double)bytes, 0.5);
    }
    double rd = bw.read_only.gbps.median, wr = bw.write_only.gbps.median,
           ck = bw.copy_kernel.gbps.median, mc = bw.memcpy_d2d.gbps.median;
    double half = (double)bytes;
    double ck_pct = gr_pct_of_floor(gr_floor_us(half, half, &bw), 2 * half / (ck * 1e3));
    double mc_pct = gr_pct_of_floor(gr_floor_us(half, half, &bw), 2 * half / (mc * 1e3));
    fprintf(
        stderr,
        "\n    bandwidth GB/s: read %.0f [%.0f, %.0f], write %.0f [%.0f, %.0f], copy kernel %.0f, "
        "cudaMemcpy %.0f; copies at %.1f%% and %.1f%% of their floor; %.2f GB, %d x %d threads",
        rd, bw.read_only.gbps.p10, bw.read_only.gbps.p90, wr, bw.write_only.gbps.p10,
        bw.write_only.gbps.p90, ck, mc, ck_pct, mc_pct, (double)bytes / 1e9, bw.grid, bw.threads);
    /* a read-only stream with enough bytes in flight is not far below a copy (too few in
     * flight reached 0.57x on the H200) nor far above it */
    CU_ASSERT_TRUE(rd >= 0.85 * mc && rd <= 1.5 * mc);
    CU_ASSERT_TRUE(wr >= 0.5 * mc && wr <= 1.5 * mc);
    CU_ASSERT_TRUE(ck >= 0.7 * mc && ck <= 1.3 * mc);
    /* the floor of the copies is near their measured time: the model is not off by far */
    CU_ASSERT_TRUE(ck_pct > 70 && ck_pct < 115);
    CU_ASSERT_TRUE(mc_pct > 70 && mc_pct < 115);
}

static CU_TestInfo gpu_kernel_tests[] = {{"pointwise kernels vs reference", test_pointwise_kernels_vs_reference},
                                         {"probe kernels", test_probe_kernels},
                                         {"bandwidth probe kernels", test_bwprobe_kernels},
                                         {"bandwidth probe", test_bandwidth_probe},
                                         CU_TEST_INFO_NULL};
static CU_TestInfo gpu_workload_tests[] = {{"pointwise_fusion eager == graph == ref", test_pointwise_fusion_workload},
                                           {"launch_bound in every capture mode", test_launch_bound_workload_modes},
                                           {"fork/join graph", test_fork_join_graph},
                                           {"run driver", test_run_driver},
                                           CU_TEST_INFO_NULL};

static gr_suite_def gr_gpu_suites[] = {{"gpu_kernels", gpu_kernel_tests, 1},
                                {"gpu_workloads", gpu_workload_tests, 1},
                                {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_gpu_suites)

static void test_gemm_vs_reference(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    /* fp32 / bf16 / fp16, odd sizes, transposes, batched, leading dims, accumulate into C */
    struct { const char *dt; const char *a, *b, *y, *attrs; int withc; } cases[] = {
        {"fp32", "[37, 61]", "[61, 19]", "[37, 19]", "", 0},
        {"fp32", "[3, 5, 64]", "[33, 64]", "[3, 5, 33]", "\"trans_b\": true", 0},
        {"bf16", "[1, 2048]", "[1000, 2048]", "[1, 1000]", "\"trans_b\": true", 0},
        {"fp16", "[4, 17, 9]", "[4, 9, 13]", "[4, 17, 13]", "", 0},
        {"bf16", "[64, 48]", "[48, 32]", "[64, 32]", "\"alpha\": 0.5, \"beta\": 2", 1},
        {"fp32", "[40, 24]", "[40, 8]", "[24, 8]", "\"trans_a\": true", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[2048];
        snprintf(json, sizeof(json),
                 "{\"name\": \"g\", \"buffers\": ["
                 "{\"name\": \"A\", \"dtype\": \"%s\", \"shape\": %s, \"init\": \"normal\"},"
                 "{\"name\": \"B\", \"dtype\": \"%s\", \"shape\": %s, \"init\": \"normal\"},"
                 "{\"name\": \"C\", \"dtype\": \"%s\", \"shape\": %s, \"init\": \"normal\"},"
                 "{\"name\": \"Y\", \"dtype\": \"%s\", \"shape\": %s}], \"outputs\": [{\"buffer\": \"Y\", \"rtol\": %s}],"
                 "\"ops\": [{\"kernel\": \"gemm\", \"inputs\": [\"A\", \"B\"%s], \"outputs\": [\"Y\"], \"attrs\": {%s}}]}",
                 cases[i].dt, cases[i].a, cases[i].dt, cases[i].b, cases[i].dt, cases[i].y, cases[i].dt,
                 cases[i].y, strcmp(cases[i].dt, "fp32") ? "1e-2" : "1e-5", cases[i].withc ? ", \"C\"" : "",
                 cases[i].attrs);
        gr_error e;
        gr_error_clear(&e);
        gr_plan *p = plan_for_device(json, NULL, &e);
        if (!p) fprintf(stderr, "\n    %s", e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        size_t nodes = 0;
        int ok = verify_plan(p, GR_CAPTURE_GLOBAL, &nodes);
        if (!ok) fprintf(stderr, "\n    gemm case %zu failed", i);
        CU_ASSERT_TRUE(ok);
        CU_ASSERT_TRUE(nodes >= 1);
        gr_plan_destroy(p);
    }
}

static CU_TestInfo gpu_gemm_tests[] = {{"gemm vs reference, captured", test_gemm_vs_reference}, CU_TEST_INFO_NULL};
static gr_suite_def gr_gpu_gemm_suites[] = {{"gpu_gemm", gpu_gemm_tests, 1}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_gpu_gemm_suites)

/* PDL (--pdl): kernels start launching before their predecessor ends; griddepcontrol.wait must
 * keep every dependent chain correct, eager and captured. --unroll N: N steps in one graph. */
static void test_pdl_and_unroll(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *cases[][3] = {{"workloads/launch_bound.json", "tiny", "K=300"},
                              {"workloads/launch_bound.json", "empty", "K=300"},
                              {"workloads/pointwise_fusion.json", "unfused", "n=1000003"},
                              {"workloads/pointwise_fusion.json", "fused_vec", "n=4096"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gr_plan *p = bundled_plan(cases[i][0], cases[i][1], cases[i][2], NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        gr_error e;
        gr_error_clear(&e);
        gr_session *s = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_session_create(p, info.sm_count, &s, &e), GR_OK);
        s->dev->pdl = 1;
        CU_ASSERT_EQUAL(gr_session_reference(s, &e), GR_OK);
        CU_ASSERT_EQUAL(gr_session_verify_eager(s, &e), GR_OK);
        CU_ASSERT_EQUAL(gr_session_capture(s, GR_CAPTURE_GLOBAL, NULL, &e), GR_OK);
        CU_ASSERT_EQUAL(gr_session_verify_graph(s, &e), GR_OK);
        CU_ASSERT_EQUAL(gr_session_capture_unrolled(s, GR_CAPTURE_GLOBAL, 7, NULL, &e), GR_OK);
        if (gr_error_failed(&e)) fprintf(stderr, "\n    %s", e.msg);
        CU_ASSERT_TRUE(s->checks.verified);
        CU_ASSERT_EQUAL(s->graph_n.kernel_nodes, 7 * s->graph.kernel_nodes);
        gr_timing t;
        gr_time_opts o = {3, 70, 5, 0, NULL, NULL, NULL, NULL};
        CU_ASSERT_EQUAL(gr_session_time_graph(s, &o, &t, &e), GR_OK);
        CU_ASSERT_EQUAL(t.steps_per_launch, 7);
        CU_ASSERT_EQUAL(t.steps_per_batch, 2); /* 70 steps = 10 launches of 7, in 5 batches */
        CU_ASSERT_TRUE(t.step_us.median > 0);
        gr_session_destroy(s);
        gr_plan_destroy(p);
    }
}

static CU_TestInfo gpu_launch_tests[] = {{"PDL and unrolled graphs stay correct", test_pdl_and_unroll}, CU_TEST_INFO_NULL};
static gr_suite_def gr_gpu_launch_suites[] = {{"gpu_launch_modes", gpu_launch_tests, 1}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_gpu_launch_suites)
