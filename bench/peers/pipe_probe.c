/* graphrun's own run pipeline with chosen stages (issue 26): which of graphrun's stages make
 * every node of a graph captured after them cost more. It runs gr_pipe_run (replay/pipeline.c,
 * what `graphrun run` runs) on a variant of a workload (or on each of a comma list of them in
 * turn, one JSON line each, as graphrun runs a workload's variants), with only the stages named
 * in --stages, in the order named (a stage may come twice: capture again re-captures), the
 * bandwidth probe first when --bandwidth (as gr_run_plans does), and prints the graph's step time
 * per kernel node. Plain launches (no PDL).
 *   gr_pipe_probe WORKLOAD VARIANT[,VARIANT...] [--bandwidth] [--stages LIST] [--iters N]
 *                 [--set NAME=VALUE]
 * LIST: of session, init (the buffers filled, as the checks do first), reference, eager_check,
 * capture_check, capture, graph_check, verdict, time_eager, time_graph (default: graphrun run's
 * stages in its order); it starts with session and has capture before time_graph. The capture
 * check runs only when named.
 * Runs 91-94 (H100, bench/results/2026-12-05-run90-96-h100-gap): the bandwidth probe then
 * eager_check before the capture, capture_check before it, or a previous variant's stages, give
 * every node 0.178 us more; the bandwidth probe with reference, init, graph_check or time_eager
 * alone does not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/workload.h"
#include "kernels/registry.h"
#include "replay/pipeline.h"
#include "replay/report.h"
#include "replay/timing.h"

static const gr_stage *const all_stages[] = {
    &gr_stage_session,     &gr_stage_init,        &gr_stage_reference, &gr_stage_eager_check,
    &gr_stage_capture_check, &gr_stage_capture,   &gr_stage_graph_check, &gr_stage_verdict,
    &gr_stage_time_eager,  &gr_stage_time_graph,
};
enum { NALL = (int)(sizeof(all_stages) / sizeof(all_stages[0])) };

static int named(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) return 1;
    return 0;
}

static int fail(const char *what, const gr_error *e) {
    fprintf(stderr, "pipe_probe: %s: %s\n", what, e->msg);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: gr_pipe_probe WORKLOAD VARIANT [--bandwidth] [--stages LIST] "
                        "[--iters N] [--set NAME=VALUE]\n");
        return 2;
    }
    const char *path = argv[1], *variant = argv[2];
    const char *list = "session,reference,eager_check,capture_check,capture,graph_check,verdict,"
                       "time_eager,time_graph"; /* graphrun run's */
    int bandwidth = 0, iters = 300;
    const char *sets[16];
    int nsets = 0;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--bandwidth")) bandwidth = 1;
        else if (!strcmp(argv[i], "--stages") && i + 1 < argc) list = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) {
            if ((iters = atoi(argv[++i])) < 1) {
                fprintf(stderr, "pipe_probe: --iters needs a positive count, not \"%s\"\n", argv[i]);
                return 2;
            }
        }
        else if (!strcmp(argv[i], "--set") && i + 1 < argc && nsets < 16) sets[nsets++] = argv[++i];
        else {
            fprintf(stderr, "pipe_probe: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    const gr_stage *stages[32];
    int n = 0, captured = 0, timed = 0;
    for (const char *p = list; *p;) { /* every name in the list is a stage */
        size_t len = strcspn(p, ",");
        const gr_stage *found = NULL;
        for (int k = 0; k < NALL; k++)
            if (strlen(all_stages[k]->name) == len && !strncmp(all_stages[k]->name, p, len)) found = all_stages[k];
        if (!found || n == 32) {
            fprintf(stderr, "pipe_probe: --stages: %s \"%.*s\"\n", found ? "too many stages at" : "no stage",
                    (int)len, p);
            return 2;
        }
        captured |= found == &gr_stage_capture;
        timed |= captured && found == &gr_stage_time_graph;
        stages[n++] = found;
        p += len + (p[len] == ',');
    }
    if (n == 0 || stages[0] != &gr_stage_session || !timed) {
        fprintf(stderr, "pipe_probe: --stages: it starts with session and has capture before time_graph\n");
        return 2;
    }
    gr_error e;
    gr_error_clear(&e);
    gr_device_info info;
    if (gr_device_probe(0, &info, &e) != GR_OK) return fail("device", &e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(path, &wl, &e) != GR_OK) return fail(path, &e);
    for (int i = 0; i < nsets; i++)
        if (gr_workload_set(wl, sets[i], &e) != GR_OK) return fail(sets[i], &e);
    gr_target t = gr_target_from_info(&info);
    gr_plan *plans[8];
    int nplans = 0;
    for (const char *p = variant; *p && nplans < 8;) { /* VARIANT may be a list: each in turn */
        size_t len = strcspn(p, ",");
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)len, p);
        if (gr_plan_resolve(wl, name, &t, gr_kernel_find, gr_kernel_all_names, &plans[nplans], &e) != GR_OK)
            return fail(name, &e);
        nplans++;
        p += len + (p[len] == ',');
    }
    gr_run_opts o;
    gr_run_opts_default(&o);
    o.iters = iters;
    o.progress = 0;
    o.pdl = GR_PDL_OFF;
    o.bandwidth = bandwidth;
    o.no_capture_check = !named(list, "capture_check");
    if (gr_run_opts_resolve_pdl(&o, info.cc_major, info.cc_minor, &e) != GR_OK) return fail("pdl", &e);
    gr_run_report *r = gr_run_report_create(wl, &info, &o);
    if (!r) return fail("report", &e);
    if (bandwidth && gr_bandwidth_probe(gr_bandwidth_bytes(info.mem_free), GR_BANDWIDTH_REPS, &r->bw,
                                        &e) != GR_OK)
        return fail("bandwidth probe", &e);
    for (int i = 0; i < nplans; i++) {
        const gr_plan *plan = plans[i];
        gr_variant_run *v = gr_run_report_add(r, plan);
        gr_pipe p;
        gr_pipe_init(&p, plan, info.sm_count, &o, v);
        gr_status st = gr_pipe_run(&p, stages, n, &e);
        gr_pipe_free(&p);
        if (st != GR_OK) return fail("pipeline", &e);
        double kernels = v->graph.kernel_nodes > 0 ? (double)v->graph.kernel_nodes : 1;
        printf("{\"tool\": \"gr_pipe_probe\", \"device\": \"%s\", \"workload\": \"%s\", \"variant\": \"%s\", "
               "\"bandwidth\": %s, \"stages\": \"",
               info.name, path, plan->variant, bandwidth ? "true" : "false");
        for (int k = 0; k < n; k++) printf("%s%s", k ? "," : "", stages[k]->name);
        printf("\", \"kernel_nodes\": %zu, \"step_us\": {\"median\": %.3f, \"p10\": %.3f, \"p90\": %.3f}, "
               "\"us_per_kernel\": %.4f, \"method\": \"CUDA events per batch, untraced\"}\n",
               v->graph.kernel_nodes, v->graph_t.step_us.median, v->graph_t.step_us.p10,
               v->graph_t.step_us.p90, v->graph_t.step_us.median / kernels);
    }
    gr_run_report_destroy(r);
    for (int i = 0; i < nplans; i++) gr_plan_destroy(plans[i]);
    gr_workload_destroy(wl);
    return 0;
}
