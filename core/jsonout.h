/* Writing a JSON document to a file or to stdout ("-"), the --json FILE|- of every command. */
#ifndef GR_JSONOUT_H
#define GR_JSONOUT_H

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* `json` is a json_t *. On failure: GR_ERR_IO, "PATH: cannot write WHAT (is the directory
 * writable?): REASON" when it cannot be created, "PATH: cannot write WHAT: REASON" when a write,
 * flush or close fails (a full disk: --json /dev/full). */
gr_status gr_json_write(const char *path, const void *json, const char *what, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
