/* Summary statistics over timing samples: median and percentiles (linear interpolation),
 * min/max, mean and standard deviation. */
#ifndef GR_STATS_H
#define GR_STATS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_summary {
    size_t n;
    double min, max, mean, stddev;
    double median, p10, p90;
} gr_summary;

/* Sorts `v` in place. n == 0 gives all zeros. */
gr_summary gr_summarize(double *v, size_t n);
/* q in [0, 1] over sorted values. */
double gr_quantile_sorted(const double *sorted, size_t n, double q);

#ifdef __cplusplus
}
#endif
#endif
