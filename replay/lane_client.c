/* The C client's side of lanes: make, size and map the segment, lane_open / lane_close. The
 * doorbell itself is replay/lane.c (gr_lane_step). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "replay/client.h"
#include "replay/lane.h"

static size_t align64(size_t x) {
    return (x + 63) & ~(size_t)63;
}

/* Graph object g (a `list` entry) answers to `graph`: its own name, or its bucket group's. */
static int graph_is(json_t *g, const char *graph) {
    const char *gn = json_string_value(json_object_get(g, "name"));
    json_t *bk = json_object_get(g, "bucket");
    const char *base = bk ? json_string_value(json_object_get(bk, "group")) : NULL;
    return (gn && !strcmp(gn, graph)) || (base && !strcmp(base, graph));
}

static int graph_held(json_t *graphs, const char *graph) {
    size_t gi;
    json_t *g;
    json_array_foreach(graphs, gi, g) if (graph_is(g, graph)) return 1;
    return 0;
}

/* Buffer bytes of `graph` (or, for a bucket group's name, the largest over its buckets). */
static size_t buffer_bytes(json_t *graphs, const char *graph, const char *name) {
    size_t best = 0;
    size_t gi;
    json_t *g;
    json_array_foreach(graphs, gi, g) {
        if (!graph_is(g, graph)) continue;
        size_t bi;
        json_t *b;
        json_array_foreach(json_object_get(g, "buffers"), bi, b) {
            const char *bn = json_string_value(json_object_get(b, "name"));
            size_t bytes = (size_t)json_integer_value(json_object_get(b, "bytes"));
            if (bn && !strcmp(bn, name) && bytes > best) best = bytes;
        }
    }
    return best;
}

static gr_status reply_error(const gr_reply *r, gr_error *err) {
    return gr_error_set(err, r->code, r->field[0] ? r->field : NULL, "%s", r->message);
}

gr_status gr_client_lane_open(gr_client *c, const char *graph, const char *const *inputs, int nin,
                              const char *const *outputs, int nout, long long batch, int spin_us,
                              gr_client_lane **out, gr_error *err) {
    *out = NULL;
    if (nin < 0 || nout < 0 || nin > GR_PROTO_MAX_IO || nout > GR_PROTO_MAX_IO)
        return gr_error_set(err, GR_ERR_USAGE, NULL, "a lane takes at most %d inputs and %d outputs",
                            GR_PROTO_MAX_IO, GR_PROTO_MAX_IO);
    /* the graph's name (the latest when none) and its buffers' sizes */
    gr_reply r;
    json_t *req = json_pack("{s:i, s:s}", "schema_version", 1, "cmd", "list");
    gr_status st = gr_client_call(c, req, -1, NULL, NULL, &r, err);
    json_decref(req);
    if (st != GR_OK) return st;
    if (!r.ok) {
        st = reply_error(&r, err);
        gr_reply_clear(&r);
        return st;
    }
    json_t *body = r.body;
    char name[GR_PROTO_NAME_MAX + 1];
    const char *latest = json_string_value(json_object_get(body, "latest"));
    snprintf(name, sizeof(name), "%s", graph ? graph : latest ? latest : "");
    if (!graph_held(json_object_get(body, "graphs"), name)) {
        st = gr_error_set(err, GR_ERR_USAGE, "name",
                          name[0] ? "no graph named \"%s\" is held (`graphrun list` shows them)"
                                  : "no graph captured yet%s: `graphrun capture WORKLOAD` first",
                          name);
        gr_reply_clear(&r);
        return st;
    }
    gr_client_lane *l = calloc(1, sizeof(*l));
    if (!l) {
        gr_reply_clear(&r);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    size_t off = GR_LANE_HEADER_BYTES;
    for (int i = 0; i < nin + nout; i++) {
        int o = i >= nin;
        const char *bn = o ? outputs[i - nin] : inputs[i];
        char field[48];
        snprintf(field, sizeof(field), "%s[%d]", o ? "outputs" : "inputs", o ? i - nin : i);
        size_t bytes = buffer_bytes(json_object_get(body, "graphs"), name, bn ? bn : "");
        if (!bn || !bytes)
            st = gr_error_set(err, GR_ERR_INPUT, field,
                              "\"%s\": no such buffer in graph \"%s\" (`graphrun list --json -` "
                              "shows its buffers)",
                              bn ? bn : "(null)", name);
        snprintf(l->io[i].buffer, sizeof(l->io[i].buffer), "%s", bn ? bn : "");
        l->io[i].output = o;
        l->io[i].bytes = bytes;
        l->io[i].data = (void *)off; /* an offset until the segment is mapped */
        off = align64(off + bytes);
    }
    gr_reply_clear(&r);
    l->n = nin + nout;
    if (st != GR_OK) {
        free(l);
        return st;
    }
    long pg = sysconf(_SC_PAGESIZE);
    l->map_len = (off + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
    static atomic_int counter;
    int fd = -1;
    for (int tries = 0; tries < 64 && fd < 0; tries++) { /* a name left by a dead process: next */
        snprintf(l->shm, sizeof(l->shm), "/gr-lane-%d-%d", (int)getpid(),
                 atomic_fetch_add(&counter, 1));
        fd = shm_open(l->shm, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0 || ftruncate(fd, (off_t)l->map_len) != 0) {
        int e = errno;
        if (fd >= 0) close(fd), shm_unlink(l->shm);
        free(l);
        return gr_error_set(err, GR_ERR_IO, NULL,
                            "cannot make a shared-memory segment of %zu bytes: %s (is /dev/shm "
                            "full or not mounted?)",
                            off, strerror(e));
    }
    l->map = mmap(NULL, l->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (l->map == MAP_FAILED) {
        shm_unlink(l->shm);
        free(l);
        return gr_error_set(err, GR_ERR_IO, NULL, "cannot map the lane's segment");
    }
    json_t *jin = json_array(), *jout = json_array();
    for (int i = 0; i < l->n; i++)
        json_array_append_new(l->io[i].output ? jout : jin,
                              json_pack("{s:s, s:I}", "buffer", l->io[i].buffer, "offset",
                                        (json_int_t)(size_t)l->io[i].data));
    req = json_pack("{s:i, s:s, s:s, s:o, s:o}", "schema_version", 1, "cmd", "lane_open", "shm",
                    l->shm, "inputs", jin, "outputs", jout);
    if (graph) json_object_set_new(req, "name", json_string(graph));
    if (batch > 0) json_object_set_new(req, "batch", json_integer(batch));
    if (spin_us >= 0) json_object_set_new(req, "spin_us", json_integer(spin_us));
    st = gr_client_call(c, req, -1, NULL, NULL, &r, err);
    json_decref(req);
    if (st == GR_OK && !r.ok) st = reply_error(&r, err);
    if (st != GR_OK) {
        gr_reply_clear(&r); /* zeroed by the call when it failed */
        munmap(l->map, l->map_len);
        shm_unlink(l->shm);
        free(l);
        return st;
    }
    json_t *lj = json_object_get(r.body, "lane");
    l->id = json_integer_value(json_object_get(lj, "id"));
    l->bucket = json_integer_value(json_object_get(lj, "bucket"));
    l->rows = json_integer_value(json_object_get(lj, "rows"));
    l->registered = json_is_true(json_object_get(lj, "registered"));
    l->io_graph = json_is_true(json_object_get(lj, "io_graph"));
    for (int i = 0; i < l->n; i++) {
        json_t *arr = json_object_get(lj, l->io[i].output ? "outputs" : "inputs");
        json_t *e = json_array_get(arr, (size_t)(l->io[i].output ? i - nin : i));
        size_t o = (size_t)l->io[i].data;
        l->io[i].row_bytes = (size_t)json_integer_value(json_object_get(e, "row_bytes"));
        l->io[i].data = (char *)l->map + o;
    }
    l->ctl = (gr_lane_ctl *)l->map;
    gr_reply_clear(&r);
    *out = l;
    return GR_OK;
}

void *gr_client_lane_data(const gr_client_lane *l, const char *name, int output) {
    for (int i = 0; l && i < l->n; i++)
        if (!!l->io[i].output == !!output && !strcmp(l->io[i].buffer, name)) return l->io[i].data;
    return NULL;
}

gr_status gr_client_lane_close(gr_client *c, gr_client_lane *l, gr_error *err) {
    if (!l) return GR_OK;
    gr_status st = GR_OK;
    if (c) {
        gr_reply r;
        json_t *req = json_pack("{s:i, s:s, s:I}", "schema_version", 1, "cmd", "lane_close", "lane",
                                (json_int_t)l->id);
        st = gr_client_call(c, req, -1, NULL, NULL, &r, err);
        json_decref(req);
        if (st == GR_OK) {
            if (!r.ok) st = reply_error(&r, err);
            gr_reply_clear(&r);
        }
    }
    munmap(l->map, l->map_len);
    shm_unlink(l->shm);
    free(l);
    return st;
}
