/* Arithmetic over workload params, used in shapes, repeat counts, numeric attributes and
 * "{...}" name templates: numbers, names, + - * / // % **, parentheses, and the functions
 * min, max, cdiv (ceiling division), floor, ceil, sqrt. Evaluated in double precision. */
#ifndef GR_EXPR_H
#define GR_EXPR_H

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Look a name up; return 1 and set *out when found, 0 when unknown, -1 on an error already
 * recorded in err (e.g. a cycle between params). */
typedef int (*gr_expr_lookup)(void *ctx, const char *name, double *out, gr_error *err);

/* Evaluate `text`. On failure records "path: expression "text": why" and returns GR_ERR_INPUT.
 * `names_hint` (may be NULL) is appended to unknown-name messages, e.g. the list of params. */
gr_status gr_expr_eval(const char *text, gr_expr_lookup lookup, void *ctx, const char *path,
                       const char *names_hint, double *out, gr_error *err);

/* Parse a whole string as a plain number (no names). Returns 1 on success. */
int gr_parse_number(const char *text, double *out);

#ifdef __cplusplus
}
#endif
#endif
