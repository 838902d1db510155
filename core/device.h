/* Device state: the CUDA device's properties, and for one plan the device buffers, the streams
 * (non-blocking), the fork/join events, the cuBLAS handles and workspace, and per-op state, all
 * created before any capture so that nothing allocates or initialises inside one. */
#ifndef GR_DEVICE_H
#define GR_DEVICE_H

#include <stddef.h>

#include "core/kernel.h"
#include "core/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_device_info {
    int ordinal;
    char name[96];
    int sm_count;
    int cc_major, cc_minor;
    size_t mem_total, mem_free;
    size_t l2_bytes;
    int driver_version, runtime_version;
    int clock_khz, mem_clock_khz, mem_bus_bits;
} gr_device_info;

/* GR_ERR_NODEV (exit 3) when no device is usable. Selects the device. */
gr_status gr_device_probe(int ordinal, gr_device_info *info, gr_error *err);
gr_target gr_target_from_info(const gr_device_info *info);

/* State that several device states may share when their steps never run at once (the replay
 * service's bucket graphs, replayed one at a time by one worker), created once instead of once
 * per graph: the cuBLAS and cuBLASLt handles and one workspace per stream (when a plan needs the
 * library), and the scratch arena, one slice per stream, that ops use while they run (op->scratch:
 * the largest op on a stream sets the slice). */
typedef struct gr_devlib {
    void *cublas, *cublaslt, *workspace;
    size_t workspace_bytes; /* per stream */
    void *scratch;
    size_t scratch_bytes;   /* per stream */
    int nstreams;
    double bytes;           /* device bytes it allocated (workspace and scratch) */
} gr_devlib;

typedef struct gr_devstate {
    const gr_plan *plan;
    void **dptr;                       /* per plan buffer; NULL when the variant does not use it */
    gr_stream_t streams[GR_MAX_STREAMS];
    void **events;                     /* cudaEvent_t per fork/join event */
    const gr_devlib *lib;              /* cuBLAS/cuBLASLt handles and workspaces, or NULL when no
                                          op needs them: its own, or borrowed (lib_borrowed) */
    void **op_state;                   /* per op, from kernel setup() */
    unsigned char *borrowed;           /* per buffer: 1 when dptr is the caller's (not freed) */
    int sm_count;
    size_t allocated_bytes;
    int pdl;                           /* launch GR_KF_PDL kernels with PDL (--pdl) */
    void *comm;                        /* ncclComm_t of this device's rank (replay/tp.c sets it
                                          after create, before any launch); NULL otherwise */
    int lib_borrowed;                  /* lib is the caller's: not destroyed with the state */
} gr_devstate;

/* 1 when a plan has an op that needs the library state (GR_KF_LIBRARY). */
int gr_plan_needs_library(const gr_plan *plan);
/* blas: create the cuBLAS/cuBLASLt handles and workspaces; scratch_bytes: the arena's slice per
 * stream (0: none). */
gr_status gr_devlib_create(int nstreams, int blas, size_t scratch_bytes, gr_devlib **out,
                           gr_error *err);
/* After every device state that borrowed it is destroyed. */
void gr_devlib_destroy(gr_devlib *lib);

gr_status gr_devstate_create(const gr_plan *plan, int sm_count, gr_devstate **out, gr_error *err);
/* As gr_devstate_create, with buffer b at external[b] when that is not NULL (allocated by the
 * caller, at least the buffer's bytes, not freed by gr_devstate_destroy): the replay service's
 * bucket graphs share their buffers this way. */
gr_status gr_devstate_create_ext(const gr_plan *plan, int sm_count, void *const *external,
                                 gr_devstate **out, gr_error *err);
/* As gr_devstate_create_ext, borrowing lib's handles, workspace and scratch (when not NULL and
 * the plan needs them, and lib has at least the plan's streams, the handles when the plan needs
 * the library and a slice at least the plan's scratch) instead of creating its own. */
gr_status gr_devstate_create_shared(const gr_plan *plan, int sm_count, void *const *external,
                                    const gr_devlib *lib, gr_devstate **out, gr_error *err);
void gr_devstate_destroy(gr_devstate *dev);
/* (Re)initialise every used buffer from its init spec; buffers without one are poisoned with
 * 0xFF bytes (NaN for floats) so unwritten outputs fail verification. Synchronizes. */
gr_status gr_devstate_init_buffers(gr_devstate *dev, gr_error *err);
/* Poison only the buffers that no init covers (outputs, intermediates). Synchronizes. */
gr_status gr_devstate_poison(gr_devstate *dev, gr_error *err);
gr_status gr_devstate_download(const gr_devstate *dev, int buf, void *host, gr_error *err);
/* Host bytes (the buffer's size) into buffer buf, on the main stream, synchronised. */
gr_status gr_devstate_upload(const gr_devstate *dev, int buf, const void *host, gr_error *err);
/* The first `bytes` of buffer buf from host, the rest zeroed (a bucket's padding rows). */
gr_status gr_devstate_upload_part(const gr_devstate *dev, int buf, const void *host, size_t bytes,
                                  gr_error *err);
gr_launch_ctx gr_devstate_ctx(const gr_devstate *dev, const gr_op *op);

/* Fill device memory per an init spec (core/init.cu). */
gr_status gr_fill_device(void *dptr, gr_dtype t, int64_t n, const gr_init *init,
                         const void *host_src, gr_stream_t stream, gr_error *err);
/* The same fill on the host (for CPU tests and references without a device). Bitwise equal to
 * the device's for uniform/iota/const/randint/zeros/ones; normal and zipf use libm and may
 * differ in the last bits from the device's. */
gr_status gr_fill_host(void *host, gr_dtype t, int64_t n, const gr_init *init, gr_error *err);

/* Executor: enqueue one step of the plan (the one launch path for every mode). */
typedef struct gr_exec_hooks {
    void (*before_op)(void *user, const gr_op *op);
    void (*after_op)(void *user, const gr_op *op);
    void *user;
} gr_exec_hooks;

gr_status gr_exec_step(const gr_plan *plan, gr_devstate *dev, const gr_exec_hooks *hooks,
                       gr_error *err);
/* Enqueue ops [begin, end) only (piecewise capture). Fork/join pairs must lie inside. */
gr_status gr_exec_range(const gr_plan *plan, gr_devstate *dev, int begin, int end,
                        const gr_exec_hooks *hooks, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
