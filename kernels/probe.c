/* Launch-measurement kernels, host side: schemas, checks, references. Device code: probe.cu. */
#include "kernels/probe.h"

#include "kernels/common.h"

static gr_status check_empty(gr_op *op, const gr_plan *plan, gr_error *err) {
    (void)plan;
    double blocks = gr_op_attr_num(op, "blocks", 1), threads = gr_op_attr_num(op, "threads", 32);
    if (blocks < 1 || blocks > 65535 || threads < 1 || threads > 1024)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"empty\": blocks must be 1..65535 and threads 1..1024");
    op->grid[0] = (unsigned)blocks;
    op->grid[1] = op->grid[2] = 1;
    op->block[0] = (unsigned)threads;
    op->block[1] = op->block[2] = 1;
    op->bytes_read = op->bytes_written = op->flops = 0;
    op->launches = 1;
    return GR_OK;
}

static gr_status ref_empty(const gr_op *op, const gr_plan *plan, void *const *host, gr_error *err) {
    (void)op, (void)plan, (void)host, (void)err;
    return GR_OK;
}

static gr_status check_tiny(gr_op *op, const gr_plan *plan, gr_error *err) {
    gr_status st = gr_check_elementwise(op, plan, err);
    if (st != GR_OK) return st;
    if (op->ip[0] > 65536)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"tiny\" is for launch measurements on small buffers (<= "
                            "65536 elements); \"%s\" has %lld",
                            gr_in(op, plan, 0)->name, (long long)op->ip[0]);
    op->fp[0] = gr_op_attr_num(op, "c", 1.0);
    double threads = gr_op_attr_num(op, "threads", 256);
    if (threads < 32 || threads > 1024 || (int)threads % 32)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"tiny\": threads must be a multiple of 32 in [32, 1024], got %g", threads);
    gr_grid_stride(op, plan, op->ip[0], (int)threads, 1, 1);
    op->bytes_read = gr_bytes_in(op, plan);
    op->bytes_written = gr_bytes_out(op, plan);
    op->flops = (double)op->ip[0];
    op->launches = 1;
    return GR_OK;
}

static gr_status ref_tiny(const gr_op *op, const gr_plan *plan, void *const *host, gr_error *err) {
    (void)err;
    gr_dtype t = gr_out(op, plan, 0)->dtype;
    const void *x = host[op->inputs[0]];
    void *y = host[op->outputs[0]];
    float c = (float)op->fp[0];
    /* float arithmetic, like the device: a chain of K in-place adds then matches bit for bit */
    for (int64_t i = 0; i < op->ip[0]; i++) gr_store(y, t, (size_t)i, (float)gr_load(x, t, (size_t)i) + c);
    return GR_OK;
}

static const gr_attr_spec empty_attrs[] = {
    {"blocks", GR_ATTR_INT, 0, 1, NULL, NULL, "grid size (default 1)"},
    {"threads", GR_ATTR_INT, 0, 32, NULL, NULL, "block size (default 32)"}};
static const gr_attr_spec tiny_attrs[] = {
    {"c", GR_ATTR_FLOAT, 0, 1.0, NULL, NULL, "constant added (default 1)"},
    {"threads", GR_ATTR_INT, 0, 256, NULL, NULL, "threads of its one block (default 256)"}};

static const gr_kernel_def k_empty = {
    "empty", "does nothing: the launch cost alone", "(none)", "(none)", 0, 0, 0, 0, empty_attrs, 2,
    GR_KF_PDL, check_empty, gr_launch_empty, ref_empty, NULL, NULL};
static const gr_kernel_def k_tiny = {
    "tiny", "y = x + c on a small buffer (one block); in place it chains dependent launches", "x",
    "y (may be x)", 1, 1, 1, 1, tiny_attrs, 2, GR_KF_INPLACE | GR_KF_PDL, check_tiny, gr_launch_tiny, ref_tiny,
    NULL, NULL};

const gr_kernel_def *const gr_probe_kernels[] = {&k_empty, &k_tiny, NULL};
