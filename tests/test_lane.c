/* Lanes without a GPU: the doorbell between two processes over a real shared-memory segment (a
 * forked "service" plays the lane thread's side with gr_lane_await_request / gr_lane_publish,
 * the parent is the client's gr_lane_step), in both the spinning and the futex-sleeping modes;
 * a failed step, a lane closed under a waiting client, a step nobody answers, a stopped lane
 * thread; the segment layout check; and the lane_open / lane_close request fields. The lane on
 * a held graph runs in gpu_service and python/tests/test_gpu.py. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/timer.h"
#include "replay/lane.h"
#include "replay/protocol.h"
#include "service_util.h"
#include "tests.h"

#define SEG_BYTES (3 * 4096)
#define IN_OFF 4096
#define OUT_OFF 8192

static void *segment(void) {
    void *m = mmap(NULL, SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CU_ASSERT_FATAL(m != MAP_FAILED);
    memset(m, 0, SEG_BYTES);
    return m;
}

/* The service's side: out = 2 * in + 1 per step; `fail_at` fails that step with bad input;
 * a negative input ends the loop (the lane closes). */
static void serve_loop(void *m, double spin_us, uint64_t fail_at) {
    gr_lane_ctl *c = m;
    int stop = 0;
    uint64_t done = 0, seq;
    while (gr_lane_await_request(c, done, spin_us, &stop, &seq)) {
        double t0 = gr_now_us();
        long long x = *(volatile long long *)((char *)m + IN_OFF);
        if (x < 0) {
            gr_lane_mark_closed(c, "closed: the test's service ended the lane");
            return;
        }
        if (seq == fail_at) {
            gr_lane_publish(c, seq, GR_ERR_INPUT, "inputs[0]: step refused by the test", 0, 0, 0);
        } else {
            *(volatile long long *)((char *)m + OUT_OFF) = 2 * x + 1;
            gr_lane_publish(c, seq, 0, NULL, 1.5, gr_now_us() - t0, 0);
        }
        done = seq;
    }
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* N steps across processes; returns the median round trip in us, or -1 on a wrong answer. */
static double round_trips(double server_spin, double client_spin, int n) {
    void *m = segment();
    gr_lane_ctl *c = m;
    gr_lane_ctl_init(c, 7);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        serve_loop(m, server_spin, 0);
        _exit(0);
    }
    double *t = calloc((size_t)n, sizeof(double));
    int bad = 0;
    for (int i = 0; i < n && !bad; i++) {
        if (server_spin == 0 && i % 50 == 0) usleep(2000); /* the server sleeps on its futex */
        *(volatile long long *)((char *)m + IN_OFF) = i;
        gr_error e;
        gr_error_clear(&e);
        double t0 = gr_now_us();
        gr_status st = gr_lane_step(c, client_spin, 5000, &e);
        t[i] = gr_now_us() - t0;
        if (st != GR_OK) {
            fprintf(stderr, "step %d: %s\n", i, e.msg);
            bad = 1;
        } else if (*(volatile long long *)((char *)m + OUT_OFF) != 2LL * i + 1) {
            fprintf(stderr, "step %d: output %lld\n", i, *(volatile long long *)((char *)m + OUT_OFF));
            bad = 1;
        }
    }
    CU_ASSERT_EQUAL(c->steps, bad ? c->steps : (uint64_t)n);
    CU_ASSERT_EQUAL(c->graph_us, 1.5);
    *(volatile long long *)((char *)m + IN_OFF) = -1;
    gr_error e;
    gr_error_clear(&e);
    gr_status last = gr_lane_step(c, client_spin, 5000, &e); /* the service closes the lane */
    CU_ASSERT_EQUAL(last, GR_ERR_SERVICE);
    GR_ASSERT_CONTAINS(e.msg, "closed during the step: closed: the test's service ended the lane");
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    qsort(t, (size_t)n, sizeof(double), cmp_d);
    double med = t[n / 2];
    printf("\n    lane doorbell, server spin %.0f us, client spin %.0f us: median %.2f us, p90 %.2f "
           "us over %d steps (this CPU machine, two processes)",
           server_spin, client_spin, med, t[(n * 9) / 10], n);
    free(t);
    munmap(m, SEG_BYTES);
    return bad ? -1 : med;
}

static void test_doorbell_spinning(void) {
    CU_ASSERT(round_trips(1e6, 1e6, 5000) > 0);
}

static void test_doorbell_sleeping(void) {
    /* the service sleeps on its futex before most steps and the client on its own: every wake
     * path is used; a lost wake would cost 1 ms a step, a missed one the 5 s timeout */
    double med = round_trips(0, 0, 600);
    CU_ASSERT(med > 0);
    CU_ASSERT(med < 1000);
}

static void test_failed_step(void) {
    void *m = segment();
    gr_lane_ctl *c = m;
    gr_lane_ctl_init(c, 3);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        serve_loop(m, 1e5, 2);
        _exit(0);
    }
    gr_error e;
    *(volatile long long *)((char *)m + IN_OFF) = 5;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_step(c, 1e5, 5000, &e), GR_OK);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_step(c, 1e5, 5000, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "lane 3 step 2: inputs[0]: step refused by the test");
    gr_error_clear(&e); /* the lane goes on after a failed step */
    *(volatile long long *)((char *)m + IN_OFF) = 20;
    CU_ASSERT_EQUAL(gr_lane_step(c, 1e5, 5000, &e), GR_OK);
    CU_ASSERT_EQUAL(*(volatile long long *)((char *)m + OUT_OFF), 41);
    CU_ASSERT_EQUAL(c->steps, 2);
    *(volatile long long *)((char *)m + IN_OFF) = -1;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_step(c, 1e5, 5000, &e), GR_ERR_SERVICE);
    waitpid(pid, NULL, 0);
    /* a closed lane refuses the next step at once, with its reason */
    gr_error_clear(&e);
    double t0 = gr_now_us();
    CU_ASSERT_EQUAL(gr_lane_step(c, 1e5, 5000, &e), GR_ERR_SERVICE);
    CU_ASSERT(gr_now_us() - t0 < 1e5);
    GR_ASSERT_CONTAINS(e.msg, "lane 3 is closed: closed: the test's service ended the lane");
    munmap(m, SEG_BYTES);
}

static void test_unanswered_and_garbage(void) {
    void *m = segment();
    gr_lane_ctl *c = m;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_step(c, 0, 100, &e), GR_ERR_PROTOCOL); /* never opened */
    GR_ASSERT_CONTAINS(e.msg, "not a lane's control block");
    gr_lane_ctl_init(c, 9);
    gr_error_clear(&e);
    double t0 = gr_now_us();
    CU_ASSERT_EQUAL(gr_lane_step(c, 1000, 60, &e), GR_ERR_SERVICE);
    double took = gr_now_us() - t0;
    CU_ASSERT(took >= 60e3 && took < 2e6);
    GR_ASSERT_CONTAINS(e.msg, "lane 9: step 1 not answered within 60 ms");
    munmap(m, SEG_BYTES);
}

/* A service killed outright never marks its lanes closed: a client waiting without a timeout
 * notices its process is gone (the block's service_pid) instead of waiting forever. */
static void test_dead_service(void) {
    void *m = segment();
    gr_lane_ctl *c = m;
    gr_lane_ctl_init(c, 4);
    CU_ASSERT_EQUAL(c->service_pid, (uint32_t)getpid());
    pid_t gone = fork();
    CU_ASSERT_FATAL(gone >= 0);
    if (gone == 0) _exit(0);
    waitpid(gone, NULL, 0); /* reaped: its pid names no process now */
    c->service_pid = (uint32_t)gone;
    gr_error e;
    gr_error_clear(&e);
    double t0 = gr_now_us();
    CU_ASSERT_EQUAL(gr_lane_step(c, 0, -1, &e), GR_ERR_SERVICE);
    CU_ASSERT(gr_now_us() - t0 < 2e6);
    GR_ASSERT_CONTAINS(e.msg, "is gone: step 1 was not answered");
    munmap(m, SEG_BYTES);
}

/* A step whose call gave up (timeout) is still pending in the service: the next call waits for
 * it and then rings its own, so the outputs it returns are its own step's, not the old one's. */
static void test_pending_step_first(void) {
    void *m = segment();
    gr_lane_ctl *c = m;
    gr_lane_ctl_init(c, 6);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        int stop = 0;
        uint64_t done = 0, seq;
        while (gr_lane_await_request(c, done, 1e5, &stop, &seq)) {
            usleep(150000); /* slow: the first call gives up before this ends */
            long long x = *(volatile long long *)((char *)m + IN_OFF);
            if (x < 0) break;
            *(volatile long long *)((char *)m + OUT_OFF) = 2 * x + 1 + 1000 * (long long)seq;
            gr_lane_publish(c, seq, 0, NULL, 0, 0, 0);
            done = seq;
        }
        _exit(0);
    }
    gr_error e;
    *(volatile long long *)((char *)m + IN_OFF) = 5;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_step(c, 0, 20, &e), GR_ERR_SERVICE); /* gives up on step 1 */
    GR_ASSERT_CONTAINS(e.msg, "step 1 not answered within 20 ms");
    *(volatile long long *)((char *)m + IN_OFF) = 7;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_step(c, 0, 5000, &e), GR_OK);
    CU_ASSERT_EQUAL(c->done_seq, 2);
    CU_ASSERT_EQUAL(*(volatile long long *)((char *)m + OUT_OFF), 2 * 7 + 1 + 2000); /* step 2's */
    *(volatile long long *)((char *)m + IN_OFF) = -1;
    c->req_seq = 3;
    gr_lane_wake_server(c);
    waitpid(pid, NULL, 0);
    munmap(m, SEG_BYTES);
}

typedef struct waiter {
    gr_lane_ctl *c;
    int stop;
    int rc;
    double ended_us;
} waiter;

static void *await_thread(void *arg) {
    waiter *w = arg;
    uint64_t seq = 0;
    w->rc = gr_lane_await_request(w->c, 0, 0, &w->stop, &seq);
    w->ended_us = gr_now_us();
    return NULL;
}

static void test_stop_wakes_the_server(void) {
    void *m = segment();
    waiter w = {m, 0, -1, 0};
    gr_lane_ctl_init(w.c, 1);
    pthread_t th;
    CU_ASSERT_FATAL(pthread_create(&th, NULL, await_thread, &w) == 0);
    usleep(20000); /* asleep on its futex by now */
    CU_ASSERT_EQUAL(__atomic_load_n(&w.c->server_waiting, __ATOMIC_ACQUIRE), 1);
    double t0 = gr_now_us();
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    gr_lane_wake_server(w.c);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(w.rc, 0);
    CU_ASSERT(w.ended_us - t0 < 50e3);
    munmap(m, SEG_BYTES);
}

static void test_layout(void) {
    gr_error e;
    gr_lane_region ok[] = {{"inputs[0]", "x", 4096, 1000}, {"outputs[0]", "y", 5120, 1000}};
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_check_layout(8192, ok, 2, &e), GR_OK);
    gr_lane_region bad[] = {{"inputs[0]", "x", 100, 8},       /* in the control block */
                            {"inputs[1]", "w", 4096, 2048},   /* fine */
                            {"outputs[0]", "y", 5000, 100},   /* overlaps inputs[1] */
                            {"outputs[1]", "z", 8000, 400}};  /* past the end */
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_lane_check_layout(8192, bad, 4, &e), GR_ERR_INPUT);
    CU_ASSERT_STRING_EQUAL(e.path, "inputs[0]");
    GR_ASSERT_CONTAINS(e.msg, "inputs[0]: offset 100 of buffer \"x\" lies in the lane's control block");
    GR_ASSERT_CONTAINS(e.msg, "outputs[0]: buffer \"y\" [5000, 5100) overlaps inputs[1]");
    GR_ASSERT_CONTAINS(e.msg, "outputs[1]: buffer \"z\" (400 bytes at offset 8000) runs past the end "
                              "of the segment (8192 bytes): make the segment at least 8400 bytes");
}

static void test_request_fields(void) {
    gr_request r;
    gr_error e;
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"lane_open\",\"shm\":\"/lane1\",\"name\":\"g\","
                          "\"inputs\":[{\"buffer\":\"x\",\"offset\":4096}],"
                          "\"outputs\":[{\"buffer\":\"y\",\"offset\":8192}],\"batch\":3}",
                          &r, &e),
                    GR_OK);
    CU_ASSERT_EQUAL(r.cmd, GR_CMD_LANE_OPEN);
    CU_ASSERT_STRING_EQUAL(r.shm, "/lane1");
    CU_ASSERT_EQUAL(r.ninputs, 1);
    CU_ASSERT_EQUAL(r.inputs[0].offset, 4096);
    CU_ASSERT_STRING_EQUAL(r.outputs[0].buffer, "y");
    CU_ASSERT_EQUAL(r.spin_us, 2000); /* the default */
    CU_ASSERT_EQUAL(r.batch, 3);
    CU_ASSERT(gr_cmd_is_queued(GR_CMD_LANE_OPEN));
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"lane_open\",\"shm\":\"lane\",\"spin_us\":-1,"
                          "\"inputs\":[{\"buffer\":\"x\",\"file\":\"/x.npy\",\"offset\":4096},"
                          "{\"buffer\":\"w\"},{\"buffer\":\"v\",\"offset\":4096,\"shm\":\"/s\"}]}",
                          &r, &e),
                    GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "shm: expected a shared-memory name \"/name\"");
    GR_ASSERT_CONTAINS(e.msg, "spin_us: -1 is outside [0, 1000000]");
    GR_ASSERT_CONTAINS(e.msg, "inputs[0].file: a lane's buffers live in its one segment");
    GR_ASSERT_CONTAINS(e.msg, "inputs[1]: missing \"offset\"");
    GR_ASSERT_CONTAINS(e.msg, "inputs[2].shm: a lane's buffers live in its one segment");
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"lane_open\"}", &r, &e), GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "shm: missing (command lane_open needs it)");
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"lane_close\"}", &r, &e), GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "lane: missing (command lane_close needs it)");
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"lane_close\",\"lane\":4}", &r, &e), GR_OK);
    CU_ASSERT_EQUAL(r.lane, 4);
    gr_request_clear(&r);
    /* a served replay's entries keep their own rules */
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"replay\",\"inputs\":[{\"buffer\":\"x\","
                          "\"offset\":4096}]}",
                          &r, &e),
                    GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "inputs[0]: give exactly one of \"file\" and \"shm\"");
    gr_request_clear(&r);
}

static CU_TestInfo lane_tests[] = {
    {"doorbell across processes, both sides spinning", test_doorbell_spinning},
    {"doorbell across processes, both sides sleeping on futexes", test_doorbell_sleeping},
    {"a failed step, then a lane closed by the service", test_failed_step},
    {"a block never opened, a step nobody answers", test_unanswered_and_garbage},
    {"stopping a lane thread wakes it", test_stop_wakes_the_server},
    {"a service process that is gone fails a waiting step", test_dead_service},
    {"a step given up on is waited for before the next", test_pending_step_first},
    {"segment layout: control block, overlaps, the end", test_layout},
    {"lane_open / lane_close request fields", test_request_fields},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_lane_suites[] = {{"lane", lane_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_lane_suites)
