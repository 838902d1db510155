// Shared-memory mbarriers and bulk copies (cp.async.bulk, the TMA unit; plain and tensor-map
// forms) for the kernels that stream operands through a ring of shared-memory slots (the wgmma
// Linear kernel's bulk form in dlrm_wg_sm90a.cu). Every wait is bounded: one that has not finished after 10 s is a bug (a lost
// arrival, a wrong byte count), so it traps and the launch fails with an error instead of hanging
// the device.
#ifndef GR_KERNELS_MBARRIER_CUH
#define GR_KERNELS_MBARRIER_CUH

#include <cuda_runtime.h>
#include <stdint.h>

// The instructions are sm_90's; the checks refuse older targets, and a build for one compiles
// these to traps.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define GR_SM90(...) __VA_ARGS__
#else
#define GR_SM90(...) __trap()
#endif

namespace {

__device__ __forceinline__ uint32_t smem_u32(const void *p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
constexpr unsigned long long kSpinLimitNs = 10000000000ull;

__device__ __forceinline__ void mbar_init(unsigned long long *bar, unsigned count) {
    GR_SM90(asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count)
                         : "memory"));
}
// After a block's mbar_init calls, before any other thread or the async proxy uses them.
__device__ __forceinline__ void mbar_init_fence() {
    GR_SM90(asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"));
}
// One arrival that also expects `bytes` of bulk copies to complete on the barrier.
__device__ __forceinline__ void mbar_expect_tx(unsigned long long *bar, unsigned bytes) {
    GR_SM90(asm volatile(
        "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)), "r"(bytes)
        : "memory"));
}
__device__ __forceinline__ void mbar_arrive(unsigned long long *bar) {
    GR_SM90(asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar))
                         : "memory"));
}
__device__ __forceinline__ bool mbar_try(unsigned long long *bar, unsigned parity) {
    unsigned ok = 0;
    GR_SM90(asm volatile("{\n\t.reg .pred p;\n\t"
                         "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                         "selp.u32 %0, 1, 0, p;\n\t}"
                         : "=r"(ok)
                         : "r"(smem_u32(bar)), "r"(parity)
                         : "memory"));
    return ok != 0;
}
// Until the phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(unsigned long long *bar, unsigned parity) {
    if (mbar_try(bar, parity)) return;
    const unsigned long long t0 = global_ns();
    while (!mbar_try(bar, parity))
        if (global_ns() - t0 > kSpinLimitNs) __trap();
}
// `bytes` (a multiple of 16; dst and src 16-byte aligned) global -> shared, completing on `bar`,
// with an L2 cache policy (createpolicy).
__device__ __forceinline__ void bulk_load(void *dst, const void *src, unsigned bytes,
                                          unsigned long long *bar, unsigned long long policy) {
    GR_SM90(asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::"
                         "cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(smem_u32(dst)),
                         "l"(src), "r"(bytes), "r"(smem_u32(bar)), "l"(policy)
                         : "memory"));
}
// The same with the default L2 policy.
__device__ __forceinline__ void bulk_load(void *dst, const void *src, unsigned bytes,
                                          unsigned long long *bar) {
    GR_SM90(asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                         "[%0], [%1], %2, [%3];" ::"r"(smem_u32(dst)),
                         "l"(src), "r"(bytes), "r"(smem_u32(bar))
                         : "memory"));
}

// A 2-D box of a tensor map (cuTensorMapEncodeTiled, passed as a __grid_constant__ kernel
// parameter) at coordinates (c0 innermost, c1) global -> shared, completing on `bar`; the box's
// full size counts towards the barrier's bytes, elements outside the tensor are zero-filled.
__device__ __forceinline__ void tma_load_2d(void *dst, const void *map, int c0, int c1,
                                            unsigned long long *bar) {
    GR_SM90(asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::"
                         "complete_tx::bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_u32(dst)),
                         "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(smem_u32(bar))
                         : "memory"));
}

} // namespace

#endif
