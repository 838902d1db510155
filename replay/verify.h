/* Output comparison: relative L2 error and max abs error between a result and a reference of the
 * same dtype, NaN/Inf counted (NaN never passes), the first bad index, and bitwise identity. */
#ifndef GR_VERIFY_H
#define GR_VERIFY_H

#include <stdint.h>

#include "core/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_check {
    char buffer[96];
    char what[32];   /* "eager vs ref", "graph vs eager", ... */
    double rel_l2;   /* ||out - ref|| / ||ref|| (abs L2 when ||ref|| == 0) */
    double max_abs;
    int64_t max_abs_index;
    int64_t nonfinite; /* elements of out that are NaN/Inf where ref is finite */
    int64_t first_bad; /* first non-finite or worst element, -1 if none */
    double rtol;
    int identical;     /* bitwise equal */
    int passed;
} gr_check;

gr_check gr_compare(const char *buffer, const char *what, const void *out, const void *ref,
                    gr_dtype t, int64_t n, double rtol);
/* One line: "y: eager vs ref rel_l2 1.2e-08 max_abs 3e-07 ok". */
void gr_check_str(const gr_check *c, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
