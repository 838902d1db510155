// The GPU side of cupti-launchstat calibrate: the tiny kernel (one block, y = x + c in place on a
// small buffer) and its chains, the spin kernel (launch-cost graphs, blocker), the untraced timing
// of every batch (CUDA events, a blocker ahead of each). calibrate.c derives; docs/predict.md.
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/timer.h"
#include "cupti_tools/calibrate.h"

// PDL (sm_90+): a dependent launched with programmatic stream serialization may start as soon as
// every block of its predecessor has passed launch_dependents; it waits for the predecessor's
// completion (and its memory) at griddepcontrol.wait, before its own work. Without the launch
// attribute both are no-ops, so the same kernel serves every graph.
__device__ __forceinline__ void cal_pdl_enter() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// One block of 32 threads spinning `cycles` SM cycles after the PDL wait. clock64, not
// %globaltimer: the global timer may tick in microseconds when no profiler is attached, and a
// chain of spins on a coarse timer phase-locks to its ticks; a cycle count is exact, and the
// clock it runs at is measured (gr_cal_clock) in the untraced and the traced phase alike.
extern "C" __global__ void gr_cal_spin(long long cycles) {
    cal_pdl_enter();
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
}

// The node cost's instrument, graphrun's tiny kernel (kernels/probe.cu) in place: a kernel that
// touches memory, as users' traced kernels do. 8n bytes, n flops; one block. Every thread
// waits at griddepcontrol.wait before it reads, so a PDL chain in place stays exact.
extern "C" __global__ void gr_cal_tiny(float *x, int n, float c) {
    cal_pdl_enter();
    int i = (int)threadIdx.x;
    if (i < n) x[i] = x[i] + c;
}

// The tiny kernels' buffer: element i starts at 1 + i (non-zero, exact in float, as are the
// sums of whole increments below 2^24).
extern "C" __global__ void gr_cal_tiny_init(float *x, int n) {
    int i = (int)threadIdx.x;
    if (i < n) x[i] = 1.0f + (float)i;
}

// The SM clock: `cycles` of clock64 against %globaltimer (ns). Over ~2 ms a microsecond tick of
// the global timer costs 0.05%.
extern "C" __global__ void gr_cal_clock(long long cycles, unsigned long long *out) {
    unsigned long long g0, g1;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    long long c0 = clock64(), c1;
    do {
        c1 = clock64();
    } while (c1 - c0 < cycles);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    if (threadIdx.x == 0) {
        out[0] = g1 - g0;
        out[1] = (unsigned long long)(c1 - c0);
    }
}

// The copy's source: a hash of the index, never zero (zeros could be compressed on the way to
// HBM and overstate the bandwidth).
extern "C" __global__ void gr_cal_fill(unsigned int *p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned int x = (unsigned int)i * 2654435761u + 0x9e3779b9u;
        x ^= x >> 15;
        x *= 0x2c1b3c6du;
        x ^= x >> 12;
        p[i] = x | 1u;
    }
}

struct gr_cal_gpu {
    int device;
    int sm_count;
    cudaStream_t s;
    cudaEvent_t e0, e1;
    cudaGraphExec_t chain, chain_pdl, g1, gw;
    unsigned long long *probe;
    float *tiny; // the tiny kernels' buffer, tiny_n floats
    int tiny_n;
    int chain_nodes;        // tiny kernels per chain graph launch
    long long tiny_kernels; // tiny kernels enqueued on the buffer since its initialisation
    void *src, *dst;
    long long cycl, cycb;
    double block_us, rated_mhz;
    int pdl;
};

static const float tiny_c = 1.0f; // the increment: whole, so the buffer's sums stay exact

// One block of `threads` on stream s, with programmatic stream serialization when pdl (attr: the
// caller's storage for the attribute).
static cudaLaunchConfig_t one_block(cudaStream_t s, unsigned threads, int pdl,
                                    cudaLaunchAttribute *attr) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = s;
    attr->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr->val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cfg;
}

static cudaError_t launch_spin(cudaStream_t s, long long cycles) {
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = one_block(s, 32, 0, &attr);
    return cudaLaunchKernelEx(&cfg, gr_cal_spin, cycles);
}

static cudaError_t launch_tiny(cudaStream_t s, float *x, int n, int pdl) {
    cudaLaunchAttribute attr;
    cudaLaunchConfig_t cfg = one_block(s, GR_CAL_TINY_THREADS, pdl, &attr);
    return cudaLaunchKernelEx(&cfg, gr_cal_tiny, x, n, tiny_c);
}

// The SM clock in MHz (cycles per us), ~2 ms of spinning at the rated clock.
static gr_status measure_clock(gr_cal_gpu *g, double rated_mhz, double *mhz, gr_error *err) {
    long long cycles = (long long)(2000.0 * rated_mhz);
    gr_cal_clock<<<1, 1, 0, g->s>>>(cycles, g->probe);
    GR_TRY(gr_launch_status("gr_cal_clock", NULL, err));
    unsigned long long h[2] = {0, 0};
    GR_CUDA(cudaMemcpyAsync(h, g->probe, sizeof(h), cudaMemcpyDeviceToHost, g->s), err);
    GR_CUDA(cudaStreamSynchronize(g->s), err);
    double ns = (double)h[0], cyc = (double)h[1];
    double f = ns > 0 ? cyc / (ns / 1000.0) : 0;
    if (!(f >= 50 && f <= 10000))
        return gr_error_set(err, GR_ERR_CUDA, NULL,
                            "the SM clock probe measured %.0f cycles in %.0f ns (%.1f MHz): "
                            "clock64 or %%globaltimer misbehaves on this GPU, so the spin kernels' "
                            "lengths (launch-cost graphs, blocker) are unknown",
                            cyc, ns, f);
    *mhz = f;
    return GR_OK;
}

// A graph of n kernels in a row (spins of `cycles`, or tiny kernels on g->tiny when `tiny`, with
// PDL when `pdl`), captured from one stream, instantiated and uploaded.
static gr_status build(gr_cal_gpu *g, int n, int tiny, long long cycles, int pdl,
                       cudaGraphExec_t *out, gr_error *err) {
    cudaGraph_t graph = NULL;
    GR_CUDA(cudaStreamBeginCapture(g->s, cudaStreamCaptureModeThreadLocal), err);
    cudaError_t rc = cudaSuccess;
    for (int i = 0; i < n && rc == cudaSuccess; i++)
        rc = tiny ? launch_tiny(g->s, g->tiny, g->tiny_n, pdl) : launch_spin(g->s, cycles);
    cudaError_t rc2 = cudaStreamEndCapture(g->s, &graph);
    if (rc != cudaSuccess || rc2 != cudaSuccess) {
        if (graph) cudaGraphDestroy(graph);
        (void)cudaGetLastError();
        return rc != cudaSuccess
                   ? gr_cuda_fail(rc,
                                  tiny ? "cudaLaunchKernelEx(gr_cal_tiny) in capture"
                                       : "cudaLaunchKernelEx(gr_cal_spin) in capture",
                                  __FILE__, __LINE__, err)
                   : gr_cuda_fail(rc2, "cudaStreamEndCapture", __FILE__, __LINE__, err);
    }
    rc = cudaGraphInstantiate(out, graph, 0);
    cudaGraphDestroy(graph);
    if (rc != cudaSuccess) {
        *out = NULL;
        return gr_cuda_fail(rc, "cudaGraphInstantiate", __FILE__, __LINE__, err);
    }
    GR_CUDA(cudaGraphUpload(*out, g->s), err);
    return GR_OK;
}

static gr_status open_rest(gr_cal_gpu *g, const gr_cal_opts *o, gr_cal_raw *raw, gr_error *err) {
    GR_CUDA(cudaStreamCreateWithFlags(&g->s, cudaStreamNonBlocking), err);
    GR_CUDA(cudaEventCreate(&g->e0), err);
    GR_CUDA(cudaEventCreate(&g->e1), err);
    GR_CUDA(cudaMalloc((void **)&g->probe, 2 * sizeof(unsigned long long)), err);
    g->tiny_n = o->tiny_n < 1                     ? 1
                : o->tiny_n > GR_CAL_TINY_THREADS ? GR_CAL_TINY_THREADS
                                                  : o->tiny_n;
    g->chain_nodes = o->chain;
    raw->tiny_n = g->tiny_n;
    raw->tiny_threads = GR_CAL_TINY_THREADS;
    GR_CUDA(cudaMalloc((void **)&g->tiny, (size_t)g->tiny_n * sizeof(float)), err);
    gr_cal_tiny_init<<<1, GR_CAL_TINY_THREADS, 0, g->s>>>(g->tiny, g->tiny_n);
    GR_TRY(gr_launch_status("gr_cal_tiny_init", NULL, err));
    g->tiny_kernels = 0;
    // warm-up: ~20 ms of spinning lets the clocks settle before the first probe
    double rated = raw->clock_attr_mhz;
    g->rated_mhz = rated;
    for (int i = 0; i < 20; i++) {
        gr_cal_spin<<<1, 32, 0, g->s>>>((long long)(1000.0 * rated));
        GR_TRY(gr_launch_status("gr_cal_spin", NULL, err));
    }
    GR_CUDA(cudaStreamSynchronize(g->s), err);
    double f = 0;
    GR_TRY(measure_clock(g, rated, &f, err));
    g->cycl = llround(o->tl_us * f);
    g->cycb = llround(o->block_us * f);
    g->block_us = o->block_us;
    raw->cycl = g->cycl;
    raw->cycb = g->cycb;
    // PDL needs the device and the tiny kernel's code: a build without sm_90 code JIT-compiled
    // from an older PTX has no griddepcontrol, and its "PDL" chain would not wait at all
    cudaFuncAttributes fa;
    GR_CUDA(cudaFuncGetAttributes(&fa, gr_cal_tiny), err);
    raw->tiny_ptx = fa.ptxVersion;
    g->pdl = raw->cc_major >= 9 && fa.ptxVersion >= 90;
    raw->pdl = g->pdl;
    GR_TRY(build(g, o->chain, 1, 0, 0, &g->chain, err));
    if (g->pdl) GR_TRY(build(g, o->chain, 1, 0, 1, &g->chain_pdl, err));
    GR_TRY(build(g, 1, 0, g->cycl, 0, &g->g1, err));
    GR_TRY(build(g, o->wide, 0, g->cycl, 0, &g->gw, err));
    GR_CUDA(cudaStreamSynchronize(g->s), err);
    return GR_OK;
}

extern "C" gr_status gr_cal_gpu_open(const gr_cal_opts *o, gr_cal_raw *raw, gr_cal_gpu **out,
                                     gr_error *err) {
    *out = NULL;
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0) {
        (void)cudaGetLastError();
        return gr_error_set(err, GR_ERR_NODEV, NULL,
                            "no CUDA device (%s): calibrate measures the GPU it runs on; run it on "
                            "the machine the traces come from (check nvidia-smi and "
                            "CUDA_VISIBLE_DEVICES), or give `report --calibration FILE` a file "
                            "measured there",
                            rc != cudaSuccess ? cudaGetErrorName(rc) : "0 devices");
    }
    if (o->device < 0 || o->device >= count)
        return gr_error_set(err, GR_ERR_USAGE, "--device",
                            "device %d does not exist (this machine has %d: 0 to %d)", o->device,
                            count, count - 1);
    GR_CUDA(cudaSetDevice(o->device), err);
    cudaDeviceProp p;
    GR_CUDA(cudaGetDeviceProperties(&p, o->device), err);
    snprintf(raw->gpu, sizeof(raw->gpu), "%.127s", p.name);
    raw->cc_major = p.major;
    raw->cc_minor = p.minor;
    raw->sm_count = p.multiProcessorCount;
    cudaDriverGetVersion(&raw->driver);
    cudaRuntimeGetVersion(&raw->runtime);
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, o->device) != cudaSuccess || khz <= 0) {
        (void)cudaGetLastError();
        khz = 1500000; // only sizes the warm-up and the probe; the probe measures the clock
    }
    raw->clock_attr_mhz = khz / 1000.0;
    gr_cal_gpu *g = (gr_cal_gpu *)calloc(1, sizeof(gr_cal_gpu));
    if (!g) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    g->device = o->device;
    g->sm_count = p.multiProcessorCount;
    gr_status st = open_rest(g, o, raw, err);
    if (st != GR_OK) {
        gr_cal_gpu_close(g);
        return st;
    }
    *out = g;
    return GR_OK;
}

// One timed batch: a blocker kernel, then event, `launches` graph launches, event. The launches
// are enqueued while the blocker runs, so the GPU runs them back to back whatever the host's
// speed, and the first one does not pay the submit latency of an idle stream. Host time is that
// of the launch calls alone.
static gr_status batch(gr_cal_gpu *g, cudaGraphExec_t exec, int launches, double *gpu_us,
                       double *host_us, int *limited, gr_error *err) {
    // the tiny chains' kernels are counted for the buffer's check (check_buffer)
    if (exec && (exec == g->chain || exec == g->chain_pdl))
        g->tiny_kernels += (long long)launches * g->chain_nodes;
    gr_cal_spin<<<1, 32, 0, g->s>>>(g->cycb);
    GR_TRY(gr_launch_status("gr_cal_spin (blocker)", NULL, err));
    GR_CUDA(cudaEventRecord(g->e0, g->s), err);
    double h0 = gr_now_us();
    for (int i = 0; i < launches; i++)
        GR_CUDA(cudaGraphLaunch(exec, g->s), err);
    double h1 = gr_now_us();
    GR_CUDA(cudaEventRecord(g->e1, g->s), err);
    GR_CUDA(cudaEventSynchronize(g->e1), err);
    float ms = 0;
    GR_CUDA(cudaEventElapsedTime(&ms, g->e0, g->e1), err);
    *gpu_us = (double)ms * 1000.0 / launches;
    if (host_us) *host_us = (h1 - h0) / launches;
    if (limited && h1 - h0 > 0.9 * g->block_us) (*limited)++;
    return GR_OK;
}

static gr_status copies(gr_cal_gpu *g, const gr_cal_opts *o, gr_cal_raw *raw, gr_error *err) {
    size_t fr = 0, tot = 0;
    GR_CUDA(cudaMemGetInfo(&fr, &tot), err);
    const size_t margin = (size_t)64 << 20, least = (size_t)64 << 20;
    size_t bytes = o->copy_bytes;
    while (bytes > least && 2 * bytes + margin > fr)
        bytes /= 2;
    if (2 * bytes + margin > fr)
        return gr_error_set(err, GR_ERR_CUDA, NULL,
                            "%.0f MiB of device memory are free: the copy that measures hbm_gbps "
                            "needs 2 x %.0f MiB (free some, or use another --device)",
                            fr / 1048576.0, bytes / 1048576.0);
    bytes &= ~(size_t)15;
    GR_CUDA(cudaMalloc(&g->src, bytes), err);
    GR_CUDA(cudaMalloc(&g->dst, bytes), err);
    size_t n = bytes / sizeof(unsigned int);
    gr_cal_fill<<<4 * g->sm_count, 256, 0, g->s>>>((unsigned int *)g->src, n);
    GR_TRY(gr_launch_status("gr_cal_fill", NULL, err));
    gr_cal_fill<<<4 * g->sm_count, 256, 0, g->s>>>((unsigned int *)g->dst, n);
    GR_TRY(gr_launch_status("gr_cal_fill", NULL, err));
    const int per = 4;
    for (int w = 0; w < 2; w++)
        GR_CUDA(cudaMemcpyAsync(g->dst, g->src, bytes, cudaMemcpyDeviceToDevice, g->s), err);
    GR_CUDA(cudaStreamSynchronize(g->s), err);
    for (int b = 0; b < GR_CAL_COPY_BATCHES; b++) {
        gr_cal_spin<<<1, 32, 0, g->s>>>(g->cycb);
        GR_TRY(gr_launch_status("gr_cal_spin (blocker)", NULL, err));
        GR_CUDA(cudaEventRecord(g->e0, g->s), err);
        for (int i = 0; i < per; i++)
            GR_CUDA(cudaMemcpyAsync(g->dst, g->src, bytes, cudaMemcpyDeviceToDevice, g->s), err);
        GR_CUDA(cudaEventRecord(g->e1, g->s), err);
        GR_CUDA(cudaEventSynchronize(g->e1), err);
        float ms = 0;
        GR_CUDA(cudaEventElapsedTime(&ms, g->e0, g->e1), err);
        raw->copy_gbps[b] = ms > 0 ? 2.0 * (double)bytes * per / ((double)ms * 1e-3) / 1e9 : 0;
    }
    raw->copy_bytes = bytes;
    raw->copy_batches = GR_CAL_COPY_BATCHES;
    raw->copies_per_batch = per;
    GR_CUDA(cudaFree(g->src), err);
    g->src = NULL;
    GR_CUDA(cudaFree(g->dst), err);
    g->dst = NULL;
    return GR_OK;
}

extern "C" gr_status gr_cal_gpu_untraced(gr_cal_gpu *g, const gr_cal_opts *o, gr_cal_raw *raw,
                                         gr_error *err) {
    int rounds = o->rounds < 1 ? 1 : o->rounds > GR_CAL_MAX_ROUNDS ? GR_CAL_MAX_ROUNDS : o->rounds;
    raw->rounds = rounds;
    raw->chain = o->chain;
    raw->wide = o->wide;
    raw->chain_launches = o->chain_launches;
    raw->g1_launches = o->g1_launches;
    raw->wide_launches = o->wide_launches;
    double sink = 0;
    // warm-up: one batch of each, not kept
    GR_TRY(batch(g, g->chain, o->chain_launches, &sink, NULL, NULL, err));
    if (g->pdl) GR_TRY(batch(g, g->chain_pdl, o->chain_launches, &sink, NULL, NULL, err));
    GR_TRY(batch(g, g->g1, o->g1_launches, &sink, NULL, NULL, err));
    GR_TRY(batch(g, g->gw, o->wide_launches, &sink, NULL, NULL, err));
    GR_TRY(measure_clock(g, raw->clock_attr_mhz, &raw->clock_mhz[0], err));
    // interleaved: each round times every batch once, so a slow drift touches all alike and the
    // figures derived from two batches pair those of one round
    for (int r = 0; r < rounds; r++) {
        GR_TRY(batch(g, g->chain, o->chain_launches, &raw->chain_tiny[r], NULL, NULL, err));
        if (g->pdl)
            GR_TRY(batch(g, g->chain_pdl, o->chain_launches, &raw->chain_tiny_pdl[r], NULL, NULL,
                         err));
        GR_TRY(batch(g, g->g1, o->g1_launches, &raw->g1[r], &raw->host_g1[r], &raw->host_limited,
                     err));
        GR_TRY(batch(g, g->gw, o->wide_launches, &raw->gw[r], &raw->host_gw[r], &raw->host_limited,
                     err));
    }
    GR_TRY(measure_clock(g, raw->clock_attr_mhz, &raw->clock_mhz[1], err));
    GR_TRY(copies(g, o, raw, err));
    GR_CUDA(cudaDeviceSynchronize(), err);
    return GR_OK;
}

// The buffer read back: every element must hold 1 + i + (tiny kernels run) x c. A PDL chain whose
// kernels did not wait for their predecessors would lose updates here.
static gr_status check_buffer(gr_cal_gpu *g, gr_cal_raw *raw, gr_error *err) {
    float h[GR_CAL_TINY_THREADS];
    GR_CUDA(cudaMemcpyAsync(h, g->tiny, (size_t)g->tiny_n * sizeof(float), cudaMemcpyDeviceToHost,
                            g->s),
            err);
    GR_CUDA(cudaStreamSynchronize(g->s), err);
    raw->tiny_kernels = g->tiny_kernels;
    raw->buffer_checked = 1;
    raw->buffer_bad = 0;
    for (int i = 0; i < g->tiny_n; i++) {
        double want = 1.0 + i + (double)g->tiny_kernels * tiny_c;
        if ((double)h[i] != want && raw->buffer_bad++ == 0) {
            raw->buffer_got = h[i];
            raw->buffer_want = want;
        }
    }
    return GR_OK;
}

extern "C" gr_status gr_cal_gpu_traced_tiny(gr_cal_gpu *g, int warmup, int count, gr_cal_raw *raw,
                                            gr_error *err) {
    double c0 = 0, c1 = 0;
    GR_TRY(measure_clock(g, g->rated_mhz, &c0, err));
    for (int i = 0; i < warmup + count; i++) {
        // one at a time, each on an idle GPU, as the kernels of a launch-bound eager program
        GR_CUDA(launch_tiny(g->s, g->tiny, g->tiny_n, 0), err);
        g->tiny_kernels++;
        GR_CUDA(cudaStreamSynchronize(g->s), err);
    }
    GR_TRY(measure_clock(g, g->rated_mhz, &c1, err));
    raw->clock_mhz[2] = (c0 + c1) / 2;
    return check_buffer(g, raw, err);
}

extern "C" void gr_cal_gpu_close(gr_cal_gpu *g) {
    if (!g) return;
    if (g->s) cudaStreamSynchronize(g->s);
    cudaGraphExec_t *ex[] = {&g->chain, &g->chain_pdl, &g->g1, &g->gw};
    for (size_t i = 0; i < sizeof(ex) / sizeof(ex[0]); i++)
        if (*ex[i]) cudaGraphExecDestroy(*ex[i]);
    if (g->e0) cudaEventDestroy(g->e0);
    if (g->e1) cudaEventDestroy(g->e1);
    if (g->probe) cudaFree(g->probe);
    if (g->tiny) cudaFree(g->tiny);
    if (g->src) cudaFree(g->src);
    if (g->dst) cudaFree(g->dst);
    if (g->s) cudaStreamDestroy(g->s);
    (void)cudaGetLastError();
    free(g);
}
