/* The report of a run: what `graphrun run` prints and writes as JSON, and what the replay
 * service sends back, from one gr_run_report; the JSON pieces tp and the traced run share. */
#include "replay/report.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/plan_print.h"
#include "gr_version.h"
#include "replay/knobs.h"

gr_run_report *gr_run_report_create(const gr_workload *wl, const gr_device_info *dev,
                                    const gr_run_opts *o) {
    gr_run_report *r = calloc(1, sizeof(*r));
    if (!r) return NULL;
    r->wl = wl;
    if (dev) r->dev = *dev;
    if (o) r->opts = *o;
    else gr_run_opts_default(&r->opts);
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(r->date, sizeof(r->date), "%Y-%m-%d %H:%M UTC", &tmv);
    return r;
}

gr_variant_run *gr_run_report_add(gr_run_report *r, const gr_plan *p) {
    if (r->nv == r->cap) {
        int cap = r->cap ? 2 * r->cap : 8;
        gr_variant_run *v = realloc(r->v, (size_t)cap * sizeof(*v));
        if (!v) return NULL;
        r->v = v;
        r->cap = cap;
    }
    gr_variant_run *v = &r->v[r->nv++];
    memset(v, 0, sizeof(*v));
    v->plan = p;
    return v;
}

void gr_run_report_destroy(gr_run_report *r) {
    if (!r) return;
    if (r->cap) { /* owned variants (a borrowed one, cap 0, belongs to its holder) */
        for (int i = 0; i < r->nv; i++) gr_variant_run_clear(&r->v[i]);
        free(r->v);
    }
    free(r);
}

int gr_variant_kernels(const gr_variant_run *v) {
    if (v->captured) return (int)v->graph.kernel_nodes;
    return v->plan->kernels;
}

/* A variant's HBM floor from its own bytes read and written (docs/floors.md); 0 unmeasured. */
static double floor_us(const gr_run_report *r, const gr_plan *p) {
    return r->have_bw ? gr_floor_us(p->bytes_read, p->bytes_written, &r->bw) : 0;
}

/* A variant's launch floor per step: the graph's launch (shared by the steps one launch runs,
 * --unroll) and each kernel its plan launches at the measured cost of a graph node (with PDL for
 * the kernels that launched with it); 0 when not measured. */
static double launch_floor_us(const gr_run_report *r, const gr_variant_run *v) {
    if (!r->launch_floor.measured) return 0;
    const gr_plan *p = v->plan;
    /* the PDL figures are measured only when the variants ran with PDL */
    int pdl_run = r->launch_floor.pdl_node_us > 0;
    double us = 0;
    int n_pdl = 0;
    for (int i = 0; i < p->nops; i++) {
        const gr_op *op = &p->ops[i];
        if (op->kind != GR_OP_KERNEL) continue;
        int pdl = pdl_run && gr_op_pdl_capable(op);
        n_pdl += pdl;
        us += (op->launches < 0 ? 1 : op->launches) * /* a library's launches: counted as one */
              (pdl ? r->launch_floor.pdl_node_us : r->launch_floor.node_us);
    }
    int per_launch = v->graph_t.steps_per_launch > 1 ? v->graph_t.steps_per_launch : 1;
    /* the launch: the lower of the two figures when a kernel launched with PDL (a floor errs low) */
    double launch = r->launch_floor.launch_us;
    if (n_pdl && r->launch_floor.pdl_launch_us < launch) launch = r->launch_floor.pdl_launch_us;
    return us + launch / per_launch;
}

static void launch_floor_section(FILE *f, const gr_run_report *r) {
    if (!r->opts.launch_floor) return;
    if (!r->launch_floor.measured) {
        if (r->launch_floor.why[0]) fprintf(f, "\nlaunch floor: not measured: %s\n", r->launch_floor.why);
        return;
    }
    fprintf(f, "\nlaunch floor: a graph node costs %.3f us plain", r->launch_floor.node_us);
    if (r->launch_floor.pdl_node_us > 0) fprintf(f, ", %.3f with PDL", r->launch_floor.pdl_node_us);
    fprintf(f, ", a graph launch %.2f us", r->launch_floor.launch_us);
    if (r->launch_floor.pdl_node_us > 0) fprintf(f, " (%.2f with PDL)", r->launch_floor.pdl_launch_us);
    fprintf(f, " in this process, after the variants\n"
               "  (graphs of %d and %d empty kernels and one tiny: the slope and the intercept; CUDA events,\n"
               "  untraced; what a node costs depends on the GPU work the process did before: docs/pipeline.md);\n"
               "  floor = a graph launch (shared by the steps of one launch) and the plan's kernels at those costs\n",
            r->launch_floor.k_small, r->launch_floor.k);
    if (r->launch_floor.why[0]) fprintf(f, "  (%s)\n", r->launch_floor.why);
    fprintf(f, "  %-16s %7s %14s %14s %14s\n", "variant", "kernels", "floor us/step", "graph us/step",
            "floor / graph");
    for (int i = 0; i < r->nv; i++) {
        const gr_variant_run *v = &r->v[i];
        if (!v->timed) continue;
        double fl = launch_floor_us(r, v), g = v->graph_t.step_us.median;
        fprintf(f, "  %-16s %7d %14.2f %14.2f %13.1f%%\n", v->plan->variant, v->plan->kernels, fl, g,
                g > 0 ? 100.0 * fl / g : 0.0);
    }
}

/* How close a copy probe came to the floor of its own bytes (half read, half written). */
static double copy_pct_of_floor(const gr_bandwidth *bw, const gr_bw_figure *copy) {
    if (!(copy->gbps.median > 0)) return 0;
    double half = copy->bytes / 2;
    return gr_pct_of_floor(gr_floor_us(half, half, bw), copy->bytes / (copy->gbps.median * 1e3));
}

/* Kernels per step of a plan that launch with programmatic dependent launch when PDL is on. */
static int pdl_kernels(const gr_plan *p) {
    int n = 0;
    for (int k = 0; k < p->nops; k++) {
        const gr_op *op = &p->ops[k];
        n += op->kind == GR_OP_KERNEL && op->kernel && gr_op_pdl_capable(op) && op->launches > 0;
    }
    return n;
}

/* One line: whether kernels ran with PDL, why, and how many per step of each timed variant. */
static void pdl_line(FILE *f, const gr_run_report *r) {
    if (!r->opts.pdl) {
        if (r->opts.pdl_default)
            fprintf(f, "  launches are plain: programmatic dependent launch needs compute capability "
                       "%d.0+ and this GPU is %d.%d\n",
                    GR_PDL_MIN_CC_MAJOR, r->dev.cc_major, r->dev.cc_minor);
        else
            fprintf(f, "  launches are plain (--no-pdl)\n");
        return;
    }
    char per[512];
    size_t o = 0;
    per[0] = '\0';
    for (int i = 0; i < r->nv && o + 40 < sizeof(per); i++) {
        if (!r->v[i].timed) continue;
        int w = snprintf(per + o, sizeof(per) - o, "%s%s %d", o ? ", " : "", r->v[i].plan->variant,
                         pdl_kernels(r->v[i].plan));
        if (w > 0) o += (size_t)w < sizeof(per) - o ? (size_t)w : sizeof(per) - o - 1;
    }
    fprintf(f, "  launches use programmatic dependent launch (%s%s) for the kernels that support "
               "it, per step: %s\n",
            gr_run_opts_pdl_source(&r->opts), r->opts.pdl_default ? "; --no-pdl turns it off" : "", per);
}

/* --device-loop: GPU and host time per step of the device-resident loop beside the graph's. */
static void loop_section(FILE *f, const gr_run_report *r) {
    int any = 0;
    for (int i = 0; i < r->nv; i++) any |= r->v[i].loop_timed;
    if (!any) return;
    fprintf(f, "  device loop (--device-loop %d): one launch runs %d steps behind a conditional "
               "WHILE node, counted down on the GPU; host us/step = launch submit time / %d, the "
               "CPU the loop frees\n",
            r->opts.device_loop, r->opts.device_loop, r->opts.device_loop);
    fprintf(f, "  %-16s %26s %14s %26s %14s\n", "variant", "loop us/step", "loop host us",
            r->opts.unroll > 1 ? "graph (--unroll) us/step" : "graph us/step", "graph host us");
    for (int i = 0; i < r->nv; i++) {
        const gr_variant_run *v = &r->v[i];
        if (!v->loop_timed) continue;
        char ls[40], gs[40];
        snprintf(ls, sizeof(ls), "%.2f [%.2f, %.2f]", v->loop_t.step_us.median,
                 v->loop_t.step_us.p10, v->loop_t.step_us.p90);
        snprintf(gs, sizeof(gs), "%.2f [%.2f, %.2f]", v->graph_t.step_us.median,
                 v->graph_t.step_us.p10, v->graph_t.step_us.p90);
        fprintf(f, "  %-16s %26s %14.3f %26s %14.3f\n", v->plan->variant, ls,
                v->loop_t.submit_us.median, v->timed ? gs : "-",
                v->timed ? v->graph_t.submit_us.median : 0.0);
    }
}

/* What the outputs were checked against, in words. */
static void checked_against(const gr_run_report *r, char *out, size_t size) {
    int user = 0; /* variants with user kernels: their own references (per variant, below) */
    for (int i = 0; i < r->nv; i++) user |= !r->v[i].plan->has_cpu_reference;
    if (r->opts.cpu_reference)
        snprintf(out, size, "each variant's outputs against its %s, graph against eager%s",
                 user ? "reference (per variant below)"
                      : "CPU reference (from the device's initial data)",
                 r->nv > 1 ? ", and eager against the first variant's eager outputs" : "");
    else
        snprintf(out, size, "graph against eager%s only; nothing checks that eager is right",
                 r->nv > 1 ? " and eager against the first variant's eager outputs" : "");
}

/* The outputs poisoned with NaN before each run (no init) and those re-initialised instead. */
static void init_lists(const gr_plan *p, char *pois, size_t psize, char *seed, size_t ssize) {
    size_t pl = 0, sl = 0;
    pois[0] = seed[0] = '\0';
    for (int b = 0; b < p->nbufs; b++) {
        const gr_buffer *buf = &p->bufs[b];
        if (!buf->is_output) continue;
        if (buf->init.kind == GR_INIT_NONE) {
            if (pl < psize) pl += (size_t)snprintf(pois + pl, psize - pl, "%s%s", pl ? ", " : "", buf->name);
        } else if (sl < ssize) {
            sl += (size_t)snprintf(seed + sl, ssize - sl, "%s%s", sl ? ", " : "", buf->name);
        }
    }
}

/* graphrun's own environment variables that are set (replay/knobs.c: plumbing only; none
 * changes a kernel choice, which is plan data). */
static void knobs_text(FILE *f) {
    int n = 0;
    for (const gr_knob *k = gr_knobs(); k->name; k++) {
        const char *v = gr_knob_value(k);
        if (!v || !k->report) continue;
        fprintf(f, "%s %s=%s (%s)", n++ ? "," : "env      graphrun environment (plumbing):", k->name,
                v, k->what);
    }
    if (n) fprintf(f, "\n");
    else fprintf(f, "env      no graphrun environment variable is set (kernel choices are plan attrs)\n");
}

void gr_report_text(FILE *f, const gr_run_report *r) {
    const gr_device_info *d = &r->dev;
    fprintf(f, "device   %s, %d SMs, cc %d.%d, driver %d.%d, runtime %d.%d; %s\n", d->name,
            d->sm_count, d->cc_major, d->cc_minor, d->driver_version / 1000,
            (d->driver_version % 1000) / 10, d->runtime_version / 1000,
            (d->runtime_version % 1000) / 10, r->date);
    if (r->have_bw) {
        const gr_bandwidth *b = &r->bw;
        const gr_summary *rd = &b->read_only.gbps, *wr = &b->write_only.gbps,
                         *ck = &b->copy_kernel.gbps, *mc = &b->memcpy_d2d.gbps;
        fprintf(f, "hbm bw   read %.0f [p10 %.0f, p90 %.0f], write %.0f [%.0f, %.0f], copy kernel "
                   "%.0f [%.0f, %.0f], cudaMemcpy D2D %.0f [%.0f, %.0f] GB/s\n",
                rd->median, rd->p10, rd->p90, wr->median, wr->p10, wr->p90, ck->median, ck->p10,
                ck->p90, mc->median, mc->p10, mc->p90);
        fprintf(f, "         (CUDA events, median [p10, p90] of %zu interleaved rounds; %.2f GB "
                   "buffers; kernels of %d x %d threads, 16-byte streaming accesses, %d in flight "
                   "per thread; copies count bytes read + written)\n",
                rd->n, (double)b->buffer_bytes / 1e9, b->grid, b->threads, b->unroll);
        fprintf(f, "floor    bytes read / read bw + bytes written / write bw (docs/floors.md); the "
                   "copies reach %.0f%% (kernel) and %.0f%% (cudaMemcpy) of their own floor\n",
                copy_pct_of_floor(b, &b->copy_kernel), copy_pct_of_floor(b, &b->memcpy_d2d));
    }

    knobs_text(f);
    char against[200];
    checked_against(r, against, sizeof(against));
    fprintf(f, "\nverification: %s%s\n", r->opts.cpu_reference ? "" : "NO CPU REFERENCE (--no-cpu-ref): ",
            against);
    fprintf(f, "  (rel = relative L2 error; every element must also hold |out - ref| <= atol rms(ref) "
               "+ rtol_elem |ref|; NaN/Inf never pass; docs/verification.md)\n");
    for (int i = 0; i < r->nv; i++) {
        const gr_variant_run *v = &r->v[i];
        char pois[300], seed[300];
        init_lists(v->plan, pois, sizeof(pois), seed, sizeof(seed));
        fprintf(f, "  %-16s before each run: %s%s\n", v->plan->variant,
                pois[0] ? "outputs poisoned with NaN: " : "no output is poisoned", pois);
        if (!v->plan->has_cpu_reference) { /* user kernels: what their outputs were checked against */
            char what[512];
            gr_plan_checks_text(v->plan, what, sizeof(what), NULL);
            fprintf(f, "  %-16s verified against: %s\n", "", r->opts.cpu_reference ? what :
                    "graph == eager only (--no-cpu-ref)");
        }
        if (seed[0])
            fprintf(f, "  %-16s re-seeded from their init, not poisoned (in-place): %s\n", "", seed);
        for (int b = 0; b < v->plan->nbufs; b++) {
            const gr_buffer *buf = &v->plan->bufs[b];
            if (!buf->is_output) continue;
            gr_tol t = gr_buffer_tol(buf);
            fprintf(f, "  %-16s %-14.14s tolerance rtol %.1e atol %.1e rtol_elem %.1e (%s)\n", "",
                    buf->name, t.rtol, t.atol, t.rtol_elem, gr_tol_source_name(buf->tol_source));
        }
        if (v->checks.n == 0 && v->status != GR_OK) {
            fprintf(f, "  %-16s not verified: %s\n", "", v->error);
            continue;
        }
        for (int c = 0; c < v->checks.n; c++) {
            char line[256];
            gr_check_str(&v->checks.v[c], line, sizeof(line));
            fprintf(f, "  %-16s %-14.14s %-20s %s\n", "", v->checks.v[c].buffer, v->checks.v[c].what,
                    line);
            if (v->checks.v[c].note[0])
                fprintf(f, "  %-16s %-14s %-20s %s, max diff %.1e\n", "", "", "", v->checks.v[c].note,
                        v->checks.v[c].max_abs);
        }
        if (v->reference_ms > 0)
            fprintf(f, "  %-16s (%s took %.0f ms)\n", "",
                    v->plan->has_cpu_reference ? "CPU reference"
                                               : "reference (the reference variant on the GPU)",
                    v->reference_ms);
    }

    fprintf(f, "\ngraphs (capture mode %s; host clock)\n", gr_capture_mode_name(r->opts.mode));
    fprintf(f, "  %-16s %8s %8s %8s %8s %12s %14s %11s\n", "variant", "nodes", "kernels", "other",
            "edges", "capture us", "instantiate us", "upload us");
    for (int i = 0; i < r->nv; i++) {
        const gr_variant_run *v = &r->v[i];
        if (!v->captured) {
            fprintf(f, "  %-16s not captured%s%s%s\n", v->plan->variant, v->status ? ": " : "",
                    v->status ? gr_status_name((gr_status)v->status) : "",
                    !v->status && v->cc.piecewise ? " as one graph: captured piecewise (below)" : "");
            continue;
        }
        const gr_graph *g = &v->graph;
        fprintf(f, "  %-16s %8zu %8zu %8zu %8zu %12.1f %14.1f %11.1f\n", v->plan->variant, g->nodes,
                g->kernel_nodes, g->nodes - g->kernel_nodes, g->edges, g->capture_us,
                g->instantiate_us, g->upload_us);
        if (v->dot_written[0]) fprintf(f, "  %-16s graph written to %s\n", "", v->dot_written);
        if (v->graph_n.steps > 1)
            fprintf(f, "  %-16s --unroll %d graph: %zu nodes, %zu edges, capture %.1f us, instantiate %.1f us\n",
                    "", v->graph_n.steps, v->graph_n.nodes, v->graph_n.edges, v->graph_n.capture_us,
                    v->graph_n.instantiate_us);
    }

    gr_capcheck_report_text(f, r);
    int any_timed = 0;
    for (int i = 0; i < r->nv; i++) any_timed |= r->v[i].timed;
    if (!any_timed) return;
    const gr_variant_run *tv = NULL;
    for (int i = 0; i < r->nv && !tv; i++)
        if (r->v[i].timed) tv = &r->v[i];
    fprintf(f, "\ntiming per step, untraced: CUDA events around batches on the main stream; median "
               "[p10, p90] over %d batches of %d steps after %d warm-up steps\n",
            tv->eager.batches ? tv->eager.batches : tv->graph_t.batches,
            tv->eager.batches ? tv->eager.steps_per_batch : tv->graph_t.steps_per_batch,
            tv->eager.batches ? tv->eager.warmup : tv->graph_t.warmup);
    pdl_line(f, r);
    if (tv->graph_t.steps_per_launch > 1)
        fprintf(f, "  graph: %d steps captured per graph (--unroll %d); graph us/step = launch time / %d\n",
                tv->graph_t.steps_per_launch, tv->graph_t.steps_per_launch, tv->graph_t.steps_per_launch);
    fprintf(f, "  %-16s %7s %26s %26s %8s %12s %18s\n", "variant", "kernels", "eager us/step",
            "graph us/step", "speedup", "saved us/krn", "submit us e | g");
    for (int i = 0; i < r->nv; i++) {
        const gr_variant_run *v = &r->v[i];
        if (!v->timed) continue;
        int k = gr_variant_kernels(v);
        double e = v->eager.step_us.median, g = v->graph_t.step_us.median;
        char es[40], gs[40];
        snprintf(es, sizeof(es), "%.2f [%.2f, %.2f]", e, v->eager.step_us.p10, v->eager.step_us.p90);
        snprintf(gs, sizeof(gs), "%.2f [%.2f, %.2f]", g, v->graph_t.step_us.p10, v->graph_t.step_us.p90);
        if (v->eager.batches == 0) { /* graph replay only: `graphrun replay` without --compare-eager */
            fprintf(f, "  %-16s %7d %26s %26s %8s %12s %8s | %7.2f\n", v->plan->variant, k, "-", gs,
                    "-", "-", "-", v->graph_t.submit_us.median);
            continue;
        }
        fprintf(f, "  %-16s %7d %26s %26s %7.2fx %12.3f %8.2f | %7.2f\n", v->plan->variant, k, es,
                gs, g > 0 ? e / g : 0.0, k > 0 ? (e - g) / k : 0.0, v->eager.submit_us.median,
                v->graph_t.submit_us.median);
    }
    fprintf(f, "  (saved us/krn = (eager - graph) / kernels per step; submit = host clock for "
               "enqueueing one step)\n");
    launch_floor_section(f, r);
    loop_section(f, r);
    if (r->have_bw) {
        fprintf(f, "\nHBM roofline: floor = bytes read / read bw + bytes written / write bw, each "
                   "variant's bytes per step from its plan (bandwidths above; %% of floor = floor "
                   "/ measured; %% of copy = graph GB/s / cudaMemcpy GB/s; weights = read-only "
                   "inputs)\n");
        fprintf(f, "  %-16s %11s %11s %11s %10s %11s %11s %10s %14s %14s\n", "variant", "read/step",
                "write/step", "weights", "floor us", "eager GB/s", "graph GB/s", "% of copy",
                "eager % floor", "graph % floor");
        for (int i = 0; i < r->nv; i++) {
            const gr_variant_run *v = &r->v[i];
            if (!v->timed) continue;
            double bytes = v->plan->bytes_read + v->plan->bytes_written;
            double fl = floor_us(r, v->plan);
            double eg = bytes / (v->eager.step_us.median * 1e-6) / 1e9;
            double gg = bytes / (v->graph_t.step_us.median * 1e-6) / 1e9;
            double copy = r->bw.memcpy_d2d.gbps.median;
            char rs[24], ws[24], is[24], egs[24] = "-", ep[24] = "-";
            gr_fmt_bytes(v->plan->bytes_read, rs, sizeof(rs));
            gr_fmt_bytes(v->plan->bytes_written, ws, sizeof(ws));
            gr_fmt_bytes(gr_plan_input_bytes(v->plan), is, sizeof(is));
            if (v->eager.batches) { /* else graph replay only: `graphrun replay` without eager */
                snprintf(egs, sizeof(egs), "%.1f", eg);
                snprintf(ep, sizeof(ep), "%.1f%%", gr_pct_of_floor(fl, v->eager.step_us.median));
            }
            fprintf(f, "  %-16s %11s %11s %11s %10.2f %11s %11.1f %9.1f%% %14s %13.1f%%\n",
                    v->plan->variant, rs, ws, is, fl, egs, gg, copy > 0 ? 100.0 * gg / copy : 0.0,
                    ep, gr_pct_of_floor(fl, v->graph_t.step_us.median));
        }
    }
}

void *gr_report_summary_json(const gr_summary *s) {
    return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I}", "median", s->median, "p10", s->p10,
                     "p90", s->p90, "min", s->min, "max", s->max, "mean", s->mean, "stddev",
                     s->stddev, "n", (json_int_t)s->n);
}

void *gr_report_bandwidth_json(const gr_bandwidth *bw, const char *where) {
    char method[200];
    snprintf(method, sizeof(method), "cudaMemcpyAsync D2D%s%s, read+written bytes, CUDA events",
             where ? " " : "", where ? where : "");
    const gr_bw_figure *mc = &bw->memcpy_d2d;
    /* bytes_per_copy, gbps and method keep the meaning they had when the probe was a memcpy */
    return json_pack(
        "{s:f, s:o, s:s, s:o, s:o, s:o, s:o, s:I, s:{s:i, s:i, s:i, s:s}, s:s, s:f, s:f}",
        "bytes_per_copy", mc->bytes, "gbps", (json_t *)gr_report_summary_json(&mc->gbps), "method",
        method, "read_gbps", (json_t *)gr_report_summary_json(&bw->read_only.gbps), "write_gbps",
        (json_t *)gr_report_summary_json(&bw->write_only.gbps), "copy_kernel_gbps",
        (json_t *)gr_report_summary_json(&bw->copy_kernel.gbps), "memcpy_gbps",
        (json_t *)gr_report_summary_json(&mc->gbps), "buffer_bytes", (json_int_t)bw->buffer_bytes,
        "kernels", "blocks", bw->grid, "threads", bw->threads, "accesses_in_flight_per_thread",
        bw->unroll, "access",
        "16-byte streaming loads (__ldcs) and stores (__stcs); copies count bytes read + written; "
        "CUDA events per probe, rounds interleaved",
        "floor_model", gr_floor_model, "copy_kernel_pct_of_floor",
        copy_pct_of_floor(bw, &bw->copy_kernel), "memcpy_pct_of_floor", copy_pct_of_floor(bw, mc));
}

void *gr_report_timing_json(const gr_timing *t, const char *stream) {
    char method[160];
    snprintf(method, sizeof(method), "CUDA events per batch on the %s, untraced; submit: host clock",
             stream ? stream : "main stream");
    return json_pack("{s:o, s:o, s:i, s:i, s:i, s:s}", "step_us",
                     (json_t *)gr_report_summary_json(&t->step_us), "submit_us",
                     (json_t *)gr_report_summary_json(&t->submit_us), "batches", t->batches,
                     "steps_per_batch", t->steps_per_batch, "warmup", t->warmup, "method", method);
}

void *gr_report_graph_json(const gr_graph *g) {
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f}", "nodes", (json_int_t)g->nodes,
                     "edges", (json_int_t)g->edges, "kernel_nodes", (json_int_t)g->kernel_nodes,
                     "memcpy_nodes", (json_int_t)g->memcpy_nodes, "memset_nodes",
                     (json_int_t)g->memset_nodes, "event_nodes", (json_int_t)g->event_nodes,
                     "capture_us", g->capture_us, "instantiate_us", g->instantiate_us, "upload_us",
                     g->upload_us);
}

void *gr_report_checks_json(const gr_check *c, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, (json_t *)gr_check_json(&c[i]));
    return a;
}

static json_t *stages_json(const gr_variant_run *v) {
    json_t *a = json_array();
    for (int i = 0; i < v->nstages; i++) {
        const gr_stage_record *s = &v->stages[i];
        json_array_append_new(a, json_pack("{s:s, s:b, s:s, s:f}", "stage", s->stage, "ran", s->ran,
                                           "status", gr_status_name((gr_status)s->status),
                                           "host_ms", s->host_ms));
    }
    return a;
}

void *gr_report_json(const gr_run_report *r) {
    json_t *root = json_object();
    json_object_set_new(root, "schema_version", json_integer(1));
    json_object_set_new(root, "tool", json_string("graphrun"));
    json_object_set_new(root, "graphrun_version", json_string(GR_VERSION));
    json_object_set_new(root, "date", json_string(r->date));
    json_object_set_new(root, "workload", json_string(r->wl ? r->wl->name : ""));
    json_object_set_new(root, "source", json_string(r->wl ? r->wl->path : ""));
    const gr_device_info *d = &r->dev;
    json_object_set_new(root, "device",
                        json_pack("{s:s, s:i, s:i, s:i, s:I, s:i, s:i, s:i}", "name", d->name,
                                  "sm_count", d->sm_count, "cc_major", d->cc_major, "cc_minor",
                                  d->cc_minor, "memory_bytes", (json_int_t)d->mem_total,
                                  "driver_version", d->driver_version, "runtime_version",
                                  d->runtime_version, "clock_khz", d->clock_khz));
    json_object_set_new(root, "capture_mode", json_string(gr_capture_mode_name(r->opts.mode)));
    json_object_set_new(root, "pdl", json_boolean(r->opts.pdl));
    json_object_set_new(root, "pdl_source", json_string(gr_run_opts_pdl_source(&r->opts)));
    json_object_set_new(root, "unroll", json_integer(r->opts.unroll));
    json_object_set_new(root, "device_loop", json_integer(r->opts.device_loop));
    json_object_set_new(root, "cpu_reference", json_boolean(r->opts.cpu_reference));
    char against[200];
    checked_against(r, against, sizeof(against));
    json_object_set_new(root, "checked_against", json_string(against));
    json_t *knobs = json_object();
    for (const gr_knob *k = gr_knobs(); k->name; k++)
        if (k->report && gr_knob_value(k)) json_object_set_new(knobs, k->name, json_string(gr_knob_value(k)));
    json_object_set_new(root, "knobs", knobs);
    if (r->have_bw)
        json_object_set_new(root, "copy_bandwidth", (json_t *)gr_report_bandwidth_json(&r->bw, NULL));
    if (r->opts.launch_floor && (r->launch_floor.measured || r->launch_floor.why[0])) {
        json_t *lf = json_object();
        json_object_set_new(lf, "measured", json_boolean(r->launch_floor.measured));
        if (r->launch_floor.measured) {
            json_object_set_new(lf, "node_us", json_real(r->launch_floor.node_us));
            json_object_set_new(lf, "pdl_node_us", r->launch_floor.pdl_node_us > 0
                                                       ? json_real(r->launch_floor.pdl_node_us)
                                                       : json_null());
            json_object_set_new(lf, "launch_us", json_real(r->launch_floor.launch_us));
            json_object_set_new(lf, "pdl_launch_us", r->launch_floor.pdl_node_us > 0
                                                         ? json_real(r->launch_floor.pdl_launch_us)
                                                         : json_null());
            json_object_set_new(lf, "empty_kernels",
                                json_pack("[i, i]", r->launch_floor.k_small, r->launch_floor.k));
            json_object_set_new(lf, "method",
                                json_string("graphs of empty kernels and one tiny at two sizes, timed "
                                            "after the variants in this process; CUDA events, untraced; "
                                            "node_us: the slope (us per kernel node), launch_us: the "
                                            "intercept (us per graph launch)"));
        }
        if (r->launch_floor.why[0]) json_object_set_new(lf, "why", json_string(r->launch_floor.why));
        json_object_set_new(root, "launch_floor", lf);
    }
    json_t *vars = json_array();
    for (int i = 0; i < r->nv; i++) {
        const gr_variant_run *v = &r->v[i];
        const gr_plan *p = v->plan;
        json_t *jv = json_object();
        json_object_set_new(jv, "variant", json_string(p->variant));
        json_object_set_new(jv, "params", json_string(p->params));
        json_object_set_new(jv, "status", json_string(gr_status_name((gr_status)v->status)));
        if (v->error[0]) json_object_set_new(jv, "error", json_string(v->error));
        json_object_set_new(jv, "kernels_planned", json_integer(p->kernels));
        json_object_set_new(jv, "kernels_per_step", json_integer(gr_variant_kernels(v)));
        json_object_set_new(jv, "pdl_kernels_per_step", json_integer(r->opts.pdl ? pdl_kernels(p) : 0));
        if (v->loop_timed)
            json_object_set_new(
                jv, "device_loop",
                json_pack("{s:i, s:o, s:o, s:I, s:f, s:f}", "steps_per_launch",
                          v->loop_t.steps_per_launch, "step_us",
                          (json_t *)gr_report_summary_json(&v->loop_t.step_us),
                          "host_submit_us_per_step",
                          (json_t *)gr_report_summary_json(&v->loop_t.submit_us), "kernel_nodes",
                          (json_int_t)v->graph_loop.kernel_nodes, "capture_us",
                          v->graph_loop.capture_us, "instantiate_us", v->graph_loop.instantiate_us));
        json_object_set_new(jv, "bytes_per_step", json_real(p->bytes_read + p->bytes_written));
        json_object_set_new(jv, "flops_per_step", json_real(p->flops));
        json_object_set_new(jv, "round_trips", json_integer(p->intermediates));
        json_object_set_new(jv, "verified", json_boolean(v->checks.verified));
        {
            char what[512];
            const char *kind = "cpu";
            gr_plan_checks_text(p, what, sizeof(what), &kind);
            if (!r->opts.cpu_reference) kind = "none";
            json_object_set_new(jv, "reference", json_pack("{s:s, s:s}", "kind", kind, "text",
                                                           r->opts.cpu_reference ? what
                                                           : "graph == eager only (--no-cpu-ref)"));
        }
        json_t *pois = json_array(), *seeded = json_array(), *tols = json_object();
        for (int b = 0; b < p->nbufs; b++) {
            const gr_buffer *buf = &p->bufs[b];
            if (!buf->is_output) continue;
            json_array_append_new(buf->init.kind == GR_INIT_NONE ? pois : seeded, json_string(buf->name));
            gr_tol t = gr_buffer_tol(buf);
            json_object_set_new(tols, buf->name,
                                json_pack("{s:f, s:f, s:f, s:s}", "rtol", t.rtol, "atol", t.atol,
                                          "rtol_elem", t.rtol_elem, "source",
                                          gr_tol_source_name(buf->tol_source)));
        }
        json_object_set_new(jv, "outputs_poisoned_nan", pois);
        json_object_set_new(jv, "outputs_reseeded_not_poisoned", seeded);
        json_object_set_new(jv, "tolerances", tols);
        json_object_set_new(jv, "checks", (json_t *)gr_report_checks_json(v->checks.v, v->checks.n));
        json_object_set_new(jv, "stages", stages_json(v));
        if (v->cc.attempted) json_object_set_new(jv, "capture_check", (json_t *)gr_capcheck_variant_json(&v->cc));
        if (v->captured) json_object_set_new(jv, "graph", (json_t *)gr_report_graph_json(&v->graph));
        if (v->timed) {
            double e = v->eager.step_us.median, g = v->graph_t.step_us.median;
            int k = gr_variant_kernels(v);
            json_object_set_new(jv, "eager", (json_t *)gr_report_timing_json(&v->eager, NULL));
            json_object_set_new(jv, "graph_replay", (json_t *)gr_report_timing_json(&v->graph_t, NULL));
            json_object_set_new(jv, "speedup", json_real(g > 0 ? e / g : 0));
            json_object_set_new(jv, "overhead_removed_us_per_kernel", json_real(k > 0 ? (e - g) / k : 0));
            double bytes = p->bytes_read + p->bytes_written;
            json_object_set_new(jv, "eager_gbps", json_real(bytes / (e * 1e-6) / 1e9));
            json_object_set_new(jv, "graph_gbps", json_real(bytes / (g * 1e-6) / 1e9));
            double fl = floor_us(r, p);
            json_object_set_new(jv, "weight_bytes", json_real(gr_plan_input_bytes(p)));
            if (r->launch_floor.measured) {
                double lf = launch_floor_us(r, v);
                json_object_set_new(jv, "launch_floor_us", json_real(lf));
                json_object_set_new(jv, "launch_floor_pct_of_graph", json_real(g > 0 ? 100.0 * lf / g : 0));
            }
            if (fl > 0) {
                double copy = r->bw.memcpy_d2d.gbps.median;
                json_object_set_new(jv, "hbm_floor_us", json_real(fl));
                json_object_set_new(jv, "eager_over_floor", json_real(e / fl));
                json_object_set_new(jv, "graph_over_floor", json_real(g / fl));
                json_object_set_new(jv, "eager_pct_of_floor", json_real(gr_pct_of_floor(fl, e)));
                json_object_set_new(jv, "graph_pct_of_floor", json_real(gr_pct_of_floor(fl, g)));
                if (copy > 0) { /* the earlier floor: all bytes at the cudaMemcpy rate */
                    json_object_set_new(jv, "copy_floor_us", json_real(bytes / (copy * 1e9) * 1e6));
                    json_object_set_new(jv, "graph_pct_of_copy_bw",
                                        json_real(100.0 * bytes / (g * 1e-6) / 1e9 / copy));
                }
            }
            if (v->eager.batches == 0) /* graph replay only (`graphrun replay`): no eager numbers */
                for (const char **key = (const char *[]){"eager", "speedup", "overhead_removed_us_per_kernel",
                                                         "eager_gbps", "eager_over_floor",
                                                         "eager_pct_of_floor", NULL};
                     *key; key++)
                    json_object_del(jv, *key);
        }
        json_array_append_new(vars, jv);
    }
    json_object_set_new(root, "variants", vars);
    const gr_plan **plans = calloc((size_t)r->nv + 1, sizeof(*plans));
    if (plans) {
        for (int i = 0; i < r->nv; i++) plans[i] = r->v[i].plan;
        json_object_set_new(root, "accounting", (json_t *)gr_accounting_to_json(plans, r->nv));
        free(plans);
    }
    return root;
}
