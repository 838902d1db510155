/* Capture breakers: ops that deliberately do what breaks stream capture or silently escapes it
 * (synchronise, query, allocate, copy on the legacy stream or synchronously, enqueue on a stream
 * outside the capture, fork without joining, read a value back to the host, initialise a library
 * inside the capture), each next to its clean counterpart computing the same result, so that
 * workloads/capture_breakers.json can show every pattern alone and graphrun can time what a
 * full graph would give once the op is fixed. */
#ifndef GR_KERNELS_BREAKERS_H
#define GR_KERNELS_BREAKERS_H

#include "core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The patterns (attr "pattern" of kernel capture_breaker; capture_breaker_lib takes none and
 * lazy_init). op->ip[1] holds the index after check(). */
typedef enum gr_breaker_pattern {
    GR_BRK_NONE = 0,      /* clean: y = 2x + x[0] by a kernel on the op's stream */
    GR_BRK_COPY,          /* clean: y = x by cudaMemcpyAsync on the op's stream */
    GR_BRK_HOST_COPY,     /* clean: y = host table, cudaMemcpyAsync from pinned memory */
    GR_BRK_STREAM_SYNC,   /* cudaStreamSynchronize on the op's stream */
    GR_BRK_DEVICE_SYNC,   /* cudaDeviceSynchronize */
    GR_BRK_EVENT_SYNC,    /* cudaEventRecord on the op's stream, cudaEventSynchronize */
    GR_BRK_STREAM_QUERY,  /* cudaStreamQuery on the op's stream */
    GR_BRK_EVENT_QUERY,   /* cudaEventRecord on the op's stream, cudaEventQuery */
    GR_BRK_ALLOC,         /* cudaMalloc a scratch buffer (freed at once when eager) */
    GR_BRK_ALLOC_HOST,    /* cudaMallocHost */
    GR_BRK_ALLOC_THREAD,  /* cudaMalloc from a helper thread while the op runs */
    GR_BRK_LEGACY_COPY,   /* y = x by cudaMemcpyAsync on the legacy default stream */
    GR_BRK_SYNC_COPY,     /* y = x by cudaMemcpy (synchronous) */
    GR_BRK_OTHER_STREAM,  /* the kernel on a private stream never forked into the capture */
    GR_BRK_PAGEABLE_COPY, /* y = host table, cudaMemcpyAsync from pageable memory */
    GR_BRK_FORK,      /* forks a private stream off the op's stream, launches there, never joins */
    GR_BRK_ITEM,      /* reads x[0] back to the host (.item()) and passes it by value */
    GR_BRK_LAZY_INIT, /* capture_breaker_lib: cublasCreate inside the op */
    GR_BRK_NPATTERNS
} gr_breaker_pattern;

const char *gr_breaker_pattern_name(int p);
/* The clean pattern computing the same result (none, copy or host_copy); -1 when p is clean. */
int gr_breaker_clean_of(int p);
/* The host table pageable_copy and host_copy copy in: h[i] = 0.25 * (i % 64) - 4. */
float gr_breaker_host_value(int64_t i);

gr_status gr_launch_breaker(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err);
gr_status gr_breaker_setup(const gr_op *op, const gr_launch_ctx *ctx, void **state, gr_error *err);
void gr_breaker_teardown(void *state);

/* A deep copy of `plan` whose breaker ops among `ops` (every breaker op when nops < 0) use
 * their clean counterparts; *nfixed says how many changed (0: nothing to fix, *out is still a
 * copy). Checks the changed ops again. */
gr_status gr_breaker_fix_plan(const gr_plan *plan, const int *ops, int nops, gr_plan **out,
                              int *nfixed, gr_error *err);

extern const gr_kernel_def *const gr_breaker_kernels[];

#ifdef __cplusplus
}
#endif
#endif
