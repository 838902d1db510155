/* Timing loops: warm-up, then batches of steps between CUDA events on the main stream; per-step
 * time per batch (median, p10, p90 over batches) plus host submission time per step (host
 * clock around the enqueue loop only). Also the bandwidth probe (read-only, write-only, copy,
 * cudaMemcpy) measured in the same process, and the HBM floor it gives a step. */
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

/* One way of moving bytes, timed `reps` times between CUDA events. */
typedef struct gr_bw_figure {
    double bytes;    /* counted per repetition; a copy counts its bytes read + written */
    gr_summary gbps; /* over the repetitions */
} gr_bw_figure;

/* The device's HBM bandwidths, measured in this process: the floors of docs/floors.md. */
typedef struct gr_bandwidth {
    gr_bw_figure read_only;    /* kernel of 16-byte streaming loads (a per-warp XOR written) */
    gr_bw_figure write_only;   /* kernel of 16-byte streaming stores of a non-zero pattern */
    gr_bw_figure copy_kernel;  /* 16-byte loads and stores, read + written */
    gr_bw_figure memcpy_d2d;   /* cudaMemcpyAsync device to device, read + written */
    size_t buffer_bytes;       /* each of the two buffers */
    int grid, threads, unroll; /* the read kernel's blocks, threads per block, loads in flight */
} gr_bandwidth;

#define GR_BANDWIDTH_REPS 20
#define GR_BANDWIDTH_MIN_BYTES ((size_t)16 << 20)

/* Bytes per probe buffer on a device with `mem_free` bytes free: 1 GiB (a read takes ~250 us
 * on an H200, long beside event resolution and launch gaps), at most an eighth of what is free
 * (two buffers), in whole MiB. */
size_t gr_bandwidth_bytes(size_t mem_free);

/* On the current device: two buffers of `bytes` (at least GR_BANDWIDTH_MIN_BYTES), the source
 * written with a pattern; two untimed runs of each probe, then `reps` rounds of read-only,
 * write-only, copy kernel and cudaMemcpy D2D, back to back on one stream (the host stays ahead,
 * so no launch gap is timed), each timed between the CUDA events recorded before and after it. */
gr_status gr_bandwidth_probe(size_t bytes, int reps, gr_bandwidth *out, gr_error *err);

/* The HBM floor of a step that reads `bytes_read` and writes `bytes_written`: the reads at the
 * read-only bandwidth plus the writes at the write-only bandwidth (medians), in us; 0 when bw is
 * NULL or either bandwidth is unknown. No GPU needed. */
double gr_floor_us(double bytes_read, double bytes_written, const gr_bandwidth *bw);
/* floor / measured * 100: how close a measured step came to its floor; 0 when either is 0. */
double gr_pct_of_floor(double floor_us, double measured_us);
/* The model in one line, for reports (JSON "floor_model"). */
extern const char gr_floor_model[];

#ifdef __cplusplus
}
#endif
#endif
