/* Element types of workload buffers: names, sizes, host-side conversions (bf16/fp16 are stored
 * as uint16 bit patterns on the host) and element access as double for references/checks. */
#ifndef GR_DTYPE_H
#define GR_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gr_dtype {
    GR_DTYPE_INVALID = 0,
    GR_FP32,
    GR_BF16,
    GR_FP16,
    GR_INT32,
    GR_INT64
} gr_dtype;

gr_dtype gr_dtype_parse(const char *name); /* GR_DTYPE_INVALID if unknown */
const char *gr_dtype_name(gr_dtype t);
size_t gr_dtype_size(gr_dtype t);
int gr_dtype_is_float(gr_dtype t);
/* Relative-L2 tolerance used when an output declares neither a tolerance nor a depth. */
double gr_dtype_default_rtol(gr_dtype t);
/* Unit roundoff u (half an ulp at 1.0): fp32 2^-24, bf16 2^-8, fp16 2^-11; 0 for integers. */
double gr_dtype_unit_roundoff(gr_dtype t);

/* A check's tolerances (docs/verification.md). Two tests, both must hold:
 *   relative L2:  ||out - ref|| / ||ref|| <= rtol
 *   every element: |out - ref| <= atol * rms(ref) + rtol_elem * |ref|
 * atol is in units of the reference's RMS, so one number fits outputs of any scale. */
typedef struct gr_tol {
    double rtol;
    double atol;
    double rtol_elem;
} gr_tol;

#define GR_TOL_C 0.5      /* rtol = C * sqrt(roundings u(dtype)^2 + depth u(fp32)^2) */
#define GR_TOL_ATOL_K 6.0 /* default atol = K * rtol: no element more than K times the RMS error */
/* Tolerances of an output rounded `roundings` times to dtype t and accumulated in fp32 through
 * `depth` additions on its longest path. */
gr_tol gr_tol_derive(gr_dtype t, double roundings, double depth);
/* The element bounds that go with a relative-L2 tolerance: atol = K * rtol and rtol_elem =
 * max(rtol, 2 u): an element may be off by the L2 tolerance relative to itself, and by at least
 * one ulp of the final store. */
gr_tol gr_tol_from_rtol(gr_dtype t, double rtol);

uint16_t gr_f32_to_bf16(float f); /* round to nearest even, NaN kept NaN */
float gr_bf16_to_f32(uint16_t h);
uint16_t gr_f32_to_f16(float f);
float gr_f16_to_f32(uint16_t h);

double gr_load(const void *base, gr_dtype t, size_t i);
void gr_store(void *base, gr_dtype t, size_t i, double v);

#ifdef __cplusplus
}
#endif
#endif
