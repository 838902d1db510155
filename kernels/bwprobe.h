/* Bandwidth instruments, not workload kernels (nothing here is in the registry): read-only,
 * write-only and copy kernels with 16-byte streaming accesses and several in flight per thread,
 * timed by replay/timing.c to give each variant its HBM floor (docs/floors.md). */
#ifndef GR_KERNELS_BWPROBE_H
#define GR_KERNELS_BWPROBE_H

#include <stddef.h>

#include "core/error.h"
#include "core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Launch shape of the three kernels on the current device: as many resident blocks of
 * `threads` as the SMs hold (occupancy API), so that bytes in flight, not the grid, set the
 * rate. `sink_words`: the read kernel's output (one word per warp of its grid). */
typedef struct gr_bwprobe_shape {
    int threads;
    int grid_read, grid_write, grid_copy;
    int unroll; /* 16-byte accesses in flight per thread */
    size_t sink_words;
} gr_bwprobe_shape;

gr_status gr_bwprobe_shape_get(gr_bwprobe_shape *out, gr_error *err);

/* The byte counts are rounded down to whole 16-byte words; buffers must be 16-byte aligned
 * (cudaMalloc's are). */
/* Reads `bytes` of src; per warp, the XOR of what it read lands in sink (sh->sink_words
 * words), so that no load can be dropped. */
gr_status gr_bwprobe_read(const gr_bwprobe_shape *sh, const void *src, size_t bytes, unsigned *sink,
                          gr_stream_t stream, gr_error *err);
/* Writes `bytes` of dst with a non-zero pattern that depends on the word index and `seed`. */
gr_status gr_bwprobe_write(const gr_bwprobe_shape *sh, void *dst, size_t bytes, unsigned seed,
                           gr_stream_t stream, gr_error *err);
/* Copies `bytes` from src to dst (reads and writes `bytes` each). */
gr_status gr_bwprobe_copy(const gr_bwprobe_shape *sh, void *dst, const void *src, size_t bytes,
                          gr_stream_t stream, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
