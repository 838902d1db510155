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

// cluster_z > 1: the grid's z dimension is split into thread-block clusters of (1, 1, cluster_z)
// (sm_90; the kernel reads its rank with %cluster_ctarank).
template <typename... KArgs, typename... Args>
static inline cudaError_t gr_launch_cluster(void (*kernel)(KArgs...), dim3 grid, dim3 block,
                                            size_t smem, const gr_launch_ctx *ctx,
                                            unsigned cluster_z, Args... args) {
    cudaStream_t stream = (cudaStream_t)ctx->stream;
    if (!ctx->pdl && cluster_z <= 1) {
        kernel<<<grid, block, smem, stream>>>(static_cast<KArgs>(args)...);
        return cudaSuccess;
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[2];
    unsigned n = 0;
    if (ctx->pdl) {
        attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[n++].val.programmaticStreamSerializationAllowed = 1;
    }
    if (cluster_z > 1) {
        attr[n].id = cudaLaunchAttributeClusterDimension;
        attr[n].val.clusterDim.x = 1;
        attr[n].val.clusterDim.y = 1;
        attr[n++].val.clusterDim.z = cluster_z;
    }
    cfg.attrs = attr;
    cfg.numAttrs = n;
    return cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...);
}

template <typename... KArgs, typename... Args>
static inline cudaError_t gr_launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                                    const gr_launch_ctx *ctx, Args... args) {
    return gr_launch_cluster(kernel, grid, block, smem, ctx, 1u, args...);
}
#endif
