/* decode_step kernel family, host side: registry entries (argument schemas), checks (shapes,
 * dtypes, launch geometry, byte/flop accounting) and CPU references with double accumulation.
 * Device code: decode.cu (small kernels of the unfused variant), decode_gemv.cu (fused kernels).
 * Every check reports all the problems it finds, each naming the op and the buffer. */
#include "kernels/decode.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/parallel.h"
#include "kernels/common.h"

static const gr_dtype f32_only[] = {GR_FP32, GR_DTYPE_INVALID};

/* ---------- shared check helpers ---------- */

/* "[8192, 2048]" or "[2048]" */
static void dims_str(char *out, size_t size, int64_t d0, int64_t d1) {
    if (d1 < 0)
        snprintf(out, size, "[%lld]", (long long)d0);
    else
        snprintf(out, size, "[%lld, %lld]", (long long)d0, (long long)d1);
}

/* b must have exactly the shape [d0, d1] (d1 < 0: [d0]); `doc` names the dims, e.g. "[f, d]". */
static gr_status need_shape(const gr_op *op, const gr_buffer *b, const char *role, const char *doc,
                            int64_t d0, int64_t d1, gr_error *err) {
    int ok = d1 < 0 ? (b->ndim == 1 && b->shape[0] == d0)
                    : (b->ndim == 2 && b->shape[0] == d0 && b->shape[1] == d1);
    if (ok) return GR_OK;
    char have[96], want[64];
    gr_shape_str(b, have, sizeof(have));
    dims_str(want, sizeof(want), d0, d1);
    return gr_error_set(err, GR_ERR_INPUT, op->path,
                        "kernel \"%s\": %s \"%s\" has shape %s; it must be %s = %s",
                        op->kernel->name, role, b->name, have, doc, want);
}

/* fp32 accumulators: only the element count matters (layout [rows][B]). */
static gr_status need_acc(const gr_op *op, const gr_buffer *b, const char *role, const char *doc,
                          int64_t rows, int64_t B, gr_error *err) {
    gr_status st = gr_check_dtype(op, b, role, f32_only, err);
    if (b->numel != rows * B) {
        char have[96];
        gr_shape_str(b, have, sizeof(have));
        st =
            gr_error_set(err, GR_ERR_INPUT, op->path,
                         "kernel \"%s\": %s \"%s\" has shape %s (%lld elements); it must hold %s = "
                         "[%lld, %lld] fp32 values (%lld elements)",
                         op->kernel->name, role, b->name, have, (long long)b->numel, doc,
                         (long long)rows, (long long)B, (long long)(rows * B));
    }
    return st;
}

static gr_status need_dtype(const gr_op *op, const gr_buffer *b, const char *role,
                            const gr_buffer *x, gr_error *err) {
    if (b->dtype == x->dtype) return GR_OK;
    return gr_error_set(err, GR_ERR_INPUT, op->path,
                        "kernel \"%s\": %s \"%s\" is %s but x \"%s\" is %s; activations and "
                        "weights share one dtype",
                        op->kernel->name, role, b->name, gr_dtype_name(b->dtype), x->name,
                        gr_dtype_name(x->dtype));
}

/* The fused kernels read 16 bytes at a time: a dim must be a multiple of 16 / element size. */
static gr_status need_multiple(const gr_op *op, const char *what, int64_t v, int vec, gr_dtype t,
                               gr_error *err) {
    if (v % vec == 0) return GR_OK;
    return gr_error_set(err, GR_ERR_INPUT, op->path,
                        "kernel \"%s\": %s = %lld is not a multiple of %d; the fused kernels read "
                        "16 bytes (%d %s elements) at a time. Use a multiple of %d or the "
                        "unfused variant",
                        op->kernel->name, what, (long long)v, vec, vec, gr_dtype_name(t), vec);
}

/* No output may be one of the inputs, except outputs[allow_out] == inputs[allow_in]. */
static gr_status need_no_alias(const gr_op *op, const gr_plan *plan, int allow_out, int allow_in,
                               gr_error *err) {
    gr_status st = GR_OK;
    for (int o = 0; o < op->noutputs; o++)
        for (int i = 0; i < op->ninputs; i++)
            if (op->outputs[o] == op->inputs[i] && !(o == allow_out && i == allow_in))
                st = gr_error_set(err, GR_ERR_INPUT, op->path,
                                  "kernel \"%s\": outputs[%d] \"%s\" is also inputs[%d]; give it "
                                  "its own buffer",
                                  op->kernel->name, o, plan->bufs[op->outputs[o]].name, i);
    for (int o = 0; o < op->noutputs; o++)
        for (int p = 0; p < o; p++)
            if (op->outputs[o] == op->outputs[p])
                st = gr_error_set(err, GR_ERR_INPUT, op->path,
                                  "kernel \"%s\": outputs[%d] and outputs[%d] are both \"%s\"",
                                  op->kernel->name, p, o, plan->bufs[op->outputs[o]].name);
    return st;
}

/* Shared memory per block and per SM of the target, by compute capability. */
static void smem_caps(const gr_target *t, size_t *per_block, size_t *per_sm) {
    int cc = t->cc_major * 10 + t->cc_minor;
    if (cc == 90 || cc == 100 || cc == 103) {
        *per_block = 227u * 1024u;
        *per_sm = 228u * 1024u;
    } else if (cc == 80 || cc == 87) {
        *per_block = 163u * 1024u;
        *per_sm = 164u * 1024u;
    } else if (cc == 86 || cc == 89 || cc >= 120) {
        *per_block = 99u * 1024u;
        *per_sm = 100u * 1024u;
    } else if (cc == 70) {
        *per_block = 96u * 1024u;
        *per_sm = 96u * 1024u;
    } else {
        *per_block = 48u * 1024u;
        *per_sm = 64u * 1024u;
    }
}

/* Launch geometry of the fused GEMV kernels (see decode_gemv.cu), B <= gemv_max_b: batch
 * tile BT (a power of two <= 8 whose activation tile fits in shared memory; more than one tile
 * only when fp32 rows of a large K do not fit 8 at a time), 1-2 blocks of 256 threads per SM
 * (shared memory, and GR_DEC_BLOCKS_PER_SM for the registers), and the team size TW: the fewest
 * warps per task that leave at most 1/16 of the grid's teams without a task. Fewer, longer
 * tasks per team mean fewer reduction/epilogue phases; a few idle teams cost less than a second
 * round of tasks. */
/* Warps per task team: the fewest that leave at most 1/16 of the grid's teams (bpt blocks of 8
 * warps per batch tile) without one of the ntasks tasks. */
static int team_width(int64_t bpt, int64_t ntasks) {
    int tw = 1;
    while (tw < 8 && bpt * (8 / tw) > ntasks + ntasks / 16)
        tw *= 2;
    return tw;
}

static gr_status gemv_geometry(gr_op *op, const gr_plan *plan, int is_down, int64_t B, int64_t K,
                               int64_t N, int64_t rank, int esize, const char *kdim,
                               gr_error *err) {
    size_t per_block, per_sm;
    smem_caps(&plan->target, &per_block, &per_sm);
    int bt = 1;
    while (bt < 8 && bt < B)
        bt *= 2;
    gr_dec_layout l = gr_dec_smem_layout(is_down, bt, K, rank, esize);
    while (bt > 1 && l.total > per_block) {
        bt /= 2;
        l = gr_dec_smem_layout(is_down, bt, K, rank, esize);
    }
    if (l.total > per_block)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": %s = %lld needs %.1f KB of shared memory per block "
                            "for one batch row; the target (%s, cc %d.%d) allows %.1f KB. Use a "
                            "smaller %s or the unfused variant",
                            op->kernel->name, kdim, (long long)K, (double)l.total / 1024.0,
                            plan->target.name, plan->target.cc_major, plan->target.cc_minor,
                            (double)per_block / 1024.0, kdim);
    int bps = (l.total + 1024u) * 2u <= per_sm ? 2 : 1;
    if (bps > GR_DEC_BLOCKS_PER_SM(bt)) bps = GR_DEC_BLOCKS_PER_SM(bt);
    int64_t tiles = (B + bt - 1) / bt;
    int64_t target_blocks = (int64_t)(plan->target.sm_count > 0 ? plan->target.sm_count : 1) * bps;
    int64_t bpt = target_blocks / tiles;
    if (bpt < 1) bpt = 1;
    int64_t ntasks = is_down ? (N + 3) / 4 : (N + 1) / 2;
    int tw = team_width(bpt, ntasks);
    int64_t teams = 8 / tw;
    if (bpt * teams > ntasks) bpt = (ntasks + teams - 1) / teams;
    if (bpt * tiles > 0x7fffffffLL)
        return gr_error_set(err, GR_ERR_INPUT, op->path, "kernel \"%s\": grid too large (B = %lld)",
                            op->kernel->name, (long long)B);
    op->grid[0] = (unsigned)(bpt * tiles);
    op->grid[1] = op->grid[2] = 1;
    op->block[0] = 256;
    op->block[1] = op->block[2] = 1;
    op->smem = l.total;
    op->ip[GR_DEC_BT] = bt;
    op->ip[GR_DEC_TW] = tw;
    op->ip[GR_DEC_TILES] = tiles;
    return GR_OK;
}

/* B > gemv_max_b: the main product through cuBLAS (fp32 into the op's scratch), then one
 * epilogue kernel with a block per (tile of GR_DEC_EPI_THREADS outputs, batch row). The launch
 * dims are the epilogue's; cuBLAS picks its own, so the op's launch count is the library's. The
 * scratch is written by the GEMMs and read back by the epilogue: counted as HBM traffic. */
static gr_status blas_geometry(gr_op *op, int is_down, int64_t B, int64_t K, int64_t N,
                               int64_t rank, int esize, int maxb, gr_error *err) {
    size_t smem =
        (size_t)(is_down ? rank + 2 * GR_DEC_EPI_THREADS : 2 * rank + GR_DEC_EPI_THREADS) *
        sizeof(float);
    if (smem > 48u * 1024u || B > 65535)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": r = %lld or B = %lld is too large for the cuBLAS path "
                            "(B > gemv_max_b = %d); use r <= 6000 and B <= 65535",
                            op->kernel->name, (long long)rank, (long long)B, maxb);
    op->ip[GR_DEC_FLAGS] |= GR_DEC_F_BLAS;
    op->ip[GR_DEC_BT] = 0;
    op->ip[GR_DEC_TW] = 0;
    op->ip[GR_DEC_TILES] = 0;
    op->grid[0] = (unsigned)((N + GR_DEC_EPI_THREADS - 1) / GR_DEC_EPI_THREADS);
    op->grid[1] = (unsigned)B;
    op->grid[2] = 1;
    op->block[0] = GR_DEC_EPI_THREADS;
    op->block[1] = op->block[2] = 1;
    op->smem = smem;
    op->launches = -1;
    /* the scratch's parts without their 16-byte alignment padding */
    double scratch = is_down ? (double)B * (double)N * 4.0
                             : (double)B * (double)K * esize + 2.0 * (double)B * (double)N * 4.0;
    op->bytes_read += scratch;
    op->bytes_written += scratch;
    op->scratch = gr_dec_scratch_layout(is_down, B, K, N, esize).total; /* the arena's slice */
    snprintf(op->form, sizeof(op->form), "cublas, gemv_max_b %d", maxb);
    return GR_OK;
}

/* The op's gemv_max_b attr (default GR_DEC_GEMV_MAX_B): the largest B the weight-streaming GEMV
 * kernels run; above it the per-layer ops take the cuBLAS path and decode_step refuses. The
 * workload sets it (decode_step.json's param of that name) where the crossover was measured. */
static gr_status gemv_max_b(const gr_op *op, int *out, gr_error *err) {
    double v = gr_op_attr_num(op, GR_DEC_ATTR_GEMV_MAX_B, GR_DEC_GEMV_MAX_B);
    *out = GR_DEC_GEMV_MAX_B;
    if (v >= 1 && v <= GR_DEC_GEMV_MAX_B && v == floor(v)) {
        *out = (int)v;
        return GR_OK;
    }
    char path[GR_PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s.attrs.%s", op->path, GR_DEC_ATTR_GEMV_MAX_B);
    return gr_error_set(err, GR_ERR_INPUT, path,
                        "kernel \"%s\": %s = %g is outside [1, %d]: it is the largest batch the "
                        "weight-streaming GEMV kernels run, and they serve at most %d rows (batch "
                        "tiles of up to %d); above it the main products go through cuBLAS",
                        op->kernel->name, GR_DEC_ATTR_GEMV_MAX_B, v, GR_DEC_GEMV_MAX_B,
                        GR_DEC_GEMV_MAX_B, GR_DEC_GEMV_MAX_B);
}

/* The GEMV kernels for B <= gemv_max_b, cuBLAS above. Call after the byte accounting: the cuBLAS
 * path adds its scratch traffic. op->form names the path the plan takes. */
static gr_status fused_geometry(gr_op *op, const gr_plan *plan, int is_down, int64_t B, int64_t K,
                                int64_t N, int64_t rank, int esize, int maxb, const char *kdim,
                                gr_error *err) {
    op->ip[GR_DEC_MAXB] = maxb;
    if (B > maxb) return blas_geometry(op, is_down, B, K, N, rank, esize, maxb, err);
    GR_TRY(gemv_geometry(op, plan, is_down, B, K, N, rank, esize, kdim, err));
    snprintf(op->form, sizeof(op->form), "gemv bt%lld, gemv_max_b %d", (long long)op->ip[GR_DEC_BT],
             maxb);
    return GR_OK;
}

/* ---------- fused kernels: checks ---------- */

/* decode_norm_stats: inputs x [B, d], w_norm [d], A_gate [r, d], A_up [r, d];
 * outputs ssq [B], tin [2r, B], optional tdown [r, B] to zero. */
static gr_status check_norm_stats(gr_op *op, const gr_plan *plan, gr_error *err) {
    const gr_buffer *x = gr_in(op, plan, 0), *Ag = gr_in(op, plan, 2);
    gr_status st = gr_check_dtype(op, x, "inputs[0] (x)", gr_float_dtypes, err);
    if (st != GR_OK) return st;
    if (x->ndim != 2 || Ag->ndim != 2) {
        char sx[96], sa[96];
        gr_shape_str(x, sx, sizeof(sx));
        gr_shape_str(Ag, sa, sizeof(sa));
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": x \"%s\" %s must be [B, d] and A_gate \"%s\" %s must "
                            "be [r, d]",
                            op->kernel->name, x->name, sx, Ag->name, sa);
    }
    int64_t B = x->shape[0], d = x->shape[1], r = Ag->shape[0];
    const char *roles[] = {"inputs[1] (w_norm)", "inputs[2] (A_gate)", "inputs[3] (A_up)"};
    for (int i = 1; i < 4; i++) {
        const gr_buffer *b = gr_in(op, plan, i);
        if (need_dtype(op, b, roles[i - 1], x, err) != GR_OK) st = GR_ERR_INPUT;
        if (need_shape(op, b, roles[i - 1], i == 1 ? "[d]" : "[r, d]", i == 1 ? d : r,
                       i == 1 ? -1 : d, err) != GR_OK)
            st = GR_ERR_INPUT;
    }
    if (need_acc(op, gr_out(op, plan, 0), "outputs[0] (ssq)", "[1, B]", 1, B, err) != GR_OK)
        st = GR_ERR_INPUT;
    if (need_acc(op, gr_out(op, plan, 1), "outputs[1] (tin)", "[2r, B]", 2 * r, B, err) != GR_OK)
        st = GR_ERR_INPUT;
    if (op->noutputs > 2 && need_acc(op, gr_out(op, plan, 2), "outputs[2] (tdown, zeroed)",
                                     "[r, B]", r, B, err) != GR_OK)
        st = GR_ERR_INPUT;
    if (need_no_alias(op, plan, -1, -1, err) != GR_OK) st = GR_ERR_INPUT;
    if (B > 65535)
        st = gr_error_set(err, GR_ERR_INPUT, op->path, "kernel \"%s\": B = %lld exceeds 65535",
                          op->kernel->name, (long long)B);
    if (st != GR_OK) return st;
    op->ip[GR_DEC_B] = B;
    op->ip[GR_DEC_K] = d;
    op->ip[GR_DEC_N] = 2 * r + 1;
    op->ip[GR_DEC_RANK] = r;
    op->ip[GR_DEC_FLAGS] = op->noutputs > 2 ? GR_DEC_F_ZERO : 0;
    op->grid[0] = (unsigned)(2 * r + 1);
    op->grid[1] = (unsigned)B;
    op->grid[2] = 1;
    op->block[0] = 256;
    op->block[1] = op->block[2] = 1;
    op->smem = 0;
    op->bytes_read = gr_bytes_in(op, plan);
    op->bytes_written = gr_bytes_out(op, plan);
    op->flops = (double)B * (double)d * (2.0 + 6.0 * (double)r); /* x^2; x*w then 2r FMAs */
    op->launches = 1;
    return GR_OK;
}

/* x [B, d], act [B, f] and the op's LoRA-B weight (`role` "B_gate" [f, r] or "B_down" [d, r])
 * must be 2-D before their dims are read; the message names all three with their shapes. */
static gr_status check_step_ranks(const gr_op *op, const gr_buffer *x, const gr_buffer *act,
                                  const gr_buffer *lb, const char *role, const char *want,
                                  gr_error *err) {
    if (x->ndim == 2 && act->ndim == 2 && lb->ndim == 2) return GR_OK;
    char sx[96], sa[96], sb[96];
    gr_shape_str(x, sx, sizeof(sx));
    gr_shape_str(act, sa, sizeof(sa));
    gr_shape_str(lb, sb, sizeof(sb));
    return gr_error_set(err, GR_ERR_INPUT, op->path,
                        "kernel \"%s\": x \"%s\" %s must be [B, d], act \"%s\" %s must be [B, f] "
                        "and %s \"%s\" %s must be %s",
                        op->kernel->name, x->name, sx, act->name, sa, role, lb->name, sb, want);
}

/* decode_gate_up: inputs x [B, d], w_norm [d], ssq [B], tin [2r, B], W_gate [f, d], W_up [f, d],
 * B_gate [f, r], B_up [f, r], A_down [r, f]; outputs act [B, f], tdown [r, B] (accumulated),
 * optional ssq_next [B] and tin_next [2r, B] (zeroed for the down kernel). */
static gr_status check_gate_up(gr_op *op, const gr_plan *plan, gr_error *err) {
    const gr_buffer *x = gr_in(op, plan, 0), *act = gr_out(op, plan, 0), *Bg = gr_in(op, plan, 6);
    gr_status st = gr_check_dtype(op, x, "inputs[0] (x)", gr_float_dtypes, err);
    if (st != GR_OK) return st;
    GR_TRY(check_step_ranks(op, x, act, Bg, "B_gate", "[f, r]", err));
    int64_t B = x->shape[0], d = x->shape[1], f = act->shape[1], r = Bg->shape[1];
    struct {
        int in;
        const char *role, *doc;
        int64_t d0, d1;
    } w[] = {{1, "inputs[1] (w_norm)", "[d]", d, -1}, {4, "inputs[4] (W_gate)", "[f, d]", f, d},
             {5, "inputs[5] (W_up)", "[f, d]", f, d}, {6, "inputs[6] (B_gate)", "[f, r]", f, r},
             {7, "inputs[7] (B_up)", "[f, r]", f, r}, {8, "inputs[8] (A_down)", "[r, f]", r, f}};
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
        const gr_buffer *b = gr_in(op, plan, w[i].in);
        if (need_dtype(op, b, w[i].role, x, err) != GR_OK) st = GR_ERR_INPUT;
        if (need_shape(op, b, w[i].role, w[i].doc, w[i].d0, w[i].d1, err) != GR_OK)
            st = GR_ERR_INPUT;
    }
    if (need_dtype(op, act, "outputs[0] (act)", x, err) != GR_OK) st = GR_ERR_INPUT;
    if (act->shape[0] != B) st = need_shape(op, act, "outputs[0] (act)", "[B, f]", B, f, err);
    if (need_acc(op, gr_in(op, plan, 2), "inputs[2] (ssq)", "[1, B]", 1, B, err) != GR_OK)
        st = GR_ERR_INPUT;
    if (need_acc(op, gr_in(op, plan, 3), "inputs[3] (tin)", "[2r, B]", 2 * r, B, err) != GR_OK)
        st = GR_ERR_INPUT;
    if (need_acc(op, gr_out(op, plan, 1), "outputs[1] (tdown)", "[r, B]", r, B, err) != GR_OK)
        st = GR_ERR_INPUT;
    if (op->noutputs == 3)
        st =
            gr_error_set(err, GR_ERR_INPUT, op->path,
                         "kernel \"%s\": give both outputs[2] (ssq_next) and outputs[3] (tin_next) "
                         "to zero the next layer's statistics, or neither",
                         op->kernel->name);
    if (op->noutputs == 4) {
        if (need_acc(op, gr_out(op, plan, 2), "outputs[2] (ssq_next)", "[1, B]", 1, B, err) !=
            GR_OK)
            st = GR_ERR_INPUT;
        if (need_acc(op, gr_out(op, plan, 3), "outputs[3] (tin_next)", "[2r, B]", 2 * r, B, err) !=
            GR_OK)
            st = GR_ERR_INPUT;
    }
    int vec = (int)(16 / gr_dtype_size(x->dtype));
    if (need_multiple(op, "d", d, vec, x->dtype, err) != GR_OK) st = GR_ERR_INPUT;
    if (need_multiple(op, "f", f, vec, x->dtype, err) != GR_OK) st = GR_ERR_INPUT;
    if (need_multiple(op, "r", r, vec, x->dtype, err) != GR_OK) st = GR_ERR_INPUT;
    if (need_no_alias(op, plan, -1, -1, err) != GR_OK) st = GR_ERR_INPUT;
    if (f > 0x3fffffffLL || d > 0x3fffffffLL)
        st = gr_error_set(err, GR_ERR_INPUT, op->path, "kernel \"%s\": d or f exceeds 2^30",
                          op->kernel->name);
    int maxb;
    if (gemv_max_b(op, &maxb, err) != GR_OK) st = GR_ERR_INPUT;
    if (st != GR_OK) return st;
    op->ip[GR_DEC_B] = B;
    op->ip[GR_DEC_K] = d;
    op->ip[GR_DEC_N] = f;
    op->ip[GR_DEC_RANK] = r;
    op->ip[GR_DEC_FLAGS] = op->noutputs == 4 ? GR_DEC_F_ZERO : 0;
    op->fp[0] = gr_op_attr_num(op, "scale", 1.0);
    op->fp[1] = gr_op_attr_num(op, "eps", 1e-5);
    if (!(op->fp[1] >= 0))
        return gr_error_set(err, GR_ERR_INPUT, op->path, "kernel \"%s\": eps = %g must be >= 0",
                            op->kernel->name, op->fp[1]);
    op->bytes_read = gr_bytes_in(op, plan);
    op->bytes_written = gr_bytes_out(op, plan);
    /* per batch row: 2 projections x (W: 2fd + B_lora: 2fr), A_down act: 2rf, silu*mul ~6f */
    op->flops = (double)B * (4.0 * (double)f * (double)d + 4.0 * (double)f * (double)r +
                             2.0 * (double)r * (double)f + 6.0 * (double)f);
    op->launches = 1;
    return fused_geometry(op, plan, 0, B, d, f, r, (int)gr_dtype_size(x->dtype), maxb, "d", err);
}

/* decode_down: inputs x [B, d], act [B, f], W_down [d, f], B_down [d, r], tdown [r, B], and for
 * the next layer's statistics w_norm_next [d], A_gate_next [r, d], A_up_next [r, d];
 * outputs x_out [B, d] (may be x), then ssq_next [B] and tin_next [2r, B] (accumulated) when the
 * next layer's inputs are given, and last an optional tdown_next [r, B] to zero. */
static gr_status check_down(gr_op *op, const gr_plan *plan, gr_error *err) {
    const gr_buffer *x = gr_in(op, plan, 0), *act = gr_in(op, plan, 1), *Bd = gr_in(op, plan, 3);
    gr_status st = gr_check_dtype(op, x, "inputs[0] (x)", gr_float_dtypes, err);
    if (st != GR_OK) return st;
    GR_TRY(check_step_ranks(op, x, act, Bd, "B_down", "[d, r]", err));
    int64_t B = x->shape[0], d = x->shape[1], f = act->shape[1], r = Bd->shape[1];
    int next = op->ninputs == 8;
    if (op->ninputs != 5 && op->ninputs != 8)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\" takes 5 inputs (x, act, W_down, B_down, tdown) or 8 "
                            "(also w_norm, A_gate, A_up of the next layer); got %d",
                            op->kernel->name, op->ninputs);
    int want_out = next ? 3 : 1;
    if (op->noutputs != want_out && op->noutputs != want_out + 1)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": with %d inputs the outputs are x%s and optionally a "
                            "tdown to zero (%d or %d outputs); got %d",
                            op->kernel->name, op->ninputs,
                            next ? ", ssq_next, tin_next (the next layer's statistics)" : "",
                            want_out, want_out + 1, op->noutputs);
    struct {
        int in;
        const char *role, *doc;
        int64_t d0, d1;
    } w[] = {{1, "inputs[1] (act)", "[B, f]", B, f},
             {2, "inputs[2] (W_down)", "[d, f]", d, f},
             {3, "inputs[3] (B_down)", "[d, r]", d, r},
             {5, "inputs[5] (w_norm_next)", "[d]", d, -1},
             {6, "inputs[6] (A_gate_next)", "[r, d]", r, d},
             {7, "inputs[7] (A_up_next)", "[r, d]", r, d}};
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
        if (w[i].in >= op->ninputs) continue;
        const gr_buffer *b = gr_in(op, plan, w[i].in);
        if (need_dtype(op, b, w[i].role, x, err) != GR_OK) st = GR_ERR_INPUT;
        if (need_shape(op, b, w[i].role, w[i].doc, w[i].d0, w[i].d1, err) != GR_OK)
            st = GR_ERR_INPUT;
    }
    if (need_acc(op, gr_in(op, plan, 4), "inputs[4] (tdown)", "[r, B]", r, B, err) != GR_OK)
        st = GR_ERR_INPUT;
    const gr_buffer *xo = gr_out(op, plan, 0);
    if (need_dtype(op, xo, "outputs[0] (x_out)", x, err) != GR_OK) st = GR_ERR_INPUT;
    if (need_shape(op, xo, "outputs[0] (x_out)", "[B, d]", B, d, err) != GR_OK) st = GR_ERR_INPUT;
    if (next) {
        if (need_acc(op, gr_out(op, plan, 1), "outputs[1] (ssq_next)", "[1, B]", 1, B, err) !=
            GR_OK)
            st = GR_ERR_INPUT;
        if (need_acc(op, gr_out(op, plan, 2), "outputs[2] (tin_next)", "[2r, B]", 2 * r, B, err) !=
            GR_OK)
            st = GR_ERR_INPUT;
    }
    int zero = op->noutputs == want_out + 1;
    if (zero && need_acc(op, gr_out(op, plan, op->noutputs - 1), "last output (tdown_next, zeroed)",
                         "[r, B]", r, B, err) != GR_OK)
        st = GR_ERR_INPUT;
    int vec = (int)(16 / gr_dtype_size(x->dtype));
    if (need_multiple(op, "d", d, vec, x->dtype, err) != GR_OK) st = GR_ERR_INPUT;
    if (need_multiple(op, "f", f, vec, x->dtype, err) != GR_OK) st = GR_ERR_INPUT;
    if (need_multiple(op, "r", r, vec, x->dtype, err) != GR_OK) st = GR_ERR_INPUT;
    if (need_no_alias(op, plan, 0, 0, err) != GR_OK) st = GR_ERR_INPUT;
    if (f > 0x3fffffffLL || d > 0x3fffffffLL)
        st = gr_error_set(err, GR_ERR_INPUT, op->path, "kernel \"%s\": d or f exceeds 2^30",
                          op->kernel->name);
    int maxb;
    if (gemv_max_b(op, &maxb, err) != GR_OK) st = GR_ERR_INPUT;
    if (st != GR_OK) return st;
    op->ip[GR_DEC_B] = B;
    op->ip[GR_DEC_K] = f;
    op->ip[GR_DEC_N] = d;
    op->ip[GR_DEC_RANK] = r;
    op->ip[GR_DEC_FLAGS] = (next ? GR_DEC_F_NEXT : 0) | (zero ? GR_DEC_F_ZERO : 0);
    op->fp[0] = gr_op_attr_num(op, "scale", 1.0);
    op->bytes_read = gr_bytes_in(op, plan);
    op->bytes_written = gr_bytes_out(op, plan);
    op->flops = (double)B * (2.0 * (double)d * (double)f + 2.0 * (double)d * (double)r + (double)d +
                             (next ? 2.0 * (2.0 * (double)r + 1.0) * (double)d : 0.0));
    op->launches = 1;
    return fused_geometry(op, plan, 1, B, f, d, r, (int)gr_dtype_size(x->dtype), maxb, "f", err);
}

/* decode_step: the whole step in one persistent kernel (decode_gemv.cu). inputs x [B, d], then
 * per layer w_norm [d], W_gate [f, d], W_up [f, d], W_down [d, f], A_gate [r, d], A_up [r, d],
 * A_down [r, f], B_gate [f, r], B_up [f, r], B_down [d, r] (GR_DEC_P_*); outputs x (in place)
 * and act [B, f]. One block set stays resident for the step (grid = SMs x blocks per SM) and
 * runs the norm statistics, then per layer the gate_up and the down phase of the per-layer
 * kernels, separated by grid barriers; each phase issues its first weight loads before it
 * waits at the barrier. Both phases share the grid, so the batch tile and the blocks per SM
 * are picked for the larger of their shared-memory layouts; the team width per phase. */
static const char *const step_roles[GR_DEC_P_PER_LAYER] = {
    "w_norm", "W_gate", "W_up", "W_down", "A_gate", "A_up", "A_down", "B_gate", "B_up", "B_down"};

static gr_status check_step(gr_op *op, const gr_plan *plan, gr_error *err) {
    const gr_buffer *x = gr_in(op, plan, 0);
    gr_status st = gr_check_dtype(op, x, "inputs[0] (x)", gr_float_dtypes, err);
    if (st != GR_OK) return st;
    int nl = op->ninputs - 1;
    if (nl < GR_DEC_P_PER_LAYER || nl % GR_DEC_P_PER_LAYER != 0 ||
        nl / GR_DEC_P_PER_LAYER > GR_DEC_P_MAX_LAYERS)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\" takes x and then %d weights per layer (%s, %s, %s, %s, "
                            "%s, %s, %s, %s, %s, %s), for 1 to %d layers: 1 + %d L inputs; got %d. "
                            "List them with a repeat block: {\"repeat\": \"L\", \"var\": \"i\", "
                            "\"names\": [\"w_norm.{i}\", ...]}",
                            op->kernel->name, GR_DEC_P_PER_LAYER, step_roles[0], step_roles[1],
                            step_roles[2], step_roles[3], step_roles[4], step_roles[5],
                            step_roles[6], step_roles[7], step_roles[8], step_roles[9],
                            GR_DEC_P_MAX_LAYERS, GR_DEC_P_PER_LAYER, op->ninputs);
    int L = nl / GR_DEC_P_PER_LAYER;
    const gr_buffer *act = gr_out(op, plan, 1), *Bg = gr_in(op, plan, 1 + GR_DEC_P_BGATE);
    GR_TRY(check_step_ranks(op, x, act, Bg, "B_gate", "[f, r]", err));
    int64_t B = x->shape[0], d = x->shape[1], f = act->shape[1], r = Bg->shape[1];
    const char *docs[GR_DEC_P_PER_LAYER] = {"[d]",    "[f, d]", "[f, d]", "[d, f]", "[r, d]",
                                            "[r, d]", "[r, f]", "[f, r]", "[f, r]", "[d, r]"};
    const int64_t d0[GR_DEC_P_PER_LAYER] = {d, f, f, d, r, r, r, f, f, d};
    const int64_t d1[GR_DEC_P_PER_LAYER] = {-1, d, d, f, d, d, f, r, r, r};
    for (int l = 0; l < L; l++)
        for (int k = 0; k < GR_DEC_P_PER_LAYER; k++) {
            int i = 1 + GR_DEC_P_PER_LAYER * l + k;
            char role[64];
            snprintf(role, sizeof(role), "inputs[%d] (%s of layer %d)", i, step_roles[k], l);
            const gr_buffer *b = gr_in(op, plan, i);
            if (need_dtype(op, b, role, x, err) != GR_OK) st = GR_ERR_INPUT;
            if (need_shape(op, b, role, docs[k], d0[k], d1[k], err) != GR_OK) st = GR_ERR_INPUT;
        }
    if (op->outputs[0] != op->inputs[0])
        st = gr_error_set(err, GR_ERR_INPUT, op->path,
                          "kernel \"%s\": outputs[0] \"%s\" must be inputs[0] \"%s\": the step "
                          "updates x in place",
                          op->kernel->name, plan->bufs[op->outputs[0]].name, x->name);
    if (need_dtype(op, act, "outputs[1] (act)", x, err) != GR_OK) st = GR_ERR_INPUT;
    if (act->shape[0] != B) st = need_shape(op, act, "outputs[1] (act)", "[B, f]", B, f, err);
    int vec = (int)(16 / gr_dtype_size(x->dtype));
    if (need_multiple(op, "d", d, vec, x->dtype, err) != GR_OK) st = GR_ERR_INPUT;
    if (need_multiple(op, "f", f, vec, x->dtype, err) != GR_OK) st = GR_ERR_INPUT;
    if (need_multiple(op, "r", r, vec, x->dtype, err) != GR_OK) st = GR_ERR_INPUT;
    if (need_no_alias(op, plan, 0, 0, err) != GR_OK) st = GR_ERR_INPUT;
    int maxb;
    if (gemv_max_b(op, &maxb, err) != GR_OK)
        st = GR_ERR_INPUT;
    else if (B > maxb)
        st = gr_error_set(err, GR_ERR_INPUT, op->path,
                          "kernel \"%s\" streams the weights once per batch tile and serves B <= "
                          "gemv_max_b = %d (at most %d); B = %lld: use the per-layer kernels "
                          "(decode_gate_up, decode_down), which call cuBLAS above their gemv_max_b",
                          op->kernel->name, maxb, GR_DEC_GEMV_MAX_B, (long long)B);
    if (f > 0x3fffffffLL || d > 0x3fffffffLL)
        st = gr_error_set(err, GR_ERR_INPUT, op->path, "kernel \"%s\": d or f exceeds 2^30",
                          op->kernel->name);
    if (st != GR_OK) return st;
    op->ip[GR_DEC_B] = B;
    op->ip[GR_DEC_K] = d;
    op->ip[GR_DEC_N] = f;
    op->ip[GR_DEC_RANK] = r;
    op->ip[GR_DEC_MAXB] = maxb;
    op->fp[0] = gr_op_attr_num(op, "scale", 1.0);
    op->fp[1] = gr_op_attr_num(op, "eps", 1e-5);
    if (!(op->fp[1] >= 0))
        return gr_error_set(err, GR_ERR_INPUT, op->path, "kernel \"%s\": eps = %g must be >= 0",
                            op->kernel->name, op->fp[1]);

    /* geometry: one batch tile and grid for both phases */
    int esize = (int)gr_dtype_size(x->dtype);
    size_t per_block, per_sm;
    smem_caps(&plan->target, &per_block, &per_sm);
    int bt = 1;
    while (bt < 8 && bt < B)
        bt *= 2;
    size_t smem = 0;
    for (;; bt /= 2) {
        gr_dec_layout lg = gr_dec_smem_layout(0, bt, d, r, esize);
        gr_dec_layout ld = gr_dec_smem_layout(1, bt, f, r, esize);
        smem = lg.total > ld.total ? lg.total : ld.total;
        if (smem <= per_block || bt == 1) break;
    }
    if (smem > per_block)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": d = %lld, f = %lld need %.1f KB of shared memory per "
                            "block for one batch row; the target (%s, cc %d.%d) allows %.1f KB. "
                            "Use smaller d and f or the fused variant (per-layer kernels)",
                            op->kernel->name, (long long)d, (long long)f, (double)smem / 1024.0,
                            plan->target.name, plan->target.cc_major, plan->target.cc_minor,
                            (double)per_block / 1024.0);
    int bps = (smem + 1024u) * 2u <= per_sm ? 2 : 1;
    if (bps > GR_DEC_BLOCKS_PER_SM(bt)) bps = GR_DEC_BLOCKS_PER_SM(bt);
    int64_t tiles = (B + bt - 1) / bt;
    int64_t grid = (int64_t)(plan->target.sm_count > 0 ? plan->target.sm_count : 1) * bps;
    if (grid < tiles) grid = tiles;
    grid = grid / tiles * tiles; /* every block works on one tile in every phase */
    int64_t bpt = grid / tiles;
    int tw_g = team_width(bpt, f / 2), tw_d = team_width(bpt, d / 4);
    op->grid[0] = (unsigned)grid;
    op->grid[1] = op->grid[2] = 1;
    op->block[0] = 256;
    op->block[1] = op->block[2] = 1;
    op->smem = smem;
    op->ip[GR_DEC_BT] = bt;
    op->ip[GR_DEC_TW] = tw_g;
    op->ip[GR_DEC_TILES] = tiles;
    op->ip[GR_DEC_S_TW_DOWN] = tw_d;

    /* accounting: every weight once; per layer x read by gate_up and read + written by down, act
     * written by gate_up and read by down (L2-resident in practice, counted as HBM like the
     * per-layer kernels' buffers); the statistics (< 1 KB) are left out */
    double xb = (double)(B * d) * esize, ab = (double)(B * f) * esize;
    op->bytes_read = gr_bytes_in(op, plan) - xb + (double)L * (2.0 * xb + ab);
    op->bytes_written = (double)L * (xb + ab);
    double fl_norm = (double)B * (double)d * (2.0 + 6.0 * (double)r);
    double fl_gu = (double)B * (4.0 * (double)f * (double)d + 4.0 * (double)f * (double)r +
                                2.0 * (double)r * (double)f + 6.0 * (double)f);
    double fl_dn = (double)B * (2.0 * (double)d * (double)f + 2.0 * (double)d * (double)r +
                                (double)d + 2.0 * (2.0 * (double)r + 1.0) * (double)d);
    op->flops = fl_norm + (double)L * (fl_gu + fl_dn) -
                (double)B * 2.0 * (2.0 * (double)r + 1.0) * (double)d; /* no stats after last */
    op->launches = 1;
    return GR_OK;
}

/* ---------- fused kernels: CPU references (double accumulation) ---------- */

static float bf16_bits_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* Elements [off, off + n) of a host buffer as doubles (the switch hoisted out of the loop). */
static void load_row(const void *base, gr_dtype t, size_t off, size_t n, double *out) {
    switch (t) {
    case GR_FP32: {
        const float *p = (const float *)base + off;
        for (size_t i = 0; i < n; i++)
            out[i] = p[i];
        break;
    }
    case GR_BF16: {
        const uint16_t *p = (const uint16_t *)base + off;
        for (size_t i = 0; i < n; i++)
            out[i] = bf16_bits_to_f32(p[i]);
        break;
    }
    default:
        for (size_t i = 0; i < n; i++)
            out[i] = gr_load(base, t, off + i);
        break;
    }
}

static double dot(const double *a, const double *b, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* Store v rounded to t and return the stored value (what the next kernel reads back). */
static double store_rounded(void *base, gr_dtype t, size_t i, double v) {
    gr_store(base, t, i, v);
    return gr_load(base, t, i);
}

static gr_status nomem(const gr_op *op, gr_error *err) {
    return gr_error_set(err, GR_ERR_NOMEM, op->path, "out of host memory for the CPU reference");
}

static void zero_f32(void *p, int64_t n) {
    if (p) memset(p, 0, (size_t)n * sizeof(float));
}

/* The reference math of the fused kernels on raw host buffers, shared by the per-layer ops and
 * the persistent step (which keeps its statistics in its own scratch). Sizes: x [B, d], act
 * [B, f], stats ssq [B], tin [2r, B], td [r, B] in fp32, everything else in the weight dtype t. */
typedef struct dec_dims {
    int64_t B, d, f, r;
    gr_dtype t;
    double scale, eps;
} dec_dims;

/* ssq = sum x^2 and tin = [A_gate; A_up] (x * w) per batch row (plain stores). */
static int norm_stats_math(const dec_dims *D, const void *x, const void *wv, const void *Ag,
                           const void *Au, float *ssq, float *tin) {
    int64_t B = D->B, d = D->d, r = D->r;
    double *xb = malloc((size_t)d * sizeof(double)), *w = malloc((size_t)d * sizeof(double));
    double *a = malloc((size_t)d * sizeof(double));
    if (!xb || !w || !a) {
        free(xb), free(w), free(a);
        return -1;
    }
    load_row(wv, D->t, 0, (size_t)d, w);
    for (int64_t b = 0; b < B; b++) {
        load_row(x, D->t, (size_t)(b * d), (size_t)d, xb);
        ssq[b] = (float)dot(xb, xb, d);
        for (int64_t k = 0; k < d; k++)
            xb[k] *= w[k];
        for (int64_t kind = 0; kind < 2; kind++)
            for (int64_t j = 0; j < r; j++) {
                load_row(kind ? Au : Ag, D->t, (size_t)(j * d), (size_t)d, a);
                tin[(kind * r + j) * B + b] = (float)dot(a, xb, d);
            }
    }
    free(xb), free(w), free(a);
    return 0;
}

typedef struct gate_up_host {
    const void *x, *w, *Wg, *Wu, *Bg, *Bu, *Ad;
    const float *ssq, *tin;
    void *act;
    float *td; /* accumulated */
} gate_up_host;

/* gate_up's outputs in parallel (core/parallel.h), 64 at a time: each chunk keeps its own partial
 * of A_down act, summed in chunk order afterwards, so the result does not depend on the threads. */
#define DEC_REF_CHUNK 64

typedef struct gate_up_par {
    const dec_dims *D;
    const gate_up_host *h;
    const double *xw, *ad, *rstd;
    double *tpart; /* [chunks][r * B] */
} gate_up_par;

static int gate_up_chunk(void *ctx, int64_t c, int64_t n0, int64_t n1) {
    const gate_up_par *P = ctx;
    const dec_dims *D = P->D;
    const gate_up_host *h = P->h;
    int64_t B = D->B, d = D->d, f = D->f, r = D->r;
    gr_dtype t = D->t;
    double *rg = malloc((size_t)d * sizeof(double)), *ru = malloc((size_t)d * sizeof(double));
    double *bg = malloc((size_t)(r ? r : 1) * sizeof(double)), *bu = malloc((size_t)(r ? r : 1) * sizeof(double));
    if (!rg || !ru || !bg || !bu) {
        free(rg), free(ru), free(bg), free(bu);
        return -1;
    }
    double *tacc = P->tpart + c * r * B;
    for (int64_t n = n0; n < n1; n++) {
        load_row(h->Wg, t, (size_t)(n * d), (size_t)d, rg);
        load_row(h->Wu, t, (size_t)(n * d), (size_t)d, ru);
        load_row(h->Bg, t, (size_t)(n * r), (size_t)r, bg);
        load_row(h->Bu, t, (size_t)(n * r), (size_t)r, bu);
        for (int64_t b = 0; b < B; b++) {
            double lg = 0, lu = 0;
            for (int64_t j = 0; j < r; j++) {
                lg += bg[j] * h->tin[j * B + b];
                lu += bu[j] * h->tin[(r + j) * B + b];
            }
            double g = P->rstd[b] * (dot(rg, P->xw + b * d, d) + D->scale * lg);
            double u = P->rstd[b] * (dot(ru, P->xw + b * d, d) + D->scale * lu);
            double a = store_rounded(h->act, t, (size_t)(b * f + n), g / (1.0 + exp(-g)) * u);
            for (int64_t j = 0; j < r; j++)
                tacc[j * B + b] += P->ad[j * f + n] * a;
        }
    }
    free(rg), free(ru), free(bg), free(bu);
    return 0;
}

static int gate_up_math(const dec_dims *D, const gate_up_host *h) {
    int64_t B = D->B, d = D->d, f = D->f, r = D->r;
    gr_dtype t = D->t;
    int64_t chunks = (f + DEC_REF_CHUNK - 1) / DEC_REF_CHUNK;
    double *xw = malloc((size_t)(B * d) * sizeof(double)), *w = malloc((size_t)d * sizeof(double));
    double *ad = malloc((size_t)(r * f + 1) * sizeof(double)),
           *tpart = calloc((size_t)(chunks * r * B + 1), sizeof(double));
    double *rstd = malloc((size_t)B * sizeof(double));
    if (!xw || !w || !ad || !tpart || !rstd) {
        free(xw), free(w), free(ad), free(tpart), free(rstd);
        return -1;
    }
    load_row(h->w, t, 0, (size_t)d, w);
    for (int64_t b = 0; b < B; b++) {
        load_row(h->x, t, (size_t)(b * d), (size_t)d, xw + b * d);
        for (int64_t k = 0; k < d; k++)
            xw[b * d + k] *= w[k];
        rstd[b] = 1.0 / sqrt((double)h->ssq[b] / (double)d + D->eps);
    }
    load_row(h->Ad, t, 0, (size_t)(r * f), ad);
    gate_up_par P = {D, h, xw, ad, rstd, tpart};
    int rc = gr_parallel_for(f, DEC_REF_CHUNK, gate_up_chunk, &P);
    for (int64_t i = 0; i < r * B && rc == 0; i++) {
        double sum = 0;
        for (int64_t c = 0; c < chunks; c++)
            sum += tpart[c * r * B + i];
        h->td[i] = (float)((double)h->td[i] + sum);
    }
    free(xw), free(w), free(ad), free(tpart), free(rstd);
    return rc;
}

typedef struct down_host {
    const void *xin, *act, *Wd, *Bd;
    const float *td;
    const void *wn, *Agn, *Aun; /* the next layer's, or NULL */
    void *xout;                 /* may be xin */
    float *ssq, *tin;           /* the next layer's statistics (accumulated) when wn */
} down_host;

/* down's outputs in parallel, 64 at a time (each element of x is read and written by its own
 * chunk: x_out may be x). */
typedef struct down_par {
    const dec_dims *D;
    const down_host *h;
    const double *act;
    double *xnew;
} down_par;

static int down_chunk(void *ctx, int64_t c, int64_t m0, int64_t m1) {
    const down_par *P = ctx;
    const dec_dims *D = P->D;
    const down_host *h = P->h;
    int64_t B = D->B, f = D->f, d = D->d, r = D->r;
    gr_dtype t = D->t;
    (void)c;
    double *row = malloc((size_t)f * sizeof(double)), *br = malloc((size_t)(r ? r : 1) * sizeof(double));
    if (!row || !br) {
        free(row), free(br);
        return -1;
    }
    for (int64_t m = m0; m < m1; m++) {
        load_row(h->Wd, t, (size_t)(m * f), (size_t)f, row);
        load_row(h->Bd, t, (size_t)(m * r), (size_t)r, br);
        for (int64_t b = 0; b < B; b++) {
            double lo = 0;
            for (int64_t j = 0; j < r; j++)
                lo += br[j] * h->td[j * B + b];
            double y = dot(row, P->act + b * f, f) + D->scale * lo;
            size_t idx = (size_t)(b * d + m);
            /* read x before writing: x_out may be x */
            P->xnew[idx] = store_rounded(h->xout, t, idx, gr_load(h->xin, t, idx) + y);
        }
    }
    free(row), free(br);
    return 0;
}

static int down_math(const dec_dims *D, const down_host *h) {
    int64_t B = D->B, f = D->f, d = D->d, r = D->r;
    gr_dtype t = D->t;
    int next = h->wn != NULL;
    int64_t nstat = 2 * r + 1;
    double *act = malloc((size_t)(B * f) * sizeof(double)),
           *xnew = malloc((size_t)(B * d) * sizeof(double));
    double *wn = next ? malloc((size_t)d * sizeof(double)) : NULL;
    double *an = next ? malloc((size_t)(2 * r * d) * sizeof(double)) : NULL;
    double *st = next ? calloc((size_t)(nstat * B), sizeof(double)) : NULL;
    if (!act || !xnew || (next && (!wn || !an || !st))) {
        free(act), free(xnew), free(wn), free(an), free(st);
        return -1;
    }
    load_row(h->act, t, 0, (size_t)(B * f), act);
    down_par P = {D, h, act, xnew};
    if (gr_parallel_for(d, DEC_REF_CHUNK, down_chunk, &P) != 0) {
        free(act), free(xnew), free(wn), free(an), free(st);
        return -1;
    }
    if (next) {
        load_row(h->wn, t, 0, (size_t)d, wn);
        load_row(h->Agn, t, 0, (size_t)(r * d), an);
        load_row(h->Aun, t, 0, (size_t)(r * d), an + r * d);
        for (int64_t b = 0; b < B; b++)
            for (int64_t m = 0; m < d; m++) {
                double xv = xnew[b * d + m], xw = xv * wn[m];
                st[b] += xv * xv;
                for (int64_t j = 0; j < 2 * r; j++)
                    st[(1 + j) * B + b] += an[j * d + m] * xw;
            }
        for (int64_t b = 0; b < B; b++)
            h->ssq[b] = (float)((double)h->ssq[b] + st[b]);
        for (int64_t j = 0; j < 2 * r; j++)
            for (int64_t b = 0; b < B; b++)
                h->tin[j * B + b] = (float)((double)h->tin[j * B + b] + st[(1 + j) * B + b]);
    }
    free(act), free(xnew), free(wn), free(an), free(st);
    return 0;
}

static dec_dims op_dims(const gr_op *op, const gr_plan *plan, int is_down) {
    dec_dims D;
    D.B = op->ip[GR_DEC_B];
    D.d = is_down ? op->ip[GR_DEC_N] : op->ip[GR_DEC_K];
    D.f = is_down ? op->ip[GR_DEC_K] : op->ip[GR_DEC_N];
    D.r = op->ip[GR_DEC_RANK];
    D.t = gr_in(op, plan, 0)->dtype;
    D.scale = op->fp[0];
    D.eps = op->fp[1];
    return D;
}

static gr_status ref_norm_stats(const gr_op *op, const gr_plan *plan, void *const *host,
                                gr_error *err) {
    dec_dims D = op_dims(op, plan, 0);
    if (norm_stats_math(&D, host[op->inputs[0]], host[op->inputs[1]], host[op->inputs[2]],
                        host[op->inputs[3]], host[op->outputs[0]], host[op->outputs[1]]) != 0)
        return nomem(op, err);
    if (op->noutputs > 2) zero_f32(host[op->outputs[2]], D.r * D.B);
    return GR_OK;
}

static gr_status ref_gate_up(const gr_op *op, const gr_plan *plan, void *const *host,
                             gr_error *err) {
    dec_dims D = op_dims(op, plan, 0);
    const int *in = op->inputs;
    gate_up_host h = {host[in[0]], host[in[1]],          host[in[4]],         host[in[5]],
                      host[in[6]], host[in[7]],          host[in[8]],         host[in[2]],
                      host[in[3]], host[op->outputs[0]], host[op->outputs[1]]};
    if (gate_up_math(&D, &h) != 0) return nomem(op, err);
    if (op->noutputs == 4) {
        zero_f32(host[op->outputs[2]], D.B);
        zero_f32(host[op->outputs[3]], 2 * D.r * D.B);
    }
    return GR_OK;
}

static gr_status ref_down(const gr_op *op, const gr_plan *plan, void *const *host, gr_error *err) {
    dec_dims D = op_dims(op, plan, 1);
    int next = (op->ip[GR_DEC_FLAGS] & GR_DEC_F_NEXT) != 0;
    const int *in = op->inputs;
    down_host h = {host[in[0]],
                   host[in[1]],
                   host[in[2]],
                   host[in[3]],
                   host[in[4]],
                   next ? host[in[5]] : NULL,
                   next ? host[in[6]] : NULL,
                   next ? host[in[7]] : NULL,
                   host[op->outputs[0]],
                   next ? host[op->outputs[1]] : NULL,
                   next ? host[op->outputs[2]] : NULL};
    if (down_math(&D, &h) != 0) return nomem(op, err);
    if (op->ip[GR_DEC_FLAGS] & GR_DEC_F_ZERO)
        zero_f32(host[op->outputs[op->noutputs - 1]], D.r * D.B);
    return GR_OK;
}

/* decode_step: the whole step. inputs x, then per layer l the GR_DEC_P_PER_LAYER weights at
 * 1 + GR_DEC_P_PER_LAYER l + GR_DEC_P_*; outputs x (in place), act. The statistics live in
 * fp32 host arrays here as they live in the op's device scratch there. */
static gr_status ref_step(const gr_op *op, const gr_plan *plan, void *const *host, gr_error *err) {
    dec_dims D = op_dims(op, plan, 0); /* decode_step's ip: K = d, N = f, as gate_up's */
    int L = (op->ninputs - 1) / GR_DEC_P_PER_LAYER;
    void *x = host[op->outputs[0]], *act = host[op->outputs[1]];
    const void *x0 = host[op->inputs[0]];
    if (x != x0) memcpy(x, x0, (size_t)(D.B * D.d) * gr_dtype_size(D.t));
    float *ssq = calloc((size_t)D.B, sizeof(float));
    float *tin = calloc((size_t)(2 * D.r * D.B), sizeof(float));
    float *td = calloc((size_t)(D.r * D.B), sizeof(float));
    int bad = !ssq || !tin || !td;
#define W_(l, k) ((const void *)host[op->inputs[1 + GR_DEC_P_PER_LAYER * (l) + (k)]])
    if (!bad)
        bad = norm_stats_math(&D, x, W_(0, GR_DEC_P_WNORM), W_(0, GR_DEC_P_AGATE),
                              W_(0, GR_DEC_P_AUP), ssq, tin) != 0;
    for (int l = 0; l < L && !bad; l++) {
        memset(td, 0, (size_t)(D.r * D.B) * sizeof(float));
        gate_up_host g = {x,
                          W_(l, GR_DEC_P_WNORM),
                          W_(l, GR_DEC_P_WGATE),
                          W_(l, GR_DEC_P_WUP),
                          W_(l, GR_DEC_P_BGATE),
                          W_(l, GR_DEC_P_BUP),
                          W_(l, GR_DEC_P_ADOWN),
                          ssq,
                          tin,
                          act,
                          td};
        bad = gate_up_math(&D, &g) != 0;
        if (bad) break;
        memset(ssq, 0, (size_t)D.B * sizeof(float));
        memset(tin, 0, (size_t)(2 * D.r * D.B) * sizeof(float));
        int next = l + 1 < L;
        down_host h = {x,
                       act,
                       W_(l, GR_DEC_P_WDOWN),
                       W_(l, GR_DEC_P_BDOWN),
                       td,
                       next ? W_(l + 1, GR_DEC_P_WNORM) : NULL,
                       next ? W_(l + 1, GR_DEC_P_AGATE) : NULL,
                       next ? W_(l + 1, GR_DEC_P_AUP) : NULL,
                       x,
                       next ? ssq : NULL,
                       next ? tin : NULL};
        bad = down_math(&D, &h) != 0;
    }
#undef W_
    free(ssq), free(tin), free(td);
    return bad ? nomem(op, err) : GR_OK;
}

/* ---------- small kernels of the unfused variant ---------- */

/* Every operand a float dtype; element counts as the kernel needs them. */
static gr_status check_float_operands(gr_op *op, const gr_plan *plan, gr_error *err) {
    gr_status st = GR_OK;
    for (int i = 0; i < op->ninputs; i++) {
        char role[32];
        snprintf(role, sizeof(role), "inputs[%d]", i);
        if (gr_check_dtype(op, gr_in(op, plan, i), role, gr_float_dtypes, err) != GR_OK)
            st = GR_ERR_INPUT;
    }
    for (int i = 0; i < op->noutputs; i++) {
        char role[32];
        snprintf(role, sizeof(role), "outputs[%d]", i);
        if (gr_check_dtype(op, gr_out(op, plan, i), role, gr_float_dtypes, err) != GR_OK)
            st = GR_ERR_INPUT;
    }
    return st;
}

static gr_status need_numel_like(const gr_op *op, const gr_buffer *b, const char *role,
                                 const gr_buffer *ref, const char *ref_role, gr_error *err) {
    if (b->numel == ref->numel) return GR_OK;
    char s1[96], s2[96];
    gr_shape_str(b, s1, sizeof(s1));
    gr_shape_str(ref, s2, sizeof(s2));
    return gr_error_set(err, GR_ERR_INPUT, op->path,
                        "kernel \"%s\": %s \"%s\" has shape %s (%lld elements) but %s \"%s\" has "
                        "%s (%lld); elementwise operands must match",
                        op->kernel->name, role, b->name, s1, (long long)b->numel, ref_role,
                        ref->name, s2, (long long)ref->numel);
}

/* square, rsqrt_eps, scale_add: elementwise; dtypes may differ between operands. */
static gr_status check_ew(gr_op *op, const gr_plan *plan, gr_error *err) {
    GR_TRY(check_float_operands(op, plan, err));
    const gr_buffer *a = gr_in(op, plan, 0), *y = gr_out(op, plan, 0);
    gr_status st = need_numel_like(op, y, "outputs[0]", a, "inputs[0]", err);
    if (op->ninputs > 1 &&
        need_numel_like(op, gr_in(op, plan, 1), "inputs[1]", a, "inputs[0]", err) != GR_OK)
        st = GR_ERR_INPUT;
    if (st != GR_OK) return st;
    const char *kn = op->kernel->name;
    op->ip[0] = a->numel;
    op->ip[1] = !strcmp(kn, "square")      ? GR_EW_SQUARE
                : !strcmp(kn, "rsqrt_eps") ? GR_EW_RSQRT
                                           : GR_EW_SCALE_ADD;
    op->ip[2] = a->dtype;
    op->ip[3] = op->ninputs > 1 ? gr_in(op, plan, 1)->dtype : 0;
    op->ip[4] = y->dtype;
    op->fp[0] =
        op->ip[1] == GR_EW_RSQRT ? gr_op_attr_num(op, "eps", 0.0) : gr_op_attr_num(op, "s", 1.0);
    gr_grid_stride(op, plan, a->numel, 256, 1, 8);
    op->bytes_read = gr_bytes_in(op, plan);
    op->bytes_written = gr_bytes_out(op, plan);
    op->flops = (double)a->numel * (op->ip[1] == GR_EW_RSQRT    ? 2.0
                                    : op->ip[1] == GR_EW_SQUARE ? 1.0
                                                                : 2.0);
    op->launches = 1;
    return GR_OK;
}

static gr_status check_mean_lastdim(gr_op *op, const gr_plan *plan, gr_error *err) {
    GR_TRY(check_float_operands(op, plan, err));
    const gr_buffer *x = gr_in(op, plan, 0), *y = gr_out(op, plan, 0);
    int64_t cols = x->shape[x->ndim - 1], rows = x->numel / cols;
    if (y->numel != rows) {
        char sx[96], sy[96];
        gr_shape_str(x, sx, sizeof(sx));
        gr_shape_str(y, sy, sizeof(sy));
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": y \"%s\" has shape %s (%lld elements); the mean over "
                            "the last dim of x \"%s\" %s gives %lld values (shape [..., 1])",
                            op->kernel->name, y->name, sy, (long long)y->numel, x->name, sx,
                            (long long)rows);
    }
    op->ip[0] = rows;
    op->ip[1] = cols;
    op->ip[2] = x->dtype;
    op->ip[3] = y->dtype;
    int64_t blocks = rows, cap = (int64_t)plan->target.sm_count * 8;
    if (blocks > cap) blocks = cap;
    op->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks);
    op->grid[1] = op->grid[2] = 1;
    op->block[0] = 256;
    op->block[1] = op->block[2] = 1;
    op->smem = 0;
    op->bytes_read = gr_bytes_in(op, plan);
    op->bytes_written = gr_bytes_out(op, plan);
    op->flops = (double)x->numel;
    op->launches = 1;
    return GR_OK;
}

/* y = a * b, numpy broadcasting of b against a viewed as [rows, cols] (cols = a's last dim):
 * b [rows, 1] (or [..., 1] with rows elements) scales each row; b [cols] or [1, cols] each
 * column. */
static gr_status check_mul_bcast(gr_op *op, const gr_plan *plan, gr_error *err) {
    GR_TRY(check_float_operands(op, plan, err));
    const gr_buffer *a = gr_in(op, plan, 0), *b = gr_in(op, plan, 1), *y = gr_out(op, plan, 0);
    GR_TRY(need_numel_like(op, y, "outputs[0]", a, "inputs[0]", err));
    int64_t cols = a->shape[a->ndim - 1], rows = a->numel / cols;
    int64_t blast = b->shape[b->ndim - 1];
    int per_row;
    if (blast == 1 && b->numel == rows && b->ndim >= 2)
        per_row = 1;
    else if (blast == cols && b->numel == cols)
        per_row = 0;
    else {
        char sa[96], sb[96];
        gr_shape_str(a, sa, sizeof(sa));
        gr_shape_str(b, sb, sizeof(sb));
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": b \"%s\" %s does not broadcast against a \"%s\" %s; "
                            "give b [%lld, 1] (one value per row) or [%lld] (one per column)",
                            op->kernel->name, b->name, sb, a->name, sa, (long long)rows,
                            (long long)cols);
    }
    op->ip[0] = rows;
    op->ip[1] = cols;
    op->ip[2] = per_row;
    op->ip[3] = a->dtype;
    op->ip[4] = b->dtype;
    op->ip[5] = y->dtype;
    gr_grid_stride(op, plan, a->numel, 256, 1, 8);
    op->bytes_read = gr_bytes_in(op, plan);
    op->bytes_written = gr_bytes_out(op, plan);
    op->flops = (double)a->numel;
    op->launches = 1;
    return GR_OK;
}

/* The device computes in fp32 and rounds once to the output dtype; so do these references
 * (double for the mean and the rsqrt), so results agree to an ulp or so. */
static gr_status ref_ew(const gr_op *op, const gr_plan *plan, void *const *host, gr_error *err) {
    (void)err;
    const gr_buffer *a = gr_in(op, plan, 0), *y = gr_out(op, plan, 0);
    const gr_buffer *b = op->ninputs > 1 ? gr_in(op, plan, 1) : NULL;
    const void *ha = host[op->inputs[0]], *hb = b ? host[op->inputs[1]] : NULL;
    void *hy = host[op->outputs[0]];
    float attr = (float)op->fp[0];
    for (int64_t i = 0; i < op->ip[0]; i++) {
        float x = (float)gr_load(ha, a->dtype, (size_t)i);
        double v;
        if (op->ip[1] == GR_EW_SQUARE)
            v = x * x;
        else if (op->ip[1] == GR_EW_RSQRT)
            v = 1.0 / sqrt((double)(x + attr));
        else
            v = x + attr * (float)gr_load(hb, b->dtype, (size_t)i);
        gr_store(hy, y->dtype, (size_t)i, v);
    }
    return GR_OK;
}

static gr_status ref_mean_lastdim(const gr_op *op, const gr_plan *plan, void *const *host,
                                  gr_error *err) {
    (void)err;
    const gr_buffer *x = gr_in(op, plan, 0), *y = gr_out(op, plan, 0);
    int64_t rows = op->ip[0], cols = op->ip[1];
    for (int64_t r = 0; r < rows; r++) {
        double s = 0;
        for (int64_t c = 0; c < cols; c++)
            s += gr_load(host[op->inputs[0]], x->dtype, (size_t)(r * cols + c));
        gr_store(host[op->outputs[0]], y->dtype, (size_t)r, s / (double)cols);
    }
    return GR_OK;
}

static gr_status ref_mul_bcast(const gr_op *op, const gr_plan *plan, void *const *host,
                               gr_error *err) {
    (void)err;
    const gr_buffer *a = gr_in(op, plan, 0), *b = gr_in(op, plan, 1), *y = gr_out(op, plan, 0);
    int64_t rows = op->ip[0], cols = op->ip[1];
    int per_row = (int)op->ip[2];
    for (int64_t i = 0; i < rows * cols; i++) {
        float av = (float)gr_load(host[op->inputs[0]], a->dtype, (size_t)i);
        float bv =
            (float)gr_load(host[op->inputs[1]], b->dtype, (size_t)(per_row ? i / cols : i % cols));
        gr_store(host[op->outputs[0]], y->dtype, (size_t)i, av * bv);
    }
    return GR_OK;
}

/* ---------- registry entries ---------- */

static const gr_attr_spec eps_attr[] = {
    {"eps", GR_ATTR_FLOAT, 0, 0.0, NULL, NULL, "added before the square root (default 0)"}};
static const gr_attr_spec s_attr[] = {{"s", GR_ATTR_FLOAT, 1, 1.0, NULL, NULL, "scale of b"}};
#define DEC_STR_(x) #x
#define DEC_STR(x) DEC_STR_(x)
#define GEMV_MAX_B_RANGE                                                                           \
    "(1 to " DEC_STR(GR_DEC_GEMV_MAX_B) ", default " DEC_STR(GR_DEC_GEMV_MAX_B) ")"
#define GEMV_MAX_B_HELP                                                                            \
    "largest B run by the weight-streaming GEMV kernels; above it cuBLAS does the main "           \
    "products " GEMV_MAX_B_RANGE
#define STEP_MAX_B_HELP                                                                            \
    "largest B the step serves (its phases are the GEMV kernels'); a larger B is an error: use "   \
    "the per-layer kernels " GEMV_MAX_B_RANGE
static const gr_attr_spec gate_up_attrs[] = {
    {"scale", GR_ATTR_FLOAT, 1, 1.0, NULL, NULL, "LoRA scale alpha / r"},
    {"eps", GR_ATTR_FLOAT, 0, 1e-5, NULL, NULL, "RMSNorm eps (default 1e-5)"},
    {GR_DEC_ATTR_GEMV_MAX_B, GR_ATTR_INT, 0, GR_DEC_GEMV_MAX_B, NULL, NULL, GEMV_MAX_B_HELP}};
static const gr_attr_spec down_attrs[] = {
    {"scale", GR_ATTR_FLOAT, 1, 1.0, NULL, NULL, "LoRA scale alpha / r"},
    {GR_DEC_ATTR_GEMV_MAX_B, GR_ATTR_INT, 0, GR_DEC_GEMV_MAX_B, NULL, NULL, GEMV_MAX_B_HELP}};
static const gr_attr_spec step_attrs[] = {
    {"scale", GR_ATTR_FLOAT, 1, 1.0, NULL, NULL, "LoRA scale alpha / r"},
    {"eps", GR_ATTR_FLOAT, 0, 1e-5, NULL, NULL, "RMSNorm eps (default 1e-5)"},
    {GR_DEC_ATTR_GEMV_MAX_B, GR_ATTR_INT, 0, GR_DEC_GEMV_MAX_B, NULL, NULL, STEP_MAX_B_HELP}};

static const gr_kernel_def k_square = {
    "square",
    "y = x * x, elementwise; operands may differ in dtype (fp32 arithmetic)",
    "x",
    "y (x's element count)",
    1,
    1,
    1,
    1,
    NULL,
    0,
    GR_KF_INPLACE | GR_KF_PDL,
    check_ew,
    gr_launch_decode_elementwise,
    ref_ew,
    NULL,
    NULL};
static const gr_kernel_def k_rsqrt_eps = {
    "rsqrt_eps",
    "y = 1 / sqrt(x + eps), elementwise; operands may differ in dtype",
    "x",
    "y (x's element count)",
    1,
    1,
    1,
    1,
    eps_attr,
    1,
    GR_KF_INPLACE | GR_KF_PDL,
    check_ew,
    gr_launch_decode_elementwise,
    ref_ew,
    NULL,
    NULL};
static const gr_kernel_def k_scale_add = {
    "scale_add",
    "y = a + s * b, elementwise; operands may differ in dtype",
    "a, b (same element count)",
    "y (a's element count)",
    2,
    2,
    1,
    1,
    s_attr,
    1,
    GR_KF_INPLACE | GR_KF_PDL,
    check_ew,
    gr_launch_decode_elementwise,
    ref_ew,
    NULL,
    NULL};
static const gr_kernel_def k_mean_lastdim = {
    "mean_lastdim",
    "y[..., 0] = mean of x over its last dim (fp32 sums; one block per row)",
    "x [..., n]",
    "y [..., 1] (one value per row; any float dtype)",
    1,
    1,
    1,
    1,
    NULL,
    0,
    GR_KF_INPLACE | GR_KF_PDL,
    check_mean_lastdim,
    gr_launch_mean_lastdim,
    ref_mean_lastdim,
    NULL,
    NULL};
static const gr_kernel_def k_mul_bcast = {
    "mul_bcast",
    "y = a * b with b broadcast: b [rows, 1] scales each row, b [cols] each column",
    "a [..., cols], b [rows, 1] or [cols]",
    "y (a's element count)",
    2,
    2,
    1,
    1,
    NULL,
    0,
    GR_KF_INPLACE | GR_KF_PDL,
    check_mul_bcast,
    gr_launch_mul_bcast,
    ref_mul_bcast,
    NULL,
    NULL};

static const gr_kernel_def k_norm_stats = {
    "decode_norm_stats",
    "first layer's RMSNorm statistics for the fused decode step: ssq = sum x^2 and tin = "
    "[A_gate; A_up] (x * w_norm) per batch row, fp32",
    "x [B, d], w_norm [d], A_gate [r, d], A_up [r, d]",
    "ssq [B] fp32, tin [2r, B] fp32, optional tdown [r, B] fp32 (zeroed for gate_up)",
    4,
    4,
    2,
    3,
    NULL,
    0,
    GR_KF_PDL,
    check_norm_stats,
    gr_launch_decode_norm_stats,
    ref_norm_stats,
    NULL,
    NULL};
static const gr_kernel_def k_gate_up = {
    "decode_gate_up",
    "fused gate/up projections of a LoRA MLP at decode: act = silu(g) * u, g = rstd (W_gate (x "
    "w_norm) + scale B_gate tin_g), u likewise; tdown += A_down act. Weight-streaming GEMV "
    "(16-byte loads) for B <= gemv_max_b (default 8); above, cuBLAS for W x with LoRA and "
    "epilogue in a small kernel",
    "x [B, d], w_norm [d], ssq [B], tin [2r, B], W_gate [f, d], W_up [f, d], B_gate [f, r], "
    "B_up [f, r], A_down [r, f]",
    "act [B, f], tdown [r, B] fp32 (accumulated: zero it first), optional ssq_next [B] and "
    "tin_next [2r, B] (zeroed)",
    9,
    9,
    2,
    4,
    gate_up_attrs,
    3,
    GR_KF_PDL | GR_KF_LIBRARY,
    check_gate_up,
    gr_launch_decode_gate_up,
    ref_gate_up,
    gr_setup_decode_gemv,
    gr_teardown_decode_gemv};
static const gr_kernel_def k_down = {
    "decode_down",
    "fused down projection of a LoRA MLP at decode: x += W_down act + scale B_down tdown; with "
    "the next layer's w_norm, A_gate, A_up also accumulates its RMSNorm statistics. "
    "Weight-streaming GEMV for B <= gemv_max_b (default 8); above, cuBLAS for W_down act",
    "x [B, d], act [B, f], W_down [d, f], B_down [d, r], tdown [r, B] fp32, optional w_norm_next "
    "[d], A_gate_next [r, d], A_up_next [r, d]",
    "x_out [B, d] (may be x), with the next layer ssq_next [B], tin_next [2r, B] fp32 "
    "(accumulated: zero them first), optional last tdown_next [r, B] (zeroed)",
    5,
    8,
    1,
    4,
    down_attrs,
    2,
    GR_KF_INPLACE | GR_KF_PDL | GR_KF_LIBRARY,
    check_down,
    gr_launch_decode_down,
    ref_down,
    gr_setup_decode_gemv,
    gr_teardown_decode_gemv};

/* decode_step's inputs (GR_DEC_P_*) */
#define STEP_INPUTS_DOC                                                                            \
    "x [B, d], then per layer w_norm [d], W_gate [f, d], W_up [f, d], W_down [d, f], A_gate [r, "  \
    "d], A_up [r, d], A_down [r, f], B_gate [f, r], B_up [f, r], B_down [d, r]"

static const gr_kernel_def k_step = {
    "decode_step",
    "a whole fused LoRA MLP decode step in one persistent kernel: the norm statistics, then per "
    "layer the gate/up and the down weight-streaming GEMV phases of decode_gate_up and "
    "decode_down, separated by grid barriers; each phase's first weight loads are issued before "
    "its barrier (B <= gemv_max_b, at most 8)",
    STEP_INPUTS_DOC,
    "x (in place), act [B, f]",
    1 + GR_DEC_P_PER_LAYER,
    1 + GR_DEC_P_PER_LAYER *GR_DEC_P_MAX_LAYERS,
    2,
    2,
    step_attrs,
    3,
    GR_KF_INPLACE,
    check_step,
    gr_launch_decode_step,
    ref_step,
    gr_setup_decode_step,
    gr_teardown_decode_step};

const gr_kernel_def *const gr_decode_kernels[] = {
    &k_square,  &k_rsqrt_eps, &k_scale_add, &k_mean_lastdim, &k_mul_bcast,   &k_norm_stats,
    &k_gate_up, &k_down,      &k_step,      NULL};
