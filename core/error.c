/* gr_error implementation: message accumulation and the status -> exit code mapping that the
 * README documents (0 ok, 1 run failed, 2 bad input or usage, 3 no CUDA device). */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void gr_error_clear(gr_error *err) {
    if (err) memset(err, 0, sizeof(*err));
}

/* Room kept at the end of msg for the "(N more problems not shown)" line. */
#define NOTE_ROOM 48
/* A message cut to fit keeps at least this much, else it is counted as not shown. */
#define MIN_CUT 96

/* The end of the shown messages: before the note line when there is one. */
static size_t body_len(const gr_error *err) {
    size_t used = strlen(err->msg);
    if (err->hidden <= 0) return used;
    const char *nl = strrchr(err->msg, '\n');
    return nl ? (size_t)(nl - err->msg) : 0;
}

static void write_note(gr_error *err, size_t at) {
    if (err->hidden <= 0) return;
    snprintf(err->msg + at, sizeof(err->msg) - at, "%s(%d more problem%s not shown)",
             at ? "\n" : "", err->hidden, err->hidden == 1 ? "" : "s");
}

static void hide(gr_error *err) {
    size_t at = body_len(err);
    err->hidden++;
    err->truncated = 1;
    write_note(err, at);
}

/* Copy `line` (len bytes) to dst (room bytes, room > 4), cut with "..." when it does not fit.
 * Returns the bytes written, without the NUL. */
static size_t put_cut(char *dst, size_t room, const char *line, size_t len) {
    if (len < room) {
        memcpy(dst, line, len);
        dst[len] = '\0';
        return len;
    }
    size_t keep = room - 4;
    /* do not split a UTF-8 sequence */
    while (keep > 0 && ((unsigned char)line[keep] & 0xC0) == 0x80)
        keep--;
    memcpy(dst, line, keep);
    memcpy(dst + keep, "...", 4);
    return keep + 3;
}

static int already_recorded(const gr_error *err, size_t body, const char *line, size_t len) {
    const char *p = err->msg, *end = err->msg + body;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (l == len && !memcmp(p, line, len)) return 1;
        if (!nl) break;
        p = nl + 1;
    }
    return 0;
}

static void append_line(gr_error *err, const char *prefix, const char *fmt, va_list ap) {
    char line[GR_ERROR_MSG_MAX + 8];
    int n = 0;
    if (prefix && prefix[0]) n = snprintf(line, sizeof(line), "%s: ", prefix);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof(line)) n = (int)sizeof(line) - 1;
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    size_t len = (size_t)n + (m > 0 ? (size_t)m : 0);
    if (len >= sizeof(line)) len = sizeof(line) - 1; /* cut below with "..." */
    size_t body = body_len(err);
    if (already_recorded(err, body, line, len)) return;
    int lines = body ? 1 : 0; /* messages shown (merged and collapsed ones do not count) */
    for (const char *q = err->msg; q < err->msg + body; q++)
        lines += *q == '\n';
    if (err->hidden > 0 || lines >= GR_ERROR_MAX_ITEMS) {
        hide(err);
        return;
    }
    size_t sep = body ? 1 : 0;
    size_t room = sizeof(err->msg) - body - sep; /* bytes left for the line and its NUL */
    if (room > NOTE_ROOM)
        room -= NOTE_ROOM;
    else
        room = 0;
    if (body == 0) room = sizeof(err->msg) - NOTE_ROOM; /* the first message always shows */
    if (len >= room && body != 0 && room < MIN_CUT) {
        hide(err);
        return;
    }
    if (sep) err->msg[body] = '\n';
    if (len >= room) err->truncated = 1;
    put_cut(err->msg + body + sep, room, line, len);
}

gr_status gr_error_set(gr_error *err, gr_status code, const char *path, const char *fmt, ...) {
    if (!err) return code;
    if (err->count == 0) {
        err->code = code;
        if (path) snprintf(err->path, sizeof(err->path), "%s", path);
    }
    va_list ap;
    va_start(ap, fmt);
    append_line(err, path, fmt, ap);
    va_end(ap);
    err->count++;
    return err->code;
}

gr_status gr_error_at(gr_error *err, gr_status code, const char *file, int line, int column,
                      const char *fmt, ...) {
    if (!err) return code;
    char where[600];
    if (line > 0)
        snprintf(where, sizeof(where), "%s:%d:%d", file ? file : "<input>", line, column);
    else
        snprintf(where, sizeof(where), "%s", file ? file : "<input>");
    if (err->count == 0) {
        err->code = code;
        snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
        err->line = line;
        err->column = column;
    }
    va_list ap;
    va_start(ap, fmt);
    append_line(err, where, fmt, ap);
    va_end(ap);
    err->count++;
    return err->code;
}

void gr_error_prefix(gr_error *err, const char *fmt, ...) {
    if (!err || err->count == 0) return;
    char prefix[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    size_t plen = strlen(prefix);
    char out[GR_ERROR_MSG_MAX];
    char line[GR_ERROR_MSG_MAX + 640];
    size_t o = 0;
    size_t body = body_len(err);
    const char *p = err->msg, *end = err->msg + body;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        size_t sep = o ? 1 : 0;
        size_t room = sizeof(out) - o - sep;
        room = room > NOTE_ROOM ? room - NOTE_ROOM : 0;
        if (o == 0) room = sizeof(out) - NOTE_ROOM;
        if (room < MIN_CUT && o) {                   /* this line and the rest no longer fit */
            for (const char *q = p; q && q < end;) { /* count the lines not shown */
                err->hidden++;
                q = memchr(q, '\n', (size_t)(end - q));
                if (q) q++;
            }
            err->truncated = 1;
            break;
        }
        memcpy(line, prefix, plen);
        memcpy(line + plen, p, len);
        if (plen + len >= room) err->truncated = 1;
        if (sep) out[o++] = '\n';
        o += put_cut(out + o, room, line, plen + len);
        p = nl ? nl + 1 : end;
    }
    out[o] = '\0';
    memcpy(err->msg, out, o + 1);
    write_note(err, o);
}

int gr_error_failed(const gr_error *err) {
    return err && err->count > 0;
}

const char *gr_status_name(gr_status code) {
    switch (code) {
    case GR_OK: return "ok";
    case GR_ERR_USAGE: return "usage";
    case GR_ERR_INPUT: return "bad input";
    case GR_ERR_IO: return "i/o";
    case GR_ERR_NODEV: return "no CUDA device";
    case GR_ERR_CUDA: return "CUDA error";
    case GR_ERR_VERIFY: return "verification failed";
    case GR_ERR_CAPTURE: return "capture failed";
    case GR_ERR_NOMEM: return "out of memory";
    case GR_ERR_PROTOCOL: return "protocol error";
    case GR_ERR_SERVICE: return "service error";
    case GR_ERR_INTERNAL: return "internal error";
    }
    return "unknown";
}

int gr_exit_code(gr_status code) {
    switch (code) {
    case GR_OK: return 0;
    case GR_ERR_USAGE:
    case GR_ERR_INPUT:
    case GR_ERR_IO:
    case GR_ERR_PROTOCOL: return 2;
    case GR_ERR_NODEV: return 3;
    default: return 1;
    }
}
