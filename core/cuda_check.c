/* CUDA/cuBLAS failures as gr_errors. The capture-related error names get a hint, since they are
 * what users hit when an op breaks stream capture. */
#include "core/cuda_check.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

static const char *capture_hint(int code) {
    switch ((cudaError_t)code) {
    case cudaErrorStreamCaptureUnsupported:
        return " (this call is not allowed while a stream is being captured: allocate, "
               "synchronize and copy to pageable memory before capture)";
    case cudaErrorStreamCaptureInvalidated:
        return " (an earlier call broke the capture; the first failing call is the culprit)";
    case cudaErrorStreamCaptureImplicit:
        return " (work on the legacy default stream during capture; use a non-blocking stream)";
    case cudaErrorStreamCaptureUnjoined:
        return " (a forked stream was not joined back before the end of capture)";
    case cudaErrorNoDevice:
        return " (no CUDA device is visible; check the driver and CUDA_VISIBLE_DEVICES)";
    default: return "";
    }
}

gr_status gr_cuda_fail(int code, const char *expr, const char *file, int line, gr_error *err) {
    if (code == 0) return GR_OK;
    const char *name = cudaGetErrorName((cudaError_t)code);
    const char *str = cudaGetErrorString((cudaError_t)code);
    gr_status st = (code == cudaErrorNoDevice || code == cudaErrorInsufficientDriver)
                       ? GR_ERR_NODEV
                       : GR_ERR_CUDA;
    if (code >= cudaErrorStreamCaptureUnsupported && code <= cudaErrorStreamCaptureWrongThread)
        st = GR_ERR_CAPTURE;
    if (err && err->count == 0) {
        snprintf(err->api, sizeof(err->api), "%.*s", (int)(sizeof(err->api) - 1), expr);
        snprintf(err->api_error, sizeof(err->api_error), "%s", name ? name : "?");
    }
    const char *base = strrchr(file, '/');
    return gr_error_set(err, st, NULL, "%s failed: %s (%s)%s [%s:%d]", expr, name ? name : "?",
                        str ? str : "", capture_hint(code), base ? base + 1 : file, line);
}

static const char *cublas_name(int s) {
    switch ((cublasStatus_t)s) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_?";
    }
}

gr_status gr_cublas_fail(int status, const char *expr, const char *file, int line, gr_error *err) {
    if (status == 0) return GR_OK;
    if (err && err->count == 0) {
        snprintf(err->api, sizeof(err->api), "%.*s", (int)(sizeof(err->api) - 1), expr);
        snprintf(err->api_error, sizeof(err->api_error), "%s", cublas_name(status));
    }
    const char *base = strrchr(file, '/');
    return gr_error_set(err, GR_ERR_CUDA, NULL, "%s failed: %s [%s:%d]", expr, cublas_name(status),
                        base ? base + 1 : file, line);
}

gr_status gr_launch_status(const char *kernel, const char *op_path, gr_error *err) {
    cudaError_t rc = cudaGetLastError();
    if (rc == cudaSuccess) return GR_OK;
    gr_status st = rc >= cudaErrorStreamCaptureUnsupported && rc <= cudaErrorStreamCaptureWrongThread
                       ? GR_ERR_CAPTURE
                       : GR_ERR_CUDA;
    if (err && err->count == 0) {
        snprintf(err->api, sizeof(err->api), "launch of %s", kernel);
        snprintf(err->api_error, sizeof(err->api_error), "%s", cudaGetErrorName(rc));
    }
    return gr_error_set(err, st, op_path, "launching kernel %s failed: %s (%s)%s", kernel,
                        cudaGetErrorName(rc), cudaGetErrorString(rc), capture_hint(rc));
}
