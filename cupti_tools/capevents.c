/* Capture checking, the data side (capevents.h): API names to kinds, the capture tracker, and
 * recordings as JSON lines. Pure C: the recorder uses it inside CUPTI's callbacks, the
 * classifier and the tests anywhere. */
#include "cupti_tools/capevents.h"

#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h" /* GR_TRY */
#include "cupti_tools/jsonl.h"

/* ---- API names ---- */

static int all_digits(const char *s) {
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

void gr_capapi_normalize(const char *raw, char *out, size_t size, int *per_thread) {
    char tmp[128];
    snprintf(tmp, sizeof(tmp), "%s", raw ? raw : "");
    int pt = 0;
    for (;;) {
        char *u = strrchr(tmp, '_');
        if (!u || u == tmp || u[-1] == '_') break; /* never eat the leading "__" */
        if (!strcmp(u, "_ptsz") || !strcmp(u, "_ptds")) {
            pt = 1;
            *u = '\0';
            continue;
        }
        if (u[1] == 'v' && all_digits(u + 2)) {
            *u = '\0';
            continue;
        }
        break;
    }
    snprintf(out, size, "%s", tmp);
    if (per_thread) *per_thread = pt;
}

static int starts(const char *s, const char *p) {
    return strncmp(s, p, strlen(p)) == 0;
}

static int has(const char *s, const char *p) {
    return strstr(s, p) != NULL;
}

gr_capapi gr_capapi_kind(const char *name) {
    if (!name) return GR_CA_OTHER;
    while (*name == '_')
        name++; /* CUDA 13's <<<>>> calls __cudaLaunchKernel */
    if (!*name) return GR_CA_OTHER;
    if (has(name, "StreamBeginCapture")) return GR_CA_BEGIN;
    if (has(name, "StreamEndCapture")) return GR_CA_END;
    if (has(name, "ExchangeStreamCaptureMode")) return GR_CA_MODE;
    if (has(name, "IsCapturing") || has(name, "GetCaptureInfo") ||
        has(name, "UpdateCaptureDependencies") || has(name, "GetLastError") ||
        has(name, "PeekAtLastError") || has(name, "GetErrorName") || has(name, "GetErrorString"))
        return GR_CA_BENIGN;
    if (starts(name, "cudaGraphLaunch") || starts(name, "cuGraphLaunch")) return GR_CA_GRAPH_LAUNCH;
    if (starts(name, "cudaLaunch") || starts(name, "cuLaunch")) return GR_CA_LAUNCH;
    if (has(name, "MallocAsync") || has(name, "MallocFromPoolAsync") || has(name, "FreeAsync") ||
        has(name, "MemAllocAsync") || has(name, "MemAllocFromPoolAsync"))
        return GR_CA_ALLOC_ASYNC;
    int copyish = has(name, "Memcpy") || has(name, "Memset") || has(name, "MemPrefetch");
    if (copyish && has(name, "Async")) return GR_CA_COPY_ASYNC;
    if (copyish && !has(name, "MemPrefetch")) return GR_CA_COPY_SYNC;
    if (has(name, "Synchronize")) return GR_CA_SYNC;
    if (!strcmp(name, "cudaStreamQuery") || !strcmp(name, "cudaEventQuery") ||
        !strcmp(name, "cuStreamQuery") || !strcmp(name, "cuEventQuery"))
        return GR_CA_QUERY;
    if (starts(name, "cudaMallocHost") || starts(name, "cudaHostAlloc") ||
        starts(name, "cudaHostRegister") || starts(name, "cuMemAllocHost") ||
        starts(name, "cuMemHostAlloc") || starts(name, "cuMemHostRegister"))
        return GR_CA_HOST_ALLOC;
    if (starts(name, "cudaFree") || starts(name, "cudaHostUnregister") ||
        starts(name, "cuMemFree") || starts(name, "cuMemHostUnregister") ||
        starts(name, "cuMemRelease") || starts(name, "cuMemUnmap") ||
        starts(name, "cuMemAddressFree"))
        return GR_CA_FREE;
    if (starts(name, "cudaMalloc") || starts(name, "cuMemAlloc") || starts(name, "cuMemCreate") ||
        starts(name, "cuMemMap") || starts(name, "cuMemAddressReserve"))
        return GR_CA_ALLOC;
    if (has(name, "StreamCreate") || has(name, "EventCreate") || starts(name, "cuCtxCreate") ||
        starts(name, "cuModuleLoad") || starts(name, "cuLibraryLoad") ||
        starts(name, "cudaLibraryLoad") || starts(name, "cuLinkCreate"))
        return GR_CA_CREATE;
    if (starts(name, "cudaEventRecord") || starts(name, "cuEventRecord")) return GR_CA_EVENT_RECORD;
    if (starts(name, "cudaStreamWaitEvent") || starts(name, "cuStreamWaitEvent"))
        return GR_CA_STREAM_WAIT;
    return GR_CA_OTHER;
}

const char *gr_capapi_name(gr_capapi k) {
    switch (k) {
    case GR_CA_BENIGN:
        return "capture query";
    case GR_CA_MODE:
        return "capture mode exchange";
    case GR_CA_BEGIN:
        return "begin capture";
    case GR_CA_END:
        return "end capture";
    case GR_CA_LAUNCH:
        return "launch";
    case GR_CA_GRAPH_LAUNCH:
        return "graph launch";
    case GR_CA_COPY_ASYNC:
        return "async copy";
    case GR_CA_COPY_SYNC:
        return "synchronous copy";
    case GR_CA_ALLOC_ASYNC:
        return "stream-ordered allocation";
    case GR_CA_SYNC:
        return "synchronize";
    case GR_CA_QUERY:
        return "query";
    case GR_CA_ALLOC:
        return "allocation";
    case GR_CA_HOST_ALLOC:
        return "pinned host allocation";
    case GR_CA_FREE:
        return "free";
    case GR_CA_CREATE:
        return "creation";
    case GR_CA_EVENT_RECORD:
        return "event record";
    case GR_CA_STREAM_WAIT:
        return "stream wait";
    default:
        return "other";
    }
}

int gr_capapi_is_work(gr_capapi k) {
    return k == GR_CA_LAUNCH || k == GR_CA_GRAPH_LAUNCH || k == GR_CA_COPY_ASYNC ||
           k == GR_CA_ALLOC_ASYNC;
}

int gr_cuda_is_capture_error(int code) {
    return code >= 900 && code <= 908;
}

const char *gr_cuda_error_name(int code, int driver) {
    static const struct {
        int code;
        const char *rt, *drv;
    } names[] = {
        {0, "cudaSuccess", "CUDA_SUCCESS"},
        {1, "cudaErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE"},
        {2, "cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY"},
        {3, "cudaErrorInitializationError", "CUDA_ERROR_NOT_INITIALIZED"},
        {400, "cudaErrorInvalidResourceHandle", "CUDA_ERROR_INVALID_HANDLE"},
        {600, "cudaErrorNotReady", "CUDA_ERROR_NOT_READY"},
        {700, "cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS"},
        {900, "cudaErrorStreamCaptureUnsupported", "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"},
        {901, "cudaErrorStreamCaptureInvalidated", "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"},
        {902, "cudaErrorStreamCaptureMerge", "CUDA_ERROR_STREAM_CAPTURE_MERGE"},
        {903, "cudaErrorStreamCaptureUnmatched", "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED"},
        {904, "cudaErrorStreamCaptureUnjoined", "CUDA_ERROR_STREAM_CAPTURE_UNJOINED"},
        {905, "cudaErrorStreamCaptureIsolation", "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"},
        {906, "cudaErrorStreamCaptureImplicit", "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"},
        {907, "cudaErrorCapturedEvent", "CUDA_ERROR_CAPTURED_EVENT"},
        {908, "cudaErrorStreamCaptureWrongThread", "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD"},
        {909, "cudaErrorTimeout", "CUDA_ERROR_TIMEOUT"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].code == code) return driver ? names[i].drv : names[i].rt;
    static _Thread_local char buf[32];
    snprintf(buf, sizeof(buf), "error %d", code);
    return buf;
}

const char *gr_capture_mode_str(int mode) {
    switch (mode) {
    case 0:
        return "global";
    case 1:
        return "thread-local";
    case 2:
        return "relaxed";
    default:
        return "?";
    }
}

const char *gr_stream_kind_name(int k) {
    switch (k) {
    case GR_SK_LEGACY:
        return "legacy";
    case GR_SK_PER_THREAD:
        return "per-thread";
    case GR_SK_HANDLE:
        return "handle";
    default:
        return "none";
    }
}

const char *gr_capstat_name(int s) {
    switch (s) {
    case GR_CS_NOSTREAM:
        return "nostream";
    case GR_CS_MEMBER:
        return "capturing";
    case GR_CS_OUTSIDE:
        return "outside";
    case GR_CS_LEGACY:
        return "legacy";
    default:
        return "none";
    }
}

const char *gr_copy_dir_name(int d) {
    switch (d) {
    case GR_CP_H2D:
        return "HtoD";
    case GR_CP_D2H:
        return "DtoH";
    case GR_CP_D2D:
        return "DtoD";
    case GR_CP_H2H:
        return "HtoH";
    case GR_CP_DEFAULT:
        return "Default";
    default:
        return "";
    }
}

const char *gr_hostmem_name(int h) {
    switch (h) {
    case GR_HM_PINNED:
        return "pinned";
    case GR_HM_PAGEABLE:
        return "pageable";
    default:
        return "unknown";
    }
}

/* ---- tracker ---- */

void gr_captrack_init(gr_captrack *t) {
    memset(t, 0, sizeof(*t));
}

int gr_captrack_active(const gr_captrack *t) {
    int n = 0;
    for (int i = 0; i < GR_CT_MAX_CAPTURES; i++)
        n += t->cap[i].active;
    return n;
}

gr_ct_stream gr_capev_stream(const gr_capev *e) {
    gr_ct_stream s;
    memset(&s, 0, sizeof(s));
    s.kind = e->stream_kind;
    if (s.kind == GR_SK_HANDLE) s.handle = e->stream;
    if (s.kind == GR_SK_PER_THREAD) s.tid = e->tid;
    return s;
}

int gr_ct_stream_eq(const gr_ct_stream *a, const gr_ct_stream *b) {
    if (a->kind != b->kind) return 0;
    if (a->kind == GR_SK_HANDLE) return a->handle == b->handle;
    if (a->kind == GR_SK_PER_THREAD) return a->tid == b->tid;
    return 1;
}

static int find_member(const gr_captrack *t, const gr_ct_stream *s) {
    if (s->kind == GR_SK_NONE || s->kind == GR_SK_LEGACY) return -1;
    for (int i = 0; i < t->nmem; i++)
        if (gr_ct_stream_eq(&t->mem[i].s, s)) return i;
    return -1;
}

gr_capstat gr_captrack_status(const gr_captrack *t, const gr_capev *e) {
    if (!gr_captrack_active(t)) return GR_CS_NONE;
    if (e->stream_kind == GR_SK_NONE) return GR_CS_NOSTREAM;
    if (e->stream_kind == GR_SK_LEGACY) return GR_CS_LEGACY;
    gr_ct_stream s = gr_capev_stream(e);
    return find_member(t, &s) >= 0 ? GR_CS_MEMBER : GR_CS_OUTSIDE;
}

int gr_captrack_thread_captures(const gr_captrack *t, uint64_t tid) {
    for (int i = 0; i < GR_CT_MAX_CAPTURES; i++)
        if (t->cap[i].active && t->cap[i].tid == tid) return 1;
    return 0;
}

int gr_captrack_capture_of(const gr_captrack *t, const gr_capev *e) {
    gr_ct_stream s = gr_capev_stream(e);
    int m = find_member(t, &s);
    if (m >= 0) return t->mem[m].cap;
    for (int i = 0; i < GR_CT_MAX_CAPTURES; i++)
        if (t->cap[i].active && t->cap[i].tid == e->tid) return i;
    for (int i = 0; i < GR_CT_MAX_CAPTURES; i++)
        if (t->cap[i].active) return i;
    return -1;
}

static gr_ct_member *add_member(gr_captrack *t, const gr_ct_stream *s, int cap, int origin,
                                const gr_capev *e) {
    if (t->nmem >= GR_CT_MAX_MEMBERS) {
        t->overflow = 1;
        return NULL;
    }
    gr_ct_member *m = &t->mem[t->nmem++];
    memset(m, 0, sizeof(*m));
    m->s = *s;
    m->cap = cap;
    m->origin = origin;
    m->fork_op = -1;
    if (e) {
        m->fork_seq = e->seq;
        m->fork_op = e->op;
        snprintf(m->fork_op_name, sizeof(m->fork_op_name), "%s", e->op_name);
        snprintf(m->fork_ranges, sizeof(m->fork_ranges), "%s", e->ranges);
        snprintf(m->fork_api, sizeof(m->fork_api), "%s", e->api);
    }
    return m;
}

static gr_ct_event *find_event(gr_captrack *t, uint64_t ev) {
    for (int i = 0; i < t->nev; i++)
        if (t->ev[i].event == ev) return &t->ev[i];
    return NULL;
}

static void set_event(gr_captrack *t, uint64_t ev, int cap, const gr_ct_stream *s, uint64_t work) {
    gr_ct_event *x = find_event(t, ev);
    if (!x) {
        if (t->nev < GR_CT_MAX_EVENTS) {
            x = &t->ev[t->nev++];
        } else { /* reuse the oldest slot */
            x = &t->ev[t->ev_next];
            t->ev_next = (t->ev_next + 1) % GR_CT_MAX_EVENTS;
        }
    }
    x->event = ev;
    x->cap = cap;
    x->cap_id = cap >= 0 ? t->cap[cap].id : 0;
    x->s = *s;
    x->work = work;
}

static void end_capture(gr_captrack *t, int slot) {
    t->cap[slot].active = 0;
    int o = 0;
    for (int i = 0; i < t->nmem; i++)
        if (t->mem[i].cap != slot) t->mem[o++] = t->mem[i];
    t->nmem = o;
    for (int i = 0; i < t->nev; i++)
        if (t->ev[i].cap == slot) t->ev[i].cap = -1;
}

void gr_captrack_apply(gr_captrack *t, const gr_capev *e) {
    gr_capapi k = gr_capapi_kind(e->api);
    gr_ct_stream s = gr_capev_stream(e);
    switch (k) {
    case GR_CA_BEGIN: {
        if (e->ret != 0) return;
        int slot = -1;
        for (int i = 0; i < GR_CT_MAX_CAPTURES && slot < 0; i++)
            if (!t->cap[i].active) slot = i;
        if (slot < 0) {
            t->overflow = 1;
            return;
        }
        gr_ct_capture *c = &t->cap[slot];
        memset(c, 0, sizeof(*c));
        c->active = 1;
        c->id = ++t->next_id;
        c->origin = s;
        c->mode = e->mode >= 0 && e->mode <= 2 ? e->mode : 0;
        c->tid = e->tid;
        c->begin_seq = e->seq;
        add_member(t, &s, slot, 1, NULL);
        return;
    }
    case GR_CA_END: {
        /* the capture stays in progress after these two: the call was refused */
        if (e->ret == 903 || e->ret == 908) return;
        for (int i = 0; i < GR_CT_MAX_CAPTURES; i++)
            if (t->cap[i].active && gr_ct_stream_eq(&t->cap[i].origin, &s)) {
                end_capture(t, i);
                return;
            }
        return;
    }
    case GR_CA_EVENT_RECORD: {
        if (e->ret != 0 || !e->event) return;
        int m = find_member(t, &s);
        set_event(t, e->event, m >= 0 ? t->mem[m].cap : -1, &s, m >= 0 ? t->mem[m].work : 0);
        return;
    }
    case GR_CA_STREAM_WAIT: {
        if (e->ret != 0 || !e->event) return;
        gr_ct_event *x = find_event(t, e->event);
        if (!x || x->cap < 0 || !t->cap[x->cap].active || t->cap[x->cap].id != x->cap_id) return;
        int w = find_member(t, &s);
        if (w < 0) {
            /* a fork: the waiting stream joins the capture */
            if (s.kind == GR_SK_HANDLE || s.kind == GR_SK_PER_THREAD)
                add_member(t, &s, x->cap, 0, e);
            return;
        }
        if (t->mem[w].cap != x->cap) return;
        int r = find_member(t, &x->s);
        /* a join: the recording stream's work up to the record is consumed by the waiter */
        if (r >= 0 && r != w && x->work == t->mem[r].work) {
            t->mem[r].joined_work = t->mem[r].work;
            t->mem[r].joined_back = 1;
        }
        return;
    }
    default:
        if (gr_capapi_is_work(k) && e->ret == 0) {
            int m = find_member(t, &s);
            if (m >= 0) t->mem[m].work++;
        }
        return;
    }
}

int gr_captrack_unjoined(const gr_captrack *t, int slot, const gr_ct_member **out, int max) {
    int n = 0;
    for (int i = 0; i < t->nmem && n < max; i++) {
        const gr_ct_member *m = &t->mem[i];
        if (m->cap == slot && !m->origin && m->work > m->joined_work) out[n++] = m;
    }
    if (n) return n;
    for (int i = 0; i < t->nmem && n < max; i++) {
        const gr_ct_member *m = &t->mem[i];
        if (m->cap == slot && !m->origin && !m->joined_back) out[n++] = m;
    }
    return n;
}

/* ---- lists and JSON lines ---- */

void gr_capev_list_free(gr_capev_list *l) {
    if (!l) return;
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

int gr_capev_list_push(gr_capev_list *l, const gr_capev *e) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 256;
        gr_capev *v = realloc(l->v, nc * sizeof(*v));
        if (!v) {
            l->dropped++;
            return 0;
        }
        l->v = v;
        l->cap = nc;
    }
    l->v[l->n++] = *e;
    return 1;
}

static void kv_hex(gr_sbuf *b, const char *key, uint64_t v) {
    char hex[24];
    snprintf(hex, sizeof(hex), "0x%" PRIx64, v);
    gr_sb_kv_str(b, key, hex);
}

void gr_capev_format(gr_sbuf *b, const gr_capev *e) {
    gr_sb_raw(b, "{\"t\":\"call\"", 11);
    gr_sb_kv_u64(b, "seq", e->seq);
    gr_sb_kv_u64(b, "tid", e->tid);
    gr_sb_kv_str(b, "d", e->driver ? "drv" : "rt");
    gr_sb_kv_u64(b, "cb", e->cbid);
    gr_sb_kv_str(b, "api", e->api);
    gr_sb_kv_i64(b, "ret", e->ret);
    gr_sb_kv_str(b, "sk", gr_stream_kind_name(e->stream_kind));
    if (e->stream_kind == GR_SK_HANDLE) kv_hex(b, "str", e->stream);
    gr_sb_kv_str(b, "cap", gr_capstat_name(e->cap));
    if (e->event) kv_hex(b, "ev", e->event);
    if (e->copy) gr_sb_kv_str(b, "copy", gr_copy_dir_name(e->copy));
    if (e->hostmem) gr_sb_kv_str(b, "hm", gr_hostmem_name(e->hostmem));
    if (e->bytes) gr_sb_kv_u64(b, "bytes", e->bytes);
    if (e->mode >= 0) gr_sb_kv_str(b, "mode", gr_capture_mode_str(e->mode));
    if (e->op >= 0) {
        gr_sb_kv_i64(b, "op", e->op);
        gr_sb_kv_str(b, "opname", e->op_name);
        gr_sb_kv_u64(b, "opflags", e->op_flags);
    }
    if (e->ranges[0]) gr_sb_kv_str(b, "nvtx", e->ranges);
    gr_sb_raw(b, "}", 1);
}

void gr_capev_format_header(gr_sbuf *b, const gr_capev_header *h) {
    gr_sb_raw(b, "{\"t\":\"capcheck\"", 15);
    gr_sb_kv_i64(b, "schema_version", GR_CAPEV_SCHEMA_VERSION);
    gr_sb_kv_str(b, "tool", h->tool);
    gr_sb_kv_str(b, "source", h->source);
    gr_sb_kv_i64(b, "pid", h->pid);
    gr_sb_kv_str(b, "command", h->command);
    gr_sb_kv_str(b, "note", h->note);
    gr_sb_raw(b, "}", 1);
}

void gr_capev_format_end(gr_sbuf *b, size_t events, uint64_t dropped, const char *error) {
    gr_sb_raw(b, "{\"t\":\"end\"", 10);
    gr_sb_kv_u64(b, "events", (uint64_t)events);
    gr_sb_kv_u64(b, "dropped", dropped);
    if (error && error[0]) gr_sb_kv_str(b, "error", error);
    gr_sb_raw(b, "}", 1);
}

/* reading */

typedef struct rd {
    const char *label;
    int line;
    gr_error *err;
} rd;

static gr_status bad(rd *r, int col, const char *what, const char *key) {
    return gr_error_at(r->err, GR_ERR_INPUT, r->label, r->line, col,
                       "%s%s%s%s (a capture-check recording: "
                       "docs/capture_check.md)",
                       what, key ? " \"" : "", key ? key : "", key ? "\"" : "");
}

static int pick(const char *s, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

/* Optional enum field as a string from `names`; missing -> dflt. */
static gr_status get_enum(rd *r, const gr_jline *l, const char *key, const char *const *names,
                          int n, int dflt, int *out) {
    const gr_jfield *f = gr_jline_get(l, key);
    if (!f) {
        *out = dflt;
        return GR_OK;
    }
    int v = f->type == GR_JV_STR ? pick(f->s, names, n) : -1;
    if (v < 0) return bad(r, f->col, "unknown value for field", key);
    *out = v;
    return GR_OK;
}

static gr_status get_u64(rd *r, const gr_jline *l, const char *key, int required, uint64_t *out) {
    const gr_jfield *f = gr_jline_get(l, key);
    if (!f) {
        if (required) return bad(r, 1, "missing field", key);
        *out = 0;
        return GR_OK;
    }
    if (f->type != GR_JV_NUM || !f->is_int || f->i < 0)
        return bad(r, f->col, "expected a whole number >= 0 in field", key);
    *out = (uint64_t)f->i;
    return GR_OK;
}

static gr_status get_i64(rd *r, const gr_jline *l, const char *key, int64_t dflt, int64_t *out) {
    const gr_jfield *f = gr_jline_get(l, key);
    if (!f) {
        *out = dflt;
        return GR_OK;
    }
    if (f->type != GR_JV_NUM || !f->is_int)
        return bad(r, f->col, "expected a whole number in field", key);
    *out = f->i;
    return GR_OK;
}

static gr_status get_hex(rd *r, const gr_jline *l, const char *key, uint64_t *out) {
    const gr_jfield *f = gr_jline_get(l, key);
    *out = 0;
    if (!f) return GR_OK;
    if (f->type != GR_JV_STR || strncmp(f->s, "0x", 2) != 0 || !f->s[2])
        return bad(r, f->col, "expected a hex string \"0x...\" in field", key);
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(f->s + 2, &end, 16);
    if (errno || !end || *end)
        return bad(r, f->col, "expected a hex string \"0x...\" in field", key);
    *out = (uint64_t)v;
    return GR_OK;
}

static gr_status get_str(rd *r, const gr_jline *l, const char *key, int required, char *out,
                         size_t size) {
    const gr_jfield *f = gr_jline_get(l, key);
    out[0] = '\0';
    if (!f) return required ? bad(r, 1, "missing field", key) : GR_OK;
    if (f->type != GR_JV_STR) return bad(r, f->col, "expected a string in field", key);
    snprintf(out, size, "%s", f->s);
    return GR_OK;
}

static gr_status read_call(rd *r, const gr_jline *l, gr_capev *e) {
    static const char *const dom[] = {"rt", "drv"};
    static const char *const sk[] = {"none", "legacy", "per-thread", "handle"};
    static const char *const cs[] = {"none", "nostream", "capturing", "outside", "legacy"};
    static const char *const cp[] = {"", "HtoD", "DtoH", "DtoD", "HtoH", "Default"};
    static const char *const hm[] = {"unknown", "pinned", "pageable"};
    static const char *const md[] = {"global", "thread-local", "relaxed"};
    memset(e, 0, sizeof(*e));
    uint64_t u = 0;
    int64_t i = 0;
    GR_TRY(get_u64(r, l, "seq", 1, &e->seq));
    GR_TRY(get_u64(r, l, "tid", 0, &e->tid));
    if (!gr_jline_get(l, "d")) return bad(r, 1, "missing field", "d");
    GR_TRY(get_enum(r, l, "d", dom, 2, 0, &e->driver));
    GR_TRY(get_u64(r, l, "cb", 0, &u));
    e->cbid = (uint32_t)u;
    GR_TRY(get_str(r, l, "api", 1, e->api, sizeof(e->api)));
    if (!e->api[0]) return bad(r, gr_jline_get(l, "api")->col, "empty field", "api");
    GR_TRY(get_i64(r, l, "ret", 0, &i));
    e->ret = (int)i;
    GR_TRY(get_enum(r, l, "sk", sk, 4, GR_SK_NONE, &e->stream_kind));
    GR_TRY(get_hex(r, l, "str", &e->stream));
    if (e->stream_kind == GR_SK_HANDLE && !gr_jline_get(l, "str"))
        return bad(r, 1, "a handle stream needs field", "str");
    GR_TRY(get_enum(r, l, "cap", cs, 5, GR_CS_NONE, &e->cap));
    GR_TRY(get_hex(r, l, "ev", &e->event));
    GR_TRY(get_enum(r, l, "copy", cp, 6, GR_CP_NONE, &e->copy));
    GR_TRY(get_enum(r, l, "hm", hm, 3, GR_HM_UNKNOWN, &e->hostmem));
    GR_TRY(get_u64(r, l, "bytes", 0, &e->bytes));
    GR_TRY(get_enum(r, l, "mode", md, 3, -1, &e->mode));
    GR_TRY(get_i64(r, l, "op", -1, &i));
    e->op = (int)i;
    GR_TRY(get_str(r, l, "opname", 0, e->op_name, sizeof(e->op_name)));
    GR_TRY(get_u64(r, l, "opflags", 0, &u));
    e->op_flags = (unsigned)u;
    GR_TRY(get_str(r, l, "nvtx", 0, e->ranges, sizeof(e->ranges)));
    return GR_OK;
}

gr_status gr_capev_load_mem(const char *text, size_t len, const char *label, gr_capev_list *out,
                            gr_error *err) {
    memset(out, 0, sizeof(*out));
    rd r = {label ? label : "<recording>", 0, err};
    gr_jline *jl = malloc(sizeof(*jl));
    char *buf = malloc(len + 1);
    if (!jl || !buf) {
        free(jl);
        free(buf);
        return gr_error_set(err, GR_ERR_NOMEM, r.label, "out of host memory reading the recording");
    }
    memcpy(buf, text, len);
    buf[len] = '\0';
    gr_status st = GR_OK;
    int seen_header = 0;
    char *p = buf, *stop = buf + len;
    while (p < stop && st == GR_OK) {
        if (r.line == INT_MAX) {
            st = gr_error_at(err, GR_ERR_INPUT, r.label, r.line, 0, "more than %d lines: not a recording", INT_MAX);
            break;
        }
        r.line++;
        char *nl = memchr(p, '\n', (size_t)(stop - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(stop - p);
        char *next = nl ? nl + 1 : p + n;
        if (n > GR_JSONL_MAX_LINE) {
            st = gr_error_at(err, GR_ERR_INPUT, r.label, r.line, 1,
                             "line longer than %zu bytes (the limit of a recording line): not a "
                             "capture-check recording, or a damaged one",
                             (size_t)GR_JSONL_MAX_LINE);
            break;
        }
        if (memchr(p, '\0', n)) {
            st = gr_error_at(err, GR_ERR_INPUT, r.label, r.line, (int)strlen(p) + 1,
                             "NUL byte in the line: the file is binary or damaged, not a recording");
            break;
        }
        if (n && p[n - 1] == '\r') n--;
        p[n] = '\0';
        int blank = 1;
        for (size_t k = 0; k < n; k++)
            if (p[k] != ' ' && p[k] != '\t') blank = 0;
        if (!blank) {
            int col = 0;
            char msg[256];
            if (!gr_jline_parse(p, n, jl, &col, msg, sizeof(msg))) {
                st = gr_error_at(err, GR_ERR_INPUT, r.label, r.line, col, "%s", msg);
                break;
            }
            const gr_jfield *t = gr_jline_get(jl, "t");
            if (!t || t->type != GR_JV_STR) {
                st = bad(&r, t ? t->col : 1, "every line needs a string field", "t");
                break;
            }
            if (!seen_header) {
                if (strcmp(t->s, "capcheck") != 0) {
                    st = bad(&r, t->col,
                             "the first line must be the header {\"t\":\"capcheck\",...}; got kind",
                             t->s);
                    break;
                }
                int64_t v = 0;
                st = get_i64(&r, jl, "schema_version", 0, &v);
                if (st != GR_OK) break;
                if (v != GR_CAPEV_SCHEMA_VERSION) {
                    st = gr_error_at(
                        err, GR_ERR_INPUT, r.label, r.line, 1,
                        "schema_version %lld is not supported (this graphrun reads %d; a newer "
                        "graphrun wrote it?)",
                        (long long)v, GR_CAPEV_SCHEMA_VERSION);
                    break;
                }
                out->hdr.schema_version = (int)v;
                get_str(&r, jl, "tool", 0, out->hdr.tool, sizeof(out->hdr.tool));
                get_str(&r, jl, "source", 0, out->hdr.source, sizeof(out->hdr.source));
                get_str(&r, jl, "command", 0, out->hdr.command, sizeof(out->hdr.command));
                get_str(&r, jl, "note", 0, out->hdr.note, sizeof(out->hdr.note));
                get_i64(&r, jl, "pid", 0, &out->hdr.pid);
                seen_header = 1;
            } else if (!strcmp(t->s, "call")) {
                gr_capev e;
                st = read_call(&r, jl, &e);
                if (st == GR_OK && !gr_capev_list_push(out, &e))
                    st = gr_error_set(err, GR_ERR_NOMEM, r.label,
                                      "out of host memory reading the recording");
            } else if (!strcmp(t->s, "end")) {
                uint64_t dropped = 0;
                st = get_u64(&r, jl, "dropped", 0, &dropped);
                if (st == GR_OK)
                    st = get_str(&r, jl, "error", 0, out->end_error, sizeof(out->end_error));
                out->dropped += dropped;
                out->has_end = 1;
            } /* other kinds: written by a newer graphrun, skipped */
        }
        p = next;
    }
    if (st == GR_OK && !seen_header)
        st = gr_error_at(err, GR_ERR_INPUT, r.label, 0, 0,
                         "empty recording: no header line {\"t\":\"capcheck\",...}");
    free(jl);
    free(buf);
    if (st != GR_OK) gr_capev_list_free(out);
    return st;
}

gr_status gr_capev_save(const char *path, const gr_capev_list *l, gr_error *err) {
    FILE *f = fopen(path, "w");
    if (!f)
        return gr_error_set(err, GR_ERR_IO, path,
                            "cannot write the capture-check recording: %s (is the "
                            "directory writable?)",
                            strerror(errno));
    gr_sbuf b;
    gr_sb_init(&b);
    gr_capev_format_header(&b, &l->hdr);
    gr_sb_raw(&b, "\n", 1);
    for (size_t i = 0; i < l->n; i++) {
        gr_capev_format(&b, &l->v[i]);
        gr_sb_raw(&b, "\n", 1);
        if (b.len > (1u << 20)) {
            fwrite(b.p, 1, b.len, f);
            b.len = 0;
        }
    }
    gr_capev_format_end(&b, l->n, l->dropped, l->end_error);
    gr_sb_raw(&b, "\n", 1);
    int oom = b.oom;
    if (!oom) fwrite(b.p, 1, b.len, f);
    gr_sb_free(&b);
    int bad_write = ferror(f);
    if (fclose(f) != 0) bad_write = 1;
    if (oom)
        return gr_error_set(err, GR_ERR_NOMEM, path, "out of host memory writing the recording");
    if (bad_write)
        return gr_error_set(err, GR_ERR_IO, path,
                            "cannot write the capture-check recording (disk full?)");
    return GR_OK;
}
