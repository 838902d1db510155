/* The kernel interface every registry entry implements: argument schema, the check that
 * validates shapes/dtypes and fills launch dims and byte/flop accounting, the launch (the one
 * launch path for eager, captured, piecewise and traced runs) and the CPU reference. Core only
 * defines the interface; kernels/ implements it and hands core a lookup function. */
#ifndef GR_KERNEL_H
#define GR_KERNEL_H

#include "core/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *gr_stream_t; /* == cudaStream_t, without pulling CUDA headers in */

typedef struct gr_attr_spec {
    const char *name;
    gr_attr_type type;
    int required;
    double def_num;
    const char *def_str;
    const char *const *choices; /* ENUM: NULL-terminated */
    const char *help;
} gr_attr_spec;

/* What a launch gets: device pointers by buffer index, the stream, and the shared handles that
 * the device state created before any capture. */
typedef struct gr_launch_ctx {
    const gr_plan *plan;
    void *const *dptr;
    gr_stream_t stream;
    void *cublas;       /* cublasHandle_t */
    void *cublaslt;     /* cublasLtHandle_t */
    void *workspace;    /* cuBLAS workspace, set before capture */
    size_t workspace_bytes;
    int sm_count;
    void *op_state;     /* what setup() returned for this op, or NULL */
    int pdl;            /* launch with programmatic dependent launch (GR_KF_PDL kernels only) */
    void *comm;         /* communicator of collective ops (an ncclComm_t), NULL outside graphrun tp */
    void *scratch;      /* op->scratch bytes (or more) of device memory, live only during this op:
                           the stream's slice of the device state's one scratch arena, NULL when
                           op->scratch is 0 */
    size_t scratch_bytes;
} gr_launch_ctx;

enum {
    GR_KF_LIBRARY = 1u << 0, /* launches through a library (cuBLAS): kernel count not fixed */
    GR_KF_HOST = 1u << 1,    /* does host-side work (sync, alloc, copy): may break capture */
    GR_KF_INPLACE = 1u << 2, /* an output may alias an input */
    GR_KF_PDL = 1u << 3,     /* launches through gr_launch() (kernels/launch.cuh) and waits
                                (griddepcontrol.wait, e.g. gr_pdl_enter()) before touching
                                anything an earlier op writes: safe to launch with PDL */
    GR_KF_USER = 1u << 4     /* the one entry that launches user ops (op->user, kernels/usermod) */
};

/* The registry name of the user-op entry: resolve looks it up for ops with "module"; a workload
 * cannot name it as a "kernel". */
#define GR_USER_KERNEL_NAME "user"

struct gr_kernel_def {
    const char *name;
    const char *summary;
    const char *inputs_doc;  /* e.g. "a, b (same shape and dtype)" */
    const char *outputs_doc; /* e.g. "y (shape and dtype of a)" */
    int min_inputs, max_inputs, min_outputs, max_outputs;
    const gr_attr_spec *attrs;
    int nattrs;
    unsigned flags;
    /* Validate buffer shapes/dtypes and attrs; fill op->grid/block/smem, op->ip/fp, op->bytes_*,
     * op->flops and op->launches. Errors name op->path. No GPU needed. */
    gr_status (*check)(gr_op *op, const gr_plan *plan, gr_error *err);
    /* Enqueue the op on ctx->stream. Must not synchronize or allocate (unless GR_KF_HOST). */
    gr_status (*launch)(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
    /* CPU reference on host copies of the buffers (same layout and dtype as on the device). */
    gr_status (*reference)(const gr_op *op, const gr_plan *plan, void *const *host, gr_error *err);
    /* Optional: per-op state made before capture (descriptors, algorithm choice), and its free. */
    gr_status (*setup)(const gr_op *op, const gr_launch_ctx *ctx, void **state, gr_error *err);
    void (*teardown)(void *state);
};

typedef const gr_kernel_def *(*gr_kernel_lookup)(const char *name);
/* Names of all kernels, for "did you mean" and listings. NULL-terminated. */
typedef const char *const *(*gr_kernel_names)(void);

#ifdef __cplusplus
}
#endif
#endif
