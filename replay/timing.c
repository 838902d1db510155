/* Event-timed batches and the copy-bandwidth probe. */
#include "replay/timing.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/cuda_check.h"
#include "core/timer.h"
#include "replay/nvtx.h"

static void progress(const gr_time_opts *o, int done, int total) {
    if (!o->progress || !isatty(2)) return;
    int width = 30, fill = total ? done * width / total : width;
    fprintf(stderr, "\r  %-24.24s [", o->label ? o->label : "timing");
    for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %d/%d steps", done, total);
    if (done >= total) fprintf(stderr, "\r%*s\r", 80, "");
    fflush(stderr);
}

gr_status gr_time_steps(gr_step_fn step, void *user, gr_stream_t stream, const gr_time_opts *o,
                        gr_timing *out, gr_error *err) {
    cudaStream_t s = (cudaStream_t)stream;
    int batches = o->batches < 1 ? 1 : o->batches;
    int iters = o->iters < 1 ? 1 : o->iters;
    if (batches > iters) batches = iters;
    int per = iters / batches;
    out->batches = batches;
    out->steps_per_batch = per;
    out->warmup = o->warmup;
    out->steps_per_launch = 1;
    for (int i = 0; i < o->warmup; i++) {
        gr_nvtx_step_begin(); /* NVTX step ranges: a branch each without a tool */
        gr_status ws = step(user, err);
        gr_nvtx_step_end();
        GR_TRY(ws);
        /* a long warm-up stays cancellable (on_batch with 0 steps done; nothing is timed here) */
        if (o->on_batch && (i + 1) % 1024 == 0) {
            gr_status cs = o->on_batch(o->on_batch_user, 0, batches * per, err);
            if (cs != GR_OK) {
                cudaStreamSynchronize(s);
                return cs;
            }
        }
    }
    GR_CUDA(cudaStreamSynchronize(s), err);
    double *step_us = calloc((size_t)batches, sizeof(double));
    double *sub_us = calloc((size_t)batches, sizeof(double));
    cudaEvent_t e0 = NULL, e1 = NULL;
    gr_status st = GR_OK;
    if (!step_us || !sub_us) {
        st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
        goto done;
    }
    cudaError_t rc = cudaEventCreate(&e0);
    if (rc == cudaSuccess) rc = cudaEventCreate(&e1);
    if (rc != cudaSuccess) {
        st = gr_cuda_fail(rc, "cudaEventCreate", __FILE__, __LINE__, err);
        goto done;
    }
    for (int b = 0; b < batches && st == GR_OK; b++) {
        rc = cudaEventRecord(e0, s);
        double t0 = gr_now_us();
        for (int i = 0; i < per && st == GR_OK && rc == cudaSuccess; i++) {
            gr_nvtx_step_begin();
            st = step(user, err);
            gr_nvtx_step_end();
            if (st == GR_OK && o->check && (i + 1) % 1024 == 0) st = o->check(o->on_batch_user, err);
        }
        double t1 = gr_now_us();
        if (rc == cudaSuccess) rc = cudaEventRecord(e1, s);
        if (rc == cudaSuccess) rc = cudaEventSynchronize(e1);
        float ms = 0;
        if (rc == cudaSuccess) rc = cudaEventElapsedTime(&ms, e0, e1);
        if (rc != cudaSuccess && st == GR_OK) st = gr_cuda_fail(rc, "timing events", __FILE__, __LINE__, err);
        step_us[b] = (double)ms * 1e3 / per;
        sub_us[b] = (t1 - t0) / per;
        progress(o, (b + 1) * per, batches * per);
        if (st == GR_OK && o->on_batch) st = o->on_batch(o->on_batch_user, (b + 1) * per, batches * per, err);
    }
    if (st == GR_OK) {
        out->step_us = gr_summarize(step_us, (size_t)batches);
        out->submit_us = gr_summarize(sub_us, (size_t)batches);
    }
done:
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    free(step_us);
    free(sub_us);
    return st;
}

gr_status gr_copy_bandwidth(size_t bytes, int reps, gr_bandwidth *out, gr_error *err) {
    void *a = NULL, *b = NULL;
    cudaStream_t s = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    double *gbps = calloc((size_t)reps + 1, sizeof(double));
    gr_status st = GR_OK;
    cudaError_t rc = gbps ? cudaSuccess : cudaErrorMemoryAllocation;
    if (rc == cudaSuccess) rc = cudaMalloc(&a, bytes);
    if (rc == cudaSuccess) rc = cudaMalloc(&b, bytes);
    if (rc == cudaSuccess) rc = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (rc == cudaSuccess) rc = cudaEventCreate(&e0);
    if (rc == cudaSuccess) rc = cudaEventCreate(&e1);
    /* never time on zeros or garbage-identical pages: give the source a pattern */
    if (rc == cudaSuccess) rc = cudaMemsetAsync(a, 0x5A, bytes, s);
    for (int i = 0; i < 3 && rc == cudaSuccess; i++)
        rc = cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s);
    for (int i = 0; i < reps && rc == cudaSuccess; i++) {
        rc = cudaEventRecord(e0, s);
        if (rc == cudaSuccess) rc = cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s);
        if (rc == cudaSuccess) rc = cudaEventRecord(e1, s);
        if (rc == cudaSuccess) rc = cudaEventSynchronize(e1);
        float ms = 0;
        if (rc == cudaSuccess) rc = cudaEventElapsedTime(&ms, e0, e1);
        gbps[i] = 2.0 * (double)bytes / ((double)ms * 1e-3) / 1e9;
    }
    if (rc != cudaSuccess) st = gr_cuda_fail(rc, "copy bandwidth probe", __FILE__, __LINE__, err);
    else {
        out->bytes = 2.0 * (double)bytes;
        out->gbps = gr_summarize(gbps, (size_t)reps);
    }
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    if (s) cudaStreamDestroy(s);
    if (a) cudaFree(a);
    if (b) cudaFree(b);
    free(gbps);
    return st;
}
