/* Event-timed batches, the bandwidth probe and the floor arithmetic. */
#include "replay/timing.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/cuda_check.h"
#include "core/timer.h"
#include "kernels/bwprobe.h"
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

size_t gr_bandwidth_bytes(size_t mem_free) {
    size_t bytes = (size_t)1 << 30;
    if (mem_free / 8 < bytes) bytes = mem_free / 8;
    return bytes & ~(((size_t)1 << 20) - 1);
}

enum { BW_READ, BW_WRITE, BW_COPY, BW_MEMCPY, BW_KINDS };

static gr_status bw_enqueue(int kind, const gr_bwprobe_shape *sh, void *a, void *b, size_t bytes,
                            unsigned *sink, cudaStream_t s, gr_error *err) {
    switch (kind) {
    case BW_READ:
        return gr_bwprobe_read(sh, a, bytes, sink, (gr_stream_t)s, err);
    case BW_WRITE:
        return gr_bwprobe_write(sh, b, bytes, 0x9E3779B9u, (gr_stream_t)s, err);
    case BW_COPY:
        return gr_bwprobe_copy(sh, b, a, bytes, (gr_stream_t)s, err);
    default:
        GR_CUDA(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s), err);
        return GR_OK;
    }
}

gr_status gr_bandwidth_probe(size_t bytes, int reps, gr_bandwidth *out, gr_error *err) {
    bytes &= ~(size_t)4095;
    if (bytes < GR_BANDWIDTH_MIN_BYTES)
        return gr_error_set(err, GR_ERR_CUDA, NULL,
                            "bandwidth probe: buffers of %zu bytes are too small to time (it needs "
                            "%zu MiB each; is the device's memory nearly full?)",
                            bytes, GR_BANDWIDTH_MIN_BYTES >> 20);
    if (reps < 1) reps = 1;
    int nev = BW_KINDS * reps + 1; /* op k runs between events k and k + 1 */
    void *a = NULL, *b = NULL;
    unsigned *sink = NULL;
    cudaStream_t s = NULL;
    cudaEvent_t *ev = calloc((size_t)nev, sizeof(*ev));
    double *gbps = calloc((size_t)BW_KINDS * reps, sizeof(double));
    gr_bwprobe_shape sh;
    gr_status st = GR_OK;
    cudaError_t rc = cudaSuccess;
    if (!ev || !gbps) {
        st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
        goto done;
    }
    if ((st = gr_bwprobe_shape_get(&sh, err)) != GR_OK) goto done;
    rc = cudaMalloc(&a, bytes);
    if (rc == cudaSuccess) rc = cudaMalloc(&b, bytes);
    if (rc == cudaSuccess) rc = cudaMalloc((void **)&sink, sh.sink_words * sizeof(unsigned));
    if (rc == cudaSuccess) rc = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    for (int i = 0; i < nev && rc == cudaSuccess; i++)
        rc = cudaEventCreate(&ev[i]);
    if (rc != cudaSuccess) {
        st = gr_cuda_fail(rc, "bandwidth probe setup", __FILE__, __LINE__, err);
        goto done;
    }
    /* never time on zeros: the source holds a pattern (the write kernel's, another seed) */
    st = gr_bwprobe_write(&sh, a, bytes, 0x5A5A1234u, (gr_stream_t)s, err);
    for (int w = 0; w < 2 && st == GR_OK; w++)
        for (int k = 0; k < BW_KINDS && st == GR_OK; k++)
            st = bw_enqueue(k, &sh, a, b, bytes, sink, s, err);
    /* interleaved rounds: a drift of clock or temperature touches every kind alike */
    if (st == GR_OK) rc = cudaEventRecord(ev[0], s);
    for (int e = 0; e + 1 < nev && st == GR_OK && rc == cudaSuccess; e++) {
        st = bw_enqueue(e % BW_KINDS, &sh, a, b, bytes, sink, s, err);
        if (st == GR_OK) rc = cudaEventRecord(ev[e + 1], s);
    }
    if (st == GR_OK && rc == cudaSuccess) rc = cudaEventSynchronize(ev[nev - 1]);
    for (int e = 0; e + 1 < nev && st == GR_OK && rc == cudaSuccess; e++) {
        float ms = 0;
        rc = cudaEventElapsedTime(&ms, ev[e], ev[e + 1]);
        int k = e % BW_KINDS;
        double moved = k == BW_READ || k == BW_WRITE ? (double)bytes : 2.0 * (double)bytes;
        gbps[k * reps + e / BW_KINDS] = ms > 0 ? moved / ((double)ms * 1e-3) / 1e9 : 0;
    }
    if (st == GR_OK && rc != cudaSuccess)
        st = gr_cuda_fail(rc, "bandwidth probe", __FILE__, __LINE__, err);
    if (st == GR_OK) {
        gr_bw_figure *fig[BW_KINDS] = {&out->read_only, &out->write_only, &out->copy_kernel,
                                       &out->memcpy_d2d};
        for (int k = 0; k < BW_KINDS; k++) {
            fig[k]->bytes = k == BW_READ || k == BW_WRITE ? (double)bytes : 2.0 * (double)bytes;
            fig[k]->gbps = gr_summarize(gbps + (size_t)k * reps, (size_t)reps);
        }
        out->buffer_bytes = bytes;
        out->grid = sh.grid_read;
        out->threads = sh.threads;
        out->unroll = sh.unroll;
    }
done:
    if (s) cudaStreamSynchronize(s); /* nothing may still use the buffers freed below */
    for (int i = 0; ev && i < nev; i++)
        if (ev[i]) cudaEventDestroy(ev[i]);
    if (s) cudaStreamDestroy(s);
    if (a) cudaFree(a);
    if (b) cudaFree(b);
    if (sink) cudaFree(sink);
    free(ev);
    free(gbps);
    return st;
}

const char gr_floor_model[] =
    "bytes_read / read_only_gbps + bytes_written / write_only_gbps (medians measured in this "
    "process; docs/floors.md)";

double gr_floor_us(double bytes_read, double bytes_written, const gr_bandwidth *bw) {
    if (!bw) return 0;
    double rd = bw->read_only.gbps.median, wr = bw->write_only.gbps.median;
    if (!(rd > 0) || !(wr > 0)) return 0;
    return (bytes_read / (rd * 1e9) + bytes_written / (wr * 1e9)) * 1e6;
}

double gr_pct_of_floor(double floor_us, double measured_us) {
    if (!(floor_us > 0) || !(measured_us > 0)) return 0;
    return 100.0 * floor_us / measured_us;
}
