/* Stream capture into CUDA graphs. The step is enqueued by the same executor as eager runs
 * (gr_exec_range); only cudaStreamBeginCapture/EndCapture surround it. A failed capture is
 * always ended so the stream stays usable, and the error names the op that broke it. */
#include "capture/capture.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/timer.h"
#include "kernels/devloop.h"

gr_status gr_capture_mode_parse(const char *name, gr_capture_mode *out, gr_error *err) {
    if (!strcmp(name, "global")) *out = GR_CAPTURE_GLOBAL;
    else if (!strcmp(name, "thread-local") || !strcmp(name, "thread_local")) *out = GR_CAPTURE_THREAD_LOCAL;
    else if (!strcmp(name, "relaxed")) *out = GR_CAPTURE_RELAXED;
    else
        return gr_error_set(err, GR_ERR_USAGE, "--capture-mode",
                            "unknown mode \"%s\" (modes: global, thread-local, relaxed)", name);
    return GR_OK;
}

const char *gr_capture_mode_name(gr_capture_mode mode) {
    switch (mode) {
    case GR_CAPTURE_GLOBAL: return "global";
    case GR_CAPTURE_THREAD_LOCAL: return "thread-local";
    case GR_CAPTURE_RELAXED: return "relaxed";
    }
    return "?";
}

static enum cudaStreamCaptureMode cuda_mode(gr_capture_mode m) {
    switch (m) {
    case GR_CAPTURE_THREAD_LOCAL: return cudaStreamCaptureModeThreadLocal;
    case GR_CAPTURE_RELAXED: return cudaStreamCaptureModeRelaxed;
    default: return cudaStreamCaptureModeGlobal;
    }
}

static gr_status introspect_graph(gr_graph *g, cudaGraph_t graph, gr_error *err) {
    size_t n = 0;
    GR_CUDA(cudaGraphGetNodes(graph, NULL, &n), err);
    g->nodes = n;
    if (n > 0) {
        cudaGraphNode_t *nodes = malloc(n * sizeof(*nodes));
        if (!nodes) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
        cudaError_t rc = cudaGraphGetNodes(graph, nodes, &n);
        for (size_t i = 0; i < n && rc == cudaSuccess; i++) {
            enum cudaGraphNodeType t;
            rc = cudaGraphNodeGetType(nodes[i], &t);
            if (rc != cudaSuccess) break;
            switch (t) {
            case cudaGraphNodeTypeKernel: g->kernel_nodes++; break;
            case cudaGraphNodeTypeMemcpy: g->memcpy_nodes++; break;
            case cudaGraphNodeTypeMemset: g->memset_nodes++; break;
            case cudaGraphNodeTypeEventRecord:
            case cudaGraphNodeTypeWaitEvent: g->event_nodes++; break;
            case cudaGraphNodeTypeEmpty: g->empty_nodes++; break;
            default: g->other_nodes++; break;
            }
        }
        free(nodes);
        GR_CUDA(rc, err);
    }
    size_t e = 0;
    GR_CUDA(cudaGraphGetEdges(graph, NULL, NULL, NULL, &e), err);
    g->edges = e;
    return GR_OK;
}

static gr_status introspect(gr_graph *g, gr_error *err) {
    return introspect_graph(g, (cudaGraph_t)g->graph, err);
}

static gr_status capture(gr_devstate *dev, int steps, gr_enqueue_fn enqueue, void *user,
                         gr_capture_mode mode, gr_graph *out, gr_error *err) {
    memset(out, 0, sizeof(*out));
    out->mode = mode;
    out->steps = steps;
    cudaStream_t s = (cudaStream_t)dev->streams[0];
    GR_CUDA(cudaStreamSynchronize(s), err);
    double t0 = gr_now_us();
    GR_CUDA(cudaStreamBeginCapture(s, cuda_mode(mode)), err);
    gr_status st = GR_OK;
    for (int k = 0; k < steps && st == GR_OK; k++) st = enqueue(user, err);
    cudaGraph_t graph = NULL;
    cudaError_t rc = cudaStreamEndCapture(s, &graph);
    out->capture_us = gr_now_us() - t0;
    if (st != GR_OK) {
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        gr_error_prefix(err, "during capture (%s mode): ", gr_capture_mode_name(mode));
        return st == GR_ERR_CUDA ? GR_ERR_CAPTURE : st;
    }
    if (rc != cudaSuccess) {
        if (graph) cudaGraphDestroy(graph);
        cudaGetLastError();
        gr_cuda_fail(rc, "cudaStreamEndCapture", __FILE__, __LINE__, err);
        err->code = GR_ERR_CAPTURE;
        return GR_ERR_CAPTURE;
    }
    out->graph = graph;
    gr_status ist = introspect(out, err);
    if (ist != GR_OK) {
        gr_graph_destroy(out);
        return ist;
    }
    cudaGraphExec_t exec = NULL;
    double t1 = gr_now_us();
    rc = cudaGraphInstantiate(&exec, graph, 0);
    out->instantiate_us = gr_now_us() - t1;
    if (rc != cudaSuccess) {
        gr_graph_destroy(out);
        return gr_cuda_fail(rc, "cudaGraphInstantiate", __FILE__, __LINE__, err);
    }
    out->exec = exec;
    double t2 = gr_now_us();
    rc = cudaGraphUpload(exec, s);
    if (rc == cudaSuccess) rc = cudaStreamSynchronize(s);
    out->upload_us = gr_now_us() - t2;
    if (rc != cudaSuccess) {
        gr_graph_destroy(out);
        return gr_cuda_fail(rc, "cudaGraphUpload", __FILE__, __LINE__, err);
    }
    return GR_OK;
}

/* The plan's ops [begin, end) through the executor: what every plan capture enqueues. */
typedef struct range_ctx {
    const gr_plan *plan;
    gr_devstate *dev;
    int begin, end;
    const gr_exec_hooks *hooks;
} range_ctx;

static gr_status enqueue_range(void *user, gr_error *err) {
    const range_ctx *r = user;
    return gr_exec_range(r->plan, r->dev, r->begin, r->end, r->hooks, err);
}

gr_status gr_graph_capture_range(const gr_plan *plan, gr_devstate *dev, int begin, int end,
                                 gr_capture_mode mode, const gr_exec_hooks *hooks, gr_graph *out,
                                 gr_error *err) {
    range_ctx r = {plan, dev, begin, end, hooks};
    return capture(dev, 1, enqueue_range, &r, mode, out, err);
}

gr_status gr_graph_capture(const gr_plan *plan, gr_devstate *dev, gr_capture_mode mode,
                           const gr_exec_hooks *hooks, gr_graph *out, gr_error *err) {
    range_ctx r = {plan, dev, 0, plan->nops, hooks};
    return capture(dev, 1, enqueue_range, &r, mode, out, err);
}

gr_status gr_graph_capture_steps(const gr_plan *plan, gr_devstate *dev, gr_capture_mode mode,
                                 int steps, const gr_exec_hooks *hooks, gr_graph *out,
                                 gr_error *err) {
    if (steps < 1) return gr_error_set(err, GR_ERR_USAGE, "--unroll", "needs at least 1 step");
    range_ctx r = {plan, dev, 0, plan->nops, hooks};
    return capture(dev, steps, enqueue_range, &r, mode, out, err);
}

gr_status gr_graph_capture_fn(gr_devstate *dev, gr_capture_mode mode, int steps,
                              gr_enqueue_fn enqueue, void *user, gr_graph *out, gr_error *err) {
    if (steps < 1) return gr_error_set(err, GR_ERR_INTERNAL, NULL, "capture of %d steps", steps);
    return capture(dev, steps, enqueue, user, mode, out, err);
}

gr_status gr_graph_launch(const gr_graph *g, gr_stream_t stream, gr_error *err) {
    GR_CUDA(cudaGraphLaunch((cudaGraphExec_t)g->exec, (cudaStream_t)stream), err);
    return GR_OK;
}

gr_status gr_graph_dot(const gr_graph *g, const char *path, gr_error *err) {
    cudaError_t rc = cudaGraphDebugDotPrint((cudaGraph_t)g->graph, path,
                                            cudaGraphDebugDotFlagsVerbose);
    if (rc != cudaSuccess) {
        cudaGetLastError();
        return gr_error_set(err, GR_ERR_IO, path, "cudaGraphDebugDotPrint failed: %s (is the "
                            "directory writable?)", cudaGetErrorName(rc));
    }
    return GR_OK;
}

void gr_graph_destroy(gr_graph *g) {
    if (!g) return;
    if (g->exec) cudaGraphExecDestroy((cudaGraphExec_t)g->exec);
    if (g->graph) cudaGraphDestroy((cudaGraph_t)g->graph);
    if (g->loop_counter) cudaFree(g->loop_counter);
    g->exec = NULL;
    g->graph = NULL;
    g->loop_counter = NULL;
}

/* ---- device-resident loops (conditional WHILE nodes) ---- */

int gr_graph_loop_supported(char *why, size_t size) {
    if (!gr_devloop_built()) {
        snprintf(why, size, "this graphrun was built with CUDA older than 12.4 (no conditional "
                            "graph nodes)");
        return 0;
    }
    int drv = 0;
    if (cudaDriverGetVersion(&drv) != cudaSuccess || drv < 12040) {
        cudaGetLastError();
        snprintf(why, size, "the driver supports CUDA %d.%d; conditional graph nodes need 12.4 or "
                            "newer",
                 drv / 1000, drv % 1000 / 10);
        return 0;
    }
    if (size) why[0] = '\0';
    return 1;
}

#if CUDART_VERSION >= 12040
/* The body's capture: the plan's step, then the tail kernel that counts down and sets the
 * condition. Ended in every case, so the stream stays usable. */
static gr_status capture_body(const gr_plan *plan, gr_devstate *dev, gr_capture_mode mode,
                              const gr_exec_hooks *hooks, cudaGraph_t body,
                              cudaGraphConditionalHandle handle, unsigned *counter,
                              size_t *tail_edges, gr_error *err) {
    cudaStream_t s = (cudaStream_t)dev->streams[0];
    *tail_edges = 0;
    GR_CUDA(cudaStreamBeginCaptureToGraph(s, body, NULL, NULL, 0, cuda_mode(mode)), err);
    gr_status st = gr_exec_range(plan, dev, 0, plan->nops, hooks, err);
    if (st == GR_OK) {
        /* the edges the tail kernel will get (one per node the stream depends on now): the
         * body's edge count is the step's without them. Only the count is asked for (no
         * dependency array, so no cudaErrorLossyQuery after a programmatic edge); a failed query
         * only leaves the count at 0 and its error is cleared before the tail's launch check. */
        enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        size_t deps = 0;
        if (cudaStreamGetCaptureInfo(s, &cs, NULL, NULL, NULL, NULL, &deps) == cudaSuccess &&
            cs == cudaStreamCaptureStatusActive)
            *tail_edges = deps;
        else
            cudaGetLastError();
        st = gr_devloop_tail_launch((unsigned long long)handle, counter, dev->streams[0], err);
    }
    cudaGraph_t got = NULL;
    cudaError_t rc = cudaStreamEndCapture(s, &got);
    if (st != GR_OK) {
        cudaGetLastError();
        gr_error_prefix(err, "during the device loop's capture (%s mode): ",
                        gr_capture_mode_name(mode));
        return st == GR_ERR_CUDA ? GR_ERR_CAPTURE : st;
    }
    if (rc != cudaSuccess) {
        cudaGetLastError();
        gr_cuda_fail(rc, "cudaStreamEndCapture (device loop body)", __FILE__, __LINE__, err);
        err->code = GR_ERR_CAPTURE;
        return GR_ERR_CAPTURE;
    }
    return GR_OK;
}
#endif

gr_status gr_graph_capture_loop(const gr_plan *plan, gr_devstate *dev, gr_capture_mode mode,
                                int steps, const gr_exec_hooks *hooks, gr_graph *out,
                                gr_error *err) {
    memset(out, 0, sizeof(*out));
    if (steps < 1) return gr_error_set(err, GR_ERR_USAGE, "--device-loop", "needs at least 1 step");
    char why[160];
    if (!gr_graph_loop_supported(why, sizeof(why)))
        return gr_error_set(err, GR_ERR_USAGE, "--device-loop", "%s; use --unroll N", why);
#if CUDART_VERSION >= 12040
    out->mode = mode;
    out->steps = steps;
    out->device_loop = 1;
    cudaStream_t s = (cudaStream_t)dev->streams[0];
    GR_CUDA(cudaStreamSynchronize(s), err);
    gr_status st = GR_OK;
    cudaGraph_t graph = NULL;
    cudaGraphNode_t set = NULL, loop = NULL;
    cudaGraphConditionalHandle handle = 0;
    double t0 = gr_now_us();
    cudaError_t rc = cudaMalloc(&out->loop_counter, sizeof(unsigned));
    if (rc == cudaSuccess) rc = cudaGraphCreate(&graph, 0);
    /* the condition starts at 1 on every launch: the body runs at least once (steps >= 1) */
    if (rc == cudaSuccess)
        rc = cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault);
    if (rc == cudaSuccess) {
        struct cudaMemsetParams ms;
        memset(&ms, 0, sizeof(ms));
        ms.dst = out->loop_counter;
        ms.value = (unsigned)steps;
        ms.elementSize = sizeof(unsigned);
        ms.width = 1;
        ms.height = 1;
        rc = cudaGraphAddMemsetNode(&set, graph, NULL, 0, &ms);
    }
    cudaGraph_t body = NULL;
    size_t tail_edges = 0;
    if (rc == cudaSuccess) {
        struct cudaGraphNodeParams np;
        memset(&np, 0, sizeof(np));
        np.type = cudaGraphNodeTypeConditional;
        np.conditional.handle = handle;
        np.conditional.type = cudaGraphCondTypeWhile;
        np.conditional.size = 1;
        rc = cudaGraphAddNode(&loop, graph, &set, NULL, 1, &np);
        if (rc == cudaSuccess) body = np.conditional.phGraph_out[0];
    }
    if (rc != cudaSuccess) st = gr_cuda_fail(rc, "building the device loop graph", __FILE__, __LINE__, err);
    if (st == GR_OK)
        st = capture_body(plan, dev, mode, hooks, body, handle, (unsigned *)out->loop_counter,
                          &tail_edges, err);
    out->capture_us = gr_now_us() - t0;
    out->graph = graph;
    if (st == GR_OK) st = introspect_graph(out, body, err);
    if (st == GR_OK) {
        out->kernel_nodes -= out->kernel_nodes > 0; /* the tail kernel is the loop's, not the step's */
        out->nodes -= out->nodes > 0;
        out->edges -= tail_edges < out->edges ? tail_edges : out->edges; /* and its in-edges */
        size_t bad = out->event_nodes + out->other_nodes;
        if (bad)
            st = gr_error_set(err, GR_ERR_CAPTURE, "--device-loop",
                              "the step's graph holds %zu node%s a conditional body may not (host "
                              "callbacks, events, allocations: only kernels, memsets, memcpys, empty "
                              "nodes and child graphs run inside a device loop); use --unroll N",
                              bad, bad == 1 ? "" : "s");
    }
    cudaGraphExec_t exec = NULL;
    if (st == GR_OK) {
        double t1 = gr_now_us();
        rc = cudaGraphInstantiate(&exec, graph, 0);
        out->instantiate_us = gr_now_us() - t1;
        if (rc != cudaSuccess) st = gr_cuda_fail(rc, "cudaGraphInstantiate (device loop)", __FILE__, __LINE__, err);
        else out->exec = exec;
    }
    if (st == GR_OK) {
        double t2 = gr_now_us();
        rc = cudaGraphUpload(exec, s);
        if (rc == cudaSuccess) rc = cudaStreamSynchronize(s);
        out->upload_us = gr_now_us() - t2;
        if (rc != cudaSuccess) st = gr_cuda_fail(rc, "cudaGraphUpload (device loop)", __FILE__, __LINE__, err);
    }
    if (st != GR_OK) {
        cudaGetLastError();
        gr_graph_destroy(out);
    }
    return st;
#else
    (void)plan, (void)dev, (void)mode, (void)hooks;
    return GR_ERR_INTERNAL;
#endif
}

gr_status gr_graph_exec_update(gr_graph *into, gr_graph *from, gr_graph_update *u, gr_error *err) {
    memset(u, 0, sizeof(*u));
    if (!into->exec || !from->graph)
        return gr_error_set(err, GR_ERR_INTERNAL, NULL, "graph update without an exec or a graph");
    cudaGraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof(info));
    double t0 = gr_now_us();
    cudaError_t rc = cudaGraphExecUpdate((cudaGraphExec_t)into->exec, (cudaGraph_t)from->graph, &info);
    u->update_us = gr_now_us() - t0;
    if (rc == cudaSuccess && info.result == cudaGraphExecUpdateSuccess) {
        /* into keeps its exec (now from's work); the graph it describes is from's */
        if (into->graph) cudaGraphDestroy((cudaGraph_t)into->graph);
        if (from->exec) cudaGraphExecDestroy((cudaGraphExec_t)from->exec);
        gr_graph keep = *into;
        *into = *from;
        into->exec = keep.exec;
        memset(from, 0, sizeof(*from));
        u->updated = 1;
        return GR_OK;
    }
    cudaGetLastError(); /* an incompatible update leaves a non-sticky error */
    static const char *const results[] = {"success", "error", "topology changed",
                                          "node type changed", "kernel function changed",
                                          "parameters changed", "not supported",
                                          "unsupported function change", "attributes changed"};
    int r = (int)info.result;
    snprintf(u->why, sizeof(u->why), "cudaGraphExecUpdate: %s (%s)%s",
             r >= 0 && r < (int)(sizeof(results) / sizeof(results[0])) ? results[r] : "unknown",
             cudaGetErrorName(rc), info.errorNode ? ", at a node of the new graph" : "");
    if (rc != cudaSuccess && rc != cudaErrorGraphExecUpdateFailure)
        return gr_cuda_fail(rc, "cudaGraphExecUpdate", __FILE__, __LINE__, err);
    return GR_OK;
}
