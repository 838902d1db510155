/* graphrun capture | replay | serve | list | drop | status | stop: argument parsing, one request
 * to the replay service (started in the background when a capture needs one), and the output:
 * the service sends the same report `graphrun run` prints, results go to stdout, diagnostics
 * and the progress bar to stderr, exit codes as everywhere (0, 1, 2, 3). */
#include "core/jsonout.h"
#include "core/plan_print.h"
#include "cli/cmd_service.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/args.h"
#include "core/expr.h"
#include "replay/bucket.h"
#include "replay/client.h"
#include "replay/load.h"
#include "replay/protocol.h"
#include "replay/service.h"

#define MAX_SETS GR_PROTO_MAX_SETS

static const char *usage_capture =
    "usage: graphrun capture WORKLOAD [options]\n"
    "\n"
    "Asks the replay service to load WORKLOAD, run the CPU reference and one eager step, capture\n"
    "the step into a CUDA graph, replay it once and check graph == eager == reference, then keep\n"
    "the graph for `graphrun replay`. The workload, --set and --variant are checked here first\n"
    "(no GPU needed; bad input starts no service); then a service is started in the background\n"
    "when none is running.\n"
    "Prints what `graphrun run` prints about the capture. The same workload file, params,\n"
    "variant and capture mode (the content hash) is not captured twice unless --force.\n"
    "\n"
    "options:\n"
    "  --name N               name of the graph (default: the workload's name, plus .VARIANT for\n"
    "                         workloads with several variants)\n"
    "  --set NAME=VALUE       override a param (repeatable)\n"
    "  --variant V            the variant to capture (default: the workload's default_variant)\n"
    "  --capture-mode M       global | thread-local | relaxed (default global)\n"
    "  --force                capture again even when the same content is held (replaces it),\n"
    "                         or replace a different graph held under --name\n"
    "  --no-cpu-ref           skip the CPU reference (graph is still checked against eager)\n"
    "  --no-pdl               launch every kernel plainly; by default the kernels that support\n"
    "                         it use programmatic dependent launch where the GPU has it (as\n"
    "                         `graphrun run`)\n"
    "  --pdl                  require PDL: refused on a GPU without it\n"
    "  --unroll N             hold N steps in one graph (1..1024); replay reports time per step\n"
    "  --input FILE.tsv       Criteo Kaggle rows for a DLRM workload (as `graphrun run --input`)\n"
    "  --skip-bad-lines       with --input: skip malformed rows (named) instead of failing\n"
    "  --no-capture-check     capture without the capture checker (by default it runs first, and\n"
    "                         a capture that breaks or lets work escape is not held)\n"
    "  --update               with --name N of a held graph: capture this one and update N's\n"
    "                         instantiated graph in place (cudaGraphExecUpdate) when the topology\n"
    "                         is the same (new params, new buffers), else replace it; says which\n"
    "                         and both times (update vs instantiate)\n"
    "  --buckets P=V1,V2,...  one graph per value of param P (e.g. B=1,2,4,8,16,32,64), held as\n"
    "                         NAME.PV1, ... over one set of device buffers (weights once, the\n"
    "                         others at their largest size); `replay NAME --batch N` runs the\n"
    "                         smallest bucket >= N\n"
    "  --json FILE|-          the capture report as JSON (the `graphrun run --json` schema)\n"
    "  --socket PATH          the service's socket (default $GRAPHRUN_SOCKET, else\n"
    "                         $XDG_RUNTIME_DIR/graphrun/graphrun.sock or /tmp/graphrun-UID/)\n"
    "  --quiet                no progress on stderr\n"
    "\n"
    "example:\n"
    "  graphrun capture workloads/launch_bound.json --set K=500\n";

static const char *usage_replay =
    "usage: graphrun replay [NAME] [options]\n"
    "\n"
    "Replays the graph NAME (default: the most recent capture) in the replay service and prints\n"
    "the timing table of `graphrun run`: warm-up steps, then batches of graph launches between\n"
    "CUDA events; per-step median [p10, p90] over batches, untraced. A progress bar is drawn on\n"
    "stderr when it is a terminal.\n"
    "\n"
    "options:\n"
    "  --iters N              timed steps (default 1000)\n"
    "  --warmup N             untimed steps first (default iters/10, at least 3)\n"
    "  --batches N            timed batches (default 20)\n"
    "  --compare-eager        time eager launches of the same step too (speedup, saved us/krn)\n"
    "  --batch N              a graph captured with --buckets: run its smallest bucket >= N; with\n"
    "                         --input/--output the files hold N rows (padded / trimmed)\n"
    "  --input BUF=FILE       serve one step: copy FILE (.npy, or raw little-endian) into buffer\n"
    "                         BUF first (repeatable; checked against BUF's dtype and shape)\n"
    "  --output BUF=FILE      ... and write buffer BUF after the step to FILE (.npy when the name\n"
    "                         ends in .npy, else raw); with --input/--output no timing loop runs\n"
    "  --json FILE|-          the report as JSON (the `graphrun run --json` schema; a served step:\n"
    "                         the service's reply)\n"
    "  --socket PATH          the service's socket\n"
    "  --quiet                no progress bar\n"
    "\n"
    "examples:\n"
    "  graphrun replay --iters 10000 --compare-eager\n"
    "  graphrun replay decode_step --input x=x.npy --output x=out.npy\n";

static const char *usage_serve =
    "usage: graphrun serve [options]\n"
    "\n"
    "Runs the replay service, which holds the CUDA context, device buffers and captured graphs\n"
    "between commands. Without --foreground it starts in the background (as `graphrun capture`\n"
    "does when no service runs) and returns once it listens. Only processes of your uid may\n"
    "connect. The socket, its lock and its log are 0600. The default directory is created 0700\n"
    "and must stay private; a --socket directory is created 0700 when missing, and refused when\n"
    "group or others may write to it (e.g. /tmp itself) or another user owns it.\n"
    "`graphrun stop` or SIGTERM cancels the running request and exits within about 2 s.\n"
    "\n"
    "options:\n"
    "  --socket PATH          socket to listen on (default $GRAPHRUN_SOCKET, else\n"
    "                         $XDG_RUNTIME_DIR/graphrun/graphrun.sock or /tmp/graphrun-UID/)\n"
    "  --foreground           stay in the foreground and log to stderr (default: background,\n"
    "                         logging to SOCKET.log)\n"
    "  --max-graphs N         graphs held at once (default 32)\n"
    "  --max-memory SIZE      device memory the graphs may hold, e.g. 8G, 512M, 2GiB (default\n"
    "                         90% of the device's memory)\n"
    "  --client-timeout S     seconds a client has to finish sending a request line and to\n"
    "                         read replies; idle connections close after it (default 30)\n"
    "  --max-clients N        connections at once (default 64)\n"
    "  --max-queue N          GPU requests waiting behind the running one (default 64)\n"
    "  --device N             CUDA device ordinal (default 0)\n"
    "\n"
    "example:\n"
    "  graphrun serve --foreground --max-graphs 8\n";

static const char *usage_list =
    "usage: graphrun list [--socket PATH] [--json FILE|-]\n"
    "\n"
    "Lists the graphs the replay service holds: name, variant, nodes, device memory, replays,\n"
    "content hash, workload and params. * marks the most recent capture (replay's default).\n"
    "\n"
    "example:\n"
    "  graphrun list\n";

static const char *usage_drop =
    "usage: graphrun drop NAME [--socket PATH]\n"
    "\n"
    "Frees the graph NAME and its device buffers in the replay service.\n"
    "\n"
    "example:\n"
    "  graphrun drop launch_bound\n";

static const char *usage_status =
    "usage: graphrun status [--socket PATH] [--json FILE|-]\n"
    "\n"
    "Shows the replay service: pid, uptime, device, graphs held and their device memory, limits,\n"
    "the request running and waiting, requests served. Exits 1 when no service is running.\n"
    "\n"
    "example:\n"
    "  graphrun status\n";

static const char *usage_stop =
    "usage: graphrun stop [--socket PATH]\n"
    "\n"
    "Stops the replay service: the running request is cancelled, graphs and buffers are freed,\n"
    "and the command returns once the service has exited. Exits 0 when none was running.\n"
    "\n"
    "example:\n"
    "  graphrun stop\n";

const char *gr_service_cmd_usage(const char *cmd) {
    if (!cmd) return NULL;
    if (!strcmp(cmd, "capture")) return usage_capture;
    if (!strcmp(cmd, "replay")) return usage_replay;
    if (!strcmp(cmd, "serve")) return usage_serve;
    if (!strcmp(cmd, "list")) return usage_list;
    if (!strcmp(cmd, "drop")) return usage_drop;
    if (!strcmp(cmd, "status")) return usage_status;
    if (!strcmp(cmd, "stop")) return usage_stop;
    return NULL;
}

typedef struct sopts {
    const char *cmd;
    const char *usage;
    const char *positional;
    const char *socket, *name, *variant, *mode, *json_path;
    const char *sets[MAX_SETS];
    int nsets;
    int force, no_cpu_ref, quiet, foreground, compare_eager;
    int pdl, unroll, no_capture_check, skip_bad_lines;
    const char *input;
    const char *io_in[GR_PROTO_MAX_IO], *io_out[GR_PROTO_MAX_IO]; /* replay BUF=FILE */
    int nio_in, nio_out;
    int timing_given; /* replay: --iters, --warmup, --batches or --compare-eager given */
    const char *buckets; /* capture --buckets PARAM=V1,V2,... */
    int update;          /* capture --update (with --name) */
    long long batch;     /* replay --batch N: the smallest bucket >= N */
    int iters, warmup, batches;
    gr_service_opts serve;
    char *pass[32]; /* serve options passed on to the background service */
    int npass;
} sopts;

static int usage_error(const sopts *o, const char *fmt, const char *arg) {
    fprintf(stderr, "graphrun %s: ", o->cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n\n%s", o->usage);
    return 2;
}

static int fail(const gr_error *e) {
    fprintf(stderr, "graphrun: %s\n", e->msg);
    return gr_exit_code(e->code);
}

static const char *const capture_opts[] = {"--name=", "--set=", "--variant=", "--capture-mode=",
                                           "--force", "--no-cpu-ref", "--json=", "--socket=",
                                           "--quiet", "--pdl", "--no-pdl", "--unroll=", "--input=",
                                           "--skip-bad-lines", "--no-capture-check", "--buckets=",
                                           "--update", NULL};
static const char *const replay_opts[] = {"--iters=", "--warmup=", "--batches=", "--compare-eager",
                                          "--json=", "--socket=", "--quiet", "--input=",
                                          "--output=", "--batch=", NULL};
static const char *const serve_opts[] = {"--socket=", "--foreground", "--max-graphs=",
                                         "--max-memory=", "--client-timeout=", "--max-clients=",
                                         "--max-queue=", "--device=", "--notify-fd=", NULL};
static const char *const list_opts[] = {"--socket=", "--json=", NULL};
static const char *const socket_only[] = {"--socket=", NULL};

/* Returns -1 to go on, else an exit code. */
static int parse(int argc, char **argv, sopts *o) {
    const char *const *allowed = socket_only;
    int positional = 0; /* 0 none, 1 optional, 2 required */
    if (!strcmp(o->cmd, "capture")) allowed = capture_opts, positional = 2;
    else if (!strcmp(o->cmd, "replay")) allowed = replay_opts, positional = 1;
    else if (!strcmp(o->cmd, "serve")) allowed = serve_opts;
    else if (!strcmp(o->cmd, "list") || !strcmp(o->cmd, "status")) allowed = list_opts;
    else if (!strcmp(o->cmd, "drop")) positional = 2;
    /* the command's options, split into those with a value ("--name=") and flags */
    char names[64][64];
    const char *wv[65], *fl[65];
    int nw = 0, nf = 0;
    for (const char *const *s = allowed; *s && nw + nf < 64; s++) {
        size_t n = strlen(*s);
        int with = (*s)[n - 1] == '=';
        char *slot = names[nw + nf];
        snprintf(slot, 64, "%.*s", (int)(n - (size_t)with), *s);
        if (with) wv[nw++] = slot;
        else fl[nf++] = slot;
    }
    wv[nw] = fl[nf] = NULL;
    for (int i = 2; i < argc; i++) {
        gr_arg ta;
        gr_arg_take(argc, argv, &i, wv, fl, &ta);
        if (ta.kind == GR_ARG_ERROR) return usage_error(o, "%s", ta.error);
        if (ta.kind == GR_ARG_POSITIONAL) {
            if (!positional || o->positional)
                return usage_error(o, "unexpected argument \"%s\"", ta.value);
            o->positional = ta.value;
            continue;
        }
        const char *name = ta.name, *val = ta.value;
        if (!strcmp(name, "--help")) {
            fputs(o->usage, stdout);
            return 0;
        }
        int known = 0;
        for (int k = 0; k < nw + nf; k++) known |= !strcmp(names[k], name);
        if (!known) return usage_error(o, "unknown option %s (see --help)", name);
        if (!strcmp(name, "--socket")) o->socket = val;
        else if (!strcmp(name, "--name")) {
            if (!gr_proto_valid_name(val))
                return usage_error(o, "--name takes 1 to 64 letters, digits, _ . - (not starting "
                                   "with - or .), got \"%s\"", val);
            o->name = val;
        } else if (!strcmp(name, "--set")) {
            if (o->nsets >= MAX_SETS) return usage_error(o, "too many --set options%s", "");
            if (!strchr(val, '=') || val[0] == '=' || strlen(val) >= GR_PROTO_SET_MAX)
                return usage_error(o, "--set takes NAME=VALUE, got \"%s\"", val);
            o->sets[o->nsets++] = val;
        } else if (!strcmp(name, "--variant")) {
            if (!val[0] || strlen(val) > 63)
                return usage_error(o, "--variant takes a variant name, got \"%s\"", val);
            o->variant = val;
        } else if (!strcmp(name, "--capture-mode")) {
            gr_capture_mode m;
            gr_error e;
            gr_error_clear(&e);
            if (gr_capture_mode_parse(val, &m, &e) != GR_OK) return usage_error(o, "%s", e.msg);
            o->mode = val;
        } else if (!strcmp(name, "--unroll")) {
            if (!gr_arg_int32(val, 1, 1024, &o->unroll))
                return usage_error(o, "--unroll takes a whole number of steps in [1, 1024], got \"%s\"", val);
        } else if (!strcmp(name, "--input") && !strcmp(o->cmd, "replay")) {
            if (!strchr(val, '=') || val[0] == '=' || !strchr(val, '=')[1])
                return usage_error(o, "--input takes BUFFER=FILE, got \"%s\"", val);
            if (o->nio_in >= GR_PROTO_MAX_IO) return usage_error(o, "too many --input options%s", "");
            o->io_in[o->nio_in++] = val;
        } else if (!strcmp(name, "--output")) {
            if (!strchr(val, '=') || val[0] == '=' || !strchr(val, '=')[1])
                return usage_error(o, "--output takes BUFFER=FILE, got \"%s\"", val);
            if (o->nio_out >= GR_PROTO_MAX_IO) return usage_error(o, "too many --output options%s", "");
            o->io_out[o->nio_out++] = val;
        } else if (!strcmp(name, "--input")) {
            if (!val[0]) return usage_error(o, "--input takes a Criteo TSV file%s", "");
            o->input = val;
        } else if (!strcmp(name, "--buckets")) {
            gr_bucket_spec bs;
            gr_error e;
            gr_error_clear(&e);
            if (gr_bucket_parse(val, "--buckets", &bs, &e) != GR_OK) return usage_error(o, "%s", e.msg);
            o->buckets = val;
        } else if (!strcmp(name, "--batch")) {
            int b = 0;
            if (!gr_arg_int32(val, 1, 1 << 30, &b))
                return usage_error(o, "--batch takes a whole number >= 1, got \"%s\"", val);
            o->batch = b;
        } else if (!strcmp(name, "--pdl") || !strcmp(name, "--no-pdl")) {
            int want = !strcmp(name, "--pdl") ? 1 : -1;
            if (o->pdl && o->pdl != want)
                return usage_error(o, "--pdl and --no-pdl are both given; give one%s", "");
            o->pdl = want;
        }
        else if (!strcmp(name, "--update")) o->update = 1;
        else if (!strcmp(name, "--skip-bad-lines")) o->skip_bad_lines = 1;
        else if (!strcmp(name, "--no-capture-check")) o->no_capture_check = 1;
        else if (!strcmp(name, "--force")) o->force = 1;
        else if (!strcmp(name, "--no-cpu-ref")) o->no_cpu_ref = 1;
        else if (!strcmp(name, "--json")) o->json_path = val;
        else if (!strcmp(name, "--quiet")) o->quiet = 1;
        else if (!strcmp(name, "--compare-eager")) o->compare_eager = o->timing_given = 1;
        else if (!strcmp(name, "--foreground")) o->foreground = 1;
        else if (!strcmp(name, "--iters")) {
            o->timing_given = 1;
            if (!gr_arg_int32(val, 1, 100000000, &o->iters))
                return usage_error(o, "--iters takes a whole number in [1, 100000000], got \"%s\"", val);
        } else if (!strcmp(name, "--warmup")) {
            o->timing_given = 1;
            if (!gr_arg_int32(val, 0, 100000000, &o->warmup))
                return usage_error(o, "--warmup takes a whole number >= 0, got \"%s\"", val);
        } else if (!strcmp(name, "--batches")) {
            o->timing_given = 1;
            if (!gr_arg_int32(val, 1, 100000, &o->batches))
                return usage_error(o, "--batches takes a whole number in [1, 100000], got \"%s\"", val);
        } else if (!strcmp(name, "--max-graphs")) {
            if (!gr_arg_int32(val, 1, 1024, &o->serve.max_graphs))
                return usage_error(o, "--max-graphs takes a whole number in [1, 1024], got \"%s\"", val);
        } else if (!strcmp(name, "--max-memory")) {
            if (!gr_arg_bytes(val, &o->serve.max_memory))
                return usage_error(o, "--max-memory takes a size such as 8G, 512M or 2GiB, got \"%s\"", val);
        } else if (!strcmp(name, "--client-timeout")) {
            double s;
            if (!gr_parse_number(val, &s) || s < 0.1 || s > 86400)
                return usage_error(o, "--client-timeout takes seconds in [0.1, 86400], got \"%s\"", val);
            o->serve.client_timeout_ms = (int)(s * 1000);
        } else if (!strcmp(name, "--max-clients")) {
            if (!gr_arg_int32(val, 1, 1000, &o->serve.max_clients))
                return usage_error(o, "--max-clients takes a whole number in [1, 1000], got \"%s\"", val);
        } else if (!strcmp(name, "--max-queue")) {
            if (!gr_arg_int32(val, 1, 100000, &o->serve.max_queue))
                return usage_error(o, "--max-queue takes a whole number in [1, 100000], got \"%s\"", val);
        } else if (!strcmp(name, "--device")) {
            if (!gr_arg_int32(val, 0, 1024, &o->serve.device))
                return usage_error(o, "--device takes a device ordinal, got \"%s\"", val);
        } else if (!strcmp(name, "--notify-fd")) {
            if (!gr_arg_int32(val, 3, 1 << 20, &o->serve.notify_fd))
                return usage_error(o, "--notify-fd takes a file descriptor >= 3, got \"%s\"", val);
        }
        /* limits given to a background `serve` go on to the service it starts */
        if (!strcmp(o->cmd, "serve") && strcmp(name, "--socket") != 0 &&
            strcmp(name, "--foreground") != 0 && strcmp(name, "--notify-fd") != 0 && o->npass + 2 < 32) {
            o->pass[o->npass++] = strdup(name);
            if (val) o->pass[o->npass++] = strdup(val);
        }
    }
    if (positional == 2 && !o->positional)
        return usage_error(o, "%s", !strcmp(o->cmd, "capture") ? "capture needs a WORKLOAD file"
                                                                : "drop needs the NAME of a graph");
    if (!strcmp(o->cmd, "replay") && o->positional && !gr_proto_valid_name(o->positional))
        return usage_error(o, "\"%s\" is not a graph name (`graphrun list` shows them)", o->positional);
    return -1;
}

/* ---------------------------------------------------------------- output helpers */

static int write_json(const char *path, json_t *j) {
    gr_error e;
    gr_error_clear(&e);
    if (gr_json_write(path, j, "JSON", &e) == GR_OK) return 0;
    fprintf(stderr, "graphrun: %s\n", e.msg);
    return 2;
}

static const char *jstr(json_t *o, const char *key) {
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static double jnum(json_t *o, const char *key) {
    return json_number_value(json_object_get(o, key));
}

static void fmt_duration(double s, char *buf, size_t size) {
    long t = (long)s;
    if (t >= 86400) snprintf(buf, size, "%ldd%02ldh", t / 86400, (t % 86400) / 3600);
    else if (t >= 3600) snprintf(buf, size, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
    else if (t >= 60) snprintf(buf, size, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, size, "%.1fs", s);
}

typedef struct pstate {
    int show;
    int active;
} pstate;

static void on_progress(void *user, const gr_reply *r) {
    pstate *p = user;
    if (!p->show) return;
    if (r->total > 0 && strcmp(r->phase, "queued") != 0) {
        char label[64];
        snprintf(label, sizeof(label), "%s", !strcmp(r->phase, "graph") ? "graph replay"
                                             : !strcmp(r->phase, "eager") ? "eager steps"
                                                                          : r->phase);
        gr_progress_bar(stderr, label, r->done, r->total);
        p->active = r->done < r->total;
        return;
    }
    const char *text = !strcmp(r->phase, "queued")      ? "waiting for the GPU (other requests first)"
                       : !strcmp(r->phase, "load")      ? "loading and resolving the workload"
                       : !strcmp(r->phase, "reference") ? "running the CPU reference"
                       : !strcmp(r->phase, "eager")     ? "one eager step, checked"
                       : !strcmp(r->phase, "capture")   ? "capturing the graph"
                       : !strcmp(r->phase, "verify")    ? "one graph replay, checked"
                       : !strcmp(r->phase, "bandwidth") ? "measuring the HBM bandwidths"
                                                        : r->phase;
    fprintf(stderr, "\r  %-60.60s", text);
    fflush(stderr);
    p->active = 1;
}

static void progress_done(pstate *p) {
    if (p->active) fprintf(stderr, "\r%*s\r", 80, "");
    p->active = 0;
}

/* Connect, send, wait. On a transport error prints it and returns its exit code; else 0 with
 * the reply (which may be ok:false). */
static int call(const sopts *o, const gr_service_paths *paths, int autostart, json_t *req,
                int timeout_ms, gr_reply *reply, int *started_pid) {
    gr_error e;
    gr_error_clear(&e);
    gr_client *c = NULL;
    if (gr_client_connect(paths, autostart, &c, &e) != GR_OK) return fail(&e);
    int started = gr_client_started_pid(c);
    if (started_pid) *started_pid = started;
    if (started)
        fprintf(stderr, "graphrun: started a replay service (pid %d; socket %s; log %s)\n", started,
                paths->socket, paths->log);
    pstate ps = {!o->quiet && isatty(2), 0};
    gr_status st = gr_client_call(c, req, timeout_ms, on_progress, &ps, reply, &e);
    progress_done(&ps);
    if (st == GR_OK && reply->ok && !strcmp(o->cmd, "stop")) {
        gr_status ws = gr_client_wait_gone(c, 60000, &e);
        if (ws != GR_OK) st = ws;
    }
    gr_client_close(c);
    if (st != GR_OK) {
        gr_reply_clear(reply);
        return fail(&e);
    }
    return 0;
}

static json_t *request(const char *cmd) {
    return json_pack("{s:i, s:s}", "schema_version", GR_PROTO_SCHEMA_VERSION, "cmd", cmd);
}

/* An ok:false reply: report text (when the service made one) on stdout, message on stderr. */
static int reply_failed(const gr_reply *r) {
    json_t *b = r->body;
    const char *text = jstr(b, "report_text");
    if (text[0]) {
        fputs(text, stdout);
        fflush(stdout);
    }
    fprintf(stderr, "graphrun: %s\n", r->message);
    return gr_exit_code(r->code);
}

static void socket_hint(const gr_service_paths *p, char *buf, size_t size) {
    if (!strcmp(p->origin, "--socket")) snprintf(buf, size, " --socket %s", p->socket);
    else buf[0] = '\0';
}

/* ---------------------------------------------------------------- commands */

/* Sends req (consumed) and waits for the final reply; 0 with an ok reply in *r (the caller
 * clears it), else the exit code, the failure printed and r cleared. */
static int ask(sopts *o, const gr_service_paths *paths, int may_start, json_t *req, int timeout_ms,
               gr_reply *r) {
    int rc = call(o, paths, may_start, req, timeout_ms, r, NULL);
    json_decref(req);
    if (rc) return rc;
    if (!r->ok) {
        rc = reply_failed(r);
        gr_reply_clear(r);
        return rc;
    }
    return 0;
}

/* --buckets, before any service: every bucket's plan resolves and they can share buffers. */
static gr_status check_buckets(const sopts *o, const char *abs, const char *input, gr_error *e) {
    gr_bucket_spec bs;
    if (gr_bucket_parse(o->buckets, "--buckets", &bs, e) != GR_OK) return e->code;
    gr_loaded *ld = calloc((size_t)bs.n, sizeof(*ld));
    const gr_plan **plans = calloc((size_t)bs.n, sizeof(*plans));
    gr_status st = ld && plans ? GR_OK : gr_error_set(e, GR_ERR_NOMEM, NULL, "out of memory");
    gr_target t = gr_target_default();
    for (int i = 0; i < bs.n && st == GR_OK; i++) {
        const char *sets[MAX_SETS + 1];
        int ns = 0;
        for (int k = 0; k < o->nsets; k++) sets[ns++] = o->sets[k];
        char bset[96];
        snprintf(bset, sizeof(bset), "%s=%lld", bs.param, (long long)bs.values[i]);
        sets[ns++] = bset; /* the last --set of a name wins */
        gr_load_req lr = {abs, o->variant, sets, ns, NULL, 1, input[0] ? input : NULL, o->skip_bad_lines};
        st = gr_load_resolve(&lr, &t, &ld[i], e);
        if (st == GR_OK && !gr_workload_param(ld[i].wl, bs.param))
            st = gr_error_set(e, GR_ERR_USAGE, "--buckets", "workload %s has no param \"%s\"",
                              ld[i].wl->name, bs.param);
        if (st != GR_OK) gr_error_prefix(e, "bucket %s: ", bset);
        else plans[i] = ld[i].plans[0];
    }
    if (st == GR_OK) {
        gr_bucket_layout l;
        st = gr_bucket_layout_make(plans, bs.n, &bs, &l, e);
        gr_bucket_layout_free(&l);
    }
    for (int i = 0; ld && i < bs.n; i++) gr_loaded_free(&ld[i]); /* zeroed ones too */
    free(ld);
    free(plans);
    return st;
}

static int cmd_capture(sopts *o, const gr_service_paths *paths) {
    char abs[PATH_MAX];
    if (!realpath(o->positional, abs)) {
        fprintf(stderr, "graphrun: %s: cannot open the workload file (%s; check the path; bundled "
                        "workloads are in workloads/)\n",
                o->positional, strerror(errno));
        return 2;
    }
    /* validate here first (load, --set, --variant, resolve: no GPU needed), so that bad input
     * never starts a service; the service resolves again against its device */
    char input_abs[PATH_MAX] = "";
    if (o->input && !realpath(o->input, input_abs)) {
        fprintf(stderr, "graphrun: --input %s: cannot open the file (%s; check the path)\n",
                o->input, strerror(errno));
        return 2;
    }
    if (o->skip_bad_lines && !o->input) {
        fprintf(stderr, "graphrun capture: --skip-bad-lines needs --input FILE.tsv\n");
        return 2;
    }
    gr_error e;
    gr_error_clear(&e);
    gr_loaded ld;
    gr_load_req lr = {abs,  o->variant, o->sets, o->nsets, NULL, 1, input_abs[0] ? input_abs : NULL,
                      o->skip_bad_lines};
    gr_target t = gr_target_default();
    gr_status vs = gr_load_resolve(&lr, &t, &ld, &e);
    gr_loaded_free(&ld);
    if (vs != GR_OK) return fail(&e);
    if (o->buckets && check_buckets(o, abs, input_abs, &e) != GR_OK) return fail(&e);
    json_t *req = request("capture");
    json_object_set_new(req, "workload", json_string(abs));
    if (o->name) json_object_set_new(req, "name", json_string(o->name));
    if (o->variant) json_object_set_new(req, "variant", json_string(o->variant));
    if (o->mode) json_object_set_new(req, "capture_mode", json_string(o->mode));
    if (o->nsets) {
        json_t *sets = json_array();
        for (int i = 0; i < o->nsets; i++) json_array_append_new(sets, json_string(o->sets[i]));
        json_object_set_new(req, "sets", sets);
    }
    json_object_set_new(req, "force", json_boolean(o->force));
    json_object_set_new(req, "cpu_reference", json_boolean(!o->no_cpu_ref));
    if (!o->no_capture_check) json_object_set_new(req, "capture_check", json_true());
    else json_object_set_new(req, "capture_check", json_false());
    if (o->pdl) json_object_set_new(req, "pdl", json_boolean(o->pdl > 0)); /* absent: the GPU decides */
    if (o->unroll > 1) json_object_set_new(req, "unroll", json_integer(o->unroll));
    if (input_abs[0]) json_object_set_new(req, "input", json_string(input_abs));
    if (o->skip_bad_lines) json_object_set_new(req, "skip_bad_lines", json_true());
    if (o->buckets) json_object_set_new(req, "buckets", json_string(o->buckets));
    if (o->update) {
        if (!o->name || o->buckets) {
            json_decref(req);
            fprintf(stderr, "graphrun capture: --update needs --name NAME of the held graph to "
                            "update (and no --buckets)\n");
            return 2;
        }
        json_object_set_new(req, "update", json_true());
    }
    json_object_set_new(req, "progress", json_boolean(!o->quiet && isatty(2)));
    gr_reply r;
    int rc = ask(o, paths, 1, req, -1, &r);
    if (rc) return rc;
    json_t *b = r.body;
    int to_stdout_json = o->json_path && !strcmp(o->json_path, "-");
    if (json_object_get(b, "buckets")) { /* --buckets: one graph per bucket */
        if (!to_stdout_json) {
            size_t i;
            json_t *g;
            printf("captured %zu buckets as \"%s\" over shared buffers: %.1f MB on the device "
                   "instead of %.1f MB with a copy per bucket\n",
                   json_array_size(json_object_get(b, "buckets")), jstr(b, "name"),
                   jnum(b, "shared_bytes") / 1e6, jnum(b, "separate_bytes") / 1e6);
            json_array_foreach(json_object_get(b, "buckets"), i, g)
                printf("  %-28s %s (%s), %.0f nodes, %.0f kernels\n", jstr(g, "name"),
                       jstr(g, "variant"), jstr(g, "params"), jnum(g, "nodes"), jnum(g, "kernel_nodes"));
            printf("replay a batch with: graphrun replay %s --batch N --iters 10000\n", jstr(b, "name"));
        }
        if (o->json_path) {
            json_object_del(b, "schema_version");
            json_object_del(b, "ok");
            json_object_del(b, "cmd");
            rc = write_json(o->json_path, b);
        }
        gr_reply_clear(&r);
        return rc;
    }
    if (!to_stdout_json) {
        char hint[160];
        socket_hint(paths, hint, sizeof(hint));
        printf("workload %s (%s)\nparams   %s\n", jstr(b, "workload"), jstr(b, "source"), jstr(b, "params"));
        fputs(jstr(b, "report_text"), stdout);
        if (json_is_true(json_object_get(b, "reused")))
            printf("\nalready captured as \"%s\" (content hash %s: same workload file, params, "
                   "variant and capture mode); not captured again (--force captures again)\n",
                   jstr(b, "name"), jstr(b, "hash"));
        else
            printf("\ncaptured as \"%s\" (content hash %s); the replay service holds it. Replay "
                   "with:\n  graphrun replay %s --iters 10000%s\n",
                   jstr(b, "name"), jstr(b, "hash"), jstr(b, "name"), hint);
        json_t *u = json_object_get(b, "update");
        if (u)
            printf("%s: cudaGraphExecUpdate %.1f us (host clock) vs cudaGraphInstantiate %.1f us%s%s\n",
                   !strcmp(jstr(u, "result"), "updated")
                       ? "updated in place (the held exec runs the new graph)"
                       : "re-instantiated (the topology differs)",
                   jnum(u, "update_us"), jnum(u, "instantiate_us"), jstr(u, "why")[0] ? "; " : "",
                   jstr(u, "why"));
    }
    if (o->json_path) {
        json_t *rep = json_object_get(b, "report");
        rc = rep ? write_json(o->json_path, rep) : 0;
    }
    gr_reply_clear(&r);
    return rc;
}

/* BUF=FILE as a request entry {"buffer": BUF, "file": "/abs/FILE"}; inputs must exist, an
 * output's directory must (its file is written by the service). */
static json_t *io_entry(const char *arg, int out, char *why, size_t size) {
    const char *eq = strchr(arg, '=');
    char buf[128], abs[PATH_MAX];
    snprintf(buf, sizeof(buf), "%.*s", (int)(eq - arg), arg);
    const char *file = eq + 1;
    if (!out) {
        if (!realpath(file, abs)) {
            snprintf(why, size, "--input %s: cannot open %s (%s)", arg, file, strerror(errno));
            return NULL;
        }
    } else {
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s", file);
        char *slash = strrchr(dir, '/');
        const char *base = slash ? slash + 1 : file;
        if (slash == dir) snprintf(dir, sizeof(dir), "/");
        else if (slash) *slash = '\0';
        else snprintf(dir, sizeof(dir), ".");
        char rdir[PATH_MAX];
        if (!base[0] || !realpath(dir, rdir)) {
            snprintf(why, size, "--output %s: no directory for %s (%s)", arg, file,
                     base[0] ? strerror(errno) : "give a file name");
            return NULL;
        }
        snprintf(abs, sizeof(abs), "%s/%s", strcmp(rdir, "/") ? rdir : "", base);
    }
    return json_pack("{s:s, s:s}", "buffer", buf, "file", abs);
}

static int cmd_serve_step(sopts *o, const gr_service_paths *paths) {
    if (o->timing_given) {
        fprintf(stderr, "graphrun replay: --input/--output serve one step; --iters, --warmup, "
                        "--batches and --compare-eager time replays (give them in another call)\n");
        return 2;
    }
    json_t *req = request("replay");
    if (o->positional) json_object_set_new(req, "name", json_string(o->positional));
    if (o->batch > 0) json_object_set_new(req, "batch", json_integer(o->batch));
    json_t *ins = json_array(), *outs = json_array();
    char why[PATH_MAX + 256];
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < (k ? o->nio_out : o->nio_in); i++) {
            json_t *e = io_entry(k ? o->io_out[i] : o->io_in[i], k, why, sizeof(why));
            if (!e) {
                fprintf(stderr, "graphrun: %s\n", why);
                json_decref(ins), json_decref(outs), json_decref(req);
                return 2;
            }
            json_array_append_new(k ? outs : ins, e);
        }
    if (json_array_size(ins)) json_object_set_new(req, "inputs", ins);
    else json_decref(ins);
    if (json_array_size(outs)) json_object_set_new(req, "outputs", outs);
    else json_decref(outs);
    gr_reply r;
    int rc = ask(o, paths, 0, req, -1, &r);
    if (rc) return rc;
    json_t *b = r.body;
    json_t *sv = json_object_get(b, "served");
    if (!o->json_path || strcmp(o->json_path, "-") != 0) {
        printf("served   one step of \"%s\" (workload %s, variant %s): graph %.2f us (CUDA events), "
               "copy in %.1f us, copy out %.1f us, %.1f us in the service (host clock)\n",
               jstr(b, "name"), jstr(b, "workload"), jstr(b, "variant"), jnum(sv, "graph_us"),
               jnum(sv, "copy_in_us"), jnum(sv, "copy_out_us"), jnum(sv, "request_us"));
        for (int k = 0; k < 2; k++) {
            size_t i;
            json_t *e;
            json_array_foreach(json_object_get(sv, k ? "outputs" : "inputs"), i, e)
                printf("  %-6s %-16s %s %s (%.0f bytes)\n", k ? "out" : "in", jstr(e, "buffer"),
                       jstr(e, "dtype"), jstr(e, "file"), jnum(e, "bytes"));
        }
    }
    if (o->json_path) {
        json_object_del(b, "schema_version");
        json_object_del(b, "ok");
        json_object_del(b, "cmd");
        rc = write_json(o->json_path, b);
    }
    gr_reply_clear(&r);
    return rc;
}

static int cmd_replay(sopts *o, const gr_service_paths *paths) {
    if (o->nio_in || o->nio_out) return cmd_serve_step(o, paths);
    json_t *req = request("replay");
    if (o->positional) json_object_set_new(req, "name", json_string(o->positional));
    if (o->batch > 0) json_object_set_new(req, "batch", json_integer(o->batch));
    json_object_set_new(req, "iters", json_integer(o->iters));
    if (o->warmup >= 0) json_object_set_new(req, "warmup", json_integer(o->warmup));
    json_object_set_new(req, "batches", json_integer(o->batches));
    json_object_set_new(req, "compare_eager", json_boolean(o->compare_eager));
    json_object_set_new(req, "progress", json_boolean(!o->quiet && isatty(2)));
    gr_reply r;
    int rc = ask(o, paths, 0, req, -1, &r);
    if (rc) return rc;
    json_t *b = r.body;
    if (!o->json_path || strcmp(o->json_path, "-") != 0) {
        printf("graph    \"%s\" held by the replay service: workload %s (%s), variant %s, "
               "capture mode %s\nparams   %s\n",
               jstr(b, "name"), jstr(b, "workload"), jstr(b, "source"), jstr(b, "variant"),
               jstr(b, "capture_mode"), jstr(b, "params"));
        fputs(jstr(b, "report_text"), stdout);
    }
    if (o->json_path) {
        json_t *rep = json_object_get(b, "report");
        rc = rep ? write_json(o->json_path, rep) : 0;
    }
    gr_reply_clear(&r);
    return rc;
}

/* `list` and `status`: ask, and either write the reply's body as JSON (*done = 1, the exit code
 * returned) or hand the reply back for the text (r to be cleared by the caller). */
static int ask_or_json(sopts *o, const gr_service_paths *paths, const char *cmd, gr_reply *r,
                       int *done) {
    *done = 1;
    int rc = ask(o, paths, 0, request(cmd), 30000, r);
    if (rc) return rc;
    if (o->json_path) {
        json_t *b = r->body;
        json_object_del(b, "schema_version");
        json_object_del(b, "ok");
        json_object_del(b, "cmd");
        rc = write_json(o->json_path, b);
        gr_reply_clear(r);
        return rc;
    }
    *done = 0;
    return 0;
}

static int cmd_list(sopts *o, const gr_service_paths *paths) {
    gr_reply r;
    int done;
    int rc = ask_or_json(o, paths, "list", &r, &done);
    if (done) return rc;
    json_t *b = r.body;
    json_t *graphs = json_object_get(b, "graphs");
    if (json_array_size(graphs) == 0) {
        printf("no graphs held (capture one with `graphrun capture WORKLOAD`)\n");
        gr_reply_clear(&r);
        return 0;
    }
    printf("  %-24s %-12s %7s %7s %10s %7s  %-16s %s\n", "name", "variant", "nodes", "kernels",
           "memory", "replays", "hash", "workload (params)");
    size_t i;
    json_t *g;
    json_array_foreach(graphs, i, g) {
        char mem[32];
        gr_fmt_bytes(jnum(g, "device_bytes"), mem, sizeof(mem));
        printf("%c %-24s %-12s %7.0f %7.0f %10s %7.0f  %-16s %s (%s)\n",
               json_is_true(json_object_get(g, "latest")) ? '*' : ' ', jstr(g, "name"),
               jstr(g, "variant"), jnum(g, "nodes"), jnum(g, "kernel_nodes"), mem,
               jnum(g, "replays"), jstr(g, "hash"), jstr(g, "source"), jstr(g, "params"));
        if (jnum(g, "lanes") > 0)
            printf("  %-24s %.0f lane%s open on it (steps counted in replays)\n", "",
                   jnum(g, "lanes"), jnum(g, "lanes") == 1 ? "" : "s");
    }
    /* bucket groups: the buffers their graphs share, once */
    json_array_foreach(graphs, i, g) {
        json_t *bk = json_object_get(g, "bucket");
        if (!bk) continue;
        int first = 1;
        for (size_t k = 0; k < i && first; k++) {
            json_t *o2 = json_object_get(json_array_get(graphs, k), "bucket");
            first = !o2 || strcmp(jstr(o2, "group"), jstr(bk, "group")) != 0;
        }
        if (!first) continue;
        char shared[32], separate[32], vals[256] = "";
        size_t vi, vl = 0;
        json_t *val;
        json_array_foreach(json_object_get(bk, "values"), vi, val)
            if (vl < sizeof(vals))
                vl += (size_t)snprintf(vals + vl, sizeof(vals) - vl, "%s%lld", vi ? ", " : "",
                                       (long long)json_integer_value(val));
        gr_fmt_bytes(jnum(bk, "shared_bytes"), shared, sizeof(shared));
        gr_fmt_bytes(jnum(bk, "separate_bytes"), separate, sizeof(separate));
        printf("  buckets of \"%s\" (%s = %s): %s of shared buffers, where a copy per bucket would "
               "take %s\n", jstr(bk, "group"), jstr(bk, "param"), vals, shared, separate);
    }
    printf("(* = the most recent capture, which `graphrun replay` replays without a NAME; memory = "
           "device buffers of the graph; a bucket's shared buffers are counted once, below the "
           "table)\n");
    gr_reply_clear(&r);
    return 0;
}

static int cmd_status(sopts *o, const gr_service_paths *paths) {
    gr_reply r;
    int done;
    int rc = ask_or_json(o, paths, "status", &r, &done);
    if (done) return rc;
    json_t *b = r.body;
    char up[32], mem[32], lim[32];
    fmt_duration(jnum(b, "uptime_s"), up, sizeof(up));
    printf("service   pid %.0f, up %s, protocol %.0f; socket %s; log %s\n", jnum(b, "pid"), up,
           jnum(b, "protocol"), jstr(b, "socket"), jstr(b, "log"));
    json_t *d = json_object_get(b, "device");
    const char *state = jstr(d, "state");
    if (!strcmp(state, "ready")) {
        gr_fmt_bytes(jnum(d, "memory_bytes"), mem, sizeof(mem));
        printf("device    %s (device %.0f, %.0f SMs, cc %s, %s)\n", jstr(d, "name"), jnum(d, "ordinal"),
               jnum(d, "sm_count"), jstr(d, "cc"), mem);
    } else if (!strcmp(state, "none")) {
        printf("device    none: %s\n", jstr(d, "error"));
    } else {
        printf("device    (being probed)\n");
    }
    json_t *l = json_object_get(b, "limits");
    gr_fmt_bytes(jnum(b, "graph_bytes"), mem, sizeof(mem));
    if (jnum(l, "max_memory_bytes") > 0) gr_fmt_bytes(jnum(l, "max_memory_bytes"), lim, sizeof(lim));
    else snprintf(lim, sizeof(lim), "90%% of the device's");
    const char *latest = jstr(b, "latest");
    printf("graphs    %.0f held%s%s%s, %s of device memory; limits %.0f graphs, %s\n",
           jnum(b, "graphs"), latest[0] ? " (latest \"" : "", latest, latest[0] ? "\")" : "", mem,
           jnum(l, "max_graphs"), lim);
    json_t *q = json_object_get(b, "queue");
    json_t *run = json_object_get(q, "running");
    if (json_is_object(run))
        printf("queue     running: %s (%.1f s); %.0f waiting\n", jstr(run, "what"), jnum(run, "seconds"),
               jnum(q, "waiting"));
    else
        printf("queue     idle\n");
    printf("requests  %.0f served; %.0f connection%s open; %.0f lane%s open\n",
           jnum(b, "requests_served"), jnum(b, "connections"), jnum(b, "connections") == 1 ? "" : "s",
           jnum(b, "lanes"), jnum(b, "lanes") == 1 ? "" : "s");
    gr_reply_clear(&r);
    return 0;
}

static int cmd_drop(sopts *o, const gr_service_paths *paths) {
    json_t *req = request("drop");
    json_object_set_new(req, "name", json_string(o->positional));
    gr_reply r;
    int rc = ask(o, paths, 0, req, -1, &r);
    if (rc) return rc;
    char mem[32];
    gr_fmt_bytes(jnum(r.body, "freed_bytes"), mem, sizeof(mem));
    printf("dropped \"%s\" (%s of device memory freed)\n", jstr(r.body, "dropped"), mem);
    gr_reply_clear(&r);
    return 0;
}

static int cmd_stop(sopts *o, const gr_service_paths *paths) {
    gr_error e;
    gr_error_clear(&e);
    gr_client *c = NULL;
    if (gr_client_connect(paths, 0, &c, &e) != GR_OK) {
        if (e.code == GR_ERR_SERVICE && strstr(e.msg, "no replay service is running")) {
            printf("no replay service is running at %s: nothing to stop\n", paths->socket);
            return 0;
        }
        return fail(&e);
    }
    gr_client_close(c);
    json_t *req = request("stop");
    gr_reply r;
    int rc = call(o, paths, 0, req, 30000, &r, NULL);
    json_decref(req);
    if (rc) return rc;
    if (!r.ok) {
        rc = reply_failed(&r);
        gr_reply_clear(&r);
        return rc;
    }
    printf("the replay service (pid %.0f) stopped\n", jnum(r.body, "pid"));
    gr_reply_clear(&r);
    return 0;
}

static int cmd_serve(sopts *o) {
    if (o->serve.notify_fd >= 0 || o->foreground) {
        o->serve.socket = o->socket;
        o->serve.foreground = o->foreground;
        const char *hooks = getenv("GRAPHRUN_SERVICE_TEST_HOOKS");
        o->serve.test_hooks = hooks && !strcmp(hooks, "1");
        gr_error e;
        gr_error_clear(&e);
        int already = 0, abandoned = 0;
        gr_status st = gr_service_run(&o->serve, &already, &abandoned, &e);
        if (abandoned) {
            /* its worker thread still runs: end the process now, without exit handlers */
            fprintf(stderr, "graphrun: %s\n", e.msg);
            fflush(stderr);
            fflush(stdout);
            _exit(gr_exit_code(e.code));
        }
        if (already && o->serve.notify_fd >= 0) return 0; /* the caller connects to that one */
        return st == GR_OK ? 0 : fail(&e);
    }
    gr_service_paths paths;
    gr_error e;
    gr_error_clear(&e);
    if (gr_service_paths_resolve(o->socket, &paths, &e) != GR_OK) return fail(&e);
    int pid = 0, already = 0;
    o->pass[o->npass] = NULL;
    if (gr_service_spawn(&paths, NULL, o->pass, &pid, &already, &e) != GR_OK) return fail(&e);
    if (already) {
        fprintf(stderr, "graphrun: a replay service is already running at %s (pid %d); `graphrun "
                        "stop` stops it\n",
                paths.socket, pid);
        return 1;
    }
    printf("replay service started (pid %d); socket %s; log %s\n", pid, paths.socket, paths.log);
    return 0;
}

int gr_service_cmd_main(int argc, char **argv) {
    sopts o;
    memset(&o, 0, sizeof(o));
    o.cmd = argv[1];
    o.usage = gr_service_cmd_usage(o.cmd);
    o.iters = 1000;
    o.warmup = -1;
    o.batches = 20;
    gr_service_opts_default(&o.serve);
    int rc = parse(argc, argv, &o);
    if (rc < 0) {
        if (!strcmp(o.cmd, "serve")) {
            rc = cmd_serve(&o);
        } else {
            gr_service_paths paths;
            gr_error e;
            gr_error_clear(&e);
            if (gr_service_paths_resolve(o.socket, &paths, &e) != GR_OK) rc = fail(&e);
            else if (!strcmp(o.cmd, "capture")) rc = cmd_capture(&o, &paths);
            else if (!strcmp(o.cmd, "replay")) rc = cmd_replay(&o, &paths);
            else if (!strcmp(o.cmd, "list")) rc = cmd_list(&o, &paths);
            else if (!strcmp(o.cmd, "status")) rc = cmd_status(&o, &paths);
            else if (!strcmp(o.cmd, "drop")) rc = cmd_drop(&o, &paths);
            else rc = cmd_stop(&o, &paths);
        }
    }
    for (int i = 0; i < o.npass; i++) free(o.pass[i]);
    return rc;
}
