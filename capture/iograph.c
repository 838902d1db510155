/* The io graph of a lane (capture/iograph.h). */
#include "capture/iograph.h"

#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/timer.h"

/* CUDA 13 added edge data to the edge calls */
#if CUDART_VERSION >= 13000
#define DEPENDENTS(node, out, n) cudaGraphNodeGetDependentNodes(node, out, NULL, n)
#define ADD_EDGES(g, from, to, n) cudaGraphAddDependencies(g, from, to, NULL, n)
#else
#define DEPENDENTS(node, out, n) cudaGraphNodeGetDependentNodes(node, out, n)
#define ADD_EDGES(g, from, to, n) cudaGraphAddDependencies(g, from, to, n)
#endif

static gr_status fail(cudaError_t rc, const char *what, gr_error *err) {
    cudaGetLastError();
    return gr_cuda_fail(rc, what, __FILE__, __LINE__, err);
}

gr_status gr_io_graph_build(const gr_graph *held, const gr_iocopy_args *in, int nin,
                            const gr_iocopy_args *out, int nout, gr_stream_t stream,
                            gr_io_graph *io, gr_error *err) {
    memset(io, 0, sizeof(*io));
    if (nin < 0 || nout < 0 || nin + nout > GR_IOGRAPH_MAX || !held || !held->graph)
        return gr_error_set(err, GR_ERR_INTERNAL, NULL, "io graph of %d inputs and %d outputs",
                            nin, nout);
    io->nin = nin;
    io->nout = nout;
    for (int i = 0; i < nin; i++) io->args[i] = in[i];
    for (int i = 0; i < nout; i++) io->args[nin + i] = out[i];
    cudaGraph_t g = NULL;
    cudaGraphNode_t *nodes = NULL, *roots = NULL, *leaves = NULL;
    size_t n = 0, nroots = 0, nleaves = 0;
    gr_status st = GR_OK;
    cudaError_t rc = cudaGraphClone(&g, (cudaGraph_t)held->graph);
    if (rc != cudaSuccess) return fail(rc, "cudaGraphClone (io graph)", err);
    rc = cudaGraphGetNodes(g, NULL, &n);
    if (rc == cudaSuccess) {
        nodes = calloc(n ? n : 1, sizeof(*nodes));
        leaves = calloc(n ? n : 1, sizeof(*leaves));
        roots = calloc(n ? n : 1, sizeof(*roots));
        if (!nodes || !leaves || !roots) {
            st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory (io graph)");
            goto done;
        }
        rc = cudaGraphGetNodes(g, nodes, &n);
    }
    nroots = n;
    if (rc == cudaSuccess) rc = cudaGraphGetRootNodes(g, roots, &nroots);
    for (size_t i = 0; i < n && rc == cudaSuccess; i++) {
        size_t nd = 0;
        rc = DEPENDENTS(nodes[i], NULL, &nd);
        if (rc == cudaSuccess && nd == 0) leaves[nleaves++] = nodes[i];
    }
    if (rc != cudaSuccess) {
        st = fail(rc, "reading the held graph's nodes (io graph)", err);
        goto done;
    }
    for (int k = 0; k < nin + nout; k++) {
        struct cudaKernelNodeParams kp;
        gr_iocopy_params(&io->args[k], &kp);
        cudaGraphNode_t node = NULL;
        if (k < nin) {
            rc = cudaGraphAddKernelNode(&node, g, NULL, 0, &kp);
            for (size_t r = 0; r < nroots && rc == cudaSuccess; r++) rc = ADD_EDGES(g, &node, &roots[r], 1);
        } else if (nleaves > 0) {
            rc = cudaGraphAddKernelNode(&node, g, leaves, nleaves, &kp);
        } else { /* an empty step: outputs after the inputs, as in stream order */
            rc = cudaGraphAddKernelNode(&node, g, (cudaGraphNode_t *)io->node, (size_t)nin, &kp);
        }
        if (rc != cudaSuccess) {
            st = fail(rc, "cudaGraphAddKernelNode (io graph copy)", err);
            goto done;
        }
        io->node[k] = node;
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
    io->g.nodes = n + (size_t)(nin + nout);
    io->g.kernel_nodes = held->kernel_nodes + (size_t)(nin + nout);
    rc = cudaGraphUpload(exec, (cudaStream_t)stream);
    if (rc == cudaSuccess) rc = cudaStreamSynchronize((cudaStream_t)stream);
    if (rc != cudaSuccess) st = fail(rc, "cudaGraphUpload (io graph)", err);
done:
    if (g) cudaGraphDestroy(g);
    free(nodes);
    free(roots);
    free(leaves);
    if (st != GR_OK) gr_io_graph_destroy(io);
    return st;
}

gr_status gr_io_graph_set_bytes(gr_io_graph *io, int k, size_t bytes, gr_error *err) {
    if (k < 0 || k >= io->nin + io->nout || !io->g.exec)
        return gr_error_set(err, GR_ERR_INTERNAL, NULL, "io graph copy %d", k);
    gr_iocopy_args *a = &io->args[k];
    if (a->bytes == bytes) return GR_OK;
    gr_iocopy_args next = *a;
    next.bytes = bytes;
    if (k >= io->nin) next.whole = bytes; /* an output: no padding */
    struct cudaKernelNodeParams kp;
    gr_iocopy_params(&next, &kp);
    cudaError_t rc = cudaGraphExecKernelNodeSetParams((cudaGraphExec_t)io->g.exec,
                                                      (cudaGraphNode_t)io->node[k], &kp);
    if (rc != cudaSuccess) return fail(rc, "cudaGraphExecKernelNodeSetParams (io graph copy)", err);
    *a = next;
    gr_iocopy_params(a, &kp); /* argv into a's own storage again, not the local */
    return GR_OK;
}

void gr_io_graph_destroy(gr_io_graph *io) {
    if (!io) return;
    gr_graph_destroy(&io->g); /* its own graph and exec (a clone owns no loop counter) */
    memset(io, 0, sizeof(*io));
}
