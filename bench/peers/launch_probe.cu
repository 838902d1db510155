// The bare launch-cost peer: a plain CUDA C program launching K empty or tiny (x += 1 on one
// block) kernels per step, eagerly or from one CUDA graph, with or without programmatic dependent
// launch. No graphrun code: the figure graphrun's launch_bound workload is compared with.
// gr_launch_probe_gr is the same program linked with graphrun's kernel library (and so with the
// static CUDA runtime graphrun uses): with `--via graphrun` it launches graphrun's own empty/tiny
// kernels through their registered launch functions (what graphrun's executor calls). When
// graphrun's figure and the bare one differ, the two tell graphrun's kernel binary and launch
// path (and runtime linkage) apart from the rest of graphrun's process (issue 26).
//   gr_launch_probe [--kernel empty|tiny] [--k K] [--mode eager|graph] [--pdl] [--batches N]
//                   [--steps S] [--n N] [--via bare|graphrun]
// Prints one JSON object: per-step and per-kernel time (median [p10, p90] over batches of S
// steps between CUDA events, after warm-up), and checks x against the host's count.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifdef GR_PROBE_GRAPHRUN
#include "core/plan.h"
#include "kernels/probe.h"
#include "kernels/registry.h"
#endif

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "launch_probe: %s failed: %s (%s:%d)\n", #call, cudaGetErrorString(e_), \
                    __FILE__, __LINE__);                                                           \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__device__ __forceinline__ void pdl_enter() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__global__ void empty_kernel() { pdl_enter(); }

__global__ void tiny_kernel(float *x, int n) {
    pdl_enter();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}

struct opts {
    int tiny = 0, k = 1000, graph = 1, pdl = 0, batches = 20, steps = 20, n = 256, via_graphrun = 0;
    int eager_first = 0; // eager steps before the graph is built (graphrun times eager first)
};

#ifdef GR_PROBE_GRAPHRUN
// graphrun's launch of its `empty` / `tiny` op (x = x + 1 in place, fp32, one block of 256)
static gr_plan g_plan;
static gr_buffer g_buf;
static gr_op g_op;
static gr_launch_ctx g_ctx;
static void *g_dptr[1];

static void graphrun_setup(const opts &o, float *x, cudaStream_t s) {
    g_buf.dtype = GR_FP32;
    g_plan.bufs = &g_buf;
    g_plan.nbufs = 1;
    g_op.kernel = gr_kernel_find(o.tiny ? "tiny" : "empty");
    if (!g_op.kernel) {
        fprintf(stderr, "launch_probe: graphrun's registry has no kernel %s\n", o.tiny ? "tiny" : "empty");
        exit(1);
    }
    g_op.grid[0] = g_op.grid[1] = g_op.grid[2] = 1;
    g_op.block[0] = 256;
    g_op.block[1] = g_op.block[2] = 1;
    g_op.ninputs = g_op.noutputs = o.tiny ? 1 : 0;
    g_op.ip[0] = o.n;
    g_op.fp[0] = 1.0;
    g_dptr[0] = x;
    g_ctx.plan = &g_plan;
    g_ctx.dptr = g_dptr;
    g_ctx.stream = (gr_stream_t)s;
    g_ctx.pdl = o.pdl;
}
#endif

static void launch(const opts &o, float *x, cudaStream_t s) {
#ifdef GR_PROBE_GRAPHRUN
    if (o.via_graphrun) {
        gr_error e;
        gr_error_clear(&e);
        gr_status st = o.tiny ? gr_launch_tiny(&g_op, &g_ctx, &e) : gr_launch_empty(&g_op, &g_ctx, &e);
        if (st != GR_OK) {
            fprintf(stderr, "launch_probe: graphrun's launch failed: %s\n", e.msg);
            exit(1);
        }
        return;
    }
#endif
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(256);
    cfg.stream = s;
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = o.pdl ? 1 : 0;
    if (o.tiny) CK(cudaLaunchKernelEx(&cfg, tiny_kernel, x, o.n));
    else CK(cudaLaunchKernelEx(&cfg, empty_kernel));
}

static int arg_int(const char *name, const char *v, int lo, int hi) {
    char *end = nullptr;
    long n = v ? strtol(v, &end, 10) : 0;
    if (!v || *end || n < lo || n > hi) {
        fprintf(stderr, "launch_probe: %s takes a whole number in [%d, %d]\n", name, lo, hi);
        exit(2);
    }
    return (int)n;
}

int main(int argc, char **argv) {
    opts o;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (!strcmp(a, "--kernel") && v) o.tiny = !strcmp(argv[++i], "tiny");
        else if (!strcmp(a, "--k")) o.k = arg_int(a, v, 1, 100000), i++;
        else if (!strcmp(a, "--mode") && v) o.graph = !strcmp(argv[++i], "graph");
        else if (!strcmp(a, "--pdl")) o.pdl = 1;
        else if (!strcmp(a, "--batches")) o.batches = arg_int(a, v, 3, 10000), i++;
        else if (!strcmp(a, "--steps")) o.steps = arg_int(a, v, 1, 100000), i++;
        else if (!strcmp(a, "--n")) o.n = arg_int(a, v, 1, 256), i++;
        else if (!strcmp(a, "--via") && v) o.via_graphrun = !strcmp(argv[++i], "graphrun");
        else if (!strcmp(a, "--eager-first")) o.eager_first = arg_int(a, v, 0, 1000000), i++;
        else {
            fprintf(stderr, "usage: launch_probe [--kernel empty|tiny] [--k K] [--mode eager|graph] "
                            "[--pdl] [--batches N] [--steps S] [--n N] [--via bare|graphrun] "
                            "[--eager-first STEPS]\n");
            return 2;
        }
    }
    int dev = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        fprintf(stderr, "launch_probe: no CUDA device\n");
        return 3;
    }
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *x;
    CK(cudaMalloc(&x, sizeof(float) * o.n));
    std::vector<float> h(o.n);
    for (int i = 0; i < o.n; i++) h[i] = 0.5f + (float)(i % 7); // not zeros
    CK(cudaMemcpy(x, h.data(), sizeof(float) * o.n, cudaMemcpyHostToDevice));
#ifdef GR_PROBE_GRAPHRUN
    graphrun_setup(o, x, s);
#else
    if (o.via_graphrun) {
        fprintf(stderr, "launch_probe: this build has no graphrun code: gr_launch_probe_gr has --via graphrun\n");
        return 2;
    }
#endif

    long long steps_run = 0;
    // as graphrun run does before it captures: eager steps of the same kernels (a process
    // state the graph's nodes might then pay for: issue 26's per-node gap)
    for (int e = 0; e < o.eager_first; e++) {
        for (int k = 0; k < o.k; k++) launch(o, x, s);
        steps_run++;
    }
    CK(cudaStreamSynchronize(s));
    cudaGraphExec_t exec = nullptr;
    if (o.graph) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (int k = 0; k < o.k; k++) launch(o, x, s);
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&exec, g, 0));
        CK(cudaGraphUpload(exec, s));
        CK(cudaGraphDestroy(g));
    }
    auto step = [&]() {
        if (o.graph) CK(cudaGraphLaunch(exec, s));
        else
            for (int k = 0; k < o.k; k++) launch(o, x, s);
        steps_run++;
    };
    for (int w = 0; w < std::max(3, o.steps); w++) step();
    CK(cudaStreamSynchronize(s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<double> per_step;
    for (int b = 0; b < o.batches; b++) {
        CK(cudaEventRecord(e0, s));
        for (int i = 0; i < o.steps; i++) step();
        CK(cudaEventRecord(e1, s));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        per_step.push_back(ms * 1e3 / o.steps);
    }
    CK(cudaGetLastError());
    std::vector<float> out(o.n);
    CK(cudaMemcpy(out.data(), x, sizeof(float) * o.n, cudaMemcpyDeviceToHost));
    long long bad = 0;
    if (o.tiny)
        for (int i = 0; i < o.n; i++) {
            double want = h[i] + (double)steps_run * o.k;
            if (out[i] != (float)want) bad++;
        }
    std::sort(per_step.begin(), per_step.end());
    auto q = [&](double f) { return per_step[(size_t)(f * (per_step.size() - 1) + 0.5)]; };
    printf("{\"tool\": \"gr_launch_probe\", \"device\": \"%s\", \"kernel\": \"%s\", \"mode\": \"%s\", "
           "\"via\": \"%s\", \"pdl\": %s, \"k\": %d, \"eager_first\": %d, \"batches\": %d, \"steps_per_batch\": %d, "
           "\"step_us\": {\"median\": %.3f, \"p10\": %.3f, \"p90\": %.3f}, "
           "\"us_per_kernel\": %.4f, \"verified\": %s, \"method\": \"CUDA events per batch, untraced\"}\n",
           prop.name, o.tiny ? "tiny" : "empty", o.graph ? "graph" : "eager",
           o.via_graphrun ? "graphrun" : "bare", o.pdl ? "true" : "false",
           o.k, o.eager_first, o.batches, o.steps, q(0.5), q(0.1), q(0.9), q(0.5) / o.k,
           (!o.tiny || bad == 0) ? "true" : "false");
    if (bad) {
        fprintf(stderr, "launch_probe: %lld of %d elements of x are wrong after %lld steps\n", bad, o.n,
                steps_run);
        return 1;
    }
    return 0;
}
