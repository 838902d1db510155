/* cupti-launchstat calibrate (cupti_tools/calibrate.{c,cu}): the derivation on made-up raw
 * figures with exact answers, the traced reference read from a trace, the calibration file's
 * reader against every bad input, `report --calibration` on the recorded fixtures, the command
 * line without a GPU; and on the GPU, the command end to end. */
#include <CUnit/CUnit.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cupti_tools/calibrate.h"
#include "tests/tests.h"

#define NEAR(a, b, tol) CU_ASSERT(fabs((a) - (b)) <= (tol))

/* ---- the derivation ---- */

/* Made-up raw figures of a GPU with node 0.3 us, launch 1.5 us, PDL saving 0.5 us per pair, host
 * submit 1.3 us, 4000 GB/s; the tiny kernel traced at 0.9 us; round r moves the chain by
 * (r - 1) x 0.01 us per node (and the PDL chain with it). */
static void made_up(gr_cal_result *res, int rounds) {
    memset(res, 0, sizeof(*res));
    gr_cal_raw *r = &res->raw;
    snprintf(r->gpu, sizeof(r->gpu), "NVIDIA H200");
    r->cc_major = 9;
    r->cc_minor = 0;
    r->sm_count = 132;
    r->tiny_ptx = 90;
    r->tiny_n = 256;
    r->tiny_threads = 256;
    r->driver = 13000;
    r->runtime = 13000;
    r->clock_attr_mhz = 1980;
    r->clock_mhz[0] = r->clock_mhz[1] = r->clock_mhz[2] = 2000;
    r->cycl = 20000; /* 10 us at 2000 MHz */
    r->cycb = 2000000;
    r->rounds = rounds;
    r->chain = 500;
    r->wide = 20;
    r->pdl = 1;
    r->chain_launches = 2;
    r->g1_launches = 100;
    r->wide_launches = 20;
    const double K = 500, launch = 1.5, node = 0.3, pdl = 0.5, dur = 0.9;
    r->traced.median = dur;
    r->traced.p10 = 0.896;
    r->traced.p90 = 0.928;
    r->traced.n = 100;
    for (int i = 0; i < rounds; i++) {
        double wiggle = (i - 1) * 0.01 * K;
        r->chain_tiny[i] = launch + K * (dur + node) + wiggle;
        r->chain_tiny_pdl[i] = r->chain_tiny[i] - (K - 1) * pdl;
        r->g1[i] = launch + 10.8;
        r->gw[i] = launch + 20 * 10.8;
        r->host_g1[i] = 1.3;
        r->host_gw[i] = 1.4;
    }
    r->copy_bytes = (size_t)256 << 20;
    r->copy_batches = 3;
    r->copies_per_batch = 4;
    r->copy_gbps[0] = 3990;
    r->copy_gbps[1] = 4000;
    r->copy_gbps[2] = 4010;
    r->traced_count = 100;
    r->traced_warmup = 10;
    r->tiny_kernels = 44110;
    r->buffer_checked = 1;
    snprintf(res->date, sizeof(res->date), "2026-12-05T10:00:00Z");
}

static int has_note(const gr_cal_result *res, const char *text) {
    for (int i = 0; i < res->nnotes; i++)
        if (strstr(res->notes[i], text)) return 1;
    return 0;
}

static void test_derive(void) {
    gr_cal_result res;
    made_up(&res, 3);
    gr_cal_derive(&res);
    NEAR(res.launch.median, 1.5, 1e-9);
    NEAR(res.launch_us, 1.5, 1e-9);
    /* (C - launch) / 500 per round: 1.19, 1.2, 1.21; less D = 0.9 */
    NEAR(res.period, 1.2, 1e-9);
    NEAR(res.dur, 0.9, 0);
    NEAR(res.node.median, 0.3, 1e-9);
    NEAR(res.node_us, 0.3, 1e-9);
    NEAR(res.node.min, 0.29, 1e-9);
    NEAR(res.node.max, 0.31, 1e-9);
    /* p10 interpolates 0.2 of the way from the first round to the second */
    NEAR(res.node.p10, 0.29 + 0.2 * 0.01, 1e-9);
    NEAR(res.node.p90, 0.31 - 0.2 * 0.01, 1e-9);
    CU_ASSERT_EQUAL(res.node.n, 3);
    /* PDL: (C - C_pdl) / 499 = 0.5 each round; the PDL chain per node (1.2 - 0.5 x 499 / 500) */
    NEAR(res.pdl_us, 0.5, 1e-9);
    NEAR(res.pdl.p10, 0.5, 1e-9);
    NEAR(res.pdl_period, 1.2 - 0.5 * 499.0 / 500.0, 1e-9);
    NEAR(res.launch_host_us, 1.3, 1e-9);
    NEAR(res.hbm_gbps, 4000, 1e-9);
    NEAR(res.hbm.p10, 3992, 1e-9);
    CU_ASSERT_EQUAL(res.node_positive, 1);
    CU_ASSERT_EQUAL(res.node_below_max, 1);
    CU_ASSERT_EQUAL(res.clock_moved, 0);
    CU_ASSERT_EQUAL(res.nnotes, 0);
}

/* The table's row from run 5's tiny-kernel figures (docs/predict.md): a 1000-node chain at
 * 1196.04 us per launch, launch 0.72, the tiny kernel traced at 0.912 us; PDL 685.58 us. */
static void test_derive_table_row(void) {
    gr_cal_result res;
    made_up(&res, 3);
    res.raw.chain = 1000;
    res.raw.traced.median = 0.912;
    for (int i = 0; i < 3; i++) {
        res.raw.g1[i] = 0.72 + 10.8;
        res.raw.gw[i] = 0.72 + 20 * 10.8;
        res.raw.chain_tiny[i] = 1196.04;
        res.raw.chain_tiny_pdl[i] = 685.58;
    }
    gr_cal_derive(&res);
    NEAR(res.launch_us, 0.72, 1e-9);
    NEAR(res.period, (1196.04 - 0.72) / 1000, 1e-12);
    NEAR(res.node_us, (1196.04 - 0.72) / 1000 - 0.912, 1e-12); /* 0.28332 */
    NEAR(res.pdl_us, (1196.04 - 685.58) / 999, 1e-12);         /* 0.51097 */
    NEAR(res.pdl_period, (685.58 - 0.72) / 1000, 1e-12);
    CU_ASSERT_EQUAL(res.nnotes, 0);
}

/* The traced phase ran at half the clock: a note, and the figures stay as measured (the tiny
 * kernel's duration is not cycle-defined: no correction). */
static void test_derive_clock(void) {
    gr_cal_result res;
    made_up(&res, 3);
    res.raw.clock_mhz[2] = 1000;
    gr_cal_derive(&res);
    NEAR(res.dur, 0.9, 0);
    NEAR(res.node_us, 0.3, 1e-9);
    CU_ASSERT_EQUAL(res.clock_moved, 1);
    CU_ASSERT(has_note(&res, "the SM clock moved: 2000 MHz before the rounds, 2000 after, 1000 "
                             "traced (the figures are not corrected for it"));
    /* 2% is within: no note; a probe missing (0) is left out */
    made_up(&res, 3);
    res.raw.clock_mhz[1] = 2039;
    res.raw.clock_mhz[2] = 0;
    gr_cal_derive(&res);
    CU_ASSERT_EQUAL(res.clock_moved, 0);
    CU_ASSERT_EQUAL(res.nnotes, 0);
}

/* No PDL below 9.0 or without sm_90 code; a negative figure is written as 0 and noted, and the
 * sanity check fails; a host-limited batch, a small copy, dropped records and a wrong buffer are
 * noted. */
static void test_derive_notes(void) {
    gr_cal_result res;
    made_up(&res, 3);
    res.raw.pdl = 0;
    res.raw.cc_major = 8;
    res.raw.cc_minor = 6;
    res.raw.host_limited = 2;
    res.raw.copy_bytes = (size_t)64 << 20;
    res.raw.trace_dropped = 7;
    res.raw.buffer_bad = 256;
    res.raw.buffer_got = 44000;
    res.raw.buffer_want = 44111;
    gr_cal_derive(&res);
    NEAR(res.pdl_us, 0, 0);
    CU_ASSERT_EQUAL(res.pdl.n, 0);
    NEAR(res.pdl_period, 0, 0);
    CU_ASSERT(has_note(&res,
                       "pdl_us is 0, not measured: programmatic dependent launch needs compute "
                       "capability 9.0 (this GPU has 8.6)"));
    NEAR(res.node_us, 0.3, 1e-9);
    CU_ASSERT(has_note(&res, "2 timed batches took longer to enqueue than the blocker kernel ran"));
    CU_ASSERT(has_note(&res, "the copy is 64 MiB, not 256 MiB"));
    CU_ASSERT(has_note(&res, "CUPTI dropped 7 records"));
    CU_ASSERT(has_note(&res, "the tiny kernels' buffer is wrong after 44110 kernels: 256 of 256 "
                             "elements, the first 44000 where 44111 was expected"));
    CU_ASSERT_EQUAL(res.nnotes, 5);
    /* a 9.0 GPU, but a tiny kernel JIT-compiled from older PTX: no griddepcontrol, no PDL */
    made_up(&res, 3);
    res.raw.pdl = 0;
    res.raw.tiny_ptx = 80;
    gr_cal_derive(&res);
    NEAR(res.pdl_us, 0, 0);
    CU_ASSERT(has_note(&res,
                       "pdl_us is 0, not measured: this build's tiny kernel runs from PTX 8.0, "
                       "without sm_90 code"));
    /* the traced duration above the chain's per-node time by more than 0.25 us: below 0,
     * written as 0, and the sanity check fails */
    made_up(&res, 3);
    res.raw.traced.median = 1.9;
    gr_cal_derive(&res);
    NEAR(res.node.median, -0.7, 1e-9);
    NEAR(res.node_us, 0, 0);
    CU_ASSERT_EQUAL(res.node_positive, 0);
    CU_ASSERT_EQUAL(res.node_below_max, 1);
    CU_ASSERT(has_note(&res, "node_us measured -0.7000, below 0: written as 0"));
    CU_ASSERT_EQUAL(res.node_above_min, 0);
    CU_ASSERT(has_note(&res,
                       "sanity check failed: the tiny chain's untraced time per node, 1.200 us "
                       "(launch taken out), is below the tiny kernel's traced duration, 1.900 us, "
                       "by more than 0.25 us (node_us = -0.7000 us"));
    /* exactly equal: not above 0 either, written as 0 without the below-0 note; sane */
    made_up(&res, 3);
    gr_cal_derive(&res);
    res.raw.traced.median = res.period;
    gr_cal_derive(&res);
    NEAR(res.node.median, 0, 0);
    CU_ASSERT_EQUAL(res.node_positive, 0);
    CU_ASSERT_EQUAL(res.node_above_min, 1);
    CU_ASSERT(!has_note(&res, "sanity check failed"));
    CU_ASSERT(has_note(&res, "on this GPU a graph node costs nothing beyond a kernel's traced "
                             "duration"));
    CU_ASSERT_EQUAL(res.nnotes, 1);
    /* the H100 of run 85: traced 1.024 us, 0.096 us longer than a chained node: sane, a note,
     * written as 0 */
    made_up(&res, 3);
    gr_cal_derive(&res);
    res.raw.traced.median = res.period + 0.096;
    gr_cal_derive(&res);
    NEAR(res.node.median, -0.096, 1e-9);
    NEAR(res.node_us, 0, 0);
    CU_ASSERT_EQUAL(res.node_positive, 0);
    CU_ASSERT_EQUAL(res.node_above_min, 1);
    CU_ASSERT(!has_note(&res, "sanity check failed"));
    CU_ASSERT(has_note(&res, "node_us measured -0.0960, below 0: written as 0"));
    CU_ASSERT_EQUAL(res.nnotes, 2);
    /* a node cost of 3 us or more: written, but the sanity check fails */
    made_up(&res, 3);
    res.raw.traced.median = 0.1;
    for (int i = 0; i < 3; i++)
        res.raw.chain_tiny[i] += 500 * 2.5;
    gr_cal_derive(&res);
    NEAR(res.node_us, 3.6, 1e-9);
    CU_ASSERT_EQUAL(res.node_positive, 1);
    CU_ASSERT_EQUAL(res.node_below_max, 0);
    CU_ASSERT(has_note(&res,
                       "sanity check failed: the tiny chain's untraced time per node, 3.700 us "
                       "(launch taken out), exceeds the tiny kernel's traced duration, 0.100 us, "
                       "by 3.600 us, not below 3 us"));
    /* no rounds at all: nothing to pass */
    made_up(&res, 0);
    gr_cal_derive(&res);
    CU_ASSERT_EQUAL(res.node_positive, 0);
    CU_ASSERT_EQUAL(res.node.n, 0);
}

/* ---- the traced reference ---- */

/* A trace of the traced phase: a clock probe, a gr_cal_tiny_init and a spin (none of them the
 * tiny kernel), then `warmup` + `count` tiny kernels (+ `extra`); one record without timestamps
 * when `untimed`; the timed ones last 0 ns when `zero`. */
static char *tiny_trace(int warmup, int count, int extra, int untimed, int zero) {
    size_t cap = 1 << 20, len = 0;
    char *p = malloc(cap);
    len += (size_t)snprintf(
        p + len, cap - len,
        "{\"t\":\"header\",\"schema_version\":1,\"tool\":\"test\",\"tool_version\":"
        "\"0\",\"mode\":\"in-process\",\"t0\":1000000000,\"command\":\"c\","
        "\"device\":\"NVIDIA H200\",\"cc\":\"9.0\",\"driver_version\":13000,"
        "\"latency\":false,\"steps\":0}\n"
        "{\"t\":\"name\",\"id\":1,\"s\":\"gr_cal_tiny\"}\n"
        "{\"t\":\"name\",\"id\":2,\"s\":\"gr_cal_clock\"}\n"
        "{\"t\":\"name\",\"id\":3,\"s\":\"gr_cal_tiny_init\"}\n"
        "{\"t\":\"name\",\"id\":4,\"s\":\"gr_cal_spin\"}\n");
    long long t = 100000;
    unsigned corr = 10;
    /* not the tiny kernel: a clock probe, the buffer's initialisation, a spin */
    for (int k = 2; k <= 4; k++) {
        len += (size_t)snprintf(p + len, cap - len,
                                "{\"t\":\"k\",\"n\":%d,\"s\":%lld,\"e\":%lld,\"dev\":0,\"ctx\":1,"
                                "\"str\":13,\"corr\":%u,\"g\":[1,1,1],\"b\":[1,1,1]}\n",
                                k, t, t + 1000000, corr++);
        t += 2000000;
    }
    int n = warmup + count + extra;
    for (int i = 0; i < n; i++) {
        int in_warm = i < warmup;
        /* warm-ups 10 us (must be left out); timed: 0.9 us + i ns (0 when `zero`) */
        long long d = in_warm ? 10000 : zero ? 0 : 900 + (i - warmup);
        len += (size_t)snprintf(
            p + len, cap - len,
            "{\"t\":\"k\",\"n\":1,\"s\":%lld,\"e\":%lld,\"dev\":0,\"ctx\":1,\"str\":13,\"corr\":%u,"
            "\"g\":[1,1,1],\"b\":[256,1,1]%s}\n",
            t, t + d, corr++, untimed && i == 3 ? ",\"inc\":1" : "");
        t += 30000;
    }
    len += (size_t)snprintf(p + len, cap - len,
                            "{\"t\":\"end\",\"records\":%d,\"dropped\":0,\"reason\":\"exit\"}\n",
                            n + 3);
    return p;
}

static void test_traced_durations(void) {
    gr_error e;
    gr_error_clear(&e);
    char *text = tiny_trace(10, 100, 0, 0, 0);
    gr_trace *t = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_trace_load_mem(text, strlen(text), "tiny.jsonl", 0, &t, &e), GR_OK);
    gr_summary d;
    CU_ASSERT_EQUAL(gr_cal_traced_durations(t, 10, 100, &d, &e), GR_OK);
    CU_ASSERT_EQUAL(d.n, 100);
    NEAR(d.min, 0.9, 1e-9); /* the 10 us warm-ups are left out */
    NEAR(d.max, 0.999, 1e-9);
    NEAR(d.median, 0.9495, 1e-9);
    gr_trace_destroy(t);
    free(text);
    /* a kernel too many, or one without timestamps: CUPTI lost or merged records */
    text = tiny_trace(10, 100, 1, 0, 0);
    CU_ASSERT_EQUAL_FATAL(gr_trace_load_mem(text, strlen(text), "tiny.jsonl", 0, &t, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_cal_traced_durations(t, 10, 100, &d, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "the traced reference holds 111 timed gr_cal_tiny kernels (0 more "
                              "without timestamps), expected 110 (10 warm-up and 100 timed)");
    gr_trace_destroy(t);
    free(text);
    gr_error_clear(&e);
    text = tiny_trace(10, 100, 0, 1, 0);
    CU_ASSERT_EQUAL_FATAL(gr_trace_load_mem(text, strlen(text), "tiny.jsonl", 0, &t, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_cal_traced_durations(t, 10, 100, &d, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "holds 109 timed gr_cal_tiny kernels (1 more without timestamps)");
    gr_trace_destroy(t);
    free(text);
    /* durations of 0: not a traced reference */
    gr_error_clear(&e);
    text = tiny_trace(10, 100, 0, 0, 1);
    CU_ASSERT_EQUAL_FATAL(gr_trace_load_mem(text, strlen(text), "tiny.jsonl", 0, &t, &e), GR_OK);
    CU_ASSERT_EQUAL(gr_cal_traced_durations(t, 10, 100, &d, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "the traced gr_cal_tiny kernels last 0.000 us (median)");
    gr_trace_destroy(t);
    free(text);
}

/* ---- the text and the file ---- */

static char *print_to_string(const gr_cal_result *res) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    gr_cal_print(f, res);
    fclose(f);
    return buf;
}

static void test_print_and_json(void) {
    gr_cal_result res;
    made_up(&res, 3);
    gr_cal_derive(&res);
    char *txt = print_to_string(&res);
    GR_ASSERT_CONTAINS(txt, "graph costs of NVIDIA H200 (cc 9.0, 132 SMs), CUDA driver 13000, "
                            "runtime 13000, 2026-12-05T10:00:00Z");
    GR_ASSERT_CONTAINS(txt, "node_us against the tiny kernel's traced duration");
    GR_ASSERT_CONTAINS(txt, "median  [p10, p90] over rounds unit  what was measured");
    GR_ASSERT_CONTAINS(txt, "node_us            0.300  [0.292, 0.308]");
    GR_ASSERT_CONTAINS(txt, "a 500-node chain of tiny kernels (1 block, y = x + c on 256 floats "
                            "in place), per node, launch_us taken out, less the tiny kernel's "
                            "traced eager duration");
    GR_ASSERT_CONTAINS(txt, "launch_us          1.500  [1.500, 1.500]");
    GR_ASSERT_CONTAINS(txt, "1-node vs 20-node graphs of 10.00 us spins");
    GR_ASSERT_CONTAINS(txt, "pdl_us             0.500");
    GR_ASSERT_CONTAINS(txt, "the tiny chain with and without the attribute, difference / 499");
    GR_ASSERT_CONTAINS(txt, "hbm_gbps            4000  [3992, 4008]");
    GR_ASSERT_CONTAINS(txt, "cudaMemcpyAsync device to device of 256 MiB");
    GR_ASSERT_CONTAINS(txt, "chain 500 x tiny                        601.5  [597.5, 605.5]");
    GR_ASSERT_CONTAINS(txt, "chain 500 x tiny, PDL                   352.0  [348.0, 356.0]");
    GR_ASSERT_CONTAINS(txt, "graph 1 x 10.00 us spin");
    GR_ASSERT_CONTAINS(txt, "graph 20 x 10.00 us spins");
    GR_ASSERT_CONTAINS(txt, "traced tiny kernel durations (eager, one at a time, 100 after 10 "
                            "warm-up): 0.900 us [0.896, 0.928]");
    GR_ASSERT_CONTAINS(txt, "per tiny node, untraced (launch taken out): 1.200 us; less the traced "
                            "duration 0.900 us: node_us 0.300 us");
    GR_ASSERT_CONTAINS(txt, "per tiny node with PDL, untraced (launch taken out): 0.701 us");
    GR_ASSERT_CONTAINS(txt, "sanity check: node_us in (-0.25, 3) us: passed");
    GR_ASSERT_CONTAINS(txt, "tiny kernels' buffer after 44110 kernels: every element as expected");
    GR_ASSERT_CONTAINS(txt, "SM clock: 2000 MHz before the rounds, 2000 after, 2000 traced (rated "
                            "1980; a note only); spins of 20000 cycles (launch graphs) and "
                            "2000000 (blocker)");
    CU_ASSERT_PTR_NULL(strstr(txt, "NOTE"));
    CU_ASSERT_PTR_NULL(strstr(txt, "spin length"));
    free(txt);

    json_t *j = (json_t *)gr_cal_json(&res);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "schema_version")), 1);
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(j, "tool")), "calibrate");
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(j, "method")),
                       "node_us and pdl_us from a chain of tiny kernels");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "gpu")), "NVIDIA H200");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "cc")), "9.0");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "driver")), 13000);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "date")), "2026-12-05T10:00:00Z");
    NEAR(json_real_value(json_object_get(j, "node_us")), 0.3, 1e-12);
    NEAR(json_real_value(json_object_get(j, "pdl_us")), 0.5, 1e-12);
    json_t *fig = json_object_get(json_object_get(j, "figures"), "node_us");
    NEAR(json_real_value(json_object_get(fig, "p10")), 0.292, 1e-12);
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(fig, "measured")),
                       "500-node chain of tiny kernels");
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(
                           json_object_get(json_object_get(j, "figures"), "pdl_us"), "measured")),
                       "the tiny chain without - with PDL, per dependent pair (/ 499)");
    json_t *raw = json_object_get(j, "raw");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(raw, "tiny_ptx")), 90);
    json_t *tiny = json_object_get(raw, "tiny");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(tiny, "kernel")), "gr_cal_tiny");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(tiny, "threads")), 256);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(tiny, "elements")), 256);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(tiny, "blocks")), 1);
    CU_ASSERT_EQUAL(
        json_integer_value(json_object_get(json_object_get(raw, "spin_cycles"), "launch")), 20000);
    NEAR(json_real_value(json_object_get(json_object_get(raw, "spin_us"), "launch")), 10, 1e-12);
    json_t *ch = json_object_get(raw, "chain_tiny_us");
    CU_ASSERT_EQUAL(json_array_size(json_object_get(ch, "per_round")), 3);
    NEAR(json_real_value(json_object_get(ch, "median")), 601.5, 1e-9);
    CU_ASSERT_EQUAL(
        json_array_size(json_object_get(json_object_get(raw, "chain_tiny_pdl_us"), "per_round")),
        3);
    CU_ASSERT_PTR_NULL(json_object_get(raw, "chain_t1_us"));
    json_t *tr = json_object_get(raw, "traced");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(tr, "kernel")), "gr_cal_tiny");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(tr, "count")), 100);
    NEAR(json_real_value(json_object_get(json_object_get(tr, "tiny_us"), "median")), 0.9, 0);
    CU_ASSERT(json_is_null(json_object_get(tr, "trace")));
    json_t *d = json_object_get(raw, "derived");
    NEAR(json_real_value(json_object_get(d, "period_us")), 1.2, 1e-9);
    NEAR(json_real_value(json_object_get(d, "traced_tiny_us")), 0.9, 0);
    NEAR(json_real_value(json_object_get(d, "node_us")), 0.3, 1e-9);
    NEAR(json_real_value(json_object_get(d, "pdl_period_us")), 1.2 - 0.5 * 499.0 / 500.0, 1e-9);
    json_t *ck = json_object_get(raw, "checks");
    CU_ASSERT(json_is_true(json_object_get(ck, "sane")));
    CU_ASSERT(json_is_true(json_object_get(ck, "period_exceeds_traced")));
    CU_ASSERT(json_is_true(json_object_get(ck, "node_below_max")));
    NEAR(json_real_value(json_object_get(ck, "node_max_us")), 3, 0);
    CU_ASSERT(json_is_false(json_object_get(ck, "clock_moved")));
    CU_ASSERT(json_is_true(json_object_get(ck, "buffer_ok")));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(ck, "buffer_kernels")), 44110);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(ck, "buffer_bad_elements")), 0);
    /* the document reads back as a calibration file, each figure as written */
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    gr_error e;
    gr_error_clear(&e);
    gr_cal_file *f = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_cal_load_text(text, strlen(text), "cal.json", &f, &e), GR_OK);
    CU_ASSERT_STRING_EQUAL(f->row.gpu, "NVIDIA H200");
    CU_ASSERT_STRING_EQUAL(f->row.cc, "9.0");
    NEAR(f->row.node_us, 0.3, 1e-9);
    NEAR(f->row.launch_us, 1.5, 1e-9);
    NEAR(f->row.launch_host_us, 1.3, 1e-9);
    NEAR(f->row.pdl_us, 0.5, 1e-9);
    NEAR(f->row.hbm_gbps, 4000, 1e-9);
    CU_ASSERT_STRING_EQUAL(f->date, "2026-12-05T10:00:00Z");
    CU_ASSERT_EQUAL(f->driver, 13000);
    GR_ASSERT_CONTAINS(f->row.source, "calibration file cal.json: NVIDIA H200 (cc 9.0), "
                                      "2026-12-05T10:00:00Z");
    gr_cal_file_destroy(f);
    gr_cal_file_destroy(NULL);
    free(text);
    json_decref(j);
}

/* A failed sanity check, a wrong buffer, no PDL: in the text, the notes and raw.checks; the
 * file still reads back (node_us written as 0). */
static void test_print_and_json_failed(void) {
    gr_cal_result res;
    made_up(&res, 3);
    res.raw.traced.median = 1.9;
    res.raw.pdl = 0;
    res.raw.cc_major = 8;
    res.raw.buffer_bad = 3;
    res.raw.buffer_got = 5;
    res.raw.buffer_want = 6;
    gr_cal_derive(&res);
    char *txt = print_to_string(&res);
    GR_ASSERT_CONTAINS(txt, "node_us                0  [-0.708, -0.692]");
    GR_ASSERT_CONTAINS(txt, "pdl_us                 0  (not measured)");
    GR_ASSERT_CONTAINS(txt, "sanity check: node_us in (-0.25, 3) us: FAILED (see the note)");
    GR_ASSERT_CONTAINS(txt, "tiny kernels' buffer after 44110 kernels: WRONG (see the note)");
    GR_ASSERT_CONTAINS(txt, "  NOTE: sanity check failed: the tiny chain's untraced time per node");
    GR_ASSERT_CONTAINS(txt, "  NOTE: node_us measured -0.7000, below 0: written as 0");
    CU_ASSERT_PTR_NULL(strstr(txt, "chain 500 x tiny, PDL"));
    free(txt);
    json_t *j = (json_t *)gr_cal_json(&res);
    NEAR(json_real_value(json_object_get(j, "node_us")), 0, 0);
    json_t *raw = json_object_get(j, "raw");
    CU_ASSERT(json_is_null(json_object_get(raw, "chain_tiny_pdl_us")));
    NEAR(json_real_value(json_object_get(json_object_get(raw, "derived"), "node_us")), -0.7, 1e-9);
    json_t *ck = json_object_get(raw, "checks");
    CU_ASSERT(json_is_false(json_object_get(ck, "sane")));
    CU_ASSERT(json_is_false(json_object_get(ck, "period_exceeds_traced")));
    CU_ASSERT(json_is_false(json_object_get(ck, "node_above_min")));
    CU_ASSERT(json_is_true(json_object_get(ck, "node_below_max")));
    CU_ASSERT(json_is_false(json_object_get(ck, "buffer_ok")));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(ck, "buffer_bad_elements")), 3);
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(
                           json_object_get(json_object_get(j, "figures"), "pdl_us"), "measured")),
                       "not measured (compute capability < 9.0)");
    json_t *notes = json_object_get(j, "notes");
    int sanity = 0;
    for (size_t i = 0; i < json_array_size(notes); i++)
        if (strstr(json_string_value(json_array_get(notes, i)), "sanity check failed")) sanity++;
    CU_ASSERT_EQUAL(sanity, 1);
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    gr_error e;
    gr_error_clear(&e);
    gr_cal_file *f = NULL;
    CU_ASSERT_EQUAL(gr_cal_load_text(text, strlen(text), "cal.json", &f, &e), GR_OK);
    if (f) NEAR(f->row.node_us, 0, 0);
    gr_cal_file_destroy(f);
    free(text);
    json_decref(j);
    /* the buffer not read back (the traced phase never ran): null */
    made_up(&res, 3);
    res.raw.buffer_checked = 0;
    gr_cal_derive(&res);
    j = (json_t *)gr_cal_json(&res);
    CU_ASSERT(json_is_null(
        json_object_get(json_object_get(json_object_get(j, "raw"), "checks"), "buffer_ok")));
    json_decref(j);
    txt = print_to_string(&res);
    CU_ASSERT_PTR_NULL(strstr(txt, "buffer"));
    free(txt);
}

/* A file written by the calibrate of the spin chains (before the tiny chain: raw and figures
 * held other keys) still reads: the reader needs the five figures, gpu, cc and date. */
static void test_reader_old_format(void) {
    const char *old =
        "{\n"
        "  \"schema_version\": 1,\n"
        "  \"tool\": \"cupti-launchstat 0.9 calibrate\",\n"
        "  \"gpu\": \"NVIDIA H200\",\n"
        "  \"cc\": \"9.0\",\n"
        "  \"driver\": 13000,\n"
        "  \"runtime\": 13000,\n"
        "  \"date\": \"2026-12-05T03:34:55Z\",\n"
        "  \"node_us\": 0.0,\n"
        "  \"launch_us\": 1.0170,\n"
        "  \"launch_host_us\": 2.2012,\n"
        "  \"pdl_us\": 0.2623,\n"
        "  \"hbm_gbps\": 4200.0,\n"
        "  \"method\": \"untraced: ... node_us against the spin kernels' traced eager "
        "durations\",\n"
        "  \"notes\": [\"node_us measured -0.0942, below 0: written as 0 (the figures it is "
        "derived from are in raw)\"],\n"
        "  \"figures\": {\"node_us\": {\"median\": -0.0942, \"p10\": -0.094, \"p90\": -0.094, "
        "\"n\": 21, \"measured\": \"500-node chains of 2.00 and 4.00 us spins\"}},\n"
        "  \"raw\": {\"sm_count\": 132, \"spin_ptx\": 90,\n"
        "    \"clock_mhz\": {\"rated\": 1980, \"before\": 1980, \"after\": 1980, \"traced\": "
        "1980},\n"
        "    \"spin_cycles\": {\"t1\": 3960, \"t2\": 7920, \"launch\": 19799, \"blocker\": "
        "1980000},\n"
        "    \"spin_us\": {\"t1\": 2.0, \"t2\": 4.0, \"launch\": 10.0},\n"
        "    \"chain_t1_us\": {\"median\": 1244, \"p10\": 1244, \"p90\": 1244, \"n\": 1, "
        "\"per_round\": [1244]},\n"
        "    \"chain_t2_us\": {\"median\": 2248, \"p10\": 2248, \"p90\": 2248, \"n\": 1, "
        "\"per_round\": [2248]},\n"
        "    \"chain_t1_pdl_us\": null,\n"
        "    \"traced\": {\"count\": 100, \"warmup\": 10, \"t1_us\": {\"median\": 2.624}, "
        "\"t2_us\": {\"median\": 4.544}, \"dropped\": 0, \"trace\": null},\n"
        "    \"derived\": {\"period_t1_us\": 2.485, \"period_t2_us\": 4.494, \"node_t1_us\": "
        "-0.139, \"node_t2_us\": -0.050, \"clock_fix_t1_us\": 0, \"clock_fix_t2_us\": 0, "
        "\"pdl_period_us\": 2.224}}\n"
        "}\n";
    const char *p = gr_test_tmpfile(".json", old, strlen(old));
    gr_error e;
    gr_error_clear(&e);
    gr_cal_file *f = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_cal_load(p, &f, &e), GR_OK);
    CU_ASSERT_STRING_EQUAL(f->gpu, "NVIDIA H200");
    CU_ASSERT_STRING_EQUAL(f->date, "2026-12-05T03:34:55Z");
    CU_ASSERT_STRING_EQUAL(f->tool, "cupti-launchstat 0.9 calibrate");
    NEAR(f->row.node_us, 0, 0);
    NEAR(f->row.launch_us, 1.017, 1e-12);
    NEAR(f->row.launch_host_us, 2.2012, 1e-12);
    NEAR(f->row.pdl_us, 0.2623, 1e-12);
    NEAR(f->row.hbm_gbps, 4200, 0);
    CU_ASSERT_EQUAL(f->driver, 13000);
    gr_cal_file_destroy(f);
    unlink(p);
}

/* ---- the reader: hostile input ---- */

#define GOOD_HEAD                                                                                  \
    "\"schema_version\": 1, \"gpu\": \"NVIDIA H200\", \"cc\": \"9.0\", \"date\": \"d\""
#define GOOD_FIGS                                                                                  \
    "\"node_us\": 0.3, \"launch_us\": 0.7, \"launch_host_us\": 1.3, \"pdl_us\": 0.5, "             \
    "\"hbm_gbps\": 4000"

static const char *load_err(const char *text) {
    static char msg[GR_ERROR_MSG_MAX];
    gr_error e;
    gr_error_clear(&e);
    gr_cal_file *f = NULL;
    gr_status st = gr_cal_load_text(text, strlen(text), "c.json", &f, &e);
    gr_cal_file_destroy(f);
    if (st == GR_OK) return "(no error)";
    CU_ASSERT_EQUAL(st, GR_ERR_INPUT);
    CU_ASSERT_PTR_NULL(f);
    snprintf(msg, sizeof(msg), "%s", e.msg);
    return msg;
}

static void test_reader_minimal(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_cal_file *f = NULL;
    const char *text = "{" GOOD_HEAD ", " GOOD_FIGS "}";
    CU_ASSERT_EQUAL_FATAL(gr_cal_load_text(text, strlen(text), "c.json", &f, &e), GR_OK);
    NEAR(f->row.launch_us, 0.7, 1e-12);
    CU_ASSERT_EQUAL(f->driver, -1);
    CU_ASSERT_STRING_EQUAL(f->tool, "unknown tool");
    gr_cal_file_destroy(f);
    /* integers are numbers too; zero costs are allowed */
    text = "{" GOOD_HEAD ", \"node_us\": 0, \"launch_us\": 1, \"launch_host_us\": 0, \"pdl_us\": "
           "0, \"hbm_gbps\": 900, \"notes\": [\"a\"], \"figures\": {}, \"raw\": {\"x\": [1]}, "
           "\"tool\": \"t\", \"method\": \"m\", \"driver\": 12080, \"runtime\": 12080}";
    CU_ASSERT_EQUAL_FATAL(gr_cal_load_text(text, strlen(text), "c.json", &f, &e), GR_OK);
    NEAR(f->row.launch_us, 1, 0);
    NEAR(f->row.hbm_gbps, 900, 0);
    gr_cal_file_destroy(f);
}

static void test_reader_bad(void) {
    static const struct {
        const char *text, *want;
    } cases[] = {
        /* a key missing, each required one */
        {"{" GOOD_HEAD
         ", \"launch_us\": 0.7, \"launch_host_us\": 1.3, \"pdl_us\": 0.5, \"hbm_gbps\": 4000}",
         "c.json: key \"node_us\" (microseconds of GPU time per kernel node) is missing (a "
         "calibration file is what `cupti-launchstat calibrate -o FILE` writes"},
        {"{\"schema_version\": 1, \"cc\": \"9.0\", \"date\": \"d\", " GOOD_FIGS "}",
         "c.json: key \"gpu\" is missing"},
        {"{\"schema_version\": 1, \"gpu\": \"G\", \"date\": \"d\", " GOOD_FIGS "}",
         "c.json: key \"cc\" is missing"},
        {"{\"schema_version\": 1, \"gpu\": \"G\", \"cc\": \"9.0\", " GOOD_FIGS "}",
         "c.json: key \"date\" is missing"},
        {"{\"gpu\": \"G\", \"cc\": \"9.0\", \"date\": \"d\", " GOOD_FIGS "}",
         "c.json: key \"schema_version\" is missing"},
        /* wrong types */
        {"{" GOOD_HEAD ", \"node_us\": 0.3, \"launch_us\": \"0.7\", \"launch_host_us\": 1.3, "
         "\"pdl_us\": 0.5, \"hbm_gbps\": 4000}",
         "c.json: key \"launch_us\" must be a number (microseconds of GPU time per graph launch), "
         "got a string"},
        {"{" GOOD_HEAD ", \"node_us\": null, \"launch_us\": 0.7, \"launch_host_us\": 1.3, "
         "\"pdl_us\": 0.5, \"hbm_gbps\": 4000}",
         "key \"node_us\" must be a number (microseconds of GPU time per kernel node), got null"},
        {"{\"schema_version\": \"1\", \"gpu\": \"G\", \"cc\": \"9.0\", \"date\": \"d\", " GOOD_FIGS
         "}",
         "key \"schema_version\" must be the integer 1, got a string"},
        {"{\"schema_version\": 1, \"gpu\": 7, \"cc\": \"9.0\", \"date\": \"d\", " GOOD_FIGS "}",
         "key \"gpu\" must be a string, got an integer"},
        {"{" GOOD_HEAD ", " GOOD_FIGS ", \"notes\": \"n\"}",
         "key \"notes\" must be an array of at most 64 strings without control characters, got a "
         "string"},
        {"{" GOOD_HEAD ", " GOOD_FIGS ", \"notes\": [1]}", "key \"notes\" must be an array"},
        {"{" GOOD_HEAD ", " GOOD_FIGS ", \"raw\": []}",
         "key \"raw\" must be an object, got an array"},
        {"{" GOOD_HEAD ", " GOOD_FIGS ", \"driver\": 1.5}",
         "key \"driver\" must be a whole number, got a number"},
        {"{" GOOD_HEAD ", " GOOD_FIGS ", \"driver\": -1}",
         "key \"driver\" is -1: it takes 0 to 100000000"},
        /* values out of range */
        {"{" GOOD_HEAD ", \"node_us\": 0.3, \"launch_us\": 0.7, \"launch_host_us\": 1.3, "
         "\"pdl_us\": -0.1, \"hbm_gbps\": 4000}",
         "c.json: key \"pdl_us\" is -0.1: out of range, it takes microseconds saved per dependent "
         "kernel pair from 0 (included) to 100 (excluded); measure it with `cupti-launchstat "
         "calibrate -o FILE`"},
        {"{" GOOD_HEAD ", \"node_us\": 150, \"launch_us\": 0.7, \"launch_host_us\": 1.3, "
         "\"pdl_us\": 0.5, \"hbm_gbps\": 4000}",
         "key \"node_us\" is 150: out of range"},
        {"{" GOOD_HEAD ", \"node_us\": 0.3, \"launch_us\": 0.7, \"launch_host_us\": 1.3, "
         "\"pdl_us\": 0.5, \"hbm_gbps\": 0}",
         "key \"hbm_gbps\" is 0: out of range, it takes GB/s read + written from 0 (excluded)"},
        {"{" GOOD_HEAD ", \"node_us\": 0.3, \"launch_us\": 1e300, \"launch_host_us\": 1.3, "
         "\"pdl_us\": 0.5, \"hbm_gbps\": 4000}",
         "key \"launch_us\" is 1e+300: out of range"},
        /* NaN and infinity are not JSON: the parser stops at them, naming line and column */
        {"{" GOOD_HEAD ",\n \"node_us\": NaN}",
         "c.json:2:15: not a calibration file: invalid token near 'NaN'"},
        {"{" GOOD_HEAD ",\n \"node_us\": 1e999}",
         "c.json:2:17: not a calibration file: real number overflow"},
        {"{" GOOD_HEAD ",\n \"node_us\": -Infinity}",
         "c.json:2:13: not a calibration file: invalid token"},
        /* structure */
        {"{" GOOD_HEAD ", " GOOD_FIGS ", \"nodes_us\": 0.3}",
         "c.json: keys that a calibration file does not hold (1 object item(s) left unpacked: "
         "nodes_us); schema_version 1 holds schema_version, tool, gpu"},
        {"{\"schema_version\": 2, \"gpu\": \"G\", \"cc\": \"9.0\", \"date\": \"d\", " GOOD_FIGS "}",
         "c.json: schema_version 2: this cupti-launchstat reads version 1"},
        {"[1, 2]", "c.json: the top level is an array, not an object"},
        {"", "c.json:1:0: not a calibration file"},
        {"{" GOOD_HEAD ", " GOOD_FIGS ", \"node_us\": 0.4}", "duplicate object key"},
        {"{" GOOD_HEAD ", " GOOD_FIGS "} {}", "not a calibration file: end of file expected"},
        /* strings a terminal would interpret, or none */
        {"{\"schema_version\": 1, \"gpu\": \"\\u001b[31mG\", \"cc\": \"9.0\", \"date\": "
         "\"d\", " GOOD_FIGS "}",
         "key \"gpu\" must be a non-empty string of at most 127 bytes without control characters"},
        {"{\"schema_version\": 1, \"gpu\": \"G\\u0000H\", \"cc\": \"9.0\", \"date\": "
         "\"d\", " GOOD_FIGS "}",
         "c.json:1:39: not a calibration file: \\u0000 is not allowed"},
        {"{\"schema_version\": 1, \"gpu\": \"\", \"cc\": \"9.0\", \"date\": \"d\", " GOOD_FIGS "}",
         "key \"gpu\" must be a non-empty string"},
        {"{\"schema_version\": 1, \"gpu\": \"G\", \"cc\": \"nine\", \"date\": \"d\", " GOOD_FIGS
         "}",
         "key \"cc\" is \"nine\": a compute capability is MAJOR.MINOR, e.g. \"9.0\""},
        {"{\"schema_version\": 1, \"gpu\": \"G\", \"cc\": \"9.\", \"date\": \"d\", " GOOD_FIGS "}",
         "key \"cc\" is \"9.\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *m = load_err(cases[i].text);
        int ok = strstr(m, cases[i].want) != NULL;
        if (!ok) fprintf(stderr, "\n    case %zu: expected \"%s\" in: %s\n", i, cases[i].want, m);
        CU_ASSERT(ok);
    }
    /* every problem in one pass */
    const char *m =
        load_err("{\"schema_version\": 1, \"cc\": \"x\", \"date\": \"d\", \"node_us\": -1, "
                 "\"launch_us\": 0.7, \"launch_host_us\": true, \"pdl_us\": 0.5, "
                 "\"hbm_gbps\": 4000, \"extra\": 1}");
    GR_ASSERT_CONTAINS(m, "key \"gpu\" is missing");
    GR_ASSERT_CONTAINS(m, "key \"cc\" is \"x\"");
    GR_ASSERT_CONTAINS(m, "key \"node_us\" is -1: out of range");
    GR_ASSERT_CONTAINS(m, "key \"launch_host_us\" must be a number (microseconds of host time per "
                          "graph launch), got a boolean");
    GR_ASSERT_CONTAINS(m, "left unpacked: extra");
}

static void test_reader_files(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_cal_file *f = NULL;
    const char *good = "{" GOOD_HEAD ", " GOOD_FIGS "}";
    const char *p = gr_test_tmpfile(".json", good, strlen(good));
    CU_ASSERT_EQUAL(gr_cal_load(p, &f, &e), GR_OK);
    CU_ASSERT_PTR_NOT_NULL(f);
    if (f) CU_ASSERT_STRING_EQUAL(f->path, p);
    gr_cal_file_destroy(f);
    /* not there */
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_cal_load("/nonexistent/cal.json", &f, &e), GR_ERR_IO);
    GR_ASSERT_CONTAINS(e.msg, "/nonexistent/cal.json: cannot open the calibration file: No such "
                              "file or directory (check the path)");
    /* not a file: a directory, a device, a FIFO (refused before it is opened: never blocks) */
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_cal_load("/tmp", &f, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "/tmp: is a directory, not a regular file: the calibration file must "
                              "be a file on disk");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_cal_load("/dev/zero", &f, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "/dev/zero: is a device, not a regular file");
    char fifo[256];
    snprintf(fifo, sizeof(fifo), "/tmp/gr_test_cal_fifo_%d", (int)getpid());
    unlink(fifo);
    if (mkfifo(fifo, 0600) == 0) {
        gr_error_clear(&e);
        CU_ASSERT_EQUAL(gr_cal_load(fifo, &f, &e), GR_ERR_INPUT);
        GR_ASSERT_CONTAINS(e.msg, "is a FIFO (named pipe), not a regular file");
        unlink(fifo);
    }
    /* huge: over 1 MiB, refused by its size before it is read */
    size_t big = GR_CAL_FILE_MAX + 1;
    char *blob = malloc(big);
    memset(blob, ' ', big);
    blob[0] = '{';
    blob[big - 1] = '}';
    const char *h = gr_test_tmpfile(".json", blob, big);
    free(blob);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_cal_load(h, &f, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "is 1048577 bytes, over the 1 MiB a calibration file may hold");
    unlink(h);
    /* empty, and a trace instead of a calibration file */
    const char *emp = gr_test_tmpfile(".json", "", 0);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_cal_load(emp, &f, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "not a calibration file");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_cal_load(gr_test_src("tests/data/torch_mlp_eager.jsonl"), &f, &e),
                    GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg,
                       "torch_mlp_eager.jsonl:2:1: not a calibration file: end of file expected");
    unlink(p);
    unlink(emp);
}

/* ---- the command line, no GPU needed ---- */

static char out[1 << 20];

static int ls(const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "'%s' %s", gr_test_bin("cupti-launchstat"), args);
    return gr_test_popen(NULL, cmd, out, sizeof(out));
}

static const char *cal_file(const char *gpu, double node, double launch, double host, double pdl,
                            double hbm) {
    char text[1024];
    snprintf(text, sizeof(text),
             "{\"schema_version\": 1, \"tool\": \"test\", \"gpu\": \"%s\", \"cc\": \"9.0\", "
             "\"driver\": 13000, \"date\": \"2026-12-05T10:00:00Z\", \"node_us\": %.17g, "
             "\"launch_us\": %.17g, \"launch_host_us\": %.17g, \"pdl_us\": %.17g, \"hbm_gbps\": "
             "%.17g}",
             gpu, node, launch, host, pdl, hbm);
    return gr_test_tmpfile(".json", text, strlen(text));
}

static json_t *load_json(const char *path) {
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (!j) fprintf(stderr, "\n    %s: %s\n", path, je.text);
    return j;
}

/* Without a device: exit 3 and why; nothing written. CUDA_VISIBLE_DEVICES hides the GPU on the
 * GPU machine too. */
static void test_cli_no_gpu(void) {
    char path[256], a[600];
    snprintf(path, sizeof(path), "/tmp/gr_test_cal_nogpu_%d.json", (int)getpid());
    unlink(path);
    snprintf(a, sizeof(a), "calibrate -o %s", path);
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "CUDA_VISIBLE_DEVICES= '%s' %s", gr_test_bin("cupti-launchstat"), a);
    CU_ASSERT_EQUAL(gr_test_popen(NULL, cmd, out, sizeof(out)), 3);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: no CUDA device (");
    GR_ASSERT_CONTAINS(out, "calibrate measures the GPU it runs on");
    GR_ASSERT_CONTAINS(out, "report --calibration FILE");
    CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
    /* another CUPTI client is named before anything is measured */
    snprintf(cmd, sizeof(cmd), "CUDA_VISIBLE_DEVICES= NSYS_PROFILING_SESSION_ID=7 '%s' %s",
             gr_test_bin("cupti-launchstat"), a);
    CU_ASSERT_EQUAL(gr_test_popen(NULL, cmd, out, sizeof(out)), 3);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: warning: Nsight is profiling this process "
                            "(NSYS_PROFILING_SESSION_ID is set)");
    GR_ASSERT_CONTAINS(out, "calibrate's traced reference needs CUPTI to itself");
    CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
}

static void test_cli_usage(void) {
    CU_ASSERT_EQUAL(ls("calibrate --help"), 0);
    GR_ASSERT_CONTAINS(out, "usage: cupti-launchstat calibrate [--device N] [-o FILE]");
    GR_ASSERT_CONTAINS(out, "cupti-launchstat report eager.jsonl --calibration h200.json");
    CU_ASSERT_EQUAL(ls("help calibrate"), 0);
    GR_ASSERT_CONTAINS(out, "node_us, launch_us, launch_host_us, pdl_us and hbm_gbps");
    CU_ASSERT_EQUAL(ls("--help"), 0);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat calibrate [options]");
    CU_ASSERT_EQUAL(ls("report --help"), 0);
    GR_ASSERT_CONTAINS(out, "--calibration FILE");
    CU_ASSERT_EQUAL(ls("calibrate --device abc"), 2);
    GR_ASSERT_CONTAINS(out, "--device takes a device number (0, 1, ...), got \"abc\"");
    CU_ASSERT_EQUAL(ls("calibrate --device"), 2);
    GR_ASSERT_CONTAINS(out, "option --device needs a value");
    CU_ASSERT_EQUAL(ls("calibrate --rounds 2"), 2);
    GR_ASSERT_CONTAINS(out, "--rounds takes a whole number from 3 to 64, got \"2\"");
    CU_ASSERT_EQUAL(ls("calibrate -o -"), 2);
    GR_ASSERT_CONTAINS(out, "-o needs a file name: \"-\" (stdout) is taken by --json only");
    CU_ASSERT_EQUAL(ls("calibrate extra"), 2);
    GR_ASSERT_CONTAINS(out, "unexpected argument \"extra\" (calibrate takes options only)");
    CU_ASSERT_EQUAL(ls("calibrate --predict"), 2);
    GR_ASSERT_CONTAINS(out, "unknown option --predict (see calibrate --help)");
    CU_ASSERT_EQUAL(ls("calibrate -o /tmp/gr_test_same.json --json /tmp/gr_test_same.json"), 2);
    GR_ASSERT_CONTAINS(out, "calibrate --json /tmp/gr_test_same.json: is the same file as -o "
                            "/tmp/gr_test_same.json: give each output its own file");
    CU_ASSERT_EQUAL(ls("calibrate -o /tmp"), 2);
    GR_ASSERT_CONTAINS(out, "calibrate -o /tmp: is a directory: give a file name");
    CU_ASSERT_EQUAL(ls("calibrate --trace /dev/null"), 2);
    GR_ASSERT_CONTAINS(out, "calibrate --trace /dev/null: is not a regular file");
}

/* report --calibration F predicts exactly as --graph-node-us/--graph-launch-us with the same
 * values (the file's other three figures are the table's), on every fixture; a file holding the
 * table's row gives the table's figures. */
static void test_cli_report_file(void) {
    static const char *fixtures[] = {"pointwise_fusion_n4096.jsonl", "launch_bound_k200.jsonl",
                                     "decode_step.jsonl", "torch_mlp_eager.jsonl"};
    const char *cal = cal_file("NVIDIA H200", 0.45, 1.25, 1.30, 0.50, 4000);
    char jf[256], ju[256];
    snprintf(jf, sizeof(jf), "/tmp/gr_test_cal_f_%d.json", (int)getpid());
    snprintf(ju, sizeof(ju), "/tmp/gr_test_cal_u_%d.json", (int)getpid());
    for (size_t k = 0; k < sizeof(fixtures) / sizeof(fixtures[0]); k++) {
        char a[1024];
        snprintf(a, sizeof(a), "report tests/data/%s --predict --calibration %s --json %s",
                 fixtures[k], cal, jf);
        CU_ASSERT_EQUAL_FATAL(ls(a), 0);
        CU_ASSERT_PTR_NULL(strstr(out, "warning: the calibration file")); /* same GPU */
        GR_ASSERT_CONTAINS(out, "costs     calibration file ");
        snprintf(a, sizeof(a),
                 "report tests/data/%s --predict --graph-node-us 0.45 --graph-launch-us 1.25 "
                 "--json %s",
                 fixtures[k], ju);
        CU_ASSERT_EQUAL_FATAL(ls(a), 0);
        json_t *f = load_json(jf), *u = load_json(ju);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_PTR_NOT_NULL_FATAL(u);
        json_t *pf = json_object_get(f, "prediction"), *pu = json_object_get(u, "prediction");
        json_t *cf = json_object_get(pf, "calibration");
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(cf, "from")), "file");
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(cf, "file")), cal);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(cf, "gpu")), "NVIDIA H200");
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(cf, "date")),
                               "2026-12-05T10:00:00Z");
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(cf, "warning")), "");
        CU_ASSERT_EQUAL(json_real_value(json_object_get(cf, "node_us")), 0.45);
        CU_ASSERT_EQUAL(json_real_value(json_object_get(cf, "launch_us")), 1.25);
        json_t *sf = json_object_get(pf, "scopes"), *su = json_object_get(pu, "scopes");
        CU_ASSERT_EQUAL_FATAL(json_array_size(sf), json_array_size(su));
        int predicted = 0;
        for (size_t i = 0; i < json_array_size(sf); i++) {
            json_t *x = json_array_get(sf, i), *y = json_array_get(su, i);
            if (!json_is_true(json_object_get(x, "predicted"))) continue;
            predicted++;
            static const char *keys[] = {"graph_predicted_us", "graph_pdl_predicted_us",
                                         "saved_us_per_step", "speedup"};
            for (size_t q = 0; q < 4; q++)
                CU_ASSERT(json_equal(json_object_get(x, keys[q]), json_object_get(y, keys[q])));
            CU_ASSERT(json_equal(
                json_object_get(json_object_get(x, "fusion"), "graph_fused_predicted_us"),
                json_object_get(json_object_get(y, "fusion"), "graph_fused_predicted_us")));
            CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(x, "verdict")),
                                   json_string_value(json_object_get(y, "verdict")));
        }
        CU_ASSERT(predicted > 0);
        json_decref(f);
        json_decref(u);
    }
    /* the table's H200 row in a file: the table's figures (docs/predict.md) */
    const char *tab = cal_file("NVIDIA H200", 0.28, 0.72, 1.30, 0.50, 4000);
    char a[1024];
    snprintf(a, sizeof(a), "report tests/data/torch_mlp_eager.jsonl --calibration %s", tab);
    CU_ASSERT_EQUAL(ls(a), 0);
    GR_ASSERT_CONTAINS(out, "graph step, predicted 35.34 us");
    snprintf(a, sizeof(a), "report tests/data/pointwise_fusion_n4096.jsonl --calibration %s", tab);
    CU_ASSERT_EQUAL(ls(a), 0);
    GR_ASSERT_CONTAINS(out,
                       "graph step, measured  4.592 us untraced (unfused graph): prediction -0.7%");
    /* the file's other figures count: a host submit of 40 us makes every pointwise step
     * host-bound, a PDL saving of 0 leaves the PDL step as the plain one */
    const char *slow = cal_file("NVIDIA H200", 0.28, 0.72, 40, 0, 4000);
    snprintf(a, sizeof(a),
             "report tests/data/pointwise_fusion_n4096.jsonl --calibration %s --json %s", slow, jf);
    CU_ASSERT_EQUAL(ls(a), 0);
    GR_ASSERT_CONTAINS(out,
                       "host-bound            100% of steps are set by the host's graph submit");
    json_t *j = load_json(jf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    json_t *s0 = json_array_get(json_object_get(json_object_get(j, "prediction"), "scopes"), 0);
    CU_ASSERT_EQUAL(json_real_value(json_object_get(s0, "graph_predicted_us")), 40);
    CU_ASSERT_EQUAL(json_real_value(json_object_get(s0, "graph_pdl_predicted_us")), 40);
    json_decref(j);
    /* user values over the file: the two costs from the command line, the rest from the file */
    snprintf(a, sizeof(a),
             "report tests/data/torch_mlp_eager.jsonl --calibration %s --graph-node-us 0 --json %s",
             slow, jf);
    CU_ASSERT_EQUAL(ls(a), 0);
    j = load_json(jf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    json_t *c = json_object_get(json_object_get(j, "prediction"), "calibration");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c, "from")), "user");
    CU_ASSERT_EQUAL(json_real_value(json_object_get(c, "node_us")), 0);
    CU_ASSERT_EQUAL(json_real_value(json_object_get(c, "launch_us")), 0.72);
    CU_ASSERT_EQUAL(json_real_value(json_object_get(c, "launch_host_us")), 40);
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(c, "source")),
                       "given on the command line (--graph-node-us / --graph-launch-us); the rest "
                       "from the calibration file ");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c, "file")), slow);
    json_decref(j);
    unlink(jf);
    unlink(ju);
}

/* A file measured on another GPU: used, and said (report, stderr, JSON). */
static void test_cli_report_other_gpu(void) {
    const char *cal = cal_file("NVIDIA A100-SXM4-80GB", 0.3, 0.8, 2.0, 0, 1800);
    char a[1024], jf[256];
    snprintf(jf, sizeof(jf), "/tmp/gr_test_cal_o_%d.json", (int)getpid());
    snprintf(a, sizeof(a), "report tests/data/torch_mlp_eager.jsonl --calibration %s --json %s",
             cal, jf);
    CU_ASSERT_EQUAL(ls(a), 0);
    char want[512];
    snprintf(want, sizeof(want),
             "cupti-launchstat: warning: the calibration file %s was measured on "
             "NVIDIA A100-SXM4-80GB (cc 9.0), the trace comes from NVIDIA H200 (cc 9.0): its graph "
             "costs may not hold for this GPU; run `cupti-launchstat calibrate -o FILE` on the "
             "traced GPU",
             cal);
    GR_ASSERT_CONTAINS(out, want);
    GR_ASSERT_CONTAINS(out, "  WARNING   the calibration file ");
    json_t *j = load_json(jf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    json_t *c = json_object_get(json_object_get(j, "prediction"), "calibration");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c, "from")), "file");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c, "gpu")), "NVIDIA A100-SXM4-80GB");
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(c, "warning")),
                       "was measured on NVIDIA A100");
    json_decref(j);
    unlink(jf);
}

/* A bad file stops report (and the run form, before CMD runs) with exit 2, naming the file and
 * the key. */
static void test_cli_report_bad_file(void) {
    const char *t = "tests/data/torch_mlp_eager.jsonl";
    const char *bad = cal_file("NVIDIA H200", -0.3, 0.72, 1.3, 0.5, 4000);
    char a[1024];
    snprintf(a, sizeof(a), "report %s --calibration %s", t, bad);
    CU_ASSERT_EQUAL(ls(a), 2);
    char want[512];
    snprintf(want, sizeof(want),
             "cupti-launchstat: --calibration %s: key \"node_us\" is -0.3: out of range", bad);
    GR_ASSERT_CONTAINS(out, want);
    CU_ASSERT_PTR_NULL(strstr(out, "graph prediction")); /* nothing reported */
    snprintf(a, sizeof(a), "--calibration %s -- echo CMD-RAN", bad);
    CU_ASSERT_EQUAL(ls(a), 2);
    GR_ASSERT_CONTAINS(out, "key \"node_us\" is -0.3");
    CU_ASSERT_PTR_NULL(strstr(out, "CMD-RAN"));
    snprintf(a, sizeof(a), "report %s --calibration /tmp", t);
    CU_ASSERT_EQUAL(ls(a), 2);
    GR_ASSERT_CONTAINS(out, "--calibration /tmp: is a directory, not a regular file");
    snprintf(a, sizeof(a), "report %s --calibration /nonexistent.json", t);
    CU_ASSERT_EQUAL(ls(a), 2);
    GR_ASSERT_CONTAINS(out, "--calibration /nonexistent.json: cannot open the calibration file");
    snprintf(a, sizeof(a), "report %s --calibration -", t);
    CU_ASSERT_EQUAL(ls(a), 2);
    GR_ASSERT_CONTAINS(out, "--calibration needs a file name");
    snprintf(a, sizeof(a), "report %s --calibration", t);
    CU_ASSERT_EQUAL(ls(a), 2);
    GR_ASSERT_CONTAINS(out, "option --calibration needs a value");
    const char *good = cal_file("NVIDIA H200", 0.3, 0.72, 1.3, 0.5, 4000);
    snprintf(a, sizeof(a), "report %s --calibration %s --no-predict", t, good);
    CU_ASSERT_EQUAL(ls(a), 2);
    GR_ASSERT_CONTAINS(out,
                       "--calibration gives the prediction its graph costs, which --no-predict "
                       "turns off");
    snprintf(a, sizeof(a), "report %s --calibration %s --json %s", t, good, good);
    CU_ASSERT_EQUAL(ls(a), 2);
    GR_ASSERT_CONTAINS(out, "is the same file as --calibration");
    snprintf(a, sizeof(a), "--no-report --calibration %s -- true", good);
    CU_ASSERT_EQUAL(ls(a), 2);
    GR_ASSERT_CONTAINS(out, "--calibration shapes the report, which --no-report turns off");
}

/* ---- on the GPU ---- */

static void test_gpu_calibrate(void) {
    GR_REQUIRE_GPU();
    char f[256], j[256], t[256], a[1024];
    snprintf(f, sizeof(f), "/tmp/gr_test_calib_%d.json", (int)getpid());
    snprintf(j, sizeof(j), "/tmp/gr_test_calib_%d_report.json", (int)getpid());
    snprintf(t, sizeof(t), "/tmp/gr_test_calib_%d_trace.jsonl", (int)getpid());
    snprintf(a, sizeof(a), "calibrate -o %s --json %s --trace %s", f, j, t);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = ls(a);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("\n    calibrate took %.1f s:\n%s", secs, out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT(secs < 60);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat calibrate: graph costs of ");
    GR_ASSERT_CONTAINS(out, "[p10, p90] over rounds");
    GR_ASSERT_CONTAINS(out, "calibration file written to ");
    json_t *doc = load_json(j), *file = load_json(f);
    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(file);
    CU_ASSERT(json_equal(doc, file)); /* --json and -o: the same document */
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(doc, "schema_version")), 1);
    const char *cc = json_string_value(json_object_get(doc, "cc"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(cc);
    double node = json_number_value(json_object_get(doc, "node_us"));
    double launch = json_number_value(json_object_get(doc, "launch_us"));
    double host = json_number_value(json_object_get(doc, "launch_host_us"));
    double pdl = json_number_value(json_object_get(doc, "pdl_us"));
    double hbm = json_number_value(json_object_get(doc, "hbm_gbps"));
    printf("    node %.4f launch %.4f host %.4f pdl %.4f hbm %.0f\n", node, launch, host, pdl, hbm);
    CU_ASSERT(isfinite(node) && node >= 0 && node < 3); /* 0: measured in (-0.25, 0] */
    CU_ASSERT(isfinite(launch) && launch > 0 && launch <= 5);
    CU_ASSERT(isfinite(host) && host > 0 && host < 20);
    CU_ASSERT(isfinite(pdl) && pdl >= 0 && pdl < 3);
    if (atof(cc) >= 9.0) CU_ASSERT(pdl > 0); /* PDL measured, and it saves something */
    CU_ASSERT(isfinite(hbm) && hbm > 100);
    static const char *figs[] = {"node_us", "launch_us", "launch_host_us", "pdl_us", "hbm_gbps"};
    json_t *fig = json_object_get(doc, "figures");
    for (size_t i = 0; i < 5; i++) {
        json_t *s = json_object_get(fig, figs[i]);
        double md = json_number_value(json_object_get(s, "median")),
               lo = json_number_value(json_object_get(s, "p10")),
               hi = json_number_value(json_object_get(s, "p90"));
        CU_ASSERT(isfinite(md) && isfinite(lo) && isfinite(hi));
        if (json_integer_value(json_object_get(s, "n")) > 0) CU_ASSERT(lo <= md && md <= hi);
        GR_ASSERT_CONTAINS(json_string_value(json_object_get(s, "measured")), " ");
    }
    /* the derivation's figures hang together: the tiny chain's untraced time per node is the
     * tiny kernel's traced duration plus the measured node cost (written as node_us, or 0 when
     * that is below 0) */
    json_t *raw = json_object_get(doc, "raw");
    json_t *d = json_object_get(raw, "derived");
    double per = json_number_value(json_object_get(d, "period_us")),
           dur = json_number_value(json_object_get(d, "traced_tiny_us")),
           pdlper = json_number_value(json_object_get(d, "pdl_period_us"));
    printf("    tiny chain per node %.4f us untraced, traced tiny %.4f us, PDL chain per node "
           "%.4f us\n",
           per, dur, pdlper);
    CU_ASSERT(isfinite(per) && isfinite(dur) && dur > 0);
    CU_ASSERT(per - dur > GR_CAL_NODE_MIN_US);
    CU_ASSERT(fabs((per - dur) - json_number_value(json_object_get(d, "node_us"))) < 1e-6);
    CU_ASSERT(fabs((per - dur > 0 ? per - dur : 0) - node) < 1e-6); /* 10 digits in the file */
    CU_ASSERT(fabs(json_number_value(json_object_get(
                       json_object_get(json_object_get(raw, "traced"), "tiny_us"), "median")) -
                   dur) < 1e-9);
    if (atof(cc) >= 9.0) CU_ASSERT(pdlper > 0 && pdlper < per);
    json_t *ck = json_object_get(raw, "checks");
    CU_ASSERT(json_is_true(json_object_get(ck, "sane")));
    CU_ASSERT(json_is_true(json_object_get(ck, "buffer_ok"))); /* no tiny kernel lost an update */
    CU_ASSERT(json_integer_value(json_object_get(ck, "buffer_kernels")) >= 21 * 2 * 500 + 110);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(raw, "tiny"), "elements")),
                    256);
    CU_ASSERT_PTR_NULL(strstr(out, "sanity check failed"));
    /* the file reads back, and report predicts with it */
    gr_error e;
    gr_error_clear(&e);
    gr_cal_file *cf = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_cal_load(f, &cf, &e), GR_OK);
    CU_ASSERT_EQUAL(cf->row.node_us, node);
    gr_cal_file_destroy(cf);
    snprintf(a, sizeof(a), "report tests/data/torch_mlp_eager.jsonl --calibration %s --json %s", f,
             j);
    CU_ASSERT_EQUAL(ls(a), 0);
    json_t *r = load_json(j);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    json_t *c = json_object_get(json_object_get(r, "prediction"), "calibration");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(c, "from")), "file");
    CU_ASSERT_EQUAL(json_real_value(json_object_get(c, "node_us")), node);
    CU_ASSERT_EQUAL(json_real_value(json_object_get(c, "launch_us")), launch);
    /* the kept traced reference: the tiny kernels (and the clock probes), read again to the
     * same median */
    gr_trace *tr = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_trace_load(t, 0, &tr, &e), GR_OK);
    gr_summary s1;
    CU_ASSERT_EQUAL(gr_cal_traced_durations(tr, 10, 100, &s1, &e), GR_OK);
    CU_ASSERT(fabs(s1.median - dur) < 1e-6);
    gr_trace_destroy(tr);
    json_decref(r);
    json_decref(doc);
    json_decref(file);
    unlink(f);
    unlink(j);
    unlink(t);
}

static void test_gpu_calibrate_errors(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_EQUAL(ls("calibrate --device 1000"), 2);
    GR_ASSERT_CONTAINS(out, "--device: device 1000 does not exist (this machine has ");
    /* --json -: the document on stdout, the table on stderr */
    CU_ASSERT_EQUAL(ls("calibrate --rounds 3 --json - 2>/dev/null"), 0);
    char *brace = strstr(out, "{\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(brace);
    json_error_t je;
    json_t *j = json_loads(brace, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(j, "raw"), "rounds")), 3);
    CU_ASSERT_PTR_NULL(strstr(out, "[p10, p90] over rounds")); /* the table went to stderr */
    json_decref(j);
}

static CU_TestInfo calibrate_tests[] = {
    {"derivation on made-up figures", test_derive},
    {"derivation: run 5's tiny-kernel figures give the table's row", test_derive_table_row},
    {"the SM clock: a note, no correction", test_derive_clock},
    {"notes: no PDL, sanity check, negative figure, buffer, host-limited", test_derive_notes},
    {"traced reference from a trace", test_traced_durations},
    {"text and calibration file, read back", test_print_and_json},
    {"text and file of a failed sanity check", test_print_and_json_failed},
    {"reader: a file of the spin-chain calibrate", test_reader_old_format},
    {"reader: minimal and optional keys", test_reader_minimal},
    {"reader: every bad document", test_reader_bad},
    {"reader: not a file, huge, empty, a trace", test_reader_files},
    CU_TEST_INFO_NULL};
static CU_TestInfo calibrate_cli_tests[] = {
    {"calibrate without a GPU exits 3", test_cli_no_gpu},
    {"calibrate usage errors", test_cli_usage},
    {"report --calibration on the fixtures", test_cli_report_file},
    {"report --calibration from another GPU", test_cli_report_other_gpu},
    {"report --calibration with a bad file", test_cli_report_bad_file},
    CU_TEST_INFO_NULL};
static CU_TestInfo gpu_calibrate_tests[] = {
    {"calibrate end to end", test_gpu_calibrate},
    {"calibrate errors and --json -", test_gpu_calibrate_errors},
    CU_TEST_INFO_NULL};
static gr_suite_def gr_calibrate_suites[] = {{"calibrate", calibrate_tests, 0},
                                             {"calibrate_cli", calibrate_cli_tests, 0},
                                             {"gpu_calibrate", gpu_calibrate_tests, 1},
                                             {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_calibrate_suites)
