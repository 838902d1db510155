/* Test runner: registers every suite, runs all or the one named with --suite NAME (CTest runs
 * one suite per test), and with --test TEXT only the tests whose name contains TEXT (to rerun a
 * few GPU tests in a short device call). A test that cannot run here (no CUDA device, too few
 * devices, no browser) records a skip; the run then exits GR_TEST_SKIP_EXIT, never 0. */
#include <CUnit/Basic.h>
#include <cuda_runtime_api.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/registry.h"
#include "tests.h"

static int have_gpu = -1;

#define MAX_SUITE_FILES 64
static gr_suite_def *registered[MAX_SUITE_FILES];
static int nregistered;

void gr_register_suites(gr_suite_def *defs) {
    if (nregistered < MAX_SUITE_FILES) registered[nregistered++] = defs;
}

int gr_test_have_gpu(void) {
    if (have_gpu < 0) {
        int n = 0;
        have_gpu = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
        if (!have_gpu) cudaGetLastError();
    }
    return have_gpu;
}

/* The tests that recorded a skip, each once (a test may skip from a helper it calls twice). */
static CU_pTest *skipped;
static unsigned nskipped, skipped_cap;

void gr_test_skip(const char *test, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("\n  SKIPPED: ");
    vprintf(fmt, ap);
    printf(" (%s)", test);
    va_end(ap);
    CU_pTest t = CU_get_current_test();
    if (!t) return;
    for (unsigned i = 0; i < nskipped; i++)
        if (skipped[i] == t) return;
    if (nskipped == skipped_cap) {
        unsigned cap = skipped_cap ? 2 * skipped_cap : 16;
        CU_pTest *grown = realloc(skipped, cap * sizeof(*grown));
        if (!grown) {
            fprintf(stderr, "gr_tests: out of memory recording a skip\n");
            exit(1);
        }
        skipped = grown;
        skipped_cap = cap;
    }
    skipped[nskipped++] = t;
}

int gr_test_skip_without_gpu(const char *test) {
    if (gr_test_have_gpu()) return 0;
    gr_test_skip(test, "no CUDA device");
    return 1;
}

gr_workload *gr_test_load(const char *json, gr_error *err) {
    gr_workload *wl = NULL;
    gr_workload_load_string(json, strlen(json), "test.json", &wl, err);
    return wl;
}

gr_plan *gr_test_plan(const char *json, const char *variant, gr_error *err) {
    gr_workload *wl = gr_test_load(json, err);
    if (!wl) return NULL;
    const char *v = gr_workload_variant(wl, variant, err);
    gr_plan *p = NULL;
    if (v) {
        gr_target t = gr_target_default();
        gr_plan_resolve(wl, v, &t, gr_kernel_find, gr_kernel_all_names, &p, err);
    }
    gr_workload_destroy(wl);
    return p;
}

const char *gr_test_plan_error(const char *json, const char *variant) {
    static char msg[GR_ERROR_MSG_MAX];
    gr_error err;
    gr_error_clear(&err);
    gr_plan *p = gr_test_plan(json, variant, &err);
    if (p) {
        gr_plan_destroy(p);
        snprintf(msg, sizeof(msg), "(no error)");
    } else {
        snprintf(msg, sizeof(msg), "%s", err.msg);
    }
    return msg;
}

const char *gr_test_src(const char *rel) {
    static char paths[8][1024];
    static int slot;
    char *p = paths[slot++ % 8];
    snprintf(p, 1024, "%s/%s", GR_SOURCE_DIR, rel);
    return p;
}

const char *gr_test_bin(const char *name) {
    static char paths[8][PATH_MAX];
    static int slot;
    char *p = paths[slot++ % 8];
    const char *dir = getenv("GR_BUILD_DIR");
    if (dir) {
        snprintf(p, PATH_MAX, "%s/%s", dir, name);
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        self[n > 0 ? n : 0] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) *slash = '\0';
        snprintf(p, PATH_MAX, "%s/../%s", self, name);
    }
    return p;
}

int gr_test_popen(const char *dir, const char *cmd, char *out, size_t size) {
    size_t len = strlen(cmd) + PATH_MAX + 32;
    char *full = malloc(len);
    if (!full) return -1;
    snprintf(full, len, "cd '%s' && ( %s ) 2>&1", dir ? dir : GR_SOURCE_DIR, cmd);
    FILE *p = popen(full, "r");
    free(full);
    if (!p) return -1;
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int gr_test_graphrun(const char *args, char *out, size_t size) {
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "'%s' %s", gr_test_bin("graphrun"), args);
    return gr_test_popen(NULL, cmd, out, size);
}

const char *gr_test_tmpfile(const char *suffix, const void *data, size_t len) {
    static char paths[8][256];
    static int slot;
    char *p = paths[slot++ % 8];
    snprintf(p, 256, "/tmp/gr_test_%d_%d%s", (int)getpid(), slot, suffix);
    FILE *f = fopen(p, "wb");
    if (!f) return NULL;
    fwrite(data, 1, len, f);
    fclose(f);
    return p;
}

static int gpu_suite_init(void) {
    if (!gr_test_have_gpu())
        printf("\nno CUDA device: the tests of this suite that need one are skipped\n");
    return 0;
}

/* A skipped test that also failed an assertion counts as failed, not skipped. */
static int test_failed(CU_pTest t) {
    for (CU_pFailureRecord f = CU_get_failure_list(); f; f = f->pNext)
        if (f->pTest == t) return 1;
    return 0;
}

static void add_suites(gr_suite_def *defs, const char *only, const char *test, int *added) {
    for (gr_suite_def *d = defs; d->name; d++) {
        if (only && strcmp(only, d->name) != 0) continue;
        CU_pSuite s = NULL;
        for (CU_TestInfo *t = d->tests; t->pName; t++) {
            if (test && !strstr(t->pName, test)) continue;
            if (!s) s = CU_add_suite(d->name, d->needs_gpu ? gpu_suite_init : NULL, NULL);
            CU_add_test(s, t->pName, t->pTestFunc);
            (*added)++;
        }
    }
}

int main(int argc, char **argv) {
    const char *only = NULL, *test = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--suite") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--test") && i + 1 < argc)
            test = argv[++i];
        else if (!strcmp(argv[i], "--list"))
            only = "--list";
        else {
            fprintf(stderr, "usage: gr_tests [--suite NAME] [--test TEXT] [--list]\n");
            return 2;
        }
    }
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    if (only && !strcmp(only, "--list")) {
        for (int i = 0; i < nregistered; i++)
            for (gr_suite_def *d = registered[i]; d->name; d++) printf("%s\n", d->name);
        CU_cleanup_registry();
        return 0;
    }
    int added = 0;
    for (int i = 0; i < nregistered; i++)
        add_suites(registered[i], only, test, &added);
    if (added == 0) {
        if (test)
            fprintf(stderr,
                    "gr_tests: no test with \"%s\" in its name%s%s (--list shows the suites)\n",
                    test, only ? " in suite " : "", only ? only : "");
        else
            fprintf(stderr, "gr_tests: no suite named \"%s\" (--list shows them)\n", only);
        CU_cleanup_registry();
        return 2;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_tests_failed() + CU_get_number_of_suites_failed();
    unsigned asserts_failed = CU_get_number_of_failures();
    unsigned run = CU_get_number_of_tests_run(), nskip = 0;
    for (unsigned i = 0; i < nskipped; i++)
        nskip += !test_failed(skipped[i]);
    unsigned passed = run >= CU_get_number_of_tests_failed() + nskip
                          ? run - CU_get_number_of_tests_failed() - nskip
                          : 0;
    /* One line for people and scripts: a skipped test is not a passed one. */
    printf("gr_tests: %u tests: %u passed, %u failed, %u skipped\n", run, passed,
           CU_get_number_of_tests_failed(), nskip);
    for (unsigned i = 0; i < nskipped; i++)
        if (!test_failed(skipped[i])) printf("  skipped: %s\n", skipped[i]->pName);
    CU_cleanup_registry();
    free(skipped);
    if (run == 0 || failed || asserts_failed) return 1;
    /* CTest's SKIP_RETURN_CODE: the suite shows as "Not Run (Skipped)", never as passed. */
    return nskip ? GR_TEST_SKIP_EXIT : 0;
}
