/* Host buffers and the CPU reference executor. */
#include "core/hoststate.h"

#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/kernel.h"

gr_status gr_hoststate_create(const gr_plan *plan, gr_hoststate **out, gr_error *err) {
    *out = NULL;
    gr_hoststate *hs = calloc(1, sizeof(*hs));
    if (!hs) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    hs->plan = plan;
    hs->hptr = calloc((size_t)plan->nbufs + 1, sizeof(void *));
    if (!hs->hptr) {
        free(hs);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    for (int b = 0; b < plan->nbufs; b++) {
        const gr_buffer *buf = &plan->bufs[b];
        if (!buf->used) continue;
        hs->hptr[b] = malloc(buf->bytes ? buf->bytes : 1);
        if (!hs->hptr[b]) {
            gr_hoststate_destroy(hs);
            return gr_error_set(err, GR_ERR_NOMEM, buf->path,
                                "out of host memory for the reference copy of \"%s\" (%.1f MB); "
                                "use --no-cpu-ref or a smaller --set",
                                buf->name, (double)buf->bytes / 1e6);
        }
        hs->bytes += buf->bytes;
    }
    *out = hs;
    return GR_OK;
}

void gr_hoststate_destroy(gr_hoststate *hs) {
    if (!hs) return;
    if (hs->hptr)
        for (int b = 0; b < hs->plan->nbufs; b++) free(hs->hptr[b]);
    free(hs->hptr);
    free(hs);
}

gr_status gr_hoststate_fill(gr_hoststate *hs, gr_error *err) {
    const gr_plan *plan = hs->plan;
    for (int b = 0; b < plan->nbufs; b++) {
        const gr_buffer *buf = &plan->bufs[b];
        if (!buf->used) continue;
        if (buf->init.kind == GR_INIT_HOST) {
            if (!buf->host_data)
                return gr_error_set(err, GR_ERR_INPUT, buf->path,
                                    "buffer \"%s\" has init \"host\" but no data was given",
                                    buf->name);
            memcpy(hs->hptr[b], buf->host_data, buf->bytes);
            continue;
        }
        gr_status st = gr_fill_host(hs->hptr[b], buf->dtype, buf->numel, &buf->init, err);
        if (st != GR_OK) return st;
    }
    return GR_OK;
}

gr_status gr_reference_step(const gr_plan *plan, gr_hoststate *hs, gr_error *err) {
    for (int i = 0; i < plan->nops; i++) {
        const gr_op *op = &plan->ops[i];
        if (op->kind != GR_OP_KERNEL) continue;
        if (op->user) /* callers check plan->has_cpu_reference first; this names the fix */
            return gr_error_set(err, GR_ERR_USAGE, op->path,
                                "op \"%s\" runs the user kernel \"%s\", which has no CPU "
                                "reference: mark a variant \"reference\": true, give outputs "
                                "\"expect\" files, or run with --no-cpu-ref",
                                op->name, op->user->function);
        if (!op->kernel->reference)
            return gr_error_set(err, GR_ERR_INTERNAL, op->path, "kernel \"%s\" has no CPU reference",
                                op->kernel->name);
        gr_status st = op->kernel->reference(op, plan, hs->hptr, err);
        if (st != GR_OK) return st;
    }
    return GR_OK;
}
