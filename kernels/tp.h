/* Tensor-parallel kernel family (issue #9): the `allreduce_sum` op (an NCCL all-reduce of one
 * buffer into another across the ranks of a communicator, captured into graphs like any launch)
 * and graphrun's binding to NCCL. NCCL is loaded at run time (dlopen of libnccl.so.2), so the
 * rest of graphrun neither needs nor links it: only `graphrun tp` and the gpu_tp suite do. Every
 * NCCL failure becomes a gr_error naming the call, ncclGetErrorString and ncclGetLastError.
 * Communicators are opaque handles (gr_nccl_comm: the ncclComm_t and a revoked flag) so that
 * callers need no NCCL header, and so that an aborted one fails cleanly instead of being used
 * after NCCL freed it. gr_launch_ctx.comm holds a gr_nccl_comm *. */
#ifndef GR_KERNELS_TP_H
#define GR_KERNELS_TP_H

#include "core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the NCCL binding ---- */

/* 1 when nccl.h was there at build time (GR_HAVE_NCCL). Without it every NCCL entry point fails
 * with GR_NCCL_NOT_BUILT (GR_ERR_USAGE, exit 2) and `graphrun tp` says so before anything else. */
int gr_nccl_built(void);
#define GR_NCCL_NOT_BUILT                                                                          \
    "this graphrun was built without NCCL (nccl.h not found at build time): install libnccl-dev "  \
    "and rebuild"

/* Load libnccl.so.2 once per process: $GR_NCCL_LIBRARY if set, else the dynamic loader's search
 * path (LD_LIBRARY_PATH, rpath), else the CUDA toolkit's lib64 found at build time, else a
 * Python wheel's copy (nvidia-nccl-*: site-packages/nvidia/NAME/lib) in a venv under /opt or in
 * /usr/local/lib/python3.X. Before loading it sets NCCL_NVLS_ENABLE=0 in the environment
 * (NVLink SHARP multicast stays off on the lent multi-GPU machines: a program that uses it can
 * take the host's shared GPUs out of service).
 * GR_ERR_NODEV (exit 3) naming every place tried when no library is found. */
gr_status gr_nccl_load(gr_error *err);
/* After a successful load: the library's file and version ("2.28.9"). */
const char *gr_nccl_path(void);
const char *gr_nccl_version(void);

/* ncclUniqueId, without NCCL's header (NCCL_UNIQUE_ID_BYTES = 128). */
typedef struct gr_nccl_id {
    char bytes[128];
} gr_nccl_id;

typedef struct gr_nccl_comm gr_nccl_comm;

gr_status gr_nccl_unique_id(gr_nccl_id *id, gr_error *err);
/* ncclCommInitRank on the calling thread's current device. Blocks until all `nranks` ranks of
 * the id have called it (from their own threads or processes). */
gr_status gr_nccl_comm_init(gr_nccl_comm **comm, int nranks, const gr_nccl_id *id, int rank,
                            gr_error *err);
/* ncclCommDestroy, and the handle freed; NULL is a no-op. Not for an aborted one. */
gr_status gr_nccl_comm_destroy(gr_nccl_comm *comm, gr_error *err);
/* From any thread: mark the handle revoked (every later use through it fails with an error
 * and touches no NCCL state), then ncclCommAbort, which releases threads blocked in its
 * operations and frees NCCL's communicator. The handle itself stays until gr_nccl_comm_free. */
void gr_nccl_comm_abort(gr_nccl_comm *comm);
void gr_nccl_comm_free(gr_nccl_comm *comm);
int gr_nccl_comm_revoked(const gr_nccl_comm *comm);
/* GR_OK, or the communicator's asynchronous error (ncclCommGetAsyncError) as a gr_error; an
 * error without asking NCCL when the handle was revoked. */
gr_status gr_nccl_comm_check(gr_nccl_comm *comm, const char *where, gr_error *err);

/* ---- the allreduce_sum kernel ---- */

/* op->ip of allreduce_sum */
enum {
    GR_TP_AR_COUNT = 0, /* elements */
    GR_TP_AR_DTYPE = 1, /* gr_dtype of both buffers */
    GR_TP_AR_RANKS = 2  /* the "ranks" attr: ranks of the communicator it must run on */
};

/* 1 for an allreduce_sum op: a collective, which every rank must enqueue (and capture). */
int gr_tp_is_collective(const gr_op *op);

/* The kernel family, registered in kernels/registry.c. */
extern const gr_kernel_def *const gr_tp_kernels[];

#ifdef __cplusplus
}
#endif
#endif
