/* dtype names, sizes and the host-side float <-> bf16/fp16 conversions (bit-exact with the
 * device's round-to-nearest-even conversions, so CPU references see the same rounding). */
#include "core/dtype.h"

#include <math.h>
#include <string.h>

gr_dtype gr_dtype_parse(const char *name) {
    if (!name) return GR_DTYPE_INVALID;
    if (!strcmp(name, "fp32") || !strcmp(name, "float32")) return GR_FP32;
    if (!strcmp(name, "bf16") || !strcmp(name, "bfloat16")) return GR_BF16;
    if (!strcmp(name, "fp16") || !strcmp(name, "float16")) return GR_FP16;
    if (!strcmp(name, "int32")) return GR_INT32;
    if (!strcmp(name, "int64")) return GR_INT64;
    return GR_DTYPE_INVALID;
}

const char *gr_dtype_name(gr_dtype t) {
    switch (t) {
    case GR_FP32: return "fp32";
    case GR_BF16: return "bf16";
    case GR_FP16: return "fp16";
    case GR_INT32: return "int32";
    case GR_INT64: return "int64";
    default: return "invalid";
    }
}

size_t gr_dtype_size(gr_dtype t) {
    switch (t) {
    case GR_FP32: return 4;
    case GR_BF16: return 2;
    case GR_FP16: return 2;
    case GR_INT32: return 4;
    case GR_INT64: return 8;
    default: return 0;
    }
}

int gr_dtype_is_float(gr_dtype t) {
    return t == GR_FP32 || t == GR_BF16 || t == GR_FP16;
}

double gr_dtype_default_rtol(gr_dtype t) {
    switch (t) {
    case GR_FP32: return 1e-5;
    case GR_BF16: return 1e-2;
    case GR_FP16: return 2e-3;
    default: return 0.0;
    }
}

double gr_dtype_unit_roundoff(gr_dtype t) {
    switch (t) {
    case GR_FP32: return ldexp(1.0, -24);
    case GR_BF16: return ldexp(1.0, -8);
    case GR_FP16: return ldexp(1.0, -11);
    default: return 0.0;
    }
}

gr_tol gr_tol_derive(gr_dtype t, double roundings, double depth) {
    double u = gr_dtype_unit_roundoff(t), u32 = gr_dtype_unit_roundoff(GR_FP32);
    /* fp32 outputs accumulate in their own dtype; integer outputs are exact */
    double acc = gr_dtype_is_float(t) ? depth * u32 * u32 : 0.0;
    return gr_tol_from_rtol(t, GR_TOL_C * sqrt(roundings * u * u + acc));
}

gr_tol gr_tol_from_rtol(gr_dtype t, double rtol) {
    double ulp = 2 * gr_dtype_unit_roundoff(t);
    gr_tol tol = {rtol, GR_TOL_ATOL_K * rtol, rtol > ulp ? rtol : ulp};
    return tol;
}

static uint32_t f2u(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float u2f(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t gr_f32_to_bf16(float f) {
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float gr_bf16_to_f32(uint16_t h) {
    return u2f((uint32_t)h << 16);
}

uint16_t gr_f32_to_f16(float f) {
    uint32_t x = f2u(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;
    if (absx > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (absx >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to inf */
    if (absx < 0x38800000u) {                                      /* subnormal or zero */
        if (absx < 0x33000000u) return (uint16_t)sign;
        uint32_t e = absx >> 23;
        uint32_t m = (absx & 0x7fffffu) | 0x800000u;
        uint32_t shift = 126u - e; /* 14 + (113 - e) - 1 */
        uint32_t r = m >> (shift);
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (r & 1u))) r++;
        return (uint16_t)(sign | r);
    }
    uint32_t e = (absx >> 23) - 112u;
    uint32_t m = absx & 0x7fffffu;
    uint32_t r = (e << 10) | (m >> 13);
    uint32_t rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) r++;
    return (uint16_t)(sign | r);
}

float gr_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0) {
        if (m == 0) return u2f(sign);
        float v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    if (e == 31) return u2f(sign | 0x7f800000u | (m << 13));
    return u2f(sign | ((e + 112u) << 23) | (m << 13));
}

double gr_load(const void *base, gr_dtype t, size_t i) {
    switch (t) {
    case GR_FP32: return ((const float *)base)[i];
    case GR_BF16: return gr_bf16_to_f32(((const uint16_t *)base)[i]);
    case GR_FP16: return gr_f16_to_f32(((const uint16_t *)base)[i]);
    case GR_INT32: return ((const int32_t *)base)[i];
    case GR_INT64: return (double)((const int64_t *)base)[i];
    default: return NAN;
    }
}

void gr_store(void *base, gr_dtype t, size_t i, double v) {
    switch (t) {
    case GR_FP32: ((float *)base)[i] = (float)v; break;
    case GR_BF16: ((uint16_t *)base)[i] = gr_f32_to_bf16((float)v); break;
    case GR_FP16: ((uint16_t *)base)[i] = gr_f32_to_f16((float)v); break;
    case GR_INT32: ((int32_t *)base)[i] = (int32_t)v; break;
    case GR_INT64: ((int64_t *)base)[i] = (int64_t)v; break;
    default: break;
    }
}
