/* The kernels of a lane's io graph (capture/iograph.h), which make a served step one graph the
 * GPU can wait in: a gate (one thread waits for the client's doorbell in mapped host memory and
 * decides whether the step runs), copy kernels (a buffer's bytes from or to mapped host memory),
 * and a done kernel (publishes the step in the client's control block). Not workload kernels
 * (not in the registry). */
#ifndef GR_KERNELS_IOCOPY_H
#define GR_KERNELS_IOCOPY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One copy: `bytes` from src to dst, then dst[bytes, whole) zeroed (a bucket's padding rows;
 * whole == bytes for none). With `rows` (device memory the gate fills), the copy moves
 * min(*rows * row_bytes, whole) bytes instead of `bytes`; `output`: no zero padding, and the
 * writes are made visible to the host (system fence) before the kernel ends. src or dst may be
 * mapped host memory (read uncached: the host rewrites it between launches). The struct is the
 * node's argument storage. */
typedef struct gr_iocopy_args {
    void *dst;
    const void *src;
    size_t bytes, whole;
    const uint32_t *rows;
    size_t row_bytes;
    int output;
    void *argv[7]; /* filled by gr_iocopy_params: what cudaKernelNodeParams points at */
} gr_iocopy_args;

/* Fills *kernel_node_params (a struct cudaKernelNodeParams) for `a`; a's storage must outlive
 * the call that takes the params (CUDA copies the arguments). */
void gr_iocopy_params(gr_iocopy_args *a, void *kernel_node_params);

/* What the gate decided for a launch (gr_iogate_host.verdict). */
enum { GR_IOGATE_WAITING = 0, GR_IOGATE_RAN = 1, GR_IOGATE_CANCELLED = 2, GR_IOGATE_DECLINED = 3 };

/* The service's side of a gate: pinned host memory, mapped. The service writes next and cancel
 * before a launch (and cancel during one), zeroes verdict; the GPU writes verdict (and seq when
 * the step ran), last. */
typedef struct gr_iogate_host {
    uint64_t next;    /* the gate passes once the doorbell differs from next - 1 (done_seq) */
    uint32_t cancel;  /* non-zero: stop waiting, skip the step (verdict CANCELLED) */
    uint32_t verdict; /* GR_IOGATE_* */
    uint64_t seq;     /* the step that ran */
} gr_iogate_host;

/* Device memory the gate fills for the copies and the done kernel. */
typedef struct gr_iogate_dev {
    uint64_t seq;   /* the doorbell's value the gate passed on */
    uint64_t t0_ns; /* %globaltimer when it passed */
    uint64_t steps; /* steps run through this gate */
    uint32_t rows;  /* the step's rows (the default for a doorbell's 0) */
    uint32_t pad;
} gr_iogate_dev;

/* Where the gate reads the doorbell and the done kernel publishes: device pointers into the
 * client's control block (replay/lane.h's gr_lane_ctl fields of the same names). */
typedef struct gr_iogate_ctl {
    const uint64_t *req_seq;
    const uint32_t *rows;
    uint64_t *done_seq;
    int32_t *status;
    double *graph_us, *step_us, *lock_us;
    uint64_t *steps;
    char *message;
} gr_iogate_ctl;

/* The gate and the done kernel's arguments. rows_lo..rows_hi: the rows a doorbell may ask for
 * (lo > hi: none but 0, which means default_rows); another value is DECLINED (the service says
 * why). handle: the io graph's IF node condition (a cudaGraphConditionalHandle). */
typedef struct gr_iogate_args {
    gr_iogate_ctl ctl;
    gr_iogate_host *host; /* its device pointer */
    gr_iogate_dev *dev;
    uint32_t default_rows, rows_lo, rows_hi;
    unsigned long long handle;
    void *argv[7];
} gr_iogate_args;

/* Node params of the gate (one thread: waits, decides, sets the condition) and of the done
 * kernel (one thread: the control block's status and timings, then done_seq, then the gate's
 * verdict for the service). As gr_iocopy_params, a's storage must outlive the call. */
void gr_iogate_params(gr_iogate_args *a, void *kernel_node_params);
void gr_iodone_params(gr_iogate_args *a, void *kernel_node_params);

#ifdef __cplusplus
}
#endif
#endif
