/* Shape buckets for the replay service: one graph per value of a param (`--buckets B=1,2,4,8`)
 * over one set of device buffers. The buffers of every bucket's plan are matched by name; each
 * is allocated once at its largest size and shared by all the buckets' graphs (replays are
 * serialised on one stream), so weights exist once. A request for batch N runs the smallest
 * bucket >= N, its inputs padded with zeros along the first dimension and its outputs trimmed.
 * Pure C, no GPU: parsing, choosing, and the shared layout. */
#ifndef GR_BUCKET_H
#define GR_BUCKET_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_BUCKET_MAX 32

typedef struct gr_bucket_spec {
    char param[64];
    int64_t values[GR_BUCKET_MAX]; /* ascending, distinct */
    int n;
} gr_bucket_spec;

/* "B=1,2,4,8" (values in any order, whole numbers >= 1; sorted, duplicates refused). Errors
 * name `where` (the option or request field). */
gr_status gr_bucket_parse(const char *text, const char *where, gr_bucket_spec *out, gr_error *err);
/* The index of the smallest bucket >= want; -1 when want exceeds every bucket (or is < 1). */
int gr_bucket_pick(const gr_bucket_spec *s, int64_t want);

/* One buffer name across the buckets' plans. */
typedef struct gr_bucket_buffer {
    char name[GR_NAME_MAX];
    gr_dtype dtype;
    size_t bytes;     /* the largest over the buckets: what is allocated once */
    int same;         /* the same size in every bucket (weights, tables) */
    int batch_dim;    /* the one dimension that changes with the bucket, -1 when none */
    size_t row_bytes; /* bytes per index of batch_dim when it is dimension 0, else 0 */
} gr_bucket_buffer;

typedef struct gr_bucket_layout {
    gr_bucket_buffer *b;
    int nb;
    double shared_bytes;   /* allocated once for every bucket */
    double separate_bytes; /* what the buckets would take with their own buffers */
} gr_bucket_layout;

/* The layout of n plans (one per bucket, in the spec's order). Every plan must use the same
 * buffers (name, dtype, rank), and at most one dimension of a buffer may change with the bucket:
 * otherwise GR_ERR_INPUT naming the buffer and the buckets. */
gr_status gr_bucket_layout_make(const gr_plan *const *plans, int n, const gr_bucket_spec *s,
                                gr_bucket_layout *out, gr_error *err);
void gr_bucket_layout_free(gr_bucket_layout *l);
/* The entry for buffer `name`, NULL when none. */
const gr_bucket_buffer *gr_bucket_find(const gr_bucket_layout *l, const char *name);

#ifdef __cplusplus
}
#endif
#endif
