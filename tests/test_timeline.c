/* CPU suite for the timeline exports (#8): the Chrome Trace Event JSON and the HTML report made
 * from every committed trace (the .jsonl files in tests/data) and from hand-made traces with known
 * answers, checked for structure (valid JSON, nesting per track, flows with both ends, monotonic
 * times, processes and tracks, kernel args) and against the analysis (analysis.c) computed
 * separately; the HTML's self-containment, both modes on one SVG scale, the gap histogram, the
 * tables; a headless Chromium screenshot of the report where Chromium is installed; graphrun's NVTX
 * ranges through an NVTX injection (a fresh process); the command-line options. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef GR_HAVE_ZLIB
#include <zlib.h>
#endif

#include "core/plan_print.h"
#include "cupti_tools/analysis.h"
#include "cupti_tools/chrome.h"
#include "cupti_tools/html.h"
#include "cupti_tools/trace.h"
#include "replay/load.h"
#include "replay/nvtx.h"
#include "replay/timeline.h"
#include "tests.h"
#include "timeline_util.h"

/* ---- shared helpers (timeline_util.h) ---- */

char tl_out[1 << 20];

/* The source tree: GR_SOURCE_DIR in the environment (a build carried to another machine), else
 * where it was configured. */
static const char *srcdir(void) {
    const char *env = getenv("GR_SOURCE_DIR");
    return env && env[0] ? env : GR_SOURCE_DIR;
}

const char *tl_bin(const char *name) {
    return gr_test_bin(name);
}

int tl_run(const char *fmt, ...) {
    char cmd[8192], full[8400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    snprintf(full, sizeof(full), "cd '%s' && ( %s ) 2>&1", srcdir(), cmd);
    FILE *p = popen(full, "r");
    if (!p) return -1;
    size_t n = fread(tl_out, 1, sizeof(tl_out) - 1, p);
    tl_out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

const char *tl_slurp(const char *path, size_t *len) {
    static char *buf;
    free(buf);
    buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        return NULL;
    }
    buf[n] = '\0';
    fclose(f);
    if (len) *len = (size_t)n;
    return buf;
}

size_t tl_count(const char *hay, const char *needle) {
    size_t n = 0, l = strlen(needle);
    for (const char *p = hay; p && (p = strstr(p, needle)); p += l)
        n++;
    return n;
}

int tl_has_name(char names[][160], int n, const char *needle) {
    for (int i = 0; i < n; i++)
        if (strstr(names[i], needle)) return 1;
    return 0;
}

int tl_has_thread(const tl_chrome *c, const char *needle) {
    for (int i = 0; i < c->nthreads; i++)
        if (strstr(c->threads[i], needle)) return 1;
    return 0;
}

typedef struct tev_t {
    int64_t pid, tid;
    int64_t ts, dur; /* ns */
    char ph;
    size_t seq;
    json_t *j;
} ev;

static int cmp_track_seq(const void *x, const void *y) {
    const ev *a = x, *b = y;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

static int cmp_track_time(const void *x, const void *y) {
    const ev *a = x, *b = y;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    return (a->dur < b->dur) - (a->dur > b->dur);
}

static int fail_rule(tl_chrome *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail_rule(tl_chrome *c, const char *fmt, ...) {
    if (c->ok) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->why, sizeof(c->why), fmt, ap);
        va_end(ap);
    }
    c->ok = 0;
    return 0;
}

static int64_t to_ns(json_t *v) {
    return (int64_t)llround(json_number_value(v) * 1000.0);
}

static int arr3(json_t *a) {
    if (!json_is_array(a) || json_array_size(a) != 3) return 0;
    for (size_t i = 0; i < 3; i++)
        if (!json_is_integer(json_array_get(a, i)) || json_integer_value(json_array_get(a, i)) < 1)
            return 0;
    return 1;
}

/* Is ts inside an X slice of the track (binary search over the time-sorted slices)? */
static int bound(const ev *xs, size_t lo, size_t hi, int64_t ts) {
    size_t a = lo, b = hi;
    while (a < b) {
        size_t m = (a + b) / 2;
        if (xs[m].ts <= ts)
            a = m + 1;
        else
            b = m;
    }
    for (size_t k = a, n = 0; k > lo && n < 512; k--, n++)
        if (xs[k - 1].ts <= ts && ts <= xs[k - 1].ts + xs[k - 1].dur) return 1;
    return 0;
}

int tl_check_chrome(const char *path, tl_chrome *c) {
    memset(c, 0, sizeof(*c));
    c->ok = 1;
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) return fail_rule(c, "%s:%d:%d: not JSON: %s", path, je.line, je.column, je.text);
    json_t *evs = json_object_get(root, "traceEvents");
    if (!json_is_array(evs)) {
        json_decref(root);
        return fail_rule(c, "no traceEvents array");
    }
    if (!json_is_string(json_object_get(root, "displayTimeUnit")))
        fail_rule(c, "no displayTimeUnit");
    size_t n = json_array_size(evs);
    ev *e = calloc(n + 1, sizeof(ev)), *xs = calloc(n + 1, sizeof(ev));
    size_t ne = 0, nx = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *j = json_array_get(evs, i);
        json_t *ph = json_object_get(j, "ph"), *pid = json_object_get(j, "pid"),
               *tid = json_object_get(j, "tid");
        if (!json_is_string(ph) || !json_is_integer(pid) || !json_is_integer(tid)) {
            fail_rule(c, "event %zu lacks ph, pid or tid", i);
            continue;
        }
        c->events++;
        const char *p = json_string_value(ph);
        json_t *args = json_object_get(j, "args");
        if (!strcmp(p, "M")) {
            c->meta++;
            const char *what = json_string_value(json_object_get(j, "name"));
            const char *nm = json_string_value(json_object_get(args, "name"));
            if (what && nm && !strcmp(what, "process_name") && c->nprocs < TL_MAX_NAMES)
                snprintf(c->procs[c->nprocs++], 160, "%s", nm);
            if (what && nm && !strcmp(what, "thread_name") && c->nthreads < TL_MAX_NAMES * 4)
                snprintf(c->threads[c->nthreads++], 128, "%s", nm);
            continue;
        }
        json_t *ts = json_object_get(j, "ts");
        if (!json_is_number(ts)) {
            fail_rule(c, "event %zu (%s) has no ts", i, p);
            continue;
        }
        ev x = {json_integer_value(pid), json_integer_value(tid), to_ns(ts), 0, p[0], i, j};
        if (!strcmp(p, "X")) {
            json_t *dur = json_object_get(j, "dur");
            const char *cat = json_string_value(json_object_get(j, "cat"));
            if (!json_is_number(dur) || json_number_value(dur) < 0 ||
                !json_is_string(json_object_get(j, "name")) || !cat) {
                fail_rule(c, "slice %zu lacks dur >= 0, name or cat", i);
                continue;
            }
            x.dur = to_ns(dur);
            c->slices++;
            if (strstr(cat, "kernel")) {
                c->kernels++;
                c->kernel_us += json_number_value(dur);
                int graph = strstr(cat, "graph") != NULL;
                if (!arr3(json_object_get(args, "grid")) || !arr3(json_object_get(args, "block")))
                    fail_rule(c, "kernel slice %zu lacks grid or block [x,y,z]", i);
                if (!json_is_integer(json_object_get(args, "correlation id")))
                    fail_rule(c, "kernel slice %zu lacks its correlation id", i);
                int op = json_is_string(json_object_get(args, "op"));
                c->kernels_with_op += op;
                if (graph) {
                    c->graph_kernels++;
                    c->graph_kernels_with_op += op;
                    if (!json_is_integer(json_object_get(args, "graph node id")))
                        fail_rule(c, "graph kernel slice %zu lacks its graph node id", i);
                } else {
                    c->eager_kernels_with_op += op;
                }
            } else if (strstr(cat, "nvtx")) {
                c->nvtx_slices++;
            } else if (strstr(cat, "api")) {
                c->api_slices++;
            } else if (strstr(cat, "memcpy") || strstr(cat, "memset")) {
                c->memops++;
            }
            xs[nx++] = x;
        } else if (strcmp(p, "s") != 0 && strcmp(p, "f") != 0) {
            fail_rule(c, "event %zu has an unexpected phase \"%s\"", i, p);
        }
        e[ne++] = x;
    }
    /* times never go back on a track, in file order */
    qsort(e, ne, sizeof(ev), cmp_track_seq);
    for (size_t i = 1; i < ne; i++)
        if (e[i].pid == e[i - 1].pid && e[i].tid == e[i - 1].tid && e[i].ts < e[i - 1].ts)
            fail_rule(c, "time goes back on track pid %lld tid %lld: %lld ns after %lld ns",
                      (long long)e[i].pid, (long long)e[i].tid, (long long)e[i].ts,
                      (long long)e[i - 1].ts);
    /* slices nest on every track */
    qsort(xs, nx, sizeof(ev), cmp_track_time);
    int64_t *stack = malloc((nx + 1) * sizeof(int64_t));
    size_t depth = 0;
    for (size_t i = 0; i < nx; i++) {
        if (i == 0 || xs[i].pid != xs[i - 1].pid || xs[i].tid != xs[i - 1].tid) depth = 0;
        int64_t s = xs[i].ts, en = xs[i].ts + xs[i].dur;
        while (depth > 0 && stack[depth - 1] <= s)
            depth--;
        if (depth > 0 && en > stack[depth - 1]) {
            fail_rule(c, "slices overlap without nesting on pid %lld tid %lld at %lld ns (\"%s\")",
                      (long long)xs[i].pid, (long long)xs[i].tid, (long long)s,
                      json_string_value(json_object_get(xs[i].j, "name")));
            continue;
        }
        stack[depth++] = en;
    }
    free(stack);
    /* flows: one start and one end per id, each bound inside a slice of its track */
    json_t *ids = json_object();
    for (size_t i = 0; i < ne; i++) {
        if (e[i].ph != 's' && e[i].ph != 'f') continue;
        json_t *id = json_object_get(e[i].j, "id");
        if (!json_is_integer(id)) {
            fail_rule(c, "flow event without an integer id");
            continue;
        }
        char key[32];
        snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(id));
        json_t *rec = json_object_get(ids, key);
        if (!rec) {
            rec = json_pack("{s:i, s:i}", "s", 0, "f", 0);
            json_object_set_new(ids, key, rec);
        }
        const char *k = e[i].ph == 's' ? "s" : "f";
        json_object_set_new(rec, k, json_integer(json_integer_value(json_object_get(rec, k)) + 1));
        /* the track's slices in xs: find its range */
        size_t lo = 0, hi = nx;
        while (lo < hi) {
            size_t m = (lo + hi) / 2;
            if (xs[m].pid < e[i].pid || (xs[m].pid == e[i].pid && xs[m].tid < e[i].tid))
                lo = m + 1;
            else
                hi = m;
        }
        size_t end = lo;
        while (end < nx && xs[end].pid == e[i].pid && xs[end].tid == e[i].tid)
            end++;
        if (!bound(xs, lo, end, e[i].ts))
            fail_rule(c, "flow %s end %s at %lld ns lies in no slice of its track", key, k,
                      (long long)e[i].ts);
        if (e[i].ph == 'f') {
            /* the slice it binds to: a graph kernel? */
            for (size_t q = end; q > lo; q--) {
                const ev *x = &xs[q - 1];
                if (x->ts <= e[i].ts && e[i].ts <= x->ts + x->dur) {
                    const char *cat = json_string_value(json_object_get(x->j, "cat"));
                    if (cat && strstr(cat, "graph")) c->graph_flows++;
                    break;
                }
            }
        }
    }
    const char *key;
    json_t *rec;
    json_object_foreach(ids, key, rec) {
        json_int_t s = json_integer_value(json_object_get(rec, "s")),
                   f = json_integer_value(json_object_get(rec, "f"));
        if (s != 1 || f != 1)
            fail_rule(c, "flow %s has %lld starts and %lld ends (want one each)", key, (long long)s,
                      (long long)f);
        else
            c->flows++;
    }
    json_decref(ids);
    free(e);
    free(xs);
    json_decref(root);
    return c->ok;
}

static char nvtx_tab_fields(char *line, char **f, int max) {
    int n = 0;
    char *p = line;
    while (n < max) {
        f[n++] = p;
        char *t = strchr(p, '\t');
        if (!t) break;
        *t = '\0';
        p = t + 1;
    }
    for (int i = n; i < max; i++)
        f[i] = NULL;
    return (char)n;
}

const char *tl_read_nvtx(const char *path, tl_nvtx_rec *out, const char *const *must) {
    static char missing[256];
    memset(out, 0, sizeof(*out));
    out->domain_id = -1;
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(missing, sizeof(missing), "(no record file %s: the injection did not load)", path);
        return missing;
    }
    size_t nmust = 0;
    while (must && must[nmust])
        nmust++;
    int *seen = calloc(nmust + 1, sizeof(int));
    char line[2048];
    size_t depth[64] = {0};
    unsigned long tids[64] = {0};
    int ntids = 0;
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        char *fl[6];
        nvtx_tab_fields(line, fl, 6);
        if (!strcmp(fl[0], "init"))
            out->inits++;
        else if (!strcmp(fl[0], "domain") && fl[2] && !strcmp(fl[2], "graphrun"))
            out->domain_id = atoi(fl[1]);
        else if (!strcmp(fl[0], "category") && fl[3] && atoi(fl[1]) == out->domain_id) {
            int id = atoi(fl[2]);
            if (id >= 0 && id < 8)
                snprintf(out->cat_name[id], sizeof(out->cat_name[id]), "%s", fl[3]);
        } else if ((!strcmp(fl[0], "push") || !strcmp(fl[0], "pop")) && fl[1] &&
                   atoi(fl[1]) == out->domain_id) {
            int push = fl[0][1] == 'u';
            unsigned long tid = strtoul(push ? fl[3] : fl[2], NULL, 10);
            int t = 0;
            while (t < ntids && tids[t] != tid)
                t++;
            if (t == ntids && ntids < 64) tids[ntids++] = tid;
            if (t >= 64) continue;
            if (!push) {
                out->pops++;
                if (depth[t] == 0)
                    out->unbalanced++;
                else
                    depth[t]--;
                continue;
            }
            out->pushes++;
            if (++depth[t] > out->max_depth) out->max_depth = depth[t];
            int cat = atoi(fl[2]);
            const char *msg = fl[5] ? fl[5] : "";
            if (cat >= 0 && cat < 8) {
                out->by_cat[cat]++;
                const char *st = strstr(msg, " step ");
                if (strstr(msg, " op "))
                    out->ops_by_cat[cat]++;
                else if (st) {
                    out->steps_by_cat[cat]++;
                    if (strtoull(fl[4], NULL, 10) == strtoull(st + 6, NULL, 10))
                        out->step_payload_ok++;
                } else
                    out->phases_by_cat[cat]++;
            }
            for (size_t k = 0; k < nmust; k++)
                if (strstr(msg, must[k])) seen[k] = 1;
        }
    }
    fclose(f);
    for (int t = 0; t < ntids; t++)
        out->unbalanced += depth[t];
    const char *miss = NULL;
    for (size_t k = 0; k < nmust && !miss; k++)
        if (!seen[k]) miss = must[k];
    free(seen);
    return miss;
}

size_t tl_nvtx_count(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[2048];
    size_t n = 0;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "push\t", 5) && strstr(line, needle)) n++;
    fclose(f);
    return n;
}

/* ---- fixtures ---- */

static const char *const fixtures[] = {
    "pointwise_fusion_n4096", "launch_bound_k200", "decode_step", "launch_bound_k200_injection",
    "torch_mlp_eager",        "torch_mlp_graph",   NULL};

static gr_trace *load_fixture(const char *name, char *path, size_t size) {
    snprintf(path, size, "%s/tests/data/%s.jsonl", srcdir(), name);
    gr_trace *t = NULL;
    gr_error e;
    gr_error_clear(&e);
    if (gr_trace_load(path, 0, &t, &e) != GR_OK) {
        fprintf(stderr, "\n    %s\n", e.msg);
        return NULL;
    }
    return t;
}

static const char *tmp_path(const char *suffix) {
    static char paths[8][256];
    static int slot;
    char *p = paths[slot++ % 8];
    snprintf(p, 256, "/tmp/gr_tl_%d_%d%s", (int)getpid(), slot, suffix);
    return p;
}

/* Independent counts from the trace itself: complete kernels, their total duration, and the
 * GPU records whose correlation id an API record carries (each must get a flow). */
typedef struct expect {
    size_t kernels, flows;
    double kernel_us;
} expect;

static expect expected(const gr_trace *t) {
    tl_expect x = tl_expected(t);
    return (expect){x.kernels, x.flows, x.kernel_us};
}

tl_expect tl_expected(const gr_trace *t) {
    tl_expect x;
    memset(&x, 0, sizeof(x));
    json_t *corrs = json_object();
    for (size_t i = 0; i < t->api.n; i++) {
        char k[24];
        snprintf(k, sizeof(k), "%u", t->api.v[i].corr);
        if (t->api.v[i].corr) json_object_set_new(corrs, k, json_true());
    }
    for (size_t i = 0; i < t->gpu.n; i++) {
        const gr_tr_gpu *g = &t->gpu.v[i];
        if (g->incomplete) continue;
        if (g->kind == GR_GPU_KERNEL) {
            x.kernels++;
            x.kernel_us += (double)(g->e - g->s) / 1000.0;
        }
        char k[24];
        snprintf(k, sizeof(k), "%u", g->corr);
        if (g->corr && json_object_get(corrs, k)) {
            x.flows++;
            if (g->kind == GR_GPU_KERNEL && (g->graph || g->node)) x.graph_flows++;
        }
    }
    json_decref(corrs);
    return x;
}

static void test_chrome_fixtures(void) {
    for (const char *const *f = fixtures; *f; f++) {
        char path[1024];
        gr_trace *t = load_fixture(*f, path, sizeof(path));
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        gr_error e;
        gr_error_clear(&e);
        gr_timeline *tl = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_timeline_build(t, path, 0, &tl, &e), GR_OK);
        const char *out = tmp_path(".json");
        CU_ASSERT_EQUAL_FATAL(gr_chrome_write(tl, out, &e), GR_OK);
        tl_chrome c;
        int ok = tl_check_chrome(out, &c);
        if (!ok) fprintf(stderr, "\n    %s: %s\n", *f, c.why);
        CU_ASSERT(ok);
        expect x = expected(t);
        CU_ASSERT_EQUAL(c.kernels, x.kernels);
        CU_ASSERT(fabs(c.kernel_us - x.kernel_us) <
                  1e-6 * (x.kernel_us + 1) + 0.001 * (double)x.kernels);
        /* a flow for every GPU op whose launch call was recorded, and only those */
        CU_ASSERT_EQUAL(c.flows, x.flows);
        CU_ASSERT_EQUAL(tl->flows, x.flows);
        /* a host API track wherever API records exist, a track per stream */
        CU_ASSERT_EQUAL(tl_has_thread(&c, "host API calls, thread"), t->api.n > 0);
        for (size_t i = 0; i < t->gpu.n; i++) {
            char want[64];
            snprintf(want, sizeof(want), "GPU stream %u", t->gpu.v[i].stream);
            if (!t->gpu.v[i].incomplete && !tl_has_thread(&c, want)) {
                fprintf(stderr, "\n    %s: no track \"%s\"\n", *f, want);
                CU_FAIL("a stream has no track");
                break;
            }
        }
        /* the analysis, computed separately: graph kernels mapped to ops */
        gr_ls_opts lo;
        gr_ls_opts_default(&lo);
        gr_ls_report *r = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_ls_analyze(t, &lo, &r, &e), GR_OK);
        CU_ASSERT_EQUAL(c.graph_kernels, r->all.graph_kernels);
        CU_ASSERT_EQUAL(c.graph_kernels_with_op, r->all.graph.mapped_op);
        if (t->op.n) {
            /* graphrun in-process: a process per variant and mode, every graph kernel tied to its
             * op */
            CU_ASSERT(c.graph_kernels > 0);
            CU_ASSERT_EQUAL(c.graph_kernels_with_op, c.graph_kernels);
            for (size_t i = 0; i < t->region.n; i++) {
                char want[160];
                const char *mode = gr_trace_str(t, t->region.v[i].mode);
                snprintf(want, sizeof(want), "%s: %s", gr_trace_str(t, t->region.v[i].variant),
                         !strcmp(mode, "eager") ? "eager run (traced" : "graph replay (traced");
                if (!tl_has_name(c.procs, c.nprocs, want)) {
                    fprintf(stderr, "\n    %s: no process \"%s\"\n", *f, want);
                    CU_FAIL("a region has no process");
                }
            }
            CU_ASSERT_EQUAL((size_t)c.nprocs,
                            t->region.n + 1); /* + setup/capture outside the runs */
        }
        if (t->api.n) {
            /* graph launches: each node's kernel has its own arrow from the one launch call */
            CU_ASSERT(c.api_slices > 0);
            CU_ASSERT_EQUAL(c.graph_flows, tl_expected(t).graph_flows);
            if (!strcmp(*f, "launch_bound_k200_injection"))
                CU_ASSERT_EQUAL(c.graph_flows, c.graph_kernels);
        }
        gr_ls_report_destroy(r);
        gr_timeline_destroy(tl);
        gr_trace_destroy(t);
        unlink(out);
    }
    /* every trace committed under tests/data is in the list above (capcheck_*.jsonl are
     * capture-check recordings, not traces), so a new fixture cannot go unexported */
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s/tests/data", srcdir());
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    size_t listed = 0, found = 0;
    while (fixtures[listed])
        listed++;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t l = strlen(ent->d_name);
        if (l < 7 || strcmp(ent->d_name + l - 6, ".jsonl") || !strncmp(ent->d_name, "capcheck_", 9))
            continue;
        int known = 0;
        for (size_t i = 0; i < listed; i++)
            known |= strlen(fixtures[i]) == l - 6 && !strncmp(fixtures[i], ent->d_name, l - 6);
        if (!known) fprintf(stderr, "\n    tests/data/%s is not in the fixture list", ent->d_name);
        CU_ASSERT_TRUE(known);
        found++;
    }
    closedir(d);
    printf("\n    %zu trace fixtures exported", found);
    CU_ASSERT_EQUAL(found, listed);
}

/* A hand-made trace with known answers: regions, an eager kernel launched by a runtime call with
 * a driver call nested inside (same correlation id), a graph launch of three nodes, two kernels
 * that overlap on one stream (as under PDL), and NVTX ranges. */
static const char *synthetic =
    "{\"t\":\"header\",\"schema_version\":1,\"tool\":\"cupti-launchstat\",\"tool_version\":\"0.1."
    "0\","
    "\"mode\":\"in-process\",\"t0\":1000,\"start_unix_ns\":1,\"pid\":7,\"command\":\"graphrun run "
    "x.json\","
    "\"device\":\"NVIDIA H200\",\"cc\":\"9.0\",\"driver_version\":13000,\"runtime_version\":13000,"
    "\"cupti_version\":130001,\"latency\":false,\"steps\":0,\"kinds\":\"kernel\",\"apis\":"
    "\"runtime\"}\n"
    "{\"t\":\"name\",\"id\":1,\"s\":\"cudaLaunchKernel_v7000\"}\n"
    "{\"t\":\"name\",\"id\":2,\"s\":\"cuLaunchKernel\"}\n"
    "{\"t\":\"name\",\"id\":3,\"s\":\"cudaGraphLaunch_v10000\"}\n"
    "{\"t\":\"name\",\"id\":4,\"s\":\"_Z4tinyPf\"}\n"
    "{\"t\":\"name\",\"id\":5,\"s\":\"_Z4widePf\"}\n"
    "{\"t\":\"op\",\"tag\":4294967297,\"variant\":\"v\",\"index\":0,\"name\":\"first\",\"kernel\":"
    "\"tiny\"}\n"
    "{\"t\":\"op\",\"tag\":4294967298,\"variant\":\"v\",\"index\":1,\"name\":\"second\",\"kernel\":"
    "\"wide\"}\n"
    "{\"t\":\"op\",\"tag\":4294967299,\"variant\":\"v\",\"index\":2,\"name\":\"third\",\"kernel\":"
    "\"tiny\"}\n"
    "{\"t\":\"node\",\"nid\":11,\"gid\":1,\"ty\":0,\"api\":\"cudaLaunchKernel\",\"corr\":50,"
    "\"tag\":4294967297}\n"
    "{\"t\":\"node\",\"nid\":12,\"gid\":1,\"ty\":0,\"api\":\"cudaLaunchKernel\",\"corr\":51,"
    "\"tag\":4294967298}\n"
    "{\"t\":\"node\",\"nid\":13,\"gid\":1,\"ty\":0,\"api\":\"cudaLaunchKernel\",\"corr\":52,"
    "\"tag\":4294967299}\n"
    "{\"t\":\"node\",\"nid\":21,\"gid\":2,\"ty\":0,\"orig\":11}\n"
    "{\"t\":\"node\",\"nid\":22,\"gid\":2,\"ty\":0,\"orig\":12}\n"
    "{\"t\":\"node\",\"nid\":23,\"gid\":2,\"ty\":0,\"orig\":13}\n"
    "{\"t\":\"region\",\"name\":\"v "
    "eager\",\"variant\":\"v\",\"mode\":\"eager\",\"s\":1000,\"e\":9000,\"steps\":1,"
    "\"traced_step_us\":7.5,\"untraced_step_us\":4.25}\n"
    "{\"t\":\"region\",\"name\":\"v "
    "graph\",\"variant\":\"v\",\"mode\":\"graph\",\"s\":10000,\"e\":20000,\"steps\":1,"
    "\"traced_step_us\":3.5,\"untraced_step_us\":1.75}\n"
    /* eager: three launches (the first with a nested driver call), the last two kernels overlap */
    "{\"t\":\"api\",\"d\":\"rt\",\"cb\":211,\"n\":1,\"s\":1100,\"e\":1900,\"tid\":7,\"corr\":1,"
    "\"ret\":0}\n"
    "{\"t\":\"api\",\"d\":\"drv\",\"cb\":307,\"n\":2,\"s\":1200,\"e\":1800,\"tid\":7,\"corr\":1,"
    "\"ret\":0}\n"
    "{\"t\":\"api\",\"d\":\"rt\",\"cb\":211,\"n\":1,\"s\":2000,\"e\":2600,\"tid\":7,\"corr\":2,"
    "\"ret\":0}\n"
    "{\"t\":\"api\",\"d\":\"rt\",\"cb\":211,\"n\":1,\"s\":2700,\"e\":3300,\"tid\":7,\"corr\":3,"
    "\"ret\":0}\n"
    "{\"t\":\"ext\",\"corr\":1,\"id\":4294967297,\"kind\":3}\n"
    "{\"t\":\"ext\",\"corr\":2,\"id\":4294967298,\"kind\":3}\n"
    "{\"t\":\"ext\",\"corr\":3,\"id\":4294967299,\"kind\":3}\n"
    "{\"t\":\"k\",\"n\":4,\"s\":2500,\"e\":3000,\"dev\":0,\"ctx\":1,\"str\":13,\"corr\":1,\"g\":[1,"
    "1,1],\"b\":[32,1,1],"
    "\"reg\":16,\"smem\":0}\n"
    "{\"t\":\"k\",\"n\":5,\"s\":3500,\"e\":5000,\"dev\":0,\"ctx\":1,\"str\":13,\"corr\":2,\"g\":["
    "132,1,1],"
    "\"b\":[256,1,1],\"reg\":32,\"smem\":0}\n"
    "{\"t\":\"k\",\"n\":4,\"s\":4500,\"e\":5500,\"dev\":0,\"ctx\":1,\"str\":13,\"corr\":3,\"g\":[1,"
    "1,1],\"b\":[32,1,1],"
    "\"reg\":16,\"smem\":0}\n"
    /* graph: one launch call, three node kernels back to back */
    "{\"t\":\"api\",\"d\":\"rt\",\"cb\":311,\"n\":3,\"s\":10100,\"e\":11000,\"tid\":7,\"corr\":60,"
    "\"ret\":0}\n"
    "{\"t\":\"k\",\"n\":4,\"s\":11500,\"e\":12000,\"dev\":0,\"ctx\":1,\"str\":13,\"corr\":60,\"g\":"
    "[1,1,1],"
    "\"b\":[32,1,1],\"reg\":16,\"smem\":0,\"gid\":2,\"nid\":21}\n"
    "{\"t\":\"k\",\"n\":5,\"s\":12100,\"e\":13500,\"dev\":0,\"ctx\":1,\"str\":13,\"corr\":60,\"g\":"
    "[132,1,1],"
    "\"b\":[256,1,1],\"reg\":32,\"smem\":0,\"gid\":2,\"nid\":22}\n"
    "{\"t\":\"k\",\"n\":4,\"s\":13600,\"e\":14000,\"dev\":0,\"ctx\":1,\"str\":13,\"corr\":60,\"g\":"
    "[1,1,1],"
    "\"b\":[32,1,1],\"reg\":16,\"smem\":0,\"gid\":2,\"nid\":23}\n"
    /* NVTX ranges graphrun wrote while tracing itself: a phase, a step, an op (eager) */
    "{\"t\":\"nvtx\",\"dom\":\"graphrun\",\"cat\":\"eager\",\"lvl\":\"op\",\"msg\":\"x/v op 0 "
    "first (tiny)\","
    "\"wl\":\"x\",\"variant\":\"v\",\"op\":0,\"s\":1050,\"e\":1950,\"tid\":7}\n"
    "{\"t\":\"nvtx\",\"dom\":\"graphrun\",\"cat\":\"eager\",\"lvl\":\"step\",\"msg\":\"x/v eager "
    "step 1\","
    "\"wl\":\"x\",\"variant\":\"v\",\"step\":1,\"s\":1040,\"e\":3400,\"tid\":7}\n"
    "{\"t\":\"nvtx\",\"dom\":\"graphrun\",\"cat\":\"eager\",\"lvl\":\"phase\",\"msg\":\"x/v eager "
    "timing\","
    "\"wl\":\"x\",\"variant\":\"v\",\"s\":1030,\"e\":8000,\"tid\":7}\n"
    "{\"t\":\"end\",\"records\":14,\"dropped\":0,\"buffers\":1,\"buffer_bytes\":1,\"waits\":0,"
    "\"refused\":0,"
    "\"write_errors\":0,\"callback_errors\":0,\"e\":30000,\"reason\":\"exit\"}\n";

static gr_trace *load_synthetic(const char **path) {
    *path = gr_test_tmpfile(".jsonl", synthetic, strlen(synthetic));
    gr_trace *t = NULL;
    gr_error e;
    gr_error_clear(&e);
    if (gr_trace_load(*path, 0, &t, &e) != GR_OK) fprintf(stderr, "\n    %s\n", e.msg);
    return t;
}

static json_t *find_slice(json_t *evs, const char *name, int nth) {
    size_t i;
    json_t *v;
    json_array_foreach(evs, i, v) {
        const char *ph = json_string_value(json_object_get(v, "ph")),
                   *nm = json_string_value(json_object_get(v, "name"));
        if (ph && !strcmp(ph, "X") && nm && !strcmp(nm, name) && nth-- == 0) return v;
    }
    return NULL;
}

static void test_chrome_synthetic(void) {
    const char *path;
    gr_trace *t = load_synthetic(&path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    gr_error e;
    gr_error_clear(&e);
    gr_timeline *tl = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_timeline_build(t, path, 0, &tl, &e), GR_OK);
    CU_ASSERT_EQUAL(tl->nnvtx, 3);
    CU_ASSERT_EQUAL(tl->flows, 6); /* 3 eager kernels + 3 graph nodes */
    const char *out = tmp_path(".json");
    CU_ASSERT_EQUAL_FATAL(gr_chrome_write(tl, out, &e), GR_OK);
    tl_chrome c;
    int ok = tl_check_chrome(out, &c);
    if (!ok) fprintf(stderr, "\n    %s\n", c.why);
    CU_ASSERT(ok);
    CU_ASSERT_EQUAL(c.kernels, 6);
    CU_ASSERT_EQUAL(c.flows, 6);
    CU_ASSERT_EQUAL(c.graph_flows, 3);
    CU_ASSERT_EQUAL(c.kernels_with_op,
                    6); /* eager by external correlation, graph through the clones */
    CU_ASSERT_EQUAL(c.eager_kernels_with_op, 3);
    {
        gr_ls_opts lo;
        gr_ls_opts_default(&lo);
        gr_ls_report *an = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_ls_analyze(t, &lo, &an, &e), GR_OK);
        CU_ASSERT_EQUAL(c.eager_kernels_with_op, an->all.kernels_with_op - an->all.graph.mapped_op);
        CU_ASSERT_EQUAL(c.graph_flows, tl_expected(t).graph_flows);
        gr_ls_report_destroy(an);
    }
    CU_ASSERT_EQUAL(c.nvtx_slices, 3);
    CU_ASSERT_EQUAL(c.api_slices, 5);
    CU_ASSERT_EQUAL(c.nprocs, 2); /* everything lies inside the two runs */
    CU_ASSERT(tl_has_name(c.procs, c.nprocs, "v: eager run (traced, 1 steps)"));
    CU_ASSERT(tl_has_name(c.procs, c.nprocs, "v: graph replay (traced, 1 steps)"));
    CU_ASSERT(tl_has_thread(&c, "host API calls, thread 7"));
    CU_ASSERT(tl_has_thread(&c, "NVTX ranges, thread 7"));
    CU_ASSERT(tl_has_thread(&c, "GPU stream 13"));
    CU_ASSERT(tl_has_thread(&c, "GPU stream 13, overlap 1")); /* the overlapping kernel's lane */
    CU_ASSERT(tl_has_thread(&c, "run (traced)"));

    json_t *root = json_load_file(out, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    json_t *evs = json_object_get(root, "traceEvents");
    /* the graph launch's three arrows start on its one call and have three distinct ids */
    json_t *gl = find_slice(evs, "cudaGraphLaunch", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gl);
    int64_t gpid = json_integer_value(json_object_get(gl, "pid")),
            gtid = json_integer_value(json_object_get(gl, "tid"));
    double gs = json_number_value(json_object_get(gl, "ts")),
           ge = gs + json_number_value(json_object_get(gl, "dur"));
    size_t i, starts = 0;
    json_t *v;
    json_int_t ids[8];
    json_array_foreach(evs, i, v) {
        const char *ph = json_string_value(json_object_get(v, "ph"));
        if (!ph || strcmp(ph, "s") != 0 || json_integer_value(json_object_get(v, "pid")) != gpid ||
            json_integer_value(json_object_get(v, "tid")) != gtid)
            continue;
        double ts = json_number_value(json_object_get(v, "ts"));
        if (ts < gs || ts > ge) continue;
        if (starts < 8) ids[starts] = json_integer_value(json_object_get(v, "id"));
        starts++;
    }
    CU_ASSERT_EQUAL(starts, 3);
    if (starts == 3) CU_ASSERT(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
    /* the eager launch's arrow starts on the runtime call, not on the driver call inside it */
    json_t *rt = find_slice(evs, "cudaLaunchKernel", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rt);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(rt, "args"), "api")),
                           "cudaLaunchKernel_v7000");
    json_t *drv = find_slice(evs, "cuLaunchKernel", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(drv);
    CU_ASSERT_PTR_NOT_NULL(json_object_get(json_object_get(drv, "args"), "nested"));
    /* kernel args: grid, block, graph node id, op; times in us with ns precision */
    json_t *wide = find_slice(evs, "wide(float*)", 1); /* the graph's */
    CU_ASSERT_PTR_NOT_NULL_FATAL(wide);
    json_t *a = json_object_get(wide, "args");
    CU_ASSERT_EQUAL(json_integer_value(json_array_get(json_object_get(a, "grid"), 0)), 132);
    CU_ASSERT_EQUAL(json_integer_value(json_array_get(json_object_get(a, "block"), 0)), 256);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(a, "graph node id")), 22);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(a, "op")), "second");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(a, "launched by")), "cudaGraphLaunch");
    CU_ASSERT_EQUAL(to_ns(json_object_get(wide, "ts")), 12100);
    CU_ASSERT_EQUAL(to_ns(json_object_get(wide, "dur")), 1400);
    json_t *eager_wide = find_slice(evs, "wide(float*)", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(eager_wide);
    CU_ASSERT_PTR_NULL(json_object_get(json_object_get(eager_wide, "args"), "graph node id"));
    CU_ASSERT_STRING_EQUAL(
        json_string_value(json_object_get(json_object_get(eager_wide, "args"), "op")), "second");
    /* NVTX ranges as slices, nested phase > step > op on one track */
    json_t *step = find_slice(evs, "x/v eager step 1", 0),
           *phase = find_slice(evs, "x/v eager timing", 0);
    CU_ASSERT_PTR_NOT_NULL(step);
    CU_ASSERT_PTR_NOT_NULL(phase);
    CU_ASSERT_PTR_NOT_NULL(find_slice(evs, "x/v op 0 first (tiny)", 0));
    if (step) CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(step, "cat")), "nvtx,eager");
    json_decref(root);

    /* the run processes and the proc lookup */
    CU_ASSERT_EQUAL(gr_tl_find_proc(tl, "v graph", &e), 1);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_tl_find_proc(tl, "nope", &e), -1);
    GR_ASSERT_CONTAINS(e.msg, "has no region \"nope\"; its regions are: \"v eager\", \"v graph\"");
    gr_timeline_destroy(tl);
    gr_trace_destroy(t);
    unlink(out);
}

static void test_chrome_errors(void) {
    const char *path;
    gr_trace *t = load_synthetic(&path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    gr_error e;
    gr_error_clear(&e);
    gr_timeline *tl = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_timeline_build(t, NULL, 0, &tl, &e), GR_OK);
    CU_ASSERT_EQUAL(tl->nnvtx, 0); /* no file to read ranges from */
    CU_ASSERT_EQUAL(gr_chrome_write(tl, "/nonexistent/dir/t.json", &e), GR_ERR_IO);
    GR_ASSERT_CONTAINS(e.msg, "/nonexistent/dir/t.json: cannot write the timeline");
    GR_ASSERT_CONTAINS(e.msg, "does the directory exist");
    gr_timeline_destroy(tl);
    /* a damaged nvtx record names its line */
    char *bad = malloc(strlen(synthetic) + 256);
    strcpy(bad, synthetic);
    char *end = strstr(bad, "{\"t\":\"end\"");
    strcpy(end, "{\"t\":\"nvtx\",\"dom\":\"graphrun\",\"msg\":\"m\",\"s\":5,\"tid\":7}\n");
    strcat(bad, strstr(synthetic, "{\"t\":\"end\""));
    const char *bp = gr_test_tmpfile(".jsonl", bad, strlen(bad));
    gr_trace *t2 = NULL;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_trace_load(bp, 0, &t2, &e), GR_OK);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_timeline_build(t2, bp, 0, &tl, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, ".jsonl:35:1: "); /* the damaged record is line 35 */
    GR_ASSERT_CONTAINS(e.msg, "nvtx record: \"e\" must be a whole number");
    CU_ASSERT_PTR_NULL(tl);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_timeline_build(t2, "/nonexistent/t.jsonl", 0, &tl, &e), GR_ERR_IO);
    GR_ASSERT_CONTAINS(e.msg, "/nonexistent/t.jsonl: cannot read the trace again");
    free(bad);
    gr_trace_destroy(t2);
    gr_trace_destroy(t);
}

/* ---- HTML ---- */

static int load_plans(const char *workload, const char *set, gr_loaded *l) {
    gr_error e;
    gr_error_clear(&e);
    const char *sets[1] = {set};
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", srcdir(), workload);
    gr_load_req req = {path, NULL, sets, set ? 1 : 0, NULL, 0, NULL, 0};
    gr_target tg = gr_target_default();
    if (gr_load_resolve(&req, &tg, l, &e) != GR_OK) {
        fprintf(stderr, "\n    %s\n", e.msg);
        return 0;
    }
    return 1;
}

/* The text between the n-th `open` and the following `close`. */
static const char *section(const char *html, const char *open, int n, const char *close, char *buf,
                           size_t size) {
    const char *p = html;
    for (int i = 0; p && i <= n; i++) {
        p = strstr(p, open);
        if (p && i < n) p += strlen(open);
    }
    if (!p) return NULL;
    const char *q = strstr(p, close);
    if (!q) return NULL;
    size_t len = (size_t)(q - p) + strlen(close);
    if (len >= size) len = size - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    return buf;
}

static long attr_long(const char *s, const char *attr) {
    char key[64];
    snprintf(key, sizeof(key), "%s=\"", attr);
    const char *p = strstr(s, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

void tl_check_self_contained(const char *html) {
    CU_ASSERT_PTR_NULL(strstr(html, "http://"));
    CU_ASSERT_PTR_NULL(strstr(html, "https://"));
    CU_ASSERT_PTR_NULL(strstr(html, "<script"));
    CU_ASSERT_PTR_NULL(strstr(html, "src="));
    CU_ASSERT_PTR_NULL(strstr(html, "<link"));
    CU_ASSERT_PTR_NULL(strstr(html, "url("));
    CU_ASSERT_PTR_NULL(strstr(html, "@import"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "<!DOCTYPE html>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "</html>"));
}

const char *tl_fmt_num(double v) { /* the report's number format (html.c num) */
    static char bufs[4][32];
    static int k;
    char *b = bufs[k++ % 4];
    double a = fabs(v);
    if (a < 10)
        snprintf(b, 32, "%.2f", v);
    else if (a < 1000)
        snprintf(b, 32, "%.1f", v);
    else
        snprintf(b, 32, "%.0f", v);
    return b;
}

/* Writes the pointwise fixture's report with plans resolved here and made-up untraced rows. */
static const char *write_pointwise_html(gr_loaded *l, gr_timeline **tlp, gr_trace **tp,
                                        gr_html_timing *rows) {
    char path[1024];
    gr_trace *t = load_fixture("pointwise_fusion_n4096", path, sizeof(path));
    if (!t || !load_plans("workloads/pointwise_fusion.json", "n=4096", l)) return NULL;
    gr_error e;
    gr_error_clear(&e);
    gr_timeline *tl = NULL;
    if (gr_timeline_build(t, path, 0, &tl, &e) != GR_OK) return NULL;
    static gr_html_figure figs[8];
    size_t nf = gr_html_mode_figures(tl, figs, 8);
    for (int i = 0; i < l->nplans; i++) {
        memset(&rows[i], 0, sizeof(rows[i]));
        snprintf(rows[i].variant, sizeof(rows[i].variant), "%s", l->plans[i]->variant);
        rows[i].kernels = l->plans[i]->kernels;
        double base = 11.0 + 3 * i;
        double eu[3] = {base + 1, base, base + 2}, gv[3] = {base / 3 + 0.5, base / 3, base / 3 + 1};
        rows[i].eager_us = gr_summarize(eu, 3);
        rows[i].graph_us = gr_summarize(gv, 3);
        rows[i].eager_submit_us = 3.25;
        rows[i].graph_submit_us = 1.5;
    }
    static double floors[16]; /* the caller's floors: here all bytes at 4000 GB/s */
    for (int i = 0; i < l->nplans && i < 16; i++)
        floors[i] = (l->plans[i]->bytes_read + l->plans[i]->bytes_written) / (4000.0 * 1e9) * 1e6;
    gr_html_doc d = {"pointwise_fusion",
                     "n=4096; NVIDIA H200",
                     "graphrun run workloads/pointwise_fusion.json",
                     "CUDA events around batches",
                     rows,
                     l->nplans,
                     (const gr_plan *const *)l->plans,
                     l->nplans,
                     floors,
                     "bytes at 4000 GB/s (test)",
                     figs,
                     (int)nf};
    const char *out = tmp_path(".html");
    if (gr_html_write(&d, out, &e) != GR_OK) {
        fprintf(stderr, "\n    %s\n", e.msg);
        return NULL;
    }
    *tlp = tl;
    *tp = t;
    return out;
}

static void test_html_report(void) {
    gr_loaded l;
    gr_timeline *tl = NULL;
    gr_trace *t = NULL;
    gr_html_timing rows[8];
    const char *out = write_pointwise_html(&l, &tl, &t, rows);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    size_t len;
    const char *html = tl_slurp(out, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    tl_check_self_contained(html);
    /* one figure per variant; in each, both modes in one SVG (one time scale) */
    CU_ASSERT_EQUAL(tl_count(html, "<svg class=\"timeline\""), 3);
    CU_ASSERT_EQUAL(tl_count(html, "data-us-per-px="), 3);
    CU_ASSERT_EQUAL(tl_count(html, "<svg class=\"gaphist\""), 3);
    gr_ls_opts lo;
    gr_ls_opts_default(&lo);
    gr_ls_report *r = NULL;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_ls_analyze(t, &lo, &r, &e), GR_OK);
    static const char *const variants[] = {"unfused", "fused", "fused_vec"};
    static const int kernels[] = {3, 1, 1};
    static char fig[1 << 18];
    for (int v = 0; v < 3; v++) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(
            section(html, "<section class=\"figure\"", v, "</section>", fig, sizeof(fig)));
        char want[96];
        snprintf(want, sizeof(want), "<h2>%s: eager vs graph replay", variants[v]);
        GR_ASSERT_CONTAINS(fig, want);
        static char svg[1 << 17], band[1 << 16];
        CU_ASSERT_PTR_NOT_NULL_FATAL(
            section(fig, "<svg class=\"timeline\"", 0, "</svg>", svg, sizeof(svg)));
        /* both bands in the one SVG, with their kernels as boxes */
        for (int b = 0; b < 2; b++) {
            CU_ASSERT_PTR_NOT_NULL_FATAL(
                section(svg, "<g class=\"band\"", b, "</g>", band, sizeof(band)));
            GR_ASSERT_CONTAINS(band, b == 0 ? "data-mode=\"a\"" : "data-mode=\"b\"");
            GR_ASSERT_CONTAINS(band, b == 0 ? "eager (traced)" : "graph replay (traced)");
            CU_ASSERT_EQUAL(attr_long(band, "data-kernels"), kernels[v]);
            CU_ASSERT_EQUAL(tl_count(band, "<rect class=\"k\""), (size_t)kernels[v]);
            long step = attr_long(band, "data-step"), steps = attr_long(band, "data-steps");
            CU_ASSERT_EQUAL(steps, 23); /* region steps (eager) and graph launches (graph) */
            CU_ASSERT(step > steps / 2 && step < steps); /* a step after the warm-up */
            GR_ASSERT_CONTAINS(band, "GPU stream");
        }
        /* gap histogram: as many gaps as the analysis finds in each run */
        static char hist[1 << 15];
        CU_ASSERT_PTR_NOT_NULL_FATAL(
            section(fig, "<svg class=\"gaphist\"", 0, "</svg>", hist, sizeof(hist)));
        const gr_ls_scope *ea = NULL, *ga = NULL;
        for (size_t k = 0; k < r->nregions; k++) {
            if (!strcmp(r->regions[k].variant, variants[v]) && !strcmp(r->regions[k].mode, "eager"))
                ea = &r->regions[k];
            if (!strcmp(r->regions[k].variant, variants[v]) && !strcmp(r->regions[k].mode, "graph"))
                ga = &r->regions[k];
        }
        CU_ASSERT_PTR_NOT_NULL_FATAL(ea);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ga);
        snprintf(want, sizeof(want), "data-gaps=\"%zu,%zu\"", ea->gap_us.n, ga->gap_us.n);
        GR_ASSERT_CONTAINS(hist, want);
        snprintf(want, sizeof(want), "eager: %zu gaps, %s us in all", ea->gap_us.n,
                 tl_fmt_num(ea->gap_us.mean * (double)ea->gap_us.n));
        GR_ASSERT_CONTAINS(hist, want);
        snprintf(want, sizeof(want), "graph replay: %zu gaps", ga->gap_us.n);
        GR_ASSERT_CONTAINS(hist, want);
    }
    /* every kernel box of a variant shares its kernel's colour: unfused has three kernels */
    CU_ASSERT(tl_count(html, "data-kernel=\"0\"") >= 2);
    CU_ASSERT(tl_count(html, "data-kernel=\"2\"") >= 2);
    /* labelled traced; the untraced table is the measurement */
    GR_ASSERT_CONTAINS(html, "Timelines are traced");
    static char tab[1 << 15];
    CU_ASSERT_PTR_NOT_NULL_FATAL(
        section(html, "<table class=\"timing\"", 0, "</table>", tab, sizeof(tab)));
    for (int i = 0; i < l.nplans; i++) {
        char want[128];
        snprintf(want, sizeof(want), "<tr><td>%s</td><td>%d</td><td>%s", rows[i].variant,
                 rows[i].kernels, tl_fmt_num(rows[i].eager_us.median));
        GR_ASSERT_CONTAINS(tab, want);
        snprintf(want, sizeof(want), "%.2fx", rows[i].eager_us.median / rows[i].graph_us.median);
        GR_ASSERT_CONTAINS(tab, want);
    }
    GR_ASSERT_CONTAINS(tab, "untraced");
    GR_ASSERT_CONTAINS(tab, "traced");
    /* traced column: the regions' CUDA-event step time */
    GR_ASSERT_CONTAINS(tab, tl_fmt_num(r->regions[0].traced_event_step_us));
    /* HBM accounting from the plans, with the floor at 4000 GB/s */
    CU_ASSERT_PTR_NOT_NULL_FATAL(
        section(html, "<table class=\"hbm\"", 0, "</table>", tab, sizeof(tab)));
    for (int i = 0; i < l.nplans; i++) {
        const gr_plan *p = l.plans[i];
        char bytes[24], want[160];
        gr_fmt_bytes(p->bytes_read + p->bytes_written, bytes, sizeof(bytes));
        snprintf(want, sizeof(want), "<tr><td>%s</td><td>%d</td>", p->variant, p->kernels);
        GR_ASSERT_CONTAINS(tab, want);
        GR_ASSERT_CONTAINS(tab, bytes);
        double floor_us = (p->bytes_read + p->bytes_written) / (4000.0 * 1e9) * 1e6;
        snprintf(want, sizeof(want), "<td>%s</td><td>%s</td>", tl_fmt_num(floor_us),
                 tl_fmt_num(rows[i].eager_us.median / floor_us));
        GR_ASSERT_CONTAINS(tab, want);
    }
    GR_ASSERT_CONTAINS(tab, "(baseline)");
    CU_ASSERT_EQUAL(tl_count(tab, "<tr><td>"), 3);
    GR_ASSERT_CONTAINS(html, "<b>unfused</b>: eager"); /* the headline */
    gr_ls_report_destroy(r);
    gr_loaded_free(&l);
    gr_timeline_destroy(tl);
    gr_trace_destroy(t);
    unlink(out);
}

/* Steps picked from each kind of fixture: graph launches, region steps, op tags; a trace without
 * steps falls back to a window from the middle of the run. */
static void test_html_steps(void) {
    struct {
        const char *fixture, *region;
        int graph;
        size_t kernels;
    } cases[] = {{"launch_bound_k200", "tiny eager", 0, 200},
                 {"launch_bound_k200", "tiny graph", 1, 200},
                 {"decode_step", "unfused graph", 1, 0},
                 {"decode_step", "fused eager", 0, 0},
                 {"torch_mlp_graph", NULL, 1, 0},
                 {"launch_bound_k200_injection", NULL, 0, 0}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char path[1024];
        gr_trace *t = load_fixture(cases[c].fixture, path, sizeof(path));
        CU_ASSERT_PTR_NOT_NULL_FATAL(t);
        gr_error e;
        gr_error_clear(&e);
        gr_timeline *tl = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_timeline_build(t, path, 0, &tl, &e), GR_OK);
        int proc = gr_tl_find_proc(tl, cases[c].region, &e);
        CU_ASSERT_FATAL(proc >= 0);
        gr_html_step st;
        CU_ASSERT_EQUAL_FATAL(gr_html_pick_step(tl, proc, &st, &e), GR_OK);
        CU_ASSERT(st.ok);
        CU_ASSERT_EQUAL(st.graph, cases[c].graph);
        if (cases[c].kernels) CU_ASSERT_EQUAL(st.kernels, cases[c].kernels);
        CU_ASSERT(st.kernels > 0);
        CU_ASSERT(st.e > st.s && st.w0 <= st.s);
        CU_ASSERT(st.busy_us > 0 && st.busy_us <= st.span_us + 1e-9);
        /* every op of the step lies in the window and belongs to the run */
        for (size_t k = 0; k < st.ngpu; k++) {
            const gr_tr_gpu *g = &t->gpu.v[st.gpu[k]];
            CU_ASSERT(g->s >= st.s && g->e <= st.e);
            CU_ASSERT_EQUAL(tl->gpu_proc[st.gpu[k]], proc);
        }
        if (cases[c].graph) {
            /* a graph step is one graph launch: one correlation id among its graph kernels */
            uint32_t corr = 0;
            for (size_t k = 0; k < st.ngpu; k++) {
                const gr_tr_gpu *g = &t->gpu.v[st.gpu[k]];
                if (!g->graph && !g->node) continue;
                if (!corr) corr = g->corr;
                CU_ASSERT_EQUAL(g->corr, corr);
            }
        }
        if (!strcmp(cases[c].fixture, "decode_step")) {
            /* the same step in both modes launches the same kernels */
            int other = gr_tl_find_proc(
                tl, !strcmp(cases[c].region, "unfused graph") ? "unfused eager" : "fused graph",
                &e);
            gr_html_step s2;
            CU_ASSERT_EQUAL_FATAL(gr_html_pick_step(tl, other, &s2, &e), GR_OK);
            CU_ASSERT_EQUAL(s2.kernels, st.kernels);
            gr_html_step_free(&s2);
        }
        if (!strcmp(cases[c].fixture, "launch_bound_k200_injection"))
            GR_ASSERT_CONTAINS(st.why, "give --steps");
        gr_html_step_free(&st);
        /* the histogram counts what the analysis counts */
        gr_html_gaps gh;
        gr_html_proc_gaps(tl, proc, &gh);
        size_t sum = 0;
        for (int b = 0; b < GR_HTML_GAP_BINS; b++)
            sum += gh.count[b];
        CU_ASSERT_EQUAL(sum, gh.n);
        gr_ls_opts lo;
        gr_ls_opts_default(&lo);
        gr_ls_report *r = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_ls_analyze(t, &lo, &r, &e), GR_OK);
        const gr_ls_scope *sc = gr_ls_main_scope(r, cases[c].region, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(sc);
        CU_ASSERT_EQUAL(gh.n, sc->gap_us.n);
        CU_ASSERT(fabs(gh.total_us - sc->gap_us.mean * (double)sc->gap_us.n) <
                  1e-6 * (gh.total_us + 1));
        gr_ls_report_destroy(r);
        gr_timeline_destroy(tl);
        gr_trace_destroy(t);
    }
}

/* ---- the command line ---- */

static void test_cli_launchstat_exports(void) {
    const char *j = tmp_path(".json"), *h = tmp_path(".html");
    CU_ASSERT_EQUAL(tl_run("'%s' report --help", tl_bin("cupti-launchstat")), 0);
    GR_ASSERT_CONTAINS(tl_out, "--chrome FILE");
    GR_ASSERT_CONTAINS(tl_out, "--html FILE");
    CU_ASSERT_EQUAL(tl_run("'%s' report tests/data/launch_bound_k200.jsonl --chrome %s --html %s",
                           tl_bin("cupti-launchstat"), j, h),
                    0);
    GR_ASSERT_CONTAINS(tl_out, "timeline written to");
    GR_ASSERT_CONTAINS(tl_out, "HTML report written to");
    tl_chrome c;
    int ok = tl_check_chrome(j, &c);
    if (!ok) fprintf(stderr, "\n    %s\n", c.why);
    CU_ASSERT(ok);
    CU_ASSERT(tl_has_name(c.procs, c.nprocs, "tiny: eager run"));
    CU_ASSERT(tl_has_name(c.procs, c.nprocs, "empty: graph replay"));
    const char *html = tl_slurp(h, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    tl_check_self_contained(html);
    CU_ASSERT_EQUAL(tl_count(html, "<svg class=\"timeline\""), 2);
    GR_ASSERT_CONTAINS(html, "HBM accounting</h2>\n<p class=\"how\">Not available");
    /* --compare: TRACE's run above OTHER's on one scale */
    CU_ASSERT_EQUAL(tl_run("'%s' report tests/data/torch_mlp_eager.jsonl --compare "
                           "tests/data/torch_mlp_graph.jsonl --html %s",
                           tl_bin("cupti-launchstat"), h),
                    0);
    html = tl_slurp(h, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    CU_ASSERT_EQUAL(tl_count(html, "<svg class=\"timeline\""), 1);
    CU_ASSERT_EQUAL(tl_count(html, "<g class=\"band\""), 2);
    GR_ASSERT_CONTAINS(html, "torch_mlp_eager.jsonl: profiler range 1 (traced)");
    GR_ASSERT_CONTAINS(html, "torch_mlp_graph.jsonl: profiler range 1 (traced)");
    /* errors name the place */
    CU_ASSERT_EQUAL(
        tl_run(
            "'%s' report tests/data/pointwise_fusion_n4096.jsonl --chrome /nonexistent/dir/t.json",
            tl_bin("cupti-launchstat")),
        2);
    GR_ASSERT_CONTAINS(tl_out, "/nonexistent/dir/t.json: cannot write the timeline");
    CU_ASSERT_EQUAL(
        tl_run("'%s' report tests/data/pointwise_fusion_n4096.jsonl --html /nonexistent/dir/r.html",
               tl_bin("cupti-launchstat")),
        2);
    GR_ASSERT_CONTAINS(tl_out, "/nonexistent/dir/r.html: cannot write the HTML report");
    CU_ASSERT_EQUAL(tl_run("'%s' report tests/data/pointwise_fusion_n4096.jsonl --chrome",
                           tl_bin("cupti-launchstat")),
                    2);
    GR_ASSERT_CONTAINS(tl_out, "option --chrome needs a value");
    unlink(j);
    unlink(h);
}

static void test_cli_graphrun_options(void) {
    CU_ASSERT_EQUAL(tl_run("'%s' run --help", tl_bin("graphrun")), 0);
    GR_ASSERT_CONTAINS(tl_out, "--timeline FILE");
    GR_ASSERT_CONTAINS(tl_out, "--html FILE");
    CU_ASSERT_EQUAL(
        tl_run("'%s' run workloads/launch_bound.json --timeline /nonexistent/dir/t.json",
               tl_bin("graphrun")),
        2);
    GR_ASSERT_CONTAINS(tl_out, "--timeline: cannot write /nonexistent/dir/t.json");
    CU_ASSERT_EQUAL(tl_run("'%s' run workloads/launch_bound.json --html /tmp/", tl_bin("graphrun")),
                    2);
    GR_ASSERT_CONTAINS(tl_out, "--html: \"/tmp/\" is a directory");
    CU_ASSERT_EQUAL(tl_run("'%s' run workloads/launch_bound.json --html", tl_bin("graphrun")), 2);
    GR_ASSERT_CONTAINS(tl_out, "option --html needs a value");
    /* --trace-iters goes with any of the traced outputs */
    CU_ASSERT_EQUAL(
        tl_run("'%s' run workloads/launch_bound.json --trace-iters 5", tl_bin("graphrun")), 2);
    GR_ASSERT_CONTAINS(tl_out,
                       "--trace-iters goes with --trace FILE, --timeline FILE or --html FILE");
    if (!gr_test_have_gpu()) {
        CU_ASSERT_EQUAL(tl_run("'%s' run workloads/launch_bound.json --set K=3 --trace-iters 5 "
                               "--html /tmp/gr_tl_x.html",
                               tl_bin("graphrun")),
                        3);
    }
}

/* ---- NVTX ---- */

static void test_nvtx_ranges(void) {
    /* a fresh process under the recording injection: NVTX loads its tool at the first call */
    const char *rec = tmp_path(".nvtx");
    unlink(rec);
    int rc = tl_run("NVTX_INJECTION64_PATH='%s' GR_NVTX_REC_OUT='%s' '%s' "
                    "workloads/pointwise_fusion.json 3 n=4096",
                    tl_bin("libgr_nvtx_rec.so"), rec, tl_bin("gr_nvtx_probe"));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    GR_ASSERT_CONTAINS(tl_out, "tool attached: 1");
    static const char *const must[] = {
        "pointwise_fusion/unfused capture",         "pointwise_fusion/unfused op 0 add (add)",
        "pointwise_fusion/unfused op 2 act (relu)", "pointwise_fusion/unfused eager timing",
        "pointwise_fusion/unfused eager step 1",    "pointwise_fusion/unfused eager step 3",
        "pointwise_fusion/fused_vec replay step 3", "pointwise_fusion/fused op 0 fused",
        "pointwise_fusion/fused_vec replay timing", NULL};
    tl_nvtx_rec r;
    const char *missing = tl_read_nvtx(rec, &r, must);
    if (missing) fprintf(stderr, "\n    no NVTX range \"%s\"\n", missing);
    CU_ASSERT_PTR_NULL(missing);
    CU_ASSERT_EQUAL(r.inits, 1);
    CU_ASSERT(r.domain_id > 0);
    CU_ASSERT_STRING_EQUAL(r.cat_name[1], "eager");
    CU_ASSERT_STRING_EQUAL(r.cat_name[2], "capture");
    CU_ASSERT_STRING_EQUAL(r.cat_name[3], "replay");
    /* per variant (ops: unfused 3, fused 1, fused_vec 1), 3 steps per timing phase */
    size_t ops = 3 + 1 + 1, variants = 3, steps = 3;
    CU_ASSERT_EQUAL(r.phases_by_cat[2], variants);
    CU_ASSERT_EQUAL(r.ops_by_cat[2], ops);
    CU_ASSERT_EQUAL(r.phases_by_cat[1], variants);
    CU_ASSERT_EQUAL(r.steps_by_cat[1], variants * steps);
    CU_ASSERT_EQUAL(r.ops_by_cat[1], ops * steps);
    CU_ASSERT_EQUAL(r.phases_by_cat[3], variants);
    CU_ASSERT_EQUAL(r.steps_by_cat[3], variants * steps);
    CU_ASSERT_EQUAL(r.ops_by_cat[3], 0);
    CU_ASSERT_EQUAL(r.step_payload_ok,
                    r.steps_by_cat[1] + r.steps_by_cat[3]); /* payload = step number */
    CU_ASSERT_EQUAL(r.pushes, r.pops);
    CU_ASSERT_EQUAL(r.unbalanced, 0);
    CU_ASSERT_EQUAL(r.max_depth, 3); /* phase > step > op */
    unlink(rec);
    /* without a tool: nothing attached, nothing recorded */
    rc = tl_run("GR_NVTX_REC_OUT='%s' '%s' workloads/pointwise_fusion.json 2 n=4096", rec,
                tl_bin("gr_nvtx_probe"));
    CU_ASSERT_EQUAL(rc, 0);
    GR_ASSERT_CONTAINS(tl_out, "tool attached: 0");
    CU_ASSERT_NOT_EQUAL(access(rec, F_OK), 0);
}

/* ---- graphrun's own NVTX records in its trace, and the export of a traced run ---- */

typedef struct lines {
    char buf[1 << 16];
    size_t len, n;
} lines;

static void collect(void *user, const char *line, size_t len) {
    lines *l = user;
    if (l->len + len + 2 >= sizeof(l->buf)) return;
    memcpy(l->buf + l->len, line, len);
    l->len += len;
    l->buf[l->len++] = '\n';
    l->buf[l->len] = '\0';
    l->n++;
}

static uint64_t fake_ns;
static uint64_t fake_clock(void) {
    return fake_ns += 100;
}

static void test_nvtx_trace_records(void) {
    gr_loaded l;
    CU_ASSERT_FATAL(load_plans("workloads/pointwise_fusion.json", "n=4096", &l));
    static lines got;
    memset(&got, 0, sizeof(got));
    fake_ns = 5000;
    gr_nvtx_set_sink(collect, &got, fake_clock);
    const gr_plan *p = l.plans[0]; /* unfused: add, mul, act */
    const gr_exec_hooks *h = gr_nvtx_op_hooks();
    gr_nvtx_phase_begin(p, GR_NVTX_CAPTURE, "");
    for (int i = 0; i < p->nops; i++)
        h->before_op(h->user, &p->ops[i]), h->after_op(h->user, &p->ops[i]);
    gr_nvtx_phase_end();
    gr_nvtx_phase_begin(p, GR_NVTX_EAGER, "timing");
    for (int s = 0; s < 2; s++) {
        gr_nvtx_step_begin();
        for (int i = 0; i < p->nops; i++)
            h->before_op(h->user, &p->ops[i]), h->after_op(h->user, &p->ops[i]);
        gr_nvtx_step_end();
    }
    /* a failure inside a step leaves an op open: the phase's end closes it */
    gr_nvtx_step_begin();
    h->before_op(h->user, &p->ops[0]);
    gr_nvtx_phase_end();
    gr_nvtx_phase_begin(p, GR_NVTX_REPLAY, "timing");
    gr_nvtx_step_begin();
    gr_nvtx_step_end();
    gr_nvtx_phase_end();
    gr_nvtx_set_sink(NULL, NULL, NULL);
    /* capture 1 + 3 ops; eager 1 + 3 steps + 7 ops; replay 1 + 1 step */
    CU_ASSERT_EQUAL(got.n, 4 + 11 + 2);
    GR_ASSERT_CONTAINS(
        got.buf, "\"t\":\"nvtx\",\"dom\":\"graphrun\",\"cat\":\"eager\",\"lvl\":\"step\","
                 "\"msg\":\"pointwise_fusion/unfused eager step 2\",\"wl\":\"pointwise_fusion\","
                 "\"variant\":\"unfused\",\"step\":2,");
    GR_ASSERT_CONTAINS(
        got.buf,
        "\"cat\":\"capture\",\"lvl\":\"op\",\"msg\":\"pointwise_fusion/unfused op 1 mul (mul)\"");
    /* the trace reader skips them; the timeline reads them back */
    static char text[1 << 17];
    const char *head = strstr(synthetic, "{\"t\":\"name\"");
    size_t hl = (size_t)(head - synthetic);
    int n = snprintf(text, sizeof(text),
                     "%.*s%s{\"t\":\"end\",\"records\":0,\"dropped\":0,\"buffers\":0,"
                     "\"buffer_bytes\":0,\"waits\":0,\"refused\":0,\"write_errors\":0,"
                     "\"callback_errors\":0,\"e\":99999,\"reason\":\"exit\"}\n",
                     (int)hl, synthetic, got.buf);
    const char *path = gr_test_tmpfile(".jsonl", text, (size_t)n);
    gr_trace *t = NULL;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_trace_load(path, 0, &t, &e), GR_OK);
    CU_ASSERT_EQUAL(t->unknown_records, got.n);
    gr_timeline *tl = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_timeline_build(t, path, 0, &tl, &e), GR_OK);
    CU_ASSERT_EQUAL(tl->nnvtx, got.n);
    size_t lv[3] = {0, 0, 0};
    for (size_t i = 0; i < tl->nnvtx; i++) {
        const gr_tl_nvtx *x = &tl->nvtx[i];
        lv[x->level]++;
        CU_ASSERT(x->e > x->s);
        CU_ASSERT_STRING_EQUAL(gr_tl_str(tl, x->dom), "graphrun");
        CU_ASSERT_STRING_EQUAL(gr_tl_str(tl, x->variant), "unfused");
        CU_ASSERT_EQUAL(x->tid, tl->nvtx[0].tid);
        if (x->level == 2) CU_ASSERT(x->op >= 0 && x->op < 3);
    }
    CU_ASSERT_EQUAL(lv[0], 3);
    CU_ASSERT_EQUAL(lv[1], 4);
    CU_ASSERT_EQUAL(lv[2], 10);
    const char *out = tmp_path(".json");
    CU_ASSERT_EQUAL_FATAL(gr_chrome_write(tl, out, &e), GR_OK);
    tl_chrome c;
    int ok = tl_check_chrome(out, &c); /* phase > step > op nest on their track */
    if (!ok) fprintf(stderr, "\n    %s\n", c.why);
    CU_ASSERT(ok);
    CU_ASSERT_EQUAL(c.nvtx_slices, got.n);
    CU_ASSERT(tl_has_thread(&c, "NVTX ranges, thread"));
    unlink(out);
    gr_timeline_destroy(tl);
    gr_trace_destroy(t);
    gr_loaded_free(&l);
}

/* replay/timeline.c without a GPU: a run report made by hand and a committed trace standing in
 * for the traced run. */
static void test_export_timelines(void) {
    gr_loaded l;
    CU_ASSERT_FATAL(load_plans("workloads/pointwise_fusion.json", "n=4096", &l));
    gr_run_report *r = gr_run_report_create(NULL, NULL, NULL);
    gr_trace_result *tr = calloc(1, sizeof(*tr));
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tr);
    r->wl = l.wl;
    snprintf(r->dev.name, sizeof(r->dev.name), "Test GPU");
    r->dev.sm_count = 132;
    r->dev.cc_major = 9;
    r->dev.driver_version = r->dev.runtime_version = 13000;
    snprintf(r->date, sizeof(r->date), "2026-11-29 12:00 UTC");
    gr_run_opts_default(&r->opts);
    r->have_bw = 1;
    double bw[2] = {4000, 4000};
    r->bw.memcpy_d2d.gbps = gr_summarize(bw, 2); /* read = write = 4000: floor = bytes / 4000 */
    r->bw.read_only = r->bw.write_only = r->bw.memcpy_d2d;
    for (int i = 0; i < l.nplans; i++) {
        gr_variant_run *v = gr_run_report_add(r, l.plans[i]);
        v->timed = v->captured = 1;
        v->graph.kernel_nodes = (size_t)l.plans[i]->kernels;
        double eu[4] = {10 + i, 11 + i, 12 + i, 13 + i}, gv[4] = {3 + i, 3.5 + i, 4 + i, 4.5 + i};
        v->eager.step_us = gr_summarize(eu, 4);
        v->graph_t.step_us = gr_summarize(gv, 4);
        v->eager.batches = v->graph_t.batches = 4;
        v->eager.steps_per_batch = v->graph_t.steps_per_batch = 5;
        v->eager.warmup = v->graph_t.warmup = 3;
        v->graph_t.steps_per_launch = 1;
    }
    char path[1024];
    tr->trace = load_fixture("pointwise_fusion_n4096", path, sizeof(path));
    CU_ASSERT_PTR_NOT_NULL_FATAL(tr->trace);
    snprintf(tr->path, sizeof(tr->path), "%s", path);
    tr->iters = 20;
    tr->warmup = 3;
    const char *j = tmp_path(".json"), *h = tmp_path(".html");
    gr_export_result x;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(
        gr_export_timelines(r, tr, j, h,
                            "graphrun run workloads/pointwise_fusion.json --html r.html", &x, &e),
        GR_OK);
    CU_ASSERT_EQUAL(x.procs, 7); /* 3 variants x 2 modes + setup outside them */
    CU_ASSERT_EQUAL(x.figures, 3);
    CU_ASSERT_EQUAL(x.flows, tl_expected(tr->trace).flows); /* 0: this trace has no API records */
    CU_ASSERT_EQUAL(x.kernels, expected(tr->trace).kernels);
    tl_chrome c;
    CU_ASSERT(tl_check_chrome(j, &c));
    CU_ASSERT_EQUAL((size_t)c.nprocs, x.procs);
    const char *html = tl_slurp(h, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    tl_check_self_contained(html);
    GR_ASSERT_CONTAINS(html, "<title>graphrun: pointwise_fusion eager vs graph</title>");
    GR_ASSERT_CONTAINS(
        html, "Test GPU, 132 SMs, cc 9.0, driver 13.0, runtime 13.0; 2026-11-29 12:00 UTC");
    GR_ASSERT_CONTAINS(
        html, "median [p10, p90] over 4 batches of 5 steps after 3 warm-up steps, no tracing");
    GR_ASSERT_CONTAINS(html, "traced run: 20 steps per mode after 3 warm-up steps");
    GR_ASSERT_CONTAINS(html, "<tr><td>unfused</td><td>3</td><td>11.5 <span class=\"spread\">");
    GR_ASSERT_CONTAINS(html, "<tr><td>fused_vec</td><td>1</td><td>13.5 <span class=\"spread\">");
    GR_ASSERT_CONTAINS(html, "graphrun run workloads/pointwise_fusion.json --html r.html");
    CU_ASSERT_EQUAL(tl_count(html, "<svg class=\"timeline\""), 3);
    CU_ASSERT_PTR_NOT_NULL(strstr(html, "<table class=\"hbm\">"));
    /* the paths are checked before the long untraced run */
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_export_check_path("--timeline", "/nonexistent/dir/t.json", &e), GR_ERR_IO);
    GR_ASSERT_CONTAINS(e.msg, "--timeline: cannot write /nonexistent/dir/t.json");
    gr_error_clear(&e);
    char tmp[1024];
    const char *old = getenv("TMPDIR");
    char saved[1024] = "";
    if (old) snprintf(saved, sizeof(saved), "%s", old);
    setenv("TMPDIR", "/nonexistent/tmp", 1);
    CU_ASSERT_EQUAL(gr_export_temp_trace(tmp, sizeof(tmp), &e), GR_ERR_IO);
    GR_ASSERT_CONTAINS(e.msg, "cannot create a temporary trace in /nonexistent/tmp");
    if (saved[0])
        setenv("TMPDIR", saved, 1);
    else
        unsetenv("TMPDIR");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_export_temp_trace(tmp, sizeof(tmp), &e), GR_OK);
    CU_ASSERT_EQUAL(access(tmp, W_OK), 0);
    unlink(tmp);
    unlink(j);
    unlink(h);
    gr_trace_destroy(tr->trace);
    free(tr);
    gr_run_report_destroy(r);
    gr_loaded_free(&l);
}

/* ---- a real browser ---- */

#ifdef GR_HAVE_ZLIB
typedef struct png {
    unsigned w, h, bpp;
    unsigned char *px; /* w * h * bpp, unfiltered */
} png;

static unsigned be32(const unsigned char *p) {
    return (unsigned)p[0] << 24 | (unsigned)p[1] << 16 | (unsigned)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c) {
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* 8-bit RGB or RGBA, non-interlaced (what Chromium writes). */
static int png_read(const char *path, png *out) {
    size_t len;
    const unsigned char *d = (const unsigned char *)tl_slurp(path, &len);
    memset(out, 0, sizeof(*out));
    if (!d || len < 33 || memcmp(d, "\x89PNG\r\n\x1a\n", 8) != 0) return 0;
    unsigned char *idat = malloc(len);
    size_t ni = 0;
    for (size_t i = 8; i + 12 <= len;) {
        unsigned n = be32(d + i);
        if (i + 12 + n > len) break;
        if (!memcmp(d + i + 4, "IHDR", 4)) {
            out->w = be32(d + i + 8);
            out->h = be32(d + i + 12);
            if (d[i + 16] != 8 || (d[i + 17] != 2 && d[i + 17] != 6) || d[i + 20] != 0) {
                free(idat);
                return 0;
            }
            out->bpp = d[i + 17] == 6 ? 4 : 3;
        } else if (!memcmp(d + i + 4, "IDAT", 4)) {
            memcpy(idat + ni, d + i + 8, n);
            ni += n;
        }
        i += 12 + n;
    }
    size_t stride = (size_t)out->w * out->bpp, raw_len = (stride + 1) * out->h;
    unsigned char *raw = malloc(raw_len + 1);
    uLongf rl = (uLongf)raw_len;
    int ok = out->w && raw && uncompress(raw, &rl, idat, (uLong)ni) == Z_OK && rl == raw_len;
    free(idat);
    if (!ok) {
        free(raw);
        return 0;
    }
    out->px = malloc(stride * out->h);
    for (unsigned y = 0; y < out->h; y++) {
        unsigned char f = raw[y * (stride + 1)], *src = raw + y * (stride + 1) + 1,
                      *dst = out->px + y * stride;
        const unsigned char *up = y ? out->px + (y - 1) * stride : NULL;
        for (size_t x = 0; x < stride; x++) {
            int a = x >= out->bpp ? dst[x - out->bpp] : 0, b = up ? up[x] : 0,
                c = up && x >= out->bpp ? up[x - out->bpp] : 0;
            int v = src[x];
            switch (f) {
            case 1:
                v += a;
                break;
            case 2:
                v += b;
                break;
            case 3:
                v += (a + b) / 2;
                break;
            case 4:
                v += paeth(a, b, c);
                break;
            default:
                break;
            }
            dst[x] = (unsigned char)v;
        }
    }
    free(raw);
    return 1;
}
#endif

static void test_html_in_browser(void) {
    int have = tl_run("command -v \"${CHROMIUM:-chromium}\" || command -v chromium-browser || "
                      "command -v google-chrome") == 0;
    if (!have) {
        gr_test_skip(__func__, "no Chromium (Debian: apt-get install chromium; or set "
                               "CHROMIUM=/path): the report was not checked in a browser");
        return;
    }
    gr_loaded l;
    gr_timeline *tl = NULL;
    gr_trace *t = NULL;
    gr_html_timing rows[8];
    const char *html = write_pointwise_html(&l, &tl, &t, rows);
    CU_ASSERT_PTR_NOT_NULL_FATAL(html);
    /* the browser parses it: the DOM it builds has every kernel box */
    const char *page = tl_slurp(html, NULL);
    size_t boxes = tl_count(page, "<rect class=\"k\"");
    CU_ASSERT_EQUAL(
        tl_run("d=$(mktemp -d); timeout 120 \"${CHROMIUM:-$(command -v chromium || command -v "
               "chromium-browser || command -v google-chrome)}\" --headless --no-sandbox "
               "--disable-gpu "
               "--user-data-dir=$d --dump-dom 'file://%s' 2>/dev/null; rc=$?; rm -rf $d; exit $rc",
               html),
        0);
    CU_ASSERT_EQUAL(tl_count(tl_out, "<rect class=\"k\""), boxes);
    CU_ASSERT_EQUAL(tl_count(tl_out, "<svg class=\"timeline\""), 3);
    const char *png_path = tmp_path(".png");
    int rc = tl_run("scripts/screenshot-report '%s' '%s' 1400x900", html, png_path);
    if (rc != 0) fprintf(stderr, "\n    screenshot-report: %s\n", tl_out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
#ifdef GR_HAVE_ZLIB
    png img;
    CU_ASSERT_FATAL(png_read(png_path, &img));
    CU_ASSERT_EQUAL(img.w, 1400);
    CU_ASSERT_EQUAL(img.h, 900);
    /* the first figure (unfused) is on screen: its three kernel colours appear, each in two
     * separate vertical bands (the eager step above the graph step) */
    static const unsigned char colors[3][3] = {
        {0x4e, 0x79, 0xa7}, {0xf2, 0x8e, 0x2b}, {0x59, 0xa1, 0x4f}};
    for (int k = 0; k < 3; k++) {
        unsigned char rows_hit[2048] = {0};
        size_t hits = 0;
        for (unsigned y = 0; y < img.h && y < 2048; y++)
            for (unsigned x = 0; x < img.w; x++) {
                const unsigned char *p = img.px + ((size_t)y * img.w + x) * img.bpp;
                if (p[0] == colors[k][0] && p[1] == colors[k][1] && p[2] == colors[k][2]) {
                    rows_hit[y] = 1;
                    hits++;
                }
            }
        int bands = 0;
        for (unsigned y = 0; y < img.h && y < 2048; y++)
            if (rows_hit[y] && (y == 0 || !rows_hit[y - 1])) bands++;
        if (bands < 2)
            fprintf(stderr, "\n    kernel colour %d: %zu pixels in %d bands\n", k, hits, bands);
        CU_ASSERT(hits >= 40);
        CU_ASSERT(bands >= 2);
    }
    /* and it is not a blank page: a fair share of the screen is drawn */
    size_t ink = 0;
    for (size_t i = 0; i < (size_t)img.w * img.h; i++) {
        const unsigned char *p = img.px + i * img.bpp;
        ink += p[0] < 200 || p[1] < 200 || p[2] < 200;
    }
    CU_ASSERT(ink > (size_t)img.w * img.h / 50);
    free(img.px);
#else
    size_t plen;
    const char *p = tl_slurp(png_path, &plen);
    CU_ASSERT(p && plen > 20000 && !memcmp(p, "\x89PNG", 4));
    printf("\n  (built without zlib: the screenshot's pixels were not checked)");
#endif
    unlink(png_path);
    gr_loaded_free(&l);
    gr_timeline_destroy(tl);
    gr_trace_destroy(t);
    unlink(html);
}

static CU_TestInfo timeline_tests[] = {
    {"chrome export of every fixture", test_chrome_fixtures},
    {"chrome export of a known trace", test_chrome_synthetic},
    {"chrome export errors", test_chrome_errors},
    {"html report of a graphrun trace", test_html_report},
    {"html steps and gap histograms", test_html_steps},
    {"cupti-launchstat report --chrome/--html", test_cli_launchstat_exports},
    {"graphrun run --timeline/--html options", test_cli_graphrun_options},
    {"nvtx ranges through an injection", test_nvtx_ranges},
    {"nvtx records in graphrun's trace", test_nvtx_trace_records},
    {"graphrun's exports of a traced run", test_export_timelines},
    CU_TEST_INFO_NULL};
/* A suite of its own: it is skipped where Chromium is missing, and the rest still passes. */
static CU_TestInfo timeline_browser_tests[] = {
    {"html report in headless chromium", test_html_in_browser}, CU_TEST_INFO_NULL};

static gr_suite_def gr_timeline_suites[] = {{"timeline", timeline_tests, 0},
                                            {"timeline_browser", timeline_browser_tests, 0},
                                            {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_timeline_suites)
