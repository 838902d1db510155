/* Resolution of one workload variant into a plan: param arithmetic, repeat expansion, name
 * templates, buffers and their inits, ops against the kernel registry's argument schemas,
 * streams (fork/join), dataflow (read-before-write, intermediates) and the kernel checks that
 * fill launch dims and byte accounting. Every problem found is reported, with its JSON path. */
#include <jansson.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/expect.h"
#include "core/expr.h"
#include "core/fileio.h"
#include "core/module.h"
#include "core/workload.h"

#define MAX_LOOP_DEPTH 8
#define MAX_LOOP_ITERATIONS 1000000

typedef struct loopvar {
    char name[64];
    long long value;
} loopvar;

typedef struct name_index {
    int *slots; /* buffer index + 1, 0 = empty */
    size_t cap;
} name_index;

typedef struct rctx {
    const gr_workload *wl;
    gr_plan *plan;
    gr_kernel_lookup lookup;
    gr_kernel_names names;
    gr_error *err;
    loopvar vars[MAX_LOOP_DEPTH];
    int nvars;
    int visiting[GR_MAX_PARAMS];
    char hint[1200];
    int cap_bufs, cap_ops;
    long long iterations;
    name_index idx;
    int stream_open[GR_MAX_STREAMS];
    int stream_fork_op[GR_MAX_STREAMS];
    int fatal; /* a limit was hit: stop expanding */
    struct io_list *io; /* the op input/output list an io repeat block appends to */
    int chain[GR_MAX_PARAMS]; /* params being evaluated, in order: a cycle's message names them */
    int nchain;
    /* Cascade control: a reference to a buffer whose declaration failed is not reported again as
     * "unknown buffer"; when a failed declaration's name is not known, such references are
     * counted into one line instead. */
    char (*failed_bufs)[GR_NAME_MAX];
    int nfailed, cap_failed;
    int bufs_incomplete;
    int unchecked_refs;
    char first_unchecked[GR_PATH_MAX + 160];
    name_index op_names; /* op index + 1 by name: explicit names must be unique */
    char unknown_kernel[64], unknown_hint[128]; /* the last unknown kernel name and its hint */
} rctx;

/* ---------- names ---------- */

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int idx_grow(rctx *c) {
    size_t ncap = c->idx.cap ? c->idx.cap * 2 : 1024;
    int *slots = calloc(ncap, sizeof(int));
    if (!slots) return -1;
    for (int i = 0; i < c->plan->nbufs; i++) {
        size_t h = (size_t)(fnv1a(c->plan->bufs[i].name) & (ncap - 1));
        while (slots[h]) h = (h + 1) & (ncap - 1);
        slots[h] = i + 1;
    }
    free(c->idx.slots);
    c->idx.slots = slots;
    c->idx.cap = ncap;
    return 0;
}

static int find_buffer(const rctx *c, const char *name) {
    if (!c->idx.cap) return -1;
    size_t h = (size_t)(fnv1a(name) & (c->idx.cap - 1));
    while (c->idx.slots[h]) {
        int b = c->idx.slots[h] - 1;
        if (!strcmp(c->plan->bufs[b].name, name)) return b;
        h = (h + 1) & (c->idx.cap - 1);
    }
    return -1;
}

/* Edit distance, for "did you mean". */
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++) d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            int m = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < m) m = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < m) m = d[i - 1][j - 1] + cost;
            d[i][j] = m;
        }
    return d[la][lb];
}

static void suggest_buffer(const rctx *c, const char *name, char *out, size_t size) {
    int best = -1, bestd = 4;
    for (int i = 0; i < c->plan->nbufs; i++) {
        int d = edit_distance(name, c->plan->bufs[i].name);
        if (d < bestd) {
            bestd = d;
            best = i;
        }
    }
    if (best >= 0) snprintf(out, size, " (did you mean \"%s\"?)", c->plan->bufs[best].name);
    else out[0] = '\0';
}

/* ---------- params and expressions ---------- */

static int lookup_name(void *vctx, const char *name, double *out, gr_error *err) {
    rctx *c = vctx;
    for (int i = c->nvars - 1; i >= 0; i--)
        if (!strcmp(c->vars[i].name, name)) {
            *out = (double)c->vars[i].value;
            return 1;
        }
    for (int i = 0; i < c->wl->nparams; i++) {
        const gr_param *p = &c->wl->params[i];
        if (strcmp(p->name, name) != 0) continue;
        if (!p->is_str) {
            *out = p->num;
            return 1;
        }
        if (c->visiting[i]) {
            char chain[600];
            size_t o = 0;
            int k = 0;
            while (k < c->nchain && c->chain[k] != i) k++;
            for (int j = k; j < c->nchain && o < sizeof(chain); j++)
                o += (size_t)snprintf(chain + o, sizeof(chain) - o, "params.%s -> ",
                                      c->wl->params[c->chain[j]].name);
            if (o < sizeof(chain)) snprintf(chain + o, sizeof(chain) - o, "params.%s", p->name);
            char path[96];
            snprintf(path, sizeof(path), "params.%s", p->name);
            gr_error_set(err, GR_ERR_INPUT, path,
                         "refers back to itself: %s; give one of them a number", chain);
            return -1;
        }
        c->visiting[i] = 1;
        if (c->nchain < GR_MAX_PARAMS) c->chain[c->nchain++] = i;
        char path[96];
        snprintf(path, sizeof(path), "params.%s", p->name);
        gr_status st = gr_expr_eval(p->str, lookup_name, c, path, c->hint, out, err);
        c->visiting[i] = 0;
        c->nchain--;
        return st == GR_OK ? 1 : -1;
    }
    return 0;
}

static gr_status expand_name(rctx *c, const char *tmpl, const char *path, char *out, size_t size);

static gr_status eval_number(rctx *c, const json_t *v, const char *path, double *out) {
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return GR_OK;
    }
    if (json_is_string(v)) {
        const char *text = json_string_value(v);
        /* "{t}" templates first, so per-index params work: "min(card_{t}, cap)" */
        char expanded[1100];
        if (strchr(text, '{')) {
            if (expand_name(c, text, path, expanded, sizeof(expanded)) != GR_OK) return GR_ERR_INPUT;
            text = expanded;
        }
        return gr_expr_eval(text, lookup_name, c, path, c->hint, out, c->err);
    }
    return gr_error_set(c->err, GR_ERR_INPUT, path,
                        "expected a number or an expression string like \"4*d\"");
}

static gr_status eval_int(rctx *c, const json_t *v, const char *path, long long lo, long long hi,
                          long long *out) {
    double d;
    gr_status st = eval_number(c, v, path, &d);
    if (st != GR_OK) return st;
    if (d != floor(d))
        return gr_error_set(c->err, GR_ERR_INPUT, path, "expected a whole number, got %g", d);
    if (d < (double)lo || d > (double)hi)
        return gr_error_set(c->err, GR_ERR_INPUT, path, "%g is out of range [%lld, %lld]", d, lo, hi);
    *out = (long long)d;
    return GR_OK;
}

/* A string field: a literal, or "$param" for a param's value. */
static gr_status eval_string(rctx *c, const json_t *v, const char *path, char *out, size_t size) {
    if (!json_is_string(v)) return gr_error_set(c->err, GR_ERR_INPUT, path, "expected a string");
    const char *s = json_string_value(v);
    if (s[0] == '$') {
        /* "$a" where params.a is "$b" follows the chain; a cycle is named, not taken for a value */
        int seen[GR_MAX_PARAMS], nseen = 0;
        const char *ref = s;
        for (;;) {
            const gr_param *p = gr_workload_param(c->wl, ref + 1);
            if (!p) {
                if (nseen == 0)
                    return gr_error_set(c->err, GR_ERR_INPUT, path, "\"%s\": unknown param \"%s\" %s",
                                        s, s + 1, c->hint);
                char ppath[96];
                snprintf(ppath, sizeof(ppath), "params.%s", c->wl->params[seen[nseen - 1]].name);
                return gr_error_set(c->err, GR_ERR_INPUT, ppath, "\"%s\": unknown param \"%s\" %s",
                                    ref, ref + 1, c->hint);
            }
            int idx = (int)(p - c->wl->params);
            int k = 0;
            while (k < nseen && seen[k] != idx) k++;
            if (k < nseen) {
                char chain[600];
                size_t o = 0;
                for (int j = k; j < nseen && o < sizeof(chain); j++)
                    o += (size_t)snprintf(chain + o, sizeof(chain) - o, "params.%s -> ",
                                          c->wl->params[seen[j]].name);
                if (o < sizeof(chain)) snprintf(chain + o, sizeof(chain) - o, "params.%s", p->name);
                char ppath[96];
                snprintf(ppath, sizeof(ppath), "params.%s", p->name);
                return gr_error_set(c->err, GR_ERR_INPUT, ppath,
                                    "refers back to itself: %s; give one of them a value", chain);
            }
            if (nseen < GR_MAX_PARAMS) seen[nseen++] = idx;
            if (p->is_str && p->str[0] == '$') {
                ref = p->str;
                continue;
            }
            if (p->is_str) snprintf(out, size, "%s", p->str);
            else snprintf(out, size, "%.17g", p->num);
            return GR_OK;
        }
    }
    if (strlen(s) >= size)
        return gr_error_set(c->err, GR_ERR_INPUT, path, "longer than %zu characters", size - 1);
    snprintf(out, size, "%s", s);
    return GR_OK;
}

/* Expand "{expr}" templates in a name: "w_up.{i}" -> "w_up.3". */
static gr_status expand_name(rctx *c, const char *tmpl_full, const char *path, char *out, size_t size) {
    size_t o = 0;
    char tmpl[80]; /* for messages: a hostile name can be megabytes */
    snprintf(tmpl, sizeof(tmpl), "%.64s%s", tmpl_full, strlen(tmpl_full) > 64 ? "..." : "");
    for (const char *p = tmpl_full; *p;) {
        if (*p == '{') {
            const char *close = strchr(p, '}');
            if (!close)
                return gr_error_set(c->err, GR_ERR_INPUT, path, "name \"%s\": '{' without '}'", tmpl);
            char expr[256];
            size_t len = (size_t)(close - p - 1);
            if (len == 0 || len >= sizeof(expr))
                return gr_error_set(c->err, GR_ERR_INPUT, path, "name \"%s\": empty or long {}", tmpl);
            memcpy(expr, p + 1, len);
            expr[len] = '\0';
            double v;
            if (gr_expr_eval(expr, lookup_name, c, path, c->hint, &v, c->err) != GR_OK)
                return GR_ERR_INPUT;
            if (v != floor(v) || fabs(v) > 1e15)
                return gr_error_set(c->err, GR_ERR_INPUT, path,
                                    "name \"%s\": {%s} = %g is not a whole number", tmpl, expr, v);
            int n = snprintf(out + o, size - o, "%lld", (long long)v);
            if (n < 0 || (size_t)n >= size - o) goto too_long;
            o += (size_t)n;
            p = close + 1;
        } else {
            if (o + 1 >= size) goto too_long;
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    if (o == 0) return gr_error_set(c->err, GR_ERR_INPUT, path, "empty name");
    return GR_OK;
too_long:
    return gr_error_set(c->err, GR_ERR_INPUT, path, "name \"%s\" expands past %zu characters", tmpl,
                        size - 1);
}

static void path_with_vars(const rctx *c, char *out, size_t size, const char *base) {
    size_t o = (size_t)snprintf(out, size, "%s", base);
    if (c->nvars == 0 || o >= size) return;
    o += (size_t)snprintf(out + o, size - o, "{");
    for (int i = 0; i < c->nvars && o < size; i++)
        o += (size_t)snprintf(out + o, size - o, "%s%s=%lld", i ? "," : "", c->vars[i].name,
                              c->vars[i].value);
    if (o < size) snprintf(out + o, size - o, "}");
}

/* A repeat block: {"repeat": count, "var": "i", KEY: [...]}. Calls body for each iteration. */
typedef void (*body_fn)(rctx *c, json_t *list, const char *path);

/* A message without its "{i=3,j=0}" repeat indices, to compare one iteration's problems with the
 * previous one's. */
static void strip_indices(const char *in, char *out, size_t size) {
    size_t o = 0;
    for (const char *p = in; *p && o + 1 < size;) {
        if (*p == '{') {
            const char *q = p + 1;
            int ok = 0;
            for (;;) {
                const char *id = q;
                while (*q == '_' || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
                       (q > id && *q >= '0' && *q <= '9'))
                    q++;
                if (q == id || *q != '=') break;
                q++;
                if (*q == '-') q++;
                const char *d = q;
                while (*q >= '0' && *q <= '9') q++;
                if (q == d) break;
                if (*q == '}') {
                    ok = 1;
                    break;
                }
                if (*q != ',') break;
                q++;
            }
            if (ok) {
                p = q + 1;
                continue;
            }
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
}

static int run_repeat(rctx *c, json_t *obj, const char *path, const char *key, body_fn body) {
    json_error_t jerr;
    json_t *count = NULL, *list = NULL;
    const char *var = "i";
    const char *doc = NULL;
    char fmt[64];
    snprintf(fmt, sizeof(fmt), "{s:o, s?:s, s:o, s?:s}");
    const gr_json_key keys[] = {{"repeat", GR_JT_NUMBER | GR_JT_STRING, 1, "a count (a whole number or an expression)"},
                                {"var", GR_JT_STRING, 0, NULL},
                                {key, GR_JT_ARRAY, 1, NULL},
                                {"doc", GR_JT_STRING, 0, NULL},
                                {NULL, 0, 0, NULL}};
    char what[64];
    snprintf(what, sizeof(what), "a repeat block of %s", key);
    if (!json_object_get(obj, key)) {
        gr_error_set(c->err, GR_ERR_INPUT, path,
                     "missing \"%s\" (a repeat block is {\"repeat\": COUNT, \"var\": \"i\", \"%s\": "
                     "[...]})",
                     key, key);
        return -1;
    }
    if (gr_json_check_keys(obj, path, keys, what, c->err)) return -1;
    if (json_unpack_ex(obj, &jerr, JSON_STRICT, fmt, "repeat", &count, "var", &var, key, &list,
                       "doc", &doc) != 0) {
        gr_error_set(c->err, GR_ERR_INPUT, path,
                     "%s (a repeat block is {\"repeat\": COUNT, \"var\": \"i\", \"%s\": [...]})",
                     jerr.text, key);
        return -1;
    }
    if (!json_is_array(list)) {
        gr_error_set(c->err, GR_ERR_INPUT, path, "\"%s\" must be an array", key);
        return -1;
    }
    if (c->nvars >= MAX_LOOP_DEPTH) {
        gr_error_set(c->err, GR_ERR_INPUT, path, "repeat blocks nested deeper than %d", MAX_LOOP_DEPTH);
        return -1;
    }
    char rpath[GR_PATH_MAX];
    snprintf(rpath, sizeof(rpath), "%s.repeat", path);
    long long n;
    if (eval_int(c, count, rpath, 0, GR_MAX_OPS, &n) != GR_OK) return -1;
    if (strlen(var) == 0 || strlen(var) >= 64) {
        gr_error_set(c->err, GR_ERR_INPUT, path, "\"var\" must be a short identifier");
        return -1;
    }
    loopvar *lv = &c->vars[c->nvars++];
    snprintf(lv->name, sizeof(lv->name), "%s", var);
    char lpath[GR_PATH_MAX];
    snprintf(lpath, sizeof(lpath), "%s.%s", path, key);
    /* An iteration whose problems are the previous one's but for the indices is not shown again
     * (a bad dtype in a repeat block is one problem, not one per iteration). */
    char *prev = NULL;
    int collapsed = 0;
    gr_error *e = c->err;
    for (long long i = 0; i < n && !c->fatal; i++) {
        if (++c->iterations > MAX_LOOP_ITERATIONS) {
            gr_error_set(c->err, GR_ERR_INPUT, path,
                         "repeat blocks expand to more than %d iterations", MAX_LOOP_ITERATIONS);
            c->fatal = 1;
            break;
        }
        lv->value = i;
        size_t before = strlen(e->msg);
        int hidden = e->hidden;
        body(c, list, lpath);
        size_t after = strlen(e->msg);
        if (e->hidden != hidden || hidden || after <= before) continue;
        const char *added = e->msg + before + (before ? 1 : 0);
        char *norm = malloc(GR_ERROR_MSG_MAX);
        if (!norm) continue;
        strip_indices(added, norm, GR_ERROR_MSG_MAX);
        if (prev && !strcmp(prev, norm)) {
            e->msg[before] = '\0';
            collapsed++;
            free(norm);
        } else {
            free(prev);
            prev = norm;
        }
    }
    free(prev);
    c->nvars--;
    if (collapsed) { /* with the outer indices, so that an outer repeat can collapse this too */
        char where[GR_PATH_MAX + 64];
        path_with_vars(c, where, sizeof(where), path);
        gr_error_set(c->err, GR_ERR_INPUT, where, "(the same problem in %d more iteration%s of this "
                     "repeat block)", collapsed, collapsed == 1 ? "" : "s");
    }
    return 0;
}

/* ---------- buffers ---------- */

typedef struct init_kind_desc {
    const char *name;
    gr_init_kind kind;
    const char *keys; /* allowed numeric keys besides kind/seed, in order a, b */
    const char *key_a, *key_b;
    double da, db;
} init_kind_desc;

static const init_kind_desc init_kinds[] = {
    {"normal", GR_INIT_NORMAL, "mean, std, seed", "mean", "std", 0.0, 1.0},
    {"uniform", GR_INIT_UNIFORM, "low, high, seed", "low", "high", -1.0, 1.0},
    {"zeros", GR_INIT_ZEROS, "", NULL, NULL, 0, 0},
    {"ones", GR_INIT_ONES, "", NULL, NULL, 0, 0},
    {"const", GR_INIT_CONST, "value", "value", NULL, 0, 0},
    {"iota", GR_INIT_IOTA, "start, step", "start", "step", 0.0, 1.0},
    {"randint", GR_INIT_RANDINT, "low, high, seed", "low", "high", 0.0, 100.0},
    {"zipf", GR_INIT_ZIPF, "alpha, range, seed", "alpha", "range", 1.05, 0.0},
    {"file", GR_INIT_FILE, "path", NULL, NULL, 0, 0},
    {"host", GR_INIT_HOST, "", NULL, NULL, 0, 0},
};

static gr_status parse_init(rctx *c, json_t *v, gr_buffer *b, const char *path) {
    char ipath[GR_PATH_MAX];
    snprintf(ipath, sizeof(ipath), "%s.init", path);
    const char *kind = NULL;
    json_t *obj = NULL;
    if (json_is_string(v)) kind = json_string_value(v);
    else if (json_is_object(v)) {
        obj = v;
        json_t *k = json_object_get(v, "kind");
        if (!json_is_string(k))
            return gr_error_set(c->err, GR_ERR_INPUT, ipath,
                                "needs \"kind\": normal, uniform, zeros, ones, const, iota, "
                                "randint, zipf, file or host");
        kind = json_string_value(k);
    } else {
        return gr_error_set(c->err, GR_ERR_INPUT, ipath,
                            "expected a kind (\"normal\") or an object {\"kind\": ...}");
    }
    const init_kind_desc *d = NULL;
    for (size_t i = 0; i < sizeof(init_kinds) / sizeof(init_kinds[0]); i++)
        if (!strcmp(init_kinds[i].name, kind)) d = &init_kinds[i];
    if (!d)
        return gr_error_set(c->err, GR_ERR_INPUT, ipath,
                            "unknown init kind \"%s\" (kinds: normal, uniform, zeros, ones, "
                            "const, iota, randint, zipf, file, host)",
                            kind);
    b->init.kind = d->kind;
    b->init.a = d->da;
    b->init.b = d->db;
    uint64_t own_seed = fnv1a(b->name);
    if (obj) {
        const char *key;
        json_t *val;
        json_object_foreach(obj, key, val) {
            char kpath[GR_PATH_MAX];
            snprintf(kpath, sizeof(kpath), "%s.%s", ipath, key);
            if (!strcmp(key, "kind")) continue;
            if (!strcmp(key, "seed") && strstr(d->keys, "seed")) {
                long long s;
                if (eval_int(c, val, kpath, 0, (long long)1 << 53, &s) == GR_OK)
                    own_seed = mix64((uint64_t)s);
            } else if (!strcmp(key, "path") && d->kind == GR_INIT_FILE) {
                char rel[512];
                if (eval_string(c, val, kpath, rel, sizeof(rel)) != GR_OK) continue;
                if (rel[0] == '/') snprintf(b->init.path, sizeof(b->init.path), "%s", rel);
                else snprintf(b->init.path, sizeof(b->init.path), "%s/%s", c->wl->dir, rel);
            } else if (d->key_a && !strcmp(key, d->key_a)) {
                eval_number(c, val, kpath, &b->init.a);
            } else if (d->key_b && !strcmp(key, d->key_b)) {
                eval_number(c, val, kpath, &b->init.b);
            } else {
                gr_error_set(c->err, GR_ERR_INPUT, kpath, "init kind \"%s\" takes %s%s", kind,
                             d->keys[0] ? d->keys : "no other keys", d->keys[0] ? " only" : "");
            }
        }
    }
    b->init.seed = mix64(c->wl->seed ^ own_seed);
    int is_int = b->dtype == GR_INT32 || b->dtype == GR_INT64;
    if ((d->kind == GR_INIT_NORMAL || d->kind == GR_INIT_UNIFORM) && !is_int && b->init.b < b->init.a &&
        d->kind == GR_INIT_UNIFORM)
        return gr_error_set(c->err, GR_ERR_INPUT, ipath, "uniform needs low <= high");
    if ((d->kind == GR_INIT_RANDINT || d->kind == GR_INIT_ZIPF) && !is_int)
        return gr_error_set(c->err, GR_ERR_INPUT, ipath,
                            "init \"%s\" makes integers; the buffer is %s (use int32 or int64)", kind,
                            gr_dtype_name(b->dtype));
    if (d->kind == GR_INIT_RANDINT && !(b->init.b > b->init.a))
        return gr_error_set(c->err, GR_ERR_INPUT, ipath, "randint needs low < high");
    if (d->kind == GR_INIT_ZIPF && (!(b->init.b >= 1) || !(b->init.a > 0)))
        return gr_error_set(c->err, GR_ERR_INPUT, ipath,
                            "zipf needs \"range\" >= 1 (rows to draw from) and \"alpha\" > 0");
    if (d->kind == GR_INIT_NORMAL && b->init.b < 0)
        return gr_error_set(c->err, GR_ERR_INPUT, ipath, "normal needs std >= 0");
    if (d->kind == GR_INIT_FILE) {
        if (!b->init.path[0]) {
            if (obj && json_object_get(obj, "path")) return GR_ERR_INPUT; /* reported above */
            return gr_error_set(c->err, GR_ERR_INPUT, ipath, "init \"file\" needs \"path\"");
        }
        /* a regular file within the data limit (core/fileio): a FIFO or /dev/zero is refused
         * here, before a run would block on it or read it without end */
        FILE *f = NULL;
        uint64_t size = 0;
        gr_error fe;
        gr_error_clear(&fe);
        if (access(b->init.path, F_OK) != 0)
            return gr_error_set(c->err, GR_ERR_INPUT, ipath,
                                "file \"%s\" not found (paths are relative to the workload file)",
                                b->init.path);
        if (gr_file_open(b->init.path, GR_FILE_DATA, &f, &size, &fe) != GR_OK)
            return gr_error_set(c->err, GR_ERR_INPUT, ipath, "%s", fe.msg);
        fclose(f);
        if (size != (uint64_t)b->bytes)
            return gr_error_set(c->err, GR_ERR_INPUT, ipath,
                                "file \"%s\" has %lld bytes; buffer \"%s\" (%s, %lld elements) "
                                "needs exactly %zu",
                                b->init.path, (long long)size, b->name,
                                gr_dtype_name(b->dtype), (long long)b->numel, b->bytes);
    }
    return GR_OK;
}

static void buffer_failed(rctx *c, const char *name) {
    if (!name || !name[0] || strchr(name, '{')) {
        c->bufs_incomplete = 1;
        return;
    }
    if (c->nfailed == c->cap_failed) {
        int ncap = c->cap_failed ? c->cap_failed * 2 : 16;
        char(*nf)[GR_NAME_MAX] = realloc(c->failed_bufs, (size_t)ncap * sizeof(*nf));
        if (!nf) {
            c->bufs_incomplete = 1;
            return;
        }
        c->failed_bufs = nf;
        c->cap_failed = ncap;
    }
    snprintf(c->failed_bufs[c->nfailed++], GR_NAME_MAX, "%s", name);
}

/* "unknown buffer", unless the buffer's declaration failed: then that is the problem, already
 * reported (or, when the failed declaration's name is not known, counted into one line). */
static void unknown_buffer(rctx *c, const char *path, const char *name) {
    for (int i = 0; i < c->nfailed; i++)
        if (!strcmp(c->failed_bufs[i], name)) return;
    if (c->bufs_incomplete) {
        if (c->unchecked_refs++ == 0)
            snprintf(c->first_unchecked, sizeof(c->first_unchecked), "%s: buffer \"%.96s\"", path, name);
        return;
    }
    char hint[160];
    suggest_buffer(c, name, hint, sizeof(hint));
    gr_error_set(c->err, GR_ERR_INPUT, path, "unknown buffer \"%s\"%s", name, hint);
}

static gr_buffer *new_buffer(rctx *c) {
    gr_plan *p = c->plan;
    if (p->nbufs >= GR_MAX_BUFFERS) {
        gr_error_set(c->err, GR_ERR_INPUT, "buffers", "more than %d buffers", GR_MAX_BUFFERS);
        c->fatal = 1;
        return NULL;
    }
    if (p->nbufs == c->cap_bufs) {
        int ncap = c->cap_bufs ? c->cap_bufs * 2 : 64;
        gr_buffer *nb = realloc(p->bufs, (size_t)ncap * sizeof(gr_buffer));
        if (!nb) {
            gr_error_set(c->err, GR_ERR_NOMEM, "buffers", "out of memory");
            c->fatal = 1;
            return NULL;
        }
        p->bufs = nb;
        c->cap_bufs = ncap;
    }
    if ((size_t)(p->nbufs + 1) * 2 > c->idx.cap && idx_grow(c) != 0) {
        gr_error_set(c->err, GR_ERR_NOMEM, "buffers", "out of memory");
        c->fatal = 1;
        return NULL;
    }
    gr_buffer *b = &p->bufs[p->nbufs];
    memset(b, 0, sizeof(*b));
    b->first_read = b->first_write = -1;
    return b;
}

static void add_buffer(rctx *c, json_t *obj, const char *basepath) {
    char path[GR_PATH_MAX];
    path_with_vars(c, path, sizeof(path), basepath);
    json_error_t jerr;
    const char *name = NULL, *doc = NULL;
    json_t *dtype = NULL, *shape = NULL, *init = NULL;
    static const gr_json_key keys[] = {{"name", GR_JT_STRING, 1, NULL},
                                       {"dtype", GR_JT_STRING, 1, NULL},
                                       {"shape", GR_JT_ARRAY, 1, NULL},
                                       {"init", GR_JT_STRING | GR_JT_OBJECT, 0,
                                        "a kind (\"normal\") or an object {\"kind\": ...}"},
                                       {"doc", GR_JT_STRING, 0, NULL},
                                       {NULL, 0, 0, NULL}};
    if (gr_json_check_keys(obj, path, keys, "a buffer", c->err)) {
        buffer_failed(c, json_string_value(json_object_get(obj, "name")));
        return;
    }
    if (json_unpack_ex(obj, &jerr, JSON_STRICT, "{s:s, s:o, s:o, s?:o, s?:s}", "name", &name,
                       "dtype", &dtype, "shape", &shape, "init", &init, "doc", &doc) != 0) {
        buffer_failed(c, NULL);
        gr_error_set(c->err, GR_ERR_INPUT, path,
                     "%s (a buffer is {\"name\", \"dtype\", \"shape\", \"init\"?, \"doc\"?}; a "
                     "repeat block is {\"repeat\", \"var\", \"buffers\"})",
                     jerr.text);
        return;
    }
    gr_buffer tmp;
    memset(&tmp, 0, sizeof(tmp));
    tmp.first_read = tmp.first_write = -1;
    snprintf(tmp.path, sizeof(tmp.path), "%s", path);
    if (expand_name(c, name, path, tmp.name, sizeof(tmp.name)) != GR_OK) {
        buffer_failed(c, NULL);
        return;
    }
    int errors = c->err->count;
    char dt[32];
    char dpath[GR_PATH_MAX];
    snprintf(dpath, sizeof(dpath), "%s.dtype", path);
    if (eval_string(c, dtype, dpath, dt, sizeof(dt)) == GR_OK) {
        tmp.dtype = gr_dtype_parse(dt);
        if (tmp.dtype == GR_DTYPE_INVALID)
            gr_error_set(c->err, GR_ERR_INPUT, dpath,
                         "unknown dtype \"%s\" (dtypes: fp32, bf16, fp16, int32, int64)", dt);
    }
    char spath[GR_PATH_MAX];
    snprintf(spath, sizeof(spath), "%s.shape", path);
    if (!json_is_array(shape) || json_array_size(shape) == 0 || json_array_size(shape) > GR_MAX_DIMS) {
        gr_error_set(c->err, GR_ERR_INPUT, spath, "expected an array of 1 to %d dimensions",
                     GR_MAX_DIMS);
    } else {
        tmp.ndim = (int)json_array_size(shape);
        tmp.numel = 1;
        for (int d = 0; d < tmp.ndim; d++) {
            char epath[GR_PATH_MAX + 8];
            snprintf(epath, sizeof(epath), "%s[%d]", spath, d);
            long long v;
            if (eval_int(c, json_array_get(shape, (size_t)d), epath, 1, (long long)1 << 40, &v) !=
                GR_OK) {
                tmp.numel = 0;
                break;
            }
            tmp.shape[d] = v;
            if ((double)tmp.numel * (double)v > (double)((long long)1 << 40)) {
                gr_error_set(c->err, GR_ERR_INPUT, spath,
                             "buffer \"%s\" has more than 2^40 elements", tmp.name);
                tmp.numel = 0;
                break;
            }
            tmp.numel *= v;
        }
    }
    tmp.bytes = (size_t)tmp.numel * gr_dtype_size(tmp.dtype);
    if (c->err->count == errors && init) parse_init(c, init, &tmp, path);
    if (c->err->count != errors) {
        buffer_failed(c, tmp.name);
        return;
    }
    int dup = find_buffer(c, tmp.name);
    if (dup >= 0) {
        gr_error_set(c->err, GR_ERR_INPUT, path, "buffer \"%s\" is already declared at %s",
                     tmp.name, c->plan->bufs[dup].path);
        return;
    }
    gr_buffer *b = new_buffer(c);
    if (!b) return;
    *b = tmp;
    c->plan->nbufs++;
    size_t h = (size_t)(fnv1a(b->name) & (c->idx.cap - 1));
    while (c->idx.slots[h]) h = (h + 1) & (c->idx.cap - 1);
    c->idx.slots[h] = c->plan->nbufs;
}

static void walk_buffers(rctx *c, json_t *list, const char *path) {
    size_t i;
    json_t *el;
    json_array_foreach(list, i, el) {
        if (c->fatal) return;
        char epath[GR_PATH_MAX];
        snprintf(epath, sizeof(epath), "%s[%zu]", path, i);
        if (json_is_object(el) && json_object_get(el, "repeat")) {
            if (run_repeat(c, el, epath, "buffers", walk_buffers) != 0) c->bufs_incomplete = 1;
        } else if (json_is_object(el)) {
            add_buffer(c, el, epath);
        } else {
            gr_error_set(c->err, GR_ERR_INPUT, epath, "expected a buffer object");
            c->bufs_incomplete = 1;
        }
    }
}

/* ---------- ops ---------- */

static gr_op *new_op(rctx *c, const char *path) {
    gr_plan *p = c->plan;
    if (p->nops >= GR_MAX_OPS) {
        gr_error_set(c->err, GR_ERR_INPUT, path, "the variant expands to more than %d ops",
                     GR_MAX_OPS);
        c->fatal = 1;
        return NULL;
    }
    if (p->nops == c->cap_ops) {
        int ncap = c->cap_ops ? c->cap_ops * 2 : 64;
        gr_op *no = realloc(p->ops, (size_t)ncap * sizeof(gr_op));
        if (!no) {
            gr_error_set(c->err, GR_ERR_NOMEM, path, "out of memory");
            c->fatal = 1;
            return NULL;
        }
        p->ops = no;
        c->cap_ops = ncap;
    }
    gr_op *op = &p->ops[p->nops];
    memset(op, 0, sizeof(*op));
    op->index = p->nops;
    snprintf(op->path, sizeof(op->path), "%s", path);
    return op;
}

static int stream_index(rctx *c, const char *name, int create) {
    for (int i = 0; i < c->plan->nstreams; i++)
        if (!strcmp(c->plan->streams[i], name)) return i;
    if (!create || c->plan->nstreams >= GR_MAX_STREAMS) return -1;
    int i = c->plan->nstreams++;
    snprintf(c->plan->streams[i], sizeof(c->plan->streams[i]), "%s", name);
    return i;
}

static int resolve_stream(rctx *c, json_t *v, const char *path) {
    if (!v) return 0;
    char name[32];
    char spath[GR_PATH_MAX];
    snprintf(spath, sizeof(spath), "%s.stream", path);
    if (eval_string(c, v, spath, name, sizeof(name)) != GR_OK) return -1;
    int s = stream_index(c, name, 0);
    if (s < 0 || !c->stream_open[s]) {
        gr_error_set(c->err, GR_ERR_INPUT, spath,
                     "stream \"%s\" is not forked here; add {\"fork\": \"%s\"} before this op "
                     "(ops run on \"main\" unless forked onto another stream)",
                     name, name);
        return -1;
    }
    return s;
}

/* Records op `op` (about to be counted) by name; an explicit name used before is an error. */
static void note_op_name(rctx *c, gr_op *op, int explicit_name) {
    name_index *ix = &c->op_names;
    gr_op *ops = c->plan->ops;
    if (!op->name[0]) return; /* its name failed to expand: reported */
    if ((size_t)(op->index + 1) * 2 > ix->cap) {
        size_t ncap = ix->cap ? ix->cap * 2 : 256;
        int *slots = calloc(ncap, sizeof(int));
        if (!slots) return; /* only the check is lost */
        for (size_t h = 0; h < ix->cap; h++) {
            if (!ix->slots[h]) continue;
            size_t k = (size_t)(fnv1a(ops[ix->slots[h] - 1].name) & (ncap - 1));
            while (slots[k]) k = (k + 1) & (ncap - 1);
            slots[k] = ix->slots[h];
        }
        free(ix->slots);
        ix->slots = slots;
        ix->cap = ncap;
    }
    size_t h = (size_t)(fnv1a(op->name) & (ix->cap - 1));
    while (ix->slots[h]) {
        const gr_op *o = &ops[ix->slots[h] - 1];
        if (!strcmp(o->name, op->name)) {
            if (explicit_name)
                gr_error_set(c->err, GR_ERR_INPUT, op->path,
                             "op name \"%s\" is already used by %s; op names must be unique in a "
                             "variant (timings, traces and checks name ops by it)",
                             op->name, o->path);
            return;
        }
        h = (h + 1) & (ix->cap - 1);
    }
    ix->slots[h] = op->index + 1;
}

static void add_fork_join(rctx *c, json_t *obj, const char *path, int is_fork) {
    json_error_t jerr;
    const char *target = NULL, *name = NULL, *doc = NULL;
    json_t *stream = NULL;
    const char *key = is_fork ? "fork" : "join";
    const gr_json_key keys[] = {{key, GR_JT_STRING, 1, "a stream name"},
                                {"stream", GR_JT_STRING, 0, "a stream name"},
                                {"name", GR_JT_STRING, 0, NULL},
                                {"doc", GR_JT_STRING, 0, NULL},
                                {NULL, 0, 0, NULL}};
    if (gr_json_check_keys(obj, path, keys, is_fork ? "a fork" : "a join", c->err)) return;
    if (json_unpack_ex(obj, &jerr, JSON_STRICT, "{s:s, s?:o, s?:s, s?:s}", key, &target, "stream",
                       &stream, "name", &name, "doc", &doc) != 0) {
        gr_error_set(c->err, GR_ERR_INPUT, path, "%s (a %s is {\"%s\": STREAM, \"stream\"?: FROM})",
                     jerr.text, key, key);
        return;
    }
    int from = resolve_stream(c, stream, path);
    if (from < 0) return;
    if (!strcmp(target, "main") || strlen(target) >= 32 || !target[0]) {
        gr_error_set(c->err, GR_ERR_INPUT, path,
                     "cannot %s stream \"%s\": give a side stream name other than \"main\"", key,
                     target);
        return;
    }
    int t = stream_index(c, target, is_fork);
    if (t < 0) {
        if (is_fork)
            gr_error_set(c->err, GR_ERR_INPUT, path, "more than %d streams", GR_MAX_STREAMS);
        else
            gr_error_set(c->err, GR_ERR_INPUT, path,
                         "stream \"%s\" was never forked; add {\"fork\": \"%s\"} first", target,
                         target);
        return;
    }
    if (t == from) {
        gr_error_set(c->err, GR_ERR_INPUT, path, "a stream cannot %s itself", key);
        return;
    }
    if (is_fork && c->stream_open[t]) {
        gr_error_set(c->err, GR_ERR_INPUT, path,
                     "stream \"%s\" is already forked (at %s) and not joined back", target,
                     c->plan->ops[c->stream_fork_op[t]].path);
        return;
    }
    if (!is_fork && !c->stream_open[t]) {
        gr_error_set(c->err, GR_ERR_INPUT, path, "stream \"%s\" is not forked here", target);
        return;
    }
    gr_op *op = new_op(c, path);
    if (!op) return;
    path_with_vars(c, op->path, sizeof(op->path), path);
    op->kind = is_fork ? GR_OP_FORK : GR_OP_JOIN;
    op->stream = from;
    op->other_stream = t;
    op->event = c->plan->nevents++;
    if (name) expand_name(c, name, path, op->name, sizeof(op->name));
    else snprintf(op->name, sizeof(op->name), "%s:%s", key, target);
    note_op_name(c, op, name != NULL);
    if (is_fork) {
        c->stream_open[t] = 1;
        c->stream_fork_op[t] = op->index;
    } else {
        c->stream_open[t] = 0;
    }
    c->plan->nops++;
}

static void suggest_kernel(const rctx *c, const char *name, char *out, size_t size) {
    out[0] = '\0';
    if (!c->names) return;
    const char *const *all = c->names();
    const char *best = NULL;
    int bestd = 4;
    for (; all && *all; all++) {
        int d = edit_distance(name, *all);
        if (d < bestd) {
            bestd = d;
            best = *all;
        }
    }
    if (best) snprintf(out, size, "did you mean \"%s\"? ", best);
}

static void resolve_attrs(rctx *c, gr_op *op, json_t *attrs) {
    const gr_kernel_def *k = op->kernel;
    char apath[GR_PATH_MAX + 8];
    snprintf(apath, sizeof(apath), "%s.attrs", op->path);
    if (attrs && !json_is_object(attrs)) {
        gr_error_set(c->err, GR_ERR_INPUT, apath, "expected an object of name: value");
        return;
    }
    if (attrs) {
        const char *key;
        json_t *val;
        json_object_foreach(attrs, key, val) {
            int found = 0;
            for (int a = 0; a < k->nattrs; a++)
                if (!strcmp(k->attrs[a].name, key)) found = 1;
            if (!found) {
                char list[512];
                size_t o = 0;
                list[0] = '\0';
                for (int a = 0; a < k->nattrs && o + 1 < sizeof(list); a++)
                    o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", a ? ", " : "",
                                          k->attrs[a].name);
                gr_error_set(c->err, GR_ERR_INPUT, apath,
                             "kernel \"%s\" has no attribute \"%s\" (attributes: %s)", k->name, key,
                             k->nattrs ? list : "none");
            }
        }
    }
    for (int a = 0; a < k->nattrs && a < GR_MAX_ATTRS; a++) {
        const gr_attr_spec *s = &k->attrs[a];
        gr_attr_val *v = &op->attrs[op->nattrs++];
        v->name = s->name;
        v->type = s->type;
        v->num = s->def_num;
        if (s->def_str) snprintf(v->str, sizeof(v->str), "%s", s->def_str);
        json_t *jv = attrs ? json_object_get(attrs, s->name) : NULL;
        char vpath[GR_PATH_MAX + 64];
        snprintf(vpath, sizeof(vpath), "%s.%s", apath, s->name);
        if (!jv) {
            if (s->required)
                gr_error_set(c->err, GR_ERR_INPUT, apath, "kernel \"%s\" needs attribute \"%s\"%s%s",
                             k->name, s->name, s->help ? ": " : "", s->help ? s->help : "");
            continue;
        }
        switch (s->type) {
        case GR_ATTR_INT: {
            long long iv;
            if (eval_int(c, jv, vpath, -((long long)1 << 53), (long long)1 << 53, &iv) == GR_OK)
                v->num = (double)iv;
            break;
        }
        case GR_ATTR_FLOAT: eval_number(c, jv, vpath, &v->num); break;
        case GR_ATTR_BOOL:
            if (json_is_boolean(jv)) v->num = json_is_true(jv);
            else gr_error_set(c->err, GR_ERR_INPUT, vpath, "expected true or false");
            break;
        case GR_ATTR_ENUM: {
            if (eval_string(c, jv, vpath, v->str, sizeof(v->str)) != GR_OK) break;
            int ok = 0;
            char list[512];
            size_t o = 0;
            list[0] = '\0';
            for (const char *const *ch = s->choices; ch && *ch; ch++) {
                if (!strcmp(*ch, v->str)) ok = 1;
                if (o + 1 < sizeof(list))
                    o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", o ? ", " : "", *ch);
            }
            if (!ok)
                gr_error_set(c->err, GR_ERR_INPUT, vpath, "\"%s\" is not one of: %s", v->str, list);
            break;
        }
        }
    }
}

/* The buffer list of an op's inputs or outputs being filled (an io repeat block's body appends
 * to it through the rctx, since run_repeat's body sees only the list and the path). */
typedef struct io_list {
    const char *what;
    int *out;
    int n, max, bad;
} io_list;

static void walk_io(rctx *c, json_t *list, const char *path);

static void io_element(rctx *c, io_list *io, json_t *el, const char *epath) {
    if (json_is_object(el) && json_object_get(el, "repeat")) {
        io_list *saved = c->io;
        c->io = io;
        run_repeat(c, el, epath, "names", walk_io);
        c->io = saved;
        return;
    }
    if (!json_is_string(el)) {
        gr_error_set(c->err, GR_ERR_INPUT, epath,
                     "expected a buffer name or a repeat block {\"repeat\": COUNT, \"var\": "
                     "\"i\", \"names\": [...]}");
        io->bad = 1;
        return;
    }
    char name[GR_NAME_MAX];
    if (expand_name(c, json_string_value(el), epath, name, sizeof(name)) != GR_OK) {
        io->bad = 1;
        return;
    }
    int b = find_buffer(c, name);
    if (b < 0) {
        unknown_buffer(c, epath, name);
        io->bad = 1;
        return;
    }
    if (io->n >= io->max) {
        if (!io->bad)
            gr_error_set(c->err, GR_ERR_INPUT, epath, "more than %d %s", io->max, io->what);
        io->bad = 1;
        return;
    }
    io->out[io->n++] = b;
}

static void walk_io(rctx *c, json_t *list, const char *path) {
    io_list *io = c->io;
    size_t i;
    json_t *el;
    json_array_foreach(list, i, el) {
        if (c->fatal) return;
        char base[GR_PATH_MAX + 32], epath[GR_PATH_MAX + 32];
        snprintf(base, sizeof(base), "%s[%zu]", path, i);
        path_with_vars(c, epath, sizeof(epath), base);
        io_element(c, io, el, epath);
    }
}

/* An op's inputs or outputs: buffer names, and repeat blocks of names
 * ({"repeat": "L", "var": "i", "names": ["W.{i}", ...]}), in order. */
static int resolve_io(rctx *c, gr_op *op, json_t *arr, const char *what, int *out, int max) {
    char path[GR_PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s.%s", op->path, what);
    if (!json_is_array(arr)) {
        gr_error_set(c->err, GR_ERR_INPUT, path, "expected an array of buffer names");
        return -1;
    }
    io_list io = {what, out, 0, max, 0};
    size_t i;
    json_t *el;
    json_array_foreach(arr, i, el) {
        if (c->fatal) break;
        char epath[GR_PATH_MAX + 32];
        snprintf(epath, sizeof(epath), "%s[%zu]", path, i);
        io_element(c, &io, el, epath);
    }
    return io.bad || c->fatal ? -1 : io.n;
}

static void count_range(char *out, size_t size, int lo, int hi) {
    if (lo == hi) snprintf(out, size, "%d", lo);
    else snprintf(out, size, "%d to %d", lo, hi);
}

static void add_kernel_op(rctx *c, json_t *obj, const char *basepath) {
    char path[GR_PATH_MAX];
    path_with_vars(c, path, sizeof(path), basepath);
    json_error_t jerr;
    json_t *kernel = NULL, *inputs = NULL, *outputs = NULL, *attrs = NULL, *stream = NULL;
    const char *name = NULL, *doc = NULL;
    static const gr_json_key keys[] = {{"kernel", GR_JT_STRING, 1, NULL}, {"name", GR_JT_STRING, 0, NULL},
                                       {"inputs", GR_JT_ARRAY, 1, "an array of buffer names"},
                                       {"outputs", GR_JT_ARRAY, 1, "an array of buffer names"},
                                       {"attrs", GR_JT_OBJECT, 0, NULL},  {"stream", GR_JT_STRING, 0, NULL},
                                       {"doc", GR_JT_STRING, 0, NULL},    {NULL, 0, 0, NULL}};
    if (gr_json_check_keys(obj, path, keys, "an op (or {\"fork\"}, {\"join\"}, {\"repeat\"})",
                           c->err))
        return;
    if (json_unpack_ex(obj, &jerr, JSON_STRICT, "{s:o, s?:s, s:o, s:o, s?:o, s?:o, s?:s}", "kernel",
                       &kernel, "name", &name, "inputs", &inputs, "outputs", &outputs, "attrs",
                       &attrs, "stream", &stream, "doc", &doc) != 0) {
        gr_error_set(c->err, GR_ERR_INPUT, path,
                     "%s (an op is {\"kernel\", \"inputs\", \"outputs\", \"attrs\"?, \"name\"?, "
                     "\"stream\"?}; also {\"fork\": S}, {\"join\": S}, {\"repeat\", \"var\", "
                     "\"ops\"})",
                     jerr.text);
        return;
    }
    gr_op *op = new_op(c, path);
    if (!op) return;
    int errors = c->err->count;
    char kname[64];
    char kpath[GR_PATH_MAX + 8];
    snprintf(kpath, sizeof(kpath), "%s.kernel", path);
    if (eval_string(c, kernel, kpath, kname, sizeof(kname)) != GR_OK) return;
    op->kernel = c->lookup ? c->lookup(kname) : NULL;
    if (op->kernel && (op->kernel->flags & GR_KF_USER)) op->kernel = NULL; /* not by "kernel" */
    if (!op->kernel) {
        char hint[128];
        if (strcmp(kname, c->unknown_kernel) != 0) { /* the same typo a million times: one search */
            suggest_kernel(c, kname, c->unknown_hint, sizeof(c->unknown_hint));
            snprintf(c->unknown_kernel, sizeof(c->unknown_kernel), "%s", kname);
        }
        snprintf(hint, sizeof(hint), "%s", c->unknown_hint);
        gr_error_set(c->err, GR_ERR_INPUT, kpath,
                     "unknown kernel \"%s\" (%s`graphrun kernels` lists them)", kname, hint);
        return;
    }
    const gr_kernel_def *k = op->kernel;
    if (name) expand_name(c, name, path, op->name, sizeof(op->name));
    else snprintf(op->name, sizeof(op->name), "%s#%d", k->name, op->index);
    int s = resolve_stream(c, stream, path);
    op->stream = s < 0 ? 0 : s;
    int ni = resolve_io(c, op, inputs, "inputs", op->inputs, GR_MAX_INPUTS);
    int no = resolve_io(c, op, outputs, "outputs", op->outputs, GR_MAX_OUTPUTS);
    char range[48];
    if (ni >= 0 && (ni < k->min_inputs || ni > k->max_inputs)) {
        count_range(range, sizeof(range), k->min_inputs, k->max_inputs);
        gr_error_set(c->err, GR_ERR_INPUT, path, "kernel \"%s\" takes %s inputs (%s), got %d",
                     k->name, range, k->inputs_doc ? k->inputs_doc : "", ni);
    }
    if (no >= 0 && (no < k->min_outputs || no > k->max_outputs)) {
        count_range(range, sizeof(range), k->min_outputs, k->max_outputs);
        gr_error_set(c->err, GR_ERR_INPUT, path, "kernel \"%s\" takes %s outputs (%s), got %d",
                     k->name, range, k->outputs_doc ? k->outputs_doc : "", no);
    }
    op->ninputs = ni < 0 ? 0 : ni;
    op->noutputs = no < 0 ? 0 : no;
    resolve_attrs(c, op, attrs);
    op->kind = GR_OP_KERNEL;
    note_op_name(c, op, name != NULL);
    if (c->err->count != errors || ni < 0 || no < 0) op->kernel = NULL; /* skip its check */
    c->plan->nops++;
}

/* ---------- user ops: {"module", "function", "grid", "block", "args", ...} ---------- */

static const char *const arg_type_names[] = {"buffer", "i32", "u32", "i64", "u64", "f32", "f64"};

const char *gr_arg_type_name(gr_arg_type t) {
    return (unsigned)t < sizeof(arg_type_names) / sizeof(arg_type_names[0]) ? arg_type_names[t]
                                                                            : "?";
}

size_t gr_arg_size(gr_arg_type t) {
    switch (t) {
    case GR_ARG_I32:
    case GR_ARG_U32:
    case GR_ARG_F32:
        return 4;
    default:
        return 8;
    }
}

int gr_op_pdl_capable(const gr_op *op) {
    if (op->kind != GR_OP_KERNEL || !op->kernel) return 0;
    if (op->user) return op->user->pdl;
    return (op->kernel->flags & GR_KF_PDL) != 0;
}

/* Dynamic shared memory a block may opt in to, by compute capability (the CUDA programming
 * guide's table); the device's own attribute is checked again at load on a GPU. */
static size_t smem_optin_max(const gr_target *t) {
    int cc = t->cc_major * 10 + t->cc_minor;
    if (cc >= 120) return 101376;
    if (cc >= 100 || cc == 90) return 232448;
    if (cc == 80 || cc == 87) return 166912;
    if (cc == 86 || cc == 89) return 101376;
    if (cc == 75) return 65536;
    if (cc >= 70) return 98304;
    return 49152;
}

/* "grid", "block", "cluster": 1 to 3 expressions, each in [1, max[d]]. Returns 0 when valid. */
static int launch_dims(rctx *c, json_t *arr, const char *opath, const char *key,
                       const long long max[3], unsigned out[3]) {
    char path[GR_PATH_MAX + 16];
    snprintf(path, sizeof(path), "%s.%s", opath, key);
    out[0] = out[1] = out[2] = 1;
    if (!json_is_array(arr) || json_array_size(arr) < 1 || json_array_size(arr) > 3) {
        gr_error_set(c->err, GR_ERR_INPUT, path,
                     "expected 1 to 3 dimensions [x, y, z], each a number or an expression");
        return -1;
    }
    int bad = 0;
    for (size_t d = 0; d < json_array_size(arr); d++) {
        char dpath[GR_PATH_MAX + 24];
        snprintf(dpath, sizeof(dpath), "%s[%zu]", path, d);
        long long v;
        if (eval_int(c, json_array_get(arr, d), dpath, 1, max[d], &v) != GR_OK)
            bad = 1;
        else
            out[d] = (unsigned)v;
    }
    return bad ? -1 : 0;
}

/* One scalar argument {"i32": EXPR}: a whole number in the type's range, or a finite float. */
static int scalar_arg(rctx *c, json_t *obj, const char *apath, gr_user_arg *a) {
    const char *key = NULL;
    json_t *val = NULL;
    if (json_object_size(obj) == 1) {
        void *it = json_object_iter(obj);
        key = json_object_iter_key(it);
        val = json_object_iter_value(it);
    }
    int t = -1;
    for (int i = GR_ARG_I32; key && i <= GR_ARG_F64; i++)
        if (!strcmp(key, arg_type_names[i])) t = i;
    if (t < 0) {
        gr_error_set(c->err, GR_ERR_INPUT, apath,
                     "expected a buffer name or one scalar {\"TYPE\": VALUE} with TYPE one of i32, "
                     "u32, i64, u64, f32, f64%s%s%s",
                     key ? " (got \"" : "", key ? key : "", key ? "\")" : "");
        return -1;
    }
    a->type = (gr_arg_type)t;
    char vpath[GR_PATH_MAX + 48];
    snprintf(vpath, sizeof(vpath), "%s.%s", apath, key);
    double d;
    if (json_is_integer(val) && t != GR_ARG_F32 && t != GR_ARG_F64) {
        json_int_t iv = json_integer_value(val); /* exact: 64-bit values past 2^53 stay whole */
        int ok = t == GR_ARG_I64 || (t == GR_ARG_U64 && iv >= 0) ||
                 (t == GR_ARG_I32 && iv >= INT32_MIN && iv <= INT32_MAX) ||
                 (t == GR_ARG_U32 && iv >= 0 && iv <= (json_int_t)UINT32_MAX);
        if (!ok) goto range;
        if (t == GR_ARG_I32)
            a->v.i32 = (int32_t)iv;
        else if (t == GR_ARG_U32)
            a->v.u32 = (uint32_t)iv;
        else if (t == GR_ARG_I64)
            a->v.i64 = (int64_t)iv;
        else
            a->v.u64 = (uint64_t)iv;
        return 0;
    }
    if (eval_number(c, val, vpath, &d) != GR_OK) return -1;
    switch (t) {
    case GR_ARG_F32:
        if (!isfinite(d) || fabs(d) > FLT_MAX) goto range;
        a->v.f32 = (float)d;
        return 0;
    case GR_ARG_F64:
        if (!isfinite(d)) goto range;
        a->v.f64 = d;
        return 0;
    default:
        break;
    }
    if (d != floor(d)) {
        gr_error_set(c->err, GR_ERR_INPUT, vpath, "%s takes a whole number, got %.17g", key, d);
        return -1;
    }
    if (t == GR_ARG_I32 && d >= -2147483648.0 && d <= 2147483647.0)
        a->v.i32 = (int32_t)d;
    else if (t == GR_ARG_U32 && d >= 0 && d <= 4294967295.0)
        a->v.u32 = (uint32_t)d;
    else if (t == GR_ARG_I64 && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
        a->v.i64 = (int64_t)d;
    else if (t == GR_ARG_U64 && d >= 0 && d < 18446744073709551616.0)
        a->v.u64 = (uint64_t)d;
    else
        goto range;
    return 0;
range : {
    static const char *const ranges[] = {"",
                                         "[-2147483648, 2147483647]",
                                         "[0, 4294967295]",
                                         "[-2^63, 2^63 - 1]",
                                         "[0, 2^64 - 1]",
                                         "finite, |x| <= 3.4028235e38",
                                         "finite"};
    char shown[64];
    if (json_is_integer(val))
        snprintf(shown, sizeof(shown), "%lld", (long long)json_integer_value(val));
    else if (json_is_number(val))
        snprintf(shown, sizeof(shown), "%.17g", json_number_value(val));
    else
        snprintf(shown, sizeof(shown), "%.17g (\"%.30s\")", d, json_string_value(val));
    gr_error_set(c->err, GR_ERR_INPUT, vpath, "%s is out of %s's range %s", shown, key, ranges[t]);
    return -1;
}
}

static void add_user_op(rctx *c, json_t *obj, const char *basepath) {
    char path[GR_PATH_MAX];
    path_with_vars(c, path, sizeof(path), basepath);
    static const gr_json_key keys[] = {
        {"module", GR_JT_STRING, 1, "a module name (a key of \"modules\")"},
        {"function", GR_JT_STRING, 1, "the kernel's name in the module (extern \"C\", or mangled)"},
        {"grid", GR_JT_ARRAY, 1, "1 to 3 dimensions, e.g. [\"rows\"]"},
        {"block", GR_JT_ARRAY, 1, "1 to 3 dimensions, e.g. [256]"},
        {"smem", GR_JT_NUMBER | GR_JT_STRING, 0,
         "dynamic shared memory bytes (a number or an expression)"},
        {"args", GR_JT_ARRAY, 0, "an array of buffer names and {\"i32\": EXPR} scalars"},
        {"inputs", GR_JT_ARRAY, 1, "an array of buffer names"},
        {"outputs", GR_JT_ARRAY, 1, "an array of buffer names"},
        {"pdl", GR_JT_BOOL, 0, NULL},
        {"cluster", GR_JT_ARRAY, 0, "1 to 3 cluster dimensions, e.g. [2, 1, 1]"},
        {"bytes", GR_JT_OBJECT, 0, "{\"read\": EXPR, \"written\": EXPR}"},
        {"name", GR_JT_STRING, 0, NULL},
        {"stream", GR_JT_STRING, 0, NULL},
        {"doc", GR_JT_STRING, 0, NULL},
        {NULL, 0, 0, NULL}};
    if (gr_json_check_keys(obj, path, keys,
                           "a user op (or {\"kernel\"}, {\"fork\"}, {\"join\"}, {\"repeat\"})",
                           c->err))
        return;
    const gr_kernel_def *k = c->lookup ? c->lookup(GR_USER_KERNEL_NAME) : NULL;
    if (!k || !(k->flags & GR_KF_USER)) {
        gr_error_set(c->err, GR_ERR_INPUT, path,
                     "user kernels (\"module\") are not available here");
        return;
    }
    gr_op *op = new_op(c, path);
    if (!op) return;
    path_with_vars(c, op->path, sizeof(op->path), basepath);
    gr_user_op *u = calloc(1, sizeof(*u));
    if (!u) {
        gr_error_set(c->err, GR_ERR_NOMEM, path, "out of memory");
        c->fatal = 1;
        return;
    }
    op->user = u;
    op->kind = GR_OP_KERNEL;
    op->kernel = k;
    int errors = c->err->count;
    char kpath[GR_PATH_MAX + 16];
    /* module and function */
    char mname[64];
    snprintf(kpath, sizeof(kpath), "%s.module", path);
    if (eval_string(c, json_object_get(obj, "module"), kpath, mname, sizeof(mname)) == GR_OK) {
        gr_module *m = gr_workload_module(c->wl, mname);
        if (m) {
            u->module = gr_module_ref(m);
        } else {
            char list[600];
            size_t o = 0;
            list[0] = '\0';
            for (int i = 0; i < c->wl->nmodules && o < sizeof(list); i++)
                o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "",
                                      c->wl->modules[i]->name);
            gr_error_set(c->err, GR_ERR_INPUT, kpath, "unknown module \"%s\" (modules: %s)", mname,
                         c->wl->nmodules ? list : "none; declare it under \"modules\"");
        }
    }
    snprintf(kpath, sizeof(kpath), "%s.function", path);
    if (eval_string(c, json_object_get(obj, "function"), kpath, u->function, sizeof(u->function)) ==
            GR_OK &&
        !u->function[0])
        gr_error_set(c->err, GR_ERR_INPUT, kpath, "is empty; name the kernel");
    json_t *jname = json_object_get(obj, "name");
    if (jname)
        expand_name(c, json_string_value(jname), path, op->name, sizeof(op->name));
    else
        snprintf(op->name, sizeof(op->name), "%.80s#%d", u->function, op->index);
    snprintf(op->form, sizeof(op->form), "%.20s.%.18s", mname, u->function);
    int s = resolve_stream(c, json_object_get(obj, "stream"), path);
    op->stream = s < 0 ? 0 : s;
    /* launch configuration */
    static const long long grid_max[3] = {2147483647LL, 65535, 65535};
    static const long long block_max[3] = {1024, 1024, 64};
    static const long long cluster_max[3] = {16, 16, 16};
    int dims_ok =
        launch_dims(c, json_object_get(obj, "grid"), path, "grid", grid_max, op->grid) == 0;
    if (launch_dims(c, json_object_get(obj, "block"), path, "block", block_max, op->block) == 0) {
        unsigned long threads = (unsigned long)op->block[0] * op->block[1] * op->block[2];
        if (threads > 1024)
            gr_error_set(c->err, GR_ERR_INPUT, path,
                         "block: %u x %u x %u = %lu threads; a block has at most 1024",
                         op->block[0], op->block[1], op->block[2], threads);
    }
    json_t *smem = json_object_get(obj, "smem");
    if (smem) {
        snprintf(kpath, sizeof(kpath), "%s.smem", path);
        long long v;
        if (eval_int(c, smem, kpath, 0, (long long)1 << 32, &v) == GR_OK) {
            op->smem = (size_t)v;
            size_t max = smem_optin_max(&c->plan->target);
            if (op->smem > max)
                gr_error_set(c->err, GR_ERR_INPUT, kpath,
                             "%zu bytes of dynamic shared memory; %s (sm_%d%d) allows at most %zu "
                             "per block (above 48 KB graphrun opts in)",
                             op->smem, c->plan->target.name, c->plan->target.cc_major,
                             c->plan->target.cc_minor, max);
        }
    }
    json_t *pdl = json_object_get(obj, "pdl");
    u->pdl = pdl && json_is_true(pdl);
    json_t *cluster = json_object_get(obj, "cluster");
    if (cluster && launch_dims(c, cluster, path, "cluster", cluster_max, u->cluster) == 0) {
        snprintf(kpath, sizeof(kpath), "%s.cluster", path);
        unsigned n = u->cluster[0] * u->cluster[1] * u->cluster[2];
        if (c->plan->target.cc_major < 9)
            gr_error_set(c->err, GR_ERR_INPUT, kpath,
                         "thread-block clusters need compute capability 9.0 or newer; the target "
                         "is %d.%d",
                         c->plan->target.cc_major, c->plan->target.cc_minor);
        else if (n > 16)
            gr_error_set(c->err, GR_ERR_INPUT, kpath,
                         "%u blocks per cluster; at most 16 (8 portable)", n);
        else if (dims_ok)
            for (int d = 0; d < 3; d++)
                if (op->grid[d] % u->cluster[d]) {
                    gr_error_set(c->err, GR_ERR_INPUT, kpath,
                                 "grid dimension %d (%u) is not a multiple of the cluster's (%u)",
                                 d, op->grid[d], u->cluster[d]);
                    break;
                }
    }
    /* buffers */
    int ni = resolve_io(c, op, json_object_get(obj, "inputs"), "inputs", op->inputs, GR_MAX_INPUTS);
    int no =
        resolve_io(c, op, json_object_get(obj, "outputs"), "outputs", op->outputs, GR_MAX_OUTPUTS);
    op->ninputs = ni < 0 ? 0 : ni;
    op->noutputs = no < 0 ? 0 : no;
    json_t *args = json_object_get(obj, "args");
    size_t nargs = args ? json_array_size(args) : 0;
    if (nargs > 256) {
        snprintf(kpath, sizeof(kpath), "%s.args", path);
        gr_error_set(c->err, GR_ERR_INPUT, kpath, "%zu arguments; at most 256", nargs);
        nargs = 0;
    }
    u->args = calloc(nargs + 1, sizeof(gr_user_arg));
    if (!u->args) {
        gr_error_set(c->err, GR_ERR_NOMEM, path, "out of memory");
        c->fatal = 1;
    }
    for (size_t i = 0; i < nargs && u->args; i++) {
        char apath[GR_PATH_MAX + 32];
        snprintf(apath, sizeof(apath), "%s.args[%zu]", path, i);
        json_t *a = json_array_get(args, i);
        gr_user_arg *ua = &u->args[u->nargs++];
        ua->buffer = -1;
        if (json_is_string(a)) {
            char bname[GR_NAME_MAX];
            ua->type = GR_ARG_BUFFER;
            if (expand_name(c, json_string_value(a), apath, bname, sizeof(bname)) != GR_OK)
                continue;
            int b = find_buffer(c, bname);
            if (b < 0) {
                unknown_buffer(c, apath, bname);
                continue;
            }
            ua->buffer = b;
            int listed = 0;
            for (int j = 0; j < op->ninputs; j++)
                listed |= op->inputs[j] == b;
            for (int j = 0; j < op->noutputs; j++)
                listed |= op->outputs[j] == b;
            if (!listed && ni >= 0 && no >= 0)
                gr_error_set(c->err, GR_ERR_INPUT, apath,
                             "buffer \"%s\" is passed to the kernel but is not in the op's "
                             "\"inputs\" or \"outputs\"; list it in \"inputs\" if the kernel reads "
                             "it, in \"outputs\" if it writes it (graphrun orders ops, checks "
                             "and counts bytes by them)",
                             bname);
        } else if (json_is_object(a)) {
            scalar_arg(c, a, apath, ua);
        } else {
            gr_error_set(c->err, GR_ERR_INPUT, apath,
                         "expected a buffer name or a scalar {\"i32\"|\"u32\"|\"i64\"|\"u64\"|"
                         "\"f32\"|\"f64\": VALUE}, got %s",
                         gr_json_type_word(a));
        }
    }
    /* bytes: each input read once and each output written once, unless given */
    for (int j = 0; j < op->ninputs; j++)
        op->bytes_read += (double)c->plan->bufs[op->inputs[j]].bytes;
    for (int j = 0; j < op->noutputs; j++)
        op->bytes_written += (double)c->plan->bufs[op->outputs[j]].bytes;
    json_t *bytes = json_object_get(obj, "bytes");
    if (bytes) {
        char bpath[GR_PATH_MAX + 16];
        snprintf(bpath, sizeof(bpath), "%s.bytes", path);
        static const gr_json_key bkeys[] = {{"read", GR_JT_NUMBER | GR_JT_STRING, 0, NULL},
                                            {"written", GR_JT_NUMBER | GR_JT_STRING, 0, NULL},
                                            {"doc", GR_JT_STRING, 0, NULL},
                                            {NULL, 0, 0, NULL}};
        if (!gr_json_check_keys(bytes, bpath, bkeys, "an op's bytes", c->err)) {
            static const char *const which[2] = {"read", "written"};
            for (int w = 0; w < 2; w++) {
                json_t *v = json_object_get(bytes, which[w]);
                if (!v) continue;
                char vpath[GR_PATH_MAX + 32];
                snprintf(vpath, sizeof(vpath), "%s.%s", bpath, which[w]);
                double d;
                if (eval_number(c, v, vpath, &d) != GR_OK) continue;
                if (!isfinite(d) || d < 0) {
                    gr_error_set(c->err, GR_ERR_INPUT, vpath, "%g bytes: expected a count >= 0", d);
                    continue;
                }
                if (w == 0)
                    op->bytes_read = d;
                else
                    op->bytes_written = d;
                u->bytes_given |= 1 << w;
            }
        }
    }
    note_op_name(c, op, jname != NULL);
    if (c->err->count != errors || ni < 0 || no < 0 || !u->module) op->kernel = NULL; /* no check */
    c->plan->user_ops++;
    c->plan->nops++;
}

static void walk_ops(rctx *c, json_t *list, const char *path) {
    size_t i;
    json_t *el;
    json_array_foreach(list, i, el) {
        if (c->fatal) return;
        char epath[GR_PATH_MAX];
        snprintf(epath, sizeof(epath), "%s[%zu]", path, i);
        if (!json_is_object(el)) {
            gr_error_set(c->err, GR_ERR_INPUT, epath, "expected an op object");
        } else if (json_object_get(el, "repeat")) {
            run_repeat(c, el, epath, "ops", walk_ops);
        } else if (json_object_get(el, "fork")) {
            add_fork_join(c, el, epath, 1);
        } else if (json_object_get(el, "join")) {
            add_fork_join(c, el, epath, 0);
        } else if (json_object_get(el, "module") || json_object_get(el, "function")) {
            add_user_op(c, el, epath);
        } else {
            add_kernel_op(c, el, epath);
        }
    }
}

/* ---------- outputs, dataflow, accounting ---------- */

/* One tolerance number of an output entry: a number or an expression, finite, in [lo, hi). */
static int output_tol_num(rctx *c, json_t *v, const char *epath, const char *key, double lo,
                          double hi, const char *why, double *out) {
    if (!v) return 0;
    char kpath[GR_PATH_MAX + 16];
    snprintf(kpath, sizeof(kpath), "%s.%s", epath, key);
    double d;
    if (eval_number(c, v, kpath, &d) != GR_OK) return -1;
    if (!isfinite(d) || d < lo || d >= hi) {
        gr_error_set(c->err, GR_ERR_INPUT, kpath, "%s %g is refused: %s", key, d, why);
        return -1;
    }
    *out = d;
    return 1;
}

/* "expect": {"file": PATH}: the output's expected contents, checked against the buffer now. */
static int resolve_expect(rctx *c, json_t *v, const char *epath, gr_buffer *buf) {
    char xpath[GR_PATH_MAX + 16];
    snprintf(xpath, sizeof(xpath), "%s.expect", epath);
    static const gr_json_key keys[] = {
        {"file", GR_JT_STRING, 1, "a file of the expected values (raw little-endian or .npy)"},
        {"doc", GR_JT_STRING, 0, NULL},
        {NULL, 0, 0, NULL}};
    if (!json_is_object(v)) {
        gr_error_set(c->err, GR_ERR_INPUT, xpath,
                     "expected {\"file\": \"y.npy\"} (raw little-endian or .npy), got %s",
                     gr_json_type_word(v));
        return -1;
    }
    if (gr_json_check_keys(v, xpath, keys, "an expect object", c->err)) return -1;
    char fpath[GR_PATH_MAX + 24], rel[512];
    snprintf(fpath, sizeof(fpath), "%s.file", xpath);
    if (eval_string(c, json_object_get(v, "file"), fpath, rel, sizeof(rel)) != GR_OK) return -1;
    if (rel[0] == '/' || !strcmp(c->wl->dir, "."))
        snprintf(buf->expect_path, sizeof(buf->expect_path), "%s", rel);
    else
        snprintf(buf->expect_path, sizeof(buf->expect_path), "%s/%s", c->wl->dir, rel);
    if (gr_expect_check(buf->expect_path, buf, fpath, &buf->expect_offset, c->err) != GR_OK) {
        buf->expect_path[0] = '\0';
        return -1;
    }
    c->plan->expect_outputs++;
    return 0;
}

/* Outputs and their tolerances (docs/verification.md): a name (the dtype's default), or
 * {"buffer", "depth", "roundings"} (derived from the dtype and the accumulation depth), or
 * {"buffer", "rtol", "doc"} (explicit), each with an optional element-wise "atol" and
 * "rtol_elem_k" (the element-wise relative bound as a multiple of its default, with a "doc"). */
static void resolve_outputs(rctx *c, json_t *outputs, const char *path) {
    size_t i;
    json_t *el;
    json_array_foreach(outputs, i, el) {
        char epath[GR_PATH_MAX];
        snprintf(epath, sizeof(epath), "%s[%zu]", path, i);
        const char *name = NULL;
        json_t *jrtol = NULL, *jatol = NULL, *jdepth = NULL, *jround = NULL, *jexpect = NULL;
        json_t *jek = NULL;
        const char *doc = NULL;
        if (json_is_string(el)) {
            name = json_string_value(el);
        } else {
            json_error_t jerr;
            if (json_unpack_ex(el, &jerr, JSON_STRICT,
                               "{s:s, s?:o, s?:o, s?:o, s?:o, s?:s, s?:o, s?:o}", "buffer", &name,
                               "rtol", &jrtol, "atol", &jatol, "depth", &jdepth, "roundings",
                               &jround, "doc", &doc, "expect", &jexpect, "rtol_elem_k",
                               &jek) != 0) {
                gr_error_set(c->err, GR_ERR_INPUT, epath,
                             "%s (an output is a buffer name or {\"buffer\", \"rtol\" or "
                             "\"depth\"/\"roundings\", \"atol\", \"rtol_elem_k\", \"expect\", "
                             "\"doc\"})",
                             jerr.text);
                continue;
            }
            if (jrtol && (jdepth || jround)) {
                gr_error_set(c->err, GR_ERR_INPUT, epath,
                             "give either \"rtol\" (explicit, with a \"doc\" saying why) or "
                             "\"depth\"/\"roundings\" (derived), not both");
                continue;
            }
        }
        double rtol = 0, atol = 0, depth = 1, round = 1;
        int hr = output_tol_num(c, jrtol, epath, "rtol", 0, 1,
                                "a relative L2 tolerance is in [0, 1)", &rtol);
        int ha = output_tol_num(c, jatol, epath, "atol", 0, 1,
                                "an element-wise bound in units of rms(ref) is in [0, 1)", &atol);
        int hd = output_tol_num(c, jdepth, epath, "depth", 1, 1e15,
                                "an accumulation depth counts additions (>= 1)", &depth);
        int hn = output_tol_num(c, jround, epath, "roundings", 1, 1e15,
                                "a count of roundings to the dtype (>= 1)", &round);
        double ek = 1;
        int he = output_tol_num(c, jek, epath, "rtol_elem_k", 1, 1000,
                                "a multiple of the element-wise relative bound is in [1, 1000)", &ek);
        if (hr < 0 || ha < 0 || hd < 0 || hn < 0 || he < 0) continue;
        if (he > 0 && (!doc || !doc[0])) {
            gr_error_set(c->err, GR_ERR_INPUT, epath,
                         "rtol_elem_k loosens the element-wise check: give a \"doc\" with the "
                         "measured reason (docs/verification.md)");
            continue;
        }
        char bname[GR_NAME_MAX];
        if (expand_name(c, name, epath, bname, sizeof(bname)) != GR_OK) continue;
        int b = find_buffer(c, bname);
        if (b < 0) {
            unknown_buffer(c, epath, bname);
            continue;
        }
        gr_buffer *buf = &c->plan->bufs[b];
        if (jexpect && resolve_expect(c, jexpect, epath, buf) != 0) continue;
        buf->is_output = 1;
        buf->atol = ha > 0 ? atol : 0;
        buf->rtol_elem = 0;
        buf->tol_roundings = buf->tol_depth = 0;
        if (hr > 0) {
            buf->rtol = rtol;
            buf->tol_source = GR_TOL_EXPLICIT;
        } else if (hd > 0 || hn > 0) {
            buf->rtol = gr_tol_derive(buf->dtype, round, depth).rtol;
            buf->tol_roundings = round;
            buf->tol_depth = depth;
            buf->tol_source = GR_TOL_DERIVED;
        } else {
            buf->rtol = gr_dtype_default_rtol(buf->dtype);
            buf->tol_source = GR_TOL_DEFAULT;
        }
        if (he > 0) buf->rtol_elem = ek * gr_tol_from_rtol(buf->dtype, buf->rtol).rtol_elem;
    }
}

/* Flags and byte totals; with report == 0 (problems were found before) its checks stay quiet,
 * since an op or buffer that failed to resolve makes them fail for no new reason. */
static void dataflow(rctx *c, int report) {
    gr_plan *p = c->plan;
    for (int i = 0; i < p->nops; i++) {
        gr_op *op = &p->ops[i];
        for (int j = 0; j < op->ninputs; j++) {
            gr_buffer *b = &p->bufs[op->inputs[j]];
            b->used = 1;
            if (b->first_read < 0) b->first_read = i;
            if (report && b->first_write < 0 && b->init.kind == GR_INIT_NONE)
                gr_error_set(c->err, GR_ERR_INPUT, op->path,
                             "reads buffer \"%s\" before any op writes it, and it has no init; "
                             "give it an \"init\" or move the op that writes it first",
                             b->name);
        }
        for (int j = 0; j < op->noutputs; j++) {
            gr_buffer *b = &p->bufs[op->outputs[j]];
            b->used = 1;
            if (b->first_write < 0) b->first_write = i;
        }
    }
    for (int b = 0; b < p->nbufs; b++) {
        gr_buffer *buf = &p->bufs[b];
        if (report && buf->is_output && buf->first_write < 0)
            gr_error_set(c->err, GR_ERR_INPUT, "outputs",
                         "buffer \"%s\" is listed as an output but no op of variant \"%s\" "
                         "writes it",
                         buf->name, p->variant);
        if (buf->init.kind == GR_INIT_NONE && buf->first_write >= 0 && buf->first_read > buf->first_write &&
            !buf->is_output) {
            buf->is_intermediate = 1;
            p->intermediates++;
            p->intermediate_bytes += 2.0 * (double)buf->bytes;
        }
        if (buf->used) p->used_bytes += (double)buf->bytes;
    }
}

static void check_params(rctx *c) {
    for (int i = 0; i < c->wl->nparams; i++) {
        const gr_param *p = &c->wl->params[i];
        char path[96];
        snprintf(path, sizeof(path), "%sparams.%s", p->overridden ? "--set " : "", p->name);
        if (p->nchoices) {
            char val[256];
            if (p->is_str) snprintf(val, sizeof(val), "%s", p->str);
            else snprintf(val, sizeof(val), "%g", p->num);
            int ok = 0;
            char list[800];
            size_t o = 0;
            list[0] = '\0';
            for (int k = 0; k < p->nchoices; k++) {
                if (!strcmp(p->choices[k], val)) ok = 1;
                o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", k ? ", " : "", p->choices[k]);
            }
            if (!ok) gr_error_set(c->err, GR_ERR_INPUT, path, "\"%s\" is not one of: %s", val, list);
        }
        if (p->has_min || p->has_max) {
            double v;
            if (lookup_name(c, p->name, &v, c->err) != 1) continue;
            if ((p->has_min && v < p->min) || (p->has_max && v > p->max))
                gr_error_set(c->err, GR_ERR_INPUT, path, "%g is outside [%g, %g]", v,
                             p->has_min ? p->min : -INFINITY, p->has_max ? p->max : INFINITY);
        }
    }
}

static void params_text(rctx *c) {
    size_t o = 0;
    char *out = c->plan->params;
    size_t size = sizeof(c->plan->params);
    out[0] = '\0';
    for (int i = 0; i < c->wl->nparams && o + 1 < size; i++) {
        const gr_param *p = &c->wl->params[i];
        double v;
        int n;
        if (p->is_str) {
            gr_error scratch;
            gr_error_clear(&scratch);
            if (lookup_name(c, p->name, &v, &scratch) == 1)
                n = snprintf(out + o, size - o, "%s%s=%.15g", o ? " " : "", p->name, v);
            else
                n = snprintf(out + o, size - o, "%s%s=%s", o ? " " : "", p->name, p->str);
        } else {
            n = snprintf(out + o, size - o, "%s%s=%.15g", o ? " " : "", p->name, p->num);
        }
        if (n < 0) break;
        o += (size_t)n;
    }
}

gr_status gr_workload_check_params(const gr_workload *wl, gr_error *err) {
    rctx c;
    memset(&c, 0, sizeof(c));
    c.wl = wl;
    c.err = err;
    char pnames[1024];
    gr_workload_param_names(wl, pnames, sizeof(pnames));
    snprintf(c.hint, sizeof(c.hint), "(params: %s)", pnames);
    int errors_before = err->count;
    check_params(&c);
    return err->count > errors_before ? err->code : GR_OK;
}

gr_status gr_plan_resolve(const gr_workload *wl, const char *variant, const gr_target *target,
                          gr_kernel_lookup lookup, gr_kernel_names names, gr_plan **out,
                          gr_error *err) {
    *out = NULL;
    gr_plan *plan = calloc(1, sizeof(*plan));
    if (!plan) return gr_error_set(err, GR_ERR_NOMEM, wl->path, "out of memory");
    rctx c;
    memset(&c, 0, sizeof(c));
    c.wl = wl;
    c.plan = plan;
    c.lookup = lookup;
    c.names = names;
    c.err = err;
    char pnames[1024];
    gr_workload_param_names(wl, pnames, sizeof(pnames));
    snprintf(c.hint, sizeof(c.hint), "(params: %s)", pnames);
    int errors_before = err->count;

    snprintf(plan->workload, sizeof(plan->workload), "%s", wl->name);
    snprintf(plan->variant, sizeof(plan->variant), "%s", variant);
    snprintf(plan->source, sizeof(plan->source), "%s", wl->path);
    plan->target = target ? *target : gr_target_default();
    stream_index(&c, "main", 1);
    c.stream_open[0] = 1;

    json_t *root = (json_t *)wl->root;
    check_params(&c);
    params_text(&c);
    walk_buffers(&c, json_object_get(root, "buffers"), "buffers");

    json_t *ops = json_object_get(root, "ops");
    json_t *outputs = json_object_get(root, "outputs");
    const char *outputs_path = "outputs";
    char opath[160];
    char vpath[128];
    snprintf(vpath, sizeof(vpath), "ops");
    if (!ops) {
        json_t *v = json_object_get(json_object_get(root, "variants"), variant);
        snprintf(vpath, sizeof(vpath), "variants.%s", variant);
        json_error_t jerr;
        const char *desc = NULL;
        json_t *vout = NULL;
        int isref = 0;
        static const gr_json_key vkeys[] = {{"ops", GR_JT_ARRAY, 1, "an array of ops"},
                                            {"description", GR_JT_STRING, 0, NULL},
                                            {"outputs", GR_JT_ARRAY, 0, "an array of outputs"},
                                            {"reference", GR_JT_BOOL, 0, NULL},
                                            {NULL, 0, 0, NULL}};
        if (!v) {
            gr_error_set(err, GR_ERR_USAGE, "--variant", "no variant \"%s\"", variant);
        } else if (gr_json_check_keys(v, vpath, vkeys, "a variant", err)) {
            ops = NULL;
        } else if (json_unpack_ex(v, &jerr, JSON_STRICT, "{s:o, s?:s, s?:o, s?:b}", "ops", &ops,
                                  "description", &desc, "outputs", &vout, "reference",
                                  &isref) != 0) {
            gr_error_set(err, GR_ERR_INPUT, vpath,
                         "%s (a variant is {\"ops\": [...], \"description\"?, \"outputs\"?, "
                         "\"reference\"?})",
                         jerr.text);
            ops = NULL;
        } else if (!json_is_array(ops)) {
            gr_error_set(err, GR_ERR_INPUT, vpath, "\"ops\" must be an array");
            ops = NULL;
        }
        if (vout) {
            outputs = vout;
            snprintf(opath, sizeof(opath), "%s.outputs", vpath);
            outputs_path = opath;
        }
        snprintf(vpath + strlen(vpath), sizeof(vpath) - strlen(vpath), ".ops");
    }
    if (ops && !c.fatal) walk_ops(&c, ops, vpath);
    for (int s = 1; s < plan->nstreams && !c.fatal; s++)
        if (c.stream_open[s])
            gr_error_set(err, GR_ERR_INPUT, plan->ops[c.stream_fork_op[s]].path,
                         "stream \"%s\" is forked here but never joined back; add {\"join\": "
                         "\"%s\"} before the end of the op list (a capture must rejoin every "
                         "forked stream)",
                         plan->streams[s], plan->streams[s]);
    if (json_is_array(outputs)) {
        if (json_array_size(outputs) == 0)
            gr_error_set(err, GR_ERR_INPUT, outputs_path, "list at least one output buffer to verify");
        resolve_outputs(&c, outputs, outputs_path);
    } else if (!outputs) {
        gr_error_set(err, GR_ERR_INPUT, outputs_path,
                     "missing: list the buffers to verify, e.g. \"outputs\": [\"y\"]");
    }
    if (!c.fatal) dataflow(&c, err->count == errors_before);
    plan->has_cpu_reference = 1;
    for (int i = 0; i < plan->nops; i++)
        if (plan->ops[i].kind == GR_OP_KERNEL &&
            (plan->ops[i].user || (plan->ops[i].kernel && !plan->ops[i].kernel->reference)))
            plan->has_cpu_reference = 0;
    if (wl->reference_variant[0]) {
        if (!strcmp(wl->reference_variant, variant))
            plan->is_reference_variant = 1;
        else
            snprintf(plan->reference_variant, sizeof(plan->reference_variant), "%s",
                     wl->reference_variant);
    }

    /* kernel checks: shapes and dtypes against the schema, launch dims, accounting */
    char last_problem[512] = "";
    int repeats = 0;
    for (int i = 0; i < plan->nops && !c.fatal; i++) {
        gr_op *op = &plan->ops[i];
        if (op->kind != GR_OP_KERNEL || !op->kernel) continue;
        op->launches = 1;
        size_t len_before = strlen(err->msg);
        int count_before = err->count;
        if (op->kernel->check && op->kernel->check(op, plan, err) != GR_OK) {
            /* The same problem in every iteration of a repeat block is reported once. (When
             * the message buffer is full nothing was appended: there is nothing to compare.) */
            if (strlen(err->msg) <= len_before + (len_before ? 1 : 0)) continue;
            const char *added = err->msg + len_before + (len_before ? 1 : 0);
            const char *what = strstr(added, ": ");
            what = what ? what + 2 : added;
            if (err->count == count_before + 1 && last_problem[0] && !strcmp(what, last_problem)) {
                err->msg[len_before] = '\0';
                err->count--;
                repeats++;
            } else {
                snprintf(last_problem, sizeof(last_problem), "%s", what);
            }
            continue;
        }
        plan->bytes_read += op->bytes_read;
        plan->bytes_written += op->bytes_written;
        plan->flops += op->flops;
        if (op->launches < 0) {
            plan->library_ops++;
            plan->kernels += 1;
        } else {
            plan->kernels += op->launches;
        }
    }
    if (repeats)
        gr_error_set(err, GR_ERR_INPUT, NULL, "(the same problem in %d more op%s)", repeats,
                     repeats == 1 ? "" : "s");
    if (c.unchecked_refs)
        gr_error_set(err, GR_ERR_INPUT, NULL,
                     "%s is not declared: it may be one of the buffers that failed above (%d such "
                     "reference%s; fix the buffers first)",
                     c.first_unchecked, c.unchecked_refs, c.unchecked_refs == 1 ? "" : "s");
    free(c.idx.slots);
    free(c.op_names.slots);
    free(c.failed_bufs);
    if (err->count != errors_before) {
        gr_plan_destroy(plan);
        return err->code;
    }
    *out = plan;
    return GR_OK;
}

void gr_plan_destroy(gr_plan *plan) {
    if (!plan) return;
    for (int i = 0; i < plan->nops; i++)
        if (plan->ops[i].user) {
            gr_module_unref(plan->ops[i].user->module);
            free(plan->ops[i].user->args);
            free(plan->ops[i].user);
        }
    free(plan->bufs);
    free(plan->ops);
    free(plan);
}

gr_status gr_plan_own_user_ops(gr_plan *p, gr_error *err) {
    for (int i = 0; i < p->nops; i++) {
        gr_user_op *u = p->ops[i].user;
        if (!u) continue;
        gr_user_op *c = malloc(sizeof(*c));
        gr_user_arg *a = malloc((size_t)(u->nargs + 1) * sizeof(*a));
        if (!c || !a) {
            free(c);
            free(a);
            for (int k = i; k < p->nops; k++) p->ops[k].user = NULL;
            return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
        }
        *c = *u;
        memcpy(a, u->args, (size_t)u->nargs * sizeof(*a));
        c->args = a;
        gr_module_ref(c->module);
        p->ops[i].user = c;
    }
    return GR_OK;
}

const gr_attr_val *gr_op_attr(const gr_op *op, const char *name) {
    for (int i = 0; i < op->nattrs; i++)
        if (!strcmp(op->attrs[i].name, name)) return &op->attrs[i];
    return NULL;
}

double gr_op_attr_num(const gr_op *op, const char *name, double dflt) {
    const gr_attr_val *v = gr_op_attr(op, name);
    return v ? v->num : dflt;
}

const char *gr_op_attr_str(const gr_op *op, const char *name, const char *dflt) {
    const gr_attr_val *v = gr_op_attr(op, name);
    return v && v->str[0] ? v->str : dflt;
}

gr_target gr_target_default(void) {
    gr_target t;
    memset(&t, 0, sizeof(t));
    snprintf(t.name, sizeof(t.name), "NVIDIA H200 (assumed; no device read)");
    t.sm_count = 132;
    t.cc_major = 9;
    t.cc_minor = 0;
    t.l2_bytes = 60u * 1024u * 1024u;
    return t;
}

gr_status gr_target_set_arch(gr_target *t, const char *arch, gr_error *err) {
    int major = 0, minor = 0;
    char suffix[4] = "";
    const char *p = arch;
    if (!strncmp(p, "sm_", 3) || !strncmp(p, "compute_", 8)) {
        p += p[0] == 's' ? 3 : 8;
        size_t nd = strspn(p, "0123456789");
        if (nd >= 2 && nd <= 3 && (!p[nd] || ((p[nd] == 'a' || p[nd] == 'f') && !p[nd + 1]))) {
            int v = atoi(p);
            major = v / 10;
            minor = v % 10;
            if (p[nd]) snprintf(suffix, sizeof(suffix), "%c", p[nd]);
        }
    } else if (strspn(p, "0123456789") >= 1 && strchr(p, '.')) {
        char *end;
        major = (int)strtol(p, &end, 10);
        if (*end == '.' && end[1] >= '0' && end[1] <= '9' && !end[2])
            minor = end[1] - '0';
        else
            major = 0;
    }
    if (major < 7 || major > 20)
        return gr_error_set(err, GR_ERR_USAGE, "--arch",
                            "\"%.40s\": expected an architecture such as sm_80, sm_90, sm_90a or "
                            "sm_100 (compute capability 7.5 or newer), or a compute capability "
                            "such as 8.6",
                            arch);
    t->cc_major = major;
    t->cc_minor = minor;
    t->from_device = 0;
    snprintf(t->arch, sizeof(t->arch), "sm_%d%d%s", major, minor, suffix);
    snprintf(t->name, sizeof(t->name), "%s (--arch; no device read, %d SMs assumed)", t->arch,
             t->sm_count);
    return GR_OK;
}

double gr_plan_input_bytes(const gr_plan *plan) {
    double s = 0;
    for (int b = 0; b < plan->nbufs; b++)
        if (plan->bufs[b].used && plan->bufs[b].first_write < 0) s += (double)plan->bufs[b].bytes;
    return s;
}

size_t gr_plan_scratch(const gr_plan *plan) {
    size_t m = 0;
    for (int i = 0; i < plan->nops; i++)
        if (plan->ops[i].kind == GR_OP_KERNEL && plan->ops[i].scratch > m) m = plan->ops[i].scratch;
    return m;
}
