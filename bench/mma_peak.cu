// gr_mma_peak: the throughput ceiling of the instructions the tc linear kernel is built on, so
// its layer times can be compared with what the SM can issue at all. Each warp runs a loop of
// independent mma.sync (8 accumulators, so no MMA waits for the previous one) or FFMA chains on
// register operands (no memory traffic); the grid is `blocks per SM` x SM count blocks of
// `warps` warps. Reported: multiply-adds per SM per clock at the SM clock the GPU reports under
// load (nvidia-smi's), and TFLOP/s. Timed with CUDA events after a warm-up launch, median of 7.
//   gr_mma_peak [iterations]
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(x)                                                                                   \
    do {                                                                                        \
        cudaError_t e_ = (x);                                                                   \
        if (e_ != cudaSuccess) {                                                                \
            fprintf(stderr, "gr_mma_peak: %s failed: %s\n", #x, cudaGetErrorString(e_));       \
            exit(1);                                                                            \
        }                                                                                       \
    } while (0)

enum { OP_TF32, OP_BF16, OP_FFMA };
static const char *const op_names[] = {"mma.sync m16n8k8 tf32", "mma.sync m16n8k16 bf16",
                                       "ffma fp32"};
// per warp and chain step: one MMA, or 4 FFMAs of 32 lanes
static const double macs_per_op[] = {16 * 8 * 8, 16 * 8 * 16, 4 * 32};

template <int OP> __global__ void peak_kernel(int iters, float *sink) {
    float acc[8][4];
    for (int c = 0; c < 8; c++)
        for (int r = 0; r < 4; r++) acc[c][r] = 0.f;
    const uint32_t a0 = 0x3f800000u + threadIdx.x, a1 = a0 ^ 0x100u, b0 = a0 ^ 0x40u, b1 = a0 ^ 0x8u;
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int c = 0; c < 8; c++) {
            if (OP == OP_TF32)
                asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
                             "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                             : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
                             : "r"(a0), "r"(a1), "r"(a1), "r"(a0), "r"(b0), "r"(b1));
            else if (OP == OP_BF16)
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                             "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                             : "+f"(acc[c][0]), "+f"(acc[c][1]), "+f"(acc[c][2]), "+f"(acc[c][3])
                             : "r"(a0), "r"(a1), "r"(a1), "r"(a0), "r"(b0), "r"(b1));
            else
#pragma unroll
                for (int r = 0; r < 4; r++)
                    acc[c][r] = fmaf(acc[c][r], __uint_as_float(a0 & 0x3f8fffffu), 1e-7f);
        }
    }
    float s = 0.f;
    for (int c = 0; c < 8; c++)
        for (int r = 0; r < 4; r++) s += acc[c][r];
    if (s == 12345.678f) sink[threadIdx.x] = s; // keeps the loop alive
}

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 4096;
    if (iters < 1) {
        fprintf(stderr, "gr_mma_peak: iterations must be a positive integer (got \"%s\")\n", argv[1]);
        return 2;
    }
    int dev = 0, sms = 0, clk_khz = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceCount(&sms) != cudaSuccess || sms < 1) {
        fprintf(stderr, "gr_mma_peak: no CUDA device\n");
        return 3;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    sms = prop.multiProcessorCount;
    CK(cudaDeviceGetAttribute(&clk_khz, cudaDevAttrClockRate, dev));
    const char *mhz_env = getenv("GR_SM_MHZ"); // the clock under load, if known (nvidia-smi)
    double mhz = mhz_env ? atof(mhz_env) : clk_khz / 1000.0;
    printf("%s, %d SMs, cc %d.%d, MAC/clk/SM at %.0f MHz (%s), %d iterations x 8 chains\n",
           prop.name, sms, prop.major, prop.minor, mhz, mhz_env ? "GR_SM_MHZ" : "max clock", iters);
    float *sink;
    CK(cudaMalloc(&sink, 1024 * sizeof(float)));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    static const int warp_counts[] = {4, 8, 16};
    for (int op = 0; op < 3; op++)
        for (int wi = 0; wi < 3; wi++) {
            const int warps = warp_counts[wi], blocks = sms; // one block per SM
            void (*k)(int, float *) = op == OP_TF32   ? peak_kernel<OP_TF32>
                                      : op == OP_BF16 ? peak_kernel<OP_BF16>
                                                      : peak_kernel<OP_FFMA>;
            k<<<blocks, 32 * warps>>>(iters, sink);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            float ms[7];
            for (int r = 0; r < 7; r++) {
                CK(cudaEventRecord(e0));
                k<<<blocks, 32 * warps>>>(iters, sink);
                CK(cudaEventRecord(e1));
                CK(cudaEventSynchronize(e1));
                CK(cudaEventElapsedTime(&ms[r], e0, e1));
            }
            qsort(ms, 7, sizeof(float), cmp_f);
            double macs = macs_per_op[op] * 8.0 * iters * warps * blocks;
            double per_sm_clk = macs / (ms[3] * 1e-3) / sms / (mhz * 1e6);
            printf("  %-24s %2d warps/SM: %8.1f MAC/clk/SM  %7.1f TFLOP/s  (%.3f ms, spread %.3f)\n",
                   op_names[op], warps, per_sm_clk, 2.0 * macs / (ms[3] * 1e-3) / 1e12, ms[3],
                   ms[6] - ms[0]);
        }
    CK(cudaFree(sink));
    return 0;
}
