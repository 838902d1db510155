/* Bucket specs and the shared layout: every bucket's plan compared buffer by buffer. */
#include "replay/bucket.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gr_status gr_bucket_parse(const char *text, const char *where, gr_bucket_spec *out, gr_error *err) {
    memset(out, 0, sizeof(*out));
    const char *eq = text ? strchr(text, '=') : NULL;
    if (!eq || eq == text || (size_t)(eq - text) >= sizeof(out->param))
        return gr_error_set(err, GR_ERR_USAGE, where,
                            "expected PARAM=V1,V2,... such as B=1,2,4,8, got \"%.80s\"",
                            text ? text : "");
    memcpy(out->param, text, (size_t)(eq - text));
    const char *p = eq + 1;
    while (*p) {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno || v < 1 || v > ((long long)1 << 40) || (*end && *end != ','))
            return gr_error_set(err, GR_ERR_USAGE, where,
                                "bucket values are whole numbers >= 1 separated by commas; \"%.40s\" "
                                "in \"%.80s\" is not one", p, text);
        if (out->n == GR_BUCKET_MAX)
            return gr_error_set(err, GR_ERR_USAGE, where, "at most %d buckets, got more in \"%.80s\"",
                                GR_BUCKET_MAX, text);
        int k = out->n;
        while (k > 0 && out->values[k - 1] > v) {
            out->values[k] = out->values[k - 1];
            k--;
        }
        if (k > 0 && out->values[k - 1] == v)
            return gr_error_set(err, GR_ERR_USAGE, where, "bucket %lld is given twice in \"%.80s\"",
                                v, text);
        out->values[k] = v;
        out->n++;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return gr_error_set(err, GR_ERR_USAGE, where, "\"%.80s\" ends with a comma", text);
    }
    if (out->n == 0)
        return gr_error_set(err, GR_ERR_USAGE, where, "no bucket values in \"%.80s\"", text);
    return GR_OK;
}

int gr_bucket_pick(const gr_bucket_spec *s, int64_t want) {
    if (want < 1) return -1;
    for (int i = 0; i < s->n; i++)
        if (s->values[i] >= want) return i;
    return -1;
}

void gr_bucket_layout_free(gr_bucket_layout *l) {
    if (!l) return;
    free(l->b);
    memset(l, 0, sizeof(*l));
}

const gr_bucket_buffer *gr_bucket_find(const gr_bucket_layout *l, const char *name) {
    for (int i = 0; i < l->nb; i++)
        if (!strcmp(l->b[i].name, name)) return &l->b[i];
    return NULL;
}

static int used_index(const gr_plan *p, const char *name) {
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].used && !strcmp(p->bufs[b].name, name)) return b;
    return -1;
}

gr_status gr_bucket_layout_make(const gr_plan *const *plans, int n, const gr_bucket_spec *s,
                                gr_bucket_layout *out, gr_error *err) {
    memset(out, 0, sizeof(*out));
    if (n < 1) return gr_error_set(err, GR_ERR_INTERNAL, NULL, "no bucket plans");
    const gr_plan *p0 = plans[0];
    out->b = calloc((size_t)p0->nbufs + 1, sizeof(*out->b));
    if (!out->b) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    int used0 = 0;
    for (int b = 0; b < p0->nbufs; b++) used0 += p0->bufs[b].used;
    for (int i = 0; i < n; i++) {
        out->separate_bytes += plans[i]->used_bytes;
        int used = 0;
        for (int b = 0; b < plans[i]->nbufs; b++) used += plans[i]->bufs[b].used;
        if (used != used0)
            return gr_error_set(err, GR_ERR_INPUT, "buckets",
                                "%s=%lld uses %d buffers and %s=%lld uses %d: buckets share buffers "
                                "by name, so every bucket must use the same ones",
                                s->param, (long long)s->values[0], used0, s->param,
                                (long long)s->values[i], used);
    }
    for (int b = 0; b < p0->nbufs; b++) {
        const gr_buffer *x = &p0->bufs[b];
        if (!x->used) continue;
        gr_bucket_buffer *e = &out->b[out->nb++];
        snprintf(e->name, sizeof(e->name), "%s", x->name);
        e->dtype = x->dtype;
        e->bytes = x->bytes;
        e->same = 1;
        e->batch_dim = -1;
        for (int i = 1; i < n; i++) {
            int k = used_index(plans[i], x->name);
            const gr_buffer *y = k >= 0 ? &plans[i]->bufs[k] : NULL;
            if (!y || y->dtype != x->dtype || y->ndim != x->ndim)
                return gr_error_set(err, GR_ERR_INPUT, "buckets",
                                    "buffer \"%s\" %s at %s=%lld: buckets share buffers by name, so "
                                    "each must keep its dtype and rank",
                                    x->name, !y ? "is not used" : "changes dtype or rank", s->param,
                                    (long long)s->values[i]);
            if (y->bytes > e->bytes) e->bytes = y->bytes;
            for (int d = 0; d < x->ndim; d++) {
                if (y->shape[d] == x->shape[d]) continue;
                e->same = 0;
                if (e->batch_dim >= 0 && e->batch_dim != d)
                    return gr_error_set(err, GR_ERR_INPUT, "buckets",
                                        "buffer \"%s\" changes in dimensions %d and %d with %s: "
                                        "a bucket may change one dimension of a buffer",
                                        x->name, e->batch_dim, d, s->param);
                e->batch_dim = d;
            }
        }
        if (e->batch_dim == 0) {
            size_t row = gr_dtype_size(x->dtype);
            for (int d = 1; d < x->ndim; d++) row *= (size_t)x->shape[d];
            e->row_bytes = row;
        }
        out->shared_bytes += (double)e->bytes;
    }
    return GR_OK;
}
