// Row softmax y[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max)), as a user brings it: a
// naive version of three kernels with one thread per row (max, sum of exponentials, normalize:
// the row is read three times and two small intermediates go through HBM) and a fused version
// with one block per row that keeps the row in shared memory (read once, written once).
// Napkin math per row of n floats: naive reads 3n and writes n (plus 2 floats), fused reads n
// and writes n: 2x less traffic, and the block-per-row kernel also fills the GPU when rows are
// few. Also built by nvcc -ptx / -cubin / -fatbin in the build (CMake target gr_examples).

__device__ __forceinline__ void pdl_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

extern "C" __global__ void row_max(const float *x, float *mx, int rows, int n) {
    pdl_wait();
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = neg_inf();
    for (int i = 0; i < n; i++) m = fmaxf(m, x[(size_t)r * n + i]);
    mx[r] = m;
}

extern "C" __global__ void row_sumexp(const float *x, const float *mx, float *sum, int rows, int n) {
    pdl_wait();
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += expf(x[(size_t)r * n + i] - mx[r]);
    sum[r] = s;
}

extern "C" __global__ void row_normalize(const float *x, const float *mx, const float *sum, float *y,
                                         int rows, int n) {
    pdl_wait();
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float inv = 1.0f / sum[r];
    for (int i = 0; i < n; i++) y[(size_t)r * n + i] = expf(x[(size_t)r * n + i] - mx[r]) * inv;
}

// Reduce over the block (blockDim.x a multiple of 32, at most 1024): warp shuffles, then warp 0.
template <bool IS_MAX> __device__ float block_reduce(float v) {
    __shared__ float part[32];
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = IS_MAX ? fmaxf(v, w) : v + w;
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads(); // part[] may still be read from the previous call
    if (lane == 0) part[warp] = v;
    __syncthreads();
    int nw = blockDim.x >> 5;
    v = lane < nw ? part[lane] : (IS_MAX ? neg_inf() : 0.0f);
    for (int o = 16; o > 0; o >>= 1) {
        float w = __shfl_xor_sync(0xffffffffu, v, o);
        v = IS_MAX ? fmaxf(v, w) : v + w;
    }
    return v;
}

// One block per row; the row lives in dynamic shared memory (n * 4 bytes: above 48 KB graphrun
// opts the kernel in, up to the GPU's limit).
extern "C" __global__ void softmax_fused(const float *x, float *y, int n) {
    extern __shared__ float row[];
    pdl_wait();
    const float *xr = x + (size_t)blockIdx.x * n;
    float *yr = y + (size_t)blockIdx.x * n;
    float m = neg_inf();
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float v = xr[i];
        row[i] = v;
        m = fmaxf(m, v);
    }
    m = block_reduce<true>(m);
    float s = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float e = expf(row[i] - m);
        row[i] = e;
        s += e;
    }
    s = block_reduce<false>(s);
    float inv = 1.0f / s;
    for (int i = threadIdx.x; i < n; i += blockDim.x) yr[i] = row[i] * inv;
}
