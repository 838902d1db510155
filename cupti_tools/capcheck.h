/* Capture checking, the recording side: a listener on the collector's one CUPTI subscription
 * (callbacks only: no trace file, no activity records) that records every top-level runtime and
 * driver API call made while any stream captures, with what capture checking needs from its
 * parameters (stream, event, copy direction and host pointer, capture mode), the graphrun op in
 * progress or the thread's NVTX range stack, and the tracker's view of the stream. The
 * recording (capevents.h) is classified by capclass.c.
 *
 * graphrun starts it around a capture and stops it right after (gr_capcheck_stop with finalize
 * detaches CUPTI, so timing runs are untouched); the injection library starts it for the life of
 * a program (`cupti-launchstat --capture-check`) and streams the recording to a file as each
 * capture ends. Callbacks never call CUDA; host memory of copies is resolved afterwards
 * (gr_capcheck_resolve_hostmem) or, in a program recorded from CUDA's start, from the pinned
 * allocations seen. */
#ifndef GR_CAPCHECK_H
#define GR_CAPCHECK_H

#include <stddef.h>

#include "core/error.h"
#include "cupti_tools/capevents.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_capcheck_opts {
    int nvtx;             /* keep each thread's NVTX range stack (needs NVTX_INJECTION64_PATH) */
    int all_host_allocs;  /* recording from CUDA's start: a copy's host pointer that no recorded
                             pinned allocation covers is pageable */
    const char *out_path; /* stream the recording to this file as captures end; NULL: in memory */
    int exclusive;        /* create out_path with O_EXCL */
    size_t max_events;    /* at most this many calls kept (0: 200000); more are counted dropped */
    gr_capev_header hdr;  /* header of the recording */
} gr_capcheck_opts;

/* Subscribes (gr_cupti_callbacks_start) and starts recording. Under another CUPTI client it
 * fails with GR_ERR_CUDA and gr_cupti_other_subscriber(err) true. */
gr_status gr_capcheck_start(const gr_capcheck_opts *o, gr_error *err);
/* Stops recording and unsubscribes (finalize: detach CUPTI, see collector.h); moves what was
 * recorded into *out (may be NULL) and, with out_path, finishes the file. GR_OK when not
 * running. */
gr_status gr_capcheck_stop(int finalize, gr_capev_list *out, gr_error *err);
/* Moves what was recorded so far into *out and goes on recording (one subscription for several
 * captures: graphrun's piecewise capture classifies each capture separately). */
gr_status gr_capcheck_take(gr_capev_list *out, gr_error *err);
int gr_capcheck_running(void);
/* graphrun: the workload op in progress (process-wide: calls from helper threads are tagged
 * too); index -1 when none. */
void gr_capcheck_set_op(int index, const char *name, unsigned flags);
/* After the capture, outside any callback: copies whose host side is still unknown get it from
 * the driver (cuPointerGetAttribute: registered or pinned memory, else pageable). */
void gr_capcheck_resolve_hostmem(gr_capev_list *l);

#ifdef __cplusplus
}
#endif
#endif
