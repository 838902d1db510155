/* Device state for one plan, and the executor's launch loop. All allocation and handle creation
 * happens in gr_devstate_create, before any capture. */
#include "core/device.h"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"

#define WORKSPACE_BYTES (32u << 20) /* cuBLAS' recommendation for Hopper */

gr_status gr_device_probe(int ordinal, gr_device_info *info, gr_error *err) {
    memset(info, 0, sizeof(*info));
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0)
        return gr_error_set(err, GR_ERR_NODEV, NULL,
                            "no CUDA device found (%s); graphrun run needs an NVIDIA GPU and its "
                            "driver. `graphrun validate` works without one",
                            rc != cudaSuccess ? cudaGetErrorName(rc) : "0 devices");
    if (ordinal < 0 || ordinal >= count)
        return gr_error_set(err, GR_ERR_USAGE, "--device",
                            "device %d does not exist (this machine has %d)", ordinal, count);
    GR_CUDA(cudaSetDevice(ordinal), err);
    struct cudaDeviceProp p;
    GR_CUDA(cudaGetDeviceProperties(&p, ordinal), err);
    info->ordinal = ordinal;
    snprintf(info->name, sizeof(info->name), "%s", p.name);
    info->sm_count = p.multiProcessorCount;
    info->cc_major = p.major;
    info->cc_minor = p.minor;
    info->mem_total = p.totalGlobalMem;
    info->l2_bytes = (size_t)p.l2CacheSize;
    info->mem_bus_bits = p.memoryBusWidth;
    cudaDeviceGetAttribute(&info->clock_khz, cudaDevAttrClockRate, ordinal);
    cudaDeviceGetAttribute(&info->mem_clock_khz, cudaDevAttrMemoryClockRate, ordinal);
    cudaDriverGetVersion(&info->driver_version);
    cudaRuntimeGetVersion(&info->runtime_version);
    size_t fr = 0, tot = 0;
    GR_CUDA(cudaMemGetInfo(&fr, &tot), err);
    info->mem_free = fr;
    return GR_OK;
}

gr_target gr_target_from_info(const gr_device_info *info) {
    gr_target t;
    memset(&t, 0, sizeof(t));
    snprintf(t.name, sizeof(t.name), "%s", info->name);
    t.sm_count = info->sm_count;
    t.cc_major = info->cc_major;
    t.cc_minor = info->cc_minor;
    t.l2_bytes = info->l2_bytes;
    t.from_device = 1;
    return t;
}

int gr_plan_needs_library(const gr_plan *plan) {
    for (int i = 0; i < plan->nops; i++)
        if (plan->ops[i].kind == GR_OP_KERNEL && (plan->ops[i].kernel->flags & GR_KF_LIBRARY))
            return 1;
    return 0;
}

gr_status gr_devstate_create(const gr_plan *plan, int sm_count, gr_devstate **out, gr_error *err) {
    return gr_devstate_create_ext(plan, sm_count, NULL, out, err);
}

gr_status gr_devlib_create(int nstreams, int blas, size_t scratch_bytes, gr_devlib **out,
                           gr_error *err) {
    *out = NULL;
    gr_devlib *lib = calloc(1, sizeof(*lib));
    if (!lib) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    lib->nstreams = nstreams < 1 ? 1 : nstreams;
    gr_status st = GR_OK;
    if (scratch_bytes > 0) {
        scratch_bytes = (scratch_bytes + 255) & ~(size_t)255; /* each slice 256-byte aligned */
        cudaError_t crc = cudaMalloc(&lib->scratch, scratch_bytes * (size_t)lib->nstreams);
        if (crc != cudaSuccess) {
            lib->scratch = NULL;
            st = gr_cuda_fail(crc, "cudaMalloc(scratch arena)", __FILE__, __LINE__, err);
        } else {
            lib->scratch_bytes = scratch_bytes;
            lib->bytes += (double)scratch_bytes * lib->nstreams;
        }
    }
    if (!blas || st != GR_OK) {
        if (st != GR_OK) {
            gr_devlib_destroy(lib);
            return st;
        }
        *out = lib;
        return GR_OK;
    }
    cublasHandle_t h = NULL;
    cublasLtHandle_t lt = NULL;
    int rc = cublasCreate(&h);
    if (rc != 0) st = gr_cublas_fail(rc, "cublasCreate", __FILE__, __LINE__, err);
    else lib->cublas = h;
    if (st == GR_OK && (rc = cublasLtCreate(&lt)) != 0)
        st = gr_cublas_fail(rc, "cublasLtCreate", __FILE__, __LINE__, err);
    else if (st == GR_OK) lib->cublaslt = lt;
    if (st == GR_OK) {
        /* one workspace per stream: library calls on different streams may run at once */
        cudaError_t crc = cudaMalloc(&lib->workspace, (size_t)WORKSPACE_BYTES * (size_t)lib->nstreams);
        if (crc != cudaSuccess) {
            lib->workspace = NULL;
            st = gr_cuda_fail(crc, "cudaMalloc(workspace)", __FILE__, __LINE__, err);
        } else {
            lib->workspace_bytes = WORKSPACE_BYTES;
            lib->bytes += (double)WORKSPACE_BYTES * lib->nstreams;
        }
    }
    if (st == GR_OK && (rc = cublasSetWorkspace(h, lib->workspace, lib->workspace_bytes)) != 0)
        st = gr_cublas_fail(rc, "cublasSetWorkspace", __FILE__, __LINE__, err);
    if (st != GR_OK) {
        gr_devlib_destroy(lib);
        return st;
    }
    *out = lib;
    return GR_OK;
}

void gr_devlib_destroy(gr_devlib *lib) {
    if (!lib) return;
    if (lib->cublas) cublasDestroy((cublasHandle_t)lib->cublas);
    if (lib->cublaslt) cublasLtDestroy((cublasLtHandle_t)lib->cublaslt);
    if (lib->workspace) cudaFree(lib->workspace);
    if (lib->scratch) cudaFree(lib->scratch);
    free(lib);
}

gr_status gr_devstate_create_ext(const gr_plan *plan, int sm_count, void *const *external,
                                 gr_devstate **out, gr_error *err) {
    return gr_devstate_create_shared(plan, sm_count, external, NULL, out, err);
}

gr_status gr_devstate_create_shared(const gr_plan *plan, int sm_count, void *const *external,
                                    const gr_devlib *lib, gr_devstate **out, gr_error *err) {
    *out = NULL;
    gr_devstate *dev = calloc(1, sizeof(*dev));
    if (!dev) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    dev->plan = plan;
    dev->sm_count = sm_count;
    dev->dptr = calloc((size_t)plan->nbufs + 1, sizeof(void *));
    dev->events = calloc((size_t)plan->nevents + 1, sizeof(void *));
    dev->op_state = calloc((size_t)plan->nops + 1, sizeof(void *));
    dev->borrowed = calloc((size_t)plan->nbufs + 1, 1);
    if (!dev->dptr || !dev->events || !dev->op_state || !dev->borrowed) {
        gr_devstate_destroy(dev);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    gr_status st = GR_OK;
    for (int b = 0; b < plan->nbufs && st == GR_OK; b++) {
        const gr_buffer *buf = &plan->bufs[b];
        if (!buf->used) continue;
        if (external && external[b]) { /* the caller's (shared by bucket graphs): not freed here */
            dev->dptr[b] = external[b];
            dev->borrowed[b] = 1;
            continue;
        }
        cudaError_t rc = cudaMalloc(&dev->dptr[b], buf->bytes ? buf->bytes : 1);
        if (rc != cudaSuccess) {
            cudaGetLastError();
            size_t fr = 0, tot = 0;
            cudaMemGetInfo(&fr, &tot);
            st = gr_error_set(err, rc == cudaErrorMemoryAllocation ? GR_ERR_INPUT : GR_ERR_CUDA,
                              buf->path,
                              "cannot allocate buffer \"%s\" (%.1f MB): %s; %.1f MB allocated "
                              "so far, %.1f MB free on the device. Use --set to make the "
                              "workload smaller",
                              buf->name, (double)buf->bytes / 1e6, cudaGetErrorName(rc),
                              (double)dev->allocated_bytes / 1e6, (double)fr / 1e6);
            break;
        }
        dev->allocated_bytes += buf->bytes;
    }
    for (int s = 0; s < plan->nstreams && st == GR_OK; s++) {
        cudaStream_t cs;
        cudaError_t rc = cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking);
        if (rc != cudaSuccess) st = gr_cuda_fail(rc, "cudaStreamCreateWithFlags", __FILE__, __LINE__, err);
        else dev->streams[s] = (gr_stream_t)cs;
    }
    for (int e = 0; e < plan->nevents && st == GR_OK; e++) {
        cudaEvent_t ev;
        cudaError_t rc = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
        if (rc != cudaSuccess) st = gr_cuda_fail(rc, "cudaEventCreateWithFlags", __FILE__, __LINE__, err);
        else dev->events[e] = ev;
    }
    const int blas = gr_plan_needs_library(plan);
    const size_t scratch = gr_plan_scratch(plan);
    if (st == GR_OK && (blas || scratch > 0)) {
        if (lib && lib->nstreams >= plan->nstreams && (!blas || lib->cublas) &&
            lib->scratch_bytes >= scratch) { /* shared: never run at once */
            dev->lib = lib;
            dev->lib_borrowed = 1;
        } else {
            gr_devlib *own = NULL;
            st = gr_devlib_create(plan->nstreams, blas, scratch, &own, err);
            dev->lib = own;
            if (own) dev->allocated_bytes += (size_t)own->bytes;
        }
    }
    for (int i = 0; i < plan->nops && st == GR_OK; i++) {
        const gr_op *op = &plan->ops[i];
        if (op->kind != GR_OP_KERNEL || !op->kernel->setup) continue;
        gr_launch_ctx ctx = gr_devstate_ctx(dev, op);
        st = op->kernel->setup(op, &ctx, &dev->op_state[i], err);
    }
    if (st == GR_OK) {
        cudaError_t rc = cudaDeviceSynchronize();
        if (rc != cudaSuccess) st = gr_cuda_fail(rc, "cudaDeviceSynchronize", __FILE__, __LINE__, err);
    }
    if (st != GR_OK) {
        gr_devstate_destroy(dev);
        return st;
    }
    *out = dev;
    return GR_OK;
}

void gr_devstate_destroy(gr_devstate *dev) {
    if (!dev) return;
    const gr_plan *plan = dev->plan;
    if (dev->op_state)
        for (int i = 0; i < plan->nops; i++)
            if (dev->op_state[i] && plan->ops[i].kernel && plan->ops[i].kernel->teardown)
                plan->ops[i].kernel->teardown(dev->op_state[i]);
    if (dev->dptr)
        for (int b = 0; b < plan->nbufs; b++)
            if (dev->dptr[b] && !(dev->borrowed && dev->borrowed[b])) cudaFree(dev->dptr[b]);
    for (int s = 0; s < GR_MAX_STREAMS; s++)
        if (dev->streams[s]) cudaStreamDestroy((cudaStream_t)dev->streams[s]);
    if (dev->events)
        for (int e = 0; e < plan->nevents; e++)
            if (dev->events[e]) cudaEventDestroy((cudaEvent_t)dev->events[e]);
    if (!dev->lib_borrowed) gr_devlib_destroy((gr_devlib *)dev->lib);
    free(dev->dptr);
    free(dev->borrowed);
    free(dev->events);
    free(dev->op_state);
    free(dev);
}

static gr_status fill_all(gr_devstate *dev, int poison_only, gr_error *err) {
    const gr_plan *plan = dev->plan;
    gr_stream_t s = dev->streams[0];
    for (int b = 0; b < plan->nbufs; b++) {
        const gr_buffer *buf = &plan->bufs[b];
        if (!buf->used) continue;
        if (poison_only && buf->init.kind != GR_INIT_NONE) continue;
        gr_status st = gr_fill_device(dev->dptr[b], buf->dtype, buf->numel, &buf->init,
                                      buf->host_data, s, err);
        if (st != GR_OK) {
            gr_error_prefix(err, "initialising buffer \"%s\": ", buf->name);
            return st;
        }
    }
    GR_CUDA(cudaStreamSynchronize((cudaStream_t)s), err);
    return GR_OK;
}

gr_status gr_devstate_init_buffers(gr_devstate *dev, gr_error *err) {
    return fill_all(dev, 0, err);
}

gr_status gr_devstate_poison(gr_devstate *dev, gr_error *err) {
    return fill_all(dev, 1, err);
}

gr_status gr_devstate_download(const gr_devstate *dev, int buf, void *host, gr_error *err) {
    const gr_buffer *b = &dev->plan->bufs[buf];
    /* the state's streams are non-blocking: a plain cudaMemcpy (legacy stream) would not wait
     * for a step still running on them, and would read the buffer while it is being written */
    for (int s = 0; s < GR_MAX_STREAMS; s++)
        if (dev->streams[s]) GR_CUDA(cudaStreamSynchronize((cudaStream_t)dev->streams[s]), err);
    cudaStream_t s0 = (cudaStream_t)dev->streams[0];
    GR_CUDA(cudaMemcpyAsync(host, dev->dptr[buf], b->bytes, cudaMemcpyDeviceToHost, s0), err);
    GR_CUDA(cudaStreamSynchronize(s0), err);
    return GR_OK;
}

gr_status gr_devstate_upload(const gr_devstate *dev, int buf, const void *host, gr_error *err) {
    return gr_devstate_upload_part(dev, buf, host, dev->plan->bufs[buf].bytes, err);
}

gr_status gr_devstate_upload_part(const gr_devstate *dev, int buf, const void *host, size_t bytes,
                                  gr_error *err) {
    const gr_buffer *b = &dev->plan->bufs[buf];
    if (!dev->dptr[buf])
        return gr_error_set(err, GR_ERR_INPUT, b->path, "buffer \"%s\" is not used by variant %s",
                            b->name, dev->plan->variant);
    if (bytes > b->bytes)
        return gr_error_set(err, GR_ERR_INTERNAL, b->path, "%zu bytes into buffer \"%s\" of %zu",
                            bytes, b->name, b->bytes);
    /* on the main stream, in order with the launches around it */
    cudaStream_t s = (cudaStream_t)dev->streams[0];
    if (bytes) GR_CUDA(cudaMemcpyAsync(dev->dptr[buf], host, bytes, cudaMemcpyHostToDevice, s), err);
    if (bytes < b->bytes)
        GR_CUDA(cudaMemsetAsync((char *)dev->dptr[buf] + bytes, 0, b->bytes - bytes, s), err);
    GR_CUDA(cudaStreamSynchronize(s), err);
    return GR_OK;
}

gr_launch_ctx gr_devstate_ctx(const gr_devstate *dev, const gr_op *op) {
    gr_launch_ctx c;
    memset(&c, 0, sizeof(c));
    c.plan = dev->plan;
    c.dptr = dev->dptr;
    c.stream = dev->streams[op->stream];
    const gr_devlib *lib = dev->lib;
    c.cublas = lib ? lib->cublas : NULL;
    c.cublaslt = lib ? lib->cublaslt : NULL;
    c.workspace = lib && lib->workspace
                      ? (char *)lib->workspace + (size_t)op->stream * lib->workspace_bytes
                      : NULL;
    c.workspace_bytes = lib && lib->workspace ? lib->workspace_bytes : 0;
    if (lib && lib->scratch && op->scratch > 0) {
        c.scratch = (char *)lib->scratch + (size_t)op->stream * lib->scratch_bytes;
        c.scratch_bytes = lib->scratch_bytes;
    }
    c.sm_count = dev->sm_count;
    c.op_state = dev->op_state ? dev->op_state[op->index] : NULL;
    c.pdl = dev->pdl && gr_op_pdl_capable(op);
    c.comm = dev->comm;
    return c;
}

gr_status gr_exec_range(const gr_plan *plan, gr_devstate *dev, int begin, int end,
                        const gr_exec_hooks *hooks, gr_error *err) {
    for (int i = begin; i < end; i++) {
        const gr_op *op = &plan->ops[i];
        if (hooks && hooks->before_op) hooks->before_op(hooks->user, op);
        gr_status st = GR_OK;
        if (op->kind == GR_OP_KERNEL) {
            gr_launch_ctx ctx = gr_devstate_ctx(dev, op);
            st = op->kernel->launch(op, &ctx, err);
        } else {
            /* FORK: the side stream waits for the point reached on the parent stream.
             * JOIN: the parent stream waits for everything enqueued on the side stream. */
            cudaStream_t rec = (cudaStream_t)dev->streams[op->kind == GR_OP_FORK ? op->stream : op->other_stream];
            cudaStream_t wait = (cudaStream_t)dev->streams[op->kind == GR_OP_FORK ? op->other_stream : op->stream];
            cudaEvent_t ev = (cudaEvent_t)dev->events[op->event];
            cudaError_t rc = cudaEventRecord(ev, rec);
            if (rc == cudaSuccess) rc = cudaStreamWaitEvent(wait, ev, 0);
            if (rc != cudaSuccess)
                st = gr_cuda_fail(rc, op->kind == GR_OP_FORK ? "fork (cudaEventRecord/cudaStreamWaitEvent)"
                                                             : "join (cudaEventRecord/cudaStreamWaitEvent)",
                                  __FILE__, __LINE__, err);
        }
        if (hooks && hooks->after_op) hooks->after_op(hooks->user, op);
        if (st != GR_OK) {
            if (!err->path[0]) snprintf(err->path, sizeof(err->path), "%s", op->path);
            /* a block too big for the kernel's registers is the op's attrs' fault: say which */
            if (st == GR_ERR_CUDA && op->kind == GR_OP_KERNEL &&
                strstr(err->msg, "cudaErrorLaunchOutOfResources"))
                gr_error_prefix(err,
                                "%s (kernel %s, %u threads per block): the block needs more "
                                "registers than an SM gives one block; give the op fewer threads "
                                "(attrs.threads, e.g. --set threads=256): ",
                                op->path, op->kernel->name,
                                op->block[0] * op->block[1] * op->block[2]);
            return st;
        }
    }
    return GR_OK;
}

gr_status gr_exec_step(const gr_plan *plan, gr_devstate *dev, const gr_exec_hooks *hooks,
                       gr_error *err) {
    return gr_exec_range(plan, dev, 0, plan->nops, hooks, err);
}
