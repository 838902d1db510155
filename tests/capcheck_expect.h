/* What the capture checker must find for each capture_breakers pattern in each capture mode:
 * the op, API, error and finding kind, whether the capture fails and whether its graph is
 * unusable. Shared by the GPU matrix (test_gpu_capcheck.c, on the device) and the CPU test of
 * the recorded fixtures (test_capcheck.c, tests/data/capcheck_PATTERN_MODE.jsonl). Where CUDA's
 * behaviour is documented the expectation is exact; where it is not (which error an event query
 * of a captured event gets, what cublasCreate does inside a capture, pageable copies) it lists
 * the outcomes the docs allow, and the GPU test prints what happened. */
#ifndef GR_TESTS_CAPCHECK_EXPECT_H
#define GR_TESTS_CAPCHECK_EXPECT_H

#include <stdio.h>
#include <string.h>

#include "capture/check.h"

#define SEV(s) (1 << (s))
#define ANY_SEV (SEV(GR_FS_ERROR) | SEV(GR_FS_CONSEQUENCE) | SEV(GR_FS_ESCAPE) | SEV(GR_FS_HAZARD))
#define ANY_RET (-2)
#define ANY_KIND (-2)

typedef struct gr_cc_expect {
    const char *pattern;
    int mode;          /* 0 global, 1 thread-local, 2 relaxed; -1 every mode */
    int clean;         /* no finding at all */
    int sevs;          /* acceptable severities of the key finding (SEV bits) */
    int kinds[4];      /* acceptable kinds, -1 ends; ANY_KIND first: any */
    const char *api;   /* substring of its API, NULL any */
    int rets[3];       /* acceptable return codes, -1 ends; ANY_RET first: any */
    int capture_fails; /* 1 fails, 0 succeeds, -1 either */
    int blocks;        /* 1 the full graph cannot be used, 0 it can, -1 either */
    int other_thread;  /* the key finding comes from another thread */
} gr_cc_expect;

/* clang-format off */
static const gr_cc_expect gr_cc_expectations[] = {
    {"clean", -1, 1, 0, {-1}, NULL, {-1}, 0, 0, 0},
    {"stream_sync", -1, 0, SEV(GR_FS_ERROR), {GR_FK_SYNC, -1}, "cudaStreamSynchronize", {900, -1}, 1, 1, 0},
    {"device_sync", 0, 0, SEV(GR_FS_ERROR), {GR_FK_SYNC, -1}, "cudaDeviceSynchronize", {900, -1}, 1, 1, 0},
    {"device_sync", 1, 0, SEV(GR_FS_ERROR), {GR_FK_SYNC, -1}, "cudaDeviceSynchronize", {900, -1}, 1, 1, 0},
    /* "invalid to synchronize a broader handle (device) while a stream captures": refused in
     * relaxed mode too, by the guide; the error it gets is not written down */
    {"device_sync", 2, 0, SEV(GR_FS_ERROR) | SEV(GR_FS_HAZARD), {GR_FK_SYNC, -1}, "cudaDeviceSynchronize", {ANY_RET}, -1, -1, 0},
    {"event_sync", -1, 0, SEV(GR_FS_ERROR), {GR_FK_SYNC, GR_FK_CAPTURED_EVENT, -1}, "cudaEventSynchronize", {900, 907, -1}, 1, 1, 0},
    {"stream_query", -1, 0, SEV(GR_FS_ERROR), {GR_FK_QUERY, -1}, "cudaStreamQuery", {900, -1}, 1, 1, 0},
    {"event_query", -1, 0, SEV(GR_FS_ERROR), {GR_FK_QUERY, GR_FK_CAPTURED_EVENT, -1}, "cudaEventQuery", {900, 907, -1}, 1, 1, 0},
    {"alloc", 0, 0, SEV(GR_FS_ERROR), {GR_FK_ALLOC, -1}, "cudaMalloc", {900, -1}, 1, 1, 0},
    {"alloc", 1, 0, SEV(GR_FS_ERROR), {GR_FK_ALLOC, -1}, "cudaMalloc", {900, -1}, 1, 1, 0},
    {"alloc", 2, 0, SEV(GR_FS_HAZARD), {GR_FK_ALLOC, -1}, "cudaMalloc", {0, -1}, 0, 0, 0},
    {"alloc_host", 0, 0, SEV(GR_FS_ERROR), {GR_FK_HOST_ALLOC, -1}, "cudaMallocHost", {900, -1}, 1, 1, 0},
    {"alloc_host", 1, 0, SEV(GR_FS_ERROR), {GR_FK_HOST_ALLOC, -1}, "cudaMallocHost", {900, -1}, 1, 1, 0},
    {"alloc_host", 2, 0, SEV(GR_FS_HAZARD), {GR_FK_HOST_ALLOC, -1}, "cudaMallocHost", {0, -1}, 0, 0, 0},
    /* global mode refuses unsafe calls from every thread; thread-local and relaxed ignore others */
    {"alloc_thread", 0, 0, SEV(GR_FS_ERROR), {GR_FK_ALLOC, -1}, "cudaMalloc", {900, -1}, 1, 1, 1},
    {"alloc_thread", 1, 1, 0, {-1}, NULL, {-1}, 0, 0, 0},
    {"alloc_thread", 2, 1, 0, {-1}, NULL, {-1}, 0, 0, 0},
    {"legacy_copy", -1, 0, SEV(GR_FS_ESCAPE), {GR_FK_LEGACY_STREAM, -1}, "cudaMemcpyAsync", {0, -1}, 0, 1, 0},
    {"sync_copy", -1, 0, SEV(GR_FS_ESCAPE), {GR_FK_SYNC_COPY, -1}, "cudaMemcpy", {0, -1}, 0, 1, 0},
    {"other_stream", -1, 0, SEV(GR_FS_ESCAPE), {GR_FK_OTHER_STREAM, -1}, "LaunchKernel", {0, -1}, 0, 1, 0},
    {"pageable_copy", -1, 0, SEV(GR_FS_ERROR) | SEV(GR_FS_HAZARD), {GR_FK_PAGEABLE_COPY, -1}, "cudaMemcpyAsync", {ANY_RET}, -1, -1, 0},
    {"fork", -1, 0, SEV(GR_FS_ERROR), {GR_FK_UNJOINED, -1}, "cudaStreamEndCapture", {904, -1}, 1, 1, 0},
    {"item", -1, 0, SEV(GR_FS_ERROR), {GR_FK_READBACK, -1}, "cudaStreamSynchronize", {900, -1}, 1, 1, 0},
    /* what cublasCreate calls is cuBLAS's business: some refused call (its workspace allocation)
     * in global and thread-local mode, something flagged in relaxed mode */
    {"lazy_init", 0, 0, SEV(GR_FS_ERROR), {ANY_KIND}, NULL, {900, -1}, 1, 1, 0},
    {"lazy_init", 1, 0, SEV(GR_FS_ERROR), {ANY_KIND}, NULL, {900, -1}, 1, 1, 0},
    {"lazy_init", 2, 0, ANY_SEV, {ANY_KIND}, NULL, {ANY_RET}, -1, -1, 0},
};
/* clang-format on */

static const gr_cc_expect *gr_cc_expect_for(const char *pattern, int mode) {
    for (size_t i = 0; i < sizeof(gr_cc_expectations) / sizeof(gr_cc_expectations[0]); i++) {
        const gr_cc_expect *x = &gr_cc_expectations[i];
        if (!strcmp(x->pattern, pattern) && (x->mode < 0 || x->mode == mode)) return x;
    }
    return NULL;
}

static int gr_cc_in(const int *set, int n, int v, int any) {
    if (set[0] == any) return 1;
    for (int i = 0; i < n && set[i] != -1; i++)
        if (set[i] == v) return 1;
    return 0;
}

/* 1 when the findings match; otherwise 0 and `why` says what differs. `op` is the breaking op's
 * name (the pattern). */
static int gr_cc_expect_check(const gr_cc_expect *x, const gr_capcheck_result *r,
                              int capture_failed, char *why, size_t size) {
    why[0] = '\0';
    if (x->clean) {
        if (r->total)
            snprintf(why, size, "expected no finding, got %zu", r->total);
        else if (capture_failed)
            snprintf(why, size, "expected the capture to succeed");
        return !why[0];
    }
    const gr_finding *key = NULL;
    int errors_before = 0;
    for (size_t i = 0; i < r->n && !key; i++) {
        const gr_finding *f = &r->f[i];
        int match = (x->sevs & SEV(f->sev)) && gr_cc_in(x->kinds, 4, f->kind, ANY_KIND) &&
                    (!x->api || strstr(f->api, x->api)) && gr_cc_in(x->rets, 3, f->ret, ANY_RET) &&
                    f->op >= 0 && !strcmp(f->op_name, x->pattern);
        if (match)
            key = f;
        else
            errors_before += f->sev == GR_FS_ERROR;
    }
    if (!key) {
        snprintf(why, size,
                 "no finding on op \"%s\" with the expected severity, kind, API%s and error",
                 x->pattern, x->api ? "" : " (any)");
        return 0;
    }
    if (key->sev == GR_FS_ERROR && errors_before)
        snprintf(why, size, "the expected culprit is not the first error (%d before it)",
                 errors_before);
    else if (x->other_thread && !key->other_thread)
        snprintf(why, size, "expected the finding from another thread");
    else if (x->capture_fails >= 0 && !!capture_failed != x->capture_fails)
        snprintf(why, size, "expected the capture to %s", x->capture_fails ? "fail" : "succeed");
    else if (x->blocks >= 0 && (capture_failed || gr_capcheck_blocking(r) > 0) != x->blocks)
        snprintf(why, size, "expected the full graph to be %s", x->blocks ? "unusable" : "usable");
    return !why[0];
}

#endif
