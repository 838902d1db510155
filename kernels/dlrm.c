/* DLRM kernel family, host side: registry entries (argument schemas), checks (shapes, dtypes,
 * index ranges, launch dims, Linear impl and tile choice, mlp_interaction's rows per block and
 * shared-memory fit, byte/flop accounting), CPU references (double accumulation), and the
 * cuBLASLt path of linear_act (descriptors and algorithm chosen in setup(), before any capture).
 * Device code: dlrm.cu. */
#include "kernels/dlrm.h"

#include <cublasLt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
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

static int env_config(const char *var, const char *const *names, int n);

/* Rows per block of the interaction kernels: the most of 4, 2, 1 that still give half of
 * GR_IX_BLOCKS_PER_SM blocks per SM (B = 2048 on 132 SMs: 2 rows, 1024 blocks, all resident;
 * B = 128: one row, 128 blocks), fewer where 48 KB of shared memory (no opt-in) does not hold
 * them; 0 when one row does not fit. Measured at B = 2048 (fused_tf32x3 auto_wg --pdl, one run,
 * run 53): 2 rows 67.46 us, 4 rows 69.34-69.65. GR_IX_RB (1, 2, 4) forces the choice, for
 * measuring it. */
static int ix_rows_per_block(int64_t B, int64_t T, int64_t D, int sm_count) {
    static const char *const names[] = {"1", "2", "4"}; /* 1 << index */
    int rb = GR_IX_MAX_RB, forced = env_config("GR_IX_RB", names, 3);
    if (forced >= 0) {
        rb = 1 << forced;
    } else {
        int64_t want = (int64_t)(GR_IX_BLOCKS_PER_SM / 2) * (sm_count > 0 ? sm_count : 1);
        while (rb > 1 && cdiv64(B, rb) < want)
            rb /= 2;
    }
    while (rb > 1 && gr_ix_floats(rb, T, D) * (int64_t)sizeof(float) > 48 * 1024)
        rb /= 2;
    return gr_ix_floats(rb, T, D) * (int64_t)sizeof(float) > 48 * 1024 ? 0 : rb;
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
    int rb = ix_rows_per_block(B, T, D, plan->target.sm_count);
    if (!rb)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"dot_interaction\": %lld vectors of %lld floats and the "
                            "output row need %zu bytes of shared memory for one batch row; at most "
                            "48 KB (fewer tables or a smaller D)",
                            (long long)F, (long long)D,
                            (size_t)gr_ix_floats(1, T, D) * sizeof(float));
    op->ip[GR_INT_B] = B;
    op->ip[GR_INT_T] = T;
    op->ip[GR_INT_D] = D;
    op->ip[GR_INT_P] = P;
    op->ip[GR_INT_RB] = rb;
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
    int rb = ix_rows_per_block(B, T, D, plan->target.sm_count);
    if (!rb)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": %lld vectors of %lld floats and the output row need "
                            "%zu bytes of shared memory for one batch row; at most 48 KB (fewer "
                            "tables or a smaller D)",
                            kn, (long long)F, (long long)D,
                            (size_t)gr_ix_floats(1, T, D) * sizeof(float));
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
    /* The gather through registers only when GR_IX_REG=1 asks for it (and bag 1 and the pieces
     * allow): measured slower than the loop at dlrm_small's B = 2048 (the interaction 8.26 us in
     * the graph against 7.52, runs 51-52); kept for measuring it. */
    static const char *const reg_names[] = {"0", "1"};
    op->ip[GR_EI_REG] =
        env_config("GR_IX_REG", reg_names, 2) == 1 && bag == 1 &&
        (int64_t)rb * T * (D % 4 == 0 ? D / 4 : D) <= (int64_t)GR_IX_THREADS * GR_IX_GATHER_U;
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
 * x 1 x 256) 2.30-2.34 us in the graph against 2.75 on the SIMT kernel (runs 50-52). smallk and
 * rowdot at larger N are taken only when named: measured slower than what auto keeps, bot.0
 * (2048 x 512 x 13) 4.93 us on smallk against 4.51 tiled, bot.3 (2048 x 16 x 64) 5.31 on rowdot
 * against 1.98 SIMT (run 52). */
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
 * (256 blocks), N = 256 64 x 32 (256), N = 64 and below 32 x 32. */
/* A tuning override for measurements: the configuration named by environment variable `var`
 * (one of the n `names`), or -1 when it is unset or names none (then warned about and ignored). */
static int env_config(const char *var, const char *const *names, int n) {
    const char *env = getenv(var);
    if (!env || !*env) return -1;
    for (int c = 0; c < n; c++)
        if (!strcmp(env, names[c])) return c;
    fprintf(stderr, "graphrun: %s=%s ignored: use one of", var, env);
    for (int c = 0; c < n; c++)
        fprintf(stderr, " %s", names[c]);
    fprintf(stderr, "\n");
    return -1;
}

static int mma_config(int64_t M, int64_t N, int sm_count) {
    static const char *const names[GR_LIN_NCCFG] = GR_LIN_CNAMES;
    int forced = env_config("GR_LIN_TC_CFG", names, GR_LIN_NCCFG);
    if (forced >= 0) return forced;
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
 * K % 4 == 0, 4 for odd K); where they do not, 128-wide tiles run in the shared-memory form
 * (w128) and 64-wide ones in the register-A form (w64r). M = 2048: N = 512 takes w64b2 (128
 * blocks; top.0, K = 367, rows folded in fours), N = 256 w64b (128 blocks instead of 64). Each the
 * fastest measured (B = 2048, fused_tf32x3 x3_impl=auto_wg --pdl: top.0 in w64b2 57.27-57.29 us
 * against w128's 64.23-64.45, run 65; w64b on bot.1 / top.1 64.53 us against w64r's 67.57, run 59;
 * w64r 13.41 / 13.09 us per op against 14.1-14.2 in w64, run 45; top.0 in w64b's two waves 24.54
 * against w128's 22.88, run 64, and in w128r 26.66 against 22.8). GR_LIN_WG_TALL=0 takes w128 back
 * for the tall shapes, GR_LIN_WG_BULK=0 both bulk forms (register-A form for the 64-wide tiles),
 * GR_LIN_WG_REGA=1 or 0 puts both widths in one of the older forms, GR_LIN_WG_CFG forces any one
 * configuration (measurement switches; a bulk one runs as gr_lin_wg_unbulk's where the rows do
 * not fold). */
static int wg_config(int64_t M, int64_t N, int64_t K, int sm_count) {
    static const char *const names[GR_LIN_NWCFG] = GR_LIN_WNAMES;
    static const char *const flag_names[2] = {"0", "1"};
    int forced = env_config("GR_LIN_WG_CFG", names, GR_LIN_NWCFG);
    if (forced >= 0) return gr_lin_wgb_ok(M, N, K) ? forced : gr_lin_wg_unbulk(forced);
    const int rega = env_config("GR_LIN_WG_REGA", flag_names, 2);
    const int bulk =
        gr_lin_wgb_ok(M, N, K) && rega < 0 && env_config("GR_LIN_WG_BULK", flag_names, 2) != 0;
    int64_t enough = (int64_t)(sm_count > 0 ? sm_count : 1) * 3 / 4;
    if (bulk && env_config("GR_LIN_WG_TALL", flag_names, 2) != 0 &&
        cdiv64(M, 128) * cdiv64(N, 64) >= enough && cdiv64(N, 64) <= 65535)
        return GR_LIN_W64B2;
    if (cdiv64(M, GR_LIN_WG_BM) * cdiv64(N, 128) >= enough)
        return rega == 1 ? GR_LIN_W128R : GR_LIN_W128;
    return bulk ? GR_LIN_W64B : rega == 0 ? GR_LIN_W64 : GR_LIN_W64R;
}

static const char *const impl_names[] = {"simt", "lt", "tiled", "tc", "wg", "smallk", "rowdot"};

/* op->form: the implementation, its configuration (the names GR_LIN_TC_CFG and GR_LIN_WG_CFG take;
 * t64, t64w, t32, t16 for the tiled kernel's) and the arithmetic it runs, e.g. "wg w64 tf32x3":
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
    const int runs = impl == GR_LINEAR_SIMT || impl == GR_LINEAR_TILED || impl == GR_LINEAR_SK ||
                             impl == GR_LINEAR_RD
                         ? GR_MATH_FP32
                     : impl == GR_LINEAR_LT && math != GR_MATH_TF32 ? GR_MATH_FP32
                                                                    : math;
    snprintf(op->form, sizeof(op->form), "%s%s%s %s", impl_names[impl], c ? " " : "", c ? c : "",
             maths[runs]);
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
    else if (!strcmp(impl_s, "smallk"))
        impl = GR_LINEAR_SK;
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
    if (impl == GR_LINEAR_SK && K > GR_LIN_SK_MAXK)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": impl \"smallk\" holds W's rows in registers "
                            "and takes K <= %d; W \"%s\" %s has K = %lld: use impl \"auto\", "
                            "\"tiled\" or \"simt\"",
                            GR_LIN_SK_MAXK, W->name, shp(W, s1, sizeof(s1)), (long long)K);
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
    int tc = impl == GR_LINEAR_TILED ? tiled_config(M, N, K, plan->target.sm_count)
             : impl == GR_LINEAR_TC  ? mma_config(M, N, plan->target.sm_count)
             : impl == GR_LINEAR_WG  ? wg_config(M, N, K, plan->target.sm_count)
                                     : 0;
    int64_t tbn = impl == GR_LINEAR_TILED ? gr_lin_tcfg(tc, GR_LIN_TC_BN)
                  : impl == GR_LINEAR_TC  ? gr_lin_ccfg(tc, GR_LIN_CF_BN)
                  : impl == GR_LINEAR_WG  ? gr_lin_wg_bn(tc)
                                          : 1;
    if (M > 2147483647 || N > 2147483647 || K > 2147483647 ||
        (impl == GR_LINEAR_SIMT && cdiv64(M, GR_LIN_BM) > 65535) ||
        (impl == GR_LINEAR_SK && cdiv64(N, 4 * GR_LIN_SK_CT) > 65535) ||
        ((impl == GR_LINEAR_TILED || impl == GR_LINEAR_TC || impl == GR_LINEAR_WG) &&
         cdiv64(N, tbn) > 65535))
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"linear_act\": %lld x %lld x %lld is too large for impl "
                            "\"%s\" (at most %d rows for simt, %d outputs for smallk, 65535 "
                            "tiles of %lld outputs for this tiled, tc or wg configuration, 2^31 "
                            "per dim)",
                            (long long)M, (long long)N, (long long)K, impl_names[impl],
                            65535 * GR_LIN_BM, 65535 * 4 * GR_LIN_SK_CT, (long long)tbn);
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
    } else if (impl == GR_LINEAR_SK) {
        op->ip[GR_LIN_BN] = 0;
        op->grid[0] = (unsigned)cdiv64(M, GR_LIN_SK_RB); /* M < 2^31 */
        op->grid[1] = (unsigned)cdiv64(N, 4 * GR_LIN_SK_CT);
        op->grid[2] = 1;
        op->block[0] = GR_LIN_SK_THREADS;
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
        op->grid[2] = (unsigned)gr_lin_ccfg(tc, GR_LIN_CF_KS); /* the cluster's K split */
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

/* y [M, N] = act(x [M, K] w [N, K]^T + bias), double accumulation, rounded to fp32 as stored. */
static void ref_linear_rows(const float *x, const float *w, const float *bias, int64_t M, int64_t N,
                            int64_t K, int act, float *y) {
    for (int64_t m = 0; m < M; m++) {
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
    if (op->ip[GR_LIN_IMPL] == GR_LINEAR_SK || op->ip[GR_LIN_IMPL] == GR_LINEAR_RD)
        return gr_launch_linear_small(op, ctx, err);
    if (op->ip[GR_LIN_IMPL] == GR_LINEAR_TILED || op->ip[GR_LIN_IMPL] == GR_LINEAR_TC ||
        op->ip[GR_LIN_IMPL] == GR_LINEAR_WG)
        return gr_launch_linear_staged(op, ctx, err);
    const lt_state *s = ctx->op_state;
    if (!s) return gr_error_set(err, GR_ERR_INTERNAL, op->path, "linear_act (lt): setup() did not run");
    GR_CUBLAS(lt_run(op, ctx, s, &s->algo), err);
    return GR_OK;
}

/* ---------- mlp_interaction: bot.2 + bot.3 + embedding_interaction in one kernel ---------- */

/* Dynamic shared memory one block may opt in to, and shared memory per SM, for the target's
 * compute capability (CUDA C++ Programming Guide, technical specifications per compute
 * capability). */
static size_t smem_per_block(const gr_target *t) {
    int cc = t->cc_major * 10 + t->cc_minor;
    if (cc == 86 || cc == 89 || cc >= 120) return 101376; /* 99 KB */
    if (cc >= 90) return 232448;                          /* 227 KB: 9.0, 10.x */
    if (cc == 80 || cc == 87) return 166912;              /* 163 KB */
    if (cc == 75) return 65536;
    if (cc >= 70) return 98304;
    return 49152;
}

/* Batch rows per block: the fewest (1, 2, 4, 8, 16) that give at most one block per two SMs,
 * 16 beyond (the layer-1 register tile); B = 2048 on 132 SMs: 16 rows, 128 blocks; B = 128: 2
 * rows, 64 blocks. Every block reads all of W_a and W_b from L2 (70 KB at dlrm_small's shape:
 * 9 MB for 128 blocks, ~1.3-1.6 us at 5.5-7 TB/s), while a row costs a block only 16 K FMAs of
 * layer 1 and 28 dot blocks: at small B half the blocks with twice the rows halve that traffic
 * for ~0.1 us more work each (napkin math in dlrm.cu; to be measured). GR_MI_RB (1, 2, 4, 8,
 * 16) forces the rows per block, for such measurements. */
static int mi_rows_per_block(int64_t B, int sm_count) {
    static const char *const names[] = {"1", "2", "4", "8", "16"}; /* 1 << index */
    int forced = env_config("GR_MI_RB", names, 5);
    if (forced >= 0) return 1 << forced;
    int64_t blocks = sm_count > 1 ? sm_count / 2 : 1;
    int rb = 1;
    while (rb < GR_MI_MAX_RB && cdiv64(B, rb) > blocks)
        rb *= 2;
    return rb;
}

static size_t mi_smem(int rb, int64_t K, int64_t D, int64_t T) {
    return (size_t)gr_mi_layout_of(rb, K, D, T).floats * sizeof(float);
}

static gr_status check_mlp_interaction(gr_op *op, const gr_plan *plan, gr_error *err) {
    const char *kn = op->kernel->name;
    const char *fix = "run the two layers as linear_act ops and the interaction as "
                      "embedding_interaction";
    char s1[96], s2[96];
    if (op->ninputs < 7 || (op->ninputs - 5) % 2 != 0)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": inputs are h [B, K], W_a [N_a, K], b_a [N_a], W_b [D, "
                            "N_a], b_b [D], then the T tables, then their T index buffers (5 + 2 x "
                            "T inputs); got %d inputs",
                            kn, op->ninputs);
    int T = (op->ninputs - 5) / 2;
    const gr_buffer *H = gr_in(op, plan, 0), *WA = gr_in(op, plan, 1), *BA = gr_in(op, plan, 2),
                    *WB = gr_in(op, plan, 3), *BB = gr_in(op, plan, 4),
                    *i0 = gr_in(op, plan, 5 + T), *BOT = gr_out(op, plan, 0),
                    *R = gr_out(op, plan, 1);
    GR_TRY(gr_check_dtype(op, H, "inputs[0] (h)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, WA, "inputs[1] (W_a)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, BA, "inputs[2] (b_a)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, WB, "inputs[3] (W_b)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, BB, "inputs[4] (b_b)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, BOT, "outputs[0] (bot)", fp32_only, err));
    GR_TRY(gr_check_dtype(op, R, "outputs[1] (R)", fp32_only, err));
    int64_t D, B, bag;
    GR_TRY(check_tables(op, plan, 5, T, &D, &B, &bag, err));
    if (H->ndim != 2 || H->shape[0] != B)
        return gr_error_set(
            err, GR_ERR_INPUT, op->path,
            "kernel \"%s\": inputs[0] (h) \"%s\" has shape %s; with indices for B = "
            "%lld rows it must be [%lld, K] (the input of the bottom MLP's last two "
            "layers)",
            kn, H->name, shp(H, s1, sizeof(s1)), (long long)B, (long long)B);
    int64_t K = H->shape[1];
    if (WA->ndim != 2 || WA->shape[1] != K)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": inputs[1] (W_a) \"%s\" has shape %s; h %s has K = %lld "
                            "features, so W_a must be [N_a, %lld] (a Linear weight is [out, in])",
                            kn, WA->name, shp(WA, s1, sizeof(s1)), shp(H, s2, sizeof(s2)),
                            (long long)K, (long long)K);
    int64_t NA = WA->shape[0];
    if (NA > GR_MI_NA_MAX)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": inputs[1] (W_a) \"%s\" %s has N_a = %lld outputs; this "
                            "kernel's first layer is at most %d wide; %s",
                            kn, WA->name, shp(WA, s1, sizeof(s1)), (long long)NA, GR_MI_NA_MAX,
                            fix);
    if (BA->numel != NA)
        return gr_error_set(
            err, GR_ERR_INPUT, op->path,
            "kernel \"%s\": inputs[2] (b_a) \"%s\" has shape %s; W_a %s needs [%lld]", kn, BA->name,
            shp(BA, s1, sizeof(s1)), shp(WA, s2, sizeof(s2)), (long long)NA);
    if (WB->ndim != 2 || WB->shape[0] != D || WB->shape[1] != NA)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": inputs[3] (W_b) \"%s\" has shape %s; it must be [%lld, "
                            "%lld]: D = %lld outputs (the tables' D) from N_a = %lld inputs (W_a's "
                            "outputs)",
                            kn, WB->name, shp(WB, s1, sizeof(s1)), (long long)D, (long long)NA,
                            (long long)D, (long long)NA);
    if (BB->numel != D)
        return gr_error_set(
            err, GR_ERR_INPUT, op->path,
            "kernel \"%s\": inputs[4] (b_b) \"%s\" has shape %s; W_b %s needs [%lld]", kn, BB->name,
            shp(BB, s1, sizeof(s1)), shp(WB, s2, sizeof(s2)), (long long)D);
    if (BOT->ndim != 2 || BOT->shape[0] != B || BOT->shape[1] != D)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": outputs[0] (bot) \"%s\" has shape %s; the bottom MLP's "
                            "output for B = %lld rows is [%lld, %lld]",
                            kn, BOT->name, shp(BOT, s1, sizeof(s1)), (long long)B, (long long)B,
                            (long long)D);
    int64_t F = T + 1, P = F * T / 2;
    if (R->ndim != 2 || R->shape[0] != B || R->shape[1] != D + P)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": outputs[1] (R) \"%s\" has shape %s; bot and %d "
                            "embeddings give [%lld, %lld] (%lld of bot, then %lld pairwise dots)",
                            kn, R->name, shp(R, s1, sizeof(s1)), T, (long long)B,
                            (long long)(D + P), (long long)D, (long long)P);
    /* the rows per block for the SMs, fewer where the shared memory does not hold them (also
     * when GR_MI_RB asks for more) */
    size_t limit = smem_per_block(&plan->target);
    int rb = mi_rows_per_block(B, plan->target.sm_count);
    while (rb > 1 && mi_smem(rb, K, D, T) > limit)
        rb /= 2;
    size_t smem = mi_smem(rb, K, D, T);
    if (smem > limit)
        return gr_error_set(
            err, GR_ERR_INPUT, op->path,
            "kernel \"%s\": needs %zu bytes of shared memory per block even with one "
            "batch row per block (W_a: 64 rows of K = %lld, W_b: %lld rows, %lld "
            "vectors of D = %lld), more than the %zu a block may have on the target "
            "(sm_%d%d); %s",
            kn, smem, (long long)K, (long long)D, (long long)F, (long long)D, limit,
            plan->target.cc_major, plan->target.cc_minor, fix);
    int per_row = D % 4 == 0 ? (int)(D / 4) : (int)D;
    int reg = bag == 1 && (int64_t)T * rb * per_row <= (int64_t)GR_MI_THREADS * GR_MI_GATHER_U;
    op->ip[GR_MI_B] = B;
    op->ip[GR_MI_T] = T;
    op->ip[GR_MI_K] = K;
    op->ip[GR_MI_NA] = NA;
    op->ip[GR_MI_D] = D;
    op->ip[GR_MI_BAG] = bag;
    op->ip[GR_MI_RB] = rb;
    op->ip[GR_MI_FLAGS] = (written_by_no_op(op, plan, 1, 5 + 2 * T) ? GR_MI_F_PRE : 0) |
                          (i0->dtype == GR_INT64 ? GR_MI_F_IDX64 : 0) |
                          (D % 4 == 0 ? GR_MI_F_VEC : 0) | (reg ? GR_MI_F_REG : 0);
    op->fp[0] = !strcmp(gr_op_attr_str(op, "pooling", "sum"), "mean") ? 1.0 / (double)bag : 1.0;
    /* at most one block per SM (~170 registers x 256 threads: one fits), striding beyond */
    int64_t groups = cdiv64(B, rb), cap = plan->target.sm_count > 0 ? plan->target.sm_count : 1;
    op->grid[0] = (unsigned)(groups < 1 ? 1 : groups < cap ? groups : cap);
    op->grid[1] = op->grid[2] = 1;
    op->block[0] = GR_MI_THREADS;
    op->block[1] = op->block[2] = 1;
    op->smem = smem; /* dynamic, opted in by setup() */
    /* What the three ops it replaces move, less a's round trip and the interaction's read of
     * bot (both stay on chip): h and the weights, the indices and gathered rows (not the tables);
     * bot and R written. */
    op->bytes_read = (double)H->bytes + (double)WA->bytes + (double)BA->bytes + (double)WB->bytes +
                     (double)BB->bytes + (double)i0->bytes * T + (double)(B * T * bag * D) * 4.0;
    op->bytes_written = (double)BOT->bytes + (double)R->bytes;
    op->flops = 2.0 * (double)B * (double)NA * (double)K + 2.0 * (double)(B * NA) +
                2.0 * (double)(B * D * NA) + 2.0 * (double)(B * D) + (double)(B * T * bag * D) +
                2.0 * (double)(B * P * D);
    op->launches = 1;
    return GR_OK;
}

/* The composition of the references of what it replaces: linear_act (relu) twice, then
 * embedding_interaction's pooling and interaction row (the same functions, so the same fp32
 * values). */
static gr_status ref_mlp_interaction(const gr_op *op, const gr_plan *plan, void *const *host,
                                     gr_error *err) {
    int64_t B = op->ip[GR_MI_B], T = op->ip[GR_MI_T], K = op->ip[GR_MI_K], NA = op->ip[GR_MI_NA],
            D = op->ip[GR_MI_D], bag = op->ip[GR_MI_BAG], P = (T + 1) * T / 2;
    int idx64 = (op->ip[GR_MI_FLAGS] & GR_MI_F_IDX64) != 0;
    float *bot = host[op->outputs[0]], *R = host[op->outputs[1]];
    float *a = malloc((size_t)(B * NA + 1) * sizeof(float)),
          *e = malloc((size_t)(T * D) * sizeof(float));
    if (!a || !e) {
        free(a);
        free(e);
        return gr_error_set(err, GR_ERR_NOMEM, op->path, "out of host memory");
    }
    ref_linear_rows(host[op->inputs[0]], host[op->inputs[1]], host[op->inputs[2]], B, NA, K,
                    GR_DLRM_ACT_RELU, a);
    ref_linear_rows(a, host[op->inputs[3]], host[op->inputs[4]], B, D, NA, GR_DLRM_ACT_RELU, bot);
    for (int64_t b = 0; b < B; b++) {
        for (int64_t t = 0; t < T; t++)
            ref_pool(host[op->inputs[5 + t]], host[op->inputs[5 + T + t]], idx64,
                     gr_in(op, plan, 5 + (int)t)->shape[0], D, bag, b, op->fp[0], e + t * D);
        ref_interaction_row(bot + b * D, e, D, P, R + b * (D + P));
    }
    free(a);
    free(e);
    return GR_OK;
}

static gr_status setup_mlp_interaction(const gr_op *op, const gr_launch_ctx *ctx, void **state,
                                       gr_error *err) {
    (void)ctx;
    *state = NULL;
    return gr_setup_mlp_interaction(op, err);
}

/* ---------- registry ---------- */

static const char *const pooling_choices[] = {"sum", "mean", NULL};
static const char *const act_choices[] = {"relu", "none", "sigmoid", NULL};
static const char *const impl_choices[] = {"auto", "simt",   "lt",     "tiled",   "tc",
                                           "wg",   "smallk", "rowdot", "auto_wg", NULL};
static const char *const math_choices[] = {"fp32", "tf32", "tf32x3", NULL};

static const gr_attr_spec emb_attrs[] = {
    {"pooling", GR_ATTR_ENUM, 0, 0, "sum", pooling_choices, "bag pooling: sum (default) or mean"}};
static const gr_attr_spec linear_attrs[] = {
    {"act", GR_ATTR_ENUM, 0, 0, "relu", act_choices,
     "activation after the bias: relu (default), none, sigmoid"},
    {"impl", GR_ATTR_ENUM, 0, 0, "auto", impl_choices,
     "simt (own kernel for small batches), tiled (own register-tiled fp32 SGEMM for large "
     "batches), lt (cuBLASLt with bias/ReLU epilogue), tc (own TF32 tensor-core kernel on "
     "mma.sync; math tf32 or tf32x3), wg (own TF32 kernel on wgmma, compute capability 9.0 "
     "only; math tf32 or tf32x3), smallk (K <= 16: W's rows in registers, fp32), rowdot (N <= "
     "16: a warp per row, fp32) or auto: above 256 rows rowdot for N <= 4; "
     "else simt up to 256 rows or below 128 outputs; above, "
     "tiled for sigmoid and K <= 64, with math tf32x3 tc (lt in fp32 for K % 4 != 0), lt with "
     "math tf32 or K % 4 != 0, else tiled; auto_wg: as auto, but wg where auto takes tc or lt "
     "with math tf32x3 on compute capability 9.0"},
    {"math", GR_ATTR_ENUM, 0, 0, "fp32", math_choices,
     "fp32 (default: fp32 FMAs), tf32 (cuBLASLt or the tc kernel use TF32 tensor cores: ~1e-3 "
     "relative error; cuBLASLt falls back to fp32 for shapes without a TF32 algorithm) or "
     "tf32x3 (the tc kernel splits each operand into two TF32 parts and sums three products: "
     "fp32-level error on tensor cores); the simt and tiled kernels are fp32 either way"}};

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
    "x [B, D], E [B, T, D] fp32", "y [B, D + (T + 1) T / 2]", 2, 2, 1, 1, NULL, 0, GR_KF_PDL,
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
    emb_attrs,
    1,
    GR_KF_PDL,
    check_emb_interaction,
    gr_launch_embedding_interaction,
    ref_emb_interaction,
    NULL,
    NULL};
static const gr_kernel_def k_mlp_interaction = {
    "mlp_interaction",
    "the bottom MLP's last two Linear + ReLU layers fused in front of embedding_interaction, in "
    "one kernel (exact fp32 FMAs): a = relu(h W_a^T + b_a), bot = relu(a W_b^T + b_b), R[b] = "
    "[bot[b], dots of every pair (i, j), j < i, of (bot[b], pooled rows of table 0, ..., of table "
    "T-1)]; a never leaves the chip",
    "h [B, K], W_a [N_a, K] (N_a <= 64), b_a [N_a], W_b [D, N_a], b_b [D] fp32, then table_0 .. "
    "table_{T-1} [rows_t, D] fp32, then idx_0 .. idx_{T-1} [B] or [B, bag] int32/int64 (T <= 31)",
    "bot [B, D], R [B, D + (T + 1) T / 2]",
    7,
    5 + 2 * (GR_EMB_MAX_TABLES - 1), /* the weights, then T <= 31 tables and their indices */
    2,
    2,
    emb_attrs,
    1,
    GR_KF_PDL,
    check_mlp_interaction,
    gr_launch_mlp_interaction,
    ref_mlp_interaction,
    setup_mlp_interaction,
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
    3,
    GR_KF_LIBRARY | GR_KF_PDL,
    check_linear,
    launch_linear,
    ref_linear,
    setup_linear,
    teardown_linear};

const gr_kernel_def *const gr_dlrm_kernels[] = {
    &k_embedding_bag, &k_embedding_bag_tbe, &k_bias_add,        &k_sigmoid, &k_concat, &k_tril,
    &k_interaction,   &k_emb_interaction,   &k_mlp_interaction, &k_linear,  NULL};
