/* The trace's line format: one flat JSON object per line (numbers, strings, booleans, null and
 * arrays of up to 8 numbers; no nested objects). A small strict parser for such lines, fast
 * enough for traces of millions of records, and the append buffer the writer formats them in.
 * Pure C: used by the collector, the reader and the tests, with or without a GPU. */
#ifndef GR_JSONL_H
#define GR_JSONL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gr_jv_type { GR_JV_NULL, GR_JV_BOOL, GR_JV_NUM, GR_JV_STR, GR_JV_ARR } gr_jv_type;

#define GR_JARR_MAX 8
#define GR_JLINE_MAX_FIELDS 64

typedef struct gr_jfield {
    const char *key;       /* NUL-terminated, points into the parsed line */
    gr_jv_type type;
    int is_int;            /* NUM: written without fraction or exponent and fits int64 */
    int64_t i;             /* NUM: exact value when is_int */
    double d;              /* NUM: value; BOOL: 0 or 1 */
    const char *s;         /* STR: unescaped, NUL-terminated, points into the parsed line */
    size_t s_len;
    int n;                 /* ARR: element count */
    double a[GR_JARR_MAX]; /* ARR: numbers */
    int col;               /* 1-based column where the value starts */
} gr_jfield;

typedef struct gr_jline {
    gr_jfield f[GR_JLINE_MAX_FIELDS];
    int n;
} gr_jline;

/* Parses one line (without its newline). The line is modified in place (strings are unescaped
 * and NUL-terminated inside it). Returns 1 on success; on failure 0 with *err_col (1-based) and
 * a message saying what was expected. */
int gr_jline_parse(char *line, size_t len, gr_jline *out, int *err_col, char *msg, size_t msg_size);
/* The field named `key`, or NULL. */
const gr_jfield *gr_jline_get(const gr_jline *l, const char *key);

/* Reading lines with a bound: a line longer than `max` bytes (a file that is not a trace, such
 * as /dev/zero's output, or a damaged one) is an error, never an unbounded allocation. NUL bytes
 * are kept (the caller decides); the newline is removed and the line NUL-terminated. */
#define GR_JSONL_MAX_LINE ((size_t)1 << 20) /* 1 MiB per trace line (cupti_tools/README.md) */

typedef struct gr_jl_reader {
    FILE *f;
    char *chunk;
    size_t pos, end;
    char *line;
    size_t cap, max;
} gr_jl_reader;

typedef enum gr_jl_next {
    GR_JL_LINE = 1,    /* *line holds *len bytes; *has_nl 0 for a last line without newline */
    GR_JL_EOF = 0,
    GR_JL_TOO_LONG = -1, /* the line passed `max` bytes; *len says how many were read */
    GR_JL_NOMEM = -2,
    GR_JL_IOERR = -3 /* errno says why */
} gr_jl_next;

void gr_jl_reader_init(gr_jl_reader *r, FILE *file, size_t max);
gr_jl_next gr_jl_reader_next(gr_jl_reader *r, char **line, size_t *len, int *has_nl);
void gr_jl_reader_free(gr_jl_reader *r);

/* Growable text buffer for formatting records. On allocation failure `oom` is set and further
 * appends are ignored. */
typedef struct gr_sbuf {
    char *p;
    size_t len, cap;
    int oom;
} gr_sbuf;

void gr_sb_init(gr_sbuf *b);
void gr_sb_free(gr_sbuf *b);
void gr_sb_reserve(gr_sbuf *b, size_t extra);
void gr_sb_raw(gr_sbuf *b, const char *s, size_t n);
void gr_sb_cstr(gr_sbuf *b, const char *s); /* raw C string, not escaped */
void gr_sb_u64(gr_sbuf *b, uint64_t v);
void gr_sb_i64(gr_sbuf *b, int64_t v);
void gr_sb_dbl(gr_sbuf *b, double v); /* %.17g; NaN and infinities become null */
void gr_sb_jstr(gr_sbuf *b, const char *s); /* quoted and escaped JSON string; NULL -> "" */
/* ,"key": (the comma only when the object already has a field) */
void gr_sb_key(gr_sbuf *b, const char *key);
void gr_sb_kv_u64(gr_sbuf *b, const char *key, uint64_t v);
void gr_sb_kv_i64(gr_sbuf *b, const char *key, int64_t v);
void gr_sb_kv_dbl(gr_sbuf *b, const char *key, double v);
void gr_sb_kv_str(gr_sbuf *b, const char *key, const char *s);

#ifdef __cplusplus
}
#endif
#endif
