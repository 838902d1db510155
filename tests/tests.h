/* Shared test harness: suite registration, GPU detection and skipping, helpers to load workload
 * text and to check that an error names its place. */
#ifndef GR_TESTS_H
#define GR_TESTS_H

#include <CUnit/CUnit.h>
#include <stddef.h>

#include "core/error.h"
#include "core/plan.h"
#include "core/workload.h"

typedef struct gr_suite_def {
    const char *name;
    CU_TestInfo *tests;
    int needs_gpu;
} gr_suite_def;

/* Each test file registers one NULL-name-terminated array of suites with GR_REGISTER_SUITES;
 * CMake finds the suite names in the sources ({"name", tests, gpu}) and makes a CTest each. */
void gr_register_suites(gr_suite_def *defs);
#define GR_REGISTER_SUITES(defs)                                                                   \
    __attribute__((constructor)) static void gr_register_##defs(void) {                           \
        gr_register_suites(defs);                                                                  \
    }

int gr_test_have_gpu(void);
/* gr_tests' exit status when tests were skipped and none failed; CMake gives every CTest
 * SKIP_RETURN_CODE 77, so a suite that skipped anything shows as "Not Run (Skipped)". */
#define GR_TEST_SKIP_EXIT 77
/* A test that cannot run here calls this and returns: it prints "SKIPPED: WHY (TEST)" and
 * records the running test as skipped. Keep tests that skip on some machines and not on
 * others in a suite of their own, so that the rest of their suite still counts as passed. */
void gr_test_skip(const char *test, const char *why_fmt, ...) __attribute__((format(printf, 2, 3)));
/* Records a skip ("no CUDA device") and returns 1 when there is no GPU. */
int gr_test_skip_without_gpu(const char *test);
#define GR_REQUIRE_GPU()                                                                           \
    do {                                                                                           \
        if (gr_test_skip_without_gpu(__func__)) return;                                            \
    } while (0)

/* Load a workload from text; on failure returns NULL and fills err. */
gr_workload *gr_test_load(const char *json, gr_error *err);
/* Load + resolve one variant (NULL = default) with the real registry. */
gr_plan *gr_test_plan(const char *json, const char *variant, gr_error *err);
/* Load + resolve, expecting failure; returns the message (static buffer). */
const char *gr_test_plan_error(const char *json, const char *variant);
/* A path under the source tree. */
const char *gr_test_src(const char *rel);
/* A binary of the build tree ($GR_BUILD_DIR/NAME, else next to the test binary's folder):
 * "graphrun", "cupti-launchstat", ... (static per call slot, 8 slots). */
const char *gr_test_bin(const char *name);
/* Runs `cd DIR && ( CMD ) 2>&1` (DIR NULL: the source tree), stdout+stderr into out. Returns the
 * exit code, -1 when it could not run or was killed by a signal. */
int gr_test_popen(const char *dir, const char *cmd, char *out, size_t size);
/* graphrun ARGS (shell words) from the source tree. */
int gr_test_graphrun(const char *args, char *out, size_t size);
/* Write text to a fresh temporary file and return its path (static per call slot). */
const char *gr_test_tmpfile(const char *suffix, const void *data, size_t len);

#define GR_ASSERT_CONTAINS(haystack, needle)                                                       \
    do {                                                                                           \
        const char *h_ = (haystack);                                                               \
        int ok_ = h_ && strstr(h_, (needle)) != NULL;                                              \
        if (!ok_) fprintf(stderr, "\n    expected \"%s\" in: %s\n", (needle), h_ ? h_ : "(null)"); \
        CU_ASSERT(ok_);                                                                            \
    } while (0)

#endif
