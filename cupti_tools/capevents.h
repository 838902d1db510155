/* Capture checking, the data side: the API calls made while a stream captures, as the recorder
 * (capcheck.c, inside CUPTI's callbacks) writes them and the classifier (capclass.c) reads
 * them; the API kinds by name; the tracker of which streams belong to which capture; and the
 * JSON-lines form of a recording (tests/data/capcheck_*.jsonl). Pure C, no CUDA or CUPTI: a
 * recording made on the GPU is read and classified anywhere. */
#ifndef GR_CAPEVENTS_H
#define GR_CAPEVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_CAPEV_SCHEMA_VERSION 1
#define GR_CAPEV_API_MAX 64
#define GR_CAPEV_NAME_MAX 64
#define GR_CAPEV_RANGES_MAX 160

/* The stream argument of a call. */
typedef enum gr_stream_kind {
    GR_SK_NONE = 0,   /* the API takes no stream */
    GR_SK_LEGACY,     /* NULL (without per-thread default stream) or cudaStreamLegacy */
    GR_SK_PER_THREAD, /* cudaStreamPerThread, or NULL in a _ptsz/_ptds call */
    GR_SK_HANDLE      /* a created stream */
} gr_stream_kind;

/* The stream's place in the captures in progress, as the tracker saw it before the call. */
typedef enum gr_capstat {
    GR_CS_NONE = 0, /* no capture was in progress */
    GR_CS_NOSTREAM, /* captures were in progress; the API takes no stream */
    GR_CS_MEMBER,   /* the stream is capturing (origin, or joined through an event wait) */
    GR_CS_OUTSIDE,  /* a created stream that is not part of any capture */
    GR_CS_LEGACY    /* the legacy default stream (never capturable) */
} gr_capstat;

typedef enum gr_copy_dir {
    GR_CP_NONE = 0,
    GR_CP_H2D,
    GR_CP_D2H,
    GR_CP_D2D,
    GR_CP_H2H,
    GR_CP_DEFAULT
} gr_copy_dir;

/* What the host side of a copy is: pinned (page-locked, registered) or pageable. */
typedef enum gr_hostmem { GR_HM_UNKNOWN = 0, GR_HM_PINNED, GR_HM_PAGEABLE } gr_hostmem;

/* API kinds by (normalised) name; the classifier's rules are per kind. */
typedef enum gr_capapi {
    GR_CA_OTHER = 0,
    GR_CA_BENIGN, /* capture queries, error and device queries: never a finding */
    GR_CA_MODE,   /* cudaThreadExchangeStreamCaptureMode: the thread's capture interaction mode */
    GR_CA_BEGIN,  /* cudaStreamBeginCapture*, cuStreamBeginCapture* */
    GR_CA_END,    /* cudaStreamEndCapture, cuStreamEndCapture */
    GR_CA_LAUNCH, /* kernel and host-function launches: stream work */
    GR_CA_GRAPH_LAUNCH, /* a graph launched into a stream: stream work */
    GR_CA_COPY_ASYNC,   /* *Memcpy*Async, *Memset*Async, prefetch: stream work */
    GR_CA_COPY_SYNC,    /* cudaMemcpy, cudaMemset, cuMemcpyHtoD, ...: legacy stream, host waits */
    GR_CA_ALLOC_ASYNC,  /* cudaMallocAsync, cudaFreeAsync, ...: stream-ordered, capturable */
    GR_CA_SYNC,         /* stream / event / device / context synchronize */
    GR_CA_QUERY,        /* stream / event query */
    GR_CA_ALLOC,        /* device allocation (cudaMalloc, cuMemAlloc, managed, pitch, VMM) */
    GR_CA_HOST_ALLOC,   /* pinned host allocation or registration */
    GR_CA_FREE,         /* device or host free, unregistration */
    GR_CA_CREATE,       /* stream / event / context creation, module and library loading */
    GR_CA_EVENT_RECORD, /* cudaEventRecord*, cuEventRecord* */
    GR_CA_STREAM_WAIT   /* cudaStreamWaitEvent, cuStreamWaitEvent */
} gr_capapi;

/* One top-level API call (calls made inside another API call are not recorded), at its exit. */
typedef struct gr_capev {
    uint64_t seq;               /* order in the recording */
    uint64_t tid;               /* system thread id */
    int driver;                 /* 0 runtime API, 1 driver API */
    uint32_t cbid;              /* CUPTI callback id (for reference; classification goes by name) */
    char api[GR_CAPEV_API_MAX]; /* name without version or _ptsz suffix, e.g. cudaMemcpyAsync */
    int ret;           /* cudaError_t / CUresult (capture errors 900-908 are the same in both) */
    int stream_kind;   /* gr_stream_kind */
    uint64_t stream;   /* handle bits (0 unless GR_SK_HANDLE) */
    uint64_t event;    /* event argument, 0 none */
    int copy;          /* gr_copy_dir */
    int hostmem;       /* gr_hostmem of the copy's host side */
    uint64_t host_ptr; /* host side of a copy (resolved to hostmem after the capture), 0 none */
    uint64_t bytes;    /* copy / allocation size, 0 unknown */
    int mode; /* BEGIN: capture mode (0 global, 1 thread-local, 2 relaxed); MODE: the mode the
                 thread switches to; else -1 */
    int op;   /* graphrun: index of the workload op in progress, -1 none */
    char op_name[GR_CAPEV_NAME_MAX];
    unsigned op_flags; /* graphrun: the op's kernel flags (GR_KF_LIBRARY marks library ops) */
    char ranges[GR_CAPEV_RANGES_MAX]; /* NVTX range stack of the thread, "outer > inner" */
    int cap;                          /* gr_capstat before the call, as the recorder tracked it */
} gr_capev;

/* "cudaMemcpyAsync_ptsz_v7000" -> "cudaMemcpyAsync", *per_thread = 1 (also _ptds; driver
 * "cuMemcpyHtoDAsync_v2_ptsz" -> "cuMemcpyHtoDAsync"). per_thread may be NULL. */
void gr_capapi_normalize(const char *raw, char *out, size_t size, int *per_thread);
gr_capapi gr_capapi_kind(const char *name);
const char *gr_capapi_name(gr_capapi k);
/* Stream work: the call enqueues something on its stream argument. */
int gr_capapi_is_work(gr_capapi k);

int gr_cuda_is_capture_error(int code); /* 900..908 */
/* cudaErrorStreamCaptureUnsupported / CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (driver) for the
 * codes capture checking meets; "error N" (in a static per-thread buffer) otherwise. */
const char *gr_cuda_error_name(int code, int driver);

const char *gr_capture_mode_str(int mode); /* "global", "thread-local", "relaxed", "?" */
const char *gr_stream_kind_name(int k);
const char *gr_capstat_name(int s);
const char *gr_copy_dir_name(int d); /* "HtoD", ... ; "" for none */
const char *gr_hostmem_name(int h);

/* ---- the capture tracker: which streams belong to which capture in progress ---- */

#define GR_CT_MAX_CAPTURES 8
#define GR_CT_MAX_MEMBERS 64
#define GR_CT_MAX_EVENTS 512

typedef struct gr_ct_stream {
    int kind;        /* gr_stream_kind */
    uint64_t handle; /* GR_SK_HANDLE */
    uint64_t tid;    /* GR_SK_PER_THREAD: whose per-thread stream */
} gr_ct_stream;

typedef struct gr_ct_capture {
    int active;
    uint64_t id;
    gr_ct_stream origin;
    int mode;
    uint64_t tid; /* thread that began it */
    uint64_t begin_seq;
    int culprit; /* a call already broke it: later capture errors are consequences */
} gr_ct_capture;

/* A stream that joined a capture by waiting on one of its events (a fork), or its origin. */
typedef struct gr_ct_member {
    gr_ct_stream s;
    int cap; /* capture slot */
    int origin;
    uint64_t work;        /* work items enqueued on it inside the capture */
    uint64_t joined_work; /* work count when it was last joined back (an event recorded on it
                             after its last work, waited on by another member) */
    int joined_back;
    /* the call that forked it into the capture */
    uint64_t fork_seq;
    int fork_op;
    char fork_op_name[GR_CAPEV_NAME_MAX];
    char fork_ranges[GR_CAPEV_RANGES_MAX];
    char fork_api[GR_CAPEV_API_MAX];
} gr_ct_member;

typedef struct gr_ct_event {
    uint64_t event;
    int cap; /* capture slot it was recorded in, -1 outside any */
    uint64_t cap_id;
    gr_ct_stream s;
    uint64_t work; /* the recording stream's work count at the record */
} gr_ct_event;

typedef struct gr_captrack {
    gr_ct_capture cap[GR_CT_MAX_CAPTURES];
    gr_ct_member mem[GR_CT_MAX_MEMBERS];
    int nmem;
    gr_ct_event ev[GR_CT_MAX_EVENTS];
    int nev, ev_next;
    uint64_t next_id;
    int overflow; /* more captures or members than the tables hold */
} gr_captrack;

void gr_captrack_init(gr_captrack *t);
int gr_captrack_active(const gr_captrack *t);
gr_ct_stream gr_capev_stream(const gr_capev *e);
/* Status of e's stream before the call is applied (kind from gr_capapi_kind(e->api)). */
gr_capstat gr_captrack_status(const gr_captrack *t, const gr_capev *e);
/* The capture slot e concerns: its stream's, else the one its thread began, else the first
 * active one; -1 when none is active. */
int gr_captrack_capture_of(const gr_captrack *t, const gr_capev *e);
/* 1 when thread `tid` began a capture that is still in progress. */
int gr_captrack_thread_captures(const gr_captrack *t, uint64_t tid);
/* Apply the call's effect (begin, end, fork/join through events, work counts). */
void gr_captrack_apply(gr_captrack *t, const gr_capev *e);
/* Members of capture `slot` that were forked into it and not joined back (work after the last
 * join first, then members never joined back); returns how many were written to out. */
int gr_captrack_unjoined(const gr_captrack *t, int slot, const gr_ct_member **out, int max);
int gr_ct_stream_eq(const gr_ct_stream *a, const gr_ct_stream *b);

/* ---- JSON lines (schema_version 1; docs/capture_check.md) ---- */

typedef struct gr_capev_header {
    int schema_version;
    char tool[64];   /* "graphrun" or "cupti-launchstat" */
    char source[32]; /* "in-process" or "injection" */
    char command[1024];
    char note[256]; /* e.g. "workload capture_breakers variant sync mode global" */
    int64_t pid;
} gr_capev_header;

typedef struct gr_capev_list {
    gr_capev *v;
    size_t n, cap;
    uint64_t dropped; /* calls the recorder could not keep */
    int has_end;
    char end_error[512]; /* the end record's "error": why nothing was recorded */
    gr_capev_header hdr;
} gr_capev_list;

void gr_capev_list_free(gr_capev_list *l);
/* Appends a copy; 0 when out of memory (counted as dropped). */
int gr_capev_list_push(gr_capev_list *l, const gr_capev *e);
/* One line, no newline, into the sbuf (a gr_sbuf from jsonl.h). */
struct gr_sbuf;
void gr_capev_format(struct gr_sbuf *b, const gr_capev *e);
void gr_capev_format_header(struct gr_sbuf *b, const gr_capev_header *h);
/* error: why the program ran unchecked (another CUPTI client), NULL or "" when it did not */
void gr_capev_format_end(struct gr_sbuf *b, size_t events, uint64_t dropped, const char *error);
/* Reads a recording. Malformed lines, unknown schema versions and a missing header are errors
 * naming file:line:column (GR_ERR_INPUT); GR_ERR_IO when it cannot be read. Unknown record kinds
 * and fields are skipped. The file is opened through core/fileio.h (a regular file within the
 * trace limit, lines of at most GR_JSONL_MAX_LINE bytes); gr_capev_load is defined in
 * trace_read.c, beside the trace reader, as the injection library does not link core/fileio.c. */
gr_status gr_capev_load(const char *path, gr_capev_list *out, gr_error *err);
gr_status gr_capev_load_mem(const char *text, size_t len, const char *label, gr_capev_list *out,
                            gr_error *err);
/* Writes header, events and the end record. */
gr_status gr_capev_save(const char *path, const gr_capev_list *l, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
