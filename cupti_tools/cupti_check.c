/* CUPTI error names and hints. The names are spelled out here rather than asked of CUPTI so a
 * message can be made (and tested) where CUPTI cannot initialise. */
#include "cupti_tools/cupti_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gr_cupti_result_name(int r) {
    switch (r) {
    case 0: return "CUPTI_SUCCESS";
    case 1: return "CUPTI_ERROR_INVALID_PARAMETER";
    case 2: return "CUPTI_ERROR_INVALID_DEVICE";
    case 3: return "CUPTI_ERROR_INVALID_CONTEXT";
    case 7: return "CUPTI_ERROR_INVALID_OPERATION";
    case 8: return "CUPTI_ERROR_OUT_OF_MEMORY";
    case 9: return "CUPTI_ERROR_HARDWARE";
    case 11: return "CUPTI_ERROR_API_NOT_IMPLEMENTED";
    case 12: return "CUPTI_ERROR_MAX_LIMIT_REACHED";
    case 13: return "CUPTI_ERROR_NOT_READY";
    case 14: return "CUPTI_ERROR_NOT_COMPATIBLE";
    case 15: return "CUPTI_ERROR_NOT_INITIALIZED";
    case 18: return "CUPTI_ERROR_QUEUE_EMPTY";
    case 21: return "CUPTI_ERROR_INVALID_KIND";
    case 23: return "CUPTI_ERROR_DISABLED";
    case 26: return "CUPTI_ERROR_HARDWARE_BUSY";
    case 27: return "CUPTI_ERROR_NOT_SUPPORTED";
    case 33: return "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED";
    case 34: return "CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE";
    case 35: return "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
    case 36: return "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED";
    case 38: return "CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED";
    case 39: return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    case 40: return "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES";
    case 41: return "CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED";
    case 42: return "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED";
    case 43: return "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED";
    case 44: return "CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED";
    case 45: return "CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED";
    case 999: return "CUPTI_ERROR_UNKNOWN";
    default: return "CUPTI_ERROR_?";
    }
}

static const char *hint(int r) {
    switch (r) {
    case 39:
        return ": another CUPTI client is already attached to this process (Nsight Systems, Nsight "
               "Compute, compute-sanitizer, cuda-gdb, or a profiler inside the program such as "
               "torch.profiler). Only one can trace at a time: run without the other tool to trace; "
               "the program itself runs on, untraced";
    case 15:
        return ": CUPTI could not initialise (is a CUDA driver installed and a device visible? check "
               "nvidia-smi and CUDA_VISIBLE_DEVICES)";
    case 14:
        return ": this CUPTI does not match the CUDA driver (use the CUPTI of the installed CUDA "
               "toolkit, /usr/local/cuda)";
    case 35:
    case 40:
        return ": tracing is not permitted for this user (see NVreg_RestrictProfilingToAdminUsers)";
    case 27:
    case 33:
    case 41:
    case 42:
    case 43:
    case 44:
    case 45: return ": this device or platform does not support CUPTI activity tracing";
    default: return "";
    }
}

gr_status gr_cupti_fail(int result, const char *expr, const char *detail, const char *file, int line,
                        gr_error *err) {
    if (result == 0) return GR_OK;
    const char *name = gr_cupti_result_name(result);
    if (err && err->count == 0) {
        snprintf(err->api, sizeof(err->api), "%.*s", (int)(sizeof(err->api) - 1), expr);
        snprintf(err->api_error, sizeof(err->api_error), "%s", name);
    }
    const char *base = strrchr(file, '/');
    return gr_error_set(err, GR_ERR_CUDA, NULL, "%s failed: %s (%d)%s%s%s [%s:%d]", expr, name, result, hint(result),
                        detail && detail[0] ? "; " : "", detail ? detail : "", base ? base + 1 : file, line);
}

int gr_cupti_other_subscriber(const gr_error *err) {
    return err && !strcmp(err->api_error, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
}

int gr_cupti_other_client(const char *ours, char *why, size_t size) {
    static const char *const nsight[] = {"NSYS_PROFILING_SESSION_ID", "NSYS_LAUNCH_ID",
                                         "NV_COMPUTE_PROFILER_PERFWORKS_DIR", "NSIGHT_SYSTEMS_DIR",
                                         NULL};
    for (const char *const *v = nsight; *v; v++) {
        const char *x = getenv(*v);
        if (x && x[0]) {
            snprintf(why, size, "Nsight is profiling this process (%s is set): it holds the CUPTI "
                                "subscription, so CUPTI tracing here would fail or be empty. Run "
                                "outside nsys/ncu, or use Nsight's own trace",
                     *v);
            return 1;
        }
    }
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    if (inj && inj[0] && (!ours || strcmp(inj, ours) != 0)) {
        snprintf(why, size, "CUDA_INJECTION64_PATH=%.300s is another tool's injection library: it "
                            "may hold the CUPTI subscription. Unset it (or run without that tool) "
                            "for a complete trace",
                 inj);
        return 1;
    }
    const char *pre = getenv("LD_PRELOAD");
    static const char *const libs[] = {"libcupti", "ToolsInjection", "libnvperf", "nsys", "ncu", NULL};
    for (const char *const *l = libs; pre && *l; l++)
        if (strstr(pre, *l)) {
            snprintf(why, size, "LD_PRELOAD=%.300s preloads a profiler (%s) that may hold the CUPTI "
                                "subscription: run without it for a complete trace",
                     pre, *l);
            return 1;
        }
    return 0;
}
