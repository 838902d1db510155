// Capture breakers, device side and launches (kernels/breakers.h). One small kernel, y = 2x + x[0]
// (reads 4n + 4 bytes, writes 4n, 2 flops per element), surrounded by whatever the pattern does
// wrong. Every CUDA call is checked: during a capture the failing one names itself in the error
// and the capture checker names the op. What an op makes inside a capture (scratch memory, pinned
// memory, cuBLAS handles) is kept until teardown, because a captured graph may still use it;
// eager runs free it at once, like the code they imitate.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "kernels/breakers.h"

namespace {

__global__ void affine_kernel(const float *__restrict__ x, float *__restrict__ y, int64_t n,
                              const float *x0p, float x0v) {
    float x0 = x0p ? *x0p : x0v;
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = 2.0f * x[i] + x0;
}

enum { KEEP_DEVICE = 0, KEEP_HOST = 1, KEEP_CUBLAS = 2 };
#define MAX_KEEP 64

struct brk_state {
    int pattern;
    cudaStream_t side;
    cudaEvent_t ev;
    float *pinned;
    float *pageable;
    int device;
    int nkeep;
    void *keep[MAX_KEEP];
    int keep_kind[MAX_KEEP];
};

gr_status fail(cudaError_t rc, const char *call, const gr_op *op, gr_error *err) {
    char expr[256];
    snprintf(expr, sizeof(expr), "%.64s in op \"%.64s\" (%.40s pattern %.20s)", call,
             op->name[0] ? op->name : op->path, op->kernel->name,
             gr_breaker_pattern_name((int)op->ip[1]));
    return gr_cuda_fail((int)rc, expr, __FILE__, __LINE__, err);
}

gr_status fail_blas(cublasStatus_t rc, const char *call, const gr_op *op, gr_error *err) {
    char expr[256];
    snprintf(expr, sizeof(expr), "%.64s in op \"%.64s\" (%.40s pattern %.20s)", call,
             op->name[0] ? op->name : op->path, op->kernel->name,
             gr_breaker_pattern_name((int)op->ip[1]));
    return gr_cublas_fail((int)rc, expr, __FILE__, __LINE__, err);
}

// A legal query during any capture; says whether what the op makes must outlive the call.
int capturing(cudaStream_t s) {
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &cs) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return cs != cudaStreamCaptureStatusNone;
}

gr_status keep(brk_state *st, void *p, int kind, const gr_op *op, gr_error *err) {
    if (st->nkeep >= MAX_KEEP)
        return gr_error_set(
            err, GR_ERR_INTERNAL, op->path,
            "op \"%s\" (pattern %s) was captured more than %d times in one session; what each "
            "capture made is kept until teardown",
            op->name, gr_breaker_pattern_name((int)op->ip[1]), MAX_KEEP);
    st->keep[st->nkeep] = p;
    st->keep_kind[st->nkeep] = kind;
    st->nkeep++;
    return GR_OK;
}

gr_status affine(const gr_op *op, const float *x, float *y, const float *x0p, float x0v,
                 cudaStream_t s, gr_error *err) {
    affine_kernel<<<op->grid[0], op->block[0], 0, s>>>(x, y, op->ip[0], x0p, x0v);
    return gr_launch_status(op->kernel->name, op->path, err);
}

struct thread_alloc {
    int device;
    size_t bytes;
    void *p;
    cudaError_t rc;
};

void *alloc_thread_main(void *arg) {
    thread_alloc *t = (thread_alloc *)arg;
    /* a new thread starts on device 0: switch only when the op's device is another one */
    int cur = -1;
    t->rc = cudaGetDevice(&cur);
    if (t->rc == cudaSuccess && cur != t->device) t->rc = cudaSetDevice(t->device);
    if (t->rc == cudaSuccess) t->rc = cudaMalloc(&t->p, t->bytes);
    if (t->rc != cudaSuccess) cudaGetLastError();
    return NULL;
}

} // namespace

#define CK(call, what)                                                                             \
    do {                                                                                           \
        cudaError_t rc_ = (call);                                                                  \
        if (rc_ != cudaSuccess) return fail(rc_, what, op, err);                                   \
    } while (0)

#define CKB(call, what)                                                                            \
    do {                                                                                           \
        cublasStatus_t rc_ = (call);                                                               \
        if (rc_ != CUBLAS_STATUS_SUCCESS) return fail_blas(rc_, what, op, err);                    \
    } while (0)

extern "C" gr_status gr_launch_breaker(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    brk_state *st = (brk_state *)ctx->op_state;
    if (!st)
        return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                            "capture breaker launched without its setup()");
    const float *x = (const float *)ctx->dptr[op->inputs[0]];
    float *y = (float *)ctx->dptr[op->outputs[0]];
    size_t bytes = (size_t)op->ip[0] * sizeof(float);
    cudaStream_t s = (cudaStream_t)ctx->stream;
    const float one = 1.0f;
    switch ((int)op->ip[1]) {
    case GR_BRK_NONE:
        if (!op->ip[2]) return affine(op, x, y, x, 0, s, err);
        if (!ctx->cublas)
            return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                                "no cuBLAS handle in the device state");
        CKB(cublasSetStream((cublasHandle_t)ctx->cublas, s), "cublasSetStream");
        CKB(cublasSetWorkspace((cublasHandle_t)ctx->cublas, ctx->workspace, ctx->workspace_bytes),
            "cublasSetWorkspace");
        GR_TRY(affine(op, x, y, x, 0, s, err));
        CKB(cublasSscal((cublasHandle_t)ctx->cublas, (int)op->ip[0], &one, y, 1), "cublasSscal");
        return GR_OK;
    case GR_BRK_LAZY_INIT: {
        cublasHandle_t h = NULL;
        CKB(cublasCreate(&h), "cublasCreate");
        cublasStatus_t bs = cublasSetStream(h, s);
        gr_status gs = bs == CUBLAS_STATUS_SUCCESS ? affine(op, x, y, x, 0, s, err)
                                                   : fail_blas(bs, "cublasSetStream", op, err);
        if (gs == GR_OK) {
            bs = cublasSscal(h, (int)op->ip[0], &one, y, 1);
            if (bs != CUBLAS_STATUS_SUCCESS) gs = fail_blas(bs, "cublasSscal", op, err);
        }
        if (capturing(s)) {
            gr_status ks = keep(st, h, KEEP_CUBLAS, op, err);
            if (ks != GR_OK) cublasDestroy(h);
            return gs != GR_OK ? gs : ks;
        }
        cublasDestroy(h);
        return gs;
    }
    case GR_BRK_COPY:
        CK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
        return GR_OK;
    case GR_BRK_HOST_COPY:
        CK(cudaMemcpyAsync(y, st->pinned, bytes, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
        return GR_OK;
    case GR_BRK_STREAM_SYNC:
        GR_TRY(affine(op, x, y, x, 0, s, err));
        CK(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        return GR_OK;
    case GR_BRK_DEVICE_SYNC:
        GR_TRY(affine(op, x, y, x, 0, s, err));
        CK(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
        return GR_OK;
    case GR_BRK_EVENT_SYNC:
        GR_TRY(affine(op, x, y, x, 0, s, err));
        CK(cudaEventRecord(st->ev, s), "cudaEventRecord");
        CK(cudaEventSynchronize(st->ev), "cudaEventSynchronize");
        return GR_OK;
    case GR_BRK_STREAM_QUERY: {
        GR_TRY(affine(op, x, y, x, 0, s, err));
        cudaError_t rc = cudaStreamQuery(s);
        if (rc == cudaErrorNotReady)
            cudaGetLastError(); /* an answer, not an error */
        else
            CK(rc, "cudaStreamQuery");
        return GR_OK;
    }
    case GR_BRK_EVENT_QUERY: {
        GR_TRY(affine(op, x, y, x, 0, s, err));
        CK(cudaEventRecord(st->ev, s), "cudaEventRecord");
        cudaError_t rc = cudaEventQuery(st->ev);
        if (rc == cudaErrorNotReady)
            cudaGetLastError();
        else
            CK(rc, "cudaEventQuery");
        return GR_OK;
    }
    case GR_BRK_ALLOC: {
        void *tmp = NULL;
        CK(cudaMalloc(&tmp, bytes), "cudaMalloc");
        gr_status gs = affine(op, x, (float *)tmp, x, 0, s, err);
        if (gs == GR_OK) {
            cudaError_t rc = cudaMemcpyAsync(y, tmp, bytes, cudaMemcpyDeviceToDevice, s);
            if (rc != cudaSuccess) gs = fail(rc, "cudaMemcpyAsync", op, err);
        }
        if (capturing(s)) {
            gr_status ks = keep(st, tmp, KEEP_DEVICE, op, err);
            return gs != GR_OK ? gs : ks;
        }
        cudaError_t rc = cudaFree(tmp); /* synchronizes the device first */
        if (gs == GR_OK && rc != cudaSuccess) gs = fail(rc, "cudaFree", op, err);
        return gs;
    }
    case GR_BRK_ALLOC_HOST: {
        void *h = NULL;
        CK(cudaMallocHost(&h, bytes), "cudaMallocHost");
        gr_status gs = affine(op, x, y, x, 0, s, err);
        if (capturing(s)) {
            gr_status ks = keep(st, h, KEEP_HOST, op, err);
            return gs != GR_OK ? gs : ks;
        }
        cudaError_t rc = cudaFreeHost(h);
        if (gs == GR_OK && rc != cudaSuccess) gs = fail(rc, "cudaFreeHost", op, err);
        return gs;
    }
    case GR_BRK_ALLOC_THREAD: {
        thread_alloc t = {st->device, bytes, NULL, cudaSuccess};
        pthread_t th;
        if (pthread_create(&th, NULL, alloc_thread_main, &t) != 0)
            return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                                "cannot start the helper thread of op \"%s\"", op->name);
        pthread_join(th, NULL);
        if (t.rc != cudaSuccess) return fail(t.rc, "cudaMalloc (from a helper thread)", op, err);
        gr_status gs = affine(op, x, (float *)t.p, x, 0, s, err);
        if (gs == GR_OK) {
            cudaError_t rc = cudaMemcpyAsync(y, t.p, bytes, cudaMemcpyDeviceToDevice, s);
            if (rc != cudaSuccess) gs = fail(rc, "cudaMemcpyAsync", op, err);
        }
        if (capturing(s)) {
            gr_status ks = keep(st, t.p, KEEP_DEVICE, op, err);
            return gs != GR_OK ? gs : ks;
        }
        cudaError_t rc = cudaFree(t.p);
        if (gs == GR_OK && rc != cudaSuccess) gs = fail(rc, "cudaFree", op, err);
        return gs;
    }
    case GR_BRK_LEGACY_COPY:
        CK(cudaMemcpyAsync(y, x, bytes, cudaMemcpyDeviceToDevice, cudaStreamLegacy),
           "cudaMemcpyAsync (legacy stream)");
        return GR_OK;
    case GR_BRK_SYNC_COPY:
        CK(cudaMemcpy(y, x, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
        return GR_OK;
    case GR_BRK_OTHER_STREAM:
        return affine(op, x, y, x, 0, st->side, err);
    case GR_BRK_PAGEABLE_COPY:
        CK(cudaMemcpyAsync(y, st->pageable, bytes, cudaMemcpyHostToDevice, s),
           "cudaMemcpyAsync (pageable source)");
        return GR_OK;
    case GR_BRK_FORK:
        CK(cudaEventRecord(st->ev, s), "cudaEventRecord");
        CK(cudaStreamWaitEvent(st->side, st->ev, 0), "cudaStreamWaitEvent");
        return affine(op, x, y, x, 0, st->side, err);
    case GR_BRK_ITEM:
        CK(cudaMemcpyAsync(st->pinned, x, sizeof(float), cudaMemcpyDeviceToHost, s),
           "cudaMemcpyAsync (x[0] to the host)");
        CK(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        return affine(op, x, y, NULL, st->pinned[0], s, err);
    default:
        return gr_error_set(err, GR_ERR_INTERNAL, op->path, "unknown capture breaker pattern %lld",
                            (long long)op->ip[1]);
    }
}

#undef CK
#define CK(call, what)                                                                             \
    do {                                                                                           \
        cudaError_t rc_ = (call);                                                                  \
        if (rc_ != cudaSuccess) {                                                                  \
            gr_status st_ = fail(rc_, what, op, err);                                              \
            gr_breaker_teardown(st);                                                               \
            return st_;                                                                            \
        }                                                                                          \
    } while (0)

extern "C" gr_status gr_breaker_setup(const gr_op *op, const gr_launch_ctx *ctx, void **state,
                                      gr_error *err) {
    (void)ctx;
    *state = NULL;
    brk_state *st = (brk_state *)calloc(1, sizeof(brk_state));
    if (!st) return gr_error_set(err, GR_ERR_NOMEM, op->path, "out of host memory");
    st->pattern = (int)op->ip[1];
    int64_t n = op->ip[0];
    size_t bytes = (size_t)n * sizeof(float);
    switch (st->pattern) {
    case GR_BRK_OTHER_STREAM:
    case GR_BRK_FORK:
        CK(cudaStreamCreateWithFlags(&st->side, cudaStreamNonBlocking),
           "cudaStreamCreateWithFlags (setup)");
        break;
    default:
        break;
    }
    if (st->pattern == GR_BRK_EVENT_SYNC || st->pattern == GR_BRK_EVENT_QUERY ||
        st->pattern == GR_BRK_FORK)
        CK(cudaEventCreateWithFlags(&st->ev, cudaEventDisableTiming),
           "cudaEventCreateWithFlags (setup)");
    if (st->pattern == GR_BRK_HOST_COPY || st->pattern == GR_BRK_ITEM) {
        size_t hb = st->pattern == GR_BRK_ITEM ? sizeof(float) : bytes;
        CK(cudaMallocHost((void **)&st->pinned, hb), "cudaMallocHost (setup)");
        if (st->pattern == GR_BRK_HOST_COPY)
            for (int64_t i = 0; i < n; i++)
                st->pinned[i] = gr_breaker_host_value(i);
        else
            st->pinned[0] = 0;
    }
    if (st->pattern == GR_BRK_PAGEABLE_COPY) {
        st->pageable = (float *)malloc(bytes ? bytes : 1);
        if (!st->pageable) {
            gr_breaker_teardown(st);
            return gr_error_set(err, GR_ERR_NOMEM, op->path, "out of host memory");
        }
        for (int64_t i = 0; i < n; i++)
            st->pageable[i] = gr_breaker_host_value(i);
    }
    if (st->pattern == GR_BRK_ALLOC_THREAD) CK(cudaGetDevice(&st->device), "cudaGetDevice (setup)");
    *state = st;
    return GR_OK;
}

extern "C" void gr_breaker_teardown(void *state) {
    brk_state *st = (brk_state *)state;
    if (!st) return;
    for (int i = 0; i < st->nkeep; i++) {
        if (st->keep_kind[i] == KEEP_CUBLAS)
            cublasDestroy((cublasHandle_t)st->keep[i]);
        else if (st->keep_kind[i] == KEEP_HOST)
            cudaFreeHost(st->keep[i]);
        else
            cudaFree(st->keep[i]);
    }
    if (st->side) cudaStreamDestroy(st->side);
    if (st->ev) cudaEventDestroy(st->ev);
    if (st->pinned) cudaFreeHost(st->pinned);
    free(st->pageable);
    free(st);
}
