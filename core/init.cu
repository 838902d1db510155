// Buffer initialisation on the device: counter-based random fills (normal, uniform, randint,
// zipf), constants, iota, poison, and copies from files or host memory. One pass over the
// buffer, grid-stride; a few ms for a GB-sized table.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "core/device.h"
#include "core/fileio.h"
#include "core/parallel.h"
#include "core/rng.h"

namespace {

struct fill_params {
    gr_init_kind kind;
    double a, b;
    uint64_t seed;
    uint64_t perm_mul, perm_add; // zipf rank scattering: k -> (k * mul + add) mod range
};

__device__ __host__ inline double fill_value(const fill_params &p, int64_t i) {
    switch (p.kind) {
    case GR_INIT_NORMAL: {
        float u1 = gr_rng_uniform(p.seed, (uint64_t)i, 0), u2 = gr_rng_uniform(p.seed, (uint64_t)i, 1);
        float z = sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958648f * u2);
        return p.a + p.b * (double)z;
    }
    case GR_INIT_UNIFORM: return p.a + (p.b - p.a) * (double)gr_rng_uniform(p.seed, (uint64_t)i, 0);
    case GR_INIT_ZEROS: return 0.0;
    case GR_INIT_ONES: return 1.0;
    case GR_INIT_CONST: return p.a;
    case GR_INIT_IOTA: return p.a + p.b * (double)i;
    case GR_INIT_RANDINT: {
        double span = p.b - p.a;
        double k = floor((double)gr_rng_uniform(p.seed, (uint64_t)i, 0) * span);
        return p.a + (k < span ? k : span - 1);
    }
    case GR_INIT_ZIPF: {
        // Continuous bounded power law on [1, N+1), inverse CDF; rank k = floor(x) - 1.
        double n = p.b, alpha = p.a, u = (double)gr_rng_uniform(p.seed, (uint64_t)i, 0);
        double x;
        if (fabs(alpha - 1.0) < 1e-9) x = exp(u * log(n + 1.0));
        else x = pow((pow(n + 1.0, 1.0 - alpha) - 1.0) * u + 1.0, 1.0 / (1.0 - alpha));
        uint64_t k = (uint64_t)floor(x) - 1u;
        uint64_t N = (uint64_t)n;
        if (k >= N) k = N - 1;
        unsigned __int128 s = (unsigned __int128)k * p.perm_mul + p.perm_add;
        return (double)(uint64_t)(s % N);
    }
    default: return 0.0;
    }
}

template <typename T> __device__ inline void store(T *p, int64_t i, double v);
template <> __device__ inline void store<float>(float *p, int64_t i, double v) { p[i] = (float)v; }
template <> __device__ inline void store<__nv_bfloat16>(__nv_bfloat16 *p, int64_t i, double v) {
    p[i] = __float2bfloat16_rn((float)v);
}
template <> __device__ inline void store<__half>(__half *p, int64_t i, double v) {
    p[i] = __float2half_rn((float)v);
}
template <> __device__ inline void store<int32_t>(int32_t *p, int64_t i, double v) { p[i] = (int32_t)v; }
template <> __device__ inline void store<int64_t>(int64_t *p, int64_t i, double v) { p[i] = (int64_t)v; }

template <typename T> __global__ void fill_kernel(T *p, int64_t n, fill_params fp) {
    int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        store<T>(p, i, fill_value(fp, i));
}

uint64_t gcd64(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

fill_params params_of(const gr_init *init) {
    fill_params p;
    p.kind = init->kind;
    p.a = init->a;
    p.b = init->b;
    p.seed = init->seed;
    p.perm_mul = 1;
    p.perm_add = 0;
    if (init->kind == GR_INIT_ZIPF) {
        uint64_t N = (uint64_t)init->b;
        uint64_t mul = (gr_rng_mix(init->seed) % (N > 1 ? N : 1)) | 1u;
        while (N > 1 && gcd64(mul, N) != 1) mul += 2;
        p.perm_mul = N > 1 ? mul % N : 0;
        p.perm_add = N > 1 ? gr_rng_mix(init->seed + 1) % N : 0;
        if (N > 1 && p.perm_mul == 0) p.perm_mul = 1;
    }
    return p;
}

/* Through core/fileio: a regular file within the data limit, of exactly the buffer's size (it
 * was checked at resolution; this catches a file changed since). */
gr_status read_file(const gr_init *init, size_t bytes, void **out, gr_error *err) {
    FILE *f = NULL;
    uint64_t size = 0;
    GR_TRY(gr_file_open(init->path, GR_FILE_DATA, &f, &size, err));
    if (size != (uint64_t)bytes) {
        fclose(f);
        return gr_error_set(err, GR_ERR_INPUT, init->path,
                            "init file has %llu bytes; the buffer needs exactly %zu (did it change "
                            "since the workload was checked?)",
                            (unsigned long long)size, bytes);
    }
    void *buf = malloc(bytes ? bytes : 1);
    if (!buf) {
        fclose(f);
        return gr_error_set(err, GR_ERR_NOMEM, init->path, "out of host memory reading init file");
    }
    size_t got = fread(buf, 1, bytes, f);
    fclose(f);
    if (got != bytes) {
        free(buf);
        return gr_error_set(err, GR_ERR_IO, init->path, "read %zu of %zu bytes", got, bytes);
    }
    *out = buf;
    return GR_OK;
}

} // namespace

extern "C" gr_status gr_fill_device(void *dptr, gr_dtype t, int64_t n, const gr_init *init,
                                    const void *host_src, gr_stream_t stream, gr_error *err) {
    cudaStream_t s = (cudaStream_t)stream;
    size_t bytes = (size_t)n * gr_dtype_size(t);
    switch (init->kind) {
    case GR_INIT_NONE: GR_CUDA(cudaMemsetAsync(dptr, 0xFF, bytes, s), err); return GR_OK;
    case GR_INIT_ZEROS: GR_CUDA(cudaMemsetAsync(dptr, 0, bytes, s), err); return GR_OK;
    case GR_INIT_HOST:
        if (!host_src)
            return gr_error_set(err, GR_ERR_INPUT, NULL,
                                "a buffer with init \"host\" was not given data by the program");
        GR_CUDA(cudaMemcpyAsync(dptr, host_src, bytes, cudaMemcpyHostToDevice, s), err);
        GR_CUDA(cudaStreamSynchronize(s), err);
        return GR_OK;
    case GR_INIT_FILE: {
        void *buf = NULL;
        GR_TRY(read_file(init, bytes, &buf, err));
        cudaError_t rc = cudaMemcpyAsync(dptr, buf, bytes, cudaMemcpyHostToDevice, s);
        if (rc == cudaSuccess) rc = cudaStreamSynchronize(s);
        free(buf);
        GR_CUDA(rc, err);
        return GR_OK;
    }
    default: break;
    }
    fill_params fp = params_of(init);
    int64_t blocks = (n + 255) / 256;
    if (blocks > 132 * 16) blocks = 132 * 16;
    if (blocks < 1) blocks = 1;
    switch (t) {
    case GR_FP32: fill_kernel<float><<<(unsigned)blocks, 256, 0, s>>>((float *)dptr, n, fp); break;
    case GR_BF16:
        fill_kernel<__nv_bfloat16><<<(unsigned)blocks, 256, 0, s>>>((__nv_bfloat16 *)dptr, n, fp);
        break;
    case GR_FP16: fill_kernel<__half><<<(unsigned)blocks, 256, 0, s>>>((__half *)dptr, n, fp); break;
    case GR_INT32: fill_kernel<int32_t><<<(unsigned)blocks, 256, 0, s>>>((int32_t *)dptr, n, fp); break;
    case GR_INT64: fill_kernel<int64_t><<<(unsigned)blocks, 256, 0, s>>>((int64_t *)dptr, n, fp); break;
    default: return gr_error_set(err, GR_ERR_INTERNAL, NULL, "fill: bad dtype");
    }
    return gr_launch_status("gr_fill", NULL, err);
}

namespace {
struct host_fill {
    void *host;
    gr_dtype t;
    fill_params fp;
};

int fill_chunk(void *ctx, int64_t chunk, int64_t b, int64_t e) {
    const host_fill *h = (const host_fill *)ctx;
    (void)chunk;
    for (int64_t i = b; i < e; i++) gr_store(h->host, h->t, (size_t)i, fill_value(h->fp, i));
    return 0;
}
} // namespace

extern "C" gr_status gr_fill_host(void *host, gr_dtype t, int64_t n, const gr_init *init,
                                  gr_error *err) {
    size_t bytes = (size_t)n * gr_dtype_size(t);
    switch (init->kind) {
    case GR_INIT_NONE: memset(host, 0xFF, bytes); return GR_OK;
    case GR_INIT_ZEROS: memset(host, 0, bytes); return GR_OK;
    case GR_INIT_HOST:
        return gr_error_set(err, GR_ERR_INPUT, NULL, "init \"host\" data comes from the program");
    case GR_INIT_FILE: {
        void *buf = NULL;
        GR_TRY(read_file(init, bytes, &buf, err));
        memcpy(host, buf, bytes);
        free(buf);
        return GR_OK;
    }
    default: break;
    }
    fill_params fp = params_of(init);
    host_fill h = {host, t, fp};
    /* counter-based values: any split of the range gives the same bytes */
    gr_parallel_for(n, 1 << 16, fill_chunk, &h);
    return GR_OK;
}
