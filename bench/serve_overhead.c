/* What a served step costs from a C client (issue 25; bench/serve_overhead.py is the Python
 * side): captures a workload in the replay service (decode_step fused, B = 1 by default), then
 * sends N served steps through replay/client.h, input x and output x in POSIX shared memory,
 * and prints, per request, the client's wall time, the service's host time and the graph launch
 * (CUDA events), median [p10, p90] after warm-up; then the same N steps through a lane (the
 * doorbell in a shared segment, replay/lane.h), checked to give the served step's bytes for the
 * same input; JSON with --json FILE. Needs a GPU.
 *   gr_serve_bench [--socket PATH] [--workload W] [--variant V] [--set k=v]... [--n N] [--json F] */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/args.h"
#include "replay/client.h"
#include "replay/lane.h"
#include "replay/protocol.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stats(double *v, int n, double *med, double *p10, double *p90) {
    qsort(v, (size_t)n, sizeof(double), cmp);
    *med = v[n / 2];
    *p10 = v[n / 10];
    *p90 = v[(n * 9) / 10];
}

static int call(gr_client *c, json_t *req, gr_reply *r) {
    gr_error e;
    gr_error_clear(&e);
    gr_status st = gr_client_call(c, req, -1, NULL, NULL, r, &e);
    json_decref(req);
    if (st != GR_OK) {
        fprintf(stderr, "gr_serve_bench: %s\n", e.msg);
        return 1;
    }
    if (!r->ok) {
        fprintf(stderr, "gr_serve_bench: %s%s%s\n", r->field, r->field[0] ? ": " : "", r->message);
        gr_reply_clear(r);
        return 1;
    }
    return 0;
}

/* a segment of `bytes` named /gr-bench-PID-tag, mapped read-write */
static void *segment(const char *tag, size_t bytes, char *name, size_t size) {
    snprintf(name, size, "/gr-bench-%d-%s", (int)getpid(), tag);
    int fd = shm_open(name, O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) return NULL;
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return m == MAP_FAILED ? NULL : m;
}

/* N steps through a lane over x (in and out), fresh input each; the last output is compared with
 * what the served replay gave for the same input (`want`, NULL: not compared). */
static int lane_steps(gr_client *c, size_t xbytes, int warm, int n, const unsigned char *last_in,
                      const unsigned char *want, json_t **out) {
    /* the C client's lane API (replay/client.h): it sizes, makes and maps the segment */
    const char *io[] = {"x"};
    gr_client_lane *lane = NULL;
    gr_error e0;
    gr_error_clear(&e0);
    if (gr_client_lane_open(c, "served_c", io, 1, io, 1, 0, 100000, &lane, &e0) != GR_OK) {
        fprintf(stderr, "gr_serve_bench: lane_open: %s\n", e0.msg);
        return 1;
    }
    int rc = 0;
    unsigned char *xin = gr_client_lane_data(lane, "x", 0), *xout = gr_client_lane_data(lane, "x", 1);
    gr_lane_ctl *ctl = lane->ctl;
    double *wall = calloc((size_t)n, sizeof(double)), *graph = calloc((size_t)n, sizeof(double)),
           *step = calloc((size_t)n, sizeof(double));
    for (int k = 0; k < warm + n && !rc; k++) {
        if (k == warm + n - 1) memcpy(xin, last_in, xbytes);
        else for (size_t q = 0; q < xbytes; q++) xin[q] = (unsigned char)(k * 29 + q * 5);
        gr_error e;
        gr_error_clear(&e);
        double t0 = now_us();
        if (gr_lane_step(ctl, 1e6, 60000, &e) != GR_OK) {
            fprintf(stderr, "gr_serve_bench: lane step %d: %s\n", k, e.msg);
            rc = 1;
            break;
        }
        double t1 = now_us();
        if (k >= warm) {
            wall[k - warm] = t1 - t0;
            graph[k - warm] = ctl->graph_us;
            step[k - warm] = ctl->step_us;
        }
    }
    int same = !rc && want ? memcmp(xout, want, xbytes) == 0 : -1;
    if (!rc) {
        double wm, w10, w90, gm, g10, g90, sm, s10, s90;
        stats(wall, n, &wm, &w10, &w90);
        stats(graph, n, &gm, &g10, &g90);
        stats(step, n, &sm, &s10, &s90);
        printf("lane steps from C (the same graph, %d steps after %d warm-up; copies %s):\n", n,
               warm, lane->io_graph ? "inside the graph" : "around the graph");
        printf("  client wall      median %8.2f us [p10 %.2f, p90 %.2f]\n", wm, w10, w90);
        printf("  service step     median %8.2f us [p10 %.2f, p90 %.2f] (doorbell seen -> outputs in "
               "the segment)\n", sm, s10, s90);
        printf("  graph (events)   median %8.2f us [p10 %.2f, p90 %.2f]%s\n", gm, g10, g90,
               lane->io_graph ? " (its copies included)" : "");
        printf("  over the graph   %8.2f us (client wall - graph, medians)\n", wm - gm);
        printf("  output equals the served step's for the same input: %s\n",
               same < 0 ? "not compared" : same ? "yes" : "NO");
        *out = json_pack("{s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f}, s:b}",
                         "client_wall_us", "median", wm, "p10", w10, "p90", w90, "service_step_us",
                         "median", sm, "p10", s10, "p90", s90, "graph_us", "median", gm, "p10", g10,
                         "p90", g90, "same_as_served", same == 1);
        if (*out) json_object_set_new(*out, "io_graph", json_boolean(lane->io_graph));
        if (same == 0) rc = 1;
    }
    gr_error e1;
    gr_error_clear(&e1);
    if (gr_client_lane_close(c, lane, &e1) != GR_OK) {
        fprintf(stderr, "gr_serve_bench: lane_close: %s\n", e1.msg);
        rc = 1;
    }
    free(wall), free(graph), free(step);
    return rc;
}

int main(int argc, char **argv) {
    const char *sock = NULL, *workload = "workloads/decode_step.json", *variant = "fused", *json = NULL;
    const char *sets[32];
    int nsets = 0, n = 2000, warm = 200;
    static const char *const with_value[] = {"--socket", "--workload", "--variant", "--set", "--n",
                                             "--json", NULL};
    for (int i = 1; i < argc; i++) {
        gr_arg a;
        gr_arg_take(argc, argv, &i, with_value, NULL, &a);
        if (a.kind != GR_ARG_OPTION || !strcmp(a.name, "--help")) {
            fprintf(stderr, "%s\nusage: gr_serve_bench [--socket PATH] [--workload W] [--variant V] "
                            "[--set k=v]... [--n N] [--json FILE]\n",
                    a.kind == GR_ARG_ERROR ? a.error : "");
            return a.kind == GR_ARG_OPTION ? 0 : 2;
        }
        if (!strcmp(a.name, "--socket")) sock = a.value;
        else if (!strcmp(a.name, "--workload")) workload = a.value;
        else if (!strcmp(a.name, "--variant")) variant = a.value;
        else if (!strcmp(a.name, "--json")) json = a.value;
        else if (!strcmp(a.name, "--set") && nsets < 32) sets[nsets++] = a.value;
        else if (!strcmp(a.name, "--n") && !gr_arg_int32(a.value, 10, 10000000, &n)) {
            fprintf(stderr, "gr_serve_bench: --n takes a whole number >= 10\n");
            return 2;
        } else if (strcmp(a.name, "--n") != 0 && strcmp(a.name, "--set") != 0) {
            fprintf(stderr, "gr_serve_bench: unknown option %s\n", a.name);
            return 2;
        }
    }
    if (!nsets) sets[nsets++] = "B=1";
    char abs[4096];
    if (!realpath(workload, abs)) {
        fprintf(stderr, "gr_serve_bench: %s: cannot open\n", workload);
        return 2;
    }
    gr_error e;
    gr_error_clear(&e);
    gr_service_paths paths;
    gr_client *c = NULL;
    /* the service is graphrun's (beside this binary in the build), started when none runs */
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 16);
    if (len <= 0) {
        fprintf(stderr, "gr_serve_bench: cannot find my own path\n");
        return 1;
    }
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    snprintf(slash ? slash + 1 : exe, 16, "graphrun");
    int pid = 0, already = 0;
    if (gr_service_paths_resolve(sock, &paths, &e) != GR_OK ||
        gr_service_spawn(&paths, exe, NULL, &pid, &already, &e) != GR_OK ||
        gr_client_connect(&paths, 0, &c, &e) != GR_OK) {
        fprintf(stderr, "gr_serve_bench: %s\n", e.msg);
        return 1;
    }
    json_t *jsets = json_array();
    for (int i = 0; i < nsets; i++) json_array_append_new(jsets, json_string(sets[i]));
    gr_reply r;
    if (call(c, json_pack("{s:i, s:s, s:s, s:s, s:s, s:o, s:b}", "schema_version", 1, "cmd", "capture",
                          "workload", abs, "name", "served_c", "variant", variant, "sets", jsets,
                          "force", 1),
             &r))
        return 1;
    size_t xbytes = 0;
    size_t bi;
    json_t *b;
    json_array_foreach(json_object_get(r.body, "buffers"), bi, b)
        if (!strcmp(json_string_value(json_object_get(b, "name")), "x"))
            xbytes = (size_t)json_integer_value(json_object_get(b, "bytes"));
    gr_reply_clear(&r);
    if (!xbytes) {
        fprintf(stderr, "gr_serve_bench: the workload has no buffer x\n");
        return 2;
    }
    char in_name[64], out_name[64];
    unsigned char *in = segment("in", xbytes, in_name, sizeof(in_name));
    unsigned char *out = segment("out", xbytes, out_name, sizeof(out_name));
    if (!in || !out) {
        fprintf(stderr, "gr_serve_bench: cannot make the shared-memory segments\n");
        return 1;
    }
    double *wall = calloc((size_t)n, sizeof(double)), *req = calloc((size_t)n, sizeof(double)),
           *graph = calloc((size_t)n, sizeof(double)), *inside = calloc((size_t)n, sizeof(double)),
           *outside = calloc((size_t)n, sizeof(double)), *way_in = calloc((size_t)n, sizeof(double)),
           *way_out = calloc((size_t)n, sizeof(double)), *body = calloc((size_t)n, sizeof(double)),
           *lookup = calloc((size_t)n, sizeof(double));
    int rc = 0;
    for (int k = 0; k < warm + n && !rc; k++) {
        for (size_t q = 0; q < xbytes; q++) in[q] = (unsigned char)(k * 31 + q * 7); /* fresh input */
        json_t *rq = json_pack("{s:i, s:s, s:s, s:[{s:s, s:s}], s:[{s:s, s:s}]}", "schema_version", 1,
                               "cmd", "replay", "name", "served_c", "inputs", "buffer", "x", "shm",
                               in_name, "outputs", "buffer", "x", "shm", out_name);
        double t0 = now_us();
        rc = call(c, rq, &r);
        double t1 = now_us();
        if (rc) break;
        json_t *sv = json_object_get(r.body, "served");
        if (k >= warm) {
            wall[k - warm] = t1 - t0;
            req[k - warm] = json_number_value(json_object_get(sv, "request_us"));
            graph[k - warm] = json_number_value(json_object_get(sv, "graph_us"));
            /* the service's own time for the request: queued on the I/O thread to reply made */
            inside[k - warm] = json_number_value(json_object_get(sv, "queue_us")) +
                               json_number_value(json_object_get(sv, "job_us"));
            outside[k - warm] = wall[k - warm] - inside[k - warm];
            /* CLOCK_MONOTONIC on both sides: send -> the I/O thread has the request; the reply
             * made -> this client has it parsed */
            way_in[k - warm] = json_number_value(json_object_get(sv, "received_mono_us")) - t0;
            way_out[k - warm] = t1 - json_number_value(json_object_get(sv, "replied_mono_us"));
            body[k - warm] = json_number_value(json_object_get(sv, "reply_body_us"));
            lookup[k - warm] = json_number_value(json_object_get(sv, "lookup_us"));
        }
        gr_reply_clear(&r);
    }
    json_t *lane = NULL;
    if (!rc) {
        /* the last served step's input and output: the lane must give the same bytes */
        unsigned char *last_in = malloc(xbytes), *want = malloc(xbytes);
        for (size_t q = 0; q < xbytes; q++) last_in[q] = (unsigned char)(q * 13 + 5);
        memcpy(in, last_in, xbytes);
        json_t *rq = json_pack("{s:i, s:s, s:s, s:[{s:s, s:s}], s:[{s:s, s:s}]}", "schema_version", 1,
                               "cmd", "replay", "name", "served_c", "inputs", "buffer", "x", "shm",
                               in_name, "outputs", "buffer", "x", "shm", out_name);
        rc = call(c, rq, &r);
        if (!rc) {
            gr_reply_clear(&r);
            memcpy(want, out, xbytes);
            rc = lane_steps(c, xbytes, warm, n, last_in, want, &lane);
        }
        free(last_in);
        free(want);
    }
    if (!rc) {
        double wm, w10, w90, rm, r10, r90, gm, g10, g90, im, i10, i90, om, o10, o90;
        stats(inside, n, &im, &i10, &i90);
        stats(outside, n, &om, &o10, &o90);
        double am, a10, a90, bm, b10, b90;
        stats(way_in, n, &am, &a10, &a90);
        stats(way_out, n, &bm, &b10, &b90);
        double ym, y10, y90, lm, l10, l90;
        stats(body, n, &ym, &y10, &y90);
        stats(lookup, n, &lm, &l10, &l90);
        stats(wall, n, &wm, &w10, &w90);
        stats(req, n, &rm, &r10, &r90);
        stats(graph, n, &gm, &g10, &g90);
        printf("served steps from C (%s %s", workload, variant);
        for (int i = 0; i < nsets; i++) printf(" %s", sets[i]);
        printf("), %d requests after %d warm-up, shared memory in and out:\n", n, warm);
        printf("  client wall      median %8.2f us [p10 %.2f, p90 %.2f]\n", wm, w10, w90);
        printf("  service request  median %8.2f us [p10 %.2f, p90 %.2f]\n", rm, r10, r90);
        printf("  graph (events)   median %8.2f us [p10 %.2f, p90 %.2f]\n", gm, g10, g90);
        printf("  in the service   median %8.2f us [p10 %.2f, p90 %.2f] (queue_us + job_us)\n", im,
               i10, i90);
        printf("    lookup         median %8.2f us [p10 %.2f, p90 %.2f] (worker start -> input checks)\n",
               lm, l10, l90);
        printf("    reply body     median %8.2f us [p10 %.2f, p90 %.2f] (the reply's graph object)\n",
               ym, y10, y90);
        printf("  outside it       median %8.2f us [p10 %.2f, p90 %.2f] (wall - in the service: "
               "socket, I/O thread, client)\n",
               om, o10, o90);
        printf("    way in         median %8.2f us [p10 %.2f, p90 %.2f] (send -> the service has it)\n",
               am, a10, a90);
        printf("    way out        median %8.2f us [p10 %.2f, p90 %.2f] (reply made -> parsed here)\n",
               bm, b10, b90);
        if (json) {
            json_t *j = json_pack("{s:s, s:s, s:i, s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f}, s:{s:f, s:f, s:f}}",
                                  "workload", workload, "variant", variant, "n", n, "client_wall_us",
                                  "median", wm, "p10", w10, "p90", w90, "service_request_us", "median", rm,
                                  "p10", r10, "p90", r90, "graph_us", "median", gm, "p10", g10, "p90", g90);
            json_object_set_new(j, "in_service_us",
                                json_pack("{s:f, s:f, s:f}", "median", im, "p10", i10, "p90", i90));
            json_object_set_new(j, "outside_service_us",
                                json_pack("{s:f, s:f, s:f}", "median", om, "p10", o10, "p90", o90));
            json_object_set_new(j, "way_in_us",
                                json_pack("{s:f, s:f, s:f}", "median", am, "p10", a10, "p90", a90));
            json_object_set_new(j, "way_out_us",
                                json_pack("{s:f, s:f, s:f}", "median", bm, "p10", b10, "p90", b90));
            if (lane) json_object_set(j, "lane", lane);
            if (json_dump_file(j, json, JSON_INDENT(2)) != 0) rc = 1;
            json_decref(j);
        }
    }
    munmap(in, xbytes);
    munmap(out, xbytes);
    shm_unlink(in_name);
    shm_unlink(out_name);
    json_decref(lane);
    free(wall), free(req), free(graph), free(inside), free(outside), free(way_in), free(way_out);
    free(body), free(lookup);
    gr_client_close(c);
    return rc;
}
