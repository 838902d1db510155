/* The HBM floor without a GPU: gr_floor_us's arithmetic (reads at the read-only rate, writes at
 * the write-only rate), the run report's floor columns and JSON keys from fake timings, and the
 * probe refusing buffers too small to time. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/report.h"
#include "replay/run.h"
#include "replay/timing.h"
#include "tests.h"

static gr_bandwidth fake_bw(double rd, double wr, double ck, double mc) {
    gr_bandwidth bw;
    memset(&bw, 0, sizeof(bw));
    double v[4] = {rd, wr, ck, mc};
    gr_bw_figure *f[4] = {&bw.read_only, &bw.write_only, &bw.copy_kernel, &bw.memcpy_d2d};
    for (int k = 0; k < 4; k++) {
        double s[3] = {v[k] * 0.99, v[k], v[k] * 1.01};
        f[k]->gbps = gr_summarize(s, 3);
        f[k]->bytes = (k < 2 ? 1.0 : 2.0) * (1 << 30);
    }
    bw.buffer_bytes = (size_t)1 << 30;
    bw.grid = 1056;
    bw.threads = 256;
    bw.unroll = 8;
    return bw;
}

static void test_floor_arithmetic(void) {
    gr_bandwidth bw = fake_bw(4000, 2000, 3000, 3500);
    /* 4 GB read at 4000 GB/s = 1 ms, 2 GB written at 2000 GB/s = 1 ms */
    CU_ASSERT_DOUBLE_EQUAL(gr_floor_us(4e9, 2e9, &bw), 2000, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(gr_floor_us(4e9, 0, &bw), 1000, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(gr_floor_us(0, 2e9, &bw), 1000, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(gr_floor_us(0, 0, &bw), 0, 0);
    /* a read-heavy step's floor is below all its bytes at the copy rate: the point of the model */
    CU_ASSERT_TRUE(gr_floor_us(12e6, 4e6, &bw) != 16e6 / (3500 * 1e3));
    gr_bandwidth eq = fake_bw(4400, 4400, 4000, 4290);
    CU_ASSERT_DOUBLE_EQUAL(gr_floor_us(1.2e9, 0.4e9, &eq), 1.6e9 / 4400e9 * 1e6, 1e-9);
    /* unknown rates give no floor, never inf or nan */
    CU_ASSERT_DOUBLE_EQUAL(gr_floor_us(1e9, 1e9, NULL), 0, 0);
    gr_bandwidth none;
    memset(&none, 0, sizeof(none));
    CU_ASSERT_DOUBLE_EQUAL(gr_floor_us(1e9, 1e9, &none), 0, 0);
    gr_bandwidth half = bw;
    half.write_only.gbps.median = 0;
    CU_ASSERT_DOUBLE_EQUAL(gr_floor_us(1e9, 0, &half), 0, 0);
    /* % of floor = floor / measured * 100 */
    CU_ASSERT_DOUBLE_EQUAL(gr_pct_of_floor(380, 400), 95, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(gr_pct_of_floor(400, 380), 400.0 / 380 * 100, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(gr_pct_of_floor(0, 400), 0, 0);
    CU_ASSERT_DOUBLE_EQUAL(gr_pct_of_floor(380, 0), 0, 0);
    GR_ASSERT_CONTAINS(gr_floor_model,
                       "bytes_read / read_only_gbps + bytes_written / write_only_gbps");
}

/* the probe sizes its buffers from the free memory and refuses buffers too small to time */
static void test_probe_size(void) {
    CU_ASSERT_EQUAL(gr_bandwidth_bytes((size_t)100 << 30), (size_t)1 << 30);
    CU_ASSERT_EQUAL(gr_bandwidth_bytes((size_t)800 << 20), (size_t)100 << 20);
    CU_ASSERT_EQUAL(gr_bandwidth_bytes(((size_t)800 << 20) + 12345), (size_t)100 << 20);
    CU_ASSERT_EQUAL(gr_bandwidth_bytes(0), 0);
    gr_error e;
    gr_error_clear(&e);
    gr_bandwidth bw;
    CU_ASSERT_EQUAL(gr_bandwidth_probe(gr_bandwidth_bytes((size_t)64 << 20), 2, &bw, &e),
                    GR_ERR_CUDA);
    GR_ASSERT_CONTAINS(e.msg, "bandwidth probe: buffers of 8388608 bytes are too small to time");
}

static const char *add_workload =
    "{\"name\": \"fl\", \"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [1000], "
    "\"init\": \"normal\"}, {\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": [1000], \"init\": "
    "\"normal\"}, {\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [1000]}], \"outputs\": "
    "[\"y\"], "
    "\"ops\": [{\"kernel\": \"add\", \"inputs\": [\"a\", \"b\"], \"outputs\": [\"y\"]}]}";

static void fake_timed(gr_variant_run *v, double eager_us, double graph_us, int with_eager) {
    double e[3] = {eager_us * 0.98, eager_us, eager_us * 1.02};
    double g[3] = {graph_us * 0.98, graph_us, graph_us * 1.02};
    v->timed = v->captured = 1;
    v->graph.nodes = v->graph.kernel_nodes = 1;
    v->graph_t.step_us = v->graph_t.submit_us = gr_summarize(g, 3);
    v->graph_t.batches = 3;
    v->graph_t.steps_per_batch = 10;
    v->graph_t.steps_per_launch = 1;
    if (with_eager) {
        v->eager = v->graph_t;
        v->eager.step_us = gr_summarize(e, 3);
    }
}

static char *report_text(const gr_run_report *r) {
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    gr_report_text(f, r);
    fclose(f);
    return buf;
}

/* the run report: the floor from each variant's own bytes read and written, % of floor for
 * eager and graph, the copy column, and the JSON keys bench/run.sh and the clients read */
static void test_report_floor(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(add_workload, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_DOUBLE_EQUAL(p->bytes_read, 8000, 0);
    CU_ASSERT_DOUBLE_EQUAL(p->bytes_written, 4000, 0);
    gr_run_report *r = gr_run_report_create(NULL, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    snprintf(r->date, sizeof(r->date), "today");
    snprintf(r->dev.name, sizeof(r->dev.name), "Test GPU");
    r->have_bw = 1;
    /* 8 KB at 4 GB/s = 2 us, 4 KB at 2 GB/s = 2 us: floor 4 us (all 12 KB at the 3 GB/s copy
     * rate would be 4 us too: the copy rate is made different below to tell them apart) */
    r->bw = fake_bw(4, 2, 3, 6);
    gr_variant_run *v = gr_run_report_add(r, p);
    fake_timed(v, 10, 5, 1);
    char *text = report_text(r);
    GR_ASSERT_CONTAINS(text,
                       "hbm bw   read 4 [p10 4, p90 4], write 2 [2, 2], copy kernel 3 [3, 3], "
                       "cudaMemcpy D2D 6 [6, 6] GB/s");
    GR_ASSERT_CONTAINS(text,
                       "kernels of 1056 x 256 threads, 16-byte streaming accesses, 8 in flight");
    GR_ASSERT_CONTAINS(text,
                       "floor    bytes read / read bw + bytes written / write bw (docs/floors.md)");
    GR_ASSERT_CONTAINS(text,
                       "HBM roofline: floor = bytes read / read bw + bytes written / write bw");
    /* floor 4.00 us; eager 10 us = 40%, graph 5 us = 80%; graph 12 KB / 5 us = 2.4 GB/s = 40% of
     * the 6 GB/s copy */
    GR_ASSERT_CONTAINS(text,
                       "read/step  write/step     weights   floor us  eager GB/s  graph GB/s  "
                       "% of copy  eager % floor  graph % floor");
    GR_ASSERT_CONTAINS(
        text, "  default               8.0 KB      4.0 KB      8.0 KB       4.00         1.2"
              "         2.4      40.0%          40.0%          80.0%\n");
    CU_ASSERT_PTR_NULL(strstr(text, "nan"));
    CU_ASSERT_PTR_NULL(strstr(text, "inf"));
    free(text);

    json_t *j = gr_report_json(r);
    json_t *cb = json_object_get(j, "copy_bandwidth");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cb);
    /* the keys of the memcpy-only probe keep their meaning */
    CU_ASSERT_DOUBLE_EQUAL(
        json_number_value(json_object_get(json_object_get(cb, "gbps"), "median")), 6, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(cb, "bytes_per_copy")),
                           2.0 * (1 << 30), 0);
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(cb, "method")), "cudaMemcpyAsync D2D");
    static const struct {
        const char *key;
        double median;
    } figs[] = {{"read_gbps", 4}, {"write_gbps", 2}, {"copy_kernel_gbps", 3}, {"memcpy_gbps", 6}};
    for (int k = 0; k < 4; k++)
        CU_ASSERT_DOUBLE_EQUAL(
            json_number_value(json_object_get(json_object_get(cb, figs[k].key), "median")),
            figs[k].median, 1e-9);
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(cb, "floor_model")), "read_only_gbps");
    /* a copy of N bytes each way: floor N/4 + N/2, measured 2N/3 (kernel), 2N/6 (cudaMemcpy) */
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(cb, "copy_kernel_pct_of_floor")),
                           112.5, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(cb, "memcpy_pct_of_floor")), 225,
                           1e-9);
    json_t *jv = json_array_get(json_object_get(j, "variants"), 0);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(jv, "hbm_floor_us")), 4, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(jv, "eager_over_floor")), 2.5, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(jv, "graph_over_floor")), 1.25, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(jv, "eager_pct_of_floor")), 40, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(jv, "graph_pct_of_floor")), 80, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(jv, "copy_floor_us")), 2, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(jv, "graph_pct_of_copy_bw")), 40,
                           1e-9);
    json_decref(j);

    /* graph replay only (`graphrun replay`): no eager figures, "-" in the text */
    memset(&v->eager, 0, sizeof(v->eager));
    text = report_text(r);
    GR_ASSERT_CONTAINS(
        text, "       4.00           -         2.4      40.0%              -          80.0%\n");
    free(text);
    j = gr_report_json(r);
    jv = json_array_get(json_object_get(j, "variants"), 0);
    CU_ASSERT_PTR_NULL(json_object_get(jv, "eager_pct_of_floor"));
    CU_ASSERT_PTR_NOT_NULL(json_object_get(jv, "graph_pct_of_floor"));
    json_decref(j);

    /* --no-bandwidth: no floor anywhere */
    r->have_bw = 0;
    text = report_text(r);
    CU_ASSERT_PTR_NULL(strstr(text, "HBM roofline"));
    CU_ASSERT_PTR_NULL(strstr(text, "hbm bw"));
    free(text);
    j = gr_report_json(r);
    jv = json_array_get(json_object_get(j, "variants"), 0);
    CU_ASSERT_PTR_NULL(json_object_get(j, "copy_bandwidth"));
    CU_ASSERT_PTR_NULL(json_object_get(jv, "hbm_floor_us"));
    CU_ASSERT_PTR_NULL(json_object_get(jv, "graph_pct_of_floor"));
    json_decref(j);
    gr_run_report_destroy(r);
    gr_plan_destroy(p);
}

/* The launch floor: its plans (k empty kernels and one tiny), the fit of its two graphs, and the
 * report's section and keys from a measured floor (plain and PDL), one that failed, and none asked for. */
static void test_launch_floor_report(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_target t = gr_target_default();
    int ks[] = {GR_LAUNCH_FLOOR_K_SMALL, GR_LAUNCH_FLOOR_K};
    for (int i = 0; i < 2; i++) {
        gr_plan *fp = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_launch_floor_plan(&t, ks[i], &fp, &e), GR_OK);
        CU_ASSERT_EQUAL(fp->kernels, ks[i] + 1);
        int empty = 0;
        for (int o = 0; o < fp->nops; o++) empty += !strcmp(fp->ops[o].kernel->name, "empty");
        CU_ASSERT_EQUAL(empty, ks[i]);
        CU_ASSERT_STRING_EQUAL(fp->ops[fp->nops - 1].kernel->name, "tiny");
        gr_plan_destroy(fp);
    }
    gr_plan *bad = NULL;
    CU_ASSERT_NOT_EQUAL(gr_launch_floor_plan(&t, 0, &bad, &e), GR_OK);
    CU_ASSERT_PTR_NULL(bad);
    gr_error_clear(&e);
    /* the fit: 33 nodes 40 us, 257 nodes 264 us: 1 us a node, 7 us a launch; 33 nodes 30 us, 257
     * nodes 254 us: the slope (1 us) would leave a launch of -3 us and put the 33-node graph's
     * floor (33 us) above its 30: no launch, and the lower per-node average, 30 / 33 */
    double node = 0, launch = -1;
    CU_ASSERT_EQUAL(gr_launch_floor_fit(40, 33, 264, 257, &node, &launch, &e), GR_OK);
    CU_ASSERT_DOUBLE_EQUAL(node, 1.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(launch, 7.0, 1e-12);
    CU_ASSERT_EQUAL(gr_launch_floor_fit(30, 33, 254, 257, &node, &launch, &e), GR_OK);
    CU_ASSERT_DOUBLE_EQUAL(launch, 0.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(node, 30.0 / 33, 1e-12);
    CU_ASSERT_TRUE(33 * node <= 30 + 1e-9 && 257 * node <= 254 + 1e-9);
    /* the larger graph not slower (noise, a broken timer): no slope, said */
    CU_ASSERT_EQUAL(gr_launch_floor_fit(40, 33, 40, 257, &node, &launch, &e), GR_ERR_INTERNAL);
    GR_ASSERT_CONTAINS(e.msg, "the 257-node graph (40.00 us) was not slower than the 33-node one");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_launch_floor_fit(40, 33, 264, 33, &node, &launch, &e), GR_ERR_INTERNAL);
    gr_error_clear(&e);

    gr_plan *p = gr_test_plan(add_workload, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_run_report *r = gr_run_report_create(NULL, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    gr_variant_run *v = gr_run_report_add(r, p);
    fake_timed(v, 10, 5, 1);
    r->opts.pdl = 0;
    r->launch_floor.measured = 1;
    r->launch_floor.k_small = 32;
    r->launch_floor.k = 256;
    r->launch_floor.node_us = 2.0; /* plain run: no PDL figure */
    r->launch_floor.launch_us = 0.5;
    char *text = report_text(r);
    GR_ASSERT_CONTAINS(text, "launch floor: a graph node costs 2.000 us plain, a graph launch 0.50 us in this "
                             "process, after the variants\n  (graphs of 32 and 256 empty kernels and one tiny:");
    /* one kernel at 2 us and the launch's 0.5 over a 5 us graph step */
    GR_ASSERT_CONTAINS(text, "  default                1           2.50           5.00          50.0%\n");
    free(text);
    json_t *j = gr_report_json(r);
    json_t *lf = json_object_get(j, "launch_floor");
    CU_ASSERT_PTR_NOT_NULL_FATAL(lf);
    CU_ASSERT_TRUE(json_is_true(json_object_get(lf, "measured")));
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(lf, "node_us")), 2, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(lf, "launch_us")), 0.5, 1e-12);
    CU_ASSERT_TRUE(json_is_null(json_object_get(lf, "pdl_node_us")));
    CU_ASSERT_TRUE(json_is_null(json_object_get(lf, "pdl_launch_us")));
    json_t *ek = json_object_get(lf, "empty_kernels");
    CU_ASSERT_EQUAL(json_array_size(ek), 2);
    CU_ASSERT_EQUAL(json_integer_value(json_array_get(ek, 0)), 32);
    CU_ASSERT_EQUAL(json_integer_value(json_array_get(ek, 1)), 256);
    json_t *jv = json_array_get(json_object_get(j, "variants"), 0);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(jv, "launch_floor_us")), 2.5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(jv, "launch_floor_pct_of_graph")), 50, 1e-9);
    json_decref(j);
    /* --unroll 4: one launch runs four steps, so a step carries a quarter of it */
    v->graph_t.steps_per_launch = 4;
    j = gr_report_json(r);
    jv = json_array_get(json_object_get(j, "variants"), 0);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(jv, "launch_floor_us")), 2.125, 1e-12);
    json_decref(j);
    v->graph_t.steps_per_launch = 1;
    /* the variants ran with PDL (so it was measured with PDL too): the PDL cost for a kernel that
     * launches with it; a PDL floor that failed is said beside the plain one */
    r->opts.pdl = 1;
    r->launch_floor.pdl_node_us = 1.0;
    r->launch_floor.pdl_launch_us = 0.25;
    double want = gr_op_pdl_capable(&p->ops[0]) ? 1.25 : 2.5;
    text = report_text(r);
    GR_ASSERT_CONTAINS(text, "a graph node costs 2.000 us plain, 1.000 with PDL, a graph launch 0.50 us "
                             "(0.25 with PDL) in this process");
    free(text);
    r->launch_floor.pdl_node_us = 0;
    snprintf(r->launch_floor.why, sizeof(r->launch_floor.why), "with PDL: cudaGraphInstantiate failed");
    text = report_text(r);
    GR_ASSERT_CONTAINS(text, "  (with PDL: cudaGraphInstantiate failed)\n");
    free(text);
    r->launch_floor.why[0] = '\0';
    r->launch_floor.pdl_node_us = 1.0;
    r->launch_floor.pdl_launch_us = 0.25;
    j = gr_report_json(r);
    jv = json_array_get(json_object_get(j, "variants"), 0);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(jv, "launch_floor_us")), want, 1e-12);
    json_decref(j);
    /* a PDL graph launch dearer than the plain one: the floor takes the lower */
    r->launch_floor.pdl_launch_us = 0.75;
    j = gr_report_json(r);
    jv = json_array_get(json_object_get(j, "variants"), 0);
    CU_ASSERT_DOUBLE_EQUAL(json_number_value(json_object_get(jv, "launch_floor_us")),
                           gr_op_pdl_capable(&p->ops[0]) ? 1.5 : 2.5, 1e-12);
    json_decref(j);
    /* failed: the report says why, no per-variant floor */
    memset(&r->launch_floor, 0, sizeof(r->launch_floor));
    snprintf(r->launch_floor.why, sizeof(r->launch_floor.why), "cudaGraphInstantiate: out of memory");
    text = report_text(r);
    GR_ASSERT_CONTAINS(text, "launch floor: not measured: cudaGraphInstantiate: out of memory\n");
    free(text);
    j = gr_report_json(r);
    lf = json_object_get(j, "launch_floor");
    CU_ASSERT_TRUE(json_is_false(json_object_get(lf, "measured")));
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(lf, "why")), "out of memory");
    CU_ASSERT_PTR_NULL(json_object_get(json_array_get(json_object_get(j, "variants"), 0), "launch_floor_us"));
    json_decref(j);
    /* --no-launch-floor: nothing */
    r->opts.launch_floor = 0;
    text = report_text(r);
    CU_ASSERT_PTR_NULL(strstr(text, "launch floor"));
    free(text);
    j = gr_report_json(r);
    CU_ASSERT_PTR_NULL(json_object_get(j, "launch_floor"));
    json_decref(j);
    gr_run_report_destroy(r);
    gr_plan_destroy(p);
}

static CU_TestInfo floor_tests[] = {{"floor arithmetic", test_floor_arithmetic},
                                    {"probe size", test_probe_size},
                                    {"report floor columns and keys", test_report_floor},
                                    {"launch floor: plan and report", test_launch_floor_report},
                                    CU_TEST_INFO_NULL};
static gr_suite_def gr_floor_suites[] = {{"floor", floor_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_floor_suites)
