/* cupti-launchstat calibrate: this GPU's graph costs (the prediction's calibration row) measured
 * untraced with spin kernels (calibrate.cu), against their durations as a trace records them;
 * the calibration file that `report --calibration` reads (calibrate.c). docs/predict.md. */
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

typedef struct gr_cal_opts {
    int device;          /* --device (0) */
    int rounds;          /* --rounds: interleaved rounds of every timed batch (21) */
    int chain;           /* nodes of the chain graphs (500) */
    int wide;            /* nodes of the wide launch-cost graph (20) */
    double t1_us, t2_us; /* the chains' two spin lengths (2, 4) */
    double tl_us;        /* spin length in the launch-cost graphs (10) */
    double block_us;     /* the blocker kernel ahead of each timed batch (1000) */
    int chain_launches, g1_launches, wide_launches; /* graph launches per batch (2, 100, 20) */
    size_t copy_bytes; /* the D2D copy (256 MiB; halved while it does not fit, 64 MiB at least) */
    int traced_count;  /* traced eager spins per length, after traced_warmup more (100, 10) */
    int traced_warmup;
    const char *trace_path; /* --trace: keep the traced reference's trace (NULL: a temporary) */
} gr_cal_opts;

void gr_cal_opts_default(gr_cal_opts *o);

/* What is measured: untraced figures per round (GPU us per graph launch between CUDA events,
 * host us per cudaGraphLaunch), the copies, and the traced reference. */
typedef struct gr_cal_raw {
    char gpu[128];
    int cc_major, cc_minor, sm_count, driver, runtime;
    double clock_attr_mhz;            /* cudaDevAttrClockRate */
    double clock_mhz[3];              /* measured (clock64 over %globaltimer): before the rounds,
                                         after them, in the traced phase */
    long long cyc1, cyc2, cycl, cycb; /* spin cycles: chains t1, t2; launch graphs; blocker */
    int rounds, chain, wide, pdl;     /* pdl: the PDL chain was timed (compute capability >= 9.0
                                         and the spin kernel built from sm_90 code) */
    int spin_ptx;                     /* the spin kernel's PTX version (90: sm_90 code) */
    int chain_launches, g1_launches, wide_launches;
    double chain1[GR_CAL_MAX_ROUNDS], chain2[GR_CAL_MAX_ROUNDS], chain1_pdl[GR_CAL_MAX_ROUNDS];
    double g1[GR_CAL_MAX_ROUNDS], gw[GR_CAL_MAX_ROUNDS];           /* per launch, GPU */
    double host_g1[GR_CAL_MAX_ROUNDS], host_gw[GR_CAL_MAX_ROUNDS]; /* per launch, host */
    int host_limited; /* batches whose launches took longer to enqueue than the blocker ran */
    size_t copy_bytes;
    int copy_batches, copies_per_batch;
    double copy_gbps[GR_CAL_COPY_BATCHES]; /* bytes read + written per second, per batch */
    /* the traced reference: the spin kernels' durations (us) as a trace records them */
    int traced_count, traced_warmup;
    gr_summary traced1, traced2;
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
    double period1, period2;       /* untraced us per chain node, launch cost taken out (medians) */
    double dur1, dur2;             /* traced durations at the untraced clock */
    double node_t1, node_t2;       /* node cost from each spin length (medians) */
    double clock_fix1, clock_fix2; /* the clock correction added to each traced duration */
    double pdl_period;             /* untraced us per node of the PDL chain */
    char date[32];                 /* UTC, ISO 8601 */
    char notes[8][400];
    int nnotes;
} gr_cal_result;

/* ---- the GPU side (calibrate.cu) ---- */

typedef struct gr_cal_gpu gr_cal_gpu;

/* Selects the device, fills raw's device fields, measures the SM clock and builds the graphs.
 * GR_ERR_NODEV (exit 3) without a device, GR_ERR_USAGE for a --device that does not exist. */
gr_status gr_cal_gpu_open(const gr_cal_opts *o, gr_cal_raw *raw, gr_cal_gpu **out, gr_error *err);
/* The untraced figures: o->rounds interleaved rounds of every batch, then the copies. */
gr_status gr_cal_gpu_untraced(gr_cal_gpu *g, const gr_cal_opts *o, gr_cal_raw *raw, gr_error *err);
/* The traced phase's work (the caller traces it): `warmup` + `count` eager spin kernels of the
 * first length, each synchronised, then as many of the second; the SM clock around them. */
gr_status gr_cal_gpu_spins(gr_cal_gpu *g, int warmup, int count, double *clock_mhz, gr_error *err);
void gr_cal_gpu_close(gr_cal_gpu *g);

/* ---- the host side (calibrate.c) ---- */

/* Everything: the untraced figures, the traced reference (CUPTI in this process, started only
 * after every untraced figure), the derivation. */
gr_status gr_calibrate(const gr_cal_opts *o, gr_cal_result *res, gr_error *err);
/* The traced reference from a trace: the spin kernels in start order, `warmup` + `count` of
 * each length; their durations (us) past the warm-ups. GR_ERR_INPUT when the count differs. */
gr_status gr_cal_traced_durations(const gr_trace *t, int warmup, int count, gr_summary *d1,
                                  gr_summary *d2, gr_error *err);
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
