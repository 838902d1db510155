/* --json FILE|- output: indented, 10 significant digits for reals. */
#include "core/jsonout.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

gr_status gr_json_write(const char *path, const void *json, const char *what, gr_error *err) {
    const json_t *j = json;
    size_t flags = JSON_INDENT(2) | JSON_REAL_PRECISION(10);
    int rc;
    if (!strcmp(path, "-")) {
        rc = json_dumpf(j, stdout, flags);
        fputc('\n', stdout);
    } else {
        rc = json_dump_file(j, path, flags);
    }
    if (rc != 0)
        return gr_error_set(err, GR_ERR_IO, path, "cannot write %s (is the directory writable?)", what);
    return GR_OK;
}
