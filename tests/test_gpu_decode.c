/* decode_step GPU suites: the variants against their CPU references (bf16, fp16, fp32; small
 * and odd sizes that exercise every launch geometry; batch sizes including random ones in 1..64,
 * so both the GEMV kernels (B <= 8) and the cuBLAS path), fused against unfused, graph == eager,
 * capture of every variant in global mode (and the other modes for fused), captured kernel counts
 * against the plan, programmatic dependent launch, several steps without re-initialisation (the
 * fused kernels' accumulators must be re-zeroed inside each step), the default size, and the
 * shared-memory carveout setup gives the step's kernels. Without a
 * device each test prints "SKIPPED: no CUDA device" and counts as skipped. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/workload.h"
#include "kernels/decode.h"
#include "kernels/registry.h"
#include "replay/session.h"
#include "replay/verify.h"
#include "tests.h"

static gr_device_info dinfo;

static int device_ready(void) {
    gr_error e;
    gr_error_clear(&e);
    return gr_device_probe(0, &dinfo, &e) == GR_OK;
}

/* The bundled workload resolved for this device with up to 8 --set assignments. */
static gr_plan *decode_plan_dev(const char *variant, const char *const *sets, int nsets) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(gr_test_src("workloads/decode_step.json"), &wl, &e) != GR_OK) {
        fprintf(stderr, "\n    %s", e.msg);
        return NULL;
    }
    for (int i = 0; i < nsets; i++)
        gr_workload_set(wl, sets[i], &e);
    gr_plan *p = NULL;
    gr_target t = gr_target_from_info(&dinfo);
    if (gr_plan_resolve(wl, variant, &t, gr_kernel_find, gr_kernel_all_names, &p, &e) != GR_OK)
        fprintf(stderr, "\n    %s", e.msg);
    gr_workload_destroy(wl);
    return p;
}

static int out_index(const gr_plan *p) {
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].is_output) return b;
    return -1;
}

static void print_failed(const gr_session *s, const char *label) {
    for (int i = 0; i < s->checks.n; i++)
        if (!s->checks.v[i].passed)
            fprintf(stderr, "\n    %s: %s %s: rel %.3e max %.3e nonfinite %lld (rtol %.1e)", label,
                    s->checks.v[i].buffer, s->checks.v[i].what, s->checks.v[i].rel_l2,
                    s->checks.v[i].max_abs, (long long)s->checks.v[i].nonfinite, s->checks.v[i].rtol);
}

/* Reference, eager, capture in `mode`, graph replay; checks at `rtol` (0: the plan's derived
 * tolerances). Returns the session (for its eager outputs and graph) or NULL after printing why. */
static gr_session *run_checked(gr_plan *p, double rtol, int pdl, gr_capture_mode mode, int cpu_ref,
                               const char *label) {
    int ob = out_index(p);
    if (ob < 0) return NULL;
    if (rtol > 0) p->bufs[ob].rtol = rtol;
    gr_error e;
    gr_error_clear(&e);
    gr_session *s = NULL;
    gr_status st = gr_session_create(p, dinfo.sm_count, &s, &e);
    if (st == GR_OK) {
        s->dev->pdl = pdl;
        if (cpu_ref) st = gr_session_reference(s, &e);
    }
    if (st == GR_OK) st = gr_session_verify_eager(s, &e);
    if (st == GR_OK) st = gr_session_capture(s, mode, NULL, &e);
    if (st == GR_OK) st = gr_session_verify_graph(s, &e);
    if (st != GR_OK) {
        fprintf(stderr, "\n    %s: %s", label, e.msg);
        gr_session_destroy(s);
        return NULL;
    }
    if (!s->checks.verified || s->checks.n < (cpu_ref ? 3 : 1)) {
        print_failed(s, label);
        fprintf(stderr, "\n    %s: not verified (%d checks)", label, s->checks.n);
        gr_session_destroy(s);
        return NULL;
    }
    return s;
}

/* Against its own CPU reference: fp32 agrees to ~1e-6 at any depth. In bf16 the reference
 * rounds at the same points, but accumulation order differs (cuBLAS, atomics), and each bf16
 * rounding that lands the other way is carried through every later layer: measured on the
 * H200 at L=16, B=1..4: unfused 2.2e-2, fused 1.1e-2. Shallow sizes stay under 1e-2; the
 * default depth gets the workload's documented 5e-2, and the fp32 run at the default size is
 * the strict check that the fused kernels compute the right function there. */
static double own_rtol_depth(const char *dtype, int L) {
    if (L >= 16) return 0; /* the default depth: x's derived tolerances (docs/verification.md) */
    if (!strcmp(dtype, "fp32")) return 1e-4;
    return L <= 4 ? 1e-2 : 5e-2;
}
static double own_rtol(const char *dtype) {
    return own_rtol_depth(dtype, 1);
}
/* fused vs unfused: different rounding points; ~0.65% x sqrt(L) apart in bf16 (see the
 * workload's outputs doc), fp32 to ~1e-6 */
static double cross_rtol(const char *dtype) {
    return !strcmp(dtype, "fp32") ? 1e-4 : 5e-2;
}

/* Runs unfused, fused and gemv_only at one size and checks each against its reference, graph
 * against eager, fused against unfused, and captured kernel counts. tw_seen[k][t] records the
 * team sizes the fused kernels used (k: 0 gate_up, 1 down). Returns failures. */
static int run_size(const char *dtype, int B, int L, int d, int f, int r, int pdl,
                    int tw_seen[2][9]) {
    char sb[16], sl[16], sd[16], sf[16], sr[16], st[24];
    snprintf(sb, sizeof(sb), "B=%d", B);
    snprintf(sl, sizeof(sl), "L=%d", L);
    snprintf(sd, sizeof(sd), "d=%d", d);
    snprintf(sf, sizeof(sf), "f=%d", f);
    snprintf(sr, sizeof(sr), "r=%d", r);
    snprintf(st, sizeof(st), "dtype=%s", dtype);
    /* the GEMV kernels up to their limit (B = 8), as before gemv_max_b's default moved to 4
     * (run 85): the default's choice is the CPU suite's (test_gemv_max_b) */
    const char *sets[] = {sb, sl, sd, sf, sr, st, "gemv_max_b=8"};
    /* fused: 2 kernels per layer; fused_persistent: the one-kernel decode_step at B <= 8 */
    const char *variants[] = {"unfused", "fused_persistent", "fused", "gemv_only"};
    char label[160];
    void *x_unfused = NULL;
    int fails = 0;
    for (int v = 0; v < 4; v++) {
        snprintf(label, sizeof(label), "%s %s B=%d L=%d d=%d f=%d r=%d%s", variants[v], dtype, B, L,
                 d, f, r, pdl ? " pdl" : "");
        gr_plan *p = decode_plan_dev(variants[v], sets, 7);
        if (!p) {
            fails++;
            continue;
        }
        for (int i = 0; tw_seen && i < p->nops; i++) {
            const gr_op *op = &p->ops[i];
            if (op->kind != GR_OP_KERNEL) continue;
            if (!strcmp(op->kernel->name, "decode_gate_up")) tw_seen[0][op->ip[GR_DEC_TW]] = 1;
            if (!strcmp(op->kernel->name, "decode_down")) tw_seen[1][op->ip[GR_DEC_TW]] = 1;
            if (!strcmp(op->kernel->name, "decode_step")) {
                tw_seen[0][op->ip[GR_DEC_TW]] = 1;
                tw_seen[1][op->ip[GR_DEC_S_TW_DOWN]] = 1;
            }
        }
        gr_session *s = run_checked(p, own_rtol_depth(dtype, L), pdl, GR_CAPTURE_GLOBAL, 1, label);
        if (!s) {
            fails++;
            gr_plan_destroy(p);
            continue;
        }
        /* a fused or gemv_only step at B <= 8 is exactly its kernels; cuBLAS may launch more
         * than one kernel per gemm op, and above B = 8 each fused op is a small kernel or two
         * around cuBLAS (library ops in the plan) */
        size_t nodes = s->graph.kernel_nodes;
        int exact = v != 0 && p->library_ops == 0;
        if (!exact ? nodes < (size_t)p->kernels : nodes != (size_t)p->kernels) {
            fprintf(stderr, "\n    %s: %zu kernel nodes, plan has %d kernels", label, nodes,
                    p->kernels);
            fails++;
        }
        int ob = out_index(p);
        const gr_buffer *xb = &p->bufs[ob];
        if (v == 0) {
            x_unfused = malloc(xb->bytes);
            memcpy(x_unfused, s->eager_out[ob], xb->bytes);
        } else if (v != 3 && x_unfused) {
            gr_check c = L >= 16 ? gr_session_compare(p, ob, "fused vs unfused", s->eager_out[ob],
                                                      x_unfused)
                                 : gr_compare(xb->name, "fused vs unfused", s->eager_out[ob],
                                              x_unfused, xb->dtype, xb->numel, cross_rtol(dtype));
            if (!c.passed) {
                char line[256];
                gr_check_str(&c, line, sizeof(line));
                fprintf(stderr, "\n    %s: vs unfused %s (rtol %.1e)", label, line, c.rtol);
                fails++;
            }
        }
        gr_session_destroy(s);
        gr_plan_destroy(p);
    }
    free(x_unfused);
    return fails;
}

static void test_small_sizes_all_dtypes(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *dts[] = {"bf16", "fp32", "fp16"};
    int Bs[] = {1, 2, 3, 8, 13};
    int fails = 0, runs = 0;
    for (int t = 0; t < 3; t++)
        for (int i = 0; i < 5; i++) {
            fails += run_size(dts[t], Bs[i], 2, 256, 512, 16, 0, NULL);
            runs++;
        }
    /* odd chunk counts (d = 264: 33 chunks of 8 bf16), a rank of 24 (3 LoRA chunks) */
    fails += run_size("bf16", 5, 2, 264, 520, 24, 0, NULL);
    fails += run_size("fp32", 6, 2, 260, 516, 12, 0, NULL);
    CU_ASSERT_EQUAL(fails, 0);
    CU_ASSERT_EQUAL(runs, 15);
}

static void test_random_batch_sizes(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    srand(20261129);
    int fails = 0;
    int Bs[5] = {64, 0, 0, 0, 0};
    for (int i = 1; i < 5; i++)
        Bs[i] = 1 + rand() % 64;
    for (int i = 0; i < 5; i++) {
        fails += run_size("bf16", Bs[i], 2, 256, 512, 16, 0, NULL);
        if (i < 2) fails += run_size("fp32", Bs[i], 2, 256, 512, 16, 0, NULL);
    }
    CU_ASSERT_EQUAL(fails, 0);
}

/* Sizes chosen so that both GEMV kernels run with every team size (1, 2, 4, 8 warps per task)
 * on a 132-SM device; on another device the geometry differs and the coverage is reported. */
/* gemv_stream (the streaming probe: the GEMV kernels over L layers' worth of stacked weights, 2
 * kernels per step) against its CPU reference, graph == eager; at B = 13 through cuBLAS. */
static void test_gemv_stream(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    struct {
        const char *dtype;
        int B;
    } cs[] = {{"bf16", 1}, {"fp32", 4}, {"bf16", 8}, {"bf16", 13}};
    int fails = 0;
    for (size_t i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
        char sd[24], sb[16], label[96];
        snprintf(sd, sizeof(sd), "dtype=%s", cs[i].dtype);
        snprintf(sb, sizeof(sb), "B=%d", cs[i].B);
        const char *sets[] = {sd, sb, "L=3", "d=256", "f=512", "r=16"};
        snprintf(label, sizeof(label), "gemv_stream %s B=%d", cs[i].dtype, cs[i].B);
        gr_plan *p = decode_plan_dev("gemv_stream", sets, 6);
        if (!p) {
            fails++;
            continue;
        }
        CU_ASSERT_EQUAL(p->kernels, 2);
        gr_session *s = run_checked(p, own_rtol(cs[i].dtype), 0, GR_CAPTURE_GLOBAL, 1, label);
        if (!s) {
            fails++;
        } else {
            if (p->library_ops == 0) CU_ASSERT_EQUAL(s->graph.kernel_nodes, 2);
            gr_session_destroy(s);
        }
        gr_plan_destroy(p);
    }
    CU_ASSERT_EQUAL(fails, 0);
}

static void test_every_launch_geometry(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    int tw_seen[2][9];
    memset(tw_seen, 0, sizeof(tw_seen));
    struct {
        int d, f;
    } sz[] = {{256, 512}, {1024, 3072}, {4352, 1536}, {3072, 1024}, {2048, 8192}, {8448, 256}};
    int fails = 0;
    for (size_t i = 0; i < sizeof(sz) / sizeof(sz[0]); i++) {
        fails += run_size("bf16", 1, 1, sz[i].d, sz[i].f, 16, 0, tw_seen);
        fails += run_size("bf16", 3, 1, sz[i].d, sz[i].f, 16, 0, tw_seen);
    }
    CU_ASSERT_EQUAL(fails, 0);
    int covered = 0;
    for (int k = 0; k < 2; k++)
        for (int t = 1; t <= 8; t *= 2)
            covered += tw_seen[k][t];
    if (dinfo.sm_count == 132) {
        CU_ASSERT_EQUAL(covered, 8);
    } else {
        fprintf(stderr, "\n    %d SMs: %d of 8 (kernel, team size) pairs covered", dinfo.sm_count,
                covered);
    }
}

static void test_pdl(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    if (dinfo.cc_major < 9) {
        fprintf(stderr, "\n    cc %d.%d: programmatic dependent launch needs 9.0; not tested",
                dinfo.cc_major, dinfo.cc_minor);
        return;
    }
    int fails = 0;
    fails += run_size("bf16", 1, 3, 256, 512, 16, 1, NULL);
    fails += run_size("bf16", 13, 3, 1024, 3072, 16, 1, NULL);
    fails += run_size("fp32", 4, 3, 512, 1024, 16, 1, NULL);
    CU_ASSERT_EQUAL(fails, 0);
}

/* Both fused variants in every capture mode (the step has no host work, so all three must
 * capture; decode_step is a cooperative launch, one kernel node). */
static void test_capture_modes(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    gr_capture_mode modes[] = {GR_CAPTURE_GLOBAL, GR_CAPTURE_THREAD_LOCAL, GR_CAPTURE_RELAXED};
    const char *sets[] = {"B=2", "L=3", "d=256", "f=512"};
    const char *variants[] = {"fused_persistent", "fused"};
    const size_t nodes[] = {1, 7};
    for (int v = 0; v < 2; v++)
        for (int m = 0; m < 3; m++) {
            gr_plan *p = decode_plan_dev(variants[v], sets, 4);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            gr_session *s = run_checked(p, 1e-2, 0, modes[m], 1, variants[v]);
            CU_ASSERT_PTR_NOT_NULL(s);
            if (s) {
                CU_ASSERT_EQUAL(s->graph.kernel_nodes, nodes[v]);
            }
            gr_session_destroy(s);
            gr_plan_destroy(p);
        }
}

/* Several steps without re-initialising: x carries over and every accumulator (ssq, tin,
 * tdown) must be zeroed again inside each step. Eager steps, graph replays and a 3-step graph
 * against the CPU reference run 3 times. */
static void test_steps_carry_state(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    /* fused_persistent at B = 3 is decode_step: its
     * grid-barrier counter carries over between launches (eager, graph replays, an unrolled
     * graph) and must stay in step; fused the
     * per-layer kernels; B = 13 the cuBLAS path, whose small kernels zero the accumulators */
    const char *dts[] = {"fp32", "bf16", "fp32", "bf16"};
    const char *bs[] = {"B=3", "B=3", "B=13", "B=3"};
    const char *vs[] = {"fused_persistent", "fused_persistent", "fused", "fused"};
    for (int t = 0; t < 4; t++) {
        char st[24];
        snprintf(st, sizeof(st), "dtype=%s", dts[t]);
        const char *sets[] = {bs[t], "L=3", "d=256", "f=512", st};
        gr_plan *p = decode_plan_dev(vs[t], sets, 5);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        int xb = out_index(p);
        const gr_buffer *xbuf = &p->bufs[xb];
        gr_error e;
        gr_error_clear(&e);
        gr_session *s = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_session_create(p, dinfo.sm_count, &s, &e), GR_OK);
        CU_ASSERT_EQUAL_FATAL(gr_session_reference(s, &e), GR_OK); /* one step on the host */
        CU_ASSERT_EQUAL_FATAL(gr_reference_step(p, s->ref, &e), GR_OK);
        CU_ASSERT_EQUAL_FATAL(gr_reference_step(p, s->ref, &e), GR_OK);
        const void *want = s->ref->hptr[xb];
        void *got = malloc(xbuf->bytes);
        double tol = 3 * own_rtol(dts[t]);
        /* eager */
        CU_ASSERT_EQUAL_FATAL(gr_devstate_init_buffers(s->dev, &e), GR_OK);
        for (int k = 0; k < 3; k++)
            CU_ASSERT_EQUAL_FATAL(gr_exec_step(p, s->dev, NULL, &e), GR_OK);
        /* the steps run on non-blocking streams, which a plain cudaMemcpy does not wait for */
        CU_ASSERT_EQUAL_FATAL(cudaDeviceSynchronize(), cudaSuccess);
        CU_ASSERT_EQUAL_FATAL(gr_devstate_download(s->dev, xb, got, &e), GR_OK);
        gr_check c = gr_compare("x", "3 eager steps", got, want, xbuf->dtype, xbuf->numel, tol);
        if (!c.passed)
            fprintf(stderr, "\n    %s %s eager x3: rel %.3e nonfinite %lld", dts[t], bs[t],
                    c.rel_l2, (long long)c.nonfinite);
        CU_ASSERT_TRUE(c.passed);
        /* graph replayed 3 times */
        CU_ASSERT_EQUAL_FATAL(gr_session_capture(s, GR_CAPTURE_GLOBAL, NULL, &e), GR_OK);
        CU_ASSERT_EQUAL_FATAL(gr_devstate_init_buffers(s->dev, &e), GR_OK);
        for (int k = 0; k < 3; k++)
            CU_ASSERT_EQUAL_FATAL(gr_graph_launch(&s->graph, s->dev->streams[0], &e), GR_OK);
        CU_ASSERT_EQUAL_FATAL(cudaDeviceSynchronize(), cudaSuccess);
        CU_ASSERT_EQUAL_FATAL(gr_devstate_download(s->dev, xb, got, &e), GR_OK);
        c = gr_compare("x", "3 graph replays", got, want, xbuf->dtype, xbuf->numel, tol);
        if (!c.passed)
            fprintf(stderr, "\n    %s %s graph x3: rel %.3e nonfinite %lld", dts[t], bs[t],
                    c.rel_l2, (long long)c.nonfinite);
        CU_ASSERT_TRUE(c.passed);
        /* the runtime's own multi-step check (--unroll) */
        CU_ASSERT_EQUAL(gr_session_capture_unrolled(s, GR_CAPTURE_GLOBAL, 3, NULL, &e), GR_OK);
        CU_ASSERT_TRUE(s->checks.verified);
        free(got);
        gr_session_destroy(s);
        gr_plan_destroy(p);
    }
}

/* The default size (L16 d2048 f8192 r16, B = 1 and 4, bf16; B = 1 fp32): every variant against
 * its CPU reference, graph == eager, fused against unfused. */
static void test_default_size(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    int fails = run_size("bf16", 1, 16, 2048, 8192, 16, 0, NULL);
    fails += run_size("bf16", 4, 16, 2048, 8192, 16, 0, NULL);
    fails += run_size("fp32", 1, 16, 2048, 8192, 16, 0, NULL);
    CU_ASSERT_EQUAL(fails, 0);
}

/* The step's kernels all get one shared-memory carveout at setup (GR_DEC_CARVEOUT = 100: run 16
 * measured the driver's per-kernel choice ~0.4 us slower per PDL boundary); the step verifies. */
static void test_carveout(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *sets[] = {"L=2", "d=256", "f=512"};
    gr_plan *p = decode_plan_dev("fused", sets, 3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_session *s = run_checked(p, own_rtol("bf16"), 1, GR_CAPTURE_GLOBAL, 1, "carveout");
    CU_ASSERT_PTR_NOT_NULL(s);
    int checked = 0;
    for (int i = 0; i < p->nops; i++) {
        const gr_op *o = &p->ops[i];
        if (o->kernel->launch != gr_launch_decode_gate_up &&
            o->kernel->launch != gr_launch_decode_down)
            continue;
        int norm = -2, k = gr_decode_gemv_carveout(o, p->bufs[o->inputs[0]].dtype, &norm);
        if (k != GR_DEC_CARVEOUT || norm != GR_DEC_CARVEOUT)
            fprintf(stderr, "\n    %s carveout %d, norm_stats %d", o->name, k, norm);
        CU_ASSERT_EQUAL(k, GR_DEC_CARVEOUT);
        CU_ASSERT_EQUAL(norm, GR_DEC_CARVEOUT);
        checked++;
    }
    CU_ASSERT_EQUAL(checked, 4);
    gr_session_destroy(s);
    gr_plan_destroy(p);
}

/* The fused step's x, downloaded, with a handful of elements put back to their initial value
 * (as if the step had not written them), fails against the CPU reference at x's derived
 * tolerances, and the worst element named is one of them; the untouched x passes (issue #22). */
static void test_corrupted_x_fails(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *dts[] = {"fp32", "bf16"}; /* fp16 at L = 16 is not measured yet */
    for (int t = 0; t < 2; t++) {
        char sd[24];
        snprintf(sd, sizeof(sd), "dtype=%s", dts[t]);
        const char *sets[] = {"L=16", "d=2048", "f=8192", "B=1", sd};
        gr_plan *p = decode_plan_dev("fused", sets, 5);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        gr_session *s = run_checked(p, 0, 0, GR_CAPTURE_GLOBAL, 1, dts[t]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        int ob = out_index(p);
        const gr_buffer *xb = &p->bufs[ob];
        void *init = malloc(xb->bytes), *bad = malloc(xb->bytes);
        CU_ASSERT_PTR_NOT_NULL_FATAL(init);
        CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
        gr_error e;
        gr_error_clear(&e);
        CU_ASSERT_EQUAL(gr_devstate_init_buffers(s->dev, &e), GR_OK);
        CU_ASSERT_EQUAL(gr_devstate_download(s->dev, ob, init, &e), GR_OK);
        memcpy(bad, s->eager_out[ob], xb->bytes);
        const int nbad = 64;
        int64_t stride = xb->numel / nbad;
        for (int k = 0; k < nbad; k++) {
            size_t i = (size_t)(k * stride + 1);
            gr_store(bad, xb->dtype, i, gr_load(init, xb->dtype, i));
        }
        gr_check ok = gr_session_compare(p, ob, "eager vs ref", s->eager_out[ob], s->ref->hptr[ob]);
        gr_check c = gr_session_compare(p, ob, "eager vs ref", bad, s->ref->hptr[ob]);
        char line[256];
        gr_check_str(&c, line, sizeof(line));
        printf("\n    %s: untouched rel %.2e (worst |d| / bound %.2f); %d of %lld unwritten: %s", dts[t],
               ok.rel_l2, ok.worst_ratio, nbad, (long long)xb->numel, line);
        CU_ASSERT_TRUE(ok.passed);
        CU_ASSERT_FALSE(c.passed);
        CU_ASSERT_EQUAL((c.worst_index - 1) % stride, 0);
        free(init);
        free(bad);
        gr_session_destroy(s);
        gr_plan_destroy(p);
    }
}

static CU_TestInfo gpu_decode_tests[] = {
    {"small sizes, bf16 fp32 fp16", test_small_sizes_all_dtypes},
    {"random B in 1..64", test_random_batch_sizes},
    {"every launch geometry", test_every_launch_geometry},
    {"gemv_stream probe", test_gemv_stream},
    {"programmatic dependent launch", test_pdl},
    {"fused in every capture mode", test_capture_modes},
    {"steps carry state", test_steps_carry_state},
    {"default size, fused vs unfused", test_default_size},
    {"one shared-memory carveout for the step's kernels", test_carveout},
    {"corrupted x fails at the derived tolerances", test_corrupted_x_fails},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_gpu_decode_suites[] = {{"gpu_decode", gpu_decode_tests, 1}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_gpu_decode_suites)
