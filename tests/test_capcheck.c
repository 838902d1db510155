/* CPU suites for capture checking (no GPU): API names and kinds, the capture tracker, the
 * classifier on hand-built callback sequences for every pattern and capture mode with the exact
 * findings expected (every message a user can read: what, place, fix), the recording's JSON-lines
 * reader and its errors, the recorded GPU fixtures (tests/data/capcheck_*.jsonl) against the
 * expectations of tests/capcheck_expect.h, piecewise segmentation, the capture-breaker kernels'
 * checks, references and clean-counterpart plans, and the command lines (graphrun's options,
 * cupti-launchstat --capture-check with a stand-in program). */
#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/piecewise.h"
#include "core/kernel.h"
#include "cupti_tools/capcheck.h"
#include "cupti_tools/capclass.h"
#include "cupti_tools/capevents.h"
#include "cupti_tools/jsonl.h"
#include "kernels/breakers.h"
#include "kernels/registry.h"
#include "replay/capcheck.h"
#include "replay/run.h"
#include "capcheck_expect.h"
#include "tests.h"

#define T0 100u
#define T1 200u
#define S 0x7f0000001000ull
#define SIDE 0x7f0000002000ull
#define OTHER 0x7f0000003000ull
#define EV 0x7f0000004000ull
#define EV2 0x7f0000005000ull

/* ---- building callback sequences ---- */

typedef struct seqb {
    gr_capev v[700];
    size_t n;
} seqb;

static gr_capev *call(seqb *b, const char *api, int ret) {
    gr_capev *e = &b->v[b->n++];
    memset(e, 0, sizeof(*e));
    e->seq = b->n;
    e->tid = T0;
    e->driver = !strncmp(api, "cu", 2) && strncmp(api, "cuda", 4) != 0;
    snprintf(e->api, sizeof(e->api), "%s", api);
    e->ret = ret;
    e->mode = -1;
    e->op = -1;
    return e;
}

static gr_capev *on(gr_capev *e, uint64_t s) {
    e->stream_kind = GR_SK_HANDLE;
    e->stream = s;
    return e;
}

static gr_capev *legacy(gr_capev *e) {
    e->stream_kind = GR_SK_LEGACY;
    return e;
}

static gr_capev *in_op(gr_capev *e, int op, const char *name) {
    e->op = op;
    snprintf(e->op_name, sizeof(e->op_name), "%s", name);
    return e;
}

static gr_capev *thread(gr_capev *e, uint64_t tid) {
    e->tid = tid;
    return e;
}

static void begin(seqb *b, uint64_t s, int mode) {
    on(call(b, "cudaStreamBeginCapture", 0), s)->mode = mode;
}

static void end(seqb *b, uint64_t s, int ret) {
    on(call(b, "cudaStreamEndCapture", ret), s);
}

static void launch(seqb *b, uint64_t s, int op, const char *name) {
    in_op(on(call(b, "__cudaLaunchKernel", 0), s), op, name);
}

static void record(seqb *b, uint64_t ev, uint64_t s, int op, const char *name) {
    in_op(on(call(b, "cudaEventRecord", 0), s), op, name)->event = ev;
}

static void wait_ev(seqb *b, uint64_t s, uint64_t ev, int op, const char *name) {
    in_op(on(call(b, "cudaStreamWaitEvent", 0), s), op, name)->event = ev;
}

static gr_capcheck_result classify(const seqb *b) {
    gr_capcheck_result r;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_capcheck_classify(b->v, b->n, &r, &e), GR_OK);
    return r;
}

static char line[2000];

static const char *text(const gr_finding *f) {
    gr_finding_str(f, line, sizeof(line));
    return line;
}

static void dump(const gr_capcheck_result *r) {
    for (size_t i = 0; i < r->n; i++)
        fprintf(stderr, "\n    [%s] %s", gr_find_sev_name(r->f[i].sev), text(&r->f[i]));
}

#define EXPECT_N(r, count)                                                                         \
    do {                                                                                           \
        if ((r).n != (size_t)(count)) dump(&(r));                                                  \
        CU_ASSERT_EQUAL_FATAL((r).n, (size_t)(count));                                             \
    } while (0)

static void expect(const gr_finding *f, int sev, int kind, int op, const char *api, int ret) {
    if (f->sev != sev || f->kind != kind || f->op != op || strcmp(f->api, api) || f->ret != ret)
        fprintf(stderr, "\n    got [%s %s] %s", gr_find_sev_name(f->sev),
                gr_find_kind_name(f->kind), text(f));
    CU_ASSERT_EQUAL(f->sev, sev);
    CU_ASSERT_EQUAL(f->kind, kind);
    CU_ASSERT_EQUAL(f->op, op);
    CU_ASSERT_STRING_EQUAL(f->api, api);
    CU_ASSERT_EQUAL(f->ret, ret);
}

static char *slurp(FILE *f) {
    fflush(f);
    long n = ftell(f);
    char *buf = malloc((size_t)n + 1);
    rewind(f);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    return buf;
}

/* ---- suite capcheck: names, tracker, classifier ---- */

static void test_api_names(void) {
    char out[64];
    int pt = -1;
    gr_capapi_normalize("cudaMemcpyAsync_ptsz_v7000", out, sizeof(out), &pt);
    CU_ASSERT_STRING_EQUAL(out, "cudaMemcpyAsync");
    CU_ASSERT_EQUAL(pt, 1);
    gr_capapi_normalize("cudaMemcpyAsync_v3020", out, sizeof(out), &pt);
    CU_ASSERT_STRING_EQUAL(out, "cudaMemcpyAsync");
    CU_ASSERT_EQUAL(pt, 0);
    gr_capapi_normalize("__cudaLaunchKernel_v13000", out, sizeof(out), &pt);
    CU_ASSERT_STRING_EQUAL(out, "__cudaLaunchKernel");
    gr_capapi_normalize("cuMemcpyHtoDAsync_v2_ptsz", out, sizeof(out), &pt);
    CU_ASSERT_STRING_EQUAL(out, "cuMemcpyHtoDAsync");
    CU_ASSERT_EQUAL(pt, 1);
    gr_capapi_normalize("cudaMemcpy_ptds_v7000", out, sizeof(out), &pt);
    CU_ASSERT_STRING_EQUAL(out, "cudaMemcpy");
    CU_ASSERT_EQUAL(pt, 1);
    gr_capapi_normalize("cuStreamBeginCapture_v2", out, sizeof(out), NULL);
    CU_ASSERT_STRING_EQUAL(out, "cuStreamBeginCapture");
    gr_capapi_normalize("cuCtxSynchronize", out, sizeof(out), &pt);
    CU_ASSERT_STRING_EQUAL(out, "cuCtxSynchronize");
    CU_ASSERT_EQUAL(pt, 0);
    gr_capapi_normalize(NULL, out, sizeof(out), NULL);
    CU_ASSERT_STRING_EQUAL(out, "");

    static const struct {
        const char *name;
        gr_capapi k;
    } kinds[] = {
        {"cudaStreamBeginCapture", GR_CA_BEGIN},
        {"cuStreamBeginCaptureToGraph", GR_CA_BEGIN},
        {"cudaStreamEndCapture", GR_CA_END},
        {"cudaStreamIsCapturing", GR_CA_BENIGN},
        {"cudaStreamGetCaptureInfo", GR_CA_BENIGN},
        {"cudaThreadExchangeStreamCaptureMode", GR_CA_MODE},
        {"cudaGetLastError", GR_CA_BENIGN},
        {"__cudaLaunchKernel", GR_CA_LAUNCH},
        {"cudaLaunchKernelExC", GR_CA_LAUNCH},
        {"cuLaunchKernel", GR_CA_LAUNCH},
        {"cudaLaunchHostFunc", GR_CA_LAUNCH},
        {"cudaGraphLaunch", GR_CA_GRAPH_LAUNCH},
        {"cudaMemcpyAsync", GR_CA_COPY_ASYNC},
        {"cuMemsetD32Async", GR_CA_COPY_ASYNC},
        {"cudaMemPrefetchAsync", GR_CA_COPY_ASYNC},
        {"cudaMemcpy", GR_CA_COPY_SYNC},
        {"cudaMemset", GR_CA_COPY_SYNC},
        {"cuMemcpyDtoH", GR_CA_COPY_SYNC},
        {"cudaMallocAsync", GR_CA_ALLOC_ASYNC},
        {"cudaFreeAsync", GR_CA_ALLOC_ASYNC},
        {"cuMemAllocAsync", GR_CA_ALLOC_ASYNC},
        {"cudaStreamSynchronize", GR_CA_SYNC},
        {"cudaDeviceSynchronize", GR_CA_SYNC},
        {"cuCtxSynchronize", GR_CA_SYNC},
        {"cudaEventSynchronize", GR_CA_SYNC},
        {"cudaStreamQuery", GR_CA_QUERY},
        {"cuEventQuery", GR_CA_QUERY},
        {"cudaMallocHost", GR_CA_HOST_ALLOC},
        {"cudaHostAlloc", GR_CA_HOST_ALLOC},
        {"cuMemHostRegister", GR_CA_HOST_ALLOC},
        {"cudaFreeHost", GR_CA_FREE},
        {"cudaFree", GR_CA_FREE},
        {"cuMemFree", GR_CA_FREE},
        {"cudaMalloc", GR_CA_ALLOC},
        {"cudaMallocManaged", GR_CA_ALLOC},
        {"cuMemAlloc", GR_CA_ALLOC},
        {"cudaStreamCreateWithFlags", GR_CA_CREATE},
        {"cudaEventCreate", GR_CA_CREATE},
        {"cuModuleLoadData", GR_CA_CREATE},
        {"cuLibraryLoadData", GR_CA_CREATE},
        {"cudaEventRecord", GR_CA_EVENT_RECORD},
        {"cuEventRecordWithFlags", GR_CA_EVENT_RECORD},
        {"cudaStreamWaitEvent", GR_CA_STREAM_WAIT},
        {"cudaGraphInstantiate", GR_CA_OTHER},
        {"cudaFuncSetAttribute", GR_CA_OTHER},
        {"", GR_CA_OTHER},
        {"___", GR_CA_OTHER},
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (gr_capapi_kind(kinds[i].name) != kinds[i].k)
            fprintf(stderr, "\n    %s: got %s", kinds[i].name,
                    gr_capapi_name(gr_capapi_kind(kinds[i].name)));
        CU_ASSERT_EQUAL(gr_capapi_kind(kinds[i].name), kinds[i].k);
    }
    CU_ASSERT_EQUAL(gr_capapi_kind(NULL), GR_CA_OTHER);
    CU_ASSERT_TRUE(gr_capapi_is_work(GR_CA_LAUNCH) && gr_capapi_is_work(GR_CA_COPY_ASYNC) &&
                   gr_capapi_is_work(GR_CA_GRAPH_LAUNCH) && gr_capapi_is_work(GR_CA_ALLOC_ASYNC));
    CU_ASSERT_FALSE(gr_capapi_is_work(GR_CA_EVENT_RECORD) || gr_capapi_is_work(GR_CA_COPY_SYNC));
    CU_ASSERT_STRING_EQUAL(gr_capapi_name(GR_CA_SYNC), "synchronize");

    CU_ASSERT_STRING_EQUAL(gr_cuda_error_name(900, 0), "cudaErrorStreamCaptureUnsupported");
    CU_ASSERT_STRING_EQUAL(gr_cuda_error_name(900, 1), "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED");
    CU_ASSERT_STRING_EQUAL(gr_cuda_error_name(907, 0), "cudaErrorCapturedEvent");
    CU_ASSERT_STRING_EQUAL(gr_cuda_error_name(904, 1), "CUDA_ERROR_STREAM_CAPTURE_UNJOINED");
    CU_ASSERT_STRING_EQUAL(gr_cuda_error_name(600, 0), "cudaErrorNotReady");
    CU_ASSERT_STRING_EQUAL(gr_cuda_error_name(12345, 0), "error 12345");
    for (int c = 900; c <= 908; c++)
        CU_ASSERT_TRUE(gr_cuda_is_capture_error(c));
    CU_ASSERT_FALSE(gr_cuda_is_capture_error(909) || gr_cuda_is_capture_error(0) ||
                    gr_cuda_is_capture_error(600));
    CU_ASSERT_STRING_EQUAL(gr_capture_mode_str(1), "thread-local");
    CU_ASSERT_STRING_EQUAL(gr_capture_mode_str(7), "?");
    CU_ASSERT_STRING_EQUAL(gr_stream_kind_name(GR_SK_PER_THREAD), "per-thread");
    CU_ASSERT_STRING_EQUAL(gr_capstat_name(GR_CS_OUTSIDE), "outside");
    CU_ASSERT_STRING_EQUAL(gr_copy_dir_name(GR_CP_D2H), "DtoH");
    CU_ASSERT_STRING_EQUAL(gr_hostmem_name(GR_HM_PAGEABLE), "pageable");
}

static gr_capev mk(const char *api, uint64_t s, uint64_t ev) {
    gr_capev e;
    memset(&e, 0, sizeof(e));
    snprintf(e.api, sizeof(e.api), "%s", api);
    e.tid = T0;
    e.op = -1;
    e.mode = -1;
    if (s) {
        e.stream_kind = GR_SK_HANDLE;
        e.stream = s;
    }
    e.event = ev;
    return e;
}

static void test_tracker(void) {
    gr_captrack t;
    gr_captrack_init(&t);
    gr_capev e = mk("__cudaLaunchKernel", S, 0);
    CU_ASSERT_EQUAL(gr_captrack_active(&t), 0);
    CU_ASSERT_EQUAL(gr_captrack_status(&t, &e), GR_CS_NONE);
    gr_capev b = mk("cudaStreamBeginCapture", S, 0);
    b.mode = 1;
    gr_captrack_apply(&t, &b);
    CU_ASSERT_EQUAL(gr_captrack_active(&t), 1);
    CU_ASSERT_EQUAL(gr_captrack_status(&t, &e), GR_CS_MEMBER);
    CU_ASSERT_TRUE(gr_captrack_thread_captures(&t, T0));
    CU_ASSERT_FALSE(gr_captrack_thread_captures(&t, T1));
    gr_capev o = mk("__cudaLaunchKernel", OTHER, 0);
    CU_ASSERT_EQUAL(gr_captrack_status(&t, &o), GR_CS_OUTSIDE);
    gr_capev l = mk("cudaMemcpyAsync", 0, 0);
    l.stream_kind = GR_SK_LEGACY;
    CU_ASSERT_EQUAL(gr_captrack_status(&t, &l), GR_CS_LEGACY);
    gr_capev ns = mk("cudaMalloc", 0, 0);
    CU_ASSERT_EQUAL(gr_captrack_status(&t, &ns), GR_CS_NOSTREAM);
    int slot = gr_captrack_capture_of(&t, &e);
    CU_ASSERT_TRUE_FATAL(slot >= 0);
    CU_ASSERT_EQUAL(t.cap[slot].mode, 1);
    CU_ASSERT_EQUAL(gr_captrack_capture_of(&t, &o), slot); /* its thread's capture */
    /* fork: an event recorded on the capturing stream, waited on by SIDE */
    gr_capev rec = mk("cudaEventRecord", S, EV);
    gr_captrack_apply(&t, &rec);
    gr_capev w = mk("cudaStreamWaitEvent", SIDE, EV);
    w.op = 3;
    snprintf(w.op_name, sizeof(w.op_name), "fork");
    w.seq = 9;
    gr_captrack_apply(&t, &w);
    gr_capev side = mk("__cudaLaunchKernel", SIDE, 0);
    CU_ASSERT_EQUAL(gr_captrack_status(&t, &side), GR_CS_MEMBER);
    gr_captrack_apply(&t, &side);
    const gr_ct_member *m[4];
    CU_ASSERT_EQUAL_FATAL(gr_captrack_unjoined(&t, slot, m, 4), 1);
    CU_ASSERT_EQUAL(m[0]->s.handle, SIDE);
    CU_ASSERT_EQUAL(m[0]->fork_op, 3);
    CU_ASSERT_STRING_EQUAL(m[0]->fork_op_name, "fork");
    CU_ASSERT_STRING_EQUAL(m[0]->fork_api, "cudaStreamWaitEvent");
    CU_ASSERT_EQUAL(m[0]->fork_seq, 9);
    CU_ASSERT_EQUAL(m[0]->work, 1);
    /* join: an event recorded on SIDE after its work, waited on by the origin */
    gr_capev rec2 = mk("cudaEventRecord", SIDE, EV2);
    gr_captrack_apply(&t, &rec2);
    gr_capev w2 = mk("cudaStreamWaitEvent", S, EV2);
    gr_captrack_apply(&t, &w2);
    CU_ASSERT_EQUAL(gr_captrack_unjoined(&t, slot, m, 4), 0);
    /* more work on SIDE after the join: unjoined again */
    gr_captrack_apply(&t, &side);
    CU_ASSERT_EQUAL(gr_captrack_unjoined(&t, slot, m, 4), 1);
    /* a failed call changes nothing; an event recorded outside does not fork */
    gr_capev failed = mk("__cudaLaunchKernel", SIDE, 0);
    failed.ret = 900;
    gr_captrack_apply(&t, &failed);
    CU_ASSERT_EQUAL(m[0]->work, 2);
    gr_capev rec3 = mk("cudaEventRecord", OTHER, EV2);
    gr_captrack_apply(&t, &rec3);
    gr_capev w3 = mk("cudaStreamWaitEvent", 0x7f0000009000ull, EV2);
    gr_captrack_apply(&t, &w3);
    CU_ASSERT_EQUAL(gr_captrack_status(&t, &w3), GR_CS_OUTSIDE);
    /* ending on a stream that did not begin it is refused (903): still capturing */
    gr_capev bad_end = mk("cudaStreamEndCapture", SIDE, 0);
    bad_end.ret = 903;
    gr_captrack_apply(&t, &bad_end);
    CU_ASSERT_EQUAL(gr_captrack_active(&t), 1);
    gr_capev en = mk("cudaStreamEndCapture", S, 0);
    gr_captrack_apply(&t, &en);
    CU_ASSERT_EQUAL(gr_captrack_active(&t), 0);
    CU_ASSERT_EQUAL(t.nmem, 0);
    CU_ASSERT_EQUAL(gr_captrack_status(&t, &side), GR_CS_NONE);
    CU_ASSERT_EQUAL(gr_captrack_capture_of(&t, &side), -1);
    /* per-thread default streams are per thread */
    gr_capev ptd = mk("cudaStreamBeginCapture", 0, 0);
    ptd.stream_kind = GR_SK_PER_THREAD;
    gr_captrack_apply(&t, &ptd);
    gr_capev ptd_other = ptd;
    ptd_other.tid = T1;
    CU_ASSERT_EQUAL(gr_captrack_status(&t, &ptd), GR_CS_MEMBER);
    CU_ASSERT_EQUAL(gr_captrack_status(&t, &ptd_other), GR_CS_OUTSIDE);
    /* more captures than the table holds */
    gr_captrack_init(&t);
    for (int i = 0; i < GR_CT_MAX_CAPTURES + 1; i++) {
        gr_capev bi = mk("cudaStreamBeginCapture", 0x7f0000100000ull + (uint64_t)i * 0x1000, 0);
        gr_captrack_apply(&t, &bi);
    }
    CU_ASSERT_EQUAL(gr_captrack_active(&t), GR_CT_MAX_CAPTURES);
    CU_ASSERT_TRUE(t.overflow);
}

/* A clean capture: kernels, a PDL launch, a fork joined back, capture queries. */
static void test_clean_sequence(void) {
    seqb b = {.n = 0};
    call(&b, "cudaMalloc", 0); /* before any capture: not its business */
    begin(&b, S, 0);
    launch(&b, S, 0, "a");
    in_op(on(call(&b, "cudaLaunchKernelExC", 0), S), 1, "pdl");
    record(&b, EV, S, 2, "fork");
    wait_ev(&b, SIDE, EV, 2, "fork");
    launch(&b, SIDE, 3, "side");
    in_op(on(call(&b, "cudaMemcpyAsync", 0), SIDE), 3, "side")->copy = GR_CP_D2D;
    record(&b, EV2, SIDE, 4, "join");
    wait_ev(&b, S, EV2, 4, "join");
    on(call(&b, "cudaStreamIsCapturing", 0), S);
    call(&b, "cudaGetLastError", 0);
    in_op(on(call(&b, "cudaMallocAsync", 0), S), 5, "pool");
    in_op(on(call(&b, "cudaMemcpyAsync", 0), S), 5, "pool")->copy = GR_CP_H2D; /* pinned: fine */
    b.v[b.n - 1].hostmem = GR_HM_PINNED;
    end(&b, S, 0);
    call(&b, "cudaStreamSynchronize", 0); /* after: not its business */
    gr_capcheck_result r = classify(&b);
    EXPECT_N(r, 0);
    CU_ASSERT_EQUAL(r.total, 0);
    CU_ASSERT_EQUAL(r.captures, 1);
    CU_ASSERT_EQUAL(r.captures_ok, 1);
    CU_ASSERT_EQUAL(r.captures_failed, 0);
    CU_ASSERT_EQUAL(r.calls, b.n);
    CU_ASSERT_FALSE(r.unfinished);
    CU_ASSERT_EQUAL(gr_capcheck_blocking(&r), 0);
    gr_capcheck_result_free(&r);
}

/* stream_sync: the culprit and its consequence; every part of the message. */
static void test_sync(void) {
    seqb b = {.n = 0};
    begin(&b, S, 0);
    launch(&b, S, 0, "pre.0");
    launch(&b, S, 1, "stream_sync");
    in_op(on(call(&b, "cudaStreamSynchronize", 900), S), 1, "stream_sync");
    end(&b, S, 901);
    gr_capcheck_result r = classify(&b);
    EXPECT_N(r, 2);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_SYNC, 1, "cudaStreamSynchronize", 900);
    CU_ASSERT_EQUAL(r.f[0].mode, 0);
    CU_ASSERT_EQUAL(r.f[0].stream_status, GR_CS_MEMBER);
    CU_ASSERT_FALSE(r.f[0].other_thread);
    const char *t = text(&r.f[0]);
    GR_ASSERT_CONTAINS(
        t,
        "op 1 \"stream_sync\": cudaStreamSynchronize on stream 0x7f0000001000 (capturing) returned "
        "cudaErrorStreamCaptureUnsupported during a global-mode capture: breaks the capture (host "
        "synchronization during capture)");
    GR_ASSERT_CONTAINS(t, "Fix: record an event and make the consumer stream wait on it "
                          "(cudaStreamWaitEvent) instead "
                          "of synchronizing; synchronize after the graph launch");
    expect(&r.f[1], GR_FS_CONSEQUENCE, GR_FK_INVALIDATED, -1, "cudaStreamEndCapture", 901);
    t = text(&r.f[1]);
    GR_ASSERT_CONTAINS(
        t, "thread 100: cudaStreamEndCapture on stream 0x7f0000001000 (capturing) returned "
           "cudaErrorStreamCaptureInvalidated");
    GR_ASSERT_CONTAINS(t, "consequence (the capture had been invalidated by an earlier call)");
    GR_ASSERT_CONTAINS(t, "Fix: fix the first failing call above; this one failed only because the "
                          "capture was already "
                          "invalidated");
    CU_ASSERT_EQUAL(r.captures_failed, 1);
    CU_ASSERT_EQUAL(gr_capcheck_blocking(&r), 1);
    CU_ASSERT_EQUAL(gr_capcheck_unplaced(&r), 0);
    int ops[8];
    CU_ASSERT_EQUAL_FATAL(gr_capcheck_culprit_ops(&r, 0, ops, 8), 1);
    CU_ASSERT_EQUAL(ops[0], 1);
    gr_capcheck_result_free(&r);

    /* a device-wide sync in thread-local mode: no stream to name */
    seqb d = {.n = 0};
    begin(&d, S, 1);
    in_op(call(&d, "cudaDeviceSynchronize", 900), 4, "device_sync");
    end(&d, S, 901);
    r = classify(&d);
    EXPECT_N(r, 2);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_SYNC, 4, "cudaDeviceSynchronize", 900);
    GR_ASSERT_CONTAINS(text(&r.f[0]),
                       "op 4 \"device_sync\": cudaDeviceSynchronize returned "
                       "cudaErrorStreamCaptureUnsupported during a thread-local-mode capture");
    gr_capcheck_result_free(&r);

    /* the driver's names for the driver API */
    seqb dr = {.n = 0};
    begin(&dr, S, 2);
    in_op(on(call(&dr, "cuStreamSynchronize", 900), S), 0, "s");
    end(&dr, S, 901);
    r = classify(&dr);
    EXPECT_N(r, 2);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "returned CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED during a relaxed-mode capture");
    gr_capcheck_result_free(&r);
}

/* queries and syncs of events: a captured event (907) or a refused query (900); hazards when a
 * query or sync is let through */
static void test_queries(void) {
    seqb b = {.n = 0};
    begin(&b, S, 2);
    record(&b, EV, S, 2, "event_query");
    in_op(call(&b, "cudaEventQuery", 907), 2, "event_query")->event = EV;
    end(&b, S, 901);
    gr_capcheck_result r = classify(&b);
    EXPECT_N(r, 2);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_CAPTURED_EVENT, 2, "cudaEventQuery", 907);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "returned cudaErrorCapturedEvent during a relaxed-mode capture: breaks the capture "
        "(host query or sync of an event recorded inside the capture). Fix: an event "
        "recorded in a capture cannot be queried or waited on from the host during it: "
        "make the consumer stream wait on it (cudaStreamWaitEvent)");
    gr_capcheck_result_free(&r);

    seqb q = {.n = 0};
    begin(&q, S, 0);
    in_op(on(call(&q, "cudaStreamQuery", 900), S), 6, "stream_query");
    end(&q, S, 901);
    r = classify(&q);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_QUERY, 6, "cudaStreamQuery", 900);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "(stream or event query during capture). Fix: do not poll inside a capture: query "
        "after the graph launch, or order the work with cudaStreamWaitEvent");
    gr_capcheck_result_free(&r);

    /* relaxed: a query of another stream answers (not ready) and a sync of an event from before
     * the capture returns: both flagged, neither breaks the capture */
    seqb h = {.n = 0};
    record(&h, EV2, OTHER, -1, "");
    begin(&h, S, 2);
    in_op(on(call(&h, "cudaStreamQuery", 600), OTHER), 1, "poll");
    in_op(call(&h, "cudaEventSynchronize", 0), 2, "wait")->event = EV2;
    end(&h, S, 0);
    r = classify(&h);
    EXPECT_N(r, 2);
    expect(&r.f[0], GR_FS_HAZARD, GR_FK_QUERY, 1, "cudaStreamQuery", 600);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "on stream 0x7f0000003000 (not capturing) returned cudaErrorNotReady during a "
        "relaxed-mode capture: hazard (stream or event query during capture)");
    expect(&r.f[1], GR_FS_HAZARD, GR_FK_SYNC, 2, "cudaEventSynchronize", 0);
    GR_ASSERT_CONTAINS(
        text(&r.f[1]),
        "op 2 \"wait\": cudaEventSynchronize succeeded during a relaxed-mode capture: hazard");
    CU_ASSERT_EQUAL(gr_capcheck_blocking(&r), 0);
    CU_ASSERT_EQUAL(r.captures_ok, 1);
    int ops[4];
    CU_ASSERT_EQUAL(gr_capcheck_culprit_ops(&r, 0, ops, 4), 0);
    CU_ASSERT_EQUAL(gr_capcheck_culprit_ops(&r, 1, ops, 4), 2);
    gr_capcheck_result_free(&r);
}

/* allocation, pinned allocation, free, creation, library initialisation; other threads */
static void test_alloc(void) {
    seqb g = {.n = 0};
    begin(&g, S, 0);
    in_op(call(&g, "cudaMalloc", 900), 8, "alloc");
    end(&g, S, 901);
    gr_capcheck_result r = classify(&g);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_ALLOC, 8, "cudaMalloc", 900);
    GR_ASSERT_CONTAINS(text(&r.f[0]),
                       "(device allocation during capture). Fix: allocate before capture, or use "
                       "cudaMallocAsync on the capturing stream (a stream-ordered allocation is "
                       "captured as a graph node)");
    gr_capcheck_result_free(&r);

    seqb rl = {.n = 0};
    begin(&rl, S, 2);
    in_op(call(&rl, "cudaMalloc", 0), 8, "alloc");
    launch(&rl, S, 8, "alloc");
    in_op(call(&rl, "cudaMallocHost", 0), 9, "alloc_host");
    in_op(call(&rl, "cudaFree", 0), 10, "free");
    in_op(call(&rl, "cudaStreamCreateWithFlags", 0), 11, "create");
    gr_capev *lib = in_op(call(&rl, "cudaMalloc", 0), 12, "lazy_init");
    lib->op_flags = GR_KF_LIBRARY | GR_KF_HOST;
    end(&rl, S, 0);
    r = classify(&rl);
    EXPECT_N(r, 5);
    expect(&r.f[0], GR_FS_HAZARD, GR_FK_ALLOC, 8, "cudaMalloc", 0);
    expect(&r.f[1], GR_FS_HAZARD, GR_FK_HOST_ALLOC, 9, "cudaMallocHost", 0);
    GR_ASSERT_CONTAINS(text(&r.f[1]),
                       "(pinned host allocation during capture). Fix: allocate pinned host memory "
                       "(cudaMallocHost / cudaHostRegister) before capture and reuse it");
    expect(&r.f[2], GR_FS_HAZARD, GR_FK_FREE, 10, "cudaFree", 0);
    GR_ASSERT_CONTAINS(text(&r.f[2]),
                       "(free during capture). Fix: free after the graph is destroyed, or use "
                       "cudaFreeAsync on the capturing stream");
    expect(&r.f[3], GR_FS_HAZARD, GR_FK_LAZY_INIT, 11, "cudaStreamCreateWithFlags", 0);
    expect(&r.f[4], GR_FS_HAZARD, GR_FK_LAZY_INIT, 12, "cudaMalloc", 0);
    GR_ASSERT_CONTAINS(
        text(&r.f[4]),
        "(library or resource initialisation during capture). Fix: create library "
        "handles, streams and events before capture and run the library once eagerly (a "
        "warm-up step); give it its workspace up front (cublasSetWorkspace)");
    CU_ASSERT_EQUAL(gr_capcheck_blocking(&r), 0);
    gr_capcheck_result_free(&r);

    /* a library op's refused allocation is lazy initialisation too */
    seqb lz = {.n = 0};
    begin(&lz, S, 1);
    in_op(call(&lz, "cudaMalloc", 900), 3, "lazy_init")->op_flags = GR_KF_LIBRARY;
    end(&lz, S, 901);
    r = classify(&lz);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_LAZY_INIT, 3, "cudaMalloc", 900);
    gr_capcheck_result_free(&r);

    /* another thread: refused in global mode (and charged to the op running then), ignored in
     * thread-local mode */
    seqb ot = {.n = 0};
    begin(&ot, S, 0);
    launch(&ot, S, 7, "alloc_thread");
    thread(in_op(call(&ot, "cudaSetDevice", 0), 7, "alloc_thread"), T1);
    thread(in_op(call(&ot, "cudaMalloc", 900), 7, "alloc_thread"), T1);
    end(&ot, S, 901);
    r = classify(&ot);
    EXPECT_N(r, 2);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_ALLOC, 7, "cudaMalloc", 900);
    CU_ASSERT_TRUE(r.f[0].other_thread);
    GR_ASSERT_CONTAINS(text(&r.f[0]),
                       "op 7 \"alloc_thread\" (another thread): cudaMalloc returned "
                       "cudaErrorStreamCaptureUnsupported during a global-mode capture");
    gr_capcheck_result_free(&r);
    seqb tl = {.n = 0};
    begin(&tl, S, 1);
    thread(in_op(call(&tl, "cudaMalloc", 0), 7, "alloc_thread"), T1);
    thread(in_op(on(call(&tl, "__cudaLaunchKernel", 0), OTHER), 7, "alloc_thread"), T1);
    end(&tl, S, 0);
    r = classify(&tl);
    EXPECT_N(r, 0);
    gr_capcheck_result_free(&r);

    /* PyTorch's graph pool: the thread switches itself to relaxed mode around the allocation */
    seqb pt = {.n = 0};
    begin(&pt, S, 0);
    call(&pt, "cudaThreadExchangeStreamCaptureMode", 0)->mode = 2;
    call(&pt, "cudaMalloc", 0);
    call(&pt, "cudaThreadExchangeStreamCaptureMode", 0)->mode = 0;
    call(&pt, "cudaMalloc", 0);
    end(&pt, S, 0);
    r = classify(&pt);
    EXPECT_N(r, 1);
    expect(&r.f[0], GR_FS_HAZARD, GR_FK_ALLOC, -1, "cudaMalloc", 0);
    CU_ASSERT_EQUAL(r.deliberate, 1);
    FILE *f = tmpfile();
    gr_capcheck_print(f, &r, "");
    fflush(f);
    rewind(f);
    char buf[4096];
    size_t got = fread(buf, 1, sizeof(buf) - 1, f);
    buf[got] = '\0';
    fclose(f);
    GR_ASSERT_CONTAINS(
        buf, "(1 allocation made in sections the program deliberately switched to relaxed mode "
             "(cudaThreadExchangeStreamCaptureMode) not flagged)");
    json_t *j = gr_capcheck_json(&r);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "deliberate_relaxed_allocations")), 1);
    json_decref(j);
    gr_capcheck_result_free(&r);
}

/* work that succeeds outside the capture: legacy stream, synchronous copy, another stream */
static void test_escapes(void) {
    seqb b = {.n = 0};
    begin(&b, S, 0);
    legacy(in_op(call(&b, "cudaMemcpyAsync", 0), 11, "legacy_copy"))->copy = GR_CP_D2D;
    in_op(call(&b, "cudaMemcpy", 0), 12, "sync_copy")->copy = GR_CP_D2D;
    in_op(on(call(&b, "__cudaLaunchKernel", 0), OTHER), 13, "other_stream");
    gr_capev *ptd = in_op(call(&b, "cudaMemsetAsync", 0), 14, "ptd");
    ptd->stream_kind = GR_SK_PER_THREAD;
    thread(in_op(on(call(&b, "__cudaLaunchKernel", 0), 0x7f0000009000ull), 15, "elsewhere"),
           T1); /* not ours */
    in_op(call(&b, "cudaMemcpy", 0), 16, "read")->copy = GR_CP_D2H;
    end(&b, S, 0);
    gr_capcheck_result r = classify(&b);
    EXPECT_N(r, 5);
    expect(&r.f[0], GR_FS_ESCAPE, GR_FK_LEGACY_STREAM, 11, "cudaMemcpyAsync", 0);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "op 11 \"legacy_copy\": cudaMemcpyAsync on the legacy default stream succeeded "
        "during a global-mode capture: escapes the capture (work on the legacy default "
        "stream: it ran at capture time and is not in the graph). Fix: enqueue on the "
        "capturing stream (or on a stream forked from it with an event); the legacy "
        "default stream is never captured");
    expect(&r.f[1], GR_FS_ESCAPE, GR_FK_SYNC_COPY, 12, "cudaMemcpy", 0);
    GR_ASSERT_CONTAINS(
        text(&r.f[1]),
        "escapes the capture (synchronous copy or memset: it ran on the legacy stream at "
        "capture time and is not in the graph). Fix: use cudaMemcpyAsync / "
        "cudaMemsetAsync on the capturing stream");
    expect(&r.f[2], GR_FS_ESCAPE, GR_FK_OTHER_STREAM, 13, "__cudaLaunchKernel", 0);
    GR_ASSERT_CONTAINS(
        text(&r.f[2]),
        "__cudaLaunchKernel on stream 0x7f0000003000 (not capturing) succeeded during a "
        "global-mode capture: escapes the capture (work on a stream outside the capture: "
        "it ran at capture time and is not in the graph). Fix: fork that stream into the "
        "capture first (cudaEventRecord on the capturing stream, cudaStreamWaitEvent on "
        "it), then join it back the same way");
    expect(&r.f[3], GR_FS_ESCAPE, GR_FK_LEGACY_STREAM, 14, "cudaMemsetAsync", 0);
    GR_ASSERT_CONTAINS(text(&r.f[3]), "on the per-thread default stream (not capturing)");
    expect(&r.f[4], GR_FS_ESCAPE, GR_FK_READBACK, 16, "cudaMemcpy", 0);
    CU_ASSERT_EQUAL(r.captures_ok, 1);
    CU_ASSERT_EQUAL(gr_capcheck_blocking(&r), 5);
    int ops[8];
    CU_ASSERT_EQUAL(gr_capcheck_culprit_ops(&r, 0, ops, 8), 5);
    CU_ASSERT_EQUAL(ops[0], 11);
    CU_ASSERT_EQUAL(ops[4], 16);
    gr_capcheck_result_free(&r);
}

/* a launch escape the captured graph contradicts is demoted (the stream was misread) */
static void test_confirm_launches(void) {
    seqb b = {.n = 0};
    begin(&b, S, 0);
    launch(&b, S, 0, "a");
    launch(&b, OTHER, 1, "side");
    launch(&b, S, 2, "b");
    in_op(on(call(&b, "cudaLaunchHostFunc", 0), S), 3, "host"); /* a host node, not a kernel */
    end(&b, S, 0);
    gr_capcheck_result r = classify(&b);
    EXPECT_N(r, 1);
    CU_ASSERT_EQUAL(gr_capcheck_confirm_launches(&r, b.v, b.n, 2),
                    0); /* 2 nodes, 3 launches: it escaped */
    CU_ASSERT_EQUAL(r.f[0].sev, GR_FS_ESCAPE);
    CU_ASSERT_EQUAL(gr_capcheck_confirm_launches(&r, b.v, b.n, 3),
                    1); /* every launch is in the graph */
    CU_ASSERT_EQUAL(r.f[0].sev, GR_FS_HAZARD);
    CU_ASSERT_EQUAL(r.unconfirmed, 1);
    CU_ASSERT_EQUAL(gr_capcheck_blocking(&r), 0);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "; unconfirmed: the graph holds a kernel node for each of the 3 launches made "
        "while capturing, so this one was captured and its stream misread");
    FILE *f = tmpfile();
    gr_capcheck_print(f, &r, "");
    char *txt = slurp(f);
    fclose(f);
    GR_ASSERT_CONTAINS(
        txt, "warning: 1 launch escape was contradicted by the captured graph and not counted (the "
             "checker misread a stream: please report it with the recording)");
    free(txt);
    gr_capcheck_result_free(&r);
    /* copies are not second-guessed */
    seqb c = {.n = 0};
    begin(&c, S, 0);
    legacy(call(&c, "cudaMemcpyAsync", 0))->copy = GR_CP_D2D;
    end(&c, S, 0);
    r = classify(&c);
    CU_ASSERT_EQUAL(gr_capcheck_confirm_launches(&r, c.v, c.n, 100), 0);
    CU_ASSERT_EQUAL(r.f[0].sev, GR_FS_ESCAPE);
    gr_capcheck_result_free(&r);
}

static void test_pageable_and_readback(void) {
    seqb b = {.n = 0};
    begin(&b, S, 0);
    gr_capev *p = in_op(on(call(&b, "cudaMemcpyAsync", 0), S), 14, "pageable_copy");
    p->copy = GR_CP_H2D;
    p->hostmem = GR_HM_PAGEABLE;
    gr_capev *u = in_op(on(call(&b, "cudaMemcpyAsync", 0), S), 15,
                        "unknown_host"); /* not told: not flagged */
    u->copy = GR_CP_H2D;
    end(&b, S, 0);
    gr_capcheck_result r = classify(&b);
    EXPECT_N(r, 1);
    expect(&r.f[0], GR_FS_HAZARD, GR_FK_PAGEABLE_COPY, 14, "cudaMemcpyAsync", 0);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "(copy from or to pageable host memory inside a capture). Fix: copy through "
        "pinned host memory (cudaMallocHost / cudaHostRegister, allocated before capture)");
    gr_capcheck_result_free(&r);

    /* .item() in graphrun: a copy to pinned memory, then the sync that breaks the capture */
    seqb it = {.n = 0};
    begin(&it, S, 0);
    gr_capev *c = in_op(on(call(&it, "cudaMemcpyAsync", 0), S), 8, "item");
    c->copy = GR_CP_D2H;
    c->hostmem = GR_HM_PINNED;
    in_op(on(call(&it, "cudaStreamSynchronize", 900), S), 8, "item");
    end(&it, S, 901);
    r = classify(&it);
    EXPECT_N(r, 2);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_READBACK, 8, "cudaStreamSynchronize", 900);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "breaks the capture (a device value read back to the host during capture "
        "(.item(), .cpu())). Fix: keep the value on the device (pass a device pointer to "
        "the kernel that needs it) or read it after the graph launch: host code cannot "
        "depend on captured results");
    gr_capcheck_result_free(&r);

    /* .item() in PyTorch: the copy into pageable memory is refused; the place is the NVTX stack */
    seqb py = {.n = 0};
    begin(&py, S, 0);
    gr_capev *pc = on(call(&py, "cudaMemcpyAsync", 900), S);
    pc->copy = GR_CP_D2H;
    pc->hostmem = GR_HM_PAGEABLE;
    snprintf(pc->ranges, sizeof(pc->ranges), "step > loss");
    end(&py, S, 901);
    r = classify(&py);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_READBACK, -1, "cudaMemcpyAsync", 900);
    GR_ASSERT_CONTAINS(text(&r.f[0]),
                       "nvtx \"step > loss\": cudaMemcpyAsync on stream 0x7f0000001000 (capturing) "
                       "returned cudaErrorStreamCaptureUnsupported");
    gr_capcheck_result_free(&r);

    /* a refused host-to-device copy of unknown or pageable memory is a pageable copy */
    seqb pf = {.n = 0};
    begin(&pf, S, 1);
    in_op(on(call(&pf, "cudaMemcpyAsync", 900), S), 2, "up")->copy = GR_CP_H2D;
    end(&pf, S, 901);
    r = classify(&pf);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_PAGEABLE_COPY, 2, "cudaMemcpyAsync", 900);
    gr_capcheck_result_free(&r);

    /* relaxed: the sync is let through (another stream): still a read-back, as a hazard; in
     * another op it is a plain sync */
    seqb rx = {.n = 0};
    begin(&rx, S, 2);
    in_op(on(call(&rx, "cudaMemcpyAsync", 0), S), 8, "item")->copy = GR_CP_D2H;
    in_op(on(call(&rx, "cudaStreamSynchronize", 0), OTHER), 8, "item");
    in_op(on(call(&rx, "cudaStreamSynchronize", 0), OTHER), 9, "next");
    end(&rx, S, 0);
    r = classify(&rx);
    EXPECT_N(r, 2);
    expect(&r.f[0], GR_FS_HAZARD, GR_FK_READBACK, 8, "cudaStreamSynchronize", 0);
    expect(&r.f[1], GR_FS_HAZARD, GR_FK_SYNC, 9, "cudaStreamSynchronize", 0);
    gr_capcheck_result_free(&r);
}

static void test_unjoined(void) {
    seqb b = {.n = 0};
    begin(&b, S, 0);
    launch(&b, S, 2, "pre");
    record(&b, EV, S, 3, "fork");
    wait_ev(&b, SIDE, EV, 3, "fork");
    launch(&b, SIDE, 3, "fork");
    launch(&b, S, 4, "post");
    end(&b, S, 904);
    gr_capcheck_result r = classify(&b);
    EXPECT_N(r, 1);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_UNJOINED, 3, "cudaStreamEndCapture", 904);
    CU_ASSERT_EQUAL(r.f[0].stream, SIDE);
    const char *t = text(&r.f[0]);
    GR_ASSERT_CONTAINS(
        t,
        "op 3 \"fork\": cudaStreamEndCapture on stream 0x7f0000002000 (capturing) returned "
        "cudaErrorStreamCaptureUnjoined during a global-mode capture: breaks the capture (a stream "
        "forked into the capture was not joined back); it joined the capture through "
        "cudaStreamWaitEvent (call 4) and its last 1 work item was never joined back to origin "
        "stream "
        "0x7f0000001000. Fix: join every forked stream: record an event on it after its last work "
        "and "
        "make the origin stream wait on that event before ending the capture");
    int ops[4];
    CU_ASSERT_EQUAL_FATAL(gr_capcheck_culprit_ops(&r, 0, ops, 4), 1);
    CU_ASSERT_EQUAL(ops[0], 3);
    gr_capcheck_result_free(&r);

    /* a fork with no work, never joined */
    seqb nw = {.n = 0};
    begin(&nw, S, 1);
    record(&nw, EV, S, 1, "fork");
    wait_ev(&nw, SIDE, EV, 1, "fork");
    end(&nw, S, 904);
    r = classify(&nw);
    EXPECT_N(r, 1);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "it joined the capture through cudaStreamWaitEvent (call 3) and was never joined "
        "back to origin stream 0x7f0000001000");
    gr_capcheck_result_free(&r);

    /* the checker did not see the fork */
    seqb unseen = {.n = 0};
    begin(&unseen, S, 0);
    end(&unseen, S, 904);
    r = classify(&unseen);
    EXPECT_N(r, 1);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_UNJOINED, -1, "cudaStreamEndCapture", 904);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "; the checker did not see which stream was forked. Fix: join every forked stream");
    CU_ASSERT_EQUAL(gr_capcheck_unplaced(&r), 1);
    gr_capcheck_result_free(&r);
}

/* the capture-level errors, a failed begin, an unexplained invalidation, other refused calls */
static void test_capture_errors(void) {
    static const struct {
        int ret;
        const char *api;
        int kind;
        const char *what, *fix;
    } cases[] = {
        {908, "cudaStreamEndCapture", GR_FK_WRONG_THREAD, "capture ended from another thread",
         "end the capture on the thread that began it, or begin it with "
         "cudaStreamCaptureModeRelaxed"},
        {902, "cudaStreamWaitEvent", GR_FK_MERGE, "two independent captures were merged",
         "keep captures independent: do not make one capture's stream wait on another capture's "
         "event"},
        {905, "cudaStreamWaitEvent", GR_FK_ISOLATION, "a dependency crossed the capture boundary",
         "record the event inside the capture, or wait on events from outside it with "
         "cudaEventWaitExternal"},
        {906, "__cudaLaunchKernel", GR_FK_IMPLICIT,
         "the legacy default stream would depend on the capture",
         "create capture streams with cudaStreamNonBlocking, or stop using the legacy default "
         "stream while capturing"},
        {900, "cudaFuncSetAttribute", GR_FK_UNSUPPORTED,
         "call not permitted while a stream captures",
         "move the call before or after the capture (cudaStreamCaptureModeRelaxed permits "
         "potentially unsafe calls "
         "on the capturing thread)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        seqb b = {.n = 0};
        begin(&b, S, 0);
        if (cases[i].ret == 908)
            thread(on(call(&b, cases[i].api, cases[i].ret), S), T1);
        else
            in_op(on(call(&b, cases[i].api, cases[i].ret), S), 5, "op");
        gr_capcheck_result r = classify(&b);
        CU_ASSERT_TRUE_FATAL(r.n >= 1);
        CU_ASSERT_EQUAL(r.f[0].kind, cases[i].kind);
        CU_ASSERT_EQUAL(r.f[0].sev, GR_FS_ERROR);
        GR_ASSERT_CONTAINS(text(&r.f[0]), cases[i].what);
        GR_ASSERT_CONTAINS(text(&r.f[0]), cases[i].fix);
        gr_capcheck_result_free(&r);
    }
    /* ending on a stream that did not begin the capture */
    seqb um = {.n = 0};
    begin(&um, S, 0);
    end(&um, SIDE, 903);
    end(&um, S, 901);
    gr_capcheck_result r = classify(&um);
    EXPECT_N(r, 2);
    CU_ASSERT_EQUAL(r.f[0].kind, GR_FK_UNMATCHED);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "(capture ended on a stream that did not begin it). Fix: end the capture on the "
        "stream that began it");
    CU_ASSERT_EQUAL(r.f[1].sev, GR_FS_CONSEQUENCE);
    gr_capcheck_result_free(&r);
    /* begin refused (the legacy stream) */
    seqb bf = {.n = 0};
    legacy(call(&bf, "cudaStreamBeginCapture", 1))->mode = 0;
    r = classify(&bf);
    EXPECT_N(r, 1);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_BEGIN_FAILED, -1, "cudaStreamBeginCapture", 1);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "cudaStreamBeginCapture on the legacy default stream returned "
        "cudaErrorInvalidValue during a global-mode capture: breaks the capture (the "
        "capture could not begin). Fix: begin capture on a created stream that is not "
        "already capturing (never the legacy default stream)");
    CU_ASSERT_EQUAL(r.captures, 0);
    gr_capcheck_result_free(&r);
    /* invalidated, and the checker saw no culprit */
    seqb inv = {.n = 0};
    begin(&inv, S, 0);
    launch(&inv, S, 0, "a");
    end(&inv, S, 901);
    r = classify(&inv);
    EXPECT_N(r, 1);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_INVALIDATED, -1, "cudaStreamEndCapture", 901);
    GR_ASSERT_CONTAINS(
        text(&r.f[0]),
        "breaks the capture (the capture was invalidated by a call the checker did not "
        "see). Fix: check from the program's start (cupti-launchstat --capture-check -- "
        "CMD) and look for calls from other threads");
    gr_capcheck_result_free(&r);
    /* a non-capture error inside a capture is not capture checking's business; the second capture
     * error is a consequence */
    seqb ne = {.n = 0};
    begin(&ne, S, 0);
    in_op(on(call(&ne, "cudaMemcpyAsync", 1), S), 1, "bad args");
    in_op(call(&ne, "cudaMalloc", 900), 2, "first");
    in_op(call(&ne, "cudaMalloc", 900), 3, "second");
    end(&ne, S, 901);
    r = classify(&ne);
    EXPECT_N(r, 3);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_ALLOC, 2, "cudaMalloc", 900);
    expect(&r.f[1], GR_FS_CONSEQUENCE, GR_FK_ALLOC, 3, "cudaMalloc", 900);
    GR_ASSERT_CONTAINS(
        text(&r.f[1]),
        "consequence (device allocation during capture). Fix: fix the first failing call "
        "above");
    CU_ASSERT_EQUAL(gr_capcheck_blocking(&r), 1);
    gr_capcheck_result_free(&r);
}

/* two threads capturing at once in thread-local mode: each capture keeps its own culprit */
static void test_two_captures(void) {
    seqb b = {.n = 0};
    begin(&b, S, 1);
    thread(on(call(&b, "cudaStreamBeginCapture", 0), OTHER), T1)->mode = 1;
    thread(in_op(on(call(&b, "__cudaLaunchKernel", 0), OTHER), 1, "theirs"), T1);
    in_op(on(call(&b, "cudaStreamSynchronize", 900), S), 2, "ours");
    thread(on(call(&b, "cudaStreamEndCapture", 0), OTHER), T1);
    end(&b, S, 901);
    gr_capcheck_result r = classify(&b);
    EXPECT_N(r, 2);
    expect(&r.f[0], GR_FS_ERROR, GR_FK_SYNC, 2, "cudaStreamSynchronize", 900);
    CU_ASSERT_EQUAL(r.f[0].mode, 1);
    CU_ASSERT_FALSE(r.f[0].other_thread);
    expect(&r.f[1], GR_FS_CONSEQUENCE, GR_FK_INVALIDATED, -1, "cudaStreamEndCapture", 901);
    CU_ASSERT_EQUAL(r.captures, 2);
    CU_ASSERT_EQUAL(r.captures_ok, 1);
    CU_ASSERT_EQUAL(r.captures_failed, 1);
    gr_capcheck_result_free(&r);
}

/* the summary lines, truncation, warnings and the JSON form */
static void test_print_and_json(void) {
    static seqb b;
    b.n = 0;
    begin(&b, S, 0);
    in_op(on(call(&b, "cudaStreamSynchronize", 900), S), 1, "stream_sync");
    end(&b, S, 901);
    gr_capcheck_result r = classify(&b);
    r.dropped = 3;
    FILE *f = tmpfile();
    gr_capcheck_print(f, &r, "  ");
    char *txt = slurp(f);
    fclose(f);
    GR_ASSERT_CONTAINS(
        txt, "  [error] op 1 \"stream_sync\": cudaStreamSynchronize on stream 0x7f0000001000");
    GR_ASSERT_CONTAINS(txt, "  [consequence] thread 100: cudaStreamEndCapture");
    GR_ASSERT_CONTAINS(txt, "  2 findings: 1 error, 1 consequence, 0 escapes, 0 hazards (1 "
                            "capture: 0 ended, 1 failed; 3 "
                            "calls checked)");
    GR_ASSERT_CONTAINS(txt, "  warning: the recorder dropped 3 calls; findings may be missing");
    free(txt);
    json_t *j = gr_capcheck_json(&r);
    json_t *f0 = json_array_get(json_object_get(j, "findings"), 0);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(f0, "severity")), "error");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(f0, "kind")), "sync");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(f0, "api")), "cudaStreamSynchronize");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(f0, "error")),
                           "cudaErrorStreamCaptureUnsupported");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(f0, "capture_mode")), "global");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(f0, "stream")), "0x7f0000001000");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(f0, "op_name")), "stream_sync");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(f0, "op")), 1);
    CU_ASSERT_TRUE(json_is_true(json_object_get(f0, "blocks_capture")));
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(f0, "fix")), "record an event");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "blocking")), 1);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "captures_failed")), 1);
    json_decref(j);
    gr_capcheck_result_free(&r);

    /* more findings than are kept; a capture that never ended */
    b.n = 0;
    begin(&b, S, 0);
    for (int i = 0; i < GR_CAPCHECK_MAX_FINDINGS + 20; i++)
        legacy(in_op(call(&b, "cudaMemsetAsync", 0), i, "m"));
    r = classify(&b);
    CU_ASSERT_EQUAL(r.n, GR_CAPCHECK_MAX_FINDINGS);
    CU_ASSERT_EQUAL(r.total, (size_t)GR_CAPCHECK_MAX_FINDINGS + 20);
    CU_ASSERT_TRUE(r.unfinished);
    f = tmpfile();
    gr_capcheck_print(f, &r, "");
    txt = slurp(f);
    fclose(f);
    GR_ASSERT_CONTAINS(txt, "(20 more findings not kept: only the first 512 are)");
    GR_ASSERT_CONTAINS(txt, "warning: a capture had not ended when the recording stopped");
    free(txt);
    gr_capcheck_result_free(&r);
    /* the tracker's limits */
    gr_capcheck_result ov;
    memset(&ov, 0, sizeof(ov));
    ov.tracker_overflow = 1;
    f = tmpfile();
    gr_capcheck_print(f, &ov, "");
    txt = slurp(f);
    fclose(f);
    GR_ASSERT_CONTAINS(
        txt, "warning: more concurrent captures or forked streams than the checker tracks (8, 64)");
    free(txt);
    /* names of every severity and kind */
    CU_ASSERT_STRING_EQUAL(gr_find_sev_name(GR_FS_ESCAPE), "escape");
    CU_ASSERT_STRING_EQUAL(gr_find_sev_name(9), "?");
    CU_ASSERT_STRING_EQUAL(gr_find_kind_name(GR_FK_READBACK), "readback");
    CU_ASSERT_STRING_EQUAL(gr_find_kind_name(GR_FK_NKINDS), "?");
    for (int k = 0; k < GR_FK_NKINDS; k++) {
        gr_finding f1;
        memset(&f1, 0, sizeof(f1));
        f1.kind = k;
        f1.sev = GR_FS_HAZARD;
        CU_ASSERT_NOT_EQUAL(strcmp(gr_finding_what(&f1), "?"), 0);
        CU_ASSERT_NOT_EQUAL(strcmp(gr_finding_fix(&f1), "?"), 0);
    }
}

/* ---- suite capcheck_io: recordings as JSON lines ---- */

static void test_jsonl_round_trip(void) {
    gr_capev e;
    memset(&e, 0, sizeof(e));
    e.seq = 7;
    e.tid = 4242;
    e.driver = 0;
    e.cbid = 41;
    snprintf(e.api, sizeof(e.api), "cudaMemcpyAsync");
    e.ret = 900;
    e.stream_kind = GR_SK_HANDLE;
    e.stream = 0x7f00deadbee0ull;
    e.event = 0x55aa00;
    e.copy = GR_CP_D2H;
    e.hostmem = GR_HM_PAGEABLE;
    e.bytes = 4;
    e.mode = 2;
    e.op = 8;
    snprintf(e.op_name, sizeof(e.op_name), "item \"x\"");
    e.op_flags = 3;
    snprintf(e.ranges, sizeof(e.ranges), "step > loss");
    e.cap = GR_CS_MEMBER;
    gr_capev_header h;
    memset(&h, 0, sizeof(h));
    snprintf(h.tool, sizeof(h.tool), "graphrun");
    snprintf(h.source, sizeof(h.source), "in-process");
    snprintf(h.command, sizeof(h.command), "graphrun run w.json");
    snprintf(h.note, sizeof(h.note), "variant item");
    h.pid = 99;
    gr_sbuf b;
    gr_sb_init(&b);
    gr_capev_format_header(&b, &h);
    gr_sb_raw(&b, "\n\n", 2); /* a blank line is fine */
    gr_capev_format(&b, &e);
    gr_sb_cstr(&b, "\r\n{\"t\":\"later_kind\",\"x\":1}\n");
    gr_capev_format_end(&b, 1, 5, NULL);
    gr_sb_raw(&b, "\n", 1);
    gr_capev_list l;
    gr_error err;
    gr_error_clear(&err);
    gr_status st = gr_capev_load_mem(b.p, b.len, "mem.jsonl", &l, &err);
    if (st != GR_OK) fprintf(stderr, "\n    %s", err.msg);
    CU_ASSERT_EQUAL_FATAL(st, GR_OK);
    CU_ASSERT_EQUAL_FATAL(l.n, 1);
    CU_ASSERT_TRUE(l.has_end);
    CU_ASSERT_EQUAL(l.dropped, 5);
    CU_ASSERT_STRING_EQUAL(l.hdr.tool, "graphrun");
    CU_ASSERT_STRING_EQUAL(l.hdr.note, "variant item");
    CU_ASSERT_EQUAL(l.hdr.pid, 99);
    const gr_capev *g = &l.v[0];
    CU_ASSERT_EQUAL(g->seq, 7);
    CU_ASSERT_EQUAL(g->tid, 4242);
    CU_ASSERT_EQUAL(g->cbid, 41);
    CU_ASSERT_STRING_EQUAL(g->api, "cudaMemcpyAsync");
    CU_ASSERT_EQUAL(g->ret, 900);
    CU_ASSERT_EQUAL(g->stream_kind, GR_SK_HANDLE);
    CU_ASSERT_EQUAL(g->stream, 0x7f00deadbee0ull);
    CU_ASSERT_EQUAL(g->event, 0x55aa00);
    CU_ASSERT_EQUAL(g->copy, GR_CP_D2H);
    CU_ASSERT_EQUAL(g->hostmem, GR_HM_PAGEABLE);
    CU_ASSERT_EQUAL(g->bytes, 4);
    CU_ASSERT_EQUAL(g->mode, 2);
    CU_ASSERT_EQUAL(g->op, 8);
    CU_ASSERT_STRING_EQUAL(g->op_name, "item \"x\"");
    CU_ASSERT_EQUAL(g->op_flags, 3);
    CU_ASSERT_STRING_EQUAL(g->ranges, "step > loss");
    CU_ASSERT_EQUAL(g->cap, GR_CS_MEMBER);
    gr_capev_list_free(&l);
    /* defaults of a minimal line; the end record's error */
    const char *min =
        "{\"t\":\"capcheck\",\"schema_version\":1}\n{\"t\":\"call\",\"seq\":1,\"d\":\"drv\","
        "\"api\":\"cuCtxSynchronize\"}\n"
        "{\"t\":\"end\",\"events\":0,\"dropped\":0,\"error\":\"cuptiSubscribe_v2 failed\"}\n";
    CU_ASSERT_EQUAL_FATAL(gr_capev_load_mem(min, strlen(min), "min", &l, &err), GR_OK);
    CU_ASSERT_EQUAL(l.v[0].driver, 1);
    CU_ASSERT_EQUAL(l.v[0].op, -1);
    CU_ASSERT_EQUAL(l.v[0].mode, -1);
    CU_ASSERT_EQUAL(l.v[0].stream_kind, GR_SK_NONE);
    CU_ASSERT_STRING_EQUAL(l.end_error, "cuptiSubscribe_v2 failed");
    gr_capev_list_free(&l);
    /* a file: save, load */
    seqb s = {.n = 0};
    begin(&s, S, 1);
    in_op(on(call(&s, "cudaStreamSynchronize", 900), S), 1, "x");
    end(&s, S, 901);
    gr_capev_list src;
    memset(&src, 0, sizeof(src));
    for (size_t i = 0; i < s.n; i++)
        gr_capev_list_push(&src, &s.v[i]);
    src.hdr = h;
    const char *path = "/tmp/gr_test_capcheck_save.jsonl";
    CU_ASSERT_EQUAL_FATAL(gr_capev_save(path, &src, &err), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_capev_load(path, &l, &err), GR_OK);
    CU_ASSERT_EQUAL(l.n, 3);
    CU_ASSERT_EQUAL(l.v[0].mode, 1);
    CU_ASSERT_STRING_EQUAL(l.v[1].op_name, "x");
    gr_capcheck_result r;
    CU_ASSERT_EQUAL(gr_capcheck_classify(l.v, l.n, &r, &err), GR_OK);
    CU_ASSERT_EQUAL(r.n, 2);
    gr_capcheck_result_free(&r);
    gr_capev_list_free(&l);
    gr_capev_list_free(&src);
    unlink(path);
    gr_sb_free(&b);
}

static const char *load_error(const char *text) {
    static char msg[GR_ERROR_MSG_MAX];
    gr_capev_list l;
    gr_error err;
    gr_error_clear(&err);
    if (gr_capev_load_mem(text, strlen(text), "rec.jsonl", &l, &err) == GR_OK) {
        gr_capev_list_free(&l);
        return "(no error)";
    }
    CU_ASSERT_EQUAL(err.code, GR_ERR_INPUT);
    snprintf(msg, sizeof(msg), "%s", err.msg);
    return msg;
}

#define HDR "{\"t\":\"capcheck\",\"schema_version\":1}\n"

static void test_jsonl_errors(void) {
    GR_ASSERT_CONTAINS(load_error(""),
                       "rec.jsonl: empty recording: no header line {\"t\":\"capcheck\",...}");
    GR_ASSERT_CONTAINS(load_error("{\"t\":\"call\",\"seq\":1}\n"),
                       "rec.jsonl:1:6: the first line must be the header {\"t\":\"capcheck\",...}; "
                       "got kind \"call\" (a "
                       "capture-check recording: docs/capture_check.md)");
    GR_ASSERT_CONTAINS(load_error("{\"t\":\"capcheck\",\"schema_version\":2}\n"),
                       "rec.jsonl:1:1: schema_version 2 is not supported (this graphrun reads 1; a "
                       "newer graphrun wrote it?)");
    GR_ASSERT_CONTAINS(load_error(HDR "{\"t\":\"call\",\"seq\":1,\n"), "rec.jsonl:2:");
    GR_ASSERT_CONTAINS(load_error(HDR "{\"x\":1}\n"),
                       "rec.jsonl:2:1: every line needs a string field \"t\"");
    GR_ASSERT_CONTAINS(load_error(HDR "{\"t\":\"call\",\"d\":\"rt\",\"api\":\"a\"}\n"),
                       "rec.jsonl:2:1: missing field \"seq\"");
    GR_ASSERT_CONTAINS(load_error(HDR "{\"t\":\"call\",\"seq\":1,\"api\":\"a\"}\n"),
                       "rec.jsonl:2:1: missing field \"d\"");
    GR_ASSERT_CONTAINS(load_error(HDR "{\"t\":\"call\",\"seq\":1,\"d\":\"rt\"}\n"),
                       "rec.jsonl:2:1: missing field \"api\"");
    GR_ASSERT_CONTAINS(load_error(HDR "{\"t\":\"call\",\"seq\":1,\"d\":\"rt\",\"api\":\"\"}\n"),
                       "rec.jsonl:2:36: empty field \"api\"");
    GR_ASSERT_CONTAINS(load_error(HDR "{\"t\":\"call\",\"seq\":-1,\"d\":\"rt\",\"api\":\"a\"}\n"),
                       "rec.jsonl:2:19: expected a whole number >= 0 in field \"seq\"");
    GR_ASSERT_CONTAINS(load_error(HDR "{\"t\":\"call\",\"seq\":1,\"d\":\"gpu\",\"api\":\"a\"}\n"),
                       "rec.jsonl:2:25: unknown value for field \"d\"");
    GR_ASSERT_CONTAINS(
        load_error(HDR "{\"t\":\"call\",\"seq\":1,\"d\":\"rt\",\"api\":\"a\",\"sk\":\"handle\"}\n"),
        "rec.jsonl:2:1: a handle stream needs field \"str\"");
    GR_ASSERT_CONTAINS(load_error(HDR "{\"t\":\"call\",\"seq\":1,\"d\":\"rt\",\"api\":\"a\",\"sk\":"
                                      "\"handle\",\"str\":\"12\"}\n"),
                       "rec.jsonl:2:60: expected a hex string \"0x...\" in field \"str\"");
    GR_ASSERT_CONTAINS(
        load_error(HDR "{\"t\":\"call\",\"seq\":1,\"d\":\"rt\",\"api\":\"a\",\"ev\":\"0xzz\"}\n"),
        "expected a hex string \"0x...\" in field \"ev\"");
    GR_ASSERT_CONTAINS(
        load_error(HDR "{\"t\":\"call\",\"seq\":1,\"d\":\"rt\",\"api\":\"a\",\"ret\":1.5}\n"),
        "expected a whole number in field \"ret\"");
    GR_ASSERT_CONTAINS(load_error(HDR "{\"t\":\"call\",\"seq\":1,\"d\":\"rt\",\"api\":7}\n"),
                       "expected a string in field \"api\"");
    GR_ASSERT_CONTAINS(
        load_error(HDR
                   "{\"t\":\"call\",\"seq\":1,\"d\":\"rt\",\"api\":\"a\",\"mode\":\"strict\"}\n"),
        "unknown value for field \"mode\"");
    gr_capev_list l;
    gr_error err;
    gr_error_clear(&err);
    CU_ASSERT_EQUAL(gr_capev_load("/nonexistent/rec.jsonl", &l, &err), GR_ERR_IO);
    GR_ASSERT_CONTAINS(
        err.msg, "/nonexistent/rec.jsonl: cannot read the recording: No such file or directory");
    gr_error_clear(&err);
    memset(&l, 0, sizeof(l));
    CU_ASSERT_EQUAL(gr_capev_save("/nonexistent/dir/rec.jsonl", &l, &err), GR_ERR_IO);
    GR_ASSERT_CONTAINS(
        err.msg,
        "/nonexistent/dir/rec.jsonl: cannot write the capture-check recording: No such file or "
        "directory (is the directory writable?)");
}

/* The recorded GPU fixtures: each classified as capcheck_expect.h says, and the recorder's view
 * of each stream equal to the tracker's. */
static void test_fixtures(void) {
    const char *dir = gr_test_src("tests/data");
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *ent;
    int n = 0, seen[GR_CC_NPATTERNS][3] = {{0}};
    while ((ent = readdir(d))) {
        const char *name = ent->d_name;
        size_t len = strlen(name);
        if (strncmp(name, "capcheck_", 9) != 0 || len < 16 || strcmp(name + len - 6, ".jsonl") != 0)
            continue;
        char stem[256];
        snprintf(stem, sizeof(stem), "%.*s", (int)(len - 6 - 9), name + 9);
        char *us = strrchr(stem, '_');
        CU_ASSERT_PTR_NOT_NULL_FATAL(us);
        *us = '\0';
        const char *pattern = stem, *mode_s = us + 1;
        int mode = !strcmp(mode_s, "global")         ? 0
                   : !strcmp(mode_s, "thread-local") ? 1
                   : !strcmp(mode_s, "relaxed")      ? 2
                                                     : -1;
        CU_ASSERT_TRUE_FATAL(mode >= 0);
        for (int pi = 0; pi < GR_CC_NPATTERNS; pi++)
            if (!strcmp(gr_cc_patterns[pi], pattern)) seen[pi][mode]++;
        const gr_cc_expect *x = gr_cc_expect_for(pattern, mode);
        if (!x) fprintf(stderr, "\n    %s: no expectation for pattern %s", name, pattern);
        CU_ASSERT_PTR_NOT_NULL_FATAL(x);
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        gr_capev_list l;
        gr_error err;
        gr_error_clear(&err);
        gr_status st = gr_capev_load(path, &l, &err);
        if (st != GR_OK) fprintf(stderr, "\n    %s", err.msg);
        CU_ASSERT_EQUAL_FATAL(st, GR_OK);
        CU_ASSERT_TRUE(l.has_end);
        CU_ASSERT_EQUAL(l.dropped, 0);
        /* the recorder's stream status agrees with the tracker replayed here */
        gr_captrack t;
        gr_captrack_init(&t);
        int agree = 1;
        for (size_t i = 0; i < l.n; i++) {
            agree &= l.v[i].cap == (int)gr_captrack_status(&t, &l.v[i]);
            gr_captrack_apply(&t, &l.v[i]);
        }
        CU_ASSERT_TRUE(agree);
        gr_capcheck_result r;
        CU_ASSERT_EQUAL_FATAL(gr_capcheck_classify(l.v, l.n, &r, &err), GR_OK);
        char why[256];
        int ok = gr_cc_expect_check(x, &r, r.captures_failed > 0, why, sizeof(why));
        if (!ok) {
            fprintf(stderr, "\n    %s: %s", name, why);
            dump(&r);
        }
        CU_ASSERT_TRUE(ok);
        CU_ASSERT_EQUAL(r.captures, 1);
        gr_capcheck_result_free(&r);
        gr_capev_list_free(&l);
        n++;
    }
    closedir(d);
    /* one recording of every pattern in every mode (GR_CAPCHECK_FIXTURES=tests/data gr_tests
     * --suite gpu_capcheck records them on a GPU): a missing one fails, it is not skipped */
    printf("\n    %d capture-check recordings in tests/data", n);
    CU_ASSERT_EQUAL(n, GR_CC_NPATTERNS * 3);
    for (int pi = 0; pi < GR_CC_NPATTERNS; pi++)
        for (int m = 0; m < 3; m++) {
            if (seen[pi][m] != 1)
                fprintf(stderr, "\n    tests/data/capcheck_%s_%s.jsonl: %s", gr_cc_patterns[pi],
                        gr_capture_mode_str(m), seen[pi][m] ? "more than one match" : "missing");
            CU_ASSERT_EQUAL(seen[pi][m], 1);
        }
}

/* ---- suite capcheck_piecewise: segments, breakers, fixed plans, command lines ---- */

static const char *fork_wl =
    "{\"name\": \"fj\", \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [256], "
    "\"init\": \"normal\"},"
    "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [256]}, {\"name\": \"z\", \"dtype\": "
    "\"fp32\", \"shape\": [256]}],"
    "\"outputs\": [\"y\", \"z\"], \"ops\": ["
    "{\"name\": \"a\", \"kernel\": \"tiny\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]},"
    "{\"fork\": \"aux\"},"
    "{\"name\": \"b\", \"kernel\": \"tiny\", \"inputs\": [\"x\"], \"outputs\": [\"z\"], "
    "\"stream\": \"aux\"},"
    "{\"name\": \"c\", \"kernel\": \"tiny\", \"inputs\": [\"y\"], \"outputs\": [\"y\"]},"
    "{\"join\": \"aux\"},"
    "{\"name\": \"d\", \"kernel\": \"tiny\", \"inputs\": [\"y\"], \"outputs\": [\"y\"]},"
    "{\"name\": \"e\", \"kernel\": \"tiny\", \"inputs\": [\"z\"], \"outputs\": [\"z\"]}]}";

static void test_segments(void) {
    gr_error err;
    gr_error_clear(&err);
    gr_plan *p = gr_test_plan(fork_wl, NULL, &err);
    if (!p) fprintf(stderr, "\n    %s", err.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL_FATAL(p->nops, 7);
    unsigned char eager[8] = {0};
    gr_segment seg[8];
    CU_ASSERT_EQUAL_FATAL(gr_piecewise_segments(p, eager, seg, 8), 1);
    CU_ASSERT_TRUE(seg[0].graph && seg[0].begin == 0 && seg[0].end == 7);
    eager[5] = 1; /* d */
    CU_ASSERT_EQUAL_FATAL(gr_piecewise_segments(p, eager, seg, 8), 3);
    CU_ASSERT_TRUE(seg[0].graph && seg[0].begin == 0 && seg[0].end == 5);
    CU_ASSERT_TRUE(!seg[1].graph && seg[1].begin == 5 && seg[1].end == 6);
    CU_ASSERT_TRUE(seg[2].graph && seg[2].begin == 6 && seg[2].end == 7);
    memset(eager, 0, sizeof(eager));
    eager[2] = 1; /* b, inside the fork region: the whole region runs eagerly */
    CU_ASSERT_EQUAL_FATAL(gr_piecewise_segments(p, eager, seg, 8), 3);
    CU_ASSERT_TRUE(seg[0].graph && seg[0].begin == 0 && seg[0].end == 1);
    CU_ASSERT_TRUE(!seg[1].graph && seg[1].begin == 1 && seg[1].end == 5);
    CU_ASSERT_TRUE(seg[2].graph && seg[2].begin == 5 && seg[2].end == 7);
    eager[5] = eager[6] = 1; /* consecutive eager blocks merge */
    CU_ASSERT_EQUAL_FATAL(gr_piecewise_segments(p, eager, seg, 8), 2);
    CU_ASSERT_TRUE(seg[0].graph && seg[0].begin == 0 && seg[0].end == 1);
    CU_ASSERT_TRUE(!seg[1].graph && seg[1].begin == 1 && seg[1].end == 7);
    memset(eager, 1, sizeof(eager));
    CU_ASSERT_EQUAL_FATAL(gr_piecewise_segments(p, eager, seg, 8), 1);
    CU_ASSERT_TRUE(!seg[0].graph && seg[0].end == 7);
    /* the description of a piecewise run */
    gr_piecewise pw;
    memset(&pw, 0, sizeof(pw));
    gr_segment s3[3] = {{0, 1, 1, {0}}, {1, 5, 0, {0}}, {5, 7, 1, {0}}};
    pw.seg = s3;
    pw.nseg = 3;
    pw.graphs = 2;
    pw.eager_ops = 4;
    char desc[256];
    gr_piecewise_str(&pw, p, desc, sizeof(desc));
    CU_ASSERT_STRING_EQUAL(desc,
                           "3 ops in 2 graphs, 4 eager ops: 1 fork:aux, 2 b, 3 c, 4 join:aux");
    gr_plan_destroy(p);
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

static gr_plan *breakers_plan(const char *variant, const char *sets) {
    char *text = read_text(gr_test_src("workloads/capture_breakers.json"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    gr_error err;
    gr_error_clear(&err);
    gr_workload *wl = gr_test_load(text, &err);
    free(text);
    if (!wl) fprintf(stderr, "\n    %s", err.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(wl);
    if (sets) CU_ASSERT_EQUAL(gr_workload_set(wl, sets, &err), GR_OK);
    const char *v = gr_workload_variant(wl, variant, &err);
    gr_plan *p = NULL;
    gr_target t = gr_target_default();
    if (v) gr_plan_resolve(wl, v, &t, gr_kernel_find, gr_kernel_all_names, &p, &err);
    if (!p) fprintf(stderr, "\n    %s", err.msg);
    gr_workload_destroy(wl);
    return p;
}

static int pattern_of(const gr_plan *p, const char *op_name) {
    for (int i = 0; i < p->nops; i++)
        if (!strcmp(p->ops[i].name, op_name)) return (int)p->ops[i].ip[1];
    return -1;
}

static void test_breakers(void) {
    CU_ASSERT_PTR_NOT_NULL(gr_kernel_find("capture_breaker"));
    CU_ASSERT_PTR_NOT_NULL(gr_kernel_find("capture_breaker_lib"));
    CU_ASSERT_STRING_EQUAL(gr_breaker_pattern_name(GR_BRK_ITEM), "item");
    CU_ASSERT_STRING_EQUAL(gr_breaker_pattern_name(99), "?");
    CU_ASSERT_EQUAL(gr_breaker_clean_of(GR_BRK_LEGACY_COPY), GR_BRK_COPY);
    CU_ASSERT_EQUAL(gr_breaker_clean_of(GR_BRK_SYNC_COPY), GR_BRK_COPY);
    CU_ASSERT_EQUAL(gr_breaker_clean_of(GR_BRK_PAGEABLE_COPY), GR_BRK_HOST_COPY);
    CU_ASSERT_EQUAL(gr_breaker_clean_of(GR_BRK_FORK), GR_BRK_NONE);
    CU_ASSERT_EQUAL(gr_breaker_clean_of(GR_BRK_LAZY_INIT), GR_BRK_NONE);
    CU_ASSERT_EQUAL(gr_breaker_clean_of(GR_BRK_NONE), -1);
    CU_ASSERT_EQUAL(gr_breaker_clean_of(GR_BRK_HOST_COPY), -1);
    CU_ASSERT_EQUAL(gr_breaker_host_value(65), -3.75f);
    /* every variant resolves; "all" has one op per pattern */
    gr_plan *all = breakers_plan("all", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(all);
    CU_ASSERT_EQUAL(all->nops, 8 + 15 + 8);
    CU_ASSERT_EQUAL(pattern_of(all, "item"), GR_BRK_ITEM);
    CU_ASSERT_EQUAL(pattern_of(all, "lazy_init"), GR_BRK_LAZY_INIT);
    /* the references: y = 2x + x[0], y = x, y = the host table */
    int idx_item = -1, idx_copy = -1, idx_page = -1;
    for (int i = 0; i < all->nops; i++) {
        if (!strcmp(all->ops[i].name, "item")) idx_item = i;
        if (!strcmp(all->ops[i].name, "legacy_copy")) idx_copy = i;
        if (!strcmp(all->ops[i].name, "pageable_copy")) idx_page = i;
    }
    CU_ASSERT_TRUE_FATAL(idx_item >= 0 && idx_copy >= 0 && idx_page >= 0);
    void **host = calloc((size_t)all->nbufs, sizeof(void *));
    for (int b = 0; b < all->nbufs; b++)
        host[b] = calloc((size_t)all->bufs[b].numel, sizeof(float));
    float *x = host[all->ops[idx_item].inputs[0]];
    for (int i = 0; i < 4096; i++)
        x[i] = (float)(i % 7) - 3.0f;
    gr_error err;
    gr_error_clear(&err);
    const gr_op *o = &all->ops[idx_item];
    CU_ASSERT_EQUAL(o->kernel->reference(o, all, host, &err), GR_OK);
    float *y = host[o->outputs[0]];
    CU_ASSERT_EQUAL(y[0], 2.0f * x[0] + x[0]);
    CU_ASSERT_EQUAL(y[10], 2.0f * x[10] + x[0]);
    o = &all->ops[idx_copy];
    CU_ASSERT_EQUAL(o->kernel->reference(o, all, host, &err), GR_OK);
    CU_ASSERT_EQUAL(((float *)host[o->outputs[0]])[5], x[5]);
    o = &all->ops[idx_page];
    CU_ASSERT_EQUAL(o->kernel->reference(o, all, host, &err), GR_OK);
    CU_ASSERT_EQUAL(((float *)host[o->outputs[0]])[65], -3.75f);
    for (int b = 0; b < all->nbufs; b++)
        free(host[b]);
    free(host);
    /* the fixed plan: every breaker op replaced by its clean counterpart, the original untouched */
    gr_plan *fixed = NULL;
    int nfixed = 0;
    CU_ASSERT_EQUAL_FATAL(gr_breaker_fix_plan(all, NULL, -1, &fixed, &nfixed, &err), GR_OK);
    CU_ASSERT_EQUAL(nfixed, 15);
    CU_ASSERT_STRING_EQUAL(fixed->variant, "all (fixed)");
    CU_ASSERT_EQUAL(pattern_of(fixed, "item"), GR_BRK_NONE);
    CU_ASSERT_EQUAL(pattern_of(fixed, "sync_copy"), GR_BRK_COPY);
    CU_ASSERT_EQUAL(pattern_of(fixed, "pageable_copy"), GR_BRK_HOST_COPY);
    CU_ASSERT_EQUAL(pattern_of(fixed, "lazy_init"), GR_BRK_NONE);
    CU_ASSERT_STRING_EQUAL(gr_op_attr_str(&fixed->ops[idx_item], "pattern", "?"), "none");
    CU_ASSERT_EQUAL(pattern_of(all, "item"), GR_BRK_ITEM);
    CU_ASSERT_EQUAL(fixed->kernels, all->kernels);
    gr_plan_destroy(fixed);
    int only[1] = {idx_item};
    CU_ASSERT_EQUAL_FATAL(gr_breaker_fix_plan(all, only, 1, &fixed, &nfixed, &err), GR_OK);
    CU_ASSERT_EQUAL(nfixed, 1);
    CU_ASSERT_EQUAL(pattern_of(fixed, "item"), GR_BRK_NONE);
    CU_ASSERT_EQUAL(pattern_of(fixed, "fork"), GR_BRK_FORK);
    gr_plan_destroy(fixed);
    gr_plan_destroy(all);
    /* nothing to fix in a clean plan */
    gr_plan *clean = breakers_plan("clean", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(clean);
    CU_ASSERT_EQUAL_FATAL(gr_breaker_fix_plan(clean, NULL, -1, &fixed, &nfixed, &err), GR_OK);
    CU_ASSERT_EQUAL(nfixed, 0);
    CU_ASSERT_STRING_EQUAL(fixed->variant, "clean");
    gr_plan_destroy(fixed);
    gr_plan_destroy(clean);
    /* every per-pattern variant */
    static const char *const vs[] = {"stream_sync", "device_sync", "event_sync",   "stream_query",
                                     "event_query", "alloc",       "alloc_host",   "alloc_thread",
                                     "legacy_copy", "sync_copy",   "other_stream", "pageable_copy",
                                     "fork",        "item",        "lazy_init"};
    for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
        gr_plan *p = breakers_plan(vs[i], "K=2");
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(p->nops, 5);
        CU_ASSERT_EQUAL(pattern_of(p, vs[i]), (int)(GR_BRK_STREAM_SYNC + i));
        CU_ASSERT_PTR_NOT_NULL(gr_cc_expect_for(vs[i], 0));
        CU_ASSERT_PTR_NOT_NULL(gr_cc_expect_for(vs[i], 1));
        CU_ASSERT_PTR_NOT_NULL(gr_cc_expect_for(vs[i], 2));
        gr_plan_destroy(p);
    }
}

static void test_breaker_errors(void) {
    const char *base = "{\"name\": \"b\", \"buffers\": [{\"name\": \"x\", \"dtype\": \"%s\", "
                       "\"shape\": [%s], \"init\": \"normal\"},"
                       "{\"name\": \"y\", \"dtype\": \"%s\", \"shape\": [%s]}], \"outputs\": "
                       "[\"y\"], \"ops\": [{\"name\": \"brk\", "
                       "\"kernel\": \"%s\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], \"attrs\": "
                       "{\"pattern\": \"%s\"}}]}";
    char js[1024];
    snprintf(js, sizeof(js), base, "fp32", "64", "fp32", "64", "capture_breaker_lib", "alloc");
    GR_ASSERT_CONTAINS(gr_test_plan_error(js, NULL),
                       "ops[0].attrs.pattern: \"alloc\" is not one of: none, lazy_init");
    snprintf(js, sizeof(js), base, "fp32", "64", "fp32", "64", "capture_breaker", "lazy_init");
    GR_ASSERT_CONTAINS(gr_test_plan_error(js, NULL),
                       "ops[0].attrs.pattern: \"lazy_init\" is not one of: none, copy, "
                       "host_copy, stream_sync, device_sync, event_sync, stream_query, "
                       "event_query, alloc, alloc_host, alloc_thread, legacy_copy, "
                       "sync_copy, other_stream, pageable_copy, fork, item");
    snprintf(js, sizeof(js), base, "bf16", "64", "bf16", "64", "capture_breaker", "none");
    GR_ASSERT_CONTAINS(gr_test_plan_error(js, NULL),
                       "kernel \"capture_breaker\": inputs[0] \"x\" is bf16; it takes fp32");
    snprintf(js, sizeof(js), base, "fp32", "67108865", "fp32", "67108865", "capture_breaker",
             "none");
    GR_ASSERT_CONTAINS(gr_test_plan_error(js, NULL),
                       "kernel \"capture_breaker\" is for small buffers (<= 2^26 elements); "
                       "\"x\" has 67108865");
    snprintf(js, sizeof(js), base, "fp32", "64", "fp32", "64", "capture_breaker", "item");
    GR_ASSERT_CONTAINS(gr_test_plan_error(js, NULL), "(no error)");
}

static void test_record_path(void) {
    char out[256];
    gr_capcheck_record_path("out/rec.jsonl", "item", 1, out, sizeof(out));
    CU_ASSERT_STRING_EQUAL(out, "out/rec.jsonl");
    gr_capcheck_record_path("out/rec.jsonl", "item", 3, out, sizeof(out));
    CU_ASSERT_STRING_EQUAL(out, "out/rec.item.jsonl");
    gr_capcheck_record_path("dir.v1/rec", "item", 3, out, sizeof(out));
    CU_ASSERT_STRING_EQUAL(out, "dir.v1/rec.item");
    gr_capcheck_record_path("rec", "fork", 2, out, sizeof(out));
    CU_ASSERT_STRING_EQUAL(out, "rec.fork");
}

/* the report sections from a hand-made run report (no GPU) */
static void test_report_sections(void) {
    gr_run_report *r = gr_run_report_create(NULL, NULL, NULL);
    gr_plan *p = breakers_plan("item", "K=2");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_run_report_add(r, p);
    gr_run_report_add(r, p);
    r->opts.mode = GR_CAPTURE_GLOBAL;
    gr_capcheck_variant *cv = &r->v[0].cc;
    cv->attempted = cv->checked = 1;
    seqb b = {.n = 0};
    begin(&b, S, 0);
    in_op(on(call(&b, "cudaStreamSynchronize", 900), S), 2, "item");
    end(&b, S, 901);
    gr_capcheck_result res = classify(&b);
    gr_cc_findings_set(&cv->full, &res);
    gr_capcheck_result_free(&res);
    cv->full_failed = cv->full_blocked = 1;
    cv->piecewise = 1;
    snprintf(cv->pw_desc, sizeof(cv->pw_desc), "4 ops in 2 graphs, 1 eager op: 2 item");
    cv->pw_captures = 2;
    cv->pw_rounds = 1;
    cv->pw_verified = cv->pw_timed = 1;
    cv->eager.step_us.median = 40;
    cv->pw_t.step_us.median = 20;
    cv->fixed = cv->fixed_verified = cv->fixed_timed = 1;
    cv->fixed_ops = 1;
    cv->fixed_t.step_us.median = 10;
    snprintf(cv->recorded, sizeof(cv->recorded), "/tmp/rec.jsonl");
    r->v[1].cc.attempted = 1;
    snprintf(r->v[1].cc.why, sizeof(r->v[1].cc.why),
             "cuptiSubscribe_v2 failed: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS");
    FILE *f = tmpfile();
    gr_capcheck_report_text(f, r);
    char *txt = slurp(f);
    fclose(f);
    GR_ASSERT_CONTAINS(
        txt, "capture check (CUPTI callbacks on every runtime and driver API call while a stream "
             "captures; global mode)");
    GR_ASSERT_CONTAINS(
        txt, "  item             the capture failed: 1 error, 1 consequence, 0 escapes, 0 hazards");
    GR_ASSERT_CONTAINS(txt, "    [error] op 2 \"item\": cudaStreamSynchronize");
    GR_ASSERT_CONTAINS(txt, "recording written to /tmp/rec.jsonl");
    GR_ASSERT_CONTAINS(txt, "  item             not checked: cuptiSubscribe_v2 failed");
    GR_ASSERT_CONTAINS(
        txt, "piecewise capture (capturable segments replayed as graphs, breaking ops run eagerly "
             "between them;");
    GR_ASSERT_CONTAINS(txt, "    2.00x");
    GR_ASSERT_CONTAINS(txt, "    4.00x");
    GR_ASSERT_CONTAINS(
        txt,
        "4 ops in 2 graphs, 1 eager op: 2 item (2 checked captures, 1 round); outputs verified");
    GR_ASSERT_CONTAINS(txt, "fixed: 1 op replaced by its clean counterpart, verified");
    free(txt);
    json_t *j = gr_capcheck_variant_json(cv);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "full_capture")), "failed");
    json_t *pw = json_object_get(j, "piecewise");
    CU_ASSERT_DOUBLE_EQUAL(json_real_value(json_object_get(pw, "speedup")), 2.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(
        json_real_value(json_object_get(json_object_get(pw, "fixed"), "speedup_vs_eager")), 4.0,
        1e-12);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "blocking")), 1);
    json_decref(j);
    /* a variant without findings; nothing at all when no variant was checked */
    memset(&r->v[0].cc, 0, sizeof(r->v[0].cc));
    r->v[0].cc.attempted = r->v[0].cc.checked = 1;
    r->v[0].cc.full.calls = 17;
    r->v[1].cc.attempted = 0;
    f = tmpfile();
    gr_capcheck_report_text(f, r);
    txt = slurp(f);
    fclose(f);
    GR_ASSERT_CONTAINS(txt, "  item             no findings (17 calls checked while capturing)");
    CU_ASSERT_PTR_NULL(strstr(txt, "piecewise capture"));
    free(txt);
    r->v[0].cc.attempted = 0;
    f = tmpfile();
    gr_capcheck_report_text(f, r);
    txt = slurp(f);
    fclose(f);
    CU_ASSERT_STRING_EQUAL(txt, "");
    free(txt);
    gr_plan_destroy(p);
    gr_run_report_destroy(r);
}

/* ---- command lines ---- */

static const char *bin(const char *name) {
    return gr_test_bin(name);
}

static char out[1 << 18];

static int sh(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sh(const char *dir, const char *fmt, ...) {
    char cmd[8192], full[8400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    snprintf(full, sizeof(full), "cd '%s' && %s 2>&1", dir, cmd);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_graphrun_options(void) {
    const char *g = bin("graphrun");
    CU_ASSERT_EQUAL(
        sh(GR_SOURCE_DIR, "'%s' run workloads/capture_breakers.json --piecewise --no-piecewise", g),
        2);
    GR_ASSERT_CONTAINS(out, "graphrun: --piecewise and --no-piecewise contradict each other");
    CU_ASSERT_EQUAL(sh(GR_SOURCE_DIR,
                       "'%s' run workloads/capture_breakers.json --piecewise --no-capture-check",
                       g),
                    2);
    GR_ASSERT_CONTAINS(
        out, "graphrun: --piecewise needs the capture checker to find the ops to run eagerly; drop "
             "--no-capture-check");
    CU_ASSERT_EQUAL(sh(GR_SOURCE_DIR,
                       "'%s' run workloads/capture_breakers.json --no-capture-check "
                       "--capture-check-record /tmp/x.jsonl",
                       g),
                    2);
    GR_ASSERT_CONTAINS(
        out, "graphrun: --capture-check-record records what the capture checker sees; drop "
             "--no-capture-check");
    CU_ASSERT_EQUAL(
        sh(GR_SOURCE_DIR, "'%s' run workloads/capture_breakers.json --capture-check-record", g), 2);
    GR_ASSERT_CONTAINS(out, "option --capture-check-record needs a value");
    CU_ASSERT_EQUAL(sh(GR_SOURCE_DIR, "'%s' run --help", g), 0);
    GR_ASSERT_CONTAINS(out,
                       "--piecewise            capture piecewise even when the full graph works");
    GR_ASSERT_CONTAINS(
        out,
        "--no-piecewise         never: a capture that breaks or lets work escape fails (exit 1)");
    GR_ASSERT_CONTAINS(out, "--no-capture-check     capture without the checker");
    GR_ASSERT_CONTAINS(out, "--capture-check-record FILE");
    CU_ASSERT_EQUAL(sh(GR_SOURCE_DIR, "'%s' kernels capture_breaker", g), 0);
    GR_ASSERT_CONTAINS(
        out, "stream_sync, device_sync, event_sync, stream_query, event_query, alloc, alloc_host, "
             "alloc_thread, legacy_copy, sync_copy, other_stream, pageable_copy, fork, item");
    GR_ASSERT_CONTAINS(out, "(does host-side work; may break stream capture)");
    CU_ASSERT_EQUAL(sh(GR_SOURCE_DIR, "'%s' validate workloads/capture_breakers.json", g), 0);
    GR_ASSERT_CONTAINS(out, "workloads/capture_breakers.json: valid (17 variants)");
}

static const char *write_tmp(const char *suffix, const char *text) {
    return gr_test_tmpfile(suffix, text, strlen(text));
}

#define REC_HDR                                                                                    \
    "{\"t\":\"capcheck\",\"schema_version\":1,\"tool\":\"cupti-launchstat\",\"source\":"           \
    "\"injection\"}\n"
#define REC_BEGIN                                                                                  \
    "{\"t\":\"call\",\"seq\":1,\"tid\":7,\"d\":\"rt\",\"api\":\"cudaStreamBeginCapture\",\"ret\":" \
    "0,\"sk\":\"handle\",\"str\":\"0x7f0000001000\",\"mode\":\"global\"}\n"
#define REC_END(ret)                                                                               \
    "{\"t\":\"call\",\"seq\":9,\"tid\":7,\"d\":\"rt\",\"api\":\"cudaStreamEndCapture\","           \
    "\"ret\":" #ret ",\"sk\":\"handle\",\"str\":\"0x7f0000001000\"}\n"

/* cupti-launchstat --capture-check around a stand-in program that writes a prepared recording
 * where the injection library would (no GPU needed) */
static void test_launchstat_capture_check(void) {
    const char *ls = bin("cupti-launchstat");
    const char *broken = write_tmp(
        ".jsonl", REC_HDR REC_BEGIN
        "{\"t\":\"call\",\"seq\":2,\"tid\":7,\"d\":\"rt\",\"api\":\"cudaMemcpyAsync\",\"ret\":0,"
        "\"sk\":\"handle\",\"str\":\"0x7f0000001000\",\"copy\":\"DtoH\",\"hm\":\"pageable\","
        "\"nvtx\":\"step > loss\"}\n"
        "{\"t\":\"call\",\"seq\":3,\"tid\":7,\"d\":\"rt\",\"api\":\"cudaStreamSynchronize\","
        "\"ret\":900,\"sk\":\"handle\",\"str\":\"0x7f0000001000\",\"nvtx\":\"step > "
        "loss\"}\n" REC_END(901) "{\"t\":\"end\",\"events\":4,\"dropped\":0}\n");
    const char *o = "/tmp/gr_test_capcheck_ls.jsonl", *envf = "/tmp/gr_test_capcheck_ls.env";
    CU_ASSERT_EQUAL(
        sh(GR_SOURCE_DIR,
           "'%s' --capture-check -o %s -- sh -c 'env > %s; cp %s \"$GR_LAUNCHSTAT_OUT\"'", ls, o,
           envf, broken),
        1);
    GR_ASSERT_CONTAINS(out, "capture check of sh -c");
    GR_ASSERT_CONTAINS(out, "recording /tmp/gr_test_capcheck_ls.jsonl, 4 calls");
    GR_ASSERT_CONTAINS(
        out,
        "[hazard] nvtx \"step > loss\": cudaMemcpyAsync on stream 0x7f0000001000 (capturing) "
        "succeeded during a global-mode capture: hazard (copy from or to pageable host memory");
    GR_ASSERT_CONTAINS(
        out,
        "[error] nvtx \"step > loss\": cudaStreamSynchronize on stream 0x7f0000001000 (capturing) "
        "returned cudaErrorStreamCaptureUnsupported during a global-mode capture: breaks the "
        "capture "
        "(a device value read back to the host during capture (.item(), .cpu())). Fix: keep the "
        "value on the device");
    GR_ASSERT_CONTAINS(
        out,
        "3 findings: 1 error, 1 consequence, 0 escapes, 1 hazard (1 capture: 0 ended, 1 failed; 4 "
        "calls checked)");
    GR_ASSERT_CONTAINS(
        out, "cupti-launchstat: 1 call broke a capture or escaped it (listed above with fixes)");
    char *env = read_text(envf);
    CU_ASSERT_PTR_NOT_NULL_FATAL(env);
    GR_ASSERT_CONTAINS(env, "GR_LAUNCHSTAT_CAPCHECK=1");
    GR_ASSERT_CONTAINS(env, "GR_LAUNCHSTAT_OUT=/tmp/gr_test_capcheck_ls.jsonl");
    GR_ASSERT_CONTAINS(env, "libgr_launchstat_inject.so");
    free(env);
    unlink(envf);
    /* the JSON report on stdout; the command's own failure wins */
    CU_ASSERT_EQUAL(
        sh(GR_SOURCE_DIR,
           "'%s' --capture-check -o %s --json - -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"; exit 4'",
           ls, o, broken),
        4);
    GR_ASSERT_CONTAINS(out, "\"command_exit_code\": 4");
    GR_ASSERT_CONTAINS(out, "\"tool\": \"cupti-launchstat\"");
    GR_ASSERT_CONTAINS(out, "\"kind\": \"readback\"");
    GR_ASSERT_CONTAINS(out, "\"nvtx\": \"step > loss\"");
    /* a clean capture: exit 0 */
    const char *clean = write_tmp(
        ".jsonl", REC_HDR REC_BEGIN
        "{\"t\":\"call\",\"seq\":2,\"tid\":7,\"d\":\"drv\",\"api\":\"cuLaunchKernel\",\"ret\":0,"
        "\"sk\":\"handle\",\"str\":\"0x7f0000001000\"}\n" REC_END(
            0) "{\"t\":\"end\",\"events\":3,\"dropped\":0}\n");
    CU_ASSERT_EQUAL(sh(GR_SOURCE_DIR,
                       "'%s' --capture-check -o %s -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"'", ls, o,
                       clean),
                    0);
    GR_ASSERT_CONTAINS(
        out,
        "0 findings: 0 errors, 0 consequences, 0 escapes, 0 hazards (1 capture: 1 ended, 0 failed");
    /* no capture at all; cut off before the end record */
    const char *none = write_tmp(".jsonl", REC_HDR);
    CU_ASSERT_EQUAL(sh(GR_SOURCE_DIR,
                       "'%s' --capture-check -o %s -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"'", ls, o,
                       none),
                    0);
    GR_ASSERT_CONTAINS(out, "no stream capture was seen: nothing to check");
    GR_ASSERT_CONTAINS(
        out,
        "warning: the recording has no end record (the command was killed): findings cover what "
        "was written");
    /* the checker could not start (another CUPTI client) */
    const char *unchecked = write_tmp(
        ".jsonl",
        REC_HDR "{\"t\":\"end\",\"events\":0,\"dropped\":0,\"error\":"
                "\"cuptiSubscribe_v2 failed: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED\"}\n");
    CU_ASSERT_EQUAL(sh(GR_SOURCE_DIR,
                       "'%s' --capture-check -o %s -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"'", ls, o,
                       unchecked),
                    1);
    GR_ASSERT_CONTAINS(out,
                       "cupti-launchstat: the command ran unchecked: cuptiSubscribe_v2 failed: "
                       "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
    /* a damaged recording names its line */
    const char *bad = write_tmp(".jsonl", REC_HDR "{\"t\":\"call\",\"seq\":\n");
    CU_ASSERT_EQUAL(sh(GR_SOURCE_DIR,
                       "'%s' --capture-check -o %s -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"'", ls, o,
                       bad),
                    2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: /tmp/gr_test_capcheck_ls.jsonl:2:");
    /* the JSON report cannot be written */
    CU_ASSERT_EQUAL(sh(GR_SOURCE_DIR,
                       "'%s' --capture-check -o %s --json /nonexistent/dir/r.json -- sh -c 'cp %s "
                       "\"$GR_LAUNCHSTAT_OUT\"'",
                       ls, o, clean),
                    2);
    GR_ASSERT_CONTAINS(
        out,
        "cupti-launchstat: /nonexistent/dir/r.json: cannot write the JSON report (is the directory "
        "writable?)");
    /* -o defaults to capcheck.jsonl */
    CU_ASSERT_EQUAL(
        sh("/tmp", "'%s' --capture-check -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"'", ls, clean), 0);
    GR_ASSERT_CONTAINS(out, "recording /tmp/capcheck.jsonl");
    unlink("/tmp/capcheck.jsonl");
    CU_ASSERT_EQUAL(sh(GR_SOURCE_DIR, "'%s' --help", ls), 0);
    GR_ASSERT_CONTAINS(
        out,
        "--capture-check        instead of tracing: record every runtime and driver API call made");
    GR_ASSERT_CONTAINS(
        out,
        "cupti-launchstat --capture-check -- python3 bench/torch_capture_break.py --break item");
    unlink(o);
}

/* the recorder's and the piecewise driver's errors that need no GPU */
static void test_recorder_errors(void) {
    gr_error err;
    gr_error_clear(&err);
    CU_ASSERT_FALSE(gr_capcheck_running());
    gr_capcheck_opts o;
    memset(&o, 0, sizeof(o));
    o.out_path = "/nonexistent/dir/capcheck.jsonl";
    CU_ASSERT_EQUAL(gr_capcheck_start(&o, &err), GR_ERR_IO);
    GR_ASSERT_CONTAINS(
        err.msg,
        "/nonexistent/dir/capcheck.jsonl: cannot write the capture-check recording: No such "
        "file or directory");
    CU_ASSERT_FALSE(gr_capcheck_running());
    gr_error_clear(&err);
    gr_capev_list l;
    CU_ASSERT_EQUAL(gr_capcheck_take(&l, &err), GR_ERR_INTERNAL);
    GR_ASSERT_CONTAINS(err.msg, "capture checking is not running");
    gr_error_clear(&err);
    CU_ASSERT_EQUAL(gr_capcheck_stop(1, &l, &err), GR_OK); /* not running: nothing to do */
    CU_ASSERT_EQUAL(l.n, 0);
    gr_capcheck_set_op(3, "x", 0);
    gr_capcheck_set_op(-1, NULL, 0);
    gr_plan *p = gr_test_plan(fork_wl, NULL, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_piecewise pw;
    CU_ASSERT_EQUAL(gr_piecewise_build(p, NULL, GR_CAPTURE_GLOBAL, NULL, NULL, 0, 0, &pw, &err),
                    GR_ERR_INTERNAL);
    GR_ASSERT_CONTAINS(err.msg, "piecewise capture needs the capture checker running");
    gr_piecewise_destroy(&pw);
    gr_plan_destroy(p);
}

static CU_TestInfo capcheck_tests[] = {
    {"API names, kinds and error names", test_api_names},
    {"capture tracker: begin, fork, join, end", test_tracker},
    {"a clean capture: no finding", test_clean_sequence},
    {"synchronisation: culprit and consequence", test_sync},
    {"queries and captured events", test_queries},
    {"allocation, free, creation, library init, threads", test_alloc},
    {"escapes: legacy stream, sync copy, other stream", test_escapes},
    {"launch escapes checked against the graph", test_confirm_launches},
    {"pageable copies and read-backs", test_pageable_and_readback},
    {"forks not joined back", test_unjoined},
    {"capture-level errors and unexplained invalidation", test_capture_errors},
    {"two captures on two threads", test_two_captures},
    {"printing and JSON", test_print_and_json},
    CU_TEST_INFO_NULL};
static CU_TestInfo capcheck_io_tests[] = {
    {"JSON lines round trip", test_jsonl_round_trip},
    {"recorder and piecewise errors without a GPU", test_recorder_errors},
    {"reader errors name the line", test_jsonl_errors},
    {"recorded GPU fixtures", test_fixtures},
    CU_TEST_INFO_NULL};
static CU_TestInfo capcheck_pw_tests[] = {
    {"segments around eager ops and fork regions", test_segments},
    {"capture breakers: plans, references, fixed plans", test_breakers},
    {"capture breakers: check errors", test_breaker_errors},
    {"record paths", test_record_path},
    {"report sections", test_report_sections},
    {"graphrun options", test_graphrun_options},
    {"cupti-launchstat --capture-check", test_launchstat_capture_check},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_capcheck_suites[] = {{"capcheck", capcheck_tests, 0},
                                            {"capcheck_io", capcheck_io_tests, 0},
                                            {"capcheck_piecewise", capcheck_pw_tests, 0},
                                            {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_capcheck_suites)
