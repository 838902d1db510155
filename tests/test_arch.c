/* Plans per GPU architecture (CPU): every bundled workload resolves, all its variants, for
 * compute capability 8.0, 8.6, 8.9 and 9.0 (the target `graphrun validate --arch` sets), and each
 * kernel family picks its form by the architecture: the wgmma/TMA forms on 9.0 only, the
 * mma.sync and SIMT forms elsewhere. */
#include <stdio.h>
#include <string.h>

#include "core/workload.h"
#include "kernels/registry.h"
#include "replay/load.h"
#include "tests.h"

static const char *const archs[] = {"sm_80", "sm_86", "sm_89", "sm_90"};
static const char *const workloads[] = {"pointwise_fusion", "launch_bound", "decode_step",
                                        "dlrm_small", "capture_breakers"};

static int load(const char *w, const char *arch, const char *const *sets, int nsets, gr_loaded *l,
                gr_error *e) {
    char path[256];
    snprintf(path, sizeof(path), "workloads/%s.json", w);
    gr_target t = gr_target_default();
    gr_error_clear(e);
    if (gr_target_set_arch(&t, arch, e) != GR_OK) return 0;
    gr_load_req req = {gr_test_src(path), NULL, sets, nsets, NULL, 0, NULL, 0};
    return gr_load_resolve(&req, &t, l, e) == GR_OK;
}

static void test_every_workload_every_arch(void) {
    for (size_t a = 0; a < sizeof(archs) / sizeof(archs[0]); a++)
        for (size_t w = 0; w < sizeof(workloads) / sizeof(workloads[0]); w++) {
            gr_loaded l;
            gr_error e;
            int ok = load(workloads[w], archs[a], NULL, 0, &l, &e);
            if (!ok) fprintf(stderr, "\n    %s on %s: %s", workloads[w], archs[a], e.msg);
            CU_ASSERT_TRUE(ok);
            if (ok) CU_ASSERT_EQUAL(l.nplans, l.wl->nvariants);
            for (int i = 0; ok && i < l.nplans; i++) {
                int cc = l.plans[i]->target.cc_major * 10 + l.plans[i]->target.cc_minor;
                CU_ASSERT_EQUAL(cc, archs[a][3] == '9' ? 90 : 80 + (archs[a][4] - '0'));
            }
            gr_loaded_free(&l);
        }
}

/* forms: does any op of `variant` have a form starting with `prefix`? */
static int has_form(const gr_loaded *l, const char *variant, const char *prefix) {
    for (int i = 0; i < l->nplans; i++) {
        if (strcmp(l->plans[i]->variant, variant)) continue;
        for (int k = 0; k < l->plans[i]->nops; k++)
            if (!strncmp(l->plans[i]->ops[k].form, prefix, strlen(prefix))) return 1;
    }
    return 0;
}

static void test_forms_by_arch(void) {
    const char *sets[] = {"B=2048"};
    for (size_t a = 0; a < sizeof(archs) / sizeof(archs[0]); a++) {
        gr_loaded l;
        gr_error e;
        CU_ASSERT_FATAL(load("dlrm_small", archs[a], sets, 1, &l, &e));
        int h = !strcmp(archs[a], "sm_90");
        /* 3xTF32 GEMMs: the wgmma kernel (sm_90a code) on 9.0, the mma.sync one elsewhere */
        CU_ASSERT_EQUAL(has_form(&l, "fused_tf32x3", "wg "), h);
        CU_ASSERT_EQUAL(has_form(&l, "fused_tf32x3", "tc "), !h);
        /* the fp32 path is the same everywhere */
        CU_ASSERT_TRUE(has_form(&l, "fused", "tiled "));
        gr_loaded_free(&l);
    }
    /* an architecture graphrun does not know is refused by name */
    gr_target t = gr_target_default();
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_NOT_EQUAL(gr_target_set_arch(&t, "sm_5x", &e), GR_OK);
}

static CU_TestInfo arch_tests[] = {
    {"every bundled workload resolves for cc 8.0, 8.6, 8.9, 9.0", test_every_workload_every_arch},
    {"kernel forms follow the architecture", test_forms_by_arch},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_arch_suites[] = {{"arch", arch_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_arch_suites)
