/* DLRM kernel family, host side: registry entries (argument schemas), checks (shapes, dtypes,
 * index ranges, launch dims, Linear impl and tile choice, the interactions' rows per block,
 * byte/flop accounting), CPU references (double accumulation), and the
 * cuBLASLt path of linear_act (descriptors and algorithm chosen in setup(), before any capture).
 * Device code: dlrm.cu. */
#include "kernels/dlrm.h"

#include <cublasLt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/parallel.h"
#include "kernels/common.h"

static const gr_dtype fp32_only[] = {GR_FP32, GR_DTYPE_INVALID};
static const gr_dtype index_dtypes[] = {GR_INT32, GR_INT64, GR_DTYPE_INVALID};

void gr_tril_pair(int64_t p, int *i, int *j) {
    int r = (int)((1.0 + sqrt(1.0 + 8.0 * (double)p)) / 2.0);
    while (r > 1 && (int64_t)r * (r - 1) / 2 > p) r--;
    while ((int64_t)(r + 1) * r / 2 <= p) r++;
    *i = r;
    *j = (int)(p - (int64_t)r * (r - 1) / 2);
}

static int64_t cdiv64(int64_t a, int64_t b) { return (a + b - 1) / b; }

static const char *shp(const gr_buffer *b, char *s, size_t n) {
    gr_shape_str(b, s, n);
    return s;
}

/* ---------- embedding_bag / embedding_bag_tbe ---------- */

/* Smallest and largest index an integer init can produce; 0 when the init does not say. */
static int index_bounds(const gr_buffer *ix, double *lo, double *hi) {
    const gr_init *in = &ix->init;
    switch (in->kind) {
    case GR_INIT_ZIPF: *lo = 0; *hi = floor(in->b) - 1; return 1;
    case GR_INIT_RANDINT: *lo = in->a; *hi = ceil(in->b) - 1; return 1;
    case GR_INIT_CONST: *lo = *hi = in->a; return 1;
    case GR_INIT_ZEROS: *lo = *hi = 0; return 1;
    case GR_INIT_ONES: *lo = *hi = 1; return 1;
    case GR_INIT_IOTA: {
        double last = in->a + in->b * (double)(ix->numel - 1);
        *lo = in->a < last ? in->a : last;
        *hi = in->a < last ? last : in->a;
        return 1;
    }
    default: return 0;
    }
}

/* 1 when no op of the plan writes inputs[from .. to) of op: a kernel may read them before its
 * PDL wait (griddepcontrol.wait), overlapping the previous kernel, without a race. (Device-side
 * initialisation always completes, with a synchronisation, before the first op runs.) */
static int written_by_no_op(const gr_op *op, const gr_plan *plan, int from, int to) {
    for (int i = from; i < to; i++)
        if (gr_in(op, plan, i)->first_write >= 0) return 0;
    return 1;
}

/* The T tables at inputs[first ..] and their T index buffers after them: dtypes, one D, one
 * index shape ([B] or [B, bag]) and dtype, index inits within their tables. Every problem found
 * is reported. Fills D, B and bag. */
static gr_status check_tables(const gr_op *op, const gr_plan *plan, int first, int T, int64_t *D,
                              int64_t *B, int64_t *bag, gr_error *err) {
    const char *kn = op->kernel->name;
    char s1[96], s2[96];
    const gr_buffer *t0 = gr_in(op, plan, first), *i0 = gr_in(op, plan, first + T);
    if (t0->ndim != 2)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": table \"%s\" has shape %s; a table is [rows, D]", kn,
                            t0->name, shp(t0, s1, sizeof(s1)));
    if (i0->ndim < 1 || i0->ndim > 2)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": index buffer \"%s\" has shape %s; it must be [B] or "
                            "[B, bag]",
                            kn, i0->name, shp(i0, s1, sizeof(s1)));
    *D = t0->shape[1];
    *B = i0->shape[0];
    *bag = i0->ndim == 2 ? i0->shape[1] : 1;
    gr_status st = GR_OK;
    for (int t = 0; t < T; t++) {
        const gr_buffer *tab = gr_in(op, plan, first + t), *ix = gr_in(op, plan, first + T + t);
        char role[48];
        snprintf(role, sizeof(role), "inputs[%d] (table %d)", first + t, t);
        if (gr_check_dtype(op, tab, role, fp32_only, err) != GR_OK) st = GR_ERR_INPUT;
        snprintf(role, sizeof(role), "inputs[%d] (indices of table %d)", first + T + t, t);
        if (gr_check_dtype(op, ix, role, index_dtypes, err) != GR_OK) st = GR_ERR_INPUT;
        else if (ix->dtype != i0->dtype)
            st = gr_error_set(err, GR_ERR_INPUT, op->path,
                              "kernel \"%s\": index buffer \"%s\" is %s but \"%s\" is %s; the "
                              "index buffers share one dtype",
                              kn, ix->name, gr_dtype_name(ix->dtype), i0->name,
                              gr_dtype_name(i0->dtype));
        if (tab->ndim != 2 || tab->shape[1] != *D)
            st = gr_error_set(err, GR_ERR_INPUT, op->path,
                              "kernel \"%s\": table \"%s\" has shape %s; tables are [rows, D] with "
                              "one D (table \"%s\" has D = %lld)",
                              kn, tab->name, shp(tab, s1, sizeof(s1)), t0->name, (long long)*D);
        int64_t ibag = ix->ndim == 2 ? ix->shape[1] : 1;
        if (ix->ndim < 1 || ix->ndim > 2 || ix->shape[0] != *B || ibag != *bag)
            st = gr_error_set(err, GR_ERR_INPUT, op->path,
                              "kernel \"%s\": index buffer \"%s\" has shape %s; every index buffer "
                              "has the shape of \"%s\" %s ([B] or [B, bag])",
                              kn, ix->name, shp(ix, s1, sizeof(s1)), i0->name,
                              shp(i0, s2, sizeof(s2)));
        double lo, hi;
        if (tab->ndim == 2 && index_bounds(ix, &lo, &hi) && (lo < 0 || hi >= (double)tab->shape[0]))
            st = gr_error_set(err, GR_ERR_INPUT, op->path,
                              "kernel \"%s\": index buffer \"%s\" holds rows %.0f..%.0f but table "
                              "\"%s\" has %lld rows (0..%lld); make the init's range at most the "
                              "table's rows, e.g. \"range\": \"min(card_{t}, rows_cap)\"",
                              kn, ix->name, lo, hi, tab->name, (long long)tab->shape[0],
                              (long long)tab->shape[0] - 1);
    }
    return st;
}

static gr_status check_embedding(gr_op *op, const gr_plan *plan, gr_error *err) {
    const char *kn = op->kernel->name;
    int tbe = !strcmp(kn, "embedding_bag_tbe");
    char s1[96];
    if (op->ninputs % 2 != 0)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": inputs are the T tables, then their T index buffers "
                            "(2 x T inputs); got %d inputs",
                            kn, op->ninputs);
    int T = op->ninputs / 2;
    const gr_buffer *Y = gr_out(op, plan, 0), *i0 = gr_in(op, plan, T);
    GR_TRY(gr_check_dtype(op, Y, "outputs[0]", fp32_only, err));
    int64_t D, B, bag;
    gr_status st = check_tables(op, plan, 0, T, &D, &B, &bag, err);
    if (st != GR_OK) return st;
    int shape_ok = tbe ? (Y->numel == B * T * D && Y->shape[0] == B &&
                          ((Y->ndim == 3 && Y->shape[1] == T) || (Y->ndim == 2 && Y->shape[1] == T * D)))
                       : (Y->numel == B * D && Y->shape[0] == B && Y->shape[Y->ndim - 1] == D);
    if (!shape_ok) {
        if (tbe)
            return gr_error_set(err, GR_ERR_INPUT, op->path,
                                "kernel \"%s\": outputs[0] \"%s\" has shape %s; %d tables of D = "
                                "%lld looked up for B = %lld rows give [%lld, %d, %lld]",
                                kn, Y->name, shp(Y, s1, sizeof(s1)), T, (long long)D, (long long)B,
                                (long long)B, T, (long long)D);
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": outputs[0] \"%s\" has shape %s; a table of D = %lld "
                            "looked up for B = %lld rows gives [%lld, %lld]",
                            kn, Y->name, shp(Y, s1, sizeof(s1)), (long long)D, (long long)B,
                            (long long)B, (long long)D);
    }
    if (B * T * D > ((int64_t)1 << 40))
        return gr_error_set(err, GR_ERR_INPUT, op->path, "kernel \"%s\": output too large", kn);
    int vec = D % 4 == 0;
    const char *pool = gr_op_attr_str(op, "pooling", "sum");
    op->ip[GR_EMB_B] = B;
    op->ip[GR_EMB_T] = T;
    op->ip[GR_EMB_D] = D;
    op->ip[GR_EMB_BAG] = bag;
    op->ip[GR_EMB_IDX64] = i0->dtype == GR_INT64;
    op->ip[GR_EMB_VEC] = vec;
    op->ip[GR_EMB_MEAN] = !strcmp(pool, "mean");
    op->ip[GR_EMB_PRE] = written_by_no_op(op, plan, 0, 2 * T);
    op->fp[0] = op->ip[GR_EMB_MEAN] ? 1.0 / (double)bag : 1.0;
    /* one thread per 16-byte piece of an output row: D = 16 is 4 threads per (row, table) */
    int64_t work = B * T * (vec ? D / 4 : D);
    gr_grid_stride(op, plan, work, 128, 1, 16);
    /* Only the looked-up rows move, not the tables: B x T x bag rows of D floats, plus the
     * indices. (An upper bound: hot Zipf rows hit in L2.) */
    op->bytes_read = (double)i0->bytes * T + (double)(B * T * bag * D) * 4.0;
    op->bytes_written = (double)Y->bytes;
    op->flops = (double)(B * T * bag * D);
    op->launches = 1;
    return GR_OK;
}

/* The pooled bag of batch row b of one table, rounded to fp32 as the device stores it. Rows
 * outside [0, rows) are skipped, as on the device. */
static void ref_pool(const float *tab, const void *ix, int idx64, int64_t rows, int64_t D,
                     int64_t bag, int64_t b, double scale, float *out) {
    for (int64_t k = 0; k < D; k++) {
        double s = 0;
        for (int64_t j = 0; j < bag; j++) {
            int64_t r =
                idx64 ? ((const int64_t *)ix)[b * bag + j] : ((const int32_t *)ix)[b * bag + j];
            if (r < 0 || r >= rows) continue;
            s += tab[r * D + k];
        }
        out[k] = (float)(s * scale);
    }
}

static gr_status ref_embedding(const gr_op *op, const gr_plan *plan, void *const *host,
                               gr_error *err) {
    (void)err;
    int64_t B = op->ip[GR_EMB_B], T = op->ip[GR_EMB_T], D = op->ip[GR_EMB_D], bag = op->ip[GR_EMB_BAG];
    float *y = host[op->outputs[0]];
    for (int64_t t = 0; t < T; t++) {
        int64_t rows = gr_in(op, plan, (int)t)->shape[0];
        for (int64_t b = 0; b < B; b++)
            ref_pool(host[op->inputs[t]], host[op->inputs[T + t]], (int)op->ip[GR_EMB_IDX64], rows,
                     D, bag, b, op->fp[0], y + (b * T + t) * D);
    }
    return GR_OK;
}

/* ---------- bias_add, sigmoid ---------- */

static gr_status check_bias_add(gr_op *op, const gr_plan *plan, gr_error *err) {
    const gr_buffer *X = gr_in(op, plan, 0), *b = gr_in(op, plan, 1), *Y = gr_out(op, plan, 0);
    char s1[96], s2[96];
    GR_TRY(gr_check_dtype(op, X, "inputs[0] (x)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, b, "inputs[1] (bias)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, Y, "outputs[0]", fp32_only, err));
    int64_t N = X->shape[X->ndim - 1];
    if (b->numel != N)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"bias_add\": bias \"%s\" has shape %s; x \"%s\" %s needs [%lld] "
                            "(its last dim)",
                            b->name, shp(b, s1, sizeof(s1)), X->name, shp(X, s2, sizeof(s2)),
                            (long long)N);
    if (Y->numel != X->numel)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"bias_add\": outputs[0] \"%s\" has shape %s; it must have x's "
                            "shape %s",
                            Y->name, shp(Y, s1, sizeof(s1)), shp(X, s2, sizeof(s2)));
    op->ip[GR_BIAS_N_TOTAL] = X->numel;
    op->ip[GR_BIAS_N] = N;
    gr_grid_stride(op, plan, X->numel, 256, 1, 8);
    op->bytes_read = (double)X->bytes + (double)b->bytes;
    op->bytes_written = (double)Y->bytes;
    op->flops = (double)X->numel;
    op->launches = 1;
    return GR_OK;
}

static gr_status ref_bias_add(const gr_op *op, const gr_plan *plan, void *const *host, gr_error *err) {
    (void)plan;
    (void)err;
    const float *x = host[op->inputs[0]], *b = host[op->inputs[1]];
    float *y = host[op->outputs[0]];
    int64_t n = op->ip[GR_BIAS_N_TOTAL], N = op->ip[GR_BIAS_N];
    for (int64_t i = 0; i < n; i++) y[i] = x[i] + b[i % N]; /* one fp32 add, as on the device */
    return GR_OK;
}

static gr_status check_sigmoid(gr_op *op, const gr_plan *plan, gr_error *err) {
    GR_TRY(gr_check_elementwise(op, plan, err));
    GR_TRY(gr_check_dtype(op, gr_in(op, plan, 0), "inputs[0]", fp32_only, err));
    gr_grid_stride(op, plan, op->ip[0], 256, 1, 8);
    op->bytes_read = gr_bytes_in(op, plan);
    op->bytes_written = gr_bytes_out(op, plan);
    op->flops = 4.0 * (double)op->ip[0]; /* exp, add, div */
    op->launches = 1;
    return GR_OK;
}

static gr_status ref_sigmoid(const gr_op *op, const gr_plan *plan, void *const *host, gr_error *err) {
    (void)plan;
    (void)err;
    const float *x = host[op->inputs[0]];
    float *y = host[op->outputs[0]];
    for (int64_t i = 0; i < op->ip[0]; i++) y[i] = (float)(1.0 / (1.0 + exp(-(double)x[i])));
    return GR_OK;
}

/* ---------- concat, tril_gather ---------- */

static gr_status check_concat(gr_op *op, const gr_plan *plan, gr_error *err) {
    const gr_buffer *Y = gr_out(op, plan, 0);
    char s1[96], s2[96];
    GR_TRY(gr_check_dtype(op, Y, "outputs[0]", fp32_only, err));
    int64_t R = Y->shape[0], sum = 0, maxc = 0;
    gr_status st = GR_OK;
    for (int i = 0; i < op->ninputs; i++) {
        const gr_buffer *X = gr_in(op, plan, i);
        char role[32];
        snprintf(role, sizeof(role), "inputs[%d]", i);
        if (gr_check_dtype(op, X, role, fp32_only, err) != GR_OK) st = GR_ERR_INPUT;
        if (X->shape[0] != R) {
            st = gr_error_set(err, GR_ERR_INPUT, op->path,
                              "kernel \"concat\": %s \"%s\" has shape %s but outputs[0] \"%s\" has "
                              "%s; inputs are joined along dim 1, so every first dim must be %lld",
                              role, X->name, shp(X, s1, sizeof(s1)), Y->name,
                              shp(Y, s2, sizeof(s2)), (long long)R);
            continue;
        }
        int64_t c = X->numel / R;
        sum += c;
        if (c > maxc) maxc = c;
    }
    if (st != GR_OK) return st;
    if (sum * R != Y->numel)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"concat\": outputs[0] \"%s\" has shape %s (%lld per row) but "
                            "the inputs give %lld per row; it must be [%lld, %lld] or the same "
                            "count split over more dims",
                            Y->name, shp(Y, s1, sizeof(s1)), (long long)(Y->numel / R),
                            (long long)sum, (long long)R, (long long)sum);
    op->ip[GR_CAT_ROWS] = R;
    op->ip[GR_CAT_COLS] = sum;
    op->ip[GR_CAT_MAXCOLS] = maxc;
    gr_grid_stride(op, plan, R * maxc, 256, 1, 4);
    op->grid[1] = (unsigned)op->ninputs; /* one grid row per input */
    op->bytes_read = gr_bytes_in(op, plan);
    op->bytes_written = (double)Y->bytes;
    op->flops = 0;
    op->launches = 1;
    return GR_OK;
}

static gr_status ref_concat(const gr_op *op, const gr_plan *plan, void *const *host, gr_error *err) {
    (void)err;
    int64_t R = op->ip[GR_CAT_ROWS], C = op->ip[GR_CAT_COLS], off = 0;
    float *y = host[op->outputs[0]];
    for (int i = 0; i < op->ninputs; i++) {
        const float *x = host[op->inputs[i]];
        int64_t c = gr_in(op, plan, i)->numel / R;
        for (int64_t r = 0; r < R; r++) memcpy(y + r * C + off, x + r * c, (size_t)c * sizeof(float));
        off += c;
    }
    return GR_OK;
}

static gr_status check_tril(gr_op *op, const gr_plan *plan, gr_error *err) {
    const gr_buffer *Z = gr_in(op, plan, 0), *Y = gr_out(op, plan, 0);
    char s1[96], s2[96];
    GR_TRY(gr_check_dtype(op, Z, "inputs[0]", fp32_only, err));
    GR_TRY(gr_check_dtype(op, Y, "outputs[0]", fp32_only, err));
    if (Z->ndim != 3 || Z->shape[1] != Z->shape[2] || Z->shape[1] < 2)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"tril_gather\": inputs[0] \"%s\" has shape %s; it must be "
                            "[B, n, n] with n >= 2",
                            Z->name, shp(Z, s1, sizeof(s1)));
    int64_t B = Z->shape[0], n = Z->shape[1], P = n * (n - 1) / 2;
    if (Y->numel != B * P || Y->shape[0] != B)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"tril_gather\": outputs[0] \"%s\" has shape %s; the strict "
                            "lower triangle of %s is [%lld, %lld]",
                            Y->name, shp(Y, s1, sizeof(s1)), shp(Z, s2, sizeof(s2)), (long long)B,
                            (long long)P);
    op->ip[GR_TRIL_B] = B;
    op->ip[GR_TRIL_N] = n;
    op->ip[GR_TRIL_P] = P;
    gr_grid_stride(op, plan, B * P, 256, 1, 8);
    op->bytes_read = (double)(B * P) * 4.0; /* the elements gathered (whole 32 B sectors in truth) */
    op->bytes_written = (double)Y->bytes;
    op->flops = 0;
    op->launches = 1;
    return GR_OK;
}

static gr_status ref_tril(const gr_op *op, const gr_plan *plan, void *const *host, gr_error *err) {
    (void)plan;
    (void)err;
    int64_t B = op->ip[GR_TRIL_B], n = op->ip[GR_TRIL_N], P = op->ip[GR_TRIL_P];
    const float *z = host[op->inputs[0]];
    float *y = host[op->outputs[0]];
    for (int64_t p = 0; p < P; p++) {
        int i, j;
        gr_tril_pair(p, &i, &j);
        for (int64_t b = 0; b < B; b++) y[b * P + p] = z[(b * n + i) * n + j];
    }
    return GR_OK;
}

/* ---------- dot_interaction ---------- */

/* Rows per block of the interaction kernels: the op's attr rows_per_block (1, 2, 4), or with
 * "auto" the most of 4, 2, 1 that still give half of GR_IX_BLOCKS_PER_SM blocks per SM (B = 2048
 * on 132 SMs: 2 rows, 1024 blocks, all resident; B = 128: one row, 128 blocks); fewer where 48 KB
 * of shared memory (no opt-in) does not hold them; 0 when one row does not fit. Measured at B =
 * 2048 (fused_tf32x3 auto_wg --pdl, one run, run 53): 2 rows 67.46 us, 4 rows 69.34-69.65, 1 row
 * 74.54 (run 52). */
static int ix_rows_per_block(const gr_op *op, int64_t B, int64_t T, int64_t D, int sm_count) {
    const char *attr = gr_op_attr_str(op, "rows_per_block", "auto");
    const int named = strcmp(attr, "auto") != 0;
    int rb = named ? atoi(attr) : GR_IX_MAX_RB;
    if (!named) {
        int64_t want = (int64_t)(GR_IX_BLOCKS_PER_SM / 2) * (sm_count > 0 ? sm_count : 1);
        while (rb > 1 && cdiv64(B, rb) < want)
            rb /= 2;
        while (rb > 1 && gr_ix_floats(rb, T, D) * (int64_t)sizeof(float) > 48 * 1024)
            rb /= 2;
    }
    return gr_ix_floats(rb, T, D) * (int64_t)sizeof(float) > 48 * 1024 ? 0 : rb;
}

/* The error of an interaction op whose rows do not fit 48 KB of shared memory: the attr's rows
 * per block, or one row. */
static gr_status ix_too_big(const gr_op *op, int64_t T, int64_t D, gr_error *err) {
    const char *attr = gr_op_attr_str(op, "rows_per_block", "auto");
    if (strcmp(attr, "auto") != 0)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": rows_per_block %s needs %zu bytes of shared memory "
                            "per block (%lld vectors of %lld floats and the output row per batch "
                            "row); at most 48 KB: use a smaller rows_per_block or \"auto\"",
                            op->kernel->name, attr,
                            (size_t)gr_ix_floats(atoi(attr), T, D) * sizeof(float),
                            (long long)(T + 1), (long long)D);
    return gr_error_set(err, GR_ERR_INPUT, op->path,
                        "kernel \"%s\": %lld vectors of %lld floats and the output row need %zu "
                        "bytes of shared memory for one batch row; at most 48 KB (fewer tables or "
                        "a smaller D)",
                        op->kernel->name, (long long)(T + 1), (long long)D,
                        (size_t)gr_ix_floats(1, T, D) * sizeof(float));
}

/* Launch dims of an interaction kernel: rb rows per block, at most GR_IX_BLOCKS_PER_SM blocks
 * per SM, grid-stride beyond. */
static void ix_launch_dims(gr_op *op, const gr_plan *plan, int64_t B, int64_t T, int64_t D,
                           int rb) {
    int64_t groups = cdiv64(B, rb), cap = (int64_t)plan->target.sm_count * GR_IX_BLOCKS_PER_SM;
    if (cap < 1) cap = 1;
    op->grid[0] = (unsigned)(groups < 1 ? 1 : groups < cap ? groups : cap);
    op->grid[1] = op->grid[2] = 1;
    op->block[0] = GR_IX_THREADS;
    op->block[1] = op->block[2] = 1;
    op->smem = (size_t)gr_ix_floats(rb, T, D) * sizeof(float);
}

static gr_status check_interaction(gr_op *op, const gr_plan *plan, gr_error *err) {
    const gr_buffer *X = gr_in(op, plan, 0), *E = gr_in(op, plan, 1), *Y = gr_out(op, plan, 0);
    char s1[96], s2[96];
    GR_TRY(gr_check_dtype(op, X, "inputs[0] (x)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, E, "inputs[1] (E)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, Y, "outputs[0]", fp32_only, err));
    if (X->ndim != 2)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"dot_interaction\": x \"%s\" has shape %s; it must be [B, D] "
                            "(the bottom MLP's output)",
                            X->name, shp(X, s1, sizeof(s1)));
    int64_t B = X->shape[0], D = X->shape[1];
    if (E->ndim != 3 || E->shape[0] != B || E->shape[2] != D)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"dot_interaction\": E \"%s\" has shape %s; with x %s it must be "
                            "[%lld, T, %lld] (the T embeddings of each row)",
                            E->name, shp(E, s1, sizeof(s1)), shp(X, s2, sizeof(s2)), (long long)B,
                            (long long)D);
    int64_t T = E->shape[1], F = T + 1, P = F * T / 2;
    if (Y->ndim != 2 || Y->shape[0] != B || Y->shape[1] != D + P)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"dot_interaction\": outputs[0] \"%s\" has shape %s; x and %lld "
                            "embeddings give [%lld, %lld] (%lld of x, then %lld pairwise dots)",
                            Y->name, shp(Y, s1, sizeof(s1)), (long long)T, (long long)B,
                            (long long)(D + P), (long long)D, (long long)P);
    int rb = ix_rows_per_block(op, B, T, D, plan->target.sm_count);
    if (!rb) return ix_too_big(op, T, D, err);
    op->ip[GR_INT_B] = B;
    op->ip[GR_INT_T] = T;
    op->ip[GR_INT_D] = D;
    op->ip[GR_INT_P] = P;
    op->ip[GR_INT_RB] = rb;
    snprintf(op->form, sizeof(op->form), "rows_per_block %d", rb);
    ix_launch_dims(op, plan, B, T, D, rb);
    op->bytes_read = (double)X->bytes + (double)E->bytes;
    op->bytes_written = (double)Y->bytes;
    op->flops = 2.0 * (double)(B * P * D);
    op->launches = 1;
    return GR_OK;
}

/* One output row: x (D floats), then the dots of the pairs (i, j), j < i, of the vectors
 * (x, e_0 .. e_{T-1}) row by row; e is [T, D]. */
static void ref_interaction_row(const float *xb, const float *eb, int64_t D, int64_t P,
                                float *out) {
    for (int64_t k = 0; k < D; k++)
        out[k] = xb[k];
    for (int64_t p = 0; p < P; p++) {
        int i, j;
        gr_tril_pair(p, &i, &j);
        const float *fi = eb + (int64_t)(i - 1) * D; /* i >= 1: an embedding */
        const float *fj = j == 0 ? xb : eb + (int64_t)(j - 1) * D;
        double s = 0;
        for (int64_t k = 0; k < D; k++)
            s += (double)fi[k] * (double)fj[k];
        out[D + p] = (float)s;
    }
}

static gr_status ref_interaction(const gr_op *op, const gr_plan *plan, void *const *host,
                                 gr_error *err) {
    (void)plan;
    (void)err;
    int64_t B = op->ip[GR_INT_B], T = op->ip[GR_INT_T], D = op->ip[GR_INT_D], P = op->ip[GR_INT_P];
    const float *x = host[op->inputs[0]], *E = host[op->inputs[1]];
    float *y = host[op->outputs[0]];
    for (int64_t b = 0; b < B; b++)
        ref_interaction_row(x + b * D, E + b * T * D, D, P, y + b * (D + P));
    return GR_OK;
}

/* ---------- embedding_interaction: the table-batched gather fused into the interaction ----------
 */

static gr_status check_emb_interaction(gr_op *op, const gr_plan *plan, gr_error *err) {
    const char *kn = op->kernel->name;
    char s1[96];
    if (op->ninputs < 3 || op->ninputs % 2 != 1)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": inputs are x [B, D], then the T tables, then their T "
                            "index buffers (1 + 2 x T inputs); got %d inputs",
                            kn, op->ninputs);
    int T = (op->ninputs - 1) / 2;
    const gr_buffer *X = gr_in(op, plan, 0), *Y = gr_out(op, plan, 0), *i0 = gr_in(op, plan, 1 + T);
    GR_TRY(gr_check_dtype(op, X, "inputs[0] (x)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, Y, "outputs[0]", fp32_only, err));
    int64_t D, B, bag;
    GR_TRY(check_tables(op, plan, 1, T, &D, &B, &bag, err));
    if (X->ndim != 2 || X->shape[0] != B || X->shape[1] != D)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": x \"%s\" has shape %s; with tables of D = %lld and "
                            "indices for B = %lld rows it must be [%lld, %lld] (the bottom MLP's "
                            "output)",
                            kn, X->name, shp(X, s1, sizeof(s1)), (long long)D, (long long)B,
                            (long long)B, (long long)D);
    int64_t F = T + 1, P = F * T / 2;
    if (Y->ndim != 2 || Y->shape[0] != B || Y->shape[1] != D + P)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": outputs[0] \"%s\" has shape %s; x and %d embeddings "
                            "give [%lld, %lld] (%lld of x, then %lld pairwise dots)",
                            kn, Y->name, shp(Y, s1, sizeof(s1)), T, (long long)B,
                            (long long)(D + P), (long long)D, (long long)P);
    int rb = ix_rows_per_block(op, B, T, D, plan->target.sm_count);
    if (!rb) return ix_too_big(op, T, D, err);
    int mean = !strcmp(gr_op_attr_str(op, "pooling", "sum"), "mean");
    op->ip[GR_EI_B] = B;
    op->ip[GR_EI_T] = T;
    op->ip[GR_EI_D] = D;
    op->ip[GR_EI_BAG] = bag;
    op->ip[GR_EI_IDX64] = i0->dtype == GR_INT64;
    op->ip[GR_EI_VEC] = D % 4 == 0;
    op->ip[GR_EI_P] = P;
    op->ip[GR_EI_PRE] = written_by_no_op(op, plan, 1, 1 + 2 * T);
    op->ip[GR_EI_RB] = rb;
    snprintf(op->form, sizeof(op->form), "rows_per_block %d", rb);
    op->fp[0] = mean ? 1.0 / (double)bag : 1.0;
    ix_launch_dims(op, plan, B, T, D, rb);
    /* the gathered rows and the indices (not the tables), x; R written: no E round trip */
    op->bytes_read = (double)i0->bytes * T + (double)(B * T * bag * D) * 4.0 + (double)X->bytes;
    op->bytes_written = (double)Y->bytes;
    op->flops = (double)(B * T * bag * D) + 2.0 * (double)(B * P * D);
    op->launches = 1;
    return GR_OK;
}

static gr_status ref_emb_interaction(const gr_op *op, const gr_plan *plan, void *const *host,
                                     gr_error *err) {
    int64_t B = op->ip[GR_EI_B], T = op->ip[GR_EI_T], D = op->ip[GR_EI_D], P = op->ip[GR_EI_P];
    const float *x = host[op->inputs[0]];
    float *y = host[op->outputs[0]];
    float *e = malloc((size_t)(T * D) * sizeof(float));
    if (!e) return gr_error_set(err, GR_ERR_NOMEM, op->path, "out of host memory");
    for (int64_t b = 0; b < B; b++) {
        /* the same fp32 pooled vectors as embedding_bag_tbe's reference, then the same dots */
        for (int64_t t = 0; t < T; t++)
            ref_pool(host[op->inputs[1 + t]], host[op->inputs[1 + T + t]], (int)op->ip[GR_EI_IDX64],
                     gr_in(op, plan, 1 + (int)t)->shape[0], D, op->ip[GR_EI_BAG], b, op->fp[0],
                     e + t * D);
        ref_interaction_row(x + b * D, e, D, P, y + b * (D + P));
    }
    free(e);
    return GR_OK;
}

/* ---------- linear_act ---------- */

static int parse_act(const char *s) {
    if (!strcmp(s, "relu")) return GR_DLRM_ACT_RELU;
    if (!strcmp(s, "sigmoid")) return GR_DLRM_ACT_SIGMOID;
    return GR_DLRM_ACT_NONE;
}

/* The SIMT kernel wins while the batch is small: a library GEMM's large tiles leave most of
 * the 132 SMs idle and its launch path costs more than the math (B = 128: 64 KFLOP per
 * output column block). Past that, measured on the H200 at B = 2048 (traced, us per layer;
 * simt / tiled / lt fp32 / lt tf32): layers of fewer than GR_LIN_AUTO_MIN_TILED outputs stay
 * on the SIMT kernel, whose 128-wide K chunks suit these latency-bound layers (N = 64: 4.5 /
 * 5.4 / 7.7 / 5.0; N = 16: 1.95 / 2.5 / 6.5 / 3.3; N = 1 sigmoid: 2.4 / 2.9 / - / -); wider
 * ones take the tiled kernel where K fits one stage (K = 13: 10.9 / 4.3 / 4.9 / 6.9) and, in
 * fp32, where K % 4 == 0 (2048 x 256 x 512: 23.0 / 19.4 / 19.9); cuBLASLt takes the rest:
 * K % 4 != 0, whose rows need 4-byte copies (K = 367: 40.1 / 33.4 / 21.8-25.3 / 17.2), and
 * everything with math tf32 (TF32 tensor cores: 7.8 us for 2048 x 256 x 512). */
#define GR_LIN_AUTO_MAX_ROWS 256
#define GR_LIN_AUTO_MIN_TILED 128
/* Above GR_LIN_AUTO_MAX_ROWS rows, N <= GR_LIN_RD_AUTO_N takes rowdot: top.2 of dlrm_small (2048
 * x 1 x 256) 2.30-2.34 us in the graph against 2.75 on the SIMT kernel (runs 50-52). rowdot at
 * larger N is taken only when named: measured slower than what auto keeps, bot.3 (2048 x 16 x 64)
 * 5.31 us on rowdot against 1.98 SIMT (run 52). */
#define GR_LIN_RD_AUTO_N 4

/* The SIMT tile width: the tiles of one column block land ceil(tiles / SMs) to an SM, each
 * costing ~BN (32 rows x BN columns x K FMAs), so pick the BN with the least work on the
 * busiest SM, the wider tile on a tie (wider tiles re-read x from L2 fewer times). B = 128:
 * N = 512 takes 16 (128 tiles), N = 256 takes 8 (128 tiles instead of 64); B = 2048: 32. */
static int linear_bn(int64_t M, int64_t N, int sm_count) {
    static const int widths[] = {32, 16, 8};
    int best = 32;
    int64_t best_cost = -1;
    for (int i = 0; i < 3; i++) {
        int64_t tiles = cdiv64(N, widths[i]) * cdiv64(M, GR_LIN_BM);
        int64_t cost = cdiv64(tiles, sm_count > 0 ? sm_count : 1) * widths[i];
        if (best_cost < 0 || cost < best_cost) {
            best_cost = cost;
            best = widths[i];
        }
    }
    return best;
}

/* The tiled kernel's configuration: the largest tile (64 x 64, then 32 x 32) whose blocks
 * reach 3/4 of the SMs (with fewer, most SMs would idle while each block does 4x the work of a
 * smaller tile's), else 16 x 16 (16 groups splitting K, for small N or small M). A 64 x 64
 * tile with K % 4 == 0 and more than one 64-wide stage of K takes 8 x 4 outputs per thread in
 * two groups (fewer shared loads per FMA: 2048 x 256 x 512 in ~19.7 us against 23.0 with
 * 4 x 4); K <= 64 (one stage) and K % 4 != 0 keep 4 x 4 in one group (K = 13: 4.9 us against
 * 10.9). M = 2048: N = 512 and 256 take 64 x 64 (256 and 128 blocks), N = 64 32 x 32 (128),
 * N = 16 and 1 16 x 16 (128). */
static int tiled_config(int64_t M, int64_t N, int64_t K, int sm_count) {
    int64_t enough = (int64_t)(sm_count > 0 ? sm_count : 1) * 3 / 4;
    if (cdiv64(M, 64) * cdiv64(N, 64) >= enough)
        return K % 4 == 0 && K > 64 ? GR_LIN_T64W : GR_LIN_T64;
    if (cdiv64(M, 32) * cdiv64(N, 32) >= enough) return GR_LIN_T32;
    return GR_LIN_T16;
}

/* The tensor-core kernel's configuration: the largest tile (64 x 64, 64 x 32, 32 x 32) whose
 * blocks fill every SM at least once (a block is 4 warps: one per SM leaves each scheduler a
 * single warp to hide its shared-memory and MMA latencies). M = 2048: N = 512 takes 64 x 64
 * (256 blocks), N = 256 64 x 32 (256), N = 64 and below 32 x 32. Four stages, a K split over a
 * cluster of two blocks and 8-warp blocks were no faster (runs 24, 27; docs/removed_designs.md). */
static int mma_config(int64_t M, int64_t N, int sm_count) {
    int64_t enough = sm_count > 0 ? sm_count : 1;
    if (cdiv64(M, 64) * cdiv64(N, 64) >= enough) return GR_LIN_C64;
    if (cdiv64(M, 64) * cdiv64(N, 32) >= enough) return GR_LIN_C6432;
    return GR_LIN_C32;
}

/* The wg kernel is built for sm_90a, whose code runs on compute capability 9.0 only. */
static int wg_ok(const gr_target *t) {
    return t->cc_major == 9 && t->cc_minor == 0;
}

/* The wg kernel's configuration: the tall bulk form's 128 x 64 tiles (w64b2) where its blocks reach
 * 3/4 of the SMs, else 64 x 128 tiles where those do, else 64 x 64. The bulk forms need rows that
 * fold into 16-byte tensor-map rows (gr_lin_wgb_ok: M and N multiples of the row fold, 1 for
 * K % 4 == 0, 4 for odd K); where they do not, the tiles run in the shared-memory forms (w128,
 * w64). M = 2048: N = 512 takes w64b2 (128 blocks; top.0, K = 367, rows folded in fours), N = 256
 * w64b (128 blocks instead of 64). Each the fastest measured (B = 2048, fused_tf32x3
 * x3_impl=auto_wg --pdl: top.0 in w64b2 57.27-57.29 us against w128's 64.23-64.45, run 65; w64b on
 * bot.1 / top.1 11.0 us per op against 13.0 in the register-A form and 14.1-14.2 in w64, runs
 * 45-60; top.0 in w64b's two waves 24.54 against w128's 22.88, run 64). */
static int wg_config(int64_t M, int64_t N, int64_t K, int sm_count) {
    const int bulk = gr_lin_wgb_ok(M, N, K);
    int64_t enough = (int64_t)(sm_count > 0 ? sm_count : 1) * 3 / 4;
    if (bulk && cdiv64(M, 128) * cdiv64(N, 64) >= enough && cdiv64(N, 64) <= 65535)
        return GR_LIN_W64B2;
    if (cdiv64(M, GR_LIN_WG_BM) * cdiv64(N, 128) >= enough) return GR_LIN_W128;
    return bulk ? GR_LIN_W64B : GR_LIN_W64;
}

/* The attr config of linear_act names one tile configuration of the tiled, tc or wg kernel (or
 * "auto", the check's choice above). Its choices, in this order: */
static const char *const config_choices[] = {"auto", "t64",  "t64w", "t32", "t16", "c64", "c6432",
                                             "c32",  "w64",  "w128", "w64b", "w64b2", NULL};
#define GR_LIN_CFG_T0 1 /* first tiled configuration in config_choices (GR_LIN_T64 ...) */
#define GR_LIN_CFG_C0 5 /* first tc configuration (GR_LIN_C64 ...) */
#define GR_LIN_CFG_W0 8 /* first wg configuration (GR_LIN_W64 ...) */

/* The impl a config choice belongs to and its index there; impl -1 for "auto". */
static int config_of(const char *name, int *cfg) {
    for (int c = 1; config_choices[c]; c++)
        if (!strcmp(name, config_choices[c])) {
            if (c >= GR_LIN_CFG_W0) return *cfg = c - GR_LIN_CFG_W0, GR_LINEAR_WG;
            if (c >= GR_LIN_CFG_C0) return *cfg = c - GR_LIN_CFG_C0, GR_LINEAR_TC;
            return *cfg = c - GR_LIN_CFG_T0, GR_LINEAR_TILED;
        }
    *cfg = -1;
    return -1;
}

static const char *const impl_names[] = {"simt", "lt", "tiled", "tc", "wg", "rowdot"};

/* op->form: the implementation, its configuration (the names the attr config takes) and the
 * arithmetic it runs, e.g. "wg w64 tf32x3":
 * simt and tiled are fp32 FMAs whatever the math asked for (both are fp32-accurate, which is what
 * tf32x3 asks), cuBLASLt is TF32 only for math tf32. */
static void linear_form(gr_op *op, int impl, int cfg, int math) {
    static const char *const maths[] = {"fp32", "tf32", "tf32x3"};
    static const char *const tnames[GR_LIN_NTCFG] = {"t64", "t64w", "t32", "t16"};
    static const char *const cnames[GR_LIN_NCCFG] = GR_LIN_CNAMES;
    static const char *const wnames[GR_LIN_NWCFG] = GR_LIN_WNAMES;
    const char *c = impl == GR_LINEAR_TILED ? tnames[cfg]
                    : impl == GR_LINEAR_TC  ? cnames[cfg]
                    : impl == GR_LINEAR_WG  ? wnames[cfg]
                                            : NULL;
    const int runs = impl == GR_LINEAR_SIMT || impl == GR_LINEAR_TILED || impl == GR_LINEAR_RD
                         ? GR_MATH_FP32
                     : impl == GR_LINEAR_LT && math != GR_MATH_TF32 ? GR_MATH_FP32
                                                                    : math;
    snprintf(op->form, sizeof(op->form), "%s%s%s %s", impl_names[impl], c ? " " : "", c ? c : "",
             maths[runs]);
}

/* A named config must belong to the impl the op runs (its attr impl, or auto's choice), and a
 * bulk wg configuration needs rows that fold into tensor-map rows. Errors name the op, the
 * config and the choices that fit. */
static gr_status check_config(const gr_op *op, const char *cfg_s, int cfg_impl, int impl, int math,
                              int64_t M, int64_t N, int64_t K, gr_error *err) {
    static const char *const maths[] = {"fp32", "tf32", "tf32x3"};
    if (cfg_impl < 0) return GR_OK;
    if (cfg_impl != impl) {
        char fits[96] = "";
        int c0 = impl == GR_LINEAR_TILED ? GR_LIN_CFG_T0
                 : impl == GR_LINEAR_TC  ? GR_LIN_CFG_C0
                 : impl == GR_LINEAR_WG  ? GR_LIN_CFG_W0
                                         : 0;
        int c1 = impl == GR_LINEAR_TILED ? GR_LIN_CFG_C0
                 : impl == GR_LINEAR_TC  ? GR_LIN_CFG_W0
                 : impl == GR_LINEAR_WG  ? GR_LIN_CFG_W0 + GR_LIN_NWCFG
                                         : 0;
        size_t o = 0;
        for (int c = c0; c < c1 && o < sizeof(fits); c++)
            o += (size_t)snprintf(fits + o, sizeof(fits) - o, "\"%s\", ", config_choices[c]);
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": config \"%s\" is a configuration of impl "
                            "\"%s\", but this op runs impl \"%s\" (math %s, %lld x %lld x %lld); "
                            "use config %s\"auto\", or set impl \"%s\"",
                            cfg_s, impl_names[cfg_impl], impl_names[impl], maths[math],
                            (long long)M, (long long)N, (long long)K, fits, impl_names[cfg_impl]);
    }
    if (impl == GR_LINEAR_WG && (!strcmp(cfg_s, "w64b") || !strcmp(cfg_s, "w64b2")) &&
        !gr_lin_wgb_ok(M, N, K))
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": config \"%s\" copies rows as tensor-map rows "
                            "of 16 bytes, folding %d rows of K = %lld into one, so M and N must be "
                            "multiples of %d (here %lld x %lld); use config \"%s\" or \"auto\"",
                            cfg_s, gr_lin_wgb_fold(K), (long long)K, gr_lin_wgb_fold(K),
                            (long long)M, (long long)N, !strcmp(cfg_s, "w64b") ? "w64" : "w128");
    return GR_OK;
}

static gr_status check_linear(gr_op *op, const gr_plan *plan, gr_error *err) {
    const gr_buffer *X = gr_in(op, plan, 0), *W = gr_in(op, plan, 1), *b = gr_in(op, plan, 2),
                    *Y = gr_out(op, plan, 0);
    char s1[96], s2[96];
    GR_TRY(gr_check_dtype(op, X, "inputs[0] (x)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, W, "inputs[1] (W)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, b, "inputs[2] (bias)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, Y, "outputs[0]", fp32_only, err));
    if (W->ndim != 2)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": W \"%s\" has shape %s; a Linear weight is "
                            "[out, in]",
                            W->name, shp(W, s1, sizeof(s1)));
    int64_t N = W->shape[0], K = W->shape[1];
    if (X->shape[X->ndim - 1] != K)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": x \"%s\" %s has %lld features but W \"%s\" %s "
                            "takes %lld (W is [out, in])",
                            X->name, shp(X, s1, sizeof(s1)), (long long)X->shape[X->ndim - 1],
                            W->name, shp(W, s2, sizeof(s2)), (long long)K);
    int64_t M = X->numel / K;
    if (b->numel != N)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": bias \"%s\" has shape %s; W %s needs [%lld]",
                            b->name, shp(b, s1, sizeof(s1)), shp(W, s2, sizeof(s2)), (long long)N);
    if (Y->numel != M * N || Y->shape[Y->ndim - 1] != N)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": outputs[0] \"%s\" has shape %s; x %s times W^T "
                            "gives [%lld, %lld]",
                            Y->name, shp(Y, s1, sizeof(s1)), shp(X, s2, sizeof(s2)), (long long)M,
                            (long long)N);
    int act = parse_act(gr_op_attr_str(op, "act", "relu"));
    const char *math_s = gr_op_attr_str(op, "math", "fp32");
    int math = !strcmp(math_s, "tf32")     ? GR_MATH_TF32
               : !strcmp(math_s, "tf32x3") ? GR_MATH_TF32X3
                                           : GR_MATH_FP32;
    const char *impl_s = gr_op_attr_str(op, "impl", "auto");
    int impl;
    if (!strcmp(impl_s, "simt")) impl = GR_LINEAR_SIMT;
    else if (!strcmp(impl_s, "lt")) impl = GR_LINEAR_LT;
    else if (!strcmp(impl_s, "tiled"))
        impl = GR_LINEAR_TILED;
    else if (!strcmp(impl_s, "tc"))
        impl = GR_LINEAR_TC;
    else if (!strcmp(impl_s, "wg"))
        impl = GR_LINEAR_WG;
    else if (!strcmp(impl_s, "rowdot"))
        impl = GR_LINEAR_RD;
    else if (M > GR_LIN_AUTO_MAX_ROWS && N <= GR_LIN_RD_AUTO_N)
        impl = GR_LINEAR_RD;
    else if ((M <= GR_LIN_AUTO_MAX_ROWS || N < GR_LIN_AUTO_MIN_TILED) &&
             cdiv64(M, GR_LIN_BM) <= 65535)
        impl = GR_LINEAR_SIMT;
    /* sigmoid: no cuBLASLt epilogue; K <= 64: one stage, where tiled beats cuBLASLt even
     * with TF32, and the tc kernel's 3 passes (2048 x 512 x 13: 4.3 us against 5.5) */
    else if (act == GR_DLRM_ACT_SIGMOID || K <= 64)
        impl = GR_LINEAR_TILED;
    /* tf32x3 asks for fp32-level accuracy: the tc kernel's 3 passes, except where rows are not
     * 16-byte aligned and cuBLASLt's fp32 kernels (exact fp32 FMAs) are faster than its shifted
     * copies (2048 x 512 x 367: ~22 us against 24.5). The wg kernel (wgmma) is not picked: on the
     * H200 it ties the tc kernel on 2048 x 256 x 512 (14.05-14.2 us against 13.9-14.05) and loses
     * ~1 us to cuBLASLt on 2048 x 512 x 367 (22.6 against 21.7; runs 41-43); it is taken when
     * named, and by auto_wg: auto's choice with wg for tc and lt here on compute capability 9.0
     * (with --pdl the fastest fp32-level dlrm_small step, as every such layer is then a PDL
     * kernel: 72.50 us at B = 2048, run 43) */
    else if (math == GR_MATH_TF32X3)
        impl = !strcmp(impl_s, "auto_wg") && wg_ok(&plan->target) ? GR_LINEAR_WG
               : K % 4 != 0                                       ? GR_LINEAR_LT
                                                                  : GR_LINEAR_TC;
    else if (math == GR_MATH_TF32 || K % 4 != 0)
        impl = GR_LINEAR_LT;
    else
        impl = GR_LINEAR_TILED;
    if (impl == GR_LINEAR_LT && act == GR_DLRM_ACT_SIGMOID)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": impl \"lt\" has no sigmoid epilogue in "
                            "cuBLASLt; use impl \"simt\", \"tiled\", \"tc\" or \"auto\" for act "
                            "\"sigmoid\"");
    if (!strcmp(impl_s, "lt") && math == GR_MATH_TF32X3)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": impl \"lt\" has no math \"tf32x3\" "
                            "(cuBLASLt's TF32 is one pass); use impl \"tc\" or \"auto\", or "
                            "math \"tf32\" or \"fp32\"");
    if (impl == GR_LINEAR_TC && math == GR_MATH_FP32)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": impl \"tc\" runs on TF32 tensor cores; set "
                            "math \"tf32x3\" (fp32-accurate) or \"tf32\", or use impl "
                            "\"tiled\" or \"simt\" for fp32 FMAs");
    if (impl == GR_LINEAR_WG && math == GR_MATH_FP32)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": impl \"wg\" runs on TF32 tensor cores; set "
                            "math \"tf32x3\" (fp32-accurate) or \"tf32\", or use impl "
                            "\"tiled\" or \"simt\" for fp32 FMAs");
    if (impl == GR_LINEAR_RD && N > GR_LIN_RD_MAXN)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": impl \"rowdot\" (a warp per row) takes at "
                            "most %d outputs; W \"%s\" %s has N = %lld: use impl \"auto\", "
                            "\"tiled\" or \"simt\"",
                            GR_LIN_RD_MAXN, W->name, shp(W, s1, sizeof(s1)), (long long)N);
    if (impl == GR_LINEAR_WG && !wg_ok(&plan->target))
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": impl \"wg\" uses sm_90a's wgmma and runs only "
                            "on compute capability 9.0 (H100, H200); %s is %d.%d: use impl \"tc\" "
                            "or \"auto\"",
                            plan->target.name, plan->target.cc_major, plan->target.cc_minor);
    const char *cfg_s = gr_op_attr_str(op, "config", "auto");
    int named = -1, cfg_impl = config_of(cfg_s, &named);
    GR_TRY(check_config(op, cfg_s, cfg_impl, impl, math, M, N, K, err));
    int tc = named >= 0                ? named
             : impl == GR_LINEAR_TILED ? tiled_config(M, N, K, plan->target.sm_count)
             : impl == GR_LINEAR_TC    ? mma_config(M, N, plan->target.sm_count)
             : impl == GR_LINEAR_WG    ? wg_config(M, N, K, plan->target.sm_count)
                                       : 0;
    int64_t tbn = impl == GR_LINEAR_TILED ? gr_lin_tcfg(tc, GR_LIN_TC_BN)
                  : impl == GR_LINEAR_TC  ? gr_lin_ccfg(tc, GR_LIN_CF_BN)
                  : impl == GR_LINEAR_WG  ? gr_lin_wg_bn(tc)
                                          : 1;
    if (M > 2147483647 || N > 2147483647 || K > 2147483647 ||
        (impl == GR_LINEAR_SIMT && cdiv64(M, GR_LIN_BM) > 65535) ||
        ((impl == GR_LINEAR_TILED || impl == GR_LINEAR_TC || impl == GR_LINEAR_WG) &&
         cdiv64(N, tbn) > 65535))
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": %lld x %lld x %lld is too large for impl "
                            "\"%s\" (at most %d rows for simt, 65535 tiles of %lld outputs for "
                            "this tiled, tc or wg configuration, 2^31 per dim)",
                            (long long)M, (long long)N, (long long)K, impl_names[impl],
                            65535 * GR_LIN_BM, (long long)tbn);
    op->ip[GR_LIN_M] = M;
    op->ip[GR_LIN_N] = N;
    op->ip[GR_LIN_K] = K;
    op->ip[GR_LIN_ACT] = act;
    op->ip[GR_LIN_IMPL] = impl;
    op->ip[GR_LIN_VEC] = K % 4 == 0;
    linear_form(op, impl, tc, math);
    op->ip[GR_LIN_FLAGS] = (written_by_no_op(op, plan, 1, 3) ? GR_LIN_F_PRE : 0) |
                           (math == GR_MATH_TF32 ? GR_LIN_F_TF32 : 0) |
                           (math == GR_MATH_TF32X3 ? GR_LIN_F_TF32X3 : 0);
    if (impl == GR_LINEAR_SIMT) {
        int bn = linear_bn(M, N, plan->target.sm_count);
        op->ip[GR_LIN_BN] = bn;
        op->grid[0] = (unsigned)cdiv64(N, bn);
        op->grid[1] = (unsigned)cdiv64(M, GR_LIN_BM);
        op->grid[2] = 1;
        op->block[0] = GR_LIN_THREADS;
        op->block[1] = op->block[2] = 1;
        op->smem = 0;
        op->launches = 1;
    } else if (impl == GR_LINEAR_RD) {
        int64_t blocks = cdiv64(M, GR_LIN_RD_THREADS / 32),
                cap = (int64_t)(plan->target.sm_count > 0 ? plan->target.sm_count : 1) *
                      GR_LIN_RD_BLOCKS_PER_SM;
        op->ip[GR_LIN_BN] = 0;
        op->grid[0] = (unsigned)(blocks < cap ? blocks : cap); /* grid-stride beyond */
        op->grid[1] = op->grid[2] = 1;
        op->block[0] = GR_LIN_RD_THREADS;
        op->block[1] = op->block[2] = 1;
        op->smem = 0;
        op->launches = 1;
    } else if (impl == GR_LINEAR_TILED) {
        op->ip[GR_LIN_BN] = tc;
        op->grid[0] = (unsigned)cdiv64(M, gr_lin_tcfg(tc, GR_LIN_TC_BM)); /* up to 2^31 - 1 tiles */
        op->grid[1] = (unsigned)cdiv64(N, tbn);
        op->grid[2] = 1;
        op->block[0] = GR_LIN_TILED_THREADS;
        op->block[1] = op->block[2] = 1;
        op->smem = gr_lin_tiled_smem(tc); /* dynamic */
        op->launches = 1;
    } else if (impl == GR_LINEAR_TC) {
        op->ip[GR_LIN_BN] = tc;
        op->grid[0] = (unsigned)cdiv64(M, gr_lin_ccfg(tc, GR_LIN_CF_BM)); /* up to 2^31 - 1 */
        op->grid[1] = (unsigned)cdiv64(N, tbn);
        op->grid[2] = 1;
        op->block[0] = gr_lin_tc_threads(tc);
        op->block[1] = op->block[2] = 1;
        op->smem = gr_lin_tc_smem(tc); /* dynamic */
        op->launches = 1;
    } else if (impl == GR_LINEAR_WG) {
        op->ip[GR_LIN_BN] = tc;
        op->grid[0] = (unsigned)cdiv64(M, gr_lin_wg_bm(tc)); /* up to 2^31 - 1 */
        op->grid[1] = (unsigned)cdiv64(N, tbn);
        op->grid[2] = 1;
        op->block[0] = gr_lin_wg_threads(tc);
        op->block[1] = op->block[2] = 1;
        op->smem = gr_lin_wg_smem(tc); /* dynamic */
        op->launches = 1;
    } else {
        op->ip[GR_LIN_BN] = 0;
        op->grid[0] = op->grid[1] = op->grid[2] = 0;
        op->block[0] = op->block[1] = op->block[2] = 0;
        op->smem = 0;
        op->launches = -1;
    }
    op->bytes_read = (double)X->bytes + (double)W->bytes + (double)b->bytes;
    op->bytes_written = (double)Y->bytes;
    op->flops = 2.0 * (double)M * (double)N * (double)K + (act == GR_DLRM_ACT_NONE ? 1.0 : 2.0) * (double)(M * N);
    return GR_OK;
}

/* y [M, N] = act(x [M, K] w [N, K]^T + bias), double accumulation, rounded to fp32 as stored;
 * rows in parallel (each output's sum is the same either way). */
typedef struct linear_ref {
    const float *x, *w, *bias;
    int64_t N, K;
    int act;
    float *y;
} linear_ref;

static int linear_ref_rows(void *ctx, int64_t chunk, int64_t m0, int64_t m1) {
    const linear_ref *L = ctx;
    const float *x = L->x, *w = L->w, *bias = L->bias;
    int64_t N = L->N, K = L->K;
    int act = L->act;
    float *y = L->y;
    (void)chunk;
    for (int64_t m = m0; m < m1; m++) {
        const float *xr = x + m * K;
        for (int64_t n = 0; n < N; n++) {
            const float *wr = w + n * K;
            double s = 0;
            for (int64_t k = 0; k < K; k++) s += (double)xr[k] * (double)wr[k];
            s += bias[n];
            if (act == GR_DLRM_ACT_RELU) s = s > 0 ? s : 0;
            else if (act == GR_DLRM_ACT_SIGMOID) s = 1.0 / (1.0 + exp(-s));
            y[m * N + n] = (float)s;
        }
    }
    return 0;
}

static void ref_linear_rows(const float *x, const float *w, const float *bias, int64_t M, int64_t N,
                            int64_t K, int act, float *y) {
    linear_ref L = {x, w, bias, N, K, act, y};
    gr_parallel_for(M, 8, linear_ref_rows, &L);
}

static gr_status ref_linear(const gr_op *op, const gr_plan *plan, void *const *host,
                            gr_error *err) {
    (void)plan;
    (void)err;
    ref_linear_rows(host[op->inputs[0]], host[op->inputs[1]], host[op->inputs[2]], op->ip[GR_LIN_M],
                    op->ip[GR_LIN_N], op->ip[GR_LIN_K], (int)op->ip[GR_LIN_ACT],
                    host[op->outputs[0]]);
    return GR_OK;
}

/* cuBLASLt state of one op: row-major Y[M,N] = X[M,K] W[N,K]^T + bias is the column-major
 * Y^T (N x M) = W (op T of the K x N column-major view) times X^T (K x M), bias along the N
 * rows of D: the epilogue's bias vector is per output feature, as needed. */
typedef struct lt_state {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
    int tf32; /* the descriptor's compute type is CUBLAS_COMPUTE_32F_FAST_TF32 */
} lt_state;

static void lt_release(lt_state *s) {
    if (s->a) cublasLtMatrixLayoutDestroy(s->a);
    if (s->b) cublasLtMatrixLayoutDestroy(s->b);
    if (s->c) cublasLtMatrixLayoutDestroy(s->c);
    if (s->desc) cublasLtMatmulDescDestroy(s->desc);
    s->a = s->b = s->c = NULL;
    s->desc = NULL;
}

static void teardown_linear(void *state) {
    lt_state *s = state;
    if (!s) return;
    lt_release(s);
    free(s);
}

#define GR_LT_CANDIDATES 8 /* algorithms asked of the heuristic */
#define GR_LT_REPS 5       /* timed calls per candidate */

static int lt_run(const gr_op *op, const gr_launch_ctx *ctx, const lt_state *s,
                  const cublasLtMatmulAlgo_t *algo) {
    float alpha = 1.0f, beta = 0.0f;
    void *Y = ctx->dptr[op->outputs[0]];
    return (int)cublasLtMatmul((cublasLtHandle_t)ctx->cublaslt, s->desc, &alpha,
                               ctx->dptr[op->inputs[1]], s->a, ctx->dptr[op->inputs[0]], s->b,
                               &beta, Y, s->c, Y, s->c, algo, ctx->workspace, ctx->workspace_bytes,
                               (cudaStream_t)ctx->stream);
}

/* The heuristic's first choice is not always the fastest on these small, oddly shaped GEMMs
 * (wave quantization: a 2048 x 512 output is 64 tiles of 128 x 128 on 132 SMs). With more than
 * one candidate, each is timed on the op's stream (one warm-up call, then GR_LT_REPS calls
 * between events) and the fastest kept. setup() runs before the buffers are initialised: the
 * time does not depend on the values, and every output is rewritten before it is checked. A
 * candidate that fails is skipped; if timing itself fails, the heuristic's order stands. */
static int lt_fastest(const gr_op *op, const gr_launch_ctx *ctx, const lt_state *s,
                      const cublasLtMatmulHeuristicResult_t *h, int n) {
    if (n <= 1) return 0;
    cudaEvent_t e0 = NULL, e1 = NULL;
    if (cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess) {
        cudaGetLastError();
        if (e0) cudaEventDestroy(e0);
        return 0;
    }
    int best = 0;
    float best_ms = -1.0f;
    for (int i = 0; i < n; i++) {
        if (h[i].state != CUBLAS_STATUS_SUCCESS || h[i].workspaceSize > ctx->workspace_bytes)
            continue;
        if (lt_run(op, ctx, s, &h[i].algo) != 0) continue;
        int ok = cudaEventRecord(e0, (cudaStream_t)ctx->stream) == cudaSuccess;
        for (int r = 0; r < GR_LT_REPS && ok; r++)
            ok = lt_run(op, ctx, s, &h[i].algo) == 0;
        ok = ok && cudaEventRecord(e1, (cudaStream_t)ctx->stream) == cudaSuccess;
        float ms = 0.0f;
        ok = ok && cudaEventSynchronize(e1) == cudaSuccess &&
             cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess;
        if (!ok) {
            cudaGetLastError();
            continue;
        }
        if (best_ms < 0.0f || ms < best_ms) {
            best_ms = ms;
            best = i;
        }
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return best;
}

/* Descriptors for compute type `ct` and the heuristic's candidates; 0 and *found = 0 when it
 * has none for this shape (e.g. TF32 where the layout does not suit the tensor cores). */
static int lt_describe(const gr_op *op, const gr_launch_ctx *ctx, lt_state *s,
                       cublasComputeType_t ct, cublasLtMatmulHeuristicResult_t *heur, int *found) {
    uint64_t M = (uint64_t)op->ip[GR_LIN_M], N = (uint64_t)op->ip[GR_LIN_N], K = (uint64_t)op->ip[GR_LIN_K];
    cublasLtHandle_t lt = (cublasLtHandle_t)ctx->cublaslt;
    *found = 0;
    int rc = cublasLtMatmulDescCreate(&s->desc, ct, CUDA_R_32F);
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    if (rc == 0)
        rc = cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
    if (rc == 0)
        rc = cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
    cublasLtEpilogue_t epi = op->ip[GR_LIN_ACT] == GR_DLRM_ACT_RELU ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    if (rc == 0)
        rc = cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                            sizeof(epi));
    const void *bias = ctx->dptr[op->inputs[2]];
    if (rc == 0)
        rc = cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                            sizeof(bias));
    if (rc == 0) rc = cublasLtMatrixLayoutCreate(&s->a, CUDA_R_32F, K, N, (int64_t)K);
    if (rc == 0) rc = cublasLtMatrixLayoutCreate(&s->b, CUDA_R_32F, K, M, (int64_t)K);
    if (rc == 0) rc = cublasLtMatrixLayoutCreate(&s->c, CUDA_R_32F, N, M, (int64_t)N);
    cublasLtMatmulPreference_t pref = NULL;
    if (rc == 0) rc = cublasLtMatmulPreferenceCreate(&pref);
    uint64_t ws = ctx->workspace_bytes;
    if (rc == 0)
        rc = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof(ws));
    if (rc == 0)
        rc = cublasLtMatmulAlgoGetHeuristic(lt, s->desc, s->a, s->b, s->c, s->c, pref,
                                            GR_LT_CANDIDATES, heur, found);
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (rc == CUBLAS_STATUS_NOT_SUPPORTED) { /* no algorithm for this shape: not an error */
        *found = 0;
        rc = 0;
    }
    return rc;
}

static gr_status lt_make(const gr_op *op, const gr_launch_ctx *ctx, lt_state *s, gr_error *err) {
    uint64_t M = (uint64_t)op->ip[GR_LIN_M], N = (uint64_t)op->ip[GR_LIN_N],
             K = (uint64_t)op->ip[GR_LIN_K];
    cublasLtMatmulHeuristicResult_t heur[GR_LT_CANDIDATES];
    memset(heur, 0, sizeof(heur));
    int found = 0, rc = 0;
    s->tf32 = (op->ip[GR_LIN_FLAGS] & GR_LIN_F_TF32) != 0;
    if (s->tf32) { /* TF32 where cuBLASLt has it for this shape; fp32 where it does not */
        rc = lt_describe(op, ctx, s, CUBLAS_COMPUTE_32F_FAST_TF32, heur, &found);
        if (rc != 0 || found < 1 || heur[0].state != CUBLAS_STATUS_SUCCESS) {
            lt_release(s);
            s->tf32 = 0;
        }
    }
    if (!s->tf32) rc = lt_describe(op, ctx, s, CUBLAS_COMPUTE_32F, heur, &found);
    if (rc != 0)
        return gr_cublas_fail(rc, "cuBLASLt descriptors / cublasLtMatmulAlgoGetHeuristic", __FILE__,
                              __LINE__, err);
    if (found < 1 || heur[0].state != CUBLAS_STATUS_SUCCESS)
        return gr_error_set(
            err, GR_ERR_CUDA, op->path,
            "kernel \"linear_act\": cuBLASLt has no algorithm for %llu x %llu x %llu "
            "fp32 with a bias epilogue on this GPU; use attr impl \"tiled\" or \"simt\"",
            (unsigned long long)M, (unsigned long long)N, (unsigned long long)K);
    if (heur[0].workspaceSize > ctx->workspace_bytes)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                            "cuBLASLt algorithm wants %zu bytes of workspace; %zu are there",
                            heur[0].workspaceSize, ctx->workspace_bytes);
    s->algo = heur[lt_fastest(op, ctx, s, heur, found)].algo;
    return GR_OK;
}

static gr_status setup_linear(const gr_op *op, const gr_launch_ctx *ctx, void **state, gr_error *err) {
    *state = NULL;
    if (op->ip[GR_LIN_IMPL] == GR_LINEAR_TILED || op->ip[GR_LIN_IMPL] == GR_LINEAR_TC ||
        op->ip[GR_LIN_IMPL] == GR_LINEAR_WG)
        return gr_setup_linear_staged(op, err);
    if (op->ip[GR_LIN_IMPL] != GR_LINEAR_LT) return GR_OK;
    if (!ctx->cublaslt)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "cuBLASLt handle missing (linear_act "
                            "must carry GR_KF_LIBRARY so the device state creates one)");
    lt_state *s = calloc(1, sizeof(*s));
    if (!s) return gr_error_set(err, GR_ERR_NOMEM, op->path, "out of host memory");
    gr_status st = lt_make(op, ctx, s, err);
    if (st != GR_OK) {
        teardown_linear(s);
        return st;
    }
    *state = s;
    return GR_OK;
}

static gr_status launch_linear(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    if (op->ip[GR_LIN_IMPL] == GR_LINEAR_SIMT) return gr_launch_linear_simt(op, ctx, err);
    if (op->ip[GR_LIN_IMPL] == GR_LINEAR_RD)
        return gr_launch_linear_small(op, ctx, err);
    if (op->ip[GR_LIN_IMPL] == GR_LINEAR_TILED || op->ip[GR_LIN_IMPL] == GR_LINEAR_TC ||
        op->ip[GR_LIN_IMPL] == GR_LINEAR_WG)
        return gr_launch_linear_staged(op, ctx, err);
    const lt_state *s = ctx->op_state;
    if (!s) return gr_error_set(err, GR_ERR_INTERNAL, op->path, "linear_act (lt): setup() did not run");
    GR_CUBLAS(lt_run(op, ctx, s, &s->algo), err);
    return GR_OK;
}

/* ---------- registry ---------- */

static const char *const pooling_choices[] = {"sum", "mean", NULL};
static const char *const act_choices[] = {"relu", "none", "sigmoid", NULL};
static const char *const impl_choices[] = {"auto", "simt", "lt",     "tiled",   "tc",
                                           "wg",   "rowdot", "auto_wg", NULL};
static const char *const math_choices[] = {"fp32", "tf32", "tf32x3", NULL};

static const char *const rb_choices[] = {"auto", "1", "2", "4", NULL};
static const gr_attr_spec emb_attrs[] = {
    {"pooling", GR_ATTR_ENUM, 0, 0, "sum", pooling_choices, "bag pooling: sum (default) or mean"}};
#define RB_ATTR                                                                                    \
    {"rows_per_block", GR_ATTR_ENUM, 0, 0, "auto", rb_choices,                                     \
     "batch rows per block of 128 threads: auto (default: the most of 4, 2, 1 that still give 4 "  \
     "blocks per SM; B = 2048 on an H200: 2, measured fastest, run 53) or 1, 2, 4"}
static const gr_attr_spec ix_attrs[] = {RB_ATTR};
static const gr_attr_spec emb_ix_attrs[] = {
    {"pooling", GR_ATTR_ENUM, 0, 0, "sum", pooling_choices, "bag pooling: sum (default) or mean"},
    RB_ATTR};
static const gr_attr_spec linear_attrs[] = {
    {"act", GR_ATTR_ENUM, 0, 0, "relu", act_choices,
     "activation after the bias: relu (default), none, sigmoid"},
    {"impl", GR_ATTR_ENUM, 0, 0, "auto", impl_choices,
     "simt (own kernel for small batches), tiled (own register-tiled fp32 SGEMM for large "
     "batches), lt (cuBLASLt with bias/ReLU epilogue), tc (own TF32 tensor-core kernel on "
     "mma.sync; math tf32 or tf32x3), wg (own TF32 kernel on wgmma, compute capability 9.0 "
     "only; math tf32 or tf32x3), rowdot (N <= 16: a warp per row, fp32) or auto: above 256 rows rowdot for N <= 4; "
     "else simt up to 256 rows or below 128 outputs; above, "
     "tiled for sigmoid and K <= 64, with math tf32x3 tc (lt in fp32 for K % 4 != 0), lt with "
     "math tf32 or K % 4 != 0, else tiled; auto_wg: as auto, but wg where auto takes tc or lt "
     "with math tf32x3 on compute capability 9.0"},
    {"math", GR_ATTR_ENUM, 0, 0, "fp32", math_choices,
     "fp32 (default: fp32 FMAs), tf32 (cuBLASLt or the tc kernel use TF32 tensor cores: ~1e-3 "
     "relative error; cuBLASLt falls back to fp32 for shapes without a TF32 algorithm) or "
     "tf32x3 (the tc kernel splits each operand into two TF32 parts and sums three products: "
     "fp32-level error on tensor cores); the simt and tiled kernels are fp32 either way"},
    {"config", GR_ATTR_ENUM, 0, 0, "auto", config_choices,
     "tile configuration of the impl the op runs: auto (default: the check's choice per shape) or, "
     "for tiled, t64 (64 x 64, 4 x 4 per thread), t64w (64 x 64, 8 x 4), t32, t16; for tc, c64 "
     "(64 x 64 tiles), c6432, c32; for wg, w64 and w128 (64 x 64 and 64 x 128 tiles through "
     "shared memory), w64b (64 x 64, TMA copies, x split in registers) and w64b2 (its 128 x 64 "
     "form); w64b and w64b2 need M and N multiples of the row fold (1, 2 or 4 as K % 4 is 0, 2 "
     "or odd)"}};

static const gr_kernel_def k_embedding_bag = {
    "embedding_bag", "one table: y[b] = sum (or mean) of table rows idx[b, 0..bag-1]; rows outside "
    "the table are skipped",
    "table [rows, D] fp32, idx [B] or [B, bag] int32/int64", "y [B, D]", 2, 2, 1, 1, emb_attrs, 1,
    GR_KF_PDL, check_embedding, gr_launch_embedding, ref_embedding, NULL, NULL};
static const gr_kernel_def k_embedding_bag_tbe = {
    "embedding_bag_tbe",
    "table-batched embedding bags: T tables in one launch (FBGEMM TBE style), y[b, t] = pooled rows "
    "of table t",
    "table_0 .. table_{T-1} [rows_t, D] fp32, then idx_0 .. idx_{T-1} [B] or [B, bag] (T <= 32)",
    "y [B, T, D]", 2, 2 * GR_EMB_MAX_TABLES, 1, 1, emb_attrs, 1, GR_KF_PDL, check_embedding,
    gr_launch_embedding, ref_embedding, NULL, NULL};
static const gr_kernel_def k_bias_add = {
    "bias_add", "y = x + bias, bias broadcast over the rows of x", "x [..., N], bias [N]",
    "y (x's shape)", 2, 2, 1, 1, NULL, 0, GR_KF_PDL | GR_KF_INPLACE, check_bias_add,
    gr_launch_bias_add, ref_bias_add, NULL, NULL};
static const gr_kernel_def k_sigmoid = {
    "sigmoid", "y = 1 / (1 + exp(-x)), fp32", "x", "y (x's shape)", 1, 1, 1, 1, NULL, 0,
    GR_KF_PDL | GR_KF_INPLACE, check_sigmoid, gr_launch_sigmoid, ref_sigmoid, NULL, NULL};
static const gr_kernel_def k_concat = {
    "concat", "y = inputs joined along dim 1 (each input viewed as [rows, numel / rows])",
    "x_0 .. x_{n-1}, each [rows, ...] fp32", "y [rows, sum of the inputs' columns]", 1,
    GR_CONCAT_MAX_INPUTS, 1, 1, NULL, 0, GR_KF_PDL, check_concat, gr_launch_concat, ref_concat,
    NULL, NULL};
static const gr_kernel_def k_tril = {
    "tril_gather", "y[b, p] = Z[b, i, j] for the strict lower triangle j < i, row by row",
    "Z [B, n, n] fp32", "y [B, n (n - 1) / 2]", 1, 1, 1, 1, NULL, 0, GR_KF_PDL, check_tril,
    gr_launch_tril_gather, ref_tril, NULL, NULL};
static const gr_kernel_def k_interaction = {
    "dot_interaction",
    "fused DLRM interaction: y[b] = [x[b], dots of every pair (i, j), j < i, of the vectors "
    "(x[b], E[b, 0], ..., E[b, T-1])] in one pass",
    "x [B, D], E [B, T, D] fp32", "y [B, D + (T + 1) T / 2]", 2, 2, 1, 1, ix_attrs, 1, GR_KF_PDL,
    check_interaction, gr_launch_dot_interaction, ref_interaction, NULL, NULL};
static const gr_kernel_def k_emb_interaction = {
    "embedding_interaction",
    "embedding_bag_tbe fused into dot_interaction: y[b] = [x[b], dots of every pair (i, j), j < i, "
    "of (x[b], pooled rows of table 0, ..., of table T-1)]; no [B, T, D] intermediate",
    "x [B, D] fp32, then table_0 .. table_{T-1} [rows_t, D] fp32, then idx_0 .. idx_{T-1} [B] or "
    "[B, bag] int32/int64 (T <= 31)",
    "y [B, D + (T + 1) T / 2]",
    3,
    2 * GR_EMB_MAX_TABLES - 1, /* x, then T <= 31 tables and their index buffers */
    1,
    1,
    emb_ix_attrs,
    2,
    GR_KF_PDL,
    check_emb_interaction,
    gr_launch_embedding_interaction,
    ref_emb_interaction,
    NULL,
    NULL};
static const gr_kernel_def k_linear = {
    "linear_act",
    "y = act(x W^T + bias), fused (W [out, in] as in a Linear layer); own SIMT or tiled kernel, "
    "or cuBLASLt epilogue",
    "x [..., K], W [N, K], bias [N] fp32",
    "y [..., N]",
    3,
    3,
    1,
    1,
    linear_attrs,
    4,
    GR_KF_LIBRARY | GR_KF_PDL,
    check_linear,
    launch_linear,
    ref_linear,
    setup_linear,
    teardown_linear};

const gr_kernel_def *const gr_dlrm_kernels[] = {
    &k_embedding_bag, &k_embedding_bag_tbe, &k_bias_add,        &k_sigmoid, &k_concat, &k_tril,
    &k_interaction,   &k_emb_interaction,   &k_linear,  NULL};
