/* cupti-launchstat calibrate: this GPU's graph costs (the prediction's calibration row) measured
 * untraced with a chain of tiny kernels and graphs of spin kernels (calibrate.cu), node_us against
 * the tiny kernel's traced duration; the file `report --calibration` reads (calibrate.c). */
#ifndef GR_CALIBRATE_H
#define GR_CALIBRATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "core/stats.h"
#include "cupti_tools/predict.h"
#include "cupti_tools/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_CAL_MAX_ROUNDS 64
#define GR_CAL_COPY_BATCHES 10
#define GR_CAL_FILE_MAX (1u << 20)       /* a calibration file is a few KiB: 1 MiB at most */
#define GR_CAL_SPIN_KERNEL "gr_cal_spin" /* the spin kernel's name in a trace */
#define GR_CAL_TINY_KERNEL "gr_cal_tiny" /* the tiny kernel's name in a trace */
#define GR_CAL_TINY_THREADS 256          /* the tiny kernel: one block of 256 threads */
#define GR_CAL_NODE_MAX_US 3.0           /* the sanity check's bounds on node_us (measured, */
#define GR_CAL_NODE_MIN_US (-0.25)       /* before it is written as 0 when below 0) */

typedef struct gr_cal_opts {
    int device;      /* --device (0) */
    int rounds;      /* --rounds: interleaved rounds of every timed batch (21) */
    int chain;       /* tiny kernels in the chain graphs (500) */
    int wide;        /* nodes of the wide launch-cost graph (20) */
    int tiny_n;      /* floats each tiny kernel updates in place (256; 1 to 256) */
    double tl_us;    /* spin length in the launch-cost graphs (10) */
    double block_us; /* the blocker kernel ahead of each timed batch (1000) */
    int chain_launches, g1_launches, wide_launches; /* graph launches per batch (2, 100, 20) */
    size_t copy_bytes; /* the D2D copy (256 MiB; halved while it does not fit, 64 MiB at least) */
    int traced_count;  /* traced eager tiny kernels, after traced_warmup more (100, 10) */
    int traced_warmup;
    const char *trace_path; /* --trace: keep the traced reference's trace (NULL: a temporary) */
} gr_cal_opts;

void gr_cal_opts_default(gr_cal_opts *o);

/* What is measured: untraced figures per round (GPU us per graph launch between CUDA events,
 * host us per cudaGraphLaunch), the copies, and the traced reference. */
typedef struct gr_cal_raw {
    char gpu[128];
    int cc_major, cc_minor, sm_count, driver, runtime;
    double clock_attr_mhz;        /* cudaDevAttrClockRate */
    double clock_mhz[3];          /* measured (clock64 over %globaltimer): before the rounds,
                                     after them, in the traced phase */
    long long cycl, cycb;         /* spin cycles: launch-cost graphs; blocker */
    int rounds, chain, wide, pdl; /* pdl: the PDL chain was timed (compute capability >= 9.0
                                     and the tiny kernel built from sm_90 code) */
    int tiny_n, tiny_threads;     /* the tiny kernel: floats updated in place, one block */
    int tiny_ptx;                 /* the tiny kernel's PTX version (90: sm_90 code) */
    int chain_launches, g1_launches, wide_launches;
    double chain_tiny[GR_CAL_MAX_ROUNDS], chain_tiny_pdl[GR_CAL_MAX_ROUNDS]; /* tiny chains */
    double g1[GR_CAL_MAX_ROUNDS], gw[GR_CAL_MAX_ROUNDS];                     /* per launch, GPU */
    double host_g1[GR_CAL_MAX_ROUNDS], host_gw[GR_CAL_MAX_ROUNDS];           /* per launch, host */
    int host_limited; /* batches whose launches took longer to enqueue than the blocker ran */
    size_t copy_bytes;
    int copy_batches, copies_per_batch;
    double copy_gbps[GR_CAL_COPY_BATCHES]; /* bytes read + written per second, per batch */
    /* the traced reference: the tiny kernel's durations (us) as a trace records them */
    int traced_count, traced_warmup;
    gr_summary traced;
    /* the tiny kernels' buffer read back after the traced phase: every element is its start
     * value + the kernels run x c (a lost update: two tiny kernels overlapped) */
    long long tiny_kernels;         /* tiny kernels run on the buffer, counted by the host */
    int buffer_checked;             /* the buffer was read back */
    int buffer_bad;                 /* elements that did not hold the expected value */
    double buffer_got, buffer_want; /* the first bad element's value and the one expected */
    uint64_t trace_dropped;
    char trace_path[1024];
    int trace_kept;
} gr_cal_raw;

typedef struct gr_cal_result {
    gr_cal_raw raw;
    /* the row, median [p10, p90] over rounds */
    gr_summary node, launch, host, pdl, hbm;
    double node_us, launch_us, launch_host_us, pdl_us, hbm_gbps; /* written: medians, >= 0 */
    /* the derivation's intermediates */
    double period;     /* untraced us per tiny chain node, launch cost taken out (median) */
    double dur;        /* the tiny kernel's traced duration D (median) */
    double pdl_period; /* untraced us per node of the PDL chain, launch cost taken out */
    /* the sanity check: the chain's untraced per-node time less the traced tiny duration (the
     * node median) in (GR_CAL_NODE_MIN_US, GR_CAL_NODE_MAX_US). node_positive: above 0 (on the
     * H100 of run 85 it was not: -0.096 us, the traced duration a little longer than a chained
     * node; a note, and 0 is written) */
    int node_positive, node_above_min, node_below_max;
    int clock_moved; /* the SM clock probes differ by more than 2% */
    char date[32];   /* UTC, ISO 8601 */
    char notes[12][400];
    int nnotes;
} gr_cal_result;

/* ---- the GPU side (calibrate.cu) ---- */

typedef struct gr_cal_gpu gr_cal_gpu;

/* Selects the device, fills raw's device fields, measures the SM clock and builds the graphs.
 * GR_ERR_NODEV (exit 3) without a device, GR_ERR_USAGE for a --device that does not exist. */
gr_status gr_cal_gpu_open(const gr_cal_opts *o, gr_cal_raw *raw, gr_cal_gpu **out, gr_error *err);
/* The untraced figures: o->rounds interleaved rounds of every batch, then the copies. */
gr_status gr_cal_gpu_untraced(gr_cal_gpu *g, const gr_cal_opts *o, gr_cal_raw *raw, gr_error *err);
/* The traced phase's work (the caller traces it): `warmup` + `count` eager tiny kernels, each
 * synchronised; the SM clock around them. Then the tiny kernels' buffer is read back (into raw). */
gr_status gr_cal_gpu_traced_tiny(gr_cal_gpu *g, int warmup, int count, gr_cal_raw *raw,
                                 gr_error *err);
void gr_cal_gpu_close(gr_cal_gpu *g);

/* ---- the host side (calibrate.c) ---- */

/* Everything: the untraced figures, the traced reference (CUPTI in this process, started only
 * after every untraced figure), the derivation. */
gr_status gr_calibrate(const gr_cal_opts *o, gr_cal_result *res, gr_error *err);
/* The traced reference from a trace: the tiny kernels (GR_CAL_TINY_KERNEL) in start order,
 * `warmup` + `count` of them; the durations (us) past the warm-ups. GR_ERR_INPUT when the count
 * differs or the median is not above 0. */
gr_status gr_cal_traced_durations(const gr_trace *t, int warmup, int count, gr_summary *d,
                                  gr_error *err);
/* The row and its intermediates from res->raw (no GPU; tests give it made-up figures). */
void gr_cal_derive(gr_cal_result *res);
void gr_cal_print(FILE *f, const gr_cal_result *res);
/* json_t *: the calibration file (schema_version 1). */
void *gr_cal_json(const gr_cal_result *res);

/* A calibration file read back: the row `report --calibration` predicts with. row.gpu, row.cc
 * and row.source point into the struct. */
typedef struct gr_cal_file {
    char path[512], gpu[128], cc[16], date[64], tool[128];
    char source[1024];
    long long driver; /* -1: not given */
    gr_pred_calib row;
} gr_cal_file;

/* Reads FILE: a regular file of at most GR_CAL_FILE_MAX bytes, JSON with the keys of
 * gr_cal_json (schema_version, gpu, cc, date and the five figures required; tool, driver,
 * runtime, method, notes, figures and raw optional; no other key), each figure finite and in its
 * range. GR_ERR_INPUT / GR_ERR_IO naming the file and the key, with the fix. */
gr_status gr_cal_load(const char *path, gr_cal_file **out, gr_error *err);
gr_status gr_cal_load_text(const char *text, size_t len, const char *label, gr_cal_file **out,
                           gr_error *err);
void gr_cal_file_destroy(gr_cal_file *f);

#ifdef __cplusplus
}
#endif
#endif
