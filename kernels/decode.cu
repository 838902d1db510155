// The small kernels of the unfused decode step (device side): square, rsqrt(+eps), scale-and-add
// (elementwise), mean over the last dim, and the broadcast mul that RMSNorm needs. They are what
// an eager framework launches for "x.float().pow(2).mean(-1, keepdim=True)" and friends: each
// moves a few KB (B x d elements) and is launch-bound, so they favour one code path per kernel
// over speed: every operand carries its own dtype (fp32, bf16 or fp16), read and written through
// a switch, with fp32 arithmetic. Napkin math per element: square/rsqrt read 1 write 1, scale_add
// reads 2 writes 1 (2 flops), mean reads 1 (1 flop) and writes 1 per row.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "core/cuda_check.h"
#include "core/dtype.h"
#include "kernels/decode.h"
#include "kernels/launch.cuh"

namespace {

__device__ __forceinline__ float ld_any(const void *p, int dt, int64_t i) {
    switch (dt) {
    case GR_BF16:
        return __bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]);
    case GR_FP16:
        return __half2float(static_cast<const __half *>(p)[i]);
    default:
        return static_cast<const float *>(p)[i];
    }
}

__device__ __forceinline__ void st_any(void *p, int dt, int64_t i, float v) {
    switch (dt) {
    case GR_BF16:
        static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
        break;
    case GR_FP16:
        static_cast<__half *>(p)[i] = __float2half_rn(v);
        break;
    default:
        static_cast<float *>(p)[i] = v;
        break;
    }
}

__global__ void elementwise_kernel(const void *a, int ta, const void *b, int tb, void *y, int ty,
                                   int64_t n, int opc, float attr) {
    gr_pdl_enter();
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float x = ld_any(a, ta, i), v;
        if (opc == GR_EW_SQUARE)
            v = x * x;
        else if (opc == GR_EW_RSQRT)
            v = rsqrtf(x + attr);
        else
            v = x + attr * ld_any(b, tb, i);
        st_any(y, ty, i, v);
    }
}

// One block per row (grid-stride over rows); fp32 partial sums, warp shuffles, then one value
// per warp through shared memory.
__global__ void mean_lastdim_kernel(const void *x, int tx, void *y, int ty, int64_t rows,
                                    int64_t cols) {
    __shared__ float warp_sums[32];
    gr_pdl_enter();
    for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
        float s = 0.f;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
            s += ld_any(x, tx, r * cols + c);
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = s;
        __syncthreads();
        if (threadIdx.x < 32) {
            int nw = (int)(blockDim.x >> 5);
            float t = (int)threadIdx.x < nw ? warp_sums[threadIdx.x] : 0.f;
            for (int o = 16; o > 0; o >>= 1)
                t += __shfl_xor_sync(0xffffffffu, t, o);
            if (threadIdx.x == 0) st_any(y, ty, r, t / (float)cols);
        }
        __syncthreads(); // warp_sums is reused by the next row
    }
}

__global__ void mul_bcast_kernel(const void *a, int ta, const void *b, int tb, void *y, int ty,
                                 int64_t rows, int64_t cols, int per_row) {
    gr_pdl_enter();
    int64_t n = rows * cols, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        int64_t j = per_row ? i / cols : i % cols;
        st_any(y, ty, i, ld_any(a, ta, i) * ld_any(b, tb, j));
    }
}

dim3 grid_of(const gr_op *op) {
    return dim3(op->grid[0], op->grid[1], op->grid[2]);
}
dim3 block_of(const gr_op *op) {
    return dim3(op->block[0], op->block[1], op->block[2]);
}

} // namespace

extern "C" gr_status gr_launch_decode_elementwise(const gr_op *op, const gr_launch_ctx *ctx,
                                                  gr_error *err) {
    const void *a = ctx->dptr[op->inputs[0]];
    const void *b = op->ninputs > 1 ? ctx->dptr[op->inputs[1]] : nullptr;
    void *y = ctx->dptr[op->outputs[0]];
    GR_CUDA(gr_launch(elementwise_kernel, grid_of(op), block_of(op), 0, ctx, a, (int)op->ip[2], b,
                      (int)op->ip[3], y, (int)op->ip[4], op->ip[0], (int)op->ip[1],
                      (float)op->fp[0]),
            err);
    return gr_launch_status(op->kernel->name, op->path, err);
}

extern "C" gr_status gr_launch_mean_lastdim(const gr_op *op, const gr_launch_ctx *ctx,
                                            gr_error *err) {
    GR_CUDA(gr_launch(mean_lastdim_kernel, grid_of(op), block_of(op), 0, ctx,
                      (const void *)ctx->dptr[op->inputs[0]], (int)op->ip[2],
                      ctx->dptr[op->outputs[0]], (int)op->ip[3], op->ip[0], op->ip[1]),
            err);
    return gr_launch_status(op->kernel->name, op->path, err);
}

extern "C" gr_status gr_launch_mul_bcast(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    GR_CUDA(gr_launch(mul_bcast_kernel, grid_of(op), block_of(op), 0, ctx,
                      (const void *)ctx->dptr[op->inputs[0]], (int)op->ip[3],
                      (const void *)ctx->dptr[op->inputs[1]], (int)op->ip[4],
                      ctx->dptr[op->outputs[0]], (int)op->ip[5], op->ip[0], op->ip[1],
                      (int)op->ip[2]),
            err);
    return gr_launch_status(op->kernel->name, op->path, err);
}
