/* graphrun's workload, TSV and command-line input tried as a hostile user would (issue #29):
 * devices, FIFOs, directories and oversized files, bad workload values, errors too long for the
 * message buffer, cascades from one cause, failed writes, and junk on the command line. Each
 * case checks the exit code and that the message names the place. No GPU needed. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "tests.h"

static char out[1 << 20];

#define EXPECT_RC(got, want)                                                                       \
    do {                                                                                           \
        int g_ = (got);                                                                            \
        if (g_ != (want))                                                                          \
            fprintf(stderr, "\n    exit %d, expected %d; output: %.2000s\n", g_, (want), out);     \
        CU_ASSERT_EQUAL(g_, (want));                                                               \
    } while (0)

#define ASSERT_NOT_CONTAINS(haystack, needle)                                                      \
    do {                                                                                           \
        int bad_ = strstr((haystack), (needle)) != NULL;                                           \
        if (bad_) fprintf(stderr, "\n    did not expect \"%s\" in: %s\n", (needle), (haystack));   \
        CU_ASSERT_FALSE(bad_);                                                                     \
    } while (0)

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* graphrun validate on a workload written to a temporary file, then EXTRA; its path in *path */
static int validate_text(const char *json, const char *extra, const char **path) {
    const char *p = gr_test_tmpfile(".json", json, strlen(json));
    if (path) *path = p;
    char args[4096];
    snprintf(args, sizeof(args), "validate %s %s", p, extra ? extra : "");
    return gr_test_graphrun(args, out, sizeof(out));
}

/* graphrun ARGS under `timeout 10`: a command that blocks (a FIFO) fails the test, never hangs it
 */
static int graphrun_bounded(const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "timeout 10 '%s' %s", gr_test_bin("graphrun"), args);
    return gr_test_popen(NULL, cmd, out, sizeof(out));
}

#define ONE_BUF                                                                                    \
    "\"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": \"ones\"}], "  \
    "\"outputs\": [\"x\"]"
#define RELU_X "{\"kernel\": \"relu\", \"inputs\": [\"x\"], \"outputs\": [\"x\"]}"

/* ---------- unbounded reads ---------- */

static void test_devices_and_directories(void) {
    EXPECT_RC(gr_test_graphrun("validate /dev/zero", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "/dev/zero: is a character device, not a regular file: the workload "
                            "file must be a file on disk");
    EXPECT_RC(gr_test_graphrun("validate /tmp", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "/tmp: is a directory, not a regular file");
    EXPECT_RC(
        gr_test_graphrun("validate workloads/dlrm_small.json --input /dev/zero", out, sizeof(out)),
        2);
    GR_ASSERT_CONTAINS(out,
                       "/dev/zero: is a character device, not a regular file: the TSV input file");
    const char *init =
        "{\"name\": \"a\", \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [4], "
        "\"init\": {\"kind\": \"file\", \"path\": \"/dev/zero\"}}], \"outputs\": [\"x\"], \"ops\": "
        "[" RELU_X "]}";
    EXPECT_RC(validate_text(init, NULL, NULL), 2);
    GR_ASSERT_CONTAINS(
        out,
        "buffers[0].init: /dev/zero: is a character device, not a regular file: the data file");
    /* an explicit stdin (-) is read, but only up to the workload limit */
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "timeout 10 '%s' validate - < /dev/zero", gr_test_bin("graphrun"));
    EXPECT_RC(gr_test_popen(NULL, cmd, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "<stdin>: more than 64.0 MiB: over the limit for this input");
    snprintf(cmd, sizeof(cmd), "'%s' validate - < workloads/launch_bound.json",
             gr_test_bin("graphrun"));
    EXPECT_RC(gr_test_popen(NULL, cmd, out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "-: valid (2 variants)");
}

static void test_fifos_do_not_block(void) {
    char fifo[128], args[512];
    snprintf(fifo, sizeof(fifo), "/tmp/gr_badinput_%d.fifo", (int)getpid());
    unlink(fifo);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    snprintf(args, sizeof(args), "validate %s", fifo);
    EXPECT_RC(graphrun_bounded(args), 2);
    GR_ASSERT_CONTAINS(out, "is a FIFO (named pipe), not a regular file");
    snprintf(args, sizeof(args), "validate workloads/dlrm_small.json --input %s", fifo);
    EXPECT_RC(graphrun_bounded(args), 2);
    GR_ASSERT_CONTAINS(out, "is a FIFO (named pipe), not a regular file: the TSV input file");
    char json[512];
    snprintf(
        json, sizeof(json),
        "{\"name\": \"a\", \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [4], "
        "\"init\": {\"kind\": \"file\", \"path\": \"%s\"}}], \"outputs\": [\"x\"], \"ops\": "
        "[" RELU_X "]}",
        fifo);
    const char *p = gr_test_tmpfile(".json", json, strlen(json));
    snprintf(args, sizeof(args), "validate %s", p);
    EXPECT_RC(graphrun_bounded(args), 2);
    GR_ASSERT_CONTAINS(out, "buffers[0].init: ");
    GR_ASSERT_CONTAINS(out, "is a FIFO (named pipe)");
    unlink(fifo);
}

static void test_oversized_workload(void) {
    char path[128], args[256];
    snprintf(path, sizeof(path), "/tmp/gr_badinput_%d_big.json", (int)getpid());
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(ftruncate(fd, (off_t)65 << 20), 0); /* sparse: nothing is written */
    close(fd);
    snprintf(args, sizeof(args), "validate %s", path);
    EXPECT_RC(gr_test_graphrun(args, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "the workload file is 65.0 MiB (68157440 bytes), over the 64.0 MiB (67108864 bytes) limit");
    GR_ASSERT_CONTAINS(out, "Limits on input");
    unlink(path);
}

/* line 1 is longer than the reader's block (streamed past), line 2 fits in a block but not the
 * limit */
static void test_tsv_line_limit(void) {
    size_t n1 = 300000, n2 = 100000;
    char *tsv = malloc(n1 + n2 + 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tsv);
    memset(tsv, '1', n1 + n2 + 2);
    tsv[n1] = '\n';
    tsv[n1 + 1 + n2] = '\n';
    const char *p = gr_test_tmpfile(".tsv", tsv, n1 + n2 + 2);
    free(tsv);
    char args[512], want[256];
    snprintf(args, sizeof(args), "validate workloads/dlrm_small.json --input %s --skip-bad-lines",
             p);
    EXPECT_RC(gr_test_graphrun(args, out, sizeof(out)), 2);
    snprintf(want, sizeof(want), "%s:1:65537: skipped: longer than 65536 bytes", p);
    GR_ASSERT_CONTAINS(out, want);
    snprintf(want, sizeof(want), "%s:2:65537: skipped: longer than 65536 bytes", p);
    GR_ASSERT_CONTAINS(out, want);
}

/* ---------- workload values ---------- */

static void test_workload_values(void) {
    EXPECT_RC(validate_text("{\"name\": \"a\", \"params\": {\"d\": {\"default\": \"fp32\", "
                            "\"choices\": []}}, " ONE_BUF ", \"ops\": [" RELU_X "]}",
                            NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "params.d.choices: is empty");
    EXPECT_RC(
        validate_text("{\"name\": \"a\", " ONE_BUF
                      ", \"ops\": [{\"name\": \"r\", \"kernel\": \"relu\", \"inputs\": [\"x\"], "
                      "\"outputs\": [\"x\"]}, {\"name\": \"r\", \"kernel\": \"relu\", \"inputs\": "
                      "[\"x\"], \"outputs\": [\"x\"]}]}",
                      NULL, NULL),
        2);
    GR_ASSERT_CONTAINS(out, "ops[1]: op name \"r\" is already used by ops[0]");
    /* in a repeat block: the iteration is named */
    EXPECT_RC(
        validate_text("{\"name\": \"a\", " ONE_BUF
                      ", \"ops\": [{\"repeat\": 2, \"var\": \"i\", \"ops\": [{\"name\": \"r\", "
                      "\"kernel\": \"relu\", \"inputs\": [\"x\"], \"outputs\": [\"x\"]}]}]}",
                      NULL, NULL),
        2);
    GR_ASSERT_CONTAINS(out,
                       "ops[0].ops[0]{i=1}: op name \"r\" is already used by ops[0].ops[0]{i=0}");
    EXPECT_RC(validate_text("{\"name\": \"a\", \"seed\": -3, " ONE_BUF ", \"ops\": [" RELU_X "]}",
                            NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "seed: -3 is negative");
    EXPECT_RC(validate_text("{\"name\": \"a\", \"params\": {\"n\": {\"default\": 3, \"min\": 5, "
                            "\"max\": 1}}, " ONE_BUF ", \"ops\": [" RELU_X "]}",
                            NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "params.n: min 5 is above max 1");
}

/* ---------- messages: too long, too many, naming the key ---------- */

static void test_error_buffer_overflow(void) {
    gr_error e;
    gr_error_clear(&e);
    char *big = malloc(20000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    memset(big, 'x', 19999);
    big[19999] = '\0';
    gr_error_set(&e, GR_ERR_INPUT, "ops[0]", "%s", big);
    gr_error_prefix(&e, "w.json: ");
    CU_ASSERT_TRUE(strncmp(e.msg, "w.json: ops[0]: xxx", 19) == 0); /* cut, not lost */
    CU_ASSERT_TRUE(strlen(e.msg) > 4000 && strlen(e.msg) < sizeof(e.msg));
    GR_ASSERT_CONTAINS(e.msg, "xxx...");
    gr_error_set(&e, GR_ERR_INPUT, "ops[1]", "short");
    GR_ASSERT_CONTAINS(e.msg, "(1 more problem not shown)");
    free(big);
    gr_error_clear(&e);
    for (int i = 0; i < 300; i++)
        gr_error_set(&e, GR_ERR_INPUT, "buffers", "problem %d of many", i);
    CU_ASSERT_EQUAL(e.count, 300);
    GR_ASSERT_CONTAINS(e.msg, "buffers: problem 0 of many");
    GR_ASSERT_CONTAINS(e.msg, "(236 more problems not shown)");
    /* through the CLI: 300 bad buffers */
    size_t cap = 64 * 1024, o = 0;
    char *json = malloc(cap);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    o += (size_t)snprintf(json + o, cap - o, "{\"name\": \"a\", \"buffers\": [");
    for (int i = 0; i < 300; i++)
        o += (size_t)snprintf(json + o, cap - o,
                              "%s{\"name\": \"b%d\", \"dtype\": \"fp%d\", \"shape\": [4]}",
                              i ? ", " : "", i, 100 + i);
    snprintf(json + o, cap - o,
             "], \"outputs\": [\"b0\"], \"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"b0\"], "
             "\"outputs\": [\"b0\"]}]}");
    EXPECT_RC(validate_text(json, NULL, NULL), 2);
    free(json);
    GR_ASSERT_CONTAINS(out, "buffers[0].dtype: unknown dtype \"fp100\"");
    GR_ASSERT_CONTAINS(out, "more problems not shown)");
}

static void test_messages_name_the_key(void) {
    EXPECT_RC(validate_text("{\"name\": null, " ONE_BUF ", \"ops\": [" RELU_X "]}", NULL, NULL), 2);
    GR_ASSERT_CONTAINS(out, ": name: expected a string, got null");
    EXPECT_RC(validate_text("{\"name\": \"a\", \"buffers\": [{\"name\": \"x\", \"dtype\": "
                            "\"fp32\", \"shape\": 4}], "
                            "\"outputs\": [\"x\"], \"ops\": [" RELU_X "]}",
                            NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "buffers[0].shape: expected an array, got an integer");
    /* repeat blocks, forks and variants too (in process: no need to start graphrun) */
    GR_ASSERT_CONTAINS(gr_test_plan_error("{\"name\": \"a\", " ONE_BUF
                                          ", \"ops\": [{\"repeat\": 2, \"var\": 5, \"ops\": []}]}",
                                          NULL),
                       "ops[0].var: expected a string, got an integer");
    GR_ASSERT_CONTAINS(
        gr_test_plan_error("{\"name\": \"a\", " ONE_BUF ", \"ops\": [{\"fork\": 3}]}", NULL),
        "ops[0].fork: expected a stream name, got an integer");
    GR_ASSERT_CONTAINS(gr_test_plan_error("{\"name\": \"a\", " ONE_BUF
                                          ", \"variants\": {\"v\": {\"ops\": 3}}}",
                                          "v"),
                       "variants.v.ops: expected an array of ops, got an integer");
    /* a $param cycle is named, not taken for a dtype */
    EXPECT_RC(validate_text("{\"name\": \"a\", \"params\": {\"a\": \"$b\", \"b\": \"$a\"}, "
                            "\"buffers\": [{\"name\": \"x\", "
                            "\"dtype\": \"$a\", \"shape\": [4], \"init\": \"ones\"}], \"outputs\": "
                            "[\"x\"], \"ops\": [" RELU_X "]}",
                            NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "params.a: refers back to itself: params.a -> params.b -> params.a");
    ASSERT_NOT_CONTAINS(out, "unknown dtype");
    ASSERT_NOT_CONTAINS(out, "unknown buffer");
    /* and a cycle of expressions */
    EXPECT_RC(validate_text("{\"name\": \"a\", \"params\": {\"a\": \"b + 1\", \"b\": \"2 * a\"}, "
                            "\"buffers\": [{\"name\": \"x\", "
                            "\"dtype\": \"fp32\", \"shape\": [\"a\"], \"init\": \"ones\"}], "
                            "\"outputs\": [\"x\"], \"ops\": [" RELU_X "]}",
                            NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "params.a: refers back to itself: params.a -> params.b -> params.a");
}

/* One cause, reported once: a bad param used in several shapes and in two variants, a bad dtype in
 * a repeat block, a buffer without a name; the ops that use them are not reported again. */
static void test_no_cascade(void) {
    EXPECT_RC(validate_text(
                  "{\"name\": \"a\", \"params\": {\"n\": \"m*2\"}, \"buffers\": ["
                  "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [\"n\"], \"init\": \"ones\"},"
                  "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [\"n\"]},"
                  "{\"name\": \"z\", \"dtype\": \"fp32\", \"shape\": [\"n\", \"n\"]}], "
                  "\"outputs\": [\"y\"],"
                  "\"variants\": {\"v1\": {\"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"x\"], "
                  "\"outputs\": [\"y\"]}]},"
                  "\"v2\": {\"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"y\"], \"outputs\": "
                  "[\"z\"]}]}}}",
                  NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "params.n: expression \"m*2\": unknown name \"m\"");
    CU_ASSERT_EQUAL(count_of(out, "unknown name \"m\""), 1);
    ASSERT_NOT_CONTAINS(out, "unknown buffer");
    ASSERT_NOT_CONTAINS(out, "no op of variant");
    EXPECT_RC(validate_text("{\"name\": \"a\", \"buffers\": [{\"repeat\": 4, \"var\": \"i\", "
                            "\"buffers\": [{\"name\": \"x{i}\", "
                            "\"dtype\": \"fp31\", \"shape\": [4], \"init\": \"ones\"}]}], "
                            "\"outputs\": [\"x0\"], \"ops\": [{\"repeat\": 4, "
                            "\"var\": \"i\", \"ops\": [{\"kernel\": \"relu\", \"inputs\": "
                            "[\"x{i}\"], \"outputs\": [\"x{i}\"]}]}]}",
                            NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "buffers[0].buffers[0]{i=0}.dtype: unknown dtype \"fp31\"");
    GR_ASSERT_CONTAINS(out,
                       "buffers[0]: (the same problem in 3 more iterations of this repeat block)");
    CU_ASSERT_EQUAL(count_of(out, "unknown dtype"), 1);
    ASSERT_NOT_CONTAINS(out, "unknown buffer");
    EXPECT_RC(validate_text("{\"name\": \"a\", \"buffers\": [{\"name\": null, \"dtype\": \"fp32\", "
                            "\"shape\": [4]}], "
                            "\"outputs\": [\"x\"], \"ops\": [" RELU_X "]}",
                            NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "buffers[0].name: expected a string, got null");
    GR_ASSERT_CONTAINS(out, "ops[0].inputs[0]: buffer \"x\" is not declared: it may be one of the "
                            "buffers that failed above (3 such references");
    ASSERT_NOT_CONTAINS(out, "unknown buffer");
}

/* ---------- writes ---------- */

static void test_write_failures_give_the_reason(void) {
    EXPECT_RC(
        gr_test_graphrun("validate workloads/launch_bound.json --json /nonexistent/dir/x.json", out,
                         sizeof(out)),
        2);
    GR_ASSERT_CONTAINS(out, "/nonexistent/dir/x.json: cannot write JSON (is the directory "
                            "writable?): No such file or directory");
    if (access("/dev/full", W_OK) != 0) {
        printf("\n  (no writable /dev/full: the disk-full case is not exercised here)");
        return;
    }
    EXPECT_RC(
        gr_test_graphrun("validate workloads/launch_bound.json --json /dev/full", out, sizeof(out)),
        2);
    GR_ASSERT_CONTAINS(out, "/dev/full: cannot write JSON: No space left on device");
    /* the results themselves: stdout on a full disk is exit 2, not a silent 0 */
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "'%s' validate workloads/launch_bound.json 2>&1 >/dev/full",
             gr_test_bin("graphrun"));
    EXPECT_RC(gr_test_popen(NULL, cmd, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out,
                       "graphrun: cannot write the results to stdout: No space left on device");
}

/* ---------- --skip-bad-lines with nothing left ---------- */

static void test_skip_bad_lines_lists_them(void) {
    const char *tsv = "0\t1\t2\n1\tx\n";
    const char *p = gr_test_tmpfile(".tsv", tsv, strlen(tsv));
    char args[512], want[256];
    snprintf(args, sizeof(args), "validate workloads/dlrm_small.json --input %s --skip-bad-lines",
             p);
    EXPECT_RC(gr_test_graphrun(args, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "no data rows (2 lines read, 2 malformed skipped)");
    snprintf(want, sizeof(want), "%s:1:1: skipped: 3 fields", p);
    GR_ASSERT_CONTAINS(out, want);
    snprintf(want, sizeof(want), "%s:2:1: skipped: 2 fields", p);
    GR_ASSERT_CONTAINS(out, want);
}

/* ---------- commands ---------- */

static void test_help_and_kernels(void) {
    EXPECT_RC(gr_test_graphrun("help nope", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "help: unknown command \"nope\"");
    EXPECT_RC(gr_test_graphrun("kernels add mul", out, sizeof(out)), 0); /* each kernel named */
    CU_ASSERT_TRUE(strncmp(out, "add ", 4) == 0);
    GR_ASSERT_CONTAINS(out, "\nmul ");
    ASSERT_NOT_CONTAINS(out, "\nrelu ");
    EXPECT_RC(gr_test_graphrun("kernels add nope", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "kernels: no kernel \"nope\"");
    ASSERT_NOT_CONTAINS(out, "y = a + b"); /* nothing printed when a name is wrong */
}

static void test_cli_sweep(void) {
    static const char *iters[] = {"10x", "-1", "1e99"};
    char args[512], want[256];
    for (size_t i = 0; i < sizeof(iters) / sizeof(iters[0]); i++) {
        snprintf(args, sizeof(args), "run workloads/launch_bound.json --iters %s", iters[i]);
        EXPECT_RC(gr_test_graphrun(args, out, sizeof(out)), 2);
        snprintf(want, sizeof(want), "--iters takes a whole number in [1, 100000000], got \"%s\"",
                 iters[i]);
        GR_ASSERT_CONTAINS(out, want);
    }
    EXPECT_RC(gr_test_graphrun("run workloads/launch_bound.json --json=", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "option --json needs a value, got an empty one");
    EXPECT_RC(
        gr_test_graphrun("validate workloads/launch_bound.json --variant tiny --variant empty", out,
                         sizeof(out)),
        2);
    GR_ASSERT_CONTAINS(out, "option --variant is given twice");
    EXPECT_RC(gr_test_graphrun("validate workloads/launch_bound.json --iters 10", out, sizeof(out)),
              2);
    GR_ASSERT_CONTAINS(out, "option --iters is for graphrun run");
    EXPECT_RC(gr_test_graphrun("validate workloads/launch_bound.json --set K", out, sizeof(out)),
              2);
    GR_ASSERT_CONTAINS(out, "--set \"K\": expected NAME=VALUE");
    EXPECT_RC(gr_test_graphrun("validate workloads/launch_bound.json --set K=3 --set K=4", out,
                               sizeof(out)),
              2);
    GR_ASSERT_CONTAINS(out, "--set \"K=4\": this param is set twice");
    EXPECT_RC(gr_test_graphrun("validate workloads/launch_bound.json --set m=3", out, sizeof(out)),
              2);
    GR_ASSERT_CONTAINS(out, "--set m=3: unknown param \"m\"");
    EXPECT_RC(
        gr_test_graphrun("validate workloads/launch_bound.json --set K=1e99", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--set params.K: 1e+99 is outside [1, 60000]");
    EXPECT_RC(gr_test_graphrun("validate workloads/launch_bound.json --seed -1", out, sizeof(out)),
              2);
    GR_ASSERT_CONTAINS(out, "--seed: expected a whole number in [0, 9223372036854775807]");
    EXPECT_RC(gr_test_graphrun("validate ''", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "the WORKLOAD argument is empty");
    EXPECT_RC(gr_test_graphrun("validate workloads/launch_bound.json -x", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "unknown option -x");
    /* a very long argument is echoed clipped */
    char longarg[6000];
    memset(longarg, 'a', 5000);
    longarg[5000] = '\0';
    char cmd[6100];
    snprintf(cmd, sizeof(cmd), "validate workloads/launch_bound.json --variant %s", longarg);
    EXPECT_RC(gr_test_graphrun(cmd, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--variant: launch_bound has no variant \"aaaa");
    CU_ASSERT_TRUE(strlen(out) < 1000);
}

static void test_hostile_workloads(void) {
    /* binary junk */
    unsigned char junk[256];
    for (int i = 0; i < 256; i++)
        junk[i] = (unsigned char)(i * 37 + 11);
    const char *p = gr_test_tmpfile(".json", junk, sizeof(junk));
    char args[512];
    snprintf(args, sizeof(args), "validate %s", p);
    EXPECT_RC(gr_test_graphrun(args, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "invalid JSON");
    GR_ASSERT_CONTAINS(out, p);
    /* deep nesting */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(deep);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    deep[2 * depth] = '\0';
    EXPECT_RC(validate_text(deep, NULL, NULL), 2);
    free(deep);
    GR_ASSERT_CONTAINS(out, ":1:2049: invalid JSON: maximum parsing depth reached");
    /* a shape that overflows int64, a negative one */
    EXPECT_RC(validate_text("{\"name\": \"a\", \"params\": {\"n\": 1e9}, \"buffers\": [{\"name\": "
                            "\"x\", \"dtype\": \"fp32\", "
                            "\"shape\": [\"n*n*n*n\"], \"init\": \"ones\"}], \"outputs\": [\"x\"], "
                            "\"ops\": [" RELU_X "]}",
                            NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "buffers[0].shape[0]: 1e+36 is out of range [1, 1099511627776]");
    ASSERT_NOT_CONTAINS(out, "unknown buffer");
    EXPECT_RC(validate_text("{\"name\": \"a\", \"buffers\": [{\"name\": \"x\", \"dtype\": "
                            "\"fp32\", \"shape\": [1048576, 1048576, 2], "
                            "\"init\": \"ones\"}], \"outputs\": [\"x\"], \"ops\": [" RELU_X "]}",
                            NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "buffers[0].shape: buffer \"x\" has more than 2^40 elements");
    EXPECT_RC(validate_text("{\"name\": \"a\", \"buffers\": [{\"name\": \"x\", \"dtype\": "
                            "\"fp32\", \"shape\": [-4], "
                            "\"init\": \"ones\"}], \"outputs\": [\"x\"], \"ops\": [" RELU_X "]}",
                            NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "buffers[0].shape[0]: -4 is out of range");
    /* long strings: echoed clipped, and a too-long init path is one problem, not two */
    char *lj = malloc(8000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lj);
    char longs[3001];
    memset(longs, 'a', 3000);
    longs[3000] = '\0';
    snprintf(
        lj, 8000,
        "{\"name\": \"a\", \"buffers\": [{\"name\": \"%s\", \"dtype\": \"fp32\", \"shape\": [4]}], "
        "\"outputs\": [], \"ops\": []}",
        longs);
    const char *m = gr_test_plan_error(lj, NULL);
    GR_ASSERT_CONTAINS(m, "buffers[0]: name \"aaaa");
    GR_ASSERT_CONTAINS(m, "...\" expands past 95 characters");
    CU_ASSERT_TRUE(strlen(m) < 1000);
    snprintf(lj, 8000,
             "{\"name\": \"a\", \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": "
             "[4], \"init\": "
             "{\"kind\": \"file\", \"path\": \"%s\"}}], \"outputs\": [\"x\"], \"ops\": [" RELU_X
             "]}",
             longs);
    m = gr_test_plan_error(lj, NULL);
    GR_ASSERT_CONTAINS(m, "buffers[0].init.path: longer than 511 characters");
    ASSERT_NOT_CONTAINS(m, "needs \"path\"");
    free(lj);
    /* a repeat that would make a million ops */
    EXPECT_RC(
        validate_text("{\"name\": \"a\", " ONE_BUF
                      ", \"ops\": [{\"repeat\": 1000, \"var\": \"i\", \"ops\": [{\"repeat\": 1000, "
                      "\"var\": \"j\", \"ops\": [" RELU_X "]}]}]}",
                      NULL, NULL),
        2);
    GR_ASSERT_CONTAINS(out, "the variant expands to more than 65536 ops");
    EXPECT_RC(validate_text("{\"name\": \"a\", " ONE_BUF
                            ", \"ops\": [{\"repeat\": 1e9, \"var\": \"i\", \"ops\": [" RELU_X
                            "]}]}",
                            NULL, NULL),
              2);
    GR_ASSERT_CONTAINS(out, "ops[0].repeat: 1e+09 is out of range [0, 65536]");
}

static CU_TestInfo badinput_cli_tests[] = {
    {"devices and directories are refused", test_devices_and_directories},
    {"FIFOs are refused without blocking", test_fifos_do_not_block},
    {"oversized workload file", test_oversized_workload},
    {"TSV line length limit", test_tsv_line_limit},
    {"workload values: choices, op names, seed", test_workload_values},
    {"errors past the message buffer", test_error_buffer_overflow},
    {"type errors and cycles name the key", test_messages_name_the_key},
    {"one cause is reported once", test_no_cascade},
    {"write failures give the OS reason", test_write_failures_give_the_reason},
    {"--skip-bad-lines with no good rows", test_skip_bad_lines_lists_them},
    {"help and kernels arguments", test_help_and_kernels},
    {"command-line sweep", test_cli_sweep},
    {"hostile workloads", test_hostile_workloads},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_badinput_cli_suites[] = {{"badinput_cli", badinput_cli_tests, 0},
                                                {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_badinput_cli_suites)
