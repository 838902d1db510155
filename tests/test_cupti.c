/* cupti-launchstat CPU suites: the line parser, the trace reader (every error names its line),
 * the analysis against numbers computed independently here from synthetic traces with known
 * timelines, the report and comparison, the CUPTI record formatter fed with hand-made CUPTI
 * records, the writer's bounded buffer pool, the cupti-launchstat command end to end (exit
 * codes, messages, a fake traced program), and the recorded H200 fixtures in tests/data/ cross-
 * checked with a separate jansson-based reader. None of it needs a GPU. */
#define _GNU_SOURCE /* dladdr, RTLD_DEFAULT: the injection's NVTX entry points */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cupti_tools/analysis.h"
#include "cupti_tools/collector.h"
#include "cupti_tools/cupti_check.h"
#include "cupti_tools/format.h"
#include "cupti_tools/jsonl.h"
#include "cupti_tools/report.h"
#include "cupti_tools/trace.h"
#include "cupti_tools/writer.h"
#include "kernels/registry.h"
#include "replay/trace.h"
#include "tests.h"

#define NEAR(a, b) (fabs((double)(a) - (double)(b)) <= 1e-9 * (1.0 + fabs((double)(b))))
#define ASSERT_NEAR(a, b)                                                                          \
    do {                                                                                           \
        double a_ = (double)(a), b_ = (double)(b);                                                 \
        if (!NEAR(a_, b_)) fprintf(stderr, "\n    %s = %.12g, expected %.12g (line %d)", #a, a_, b_, __LINE__); \
        CU_ASSERT(NEAR(a_, b_));                                                                   \
    } while (0)

/* ---- an independent little toolbox: quantiles and a trace builder ---- */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* linear interpolation between order statistics (numpy's default) */
static double quant(double *v, size_t n, double q) {
    if (n == 0) return 0;
    qsort(v, n, sizeof(double), cmp_d);
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    if (lo + 1 >= n) return v[n - 1];
    return v[lo] + (pos - (double)lo) * (v[lo + 1] - v[lo]);
}

typedef struct tb {
    char *p;
    size_t len, cap;
    int records;
    char names[256][160];
    int nnames;
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
    tb_printf(b, "{\"t\":\"header\",\"schema_version\":1,\"tool\":\"test\",\"tool_version\":\"0\",\"mode\":\"injection\","
                 "\"t0\":1000000000,\"command\":\"./app --x\",\"device\":\"Test GPU\",\"cc\":\"9.0\","
                 "\"driver_version\":13000,\"latency\":false%s%s}",
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

static void tb_kernel(tb *b, const char *name, long long s, long long e, unsigned stream, unsigned corr, unsigned gid,
                      unsigned long long nid) {
    int id = tb_name(b, name);
    char graph[96] = "";
    if (gid || nid) snprintf(graph, sizeof(graph), ",\"gid\":%u,\"nid\":%llu", gid, nid);
    tb_printf(b, "{\"t\":\"k\",\"n\":%d,\"s\":%lld,\"e\":%lld,\"dev\":0,\"ctx\":1,\"str\":%u,\"corr\":%u,"
                 "\"g\":[1,1,1],\"b\":[32,1,1]%s}",
              id, s, e, stream, corr, graph);
    b->records++;
}

static void tb_api(tb *b, const char *name, int driver, long long s, long long e, unsigned tid, unsigned corr) {
    int id = tb_name(b, name);
    tb_printf(b, "{\"t\":\"api\",\"d\":\"%s\",\"cb\":1,\"n\":%d,\"s\":%lld,\"e\":%lld,\"tid\":%u,\"corr\":%u,\"ret\":0}",
              driver ? "drv" : "rt", id, s, e, tid, corr);
    b->records++;
}

static const char *tb_end(tb *b, long long dropped) {
    tb_printf(b, "{\"t\":\"end\",\"records\":%d,\"dropped\":%lld,\"reason\":\"exit\"}", b->records, dropped);
    return b->p;
}

static gr_trace *load_text(const char *text, int partial, gr_error *e) {
    gr_error_clear(e);
    gr_trace *t = NULL;
    gr_trace_load_mem(text, strlen(text), "t.jsonl", partial, &t, e);
    return t;
}

/* Expect a load failure whose message contains `needle`. */
static void expect_bad(const char *text, const char *needle) {
    gr_error e;
    gr_trace *t = load_text(text, 0, &e);
    CU_ASSERT_PTR_NULL(t);
    gr_trace_destroy(t);
    CU_ASSERT_EQUAL(e.code, GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, needle);
    GR_ASSERT_CONTAINS(e.msg, "t.jsonl");
}

#define HDR "{\"t\":\"header\",\"schema_version\":1,\"t0\":5}\n"
#define END0 "{\"t\":\"end\",\"records\":0,\"dropped\":0}\n"

/* ---- suite cupti_jsonl ---- */

static void test_jsonl_values(void) {
    char line[] = "{\"a\": 12, \"b\":-3.5e2 ,\"c\":\"x\\ty\\\"\\u00e9\\ud83d\\ude00\", \"d\":[1, 2.5,-3], \"e\":true,"
                  "\"f\":null, \"g\":1764412345678901234, \"h\":[]}";
    gr_jline l;
    int col = 0;
    char msg[128];
    CU_ASSERT_TRUE_FATAL(gr_jline_parse(line, strlen(line), &l, &col, msg, sizeof(msg)));
    CU_ASSERT_EQUAL(l.n, 8);
    const gr_jfield *f = gr_jline_get(&l, "a");
    CU_ASSERT_TRUE(f && f->type == GR_JV_NUM && f->is_int && f->i == 12);
    f = gr_jline_get(&l, "b");
    CU_ASSERT_TRUE(f && !f->is_int && f->d == -350.0);
    f = gr_jline_get(&l, "c");
    CU_ASSERT_TRUE_FATAL(f && f->type == GR_JV_STR);
    CU_ASSERT_STRING_EQUAL(f->s, "x\ty\"\xc3\xa9\xf0\x9f\x98\x80");
    CU_ASSERT_EQUAL(f->s_len, strlen("x\ty\"\xc3\xa9\xf0\x9f\x98\x80"));
    f = gr_jline_get(&l, "d");
    CU_ASSERT_TRUE(f && f->type == GR_JV_ARR && f->n == 3 && f->a[1] == 2.5 && f->a[2] == -3);
    CU_ASSERT_TRUE(gr_jline_get(&l, "e")->type == GR_JV_BOOL && gr_jline_get(&l, "e")->d == 1);
    CU_ASSERT_EQUAL(gr_jline_get(&l, "f")->type, GR_JV_NULL);
    f = gr_jline_get(&l, "g");
    CU_ASSERT_TRUE(f && f->is_int && f->i == 1764412345678901234LL); /* exact, not through a double */
    CU_ASSERT_EQUAL(gr_jline_get(&l, "h")->n, 0);
    CU_ASSERT_PTR_NULL(gr_jline_get(&l, "zz"));
    char empty[] = "{}";
    CU_ASSERT_TRUE(gr_jline_parse(empty, 2, &l, &col, msg, sizeof(msg)));
    CU_ASSERT_EQUAL(l.n, 0);
}

static void expect_parse_error(const char *text, int want_col, const char *needle) {
    char line[512];
    snprintf(line, sizeof(line), "%s", text);
    gr_jline l;
    int col = 0;
    char msg[256] = "";
    CU_ASSERT_FALSE(gr_jline_parse(line, strlen(line), &l, &col, msg, sizeof(msg)));
    if (col != want_col) fprintf(stderr, "\n    \"%s\": column %d, expected %d (%s)", text, col, want_col, msg);
    CU_ASSERT_EQUAL(col, want_col);
    GR_ASSERT_CONTAINS(msg, needle);
}

static void test_jsonl_errors(void) {
    expect_parse_error("", 1, "empty line");
    expect_parse_error("[1]", 1, "expected '{'");
    expect_parse_error("{\"a\":1", 7, "truncated record");
    expect_parse_error("{\"a\":1}x", 8, "unexpected text after the object");
    expect_parse_error("{\"a\":\"abc", 6, "unterminated string");
    expect_parse_error("{\"a\":\"a\\q\"}", 8, "invalid escape");
    expect_parse_error("{\"a\":01}", 6, "leading zeros");
    expect_parse_error("{\"a\":{\"b\":1}}", 6, "nested objects");
    expect_parse_error("{\"a\":1,\"a\":2}", 12, "duplicate key \"a\"");
    expect_parse_error("{\"a\":[\"x\"]}", 7, "numbers only");
    expect_parse_error("{\"a\":[1,2,3,4,5,6,7,8,9]}", 23, "longer than 8");
    expect_parse_error("{\"a\":tru}", 6, "invalid value");
    expect_parse_error("{a:1}", 2, "expected a key");
    expect_parse_error("{\"a\" 1}", 6, "expected ':'");
    expect_parse_error("{\"a\":1 \"b\":2}", 8, "expected ',' or '}'");
    expect_parse_error("{\"a\":\"x\x01y\"}", 8, "control character");
    expect_parse_error("{\"a\":1.}", 8, "digit after '.'");
    expect_parse_error("{\"a\":1e}", 8, "exponent");
    expect_parse_error("{\"a\":\"\\ud800x\"}", 13, "low surrogate");
    expect_parse_error("{\"a\":\"\\u0000\"}", 7, "\\u0000");
    expect_parse_error("{\"a\":1e999}", 6, "out of range");
}

/* gr_sb_jstr output must parse back to the same bytes, for any string (invalid UTF-8 becomes
 * U+FFFD), and integers must survive exactly. */
static void test_jsonl_roundtrip(void) {
    srand(7);
    for (int iter = 0; iter < 2000; iter++) {
        char s[64];
        int n = rand() % 40;
        for (int i = 0; i < n; i++) {
            int r = rand() % 10;
            s[i] = r == 0 ? (char)(1 + rand() % 31) : r == 1 ? '"' : r == 2 ? '\\' : (char)(32 + rand() % 95);
        }
        s[n] = '\0';
        gr_sbuf b;
        gr_sb_init(&b);
        gr_sb_raw(&b, "{", 1);
        gr_sb_kv_str(&b, "s", s);
        gr_sb_kv_i64(&b, "i", (int64_t)rand() * (rand() % 2 ? -1 : 1) * 1000003LL);
        gr_sb_raw(&b, "}", 1);
        gr_jline l;
        int col;
        char msg[128];
        CU_ASSERT_TRUE_FATAL(gr_jline_parse(b.p, b.len, &l, &col, msg, sizeof(msg)));
        CU_ASSERT_STRING_EQUAL(gr_jline_get(&l, "s")->s, s);
        gr_sb_free(&b);
    }
    gr_sbuf b;
    gr_sb_init(&b);
    gr_sb_raw(&b, "{", 1);
    gr_sb_kv_i64(&b, "min", INT64_MIN);
    gr_sb_kv_i64(&b, "max", INT64_MAX);
    gr_sb_kv_u64(&b, "zero", 0);
    gr_sb_kv_str(&b, "bad", "a\xff\xfe" "b\xc3\xa9");
    gr_sb_kv_dbl(&b, "nan", NAN);
    gr_sb_kv_dbl(&b, "pi", 3.141592653589793);
    gr_sb_raw(&b, "}", 1);
    /* jansson agrees the line is JSON (before our parser unescapes it in place) */
    json_error_t je;
    json_t *j = json_loads(b.p, 0, &je);
    CU_ASSERT_PTR_NOT_NULL(j);
    json_decref(j);
    gr_jline l;
    int col;
    char msg[128];
    CU_ASSERT_TRUE_FATAL(gr_jline_parse(b.p, b.len, &l, &col, msg, sizeof(msg)));
    CU_ASSERT_EQUAL(gr_jline_get(&l, "min")->i, INT64_MIN);
    CU_ASSERT_EQUAL(gr_jline_get(&l, "max")->i, INT64_MAX);
    CU_ASSERT_EQUAL(gr_jline_get(&l, "zero")->i, 0);
    CU_ASSERT_STRING_EQUAL(gr_jline_get(&l, "bad")->s, "a\xef\xbf\xbd\xef\xbf\xbd" "b\xc3\xa9");
    CU_ASSERT_EQUAL(gr_jline_get(&l, "nan")->type, GR_JV_NULL);
    CU_ASSERT_EQUAL(gr_jline_get(&l, "pi")->d, 3.141592653589793);
    gr_sb_free(&b);
}

static void test_api_categories(void) {
    CU_ASSERT_EQUAL(gr_api_category("cudaLaunchKernel"), GR_API_LAUNCH);
    CU_ASSERT_EQUAL(gr_api_category("cudaLaunchKernelExC"), GR_API_LAUNCH);
    CU_ASSERT_EQUAL(gr_api_category("cuLaunchKernel"), GR_API_LAUNCH);
    CU_ASSERT_EQUAL(gr_api_category("cuLaunchKernelEx_ptsz"), GR_API_LAUNCH);
    CU_ASSERT_EQUAL(gr_api_category("__cudaLaunchKernel"), GR_API_LAUNCH); /* CUDA 13's <<<>>> */
    CU_ASSERT_EQUAL(gr_api_category("__cudaLaunchKernel_ptsz"), GR_API_LAUNCH);
    CU_ASSERT_EQUAL(gr_api_category("__cudaPushCallConfiguration"), GR_API_OTHER);
    CU_ASSERT_EQUAL(gr_api_category("___"), GR_API_OTHER);
    CU_ASSERT_EQUAL(gr_api_category(NULL), GR_API_OTHER);
    CU_ASSERT_EQUAL(gr_api_category("cudaLaunchHostFunc"), GR_API_OTHER);
    CU_ASSERT_EQUAL(gr_api_category("cuLaunchHostFunc"), GR_API_OTHER);
    CU_ASSERT_EQUAL(gr_api_category("cudaGraphLaunch"), GR_API_GRAPH_LAUNCH);
    CU_ASSERT_EQUAL(gr_api_category("cuGraphLaunch_ptsz"), GR_API_GRAPH_LAUNCH);
    CU_ASSERT_EQUAL(gr_api_category("cudaMemcpyAsync"), GR_API_MEMCPY);
    CU_ASSERT_EQUAL(gr_api_category("cuMemsetD32Async"), GR_API_MEMSET);
    CU_ASSERT_EQUAL(gr_api_category("cudaStreamSynchronize"), GR_API_SYNC);
    CU_ASSERT_EQUAL(gr_api_category("cuCtxSynchronize"), GR_API_SYNC);
    CU_ASSERT_EQUAL(gr_api_category("cudaProfilerStart"), GR_API_PROFILER);
    CU_ASSERT_EQUAL(gr_api_category("cuProfilerStop"), GR_API_PROFILER);
    CU_ASSERT_EQUAL(gr_api_category("cudaGraphAddKernelNode"), GR_API_GRAPH_BUILD);
    CU_ASSERT_EQUAL(gr_api_category("cudaGraphAddMemcpyNode"), GR_API_GRAPH_BUILD);
    CU_ASSERT_EQUAL(gr_api_category("cudaGraphInstantiateWithFlags"), GR_API_GRAPH_BUILD);
    CU_ASSERT_EQUAL(gr_api_category("cudaStreamBeginCapture"), GR_API_GRAPH_BUILD);
    CU_ASSERT_EQUAL(gr_api_category("cudaGraphExecKernelNodeSetParams"), GR_API_OTHER);
    CU_ASSERT_EQUAL(gr_api_category("cudaEventRecord"), GR_API_EVENT);
    CU_ASSERT_EQUAL(gr_api_category("cudaStreamWaitEvent"), GR_API_EVENT);
    CU_ASSERT_EQUAL(gr_api_category("cudaMalloc"), GR_API_OTHER);
    CU_ASSERT_EQUAL(gr_api_category(""), GR_API_OTHER);
    char out[64];
    gr_api_strip_version("cudaLaunchKernel_v7000", out, sizeof(out));
    CU_ASSERT_STRING_EQUAL(out, "cudaLaunchKernel");
    gr_api_strip_version("cudaGraphLaunch_ptsz_v10000", out, sizeof(out));
    CU_ASSERT_STRING_EQUAL(out, "cudaGraphLaunch_ptsz");
    gr_api_strip_version("cuLaunchKernel", out, sizeof(out));
    CU_ASSERT_STRING_EQUAL(out, "cuLaunchKernel");
    gr_api_strip_version("cuMemcpy_v", out, sizeof(out));
    CU_ASSERT_STRING_EQUAL(out, "cuMemcpy_v");
}

/* ---- suite cupti_trace: the reader ---- */

static void test_reader_records(void) {
    const char *text =
        "{\"t\":\"header\",\"schema_version\":1,\"tool\":\"cupti-launchstat\",\"tool_version\":\"0.1.0\",\"mode\":\"in-process\","
        "\"t0\":1764412345678901234,\"start_unix_ns\":1764412345000000000,\"pid\":42,\"command\":\"graphrun run x\","
        "\"device\":\"NVIDIA H200\",\"cc\":\"9.0\",\"driver_version\":13000,\"runtime_version\":13000,"
        "\"cupti_version\":130001,\"latency\":true,\"steps\":7,\"kinds\":\"kernel\",\"apis\":\"runtime: 3 APIs\"}\n"
        "{\"t\":\"name\",\"id\":1,\"s\":\"_Z4tinyPfi\"}\n"
        "{\"t\":\"name\",\"id\":2,\"s\":\"cudaLaunchKernel\"}\n"
        "{\"t\":\"api\",\"d\":\"rt\",\"cb\":211,\"n\":2,\"s\":100,\"e\":4100,\"tid\":9,\"corr\":5,\"ret\":0}\n"
        "{\"t\":\"k\",\"n\":1,\"s\":9000,\"e\":11000,\"dev\":0,\"ctx\":1,\"str\":13,\"corr\":5,\"g\":[2,1,1],"
        "\"b\":[256,1,1],\"reg\":16,\"smem\":0,\"q\":5000,\"sub\":7000,\"future_field\":\"ignored\"}\n"
        "{\"t\":\"cpy\",\"kind\":\"DtoD\",\"bytes\":4096,\"s\":12000,\"e\":13000,\"dev\":0,\"ctx\":1,\"str\":13,\"corr\":6}\n"
        "{\"t\":\"set\",\"bytes\":64,\"val\":0,\"s\":0,\"e\":0,\"inc\":1,\"dev\":0,\"ctx\":1,\"str\":13,\"corr\":7}\n"
        "{\"t\":\"ext\",\"corr\":5,\"id\":4294967297,\"kind\":3}\n"
        "{\"t\":\"ovh\",\"kind\":\"cupti_buffer_flush\",\"s\":20000,\"e\":25000}\n"
        "{\"t\":\"node\",\"nid\":77,\"gid\":3,\"ty\":0,\"api\":\"cudaLaunchKernel\",\"corr\":8,\"tag\":4294967297}\n"
        "{\"t\":\"node\",\"nid\":78,\"gid\":4,\"ty\":0,\"orig\":77}\n"
        "{\"t\":\"op\",\"tag\":4294967297,\"variant\":\"fused\",\"index\":0,\"name\":\"tiny.0\",\"kernel\":\"tiny\"}\n"
        "{\"t\":\"region\",\"name\":\"fused eager\",\"variant\":\"fused\",\"mode\":\"eager\",\"s\":50,\"e\":30000,"
        "\"steps\":3,\"traced_step_us\":9.5,\"untraced_step_us\":3.25}\n"
        "{\"t\":\"ctx\",\"ctx\":1,\"dev\":0,\"name\":\"NVIDIA H200\",\"cc\":\"9.0\",\"sms\":132}\n"
        "{\"t\":\"something_new\",\"x\":1}\n"
        "\n"
        "{\"t\":\"end\",\"records\":6,\"dropped\":2,\"buffers\":3,\"waits\":1,\"reason\":\"exit\",\"e\":40000}\n";
    gr_error e;
    gr_trace *t = load_text(text, 0, &e);
    if (!t) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(t->schema_version, 1);
    CU_ASSERT_EQUAL(t->t0, 1764412345678901234LL);
    CU_ASSERT_STRING_EQUAL(t->device, "NVIDIA H200");
    CU_ASSERT_STRING_EQUAL(t->mode, "in-process");
    CU_ASSERT_EQUAL(t->steps, 7);
    CU_ASSERT_EQUAL(t->latency, 1);
    CU_ASSERT_EQUAL(t->pid, 42);
    CU_ASSERT_EQUAL(t->gpu.n, 3);
    const gr_tr_gpu *k = &t->gpu.v[0];
    CU_ASSERT_EQUAL(k->kind, GR_GPU_KERNEL);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, k->name), "_Z4tinyPfi");
    CU_ASSERT_TRUE(k->s == 9000 && k->e == 11000 && k->q == 5000 && k->sub == 7000 && k->stream == 13 && k->corr == 5);
    CU_ASSERT_TRUE(k->grid[0] == 2 && k->block[0] == 256 && k->line == 5);
    CU_ASSERT_EQUAL(t->gpu.v[1].kind, GR_GPU_MEMCPY);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, t->gpu.v[1].name), "DtoD");
    CU_ASSERT_EQUAL(t->gpu.v[1].bytes, 4096);
    CU_ASSERT_TRUE(t->gpu.v[2].kind == GR_GPU_MEMSET && t->gpu.v[2].incomplete);
    CU_ASSERT_EQUAL(t->api.n, 1);
    CU_ASSERT_TRUE(t->api.v[0].cbid == 211 && !t->api.v[0].driver && t->api.v[0].cat == GR_API_LAUNCH);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, t->api.v[0].name), "cudaLaunchKernel");
    CU_ASSERT_TRUE(t->ext.n == 1 && t->ext.v[0].id == 4294967297ULL && t->ext.v[0].kind == 3);
    CU_ASSERT_TRUE(t->ovh.n == 1 && t->ovh.v[0].e == 25000);
    CU_ASSERT_TRUE(t->node.n == 2 && t->node.v[1].orig == 77 && t->node.v[0].tag == 4294967297ULL);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, t->node.v[0].api), "cudaLaunchKernel");
    CU_ASSERT_TRUE(t->op.n == 1 && t->region.n == 1 && t->ctx.n == 1);
    CU_ASSERT_EQUAL(t->region.v[0].traced_step_us, 9.5);
    CU_ASSERT_EQUAL(t->region.v[0].untraced_step_us, 3.25);
    CU_ASSERT_EQUAL(t->ctx.v[0].sms, 132);
    CU_ASSERT_EQUAL(t->unknown_records, 1);
    CU_ASSERT_TRUE(t->has_end && t->dropped == 2 && t->buffers == 3 && t->buffer_waits == 1);
    CU_ASSERT_STRING_EQUAL(t->end_reason, "exit");
    CU_ASSERT_EQUAL(t->lines, 17);
    /* the same text from a file reads the same */
    const char *p = gr_test_tmpfile(".jsonl", text, strlen(text));
    gr_trace *t2 = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_trace_load(p, 0, &t2, &e), GR_OK);
    CU_ASSERT_TRUE(t2->gpu.n == 3 && t2->api.n == 1 && t2->lines == 17 && t2->dropped == 2);
    CU_ASSERT_STRING_EQUAL(t2->path, p);
    gr_trace_destroy(t2);
    unlink(p);
    gr_trace_destroy(t);
}

static void test_reader_errors(void) {
    expect_bad("", "empty file");
    expect_bad("\n\n", "empty file");
    expect_bad("{\"t\":\"k\"}\n", "t.jsonl:1:");
    expect_bad("{\"t\":\"k\"}\n", "not a cupti-launchstat trace: the first record must be the header");
    expect_bad("hello world\n", "t.jsonl:1:1: invalid record: expected '{'");
    expect_bad("{\"x\":1}\n", "record without a string \"t\" (its kind): not a cupti-launchstat trace");
    expect_bad(HDR "{\"t\":5}\n" END0, "t.jsonl:2:6: record without a string \"t\"");
    expect_bad(HDR "{\"t\":\"k\",\"s\":1}\n" END0, "t.jsonl:2:");
    expect_bad(HDR "{\"t\":\"k\",\"s\":1}\n" END0, "\"k\" record has no \"e\"");
    expect_bad(HDR "{\"t\":\"k\",\"n\":1,\"s\":\"1\",\"e\":2,\"str\":1,\"corr\":1}\n" END0,
               "t.jsonl:2:20: \"k\" record: \"s\" must be a number (start, ns since t0), got a string");
    expect_bad(HDR "{\"t\":\"k\",\"n\":1,\"s\":1.5,\"e\":2,\"str\":1,\"corr\":1}\n" END0, "\"s\" must be a whole number");
    expect_bad(HDR "{\"t\":\"k\",\"n\":1,\"s\":1,\"e\":2,\"str\":1,\"corr\":-1}\n" END0,
               "\"corr\" must be a whole number >= 0");
    expect_bad(HDR "{\"t\":\"k\",\"n\":1,\"s\":1,\"e\":2,\"str\":1,\"corr\":5000000000}\n" END0, "\"corr\" is out of range");
    expect_bad(HDR "{\"t\":\"k\",\"n\":1,\"s\":1,\"e\":2,\"str\":1,\"corr\":1,\"g\":[1,1]}\n" END0,
               "\"g\" must have 3 numbers [x, y, z], got 2");
    /* a kernel ending before it starts is excluded and counted, not an error: badinput_launchstat */
    expect_bad(HDR "{\"t\":\"k\",\"n\":0,\"s\":1,\"e\":2,\"str\":1,\"corr\":1}\n" END0, "name id 0 out of range");
    expect_bad(HDR "{\"t\":\"api\",\"d\":\"xx\",\"cb\":1,\"n\":1,\"s\":1,\"e\":2,\"corr\":1}\n" END0,
               "\"d\" must be \"rt\" or \"drv\", got \"xx\"");
    expect_bad(HDR "{\"t\":\"api\",\"d\":\"rt\",\"cb\":1,\"n\":-4,\"s\":1,\"e\":2,\"corr\":1}\n" END0,
               "\"api\" record: name id -4 out of range");
    expect_bad("{\"t\":\"header\",\"schema_version\":2,\"t0\":1}\n" END0,
               "schema_version 2 is newer than this reader understands (1)");
    expect_bad("{\"t\":\"header\",\"schema_version\":0,\"t0\":1}\n" END0, "schema_version 0 is not valid");
    expect_bad("{\"t\":\"header\",\"schema_version\":1}\n" END0, "header\" record has no \"t0\"");
    expect_bad("{\"t\":\"header\",\"schema_version\":1,\"t0\":1,\"steps\":-2}\n" END0, "\"steps\" must be >= 0");
    expect_bad(HDR END0 "{\"t\":\"k\"}\n", "t.jsonl:3:6: \"k\" record after the end record");
    expect_bad(HDR HDR END0, "t.jsonl:2:6: a second header record");
    expect_bad(HDR "{\"t\":\"name\",\"id\":1,\"s\":\"a\"}\n{\"t\":\"name\",\"id\":1,\"s\":\"b\"}\n" END0,
               "t.jsonl:3:18: name id 1 is defined twice");
    expect_bad(HDR "{\"t\":\"name\",\"id\":99999999999,\"s\":\"a\"}\n" END0, "out of range");
    expect_bad(HDR "{\"t\":\"region\",\"name\":\"r\",\"s\":5,\"e\":1}\n" END0, "\"region\" record ends before it starts");
    expect_bad(HDR "{\"t\":\"region\",\"name\":\"r\",\"s\":1,\"e\":5,\"steps\":-1}\n" END0, "steps must be >= 0");
    expect_bad(HDR "{\"t\":\"k\",\"n\":9,\"s\":1,\"e\":2,\"str\":1,\"corr\":1}\n{\"t\":\"end\",\"records\":1,\"dropped\":0}\n",
               "t.jsonl:2: kernel record refers to name id 9, which no \"name\" record defines");
    expect_bad(HDR "{\"t\":\"api\",\"d\":\"rt\",\"cb\":1,\"n\":3,\"s\":1,\"e\":2,\"corr\":1}\n"
                   "{\"t\":\"end\",\"records\":1,\"dropped\":0}\n",
               "api record refers to name id 3");
    expect_bad(HDR "{\"t\":\"ext\",\"corr\":1,\"id\":2}\n" END0,
               "the end record counts 0 activity records but the file holds 1");
    expect_bad(HDR "{\"t\":\"ext\",\"corr\":1,\"id\":2}\n", "t.jsonl:2: the trace has no end record (line 2 is the last)");
    expect_bad(HDR "{\"t\":\"ext\",\"corr\":1,\"id\":2}\n{\"t\":\"end\",\"records\":1,\"dro",
               "t.jsonl:3:28: truncated record: the file ends in the middle of this line");
    expect_bad(HDR "{\"t\":\"ext\",\"corr\":1,\"id\":2}\n{\"t\":\"end\",\"records\":1,\"dropped\":0}}\n{\"t\":",
               "t.jsonl:3:");
    expect_bad(HDR "{\"t\":\"ext\",\"corr\":1,\"id\":2}\n{\"t\":\"end\",\"records\":1,\"dropped\":0}}\n{\"t\":",
               "unexpected text after the object");
    /* a corrupt line in the middle names its line */
    expect_bad(HDR "{\"t\":\"ext\",\"corr\":1,\"id\":2}\n{\"t\":\"ext\",\"corr\":1,,\"id\":2}\n"
                   "{\"t\":\"end\",\"records\":2,\"dropped\":0}\n",
               "t.jsonl:3:21: invalid record: expected a key in double quotes");
    /* a NUL byte (binary garbage) */
    char bin[64];
    memcpy(bin, HDR, strlen(HDR));
    memcpy(bin + strlen(HDR), "{\"t\"\0:1}\n", 9);
    gr_error e;
    gr_error_clear(&e);
    gr_trace *t = NULL;
    CU_ASSERT_EQUAL(gr_trace_load_mem(bin, strlen(HDR) + 9, "t.jsonl", 0, &t, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "t.jsonl:2:5: NUL byte in the line");
    /* a missing file */
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_trace_load("/nonexistent/trace.jsonl", 0, &t, &e), GR_ERR_IO);
    GR_ASSERT_CONTAINS(e.msg, "/nonexistent/trace.jsonl: cannot open the trace");
    CU_ASSERT_EQUAL(gr_exit_code(e.code), 2);
}

static void test_reader_partial(void) {
    gr_error e;
    /* without an end record */
    gr_trace *t = load_text(HDR "{\"t\":\"ext\",\"corr\":1,\"id\":2}\n", 1, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_FALSE(t->has_end);
    CU_ASSERT_EQUAL(t->ext.n, 1);
    gr_trace_destroy(t);
    /* and with its last line cut: the cut record is dropped, the rest is kept */
    t = load_text(HDR "{\"t\":\"name\",\"id\":1,\"s\":\"k\"}\n"
                      "{\"t\":\"k\",\"n\":1,\"s\":1,\"e\":2,\"str\":1,\"corr\":1}\n{\"t\":\"k\",\"n\":1,\"s\":3,\"e\"",
                  1, &e);
    if (!t) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(t->gpu.n, 1);
    CU_ASSERT_EQUAL(t->activity_records, 1);
    GR_ASSERT_CONTAINS(t->notes, "the last line (4) was cut off and skipped");
    gr_trace_destroy(t);
    /* --partial does not excuse a corrupt line in the middle */
    t = load_text(HDR "{\"t\":\"ext\",\"corr\":1,,}\n{\"t\":\"ext\",\"corr\":1,\"id\":2}\n", 1, &e);
    CU_ASSERT_PTR_NULL(t);
    GR_ASSERT_CONTAINS(e.msg, "t.jsonl:2:");
}

/* The collector's counts in the end record (API records vs launch calls seen, drops); traces
 * written before them read as "no counts". */
static void test_reader_collector_counts(void) {
    gr_error e;
    gr_trace *t = load_text(
        HDR "{\"t\":\"end\",\"records\":0,\"dropped\":2,\"api_records\":7,\"launch_api_records\":5,"
            "\"launch_calls_seen\":6,\"unwanted_api_records\":1,\"ext_records\":4,"
            "\"dropped_before_start\":3,\"dropped_detail\":\"global queue: 3 (start)\","
            "\"future_field\":[1,2]}\n",
        0, &e);
    if (!t) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_TRUE(t->has_api_counts);
    CU_ASSERT_EQUAL(t->end_api_records, 7);
    CU_ASSERT_EQUAL(t->end_launch_api_records, 5);
    CU_ASSERT_EQUAL(t->end_launch_calls_seen, 6);
    CU_ASSERT_EQUAL(t->end_unwanted_api_records, 1);
    CU_ASSERT_EQUAL(t->end_ext_records, 4);
    CU_ASSERT_EQUAL(t->dropped, 2);
    CU_ASSERT_EQUAL(t->dropped_before_start, 3);
    CU_ASSERT_STRING_EQUAL(t->dropped_detail, "global queue: 3 (start)");
    gr_trace_destroy(t);
    t = load_text(HDR END0, 0, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_FALSE(t->has_api_counts);
    CU_ASSERT_EQUAL(t->dropped_before_start, 0);
    CU_ASSERT_STRING_EQUAL(t->dropped_detail, "");
    gr_trace_destroy(t);
    expect_bad(HDR "{\"t\":\"end\",\"records\":0,\"dropped\":0,\"launch_calls_seen\":\"six\"}\n",
               "\"end\" record: \"launch_calls_seen\" must be a number (top-level launch calls the "
               "callbacks saw)");
    expect_bad(HDR "{\"t\":\"end\",\"records\":0,\"dropped\":0,\"api_records\":-1}\n",
               "\"api_records\" must be a whole number >= 0");
}

static CU_TestInfo jsonl_tests[] = {{"values", test_jsonl_values},
                                    {"errors name the column", test_jsonl_errors},
                                    {"escape and integer round trip", test_jsonl_roundtrip},
                                    {"API categories", test_api_categories},
                                    CU_TEST_INFO_NULL};
static CU_TestInfo trace_tests[] = {{"every record kind", test_reader_records},
                                    {"corrupt and truncated traces name the line", test_reader_errors},
                                    {"--partial", test_reader_partial},
                                    {"the collector's counts in the end record", test_reader_collector_counts},
                                    CU_TEST_INFO_NULL};

/* ---- suite cupti_analysis: synthetic traces, numbers computed here independently ---- */

static gr_ls_report *analyze_text(const char *text, gr_trace **tp, const gr_ls_opts *o) {
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

typedef struct mk {
    long long s, e, api_s, api_e;
    int stream, name;
    unsigned corr;
} mk;

typedef struct ev {
    long long t;
    int d;
} ev;

static int cmp_ev(const void *a, const void *b) {
    const ev *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return y->d - x->d; /* starts first: touching intervals leave no hole */
}

static const gr_ls_kernel_row *kernel_row(const gr_trace *t, const gr_ls_scope *s, const char *name) {
    for (size_t i = 0; i < s->nkern; i++)
        if (!strcmp(gr_trace_str(t, s->kern[i].name), name)) return &s->kern[i];
    return NULL;
}

static const gr_ls_api_row *api_row(const gr_trace *t, const gr_ls_scope *s, const char *name) {
    for (size_t i = 0; i < s->napi; i++)
        if (!strcmp(gr_trace_str(t, s->api[i].name), name)) return &s->api[i];
    return NULL;
}

/* Three streams of eager kernels with random durations, gaps and launch latencies, written in a
 * shuffled order. Expected values by an event sweep (busy, holes) and per-stream walks. */
static void test_analysis_eager_random(void) {
    enum { NS = 3, PER = 150, N = NS * PER };
    static const char *names[] = {"_Z4tinyPfi", "add", "mul", "gelu", "_Z3fooIfEvPT_"};
    mk *k = calloc(N, sizeof(mk));
    srand(42);
    int n = 0;
    unsigned corr = 100;
    long long first = 0, last = 0;
    for (int st = 0; st < NS; st++) {
        long long t = 1000000 + st * 3777;
        for (int i = 0; i < PER; i++) {
            mk *m = &k[n++];
            m->stream = 7 + st;
            m->name = rand() % 5;
            m->s = t + 100 + rand() % 40000;
            m->e = m->s + 1000 + rand() % 29000;
            t = m->e;
            m->corr = corr++;
            m->api_s = m->s - (2000 + rand() % 18000);
            m->api_e = m->api_s + 1000 + rand() % 7000;
            if (n == 1 || m->s < first) first = m->s;
            if (m->e > last) last = m->e;
        }
    }
    tb b;
    tb_init(&b, "\"steps\":50");
    int *perm = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++) perm[i] = i;
    for (int i = N - 1; i > 0; i--) {
        int j = rand() % (i + 1), x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    for (int i = 0; i < N; i++) {
        const mk *m = &k[perm[i]];
        /* a thread per launch: calls on one thread never overlap, these would */
        tb_api(&b, "cudaLaunchKernel", 0, m->api_s, m->api_e, m->corr, m->corr);
        tb_kernel(&b, names[m->name], m->s, m->e, (unsigned)m->stream, m->corr, 0, 0);
    }
    gr_trace *t;
    gr_ls_report *r = analyze_text(tb_end(&b, 0), &t, NULL);
    const gr_ls_scope *s = &r->all;
    CU_ASSERT_EQUAL(r->nregions, 0);
    CU_ASSERT_EQUAL(s->kernels, N);
    CU_ASSERT_EQUAL(s->eager_kernels, N);
    CU_ASSERT_EQUAL(s->graph_kernels, 0);
    CU_ASSERT_EQUAL(s->launch_calls, N);
    CU_ASSERT_EQUAL(s->api_calls, N);

    /* busy and holes by an event sweep */
    ev *evs = malloc(2 * N * sizeof(ev));
    for (int i = 0; i < N; i++) {
        evs[2 * i] = (ev){k[i].s, +1};
        evs[2 * i + 1] = (ev){k[i].e, -1};
    }
    qsort(evs, 2 * N, sizeof(ev), cmp_ev);
    double busy = 0, idle = 0, shrt = 0;
    int cnt = 0;
    for (int i = 0; i < 2 * N; i++) {
        if (i > 0) {
            double dt = (double)(evs[i].t - evs[i - 1].t) / 1000.0;
            if (cnt > 0) busy += dt;
            else {
                idle += dt;
                if (dt < 10) shrt += dt;
            }
        }
        cnt += evs[i].d;
    }
    double span = (double)(last - first) / 1000.0;
    ASSERT_NEAR(s->gpu_span_us, span);
    ASSERT_NEAR(s->busy_us, busy);
    ASSERT_NEAR(s->idle_us, idle);
    ASSERT_NEAR(s->idle_frac, idle / span);
    ASSERT_NEAR(s->short_idle_us, shrt);
    ASSERT_NEAR(s->short_share, shrt / idle);
    CU_ASSERT_EQUAL(s->steps, 50);
    ASSERT_NEAR(s->step_us, span / 50);

    /* per kernel: gaps by walking each stream, latency, durations; per name and per stream */
    double *gaps = malloc(N * sizeof(double)), *lat = malloc(N * sizeof(double)), *dur = malloc(N * sizeof(double));
    double *host = malloc(N * sizeof(double));
    int ng = 0;
    for (int i = 0; i < N; i++) {
        lat[i] = (double)(k[i].s - k[i].api_s) / 1000.0;
        dur[i] = (double)(k[i].e - k[i].s) / 1000.0;
        host[i] = (double)(k[i].api_e - k[i].api_s) / 1000.0;
        if (i % PER) gaps[ng++] = (double)(k[i].s - k[i - 1].e) / 1000.0;
    }
    CU_ASSERT_EQUAL(s->gap_us.n, (size_t)ng);
    ASSERT_NEAR(s->gap_us.median, quant(gaps, ng, 0.5));
    ASSERT_NEAR(s->gap_us.p90, quant(gaps, ng, 0.9));
    ASSERT_NEAR(s->latency_us.median, quant(lat, N, 0.5));
    ASSERT_NEAR(s->latency_us.p10, quant(lat, N, 0.1));
    ASSERT_NEAR(s->dur_us.median, quant(dur, N, 0.5));
    ASSERT_NEAR(s->launch_host_us.median, quant(host, N, 0.5));
    const gr_ls_api_row *a = api_row(t, s, "cudaLaunchKernel");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->count, N);
    CU_ASSERT_EQUAL(a->nested, 0);
    ASSERT_NEAR(a->host_us.median, quant(host, N, 0.5));
    ASSERT_NEAR(a->host_us.p90, quant(host, N, 0.9));
    CU_ASSERT_EQUAL(s->nstreams, NS);
    for (int st = 0; st < NS; st++) {
        const gr_ls_stream_row *row = &s->streams[st]; /* sorted by stream id */
        CU_ASSERT_EQUAL(row->stream, (unsigned)(7 + st));
        CU_ASSERT_EQUAL(row->kernels, PER);
        const mk *m = &k[st * PER];
        double sb = 0, si = 0, ss = 0;
        ng = 0;
        double lead = (double)(m[0].s - first) / 1000.0, trail = (double)(last - m[PER - 1].e) / 1000.0;
        si = lead + trail;
        ss = (lead > 0 && lead < 10 ? lead : 0) + (trail > 0 && trail < 10 ? trail : 0);
        for (int i = 0; i < PER; i++) {
            sb += (double)(m[i].e - m[i].s) / 1000.0;
            if (i) {
                double gp = (double)(m[i].s - m[i - 1].e) / 1000.0;
                gaps[ng++] = gp;
                si += gp;
                if (gp < 10) ss += gp;
            }
        }
        ASSERT_NEAR(row->busy_us, sb);
        ASSERT_NEAR(row->idle_us, si);
        ASSERT_NEAR(row->short_idle_us, ss);
        ASSERT_NEAR(row->gap_us.median, quant(gaps, ng, 0.5));
    }
    CU_ASSERT_EQUAL(s->nkern, 5);
    double prev_total = 1e300;
    for (int nm = 0; nm < 5; nm++) {
        const gr_ls_kernel_row *row = kernel_row(t, s, names[nm]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(row);
        int c = 0, cg = 0;
        double tot = 0;
        for (int i = 0; i < N; i++) {
            if (k[i].name != nm) continue;
            dur[c++] = (double)(k[i].e - k[i].s) / 1000.0;
            tot += (double)(k[i].e - k[i].s) / 1000.0;
            if (i % PER) gaps[cg++] = (double)(k[i].s - k[i - 1].e) / 1000.0;
        }
        CU_ASSERT_EQUAL(row->count, (size_t)c);
        ASSERT_NEAR(row->total_us, tot);
        ASSERT_NEAR(row->dur_us.median, quant(dur, c, 0.5));
        ASSERT_NEAR(row->gap_us.median, quant(gaps, cg, 0.5));
    }
    for (size_t i = 0; i < s->nkern; i++) { /* rows by total time, descending */
        CU_ASSERT_TRUE(s->kern[i].total_us <= prev_total);
        prev_total = s->kern[i].total_us;
    }
    /* a different short-gap threshold moves the share */
    gr_ls_opts o;
    gr_ls_opts_default(&o);
    o.short_gap_us = 1e9;
    gr_ls_report *r2 = NULL;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_ls_analyze(t, &o, &r2, &e), GR_OK);
    ASSERT_NEAR(r2->all.short_share, 1.0);
    gr_ls_report_destroy(r2);
    free(evs), free(gaps), free(lat), free(dur), free(host), free(perm), free(k), free(b.p);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
}

/* Two launches of a 4-node graph; nodes created at capture (API + op tag) and cloned at
 * instantiate; the numbers are worked out by hand in the comments. */
static const char *graph_trace(tb *b) {
    tb_init(b, NULL);
    unsigned long long T = 1ULL << 32;
    for (int i = 0; i < 4; i++) {
        /* created by cudaLaunchKernel during capture, node 14 without a tag */
        tb_printf(b, "{\"t\":\"node\",\"nid\":%d,\"gid\":1,\"ty\":0,\"api\":\"cudaLaunchKernel\",\"corr\":%d%s%llu}",
                  11 + i, 50 + i, i < 3 ? ",\"tag\":" : ",\"x\":", T + (unsigned long long)i + 1);
        tb_printf(b, "{\"t\":\"node\",\"nid\":%d,\"gid\":2,\"ty\":0,\"orig\":%d}", 1001 + i, 11 + i);
    }
    for (int i = 0; i < 3; i++)
        tb_printf(b, "{\"t\":\"op\",\"tag\":%llu,\"variant\":\"v\",\"index\":%d,\"name\":\"op%d\",\"kernel\":\"k%d\"}",
                  T + (unsigned long long)i + 1, i, i, i);
    tb_api(b, "cudaGraphLaunch", 0, 0, 2000, 1, 500);
    /* launch 1: gaps 0.5, 0 (touching), 0 (overlap); span 6 us, busy 2 + 3.5 = 5.5 us, first 10 us */
    tb_kernel(b, "n1", 10000, 12000, 20, 500, 2, 1001);
    tb_kernel(b, "n2", 12500, 13000, 20, 500, 2, 1002);
    tb_kernel(b, "n3", 13000, 15000, 20, 500, 2, 1003);
    tb_kernel(b, "n4", 14000, 16000, 20, 500, 2, 1004);
    tb_api(b, "cudaGraphLaunch", 0, 100000, 101500, 1, 501);
    /* launch 2: gaps 1, 4, 0.5; span 9 us, busy 3.5 us, first 3 us */
    tb_kernel(b, "n1", 103000, 104000, 20, 501, 2, 1001);
    tb_kernel(b, "n2", 105000, 106000, 20, 501, 2, 1002);
    tb_kernel(b, "n3", 110000, 111000, 20, 501, 2, 1003);
    tb_kernel(b, "n4", 111500, 112000, 20, 501, 2, 1004);
    return tb_end(b, 0);
}

static void test_analysis_graph(void) {
    tb b;
    gr_trace *t;
    gr_ls_report *r = analyze_text(graph_trace(&b), &t, NULL);
    const gr_ls_scope *s = &r->all;
    const gr_ls_graph *g = &s->graph;
    CU_ASSERT_EQUAL(s->kernels, 8);
    CU_ASSERT_EQUAL(s->graph_kernels, 8);
    CU_ASSERT_EQUAL(s->eager_kernels, 0);
    CU_ASSERT_EQUAL(s->graph_launch_calls, 2);
    CU_ASSERT_EQUAL(s->launch_calls, 0);
    CU_ASSERT_EQUAL(s->latency_us.n, 0); /* launch latency is for eager kernels */
    CU_ASSERT_EQUAL(g->launches, 2);
    CU_ASSERT_EQUAL(g->node_kernels, 8);
    ASSERT_NEAR(g->nodes.median, 4);
    ASSERT_NEAR(g->span_us.median, 7.5);
    ASSERT_NEAR(g->busy_us.median, 4.5);
    CU_ASSERT_EQUAL(g->gaps, 6);
    ASSERT_NEAR(g->gap_total_us, 6.0);
    ASSERT_NEAR(g->gap_us.median, 0.5);
    ASSERT_NEAR(g->gap_us.max, 4.0);
    ASSERT_NEAR(g->host_us.median, 1.75);
    ASSERT_NEAR(g->first_latency_us.median, 6.5);
    CU_ASSERT_EQUAL(g->mapped_api, 8);
    CU_ASSERT_EQUAL(g->mapped_op, 6);
    CU_ASSERT_EQUAL(s->kernels_with_op, 6);
    CU_ASSERT_EQUAL(s->nops, 3);
    for (size_t i = 0; i < s->nops; i++) {
        CU_ASSERT_EQUAL(s->ops[i].graph, 2);
        CU_ASSERT_EQUAL(s->ops[i].eager, 0);
        CU_ASSERT_EQUAL(s->ops[i].index, (int)i);
    }
    /* the stream's gaps include the hole between the launches: 0.5 0 0 87 1 4 0.5 */
    ASSERT_NEAR(s->gap_us.median, 0.5);
    ASSERT_NEAR(s->gap_us.max, 87.0);
    /* busy 5.5 + 3.5 us over the 102 us span */
    ASSERT_NEAR(s->busy_us, 9.0);
    ASSERT_NEAR(s->gpu_span_us, 102.0);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
}

/* graphrun-style regions: an eager run with runtime launches that call the driver inside, and a
 * graph run; membership by the launching call's entry. */
static const char *regions_trace(tb *b) {
    tb_init(b, NULL);
    tb_printf(b, "{\"t\":\"region\",\"name\":\"v eager\",\"variant\":\"v\",\"mode\":\"eager\",\"s\":0,\"e\":100000,"
                 "\"steps\":2,\"traced_step_us\":48.5,\"untraced_step_us\":20.0}");
    tb_printf(b, "{\"t\":\"region\",\"name\":\"v graph\",\"variant\":\"v\",\"mode\":\"graph\",\"s\":200000,\"e\":260000,"
                 "\"steps\":2,\"untraced_step_us\":5.0}");
    for (int step = 0; step < 2; step++) {
        long long o = step * 20000LL;
        unsigned c = 1 + (unsigned)step * 3;
        tb_api(b, "cudaLaunchKernel", 0, o + 1000, o + 5000, 1, c);
        tb_api(b, "cuLaunchKernel", 1, o + 2000, o + 4000, 1, c);
        tb_kernel(b, "a", o + 8000, o + 10000, 7, c, 0, 0);
        tb_api(b, "cudaLaunchKernel", 0, o + 6000, o + 9000, 1, c + 1);
        tb_api(b, "cuLaunchKernel", 1, o + 6500, o + 8500, 1, c + 1);
        tb_kernel(b, "b", o + 12000, o + 13000, 7, c + 1, 0, 0);
        tb_api(b, "cudaLaunchKernel", 0, o + 10000, o + 11000, 1, c + 2);
        tb_kernel(b, "c", o + 15000, o + 16000, 7, c + 2, 0, 0);
    }
    tb_api(b, "cudaStreamSynchronize", 0, 40000, 90000, 1, 7);
    tb_api(b, "cudaGraphLaunch", 0, 200000, 202000, 1, 10);
    tb_kernel(b, "a", 205000, 206000, 7, 10, 3, 101);
    tb_kernel(b, "b", 206200, 207000, 7, 10, 3, 102);
    tb_kernel(b, "c", 207100, 208000, 7, 10, 3, 103);
    tb_api(b, "cudaGraphLaunch", 0, 250000, 251000, 1, 11);
    tb_kernel(b, "a", 252000, 253000, 7, 11, 3, 101);
    tb_kernel(b, "b", 253200, 254000, 7, 11, 3, 102);
    tb_kernel(b, "c", 254100, 255000, 7, 11, 3, 103);
    /* a kernel launched outside both regions */
    tb_api(b, "cudaLaunchKernel", 0, 150000, 151000, 1, 20);
    tb_kernel(b, "a", 152000, 153000, 7, 20, 0, 0);
    return tb_end(b, 0);
}

static void test_analysis_regions(void) {
    tb b;
    gr_trace *t;
    gr_ls_report *r = analyze_text(regions_trace(&b), &t, NULL);
    CU_ASSERT_EQUAL_FATAL(r->nregions, 2);
    CU_ASSERT_EQUAL(r->nested_api, 4);
    const gr_ls_scope *e = &r->regions[0], *g = &r->regions[1];
    CU_ASSERT_STRING_EQUAL(e->name, "v eager");
    CU_ASSERT_STRING_EQUAL(e->mode, "eager");
    CU_ASSERT_STRING_EQUAL(g->name, "v graph");
    CU_ASSERT_EQUAL(e->kernels, 6);
    CU_ASSERT_EQUAL(e->launch_calls, 6); /* the driver calls inside are not extra launches */
    CU_ASSERT_EQUAL(e->graph_launch_calls, 0);
    CU_ASSERT_EQUAL(g->kernels, 6);
    CU_ASSERT_EQUAL(g->graph_launch_calls, 2);
    CU_ASSERT_EQUAL(g->launch_calls, 0);
    CU_ASSERT_EQUAL(r->all.kernels, 13);
    CU_ASSERT_EQUAL(r->all.steps, 0); /* the whole trace mixes both runs */
    const gr_ls_api_row *rt = api_row(t, e, "cudaLaunchKernel"), *drv = api_row(t, e, "cuLaunchKernel");
    const gr_ls_api_row *sync = api_row(t, e, "cudaStreamSynchronize");
    CU_ASSERT_TRUE_FATAL(rt && drv && sync);
    CU_ASSERT_TRUE(rt->count == 6 && rt->nested == 0 && !rt->driver && rt->cat == GR_API_LAUNCH);
    CU_ASSERT_TRUE(drv->count == 0 && drv->nested == 4 && drv->driver);
    ASSERT_NEAR(drv->host_us.median, 2.0);
    CU_ASSERT_TRUE(sync->count == 1 && sync->cat == GR_API_SYNC);
    ASSERT_NEAR(sync->host_us.median, 50.0);
    /* latency from the runtime call's entry: 7, 6, 5 us per step */
    ASSERT_NEAR(e->latency_us.median, 6.0);
    ASSERT_NEAR(e->latency_us.min, 5.0);
    ASSERT_NEAR(e->launch_host_us.median, 3.0);
    /* steps and step time from the host bounds */
    CU_ASSERT_EQUAL(e->steps, 2);
    CU_ASSERT_STRING_EQUAL(e->steps_from, "region");
    CU_ASSERT_TRUE(e->has_host_span);
    ASSERT_NEAR(e->host_span_us, 100.0);
    ASSERT_NEAR(e->step_us, 50.0);
    ASSERT_NEAR(g->step_us, 30.0);
    ASSERT_NEAR(e->untraced_step_us, 20.0);
    ASSERT_NEAR(e->traced_event_step_us, 48.5);
    /* eager: kernels at 8-10, 12-13, 15-16 and again +20: busy 8, span 28 */
    ASSERT_NEAR(e->busy_us, 8.0);
    ASSERT_NEAR(e->gpu_span_us, 28.0);
    const gr_ls_scope *pe[4], *pg[4];
    CU_ASSERT_EQUAL(gr_ls_mode_pairs(r, pe, pg, 4), 1);
    CU_ASSERT_PTR_EQUAL(pe[0], e);
    CU_ASSERT_PTR_EQUAL(pg[0], g);
    gr_error err;
    gr_error_clear(&err);
    CU_ASSERT_PTR_EQUAL(gr_ls_main_scope(r, "v graph", &err), g);
    CU_ASSERT_PTR_EQUAL(gr_ls_main_scope(r, NULL, &err), &r->all); /* two regions: the whole trace */
    CU_ASSERT_PTR_NULL(gr_ls_main_scope(r, "v nope", &err));
    CU_ASSERT_EQUAL(err.code, GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(err.msg, "--region: t.jsonl has no region \"v nope\" (regions: \"v eager\", \"v graph\")");
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
}

/* cudaProfilerStart/Stop make the regions; the header's steps apply to them. */
static void test_analysis_profiler_ranges(void) {
    tb b;
    tb_init(&b, "\"steps\":4");
    tb_api(&b, "cudaLaunchKernel", 0, 100, 200, 1, 1); /* before the range: warm-up */
    tb_kernel(&b, "w", 1000, 1500, 7, 1, 0, 0);
    tb_api(&b, "cudaProfilerStart", 0, 1000, 2000, 1, 2);
    for (int i = 0; i < 4; i++) {
        tb_api(&b, "cudaLaunchKernel", 0, 3000 + i * 10000, 4000 + i * 10000, 1, 10 + (unsigned)i);
        tb_kernel(&b, "k", 9000 + i * 10000, 12000 + i * 10000, 7, 10 + (unsigned)i, 0, 0);
    }
    tb_api(&b, "cudaProfilerStop", 0, 50000, 51000, 1, 3);
    tb_api(&b, "cudaProfilerStart", 0, 60000, 61000, 1, 4);
    tb_api(&b, "cudaLaunchKernel", 0, 62000, 63000, 1, 30);
    tb_kernel(&b, "k", 64000, 65000, 7, 30, 0, 0);
    gr_trace *t;
    gr_ls_report *r = analyze_text(tb_end(&b, 0), &t, NULL);
    CU_ASSERT_EQUAL_FATAL(r->nregions, 2);
    const gr_ls_scope *p = &r->regions[0], *q = &r->regions[1];
    CU_ASSERT_STRING_EQUAL(p->name, "profiler range 1");
    CU_ASSERT_TRUE(p->from_profiler && p->has_host_span);
    CU_ASSERT_EQUAL(p->kernels, 4);
    CU_ASSERT_EQUAL(p->launch_calls, 4);
    CU_ASSERT_EQUAL(p->steps, 4);
    CU_ASSERT_STRING_EQUAL(p->steps_from, "header");
    ASSERT_NEAR(p->host_span_us, 48.0); /* start's exit .. stop's entry */
    ASSERT_NEAR(p->step_us, 12.0);
    ASSERT_NEAR(p->gap_us.median, 7.0);
    CU_ASSERT_STRING_EQUAL(q->name, "profiler range 2 (no stop)");
    CU_ASSERT_FALSE(q->has_host_span);
    CU_ASSERT_EQUAL(q->kernels, 1);
    ASSERT_NEAR(q->step_us, 0.25); /* GPU span 1 us / 4 steps */
    CU_ASSERT_EQUAL(r->all.kernels, 6);
    /* --steps overrides the header */
    gr_ls_opts o;
    gr_ls_opts_default(&o);
    o.steps = 8;
    gr_ls_report *r2 = NULL;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_ls_analyze(t, &o, &r2, &e), GR_OK);
    ASSERT_NEAR(r2->regions[0].step_us, 6.0);
    CU_ASSERT_STRING_EQUAL(r2->regions[0].steps_from, "--steps");
    gr_ls_report_destroy(r2);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
}

/* Records without timestamps are counted, not timed; CUPTI overhead is summed per kind; eager
 * kernels map to ops through external correlation; overlapping work on a stream has gap 0. */
static void test_analysis_details(void) {
    tb b;
    tb_init(&b, NULL);
    unsigned long long T = 3ULL << 32;
    tb_printf(&b, "{\"t\":\"op\",\"tag\":%llu,\"variant\":\"v\",\"index\":0,\"name\":\"first\",\"kernel\":\"k\"}", T + 1);
    tb_api(&b, "cudaLaunchKernel", 0, 0, 1000, 1, 1);
    tb_printf(&b, "{\"t\":\"ext\",\"corr\":1,\"id\":%llu,\"kind\":3}", T + 1);
    b.records++;
    tb_kernel(&b, "k", 2000, 6000, 7, 1, 0, 0);
    tb_kernel(&b, "k", 5000, 7000, 7, 2, 0, 0); /* overlaps the first */
    tb_kernel(&b, "k", 9000, 10000, 7, 3, 0, 0);
    tb_printf(&b, "{\"t\":\"k\",\"n\":1,\"s\":0,\"e\":0,\"inc\":1,\"str\":7,\"corr\":4}");
    b.records++;
    tb_printf(&b, "{\"t\":\"cpy\",\"kind\":\"HtoD\",\"bytes\":64,\"s\":7000,\"e\":8000,\"ctx\":1,\"str\":7,\"corr\":5}");
    tb_printf(&b, "{\"t\":\"set\",\"bytes\":64,\"s\":12000,\"e\":12500,\"ctx\":1,\"str\":8,\"corr\":6}");
    tb_printf(&b, "{\"t\":\"ovh\",\"kind\":\"cupti_buffer_flush\",\"s\":0,\"e\":1000}");
    tb_printf(&b, "{\"t\":\"ovh\",\"kind\":\"cupti_instrumentation\",\"s\":0,\"e\":5000}");
    tb_printf(&b, "{\"t\":\"ovh\",\"kind\":\"cupti_buffer_flush\",\"s\":3000,\"e\":5000}");
    b.records += 5;
    gr_trace *t;
    gr_ls_report *r = analyze_text(tb_end(&b, 0), &t, NULL);
    const gr_ls_scope *s = &r->all;
    CU_ASSERT_EQUAL(s->kernels, 4);
    CU_ASSERT_EQUAL(s->incomplete, 1);
    CU_ASSERT_EQUAL(s->dur_us.n, 3);
    CU_ASSERT_EQUAL(s->memcpys, 1);
    CU_ASSERT_EQUAL(s->memsets, 1);
    CU_ASSERT_EQUAL(s->no_api, 3); /* corr 2, 3, 4 have no API record */
    CU_ASSERT_EQUAL(s->latency_us.n, 1);
    ASSERT_NEAR(s->latency_us.median, 2.0);
    /* stream 7: 2-6, 5-7 (gap 0), memcpy 7-8, 9-10 (gap 1); stream 8 memset alone */
    ASSERT_NEAR(s->gap_us.median, 0.5);
    CU_ASSERT_EQUAL(s->gap_us.n, 2);
    ASSERT_NEAR(s->busy_us, 7.5);
    ASSERT_NEAR(s->gpu_span_us, 10.5);
    CU_ASSERT_EQUAL(s->kernels_with_op, 1);
    CU_ASSERT_EQUAL_FATAL(s->nops, 1);
    CU_ASSERT_EQUAL(s->ops[0].eager, 1);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, s->ops[0].name), "first");
    CU_ASSERT_EQUAL(r->novh, 2);
    CU_ASSERT_EQUAL(r->ovh_count, 3);
    ASSERT_NEAR(r->ovh_total_us, 8.0);
    for (size_t i = 0; i < r->novh; i++) {
        if (!strcmp(gr_trace_str(t, r->ovh[i].kind), "cupti_buffer_flush")) {
            CU_ASSERT_EQUAL(r->ovh[i].count, 2);
            ASSERT_NEAR(r->ovh[i].total_us, 3.0);
        }
    }
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
    /* an empty trace analyses to zeros */
    r = analyze_text(HDR END0, &t, NULL);
    CU_ASSERT_EQUAL(r->all.kernels, 0);
    CU_ASSERT_EQUAL(r->all.gpu_span_us, 0);
    CU_ASSERT_EQUAL(r->all.idle_frac, 0);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
}

/* CUDA 13: cudaLaunchKernel may call the runtime's internal __cudaLaunchKernel, which may call
 * the driver; the kernel correlates with one of them. One launch, timed from the outermost. */
static void test_analysis_nested_runtime(void) {
    tb b;
    tb_init(&b, NULL);
    for (int i = 0; i < 3; i++) {
        long long o = i * 10000LL;
        unsigned c = 10 + (unsigned)i * 3;
        tb_api(&b, "cudaLaunchKernel", 0, o + 1000, o + 5000, 4, c);
        tb_api(&b, "__cudaLaunchKernel", 0, o + 1500, o + 4500, 4, c + 1);
        tb_api(&b, "cuLaunchKernel", 1, o + 2000, o + 4000, 4, c + 2);
        tb_kernel(&b, "k", o + 6000, o + 7000, 7, c + (unsigned)i, 0, 0); /* each correlates differently */
    }
    /* the same names on another thread, not nested: counted */
    tb_api(&b, "__cudaLaunchKernel", 0, 1500, 4500, 5, 99);
    gr_trace *t;
    gr_ls_report *r = analyze_text(tb_end(&b, 0), &t, NULL);
    const gr_ls_scope *s = &r->all;
    CU_ASSERT_EQUAL(r->nested_api, 6);
    CU_ASSERT_EQUAL(s->launch_calls, 4);
    CU_ASSERT_EQUAL(s->latency_us.n, 3);
    ASSERT_NEAR(s->latency_us.median, 5.0); /* from cudaLaunchKernel's entry, whichever call correlates */
    ASSERT_NEAR(s->latency_us.max, 5.0);
    const gr_ls_api_row *inner = api_row(t, s, "__cudaLaunchKernel");
    CU_ASSERT_TRUE_FATAL(inner != NULL);
    CU_ASSERT_EQUAL(inner->count, 1);
    CU_ASSERT_EQUAL(inner->nested, 3);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
}

static CU_TestInfo analysis_tests[] = {{"runtime call inside a runtime call", test_analysis_nested_runtime},{"eager streams vs an independent sweep", test_analysis_eager_random},
                                       {"graph launches and node mapping", test_analysis_graph},
                                       {"regions, nested driver calls, steps", test_analysis_regions},
                                       {"cudaProfilerStart/Stop ranges", test_analysis_profiler_ranges},
                                       {"incomplete records, overhead, ops, overlap", test_analysis_details},
                                       CU_TEST_INFO_NULL};

/* ---- suite cupti_report ---- */

static char *print_to_string(void (*fn)(FILE *, const gr_ls_report *), const gr_ls_report *r) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fn(f, r);
    fclose(f);
    return buf;
}

static void test_report_text_and_json(void) {
    tb b;
    gr_trace *t;
    gr_ls_report *r = analyze_text(regions_trace(&b), &t, NULL);
    char *txt = print_to_string(gr_ls_print, r);
    GR_ASSERT_CONTAINS(txt, "device   Test GPU (cc 9.0); driver 13.0");
    GR_ASSERT_CONTAINS(txt, "all times are TRACED");
    GR_ASSERT_CONTAINS(txt, "regions (traced;");
    GR_ASSERT_CONTAINS(txt, "v eager");
    GR_ASSERT_CONTAINS(txt, "2.50x"); /* 50 us traced / 20 us untraced */
    GR_ASSERT_CONTAINS(txt, "compare (traced)");
    GR_ASSERT_CONTAINS(txt, "(a - b) per kernel: (50.00 - 30.00) us / 3.000 kernels per step = 6.667 us per kernel, traced; "
                            "untraced 5.000 us per kernel");
    GR_ASSERT_CONTAINS(txt, "== region \"v eager\" (traced)");
    GR_ASSERT_CONTAINS(txt, "cuLaunchKernel");
    GR_ASSERT_CONTAINS(txt, "API calls (host time per call, traced");
    GR_ASSERT_CONTAINS(txt, "graph launches (traced)");
    GR_ASSERT_CONTAINS(txt, "latency timestamps off: cupti-launchstat --latency");
    free(txt);
    json_t *j = gr_ls_json(r);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "schema_version")), 1);
    CU_ASSERT_TRUE(json_is_true(json_object_get(j, "traced")));
    json_t *regs = json_object_get(j, "regions");
    CU_ASSERT_EQUAL(json_array_size(regs), 2);
    json_t *e0 = json_array_get(regs, 0);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(e0, "kernels")), 6);
    ASSERT_NEAR(json_real_value(json_object_get(e0, "step_us")), 50.0);
    ASSERT_NEAR(json_real_value(json_object_get(json_object_get(e0, "launch_latency_us"), "median")), 6.0);
    json_t *cmp = json_array_get(json_object_get(j, "eager_vs_graph"), 0);
    ASSERT_NEAR(json_real_value(json_object_get(cmp, "per_kernel_us")), 20.0 / 3.0);
    ASSERT_NEAR(json_real_value(json_object_get(cmp, "untraced_per_kernel_us")), 5.0);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(j, "whole_trace"), "kernels")), 13);
    char *dump = json_dumps(j, 0);
    CU_ASSERT_PTR_NOT_NULL(dump);
    free(dump);
    json_decref(j);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
    /* a trace without regions reports the whole trace; dropped records are flagged */
    tb_init(&b, NULL);
    tb_api(&b, "cudaLaunchKernel", 0, 0, 1000, 1, 1);
    tb_kernel(&b, "_Z4tinyPfi", 2000, 3000, 7, 1, 0, 0);
    r = analyze_text(tb_end(&b, 5), &t, NULL);
    txt = print_to_string(gr_ls_print, r);
    GR_ASSERT_CONTAINS(txt, "== whole trace (traced)");
    GR_ASSERT_CONTAINS(txt, "WARNING  CUPTI dropped 5 activity records");
    GR_ASSERT_CONTAINS(txt, "unknown steps (give --steps N");
    free(txt);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
}

/* Number of warnings whose text contains `needle`. */
static size_t warnings_with(const gr_ls_report *r, const char *needle) {
    gr_ls_warning w[16];
    size_t n = gr_ls_warnings(r, w, 16), hits = 0;
    for (size_t i = 0; i < n && i < 16; i++)
        hits += strstr(w[i].msg, needle) != NULL;
    return hits;
}

/* A graphrun-like trace: ops, an eager region and a graph region, with or without API and
 * external-correlation records, and an end record with or without the collector's counts. */
static const char *inproc_trace(tb *b, int api, int ext, const char *end_extra) {
    tb_init(b, NULL);
    unsigned long long T = 1ULL << 32;
    for (int i = 0; i < 2; i++) {
        tb_printf(b,
                  "{\"t\":\"op\",\"tag\":%llu,\"variant\":\"v\",\"index\":%d,\"name\":\"op%d\","
                  "\"kernel\":\"k\"}",
                  T + (unsigned long long)i + 1, i, i);
        tb_printf(b,
                  "{\"t\":\"node\",\"nid\":%d,\"gid\":1,\"ty\":0,\"api\":\"cudaLaunchKernel\","
                  "\"corr\":%d,\"tag\":%llu}",
                  11 + i, 90 + i, T + (unsigned long long)i + 1);
        tb_printf(b, "{\"t\":\"node\",\"nid\":%d,\"gid\":2,\"ty\":0,\"orig\":%d}", 21 + i, 11 + i);
    }
    tb_printf(b, "{\"t\":\"region\",\"name\":\"v "
                 "eager\",\"variant\":\"v\",\"mode\":\"eager\",\"s\":0,\"e\":100000,\"steps\":2}");
    tb_printf(b, "{\"t\":\"region\",\"name\":\"v "
                 "graph\",\"variant\":\"v\",\"mode\":\"graph\",\"s\":200000,\"e\":300000,"
                 "\"steps\":2}");
    for (int k = 0; k < 4; k++) {
        unsigned c = 1 + (unsigned)k;
        long long o = k * 10000LL;
        if (api) tb_api(b, "cudaLaunchKernel", 0, o + 1000, o + 2000, 1, c);
        if (ext) {
            tb_printf(b, "{\"t\":\"ext\",\"corr\":%u,\"id\":%llu,\"kind\":3}", c,
                      T + (unsigned long long)(k % 2) + 1);
            b->records++;
        }
        tb_kernel(b, "k", o + 3000, o + 4000, 7, c, 0, 0);
    }
    for (int l = 0; l < 2; l++) {
        unsigned c = 50 + (unsigned)l;
        long long o = 200000 + l * 20000LL;
        if (api) tb_api(b, "cudaGraphLaunch", 0, o, o + 1000, 1, c);
        tb_kernel(b, "k", o + 2000, o + 3000, 7, c, 2, 21);
        tb_kernel(b, "k", o + 3500, o + 4500, 7, c, 2, 22);
    }
    tb_printf(b, "{\"t\":\"end\",\"records\":%d,\"dropped\":0%s%s}", b->records,
              end_extra ? "," : "", end_extra ? end_extra : "");
    return b->p;
}

static void test_report_warnings(void) {
    tb b;
    gr_trace *t;
    /* what the H200 in-process fixtures looked like: kernels, nodes, ops, no API records */
    gr_ls_report *r = analyze_text(inproc_trace(&b, 0, 0, NULL), &t, NULL);
    gr_ls_warning w[4];
    CU_ASSERT_EQUAL(gr_ls_warnings(r, w, 4), 1);
    GR_ASSERT_CONTAINS(
        w[0].msg, "no API records: CUPTI recorded no runtime or driver API call although the trace "
                  "has 4 eager kernels");
    GR_ASSERT_CONTAINS(w[0].msg, "eager kernels map to no workload op");
    GR_ASSERT_CONTAINS(w[0].msg, "record them again");
    CU_ASSERT_EQUAL(r->regions[0].launch_calls, 0);
    CU_ASSERT_EQUAL(r->regions[0].kernels_with_op, 0);
    CU_ASSERT_EQUAL(r->regions[1].graph.mapped_op,
                    4); /* graph kernels map through their nodes anyway */
    char *txt = print_to_string(gr_ls_print, r);
    GR_ASSERT_CONTAINS(txt, "WARNING  no API records");
    free(txt);
    json_t *j = gr_ls_json(r);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(j, "warnings")), 1);
    CU_ASSERT_PTR_NULL(json_object_get(j, "collector")); /* no counts in this end record */
    json_decref(j);
    /* graphrun --trace prints them too (stdout; stderr in cli/graphrun.c) */
    gr_trace_result *tr = calloc(1, sizeof(*tr));
    CU_ASSERT_PTR_NOT_NULL_FATAL(tr);
    tr->trace = t;
    tr->analysis = r;
    snprintf(tr->path, sizeof(tr->path), "t.jsonl");
    char *buf = NULL;
    size_t blen = 0;
    FILE *mf = open_memstream(&buf, &blen);
    gr_trace_print(mf, tr);
    fclose(mf);
    GR_ASSERT_CONTAINS(buf, "  WARNING: no API records: CUPTI recorded no runtime or driver API call");
    GR_ASSERT_CONTAINS(buf, "  API records: ");
    free(buf);
    free(tr);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
    /* the same with the collector's counts: says what the callbacks saw */
    r = analyze_text(
        inproc_trace(&b, 0, 0,
                     "\"api_records\":0,\"launch_api_records\":0,\"launch_calls_seen\":4"),
        &t, NULL);
    CU_ASSERT_EQUAL(warnings_with(r, "(the collector's callbacks saw 4 launch calls)"), 1);
    j = gr_ls_json(r);
    CU_ASSERT_EQUAL(
        json_integer_value(json_object_get(json_object_get(j, "collector"), "launch_calls_seen")),
        4);
    json_decref(j);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
    /* complete: API and external-correlation records, counts that agree: nothing to say */
    r = analyze_text(
        inproc_trace(&b, 1, 1,
                     "\"api_records\":6,\"launch_api_records\":4,\"launch_calls_seen\":4"),
        &t, NULL);
    CU_ASSERT_EQUAL(gr_ls_warnings(r, w, 4), 0);
    CU_ASSERT_EQUAL(r->regions[0].launch_calls, 4);
    CU_ASSERT_EQUAL(r->regions[0].kernels_with_op, 4);
    CU_ASSERT_EQUAL(r->regions[1].kernels_with_op, 4);
    CU_ASSERT_EQUAL(r->regions[1].graph_launch_calls, 2);
    txt = print_to_string(gr_ls_print, r);
    CU_ASSERT_PTR_NULL(strstr(txt, "WARNING"));
    free(txt);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
    /* fewer launch API records than launch calls seen */
    r = analyze_text(
        inproc_trace(&b, 1, 1,
                     "\"api_records\":6,\"launch_api_records\":4,\"launch_calls_seen\":7"),
        &t, NULL);
    CU_ASSERT_EQUAL(
        warnings_with(
            r, "CUPTI recorded 4 launch API records for 7 top-level launch calls the collector's "
               "callbacks saw: 3 launches have no API record"),
        1);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
    /* API records but no external correlation: eager kernels of the region have no op */
    r = analyze_text(inproc_trace(&b, 1, 0, NULL), &t, NULL);
    CU_ASSERT_EQUAL(
        warnings_with(r, "no external-correlation records although the trace has API records"), 1);
    CU_ASSERT_EQUAL(warnings_with(r, "region \"v eager\": 4 of 4 kernels map to no workload op"),
                    1);
    CU_ASSERT_EQUAL(warnings_with(r, "region \"v graph\""), 0);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
    /* some eager kernels without a launch API record (corr 2, 3 and the untimed 4) */
    tb_init(&b, NULL);
    tb_api(&b, "cudaLaunchKernel", 0, 0, 1000, 1, 1);
    tb_kernel(&b, "k", 2000, 3000, 7, 1, 0, 0);
    tb_kernel(&b, "k", 4000, 5000, 7, 2, 0, 0);
    tb_kernel(&b, "k", 6000, 7000, 7, 3, 0, 0);
    r = analyze_text(tb_end(&b, 0), &t, NULL);
    CU_ASSERT_EQUAL(warnings_with(r, "2 of 3 eager kernels have no launch API record"), 1);
    CU_ASSERT_EQUAL(gr_ls_warnings(r, NULL, 0), 1);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
    /* graphs only (no eager kernel) and no API records: nothing is missing that the report uses
     * for eager kernels; an empty trace neither */
    r = analyze_text(graph_trace(&b), &t, NULL);
    CU_ASSERT_EQUAL(warnings_with(r, "no API records"), 0);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    free(b.p);
    r = analyze_text(HDR END0, &t, NULL);
    CU_ASSERT_EQUAL(gr_ls_warnings(r, w, 4), 0);
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
}

static void test_report_names(void) {
    char buf[256];
    /* demangled through the C++ runtime when it can be found (it is on every Linux with g++) */
    const char *d = gr_ls_kernel_name("_Z4tinyPfi", 0, buf, sizeof(buf));
    CU_ASSERT_STRING_EQUAL(d, "tiny(float*, int)");
    CU_ASSERT_STRING_EQUAL(gr_ls_kernel_name("plain_name", 0, buf, sizeof(buf)), "plain_name");
    CU_ASSERT_STRING_EQUAL(gr_ls_kernel_name("_Znot a mangled name", 0, buf, sizeof(buf)), "_Znot a mangled name");
    CU_ASSERT_STRING_EQUAL(gr_ls_kernel_name("abcdefghijklmnop", 10, buf, sizeof(buf)), "abcdefg...");
    CU_ASSERT_STRING_EQUAL(gr_ls_kernel_name(NULL, 10, buf, sizeof(buf)), "");
}

static CU_TestInfo report_tests[] = {{"text and JSON", test_report_text_and_json},
                                     {"warnings: what the trace did not record", test_report_warnings},
                                     {"kernel names", test_report_names},
                                     CU_TEST_INFO_NULL};

/* ---- suite cupti_format: hand-made CUPTI records through the formatter and back ---- */

static const char *fake_api_name(int driver, uint32_t cbid) {
    if (!driver && cbid == 211) return "cudaLaunchKernel";
    if (driver && cbid == 307) return "cuLaunchKernel";
    return NULL;
}

static void test_format_records(void) {
    const uint64_t t0 = 1764412345000000000ULL;
    gr_fmt f;
    gr_fmt_init(&f, t0, fake_api_name);
    gr_sbuf b;
    gr_sb_init(&b);
    gr_sb_cstr(&b, "{\"t\":\"header\",\"schema_version\":1,\"t0\":1764412345000000000}\n");
    int records = 0;
    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof(k));
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.name = "_Z4tinyPfi";
    k.start = t0 + 1000;
    k.end = t0 + 3500;
    k.deviceId = 0;
    k.contextId = 1;
    k.streamId = 13;
    k.correlationId = 77;
    k.gridX = 2, k.gridY = 1, k.gridZ = 1, k.blockX = 256, k.blockY = 1, k.blockZ = 1;
    k.registersPerThread = 16;
    k.staticSharedMemory = 128;
    k.dynamicSharedMemory = 1024;
    k.queued = t0 + 100;
    k.submitted = t0 + 600;
    records += gr_fmt_record(&f, (CUpti_Activity *)&k, &b);
    k.start = t0 + 5000;
    k.end = t0 + 6000;
    k.graphId = 4;
    k.graphNodeId = 99;
    k.queued = k.submitted = 0;
    records += gr_fmt_record(&f, (CUpti_Activity *)&k, &b);
    k.name = "other \"kernel\"";
    k.start = k.end = 0;
    records += gr_fmt_record(&f, (CUpti_Activity *)&k, &b);
    CUpti_ActivityAPI a;
    memset(&a, 0, sizeof(a));
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = 211;
    a.start = t0 + 10;
    a.end = t0 + 900;
    a.threadId = 9;
    a.correlationId = 77;
    records += gr_fmt_record(&f, (CUpti_Activity *)&a, &b);
    a.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    a.cbid = 307;
    a.start = t0 + 20;
    a.end = t0 + 800;
    records += gr_fmt_record(&f, (CUpti_Activity *)&a, &b);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = 999; /* a name the lookup does not know */
    records += gr_fmt_record(&f, (CUpti_Activity *)&a, &b);
    a.cbid = 211; /* interned once */
    records += gr_fmt_record(&f, (CUpti_Activity *)&a, &b);
    CUpti_ActivityMemcpy6 m;
    memset(&m, 0, sizeof(m));
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
    m.bytes = 4096;
    m.start = t0 + 7000;
    m.end = t0 + 8000;
    m.streamId = 13;
    m.correlationId = 78;
    records += gr_fmt_record(&f, (CUpti_Activity *)&m, &b);
    CUpti_ActivityMemset4 ms;
    memset(&ms, 0, sizeof(ms));
    ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    ms.bytes = 64;
    ms.value = 7;
    ms.start = t0 + 9000;
    ms.end = t0 + 9500;
    ms.streamId = 14;
    ms.correlationId = 79;
    records += gr_fmt_record(&f, (CUpti_Activity *)&ms, &b);
    CUpti_ActivityExternalCorrelation x;
    memset(&x, 0, sizeof(x));
    x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    x.externalId = (5ULL << 32) | 3;
    x.correlationId = 77;
    records += gr_fmt_record(&f, (CUpti_Activity *)&x, &b);
    CUpti_ActivityOverhead3 o;
    memset(&o, 0, sizeof(o));
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.start = t0 + 100;
    o.end = t0 + 2100;
    records += gr_fmt_record(&f, (CUpti_Activity *)&o, &b);
    CUpti_Activity other;
    memset(&other, 0, sizeof(other));
    other.kind = CUPTI_ACTIVITY_KIND_MARKER;
    size_t before = b.len;
    CU_ASSERT_EQUAL(gr_fmt_record(&f, &other, &b), 0); /* kinds the trace does not keep */
    CU_ASSERT_EQUAL(b.len, before);
    CU_ASSERT_EQUAL(records, 11);
    char end[128];
    snprintf(end, sizeof(end), "{\"t\":\"end\",\"records\":%d,\"dropped\":0}\n", records);
    gr_sb_cstr(&b, end);
    CU_ASSERT_FALSE(b.oom);
    /* names appear once each: 2 kernels + 3 APIs */
    int names = 0;
    for (const char *p = b.p; (p = strstr(p, "\"t\":\"name\"")); p++) names++;
    CU_ASSERT_EQUAL(names, 5);
    gr_error e;
    gr_trace *t = load_text(b.p, 0, &e);
    if (!t) fprintf(stderr, "\n    %s\n%s", e.msg, b.p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(t->gpu.n, 5);
    const gr_tr_gpu *g = &t->gpu.v[0];
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, g->name), "_Z4tinyPfi");
    CU_ASSERT_TRUE(g->s == 1000 && g->e == 3500 && g->q == 100 && g->sub == 600 && g->stream == 13 && g->corr == 77);
    CU_ASSERT_TRUE(g->grid[0] == 2 && g->block[0] == 256 && g->graph == 0 && g->node == 0 && !g->incomplete);
    CU_ASSERT_TRUE(t->gpu.v[1].graph == 4 && t->gpu.v[1].node == 99 && t->gpu.v[1].q == 0);
    CU_ASSERT_EQUAL(t->gpu.v[1].name, g->name);
    CU_ASSERT_TRUE(t->gpu.v[2].incomplete);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, t->gpu.v[2].name), "other \"kernel\"");
    CU_ASSERT_TRUE(t->gpu.v[3].kind == GR_GPU_MEMCPY && t->gpu.v[3].bytes == 4096);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, t->gpu.v[3].name), "DtoD");
    CU_ASSERT_TRUE(t->gpu.v[4].kind == GR_GPU_MEMSET && t->gpu.v[4].stream == 14);
    CU_ASSERT_EQUAL(t->api.n, 4);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, t->api.v[0].name), "cudaLaunchKernel");
    CU_ASSERT_TRUE(t->api.v[0].s == 10 && t->api.v[0].e == 900 && t->api.v[0].tid == 9 && t->api.v[0].cbid == 211);
    CU_ASSERT_TRUE(t->api.v[1].driver && t->api.v[1].cat == GR_API_LAUNCH);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, t->api.v[2].name), "runtime_cbid_999");
    CU_ASSERT_TRUE(t->ext.n == 1 && t->ext.v[0].id == ((5ULL << 32) | 3) && t->ext.v[0].corr == 77);
    CU_ASSERT_TRUE(t->ovh.n == 1 && t->ovh.v[0].e - t->ovh.v[0].s == 2000);
    CU_ASSERT_STRING_EQUAL(gr_trace_str(t, t->ovh.v[0].kind), "cupti_buffer_flush");
    /* and the analysis sees the driver call nested in the runtime call */
    gr_ls_report *r = NULL;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_ls_analyze(t, NULL, &r, &e), GR_OK);
    CU_ASSERT_EQUAL(r->nested_api, 3); /* every later call on thread 9 lies inside the first */
    ASSERT_NEAR(r->all.latency_us.median, 0.99); /* kernel at 1000 ns, runtime entry at 10 ns */
    gr_ls_report_destroy(r);
    gr_trace_destroy(t);
    gr_sb_free(&b);
    gr_fmt_free(&f);
    CU_ASSERT_STRING_EQUAL(gr_fmt_copy_kind(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD), "HtoD");
    CU_ASSERT_STRING_EQUAL(gr_fmt_overhead_kind(-5), "unknown");
}

static void test_cupti_errors(void) {
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_cupti_fail(39, "cuptiSubscribe_v2", "the attached client is \"Nsight Systems\"", "a/b/collector.c",
                                  12, &e),
                    GR_ERR_CUDA);
    GR_ASSERT_CONTAINS(e.msg, "cuptiSubscribe_v2 failed: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39)");
    GR_ASSERT_CONTAINS(e.msg, "another CUPTI client is already attached");
    GR_ASSERT_CONTAINS(e.msg, "the program itself runs on, untraced");
    GR_ASSERT_CONTAINS(e.msg, "the attached client is \"Nsight Systems\"");
    GR_ASSERT_CONTAINS(e.msg, "[collector.c:12]");
    CU_ASSERT_TRUE(gr_cupti_other_subscriber(&e));
    CU_ASSERT_STRING_EQUAL(e.api, "cuptiSubscribe_v2");
    CU_ASSERT_EQUAL(gr_exit_code(e.code), 1);
    struct {
        int code;
        const char *needle;
    } cases[] = {{15, "CUPTI could not initialise"}, {35, "not permitted"}, {27, "does not support CUPTI activity"},
                 {14, "does not match the CUDA driver"}, {12345, "CUPTI_ERROR_?"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        gr_error_clear(&e);
        gr_cupti_fail(cases[i].code, "cuptiActivityEnable(kernel)", NULL, "x.c", 1, &e);
        GR_ASSERT_CONTAINS(e.msg, cases[i].needle);
        GR_ASSERT_CONTAINS(e.msg, "cuptiActivityEnable(kernel) failed");
        CU_ASSERT_FALSE(gr_cupti_other_subscriber(&e));
    }
    CU_ASSERT_EQUAL(gr_cupti_fail(0, "x", NULL, "x.c", 1, &e), GR_OK);
}

static void dummy_listener(void *user, const gr_cupti_api_call *call) {
    (void)user;
    (void)call;
}

/* The callback layer's bookkeeping works without a device. */
static void test_collector_idle(void) {
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_FALSE(gr_cupti_active());
    int users[5];
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(gr_cupti_add_listener(dummy_listener, &users[i], &e), GR_OK);
    CU_ASSERT_EQUAL(gr_cupti_add_listener(dummy_listener, &users[4], &e), GR_ERR_INTERNAL);
    GR_ASSERT_CONTAINS(e.msg, "too many CUPTI listeners (at most 4)");
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(gr_cupti_remove_listener(dummy_listener, &users[i]), 1);
    CU_ASSERT_EQUAL(gr_cupti_remove_listener(dummy_listener, &users[0]), 0);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_cupti_watch_api(0, 211, &e), GR_ERR_INTERNAL);
    GR_ASSERT_CONTAINS(e.msg, "no CUPTI trace is running");
    gr_cupti_api_call c;
    CU_ASSERT_EQUAL(gr_cupti_current_api(&c), 0);
    gr_cupti_result res;
    CU_ASSERT_EQUAL(gr_cupti_stop("x", 0, &res, &e), GR_OK); /* nothing to stop */
    gr_cupti_tag_push(5); /* no-ops when not tracing */
    gr_cupti_tag_pop();
    gr_cupti_line("{}", 2);
}

static CU_TestInfo format_tests[] = {{"CUPTI records round trip", test_format_records},
                                     {"CUPTI errors name the call and the fix", test_cupti_errors},
                                     {"collector without a trace", test_collector_idle},
                                     CU_TEST_INFO_NULL};

/* ---- suite cupti_writer: the buffer pool and writer thread with fake records ---- */

typedef struct fake_rec {
    uint32_t magic, seq;
} fake_rec;

typedef struct wtest {
    int slow_every;
    volatile int gate_closed;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int in_format;
} wtest;

static int fake_next(uint8_t *buf, size_t valid, void **rec) {
    uint8_t *p = *rec ? (uint8_t *)*rec + sizeof(fake_rec) : buf;
    if (p + sizeof(fake_rec) > buf + valid) return 0;
    *rec = p;
    return 1;
}

static int fake_format(void *user, void *rec, gr_sbuf *out) {
    wtest *w = user;
    const fake_rec *r = rec;
    pthread_mutex_lock(&w->mu);
    w->in_format = 1;
    pthread_cond_broadcast(&w->cv);
    while (w->gate_closed) pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    if (w->slow_every && r->seq % (uint32_t)w->slow_every == 0) usleep(50);
    char line[64];
    int n = snprintf(line, sizeof(line), "{\"t\":\"x\",\"seq\":%u,\"m\":%u}\n", r->seq, r->magic);
    gr_sb_raw(out, line, (size_t)n);
    return 1;
}

static void fake_header(void *user, gr_sbuf *out) {
    (void)user;
    gr_sb_cstr(out, "{\"t\":\"header\",\"schema_version\":1,\"t0\":0}\n");
}

static void fake_end(void *user, const gr_writer_stats *st, gr_sbuf *out) {
    (void)user;
    char line[128];
    snprintf(line, sizeof(line), "{\"t\":\"end\",\"records\":%llu,\"dropped\":0}\n", (unsigned long long)st->records);
    gr_sb_cstr(out, line);
}

static void wtest_init(wtest *w) {
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    size_t got = fread(p, 1, (size_t)n, f);
    p[got] = '\0';
    fclose(f);
    if (len) *len = got;
    return p;
}

static void test_writer_bounded(void) {
    enum { PER_BUF = 64, NBUF = 300 };
    wtest w;
    wtest_init(&w);
    w.slow_every = 16;
    const char *path = gr_test_tmpfile(".jsonl", "", 0);
    gr_writer_config c = {path, 0, PER_BUF * sizeof(fake_rec), 3, 10000, fake_next, fake_format, fake_header, &w};
    gr_trace_writer *wr = NULL;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_writer_open(&c, &wr, &e), GR_OK);
    uint32_t seq = 0;
    int dirty = 0;
    for (int i = 0; i < NBUF; i++) {
        size_t size = 0;
        uint8_t *buf = gr_writer_buffer(wr, &size);
        CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
        CU_ASSERT_EQUAL(size, PER_BUF * sizeof(fake_rec));
        for (size_t k = 0; k < size; k++) dirty |= buf[k] != 0; /* recycled buffers come back zeroed */
        fake_rec *r = (fake_rec *)buf;
        int n = i == NBUF - 1 ? PER_BUF / 2 : PER_BUF; /* a partly filled last buffer */
        for (int k = 0; k < n; k++) r[k] = (fake_rec){0xABCD, seq++};
        gr_writer_submit(wr, buf, (size_t)n * sizeof(fake_rec));
    }
    CU_ASSERT_FALSE(dirty);
    gr_writer_line(wr, "{\"t\":\"y\",\"side\":1}", strlen("{\"t\":\"y\",\"side\":1}"));
    gr_writer_drain(wr);
    gr_writer_stats st;
    gr_writer_get_stats(wr, &st);
    CU_ASSERT_EQUAL(st.records, seq);
    CU_ASSERT_TRUE(st.buffers <= 3); /* the memory bound held */
    CU_ASSERT_EQUAL(st.refused, 0);
    CU_ASSERT_EQUAL(st.completed, NBUF);
    CU_ASSERT_EQUAL_FATAL(gr_writer_close(wr, fake_end, NULL, &st, &e), GR_OK);
    CU_ASSERT_EQUAL(st.write_errors, 0);
    CU_ASSERT_EQUAL(st.lines, (uint64_t)seq + 3);
    /* every record once, in order; header first, end last */
    size_t len;
    char *text = read_file(path, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_EQUAL(st.bytes, len);
    char *save = NULL;
    uint32_t want = 0;
    int lines = 0, side = 0, bad = 0, last_is_end = 0;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        gr_jline l;
        int col;
        char msg[128];
        if (!gr_jline_parse(line, strlen(line), &l, &col, msg, sizeof(msg))) {
            bad++;
            continue;
        }
        const char *t = gr_jline_get(&l, "t")->s;
        if (lines == 0) CU_ASSERT_STRING_EQUAL(t, "header");
        last_is_end = !strcmp(t, "end");
        if (last_is_end) CU_ASSERT_EQUAL(gr_jline_get(&l, "records")->i, (int64_t)seq);
        if (!strcmp(t, "y")) side++;
        if (!strcmp(t, "x")) {
            if ((uint32_t)gr_jline_get(&l, "seq")->i != want) bad++;
            want++;
        }
        lines++;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(want, seq);
    CU_ASSERT_EQUAL(side, 1);
    CU_ASSERT_TRUE(last_is_end);
    CU_ASSERT_EQUAL(lines, (int)seq + 3);
    free(text);
    unlink(path);
}

/* With the writer stuck and the pool at its bound, a request waits wait_ms and then gives up
 * (CUPTI would count those records as dropped); nothing hangs. */
static void test_writer_refuses_after_wait(void) {
    wtest w;
    wtest_init(&w);
    w.gate_closed = 1;
    const char *path = gr_test_tmpfile(".jsonl", "", 0);
    gr_writer_config c = {path, 0, 8 * sizeof(fake_rec), 1, 50, fake_next, fake_format, fake_header, &w};
    gr_trace_writer *wr = NULL;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_writer_open(&c, &wr, &e), GR_OK);
    size_t size;
    uint8_t *buf = gr_writer_buffer(wr, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    ((fake_rec *)buf)[0] = (fake_rec){1, 0};
    gr_writer_submit(wr, buf, sizeof(fake_rec));
    pthread_mutex_lock(&w.mu);
    while (!w.in_format) pthread_cond_wait(&w.cv, &w.mu); /* the writer holds the only buffer */
    pthread_mutex_unlock(&w.mu);
    CU_ASSERT_PTR_NULL(gr_writer_buffer(wr, &size));
    CU_ASSERT_EQUAL(size, 0);
    gr_writer_stats st;
    gr_writer_get_stats(wr, &st);
    CU_ASSERT_EQUAL(st.refused, 1);
    CU_ASSERT_EQUAL(st.waits, 1);
    pthread_mutex_lock(&w.mu);
    w.gate_closed = 0;
    pthread_cond_broadcast(&w.cv);
    pthread_mutex_unlock(&w.mu);
    CU_ASSERT_EQUAL(gr_writer_close(wr, fake_end, NULL, &st, &e), GR_OK);
    CU_ASSERT_EQUAL(st.records, 1);
    unlink(path);
}

typedef struct side_arg {
    gr_trace_writer *w;
    int id;
} side_arg;

static void *side_thread(void *p) {
    side_arg *a = p;
    for (int j = 0; j < 500; j++) {
        char line[64];
        int n = snprintf(line, sizeof(line), "{\"t\":\"y\",\"th\":%d,\"n\":%d}", a->id, j);
        gr_writer_line(a->w, line, (size_t)n);
    }
    return NULL;
}

static void test_writer_side_lines_and_errors(void) {
    wtest w;
    wtest_init(&w);
    const char *path = gr_test_tmpfile(".jsonl", "", 0);
    gr_writer_config c = {path, 0, 64, 2, 1000, fake_next, fake_format, fake_header, &w};
    gr_trace_writer *wr = NULL;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_writer_open(&c, &wr, &e), GR_OK);
    pthread_t th[4];
    side_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (side_arg){wr, i};
        pthread_create(&th[i], NULL, side_thread, &args[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    gr_writer_stats st;
    CU_ASSERT_EQUAL(gr_writer_close(wr, fake_end, NULL, &st, &e), GR_OK);
    char *text = read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    int next[4] = {0, 0, 0, 0}, bad = 0;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        gr_jline l;
        int col;
        char msg[64];
        if (!gr_jline_parse(line, strlen(line), &l, &col, msg, sizeof(msg))) {
            bad++;
            continue;
        }
        if (strcmp(gr_jline_get(&l, "t")->s, "y")) continue;
        int id = (int)gr_jline_get(&l, "th")->i, n = (int)gr_jline_get(&l, "n")->i;
        if (n != next[id]) bad++; /* per thread, in order, once */
        next[id] = n + 1;
    }
    CU_ASSERT_EQUAL(bad, 0);
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(next[i], 500);
    free(text);
    /* an existing file in exclusive mode, a missing directory */
    c.exclusive = 1;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_writer_open(&c, &wr, &e), GR_ERR_IO);
    GR_ASSERT_CONTAINS(e.msg, path);
    GR_ASSERT_CONTAINS(e.msg, "cannot create the trace file: File exists");
    unlink(path);
    c.exclusive = 0;
    c.path = "/nonexistent/dir/t.jsonl";
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_writer_open(&c, &wr, &e), GR_ERR_IO);
    GR_ASSERT_CONTAINS(e.msg, "/nonexistent/dir/t.jsonl: cannot create the trace file: No such file or directory");
    /* a full disk */
    if (access("/dev/full", W_OK) == 0) {
        c.path = "/dev/full";
        gr_error_clear(&e);
        CU_ASSERT_EQUAL_FATAL(gr_writer_open(&c, &wr, &e), GR_OK);
        gr_writer_line(wr, "{\"t\":\"y\"}", 9);
        CU_ASSERT_EQUAL(gr_writer_close(wr, fake_end, NULL, &st, &e), GR_ERR_IO);
        GR_ASSERT_CONTAINS(e.msg, "/dev/full: ");
        GR_ASSERT_CONTAINS(e.msg, "writes to the trace failed (disk full?)");
        CU_ASSERT_TRUE(st.write_errors > 0);
    } else {
        printf("\n  (no writable /dev/full: the disk-full path is not exercised here)");
    }
}

/* Held (the collector's start-up probe), the writer writes nothing, not even the header, while
 * buffers and lines queue and buffer requests are served; released, everything follows in order. */
static void test_writer_hold(void) {
    wtest w;
    wtest_init(&w);
    const char *path = gr_test_tmpfile(".jsonl", "", 0);
    gr_writer_config c = {path,      0,           8 * sizeof(fake_rec), 4, 1000,
                          fake_next, fake_format, fake_header,          &w};
    gr_trace_writer *wr = NULL;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_writer_open(&c, &wr, &e), GR_OK);
    gr_writer_hold(wr, 1);
    size_t size;
    uint8_t *buf = gr_writer_buffer(wr, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    ((fake_rec *)buf)[0] = (fake_rec){7, 0};
    gr_writer_submit(wr, buf, sizeof(fake_rec));
    gr_writer_line(wr, "{\"t\":\"y\"}", 9);
    gr_writer_drain(wr); /* returns while held */
    usleep(50 * 1000);
    gr_writer_stats st;
    gr_writer_get_stats(wr, &st);
    CU_ASSERT_EQUAL(st.records, 0);
    CU_ASSERT_EQUAL(st.bytes, 0);
    size_t len = 0;
    char *text = read_file(path, &len);
    CU_ASSERT_EQUAL(len, 0);
    free(text);
    gr_writer_hold(wr, 0);
    gr_writer_drain(wr);
    gr_writer_get_stats(wr, &st);
    CU_ASSERT_EQUAL(st.records, 1);
    /* held again, then closed while held: close writes everything anyway */
    gr_writer_hold(wr, 1);
    gr_writer_line(wr, "{\"t\":\"z\"}", 9);
    CU_ASSERT_EQUAL(gr_writer_close(wr, fake_end, NULL, &st, &e), GR_OK);
    text = read_file(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_TRUE(strncmp(text, "{\"t\":\"header\"", 13) == 0);
    const char *x = strstr(text, "\"t\":\"x\""), *y = strstr(text, "\"t\":\"y\""),
               *z = strstr(text, "\"t\":\"z\"");
    CU_ASSERT_TRUE(x && y && z && z > x && z > y);
    GR_ASSERT_CONTAINS(text, "{\"t\":\"end\",\"records\":1,");
    free(text);
    unlink(path);
}

static CU_TestInfo writer_tests[] = {{"bounded pool, every record in order", test_writer_bounded},
                                     {"held: nothing written until released", test_writer_hold},
                                     {"a request gives up after wait_ms", test_writer_refuses_after_wait},
                                     {"side lines from threads; open and write errors", test_writer_side_lines_and_errors},
                                     CU_TEST_INFO_NULL};

/* ---- suite cupti_cli: the cupti-launchstat command and graphrun --trace, end to end ---- */

static const char *bin(const char *name) {
    return gr_test_bin(name);
}

static char out[1 << 20];

/* Runs `env ... BIN args` from the source dir (shell words), stdout+stderr into `out`. */
static int run_tool(const char *tool, const char *env, const char *args) {
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "cd '%s' && %s '%s' %s 2>&1", GR_SOURCE_DIR, env ? env : "", bin(tool), args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int ls(const char *args) {
    return run_tool("cupti-launchstat", NULL, args);
}

static const char *write_tmp(const char *suffix, const char *text) {
    return gr_test_tmpfile(suffix, text, strlen(text));
}

static void test_cli_usage(void) {
    CU_ASSERT_EQUAL(ls(""), 2);
    GR_ASSERT_CONTAINS(out, "usage: cupti-launchstat [options] -- CMD");
    CU_ASSERT_EQUAL(ls("--help"), 0);
    GR_ASSERT_CONTAINS(out, "exit codes:");
    GR_ASSERT_CONTAINS(out, "examples:");
    CU_ASSERT_EQUAL(ls("--version"), 0);
    GR_ASSERT_CONTAINS(out, "trace schema 1");
    CU_ASSERT_EQUAL(ls("help report"), 0);
    GR_ASSERT_CONTAINS(out, "usage: cupti-launchstat report TRACE");
    CU_ASSERT_EQUAL(ls("report --help"), 0);
    GR_ASSERT_CONTAINS(out, "example"); /* "example:" or "examples:" */
    CU_ASSERT_EQUAL(ls("-o x.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "nothing to run: give the command after --");
    CU_ASSERT_EQUAL(ls("-o x.jsonl --"), 2);
    GR_ASSERT_CONTAINS(out, "nothing to run");
    CU_ASSERT_EQUAL(ls("./my_app --flag"), 2);
    GR_ASSERT_CONTAINS(out, "unexpected argument \"./my_app\": put the command after --");
    CU_ASSERT_EQUAL(ls("--bogus -- true"), 2);
    GR_ASSERT_CONTAINS(out, "unknown option --bogus (see --help)");
    CU_ASSERT_EQUAL(ls("--steps 0 -- true"), 2);
    GR_ASSERT_CONTAINS(out, "--steps takes a whole number >= 1, got \"0\"");
    CU_ASSERT_EQUAL(ls("--buffer-mb 0 -- true"), 2);
    GR_ASSERT_CONTAINS(out, "--buffer-mb takes a whole number from 1 to 1024");
    CU_ASSERT_EQUAL(ls("--max-buffers=1 -- true"), 2);
    GR_ASSERT_CONTAINS(out, "--max-buffers takes a whole number from 2 to 4096");
    CU_ASSERT_EQUAL(ls("--latency=1 -- true"), 2);
    GR_ASSERT_CONTAINS(out, "option --latency takes no value");
    CU_ASSERT_EQUAL(ls("-o"), 2);
    GR_ASSERT_CONTAINS(out, "option -o needs a value");
    CU_ASSERT_EQUAL(ls("--compare x -- true"), 2); /* a report option */
    GR_ASSERT_CONTAINS(out, "unknown option --compare");
    CU_ASSERT_EQUAL(ls("report"), 2);
    GR_ASSERT_CONTAINS(out, "report needs a TRACE file");
    CU_ASSERT_EQUAL(ls("report a.jsonl b.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "unexpected argument \"b.jsonl\" (one TRACE; --compare OTHER for a second)");
    CU_ASSERT_EQUAL(ls("report a.jsonl --short-gap-us -1"), 2);
    GR_ASSERT_CONTAINS(out, "--short-gap-us takes a number of microseconds > 0");
    CU_ASSERT_EQUAL(ls("report a.jsonl --top x"), 2);
    GR_ASSERT_CONTAINS(out, "--top takes a whole number >= 1");
    CU_ASSERT_EQUAL(ls("report a.jsonl --latency"), 2);
    GR_ASSERT_CONTAINS(out, "unknown option --latency");
}

static void test_cli_report(void) {
    tb b;
    const char *good = write_tmp(".jsonl", regions_trace(&b));
    free(b.p);
    char args[1024];
    snprintf(args, sizeof(args), "report %s", good);
    CU_ASSERT_EQUAL(ls(args), 0);
    GR_ASSERT_CONTAINS(out, "all times are TRACED");
    GR_ASSERT_CONTAINS(out, "6.667 us per kernel, traced");
    GR_ASSERT_CONTAINS(out, "== region \"v graph\" (traced)");
    snprintf(args, sizeof(args), "report %s --json -", good);
    CU_ASSERT_EQUAL(ls(args), 0);
    /* stdout is the JSON; the text went to stderr: find the JSON object */
    char *brace = strstr(out, "{\n  \"schema_version\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(brace);
    json_error_t je;
    json_t *j = json_loadb(brace, strlen(brace), JSON_DISABLE_EOF_CHECK, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(j, "regions")), 2);
    json_decref(j);
    const char *jpath = gr_test_tmpfile(".json", "", 0);
    snprintf(args, sizeof(args), "report %s --json %s", good, jpath);
    CU_ASSERT_EQUAL(ls(args), 0);
    j = json_load_file(jpath, 0, &je);
    CU_ASSERT_PTR_NOT_NULL(j);
    json_decref(j);
    unlink(jpath);
    snprintf(args, sizeof(args), "report %s --json /nonexistent/d/r.json", good);
    CU_ASSERT_EQUAL(ls(args), 2);
    GR_ASSERT_CONTAINS(out, "/nonexistent/d/r.json: cannot write the JSON report");
    /* compare two regions of one trace, and two traces */
    snprintf(args, sizeof(args), "report %s --compare %s --region 'v eager' --compare-region 'v graph' --json -", good,
             good);
    CU_ASSERT_EQUAL(ls(args), 0);
    GR_ASSERT_CONTAINS(out, ":v eager");
    GR_ASSERT_CONTAINS(out, "(a - b) per kernel: (50.00 - 30.00) us / 3.000 kernels per step = 6.667 us per kernel");
    GR_ASSERT_CONTAINS(out, "\"compare\"");
    snprintf(args, sizeof(args), "report %s --compare %s --region nope", good, good);
    CU_ASSERT_EQUAL(ls(args), 2);
    GR_ASSERT_CONTAINS(out, "--region: ");
    GR_ASSERT_CONTAINS(out, "has no region \"nope\" (regions: \"v eager\", \"v graph\")");
    snprintf(args, sizeof(args), "report %s --compare /nonexistent/other.jsonl", good);
    CU_ASSERT_EQUAL(ls(args), 2);
    GR_ASSERT_CONTAINS(out, "/nonexistent/other.jsonl: cannot open the trace");
    /* bad traces: exit 2 naming file and line */
    CU_ASSERT_EQUAL(ls("report /nonexistent/t.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: /nonexistent/t.jsonl: cannot open the trace");
    const char *corrupt = write_tmp(".jsonl", HDR "{\"t\":\"ext\",\"corr\":1,\"id\":2}\n{\"t\":\"ext\",\"corr\":}\n" END0);
    snprintf(args, sizeof(args), "report %s", corrupt);
    CU_ASSERT_EQUAL(ls(args), 2);
    GR_ASSERT_CONTAINS(out, ":3:19: invalid record");
    const char *cut = write_tmp(".jsonl", HDR "{\"t\":\"ext\",\"corr\":1,\"id\":2}\n");
    snprintf(args, sizeof(args), "report %s", cut);
    CU_ASSERT_EQUAL(ls(args), 2);
    GR_ASSERT_CONTAINS(out, "no end record");
    GR_ASSERT_CONTAINS(out, "--partial");
    snprintf(args, sizeof(args), "report %s --partial --steps 3", cut);
    CU_ASSERT_EQUAL(ls(args), 0);
    GR_ASSERT_CONTAINS(out, "no end record (--partial)");
    const char *bin_file = write_tmp(".jsonl", "\x7f" "ELF\x02\x01\x01");
    snprintf(args, sizeof(args), "report %s", bin_file);
    CU_ASSERT_EQUAL(ls(args), 2);
    GR_ASSERT_CONTAINS(out, ":1:8: truncated record");
    /* a trace without API records: said in the report and on stderr, still exit 0 */
    tb b2;
    const char *noapi = write_tmp(".jsonl", inproc_trace(&b2, 0, 0, NULL));
    free(b2.p);
    snprintf(args, sizeof(args), "report %s --json /dev/null", noapi);
    CU_ASSERT_EQUAL(ls(args), 0);
    GR_ASSERT_CONTAINS(out, "WARNING  no API records");
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: warning: ");
    GR_ASSERT_CONTAINS(out, ": no API records: CUPTI recorded no runtime or driver API call");
    unlink(good), unlink(corrupt), unlink(cut), unlink(bin_file), unlink(noapi);
}

/* The run form on this machine: exit codes pass through; without a GPU nothing is traced. */
static void test_cli_run_exit_codes(void) {
    const char *o = "/tmp/gr_test_ls_out.jsonl";
    char args[1024];
    snprintf(args, sizeof(args), "-o %s -- sh -c 'exit 7'", o);
    CU_ASSERT_EQUAL(ls(args), 7);
    GR_ASSERT_CONTAINS(out, "sh exited with code 7");
    snprintf(args, sizeof(args), "-o %s -- /nonexistent/prog --x", o);
    CU_ASSERT_EQUAL(ls(args), 127);
    GR_ASSERT_CONTAINS(out, "cannot run \"/nonexistent/prog\": No such file or directory");
    snprintf(args, sizeof(args), "-o %s -- sh -c 'kill -TERM $$'", o);
    CU_ASSERT_EQUAL(ls(args), 128 + 15);
    GR_ASSERT_CONTAINS(out, "sh was killed by signal 15");
    snprintf(args, sizeof(args), "-o %s -- true", o);
    int rc = ls(args);
    if (gr_test_have_gpu()) {
        CU_ASSERT_EQUAL(rc, 1);
        GR_ASSERT_CONTAINS(out, "made no CUDA calls");
    } else {
        CU_ASSERT_EQUAL(rc, 3);
        GR_ASSERT_CONTAINS(out, "no CUDA");
        GR_ASSERT_CONTAINS(out, "nothing was traced");
    }
    /* where the trace cannot go, or the injection library is missing */
    CU_ASSERT_EQUAL(ls("-o /nonexistent/dir/t.jsonl -- true"), 2);
    GR_ASSERT_CONTAINS(out, "-o: cannot write the trace to /nonexistent/dir/t.jsonl: No such file or directory");
    CU_ASSERT_EQUAL(ls("-o /tmp -- true"), 2);
    GR_ASSERT_CONTAINS(out, "-o: /tmp is a directory; give a file name");
    CU_ASSERT_EQUAL(ls("-o /tmp/ -- true"), 2);
    GR_ASSERT_CONTAINS(out, "names a directory");
    rc = ls("-o /proc/version -- true");
    CU_ASSERT_EQUAL(rc, 2);
    GR_ASSERT_CONTAINS(out, "/proc/version");
    CU_ASSERT_TRUE(strstr(out, "cannot replace") || strstr(out, "cannot write the trace"));
    CU_ASSERT_EQUAL(run_tool("cupti-launchstat", "GR_LAUNCHSTAT_INJECTION=/nonexistent/inject.so", "-- true"), 2);
    GR_ASSERT_CONTAINS(out, "/nonexistent/inject.so: cannot read the injection library");
    GR_ASSERT_CONTAINS(out, "set GR_LAUNCHSTAT_INJECTION=");
    unlink(o);
}

/* A stand-in for a traced program: it writes a prepared trace where the injection library would
 * (GR_LAUNCHSTAT_OUT), so the parent's handling of complete, untraced, cut and extra traces is
 * tested without a GPU, along with the environment it gives the program. */
static void test_cli_run_fake_program(void) {
    tb b;
    const char *prep = write_tmp(".jsonl", regions_trace(&b));
    free(b.p);
    const char *o = "/tmp/gr_test_ls_fake.jsonl";
    const char *envf = "/tmp/gr_test_ls_fake.env";
    char args[2048], pid_file[256];
    snprintf(pid_file, sizeof(pid_file), "%s.4242", o);
    snprintf(args, sizeof(args),
             "-o %s --steps 2 --latency --no-driver -- sh -c 'env > %s; cp %s \"$GR_LAUNCHSTAT_OUT\"; "
             "cp %s \"$GR_LAUNCHSTAT_OUT.4242\"'",
             o, envf, prep, prep);
    CU_ASSERT_EQUAL(ls(args), 0);
    GR_ASSERT_CONTAINS(out, "trace written to /tmp/gr_test_ls_fake.jsonl");
    GR_ASSERT_CONTAINS(out, "compare (traced)");
    GR_ASSERT_CONTAINS(out, "another CUDA process of the run (pid 4242) was traced to /tmp/gr_test_ls_fake.jsonl.4242");
    char *env = read_file(envf, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(env);
    GR_ASSERT_CONTAINS(env, "CUDA_INJECTION64_PATH=/");
    GR_ASSERT_CONTAINS(env, "libgr_launchstat_inject.so");
    GR_ASSERT_CONTAINS(env, "GR_LAUNCHSTAT_OUT=/tmp/gr_test_ls_fake.jsonl");
    GR_ASSERT_CONTAINS(env, "GR_LAUNCHSTAT_STEPS=2");
    GR_ASSERT_CONTAINS(env, "GR_LAUNCHSTAT_LATENCY=1");
    GR_ASSERT_CONTAINS(env, "GR_LAUNCHSTAT_DRIVER=0");
    GR_ASSERT_CONTAINS(env, "GR_LAUNCHSTAT_MEMCPY=1");
    GR_ASSERT_CONTAINS(env, "GR_LAUNCHSTAT_CMD=sh -c");
    const char *injected = strstr(env, "CUDA_INJECTION64_PATH=") + strlen("CUDA_INJECTION64_PATH=");
    char lib[PATH_MAX];
    snprintf(lib, sizeof(lib), "%.*s", (int)strcspn(injected, "\n"), injected);
    CU_ASSERT_EQUAL(access(lib, R_OK), 0); /* an existing file, with an absolute path */
    free(env);
    unlink(pid_file);
    /* the program fails: its exit code wins, the report is still printed; --json - */
    snprintf(args, sizeof(args), "-o %s --json - -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"; exit 4'", o, prep);
    CU_ASSERT_EQUAL(ls(args), 4);
    GR_ASSERT_CONTAINS(out, "\"command_exit_code\": 4");
    GR_ASSERT_CONTAINS(out, "sh exited with code 4");
    /* --no-report */
    snprintf(args, sizeof(args), "-o %s --no-report -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"'", o, prep);
    CU_ASSERT_EQUAL(ls(args), 0);
    CU_ASSERT_PTR_NULL(strstr(out, "compare (traced)"));
    /* the injection could not trace (another CUPTI client): it says so, exit 1 */
    const char *untraced = write_tmp(".jsonl", HDR "{\"t\":\"end\",\"records\":0,\"dropped\":0,\"reason\":\"not traced\","
                                                   "\"error\":\"cuptiSubscribe_v2 failed: "
                                                   "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39)\"}\n");
    snprintf(args, sizeof(args), "-o %s -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"'", o, untraced);
    CU_ASSERT_EQUAL(ls(args), 1);
    GR_ASSERT_CONTAINS(out, "sh ran untraced: cuptiSubscribe_v2 failed: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
    /* killed before the flush: the report covers what was written */
    const char *partial = write_tmp(".jsonl", HDR "{\"t\":\"name\",\"id\":1,\"s\":\"k\"}\n"
                                                  "{\"t\":\"k\",\"n\":1,\"s\":1000,\"e\":2000,\"str\":7,\"corr\":1}\n");
    snprintf(args, sizeof(args), "-o %s -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"'", o, partial);
    CU_ASSERT_EQUAL(ls(args), 0);
    GR_ASSERT_CONTAINS(out, "has no end record: sh was killed before the trace was flushed");
    GR_ASSERT_CONTAINS(out, "1 kernels");
    /* dropped records are a warning on stderr */
    tb_init(&b, NULL);
    tb_kernel(&b, "k", 1000, 2000, 7, 1, 0, 0);
    const char *dropped = write_tmp(".jsonl", tb_end(&b, 3));
    free(b.p);
    snprintf(args, sizeof(args), "-o %s -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"'", o, dropped);
    CU_ASSERT_EQUAL(ls(args), 0);
    GR_ASSERT_CONTAINS(out, "warning: CUPTI dropped 3 activity records");
    /* a damaged trace */
    const char *corrupt = write_tmp(".jsonl", HDR "{\"t\":\"ext\",,}\n" END0);
    snprintf(args, sizeof(args), "-o %s -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"'", o, corrupt);
    CU_ASSERT_EQUAL(ls(args), 1);
    GR_ASSERT_CONTAINS(out, "gr_test_ls_fake.jsonl:2:12: invalid record");
    /* an old CUDA_INJECTION64_PATH is replaced, with a warning */
    snprintf(args, sizeof(args), "-o %s -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"'", o, prep);
    CU_ASSERT_EQUAL(run_tool("cupti-launchstat", "CUDA_INJECTION64_PATH=/opt/other/libinject.so", args), 0);
    GR_ASSERT_CONTAINS(out, "warning: CUDA_INJECTION64_PATH=/opt/other/libinject.so is another tool's "
                            "injection library");
    /* Nsight, or a preloaded profiler, is named before CMD runs too */
    CU_ASSERT_EQUAL(run_tool("cupti-launchstat", "NSYS_PROFILING_SESSION_ID=7", args), 0);
    GR_ASSERT_CONTAINS(out, "warning: Nsight is profiling this process (NSYS_PROFILING_SESSION_ID is set)");
    CU_ASSERT_EQUAL(run_tool("cupti-launchstat", "LD_PRELOAD=/opt/nvidia/nsys/libToolsInjection64.so", args), 0);
    GR_ASSERT_CONTAINS(out, "preloads a profiler");
    unlink(o), unlink(envf), unlink(prep), unlink(untraced), unlink(partial), unlink(dropped), unlink(corrupt);
}

static void test_cli_graphrun_trace_options(void) {
    CU_ASSERT_EQUAL(run_tool("graphrun", NULL, "run --help"), 0);
    GR_ASSERT_CONTAINS(out, "--trace FILE");
    GR_ASSERT_CONTAINS(out, "--trace-iters N");
    CU_ASSERT_EQUAL(run_tool("graphrun", NULL, "run workloads/launch_bound.json --trace /nonexistent/dir/t.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "--trace: cannot write the trace to /nonexistent/dir/t.jsonl");
    CU_ASSERT_EQUAL(run_tool("graphrun", NULL, "run workloads/launch_bound.json --trace /tmp/"), 2);
    GR_ASSERT_CONTAINS(out, "--trace: \"/tmp/\" is a directory");
    CU_ASSERT_EQUAL(run_tool("graphrun", NULL, "run workloads/launch_bound.json --trace-iters 5"), 2);
    GR_ASSERT_CONTAINS(out, "--trace-iters goes with --trace FILE");
    CU_ASSERT_EQUAL(run_tool("graphrun", NULL, "run workloads/launch_bound.json --trace t.jsonl --trace-iters 0"), 2);
    GR_ASSERT_CONTAINS(out, "--trace-iters takes a whole number in [1, 100000000], got \"0\"");
    CU_ASSERT_EQUAL(run_tool("graphrun", NULL, "run workloads/launch_bound.json --trace"), 2);
    GR_ASSERT_CONTAINS(out, "option --trace needs a value");
    if (!gr_test_have_gpu()) {
        CU_ASSERT_EQUAL(run_tool("graphrun", NULL, "run workloads/launch_bound.json --set K=3 --trace /tmp/gr_t.jsonl"), 3);
        GR_ASSERT_CONTAINS(out, "nothing was run (exit 3)");
    }
}

/* The injection as NVTX's tool (NVTX_INJECTION64_PATH names it; cupti-launchstat does): its
 * NVTX entry points hand NVTX to the libcupti it links, answering as libcupti's own do, and the
 * header claims NVTX ranges only when NVTX reaches CUPTI. Without a GPU, in a forked child (CUPTI
 * state stays out of this process): CUPTI cannot initialise there, and libcupti's
 * InitializeInjectionNvtx2 then answers 1 without attaching; a library whose forwarding failed
 * (libcupti not found, an entry point missing) answers 0 and NVTX would unload it. */
static const void *no_export_table(uint32_t id) {
    (void)id;
    return NULL;
}

typedef int (*nvtx_entry_fn)(const void *(*)(uint32_t));

static nvtx_entry_fn entry(void *h, const char *sym) {
    void *f = h ? dlsym(h, sym) : NULL;
    nvtx_entry_fn fn = NULL;
    memcpy(&fn, &f, sizeof(fn));
    return fn;
}

static int inject_nvtx_child(const char *lib, const char *link) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) return 10;
    static const char *const syms[] = {"InitializeInjection", "InitializeInjectionNvtx",
                                       "InitializeInjectionNvtx2",
                                       "InitializeInjectionNvtxExtension"};
    for (int i = 0; i < 4; i++)
        if (!dlsym(h, syms[i])) return 11 + i;
    void *f = dlsym(h, "gr_inject_nvtx_reaches_cupti");
    int (*reaches)(const char *) = NULL;
    memcpy(&reaches, &f, sizeof(reaches));
    if (!reaches) return 20;
    if (reaches(NULL) != 1) return 21;       /* unset: the injection names libcupti */
    if (reaches("") != 0) return 22;         /* --no-nvtx */
    if (reaches(lib) != 1) return 23;        /* this library */
    if (reaches(link) != 1) return 24;       /* this library by another name */
    if (reaches("/usr/local/cuda/lib64/libcupti.so.13") != 1) return 25;
    if (reaches("/opt/nvidia/nsight-systems/target-linux-x64/libToolsInjection64.so") != 0) return 26;
    /* forwarding: the same answer as libcupti's own entry point */
    Dl_info di;
    void *c = NULL, *v = dlsym(RTLD_DEFAULT, "cuptiGetVersion");
    if (v && dladdr(v, &di) && di.dli_fname) c = dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    nvtx_entry_fn theirs = entry(c, "InitializeInjectionNvtx2"), ours = entry(h, "InitializeInjectionNvtx2");
    if (!theirs || !ours) return 30;
    int want = theirs(no_export_table), got = ours(no_export_table);
    if (got != want) return 31;
    if (want != 1) return 32; /* this CUPTI answers 1 without a device: see the comment above */
    return 0;
}

static void test_cli_inject_nvtx(void) {
    if (gr_test_have_gpu()) return; /* CUPTI would initialise in a child of a CUDA process */
    const char *lib = bin("libgr_launchstat_inject.so");
    char link[256];
    snprintf(link, sizeof(link), "/tmp/gr_test_inject_link_%d.so", (int)getpid());
    unlink(link);
    CU_ASSERT_EQUAL_FATAL(symlink(lib, link), 0);
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) _exit(inject_nvtx_child(lib, link));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    unlink(link);
    CU_ASSERT_TRUE(WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        fprintf(stderr, "\n    injection NVTX check %d failed (%s)", WEXITSTATUS(status), lib);
    CU_ASSERT_EQUAL(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
}

static CU_TestInfo cli_tests[] = {{"usage errors", test_cli_usage},
                                  {"injection: NVTX handed to libcupti", test_cli_inject_nvtx},
                                  {"report, --json, --compare, bad traces", test_cli_report},
                                  {"run: exit codes, no GPU, bad paths", test_cli_run_exit_codes},
                                  {"run: a stand-in traced program", test_cli_run_fake_program},
                                  {"graphrun --trace options", test_cli_graphrun_trace_options},
                                  CU_TEST_INFO_NULL};

/* ---- suite cupti_fixtures: traces recorded on the H200 (scripts/record-fixtures) ---- */

typedef struct fx_name {
    const char *name;
    double *dur;
    size_t n, cap;
} fx_name;

/* The graphrun command a fixture was recorded with (its header's "command"): the workload, its
 * --set assignments, --variant and the step counts, so that the trace's counts can be checked
 * against the plan that ran rather than against the trace itself. */
typedef struct fx_cmd {
    char workload[512], variant[64];
    char sets[16][128];
    int nsets, iters, warmup, batches, trace_iters, unroll;
} fx_cmd;

static int fx_parse_command(const char *command, fx_cmd *c) {
    memset(c, 0, sizeof(*c));
    c->iters = -1, c->warmup = -1, c->batches = -1, c->trace_iters = -1, c->unroll = 1;
    char buf[2048];
    snprintf(buf, sizeof(buf), "%s", command);
    char *words[128];
    int n = 0;
    for (char *w = strtok(buf, " "); w && n < 128; w = strtok(NULL, " "))
        words[n++] = w;
    size_t l0 = n > 0 ? strlen(words[0]) : 0;
    if (n < 3 || l0 < 8 || strcmp(words[0] + l0 - 8, "graphrun") || strcmp(words[1], "run"))
        return 0;
    snprintf(c->workload, sizeof(c->workload), "%s", words[2]);
    for (int i = 3; i + 1 < n; i++) {
        const char *o = words[i], *v = words[i + 1];
        if (!strcmp(o, "--set") && c->nsets < 16)
            snprintf(c->sets[c->nsets++], 128, "%s", v);
        else if (!strcmp(o, "--variant"))
            snprintf(c->variant, sizeof(c->variant), "%s", v);
        else if (!strcmp(o, "--iters"))
            c->iters = atoi(v);
        else if (!strcmp(o, "--warmup"))
            c->warmup = atoi(v);
        else if (!strcmp(o, "--batches"))
            c->batches = atoi(v);
        else if (!strcmp(o, "--trace-iters"))
            c->trace_iters = atoi(v);
        else if (!strcmp(o, "--unroll"))
            c->unroll = atoi(v);
        else
            continue;
        i++;
    }
    return 1;
}

/* The plan of one variant of the recorded workload, on the default target (the H200 the
 * fixtures were recorded on). */
static gr_plan *fx_plan(const fx_cmd *c, const char *variant) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(gr_test_src(c->workload), &wl, &e) != GR_OK) {
        fprintf(stderr, "\n    %s: %s", c->workload, e.msg);
        return NULL;
    }
    for (int i = 0; i < c->nsets; i++)
        if (gr_workload_set(wl, c->sets[i], &e) != GR_OK)
            fprintf(stderr, "\n    --set %s: %s", c->sets[i], e.msg);
    gr_plan *p = NULL;
    const char *v = gr_workload_variant(wl, variant, &e);
    gr_target t = gr_target_default();
    if (!v || gr_plan_resolve(wl, v, &t, gr_kernel_find, gr_kernel_all_names, &p, &e) != GR_OK)
        fprintf(stderr, "\n    %s variant %s: %s", c->workload, variant ? variant : "(default)",
                e.msg);
    gr_workload_destroy(wl);
    return p;
}

/* bench/torch_mlp.py: cudaProfilerStart/Stop bracket its --iters measured steps (one region);
 * a step is --layers x (Linear + GELU), one kernel each (addmm, gelu) on the H200; graph
 * mode replays one graph per step and launches nothing else in the region. */
static int check_fixture_torch(const char *path, const gr_trace *t, const gr_ls_report *rep) {
    int iters = 1000, layers = 8, graph = strstr(t->command, "--mode graph") != NULL;
    const char *v = strstr(t->command, "--iters ");
    if (v) iters = atoi(v + 8);
    if ((v = strstr(t->command, "--layers "))) layers = atoi(v + 9);
    CU_ASSERT_EQUAL_FATAL(rep->nregions, 1);
    const gr_ls_scope *s = &rep->regions[0];
    CU_ASSERT_EQUAL(s->steps, iters);
    CU_ASSERT_EQUAL(s->kernels % (size_t)iters, 0);
    CU_ASSERT_EQUAL(s->kernels / (size_t)iters, 2 * (size_t)layers); /* addmm + gelu */
    if (graph) {
        CU_ASSERT_EQUAL(s->graph.launches, (size_t)iters);
        CU_ASSERT_EQUAL(s->graph_launch_calls, (size_t)iters);
        CU_ASSERT_EQUAL(s->graph.node_kernels, s->kernels);
        CU_ASSERT_EQUAL(s->launch_calls, 0);
    } else {
        CU_ASSERT_EQUAL(s->graph.launches, 0);
        CU_ASSERT_EQUAL(s->launch_calls, s->kernels);
    }
    printf("\n      %s: %lld steps, %zu kernels (%zu a step), %zu graph launches, %zu launch calls",
           path, (long long)s->steps, s->kernels, s->kernels / (size_t)(iters > 0 ? iters : 1),
           s->graph.launches, s->launch_calls);
    return 1;
}

/* Counts of a graphrun fixture against the workload that recorded it. Traced regions (--trace):
 * each runs warm-up + --trace-iters steps of one variant (replay/trace.c: warm-up is a tenth,
 * at least 3); a step is the plan's kernels, eager launches one call per kernel and graph one
 * graph launch per step. A library op (cuBLAS) launches kernels the library chooses: then a
 * step is at least the plan's count, the same in every step and in both modes. Returns how
 * many scopes it checked. */
static int check_fixture_workload(const char *path, const gr_trace *t, const gr_ls_report *rep) {
    fx_cmd c;
    if (strstr(t->command, "bench/torch_mlp.py")) return check_fixture_torch(path, t, rep);
    if (!fx_parse_command(t->command, &c)) return 0;
    int checked = 0;
    if (rep->nregions > 0) {
        int iters =
            c.trace_iters > 0 ? c.trace_iters : (c.iters > 0 && c.iters < 200 ? c.iters : 200);
        int64_t steps = iters + (iters / 10 < 3 ? 3 : iters / 10);
        char last_variant[64] = "";
        size_t last_per_step = 0;
        for (size_t r = 0; r < rep->nregions; r++) {
            const gr_ls_scope *s = &rep->regions[r];
            gr_plan *p = fx_plan(&c, s->variant);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            CU_ASSERT_EQUAL(s->steps, steps);
            CU_ASSERT_EQUAL(s->kernels % (size_t)steps, 0);
            size_t per_step = s->kernels / (size_t)steps;
            if (p->library_ops == 0) {
                CU_ASSERT_EQUAL(per_step, (size_t)p->kernels);
            } else {
                CU_ASSERT_TRUE(per_step >= (size_t)p->kernels);
            }
            if (!strcmp(last_variant, s->variant)) {
                CU_ASSERT_EQUAL(per_step, last_per_step);
            }
            snprintf(last_variant, sizeof(last_variant), "%s", s->variant);
            last_per_step = per_step;
            if (!strcmp(s->mode, "graph")) {
                CU_ASSERT_EQUAL(s->graph.launches, (size_t)steps / (size_t)c.unroll);
                CU_ASSERT_EQUAL(s->graph_launch_calls, (size_t)steps / (size_t)c.unroll);
                CU_ASSERT_EQUAL(s->graph.node_kernels, s->kernels);
                CU_ASSERT_EQUAL(s->launch_calls, 0);
            } else {
                CU_ASSERT_STRING_EQUAL(s->mode, "eager");
                CU_ASSERT_EQUAL(s->launch_calls, s->kernels);
                CU_ASSERT_EQUAL(s->graph_launch_calls, 0);
            }
            if (s->steps != steps || s->kernels % (size_t)steps || per_step < (size_t)p->kernels ||
                (p->library_ops == 0 && per_step != (size_t)p->kernels))
                fprintf(stderr,
                        "\n    %s region \"%s\": %lld steps, %zu kernels; the workload says %lld x "
                        "%d (%d library ops)",
                        path, s->name, (long long)s->steps, s->kernels, (long long)steps,
                        p->kernels, p->library_ops);
            gr_plan_destroy(p);
            checked++;
        }
    } else {
        /* A whole graphrun run under the injection (cupti-launchstat -- graphrun run ...): the
         * graph replays warm-up + --iters steps plus the graph check's one; eager runs as many
         * (its check and its timing) plus the buffer initialisation, less than a step. */
        gr_plan *p = fx_plan(&c, c.variant[0] ? c.variant : NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(p->library_ops, 0);
        CU_ASSERT_TRUE(c.iters > 0 && c.warmup >= 0 && c.unroll == 1);
        const gr_ls_scope *a = &rep->all;
        size_t steps = (size_t)c.iters + (size_t)(c.warmup > 0 ? c.warmup : 0) + 1;
        size_t eager_steps_kernels = steps * (size_t)p->kernels;
        CU_ASSERT_EQUAL(a->graph.launches, steps);
        CU_ASSERT_EQUAL(a->graph_launch_calls, steps);
        CU_ASSERT_EQUAL(a->graph.node_kernels, steps * (size_t)p->kernels);
        CU_ASSERT_TRUE(a->eager_kernels >= eager_steps_kernels &&
                       a->eager_kernels - eager_steps_kernels < (size_t)p->kernels);
        if (a->graph.launches != steps || a->eager_kernels < eager_steps_kernels)
            fprintf(stderr,
                    "\n    %s: %zu graph launches, %zu node kernels, %zu eager kernels; the "
                    "workload says "
                    "%zu steps of %d kernels",
                    path, a->graph.launches, a->graph.node_kernels, a->eager_kernels, steps,
                    p->kernels);
        gr_plan_destroy(p);
        checked++;
    }
    return checked;
}

/* A separate reader (jansson, one object per line) that computes kernel counts, busy time over
 * all streams and median kernel durations per name; the analyzer must agree. Returns how many
 * scopes were also checked against the workload that recorded the trace. */
static int check_fixture(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) fprintf(stderr, "\n    %s: %s", path, strerror(errno));
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char *line = NULL;
    size_t cap = 0;
    json_t *names = json_object(); /* id -> name */
    fx_name rows[512];
    size_t nrows = 0, kernels = 0, inc = 0, nev = 0, evcap = 1024;
    ev *evs = malloc(evcap * sizeof(ev));
    long long end_records = -1, activity = 0;
    int lineno = 0, ok = 1;
    json_t *pending = json_array(); /* kernels before their name (order is not promised) */
    while (getline(&line, &cap, f) > 0) {
        lineno++;
        json_error_t je;
        json_t *j = json_loads(line, 0, &je);
        if (!j) {
            fprintf(stderr, "\n    %s:%d: jansson: %s", path, lineno, je.text);
            ok = 0;
            break;
        }
        const char *t = json_string_value(json_object_get(j, "t"));
        if (!t) t = "";
        if (!strcmp(t, "k") || !strcmp(t, "cpy") || !strcmp(t, "set") || !strcmp(t, "api") || !strcmp(t, "ext") ||
            !strcmp(t, "ovh"))
            activity++;
        if (!strcmp(t, "name")) {
            char key[32];
            snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(json_object_get(j, "id")));
            json_object_set(names, key, json_object_get(j, "s"));
        } else if (!strcmp(t, "end")) {
            end_records = (long long)json_integer_value(json_object_get(j, "records"));
        }
        if (!strcmp(t, "k") || !strcmp(t, "cpy") || !strcmp(t, "set")) {
            if (json_integer_value(json_object_get(j, "inc"))) {
                inc++; /* counted, not timed: any kind */
                if (!strcmp(t, "k")) kernels++;
            } else {
                if (nev + 2 > evcap) {
                    ev *grown = realloc(evs, (evcap *= 2) * sizeof(ev));
                    CU_ASSERT_PTR_NOT_NULL_FATAL(grown);
                    evs = grown;
                }
                evs[nev++] = (ev){(long long)json_integer_value(json_object_get(j, "s")), +1};
                evs[nev++] = (ev){(long long)json_integer_value(json_object_get(j, "e")), -1};
                if (!strcmp(t, "k")) {
                    kernels++;
                    json_array_append(pending, j);
                }
            }
        }
        json_decref(j);
    }
    free(line);
    fclose(f);
    CU_ASSERT_TRUE_FATAL(ok);
    CU_ASSERT_EQUAL(end_records, activity);
    size_t i;
    json_t *k;
    json_array_foreach(pending, i, k) {
        char key[32];
        snprintf(key, sizeof(key), "%lld", (long long)json_integer_value(json_object_get(k, "n")));
        const char *name = json_string_value(json_object_get(names, key));
        CU_ASSERT_PTR_NOT_NULL_FATAL(name);
        size_t r = 0;
        while (r < nrows && strcmp(rows[r].name, name)) r++;
        if (r == nrows && nrows < 512) rows[nrows++] = (fx_name){name, NULL, 0, 0};
        if (r >= 512) continue;
        fx_name *row = &rows[r];
        if (row->n == row->cap) row->dur = realloc(row->dur, (row->cap = row->cap ? row->cap * 2 : 64) * sizeof(double));
        row->dur[row->n++] = (double)(json_integer_value(json_object_get(k, "e")) - json_integer_value(json_object_get(k, "s"))) / 1000.0;
    }
    qsort(evs, nev, sizeof(ev), cmp_ev);
    double busy = 0;
    int cnt = 0;
    for (size_t e = 0; e < nev; e++) {
        if (e > 0 && cnt > 0) busy += (double)(evs[e].t - evs[e - 1].t) / 1000.0;
        cnt += evs[e].d;
    }
    /* the analyzer */
    gr_error err;
    gr_error_clear(&err);
    gr_trace *t = NULL;
    gr_ls_report *rep = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_trace_load(path, 0, &t, &err), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_ls_analyze(t, NULL, &rep, &err), GR_OK);
    CU_ASSERT_EQUAL(rep->all.kernels, kernels);
    CU_ASSERT_EQUAL(rep->all.incomplete, inc);
    ASSERT_NEAR(rep->all.busy_us, busy);
    CU_ASSERT_EQUAL(rep->all.nkern, nrows);
    for (size_t r = 0; r < nrows; r++) {
        const gr_ls_kernel_row *kr = kernel_row(t, &rep->all, rows[r].name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(kr);
        CU_ASSERT_EQUAL(kr->count, rows[r].n);
        ASSERT_NEAR(kr->dur_us.median, quant(rows[r].dur, rows[r].n, 0.5));
        free(rows[r].dur);
    }
    /* Expectations come from the fixture itself, so fixtures re-recorded by scripts/record-fixtures
     * need no change here. A trace has API records or it does not: in-process traces recorded
     * before the collector enabled the RUNTIME/DRIVER kinds (the H200 fixtures of 2026-11-29) have
     * none, and so no external-correlation records either (CUPTI writes those with API records):
     * their eager kernels have no launch call and no op. The analysis must say so. */
    int has_api = t->api.n > 0;
    int driver_on = strstr(t->apis, "driver:") && !strstr(t->apis, "driver: none");
    gr_ls_warning w[16];
    size_t nw = gr_ls_warnings(rep, w, 16);
    printf("\n    %s: %zu kernels, %zu names, busy %.1f us, %zu regions, %zu API / %zu ext "
           "records: analyzer agrees",
           path, kernels, nrows, busy, rep->nregions, t->api.n, t->ext.n);
    for (size_t wi = 0; wi < nw && wi < 16; wi++)
        printf("\n      warning: %.160s...", w[wi].msg);
    if (!has_api && rep->all.eager_kernels > 0) {
        CU_ASSERT_TRUE(nw > 0 && strstr(w[0].msg, "no API records") != NULL);
        printf("\n      NOTE: no API records (recorded before the in-process fix): launch-call and "
               "eager op "
               "checks skipped; re-record with scripts/record-fixtures");
    }
    if (has_api && driver_on)
        CU_ASSERT_EQUAL(rep->all.no_api, 0); /* every eager kernel has its launch call */
    if (t->has_api_counts) {
        /* the collector's own counts agree with what the file holds */
        CU_ASSERT_EQUAL(t->end_api_records, t->api.n);
        CU_ASSERT_EQUAL(t->end_ext_records, t->ext.n);
        CU_ASSERT_TRUE(t->end_launch_api_records >= t->end_launch_calls_seen);
        CU_ASSERT_EQUAL(t->dropped, 0);
        if (t->op.n > 0) CU_ASSERT_TRUE(t->end_launch_calls_seen > 0);
    }
    size_t region_kernels = 0;
    for (size_t r = 0; r < rep->nregions; r++) {
        const gr_ls_scope *s = &rep->regions[r];
        region_kernels += s->kernels;
        if (t->op.n == 0) continue;
        /* graphrun traces. Graph kernels map to ops through the node that captured them (resource
         * callbacks, no API records needed); every kernel of a graph run is a node kernel. */
        if (!strcmp(s->mode, "graph")) {
            CU_ASSERT_EQUAL(s->graph.mapped_op, s->graph.node_kernels);
            CU_ASSERT_EQUAL(s->kernels_with_op, s->kernels);
            if (has_api) CU_ASSERT_EQUAL(s->graph_launch_calls, s->graph.launches);
        }
        /* eager steps launch exactly one call per kernel, each tagged with its op (external
         * correlation); graphrun's buffer initialisation runs before the region starts */
        if (!strcmp(s->mode, "eager") && has_api) {
            CU_ASSERT_EQUAL(s->launch_calls, s->kernels);
            CU_ASSERT_EQUAL(s->no_api, 0);
            CU_ASSERT_EQUAL(s->kernels_with_op, s->kernels);
        }
        if (s->kernels_with_op != s->kernels ||
            (has_api && !strcmp(s->mode, "eager") && s->launch_calls != s->kernels))
            printf("\n      region \"%s\": %zu kernels, %zu with an op, %zu launch calls, %zu "
                   "graph launches, "
                   "%zu eager kernels without an API record",
                   s->name, s->kernels, s->kernels_with_op, s->launch_calls, s->graph_launch_calls,
                   s->no_api);
    }
    CU_ASSERT_TRUE(region_kernels <= rep->all.kernels);
    int against = check_fixture_workload(path, t, rep);
    if (against) printf("\n      %d scope(s) checked against the workload that recorded it", against);
    gr_ls_report_destroy(rep);
    gr_trace_destroy(t);
    json_decref(pending);
    json_decref(names);
    free(evs);
    return against;
}

/* The traces committed under tests/data (scripts/record-fixtures): each must be there, so that
 * a lost fixture or an empty folder fails instead of checking nothing. */
static const char *const committed_fixtures[] = {"decode_step.jsonl",
                                                 "launch_bound_k200.jsonl",
                                                 "launch_bound_k200_injection.jsonl",
                                                 "pointwise_fusion_n4096.jsonl",
                                                 "torch_mlp_eager.jsonl",
                                                 "torch_mlp_graph.jsonl"};
#define NCOMMITTED (sizeof(committed_fixtures) / sizeof(committed_fixtures[0]))

static void test_fixtures(void) {
    /* GR_FIXTURE_DIR: check freshly recorded fixtures (scripts/record-fixtures OUTDIR) before
     * they replace tests/data */
    const char *env = getenv("GR_FIXTURE_DIR");
    char dir[PATH_MAX]; /* a copy: gr_test_src's buffers are reused by the checks */
    snprintf(dir, sizeof(dir), "%s", env ? env : gr_test_src("tests/data"));
    DIR *d = opendir(dir);
    if (!d) fprintf(stderr, "\n    %s: %s", dir, strerror(errno));
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    int n = 0, found[NCOMMITTED] = {0};
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t l = strlen(ent->d_name);
        if (l < 7 || strcmp(ent->d_name + l - 6, ".jsonl") != 0) continue;
        /* capcheck_*.jsonl are capture-check event recordings (suite capcheck_io), not traces */
        if (!strncmp(ent->d_name, "capcheck_", 9)) continue;
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
        struct stat sb;
        if (stat(path, &sb) == 0)
            CU_ASSERT_TRUE(sb.st_size < 2 * 1000 * 1000); /* fixtures stay small */
        int against = check_fixture(path);
        for (size_t i = 0; i < NCOMMITTED; i++)
            if (!strcmp(ent->d_name, committed_fixtures[i])) {
                found[i] = 1;
                CU_ASSERT_TRUE(against >
                               0); /* each committed trace is checked against its workload */
            }
        n++;
    }
    closedir(d);
    printf("\n    %d trace fixtures in %s", n, dir);
    if (env) {
        if (n == 0) fprintf(stderr, "\n    GR_FIXTURE_DIR=%s holds no *.jsonl fixture", dir);
        CU_ASSERT_TRUE(n > 0);
        return;
    }
    CU_ASSERT_TRUE(n >= (int)NCOMMITTED);
    for (size_t i = 0; i < NCOMMITTED; i++) {
        if (!found[i]) fprintf(stderr, "\n    tests/data/%s is missing", committed_fixtures[i]);
        CU_ASSERT_TRUE(found[i]);
    }
}

static CU_TestInfo fixture_tests[] = {{"recorded traces vs an independent reader", test_fixtures},
                                      CU_TEST_INFO_NULL};

static gr_suite_def gr_cupti_suites[] = {{"cupti_jsonl", jsonl_tests, 0},
                                         {"cupti_trace", trace_tests, 0},
                                         {"cupti_analysis", analysis_tests, 0},
                                         {"cupti_report", report_tests, 0},
                                         {"cupti_format", format_tests, 0},
                                         {"cupti_writer", writer_tests, 0},
                                         {"cupti_cli", cli_tests, 0},
                                         {"cupti_fixtures", fixture_tests, 0},
                                         {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_cupti_suites)
