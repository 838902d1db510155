/* Output comparison: relative L2 error and an element-wise bound between a result and a
 * reference of the same dtype (docs/verification.md). NaN or Inf on either side never passes,
 * bitwise identity is reported but decides nothing, and the worst element is named. */
#ifndef GR_VERIFY_H
#define GR_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_check {
    char buffer[96];
    char what[32];   /* "eager vs ref", "graph vs eager", ... */
    double rel_l2;   /* ||out - ref|| / ||ref|| (abs L2 when ||ref|| == 0), finite elements */
    double max_abs;
    int64_t max_abs_index;
    int64_t nonfinite; /* elements where out or ref is NaN/Inf */
    int64_t over;      /* elements outside the element-wise bound */
    int64_t first_bad; /* first non-finite element, else the worst element, -1 if none */
    /* the element furthest outside (or closest to) its bound: |out - ref| / bound is largest */
    int64_t worst_index;
    double worst_out, worst_ref, worst_ratio;
    double ref_rms;
    double rtol;       /* relative L2 tolerance */
    double atol;       /* element bound: atol * ref_rms + rtol_elem * |ref| */
    double rtol_elem;
    int identical;     /* bitwise equal (reported; NaN-free identity also passes the bounds) */
    int passed;
    char note[160];    /* graph vs eager when not identical: the ops that write the buffer */
} gr_check;

/* Compares with the tolerances tol (core/dtype.h). */
gr_check gr_compare_tol(const char *buffer, const char *what, const void *out, const void *ref,
                        gr_dtype t, int64_t n, const gr_tol *tol);
/* gr_compare_tol with rtol's element bounds (gr_tol_from_rtol). */
gr_check gr_compare(const char *buffer, const char *what, const void *out, const void *ref,
                    gr_dtype t, int64_t n, double rtol);
/* The check as a JSON object (json_t *): rel_l2, max_abs, the tolerances, the worst element. */
void *gr_check_json(const gr_check *c);
/* One line: "rel 1.2e-08 max 3e-07 ok", "identical", or the failure with its worst element. */
void gr_check_str(const gr_check *c, char *buf, size_t size);

/* A growable list of checks (a variant's, a session's, a tensor-parallel degree's). The zero
 * value is an empty list; verified is 1 when it holds at least one check and all passed. */
typedef struct gr_checks {
    gr_check *v;
    int n, cap;
    int verified;
    int oom; /* a check could not be stored: the list is not trusted (verified stays 0) */
} gr_checks;

void gr_checks_add(gr_checks *l, const gr_check *c);
/* Appends every check of `from` to `to` and empties `from`. */
void gr_checks_take(gr_checks *to, gr_checks *from);
void gr_checks_free(gr_checks *l);
/* The first failed check, NULL when none failed. */
const gr_check *gr_checks_first_failed(const gr_checks *l);

#ifdef __cplusplus
}
#endif
#endif
