/* graphrun: command-line entry. Parses arguments, calls the stages (load -> resolve -> run ->
 * report), prints results on stdout and diagnostics on stderr, and picks the exit code:
 * 0 ok, 1 run failed (including verification), 2 bad input or usage, 3 no CUDA device. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/jsonout.h"
#include "capture/capture.h"
#include "core/criteo.h"
#include "core/device.h"
#include "core/args.h"
#include "core/expr.h"
#include "core/plan_print.h"
#include "core/workload.h"
#include "cupti_tools/cupti_check.h"
#include "cupti_tools/report.h"
#include "kernels/registry.h"
#include "replay/load.h"
#include "replay/run.h"
#include "replay/timeline.h"
#include "replay/trace.h"
#include "cli/cmd_service.h"
#include "cli/cmd_tp.h"
#include "gr_version.h"

#define MAX_SETS 64

typedef struct cli {
    const char *cmd;
    const char *workload;
    const char *variant;
    const char *sets[MAX_SETS];
    int nsets;
    const char *json_path;
    const char *seed;
    int full;
    int show_plan;
    gr_run_opts run;
    int device;
    const char *input; /* --input FILE.tsv (Criteo rows for the DLRM workloads) */
    int skip_bad_lines;
    const char *trace_path; /* --trace FILE: a traced run after the untraced one */
    int trace_iters;
    const char *timeline_path; /* --timeline FILE: Chrome Trace Event JSON of the traced run */
    const char *html_path;     /* --html FILE: self-contained HTML report */
    const char *arch;          /* validate --arch sm_XY: user modules' target without a GPU */
    int argc;
    char **argv;
} cli;

static const char *usage_main =
    "graphrun " GR_VERSION " - remove kernel-launch overhead with CUDA Graphs and measure it\n"
    "\n"
    "usage: graphrun COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  run WORKLOAD        run eagerly, capture a CUDA graph, verify graph == eager == CPU\n"
    "                      reference, time both, report (needs a GPU)\n"
    "  validate WORKLOAD   check a workload and print its resolved plan and HBM accounting\n"
    "                      (no GPU needed)\n"
    "  kernels             list the kernels workloads can use, with their arguments\n"
    "  capture WORKLOAD    capture into the replay service, which keeps the graph (starts one)\n"
    "  replay [NAME]       replay a kept graph N times in the service: --iters 10000\n"
    "  serve | status | list | drop NAME | stop   the replay service (docs/service.md)\n"
    "  tp [WORKLOAD]       decode step split over P GPUs (tensor parallelism), NCCL all-reduce\n"
    "                      captured in each GPU's graph: --tp 2 (docs/tensor_parallel.md)\n"
    "  help [COMMAND]      show help for a command\n"
    "\n"
    "exit codes: 0 ok, 1 run failed (also a failed verification), 2 bad input or usage,\n"
    "            3 no CUDA device\n"
    "\n"
    "example:\n"
    "  graphrun run workloads/pointwise_fusion.json --variant fused_vec --iters 2000\n";

static const char *usage_run =
    "usage: graphrun run WORKLOAD [options]\n"
    "\n"
    "Loads and validates WORKLOAD, then for each variant (all, or the one given with --variant):\n"
    "runs the CPU reference, one eager step, captures the step into a CUDA graph (with the\n"
    "capture checker attached: every call that breaks or escapes the capture is named, with a\n"
    "fix; when the full graph cannot be used the other ops are captured piecewise), replays it,\n"
    "checks graph == eager == reference (outputs without an init are poisoned with NaN first,\n"
    "in-place ones re-seeded; docs/verification.md), and times eager\n"
    "launches and graph replays with CUDA events (untraced). Without a GPU it prints the plan\n"
    "and exits with code 3.\n"
    "\n"
    "options:\n"
    "  --variant V            run one variant (default: every variant)\n"
    "  --set NAME=VALUE       override a param (repeatable), e.g. --set n=4096\n"
    "  --seed N               global seed mixed into every random init (default: workload's)\n"
    "  --iters N              timed steps per mode (default 1000)\n"
    "  --warmup N             untimed steps first (default iters/10, at least 3)\n"
    "  --batches N            timed batches; median/p10/p90 are over batches (default 20)\n"
    "  --capture-mode M       global | thread-local | relaxed (default global)\n"
    "  --dot FILE             write the captured graph (cudaGraphDebugDotPrint); with several\n"
    "                         variants FILE.VARIANT.dot\n"
    "  --json FILE|-          machine-readable results (schema_version 1)\n"
    "  --no-cpu-ref           skip the CPU reference (graph is still checked against eager\n"
    "                         and variants against each other)\n"
    "  --no-bandwidth         skip the bandwidth probe (no HBM floor)\n"
    "  --no-launch-floor      skip the launch floor: after the variants, graphs of 64 and 1024\n"
    "                         empty kernels timed in this process, the cost of a graph node and\n"
    "                         of a graph launch; each variant's at those costs against its step\n"
    "  --no-pdl               launch every kernel plainly. By default the kernels that support\n"
    "                         programmatic dependent launch use it on GPUs that have it (compute\n"
    "                         capability 9.0+): the next kernel starts launching while this one\n"
    "                         runs; the report says which ran\n"
    "  --pdl                  require PDL: exit 2 on a GPU without it\n"
    "  --unroll N             also capture N steps into one graph, check it against N eager\n"
    "                         steps, and time graph replay with it (per step = time / N)\n"
    "  --device-loop N        also capture a device-resident loop: one graph launch runs N\n"
    "                         steps behind a conditional WHILE node (CUDA 12.4+), checked\n"
    "                         against N eager steps; reports GPU and host time per step\n"    "  --piecewise            capture piecewise even when the full graph works: every op the\n"
    "                         capture checker flags (hazards too) runs eagerly between graphs\n"
    "  --no-piecewise         never: a capture that breaks or lets work escape fails (exit 1)\n"
    "                         (default: piecewise only when the full graph cannot be used)\n"
    "  --no-capture-check     capture without the checker (CUPTI callbacks around each capture\n"
    "                         that name the op, API, stream, error and fix of every call that\n"
    "                         breaks or escapes capture; docs/capture_check.md)\n"
    "  --capture-check-record FILE  write what the checker recorded during each variant's full\n"
    "                         capture (JSON lines; FILE.VARIANT.jsonl with several variants)\n"
    "  --input FILE.tsv       feed Criteo Kaggle rows (train.txt layout) to a DLRM workload's\n"
    "                         buffers dense and idx.{t}; B = the file's rows unless --set B=N\n"
    "                         takes the first N (docs/dlrm_small.md)\n"
    "  --skip-bad-lines       with --input: skip and count malformed lines instead of stopping\n"
    "                         at the first one (exit 2, naming its line)\n"
    "  --plan                 print the resolved plan before running\n"
    "  --device N             CUDA device ordinal (default 0)\n"
    "  --quiet                no progress bar\n"
    "  --trace FILE           then run every variant again with CUPTI activity tracing and write\n"
    "                         the trace (JSON lines; `cupti-launchstat report FILE` analyses it);\n"
    "                         prints traced vs untraced step time: tracing inflates launch costs,\n"
    "                         the untraced numbers stay the measurement\n"
    "  --trace-iters N        traced steps per mode (default: --iters, at most 200)\n"
    "  --timeline FILE        then a traced run (as --trace, into a temporary trace unless --trace\n"
    "                         names one) written as Chrome Trace Event JSON for ui.perfetto.dev or\n"
    "                         chrome://tracing: a process per variant and mode, a track per stream\n"
    "                         and for host API calls and NVTX ranges, launch-to-kernel arrows\n"
    "  --html FILE            and/or a self-contained HTML report: one eager and one graph step per\n"
    "                         variant on one time scale (traced), gap histograms, the untraced\n"
    "                         step-time table and the HBM accounting (docs/timelines.md)\n"
    "\n"
    "example:\n"
    "  graphrun run workloads/launch_bound.json --iters 10000 --json out.json\n";

static const char *usage_validate =
    "usage: graphrun validate WORKLOAD [--variant V] [--set NAME=VALUE]... [--json FILE|-] "
    "[--full]\n"
    "                         [--input FILE.tsv [--skip-bad-lines]]\n"
    "\n"
    "Checks WORKLOAD (a file, or - for stdin: syntax, schema, params, shapes and dtypes against\n"
    "each kernel's argument schema) and prints the resolved plan: buffers, ops, kernels, launch\n"
    "dims, the bytes each op reads and writes, totals per step, and the round trips fusion saves\n"
    "across variants.\n"
    "Needs no GPU; launch dims assume an H200 (132 SMs) unless a device is present.\n"
    "\n"
    "options:\n"
    "  --variant V      one variant (default: every variant)\n"
    "  --set NAME=VALUE override a param (repeatable)\n"
    "  --json FILE|-    the plan as JSON: with one variant the plan object (ops, buffers,\n"
    "                   totals); with several {\"variants\": [plans], \"accounting\": [...]}\n"
    "  --full           list every op and buffer (default: the first 60)\n"
    "  --input FILE.tsv check a Criteo Kaggle file and its binding to the workload's buffers\n"
    "                   (as graphrun run --input does), with --skip-bad-lines to skip bad lines\n"
    "  --arch sm_XY     compile and check the workload's own kernels (\"modules\") for this\n"
    "                   architecture, e.g. sm_80 or sm_90a (default sm_90, an H200)\n"
    "\n"
    "example:\n"
    "  graphrun validate workloads/pointwise_fusion.json --set n=4096\n";

static const char *usage_kernels =
    "usage: graphrun kernels [NAME...] [--json FILE|-]\n"
    "\n"
    "Lists the kernel registry: name, inputs, outputs, attributes. With NAMEs, those kernels only\n"
    "(an unknown name is exit 2). --json writes the same as JSON (schema_version 1; `-`: stdout,\n"
    "nothing else on it).\n"
    "\n"
    "example:\n"
    "  graphrun kernels add_mul_act_vec\n"
    "  graphrun kernels --json - | python3 -m json.tool\n";

/* An argument echoed in a message: at most 120 bytes, then "..." (a hostile argument can be
 * megabytes long). */
static const char *clip(const char *arg, char *buf, size_t size) {
    size_t n = strlen(arg);
    if (n < 120 || size < 128) return arg;
    snprintf(buf, size, "%.117s...", arg);
    return buf;
}

/* The message, then the command's usage line and where the options are: the full usage would push
 * the message off the screen. */
static int usage_error(const char *cmd_usage, const char *fmt, const char *arg) {
    char c[128];
    fprintf(stderr, "graphrun: ");
    fprintf(stderr, fmt, arg ? clip(arg, c, sizeof(c)) : "");
    const char *u = strstr(cmd_usage, "usage: graphrun ");
    if (!u) u = cmd_usage;
    int len = (int)strcspn(u, "\n");
    const char *cmd = u + (u == cmd_usage && strncmp(u, "usage: ", 7) ? 0 : 16);
    int clen = (int)strcspn(cmd, " \n");
    if (!strncmp(cmd, "COMMAND", 7)) clen = 0;
    fprintf(stderr, "\n%.*s\n(graphrun %.*s%s--help lists the %s)\n", len, u, clen, cmd,
            clen ? " " : "", clen ? "options" : "commands");
    return 2;
}

static int bad_int(const char *cmd_usage, const char *opt, int lo, int hi, const char *val) {
    char fmt[160];
    snprintf(fmt, sizeof(fmt), "%s takes a whole number in [%d, %d], got \"%%s\"", opt, lo, hi);
    return usage_error(cmd_usage, fmt, val);
}

/* Options of `graphrun run` that `validate` would ignore: refused there, not silently dropped. */
static int run_only(const char *name) {
    static const char *validate_opts[] = {"--help",           "--variant", "--set",
                                          "--json",           "--full",    "--input",
                                          "--skip-bad-lines", "--seed",    "--arch",  NULL};
    for (const char **v = validate_opts; *v; v++)
        if (!strcmp(*v, name)) return 0;
    return 1;
}

/* Returns -1 to continue, else an exit code. */
static int parse_args(int argc, char **argv, cli *c, const char *cmd_usage) {
    int is_validate = !strcmp(argv[1], "validate");
    const char *seen[32] = {NULL}; /* valued options given so far (each at most once) */
    int nseen = 0;
    static const char *const with_value[] = {
        "--variant", "--set",   "--json",       "--seed",  "--iters", "--warmup",
        "--batches", "--capture-mode", "--dot", "--device", "--unroll", "--device-loop", "--input",
        "--trace",   "--trace-iters",  "--timeline", "--html", "--capture-check-record", "--arch",
        NULL};
    for (int i = 2; i < argc; i++) {
        gr_arg ta;
        gr_arg_take(argc, argv, &i, with_value, NULL, &ta);
        if (ta.kind == GR_ARG_ERROR) return usage_error(cmd_usage, "%s", ta.error);
        const char *name = ta.name, *val = ta.value;
        if (ta.kind == GR_ARG_OPTION && name[1] != '-')
            return usage_error(cmd_usage, "unknown option %s (options start with --; see --help)",
                               name);
        if (ta.kind == GR_ARG_POSITIONAL) {
            const char *a = ta.value;
            if (c->workload)
                return usage_error(cmd_usage, "unexpected argument \"%s\" (one WORKLOAD only)", a);
            if (!a[0])
                return usage_error(cmd_usage,
                                   "the WORKLOAD argument is empty; give a workload file%s", "");
            c->workload =
                strcmp(a, "-") ? a : gr_load_stdin; /* - : stdin, bounded (replay/load.c) */
            continue;
        }
        int needs = 0;
        for (const char *const *w = with_value; *w; w++)
            if (!strcmp(*w, name)) needs = 1;
        if (is_validate && run_only(name)) {
            int known = needs;
            static const char *flags[] = {"--plan",         "--pdl",          "--no-pdl",       "--no-cpu-ref",
                                          "--no-bandwidth", "--no-launch-floor", "--quiet", "--no-capture-check",
                                          "--piecewise",    "--no-piecewise", NULL};
            for (const char **f = flags; *f; f++)
                if (!strcmp(*f, name)) known = 1;
            if (known)
                return usage_error(cmd_usage,
                                   "option %s is for graphrun run; validate runs nothing", name);
        }
        if (needs && strcmp(name, "--set") != 0) {
            for (int k = 0; k < nseen; k++)
                if (!strcmp(seen[k], name))
                    return usage_error(cmd_usage, "option %s is given twice; give it once", name);
            for (const char *const *w = with_value; *w; w++)
                if (!strcmp(*w, name) && nseen < (int)(sizeof(seen) / sizeof(seen[0])))
                    seen[nseen++] = *w;
        }
        if (!strcmp(name, "--help")) {
            fputs(cmd_usage, stdout);
            return 0;
        } else if (!strcmp(name, "--variant")) c->variant = val;
        else if (!strcmp(name, "--set")) {
            if (c->nsets >= MAX_SETS)
                return usage_error(cmd_usage, "more than %s --set options", "64");
            const char *eq = strchr(val, '=');
            if (!eq)
                return usage_error(cmd_usage,
                                   "--set \"%s\": expected NAME=VALUE, e.g. --set n=4096", val);
            for (int k = 0; k < c->nsets; k++) /* the same param twice: which one was meant? */
                if (!strncmp(c->sets[k], val, (size_t)(eq - val) + 1))
                    return usage_error(cmd_usage,
                                       "--set \"%s\": this param is set twice; give it once", val);
            c->sets[c->nsets++] = val;
        } else if (!strcmp(name, "--json")) c->json_path = val;
        else if (!strcmp(name, "--seed")) c->seed = val;
        else if (!strcmp(name, "--full")) c->full = 1;
        else if (!strcmp(name, "--arch")) {
            if (!is_validate)
                return usage_error(cmd_usage, "--arch is for graphrun validate; a run compiles "
                                              "user kernels for the GPU it runs on%s", "");
            c->arch = val;
        }
        else if (!strcmp(name, "--plan")) c->show_plan = 1;
        else if (!strcmp(name, "--iters")) {
            if (!gr_arg_int32(val, 1, 100000000, &c->run.iters))
                return bad_int(cmd_usage, name, 1, 100000000, val);
        } else if (!strcmp(name, "--warmup")) {
            if (!gr_arg_int32(val, 0, 100000000, &c->run.warmup))
                return bad_int(cmd_usage, name, 0, 100000000, val);
        } else if (!strcmp(name, "--batches")) {
            if (!gr_arg_int32(val, 1, 100000, &c->run.batches))
                return bad_int(cmd_usage, name, 1, 100000, val);
        } else if (!strcmp(name, "--capture-mode")) {
            gr_error e;
            gr_error_clear(&e);
            if (gr_capture_mode_parse(val, &c->run.mode, &e) != GR_OK)
                return usage_error(cmd_usage, "%s", e.msg);
        } else if (!strcmp(name, "--dot")) c->run.dot_path = val;
        else if (!strcmp(name, "--pdl") || !strcmp(name, "--no-pdl")) {
            int want = !strcmp(name, "--pdl") ? GR_PDL_ON : GR_PDL_OFF;
            if (c->run.pdl != GR_PDL_AUTO && c->run.pdl != want)
                return usage_error(cmd_usage, "--pdl and --no-pdl are both given; give one%s", "");
            c->run.pdl = want;
        }
        else if (!strcmp(name, "--unroll")) {
            if (!gr_arg_int32(val, 1, 10000, &c->run.unroll))
                return bad_int(cmd_usage, name, 1, 10000, val);
        }
        else if (!strcmp(name, "--device-loop")) {
            if (!gr_arg_int32(val, 1, 100000, &c->run.device_loop))
                return bad_int(cmd_usage, name, 1, 100000, val);
        }
        else if (!strcmp(name, "--device")) {
            if (!gr_arg_int32(val, 0, 1024, &c->device)) return bad_int(cmd_usage, name, 0, 1024, val);
        } else if (!strcmp(name, "--no-cpu-ref")) c->run.cpu_reference = 0;
        else if (!strcmp(name, "--no-bandwidth")) c->run.bandwidth = 0;
        else if (!strcmp(name, "--no-launch-floor")) c->run.launch_floor = 0;
        else if (!strcmp(name, "--quiet")) c->run.progress = 0;
        else if (!strcmp(name, "--no-capture-check")) c->run.no_capture_check = 1;
        else if (!strcmp(name, "--piecewise")) c->run.piecewise = c->run.piecewise == GR_PW_OFF ? -1 : GR_PW_ON;
        else if (!strcmp(name, "--no-piecewise")) c->run.piecewise = c->run.piecewise == GR_PW_ON ? -1 : GR_PW_OFF;
        else if (!strcmp(name, "--capture-check-record")) c->run.capture_record = val;
        else if (!strcmp(name, "--input")) c->input = val;
        else if (!strcmp(name, "--skip-bad-lines")) c->skip_bad_lines = 1;
        else if (!strcmp(name, "--trace")) c->trace_path = val;
        else if (!strcmp(name, "--timeline")) c->timeline_path = val;
        else if (!strcmp(name, "--html")) c->html_path = val;
        else if (!strcmp(name, "--trace-iters")) {
            if (!gr_arg_int32(val, 1, 100000000, &c->trace_iters))
                return bad_int(cmd_usage, name, 1, 100000000, val);
        }
        else return usage_error(cmd_usage, "unknown option %s (see --help)", name);
    }
    if (c->skip_bad_lines && !c->input)
        return usage_error(cmd_usage, "--skip-bad-lines goes with --input FILE.tsv%s", "");
    if (c->run.piecewise < 0) return usage_error(cmd_usage, "--piecewise and --no-piecewise contradict each other%s", "");
    if (c->run.no_capture_check && c->run.piecewise == GR_PW_ON)
        return usage_error(cmd_usage, "--piecewise needs the capture checker to find the ops to run eagerly; drop "
                                      "--no-capture-check%s", "");
    if (c->run.no_capture_check && c->run.capture_record)
        return usage_error(cmd_usage, "--capture-check-record records what the capture checker sees; drop "
                                      "--no-capture-check%s", "");
    if (c->trace_iters && !c->trace_path && !c->timeline_path && !c->html_path)
        return usage_error(cmd_usage, "--trace-iters goes with --trace FILE, --timeline FILE or --html FILE%s", "");
    c->argc = argc;
    c->argv = argv;
    return -1;
}

static int fail(const gr_error *e) {
    fprintf(stderr, "graphrun: %s\n", e->msg); /* ends "(N more problems not shown)" when cut */
    return gr_exit_code(e->code);
}

static int write_json(const char *path, json_t *j, gr_error *e) {
    return gr_json_write(path, j, "JSON", e) == GR_OK ? 0 : -1;
}

static void print_input(FILE *f, const gr_loaded *l) {
    const gr_criteo_data *d = l->input;
    if (!d) return;
    fprintf(f, "input    %s: %lld rows (B) from %lld lines, %lld malformed line%s skipped; "
               "%.1f%% clicks; %lld empty integer and %lld empty categorical fields\n",
            d->path, (long long)d->rows, (long long)d->lines, (long long)d->skipped,
            d->skipped == 1 ? "" : "s", 100.0 * (double)d->positives / (double)d->rows,
            (long long)d->missing_dense, (long long)d->missing_cat);
    for (int i = 0; i < d->nbad; i++)
        fprintf(stderr, "graphrun: %s:%lld:%d: skipped: %s\n", d->path, (long long)d->bad[i].line,
                d->bad[i].column, d->bad[i].why);
    if (d->skipped > d->nbad)
        fprintf(stderr, "graphrun: %s: %lld more malformed lines skipped\n", d->path,
                (long long)(d->skipped - d->nbad));
}

/* Through replay/load.c, the loader the replay service uses too: one way to read a workload,
 * its input stage included. */
static gr_status load_and_resolve(const cli *c, const gr_target *target, gr_loaded *l, gr_error *e) {
    gr_load_req req = {c->workload, c->variant,  c->sets, c->nsets,
                       c->seed,     0,           c->input, c->skip_bad_lines};
    return gr_load_resolve(&req, target, l, e);
}

static void print_plans_to(FILE *f, const gr_loaded *l, int max_ops) {
    for (int i = 0; i < l->nplans; i++) {
        if (i) fprintf(f, "\n");
        gr_plan_print(f, l->plans[i], max_ops);
    }
    fprintf(f, "\n");
    gr_accounting_print(f, (const gr_plan *const *)l->plans, l->nplans);
}

static void print_plans(const gr_loaded *l, int max_ops) {
    print_plans_to(stdout, l, max_ops);
}

static json_t *plans_json(const gr_loaded *l, int single) {
    if (single) return (json_t *)gr_plan_to_json(l->plans[0]);
    json_t *root = json_object();
    json_object_set_new(root, "schema_version", json_integer(1));
    json_object_set_new(root, "workload", json_string(l->wl->name));
    json_object_set_new(root, "source", json_string(l->wl->path));
    json_t *arr = json_array();
    for (int i = 0; i < l->nplans; i++) json_array_append_new(arr, (json_t *)gr_plan_to_json(l->plans[i]));
    json_object_set_new(root, "variants", arr);
    json_object_set_new(root, "accounting",
                        (json_t *)gr_accounting_to_json((const gr_plan *const *)l->plans, l->nplans));
    return root;
}

static int cmd_validate(cli *c) {
    if (!c->workload) return usage_error(usage_validate, "validate needs a WORKLOAD file%s", "");
    gr_error e;
    gr_error_clear(&e);
    gr_target t = gr_target_default();
    if (c->arch && gr_target_set_arch(&t, c->arch, &e) != GR_OK) return fail(&e);
    gr_loaded l;
    if (load_and_resolve(c, &t, &l, &e) != GR_OK) {
        gr_loaded_free(&l);
        return fail(&e);
    }
    int to_stdout_json = c->json_path && !strcmp(c->json_path, "-");
    print_input(to_stdout_json ? stderr : stdout, &l);
    if (!to_stdout_json) {
        print_plans(&l, c->full ? 0 : 60);
        printf("\n%s: valid (%d variant%s)\n", c->workload, l.nplans, l.nplans == 1 ? "" : "s");
    }
    int rc = 0;
    if (c->json_path) {
        json_t *j = plans_json(&l, c->variant != NULL || l.nplans == 1);
        if (write_json(c->json_path, j, &e) != 0) rc = fail(&e);
        json_decref(j);
    }
    gr_loaded_free(&l);
    return rc;
}

/* --timeline / --html from the traced run (replay/timeline.c). */
static void export_timelines(FILE *out, const cli *c, const gr_run_report *r,
                             const gr_trace_result *tr, const char *command, gr_error *te) {
    gr_export_result x;
    if (gr_export_timelines(r, tr, c->timeline_path, c->html_path, command, &x, te) != GR_OK) return;
    fprintf(out, "\ntimelines of the traced run (CUPTI tracing on, %d steps per mode; the untraced numbers above stay the "
           "measurement): %zu kernels, %zu launch-to-kernel flows, %zu NVTX ranges\n",
           tr->iters, x.kernels, x.flows, x.nvtx);
    if (c->timeline_path)
        fprintf(out, "  Chrome Trace Event JSON: %s (%zu processes; open it in ui.perfetto.dev or chrome://tracing)\n",
               c->timeline_path, x.procs);
    if (c->html_path)
        fprintf(out, "  HTML report: %s (%d variant%s, eager vs graph; one self-contained file)\n",
               c->html_path, x.figures, x.figures == 1 ? "" : "s");
}

static int cmd_run(cli *c) {
    if (!c->workload) return usage_error(usage_run, "run needs a WORKLOAD file%s", "");
    gr_error e;
    gr_error_clear(&e);
    gr_device_info info;
    gr_error deverr;
    gr_error_clear(&deverr);
    gr_status dst = gr_device_probe(c->device, &info, &deverr);
    gr_target t = dst == GR_OK ? gr_target_from_info(&info) : gr_target_default();
    gr_loaded l;
    if (load_and_resolve(c, &t, &l, &e) != GR_OK || (c->trace_path && gr_trace_check_path(c->trace_path, &e) != GR_OK) ||
        (c->timeline_path && gr_export_check_path("--timeline", c->timeline_path, &e) != GR_OK) ||
        (c->html_path && gr_export_check_path("--html", c->html_path, &e) != GR_OK)) {
        gr_loaded_free(&l);
        return fail(&e);
    }
    /* --json -: stdout carries the JSON document only; the text report goes to stderr */
    FILE *out = c->json_path && !strcmp(c->json_path, "-") ? stderr : stdout;
    print_input(out, &l);
    char other[640]; /* --trace under another CUPTI client: say so now, not after the run */
    if ((c->trace_path || c->timeline_path || c->html_path) &&
        gr_cupti_other_client(NULL, other, sizeof(other)))
        fprintf(stderr, "graphrun: warning: --trace/--timeline/--html: %s\n", other);
    if (dst != GR_OK) {
        print_plans_to(out, &l, c->full ? 0 : 60);
        fprintf(stderr, "\ngraphrun: %s\ngraphrun: the workload is valid and its plan is above; "
                        "nothing was run (exit 3)\n",
                deverr.msg);
        gr_loaded_free(&l);
        return gr_exit_code(deverr.code);
    }
    if (gr_run_opts_resolve_pdl(&c->run, info.cc_major, info.cc_minor, &e) != GR_OK) {
        gr_loaded_free(&l);
        return fail(&e);
    }
    if (c->show_plan) {
        print_plans_to(out, &l, c->full ? 0 : 60);
        fprintf(out, "\n");
    } else {
        fprintf(out, "workload %s (%s)\nparams   %s\n", l.wl->name, c->workload, l.plans[0]->params);
    }
    if (!isatty(2)) c->run.progress = 0;
    gr_run_report *r = gr_run_report_create(l.wl, &info, &c->run);
    if (!r) {
        gr_loaded_free(&l);
        fprintf(stderr, "graphrun: out of memory\n");
        return 1;
    }
    gr_status st = gr_run_plans((const gr_plan *const *)l.plans, l.nplans, r, &e);
    gr_report_text(out, r);
    for (int i = 0; i < r->nv; i++) { /* the capture check's verdicts, in short (the report has the findings) */
        const gr_capcheck_variant *cv = &r->v[i].cc;
        char first[1400] = "";
        for (int k = 0; k < cv->full.n && !first[0]; k++)
            if (gr_finding_blocks(&cv->full.f[k])) gr_finding_str(&cv->full.f[k], first, sizeof(first));
        if (cv->attempted && !cv->checked && cv->why[0])
            fprintf(stderr, "graphrun: variant %s: capture not checked: %s\n", r->v[i].plan->variant, cv->why);
        else if (cv->full_blocked)
            fprintf(stderr, "graphrun: variant %s: the full graph cannot be used (%zu blocking finding%s; first: %s)%s\n",
                    r->v[i].plan->variant, cv->full.blocking, cv->full.blocking == 1 ? "" : "s", first,
                    cv->piecewise ? (cv->pw_verified ? "; ran piecewise, verified" : "; piecewise run not verified")
                                  : "");
    }
    fprintf(out, "\n");
    gr_accounting_print(out, (const gr_plan *const *)l.plans, l.nplans);
    fflush(out);
    /* --trace: the same variants again, traced (replay/trace.c) */
    gr_trace_result *tr = NULL;
    gr_error te;
    gr_error_clear(&te);
    /* --timeline/--html need the traced run too: into a temporary trace unless --trace names one */
    int exports = c->timeline_path || c->html_path;
    const char *trace_file = c->trace_path;
    char tmp_trace[1024] = "";
    if (exports && !trace_file && st == GR_OK && gr_export_temp_trace(tmp_trace, sizeof(tmp_trace), &te) == GR_OK)
        trace_file = tmp_trace;
    if ((c->trace_path || exports) && st != GR_OK) {
        fprintf(stderr, "graphrun: %s: skipped, the untraced run failed\n", c->trace_path ? "--trace" : "--timeline/--html");
    } else if (trace_file) {
        char command[2048] = "";
        for (int i = 0, o = 0; i < c->argc && o < (int)sizeof(command) - 2; i++)
            o += snprintf(command + o, sizeof(command) - (size_t)o, "%s%s", i ? " " : "", c->argv[i]);
        gr_trace_opts topt = {trace_file, c->trace_iters, command};
        tr = calloc(1, sizeof(*tr));
        if (!tr) gr_error_set(&te, GR_ERR_NOMEM, "--trace", "out of host memory");
        else if (gr_trace_run(r, &c->run, &topt, tr, &te) == GR_OK) {
            if (c->trace_path) gr_trace_print(out, tr);
            if (exports) export_timelines(out, c, r, tr, command, &te);
        }
        fflush(out);
        if (tr && tr->cupti.dropped)
            fprintf(stderr, "graphrun: warning: CUPTI dropped %llu activity records; the traced counts and gaps "
                            "are incomplete\n", (unsigned long long)tr->cupti.dropped);
        gr_ls_warning tw[8];
        size_t ntw = tr && tr->analysis ? gr_ls_warnings(tr->analysis, tw, 8) : 0;
        for (size_t i = 0; i < ntw && i < 8; i++)
            fprintf(stderr, "graphrun: warning: --trace: %s\n", tw[i].msg);
    }
    int rc = 0;
    if (c->json_path) {
        json_t *j = gr_report_json(r);
        if (tr && !gr_error_failed(&te) && c->trace_path) json_object_set_new(j, "trace", (json_t *)gr_trace_json(tr));
        gr_error je;
        gr_error_clear(&je);
        if (write_json(c->json_path, j, &je) != 0) rc = fail(&je);
        json_decref(j);
    }
    if (gr_error_failed(&te)) {
        rc = fail(&te);
        fprintf(stderr, "graphrun: the results above are from the untraced run and stand; the trace is "
                        "missing or incomplete\n");
    }
    gr_trace_result_free(tr);
    free(tr);
    if (tmp_trace[0]) unlink(tmp_trace);
    if (st != GR_OK) rc = fail(&e);
    gr_run_report_destroy(r);
    gr_loaded_free(&l);
    return rc;
}

static void print_kernel(const gr_kernel_def *k) {
    printf("%-18s %s\n", k->name, k->summary);
    printf("%-18s inputs: %s; outputs: %s\n", "", k->inputs_doc ? k->inputs_doc : "-",
           k->outputs_doc ? k->outputs_doc : "-");
    for (int a = 0; a < k->nattrs; a++) {
        const gr_attr_spec *s = &k->attrs[a];
        printf("%-18s attr %s (%s%s): %s\n", "", s->name,
               s->type == GR_ATTR_INT ? "int" : s->type == GR_ATTR_FLOAT ? "float"
               : s->type == GR_ATTR_BOOL ? "bool" : "enum",
               s->required ? ", required" : "", s->help ? s->help : "");
    }
    if (k->flags & GR_KF_LIBRARY) printf("%-18s (launches through cuBLAS)\n", "");
    if (k->flags & GR_KF_HOST) printf("%-18s (does host-side work; may break stream capture)\n", "");
}

/* graphrun kernels [NAME...]: every kernel, or each one named (all names are checked first, so
 * a typo anywhere is exit 2 with nothing printed). */
static json_t *kernel_json(const gr_kernel_def *k) {
    json_t *attrs = json_array();
    for (int a = 0; a < k->nattrs; a++) {
        const gr_attr_spec *sp = &k->attrs[a];
        json_t *ja = json_pack("{s:s, s:s, s:b, s:s}", "name", sp->name, "type",
                               sp->type == GR_ATTR_INT     ? "int"
                               : sp->type == GR_ATTR_FLOAT ? "float"
                               : sp->type == GR_ATTR_BOOL  ? "bool"
                                                           : "enum",
                               "required", sp->required, "help", sp->help ? sp->help : "");
        if (sp->type == GR_ATTR_ENUM) {
            json_t *ch = json_array();
            for (const char *const *c = sp->choices; c && *c; c++) json_array_append_new(ch, json_string(*c));
            json_object_set_new(ja, "choices", ch);
            if (sp->def_str) json_object_set_new(ja, "default", json_string(sp->def_str));
        } else if (!sp->required) {
            json_object_set_new(ja, "default", json_real(sp->def_num));
        }
        json_array_append_new(attrs, ja);
    }
    return json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:o, s:b, s:b, s:b}", "name", k->name,
                     "summary", k->summary ? k->summary : "", "inputs", k->inputs_doc ? k->inputs_doc : "",
                     "outputs", k->outputs_doc ? k->outputs_doc : "", "min_inputs", k->min_inputs,
                     "max_inputs", k->max_inputs, "min_outputs", k->min_outputs, "max_outputs",
                     k->max_outputs, "attrs", attrs, "library", (k->flags & GR_KF_LIBRARY) != 0,
                     "host_work", (k->flags & GR_KF_HOST) != 0, "pdl", (k->flags & GR_KF_PDL) != 0);
}

static int cmd_kernels(int argc, char **argv) {
    int bad = 0;
    const char *json_path = NULL;
    const char *names[256];
    int nnames = 0;
    static const char *const with_value[] = {"--json", NULL};
    for (int i = 2; i < argc; i++) {
        char c[128];
        gr_arg ta;
        gr_arg_take(argc, argv, &i, with_value, NULL, &ta);
        if (ta.kind == GR_ARG_ERROR) return usage_error(usage_kernels, "%s", ta.error);
        if (ta.kind == GR_ARG_OPTION && !strcmp(ta.name, "--help")) {
            fputs(usage_kernels, stdout);
            return 0;
        } else if (ta.kind == GR_ARG_OPTION && !strcmp(ta.name, "--json")) {
            if (json_path) return usage_error(usage_kernels, "option --json is given twice%s", "");
            json_path = ta.value;
        } else if (ta.kind == GR_ARG_OPTION) {
            return usage_error(usage_kernels, "unknown option %s (kernels takes kernel names and --json)",
                               clip(ta.name, c, sizeof(c)));
        } else if (!gr_kernel_find(ta.value)) {
            fprintf(stderr,
                    "graphrun: kernels: no kernel \"%s\" (run `graphrun kernels` for the list)\n",
                    clip(ta.value, c, sizeof(c)));
            bad = 1;
        } else if (nnames < 256) {
            names[nnames++] = ta.value;
        }
    }
    if (bad) return 2;
    if (json_path) {
        json_t *root = json_object(), *arr = json_array();
        json_object_set_new(root, "schema_version", json_integer(1));
        json_object_set_new(root, "graphrun_version", json_string(GR_VERSION));
        if (nnames)
            for (int i = 0; i < nnames; i++) json_array_append_new(arr, kernel_json(gr_kernel_find(names[i])));
        else
            for (const gr_kernel_def *const *k = gr_kernel_all(); *k; k++) json_array_append_new(arr, kernel_json(*k));
        json_object_set_new(root, "kernels", arr);
        gr_error e;
        gr_error_clear(&e);
        int rc = write_json(json_path, root, &e) == 0 ? 0 : fail(&e);
        json_decref(root);
        if (rc || !strcmp(json_path, "-")) return rc;
    }
    if (nnames) {
        for (int i = 0; i < nnames; i++) print_kernel(gr_kernel_find(names[i]));
        return 0;
    }
    for (const gr_kernel_def *const *k = gr_kernel_all(); *k; k++) print_kernel(*k);
    return 0;
}

static int dispatch(int argc, char **argv) {
    if (argc < 2) {
        fputs(usage_main, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    cli c;
    memset(&c, 0, sizeof(c));
    c.cmd = cmd;
    gr_run_opts_default(&c.run);
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(usage_main, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("graphrun %s (built with CUDA %s)\n", GR_VERSION, GR_CUDA_BUILD_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help")) {
        if (argc > 3)
            return usage_error(usage_main, "help takes one COMMAND, got also \"%s\"", argv[3]);
        const char *sub = argc > 2 ? argv[2] : NULL;
        if (!sub || !strcmp(sub, "--help") || !strcmp(sub, "-h")) {
            fputs(usage_main, stdout);
            return 0;
        }
        if (gr_service_cmd_usage(sub)) {
            fputs(gr_service_cmd_usage(sub), stdout);
            return 0;
        }
        const char *u = !strcmp(sub, "tp")         ? gr_tp_cmd_usage()
                        : !strcmp(sub, "run")      ? usage_run
                        : !strcmp(sub, "validate") ? usage_validate
                        : !strcmp(sub, "kernels")  ? usage_kernels
                        : !strcmp(sub, "help")     ? usage_main
                                                   : NULL;
        if (!u)
            return usage_error(usage_main,
                               "help: unknown command \"%s\" (commands: run, validate, kernels, "
                               "capture, replay, serve, status, list, drop, stop, tp)",
                               sub);
        fputs(u, stdout);
        return 0;
    }
    if (!strcmp(cmd, "kernels")) return cmd_kernels(argc, argv);
    if (!strcmp(cmd, "run")) {
        int rc = parse_args(argc, argv, &c, usage_run);
        return rc >= 0 ? rc : cmd_run(&c);
    }
    if (!strcmp(cmd, "validate")) {
        int rc = parse_args(argc, argv, &c, usage_validate);
        return rc >= 0 ? rc : cmd_validate(&c);
    }
    if (!strcmp(cmd, "tp")) return gr_tp_cmd_main(argc, argv);
    if (gr_service_cmd_usage(cmd)) return gr_service_cmd_main(argc, argv);
    char cl[128];
    fprintf(stderr, "graphrun: unknown command \"%s\"\n\n%s", clip(cmd, cl, sizeof(cl)),
            usage_main);
    return 2;
}

/* Results that could not be written are a failure too (graphrun validate W > /dev/full). */
int main(int argc, char **argv) {
    int rc = dispatch(argc, argv);
    errno = 0;
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "graphrun: cannot write the results to stdout: %s\n",
                errno ? strerror(errno) : "write error");
        if (rc == 0) rc = gr_exit_code(GR_ERR_IO);
    }
    return rc;
}
