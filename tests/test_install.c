/* `cmake --install` of this build tree into a temporary prefix, and the installed tools run from
 * another directory: --version, validate of a bundled workload found through the installed
 * share/graphrun/workloads, cupti-launchstat's report of a committed fixture and its lookup of the
 * installed injection library (no GPU needed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gr_version.h"
#include "tests.h"

#ifndef GR_CMAKE_COMMAND
#define GR_CMAKE_COMMAND "cmake"
#endif

static char prefix[256];  /* "" until installed */
static char out[1 << 22]; /* validate prints every buffer of decode_step */

static int installed(void) {
    if (prefix[0]) return 1;
    const char *build = getenv("GR_BUILD_DIR");
    if (!build || !build[0]) {
        fprintf(stderr, "\n    GR_BUILD_DIR is not set (CTest sets it)");
        return 0;
    }
    char tmpl[] = "/tmp/gr_test_install_XXXXXX";
    if (!mkdtemp(tmpl)) return 0;
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "'%s' --install '%s' --prefix '%s'", GR_CMAKE_COMMAND, build, tmpl);
    int rc = gr_test_popen("/", cmd, out, sizeof(out));
    if (rc != 0) {
        fprintf(stderr, "\n    %s exited %d: %s", cmd, rc, out);
        return 0;
    }
    snprintf(prefix, sizeof(prefix), "%s", tmpl);
    return 1;
}

/* PREFIX/bin/TOOL ARGS, run from / */
static int tool(const char *name, const char *args) {
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "'%s/bin/%s' %s", prefix, name, args);
    return gr_test_popen("/", cmd, out, sizeof(out));
}

static void test_layout(void) {
    CU_ASSERT_TRUE_FATAL(installed());
    static const char *files[] = {"bin/graphrun",
                                  "bin/cupti-launchstat",
                                  "lib/graphrun/libgr_launchstat_inject.so",
                                  "share/graphrun/workloads/decode_step.json",
                                  "share/graphrun/workloads/launch_bound.json",
                                  "share/doc/graphrun/README.md",
                                  "share/doc/graphrun/service.md",
                                  NULL};
    for (const char **f = files; *f; f++) {
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", prefix, *f);
        if (access(p, R_OK) != 0) fprintf(stderr, "\n    %s is not installed", p);
        CU_ASSERT_EQUAL(access(p, R_OK), 0);
    }
}

static void test_version(void) {
    CU_ASSERT_TRUE_FATAL(installed());
    CU_ASSERT_EQUAL(tool("graphrun", "--version"), 0);
    GR_ASSERT_CONTAINS(out, "graphrun " GR_VERSION " (built with CUDA " GR_CUDA_BUILD_VERSION ")");
    CU_ASSERT_EQUAL(tool("cupti-launchstat", "--version"), 0);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat " GR_VERSION " (graphrun " GR_VERSION ";");
}

static void test_installed_workload(void) {
    CU_ASSERT_TRUE_FATAL(installed());
    CU_ASSERT_EQUAL(tool("graphrun", "validate workloads/decode_step.json"), 0);
    char want[512];
    snprintf(want, sizeof(want), "(%s/share/graphrun/workloads/decode_step.json)", prefix);
    GR_ASSERT_CONTAINS(out, want);
    GR_ASSERT_CONTAINS(out, "workloads/decode_step.json: valid");
    CU_ASSERT_EQUAL(tool("graphrun", "validate launch_bound.json --json -"), 0);
    GR_ASSERT_CONTAINS(out, "\"graphrun_version\": \"" GR_VERSION "\"");
    /* missing everywhere: both places named */
    CU_ASSERT_EQUAL(tool("graphrun", "validate workloads/no_such.json"), 2);
    GR_ASSERT_CONTAINS(out, "workloads/no_such.json: cannot open the workload file");
    snprintf(want, sizeof(want), "%s/share/graphrun/workloads/no_such.json: not found either",
             prefix);
    GR_ASSERT_CONTAINS(out, want);
}

static void test_launchstat(void) {
    CU_ASSERT_TRUE_FATAL(installed());
    char args[2048];
    snprintf(args, sizeof(args), "report '%s'", gr_test_src("tests/data/launch_bound_k200.jsonl"));
    CU_ASSERT_EQUAL(tool("cupti-launchstat", args), 0);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat 0.1.0");
    /* the installed injection library is the one handed to the traced command */
    char trace[256];
    snprintf(trace, sizeof(trace), "%s/t.jsonl", prefix);
    snprintf(args, sizeof(args),
             "-o '%s' --no-driver -- sh -c 'echo \"injected $CUDA_INJECTION64_PATH\"; cp %s "
             "\"$GR_LAUNCHSTAT_OUT\"'",
             trace, gr_test_src("tests/data/launch_bound_k200.jsonl"));
    CU_ASSERT_EQUAL(tool("cupti-launchstat", args), 0);
    char want[512];
    snprintf(want, sizeof(want), "injected %s/lib/graphrun/libgr_launchstat_inject.so", prefix);
    GR_ASSERT_CONTAINS(out, want);
}

static void test_cleanup(void) {
    if (!prefix[0]) return;
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", prefix);
    CU_ASSERT_EQUAL(gr_test_popen("/", cmd, out, sizeof(out)), 0);
    prefix[0] = '\0';
}

static CU_TestInfo install_tests[] = {
    {"installed files", test_layout},
    {"--version of the installed tools", test_version},
    {"installed workloads found from another directory", test_installed_workload},
    {"installed cupti-launchstat: report, injection library", test_launchstat},
    {"remove the prefix", test_cleanup},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_install_suites[] = {{"install", install_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_install_suites)
