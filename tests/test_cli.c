/* CLI suites: the graphrun binary end to end (usage errors, exit codes, messages naming the
 * place, validate output and JSON), and the fuzz corpus replayed through loader + resolver. */
#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/workload.h"
#include "kernels/registry.h"
#include "tests.h"


/* graphrun ARGS from the source tree, output captured (tests/test_main.c) */
static int run(const char *args, char *out, size_t size) {
    return gr_test_graphrun(args, out, size);
}

static char out[1 << 20];

static void test_usage(void) {
    CU_ASSERT_EQUAL(run("", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "usage: graphrun COMMAND");
    CU_ASSERT_EQUAL(run("--help", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "exit codes");
    CU_ASSERT_EQUAL(run("frobnicate", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "unknown command \"frobnicate\"");
    CU_ASSERT_EQUAL(run("run --help", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "example:");
    CU_ASSERT_EQUAL(run("validate --help", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "example:");
    CU_ASSERT_EQUAL(run("kernels --help", out, sizeof(out)), 0);
    CU_ASSERT_EQUAL(run("help run", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "--capture-mode");
    CU_ASSERT_EQUAL(run("run", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "run needs a WORKLOAD file");
    CU_ASSERT_EQUAL(run("run workloads/launch_bound.json --iters", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "option --iters needs a value");
    CU_ASSERT_EQUAL(run("run workloads/launch_bound.json --iters 0", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--iters takes a whole number in [1, 100000000], got \"0\"");
    CU_ASSERT_EQUAL(run("run workloads/launch_bound.json --capture-mode sideways", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "unknown mode \"sideways\" (modes: global, thread-local, relaxed)");
    CU_ASSERT_EQUAL(run("run workloads/launch_bound.json --unroll 0", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--unroll takes a whole number in [1, 10000], got \"0\"");
    CU_ASSERT_EQUAL(run("run workloads/launch_bound.json --bogus", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "unknown option --bogus");
    CU_ASSERT_EQUAL(run("validate a.json b.json", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "unexpected argument \"b.json\"");
    CU_ASSERT_EQUAL(run("validate workloads/launch_bound.json --full=1", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "takes no value");
}

static void test_bad_input_exit_codes(void) {
    CU_ASSERT_EQUAL(run("validate /nonexistent.json", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "/nonexistent.json: cannot open the workload file");
    CU_ASSERT_EQUAL(run("run /nonexistent.json", out, sizeof(out)), 2);
    CU_ASSERT_EQUAL(run("validate workloads/pointwise_fusion.json --variant nope", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--variant: pointwise_fusion has no variant \"nope\"");
    CU_ASSERT_EQUAL(run("validate workloads/pointwise_fusion.json --set m=3", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "unknown param \"m\" (params of pointwise_fusion: n, act, dtype, threads, form, vecs)");
    CU_ASSERT_EQUAL(run("validate workloads/pointwise_fusion.json --set dtype=fp64", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "\"fp64\" is not one of: fp32, bf16, fp16");
    const char *bad = "{\"name\": \"b\",\n \"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": \"ones\"}],\n \"outputs\": [\"a\"],\n \"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"a\"],}]}";
    const char *p = gr_test_tmpfile(".json", bad, strlen(bad));
    char args[512];
    snprintf(args, sizeof(args), "validate %s", p);
    CU_ASSERT_EQUAL(run(args, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, ":4:");
    GR_ASSERT_CONTAINS(out, "invalid JSON");
    /* several semantic problems are all reported, each with its JSON path */
    const char *multi = "{\"name\": \"m\", \"buffers\": [{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": \"ones\"},"
                        "{\"name\": \"y\", \"dtype\": \"fp31\", \"shape\": [4]}], \"outputs\": [\"y\"],"
                        "\"ops\": [{\"kernel\": \"relux\", \"inputs\": [\"a\"], \"outputs\": [\"a\"]},"
                        "{\"kernel\": \"relu\", \"inputs\": [\"w_up.17\"], \"outputs\": [\"a\"]}]}";
    p = gr_test_tmpfile(".json", multi, strlen(multi));
    snprintf(args, sizeof(args), "validate %s", p);
    CU_ASSERT_EQUAL(run(args, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "buffers[1].dtype: unknown dtype \"fp31\"");
    GR_ASSERT_CONTAINS(out, "ops[0].kernel: unknown kernel \"relux\"");
    GR_ASSERT_CONTAINS(out, "ops[1].inputs[0]: unknown buffer \"w_up.17\"");
}

static void test_validate_output(void) {
    CU_ASSERT_EQUAL(run("validate workloads/pointwise_fusion.json", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "variant unfused");
    GR_ASSERT_CONTAINS(out, "variant fused_vec");
    GR_ASSERT_CONTAINS(out, "HBM accounting per step");
    GR_ASSERT_CONTAINS(out, "fused_vec vs unfused: 2 fewer round trips, 2 fewer launches, 2.00x less HBM traffic");
    GR_ASSERT_CONTAINS(out, "valid (3 variants)");
    CU_ASSERT_EQUAL(run("validate workloads/launch_bound.json --set K=100 --variant tiny", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "100 kernel launches");
    GR_ASSERT_CONTAINS(out, "more ops (--full lists all)");
    CU_ASSERT_EQUAL(run("validate workloads/launch_bound.json --set K=100 --full --variant tiny", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "tiny.50");
}

static void test_validate_json(void) {
    CU_ASSERT_EQUAL(run("validate workloads/pointwise_fusion.json --variant unfused --set n=4096 --json -", out, sizeof(out)), 0);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "schema_version")), 1);
    json_t *ops = json_object_get(j, "ops");
    CU_ASSERT_EQUAL(json_array_size(ops), 3);
    json_t *op0 = json_array_get(ops, 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(op0, "kernel")), "add");
    CU_ASSERT_EQUAL(json_real_value(json_object_get(op0, "bytes_read")), 2 * 4096 * 4);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(op0, "grid")), 3);
    CU_ASSERT_EQUAL(json_integer_value(json_array_get(json_object_get(json_object_get(op0, "shapes"), "a"), 0)), 4096);
    json_t *tot = json_object_get(j, "totals");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(tot, "kernels")), 3);
    CU_ASSERT_EQUAL(json_real_value(json_object_get(tot, "bytes")), 8.0 * 4096 * 4);
    json_decref(j);
    CU_ASSERT_EQUAL(run("validate workloads/pointwise_fusion.json --set n=4096 --json -", out, sizeof(out)), 0);
    j = json_loads(out, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(j, "variants")), 3);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(j, "accounting")), 3);
    json_decref(j);
    /* "form": which implementation a linear_act op runs (no such key for one-form kernels) */
    CU_ASSERT_EQUAL(
        run("validate workloads/dlrm_small.json --variant fused_tf32x3 --set B=2048 --json -", out,
            sizeof(out)),
        0);
    j = json_loads(out, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    ops = json_object_get(j, "ops");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(ops, 1), "name")),
                           "bot.1");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(ops, 1), "form")),
                           "wg w64b tf32x3"); /* x3_impl auto_wg, the default target's cc 9.0 */
    /* the interaction: its rows per block (attr rows_per_block "auto" -> 2 at B = 2048) */
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_array_get(ops, 4), "form")),
                           "rows_per_block 2");
    CU_ASSERT_STRING_EQUAL(
        json_string_value(json_object_get(json_object_get(json_array_get(ops, 4), "attrs"),
                                          "rows_per_block")),
        "auto");
    json_decref(j);
    /* a kernel choice is plan data: the workload's param sets the attr, the plan prints it */
    CU_ASSERT_EQUAL(run("validate workloads/dlrm_small.json --variant fused --set B=2048 --set "
                        "ix_rows=4",
                        out, sizeof(out)),
                    0);
    GR_ASSERT_CONTAINS(out, "rows_per_block 4");
    CU_ASSERT_EQUAL(run("validate workloads/dlrm_small.json --variant fused --set ix_rows=3", out,
                        sizeof(out)),
                    2);
    GR_ASSERT_CONTAINS(out, "ix_rows");
    GR_ASSERT_CONTAINS(out, "auto, 1, 2, 4");
    CU_ASSERT_EQUAL(run("validate workloads/dlrm_small.json --variant fused_tf32x3 --set B=2048",
                        out, sizeof(out)),
                    0);
    GR_ASSERT_CONTAINS(out, "wg w64b2 tf32x3"); /* top.0 */
    CU_ASSERT_EQUAL(run("validate workloads/launch_bound.json --json /nonexistent/dir/x.json", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "cannot write JSON");
}

static void test_run_without_gpu(void) {
    if (gr_test_have_gpu()) {
        gr_test_skip(__func__, "a GPU is present: the no-device path is not exercised here");
        return;
    }
    CU_ASSERT_EQUAL(run("run workloads/pointwise_fusion.json --set n=4096", out, sizeof(out)), 3);
    GR_ASSERT_CONTAINS(out, "HBM accounting per step");
    GR_ASSERT_CONTAINS(out, "no CUDA device found");
    GR_ASSERT_CONTAINS(out, "nothing was run (exit 3)");
}

static void test_kernels_listing(void) {
    CU_ASSERT_EQUAL(run("kernels", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "add_mul_act_vec");
    GR_ASSERT_CONTAINS(out, "attr act (enum)");
    CU_ASSERT_EQUAL(run("kernels tiny", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "y = x + c");
    CU_ASSERT_EQUAL(run("kernels nope", out, sizeof(out)), 2);
}

/* Every file of the fuzz corpus through loader + resolver: no crash, no hang, and a failure
 * always comes with a message. */
static void test_fuzz_corpus(void) {
    const char *dir = gr_test_src("tests/fuzz/corpus");
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *ent;
    int files = 0;
    while ((ent = readdir(d))) {
        if (ent->d_name[0] == '.') continue;
        char path[2048];
        snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
        gr_error e;
        gr_error_clear(&e);
        gr_workload *wl = NULL;
        if (gr_workload_load_file(path, &wl, &e) == GR_OK) {
            for (int v = 0; v <= wl->nvariants; v++) {
                const char *name = wl->nvariants ? (v < wl->nvariants ? wl->variants[v] : NULL) : "default";
                if (!name) break;
                gr_plan *p = NULL;
                gr_target t = gr_target_default();
                gr_error pe;
                gr_error_clear(&pe);
                if (gr_plan_resolve(wl, name, &t, gr_kernel_find, gr_kernel_all_names, &p, &pe) == GR_OK)
                    gr_plan_destroy(p);
                else
                    CU_ASSERT_TRUE(strlen(pe.msg) > 0);
                if (!wl->nvariants) break;
            }
            gr_workload_destroy(wl);
        } else {
            CU_ASSERT_TRUE(strlen(e.msg) > 0);
        }
        files++;
    }
    closedir(d);
    CU_ASSERT_TRUE(files >= 10);
}

static CU_TestInfo cli_tests[] = {{"usage errors", test_usage},
                                  {"bad input exit codes", test_bad_input_exit_codes},
                                  {"validate output", test_validate_output},
                                  {"validate --json", test_validate_json},
                                  {"kernels listing", test_kernels_listing},
                                  CU_TEST_INFO_NULL};
/* Runs only where there is no GPU: a suite of its own, so that on the GPU machine its skip leaves
 * the rest of `cli` counted as passed. */
static CU_TestInfo cli_nodev_tests[] = {{"run without GPU exits 3", test_run_without_gpu},
                                        CU_TEST_INFO_NULL};
static CU_TestInfo fuzz_tests[] = {{"corpus replays cleanly", test_fuzz_corpus}, CU_TEST_INFO_NULL};

static gr_suite_def gr_cli_suites[] = {{"cli", cli_tests, 0},
                                  {"cli_nodevice", cli_nodev_tests, 0},
                                  {"fuzz_corpus", fuzz_tests, 0},
                                  {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_cli_suites)
