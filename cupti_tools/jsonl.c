/* Flat JSON object lines: a strict parser (RFC 8259 numbers and strings, no nesting) and the
 * append buffer the trace writer formats records into. */
#include "cupti_tools/jsonl.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pstate {
    char *p, *end, *start;
    int *err_col;
    char *msg;
    size_t msg_size;
} pstate;

static int fail(pstate *s, const char *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(pstate *s, const char *at, const char *fmt, ...) {
    *s->err_col = (int)(at - s->start) + 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->msg, s->msg_size, fmt, ap);
    va_end(ap);
    return 0;
}

static void skip_ws(pstate *s) {
    while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r')) s->p++;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_hex4(pstate *s, const char *at, unsigned *out) {
    if (s->end - at < 4) return fail(s, at, "truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(at[i]);
        if (h < 0) return fail(s, at + i, "bad hex digit in \\u escape");
        v = v * 16 + (unsigned)h;
    }
    *out = v;
    return 1;
}

/* s->p at the opening quote. Unescapes in place; the result is never longer than the source. */
static int parse_string(pstate *s, const char **out, size_t *out_len) {
    char *open = s->p;
    char *r = s->p + 1, *w = s->p + 1;
    for (;;) {
        if (r >= s->end) return fail(s, open, "unterminated string (the line ends inside it)");
        unsigned char c = (unsigned char)*r;
        if (c == '"') break;
        if (c < 0x20) return fail(s, r, "control character 0x%02x inside a string (must be escaped)", c);
        if (c != '\\') {
            *w++ = (char)c;
            r++;
            continue;
        }
        if (r + 1 >= s->end) return fail(s, r, "truncated escape sequence");
        char e = r[1];
        r += 2;
        switch (e) {
        case '"': *w++ = '"'; break;
        case '\\': *w++ = '\\'; break;
        case '/': *w++ = '/'; break;
        case 'b': *w++ = '\b'; break;
        case 'f': *w++ = '\f'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        case 't': *w++ = '\t'; break;
        case 'u': {
            unsigned cp = 0;
            if (!read_hex4(s, r, &cp)) return 0;
            r += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo = 0;
                if (s->end - r < 6 || r[0] != '\\' || r[1] != 'u')
                    return fail(s, r, "high surrogate not followed by a \\u low surrogate");
                if (!read_hex4(s, r + 2, &lo)) return 0;
                if (lo < 0xDC00 || lo > 0xDFFF) return fail(s, r, "invalid low surrogate");
                r += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return fail(s, r - 6, "unpaired low surrogate");
            }
            if (cp == 0) return fail(s, r - 6, "\\u0000 is not allowed in trace strings");
            if (cp < 0x80) {
                *w++ = (char)cp;
            } else if (cp < 0x800) {
                *w++ = (char)(0xC0 | (cp >> 6));
                *w++ = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                *w++ = (char)(0xE0 | (cp >> 12));
                *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *w++ = (char)(0x80 | (cp & 0x3F));
            } else {
                *w++ = (char)(0xF0 | (cp >> 18));
                *w++ = (char)(0x80 | ((cp >> 12) & 0x3F));
                *w++ = (char)(0x80 | ((cp >> 6) & 0x3F));
                *w++ = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: return fail(s, r - 2, "invalid escape \\%c", e);
        }
    }
    s->p = r + 1; /* past the closing quote */
    *w = '\0';    /* w <= r: overwrites at most the closing quote, already consumed */
    *out = open + 1;
    *out_len = (size_t)(w - (open + 1));
    return 1;
}

/* JSON number grammar, then conversion. */
static int parse_number(pstate *s, gr_jfield *f, double *out_d) {
    char *b = s->p, *q = s->p;
    int integral = 1;
    if (q < s->end && *q == '-') q++;
    if (q >= s->end || !(*q >= '0' && *q <= '9')) return fail(s, b, "expected a number");
    if (*q == '0') {
        q++;
        if (q < s->end && *q >= '0' && *q <= '9') return fail(s, b, "numbers must not have leading zeros");
    } else {
        while (q < s->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < s->end && *q == '.') {
        integral = 0;
        q++;
        if (q >= s->end || !(*q >= '0' && *q <= '9')) return fail(s, q, "expected a digit after '.'");
        while (q < s->end && *q >= '0' && *q <= '9') q++;
    }
    if (q < s->end && (*q == 'e' || *q == 'E')) {
        integral = 0;
        q++;
        if (q < s->end && (*q == '+' || *q == '-')) q++;
        if (q >= s->end || !(*q >= '0' && *q <= '9')) return fail(s, q, "expected a digit in the exponent");
        while (q < s->end && *q >= '0' && *q <= '9') q++;
    }
    char tmp[64];
    size_t n = (size_t)(q - b);
    if (n >= sizeof(tmp)) return fail(s, b, "number too long");
    memcpy(tmp, b, n);
    tmp[n] = '\0';
    double d = strtod(tmp, NULL);
    if (!isfinite(d)) return fail(s, b, "number out of range");
    if (f) {
        f->is_int = 0;
        if (integral) {
            errno = 0;
            long long v = strtoll(tmp, NULL, 10);
            if (errno == 0) {
                f->is_int = 1;
                f->i = (int64_t)v;
            }
        }
        f->d = d;
    }
    *out_d = d;
    s->p = q;
    return 1;
}

static int match_word(pstate *s, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0) return 0;
    s->p += n;
    return 1;
}

static int parse_value(pstate *s, gr_jfield *f) {
    skip_ws(s);
    if (s->p >= s->end) return fail(s, s->p, "expected a value (the line ends here)");
    f->col = (int)(s->p - s->start) + 1;
    char c = *s->p;
    if (c == '"') {
        f->type = GR_JV_STR;
        return parse_string(s, &f->s, &f->s_len);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        f->type = GR_JV_NUM;
        double d = 0;
        return parse_number(s, f, &d);
    }
    if (c == '[') {
        f->type = GR_JV_ARR;
        f->n = 0;
        s->p++;
        skip_ws(s);
        if (s->p < s->end && *s->p == ']') {
            s->p++;
            return 1;
        }
        for (;;) {
            skip_ws(s);
            if (s->p >= s->end) return fail(s, s->p, "unterminated array (the line ends inside it)");
            if (*s->p == '[' || *s->p == '{' || *s->p == '"')
                return fail(s, s->p, "arrays in trace records hold numbers only");
            if (f->n >= GR_JARR_MAX) return fail(s, s->p, "array longer than %d numbers", GR_JARR_MAX);
            double d = 0;
            if (!parse_number(s, NULL, &d)) return 0;
            f->a[f->n++] = d;
            skip_ws(s);
            if (s->p < s->end && *s->p == ',') {
                s->p++;
                continue;
            }
            if (s->p < s->end && *s->p == ']') {
                s->p++;
                return 1;
            }
            return fail(s, s->p, "expected ',' or ']' in array");
        }
    }
    if (c == '{') return fail(s, s->p, "nested objects are not part of the trace format");
    if (match_word(s, "true")) {
        f->type = GR_JV_BOOL;
        f->d = 1;
        return 1;
    }
    if (match_word(s, "false")) {
        f->type = GR_JV_BOOL;
        f->d = 0;
        return 1;
    }
    if (match_word(s, "null")) {
        f->type = GR_JV_NULL;
        return 1;
    }
    return fail(s, s->p, "invalid value (expected a string, number, array, true, false or null)");
}

int gr_jline_parse(char *line, size_t len, gr_jline *out, int *err_col, char *msg, size_t msg_size) {
    pstate s = {line, line + len, line, err_col, msg, msg_size};
    out->n = 0;
    skip_ws(&s);
    if (s.p >= s.end) return fail(&s, s.p, "empty line (expected a JSON object)");
    if (*s.p != '{') return fail(&s, s.p, "expected '{' (each line must be one JSON object)");
    s.p++;
    skip_ws(&s);
    if (s.p < s.end && *s.p == '}') {
        s.p++;
    } else {
        for (;;) {
            skip_ws(&s);
            if (s.p >= s.end) return fail(&s, s.p, "the line ends inside the object (truncated record?)");
            if (*s.p != '"') return fail(&s, s.p, "expected a key in double quotes");
            if (out->n >= GR_JLINE_MAX_FIELDS)
                return fail(&s, s.p, "more than %d fields in one record", GR_JLINE_MAX_FIELDS);
            gr_jfield *f = &out->f[out->n];
            memset(f, 0, sizeof(*f));
            size_t klen;
            if (!parse_string(&s, &f->key, &klen)) return 0;
            skip_ws(&s);
            if (s.p >= s.end || *s.p != ':') return fail(&s, s.p, "expected ':' after key \"%s\"", f->key);
            s.p++;
            if (!parse_value(&s, f)) return 0;
            for (int i = 0; i < out->n; i++)
                if (!strcmp(out->f[i].key, f->key)) return fail(&s, line + f->col - 1, "duplicate key \"%s\"", f->key);
            out->n++;
            skip_ws(&s);
            if (s.p >= s.end) return fail(&s, s.p, "the line ends inside the object (truncated record?)");
            if (*s.p == ',') {
                s.p++;
                continue;
            }
            if (*s.p == '}') {
                s.p++;
                break;
            }
            return fail(&s, s.p, "expected ',' or '}'");
        }
    }
    skip_ws(&s);
    if (s.p < s.end) return fail(&s, s.p, "unexpected text after the object (one object per line)");
    return 1;
}

const gr_jfield *gr_jline_get(const gr_jline *l, const char *key) {
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->f[i].key, key)) return &l->f[i];
    return NULL;
}

/* ---- append buffer ---- */

void gr_sb_init(gr_sbuf *b) {
    memset(b, 0, sizeof(*b));
}

void gr_sb_free(gr_sbuf *b) {
    free(b->p);
    memset(b, 0, sizeof(*b));
}

void gr_sb_reserve(gr_sbuf *b, size_t extra) {
    if (b->oom) return;
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return;
    }
    b->p = p;
    b->cap = cap;
}

void gr_sb_raw(gr_sbuf *b, const char *s, size_t n) {
    gr_sb_reserve(b, n);
    if (b->oom) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void gr_sb_cstr(gr_sbuf *b, const char *s) {
    gr_sb_raw(b, s, strlen(s));
}

void gr_sb_u64(gr_sbuf *b, uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    gr_sb_reserve(b, (size_t)n);
    if (b->oom) return;
    for (int i = 0; i < n; i++) b->p[b->len + (size_t)i] = tmp[n - 1 - i];
    b->len += (size_t)n;
    b->p[b->len] = '\0';
}

void gr_sb_i64(gr_sbuf *b, int64_t v) {
    if (v < 0) {
        gr_sb_raw(b, "-", 1);
        gr_sb_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        gr_sb_u64(b, (uint64_t)v);
    }
}

void gr_sb_dbl(gr_sbuf *b, double v) {
    if (!isfinite(v)) {
        gr_sb_raw(b, "null", 4);
        return;
    }
    char tmp[40];
    int n = snprintf(tmp, sizeof(tmp), "%.17g", v);
    gr_sb_raw(b, tmp, (size_t)n);
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when it is not valid. */
static int utf8_len(const unsigned char *p) {
    unsigned c = p[0];
    int n;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, min = 0x10000;
    else return 0;
    unsigned cp = c & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0; /* also stops at the terminating NUL */
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

void gr_sb_jstr(gr_sbuf *b, const char *s) {
    if (!s) s = "";
    size_t n = strlen(s);
    gr_sb_reserve(b, n + 2);
    gr_sb_raw(b, "\"", 1);
    const char *run = s;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x80) {
            /* invalid UTF-8 (a name from a foreign encoding) becomes U+FFFD so every line
             * stays valid JSON for any reader */
            int ul = utf8_len((const unsigned char *)p);
            if (ul > 0) {
                p += ul - 1;
                continue;
            }
            gr_sb_raw(b, run, (size_t)(p - run));
            gr_sb_raw(b, "\\ufffd", 6);
            run = p + 1;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        gr_sb_raw(b, run, (size_t)(p - run));
        char esc[8];
        switch (c) {
        case '"': gr_sb_raw(b, "\\\"", 2); break;
        case '\\': gr_sb_raw(b, "\\\\", 2); break;
        case '\n': gr_sb_raw(b, "\\n", 2); break;
        case '\r': gr_sb_raw(b, "\\r", 2); break;
        case '\t': gr_sb_raw(b, "\\t", 2); break;
        default:
            snprintf(esc, sizeof(esc), "\\u%04x", c);
            gr_sb_raw(b, esc, 6);
        }
        run = p + 1;
    }
    gr_sb_raw(b, run, strlen(run));
    gr_sb_raw(b, "\"", 1);
}

void gr_sb_key(gr_sbuf *b, const char *key) {
    if (b->len > 0 && b->p[b->len - 1] != '{') gr_sb_raw(b, ",", 1);
    gr_sb_raw(b, "\"", 1);
    gr_sb_cstr(b, key);
    gr_sb_raw(b, "\":", 2);
}

void gr_sb_kv_u64(gr_sbuf *b, const char *key, uint64_t v) {
    gr_sb_key(b, key);
    gr_sb_u64(b, v);
}

void gr_sb_kv_i64(gr_sbuf *b, const char *key, int64_t v) {
    gr_sb_key(b, key);
    gr_sb_i64(b, v);
}

void gr_sb_kv_dbl(gr_sbuf *b, const char *key, double v) {
    gr_sb_key(b, key);
    gr_sb_dbl(b, v);
}

void gr_sb_kv_str(gr_sbuf *b, const char *key, const char *s) {
    gr_sb_key(b, key);
    gr_sb_jstr(b, s);
}

/* ---- bounded line reader ---- */

#define GR_JL_CHUNK ((size_t)1 << 16)

void gr_jl_reader_init(gr_jl_reader *r, FILE *file, size_t max) {
    memset(r, 0, sizeof(*r));
    r->f = file;
    r->max = max;
}

void gr_jl_reader_free(gr_jl_reader *r) {
    free(r->chunk);
    free(r->line);
    r->chunk = r->line = NULL;
    r->cap = 0;
}

/* Appends n bytes to the line (len so far in *len); 0 when out of memory. */
static int line_append(gr_jl_reader *r, size_t *len, const char *p, size_t n) {
    if (*len + n + 1 > r->cap) {
        size_t c = r->cap ? r->cap : 256;
        while (c < *len + n + 1) c *= 2;
        char *b = realloc(r->line, c);
        if (!b) return 0;
        r->line = b;
        r->cap = c;
    }
    memcpy(r->line + *len, p, n);
    *len += n;
    r->line[*len] = '\0';
    return 1;
}

gr_jl_next gr_jl_reader_next(gr_jl_reader *r, char **line, size_t *len, int *has_nl) {
    FILE *f = r->f;
    *len = 0;
    *has_nl = 0;
    if (!r->chunk && !(r->chunk = malloc(GR_JL_CHUNK))) return GR_JL_NOMEM;
    if (!line_append(r, len, "", 0)) return GR_JL_NOMEM;
    for (;;) {
        if (r->pos == r->end) {
            r->pos = 0;
            r->end = fread(r->chunk, 1, GR_JL_CHUNK, f);
            if (r->end == 0) {
                if (ferror(f)) return GR_JL_IOERR;
                *line = r->line;
                return *len > 0 ? GR_JL_LINE : GR_JL_EOF;
            }
        }
        const char *p = r->chunk + r->pos;
        size_t avail = r->end - r->pos;
        const char *nl = memchr(p, '\n', avail);
        size_t n = nl ? (size_t)(nl - p) : avail;
        if (*len + n > r->max) {
            *len += n;
            return GR_JL_TOO_LONG;
        }
        if (!line_append(r, len, p, n)) return GR_JL_NOMEM;
        r->pos += n;
        if (nl) {
            r->pos++;
            *has_nl = 1;
            *line = r->line;
            return GR_JL_LINE;
        }
    }
}
