/* Timing loops: warm-up, then batches of steps between CUDA events on the main stream; per-step
 * time per batch (median, p10, p90 over batches) plus host submission time per step (host
 * clock around the enqueue loop only). Also the device-to-device copy bandwidth, the roofline
 * for memory-bound workloads, measured in the same process. */
#ifndef GR_TIMING_H
#define GR_TIMING_H

#include "core/error.h"
#include "core/kernel.h"
#include "core/stats.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef gr_status (*gr_step_fn)(void *user, gr_error *err);

typedef struct gr_timing {
    gr_summary step_us;   /* per step: CUDA events around each batch / steps in it */
    gr_summary submit_us; /* per step: host clock around the enqueue loop of each batch */
    int batches, steps_per_batch, warmup;
    int steps_per_launch; /* graph timing with --unroll N: N plan steps per graph launch */
} gr_timing;

typedef struct gr_time_opts {
    int warmup;  /* steps before timing */
    int iters;   /* timed steps in all */
    int batches; /* iters are split into this many batches */
    int progress; /* draw a progress bar on stderr (only when it is a terminal) */
    const char *label;
    /* Optional: called after each timed batch, outside the timed region, with the steps done so
     * far (and every 1024 warm-up steps with 0 done); a status other than GR_OK stops the
     * timing and is returned (the replay service reports progress and cancels a replay whose
     * client went away with it). */
    gr_status (*on_batch)(void *user, int done, int total, gr_error *err);
    void *on_batch_user;
    /* Optional: called with on_batch_user every 1024 steps inside a timed batch; a status other
     * than GR_OK abandons the batch (the stream is synchronized) and is returned, so that a
     * replay with huge batches stays cancellable. */
    gr_status (*check)(void *user, gr_error *err);
} gr_time_opts;

gr_status gr_time_steps(gr_step_fn step, void *user, gr_stream_t stream, const gr_time_opts *o,
                        gr_timing *out, gr_error *err);

typedef struct gr_bandwidth {
    double bytes;     /* per copy, read + written */
    gr_summary gbps;  /* over repetitions */
} gr_bandwidth;

/* cudaMemcpyAsync device-to-device of `bytes`, `reps` times, each timed with events. */
gr_status gr_copy_bandwidth(size_t bytes, int reps, gr_bandwidth *out, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
