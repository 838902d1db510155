/* The replay service protocol (replay/PROTOCOL.md): newline-delimited JSON over a UNIX socket,
 * one request object per line with schema_version, answered by zero or more progress lines and
 * one final reply. Pure C, no GPU: request parsing and validation (every problem named by its
 * field), reply serialization and parsing, status <-> error code names, and line framing. */
#ifndef GR_PROTOCOL_H
#define GR_PROTOCOL_H

#include <stddef.h>

#include "capture/capture.h"
#include "core/error.h"
#include "replay/bucket.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_PROTO_SCHEMA_VERSION 1
#define GR_PROTO_MAX_LINE (1u << 20) /* bytes in one request line, newline included */
#define GR_PROTO_NAME_MAX 64         /* graph names: [A-Za-z0-9_.-], 1..64 characters */
#define GR_PROTO_MAX_SETS 64
#define GR_PROTO_SET_MAX 256
#define GR_PROTO_PATH_MAX 4096

typedef enum gr_cmd {
    GR_CMD_NONE = 0,
    GR_CMD_STATUS,
    GR_CMD_LIST,
    GR_CMD_CAPTURE,
    GR_CMD_REPLAY,
    GR_CMD_DROP,
    GR_CMD_STOP,
    GR_CMD_LANE_OPEN,   /* a doorbell in the client's segment serves steps (replay/lane.h) */
    GR_CMD_LANE_CLOSE,
    GR_CMD_DEBUG_SLEEP, /* test hook: the worker sleeps `ms` (cancellable unless `hang`) */
    GR_CMD_DEBUG_FAULT  /* test hook: the worker makes a sticky CUDA error */
} gr_cmd;

#define GR_PROTO_MAX_IO 32 /* input or output buffers in one replay */

/* A replay's data for one buffer: a file (raw little-endian, or .npy by its extension) or a
 * POSIX shared-memory segment the client made (zero-copy on the host: the service maps it). */
typedef struct gr_io_spec {
    char buffer[96];
    char file[GR_PROTO_PATH_MAX]; /* absolute path, "" when shm */
    char shm[256];                /* "/name" as shm_open takes it, "" when file (and in a lane) */
    long long offset;             /* shm or lane: where the buffer's bytes start */
} gr_io_spec;

typedef struct gr_request {
    gr_cmd cmd;
    void *id; /* json_t *: the request's "id" (string or integer) echoed in replies, or NULL */
    /* capture */
    char workload[GR_PROTO_PATH_MAX];
    char name[GR_PROTO_NAME_MAX + 1];
    char variant[64];
    char sets[GR_PROTO_MAX_SETS][GR_PROTO_SET_MAX];
    int nsets;
    gr_capture_mode mode;
    int force;
    int cpu_reference;
    int capture_check;  /* run the capture checker first (default on): work that escapes the
                           capture fails the capture instead of being held in a wrong graph */
    int pdl;            /* programmatic dependent launch for the kernels that support it: -1
                           absent (on where the GPU has it), 0 false, 1 true; the service turns it
                           into 0 or 1 for its GPU (gr_run_opts_resolve_pdl) and sets pdl_default */
    int pdl_default;    /* not a field: pdl was absent and the GPU decided */
    int unroll;         /* steps per held graph (1..1024); replay times per step */
    char input[GR_PROTO_PATH_MAX]; /* Criteo rows bound to a DLRM workload, "" for none */
    int skip_bad_lines;
    gr_bucket_spec buckets; /* "buckets": "B=1,2,4,8": one graph per value over shared buffers */
    int update; /* with name: the held graph of that name is updated in place (cudaGraphExecUpdate)
                   with the new capture when the topology allows, else replaced */
    /* replay */
    int iters, warmup, batches; /* warmup -1: iters / 10, at least 3 (as `graphrun run`) */
    int compare_eager;
    int output_digest; /* reply with an FNV-1a 64 digest of each output buffer after the replay */
    /* serving: copy these in, replay one step, copy those out (replaces the timing loop) */
    gr_io_spec inputs[GR_PROTO_MAX_IO], outputs[GR_PROTO_MAX_IO];
    int ninputs, noutputs;
    long long batch; /* replay: run the smallest bucket >= batch (0: the graph named) */
    /* lane_open: inputs / outputs are {buffer, offset} in this one segment */
    char shm[256];
    int spin_us; /* how long the lane thread spins after a step before it sleeps */
    long long lane; /* lane_close: the lane's id */
    int progress; /* send progress lines */
    /* debug_sleep */
    int ms;
    int hang; /* ignore cancellation (stands for a stage that cannot be interrupted) */
} gr_request;

const char *gr_cmd_name(gr_cmd cmd);
/* 1 for commands the GPU worker runs (queued), 0 for those answered at once. */
int gr_cmd_is_queued(gr_cmd cmd);

/* Parse and validate one request line (without or with its newline). On failure `err` holds
 * one line per problem, each starting with the field ("iters: expected ..."), err->path the
 * first field ("" for the line as a whole); req->id is set whenever the line had a usable id so
 * that the error reply can echo it. Always call gr_request_clear afterwards. */
gr_status gr_request_parse(const char *line, size_t len, gr_request *req, gr_error *err);
void gr_request_clear(gr_request *req);

/* Stable error code names used on the wire ("bad_input", "no_device", ...), both ways. */
const char *gr_proto_code_name(gr_status code);
gr_status gr_proto_code_parse(const char *name); /* GR_ERR_INTERNAL for unknown names */

/* Reply lines, newline-terminated, malloc'd (NULL only when out of memory). `id` is a json_t *
 * or NULL; `body` is a json_t * whose keys are merged into the reply and which is consumed. */
char *gr_reply_ok(const void *id, gr_cmd cmd, void *body);
char *gr_reply_error(const void *id, gr_status code, const char *field, const char *message,
                     void *body);
char *gr_reply_progress(const void *id, const char *phase, long long done, long long total);

/* A reply line as the client sees it. */
typedef struct gr_reply {
    int is_progress;
    int ok;
    gr_status code;       /* when !ok */
    char field[128];      /* when !ok: the field at fault, or "" */
    char message[GR_ERROR_MSG_MAX];
    char phase[64];       /* progress */
    long long done, total;
    void *body;           /* json_t *: the whole reply object (owned; gr_reply_clear frees) */
} gr_reply;

gr_status gr_reply_parse(const char *line, size_t len, gr_reply *out, gr_error *err);
void gr_reply_clear(gr_reply *r);

/* Line framing over a byte stream with a limit on one line's length. */
typedef struct gr_linebuf {
    char *buf;
    size_t len, cap;
    size_t max;     /* longest line accepted, newline included */
    size_t scanned; /* bytes already known to hold no newline */
} gr_linebuf;

void gr_linebuf_init(gr_linebuf *lb, size_t max);
void gr_linebuf_free(gr_linebuf *lb);
/* Append bytes. Returns GR_ERR_NOMEM on allocation failure. */
gr_status gr_linebuf_append(gr_linebuf *lb, const char *data, size_t n);
/* Take the next complete line (newline stripped, NUL-terminated, malloc'd) into *line.
 * Returns 1 with a line, 0 when no complete line is buffered, -1 when the buffered data holds
 * a line longer than max (nothing is taken; the caller should give up on the stream). */
int gr_linebuf_next(gr_linebuf *lb, char **line, size_t *len);
/* 1 when a partial line is buffered. */
int gr_linebuf_pending(const gr_linebuf *lb);

/* Graph names: 1..GR_PROTO_NAME_MAX of [A-Za-z0-9_.-], not starting with '-' or '.'. */
int gr_proto_valid_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif
