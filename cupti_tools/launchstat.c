/* cupti-launchstat: runs any CUDA program with the injection library (CUDA_INJECTION64_PATH),
 * passes its exit code through, and reports launch overhead from the trace; `report` analyses a
 * recorded trace without a GPU. Results on stdout, diagnostics on stderr. Exit codes: the
 * command's own code when it failed (128+N when a signal N killed it); otherwise 0 ok, 1 tracing
 * failed, 2 bad usage or a bad trace, 3 no CUDA device. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/args.h"
#include "cupti_tools/cupti_check.h"
#include "core/expr.h"
#include "cupti_tools/analysis.h"
#include "cupti_tools/calibrate.h"
#include "cupti_tools/chrome.h"
#include "cupti_tools/html.h"
#include "cupti_tools/launchstat_capcheck.h"
#include "cupti_tools/predict.h"
#include "cupti_tools/report.h"
#include "cupti_tools/trace.h"

#define INJECTION_NAME "libgr_launchstat_inject.so"

static const char *usage_main =
    "cupti-launchstat " GR_LAUNCHSTAT_VERSION " - per-launch overhead of any CUDA program, from a CUPTI trace\n"
    "\n"
    "usage: cupti-launchstat [options] -- CMD [ARGS...]   run CMD traced, then report\n"
    "       cupti-launchstat report TRACE [options]       analyse a recorded trace (no GPU needed)\n"
    "       cupti-launchstat calibrate [options]          measure this GPU's graph costs for the\n"
    "                                                     prediction (calibrate --help)\n"
    "\n"
    "CMD runs with CUPTI activity tracing injected through CUDA_INJECTION64_PATH (as Nsight Systems\n"
    "does): kernels, memcpy/memset, API records for launches, graph launches, copies, syncs and\n"
    "cudaProfilerStart/Stop, and CMD's own NVTX ranges (through NVTX_INJECTION64_PATH). The trace\n"
    "(JSON lines, cupti_tools/README.md) is flushed when CMD exits, also on exit() from any thread\n"
    "and on SIGINT/SIGTERM. All reported times are traced: tracing inflates launch costs\n"
    "several-fold; time your program untraced.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE      trace file (default launchstat.jsonl); CUDA processes CMD starts\n"
    "                         besides the first write FILE.PID\n"
    "  --json FILE|-          the report as JSON too (schema_version 1)\n"
    "  --steps N              CMD runs N steps (iterations): per-step numbers\n"
    "  --latency              also collect queued/submitted timestamps per kernel\n"
    "  --no-driver            no driver-API records (less overhead for runtime-API programs)\n"
    "  --no-memcpy            no memcpy/memset records\n"
    "  --no-nvtx              not CMD's NVTX ranges (torch.cuda.nvtx.range, record_function under\n"
    "                         emit_nvtx, nvtxRangePush/Pop, nvtxRangeStart/End)\n"
    "  --buffer-mb N          CUPTI activity buffer size (default 8)\n"
    "  --max-buffers N        buffers in memory at most (default 32); the traced program waits\n"
    "                         for the writer rather than losing records\n"
    "  --short-gap-us X       idle holes shorter than X us count as launch-bound (default 10)\n"
    "  --top N                rows per table (default 15)\n"
    "  --no-report            write the trace only\n"
    "  --capture-check        instead of tracing: record every runtime and driver API call made\n"
    "                         while a stream captures (CUDA graphs, torch.cuda.graph) and report\n"
    "                         each call that breaks the capture or escapes it, with the NVTX\n"
    "                         range stack, API, stream, error, capture mode and a fix; -o\n"
    "                         defaults to capcheck.jsonl; exit 1 when a capture broke or work\n"
    "                         escaped one (CMD's own code when it failed)\n"
    "\n"
    "Regions: cudaProfilerStart/Stop (torch.cuda.profiler.start/stop) delimit the measured part;\n"
    "the report then covers each such range separately. Each NVTX range name of CMD is a scope of\n"
    "its own too (\"step 17\" counts as an instance of \"step #\"): launches, latency, gaps, busy\n"
    "and idle per instance; a record belongs to every range open on its thread.\n"
    "\n"
    "exit codes: CMD's exit code when it failed (128+N when killed by signal N); otherwise\n"
    "            0 ok, 1 tracing failed, 2 bad usage or trace, 3 no CUDA device\n"
    "\n"
    "examples:\n"
    "  cupti-launchstat -o eager.jsonl --steps 200 -- python3 bench/torch_mlp.py --mode eager --iters 200\n"
    "  cupti-launchstat -o trace.jsonl -- build/graphrun run workloads/launch_bound.json --iters 200\n"
    "  cupti-launchstat --capture-check -- python3 bench/torch_capture_break.py --break item\n";

static const char *usage_calibrate =
    "usage: cupti-launchstat calibrate [--device N] [-o FILE] [--json FILE|-] [--trace FILE] [--rounds N]\n"
    "\n"
    "Measures this GPU's graph costs, the calibration row that the prediction (report --predict)\n"
    "uses: node_us, launch_us, launch_host_us, pdl_us and hbm_gbps, each printed with median\n"
    "[p10, p90] and what measured it. Untraced: CUDA events around batches of graph launches,\n"
    "after warm-up, in interleaved rounds: a 500-node chain of tiny kernels (one block adding 1 to\n"
    "256 floats, in place) with and without PDL, and 1- and 20-node graphs of spin kernels for the\n"
    "launch cost; hbm_gbps from a device-to-device cudaMemcpyAsync of 256 MiB. node_us is measured\n"
    "against the tiny kernel's duration as a trace records it, since the prediction adds it to\n"
    "traced durations: after every untraced figure, CUPTI traces 110 eager tiny kernels in this\n"
    "process. Takes a few seconds. docs/predict.md derives each figure.\n"
    "\n"
    "options:\n"
    "  --device N             the CUDA device to measure (default 0)\n"
    "  -o, --output FILE      the calibration file (JSON, schema_version 1) for\n"
    "                         `cupti-launchstat report TRACE --calibration FILE`\n"
    "  --json FILE|-          the same document (\"-\": stdout, the table then goes to stderr)\n"
    "  --trace FILE           keep the traced reference's trace in FILE (default: a temporary file,\n"
    "                         removed)\n"
    "  --rounds N             interleaved rounds of timed batches (default 21; 3 to 64)\n"
    "\n"
    "exit codes: 0 ok, 1 a measurement failed (CUDA or CUPTI), 2 bad usage, 3 no CUDA device\n"
    "\n"
    "examples:\n"
    "  cupti-launchstat calibrate -o h200.json\n"
    "  cupti-launchstat report eager.jsonl --calibration h200.json\n";

static const char *usage_report =
    "usage: cupti-launchstat report TRACE [options]\n"
    "\n"
    "Reads a trace written by cupti-launchstat or `graphrun run --trace` and prints, per region\n"
    "(graphrun's eager/graph runs, or cudaProfilerStart/Stop ranges), per NVTX range name of the\n"
    "traced program, or for the whole trace: API calls and their host time, launch latency, GPU\n"
    "idle gaps, busy vs span, kernels by name, graph launches (node gaps, nodes mapped to the API\n"
    "call and op that created them), workload ops, CUPTI overhead and dropped records. Needs no\n"
    "GPU. A damaged or cut trace is an error naming the line.\n"
    "\n"
    "options:\n"
    "  --json FILE|-          the report as JSON (schema_version 1)\n"
    "  --compare OTHER        side by side with another trace: per-step time, launches, gaps,\n"
    "                         idle fraction, and (this - other) per kernel\n"
    "  --region NAME          the region or NVTX range of TRACE to compare (default: its only\n"
    "                         region, or the whole trace)\n"
    "  --compare-region NAME  the region or NVTX range of OTHER to compare\n"
    "  --steps N              steps the traced program ran (when the trace does not say)\n"
    "  --partial              read a trace without its end record (program killed)\n"
    "  --short-gap-us X       idle holes shorter than X us count as launch-bound (default 10)\n"
"  --top N                rows per table and NVTX ranges listed (default 15)\n"
    "  --chrome FILE          the timeline as Chrome Trace Event JSON (ui.perfetto.dev,\n"
    "                         chrome://tracing): a process per run, a track per stream and per\n"
    "                         host thread, launch-to-kernel flows, kernel args (docs/timelines.md)\n"
    "  --html FILE            a self-contained HTML report: one eager and one graph step per\n"
    "                         variant on one time scale (with --compare: TRACE's step above\n"
    "                         OTHER's), the gap histogram and the step-time table\n"
    "  --predict              what a CUDA graph would give, per eager region (on by default when\n"
    "                         the trace has no graph launches): the step replayed as graph nodes\n"
    "                         from the kernels' own durations and untraced graph costs of this\n"
    "                         GPU model, with PDL, and with chains of small kernels fused (an\n"
    "                         estimate); what in the trace breaks the model (docs/predict.md)\n"
    "  --no-predict           leave the prediction out\n"
    "  --graph-node-us X      GPU time per graph node beyond its kernel (default: the table's\n"
    "                         value for the trace's GPU; implies --predict)\n"
    "  --graph-launch-us Y    GPU time per graph launch (default: the table's; implies --predict)\n"
    "  --calibration FILE     the graph costs from FILE, written by `cupti-launchstat calibrate -o\n"
    "                         FILE` on the traced GPU, instead of the table (implies --predict;\n"
    "                         --graph-node-us / --graph-launch-us still override its two costs)\n"
    "\n"
    "examples:\n"
    "  cupti-launchstat report eager.jsonl --compare graph.jsonl --steps 200\n"
    "  cupti-launchstat report eager.jsonl --predict --steps 200 --json pred.json\n"
    "  cupti-launchstat calibrate -o gpu.json && cupti-launchstat report eager.jsonl --calibration gpu.json\n"
    "  cupti-launchstat report trace.jsonl --chrome trace.json --html report.html\n";

typedef struct opts {
    const char *out, *json, *compare, *region, *compare_region;
    long steps, buffer_mb, max_buffers;
    int latency, no_driver, no_memcpy, no_nvtx, no_report, partial;
    gr_ls_opts ls;
    char **cmd;
    int ncmd;
    const char *trace;
    int capture_check; /* --capture-check: the capture checker instead of the trace */
    const char *chrome, *html; /* report --chrome FILE / --html FILE: timeline exports */
    int predict;               /* 1 --predict (or a --graph-*-us), -1 --no-predict, 0 default */
    gr_pred_opts pred;
    const char *calibration; /* --calibration FILE */
    gr_cal_file *calfile;    /* ... read before any trace */
    /* options given that only the trace's report uses (for --no-report / --capture-check) */
    const char *report_opt, *trace_opt;
} opts;

static int usage_error(const char *usage, const char *fmt, const char *arg) {
    fprintf(stderr, "cupti-launchstat: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n%s", usage);
    return 2;
}

static int parse_long(const char *s, long lo, long hi, long *out) { /* core/args.h, for longs */
    long long v;
    if (!gr_arg_int(s, lo, hi, &v)) return 0;
    *out = (long)v;
    return 1;
}

/* Returns -1 to go on, else an exit code. `run` parses the run form (stops at "--"). */
static int parse(int argc, char **argv, int first, int run, opts *o) {
    const char *usage = run ? usage_main : usage_report;
    static const char *const with_value[] = {
        "-o",       "--output",       "--json",    "--steps",  "--buffer-mb",       "--max-buffers",
        "--short-gap-us", "--top",    "--compare", "--region", "--compare-region", "--chrome",
        "--html",   "--graph-node-us", "--graph-launch-us", "--calibration", NULL};
    for (int i = first; i < argc; i++) {
        if (run && !strcmp(argv[i], "--")) {
            o->cmd = argv + i + 1;
            o->ncmd = argc - i - 1;
            return -1;
        }
        gr_arg ta;
        gr_arg_take(argc, argv, &i, with_value, NULL, &ta);
        if (ta.kind == GR_ARG_ERROR) return usage_error(usage, "%s", ta.error);
        /* a positional argument goes by its text (TRACE), an option by its name */
        const char *a = ta.kind == GR_ARG_POSITIONAL ? ta.value : ta.name;
        const char *name = a, *val = ta.kind == GR_ARG_OPTION ? ta.value : NULL;
        if (!strcmp(name, "--help")) {
            fputs(usage, stdout);
            return 0;
        }
        if (!run && !strcmp(a, "-"))
            return usage_error(usage, "TRACE must be a file: a trace is not read from stdin (%s); save it to a file "
                                      "first", a);
        if (val && !strcmp(val, "-") && (!strcmp(name, "--compare") || !strcmp(name, "--chrome") ||
                                         !strcmp(name, "--calibration") ||
                                         !strcmp(name, "--html") || !strcmp(name, "-o") || !strcmp(name, "--output")))
            return usage_error(usage, "%s needs a file name: \"-\" (stdin/stdout) is taken by --json only", name);
        if (!run && name[0] != '-') {
            if (o->trace) return usage_error(usage, "unexpected argument \"%s\" (one TRACE; --compare OTHER for a second)", a);
            o->trace = a;
            continue;
        }
        if (run) {
            static const char *report_only[] = {"--json",       "--top",           "--short-gap-us",
                                                "--chrome",     "--html",          "--predict",
                                                "--no-predict", "--graph-node-us", "--graph-launch-us",
                                                "--calibration", NULL};
            static const char *trace_only[] = {"--steps", "--latency", "--no-driver", "--no-memcpy", "--no-nvtx",
                                               "--buffer-mb",
                                               "--max-buffers", "--no-report", "--top", "--short-gap-us",
                                               "--chrome", "--html", "--predict", "--no-predict",
                                               "--graph-node-us", "--graph-launch-us", "--calibration", NULL};
            for (const char **w = report_only; *w; w++)
                if (!strcmp(*w, name)) o->report_opt = *w;
            for (const char **w = trace_only; *w; w++)
                if (!strcmp(*w, name)) o->trace_opt = *w;
        }
        if (run && (!strcmp(name, "-o") || !strcmp(name, "--output"))) o->out = val;
        else if (!strcmp(name, "--json")) o->json = val;
        else if (!strcmp(name, "--steps")) {
            if (!parse_long(val, 1, 1000000000000L, &o->steps))
                return usage_error(usage, "--steps takes a whole number >= 1, got \"%s\"", val);
            o->ls.steps = o->steps;
        } else if (!strcmp(name, "--short-gap-us")) {
            double v;
            if (!gr_parse_number(val, &v) || !(v > 0) || v > 1e9)
                return usage_error(usage, "--short-gap-us takes a number of microseconds > 0, got \"%s\"", val);
            o->ls.short_gap_us = v;
        } else if (!strcmp(name, "--top")) {
            long v;
            if (!parse_long(val, 1, 100000, &v)) return usage_error(usage, "--top takes a whole number >= 1, got \"%s\"", val);
            o->ls.top = (int)v;
        } else if (run && !strcmp(name, "--buffer-mb")) {
            if (!parse_long(val, 1, 1024, &o->buffer_mb))
                return usage_error(usage, "--buffer-mb takes a whole number from 1 to 1024, got \"%s\"", val);
        } else if (run && !strcmp(name, "--max-buffers")) {
            if (!parse_long(val, 2, 4096, &o->max_buffers))
                return usage_error(usage, "--max-buffers takes a whole number from 2 to 4096, got \"%s\"", val);
        } else if (run && !strcmp(name, "--latency")) o->latency = 1;
        else if (run && !strcmp(name, "--no-driver")) o->no_driver = 1;
        else if (run && !strcmp(name, "--no-memcpy")) o->no_memcpy = 1;
        else if (run && !strcmp(name, "--no-nvtx")) o->no_nvtx = 1;
        else if (run && !strcmp(name, "--no-report")) o->no_report = 1;
        else if (run && !strcmp(name, "--capture-check")) o->capture_check = 1;
        else if (!run && !strcmp(name, "--compare")) o->compare = val;
        else if (!run && !strcmp(name, "--region")) o->region = val;
        else if (!run && !strcmp(name, "--compare-region")) o->compare_region = val;
        else if (!run && !strcmp(name, "--partial")) o->partial = 1;
        else if (!strcmp(name, "--chrome")) o->chrome = val;
        else if (!strcmp(name, "--predict") || !strcmp(name, "--no-predict")) {
            int want = name[2] == 'p' ? 1 : -1;
            if (o->predict && o->predict != want)
                return usage_error(usage, "--predict and --no-predict contradict each other%s: give one", "");
            o->predict = want;
        } else if (!strcmp(name, "--graph-node-us") || !strcmp(name, "--graph-launch-us")) {
            double v;
            if (!gr_parse_number(val, &v) || !(v >= 0) || v > 1e6) {
                fprintf(stderr, "cupti-launchstat: %s takes a number of microseconds from 0 to 1e6 (GPU time per graph "
                                "%s), got \"%s\"\n\n%s",
                        name, name[8] == 'n' ? "node" : "launch", val, usage);
                return 2;
            }
            if (name[8] == 'n') o->pred.node_us = v;
            else o->pred.launch_us = v;
        }
        else if (!strcmp(name, "--html")) o->html = val;
        else if (!strcmp(name, "--calibration")) o->calibration = val;
        else if (run && name[0] != '-')
            return usage_error(usage, "unexpected argument \"%s\": put the command after -- (cupti-launchstat [options] -- CMD ARGS)", a);
        else return usage_error(usage, "unknown option %s (see --help)", name);
    }
    return -1;
}

/* Options that do nothing without another are usage errors, not silently ignored. */
static int check_option_pairs(int run, const opts *o) {
    const char *usage = run ? usage_main : usage_report;
    if (!run && o->region && !o->compare)
        return usage_error(usage, "--region chooses the region of TRACE to compare: it needs --compare OTHER "
                                  "(without --compare the report covers every region)%s", "");
    if (o->predict < 0 && (o->pred.node_us >= 0 || o->pred.launch_us >= 0))
        return usage_error(usage, "--graph-node-us and --graph-launch-us shape the prediction, which --no-predict "
                                  "turns off: drop one of them%s", "");
    if (o->predict < 0 && o->calibration)
        return usage_error(usage, "--calibration gives the prediction its graph costs, which --no-predict turns off: "
                                  "drop one of them%s", "");
    if (!run && o->compare_region && !o->compare)
        return usage_error(usage, "--compare-region chooses the region of OTHER: it needs --compare OTHER%s", "");
    long mb = o->buffer_mb > 0 ? o->buffer_mb : 8, nb = o->max_buffers > 0 ? o->max_buffers : 32;
    if (run && mb * nb > 65536) {
        fprintf(stderr, "cupti-launchstat: --buffer-mb %ld with --max-buffers %ld lets the collector hold %ld GiB "
                        "inside the traced program: keep their product at or under 64 GiB\n\n%s",
                mb, nb, mb * nb / 1024, usage);
        return 2;
    }
    if (run && o->capture_check && o->trace_opt)
        return usage_error(usage, "%s has no effect with --capture-check (it records API calls during capture, "
                                  "not a trace; only -o and --json apply): drop one of them", o->trace_opt);
    if (run && o->no_report && o->report_opt)
        return usage_error(usage, "%s shapes the report, which --no-report turns off: drop one of them "
                                  "(cupti-launchstat report TRACE reads the trace later)", o->report_opt);
    return -1;
}

/* Who a path is: dev+ino when it exists, else the resolved directory + name, so "./t" and "t"
 * (or a hard link) are the same file. */
typedef struct file_id {
    int exists, regular;
    dev_t dev;
    ino_t ino;
    char name[PATH_MAX + 256];
} file_id;

static void file_identity(const char *path, file_id *id) {
    memset(id, 0, sizeof(*id));
    struct stat sb;
    if (stat(path, &sb) == 0) {
        id->exists = 1;
        id->regular = S_ISREG(sb.st_mode);
        id->dev = sb.st_dev;
        id->ino = sb.st_ino;
        return;
    }
    char dir[PATH_MAX], abs[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? path + (slash - dir) + 1 : path;
    if (slash) *slash = '\0';
    if (realpath(slash ? (dir[0] ? dir : "/") : ".", abs))
        snprintf(id->name, sizeof(id->name), "%s/%s", abs, base);
    else
        snprintf(id->name, sizeof(id->name), "%s", path);
}

static int same_file(const file_id *a, const file_id *b) {
    if (a->exists != b->exists) return 0;
    if (a->exists) return a->dev == b->dev && a->ino == b->ino;
    return !strcmp(a->name, b->name);
}

/* An output must not overwrite an input or another output, and must be something a report can
 * be written to without waiting (not a FIFO, a socket or a directory). */
static int check_outputs(int run, const opts *o) {
    struct {
        const char *opt, *path;
    } in[3] = {{"TRACE", run ? (o->out ? o->out : "launchstat.jsonl") : o->trace}, {"--compare", o->compare},
               {"--calibration", o->calibration}},
      out[3] = {{"--json", o->json && strcmp(o->json, "-") != 0 ? o->json : NULL}, {"--chrome", o->chrome},
                {"--html", o->html}};
    if (run) in[0].opt = o->out ? "-o" : "the trace (default launchstat.jsonl)";
    if (run && o->capture_check && !o->out) in[0].path = "capcheck.jsonl";
    file_id iid[3], oid[3];
    for (int i = 0; i < 3; i++)
        if (in[i].path) file_identity(in[i].path, &iid[i]);
    for (int k = 0; k < 3; k++) {
        if (!out[k].path) continue;
        file_id *id = &oid[k];
        file_identity(out[k].path, id);
        struct stat sb;
        if (id->exists && stat(out[k].path, &sb) == 0 && (S_ISDIR(sb.st_mode) || S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode))) {
            fprintf(stderr, "cupti-launchstat: %s %s: is %s: give a file name\n", out[k].opt, out[k].path,
                    S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO (named pipe)" : "a socket");
            return 2;
        }
        for (int i = 0; i < 3; i++)
            if (in[i].path && same_file(id, &iid[i])) {
                fprintf(stderr, "cupti-launchstat: %s %s: is the same file as %s %s, which %s: choose another "
                                "output file\n",
                        out[k].opt, out[k].path, in[i].opt, in[i].path,
                        run && i == 0 ? "the trace is written to" : "is read; writing it would destroy the input");
                return 2;
            }
        for (int j = 0; j < k; j++)
            if (out[j].path && (!id->exists || id->regular) && same_file(id, &oid[j])) {
                fprintf(stderr, "cupti-launchstat: %s %s: is the same file as %s %s: give each output its own "
                                "file\n",
                        out[k].opt, out[k].path, out[j].opt, out[j].path);
                return 2;
            }
    }
    return -1;
}

static int fail(const gr_error *e) {
    fprintf(stderr, "cupti-launchstat: %s\n", e->msg);
    return gr_exit_code(e->code);
}

static int write_json(const char *path, json_t *j, gr_error *e) {
    return gr_ls_write_json(path, j, "the JSON report", e) == GR_OK ? 0 : -1;
}

/* Load + analyse; fills *t and *r. */
static gr_status load(const char *path, int partial, const gr_ls_opts *lo, gr_trace **t, gr_ls_report **r,
                      gr_error *e) {
    *t = NULL;
    *r = NULL;
    gr_status st = gr_trace_load(path, partial, t, e);
    if (st != GR_OK) return st;
    st = gr_ls_analyze(*t, lo, r, e);
    if (st != GR_OK) {
        gr_trace_destroy(*t);
        *t = NULL;
    }
    return st;
}

/* The proc a comparison draws: the named region, the only one, the whole trace without regions,
 * else the first region. */
static int main_proc(const gr_timeline *tl, const char *region, gr_error *e) {
    if (region) return gr_tl_find_proc(tl, region, e);
    return 0; /* the first region, or the whole trace (the only process) without regions */
}

static void side_label(gr_html_side *sd, const char *path, const gr_timeline *tl) {
    const char *base = strrchr(path, '/');
    const gr_tl_proc *p = &tl->procs[sd->proc];
    snprintf(sd->label, sizeof(sd->label), "%s%s%s", base ? base + 1 : path,
             p->region >= 0 ? ": " : "", p->region >= 0 ? tl->regions[p->region].name : "");
}

/* --chrome / --html: the timeline of TRACE (with --compare, OTHER's main run drawn under it). */
static int export_timeline(const opts *o, const char *trace_path, int partial, const gr_trace *t,
                           const gr_pred_report *pred) {
    gr_error e;
    gr_error_clear(&e);
    gr_timeline *tl = NULL, *tl2 = NULL;
    gr_trace *t2 = NULL;
    int rc = 0;
    if (gr_timeline_build(t, trace_path, o->steps, &tl, &e) != GR_OK) return fail(&e);
    if (o->chrome) {
        if (gr_chrome_write(tl, o->chrome, &e) != GR_OK) rc = fail(&e);
        else
            fprintf(stderr, "cupti-launchstat: timeline written to %s (%zu processes, %zu flows; open it in "
                            "ui.perfetto.dev or chrome://tracing)\n",
                    o->chrome, tl->procs_written, tl->flows);
    }
    if (o->html && rc == 0) {
        gr_html_figure figs[32];
        size_t nf = 0;
        if (o->compare) {
            if (gr_trace_load(o->compare, o->partial, &t2, &e) != GR_OK ||
                gr_timeline_build(t2, o->compare, o->steps, &tl2, &e) != GR_OK) {
                rc = fail(&e);
                goto done;
            }
            int pa = main_proc(tl, o->region, &e), pb = main_proc(tl2, o->compare_region, &e);
            if (pa < 0 || pb < 0) {
                rc = fail(&e);
                goto done;
            }
            memset(&figs[0], 0, sizeof(figs[0]));
            snprintf(figs[0].title, sizeof(figs[0].title), "comparison");
            figs[0].side[0] = (gr_html_side){tl, pa, ""};
            figs[0].side[1] = (gr_html_side){tl2, pb, ""};
            side_label(&figs[0].side[0], trace_path, tl);
            side_label(&figs[0].side[1], o->compare, tl2);
            figs[0].nsides = 2;
            nf = 1;
        } else {
            nf = gr_html_mode_figures(tl, figs, 32);
            if (nf == 0) { /* no eager/graph pair: each run (or the whole trace) on its own */
                size_t np = tl->nregions ? tl->nregions : 1;
                for (size_t i = 0; i < np && nf < 32; i++) {
                    memset(&figs[nf], 0, sizeof(figs[nf]));
                    figs[nf].side[0] = (gr_html_side){tl, tl->nregions ? (int)i : 0, ""};
                    side_label(&figs[nf].side[0], trace_path, tl);
                    snprintf(figs[nf].title, sizeof(figs[nf].title), "%s", figs[nf].side[0].label);
                    figs[nf].nsides = 1;
                    nf++;
                }
            }
        }
        char sub[1024], src[1200];
        snprintf(sub, sizeof(sub), "%s%s%s", t->device[0] ? t->device : "device unknown",
                 t->command[0] ? "; traced: " : "", t->command);
        snprintf(src, sizeof(src), "From %s%s%s", trace_path, o->compare ? " and " : "",
                 o->compare ? o->compare : "");
        const char *base = strrchr(trace_path, '/');
        gr_html_doc d = {base ? base + 1 : trace_path, sub, src, NULL, NULL, 0, NULL, 0, NULL, NULL, figs, (int)nf};
        gr_html_pred_row *rows = NULL;
        int nrows = 0;
        if (pred && pred->n > 0 && (rows = calloc(pred->n, sizeof(gr_html_pred_row))) != NULL) {
            for (size_t i = 0; i < pred->n; i++) {
                const gr_pred_scope *s = &pred->scopes[i];
                if (!s->ok) continue;
                gr_html_pred_row *w = &rows[nrows++];
                snprintf(w->label, sizeof(w->label), "%s", s->name);
                w->eager_us = s->measured_us;
                w->eager_traced = s->measured_traced;
                w->graph_us = s->pred_us;
                w->pdl_us = s->pred_pdl_us;
                w->fused_us = s->pred_fused_us;
                w->truth_us = s->has_truth ? s->truth_us : 0;
                w->truth_traced = s->truth_traced;
                w->truth_gpu_us = s->has_truth ? s->truth_gpu_us : 0;
            }
        }
        char pnote[700] = "";
        if (pred)
            snprintf(pnote, sizeof(pnote), "Graph costs: %s (node %.2f us, launch %.2f us). %s", pred->calib.source,
                     pred->calib.node_us, pred->calib.launch_us, pred->calib_note);
        if (gr_html_write_pred(&d, rows, nrows, pred ? pnote : NULL, o->html, &e) != GR_OK) rc = fail(&e);
        else fprintf(stderr, "cupti-launchstat: HTML report written to %s\n", o->html);
        free(rows);
    }
done:
    (void)partial;
    gr_timeline_destroy(tl);
    gr_timeline_destroy(tl2);
    gr_trace_destroy(t2);
    return rc;
}

/* Prints the report (and compare); returns an exit code. */
static int report(const opts *o, const char *trace_path, int partial, json_t *extra) {
    gr_error e;
    gr_error_clear(&e);
    gr_trace *t = NULL, *t2 = NULL;
    gr_ls_report *r = NULL, *r2 = NULL;
    gr_pred_report *pred = NULL;
    int rc = 0;
    if (load(trace_path, partial, &o->ls, &t, &r, &e) != GR_OK) return fail(&e);
    const gr_ls_scope *a = NULL, *b = NULL;
    if (o->compare) {
        if (load(o->compare, o->partial, &o->ls, &t2, &r2, &e) != GR_OK) {
            rc = fail(&e);
            goto done;
        }
        a = gr_ls_main_scope(r, o->region, &e);
        if (a) b = gr_ls_main_scope(r2, o->compare_region, &e);
        if (!a || !b) {
            rc = fail(&e);
            goto done;
        }
    } else if (o->region && !gr_ls_main_scope(r, o->region, &e)) {
        rc = fail(&e);
        goto done;
    }
    int json_stdout = o->json && !strcmp(o->json, "-");
    FILE *f = json_stdout ? stderr : stdout;
    gr_ls_print(f, r);
    if (a && b) {
        char la[300], lb[300];
        snprintf(la, sizeof(la), "%s%s%s", trace_path, a->is_region || a->is_nvtx ? ":" : "",
                 a->is_region || a->is_nvtx ? a->name : "");
        snprintf(lb, sizeof(lb), "%s%s%s", o->compare, b->is_region || b->is_nvtx ? ":" : "",
                 b->is_region || b->is_nvtx ? b->name : "");
        fprintf(f, "\n");
        gr_ls_print_compare(f, la, a, lb, b);
    }
    /* the prediction: asked for, or by default when nothing in the trace ran as a graph */
    int want = o->predict > 0 || o->pred.node_us >= 0 || o->pred.launch_us >= 0 || o->pred.calib ||
               (o->predict == 0 && r->all.graph_kernels == 0 && r->all.eager_kernels > 0);
    if (want) {
        if (gr_pred_run(r, &o->pred, &pred, &e) != GR_OK) {
            rc = fail(&e);
            goto done;
        }
        if (a && b && b->graph_kernels > 0 && pred->n > 0) {
            gr_pred_scope *ps = NULL;
            if (r->nregions == 0 && a == &r->all) ps = &pred->scopes[0];
            for (size_t i = 0; i < r->nregions; i++) /* an NVTX range is not predicted */
                if (a == &r->regions[i]) ps = &pred->scopes[i];
            char lb[300];
            snprintf(lb, sizeof(lb), "%s%s%s", o->compare, b->is_region || b->is_nvtx ? ":" : "",
                     b->is_region || b->is_nvtx ? b->name : "");
            if (ps) gr_pred_set_truth(ps, b, lb);
        }
        fprintf(f, "\n");
        gr_pred_print(f, pred);
        if (pred->calib_note[0]) fprintf(stderr, "cupti-launchstat: warning: %s\n", pred->calib_note);
    }
    fflush(f);
    if (t->dropped)
        fprintf(stderr, "cupti-launchstat: warning: CUPTI dropped %llu activity records in %s: counts and gaps are "
                        "incomplete (raise --buffer-mb / --max-buffers)\n",
                (unsigned long long)t->dropped, trace_path);
    gr_ls_warning w[8];
    size_t nw = gr_ls_warnings(r, w, 8);
    for (size_t i = 0; i < nw && i < 8; i++)
        fprintf(stderr, "cupti-launchstat: warning: %s: %s\n", trace_path, w[i].msg);
    if (r2) {
        nw = gr_ls_warnings(r2, w, 8);
        for (size_t i = 0; i < nw && i < 8; i++)
            fprintf(stderr, "cupti-launchstat: warning: %s: %s\n", o->compare, w[i].msg);
    }
    char why[400];
    if (a && b && gr_ls_compare_mismatch(a, b, why, sizeof(why)))
        fprintf(stderr, "cupti-launchstat: warning: --compare %s: %s\n", o->compare, why);
    if (o->json) {
        json_t *j = gr_ls_json(r);
        if (a && b) json_object_set_new(j, "compare", gr_ls_compare_json(trace_path, a, o->compare, b));
        if (pred) json_object_set_new(j, "prediction", (json_t *)gr_pred_json(pred));
        if (extra) json_object_update(j, extra);
        if (write_json(o->json, j, &e) != 0) rc = fail(&e);
        json_decref(j);
    }
    if (rc == 0 && (o->chrome || o->html)) rc = export_timeline(o, trace_path, partial, t, pred);
done:
    gr_pred_report_destroy(pred);
    gr_ls_report_destroy(r);
    gr_ls_report_destroy(r2);
    gr_trace_destroy(t);
    gr_trace_destroy(t2);
    return rc;
}

/* --calibration FILE: read (and refused, exit 2) before any trace is read or command run. */
static int load_calibration(opts *o) {
    if (!o->calibration) return -1;
    gr_error e;
    gr_error_clear(&e);
    if (gr_cal_load(o->calibration, &o->calfile, &e) != GR_OK) {
        gr_error_prefix(&e, "--calibration ");
        return fail(&e);
    }
    o->pred.calib = &o->calfile->row;
    o->pred.calib_file = o->calibration;
    o->pred.calib_date = o->calfile->date;
    return -1;
}

/* ---- calibrate ---- */

static int cmd_calibrate(int argc, char **argv) {
    static const char *const with_value[] = {"--device", "-o", "--output", "--json", "--trace", "--rounds", NULL};
    static const char *const flags[] = {"--help", NULL};
    gr_cal_opts co;
    gr_cal_opts_default(&co);
    const char *out = NULL, *json = NULL;
    for (int i = 2; i < argc; i++) {
        gr_arg ta;
        gr_arg_take(argc, argv, &i, with_value, flags, &ta);
        if (ta.kind == GR_ARG_ERROR) return usage_error(usage_calibrate, "%s", ta.error);
        if (ta.kind == GR_ARG_POSITIONAL)
            return usage_error(usage_calibrate, "unexpected argument \"%s\" (calibrate takes options only)", ta.value);
        const char *name = ta.name, *val = ta.value;
        if (!strcmp(name, "--help")) {
            fputs(usage_calibrate, stdout);
            return 0;
        } else if (!strcmp(name, "--device")) {
            int d;
            if (!gr_arg_int32(val, 0, 1023, &d))
                return usage_error(usage_calibrate, "--device takes a device number (0, 1, ...), got \"%s\"", val);
            co.device = d;
        } else if (!strcmp(name, "--rounds")) {
            int r;
            if (!gr_arg_int32(val, 3, GR_CAL_MAX_ROUNDS, &r))
                return usage_error(usage_calibrate, "--rounds takes a whole number from 3 to 64, got \"%s\"", val);
            co.rounds = r;
        } else if (!strcmp(name, "-o") || !strcmp(name, "--output")) {
            if (!strcmp(val, "-"))
                return usage_error(usage_calibrate, "%s needs a file name: \"-\" (stdout) is taken by --json only", name);
            out = val;
        } else if (!strcmp(name, "--json")) {
            json = val;
        } else if (!strcmp(name, "--trace")) {
            if (!strcmp(val, "-"))
                return usage_error(usage_calibrate, "--trace needs a file name, got \"%s\"", val);
            co.trace_path = val;
        } else {
            return usage_error(usage_calibrate, "unknown option %s (see calibrate --help)", name);
        }
    }
    /* outputs: each a file of its own that can be written without waiting */
    struct {
        const char *opt, *path;
    } outs[3] = {{"-o", out}, {"--json", json && strcmp(json, "-") != 0 ? json : NULL}, {"--trace", co.trace_path}};
    file_id id[3];
    for (int k = 0; k < 3; k++) {
        if (!outs[k].path) continue;
        file_identity(outs[k].path, &id[k]);
        struct stat sb;
        if (id[k].exists && stat(outs[k].path, &sb) == 0 &&
            (S_ISDIR(sb.st_mode) || S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode) || (k == 2 && !S_ISREG(sb.st_mode)))) {
            fprintf(stderr, "cupti-launchstat: calibrate %s %s: is %s: give a file name\n", outs[k].opt, outs[k].path,
                    S_ISDIR(sb.st_mode)    ? "a directory"
                    : S_ISFIFO(sb.st_mode) ? "a FIFO (named pipe)"
                    : S_ISSOCK(sb.st_mode) ? "a socket"
                                           : "not a regular file (the trace is written, then read back)");
            return 2;
        }
        for (int j = 0; j < k; j++)
            if (outs[j].path && (!id[k].exists || id[k].regular) && same_file(&id[k], &id[j])) {
                fprintf(stderr, "cupti-launchstat: calibrate %s %s: is the same file as %s %s: give each output its "
                                "own file\n",
                        outs[k].opt, outs[k].path, outs[j].opt, outs[j].path);
                return 2;
            }
    }
    gr_error e;
    gr_error_clear(&e);
    gr_cal_result *res = calloc(1, sizeof(*res));
    if (!res) {
        fprintf(stderr, "cupti-launchstat: out of host memory\n");
        return 1;
    }
    FILE *txt = json && !strcmp(json, "-") ? stderr : stdout;
    /* the traced reference subscribes to CUPTI in this process, after the untraced figures: say
     * now, not seconds later, when another client holds the subscription (it also slows them) */
    char other[640];
    if (gr_cupti_other_client(NULL, other, sizeof(other)))
        fprintf(stderr, "cupti-launchstat: warning: %s (calibrate's traced reference needs CUPTI to "
                        "itself)\n", other);
    if (isatty(fileno(stderr)))
        fprintf(stderr, "cupti-launchstat: calibrating device %d (a few seconds)...\n", co.device);
    if (gr_calibrate(&co, res, &e) != GR_OK) {
        free(res);
        return fail(&e);
    }
    gr_cal_print(txt, res);
    fflush(txt);
    json_t *j = (json_t *)gr_cal_json(res);
    int rc = 0;
    if (json && gr_ls_write_json(json, j, "the calibration (--json)", &e) != GR_OK) rc = fail(&e);
    if (rc == 0 && out) {
        gr_cal_file *back = NULL;
        if (gr_ls_write_json(out, j, "the calibration file", &e) != GR_OK) rc = fail(&e);
        else if (gr_cal_load(out, &back, &e) != GR_OK) {
            /* the reader's ranges catch a measurement gone wrong */
            gr_error_prefix(&e, "the calibration file just written does not read back (the measurement went wrong; "
                                "the figures above say where): ");
            fail(&e);
            rc = 1;
        } else
            fprintf(stderr, "cupti-launchstat: calibration file written to %s (cupti-launchstat report TRACE "
                            "--calibration %s)\n", out, out);
        gr_cal_file_destroy(back);
    }
    json_decref(j);
    free(res);
    return rc;
}

/* ---- running a command ---- */

static pid_t child_pid = -1;

static void forward(int sig, siginfo_t *si, void *ctx) {
    (void)ctx;
    /* Ctrl-C from the terminal reaches the whole process group (CMD too): forward only signals
     * sent to us alone (kill, timeout) */
    if (child_pid > 0 && (!si || si->si_code == SI_USER || si->si_code == SI_QUEUE)) kill(child_pid, sig);
}

/* Why no trace: no driver or no device (exit 3), else the program never initialised CUDA. */
static int device_problem(char *why, size_t size) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, size, "no CUDA driver (libcuda.so.1 cannot be loaded: %s)", dlerror());
        return 1;
    }
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*count)(int *) = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
    int n = 0, rc = init ? init(0) : -1;
    if (rc != 0 || !count || count(&n) != 0 || n == 0) {
        snprintf(why, size, "no CUDA device (cuInit returned %d, %d devices); check nvidia-smi and CUDA_VISIBLE_DEVICES",
                 rc, n);
        return 1;
    }
    return 0;
}

/* The injection library: $GR_LAUNCHSTAT_INJECTION if set; else, relative to this executable
 * (/proc/self/exe), <exe dir>/../lib/graphrun/ (an install: cmake --install) and then
 * <exe dir>/ (the build tree, where CMake writes both). The error names every path tried. */
static int find_injection(char *out, size_t size, gr_error *e) {
    const char *env = getenv("GR_LAUNCHSTAT_INJECTION");
    if (env && env[0]) {
        snprintf(out, size, "%s", env);
        if (access(out, R_OK) != 0)
            return gr_error_set(e, GR_ERR_IO, out,
                                "cannot read the injection library: %s (set GR_LAUNCHSTAT_INJECTION=/path/to/%s)",
                                strerror(errno), INJECTION_NAME);
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        self[n > 0 ? n : 0] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) *slash = '\0';
        char installed[PATH_MAX + 64];
        snprintf(installed, sizeof(installed), "%s/../lib/graphrun/%s", self, INJECTION_NAME);
        snprintf(out, size, "%s/%s", self, INJECTION_NAME);
        if (access(installed, R_OK) == 0) {
            snprintf(out, size, "%s", installed);
        } else if (access(out, R_OK) != 0) {
            return gr_error_set(e, GR_ERR_IO, out,
                                "cannot read the injection library: %s (also tried %s; it is installed in "
                                "lib/graphrun/ beside bin/, and built next to cupti-launchstat; "
                                "set GR_LAUNCHSTAT_INJECTION=/path/to/%s)",
                                strerror(errno), installed, INJECTION_NAME);
        }
    }
    if (out[0] != '/' || strstr(out, "/../")) {
        char abs[PATH_MAX];
        if (realpath(out, abs)) snprintf(out, size, "%s", abs);
    }
    return GR_OK;
}

/* Absolute path (CMD may change directory), in a directory we can write. */
static int prepare_output(const char *path, char *out, size_t size, gr_error *e) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    const char *slash_in_path = strrchr(path, '/');
    const char *base = slash_in_path ? slash_in_path + 1 : path;
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = '\0';
        if (!dir[0]) snprintf(dir, sizeof(dir), "/");
    } else {
        snprintf(dir, sizeof(dir), ".");
    }
    if (!base[0]) return gr_error_set(e, GR_ERR_USAGE, "-o", "\"%s\" names a directory; give a file name", path);
    char absdir[PATH_MAX];
    if (!realpath(dir, absdir))
        return gr_error_set(e, GR_ERR_IO, "-o", "cannot write the trace to %s: %s (does the directory exist?)", path,
                            strerror(errno));
    if (access(absdir, W_OK) != 0)
        return gr_error_set(e, GR_ERR_IO, "-o", "cannot write the trace to %s: %s", path, strerror(errno));
    snprintf(out, size, "%s/%s", strcmp(absdir, "/") ? absdir : "", base);
    struct stat sb;
    if (stat(out, &sb) == 0 && S_ISDIR(sb.st_mode))
        return gr_error_set(e, GR_ERR_USAGE, "-o", "%s is a directory; give a file name", path);
    /* the old trace is replaced by unlinking it: never a device (-o /dev/null as root would
     * delete the device node), a FIFO or a socket */
    if (lstat(out, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode))
        return gr_error_set(e, GR_ERR_USAGE, "-o", "%s is %s, not a regular file: the trace must be a file on disk",
                            path, S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device"
                                  : S_ISFIFO(sb.st_mode)                    ? "a FIFO (named pipe)"
                                                                            : "not a regular file");
    if (unlink(out) != 0 && errno != ENOENT)
        return gr_error_set(e, GR_ERR_IO, "-o", "cannot replace %s: %s", path, strerror(errno));
    return GR_OK;
}

static void join_command(char **cmd, int n, char *out, size_t size) {
    size_t o = 0;
    out[0] = '\0';
    for (int i = 0; i < n && o + 4 < size; i++) {
        int quote = strpbrk(cmd[i], " \t\"'") != NULL || !cmd[i][0];
        int w = snprintf(out + o, size - o, "%s%s%s%s", i ? " " : "", quote ? "'" : "", cmd[i], quote ? "'" : "");
        if (w < 0) break;
        o += (size_t)w;
        if (o >= size) break;
    }
}

/* Extra traces (FILE.PID) written by other CUDA processes of the run. */
static void list_extra_traces(const char *path, time_t since) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) return;
    *slash = '\0';
    const char *base = slash + 1;
    size_t bl = strlen(base);
    DIR *d = opendir(dir[0] ? dir : "/");
    if (!d) return;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        if (strncmp(ent->d_name, base, bl) != 0 || ent->d_name[bl] != '.') continue;
        const char *p = ent->d_name + bl + 1;
        if (!*p || strspn(p, "0123456789") != strlen(p)) continue;
        char full[PATH_MAX + 256];
        snprintf(full, sizeof(full), "%s/%s", dir, ent->d_name);
        struct stat sb;
        if (stat(full, &sb) == 0 && sb.st_mtime >= since)
            fprintf(stderr, "cupti-launchstat: another CUDA process of the run (pid %s) was traced to %s "
                            "(cupti-launchstat report %s)\n", p, full, full);
    }
    closedir(d);
}

static int cmd_run(opts *o) {
    gr_error e;
    gr_error_clear(&e);
    if (o->ncmd <= 0 || !o->cmd || !o->cmd[0])
        return usage_error(usage_main, "nothing to run: give the command after -- (e.g. cupti-launchstat -- %s)",
                           "./my_app");
    char inj[PATH_MAX], path[PATH_MAX + 256], cmdline[4096];
    if (find_injection(inj, sizeof(inj), &e) != GR_OK) return fail(&e);
    if (prepare_output(o->out ? o->out : o->capture_check ? "capcheck.jsonl" : "launchstat.jsonl", path, sizeof(path), &e) != GR_OK) return fail(&e);
    join_command(o->cmd, o->ncmd, cmdline, sizeof(cmdline));
    char other[640];
    if (gr_cupti_other_client(inj, other, sizeof(other))) /* before CMD runs, not after */
        fprintf(stderr, "cupti-launchstat: warning: %s (for CMD, CUDA_INJECTION64_PATH is ours)\n",
                other);
    /* NVTX hands CMD's ranges to the one tool NVTX_INJECTION64_PATH names, at CMD's first NVTX
     * call: ours (which hands them to CUPTI), unless another tool was named */
    const char *nvtx_tool = getenv("NVTX_INJECTION64_PATH");
    int nvtx_ours = !(nvtx_tool && nvtx_tool[0]);
    if (!o->no_nvtx && !nvtx_ours && strcmp(nvtx_tool, inj) != 0 && !strstr(nvtx_tool, "libcupti"))
        fprintf(stderr, "cupti-launchstat: warning: NVTX_INJECTION64_PATH=%.300s names another NVTX tool: "
                        "CMD's NVTX ranges go there, not into the trace (unset it, or --no-nvtx)\n",
                nvtx_tool);
    time_t started = time(NULL) - 1;
    fflush(stdout);
    fflush(stderr);
    /* the child reports a failed exec through this pipe (closed unread when exec succeeds), so a
     * missing command is told apart from a program that made no CUDA calls */
    int ep[2] = {-1, -1};
    if (pipe(ep) != 0 || fcntl(ep[0], F_SETFD, FD_CLOEXEC) != 0 || fcntl(ep[1], F_SETFD, FD_CLOEXEC) != 0) {
        if (ep[0] >= 0) close(ep[0]);
        if (ep[1] >= 0) close(ep[1]);
        ep[0] = ep[1] = -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        gr_error_set(&e, GR_ERR_INTERNAL, NULL, "cannot start \"%s\": fork failed: %s", o->cmd[0], strerror(errno));
        return fail(&e);
    }
    if (pid == 0) {
        char num[32];
        setenv("CUDA_INJECTION64_PATH", inj, 1);
        setenv("GR_LAUNCHSTAT_OUT", path, 1);
        setenv("GR_LAUNCHSTAT_CMD", cmdline, 1);
        snprintf(num, sizeof(num), "%ld", o->steps);
        setenv("GR_LAUNCHSTAT_STEPS", num, 1);
        setenv("GR_LAUNCHSTAT_LATENCY", o->latency ? "1" : "0", 1);
        setenv("GR_LAUNCHSTAT_DRIVER", o->no_driver ? "0" : "1", 1);
        setenv("GR_LAUNCHSTAT_MEMCPY", o->no_memcpy ? "0" : "1", 1);
        /* ours, or "" for no NVTX tool at all (the injection then records no ranges) */
        if (nvtx_ours) setenv("NVTX_INJECTION64_PATH", o->no_nvtx ? "" : inj, 1);
        snprintf(num, sizeof(num), "%ld", o->buffer_mb > 0 ? o->buffer_mb : 8);
        setenv("GR_LAUNCHSTAT_BUFFER_MB", num, 1);
        snprintf(num, sizeof(num), "%ld", o->max_buffers > 0 ? o->max_buffers : 32);
        setenv("GR_LAUNCHSTAT_MAX_BUFFERS", num, 1);
        if (o->capture_check) setenv("GR_LAUNCHSTAT_CAPCHECK", "1", 1);
        execvp(o->cmd[0], o->cmd);
        int err = errno;
        if (ep[1] >= 0 && write(ep[1], &err, sizeof(err)) != (ssize_t)sizeof(err)) err = errno;
        _exit(err == ENOENT ? 127 : 126);
    }
    child_pid = pid;
    int exec_err = 0;
    if (ep[1] >= 0) {
        close(ep[1]);
        ssize_t got;
        while ((got = read(ep[0], &exec_err, sizeof(exec_err))) < 0 && errno == EINTR) {}
        if (got != (ssize_t)sizeof(exec_err)) exec_err = 0;
        close(ep[0]);
    }
    if (exec_err) {
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        fprintf(stderr, "cupti-launchstat: cannot run \"%s\": %s%s\n", o->cmd[0], strerror(exec_err),
                exec_err == ENOENT ? " (not found: check the path or PATH)" : "");
        return exec_err == ENOENT ? 127 : 126;
    }
    struct sigaction sa, old_int, old_term, old_hup;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            status = -1;
            break;
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    int code = 1;
    if (status != -1 && WIFEXITED(status)) code = WEXITSTATUS(status);
    else if (status != -1 && WIFSIGNALED(status)) code = 128 + WTERMSIG(status);
    if (code != 0)
        fprintf(stderr, "cupti-launchstat: %s %s %d\n", o->cmd[0],
                status != -1 && WIFSIGNALED(status) ? "was killed by signal" : "exited with code",
                status != -1 && WIFSIGNALED(status) ? WTERMSIG(status) : code);
    list_extra_traces(path, started);
    if (access(path, F_OK) != 0) {
        char why[512];
        if (device_problem(why, sizeof(why))) {
            fprintf(stderr, "cupti-launchstat: %s: nothing was traced\n", why);
            return code ? code : 3;
        }
        fprintf(stderr, "cupti-launchstat: no trace was written to %s: %s made no CUDA calls, or ended before "
                        "CUDA initialised\n", path, o->cmd[0]);
        return code ? code : 1;
    }
    if (o->capture_check) return gr_launchstat_capcheck_report(path, o->json, cmdline, code);
    gr_trace *t = NULL;
    gr_status st = gr_trace_load(path, 1, &t, &e);
    if (st != GR_OK) {
        fail(&e);
        return code ? code : 1;
    }
    int untraced = t->end_error[0] != 0;
    int partial = !t->has_end;
    if (untraced) fprintf(stderr, "cupti-launchstat: %s ran untraced: %s\n", o->cmd[0], t->end_error);
    else if (partial)
        fprintf(stderr, "cupti-launchstat: the trace %s has no end record: %s was killed before the trace was "
                        "flushed; the report covers what was written\n", path, o->cmd[0]);
    gr_trace_destroy(t);
    if (untraced) return code ? code : 1;
    int rc = 0;
    fprintf(stderr, "cupti-launchstat: trace written to %s\n", path);
    if (!o->no_report) {
        json_t *extra = json_pack("{s:s, s:i}", "command", cmdline, "command_exit_code", code);
        rc = report(o, path, 1, extra);
        json_decref(extra);
    }
    return code ? code : rc;
}

int main(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof(o));
    gr_ls_opts_default(&o.ls);
    gr_pred_opts_default(&o.pred);
    o.pred.top = o.ls.top;
    if (argc < 2) {
        fputs(usage_main, stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("cupti-launchstat %s (graphrun %s; trace schema %d; built with CUDA %s)\n", GR_LAUNCHSTAT_VERSION, GR_VERSION,
               GR_TRACE_SCHEMA_VERSION, GR_CUDA_BUILD_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "help")) {
        fputs(argc > 2 && !strcmp(argv[2], "report")      ? usage_report
              : argc > 2 && !strcmp(argv[2], "calibrate") ? usage_calibrate
                                                          : usage_main,
              stdout);
        return 0;
    }
    if (!strcmp(argv[1], "calibrate")) return cmd_calibrate(argc, argv);
    int rc;
    if (!strcmp(argv[1], "report")) {
        rc = parse(argc, argv, 2, 0, &o);
        if (rc >= 0) return rc;
        if (!o.trace) return usage_error(usage_report, "report needs a TRACE file%s", "");
        if ((rc = check_option_pairs(0, &o)) >= 0 || (rc = check_outputs(0, &o)) >= 0 ||
            (rc = load_calibration(&o)) >= 0)
            return rc;
        rc = report(&o, o.trace, o.partial, NULL);
    } else {
        rc = parse(argc, argv, 1, 1, &o);
        if (rc >= 0) return rc;
        if (o.ncmd > 0 && ((rc = check_option_pairs(1, &o)) >= 0 || (rc = check_outputs(1, &o)) >= 0 ||
                           (rc = load_calibration(&o)) >= 0))
            return rc;
        rc = cmd_run(&o);
    }
    gr_cal_file_destroy(o.calfile);
    return rc;
}
