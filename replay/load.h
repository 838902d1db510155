/* Loading a workload file and resolving its plans, the one way `graphrun run`, `validate` and the
 * replay service do it: read the file once (its bytes are hashed for the service's content
 * hash), apply --set and --seed, pick the variants, resolve each against a target. */
#ifndef GR_LOAD_H
#define GR_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "core/criteo.h"
#include "core/error.h"
#include "core/plan.h"
#include "core/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_load_req {
    const char *path;            /* workload file */
    const char *variant;         /* NULL: see one_variant */
    const char *const *sets;     /* "name=value" (--set), nsets of them */
    int nsets;
    const char *seed;            /* --seed text, NULL for the workload's */
    int one_variant;             /* with variant NULL: the default variant only (capture), not all */
    /* The input stage: Criteo Kaggle rows (--input FILE.tsv) bound to the plans' buffers (dense,
     * idx.{t}, label; core/criteo.h). Without --set B the batch is the file's row count. */
    const char *input;
    int skip_bad_lines;          /* --skip-bad-lines: skip malformed rows (named) instead of failing */
} gr_load_req;

/* As gr_load_req.path (this pointer, not any string "-"): the workload is read from stdin, within
 * the workload limit. Only the CLI passes it; a path a service client sends never matches it. */
extern const char gr_load_stdin[];

typedef struct gr_loaded {
    gr_workload *wl;
    gr_plan *plans[GR_MAX_VARIANTS];
    int nplans;
    gr_criteo_data *input;                    /* the input stage's rows, NULL without one */
    gr_criteo_binding *bind[GR_MAX_VARIANTS]; /* and their binding to each plan */
    uint64_t source_hash; /* FNV-1a 64 of the file's bytes */
    size_t source_bytes;
} gr_loaded;

/* Fills `l` (always; free it with gr_loaded_free even on failure). Errors name the file (or
 * the input file and its line). */
gr_status gr_load_resolve(const gr_load_req *req, const gr_target *target, gr_loaded *l,
                          gr_error *err);
void gr_loaded_free(gr_loaded *l);

/* FNV-1a 64: start with GR_FNV_OFFSET, feed bytes. */
#define GR_FNV_OFFSET 0xcbf29ce484222325ull
uint64_t gr_fnv1a(uint64_t h, const void *data, size_t len);

#ifdef __cplusplus
}
#endif
#endif
