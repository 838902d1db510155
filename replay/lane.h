/* Lanes (replay/PROTOCOL.md, "Lanes"): a served step without the socket. A client that opened
 * a lane on a held graph owns one POSIX shared-memory segment: this control block (the first
 * GR_LANE_HEADER_BYTES), then its inputs and outputs at offsets it chose. A step is a doorbell:
 * the client writes the inputs into the segment and bumps req_seq; the service's lane thread,
 * spinning on it (then sleeping on a futex), runs the step and publishes done_seq. This file
 * owns the block's layout and the ring / wait / publish mechanics; it knows nothing of CUDA. */
#ifndef GR_LANE_H
#define GR_LANE_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_LANE_MAGIC 0x31454e414c5247ULL /* "GRLANE1" as little-endian bytes */
#define GR_LANE_VERSION 1u
#define GR_LANE_HEADER_BYTES 4096u /* data regions start at or after this offset */
#define GR_LANE_MSG_MAX 512

enum { GR_LANE_OPENING = 0, GR_LANE_OPEN = 1, GR_LANE_CLOSED = 2 };

/* The control block, at offset 0 of the segment. The offsets are the protocol (the Python
 * client packs the same ones): each side writes only its own fields, the two sequence numbers
 * sit in separate cache lines, and a futex waits on the low 32 bits of a sequence number. */
typedef struct gr_lane_ctl {
    uint64_t magic;          /* 0: GR_LANE_MAGIC (service, at open) */
    uint32_t version;        /* 8: GR_LANE_VERSION (service) */
    uint32_t state;          /* 12: GR_LANE_* (service) */
    uint64_t lane_id;        /* 16: the service's id for the lane (service) */
    uint32_t service_pid;    /* 24: the service's process: a client waiting on a step checks it
                                lives (a service killed outright never marks its lanes closed) */
    uint8_t pad0[36];
    uint64_t req_seq;        /* 64: client: the step it asks for, done_seq + 1 */
    uint32_t server_waiting; /* 72: service: 1 while its thread sleeps on req_seq's futex */
    uint32_t rows;           /* 76: client: the step's batch rows on a bucket's graph (0: the
                                lane's default, its `batch` at open, else the bucket's) */
    uint8_t pad1[48];
    uint64_t done_seq;       /* 128: service: the last step finished (its outputs are in place) */
    int32_t status;          /* 136: 0, or the error code (gr_status) of step done_seq */
    uint32_t client_waiting; /* 140: client: 1 while it sleeps on done_seq's futex */
    double graph_us;         /* 144: CUDA events around the graph launch of step done_seq */
    double step_us;          /* 152: service host time, doorbell seen -> outputs in the segment */
    double lock_us;          /* 160: of which waiting for the GPU (another request was running) */
    uint64_t steps;          /* 168: steps served on this lane */
    uint8_t pad2[80];
    char message[GR_LANE_MSG_MAX]; /* 256: why step done_seq failed, or why the lane closed */
} gr_lane_ctl;

/* ---- the service's side */

/* Initialise a block the service has just mapped (state OPEN, sequence numbers 0). */
void gr_lane_ctl_init(gr_lane_ctl *c, uint64_t lane_id);
/* Wait until the client asks for a step after `done`: spin for spin_us, then sleep on the futex
 * (waking every millisecond to look at *stop). 1 with *seq set, 0 once *stop is non-zero. */
int gr_lane_await_request(gr_lane_ctl *c, uint64_t done, double spin_us, const int *stop,
                          uint64_t *seq);
/* Step `seq` finished: its status (0 or a gr_status), message (NULL when ok) and timings, then
 * done_seq, then wake a sleeping client. */
void gr_lane_publish(gr_lane_ctl *c, uint64_t seq, int status, const char *message,
                     double graph_us, double step_us, double lock_us);
/* The lane is over (state CLOSED, `why` in message): a waiting client wakes and fails. */
void gr_lane_mark_closed(gr_lane_ctl *c, const char *why);
/* Wake a thread sleeping in gr_lane_await_request (after setting its stop flag). */
void gr_lane_wake_server(gr_lane_ctl *c);

/* ---- the client's side */

/* Ring for one step and wait for it: spin for spin_us, then sleep on the futex; give up after
 * timeout_ms (< 0: no limit) with GR_ERR_SERVICE. A step that failed in the service returns its
 * status with the service's message; a closed lane, or a service process that is gone, is
 * GR_ERR_SERVICE with the reason. A step still pending from an earlier call that gave up is
 * waited for first (its outputs are not this step's). */
gr_status gr_lane_step(gr_lane_ctl *c, double spin_us, int timeout_ms, gr_error *err);

/* ---- the layout */

/* A data region of the segment: one buffer's bytes. */
typedef struct gr_lane_region {
    const char *field; /* for messages: "inputs[0]" */
    const char *buffer;
    long long offset;
    size_t bytes;
} gr_lane_region;

/* Every region inside a segment of seg_bytes, after the control block, no two overlapping. Each
 * problem names its field ("outputs[1]"); err->path is the first. */
gr_status gr_lane_check_layout(size_t seg_bytes, const gr_lane_region *r, int n, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
