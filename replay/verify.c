/* Comparing outputs against references: relative L2 and the element-wise bound, non-finite
 * values and the worst element (docs/verification.md). */
#include "replay/verify.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gr_check gr_compare_tol(const char *buffer, const char *what, const void *out, const void *ref,
                        gr_dtype t, int64_t n, const gr_tol *tol) {
    gr_check c;
    memset(&c, 0, sizeof(c));
    snprintf(c.buffer, sizeof(c.buffer), "%s", buffer);
    snprintf(c.what, sizeof(c.what), "%s", what);
    c.rtol = tol->rtol;
    c.atol = tol->atol;
    c.rtol_elem = tol->rtol_elem;
    c.first_bad = c.max_abs_index = c.worst_index = -1;
    c.identical = memcmp(out, ref, (size_t)n * gr_dtype_size(t)) == 0;
    double num = 0, den = 0;
    int64_t nfin = 0;
    for (int64_t i = 0; i < n; i++) {
        double o = gr_load(out, t, (size_t)i), r = gr_load(ref, t, (size_t)i);
        /* NaN is never agreement: poison left in both eager and graph outputs is identical bits */
        if (!isfinite(o) || !isfinite(r)) {
            if (c.nonfinite++ == 0) {
                c.first_bad = i;
                c.worst_index = i;
                c.worst_out = o;
                c.worst_ref = r;
                c.worst_ratio = INFINITY;
            }
            continue;
        }
        double d = fabs(o - r);
        num += d * d;
        den += r * r;
        nfin++;
        if (d > c.max_abs || c.max_abs_index < 0) {
            c.max_abs = d;
            c.max_abs_index = i;
        }
    }
    c.rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
    c.ref_rms = nfin ? sqrt(den / (double)nfin) : 0;
    /* second pass: the element bound needs the reference's RMS */
    double abs_bound = c.atol * c.ref_rms;
    for (int64_t i = 0; i < n && c.nonfinite == 0; i++) {
        double o = gr_load(out, t, (size_t)i), r = gr_load(ref, t, (size_t)i);
        double d = fabs(o - r), bound = abs_bound + c.rtol_elem * fabs(r);
        double ratio = d == 0 ? 0 : bound > 0 ? d / bound : INFINITY;
        if (d > bound) c.over++;
        if (c.worst_index < 0 || ratio > c.worst_ratio) {
            c.worst_ratio = ratio;
            c.worst_index = i;
            c.worst_out = o;
            c.worst_ref = r;
        }
    }
    c.passed = c.nonfinite == 0 && c.rel_l2 <= c.rtol && c.over == 0;
    if (!c.passed && c.first_bad < 0) c.first_bad = c.worst_index;
    return c;
}

gr_check gr_compare(const char *buffer, const char *what, const void *out, const void *ref,
                    gr_dtype t, int64_t n, double rtol) {
    gr_tol tol = gr_tol_from_rtol(t, rtol);
    return gr_compare_tol(buffer, what, out, ref, t, n, &tol);
}

void gr_check_str(const gr_check *c, char *buf, size_t size) {
    if (c->nonfinite) {
        snprintf(buf, size, "FAIL: %lld non-finite (first at [%lld]: %g vs %g)",
                 (long long)c->nonfinite, (long long)c->first_bad, c->worst_out, c->worst_ref);
    } else if (c->identical) {
        snprintf(buf, size, "identical");
    } else if (c->passed) {
        snprintf(buf, size, "rel %.1e max %.1e ok", c->rel_l2, c->max_abs);
    } else {
        snprintf(buf, size, "FAIL: rel %.1e%s, %lld elements over |d| <= %.1e rms + %.1e |ref|, "
                 "worst [%lld] %.6g vs %.6g",
                 c->rel_l2, c->rel_l2 > c->rtol ? " > rtol" : "", (long long)c->over, c->atol,
                 c->rtol_elem, (long long)c->worst_index, c->worst_out, c->worst_ref);
    }
}

/* JSON has no NaN or Inf: non-finite values are written as strings ("nan", "inf") */
static json_t *num_json(double v) {
    if (isfinite(v)) return json_real(v);
    return json_string(isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
}

void *gr_check_json(const gr_check *c) {
    json_t *j = json_pack("{s:s, s:s, s:f, s:f, s:I, s:I, s:b, s:b, s:f, s:f, s:f, s:f}", "buffer",
                          c->buffer, "what", c->what, "rel_l2", c->rel_l2, "max_abs", c->max_abs,
                          "nonfinite", (json_int_t)c->nonfinite, "over_bound", (json_int_t)c->over,
                          "identical", c->identical, "passed", c->passed, "rtol", c->rtol, "atol",
                          c->atol, "rtol_elem", c->rtol_elem, "ref_rms", c->ref_rms);
    if (c->worst_index >= 0)
        json_object_set_new(j, "worst", json_pack("{s:I, s:o, s:o}", "index",
                                                  (json_int_t)c->worst_index, "out",
                                                  num_json(c->worst_out), "ref",
                                                  num_json(c->worst_ref)));
    if (c->note[0]) json_object_set_new(j, "note", json_string(c->note));
    return j;
}

static void checks_verdict(gr_checks *l) {
    l->verified = l->n > 0 && !l->oom;
    for (int i = 0; i < l->n && l->verified; i++)
        if (!l->v[i].passed) l->verified = 0;
}

void gr_checks_add(gr_checks *l, const gr_check *c) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        gr_check *v = realloc(l->v, (size_t)cap * sizeof(*v));
        if (!v) {
            l->oom = 1;
            l->verified = 0;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *c;
    checks_verdict(l);
}

void gr_checks_take(gr_checks *to, gr_checks *from) {
    for (int i = 0; i < from->n; i++) gr_checks_add(to, &from->v[i]);
    to->oom |= from->oom;
    checks_verdict(to);
    gr_checks_free(from);
}

void gr_checks_free(gr_checks *l) {
    free(l->v);
    memset(l, 0, sizeof(*l));
}

const gr_check *gr_checks_first_failed(const gr_checks *l) {
    for (int i = 0; i < l->n; i++)
        if (!l->v[i].passed) return &l->v[i];
    return NULL;
}
