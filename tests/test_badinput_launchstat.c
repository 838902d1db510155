/* cupti-launchstat fed bad input as a hostile user would (issue #29): devices, FIFOs, directories
 * and overlong lines as traces, records with impossible times, comparisons of unlike regions,
 * options that need another, outputs that would overwrite an input, writes that fail, and a sweep
 * of malformed command lines and traces. Each case checks the exit code and that the message
 * names the place. No GPU needed; /dev/zero and FIFOs run under `timeout 10`. */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fileio.h"
#include "cupti_tools/capevents.h"
#include "cupti_tools/chrome.h"
#include "cupti_tools/jsonl.h"
#include "cupti_tools/trace.h"
#include "cupti_tools/writer.h"
#include "tests.h"

static char out[1 << 20];
static char dir[256]; /* a scratch directory, the working directory of every command */

static const char *scratch(void) {
    if (!dir[0]) {
        snprintf(dir, sizeof(dir), "/tmp/gr_badinput_ls_%d", (int)getpid());
        mkdir(dir, 0700);
    }
    return dir;
}

/* Each test ends by removing its scratch directory (the next one makes a fresh one). */
static void cleanup(void) {
    char cmd[300];
    if (!dir[0]) return;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    gr_test_popen("/tmp", cmd, out, sizeof(out));
    dir[0] = '\0';
}

/* cupti-launchstat ARGS (shell words) in the scratch directory, under `timeout 10`: a regression
 * that blocks or reads without end fails (exit 124) instead of hanging the suite. */
static int ls(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int ls(const char *fmt, ...) {
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof(args), fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof(cmd), "timeout 10 '%s' %s", gr_test_bin("cupti-launchstat"), args);
    return gr_test_popen(scratch(), cmd, out, sizeof(out));
}

/* A file in the scratch directory. */
static const char *put(const char *name, const char *text, size_t len) {
    static char paths[8][512];
    static int slot;
    char *p = paths[slot++ % 8];
    snprintf(p, 512, "%s/%s", scratch(), name);
    FILE *f = fopen(p, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fwrite(text, 1, len, f);
    fclose(f);
    return p;
}

static const char *puts_(const char *name, const char *text) {
    return put(name, text, strlen(text));
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    size_t got = fread(b, 1, (size_t)n, f);
    b[got] = '\0';
    fclose(f);
    if (len) *len = got;
    return b;
}

#define HDR "{\"t\":\"header\",\"schema_version\":1,\"t0\":1000,\"steps\":2}\n"
#define NAME1 "{\"t\":\"name\",\"id\":1,\"s\":\"kern_a\"}\n"
#define K(s, e) "{\"t\":\"k\",\"n\":1,\"s\":" #s ",\"e\":" #e ",\"str\":7,\"corr\":1}\n"
#define END(n) "{\"t\":\"end\",\"records\":" #n ",\"dropped\":0,\"e\":100000}\n"

/* ---- unbounded reads ---- */

static void test_unbounded_reads(void) {
    const char *good = puts_("good.jsonl", HDR NAME1 K(1000, 2000) K(3000, 4000) END(2));
    CU_ASSERT_EQUAL(ls("report good.jsonl"), 0);

    CU_ASSERT_EQUAL(ls("report /dev/zero"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: /dev/zero: is a character device, not a regular file");

    char fifo[512];
    snprintf(fifo, sizeof(fifo), "%s/fifo.jsonl", scratch());
    unlink(fifo);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    CU_ASSERT_EQUAL(ls("report fifo.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "fifo.jsonl: is a FIFO (named pipe), not a regular file");
    CU_ASSERT_EQUAL(ls("report good.jsonl --compare fifo.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "fifo.jsonl: is a FIFO (named pipe)");
    CU_ASSERT_EQUAL(ls("report good.jsonl --compare /dev/zero --html h.html"), 2);
    GR_ASSERT_CONTAINS(out, "/dev/zero: is a character device");
    unlink(fifo);

    CU_ASSERT_EQUAL(ls("report /tmp"), 2);
    GR_ASSERT_CONTAINS(out, "/tmp: is a directory, not a regular file");

    /* over the trace limit (a sparse file: nothing is written, and nothing may be read) */
    char huge[512];
    snprintf(huge, sizeof(huge), "%s/huge.jsonl", scratch());
    FILE *hf = fopen(huge, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(hf);
    int sized = ftruncate(fileno(hf), (off_t)gr_file_limit(GR_FILE_TRACE) + 1) == 0;
    fclose(hf);
    if (sized) {
        CU_ASSERT_EQUAL(ls("report huge.jsonl"), 2);
        GR_ASSERT_CONTAINS(out, "huge.jsonl: the trace file is 8.0 GiB (8589934593 bytes), over the 8.0 GiB (8589934592 bytes) limit for a trace file");
    }
    unlink(huge);

    /* a line over 1 MiB: refused at its line, whatever follows */
    size_t big = GR_JSONL_MAX_LINE + 100, hl = strlen(HDR);
    char *text = malloc(hl + big + 2);
    memcpy(text, HDR, hl);
    memset(text + hl, 'a', big);
    text[hl + big] = '\n';
    put("long.jsonl", text, hl + big + 1);
    CU_ASSERT_EQUAL(ls("report long.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "long.jsonl:2:1: line longer than 1048576 bytes (the limit of a trace line");
    gr_trace *t = NULL;
    gr_error err;
    gr_error_clear(&err);
    CU_ASSERT_EQUAL(gr_trace_load_mem(text, hl + big + 1, "m.jsonl", 0, &t, &err), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(err.msg, "m.jsonl:2:1: line longer than 1048576 bytes");
    CU_ASSERT_PTR_NULL(t);
    free(text);
    /* exactly at the limit is a line like any other (here: not JSON) */
    text = malloc(hl + GR_JSONL_MAX_LINE + 2);
    memcpy(text, HDR, hl);
    memset(text + hl, 'a', GR_JSONL_MAX_LINE);
    text[hl + GR_JSONL_MAX_LINE] = '\n';
    gr_error_clear(&err);
    CU_ASSERT_EQUAL(gr_trace_load_mem(text, hl + GR_JSONL_MAX_LINE + 1, "m.jsonl", 0, &t, &err), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(err.msg, "m.jsonl:2:1: invalid record");
    free(text);

    /* the --chrome/--html path reads the trace again for its NVTX ranges: the same opener */
    gr_error_clear(&err);
    CU_ASSERT_EQUAL_FATAL(gr_trace_load(good, 0, &t, &err), GR_OK);
    gr_timeline *tl = NULL;
    CU_ASSERT_EQUAL(gr_timeline_build(t, "/dev/zero", 0, &tl, &err), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(err.msg, "/dev/zero: cannot read the trace again for its NVTX ranges: is a character device");
    gr_timeline_destroy(tl);
    gr_trace_destroy(t);

    /* capture-check recordings (capevents.h): the same opener and line bound */
    gr_capev_list l;
    gr_error_clear(&err);
    CU_ASSERT_EQUAL(gr_capev_load("/dev/zero", &l, &err), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(err.msg, "/dev/zero: is a character device");
    gr_error_clear(&err);
    CU_ASSERT_EQUAL(gr_capev_load("/tmp", &l, &err), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(err.msg, "/tmp: is a directory");
    const char *rec_hdr = "{\"t\":\"capcheck\",\"schema_version\":1}\n";
    size_t rl = strlen(rec_hdr);
    text = malloc(rl + big + 2);
    memcpy(text, rec_hdr, rl);
    memset(text + rl, ' ', big);
    text[rl + big] = '\n';
    gr_error_clear(&err);
    CU_ASSERT_EQUAL(gr_capev_load_mem(text, rl + big + 1, "rec.jsonl", &l, &err), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(err.msg, "rec.jsonl:2:1: line longer than 1048576 bytes");
    free(text);
    /* a NUL byte no longer ends the recording silently */
    static const char nul_rec[] = "{\"t\":\"capcheck\",\"schema_version\":1}\n{\"t\":\"x\"}\0garbage\n";
    gr_error_clear(&err);
    CU_ASSERT_EQUAL(gr_capev_load_mem(nul_rec, sizeof(nul_rec) - 1, "rec.jsonl", &l, &err), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(err.msg, "rec.jsonl:2:10: NUL byte in the line");
    cleanup();
}

/* ---- records with impossible times ---- */

static void test_bad_times(void) {
    /* line 4: a kernel ending before it starts (e 0), line 6: one at an absurd time (after the
     * end record's e); the two good kernels: busy 2 us over a 4 us span */
    puts_("times.jsonl", HDR NAME1 K(1000, 2000) K(3000, 0) K(4000, 5000)
                             K(9000000000000000000, 9100000000000000000) END(4));
    CU_ASSERT_EQUAL(ls("report times.jsonl --json times.json"), 0);
    GR_ASSERT_CONTAINS(out, "WARNING  1 record excluded: end before start (first at line 4)");
    GR_ASSERT_CONTAINS(out, "WARNING  1 record excluded: a time outside the trace's span, 0 to 100000 ns after t0 "
                            "(end record) (first at line 6)");
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: warning: times.jsonl: 1 record excluded: end before start");
    GR_ASSERT_CONTAINS(out, "busy 2.000 us of 4.000 us span: idle 50.0%");
    char path[512];
    snprintf(path, sizeof(path), "%s/times.json", scratch());
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    json_t *ex = json_object_get(j, "excluded_records");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(ex, "end_before_start"), "count")), 1);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(ex, "end_before_start"), "first_line")), 4);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(ex, "outside_span"), "first_line")), 6);
    json_t *all = json_object_get(j, "whole_trace");
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(all, "kernels")), 2);
    double busy = json_number_value(json_object_get(all, "busy_us"));
    double idle = json_number_value(json_object_get(all, "idle_fraction"));
    CU_ASSERT(busy >= 0 && fabs(busy - 2.0) < 1e-9);
    CU_ASSERT(idle >= 0 && idle <= 1 && fabs(idle - 0.5) < 1e-9);
    json_decref(j);

    /* without an end time the span is GR_TRACE_MAX_SPAN_NS; negative times are outside it too;
     * API and overhead records are checked like kernels */
    gr_trace *t = NULL;
    gr_error err;
    gr_error_clear(&err);
    const char *partial = HDR NAME1 K(-5000, 2000) K(1000, 2000)
        "{\"t\":\"api\",\"d\":\"rt\",\"cb\":1,\"n\":1,\"s\":9,\"e\":3,\"corr\":1}\n"
        "{\"t\":\"ovh\",\"kind\":\"x\",\"s\":5,\"e\":9000000000000000000}\n";
    CU_ASSERT_EQUAL_FATAL(gr_trace_load_mem(partial, strlen(partial), "p.jsonl", 1, &t, &err), GR_OK);
    CU_ASSERT_EQUAL(t->gpu.n, 1);
    CU_ASSERT_EQUAL(t->api.n, 0);
    CU_ASSERT_EQUAL(t->ovh.n, 0);
    CU_ASSERT_EQUAL(t->excl_backwards.n, 1);
    CU_ASSERT_EQUAL(t->excl_backwards.first_line, 5);
    CU_ASSERT_EQUAL(t->excl_outside.n, 2);
    CU_ASSERT_EQUAL(t->excl_outside.first_line, 3);
    CU_ASSERT_EQUAL(t->span_end, GR_TRACE_MAX_SPAN_NS);
    gr_trace_destroy(t);

    /* latency stamps out of order: the kernel stays, its latency goes; a region outside the span
     * goes (line 5), one inside stays */
    const char *lat = HDR NAME1
        "{\"t\":\"k\",\"n\":1,\"s\":1000,\"e\":2000,\"q\":900,\"sub\":950,\"str\":7,\"corr\":1}\n"
        "{\"t\":\"k\",\"n\":1,\"s\":3000,\"e\":4000,\"q\":2950,\"sub\":2900,\"str\":7,\"corr\":2}\n"
        "{\"t\":\"region\",\"name\":\"far\",\"s\":-9000000000000000000,\"e\":9000000000000000000}\n"
        "{\"t\":\"region\",\"name\":\"near\",\"s\":500,\"e\":5000,\"steps\":1}\n" END(2);
    gr_error_clear(&err);
    CU_ASSERT_EQUAL_FATAL(gr_trace_load_mem(lat, strlen(lat), "l.jsonl", 0, &t, &err), GR_OK);
    CU_ASSERT_EQUAL(t->gpu.n, 2);
    CU_ASSERT_EQUAL(t->gpu.v[0].q, 900);
    CU_ASSERT_EQUAL(t->gpu.v[1].q, 0);
    CU_ASSERT_EQUAL(t->excl_latency.n, 1);
    CU_ASSERT_EQUAL(t->excl_latency.first_line, 4);
    CU_ASSERT_EQUAL(t->region.n, 1);
    CU_ASSERT_EQUAL(t->excl_outside.first_line, 5);
    gr_trace_destroy(t);
    puts_("lat.jsonl", lat);

    /* one stamp alone (kernels of a graph launch traced on the H200 with latency on carry one
     * of the two): no latency, and nothing out of order (gpu_cupti's injection trace, 5550 such
     * kernels, was warned about) */
    const char *single = HDR NAME1
        "{\"t\":\"k\",\"n\":1,\"s\":1000,\"e\":2000,\"sub\":950,\"str\":7,\"corr\":1}\n"
        "{\"t\":\"k\",\"n\":1,\"s\":3000,\"e\":4000,\"q\":2950,\"str\":7,\"corr\":2}\n" END(2);
    gr_error_clear(&err);
    CU_ASSERT_EQUAL_FATAL(gr_trace_load_mem(single, strlen(single), "s.jsonl", 0, &t, &err), GR_OK);
    CU_ASSERT_EQUAL(t->gpu.n, 2);
    CU_ASSERT_EQUAL(t->excl_latency.n, 0);
    gr_trace_destroy(t);
    CU_ASSERT_EQUAL(ls("report lat.jsonl"), 0);
    GR_ASSERT_CONTAINS(out, "WARNING  1 kernel with queued/submitted timestamps out of order (queued <= submitted "
                            "<= start fails; first at line 4): their latency is left out");
    GR_ASSERT_CONTAINS(out, "WARNING  1 record excluded: a time outside the trace's span");
    CU_ASSERT_PTR_NULL(strstr(out, "far"));
    CU_ASSERT_PTR_NULL(strstr(out, "-0.")); /* no negative figure anywhere */

    /* a grid size no int holds is refused where it is, not cast */
    const char *grid = HDR NAME1 "{\"t\":\"k\",\"n\":1,\"s\":1,\"e\":2,\"str\":1,\"corr\":1,\"g\":[1e30,1,1]}\n" END(1);
    puts_("grid.jsonl", grid);
    CU_ASSERT_EQUAL(ls("report grid.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "grid.jsonl:3:");
    GR_ASSERT_CONTAINS(out, "\"g\" must hold whole numbers from 0 to 2147483647");
    cleanup();
}

/* ---- comparing unlike regions; options that need another ---- */

static void test_compare_and_option_pairs(void) {
    /* a: 2 steps, 4 kernels (2 per step), span 8 us; b: 2 steps, 2 kernels (1 per step), 4 us */
    puts_("a.jsonl", HDR NAME1 K(1000, 2000) K(3000, 4000) K(5000, 6000) K(7000, 9000) END(4));
    puts_("b.jsonl", HDR NAME1 K(1000, 2000) K(3000, 5000) END(2));
    CU_ASSERT_EQUAL(ls("report a.jsonl --compare b.jsonl --json cmp.json"), 0);
    GR_ASSERT_CONTAINS(out, "WARNING: kernels per step differ (2 in a, 1 in b): the compared regions ran "
                            "different work, so per-kernel figures divide each side by its own count");
    GR_ASSERT_CONTAINS(out, "per kernel: a 2.000 us (4.000 us / 2.000 kernels per step), b 2.000 us (2.000 us / "
                            "1.000 kernels per step); a - b = 0 us per kernel");
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: warning: --compare b.jsonl: kernels per step differ");
    CU_ASSERT_PTR_NULL(strstr(out, "(a - b) per kernel:")); /* the old single-count division */
    char path[512];
    snprintf(path, sizeof(path), "%s/cmp.json", scratch());
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    json_t *c = json_object_get(j, "compare");
    CU_ASSERT_TRUE(json_is_true(json_object_get(c, "kernels_per_step_differ")));
    CU_ASSERT(fabs(json_number_value(json_object_get(c, "per_kernel_us_a")) - 2.0) < 1e-9);
    CU_ASSERT(fabs(json_number_value(json_object_get(c, "per_kernel_us_b")) - 2.0) < 1e-9);
    CU_ASSERT(fabs(json_number_value(json_object_get(c, "per_kernel_us"))) < 1e-9);
    json_decref(j);
    /* like regions: no warning, the one-count line */
    CU_ASSERT_EQUAL(ls("report a.jsonl --compare a.jsonl"), 0);
    CU_ASSERT_PTR_NULL(strstr(out, "kernels per step differ"));
    GR_ASSERT_CONTAINS(out, "(a - b) per kernel: (4.000 - 4.000) us / 2.000 kernels per step = 0 us per kernel");

    CU_ASSERT_EQUAL(ls("report a.jsonl --region r"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: --region chooses the region of TRACE to compare: it needs --compare OTHER");
    CU_ASSERT_EQUAL(ls("report a.jsonl --compare-region r"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: --compare-region chooses the region of OTHER: it needs --compare OTHER");
    CU_ASSERT_EQUAL(ls("--no-report --json r.json -- true"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: --json shapes the report, which --no-report turns off");
    CU_ASSERT_EQUAL(ls("--no-report --chrome t.json -- true"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: --chrome shapes the report, which --no-report turns off");
    CU_ASSERT_EQUAL(ls("--capture-check --steps 3 -- true"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: --steps has no effect with --capture-check");
    CU_ASSERT_EQUAL(ls("--capture-check --latency -- true"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: --latency has no effect with --capture-check");
    cleanup();
}

/* ---- outputs that would overwrite an input or each other ---- */

static void test_output_identity(void) {
    const char *a = puts_("in.jsonl", HDR NAME1 K(1000, 2000) K(3000, 4000) END(2));
    size_t n0 = 0, n1 = 0;
    char *before = slurp(a, &n0);
    CU_ASSERT_EQUAL(ls("report in.jsonl --json in.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: --json in.jsonl: is the same file as TRACE in.jsonl, which is read; "
                            "writing it would destroy the input");
    CU_ASSERT_EQUAL(ls("report in.jsonl --chrome ./in.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "--chrome ./in.jsonl: is the same file as TRACE in.jsonl");
    CU_ASSERT_EQUAL(ls("report ../%s/in.jsonl --html %s/in.jsonl", strrchr(scratch(), '/') + 1, scratch()), 2);
    GR_ASSERT_CONTAINS(out, "is the same file as TRACE ../");
    /* a hard link is the same file under another name */
    char link_path[512];
    snprintf(link_path, sizeof(link_path), "%s/link.jsonl", scratch());
    unlink(link_path);
    CU_ASSERT_EQUAL_FATAL(link(a, link_path), 0);
    CU_ASSERT_EQUAL(ls("report in.jsonl --json link.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "--json link.jsonl: is the same file as TRACE in.jsonl");
    CU_ASSERT_EQUAL(ls("report in.jsonl --compare in.jsonl --json ./in.jsonl"), 2);
    char *after = slurp(a, &n1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(after);
    CU_ASSERT(n0 == n1 && !memcmp(before, after, n0)); /* the input survived every attempt */
    free(before);
    free(after);
    /* two outputs onto one file (not there yet: compared by resolved directory + name) */
    char f[512];
    snprintf(f, sizeof(f), "%s/o.json", scratch());
    unlink(f);
    CU_ASSERT_EQUAL(ls("report in.jsonl --chrome o.json --html ./o.json"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: --html ./o.json: is the same file as --chrome o.json: give each "
                            "output its own file");
    CU_ASSERT_EQUAL(access(f, F_OK), -1); /* refused before anything was written */
    CU_ASSERT_EQUAL(ls("report in.jsonl --json o.json --chrome o.json"), 2);
    GR_ASSERT_CONTAINS(out, "--chrome o.json: is the same file as --json o.json");
    /* the trace a run writes (-o) is an input of its report */
    CU_ASSERT_EQUAL(ls("-o t.jsonl --json ./t.jsonl -- true"), 2);
    GR_ASSERT_CONTAINS(out, "--json ./t.jsonl: is the same file as -o t.jsonl, which the trace is written to");
    /* outputs that cannot be files */
    CU_ASSERT_EQUAL(ls("report in.jsonl --html /tmp"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: --html /tmp: is a directory: give a file name");
    char fifo[512];
    snprintf(fifo, sizeof(fifo), "%s/out.fifo", scratch());
    unlink(fifo);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    CU_ASSERT_EQUAL(ls("report in.jsonl --chrome out.fifo"), 2);
    GR_ASSERT_CONTAINS(out, "--chrome out.fifo: is a FIFO (named pipe): give a file name");
    unlink(fifo);
    /* /dev/null takes any number of outputs */
    CU_ASSERT_EQUAL(ls("report in.jsonl --chrome /dev/null --html /dev/null --json /dev/null"), 0);
    cleanup();
}

/* ---- write failures say why ---- */

static int no_next(uint8_t *buf, size_t valid, void **rec) {
    (void)buf;
    (void)valid;
    (void)rec;
    return 0;
}

static int no_format(void *user, void *rec, gr_sbuf *o) {
    (void)user;
    (void)rec;
    (void)o;
    return 0;
}

static void one_header(void *user, gr_sbuf *o) {
    (void)user;
    gr_sb_cstr(o, "{\"t\":\"header\"}\n");
}

static void test_write_failures(void) {
    puts_("w.jsonl", HDR NAME1 K(1000, 2000) END(1));
    CU_ASSERT_EQUAL(ls("report w.jsonl --json /dev/full"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: /dev/full: cannot write the JSON report: No space left on device");
    CU_ASSERT_EQUAL(ls("report w.jsonl --chrome /dev/full"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: /dev/full: cannot write the timeline: No space left on device");
    CU_ASSERT_EQUAL(ls("report w.jsonl --html /dev/full"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: /dev/full: cannot write the HTML report: No space left on device");
    CU_ASSERT_EQUAL(ls("report w.jsonl --json /nonexistent/d/r.json"), 2);
    GR_ASSERT_CONTAINS(out, "/nonexistent/d/r.json: cannot write the JSON report (is the directory writable?): No "
                            "such file or directory");
    /* the capture-check report's JSON (a stand-in program "records" a committed recording) */
    if (access("/dev/full", W_OK) == 0) {
        CU_ASSERT_EQUAL(ls("--capture-check -o rec.jsonl --json /dev/full -- sh -c 'cp %s \"$GR_LAUNCHSTAT_OUT\"'",
                           gr_test_src("tests/data/capcheck_item_global.jsonl")),
                        2);
        GR_ASSERT_CONTAINS(out, "cupti-launchstat: /dev/full: cannot write the JSON report: No space left on device");
    }
    /* the trace writer (collector, graphrun --trace) names the OS reason too */
    if (access("/dev/full", W_OK) == 0) {
        gr_writer_config c = {"/dev/full", 0, 4096, 2, 1000, no_next, no_format, one_header, NULL};
        gr_trace_writer *wr = NULL;
        gr_error e;
        gr_error_clear(&e);
        CU_ASSERT_EQUAL_FATAL(gr_writer_open(&c, &wr, &e), GR_OK);
        gr_writer_line(wr, "{\"t\":\"y\"}", 9);
        CU_ASSERT_EQUAL(gr_writer_close(wr, NULL, NULL, NULL, &e), GR_ERR_IO);
        GR_ASSERT_CONTAINS(e.msg, "/dev/full: ");
        GR_ASSERT_CONTAINS(e.msg, "writes to the trace failed (disk full?): No space left on device; the trace is "
                                  "incomplete");
    } else {
        printf("\n  (no writable /dev/full: the disk-full paths are not exercised here)");
    }
    /* -o replaces a regular file only: never a device node or a FIFO */
    char fifo[512];
    snprintf(fifo, sizeof(fifo), "%s/trace.fifo", scratch());
    unlink(fifo);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    CU_ASSERT_EQUAL(ls("-o trace.fifo -- true"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: -o: trace.fifo is a FIFO (named pipe), not a regular file");
    CU_ASSERT_EQUAL(access(fifo, F_OK), 0); /* still there */
    cleanup();
}

/* ---- the sweep: malformed command lines and traces ---- */

static void test_sweep(void) {
    puts_("s.jsonl", HDR NAME1 K(1000, 2000) END(1));
    /* command lines */
    CU_ASSERT_EQUAL(ls("report"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: report needs a TRACE file");
    CU_ASSERT_EQUAL(ls("report s.jsonl --json"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: option --json needs a value");
    CU_ASSERT_EQUAL(ls("report s.jsonl --chrome --json x.json"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: option --chrome needs a value, got the option --json");
    char stray[512];
    snprintf(stray, sizeof(stray), "%s/--json", scratch());
    CU_ASSERT_EQUAL(access(stray, F_OK), -1); /* no file named after the option */
    CU_ASSERT_EQUAL(ls("report s.jsonl --json ''"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: option --json needs a value, got an empty one");
    CU_ASSERT_EQUAL(ls("report s.jsonl --bogus"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: unknown option --bogus");
    CU_ASSERT_EQUAL(ls("report s.jsonl --steps=-3"), 2);
    GR_ASSERT_CONTAINS(out, "--steps takes a whole number >= 1, got \"-3\"");
    CU_ASSERT_EQUAL(ls("report s.jsonl s.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "unexpected argument \"s.jsonl\" (one TRACE");
    CU_ASSERT_EQUAL(ls("report - < s.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: TRACE must be a file: a trace is not read from stdin (-)");
    CU_ASSERT_EQUAL(ls("report s.jsonl --compare -"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: --compare needs a file name: \"-\" (stdin/stdout) is taken by --json only");
    CU_ASSERT_EQUAL(ls("report s.jsonl --html=-"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: --html needs a file name");
    CU_ASSERT_EQUAL(ls("--buffer-mb 1024 --max-buffers 4096 -- true"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: --buffer-mb 1024 with --max-buffers 4096 lets the collector hold 4096 "
                            "GiB inside the traced program");
    CU_ASSERT_EQUAL(ls("--"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: nothing to run: give the command after --");
    CU_ASSERT_EQUAL(ls("-o"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: option -o needs a value");
    CU_ASSERT_EQUAL(ls("-o /nonexistent/dir/t.jsonl -- true"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: -o: cannot write the trace to /nonexistent/dir/t.jsonl: No such file "
                            "or directory");
    CU_ASSERT_EQUAL(ls("-o /tmp/ -- true"), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: -o: \"/tmp/\" names a directory");
    /* a command that does not exist: its own exit code, one message, no hang */
    CU_ASSERT_EQUAL(ls("-o t.jsonl -- /nonexistent/program --flag"), 127);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: cannot run \"/nonexistent/program\": No such file or directory "
                            "(not found: check the path or PATH)");
    CU_ASSERT_PTR_NULL(strstr(out, "nothing was traced"));
    CU_ASSERT_EQUAL(ls("-o t.jsonl -- /tmp"), 126);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat: cannot run \"/tmp\": Permission denied");

    /* traces */
    static const struct {
        const char *name, *text, *expect;
    } bad[] = {
        {"empty.jsonl", "", "empty.jsonl: empty file: not a cupti-launchstat trace (no header record)"},
        {"noheader.jsonl", NAME1 K(1, 2) END(1),
         "noheader.jsonl:1:6: not a cupti-launchstat trace: the first record must be the header"},
        {"malformed.jsonl", HDR "{\"t\":\"k\",\"n\":1,\"s\":1,,}\n" END(0), "malformed.jsonl:2:"},
        {"dupname.jsonl", HDR NAME1 NAME1 END(0), "dupname.jsonl:3:18: name id 1 is defined twice"},
        {"huge.jsonl", HDR NAME1 "{\"t\":\"k\",\"n\":1,\"s\":1e400,\"e\":2,\"str\":1,\"corr\":1}\n" END(1),
         "huge.jsonl:3:20: invalid record: number out of range"},
        {"bigint.jsonl", HDR NAME1 "{\"t\":\"k\",\"n\":1,\"s\":99999999999999999999,\"e\":2,\"str\":1,\"corr\":1}\n" END(1),
         "bigint.jsonl:3:20: \"k\" record: \"s\" must be a whole number"},
        {"hugeid.jsonl", HDR "{\"t\":\"name\",\"id\":99999999999,\"s\":\"a\"}\n" END(0),
         "hugeid.jsonl:2:18: name id 99999999999 out of range"},
        {"negsteps.jsonl", "{\"t\":\"header\",\"schema_version\":1,\"t0\":1,\"steps\":-2}\n" END(0),
         "negsteps.jsonl:1:"},
        {"cut.jsonl", HDR NAME1 K(1, 2), "cut.jsonl:3: the trace has no end record"},
        {"negstep.jsonl", HDR "{\"t\":\"region\",\"name\":\"r\",\"s\":1,\"e\":5,\"untraced_step_us\":-4}\n" END(0),
         "negstep.jsonl:2:57: \"region\" record: untraced_step_us must be >= 0"},
        {"count.jsonl", HDR NAME1 K(1, 2) END(5), "the end record counts 5 activity records but the file holds 1"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        puts_(bad[i].name, bad[i].text);
        int rc = ls("report %s", bad[i].name);
        if (rc != 2) fprintf(stderr, "\n    %s: exit %d", bad[i].name, rc);
        CU_ASSERT_EQUAL(rc, 2);
        GR_ASSERT_CONTAINS(out, bad[i].expect);
    }
    /* NUL bytes */
    static const char nul[] = HDR "{\"t\":\"name\",\0\"id\":1}\n" END(0);
    put("nul.jsonl", nul, sizeof(nul) - 1);
    CU_ASSERT_EQUAL(ls("report nul.jsonl"), 2);
    GR_ASSERT_CONTAINS(out, "nul.jsonl:2:13: NUL byte in the line: the file is binary or damaged, not a trace");
    /* a binary file */
    CU_ASSERT_EQUAL(ls("report '%s'", gr_test_bin("cupti-launchstat")), 2);
    GR_ASSERT_CONTAINS(out, "cupti-launchstat:1:");
    cleanup();
}

static CU_TestInfo badinput_tests[] = {
    {"unbounded reads: devices, FIFOs, directories, overlong lines", test_unbounded_reads},
    {"records with impossible times are excluded and counted", test_bad_times},
    {"--compare of unlike regions; options that need another", test_compare_and_option_pairs},
    {"outputs that would overwrite an input or each other", test_output_identity},
    {"write failures name the OS reason", test_write_failures},
    {"sweep: malformed command lines and traces", test_sweep},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_badinput_launchstat_suites[] = {{"badinput_launchstat", badinput_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_badinput_launchstat_suites)
