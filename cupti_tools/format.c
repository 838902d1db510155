/* CUPTI record formatting for the trace writer. Times are written as ns since the trace's t0 so
 * lines stay short; a record CUPTI could not time (start and end 0) is kept with "inc":1. */
#include "cupti_tools/format.h"

#include <cupti_callbacks.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_tools/trace.h"

void gr_fmt_init(gr_fmt *f, uint64_t t0, gr_api_name_fn api_name) {
    memset(f, 0, sizeof(*f));
    f->t0 = t0;
    f->api_name = api_name ? api_name : gr_fmt_cupti_api_name;
    gr_u64map_init(&f->by_hash);
}

void gr_fmt_free(gr_fmt *f) {
    for (size_t i = 0; i < f->nstrs; i++) free(f->strs[i]);
    free(f->strs);
    free(f->api_ids[0]);
    free(f->api_ids[1]);
    gr_u64map_free(&f->by_hash);
    memset(f, 0, sizeof(*f));
}

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

int32_t gr_fmt_intern(gr_fmt *f, const char *name, gr_sbuf *out) {
    if (!name) name = "";
    uint64_t h = fnv1a(name);
    for (int probe = 0; probe < 64; probe++, h = h * 31 + 7) {
        int64_t id;
        if (gr_u64map_get(&f->by_hash, h, &id)) {
            if (!strcmp(f->strs[id - 1], name)) return (int32_t)id;
            continue; /* a different name with the same hash: probe on */
        }
        if (f->nstrs == f->cap) {
            size_t cap = f->cap ? f->cap * 2 : 256;
            char **s = realloc(f->strs, cap * sizeof(char *));
            if (!s) return 0;
            f->strs = s;
            f->cap = cap;
        }
        char *copy = strdup(name);
        if (!copy) return 0;
        id = (int64_t)f->nstrs + 1;
        if (!gr_u64map_put(&f->by_hash, h, id)) {
            free(copy);
            return 0;
        }
        f->strs[f->nstrs++] = copy;
        gr_sb_raw(out, "{\"t\":\"name\",\"id\":", 17);
        gr_sb_i64(out, id);
        gr_sb_raw(out, ",\"s\":", 5);
        gr_sb_jstr(out, name);
        gr_sb_raw(out, "}\n", 2);
        return (int32_t)id;
    }
    return 0;
}

const char *gr_fmt_cupti_api_name(int driver, uint32_t cbid) {
    static char buf[2][4096][72];
    static unsigned char have[2][4096];
    if (cbid >= 4096) return NULL;
    int d = driver ? 1 : 0;
    if (!have[d][cbid]) {
        const char *name = NULL;
        if (cuptiGetCallbackName(d ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) !=
                CUPTI_SUCCESS ||
            !name)
            return NULL;
        gr_api_strip_version(name, buf[d][cbid], sizeof(buf[d][cbid]));
        have[d][cbid] = 1;
    }
    return buf[d][cbid];
}

static int32_t api_name_id(gr_fmt *f, int driver, uint32_t cbid, gr_sbuf *out) {
    int d = driver ? 1 : 0;
    if (cbid < 65536) {
        if (cbid >= f->api_n[d]) {
            size_t n = (size_t)cbid + 256;
            int32_t *p = realloc(f->api_ids[d], n * sizeof(int32_t));
            if (!p) return 0;
            memset(p + f->api_n[d], 0, (n - f->api_n[d]) * sizeof(int32_t));
            f->api_ids[d] = p;
            f->api_n[d] = n;
        }
        if (f->api_ids[d][cbid]) return f->api_ids[d][cbid];
    }
    const char *name = f->api_name(driver, cbid);
    char unknown[48];
    if (!name) {
        snprintf(unknown, sizeof(unknown), "%s_cbid_%u", driver ? "driver" : "runtime", cbid);
        name = unknown;
    }
    int32_t id = gr_fmt_intern(f, name, out);
    if (cbid < 65536) f->api_ids[d][cbid] = id;
    return id;
}

const char *gr_fmt_overhead_kind(int kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "driver_compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "cupti_buffer_flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "cupti_instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "cupti_resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "runtime_triggered_module_loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "lazy_function_loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "command_buffer_full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "activity_buffer_request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "uvm_activity_init";
    default: return "unknown";
    }
}

const char *gr_fmt_copy_kind(int kind) {
    switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "unknown";
    }
}

static void kv_time(gr_fmt *f, gr_sbuf *b, const char *key, uint64_t ts) {
    gr_sb_kv_i64(b, key, (int64_t)(ts - f->t0));
}

/* "s" and "e", or "inc":1 with zeros when CUPTI has no timestamps for the record */
static void times(gr_fmt *f, gr_sbuf *b, uint64_t s, uint64_t e) {
    if (s == 0 && e == 0) {
        gr_sb_raw(b, ",\"s\":0,\"e\":0,\"inc\":1", 20);
        return;
    }
    kv_time(f, b, "s", s);
    kv_time(f, b, "e", e);
}

static void kv_dim3(gr_sbuf *b, const char *key, int32_t x, int32_t y, int32_t z) {
    gr_sb_key(b, key);
    gr_sb_raw(b, "[", 1);
    gr_sb_i64(b, x);
    gr_sb_raw(b, ",", 1);
    gr_sb_i64(b, y);
    gr_sb_raw(b, ",", 1);
    gr_sb_i64(b, z);
    gr_sb_raw(b, "]", 1);
}

static void graph_ids(gr_sbuf *b, uint32_t gid, uint64_t nid) {
    if (gid) gr_sb_kv_u64(b, "gid", gid);
    if (nid) gr_sb_kv_u64(b, "nid", nid);
}

int gr_fmt_record(gr_fmt *f, const CUpti_Activity *rec, gr_sbuf *b) {
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        int32_t id = gr_fmt_intern(f, k->name ? k->name : "(unnamed kernel)", b);
        gr_sb_raw(b, "{\"t\":\"k\"", 8);
        gr_sb_kv_i64(b, "n", id);
        times(f, b, k->start, k->end);
        gr_sb_kv_u64(b, "dev", k->deviceId);
        gr_sb_kv_u64(b, "ctx", k->contextId);
        gr_sb_kv_u64(b, "str", k->streamId);
        gr_sb_kv_u64(b, "corr", k->correlationId);
        kv_dim3(b, "g", k->gridX, k->gridY, k->gridZ);
        kv_dim3(b, "b", k->blockX, k->blockY, k->blockZ);
        gr_sb_kv_u64(b, "reg", k->registersPerThread);
        gr_sb_kv_i64(b, "smem", (int64_t)k->staticSharedMemory + k->dynamicSharedMemory);
        graph_ids(b, k->graphId, k->graphNodeId);
        if (k->queued != CUPTI_TIMESTAMP_UNKNOWN && k->queued) kv_time(f, b, "q", k->queued);
        if (k->submitted != CUPTI_TIMESTAMP_UNKNOWN && k->submitted) kv_time(f, b, "sub", k->submitted);
        gr_sb_raw(b, "}\n", 2);
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
        gr_sb_raw(b, "{\"t\":\"cpy\"", 10);
        gr_sb_kv_str(b, "kind", gr_fmt_copy_kind(m->copyKind));
        gr_sb_kv_u64(b, "bytes", m->bytes);
        times(f, b, m->start, m->end);
        gr_sb_kv_u64(b, "dev", m->deviceId);
        gr_sb_kv_u64(b, "ctx", m->contextId);
        gr_sb_kv_u64(b, "str", m->streamId);
        gr_sb_kv_u64(b, "corr", m->correlationId);
        graph_ids(b, m->graphId, m->graphNodeId);
        gr_sb_raw(b, "}\n", 2);
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
        gr_sb_raw(b, "{\"t\":\"set\"", 10);
        gr_sb_kv_u64(b, "bytes", m->bytes);
        gr_sb_kv_u64(b, "val", m->value);
        times(f, b, m->start, m->end);
        gr_sb_kv_u64(b, "dev", m->deviceId);
        gr_sb_kv_u64(b, "ctx", m->contextId);
        gr_sb_kv_u64(b, "str", m->streamId);
        gr_sb_kv_u64(b, "corr", m->correlationId);
        graph_ids(b, m->graphId, m->graphNodeId);
        gr_sb_raw(b, "}\n", 2);
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)rec;
        int driver = rec->kind == CUPTI_ACTIVITY_KIND_DRIVER;
        int32_t id = api_name_id(f, driver, a->cbid, b);
        gr_sb_raw(b, "{\"t\":\"api\"", 10);
        gr_sb_kv_str(b, "d", driver ? "drv" : "rt");
        gr_sb_kv_u64(b, "cb", a->cbid);
        gr_sb_kv_i64(b, "n", id);
        kv_time(f, b, "s", a->start);
        kv_time(f, b, "e", a->end);
        gr_sb_kv_u64(b, "tid", a->threadId);
        gr_sb_kv_u64(b, "corr", a->correlationId);
        gr_sb_kv_u64(b, "ret", a->returnValue);
        gr_sb_raw(b, "}\n", 2);
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *x = (const CUpti_ActivityExternalCorrelation *)rec;
        gr_sb_raw(b, "{\"t\":\"ext\"", 10);
        gr_sb_kv_u64(b, "corr", x->correlationId);
        gr_sb_kv_u64(b, "id", x->externalId);
        gr_sb_kv_u64(b, "kind", (uint64_t)x->externalKind);
        gr_sb_raw(b, "}\n", 2);
        return 1;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
        const CUpti_ActivityOverhead3 *o = (const CUpti_ActivityOverhead3 *)rec;
        gr_sb_raw(b, "{\"t\":\"ovh\"", 10);
        gr_sb_kv_str(b, "kind", gr_fmt_overhead_kind((int)o->overheadKind));
        kv_time(f, b, "s", o->start);
        kv_time(f, b, "e", o->end);
        gr_sb_raw(b, "}\n", 2);
        return 1;
    }
    default: return 0;
    }
}

void gr_fmt_nvtx(gr_sbuf *b, int push, int64_t s, uint32_t tid, const char *dom, int has_id,
                 uint64_t id, const char *msg, int depth) {
    gr_sb_raw(b, push ? "{\"t\":\"nvtx_push\"" : "{\"t\":\"nvtx_pop\"", push ? 16 : 15);
    gr_sb_kv_i64(b, "s", s);
    gr_sb_kv_u64(b, "tid", tid);
    if (dom && dom[0]) gr_sb_kv_str(b, "dom", dom);
    if (has_id) gr_sb_kv_u64(b, "id", id);
    if (push) {
        char cut[GR_FMT_NVTX_MSG_MAX + 1];
        if (msg && strlen(msg) > GR_FMT_NVTX_MSG_MAX) { /* a trace line stays small */
            snprintf(cut, sizeof(cut), "%s", msg);
            msg = cut;
        }
        gr_sb_kv_str(b, "msg", msg ? msg : "");
        if (depth >= 0) gr_sb_kv_i64(b, "depth", depth);
    }
    gr_sb_raw(b, "}", 1);
}
