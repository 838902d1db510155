/* Capture breakers, host side: schemas, checks, CPU references and the clean-counterpart plan.
 * Device side and the launches themselves: breakers.cu. */
#include "kernels/breakers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/common.h"

static const char *const pattern_names[GR_BRK_NPATTERNS + 1] = {"none",
                                                                "copy",
                                                                "host_copy",
                                                                "stream_sync",
                                                                "device_sync",
                                                                "event_sync",
                                                                "stream_query",
                                                                "event_query",
                                                                "alloc",
                                                                "alloc_host",
                                                                "alloc_thread",
                                                                "legacy_copy",
                                                                "sync_copy",
                                                                "other_stream",
                                                                "pageable_copy",
                                                                "fork",
                                                                "item",
                                                                "lazy_init",
                                                                NULL};

/* capture_breaker's choices: every pattern but lazy_init (which needs the cuBLAS kernel) */
static const char *const breaker_choices[] = {
    "none",         "copy",         "host_copy",     "stream_sync", "device_sync",  "event_sync",
    "stream_query", "event_query",  "alloc",         "alloc_host",  "alloc_thread", "legacy_copy",
    "sync_copy",    "other_stream", "pageable_copy", "fork",        "item",         NULL};
static const char *const lib_choices[] = {"none", "lazy_init", NULL};

const char *gr_breaker_pattern_name(int p) {
    return p >= 0 && p < GR_BRK_NPATTERNS ? pattern_names[p] : "?";
}

typedef enum group { G_COMPUTE, G_COPY, G_HOST } group;

static group group_of(int p) {
    switch (p) {
    case GR_BRK_COPY:
    case GR_BRK_LEGACY_COPY:
    case GR_BRK_SYNC_COPY:
        return G_COPY;
    case GR_BRK_HOST_COPY:
    case GR_BRK_PAGEABLE_COPY:
        return G_HOST;
    default:
        return G_COMPUTE;
    }
}

int gr_breaker_clean_of(int p) {
    if (p == GR_BRK_NONE || p == GR_BRK_COPY || p == GR_BRK_HOST_COPY) return -1;
    switch (group_of(p)) {
    case G_COPY:
        return GR_BRK_COPY;
    case G_HOST:
        return GR_BRK_HOST_COPY;
    default:
        return GR_BRK_NONE;
    }
}

float gr_breaker_host_value(int64_t i) {
    return 0.25f * (float)(i % 64) - 4.0f;
}

static gr_status check_common(gr_op *op, const gr_plan *plan, int lib, gr_error *err) {
    static const gr_dtype fp32_only[] = {GR_FP32, GR_DTYPE_INVALID};
    gr_status st = gr_check_elementwise(op, plan, err);
    if (st != GR_OK) return st;
    st = gr_check_dtype(op, gr_in(op, plan, 0), "inputs[0]", fp32_only, err);
    if (st != GR_OK) return st;
    const char *name = gr_op_attr_str(op, "pattern", "none");
    int p = -1;
    for (int i = 0; i < GR_BRK_NPATTERNS; i++)
        if (!strcmp(name, pattern_names[i])) p = i;
    const char *const *allowed = lib ? lib_choices : breaker_choices;
    int ok = 0;
    for (const char *const *c = allowed; *c; c++)
        ok |= p >= 0 && !strcmp(*c, name);
    if (!ok) /* the resolver checks enum attrs against the choices first */
        return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                            "kernel \"%s\": pattern \"%s\" passed the attr check", op->kernel->name,
                            name);
    if (op->ip[0] > ((int64_t)1 << 26))
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "kernel \"%s\" is for small buffers (<= 2^26 elements); "
                            "\"%s\" has %lld",
                            op->kernel->name, gr_in(op, plan, 0)->name, (long long)op->ip[0]);
    op->ip[1] = p;
    op->ip[2] = lib;
    gr_grid_stride(op, plan, op->ip[0], 256, 1, 4);
    double n = (double)op->ip[0];
    op->bytes_read = group_of(p) == G_COMPUTE ? 4 * n + 4 : 4 * n;
    op->bytes_written = 4 * n;
    op->flops = group_of(p) == G_COMPUTE ? 2 * n : 0;
    op->launches = group_of(p) == G_COMPUTE ? 1 : 0;
    if (lib) op->launches = -1; /* cuBLAS decides */
    return GR_OK;
}

static gr_status check_breaker(gr_op *op, const gr_plan *plan, gr_error *err) {
    return check_common(op, plan, 0, err);
}

static gr_status check_breaker_lib(gr_op *op, const gr_plan *plan, gr_error *err) {
    return check_common(op, plan, 1, err);
}

static gr_status ref_breaker(const gr_op *op, const gr_plan *plan, void *const *host,
                             gr_error *err) {
    (void)err;
    const float *x = host[op->inputs[0]];
    float *y = host[op->outputs[0]];
    int64_t n = op->ip[0];
    switch (group_of((int)op->ip[1])) {
    case G_COPY:
        memcpy(y, x, (size_t)n * sizeof(float));
        break;
    case G_HOST:
        for (int64_t i = 0; i < n; i++)
            y[i] = gr_breaker_host_value(i);
        break;
    default: {
        /* 2x is exact in float: one rounding, as on the device with or without an FMA */
        float x0 = x[0];
        for (int64_t i = 0; i < n; i++)
            y[i] = 2.0f * x[i] + x0;
        break;
    }
    }
    (void)plan;
    return GR_OK;
}

static const gr_attr_spec breaker_attrs[] = {
    {"pattern", GR_ATTR_ENUM, 0, 0, "none", breaker_choices,
     "what the op does (default none): none | copy | host_copy are clean; stream_sync, "
     "device_sync, "
     "event_sync, stream_query, event_query, alloc, alloc_host, alloc_thread, legacy_copy, "
     "sync_copy, "
     "other_stream, pageable_copy, fork, item break or escape capture (docs/capture_check.md)"}};
static const gr_attr_spec lib_attrs[] = {
    {"pattern", GR_ATTR_ENUM, 0, 0, "none", lib_choices,
     "none: cuBLAS through the handle made before capture; lazy_init: cublasCreate inside the op"}};

static const gr_kernel_def k_breaker = {"capture_breaker",
                                        "a deliberately capture-breaking op and its clean "
                                        "counterpart: y = 2x + x[0] (compute patterns), y = x "
                                        "(copy patterns) or y = a host table (host patterns)",
                                        "x (fp32)",
                                        "y (fp32, shape of x)",
                                        1,
                                        1,
                                        1,
                                        1,
                                        breaker_attrs,
                                        1,
                                        GR_KF_HOST,
                                        check_breaker,
                                        gr_launch_breaker,
                                        ref_breaker,
                                        gr_breaker_setup,
                                        gr_breaker_teardown};
static const gr_kernel_def k_breaker_lib = {
    "capture_breaker_lib",
    "y = 2x + x[0], then a cuBLAS call on y; lazy_init creates the cuBLAS handle inside the op",
    "x (fp32)",
    "y (fp32, shape of x)",
    1,
    1,
    1,
    1,
    lib_attrs,
    1,
    GR_KF_HOST | GR_KF_LIBRARY,
    check_breaker_lib,
    gr_launch_breaker,
    ref_breaker,
    gr_breaker_setup,
    gr_breaker_teardown};

const gr_kernel_def *const gr_breaker_kernels[] = {&k_breaker, &k_breaker_lib, NULL};

static int is_breaker(const gr_op *op) {
    return op->kind == GR_OP_KERNEL && (op->kernel == &k_breaker || op->kernel == &k_breaker_lib);
}

gr_status gr_breaker_fix_plan(const gr_plan *plan, const int *ops, int nops, gr_plan **out,
                              int *nfixed, gr_error *err) {
    *out = NULL;
    *nfixed = 0;
    gr_plan *p = malloc(sizeof(*p));
    gr_buffer *bufs = malloc((size_t)(plan->nbufs ? plan->nbufs : 1) * sizeof(*bufs));
    gr_op *o = malloc((size_t)(plan->nops ? plan->nops : 1) * sizeof(*o));
    if (!p || !bufs || !o) {
        free(p);
        free(bufs);
        free(o);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    *p = *plan;
    memcpy(bufs, plan->bufs, (size_t)plan->nbufs * sizeof(*bufs));
    memcpy(o, plan->ops, (size_t)plan->nops * sizeof(*o));
    p->bufs = bufs;
    p->ops = o;
    if (gr_plan_own_user_ops(p, err) != GR_OK) { /* user ops (issue 24) are not shared */
        gr_plan_destroy(p);
        return err->code;
    }
    gr_status st = GR_OK;
    for (int i = 0; i < p->nops && st == GR_OK; i++) {
        gr_op *op = &p->ops[i];
        if (!is_breaker(op)) continue;
        int listed = nops < 0;
        for (int k = 0; k < nops && !listed; k++)
            listed = ops[k] == i;
        int clean = gr_breaker_clean_of((int)op->ip[1]);
        if (!listed || clean < 0) continue;
        gr_attr_val *a = NULL;
        for (int k = 0; k < op->nattrs; k++)
            if (!strcmp(op->attrs[k].name, "pattern")) a = &op->attrs[k];
        if (!a && op->nattrs < GR_MAX_ATTRS) {
            a = &op->attrs[op->nattrs++];
            memset(a, 0, sizeof(*a));
            a->name = op->kernel->attrs[0].name;
            a->type = GR_ATTR_ENUM;
        }
        if (!a) {
            st = gr_error_set(err, GR_ERR_INTERNAL, op->path, "no room for the pattern attr");
            break;
        }
        snprintf(a->str, sizeof(a->str), "%s", pattern_names[clean]);
        st = op->kernel->check(op, p, err);
        (*nfixed)++;
    }
    if (st == GR_OK && *nfixed) {
        char v[sizeof(p->variant)];
        snprintf(v, sizeof(v), "%s", p->variant);
        snprintf(p->variant, sizeof(p->variant), "%.50s (fixed)", v);
    }
    if (st != GR_OK) {
        gr_plan_destroy(p);
        return st;
    }
    *out = p;
    return GR_OK;
}
