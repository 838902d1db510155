/* libgr_launchstat_inject.so: the CUDA driver loads it into a program through
 * CUDA_INJECTION64_PATH (the mechanism Nsight Systems and CUPTI's samples use) and calls
 * InitializeInjection during cuInit. It starts the collector on the file named by
 * GR_LAUNCHSTAT_OUT and makes sure the trace is flushed and closed however the program ends:
 * exit() or return from main (from any thread: atexit), SIGINT or SIGTERM (a signal thread
 * flushes, then the signal is re-raised with its default action). SIGKILL and _exit() cannot be
 * caught: the trace then lacks its end record and `report --partial` reads what was written.
 *
 * Settings come from the environment (cupti-launchstat sets them):
 *   GR_LAUNCHSTAT_OUT          trace path (default cupti-launchstat-PID.jsonl); when it exists
 *                              (another process of the same run owns it) PATH.PID is used
 *   GR_LAUNCHSTAT_CMD          command line for the header
 *   GR_LAUNCHSTAT_STEPS        steps the program runs
 *   GR_LAUNCHSTAT_LATENCY=1    queued/submitted timestamps
 *   GR_LAUNCHSTAT_DRIVER=0     no driver-API records
 *   GR_LAUNCHSTAT_MEMCPY=0     no memcpy/memset records
 *   GR_LAUNCHSTAT_BUFFER_MB, GR_LAUNCHSTAT_MAX_BUFFERS   activity buffer size and count bound
 *   GR_LAUNCHSTAT_QUIET=1      no message on stderr when tracing cannot start
 *   GR_LAUNCHSTAT_CAPCHECK=1   capture checking instead of tracing (capcheck.h): the file gets
 *                              the API calls made while streams capture
 *
 * NVTX reaches CUPTI only through the tool NVTX_INJECTION64_PATH names, loaded at the program's
 * first NVTX call. cupti-launchstat names this library before the program starts, so NVTX
 * reaches CUPTI even when the program's first NVTX call comes before CUDA initialises (ranges
 * pushed before this file's InitializeInjection subscribes are still not seen: their pops show
 * as unmatched): InitializeInjectionNvtx2 below hands NVTX to libcupti, as
 * NVTX_INJECTION64_PATH=libcupti.so would. When it is unset here, it is pointed at libcupti,
 * which works if the program has made no NVTX call yet. Set but empty, no NVTX tool is
 * attached (NVTX finds no entry point in "") and the trace has no NVTX ranges: --no-nvtx. Naming
 * another tool (Nsight's), the ranges go there and the header does not claim them. */
#define _GNU_SOURCE /* dladdr: where libcupti is, for NVTX_INJECTION64_PATH */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cupti.h>
#include <dlfcn.h>

#include "cupti_tools/capcheck.h"
#include "cupti_tools/collector.h"
#include "cupti_tools/cupti_check.h"

static atomic_int state; /* 0 idle, 1 tracing, 2 finished */
static int capcheck_mode;  /* GR_LAUNCHSTAT_CAPCHECK=1: the capture checker instead of the trace */
static pid_t owner;
static int sig_pipe[2] = {-1, -1};

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    if (!v || !v[0]) return dflt;
    char *end;
    long x = strtol(v, &end, 10);
    return *end ? dflt : x;
}

static void finish(const char *reason) {
    if (getpid() != owner) return; /* a forked child: the trace belongs to its parent */
    int expect = 1;
    if (!atomic_compare_exchange_strong(&state, &expect, 2)) return;
    gr_error err;
    gr_error_clear(&err);
    gr_cupti_result res;
    if (capcheck_mode) {
        if (gr_capcheck_stop(0, NULL, &err) != GR_OK) fprintf(stderr, "cupti-launchstat: %s\n", err.msg);
        return;
    }
    if (gr_cupti_stop(reason, 0, &res, &err) != GR_OK) fprintf(stderr, "cupti-launchstat: %s\n", err.msg);
}

static void at_exit(void) {
    finish("exit");
}

static void on_signal(int sig) {
    int saved = errno;
    unsigned char c = (unsigned char)sig;
    ssize_t n = write(sig_pipe[1], &c, 1);
    (void)n;
    errno = saved;
}

static void *signal_thread(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (;;) {
        unsigned char c;
        ssize_t n = read(sig_pipe[0], &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n != 1) return NULL;
        int sig = c;
        char reason[64];
        snprintf(reason, sizeof(reason), "signal %d (%s)", sig, sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "?");
        finish(reason);
        /* die of the signal as the program would have */
        signal(sig, SIG_DFL);
        kill(getpid(), sig);
        return NULL;
    }
}

static void install_signal_handlers(void) {
    if (pipe(sig_pipe) != 0) return;
    fcntl(sig_pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(sig_pipe[1], F_SETFD, FD_CLOEXEC);
    int fl = fcntl(sig_pipe[1], F_GETFL);
    if (fl >= 0) fcntl(sig_pipe[1], F_SETFL, fl | O_NONBLOCK); /* the handler never blocks */
    pthread_t th;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &at, signal_thread, NULL);
    pthread_attr_destroy(&at);
    if (rc != 0) return;
    int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) != 0) continue;
        /* a program that handles (or ignores) the signal itself keeps doing so; when it then
         * exits, atexit flushes the trace */
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(sigs[i], &sa, NULL);
    }
}

/* The libcupti this library was linked with (its path, for NVTX_INJECTION64_PATH). */
static const char *cupti_path(void) {
    CUptiResult (*fn)(uint32_t *) = cuptiGetVersion;
    void *addr = NULL;
    memcpy(&addr, &fn, sizeof(addr));
    Dl_info di;
    return dladdr(addr, &di) && di.dli_fname ? di.dli_fname : NULL;
}

/* CUPTI is the NVTX injection that turns NVTX calls into callbacks */
static void nvtx_to_cupti(void) {
    const char *p = getenv("NVTX_INJECTION64_PATH");
    if (p && p[0]) return;
    if ((p = cupti_path()) != NULL) setenv("NVTX_INJECTION64_PATH", p, 0);
}

/* NVTX_INJECTION64_PATH naming this library: NVTX's entry points, handed to libcupti's. */
typedef int (*nvtx_init_fn)(void *);
static int to_cupti(const char *sym, void *arg) {
    const char *p = cupti_path();
    void *h = p ? dlopen(p, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    void *f = h ? dlsym(h, sym) : NULL;
    nvtx_init_fn fn = NULL;
    memcpy(&fn, &f, sizeof(fn));
    int rc = fn ? fn(arg) : 0; /* 0: NVTX then runs without a tool */
    if (h) dlclose(h);         /* NOLOAD took a reference; libcupti stays, we link it */
    return rc;
}

/* The older NVTX loaders' entry point (libcupti exports it too): so that naming this library in
 * NVTX_INJECTION64_PATH is the same as naming libcupti, whichever NVTX the program carries. */
__attribute__((visibility("default"))) int InitializeInjectionNvtx(void *get_export_table) {
    return to_cupti("InitializeInjectionNvtx", get_export_table);
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(void *get_export_table) {
    return to_cupti("InitializeInjectionNvtx2", get_export_table);
}

__attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(void *module_info) {
    return to_cupti("InitializeInjectionNvtxExtension", module_info);
}

/* Whether the program's NVTX calls reach CUPTI through the tool NVTX_INJECTION64_PATH names
 * (`tool`): unset (nvtx_to_cupti then names libcupti), this library (which hands them on), or a
 * libcupti. "" names no tool (--no-nvtx); another tool (Nsight's) gets them instead, and the
 * header must not claim ranges were recorded. */
int gr_inject_nvtx_reaches_cupti(const char *tool);
int InitializeInjection(void);
__attribute__((visibility("default"))) int gr_inject_nvtx_reaches_cupti(const char *tool) {
    if (!tool) return 1;
    if (!tool[0]) return 0;
    if (strstr(tool, "libcupti")) return 1;
    int (*self)(void) = InitializeInjection;
    void *addr = NULL;
    memcpy(&addr, &self, sizeof(addr));
    Dl_info di;
    struct stat a, b;
    return dladdr(addr, &di) && di.dli_fname && stat(tool, &a) == 0 && stat(di.dli_fname, &b) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Capture checking for the program's life: the recording streams to `path`. */
static int start_capcheck(const char *path) {
    capcheck_mode = 1;
    nvtx_to_cupti();
    gr_capcheck_opts o;
    memset(&o, 0, sizeof(o));
    o.nvtx = 1;
    o.all_host_allocs = 1; /* from cuInit on: every pinned allocation is seen */
    o.out_path = path;
    o.exclusive = 1;
    snprintf(o.hdr.tool, sizeof(o.hdr.tool), "cupti-launchstat");
    snprintf(o.hdr.source, sizeof(o.hdr.source), "injection");
    const char *cmd = getenv("GR_LAUNCHSTAT_CMD");
    snprintf(o.hdr.command, sizeof(o.hdr.command), "%s", cmd ? cmd : "");
    gr_error err;
    gr_error_clear(&err);
    if (gr_capcheck_start(&o, &err) != GR_OK) {
        atomic_store(&state, 2);
        if (!env_long("GR_LAUNCHSTAT_QUIET", 0))
            fprintf(stderr, "cupti-launchstat: this process runs unchecked: %s\n", err.msg);
        return 1;
    }
    atexit(at_exit);
    install_signal_handlers();
    return 1;
}

__attribute__((visibility("default"))) int InitializeInjection(void) {
    int expect = 0;
    if (!atomic_compare_exchange_strong(&state, &expect, 1)) return 1;
    owner = getpid();
    char path[2048];
    const char *out = getenv("GR_LAUNCHSTAT_OUT");
    if (out && out[0]) snprintf(path, sizeof(path), "%s", out);
    else snprintf(path, sizeof(path), "cupti-launchstat-%d.jsonl", (int)owner);
    if (access(path, F_OK) == 0) {
        /* another process of this run (a parent that also uses CUDA) owns the file */
        size_t n = strlen(path);
        snprintf(path + n, sizeof(path) - n, ".%d", (int)owner);
    }
    if (env_long("GR_LAUNCHSTAT_CAPCHECK", 0)) return start_capcheck(path);
    gr_cupti_config c;
    gr_cupti_config_default(&c);
    c.trace_path = path;
    c.exclusive = 1;
    c.mode = "injection";
    c.command = getenv("GR_LAUNCHSTAT_CMD");
    c.steps = env_long("GR_LAUNCHSTAT_STEPS", 0);
    c.latency = env_long("GR_LAUNCHSTAT_LATENCY", 0) != 0;
    c.driver_api = env_long("GR_LAUNCHSTAT_DRIVER", 1) != 0;
    c.memcpy = env_long("GR_LAUNCHSTAT_MEMCPY", 1) != 0;
    const char *nvtx_tool = getenv("NVTX_INJECTION64_PATH");
    c.nvtx = gr_inject_nvtx_reaches_cupti(nvtx_tool); /* "": --no-nvtx; another tool: not ours */
    if (c.nvtx) nvtx_to_cupti();
    long mb = env_long("GR_LAUNCHSTAT_BUFFER_MB", 8);
    c.buffer_bytes = (size_t)(mb > 0 && mb <= 1024 ? mb : 8) << 20;
    c.max_buffers = (int)env_long("GR_LAUNCHSTAT_MAX_BUFFERS", 32);
    gr_error err;
    gr_error_clear(&err);
    if (gr_cupti_start(&c, &err) != GR_OK) {
        atomic_store(&state, 2);
        if (!env_long("GR_LAUNCHSTAT_QUIET", 0))
            fprintf(stderr, "cupti-launchstat: this process runs untraced: %s\n", err.msg);
        return 1; /* the program runs on regardless */
    }
    atexit(at_exit);
    install_signal_handlers();
    return 1;
}
