/* `graphrun tp` (issue #9): the decode step with tensor parallelism over P GPUs. One process,
 * one host thread per GPU: each rank thread owns its device, its NCCL communicator
 * (ncclGetUniqueId + ncclCommInitRank), its device state and stream, runs its rank plan eagerly,
 * captures it (the all-reduces included) into its own graph in thread-local capture mode,
 * replays it and times it with CUDA events on its stream; the slowest rank is the step time.
 * The same step is run on one GPU unsharded (decode_step, fused) for the comparison, and the
 * results are checked against it and against the CPU references (unsharded and sharded). Why
 * threads and not processes, and how communication is measured: docs/tensor_parallel.md. */
#ifndef GR_TP_H
#define GR_TP_H

#include <stdio.h>

#include "capture/capture.h"
#include "core/device.h"
#include "replay/pipeline.h"
#include "replay/timing.h"
#include "replay/tp_shard.h"
#include "replay/verify.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_TP_MAX_RUNS 8

typedef struct gr_tp_opts {
    /* as graphrun run (replay/pipeline.h): iters, warmup, batches, capture mode (default
     * thread-local: one capturing thread per GPU), cpu_reference (unsharded and sharded CPU
     * references), bandwidth (every device's bandwidth probe: the HBM floor), steps (consecutive
     * steps checked without re-initialisation), rtol (every check's tolerance; 0: the base
     * workload's for x), progress (rank 0's bar), pdl (--pdl) */
    gr_run_opts run;
    int comm_share;               /* also time the step without its all-reduces, and the
                                     all-reduces alone (default on) */
    int single_timing;            /* time the unsharded step on one GPU too (default on) */
    int devices[GR_TP_MAX_RANKS]; /* device of rank p when ndevices > 0, else device p */
    int ndevices;
} gr_tp_opts;

void gr_tp_opts_default(gr_tp_opts *o);

/* What is timed per rank. COMPUTE: the step without its collectives (ranks do not wait for
 * each other); COMM: the collectives alone, back to back. */
typedef enum gr_tp_mode {
    GR_TP_EAGER = 0,
    GR_TP_GRAPH,
    GR_TP_EAGER_COMPUTE,
    GR_TP_GRAPH_COMPUTE,
    GR_TP_EAGER_COMM,
    GR_TP_GRAPH_COMM,
    GR_TP_NMODES
} gr_tp_mode;

const char *gr_tp_mode_name(gr_tp_mode m);

typedef struct gr_tp_rank_result {
    int rank, device;
    gr_device_info info;
    gr_bandwidth bw;
    int have_bw;
    double bytes_per_step; /* the rank plan's bytes read + written */
    double floor_us;       /* the rank plan's bytes read / read bw + written / write bw */
    gr_graph graph, graph_compute, graph_comm; /* counts and host times; handles are gone */
    gr_timing t[GR_TP_NMODES];
    int timed[GR_TP_NMODES];
} gr_tp_rank_result;

/* One tensor-parallel degree. */
typedef struct gr_tp_result {
    int P;
    int status; /* gr_status */
    char error[2048];
    int kernels_per_step;     /* launches per step of a rank plan, all-reduces counted as one */
    int collectives_per_step; /* all-reduces per step */
    gr_tp_rank_result rank[GR_TP_MAX_RANKS];
    gr_checks checks;
    int verified;
    double sharded_reference_ms;
    double shard_host_bytes; /* host bytes copied to build the shards (columns, x) */
    int timed;
} gr_tp_result;

/* The unsharded step on one GPU (decode_step, variant fused). */
typedef struct gr_tp_single {
    int status;
    char error[1024];
    int device;
    gr_device_info info;
    gr_bandwidth bw;
    int have_bw;
    int kernels_per_step;
    double bytes_per_step, floor_us;
    gr_graph graph;
    gr_timing eager, graph_t;
    int timed;
    gr_checks checks;
    int verified;
    double reference_ms;
} gr_tp_single;

typedef struct gr_tp_report {
    char workload[128], workload_path[512], base[128], base_path[1024], params[1024];
    gr_tp_shape shape;
    gr_tp_opts opts;
    char nccl_path[1024], nccl_version[32];
    char date[64];
    int visible_devices;
    gr_tp_single single;
    gr_tp_result runs[GR_TP_MAX_RUNS];
    int nruns;
} gr_tp_report;

/* Frees what a report holds (its checks); the report itself stays. */
void gr_tp_report_clear(gr_tp_report *r);

/* ---- the checks of one P (host only: the CPU tests drive them with simulated outputs) ---- */

/* What the ranks are checked against; NULL skips the checks that need it. */
typedef struct gr_tp_refs {
    const void *single_x;                    /* the unsharded step on one GPU, eager */
    const void *ref_x, *ref_act, *ref_tdown; /* unsharded CPU reference: x, act and the
                                                last layer's tdown.{L-1} */
    void *sref_x, *sref_act, *sref_tdown;    /* sharded CPU reference, reassembled (owned:
                                                gr_tp_refs_free_sharded) */
    double rtol;
} gr_tp_refs;

/* The sharded CPU reference of `steps` steps from the rank plans' inits (their bound data),
 * reassembled into refs->sref_*: rank 0's x, act gathered over ranks, tdown summed. With the
 * unsharded reference in refs, appends 3 checks to x (x, act, tdown: "shard ref vs ref"). */
gr_status gr_tp_sharded_reference(const gr_tp_plans *tp, int steps, gr_tp_refs *refs,
                                  gr_tp_result *x, gr_error *err);
void gr_tp_refs_free_sharded(gr_tp_refs *refs);

/* What the ranks produced, host copies per rank: x after the eager steps and after the graph
 * replays, the last layer's act and tdown after the eager steps. */
typedef struct gr_tp_outputs {
    const void *x_eager[GR_TP_MAX_RANKS], *x_graph[GR_TP_MAX_RANKS];
    const void *act[GR_TP_MAX_RANKS], *tdown[GR_TP_MAX_RANKS];
} gr_tp_outputs;

/* Appends the checks of the ranks' outputs to x and sets x->verified (over all of x's checks):
 * graph vs eager on every rank, every rank's x against rank 0's, rank 0's against the single
 * GPU, and (when refs has them) against the unsharded reference and the sharded one: x eager
 * and graph, act gathered, tdown summed. P + (P - 1) + 1 checks, + 1 + 4 with references. */
gr_status gr_tp_check_outputs(const gr_tp_plans *tp, const gr_tp_outputs *out,
                              const gr_tp_refs *refs, gr_tp_result *x, gr_error *err);

/* CUDA devices this process sees (CUDA_VISIBLE_DEVICES applies); 0 without a driver. */
int gr_tp_visible_devices(void);

/* Every P in Ps (each P checked first: --tp, devices), then the single-GPU step, then each P:
 * rank plans, shards, sharded reference, the rank threads. A failing P is recorded in its
 * result and the next P still runs unless the failure was a CUDA error; the worst status is
 * returned. GR_ERR_NODEV (exit 3) without enough devices or without NCCL. */
gr_status gr_tp_run(const gr_tp_req *req, const int *Ps, int nP, const gr_tp_opts *o,
                    gr_tp_report *r, gr_error *err);

/* Numbers derived from one P's timings: the slowest rank's median per mode, the exposed
 * communication share, the launch overhead removed by the graph, the HBM floor. */
typedef struct gr_tp_derived {
    int valid;
    double us[GR_TP_NMODES];   /* slowest rank's median us/step; 0 when not timed */
    int slowest[GR_TP_NMODES]; /* which rank */
    double comm_share_eager;   /* 1 - eager_compute / eager: time the step loses to the
                                  all-reduces (their own time and the waits on other ranks) */
    double comm_share_graph;   /* the same in the graph */
    double comm_alone_graph;   /* graph_comm / graph: the all-reduces alone */
    double removed_us;         /* eager - graph per step */
    double removed_per_launch_us;
    double removed_share_min; /* (eager - graph) / (eager - floor): a lower bound on the share
                                 of the eager step's launch overhead the graph removes */
    double floor_us;          /* the largest of the ranks' HBM floors */
    double eager_over_floor, graph_over_floor;
    double vs_single_graph; /* single-GPU graph us / this P's graph us */
} gr_tp_derived;

void gr_tp_derive(const gr_tp_report *r, const gr_tp_result *x, gr_tp_derived *d);

void gr_tp_report_text(FILE *f, const gr_tp_report *r);
void *gr_tp_report_json(const gr_tp_report *r); /* json_t *, schema_version 1 */

#ifdef __cplusplus
}
#endif
#endif
