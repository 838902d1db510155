/* The CPU references' parallel loop (core/parallel.h): every index once, in fixed chunks, the first
 * error stops it; and the references that use it (the host fill, decode's gate_up/down, the GEMM,
 * pointwise, DLRM's linear layers) give the same bytes on one CPU as on all of them (a child
 * process pinned to one CPU computes the same step). */
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

/* Output buffer `out` after one reference step of a bundled workload's variant with `sets`,
 * malloc'd; *bytes set. */
static void *ref_out(const char *workload, const char *variant, const char *const *sets, int nsets,
                     const char *out, size_t *bytes) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(gr_test_src(workload), &wl, &e) != GR_OK) return NULL;
    for (int i = 0; i < nsets; i++) gr_workload_set(wl, sets[i], &e);
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
        if (!strcmp(p->bufs[k].name, out)) b = k;
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
static void same_on_one_cpu(const char *workload, const char *variant, const char *const *sets,
                            int nsets, const char *out) {
    size_t n = 0;
    void *here = ref_out(workload, variant, sets, nsets, out, &n);
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
        void *x = ref_out(workload, variant, sets, nsets, out, &m);
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
    int same = got == n && memcmp(here, there, n) == 0;
    CU_ASSERT_TRUE(same);
    size_t nonzero = 0;
    for (size_t i = 0; i < n; i++) nonzero += ((unsigned char *)here)[i] != 0;
    CU_ASSERT_TRUE(nonzero > n / 4); /* not all zeros */
    printf("\n    %s %s -> %s, %d threads here vs 1 pinned: %s", workload, variant, out,
           gr_parallel_threads(), same ? "same bytes" : "DIFFERENT");
    free(here);
    free(there);
}

static void test_references_thread_independent(void) {
    const char *dec32[] = {"dtype=fp32", "L=3", "d=256", "f=1024", "B=3", "gemv_max_b=2"};
    const char *dec16[] = {"dtype=bf16", "L=3", "d=256", "f=1024", "B=3", "gemv_max_b=2"};
    /* B = 3 > gemv_max_b = 2: the per-layer ops (their reference is the same on either path) */
    same_on_one_cpu("workloads/decode_step.json", "fused", dec32, 6, "x");
    same_on_one_cpu("workloads/decode_step.json", "fused", dec16, 6, "x");
    same_on_one_cpu("workloads/decode_step.json", "unfused", dec32, 6, "x"); /* the GEMM reference */
    const char *pw[] = {"n=300000", "act=gelu"}; /* 5 chunks of the fill and of the reference */
    same_on_one_cpu("workloads/pointwise_fusion.json", "unfused", pw, 2, "y");
    const char *dl[] = {"B=64"};
    same_on_one_cpu("workloads/dlrm_small.json", "unfused", dl, 1, "y");
}

static CU_TestInfo parallel_tests[] = {
    {"every index once, fixed chunks, the first error", test_every_index_once},
    {"references: the same bytes on one CPU as on all", test_references_thread_independent},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_parallel_suites[] = {{"parallel", parallel_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_parallel_suites)
