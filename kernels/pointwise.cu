// Pointwise kernels (device side). Napkin math per element, fp32: add/mul read 8 B write 4 B;
// act reads 4 B writes 4 B; fused add_mul_act reads 12 B writes 4 B. So the unfused chain
// (add, mul, act) moves 32 B/element against 16 B fused: the 2x of the lecture. All are
// memory-bound (<= ~10 flops per 16 B), so the goal is the bandwidth floor: the _vec kernel has
// 16-byte loads, V vectors per operand in flight per thread, in one of three forms (attr "form",
// docs/pointwise.md): grid-stride over an SM-sized grid with streaming hints, or one tile per block
// over cdiv(n, tile) blocks (Inductor's Triton shape) with default caching or streaming hints.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "core/cuda_check.h"
#include "kernels/launch.cuh"
#include "kernels/pointwise.h"

namespace {

template <typename T> __device__ __forceinline__ float to_f(T v);
template <> __device__ __forceinline__ float to_f<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
template <> __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }

template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }

template <int ACT> __device__ __forceinline__ float act(float x) {
    if (ACT == GR_ACT_RELU) return x > 0.f ? x : 0.f;
    if (ACT == GR_ACT_GELU) return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    if (ACT == GR_ACT_SILU) return x / (1.f + __expf(-x));
    return x;
}

template <typename T, int OP>
__global__ void binary_kernel(const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ y,
                              int64_t n) {
    gr_pdl_enter();
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float x = to_f(a[i]), z = to_f(b[i]);
        y[i] = from_f<T>(OP == GR_BIN_ADD ? x + z : x * z);
    }
}

template <typename T, int ACT>
__global__ void act_kernel(const T *__restrict__ x, T *__restrict__ y, int64_t n) {
    gr_pdl_enter();
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = from_f<T>(act<ACT>(to_f(x[i])));
}

template <typename T, int ACT>
__global__ void add_mul_act_kernel(const T *__restrict__ a, const T *__restrict__ b,
                                   const T *__restrict__ c, T *__restrict__ y, int64_t n) {
    gr_pdl_enter();
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        y[i] = from_f<T>(act<ACT>((to_f(a[i]) + to_f(b[i])) * to_f(c[i])));
}

// One 16-byte vector of T: 4 floats or 8 bf16/fp16.
template <typename T> struct vec16 {
    static constexpr int N = 16 / sizeof(T);
    union {
        uint4 raw;
        T v[N];
    };
};

template <typename T, int ACT>
__device__ __forceinline__ uint4 fused_vec(uint4 ra, uint4 rb, uint4 rc) {
    vec16<T> a, b, c, y;
    a.raw = ra;
    b.raw = rb;
    c.raw = rc;
#pragma unroll
    for (int k = 0; k < vec16<T>::N; k++)
        y.v[k] = from_f<T>(act<ACT>((to_f(a.v[k]) + to_f(b.v[k])) * to_f(c.v[k])));
    return y.raw;
}

// 16-byte load and store: streaming (ld.global.cs / st.global.cs, evict-first: data touched once)
// or with the default cache policy, which is what Inductor's pointwise Triton kernels use.
template <bool CS> __device__ __forceinline__ uint4 ld16(const uint4 *p) {
    if (CS) return __ldcs(p);
    return *p;
}
template <bool CS> __device__ __forceinline__ void st16(uint4 *p, uint4 v) {
    if (CS) __stcs(p, v);
    else *p = v;
}

template <typename T, int ACT>
__device__ __forceinline__ T fused_scalar(const T *a, const T *b, const T *c, int64_t t) {
    return from_f<T>(act<ACT>((to_f(a[t]) + to_f(b[t])) * to_f(c[t])));
}

// Form grid_stride: a loop over an SM-sized grid; V vectors per operand in flight before the first
// use, streaming hints.
template <typename T, int ACT, int V>
__global__ void add_mul_act_vec_kernel(const T *__restrict__ a, const T *__restrict__ b,
                                       const T *__restrict__ c, T *__restrict__ y, int64_t n) {
    gr_pdl_enter();
    constexpr int N = vec16<T>::N;
    const int64_t nvec = n / N;
    const uint4 *a4 = reinterpret_cast<const uint4 *>(a);
    const uint4 *b4 = reinterpret_cast<const uint4 *>(b);
    const uint4 *c4 = reinterpret_cast<const uint4 *>(c);
    uint4 *y4 = reinterpret_cast<uint4 *>(y);
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (V - 1) * stride < nvec; i += V * stride) {
        uint4 ra[V], rb[V], rc[V];
#pragma unroll
        for (int u = 0; u < V; u++) {
            ra[u] = __ldcs(a4 + i + u * stride);
            rb[u] = __ldcs(b4 + i + u * stride);
            rc[u] = __ldcs(c4 + i + u * stride);
        }
#pragma unroll
        for (int u = 0; u < V; u++) __stcs(y4 + i + u * stride, fused_vec<T, ACT>(ra[u], rb[u], rc[u]));
    }
    for (; i < nvec; i += stride)
        __stcs(y4 + i, fused_vec<T, ACT>(__ldcs(a4 + i), __ldcs(b4 + i), __ldcs(c4 + i)));
    // Scalar tail: the last n % N elements.
    for (int64_t t = nvec * N + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < n; t += stride)
        y[t] = fused_scalar<T, ACT>(a, b, c, t);
}

// Forms tile / tile_cs: block k owns the tile of V x blockDim.x vectors starting at vector
// k V blockDim.x; thread t takes vectors t, t + blockDim.x, ... (each load instruction of a warp
// reads 512 contiguous bytes), all V per operand loaded before the first use. No loop: the grid is
// cdiv(n, tile), so blocks start as others end and no wave is left half full. Only the tile that
// reaches the end is predicated; it also does the scalar tail (n % N elements). At most 64
// registers, so that any block size the "threads" attr allows can launch (registers per form:
// docs/pointwise.md).
template <typename T, int ACT, int V, bool CS>
__global__ void __launch_bounds__(1024)
    add_mul_act_tile_kernel(const T *__restrict__ a, const T *__restrict__ b,
                            const T *__restrict__ c, T *__restrict__ y, int64_t n) {
    gr_pdl_enter();
    constexpr int N = vec16<T>::N;
    const int64_t nvec = n / N;
    const unsigned bd = blockDim.x, t = threadIdx.x;
    const int64_t first = (int64_t)blockIdx.x * V * bd;
    const uint4 *a4 = reinterpret_cast<const uint4 *>(a) + first;
    const uint4 *b4 = reinterpret_cast<const uint4 *>(b) + first;
    const uint4 *c4 = reinterpret_cast<const uint4 *>(c) + first;
    uint4 *y4 = reinterpret_cast<uint4 *>(y) + first;
    uint4 ra[V], rb[V], rc[V];
    if (first + (int64_t)V * bd <= nvec) {
#pragma unroll
        for (int u = 0; u < V; u++) {
            ra[u] = ld16<CS>(a4 + t + u * bd);
            rb[u] = ld16<CS>(b4 + t + u * bd);
            rc[u] = ld16<CS>(c4 + t + u * bd);
        }
#pragma unroll
        for (int u = 0; u < V; u++) st16<CS>(y4 + t + u * bd, fused_vec<T, ACT>(ra[u], rb[u], rc[u]));
        return;
    }
    const int64_t left = nvec - first; // vectors of this tile inside n: 0 <= left < V bd
#pragma unroll
    for (int u = 0; u < V; u++)
        if (t + u * bd < left) {
            ra[u] = ld16<CS>(a4 + t + u * bd);
            rb[u] = ld16<CS>(b4 + t + u * bd);
            rc[u] = ld16<CS>(c4 + t + u * bd);
        }
#pragma unroll
    for (int u = 0; u < V; u++)
        if (t + u * bd < left) st16<CS>(y4 + t + u * bd, fused_vec<T, ACT>(ra[u], rb[u], rc[u]));
    // This is the tile that holds element nvec N (the grid has it when n % N != 0): the tail.
    const int64_t e = nvec * N + t;
    if (e < n) y[e] = fused_scalar<T, ACT>(a, b, c, e);
}

#define GR_DISPATCH_ACT(ACTV, FN, ...)                                                             \
    switch (ACTV) {                                                                                \
    case GR_ACT_RELU: FN<GR_ACT_RELU>(__VA_ARGS__); break;                                         \
    case GR_ACT_GELU: FN<GR_ACT_GELU>(__VA_ARGS__); break;                                         \
    case GR_ACT_SILU: FN<GR_ACT_SILU>(__VA_ARGS__); break;                                         \
    default: FN<GR_ACT_NONE>(__VA_ARGS__); break;                                                  \
    }

struct launch_args {
    dim3 grid, block;
    const gr_launch_ctx *ctx;
    int64_t n;
};

static launch_args args_of(const gr_op *op, const gr_launch_ctx *ctx) {
    launch_args a;
    a.grid = dim3(op->grid[0], op->grid[1], op->grid[2]);
    a.block = dim3(op->block[0], op->block[1], op->block[2]);
    a.ctx = ctx;
    a.n = op->ip[0];
    return a;
}

template <typename T> struct typed {
    template <int ACT> static void act_l(const launch_args &a, const void *x, void *y) {
        gr_launch(act_kernel<T, ACT>, a.grid, a.block, 0, a.ctx, (const T *)x, (T *)y, a.n);
    }
    template <int ACT>
    static void fused_l(const launch_args &a, const void *x, const void *b, const void *c, void *y) {
        gr_launch(add_mul_act_kernel<T, ACT>, a.grid, a.block, 0, a.ctx, (const T *)x, (const T *)b,
                  (const T *)c, (T *)y, a.n);
    }
    template <int ACT, int V>
    static void vec_v(const launch_args &a, int form, const void *x, const void *b, const void *c,
                      void *y) {
        const T *xa = (const T *)x, *ba = (const T *)b, *ca = (const T *)c;
        if (form == GR_PW_TILE)
            gr_launch(add_mul_act_tile_kernel<T, ACT, V, false>, a.grid, a.block, 0, a.ctx, xa, ba,
                      ca, (T *)y, a.n);
        else if (form == GR_PW_TILE_CS)
            gr_launch(add_mul_act_tile_kernel<T, ACT, V, true>, a.grid, a.block, 0, a.ctx, xa, ba,
                      ca, (T *)y, a.n);
        else
            gr_launch(add_mul_act_vec_kernel<T, ACT, V>, a.grid, a.block, 0, a.ctx, xa, ba, ca,
                      (T *)y, a.n);
    }
    template <int ACT>
    static void vec_l(const launch_args &a, int form, int v, const void *x, const void *b,
                      const void *c, void *y) {
        if (v == 1) vec_v<ACT, 1>(a, form, x, b, c, y);
        else if (v == 2) vec_v<ACT, 2>(a, form, x, b, c, y);
        else vec_v<ACT, 4>(a, form, x, b, c, y);
    }
    static void binary(const launch_args &a, int opc, const void *x, const void *b, void *y) {
        if (opc == GR_BIN_ADD)
            gr_launch(binary_kernel<T, GR_BIN_ADD>, a.grid, a.block, 0, a.ctx, (const T *)x, (const T *)b, (T *)y, a.n);
        else
            gr_launch(binary_kernel<T, GR_BIN_MUL>, a.grid, a.block, 0, a.ctx, (const T *)x, (const T *)b, (T *)y, a.n);
    }
    static void act(const launch_args &a, int actv, const void *x, void *y) {
        GR_DISPATCH_ACT(actv, act_l, a, x, y)
    }
    static void fused(const launch_args &a, int actv, const void *x, const void *b, const void *c, void *y) {
        GR_DISPATCH_ACT(actv, fused_l, a, x, b, c, y)
    }
    static void vec(const launch_args &a, int actv, int form, int v, const void *x, const void *b,
                    const void *c, void *y) {
        GR_DISPATCH_ACT(actv, vec_l, a, form, v, x, b, c, y)
    }
};

#define GR_DISPATCH_DTYPE(DT, CALL)                                                                \
    switch (DT) {                                                                                  \
    case GR_FP32: typed<float>::CALL; break;                                                       \
    case GR_BF16: typed<__nv_bfloat16>::CALL; break;                                               \
    case GR_FP16: typed<__half>::CALL; break;                                                      \
    default: return gr_error_set(err, GR_ERR_INTERNAL, op->path, "unsupported dtype");            \
    }

static bool aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

} // namespace

extern "C" gr_status gr_launch_binary(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    launch_args a = args_of(op, ctx);
    const void *x = ctx->dptr[op->inputs[0]], *b = ctx->dptr[op->inputs[1]];
    void *y = ctx->dptr[op->outputs[0]];
    GR_DISPATCH_DTYPE(ctx->plan->bufs[op->outputs[0]].dtype, binary(a, (int)op->ip[1], x, b, y))
    return gr_launch_status(op->kernel->name, op->path, err);
}

extern "C" gr_status gr_launch_act(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    launch_args a = args_of(op, ctx);
    const void *x = ctx->dptr[op->inputs[0]];
    void *y = ctx->dptr[op->outputs[0]];
    GR_DISPATCH_DTYPE(ctx->plan->bufs[op->outputs[0]].dtype, act(a, (int)op->ip[1], x, y))
    return gr_launch_status(op->kernel->name, op->path, err);
}

extern "C" gr_status gr_launch_add_mul_act(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    launch_args a = args_of(op, ctx);
    const void *x = ctx->dptr[op->inputs[0]], *b = ctx->dptr[op->inputs[1]],
               *c = ctx->dptr[op->inputs[2]];
    void *y = ctx->dptr[op->outputs[0]];
    GR_DISPATCH_DTYPE(ctx->plan->bufs[op->outputs[0]].dtype, fused(a, (int)op->ip[1], x, b, c, y))
    return gr_launch_status(op->kernel->name, op->path, err);
}

extern "C" gr_status gr_launch_add_mul_act_vec(const gr_op *op, const gr_launch_ctx *ctx,
                                               gr_error *err) {
    launch_args a = args_of(op, ctx);
    const void *x = ctx->dptr[op->inputs[0]], *b = ctx->dptr[op->inputs[1]],
               *c = ctx->dptr[op->inputs[2]];
    void *y = ctx->dptr[op->outputs[0]];
    if (!aligned16(x) || !aligned16(b) || !aligned16(c) || !aligned16(y))
        return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                            "add_mul_act_vec needs 16-byte aligned buffers");
    GR_DISPATCH_DTYPE(ctx->plan->bufs[op->outputs[0]].dtype,
                      vec(a, (int)op->ip[1], (int)op->ip[2], (int)op->ip[3], x, b, c, y))
    return gr_launch_status(op->kernel->name, op->path, err);
}
