/* Capture checking, the classification (capclass.h): replays a recording through the capture
 * tracker and applies one rule per API kind. Pure C; the messages here are the ones users read,
 * and tests/test_capcheck.c triggers each of them. */
#include "cupti_tools/capclass.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/kernel.h"

/* ---- names, what, fix ---- */

const char *gr_find_sev_name(int sev) {
    switch (sev) {
    case GR_FS_ERROR:
        return "error";
    case GR_FS_CONSEQUENCE:
        return "consequence";
    case GR_FS_ESCAPE:
        return "escape";
    case GR_FS_HAZARD:
        return "hazard";
    default:
        return "?";
    }
}

static const struct {
    const char *name, *what, *fix;
} kinds[GR_FK_NKINDS] = {
    [GR_FK_SYNC] =
        {"sync", "host synchronization during capture",
         "record an event and make the consumer stream wait on it (cudaStreamWaitEvent) instead of "
         "synchronizing; synchronize after the graph launch"},
    [GR_FK_QUERY] =
        {"query", "stream or event query during capture",
         "do not poll inside a capture: query after the graph launch, or order the work with "
         "cudaStreamWaitEvent"},
    [GR_FK_CAPTURED_EVENT] =
        {"captured_event", "host query or sync of an event recorded inside the capture",
         "an event recorded in a capture cannot be queried or waited on from the host "
         "during it: make the consumer stream wait on it (cudaStreamWaitEvent)"},
    [GR_FK_ALLOC] = {"alloc", "device allocation during capture",
                     "allocate before capture, or use cudaMallocAsync on the capturing stream (a "
                     "stream-ordered allocation is captured as a graph node)"},
    [GR_FK_HOST_ALLOC] =
        {"host_alloc", "pinned host allocation during capture",
         "allocate pinned host memory (cudaMallocHost / cudaHostRegister) before capture and "
         "reuse it"},
    [GR_FK_FREE] =
        {"free", "free during capture",
         "free after the graph is destroyed, or use cudaFreeAsync on the capturing stream"},
    [GR_FK_LAZY_INIT] =
        {"lazy_init", "library or resource initialisation during capture",
         "create library handles, streams and events before capture and run the library once "
         "eagerly (a warm-up step); give it its workspace up front (cublasSetWorkspace)"},
    [GR_FK_LEGACY_STREAM] =
        {"legacy_stream",
         "work on the legacy default stream: it ran at capture time and is not in the graph",
         "enqueue on the capturing stream (or on a stream forked from it with an event); the "
         "legacy default stream is never captured"},
    [GR_FK_OTHER_STREAM] =
        {"other_stream",
         "work on a stream outside the capture: it ran at capture time and is not in the graph",
         "fork that stream into the capture first (cudaEventRecord on the capturing stream, "
         "cudaStreamWaitEvent on it), then join it back the same way"},
    [GR_FK_SYNC_COPY] =
        {"sync_copy",
         "synchronous copy or memset: it ran on the legacy stream at capture time and is not in "
         "the graph",
         "use cudaMemcpyAsync / cudaMemsetAsync on the capturing stream"},
    [GR_FK_PAGEABLE_COPY] =
        {"pageable_copy", "copy from or to pageable host memory inside a capture",
         "copy through pinned host memory (cudaMallocHost / cudaHostRegister, allocated "
         "before capture)"},
    [GR_FK_READBACK] =
        {"readback", "a device value read back to the host during capture (.item(), .cpu())",
         "keep the value on the device (pass a device pointer to the kernel that needs it) or "
         "read it after the graph launch: host code cannot depend on captured results"},
    [GR_FK_UNJOINED] =
        {"unjoined", "a stream forked into the capture was not joined back",
         "join every forked stream: record an event on it after its last work and make the "
         "origin stream wait on that event before ending the capture"},
    [GR_FK_WRONG_THREAD] = {"wrong_thread", "capture ended from another thread",
                            "end the capture on the thread that began it, or begin it with "
                            "cudaStreamCaptureModeRelaxed"},
    [GR_FK_UNMATCHED] = {"unmatched", "capture ended on a stream that did not begin it",
                         "end the capture on the stream that began it"},
    [GR_FK_MERGE] =
        {"merge", "two independent captures were merged",
         "keep captures independent: do not make one capture's stream wait on another capture's "
         "event"},
    [GR_FK_ISOLATION] =
        {"isolation", "a dependency crossed the capture boundary",
         "record the event inside the capture, or wait on events from outside it with "
         "cudaEventWaitExternal"},
    [GR_FK_IMPLICIT] =
        {"implicit", "the legacy default stream would depend on the capture",
         "create capture streams with cudaStreamNonBlocking, or stop using the legacy default "
         "stream while capturing"},
    [GR_FK_INVALIDATED] =
        {"invalidated", "the capture had been invalidated by an earlier call",
         "fix the first failing call above; this one failed only because the capture was "
         "already invalidated"},
    [GR_FK_UNSUPPORTED] =
        {"unsupported", "call not permitted while a stream captures",
         "move the call before or after the capture (cudaStreamCaptureModeRelaxed permits "
         "potentially unsafe calls on the capturing thread)"},
    [GR_FK_BEGIN_FAILED] =
        {"begin_failed", "the capture could not begin",
         "begin capture on a created stream that is not already capturing (never the legacy "
         "default stream)"},
};

const char *gr_find_kind_name(int kind) {
    return kind >= 0 && kind < GR_FK_NKINDS ? kinds[kind].name : "?";
}

const char *gr_finding_what(const gr_finding *f) {
    if (f->kind == GR_FK_INVALIDATED && f->sev == GR_FS_ERROR)
        return "the capture was invalidated by a call the checker did not see";
    return f->kind >= 0 && f->kind < GR_FK_NKINDS ? kinds[f->kind].what : "?";
}

const char *gr_finding_fix(const gr_finding *f) {
    if (f->sev == GR_FS_CONSEQUENCE) return kinds[GR_FK_INVALIDATED].fix;
    if (f->kind == GR_FK_INVALIDATED)
        return "check from the program's start (cupti-launchstat --capture-check -- CMD) and look "
               "for calls "
               "from other threads";
    return f->kind >= 0 && f->kind < GR_FK_NKINDS ? kinds[f->kind].fix : "?";
}

int gr_finding_blocks(const gr_finding *f) {
    return f->sev == GR_FS_ERROR || f->sev == GR_FS_ESCAPE;
}

void gr_finding_place(const gr_finding *f, char *out, size_t size) {
    if (f->op >= 0)
        snprintf(out, size, "op %d \"%s\"", f->op, f->op_name);
    else if (f->ranges[0])
        snprintf(out, size, "nvtx \"%s\"", f->ranges);
    else
        snprintf(out, size, "thread %" PRIu64, f->tid);
}

static void stream_str(const gr_finding *f, char *out, size_t size) {
    const char *st = f->stream_status == GR_CS_MEMBER    ? "capturing"
                     : f->stream_status == GR_CS_OUTSIDE ? "not capturing"
                                                         : "";
    switch (f->stream_kind) {
    case GR_SK_LEGACY:
        snprintf(out, size, " on the legacy default stream");
        break;
    case GR_SK_PER_THREAD:
        snprintf(out, size, " on the per-thread default stream (%s)", st[0] ? st : "?");
        break;
    case GR_SK_HANDLE:
        snprintf(out, size, " on stream 0x%" PRIx64 " (%s)", f->stream, st[0] ? st : "?");
        break;
    default:
        out[0] = '\0';
    }
}

void gr_finding_str(const gr_finding *f, char *out, size_t size) {
    char place[256], stream[96], result[96], mode[48];
    gr_finding_place(f, place, sizeof(place));
    stream_str(f, stream, sizeof(stream));
    if (f->ret)
        snprintf(result, sizeof(result), "returned %s", gr_cuda_error_name(f->ret, f->driver));
    else
        snprintf(result, sizeof(result), "succeeded");
    if (f->mode >= 0)
        snprintf(mode, sizeof(mode), "a %s-mode capture", gr_capture_mode_str(f->mode));
    else
        snprintf(mode, sizeof(mode), "a capture");
    static const char *const label[] = {"breaks the capture", "consequence", "escapes the capture",
                                        "hazard"};
    snprintf(out, size, "%s%s: %s%s %s during %s: %s (%s)%s%s. Fix: %s", place,
             f->other_thread ? " (another thread)" : "", f->api, stream, result, mode,
             f->sev >= 0 && f->sev <= 3 ? label[f->sev] : "?", gr_finding_what(f),
             f->detail[0] ? "; " : "", f->detail, gr_finding_fix(f));
}

/* ---- classification ---- */

typedef struct readback_mark {
    uint64_t tid;
    int op;
    char ranges[GR_CAPEV_RANGES_MAX];
    int valid;
} readback_mark;

#define MAX_MARKS 16

typedef struct thread_mode {
    uint64_t tid;
    int mode;
} thread_mode;

typedef struct ctx {
    gr_captrack t;
    gr_capcheck_result *r;
    readback_mark marks[MAX_MARKS];
    thread_mode modes[MAX_MARKS];
    int nmodes;
    int oom;
} ctx;

/* The mode a thread switched itself to with cudaThreadExchangeStreamCaptureMode, -1 none seen. */
static int thread_mode_of(const ctx *c, uint64_t tid) {
    for (int i = 0; i < c->nmodes; i++)
        if (c->modes[i].tid == tid) return c->modes[i].mode;
    return -1;
}

static void set_thread_mode(ctx *c, uint64_t tid, int mode) {
    for (int i = 0; i < c->nmodes; i++)
        if (c->modes[i].tid == tid) {
            c->modes[i].mode = mode;
            return;
        }
    if (c->nmodes < MAX_MARKS) c->modes[c->nmodes++] = (thread_mode){tid, mode};
}

/* An allocation in a section the thread deliberately relaxed while its capture is stricter. */
static int deliberate(const ctx *c, const gr_capev *e, int slot) {
    return thread_mode_of(c, e->tid) == 2 && slot >= 0 && c->t.cap[slot].mode != 2;
}

static readback_mark *mark_for(ctx *c, uint64_t tid, int create) {
    for (int i = 0; i < MAX_MARKS; i++)
        if (c->marks[i].valid && c->marks[i].tid == tid) return &c->marks[i];
    if (!create) return NULL;
    for (int i = 0; i < MAX_MARKS; i++)
        if (!c->marks[i].valid) return &c->marks[i];
    return &c->marks[tid % MAX_MARKS];
}

/* A sync or query right after a device-to-host copy in the same op (or NVTX range) on the same
 * thread is a read-back (.item()). */
static int after_readback(ctx *c, const gr_capev *e) {
    readback_mark *m = mark_for(c, e->tid, 0);
    if (!m) return 0;
    if (e->op >= 0 || m->op >= 0) return m->op == e->op;
    return !strcmp(m->ranges, e->ranges);
}

static gr_finding *add(ctx *c, const gr_capev *e, int sev, int kind, int slot) {
    gr_capcheck_result *r = c->r;
    r->total++;
    if (r->n >= GR_CAPCHECK_MAX_FINDINGS) return NULL;
    if (r->n == r->cap) {
        size_t nc = r->cap ? r->cap * 2 : 16;
        gr_finding *v = realloc(r->f, nc * sizeof(*v));
        if (!v) {
            c->oom = 1;
            return NULL;
        }
        r->f = v;
        r->cap = nc;
    }
    gr_finding *f = &r->f[r->n++];
    memset(f, 0, sizeof(*f));
    f->sev = sev;
    f->kind = kind;
    f->seq = e->seq;
    f->op = e->op;
    snprintf(f->op_name, sizeof(f->op_name), "%s", e->op_name);
    snprintf(f->ranges, sizeof(f->ranges), "%s", e->ranges);
    f->tid = e->tid;
    snprintf(f->api, sizeof(f->api), "%s", e->api);
    f->driver = e->driver;
    f->ret = e->ret;
    f->stream_kind = e->stream_kind;
    f->stream = e->stream;
    f->stream_status = gr_captrack_status(&c->t, e);
    f->mode = slot >= 0 ? c->t.cap[slot].mode : -1;
    f->other_thread = slot >= 0 && c->t.cap[slot].tid != e->tid;
    return f;
}

static int is_library_op(const gr_capev *e) {
    return e->op >= 0 && (e->op_flags & GR_KF_LIBRARY);
}

/* The kind of a call that failed with a capture error. */
static int failed_kind(ctx *c, const gr_capev *e, gr_capapi k) {
    switch (e->ret) {
    case 902:
        return GR_FK_MERGE;
    case 903:
        return GR_FK_UNMATCHED;
    case 904:
        return GR_FK_UNJOINED;
    case 905:
        return GR_FK_ISOLATION;
    case 906:
        return GR_FK_IMPLICIT;
    case 907:
        return GR_FK_CAPTURED_EVENT;
    case 908:
        return GR_FK_WRONG_THREAD;
    default:
        break;
    }
    switch (k) {
    case GR_CA_SYNC:
        return after_readback(c, e) ? GR_FK_READBACK : GR_FK_SYNC;
    case GR_CA_QUERY:
        return after_readback(c, e) ? GR_FK_READBACK : GR_FK_QUERY;
    case GR_CA_ALLOC:
        return is_library_op(e) ? GR_FK_LAZY_INIT : GR_FK_ALLOC;
    case GR_CA_HOST_ALLOC:
        return is_library_op(e) ? GR_FK_LAZY_INIT : GR_FK_HOST_ALLOC;
    case GR_CA_FREE:
        return GR_FK_FREE;
    case GR_CA_CREATE:
        return GR_FK_LAZY_INIT;
    case GR_CA_COPY_SYNC:
        return e->copy == GR_CP_D2H ? GR_FK_READBACK : GR_FK_SYNC_COPY;
    case GR_CA_COPY_ASYNC:
        if (e->copy == GR_CP_D2H) return GR_FK_READBACK;
        if (e->copy == GR_CP_H2D && e->hostmem != GR_HM_PINNED) return GR_FK_PAGEABLE_COPY;
        return GR_FK_UNSUPPORTED;
    case GR_CA_BEGIN:
        return GR_FK_BEGIN_FAILED;
    default:
        break;
    }
    return e->ret == 901 ? GR_FK_INVALIDATED : GR_FK_UNSUPPORTED;
}

static int slot_culprit(ctx *c, int slot) {
    return slot >= 0 && c->t.cap[slot].culprit;
}

/* A capture error breaks every capture the call could concern: its stream's, its thread's, and
 * (global mode) every global-mode capture. */
static void mark_culprit(ctx *c, const gr_capev *e, int slot) {
    if (slot >= 0) c->t.cap[slot].culprit = 1;
    for (int i = 0; i < GR_CT_MAX_CAPTURES; i++) {
        gr_ct_capture *cp = &c->t.cap[i];
        if (cp->active && (cp->tid == e->tid || cp->mode == 0)) cp->culprit = 1;
    }
}

static void end_of_capture(ctx *c, const gr_capev *e, int slot) {
    gr_capcheck_result *r = c->r;
    if (e->ret == 0) {
        r->captures_ok++;
        return;
    }
    r->captures_failed++;
    if (e->ret == 904 && slot >= 0) {
        const gr_ct_member *m[4];
        int n = gr_captrack_unjoined(&c->t, slot, m, 4);
        int sev = slot_culprit(c, slot) ? GR_FS_CONSEQUENCE : GR_FS_ERROR;
        for (int i = 0; i < n; i++) {
            /* charged to the op (or range) that forked the stream in */
            gr_capev fe = *e;
            fe.op = m[i]->fork_op;
            snprintf(fe.op_name, sizeof(fe.op_name), "%s", m[i]->fork_op_name);
            snprintf(fe.ranges, sizeof(fe.ranges), "%s", m[i]->fork_ranges);
            fe.stream_kind = m[i]->s.kind;
            fe.stream = m[i]->s.handle;
            gr_finding *f = add(c, &fe, sev, GR_FK_UNJOINED, slot);
            if (!f) continue;
            f->stream_status = GR_CS_MEMBER;
            char origin[40] = "the origin stream";
            if (c->t.cap[slot].origin.kind == GR_SK_HANDLE)
                snprintf(origin, sizeof(origin), "origin stream 0x%" PRIx64,
                         c->t.cap[slot].origin.handle);
            if (m[i]->work)
                snprintf(f->detail, sizeof(f->detail),
                         "it joined the capture through %s (call %" PRIu64 ") and its last %" PRIu64
                         " work item%s "
                         "never joined back to %s",
                         m[i]->fork_api, m[i]->fork_seq, m[i]->work - m[i]->joined_work,
                         m[i]->work - m[i]->joined_work == 1 ? " was" : "s were", origin);
            else
                snprintf(f->detail, sizeof(f->detail),
                         "it joined the capture through %s (call %" PRIu64
                         ") and was never joined back to %s",
                         m[i]->fork_api, m[i]->fork_seq, origin);
        }
        if (n) {
            c->t.cap[slot].culprit = 1;
            return;
        }
    }
    int kind;
    if (e->ret == 901)
        kind = GR_FK_INVALIDATED;
    else if (gr_cuda_is_capture_error(e->ret))
        kind = failed_kind(c, e, GR_CA_END);
    else
        kind = GR_FK_UNSUPPORTED;
    int sev = slot_culprit(c, slot) ? GR_FS_CONSEQUENCE : GR_FS_ERROR;
    gr_finding *f = add(c, e, sev, kind, slot);
    if (f && kind == GR_FK_UNJOINED)
        snprintf(f->detail, sizeof(f->detail), "the checker did not see which stream was forked");
    if (slot >= 0) c->t.cap[slot].culprit = 1;
}

static void classify_one(ctx *c, const gr_capev *e) {
    gr_capcheck_result *r = c->r;
    gr_capapi k = gr_capapi_kind(e->api);
    int active = gr_captrack_active(&c->t) > 0;
    int slot = gr_captrack_capture_of(&c->t, e);
    if (k == GR_CA_BEGIN) {
        if (e->ret == 0) {
            r->captures++;
        } else {
            gr_finding *f = add(c, e, GR_FS_ERROR, failed_kind(c, e, k), slot);
            if (f) f->mode = e->mode;
        }
        gr_captrack_apply(&c->t, e);
        return;
    }
    if (k == GR_CA_END) {
        /* the capture ended is the one this stream began */
        int s = -1;
        gr_ct_stream st = gr_capev_stream(e);
        for (int i = 0; i < GR_CT_MAX_CAPTURES && s < 0; i++)
            if (c->t.cap[i].active && gr_ct_stream_eq(&c->t.cap[i].origin, &st)) s = i;
        end_of_capture(c, e, s >= 0 ? s : slot);
        gr_captrack_apply(&c->t, e);
        for (int i = 0; i < MAX_MARKS; i++)
            if (c->marks[i].tid == e->tid) c->marks[i].valid = 0;
        return;
    }
    if (k == GR_CA_MODE && e->ret == 0 && e->mode >= 0) set_thread_mode(c, e->tid, e->mode);
    if (!active) {
        gr_captrack_apply(&c->t, e);
        return;
    }
    if (gr_cuda_is_capture_error(e->ret)) {
        int culprit_before = slot_culprit(c, slot);
        int kind = failed_kind(c, e, k);
        if (culprit_before && e->ret == 901) kind = GR_FK_INVALIDATED;
        add(c, e, culprit_before ? GR_FS_CONSEQUENCE : GR_FS_ERROR, kind, slot);
        mark_culprit(c, e, slot);
        gr_captrack_apply(&c->t, e);
        return;
    }
    /* succeeded (cudaErrorNotReady from a query counts as an answer); other errors are not
     * capture checking's business */
    if (e->ret != 0 && !(k == GR_CA_QUERY && e->ret == 600)) {
        gr_captrack_apply(&c->t, e);
        return;
    }
    if (!gr_captrack_thread_captures(&c->t, e->tid)) {
        gr_captrack_apply(&c->t, e);
        return;
    }
    gr_capstat st = gr_captrack_status(&c->t, e);
    switch (k) {
    case GR_CA_SYNC:
        add(c, e, GR_FS_HAZARD, after_readback(c, e) ? GR_FK_READBACK : GR_FK_SYNC, slot);
        break;
    case GR_CA_QUERY:
        add(c, e, GR_FS_HAZARD, after_readback(c, e) ? GR_FK_READBACK : GR_FK_QUERY, slot);
        break;
    case GR_CA_ALLOC:
    case GR_CA_HOST_ALLOC:
    case GR_CA_FREE:
        if (deliberate(c, e, slot)) {
            r->deliberate++;
            break;
        }
        if (k == GR_CA_FREE)
            add(c, e, GR_FS_HAZARD, GR_FK_FREE, slot);
        else if (is_library_op(e))
            add(c, e, GR_FS_HAZARD, GR_FK_LAZY_INIT, slot);
        else
            add(c, e, GR_FS_HAZARD, k == GR_CA_ALLOC ? GR_FK_ALLOC : GR_FK_HOST_ALLOC, slot);
        break;
    case GR_CA_CREATE:
        add(c, e, GR_FS_HAZARD, GR_FK_LAZY_INIT, slot);
        break;
    case GR_CA_COPY_SYNC:
        /* runs at once on the legacy (or per-thread) stream: never captured */
        add(c, e, GR_FS_ESCAPE, e->copy == GR_CP_D2H ? GR_FK_READBACK : GR_FK_SYNC_COPY, slot);
        break;
    default:
        if (!gr_capapi_is_work(k)) break;
        if (st == GR_CS_LEGACY) {
            add(c, e, GR_FS_ESCAPE, GR_FK_LEGACY_STREAM, slot);
        } else if (st == GR_CS_OUTSIDE) {
            add(c, e, GR_FS_ESCAPE,
                e->stream_kind == GR_SK_PER_THREAD ? GR_FK_LEGACY_STREAM : GR_FK_OTHER_STREAM,
                slot);
        } else if (st == GR_CS_MEMBER && k == GR_CA_COPY_ASYNC) {
            int host_side = e->copy == GR_CP_H2D || e->copy == GR_CP_D2H;
            if (host_side && e->hostmem == GR_HM_PAGEABLE)
                add(c, e, GR_FS_HAZARD, GR_FK_PAGEABLE_COPY, slot);
            if (e->copy == GR_CP_D2H) {
                readback_mark *m = mark_for(c, e->tid, 1);
                m->valid = 1;
                m->tid = e->tid;
                m->op = e->op;
                snprintf(m->ranges, sizeof(m->ranges), "%s", e->ranges);
            }
        }
        break;
    }
    gr_captrack_apply(&c->t, e);
}

gr_status gr_capcheck_classify(const gr_capev *ev, size_t n, gr_capcheck_result *out,
                               gr_error *err) {
    memset(out, 0, sizeof(*out));
    ctx *c = calloc(1, sizeof(*c));
    if (!c)
        return gr_error_set(err, GR_ERR_NOMEM, NULL,
                            "out of host memory classifying the capture check");
    gr_captrack_init(&c->t);
    c->r = out;
    for (size_t i = 0; i < n; i++)
        classify_one(c, &ev[i]);
    out->calls = n;
    out->unfinished = gr_captrack_active(&c->t) > 0;
    out->tracker_overflow = c->t.overflow;
    int oom = c->oom;
    free(c);
    if (oom) {
        gr_capcheck_result_free(out);
        return gr_error_set(err, GR_ERR_NOMEM, NULL,
                            "out of host memory classifying the capture check");
    }
    return GR_OK;
}

static int is_kernel_launch(const char *api) {
    return gr_capapi_kind(api) == GR_CA_LAUNCH && !strstr(api, "HostFunc");
}

size_t gr_capcheck_confirm_launches(gr_capcheck_result *r, const gr_capev *ev, size_t n,
                                    size_t kernel_nodes) {
    size_t launches = 0, escaped = 0;
    gr_captrack *t = malloc(sizeof(*t));
    if (!t) return 0;
    gr_captrack_init(t);
    for (size_t i = 0; i < n; i++) {
        launches += ev[i].ret == 0 && gr_captrack_active(t) && is_kernel_launch(ev[i].api);
        gr_captrack_apply(t, &ev[i]);
    }
    free(t);
    for (size_t i = 0; i < r->n; i++)
        escaped += r->f[i].sev == GR_FS_ESCAPE && is_kernel_launch(r->f[i].api);
    if (!escaped || kernel_nodes < launches) return 0;
    size_t demoted = 0;
    for (size_t i = 0; i < r->n; i++) {
        gr_finding *f = &r->f[i];
        if (f->sev != GR_FS_ESCAPE || !is_kernel_launch(f->api)) continue;
        f->sev = GR_FS_HAZARD;
        snprintf(f->detail, sizeof(f->detail),
                 "unconfirmed: the graph holds a kernel node for each of the %zu launches "
                 "made while capturing, so this one was captured and its stream misread",
                 launches);
        demoted++;
    }
    r->unconfirmed += demoted;
    return demoted;
}

void gr_capcheck_result_free(gr_capcheck_result *r) {
    if (!r) return;
    free(r->f);
    r->f = NULL;
    r->n = r->cap = 0;
}

size_t gr_capcheck_blocking(const gr_capcheck_result *r) {
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += gr_finding_blocks(&r->f[i]);
    return n;
}

int gr_capcheck_culprit_ops(const gr_capcheck_result *r, int hazards, int *ops, int max) {
    int n = 0;
    for (size_t i = 0; i < r->n; i++) {
        const gr_finding *f = &r->f[i];
        if (f->op < 0) continue;
        if (!gr_finding_blocks(f) && !(hazards && f->sev == GR_FS_HAZARD)) continue;
        int seen = 0;
        for (int k = 0; k < n; k++)
            seen |= ops[k] == f->op;
        if (seen || n >= max) continue;
        int k = n++;
        while (k > 0 && ops[k - 1] > f->op) {
            ops[k] = ops[k - 1];
            k--;
        }
        ops[k] = f->op;
    }
    return n;
}

size_t gr_capcheck_unplaced(const gr_capcheck_result *r) {
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += gr_finding_blocks(&r->f[i]) && r->f[i].op < 0;
    return n;
}

void gr_capcheck_print(FILE *f, const gr_capcheck_result *r, const char *indent) {
    char line[1400];
    for (size_t i = 0; i < r->n; i++) {
        gr_finding_str(&r->f[i], line, sizeof(line));
        fprintf(f, "%s[%s] %s\n", indent, gr_find_sev_name(r->f[i].sev), line);
    }
    size_t errors = 0, esc = 0, haz = 0, cons = 0;
    for (size_t i = 0; i < r->n; i++) {
        errors += r->f[i].sev == GR_FS_ERROR;
        cons += r->f[i].sev == GR_FS_CONSEQUENCE;
        esc += r->f[i].sev == GR_FS_ESCAPE;
        haz += r->f[i].sev == GR_FS_HAZARD;
    }
    fprintf(f,
            "%s%zu finding%s: %zu error%s, %zu consequence%s, %zu escape%s, %zu hazard%s (%d "
            "capture%s: %d ended, "
            "%d failed; %zu calls checked)\n",
            indent, r->total, r->total == 1 ? "" : "s", errors, errors == 1 ? "" : "s", cons,
            cons == 1 ? "" : "s", esc, esc == 1 ? "" : "s", haz, haz == 1 ? "" : "s", r->captures,
            r->captures == 1 ? "" : "s", r->captures_ok, r->captures_failed, r->calls);
    if (r->total > r->n)
        fprintf(f, "%s(%zu more findings not kept: only the first %d are)\n", indent,
                r->total - r->n, GR_CAPCHECK_MAX_FINDINGS);
    if (r->dropped)
        fprintf(f, "%swarning: the recorder dropped %llu calls; findings may be missing\n", indent,
                (unsigned long long)r->dropped);
    if (r->unfinished)
        fprintf(f, "%swarning: a capture had not ended when the recording stopped\n", indent);
    if (r->deliberate)
        fprintf(f,
                "%s(%zu allocation%s made in sections the program deliberately switched to relaxed "
                "mode "
                "(cudaThreadExchangeStreamCaptureMode) not flagged)\n",
                indent, r->deliberate, r->deliberate == 1 ? "" : "s");
    if (r->unconfirmed)
        fprintf(f,
                "%swarning: %zu launch escape%s contradicted by the captured graph and not counted "
                "(the checker "
                "misread a stream: please report it with the recording)\n",
                indent, r->unconfirmed, r->unconfirmed == 1 ? " was" : "s were");
    if (r->tracker_overflow)
        fprintf(f,
                "%swarning: more concurrent captures or forked streams than the checker tracks "
                "(%d, %d): "
                "stream membership may be wrong\n",
                indent, GR_CT_MAX_CAPTURES, GR_CT_MAX_MEMBERS);
}

void *gr_capcheck_json(const gr_capcheck_result *r) {
    json_t *root = json_object();
    json_t *arr = json_array();
    size_t blocking = 0;
    for (size_t i = 0; i < r->n; i++) {
        const gr_finding *f = &r->f[i];
        blocking += gr_finding_blocks(f);
        char stream[32] = "";
        if (f->stream_kind == GR_SK_HANDLE)
            snprintf(stream, sizeof(stream), "0x%" PRIx64, f->stream);
        char line[1400];
        gr_finding_str(f, line, sizeof(line));
        json_t *j =
            json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:b, s:I, s:s}",
                      "severity", gr_find_sev_name(f->sev), "kind", gr_find_kind_name(f->kind),
                      "seq", (json_int_t)f->seq, "api", f->api, "error",
                      f->ret ? gr_cuda_error_name(f->ret, f->driver) : "", "stream_kind",
                      gr_stream_kind_name(f->stream_kind), "stream", stream, "stream_status",
                      gr_capstat_name(f->stream_status), "return_code", f->ret, "capture_mode",
                      f->mode >= 0 ? gr_capture_mode_str(f->mode) : "", "what", gr_finding_what(f),
                      "fix", gr_finding_fix(f), "other_thread", f->other_thread, "thread",
                      (json_int_t)f->tid, "text", line);
        if (!j) continue;
        if (f->op >= 0) {
            json_object_set_new(j, "op", json_integer(f->op));
            json_object_set_new(j, "op_name", json_string(f->op_name));
        }
        if (f->ranges[0]) json_object_set_new(j, "nvtx", json_string(f->ranges));
        if (f->detail[0]) json_object_set_new(j, "detail", json_string(f->detail));
        json_object_set_new(j, "blocks_capture", json_boolean(gr_finding_blocks(f)));
        json_array_append_new(arr, j);
    }
    json_object_set_new(root, "findings", arr);
    json_object_set_new(root, "total", json_integer((json_int_t)r->total));
    json_object_set_new(root, "blocking", json_integer((json_int_t)blocking));
    json_object_set_new(root, "captures", json_integer(r->captures));
    json_object_set_new(root, "captures_ok", json_integer(r->captures_ok));
    json_object_set_new(root, "captures_failed", json_integer(r->captures_failed));
    json_object_set_new(root, "calls", json_integer((json_int_t)r->calls));
    json_object_set_new(root, "dropped", json_integer((json_int_t)r->dropped));
    json_object_set_new(root, "unfinished", json_boolean(r->unfinished));
    json_object_set_new(root, "deliberate_relaxed_allocations",
                        json_integer((json_int_t)r->deliberate));
    json_object_set_new(root, "unconfirmed_escapes", json_integer((json_int_t)r->unconfirmed));
    return root;
}
