/* gr_error implementation: message accumulation and the status -> exit code mapping that the
 * README documents (0 ok, 1 run failed, 2 bad input or usage, 3 no CUDA device). */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void gr_error_clear(gr_error *err) {
    if (err) memset(err, 0, sizeof(*err));
}

static void append_line(gr_error *err, const char *prefix, const char *fmt, va_list ap) {
    size_t used = strlen(err->msg);
    size_t room = sizeof(err->msg) - used;
    if (err->count >= GR_ERROR_MAX_ITEMS || room < 64) {
        err->truncated = 1;
        return;
    }
    char *p = err->msg + used;
    int n = 0;
    if (used > 0) n += snprintf(p + n, room - (size_t)n, "\n");
    if (prefix && prefix[0]) n += snprintf(p + n, room - (size_t)n, "%s: ", prefix);
    if ((size_t)n < room) vsnprintf(p + n, room - (size_t)n, fmt, ap);
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
    char out[GR_ERROR_MSG_MAX];
    size_t o = 0;
    const char *line = err->msg;
    while (*line && o + 1 < sizeof(out)) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        int n = snprintf(out + o, sizeof(out) - o, "%s%.*s%s", prefix, (int)len, line, nl ? "\n" : "");
        if (n < 0 || (size_t)n >= sizeof(out) - o) {
            err->truncated = 1;
            break;
        }
        o += (size_t)n;
        line = nl ? nl + 1 : line + len;
    }
    out[o < sizeof(out) ? o : sizeof(out) - 1] = '\0';
    memcpy(err->msg, out, sizeof(out));
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
