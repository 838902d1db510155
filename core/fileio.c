/* Bounded file input: the one place that decides whether a named file may be read and how much
 * of it (the limits are documented in the README, "Limits on input"). */
#include "core/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
    const char *name;
    uint64_t limit;
} kinds[GR_FILE_KINDS] = {
    [GR_FILE_WORKLOAD] = {"workload file", 64ull << 20},
    [GR_FILE_TSV] = {"TSV input file", 64ull << 30},
    [GR_FILE_TRACE] = {"trace file", 8ull << 30},
    [GR_FILE_DATA] = {"data file", 64ull << 30},
};

uint64_t gr_file_limit(gr_file_kind kind) {
    return kind < GR_FILE_KINDS ? kinds[kind].limit : 0;
}

const char *gr_file_kind_name(gr_file_kind kind) {
    return kind < GR_FILE_KINDS ? kinds[kind].name : "file";
}

static const char *type_name(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

static void fmt_size(uint64_t b, char *buf, size_t size) {
    if (b >= (1ull << 30)) snprintf(buf, size, "%.1f GiB", b / (double)(1ull << 30));
    else if (b >= (1ull << 20)) snprintf(buf, size, "%.1f MiB", b / (double)(1ull << 20));
    else snprintf(buf, size, "%llu bytes", (unsigned long long)b);
}

gr_status gr_file_open(const char *path, gr_file_kind kind, FILE **out, uint64_t *size,
                       gr_error *err) {
    *out = NULL;
    if (size) *size = 0;
    const char *what = gr_file_kind_name(kind);
    if (!path || !*path) return gr_error_set(err, GR_ERR_USAGE, NULL, "an empty path was given for the %s", what);
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; cleared below for a regular file */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return gr_error_set(err, GR_ERR_IO, path, "cannot open the %s: %s (check the path)", what,
                            strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return gr_error_set(err, GR_ERR_IO, path, "cannot stat the %s: %s", what, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return gr_error_set(err, GR_ERR_INPUT, path,
                            "is %s, not a regular file: the %s must be a file on disk "
                            "(copy a stream to a file first)",
                            type_name(st.st_mode), what);
    }
    uint64_t limit = gr_file_limit(kind);
    if ((uint64_t)st.st_size > limit) {
        char have[32], max[32];
        fmt_size((uint64_t)st.st_size, have, sizeof(have));
        fmt_size(limit, max, sizeof(max));
        close(fd);
        return gr_error_set(err, GR_ERR_INPUT, path,
                            "the %s is %s (%llu bytes), over the %s (%llu bytes) limit for a %s "
                            "(README, \"Limits on input\"): is this the right file?",
                            what, have, (unsigned long long)st.st_size, max,
                            (unsigned long long)limit, what);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return gr_error_set(err, GR_ERR_IO, path, "cannot open the %s: %s", what, strerror(e));
    }
    if (size) *size = (uint64_t)st.st_size;
    *out = f;
    return GR_OK;
}

static gr_status over_limit(const char *label, uint64_t limit, gr_error *err) {
    char max[32];
    fmt_size(limit, max, sizeof(max));
    return gr_error_set(err, GR_ERR_INPUT, label,
                        "more than %s: over the limit for this input (README, \"Limits on "
                        "input\")",
                        max);
}

gr_status gr_stream_read_all(FILE *f, const char *label, uint64_t limit, char **out, size_t *len,
                             gr_error *err) {
    *out = NULL;
    *len = 0;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) return gr_error_set(err, GR_ERR_NOMEM, label, "out of host memory");
    for (;;) {
        if (n + 1 >= cap) {
            if ((uint64_t)n >= limit) {
                free(buf);
                return over_limit(label, limit, err);
            }
            size_t want = cap * 2;
            if ((uint64_t)want > limit + 2) want = (size_t)limit + 2;
            char *bigger = realloc(buf, want);
            if (!bigger) {
                free(buf);
                return gr_error_set(err, GR_ERR_NOMEM, label, "out of host memory reading it");
            }
            buf = bigger;
            cap = want;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        int e = errno;
        free(buf);
        return gr_error_set(err, GR_ERR_IO, label, "read failed: %s", strerror(e));
    }
    if ((uint64_t)n > limit) {
        free(buf);
        return over_limit(label, limit, err);
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return GR_OK;
}

gr_status gr_file_read_all(const char *path, gr_file_kind kind, char **out, size_t *len,
                           gr_error *err) {
    *out = NULL;
    *len = 0;
    FILE *f = NULL;
    gr_status st = gr_file_open(path, kind, &f, NULL, err);
    if (st != GR_OK) return st;
    char label[600];
    snprintf(label, sizeof(label), "%s", path);
    /* the size was checked; the bound also covers a file that grows while it is read */
    st = gr_stream_read_all(f, label, gr_file_limit(kind), out, len, err);
    fclose(f);
    return st;
}
