// Device-resident step loop: the tail kernel of a conditional WHILE body. One thread, one
// decrement, one cudaGraphSetConditional per step: ~2 us of GPU time it adds per step is what the
// report's device-loop line measures against --unroll (which adds nothing per step but a bigger
// graph). cudaGraphSetConditional is a device-runtime builtin and needs no relocatable device code.
#include <cuda_runtime.h>

#include "core/cuda_check.h"
#include "kernels/devloop.h"

#if CUDART_VERSION >= 12040
#define GR_HAVE_CONDITIONAL 1
#else
#define GR_HAVE_CONDITIONAL 0
#endif

namespace {

#if GR_HAVE_CONDITIONAL
__global__ void loop_tail(cudaGraphConditionalHandle handle, unsigned *counter) {
    unsigned left = *counter - 1;
    *counter = left;
    cudaGraphSetConditional(handle, left > 0 ? 1u : 0u);
}
#endif

} // namespace

extern "C" int gr_devloop_built(void) { return GR_HAVE_CONDITIONAL; }

extern "C" gr_status gr_devloop_tail_launch(unsigned long long handle, unsigned *counter,
                                            gr_stream_t stream, gr_error *err) {
#if GR_HAVE_CONDITIONAL
    loop_tail<<<1, 1, 0, (cudaStream_t)stream>>>((cudaGraphConditionalHandle)handle, counter);
    GR_CUDA(cudaGetLastError(), err);
    return GR_OK;
#else
    (void)handle, (void)counter, (void)stream;
    return gr_error_set(err, GR_ERR_USAGE, "--device-loop",
                        "this graphrun was built with CUDA older than 12.4, which has no "
                        "conditional graph nodes; use --unroll N");
#endif
}
