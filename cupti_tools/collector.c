/* The CUPTI collector (see collector.h): subscription, activity and per-API enables (with the
 * start-up probe that checks API records arrive), buffer callbacks into the writer, API/resource
 * callbacks (API stack per thread, graph node records, listeners), op tags, flush and stop, and
 * the bookkeeping the end record reports (API records vs launch calls seen, dropped records and
 * where CUPTI reported them). Uses the driver API only through dlsym on the libcuda the program
 * already loaded, so it never adds a libcuda dependency. */
#include "cupti_tools/collector.h"

#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <generated_nvtx_meta.h> /* the NVTX calls' parameters (cupti.h brings the ids) */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "core/cuda_check.h" /* GR_TRY */
#include "cupti_tools/cupti_check.h"
#include "cupti_tools/format.h"
#include "cupti_tools/trace.h"
#include "cupti_tools/writer.h"

#define MAX_LISTENERS 4
#define API_STACK 8
#define TAG_STACK 32
#define CAT_SIZE 2048 /* callback ids per domain the category table covers */
#define MAX_DROP_LOG 8

_Static_assert(CUPTI_RUNTIME_TRACE_CBID_SIZE <= CAT_SIZE &&
                   CUPTI_DRIVER_TRACE_CBID_SIZE <= CAT_SIZE,
               "raise CAT_SIZE for this CUPTI");

/* How API activity records are enabled, per domain. CUPTI documents both ways: per-API enables
 * without the kind ("to enable a small set"), or the kind with per-API disables. Per-API enables
 * alone work only when made before CUDA initialises (the injection); made later they record
 * nothing (H200, CUDA 13.0: in-process traces had no "api" and so no "ext" records). */
enum { API_OFF = 0, API_PER_API, API_KIND_FILTER, API_KIND_ALL };

/* A dropped-records count CUPTI reported, for the end record (when, and in which phase). */
typedef struct drop_event {
    uint64_t n,
        buffer;  /* count; completed buffers so far in this trace (0: a query, not a buffer) */
    int64_t rel; /* ns since t0 */
    const char *phase; /* "run", "probe", "start", "stop" */
} drop_event;

typedef struct api_frame {
    uint8_t driver;
    uint32_t cbid;
    const char *name;
    uint32_t corr;
} api_frame;

#define NVTX_DOMS 8 /* domains whose push depth a thread keeps */

typedef struct tls_state {
    int depth;
    api_frame f[API_STACK];
    int ntag;
    uint64_t tags[TAG_STACK];
    /* NVTX push/pop depth per domain on this thread (written into "nvtx_push" records) */
    const void *nvtx_dom[NVTX_DOMS];
    int nvtx_depth[NVTX_DOMS];
    int nnvtx_dom;
} tls_state;

static _Thread_local tls_state tls;

typedef struct listener {
    gr_cupti_listener fn;
    void *user;
} listener;

static struct {
    pthread_mutex_t mu;
    int active;
    gr_cupti_config cfg;
    char path[1024], command[4096], mode[32], device[128], cc[16];
    uint64_t t0;
    int64_t start_unix_ns;
    int driver_version, runtime_version;
    uint32_t cupti_version;
    CUpti_SubscriberHandle sub;
    int subscribed;
    _Atomic(gr_trace_writer *) writer;
    atomic_ullong dropped, cb_errors;
    gr_fmt fmt; /* writer thread only */
    char kinds[256], apis[512];
    CUpti_ActivityKind enabled[16];
    int nenabled;
    uint16_t rec_ids[2][1024];
    int nrec[2];
    int api_mode[2]; /* API_* per domain (0 runtime, 1 driver) */
    int api_kept[2], api_off[2], api_errors[2];
    uint8_t cat[2][CAT_SIZE]; /* gr_api_cat + 1 by callback id; 0: no such API */
    char api_note[512];       /* the start-up probe's outcome */
    atomic_int probing;
    atomic_ullong probe_api[2]; /* API records seen in buffers while probing */
    atomic_ullong n_api, n_ext, n_launch_api, n_unwanted_api, launch_seen, completed, stale_dropped;
    drop_event drops[MAX_DROP_LOG];
    int ndrops;
    listener listeners[MAX_LISTENERS];
    atomic_int nlisteners;
    char error[1024]; /* why tracing could not start, for the end record */
    atomic_int nvtx_on;   /* NVTX callbacks enabled and recorded (now) */
    atomic_int nvtx_busy; /* NVTX callbacks past the nvtx_on check, not yet done with the writer */
    int nvtx_traced;      /* they were, in this trace (the header's "nvtx") */
    atomic_ullong n_nvtx; /* NVTX range calls recorded */
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

void gr_cupti_config_default(gr_cupti_config *c) {
    memset(c, 0, sizeof(*c));
    c->mode = "in-process";
    c->driver_api = 1;
    c->memcpy = 1;
}

int gr_cupti_active(void) {
    pthread_mutex_lock(&g.mu);
    int a = g.active;
    pthread_mutex_unlock(&g.mu);
    return a;
}

/* ---- driver API through the already-loaded libcuda ---- */

static void *driver_sym(const char *name) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return NULL;
    void *p = dlsym(h, name);
    dlclose(h); /* NOLOAD took a reference; the library stays loaded by the program */
    return p;
}

static int driver_version(void) {
    CUresult (*fn)(int *) = (CUresult(*)(int *))driver_sym("cuDriverGetVersion");
    int v = 0;
    if (fn && fn(&v) == CUDA_SUCCESS) return v;
    return 0;
}

static void device_info(uint32_t ordinal, char *name, size_t size, char *cc, size_t ccsize, int *sms) {
    CUresult (*get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))driver_sym("cuDeviceGet");
    CUresult (*get_name)(char *, int, CUdevice) = (CUresult(*)(char *, int, CUdevice))driver_sym("cuDeviceGetName");
    CUresult (*attr)(int *, CUdevice_attribute, CUdevice) =
        (CUresult(*)(int *, CUdevice_attribute, CUdevice))driver_sym("cuDeviceGetAttribute");
    name[0] = cc[0] = '\0';
    *sms = 0;
    CUdevice dev;
    if (!get || get(&dev, (int)ordinal) != CUDA_SUCCESS) return;
    if (get_name && get_name(name, (int)size, dev) != CUDA_SUCCESS) name[0] = '\0';
    int major = 0, minor = 0;
    if (attr && attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS &&
        attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS)
        snprintf(cc, ccsize, "%d.%d", major, minor);
    if (attr) attr(sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
}

/* The device of the calling thread's current context, when there is one (tracing attached
 * to a running program: no context-creation callback will name it). */
static void current_device(char *name, size_t size, char *cc, size_t ccsize) {
    CUresult (*get_current)(CUcontext *) = (CUresult(*)(CUcontext *))driver_sym("cuCtxGetCurrent");
    CUresult (*get_device)(CUdevice *) = (CUresult(*)(CUdevice *))driver_sym("cuCtxGetDevice");
    CUcontext ctx = NULL;
    CUdevice dev;
    int sms = 0;
    if (!get_current || !get_device || get_current(&ctx) != CUDA_SUCCESS || !ctx || get_device(&dev) != CUDA_SUCCESS)
        return;
    device_info((uint32_t)dev, name, size, cc, ccsize, &sms);
}

/* ---- API categories, dropped-records bookkeeping ---- */

static int wants_record(gr_api_cat c) {
    switch (c) {
    case GR_API_LAUNCH:
    case GR_API_GRAPH_LAUNCH:
    case GR_API_SYNC:
    case GR_API_PROFILER:
        return 1;
    case GR_API_MEMCPY:
    case GR_API_MEMSET:
        return g.cfg.memcpy;
    default:
        return 0;
    }
}

static int wants_callback(gr_api_cat c) {
    return c == GR_API_LAUNCH || c == GR_API_MEMCPY || c == GR_API_MEMSET ||
           c == GR_API_GRAPH_BUILD || c == GR_API_EVENT;
}

static int api_named(int driver, uint32_t cbid) {
    return cbid < CAT_SIZE && g.cat[driver][cbid] != 0;
}

static gr_api_cat cat_of(int driver, uint32_t cbid) {
    return api_named(driver, cbid) ? (gr_api_cat)(g.cat[driver][cbid] - 1) : GR_API_OTHER;
}

static int64_t rel_now(void) {
    uint64_t now = 0;
    return cuptiGetTimestamp(&now) == CUPTI_SUCCESS ? (int64_t)(now - g.t0) : -1;
}

static int stale_phase(const char *phase) {
    return !strcmp(phase, "start") || !strcmp(phase, "probe");
}

/* Counts `n` dropped records CUPTI reported: into the trace's count, or, before the traced work
 * began (start, probe), into the stale count the end record shows separately. */
static void note_drop(size_t n, uint64_t buffer, const char *phase) {
    if (stale_phase(phase))
        atomic_fetch_add(&g.stale_dropped, (unsigned long long)n);
    else
        atomic_fetch_add(&g.dropped, (unsigned long long)n);
    int64_t rel = rel_now();
    pthread_mutex_lock(&g.mu);
    if (g.ndrops < MAX_DROP_LOG)
        g.drops[g.ndrops++] = (drop_event){(uint64_t)n, buffer, rel, phase};
    pthread_mutex_unlock(&g.mu);
}

/* CUPTI keeps the dropped count (one queue: since CUDA 6 every activity buffer is global) and
 * hands it over, resetting it, only when asked, which the buffer-completed callback does. Records
 * dropped after a trace's last completed buffer would be reported by the next trace in the
 * process (graphrun traces twice in one process): ask at stop, and again at start. */
static void query_drops(const char *phase) {
    size_t n = 0;
    if (cuptiActivityGetNumDroppedRecords(NULL, 0, &n) == CUPTI_SUCCESS && n)
        note_drop(n, 0, phase);
}

static CUcontext current_context(void) {
    CUresult (*get_current)(CUcontext *) = (CUresult(*)(CUcontext *))driver_sym("cuCtxGetCurrent");
    CUcontext ctx = NULL;
    if (!get_current || get_current(&ctx) != CUDA_SUCCESS) return NULL;
    return ctx;
}

/* ---- writer callbacks ---- */

static void header_cb(void *user, gr_sbuf *b) {
    (void)user;
    pthread_mutex_lock(&g.mu);
    gr_sb_raw(b, "{\"t\":\"header\"", 13);
    gr_sb_kv_i64(b, "schema_version", GR_TRACE_SCHEMA_VERSION);
    gr_sb_kv_str(b, "tool", "cupti-launchstat");
    gr_sb_kv_str(b, "tool_version", GR_LAUNCHSTAT_VERSION);
    gr_sb_kv_str(b, "mode", g.mode);
    gr_sb_kv_u64(b, "t0", g.t0);
    gr_sb_kv_i64(b, "start_unix_ns", g.start_unix_ns);
    gr_sb_kv_i64(b, "pid", (int64_t)getpid());
    gr_sb_kv_str(b, "command", g.command);
    gr_sb_kv_str(b, "device", g.device);
    gr_sb_kv_str(b, "cc", g.cc);
    gr_sb_kv_i64(b, "driver_version", g.driver_version);
    gr_sb_kv_i64(b, "runtime_version", g.runtime_version);
    gr_sb_kv_u64(b, "cupti_version", g.cupti_version);
    gr_sb_key(b, "latency");
    gr_sb_cstr(b, g.cfg.latency ? "true" : "false");
    gr_sb_kv_i64(b, "steps", g.cfg.steps);
    if (g.nvtx_traced) {
        gr_sb_key(b, "nvtx");
        gr_sb_cstr(b, "true");
    }
    gr_sb_kv_str(b, "kinds", g.kinds);
    gr_sb_kv_str(b, "apis", g.apis);
    gr_sb_raw(b, "}\n", 2);
    pthread_mutex_unlock(&g.mu);
}

static int next_cb(uint8_t *buf, size_t valid, void **rec) {
    CUpti_Activity *r = *rec;
    CUptiResult rc = cuptiActivityGetNextRecord(buf, valid, &r);
    if (rc == CUPTI_SUCCESS) {
        *rec = r;
        return 1;
    }
    if (rc != CUPTI_ERROR_MAX_LIMIT_REACHED) atomic_fetch_add(&g.cb_errors, 1);
    return 0;
}

static int format_cb(void *user, void *rec, gr_sbuf *out) {
    (void)user;
    const CUpti_Activity *r = rec;
    int n = gr_fmt_record(&g.fmt, r, out);
    if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME || r->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
        const CUpti_ActivityAPI *a = rec;
        gr_api_cat c = cat_of(r->kind == CUPTI_ACTIVITY_KIND_DRIVER, a->cbid);
        atomic_fetch_add(&g.n_api, 1);
        if (c == GR_API_LAUNCH) atomic_fetch_add(&g.n_launch_api, 1);
        if (!wants_record(c)) atomic_fetch_add(&g.n_unwanted_api, 1);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        atomic_fetch_add(&g.n_ext, 1);
    }
    return n;
}

typedef struct end_info {
    const char *reason;
    const char *error;
    int64_t end_rel; /* taken before CUPTI may be finalized; -1 unknown */
} end_info;

/* When CUPTI reported dropped records, for the end record: "1 at start (before tracing, not
 * counted, +0.012 ms); 12 in the run (buffer 3, +1.234 ms)". */
static void drop_detail(char *out, size_t size) {
    size_t o = 0;
    out[0] = '\0';
    pthread_mutex_lock(&g.mu);
    for (int i = 0; i < g.ndrops && o + 1 < size; i++) {
        const drop_event *d = &g.drops[i];
        char buf[40] = "";
        if (d->buffer) snprintf(buf, sizeof(buf), "buffer %llu, ", (unsigned long long)d->buffer);
        o += (size_t)snprintf(out + o, size - o, "%s%llu at %s (%s%s%+.3f ms)", o ? "; " : "",
                              (unsigned long long)d->n, d->phase,
                              stale_phase(d->phase) ? "before tracing, not counted, " : "", buf,
                              (double)d->rel / 1e6);
    }
    if (g.ndrops == MAX_DROP_LOG && o + 1 < size) snprintf(out + o, size - o, "; ...");
    pthread_mutex_unlock(&g.mu);
}

static void end_cb(void *user, const gr_writer_stats *st, gr_sbuf *b) {
    const end_info *e = user;
    gr_sb_raw(b, "{\"t\":\"end\"", 10);
    gr_sb_kv_u64(b, "records", st->records);
    gr_sb_kv_u64(b, "dropped", (uint64_t)atomic_load(&g.dropped));
    /* API records against the launch calls the callback layer saw: a reader can tell "no API
     * records were collected" from "the program made no launch calls" */
    gr_sb_kv_u64(b, "api_records", (uint64_t)atomic_load(&g.n_api));
    gr_sb_kv_u64(b, "launch_api_records", (uint64_t)atomic_load(&g.n_launch_api));
    gr_sb_kv_u64(b, "launch_calls_seen", (uint64_t)atomic_load(&g.launch_seen));
    gr_sb_kv_u64(b, "unwanted_api_records", (uint64_t)atomic_load(&g.n_unwanted_api));
    gr_sb_kv_u64(b, "ext_records", (uint64_t)atomic_load(&g.n_ext));
    gr_sb_kv_u64(b, "dropped_before_start", (uint64_t)atomic_load(&g.stale_dropped));
    char detail[1024];
    drop_detail(detail, sizeof(detail));
    if (detail[0]) gr_sb_kv_str(b, "dropped_detail", detail);
    gr_sb_kv_u64(b, "buffers", st->buffers);
    gr_sb_kv_u64(b, "buffer_bytes", g.cfg.buffer_bytes);
    gr_sb_kv_u64(b, "waits", st->waits);
    gr_sb_kv_u64(b, "refused", st->refused);
    gr_sb_kv_u64(b, "write_errors", st->write_errors);
    gr_sb_kv_u64(b, "callback_errors", (uint64_t)atomic_load(&g.cb_errors));
    if (g.cfg.nvtx) gr_sb_kv_u64(b, "nvtx_calls", (uint64_t)atomic_load(&g.n_nvtx));
    if (e->end_rel >= 0) gr_sb_kv_i64(b, "e", e->end_rel);
    gr_sb_kv_str(b, "reason", e->reason ? e->reason : "");
    if (e->error && e->error[0]) gr_sb_kv_str(b, "error", e->error);
    gr_sb_raw(b, "}\n", 2);
}

/* ---- CUPTI buffer callbacks ---- */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *max_records = 0;
    gr_trace_writer *w = atomic_load(&g.writer);
    if (!w) {
        *buffer = NULL;
        *size = 0;
        return;
    }
    *buffer = gr_writer_buffer(w, size);
}

/* While probing: API records in a completed buffer, per domain. */
static void count_probe(uint8_t *buffer, size_t valid) {
    CUpti_Activity *r = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
        if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME)
            atomic_fetch_add(&g.probe_api[0], 1);
        else if (r->kind == CUPTI_ACTIVITY_KIND_DRIVER)
            atomic_fetch_add(&g.probe_api[1], 1);
    }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)size;
    int probing = atomic_load(&g.probing);
    uint64_t no = (uint64_t)atomic_fetch_add(&g.completed, 1) + 1;
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        note_drop(dropped, no, probing ? "probe" : "run");
    if (probing && buffer && valid) count_probe(buffer, valid);
    gr_trace_writer *w = atomic_load(&g.writer);
    if (!w) {
        free(buffer);
        return;
    }
    gr_writer_submit(w, buffer, valid);
}

/* ---- API and resource callbacks ---- */

static void emit(const gr_sbuf *b) {
    gr_trace_writer *w = atomic_load(&g.writer);
    if (w && !b->oom) gr_writer_line(w, b->p, b->len);
    else atomic_fetch_add(&g.cb_errors, 1);
}

static void on_context(const CUpti_ResourceData *rd) {
    uint32_t ctx_id = 0, dev = 0;
    if (cuptiGetContextId(rd->context, &ctx_id) != CUPTI_SUCCESS || cuptiGetDeviceId(rd->context, &dev) != CUPTI_SUCCESS) {
        atomic_fetch_add(&g.cb_errors, 1);
        return;
    }
    char name[128], cc[16];
    int sms = 0;
    device_info(dev, name, sizeof(name), cc, sizeof(cc), &sms);
    pthread_mutex_lock(&g.mu);
    if (!g.device[0]) {
        snprintf(g.device, sizeof(g.device), "%s", name);
        snprintf(g.cc, sizeof(g.cc), "%s", cc);
    }
    pthread_mutex_unlock(&g.mu);
    gr_sbuf b;
    gr_sb_init(&b);
    gr_sb_raw(&b, "{\"t\":\"ctx\"", 10);
    gr_sb_kv_u64(&b, "ctx", ctx_id);
    gr_sb_kv_u64(&b, "dev", dev);
    gr_sb_kv_str(&b, "name", name);
    gr_sb_kv_str(&b, "cc", cc);
    gr_sb_kv_i64(&b, "sms", sms);
    gr_sb_raw(&b, "}", 1);
    emit(&b);
    gr_sb_free(&b);
}

static void on_graph_node(const CUpti_ResourceData *rd, int cloned) {
    const CUpti_GraphData *gd = rd ? (const CUpti_GraphData *)rd->resourceDescriptor : NULL;
    if (!gd || !gd->node) return;
    uint64_t nid = 0, orig = 0;
    uint32_t gid = 0;
    if (cuptiGetGraphNodeId(gd->node, &nid) != CUPTI_SUCCESS) {
        atomic_fetch_add(&g.cb_errors, 1);
        return;
    }
    if (gd->graph && cuptiGetGraphId(gd->graph, &gid) != CUPTI_SUCCESS) gid = 0;
    gr_sbuf b;
    gr_sb_init(&b);
    gr_sb_raw(&b, "{\"t\":\"node\"", 11);
    gr_sb_kv_u64(&b, "nid", nid);
    gr_sb_kv_u64(&b, "gid", gid);
    gr_sb_kv_i64(&b, "ty", (int64_t)gd->nodeType);
    if (cloned) {
        if (!gd->originalNode || cuptiGetGraphNodeId(gd->originalNode, &orig) != CUPTI_SUCCESS) {
            atomic_fetch_add(&g.cb_errors, 1);
            gr_sb_free(&b);
            return;
        }
        gr_sb_kv_u64(&b, "orig", orig);
    } else {
        /* a node made from another one (instantiation may report creation, not cloning) */
        if (gd->originalNode && gd->originalNode != gd->node &&
            cuptiGetGraphNodeId(gd->originalNode, &orig) == CUPTI_SUCCESS && orig && orig != nid)
            gr_sb_kv_u64(&b, "orig", orig);
        if (tls.depth > 0) {
            char name[96];
            gr_api_strip_version(tls.f[0].name, name, sizeof(name));
            gr_sb_kv_str(&b, "api", name);
            gr_sb_kv_u64(&b, "corr", tls.f[0].corr);
        }
        if (tls.ntag > 0) gr_sb_kv_u64(&b, "tag", tls.tags[tls.ntag - 1 < TAG_STACK ? tls.ntag - 1 : TAG_STACK - 1]);
    }
    gr_sb_raw(&b, "}", 1);
    emit(&b);
    gr_sb_free(&b);
}

/* ---- the program's NVTX ranges ----
 * Why callbacks (CUPTI_CB_DOMAIN_NVTX) and not CUPTI_ACTIVITY_KIND_MARKER records: the callback
 * runs on the calling thread inside the NVTX call, so each record gets the system thread id the
 * API records carry (gettid, as cuptiSetThreadIdType(SYSTEM) gives them) and a timestamp on the
 * same CUPTI clock, in call order, with the per-thread per-domain depth known then; marker
 * records arrive later in activity buffers, start and end apart, to be paired by id, and CUPTI
 * needs the NVTX callback domain subscribed for them anyway (its cupti_nvtx sample does both).
 * Costs per call: a timestamp, a gettid and one side line for the writer. */

/* Domain handles and registered strings to their names: few, written once, read from any thread
 * (published by the count, never changed after). */
#define NVTX_NAMES 512
typedef struct nvtx_name {
    const void *h;
    char s[128];
} nvtx_name;
static nvtx_name nv_doms[NVTX_NAMES], nv_strs[NVTX_NAMES];
static atomic_int nv_ndoms, nv_nstrs;
static pthread_mutex_t nv_mu = PTHREAD_MUTEX_INITIALIZER;

static void nvtx_wide(const wchar_t *w, char *out, size_t size) {
    size_t o = 0;
    for (; w && *w && o + 1 < size; w++)
        out[o++] = *w > 0 && *w < 0x80 ? (char)*w : '?';
    out[o] = '\0';
}

/* the name of handle `h` in `tab`, "" when unknown */
static const char *nvtx_lookup(nvtx_name *tab, atomic_int *n, const void *h) {
    int k = atomic_load(n);
    for (int i = 0; i < k; i++)
        if (tab[i].h == h) return tab[i].s;
    return "";
}

static void nvtx_remember(nvtx_name *tab, atomic_int *n, const void *h, const char *s) {
    if (!h) return;
    pthread_mutex_lock(&nv_mu);
    int k = atomic_load(n);
    int known = 0;
    for (int i = 0; i < k && !known; i++)
        known = tab[i].h == h;
    if (!known && k < NVTX_NAMES) {
        tab[k].h = h;
        snprintf(tab[k].s, sizeof(tab[k].s), "%s", s ? s : ""); /* nvtxDomainCreateA(NULL) */
        atomic_store(n, k + 1);
    }
    pthread_mutex_unlock(&nv_mu);
}

/* A domain created before tracing started (or past the table) still gets a stable name. */
static const char *nvtx_domain(const void *h, char *buf, size_t size) {
    if (!h) return "";
    const char *s = nvtx_lookup(nv_doms, &nv_ndoms, h);
    if (s[0]) return s;
    snprintf(buf, size, "domain %p", h);
    return buf;
}

static const char *nvtx_message(const nvtxEventAttributes_t *a, char *buf, size_t size) {
    if (!a) return "";
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return a->message.ascii ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
        nvtx_wide(a->message.unicode, buf, size);
        return buf;
    case NVTX_MESSAGE_TYPE_REGISTERED:
        return nvtx_lookup(nv_strs, &nv_nstrs, (const void *)a->message.registered);
    default:
        return "";
    }
}

/* this thread's push depth in domain `dom` (created on first use; past NVTX_DOMS: none kept) */
static int *nvtx_depth(const void *dom) {
    for (int i = 0; i < tls.nnvtx_dom; i++)
        if (tls.nvtx_dom[i] == dom) return &tls.nvtx_depth[i];
    if (tls.nnvtx_dom == NVTX_DOMS) return NULL;
    tls.nvtx_dom[tls.nnvtx_dom] = dom;
    tls.nvtx_depth[tls.nnvtx_dom] = 0;
    return &tls.nvtx_depth[tls.nnvtx_dom++];
}

static void on_nvtx(CUpti_CallbackId cbid, const CUpti_NvtxData *d) {
    const void *p = d ? d->functionParams : NULL;
    const void *ret = d ? d->functionReturnValue : NULL;
    const void *dom = NULL;
    const char *msg = NULL;
    char wbuf[256];
    int push = 0, has_id = 0;
    uint64_t id = 0;
    /* nvtxRangePop has no parameters; every other case reads them */
    if (!p && cbid != CUPTI_CBID_NVTX_nvtxRangePop) return;
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxDomainCreateA:
        if (ret)
            nvtx_remember(nv_doms, &nv_ndoms, *(const nvtxDomainHandle_t *)ret,
                          ((const nvtxDomainCreateA_params *)p)->name);
        return;
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
        if (ret)
            nvtx_remember(nv_strs, &nv_nstrs, *(const nvtxStringHandle_t *)ret,
                          ((const nvtxDomainRegisterStringA_params *)p)->string);
        return;
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringW:
        /* CUPTI's header types the wide string as char * */
        nvtx_wide(
            (const wchar_t *)(const void *)((const nvtxDomainRegisterStringW_params *)p)->string,
            wbuf, sizeof(wbuf));
        if (ret) nvtx_remember(nv_strs, &nv_nstrs, *(const nvtxStringHandle_t *)ret, wbuf);
        return;
    case CUPTI_CBID_NVTX_nvtxRangePushA:
        push = 1;
        msg = ((const nvtxRangePushA_params *)p)->message;
        break;
    case CUPTI_CBID_NVTX_nvtxRangePushW:
        push = 1;
        nvtx_wide(((const nvtxRangePushW_params *)p)->message, wbuf, sizeof(wbuf));
        msg = wbuf;
        break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
        push = 1;
        msg = nvtx_message(((const nvtxRangePushEx_params *)p)->eventAttrib, wbuf, sizeof(wbuf));
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        push = 1;
        dom = ((const nvtxDomainRangePushEx_params *)p)->domain;
        msg = nvtx_message(((const nvtxDomainRangePushEx_params *)p)->core.eventAttrib, wbuf,
                           sizeof(wbuf));
        break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        dom = ((const nvtxDomainRangePop_params *)p)->domain;
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
        push = has_id = 1;
        msg = ((const nvtxRangeStartA_params *)p)->message;
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartW:
        push = has_id = 1;
        nvtx_wide(((const nvtxRangeStartW_params *)p)->message, wbuf, sizeof(wbuf));
        msg = wbuf;
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        push = has_id = 1;
        msg = nvtx_message(((const nvtxRangeStartEx_params *)p)->eventAttrib, wbuf, sizeof(wbuf));
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
        push = has_id = 1;
        dom = ((const nvtxDomainRangeStartEx_params *)p)->domain;
        msg = nvtx_message(((const nvtxDomainRangeStartEx_params *)p)->core.eventAttrib, wbuf,
                           sizeof(wbuf));
        break;
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
        has_id = 1;
        id = ((const nvtxRangeEnd_params *)p)->id;
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
        has_id = 1;
        dom = ((const nvtxDomainRangeEnd_params *)p)->domain;
        id = ((const nvtxDomainRangeEnd_params *)p)->core.id;
        break;
    default:
        return;
    }
    if (push && has_id) {
        /* CUPTI 13.0 makes the id before the callback and points functionReturnValue at it; 0 is
         * what NVTX returns with no tool listening: no id, and its end could not be paired */
        id = ret ? *(const nvtxRangeId_t *)ret : 0;
        if (!id) return;
    }
    /* Announced before nvtx_on is read (both seq_cst): once disable_everything has cleared
     * nvtx_on and seen nvtx_busy at 0, no NVTX callback still holds the writer that
     * gr_cupti_stop is about to close (NVTX calls come from any of the program's threads). */
    atomic_fetch_add(&g.nvtx_busy, 1);
    if (!atomic_load(&g.nvtx_on)) {
        atomic_fetch_sub(&g.nvtx_busy, 1);
        return;
    }
    int64_t now = rel_now();
    char dbuf[48];
    const char *dname = nvtx_domain(dom, dbuf, sizeof(dbuf));
    int *depth = has_id ? NULL : nvtx_depth(dom);
    int level = -1;
    if (push && depth)
        level = (*depth)++;
    else if (!push && depth && *depth > 0)
        (*depth)--;
    gr_sbuf b;
    gr_sb_init(&b);
    gr_fmt_nvtx(&b, push, now, (uint32_t)syscall(SYS_gettid), dname, has_id, id, msg, level);
    emit(&b);
    atomic_fetch_add(&g.n_nvtx, 1);
    atomic_fetch_sub(&g.nvtx_busy, 1);
    gr_sb_free(&b);
}

/* The NVTX calls the trace records; CUPTI_CBID_NVTX_* of cupti_nvtx_cbid.h. */
static const CUpti_CallbackId nvtx_cbids[] = {
    CUPTI_CBID_NVTX_nvtxDomainCreateA, /* (a domain created with nvtxDomainCreateW goes by its
                                          address) */
    CUPTI_CBID_NVTX_nvtxDomainRegisterStringA,
    CUPTI_CBID_NVTX_nvtxDomainRegisterStringW,
    CUPTI_CBID_NVTX_nvtxRangePushA,
    CUPTI_CBID_NVTX_nvtxRangePushW,
    CUPTI_CBID_NVTX_nvtxRangePushEx,
    CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
    CUPTI_CBID_NVTX_nvtxRangePop,
    CUPTI_CBID_NVTX_nvtxDomainRangePop,
    CUPTI_CBID_NVTX_nvtxRangeStartA,
    CUPTI_CBID_NVTX_nvtxRangeStartW,
    CUPTI_CBID_NVTX_nvtxRangeStartEx,
    CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
    CUPTI_CBID_NVTX_nvtxRangeEnd,
    CUPTI_CBID_NVTX_nvtxDomainRangeEnd};

/* Optional: without NVTX callbacks the trace is complete, it only lacks the program's ranges
 * (the header then has no "nvtx": true). */
static void enable_nvtx(void) {
    size_t n = sizeof(nvtx_cbids) / sizeof(nvtx_cbids[0]), ok = 0;
    for (size_t i = 0; i < n; i++)
        ok += cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_NVTX, nvtx_cbids[i]) == CUPTI_SUCCESS;
    pthread_mutex_lock(&g.mu);
    g.nvtx_traced = ok == n;
    pthread_mutex_unlock(&g.mu);
    atomic_store(&g.nvtx_on, ok == n);
    if (ok != n) cuptiEnableDomain(0, g.sub, CUPTI_CB_DOMAIN_NVTX);
}

static void CUPTIAPI on_callback(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data) {
    (void)ud;
    if (dom == CUPTI_CB_DOMAIN_NVTX) {
        on_nvtx(cbid, data);
        return;
    }
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API || dom == CUPTI_CB_DOMAIN_DRIVER_API) {
        const CUpti_CallbackData *cb = data;
        int enter = cb->callbackSite == CUPTI_API_ENTER;
        if (enter) {
            if (tls.depth < API_STACK)
                tls.f[tls.depth] = (api_frame){dom == CUPTI_CB_DOMAIN_DRIVER_API, cbid, cb->functionName, cb->correlationId};
            tls.depth++;
            /* top-level launch calls, to check the trace's API records against */
            if (tls.depth == 1 && cat_of(dom == CUPTI_CB_DOMAIN_DRIVER_API, cbid) == GR_API_LAUNCH)
                atomic_fetch_add(&g.launch_seen, 1);
        }
        int nl = atomic_load(&g.nlisteners);
        if (nl > 0) {
            gr_cupti_api_call call = {dom == CUPTI_CB_DOMAIN_DRIVER_API, cbid, enter, cb->functionName,
                                      cb->correlationId, tls.depth, cb};
            for (int i = 0; i < nl && i < MAX_LISTENERS; i++) g.listeners[i].fn(g.listeners[i].user, &call);
        }
        if (!enter && tls.depth > 0) tls.depth--;
        return;
    }
    if (dom == CUPTI_CB_DOMAIN_RESOURCE) {
        const CUpti_ResourceData *rd = data;
        switch (cbid) {
        case CUPTI_CBID_RESOURCE_CONTEXT_CREATED: on_context(rd); break;
        case CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED: on_graph_node(rd, 0); break;
        case CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED: on_graph_node(rd, 1); break;
        default: break;
        }
    }
}

/* ---- start ---- */

static gr_status enable_kind(CUpti_ActivityKind k, const char *name, gr_error *err) {
    CUptiResult rc = cuptiActivityEnable(k);
    if (rc != CUPTI_SUCCESS) {
        char expr[96];
        snprintf(expr, sizeof(expr), "cuptiActivityEnable(%s)", name);
        return gr_cupti_fail(rc, expr, NULL, __FILE__, __LINE__, err);
    }
    g.enabled[g.nenabled++] = k;
    size_t n = strlen(g.kinds);
    snprintf(g.kinds + n, sizeof(g.kinds) - n, "%s%s", n ? "," : "", name);
    return GR_OK;
}

/* Callbacks for one domain, chosen by the API's category, and the category table the callbacks,
 * the formatter's counts and the record enables use. */
static gr_status domain_callbacks(int driver, gr_error *err) {
    CUpti_CallbackDomain dom = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    uint32_t size = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
    for (uint32_t cbid = 1; cbid < size; cbid++) {
        const char *raw = NULL;
        if (cuptiGetCallbackName(dom, cbid, &raw) != CUPTI_SUCCESS || !raw) continue;
        char name[96];
        gr_api_strip_version(raw, name, sizeof(name));
        gr_api_cat c = gr_api_category(name);
        g.cat[driver][cbid] = (uint8_t)(c + 1);
        if (!wants_callback(c)) continue;
        CUptiResult rc = cuptiEnableCallback(1, g.sub, dom, cbid);
        if (rc != CUPTI_SUCCESS) {
            char expr[160];
            snprintf(expr, sizeof(expr), "cuptiEnableCallback(%s)", name);
            return gr_cupti_fail(rc, expr, NULL, __FILE__, __LINE__, err);
        }
    }
    return GR_OK;
}

static CUptiResult enable_api(int driver, uint32_t cbid, int on) {
    return driver ? cuptiActivityEnableDriverApi(cbid, (uint8_t)(on != 0))
                  : cuptiActivityEnableRuntimeApi(cbid, (uint8_t)(on != 0));
}

/* The RUNTIME or DRIVER kind on; switched off and on again when it already was, since CUPTI
 * documents that enabling the kind overrides per-API settings made before it. */
static gr_status kind_on(int driver, gr_error *err) {
    CUpti_ActivityKind k = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
    const char *name = driver ? "driver" : "runtime";
    for (int i = 0; i < g.nenabled; i++) {
        if (g.enabled[i] != k) continue;
        cuptiActivityDisable(k);
        CUptiResult rc = cuptiActivityEnable(k);
        if (rc != CUPTI_SUCCESS) {
            char expr[96];
            snprintf(expr, sizeof(expr), "cuptiActivityEnable(%s)", name);
            return gr_cupti_fail(rc, expr, NULL, __FILE__, __LINE__, err);
        }
        return GR_OK;
    }
    return enable_kind(k, name, err);
}

/* API activity records of one domain, the way `mode` says, falling back where this CUPTI cannot:
 * per-API enables refused -> kind + filter; no per-API control at all -> the whole kind. */
static gr_status set_api_records(int driver, int mode, gr_error *err) {
    uint32_t size = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
    g.api_kept[driver] = g.api_off[driver] = g.api_errors[driver] = 0;
    if (mode == API_PER_API) {
        for (uint32_t cbid = 1; cbid < size; cbid++) {
            if (!api_named(driver, cbid) || !wants_record(cat_of(driver, cbid))) continue;
            if (enable_api(driver, cbid, 1) == CUPTI_SUCCESS) {
                if (g.nrec[driver] < 1024) g.rec_ids[driver][g.nrec[driver]++] = (uint16_t)cbid;
                g.api_kept[driver]++;
            } else if (g.api_kept[driver] == 0) {
                mode = API_KIND_FILTER; /* per-API enables unsupported here */
                break;
            } else {
                g.api_errors[driver]++; /* one API this CUPTI will not record: the others still are
                                         */
            }
        }
        if (mode == API_PER_API) {
            g.api_mode[driver] = mode;
            return GR_OK;
        }
    }
    if (mode ==
        API_KIND_ALL) /* undo an earlier filter (the kind switched on below overrides it too) */
        for (uint32_t cbid = 1; cbid < size; cbid++)
            if (api_named(driver, cbid)) enable_api(driver, cbid, 1);
    GR_TRY(kind_on(driver, err));
    if (mode == API_KIND_FILTER) {
        for (uint32_t cbid = 1; cbid < size; cbid++) {
            if (!api_named(driver, cbid)) continue;
            int want = wants_record(cat_of(driver, cbid));
            if (enable_api(driver, cbid, want) != CUPTI_SUCCESS)
                g.api_errors[driver]++;
            else if (want)
                g.api_kept[driver]++;
            else
                g.api_off[driver]++;
        }
        if (g.api_kept[driver] + g.api_off[driver] == 0)
            mode = API_KIND_ALL; /* no per-API control */
    }
    g.api_mode[driver] = mode;
    return GR_OK;
}

/* The header's "apis": how each domain's API records were enabled, then the probe's outcome. */
static void describe_apis(void) {
    char *out = g.apis;
    size_t size = sizeof(g.apis), o = 0;
    out[0] = '\0';
    const char *set = g.cfg.memcpy ? "launch, graph_launch, sync, profiler, memcpy, memset"
                                   : "launch, graph_launch, sync, profiler";
    for (int d = 0; d < 2 && o + 1 < size; d++) {
        const char *dn = d ? "driver" : "runtime";
        const char *sep = o ? "; " : "";
        switch (g.api_mode[d]) {
        case API_PER_API:
            o += (size_t)snprintf(out + o, size - o, "%s%s: %d APIs (%s)%s", sep, dn, g.api_kept[d],
                                  set, g.api_errors[d] ? ", some could not be enabled" : "");
            break;
        case API_KIND_FILTER:
            o += (size_t)snprintf(out + o, size - o,
                                  "%s%s: kind on, %d APIs kept (%s), %d switched off%s", sep, dn,
                                  g.api_kept[d], set, g.api_off[d],
                                  g.api_errors[d] ? ", some filter calls failed" : "");
            break;
        case API_KIND_ALL:
            o += (size_t)snprintf(out + o, size - o, "%s%s: all (kind on, no per-API filter)", sep,
                                  dn);
            break;
        default:
            o += (size_t)snprintf(out + o, size - o, "%s%s: none", sep, dn);
            break;
        }
    }
    if (g.api_note[0] && o + 1 < size) snprintf(out + o, size - o, "; %s", g.api_note);
}

/* One API call per domain and a forced flush; API records per domain that came back. */
static void probe_once(int tried[2], unsigned long long seen[2]) {
    CUresult (*sync)(void) = (CUresult(*)(void))driver_sym("cuCtxSynchronize");
    atomic_store(&g.probe_api[0], 0);
    atomic_store(&g.probe_api[1], 0);
    atomic_store(&g.probing, 1);
    tried[0] = g.cfg.probe_runtime != NULL;
    tried[1] = g.cfg.driver_api && sync != NULL;
    if (tried[1]) sync();
    if (tried[0]) g.cfg.probe_runtime();
    if (cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != CUPTI_SUCCESS)
        atomic_fetch_add(&g.cb_errors, 1);
    atomic_store(&g.probing, 0);
    seen[0] = atomic_load(&g.probe_api[0]);
    seen[1] = atomic_load(&g.probe_api[1]);
}

/* After CUDA initialised: check that API records arrive, domain by domain; where none does with
 * the filter, record the whole kind and check again. The outcome goes into g.api_note (header). */
static gr_status probe_api_records(gr_error *err) {
    int tried[2];
    unsigned long long seen[2], again[2] = {0, 0};
    probe_once(tried, seen);
    int retry = 0;
    for (int d = 0; d < 2; d++) {
        if (!tried[d] || seen[d] || g.api_mode[d] == API_KIND_ALL || g.api_mode[d] == API_OFF)
            continue;
        GR_TRY(set_api_records(d, API_KIND_ALL, err));
        retry = 1;
    }
    if (retry) probe_once(tried, again);
    size_t o = 0, size = sizeof(g.api_note);
    o += (size_t)snprintf(g.api_note, size, "start-up probe:");
    for (int d = 0; d < 2 && o + 1 < size; d++) {
        const char *dn = d ? "driver (cuCtxSynchronize)" : "runtime";
        if (!tried[d])
            o += (size_t)snprintf(g.api_note + o, size - o, " %s not probed;", dn);
        else if (seen[d])
            o += (size_t)snprintf(g.api_note + o, size - o, " %s %llu API records;", dn, seen[d]);
        else if (g.api_mode[d] == API_KIND_ALL && again[d])
            o += (size_t)snprintf(
                g.api_note + o, size - o,
                " %s none with the per-API filter, %llu with the whole kind (kept);", dn, again[d]);
        else
            o += (size_t)snprintf(g.api_note + o, size - o,
                                  " %s NO API RECORDS arrived (expect none in the trace);", dn);
    }
    if (o >= size) o = size - 1; /* truncated: snprintf counted what did not fit */
    if (o > 0 && g.api_note[o - 1] == ';') g.api_note[o - 1] = '\0';
    return GR_OK;
}

/* API records and callbacks for both domains. Before CUDA initialises (the injection) per-API
 * enables; after (in-process), the kind + per-API filter, then the probe when the caller allows
 * it (its sync calls would break a stream capture under way). */
static gr_status enable_apis(gr_error *err) {
    int after_init = strcmp(g.mode, "injection") != 0;
    int first = after_init ? API_KIND_FILTER : API_PER_API;
    GR_TRY(domain_callbacks(0, err));
    GR_TRY(set_api_records(0, first, err));
    if (g.cfg.driver_api) {
        GR_TRY(domain_callbacks(1, err));
        GR_TRY(set_api_records(1, first, err));
    }
    if (after_init && g.cfg.probe_runtime && current_context()) {
        /* the header must describe what the probe settles on: nothing is written meanwhile */
        gr_trace_writer *w = atomic_load(&g.writer);
        gr_writer_hold(w, 1);
        gr_status st = probe_api_records(err);
        pthread_mutex_lock(&g.mu);
        describe_apis();
        pthread_mutex_unlock(&g.mu);
        gr_writer_hold(w, 0);
        return st;
    }
    pthread_mutex_lock(&g.mu);
    describe_apis();
    pthread_mutex_unlock(&g.mu);
    return GR_OK;
}

static gr_status enable_everything(gr_error *err) {
    CUpti_SubscriberParams params;
    memset(&params, 0, sizeof(params));
    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 8] = "";
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "graphrun cupti-launchstat";
    params.oldSubscriberName = old;
    params.oldSubscriberSize = sizeof(old);
    CUptiResult rc = cuptiSubscribe_v2(&g.sub, (CUpti_CallbackFunc)on_callback, NULL, &params);
    if (rc != CUPTI_SUCCESS) {
        char detail[160] = "";
        if (old[0]) snprintf(detail, sizeof(detail), "the attached client is \"%s\"", old);
        return gr_cupti_fail(rc, "cuptiSubscribe_v2", detail, __FILE__, __LINE__, err);
    }
    g.subscribed = 1;
    /* Optional settings: without them the trace is still right, only less detailed (system
     * thread ids, latency timestamps: the header says which were on) */
    cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    if (g.cfg.latency && cuptiActivityEnableLatencyTimestamps(1) != CUPTI_SUCCESS) g.cfg.latency = 0;
    uint8_t zeroed = 1;
    size_t zsize = sizeof(zeroed);
    if (cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zsize, &zeroed) != CUPTI_SUCCESS)
        atomic_fetch_add(&g.cb_errors, 1);
    GR_CUPTI(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), err);
    /* a count CUPTI still holds from an earlier trace in this process is not this trace's (the
     * injection starts first thing in its process: nothing to ask) */
    if (strcmp(g.mode, "injection") != 0) query_drops("start");
    GR_TRY(enable_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel", err));
    if (g.cfg.memcpy) {
        GR_TRY(enable_kind(CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy", err));
        GR_TRY(enable_kind(CUPTI_ACTIVITY_KIND_MEMSET, "memset", err));
    }
    gr_error optional;
    gr_error_clear(&optional);
    enable_kind(CUPTI_ACTIVITY_KIND_OVERHEAD, "overhead", &optional); /* listed in "kinds" when on */
    if (g.cfg.tags) GR_TRY(enable_kind(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, "external_correlation", err));
    GR_TRY(enable_apis(err));
    GR_CUPTI(cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED), err);
    GR_CUPTI(cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED), err);
    GR_CUPTI(cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED), err);
    if (g.cfg.nvtx) enable_nvtx();
    return GR_OK;
}

/* Undo whatever enable_everything got to; errors are ignored (best effort on the way out). */
static void disable_everything(void) {
    for (int i = 0; i < g.nenabled; i++) cuptiActivityDisable(g.enabled[i]);
    g.nenabled = 0;
    for (int d = 0; d < 2; d++) {
        for (int i = 0; i < g.nrec[d]; i++) {
            if (d) cuptiActivityEnableDriverApi(g.rec_ids[d][i], 0);
            else cuptiActivityEnableRuntimeApi(g.rec_ids[d][i], 0);
        }
        g.nrec[d] = 0;
        g.api_mode[d] = API_OFF; /* a kind (RUNTIME/DRIVER) was disabled with the others above */
    }
    if (g.subscribed) {
        cuptiEnableDomain(0, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API);
        cuptiEnableDomain(0, g.sub, CUPTI_CB_DOMAIN_DRIVER_API);
        cuptiEnableDomain(0, g.sub, CUPTI_CB_DOMAIN_RESOURCE);
        if (atomic_load(&g.nvtx_on)) cuptiEnableDomain(0, g.sub, CUPTI_CB_DOMAIN_NVTX);
    }
    atomic_store(&g.nvtx_on, 0);
    /* an NVTX callback already past its check finishes its line before the writer can go (a
     * few microseconds; bounded, so that nothing unforeseen can hang the program's exit) */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_load(&g.nvtx_busy) > 0) {
        sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 2) break;
    }
}

gr_status gr_cupti_start(const gr_cupti_config *c, gr_error *err) {
    pthread_mutex_lock(&g.mu);
    if (g.active) {
        pthread_mutex_unlock(&g.mu);
        return gr_error_set(err, GR_ERR_INTERNAL, c->trace_path,
                            "a CUPTI trace is already being written in this process (%s)", g.path);
    }
    g.active = 1;
    g.cfg = *c;
    if (!g.cfg.buffer_bytes) g.cfg.buffer_bytes = (size_t)8 << 20;
    if (g.cfg.max_buffers <= 0) g.cfg.max_buffers = 32;
    snprintf(g.path, sizeof(g.path), "%s", c->trace_path ? c->trace_path : "");
    snprintf(g.command, sizeof(g.command), "%s", c->command ? c->command : "");
    snprintf(g.mode, sizeof(g.mode), "%s", c->mode ? c->mode : "in-process");
    snprintf(g.device, sizeof(g.device), "%s", c->device ? c->device : "");
    snprintf(g.cc, sizeof(g.cc), "%s", c->cc ? c->cc : "");
    g.runtime_version = c->runtime_version;
    g.kinds[0] = g.apis[0] = g.error[0] = '\0';
    g.nenabled = 0;
    g.nrec[0] = g.nrec[1] = 0;
    g.api_mode[0] = g.api_mode[1] = API_OFF;
    memset(g.cat, 0, sizeof(g.cat));
    g.api_note[0] = '\0';
    g.ndrops = 0;
    g.subscribed = 0;
    atomic_store(&g.dropped, 0);
    atomic_store(&g.cb_errors, 0);
    atomic_store(&g.probing, 0);
    atomic_store(&g.n_api, 0);
    atomic_store(&g.n_ext, 0);
    atomic_store(&g.n_launch_api, 0);
    atomic_store(&g.n_unwanted_api, 0);
    atomic_store(&g.launch_seen, 0);
    atomic_store(&g.completed, 0);
    atomic_store(&g.stale_dropped, 0);
    atomic_store(&g.n_nvtx, 0);
    atomic_store(&g.nvtx_on, 0);
    g.nvtx_traced = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    g.start_unix_ns = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    if (cuptiGetTimestamp(&g.t0) != CUPTI_SUCCESS) g.t0 = (uint64_t)g.start_unix_ns;
    g.driver_version = driver_version();
    /* not during the injection's cuInit: no context exists yet and the driver is mid-init */
    if (!g.device[0] && strcmp(g.mode, "injection") != 0) current_device(g.device, sizeof(g.device), g.cc, sizeof(g.cc));
    if (cuptiGetVersion(&g.cupti_version) != CUPTI_SUCCESS) g.cupti_version = 0;
    pthread_mutex_unlock(&g.mu);

    gr_fmt_init(&g.fmt, g.t0, NULL);
    gr_writer_config wc;
    memset(&wc, 0, sizeof(wc));
    wc.path = g.path;
    wc.exclusive = c->exclusive;
    wc.buffer_bytes = g.cfg.buffer_bytes;
    wc.max_buffers = g.cfg.max_buffers;
    wc.wait_ms = c->wait_ms;
    wc.next = next_cb;
    wc.format = format_cb;
    wc.header = header_cb;
    gr_trace_writer *w = NULL;
    gr_status st = gr_writer_open(&wc, &w, err);
    if (st != GR_OK) {
        gr_fmt_free(&g.fmt);
        pthread_mutex_lock(&g.mu);
        g.active = 0;
        pthread_mutex_unlock(&g.mu);
        return st;
    }
    atomic_store(&g.writer, w);
    st = enable_everything(err);
    if (st != GR_OK) {
        /* leave nothing enabled, and a trace that says why it is empty */
        disable_everything();
        if (g.subscribed) cuptiUnsubscribe(g.sub);
        g.subscribed = 0;
        atomic_store(&g.writer, NULL);
        end_info e = {"not traced", err->msg, -1};
        gr_error ignored;
        gr_error_clear(&ignored);
        gr_writer_close(w, end_cb, &e, NULL, &ignored);
        gr_fmt_free(&g.fmt);
        pthread_mutex_lock(&g.mu);
        g.active = 0;
        pthread_mutex_unlock(&g.mu);
        return st;
    }
    return GR_OK;
}

gr_status gr_cupti_stop(const char *reason, int finalize, gr_cupti_result *res, gr_error *err) {
    if (res) memset(res, 0, sizeof(*res));
    pthread_mutex_lock(&g.mu);
    if (!g.active || !atomic_load(&g.writer)) {
        pthread_mutex_unlock(&g.mu);
        return GR_OK;
    }
    pthread_mutex_unlock(&g.mu);
    gr_status st = GR_OK;
    CUptiResult rc = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (rc != CUPTI_SUCCESS) st = gr_cupti_fail(rc, "cuptiActivityFlushAll", NULL, __FILE__, __LINE__, err);
    disable_everything();
    /* what was recorded between the flush and the disable */
    rc = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (rc != CUPTI_SUCCESS && st == GR_OK)
        st = gr_cupti_fail(rc, "cuptiActivityFlushAll", NULL, __FILE__, __LINE__, err);
    /* drops CUPTI counted after the last completed buffer (never reported otherwise, or reported
     * by the next trace in this process) */
    query_drops("stop");
    if (g.subscribed) {
        rc = cuptiUnsubscribe(g.sub);
        if (rc != CUPTI_SUCCESS && st == GR_OK) st = gr_cupti_fail(rc, "cuptiUnsubscribe", NULL, __FILE__, __LINE__, err);
        g.subscribed = 0;
    }
    gr_trace_writer *w = atomic_load(&g.writer);
    gr_writer_drain(w); /* every record parsed while CUPTI is still attached */
    uint64_t now = 0;
    end_info e = {reason, NULL, cuptiGetTimestamp(&now) == CUPTI_SUCCESS ? (int64_t)(now - g.t0) : -1};
    if (finalize) {
        rc = cuptiFinalize();
        if (rc != CUPTI_SUCCESS && st == GR_OK) st = gr_cupti_fail(rc, "cuptiFinalize", NULL, __FILE__, __LINE__, err);
    }
    atomic_store(&g.writer, NULL);
    gr_writer_stats ws;
    gr_status cst = gr_writer_close(w, end_cb, &e, &ws, err);
    if (st == GR_OK) st = cst;
    gr_fmt_free(&g.fmt);
    if (res) {
        res->records = ws.records;
        res->dropped = (uint64_t)atomic_load(&g.dropped);
        res->buffers = ws.buffers;
        res->waits = ws.waits;
        res->refused = ws.refused;
        res->bytes = ws.bytes;
        res->lines = ws.lines;
        res->callback_errors = (uint64_t)atomic_load(&g.cb_errors);
        snprintf(res->path, sizeof(res->path), "%s", g.path);
    }
    pthread_mutex_lock(&g.mu);
    g.active = 0;
    pthread_mutex_unlock(&g.mu);
    return st;
}

uint64_t gr_cupti_now(void) {
    uint64_t t = 0;
    if (cuptiGetTimestamp(&t) != CUPTI_SUCCESS) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        t = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
    }
    return t;
}

int64_t gr_cupti_rel(uint64_t ts) {
    return (int64_t)(ts - g.t0);
}

void gr_cupti_tag_push(uint64_t tag) {
    if (tls.ntag < TAG_STACK) tls.tags[tls.ntag] = tag;
    tls.ntag++;
    if (g.cfg.tags && atomic_load(&g.writer) &&
        cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, tag) != CUPTI_SUCCESS)
        atomic_fetch_add(&g.cb_errors, 1);
}

void gr_cupti_tag_pop(void) {
    if (tls.ntag > 0) tls.ntag--;
    uint64_t last = 0;
    if (g.cfg.tags && atomic_load(&g.writer) &&
        cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last) != CUPTI_SUCCESS)
        atomic_fetch_add(&g.cb_errors, 1);
}

void gr_cupti_line(const char *json, size_t len) {
    gr_trace_writer *w = atomic_load(&g.writer);
    if (w) gr_writer_line(w, json, len);
}

gr_status gr_cupti_add_listener(gr_cupti_listener fn, void *user, gr_error *err) {
    pthread_mutex_lock(&g.mu);
    int n = atomic_load(&g.nlisteners);
    if (n >= MAX_LISTENERS) {
        pthread_mutex_unlock(&g.mu);
        return gr_error_set(err, GR_ERR_INTERNAL, NULL, "too many CUPTI listeners (at most %d)", MAX_LISTENERS);
    }
    g.listeners[n] = (listener){fn, user};
    atomic_store(&g.nlisteners, n + 1);
    pthread_mutex_unlock(&g.mu);
    return GR_OK;
}

int gr_cupti_remove_listener(gr_cupti_listener fn, void *user) {
    pthread_mutex_lock(&g.mu);
    int n = atomic_load(&g.nlisteners), found = 0;
    for (int i = 0; i < n; i++) {
        if (g.listeners[i].fn != fn || g.listeners[i].user != user) continue;
        /* shrink first so a concurrent callback never reads past the live entries */
        atomic_store(&g.nlisteners, n - 1);
        for (int k = i; k < n - 1; k++) g.listeners[k] = g.listeners[k + 1];
        found = 1;
        break;
    }
    pthread_mutex_unlock(&g.mu);
    return found;
}

gr_status gr_cupti_watch_api(int driver, uint32_t cbid, gr_error *err) {
    if (!g.subscribed)
        return gr_error_set(err, GR_ERR_INTERNAL, NULL, "gr_cupti_watch_api: no CUPTI trace is running");
    GR_CUPTI(cuptiEnableCallback(1, g.sub, driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid), err);
    return GR_OK;
}

int gr_cupti_current_api(gr_cupti_api_call *out) {
    if (tls.depth <= 0) return 0;
    memset(out, 0, sizeof(*out));
    out->driver = tls.f[0].driver;
    out->cbid = tls.f[0].cbid;
    out->enter = 1;
    out->name = tls.f[0].name;
    out->corr = tls.f[0].corr;
    out->depth = tls.depth;
    return 1;
}

/* ---- callbacks only (capture checking, #6; appended) ----
 * The same subscription and on_callback (API stack, listeners), without a trace file or any
 * activity record: every runtime and driver API reaches the listeners, NVTX calls (when asked)
 * reach one NVTX listener. g.active is held so that gr_cupti_start refuses meanwhile. */

static gr_cupti_nvtx_listener cb_nvtx_fn;
static void *cb_nvtx_user;

static void CUPTIAPI on_callback_only(void *ud, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void *data) {
    if (dom == CUPTI_CB_DOMAIN_NVTX) {
        gr_cupti_nvtx_listener fn = cb_nvtx_fn;
        if (fn && data) fn(cb_nvtx_user, (uint32_t)cbid, data);
        return;
    }
    on_callback(ud, dom, cbid, data);
}

gr_status gr_cupti_callbacks_start(gr_cupti_nvtx_listener nvtx_fn, void *nvtx_user, gr_error *err) {
    pthread_mutex_lock(&g.mu);
    if (g.active) {
        pthread_mutex_unlock(&g.mu);
        return gr_error_set(err, GR_ERR_INTERNAL, NULL,
                            "a CUPTI session is already running in this process (%s): capture checking "
                            "cannot start beside it",
                            g.path[0] ? g.path : "?");
    }
    g.active = 1;
    snprintf(g.path, sizeof(g.path), "capture checking");
    pthread_mutex_unlock(&g.mu);
    cb_nvtx_fn = nvtx_fn;
    cb_nvtx_user = nvtx_user;
    CUpti_SubscriberParams params;
    memset(&params, 0, sizeof(params));
    char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 8] = "";
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "graphrun capture check";
    params.oldSubscriberName = old;
    params.oldSubscriberSize = sizeof(old);
    gr_status st = GR_OK;
    CUptiResult rc = cuptiSubscribe_v2(&g.sub, (CUpti_CallbackFunc)on_callback_only, NULL, &params);
    if (rc != CUPTI_SUCCESS) {
        char detail[160] = "";
        if (old[0]) snprintf(detail, sizeof(detail), "the attached client is \"%s\"", old);
        st = gr_cupti_fail(rc, "cuptiSubscribe_v2", detail, __FILE__, __LINE__, err);
    } else {
        g.subscribed = 1;
        rc = cuptiEnableDomain(1, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API);
        if (rc == CUPTI_SUCCESS) rc = cuptiEnableDomain(1, g.sub, CUPTI_CB_DOMAIN_DRIVER_API);
        if (rc != CUPTI_SUCCESS) st = gr_cupti_fail(rc, "cuptiEnableDomain", NULL, __FILE__, __LINE__, err);
        /* NVTX is optional: without it findings name no ranges */
        if (st == GR_OK && nvtx_fn) cuptiEnableDomain(1, g.sub, CUPTI_CB_DOMAIN_NVTX);
    }
    if (st != GR_OK) {
        if (g.subscribed) {
            cuptiEnableDomain(0, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API);
            cuptiEnableDomain(0, g.sub, CUPTI_CB_DOMAIN_DRIVER_API);
            cuptiUnsubscribe(g.sub);
            g.subscribed = 0;
        }
        cb_nvtx_fn = NULL;
        pthread_mutex_lock(&g.mu);
        g.active = 0;
        pthread_mutex_unlock(&g.mu);
    }
    return st;
}

gr_status gr_cupti_callbacks_stop(int finalize, gr_error *err) {
    pthread_mutex_lock(&g.mu);
    int mine = g.active && !atomic_load(&g.writer) && g.subscribed;
    pthread_mutex_unlock(&g.mu);
    if (!mine) return GR_OK;
    gr_status st = GR_OK;
    cuptiEnableDomain(0, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API);
    cuptiEnableDomain(0, g.sub, CUPTI_CB_DOMAIN_DRIVER_API);
    cuptiEnableDomain(0, g.sub, CUPTI_CB_DOMAIN_NVTX);
    CUptiResult rc = cuptiUnsubscribe(g.sub);
    if (rc != CUPTI_SUCCESS) st = gr_cupti_fail(rc, "cuptiUnsubscribe", NULL, __FILE__, __LINE__, err);
    g.subscribed = 0;
    cb_nvtx_fn = NULL;
    if (finalize) {
        rc = cuptiFinalize();
        if (rc != CUPTI_SUCCESS && st == GR_OK) st = gr_cupti_fail(rc, "cuptiFinalize", NULL, __FILE__, __LINE__, err);
    }
    pthread_mutex_lock(&g.mu);
    g.active = 0;
    g.path[0] = '\0';
    pthread_mutex_unlock(&g.mu);
    return st;
}
