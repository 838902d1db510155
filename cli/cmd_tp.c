/* `graphrun tp`: arguments, the checks that need no GPU (the plans of every P are loaded and
 * cross-checked against the default target first, so a bad --tp or --set exits 2 anywhere),
 * the sharding summary, then replay/tp.c's run and its report on stdout; diagnostics on stderr.
 * Exit codes as the README: 0 ok, 1 run failed (also verification), 2 usage or input, 3 no (or
 * not enough) CUDA devices, or no NCCL library. */
#include "core/jsonout.h"
#include "cli/cmd_tp.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/args.h"
#include "core/expr.h"
#include "core/plan_print.h"
#include "kernels/tp.h"
#include "replay/tp.h"

#define MAX_SETS 64

static const char *usage =
    "usage: graphrun tp [WORKLOAD] [--tp P[,P...]|auto] [options]\n"
    "\n"
    "Runs the decode step (workloads/decode_step.json, fused) with tensor parallelism over P "
    "GPUs:\n"
    "each rank owns f/P rows of W_gate and W_up and f/P columns of W_down (WORKLOAD, default\n"
    "workloads/decode_tp.json, is one rank's step), and an NCCL all-reduce sums the ranks' "
    "partial\n"
    "outputs once per layer. One process drives the P GPUs with one thread each; every rank\n"
    "captures its step, all-reduces included, into its own CUDA graph. For each P it checks graph\n"
    "== eager on every rank, the ranks against each other, the result against the unsharded step "
    "on\n"
    "one GPU and against the CPU references (unsharded, and sharded with the ranks' rounding), "
    "then\n"
    "times eager and graph with CUDA events on each rank's stream (the slowest rank is the step),\n"
    "the step without its all-reduces and the all-reduces alone (the communication share), and\n"
    "reports us/step, multiples of the per-GPU HBM floor and the launch overhead removed.\n"
    "NVLink SHARP multicast is always off (NCCL_NVLS_ENABLE=0). Without enough GPUs it prints the\n"
    "sharding and exits 3. Design and measurement: docs/tensor_parallel.md.\n"
    "\n"
    "options:\n"
    "  --tp P[,P...]|auto   tensor-parallel degrees, run in turn (default 1). P must divide f, "
    "f/P\n"
    "                       must be a multiple of 8 (4 for fp32), and P GPUs must be visible.\n"
    "                       auto: each of 1, 2, 4, 8 that fits this machine\n"
    "  --base FILE          the unsharded step (default: decode_step.json beside WORKLOAD)\n"
    "  --set NAME=VALUE     override a decode param for both workloads (B, L, d, f, r, alpha, "
    "eps,\n"
    "                       dtype); repeatable\n"
    "  --seed N             global seed mixed into every random init\n"
    "  --iters N            timed steps per mode (default 1000)\n"
    "  --warmup N           untimed steps first (default iters/10, at least 3)\n"
    "  --batches N          timed batches; median/p10/p90 are over batches (default 20)\n"
    "  --capture-mode M     thread-local (default: one capturing thread per GPU, as NCCL asks),\n"
    "                       relaxed, or global (P = 1 only)\n"
    "  --devices LIST       device of each rank, e.g. 4,5,6,7 (default 0, 1, ..., P-1)\n"
    "  --steps N            check N consecutive steps without re-initialisation (default 1)\n"
    "  --rtol X             relative L2 tolerance of every check (default: x's, derived)\n"
    "  --no-cpu-ref         skip the CPU references (graph == eager, ranks and the single-GPU\n"
    "                       step are still compared)\n"
    "  --no-comm-share      skip timing the step without its all-reduces and the all-reduces "
    "alone\n"
    "  --no-single-timing   do not time the unsharded single-GPU step (it is still run and "
    "checked)\n"
    "  --no-bandwidth       skip the bandwidth probes (no HBM floor)\n"
    "  --no-pdl             launch every kernel plainly, on every rank and the single GPU; by\n"
    "                       default the kernels that support it use programmatic dependent\n"
    "                       launch where the GPU has it (as `graphrun run`)\n"
    "  --pdl                require PDL: exit 2 on a GPU without it\n"
    "  --json FILE|-        machine-readable results (schema_version 1)\n"
    "  --plan               print every P's sharding, and the plans of ranks 0 and 1 (the others\n"
    "                       differ from rank 1 only in their slices), before running\n"
    "  --count-devices      print the number of visible CUDA devices and exit (3 when none)\n"
    "  --quiet              no progress bar\n"
    "\n"
    "examples:\n"
    "  graphrun tp --tp 1                      # one H200: the all-reduce is a real NCCL call\n"
    "  graphrun tp --tp 1,2,4,8 --json tp.json # on an 8-GPU machine\n"
    "  graphrun tp --tp 2 --plan               # without GPUs: the sharded plans, then exit 3\n";

typedef struct tp_cli {
    const char *workload, *base, *seed, *json_path;
    const char *sets[MAX_SETS];
    int nsets;
    int Ps[GR_TP_MAX_RUNS];
    int nP, tp_auto;
    int show_plan, count_devices;
    gr_tp_opts o;
} tp_cli;

const char *gr_tp_cmd_usage(void) {
    return usage;
}

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "graphrun tp: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n%s", usage);
    return 2;
}

/* Returns -1 to continue, else an exit code. */
static int parse_args(int argc, char **argv, tp_cli *c) {
    static const char *const with_value[] = {
        "--tp",           "--base",    "--set",   "--seed", "--iters", "--warmup", "--batches",
        "--capture-mode", "--devices", "--steps", "--rtol", "--json",  NULL};
    for (int i = 2; i < argc; i++) {
        gr_arg ta;
        gr_arg_take(argc, argv, &i, with_value, NULL, &ta);
        if (ta.kind == GR_ARG_ERROR) return usage_error("%s", ta.error);
        if (ta.kind == GR_ARG_POSITIONAL) {
            if (c->workload) return usage_error("unexpected argument \"%s\"", ta.value);
            c->workload = ta.value;
            continue;
        }
        const char *name = ta.name, *val = ta.value;
        if (!strcmp(name, "--help")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(name, "--tp")) {
            if (!strcmp(val, "auto")) {
                c->tp_auto = 1;
                c->nP = 0;
            } else {
                c->tp_auto = 0;
                c->nP = gr_arg_list(val, 1, GR_TP_MAX_RANKS, c->Ps, GR_TP_MAX_RUNS);
                if (c->nP < 0)
                    return usage_error("--tp takes auto or up to 8 different degrees in [1, 64] "
                                       "separated by commas, e.g. --tp 1,2,4,8; got \"%s\"",
                                       val);
            }
        } else if (!strcmp(name, "--base"))
            c->base = val;
        else if (!strcmp(name, "--set")) {
            if (c->nsets >= MAX_SETS) return usage_error("too many --set options%s", "");
            c->sets[c->nsets++] = val;
        } else if (!strcmp(name, "--seed"))
            c->seed = val;
        else if (!strcmp(name, "--iters")) {
            if (!gr_arg_int32(val, 1, 100000000, &c->o.run.iters))
                return usage_error("--iters takes a whole number >= 1, got \"%s\"", val);
        } else if (!strcmp(name, "--warmup")) {
            if (!gr_arg_int32(val, 0, 100000000, &c->o.run.warmup))
                return usage_error("--warmup takes a whole number >= 0, got \"%s\"", val);
        } else if (!strcmp(name, "--batches")) {
            if (!gr_arg_int32(val, 1, 100000, &c->o.run.batches))
                return usage_error("--batches takes a whole number >= 1, got \"%s\"", val);
        } else if (!strcmp(name, "--capture-mode")) {
            gr_error e;
            gr_error_clear(&e);
            if (gr_capture_mode_parse(val, &c->o.run.mode, &e) != GR_OK)
                return usage_error("%s", e.msg);
        } else if (!strcmp(name, "--devices")) {
            c->o.ndevices = gr_arg_list(val, 0, 1023, c->o.devices, GR_TP_MAX_RANKS);
            if (c->o.ndevices < 0)
                return usage_error("--devices takes different device ordinals separated by commas, "
                                   "e.g. --devices 4,5,6,7; got \"%s\"",
                                   val);
        } else if (!strcmp(name, "--steps")) {
            if (!gr_arg_int32(val, 1, 1000, &c->o.run.steps))
                return usage_error("--steps takes a whole number in [1, 1000], got \"%s\"", val);
        } else if (!strcmp(name, "--rtol")) {
            double v;
            if (!gr_parse_number(val, &v) || !(v > 0) || v >= 1)
                return usage_error("--rtol takes a relative L2 tolerance in (0, 1), got \"%s\"",
                                   val);
            c->o.run.rtol = v;
        } else if (!strcmp(name, "--json"))
            c->json_path = val;
        else if (!strcmp(name, "--no-cpu-ref"))
            c->o.run.cpu_reference = 0;
        else if (!strcmp(name, "--no-comm-share"))
            c->o.comm_share = 0;
        else if (!strcmp(name, "--no-single-timing"))
            c->o.single_timing = 0;
        else if (!strcmp(name, "--no-bandwidth"))
            c->o.run.bandwidth = 0;
        else if (!strcmp(name, "--pdl") || !strcmp(name, "--no-pdl")) {
            int want = !strcmp(name, "--pdl") ? GR_PDL_ON : GR_PDL_OFF;
            if (c->o.run.pdl != GR_PDL_AUTO && c->o.run.pdl != want)
                return usage_error("--pdl and --no-pdl are both given; give one%s", "");
            c->o.run.pdl = want;
        }
        else if (!strcmp(name, "--plan"))
            c->show_plan = 1;
        else if (!strcmp(name, "--count-devices"))
            c->count_devices = 1;
        else if (!strcmp(name, "--quiet"))
            c->o.run.progress = 0;
        else
            return usage_error("unknown option %s (see --help)", name);
    }
    return -1;
}

static int fail(const gr_error *e) {
    fprintf(stderr, "graphrun tp: %s\n", e->msg);
    return gr_exit_code(e->code);
}

/* What each rank of P owns and moves, from the resolved plans. */
static void print_sharding(FILE *f, const gr_tp_plans *tp, int show_plans) {
    const gr_tp_shape *s = &tp->shape;
    fprintf(f,
            "P = %d over %s (%s): f = %lld split into %d shards of %lld; d = %lld, r = %lld, "
            "B = %lld, L = %lld, %s\n",
            tp->P, tp->base->workload, tp->base->params, (long long)s->f, tp->P,
            (long long)(s->f / tp->P), (long long)s->d, (long long)s->r, (long long)s->B,
            (long long)s->L, gr_dtype_name(s->dtype));
    for (int p = 0; p < tp->P; p++) {
        if (tp->P > 8 && p == 4) {
            fprintf(f, "  ... ranks 4..%d alike ...\n", tp->P - 3);
            p = tp->P - 2;
        }
        const gr_plan *rp = tp->rank[p];
        int64_t lo, hi;
        gr_tp_owned(s->f, tp->P, p, &lo, &hi);
        char bytes[32], weights[32];
        gr_fmt_bytes(rp->bytes_read + rp->bytes_written, bytes, sizeof(bytes));
        gr_fmt_bytes(gr_plan_input_bytes(rp), weights, sizeof(weights));
        fprintf(f,
                "  rank %d: rows %lld..%lld of W_gate, W_up, B_gate, B_up; columns %lld..%lld "
                "of W_down, A_down; %d kernels + %d all-reduces per step; %s per step (%s "
                "read-only)%s\n",
                p, (long long)lo, (long long)hi - 1, (long long)lo, (long long)hi - 1,
                rp->kernels - tp->ncollectives, tp->ncollectives, bytes, weights,
                p == 0 ? "; its down kernel adds the residual x" : "");
    }
    if (show_plans)
        for (int p = 0; p < tp->P && p < 2; p++) {
            fprintf(f, "\nrank %d's plan:\n", p);
            gr_plan_print(f, tp->rank[p], 0);
        }
}

static int write_json(const char *path, json_t *j, gr_error *e) {
    return gr_json_write(path, j, "JSON", e) == GR_OK ? 0 : -1;
}

int gr_tp_cmd_main(int argc, char **argv) {
    tp_cli c;
    memset(&c, 0, sizeof(c));
    gr_tp_opts_default(&c.o);
    c.Ps[0] = 1;
    c.nP = 1;
    int rc = parse_args(argc, argv, &c);
    if (rc >= 0) return rc;
    if (c.count_devices) {
        int n = gr_tp_visible_devices();
        printf("%d\n", n);
        return n > 0 ? 0 : 3;
    }
    if (!gr_nccl_built()) {
        fprintf(stderr, "graphrun tp: %s\n", GR_NCCL_NOT_BUILT);
        return 2;
    }
    if (!c.workload) c.workload = "workloads/decode_tp.json";
    if (!isatty(2)) c.o.run.progress = 0;
    FILE *out = c.json_path && !strcmp(c.json_path, "-") ? stderr : stdout;
    gr_tp_req req = {c.workload, c.base, c.sets, c.nsets, c.seed};
    gr_error e;
    gr_error_clear(&e);
    /* Everything that needs no GPU first, against the default target (an H200). */
    gr_target t = gr_target_default();
    gr_tp_plans *tp = calloc(1, sizeof(*tp));
    if (!tp) {
        fprintf(stderr, "graphrun tp: out of memory\n");
        return 1;
    }
    if (gr_tp_load_base(&req, &t, tp, &e) != GR_OK) {
        gr_tp_plans_free(tp);
        free(tp);
        return fail(&e);
    }
    int visible = gr_tp_visible_devices();
    for (int i = 0; i < c.nP && !c.tp_auto; i++)
        if (gr_tp_check_degree(&tp->shape, c.Ps[i], &e) != GR_OK) e.code = GR_ERR_USAGE;
    if (gr_error_failed(&e)) {
        gr_tp_plans_free(tp);
        free(tp);
        return fail(&e);
    }
    if (c.tp_auto) {
        c.nP = 0;
        int cand[] = {1, 2, 4, 8};
        for (int i = 0; i < 4; i++) {
            gr_error tmp;
            gr_error_clear(&tmp);
            if (cand[i] <= (visible > 0 ? visible : 1) &&
                gr_tp_check_degree(&tp->shape, cand[i], &tmp) == GR_OK)
                c.Ps[c.nP++] = cand[i];
        }
        if (c.nP == 0) c.Ps[c.nP++] = 1; /* let the check below say why */
    }
    for (int i = 0; i < c.nP; i++) {
        if (gr_tp_load_ranks(&req, c.Ps[i], &t, tp, &e) != GR_OK) {
            gr_tp_plans_free(tp);
            free(tp);
            return fail(&e);
        }
        if (c.show_plan || visible < c.Ps[i]) {
            print_sharding(out, tp, c.show_plan);
            fprintf(out, "\n");
        }
        if (c.o.run.mode == GR_CAPTURE_GLOBAL && c.Ps[i] > 1) {
            gr_tp_plans_free(tp);
            free(tp);
            gr_error_set(&e, GR_ERR_USAGE, "--capture-mode global",
                         "with P = %d the ranks' threads capture at the same time, and a global-"
                         "mode capture forbids the other threads' unsafe CUDA calls (NCCL asks for "
                         "thread-local capture when one thread drives each GPU). Use thread-local "
                         "(the default) or relaxed",
                         c.Ps[i]);
            return fail(&e);
        }
    }
    gr_tp_plans_free(tp);
    free(tp);
    for (int i = 0; i < c.nP; i++)
        if (gr_tp_check_devices(c.Ps[i], visible, &e) != GR_OK) {
            fprintf(stderr,
                    "graphrun tp: %s\ngraphrun tp: the workloads are valid and the "
                    "sharding is above; nothing was run (exit 3)\n",
                    e.msg);
            return gr_exit_code(e.code);
        }
    gr_tp_report *r = calloc(1, sizeof(*r));
    if (!r) {
        fprintf(stderr, "graphrun tp: out of memory\n");
        return 1;
    }
    gr_status st = gr_tp_run(&req, c.Ps, c.nP, &c.o, r, &e);
    if (r->single.device || r->single.checks.n || r->nruns) {
        gr_tp_report_text(out, r);
        fflush(out);
    }
    rc = 0;
    if (c.json_path) {
        json_t *j = gr_tp_report_json(r);
        gr_error je;
        gr_error_clear(&je);
        if (write_json(c.json_path, j, &je) != 0) rc = fail(&je);
        json_decref(j);
    }
    if (st != GR_OK) rc = fail(&e);
    gr_tp_report_clear(r);
    free(r);
    return rc;
}
