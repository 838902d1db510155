/* The replay service: lifetime lock and socket, the I/O thread (poll loop over the listening
 * socket, the clients and a wake pipe), the GPU worker thread and its queue, the graphs it holds
 * and the log. Only the worker calls CUDA; the I/O thread reads the graphs' metadata under the
 * mutex, so status and list answer while a replay runs. */
#define SERVED_LOG_US 10e6 /* how often the worker logs its count of served steps */
#define _GNU_SOURCE /* struct ucred, accept4, pipe2 */
#include "replay/service.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "capture/iograph.h"
#include "core/cuda_check.h"
#include "core/expect.h"
#include "core/npy.h"
#include "core/device.h"
#include "core/timer.h"
#include "kernels/registry.h"
#include "replay/bucket.h"
#include "replay/client.h"
#include "replay/lane.h"
#include "replay/load.h"
#include "replay/protocol.h"
#include "replay/run.h"
#include "replay/session.h"

#define HARD_MAX_GRAPHS 1024
#define HARD_MAX_CLIENTS 1000
#define READ_CHUNK 65536
#define PROGRESS_DROP_BYTES (256 * 1024) /* a client this far behind gets no more progress lines */
#define PROGRESS_INTERVAL_US 100000.0
#define LOCK_WAIT_US 25e6  /* how long a starting service waits for another one's lock (the
                              * client waits 30 s for it) */
#define SHUTDOWN_FLUSH_US 0.5e6 /* replies unread at exit get this long (a stop must be quick) */
/* Per connection: unparsed input is read up to one request line plus a chunk, and no request is
 * parsed while this much output waits (backpressure; a final reply is never dropped, so the
 * queue may exceed it by one reply). PROTOCOL.md documents both. */
#define CONN_IN_MAX ((size_t)GR_PROTO_MAX_LINE + READ_CHUNK)
#define CONN_OUT_MAX ((size_t)1 << 20)
/* After `stop` or a signal, how long the running request has to notice its cancellation before
 * the service replies for it and exits without waiting (a stage that cannot be interrupted: a
 * CPU reference, a long kernel, a blocked read). */
#define STOP_GRACE_US 1.5e6
#define LOG_KEEP_BYTES (8L << 20)

void gr_service_opts_default(gr_service_opts *o) {
    memset(o, 0, sizeof(*o));
    o->notify_fd = -1;
    o->max_graphs = 32;
    o->client_timeout_ms = 30000;
    o->max_clients = 64;
    o->max_queue = 64;
}

/* ---------------------------------------------------------------- log */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void slog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void slog(const char *fmt, ...) {
    char line[8192];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tmv;
    localtime_r(&ts.tv_sec, &tmv);
    size_t n = strftime(line, sizeof(line), "%Y-%m-%d %H:%M:%S", &tmv);
    n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03ld graphrun[%d] ", ts.tv_nsec / 1000000,
                          (int)getpid());
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - n, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_mu);
    fputs(line, stderr);
    fputc('\n', stderr);
    fflush(stderr);
    pthread_mutex_unlock(&log_mu);
}

/* The first line of a message, for one-line log entries. */
static const char *first_line(const char *msg, char *buf, size_t size) {
    const char *nl = strchr(msg, '\n');
    size_t n = nl ? (size_t)(nl - msg) : strlen(msg);
    if (n >= size) n = size - 1;
    memcpy(buf, msg, n);
    buf[n] = '\0';
    return buf;
}

/* ---------------------------------------------------------------- state */

/* A captured graph held between requests. The fields above `ld` are metadata the I/O thread
 * reads under the mutex; the rest belongs to the worker. */
typedef struct held {
    char name[GR_PROTO_NAME_MAX + 1];
    char hash[17];
    char workload[128];
    char source[GR_PROTO_PATH_MAX];
    char variant[64];
    char params[1024];
    gr_capture_mode mode;
    size_t nodes, kernel_nodes, edges;
    double device_bytes;
    void **pinned; /* per plan buffer: pinned staging of served steps (serve_step), or NULL */
    double own_bytes, measured_bytes; /* device_bytes is the larger: the session's allocations, or
                                         the drop in free device memory over the capture */
    time_t created;
    double last_used_us;
    long replays;
    uint64_t seq;
    gr_loaded ld;
    gr_run_opts opts;      /* what the capture request asked for (pdl, unroll, checker...) */
    gr_session *s;
    gr_variant_run *vr;    /* capture results: checks, graph counts and times */
    char *report_text;     /* the capture's report */
    json_t *report_json;
    struct bucket_group *group; /* a bucket of `graphrun capture --buckets`, NULL otherwise */
    int64_t bucket;             /* its param's value */
    int nlanes;                 /* open lanes on this graph (under mu): it is not freed before 0 */
} held;

/* The buffers a capture's bucket graphs share (one allocation per buffer, at its largest size),
 * freed with the last of them. Worker-owned; `base` and `spec` are read under the mutex. */
typedef struct bucket_group {
    int refs;
    char base[GR_PROTO_NAME_MAX + 1];
    gr_bucket_spec spec;
    gr_bucket_layout layout;
    void **ptrs;  /* per layout entry */
    double bytes; /* allocated: layout.shared_bytes */
    gr_devlib *lib; /* the buckets' library handles and workspace, once (NULL: none needs them) */
} bucket_group;

static void group_release(bucket_group *g) {
    if (!g || --g->refs > 0) return;
    for (int i = 0; g->ptrs && i < g->layout.nb; i++)
        if (g->ptrs[i]) cudaFree(g->ptrs[i]);
    free(g->ptrs);
    gr_devlib_destroy(g->lib); /* the last bucket's session is gone: nothing borrows it now */
    gr_bucket_layout_free(&g->layout);
    free(g);
}

typedef struct job {
    uint64_t conn;
    gr_request req;
    atomic_int cancel; /* 1: the client went away, 2: the service is stopping */
    char what[160];    /* for status and the log */
    double queued_us, started_us;
    struct job *next;
} job;

typedef struct msg {
    uint64_t conn;
    char *line; /* NULL with final: the reply could not be made (out of memory) */
    int final;
    struct msg *next;
} msg;

typedef struct conn {
    uint64_t id;
    int fd;
    unsigned uid;
    int pid;
    gr_linebuf in;
    char *out;
    size_t out_len, out_cap;
    double last_us;     /* connect, last byte read, or last reply completed */
    double stalled_us;  /* when pending output last made progress */
    int busy;           /* a queued request of this connection is waiting or running */
    int read_closed;    /* the peer shut down its sending side */
    int closing;        /* close once the output is flushed */
    int progress_dropped;
} conn;

enum { DEV_PROBING = 0, DEV_READY, DEV_NONE };

typedef struct svc {
    gr_service_opts o;
    gr_service_paths paths;
    int listen_fd, lock_fd, wake[2];
    pthread_t worker;
    int worker_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* GPU work is one at a time: the worker holds gpu_mu through each job, a lane's thread through
     * each step */
    pthread_mutex_t gpu_mu;
    atomic_int gpu_wanted;  /* the worker waits for gpu_mu: lanes let it have it first */
    pthread_cond_t lane_cv; /* (with mu) a lane's thread ended */
    /* under mu */
    struct lane *lanes;
    int nlanes;
    uint64_t next_lane;
    struct lane *reap; /* ended lanes whose CUDA teardown waits for gpu_mu (the worker's) */
    uint64_t closed_id[16], closed_steps[16]; /* the last lanes ended: their served steps */
    int closed_next;
    job *qhead, *qtail;
    int qlen;
    job *running;
    msg *ohead, *otail;
    held *graphs[HARD_MAX_GRAPHS];
    int ngraphs;
    uint64_t seq;
    char latest[GR_PROTO_NAME_MAX + 1];
    int dev_state;
    gr_device_info dev;
    char dev_error[1024];
    double max_memory;
    int stopping, fatal, worker_done;
    int abandoned; /* the worker did not stop in time: the process exits without it */
    char fatal_msg[1024];
    /* worker only */
    int have_bw;
    gr_bandwidth bw;
    /* I/O thread only */
    conn *conns[HARD_MAX_CLIENTS];
    int nconns;
    uint64_t next_conn;
    long requests;
    /* served steps (replay with inputs/outputs) are not logged one by one: a line per request is
     * three log writes on the serving path; the worker logs a count every SERVED_LOG_US instead */
    long served_since_log;
    double served_log_us;
    double started_us;
    time_t started;
    double shutdown_us;
    char stop_reason[256];
} svc;

static void held_retire(svc *v, held *h, const char *why); /* its lanes end, then it is freed */

static volatile sig_atomic_t got_signal;
static int signal_wake_fd = -1;

static void on_signal(int sig) {
    got_signal = sig;
    if (signal_wake_fd >= 0) {
        int saved = errno;
        ssize_t rc = write(signal_wake_fd, "s", 1);
        (void)rc;
        errno = saved;
    }
}

static void wake(svc *v) {
    ssize_t rc = write(v->wake[1], "w", 1);
    (void)rc; /* a full pipe already wakes the I/O thread */
}

/* Queue a line for a connection (any thread). Takes `line`. */
static void post(svc *v, uint64_t conn_id, char *line, int final) {
    msg *m = calloc(1, sizeof(*m));
    if (!m) {
        free(line);
        if (!final) return;
        /* the connection must not stay busy forever: retry once after a short pause */
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        m = calloc(1, sizeof(*m));
        if (!m) return;
        line = NULL;
    }
    m->conn = conn_id;
    m->line = line;
    m->final = final;
    pthread_mutex_lock(&v->mu);
    if (v->otail) v->otail->next = m;
    else v->ohead = m;
    v->otail = m;
    pthread_mutex_unlock(&v->mu);
    wake(v);
}

/* Device bytes of everything held: each graph's own, and each bucket group's shared buffers
 * once. */
static double held_bytes_locked(const svc *v) {
    double b = 0;
    for (int i = 0; i < v->ngraphs; i++) {
        const held *h = v->graphs[i];
        b += h->device_bytes;
        int first = h->group != NULL;
        for (int k = 0; k < i && first; k++) first = v->graphs[k]->group != h->group;
        if (first) b += h->group->bytes;
    }
    return b;
}

static held *find_name_locked(const svc *v, const char *name) {
    for (int i = 0; i < v->ngraphs; i++)
        if (!strcmp(v->graphs[i]->name, name)) return v->graphs[i];
    return NULL;
}

static held *find_hash_locked(const svc *v, const char *hash) {
    for (int i = 0; i < v->ngraphs; i++)
        if (!strcmp(v->graphs[i]->hash, hash)) return v->graphs[i];
    return NULL;
}

static void names_locked(const svc *v, char *buf, size_t size) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < v->ngraphs && o + 1 < size; i++) {
        int n = snprintf(buf + o, size - o, "%s%s", i ? ", " : "", v->graphs[i]->name);
        if (n < 0) break;
        o += (size_t)n;
    }
}

static void iso_time(time_t t, char *buf, size_t size) {
    struct tm tmv;
    gmtime_r(&t, &tmv);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tmv);
}

/* Metadata of one graph (caller holds mu or is the worker). */
static json_t *held_json_ext(const svc *v, const held *h, int with_buffers) {
    char created[32];
    iso_time(h->created, created, sizeof(created));
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:f, s:s, s:I, s:b}",
                          "name", h->name, "hash", h->hash, "workload", h->workload, "source",
                          h->source, "variant", h->variant, "params", h->params, "capture_mode",
                          gr_capture_mode_name(h->mode), "nodes", (json_int_t)h->nodes,
                          "kernel_nodes", (json_int_t)h->kernel_nodes, "edges",
                          (json_int_t)h->edges, "device_bytes", h->device_bytes, "created",
                          created, "replays", (json_int_t)h->replays, "latest",
                          !strcmp(v->latest, h->name));
    if (j) {
        json_object_set_new(j, "own_bytes", json_real(h->own_bytes));
        json_object_set_new(j, "measured_bytes", json_real(h->measured_bytes));
        json_object_set_new(j, "pdl", json_boolean(h->opts.pdl));
        json_object_set_new(j, "pdl_source", json_string(gr_run_opts_pdl_source(&h->opts)));
        json_object_set_new(j, "unroll", json_integer(h->opts.unroll));
        json_object_set_new(j, "capture_checked", json_boolean(h->vr && h->vr->cc.checked));
        json_object_set_new(j, "lanes", json_integer(h->nlanes));
        if (h->ld.input) json_object_set_new(j, "input", json_string(h->ld.input->path));
        /* what a served step can take and give: every buffer the variant uses */
        json_t *bufs = with_buffers ? json_array() : NULL;
        const gr_plan *p = with_buffers ? h->ld.plans[0] : NULL;
        for (int b = 0; p && b < p->nbufs; b++) {
            const gr_buffer *buf = &p->bufs[b];
            if (!buf->used) continue;
            json_t *shape = json_array();
            for (int d = 0; d < buf->ndim; d++) json_array_append_new(shape, json_integer(buf->shape[d]));
            json_array_append_new(bufs, json_pack("{s:s, s:s, s:o, s:I, s:b}", "name", buf->name,
                                                  "dtype", gr_dtype_name(buf->dtype), "shape", shape,
                                                  "bytes", (json_int_t)buf->bytes, "output",
                                                  buf->is_output));
        }
        if (bufs) json_object_set_new(j, "buffers", bufs);
        if (h->group) {
            json_t *vals = json_array();
            for (int i = 0; i < h->group->spec.n; i++)
                json_array_append_new(vals, json_integer(h->group->spec.values[i]));
            json_object_set_new(
                j, "bucket",
                json_pack("{s:s, s:s, s:I, s:o, s:f, s:f}", "group", h->group->base, "param",
                          h->group->spec.param, "value", (json_int_t)h->bucket, "values", vals,
                          "shared_bytes", h->group->layout.shared_bytes, "separate_bytes",
                          h->group->layout.separate_bytes));
        }
    }
    return j;
}

static json_t *held_json(const svc *v, const held *h) {
    return held_json_ext(v, h, 1);
}

static void held_free(held *h) {
    if (!h) return;
    gr_session_destroy(h->s); /* before the group: its graphs use the shared buffers */
    if (h->pinned) {
        for (int b = 0; h->ld.plans[0] && b < h->ld.plans[0]->nbufs; b++)
            if (h->pinned[b]) cudaFreeHost(h->pinned[b]);
        free(h->pinned);
    }
    group_release(h->group);
    gr_loaded_free(&h->ld);
    gr_variant_run_clear(h->vr);
    free(h->vr);
    free(h->report_text);
    json_decref(h->report_json);
    free(h);
}

/* Remove from the registry (worker, under mu). */
static void unregister_locked(svc *v, held *h) {
    for (int i = 0; i < v->ngraphs; i++)
        if (v->graphs[i] == h) {
            memmove(&v->graphs[i], &v->graphs[i + 1], (size_t)(v->ngraphs - i - 1) * sizeof(held *));
            v->ngraphs--;
            break;
        }
    if (!strcmp(v->latest, h->name)) {
        v->latest[0] = '\0';
        uint64_t best = 0;
        for (int i = 0; i < v->ngraphs; i++)
            if (v->graphs[i]->seq >= best) {
                best = v->graphs[i]->seq;
                snprintf(v->latest, sizeof(v->latest), "%s", v->graphs[i]->name);
            }
    }
}

/* ---------------------------------------------------------------- worker */

static int cancelled(const job *j) {
    return atomic_load(&((job *)j)->cancel) != 0;
}

static gr_status cancel_error(const job *j, gr_error *err) {
    int why = atomic_load(&((job *)j)->cancel);
    return gr_error_set(err, GR_ERR_SERVICE, NULL, "cancelled: %s",
                        why == 2 ? "the service is stopping" : "the client disconnected");
}

static void progress(svc *v, job *j, const char *phase, long long done, long long total) {
    if (!j->req.progress) return;
    char *line = gr_reply_progress(j->req.id, phase, done, total);
    if (line) post(v, j->conn, line, 0);
}

typedef struct batch_ctx {
    svc *v;
    job *j;
    const char *phase;
    double last_us;
} batch_ctx;

static gr_status in_batch(void *user, gr_error *err) {
    batch_ctx *b = user;
    return cancelled(b->j) ? cancel_error(b->j, err) : GR_OK;
}

static gr_status on_batch(void *user, int done, int total, gr_error *err) {
    batch_ctx *b = user;
    if (cancelled(b->j)) return cancel_error(b->j, err);
    double now = gr_now_us();
    if (done >= total || now - b->last_us >= PROGRESS_INTERVAL_US) {
        b->last_us = now;
        progress(b->v, b->j, b->phase, done, total);
    }
    return GR_OK;
}

static char *report_text(const gr_run_report *r) {
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    if (!f) return NULL;
    gr_report_text(f, r);
    fclose(f);
    return buf;
}

static gr_run_report *report_for(svc *v, const held *h, const gr_variant_run *vr, int with_bw) {
    pthread_mutex_lock(&v->mu);
    gr_device_info dev = v->dev;
    pthread_mutex_unlock(&v->mu);
    gr_run_report *r = gr_run_report_create(h->ld.wl, &dev, &h->opts);
    if (!r) return NULL;
    if (with_bw && v->have_bw) {
        r->bw = v->bw;
        r->have_bw = 1;
    }
    r->v = (gr_variant_run *)vr; /* borrowed (cap 0): the report does not free it */
    r->nv = 1;
    return r;
}

/* report_text and report (the `graphrun run --json` schema plus a "service" object) */
static void add_report(json_t *body, svc *v, const held *h, const gr_variant_run *vr, int with_bw,
                       int reused) {
    gr_run_report *r = report_for(v, h, vr, with_bw);
    if (!r) return;
    char *text = report_text(r);
    if (text) json_object_set_new(body, "report_text", json_string(text));
    free(text);
    json_t *j = gr_report_json(r);
    if (j) {
        json_object_set_new(j, "service", json_pack("{s:s, s:s, s:b, s:i}", "name", h->name, "hash",
                                                    h->hash, "reused", reused, "pid", (int)getpid()));
        json_object_set_new(body, "report", j);
    }
    gr_run_report_destroy(r);
}

static void default_name(svc *v, const held *h, char *out, size_t size) {
    char base[GR_PROTO_NAME_MAX + 1];
    if (h->ld.wl->nvariants > 1) snprintf(base, sizeof(base), "%.40s.%.15s", h->workload, h->variant);
    else snprintf(base, sizeof(base), "%.56s", h->workload);
    for (char *c = base; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-' || *c == '.'))
            *c = '_';
    if (!gr_proto_valid_name(base)) snprintf(base, sizeof(base), "graph");
    snprintf(out, size, "%s", base);
    for (int k = 2; find_name_locked(v, out) && k < 100000; k++)
        snprintf(out, size, "%.56s-%d", base, k);
}

static void fmt_bytes(double b, char *buf, size_t size) {
    if (b >= 1e9) snprintf(buf, size, "%.2f GB", b / 1e9);
    else if (b >= 1e6) snprintf(buf, size, "%.1f MB", b / 1e6);
    else if (b >= 1e3) snprintf(buf, size, "%.1f KB", b / 1e3);
    else snprintf(buf, size, "%.0f B", b);
}

/* A failed load names its inner place in err->path (the file, "params.n", "--set m=3",
 * "--variant"); the reply's field is the request's: workload, sets or variant. The inner place
 * stays in the message. */
static void load_error_field(const gr_request *r, gr_error *err) {
    const char *p = err->path;
    const char *field = "workload";
    if (!strncmp(p, "--variant", 9)) {
        field = "variant";
    } else if (!strncmp(p, "--set", 5)) {
        field = "sets";
    } else if (!strncmp(p, "params.", 7)) {
        /* a param's value is the request's fault only when the request set it */
        size_t n = strcspn(p + 7, ".[ ");
        for (int i = 0; i < r->nsets; i++)
            if (!strncmp(r->sets[i], p + 7, n) && r->sets[i][n] == '=') field = "sets";
    }
    snprintf(err->path, sizeof(err->path), "%s", field);
    /* the loader words places as the CLI's options; a protocol client sent fields */
    static const char *const words[][2] = {{"--set ", "sets "}, {"--variant:", "variant:"}};
    for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
        char *at;
        size_t from = strlen(words[w][0]), to = strlen(words[w][1]);
        while ((at = strstr(err->msg, words[w][0])) != NULL) {
            memmove(at + to, at + from, strlen(at + from) + 1);
            memcpy(at, words[w][1], to);
        }
    }
}

/* The field of an error reply: a request field (or a documented limit), never a file path or a
 * JSON path from inside a workload; "" when no one field is at fault. An element of an array
 * field keeps its index ("inputs[1]"). Every field of replay/PROTOCOL.md's table is here. */
static const char *reply_field(const gr_error *err) {
    static const char *const fields[] = {
        "schema_version", "cmd",           "id",          "request",       "workload",
        "name",           "variant",       "sets",        "capture_mode",  "force",
        "cpu_reference",  "capture_check", "pdl",         "unroll",        "input",
        "skip_bad_lines", "buckets",       "update",      "progress",      "iters",
        "warmup",         "batches",       "compare_eager", "output_digest", "batch",
        "inputs",         "outputs",       "max_graphs",  "max_memory",    "host_memory",
        "shm",            "spin_us",       "lane",        NULL};
    for (const char *const *f = fields; *f; f++) {
        size_t n = strlen(*f);
        if (!strncmp(err->path, *f, n) && (err->path[n] == '\0' || err->path[n] == '['))
            return err->path;
    }
    return "";
}

/* Host memory the system can still give (MemAvailable), or -1 when unknown. */
static double host_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof(line), f))
            if (!strncmp(line, "MemAvailable:", 13)) {
                fclose(f);
                return strtod(line + 13, NULL) * 1024.0;
            }
        fclose(f);
    }
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (double)pages * (double)size : -1;
}

/* A capture's host copies (the CPU reference holds every buffer, the eager and graph checks two
 * copies of the outputs) must fit in the host memory free now: an over-large capture would have
 * the service killed by the OOM killer half way, taking every held graph with it. */
static gr_status check_host_memory(const held *h, const gr_plan *p, int cpu_reference,
                                   gr_error *err) {
    double outputs = 0;
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].is_output && p->bufs[b].used) outputs += (double)p->bufs[b].bytes;
    double need = (cpu_reference ? p->used_bytes : 0) + 2 * outputs;
    double avail = host_available();
    if (avail < 0 || need <= 0.9 * avail) return GR_OK;
    char n[32], a[32];
    fmt_bytes(need, n, sizeof(n));
    fmt_bytes(avail, a, sizeof(a));
    return gr_error_set(err, GR_ERR_SERVICE, "host_memory",
                        "capturing %s %s needs about %s of host memory (%s) and the host has %s "
                        "available: make the workload smaller with --set%s",
                        h->workload, h->variant, n,
                        cpu_reference ? "the CPU reference's copy of every buffer and two copies "
                                        "of the outputs for the checks"
                                      : "two copies of the outputs for the checks",
                        a, cpu_reference ? ", or skip the CPU reference (--no-cpu-ref)" : "");
}

/* The run options a capture request gives (the CLI's `graphrun run` flags, as request fields).
 * A held graph must be the whole step: a capture that breaks or lets work escape fails (no
 * piecewise run in the service). */
/* The request's PDL for the GPU the plans target: absent is on where the GPU has it, true on a
 * GPU without it is refused (before the hash, so that both spellings of one graph are one). */
static gr_status request_pdl(gr_request *r, const gr_target *t, gr_error *err) {
    gr_run_opts o;
    gr_run_opts_default(&o);
    o.pdl = r->pdl;
    if (gr_run_opts_resolve_pdl(&o, t->cc_major, t->cc_minor, err) != GR_OK) {
        snprintf(err->path, sizeof(err->path), "pdl"); /* the request's field */
        return err->code;
    }
    r->pdl = o.pdl;
    r->pdl_default = o.pdl_default;
    return GR_OK;
}

static void capture_opts(const gr_request *r, gr_run_opts *o) {
    gr_run_opts_default(o);
    o->mode = r->mode;
    o->cpu_reference = r->cpu_reference;
    o->bandwidth = 0;
    o->launch_floor = 0; /* gr_run_plans' (the service runs its own stage lists) */
    o->progress = 0;
    o->hooks = NULL;
    o->pdl = r->pdl;
    o->pdl_default = r->pdl_default;
    o->unroll = r->unroll;
    o->no_capture_check = !r->capture_check;
    o->piecewise = GR_PW_OFF;
}

typedef struct stage_ctx {
    svc *v;
    job *j;
} stage_ctx;

/* Before each capture stage: cancelled? else a progress line naming the stage. */
static gr_status before_stage(void *user, gr_pipe *p, const gr_stage *s, int *skip, gr_error *err) {
    (void)p, (void)skip;
    stage_ctx *c = user;
    if (cancelled(c->j)) return cancel_error(c->j, err);
    progress(c->v, c->j, s->name, 0, 0);
    return GR_OK;
}

/* The device as the worker sees it when a job starts (the I/O thread may change it under mu). */
typedef struct dev_view {
    int ready;
    gr_device_info dev;
    double max_memory;
    char error[1024];
} dev_view;

static void dev_view_get(svc *v, dev_view *d) {
    pthread_mutex_lock(&v->mu);
    d->ready = v->dev_state == DEV_READY;
    d->dev = v->dev;
    d->max_memory = v->max_memory;
    snprintf(d->error, sizeof(d->error), "%s", v->dev_error);
    pthread_mutex_unlock(&v->mu);
}

/* A verified capture becomes a held graph: the host copies that served verification are given
 * back, its device bytes (the session's allocations, or what the device lost meanwhile, the
 * larger), graph counts and times are noted, and its report kept; the report ({report_text,
 * report}) is returned for the reply. */
static json_t *held_finish(svc *v, held *h, size_t free0, size_t free1) {
    const gr_plan *p = h->ld.plans[0];
    gr_hoststate_destroy(h->s->ref);
    h->s->ref = NULL;
    for (int b = 0; b < p->nbufs; b++) {
        free(h->s->eager_out[b]);
        h->s->eager_out[b] = NULL;
    }
    double measured = free0 > free1 ? (double)(free0 - free1) : 0;
    double own = (double)h->s->dev->allocated_bytes;
    h->device_bytes = own > measured ? own : measured;
    h->own_bytes = own;
    h->measured_bytes = measured;
    h->nodes = h->vr->graph.nodes;
    h->kernel_nodes = h->vr->graph.kernel_nodes;
    h->edges = h->vr->graph.edges;
    h->created = time(NULL);
    h->last_used_us = gr_now_us();
    json_t *rep = json_object();
    if (rep) {
        add_report(rep, v, h, h->vr, 0, 0);
        json_t *text = json_object_get(rep, "report_text");
        if (json_is_string(text)) h->report_text = strdup(json_string_value(text));
        h->report_json = json_incref(json_object_get(rep, "report"));
    }
    return rep;
}

/* `capture --buckets PARAM=V1,V2,...`: one plan per value, one shared allocation per buffer at
 * its largest size, each bucket captured through the capture stages over those buffers and held
 * as BASE.PARAMV (e.g. decode_step.B8); the group's buffers go with the last of them. */
static gr_status job_capture_buckets(svc *v, job *j, json_t **body, gr_error *err) {
    gr_request *r = &j->req;
    const gr_bucket_spec *spec = &r->buckets;
    dev_view dv;
    dev_view_get(v, &dv);
    int ready = dv.ready;
    gr_device_info dev = dv.dev;
    double max_memory = dv.max_memory;
    const char *dev_error = dv.error;
    int n = spec->n;
    held **hs = calloc((size_t)n, sizeof(*hs));
    bucket_group *g = calloc(1, sizeof(*g));
    if (!hs || !g) {
        free(hs), free(g);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    g->refs = 0;
    g->spec = *spec;
    gr_status st = GR_OK;
    gr_target t = ready ? gr_target_from_info(&dev) : gr_target_default();
    if (request_pdl(r, &t, err) != GR_OK) {
        free(hs), free(g);
        return err->code;
    }
    progress(v, j, "load", 0, n);
    /* every bucket's plan, then the shared layout: bad input is found before any device work */
    for (int i = 0; i < n && st == GR_OK; i++) {
        hs[i] = calloc(1, sizeof(held));
        if (hs[i]) hs[i]->vr = calloc(1, sizeof(gr_variant_run));
        if (!hs[i] || !hs[i]->vr) {
            st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
            break;
        }
        const char *sets[GR_PROTO_MAX_SETS + 1];
        int ns = 0;
        for (int k = 0; k < r->nsets; k++)
            if (strncmp(r->sets[k], spec->param, strlen(spec->param)) ||
                r->sets[k][strlen(spec->param)] != '=')
                sets[ns++] = r->sets[k];
        char bset[96];
        snprintf(bset, sizeof(bset), "%s=%lld", spec->param, (long long)spec->values[i]);
        sets[ns++] = bset;
        gr_load_req lr = {r->workload, r->variant[0] ? r->variant : NULL, sets, ns, NULL, 1,
                          r->input[0] ? r->input : NULL, r->skip_bad_lines};
        st = gr_load_resolve(&lr, &t, &hs[i]->ld, err);
        if (st != GR_OK) {
            load_error_field(r, err);
            if (hs[i]->ld.wl && !gr_workload_param(hs[i]->ld.wl, spec->param))
                snprintf(err->path, sizeof(err->path), "buckets");
            gr_error_prefix(err, "bucket %s: ", bset);
        }
    }
    if (st == GR_OK && !gr_workload_param(hs[0]->ld.wl, spec->param))
        st = gr_error_set(err, GR_ERR_INPUT, "buckets", "workload %s has no param \"%s\"",
                          hs[0]->ld.wl->name, spec->param);
    const gr_plan **plans = calloc((size_t)n, sizeof(*plans));
    if (!plans && st == GR_OK) st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    for (int i = 0; i < n && st == GR_OK; i++) plans[i] = hs[i]->ld.plans[0];
    if (st == GR_OK) st = gr_bucket_layout_make(plans, n, spec, &g->layout, err);
    free(plans);
    /* names, limits */
    char base[GR_PROTO_NAME_MAX + 1] = "";
    if (st == GR_OK) {
        held *h0 = hs[0];
        snprintf(h0->workload, sizeof(h0->workload), "%s", h0->ld.wl->name);
        snprintf(h0->variant, sizeof(h0->variant), "%s", h0->ld.plans[0]->variant);
        pthread_mutex_lock(&v->mu);
        if (r->name[0]) snprintf(base, sizeof(base), "%.40s", r->name);
        else default_name(v, h0, base, sizeof(base));
        base[40] = '\0';
        snprintf(g->base, sizeof(g->base), "%s", base);
        for (int i = 0; i < n && st == GR_OK; i++) {
            held *h = hs[i];
            const gr_plan *p = h->ld.plans[0];
            snprintf(h->name, sizeof(h->name), "%s.%.8s%lld", base, spec->param,
                     (long long)spec->values[i]);
            snprintf(h->workload, sizeof(h->workload), "%s", h->ld.wl->name);
            snprintf(h->source, sizeof(h->source), "%s", r->workload);
            snprintf(h->variant, sizeof(h->variant), "%s", p->variant);
            snprintf(h->params, sizeof(h->params), "%s", p->params);
            h->mode = r->mode;
            h->bucket = spec->values[i];
            uint64_t hv = gr_fnv1a(GR_FNV_OFFSET, &h->ld.source_hash, sizeof(h->ld.source_hash));
            hv = gr_fnv1a(hv, p->params, strlen(p->params) + 1);
            hv = gr_fnv1a(hv, h->name, strlen(h->name) + 1);
            snprintf(h->hash, sizeof(h->hash), "%016llx", (unsigned long long)hv);
            if (!gr_proto_valid_name(h->name))
                st = gr_error_set(err, GR_ERR_USAGE, "name", "bucket graph name \"%s\" is not valid",
                                  h->name);
            else if (find_name_locked(v, h->name))
                st = gr_error_set(err, GR_ERR_USAGE, "name",
                                  "a graph named \"%s\" is already held: drop it with `graphrun "
                                  "drop %s` (or pick another --name)",
                                  h->name, h->name);
        }
        if (st == GR_OK && v->ngraphs + n > v->o.max_graphs)
            st = gr_error_set(err, GR_ERR_SERVICE, "max_graphs",
                              "graph limit: %d buckets and the %d graphs held exceed the limit of %d: "
                              "drop graphs, use fewer buckets, or restart the service with a larger "
                              "--max-graphs",
                              n, v->ngraphs, v->o.max_graphs);
        double held_b = held_bytes_locked(v);
        if (st == GR_OK && max_memory > 0 && held_b + g->layout.shared_bytes > max_memory) {
            char need[32], have[32], lim[32];
            fmt_bytes(g->layout.shared_bytes, need, sizeof(need));
            fmt_bytes(held_b, have, sizeof(have));
            fmt_bytes(max_memory, lim, sizeof(lim));
            st = gr_error_set(err, GR_ERR_SERVICE, "max_memory",
                              "device memory limit: the buckets' shared buffers need %s, the graphs "
                              "held use %s and the limit is %s",
                              need, have, lim);
        }
        pthread_mutex_unlock(&v->mu);
    }
    for (int i = 0; i < n && st == GR_OK; i++)
        st = check_host_memory(hs[i], hs[i]->ld.plans[0], r->cpu_reference, err);
    if (st == GR_OK && !ready)
        st = gr_error_set(err, GR_ERR_NODEV, NULL,
                          "%s: the workload and its %d buckets are valid (shared buffers %.1f MB "
                          "instead of %.1f MB) but nothing was captured",
                          dev_error, n, g->layout.shared_bytes / 1e6,
                          g->layout.separate_bytes / 1e6);
    /* the shared buffers, then each bucket through the capture stages over them */
    if (st == GR_OK) {
        g->ptrs = calloc((size_t)g->layout.nb + 1, sizeof(void *));
        if (!g->ptrs) st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
        for (int k = 0; k < g->layout.nb && st == GR_OK; k++) {
            cudaError_t rc = cudaMalloc(&g->ptrs[k], g->layout.b[k].bytes ? g->layout.b[k].bytes : 1);
            if (rc != cudaSuccess) {
                g->ptrs[k] = NULL;
                cudaGetLastError();
                st = gr_error_set(err, GR_ERR_SERVICE, "buckets",
                                  "cannot allocate the shared buffer \"%s\" (%.1f MB): %s",
                                  g->layout.b[k].name, (double)g->layout.b[k].bytes / 1e6,
                                  cudaGetErrorName(rc));
            }
        }
        g->bytes = g->layout.shared_bytes;
    }
    /* one set of cuBLAS/cuBLASLt handles and workspaces, and one scratch arena, for every bucket
     * (they are replayed one at a time by the one worker), sized for the bucket with the most
     * streams and the largest op scratch */
    if (st == GR_OK) {
        int need = 0, nstreams = 1;
        size_t scratch = 0;
        for (int i = 0; i < n; i++) {
            const gr_plan *p = hs[i]->ld.plans[0];
            if (gr_plan_needs_library(p)) need = 1;
            if (p->nstreams > nstreams) nstreams = p->nstreams;
            if (gr_plan_scratch(p) > scratch) scratch = gr_plan_scratch(p);
        }
        if (need || scratch > 0) {
            size_t f0 = 0, f1 = 0, tot = 0;
            cudaMemGetInfo(&f0, &tot);
            st = gr_devlib_create(nstreams, need, scratch, &g->lib, err);
            cudaMemGetInfo(&f1, &tot);
            if (st == GR_OK && f0 > f1) g->bytes += (double)(f0 - f1);
        }
    }
    json_t *reports = json_array();
    for (int i = 0; i < n && st == GR_OK; i++) {
        held *h = hs[i];
        const gr_plan *p = h->ld.plans[0];
        void **ext = calloc((size_t)p->nbufs + 1, sizeof(void *));
        if (!ext) {
            st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
            break;
        }
        for (int b = 0; b < p->nbufs; b++) {
            if (!p->bufs[b].used) continue;
            for (int k = 0; k < g->layout.nb; k++)
                if (!strcmp(g->layout.b[k].name, p->bufs[b].name)) ext[b] = g->ptrs[k];
        }
        size_t free0 = 0, free1 = 0, total = 0;
        cudaMemGetInfo(&free0, &total);
        capture_opts(r, &h->opts);
        gr_pipe pipe;
        gr_pipe_init(&pipe, p, dev.sm_count, &h->opts, h->vr);
        pipe.external = ext;
        pipe.lib = g->lib;
        stage_ctx sc = {v, j};
        gr_pipe_hooks hooks = {before_stage, NULL, NULL, NULL, &sc};
        pipe.hooks = &hooks;
        pipe.wl = h->ld.wl;
        pipe.peers = (const gr_plan *const *)h->ld.plans;
        pipe.npeers = h->ld.nplans;
        st = gr_pipe_run(&pipe, gr_pipe_capture_stages, gr_pipe_capture_nstages, err);
        h->s = gr_pipe_detach(&pipe);
        gr_pipe_free(&pipe);
        free(ext);
        h->group = g; /* from here held_free releases it */
        g->refs++;
        cudaMemGetInfo(&free1, &total);
        if (st != GR_OK) {
            gr_error_prefix(err, "bucket %s=%lld: ", spec->param, (long long)h->bucket);
            if (h->vr->checks.n > 0 || h->vr->captured) {
                json_t *rep = json_object();
                add_report(rep, v, h, h->vr, 0, 0);
                json_array_append_new(reports, rep);
            }
            break;
        }
        json_t *rep = held_finish(v, h, free0, free1); /* its own bytes, besides the shared */
        if (rep) json_array_append_new(reports, rep);
    }
    if (st != GR_OK) {
        if (json_array_size(reports) > 0) {
            *body = json_object();
            if (*body) json_object_set_new(*body, "reports", reports);
            else json_decref(reports);
        } else {
            json_decref(reports);
        }
        int took = g->refs; /* the buckets that hold it free it with the last of them */
        for (int i = 0; i < n; i++) held_free(hs[i]);
        if (!took) {
            g->refs = 1;
            group_release(g);
        }
        free(hs);
        return st;
    }
    pthread_mutex_lock(&v->mu);
    json_t *list = json_array();
    for (int i = 0; i < n; i++) {
        hs[i]->seq = ++v->seq;
        v->graphs[v->ngraphs++] = hs[i];
    }
    snprintf(v->latest, sizeof(v->latest), "%s", hs[n - 1]->name);
    for (int i = 0; i < n; i++) json_array_append_new(list, held_json(v, hs[i]));
    pthread_mutex_unlock(&v->mu);
    *body = json_pack("{s:s, s:o, s:f, s:f, s:b, s:o}", "name", base, "buckets", list,
                      "shared_bytes", g->layout.shared_bytes, "separate_bytes",
                      g->layout.separate_bytes, "reused", 0, "reports", reports);
    slog("captured %d buckets of %s (%s = %lld..%lld) as %s.*: %.1f MB shared instead of %.1f MB",
         n, hs[0]->workload, spec->param, (long long)spec->values[0],
         (long long)spec->values[n - 1], base, g->layout.shared_bytes / 1e6,
         g->layout.separate_bytes / 1e6);
    free(hs);
    return GR_OK;
}

static gr_status job_capture(svc *v, job *j, json_t **body, gr_error *err) {
    gr_request *r = &j->req;
    if (r->buckets.n > 0) return job_capture_buckets(v, j, body, err);
    dev_view dv;
    dev_view_get(v, &dv);
    int ready = dv.ready;
    gr_device_info dev = dv.dev;
    double max_memory = dv.max_memory;
    const char *dev_error = dv.error;

    held *h = calloc(1, sizeof(*h));
    if (h) h->vr = calloc(1, sizeof(*h->vr));
    if (!h || !h->vr) {
        held_free(h);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    progress(v, j, "load", 0, 0);
    const char *sets[GR_PROTO_MAX_SETS];
    for (int i = 0; i < r->nsets; i++) sets[i] = r->sets[i];
    gr_load_req lr = {r->workload, r->variant[0] ? r->variant : NULL,
                      sets,        r->nsets,
                      NULL,        1,
                      r->input[0] ? r->input : NULL, r->skip_bad_lines};
    gr_target t = ready ? gr_target_from_info(&dev) : gr_target_default();
    gr_status st = request_pdl(r, &t, err);
    if (st != GR_OK) {
        held_free(h);
        return st;
    }
    st = gr_load_resolve(&lr, &t, &h->ld, err);
    if (st != GR_OK) {
        load_error_field(r, err);
        held_free(h);
        return st;
    }
    if (cancelled(j)) {
        held_free(h);
        return cancel_error(j, err);
    }
    gr_plan *p = h->ld.plans[0];
    uint64_t hv = GR_FNV_OFFSET;
    hv = gr_fnv1a(hv, &h->ld.source_hash, sizeof(h->ld.source_hash));
    hv = gr_fnv1a(hv, p->params, strlen(p->params) + 1);
    hv = gr_fnv1a(hv, p->variant, strlen(p->variant) + 1);
    const char *mode = gr_capture_mode_name(r->mode);
    hv = gr_fnv1a(hv, mode, strlen(mode) + 1);
    /* what else makes a different graph: PDL launches, steps per graph, the input rows */
    int shape[2] = {r->pdl, r->unroll};
    hv = gr_fnv1a(hv, shape, sizeof(shape));
    if (h->ld.input) hv = gr_fnv1a(hv, r->input, strlen(r->input) + 1);
    snprintf(h->hash, sizeof(h->hash), "%016llx", (unsigned long long)hv);
    snprintf(h->workload, sizeof(h->workload), "%s", h->ld.wl->name);
    snprintf(h->source, sizeof(h->source), "%s", r->workload);
    snprintf(h->variant, sizeof(h->variant), "%s", p->variant);
    snprintf(h->params, sizeof(h->params), "%s", p->params);
    h->mode = r->mode;

    held *victims[2] = {NULL, NULL};
    held *update_from = NULL; /* --update: the held graph whose exec takes the new graph */
    pthread_mutex_lock(&v->mu);
    held *same = find_hash_locked(v, h->hash);
    if (same && !r->force) {
        same->last_used_us = gr_now_us();
        snprintf(v->latest, sizeof(v->latest), "%s", same->name);
        *body = held_json(v, same);
        pthread_mutex_unlock(&v->mu);
        if (*body) {
            json_object_set_new(*body, "reused", json_true());
            if (same->report_text) json_object_set_new(*body, "report_text", json_string(same->report_text));
            json_t *rep = same->report_json ? json_deep_copy(same->report_json) : NULL;
            if (rep) {
                json_object_set_new(json_object_get(rep, "service"), "reused", json_true());
                json_object_set_new(*body, "report", rep);
            }
        }
        slog("capture %s: same content hash as \"%s\": not captured again", r->workload, same->name);
        held_free(h);
        return GR_OK;
    }
    if (r->force) victims[0] = same;
    if (r->name[0]) {
        held *byname = find_name_locked(v, r->name);
        if (r->update && (!byname || byname->group)) {
            st = gr_error_set(err, GR_ERR_USAGE, "update",
                              byname ? "\"%s\" is a bucket of a --buckets capture: buckets are not "
                                       "updated one by one"
                                     : "no graph named \"%s\" is held to update (capture it first, "
                                       "or leave out --update)",
                              r->name);
            pthread_mutex_unlock(&v->mu);
            held_free(h);
            return st;
        }
        if (r->update && byname != same) {
            update_from = byname; /* kept until the new capture verified, then updated in place */
        } else if (byname && byname != same) {
            if (!r->force) {
                st = gr_error_set(err, GR_ERR_USAGE, "name",
                                  "a different graph is already held as \"%s\" (workload %s, "
                                  "variant %s, params %s, hash %s): pick another --name, drop it "
                                  "with `graphrun drop %s`, or replace it with --force",
                                  byname->name, byname->workload, byname->variant, byname->params,
                                  byname->hash, byname->name);
                pthread_mutex_unlock(&v->mu);
                held_free(h);
                return st;
            }
            victims[1] = byname;
        }
        snprintf(h->name, sizeof(h->name), "%s", r->name);
    } else if (same) {
        snprintf(h->name, sizeof(h->name), "%s", same->name);
    } else {
        default_name(v, h, h->name, sizeof(h->name));
    }
    int count = v->ngraphs - (update_from != NULL);
    double bytes = held_bytes_locked(v);
    for (int i = 0; i < 2; i++)
        if (victims[i]) {
            count--;
            bytes -= victims[i]->device_bytes;
        }
    if (count >= v->o.max_graphs) {
        char names[1024];
        names_locked(v, names, sizeof(names));
        st = gr_error_set(err, GR_ERR_SERVICE, "max_graphs",
                          "graph limit reached: the service holds %d graphs (%s) and its limit is "
                          "%d: drop one with `graphrun drop NAME`, or restart the service with a "
                          "larger --max-graphs",
                          v->ngraphs, names, v->o.max_graphs);
    } else if (max_memory > 0 && bytes + p->used_bytes > max_memory) {
        char need[32], have[32], lim[32];
        fmt_bytes(p->used_bytes, need, sizeof(need));
        fmt_bytes(bytes, have, sizeof(have));
        fmt_bytes(max_memory, lim, sizeof(lim));
        st = gr_error_set(err, GR_ERR_SERVICE, "max_memory",
                          "device memory limit: %s %s needs %s of device buffers, the graphs held "
                          "use %s and the limit is %s: drop graphs (`graphrun list`, `graphrun "
                          "drop NAME`), make the workload smaller with --set, or restart the "
                          "service with a larger --max-memory",
                          h->workload, h->variant, need, have, lim);
    }
    pthread_mutex_unlock(&v->mu);
    if (st == GR_OK) st = check_host_memory(h, p, r->cpu_reference, err);
    if (st != GR_OK) {
        held_free(h);
        return st;
    }
    if (!ready) {
        st = gr_error_set(err, GR_ERR_NODEV, NULL,
                          "%s: the workload is valid (variant %s: %d ops, %d kernel launches per "
                          "step) but nothing was captured",
                          dev_error, p->variant, p->nops, p->kernels);
        held_free(h);
        return st;
    }
    for (int i = 0; i < 2; i++)
        if (victims[i] && (i == 0 || victims[i] != victims[0])) {
            pthread_mutex_lock(&v->mu);
            unregister_locked(v, victims[i]);
            pthread_mutex_unlock(&v->mu);
            slog("capture --force: dropping \"%s\" (hash %s)", victims[i]->name, victims[i]->hash);
            held_retire(v, victims[i], "its graph was captured again (force)");
        }

    size_t free0 = 0, total = 0, free1 = 0;
    GR_CUDA(cudaMemGetInfo(&free0, &total), err);
    gr_variant_run *vr = h->vr;
    capture_opts(r, &h->opts);
    gr_pipe pipe;
    gr_pipe_init(&pipe, p, dev.sm_count, &h->opts, vr);
    stage_ctx sc = {v, j};
    gr_pipe_hooks hooks = {before_stage, NULL, NULL, NULL, &sc};
    pipe.hooks = &hooks;
    pipe.wl = h->ld.wl;
    pipe.peers = (const gr_plan *const *)h->ld.plans;
    pipe.npeers = h->ld.nplans;
    st = gr_pipe_run(&pipe, gr_pipe_capture_stages, gr_pipe_capture_nstages, err);
    h->s = gr_pipe_detach(&pipe);
    gr_pipe_free(&pipe); /* the reference variant's plan, when one was resolved */
    json_t *update = NULL;
    if (update_from) { /* the held graph's exec takes the new graph when the topology allows */
        gr_graph_update u;
        memset(&u, 0, sizeof(u));
        if (st == GR_OK) st = gr_graph_exec_update(&update_from->s->graph, &h->s->graph, &u, err);
        if (st == GR_OK && u.updated) {
            h->s->graph = update_from->s->graph; /* the new nodes in the old exec */
            memset(&update_from->s->graph, 0, sizeof(update_from->s->graph));
            st = gr_session_verify_graph(h->s, err); /* the updated exec, replayed and checked */
            gr_checks_take(&vr->checks, &h->s->checks);
            if (st == GR_OK && !vr->checks.verified)
                st = gr_error_set(err, GR_ERR_VERIFY, NULL,
                                  "the graph updated in place (cudaGraphExecUpdate) does not verify");
        }
        if (st == GR_OK)
            update = json_pack("{s:s, s:s, s:f, s:f, s:s}", "result",
                               u.updated ? "updated" : "reinstantiated", "from", update_from->hash,
                               "update_us", u.update_us, "instantiate_us", vr->graph.instantiate_us,
                               "why", u.updated ? "" : u.why);
        /* the old graph goes either way: replaced by this one */
        pthread_mutex_lock(&v->mu);
        unregister_locked(v, update_from);
        pthread_mutex_unlock(&v->mu);
        slog("capture --update: \"%s\" %s (cudaGraphExecUpdate %.1f us%s%s)", update_from->name,
             u.updated ? "updated in place" : "re-instantiated", u.update_us, u.updated ? "" : ": ",
             u.why);
        held_retire(v, update_from, "its graph was updated (capture with update)");
    }
    if (st == GR_OK && cudaMemGetInfo(&free1, &total) != cudaSuccess)
        st = gr_cuda_fail(cudaGetLastError(), "cudaMemGetInfo", __FILE__, __LINE__, err);
    vr->status = st;
    if (st != GR_OK) {
        snprintf(vr->error, sizeof(vr->error), "%s", err->msg);
        if (vr->checks.n > 0 || vr->captured) {
            *body = json_object();
            if (*body) add_report(*body, v, h, vr, 0, 0);
        }
        held_free(h);
        return st;
    }
    /* the host copies only served verification: give their memory back */
    json_decref(held_finish(v, h, free0, free1));
    pthread_mutex_lock(&v->mu);
    h->seq = ++v->seq;
    v->graphs[v->ngraphs++] = h;
    snprintf(v->latest, sizeof(v->latest), "%s", h->name);
    *body = held_json(v, h);
    pthread_mutex_unlock(&v->mu);
    if (*body) {
        json_object_set_new(*body, "reused", json_false());
        if (h->report_text) json_object_set_new(*body, "report_text", json_string(h->report_text));
        if (h->report_json) json_object_set_new(*body, "report", json_deep_copy(h->report_json));
        if (update) json_object_set_new(*body, "update", update);
        update = NULL;
    }
    json_decref(update);
    char mem[32];
    fmt_bytes(h->device_bytes, mem, sizeof(mem));
    slog("captured \"%s\": %s variant %s (%s), %zu nodes, %s of device memory, hash %s", h->name,
         h->workload, h->variant, h->params, h->nodes, mem, h->hash);
    return GR_OK;
}

/* Is the context still usable after a failed call? A sticky error shows on every later call. */
static int context_broken(void) {
    cudaGetLastError();
    return cudaDeviceSynchronize() != cudaSuccess;
}

/* FNV-1a 64 of each output buffer as it is on the device now: lets a client check that a held
 * graph still computes what it did (the test of the service under faults compares two). */
static gr_status output_digests(const held *h, json_t **out, gr_error *err) {
    const gr_plan *p = h->ld.plans[0];
    json_t *arr = json_array();
    if (!arr) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    for (int b = 0; b < p->nbufs; b++) {
        const gr_buffer *buf = &p->bufs[b];
        if (!buf->is_output || !buf->used) continue;
        void *host = malloc(buf->bytes ? buf->bytes : 1);
        if (!host) {
            json_decref(arr);
            return gr_error_set(err, GR_ERR_NOMEM, "output_digest",
                                "out of host memory for a copy of output %s (%zu bytes)", buf->name,
                                buf->bytes);
        }
        gr_status st = gr_devstate_download(h->s->dev, b, host, err);
        if (st != GR_OK) {
            free(host);
            json_decref(arr);
            return st;
        }
        char hex[17];
        snprintf(hex, sizeof(hex), "%016llx",
                 (unsigned long long)gr_fnv1a(GR_FNV_OFFSET, host, buf->bytes));
        free(host);
        json_array_append_new(arr, json_pack("{s:s, s:I, s:s}", "buffer", buf->name, "bytes",
                                             (json_int_t)buf->bytes, "fnv1a64", hex));
    }
    *out = arr;
    return GR_OK;
}

/* ---- serving: a replay with inputs and outputs ---- */

/* One buffer's data for a served step: a file read into `host`, or a mapped shm segment. */
typedef struct io_buf {
    const gr_io_spec *sp;
    int b;          /* plan buffer */
    gr_buffer view; /* the buffer as the request sees it: its first `batch` rows for a bucket
                       request smaller than its bucket, else the buffer itself */
    void *host;     /* file input: its bytes; file output: the staging copy */
    void *map;      /* shm: the mapping */
    size_t map_len;
    int npy;        /* file output: write .npy (by extension), else raw */
    int64_t file_offset;
} io_buf;

/* A client can shrink its segment (ftruncate) while the service has it mapped: the next touch of
 * the missing pages raises SIGBUS, which would end the service. Around the service's own reads
 * and writes of client segments (a served step's copies, a lane thread's control block; never
 * inside a CUDA call, which only sees pinned staging or a lane's registered pages, which stay
 * valid) a SIGBUS jumps back to the thread that touched it, which fails that request or ends that
 * lane; any other SIGBUS takes its default action. */
static _Thread_local sigjmp_buf *seg_guard;

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
    (void)si, (void)uc;
    if (seg_guard) siglongjmp(*seg_guard, 1);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* memcpy where either side may be a client's segment: -1 when it faulted (shrunk under us). */
static int seg_copy(void *dst, const void *src, size_t n) {
    sigjmp_buf jb;
    sigjmp_buf *prev = seg_guard;
    if (sigsetjmp(jb, 0)) { /* no mask to restore: the handler runs with SA_NODEFER */
        seg_guard = prev;
        return -1;
    }
    seg_guard = &jb;
    memcpy(dst, src, n);
    seg_guard = prev;
    return 0;
}

static gr_status seg_fault(const io_buf *io, gr_error *err) {
    return gr_error_set(err, GR_ERR_INPUT, io->sp->shm[0] ? io->sp->shm : io->sp->file,
                        "the shared-memory segment shrank during the step (SIGBUS on its pages): "
                        "keep a segment's size while a request uses it");
}

static void io_free(io_buf *io, int n) {
    for (int i = 0; i < n; i++) {
        free(io[i].host);
        if (io[i].map) munmap(io[i].map, io[i].map_len);
    }
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* Everything a served step needs, checked before the device is touched: each buffer exists and
 * is used, each file matches its buffer (size, or the .npy dtype and shape) or can be written,
 * each shared-memory segment exists and holds offset + the buffer's bytes. */
/* Entry i of a served step's (or a lane's) inputs or outputs: its plan buffer and the view the
 * request sees (the batch's rows of a padded bucket). */
static gr_status io_resolve(const held *h, const gr_io_spec *sp, const char *field, io_buf *io,
                            long long batch, gr_error *err) {
    const gr_plan *p = h->ld.plans[0];
    io->sp = sp;
    int b = -1;
    for (int k = 0; k < p->nbufs && b < 0; k++)
        if (!strcmp(p->bufs[k].name, sp->buffer)) b = k;
    if (b < 0 || !p->bufs[b].used) {
        char names[512];
        size_t o = 0;
        names[0] = '\0';
        for (int k = 0; k < p->nbufs && o < sizeof(names) - 1; k++)
            if (p->bufs[k].used)
                o += (size_t)snprintf(names + o, sizeof(names) - o, "%s%s", o ? ", " : "",
                                      p->bufs[k].name);
        return gr_error_set(err, GR_ERR_INPUT, field, "\"%s\": %s of %s %s (buffers: %s)",
                            sp->buffer, b < 0 ? "no such buffer in workload" : "not used by variant",
                            h->workload, h->variant, names);
    }
    io->b = b;
    io->view = p->bufs[b];
    const gr_bucket_buffer *bb =
        h->group && batch > 0 && batch < h->bucket ? gr_bucket_find(&h->group->layout, sp->buffer)
                                                    : NULL;
    if (bb && (bb->batch_dim > 0 || (bb->batch_dim == 0 && io->view.shape[0] != h->bucket)))
        return gr_error_set(err, GR_ERR_INPUT, field,
                            "buffer \"%s\" changes with %s in dimension %d%s, so a request for "
                            "batch %lld cannot be padded to bucket %lld: send the whole bucket",
                            sp->buffer, h->group->spec.param, bb->batch_dim,
                            bb->batch_dim == 0 ? " (not one row a unit)" : "", batch,
                            (long long)h->bucket);
    if (bb && bb->batch_dim == 0) { /* the request's rows: the rest is padding */
        io->view.numel = io->view.numel / io->view.shape[0] * batch;
        io->view.shape[0] = batch;
        io->view.bytes = (size_t)batch * bb->row_bytes;
    }
    return GR_OK;
}

static gr_status io_prepare(const held *h, const gr_io_spec *sp, int n, int out, io_buf *io,
                            long long batch, gr_error *err) {
    const gr_plan *p = h->ld.plans[0];
    const char *side = out ? "outputs" : "inputs";
    for (int i = 0; i < n; i++) {
        char field[64];
        snprintf(field, sizeof(field), "%s[%d]", side, i);
        GR_TRY(io_resolve(h, &sp[i], field, &io[i], batch, err));
        const int b = io[i].b;
        const gr_buffer *buf = &io[i].view;
        if (sp[i].shm[0]) {
            int fd = shm_open(sp[i].shm, out ? O_RDWR : O_RDONLY, 0);
            if (fd < 0)
                return gr_error_set(err, GR_ERR_INPUT, field,
                                    "shared-memory segment %s: %s (the client creates it with "
                                    "shm_open and keeps it until the reply)",
                                    sp[i].shm, strerror(errno));
            struct stat st;
            if (fstat(fd, &st) != 0 || (unsigned long long)st.st_size <
                                           (unsigned long long)sp[i].offset + buf->bytes) {
                long long have = fstat(fd, &st) == 0 ? (long long)st.st_size : -1;
                close(fd);
                return gr_error_set(err, GR_ERR_INPUT, field,
                                    "shared-memory segment %s holds %lld bytes; buffer \"%s\" (%s, "
                                    "%zu bytes) at offset %lld needs %llu",
                                    sp[i].shm, have, buf->name, gr_dtype_name(buf->dtype),
                                    buf->bytes, sp[i].offset,
                                    (unsigned long long)sp[i].offset + buf->bytes);
            }
            io[i].map_len = (size_t)sp[i].offset + buf->bytes;
            void *m = mmap(NULL, io[i].map_len ? io[i].map_len : 1,
                           out ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
            close(fd);
            if (m == MAP_FAILED)
                return gr_error_set(err, GR_ERR_INPUT, field, "cannot map %s: %s", sp[i].shm,
                                    strerror(errno));
            io[i].map = m;
            continue;
        }
        io[i].host = malloc(p->bufs[b].bytes ? p->bufs[b].bytes : 1);
        if (!io[i].host)
            return gr_error_set(err, GR_ERR_NOMEM, field, "out of host memory for %zu bytes",
                                buf->bytes);
        if (out) {
            io[i].npy = ends_with(sp[i].file, ".npy");
            char dir[GR_PROTO_PATH_MAX];
            snprintf(dir, sizeof(dir), "%s", sp[i].file);
            char *slash = strrchr(dir, '/');
            if (slash == dir) dir[1] = '\0';
            else if (slash) *slash = '\0';
            if (access(dir, W_OK) != 0)
                return gr_error_set(err, GR_ERR_INPUT, field,
                                    "cannot write %s: %s (does the directory exist and is it "
                                    "writable by the service's user?)",
                                    sp[i].file, strerror(errno));
            continue;
        }
        size_t off = 0;
        GR_TRY(gr_expect_check(sp[i].file, buf, field, &off, err));
        FILE *f = fopen(sp[i].file, "rb");
        int ok = f && fseek(f, (long)off, SEEK_SET) == 0 && fread(io[i].host, 1, buf->bytes, f) == buf->bytes;
        if (f) fclose(f);
        if (!ok)
            return gr_error_set(err, GR_ERR_INPUT, field, "cannot read %zu bytes of %s", buf->bytes,
                                sp[i].file);
    }
    return GR_OK;
}

static json_t *io_json(const io_buf *io, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        const gr_buffer *b = &io[i].view;
        json_t *shape = json_array();
        for (int d = 0; d < b->ndim; d++) json_array_append_new(shape, json_integer(b->shape[d]));
        json_t *e = json_pack("{s:s, s:s, s:o, s:I}", "buffer", b->name, "dtype",
                              gr_dtype_name(b->dtype), "shape", shape, "bytes", (json_int_t)b->bytes);
        if (io[i].sp->shm[0]) {
            json_object_set_new(e, "shm", json_string(io[i].sp->shm));
            json_object_set_new(e, "offset", json_integer(io[i].sp->offset));
        } else {
            json_object_set_new(e, "file", json_string(io[i].sp->file));
        }
        json_array_append_new(a, e);
    }
    return a;
}

static gr_status write_raw(const char *path, const void *data, size_t bytes, gr_error *err) {
    FILE *f = fopen(path, "wb");
    if (!f) return gr_error_set(err, GR_ERR_IO, path, "cannot write: %s", strerror(errno));
    int ok = bytes == 0 || fwrite(data, 1, bytes, f) == bytes;
    if (fclose(f) != 0) ok = 0;
    if (!ok) return gr_error_set(err, GR_ERR_IO, path, "cannot write %zu bytes: %s", bytes, strerror(errno));
    return GR_OK;
}

/* Pinned host memory for buffer b of a held graph, the whole buffer (allocated on its first
 * served step, kept with the graph): served copies go through it asynchronously, on the graph's
 * stream, with one synchronisation per request. NULL above SERVE_PIN_MAX or when the system
 * refuses pinned memory: the caller copies that buffer synchronously instead. */
#define SERVE_PIN_MAX ((size_t)64 << 20)
static void *pinned_for(held *h, int b) {
    const gr_plan *p = h->ld.plans[0];
    size_t bytes = p->bufs[b].bytes;
    if (bytes > SERVE_PIN_MAX) return NULL;
    if (!h->pinned) {
        h->pinned = calloc((size_t)p->nbufs + 1, sizeof(void *));
        if (!h->pinned) return NULL;
    }
    if (!h->pinned[b] && cudaMallocHost(&h->pinned[b], bytes ? bytes : 1) != cudaSuccess) {
        cudaGetLastError();
        h->pinned[b] = NULL;
    }
    return h->pinned[b];
}

/* Copy in, one replay of the step's graph (event-timed), copy out; host time around it all.
 * Inputs are staged into pinned memory and copied, the graph launched and the outputs copied
 * back, all on the graph's stream, then one synchronisation; a buffer over SERVE_PIN_MAX is
 * copied synchronously before (inputs) or after (outputs). */
static gr_status serve_step(held *h, io_buf *in, int nin, io_buf *out, int nout, json_t **served,
                            gr_error *err) {
    const gr_plan *p = h->ld.plans[0];
    gr_devstate *dev = h->s->dev;
    cudaStream_t stream = (cudaStream_t)dev->streams[0];
    cudaEvent_t e0 = NULL, e1 = NULL;
    GR_CUDA(cudaEventCreate(&e0), err);
    gr_status st = GR_OK;
    if (cudaEventCreate(&e1) != cudaSuccess)
        st = gr_cuda_fail(cudaGetLastError(), "cudaEventCreate", __FILE__, __LINE__, err);
    double t0 = gr_now_us();
    for (int i = 0; i < nin && st == GR_OK; i++) {
        const int b = in[i].b;
        const void *src = in[i].map ? (const char *)in[i].map + in[i].sp->offset : in[i].host;
        size_t nb = in[i].view.bytes, whole = p->bufs[b].bytes;
        void *pin = pinned_for(h, b);
        if (!pin) { /* through a private copy: the CUDA call must not fault on a segment */
            void *tmp = in[i].map ? malloc(nb ? nb : 1) : NULL;
            if (in[i].map && !tmp) st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
            else if (tmp && seg_copy(tmp, src, nb) != 0) st = seg_fault(&in[i], err);
            else st = gr_devstate_upload_part(dev, b, tmp ? tmp : src, nb, err);
            free(tmp);
            continue;
        }
        if (seg_copy(pin, src, nb) != 0) {
            st = seg_fault(&in[i], err);
            break;
        }
        cudaError_t rc = nb ? cudaMemcpyAsync(dev->dptr[b], pin, nb, cudaMemcpyHostToDevice, stream)
                            : cudaSuccess;
        if (rc == cudaSuccess && nb < whole) /* a bucket's padding rows */
            rc = cudaMemsetAsync((char *)dev->dptr[b] + nb, 0, whole - nb, stream);
        if (rc != cudaSuccess) st = gr_cuda_fail(rc, "cudaMemcpyAsync (served input)", __FILE__, __LINE__, err);
    }
    double t1 = gr_now_us();
    if (st == GR_OK && cudaEventRecord(e0, stream) != cudaSuccess)
        st = gr_cuda_fail(cudaGetLastError(), "cudaEventRecord", __FILE__, __LINE__, err);
    if (st == GR_OK) st = gr_graph_launch(&h->s->graph, dev->streams[0], err);
    if (st == GR_OK && cudaEventRecord(e1, stream) != cudaSuccess)
        st = gr_cuda_fail(cudaGetLastError(), "cudaEventRecord", __FILE__, __LINE__, err);
    for (int i = 0; i < nout && st == GR_OK; i++) {
        const int b = out[i].b;
        void *pin = pinned_for(h, b);
        cudaError_t rc = pin ? cudaMemcpyAsync(pin, dev->dptr[b], p->bufs[b].bytes,
                                               cudaMemcpyDeviceToHost, stream)
                             : cudaSuccess;
        if (rc != cudaSuccess) st = gr_cuda_fail(rc, "cudaMemcpyAsync (served output)", __FILE__, __LINE__, err);
    }
    if (st == GR_OK && cudaStreamSynchronize(stream) != cudaSuccess)
        st = gr_cuda_fail(cudaGetLastError(), "cudaStreamSynchronize", __FILE__, __LINE__, err);
    double t2 = gr_now_us();
    float graph_ms = 0;
    if (st == GR_OK) cudaEventElapsedTime(&graph_ms, e0, e1);
    for (int i = 0; i < nout && st == GR_OK; i++) {
        const int b = out[i].b;
        const gr_buffer *vb = &out[i].view; /* trimmed to the request's rows */
        size_t whole = p->bufs[b].bytes;
        void *dst = out[i].map ? (char *)out[i].map + out[i].sp->offset : out[i].host;
        void *pin = h->pinned ? h->pinned[b] : NULL;
        if (pin) {
            if (seg_copy(dst, pin, out[i].map ? vb->bytes : whole) != 0) /* a segment holds the rows asked */
                st = seg_fault(&out[i], err);
        } else if (out[i].map) { /* through a private copy: the CUDA call must not fault on a segment */
            void *tmp = malloc(whole ? whole : 1);
            if (!tmp) st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
            if (st == GR_OK) st = gr_devstate_download(dev, b, tmp, err);
            if (st == GR_OK && seg_copy(dst, tmp, vb->bytes) != 0) st = seg_fault(&out[i], err);
            free(tmp);
            continue;
        } else {
            st = gr_devstate_download(dev, b, dst, err);
        }
        if (st == GR_OK && !out[i].map) {
            if (out[i].npy) st = gr_npy_write(out[i].sp->file, vb->dtype, vb->ndim, vb->shape, dst, err);
            else st = write_raw(out[i].sp->file, dst, vb->bytes, err);
        }
    }
    double t3 = gr_now_us();
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (st != GR_OK) return st;
    *served = json_pack("{s:i, s:f, s:f, s:f, s:f, s:f, s:o, s:o, s:s}", "steps", 1, "graph_us",
                        graph_ms * 1e3, "copy_in_us", t1 - t0, "device_us", t2 - t1,
                        "copy_out_us", t3 - t2, "request_us", t3 - t0, "inputs",
                        io_json(in, nin), "outputs", io_json(out, nout), "method",
                        "graph_us: CUDA events around the one graph launch; the others: host clock "
                        "in the service: copy_in_us stages the inputs into pinned memory and "
                        "enqueues their copies, device_us launches the graph, enqueues the "
                        "outputs' copies and waits for all of it, copy_out_us copies the outputs "
                        "to their segments or files");
    return GR_OK;
}

/* A replay (timed or served) happened: count it, and the reply's graph object, with the bucket
 * that ran for a `batch` request. */
static json_t *replayed(svc *v, held *h, const gr_request *r, int with_buffers) {
    pthread_mutex_lock(&v->mu);
    h->replays++;
    h->last_used_us = gr_now_us();
    json_t *body = held_json_ext(v, h, with_buffers);
    pthread_mutex_unlock(&v->mu);
    if (body && r->batch > 0 && h->group)
        json_object_set_new(body, "bucket_run",
                            json_pack("{s:s, s:I, s:I}", "param", h->group->spec.param, "value",
                                      (json_int_t)h->bucket, "asked", (json_int_t)r->batch));
    return body;
}

static gr_status job_serve(svc *v, held *h, job *j, json_t **body, gr_error *err) {
    gr_request *r = &j->req;
    io_buf in[GR_PROTO_MAX_IO], out[GR_PROTO_MAX_IO];
    memset(in, 0, sizeof(in));
    memset(out, 0, sizeof(out));
    double p0 = gr_now_us();
    gr_status st = io_prepare(h, r->inputs, r->ninputs, 0, in, r->batch, err);
    if (st == GR_OK) st = io_prepare(h, r->outputs, r->noutputs, 1, out, r->batch, err);
    double p1 = gr_now_us();
    if (st == GR_OK && cancelled(j)) st = cancel_error(j, err);
    json_t *served = NULL;
    if (st == GR_OK) {
        progress(v, j, "serve", 0, 0);
        st = serve_step(h, in, r->ninputs, out, r->noutputs, &served, err);
    }
    io_free(in, r->ninputs);
    io_free(out, r->noutputs);
    if (st != GR_OK) return st;
    /* where the service's time went besides the step (run_job adds queue_us and job_us) */
    json_object_set_new(served, "prepare_us", json_real(p1 - p0));
    /* a served step answers with the graph object less its buffer list (`list` and the capture
     * give it): building decode_step's 161 entries alone takes ~180 us of host time */
    double b0 = gr_now_us();
    *body = replayed(v, h, r, 0);
    json_object_set_new(served, "reply_body_us", json_real(gr_now_us() - b0));
    json_object_set_new(served, "lookup_us", json_real(p0 - j->started_us));
    if (*body) json_object_set_new(*body, "served", served);
    else json_decref(served);
    double now = gr_now_us();
    v->served_since_log++;
    if (v->served_log_us == 0) v->served_log_us = now;
    if (now - v->served_log_us >= SERVED_LOG_US) {
        slog("served %ld steps in the last %.0f s (the latest: \"%s\", %d input%s, %d output%s)",
             v->served_since_log, (now - v->served_log_us) / 1e6, h->name, r->ninputs,
             r->ninputs == 1 ? "" : "s", r->noutputs, r->noutputs == 1 ? "" : "s");
        v->served_since_log = 0;
        v->served_log_us = now;
    }
    return GR_OK;
}

/* `batch`: the smallest bucket >= batch of the group named `want` (its base name, or one of its
 * buckets' names). */
static gr_status pick_bucket_locked(svc *v, const char *want, long long batch, held **h,
                                    gr_error *err) {
    bucket_group *g = *h ? (*h)->group : NULL;
    for (int i = 0; i < v->ngraphs && !g; i++)
        if (v->graphs[i]->group && !strcmp(v->graphs[i]->group->base, want)) g = v->graphs[i]->group;
    if (!g)
        return gr_error_set(err, GR_ERR_USAGE, "batch",
                            "\"%s\" was not captured with --buckets, so there is no bucket to pick "
                            "for batch %lld",
                            want, batch);
    int k = gr_bucket_pick(&g->spec, batch);
    if (k < 0)
        return gr_error_set(err, GR_ERR_INPUT, "batch",
                            "batch %lld is larger than every bucket of \"%s\" (largest %s = %lld): "
                            "split the request, or capture a larger bucket",
                            batch, g->base, g->spec.param, (long long)g->spec.values[g->spec.n - 1]);
    *h = NULL;
    for (int want_k = k; want_k < g->spec.n && !*h; want_k++) /* a dropped bucket: the next one */
        for (int i = 0; i < v->ngraphs && !*h; i++)
            if (v->graphs[i]->group == g && v->graphs[i]->bucket == g->spec.values[want_k])
                *h = v->graphs[i];
    if (!*h)
        return gr_error_set(err, GR_ERR_USAGE, "batch",
                            "the buckets of \"%s\" that fit batch %lld were dropped", g->base, batch);
    return GR_OK;
}

/* Replay timing stages name their progress phase: "eager" or "graph". */
static gr_status replay_before(void *user, gr_pipe *p, const gr_stage *s, int *skip, gr_error *err) {
    (void)p, (void)skip;
    batch_ctx *b = user;
    if (cancelled(b->j)) return cancel_error(b->j, err);
    b->phase = s == &gr_stage_time_eager ? "eager" : "graph";
    b->last_us = 0;
    return GR_OK;
}

/* The held graph a replay or lane_open names (`name`, else the latest; with `batch`, the
 * group's bucket for it), or an error saying what is held. */
static gr_status held_for_request(svc *v, const gr_request *r, held **out, gr_error *err) {
    *out = NULL;
    pthread_mutex_lock(&v->mu);
    int ready = v->dev_state == DEV_READY;
    char dev_error[1024];
    snprintf(dev_error, sizeof(dev_error), "%s", v->dev_error);
    const char *want = r->name[0] ? r->name : v->latest;
    held *h = want[0] ? find_name_locked(v, want) : NULL;
    char names[1024];
    names_locked(v, names, sizeof(names));
    gr_status bst = GR_OK;
    if (r->batch > 0) bst = pick_bucket_locked(v, want, r->batch, &h, err);
    pthread_mutex_unlock(&v->mu);
    if (bst != GR_OK) return bst;
    if (!ready) return gr_error_set(err, GR_ERR_NODEV, NULL, "%s: nothing to replay", dev_error);
    if (!h && r->name[0])
        return gr_error_set(err, GR_ERR_USAGE, "name", "no graph named \"%s\" is held (%s%s)",
                            r->name, names[0] ? "graphs: " : "none is; capture one first with "
                                                             "`graphrun capture WORKLOAD`",
                            names);
    if (!h)
        return gr_error_set(err, GR_ERR_USAGE, "name",
                            "no graph captured yet: `graphrun capture WORKLOAD` first");
    *out = h;
    return GR_OK;
}

static gr_status job_replay(svc *v, job *j, json_t **body, gr_error *err) {
    gr_request *r = &j->req;
    held *h = NULL;
    GR_TRY(held_for_request(v, r, &h, err));
    if (r->ninputs || r->noutputs) return job_serve(v, h, j, body, err);
    if (!v->have_bw) {
        size_t fr = 0, tot = 0;
        GR_CUDA(cudaMemGetInfo(&fr, &tot), err);
        progress(v, j, "bandwidth", 0, 0);
        gr_error be;
        gr_error_clear(&be);
        if (gr_bandwidth_probe(gr_bandwidth_bytes(fr), GR_BANDWIDTH_REPS, &v->bw, &be) == GR_OK) {
            v->have_bw = 1;
        } else {
            char line[512];
            slog("bandwidth probe failed (reports go without the HBM floor): %s",
                 first_line(be.msg, line, sizeof(line)));
            if (be.code == GR_ERR_CUDA && context_broken())
                return gr_error_set(err, GR_ERR_CUDA, NULL, "%s", be.msg);
        }
    }
    gr_variant_run *vr = malloc(sizeof(*vr));
    if (!vr) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    *vr = *h->vr; /* a copy for this replay's timings; checks and stages stay the capture's */
    vr->nstages = vr->cap_stages = 0;
    vr->stages = NULL;
    gr_run_opts o = h->opts;
    o.iters = r->iters;
    o.batches = r->batches;
    o.warmup = r->warmup; /* < 0: derived */
    batch_ctx bc = {v, j, "graph", 0};
    gr_pipe_hooks hooks = {replay_before, NULL, on_batch, in_batch, &bc};
    gr_pipe pipe;
    gr_pipe_init(&pipe, h->ld.plans[0], 0, &o, vr);
    pipe.s = h->s; /* the held session: the pipe borrows it */
    pipe.hooks = &hooks;
    const gr_stage *stages[2];
    int n = 0;
    if (r->compare_eager) stages[n++] = &gr_stage_time_eager;
    stages[n++] = &gr_stage_time_graph;
    gr_status st = gr_pipe_run(&pipe, stages, n, err);
    gr_pipe_detach(&pipe);
    free(vr->stages);
    vr->stages = NULL;
    vr->nstages = 0;
    vr->checks = h->vr->checks; /* gr_pipe_run took nothing from the held session */
    json_t *digests = NULL;
    if (st == GR_OK && r->output_digest) st = output_digests(h, &digests, err);
    if (st == GR_OK) {
        vr->timed = 1;
        *body = replayed(v, h, r, 1);
        if (*body) {
            json_object_set_new(*body, "iters", json_integer(vr->graph_t.batches * vr->graph_t.steps_per_batch));
            if (digests) json_object_set_new(*body, "outputs", digests);
            digests = NULL;
            add_report(*body, v, h, vr, 1, 0);
        }
        slog("replayed \"%s\": %d x %d steps, graph %.3f us/step median%s", h->name,
             vr->graph_t.batches, vr->graph_t.steps_per_batch, vr->graph_t.step_us.median,
             r->compare_eager ? " (eager timed too)" : "");
    }
    json_decref(digests);
    free(vr);
    return st;
}

static gr_status job_drop(svc *v, job *j, json_t **body, gr_error *err) {
    pthread_mutex_lock(&v->mu);
    held *victims[HARD_MAX_GRAPHS];
    int nv = 0;
    held *h = find_name_locked(v, j->req.name);
    if (h) victims[nv++] = h;
    else /* a bucket group's base name drops every bucket of it */
        for (int i = 0; i < v->ngraphs; i++)
            if (v->graphs[i]->group && !strcmp(v->graphs[i]->group->base, j->req.name))
                victims[nv++] = v->graphs[i];
    if (nv == 0) {
        char names[1024];
        names_locked(v, names, sizeof(names));
        pthread_mutex_unlock(&v->mu);
        return gr_error_set(err, GR_ERR_USAGE, "name", "no graph named \"%s\" is held (%s%s)",
                            j->req.name, names[0] ? "graphs: " : "none is held", names);
    }
    double freed = 0;
    json_t *names = json_array();
    for (int i = 0; i < nv; i++) {
        held *x = victims[i];
        unregister_locked(v, x);
        freed += x->device_bytes;
        json_array_append_new(names, json_string(x->name));
    }
    /* a group's shared buffers go with its last bucket: when every holder of it is dropped */
    for (int i = 0; i < nv; i++) {
        bucket_group *g = victims[i]->group;
        int first = g != NULL, count = 0;
        for (int k = 0; k < i && first; k++) first = victims[k]->group != g;
        for (int k = 0; k < nv && first; k++) count += victims[k]->group == g;
        if (first && count == g->refs) freed += g->bytes;
    }
    pthread_mutex_unlock(&v->mu);
    *body = json_pack("{s:s, s:f, s:o}", "dropped", nv == 1 ? victims[0]->name : j->req.name,
                      "freed_bytes", freed, "graphs", names);
    for (int i = 0; i < nv; i++) {
        slog("dropped \"%s\" (hash %s)", victims[i]->name, victims[i]->hash);
        held_retire(v, victims[i], "its graph was dropped");
    }
    /* make the free visible (and any error of it) before the next request */
    GR_CUDA(cudaDeviceSynchronize(), err);
    return GR_OK;
}

/* ---------------------------------------------------------------- lanes */

#define LANE_MAX 16
#define LANE_SEGMENT_MAX ((size_t)1 << 30)

/* An open lane (replay/PROTOCOL.md, "Lanes"): a thread of its own waits on the doorbell in the
 * client's segment and runs each step under gpu_mu. In v->lanes (under mu) from open until its
 * thread ends; the thread frees it. */
typedef struct lane {
    uint64_t id, conn;
    svc *v;
    held *h;
    gr_io_spec spec[2 * GR_PROTO_MAX_IO];
    io_buf in[GR_PROTO_MAX_IO], out[GR_PROTO_MAX_IO]; /* views: the whole buffer (bucket rows) */
    size_t row_bytes[2 * GR_PROTO_MAX_IO]; /* per spec: bytes a row of a buffer that changes with
                                              the bucket in dimension 0, else 0 (always whole) */
    int fixed_rows;   /* a buffer changes with the bucket in another dimension: no partial rows */
    long long bucket; /* the graph's bucket value (its rows), 0 when not a bucket's graph */
    long long rows;   /* the rows a step with ctl->rows 0 serves */
    int nin, nout;
    void *map;
    size_t map_len;
    int registered; /* cudaHostRegister took the segment: the copies are DMA from/to it; else
                       each buffer goes through pinned staging (stage), a guarded memcpy away */
    void *stage[2 * GR_PROTO_MAX_IO];
    dev_t seg_dev;  /* the segment's identity: two lanes on one control block would fight */
    ino_t seg_ino;
    gr_lane_ctl *ctl;
    int stop;       /* atomic (__atomic): set by whoever closes the lane */
    int closer_reaps; /* (under mu, before stop) the closer holds gpu_mu and tears it down */
    char why[256];  /* why it closed (written before stop) */
    double spin_us;
    uint64_t steps; /* served (under mu) */
    cudaEvent_t e0, e1;
    gr_io_graph io; /* the graph with its copies inside (capture/iograph.h); empty: none */
    char io_why[200]; /* why there is none */
    struct lane *next;
} lane;

/* Bytes of spec i a step of `rows` moves: a bucket buffer's first rows, else all of it. */
static size_t lane_bytes(const lane *l, int i, const io_buf *io, long long rows) {
    return l->row_bytes[i] ? (size_t)rows * l->row_bytes[i] : io->view.bytes;
}

static gr_status lane_step_enqueue(lane *l, long long rows, float *graph_ms, gr_error *err);

static gr_status lane_step(lane *l, long long rows, float *graph_ms, gr_error *err) {
    gr_status st = lane_step_enqueue(l, rows, graph_ms, err);
    if (st != GR_OK && st != GR_ERR_CUDA) {
        /* copies may be queued from/to the staging the next step reuses: let them finish */
        cudaStreamSynchronize((cudaStream_t)l->h->s->dev->streams[0]);
        cudaGetLastError();
    }
    return st;
}

/* Whether the lane steps through its io graph (built at open; gone after a refused resize). */
static int lane_io(const lane *l) {
    return l->io.g.exec != NULL;
}

/* The io graph's copies sized for `rows`. A resize CUDA refuses launched nothing: the io graph
 * goes, and this step and the later ones take the separate copies (logged, and in io_why). */
static void lane_io_resize(lane *l, long long rows) {
    for (int i = 0; i < l->nin + l->nout; i++) {
        const io_buf *io = i < l->nin ? &l->in[i] : &l->out[i - l->nin];
        gr_error e;
        gr_error_clear(&e);
        if (gr_io_graph_set_bytes(&l->io, i, lane_bytes(l, i, io, rows), &e) != GR_OK) {
            snprintf(l->io_why, sizeof(l->io_why), "%s", e.msg);
            slog("lane %llu: its io graph refused %lld rows (%s): separate copies from now on",
                 (unsigned long long)l->id, rows, e.msg);
            gr_io_graph_destroy(&l->io);
            return;
        }
    }
}

/* One step: the inputs into pinned staging when the segment is not registered; then either the
 * io graph (its copies inside: one launch) or copies in, the held graph and copies out on the
 * graph's stream; one wait; the staged outputs into the segment. `rows` (checked) pads the
 * inputs of a bucket's graph with zero rows and trims its outputs. graph_ms: events around the
 * launch (with the io graph, its copies included). */
static gr_status lane_step_enqueue(lane *l, long long rows, float *graph_ms, gr_error *err) {
    held *h = l->h;
    const gr_plan *p = h->ld.plans[0];
    gr_devstate *dev = h->s->dev;
    cudaStream_t stream = (cudaStream_t)dev->streams[0];
    if (lane_io(l)) lane_io_resize(l, rows);
    const int io = lane_io(l);
    for (int i = 0; i < l->nin; i++) /* not registered: through pinned staging */
        if (l->stage[i] && seg_copy(l->stage[i], (const char *)l->map + l->in[i].sp->offset,
                                    lane_bytes(l, i, &l->in[i], rows)) != 0)
            return seg_fault(&l->in[i], err);
    cudaError_t rc = cudaSuccess;
    for (int i = 0; i < l->nin && !io && rc == cudaSuccess; i++) {
        const int b = l->in[i].b;
        size_t nb = lane_bytes(l, i, &l->in[i], rows), whole = p->bufs[b].bytes;
        const char *src = l->stage[i] ? (const char *)l->stage[i]
                                      : (const char *)l->map + l->in[i].sp->offset;
        if (nb) rc = cudaMemcpyAsync(dev->dptr[b], src, nb, cudaMemcpyHostToDevice, stream);
        if (rc == cudaSuccess && nb < whole) /* a bucket's padding rows */
            rc = cudaMemsetAsync((char *)dev->dptr[b] + nb, 0, whole - nb, stream);
    }
    if (rc != cudaSuccess) return gr_cuda_fail(rc, "cudaMemcpyAsync (lane input)", __FILE__, __LINE__, err);
    GR_CUDA(cudaEventRecord(l->e0, stream), err);
    GR_TRY(gr_graph_launch(io ? &l->io.g : &h->s->graph, dev->streams[0], err));
    GR_CUDA(cudaEventRecord(l->e1, stream), err);
    for (int i = 0; i < l->nout && !io && rc == cudaSuccess; i++) {
        void *stage = l->stage[l->nin + i];
        char *dst = stage ? (char *)stage : (char *)l->map + l->out[i].sp->offset;
        size_t nb = lane_bytes(l, l->nin + i, &l->out[i], rows); /* the buffer's first rows */
        if (nb) rc = cudaMemcpyAsync(dst, dev->dptr[l->out[i].b], nb, cudaMemcpyDeviceToHost, stream);
    }
    if (rc != cudaSuccess) return gr_cuda_fail(rc, "cudaMemcpyAsync (lane output)", __FILE__, __LINE__, err);
    GR_CUDA(cudaStreamSynchronize(stream), err);
    GR_CUDA(cudaEventElapsedTime(graph_ms, l->e0, l->e1), err);
    for (int i = 0; i < l->nout; i++) {
        void *stage = l->stage[l->nin + i];
        if (!stage) continue;
        size_t nb = lane_bytes(l, l->nin + i, &l->out[i], rows);
        if (seg_copy((char *)l->map + l->out[i].sp->offset, stage, nb) != 0)
            return seg_fault(&l->out[i], err);
    }
    return GR_OK;
}

/* The lane's io graph (capture/iograph.h), built at open under gpu_mu: the held graph with a
 * copy kernel per input before it and per output after it, reading and writing the segment (or
 * the staging) through its device mapping. When something refuses (no mapping, a graph that
 * cannot be cloned), the lane keeps the separate copies and says why. */
static void lane_io_graph(lane *l) {
    held *h = l->h;
    const gr_plan *p = h->ld.plans[0];
    gr_devstate *dev = h->s->dev;
    gr_iocopy_args a[2 * GR_PROTO_MAX_IO];
    memset(a, 0, sizeof(a));
    void *dmap = NULL;
    if (l->registered && cudaHostGetDevicePointer(&dmap, l->map, 0) != cudaSuccess) {
        snprintf(l->io_why, sizeof(l->io_why), "the segment has no device mapping (%s)",
                 cudaGetErrorName(cudaGetLastError()));
        return;
    }
    for (int i = 0; i < l->nin + l->nout; i++) {
        const int in = i < l->nin;
        const io_buf *io = in ? &l->in[i] : &l->out[i - l->nin];
        void *host = NULL;
        if (l->stage[i]) {
            if (cudaHostGetDevicePointer(&host, l->stage[i], 0) != cudaSuccess) {
                snprintf(l->io_why, sizeof(l->io_why), "the staging of \"%s\" has no device "
                         "mapping (%s)", io->view.name, cudaGetErrorName(cudaGetLastError()));
                return;
            }
        } else {
            host = (char *)dmap + io->sp->offset;
        }
        size_t nb = lane_bytes(l, i, io, l->rows);
        if (in) {
            a[i].dst = dev->dptr[io->b];
            a[i].src = host;
            a[i].bytes = nb;
            a[i].whole = p->bufs[io->b].bytes;
        } else {
            a[i].dst = host;
            a[i].src = dev->dptr[io->b];
            a[i].bytes = a[i].whole = nb;
        }
    }
    gr_error e;
    gr_error_clear(&e);
    if (gr_io_graph_build(&h->s->graph, a, l->nin, a + l->nin, l->nout, dev->streams[0], &l->io,
                          &e) != GR_OK)
        snprintf(l->io_why, sizeof(l->io_why), "%s", e.msg);
}

/* Take gpu_mu, giving up when the lane is stopped (its closer may hold gpu_mu and wait for us). */
static int lane_lock_gpu(lane *l) {
    for (;;) {
        if (__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) return 0;
        if (atomic_load(&l->v->gpu_wanted) > 0) { /* a queued request goes first: no starving */
            struct timespec pause = {0, 50 * 1000};
            nanosleep(&pause, NULL);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (pthread_mutex_timedlock(&l->v->gpu_mu, &ts) == 0) {
            if (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) return 1;
            pthread_mutex_unlock(&l->v->gpu_mu);
            return 0;
        }
    }
}

/* A lane's CUDA resources and mapping: under gpu_mu (a global-mode capture must not see a
 * cudaHostUnregister or cudaFreeHost from another thread). */
static void lane_teardown_keep(lane *l) {
    gr_io_graph_destroy(&l->io); /* before the memory its copies name */
    if (l->registered) cudaHostUnregister(l->map);
    for (int i = 0; i < l->nin + l->nout; i++)
        if (l->stage[i]) cudaFreeHost(l->stage[i]);
    if (l->e0) cudaEventDestroy(l->e0);
    if (l->e1) cudaEventDestroy(l->e1);
    cudaGetLastError();
    if (l->map) munmap(l->map, l->map_len);
}

static void lane_teardown(lane *l) {
    lane_teardown_keep(l);
    free(l);
}

/* The worker, holding gpu_mu (or alone at the end): tear down the lanes that ended while the
 * GPU was busy. */
static void lanes_reap(svc *v) {
    pthread_mutex_lock(&v->mu);
    lane *r = v->reap;
    v->reap = NULL;
    pthread_mutex_unlock(&v->mu);
    while (r) {
        lane *next = r->next;
        lane_teardown(r);
        r = next;
    }
}

static void *lane_main(void *arg) {
    lane *l = arg;
    svc *v = l->v;
    cudaSetDevice(v->o.device);
    uint64_t done = 0, seq = 0;
    int segment_gone = 0;
    sigjmp_buf jb;
    if (sigsetjmp(jb, 0)) { /* SIGBUS on the segment (no lock is held there): do not touch it */
        seg_guard = NULL;
        segment_gone = 1;
        pthread_mutex_lock(&v->mu);
        if (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE))
            snprintf(l->why, sizeof(l->why), "its client shrank the segment under it (SIGBUS)");
        pthread_mutex_unlock(&v->mu);
        goto out;
    }
    seg_guard = &jb;
    while (gr_lane_await_request(l->ctl, done, l->spin_us, &l->stop, &seq)) {
        double t0 = gr_now_us();
        /* the step's rows: read before gpu_mu is taken (a SIGBUS here holds no lock) */
        long long rows = __atomic_load_n(&l->ctl->rows, __ATOMIC_ACQUIRE);
        seg_guard = NULL; /* from here to the unlock: no touch of the segment but DMA/staging */
        if (!lane_lock_gpu(l)) {
            seg_guard = &jb;
            break;
        }
        double t1 = gr_now_us();
        gr_error err;
        gr_error_clear(&err);
        float ms = 0;
        gr_status st = GR_OK;
        if (rows == 0) rows = l->rows;
        else if (!l->bucket)
            st = gr_error_set(&err, GR_ERR_INPUT, "rows",
                              "rows %lld: graph \"%s\" is not a bucket's, so a step serves its "
                              "buffers whole (leave rows 0)",
                              rows, l->h->name);
        else if (rows > l->bucket || (l->fixed_rows && rows != l->bucket))
            st = gr_error_set(&err, GR_ERR_INPUT, "rows",
                              "rows %lld: this lane's graph is bucket %s = %lld%s (open a lane on a "
                              "larger bucket for more rows)",
                              rows, l->h->group->spec.param, l->bucket,
                              l->fixed_rows ? ", and one of its buffers changes with the bucket "
                                              "in another dimension, so a step serves all rows"
                                            : "");
        if (st == GR_OK) st = lane_step(l, rows, &ms, &err);
        pthread_mutex_unlock(&v->gpu_mu);
        seg_guard = &jb;
        pthread_mutex_lock(&v->mu);
        if (st == GR_OK) {
            l->h->replays++;
            l->h->last_used_us = t1;
            l->steps++;
        } else if (st == GR_ERR_CUDA) { /* as run_job: never serve again from a broken context */
            v->fatal = 1;
            snprintf(v->fatal_msg, sizeof(v->fatal_msg), "%s", err.msg);
            if (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE))
                snprintf(l->why, sizeof(l->why), "a CUDA error in a step: the service exits");
        }
        pthread_mutex_unlock(&v->mu);
        gr_lane_publish(l->ctl, seq, st, st == GR_OK ? NULL : err.msg, ms * 1e3, gr_now_us() - t0,
                        t1 - t0);
        done = seq;
        if (st == GR_ERR_CUDA) {
            wake(v); /* the I/O thread sees fatal and stops the service */
            break;
        }
    }
out:
    /* from here no closer touches the lane (stop is set), nor its block once it is marked */
    pthread_mutex_lock(&v->mu);
    __atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
    char why[256];
    snprintf(why, sizeof(why), "%s", l->why[0] ? l->why : "the lane was closed");
    pthread_mutex_unlock(&v->mu);
    if (!segment_gone) gr_lane_mark_closed(l->ctl, why); /* guarded: it may fault too */
    seg_guard = NULL;
    /* logged before the graph can go: a closer waiting for this lane may free it right after */
    slog("lane %llu on \"%s\" closed after %llu steps: %s", (unsigned long long)l->id, l->h->name,
         (unsigned long long)l->steps, why);
    /* gpu_mu, if it comes within 50 ms (another lane's step ends by then; a capture may not);
     * not when the closer holds it and tears the lane down itself */
    pthread_mutex_lock(&v->mu);
    int handoff = l->closer_reaps;
    pthread_mutex_unlock(&v->mu);
    int teardown_now = 0;
    for (int tries = 0; tries < 50 && !teardown_now && !handoff; tries++) {
        teardown_now = pthread_mutex_trylock(&v->gpu_mu) == 0;
        if (!teardown_now) {
            struct timespec ms1 = {0, 1000 * 1000};
            nanosleep(&ms1, NULL);
        }
    }
    if (teardown_now) {
        lane_teardown_keep(l);
        pthread_mutex_unlock(&v->gpu_mu);
    }
    pthread_mutex_lock(&v->mu);
    for (lane **pp = &v->lanes; *pp; pp = &(*pp)->next)
        if (*pp == l) {
            *pp = l->next;
            break;
        }
    v->nlanes--;
    l->h->nlanes--;
    v->closed_id[v->closed_next] = l->id;
    v->closed_steps[v->closed_next] = l->steps;
    v->closed_next = (v->closed_next + 1) % 16;
    if (teardown_now) {
        free(l);
    } else { /* the GPU is busy (a capture may be running): the worker tears it down */
        l->next = v->reap;
        v->reap = l;
    }
    pthread_cond_broadcast(&v->lane_cv);
    pthread_mutex_unlock(&v->mu);
    return NULL;
}

/* Under mu: ask a lane's thread to stop (it ends within ~10 ms, or at once when idle). */
static void lane_stop_locked(lane *l, const char *why) {
    if (__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) return;
    snprintf(l->why, sizeof(l->why), "%s", why);
    __atomic_store_n(&l->stop, 1, __ATOMIC_RELEASE);
    gr_lane_wake_server(l->ctl);
}

/* Stop the lanes on h (NULL: every lane) and wait until their threads have ended. The caller may
 * hold gpu_mu, not mu. */
static void lanes_close(svc *v, held *h, const char *why) {
    pthread_mutex_lock(&v->mu);
    for (lane *l = v->lanes; l; l = l->next)
        if (!h || l->h == h) {
            if (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) l->closer_reaps = 1;
            lane_stop_locked(l, why);
        }
    while (h ? h->nlanes > 0 : v->nlanes > 0) pthread_cond_wait(&v->lane_cv, &v->mu);
    pthread_mutex_unlock(&v->mu);
    lanes_reap(v); /* the caller is the worker: it holds gpu_mu, or no GPU work remains */
}

/* A held graph leaves the service: its lanes end first. */
static void held_retire(svc *v, held *h, const char *why) {
    lanes_close(v, h, why);
    held_free(h);
}

static json_t *lane_io_json(const io_buf *io, int n, const size_t *row_bytes) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        const gr_buffer *b = &io[i].view;
        json_t *shape = json_array();
        for (int d = 0; d < b->ndim; d++) json_array_append_new(shape, json_integer(b->shape[d]));
        json_array_append_new(a, json_pack("{s:s, s:s, s:o, s:I, s:I, s:I}", "buffer", b->name,
                                           "dtype", gr_dtype_name(b->dtype), "shape", shape,
                                           "bytes", (json_int_t)b->bytes, "offset",
                                           (json_int_t)io[i].sp->offset, "row_bytes",
                                           (json_int_t)row_bytes[i]));
    }
    return a;
}

static gr_status job_lane_open(svc *v, job *j, json_t **body, gr_error *err) {
    const gr_request *r = &j->req;
    held *h = NULL;
    GR_TRY(held_for_request(v, r, &h, err));
    lane *l = calloc(1, sizeof(*l));
    if (!l) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    l->v = v;
    l->h = h;
    l->conn = j->conn;
    l->spin_us = r->spin_us;
    l->nin = r->ninputs;
    l->nout = r->noutputs;
    gr_lane_region reg[2 * GR_PROTO_MAX_IO];
    char fields[2 * GR_PROTO_MAX_IO][32];
    gr_status st = GR_OK;
    for (int i = 0; i < l->nin + l->nout; i++) {
        int out = i >= l->nin, k = out ? i - l->nin : i;
        l->spec[i] = out ? r->outputs[k] : r->inputs[k];
        snprintf(fields[i], sizeof(fields[i]), "%s[%d]", out ? "outputs" : "inputs", k);
        io_buf *io = out ? &l->out[k] : &l->in[k];
        if (io_resolve(h, &l->spec[i], fields[i], io, r->batch, err) != GR_OK) {
            st = err->code;
            continue;
        }
        /* a region holds the whole buffer (the bucket's rows): a step may ask for fewer rows */
        io->view = h->ld.plans[0]->bufs[io->b];
        const gr_bucket_buffer *bb = h->group ? gr_bucket_find(&h->group->layout, l->spec[i].buffer) : NULL;
        /* rows count the bucket's units only where dimension 0 is the bucket's value itself (a
         * shape such as [B*T, d] changes with B but holds T rows a unit: served whole) */
        if (bb && bb->batch_dim == 0 && io->view.ndim > 0 && io->view.shape[0] == h->bucket)
            l->row_bytes[i] = bb->row_bytes;
        else if (bb && bb->batch_dim >= 0)
            l->fixed_rows = 1;
        reg[i] = (gr_lane_region){fields[i], l->spec[i].buffer, l->spec[i].offset, io->view.bytes};
    }
    l->bucket = h->group ? h->bucket : 0;
    l->rows = r->batch > 0 && l->bucket ? r->batch : l->bucket;
    int fd = -1;
    struct stat sb;
    if (st == GR_OK) {
        fd = shm_open(r->shm, O_RDWR, 0);
        if (fd < 0)
            st = gr_error_set(err, GR_ERR_INPUT, "shm",
                              "shared-memory segment %s: %s (the client creates it with shm_open "
                              "and keeps it while the lane is open)",
                              r->shm, strerror(errno));
        else if (fstat(fd, &sb) != 0 || sb.st_size < (off_t)GR_LANE_HEADER_BYTES)
            st = gr_error_set(err, GR_ERR_INPUT, "shm",
                              "segment %s holds %lld bytes: a lane needs its %u-byte control block "
                              "and then its buffers",
                              r->shm, (long long)sb.st_size, GR_LANE_HEADER_BYTES);
        else if ((size_t)sb.st_size > LANE_SEGMENT_MAX)
            st = gr_error_set(err, GR_ERR_INPUT, "shm",
                              "segment %s holds %lld bytes, more than a lane registers (%zu): make "
                              "it just large enough for the control block and the buffers",
                              r->shm, (long long)sb.st_size, LANE_SEGMENT_MAX);
    }
    if (st == GR_OK) st = gr_lane_check_layout((size_t)sb.st_size, reg, l->nin + l->nout, err);
    if (st == GR_OK) {
        l->map_len = (size_t)sb.st_size;
        l->map = mmap(NULL, l->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (l->map == MAP_FAILED) {
            l->map = NULL;
            st = gr_error_set(err, GR_ERR_INPUT, "shm", "cannot map %s: %s", r->shm, strerror(errno));
        }
    }
    if (fd >= 0) close(fd);
    pthread_mutex_lock(&v->mu);
    if (st == GR_OK) {
        l->seg_dev = sb.st_dev;
        l->seg_ino = sb.st_ino;
        for (int again = 1; again && st == GR_OK;) {
            again = 0;
            for (lane *o = v->lanes; o && st == GR_OK && !again; o = o->next) {
                if (o->seg_dev != sb.st_dev || o->seg_ino != sb.st_ino) continue;
                if (__atomic_load_n(&o->stop, __ATOMIC_ACQUIRE)) { /* ending: let it finish */
                    pthread_cond_wait(&v->lane_cv, &v->mu);
                    again = 1;
                } else {
                    st = gr_error_set(err, GR_ERR_INPUT, "shm",
                                      "segment %s already holds lane %llu's control block: give "
                                      "each lane its own segment (or close that lane first)",
                                      r->shm, (unsigned long long)o->id);
                }
            }
        }
    }
    if (st == GR_OK && v->nlanes >= LANE_MAX)
        st = gr_error_set(err, GR_ERR_SERVICE, "lane",
                          "%d lanes are open, the most the service runs (each has a thread): "
                          "close one (lane_close, or its connection) first",
                          v->nlanes);
    if (st == GR_OK) l->id = ++v->next_lane;
    pthread_mutex_unlock(&v->mu);
    if (st == GR_OK) {
        /* pinned: each copy is one DMA from/to the segment, and no CUDA call touches its pages
         * with the CPU (a client may shrink the segment: see on_sigbus) */
        cudaError_t hr = cudaHostRegister(l->map, l->map_len, cudaHostRegisterMapped);
        if (hr != cudaSuccess) { /* mapped is for the io graph's copy kernels; DMA needs less */
            cudaGetLastError();
            hr = cudaHostRegister(l->map, l->map_len, cudaHostRegisterDefault);
        }
        l->registered = hr == cudaSuccess;
        cudaGetLastError();
        for (int i = 0; i < l->nin + l->nout && !l->registered && st == GR_OK; i++) {
            /* refused: pinned staging per buffer, so no CUDA call ever reads the segment */
            const io_buf *io = i < l->nin ? &l->in[i] : &l->out[i - l->nin];
            if (cudaMallocHost(&l->stage[i], io->view.bytes ? io->view.bytes : 1) != cudaSuccess) {
                l->stage[i] = NULL;
                st = gr_error_set(err, GR_ERR_INPUT, "shm",
                                  "cudaHostRegister refused segment %s (%s), and %zu bytes of "
                                  "pinned staging for \"%s\" could not be had either: a served "
                                  "replay (replay with inputs/outputs) needs neither",
                                  r->shm, cudaGetErrorString(hr), io->view.bytes, io->view.name);
                cudaGetLastError();
            }
        }
        if (st == GR_OK &&
            (cudaEventCreate(&l->e0) != cudaSuccess || cudaEventCreate(&l->e1) != cudaSuccess))
            st = gr_cuda_fail(cudaGetLastError(), "cudaEventCreate", __FILE__, __LINE__, err);
        if (st == GR_OK) lane_io_graph(l);
    }
    pthread_t th;
    pthread_attr_t attr;
    if (st == GR_OK) {
        l->ctl = (gr_lane_ctl *)l->map;
        sigjmp_buf jb;
        sigjmp_buf *prev = seg_guard;
        if (sigsetjmp(jb, 1)) { /* shrunk since fstat */
            seg_guard = prev;
            l->ctl = NULL;
            st = gr_error_set(err, GR_ERR_INPUT, "shm",
                              "segment %s shrank while the lane was being opened (SIGBUS)", r->shm);
        } else {
            seg_guard = &jb;
            gr_lane_ctl_init(l->ctl, l->id);
            seg_guard = prev;
        }
    }
    if (st == GR_OK) {
        pthread_mutex_lock(&v->mu); /* registered before the thread can end */
        if (cancelled(j)) /* its connection closed meanwhile: conn_drop will not see this lane */
            st = cancel_error(j, err);
        if (st == GR_OK) {
            l->next = v->lanes;
            v->lanes = l;
            v->nlanes++;
            h->nlanes++;
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            int prc = pthread_create(&th, &attr, lane_main, l);
            pthread_attr_destroy(&attr);
            if (prc != 0) {
                v->lanes = l->next;
                v->nlanes--;
                h->nlanes--;
                st = gr_error_set(err, GR_ERR_SERVICE, "lane", "cannot start the lane's thread: %s",
                                  strerror(prc));
            }
        }
        pthread_mutex_unlock(&v->mu);
    }
    if (st != GR_OK) {
        lane_teardown(l); /* the worker holds gpu_mu */
        return st;
    }
    json_t *lj = json_pack("{s:I, s:s, s:s, s:I, s:i, s:I, s:I, s:b, s:b, s:b, s:s, s:o, s:o}", "id",
                           (json_int_t)l->id, "graph", h->name, "shm", r->shm, "segment_bytes",
                           (json_int_t)l->map_len, "spin_us", r->spin_us, "bucket",
                           (json_int_t)l->bucket, "rows", (json_int_t)l->rows, "fixed_rows",
                           l->fixed_rows, "registered", l->registered, "io_graph", lane_io(l),
                           "io_graph_why", lane_io(l) ? "" : l->io_why,
                           "inputs", lane_io_json(l->in, l->nin, l->row_bytes),
                           "outputs", lane_io_json(l->out, l->nout, l->row_bytes + l->nin));
    *body = json_pack("{s:o}", "lane", lj);
    if (*body && r->batch > 0 && h->group)
        json_object_set_new(*body, "bucket_run",
                            json_pack("{s:s, s:I, s:I}", "param", h->group->spec.param, "value",
                                      (json_int_t)h->bucket, "asked", (json_int_t)r->batch));
    slog("lane %llu open on \"%s\" (segment %s, %zu bytes, %d in, %d out, %s; %s%s)",
         (unsigned long long)l->id, h->name, r->shm, l->map_len, l->nin, l->nout,
         l->registered ? "registered" : "cudaHostRegister refused it: pinned staging",
         lane_io(l) ? "copies inside the graph" : "separate copies: ", lane_io(l) ? "" : l->io_why);
    return GR_OK;
}

static gr_status job_lane_close(svc *v, job *j, json_t **body, gr_error *err) {
    pthread_mutex_lock(&v->mu);
    lane *l = v->lanes;
    while (l && l->id != (uint64_t)j->req.lane) l = l->next;
    if (!l || l->conn != j->conn) {
        pthread_mutex_unlock(&v->mu);
        return gr_error_set(err, GR_ERR_USAGE, "lane",
                            "no lane %lld is open on this connection (a lane closes with the "
                            "connection that opened it, and with its graph)",
                            j->req.lane);
    }
    uint64_t steps = l->steps, id = l->id;
    if (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) l->closer_reaps = 1; /* we hold gpu_mu */
    lane_stop_locked(l, "closed by lane_close");
    for (;;) { /* until its thread has ended */
        lane *k = v->lanes;
        while (k && k->id != id) k = k->next;
        if (!k) break;
        pthread_cond_wait(&v->lane_cv, &v->mu);
    }
    for (int i = 0; i < 16; i++) /* the count its thread left when it ended */
        if (v->closed_id[i] == id) steps = v->closed_steps[i];
    pthread_mutex_unlock(&v->mu);
    lanes_reap(v);
    *body = json_pack("{s:{s:I, s:I}}", "lane", "id", (json_int_t)id, "steps", (json_int_t)steps);
    return GR_OK;
}

static gr_status job_sleep(svc *v, job *j, json_t **body, gr_error *err) {
    double end = gr_now_us() + j->req.ms * 1e3;
    long long total = j->req.ms, done = 0;
    while (gr_now_us() < end) {
        if (cancelled(j) && !j->req.hang) return cancel_error(j, err);
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
        done = total - (long long)((end - gr_now_us()) / 1e3);
        progress(v, j, "sleep", done < total ? done : total, total);
    }
    *body = json_pack("{s:i}", "slept_ms", j->req.ms);
    return GR_OK;
}

/* Test hook: a kernel writes through a bad pointer, which leaves a sticky error in the context
 * (cudaErrorIllegalAddress), exactly what a buggy kernel would do. */
static gr_status job_fault(svc *v, job *j, json_t **body, gr_error *err) {
    pthread_mutex_lock(&v->mu);
    int ready = v->dev_state == DEV_READY;
    int sm = v->dev.sm_count;
    gr_device_info dev = v->dev;
    pthread_mutex_unlock(&v->mu);
    if (!ready) return gr_error_set(err, GR_ERR_NODEV, NULL, "no CUDA device: no fault to make");
    static const char *wl_text =
        "{\"name\": \"fault\", \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [256], "
        "\"init\": \"ones\"}], \"outputs\": [\"x\"], \"ops\": [{\"kernel\": \"tiny\", \"inputs\": "
        "[\"x\"], \"outputs\": [\"x\"]}]}";
    gr_workload *wl = NULL;
    GR_TRY(gr_workload_load_string(wl_text, strlen(wl_text), "debug_fault", &wl, err));
    gr_plan *p = NULL;
    gr_target t = gr_target_from_info(&dev);
    const char *variant = gr_workload_variant(wl, NULL, err);
    gr_status st = variant ? gr_plan_resolve(wl, variant, &t, gr_kernel_find, gr_kernel_all_names, &p, err)
                           : err->code;
    gr_devstate *d = NULL;
    if (st == GR_OK) st = gr_devstate_create(p, sm, &d, err);
    if (st == GR_OK) {
        void *saved = d->dptr[0];
        d->dptr[0] = (void *)(uintptr_t)0x10;
        st = gr_exec_step(p, d, NULL, err);
        cudaError_t rc = cudaDeviceSynchronize();
        d->dptr[0] = saved;
        if (st == GR_OK && rc != cudaSuccess)
            st = gr_cuda_fail(rc, "debug_fault: kernel write through a bad pointer (on purpose)",
                              __FILE__, __LINE__, err);
        if (st == GR_OK) *body = json_pack("{s:b}", "fault", 0);
    }
    if (st != GR_ERR_CUDA) gr_devstate_destroy(d); /* else the context is gone: leave it */
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
    (void)j;
    return st;
}

static gr_status run_job(svc *v, job *j) {
    gr_error err;
    gr_error_clear(&err);
    json_t *body = NULL;
    double t0 = gr_now_us();
    gr_status st;
    if (cancelled(j)) st = cancel_error(j, &err);
    else switch (j->req.cmd) {
    case GR_CMD_CAPTURE: st = job_capture(v, j, &body, &err); break;
    case GR_CMD_REPLAY: st = job_replay(v, j, &body, &err); break;
    case GR_CMD_DROP: st = job_drop(v, j, &body, &err); break;
    case GR_CMD_LANE_OPEN: st = job_lane_open(v, j, &body, &err); break;
    case GR_CMD_LANE_CLOSE: st = job_lane_close(v, j, &body, &err); break;
    case GR_CMD_DEBUG_SLEEP: st = job_sleep(v, j, &body, &err); break;
    case GR_CMD_DEBUG_FAULT: st = job_fault(v, j, &body, &err); break;
    default: st = gr_error_set(&err, GR_ERR_INTERNAL, NULL, "command not queued"); break;
    }
    /* a failure reported as something else (a capture, a check) may still have left a sticky
     * error: never serve another request from a broken context */
    if (st != GR_OK && st != GR_ERR_CUDA && j->req.cmd != GR_CMD_DEBUG_SLEEP) {
        pthread_mutex_lock(&v->mu);
        int ready = v->dev_state == DEV_READY;
        pthread_mutex_unlock(&v->mu);
        cudaError_t sticky = cudaSuccess;
        if (ready) {
            cudaGetLastError();
            sticky = cudaDeviceSynchronize();
        }
        if (sticky != cudaSuccess) {
            gr_error_set(&err, GR_ERR_CUDA, NULL,
                         "the CUDA context is unusable after this failure (%s): the service exits; "
                         "run the command again (a fresh service starts)",
                         cudaGetErrorName(sticky));
            err.code = st = GR_ERR_CUDA;
        }
    }
    json_t *served = st == GR_OK && body ? json_object_get(body, "served") : NULL;
    if (served) { /* a served step: the request's time in the service, queue to reply */
        double now = gr_now_us();
        json_object_set_new(served, "queue_us", json_real(j->started_us - j->queued_us));
        json_object_set_new(served, "job_us", json_real(now - j->started_us));
        /* CLOCK_MONOTONIC, system-wide: a client on this machine can place its send and receive */
        json_object_set_new(served, "received_mono_us", json_real(j->queued_us));
        json_object_set_new(served, "replied_mono_us", json_real(now));
    }
    char *line;
    if (st == GR_OK) line = gr_reply_ok(j->req.id, j->req.cmd, body);
    else line = gr_reply_error(j->req.id, st, reply_field(&err), err.msg, body);
    double secs = (gr_now_us() - t0) / 1e6;
    char first[512];
    int served_step = j->req.cmd == GR_CMD_REPLAY && (j->req.ninputs || j->req.noutputs);
    if (st == GR_OK && !served_step) /* served steps: counted in job_serve, not a line each */
        slog("conn %llu: %s: ok in %.2f s", (unsigned long long)j->conn, j->what, secs);
    else if (cancelled(j))
        slog("conn %llu: %s: %s after %.2f s", (unsigned long long)j->conn, j->what,
             first_line(err.msg, first, sizeof(first)), secs);
    else
        slog("conn %llu: %s: error %s: %s", (unsigned long long)j->conn, j->what,
             gr_proto_code_name(st), first_line(err.msg, first, sizeof(first)));
    if (st == GR_ERR_CUDA) {
        pthread_mutex_lock(&v->mu);
        v->fatal = 1;
        snprintf(v->fatal_msg, sizeof(v->fatal_msg), "%s", err.msg);
        pthread_mutex_unlock(&v->mu);
    }
    post(v, j->conn, line, 1);
    return st;
}

static void *worker_main(void *arg) {
    svc *v = arg;
    gr_device_info info;
    gr_error e;
    gr_error_clear(&e);
    gr_status ds = gr_device_probe(v->o.device, &info, &e);
    pthread_mutex_lock(&v->mu);
    if (ds == GR_OK) {
        v->dev = info;
        v->dev_state = DEV_READY;
        v->max_memory = v->o.max_memory > 0 ? v->o.max_memory : 0.9 * (double)info.mem_total;
    } else {
        v->dev_state = DEV_NONE;
        snprintf(v->dev_error, sizeof(v->dev_error), "%s", e.msg);
    }
    double maxmem = v->max_memory;
    pthread_mutex_unlock(&v->mu);
    if (ds == GR_OK)
        slog("device %d: %s, %d SMs, cc %d.%d, %.1f GB; graphs may hold up to %.1f GB", info.ordinal,
             info.name, info.sm_count, info.cc_major, info.cc_minor, (double)info.mem_total / 1e9,
             maxmem / 1e9);
    else
        slog("no usable CUDA device (%s): capture and replay requests will fail with exit code 3",
             e.msg);
    int fatal = 0;
    for (;;) {
        pthread_mutex_lock(&v->mu);
        while (!v->qhead && !v->stopping) pthread_cond_wait(&v->cv, &v->mu);
        job *j = v->qhead;
        if (!j) {
            pthread_mutex_unlock(&v->mu);
            break;
        }
        v->qhead = j->next;
        if (!v->qhead) v->qtail = NULL;
        v->qlen--;
        v->running = j;
        j->started_us = gr_now_us();
        pthread_mutex_unlock(&v->mu);
        atomic_fetch_add(&v->gpu_wanted, 1); /* lanes step aside until the worker has it */
        pthread_mutex_lock(&v->gpu_mu);
        atomic_fetch_sub(&v->gpu_wanted, 1);
        lanes_reap(v); /* lanes that ended while the GPU was busy */
        gr_status st = run_job(v, j);
        pthread_mutex_unlock(&v->gpu_mu);
        pthread_mutex_lock(&v->mu);
        v->running = NULL;
        pthread_mutex_unlock(&v->mu);
        gr_request_clear(&j->req);
        free(j);
        if (st == GR_ERR_CUDA) {
            fatal = 1;
            break;
        }
    }
    if (v->served_since_log > 0)
        slog("served %ld steps in the last %.0f s", v->served_since_log,
             (gr_now_us() - v->served_log_us) / 1e6);
    pthread_mutex_lock(&v->mu);
    held *all[HARD_MAX_GRAPHS];
    int n = v->ngraphs;
    memcpy(all, v->graphs, (size_t)n * sizeof(held *));
    v->ngraphs = 0;
    v->latest[0] = '\0';
    pthread_mutex_unlock(&v->mu);
    /* the lanes end first, whatever the context's state: their threads use the service */
    lanes_close(v, NULL, fatal || v->fatal ? "a CUDA error made the context unusable: the service exits"
                                           : "the service is stopping");
    lanes_reap(v);
    if (fatal || v->fatal) {
        slog("the CUDA context is unusable: %d graphs are left to the process exit", n);
    } else {
        for (int i = 0; i < n; i++) held_free(all[i]);
        if (n) slog("freed %d graphs", n);
    }
    pthread_mutex_lock(&v->mu);
    v->worker_done = 1;
    pthread_mutex_unlock(&v->mu);
    wake(v);
    return NULL;
}

/* ---------------------------------------------------------------- connections */

static conn *find_conn(svc *v, uint64_t id) {
    for (int i = 0; i < v->nconns; i++)
        if (v->conns[i]->id == id) return v->conns[i];
    return NULL;
}

/* 0 ok, -1 the connection is dead */
static int conn_flush(conn *c) {
    size_t off = 0;
    int dead = 0;
    while (off < c->out_len) {
        ssize_t n = send(c->fd, c->out + off, c->out_len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            off += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        dead = 1; /* EPIPE, ECONNRESET: the client is gone */
        break;
    }
    if (off > 0) {
        memmove(c->out, c->out + off, c->out_len - off);
        c->out_len -= off;
        c->stalled_us = gr_now_us();
    }
    return dead ? -1 : 0;
}

static int conn_queue(conn *c, const char *line, size_t n) {
    if (c->out_len == 0) c->stalled_us = gr_now_us();
    if (c->out_len + n > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 4096;
        while (cap < c->out_len + n) cap *= 2;
        char *b = realloc(c->out, cap);
        if (!b) return -1;
        c->out = b;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, line, n);
    c->out_len += n;
    return conn_flush(c);
}

static void conn_free(conn *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    gr_linebuf_free(&c->in);
    free(c->out);
    free(c);
}

/* Forget a connection: its waiting requests go, its running one is cancelled. */
static void conn_drop(svc *v, conn *c, const char *why) {
    int cancelled_running = 0, removed = 0;
    pthread_mutex_lock(&v->mu);
    job **pp = &v->qhead;
    v->qtail = NULL;
    while (*pp) {
        job *j = *pp;
        if (j->conn == c->id) {
            *pp = j->next;
            v->qlen--;
            gr_request_clear(&j->req);
            free(j);
            removed++;
        } else {
            v->qtail = j;
            pp = &j->next;
        }
    }
    if (v->running && v->running->conn == c->id) {
        int expect = 0;
        atomic_compare_exchange_strong(&v->running->cancel, &expect, 1);
        cancelled_running = 1;
    }
    for (lane *l = v->lanes; l; l = l->next) /* a lane lives as long as its connection */
        if (l->conn == c->id) lane_stop_locked(l, "the connection that opened it closed");
    pthread_mutex_unlock(&v->mu);
    if (why)
        slog("conn %llu (uid %u, pid %d): %s%s", (unsigned long long)c->id, c->uid, c->pid, why,
             cancelled_running ? "; cancelling its running request"
             : removed         ? "; dropping its waiting request"
                               : "");
    for (int i = 0; i < v->nconns; i++)
        if (v->conns[i] == c) {
            v->conns[i] = v->conns[--v->nconns];
            break;
        }
    conn_free(c);
}

static void send_error(svc *v, conn *c, const void *id, gr_status code, const char *field,
                       const char *message) {
    char *line = gr_reply_error(id, code, field, message, NULL);
    if (!line) line = strdup("{\"schema_version\":1,\"ok\":false,\"error\":{\"code\":\"out_of_memory\","
                             "\"exit_code\":1,\"message\":\"out of memory\",\"field\":\"\"}}\n");
    if (line && conn_queue(c, line, strlen(line)) != 0) c->closing = 1;
    free(line);
    v->requests++;
}

static json_t *status_json(svc *v) {
    pthread_mutex_lock(&v->mu);
    json_t *dev;
    if (v->dev_state == DEV_READY) {
        char cc[16];
        snprintf(cc, sizeof(cc), "%d.%d", v->dev.cc_major, v->dev.cc_minor);
        dev = json_pack("{s:s, s:i, s:s, s:i, s:s, s:I, s:i, s:i}", "state", "ready", "ordinal",
                        v->dev.ordinal, "name", v->dev.name, "sm_count", v->dev.sm_count, "cc", cc,
                        "memory_bytes", (json_int_t)v->dev.mem_total, "driver_version",
                        v->dev.driver_version, "runtime_version", v->dev.runtime_version);
    } else if (v->dev_state == DEV_NONE) {
        dev = json_pack("{s:s, s:s}", "state", "none", "error", v->dev_error);
    } else {
        dev = json_pack("{s:s}", "state", "probing");
    }
    json_t *running = json_null();
    if (v->running)
        running = json_pack("{s:s, s:s, s:f}", "cmd", gr_cmd_name(v->running->req.cmd), "what",
                            v->running->what, "seconds", (gr_now_us() - v->running->started_us) / 1e6);
    json_t *s = json_pack(
        "{s:i, s:i, s:s, s:s, s:f, s:I, s:i, s:o, s:i, s:f, s:i, s:o, s:{s:i, s:f, s:i, s:I, s:I, s:f, "
        "s:i, s:i}, s:{s:o, s:i}}",
        "pid", (int)getpid(), "protocol", GR_PROTO_SCHEMA_VERSION, "socket", v->paths.socket, "log",
        v->o.foreground ? "(stderr)" : v->paths.log, "uptime_s", (gr_now_us() - v->started_us) / 1e6,
        "requests_served", (json_int_t)v->requests, "connections", v->nconns, "device", dev,
        "graphs", v->ngraphs, "graph_bytes", held_bytes_locked(v), "lanes", v->nlanes, "latest",
        v->latest[0] ? json_string(v->latest) : json_null(), "limits", "max_graphs",
        v->o.max_graphs, "max_memory_bytes", v->max_memory, "max_request_bytes",
        (int)GR_PROTO_MAX_LINE, "max_client_input_bytes", (json_int_t)CONN_IN_MAX,
        "max_client_output_bytes", (json_int_t)CONN_OUT_MAX, "client_timeout_s",
        v->o.client_timeout_ms / 1000.0, "max_clients",
        v->o.max_clients, "max_queue", v->o.max_queue, "queue", "running", running, "waiting",
        v->qlen);
    pthread_mutex_unlock(&v->mu);
    return s;
}

static json_t *list_json(svc *v) {
    json_t *arr = json_array();
    pthread_mutex_lock(&v->mu);
    for (int i = 0; i < v->ngraphs; i++) json_array_append_new(arr, held_json(v, v->graphs[i]));
    json_t *b = json_pack("{s:o, s:o}", "graphs", arr, "latest",
                          v->latest[0] ? json_string(v->latest) : json_null());
    pthread_mutex_unlock(&v->mu);
    return b;
}

static void begin_shutdown(svc *v, const char *why) {
    if (v->stopping) return;
    snprintf(v->stop_reason, sizeof(v->stop_reason), "%s", why);
    slog("stopping: %s", why);
    v->shutdown_us = gr_now_us();
    /* new clients start a fresh service at once (it waits for our lock) */
    if (v->listen_fd >= 0) {
        close(v->listen_fd);
        v->listen_fd = -1;
        unlink(v->paths.socket);
    }
    job *waiting;
    pthread_mutex_lock(&v->mu);
    v->stopping = 1;
    waiting = v->qhead;
    v->qhead = v->qtail = NULL;
    v->qlen = 0;
    if (v->running) {
        int expect = 0;
        atomic_compare_exchange_strong(&v->running->cancel, &expect, 2);
    }
    pthread_cond_broadcast(&v->cv);
    pthread_mutex_unlock(&v->mu);
    while (waiting) {
        job *j = waiting;
        waiting = j->next;
        conn *c = find_conn(v, j->conn);
        if (c) {
            char m[512];
            snprintf(m, sizeof(m), "the service is stopping (%s) and did not run this request: "
                     "run the command again (a fresh service starts)", why);
            send_error(v, c, j->req.id, GR_ERR_SERVICE, "", m);
            c->busy = 0;
        }
        gr_request_clear(&j->req);
        free(j);
    }
}

static void describe(const gr_request *r, char *buf, size_t size) {
    switch (r->cmd) {
    case GR_CMD_CAPTURE:
        snprintf(buf, size, "capture %.100s%s%s%s", r->workload, r->variant[0] ? " variant " : "",
                 r->variant, r->force ? " --force" : "");
        break;
    case GR_CMD_REPLAY:
        if (r->ninputs || r->noutputs)
            snprintf(buf, size, "serve %s%s%s: %d in, %d out", r->name[0] ? "\"" : "(latest)",
                     r->name, r->name[0] ? "\"" : "", r->ninputs, r->noutputs);
        else
            snprintf(buf, size, "replay %s%s%s x %d%s", r->name[0] ? "\"" : "(latest)", r->name,
                     r->name[0] ? "\"" : "", r->iters, r->compare_eager ? " --compare-eager" : "");
        break;
    case GR_CMD_DROP: snprintf(buf, size, "drop \"%s\"", r->name); break;
    case GR_CMD_DEBUG_SLEEP: snprintf(buf, size, "debug_sleep %d ms", r->ms); break;
    default: snprintf(buf, size, "%s", gr_cmd_name(r->cmd)); break;
    }
}

static void handle_line(svc *v, conn *c, const char *line, size_t len) {
    gr_request req;
    gr_error err;
    gr_error_clear(&err);
    gr_status st = gr_request_parse(line, len, &req, &err);
    if (st != GR_OK) {
        char first[512];
        slog("conn %llu: bad request: %s", (unsigned long long)c->id,
             first_line(err.msg, first, sizeof(first)));
        send_error(v, c, req.id, st, err.path[0] ? err.path : "", err.msg);
        gr_request_clear(&req);
        return;
    }
    if ((req.cmd == GR_CMD_DEBUG_SLEEP || req.cmd == GR_CMD_DEBUG_FAULT) && !v->o.test_hooks) {
        send_error(v, c, req.id, GR_ERR_PROTOCOL, "cmd",
                   "cmd: this command is a test hook, off in this service (it is on only in a "
                   "service started with GRAPHRUN_SERVICE_TEST_HOOKS=1)");
        gr_request_clear(&req);
        return;
    }
    char what[160];
    describe(&req, what, sizeof(what));
    if (!gr_cmd_is_queued(req.cmd)) {
        json_t *body = NULL;
        if (req.cmd == GR_CMD_STATUS) body = status_json(v);
        else if (req.cmd == GR_CMD_LIST) body = list_json(v);
        else if (req.cmd == GR_CMD_STOP) body = json_pack("{s:b, s:i}", "stopping", 1, "pid", (int)getpid());
        char *out = gr_reply_ok(req.id, req.cmd, body);
        if (out && conn_queue(c, out, strlen(out)) != 0) c->closing = 1;
        if (!out) send_error(v, c, req.id, GR_ERR_NOMEM, "", "out of memory");
        else v->requests++;
        free(out);
        slog("conn %llu (uid %u, pid %d): %s", (unsigned long long)c->id, c->uid, c->pid, what);
        if (req.cmd == GR_CMD_STOP) {
            char why[128];
            snprintf(why, sizeof(why), "stop requested by pid %d", c->pid);
            begin_shutdown(v, why);
        }
        gr_request_clear(&req);
        return;
    }
    pthread_mutex_lock(&v->mu);
    int refuse = v->stopping || v->fatal;
    int full = v->qlen >= v->o.max_queue;
    int ahead = v->qlen + (v->running ? 1 : 0);
    pthread_mutex_unlock(&v->mu);
    if (refuse || full) {
        char m[512];
        if (refuse)
            snprintf(m, sizeof(m), "the service is stopping (%s): run the command again (a fresh "
                     "service starts)", v->stop_reason[0] ? v->stop_reason : "after a CUDA error");
        else
            snprintf(m, sizeof(m), "the GPU queue is full (%d requests waiting, --max-queue): try "
                     "again when `graphrun status` shows fewer", v->o.max_queue);
        send_error(v, c, req.id, GR_ERR_SERVICE, "", m);
        gr_request_clear(&req);
        return;
    }
    job *j = calloc(1, sizeof(*j));
    if (!j) {
        send_error(v, c, req.id, GR_ERR_NOMEM, "", "out of memory");
        gr_request_clear(&req);
        return;
    }
    j->conn = c->id;
    j->req = req; /* the job owns the id now */
    atomic_init(&j->cancel, 0);
    snprintf(j->what, sizeof(j->what), "%s", what);
    j->queued_us = gr_now_us();
    c->busy = 1;
    int served_step = req.cmd == GR_CMD_REPLAY && (req.ninputs || req.noutputs);
    if (!served_step || ahead)
        slog("conn %llu (uid %u, pid %d): %s%s", (unsigned long long)c->id, c->uid, c->pid, what,
             ahead ? " (queued behind other GPU work)" : "");
    if (ahead && req.progress) {
        char *p = gr_reply_progress(req.id, "queued", ahead, ahead);
        if (p && conn_queue(c, p, strlen(p)) != 0) c->closing = 1;
        free(p);
    }
    pthread_mutex_lock(&v->mu);
    if (v->qtail) v->qtail->next = j;
    else v->qhead = j;
    v->qtail = j;
    v->qlen++;
    pthread_cond_signal(&v->cv);
    pthread_mutex_unlock(&v->mu);
}

/* Parse buffered lines while the connection may take another request and its replies are being
 * read (a client that pipelines requests without reading gets backpressure, not our memory). */
static void conn_process(svc *v, conn *c) {
    while (!c->busy && !c->closing && c->out_len < CONN_OUT_MAX) {
        char *line;
        size_t len;
        int rc = gr_linebuf_next(&c->in, &line, &len);
        if (rc == 0) return;
        if (rc < 0) {
            char m[256];
            snprintf(m, sizeof(m), "request line longer than %u bytes (the limit): closing the "
                     "connection", GR_PROTO_MAX_LINE);
            slog("conn %llu (uid %u, pid %d): %s", (unsigned long long)c->id, c->uid, c->pid, m);
            send_error(v, c, NULL, GR_ERR_PROTOCOL, "request", m);
            c->closing = 1;
            return;
        }
        c->last_us = gr_now_us();
        if (len > 0) handle_line(v, c, line, len);
        free(line);
    }
}

static void accept_clients(svc *v) {
    for (;;) {
        int fd = accept4(v->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != ECONNABORTED)
                slog("accept: %s", strerror(errno));
            return;
        }
        struct ucred cred;
        socklen_t len = sizeof(cred);
        memset(&cred, 0, sizeof(cred));
        const char *refuse = NULL;
        char m[256];
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
            refuse = "cannot read the peer's credentials";
        } else if (cred.uid != geteuid()) {
            snprintf(m, sizeof(m), "refused: this service serves uid %u only, and the client runs "
                     "as uid %u", (unsigned)geteuid(), (unsigned)cred.uid);
            refuse = m;
            slog("refused a connection from uid %u (pid %d): only uid %u may use this service",
                 (unsigned)cred.uid, (int)cred.pid, (unsigned)geteuid());
        } else if (v->nconns >= v->o.max_clients || v->nconns >= HARD_MAX_CLIENTS) {
            snprintf(m, sizeof(m), "too many connections (%d, --max-clients): try again shortly",
                     v->nconns);
            refuse = m;
            slog("refused a connection from pid %d: %s", (int)cred.pid, m);
        }
        if (refuse) {
            char *line = gr_reply_error(NULL, GR_ERR_SERVICE, "", refuse, NULL);
            if (line) {
                ssize_t rc = send(fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT);
                (void)rc;
            }
            free(line);
            close(fd);
            continue;
        }
        conn *c = calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            continue;
        }
        c->id = ++v->next_conn;
        c->fd = fd;
        c->uid = (unsigned)cred.uid;
        c->pid = (int)cred.pid;
        gr_linebuf_init(&c->in, GR_PROTO_MAX_LINE);
        c->last_us = gr_now_us();
        v->conns[v->nconns++] = c;
    }
}

static void conn_read(svc *v, conn *c) {
    char buf[READ_CHUNK];
    while (c->in.len + sizeof(buf) <= CONN_IN_MAX) {
        ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0) {
            if (gr_linebuf_append(&c->in, buf, (size_t)n) != GR_OK) {
                c->closing = 1;
                return;
            }
            c->last_us = gr_now_us();
            /* stop reading once a too-long line is certain; conn_process reports it */
            if (c->in.len >= GR_PROTO_MAX_LINE && !memchr(c->in.buf, '\n', c->in.len)) return;
            if ((size_t)n < sizeof(buf)) return;
            continue;
        }
        if (n == 0) {
            c->read_closed = 1;
            return;
        }
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) c->read_closed = 2; /* reset: gone */
        return;
    }
}

/* Deliver what the worker posted. */
static void drain_outbox(svc *v) {
    pthread_mutex_lock(&v->mu);
    msg *m = v->ohead;
    v->ohead = v->otail = NULL;
    pthread_mutex_unlock(&v->mu);
    while (m) {
        msg *next = m->next;
        conn *c = v->abandoned ? NULL : find_conn(v, m->conn); /* its reply was already sent */
        if (c) {
            if (m->final) {
                const char *fallback = "{\"schema_version\":1,\"ok\":false,\"error\":{\"code\":"
                                       "\"out_of_memory\",\"exit_code\":1,\"message\":\"the "
                                       "service ran out of memory making the reply\",\"field\":\"\"}}\n";
                const char *line = m->line ? m->line : fallback;
                if (conn_queue(c, line, strlen(line)) != 0) c->closing = 1;
                c->busy = 0;
                c->last_us = gr_now_us();
                v->requests++;
            } else if (c->out_len < PROGRESS_DROP_BYTES) {
                if (conn_queue(c, m->line, strlen(m->line)) != 0) c->closing = 1;
            } else {
                c->progress_dropped++;
            }
        }
        free(m->line);
        free(m);
        m = next;
    }
}

/* ---------------------------------------------------------------- startup */

static void notify(svc *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void notify(svc *v, const char *fmt, ...) {
    if (v->o.notify_fd < 0) return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    for (char *p = line; *p; p++)
        if (*p == '\n') *p = ' ';
    dprintf(v->o.notify_fd, "%s\n", line);
    close(v->o.notify_fd);
    v->o.notify_fd = -1;
}

static int try_connect_path(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
    close(fd);
    return ok;
}

/* Take the lifetime lock, or find the service that has it. 1: locked, 0: another one runs. */
static gr_status take_lock(svc *v, int *locked, gr_error *err) {
    *locked = 0;
    v->lock_fd = open(v->paths.lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (v->lock_fd < 0)
        return gr_error_set(err, GR_ERR_IO, v->paths.lock, "cannot open the service lock file: %s",
                            strerror(errno));
    double deadline = gr_now_us() + LOCK_WAIT_US;
    for (;;) {
        if (flock(v->lock_fd, LOCK_EX | LOCK_NB) == 0) {
            *locked = 1;
            return GR_OK;
        }
        if (errno != EWOULDBLOCK && errno != EINTR)
            return gr_error_set(err, GR_ERR_IO, v->paths.lock, "cannot lock: %s", strerror(errno));
        if (try_connect_path(v->paths.socket)) return GR_OK; /* it runs and answers */
        if (gr_now_us() > deadline)
            return gr_error_set(err, GR_ERR_SERVICE, v->paths.lock,
                                "another graphrun service (pid %d) holds the lock but does not "
                                "answer on %s after %.0f s; if it is stuck, stop it (kill %d)",
                                gr_service_lock_pid(&v->paths), v->paths.socket, LOCK_WAIT_US / 1e6,
                                gr_service_lock_pid(&v->paths));
        struct timespec ts = {0, 20 * 1000 * 1000}; /* it is starting, or on its way out */
        nanosleep(&ts, NULL);
    }
}

static gr_status bind_socket(svc *v, gr_error *err) {
    struct stat st;
    if (lstat(v->paths.socket, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return gr_error_set(err, GR_ERR_IO, v->paths.socket,
                                "exists and is not a socket: remove it, or choose another socket "
                                "path (--socket)");
        /* we hold the lock, so no service of ours is behind it: a crashed one left it */
        if (unlink(v->paths.socket) != 0)
            return gr_error_set(err, GR_ERR_IO, v->paths.socket,
                                "cannot remove the stale socket file: %s", strerror(errno));
        slog("removed the stale socket file %s (left by a service that did not stop cleanly)",
             v->paths.socket);
    }
    v->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (v->listen_fd < 0)
        return gr_error_set(err, GR_ERR_IO, v->paths.socket, "socket: %s", strerror(errno));
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", v->paths.socket);
    mode_t old = umask(0177);
    int rc = bind(v->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
    int e = errno;
    umask(old);
    if (rc != 0)
        return gr_error_set(err, GR_ERR_IO, v->paths.socket, "cannot bind the socket: %s",
                            strerror(e));
    if (chmod(v->paths.socket, 0600) != 0 || listen(v->listen_fd, 64) != 0) {
        e = errno;
        unlink(v->paths.socket);
        return gr_error_set(err, GR_ERR_IO, v->paths.socket, "cannot listen on the socket: %s",
                            strerror(e));
    }
    return GR_OK;
}

/* ---------------------------------------------------------------- the loop */

/* Read more only while the connection may take a request, its replies are being read and less
 * than one request line is buffered. */
static int wants_input(const conn *c) {
    return !c->busy && !c->closing && !c->read_closed && c->out_len < CONN_OUT_MAX &&
           c->in.len + READ_CHUNK <= CONN_IN_MAX;
}

/* Drop what is finished: clients silent or not reading past the timeout, peers that closed
 * with no complete request left, connections closing after their last reply. */
static void conn_sweep(svc *v, double timeout_us) {
    double now = gr_now_us();
    for (int i = v->nconns - 1; i >= 0; i--) {
        if (i >= v->nconns) continue;
        conn *c = v->conns[i];
        if (c->out_len && now - c->stalled_us > timeout_us) {
            conn_drop(v, c, "client did not read its reply: timed out");
            continue;
        }
        if (wants_input(c) && now - c->last_us > timeout_us) {
            if (!gr_linebuf_pending(&c->in)) {
                conn_drop(v, c, NULL); /* idle */
                continue;
            }
            char m[200];
            snprintf(m, sizeof(m), "timed out: the request line was not completed within %g s "
                     "(end every request with a newline)", timeout_us / 1e6);
            slog("conn %llu (uid %u, pid %d): %s", (unsigned long long)c->id, c->uid, c->pid, m);
            send_error(v, c, NULL, GR_ERR_PROTOCOL, "request", m);
            c->closing = 1;
        }
        if (c->busy || c->out_len) continue;
        int complete_line = c->in.len > 0 && memchr(c->in.buf, '\n', c->in.len) != NULL;
        if (c->closing || (c->read_closed && !complete_line)) conn_drop(v, c, NULL);
    }
}

/* The running request did not notice its cancellation within STOP_GRACE_US: answer its client
 * for it and let the service exit without the worker (the process ends; the driver frees the
 * device memory). */
static void abandon_worker(svc *v) {
    pthread_mutex_lock(&v->mu);
    v->abandoned = 1;
    uint64_t conn_id = v->running ? v->running->conn : 0;
    json_t *id = v->running && v->running->req.id ? json_deep_copy(v->running->req.id) : NULL;
    char what[160] = "";
    double secs = 0;
    if (v->running) {
        snprintf(what, sizeof(what), "%s", v->running->what);
        secs = (gr_now_us() - v->running->started_us) / 1e6;
    }
    pthread_mutex_unlock(&v->mu);
    slog("the running request (%s, %.1f s) did not stop within %.1f s of the cancellation: "
         "exiting without waiting for it",
         what[0] ? what : "none", secs, STOP_GRACE_US / 1e6);
    conn *c = conn_id ? find_conn(v, conn_id) : NULL;
    if (c) {
        char m[512];
        snprintf(m, sizeof(m), "cancelled: the service is stopping (%s); this request (%s) did not "
                 "stop within %.1f s and was abandoned: run the command again (a fresh service "
                 "starts)", v->stop_reason, what, STOP_GRACE_US / 1e6);
        send_error(v, c, id, GR_ERR_SERVICE, "", m);
        c->busy = 0;
    }
    json_decref(id);
}

static void io_loop(svc *v) {
    struct pollfd *pfd = calloc((size_t)HARD_MAX_CLIENTS + 2, sizeof(*pfd));
    conn **pconn = calloc((size_t)HARD_MAX_CLIENTS + 2, sizeof(*pconn));
    if (!pfd || !pconn) {
        free(pfd);
        free(pconn);
        begin_shutdown(v, "out of memory");
        return;
    }
    double timeout_us = v->o.client_timeout_ms * 1e3;
    double flush_from_us = 0; /* when the worker was done (or abandoned) after a stop */
    for (;;) {
        if (got_signal && !v->stopping) {
            char why[64];
            snprintf(why, sizeof(why), "signal %d", (int)got_signal);
            begin_shutdown(v, why);
        }
        pthread_mutex_lock(&v->mu);
        int fatal = v->fatal, done = v->worker_done;
        char fatal_msg[1024];
        snprintf(fatal_msg, sizeof(fatal_msg), "%s", v->fatal_msg);
        pthread_mutex_unlock(&v->mu);
        if (fatal && !v->stopping) {
            char why[1200];
            char first[600];
            snprintf(why, sizeof(why), "a CUDA error made the context unusable (%s)",
                     first_line(fatal_msg, first, sizeof(first)));
            begin_shutdown(v, why);
        }
        if (v->stopping && !done && !v->abandoned && gr_now_us() - v->shutdown_us > STOP_GRACE_US)
            abandon_worker(v);
        if (v->stopping && (done || v->abandoned)) {
            drain_outbox(v); /* the worker's last replies */
            if (flush_from_us == 0) flush_from_us = gr_now_us();
            int pending = 0;
            for (int i = 0; i < v->nconns; i++) pending |= v->conns[i]->out_len > 0;
            if (!pending || gr_now_us() - flush_from_us > SHUTDOWN_FLUSH_US) break;
        }
        int n = 0;
        pfd[n] = (struct pollfd){v->wake[0], POLLIN, 0};
        pconn[n++] = NULL;
        int listen_slot = -1;
        if (v->listen_fd >= 0) {
            listen_slot = n;
            pfd[n] = (struct pollfd){v->listen_fd, POLLIN, 0};
            pconn[n++] = NULL;
        }
        double now = gr_now_us(), next = now + 1e6;
        for (int i = 0; i < v->nconns; i++) {
            conn *c = v->conns[i];
            short ev = 0;
            if (wants_input(c)) ev |= POLLIN;
            if (c->out_len) ev |= POLLOUT;
            pfd[n] = (struct pollfd){c->fd, ev, 0};
            pconn[n++] = c;
            if (c->out_len && c->stalled_us + timeout_us < next) next = c->stalled_us + timeout_us;
            if (wants_input(c) && c->last_us + timeout_us < next) next = c->last_us + timeout_us;
        }
        int wait_ms = (int)((next - now) / 1e3) + 1;
        if (wait_ms < 1) wait_ms = 1;
        if (v->stopping && wait_ms > 50) wait_ms = 50;
        int r = poll(pfd, (nfds_t)n, wait_ms);
        if (r < 0 && errno != EINTR) {
            slog("poll: %s", strerror(errno));
            begin_shutdown(v, "poll failed");
        }
        if (r > 0 && (pfd[0].revents & POLLIN)) {
            char buf[256];
            while (read(v->wake[0], buf, sizeof(buf)) > 0) {
            }
        }
        drain_outbox(v);
        if (r > 0 && listen_slot >= 0 && v->listen_fd >= 0 && (pfd[listen_slot].revents & POLLIN))
            accept_clients(v);
        for (int k = 0; r > 0 && k < n; k++) {
            conn *c = pconn[k];
            if (!c || !pfd[k].revents) continue;
            if (pfd[k].revents & (POLLERR | POLLNVAL)) {
                conn_drop(v, c, "connection error");
                continue;
            }
            if ((pfd[k].revents & POLLHUP) && !(pfd[k].revents & POLLIN)) {
                /* the peer closed both directions: nobody reads replies any more */
                conn_drop(v, c, c->busy ? "client went away" : NULL);
                continue;
            }
            if (pfd[k].revents & POLLIN) conn_read(v, c);
            if (c->read_closed == 2) {
                conn_drop(v, c, c->busy ? "client went away (connection reset)" : NULL);
                continue;
            }
            if (pfd[k].revents & POLLOUT) {
                if (conn_flush(c) != 0) {
                    conn_drop(v, c, "client went away before reading its reply");
                    continue;
                }
            }
        }
        /* closes first (status counts live connections), then requests, then what they ended */
        conn_sweep(v, timeout_us);
        for (int i = v->nconns - 1; i >= 0; i--)
            if (i < v->nconns) conn_process(v, v->conns[i]);
        conn_sweep(v, timeout_us);
    }
    free(pfd);
    free(pconn);
}

gr_status gr_service_run(const gr_service_opts *o, int *already_running, int *abandoned,
                         gr_error *err) {
    *already_running = 0;
    *abandoned = 0;
    svc *v = calloc(1, sizeof(*v));
    if (!v) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of memory");
    v->o = *o;
    v->listen_fd = v->lock_fd = -1;
    v->wake[0] = v->wake[1] = -1;
    if (v->o.max_graphs < 1) v->o.max_graphs = 1;
    if (v->o.max_graphs > HARD_MAX_GRAPHS) v->o.max_graphs = HARD_MAX_GRAPHS;
    if (v->o.max_clients < 1) v->o.max_clients = 1;
    if (v->o.max_clients > HARD_MAX_CLIENTS) v->o.max_clients = HARD_MAX_CLIENTS;
    if (v->o.max_queue < 1) v->o.max_queue = 1;
    if (v->o.client_timeout_ms < 100) v->o.client_timeout_ms = 100;
    v->max_memory = o->max_memory;
    pthread_mutex_init(&v->mu, NULL);
    pthread_cond_init(&v->cv, NULL);
    pthread_mutex_init(&v->gpu_mu, NULL);
    pthread_cond_init(&v->lane_cv, NULL);
    /* a client gone before it reads a reply (or the notify pipe) must not kill the service */
    struct sigaction old_int, old_term, old_hup, old_pipe, ign;
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &old_pipe);
    struct sigaction bus, old_bus;
    memset(&bus, 0, sizeof(bus));
    bus.sa_sigaction = on_sigbus;
    bus.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&bus.sa_mask);
    sigaction(SIGBUS, &bus, &old_bus);
    gr_status st = gr_service_paths_resolve(o->socket, &v->paths, err);
    if (st == GR_OK) st = gr_service_dir_prepare(&v->paths, err);
    int locked = 0;
    if (st == GR_OK) st = take_lock(v, &locked, err);
    if (st == GR_OK && !locked) {
        int pid = gr_service_lock_pid(&v->paths);
        *already_running = 1;
        notify(v, "running %d", pid);
        st = gr_error_set(err, GR_ERR_SERVICE, v->paths.socket,
                          "a replay service is already running here (pid %d); `graphrun stop` "
                          "stops it",
                          pid);
    }
    if (st == GR_OK && !o->foreground) {
        /* from here on, everything written to stderr (ours, CUDA's) goes to the log */
        struct stat ls;
        if (stat(v->paths.log, &ls) == 0 && ls.st_size > LOG_KEEP_BYTES) {
            char old[PATH_MAX + 8];
            snprintf(old, sizeof(old), "%s.1", v->paths.log);
            rename(v->paths.log, old); /* keep one previous log */
        }
        int fd = open(v->paths.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) st = gr_error_set(err, GR_ERR_IO, v->paths.log, "cannot open the log: %s", strerror(errno));
        else {
            dup2(fd, 2);
            close(fd);
        }
    }
    if (st == GR_OK) st = bind_socket(v, err);
    if (st == GR_OK && pipe2(v->wake, O_NONBLOCK | O_CLOEXEC) != 0)
        st = gr_error_set(err, GR_ERR_IO, NULL, "pipe: %s", strerror(errno));
    if (st == GR_OK) {
        got_signal = 0;
        signal_wake_fd = v->wake[1];
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
        sigaction(SIGHUP, &sa, &old_hup);
        /* the worker (and CUDA's threads, which inherit its mask) never take these signals */
        sigset_t block, prev;
        sigemptyset(&block);
        sigaddset(&block, SIGINT);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &block, &prev);
        int rc = pthread_create(&v->worker, NULL, worker_main, v);
        pthread_sigmask(SIG_SETMASK, &prev, NULL);
        if (rc != 0) st = gr_error_set(err, GR_ERR_SERVICE, NULL, "cannot start the GPU worker: %s", strerror(rc));
        else v->worker_started = 1;
    }
    if (st == GR_OK) {
        if (ftruncate(v->lock_fd, 0) == 0) dprintf(v->lock_fd, "%d\n", (int)getpid());
        v->started_us = gr_now_us();
        v->started = time(NULL);
        slog("service started: socket %s, uid %u, limits: %d graphs, %s device memory, %d clients, "
             "%d waiting requests, client timeout %.1f s%s",
             v->paths.socket, (unsigned)geteuid(), v->o.max_graphs,
             v->o.max_memory > 0 ? "explicit" : "90% of the", v->o.max_clients, v->o.max_queue,
             v->o.client_timeout_ms / 1000.0, v->o.test_hooks ? "; TEST HOOKS ON" : "");
        notify(v, "ready %d", (int)getpid());
        io_loop(v);
    } else if (!*already_running) {
        notify(v, "error %s %s", gr_proto_code_name(err->code), err->msg);
    }
    if (v->worker_started && v->abandoned) {
        /* The worker still runs and uses v, its mutex and the wake pipe: leave them (and the
         * graphs) to the process exit, which the caller makes at once. The socket is gone
         * already; releasing the lock lets a fresh service start. */
        for (int i = 0; i < v->nconns; i++) conn_flush(v->conns[i]);
        slog("service stopped (%s) without waiting for its running request; %ld requests served",
             v->stop_reason, v->requests);
        if (v->lock_fd >= 0) close(v->lock_fd);
        if (v->o.notify_fd >= 0) close(v->o.notify_fd);
        *abandoned = 1;
        return gr_error_set(err, GR_ERR_SERVICE, NULL,
                            "the service stopped (%s) without waiting for its running request, "
                            "which did not stop within %.1f s of its cancellation (see the log)",
                            v->stop_reason, STOP_GRACE_US / 1e6);
    }
    if (v->worker_started) {
        if (!v->stopping) begin_shutdown(v, "exiting");
        pthread_join(v->worker, NULL);
        drain_outbox(v);
        while (v->nconns) conn_drop(v, v->conns[v->nconns - 1], NULL);
        signal_wake_fd = -1;
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        sigaction(SIGHUP, &old_hup, NULL);
        if (v->fatal) {
            st = gr_error_set(err, GR_ERR_CUDA, NULL, "the service stopped after a CUDA error: %s",
                              v->fatal_msg);
        }
        slog("service stopped (%s); %ld requests served", v->stop_reason, v->requests);
    }
    if (v->listen_fd >= 0) {
        close(v->listen_fd);
        unlink(v->paths.socket);
    }
    for (int i = 0; i < 2; i++)
        if (v->wake[i] >= 0) close(v->wake[i]);
    if (v->lock_fd >= 0) close(v->lock_fd); /* releases the lock: a new service may start */
    if (v->o.notify_fd >= 0) close(v->o.notify_fd);
    /* whatever the worker posted last, nobody will read it */
    for (msg *m = v->ohead; m;) {
        msg *next = m->next;
        free(m->line);
        free(m);
        m = next;
    }
    sigaction(SIGPIPE, &old_pipe, NULL);
    sigaction(SIGBUS, &old_bus, NULL);
    pthread_mutex_destroy(&v->mu);
    pthread_cond_destroy(&v->cv);
    pthread_mutex_destroy(&v->gpu_mu);
    pthread_cond_destroy(&v->lane_cv);
    free(v);
    return st;
}
