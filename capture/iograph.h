/* A held graph a lane's step runs in, with its inputs, outputs and doorbell inside:
 *
 *     gate -> IF(the gate says run) { input copies -> the held graph -> output copies -> done }
 *
 * The gate (one thread) waits in the GPU for the client's doorbell in its control block
 * (replay/lane.h), or for the service's cancel; the copies read and write the client's segment
 * through its device mapping (zero-padding a bucket's missing rows, the rows the doorbell asked
 * for); the done kernel publishes the step in the control block. So a step is one graph launch
 * and nothing else on the host, and the launch can be made before the doorbell rings ("armed":
 * the GPU is already waiting when the client asks). kernels/iocopy.h has the kernels. */
#ifndef GR_CAPTURE_IOGRAPH_H
#define GR_CAPTURE_IOGRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "capture/capture.h"
#include "core/error.h"
#include "kernels/iocopy.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_IOGRAPH_MAX 64 /* a request's inputs and outputs (replay/protocol.h: 32 each) */

typedef struct gr_io_graph {
    gr_graph g; /* the graph with the gate, the copies and the done kernel, instantiated (owned) */
    int nin, nout;
    gr_iocopy_args args[GR_IOGRAPH_MAX]; /* inputs first, then outputs */
    gr_iogate_args gate;
    gr_iogate_host *host; /* the gate's host words (pinned, mapped; owned) */
} gr_io_graph;

/* Builds and instantiates the io graph of `held` (which is not changed): in[i] copies into the
 * step's input buffers before it, out[i] from its output buffers after it; a copy with `rows`
 * NULL here and row_bytes > 0 moves the rows the gate passes (the graph points it at the gate's
 * device state). gate: its ctl pointers (device-mapped), default rows and range; the rest is
 * filled here. Host pointers must be device-accessible (mapped). Without conditional nodes (CUDA
 * < 12.4), or when a call refuses (a held graph a conditional body may not hold), GR_ERR_CUDA /
 * GR_ERR_USAGE naming the cause: the caller keeps the copies around the held graph. */
gr_status gr_io_graph_build(const gr_graph *held, const gr_iocopy_args *in, int nin,
                            const gr_iocopy_args *out, int nout, const gr_iogate_args *gate,
                            gr_stream_t stream, gr_io_graph *io, gr_error *err);
/* Launches the io graph for the step after `done` (the lane's done_seq): the gate passes on a
 * doorbell that differs from `done`. Clears the verdict and the cancel first. */
gr_status gr_io_graph_launch(gr_io_graph *io, uint64_t done, gr_stream_t stream, gr_error *err);
/* The current launch's verdict (GR_IOGATE_*; WAITING until the gate decided and, when the step
 * ran, until it is published); with RAN, *seq is the step. */
unsigned gr_io_graph_verdict(const gr_io_graph *io, uint64_t *seq);
/* Asks the current launch's gate to stop waiting (no effect once it passed). */
void gr_io_graph_cancel(gr_io_graph *io);
void gr_io_graph_destroy(gr_io_graph *io);

#ifdef __cplusplus
}
#endif
#endif
