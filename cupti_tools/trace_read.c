/* Trace reader: JSONL lines into the in-memory model of trace.h. Strict: every line must be a
 * known-good record, a damaged or truncated line is an error with file:line:column, and the end
 * record's count of activity records must match what was read; lines are bounded (1 MiB).
 * Records with impossible times are excluded and counted. Unknown record kinds are skipped
 * (newer writers may add some). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "cupti_tools/capevents.h"
#include "cupti_tools/jsonl.h"
#include "cupti_tools/trace.h"
#include "cupti_tools/u64map.h"

#define MAX_NAME_ID (1 << 26)

/* An "nvtx_push" or "nvtx_pop" record as read; finish() pairs them into ranges. */
typedef struct nv_ev {
    int64_t s;
    uint64_t id; /* start/end ranges: the NVTX range id */
    uint32_t tid;
    int32_t name, dom; /* string indexes; dom -1: the default domain */
    int line;
    uint8_t push, has_id;
} nv_ev;

typedef struct rd {
    gr_trace *t;
    const char *label;
    int line;
    int seen_header, seen_end;
    gr_error *err;
    gr_u64map names; /* name id in the file -> string index */
    gr_u64map interned; /* hash of an NVTX message or domain -> its string index */
    GR_VEC(nv_ev) nv;
    gr_jline *jl;
} rd;

static gr_status bad(rd *r, int col, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static gr_status bad(rd *r, int col, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return gr_error_at(r->err, GR_ERR_INPUT, r->label, r->line, col, "%s", msg);
}

/* A problem with a whole record or the whole file: "file:line: message" (no column). */
static gr_status at_line(rd *r, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static gr_status at_line(rd *r, int line, const char *fmt, ...) {
    char msg[1024], place[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(place, sizeof(place), "%s:%d", r->label, line);
    int first = r->err->count == 0;
    gr_status st = gr_error_set(r->err, GR_ERR_INPUT, place, "%s", msg);
    if (first) {
        snprintf(r->err->file, sizeof(r->err->file), "%s", r->label);
        r->err->line = line;
    }
    return st;
}

static gr_status nomem(rd *r) {
    gr_error_set(r->err, GR_ERR_NOMEM, r->label, "out of host memory reading the trace (line %d)", r->line);
    return GR_ERR_NOMEM;
}

static int grow(void **v, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return 1;
    size_t c = *cap ? *cap * 2 : 1024;
    void *p = realloc(*v, c * elem);
    if (!p) return 0;
    *v = p;
    *cap = c;
    return 1;
}

#define PUSH(r, vec, out)                                                                          \
    do {                                                                                           \
        if (!grow((void **)&(vec).v, &(vec).cap, (vec).n, sizeof(*(vec).v))) return nomem(r);      \
        (out) = &(vec).v[(vec).n++];                                                               \
        memset((out), 0, sizeof(*(out)));                                                          \
    } while (0)

static int32_t add_str(rd *r, const char *s) {
    gr_trace *t = r->t;
    if (!grow((void **)&t->str.v, &t->str.cap, t->str.n, sizeof(char *))) return -2;
    char *c = strdup(s ? s : "");
    if (!c) return -2;
    t->str.v[t->str.n] = c;
    return (int32_t)t->str.n++;
}

/* NVTX messages and domains repeat (a range per step): one string each, found by hash (a
 * colliding hash just stores the string again). */
static int32_t intern(rd *r, const char *s) {
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    int64_t idx;
    int known = gr_u64map_get(&r->interned, h, &idx);
    if (known && idx < (int64_t)r->t->str.n && !strcmp(gr_trace_str(r->t, (int32_t)idx), s))
        return (int32_t)idx;
    int32_t n = add_str(r, s);
    if (n >= 0 && !known && !gr_u64map_put(&r->interned, h, n)) return -2;
    return n;
}

static const char *type_name(gr_jv_type t) {
    switch (t) {
    case GR_JV_NULL: return "null";
    case GR_JV_BOOL: return "a boolean";
    case GR_JV_NUM: return "a number";
    case GR_JV_STR: return "a string";
    case GR_JV_ARR: return "an array";
    }
    return "?";
}

/* Field lookup with type checks. `what` explains the field in the message. Returns NULL and
 * records the error when it is required and missing or of the wrong type; *fail is set. */
static const gr_jfield *field(rd *r, const char *rec, const char *key, gr_jv_type type, int required,
                              const char *what, int *fail) {
    const gr_jfield *f = gr_jline_get(r->jl, key);
    if (!f || f->type == GR_JV_NULL) {
        if (required) {
            bad(r, 1, "\"%s\" record has no \"%s\" (%s)", rec, key, what);
            *fail = 1;
        }
        return NULL;
    }
    if (f->type != type) {
        bad(r, f->col, "\"%s\" record: \"%s\" must be %s (%s), got %s", rec, key, type_name(type), what,
            type_name(f->type));
        *fail = 1;
        return NULL;
    }
    return f;
}

static int get_i64(rd *r, const char *rec, const char *key, int required, const char *what, int64_t *out,
                   int *fail) {
    const gr_jfield *f = field(r, rec, key, GR_JV_NUM, required, what, fail);
    if (!f) return 0;
    if (!f->is_int) {
        bad(r, f->col, "\"%s\" record: \"%s\" must be a whole number (%s)", rec, key, what);
        *fail = 1;
        return 0;
    }
    *out = f->i;
    return 1;
}

static int get_u64(rd *r, const char *rec, const char *key, int required, const char *what, uint64_t *out,
                   int *fail) {
    const gr_jfield *f = field(r, rec, key, GR_JV_NUM, required, what, fail);
    if (!f) return 0;
    if (f->is_int && f->i >= 0) {
        *out = (uint64_t)f->i;
        return 1;
    }
    /* ids above INT64_MAX are written as plain digits too */
    if (!f->is_int && f->d >= 9.2e18 && f->d < 1.8446744073709552e19) {
        *out = (uint64_t)f->d;
        return 1;
    }
    bad(r, f->col, "\"%s\" record: \"%s\" must be a whole number >= 0 (%s)", rec, key, what);
    *fail = 1;
    return 0;
}

static int get_u32(rd *r, const char *rec, const char *key, int required, const char *what, uint32_t *out,
                   int *fail) {
    uint64_t v = 0;
    if (!get_u64(r, rec, key, required, what, &v, fail)) return 0;
    if (v > UINT32_MAX) {
        bad(r, gr_jline_get(r->jl, key)->col, "\"%s\" record: \"%s\" is out of range (%s)", rec, key, what);
        *fail = 1;
        return 0;
    }
    *out = (uint32_t)v;
    return 1;
}

static int get_dbl(rd *r, const char *rec, const char *key, const char *what, double *out, int *fail) {
    const gr_jfield *f = field(r, rec, key, GR_JV_NUM, 0, what, fail);
    if (!f) return 0;
    *out = f->d;
    return 1;
}

static int get_str(rd *r, const char *rec, const char *key, int required, const char *what, char *out,
                   size_t size, int *fail) {
    const gr_jfield *f = field(r, rec, key, GR_JV_STR, required, what, fail);
    if (!f) return 0;
    snprintf(out, size, "%s", f->s);
    return 1;
}

static int32_t get_str_idx(rd *r, const char *rec, const char *key, int required, const char *what,
                           int *fail) {
    const gr_jfield *f = field(r, rec, key, GR_JV_STR, required, what, fail);
    if (!f) return -1;
    int32_t idx = add_str(r, f->s);
    if (idx == -2) {
        nomem(r);
        *fail = 1;
        return -1;
    }
    return idx;
}

static void get_dim3(rd *r, const char *rec, const char *key, int32_t out[3], int *fail) {
    out[0] = out[1] = out[2] = 0;
    const gr_jfield *f = field(r, rec, key, GR_JV_ARR, 0, "[x, y, z]", fail);
    if (!f) return;
    if (f->n != 3) {
        bad(r, f->col, "\"%s\" record: \"%s\" must have 3 numbers [x, y, z], got %d", rec, key, f->n);
        *fail = 1;
        return;
    }
    for (int i = 0; i < 3; i++) {
        if (!(f->a[i] >= 0 && f->a[i] <= INT32_MAX) || f->a[i] != (double)(int64_t)f->a[i]) {
            bad(r, f->col, "\"%s\" record: \"%s\" must hold whole numbers from 0 to %d", rec, key, INT32_MAX);
            *fail = 1;
            return;
        }
        out[i] = (int32_t)f->a[i];
    }
}

static gr_status read_header(rd *r) {
    gr_trace *t = r->t;
    int fail = 0;
    int64_t v = 0;
    if (!get_i64(r, "header", "schema_version", 1, "format version", &v, &fail)) return r->err->code;
    if (v < 1 || v > GR_TRACE_SCHEMA_VERSION) {
        if (v > GR_TRACE_SCHEMA_VERSION)
            return bad(r, gr_jline_get(r->jl, "schema_version")->col,
                       "schema_version %" PRId64 " is newer than this reader understands (%d): use a newer "
                       "cupti-launchstat to read this trace", v, GR_TRACE_SCHEMA_VERSION);
        return bad(r, gr_jline_get(r->jl, "schema_version")->col, "schema_version %" PRId64 " is not valid (expected %d)",
                   v, GR_TRACE_SCHEMA_VERSION);
    }
    t->schema_version = (int)v;
    get_i64(r, "header", "t0", 1, "CUPTI timestamp in ns that every record's times count from", &t->t0, &fail);
    get_str(r, "header", "tool", 0, "writer", t->tool, sizeof(t->tool), &fail);
    get_str(r, "header", "tool_version", 0, "writer version", t->tool_version, sizeof(t->tool_version), &fail);
    get_str(r, "header", "mode", 0, "injection or in-process", t->mode, sizeof(t->mode), &fail);
    get_str(r, "header", "command", 0, "traced command line", t->command, sizeof(t->command), &fail);
    get_str(r, "header", "device", 0, "device name", t->device, sizeof(t->device), &fail);
    get_str(r, "header", "cc", 0, "compute capability", t->cc, sizeof(t->cc), &fail);
    get_str(r, "header", "apis", 0, "API records enabled", t->apis, sizeof(t->apis), &fail);
    get_str(r, "header", "kinds", 0, "activity kinds enabled", t->kinds, sizeof(t->kinds), &fail);
    get_i64(r, "header", "start_unix_ns", 0, "wall clock at start", &t->start_unix_ns, &fail);
    get_i64(r, "header", "steps", 0, "steps the traced program ran", &t->steps, &fail);
    if (get_i64(r, "header", "pid", 0, "process id", &v, &fail)) t->pid = (int)v;
    if (get_i64(r, "header", "driver_version", 0, "CUDA driver version", &v, &fail)) t->driver_version = (int)v;
    if (get_i64(r, "header", "runtime_version", 0, "CUDA runtime version", &v, &fail)) t->runtime_version = (int)v;
    if (get_i64(r, "header", "cupti_version", 0, "CUPTI API version", &v, &fail)) t->cupti_version = (int)v;
    const gr_jfield *lat = field(r, "header", "latency", GR_JV_BOOL, 0, "queued/submitted timestamps collected", &fail);
    if (lat) t->latency = lat->d != 0;
    const gr_jfield *nv =
        field(r, "header", "nvtx", GR_JV_BOOL, 0, "the program's NVTX ranges recorded", &fail);
    if (nv) t->nvtx_traced = nv->d != 0;
    if (t->steps < 0) return bad(r, gr_jline_get(r->jl, "steps")->col, "header: \"steps\" must be >= 0");
    return fail ? r->err->code : GR_OK;
}

static gr_status read_gpu(rd *r, const char *rec, gr_gpu_kind kind) {
    gr_tr_gpu *g;
    PUSH(r, r->t->gpu, g);
    int fail = 0;
    g->kind = (uint8_t)kind;
    g->line = r->line;
    g->name = -1;
    get_i64(r, rec, "s", 1, "start, ns since t0", &g->s, &fail);
    get_i64(r, rec, "e", 1, "end, ns since t0", &g->e, &fail);
    get_u32(r, rec, "corr", 1, "correlation id of the launching API call", &g->corr, &fail);
    get_u32(r, rec, "str", 1, "stream id", &g->stream, &fail);
    get_u32(r, rec, "ctx", 0, "context id", &g->ctx, &fail);
    get_u32(r, rec, "dev", 0, "device id", &g->dev, &fail);
    get_u32(r, rec, "gid", 0, "graph id", &g->graph, &fail);
    get_u64(r, rec, "nid", 0, "graph node id", &g->node, &fail);
    int64_t inc = 0;
    if (get_i64(r, rec, "inc", 0, "1 when CUPTI collected no timestamps", &inc, &fail)) g->incomplete = inc != 0;
    if (kind == GR_GPU_KERNEL) {
        int64_t n = 0;
        if (get_i64(r, rec, "n", 1, "name id, defined by a \"name\" record", &n, &fail)) {
            if (n < 1 || n > MAX_NAME_ID) {
                bad(r, gr_jline_get(r->jl, "n")->col, "\"k\" record: name id %" PRId64 " out of range", n);
                fail = 1;
            }
            g->name = (int32_t)n; /* file id; resolved to a string index at the end */
        }
        get_i64(r, rec, "q", 0, "queued, ns since t0", &g->q, &fail);
        get_i64(r, rec, "sub", 0, "submitted, ns since t0", &g->sub, &fail);
        get_dim3(r, rec, "g", g->grid, &fail);
        get_dim3(r, rec, "b", g->block, &fail);
    } else {
        get_u64(r, rec, "bytes", 1, "bytes", &g->bytes, &fail);
        if (kind == GR_GPU_MEMCPY) g->name = get_str_idx(r, rec, "kind", 0, "copy kind, e.g. HtoD", &fail);
    }
    r->t->activity_records++;
    return fail ? r->err->code : GR_OK;
}

static gr_status read_api(rd *r) {
    gr_tr_api *a;
    PUSH(r, r->t->api, a);
    int fail = 0;
    a->line = r->line;
    char d[8] = "";
    get_str(r, "api", "d", 1, "\"rt\" for the runtime API, \"drv\" for the driver API", d, sizeof(d), &fail);
    if (!fail && strcmp(d, "rt") != 0 && strcmp(d, "drv") != 0) {
        bad(r, gr_jline_get(r->jl, "d")->col, "\"api\" record: \"d\" must be \"rt\" or \"drv\", got \"%s\"", d);
        fail = 1;
    }
    a->driver = !strcmp(d, "drv");
    int64_t v = 0;
    if (get_i64(r, "api", "cb", 1, "CUPTI callback id", &v, &fail)) a->cbid = (int32_t)v;
    if (get_i64(r, "api", "n", 1, "name id, defined by a \"name\" record", &v, &fail)) {
        if (v < 1 || v > MAX_NAME_ID) {
            bad(r, gr_jline_get(r->jl, "n")->col, "\"api\" record: name id %" PRId64 " out of range", v);
            fail = 1;
        }
        a->name = (int32_t)v;
    }
    get_i64(r, "api", "s", 1, "entry, ns since t0", &a->s, &fail);
    get_i64(r, "api", "e", 1, "exit, ns since t0", &a->e, &fail);
    get_u32(r, "api", "tid", 0, "thread id", &a->tid, &fail);
    get_u32(r, "api", "corr", 1, "correlation id", &a->corr, &fail);
    if (get_i64(r, "api", "ret", 0, "return value", &v, &fail)) a->ret = (int32_t)v;
    r->t->activity_records++;
    return fail ? r->err->code : GR_OK;
}

/* "nvtx_push" / "nvtx_pop": one NVTX call of the traced program (cupti_tools/README.md). */
static gr_status read_nvtx_event(rd *r, int push) {
    const char *rec = push ? "nvtx_push" : "nvtx_pop";
    nv_ev *e;
    PUSH(r, r->nv, e);
    int fail = 0;
    e->line = r->line;
    e->push = (uint8_t)push;
    e->name = e->dom = -1;
    get_i64(r, rec, "s", 1,
            push ? "when the range was pushed, ns since t0" : "when it was popped, ns since t0",
            &e->s, &fail);
    get_u32(r, rec, "tid", 1, "thread id", &e->tid, &fail);
    e->has_id =
        (uint8_t)get_u64(r, rec, "id", 0, "NVTX range id of nvtxRangeStart/End", &e->id, &fail);
    const gr_jfield *d =
        field(r, rec, "dom", GR_JV_STR, 0, "NVTX domain; absent: the default domain", &fail);
    if (d && d->s[0] && (e->dom = intern(r, d->s)) < 0) return nomem(r);
    if (push) {
        const gr_jfield *m = field(r, rec, "msg", GR_JV_STR, 0, "the range's message", &fail);
        if (m && (e->name = intern(r, m->s)) < 0) return nomem(r);
        int64_t depth = 0;
        if (get_i64(r, rec, "depth", 0, "ranges open on the thread in the domain", &depth, &fail) &&
            depth < 0)
            return bad(r, gr_jline_get(r->jl, "depth")->col,
                       "\"nvtx_push\" record: depth must be >= 0");
    }
    return fail ? r->err->code : GR_OK;
}

static gr_status read_line(rd *r, char *line, size_t len) {
    gr_trace *t = r->t;
    int col = 0;
    char msg[256];
    if (!gr_jline_parse(line, len, r->jl, &col, msg, sizeof(msg))) return bad(r, col, "invalid record: %s", msg);
    int fail = 0;
    const gr_jfield *tf = gr_jline_get(r->jl, "t");
    if (!tf || tf->type != GR_JV_STR)
        return bad(r, tf ? tf->col : 1, "record without a string \"t\" (its kind)%s",
                   r->seen_header ? "" : ": not a cupti-launchstat trace");
    const char *kind = tf->s;
    if (!r->seen_header) {
        if (strcmp(kind, "header") != 0)
            return bad(r, tf->col, "not a cupti-launchstat trace: the first record must be the header "
                                   "({\"t\":\"header\",...}), found \"%s\"", kind);
        r->seen_header = 1;
        return read_header(r);
    }
    if (r->seen_end) return bad(r, tf->col, "\"%s\" record after the end record (were two traces concatenated?)", kind);
    if (!strcmp(kind, "header")) return bad(r, tf->col, "a second header record (were two traces concatenated?)");
    if (!strcmp(kind, "k")) return read_gpu(r, "k", GR_GPU_KERNEL);
    if (!strcmp(kind, "api")) return read_api(r);
    if (!strcmp(kind, "cpy")) return read_gpu(r, "cpy", GR_GPU_MEMCPY);
    if (!strcmp(kind, "set")) return read_gpu(r, "set", GR_GPU_MEMSET);
    if (!strcmp(kind, "name")) {
        int64_t id = 0;
        const gr_jfield *s = field(r, "name", "s", GR_JV_STR, 1, "the name", &fail);
        if (!get_i64(r, "name", "id", 1, "name id that records refer to with \"n\"", &id, &fail) || fail)
            return r->err->code;
        if (id < 1 || id > MAX_NAME_ID) return bad(r, gr_jline_get(r->jl, "id")->col, "name id %" PRId64 " out of range", id);
        int32_t idx = add_str(r, s->s);
        if (idx < 0) return nomem(r);
        if (!gr_u64map_put_new(&r->names, (uint64_t)id, idx)) {
            if (r->names.oom) return nomem(r);
            return bad(r, gr_jline_get(r->jl, "id")->col, "name id %" PRId64 " is defined twice", id);
        }
        return GR_OK;
    }
    if (!strcmp(kind, "ext")) {
        gr_tr_ext *x;
        PUSH(r, t->ext, x);
        int64_t k = 0;
        get_u32(r, "ext", "corr", 1, "correlation id of the API call", &x->corr, &fail);
        get_u64(r, "ext", "id", 1, "external correlation id (graphrun: op tag)", &x->id, &fail);
        if (get_i64(r, "ext", "kind", 0, "CUPTI external correlation kind", &k, &fail)) x->kind = (int)k;
        t->activity_records++;
        return fail ? r->err->code : GR_OK;
    }
    if (!strcmp(kind, "ovh")) {
        gr_tr_ovh *o;
        PUSH(r, t->ovh, o);
        o->line = r->line;
        o->kind = get_str_idx(r, "ovh", "kind", 1, "what the overhead was", &fail);
        get_i64(r, "ovh", "s", 1, "start, ns since t0", &o->s, &fail);
        get_i64(r, "ovh", "e", 1, "end, ns since t0", &o->e, &fail);
        t->activity_records++;
        return fail ? r->err->code : GR_OK;
    }
    if (!strcmp(kind, "node")) {
        gr_tr_node *n;
        PUSH(r, t->node, n);
        int64_t v = 0;
        n->line = r->line;
        n->api = -1;
        get_u64(r, "node", "nid", 1, "graph node id", &n->node, &fail);
        get_u64(r, "node", "orig", 0, "node it was cloned from", &n->orig, &fail);
        get_u32(r, "node", "gid", 0, "graph id", &n->graph, &fail);
        get_u32(r, "node", "corr", 0, "correlation id of the creating API call", &n->corr, &fail);
        get_u64(r, "node", "tag", 0, "op tag", &n->tag, &fail);
        if (get_i64(r, "node", "ty", 0, "CUgraphNodeType", &v, &fail)) n->type = (int)v;
        n->api = get_str_idx(r, "node", "api", 0, "creating API", &fail);
        return fail ? r->err->code : GR_OK;
    }
    if (!strcmp(kind, "op")) {
        gr_tr_op *o;
        PUSH(r, t->op, o);
        int64_t v = 0;
        get_u64(r, "op", "tag", 1, "op tag", &o->tag, &fail);
        if (get_i64(r, "op", "index", 0, "op index in the plan", &v, &fail)) o->index = (int)v;
        o->name = get_str_idx(r, "op", "name", 1, "op name", &fail);
        o->kernel = get_str_idx(r, "op", "kernel", 0, "kernel", &fail);
        o->variant = get_str_idx(r, "op", "variant", 0, "variant", &fail);
        o->in = get_str_idx(r, "op", "in", 0, "buffers the op reads", &fail);
        o->out = get_str_idx(r, "op", "out", 0, "buffers the op writes", &fail);
        for (int k = 0; k < 2 && !fail; k++) { /* "3,5": buffer indices, comma separated */
            int32_t idx = k ? o->out : o->in;
            if (idx < 0) continue;
            const char *l = gr_trace_str(t, idx);
            int ok = 1;
            for (size_t c = 0; l[c] && ok; c++)
                ok = (l[c] >= '0' && l[c] <= '9') || (l[c] == ',' && c > 0 && l[c + 1] && l[c + 1] != ',');
            if (!ok)
                return bad(r, gr_jline_get(r->jl, k ? "out" : "in")->col,
                           "\"op\" record: \"%s\" must list buffer indices as \"3,5\", not \"%s\"",
                           k ? "out" : "in", l);
        }
        o->has_flow = o->in >= 0 && o->out >= 0 && get_dbl(r, "op", "rd", "bytes the op reads", &o->rd, &fail) &&
                      get_dbl(r, "op", "wr", "bytes the op writes", &o->wr, &fail);
        o->launches = 1;
        if (get_i64(r, "op", "launches", 0, "kernels the op launches", &v, &fail)) o->launches = (int)v;
        if (!fail && o->has_flow && (o->rd < 0 || o->wr < 0))
            return bad(r, gr_jline_get(r->jl, o->rd < 0 ? "rd" : "wr")->col, "\"op\" record: bytes must be >= 0");
        return fail ? r->err->code : GR_OK;
    }
    if (!strcmp(kind, "buf")) {
        gr_tr_buf *b;
        PUSH(r, t->buf, b);
        int64_t v = 0;
        b->variant = get_str_idx(r, "buf", "variant", 1, "variant", &fail);
        b->name = get_str_idx(r, "buf", "name", 0, "buffer name", &fail);
        if (get_i64(r, "buf", "index", 1, "buffer index in the plan", &v, &fail)) {
            if (v < 0 || v > INT32_MAX)
                return bad(r, gr_jline_get(r->jl, "index")->col, "\"buf\" record: index %lld is out of range",
                           (long long)v);
            b->index = (int)v;
        }
        if (get_i64(r, "buf", "bytes", 1, "buffer size", &v, &fail)) {
            if (v < 0) return bad(r, gr_jline_get(r->jl, "bytes")->col, "\"buf\" record: bytes must be >= 0");
            b->bytes = (double)v;
        }
        if (get_i64(r, "buf", "output", 1, "1: an output of the step", &v, &fail)) b->output = v != 0;
        return fail ? r->err->code : GR_OK;
    }
    if (!strcmp(kind, "region")) {
        gr_tr_region *g;
        PUSH(r, t->region, g);
        g->line = r->line;
        g->name = get_str_idx(r, "region", "name", 1, "region name", &fail);
        g->variant = get_str_idx(r, "region", "variant", 0, "variant", &fail);
        g->mode = get_str_idx(r, "region", "mode", 0, "eager or graph", &fail);
        get_i64(r, "region", "s", 1, "host start, ns since t0", &g->s, &fail);
        get_i64(r, "region", "e", 1, "host end, ns since t0", &g->e, &fail);
        get_i64(r, "region", "steps", 0, "steps run inside the region", &g->steps, &fail);
        get_dbl(r, "region", "traced_step_us", "traced step time (CUDA events)", &g->traced_step_us, &fail);
        get_dbl(r, "region", "untraced_step_us", "untraced step time", &g->untraced_step_us, &fail);
        if (!fail && g->e < g->s) return bad(r, gr_jline_get(r->jl, "e")->col, "\"region\" record ends before it starts");
        if (!fail && g->steps < 0) return bad(r, gr_jline_get(r->jl, "steps")->col, "\"region\" record: steps must be >= 0");
        if (!fail && g->traced_step_us < 0)
            return bad(r, gr_jline_get(r->jl, "traced_step_us")->col, "\"region\" record: traced_step_us must be >= 0");
        if (!fail && g->untraced_step_us < 0)
            return bad(r, gr_jline_get(r->jl, "untraced_step_us")->col,
                       "\"region\" record: untraced_step_us must be >= 0");
        return fail ? r->err->code : GR_OK;
    }
    if (!strcmp(kind, "ctx")) {
        gr_tr_ctx *c;
        PUSH(r, t->ctx, c);
        int64_t v = 0;
        get_u32(r, "ctx", "ctx", 1, "context id", &c->ctx, &fail);
        get_u32(r, "ctx", "dev", 0, "device id", &c->dev, &fail);
        c->name = get_str_idx(r, "ctx", "name", 0, "device name", &fail);
        get_str(r, "ctx", "cc", 0, "compute capability", c->cc, sizeof(c->cc), &fail);
        if (get_i64(r, "ctx", "sms", 0, "SM count", &v, &fail)) c->sms = (int)v;
        if (!fail && !t->device[0] && c->name >= 0) {
            snprintf(t->device, sizeof(t->device), "%s", gr_trace_str(t, c->name));
            snprintf(t->cc, sizeof(t->cc), "%s", c->cc);
        }
        return fail ? r->err->code : GR_OK;
    }
    if (!strcmp(kind, "nvtx_push")) return read_nvtx_event(r, 1);
    if (!strcmp(kind, "nvtx_pop")) return read_nvtx_event(r, 0);
    if (!strcmp(kind, "end")) {
        r->seen_end = 1;
        t->has_end = 1;
        get_u64(r, "end", "records", 1, "activity records written", &t->end_records, &fail);
        get_u64(r, "end", "dropped", 1, "records CUPTI dropped", &t->dropped, &fail);
        get_u64(r, "end", "buffers", 0, "activity buffers allocated", &t->buffers, &fail);
        get_u64(r, "end", "waits", 0, "buffer requests that waited for the writer", &t->buffer_waits, &fail);
        get_u64(r, "end", "write_errors", 0, "failed writes", &t->write_errors, &fail);
        get_i64(r, "end", "e", 0, "end of tracing, ns since t0", &t->end_ts, &fail);
        get_str(r, "end", "reason", 0, "why tracing ended", t->end_reason, sizeof(t->end_reason), &fail);
        get_str(r, "end", "error", 0, "why nothing was traced", t->end_error, sizeof(t->end_error), &fail);
        t->has_api_counts = gr_jline_get(r->jl, "api_records") != NULL;
        get_u64(r, "end", "api_records", 0, "API records written", &t->end_api_records, &fail);
        get_u64(r, "end", "launch_api_records", 0, "API records of launch calls",
                &t->end_launch_api_records, &fail);
        get_u64(r, "end", "launch_calls_seen", 0, "top-level launch calls the callbacks saw",
                &t->end_launch_calls_seen, &fail);
        get_u64(r, "end", "unwanted_api_records", 0, "API records the filter should have dropped",
                &t->end_unwanted_api_records, &fail);
        get_u64(r, "end", "ext_records", 0, "external correlation records written",
                &t->end_ext_records, &fail);
        get_u64(r, "end", "dropped_before_start", 0,
                "dropped records reported before tracing began", &t->dropped_before_start, &fail);
        get_str(r, "end", "dropped_detail", 0, "where CUPTI reported dropped records",
                t->dropped_detail, sizeof(t->dropped_detail), &fail);
        t->has_nvtx_calls = get_u64(r, "end", "nvtx_calls", 0, "NVTX range calls the collector saw",
                                    &t->end_nvtx_calls, &fail);
        return fail ? r->err->code : GR_OK;
    }
    t->unknown_records++;
    return GR_OK;
}

/* 0: the record's times are usable; else it is counted in the reason's tally. */
static int bad_times(gr_trace *t, int64_t s, int64_t e, int line) {
    gr_tr_excluded *x = NULL;
    if (e < s) x = &t->excl_backwards;
    else if (s < 0 || e > t->span_end) x = &t->excl_outside;
    if (!x) return 0;
    if (x->n++ == 0 || line < x->first_line) x->first_line = line;
    return 1;
}

/* Records with impossible times would make busy time negative or idle over 100%: they are
 * kept out of the arrays (the end record's count was checked on the lines as read). Regions
 * too; a kernel's queued/submitted stamps out of order are dropped from it alone. */
static void exclude_bad_times(gr_trace *t) {
    t->span_end = t->has_end && t->end_ts > 0 ? t->end_ts : GR_TRACE_MAX_SPAN_NS;
    size_t k = 0;
    for (size_t i = 0; i < t->gpu.n; i++) {
        const gr_tr_gpu *g = &t->gpu.v[i];
        if (!g->incomplete && bad_times(t, g->s, g->e, g->line)) continue;
        t->gpu.v[k++] = *g;
    }
    t->gpu.n = k;
    k = 0;
    for (size_t i = 0; i < t->api.n; i++) {
        const gr_tr_api *a = &t->api.v[i];
        if (bad_times(t, a->s, a->e, a->line)) continue;
        t->api.v[k++] = *a;
    }
    t->api.n = k;
    k = 0;
    for (size_t i = 0; i < t->ovh.n; i++) {
        const gr_tr_ovh *o = &t->ovh.v[i];
        if (bad_times(t, o->s, o->e, o->line)) continue;
        t->ovh.v[k++] = *o;
    }
    t->ovh.n = k;
    k = 0;
    for (size_t i = 0; i < t->region.n; i++) {
        const gr_tr_region *g = &t->region.v[i];
        if (bad_times(t, g->s, g->e, g->line)) continue;
        t->region.v[k++] = *g;
    }
    t->region.n = k;
    /* queued <= submitted <= start, or the kernel's latency is unknown (not negative). A kernel
     * with only one of the two stamps (CUPTI leaves the other unknown, as for kernels of a
     * graph launch on the H200) has no latency to check: the analysis uses pairs only. */
    for (size_t i = 0; i < t->gpu.n; i++) {
        gr_tr_gpu *g = &t->gpu.v[i];
        if (!g->q || !g->sub) continue;
        if (g->q > 0 && g->q <= g->sub && g->sub <= g->s) continue;
        g->q = g->sub = 0;
        if (t->excl_latency.n++ == 0) t->excl_latency.first_line = g->line;
    }
}

static void note_excluded(gr_tr_excluded *x, int line) {
    if (x->n++ == 0 || line < x->first_line) x->first_line = line;
}

static int cmp_nv_ev(const void *x, const void *y) {
    const nv_ev *a = x, *b = y;
    if (a->has_id != b->has_id) return a->has_id < b->has_id ? -1 : 1;
    if (a->has_id) {
        if (a->id != b->id) return a->id < b->id ? -1 : 1;
    } else {
        if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
        if (a->dom != b->dom) return a->dom < b->dom ? -1 : 1;
    }
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

static int cmp_nvtx_range(const void *x, const void *y) {
    const gr_tr_nvtx *a = x, *b = y;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    return (a->line > b->line) - (a->line < b->line);
}

/* The latest time the trace holds: where a range never popped ends. */
static int64_t trace_end(const gr_trace *t, const rd *r) {
    if (t->has_end && t->end_ts > 0) return t->end_ts;
    int64_t m = 0;
    for (size_t i = 0; i < t->gpu.n; i++)
        if (t->gpu.v[i].e > m) m = t->gpu.v[i].e;
    for (size_t i = 0; i < t->api.n; i++)
        if (t->api.v[i].e > m) m = t->api.v[i].e;
    for (size_t i = 0; i < r->nv.n; i++)
        if (r->nv.v[i].s > m) m = r->nv.v[i].s;
    return m;
}

/* NVTX push and pop records into ranges. Push/pop: per thread and domain, in time order (the
 * file's order at equal times), each pop closes the latest open push; a pop with none open is
 * counted and ignored. Start/end: by range id. Pushes never closed stay open to the trace's end.
 * Events at impossible times are excluded first (their partner then counts as unmatched). */
static gr_status pair_nvtx(rd *r) {
    gr_trace *t = r->t;
    size_t n = 0;
    for (size_t i = 0; i < r->nv.n; i++) {
        const nv_ev *e = &r->nv.v[i];
        if (e->s < 0 || e->s > t->span_end) {
            note_excluded(&t->excl_outside, e->line);
            continue;
        }
        r->nv.v[n++] = *e;
    }
    r->nv.n = n;
    if (n == 0) return GR_OK;
    qsort(r->nv.v, n, sizeof(nv_ev), cmp_nv_ev);
    int64_t end = trace_end(t, r);
    int32_t *stack = malloc((n + 1) * sizeof(int32_t));
    if (!stack) return nomem(r);
    size_t depth = 0;
    for (size_t i = 0; i < n; i++) {
        const nv_ev *e = &r->nv.v[i];
        int group_start =
            i == 0 || e->has_id != r->nv.v[i - 1].has_id ||
            (e->has_id ? e->id != r->nv.v[i - 1].id
                       : e->tid != r->nv.v[i - 1].tid || e->dom != r->nv.v[i - 1].dom);
        if (group_start) depth = 0; /* what is still open in the last group stays open */
        if (!e->push) {
            if (depth == 0) {
                note_excluded(&t->nvtx_unmatched_pop, e->line);
                continue;
            }
            t->nvtx.v[stack[--depth]].e = e->s;
            t->nvtx.v[stack[depth]].open = 0;
            continue;
        }
        gr_tr_nvtx *x;
        if (!grow((void **)&t->nvtx.v, &t->nvtx.cap, t->nvtx.n, sizeof(gr_tr_nvtx))) {
            free(stack);
            return nomem(r);
        }
        x = &t->nvtx.v[t->nvtx.n];
        memset(x, 0, sizeof(*x));
        x->s = e->s;
        x->e = end > e->s ? end : e->s;
        x->open = 1;
        x->tid = e->tid;
        x->name = e->name;
        x->dom = e->dom;
        x->line = e->line;
        x->start_end = e->has_id;
        x->parent = !e->has_id && depth > 0 ? stack[depth - 1] : -1;
        x->depth = e->has_id ? 0 : (int)depth;
        /* a start/end range id names one range: a second start of it closes nothing */
        if (e->has_id) depth = 0;
        stack[depth++] = (int32_t)t->nvtx.n++;
    }
    free(stack);
    /* time order; a parent is found again by the line of its push (one push per line) */
    size_t nr = t->nvtx.n;
    int32_t *parent_line = malloc((nr + 1) * sizeof(int32_t));
    if (!parent_line) return nomem(r);
    for (size_t i = 0; i < nr; i++)
        parent_line[i] = t->nvtx.v[i].parent >= 0 ? t->nvtx.v[t->nvtx.v[i].parent].line : -1;
    for (size_t i = 0; i < nr; i++)
        t->nvtx.v[i].parent = parent_line[i];
    free(parent_line);
    gr_u64map pos;
    gr_u64map_init(&pos);
    qsort(t->nvtx.v, nr, sizeof(gr_tr_nvtx), cmp_nvtx_range);
    for (size_t i = 0; i < nr; i++)
        if (!gr_u64map_put(&pos, (uint64_t)(uint32_t)t->nvtx.v[i].line, (int64_t)i)) {
            gr_u64map_free(&pos);
            return nomem(r);
        }
    for (size_t i = 0; i < nr; i++) {
        gr_tr_nvtx *x = &t->nvtx.v[i];
        int64_t p = -1;
        if (x->parent >= 0 && !gr_u64map_get(&pos, (uint64_t)(uint32_t)x->parent, &p)) p = -1;
        x->parent = (int32_t)p;
        if (x->open) note_excluded(&t->nvtx_open, x->line);
    }
    gr_u64map_free(&pos);
    return GR_OK;
}

static gr_status finish(rd *r, int partial) {
    gr_trace *t = r->t;
    if (!r->seen_header)
        return gr_error_at(r->err, GR_ERR_INPUT, r->label, 0, 0,
                           "empty file: not a cupti-launchstat trace (no header record)");
    if (!t->has_end && !partial)
        return at_line(r, r->line,
                           "the trace has no end record (line %d is the last): it was cut off, or the "
                           "traced program was killed (SIGKILL) before the trace was flushed. "
                           "`report --partial` analyses what is there",
                           r->line);
    if (t->has_end && t->end_records != t->activity_records)
        return at_line(r, r->line,
                           "the end record counts %llu activity records but the file holds %zu: lines "
                           "were lost or added (the file was modified or cut)",
                           (unsigned long long)t->end_records, t->activity_records);
    /* name ids to string indexes */
    for (size_t i = 0; i < t->gpu.n; i++) {
        gr_tr_gpu *g = &t->gpu.v[i];
        if (g->kind != GR_GPU_KERNEL) continue;
        int64_t idx;
        if (!gr_u64map_get(&r->names, (uint64_t)g->name, &idx))
            return at_line(r, g->line,
                               "kernel record refers to name id %d, which no \"name\" record defines", g->name);
        g->name = (int32_t)idx;
    }
    for (size_t i = 0; i < t->api.n; i++) {
        gr_tr_api *a = &t->api.v[i];
        int64_t idx;
        if (!gr_u64map_get(&r->names, (uint64_t)a->name, &idx))
            return at_line(r, a->line,
                               "api record refers to name id %d, which no \"name\" record defines", a->name);
        a->name = (int32_t)idx;
        a->cat = (uint8_t)gr_api_category(gr_trace_str(t, a->name));
    }
    exclude_bad_times(t);
    return pair_nvtx(r);
}

static gr_status rd_init(rd *r, gr_trace **out, const char *label, gr_error *err) {
    memset(r, 0, sizeof(*r));
    *out = NULL;
    r->err = err;
    r->label = label;
    r->t = calloc(1, sizeof(gr_trace));
    r->jl = malloc(sizeof(gr_jline));
    gr_u64map_init(&r->names);
    gr_u64map_init(&r->interned);
    if (!r->t || !r->jl) {
        free(r->t);
        free(r->jl);
        r->t = NULL;
        r->jl = NULL;
        gr_error_set(err, GR_ERR_NOMEM, label, "out of host memory");
        return GR_ERR_NOMEM;
    }
    snprintf(r->t->path, sizeof(r->t->path), "%s", label);
    return GR_OK;
}

static gr_status rd_done(rd *r, gr_status st, gr_trace **out) {
    free(r->jl);
    gr_u64map_free(&r->names);
    gr_u64map_free(&r->interned);
    free(r->nv.v);
    if (st != GR_OK) {
        gr_trace_destroy(r->t);
        return st;
    }
    r->t->lines = r->line;
    *out = r->t;
    return GR_OK;
}

/* One physical line; `has_nl` is 0 for a last line without newline. */
static gr_status one_line(rd *r, char *line, size_t len, int has_nl, int partial) {
    if (r->line == INT_MAX)
        return gr_error_at(r->err, GR_ERR_INPUT, r->label, r->line, 0,
                           "more than %d lines: not a trace this reader can hold", INT_MAX);
    r->line++;
    while (len > 0 && (line[len - 1] == '\r')) len--;
    size_t k = 0;
    while (k < len && (line[k] == ' ' || line[k] == '\t')) k++;
    if (k == len) return GR_OK; /* blank */
    if (has_nl) return read_line(r, line, len);
    /* the last line has no newline: when it does not parse, the file ends inside it; say so
     * rather than what the parser tripped on */
    gr_error *real = r->err;
    gr_error *tmp = malloc(sizeof(*tmp));
    if (!tmp) return nomem(r);
    gr_error_clear(tmp);
    r->err = tmp;
    gr_trace *t = r->t;
    size_t snap[12] = {t->gpu.n,    t->api.n, t->ext.n, t->node.n,           t->op.n,
                       t->region.n, t->ovh.n, t->ctx.n, t->activity_records, t->str.n,
                       r->nv.n,     t->buf.n};
    int snap_end = r->seen_end;
    gr_status st = read_line(r, line, len);
    r->err = real;
    if (st == GR_OK) {
        free(tmp);
        return GR_OK;
    }
    if (st == GR_ERR_NOMEM) {
        *real = *tmp;
        free(tmp);
        return st;
    }
    free(tmp);
    /* forget whatever the cut line had added */
    t->gpu.n = snap[0], t->api.n = snap[1], t->ext.n = snap[2], t->node.n = snap[3], t->op.n = snap[4];
    t->region.n = snap[5], t->ovh.n = snap[6], t->ctx.n = snap[7], t->activity_records = snap[8];
    while (t->str.n > snap[9]) free(t->str.v[--t->str.n]);
    r->nv.n = snap[10];
    t->buf.n = snap[11];
    r->seen_end = snap_end;
    t->has_end = snap_end;
    if (partial && r->seen_header) {
        snprintf(r->t->notes, sizeof(r->t->notes), "the last line (%d) was cut off and skipped", r->line);
        return GR_OK;
    }
    return gr_error_at(real, GR_ERR_INPUT, r->label, r->line, (int)len + 1,
                       "truncated record: the file ends in the middle of this line (the trace was "
                       "cut off)%s", partial ? "" : "; `report --partial` analyses what is there");
}

/* A line over GR_JSONL_MAX_LINE: /dev/zero's output, a binary file, or a damaged trace. */
static gr_status too_long(rd *r) {
    r->line++;
    return gr_error_at(r->err, GR_ERR_INPUT, r->label, r->line, 1,
                       "line longer than %zu bytes (the limit of a trace line, cupti_tools/README.md): "
                       "not a cupti-launchstat trace, or a damaged one",
                       (size_t)GR_JSONL_MAX_LINE);
}

static gr_status nul_byte(rd *r, const char *line) {
    r->line++;
    return gr_error_at(r->err, GR_ERR_INPUT, r->label, r->line, (int)strlen(line) + 1,
                       "NUL byte in the line: the file is binary or damaged, not a trace");
}

gr_status gr_trace_load(const char *path, int partial, gr_trace **out, gr_error *err) {
    FILE *f = NULL;
    *out = NULL;
    gr_status st = gr_file_open(path, GR_FILE_TRACE, &f, NULL, err);
    if (st != GR_OK) return st;
    rd r;
    st = rd_init(&r, out, path, err);
    if (st != GR_OK) {
        fclose(f);
        return st;
    }
    gr_jl_reader lr;
    gr_jl_reader_init(&lr, f, GR_JSONL_MAX_LINE);
    while (st == GR_OK) {
        char *line = NULL;
        size_t n = 0;
        int has_nl = 0;
        gr_jl_next got = gr_jl_reader_next(&lr, &line, &n, &has_nl);
        if (got == GR_JL_EOF) break;
        if (got == GR_JL_TOO_LONG) st = too_long(&r);
        else if (got == GR_JL_NOMEM) st = nomem(&r);
        else if (got == GR_JL_IOERR)
            st = gr_error_set(err, GR_ERR_IO, path, "read error after line %d: %s", r.line, strerror(errno));
        else if (memchr(line, '\0', n)) st = nul_byte(&r, line);
        else st = one_line(&r, line, n, has_nl, partial);
    }
    gr_jl_reader_free(&lr);
    fclose(f);
    if (st == GR_OK) st = finish(&r, partial);
    return rd_done(&r, st, out);
}

gr_status gr_trace_load_mem(const char *text, size_t len, const char *label, int partial, gr_trace **out,
                            gr_error *err) {
    rd r;
    gr_status st = rd_init(&r, out, label, err);
    if (st != GR_OK) return st;
    char *buf = NULL;
    size_t cap = 0;
    size_t pos = 0;
    while (st == GR_OK && pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        if (n > GR_JSONL_MAX_LINE) {
            st = too_long(&r);
            break;
        }
        if (n + 1 > cap) {
            char *b = realloc(buf, n + 1);
            if (!b) {
                st = nomem(&r);
                break;
            }
            buf = b;
            cap = n + 1;
        }
        memcpy(buf, text + pos, n);
        buf[n] = '\0';
        if (memchr(buf, '\0', n)) {
            st = nul_byte(&r, buf);
            break;
        }
        st = one_line(&r, buf, n, nl != NULL, partial);
        pos += n + (nl ? 1 : 0);
    }
    free(buf);
    if (st == GR_OK) st = finish(&r, partial);
    return rd_done(&r, st, out);
}

void gr_trace_destroy(gr_trace *t) {
    if (!t) return;
    for (size_t i = 0; i < t->str.n; i++) free(t->str.v[i]);
    free(t->str.v);
    free(t->gpu.v);
    free(t->api.v);
    free(t->ext.v);
    free(t->node.v);
    free(t->op.v);
    free(t->buf.v);
    free(t->region.v);
    free(t->ovh.v);
    free(t->ctx.v);
    free(t->nvtx.v);
    free(t);
}

const char *gr_trace_str(const gr_trace *t, int32_t idx) {
    if (!t || idx < 0 || (size_t)idx >= t->str.n) return "";
    return t->str.v[idx];
}

typedef struct prof_call {
    int64_t s, e;
    int is_start;
} prof_call;

static int cmp_prof_call(const void *x, const void *y) {
    const prof_call *a = x, *b = y;
    return (a->s > b->s) - (a->s < b->s);
}

size_t gr_trace_profiler_ranges(const gr_trace *t, const size_t *calls, size_t n, gr_tr_range *out) {
    prof_call *c = malloc((n + 1) * sizeof(*c));
    if (!c) return 0;
    for (size_t k = 0; k < n; k++) {
        const gr_tr_api *x = &t->api.v[calls[k]];
        c[k].s = x->s;
        c[k].e = x->e;
        c[k].is_start = strstr(gr_trace_str(t, x->name), "Start") != NULL;
    }
    qsort(c, n, sizeof(*c), cmp_prof_call);
    size_t nr = 0;
    int open = 0;
    int64_t open_at = 0;
    for (size_t k = 0; k < n; k++) {
        if (c[k].is_start && !open) {
            open = 1;
            open_at = c[k].e;
        } else if (!c[k].is_start && open) {
            out[nr++] = (gr_tr_range){open_at, c[k].s, 0};
            open = 0;
        }
    }
    if (open) out[nr++] = (gr_tr_range){open_at, INT64_MAX, 1};
    free(c);
    return nr;
}

typedef struct api_key {
    uint32_t tid;
    uint8_t driver;
    int64_t s, e;
    int32_t idx;
} api_key;

/* per thread, by start; at equal starts the longer (outer) call first, runtime before driver */
static int cmp_api_key(const void *x, const void *y) {
    const api_key *a = x, *b = y;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    if (a->e != b->e) return a->e > b->e ? -1 : 1;
    return (a->driver > b->driver) - (a->driver < b->driver);
}

int gr_trace_api_outermost(const gr_trace *t, int32_t *outer) {
    size_t n = t->api.n;
    api_key *k = malloc((n + 1) * sizeof(api_key));
    int32_t *stack = malloc((n + 1) * sizeof(int32_t));
    if (!k || !stack) {
        free(k);
        free(stack);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const gr_tr_api *x = &t->api.v[i];
        outer[i] = -1;
        k[i] = (api_key){x->tid, x->driver, x->s, x->e, (int32_t)i};
    }
    qsort(k, n, sizeof(api_key), cmp_api_key);
    size_t depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && k[i].tid != k[i - 1].tid) depth = 0;
        while (depth > 0) {
            const api_key *top = &k[stack[depth - 1]];
            if (top->s <= k[i].s && k[i].e <= top->e) break;
            depth--;
        }
        if (depth > 0) outer[k[i].idx] = k[stack[0]].idx;
        stack[depth++] = (int32_t)i;
    }
    free(k);
    free(stack);
    return 0;
}

/* The capture-check recording (capevents.h), read whole through the bounded opener. */
gr_status gr_capev_load(const char *path, gr_capev_list *out, gr_error *err) {
    memset(out, 0, sizeof(*out));
    if (access(path, R_OK) != 0)
        return gr_error_set(err, GR_ERR_IO, path, "cannot read the recording: %s", strerror(errno));
    char *text = NULL;
    size_t len = 0;
    gr_status st = gr_file_read_all(path, GR_FILE_TRACE, &text, &len, err);
    if (st != GR_OK) return st;
    st = gr_capev_load_mem(text, len, path, out, err);
    free(text);
    return st;
}
