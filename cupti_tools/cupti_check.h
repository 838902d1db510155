/* CUPTI failures as gr_errors that name the call and the CUPTI error, with the fix where there is
 * one (another profiler attached, no device, no permission). */
#ifndef GR_CUPTI_CHECK_H
#define GR_CUPTI_CHECK_H

#include <stddef.h>

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* `result` is a CUptiResult. `detail` (may be NULL) is appended, e.g. the other subscriber's
 * name. Returns GR_OK for CUPTI_SUCCESS, else GR_ERR_CUDA. */
gr_status gr_cupti_fail(int result, const char *expr, const char *detail, const char *file, int line,
                        gr_error *err);
/* "CUPTI_ERROR_..." for a CUptiResult. */
const char *gr_cupti_result_name(int result);
/* 1 when err was made from CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED. */
int gr_cupti_other_subscriber(const gr_error *err);
/* Before anything runs: does this process's environment show another CUPTI client that would
 * hold the subscription (Nsight Systems or Compute, another tool's CUDA_INJECTION64_PATH, a
 * profiler preloaded with LD_PRELOAD)? 1 with a sentence naming it and what to do in why; `ours`
 * (may be NULL) is our own injection library, not counted. A program that subscribes by itself
 * (torch.profiler) shows only when it runs: the trace then says so. */
int gr_cupti_other_client(const char *ours, char *why, size_t size);

#define GR_CUPTI(call, err)                                                                        \
    do {                                                                                           \
        int gr_crc_ = (int)(call);                                                                 \
        if (gr_crc_ != 0) return gr_cupti_fail(gr_crc_, #call, NULL, __FILE__, __LINE__, (err));   \
    } while (0)

#ifdef __cplusplus
}
#endif
#endif
