/* Shape/dtype rule helpers and launch-dimension choices used by kernel checks. */
#include "kernels/common.h"

#include <stdio.h>

const gr_dtype gr_float_dtypes[] = {GR_FP32, GR_BF16, GR_FP16, GR_DTYPE_INVALID};

void gr_shape_str(const gr_buffer *b, char *out, size_t size) {
    size_t o = (size_t)snprintf(out, size, "[");
    for (int d = 0; d < b->ndim && o < size; d++)
        o += (size_t)snprintf(out + o, size - o, "%s%lld", d ? ", " : "", (long long)b->shape[d]);
    if (o < size) snprintf(out + o, size - o, "]");
}

gr_status gr_check_dtype(const gr_op *op, const gr_buffer *b, const char *role,
                         const gr_dtype *allowed, gr_error *err) {
    char list[128];
    size_t o = 0;
    list[0] = '\0';
    for (const gr_dtype *t = allowed; *t != GR_DTYPE_INVALID; t++) {
        if (*t == b->dtype) return GR_OK;
        o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", o ? ", " : "", gr_dtype_name(*t));
    }
    return gr_error_set(err, GR_ERR_INPUT, op->path,
                        "kernel \"%s\": %s \"%s\" is %s; it takes %s", op->kernel->name, role,
                        b->name, gr_dtype_name(b->dtype), list);
}

gr_status gr_check_elementwise(gr_op *op, const gr_plan *plan, gr_error *err) {
    const gr_buffer *ref = op->ninputs > 0 ? gr_in(op, plan, 0) : gr_out(op, plan, 0);
    const char *ref_role = op->ninputs > 0 ? "inputs[0]" : "outputs[0]";
    gr_status st = gr_check_dtype(op, ref, ref_role, gr_float_dtypes, err);
    for (int pass = 0; pass < 2; pass++) {
        int n = pass == 0 ? op->ninputs : op->noutputs;
        for (int i = 0; i < n; i++) {
            const gr_buffer *b = pass == 0 ? gr_in(op, plan, i) : gr_out(op, plan, i);
            if (b == ref) continue;
            char role[32];
            snprintf(role, sizeof(role), "%s[%d]", pass == 0 ? "inputs" : "outputs", i);
            if (b->numel != ref->numel) {
                char s1[96], s2[96];
                gr_shape_str(b, s1, sizeof(s1));
                gr_shape_str(ref, s2, sizeof(s2));
                st = gr_error_set(err, GR_ERR_INPUT, op->path,
                                  "kernel \"%s\": %s \"%s\" has shape %s (%lld elements) but %s "
                                  "\"%s\" has %s (%lld); elementwise operands must match",
                                  op->kernel->name, role, b->name, s1, (long long)b->numel,
                                  ref_role, ref->name, s2, (long long)ref->numel);
            } else if (b->dtype != ref->dtype) {
                st = gr_error_set(err, GR_ERR_INPUT, op->path,
                                  "kernel \"%s\": %s \"%s\" is %s but %s \"%s\" is %s; "
                                  "elementwise operands share one dtype",
                                  op->kernel->name, role, b->name, gr_dtype_name(b->dtype),
                                  ref_role, ref->name, gr_dtype_name(ref->dtype));
            }
        }
    }
    op->ip[0] = ref->numel;
    return st;
}

void gr_grid_stride(gr_op *op, const gr_plan *plan, int64_t work, int threads, int per_thread,
                    int blocks_per_sm) {
    int64_t per_block = (int64_t)threads * per_thread;
    int64_t blocks = (work + per_block - 1) / per_block;
    int64_t cap = (int64_t)plan->target.sm_count * blocks_per_sm;
    if (blocks > cap) blocks = cap;
    if (blocks < 1) blocks = 1;
    op->grid[0] = (unsigned)blocks;
    op->grid[1] = op->grid[2] = 1;
    op->block[0] = (unsigned)threads;
    op->block[1] = op->block[2] = 1;
    op->smem = 0;
}

double gr_bytes_in(const gr_op *op, const gr_plan *plan) {
    double s = 0;
    for (int i = 0; i < op->ninputs; i++) s += (double)gr_in(op, plan, i)->bytes;
    return s;
}

double gr_bytes_out(const gr_op *op, const gr_plan *plan) {
    double s = 0;
    for (int i = 0; i < op->noutputs; i++) s += (double)gr_out(op, plan, i)->bytes;
    return s;
}
