/* The host side of cupti-launchstat calibrate: the run (untraced figures from calibrate.cu, then
 * the traced reference under the collector), the derivation of the row from the raw figures,
 * the text and the calibration file, and the file's strict reader for `report --calibration`. */
#include "cupti_tools/calibrate.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/cuda_check.h"
#include "core/fileio.h"
#include "cupti_tools/collector.h"

void gr_cal_opts_default(gr_cal_opts *o) {
    memset(o, 0, sizeof(*o));
    o->rounds = 21;
    o->chain = 500;
    o->wide = 20;
    o->t1_us = 2;
    o->t2_us = 4;
    o->tl_us = 10;
    o->block_us = 1000;
    o->chain_launches = 2;
    o->g1_launches = 100;
    o->wide_launches = 20;
    o->copy_bytes = (size_t)256 << 20;
    o->traced_count = 100;
    o->traced_warmup = 10;
}

/* ---- the traced reference ---- */

static int cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

gr_status gr_cal_traced_durations(const gr_trace *t, int warmup, int count, gr_summary *d1,
                                  gr_summary *d2, gr_error *err) {
    memset(d1, 0, sizeof(*d1));
    memset(d2, 0, sizeof(*d2));
    size_t want = 2 * (size_t)(warmup + count), n = 0, untimed = 0;
    /* (start, index) pairs sorted by start: the spins ran one at a time on one stream */
    int64_t *key = malloc((t->gpu.n + 1) * 2 * sizeof(int64_t));
    double *v = malloc(((size_t)count + 1) * 2 * sizeof(double));
    if (!key || !v) {
        free(key);
        free(v);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    for (size_t i = 0; i < t->gpu.n; i++) {
        const gr_tr_gpu *g = &t->gpu.v[i];
        if (g->kind != GR_GPU_KERNEL || !strstr(gr_trace_str(t, g->name), GR_CAL_SPIN_KERNEL))
            continue;
        if (g->incomplete) {
            untimed++;
            continue;
        }
        key[2 * n] = g->s;
        key[2 * n + 1] = (int64_t)i;
        n++;
    }
    gr_status st = GR_OK;
    if (n != want || untimed)
        st = gr_error_set(err, GR_ERR_INPUT, NULL,
                          "the traced reference holds %zu timed %s kernels (%zu more without "
                          "timestamps), expected %zu (%d warm-up and %d timed of each length): "
                          "CUPTI lost or merged kernel records",
                          n, GR_CAL_SPIN_KERNEL, untimed, want, warmup, count);
    if (st == GR_OK) {
        qsort(key, n, 2 * sizeof(int64_t), cmp_i64);
        for (int k = 0; k < 2; k++) {
            size_t first = (size_t)k * (size_t)(warmup + count) + (size_t)warmup;
            for (int i = 0; i < count; i++) {
                const gr_tr_gpu *g = &t->gpu.v[key[2 * (first + (size_t)i) + 1]];
                v[(size_t)k * (size_t)count + (size_t)i] = (double)(g->e - g->s) / 1000.0;
            }
        }
        *d1 = gr_summarize(v, (size_t)count);
        *d2 = gr_summarize(v + count, (size_t)count);
        if (!(d1->median > 0 && d2->median > d1->median))
            st = gr_error_set(err, GR_ERR_INPUT, NULL,
                              "the traced spin kernels last %.3f us (short) and %.3f us (long): "
                              "the long ones should take longer",
                              d1->median, d2->median);
    }
    free(key);
    free(v);
    return st;
}

static void probe_runtime(void) {
    (void)cudaDeviceSynchronize();
}

/* CUPTI in this process, after every untraced figure (as `graphrun run --trace` traces after its
 * untraced run): the spin kernels' durations as a trace records them. */
static gr_status traced_reference(gr_cal_gpu *g, const gr_cal_opts *o, gr_cal_raw *raw,
                                  gr_error *err) {
    char tmp[1100];
    const char *path = o->trace_path;
    if (!path) {
        const char *dir = getenv("TMPDIR");
        if (!dir || !*dir) dir = "/tmp";
        snprintf(tmp, sizeof(tmp), "%.1000s/gr_calibrate_XXXXXX.jsonl", dir);
        int fd = mkstemps(tmp, 6);
        if (fd < 0)
            return gr_error_set(err, GR_ERR_IO, tmp,
                                "cannot create the traced reference's temporary trace: %s (set "
                                "TMPDIR to a writable directory, or give --trace FILE)",
                                strerror(errno));
        close(fd);
        path = tmp;
    }
    snprintf(raw->trace_path, sizeof(raw->trace_path), "%s", path);
    raw->trace_kept = o->trace_path != NULL;
    raw->traced_count = o->traced_count;
    raw->traced_warmup = o->traced_warmup;
    gr_cupti_config c;
    gr_cupti_config_default(&c);
    c.trace_path = path;
    c.mode = "in-process";
    c.command = "cupti-launchstat calibrate (traced reference)";
    c.device = raw->gpu;
    char cc[16];
    snprintf(cc, sizeof(cc), "%d.%d", raw->cc_major, raw->cc_minor);
    c.cc = cc;
    c.runtime_version = raw->runtime;
    c.probe_runtime = probe_runtime;
    gr_status st = GR_OK;
    cudaError_t rc = cudaDeviceSynchronize();
    if (rc != cudaSuccess) st = gr_cuda_fail(rc, "cudaDeviceSynchronize", __FILE__, __LINE__, err);
    if (st == GR_OK && (st = gr_cupti_start(&c, err)) != GR_OK)
        gr_error_prefix(err, "the traced reference (the spin kernels' durations as a trace "
                             "records them, which node_us is measured against) could not be "
                             "traced: ");
    else if (st == GR_OK) {
        double mhz = 0;
        st = gr_cal_gpu_spins(g, o->traced_warmup, o->traced_count, &mhz, err);
        raw->clock_mhz[2] = mhz;
        rc = cudaDeviceSynchronize();
        if (rc != cudaSuccess && st == GR_OK)
            st = gr_cuda_fail(rc, "cudaDeviceSynchronize", __FILE__, __LINE__, err);
        gr_cupti_result res;
        gr_error se;
        gr_error_clear(&se);
        gr_status sst = gr_cupti_stop(st == GR_OK ? "calibrate: traced reference complete"
                                                  : "calibrate: traced reference failed",
                                      1, &res, &se);
        if (sst != GR_OK && st == GR_OK) st = gr_error_set(err, sst, NULL, "%s", se.msg);
    }
    if (st == GR_OK) {
        gr_trace *t = NULL;
        st = gr_trace_load(path, 0, &t, err);
        if (st == GR_OK) {
            raw->trace_dropped = t->dropped;
            st = gr_cal_traced_durations(t, o->traced_warmup, o->traced_count, &raw->traced1,
                                         &raw->traced2, err);
        }
        if (st != GR_OK) gr_error_prefix(err, "the traced reference %s: ", path);
        if (st == GR_ERR_INPUT) /* our own trace, unreadable: the measurement failed (exit 1) */
            st = err->code = GR_ERR_CUDA;
        gr_trace_destroy(t);
    }
    if (!o->trace_path) unlink(path);
    return st;
}

gr_status gr_calibrate(const gr_cal_opts *o, gr_cal_result *res, gr_error *err) {
    memset(res, 0, sizeof(*res));
    gr_cal_gpu *g = NULL;
    GR_TRY(gr_cal_gpu_open(o, &res->raw, &g, err));
    gr_status st = gr_cal_gpu_untraced(g, o, &res->raw, err);
    if (st == GR_OK) st = traced_reference(g, o, &res->raw, err);
    gr_cal_gpu_close(g);
    if (st != GR_OK) return st;
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(res->date, sizeof(res->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
    gr_cal_derive(res);
    return GR_OK;
}

/* ---- the derivation (docs/predict.md, "cupti-launchstat calibrate") ---- */

static void note(gr_cal_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(gr_cal_result *r, const char *fmt, ...) {
    if (r->nnotes >= (int)(sizeof(r->notes) / sizeof(r->notes[0]))) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->notes[r->nnotes++], sizeof(r->notes[0]), fmt, ap);
    va_end(ap);
}

static double median_of(const double *v, size_t n) {
    double tmp[GR_CAL_MAX_ROUNDS];
    if (n > GR_CAL_MAX_ROUNDS) n = GR_CAL_MAX_ROUNDS;
    memcpy(tmp, v, n * sizeof(double));
    return gr_summarize(tmp, n).median;
}

static double spin_us(long long cycles, double mhz) {
    return mhz > 0 ? (double)cycles / mhz : 0;
}

/* A written figure: the median, never negative (a negative one is noted and written as 0). */
static double written(gr_cal_result *r, const char *name, double v) {
    if (v >= 0) return v;
    note(r, "%s measured %.4f, below 0: written as 0 (the figures it is derived from are in raw)",
         name, v);
    return 0;
}

void gr_cal_derive(gr_cal_result *res) {
    const gr_cal_raw *r = &res->raw;
    size_t n = (size_t)(r->rounds < 0                   ? 0
                        : r->rounds > GR_CAL_MAX_ROUNDS ? GR_CAL_MAX_ROUNDS
                                                        : r->rounds);
    res->nnotes = 0;
    /* the SM clock: untraced = the mean of the probes around the rounds; traced = the probe
     * around the traced spins. The traced durations are moved to the untraced clock: a spin of N
     * cycles lasts N / f, so D(untraced) = D(traced) + N (1/f_untraced - 1/f_traced). */
    double fu = r->clock_mhz[0] > 0 && r->clock_mhz[1] > 0 ? (r->clock_mhz[0] + r->clock_mhz[1]) / 2
                : r->clock_mhz[0] > 0                      ? r->clock_mhz[0]
                                                           : r->clock_mhz[1];
    double ft = r->clock_mhz[2] > 0 ? r->clock_mhz[2] : fu;
    res->clock_fix1 = fu > 0 ? spin_us(r->cyc1, fu) - spin_us(r->cyc1, ft) : 0;
    res->clock_fix2 = fu > 0 ? spin_us(r->cyc2, fu) - spin_us(r->cyc2, ft) : 0;
    res->dur1 = r->traced1.median + res->clock_fix1;
    res->dur2 = r->traced2.median + res->clock_fix2;
    double launch[GR_CAL_MAX_ROUNDS], node[GR_CAL_MAX_ROUNDS], n1[GR_CAL_MAX_ROUNDS],
        n2[GR_CAL_MAX_ROUNDS], p1[GR_CAL_MAX_ROUNDS], p2[GR_CAL_MAX_ROUNDS], pdl[GR_CAL_MAX_ROUNDS],
        pp[GR_CAL_MAX_ROUNDS], host[GR_CAL_MAX_ROUNDS];
    /* launch: a graph of n nodes takes launch + n x P per launch, so 1 and `wide` nodes give
     * launch = L1 - (Lw - L1) / (wide - 1) */
    double wm1 = r->wide > 1 ? (double)(r->wide - 1) : 1;
    for (size_t i = 0; i < n; i++)
        launch[i] = r->g1[i] - (r->gw[i] - r->g1[i]) / wm1;
    res->launch = gr_summarize(launch, n);
    double L = res->launch.median, K = r->chain > 0 ? (double)r->chain : 1;
    /* node: a chain of K spins takes launch + K x (D + node) per launch */
    for (size_t i = 0; i < n; i++) {
        p1[i] = (r->chain1[i] - L) / K;
        p2[i] = (r->chain2[i] - L) / K;
        n1[i] = p1[i] - res->dur1;
        n2[i] = p2[i] - res->dur2;
        node[i] = (n1[i] + n2[i]) / 2;
        host[i] = r->host_g1[i];
    }
    res->node = gr_summarize(node, n);
    res->node_t1 = median_of(n1, n);
    res->node_t2 = median_of(n2, n);
    res->period1 = median_of(p1, n);
    res->period2 = median_of(p2, n);
    /* PDL: the chain with the attribute; it saves on each of its K - 1 dependent pairs (PDL does
     * not cross graph launches) */
    if (r->pdl) {
        for (size_t i = 0; i < n; i++) {
            pdl[i] = (r->chain1[i] - r->chain1_pdl[i]) / (K > 1 ? K - 1 : 1);
            pp[i] = (r->chain1_pdl[i] - L) / K;
        }
        res->pdl = gr_summarize(pdl, n);
        res->pdl_period = median_of(pp, n);
    } else {
        memset(&res->pdl, 0, sizeof(res->pdl));
        res->pdl_period = 0;
    }
    res->host = gr_summarize(host, n);
    double gb[GR_CAL_COPY_BATCHES];
    size_t nb = (size_t)(r->copy_batches < 0                     ? 0
                         : r->copy_batches > GR_CAL_COPY_BATCHES ? GR_CAL_COPY_BATCHES
                                                                 : r->copy_batches);
    memcpy(gb, r->copy_gbps, nb * sizeof(double));
    res->hbm = gr_summarize(gb, nb);

    res->node_us = written(res, "node_us", res->node.median);
    res->launch_us = written(res, "launch_us", res->launch.median);
    res->launch_host_us = written(res, "launch_host_us", res->host.median);
    res->pdl_us = r->pdl ? written(res, "pdl_us", res->pdl.median) : 0;
    res->hbm_gbps = res->hbm.median;
    if (!r->pdl && r->cc_major < 9)
        note(res,
             "pdl_us is 0, not measured: programmatic dependent launch needs compute capability "
             "9.0 (this GPU has %d.%d)",
             r->cc_major, r->cc_minor);
    else if (!r->pdl)
        note(res,
             "pdl_us is 0, not measured: this build's spin kernel runs from PTX %d.%d, without "
             "sm_90 code (griddepcontrol); build with 90 in CMAKE_CUDA_ARCHITECTURES",
             r->spin_ptx / 10, r->spin_ptx % 10);
    if (fabs(res->node_t1 - res->node_t2) > 0.1)
        note(res,
             "the node cost differs between the spin lengths: %.3f us at %.2f us, %.3f us at "
             "%.2f us (the model has one cost per node; their mean is written)",
             res->node_t1, spin_us(r->cyc1, fu), res->node_t2, spin_us(r->cyc2, fu));
    double lo = r->clock_mhz[0] < r->clock_mhz[1] ? r->clock_mhz[0] : r->clock_mhz[1];
    double hi = r->clock_mhz[0] < r->clock_mhz[1] ? r->clock_mhz[1] : r->clock_mhz[0];
    if (ft < lo) lo = ft;
    if (ft > hi) hi = ft;
    if (lo > 0 && hi / lo > 1.02)
        note(res,
             "the SM clock moved: %.0f MHz before the rounds, %.0f after, %.0f traced (the traced "
             "durations are moved to the untraced clock, %+.3f and %+.3f us; lock the clocks, "
             "nvidia-smi -lgc, for a steadier figure)",
             r->clock_mhz[0], r->clock_mhz[1], r->clock_mhz[2], res->clock_fix1, res->clock_fix2);
    if (r->host_limited > 0)
        note(res,
             "%d timed batch%s took longer to enqueue than the blocker kernel ran: the GPU may "
             "have waited for the host there (launch_us and launch_host_us are suspect)",
             r->host_limited, r->host_limited == 1 ? "" : "es");
    if (r->trace_dropped > 0)
        note(res, "CUPTI dropped %llu records in the traced reference",
             (unsigned long long)r->trace_dropped);
    if (r->copy_bytes > 0 && r->copy_bytes < ((size_t)256 << 20))
        note(res, "the copy is %.0f MiB, not 256 MiB: too little free device memory",
             (double)r->copy_bytes / 1048576.0);
}

/* ---- text ---- */

static const char *fmt_num(char *b, size_t size, double v) {
    double a = fabs(v);
    if (a >= 1000 || a == 0)
        snprintf(b, size, "%.0f", v);
    else if (a >= 100)
        snprintf(b, size, "%.1f", v);
    else if (a >= 10)
        snprintf(b, size, "%.2f", v);
    else
        snprintf(b, size, "%.3f", v);
    return b;
}

static void fig_line(FILE *f, const char *name, double written_v, const gr_summary *s,
                     const char *unit, const char *what) {
    char a[32], b[32], c[32];
    if (s->n == 0)
        fprintf(f, "  %-15s %8s  %-22s %-4s  %s\n", name, fmt_num(a, sizeof(a), written_v),
                "(not measured)", unit, what);
    else {
        char range[64];
        snprintf(range, sizeof(range), "[%s, %s]", fmt_num(b, sizeof(b), s->p10),
                 fmt_num(c, sizeof(c), s->p90));
        fprintf(f, "  %-15s %8s  %-22s %-4s  %s\n", name, fmt_num(a, sizeof(a), written_v), range,
                unit, what);
    }
}

static void raw_line(FILE *f, const char *label, const double *v, int n) {
    double tmp[GR_CAL_MAX_ROUNDS];
    size_t m = (size_t)(n < 0 ? 0 : n > GR_CAL_MAX_ROUNDS ? GR_CAL_MAX_ROUNDS : n);
    memcpy(tmp, v, m * sizeof(double));
    gr_summary s = gr_summarize(tmp, m);
    char a[32], b[32], c[32];
    fprintf(f, "    %-34s %10s  [%s, %s]\n", label, fmt_num(a, sizeof(a), s.median),
            fmt_num(b, sizeof(b), s.p10), fmt_num(c, sizeof(c), s.p90));
}

void gr_cal_print(FILE *f, const gr_cal_result *res) {
    const gr_cal_raw *r = &res->raw;
    double fu = (r->clock_mhz[0] + r->clock_mhz[1]) / 2;
    double t1 = spin_us(r->cyc1, fu), t2 = spin_us(r->cyc2, fu), tl = spin_us(r->cycl, fu);
    fprintf(f,
            "cupti-launchstat calibrate: graph costs of %s (cc %d.%d, %d SMs), CUDA driver %d, "
            "runtime %d, %s\n",
            r->gpu, r->cc_major, r->cc_minor, r->sm_count, r->driver, r->runtime, res->date);
    fprintf(f,
            "  untraced: CUDA events around batches of graph launches after warm-up, a blocker "
            "kernel ahead of each batch, %d interleaved rounds;\n  node_us against the spin "
            "kernels' traced durations (CUPTI in this process, after every untraced figure). "
            "docs/predict.md\n\n",
            r->rounds);
    fprintf(f, "  %-15s %8s  %-22s %-4s  %s\n", "figure", "median", "[p10, p90] over rounds",
            "unit", "what was measured");
    char what[512];
    snprintf(what, sizeof(what),
             "GPU time per kernel node beyond its traced duration: %d-node chains of spin "
             "kernels (%.2f and %.2f us), per node, less the spin's traced eager duration",
             r->chain, t1, t2);
    fig_line(f, "node_us", res->node_us, &res->node, "us", what);
    snprintf(what, sizeof(what),
             "GPU time per graph launch beyond its nodes: 1-node vs %d-node graphs of %.2f us "
             "spins launched back to back, L1 - (L%d - L1) / %d",
             r->wide, tl, r->wide, r->wide - 1);
    fig_line(f, "launch_us", res->launch_us, &res->launch, "us", what);
    fig_line(f, "launch_host_us", res->launch_host_us, &res->host, "us",
             "host time per cudaGraphLaunch of the 1-node graph (host clock around the launch "
             "calls)");
    snprintf(what, sizeof(what),
             "GPU time saved per dependent kernel pair by programmatic dependent launch: the "
             "%.2f us chain with and without the attribute, difference / %d",
             t1, r->chain - 1);
    fig_line(f, "pdl_us", res->pdl_us, &res->pdl, "us", what);
    snprintf(what, sizeof(what),
             "bytes read + written per second by cudaMemcpyAsync device to device of %.0f MiB "
             "(%d per batch, %d batches; not a copy kernel)",
             (double)r->copy_bytes / 1048576.0, r->copies_per_batch, r->copy_batches);
    fig_line(f, "hbm_gbps", res->hbm_gbps, &res->hbm, "GB/s", what);

    fprintf(f, "\n  from (GPU us per graph launch unless said; median [p10, p90] over rounds):\n");
    char l[96];
    snprintf(l, sizeof(l), "chain %d x %.2f us", r->chain, t1);
    raw_line(f, l, r->chain1, r->rounds);
    snprintf(l, sizeof(l), "chain %d x %.2f us", r->chain, t2);
    raw_line(f, l, r->chain2, r->rounds);
    if (r->pdl) {
        snprintf(l, sizeof(l), "chain %d x %.2f us, PDL", r->chain, t1);
        raw_line(f, l, r->chain1_pdl, r->rounds);
    }
    snprintf(l, sizeof(l), "graph 1 x %.2f us", tl);
    raw_line(f, l, r->g1, r->rounds);
    snprintf(l, sizeof(l), "graph %d x %.2f us", r->wide, tl);
    raw_line(f, l, r->gw, r->rounds);
    raw_line(f, "host per launch, 1-node graph", r->host_g1, r->rounds);
    snprintf(l, sizeof(l), "host per launch, %d-node graph", r->wide);
    raw_line(f, l, r->host_gw, r->rounds);
    char a[32], b[32], c[32], d[32];
    fprintf(f,
            "    traced spin durations (eager, one at a time, %d each after %d warm-up): %s us "
            "[%s, %s] and ",
            r->traced_count, r->traced_warmup, fmt_num(a, sizeof(a), r->traced1.median),
            fmt_num(b, sizeof(b), r->traced1.p10), fmt_num(c, sizeof(c), r->traced1.p90));
    fprintf(f, "%s us [%s, %s]\n", fmt_num(a, sizeof(a), r->traced2.median),
            fmt_num(b, sizeof(b), r->traced2.p10), fmt_num(c, sizeof(c), r->traced2.p90));
    fprintf(f,
            "    per node, untraced (launch taken out): %s and %s us; traced durations at the "
            "untraced clock: %s and %s us\n",
            fmt_num(a, sizeof(a), res->period1), fmt_num(b, sizeof(b), res->period2),
            fmt_num(c, sizeof(c), res->dur1), fmt_num(d, sizeof(d), res->dur2));
    fprintf(f, "    node cost at each spin length: %s and %s us (node_us is their mean)\n",
            fmt_num(a, sizeof(a), res->node_t1), fmt_num(b, sizeof(b), res->node_t2));
    if (r->pdl)
        fprintf(f, "    per node with PDL, untraced: %s us\n",
                fmt_num(a, sizeof(a), res->pdl_period));
    fprintf(f,
            "    SM clock: %.0f MHz before the rounds, %.0f after, %.0f traced (rated %.0f); "
            "spins of %lld, %lld and %lld cycles\n",
            r->clock_mhz[0], r->clock_mhz[1], r->clock_mhz[2], r->clock_attr_mhz, r->cyc1, r->cyc2,
            r->cycl);
    if (r->trace_kept) fprintf(f, "    traced reference kept in %s\n", r->trace_path);
    for (int i = 0; i < res->nnotes; i++)
        fprintf(f, "  NOTE: %s\n", res->notes[i]);
}

/* ---- the calibration file ---- */

static json_t *summary_json(const gr_summary *s, const char *measured) {
    json_t *o = json_pack("{s:f, s:f, s:f, s:I}", "median", s->median, "p10", s->p10, "p90", s->p90,
                          "n", (json_int_t)s->n);
    if (measured) json_object_set_new(o, "measured", json_string(measured));
    return o;
}

static json_t *rounds_json(const double *v, int n) {
    double tmp[GR_CAL_MAX_ROUNDS];
    size_t m = (size_t)(n < 0 ? 0 : n > GR_CAL_MAX_ROUNDS ? GR_CAL_MAX_ROUNDS : n);
    memcpy(tmp, v, m * sizeof(double));
    json_t *arr = json_array();
    for (size_t i = 0; i < m; i++)
        json_array_append_new(arr, json_real(v[i]));
    gr_summary s = gr_summarize(tmp, m);
    json_t *o = summary_json(&s, NULL);
    json_object_set_new(o, "per_round", arr);
    return o;
}

void *gr_cal_json(const gr_cal_result *res) {
    const gr_cal_raw *r = &res->raw;
    char cc[16], tool[96];
    snprintf(cc, sizeof(cc), "%d.%d", r->cc_major, r->cc_minor);
    snprintf(tool, sizeof(tool), "cupti-launchstat %s calibrate", GR_LAUNCHSTAT_VERSION);
    json_t *j =
        json_pack("{s:i, s:s, s:s, s:s, s:i, s:i, s:s}", "schema_version", 1, "tool", tool, "gpu",
                  r->gpu, "cc", cc, "driver", r->driver, "runtime", r->runtime, "date", res->date);
    json_object_set_new(j, "node_us", json_real(res->node_us));
    json_object_set_new(j, "launch_us", json_real(res->launch_us));
    json_object_set_new(j, "launch_host_us", json_real(res->launch_host_us));
    json_object_set_new(j, "pdl_us", json_real(res->pdl_us));
    json_object_set_new(j, "hbm_gbps", json_real(res->hbm_gbps));
    json_object_set_new(
        j, "method",
        json_string("untraced: CUDA events around batches of graph launches after warm-up, a "
                    "blocker kernel ahead of each batch, interleaved rounds, medians; node_us "
                    "against the spin kernels' traced eager durations (CUPTI in the same process "
                    "after every untraced figure); hbm_gbps from cudaMemcpyAsync device to "
                    "device; docs/predict.md"));
    json_t *notes = json_array();
    for (int i = 0; i < res->nnotes; i++)
        json_array_append_new(notes, json_string(res->notes[i]));
    json_object_set_new(j, "notes", notes);
    double fu = (r->clock_mhz[0] + r->clock_mhz[1]) / 2;
    double t1 = spin_us(r->cyc1, fu), t2 = spin_us(r->cyc2, fu), tl = spin_us(r->cycl, fu);
    char m[512];
    json_t *fig = json_object();
    snprintf(m, sizeof(m),
             "%d-node chains of %.2f and %.2f us spins, GPU us per node less the spin's traced "
             "duration, mean of the two",
             r->chain, t1, t2);
    json_object_set_new(fig, "node_us", summary_json(&res->node, m));
    snprintf(m, sizeof(m), "1-node vs %d-node graphs of %.2f us spins: L1 - (L%d - L1) / %d",
             r->wide, tl, r->wide, r->wide - 1);
    json_object_set_new(fig, "launch_us", summary_json(&res->launch, m));
    json_object_set_new(
        fig, "launch_host_us",
        summary_json(&res->host, "host clock around cudaGraphLaunch of the 1-node graph"));
    snprintf(m, sizeof(m), "%.2f us chain without - with PDL, per dependent pair (/ %d)%s", t1,
             r->chain - 1, r->pdl ? "" : ": not measured (compute capability < 9.0)");
    json_object_set_new(fig, "pdl_us", summary_json(&res->pdl, m));
    snprintf(m, sizeof(m), "cudaMemcpyAsync device to device, %.0f MiB, bytes read + written",
             (double)r->copy_bytes / 1048576.0);
    json_object_set_new(fig, "hbm_gbps", summary_json(&res->hbm, m));
    json_object_set_new(j, "figures", fig);

    json_t *raw = json_object();
    json_object_set_new(raw, "sm_count", json_integer(r->sm_count));
    json_object_set_new(raw, "spin_ptx", json_integer(r->spin_ptx));
    json_object_set_new(raw, "clock_mhz",
                        json_pack("{s:f, s:f, s:f, s:f}", "rated", r->clock_attr_mhz, "before",
                                  r->clock_mhz[0], "after", r->clock_mhz[1], "traced",
                                  r->clock_mhz[2]));
    json_object_set_new(raw, "spin_cycles",
                        json_pack("{s:I, s:I, s:I, s:I}", "t1", (json_int_t)r->cyc1, "t2",
                                  (json_int_t)r->cyc2, "launch", (json_int_t)r->cycl, "blocker",
                                  (json_int_t)r->cycb));
    json_object_set_new(raw, "spin_us",
                        json_pack("{s:f, s:f, s:f}", "t1", t1, "t2", t2, "launch", tl));
    json_object_set_new(raw, "rounds", json_integer(r->rounds));
    json_object_set_new(raw, "chain_nodes", json_integer(r->chain));
    json_object_set_new(raw, "wide_nodes", json_integer(r->wide));
    json_object_set_new(raw, "launches_per_batch",
                        json_pack("{s:i, s:i, s:i}", "chain", r->chain_launches, "graph1",
                                  r->g1_launches, "wide", r->wide_launches));
    json_object_set_new(raw, "chain_t1_us", rounds_json(r->chain1, r->rounds));
    json_object_set_new(raw, "chain_t2_us", rounds_json(r->chain2, r->rounds));
    json_object_set_new(raw, "chain_t1_pdl_us",
                        r->pdl ? rounds_json(r->chain1_pdl, r->rounds) : json_null());
    json_object_set_new(raw, "graph1_us", rounds_json(r->g1, r->rounds));
    json_object_set_new(raw, "graph_wide_us", rounds_json(r->gw, r->rounds));
    json_object_set_new(raw, "host_graph1_us", rounds_json(r->host_g1, r->rounds));
    json_object_set_new(raw, "host_graph_wide_us", rounds_json(r->host_gw, r->rounds));
    json_object_set_new(raw, "host_limited_batches", json_integer(r->host_limited));
    json_t *gb = json_array();
    for (int i = 0; i < r->copy_batches && i < GR_CAL_COPY_BATCHES; i++)
        json_array_append_new(gb, json_real(r->copy_gbps[i]));
    json_object_set_new(raw, "copy",
                        json_pack("{s:I, s:i, s:i, s:o}", "bytes", (json_int_t)r->copy_bytes,
                                  "batches", r->copy_batches, "per_batch", r->copies_per_batch,
                                  "gbps", gb));
    json_t *tr =
        json_pack("{s:i, s:i, s:o, s:o, s:I}", "count", r->traced_count, "warmup", r->traced_warmup,
                  "t1_us", summary_json(&r->traced1, NULL), "t2_us",
                  summary_json(&r->traced2, NULL), "dropped", (json_int_t)r->trace_dropped);
    json_object_set_new(tr, "trace", r->trace_kept ? json_string(r->trace_path) : json_null());
    json_object_set_new(raw, "traced", tr);
    json_object_set_new(
        raw, "derived",
        json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "period_t1_us", res->period1,
                  "period_t2_us", res->period2, "traced_t1_at_untraced_clock_us", res->dur1,
                  "traced_t2_at_untraced_clock_us", res->dur2, "node_t1_us", res->node_t1,
                  "node_t2_us", res->node_t2, "clock_fix_t1_us", res->clock_fix1, "clock_fix_t2_us",
                  res->clock_fix2, "pdl_period_us", res->pdl_period));
    json_object_set_new(j, "raw", raw);
    return j;
}

/* ---- reading it back: hostile input ---- */

#define CAL_HOW                                                                                    \
    "(a calibration file is what `cupti-launchstat calibrate -o FILE` writes; docs/predict.md, "   \
    "\"The calibration file\")"

static const struct {
    const char *key;
    double lo, hi;
    int lo_open; /* the range excludes lo */
    const char *what;
} cal_figs[] = {
    {"node_us", 0, 100, 0, "microseconds of GPU time per kernel node"},
    {"launch_us", 0, 1000, 0, "microseconds of GPU time per graph launch"},
    {"launch_host_us", 0, 1000, 0, "microseconds of host time per graph launch"},
    {"pdl_us", 0, 100, 0, "microseconds saved per dependent kernel pair"},
    {"hbm_gbps", 0, 100000, 1, "GB/s read + written"},
};

/* A string a terminal shows as it is: no control characters, at most max bytes. */
static int plain_string(const json_t *v, size_t max) {
    if (!json_is_string(v)) return 0;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0 || n > max || strlen(s) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) return 0;
    return 1;
}

static const char *type_of(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

static int cc_ok(const char *s) {
    size_t a = strspn(s, "0123456789");
    if (a == 0 || a > 3 || s[a] != '.') return 0;
    size_t b = strspn(s + a + 1, "0123456789");
    return b > 0 && b <= 3 && s[a + 1 + b] == '\0';
}

static void check_string(const json_t *j, const char *key, size_t max, int required,
                         const char *label, gr_error *err) {
    json_t *v = json_object_get(j, key);
    if (!v) {
        if (required)
            gr_error_set(err, GR_ERR_INPUT, label, "key \"%s\" is missing %s", key, CAL_HOW);
        return;
    }
    if (!json_is_string(v))
        gr_error_set(err, GR_ERR_INPUT, label, "key \"%s\" must be a string, got %s", key,
                     type_of(v));
    else if (!plain_string(v, max))
        gr_error_set(err, GR_ERR_INPUT, label,
                     "key \"%s\" must be a non-empty string of at most %zu bytes without control "
                     "characters (it has %zu bytes)",
                     key, max, json_string_length(v));
}

static void check_int(const json_t *j, const char *key, long long lo, long long hi,
                      const char *label, gr_error *err) {
    json_t *v = json_object_get(j, key);
    if (!v) return;
    if (!json_is_integer(v))
        gr_error_set(err, GR_ERR_INPUT, label, "key \"%s\" must be a whole number, got %s", key,
                     type_of(v));
    else if (json_integer_value(v) < lo || json_integer_value(v) > hi)
        gr_error_set(err, GR_ERR_INPUT, label, "key \"%s\" is %lld: it takes %lld to %lld", key,
                     (long long)json_integer_value(v), lo, hi);
}

gr_status gr_cal_load_text(const char *text, size_t len, const char *label, gr_cal_file **out,
                           gr_error *err) {
    *out = NULL;
    json_error_t je;
    json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!j)
        return gr_error_at(err, GR_ERR_INPUT, label, je.line, je.column,
                           "not a calibration file: %s (JSON, as `cupti-launchstat calibrate -o "
                           "FILE` writes it)",
                           je.text);
    if (!json_is_object(j)) {
        gr_error_set(err, GR_ERR_INPUT, label, "the top level is %s, not an object %s", type_of(j),
                     CAL_HOW);
        json_decref(j);
        return GR_ERR_INPUT;
    }
    int before = err->count;
    json_t *sv = json_object_get(j, "schema_version");
    if (!sv)
        gr_error_set(err, GR_ERR_INPUT, label, "key \"schema_version\" is missing %s", CAL_HOW);
    else if (!json_is_integer(sv))
        gr_error_set(err, GR_ERR_INPUT, label,
                     "key \"schema_version\" must be the integer 1, got %s", type_of(sv));
    else if (json_integer_value(sv) != 1)
        gr_error_set(err, GR_ERR_INPUT, label,
                     "schema_version %lld: this cupti-launchstat reads version 1 (calibrate again "
                     "with this version, or use the cupti-launchstat that wrote it)",
                     (long long)json_integer_value(sv));
    check_string(j, "gpu", 127, 1, label, err);
    check_string(j, "cc", 15, 1, label, err);
    json_t *ccv = json_object_get(j, "cc");
    if (ccv && plain_string(ccv, 15) && !cc_ok(json_string_value(ccv)))
        gr_error_set(err, GR_ERR_INPUT, label,
                     "key \"cc\" is \"%s\": a compute capability is MAJOR.MINOR, e.g. \"9.0\"",
                     json_string_value(ccv));
    check_string(j, "date", 63, 1, label, err);
    check_string(j, "tool", 127, 0, label, err);
    check_string(j, "method", 4096, 0, label, err);
    check_int(j, "driver", 0, 100000000, label, err);
    check_int(j, "runtime", 0, 100000000, label, err);
    json_t *notes = json_object_get(j, "notes");
    if (notes) {
        int ok = json_is_array(notes) && json_array_size(notes) <= 64;
        for (size_t i = 0; ok && i < json_array_size(notes); i++)
            ok = plain_string(json_array_get(notes, i), 4096);
        if (!ok)
            gr_error_set(err, GR_ERR_INPUT, label,
                         "key \"notes\" must be an array of at most 64 strings without control "
                         "characters, got %s",
                         type_of(notes));
    }
    const char *objs[] = {"figures", "raw"};
    for (size_t k = 0; k < 2; k++) {
        json_t *v = json_object_get(j, objs[k]);
        if (v && !json_is_object(v))
            gr_error_set(err, GR_ERR_INPUT, label, "key \"%s\" must be an object, got %s", objs[k],
                         type_of(v));
    }
    double val[5] = {0};
    for (size_t k = 0; k < sizeof(cal_figs) / sizeof(cal_figs[0]); k++) {
        json_t *v = json_object_get(j, cal_figs[k].key);
        if (!v) {
            gr_error_set(err, GR_ERR_INPUT, label, "key \"%s\" (%s) is missing %s", cal_figs[k].key,
                         cal_figs[k].what, CAL_HOW);
            continue;
        }
        if (!json_is_number(v)) {
            gr_error_set(err, GR_ERR_INPUT, label, "key \"%s\" must be a number (%s), got %s",
                         cal_figs[k].key, cal_figs[k].what, type_of(v));
            continue;
        }
        double x = json_number_value(v);
        int in = isfinite(x) && (cal_figs[k].lo_open ? x > cal_figs[k].lo : x >= cal_figs[k].lo) &&
                 x < cal_figs[k].hi;
        if (!in) {
            gr_error_set(err, GR_ERR_INPUT, label,
                         "key \"%s\" is %g: out of range, it takes %s from %g (%s) to %g "
                         "(excluded); measure it with `cupti-launchstat calibrate -o FILE`",
                         cal_figs[k].key, x, cal_figs[k].what, cal_figs[k].lo,
                         cal_figs[k].lo_open ? "excluded" : "included", cal_figs[k].hi);
            continue;
        }
        val[k] = x;
    }
    /* unknown keys: JSON_STRICT over every key of schema 1 (each optional here: the missing
     * ones were named above) */
    json_t *o[16];
    if (json_unpack_ex(j, &je, JSON_STRICT,
                       "{s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o, s?o, "
                       "s?o, s?o}",
                       "schema_version", &o[0], "tool", &o[1], "gpu", &o[2], "cc", &o[3], "driver",
                       &o[4], "runtime", &o[5], "date", &o[6], "node_us", &o[7], "launch_us", &o[8],
                       "launch_host_us", &o[9], "pdl_us", &o[10], "hbm_gbps", &o[11], "method",
                       &o[12], "notes", &o[13], "figures", &o[14], "raw", &o[15]) != 0)
        gr_error_set(err, GR_ERR_INPUT, label,
                     "keys that a calibration file does not hold (%s); schema_version 1 holds "
                     "schema_version, tool, gpu, cc, driver, runtime, date, node_us, launch_us, "
                     "launch_host_us, pdl_us, hbm_gbps, method, notes, figures and raw",
                     je.text);
    if (err->count > before) {
        json_decref(j);
        return err->code;
    }
    gr_cal_file *f = calloc(1, sizeof(*f));
    if (!f) {
        json_decref(j);
        return gr_error_set(err, GR_ERR_NOMEM, label, "out of host memory");
    }
    snprintf(f->path, sizeof(f->path), "%s", label);
    snprintf(f->gpu, sizeof(f->gpu), "%s", json_string_value(json_object_get(j, "gpu")));
    snprintf(f->cc, sizeof(f->cc), "%s", json_string_value(json_object_get(j, "cc")));
    snprintf(f->date, sizeof(f->date), "%s", json_string_value(json_object_get(j, "date")));
    const char *tool = json_string_value(json_object_get(j, "tool"));
    snprintf(f->tool, sizeof(f->tool), "%s", tool ? tool : "unknown tool");
    json_t *dv = json_object_get(j, "driver");
    f->driver = dv ? (long long)json_integer_value(dv) : -1;
    json_decref(j);
    f->row.gpu = f->gpu;
    f->row.cc = f->cc;
    f->row.node_us = val[0];
    f->row.launch_us = val[1];
    f->row.launch_host_us = val[2];
    f->row.pdl_us = val[3];
    f->row.hbm_gbps = val[4];
    snprintf(f->source, sizeof(f->source),
             "calibration file %s: %s (cc %s), %s, %s; node %.3f us, launch %.3f us, host %.3f "
             "us, PDL %.3f us, %.0f GB/s",
             f->path, f->gpu, f->cc, f->date, f->tool, val[0], val[1], val[2], val[3], val[4]);
    f->row.source = f->source;
    *out = f;
    return GR_OK;
}

gr_status gr_cal_load(const char *path, gr_cal_file **out, gr_error *err) {
    *out = NULL;
    if (!path || !*path)
        return gr_error_set(err, GR_ERR_USAGE, NULL,
                            "an empty path was given for the calibration file");
    /* before anything is opened: a regular file of a calibration file's size (a FIFO would
     * block, /dev/zero never ends, a directory or a trace is the wrong file) */
    struct stat sb;
    if (stat(path, &sb) != 0)
        return gr_error_set(err, GR_ERR_IO, path,
                            "cannot open the calibration file: %s (check the path)",
                            strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return gr_error_set(
            err, GR_ERR_INPUT, path,
            "is %s, not a regular file: the calibration file must be a file on disk %s",
            S_ISDIR(sb.st_mode)                          ? "a directory"
            : S_ISFIFO(sb.st_mode)                       ? "a FIFO (named pipe)"
            : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device"
                                                         : "not a regular file",
            CAL_HOW);
    if ((uint64_t)sb.st_size > GR_CAL_FILE_MAX)
        return gr_error_set(
            err, GR_ERR_INPUT, path,
            "is %llu bytes, over the 1 MiB a calibration file may hold (it is a few "
            "KiB): is this the right file? %s",
            (unsigned long long)sb.st_size, CAL_HOW);
    FILE *f = NULL;
    GR_TRY(gr_file_open(path, GR_FILE_WORKLOAD, &f, NULL, err));
    char *text = NULL;
    size_t len = 0;
    /* bounded again while reading: the file may have grown since the stat */
    gr_status st = gr_stream_read_all(f, path, GR_CAL_FILE_MAX, &text, &len, err);
    fclose(f);
    if (st != GR_OK) return st;
    st = gr_cal_load_text(text, len, path, out, err);
    free(text);
    return st;
}

void gr_cal_file_destroy(gr_cal_file *f) {
    free(f);
}
