// y = relu((a + b) * c), written the way a user writes it: three one-job kernels (unfused, two
// intermediates go to HBM and back), one fused kernel, and the fused kernel with float4
// (16-byte) loads. Compiled by graphrun with NVRTC; kernels are extern "C" so the workload can
// name them. Napkin math per element: unfused reads 4 and writes 3 floats (28 B), fused reads
// 3 and writes 1 (16 B): fusion moves 1.75x less.

// PDL: wait for the previous kernel's writes before touching memory (a no-op without PDL).
__device__ __forceinline__ void pdl_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

extern "C" __global__ void add(const float *a, const float *b, float *s, int n) {
    pdl_wait();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        s[i] = a[i] + b[i];
}

extern "C" __global__ void mul(const float *s, const float *c, float *m, int n) {
    pdl_wait();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        m[i] = s[i] * c[i];
}

extern "C" __global__ void relu(const float *m, float *y, int n) {
    pdl_wait();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = fmaxf(m[i], 0.0f);
}

extern "C" __global__ void add_mul_relu(const float *a, const float *b, const float *c, float *y,
                                        int n) {
    pdl_wait();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = fmaxf((a[i] + b[i]) * c[i], 0.0f);
}

// float4: n4 = n / 4 vectors, then a scalar tail. cudaMalloc'ed buffers are 256-byte aligned.
extern "C" __global__ void add_mul_relu_vec4(const float4 *a, const float4 *b, const float4 *c,
                                             float4 *y, int n, float scale) {
    pdl_wait();
    int n4 = n / 4;
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 x = a[i], w = b[i], v = c[i], r;
        r.x = fmaxf((x.x + w.x) * v.x, 0.0f) * scale;
        r.y = fmaxf((x.y + w.y) * v.y, 0.0f) * scale;
        r.z = fmaxf((x.z + w.z) * v.z, 0.0f) * scale;
        r.w = fmaxf((x.w + w.w) * v.w, 0.0f) * scale;
        y[i] = r;
    }
    const float *af = (const float *)a, *bf = (const float *)b, *cf = (const float *)c;
    float *yf = (float *)y;
    for (int i = 4 * n4 + blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        yf[i] = fmaxf((af[i] + bf[i]) * cf[i], 0.0f) * scale;
}
