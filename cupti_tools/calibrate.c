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
    o->tiny_n = 256;
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

static int ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The tiny kernel's name as a whole word ("gr_cal_tiny", "gr_cal_tiny(float*, int, float)"), not
 * gr_cal_tiny_init. */
static int is_tiny(const char *name) {
    size_t k = strlen(GR_CAL_TINY_KERNEL);
    for (const char *p = name ? strstr(name, GR_CAL_TINY_KERNEL) : NULL; p;
         p = strstr(p + 1, GR_CAL_TINY_KERNEL))
        if ((p == name || !ident_char(p[-1])) && !ident_char(p[k])) return 1;
    return 0;
}

gr_status gr_cal_traced_durations(const gr_trace *t, int warmup, int count, gr_summary *d,
                                  gr_error *err) {
    memset(d, 0, sizeof(*d));
    if (warmup < 0) warmup = 0;
    if (count < 1) count = 1;
    size_t want = (size_t)(warmup + count), n = 0, untimed = 0;
    /* (start, index) pairs sorted by start: the tiny kernels ran one at a time on one stream */
    int64_t *key = malloc((t->gpu.n + 1) * 2 * sizeof(int64_t));
    double *v = malloc(((size_t)count + 1) * sizeof(double));
    if (!key || !v) {
        free(key);
        free(v);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    for (size_t i = 0; i < t->gpu.n; i++) {
        const gr_tr_gpu *g = &t->gpu.v[i];
        if (g->kind != GR_GPU_KERNEL || !is_tiny(gr_trace_str(t, g->name))) continue;
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
                          "timestamps), expected %zu (%d warm-up and %d timed): CUPTI lost or "
                          "merged kernel records",
                          n, GR_CAL_TINY_KERNEL, untimed, want, warmup, count);
    if (st == GR_OK) {
        qsort(key, n, 2 * sizeof(int64_t), cmp_i64);
        for (int i = 0; i < count; i++) {
            const gr_tr_gpu *g = &t->gpu.v[key[2 * ((size_t)warmup + (size_t)i) + 1]];
            v[i] = (double)(g->e - g->s) / 1000.0;
        }
        *d = gr_summarize(v, (size_t)count);
        if (!(d->median > 0))
            st = gr_error_set(err, GR_ERR_INPUT, NULL,
                              "the traced %s kernels last %.3f us (median): a kernel's traced "
                              "duration is above 0",
                              GR_CAL_TINY_KERNEL, d->median);
    }
    free(key);
    free(v);
    return st;
}

static void probe_runtime(void) {
    (void)cudaDeviceSynchronize();
}

/* CUPTI in this process, after every untraced figure (as `graphrun run --trace` traces after its
 * untraced run): the tiny kernel's duration as a trace records it. */
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
        gr_error_prefix(err, "the traced reference (the tiny kernel's duration as a trace "
                             "records it, which node_us is measured against) could not be "
                             "traced: ");
    else if (st == GR_OK) {
        st = gr_cal_gpu_traced_tiny(g, o->traced_warmup, o->traced_count, raw, err);
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
            st = gr_cal_traced_durations(t, o->traced_warmup, o->traced_count, &raw->traced, err);
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
    double launch[GR_CAL_MAX_ROUNDS], node[GR_CAL_MAX_ROUNDS], per[GR_CAL_MAX_ROUNDS],
        pdl[GR_CAL_MAX_ROUNDS], pp[GR_CAL_MAX_ROUNDS], host[GR_CAL_MAX_ROUNDS];
    /* launch: a graph of n nodes takes launch + n x P per launch, so 1 and `wide` nodes give
     * launch = L1 - (Lw - L1) / (wide - 1) */
    double wm1 = r->wide > 1 ? (double)(r->wide - 1) : 1;
    for (size_t i = 0; i < n; i++)
        launch[i] = r->g1[i] - (r->gw[i] - r->g1[i]) / wm1;
    res->launch = gr_summarize(launch, n);
    double L = res->launch.median, K = r->chain > 0 ? (double)r->chain : 1;
    /* node: a chain of K tiny kernels takes launch + K x (D + node) per launch, D the tiny
     * kernel's traced duration (not cycle-defined: no clock correction) */
    res->dur = r->traced.median;
    for (size_t i = 0; i < n; i++) {
        per[i] = (r->chain_tiny[i] - L) / K;
        node[i] = per[i] - res->dur;
        host[i] = r->host_g1[i];
    }
    res->node = gr_summarize(node, n);
    res->period = median_of(per, n);
    /* PDL: the chain with the attribute; it saves on each of its K - 1 dependent pairs (PDL does
     * not cross graph launches) */
    if (r->pdl) {
        for (size_t i = 0; i < n; i++) {
            pdl[i] = (r->chain_tiny[i] - r->chain_tiny_pdl[i]) / (K > 1 ? K - 1 : 1);
            pp[i] = (r->chain_tiny_pdl[i] - L) / K;
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

    /* the sanity check, before the written figures' notes: the chain's untraced time per node
     * less the traced duration the prediction adds node_us to must be under 3 us, and not
     * below -0.25 us. Between -0.25 and 0 the traced duration is a little longer than a chained
     * node (the H100 of run 85: -0.096 us): a graph node then costs nothing beyond the traced
     * duration, which is what the written 0 says */
    res->node_positive = n > 0 && res->node.median > 0;
    res->node_above_min = n > 0 && res->node.median > GR_CAL_NODE_MIN_US;
    res->node_below_max = n > 0 && res->node.median < GR_CAL_NODE_MAX_US;
    if (!res->node_above_min)
        note(res,
             "sanity check failed: the tiny chain's untraced time per node, %.3f us (launch taken "
             "out), is below the tiny kernel's traced duration, %.3f us, by more than %.2f us "
             "(node_us = %.4f us; the trace's split of the per-node time is suspect)",
             res->period, res->dur, -GR_CAL_NODE_MIN_US, res->node.median);
    else if (!res->node_positive && n > 0)
        note(res,
             "the tiny chain's untraced time per node, %.3f us (launch taken out), does not exceed "
             "the tiny kernel's traced duration, %.3f us (node_us %.4f us, within the %.2f us the check "
             "allows): on this GPU a graph node costs nothing beyond a kernel's traced duration",
             res->period, res->dur, res->node.median, -GR_CAL_NODE_MIN_US);
    else if (!res->node_below_max)
        note(res,
             "sanity check failed: the tiny chain's untraced time per node, %.3f us (launch taken "
             "out), exceeds the tiny kernel's traced duration, %.3f us, by %.3f us, not below "
             "%.0f us (a node cost that large is suspect: was the GPU shared?)",
             res->period, res->dur, res->node.median, GR_CAL_NODE_MAX_US);
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
             "pdl_us is 0, not measured: this build's tiny kernel runs from PTX %d.%d, without "
             "sm_90 code (griddepcontrol); build with 90 in CMAKE_CUDA_ARCHITECTURES",
             r->tiny_ptx / 10, r->tiny_ptx % 10);
    if (r->buffer_checked && r->buffer_bad > 0)
        note(res,
             "the tiny kernels' buffer is wrong after %lld kernels: %d of %d elements, the first "
             "%.0f where %.0f was expected (tiny kernels overlapped: a PDL chain that did not "
             "wait? node_us and pdl_us are suspect)",
             r->tiny_kernels, r->buffer_bad, r->tiny_n, r->buffer_got, r->buffer_want);
    /* the SM clock, a note only: the tiny kernel's duration is not a cycle count */
    double lo = 0, hi = 0;
    for (int k = 0; k < 3; k++) {
        double f = r->clock_mhz[k];
        if (!(f > 0)) continue;
        if (lo == 0 || f < lo) lo = f;
        if (f > hi) hi = f;
    }
    res->clock_moved = lo > 0 && hi / lo > 1.02;
    if (res->clock_moved)
        note(res,
             "the SM clock moved: %.0f MHz before the rounds, %.0f after, %.0f traced (the "
             "figures are not corrected for it; lock the clocks, nvidia-smi -lgc, for steadier "
             "ones)",
             r->clock_mhz[0], r->clock_mhz[1], r->clock_mhz[2]);
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

/* The untraced SM clock: the mean of the probes around the rounds (either alone when the other
 * is missing); it gives the spins' lengths in us. */
static double untraced_mhz(const gr_cal_raw *r) {
    double a = r->clock_mhz[0], b = r->clock_mhz[1];
    return a > 0 && b > 0 ? (a + b) / 2 : a > 0 ? a : b > 0 ? b : 0;
}

void gr_cal_print(FILE *f, const gr_cal_result *res) {
    const gr_cal_raw *r = &res->raw;
    double fu = untraced_mhz(r);
    double tl = spin_us(r->cycl, fu);
    fprintf(f,
            "cupti-launchstat calibrate: graph costs of %s (cc %d.%d, %d SMs), CUDA driver %d, "
            "runtime %d, %s\n",
            r->gpu, r->cc_major, r->cc_minor, r->sm_count, r->driver, r->runtime, res->date);
    fprintf(f,
            "  untraced: CUDA events around batches of graph launches after warm-up, a blocker "
            "kernel ahead of each batch, %d interleaved rounds;\n  node_us against the tiny "
            "kernel's traced duration (CUPTI in this process, after every untraced figure). "
            "docs/predict.md\n\n",
            r->rounds);
    fprintf(f, "  %-15s %8s  %-22s %-4s  %s\n", "figure", "median", "[p10, p90] over rounds",
            "unit", "what was measured");
    char what[512];
    snprintf(what, sizeof(what),
             "GPU time per kernel node beyond its traced duration: a %d-node chain of tiny "
             "kernels (1 block, y = x + c on %d floats in place), per node, launch_us taken out, "
             "less the tiny kernel's traced eager duration",
             r->chain, r->tiny_n);
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
             "tiny chain with and without the attribute, difference / %d",
             r->chain - 1);
    fig_line(f, "pdl_us", res->pdl_us, &res->pdl, "us", what);
    snprintf(what, sizeof(what),
             "bytes read + written per second by cudaMemcpyAsync device to device of %.0f MiB "
             "(%d per batch, %d batches; not a copy kernel)",
             (double)r->copy_bytes / 1048576.0, r->copies_per_batch, r->copy_batches);
    fig_line(f, "hbm_gbps", res->hbm_gbps, &res->hbm, "GB/s", what);

    fprintf(f, "\n  from (GPU us per graph launch unless said; median [p10, p90] over rounds):\n");
    char l[96];
    snprintf(l, sizeof(l), "chain %d x tiny", r->chain);
    raw_line(f, l, r->chain_tiny, r->rounds);
    if (r->pdl) {
        snprintf(l, sizeof(l), "chain %d x tiny, PDL", r->chain);
        raw_line(f, l, r->chain_tiny_pdl, r->rounds);
    }
    snprintf(l, sizeof(l), "graph 1 x %.2f us spin", tl);
    raw_line(f, l, r->g1, r->rounds);
    snprintf(l, sizeof(l), "graph %d x %.2f us spins", r->wide, tl);
    raw_line(f, l, r->gw, r->rounds);
    raw_line(f, "host per launch, 1-node graph", r->host_g1, r->rounds);
    snprintf(l, sizeof(l), "host per launch, %d-node graph", r->wide);
    raw_line(f, l, r->host_gw, r->rounds);
    char a[32], b[32], c[32];
    fprintf(f,
            "    traced tiny kernel durations (eager, one at a time, %d after %d warm-up): %s us "
            "[%s, %s]\n",
            r->traced_count, r->traced_warmup, fmt_num(a, sizeof(a), r->traced.median),
            fmt_num(b, sizeof(b), r->traced.p10), fmt_num(c, sizeof(c), r->traced.p90));
    fprintf(f,
            "    per tiny node, untraced (launch taken out): %s us; less the traced duration "
            "%s us: node_us %s us\n",
            fmt_num(a, sizeof(a), res->period), fmt_num(b, sizeof(b), res->dur),
            fmt_num(c, sizeof(c), res->node.median));
    if (r->pdl)
        fprintf(f, "    per tiny node with PDL, untraced (launch taken out): %s us\n",
                fmt_num(a, sizeof(a), res->pdl_period));
    fprintf(f, "    sanity check: node_us in (%.2f, %.0f) us: %s\n", GR_CAL_NODE_MIN_US,
            GR_CAL_NODE_MAX_US,
            res->node_above_min && res->node_below_max ? "passed" : "FAILED (see the note)");
    if (r->buffer_checked)
        fprintf(f, "    tiny kernels' buffer after %lld kernels: %s\n", r->tiny_kernels,
                r->buffer_bad ? "WRONG (see the note)" : "every element as expected");
    fprintf(f,
            "    SM clock: %.0f MHz before the rounds, %.0f after, %.0f traced (rated %.0f; a "
            "note only); spins of %lld cycles (launch graphs) and %lld (blocker)\n",
            r->clock_mhz[0], r->clock_mhz[1], r->clock_mhz[2], r->clock_attr_mhz, r->cycl, r->cycb);
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
                    "blocker kernel ahead of each batch, interleaved rounds, medians; node_us and "
                    "pdl_us from a chain of tiny kernels (1 block, y = x + c in place), node_us "
                    "against the tiny kernel's traced eager duration (CUPTI in the same process "
                    "after every untraced figure); launch_us from graphs of spin kernels; "
                    "hbm_gbps from cudaMemcpyAsync device to device; docs/predict.md"));
    json_t *notes = json_array();
    for (int i = 0; i < res->nnotes; i++)
        json_array_append_new(notes, json_string(res->notes[i]));
    json_object_set_new(j, "notes", notes);
    double tl = spin_us(r->cycl, untraced_mhz(r));
    char m[512];
    json_t *fig = json_object();
    snprintf(m, sizeof(m),
             "%d-node chain of tiny kernels (1 block, y = x + c on %d floats in place), GPU us "
             "per node, launch_us taken out, less the tiny kernel's traced eager duration",
             r->chain, r->tiny_n);
    json_object_set_new(fig, "node_us", summary_json(&res->node, m));
    snprintf(m, sizeof(m), "1-node vs %d-node graphs of %.2f us spins: L1 - (L%d - L1) / %d",
             r->wide, tl, r->wide, r->wide - 1);
    json_object_set_new(fig, "launch_us", summary_json(&res->launch, m));
    json_object_set_new(
        fig, "launch_host_us",
        summary_json(&res->host, "host clock around cudaGraphLaunch of the 1-node graph"));
    snprintf(m, sizeof(m), "the tiny chain without - with PDL, per dependent pair (/ %d)%s",
             r->chain - 1,
             r->pdl            ? ""
             : r->cc_major < 9 ? ": not measured (compute capability < 9.0)"
                               : ": not measured (the tiny kernel has no sm_90 code)");
    json_object_set_new(fig, "pdl_us", summary_json(&res->pdl, m));
    snprintf(m, sizeof(m), "cudaMemcpyAsync device to device, %.0f MiB, bytes read + written",
             (double)r->copy_bytes / 1048576.0);
    json_object_set_new(fig, "hbm_gbps", summary_json(&res->hbm, m));
    json_object_set_new(j, "figures", fig);

    json_t *raw = json_object();
    json_object_set_new(raw, "sm_count", json_integer(r->sm_count));
    json_object_set_new(raw, "tiny_ptx", json_integer(r->tiny_ptx));
    json_object_set_new(raw, "clock_mhz",
                        json_pack("{s:f, s:f, s:f, s:f}", "rated", r->clock_attr_mhz, "before",
                                  r->clock_mhz[0], "after", r->clock_mhz[1], "traced",
                                  r->clock_mhz[2]));
    json_object_set_new(raw, "tiny",
                        json_pack("{s:s, s:i, s:i, s:i, s:f}", "kernel", GR_CAL_TINY_KERNEL,
                                  "blocks", 1, "threads", r->tiny_threads, "elements", r->tiny_n,
                                  "increment", 1.0));
    json_object_set_new(
        raw, "spin_cycles",
        json_pack("{s:I, s:I}", "launch", (json_int_t)r->cycl, "blocker", (json_int_t)r->cycb));
    json_object_set_new(raw, "spin_us", json_pack("{s:f}", "launch", tl));
    json_object_set_new(raw, "rounds", json_integer(r->rounds));
    json_object_set_new(raw, "chain_nodes", json_integer(r->chain));
    json_object_set_new(raw, "wide_nodes", json_integer(r->wide));
    json_object_set_new(raw, "launches_per_batch",
                        json_pack("{s:i, s:i, s:i}", "chain", r->chain_launches, "graph1",
                                  r->g1_launches, "wide", r->wide_launches));
    json_object_set_new(raw, "chain_tiny_us", rounds_json(r->chain_tiny, r->rounds));
    json_object_set_new(raw, "chain_tiny_pdl_us",
                        r->pdl ? rounds_json(r->chain_tiny_pdl, r->rounds) : json_null());
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
    json_t *tr = json_pack("{s:s, s:i, s:i, s:o, s:I}", "kernel", GR_CAL_TINY_KERNEL, "count",
                           r->traced_count, "warmup", r->traced_warmup, "tiny_us",
                           summary_json(&r->traced, NULL), "dropped", (json_int_t)r->trace_dropped);
    json_object_set_new(tr, "trace", r->trace_kept ? json_string(r->trace_path) : json_null());
    json_object_set_new(raw, "traced", tr);
    json_object_set_new(raw, "derived",
                        json_pack("{s:f, s:f, s:f, s:f}", "period_us", res->period,
                                  "traced_tiny_us", res->dur, "node_us", res->node.median,
                                  "pdl_period_us", res->pdl_period));
    json_t *ck = json_pack("{s:b, s:b, s:b, s:b, s:f, s:f, s:b}", "sane",
                           res->node_above_min && res->node_below_max, "period_exceeds_traced",
                           res->node_positive, "node_above_min", res->node_above_min,
                           "node_below_max", res->node_below_max, "node_min_us",
                           GR_CAL_NODE_MIN_US, "node_max_us", GR_CAL_NODE_MAX_US, "clock_moved",
                           res->clock_moved);
    json_object_set_new(ck, "buffer_ok",
                        r->buffer_checked ? json_boolean(r->buffer_bad == 0) : json_null());
    json_object_set_new(ck, "buffer_kernels", json_integer(r->tiny_kernels));
    json_object_set_new(ck, "buffer_bad_elements", json_integer(r->buffer_bad));
    json_object_set_new(raw, "checks", ck);
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
