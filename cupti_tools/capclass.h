/* Capture checking, the classification: a recorded sequence of API calls made while streams
 * captured (cupti_tools/capevents.h) becomes findings, each naming the place (graphrun op, NVTX
 * range stack, or thread), the API, the stream, the error, the capture mode and a one-line fix.
 * Pure C over the recording: CI runs it on recorded fixtures (tests/data/capcheck_*.jsonl).
 *
 * Severities: ERROR, the call that broke the capture (the first capture error of a capture is
 * the culprit); CONSEQUENCE, a later call that failed because of it; ESCAPE, work that
 * succeeded outside the capture (it ran at capture time and is not in the graph); HAZARD, a call
 * that succeeded inside the capture but does not belong there (sync, query, allocation,
 * initialisation, pageable copy). ERROR and ESCAPE make the full graph unusable. Hazards and
 * escapes are only charged to a thread that is capturing; errors to any thread. An allocation a
 * thread makes after switching itself to relaxed mode (cudaThreadExchangeStreamCaptureMode, as
 * PyTorch's caching allocator does for a graph's private pool) is deliberate: counted, not
 * flagged. */
#ifndef GR_CAPCLASS_H
#define GR_CAPCLASS_H

#include <stdint.h>
#include <stdio.h>

#include "core/error.h"
#include "cupti_tools/capevents.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gr_find_sev {
    GR_FS_ERROR = 0,
    GR_FS_CONSEQUENCE,
    GR_FS_ESCAPE,
    GR_FS_HAZARD
} gr_find_sev;

typedef enum gr_find_kind {
    GR_FK_SYNC = 0,       /* host synchronisation */
    GR_FK_QUERY,          /* stream / event query */
    GR_FK_CAPTURED_EVENT, /* query or sync of an event recorded inside the capture */
    GR_FK_ALLOC,          /* device allocation */
    GR_FK_HOST_ALLOC,     /* pinned host allocation */
    GR_FK_FREE,
    GR_FK_LAZY_INIT,     /* library / resource initialisation (handles, streams, events, modules) */
    GR_FK_LEGACY_STREAM, /* work on the legacy default stream */
    GR_FK_OTHER_STREAM,  /* work on a stream outside the capture */
    GR_FK_SYNC_COPY,     /* synchronous cudaMemcpy / cudaMemset */
    GR_FK_PAGEABLE_COPY, /* copy with pageable host memory */
    GR_FK_READBACK,      /* a device value read back to the host (.item()) */
    GR_FK_UNJOINED,      /* fork not joined back before the end of capture */
    GR_FK_WRONG_THREAD,
    GR_FK_UNMATCHED,
    GR_FK_MERGE,
    GR_FK_ISOLATION,
    GR_FK_IMPLICIT,
    GR_FK_INVALIDATED, /* the capture was already invalidated (consequence), or by an unseen call */
    GR_FK_UNSUPPORTED, /* any other call refused while capturing */
    GR_FK_BEGIN_FAILED,
    GR_FK_NKINDS
} gr_find_kind;

typedef struct gr_finding {
    int sev;      /* gr_find_sev */
    int kind;     /* gr_find_kind */
    uint64_t seq; /* the call's place in the recording */
    int op;       /* graphrun op index, -1 none */
    char op_name[GR_CAPEV_NAME_MAX];
    char ranges[GR_CAPEV_RANGES_MAX]; /* NVTX range stack */
    uint64_t tid;
    int other_thread; /* made by a thread other than the one that began the capture */
    char api[GR_CAPEV_API_MAX];
    int driver;
    int ret;         /* 0 when the call succeeded */
    int stream_kind; /* gr_stream_kind */
    uint64_t stream;
    int stream_status; /* gr_capstat */
    int mode;          /* capture mode of the capture concerned, -1 unknown */
    char detail[256];
} gr_finding;

#define GR_CAPCHECK_MAX_FINDINGS 512

typedef struct gr_capcheck_result {
    gr_finding *f;
    size_t n, cap;
    size_t total; /* findings, including those beyond GR_CAPCHECK_MAX_FINDINGS */
    size_t calls; /* recorded calls classified */
    int captures; /* captures begun */
    int captures_ok, captures_failed;
    int unfinished;   /* a capture had not ended when the recording stopped */
    uint64_t dropped; /* calls the recorder could not keep: findings may be missing */
    int tracker_overflow;
    size_t
        deliberate;     /* allocations made while the thread had switched itself to relaxed mode
                           (cudaThreadExchangeStreamCaptureMode: PyTorch's graph pools): not flagged */
    size_t unconfirmed; /* launch escapes the captured graph contradicts
                           (gr_capcheck_confirm_launches) */
} gr_capcheck_result;

/* Classifies `n` calls in recording order. GR_ERR_NOMEM only. */
gr_status gr_capcheck_classify(const gr_capev *ev, size_t n, gr_capcheck_result *out,
                               gr_error *err);
void gr_capcheck_result_free(gr_capcheck_result *r);

/* A cross-check of launch escapes against the graph a successful capture made: when the graph
 * holds at least as many kernel nodes as there were successful kernel launches while capturing,
 * no launch escaped, so launch escapes (a stream the checker misread) become hazards marked
 * unconfirmed. Returns how many were demoted. */
size_t gr_capcheck_confirm_launches(gr_capcheck_result *r, const gr_capev *ev, size_t n,
                                    size_t kernel_nodes);

/* ERROR and ESCAPE: the full graph cannot be used as captured. */
int gr_finding_blocks(const gr_finding *f);
size_t gr_capcheck_blocking(const gr_capcheck_result *r);
/* Ops (graphrun) charged with blocking findings, ascending and unique; returns the count (at
 * most max). With `hazards`, ops with hazards too. Findings without an op are not counted: see
 * gr_capcheck_unplaced. */
int gr_capcheck_culprit_ops(const gr_capcheck_result *r, int hazards, int *ops, int max);
/* Blocking findings that name no op (an ERROR whose cause the checker could not place). */
size_t gr_capcheck_unplaced(const gr_capcheck_result *r);

const char *gr_find_sev_name(int sev);            /* "error", "consequence", "escape", "hazard" */
const char *gr_find_kind_name(int kind);          /* "sync", "readback", ... */
const char *gr_finding_what(const gr_finding *f); /* one phrase: what the call is */
const char *gr_finding_fix(const gr_finding *f);  /* one line: how to fix it */
/* `op 1 "sync"`, `nvtx "step > loss"` or `thread 1234` */
void gr_finding_place(const gr_finding *f, char *out, size_t size);
/* The whole finding on one line: place: API on stream (status) returned ERROR during a MODE
 * capture: severity (what). Fix: ... */
void gr_finding_str(const gr_finding *f, char *out, size_t size);
/* Every finding, one per line with `indent`, then a count line. */
void gr_capcheck_print(FILE *f, const gr_capcheck_result *r, const char *indent);
/* {"findings": [...], "blocking": N, "captures": ..., ...} (json_t *) */
void *gr_capcheck_json(const gr_capcheck_result *r);

#ifdef __cplusplus
}
#endif
#endif
