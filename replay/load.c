/* Workload file -> workload -> plans, shared by the CLI and the replay service so that a capture
 * in the service resolves exactly what `graphrun run` would. */
#include "replay/load.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

gr_status gr_load_resolve(const gr_load_req *req, const gr_target *target, gr_loaded *l,
                          gr_error *e) {
    memset(l, 0, sizeof(*l));
    char *text = NULL;
    size_t len = 0;
    int from_stdin = req->path == gr_load_stdin;
    gr_status st = from_stdin ? gr_stream_read_all(stdin, "<stdin>",
                                                   gr_file_limit(GR_FILE_WORKLOAD), &text, &len, e)
                              : read_file(req->path, &text, &len, e);
    if (st != GR_OK) return st;
    l->source_hash = gr_fnv1a(GR_FNV_OFFSET, text, len);
    l->source_bytes = len;
    st = gr_workload_load_string(text, len, from_stdin ? "<stdin>" : req->path, &l->wl, e);
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
    if (req->before_resolve && req->before_resolve(req->user, l->wl, e) != GR_OK) return e->code;
    if (gr_workload_check_params(l->wl, e) != GR_OK) { /* once, not once per variant */
        gr_error_prefix(e, "%s: ", from_stdin ? "<stdin>" : req->path);
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
        gr_error_prefix(e, "%s: ", from_stdin ? "<stdin>" : req->path);
        return e->code;
    }
    return GR_OK;
}

void gr_loaded_free(gr_loaded *l) {
    if (!l) return;
    for (int i = 0; i < l->nplans; i++) gr_plan_destroy(l->plans[i]);
    gr_workload_destroy(l->wl);
    memset(l, 0, sizeof(*l));
}
