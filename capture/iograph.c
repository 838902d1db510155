/* The io graph of a lane (capture/iograph.h). */
#include "capture/iograph.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/timer.h"

static gr_status fail(cudaError_t rc, const char *what, gr_error *err) {
    cudaGetLastError();
    return gr_cuda_fail(rc, what, __FILE__, __LINE__, err);
}

#if CUDART_VERSION >= 12040
#if CUDART_VERSION >= 13000
#define ADD_NODE(n, g, deps, nd, p) cudaGraphAddNode(n, g, deps, NULL, nd, p)
#else
#define ADD_NODE(n, g, deps, nd, p) cudaGraphAddNode(n, g, deps, nd, p)
#endif

/* gate -> IF { inputs -> held -> outputs -> done } in g; the handle is g's. */
static cudaError_t add_nodes(cudaGraph_t g, const gr_graph *held, gr_io_graph *io,
                             cudaGraphConditionalHandle handle) {
    struct cudaKernelNodeParams kp;
    cudaGraphNode_t gate = NULL, cond = NULL;
    gr_iogate_params(&io->gate, &kp);
    cudaError_t rc = cudaGraphAddKernelNode(&gate, g, NULL, 0, &kp);
    struct cudaGraphNodeParams np;
    memset(&np, 0, sizeof(np));
    np.type = cudaGraphNodeTypeConditional;
    np.conditional.handle = handle;
    np.conditional.type = cudaGraphCondTypeIf;
    np.conditional.size = 1;
    if (rc == cudaSuccess) rc = ADD_NODE(&cond, g, &gate, 1, &np);
    if (rc != cudaSuccess) return rc;
    cudaGraph_t body = np.conditional.phGraph_out[0];
    cudaGraphNode_t in[GR_IOGRAPH_MAX], out[GR_IOGRAPH_MAX], step = NULL, done = NULL;
    for (int k = 0; k < io->nin && rc == cudaSuccess; k++) {
        gr_iocopy_params(&io->args[k], &kp);
        rc = cudaGraphAddKernelNode(&in[k], body, NULL, 0, &kp);
    }
    if (rc == cudaSuccess)
        rc = cudaGraphAddChildGraphNode(&step, body, in, (size_t)io->nin, (cudaGraph_t)held->graph);
    for (int k = 0; k < io->nout && rc == cudaSuccess; k++) {
        gr_iocopy_params(&io->args[io->nin + k], &kp);
        rc = cudaGraphAddKernelNode(&out[k], body, &step, 1, &kp);
    }
    if (rc == cudaSuccess) {
        gr_iodone_params(&io->gate, &kp);
        if (io->nout) rc = cudaGraphAddKernelNode(&done, body, out, (size_t)io->nout, &kp);
        else rc = cudaGraphAddKernelNode(&done, body, &step, 1, &kp);
    }
    return rc;
}
#endif

gr_status gr_io_graph_build(const gr_graph *held, const gr_iocopy_args *in, int nin,
                            const gr_iocopy_args *out, int nout, const gr_iogate_args *gate,
                            gr_stream_t stream, gr_io_graph *io, gr_error *err) {
    memset(io, 0, sizeof(*io));
    if (nin < 0 || nout < 0 || nin + nout > GR_IOGRAPH_MAX || !held || !held->graph || !gate)
        return gr_error_set(err, GR_ERR_INTERNAL, NULL, "io graph of %d inputs and %d outputs",
                            nin, nout);
    char why[160];
    if (!gr_graph_loop_supported(why, sizeof(why)))
        return gr_error_set(err, GR_ERR_USAGE, NULL, "the io graph needs conditional nodes: %s", why);
#if CUDART_VERSION >= 12040
    io->nin = nin;
    io->nout = nout;
    io->gate = *gate;
    gr_status st = GR_OK;
    cudaGraph_t g = NULL;
    cudaGraphConditionalHandle handle = 0;
    void *hostdev = NULL;
    cudaError_t rc = cudaHostAlloc((void **)&io->host, sizeof(*io->host), cudaHostAllocMapped);
    if (rc != cudaSuccess) {
        io->host = NULL;
        st = fail(rc, "cudaHostAlloc (io graph gate)", err);
        goto done;
    }
    memset(io->host, 0, sizeof(*io->host));
    rc = cudaHostGetDevicePointer(&hostdev, io->host, 0);
    if (rc == cudaSuccess) rc = cudaMalloc((void **)&io->gate.dev, sizeof(gr_iogate_dev));
    else io->gate.dev = NULL;
    if (rc == cudaSuccess) rc = cudaMemset(io->gate.dev, 0, sizeof(gr_iogate_dev));
    if (rc != cudaSuccess) {
        st = fail(rc, "the io graph gate's memory", err);
        goto done;
    }
    io->gate.host = (gr_iogate_host *)hostdev;
    for (int i = 0; i < nin; i++) io->args[i] = in[i];
    for (int i = 0; i < nout; i++) io->args[nin + i] = out[i];
    for (int i = 0; i < nin + nout; i++) {
        io->args[i].output = i >= nin;
        io->args[i].rows = io->args[i].row_bytes ? &io->gate.dev->rows : NULL;
    }
    rc = cudaGraphCreate(&g, 0);
    /* 0 on every launch: the body runs only where the gate says so */
    if (rc == cudaSuccess)
        rc = cudaGraphConditionalHandleCreate(&handle, g, 0, cudaGraphCondAssignDefault);
    io->gate.handle = (unsigned long long)handle;
    if (rc == cudaSuccess) rc = add_nodes(g, held, io, handle);
    if (rc != cudaSuccess) {
        st = fail(rc, "building the io graph (gate, copies, the held graph as a child, done)", err);
        goto done;
    }
    cudaGraphExec_t exec = NULL;
    double t0 = gr_now_us();
    rc = cudaGraphInstantiate(&exec, g, 0);
    io->g.instantiate_us = gr_now_us() - t0;
    if (rc != cudaSuccess) {
        st = fail(rc, "cudaGraphInstantiate (io graph)", err);
        goto done;
    }
    io->g.graph = g;
    io->g.exec = exec;
    g = NULL;
    io->g.mode = held->mode;
    io->g.steps = held->steps;
    io->g.nodes = held->nodes + (size_t)(nin + nout) + 3;
    io->g.kernel_nodes = held->kernel_nodes + (size_t)(nin + nout) + 2;
    rc = cudaGraphUpload(exec, (cudaStream_t)stream);
    if (rc == cudaSuccess) rc = cudaStreamSynchronize((cudaStream_t)stream);
    if (rc != cudaSuccess) st = fail(rc, "cudaGraphUpload (io graph)", err);
done:
    if (g) cudaGraphDestroy(g);
    if (st != GR_OK) gr_io_graph_destroy(io);
    return st;
#else
    (void)in, (void)out, (void)stream;
    return gr_error_set(err, GR_ERR_USAGE, NULL, "built without conditional nodes");
#endif
}

gr_status gr_io_graph_launch(gr_io_graph *io, uint64_t done, gr_stream_t stream, gr_error *err) {
    if (!io->g.exec || !io->host)
        return gr_error_set(err, GR_ERR_INTERNAL, NULL, "io graph launched after it was destroyed");
    __atomic_store_n(&io->host->verdict, (uint32_t)GR_IOGATE_WAITING, __ATOMIC_RELAXED);
    __atomic_store_n(&io->host->cancel, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&io->host->next, done + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* in memory before the launch reaches the GPU */
    return gr_graph_launch(&io->g, stream, err);
}

unsigned gr_io_graph_verdict(const gr_io_graph *io, uint64_t *seq) {
    unsigned v = __atomic_load_n(&io->host->verdict, __ATOMIC_ACQUIRE);
    if (v == GR_IOGATE_RAN && seq) *seq = __atomic_load_n(&io->host->seq, __ATOMIC_ACQUIRE);
    return v;
}

void gr_io_graph_cancel(gr_io_graph *io) {
    __atomic_store_n(&io->host->cancel, 1u, __ATOMIC_SEQ_CST);
}

void gr_io_graph_destroy(gr_io_graph *io) {
    if (!io) return;
    gr_graph_destroy(&io->g);
    if (io->gate.dev) cudaFree(io->gate.dev);
    if (io->host) cudaFreeHost(io->host);
    cudaGetLastError();
    memset(io, 0, sizeof(*io));
}
