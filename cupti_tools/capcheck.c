/* Capture checking, the recording side (capcheck.h): a collector listener that turns top-level
 * API calls into gr_capev records while any stream captures. Parameters are read from CUPTI's
 * callback data through a table of the generated parameter structs' offsets; nothing here calls
 * CUDA inside a callback (the capture state comes from the tracker, not from
 * cudaStreamIsCapturing, which is not safe to call from every callback). */
#include "cupti_tools/capcheck.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <generated_nvtx_meta.h> /* cupti.h brings the runtime and driver ones */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cupti_tools/collector.h"
#include "cupti_tools/jsonl.h"

/* ---- parameter layouts ---- */

/* CUDA 13's <<<>>> calls __cudaLaunchKernel(kernel, grid, block, args, smem, stream); CUPTI has
 * a callback id for it but no generated struct. The layout is its argument list, as for
 * cudaLaunchKernel; the stream of the launch the runtime makes inside it (a driver call with a
 * documented struct) takes precedence when CUPTI reports one. */
typedef struct rt_launch13_params {
    const void *kernel;
    dim3 gridDim;
    dim3 blockDim;
    void **args;
    size_t sharedMem;
    cudaStream_t stream;
} rt_launch13_params;

typedef struct pinfo {
    uint32_t cbid;
    uint8_t driver;
    uint8_t cfg;     /* stream inside a launch config: 1 cudaLaunchConfig_t *, 2 CUlaunchConfig * */
    uint8_t assumed; /* layout of an undocumented API */
    int8_t dir;      /* fixed copy direction (gr_copy_dir) for driver copies; 0: from `kind` */
    /* offsets + 1 into the params struct; 0 = no such parameter */
    uint16_t stream, event, dst, src, count, kind, mode, host_out, host_in, size;
    uint16_t
        mode_ptr; /* cudaThreadExchangeStreamCaptureMode: the mode asked for, through a pointer */
} pinfo;

#define OFS(T, f) ((uint16_t)(offsetof(T##_params, f) + 1))
#define RT(cb) .cbid = CUPTI_RUNTIME_TRACE_CBID_##cb, .driver = 0
#define DR(cb) .cbid = CUPTI_DRIVER_TRACE_CBID_##cb, .driver = 1
#define RT_STREAM(cb, T, f)                                                                        \
    { RT(cb), .stream = OFS(T, f) }
#define DR_STREAM(cb, T, f)                                                                        \
    { DR(cb), .stream = OFS(T, f) }
#define RT_COPY(cb, T)                                                                             \
    {                                                                                              \
        RT(cb), .stream = OFS(T, stream), .dst = OFS(T, dst), .src = OFS(T, src),                  \
                .count = OFS(T, count), .kind = OFS(T, kind)                                       \
    }
#define RT_SCOPY(cb, T)                                                                            \
    { RT(cb), .dst = OFS(T, dst), .src = OFS(T, src), .count = OFS(T, count), .kind = OFS(T, kind) }
#define RT_EVREC(cb, T)                                                                            \
    { RT(cb), .stream = OFS(T, stream), .event = OFS(T, event) }
#define DR_EVREC(cb, T)                                                                            \
    { DR(cb), .stream = OFS(T, hStream), .event = OFS(T, hEvent) }

static const pinfo table[] = {
    /* runtime: launches */
    RT_STREAM(cudaLaunchKernel_v7000, cudaLaunchKernel_v7000, stream),
    RT_STREAM(cudaLaunchKernel_ptsz_v7000, cudaLaunchKernel_v7000, stream),
    {RT(__cudaLaunchKernel_v13000), .stream = (uint16_t)(offsetof(rt_launch13_params, stream) + 1),
     .assumed = 1},
    {RT(__cudaLaunchKernel_ptsz_v13000),
     .stream = (uint16_t)(offsetof(rt_launch13_params, stream) + 1), .assumed = 1},
    {RT(cudaLaunchKernelExC_v11060), .stream = OFS(cudaLaunchKernelExC_v11060, config), .cfg = 1},
    {RT(cudaLaunchKernelExC_ptsz_v11060), .stream = OFS(cudaLaunchKernelExC_v11060, config),
     .cfg = 1},
    RT_STREAM(cudaLaunchCooperativeKernel_v9000, cudaLaunchCooperativeKernel_v9000, stream),
    RT_STREAM(cudaLaunchCooperativeKernel_ptsz_v9000, cudaLaunchCooperativeKernel_v9000, stream),
    RT_STREAM(cudaLaunchHostFunc_v10000, cudaLaunchHostFunc_v10000, stream),
    RT_STREAM(cudaLaunchHostFunc_ptsz_v10000, cudaLaunchHostFunc_v10000, stream),
    RT_STREAM(cudaGraphLaunch_v10000, cudaGraphLaunch_v10000, stream),
    RT_STREAM(cudaGraphLaunch_ptsz_v10000, cudaGraphLaunch_v10000, stream),
    /* runtime: copies and memsets */
    RT_COPY(cudaMemcpyAsync_v3020, cudaMemcpyAsync_v3020),
    RT_COPY(cudaMemcpyAsync_ptsz_v7000, cudaMemcpyAsync_v3020),
    {RT(cudaMemcpy2DAsync_v3020), .stream = OFS(cudaMemcpy2DAsync_v3020, stream),
     .dst = OFS(cudaMemcpy2DAsync_v3020, dst), .src = OFS(cudaMemcpy2DAsync_v3020, src),
     .kind = OFS(cudaMemcpy2DAsync_v3020, kind)},
    {RT(cudaMemcpy2DAsync_ptsz_v7000), .stream = OFS(cudaMemcpy2DAsync_v3020, stream),
     .dst = OFS(cudaMemcpy2DAsync_v3020, dst), .src = OFS(cudaMemcpy2DAsync_v3020, src),
     .kind = OFS(cudaMemcpy2DAsync_v3020, kind)},
    {RT(cudaMemcpyToSymbolAsync_v3020), .stream = OFS(cudaMemcpyToSymbolAsync_v3020, stream),
     .src = OFS(cudaMemcpyToSymbolAsync_v3020, src),
     .count = OFS(cudaMemcpyToSymbolAsync_v3020, count),
     .kind = OFS(cudaMemcpyToSymbolAsync_v3020, kind)},
    {RT(cudaMemcpyFromSymbolAsync_v3020), .stream = OFS(cudaMemcpyFromSymbolAsync_v3020, stream),
     .dst = OFS(cudaMemcpyFromSymbolAsync_v3020, dst),
     .count = OFS(cudaMemcpyFromSymbolAsync_v3020, count),
     .kind = OFS(cudaMemcpyFromSymbolAsync_v3020, kind)},
    RT_STREAM(cudaMemcpyPeerAsync_v4000, cudaMemcpyPeerAsync_v4000, stream),
    RT_STREAM(cudaMemsetAsync_v3020, cudaMemsetAsync_v3020, stream),
    RT_STREAM(cudaMemsetAsync_ptsz_v7000, cudaMemsetAsync_v3020, stream),
    RT_STREAM(cudaMemset2DAsync_v3020, cudaMemset2DAsync_v3020, stream),
    RT_STREAM(cudaMemPrefetchAsync_v12020, cudaMemPrefetchAsync_v12020, stream),
    RT_STREAM(cudaMallocAsync_v11020, cudaMallocAsync_v11020, hStream),
    RT_STREAM(cudaMallocAsync_ptsz_v11020, cudaMallocAsync_v11020, hStream),
    RT_STREAM(cudaFreeAsync_v11020, cudaFreeAsync_v11020, hStream),
    RT_STREAM(cudaFreeAsync_ptsz_v11020, cudaFreeAsync_v11020, hStream),
    RT_STREAM(cudaMallocFromPoolAsync_v11020, cudaMallocFromPoolAsync_v11020, stream),
    RT_SCOPY(cudaMemcpy_v3020, cudaMemcpy_v3020),
    RT_SCOPY(cudaMemcpy_ptds_v7000, cudaMemcpy_v3020),
    {RT(cudaMemcpy2D_v3020), .dst = OFS(cudaMemcpy2D_v3020, dst),
     .src = OFS(cudaMemcpy2D_v3020, src), .kind = OFS(cudaMemcpy2D_v3020, kind)},
    {RT(cudaMemcpyToSymbol_v3020), .src = OFS(cudaMemcpyToSymbol_v3020, src),
     .count = OFS(cudaMemcpyToSymbol_v3020, count), .kind = OFS(cudaMemcpyToSymbol_v3020, kind)},
    {RT(cudaMemcpyFromSymbol_v3020), .dst = OFS(cudaMemcpyFromSymbol_v3020, dst),
     .count = OFS(cudaMemcpyFromSymbol_v3020, count),
     .kind = OFS(cudaMemcpyFromSymbol_v3020, kind)},
    /* runtime: streams, events, capture */
    RT_STREAM(cudaStreamSynchronize_v3020, cudaStreamSynchronize_v3020, stream),
    RT_STREAM(cudaStreamSynchronize_ptsz_v7000, cudaStreamSynchronize_v3020, stream),
    RT_STREAM(cudaStreamQuery_v3020, cudaStreamQuery_v3020, stream),
    RT_STREAM(cudaStreamQuery_ptsz_v7000, cudaStreamQuery_v3020, stream),
    {RT(cudaStreamBeginCapture_v10000), .stream = OFS(cudaStreamBeginCapture_v10000, stream),
     .mode = OFS(cudaStreamBeginCapture_v10000, mode)},
    {RT(cudaStreamBeginCapture_ptsz_v10000), .stream = OFS(cudaStreamBeginCapture_v10000, stream),
     .mode = OFS(cudaStreamBeginCapture_v10000, mode)},
    {RT(cudaStreamBeginCaptureToGraph_v12030),
     .stream = OFS(cudaStreamBeginCaptureToGraph_v12030, stream),
     .mode = OFS(cudaStreamBeginCaptureToGraph_v12030, mode)},
    {RT(cudaStreamBeginCaptureToGraph_ptsz_v12030),
     .stream = OFS(cudaStreamBeginCaptureToGraph_v12030, stream),
     .mode = OFS(cudaStreamBeginCaptureToGraph_v12030, mode)},
    RT_STREAM(cudaStreamEndCapture_v10000, cudaStreamEndCapture_v10000, stream),
    RT_STREAM(cudaStreamEndCapture_ptsz_v10000, cudaStreamEndCapture_v10000, stream),
    RT_EVREC(cudaEventRecord_v3020, cudaEventRecord_v3020),
    RT_EVREC(cudaEventRecord_ptsz_v7000, cudaEventRecord_v3020),
    RT_EVREC(cudaEventRecordWithFlags_v11010, cudaEventRecordWithFlags_v11010),
    RT_EVREC(cudaEventRecordWithFlags_ptsz_v11010, cudaEventRecordWithFlags_v11010),
    RT_EVREC(cudaStreamWaitEvent_v3020, cudaStreamWaitEvent_v3020),
    RT_EVREC(cudaStreamWaitEvent_ptsz_v7000, cudaStreamWaitEvent_v3020),
    {RT(cudaThreadExchangeStreamCaptureMode_v10010),
     .mode_ptr = OFS(cudaThreadExchangeStreamCaptureMode_v10010, mode)},
    {DR(cuThreadExchangeStreamCaptureMode),
     .mode_ptr = OFS(cuThreadExchangeStreamCaptureMode, mode)},
    {RT(cudaEventQuery_v3020), .event = OFS(cudaEventQuery_v3020, event)},
    {RT(cudaEventSynchronize_v3020), .event = OFS(cudaEventSynchronize_v3020, event)},
    /* runtime: allocation (pinned host memory is remembered for pageable-copy checks) */
    {RT(cudaMalloc_v3020), .size = OFS(cudaMalloc_v3020, size)},
    {RT(cudaMallocHost_v3020), .host_out = OFS(cudaMallocHost_v3020, ptr),
     .size = OFS(cudaMallocHost_v3020, size)},
    {RT(cudaHostAlloc_v3020), .host_out = OFS(cudaHostAlloc_v3020, pHost),
     .size = OFS(cudaHostAlloc_v3020, size)},
    {RT(cudaHostRegister_v4000), .host_in = OFS(cudaHostRegister_v4000, ptr),
     .size = OFS(cudaHostRegister_v4000, size)},
    {RT(cudaFreeHost_v3020), .host_in = OFS(cudaFreeHost_v3020, ptr)},
    {RT(cudaHostUnregister_v4000), .host_in = OFS(cudaHostUnregister_v4000, ptr)},
    /* driver: launches */
    DR_STREAM(cuLaunchKernel, cuLaunchKernel, hStream),
    DR_STREAM(cuLaunchKernel_ptsz, cuLaunchKernel, hStream),
    {DR(cuLaunchKernelEx), .stream = OFS(cuLaunchKernelEx, config), .cfg = 2},
    {DR(cuLaunchKernelEx_ptsz), .stream = OFS(cuLaunchKernelEx, config), .cfg = 2},
    DR_STREAM(cuLaunchCooperativeKernel, cuLaunchCooperativeKernel, hStream),
    DR_STREAM(cuLaunchCooperativeKernel_ptsz, cuLaunchCooperativeKernel, hStream),
    DR_STREAM(cuLaunchHostFunc, cuLaunchHostFunc, hStream),
    DR_STREAM(cuLaunchHostFunc_ptsz, cuLaunchHostFunc, hStream),
    DR_STREAM(cuGraphLaunch, cuGraphLaunch, hStream),
    DR_STREAM(cuGraphLaunch_ptsz, cuGraphLaunch, hStream),
    /* driver: copies and memsets */
    {DR(cuMemcpyAsync), .stream = OFS(cuMemcpyAsync, hStream), .dst = OFS(cuMemcpyAsync, dst),
     .src = OFS(cuMemcpyAsync, src), .count = OFS(cuMemcpyAsync, ByteCount), .dir = GR_CP_DEFAULT},
    {DR(cuMemcpyAsync_ptsz), .stream = OFS(cuMemcpyAsync, hStream), .dst = OFS(cuMemcpyAsync, dst),
     .src = OFS(cuMemcpyAsync, src), .count = OFS(cuMemcpyAsync, ByteCount), .dir = GR_CP_DEFAULT},
    {DR(cuMemcpyHtoDAsync_v2), .stream = OFS(cuMemcpyHtoDAsync_v2, hStream),
     .src = OFS(cuMemcpyHtoDAsync_v2, srcHost), .count = OFS(cuMemcpyHtoDAsync_v2, ByteCount),
     .dir = GR_CP_H2D},
    {DR(cuMemcpyHtoDAsync_v2_ptsz), .stream = OFS(cuMemcpyHtoDAsync_v2, hStream),
     .src = OFS(cuMemcpyHtoDAsync_v2, srcHost), .count = OFS(cuMemcpyHtoDAsync_v2, ByteCount),
     .dir = GR_CP_H2D},
    {DR(cuMemcpyDtoHAsync_v2), .stream = OFS(cuMemcpyDtoHAsync_v2, hStream),
     .dst = OFS(cuMemcpyDtoHAsync_v2, dstHost), .count = OFS(cuMemcpyDtoHAsync_v2, ByteCount),
     .dir = GR_CP_D2H},
    {DR(cuMemcpyDtoHAsync_v2_ptsz), .stream = OFS(cuMemcpyDtoHAsync_v2, hStream),
     .dst = OFS(cuMemcpyDtoHAsync_v2, dstHost), .count = OFS(cuMemcpyDtoHAsync_v2, ByteCount),
     .dir = GR_CP_D2H},
    {DR(cuMemcpyDtoDAsync_v2), .stream = OFS(cuMemcpyDtoDAsync_v2, hStream),
     .count = OFS(cuMemcpyDtoDAsync_v2, ByteCount), .dir = GR_CP_D2D},
    {DR(cuMemcpyDtoDAsync_v2_ptsz), .stream = OFS(cuMemcpyDtoDAsync_v2, hStream),
     .count = OFS(cuMemcpyDtoDAsync_v2, ByteCount), .dir = GR_CP_D2D},
    DR_STREAM(cuMemsetD8Async, cuMemsetD8Async, hStream),
    DR_STREAM(cuMemsetD8Async_ptsz, cuMemsetD8Async, hStream),
    DR_STREAM(cuMemsetD32Async, cuMemsetD32Async, hStream),
    DR_STREAM(cuMemsetD32Async_ptsz, cuMemsetD32Async, hStream),
    {DR(cuMemcpy), .dst = OFS(cuMemcpy, dst), .src = OFS(cuMemcpy, src),
     .count = OFS(cuMemcpy, ByteCount), .dir = GR_CP_DEFAULT},
    {DR(cuMemcpyHtoD_v2), .src = OFS(cuMemcpyHtoD_v2, srcHost),
     .count = OFS(cuMemcpyHtoD_v2, ByteCount), .dir = GR_CP_H2D},
    {DR(cuMemcpyDtoH_v2), .dst = OFS(cuMemcpyDtoH_v2, dstHost),
     .count = OFS(cuMemcpyDtoH_v2, ByteCount), .dir = GR_CP_D2H},
    {DR(cuMemcpyDtoD_v2), .count = OFS(cuMemcpyDtoD_v2, ByteCount), .dir = GR_CP_D2D},
    DR_STREAM(cuMemAllocAsync, cuMemAllocAsync, hStream),
    DR_STREAM(cuMemAllocAsync_ptsz, cuMemAllocAsync, hStream),
    DR_STREAM(cuMemFreeAsync, cuMemFreeAsync, hStream),
    DR_STREAM(cuMemFreeAsync_ptsz, cuMemFreeAsync, hStream),
    /* driver: streams, events, capture */
    DR_STREAM(cuStreamSynchronize, cuStreamSynchronize, hStream),
    DR_STREAM(cuStreamSynchronize_ptsz, cuStreamSynchronize, hStream),
    DR_STREAM(cuStreamQuery, cuStreamQuery, hStream),
    DR_STREAM(cuStreamQuery_ptsz, cuStreamQuery, hStream),
    DR_STREAM(cuStreamBeginCapture, cuStreamBeginCapture, hStream),
    DR_STREAM(cuStreamBeginCapture_ptsz, cuStreamBeginCapture, hStream),
    {DR(cuStreamBeginCapture_v2), .stream = OFS(cuStreamBeginCapture_v2, hStream),
     .mode = OFS(cuStreamBeginCapture_v2, mode)},
    {DR(cuStreamBeginCapture_v2_ptsz), .stream = OFS(cuStreamBeginCapture_v2, hStream),
     .mode = OFS(cuStreamBeginCapture_v2, mode)},
    {DR(cuStreamBeginCaptureToGraph), .stream = OFS(cuStreamBeginCaptureToGraph, hStream),
     .mode = OFS(cuStreamBeginCaptureToGraph, mode)},
    DR_STREAM(cuStreamEndCapture, cuStreamEndCapture, hStream),
    DR_STREAM(cuStreamEndCapture_ptsz, cuStreamEndCapture, hStream),
    DR_EVREC(cuEventRecord, cuEventRecord),
    DR_EVREC(cuEventRecord_ptsz, cuEventRecord),
    DR_EVREC(cuEventRecordWithFlags, cuEventRecordWithFlags),
    DR_EVREC(cuEventRecordWithFlags_ptsz, cuEventRecordWithFlags),
    DR_EVREC(cuStreamWaitEvent, cuStreamWaitEvent),
    DR_EVREC(cuStreamWaitEvent_ptsz, cuStreamWaitEvent),
    {DR(cuEventQuery), .event = OFS(cuEventQuery, hEvent)},
    {DR(cuEventSynchronize), .event = OFS(cuEventSynchronize, hEvent)},
    /* driver: host allocation */
    {DR(cuMemAllocHost_v2), .host_out = OFS(cuMemAllocHost_v2, pp),
     .size = OFS(cuMemAllocHost_v2, bytesize)},
    {DR(cuMemHostAlloc), .host_out = OFS(cuMemHostAlloc, pp),
     .size = OFS(cuMemHostAlloc, bytesize)},
    {DR(cuMemHostRegister_v2), .host_in = OFS(cuMemHostRegister_v2, p),
     .size = OFS(cuMemHostRegister_v2, bytesize)},
    {DR(cuMemFreeHost), .host_in = OFS(cuMemFreeHost, p)},
    {DR(cuMemHostUnregister), .host_in = OFS(cuMemHostUnregister, p)},
};

static const pinfo *lookup(int driver, uint32_t cbid) {
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (table[i].cbid == cbid && table[i].driver == driver) return &table[i];
    return NULL;
}

static uint64_t read_ptr(const void *params, uint16_t off) {
    const void *v;
    memcpy(&v, (const char *)params + off - 1, sizeof(v));
    return (uint64_t)(uintptr_t)v;
}

static int read_int(const void *params, uint16_t off) {
    int v;
    memcpy(&v, (const char *)params + off - 1, sizeof(v));
    return v;
}

static uint64_t read_size(const void *params, uint16_t off) {
    size_t v;
    memcpy(&v, (const char *)params + off - 1, sizeof(v));
    return (uint64_t)v;
}

/* cudaStream_t / CUstream bits: 0 is the legacy stream (the per-thread one in _ptsz/_ptds
 * calls), 0x1 cudaStreamLegacy / CU_STREAM_LEGACY, 0x2 cudaStreamPerThread. */
static void set_stream(gr_capev *e, uint64_t h, int per_thread_call) {
    if (h == 0)
        e->stream_kind = per_thread_call ? GR_SK_PER_THREAD : GR_SK_LEGACY;
    else if (h == 1)
        e->stream_kind = GR_SK_LEGACY;
    else if (h == 2)
        e->stream_kind = GR_SK_PER_THREAD;
    else {
        e->stream_kind = GR_SK_HANDLE;
        e->stream = h;
    }
}

static int stream_of(const pinfo *pi, const void *params, uint64_t *out) {
    if (!pi || !pi->stream || !params) return 0;
    if (pi->cfg) {
        uint64_t cfg = read_ptr(params, pi->stream);
        if (!cfg) return 0;
        if (pi->cfg == 1)
            *out = (uint64_t)(uintptr_t)((const cudaLaunchConfig_t *)(uintptr_t)cfg)->stream;
        else
            *out = (uint64_t)(uintptr_t)((const CUlaunchConfig *)(uintptr_t)cfg)->hStream;
        return 1;
    }
    *out = read_ptr(params, pi->stream);
    return 1;
}

static int copy_dir(int kind) {
    switch (kind) {
    case cudaMemcpyHostToHost:
        return GR_CP_H2H;
    case cudaMemcpyHostToDevice:
        return GR_CP_H2D;
    case cudaMemcpyDeviceToHost:
        return GR_CP_D2H;
    case cudaMemcpyDeviceToDevice:
        return GR_CP_D2D;
    default:
        return GR_CP_DEFAULT;
    }
}

/* ---- state ---- */

#define MAX_PINNED 4096
#define NVTX_DEPTH 16
#define NVTX_NAME 48

typedef struct pending {
    int valid;
    int src; /* where the stream came from: 0 none, 1 documented params, 2 assumed layout, 3 nested
                driver call */
    const pinfo *pi;
    const void *params;
    gr_capev e;
} pending;

typedef struct tls_rec {
    uint64_t tid;
    pending p;
    int nnvtx;
    char nvtx[NVTX_DEPTH][NVTX_NAME];
} tls_rec;

static _Thread_local tls_rec T;

typedef struct range {
    uint64_t base, size;
} range;

static struct {
    pthread_mutex_t mu;
    int running;
    gr_capcheck_opts o;
    size_t max_events;
    gr_captrack track;
    gr_capev_list list;
    uint64_t seq;
    FILE *out;
    size_t written;
    int write_error;
    range pinned[MAX_PINNED];
    int npinned;
    int op;
    char op_name[GR_CAPEV_NAME_MAX];
    unsigned op_flags;
} R = {.mu = PTHREAD_MUTEX_INITIALIZER, .op = -1};

static uint64_t tid(void) {
    if (!T.tid) T.tid = (uint64_t)syscall(SYS_gettid);
    return T.tid;
}

static void pinned_add(uint64_t base, uint64_t size) {
    if (!base) return;
    for (int i = 0; i < R.npinned; i++)
        if (R.pinned[i].base == base) {
            R.pinned[i].size = size;
            return;
        }
    if (R.npinned < MAX_PINNED) R.pinned[R.npinned++] = (range){base, size ? size : 1};
}

static void pinned_remove(uint64_t base) {
    for (int i = 0; i < R.npinned; i++)
        if (R.pinned[i].base == base) {
            R.pinned[i] = R.pinned[--R.npinned];
            return;
        }
}

static int pinned_has(uint64_t p) {
    for (int i = 0; i < R.npinned; i++)
        if (p >= R.pinned[i].base && p - R.pinned[i].base < R.pinned[i].size) return 1;
    return 0;
}

static void ranges_str(char *out, size_t size) {
    size_t o = 0;
    out[0] = '\0';
    int n = T.nnvtx < NVTX_DEPTH ? T.nnvtx : NVTX_DEPTH;
    for (int i = 0; i < n && o + 4 < size; i++) {
        int w = snprintf(out + o, size - o, "%s%s", i ? " > " : "", T.nvtx[i]);
        if (w < 0) break;
        o += (size_t)w;
    }
    if (T.nnvtx > NVTX_DEPTH && o + 8 < size) snprintf(out + o, size - o, " > ...");
}

/* Writes the events not yet in the file (caller holds R.mu). */
static void flush_file(void) {
    if (!R.out) return;
    gr_sbuf b;
    gr_sb_init(&b);
    for (; R.written < R.list.n; R.written++) {
        gr_capev_format(&b, &R.list.v[R.written]);
        gr_sb_raw(&b, "\n", 1);
    }
    if (b.oom || (b.len && fwrite(b.p, 1, b.len, R.out) != b.len) || fflush(R.out) != 0)
        R.write_error = 1;
    gr_sb_free(&b);
}

/* ---- callbacks ---- */

static void begin_call(const gr_cupti_api_call *c) {
    const CUpti_CallbackData *cb = c->cbdata;
    pending *p = &T.p;
    memset(p, 0, sizeof(*p));
    p->valid = 1;
    gr_capev *e = &p->e;
    int per_thread = 0;
    gr_capapi_normalize(c->name ? c->name : (cb ? cb->functionName : ""), e->api, sizeof(e->api),
                        &per_thread);
    e->driver = c->driver;
    e->cbid = c->cbid;
    e->mode = -1;
    e->op = -1;
    const pinfo *pi = lookup(c->driver, c->cbid);
    const void *params = cb ? cb->functionParams : NULL;
    p->pi = pi;
    p->params = params;
    if (!pi || !params) return;
    uint64_t h;
    /* an assumed layout must give a stream handle's shape (0, 1, 2 or an aligned heap pointer),
     * else the stream stays unknown: never an escape read out of garbage */
    if (stream_of(pi, params, &h) && (!pi->assumed || h <= 2 || (h >= 0x10000 && (h & 7) == 0))) {
        set_stream(e, h, per_thread);
        p->src = pi->assumed ? 2 : 1;
    }
    if (pi->event) e->event = read_ptr(params, pi->event);
    if (pi->mode)
        e->mode = read_int(params, pi->mode);
    else if (pi->mode_ptr) {
        uint64_t mp = read_ptr(params, pi->mode_ptr);
        if (mp)
            memcpy(&e->mode, (const void *)(uintptr_t)mp,
                   sizeof(int)); /* the mode asked for, at entry */
    } else if (gr_capapi_kind(e->api) == GR_CA_BEGIN)
        e->mode = 0; /* cuStreamBeginCapture: global */
    if (pi->dir || pi->kind) {
        e->copy = pi->dir ? pi->dir : copy_dir(read_int(params, pi->kind));
        if (e->copy == GR_CP_H2D && pi->src) e->host_ptr = read_ptr(params, pi->src);
        if (e->copy == GR_CP_D2H && pi->dst) e->host_ptr = read_ptr(params, pi->dst);
    }
    if (pi->count)
        e->bytes = read_size(params, pi->count);
    else if (pi->size)
        e->bytes = read_size(params, pi->size);
}

/* A call the runtime makes inside the top-level one: its documented stream wins over an
 * assumed layout. */
static void nested_call(const gr_cupti_api_call *c) {
    pending *p = &T.p;
    if (!p->valid || p->src == 1 || !c->driver) return;
    if (!gr_capapi_is_work(gr_capapi_kind(p->e.api))) return;
    const CUpti_CallbackData *cb = c->cbdata;
    const pinfo *pi = lookup(1, c->cbid);
    uint64_t h;
    if (!pi || !cb || !stream_of(pi, cb->functionParams, &h)) return;
    char name[GR_CAPEV_API_MAX];
    int per_thread = 0;
    gr_capapi_normalize(c->name, name, sizeof(name), &per_thread);
    if (!gr_capapi_is_work(gr_capapi_kind(name))) return;
    p->e.stream_kind = GR_SK_NONE;
    p->e.stream = 0;
    set_stream(&p->e, h, per_thread);
    p->src = 3;
}

static void end_call(const gr_cupti_api_call *c) {
    pending *p = &T.p;
    if (!p->valid) return;
    p->valid = 0;
    const CUpti_CallbackData *cb = c->cbdata;
    gr_capev *e = &p->e;
    if (cb && cb->functionReturnValue)
        e->ret = c->driver ? (int)*(const CUresult *)cb->functionReturnValue
                           : (int)*(const cudaError_t *)cb->functionReturnValue;
    e->tid = tid();
    ranges_str(e->ranges, sizeof(e->ranges));
    gr_capapi k = gr_capapi_kind(e->api);
    pthread_mutex_lock(&R.mu);
    if (!R.running) {
        pthread_mutex_unlock(&R.mu);
        return;
    }
    /* pinned host memory, so that copies can be told pinned or pageable */
    if (e->ret == 0 && p->pi && p->params) {
        if (p->pi->host_out) {
            uint64_t pp = read_ptr(p->params, p->pi->host_out);
            uint64_t v = 0;
            if (pp) memcpy(&v, (const void *)(uintptr_t)pp, sizeof(v));
            pinned_add(v, e->bytes);
        } else if (p->pi->host_in) {
            uint64_t v = read_ptr(p->params, p->pi->host_in);
            if (k == GR_CA_HOST_ALLOC)
                pinned_add(v, e->bytes);
            else
                pinned_remove(v);
        }
    }
    if (e->host_ptr) {
        if (pinned_has(e->host_ptr))
            e->hostmem = GR_HM_PINNED;
        else if (R.o.all_host_allocs)
            e->hostmem = GR_HM_PAGEABLE;
    }
    e->op = R.op;
    if (R.op >= 0) {
        snprintf(e->op_name, sizeof(e->op_name), "%s", R.op_name);
        e->op_flags = R.op_flags;
    }
    e->cap = gr_captrack_status(&R.track, e);
    if (gr_captrack_active(&R.track) || k == GR_CA_BEGIN || k == GR_CA_END) {
        e->seq = ++R.seq;
        if (R.list.n < R.max_events)
            gr_capev_list_push(&R.list, e);
        else
            R.list.dropped++;
    }
    gr_captrack_apply(&R.track, e);
    if (k == GR_CA_END) flush_file();
    pthread_mutex_unlock(&R.mu);
}

static void on_api(void *user, const gr_cupti_api_call *c) {
    (void)user;
    if (c->depth == 1) {
        if (c->enter)
            begin_call(c);
        else
            end_call(c);
    } else if (c->depth > 1 && c->enter) {
        nested_call(c);
    }
}

static void on_nvtx(void *user, uint32_t cbid, const void *data) {
    (void)user;
    const CUpti_NvtxData *d = data;
    const char *msg = NULL;
    const nvtxEventAttributes_t *attr = NULL;
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
        if (d->functionParams) msg = ((const nvtxRangePushA_params *)d->functionParams)->message;
        break;
    case CUPTI_CBID_NVTX_nvtxRangePushW:
        msg = "(wide-character range)";
        break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
        if (d->functionParams)
            attr = ((const nvtxRangePushEx_params *)d->functionParams)->eventAttrib;
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        if (d->functionParams)
            attr = ((const nvtxDomainRangePushEx_params *)d->functionParams)->core.eventAttrib;
        break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        if (T.nnvtx > 0) T.nnvtx--;
        return;
    default:
        return;
    }
    if (attr) msg = attr->messageType == NVTX_MESSAGE_TYPE_ASCII ? attr->message.ascii : "(range)";
    if (T.nnvtx < NVTX_DEPTH) snprintf(T.nvtx[T.nnvtx], NVTX_NAME, "%s", msg ? msg : "(range)");
    T.nnvtx++;
}

/* ---- control ---- */

int gr_capcheck_running(void) {
    pthread_mutex_lock(&R.mu);
    int r = R.running;
    pthread_mutex_unlock(&R.mu);
    return r;
}

void gr_capcheck_set_op(int index, const char *name, unsigned flags) {
    pthread_mutex_lock(&R.mu);
    R.op = index;
    snprintf(R.op_name, sizeof(R.op_name), "%s", index >= 0 && name ? name : "");
    R.op_flags = index >= 0 ? flags : 0;
    pthread_mutex_unlock(&R.mu);
}

gr_status gr_capcheck_start(const gr_capcheck_opts *o, gr_error *err) {
    pthread_mutex_lock(&R.mu);
    if (R.running) {
        pthread_mutex_unlock(&R.mu);
        return gr_error_set(err, GR_ERR_INTERNAL, NULL,
                            "capture checking is already running in this process");
    }
    gr_capev_list_free(&R.list);
    memset(&R.list, 0, sizeof(R.list));
    R.o = *o;
    R.list.hdr = o->hdr;
    R.list.hdr.schema_version = GR_CAPEV_SCHEMA_VERSION;
    if (!R.list.hdr.pid) R.list.hdr.pid = (int64_t)getpid();
    R.max_events = o->max_events ? o->max_events : 200000;
    gr_captrack_init(&R.track);
    R.seq = 0;
    R.written = 0;
    R.write_error = 0;
    R.npinned = 0;
    R.op = -1;
    R.op_name[0] = '\0';
    R.op_flags = 0;
    R.out = NULL;
    if (o->out_path) {
        int fd = open(o->out_path,
                      O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (o->exclusive ? O_EXCL : 0), 0644);
        R.out = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!R.out) {
            int e = errno;
            if (fd >= 0) close(fd);
            pthread_mutex_unlock(&R.mu);
            return gr_error_set(err, GR_ERR_IO, o->out_path,
                                "cannot write the capture-check recording: %s", strerror(e));
        }
        gr_sbuf b;
        gr_sb_init(&b);
        gr_capev_format_header(&b, &R.list.hdr);
        gr_sb_raw(&b, "\n", 1);
        if (b.oom || fwrite(b.p, 1, b.len, R.out) != b.len || fflush(R.out) != 0) R.write_error = 1;
        gr_sb_free(&b);
    }
    R.running = 1;
    pthread_mutex_unlock(&R.mu);
    gr_status st = gr_cupti_add_listener(on_api, NULL, err);
    if (st == GR_OK) {
        st = gr_cupti_callbacks_start(o->nvtx ? on_nvtx : NULL, NULL, err);
        if (st != GR_OK) gr_cupti_remove_listener(on_api, NULL);
    }
    if (st != GR_OK) {
        pthread_mutex_lock(&R.mu);
        R.running = 0;
        if (R.out) {
            gr_sbuf b;
            gr_sb_init(&b);
            gr_capev_format_end(&b, 0, 0, err->msg);
            gr_sb_raw(&b, "\n", 1);
            if (!b.oom) fwrite(b.p, 1, b.len, R.out);
            gr_sb_free(&b);
            fclose(R.out);
            R.out = NULL;
        }
        pthread_mutex_unlock(&R.mu);
    }
    return st;
}

gr_status gr_capcheck_stop(int finalize, gr_capev_list *out, gr_error *err) {
    if (out) memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&R.mu);
    int running = R.running;
    pthread_mutex_unlock(&R.mu);
    if (!running) return GR_OK;
    gr_status st = gr_cupti_callbacks_stop(finalize, err);
    gr_cupti_remove_listener(on_api, NULL);
    pthread_mutex_lock(&R.mu);
    R.running = 0;
    if (R.out) {
        flush_file();
        gr_sbuf b;
        gr_sb_init(&b);
        gr_capev_format_end(&b, R.list.n, R.list.dropped, NULL);
        gr_sb_raw(&b, "\n", 1);
        if (b.oom || fwrite(b.p, 1, b.len, R.out) != b.len) R.write_error = 1;
        gr_sb_free(&b);
        if (fclose(R.out) != 0) R.write_error = 1;
        R.out = NULL;
        if (R.write_error && st == GR_OK)
            st = gr_error_set(err, GR_ERR_IO, R.o.out_path,
                              "the capture-check recording could not be written "
                              "completely (disk full?)");
    }
    R.list.has_end = 1;
    if (out) {
        *out = R.list;
    } else {
        gr_capev_list_free(&R.list);
    }
    memset(&R.list, 0, sizeof(R.list));
    R.op = -1;
    pthread_mutex_unlock(&R.mu);
    return st;
}

gr_status gr_capcheck_take(gr_capev_list *out, gr_error *err) {
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&R.mu);
    if (!R.running) {
        pthread_mutex_unlock(&R.mu);
        return gr_error_set(err, GR_ERR_INTERNAL, NULL, "capture checking is not running");
    }
    if (R.out) flush_file();
    *out = R.list;
    out->has_end = 1;
    memset(&R.list, 0, sizeof(R.list));
    R.list.hdr = out->hdr;
    R.written = 0;
    pthread_mutex_unlock(&R.mu);
    return GR_OK;
}

/* ---- host memory, after the capture ---- */

static void *driver_sym(const char *name) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return NULL;
    void *p = dlsym(h, name);
    dlclose(h);
    return p;
}

void gr_capcheck_resolve_hostmem(gr_capev_list *l) {
    CUresult (*get)(void *, CUpointer_attribute, CUdeviceptr) =
        (CUresult(*)(void *, CUpointer_attribute, CUdeviceptr))driver_sym("cuPointerGetAttribute");
    if (!get) return;
    for (size_t i = 0; i < l->n; i++) {
        gr_capev *e = &l->v[i];
        if (!e->host_ptr || e->hostmem != GR_HM_UNKNOWN) continue;
        /* registered or pinned memory has a memory type and a host pointer; pageable memory
         * is unknown to the driver (CUDA_ERROR_INVALID_VALUE) */
        unsigned int type = 0;
        void *hp = NULL;
        CUresult rc = get(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)e->host_ptr);
        if (rc == CUDA_SUCCESS && type == CU_MEMORYTYPE_HOST)
            /* where the device can reach pageable memory (HMM), it may report it as host memory
             * but has no registered host pointer for it */
            e->hostmem = get(&hp, CU_POINTER_ATTRIBUTE_HOST_POINTER, (CUdeviceptr)e->host_ptr) ==
                                     CUDA_SUCCESS &&
                                 hp
                             ? GR_HM_PINNED
                             : GR_HM_PAGEABLE;
        else if (rc == CUDA_ERROR_INVALID_VALUE)
            e->hostmem = GR_HM_PAGEABLE;
    }
}
