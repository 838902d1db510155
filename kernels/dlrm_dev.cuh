// Device helpers shared by the DLRM kernels of dlrm.cu and dlrm_wg.cu (the wgmma Linear kernel,
// compiled for sm_90a in its own translation unit): PDL's two halves, cp.async, the activation
// epilogue and the TF32 split of 3xTF32.
#ifndef GR_KERNELS_DLRM_DEV_CUH
#define GR_KERNELS_DLRM_DEV_CUH

#include <cuda.h> /* CUtensorMap */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "kernels/dlrm.h"

namespace {

// The two halves of gr_pdl_enter(), to be placed apart (see the PDL protocol at the top of
// dlrm.cu). Without PDL both are no-ops.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

template <int ACT> __device__ __forceinline__ float act_f(float v) {
    if (ACT == GR_DLRM_ACT_RELU) return v > 0.f ? v : 0.f;
    if (ACT == GR_DLRM_ACT_SIGMOID) return 1.f / (1.f + expf(-v));
    return v;
}

__device__ __forceinline__ unsigned smem_addr(const void *p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, through L2 only; `bytes` (16 or 0) are read, the rest zero-filled.
__device__ __forceinline__ void cp_async16(float *dst, const float *src, int bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(bytes)
                 : "memory");
}

// 4 bytes global -> shared; `bytes` (4 or 0) are read, the rest zero-filled.
__device__ __forceinline__ void cp_async4(float *dst, const float *src, int bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Wait until at most N of this thread's committed groups are still in flight.
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ uint32_t to_tf32(float v) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(v));
    return r;
}

// One pass: big = v rounded to TF32 (cvt.rna). Three passes: big = v rounded to TF32 to
// nearest, ties away (add half a TF32 ulp to the bits, clear the 13 low ones: an integer add and
// a mask instead of cvt.rna's longer sequence), small = v - big (exact in fp32) handed over as
// fp32 bits, which the MMA truncates to TF32 (CUTLASS's fast 3xTF32 does the same): 3 ALU
// instructions per element, about half of two cvt.rna and a subtraction. The truncation costs
// at most 2^-10 of small, ~2^-21 of v.
template <int PASSES>
__device__ __forceinline__ void tf32_split(float v, uint32_t &big, uint32_t &small) {
    if (PASSES == 3) {
        big = (__float_as_uint(v) + 0x1000u) & 0xFFFFE000u;
        small = __float_as_uint(v - __uint_as_float(big));
    } else
        big = to_tf32(v);
}

__device__ __forceinline__ float4 lds128(const float *p) {
    return *reinterpret_cast<const float4 *>(p);
}

// acc[i][j] += a[i] . b[j] over the 4 components in order (x, y, z, w): the 4 x 4 outer-product
// step of the SIMT Linear kernel and of the interaction's dot blocks.
__device__ __forceinline__ void fma4x4(float (&acc)[4][4], const float4 (&a)[4],
                                       const float4 (&b)[4]) {
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float c = acc[i][j];
            c = fmaf(a[i].x, b[j].x, c);
            c = fmaf(a[i].y, b[j].y, c);
            c = fmaf(a[i].z, b[j].z, c);
            acc[i][j] = fmaf(a[i].w, b[j].w, c);
        }
}

// Component s of a float4 (s a compile-time constant after unrolling).
__device__ __forceinline__ float f4(const float4 &v, int s) {
    return s == 0 ? v.x : s == 1 ? v.y : s == 2 ? v.z : v.w;
}

// 4 consecutive floats of a stage row: one 16-byte load where the row is aligned (VEC), else 4.
template <bool VEC> __device__ __forceinline__ float4 lds4(const float *p) {
    if (VEC) return lds128(p);
    return make_float4(p[0], p[1], p[2], p[3]);
}

enum { TILE_X = 1, TILE_W = 2 }; // which rows of a stage to copy

// Copies stage k0 (x rows m0 .. m0 + BM - 1, then W rows n0 .. n0 + BN - 1, k0 .. k0 + KT - 1)
// into `st`. The 256 threads take consecutive pieces of one row (KT / 4 of 16 bytes, or KT
// floats), so each row's KT floats are one contiguous read.
// LD: the stage's row pitch in floats (the tiled kernel's KT + 4; the tensor-core kernel's
// KT + 16, for its 16-byte fragment reads).
template <int BM, int BN, int KT, int NT, bool VEC, int LD = KT + 4>
__device__ __forceinline__ void tiled_copy(float *st, const float *__restrict__ X,
                                           const float *__restrict__ W, int M, int N, int K, int m0,
                                           int n0, int k0, int which) {
    constexpr int PER_ROW = VEC ? KT / 4 : KT; // pieces per row
    constexpr int PIECES = (BM + BN) * PER_ROW;
    static_assert(PIECES % NT == 0, "every thread copies the same number of pieces");
#pragma unroll
    for (int u = 0; u < PIECES / NT; u++) {
        const int c = (int)threadIdx.x + u * NT;
        const int r = c / PER_ROW, q = c % PER_ROW;
        const bool w = r >= BM;
        if (!(which & (w ? TILE_W : TILE_X))) continue;
        const int row = w ? n0 + (r - BM) : m0 + r;
        const float *A = w ? W : X;
        const int k = k0 + (VEC ? 4 * q : q);
        // K % 4 == 0 with VEC: a 16-byte piece is wholly inside K or wholly past it
        const bool ok = row < (w ? N : M) && k < K;
        const float *src = ok ? A + (size_t)row * (size_t)K + k : A;
        float *dst = st + r * LD + (VEC ? 4 * q : q);
        if (VEC)
            cp_async16(dst, src, ok ? 16 : 0);
        else
            cp_async4(dst, src, ok ? 4 : 0);
    }
}

// Copies stage k0 (GR_LIN_MMA_KT wide, rows LD floats apart) for the tc and wg kernels. K % 4 == 0:
// tiled_copy's 16-byte pieces. Otherwise a row's k0 is not 16-byte aligned, and 4-byte copies (4x
// the copy instructions; they bound the tiled kernel on K = 367) are replaced by 9 aligned 16-byte
// pieces per row from k0 rounded down: element k0 + kk of row `row` lands at column kk + mis, mis =
// (row K) % 4 (buffers are cudaMalloc'd, so 16-byte aligned). Pieces are zero-filled from k = K on;
// columns below mis (k < k0, or the previous row's tail for k0 = 0) are copied but never read.
template <int BM, int BN, int NT, bool VEC, int LD = GR_LIN_MMA_LD>
__device__ __forceinline__ void tc_copy(float *st, const float *__restrict__ X,
                                        const float *__restrict__ W, int M, int N, int K, int m0,
                                        int n0, int k0, int which) {
    if (VEC) {
        tiled_copy<BM, BN, GR_LIN_MMA_KT, NT, true, LD>(st, X, W, M, N, K, m0, n0, k0, which);
        return;
    }
    constexpr int PER_ROW = GR_LIN_MMA_KT / 4 + 1, PIECES = (BM + BN) * PER_ROW;
    static_assert(PER_ROW * 4 <= LD, "a shifted row fits the stage's pitch");
    for (int c = (int)threadIdx.x; c < PIECES; c += NT) {
        const int r = c / PER_ROW, q = c % PER_ROW;
        const bool w = r >= BM;
        if (!(which & (w ? TILE_W : TILE_X))) continue;
        const int row = w ? n0 + (r - BM) : m0 + r;
        const float *A = w ? W : X;
        const size_t e0 = (size_t)row * (size_t)K + (size_t)k0; // element (row, k0)
        const int mis = (int)(e0 & 3), k = k0 - mis + 4 * q;    // the piece's first k
        int valid = row < (w ? N : M) ? K - k : 0;              // elements of the row from k on
        valid = valid < 0 ? 0 : valid > 4 ? 4 : valid;
        cp_async16(st + r * LD + 4 * q, valid ? A + (e0 - mis + 4 * q) : A, 4 * valid);
    }
}

} // namespace

// The wg kernel of the op's configuration (GR_LIN_W64, GR_LIN_W128), passes, activation and
// copy width, and its dynamic shared memory (dlrm_wg_sm90a.cu); NULL for an unknown
// configuration. Same signature as the tiled and tc kernels, so one launch path serves all three.
typedef void (*gr_lin_staged_kernel_t)(const float *, const float *, const float *, float *, int,
                                       int, int, int);
gr_lin_staged_kernel_t gr_lin_wg_kernel_of(const gr_op *op, size_t *smem);

// The wg kernel's bulk form (configuration GR_LIN_W64B, dlrm_wg_sm90a.cu): x and W come as
// tensor maps (cuTensorMapEncodeTiled: 2-D, fp32, boxes of 32 k x 64 rows, 128-byte swizzle, zero
// fill), the rest as above. The kernel of the op's passes and activation and its dynamic shared
// memory; NULL for another configuration.
typedef void (*gr_lin_wgb_kernel_t)(const CUtensorMap, const CUtensorMap, const float *, float *,
                                    int, int, int, int);
gr_lin_wgb_kernel_t gr_lin_wgb_kernel_of(const gr_op *op, size_t *smem);

#endif
