// The io graph's copy kernel (kernels/iocopy.h).
#include "kernels/iocopy.h"

#include <cuda_runtime.h>
#include <stdint.h>

namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 256;

__global__ void __launch_bounds__(kThreads) iocopy_kernel(char *dst, const char *src, size_t bytes,
                                                           size_t whole) {
    const size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    if ((((uintptr_t)dst | (uintptr_t)src | bytes | whole) & 15) == 0) {
        uint4 *d = reinterpret_cast<uint4 *>(dst);
        const uint4 *s = reinterpret_cast<const uint4 *>(src);
        const size_t nb = bytes / 16, nw = whole / 16;
        for (size_t i = tid; i < nw; i += stride) d[i] = i < nb ? __ldcv(s + i) : make_uint4(0, 0, 0, 0);
        return;
    }
    if ((((uintptr_t)dst | (uintptr_t)src | bytes | whole) & 3) == 0) { /* e.g. an offset of 4 */
        unsigned *d = reinterpret_cast<unsigned *>(dst);
        const unsigned *s = reinterpret_cast<const unsigned *>(src);
        const size_t nb = bytes / 4, nw = whole / 4;
        for (size_t i = tid; i < nw; i += stride) d[i] = i < nb ? __ldcv(s + i) : 0u;
        return;
    }
    for (size_t i = tid; i < whole; i += stride)
        dst[i] = i < bytes ? __ldcv(src + i) : (char)0;
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
    *kp = cudaKernelNodeParams{};
    kp->func = reinterpret_cast<void *>(iocopy_kernel);
    kp->gridDim = dim3((unsigned)blocks);
    kp->blockDim = dim3(kThreads);
    kp->sharedMemBytes = 0;
    kp->kernelParams = a->argv;
    kp->extra = nullptr;
}
