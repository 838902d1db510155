/* The device side of a device-resident step loop (`graphrun run --device-loop N`): the kernel at
 * the end of a conditional WHILE body that counts the steps down and ends the loop. The graph
 * around it is built in capture/capture.c. */
#ifndef GR_KERNELS_DEVLOOP_H
#define GR_KERNELS_DEVLOOP_H

#include "core/device.h"
#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether this build has conditional graph nodes (CUDA 12.4 or newer at compile time). */
int gr_devloop_built(void);

/* Enqueues, on `stream` (being captured into the loop body), one thread that decrements
 * *counter and sets the WHILE node's condition `handle` (a cudaGraphConditionalHandle) to
 * "counter > 0". */
gr_status gr_devloop_tail_launch(unsigned long long handle, unsigned *counter, gr_stream_t stream,
                                 gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
