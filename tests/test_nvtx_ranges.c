/* The traced program's own NVTX ranges in cupti-launchstat (issue 27): CPU suites on synthetic
 * traces (the "nvtx_push"/"nvtx_pop" lines the collector writes, paired by the reader per thread
 * and domain or by range id; unmatched pops and ranges never popped; every range name a scope
 * with launch statistics per instance; the text, JSON and Chrome outputs; the command line), and
 * a GPU suite that runs cupti-launchstat around graphrun (its "graphrun" NVTX domain) and around
 * a PyTorch program (torch.cuda.nvtx, record_function under emit_nvtx), skipped without a device
 * or without torch. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cupti_tools/analysis.h"
#include "cupti_tools/chrome.h"
#include "cupti_tools/format.h"
#include "cupti_tools/jsonl.h"
#include "cupti_tools/report.h"
#include "cupti_tools/trace.h"
#include "tests.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) <= 1e-9 * (1.0 + fabs((double)(b))))
#define ASSERT_NEAR(a, b)                                                                          \
    do {                                                                                           \
        double a_ = (double)(a), b_ = (double)(b);                                                 \
        if (!NEAR(a_, b_))                                                                         \
            fprintf(stderr, "\n    %s = %.12g, expected %.12g (line %d)", #a, a_, b_, __LINE__);   \
        CU_ASSERT(NEAR(a_, b_));                                                                   \
    } while (0)

/* ---- a trace builder (times in ns since t0) ---- */

typedef struct tb {
    char *p;
    size_t len, cap;
    int records; /* activity record lines, for the end record */
    char names[64][64];
    int nnames;
    unsigned corr;
} tb;

static void tb_printf(tb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_printf(tb *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (b->len + (size_t)n + 2 > b->cap) {
        b->cap = (b->len + (size_t)n + 2) * 2;
        b->p = realloc(b->p, b->cap);
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    b->p[b->len++] = '\n';
    b->p[b->len] = '\0';
}

static void tb_init(tb *b, const char *header_extra) {
    memset(b, 0, sizeof(*b));
    b->corr = 100;
    tb_printf(b,
              "{\"t\":\"header\",\"schema_version\":1,\"tool\":\"test\",\"mode\":\"injection\","
              "\"t0\":1000000000,"
              "\"device\":\"Test GPU\",\"cc\":\"9.0\"%s%s}",
              header_extra ? "," : "", header_extra ? header_extra : "");
}

static int tb_name(tb *b, const char *name) {
    for (int i = 0; i < b->nnames; i++)
        if (!strcmp(b->names[i], name)) return i + 1;
    snprintf(b->names[b->nnames], sizeof(b->names[0]), "%s", name);
    b->nnames++;
    tb_printf(b, "{\"t\":\"name\",\"id\":%d,\"s\":\"%s\"}", b->nnames, name);
    return b->nnames;
}

/* a cudaLaunchKernel call on thread `tid` at [s, s + 1000] and its kernel at [ks, ke] */
static void tb_launch(tb *b, unsigned tid, long long s, const char *kernel, long long ks,
                      long long ke, unsigned stream) {
    unsigned c = ++b->corr;
    int api = tb_name(b, "cudaLaunchKernel");
    tb_printf(b,
              "{\"t\":\"api\",\"d\":\"rt\",\"cb\":1,\"n\":%d,\"s\":%lld,\"e\":%lld,\"tid\":%u,"
              "\"corr\":%u,\"ret\":0}",
              api, s, s + 1000, tid, c);
    int k = tb_name(b, kernel);
    tb_printf(
        b,
        "{\"t\":\"k\",\"n\":%d,\"s\":%lld,\"e\":%lld,\"dev\":0,\"ctx\":1,\"str\":%u,\"corr\":%u,"
        "\"g\":[1,1,1],\"b\":[32,1,1]}",
        k, ks, ke, stream, c);
    b->records += 2;
}

static void tb_push(tb *b, unsigned tid, long long s, const char *dom, const char *msg) {
    gr_sbuf x;
    gr_sb_init(&x);
    gr_fmt_nvtx(&x, 1, s, tid, dom, 0, 0, msg, -1);
    tb_printf(b, "%.*s", (int)x.len, x.p);
    gr_sb_free(&x);
}

static void tb_pop(tb *b, unsigned tid, long long s, const char *dom) {
    gr_sbuf x;
    gr_sb_init(&x);
    gr_fmt_nvtx(&x, 0, s, tid, dom, 0, 0, NULL, -1);
    tb_printf(b, "%.*s", (int)x.len, x.p);
    gr_sb_free(&x);
}

static const char *tb_end(tb *b, long long e) {
    tb_printf(b,
              "{\"t\":\"end\",\"records\":%d,\"dropped\":0,\"nvtx_calls\":40,\"e\":%lld,\"reason\":"
              "\"exit\"}",
              b->records, e);
    return b->p;
}

static gr_trace *load_text(const char *text, int partial, gr_error *e) {
    gr_error_clear(e);
    gr_trace *t = NULL;
    gr_trace_load_mem(text, strlen(text), "t.jsonl", partial, &t, e);
    return t;
}

/* The timeline every analysis test below uses (numbers worked out by hand in the comments):
 *   thread 1, default domain: three instances of "step N" (B = 10000, 110000, 210000):
 *     "step N" [B, B+30000] > "forward" [B+1000, B+6000]: launches at B+2000 (kernel "fwd"
 *     B+10000..B+14000) and B+4000 ("fwd" B+16000..B+20000); "backward" [B+7000, B+9500]: a
 *     launch at B+8000 ("bwd" B+22000..B+25000); after the step a launch at B+50000 ("other")
 *   thread 1, domain "lib": "outer lib" [5000, 340000] around all of it
 *   thread 2: a launch at 12500 ("t2", stream 8), inside start/end range "window" [11000, 13000]
 *     (id 77, started on thread 1, ended on thread 2)
 *   thread 3: "block" [200000, 206000] > "block" [201000, 205000] with a launch at 202000; its
 *     lines come before the pushes in the file
 *   thread 4: a pop with nothing pushed at 300000; "tail" pushed at 310000, never popped (the
 *     trace ends at 400000), a launch at 320000
 *   thread 5: "aten::mul, seq = 5, op_id = 9" [350000, 351000], "aten::mul, seq = 6, op_id = 10"
 *     [352000, 353000] (PyTorch's emit_nvtx names: one scope "aten::mul")
 *   a kernel whose launch call was not recorded (corr 999): no range claims it */
static const char *nvtx_trace(tb *b) {
    tb_init(b, "\"nvtx\":true");
    tb_push(b, 1, 5000, "lib", "outer lib");
    for (int i = 0; i < 3; i++) {
        long long B = 10000 + 100000LL * i;
        char step[32];
        snprintf(step, sizeof(step), "step %d", i + 1);
        tb_push(b, 1, B, NULL, step);
        tb_push(b, 1, B + 1000, NULL, "forward");
        tb_launch(b, 1, B + 2000, "fwd", B + 10000, B + 14000, 7);
        tb_launch(b, 1, B + 4000, "fwd", B + 16000, B + 20000, 7);
        tb_pop(b, 1, B + 6000, NULL);
        tb_push(b, 1, B + 7000, NULL, "backward");
        tb_launch(b, 1, B + 8000, "bwd", B + 22000, B + 25000, 7);
        tb_pop(b, 1, B + 9500, NULL);
        tb_pop(b, 1, B + 30000, NULL);
        tb_launch(b, 1, B + 50000, "other", B + 52000, B + 53000, 7);
    }
    tb_pop(b, 1, 340000, "lib");
    tb_printf(b, "{\"t\":\"nvtx_push\",\"s\":11000,\"tid\":1,\"id\":77,\"msg\":\"window\"}");
    tb_launch(b, 2, 12500, "t2", 40000, 41000, 8);
    tb_printf(b, "{\"t\":\"nvtx_pop\",\"s\":13000,\"tid\":2,\"id\":77}");
    tb_pop(b, 3, 205000, NULL);
    tb_pop(b, 3, 206000, NULL);
    tb_push(b, 3, 200000, NULL, "block");
    tb_push(b, 3, 201000, NULL, "block");
    tb_launch(b, 3, 202000, "blk", 203000, 204000, 9);
    tb_pop(b, 4, 300000, NULL);
    tb_push(b, 4, 310000, NULL, "tail");
    tb_launch(b, 4, 320000, "tl", 321000, 322000, 9);
    tb_push(b, 5, 350000, NULL, "aten::mul, seq = 5, op_id = 9");
    tb_pop(b, 5, 351000, NULL);
    tb_push(b, 5, 352000, NULL, "aten::mul, seq = 6, op_id = 10");
    tb_pop(b, 5, 353000, NULL);
    tb_printf(b, "{\"t\":\"k\",\"n\":%d,\"s\":390000,\"e\":391000,\"str\":7,\"corr\":999}",
              tb_name(b, "orphan"));
    b->records++;
    return tb_end(b, 400000);
}

static const gr_tr_nvtx *range_named(const gr_trace *t, const char *name, int nth) {
    for (size_t i = 0; i < t->nvtx.n; i++)
        if (!strcmp(gr_trace_str(t, t->nvtx.v[i].name), name) && nth-- == 0) return &t->nvtx.v[i];
    return NULL;
}

static const gr_ls_scope *scope_named(const gr_ls_report *r, const char *name) {
    for (size_t i = 0; i < r->nnvtx; i++)
        if (!strcmp(r->nvtx[i].name, name)) return &r->nvtx[i];
    fprintf(stderr, "\n    no NVTX scope \"%s\"", name);
    return NULL;
}

/* ---- suite nvtx_ranges ---- */

static void test_key(void) {
    static const char *const cases[][2] = {
        {"step 17", "step #"},
        {"iter_3", "iter_#"},
        {"layer.12", "layer.#"},
        {"conv2", "conv2"},
        {"17", "17"},
        {"", "(unnamed)"},
        {"forward", "forward"},
        {"aten::addmm, seq = 12, op_id = 40, sizes = [[2, 3]]", "aten::addmm"},
        {"aten::mul, op_id = 9", "aten::mul"},
        {"my_block, sizes = [[1]]", "my_block"},
        {"x 12, seq = 3", "x #"},
        {"graphrun/tiny eager step 20", "graphrun/tiny eager step #"},
        {"tiny op 3 tiny.3 (tiny)", "tiny op 3 tiny.3 (tiny)"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[160];
        size_t n = gr_ls_nvtx_key(cases[i][0], out, sizeof(out));
        if (strcmp(out, cases[i][1]) != 0)
            fprintf(stderr, "\n    key(\"%s\") = \"%s\"", cases[i][0], out);
        CU_ASSERT_STRING_EQUAL(out, cases[i][1]);
        CU_ASSERT_EQUAL(n, strlen(cases[i][1]));
    }
    char small[6];
    gr_ls_nvtx_key("a long range name", small, sizeof(small));
    CU_ASSERT_STRING_EQUAL(small, "a lon");
}

/* The collector's line format (format.c) read back: escaping, domain, id, depth, long messages. */
/* the formatted line as a C string (static) */
static const char *line_of(const gr_sbuf *x) {
    static char buf[2048];
    snprintf(buf, sizeof(buf), "%.*s", (int)x->len, x->p);
    return buf;
}

static void test_format_roundtrip(void) {
    gr_sbuf x;
    gr_sb_init(&x);
    gr_fmt_nvtx(&x, 1, 123, 7, "dom \"q\"", 0, 0, "say \"hi\"\n", 2);
    CU_ASSERT_STRING_EQUAL(line_of(&x),
                           "{\"t\":\"nvtx_push\",\"s\":123,\"tid\":7,\"dom\":\"dom \\\"q\\\"\","
                           "\"msg\":\"say \\\"hi\\\"\\n\",\"depth\":2}");
    x.len = 0;
    gr_fmt_nvtx(&x, 0, 456, 7, NULL, 1, 18446744073709551615ULL, NULL, -1);
    CU_ASSERT_STRING_EQUAL(line_of(&x),
                           "{\"t\":\"nvtx_pop\",\"s\":456,\"tid\":7,\"id\":18446744073709551615}");
    char *longmsg = malloc(5000);
    memset(longmsg, 'm', 4999);
    longmsg[4999] = '\0';
    x.len = 0;
    gr_fmt_nvtx(&x, 1, 500, 9, "", 0, 0, longmsg, 0);
    CU_ASSERT_TRUE(x.len < 1200);
    tb b;
    tb_init(&b, NULL);
    gr_sbuf y;
    gr_sb_init(&y);
    gr_fmt_nvtx(&y, 1, 123, 7, "dom \"q\"", 0, 0, "say \"hi\"\n", 0);
    tb_printf(&b, "%.*s", (int)y.len, y.p);
    y.len = 0;
    gr_fmt_nvtx(&y, 0, 200, 7, "dom \"q\"", 0, 0, NULL, -1);
    tb_printf(&b, "%.*s", (int)y.len, y.p);
    tb_printf(&b, "%.*s", (int)x.len, x.p);
    y.len = 0;
    gr_fmt_nvtx(&y, 0, 600, 9, NULL, 0, 0, NULL, -1);
    tb_printf(&b, "%.*s", (int)y.len, y.p);
    gr_error e;
    gr_trace *t = load_text(tb_end(&b, 1000), 0, &e);
    if (!t) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL_FATAL(t->nvtx.n, 2);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, t->nvtx.v[0].name), "say \"hi\"\n");
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, t->nvtx.v[0].dom), "dom \"q\"");
    CU_ASSERT_EQUAL(t->nvtx.v[0].e, 200);
    CU_ASSERT_EQUAL(strlen(gr_trace_str(t, t->nvtx.v[1].name)), GR_FMT_NVTX_MSG_MAX);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, t->nvtx.v[1].dom), "");
    CU_ASSERT_EQUAL(t->nvtx.v[1].e, 600);
    CU_ASSERT_EQUAL(t->nvtx_unmatched_pop.n + t->nvtx_open.n, 0);
    gr_trace_destroy(t);
    free(longmsg);
    free(b.p);
    gr_sb_free(&x);
    gr_sb_free(&y);
}

/* Pairing: per thread and domain in time order (not file order), by id across threads;
 * depth and parent; the pop with nothing pushed and the push never popped. */
static void test_reader_pairs(void) {
    tb b;
    gr_error e;
    gr_trace *t = load_text(nvtx_trace(&b), 0, &e);
    if (!t) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_TRUE(t->nvtx_traced);
    CU_ASSERT_TRUE(t->has_nvtx_calls);
    CU_ASSERT_EQUAL(t->end_nvtx_calls, 40);
    CU_ASSERT_EQUAL(t->nvtx.n, 16);
    CU_ASSERT_EQUAL(t->unknown_records, 0);
    for (size_t i = 1; i < t->nvtx.n; i++)
        CU_ASSERT_TRUE(t->nvtx.v[i - 1].s <= t->nvtx.v[i].s); /* time order */
    const gr_tr_nvtx *lib = range_named(t, "outer lib", 0), *s2 = range_named(t, "step 2", 0);
    const gr_tr_nvtx *f2 = range_named(t, "forward", 1), *w = range_named(t, "window", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lib);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    /* the "lib" domain nests apart: the default domain's pops leave it open */
    CU_ASSERT_EQUAL(lib->s, 5000);
    CU_ASSERT_EQUAL(lib->e, 340000);
    CU_ASSERT_EQUAL(lib->depth, 0);
    CU_ASSERT_EQUAL(lib->parent, -1);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, lib->dom), "lib");
    CU_ASSERT_EQUAL(s2->s, 110000);
    CU_ASSERT_EQUAL(s2->e, 140000);
    CU_ASSERT_EQUAL(s2->depth, 0);
    CU_ASSERT_EQUAL(f2->s, 111000);
    CU_ASSERT_EQUAL(f2->e, 116000);
    CU_ASSERT_EQUAL(f2->depth, 1);
    CU_ASSERT_PTR_EQUAL(&t->nvtx.v[f2->parent], s2);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, f2->dom), "");
    /* a start/end range: by id, ended on another thread */
    CU_ASSERT_TRUE(w->start_end);
    CU_ASSERT_EQUAL(w->s, 11000);
    CU_ASSERT_EQUAL(w->e, 13000);
    CU_ASSERT_EQUAL(w->tid, 1);
    CU_ASSERT_EQUAL(w->parent, -1);
    /* pops written before their pushes still close them, innermost first */
    const gr_tr_nvtx *b0 = range_named(t, "block", 0), *b1 = range_named(t, "block", 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b1);
    CU_ASSERT_EQUAL(b0->e, 206000);
    CU_ASSERT_EQUAL(b1->e, 205000);
    CU_ASSERT_PTR_EQUAL(&t->nvtx.v[b1->parent], b0);
    /* thread 4: the pop at 300000 closes nothing; "tail" stays open to the trace's end */
    CU_ASSERT_EQUAL(t->nvtx_unmatched_pop.n, 1);
    CU_ASSERT_EQUAL(t->nvtx_open.n, 1);
    const gr_tr_nvtx *tail = range_named(t, "tail", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tail);
    CU_ASSERT_TRUE(tail->open);
    CU_ASSERT_EQUAL(tail->e, 400000);
    CU_ASSERT_EQUAL(t->nvtx_open.first_line, tail->line);
    gr_trace_destroy(t);
    free(b.p);
}

static void expect_bad(const char *body, const char *needle, int line) {
    char text[2048];
    snprintf(text, sizeof(text),
             "{\"t\":\"header\",\"schema_version\":1,\"t0\":5}\n%s\n"
             "{\"t\":\"end\",\"records\":0,\"dropped\":0}\n",
             body);
    gr_error e;
    gr_trace *t = load_text(text, 0, &e);
    CU_ASSERT_PTR_NULL(t);
    gr_trace_destroy(t);
    CU_ASSERT_EQUAL(e.code, GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, needle);
    char place[32];
    snprintf(place, sizeof(place), "t.jsonl:%d", line);
    GR_ASSERT_CONTAINS(e.msg, place);
}

/* Bad records are errors naming the line; old traces without NVTX records read as before; a
 * cut last push is skipped with --partial; events at impossible times are excluded. */
static void test_reader_errors(void) {
    expect_bad("{\"t\":\"nvtx_push\",\"tid\":1,\"msg\":\"x\"}", "\"nvtx_push\" record has no \"s\"",
               2);
    expect_bad("{\"t\":\"nvtx_pop\",\"s\":5,\"tid\":\"one\"}",
               "\"nvtx_pop\" record: \"tid\" must be a number", 2);
    expect_bad("{\"t\":\"nvtx_push\",\"s\":5,\"tid\":1,\"msg\":3}", "\"msg\" must be a string", 2);
    expect_bad("{\"t\":\"nvtx_push\",\"s\":5,\"tid\":1,\"depth\":-1}", "depth must be >= 0", 2);
    expect_bad("{\"t\":\"nvtx_pop\",\"s\":5,\"tid\":1,\"id\":-4}",
               "\"id\" must be a whole number >= 0", 2);
    expect_bad("{\"t\":\"nvtx_push\",\"s\":5.5,\"tid\":1}", "\"s\" must be a whole number", 2);
    gr_error e;
    /* a trace without them (every trace before this change) */
    gr_trace *t = load_text("{\"t\":\"header\",\"schema_version\":1,\"t0\":5}\n{\"t\":\"end\","
                            "\"records\":0,\"dropped\":0}\n",
                            0, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(t->nvtx.n, 0);
    CU_ASSERT_FALSE(t->nvtx_traced);
    CU_ASSERT_FALSE(t->has_nvtx_calls);
    gr_ls_report *r = NULL;
    CU_ASSERT_EQUAL(gr_ls_analyze(t, NULL, &r, &e), GR_OK);
    CU_ASSERT_EQUAL(r->nnvtx, 0);
    CU_ASSERT_EQUAL(gr_ls_warnings(r, NULL, 0), 0);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    /* --partial: the cut push is skipped, the range before it kept (open: no end record) */
    const char *cut = "{\"t\":\"header\",\"schema_version\":1,\"t0\":5}\n"
                      "{\"t\":\"nvtx_push\",\"s\":10,\"tid\":1,\"msg\":\"a\"}\n"
                      "{\"t\":\"nvtx_push\",\"s\":20,\"tid\":1,\"ms";
    t = load_text(cut, 1, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(t->nvtx.n, 1);
    CU_ASSERT_TRUE(t->nvtx.v[0].open);
    CU_ASSERT_EQUAL(t->nvtx.v[0].e, 10); /* nothing later in the trace */
    gr_trace_destroy(t);
    /* a pop after the end record's time is excluded: its push then stays open */
    t = load_text("{\"t\":\"header\",\"schema_version\":1,\"t0\":5}\n"
                  "{\"t\":\"nvtx_push\",\"s\":10,\"tid\":1,\"msg\":\"a\"}\n"
                  "{\"t\":\"nvtx_pop\",\"s\":99999,\"tid\":1}\n"
                  "{\"t\":\"end\",\"records\":0,\"dropped\":0,\"e\":1000}\n",
                  0, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(t->excl_outside.n, 1);
    CU_ASSERT_EQUAL(t->excl_outside.first_line, 3);
    CU_ASSERT_EQUAL(t->nvtx.n, 1);
    CU_ASSERT_TRUE(t->nvtx.v[0].open);
    CU_ASSERT_EQUAL(t->nvtx.v[0].e, 1000);
    gr_trace_destroy(t);
}

static gr_ls_report *analyze(const char *text, gr_trace **tp, const gr_ls_opts *o) {
    gr_error e;
    gr_trace *t = load_text(text, 0, &e);
    if (!t) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    gr_ls_report *r = NULL;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_ls_analyze(t, o, &r, &e), GR_OK);
    *tp = t;
    return r;
}

/* Every range name a scope: counts, host and GPU figures per instance, thread scoping, nesting. */
static void test_analysis_scopes(void) {
    tb b;
    gr_trace *t;
    gr_ls_report *r = analyze(nvtx_trace(&b), &t, NULL);
    CU_ASSERT_EQUAL(r->nregions, 0);
    CU_ASSERT_EQUAL(r->nnvtx, 8);
    CU_ASSERT_EQUAL(r->nvtx_unattributed, 1); /* the orphan kernel */
    /* "step #": 3 instances of 30 us; 3 launches each; per instance the GPU runs 10..14, 16..20,
     * 22..25 us after B: span 15 us, busy 11 us, two 2 us holes */
    const gr_ls_scope *s = scope_named(r, "step #");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_TRUE(s->is_nvtx && !s->is_region);
    CU_ASSERT_EQUAL(s->instances, 3);
    CU_ASSERT_EQUAL(s->raw_names, 3);
    CU_ASSERT_EQUAL(s->threads, 1);
    CU_ASSERT_EQUAL(s->depth, 0);
    CU_ASSERT_STRING_EQUAL(s->parent_path, "");
    CU_ASSERT_STRING_EQUAL(s->domain, "");
    CU_ASSERT_EQUAL(s->steps, 3);
    CU_ASSERT_STRING_EQUAL(s->steps_from, "instances");
    ASSERT_NEAR(s->host_span_us, 90.0);
    ASSERT_NEAR(s->step_us, 30.0);
    ASSERT_NEAR(s->instance_us.median, 30.0);
    CU_ASSERT_EQUAL(s->kernels, 9);
    CU_ASSERT_EQUAL(s->launch_calls, 9);
    CU_ASSERT_EQUAL(s->api_calls, 9);
    ASSERT_NEAR(s->gpu_span_us, 45.0);
    ASSERT_NEAR(s->busy_us, 33.0);
    ASSERT_NEAR(s->idle_us, 12.0);
    ASSERT_NEAR(s->short_share, 1.0);
    /* gaps per instance: the first kernel of each has none (not the 85 us since the last step) */
    CU_ASSERT_EQUAL(s->gap_us.n, 6);
    ASSERT_NEAR(s->gap_us.max, 2.0);
    ASSERT_NEAR(s->latency_us.median, 12.0); /* 8, 12 and 14 us, three times */
    CU_ASSERT_EQUAL_FATAL(s->nstreams, 1);
    ASSERT_NEAR(s->streams[0].busy_us, 33.0);
    ASSERT_NEAR(s->streams[0].idle_us, 12.0);
    /* "forward": only its own launches, and not thread 2's launch made meanwhile */
    const gr_ls_scope *f = scope_named(r, "forward");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->instances, 3);
    CU_ASSERT_EQUAL(f->kernels, 6);
    CU_ASSERT_EQUAL(f->launch_calls, 6);
    CU_ASSERT_EQUAL(f->depth, 1);
    CU_ASSERT_STRING_EQUAL(f->parent_path, "step #");
    ASSERT_NEAR(f->host_span_us, 15.0);
    ASSERT_NEAR(f->step_us, 5.0);
    ASSERT_NEAR(f->gpu_span_us, 30.0);
    ASSERT_NEAR(f->busy_us, 24.0);
    CU_ASSERT_EQUAL(f->nkern, 1);
    const gr_ls_scope *bw = scope_named(r, "backward");
    CU_ASSERT_PTR_NOT_NULL_FATAL(bw);
    CU_ASSERT_EQUAL(bw->kernels, 3);
    ASSERT_NEAR(bw->gpu_span_us, 9.0);
    ASSERT_NEAR(bw->idle_us, 0.0);
    CU_ASSERT_EQUAL(bw->gap_us.n, 0);
    /* the "lib" domain: everything thread 1 launched in it */
    const gr_ls_scope *lib = scope_named(r, "lib: outer lib");
    CU_ASSERT_PTR_NOT_NULL_FATAL(lib);
    CU_ASSERT_STRING_EQUAL(lib->domain, "lib");
    CU_ASSERT_STRING_EQUAL(lib->key, "outer lib");
    CU_ASSERT_EQUAL(lib->kernels, 12);
    CU_ASSERT_EQUAL(lib->instances, 1);
    ASSERT_NEAR(lib->host_span_us, 335.0);
    /* a start/end range claims launches of any thread */
    const gr_ls_scope *w = scope_named(r, "window");
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_EQUAL(w->launch_calls, 2);
    CU_ASSERT_EQUAL(w->kernels, 2);
    CU_ASSERT_EQUAL(w->nstreams, 2);
    ASSERT_NEAR(w->host_span_us, 2.0);
    /* a range inside one of the same name: one instance, its launch counted once */
    const gr_ls_scope *bl = scope_named(r, "block");
    CU_ASSERT_PTR_NOT_NULL_FATAL(bl);
    CU_ASSERT_EQUAL(bl->instances, 1);
    CU_ASSERT_EQUAL(bl->nested_ranges, 1);
    CU_ASSERT_EQUAL(bl->kernels, 1);
    CU_ASSERT_EQUAL(bl->launch_calls, 1);
    ASSERT_NEAR(bl->host_span_us, 6.0);
    /* never popped: analysed to the trace's end */
    const gr_ls_scope *tl = scope_named(r, "tail");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tl);
    CU_ASSERT_EQUAL(tl->open_instances, 1);
    CU_ASSERT_EQUAL(tl->kernels, 1);
    ASSERT_NEAR(tl->host_span_us, 90.0);
    /* emit_nvtx names: one scope */
    const gr_ls_scope *m = scope_named(r, "aten::mul");
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(m->instances, 2);
    CU_ASSERT_EQUAL(m->raw_names, 2);
    CU_ASSERT_EQUAL(m->kernels, 0);
    /* largest host time first */
    for (size_t i = 1; i < r->nnvtx; i++)
        CU_ASSERT_TRUE(r->nvtx[i - 1].host_span_us >= r->nvtx[i].host_span_us);
    CU_ASSERT_STRING_EQUAL(r->nvtx[0].name, "lib: outer lib");
    /* the whole trace is unchanged by the ranges */
    CU_ASSERT_EQUAL(r->all.kernels, 16);
    /* --steps overrides the instance count */
    gr_ls_opts o;
    gr_ls_opts_default(&o);
    o.steps = 6;
    gr_ls_report *r2 = NULL;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_ls_analyze(t, &o, &r2, &e), GR_OK);
    const gr_ls_scope *s2 = scope_named(r2, "step #");
    CU_ASSERT_PTR_NOT_NULL_FATAL(s2);
    CU_ASSERT_EQUAL(s2->steps, 6);
    CU_ASSERT_STRING_EQUAL(s2->steps_from, "--steps");
    ASSERT_NEAR(s2->step_us, 15.0);
    /* a comparison finds NVTX scopes by name, after regions */
    CU_ASSERT_PTR_EQUAL(gr_ls_main_scope(r, "forward", &e), f);
    CU_ASSERT_PTR_NULL(gr_ls_main_scope(r, "nope", &e));
    GR_ASSERT_CONTAINS(
        e.msg,
        "has no region \"nope\" (regions: none; the whole trace is the only scope; NVTX ranges: "
        "\"lib: outer lib\"");
    gr_ls_report_destroy(r2);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
}

/* A trace with cudaProfilerStart/Stop regions keeps them; NVTX scopes come on top. */
static void test_analysis_with_regions(void) {
    tb b;
    tb_init(&b, NULL);
    int ps = tb_name(&b, "cudaProfilerStart"), pe = tb_name(&b, "cudaProfilerStop");
    tb_printf(
        &b,
        "{\"t\":\"api\",\"d\":\"rt\",\"cb\":1,\"n\":%d,\"s\":100,\"e\":200,\"tid\":1,\"corr\":1}",
        ps);
    tb_push(&b, 1, 300, NULL, "it 1");
    tb_launch(&b, 1, 400, "k", 2000, 3000, 7);
    tb_pop(&b, 1, 1500, NULL);
    tb_push(&b, 1, 4000, NULL, "it 2");
    tb_launch(&b, 1, 4100, "k", 6000, 7000, 7);
    tb_pop(&b, 1, 5000, NULL);
    tb_printf(
        &b,
        "{\"t\":\"api\",\"d\":\"rt\",\"cb\":1,\"n\":%d,\"s\":9000,\"e\":9100,\"tid\":1,\"corr\":2}",
        pe);
    b.records += 2;
    gr_trace *t;
    gr_ls_report *r = analyze(tb_end(&b, 10000), &t, NULL);
    CU_ASSERT_EQUAL(r->nregions, 1);
    CU_ASSERT_EQUAL(r->regions[0].kernels, 2);
    CU_ASSERT_EQUAL_FATAL(r->nnvtx, 1);
    CU_ASSERT_STRING_EQUAL(r->nvtx[0].name, "it #");
    CU_ASSERT_EQUAL(r->nvtx[0].instances, 2);
    ASSERT_NEAR(r->nvtx[0].step_us, 1.1); /* (1.2 + 1.0) / 2 */
    ASSERT_NEAR(r->nvtx[0].gpu_span_us, 2.0);
    ASSERT_NEAR(r->nvtx[0].idle_us, 0.0);
    gr_error e;
    CU_ASSERT_PTR_EQUAL(gr_ls_main_scope(r, NULL, &e), &r->regions[0]); /* the only region */
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
}

static char *print_to_string(void (*fn)(FILE *, const gr_ls_report *), const gr_ls_report *r) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f, r);
    fclose(f);
    return buf;
}

/* The text table, the detailed sections, the warnings and the JSON. */
static void test_report(void) {
    tb b;
    gr_trace *t;
    gr_ls_opts o;
    gr_ls_opts_default(&o);
    o.top = 3;
    gr_ls_report *r = analyze(nvtx_trace(&b), &t, &o);
    char *text = print_to_string(gr_ls_print, r);
    GR_ASSERT_CONTAINS(text, "nvtx     16 ranges of the program's own NVTX annotation in 8 scopes "
                             "(40 NVTX range calls seen)");
    GR_ASSERT_CONTAINS(
        text, "note     1 GPU records have no launching API record: no NVTX range claims them");
    GR_ASSERT_CONTAINS(text, "NVTX ranges of the program (traced;");
    GR_ASSERT_CONTAINS(text, "  lib: outer lib ");
    GR_ASSERT_CONTAINS(text, "(5 more NVTX ranges: --top N shows more, --json has all)");
    GR_ASSERT_CONTAINS(text, "== NVTX range \"step #\" (traced): 3 instances on 1 thread, 3 names");
    GR_ASSERT_CONTAINS(text,
                       "== NVTX range \"tail\" (traced): 1 instance on 1 thread, 1 never popped");
    GR_ASSERT_CONTAINS(text, "host span / 3 steps, steps from instances");
    GR_ASSERT_CONTAINS(text, "(details of 4 more NVTX ranges:");
    GR_ASSERT_CONTAINS(
        text,
        "WARNING  1 NVTX pop without a matching push on its thread and domain (first at line");
    GR_ASSERT_CONTAINS(text, "WARNING  1 NVTX range was never popped (first pushed at line");
    free(text);
    gr_ls_warning w[8];
    CU_ASSERT_EQUAL(gr_ls_warnings(r, w, 8), 3); /* and the orphan kernel's missing launch record */
    json_t *j = gr_ls_json(r);
    json_t *nv = json_object_get(j, "nvtx");
    CU_ASSERT_TRUE(json_is_true(json_object_get(nv, "traced")));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(nv, "calls_seen")), 40);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(nv, "ranges")), 16);
    CU_ASSERT_EQUAL(
        json_integer_value(json_object_get(json_object_get(nv, "unmatched_pops"), "count")), 1);
    CU_ASSERT_EQUAL(
        json_integer_value(json_object_get(json_object_get(nv, "never_popped"), "count")), 1);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(nv, "unattributed_gpu_records")), 1);
    json_t *arr = json_object_get(j, "nvtx_ranges");
    CU_ASSERT_EQUAL_FATAL(json_array_size(arr), 8);
    int found = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *sj = json_array_get(arr, i);
        if (strcmp(json_string_value(json_object_get(sj, "name")), "forward") != 0) continue;
        found = 1;
        json_t *x = json_object_get(sj, "nvtx");
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(x, "instances")), 3);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(x, "inside")), "step #");
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(sj, "kernels")), 6);
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(sj, "steps")), 3);
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(sj, "steps_from")), "instances");
    }
    CU_ASSERT_TRUE(found);
    json_decref(j);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
}

/* The Chrome export draws the program's ranges on their thread's NVTX track. */
static void test_chrome(void) {
    tb b;
    gr_trace *t;
    gr_ls_report *r = analyze(nvtx_trace(&b), &t, NULL);
    gr_timeline *tl = NULL;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_timeline_build(t, NULL, 0, &tl, &e), GR_OK);
    CU_ASSERT_EQUAL(tl->nnvtx, 16);
    char path[64];
    snprintf(path, sizeof(path), "/tmp/gr_nvtx_chrome_%d.json", (int)getpid());
    CU_ASSERT_EQUAL_FATAL(gr_chrome_write(tl, path, &e), GR_OK);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    json_t *ev = json_object_get(j, "traceEvents");
    size_t slices = 0, forward = 0, open = 0, track = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *x = json_array_get(ev, i);
        const char *cat = json_string_value(json_object_get(x, "cat"));
        const char *name = json_string_value(json_object_get(x, "name"));
        if (name && !strcmp(name, "thread_name")) {
            const char *tn = json_string_value(json_object_get(json_object_get(x, "args"), "name"));
            if (tn && strstr(tn, "NVTX ranges, thread 1")) track++;
        }
        if (!cat || strcmp(cat, "nvtx,program") != 0) continue;
        slices++;
        json_t *args = json_object_get(x, "args");
        if (!strcmp(name, "forward")) {
            forward++;
            CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(args, "domain")), "(default)");
            CU_ASSERT_EQUAL(json_integer_value(json_object_get(args, "depth")), 1);
            ASSERT_NEAR(json_number_value(json_object_get(x, "dur")), 5.0);
        }
        if (json_object_get(args, "never popped")) open++;
    }
    CU_ASSERT_EQUAL(slices, 16);
    CU_ASSERT_EQUAL(forward, 3);
    CU_ASSERT_EQUAL(open, 1);
    CU_ASSERT_TRUE(track >= 1);
    json_decref(j);
    unlink(path);
    gr_timeline_destroy(tl);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
}

static char out[1 << 18];

static int ls(const char *args) {
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "'%s' %s", gr_test_bin("cupti-launchstat"), args);
    return gr_test_popen(NULL, cmd, out, sizeof(out));
}

/* cupti-launchstat report: the table with --top, a comparison of two NVTX scopes, the unknown
 * name listing the ranges, --no-nvtx as a run option that needs a command. */
static void test_cli(void) {
    tb b;
    const char *text = nvtx_trace(&b);
    const char *path = gr_test_tmpfile(".jsonl", text, strlen(text));
    CU_ASSERT_PTR_NOT_NULL_FATAL(path);
    char args[1024];
    snprintf(args, sizeof(args), "report %s --top 2 --no-predict", path);
    CU_ASSERT_EQUAL(ls(args), 0);
    GR_ASSERT_CONTAINS(out, "NVTX ranges of the program");
    GR_ASSERT_CONTAINS(out, "(6 more NVTX ranges");
    GR_ASSERT_CONTAINS(out, "warning: ");
    GR_ASSERT_CONTAINS(out, "NVTX pop without a matching push");
    snprintf(args, sizeof(args),
             "report %s --region 'step #' --compare %s --compare-region forward --no-predict", path,
             path);
    CU_ASSERT_EQUAL(ls(args), 0);
    GR_ASSERT_CONTAINS(out, "compare (traced)");
    GR_ASSERT_CONTAINS(out, ":step #");
    GR_ASSERT_CONTAINS(out, ":forward");
    snprintf(args, sizeof(args), "report %s --region nope --compare %s", path, path);
    CU_ASSERT_EQUAL(ls(args), 2);
    GR_ASSERT_CONTAINS(out, "NVTX ranges: \"lib: outer lib\"");
    snprintf(args, sizeof(args), "report %s --json - --no-predict", path);
    CU_ASSERT_EQUAL(ls(args), 0);
    GR_ASSERT_CONTAINS(out, "\"nvtx_ranges\": [");
    CU_ASSERT_EQUAL(ls("--help"), 0);
    GR_ASSERT_CONTAINS(out, "--no-nvtx");
    CU_ASSERT_EQUAL(ls("--no-nvtx --capture-check -- true"), 2);
    GR_ASSERT_CONTAINS(out, "--no-nvtx has no effect with --capture-check");
    unlink(path);
    free(b.p);
}

/* Random annotation (unbalanced, overlapping, ids reused, several threads and domains) never
 * crashes and keeps the figures sane: busy within the span, idle >= 0, no scope with more records
 * than the trace, instances + nested ranges = the ranges of the scope. */
static unsigned rnd_seed;
static int rnd(int n) {
    rnd_seed = rnd_seed * 1103515245u + 12345u;
    return (int)((rnd_seed >> 8) % (unsigned)n);
}

static void test_random_annotation(void) {
    rnd_seed = 12345;
    for (int round = 0; round < 40; round++) {
        tb b;
        tb_init(&b, "\"nvtx\":true");
        int nev = 20 + rnd(200);
        for (int i = 0; i < nev; i++) {
            long long t = rnd(100000);
            unsigned tid = 1 + (unsigned)rnd(3);
            const char *dom = rnd(3) == 0 ? "d" : NULL;
            char msg[32];
            snprintf(msg, sizeof(msg), "%s %d", rnd(2) ? "r" : "q", rnd(4));
            switch (rnd(5)) {
            case 0:
                tb_push(&b, tid, t, dom, msg);
                break;
            case 1:
                tb_pop(&b, tid, t, dom);
                break;
            case 2:
                tb_printf(&b,
                          "{\"t\":\"nvtx_push\",\"s\":%lld,\"tid\":%u,\"id\":%d,\"msg\":\"%s\"}", t,
                          tid, rnd(4), msg);
                break;
            case 3:
                tb_printf(&b, "{\"t\":\"nvtx_pop\",\"s\":%lld,\"tid\":%u,\"id\":%d}", t, tid,
                          rnd(4));
                break;
            default:
                tb_launch(&b, tid, t, rnd(2) ? "a" : "b", t + 500 + rnd(3000), t + 4000 + rnd(3000),
                          7 + (unsigned)rnd(2));
            }
        }
        gr_trace *t;
        gr_ls_report *r = analyze(tb_end(&b, 200000), &t, NULL);
        size_t ranges = 0;
        for (size_t i = 0; i < r->nnvtx; i++) {
            const gr_ls_scope *s = &r->nvtx[i];
            CU_ASSERT_TRUE(s->kernels <= r->all.kernels);
            CU_ASSERT_TRUE(s->api_calls <= r->all.api_calls);
            CU_ASSERT_TRUE(s->busy_us <= s->gpu_span_us + 1e-9);
            CU_ASSERT_TRUE(s->idle_us >= -1e-9);
            CU_ASSERT_TRUE(s->instances >= 1);
            CU_ASSERT_TRUE(s->host_span_us >= 0);
            for (size_t k = 0; k < s->nstreams; k++)
                CU_ASSERT_TRUE(s->streams[k].busy_us + s->streams[k].idle_us <=
                               s->gpu_span_us + 1e-6);
            ranges += s->instances + s->nested_ranges;
        }
        CU_ASSERT_EQUAL(ranges, t->nvtx.n);
        char *text = print_to_string(gr_ls_print, r);
        CU_ASSERT_PTR_NOT_NULL(text);
        free(text);
        json_decref(gr_ls_json(r));
        gr_timeline *tl = NULL;
        gr_error e;
        CU_ASSERT_EQUAL(gr_timeline_build(t, NULL, 0, &tl, &e), GR_OK);
        gr_timeline_destroy(tl);
        gr_ls_report_destroy(r);
        gr_trace_destroy(t);
        free(b.p);
    }
}

static CU_TestInfo nvtx_tests[] = {
    {"range names to scope keys", test_key},
    {"the collector's lines read back", test_format_roundtrip},
    {"push/pop and start/end pairing", test_reader_pairs},
    {"bad records name their line; old traces", test_reader_errors},
    {"a scope per range name", test_analysis_scopes},
    {"profiler regions and NVTX scopes together", test_analysis_with_regions},
    {"text, warnings and JSON", test_report},
    {"Chrome export", test_chrome},
    {"command line", test_cli},
    {"random annotation", test_random_annotation},
    CU_TEST_INFO_NULL};

/* ---- suite gpu_nvtx: cupti-launchstat around real programs ---- */

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...) {
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return gr_test_popen(NULL, cmd, out, sizeof(out));
}

static void print_scopes(const gr_trace *t, const gr_ls_report *r) {
    printf("\n    %zu NVTX ranges, %zu scopes; nvtx %s, %llu calls seen; %zu unmatched pops, %zu "
           "never popped",
           t->nvtx.n, r->nnvtx, t->nvtx_traced ? "on" : "off",
           (unsigned long long)t->end_nvtx_calls, t->nvtx_unmatched_pop.n, t->nvtx_open.n);
    for (size_t i = 0; i < r->nnvtx && i < 24; i++) {
        const gr_ls_scope *s = &r->nvtx[i];
        printf(
            "\n      %-56.56s inst %4zu kernels %6zu (graph %zu) launches %6zu graph launches %4zu",
            s->name, s->instances, s->kernels, s->graph_kernels, s->launch_calls,
            s->graph_launch_calls);
    }
}

static const gr_ls_scope *scope_ending(const gr_ls_report *r, const char *domain,
                                       const char *suffix) {
    for (size_t i = 0; i < r->nnvtx; i++) {
        const gr_ls_scope *s = &r->nvtx[i];
        size_t n = strlen(s->key), k = strlen(suffix);
        if (!strcmp(s->domain, domain) && n >= k && !strcmp(s->key + n - k, suffix)) return s;
    }
    return NULL;
}

/* graphrun under cupti-launchstat: graphrun annotates its phases, steps and ops in the
 * "graphrun" NVTX domain when a tool is attached, which cupti-launchstat now makes it. */
static void test_graphrun_ranges(void) {
    GR_REQUIRE_GPU();
    const char *path = "/tmp/gr_gpu_nvtx_graphrun.jsonl";
    int rc = sh("'%s' -o %s --no-report -- '%s' run workloads/launch_bound.json --variant tiny "
                "--set K=10 --iters 20 "
                "--no-bandwidth --no-cpu-ref --quiet",
                gr_test_bin("cupti-launchstat"), path, gr_test_bin("graphrun"));
    if (rc != 0) printf("\n%s", out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    gr_error e;
    gr_error_clear(&e);
    gr_trace *t = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_trace_load(path, 0, &t, &e), GR_OK);
    gr_ls_report *r = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_ls_analyze(t, NULL, &r, &e), GR_OK);
    print_scopes(t, r);
    CU_ASSERT_TRUE(t->nvtx_traced);
    CU_ASSERT_TRUE(t->has_nvtx_calls && t->end_nvtx_calls > 0);
    CU_ASSERT_TRUE(t->nvtx.n > 0);
    CU_ASSERT_EQUAL(t->nvtx_unmatched_pop.n, 0);
    CU_ASSERT_EQUAL(t->nvtx_open.n, 0);
    /* each eager timing step launches the K = 10 kernels of the plan inside its step range */
    const gr_ls_scope *eager = scope_ending(r, "graphrun", " eager step #");
    CU_ASSERT_PTR_NOT_NULL_FATAL(eager);
    CU_ASSERT_TRUE(eager->instances >= 20);
    CU_ASSERT_EQUAL(eager->kernels, 10 * eager->instances);
    CU_ASSERT_EQUAL(eager->launch_calls, 10 * eager->instances);
    CU_ASSERT_EQUAL(eager->graph_kernels, 0);
    CU_ASSERT_EQUAL(eager->depth, 1); /* inside the phase range */
    CU_ASSERT_TRUE(eager->latency_us.n > 0);
    /* graph replay steps launch the graph */
    const gr_ls_scope *replay = scope_ending(r, "graphrun", " replay step #");
    CU_ASSERT_PTR_NOT_NULL_FATAL(replay);
    CU_ASSERT_TRUE(replay->graph_launch_calls >= 1);
    CU_ASSERT_TRUE(replay->graph_kernels >= 10);
    CU_ASSERT_EQUAL(replay->eager_kernels, 0);
    /* the report lists them */
    rc = sh("'%s' report %s --top 40 --no-predict", gr_test_bin("cupti-launchstat"), path);
    CU_ASSERT_EQUAL(rc, 0);
    GR_ASSERT_CONTAINS(out, "NVTX ranges of the program");
    GR_ASSERT_CONTAINS(out, " eager step #");
    /* --no-nvtx: no NVTX records, and graphrun sees no tool */
    rc = sh("'%s' -o %s --no-report --no-nvtx -- '%s' run workloads/launch_bound.json --variant "
            "tiny --set K=10 "
            "--iters 20 --no-bandwidth --no-cpu-ref --quiet",
            gr_test_bin("cupti-launchstat"), path, gr_test_bin("graphrun"));
    CU_ASSERT_EQUAL(rc, 0);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    t = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_trace_load(path, 0, &t, &e), GR_OK);
    CU_ASSERT_FALSE(t->nvtx_traced);
    CU_ASSERT_EQUAL(t->nvtx.n, 0);
    gr_trace_destroy(t);
    unlink(path);
}

/* A PyTorch program: torch.cuda.nvtx push/pop (nested), record_function and every aten op under
 * emit_nvtx, and a start/end range when this torch has them. */
static void test_torch_ranges(void) {
    GR_REQUIRE_GPU();
    if (sh("python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)'") !=
        0) {
        gr_test_skip(__func__, "no python3 with CUDA-enabled torch");
        return;
    }
    const char *prog = "/tmp/gr_gpu_nvtx_torch.py", *path = "/tmp/gr_gpu_nvtx_torch.jsonl";
    const char *src = "import torch\n"
                      "from torch.autograd.profiler import emit_nvtx, record_function\n"
                      "x = torch.ones(4096, device='cuda')\n"
                      "torch.cuda.synchronize()\n"
                      "se = hasattr(torch.cuda.nvtx, 'range_start')\n"
                      "rid = torch.cuda.nvtx.range_start('window') if se else None\n"
                      "for i in range(5):\n"
                      "    torch.cuda.nvtx.range_push(f'step {i}')\n"
                      "    torch.cuda.nvtx.range_push('forward')\n"
                      "    for _ in range(3):\n"
                      "        x = x * 1.0001\n"
                      "    torch.cuda.nvtx.range_pop()\n"
                      "    with emit_nvtx():\n"
                      "        with record_function('tail'):\n"
                      "            x = x + 1\n"
                      "    torch.cuda.nvtx.range_pop()\n"
                      "if se:\n"
                      "    torch.cuda.nvtx.range_end(rid)\n"
                      "torch.cuda.synchronize()\n"
                      "print('start/end ranges:', se)\n";
    FILE *f = fopen(prog, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(src, f);
    fclose(f);
    int rc =
        sh("'%s' -o %s --no-report -- python3 %s", gr_test_bin("cupti-launchstat"), path, prog);
    printf("\n%s", out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    int start_end = strstr(out, "start/end ranges: True") != NULL;
    gr_error e;
    gr_error_clear(&e);
    gr_trace *t = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_trace_load(path, 0, &t, &e), GR_OK);
    gr_ls_report *r = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_ls_analyze(t, NULL, &r, &e), GR_OK);
    print_scopes(t, r);
    CU_ASSERT_TRUE(t->nvtx_traced);
    CU_ASSERT_EQUAL(t->nvtx_unmatched_pop.n, 0);
    CU_ASSERT_EQUAL(t->nvtx_open.n, 0);
    const gr_ls_scope *step = scope_named(r, "step #"), *fwd = scope_named(r, "forward");
    const gr_ls_scope *tail = scope_named(r, "tail");
    CU_ASSERT_PTR_NOT_NULL_FATAL(step);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fwd);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tail);
    CU_ASSERT_EQUAL(step->instances, 5);
    CU_ASSERT_EQUAL(fwd->instances, 5);
    CU_ASSERT_STRING_EQUAL(fwd->parent_path, "step #");
    CU_ASSERT_EQUAL(fwd->kernels, 15); /* x * 1.0001: one elementwise kernel each */
    CU_ASSERT_EQUAL(fwd->launch_calls, 15);
    CU_ASSERT_EQUAL(tail->instances, 5);
    CU_ASSERT_EQUAL(tail->kernels, 5);
    CU_ASSERT_TRUE(step->kernels >= 20);
    /* emit_nvtx's "aten::add, seq = N, ..." names: one scope */
    const gr_ls_scope *add = scope_named(r, "aten::add");
    CU_ASSERT_PTR_NOT_NULL(add);
    if (add) CU_ASSERT_TRUE(add->instances >= 5 && add->kernels >= 5);
    if (start_end) {
        const gr_ls_scope *w = scope_named(r, "window");
        CU_ASSERT_PTR_NOT_NULL(w);
        if (w) {
            CU_ASSERT_EQUAL(w->instances, 1);
            CU_ASSERT_TRUE(w->kernels >= 20);
        }
    }
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    unlink(path);
    unlink(prog);
}

static CU_TestInfo gpu_nvtx_tests[] = {
    {"graphrun's NVTX domain under cupti-launchstat", test_graphrun_ranges},
    {"a PyTorch program's NVTX ranges", test_torch_ranges},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_nvtx_suites[] = {
    {"nvtx_ranges", nvtx_tests, 0}, {"gpu_nvtx", gpu_nvtx_tests, 1}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_nvtx_suites)
