/* The replay service (`graphrun serve`): a daemon that holds the CUDA context, device buffers
 * and instantiated graphs between commands. One I/O thread owns the UNIX socket (peers must
 * have the service's uid), parses requests, answers status/list/stop at once and queues GPU
 * work for one worker thread, which captures, replays and drops graphs (gr_session) keyed by
 * name and content hash. Limits on graphs, device memory, request size, clients and queue;
 * per-client input and output are bounded (backpressure); slow clients time out; a stop
 * cancels the running request and exits within STOP_GRACE_US even if it does not stop; a sticky
 * CUDA error makes it reply, log and exit. */
#ifndef GR_SERVICE_H
#define GR_SERVICE_H

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_service_opts {
    const char *socket;    /* --socket; NULL: $GRAPHRUN_SOCKET or the per-user default */
    int foreground;        /* log to stderr; else to SOCKET.log (stderr is redirected there) */
    int notify_fd;         /* -1, or where to write "ready PID" / "running PID" / "error CODE MSG" */
    int device;            /* CUDA device ordinal */
    int max_graphs;        /* graphs held at once */
    double max_memory;     /* device bytes held by graphs; 0: 90% of the device's memory */
    int client_timeout_ms; /* a request line must complete, and replies be read, within this */
    int max_clients;       /* connections at once */
    int max_queue;         /* GPU requests waiting */
    int test_hooks;        /* accept debug_sleep / debug_fault (GRAPHRUN_SERVICE_TEST_HOOKS=1) */
} gr_service_opts;

void gr_service_opts_default(gr_service_opts *o);

/* Runs until `stop`, SIGTERM/SIGINT/SIGHUP or a fatal CUDA error. *already_running is set (and
 * GR_ERR_SERVICE returned) when another service owns the socket. GR_ERR_CUDA after a sticky
 * CUDA error. *abandoned is set (with GR_ERR_SERVICE) when the running request did not stop
 * within 1.5 s of a stop: its worker thread still runs, so the caller must end the process at
 * once with _exit (exit handlers, CUDA's included, would race with it). */
gr_status gr_service_run(const gr_service_opts *o, int *already_running, int *abandoned,
                         gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
