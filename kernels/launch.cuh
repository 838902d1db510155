// The launch helper every graphrun kernel uses, and the device side of programmatic dependent
// launch (PDL). With ctx->pdl set (only for kernels registered with GR_KF_PDL), the kernel is
// launched with cudaLaunchAttributeProgrammaticStreamSerialization: the next kernel on the
// stream may start launching before this one ends, and in a captured graph the edge becomes a
// programmatic one. Correctness rests on every PDL kernel calling gr_pdl_enter() before it
// touches memory: griddepcontrol.wait blocks until the preceding grid has completed and its
// writes are visible. Without PDL both instructions are no-ops.
#ifndef GR_KERNELS_LAUNCH_CUH
#define GR_KERNELS_LAUNCH_CUH

#include <cuda_runtime.h>

#include "core/kernel.h"

__device__ __forceinline__ void gr_pdl_enter() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    // Let the next kernel start launching now (it still waits for our completion before
    // reading), then wait for the previous kernel's writes.
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

template <typename... KArgs, typename... Args>
static inline cudaError_t gr_launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                                    const gr_launch_ctx *ctx, Args... args) {
    cudaStream_t stream = (cudaStream_t)ctx->stream;
    if (!ctx->pdl) {
        kernel<<<grid, block, smem, stream>>>(static_cast<KArgs>(args)...);
        return cudaSuccess;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...);
}

#endif
