/* Pointwise kernel family, host side: registry entries (argument schema), checks (shapes,
 * dtypes, launch dims, byte/flop accounting) and CPU references. Device code: pointwise.cu. */
#include "kernels/pointwise.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/parallel.h"
#include "kernels/common.h"

static const char *const act_choices[] = {"relu", "gelu", "silu", "none", NULL};
/* add_mul_act_vec's forms, in GR_PW_* order, and its vectors per operand per thread */
static const char *const form_choices[] = {"grid_stride", "tile", "tile_cs", NULL};
static const char *const vecs_choices[] = {"auto", "1", "2", "4", NULL};

int gr_act_parse(const char *name) {
    if (!strcmp(name, "relu")) return GR_ACT_RELU;
    if (!strcmp(name, "gelu")) return GR_ACT_GELU;
    if (!strcmp(name, "silu")) return GR_ACT_SILU;
    if (!strcmp(name, "none")) return GR_ACT_NONE;
    return -1;
}

double gr_act_host(double x, int act) {
    switch (act) {
    case GR_ACT_RELU: return x > 0 ? x : 0;
    case GR_ACT_GELU: return 0.5 * x * (1.0 + erf(x * 0.70710678118654752));
    case GR_ACT_SILU: return x / (1.0 + exp(-x));
    default: return x;
    }
}

static double act_flops(int act) {
    switch (act) {
    case GR_ACT_RELU: return 1;
    case GR_ACT_GELU: return 8; /* mul, erf (~4), add, 2 mul */
    case GR_ACT_SILU: return 4; /* exp, add, div */
    default: return 0;
    }
}

/* The activation of an op: from the kernel name (relu/gelu/silu) or its "act"/"fn" attr. */
static int op_act(const gr_op *op) {
    int a = gr_act_parse(op->kernel->name);
    if (a >= 0) return a;
    const char *s = gr_op_attr_str(op, "act", NULL);
    if (!s) s = gr_op_attr_str(op, "fn", "none");
    a = gr_act_parse(s);
    return a < 0 ? GR_ACT_NONE : a;
}

/* add_mul_act_vec's form and vectors per thread (attrs "form", "vecs"; "auto": 4 for grid_stride,
 * today's unroll, 2 for the tile forms, Inductor's 8 floats per thread) and its launch dims:
 * grid_stride caps the grid at 2048 threads per SM and loops; a tile form launches one block per
 * tile of threads x vecs x 16 bytes per operand, cdiv(n, tile) blocks, no loop. The bytes an op
 * moves do not depend on its form. */
static gr_status vec_form(gr_op *op, const gr_plan *plan, int64_t n, int threads, int per_vec,
                          gr_error *err) {
    const char *fs = gr_op_attr_str(op, "form", "tile");
    int form = GR_PW_GRID_STRIDE;
    for (int k = 0; form_choices[k]; k++)
        if (!strcmp(fs, form_choices[k])) form = k;
    const char *vs = gr_op_attr_str(op, "vecs", "auto");
    int v = strcmp(vs, "auto") ? atoi(vs) : (form == GR_PW_GRID_STRIDE ? 4 : 2);
    op->ip[2] = form;
    op->ip[3] = v;
    if (form == GR_PW_GRID_STRIDE) {
        gr_grid_stride(op, plan, n, threads, per_vec, 2048 / threads);
        snprintf(op->form, sizeof(op->form), "grid_stride, %d vec, cs", v);
        return GR_OK;
    }
    int64_t tile = (int64_t)threads * v * per_vec, blocks = (n + tile - 1) / tile;
    if (blocks > 2147483647)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": form %s needs %lld blocks of %lld elements for n = %lld; "
                            "at most 2147483647 (more threads or vecs, or form grid_stride)",
                            op->kernel->name, fs, (long long)blocks, (long long)tile, (long long)n);
    op->grid[0] = (unsigned)(blocks < 1 ? 1 : blocks);
    op->grid[1] = op->grid[2] = 1;
    op->block[0] = (unsigned)threads;
    op->block[1] = op->block[2] = 1;
    op->smem = 0;
    snprintf(op->form, sizeof(op->form), "tile %lld, %d vec%s", (long long)tile, v,
             form == GR_PW_TILE_CS ? ", cs" : "");
    return GR_OK;
}

static gr_status check_pointwise(gr_op *op, const gr_plan *plan, gr_error *err) {
    gr_status st = gr_check_elementwise(op, plan, err);
    if (st != GR_OK) return st;
    const gr_buffer *y = gr_out(op, plan, 0);
    int64_t n = op->ip[0];
    int act = op_act(op);
    const char *kn = op->kernel->name;
    double flops_per = 0;
    int per_thread = 1;
    if (!strcmp(kn, "add") || !strcmp(kn, "mul")) {
        op->ip[1] = !strcmp(kn, "add") ? GR_BIN_ADD : GR_BIN_MUL;
        flops_per = 1;
    } else if (!strcmp(kn, "add_mul_act") || !strcmp(kn, "add_mul_act_vec")) {
        op->ip[1] = act;
        flops_per = 2 + act_flops(act);
        if (!strcmp(kn, "add_mul_act_vec")) per_thread = (int)(16 / gr_dtype_size(y->dtype));
    } else {
        op->ip[1] = act;
        flops_per = act_flops(act);
    }
    /* default 8 blocks of 256 threads per SM: full occupancy for these register-light kernels;
     * small, latency-bound sizes may do better with fewer, larger blocks ("threads" attr) */
    double threads = gr_op_attr_num(op, "threads", 256);
    if (threads < 32 || threads > 1024 || (int)threads % 32)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\": threads must be a multiple of 32 in [32, 1024], got %g",
                            kn, threads);
    if (!strcmp(kn, "add_mul_act_vec")) {
        gr_status vs = vec_form(op, plan, n, (int)threads, per_thread, err);
        if (vs != GR_OK) return vs;
    } else {
        gr_grid_stride(op, plan, n, (int)threads, per_thread, 2048 / (int)threads);
    }
    op->bytes_read = gr_bytes_in(op, plan);
    op->bytes_written = gr_bytes_out(op, plan);
    op->flops = flops_per * (double)n;
    op->launches = 1;
    return GR_OK;
}

/* Per element, in parallel chunks (each element is computed the same way whatever the split). */
typedef struct pw_ref {
    const void *in[3];
    void *out;
    gr_dtype t;
    int kind; /* 0 add/mul, 1 three inputs, 2 activation alone */
    int add, act;
} pw_ref;

static int pw_ref_chunk(void *ctx, int64_t chunk, int64_t i0, int64_t i1) {
    const pw_ref *P = ctx;
    const void *const *in = P->in;
    gr_dtype t = P->t;
    (void)chunk;
    /* The device computes in fp32 and rounds once to the output dtype; so does this reference
     * (float arithmetic, erf/exp in double), so fp32 results agree to an ulp or so. */
    if (P->kind == 0) {
        for (int64_t i = i0; i < i1; i++) {
            float a = (float)gr_load(in[0], t, (size_t)i), b = (float)gr_load(in[1], t, (size_t)i);
            gr_store(P->out, t, (size_t)i, P->add ? a + b : a * b);
        }
    } else if (P->kind == 1) {
        for (int64_t i = i0; i < i1; i++) {
            float a = (float)gr_load(in[0], t, (size_t)i), b = (float)gr_load(in[1], t, (size_t)i),
                  c = (float)gr_load(in[2], t, (size_t)i);
            float s = (a + b) * c;
            gr_store(P->out, t, (size_t)i, (float)gr_act_host(s, P->act));
        }
    } else {
        for (int64_t i = i0; i < i1; i++)
            gr_store(P->out, t, (size_t)i, (float)gr_act_host((float)gr_load(in[0], t, (size_t)i), P->act));
    }
    return 0;
}

static gr_status ref_pointwise(const gr_op *op, const gr_plan *plan, void *const *host,
                               gr_error *err) {
    (void)err;
    const gr_buffer *y = gr_out(op, plan, 0);
    pw_ref P;
    memset(&P, 0, sizeof(P));
    for (int i = 0; i < op->ninputs && i < 3; i++) P.in[i] = host[op->inputs[i]];
    P.out = host[op->outputs[0]];
    P.t = y->dtype;
    const char *kn = op->kernel->name;
    P.act = (int)op->ip[1];
    if (!strcmp(kn, "add") || !strcmp(kn, "mul")) {
        P.kind = 0;
        P.add = op->ip[1] == GR_BIN_ADD;
    } else {
        P.kind = op->ninputs == 3 ? 1 : 2;
    }
    gr_parallel_for(op->ip[0], 1 << 16, pw_ref_chunk, &P);
    return GR_OK;
}

#define THREADS_ATTR {"threads", GR_ATTR_INT, 0, 256, NULL, NULL, "threads per block (default 256)"}
static const gr_attr_spec act_attr[] = {
    {"act", GR_ATTR_ENUM, 0, 0, "relu", act_choices, "activation: relu, gelu (erf), silu or none"},
    THREADS_ATTR};
static const gr_attr_spec fn_attr[] = {
    {"fn", GR_ATTR_ENUM, 1, 0, NULL, act_choices, "activation: relu, gelu (erf), silu or none"},
    THREADS_ATTR};
static const gr_attr_spec threads_attr[] = {THREADS_ATTR};
static const gr_attr_spec vec_attrs[] = {
    {"act", GR_ATTR_ENUM, 0, 0, "relu", act_choices, "activation: relu, gelu (erf), silu or none"},
    THREADS_ATTR,
    {"form", GR_ATTR_ENUM, 0, 0, "grid_stride", form_choices,
     "grid_stride (loop over an SM-sized grid, streaming hints), tile (one tile per block, "
     "cdiv(n, tile) blocks, default caching: Inductor's shape) or tile_cs (tile, streaming hints)"},
    {"vecs", GR_ATTR_ENUM, 0, 0, "auto", vecs_choices,
     "16-byte vectors per operand each thread loads before the first use: 1, 2, 4 or auto "
     "(4 for grid_stride, 2 for the tile forms)"}};

#define BINARY(NAME, SUMMARY)                                                                      \
    static const gr_kernel_def k_##NAME = {#NAME, SUMMARY, "a, b", "y", 2, 2, 1, 1, threads_attr, 1, \
                                           GR_KF_INPLACE | GR_KF_PDL, check_pointwise, gr_launch_binary,      \
                                           ref_pointwise, NULL, NULL}
#define UNARY(NAME, SUMMARY)                                                                       \
    static const gr_kernel_def k_##NAME = {#NAME, SUMMARY, "x", "y", 1, 1, 1, 1, threads_attr, 1,  \
                                           GR_KF_INPLACE | GR_KF_PDL, check_pointwise, gr_launch_act,         \
                                           ref_pointwise, NULL, NULL}

BINARY(add, "y = a + b, elementwise");
BINARY(mul, "y = a * b, elementwise");
UNARY(relu, "y = max(x, 0)");
UNARY(gelu, "y = x * Phi(x), exact (erf) GELU");
UNARY(silu, "y = x * sigmoid(x)");

static const gr_kernel_def k_act = {
    "act", "y = fn(x) for fn in relu, gelu, silu, none (none copies)", "x", "y", 1, 1, 1, 1,
    fn_attr, 2, GR_KF_INPLACE | GR_KF_PDL, check_pointwise, gr_launch_act, ref_pointwise, NULL, NULL};
static const gr_kernel_def k_add_mul_act = {
    "add_mul_act", "y = act((a + b) * c), fused, one element per thread", "a, b, c", "y", 3, 3,
    1, 1, act_attr, 2, GR_KF_INPLACE | GR_KF_PDL, check_pointwise, gr_launch_add_mul_act, ref_pointwise, NULL,
    NULL};
static const gr_kernel_def k_add_mul_act_vec = {
    "add_mul_act_vec",
    "y = act((a + b) * c), fused, 16-byte loads (float4 / 8 x bf16), scalar tail; forms "
    "grid_stride, tile, tile_cs", "a, b, c", "y",
    3, 3, 1, 1, vec_attrs, 4, GR_KF_INPLACE | GR_KF_PDL, check_pointwise, gr_launch_add_mul_act_vec,
    ref_pointwise, NULL, NULL};

const gr_kernel_def *const gr_pointwise_kernels[] = {
    &k_add, &k_mul, &k_relu, &k_gelu, &k_silu, &k_act, &k_add_mul_act, &k_add_mul_act_vec, NULL};
