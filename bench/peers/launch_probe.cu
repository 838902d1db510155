// The bare launch-cost peer: a plain CUDA C program launching K empty or tiny (x += 1 on one
// block) kernels per step, eagerly or from one CUDA graph, with or without programmatic dependent
// launch. No graphrun code: the figure graphrun's launch_bound workload is compared with.
// gr_launch_probe_gr is the same program linked with graphrun's kernel library (and so with the
// static CUDA runtime graphrun uses): with `--via graphrun` it launches graphrun's own empty/tiny
// kernels through their registered launch functions (what graphrun's executor calls). When
// graphrun's figure and the bare one differ, the two tell graphrun's kernel binary and launch
// path (and runtime linkage) apart from the rest of graphrun's process (issue 26).
// `--before LIST` runs steps before the graph is captured, as graphrun's stages do before its
// capture (run 88: graphrun's graph pays 0.18 us more per node after either its bandwidth probe
// or its capture checker, and none without both): malloc:MIB, stream, events:N, memcpy:MIB,
// kernel:MIB, kernels:N (N distinct kernels, up to 128, one launch each), graph:K, sync; and in
// gr_launch_probe_full (linked with all of graphrun) graphrun's own bwprobe and capcheck (the
// checker opened and closed), capgraph:K (K launches captured, instantiated and run while the
// checker is open, as graphrun's checked capture does) and bwpart:KIND[:MIB] (one kind of the
// bandwidth probe alone: read, write, copy, memcpy, shape). Each is
// timed and named in the JSON. `--before-setup` runs the list before the probe makes its stream
// and its buffer (graphrun's bandwidth probe runs before its session makes either; steps that
// need a stream use the legacy one; graph and capgraph one made for them). Runs 89-96: no step
// alone reproduced graphrun's gap; `--before-setup --before bwprobe --eager-first 1` does (0.786
// -> 0.964 us per empty node, H100), with the bare kernel and with graphrun's.
//   gr_launch_probe [--kernel empty|tiny] [--k K] [--mode eager|graph] [--pdl] [--batches N]
//                   [--steps S] [--n N] [--via bare|graphrun] [--eager-first S] [--before LIST]
//                   [--before-setup]
// Prints one JSON object: per-step and per-kernel time (median [p10, p90] over batches of S
// steps between CUDA events, after warm-up), and checks x against the host's count.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#ifdef GR_PROBE_GRAPHRUN
#include "core/plan.h"
#include "kernels/probe.h"
#include "kernels/registry.h"
#endif
#ifdef GR_PROBE_STAGES
#include "capture/piecewise.h"
#include "kernels/bwprobe.h"
#include "replay/timing.h"
#endif
#include <ctime>
#include <string>

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
    int before_setup = 0; // --before-setup: the --before list runs before the stream and x exist
    std::vector<std::string> before; // --before: steps before the capture, in order
};

// kernels:N: N distinct kernels (template instances, each its own function), one launch each
template <int I> __global__ void distinct_kernel(int *p) {
    if (p && threadIdx.x == 0) p[I] += 1;
}
template <int... I> static void launch_distinct(int n, int *p, cudaStream_t s, std::integer_sequence<int, I...>) {
    using fn = void (*)(int *);
    static const fn table[] = {distinct_kernel<I>...};
    for (int k = 0; k < n && k < (int)sizeof...(I); k++) table[k]<<<1, 32, 0, s>>>(p);
}
constexpr int kDistinct = 128;

__global__ void copy_kernel(const uint4 *a, uint4 *b, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        b[i] = a[i];
}

static double now_us() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

#ifdef GR_PROBE_STAGES
// bwpart:KIND[:MIB]: one kind of graphrun's bandwidth probe alone, as gr_bandwidth_probe runs it
// (replay/timing.c: the occupancy-sized shape, two buffers of MIB (default: what the probe takes
// from free memory), a sink, its own non-blocking stream, the source memset (the probe writes it
// with its write kernel), 2 warm-up and GR_BANDWIDTH_REPS ops between events), KIND read, write,
// copy or memcpy;
// `shape` only queries the shape. Which kind brings issue 26's per-node gap (runs 95-96: the
// whole bandwidth probe and one eager step do, its generic parts did not).
static void bw_part(const char *item, const std::string &arg, cudaStream_t) {
    std::string kind = arg.substr(0, arg.find(':'));
    if (kind != "read" && kind != "write" && kind != "copy" && kind != "memcpy" && kind != "shape") {
        fprintf(stderr, "launch_probe: --before %s: KIND is read, write, copy, memcpy or shape\n", item);
        exit(2);
    }
    size_t mib = arg.find(':') == std::string::npos ? 0 : strtoul(arg.c_str() + arg.find(':') + 1, nullptr, 10);
    gr_error e;
    gr_error_clear(&e);
    gr_bwprobe_shape sh;
    if (gr_bwprobe_shape_get(&sh, &e) != GR_OK) {
        fprintf(stderr, "launch_probe: --before %s: %s\n", item, e.msg);
        exit(1);
    }
    if (kind == "shape") return;
    size_t fr = 0, tot = 0;
    CK(cudaMemGetInfo(&fr, &tot));
    size_t bytes = (mib ? mib << 20 : gr_bandwidth_bytes(fr)) & ~(size_t)4095;
    void *a, *b;
    unsigned *sink;
    cudaStream_t t;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMalloc((void **)&sink, sh.sink_words * sizeof(unsigned)));
    CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    std::vector<cudaEvent_t> ev(GR_BANDWIDTH_REPS + 1);
    for (auto &x : ev) CK(cudaEventCreate(&x));
    CK(cudaMemsetAsync(a, 0x5A, bytes, t)); /* not the write kernel: each kind runs alone */
    gr_status st = GR_OK;
    for (int r = -2; r < GR_BANDWIDTH_REPS && st == GR_OK; r++) {
        if (r == 0) CK(cudaEventRecord(ev[0], t));
        if (kind == "read") st = gr_bwprobe_read(&sh, a, bytes, sink, (gr_stream_t)t, &e);
        else if (kind == "write") st = gr_bwprobe_write(&sh, b, bytes, 0x9E3779B9u, (gr_stream_t)t, &e);
        else if (kind == "copy") st = gr_bwprobe_copy(&sh, b, a, bytes, (gr_stream_t)t, &e);
        else CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, t));
        if (r >= 0) CK(cudaEventRecord(ev[r + 1], t));
    }
    if (st != GR_OK) {
        fprintf(stderr, "launch_probe: --before %s: %s\n", item, e.msg);
        exit(1);
    }
    CK(cudaEventSynchronize(ev[GR_BANDWIDTH_REPS]));
    CK(cudaStreamSynchronize(t));
    for (auto &x : ev) CK(cudaEventDestroy(x));
    CK(cudaStreamDestroy(t));
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFree(sink));
}
#endif

// One --before step ("name" or "name:value"); its host time is appended to `done` as JSON.
static void before_step(const char *item, cudaStream_t s, std::string &done) {
    std::string it(item);
    size_t colon = it.find(':');
    std::string name = it.substr(0, colon);
    long val = colon == std::string::npos ? 0 : strtol(it.c_str() + colon + 1, nullptr, 10);
    double t0 = now_us();
    if (name == "malloc") {
        void *p;
        CK(cudaMalloc(&p, (size_t)val << 20));
        CK(cudaFree(p));
    } else if (name == "stream") {
        cudaStream_t t;
        CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
        CK(cudaStreamDestroy(t));
    } else if (name == "events") {
        std::vector<cudaEvent_t> ev((size_t)(val > 0 ? val : 1));
        for (auto &e : ev) CK(cudaEventCreate(&e));
        for (auto &e : ev) CK(cudaEventRecord(e, s));
        CK(cudaStreamSynchronize(s));
        for (auto &e : ev) CK(cudaEventDestroy(e));
    } else if (name == "memcpy" || name == "kernel") {
        size_t bytes = (size_t)(val > 0 ? val : 1) << 20;
        void *a, *b;
        CK(cudaMalloc(&a, bytes));
        CK(cudaMalloc(&b, bytes));
        CK(cudaMemsetAsync(a, 1, bytes, s));
        if (name == "memcpy") CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
        else copy_kernel<<<264, 512, 0, s>>>((const uint4 *)a, (uint4 *)b, bytes / 16);
        CK(cudaStreamSynchronize(s));
        CK(cudaFree(a));
        CK(cudaFree(b));
    } else if (name == "kernels") {
        int *p;
        CK(cudaMalloc(&p, kDistinct * sizeof(int)));
        launch_distinct((int)(val > 0 ? val : kDistinct), p, s, std::make_integer_sequence<int, kDistinct>{});
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        CK(cudaFree(p));
    } else if (name == "graph" || name == "capgraph") {
#ifdef GR_PROBE_STAGES
        gr_error e;
        gr_error_clear(&e);
        int avail = 0;
        char why[256];
        if (name == "capgraph" && (gr_capture_checker_open(&avail, why, sizeof(why), &e) != GR_OK || !avail)) {
            fprintf(stderr, "launch_probe: --before %s: the capture checker did not open: %s%s\n", item,
                    e.msg, why);
            exit(1);
        }
#endif
        cudaGraph_t g;
        cudaGraphExec_t x;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (long k = 0; k < (val > 0 ? val : 10); k++) empty_kernel<<<1, 32, 0, s>>>();
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&x, g, 0));
        CK(cudaGraphLaunch(x, s));
        CK(cudaStreamSynchronize(s));
        CK(cudaGraphExecDestroy(x));
        CK(cudaGraphDestroy(g));
#ifdef GR_PROBE_STAGES
        if (name == "capgraph" && gr_capture_checker_close(&e) != GR_OK) {
            fprintf(stderr, "launch_probe: --before %s: %s\n", item, e.msg);
            exit(1);
        }
#endif
    } else if (name == "sync") {
        CK(cudaDeviceSynchronize());
#ifdef GR_PROBE_STAGES
    } else if (name == "bwprobe" || name == "capcheck") {
        gr_error e;
        gr_error_clear(&e);
        gr_status st = GR_OK;
        if (name == "bwprobe") {
            size_t fr = 0, tot = 0;
            CK(cudaMemGetInfo(&fr, &tot));
            gr_bandwidth bw;
            st = gr_bandwidth_probe(gr_bandwidth_bytes(fr), GR_BANDWIDTH_REPS, &bw, &e);
        } else {
            int avail = 0;
            char why[256];
            st = gr_capture_checker_open(&avail, why, sizeof(why), &e);
            if (st == GR_OK && !avail) fprintf(stderr, "launch_probe: capture checker unavailable: %s\n", why);
            if (st == GR_OK) st = gr_capture_checker_close(&e);
        }
        if (st != GR_OK) {
            fprintf(stderr, "launch_probe: --before %s: %s\n", item, e.msg);
            exit(1);
        }
    } else if (name == "bwpart") {
        bw_part(item, it.substr(colon + 1), s);
#endif
    } else { /* the names were checked when the options were read */
        fprintf(stderr, "launch_probe: --before: no step \"%s\" in this build\n", item);
        exit(2);
    }
    char buf[256];
    snprintf(buf, sizeof(buf), "%s{\"step\": \"%s\", \"host_us\": %.1f}", done.empty() ? "" : ", ", item,
             now_us() - t0);
    done += buf;
}

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
        else if (!strcmp(a, "--before-setup")) o.before_setup = 1;
        else if (!strcmp(a, "--before") && v) {
            static const char *known[] = {"malloc", "stream", "events", "memcpy", "kernel", "kernels", "graph", "sync",
#ifdef GR_PROBE_STAGES
                                          "bwprobe", "capcheck", "capgraph", "bwpart",
#endif
                                          nullptr};
            std::string list(argv[++i]);
            for (size_t at = 0; at <= list.size();) {
                size_t comma = list.find(',', at);
                std::string item = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
                std::string name = item.substr(0, item.find(':'));
                bool ok = false;
                for (const char **k = known; *k; k++) ok |= name == *k;
                if (!ok) {
                    fprintf(stderr, "launch_probe: --before: unknown step \"%s\" (malloc:MIB, stream, events:N, "
                                    "memcpy:MIB, kernel:MIB, kernels:N, graph:K, sync; bwprobe, capcheck, capgraph:K, bwpart:KIND[:MIB] in "
                                    "gr_launch_probe_full)\n", item.c_str());
                    return 2;
                }
                o.before.push_back(item);
                if (comma == std::string::npos) break;
                at = comma + 1;
            }
        }
        else {
            fprintf(stderr, "usage: launch_probe [--kernel empty|tiny] [--k K] [--mode eager|graph] "
                            "[--pdl] [--batches N] [--steps S] [--n N] [--via bare|graphrun] "
                            "[--eager-first STEPS] [--before LIST] [--before-setup]\n");
            return 2;
        }
    }
    int dev = 0;
    cudaDeviceProp prop;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        fprintf(stderr, "launch_probe: no CUDA device\n");
        return 3;
    }
    std::string before_done;
    if (o.before_setup) { /* graph and capgraph capture on a stream of their own, made and destroyed here */
        for (const std::string &item : o.before) {
            cudaStream_t t = cudaStreamLegacy;
            bool own = item.compare(0, 5, "graph") == 0 || item.compare(0, 8, "capgraph") == 0;
            if (own) CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
            before_step(item.c_str(), t, before_done);
            if (own) CK(cudaStreamDestroy(t));
        }
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
    if (!o.before_setup)
        for (const std::string &item : o.before) before_step(item.c_str(), s, before_done);
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
           "\"via\": \"%s\", \"pdl\": %s, \"k\": %d, \"eager_first\": %d, \"before\": [%s], \"before_setup\": %s, \"batches\": %d, \"steps_per_batch\": %d, "
           "\"step_us\": {\"median\": %.3f, \"p10\": %.3f, \"p90\": %.3f}, "
           "\"us_per_kernel\": %.4f, \"verified\": %s, \"method\": \"CUDA events per batch, untraced\"}\n",
           prop.name, o.tiny ? "tiny" : "empty", o.graph ? "graph" : "eager",
           o.via_graphrun ? "graphrun" : "bare", o.pdl ? "true" : "false",
           o.k, o.eager_first, before_done.c_str(), o.before_setup ? "true" : "false", o.batches, o.steps, q(0.5), q(0.1), q(0.9), q(0.5) / o.k,
           (!o.tiny || bad == 0) ? "true" : "false");
    if (bad) {
        fprintf(stderr, "launch_probe: %lld of %d elements of x are wrong after %lld steps\n", bad, o.n,
                steps_run);
        return 1;
    }
    return 0;
}
