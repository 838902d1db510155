/* Criteo Kaggle input for the DLRM workloads: the line parser for the train.txt layout (label,
 * 13 integer fields, 26 categorical 8-hex-digit hashes, tab-separated, empty fields allowed), the
 * file reader with the usual preprocessing (dense = log(1 + max(x, 0)), index = hash % rows),
 * and the binding of the parsed rows to a resolved plan's buffers by naming convention (dense,
 * idx.{t}, emb.{t}, optional label; docs/dlrm_small.md). Pure C; no GPU. */
#ifndef GR_CRITEO_H
#define GR_CRITEO_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_CRITEO_DENSE 13
#define GR_CRITEO_CAT 26
#define GR_CRITEO_FIELDS (1 + GR_CRITEO_DENSE + GR_CRITEO_CAT)
#define GR_CRITEO_MAX_ROWS 1000000 /* rows taken when the batch is not given */
#define GR_CRITEO_KEEP_BAD 8       /* skipped lines remembered for the report */
/* bytes in one line, its '\n' excluded (README, "Limits on input") */
#define GR_CRITEO_MAX_LINE 65536

typedef struct gr_criteo_row {
    float label;                  /* 0 or 1 */
    float dense[GR_CRITEO_DENSE]; /* log(1 + max(x, 0)); 0 where the field is empty */
    uint32_t hash[GR_CRITEO_CAT]; /* the categorical hash; 0 where the field is empty */
    int missing_dense, missing_cat; /* empty fields on this line */
} gr_criteo_row;

/* Parse one line (without its '\n'; one trailing '\r' is accepted). A malformed line returns
 * GR_ERR_INPUT with the reason (naming the field, e.g. "field C3 \"12g4\" is not 8 hex digits")
 * in why and the 1-based byte column where the bad field starts in *column. */
gr_status gr_criteo_parse_line(const char *line, size_t len, gr_criteo_row *row, int *column,
                               char *why, size_t why_size);

float gr_criteo_dense(int64_t x);                  /* log(1 + max(x, 0)) */
int64_t gr_criteo_index(uint32_t hash, int64_t rows); /* hash % rows */

typedef struct gr_criteo_bad {
    int64_t line;
    int column;
    char why[200];
} gr_criteo_bad;

typedef struct gr_criteo_data {
    char path[512];
    int64_t rows;   /* rows kept */
    float *label;   /* [rows] */
    float *dense;   /* [rows][13], preprocessed */
    uint32_t *hash; /* [rows][26] */
    int64_t lines;  /* lines read, the skipped ones included */
    int64_t skipped; /* malformed lines skipped (skip_bad) */
    gr_criteo_bad bad[GR_CRITEO_KEEP_BAD]; /* the first skipped lines */
    int nbad;
    int64_t missing_dense, missing_cat; /* empty fields in the kept rows */
    int64_t positives;                  /* kept rows with label 1 */
} gr_criteo_data;

/* Read the first `want` good rows (want > 0: a file with fewer is an error naming both counts)
 * or every row (want == 0: more than max_rows is an error). A malformed line is an error at
 * "path:line:column" (GR_ERR_INPUT, exit 2) unless skip_bad, which counts it and goes on.
 * Lines after the `want`-th good row are not read. The file is opened through core/fileio (a
 * regular file within the TSV limit); a line longer than GR_CRITEO_MAX_LINE bytes is malformed
 * (it is not read into memory whole). When no row is kept, the error lists the first skipped
 * lines with their reasons. */
gr_status gr_criteo_read(const char *path, int64_t want, int64_t max_rows, int skip_bad,
                         gr_criteo_data **out, gr_error *err);
void gr_criteo_destroy(gr_criteo_data *d);

/* What a plan needs from --input, by name: "dense" [B, 13] fp32, "idx.{t}" [B] or [B, 1]
 * int32/int64 and "emb.{t}" [rows_t, D] for t = 0..25, optionally "label" [B] fp32. */
typedef struct gr_criteo_binding {
    int64_t B;
    void *idx[GR_CRITEO_CAT]; /* hash % rows_t, in the dtype of idx.{t} */
    int64_t rows[GR_CRITEO_CAT];
    int has_label;
} gr_criteo_binding;

/* The batch the plan takes from the file: the first dim of its buffer "dense". */
gr_status gr_criteo_plan_batch(const gr_plan *plan, int64_t *B, gr_error *err);
/* Point the plan's dense, idx.{t} and label buffers at the first B rows of d (init "host" with
 * host_data; d and the binding must outlive the plan's runs). Reports every mismatch. */
gr_status gr_criteo_bind(gr_plan *plan, const gr_criteo_data *d, gr_criteo_binding **out,
                         gr_error *err);
void gr_criteo_binding_destroy(gr_criteo_binding *b);

#ifdef __cplusplus
}
#endif
#endif
