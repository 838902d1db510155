/* A held graph with its inputs and outputs inside: a clone of the step's graph whose roots wait
 * for one copy kernel per input (from mapped host memory into the device buffer, zero-padding a
 * bucket's missing rows) and whose leaves are followed by one copy kernel per output (to mapped
 * host memory). A lane step (replay/lane.h) is then one graph launch and one wait: no copy
 * engine, no separate submissions before and after the replay. */
#ifndef GR_CAPTURE_IOGRAPH_H
#define GR_CAPTURE_IOGRAPH_H

#include <stddef.h>

#include "capture/capture.h"
#include "core/error.h"
#include "kernels/iocopy.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_IOGRAPH_MAX 64 /* a request's inputs and outputs (replay/protocol.h: 32 each) */

typedef struct gr_io_graph {
    gr_graph g; /* the clone with the copy nodes, instantiated (owned) */
    int nin, nout;
    void *node[GR_IOGRAPH_MAX];         /* cudaGraphNode_t: inputs first, then outputs */
    gr_iocopy_args args[GR_IOGRAPH_MAX]; /* what each node's launch copies now */
} gr_io_graph;

/* Builds and instantiates the io graph of `held` (which is not changed): in[i] copies into the
 * step's input buffers before any of its nodes, out[i] from its output buffers after all of them.
 * Host pointers must be device-accessible (mapped: cudaHostGetDevicePointer). A graph that cannot
 * be cloned or extended (e.g. a device loop's conditional node on an older driver) is
 * GR_ERR_CUDA naming the call; the caller can keep the separate copies. */
gr_status gr_io_graph_build(const gr_graph *held, const gr_iocopy_args *in, int nin,
                            const gr_iocopy_args *out, int nout, gr_stream_t stream,
                            gr_io_graph *io, gr_error *err);
/* Sets copy k's byte count (k < nin: an input, with its zero padding up to `whole`; else
 * output k - nin) for the launches that follow; no call when it is unchanged. */
gr_status gr_io_graph_set_bytes(gr_io_graph *io, int k, size_t bytes, gr_error *err);
void gr_io_graph_destroy(gr_io_graph *io);

#ifdef __cplusplus
}
#endif
#endif
