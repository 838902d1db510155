// The io graph's kernels (kernels/iocopy.h): the gate, the copies, the done kernel.
#include "kernels/iocopy.h"

#include <cuda_runtime.h>
#include <stdint.h>

#if CUDART_VERSION >= 12040
#define GR_HAVE_CONDITIONAL 1
#else
#define GR_HAVE_CONDITIONAL 0
#endif

namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 256;

__global__ void __launch_bounds__(kThreads) iocopy_kernel(char *dst, const char *src, size_t bytes,
                                                           size_t whole, const uint32_t *rows,
                                                           size_t row_bytes, int output) {
    if (rows) { /* the step's rows, from the gate */
        const size_t r = (size_t)*rows * row_bytes;
        bytes = r < whole ? r : whole;
    }
    if (output) whole = bytes;
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    if ((((uintptr_t)dst | (uintptr_t)src | bytes | whole) & 15) == 0) {
        uint4 *d = reinterpret_cast<uint4 *>(dst);
        const uint4 *s = reinterpret_cast<const uint4 *>(src);
        const size_t nb = bytes / 16, nw = whole / 16;
        for (size_t i = tid; i < nw; i += stride) d[i] = i < nb ? __ldcv(s + i) : make_uint4(0, 0, 0, 0);
    } else if ((((uintptr_t)dst | (uintptr_t)src | bytes | whole) & 3) == 0) { /* an offset of 4 */
        unsigned *d = reinterpret_cast<unsigned *>(dst);
        const unsigned *s = reinterpret_cast<const unsigned *>(src);
        const size_t nb = bytes / 4, nw = whole / 4;
        for (size_t i = tid; i < nw; i += stride) d[i] = i < nb ? __ldcv(s + i) : 0u;
    } else {
        for (size_t i = tid; i < whole; i += stride) dst[i] = i < bytes ? __ldcv(src + i) : (char)0;
    }
    if (output) __threadfence_system(); /* in host memory before the done kernel publishes */
}

__device__ __forceinline__ uint64_t globaltimer_ns() {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#if GR_HAVE_CONDITIONAL
/* One thread: wait until the doorbell differs from done (next - 1) or the service cancels; a
 * doorbell whose rows are out of range is declined (the service answers it with the reason). */
__global__ void iogate_kernel(gr_iogate_ctl c, gr_iogate_host *host, gr_iogate_dev *dev,
                              uint32_t default_rows, uint32_t lo, uint32_t hi,
                              cudaGraphConditionalHandle handle) {
    volatile gr_iogate_host *h = host;
    const uint64_t done = h->next - 1;
    unsigned run = 0, verdict = GR_IOGATE_CANCELLED;
    for (;;) {
        const uint64_t req = *(volatile const uint64_t *)c.req_seq;
        const uint32_t cancel = h->cancel;
        if (req != done) {
            __threadfence_system(); /* the rows (and inputs) the client wrote before the doorbell */
            uint32_t r = *(volatile const uint32_t *)c.rows;
            if (r == 0) r = default_rows;
            else if (r < lo || r > hi) {
                verdict = GR_IOGATE_DECLINED;
                break;
            }
            dev->rows = r;
            dev->seq = req;
            dev->t0_ns = globaltimer_ns();
            run = 1;
            break;
        }
        if (cancel) break;
        __nanosleep(64);
    }
    cudaGraphSetConditional(handle, run);
    if (!run) {
        h->verdict = verdict;
        __threadfence_system();
    }
}
#endif

/* One thread, after the output copies: the step's status and timings, then done_seq (the client
 * reads the outputs once it sees it), then the service's verdict. */
__global__ void iodone_kernel(gr_iogate_ctl c, gr_iogate_host *host, gr_iogate_dev *dev) {
    const double us = (double)(globaltimer_ns() - dev->t0_ns) * 1e-3;
    const uint64_t steps = ++dev->steps, seq = dev->seq;
    volatile gr_iogate_host *h = host;
    *(volatile int32_t *)c.status = 0;
    *(volatile double *)c.graph_us = us;
    *(volatile double *)c.step_us = us;
    *(volatile double *)c.lock_us = 0.0;
    *(volatile uint64_t *)c.steps = steps;
    *(volatile char *)c.message = '\0';
    __threadfence_system();
    *(volatile uint64_t *)c.done_seq = seq;
    __threadfence_system();
    h->seq = seq;
    __threadfence_system();
    h->verdict = GR_IOGATE_RAN;
    __threadfence_system();
}

void one_thread(cudaKernelNodeParams *kp, void *func, void **argv) {
    *kp = cudaKernelNodeParams{};
    kp->func = func;
    kp->gridDim = dim3(1);
    kp->blockDim = dim3(1);
    kp->sharedMemBytes = 0;
    kp->kernelParams = argv;
    kp->extra = nullptr;
}

} // namespace

extern "C" void gr_iocopy_params(gr_iocopy_args *a, void *out) {
    cudaKernelNodeParams *kp = static_cast<cudaKernelNodeParams *>(out);
    const size_t words = (a->whole + 15) / 16;
    size_t blocks = (words + kThreads - 1) / kThreads;
    if (blocks < 1) blocks = 1;
    if (blocks > kMaxBlocks) blocks = kMaxBlocks;
    a->argv[0] = &a->dst;
    a->argv[1] = &a->src;
    a->argv[2] = &a->bytes;
    a->argv[3] = &a->whole;
    a->argv[4] = &a->rows;
    a->argv[5] = &a->row_bytes;
    a->argv[6] = &a->output;
    *kp = cudaKernelNodeParams{};
    kp->func = reinterpret_cast<void *>(iocopy_kernel);
    kp->gridDim = dim3((unsigned)blocks);
    kp->blockDim = dim3(kThreads);
    kp->sharedMemBytes = 0;
    kp->kernelParams = a->argv;
    kp->extra = nullptr;
}

extern "C" void gr_iogate_params(gr_iogate_args *a, void *out) {
    a->argv[0] = &a->ctl;
    a->argv[1] = &a->host;
    a->argv[2] = &a->dev;
    a->argv[3] = &a->default_rows;
    a->argv[4] = &a->rows_lo;
    a->argv[5] = &a->rows_hi;
    a->argv[6] = &a->handle;
#if GR_HAVE_CONDITIONAL
    one_thread(static_cast<cudaKernelNodeParams *>(out), reinterpret_cast<void *>(iogate_kernel),
               a->argv);
#else
    one_thread(static_cast<cudaKernelNodeParams *>(out), nullptr, a->argv); /* never launched */
#endif
}

extern "C" void gr_iodone_params(gr_iogate_args *a, void *out) {
    a->argv[0] = &a->ctl;
    a->argv[1] = &a->host;
    a->argv[2] = &a->dev;
    one_thread(static_cast<cudaKernelNodeParams *>(out), reinterpret_cast<void *>(iodone_kernel),
               a->argv);
}
