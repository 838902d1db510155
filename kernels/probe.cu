// Launch-measurement kernels (device side). `empty` has no memory traffic: its time is launch
// overhead alone. `tiny` reads and writes n elements (n small, one block): ~8n bytes, n flops.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "core/cuda_check.h"
#include "kernels/launch.cuh"
#include "kernels/probe.h"

namespace {
__global__ void empty_kernel() { gr_pdl_enter(); }

template <typename T> __device__ __forceinline__ float ld(const T *p, int64_t i);
template <> __device__ __forceinline__ float ld<float>(const float *p, int64_t i) { return p[i]; }
template <> __device__ __forceinline__ float ld<__nv_bfloat16>(const __nv_bfloat16 *p, int64_t i) {
    return __bfloat162float(p[i]);
}
template <> __device__ __forceinline__ float ld<__half>(const __half *p, int64_t i) {
    return __half2float(p[i]);
}
__device__ __forceinline__ void st(float *p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void st(__nv_bfloat16 *p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }
__device__ __forceinline__ void st(__half *p, int64_t i, float v) { p[i] = __float2half_rn(v); }

template <typename T>
__global__ void tiny_kernel(const T *x, T *y, int64_t n, float c) {
    gr_pdl_enter();
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        st(y, i, ld(x, i) + c);
}
} // namespace

extern "C" gr_status gr_launch_empty(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    gr_launch(empty_kernel, dim3(op->grid[0]), dim3(op->block[0]), 0, ctx);
    return gr_launch_status(op->kernel->name, op->path, err);
}

extern "C" gr_status gr_launch_tiny(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    dim3 g(op->grid[0]), b(op->block[0]);
    const void *x = ctx->dptr[op->inputs[0]];
    void *y = ctx->dptr[op->outputs[0]];
    int64_t n = op->ip[0];
    float c = (float)op->fp[0];
    switch (ctx->plan->bufs[op->outputs[0]].dtype) {
    case GR_FP32: gr_launch(tiny_kernel<float>, g, b, 0, ctx, (const float *)x, (float *)y, n, c); break;
    case GR_BF16:
        gr_launch(tiny_kernel<__nv_bfloat16>, g, b, 0, ctx, (const __nv_bfloat16 *)x, (__nv_bfloat16 *)y, n, c);
        break;
    case GR_FP16: gr_launch(tiny_kernel<__half>, g, b, 0, ctx, (const __half *)x, (__half *)y, n, c); break;
    default: return gr_error_set(err, GR_ERR_INTERNAL, op->path, "unsupported dtype");
    }
    return gr_launch_status(op->kernel->name, op->path, err);
}
