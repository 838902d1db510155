/* What the capture checker must find for each capture_breakers pattern in each capture mode:
 * the key finding's severity, kind, API and return code, whether the capture fails and whether
 * its full graph is unusable. Shared by the GPU matrix (test_gpu_capcheck.c, on the device) and
 * the CPU test of the recorded fixtures (test_capcheck.c, tests/data/capcheck_PATTERN_MODE.jsonl).
 * Each row is exactly what the H200 recordings show; where CUDA's documentation allows several
 * outcomes (captured events, pageable copies, what cublasCreate calls), the recording decided. */
#ifndef GR_TESTS_CAPCHECK_EXPECT_H
#define GR_TESTS_CAPCHECK_EXPECT_H

#include <stdio.h>
#include <string.h>

#include "cupti_tools/capclass.h"

typedef struct gr_cc_expect {
    const char *pattern;
    int mode;          /* 0 global, 1 thread-local, 2 relaxed; -1 every mode */
    int clean;         /* no finding at all */
    int sev;           /* the key finding: the first on the pattern's op with this severity, */
    int kind;          /* kind, */
    const char *api;   /* API (the exact name) */
    int ret;           /* and return code */
    int capture_fails; /* 1 the capture fails, 0 it succeeds */
    int blocks;        /* 1 the full graph cannot be used, 0 it can */
    int other_thread;  /* the key finding comes from another thread */
} gr_cc_expect;

/* The capture_breakers variants the GPU matrix runs and tests/data holds a recording of, in
 * each of the three modes. */
static const char *const gr_cc_patterns[] = {
    "stream_sync",  "device_sync",   "event_sync",   "stream_query", "event_query",
    "alloc",        "alloc_host",    "alloc_thread", "legacy_copy",  "sync_copy",
    "other_stream", "pageable_copy", "fork",         "item",         "lazy_init"};
#define GR_CC_NPATTERNS ((int)(sizeof(gr_cc_patterns) / sizeof(gr_cc_patterns[0])))

/* clang-format off */
static const gr_cc_expect gr_cc_expectations[] = {
    {"clean", -1, 1, 0, 0, NULL, 0, 0, 0, 0},
    /* global mode also flags the module load of the first kernel (a hazard) before the sync */
    {"stream_sync", -1, 0, GR_FS_ERROR, GR_FK_SYNC, "cudaStreamSynchronize", 900, 1, 1, 0},
    /* "invalid to synchronize a broader handle (device) while a stream captures": refused in
     * relaxed mode too */
    {"device_sync", -1, 0, GR_FS_ERROR, GR_FK_SYNC, "cudaDeviceSynchronize", 900, 1, 1, 0},
    /* an event recorded inside the capture: 907 (cudaErrorCapturedEvent) in every mode, and
     * the capture is invalidated */
    {"event_sync", -1, 0, GR_FS_ERROR, GR_FK_CAPTURED_EVENT, "cudaEventSynchronize", 907, 1, 1, 0},
    {"stream_query", -1, 0, GR_FS_ERROR, GR_FK_QUERY, "cudaStreamQuery", 900, 1, 1, 0},
    {"event_query", -1, 0, GR_FS_ERROR, GR_FK_CAPTURED_EVENT, "cudaEventQuery", 907, 1, 1, 0},
    {"alloc", 0, 0, GR_FS_ERROR, GR_FK_ALLOC, "cudaMalloc", 900, 1, 1, 0},
    {"alloc", 1, 0, GR_FS_ERROR, GR_FK_ALLOC, "cudaMalloc", 900, 1, 1, 0},
    {"alloc", 2, 0, GR_FS_HAZARD, GR_FK_ALLOC, "cudaMalloc", 0, 0, 0, 0},
    {"alloc_host", 0, 0, GR_FS_ERROR, GR_FK_HOST_ALLOC, "cudaMallocHost", 900, 1, 1, 0},
    {"alloc_host", 1, 0, GR_FS_ERROR, GR_FK_HOST_ALLOC, "cudaMallocHost", 900, 1, 1, 0},
    {"alloc_host", 2, 0, GR_FS_HAZARD, GR_FK_HOST_ALLOC, "cudaMallocHost", 0, 0, 0, 0},
    /* global mode refuses unsafe calls from every thread; thread-local and relaxed ignore others */
    {"alloc_thread", 0, 0, GR_FS_ERROR, GR_FK_ALLOC, "cudaMalloc", 900, 1, 1, 1},
    {"alloc_thread", 1, 1, 0, 0, NULL, 0, 0, 0, 0},
    {"alloc_thread", 2, 1, 0, 0, NULL, 0, 0, 0, 0},
    {"legacy_copy", -1, 0, GR_FS_ESCAPE, GR_FK_LEGACY_STREAM, "cudaMemcpyAsync", 0, 0, 1, 0},
    {"sync_copy", -1, 0, GR_FS_ESCAPE, GR_FK_SYNC_COPY, "cudaMemcpy", 0, 0, 1, 0},
    {"other_stream", -1, 0, GR_FS_ESCAPE, GR_FK_OTHER_STREAM, "cudaLaunchKernel", 0, 0, 1, 0},
    /* a pageable async copy is captured (as a synchronous copy node): flagged, not refused */
    {"pageable_copy", -1, 0, GR_FS_HAZARD, GR_FK_PAGEABLE_COPY, "cudaMemcpyAsync", 0, 0, 0, 0},
    {"fork", -1, 0, GR_FS_ERROR, GR_FK_UNJOINED, "cudaStreamEndCapture", 904, 1, 1, 0},
    {"item", -1, 0, GR_FS_ERROR, GR_FK_READBACK, "cudaStreamSynchronize", 900, 1, 1, 0},
    /* cublasCreate's first refused call is a cudaFree (of nothing, to initialise the context)
     * in global and thread-local mode; relaxed mode lets it and the handle's allocations and
     * events through, each flagged */
    {"lazy_init", 0, 0, GR_FS_ERROR, GR_FK_FREE, "cudaFree", 900, 1, 1, 0},
    {"lazy_init", 1, 0, GR_FS_ERROR, GR_FK_FREE, "cudaFree", 900, 1, 1, 0},
    {"lazy_init", 2, 0, GR_FS_HAZARD, GR_FK_FREE, "cudaFree", 0, 0, 0, 0},
};
/* clang-format on */

static const gr_cc_expect *gr_cc_expect_for(const char *pattern, int mode) {
    for (size_t i = 0; i < sizeof(gr_cc_expectations) / sizeof(gr_cc_expectations[0]); i++) {
        const gr_cc_expect *x = &gr_cc_expectations[i];
        if (!strcmp(x->pattern, pattern) && (x->mode < 0 || x->mode == mode)) return x;
    }
    return NULL;
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
        int match = (int)f->sev == x->sev && (int)f->kind == x->kind && !strcmp(f->api, x->api) &&
                    f->ret == x->ret && f->op >= 0 && !strcmp(f->op_name, x->pattern);
        if (match)
            key = f;
        else
            errors_before += f->sev == GR_FS_ERROR;
    }
    if (!key) {
        snprintf(why, size, "no finding on op \"%s\": [%s %s] %s returning %d", x->pattern,
                 gr_find_sev_name(x->sev), gr_find_kind_name(x->kind), x->api, x->ret);
        return 0;
    }
    if (key->sev == GR_FS_ERROR && errors_before)
        snprintf(why, size, "the expected culprit is not the first error (%d before it)",
                 errors_before);
    else if (x->other_thread && !key->other_thread)
        snprintf(why, size, "expected the finding from another thread");
    else if (!!capture_failed != x->capture_fails)
        snprintf(why, size, "expected the capture to %s", x->capture_fails ? "fail" : "succeed");
    else if ((capture_failed || gr_capcheck_blocking(r) > 0) != x->blocks)
        snprintf(why, size, "expected the full graph to be %s", x->blocks ? "unusable" : "usable");
    return !why[0];
}

#endif
