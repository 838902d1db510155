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
/* Relative-L2 tolerance used when a check does not say otherwise. */
double gr_dtype_default_rtol(gr_dtype t);

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
