/* The CPU references' parallel loop (core/parallel.h): every index once, in fixed chunks, the first
 * error stops it; and the decode references (gate_up, down, the unfused GEMMs) give the same
 * bytes on one CPU as on all of them (a child process pinned to one CPU computes the same step). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/hoststate.h"
#include "core/parallel.h"
#include "core/workload.h"
#include "kernels/registry.h"
#include "tests.h"

typedef struct cover {
    atomic_int hits[1000];
    atomic_int bad_chunk;
} cover;

static int mark(void *ctx, int64_t chunk, int64_t b, int64_t e) {
    cover *c = ctx;
    if (b != chunk * 7 || e - b > 7 || e <= b) atomic_store(&c->bad_chunk, 1);
    for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
    return 0;
}

static int fail_at(void *ctx, int64_t chunk, int64_t b, int64_t e) {
    (void)b, (void)e;
    atomic_int *seen = ctx;
    atomic_fetch_add(seen, 1);
    return chunk == 3 ? 42 : 0;
}

static void test_every_index_once(void) {
    static cover c;
    memset(&c, 0, sizeof(c));
    CU_ASSERT_EQUAL(gr_parallel_for(1000, 7, mark, &c), 0);
    int ok = 1;
    for (int i = 0; i < 1000; i++) ok &= atomic_load(&c.hits[i]) == 1;
    CU_ASSERT_TRUE(ok);
    CU_ASSERT_EQUAL(atomic_load(&c.bad_chunk), 0);
    CU_ASSERT_EQUAL(gr_parallel_for(0, 7, mark, &c), 0); /* nothing to do */
    atomic_int seen = 0;
    CU_ASSERT_EQUAL(gr_parallel_for(100, 1, fail_at, &seen), 42);
    CU_ASSERT_TRUE(atomic_load(&seen) >= 4); /* chunk 3 ran; later ones may have been skipped */
    CU_ASSERT_TRUE(gr_parallel_threads() >= 1 && gr_parallel_threads() <= 64);
    printf("\n    %d threads here", gr_parallel_threads());
}

/* x after one reference step of decode_step `variant` (small sizes), malloc'd; *bytes set. */
static void *decode_x(const char *variant, const char *dtype, size_t *bytes) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(gr_test_src("workloads/decode_step.json"), &wl, &e) != GR_OK) return NULL;
    char dt[32];
    snprintf(dt, sizeof(dt), "dtype=%s", dtype);
    const char *sets[] = {dt, "L=3", "d=256", "f=1024", "B=3", "gemv_max_b=2"};
    for (int i = 0; i < 6; i++) gr_workload_set(wl, sets[i], &e);
    gr_plan *p = NULL;
    gr_target t = gr_target_default();
    gr_status st = gr_plan_resolve(wl, variant, &t, gr_kernel_find, gr_kernel_all_names, &p, &e);
    gr_workload_destroy(wl);
    if (st != GR_OK) {
        fprintf(stderr, "\n    %s", e.msg);
        return NULL;
    }
    int b = -1;
    for (int k = 0; k < p->nbufs; k++)
        if (!strcmp(p->bufs[k].name, "x")) b = k;
    gr_hoststate *hs = NULL;
    void *x = NULL;
    if (b >= 0 && gr_hoststate_create(p, &hs, &e) == GR_OK && gr_hoststate_fill(hs, &e) == GR_OK &&
        gr_reference_step(p, hs, &e) == GR_OK) {
        *bytes = p->bufs[b].bytes;
        x = malloc(*bytes);
        if (x) memcpy(x, hs->hptr[b], *bytes);
    } else {
        fprintf(stderr, "\n    %s", e.msg);
    }
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
    return x;
}

/* The same step in a child pinned to one CPU (one thread) and here: the same bytes. */
static void same_on_one_cpu(const char *variant, const char *dtype) {
    size_t n = 0;
    void *here = decode_x(variant, dtype, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(here);
    int fd[2];
    CU_ASSERT_FATAL(pipe(fd) == 0);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
        if (sched_setaffinity(0, sizeof(one), &one) != 0 || gr_parallel_threads() != 1) _exit(3);
        size_t m = 0;
        void *x = decode_x(variant, dtype, &m);
        if (!x || m != n) _exit(4);
        size_t off = 0;
        while (off < m) {
            ssize_t w = write(fd[1], (char *)x + off, m - off);
            if (w <= 0) _exit(5);
            off += (size_t)w;
        }
        _exit(0);
    }
    close(fd[1]);
    char *there = malloc(n);
    size_t got = 0;
    ssize_t r;
    while (got < n && (r = read(fd[0], there + got, n - got)) > 0) got += (size_t)r;
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_EQUAL(got, n);
    CU_ASSERT_TRUE(got == n && memcmp(here, there, n) == 0);
    double s = 0;
    for (size_t i = 0; i < n / 4; i++) s += ((unsigned char *)here)[i];
    CU_ASSERT_TRUE(s > 0); /* not all zeros */
    printf("\n    decode %s %s, %d threads here vs 1 pinned: %s", variant, dtype,
           gr_parallel_threads(), got == n && memcmp(here, there, n) == 0 ? "same bytes" : "DIFFERENT");
    free(here);
    free(there);
}

static void test_decode_references_thread_independent(void) {
    same_on_one_cpu("fused", "fp32");   /* B = 3 > gemv_max_b = 2: the cuBLAS path's reference */
    same_on_one_cpu("fused", "bf16");
    same_on_one_cpu("unfused", "fp32"); /* the GEMM reference */
}

static CU_TestInfo parallel_tests[] = {
    {"every index once, fixed chunks, the first error", test_every_index_once},
    {"decode references: the same bytes on one CPU", test_decode_references_thread_independent},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_parallel_suites[] = {{"parallel", parallel_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_parallel_suites)
