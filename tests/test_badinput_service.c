/* The replay service under hostile input, without a GPU (issue #29): workload paths that are
 * devices, FIFOs, directories or oversized files; error replies whose field is the request's;
 * bad input that must not start a service; clients that pipeline without reading, send junk,
 * say nothing, die mid-request or come a hundred at once; stop and SIGTERM while a request
 * cannot be interrupted; requests after stop; the socket directory's permissions. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/timer.h"
#include "service_util.h"
#include "tests.h"

/* Under AddressSanitizer freed memory sits in its quarantine (up to 256 MB by default), so the
 * RSS a bounded service reaches after N handled requests is several times the plain build's:
 * the bound is widened there, still far under the unbounded growth it guards against (160 ->
 * 929 MB for 1.4 M pipelined requests before the fix). Seen in CI's ASan build: +33 MiB. */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_BOUND_KIB(kib) ((kib) * 4)
#else
#define RSS_BOUND_KIB(kib) (kib)
#endif

#define STATUS_LINE "{\"schema_version\": 1, \"cmd\": \"status\"}"

/* A request on a fresh connection; the final reply (NULL on timeout). */
static json_t *call_once(const char *sock, const char *line, int timeout_ms) {
    int fd = svc_raw_connect(sock);
    if (fd < 0) return NULL;
    json_t *j = svc_raw_call(fd, line, timeout_ms);
    close(fd);
    return j;
}

/* The reply is an error with this code and field whose message contains each needle. */
static void expect_error(json_t *j, const char *code, const char *field, const char *const *needles) {
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_TRUE(json_is_false(json_object_get(j, "ok")));
    SVC_ASSERT_STR(j, svc_err_code(j), code);
    SVC_ASSERT_STR(j, svc_err_field(j), field);
    for (const char *const *n = needles; *n; n++) GR_ASSERT_CONTAINS(svc_err_msg(j) ? svc_err_msg(j) : "", *n);
}

static void capture_request(char *line, size_t size, const char *workload, const char *extra) {
    snprintf(line, size, "{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"%s\"%s%s}",
             workload, extra ? ", " : "", extra ? extra : "");
}

/* ================================================================ workload files */

/* /dev/zero, a FIFO without a writer, a directory, a 100 GiB sparse file, a syntax error, an
 * unknown kernel, bad sets and variants: each is refused at once with the request's field
 * (workload, sets, variant) and the inner place (path, line:column, params.K) in the message;
 * the service neither blocks nor grows. */
static void test_bad_workload_files(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, NULL), 0);
    int pid = svc_read_pid(&s);
    long rss0 = svc_rss_kib(pid);
    char line[2048], fifo[256], big[256], dir[256];
    snprintf(fifo, sizeof(fifo), "%s/fifo.json", s.dir);
    CU_ASSERT_EQUAL(mkfifo(fifo, 0600), 0);
    snprintf(big, sizeof(big), "%s/big.json", s.dir);
    int fd = open(big, O_WRONLY | O_CREAT, 0600);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(ftruncate(fd, 100LL << 30), 0); /* sparse: no disk used */
    close(fd);
    snprintf(dir, sizeof(dir), "%s/adir.json", s.dir);
    CU_ASSERT_EQUAL(mkdir(dir, 0700), 0);
    const char *syntax = "{\"name\": \"b\",\n \"buffers\": [],\n \"ops\": [,]}";
    const char *syn = gr_test_tmpfile(".json", syntax, strlen(syntax));
    const char *unk = "{\"schema_version\": 1, \"name\": \"u\", \"buffers\": [{\"name\": \"x\", \"dtype\": "
                      "\"fp32\", \"shape\": [4], \"init\": \"ones\"}], \"outputs\": [\"x\"], \"ops\": "
                      "[{\"kernel\": \"no_such_kernel\", \"inputs\": [\"x\"], \"outputs\": [\"x\"]}]}";
    const char *unkp = gr_test_tmpfile(".json", unk, strlen(unk));
    const char *pw = svc_src("workloads/pointwise_fusion.json");
    struct {
        const char *workload, *extra, *code, *field, *needles[4];
    } cases[] = {
        {"/dev/zero", NULL, "bad_input", "workload", {"/dev/zero", "not a regular file", NULL}},
        {fifo, NULL, "bad_input", "workload", {fifo, "not a regular file", NULL}},
        {dir, NULL, "bad_input", "workload", {dir, "directory", NULL}},
        {big, NULL, "bad_input", "workload", {big, "limit", NULL}},
        {"/nonexistent/w.json", NULL, "io", "workload", {"/nonexistent/w.json", "cannot open", NULL}},
        {syn, NULL, "bad_input", "workload", {syn, ":3:", "invalid JSON", NULL}},
        {unkp, NULL, "bad_input", "workload", {unkp, "no_such_kernel", NULL}},
        {pw, "\"sets\": [\"m=3\"]", "usage", "sets", {"sets m=3: unknown param \"m\"", NULL}},
        {pw, "\"sets\": [\"n=-3\"]", "bad_input", "sets", {pw, "params.n", "-3", NULL}},
        {pw, "\"sets\": [\"act=tanh\"]", "bad_input", "sets", {"params.act", "tanh", NULL}},
        {pw, "\"variant\": \"nope\"", "usage", "variant", {"variant: pointwise_fusion has no variant \"nope\"", NULL}},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        capture_request(line, sizeof(line), cases[i].workload, cases[i].extra);
        double t0 = gr_now_us();
        json_t *j = call_once(s.sock, line, 10000);
        double secs = (gr_now_us() - t0) / 1e6;
        if (!j) fprintf(stderr, "\n    no reply to %s", line);
        expect_error(j, cases[i].code, cases[i].field, cases[i].needles);
        CU_ASSERT_TRUE(secs < 3); /* refused before anything is read, even a FIFO */
        json_decref(j);
    }
    /* still serving, and it did not grow (/dev/zero once took it to 9.2 GB) */
    json_t *j = call_once(s.sock, STATUS_LINE, 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_TRUE(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
    long rss1 = svc_rss_kib(pid);
    printf("\n    service RSS %ld -> %ld KiB", rss0, rss1);
    CU_ASSERT_TRUE(rss1 > 0 && rss1 - rss0 < RSS_BOUND_KIB(64 * 1024));
    svc_env_done(&s);
}

/* A capture whose host copies could not fit (10^12 elements per buffer, allowed on the device by
 * --max-memory 100T) is refused before anything is allocated, naming the limit and the fixes;
 * the service does not grow and keeps serving. */
static void test_capture_over_host_memory(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, "--max-memory 100T"), 0);
    int pid = svc_read_pid(&s);
    long rss0 = svc_rss_kib(pid);
    char args[1024];
    snprintf(args, sizeof(args), "capture workloads/pointwise_fusion.json --set n=1000000000000 --socket %s --quiet",
             s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 1);
    GR_ASSERT_CONTAINS(svc_out, "host_memory: capturing pointwise_fusion fused_vec needs about 24000.00 GB of "
                                "host memory (the CPU reference's copy of every buffer");
    GR_ASSERT_CONTAINS(svc_out, "--no-cpu-ref");
    char line[1024];
    capture_request(line, sizeof(line), svc_src("workloads/pointwise_fusion.json"),
                    "\"sets\": [\"n=1000000000000\"], \"cpu_reference\": false");
    json_t *j = call_once(s.sock, line, 10000);
    const char *const needles[] = {"needs about 8000.00 GB of host memory (two copies of the outputs", NULL};
    expect_error(j, "service", "host_memory", needles);
    json_decref(j);
    j = call_once(s.sock, STATUS_LINE, 5000);
    CU_ASSERT_PTR_NOT_NULL(j);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "graphs")), 0);
    json_decref(j);
    long rss1 = svc_rss_kib(pid);
    CU_ASSERT_TRUE(rss1 > 0 && rss1 - rss0 < RSS_BOUND_KIB(64 * 1024));
    svc_env_done(&s);
}

/* `graphrun capture BAD` with no service running fails in the client and starts none; a valid
 * workload does start one. */
static void test_bad_capture_starts_no_service(void) {
    svc_env s;
    svc_env_make(&s);
    char args[1024];
    const char *syntax = "{\"name\": \"b\",\n \"buffers\": [],\n \"ops\": [,]}";
    const char *syn = gr_test_tmpfile(".json", syntax, strlen(syntax));
    struct {
        const char *args;
        int rc;
        const char *needle;
    } cases[] = {
        {syn, 2, ":3:"},
        {"/dev/zero", 2, "/dev/zero: is a character device, not a regular file"},
        {"workloads/pointwise_fusion.json --set m=3", 2, "unknown param \"m\""},
        {"workloads/pointwise_fusion.json --set n=0", 2, "params.n"},
        {"workloads/pointwise_fusion.json --variant nope", 2, "--variant: pointwise_fusion has no variant \"nope\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(args, sizeof(args), "capture %s --socket %s --quiet", cases[i].args, s.sock);
        CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), cases[i].rc);
        GR_ASSERT_CONTAINS(svc_out, cases[i].needle);
        CU_ASSERT_PTR_NULL(strstr(svc_out, "started a replay service"));
        CU_ASSERT_FALSE(svc_lock_held(&s));
        struct stat st;
        CU_ASSERT_NOT_EQUAL(stat(s.sock, &st), 0);
    }
    /* valid input starts a service (which then says whether there is a device) */
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=10 --socket %s --quiet", s.sock);
    int rc = svc_grun(NULL, args, svc_out, sizeof(svc_out));
    CU_ASSERT_EQUAL(rc, gr_test_have_gpu() ? 0 : 3);
    GR_ASSERT_CONTAINS(svc_out, "started a replay service");
    CU_ASSERT_TRUE(svc_lock_held(&s));
    svc_env_done(&s);
}

/* ================================================================ hostile clients */

/* A client that sends requests and never reads: the service stops reading it once its replies
 * back up (the client's send blocks), its memory stays bounded, others are served at once, and
 * the replies come in order when the client reads at last. */
static void test_pipelining_backpressure(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, NULL), 0);
    int pid = svc_read_pid(&s);
    long rss0 = svc_rss_kib(pid);
    int fd = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    int blocked = 0;
    size_t sent_total = svc_flood_until_blocked(fd, 20, &blocked);
    printf("\n    pipelining client: %zu bytes sent before the service pushed back", sent_total);
    CU_ASSERT_TRUE(blocked);
    CU_ASSERT_TRUE(sent_total < ((size_t)16 << 20));
    /* others are served while it is held back */
    double t1 = gr_now_us();
    json_t *j = call_once(s.sock, STATUS_LINE, 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_TRUE((gr_now_us() - t1) / 1e3 < 1000);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "connections")), 2);
    json_t *lim = json_object_get(j, "limits");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(lim, "max_client_input_bytes")), (1 << 20) + 65536);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(lim, "max_client_output_bytes")), 1 << 20);
    json_decref(j);
    long rss1 = svc_rss_kib(pid);
    printf("; service RSS %ld -> %ld KiB", rss0, rss1);
    CU_ASSERT_TRUE(rss1 > 0 && rss1 - rss0 < RSS_BOUND_KIB(32 * 1024));
    /* reading now: the replies come in order, and the service goes on with the rest */
    static char buf[1 << 16];
    int in_order = 1;
    for (long want = 0; want < 3000; want++) {
        if (svc_raw_line(fd, buf, sizeof(buf), 5000) <= 0) {
            in_order = 0;
            break;
        }
        json_t *r = json_loads(buf, 0, NULL);
        if (!r || json_integer_value(json_object_get(r, "id")) != want || !json_is_true(json_object_get(r, "ok")))
            in_order = 0;
        json_decref(r);
        if (!in_order) break;
    }
    CU_ASSERT_TRUE(in_order);
    close(fd);
    j = call_once(s.sock, STATUS_LINE, 5000);
    CU_ASSERT_PTR_NOT_NULL(j);
    json_decref(j);
    svc_env_done(&s);
}

/* Junk of every kind on one connection: each line gets an error reply that is valid JSON naming
 * the field, and the connection goes on; a line over the limit closes only its connection. */
static void test_junk_requests(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, NULL), 0);
    int fd = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    struct {
        const char *line;
        size_t len; /* 0: strlen */
        const char *field, *needle;
    } cases[] = {
        /* invalid JSON is the line's fault, not one field's: field "" (PROTOCOL.md) */
        {"\x01\x02\xff\xfe garbage \xc3\x28", 0, "", "request:1:1: invalid JSON"},
        {"{\"schema_version\": 1, \"cmd\": \"status\"\0}", 40, "", "request:1:38: invalid JSON"},
        {"[1, 2, 3]", 0, "request", "expected a JSON object"},
        {"\"status\"", 0, "", "invalid JSON"},
        {"{}", 0, "schema_version", "missing"},
        {"{\"schema_version\": 1}", 0, "cmd", "missing"},
        {"{\"schema_version\": 1, \"cmd\": 7}", 0, "cmd", "expected a string"},
        {"{\"schema_version\": 1, \"cmd\": \"STATUS\"}", 0, "cmd", "unknown command"},
        {"{\"schema_version\": 1, \"cmd\": \"rm -rf /\"}", 0, "cmd", "unknown command"},
        {"{\"schema_version\": \"1\", \"cmd\": \"status\"}", 0, "schema_version", "expected an integer"},
        {"{\"schema_version\": 2, \"cmd\": \"status\"}", 0, "schema_version", "speaks schema_version 1"},
        {"{\"schema_version\": 1, \"cmd\": \"status\", \"cmd\": \"stop\"}", 0, "", "duplicate object key"},
        {"{\"schema_version\": 1, \"cmd\": \"status\", \"id\": {\"a\": 1}}", 0, "id", "expected a string"},
        {"{\"schema_version\": 1, \"cmd\": \"capture\"}", 0, "workload", "missing"},
        {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"rel/w.json\"}", 0, "workload", "absolute path"},
        {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": 3}", 0, "workload", "expected a string"},
        {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"/w\", \"sets\": \"n=1\"}", 0, "sets", "expected an array"},
        {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"/w\", \"sets\": [1]}", 0, "sets[0]", "expected a string"},
        {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"/w\", \"name\": \"../x\"}", 0, "name", "not a valid graph name"},
        {"{\"schema_version\": 1, \"cmd\": \"replay\", \"iters\": 1000000000}", 0, "iters", "outside [1, 100000000]"},
        {"{\"schema_version\": 1, \"cmd\": \"replay\", \"iters\": 1e300}", 0, "iters", "expected an integer"},
        {"{\"schema_version\": 1, \"cmd\": \"replay\", \"iters\": -1}", 0, "iters", "outside"},
        {"{\"schema_version\": 1, \"cmd\": \"replay\", \"batches\": true}", 0, "batches", "expected an integer"},
        {"{\"schema_version\": 1, \"cmd\": \"replay\", \"output_digest\": 1}", 0, "output_digest", "expected true or false"},
        {"{\"schema_version\": 1, \"cmd\": \"drop\"}", 0, "name", "missing"},
        {"{\"schema_version\": 1, \"cmd\": \"status\", \"rogue\": 1}", 0, "rogue", "unknown key for command status"},
    };
    static char buf[1 << 16];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = cases[i].len ? cases[i].len : strlen(cases[i].line);
        CU_ASSERT_EQUAL(svc_raw_send(fd, cases[i].line, n), 0);
        CU_ASSERT_EQUAL(svc_raw_send(fd, "\n", 1), 0);
        CU_ASSERT_TRUE_FATAL(svc_raw_line(fd, buf, sizeof(buf), 5000) > 0);
        json_t *j = json_loads(buf, 0, NULL); /* valid JSON whatever the junk was */
        if (!j) fprintf(stderr, "\n    case %zu: reply is not JSON: %s", i, buf);
        const char *const needles[] = {cases[i].needle, NULL};
        expect_error(j, "protocol", cases[i].field, needles);
        json_decref(j);
    }
    /* deep nesting */
    size_t deep = 100000;
    char *nest = malloc(deep + 2);
    memset(nest, '[', deep);
    nest[deep] = '\n';
    CU_ASSERT_EQUAL(svc_raw_send(fd, nest, deep + 1), 0);
    free(nest);
    CU_ASSERT_TRUE(svc_raw_line(fd, buf, sizeof(buf), 5000) > 0);
    GR_ASSERT_CONTAINS(buf, "maximum parsing depth");
    /* the connection still works */
    json_t *j = svc_raw_call(fd, STATUS_LINE, 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_TRUE(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
    close(fd);
    /* 2 MiB of binary without a newline: an error reply, that connection closes, others go on */
    fd = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    size_t huge = 2u << 20;
    char *junk = malloc(huge);
    for (size_t i = 0; i < huge; i++) junk[i] = (char)(i * 2654435761u >> 13) | 1; /* no '\n' (odd) */
    svc_raw_send(fd, junk, huge); /* fails part way once the service closes: fine */
    free(junk);
    CU_ASSERT_TRUE(svc_raw_line(fd, buf, sizeof(buf), 5000) > 0);
    GR_ASSERT_CONTAINS(buf, "request line longer than 1048576 bytes");
    long eof = svc_raw_line(fd, buf, sizeof(buf), 5000);
    CU_ASSERT_TRUE(eof == 0 || eof == -1);
    close(fd);
    j = call_once(s.sock, STATUS_LINE, 5000);
    CU_ASSERT_PTR_NOT_NULL(j);
    json_decref(j);
    svc_env_done(&s);
}

/* Silent clients, a client that sent half a request, and one killed mid-request do not hold up
 * anyone; their connections are freed. */
static void test_silent_and_killed_clients(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, NULL), 0);
    int silent[10];
    for (int i = 0; i < 10; i++) silent[i] = svc_raw_connect(s.sock);
    int half = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(half >= 0);
    svc_raw_send(half, "{\"schema_version\": 1, \"cmd\": \"sta", 33);
    pid_t child = fork();
    if (child == 0) {
        int fd = svc_raw_connect(s.sock);
        if (fd >= 0) svc_raw_send(fd, "{\"schema_version\": 1, \"cmd\": \"capt", 34);
        for (;;) pause();
    }
    CU_ASSERT_TRUE_FATAL(child > 0);
    usleep(100000);
    double t0 = gr_now_us();
    json_t *j = call_once(s.sock, STATUS_LINE, 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_TRUE((gr_now_us() - t0) / 1e3 < 500);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "connections")), 13);
    json_decref(j);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    for (int i = 0; i < 10; i++)
        if (silent[i] >= 0) close(silent[i]);
    close(half);
    /* all freed: only the asking connection is left */
    int freed = 0;
    for (int tries = 0; tries < 100 && !freed; tries++) {
        j = call_once(s.sock, STATUS_LINE, 5000);
        freed = j && json_integer_value(json_object_get(j, "connections")) == 1;
        json_decref(j);
        if (!freed) usleep(20000);
    }
    CU_ASSERT_TRUE(freed);
    svc_env_done(&s);
}

/* A hundred clients at once against --max-clients 16: sixteen are served, the others get an
 * error reply and are closed; the service is fine afterwards. */
static void test_hundred_clients(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, NULL, "--max-clients 16"), 0);
    int pid = svc_read_pid(&s);
    long rss0 = svc_rss_kib(pid);
    int fds[100];
    for (int i = 0; i < 100; i++) fds[i] = svc_raw_connect(s.sock);
    int served = 0, refused = 0, other = 0;
    static char buf[1 << 16];
    const char *req = STATUS_LINE "\n";
    for (int i = 0; i < 100; i++) {
        if (fds[i] < 0) {
            refused++; /* the backlog was full: refused by the kernel, which is bounded too */
            continue;
        }
        svc_raw_send(fds[i], req, strlen(req)); /* may fail on a refused connection */
    }
    for (int i = 0; i < 100; i++) {
        if (fds[i] < 0) continue;
        long n = svc_raw_line(fds[i], buf, sizeof(buf), 5000);
        if (n > 0 && strstr(buf, "\"ok\":true")) served++;
        else if (n > 0 && strstr(buf, "too many connections (16, --max-clients)")) refused++;
        else other++;
    }
    printf("\n    100 clients: %d served, %d refused, %d other", served, refused, other);
    CU_ASSERT_EQUAL(served, 16);
    CU_ASSERT_EQUAL(refused, 84);
    CU_ASSERT_EQUAL(other, 0);
    for (int i = 0; i < 100; i++)
        if (fds[i] >= 0) close(fds[i]);
    int back = 0;
    for (int tries = 0; tries < 100 && !back; tries++) {
        json_t *j = call_once(s.sock, STATUS_LINE, 5000);
        back = j && json_integer_value(json_object_get(j, "connections")) == 1;
        json_decref(j);
        if (!back) usleep(20000);
    }
    CU_ASSERT_TRUE(back);
    long rss1 = svc_rss_kib(pid);
    CU_ASSERT_TRUE(rss1 > 0 && rss1 - rss0 < RSS_BOUND_KIB(32 * 1024));
    char *log = svc_slurp(s.log);
    GR_ASSERT_CONTAINS(log, "too many connections");
    free(log);
    svc_env_done(&s);
}

/* ================================================================ stop while a request runs */

#define HANG_LINE "{\"schema_version\": 1, \"cmd\": \"debug_sleep\", \"ms\": 600000, \"hang\": true, \"id\": 9}\n"

/* The reply a job's client gets when the service stops under it. */
static void expect_cancelled(int fd, const char *needle) {
    json_t *done = svc_raw_final(fd, 10000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(done);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(done, "id")), 9);
    SVC_ASSERT_STR(done, svc_err_code(done), "service");
    GR_ASSERT_CONTAINS(svc_err_msg(done) ? svc_err_msg(done) : "", "cancelled: the service is stopping");
    GR_ASSERT_CONTAINS(svc_err_msg(done) ? svc_err_msg(done) : "", needle);
    json_decref(done);
}

/* `graphrun stop` while the running request ignores its cancellation (as a CPU reference or a
 * long kernel would): the client gets an error reply, stop returns, the process is gone within
 * about 2 s and a fresh service can start. A cancellable request is cancelled and freed. */
static void test_stop_with_stuck_request(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, "GRAPHRUN_SERVICE_TEST_HOOKS=1", NULL), 0);
    int pid = svc_read_pid(&s);
    int a = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(a >= 0);
    CU_ASSERT_EQUAL(svc_raw_send(a, HANG_LINE, strlen(HANG_LINE)), 0);
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 1, 0, 5000));
    /* status still answers while it hangs */
    json_t *j = call_once(s.sock, STATUS_LINE, 2000);
    CU_ASSERT_PTR_NOT_NULL(j);
    json_decref(j);
    char args[256];
    snprintf(args, sizeof(args), "stop --socket %s", s.sock);
    double t0 = gr_now_us();
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "stopped");
    CU_ASSERT_TRUE(svc_wait_gone(pid, 5));
    double secs = (gr_now_us() - t0) / 1e6;
    printf("\n    stop with a stuck request: %.2f s", secs);
    CU_ASSERT_TRUE(secs < 3);
    expect_cancelled(a, "did not stop within 1.5 s and was abandoned");
    close(a);
    CU_ASSERT_FALSE(svc_lock_held(&s));
    char *log = svc_slurp(s.log);
    GR_ASSERT_CONTAINS(log, "did not stop within 1.5 s of the cancellation");
    GR_ASSERT_CONTAINS(log, "without waiting for its running request");
    free(log);
    /* a fresh service starts on the same socket; a cancellable request stops cleanly */
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, "GRAPHRUN_SERVICE_TEST_HOOKS=1", NULL), 0);
    pid = svc_read_pid(&s);
    a = svc_raw_connect(s.sock);
    const char *sleep = "{\"schema_version\": 1, \"cmd\": \"debug_sleep\", \"ms\": 600000, \"id\": 9}\n";
    CU_ASSERT_EQUAL(svc_raw_send(a, sleep, strlen(sleep)), 0);
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 1, 0, 5000));
    t0 = gr_now_us();
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    CU_ASSERT_TRUE(svc_wait_gone(pid, 5));
    CU_ASSERT_TRUE((gr_now_us() - t0) / 1e6 < 1.5);
    expect_cancelled(a, "cancelled: the service is stopping");
    close(a);
    log = svc_slurp(s.log);
    CU_ASSERT_EQUAL(svc_count_of(log, "did not stop within 1.5 s of the cancellation"), 1); /* the first only */
    GR_ASSERT_CONTAINS(log, "debug_sleep 600000 ms: cancelled: the service is stopping after");
    free(log);
    svc_env_done(&s);
}

/* SIGTERM while a request hangs: the same, for a background service. */
static void test_sigterm_with_stuck_request(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, "GRAPHRUN_SERVICE_TEST_HOOKS=1", NULL), 0);
    int pid = svc_read_pid(&s);
    int a = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(a >= 0);
    CU_ASSERT_EQUAL(svc_raw_send(a, HANG_LINE, strlen(HANG_LINE)), 0);
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 1, 0, 5000));
    double t0 = gr_now_us();
    CU_ASSERT_EQUAL(kill(pid, SIGTERM), 0);
    CU_ASSERT_TRUE(svc_wait_gone(pid, 5));
    CU_ASSERT_TRUE((gr_now_us() - t0) / 1e6 < 3);
    expect_cancelled(a, "signal 15");
    close(a);
    CU_ASSERT_FALSE(svc_lock_held(&s));
    struct stat st;
    CU_ASSERT_NOT_EQUAL(stat(s.sock, &st), 0);
    CU_ASSERT_TRUE(svc_wait_log(s.log, "stopping: signal 15", 2000));
    svc_env_done(&s);
}

/* Requests that follow a stop: on the same connection, status is answered and GPU work is
 * refused as "stopping"; new connections find no service. */
static void test_requests_after_stop(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL_FATAL(svc_start_service(&s, "GRAPHRUN_SERVICE_TEST_HOOKS=1", NULL), 0);
    int pid = svc_read_pid(&s);
    int a = svc_raw_connect(s.sock), b = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(a >= 0 && b >= 0);
    CU_ASSERT_EQUAL(svc_raw_send(a, HANG_LINE, strlen(HANG_LINE)), 0);
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 1, 0, 5000));
    const char *burst = "{\"schema_version\": 1, \"cmd\": \"stop\", \"id\": 1}\n"
                        "{\"schema_version\": 1, \"cmd\": \"status\", \"id\": 2}\n"
                        "{\"schema_version\": 1, \"cmd\": \"drop\", \"name\": \"x\", \"id\": 3}\n"
                        "{\"schema_version\": 1, \"cmd\": \"stop\", \"id\": 4}\n";
    CU_ASSERT_EQUAL(svc_raw_send(b, burst, strlen(burst)), 0);
    static char buf[1 << 16];
    for (int k = 1; k <= 4; k++) {
        CU_ASSERT_TRUE_FATAL(svc_raw_line(b, buf, sizeof(buf), 5000) > 0);
        json_t *j = json_loads(buf, 0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "id")), k);
        if (k == 3) {
            SVC_ASSERT_STR(j, svc_err_code(j), "service");
            GR_ASSERT_CONTAINS(svc_err_msg(j) ? svc_err_msg(j) : "", "the service is stopping");
        } else {
            CU_ASSERT_TRUE(json_is_true(json_object_get(j, "ok")));
        }
        json_decref(j);
    }
    /* a new connection finds nothing: the socket went with the stop */
    CU_ASSERT_EQUAL(svc_raw_connect(s.sock), -1);
    CU_ASSERT_TRUE(svc_wait_gone(pid, 5));
    expect_cancelled(a, "abandoned");
    close(a);
    close(b);
    char args[256];
    snprintf(args, sizeof(args), "status --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 1);
    GR_ASSERT_CONTAINS(svc_out, "no replay service is running here");
    svc_env_done(&s);
}

/* ================================================================ the socket's directory */

static void test_socket_directory(void) {
    svc_env s;
    svc_env_make(&s);
    char args[512], path[256];
    /* writable by others: refused, naming the directory and its mode */
    snprintf(path, sizeof(path), "%s/open", s.dir);
    CU_ASSERT_EQUAL(mkdir(path, 0700), 0);
    CU_ASSERT_EQUAL(chmod(path, 0777), 0);
    snprintf(args, sizeof(args), "serve --foreground --socket %s/open/s.sock", s.dir);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "--socket: the socket's directory");
    GR_ASSERT_CONTAINS(svc_out, path);
    GR_ASSERT_CONTAINS(svc_out, "mode 0777");
    CU_ASSERT_EQUAL(chmod(path, 0775), 0); /* group-writable too */
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "mode 0775");
    /* /tmp itself (1777) */
    CU_ASSERT_EQUAL(svc_grun(NULL, "serve --foreground --socket /tmp/gr_badinput_never.sock", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "the socket's directory /tmp has owner uid 0 and mode 1777");
    struct stat st;
    CU_ASSERT_NOT_EQUAL(stat("/tmp/gr_badinput_never.sock", &st), 0);
    /* a capture that would auto-start there says why none started */
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --socket %s/open/s.sock", s.dir);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "the replay service did not start");
    GR_ASSERT_CONTAINS(svc_out, "mode 0775");
    /* a missing directory is created private */
    snprintf(path, sizeof(path), "%s/made", s.dir);
    snprintf(args, sizeof(args), "serve --socket %s/made/s.sock", s.dir);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0700);
    snprintf(args, sizeof(args), "stop --socket %s/made/s.sock", s.dir);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    /* a directory only you can write (0755) is used as it is */
    snprintf(path, sizeof(path), "%s/shared", s.dir);
    CU_ASSERT_EQUAL(mkdir(path, 0755), 0);
    CU_ASSERT_EQUAL(chmod(path, 0755), 0);
    snprintf(args, sizeof(args), "serve --socket %s/shared/s.sock", s.dir);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    snprintf(args, sizeof(args), "%s/shared/s.sock", s.dir);
    CU_ASSERT_EQUAL(stat(args, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
    snprintf(args, sizeof(args), "stop --socket %s/shared/s.sock", s.dir);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    /* the help says so */
    CU_ASSERT_EQUAL(svc_grun(NULL, "serve --help", svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "a --socket directory is created 0700 when missing, and refused when");
    svc_env_done(&s);
}

static CU_TestInfo badinput_tests[] = {
    {"bad workload files: field and place", test_bad_workload_files},
    {"bad capture starts no service", test_bad_capture_starts_no_service},
    {"capture over the host memory", test_capture_over_host_memory},
    {"pipelining client gets backpressure", test_pipelining_backpressure},
    {"junk requests", test_junk_requests},
    {"silent and killed clients", test_silent_and_killed_clients},
    {"a hundred clients at once", test_hundred_clients},
    {"stop with a stuck request", test_stop_with_stuck_request},
    {"SIGTERM with a stuck request", test_sigterm_with_stuck_request},
    {"requests after stop", test_requests_after_stop},
    {"socket directory permissions", test_socket_directory},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_badinput_service_suites[] = {{"service_badinput", badinput_tests, 0},
                                                    {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_badinput_service_suites)
