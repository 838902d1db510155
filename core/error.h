/* gr_error: the one error type of graphrun. Functions return a gr_status and fill a gr_error;
 * only main() prints and chooses the exit code (gr_exit_code). An error can carry several
 * messages (validation reports every problem it finds in one pass), each naming its place. */
#ifndef GR_ERROR_H
#define GR_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gr_status {
    GR_OK = 0,
    GR_ERR_USAGE,    /* bad command line                                   exit 2 */
    GR_ERR_INPUT,    /* bad workload, bad shape, bad data file             exit 2 */
    GR_ERR_IO,       /* a file could not be read or written                exit 2 */
    GR_ERR_NODEV,    /* no CUDA device                                     exit 3 */
    GR_ERR_CUDA,     /* a CUDA / cuBLAS / CUPTI call failed                exit 1 */
    GR_ERR_VERIFY,   /* outputs disagree with the reference                exit 1 */
    GR_ERR_CAPTURE,  /* stream capture failed                              exit 1 */
    GR_ERR_NOMEM,    /* host allocation failed                             exit 1 */
    GR_ERR_PROTOCOL, /* replay service: malformed request or reply         exit 2 */
    GR_ERR_SERVICE,  /* replay service unreachable or failed               exit 1 */
    GR_ERR_INTERNAL  /* a bug in graphrun                                  exit 1 */
} gr_status;

#define GR_ERROR_MSG_MAX 8192
#define GR_ERROR_MAX_ITEMS 64 /* messages shown; later ones are counted, not shown */

typedef struct gr_error {
    gr_status code;   /* code of the first problem recorded */
    int count;        /* problems recorded (messages may be fewer: duplicates, hidden) */
    int truncated;    /* 1 when a message was cut or not shown for lack of room */
    int hidden;       /* messages not shown; msg then ends "(N more problems not shown)" */
    char file[512];   /* file the first problem is in, if any */
    int line, column; /* position of a syntax error, 0 if unknown */
    char path[256];   /* JSON path of the first problem, e.g. ops[3].inputs[1] */
    char api[96];     /* CUDA/CUPTI/cuBLAS call that failed, if any */
    char api_error[64];
    char msg[GR_ERROR_MSG_MAX]; /* one line per problem, "place: what (fix)" */
} gr_error;

void gr_error_clear(gr_error *err);
/* Record a problem. `path` (may be NULL) is the place prefix, e.g. a JSON path. Returns code.
 * A message identical to one already recorded is counted but not repeated. When msg is full, a
 * message is cut with "..." (the first one always shows) and later ones are counted in a last
 * line "(N more problems not shown)": nothing is dropped silently. */
gr_status gr_error_set(gr_error *err, gr_status code, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Record a problem in a file at line:column (syntax errors). */
gr_status gr_error_at(gr_error *err, gr_status code, const char *file, int line, int column,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Prefix every recorded message with context ("workloads/x.json: "). */
void gr_error_prefix(gr_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int gr_error_failed(const gr_error *err);
const char *gr_status_name(gr_status code);
int gr_exit_code(gr_status code);

#ifdef __cplusplus
}
#endif
#endif
