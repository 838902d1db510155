/* Parallel loops for the CPU references (host code): a range cut into fixed chunks that threads
 * take in turn. The chunks do not depend on the thread count, so a reference that combines
 * per-chunk partial results in chunk order gives the same bits on any machine. */
#ifndef GR_PARALLEL_H
#define GR_PARALLEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fn(ctx, chunk, begin, end) for every chunk [begin, end) of [0, n) cut every `chunk` items
 * (chunk index = begin / chunk), on up to gr_parallel_threads() threads (the caller's among
 * them). fn returns 0, or non-zero to stop the loop (chunks not yet started are skipped); the
 * loop returns the first non-zero value. */
typedef int (*gr_parallel_fn)(void *ctx, int64_t chunk, int64_t begin, int64_t end);
int gr_parallel_for(int64_t n, int64_t chunk, gr_parallel_fn fn, void *ctx);

/* Threads a loop may use: the CPUs this process may run on (sched_getaffinity), at most 64. */
int gr_parallel_threads(void);

#ifdef __cplusplus
}
#endif
#endif
