/* GPU suite of the replay service: capture and replay from separate graphrun invocations give
 * the verification results of one-shot `graphrun run` and timings in its range; a client
 * killed with -9 mid-replay leaves the service serving with its graph; 10,000-step replays;
 * limits; names and content hashes; a sticky CUDA error makes the service answer, exit, and
 * the next capture start a fresh one; hostile input leaves a held graph's outputs unchanged and
 * stop/SIGTERM end a 10^8-step replay within 2.5 s (issue #29). Without a device each test
 * prints "SKIPPED". */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/npy.h"
#include "core/timer.h"
#include "replay/client.h"
#include "replay/lane.h"
#include "service_util.h"
#include "tests.h"

static json_t *variant0(json_t *report) {
    return json_array_get(json_object_get(report, "variants"), 0);
}

static double median_of(json_t *v, const char *timing) {
    return json_number_value(json_object_get(json_object_get(json_object_get(v, timing), "step_us"), "median"));
}

/* The checks of a capture (service) and of `graphrun run`: same buffers, same comparisons, same
 * outcome and the same errors (the same kernels on the same data). */
static void same_checks(json_t *service, json_t *run) {
    json_t *a = json_object_get(service, "checks"), *b = json_object_get(run, "checks");
    CU_ASSERT_TRUE(json_array_size(a) >= 2);
    CU_ASSERT_EQUAL(json_array_size(a), json_array_size(b));
    for (size_t i = 0; i < json_array_size(a) && i < json_array_size(b); i++) {
        json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(x, "buffer")),
                               json_string_value(json_object_get(y, "buffer")));
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(x, "what")),
                               json_string_value(json_object_get(y, "what")));
        CU_ASSERT_TRUE(json_is_true(json_object_get(x, "passed")));
        CU_ASSERT_EQUAL(json_is_true(json_object_get(x, "passed")), json_is_true(json_object_get(y, "passed")));
        double rx = json_number_value(json_object_get(x, "rel_l2"));
        double ry = json_number_value(json_object_get(y, "rel_l2"));
        if (fabs(rx - ry) > 1e-9 * fmax(fabs(rx), fabs(ry)) + 1e-300)
            fprintf(stderr, "\n    check %zu: rel_l2 %.17g (service) vs %.17g (run)", i, rx, ry);
        CU_ASSERT_TRUE(fabs(rx - ry) <= 1e-9 * fmax(fabs(rx), fabs(ry)) + 1e-300);
    }
}

static void in_range(const char *what, double service, double run) {
    double ratio = run > 0 ? service / run : 0;
    printf("\n    %s: service %.3f us/step, run %.3f us/step (x%.2f)", what, service, run, ratio);
    CU_ASSERT_TRUE(service > 0);
    CU_ASSERT_TRUE(ratio > 0.5 && ratio < 2.0);
}

static void test_capture_replay_like_run(void) {
    GR_REQUIRE_GPU();
    svc_env s;
    svc_env_make(&s);
    static const char *cases[][2] = {{"workloads/launch_bound.json", "--set K=200"},
                                     {"workloads/pointwise_fusion.json", "--set n=1048576 --variant unfused"}};
    char args[1024], path[256];
    for (int c = 0; c < 2; c++) {
        const char *wl = cases[c][0], *sets = cases[c][1];
        snprintf(args, sizeof(args), "capture %s %s --socket %s --json %s/cap%d.json --quiet", wl, sets,
                 s.sock, s.dir, c);
        CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
        if (c == 0) GR_ASSERT_CONTAINS(svc_out, "started a replay service");
        GR_ASSERT_CONTAINS(svc_out, "verification");
        GR_ASSERT_CONTAINS(svc_out, "instantiate us");
        GR_ASSERT_CONTAINS(svc_out, "captured as \"");
        snprintf(path, sizeof(path), "%s/cap%d.json", s.dir, c);
        json_t *cap = json_load_file(path, 0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(cap);
        const char *name = json_string_value(json_object_get(json_object_get(cap, "service"), "name"));
        const char *variant = json_string_value(json_object_get(variant0(cap), "variant"));
        CU_ASSERT_PTR_NOT_NULL_FATAL(name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(variant);
        CU_ASSERT_TRUE(json_is_true(json_object_get(variant0(cap), "verified")));
        /* one-shot run of the same variant */
        snprintf(args, sizeof(args), "run %s %s --variant %s --iters 2000 --json %s/run%d.json --quiet", wl,
                 strstr(sets, "--variant") ? "--set n=1048576" : sets, variant, s.dir, c);
        CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
        snprintf(path, sizeof(path), "%s/run%d.json", s.dir, c);
        json_t *run = json_load_file(path, 0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(run);
        same_checks(variant0(cap), variant0(run));
        /* replay from another invocation, eager timed too */
        snprintf(args, sizeof(args), "replay %s --iters 2000 --compare-eager --socket %s --json %s/rep%d.json --quiet",
                 name, s.sock, s.dir, c);
        CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
        GR_ASSERT_CONTAINS(svc_out, "timing per step, untraced");
        GR_ASSERT_CONTAINS(svc_out, "HBM roofline");
        snprintf(path, sizeof(path), "%s/rep%d.json", s.dir, c);
        json_t *rep = json_load_file(path, 0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(rep);
        json_t *rv = variant0(rep), *uv = variant0(run);
        json_t *gt = json_object_get(rv, "graph_replay");
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(gt, "batches")) *
                            json_integer_value(json_object_get(gt, "steps_per_batch")),
                        2000);
        same_checks(rv, uv); /* the capture's checks, reported with the replay */
        in_range(c == 0 ? "launch_bound graph" : "pointwise unfused graph", median_of(rv, "graph_replay"),
                 median_of(uv, "graph_replay"));
        in_range(c == 0 ? "launch_bound eager" : "pointwise unfused eager", median_of(rv, "eager"),
                 median_of(uv, "eager"));
        json_decref(cap);
        json_decref(run);
        json_decref(rep);
    }
    /* the same content is not captured twice; --force captures it again */
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=200 --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "already captured as \"");
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=200 --set n=256 --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0); /* n=256 is the default */
    GR_ASSERT_CONTAINS(svc_out, "already captured as \"");
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=200 --force --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "captured as \"");
    snprintf(args, sizeof(args), "list --socket %s --json -", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    json_t *l = json_loads(svc_out, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(l, "graphs")), 2);
    json_decref(l);
    char *log = svc_slurp(s.log);
    GR_ASSERT_CONTAINS(log, "capture --force: dropping");
    free(log);
    svc_env_done(&s);
}

static void test_killed_client_mid_replay(void) {
    GR_REQUIRE_GPU();
    svc_env s;
    svc_env_make(&s);
    char args[1024];
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --name lb --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL_FATAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    snprintf(args, sizeof(args), "status --socket %s --json -", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    json_t *st = json_loads(svc_out, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    double bytes_before = json_number_value(json_object_get(st, "graph_bytes"));
    json_decref(st);
    CU_ASSERT_TRUE(bytes_before > 0);
    /* a long replay (about 200 s), killed with -9 after a second */
    pid_t child = fork();
    if (child == 0) {
        execl(svc_graphrun_bin(), "graphrun", "replay", "lb", "--iters", "400000", "--batches", "400",
              "--socket", s.sock, "--quiet", (char *)NULL);
        _exit(127);
    }
    CU_ASSERT_TRUE_FATAL(child > 0);
    usleep(1500000);
    double t0 = gr_now_us();
    snprintf(args, sizeof(args), "status --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    CU_ASSERT_TRUE((gr_now_us() - t0) / 1e6 < 2); /* answered while the GPU is busy */
    GR_ASSERT_CONTAINS(svc_out, "running: replay \"lb\" x 400000");
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    /* the replay stops after its batch; the next one is served */
    t0 = gr_now_us();
    snprintf(args, sizeof(args), "replay lb --iters 1000 --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    CU_ASSERT_TRUE((gr_now_us() - t0) / 1e6 < 20);
    GR_ASSERT_CONTAINS(svc_out, "timing per step");
    snprintf(args, sizeof(args), "list --socket %s --json -", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    json_t *l = json_loads(svc_out, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l);
    json_t *g = json_array_get(json_object_get(l, "graphs"), 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(g, "name")), "lb");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(g, "replays")), 1); /* the finished one */
    json_decref(l);
    snprintf(args, sizeof(args), "status --socket %s --json -", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    st = json_loads(svc_out, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st);
    CU_ASSERT_EQUAL(json_number_value(json_object_get(st, "graph_bytes")), bytes_before);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(st, "connections")), 1);
    json_decref(st);
    char *log = svc_slurp(s.log);
    GR_ASSERT_CONTAINS(log, "client went away; cancelling its running request");
    GR_ASSERT_CONTAINS(log, "cancelled: the client disconnected");
    free(log);
    svc_env_done(&s);
}

static void test_replay_10000(void) {
    GR_REQUIRE_GPU();
    svc_env s;
    svc_env_make(&s);
    char args[1024], path[256];
    static const char *cases[][2] = {{"workloads/launch_bound.json", ""},
                                     {"workloads/pointwise_fusion.json", "--set n=4096"},
                                     {"workloads/decode_step.json", ""}};
    for (int c = 0; c < 3; c++) {
        struct stat sb;
        char src[1024];
        snprintf(src, sizeof(src), "%s/%s", svc_source_dir(), cases[c][0]);
        if (stat(src, &sb) != 0) {
            printf("\n    (%s is not there: skipped)", cases[c][0]);
            continue;
        }
        snprintf(args, sizeof(args), "capture %s %s --name w%d --socket %s --quiet", cases[c][0], cases[c][1],
                 c, s.sock);
        int rc = svc_grun(NULL, args, svc_out, sizeof(svc_out));
        CU_ASSERT_EQUAL(rc, 0);
        if (rc != 0) printf("\n    %s", svc_out);
        snprintf(args, sizeof(args), "replay w%d --iters 10000 --socket %s --json %s/r%d.json --quiet", c, s.sock,
                 s.dir, c);
        double t0 = gr_now_us();
        CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
        snprintf(path, sizeof(path), "%s/r%d.json", s.dir, c);
        json_t *r = json_load_file(path, 0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r);
        json_t *v = variant0(r), *gt = json_object_get(v, "graph_replay");
        int steps = (int)(json_integer_value(json_object_get(gt, "batches")) *
                          json_integer_value(json_object_get(gt, "steps_per_batch")));
        CU_ASSERT_EQUAL(steps, 10000);
        CU_ASSERT_TRUE(median_of(v, "graph_replay") > 0);
        CU_ASSERT_TRUE(json_is_true(json_object_get(v, "verified")));
        CU_ASSERT_PTR_NULL(json_object_get(v, "eager")); /* not asked for */
        printf("\n    %s: 10000 replays, %.3f us/step median, %.1f s for the command", cases[c][0],
               median_of(v, "graph_replay"), (gr_now_us() - t0) / 1e6);
        json_decref(r);
    }
    svc_env_done(&s);
}

static void test_limits_and_names(void) {
    GR_REQUIRE_GPU();
    svc_env s;
    svc_env_make(&s);
    char args[1024];
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, "--max-graphs 2 --max-memory 64M"), 0);
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=10 --name a --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=20 --name b --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    /* replay without a name: the most recent capture */
    snprintf(args, sizeof(args), "replay --iters 100 --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "graph    \"b\"");
    /* a name held by other content */
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=30 --name a --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "a different graph is already held as \"a\"");
    /* the graph limit */
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=30 --name c --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 1);
    GR_ASSERT_CONTAINS(svc_out, "graph limit reached: the service holds 2 graphs (a, b) and its limit is 2");
    /* --force replaces "a" in place: within the limit */
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=30 --name a --force --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    snprintf(args, sizeof(args), "drop b --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "dropped \"b\"");
    /* the memory limit: 4 buffers of 10^7 fp32 are 160 MB > 64 MB */
    snprintf(args, sizeof(args), "capture workloads/pointwise_fusion.json --set n=10000000 --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 1);
    GR_ASSERT_CONTAINS(svc_out, "device memory limit: pointwise_fusion fused_vec needs 160.0 MB");
    snprintf(args, sizeof(args), "status --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "graphs    1 held");
    svc_env_done(&s);
}

static void test_cuda_error_exits(void) {
    GR_REQUIRE_GPU();
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, "GRAPHRUN_SERVICE_TEST_HOOKS=1", NULL), 0);
    int pid = svc_read_pid(&s);
    char args[1024];
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=10 --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    int a = svc_raw_connect(s.sock), b = svc_raw_connect(s.sock), c = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(a >= 0 && b >= 0 && c >= 0);
    const char *hold = "{\"schema_version\": 1, \"cmd\": \"debug_sleep\", \"ms\": 400, \"id\": 0}\n";
    const char *fault = "{\"schema_version\": 1, \"cmd\": \"debug_fault\", \"id\": 1}\n";
    const char *next = "{\"schema_version\": 1, \"cmd\": \"replay\", \"iters\": 100, \"id\": 2}\n";
    /* Requests on different connections are queued in the order the service reads them: hold
     * the worker with a sleep, then queue the fault and the replay 100 ms apart, so the replay
     * is certainly behind the fault (on the H200 the two raced when sent back to back). */
    struct timespec gap = {0, 100 * 1000 * 1000};
    svc_raw_send(c, hold, strlen(hold));
    nanosleep(&gap, NULL);
    svc_raw_send(a, fault, strlen(fault));
    nanosleep(&gap, NULL);
    svc_raw_send(b, next, strlen(next));
    char buf[65536];
    CU_ASSERT_TRUE(svc_raw_line(a, buf, sizeof(buf), 30000) > 0);
    json_t *j = json_loads(buf, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    SVC_ASSERT_STR(j, svc_err_code(j), "cuda");
    GR_ASSERT_CONTAINS(svc_err_msg(j), "debug_fault");
    json_decref(j);
    /* the request behind it never runs on the broken context */
    CU_ASSERT_TRUE(svc_raw_line(b, buf, sizeof(buf), 30000) > 0);
    j = json_loads(buf, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    SVC_ASSERT_STR(j, svc_err_code(j), "service");
    GR_ASSERT_CONTAINS(svc_err_msg(j), "the service is stopping");
    json_decref(j);
    close(a);
    close(b);
    close(c);
    CU_ASSERT_TRUE(svc_wait_gone(pid, 30));
    struct stat sb;
    CU_ASSERT_NOT_EQUAL(stat(s.sock, &sb), 0);
    char *log = svc_slurp(s.log);
    GR_ASSERT_CONTAINS(log, "stopping: a CUDA error made the context unusable");
    GR_ASSERT_CONTAINS(log, "the CUDA context is unusable: 1 graphs are left to the process exit");
    free(log);
    /* the next capture starts a fresh service */
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "started a replay service");
    int pid2 = svc_read_pid(&s);
    CU_ASSERT_NOT_EQUAL(pid, pid2);
    CU_ASSERT_TRUE(svc_pid_alive(pid2));
    svc_env_done(&s);
}

/* ================================================================ issue #29: faults */

/* FNV-1a digests of the outputs after a replay of the held graph `name` (a JSON text), or NULL. */
static char *replay_digest(const char *sock, const char *name, int iters) {
    char line[512];
    snprintf(line, sizeof(line), "{\"schema_version\": 1, \"cmd\": \"replay\", \"name\": \"%s\", \"iters\": %d, "
             "\"output_digest\": true}", name, iters);
    int fd = svc_raw_connect(sock);
    if (fd < 0) return NULL;
    json_t *j = svc_raw_call(fd, line, 120000);
    close(fd);
    char *d = NULL;
    json_t *o = json_object_get(j, "outputs");
    if (json_is_true(json_object_get(j, "ok")) && json_array_size(o) > 0)
        d = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    else if (j) {
        char *dump = json_dumps(j, JSON_COMPACT);
        fprintf(stderr, "\n    replay %s: %.600s", name, dump ? dump : "?");
        free(dump);
    }
    json_decref(j);
    return d;
}

/* A replay of 10^8 steps in ONE timed batch without warm-up: only the check inside the batch
 * (every 1024 steps) can stop it before it ends (minutes at a few us per step). */
#define ENDLESS_REPLAY "{\"schema_version\": 1, \"cmd\": \"replay\", \"name\": \"pw\", \"iters\": 100000000, " \
                       "\"batches\": 1, \"warmup\": 0, \"id\": 9}\n"

/* The reply of the endless replay after a stop or a kill: cancelled, not abandoned. */
static void expect_replay_cancelled(int fd) {
    json_t *done = svc_raw_final(fd, 10000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(done);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(done, "id")), 9);
    SVC_ASSERT_STR(done, svc_err_code(done), "service");
    const char *m = svc_err_msg(done) ? svc_err_msg(done) : "";
    GR_ASSERT_CONTAINS(m, "cancelled: the service is stopping");
    CU_ASSERT_PTR_NULL(strstr(m, "abandoned")); /* it stopped by itself, in time */
    json_decref(done);
}

/* A held graph replays with unchanged outputs (same FNV-1a digest of y) after: an endless file
 * and a FIFO as workload, a client that pipelines without reading (a replay is served while it
 * is held back), junk and an over-long line, and a client killed during a 10^8-step single-batch
 * replay (cancelled inside the batch within 3 s). Then `stop` during such a replay ends the
 * service within 2.5 s, cleanly (the graph is freed, nothing abandoned). */
static void test_faults_keep_held_graph(void) {
    GR_REQUIRE_GPU();
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, NULL), 0);
    int pid = svc_read_pid(&s);
    char args[1024], buf[65536];
    snprintf(args, sizeof(args), "capture workloads/pointwise_fusion.json --set n=4096 --name pw --socket %s --quiet",
             s.sock);
    CU_ASSERT_EQUAL_FATAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    char *d1 = replay_digest(s.sock, "pw", 1000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d1);
    GR_ASSERT_CONTAINS(d1, "\"buffer\":\"y\"");
    GR_ASSERT_CONTAINS(d1, "\"bytes\":16384");
    long rss0 = svc_rss_kib(pid);

    /* an endless file and a FIFO as workload: refused at once, field workload */
    char fifo[256], line[1024];
    snprintf(fifo, sizeof(fifo), "%s/w.fifo", s.dir);
    CU_ASSERT_EQUAL(mkfifo(fifo, 0600), 0);
    const char *bad[] = {"/dev/zero", "/dev/urandom", fifo};
    for (int i = 0; i < 3; i++) {
        snprintf(line, sizeof(line), "{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"%s\"}", bad[i]);
        int fd = svc_raw_connect(s.sock);
        double t0 = gr_now_us();
        json_t *j = svc_raw_call(fd, line, 10000);
        close(fd);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        CU_ASSERT_TRUE((gr_now_us() - t0) / 1e6 < 3);
        SVC_ASSERT_STR(j, svc_err_field(j), "workload");
        GR_ASSERT_CONTAINS(svc_err_msg(j) ? svc_err_msg(j) : "", bad[i]);
        GR_ASSERT_CONTAINS(svc_err_msg(j) ? svc_err_msg(j) : "", "not a regular file");
        json_decref(j);
    }
    snprintf(args, sizeof(args), "capture /dev/zero --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "/dev/zero: is a character device, not a regular file");

    /* a client pipelining requests without reading is held back; a replay is served meanwhile */
    int flood = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(flood >= 0);
    int blocked = 0;
    size_t sent = svc_flood_until_blocked(flood, 20, &blocked);
    CU_ASSERT_TRUE(blocked);
    CU_ASSERT_TRUE(sent < ((size_t)16 << 20));
    char *dmid = replay_digest(s.sock, "pw", 1000);
    CU_ASSERT_PTR_NOT_NULL(dmid);
    if (dmid) CU_ASSERT_STRING_EQUAL(dmid, d1);
    free(dmid);
    close(flood); /* never read */

    /* junk, then a line over the limit on another connection */
    int junk = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(junk >= 0);
    const char *j1 = "\x01\xff{{{\n{\"schema_version\": 1, \"cmd\": \"replay\", \"iters\": \"x\"}\n";
    CU_ASSERT_EQUAL(svc_raw_send(junk, j1, strlen(j1)), 0);
    for (int k = 0; k < 2; k++) {
        CU_ASSERT_TRUE(svc_raw_line(junk, buf, sizeof(buf), 5000) > 0);
        GR_ASSERT_CONTAINS(buf, "\"ok\":false");
    }
    close(junk);
    junk = svc_raw_connect(s.sock);
    size_t huge = 3u << 20;
    char *big = malloc(huge);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    memset(big, '{', huge);
    svc_raw_send(junk, big, huge); /* fails part way once the service closes it */
    free(big);
    CU_ASSERT_TRUE(svc_raw_line(junk, buf, sizeof(buf), 5000) > 0);
    GR_ASSERT_CONTAINS(buf, "request line longer than");
    close(junk);

    /* a client killed during the endless replay: cancelled inside the batch */
    pid_t child = fork();
    if (child == 0) {
        int fd = svc_raw_connect(s.sock);
        if (fd < 0 || svc_raw_send(fd, ENDLESS_REPLAY, strlen(ENDLESS_REPLAY)) != 0) _exit(1);
        for (;;) pause();
    }
    CU_ASSERT_TRUE_FATAL(child > 0);
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 1, 0, 10000));
    usleep(300000);
    double t0 = gr_now_us();
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 0, 0, 3000));
    printf("\n    endless replay cancelled %.2f s after its client was killed", (gr_now_us() - t0) / 1e6);

    /* the same graph, the same outputs */
    char *d2 = replay_digest(s.sock, "pw", 1000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d2);
    CU_ASSERT_STRING_EQUAL(d2, d1);
    snprintf(args, sizeof(args), "list --socket %s --json -", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    json_t *l = json_loads(svc_out, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(l, "graphs")), 1);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_array_get(json_object_get(l, "graphs"), 0), "replays")), 3);
    json_decref(l);
    long rss1 = svc_rss_kib(pid);
    printf("; service RSS %ld -> %ld KiB", rss0, rss1);
    CU_ASSERT_TRUE(rss1 > 0 && rss1 - rss0 < 64 * 1024);

    /* stop during the endless replay: the service is gone within 2.5 s, cleanly */
    int a = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(a >= 0);
    CU_ASSERT_EQUAL(svc_raw_send(a, ENDLESS_REPLAY, strlen(ENDLESS_REPLAY)), 0);
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 1, 0, 10000));
    usleep(300000);
    snprintf(args, sizeof(args), "stop --socket %s", s.sock);
    t0 = gr_now_us();
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    CU_ASSERT_TRUE(svc_wait_gone(pid, 5));
    double secs = (gr_now_us() - t0) / 1e6;
    printf("; stop during the endless replay: %.2f s", secs);
    CU_ASSERT_TRUE(secs < 2.5);
    expect_replay_cancelled(a);
    close(a);
    char *log = svc_slurp(s.log);
    GR_ASSERT_CONTAINS(log, "freed 1 graphs");
    CU_ASSERT_PTR_NULL(strstr(log, "did not stop within"));
    free(log);
    free(d1);
    free(d2);
    svc_env_done(&s);
}

/* SIGTERM during the endless replay: the same clean exit within 2.5 s. */
static void test_sigterm_during_replay(void) {
    GR_REQUIRE_GPU();
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, NULL), 0);
    int pid = svc_read_pid(&s);
    char args[1024];
    snprintf(args, sizeof(args), "capture workloads/pointwise_fusion.json --set n=4096 --name pw --socket %s --quiet",
             s.sock);
    CU_ASSERT_EQUAL_FATAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    int a = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(a >= 0);
    CU_ASSERT_EQUAL(svc_raw_send(a, ENDLESS_REPLAY, strlen(ENDLESS_REPLAY)), 0);
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 1, 0, 10000));
    usleep(300000);
    double t0 = gr_now_us();
    CU_ASSERT_EQUAL(kill(pid, SIGTERM), 0);
    CU_ASSERT_TRUE(svc_wait_gone(pid, 5));
    double secs = (gr_now_us() - t0) / 1e6;
    printf("\n    SIGTERM during the endless replay: %.2f s", secs);
    CU_ASSERT_TRUE(secs < 2.5);
    expect_replay_cancelled(a);
    close(a);
    CU_ASSERT_FALSE(svc_lock_held(&s));
    char *log = svc_slurp(s.log);
    GR_ASSERT_CONTAINS(log, "stopping: signal 15");
    GR_ASSERT_CONTAINS(log, "freed 1 graphs");
    free(log);
    svc_env_done(&s);
}

/* Floats of a .npy file written by the service (header skipped), NULL on error. */
static float *npy_floats(const char *path, size_t *n) {
    char *raw = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    raw = malloc((size_t)size);
    if (!raw || fread(raw, 1, (size_t)size, f) != (size_t)size || size < 10) {
        fclose(f);
        free(raw);
        return NULL;
    }
    fclose(f);
    size_t head = 10 + (size_t)(unsigned char)raw[8] + 256 * (size_t)(unsigned char)raw[9];
    *n = ((size_t)size - head) / sizeof(float);
    float *out = malloc(*n * sizeof(float) + 1);
    memcpy(out, raw + head, *n * sizeof(float));
    free(raw);
    return out;
}

/* decode_step (fused, fp32, small) in buckets B = 1, 2, 8 over one set of buffers: the weights
 * held once; --batch picks the bucket; a 5-row request served by bucket 8 (padded, trimmed)
 * equals the same 5 rows served by a graph captured at B = 5. */
static void test_buckets_share_and_serve(void) {
    GR_REQUIRE_GPU();
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, ""), 0);
    const char *small = "--variant fused --set L=2 --set d=256 --set f=512 --set r=8 --set dtype=fp32";
    char args[2048], path[256], x5[256], y5[256], r5[256];
    snprintf(path, sizeof(path), "%s/b.json", s.dir);
    snprintf(args, sizeof(args), "capture workloads/decode_step.json %s --buckets B=1,2,8 --name dec "
             "--socket %s --quiet --json %s", small, s.sock, path);
    int rc = svc_grun(NULL, args, svc_out, sizeof(svc_out));
    if (rc) fprintf(stderr, "\n%s", svc_out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    json_error_t je;
    json_t *cap = json_load_file(path, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(cap);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(cap, "buckets")), 3);
    double shared = json_number_value(json_object_get(cap, "shared_bytes"));
    double separate = json_number_value(json_object_get(cap, "separate_bytes"));
    printf("\n    buckets B = 1, 2, 8: %.2f MB shared vs %.2f MB separate\n", shared / 1e6, separate / 1e6);
    CU_ASSERT_TRUE(shared > 0 && shared < 0.5 * separate);
    json_decref(cap);
    /* the bucket a batch runs */
    int fd = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    json_t *r = svc_raw_call(fd, "{\"schema_version\":1,\"cmd\":\"replay\",\"name\":\"dec\",\"batch\":5,"
                             "\"iters\":50,\"batches\":2}", 60000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_TRUE(json_is_true(json_object_get(r, "ok")));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(r, "bucket_run"), "value")), 8);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r, "name")), "dec.B8");
    json_decref(r);
    r = svc_raw_call(fd, "{\"schema_version\":1,\"cmd\":\"replay\",\"name\":\"dec\",\"batch\":9}", 60000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    const char *fld = svc_err_field(r);
    if (!fld || strcmp(fld, "batch")) {
        char *dump = json_dumps(r, JSON_COMPACT);
        fprintf(stderr, "\n    batch 9 over buckets 1, 2, 8: %s", dump ? dump : "?");
        free(dump);
    }
    CU_ASSERT_STRING_EQUAL(fld ? fld : "(none)", "batch");
    json_decref(r);
    close(fd);
    /* 5 rows through bucket 8, and through a B = 5 graph with the same weights */
    snprintf(x5, sizeof(x5), "%s/x5.npy", s.dir);
    snprintf(y5, sizeof(y5), "%s/y5.npy", s.dir);
    snprintf(r5, sizeof(r5), "%s/r5.npy", s.dir);
    float x[5 * 256];
    for (int i = 0; i < 5 * 256; i++) x[i] = (float)sin(0.37 * i) * 0.5f;
    int64_t shape[2] = {5, 256};
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_npy_write(x5, GR_FP32, 2, shape, x, &e), GR_OK);
    snprintf(args, sizeof(args), "replay dec --batch 5 --input x=%s --output x=%s --socket %s", x5, y5, s.sock);
    rc = svc_grun(NULL, args, svc_out, sizeof(svc_out));
    if (rc) fprintf(stderr, "\n%s", svc_out);
    CU_ASSERT_EQUAL(rc, 0);
    snprintf(args, sizeof(args), "capture workloads/decode_step.json %s --set B=5 --name ref5 --socket %s --quiet",
             small, s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    snprintf(args, sizeof(args), "replay ref5 --input x=%s --output x=%s --socket %s", x5, r5, s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    size_t n1 = 0, n2 = 0;
    float *a = npy_floats(y5, &n1), *b = npy_floats(r5, &n2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_EQUAL(n1, 5 * 256);
    CU_ASSERT_EQUAL(n2, 5 * 256);
    double num = 0, den = 0;
    for (size_t i = 0; i < n1 && i < n2; i++) {
        num += (a[i] - b[i]) * (double)(a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    printf("    5 rows through bucket 8 vs a B = 5 graph: rel L2 %.2e\n", sqrt(num / (den > 0 ? den : 1)));
    CU_ASSERT_TRUE(den > 0 && sqrt(num / den) < 1e-4);
    /* a lane on the group with batch 5: bucket 8's graph, 5 rows a step by default; its output
     * rows equal the served replay's (the same graph, padding and data) */
    {
        char shm[64];
        snprintf(shm, sizeof(shm), "/gr-test-blane-%d", (int)getpid());
        shm_unlink(shm);
        const size_t xb = 8 * 256 * 4, seg = GR_LANE_HEADER_BYTES + 2 * xb;
        int sfd = shm_open(shm, O_CREAT | O_RDWR | O_EXCL, 0600);
        CU_ASSERT_TRUE_FATAL(sfd >= 0 && ftruncate(sfd, (off_t)seg) == 0);
        char *m = mmap(NULL, seg, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
        close(sfd);
        CU_ASSERT_TRUE_FATAL(m != MAP_FAILED);
        int lfd = svc_raw_connect(s.sock);
        CU_ASSERT_TRUE_FATAL(lfd >= 0);
        char line[512];
        snprintf(line, sizeof(line),
                 "{\"schema_version\":1,\"cmd\":\"lane_open\",\"name\":\"dec\",\"batch\":5,"
                 "\"shm\":\"%s\",\"inputs\":[{\"buffer\":\"x\",\"offset\":%u}],"
                 "\"outputs\":[{\"buffer\":\"x\",\"offset\":%zu}]}",
                 shm, GR_LANE_HEADER_BYTES, GR_LANE_HEADER_BYTES + xb);
        json_t *lr = svc_raw_call(lfd, line, 60000);
        CU_ASSERT_TRUE_FATAL(lr && json_is_true(json_object_get(lr, "ok")));
        json_t *lj = json_object_get(lr, "lane");
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(lj, "bucket")), 8);
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(lj, "rows")), 5);
        /* the copies run inside the graph (capture/iograph.h) on this machine */
        CU_ASSERT_TRUE(json_is_true(json_object_get(lj, "io_graph")));
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_array_get(json_object_get(lj, "inputs"), 0),
                                                           "row_bytes")),
                        256 * 4);
        json_decref(lr);
        gr_lane_ctl *c = (gr_lane_ctl *)m;
        float *lx = (float *)(m + GR_LANE_HEADER_BYTES), *ly = (float *)(m + GR_LANE_HEADER_BYTES + xb);
        memcpy(lx, x, sizeof(x));
        for (int i = 5 * 256; i < 8 * 256; i++) lx[i] = 1e30f; /* past the rows: must not matter */
        gr_error le;
        gr_error_clear(&le);
        CU_ASSERT_EQUAL(gr_lane_step(c, 1e6, 30000, &le), GR_OK);
        double ln = 0, ld = 0;
        for (int i = 0; i < 5 * 256; i++) {
            ln += (ly[i] - a[i]) * (double)(ly[i] - a[i]);
            ld += (double)a[i] * a[i];
        }
        printf("    lane, 5 rows on bucket 8 vs the served replay: rel L2 %.2e\n", sqrt(ln / (ld > 0 ? ld : 1)));
        CU_ASSERT_TRUE(ld > 0 && sqrt(ln / ld) < 1e-6);
        c->rows = 9; /* more than the bucket: that step fails, the lane goes on */
        gr_error_clear(&le);
        CU_ASSERT_EQUAL(gr_lane_step(c, 1e6, 30000, &le), GR_ERR_INPUT);
        GR_ASSERT_CONTAINS(le.msg, "rows 9: this lane's graph is bucket B = 8");
        c->rows = 8;
        gr_error_clear(&le);
        CU_ASSERT_EQUAL(gr_lane_step(c, 1e6, 30000, &le), GR_OK);
        /* back to 5 rows after a full step: the copies shrink again, the padding is zero again
         * (the rows past 5 still hold 1e30 in the segment), and the output is the same */
        memset(ly, 0, 5 * 256 * sizeof(float));
        c->rows = 5;
        gr_error_clear(&le);
        CU_ASSERT_EQUAL(gr_lane_step(c, 1e6, 30000, &le), GR_OK);
        ln = 0;
        for (int i = 0; i < 5 * 256; i++) ln += (ly[i] - a[i]) * (double)(ly[i] - a[i]);
        CU_ASSERT_TRUE(sqrt(ln / (ld > 0 ? ld : 1)) < 1e-6);
        close(lfd); /* ends the lane */
        munmap(m, seg);
        shm_unlink(shm);
    }
    free(a);
    free(b);
    /* list names the group and what sharing saves */
    snprintf(args, sizeof(args), "list --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "buckets of \"dec\" (B = 1, 2, 8)");
    /* dropping the group frees its buckets and the shared buffers */
    snprintf(args, sizeof(args), "drop dec --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    snprintf(args, sizeof(args), "list --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    CU_ASSERT_EQUAL(svc_count_of(svc_out, "dec.B"), 0);
    GR_ASSERT_CONTAINS(svc_out, "ref5");
    svc_env_done(&s);
}

/* capture --update: pointwise at another n (same topology, new buffers and launch dims) updates
 * the held exec in place; launch_bound with another K (another topology) is re-instantiated;
 * both replay and verify. */
static void test_update_in_place(void) {
    GR_REQUIRE_GPU();
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, ""), 0);
    char args[1024], path[256];
    snprintf(path, sizeof(path), "%s/u.json", s.dir);
    snprintf(args, sizeof(args), "capture workloads/pointwise_fusion.json --variant unfused --set n=4096 "
             "--name pw --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL_FATAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    snprintf(args, sizeof(args), "capture workloads/pointwise_fusion.json --variant unfused --set n=8192 "
             "--name pw --update --socket %s --quiet", s.sock);
    int rc = svc_grun(NULL, args, svc_out, sizeof(svc_out));
    if (rc) fprintf(stderr, "\n%s", svc_out);
    CU_ASSERT_EQUAL(rc, 0);
    GR_ASSERT_CONTAINS(svc_out, "updated in place");
    printf("\n    %s", strstr(svc_out, "updated in place") ? strstr(svc_out, "updated in place") : svc_out);
    snprintf(args, sizeof(args), "replay pw --iters 200 --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "n=8192");
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=20 --name lb --socket %s --quiet",
             s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=40 --name lb --update "
             "--socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "re-instantiated (the topology differs)");
    snprintf(args, sizeof(args), "list --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    CU_ASSERT_EQUAL(svc_count_of(svc_out, " lb "), 1);
    svc_env_done(&s);
}

/* User kernels through the service (issue 24): the add_mul_act example captured (its reference
 * variant checks it), replayed, and served with fresh inputs checked against the same numbers
 * computed on the host. */
static void test_user_kernels_in_service(void) {
    GR_REQUIRE_GPU();
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, ""), 0);
    char args[1024], a[256], y[256];
    snprintf(args, sizeof(args), "capture workloads/examples/add_mul_act.json --variant fused --set n=1000 "
             "--name amr --socket %s --quiet", s.sock);
    int rc = svc_grun(NULL, args, svc_out, sizeof(svc_out));
    if (rc) fprintf(stderr, "\n%s", svc_out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    GR_ASSERT_CONTAINS(svc_out, "verified against: ");
    snprintf(args, sizeof(args), "replay amr --iters 200 --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    float x[1000];
    for (int i = 0; i < 1000; i++) x[i] = (float)(i % 17) * 0.25f - 2.0f;
    int64_t n = 1000;
    gr_error e;
    gr_error_clear(&e);
    snprintf(a, sizeof(a), "%s/a.npy", s.dir);
    snprintf(y, sizeof(y), "%s/y.npy", s.dir);
    CU_ASSERT_EQUAL_FATAL(gr_npy_write(a, GR_FP32, 1, &n, x, &e), GR_OK);
    snprintf(args, sizeof(args), "replay amr --input a=%s --input b=%s --input c=%s --output y=%s --socket %s",
             a, a, a, y, s.sock);
    rc = svc_grun(NULL, args, svc_out, sizeof(svc_out));
    if (rc) fprintf(stderr, "\n%s", svc_out);
    CU_ASSERT_EQUAL(rc, 0);
    size_t got = 0;
    float *out = npy_floats(y, &got);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    CU_ASSERT_EQUAL(got, 1000);
    int bad = 0;
    for (int i = 0; i < 1000 && i < (int)got; i++) {
        float want = (x[i] + x[i]) * x[i];
        if (want < 0) want = 0;
        bad += fabsf(out[i] - want) > 1e-5f * (1 + fabsf(want));
    }
    CU_ASSERT_EQUAL(bad, 0);
    free(out);
    svc_env_done(&s);
}

/* Lanes (issue 25): a lane's step gives the bytes a served replay gives for the same input; a
 * segment laid out wrong is refused by field and the graph serves on; lane_close, a dropped
 * graph and a closed connection each end a lane, and a client waiting on it fails at once. */
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void *lane_segment(const char *name, size_t bytes) {
    shm_unlink(name);
    int fd = shm_open(name, O_CREAT | O_RDWR | O_EXCL, 0600);
    if (fd < 0) return NULL;
    void *m = ftruncate(fd, (off_t)bytes) == 0
                  ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    close(fd);
    return m == MAP_FAILED ? NULL : m;
}

/* Open lanes as `status` counts them, polled until 0 (at most 2 s): a lane ends asynchronously
 * when its connection closes or its segment shrinks. */
static int lanes_after_close(int fd) {
    int lanes = -1;
    for (int t = 0; t < 100 && lanes != 0; t++) {
        usleep(20000);
        json_t *r = svc_raw_call(fd, "{\"schema_version\":1,\"cmd\":\"status\"}", 10000);
        lanes = r ? (int)json_integer_value(json_object_get(r, "lanes")) : -1;
        json_decref(r);
    }
    return lanes;
}

static json_t *lane_open(int fd, const char *graph, const char *shm, long long in_off, long long out_off) {
    char line[512];
    snprintf(line, sizeof(line),
             "{\"schema_version\":1,\"cmd\":\"lane_open\",\"name\":\"%s\",\"shm\":\"%s\","
             "\"inputs\":[{\"buffer\":\"a\",\"offset\":%lld}],"
             "\"outputs\":[{\"buffer\":\"y\",\"offset\":%lld}],\"spin_us\":100000}",
             graph, shm, in_off, out_off);
    return svc_raw_call(fd, line, 60000);
}

static void test_lanes(void) {
    GR_REQUIRE_GPU();
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, ""), 0);
    const int n = 4096;
    const size_t nb = (size_t)n * 4, seg_bytes = GR_LANE_HEADER_BYTES + 2 * nb;
    char args[1024], shm[64], shm2[64];
    snprintf(args, sizeof(args), "capture workloads/pointwise_fusion.json --set n=%d --variant unfused "
             "--name pw --socket %s --quiet", n, s.sock);
    CU_ASSERT_EQUAL_FATAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    snprintf(shm, sizeof(shm), "/gr-test-lane-%d", (int)getpid());
    snprintf(shm2, sizeof(shm2), "/gr-test-served-%d", (int)getpid());
    char *m = lane_segment(shm, seg_bytes), *m2 = lane_segment(shm2, 2 * nb);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m2);
    int fd = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    /* refused layouts, each by its field; then a good one */
    json_t *r = lane_open(fd, "pw", shm, 100, GR_LANE_HEADER_BYTES);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    SVC_ASSERT_STR(r, svc_err_field(r), "inputs[0]");
    GR_ASSERT_CONTAINS(svc_err_msg(r), "lies in the lane's control block");
    json_decref(r);
    r = lane_open(fd, "pw", shm, GR_LANE_HEADER_BYTES, GR_LANE_HEADER_BYTES + nb + 8);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    SVC_ASSERT_STR(r, svc_err_field(r), "outputs[0]");
    GR_ASSERT_CONTAINS(svc_err_msg(r), "runs past the end of the segment");
    json_decref(r);
    r = lane_open(fd, "pw", shm, GR_LANE_HEADER_BYTES, GR_LANE_HEADER_BYTES + nb);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_TRUE_FATAL(json_is_true(json_object_get(r, "ok")));
    json_t *lj = json_object_get(r, "lane");
    long long id = json_integer_value(json_object_get(lj, "id"));
    CU_ASSERT_TRUE(id > 0);
    CU_ASSERT_TRUE(json_is_true(json_object_get(lj, "registered")));
    CU_ASSERT_TRUE(json_is_true(json_object_get(lj, "io_graph")));
    if (!json_is_true(json_object_get(lj, "io_graph")))
        printf("    io_graph: false: %s\n", json_string_value(json_object_get(lj, "io_graph_why")));
    r = lane_open(fd, "pw", shm, GR_LANE_HEADER_BYTES, GR_LANE_HEADER_BYTES + nb); /* the same segment */
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    SVC_ASSERT_STR(r, svc_err_field(r), "shm");
    GR_ASSERT_CONTAINS(svc_err_msg(r), "already holds lane");
    json_decref(r);
    json_decref(r);
    gr_lane_ctl *c = (gr_lane_ctl *)m;
    float *a = (float *)(m + GR_LANE_HEADER_BYTES), *y = (float *)(m + GR_LANE_HEADER_BYTES + nb);
    float *a2 = (float *)m2, *y2 = (float *)(m2 + nb);
    /* step k: a = sin(0.01 i + k); the served replay of the same input must give the same y */
    double *wall = calloc(1000, sizeof(double)), *graph = calloc(1000, sizeof(double));
    int same = 1;
    for (int k = 0; k < 1000; k++) {
        for (int i = 0; i < n; i++) a[i] = (float)sin(0.01 * i + k);
        gr_error e;
        gr_error_clear(&e);
        double t0 = gr_now_us();
        gr_status st = gr_lane_step(c, 1e6, 10000, &e);
        wall[k] = gr_now_us() - t0;
        graph[k] = c->graph_us;
        if (st != GR_OK) {
            fprintf(stderr, "\n    lane step %d: %s", k, e.msg);
            CU_FAIL("lane step failed");
            break;
        }
        if (k % 250 == 0 || k == 999) {
            memcpy(a2, a, nb);
            char line[512];
            snprintf(line, sizeof(line),
                     "{\"schema_version\":1,\"cmd\":\"replay\",\"name\":\"pw\",\"inputs\":[{\"buffer\":"
                     "\"a\",\"shm\":\"%s\",\"offset\":0}],\"outputs\":[{\"buffer\":\"y\",\"shm\":\"%s\","
                     "\"offset\":%zu}]}",
                     shm2, shm2, nb);
            json_t *sr = svc_raw_call(fd, line, 60000);
            CU_ASSERT_TRUE(sr && json_is_true(json_object_get(sr, "ok")));
            json_decref(sr);
            same &= memcmp(y, y2, nb) == 0;
        }
    }
    CU_ASSERT_TRUE(same);
    double yabs = 0;
    for (int i = 0; i < n; i++) yabs += fabs(y[i]);
    CU_ASSERT_TRUE(yabs > 0); /* never on zeros */
    qsort(wall, 1000, sizeof(double), cmp_double);
    qsort(graph, 1000, sizeof(double), cmp_double);
    printf("\n    lane step (pointwise n=%d unfused, from this process): wall median %.2f us "
           "[p10 %.2f, p90 %.2f], graph %.2f us; the same output as the served replay: %s",
           n, wall[500], wall[100], wall[900], graph[500], same ? "yes" : "NO");
    CU_ASSERT_EQUAL(c->steps, 1000);
    free(wall);
    free(graph);
    /* lane_close: the steps served, then a step fails at once with the reason */
    char line[256];
    snprintf(line, sizeof(line), "{\"schema_version\":1,\"cmd\":\"lane_close\",\"lane\":%lld}", id);
    r = svc_raw_call(fd, line, 60000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(r, "lane"), "steps")), 1000);
    json_decref(r);
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_step(c, 0, 2000, &e), GR_ERR_SERVICE);
    GR_ASSERT_CONTAINS(e.msg, "closed by lane_close");
    /* a dropped graph ends its lane */
    r = lane_open(fd, "pw", shm, GR_LANE_HEADER_BYTES, GR_LANE_HEADER_BYTES + nb);
    CU_ASSERT_TRUE(r && json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_step(c, 1e6, 10000, &e), GR_OK);
    int fd2 = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(fd2 >= 0);
    r = svc_raw_call(fd2, "{\"schema_version\":1,\"cmd\":\"drop\",\"name\":\"pw\"}", 60000);
    CU_ASSERT_TRUE(r && json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_step(c, 0, 2000, &e), GR_ERR_SERVICE);
    GR_ASSERT_CONTAINS(e.msg, "its graph was dropped");
    /* a closed connection ends its lanes */
    snprintf(args, sizeof(args), "capture workloads/pointwise_fusion.json --set n=%d --variant unfused "
             "--name pw2 --socket %s --quiet", n, s.sock);
    CU_ASSERT_EQUAL_FATAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    r = lane_open(fd, "pw2", shm, GR_LANE_HEADER_BYTES, GR_LANE_HEADER_BYTES + nb);
    CU_ASSERT_TRUE(r && json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    close(fd);
    CU_ASSERT_EQUAL(lanes_after_close(fd2), 0);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_step(c, 0, 2000, &e), GR_ERR_SERVICE);
    GR_ASSERT_CONTAINS(e.msg, "the connection that opened it closed");
    /* a client that shrinks its segment under an open lane ends that lane, not the service */
    char shm3[64];
    snprintf(shm3, sizeof(shm3), "/gr-test-shrink-%d", (int)getpid());
    char *m3 = lane_segment(shm3, seg_bytes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m3);
    r = lane_open(fd2, "pw2", shm3, GR_LANE_HEADER_BYTES, GR_LANE_HEADER_BYTES + nb);
    CU_ASSERT_TRUE(r && json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_step((gr_lane_ctl *)m3, 1e6, 10000, &e), GR_OK);
    munmap(m3, seg_bytes); /* this process must not touch it either */
    int sfd = shm_open(shm3, O_RDWR, 0);
    CU_ASSERT_TRUE(sfd >= 0 && ftruncate(sfd, 0) == 0);
    if (sfd >= 0) close(sfd);
    CU_ASSERT_EQUAL(lanes_after_close(fd2), 0);
    shm_unlink(shm3);
    /* the C client's lane API on pw2: the segment made and sized by it, a step, the close */
    {
        gr_service_paths paths;
        gr_client *cl = NULL;
        gr_error_clear(&e);
        CU_ASSERT_EQUAL_FATAL(gr_service_paths_resolve(s.sock, &paths, &e), GR_OK);
        CU_ASSERT_EQUAL_FATAL(gr_client_connect(&paths, 0, &cl, &e), GR_OK);
        const char *ins[] = {"a"}, *outs[] = {"y"};
        gr_client_lane *cla = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_client_lane_open(cl, "pw2", ins, 1, outs, 1, 0, 100000, &cla, &e), GR_OK);
        float *ca = gr_client_lane_data(cla, "a", 0), *cy = gr_client_lane_data(cla, "y", 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ca);
        CU_ASSERT_PTR_NOT_NULL_FATAL(cy);
        CU_ASSERT_EQUAL(cla->io[0].bytes, nb);
        for (int i = 0; i < n; i++) ca[i] = (float)cos(0.02 * i);
        gr_error_clear(&e);
        CU_ASSERT_EQUAL(gr_lane_step(cla->ctl, 1e6, 10000, &e), GR_OK);
        double cs = 0;
        for (int i = 0; i < n; i++) cs += fabs(cy[i]);
        CU_ASSERT_TRUE(cs > 0);
        gr_error_clear(&e);
        CU_ASSERT_EQUAL(gr_client_lane_close(cl, cla, &e), GR_OK);
        gr_client_close(cl);
    }
    /* the service still serves pw2 */
    r = svc_raw_call(fd2, "{\"schema_version\":1,\"cmd\":\"replay\",\"name\":\"pw2\",\"iters\":100}", 60000);
    CU_ASSERT_TRUE(r && json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    close(fd2);
    munmap(m, seg_bytes);
    munmap(m2, 2 * nb);
    shm_unlink(shm);
    shm_unlink(shm2);
    svc_env_done(&s);
}

static CU_TestInfo gpu_service_tests[] = {
    {"capture + replay == run", test_capture_replay_like_run},
    {"kill -9 of a client mid-replay", test_killed_client_mid_replay},
    {"10000-step replays", test_replay_10000},
    {"limits and names", test_limits_and_names},
    {"sticky CUDA error: reply, exit, restart", test_cuda_error_exits},
    {"faults keep a held graph's outputs; stop mid-replay", test_faults_keep_held_graph},
    {"SIGTERM during a 10^8-step replay", test_sigterm_during_replay},
    {"buckets share buffers; a batch is served padded", test_buckets_share_and_serve},
    {"capture --update: in place or re-instantiated", test_update_in_place},
    {"user kernels captured, replayed and served", test_user_kernels_in_service},
    {"lanes: steps equal served replays; close, drop, disconnect end them", test_lanes},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_gpu_service_suites[] = {{"gpu_service", gpu_service_tests, 1}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_gpu_service_suites)
