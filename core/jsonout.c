/* --json FILE|- output: indented, 10 significant digits for reals. Every write, flush and close
 * is checked, so a full disk or a closed pipe is reported with the OS's reason. */
#include "core/jsonout.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

gr_status gr_json_write(const char *path, const void *json, const char *what, gr_error *err) {
    const json_t *j = json;
    size_t flags = JSON_INDENT(2) | JSON_REAL_PRECISION(10);
    if (!path || !*path)
        return gr_error_set(err, GR_ERR_USAGE, NULL,
                            "an empty path was given for the %s output "
                            "(give a file name, or - for stdout)",
                            what);
    int to_stdout = !strcmp(path, "-");
    FILE *f = to_stdout ? stdout : fopen(path, "w");
    if (!f)
        return gr_error_set(err, GR_ERR_IO, path,
                            "cannot write %s (is the directory writable?): %s", what,
                            strerror(errno));
    errno = 0;
    int rc = json_dumpf(j, f, flags);
    if (rc == 0 && fputc('\n', f) == EOF) rc = -1;
    if (fflush(f) != 0) rc = -1;
    int e = errno;
    if (ferror(f)) rc = -1;
    if (!to_stdout && fclose(f) != 0) {
        if (!e) e = errno;
        rc = -1;
    }
    if (rc != 0)
        return gr_error_set(err, GR_ERR_IO, path, "cannot write %s: %s", what,
                            e ? strerror(e) : "write failed");
    return GR_OK;
}
