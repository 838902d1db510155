/* Timing statistics. */
#include "core/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double gr_quantile_sorted(const double *s, size_t n, double q) {
    if (n == 0) return 0;
    if (q <= 0) return s[0];
    if (q >= 1) return s[n - 1];
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    double frac = pos - (double)lo;
    if (lo + 1 >= n) return s[n - 1];
    return s[lo] + frac * (s[lo + 1] - s[lo]);
}

gr_summary gr_summarize(double *v, size_t n) {
    gr_summary r;
    memset(&r, 0, sizeof(r));
    r.n = n;
    if (n == 0) return r;
    qsort(v, n, sizeof(double), cmp_double);
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    r.mean = sum / (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (v[i] - r.mean) * (v[i] - r.mean);
    r.stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
    r.min = v[0];
    r.max = v[n - 1];
    r.median = gr_quantile_sorted(v, n, 0.5);
    r.p10 = gr_quantile_sorted(v, n, 0.1);
    r.p90 = gr_quantile_sorted(v, n, 0.9);
    return r;
}
