/* Workload file -> workload -> plans, shared by the CLI and the replay service so that a capture
 * in the service resolves exactly what `graphrun run` would. */
#include "replay/load.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cuda_check.h"
#include "core/expr.h"
#include "core/fileio.h"
#include "kernels/registry.h"

const char gr_load_stdin[] = "-";

uint64_t gr_fnv1a(uint64_t h, const void *data, size_t len) {
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The whole file, NUL-terminated, through core/fileio (a regular file within the workload
 * limit: /dev/zero, a FIFO or a directory is refused before anything is read). */
static gr_status read_file(const char *path, char **out, size_t *len, gr_error *err) {
    return gr_file_read_all(path, GR_FILE_WORKLOAD, out, len, err);
}

/* The installed workloads: <exe dir>/../share/graphrun/workloads (cmake --install). Fills `dir`
 * and returns 1 when that directory exists, i.e. when this graphrun runs from an install. */
static int installed_workloads(char *dir, size_t size) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0) return 0;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash) return 0;
    *slash = '\0';
    snprintf(dir, size, "%s/../share/graphrun/workloads", self);
    char abs[PATH_MAX];
    if (!realpath(dir, abs)) return 0;
    snprintf(dir, size, "%s", abs);
    return 1;
}

/* A relative workload path that the current directory lacks ("workloads/decode_step.json" run
 * from elsewhere) is looked up in the installed workloads, without its leading "workloads/".
 * Returns the path to read: `path` itself, or `alt` filled with the installed file. `tried` gets
 * the installed path looked at when that was missing too ("" when there is no install). */
static const char *workload_path(const char *path, char *alt, size_t size, char *tried,
                                 size_t tsize) {
    tried[0] = '\0';
    if (path[0] == '/' || access(path, F_OK) == 0 || errno != ENOENT) return path;
    char dir[PATH_MAX];
    if (!installed_workloads(dir, sizeof(dir))) return path;
    const char *rel = path;
    while (!strncmp(rel, "./", 2))
        rel += 2;
    if (!strncmp(rel, "workloads/", 10)) rel += 10;
    snprintf(alt, size, "%s/%s", dir, rel);
    if (access(alt, F_OK) == 0) return alt;
    snprintf(tried, tsize, "%s", alt);
    return path;
}

/* The input stage, before resolution: without --set B the batch is the file's row count, so the
 * file is read first and B set from it. */
static gr_status input_prepare(const gr_load_req *req, gr_loaded *l, gr_error *e) {
    const gr_param *b = gr_workload_param(l->wl, "B");
    if (!b)
        return gr_error_set(e, GR_ERR_INPUT, "--input",
                            "workload %s has no param \"B\" (the batch); --input fills the buffers "
                            "dense and idx.{t} of a DLRM workload (docs/dlrm_small.md)",
                            l->wl->name);
    if (b->overridden) return GR_OK;
    GR_TRY(gr_criteo_read(req->input, 0, GR_CRITEO_MAX_ROWS, req->skip_bad_lines, &l->input, e));
    char set[48];
    snprintf(set, sizeof(set), "B=%lld", (long long)l->input->rows);
    return gr_workload_set(l->wl, set, e);
}

/* After resolution: with B given, read its first B rows; then bind every plan. */
static gr_status input_bind(const gr_load_req *req, gr_loaded *l, gr_error *e) {
    if (!l->input) {
        int64_t B = 0;
        GR_TRY(gr_criteo_plan_batch(l->plans[0], &B, e));
        GR_TRY(gr_criteo_read(req->input, B, 0, req->skip_bad_lines, &l->input, e));
    }
    for (int i = 0; i < l->nplans; i++) GR_TRY(gr_criteo_bind(l->plans[i], l->input, &l->bind[i], e));
    return GR_OK;
}

gr_status gr_load_resolve(const gr_load_req *req, const gr_target *target, gr_loaded *l,
                          gr_error *e) {
    memset(l, 0, sizeof(*l));
    char *text = NULL;
    size_t len = 0;
    int from_stdin = req->path == gr_load_stdin;
    char alt[PATH_MAX + 16], tried[PATH_MAX + 16];
    /* the file read: the plans' and reports' "source" */
    const char *path =
        from_stdin ? req->path : workload_path(req->path, alt, sizeof(alt), tried, sizeof(tried));
    gr_status st = from_stdin ? gr_stream_read_all(stdin, "<stdin>",
                                                   gr_file_limit(GR_FILE_WORKLOAD), &text, &len, e)
                              : read_file(path, &text, &len, e);
    if (st != GR_OK) {
        if (!from_stdin && tried[0])
            gr_error_set(e, st, tried,
                         "not found either (graphrun's installed workloads, tried for a "
                         "relative path the current directory lacks)");
        return st;
    }
    l->source_hash = gr_fnv1a(GR_FNV_OFFSET, text, len);
    l->source_bytes = len;
    st = gr_workload_load_string(text, len, from_stdin ? "<stdin>" : path, &l->wl, e);
    free(text);
    if (st != GR_OK) return st;
    for (int i = 0; i < req->nsets; i++)
        if (gr_workload_set(l->wl, req->sets[i], e) != GR_OK) return e->code;
    if (req->seed) {
        /* digits only, within the workload's "seed" range (a double would round 2^53 + 1) */
        const char *d = req->seed;
        char *end = NULL;
        errno = 0;
        unsigned long long s = strtoull(d, &end, 10);
        if (!*d || strspn(d, "0123456789") != strlen(d) || errno == ERANGE || *end ||
            s > (unsigned long long)INT64_MAX)
            return gr_error_set(
                e, GR_ERR_USAGE, "--seed",
                "expected a whole number in [0, %lld] (digits only), got \"%.64s%s\"",
                (long long)INT64_MAX, req->seed, strlen(req->seed) > 64 ? "..." : "");
        l->wl->seed = (uint64_t)s;
    }
    if (req->input) GR_TRY(input_prepare(req, l, e));
    if (gr_workload_check_params(l->wl, e) != GR_OK) { /* once, not once per variant */
        gr_error_prefix(e, "%s: ", from_stdin ? "<stdin>" : path);
        return e->code;
    }
    const char *names[GR_MAX_VARIANTS];
    int n = 0;
    if (req->variant || req->one_variant || l->wl->nvariants == 0) {
        const char *v = gr_workload_variant(l->wl, req->variant, e);
        if (!v) return e->code;
        names[n++] = v;
    } else {
        for (int i = 0; i < l->wl->nvariants; i++) names[n++] = l->wl->variants[i];
    }
    for (int i = 0; i < n; i++) {
        gr_plan *p = NULL;
        if (gr_plan_resolve(l->wl, names[i], target, gr_kernel_find, gr_kernel_all_names, &p, e) == GR_OK)
            l->plans[l->nplans++] = p;
    }
    if (gr_error_failed(e)) {
        gr_error_prefix(e, "%s: ", from_stdin ? "<stdin>" : path);
        return e->code;
    }
    if (req->input) return input_bind(req, l, e);
    return GR_OK;
}

void gr_loaded_free(gr_loaded *l) {
    if (!l) return;
    for (int i = 0; i < l->nplans; i++) gr_plan_destroy(l->plans[i]);
    for (int i = 0; i < GR_MAX_VARIANTS; i++) gr_criteo_binding_destroy(l->bind[i]);
    gr_criteo_destroy(l->input);
    gr_workload_destroy(l->wl);
    memset(l, 0, sizeof(*l));
}
