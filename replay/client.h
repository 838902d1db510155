/* Replay service client: where the socket is (--socket, $GRAPHRUN_SOCKET, or the per-user
 * default), connecting (and starting a service when none runs, race-free: the service holds an
 * exclusive lock next to the socket for its lifetime), one request / reply exchange with
 * progress lines, and the progress bar the CLI draws from them. */
#ifndef GR_CLIENT_H
#define GR_CLIENT_H

#include <limits.h>
#include <stdio.h>

#include "core/error.h"
#include "replay/protocol.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_SOCKET_PATH_MAX 108 /* sizeof(sockaddr_un.sun_path) */

typedef struct gr_service_paths {
    char socket[GR_SOCKET_PATH_MAX];
    char dir[PATH_MAX];
    char lock[PATH_MAX]; /* SOCKET.lock: held (flock LOCK_EX) by the running service */
    char log[PATH_MAX];  /* SOCKET.log: the service's log when it runs in the background */
    int is_default;      /* the per-user default: the directory is created 0700 and checked */
    char origin[32];     /* "--socket", "GRAPHRUN_SOCKET" or "default", for messages */
} gr_service_paths;

/* opt (--socket) > $GRAPHRUN_SOCKET > $XDG_RUNTIME_DIR/graphrun/graphrun.sock >
 * /tmp/graphrun-$UID/graphrun.sock. Checks lengths only; nothing is created. */
gr_status gr_service_paths_resolve(const char *opt, gr_service_paths *p, gr_error *err);
/* The service side: create the default directory (0700) or check it is private and ours; for an
 * explicit socket path, create its directory (0700) when missing, and refuse one that group or
 * others may write to, or that belongs to another user. */
gr_status gr_service_dir_prepare(const gr_service_paths *p, gr_error *err);
/* Pid written in the lock file by the running service, or 0. */
int gr_service_lock_pid(const gr_service_paths *p);
/* 1 while a process holds the service lock. */
int gr_service_lock_held(const gr_service_paths *p);

/* Start a service in the background (fork, setsid, fork, stdin/stdout/stderr to /dev/null,
 * inherited fds closed, exec `EXE serve [--socket S] --notify-fd 3 ARGS...`) and wait until it
 * listens. *already is set when another service was found running instead (no error). exe NULL:
 * this program (/proc/self/exe). */
gr_status gr_service_spawn(const gr_service_paths *p, const char *exe, char *const *args,
                           int *pid, int *already, gr_error *err);

typedef struct gr_client gr_client;

/* Connect; with autostart, start a service when none answers. Without it, a missing service
 * is GR_ERR_SERVICE with a message saying so (and whether a stale socket file is there). */
gr_status gr_client_connect(const gr_service_paths *p, int autostart, gr_client **out, gr_error *err);
/* Pid of the service this connect started, or 0 when one was already running. */
int gr_client_started_pid(const gr_client *c);
void gr_client_close(gr_client *c);

typedef void (*gr_progress_fn)(void *user, const gr_reply *progress);

/* Send one request (a json_t *, not consumed) and wait for its final reply, passing progress
 * lines to `progress`. timeout_ms < 0 waits as long as the service works. A reply with ok:false
 * is not an error of the call: check reply->ok (reply->code, reply->message). */
gr_status gr_client_call(gr_client *c, void *request, int timeout_ms, gr_progress_fn progress,
                         void *user, gr_reply *reply, gr_error *err);
/* After `stop`: wait until the service closed the connection and released its lock. */
gr_status gr_client_wait_gone(gr_client *c, int timeout_ms, gr_error *err);

/* A lane opened from C (replay/PROTOCOL.md, "Lanes"; the doorbell is replay/lane.h's): the
 * segment is made here, sized from the graph's buffers (`list`), laid out after the control
 * block (64-byte aligned regions, each the whole buffer: a bucket's rows), and mapped. */
#define GR_CLIENT_LANE_MAX_IO (2 * GR_PROTO_MAX_IO)
typedef struct gr_client_lane_io {
    char buffer[96];
    int output;
    void *data;       /* its region in the segment */
    size_t bytes;     /* the whole buffer */
    size_t row_bytes; /* a row of a buffer that changes with the bucket, else 0 */
} gr_client_lane_io;

typedef struct gr_client_lane {
    struct gr_lane_ctl *ctl;
    long long id, bucket, rows; /* rows: a step's default on a bucket's graph */
    int registered;
    int io_graph; /* the service copies inside the graph (replay/PROTOCOL.md, "Lanes") */
    int n; /* inputs, then outputs */
    gr_client_lane_io io[GR_CLIENT_LANE_MAX_IO];
    void *map;
    size_t map_len;
    char shm[64];
} gr_client_lane;

/* lane_open on `graph` (NULL: the most recent capture; a bucket group's name with batch > 0),
 * inputs and outputs by buffer name; spin_us < 0 takes the service's default. The lane's
 * steps: gr_lane_step(lane->ctl, ...) after writing the inputs (lane->ctl->rows for a bucket).
 * A failed request is returned with the service's message (and field in err->path). */
gr_status gr_client_lane_open(gr_client *c, const char *graph, const char *const *inputs, int nin,
                              const char *const *outputs, int nout, long long batch, int spin_us,
                              gr_client_lane **out, gr_error *err);
/* The region of buffer `name` (an output when output != 0), or NULL. */
void *gr_client_lane_data(const gr_client_lane *l, const char *name, int output);
/* lane_close when c is not NULL (its reply's error, if any, is returned; the lane is freed
 * either way), then unmap and remove the segment. NULL lane: nothing. */
gr_status gr_client_lane_close(gr_client *c, gr_client_lane *l, gr_error *err);

/* "\r  LABEL [######.......] done/total steps" on a terminal; cleared when done >= total. */
void gr_progress_bar(FILE *f, const char *label, long long done, long long total);

#ifdef __cplusplus
}
#endif
#endif
