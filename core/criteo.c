/* Criteo Kaggle TSV reader, its preprocessing, and the --input binding of parsed rows to a
 * plan's buffers. Strict about the layout (40 fields, integers, 8-hex-digit hashes) so a wrong
 * file fails on its first bad line with the line number, instead of feeding garbage. */
#include "core/criteo.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

float gr_criteo_dense(int64_t x) {
    return (float)log1p((double)(x > 0 ? x : 0));
}

int64_t gr_criteo_index(uint32_t hash, int64_t rows) {
    return rows > 0 ? (int64_t)(hash % (uint64_t)rows) : 0;
}

/* The field's text for messages: at most 24 bytes, non-printable bytes as '?'. */
static void field_text(const char *s, size_t n, char *out, size_t size) {
    size_t o = 0, lim = n < 24 ? n : 24;
    for (size_t i = 0; i < lim && o + 1 < size; i++)
        out[o++] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
    if (n > lim && o + 4 < size) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o < size ? o : size - 1] = '\0';
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

gr_status gr_criteo_parse_line(const char *line, size_t len, gr_criteo_row *row, int *column,
                               char *why, size_t why_size) {
    memset(row, 0, sizeof(*row));
    *column = 1;
    if (len > 0 && line[len - 1] == '\r') len--;
    if (len == 0) {
        snprintf(why, why_size, "empty line; expected %d tab-separated fields (label, I1..I13, "
                 "C1..C26)", GR_CRITEO_FIELDS);
        return GR_ERR_INPUT;
    }
    int nf = 1;
    for (size_t i = 0; i < len; i++) nf += line[i] == '\t';
    if (nf != GR_CRITEO_FIELDS) {
        snprintf(why, why_size, "%d fields; expected %d tab-separated fields (label, 13 integer, "
                 "26 categorical)%s", nf, GR_CRITEO_FIELDS,
                 nf == GR_CRITEO_FIELDS - 1 ? " (a test.txt line without the label?)" : "");
        return GR_ERR_INPUT;
    }
    size_t s = 0;
    for (int f = 0; f < GR_CRITEO_FIELDS; f++) {
        size_t e = s;
        while (e < len && line[e] != '\t') e++;
        const char *p = line + s;
        size_t n = e - s;
        char txt[32];
        *column = (int)s + 1;
        if (f == 0) {
            if (n != 1 || (p[0] != '0' && p[0] != '1')) {
                field_text(p, n, txt, sizeof(txt));
                snprintf(why, why_size, "label \"%s\" is not 0 or 1", txt);
                return GR_ERR_INPUT;
            }
            row->label = (float)(p[0] - '0');
        } else if (f <= GR_CRITEO_DENSE) {
            if (n == 0) {
                row->missing_dense++;
                row->dense[f - 1] = 0.0f;
            } else {
                size_t i = p[0] == '-' ? 1 : 0;
                int ok = n > i && n - i <= 18;
                int64_t v = 0;
                for (size_t k = i; ok && k < n; k++) {
                    if (p[k] < '0' || p[k] > '9') ok = 0;
                    else v = v * 10 + (p[k] - '0');
                }
                if (!ok) {
                    field_text(p, n, txt, sizeof(txt));
                    snprintf(why, why_size, "field I%d \"%s\" is not an integer (at most 18 digits, "
                             "optional '-')", f, txt);
                    return GR_ERR_INPUT;
                }
                row->dense[f - 1] = gr_criteo_dense(i ? -v : v);
            }
        } else {
            int c = f - GR_CRITEO_DENSE; /* C1..C26 */
            if (n == 0) {
                row->missing_cat++;
                row->hash[c - 1] = 0;
            } else {
                uint32_t h = 0;
                int ok = n == 8;
                for (size_t k = 0; ok && k < n; k++) {
                    int d = hexval(p[k]);
                    if (d < 0) ok = 0;
                    else h = (h << 4) | (uint32_t)d;
                }
                if (!ok) {
                    field_text(p, n, txt, sizeof(txt));
                    snprintf(why, why_size, "field C%d \"%s\" is not 8 hex digits", c, txt);
                    return GR_ERR_INPUT;
                }
                row->hash[c - 1] = h;
            }
        }
        s = e + 1;
    }
    *column = 1;
    return GR_OK;
}

void gr_criteo_destroy(gr_criteo_data *d) {
    if (!d) return;
    free(d->label);
    free(d->dense);
    free(d->hash);
    free(d);
}

static int grow(gr_criteo_data *d, int64_t *cap) {
    int64_t nc = *cap ? *cap * 2 : 256;
    float *l = realloc(d->label, (size_t)nc * sizeof(float));
    if (l) d->label = l;
    float *x = realloc(d->dense, (size_t)nc * GR_CRITEO_DENSE * sizeof(float));
    if (x) d->dense = x;
    uint32_t *h = realloc(d->hash, (size_t)nc * GR_CRITEO_CAT * sizeof(uint32_t));
    if (h) d->hash = h;
    if (!l || !x || !h) return 0;
    *cap = nc;
    return 1;
}

/* Lines of a stream, read in blocks so that a line's length is bounded without reading it whole
 * (getline would grow its buffer to the longest line: a file without '\n' would fill memory). */
typedef struct line_reader {
    FILE *f;
    char *buf;
    size_t cap, start, end;
    int eof;
} line_reader;

#define READ_CHUNK (1u << 16)

static int lr_fill(line_reader *r) {
    if (r->eof) return 0;
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    size_t got = fread(r->buf + r->end, 1, r->cap - r->end, r->f);
    r->end += got;
    if (got == 0) r->eof = 1;
    return got > 0;
}

/* 1: a line in *line (len bytes, no '\n'), or *too_long when it passed GR_CRITEO_MAX_LINE (it
 * was skipped to its end); 0: end of file (or a read error: ferror). */
static int lr_next(line_reader *r, const char **line, size_t *len, int *too_long) {
    *too_long = 0;
    for (;;) {
        char *nl = memchr(r->buf + r->start, '\n', r->end - r->start);
        if (nl) {
            *line = r->buf + r->start;
            *len = (size_t)(nl - *line);
            r->start = (size_t)(nl - r->buf) + 1;
            if (*len >
                GR_CRITEO_MAX_LINE) { /* read whole with others in one block: still refused */
                *too_long = 1;
                *line = NULL;
                *len = 0;
            }
            return 1;
        }
        if (r->end - r->start > GR_CRITEO_MAX_LINE) break;
        if (!lr_fill(r)) {
            if (r->end == r->start) return 0;
            *line = r->buf + r->start; /* the last line, without '\n' */
            *len = r->end - r->start;
            r->start = r->end;
            return 1;
        }
    }
    /* too long: skip to the next '\n' without keeping it */
    *too_long = 1;
    *line = NULL;
    *len = 0;
    r->start = r->end = 0;
    for (;;) {
        if (!lr_fill(r)) return 1;
        char *nl = memchr(r->buf, '\n', r->end);
        if (nl) {
            r->start = (size_t)(nl - r->buf) + 1;
            return 1;
        }
        r->start = r->end = 0;
    }
}

static gr_status read_rows(FILE *f, gr_criteo_data *d, int64_t want, int64_t max_rows,
                           int skip_bad, gr_error *err) {
    line_reader lr = {f, NULL, GR_CRITEO_MAX_LINE + 2 * READ_CHUNK, 0, 0, 0};
    lr.buf = malloc(lr.cap);
    if (!lr.buf) return gr_error_set(err, GR_ERR_NOMEM, d->path, "out of host memory");
    int64_t cap = 0;
    gr_status st = GR_OK;
    while (want == 0 || d->rows < want) {
        const char *line;
        size_t len;
        int too_long;
        errno = 0;
        if (!lr_next(&lr, &line, &len, &too_long)) {
            if (ferror(f))
                st = gr_error_set(err, GR_ERR_IO, d->path, "read error after line %lld: %s",
                                  (long long)d->lines, strerror(errno ? errno : EIO));
            break;
        }
        d->lines++;
        gr_criteo_row row;
        int col = 1;
        char why[200];
        gr_status pst;
        if (too_long) {
            snprintf(why, sizeof(why),
                     "longer than %d bytes (README, \"Limits on input\"); a "
                     "Criteo line is about 100-300 bytes: is this a TSV file?",
                     GR_CRITEO_MAX_LINE);
            col = GR_CRITEO_MAX_LINE + 1;
            pst = GR_ERR_INPUT;
        } else {
            pst = gr_criteo_parse_line(line, len, &row, &col, why, sizeof(why));
        }
        if (pst != GR_OK) {
            if (!skip_bad) {
                st = gr_error_at(err, GR_ERR_INPUT, d->path, (int)d->lines, col,
                                 "%s (fix the line, or pass --skip-bad-lines to skip and count "
                                 "malformed lines)",
                                 why);
                break;
            }
            if (d->nbad < GR_CRITEO_KEEP_BAD) {
                gr_criteo_bad *b = &d->bad[d->nbad++];
                b->line = d->lines;
                b->column = col;
                snprintf(b->why, sizeof(b->why), "%s", why);
            }
            d->skipped++;
            continue;
        }
        if (want == 0 && d->rows >= max_rows) {
            st = gr_error_set(err, GR_ERR_INPUT, d->path,
                              "more than %lld rows; set the batch to read the first B rows "
                              "(--set B=N)",
                              (long long)max_rows);
            break;
        }
        if (d->rows == cap && !grow(d, &cap)) {
            st = gr_error_set(err, GR_ERR_NOMEM, d->path, "out of host memory at line %lld",
                              (long long)d->lines);
            break;
        }
        int64_t r = d->rows++;
        d->label[r] = row.label;
        memcpy(d->dense + r * GR_CRITEO_DENSE, row.dense, sizeof(row.dense));
        memcpy(d->hash + r * GR_CRITEO_CAT, row.hash, sizeof(row.hash));
        d->missing_dense += row.missing_dense;
        d->missing_cat += row.missing_cat;
        d->positives += row.label != 0.0f;
    }
    free(lr.buf);
    return st;
}

/* The skipped lines kept, one error line each (path:line:column), when too few rows remain. */
static void list_skipped(const gr_criteo_data *d, gr_error *err) {
    for (int i = 0; i < d->nbad; i++)
        gr_error_at(err, GR_ERR_INPUT, d->path, (int)d->bad[i].line, d->bad[i].column,
                    "skipped: %s", d->bad[i].why);
    if (d->skipped > d->nbad)
        gr_error_set(err, GR_ERR_INPUT, d->path, "%lld more malformed lines skipped",
                     (long long)(d->skipped - d->nbad));
}

gr_status gr_criteo_read(const char *path, int64_t want, int64_t max_rows, int skip_bad,
                         gr_criteo_data **out, gr_error *err) {
    *out = NULL;
    gr_criteo_data *d = calloc(1, sizeof(*d));
    if (!d) return gr_error_set(err, GR_ERR_NOMEM, path, "out of host memory");
    snprintf(d->path, sizeof(d->path), "%s", path);
    FILE *f = NULL;
    gr_status st = gr_file_open(path, GR_FILE_TSV, &f, NULL, err);
    if (st != GR_OK) {
        gr_criteo_destroy(d);
        return st;
    }
    st = read_rows(f, d, want, max_rows > 0 ? max_rows : GR_CRITEO_MAX_ROWS, skip_bad, err);
    fclose(f);
    if (st == GR_OK && d->rows == 0) {
        st = gr_error_set(err, GR_ERR_INPUT, path,
                          "no data rows (%lld lines read, %lld malformed skipped); the file must "
                          "hold Criteo Kaggle train.txt lines",
                          (long long)d->lines, (long long)d->skipped);
        list_skipped(d, err);
    }
    if (st == GR_OK && want > 0 && d->rows < want) {
        st = gr_error_set(err, GR_ERR_INPUT, path,
                          "has %lld rows (%lld lines, %lld malformed skipped) but B = %lld rows "
                          "were asked for; use --set B=%lld or fewer, or leave B unset to take "
                          "every row",
                          (long long)d->rows, (long long)d->lines, (long long)d->skipped,
                          (long long)want, (long long)d->rows);
        list_skipped(d, err);
    }
    if (st != GR_OK) {
        gr_criteo_destroy(d);
        return st;
    }
    *out = d;
    return GR_OK;
}

/* ---------- binding to a plan ---------- */

static gr_buffer *find(gr_plan *plan, const char *name) {
    for (int b = 0; b < plan->nbufs; b++)
        if (!strcmp(plan->bufs[b].name, name)) return &plan->bufs[b];
    return NULL;
}

#define NEEDS                                                                                      \
    "--input needs buffers dense [B, 13] (fp32), idx.0 .. idx.25 ([B] or [B, 1], int32 or "       \
    "int64) and emb.0 .. emb.25 ([rows, D]); see docs/dlrm_small.md"

static gr_status dense_batch(const gr_plan *plan, const gr_buffer *dense, int64_t *B, gr_error *err) {
    if (!dense)
        return gr_error_set(err, GR_ERR_INPUT, "--input", "workload %s has no buffer \"dense\"; " NEEDS,
                            plan->workload);
    if (dense->dtype != GR_FP32 || dense->ndim != 2 || dense->shape[1] != GR_CRITEO_DENSE)
        return gr_error_set(err, GR_ERR_INPUT, "--input",
                            "workload %s: buffer \"dense\" (%s) must be fp32 [B, 13] to take the "
                            "file's 13 integer features; " NEEDS,
                            plan->workload, dense->path);
    *B = dense->shape[0];
    return GR_OK;
}

gr_status gr_criteo_plan_batch(const gr_plan *plan, int64_t *B, gr_error *err) {
    const gr_buffer *dense = NULL;
    for (int b = 0; b < plan->nbufs; b++)
        if (!strcmp(plan->bufs[b].name, "dense")) dense = &plan->bufs[b];
    return dense_batch(plan, dense, B, err);
}

void gr_criteo_binding_destroy(gr_criteo_binding *b) {
    if (!b) return;
    for (int t = 0; t < GR_CRITEO_CAT; t++) free(b->idx[t]);
    free(b);
}

enum { PK_MISSING, PK_DTYPE, PK_SHAPE, PK_TABLE, PK_COUNT };
typedef struct problem {
    int count;
    char first[600];  /* the first buffer's message */
    char names[400];  /* the other buffers with the same problem */
} problem;

__attribute__((format(printf, 3, 4))) static void note(problem *p, const char *name,
                                                       const char *fmt, ...) {
    if (p->count++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->first, sizeof(p->first), fmt, ap);
        va_end(ap);
        return;
    }
    size_t o = strlen(p->names);
    if (o + 8 < sizeof(p->names))
        snprintf(p->names + o, sizeof(p->names) - o, "%s%s", o ? ", " : "", name);
}

gr_status gr_criteo_bind(gr_plan *plan, const gr_criteo_data *d, gr_criteo_binding **out,
                         gr_error *err) {
    *out = NULL;
    int64_t B = 0;
    gr_buffer *dense = find(plan, "dense");
    gr_status st = dense_batch(plan, dense, &B, err);
    if (st != GR_OK) return st;
    if (B > d->rows)
        return gr_error_set(err, GR_ERR_INPUT, "--input",
                            "%s has %lld rows but workload %s takes B = %lld; use --set B=%lld or "
                            "fewer",
                            d->path, (long long)d->rows, plan->workload, (long long)B,
                            (long long)d->rows);
    gr_buffer *idx[GR_CRITEO_CAT] = {NULL};
    int64_t rows[GR_CRITEO_CAT] = {0};
    /* one message per kind of problem (26 tables tend to share one), naming every buffer */
    problem pr[PK_COUNT];
    memset(pr, 0, sizeof(pr));
    for (int t = 0; t < GR_CRITEO_CAT; t++) {
        char name[32];
        snprintf(name, sizeof(name), "idx.%d", t);
        idx[t] = find(plan, name);
        if (!idx[t])
            note(&pr[PK_MISSING], name, "workload %s has no buffer \"%s\"; " NEEDS, plan->workload, name);
        else if (idx[t]->dtype != GR_INT32 && idx[t]->dtype != GR_INT64)
            note(&pr[PK_DTYPE], name, "workload %s: buffer \"%s\" (%s) is %s; indices are int32 or int64",
                 plan->workload, name, idx[t]->path, gr_dtype_name(idx[t]->dtype));
        else if (idx[t]->shape[0] != B || idx[t]->numel != B)
            note(&pr[PK_SHAPE], name,
                 "workload %s: buffer \"%s\" (%s) has %lld elements; the file gives one index per "
                 "table per row, so it must be [%lld] or [%lld, 1] (multi-hot bags: --set bag=1)",
                 plan->workload, name, idx[t]->path, (long long)idx[t]->numel, (long long)B,
                 (long long)B);
        snprintf(name, sizeof(name), "emb.%d", t);
        gr_buffer *emb = find(plan, name);
        if (!emb)
            note(&pr[PK_MISSING], name, "workload %s has no buffer \"%s\" (its rows make index = "
                 "hash %% rows); " NEEDS, plan->workload, name);
        else if (emb->ndim != 2)
            note(&pr[PK_TABLE], name, "workload %s: table \"%s\" (%s) must be 2-D [rows, D]",
                 plan->workload, name, emb->path);
        else if (idx[t] && idx[t]->dtype == GR_INT32 && emb->shape[0] > 2147483647)
            note(&pr[PK_TABLE], name, "workload %s: table \"%s\" has %lld rows, more than int32 "
                 "indices reach; make \"idx.%d\" int64", plan->workload, name,
                 (long long)emb->shape[0], t);
        else
            rows[t] = emb->shape[0];
    }
    for (int k = 0; k < PK_COUNT; k++) {
        if (!pr[k].count) continue;
        if (pr[k].count == 1)
            st = gr_error_set(err, GR_ERR_INPUT, "--input", "%s", pr[k].first);
        else
            st = gr_error_set(err, GR_ERR_INPUT, "--input", "%s (so are %d more: %s)", pr[k].first,
                              pr[k].count - 1, pr[k].names);
    }
    gr_buffer *label = find(plan, "label");
    if (label && (label->dtype != GR_FP32 || label->numel != B))
        st = gr_error_set(err, GR_ERR_INPUT, "--input",
                          "workload %s: buffer \"label\" (%s) must be fp32 with B = %lld elements "
                          "to take the file's labels",
                          plan->workload, label->path, (long long)B);
    if (st != GR_OK) return st;
    gr_criteo_binding *bd = calloc(1, sizeof(*bd));
    if (!bd) return gr_error_set(err, GR_ERR_NOMEM, "--input", "out of host memory");
    bd->B = B;
    for (int t = 0; t < GR_CRITEO_CAT; t++) {
        int i64 = idx[t]->dtype == GR_INT64;
        bd->rows[t] = rows[t];
        bd->idx[t] = malloc((size_t)B * (i64 ? sizeof(int64_t) : sizeof(int32_t)));
        if (!bd->idx[t]) {
            gr_criteo_binding_destroy(bd);
            return gr_error_set(err, GR_ERR_NOMEM, "--input", "out of host memory");
        }
        for (int64_t r = 0; r < B; r++) {
            int64_t v = gr_criteo_index(d->hash[r * GR_CRITEO_CAT + t], rows[t]);
            if (i64) ((int64_t *)bd->idx[t])[r] = v;
            else ((int32_t *)bd->idx[t])[r] = (int32_t)v;
        }
    }
    dense->init.kind = GR_INIT_HOST;
    dense->host_data = d->dense;
    for (int t = 0; t < GR_CRITEO_CAT; t++) {
        idx[t]->init.kind = GR_INIT_HOST;
        idx[t]->host_data = bd->idx[t];
    }
    if (label) {
        label->init.kind = GR_INIT_HOST;
        label->host_data = d->label;
        bd->has_label = 1;
    }
    *out = bd;
    return GR_OK;
}
