/* The traced run's exports: the timeline model of its trace, then the Chrome JSON and the HTML
 * report with the untraced run's step times, plans and cudaMemcpy bandwidth. */
#include "replay/timeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cuda_check.h"
#include "cupti_tools/chrome.h"
#include "cupti_tools/html.h"

gr_status gr_export_check_path(const char *opt, const char *path, gr_error *err) {
    if (!path || !path[0]) return gr_error_set(err, GR_ERR_USAGE, opt, "needs a file name");
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        if (!slash[1])
            return gr_error_set(err, GR_ERR_USAGE, opt, "\"%s\" is a directory; give a file name",
                                path);
        *slash = '\0';
        if (!dir[0]) snprintf(dir, sizeof(dir), "/");
    } else {
        snprintf(dir, sizeof(dir), ".");
    }
    if (access(dir, W_OK) != 0)
        return gr_error_set(err, GR_ERR_IO, opt,
                            "cannot write %s: %s (does the directory exist and is it writable?)",
                            path, strerror(errno));
    return GR_OK;
}

gr_status gr_export_temp_trace(char *out, size_t size, gr_error *err) {
    const char *dir = getenv("TMPDIR");
    if (!dir || !dir[0]) dir = "/tmp";
    snprintf(out, size, "%s/graphrun-trace-XXXXXX.jsonl", dir);
    int fd = mkstemps(out, 6);
    if (fd < 0)
        return gr_error_set(err, GR_ERR_IO, "--timeline/--html",
                            "cannot create a temporary trace in %s: %s (set TMPDIR to a writable "
                            "directory, or give "
                            "--trace FILE)",
                            dir, strerror(errno));
    close(fd);
    return GR_OK;
}

gr_status gr_export_timelines(const gr_run_report *r, const gr_trace_result *tr, const char *chrome,
                              const char *html, const char *command, gr_export_result *res,
                              gr_error *err) {
    memset(res, 0, sizeof(*res));
    if (!tr->trace)
        return gr_error_set(err, GR_ERR_INTERNAL, chrome ? "--timeline" : "--html",
                            "the traced run left no trace to export");
    gr_timeline *tl = NULL;
    GR_TRY(gr_timeline_build(tr->trace, tr->path, 0, &tl, err));
    res->procs = tl->procs_written;
    res->flows = tl->flows;
    res->nvtx = tl->nnvtx;
    for (size_t i = 0; i < tl->tr->gpu.n; i++)
        res->kernels += tl->tr->gpu.v[i].kind == GR_GPU_KERNEL;
    gr_status st = GR_OK;
    if (chrome) st = gr_chrome_write(tl, chrome, err);
    if (st == GR_OK && html) {
        gr_html_figure figs[32];
        size_t nf = gr_html_mode_figures(tl, figs, 32);
        res->figures = (int)nf;
        gr_html_timing rows[32];
        const gr_plan *plans[32];
        double floors[32]; /* the text report's floor (replay/timing.c gr_floor_us) */
        int nrows = 0, nplans = 0;
        const gr_variant_run *tv = NULL;
        for (int i = 0; i < r->nv && i < 32; i++) {
            const gr_variant_run *v = &r->v[i];
            floors[nplans] = r->have_bw ? gr_floor_us(v->plan->bytes_read, v->plan->bytes_written, &r->bw) : 0;
            plans[nplans++] = v->plan;
            if (!v->timed) continue;
            if (!tv) tv = v;
            gr_html_timing *row = &rows[nrows++];
            memset(row, 0, sizeof(*row));
            snprintf(row->variant, sizeof(row->variant), "%s", v->plan->variant);
            row->kernels = gr_variant_kernels(v);
            if (v->eager.batches) {
                row->eager_us = v->eager.step_us;
                row->eager_submit_us = v->eager.submit_us.median;
            }
            row->graph_us = v->graph_t.step_us;
            row->graph_submit_us = v->graph_t.submit_us.median;
        }
        char method[512] = "";
        if (tv) {
            const gr_timing *t = tv->eager.batches ? &tv->eager : &tv->graph_t;
            snprintf(method, sizeof(method),
                     "CUDA events around batches on the main stream, median [p10, p90] over %d "
                     "batches of %d steps "
                     "after %d warm-up steps, no tracing%s%s; submit = host clock for enqueueing "
                     "one step",
                     t->batches, t->steps_per_batch, t->warmup, r->opts.pdl ? (r->opts.pdl_default ? ", PDL (default)" : ", --pdl") : "",
                     tv->graph_t.steps_per_launch > 1 ? ", graph: --unroll steps per launch" : "");
        }
        const gr_device_info *d = &r->dev;
        char sub[1024];
        snprintf(
            sub, sizeof(sub),
            "%s; %s, %d SMs, cc %d.%d, driver %d.%d, runtime %d.%d; %s; capture mode %s; traced "
            "run: %d steps per mode after %d warm-up steps",
            r->nv > 0 ? r->v[0].plan->params : "", d->name, d->sm_count, d->cc_major, d->cc_minor,
            d->driver_version / 1000, (d->driver_version % 1000) / 10, d->runtime_version / 1000,
            (d->runtime_version % 1000) / 10, r->date, gr_capture_mode_name(r->opts.mode),
            tr->iters, tr->warmup);
        gr_html_doc doc = {r->wl ? r->wl->name : "graphrun",
                           sub,
                           command,
                           tv ? method : NULL,
                           rows,
                           nrows,
                           plans,
                           nplans,
                           floors,
                           r->have_bw ? gr_floor_model : NULL,
                           figs,
                           (int)nf};
        st = gr_html_write(&doc, html, err);
    }
    gr_timeline_destroy(tl);
    return st;
}
