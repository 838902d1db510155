/* Comparing outputs against references. */
#include "replay/verify.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

gr_check gr_compare(const char *buffer, const char *what, const void *out, const void *ref,
                    gr_dtype t, int64_t n, double rtol) {
    gr_check c;
    memset(&c, 0, sizeof(c));
    snprintf(c.buffer, sizeof(c.buffer), "%s", buffer);
    snprintf(c.what, sizeof(c.what), "%s", what);
    c.rtol = rtol;
    c.first_bad = -1;
    c.max_abs_index = -1;
    c.identical = memcmp(out, ref, (size_t)n * gr_dtype_size(t)) == 0;
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double o = gr_load(out, t, (size_t)i), r = gr_load(ref, t, (size_t)i);
        if (!isfinite(o) || !isfinite(r)) {
            if (!(isnan(o) && isnan(r)) && !(isinf(o) && o == r)) {
                c.nonfinite++;
                if (c.first_bad < 0) c.first_bad = i;
            }
            continue;
        }
        double d = fabs(o - r);
        num += d * d;
        den += r * r;
        if (d > c.max_abs) {
            c.max_abs = d;
            c.max_abs_index = i;
        }
    }
    c.rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
    if (c.first_bad < 0 && c.rel_l2 > rtol) c.first_bad = c.max_abs_index;
    c.passed = c.identical || (c.nonfinite == 0 && c.rel_l2 <= rtol);
    return c;
}

void gr_check_str(const gr_check *c, char *buf, size_t size) {
    if (c->identical) {
        snprintf(buf, size, "identical");
    } else if (c->nonfinite) {
        snprintf(buf, size, "FAIL: %lld non-finite (first at [%lld]) rel %.1e", (long long)c->nonfinite,
                 (long long)c->first_bad, c->rel_l2);
    } else {
        snprintf(buf, size, "rel %.1e max %.1e %s", c->rel_l2, c->max_abs,
                 c->passed ? "ok" : "FAIL");
    }
}
