/* GPU suite for capture checking: the full matrix (every capture_breakers pattern in every
 * capture mode) checked in-process against tests/capcheck_expect.h, with every finding printed
 * so that a failure is diagnosable from the log; zero findings on the clean workloads
 * (pointwise_fusion, launch_bound, decode_step, dlrm_small, capture_breakers' clean variant) and
 * every kernel launch's stream resolved; `graphrun run`'s piecewise runs verified and timed,
 * the fixed plans' full graphs, --piecewise and --no-piecewise, the recording option; timing
 * after a checked capture as fast as without; cupti-launchstat --capture-check around graphrun.
 * With GR_CAPCHECK_FIXTURES=DIR the matrix writes its recordings there as
 * capcheck_PATTERN_MODE.jsonl (the CPU suite capcheck_io checks tests/data's). Without a device
 * every test is skipped (gr_tests exits 77). */
#include <cuda_runtime_api.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/piecewise.h"
#include "core/device.h"
#include "core/workload.h"
#include "cupti_tools/capcheck.h"
#include "cupti_tools/capclass.h"
#include "kernels/registry.h"
#include "replay/run.h"
#include "replay/session.h"
#include "capcheck_expect.h"
#include "tests.h"

static gr_device_info info;

static int device_ready(void) {
    gr_error e;
    gr_error_clear(&e);
    return gr_device_probe(0, &info, &e) == GR_OK;
}

static gr_workload *load_wl(const char *file, const char *const *sets, int nsets) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(gr_test_src(file), &wl, &e) != GR_OK) {
        fprintf(stderr, "\n    %s", e.msg);
        return NULL;
    }
    for (int i = 0; i < nsets; i++)
        if (gr_workload_set(wl, sets[i], &e) != GR_OK) fprintf(stderr, "\n    %s", e.msg);
    return wl;
}

static gr_plan *plan_of(const gr_workload *wl, const char *variant) {
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = NULL;
    gr_target t = gr_target_from_info(&info);
    if (gr_plan_resolve(wl, variant, &t, gr_kernel_find, gr_kernel_all_names, &p, &e) != GR_OK)
        fprintf(stderr, "\n    %s", e.msg);
    return p;
}

static void print_result(const char *label, const gr_checked_capture *cc) {
    printf("\n    %s: capture %s%s%s; %zu calls recorded, %zu finding%s", label,
           cc->capture_status == GR_OK ? "ok" : "failed", cc->capture_status == GR_OK ? "" : ": ",
           cc->capture_status == GR_OK ? "" : cc->capture_error, cc->events.n, cc->result.total,
           cc->result.total == 1 ? "" : "s");
    char line[1400];
    for (size_t i = 0; i < cc->result.n; i++) {
        gr_finding_str(&cc->result.f[i], line, sizeof(line));
        printf("\n      [%s] %s", gr_find_sev_name(cc->result.f[i].sev), line);
    }
}

/* The device must stay usable after every capture, failed or not. */
static void require_healthy(const char *label) {
    cudaError_t rc = cudaDeviceSynchronize();
    cudaError_t last = cudaGetLastError();
    if (rc != cudaSuccess || last != cudaSuccess)
        fprintf(stderr, "\n    %s: the device is not usable after the capture: %s / %s", label,
                cudaGetErrorName(rc), cudaGetErrorName(last));
    CU_ASSERT_EQUAL_FATAL(rc, cudaSuccess);
}

/* One checked full capture of plan p in `mode`; then one eager step, verified (no stream was
 * left capturing). Fills cc (the caller frees it). */
/* warm: run one eager step before the checked capture, as graphrun run does. Without it, CUDA's
 * lazy module loading (cuLibraryLoadData) and cuBLAS's first-use set-up happen inside the
 * capture, which the checker rightly reports as hazards (seen on the H200 for the clean
 * workloads when this test captured cold). */
static int check_plan_warm(const gr_plan *p, int mode, const char *label, gr_checked_capture *cc,
                           int warm) {
    gr_error e;
    gr_error_clear(&e);
    gr_session *s = NULL;
    memset(cc, 0, sizeof(*cc));
    if (gr_session_create(p, info.sm_count, &s, &e) != GR_OK) {
        fprintf(stderr, "\n    %s: %s", label, e.msg);
        return 0;
    }
    int ok = gr_session_reference(s, &e) == GR_OK;
    if (ok && warm) {
        ok = gr_session_verify_eager(s, &e) == GR_OK && s->checks.verified;
        if (!ok) fprintf(stderr, "\n    %s: the warm-up eager step failed: %s", label, e.msg);
    }
    int avail = 0;
    char why[512] = "";
    if (ok) ok = gr_capture_checker_open(&avail, why, sizeof(why), &e) == GR_OK && avail;
    if (!avail) fprintf(stderr, "\n    %s: the capture checker cannot run: %s", label, why);
    gr_graph g;
    memset(&g, 0, sizeof(g));
    if (ok)
        ok = gr_capture_checked(p, s->dev, 0, p->nops, (gr_capture_mode)mode, NULL, &g, cc, &e) ==
             GR_OK;
    if (gr_capture_checker_close(&e) != GR_OK) ok = 0;
    gr_graph_destroy(&g);
    if (!ok) fprintf(stderr, "\n    %s: %s", label, e.msg);
    require_healthy(label);
    if (ok) {
        gr_status st = gr_session_verify_eager(s, &e);
        if (st != GR_OK || !s->checks.verified)
            fprintf(stderr, "\n    %s: the eager step after the capture failed: %s", label,
                    st != GR_OK ? e.msg : "outputs differ");
        CU_ASSERT_EQUAL(st, GR_OK);
        CU_ASSERT_TRUE(s->checks.verified);
    }
    gr_session_destroy(s);
    require_healthy(label);
    return ok;
}

static int check_plan(const gr_plan *p, int mode, const char *label, gr_checked_capture *cc) {
    return check_plan_warm(p, mode, label, cc, 0);
}

static void test_matrix(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *sets[] = {"K=2", "n=256"};
    gr_workload *wl = load_wl("workloads/capture_breakers.json", sets, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wl);
    const char *fixtures = getenv("GR_CAPCHECK_FIXTURES");
    int failures = 0;
    for (int pi = 0; pi < GR_CC_NPATTERNS; pi++) {
        gr_plan *p = plan_of(wl, gr_cc_patterns[pi]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        for (int mode = 0; mode < 3; mode++) {
            char label[96];
            snprintf(label, sizeof(label), "%s, %s mode", gr_cc_patterns[pi],
                     gr_capture_mode_str(mode));
            gr_checked_capture cc;
            int ok = check_plan(p, mode, label, &cc);
            CU_ASSERT_TRUE(ok);
            if (!ok) {
                gr_checked_capture_free(&cc);
                failures++;
                continue;
            }
            print_result(label, &cc);
            const gr_cc_expect *x = gr_cc_expect_for(gr_cc_patterns[pi], mode);
            char why[256] = "no expectation";
            int match = x && gr_cc_expect_check(x, &cc.result, cc.capture_status != GR_OK, why,
                                                sizeof(why));
            if (!match) {
                printf("\n      MISMATCH: %s", why);
                fprintf(stderr, "\n    %s: %s", label, why);
                failures++;
            }
            CU_ASSERT_TRUE(match);
            CU_ASSERT_EQUAL(cc.result.dropped, 0);
            if (fixtures) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/capcheck_%s_%s.jsonl", fixtures,
                         gr_cc_patterns[pi], gr_capture_mode_str(mode));
                snprintf(
                    cc.events.hdr.note, sizeof(cc.events.hdr.note),
                    "workload capture_breakers variant %s params %s capture mode %s (gpu_capcheck)",
                    gr_cc_patterns[pi], p->params, gr_capture_mode_str(mode));
                snprintf(cc.events.hdr.command, sizeof(cc.events.hdr.command),
                         "gr_tests --suite gpu_capcheck");
                gr_error e;
                gr_error_clear(&e);
                if (gr_capev_save(path, &cc.events, &e) != GR_OK)
                    fprintf(stderr, "\n    %s", e.msg);
            }
            gr_checked_capture_free(&cc);
        }
        gr_plan_destroy(p);
    }
    printf("\n    matrix: %d of %d cells differ from tests/capcheck_expect.h", failures,
           GR_CC_NPATTERNS * 3);
    gr_workload_destroy(wl);
}

/* Every launch and copy of a clean capture is on a capturing stream: the recorder resolved each
 * launch's stream (CUDA 13's <<<>>> goes through __cudaLaunchKernel). */
static void check_streams(const char *label, const gr_checked_capture *cc) {
    int bad = 0;
    for (size_t i = 0; i < cc->events.n; i++) {
        const gr_capev *e = &cc->events.v[i];
        gr_capapi k = gr_capapi_kind(e->api);
        if (!gr_capapi_is_work(k) && k != GR_CA_EVENT_RECORD) continue;
        if (e->cap != GR_CS_MEMBER || e->stream_kind != GR_SK_HANDLE) {
            if (bad++ < 3)
                printf("\n      %s: %s (cbid %u) stream %s 0x%llx seen as %s", label, e->api,
                       e->cbid, gr_stream_kind_name(e->stream_kind), (unsigned long long)e->stream,
                       gr_capstat_name(e->cap));
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
}

static void clean_workload(const char *file, const char *const *sets, int nsets, int modes) {
    gr_workload *wl = load_wl(file, sets, nsets);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wl);
    for (int v = 0; v < wl->nvariants; v++) {
        gr_plan *p = plan_of(wl, wl->variants[v]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        for (int mode = 0; mode < modes; mode++) {
            char label[160];
            snprintf(label, sizeof(label), "%s %s, %s mode", wl->name, p->variant,
                     gr_capture_mode_str(mode));
            gr_checked_capture cc;
            CU_ASSERT_TRUE(check_plan_warm(p, mode, label, &cc, 1));
            print_result(label, &cc);
            if (cc.result.total || cc.capture_status != GR_OK)
                fprintf(stderr, "\n    %s: expected a clean capture", label);
            CU_ASSERT_EQUAL(cc.result.total, 0);
            CU_ASSERT_EQUAL(cc.capture_status, GR_OK);
            CU_ASSERT_EQUAL(cc.result.captures_ok, 1);
            CU_ASSERT_TRUE(cc.events.n > 2);
            check_streams(label, &cc);
            gr_checked_capture_free(&cc);
        }
        gr_plan_destroy(p);
    }
    gr_workload_destroy(wl);
}

static void test_clean_workloads(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    const char *pw[] = {"n=4096"};
    clean_workload("workloads/pointwise_fusion.json", pw, 1, 3);
    const char *lb[] = {"K=64"};
    clean_workload("workloads/launch_bound.json", lb, 1, 3);
    const char *ds[] = {"L=2", "d=256"};
    clean_workload("workloads/decode_step.json", ds, 2, 1);
    const char *dl[] = {"B=64", "rows_cap=4096"};
    clean_workload("workloads/dlrm_small.json", dl, 2, 1);
    /* capture_breakers' clean variant: the clean counterparts, cuBLAS included */
    gr_workload *wl =
        load_wl("workloads/capture_breakers.json", (const char *[]){"K=2", "n=256"}, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wl);
    gr_plan *p = plan_of(wl, "clean");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (int mode = 0; mode < 3; mode++) {
        char label[64];
        snprintf(label, sizeof(label), "capture_breakers clean, %s mode",
                 gr_capture_mode_str(mode));
        gr_checked_capture cc;
        CU_ASSERT_TRUE(check_plan(p, mode, label, &cc));
        print_result(label, &cc);
        char why[256];
        int ok = gr_cc_expect_check(gr_cc_expect_for("clean", mode), &cc.result,
                                    cc.capture_status != GR_OK, why, sizeof(why));
        if (!ok) fprintf(stderr, "\n    %s: %s", label, why);
        CU_ASSERT_TRUE(ok);
        check_streams(label, &cc);
        gr_checked_capture_free(&cc);
    }
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
}

static gr_run_report *run_variants(gr_workload *wl, const char *const *variants, int n, int mode,
                                   int piecewise, const char *record, gr_status *st,
                                   gr_plan **plans) {
    gr_run_opts o;
    gr_run_opts_default(&o);
    o.iters = 20;
    o.batches = 2;
    o.bandwidth = 0;
    o.progress = 0;
    o.mode = (gr_capture_mode)mode;
    o.piecewise = piecewise;
    o.capture_record = record;
    for (int i = 0; i < n; i++) {
        plans[i] = plan_of(wl, variants[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(plans[i]);
    }
    gr_run_report *r = gr_run_report_create(wl, &info, &o);
    gr_error e;
    gr_error_clear(&e);
    *st = gr_run_plans((const gr_plan *const *)plans, n, r, &e);
    printf("\n");
    gr_report_text(stdout, r);
    if (*st != GR_OK) printf("\n    run status %s: %s", gr_status_name(*st), e.msg);
    fflush(stdout);
    return r;
}

/* `graphrun run` on every variant (global mode): clean ones as full graphs, the others
 * piecewise, verified, timed, and their fixed plans' full graphs verified and timed. */
static void test_run_piecewise(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    gr_workload *wl =
        load_wl("workloads/capture_breakers.json", (const char *[]){"K=4", "n=1024"}, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wl);
    const char *variants[32] = {0};
    int n = 0;
    for (int v = 0; v < wl->nvariants && n < 32; v++)
        variants[n++] = wl->variants[v];
    gr_plan *plans[32];
    gr_status st;
    gr_run_report *r =
        run_variants(wl, variants, n, GR_CAPTURE_GLOBAL, GR_PW_AUTO, NULL, &st, plans);
    CU_ASSERT_EQUAL(st, GR_OK);
    for (int i = 0; i < r->nv; i++) {
        const gr_variant_run *v = &r->v[i];
        const gr_capcheck_variant *cv = &v->cc;
        const char *name = v->plan->variant;
        if (v->status != GR_OK) fprintf(stderr, "\n    %s: %s", name, v->error);
        CU_ASSERT_EQUAL(v->status, GR_OK);
        CU_ASSERT_TRUE(cv->checked);
        CU_ASSERT_TRUE(v->checks.verified);
        if (!strcmp(name, "clean")) {
            CU_ASSERT_EQUAL(cv->full.total, 0);
            CU_ASSERT_FALSE(cv->piecewise);
            CU_ASSERT_TRUE(v->captured && v->timed);
            continue;
        }
        const gr_cc_expect *x = gr_cc_expect_for(name, 0);
        if (!x && strcmp(name, "all"))
            fprintf(stderr, "\n    %s: no expectation in capcheck_expect.h", name);
        CU_ASSERT_TRUE(x || !strcmp(name, "all"));
        int blocks = x ? x->blocks : 1; /* "all" holds every breaker */
        CU_ASSERT_EQUAL(cv->full_blocked, blocks);
        if (!blocks) {
            CU_ASSERT_FALSE(cv->piecewise);
            CU_ASSERT_TRUE(v->captured && v->timed);
            continue;
        }
        if (!cv->piecewise || !cv->pw_verified || !cv->pw_timed || !cv->fixed_verified ||
            !cv->fixed_timed)
            fprintf(stderr,
                    "\n    %s: piecewise %d verified %d timed %d; fixed %d verified %d timed %d %s",
                    name, cv->piecewise, cv->pw_verified, cv->pw_timed, cv->fixed,
                    cv->fixed_verified, cv->fixed_timed, cv->fixed_error);
        CU_ASSERT_TRUE(cv->piecewise);
        CU_ASSERT_TRUE(cv->pw_verified);
        CU_ASSERT_TRUE(cv->pw_timed);
        CU_ASSERT_TRUE(cv->pw_graphs >= 1);
        CU_ASSERT_TRUE(cv->eager.step_us.median > 0 && cv->pw_t.step_us.median > 0);
        CU_ASSERT_TRUE(cv->fixed && cv->fixed_verified && cv->fixed_timed);
        CU_ASSERT_EQUAL(cv->fixed_blocking, 0);
        CU_ASSERT_FALSE(v->timed); /* the main timing table is for full graphs */
        if (!strcmp(name, "all")) {
            printf("\n    all: %s", cv->pw_desc);
            CU_ASSERT_TRUE(cv->pw_eager_ops >= 12);
            CU_ASSERT_TRUE(cv->pw_captures >= 2);
        } else {
            CU_ASSERT_EQUAL(cv->pw_eager_ops, 1);
            CU_ASSERT_EQUAL(cv->pw_graphs, 2);
        }
    }
    gr_run_report_destroy(r);
    for (int i = 0; i < n; i++)
        gr_plan_destroy(plans[i]);
    gr_workload_destroy(wl);
}

/* relaxed mode lets the allocation through: a usable full graph with a hazard; --piecewise
 * runs the hazard eagerly anyway; --no-piecewise fails a broken capture naming the culprit;
 * --capture-check-record writes the recording */
static void test_run_options(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    gr_workload *wl =
        load_wl("workloads/capture_breakers.json", (const char *[]){"K=2", "n=256"}, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wl);
    gr_plan *plans[1];
    gr_status st;
    const char *alloc[] = {"alloc"};
    gr_run_report *r = run_variants(wl, alloc, 1, GR_CAPTURE_RELAXED, GR_PW_AUTO,
                                    "/tmp/gr_gpu_capcheck_rec.jsonl", &st, plans);
    CU_ASSERT_EQUAL(st, GR_OK);
    const gr_capcheck_variant *cv = &r->v[0].cc;
    CU_ASSERT_TRUE(cv->checked);
    CU_ASSERT_TRUE(cv->full.hazards >= 1);
    CU_ASSERT_FALSE(cv->full_blocked);
    CU_ASSERT_FALSE(cv->piecewise);
    CU_ASSERT_TRUE(r->v[0].captured && r->v[0].timed && r->v[0].checks.verified);
    CU_ASSERT_STRING_EQUAL(cv->recorded, "/tmp/gr_gpu_capcheck_rec.jsonl");
    gr_capev_list l;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_capev_load("/tmp/gr_gpu_capcheck_rec.jsonl", &l, &e), GR_OK);
    gr_capcheck_result res;
    CU_ASSERT_EQUAL(gr_capcheck_classify(l.v, l.n, &res, &e), GR_OK);
    CU_ASSERT_EQUAL(res.total, cv->full.total);
    GR_ASSERT_CONTAINS(l.hdr.note, "variant alloc");
    gr_capcheck_result_free(&res);
    gr_capev_list_free(&l);
    unlink("/tmp/gr_gpu_capcheck_rec.jsonl");
    gr_run_report_destroy(r);
    gr_plan_destroy(plans[0]);

    r = run_variants(wl, alloc, 1, GR_CAPTURE_RELAXED, GR_PW_ON, NULL, &st, plans);
    CU_ASSERT_EQUAL(st, GR_OK);
    cv = &r->v[0].cc;
    CU_ASSERT_TRUE(cv->piecewise && cv->pw_verified && cv->pw_timed);
    CU_ASSERT_EQUAL(cv->pw_eager_ops, 1);
    gr_run_report_destroy(r);
    gr_plan_destroy(plans[0]);

    const char *sync[] = {"stream_sync"};
    r = run_variants(wl, sync, 1, GR_CAPTURE_GLOBAL, GR_PW_OFF, NULL, &st, plans);
    CU_ASSERT_EQUAL(st, GR_ERR_CAPTURE);
    GR_ASSERT_CONTAINS(r->v[0].error, "op 2 \"stream_sync\": cudaStreamSynchronize");
    GR_ASSERT_CONTAINS(r->v[0].error,
                       "(--no-piecewise; without it graphrun captures the other ops piecewise");
    CU_ASSERT_TRUE(r->v[0].cc.full_failed);
    gr_run_report_destroy(r);
    gr_plan_destroy(plans[0]);
    gr_workload_destroy(wl);
}

/* A checked capture detaches CUPTI afterwards: eager and graph timing as without the checker. */
static void test_timing_untouched(void) {
    GR_REQUIRE_GPU();
    CU_ASSERT_TRUE_FATAL(device_ready());
    gr_workload *wl = load_wl("workloads/launch_bound.json", (const char *[]){"K=200"}, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wl);
    double eager[2], graph[2];
    for (int k = 0; k < 2; k++) {
        gr_plan *p = plan_of(wl, "tiny");
        gr_run_opts o;
        gr_run_opts_default(&o);
        o.iters = 500;
        o.batches = 5;
        o.bandwidth = 0;
        o.progress = 0;
        o.no_capture_check = k == 0;
        gr_run_report *r = gr_run_report_create(wl, &info, &o);
        gr_error e;
        gr_error_clear(&e);
        const gr_plan *ps[1] = {p};
        CU_ASSERT_EQUAL_FATAL(gr_run_plans(ps, 1, r, &e), GR_OK);
        CU_ASSERT_EQUAL(r->v[0].cc.checked, k == 1);
        eager[k] = r->v[0].eager.step_us.median;
        graph[k] = r->v[0].graph_t.step_us.median;
        gr_run_report_destroy(r);
        gr_plan_destroy(p);
    }
    printf("\n    launch_bound K=200 us/step: eager %.2f unchecked vs %.2f checked; graph %.2f vs "
           "%.2f",
           eager[0], eager[1], graph[0], graph[1]);
    CU_ASSERT_TRUE(eager[1] < 1.5 * eager[0] + 5);
    CU_ASSERT_TRUE(graph[1] < 1.5 * graph[0] + 5);
    gr_workload_destroy(wl);
}

static const char *bin(const char *name) {
    return gr_test_bin(name);
}

static char out[1 << 20];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
    char cmd[8192], full[8400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    snprintf(full, sizeof(full), "cd '%s' && %s 2>&1", GR_SOURCE_DIR, cmd);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The injected checker around graphrun (whose own checker then cannot subscribe: it says so and
 * captures unchecked). */
static void test_launchstat_around_graphrun(void) {
    GR_REQUIRE_GPU();
    const char *args =
        "--set K=2 --set n=256 --iters 5 --warmup 1 --batches 1 --no-bandwidth --quiet";
    int rc = sh("'%s' --capture-check -o /tmp/gr_gpu_capcheck_ls.jsonl -- '%s' run "
                "workloads/capture_breakers.json "
                "--variant item %s",
                bin("cupti-launchstat"), bin("graphrun"), args);
    printf("\n%s", out);
    CU_ASSERT_EQUAL(rc,
                    1); /* graphrun's own exit code: the capture failed, unchecked, no piecewise */
    GR_ASSERT_CONTAINS(out, "capture not checked");
    GR_ASSERT_CONTAINS(out, "cudaStreamSynchronize on stream 0x");
    GR_ASSERT_CONTAINS(out, "returned cudaErrorStreamCaptureUnsupported during a global-mode "
                            "capture: breaks the capture "
                            "(a device value read back to the host during capture");
    /* graphrun alone: the verdict on stderr, the report's sections, exit 0 (piecewise verified) */
    rc = sh("'%s' run workloads/capture_breakers.json --variant item %s", bin("graphrun"), args);
    printf("\n%s", out);
    CU_ASSERT_EQUAL(rc, 0);
    GR_ASSERT_CONTAINS(
        out,
        "graphrun: variant item: the full graph cannot be used (1 blocking finding; first: op 2 "
        "\"item\": cudaStreamSynchronize on stream 0x");
    GR_ASSERT_CONTAINS(out, "; ran piecewise, verified");
    GR_ASSERT_CONTAINS(out, "capture check (CUPTI callbacks on every runtime and driver API call");
    GR_ASSERT_CONTAINS(out, "piecewise capture (capturable segments replayed as graphs");
    GR_ASSERT_CONTAINS(out,
                       "item             not captured as one graph: captured piecewise (below)");
    GR_ASSERT_CONTAINS(out, "piecewise vs ref");
    rc = sh("'%s' --capture-check -o /tmp/gr_gpu_capcheck_ls.jsonl -- '%s' run "
            "workloads/capture_breakers.json "
            "--variant clean %s",
            bin("cupti-launchstat"), bin("graphrun"), args);
    printf("\n%s", out);
    CU_ASSERT_EQUAL(rc, 0);
    GR_ASSERT_CONTAINS(
        out,
        "0 findings: 0 errors, 0 consequences, 0 escapes, 0 hazards (1 capture: 1 ended, 0 failed");
    rc = sh("'%s' --capture-check -o /tmp/gr_gpu_capcheck_ls.jsonl -- '%s' run "
            "workloads/capture_breakers.json "
            "--variant legacy_copy %s",
            bin("cupti-launchstat"), bin("graphrun"), args);
    printf("\n%s", out);
    GR_ASSERT_CONTAINS(
        out, "cudaMemcpyAsync on the legacy default stream succeeded during a global-mode capture: "
             "escapes the capture");
    unlink("/tmp/gr_gpu_capcheck_ls.jsonl");
}

static CU_TestInfo gpu_capcheck_tests[] = {
    {"every pattern in every capture mode", test_matrix},
    {"zero findings on the clean workloads", test_clean_workloads},
    {"graphrun run: piecewise, verified and timed; fixed plans", test_run_piecewise},
    {"relaxed hazards, --piecewise, --no-piecewise, recording", test_run_options},
    {"timing after a checked capture", test_timing_untouched},
    {"cupti-launchstat --capture-check around graphrun", test_launchstat_around_graphrun},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_gpu_capcheck_suites[] = {{"gpu_capcheck", gpu_capcheck_tests, 1},
                                                {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_gpu_capcheck_suites)
