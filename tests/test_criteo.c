/* Criteo TSV suites (CPU): the line parser (good lines, empty fields, negatives, bad hex, wrong
 * field counts, bad labels and integers, CRLF), the file reader (no trailing newline, B rows,
 * every row, too few rows, malformed lines stopping or skipped), the preprocessing, the binding
 * of rows to dlrm_small's buffers (and its errors), the CPU reference run on bound rows, and
 * graphrun --input end to end through the CLI (validate: no GPU needed). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/criteo.h"
#include "core/hoststate.h"
#include "core/workload.h"
#include "kernels/registry.h"
#include "replay/load.h"
#include "tests.h"

/* A deterministic good line r: label r % 2; integer i is (r * 7 + i) % 50 - 3 (some negative),
 * empty when (r + i) % 5 == 0; categorical j is a hash printed as 8 hex digits, empty when
 * (r + j) % 7 == 0. */
static int64_t line_int(int r, int i) { return (r * 7 + i) % 50 - 3; }
static int int_empty(int r, int i) { return (r + i) % 5 == 0; }
static uint32_t line_hash(int r, int j) { return (uint32_t)r * 2654435761u + (uint32_t)j * 40503u + 17u; }
static int cat_empty(int r, int j) { return (r + j) % 7 == 0; }

static size_t good_line(int r, char *out, size_t size, const char *eol) {
    size_t o = (size_t)snprintf(out, size, "%d", r % 2);
    for (int i = 1; i <= 13; i++) {
        if (int_empty(r, i)) o += (size_t)snprintf(out + o, size - o, "\t");
        else o += (size_t)snprintf(out + o, size - o, "\t%lld", (long long)line_int(r, i));
    }
    for (int j = 1; j <= 26; j++) {
        if (cat_empty(r, j)) o += (size_t)snprintf(out + o, size - o, "\t");
        else o += (size_t)snprintf(out + o, size - o, "\t%08x", line_hash(r, j));
    }
    o += (size_t)snprintf(out + o, size - o, "%s", eol);
    return o;
}

/* `n` good lines (line k is good_line(k)), with `bad_at` (1-based, 0 = none) replaced by `bad`. */
static const char *tsv_file(int n, int bad_at, const char *bad, const char *eol, int last_eol) {
    size_t cap = (size_t)n * 512 + 1024, o = 0;
    char *text = malloc(cap);
    for (int k = 1; k <= n; k++) {
        const char *e = (k == n && !last_eol) ? "" : eol;
        if (k == bad_at) o += (size_t)snprintf(text + o, cap - o, "%s%s", bad, e);
        else o += good_line(k, text + o, cap - o, e);
    }
    const char *p = gr_test_tmpfile(".tsv", text, o);
    free(text);
    return p;
}

static void check_row(const gr_criteo_row *row, int r) {
    CU_ASSERT_EQUAL(row->label, (float)(r % 2));
    int md = 0, mc = 0;
    for (int i = 1; i <= 13; i++) {
        double want = int_empty(r, i) ? 0.0 : log1p((double)(line_int(r, i) > 0 ? line_int(r, i) : 0));
        md += int_empty(r, i);
        CU_ASSERT_DOUBLE_EQUAL(row->dense[i - 1], want, 1e-6);
    }
    for (int j = 1; j <= 26; j++) {
        mc += cat_empty(r, j);
        CU_ASSERT_EQUAL(row->hash[j - 1], cat_empty(r, j) ? 0u : line_hash(r, j));
    }
    CU_ASSERT_EQUAL(row->missing_dense, md);
    CU_ASSERT_EQUAL(row->missing_cat, mc);
}

static void test_parse_good_lines(void) {
    char line[1024], why[256];
    gr_criteo_row row;
    int col = 0;
    for (int r = 1; r <= 40; r++) {
        size_t n = good_line(r, line, sizeof(line), "");
        CU_ASSERT_EQUAL_FATAL(gr_criteo_parse_line(line, n, &row, &col, why, sizeof(why)), GR_OK);
        check_row(&row, r);
    }
    /* a hand-written line: negatives and zero become log(1) = 0, upper-case hex is accepted */
    const char *hand = "1\t-7\t0\t1\t2\t\t1000000\t3\t4\t5\t6\t7\t8\t9\t"
                       "0000000A\tffffffff\t\t00000001\t68fd1e64\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
    CU_ASSERT_EQUAL_FATAL(gr_criteo_parse_line(hand, strlen(hand), &row, &col, why, sizeof(why)), GR_OK);
    CU_ASSERT_EQUAL(row.label, 1.0f);
    CU_ASSERT_EQUAL(row.dense[0], 0.0f);
    CU_ASSERT_EQUAL(row.dense[1], 0.0f);
    CU_ASSERT_DOUBLE_EQUAL(row.dense[2], log(2.0), 1e-7);
    CU_ASSERT_EQUAL(row.dense[4], 0.0f);
    CU_ASSERT_DOUBLE_EQUAL(row.dense[5], log(1000001.0), 1e-5);
    CU_ASSERT_EQUAL(row.hash[0], 10u);
    CU_ASSERT_EQUAL(row.hash[1], 0xffffffffu);
    CU_ASSERT_EQUAL(row.hash[2], 0u);
    CU_ASSERT_EQUAL(row.hash[3], 1u);
    CU_ASSERT_EQUAL(row.hash[4], 0x68fd1e64u);
    CU_ASSERT_EQUAL(row.missing_dense, 1);
    CU_ASSERT_EQUAL(row.missing_cat, 22);
}

static void test_parse_empty_fields_and_crlf(void) {
    char line[256], why[256];
    gr_criteo_row row;
    int col = 0;
    /* every field but the label empty */
    size_t o = (size_t)snprintf(line, sizeof(line), "0");
    for (int f = 1; f < 40; f++) o += (size_t)snprintf(line + o, sizeof(line) - o, "\t");
    CU_ASSERT_EQUAL_FATAL(gr_criteo_parse_line(line, o, &row, &col, why, sizeof(why)), GR_OK);
    CU_ASSERT_EQUAL(row.missing_dense, 13);
    CU_ASSERT_EQUAL(row.missing_cat, 26);
    for (int i = 0; i < 13; i++) CU_ASSERT_EQUAL(row.dense[i], 0.0f);
    for (int j = 0; j < 26; j++) CU_ASSERT_EQUAL(row.hash[j], 0u);
    /* one trailing '\r' (CRLF files) is accepted and is not part of the last field */
    char crlf[1024];
    size_t n = good_line(3, crlf, sizeof(crlf), "\r");
    CU_ASSERT_EQUAL_FATAL(gr_criteo_parse_line(crlf, n, &row, &col, why, sizeof(why)), GR_OK);
    check_row(&row, 3);
    /* ... but two are not */
    n = good_line(3, crlf, sizeof(crlf), "\r\r");
    CU_ASSERT_EQUAL(gr_criteo_parse_line(crlf, n, &row, &col, why, sizeof(why)), GR_ERR_INPUT);
}

/* Replace field f (0 = label) of good line 5 with `text`; expect an error containing `msg`
 * at the column where field f starts. */
static void expect_bad_field(int f, const char *text, const char *msg) {
    char good[1024], line[1200], why[256];
    good_line(5, good, sizeof(good), "");
    size_t o = 0, s = 0;
    int field = 0, col_start = 0;
    for (size_t i = 0; i <= strlen(good); i++) {
        if (good[i] == '\t' || good[i] == '\0') {
            if (field == f) {
                col_start = (int)o + 1;
                o += (size_t)snprintf(line + o, sizeof(line) - o, "%s", text);
            } else {
                memcpy(line + o, good + s, i - s);
                o += i - s;
            }
            if (good[i] == '\t') line[o++] = '\t';
            s = i + 1;
            field++;
        }
    }
    line[o] = '\0';
    gr_criteo_row row;
    int col = 0;
    CU_ASSERT_EQUAL(gr_criteo_parse_line(line, o, &row, &col, why, sizeof(why)), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(why, msg);
    CU_ASSERT_EQUAL(col, col_start);
}

static void test_parse_bad_fields(void) {
    expect_bad_field(14, "1234567", "field C1 \"1234567\" is not 8 hex digits");
    expect_bad_field(20, "123456789", "field C7 \"123456789\" is not 8 hex digits");
    expect_bad_field(39, "12g45678", "field C26 \"12g45678\" is not 8 hex digits");
    expect_bad_field(15, " 1234567", "field C2 \" 1234567\" is not 8 hex digits");
    expect_bad_field(15, "0x123456", "field C2 \"0x123456\" is not 8 hex digits");
    expect_bad_field(0, "2", "label \"2\" is not 0 or 1");
    expect_bad_field(0, "", "label \"\" is not 0 or 1");
    expect_bad_field(0, "01", "label \"01\" is not 0 or 1");
    expect_bad_field(1, "1.5", "field I1 \"1.5\" is not an integer");
    expect_bad_field(13, "abc", "field I13 \"abc\" is not an integer");
    expect_bad_field(2, "-", "field I2 \"-\" is not an integer");
    expect_bad_field(3, "1e5", "field I3 \"1e5\" is not an integer");
    expect_bad_field(4, "+4", "field I4 \"+4\" is not an integer");
    expect_bad_field(5, "1234567890123456789", "field I5 \"1234567890123456789\" is not an integer");
    expect_bad_field(6, "\x01\x02", "field I6 \"??\" is not an integer");
    /* 18 digits is the most an integer field takes */
    char line[1200], buf[1300], why[256];
    gr_criteo_row row;
    int col;
    good_line(2, line, sizeof(line), "");
    snprintf(buf, sizeof(buf), "1\t123456789012345678%s", strchr(strchr(line, '\t') + 1, '\t'));
    CU_ASSERT_EQUAL(gr_criteo_parse_line(buf, strlen(buf), &row, &col, why, sizeof(why)), GR_OK);
    CU_ASSERT_DOUBLE_EQUAL(row.dense[0], log1p(123456789012345678.0), 1e-3);
}

static void test_parse_wrong_field_count(void) {
    char line[1200], why[256];
    gr_criteo_row row;
    int col;
    size_t n = good_line(4, line, sizeof(line), "");
    /* 39 fields: drop the label */
    const char *no_label = strchr(line, '\t') + 1;
    CU_ASSERT_EQUAL(gr_criteo_parse_line(no_label, strlen(no_label), &row, &col, why, sizeof(why)), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(why, "39 fields; expected 40 tab-separated fields");
    GR_ASSERT_CONTAINS(why, "test.txt line without the label");
    /* 41 fields */
    line[n] = '\t';
    line[n + 1] = '\0';
    CU_ASSERT_EQUAL(gr_criteo_parse_line(line, n + 1, &row, &col, why, sizeof(why)), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(why, "41 fields; expected 40");
    /* an empty line, and spaces instead of tabs */
    CU_ASSERT_EQUAL(gr_criteo_parse_line("", 0, &row, &col, why, sizeof(why)), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(why, "empty line");
    CU_ASSERT_EQUAL(gr_criteo_parse_line("\r", 1, &row, &col, why, sizeof(why)), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(why, "empty line");
    const char *spaces = "0 1 2 3";
    CU_ASSERT_EQUAL(gr_criteo_parse_line(spaces, strlen(spaces), &row, &col, why, sizeof(why)), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(why, "1 fields; expected 40");
}

static void test_preprocessing(void) {
    CU_ASSERT_EQUAL(gr_criteo_dense(0), 0.0f);
    CU_ASSERT_EQUAL(gr_criteo_dense(-5), 0.0f);
    CU_ASSERT_EQUAL(gr_criteo_dense(INT64_MIN + 1), 0.0f);
    CU_ASSERT_DOUBLE_EQUAL(gr_criteo_dense(1), log(2.0), 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(gr_criteo_dense(99), log(100.0), 1e-6);
    CU_ASSERT_EQUAL(gr_criteo_index(0xffffffffu, 1000), (int64_t)(4294967295ull % 1000));
    CU_ASSERT_EQUAL(gr_criteo_index(12345u, 3), 0);
    CU_ASSERT_EQUAL(gr_criteo_index(12346u, 3), 1);
    CU_ASSERT_EQUAL(gr_criteo_index(7u, 1), 0);
    CU_ASSERT_EQUAL(gr_criteo_index(0x68fd1e64u, 1000000), (int64_t)(0x68fd1e64u % 1000000u));
}

static void test_read_files(void) {
    gr_error e;
    gr_criteo_data *d = NULL;
    /* every row; no trailing newline on the last line */
    const char *p = tsv_file(9, 0, NULL, "\n", 0);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_criteo_read(p, 0, 0, 0, &d, &e), GR_OK);
    CU_ASSERT_EQUAL(d->rows, 9);
    CU_ASSERT_EQUAL(d->lines, 9);
    CU_ASSERT_EQUAL(d->skipped, 0);
    for (int r = 1; r <= 9; r++) {
        gr_criteo_row row;
        row.label = d->label[r - 1];
        memcpy(row.dense, d->dense + (r - 1) * 13, sizeof(row.dense));
        memcpy(row.hash, d->hash + (r - 1) * 26, sizeof(row.hash));
        int md = 0, mc = 0;
        for (int i = 1; i <= 13; i++) md += int_empty(r, i);
        for (int j = 1; j <= 26; j++) mc += cat_empty(r, j);
        row.missing_dense = md;
        row.missing_cat = mc;
        check_row(&row, r);
    }
    int64_t pos = 0;
    for (int r = 1; r <= 9; r++) pos += r % 2;
    CU_ASSERT_EQUAL(d->positives, pos);
    gr_criteo_destroy(d);
    /* CRLF line endings */
    p = tsv_file(4, 0, NULL, "\r\n", 1);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_criteo_read(p, 0, 0, 0, &d, &e), GR_OK);
    CU_ASSERT_EQUAL(d->rows, 4);
    CU_ASSERT_EQUAL(d->hash[3 * 26 + 1], cat_empty(4, 2) ? 0u : line_hash(4, 2));
    gr_criteo_destroy(d);
    /* the first B rows only: a malformed line after them is never read */
    p = tsv_file(10, 8, "garbage", "\n", 1);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_criteo_read(p, 5, 0, 0, &d, &e), GR_OK);
    CU_ASSERT_EQUAL(d->rows, 5);
    CU_ASSERT_EQUAL(d->lines, 5);
    gr_criteo_destroy(d);
    /* a malformed line stops the read with path:line:column */
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_read(p, 0, 0, 0, &d, &e), GR_ERR_INPUT);
    CU_ASSERT_PTR_NULL(d);
    char want[600];
    snprintf(want, sizeof(want), "%s:8:1: 1 fields; expected 40", p);
    GR_ASSERT_CONTAINS(e.msg, want);
    GR_ASSERT_CONTAINS(e.msg, "--skip-bad-lines");
    CU_ASSERT_EQUAL(e.line, 8);
    CU_ASSERT_EQUAL(gr_exit_code(e.code), 2);
    /* ... or is skipped and counted */
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_criteo_read(p, 0, 0, 1, &d, &e), GR_OK);
    CU_ASSERT_EQUAL(d->rows, 9);
    CU_ASSERT_EQUAL(d->lines, 10);
    CU_ASSERT_EQUAL(d->skipped, 1);
    CU_ASSERT_EQUAL(d->nbad, 1);
    CU_ASSERT_EQUAL(d->bad[0].line, 8);
    GR_ASSERT_CONTAINS(d->bad[0].why, "1 fields");
    /* row 8 of the data is line 9 of the file */
    CU_ASSERT_EQUAL(d->hash[7 * 26 + 2], cat_empty(9, 3) ? 0u : line_hash(9, 3));
    gr_criteo_destroy(d);
    /* a bad field deep in a line names its column: C6 of line 2 (not empty there) */
    CU_ASSERT_FALSE(cat_empty(2, 6));
    char bad[1024];
    good_line(2, bad, sizeof(bad), "");
    char *c6 = bad;
    for (int k = 0; k < 19; k++) c6 = strchr(c6, '\t') + 1; /* field 19 = C6 */
    int col = (int)(c6 - bad) + 1;
    memcpy(c6, "zz", 2);
    p = tsv_file(3, 2, bad, "\n", 1);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_read(p, 0, 0, 0, &d, &e), GR_ERR_INPUT);
    snprintf(want, sizeof(want), "%s:2:%d: field C6 \"zz", p, col);
    GR_ASSERT_CONTAINS(e.msg, want);
    CU_ASSERT_EQUAL(e.column, col);
}

static void test_read_errors(void) {
    gr_error e;
    gr_criteo_data *d = NULL;
    /* fewer rows than B: both counts and the fix */
    const char *p = tsv_file(6, 3, "bad", "\n", 1);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_read(p, 8, 0, 1, &d, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "has 5 rows (6 lines, 1 malformed skipped) but B = 8 rows were asked for");
    GR_ASSERT_CONTAINS(e.msg, "--set B=5 or fewer");
    /* more rows than allowed when B is not given */
    p = tsv_file(12, 0, NULL, "\n", 1);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_read(p, 0, 10, 0, &d, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "more than 10 rows; set the batch to read the first B rows (--set B=N)");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_read(p, 0, 12, 0, &d, &e), GR_OK);
    gr_criteo_destroy(d);
    /* empty file; only bad lines */
    p = gr_test_tmpfile(".tsv", "", 0);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_read(p, 0, 0, 0, &d, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "no data rows (0 lines read, 0 malformed skipped)");
    p = gr_test_tmpfile(".tsv", "x\ny\n", 4);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_read(p, 0, 0, 1, &d, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "no data rows (2 lines read, 2 malformed skipped)");
    /* a blank line is malformed, with its number */
    char text[2048];
    size_t o = good_line(1, text, sizeof(text), "\n");
    o += (size_t)snprintf(text + o, sizeof(text) - o, "\n");
    o += good_line(2, text + o, sizeof(text) - o, "\n");
    p = gr_test_tmpfile(".tsv", text, o);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_read(p, 0, 0, 0, &d, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, ":2:1: empty line");
    /* a file that is not there */
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_read("/nonexistent/x.tsv", 0, 0, 0, &d, &e), GR_ERR_IO);
    GR_ASSERT_CONTAINS(e.msg, "/nonexistent/x.tsv: cannot open the TSV input file");
    CU_ASSERT_EQUAL(gr_exit_code(e.code), 2);
}

static void test_read_sample_if_present(void) {
    const char *paths[] = {gr_test_src("tests/data/criteo_sample.tsv"), "/work/shared/data/criteo_sample.tsv"};
    for (int i = 0; i < 2; i++) {
        if (access(paths[i], R_OK) != 0) continue;
        gr_error e;
        gr_error_clear(&e);
        gr_criteo_data *d = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_criteo_read(paths[i], 0, 0, 0, &d, &e), GR_OK);
        CU_ASSERT_EQUAL(d->rows, 200);
        CU_ASSERT_EQUAL(d->skipped, 0);
        CU_ASSERT_TRUE(d->positives > 0 && d->positives < 200);
        CU_ASSERT_TRUE(d->missing_dense > 0 && d->missing_cat > 0);
        /* first row of the sample: label 0, I1 empty, I2 = 3, C1 = 05db9164 */
        CU_ASSERT_EQUAL(d->label[0], 0.0f);
        CU_ASSERT_EQUAL(d->dense[0], 0.0f);
        CU_ASSERT_DOUBLE_EQUAL(d->dense[1], log(4.0), 1e-6);
        CU_ASSERT_EQUAL(d->hash[0], 0x05db9164u);
        gr_criteo_destroy(d);
    }
}

/* ---------- binding to dlrm_small ---------- */

static gr_plan *dlrm_plan(const char *variant, const char *s1, const char *s2, const char *s3) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(gr_test_src("workloads/dlrm_small.json"), &wl, &e) != GR_OK) {
        fprintf(stderr, "\n    %s", e.msg);
        return NULL;
    }
    const char *sets[] = {s1, s2, s3};
    for (int i = 0; i < 3; i++)
        if (sets[i] && gr_workload_set(wl, sets[i], &e) != GR_OK) fprintf(stderr, "\n    %s", e.msg);
    gr_plan *p = NULL;
    gr_target t = gr_target_default();
    if (gr_plan_resolve(wl, variant, &t, gr_kernel_find, gr_kernel_all_names, &p, &e) != GR_OK)
        fprintf(stderr, "\n    %s", e.msg);
    gr_workload_destroy(wl);
    return p;
}

static int buf_index(const gr_plan *p, const char *name) {
    for (int b = 0; b < p->nbufs; b++)
        if (!strcmp(p->bufs[b].name, name)) return b;
    return -1;
}

static void test_bind_dlrm(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_criteo_data *d = NULL;
    const char *path = tsv_file(11, 0, NULL, "\n", 1);
    CU_ASSERT_EQUAL_FATAL(gr_criteo_read(path, 0, 0, 0, &d, &e), GR_OK);
    gr_plan *p = dlrm_plan("fused", "B=7", "rows_cap=50", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    int64_t B = 0;
    CU_ASSERT_EQUAL(gr_criteo_plan_batch(p, &B, &e), GR_OK);
    CU_ASSERT_EQUAL(B, 7);
    gr_criteo_binding *bd = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_criteo_bind(p, d, &bd, &e), GR_OK);
    CU_ASSERT_EQUAL(bd->B, 7);
    int di = buf_index(p, "dense");
    CU_ASSERT_EQUAL(p->bufs[di].init.kind, GR_INIT_HOST);
    CU_ASSERT_PTR_EQUAL(p->bufs[di].host_data, d->dense);
    /* index = hash % rows, rows = min(card_t, rows_cap): table 8 has 3 rows, table 0 has 50 */
    int tables[] = {0, 8, 19, 25};
    int64_t rows[] = {50, 3, 4, 50};
    for (int k = 0; k < 4; k++) {
        char name[16];
        snprintf(name, sizeof(name), "idx.%d", tables[k]);
        const gr_buffer *ib = &p->bufs[buf_index(p, name)];
        CU_ASSERT_EQUAL(ib->init.kind, GR_INIT_HOST);
        CU_ASSERT_EQUAL(bd->rows[tables[k]], rows[k]);
        const int32_t *iv = ib->host_data;
        for (int r = 0; r < 7; r++) {
            uint32_t h = cat_empty(r + 1, tables[k] + 1) ? 0u : line_hash(r + 1, tables[k] + 1);
            CU_ASSERT_EQUAL(iv[r], (int32_t)(h % (uint32_t)rows[k]));
        }
    }
    /* tables and weights keep their synthetic inits */
    CU_ASSERT_EQUAL(p->bufs[buf_index(p, "emb.3")].init.kind, GR_INIT_UNIFORM);
    /* the CPU reference runs on the bound rows (host state filled from host_data) */
    gr_hoststate *hs = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_create(p, &hs, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_fill(hs, &e), GR_OK);
    CU_ASSERT_EQUAL(memcmp(hs->hptr[di], d->dense, 7 * 13 * sizeof(float)), 0);
    CU_ASSERT_EQUAL_FATAL(gr_reference_step(p, hs, &e), GR_OK);
    const float *y = hs->hptr[buf_index(p, "y")];
    for (int r = 0; r < 7; r++) CU_ASSERT_TRUE(y[r] > 0.0f && y[r] < 1.0f);
    gr_hoststate_destroy(hs);
    gr_criteo_binding_destroy(bd);
    gr_plan_destroy(p);
    /* B larger than the rows read */
    p = dlrm_plan("fused", "B=12", "rows_cap=50", NULL);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_bind(p, d, &bd, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "--input: ");
    GR_ASSERT_CONTAINS(e.msg, "has 11 rows but workload dlrm_small takes B = 12");
    gr_plan_destroy(p);
    /* multi-hot bags cannot take one index per table: one message naming all 26 buffers */
    p = dlrm_plan("unfused", "B=4", "rows_cap=50", "bag=3");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_bind(p, d, &bd, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "buffer \"idx.0\"");
    GR_ASSERT_CONTAINS(e.msg, "has 12 elements");
    GR_ASSERT_CONTAINS(e.msg, "--set bag=1");
    GR_ASSERT_CONTAINS(e.msg, "so are 25 more: idx.1, idx.2");
    CU_ASSERT_EQUAL(e.count, 1);
    gr_plan_destroy(p);
    gr_criteo_destroy(d);
}

static void test_bind_errors(void) {
    gr_error e;
    gr_criteo_data *d = NULL;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_criteo_read(tsv_file(4, 0, NULL, "\n", 1), 0, 0, 0, &d, &e), GR_OK);
    /* no dense buffer */
    const char *nodense = "{\"name\": \"nd\", \"params\": {\"B\": 4}, \"buffers\": ["
                          "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [\"B\"], \"init\": \"normal\"}],"
                          " \"outputs\": [\"x\"], \"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"x\"], \"outputs\": [\"x\"]}]}";
    gr_plan *p = gr_test_plan(nodense, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_criteo_binding *bd = NULL;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_bind(p, d, &bd, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "--input: workload nd has no buffer \"dense\"; --input needs buffers dense [B, 13]");
    gr_error_clear(&e);
    int64_t B;
    CU_ASSERT_EQUAL(gr_criteo_plan_batch(p, &B, &e), GR_ERR_INPUT);
    gr_plan_destroy(p);
    /* dense of the wrong shape, idx of the wrong dtype, missing tables, a label */
    const char *partial =
        "{\"name\": \"pa\", \"params\": {\"B\": 4}, \"buffers\": ["
        "{\"name\": \"dense\", \"dtype\": \"fp32\", \"shape\": [\"B\", 12], \"init\": \"normal\"}],"
        " \"outputs\": [\"dense\"], \"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"dense\"], \"outputs\": [\"dense\"]}]}";
    gr_error_clear(&e);
    p = gr_test_plan(partial, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_bind(p, d, &bd, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "buffer \"dense\" (buffers[0]) must be fp32 [B, 13]");
    gr_plan_destroy(p);
    char json[8192];
    int o = snprintf(json, sizeof(json),
                     "{\"name\": \"lb\", \"params\": {\"B\": 4}, \"buffers\": ["
                     "{\"name\": \"dense\", \"dtype\": \"fp32\", \"shape\": [\"B\", 13], \"init\": \"normal\"},"
                     "{\"name\": \"label\", \"dtype\": \"fp32\", \"shape\": [\"B\"], \"init\": \"zeros\"},"
                     "{\"repeat\": 26, \"var\": \"t\", \"buffers\": ["
                     "{\"name\": \"idx.{t}\", \"dtype\": \"int64\", \"shape\": [\"B\"], \"init\": \"zeros\"},"
                     "{\"name\": \"emb.{t}\", \"dtype\": \"fp32\", \"shape\": [\"t + 1\", 2], \"init\": \"ones\"}]},"
                     "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [\"B\", 13]}],"
                     " \"outputs\": [\"y\"], \"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"dense\"], \"outputs\": [\"y\"]}]}");
    (void)o;
    gr_error_clear(&e);
    p = gr_test_plan(json, NULL, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_criteo_bind(p, d, &bd, &e), GR_OK);
    CU_ASSERT_TRUE(bd->has_label);
    const gr_buffer *lab = &p->bufs[buf_index(p, "label")];
    CU_ASSERT_EQUAL(lab->init.kind, GR_INIT_HOST);
    CU_ASSERT_PTR_EQUAL(lab->host_data, d->label);
    const int64_t *i5 = p->bufs[buf_index(p, "idx.5")].host_data; /* int64 indices, 6 rows */
    for (int r = 0; r < 4; r++) {
        uint32_t h = cat_empty(r + 1, 6) ? 0u : line_hash(r + 1, 6);
        CU_ASSERT_EQUAL(i5[r], (int64_t)(h % 6u));
    }
    gr_criteo_binding_destroy(bd);
    gr_plan_destroy(p);
    /* wrong index dtype (one message for all 26) and a label of the wrong size */
    char *q = strstr(json, "\"int64\"");
    memcpy(q, "\"fp32\" ", 7);
    q = strstr(json, "\"shape\": [\"B\"], \"init\": \"zeros\"}");
    memcpy(q, "\"shape\": [ 3 ]", 14);
    gr_error_clear(&e);
    p = gr_test_plan(json, NULL, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_criteo_bind(p, d, &bd, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "buffer \"idx.0\" (buffers[2].buffers[0]{t=0}) is fp32; indices are int32 or int64 (so are 25 more");
    GR_ASSERT_CONTAINS(e.msg, "buffer \"label\" (buffers[1]) must be fp32 with B = 4 elements");
    CU_ASSERT_EQUAL(e.count, 2);
    gr_plan_destroy(p);
    gr_criteo_destroy(d);
}

/* ---------- graphrun --input through the CLI ---------- */


/* graphrun ARGS from the source tree, output captured (tests/test_main.c) */
static int run_cli(const char *args, char *out, size_t size) {
    return gr_test_graphrun(args, out, size);
}

static char out[1 << 20];

static void test_cli_input(void) {
    char args[1024];
    const char *good = tsv_file(6, 0, NULL, "\n", 0);
    /* B = the file's rows when not set */
    snprintf(args, sizeof(args), "validate workloads/dlrm_small.json --variant fused --set rows_cap=100 --input %s", good);
    CU_ASSERT_EQUAL(run_cli(args, out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, ": 6 rows (B) from 6 lines, 0 malformed lines skipped");
    GR_ASSERT_CONTAINS(out, "params   B=6 ");
    GR_ASSERT_CONTAINS(out, "dense                    fp32   [6, 13]");
    GR_ASSERT_CONTAINS(out, "host");
    /* the first B rows with --set B */
    snprintf(args, sizeof(args), "validate workloads/dlrm_small.json --set B=4 --set rows_cap=100 --input %s", good);
    CU_ASSERT_EQUAL(run_cli(args, out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, ": 4 rows (B) from 4 lines");
    /* fewer rows than B */
    snprintf(args, sizeof(args), "validate workloads/dlrm_small.json --set B=9 --input %s", good);
    CU_ASSERT_EQUAL(run_cli(args, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "has 6 rows (6 lines, 0 malformed skipped) but B = 9 rows were asked for");
    /* a malformed line: exit 2 with its line number, for run too (before any GPU work) */
    const char *bad = tsv_file(6, 4, "1\t2\t3", "\n", 1);
    snprintf(args, sizeof(args), "run workloads/dlrm_small.json --input %s", bad);
    CU_ASSERT_EQUAL(run_cli(args, out, sizeof(out)), 2);
    char want[600];
    snprintf(want, sizeof(want), "%s:4:1: 3 fields; expected 40", bad);
    GR_ASSERT_CONTAINS(out, want);
    snprintf(args, sizeof(args), "validate workloads/dlrm_small.json --input %s --skip-bad-lines --set rows_cap=10", bad);
    CU_ASSERT_EQUAL(run_cli(args, out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, ": 5 rows (B) from 6 lines, 1 malformed line skipped");
    snprintf(want, sizeof(want), "%s:4:1: skipped: 3 fields", bad);
    GR_ASSERT_CONTAINS(out, want);
    /* usage errors */
    CU_ASSERT_EQUAL(run_cli("validate workloads/dlrm_small.json --skip-bad-lines", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--skip-bad-lines goes with --input FILE.tsv");
    CU_ASSERT_EQUAL(run_cli("run workloads/dlrm_small.json --input", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "option --input needs a value");
    CU_ASSERT_EQUAL(run_cli("validate workloads/dlrm_small.json --input /nonexistent.tsv", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "/nonexistent.tsv: cannot open the TSV input file");
    snprintf(args, sizeof(args), "validate workloads/pointwise_fusion.json --input %s", good);
    CU_ASSERT_EQUAL(run_cli(args, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--input: workload pointwise_fusion has no param \"B\"");
    snprintf(args, sizeof(args), "validate workloads/dlrm_small.json --input %s --set bag=2", good);
    CU_ASSERT_EQUAL(run_cli(args, out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "multi-hot bags: --set bag=1");
    /* help mentions the options */
    CU_ASSERT_EQUAL(run_cli("run --help", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "--input FILE.tsv");
    GR_ASSERT_CONTAINS(out, "--skip-bad-lines");
}

/* The input stage belongs to the loader (replay/load.c), which run, validate and the service share:
 * without --set B the batch is the file's rows; with it, its first B rows; every plan bound. */
static void test_load_input_stage(void) {
    const char *path = tsv_file(12, 0, NULL, "\n", 1);
    gr_target t = gr_target_default();
    gr_error e;
    gr_error_clear(&e);
    gr_load_req req = {gr_test_src("workloads/dlrm_small.json"), NULL, NULL, 0, NULL, 0, path, 0};
    gr_loaded l;
    CU_ASSERT_EQUAL_FATAL(gr_load_resolve(&req, &t, &l, &e), GR_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(l.input);
    CU_ASSERT_EQUAL(l.input->rows, 12);
    CU_ASSERT_TRUE(l.nplans >= 2);
    for (int i = 0; i < l.nplans; i++) {
        CU_ASSERT_PTR_NOT_NULL(l.bind[i]);
        GR_ASSERT_CONTAINS(l.plans[i]->params, "B=12");
    }
    gr_loaded_free(&l);
    const char *sets[] = {"B=5"};
    gr_load_req req5 = {gr_test_src("workloads/dlrm_small.json"), "fused", sets, 1, NULL, 0, path, 0};
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_load_resolve(&req5, &t, &l, &e), GR_OK);
    CU_ASSERT_EQUAL(l.input->rows, 5);
    CU_ASSERT_EQUAL(l.nplans, 1);
    CU_ASSERT_PTR_NOT_NULL(l.bind[0]);
    gr_loaded_free(&l);
    /* a malformed row: the loader stops at it, naming the file and line, unless told to skip */
    const char *bad = tsv_file(6, 3, "1\tnot-a-number", "\n", 1);
    gr_load_req rb = {gr_test_src("workloads/dlrm_small.json"), NULL, NULL, 0, NULL, 0, bad, 0};
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_load_resolve(&rb, &t, &l, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, ":3:");
    gr_loaded_free(&l);
    rb.skip_bad_lines = 1;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_load_resolve(&rb, &t, &l, &e), GR_OK);
    CU_ASSERT_EQUAL(l.input->rows, 5);
    CU_ASSERT_EQUAL(l.input->skipped, 1);
    gr_loaded_free(&l);
}

static CU_TestInfo criteo_tests[] = {{"input stage of the loader", test_load_input_stage},{"parse good lines", test_parse_good_lines},
                                     {"parse empty fields and CRLF", test_parse_empty_fields_and_crlf},
                                     {"parse bad fields name field and column", test_parse_bad_fields},
                                     {"parse wrong field count", test_parse_wrong_field_count},
                                     {"preprocessing", test_preprocessing},
                                     {"read files", test_read_files},
                                     {"read errors", test_read_errors},
                                     {"read the 200-row sample if present", test_read_sample_if_present},
                                     {"bind to dlrm_small", test_bind_dlrm},
                                     {"bind errors", test_bind_errors},
                                     CU_TEST_INFO_NULL};
static CU_TestInfo criteo_cli_tests[] = {{"graphrun --input", test_cli_input}, CU_TEST_INFO_NULL};

static gr_suite_def gr_criteo_suites[] = {{"criteo", criteo_tests, 0},
                                          {"criteo_cli", criteo_cli_tests, 0},
                                          {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_criteo_suites)
