/* Lane doorbells: the control block's ring / wait / publish, and the segment layout check.
 * Memory order: a side stores its sequence number (release), then a full fence, then reads the
 * other side's waiting flag; the sleeper sets its flag, a full fence, then re-reads the sequence
 * number before futex_wait, which compares it again in the kernel. So a wake is not lost between
 * C peers; a peer without fences (the Python client) may lose one, which the 1 ms futex timeout
 * bounds. Linux futexes on a MAP_SHARED mapping work across processes (not FUTEX_PRIVATE). */
#define _GNU_SOURCE
#include "replay/lane.h"

#include <errno.h>
#include <signal.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/timer.h"

_Static_assert(offsetof(gr_lane_ctl, service_pid) == 24, "lane layout: service_pid");
_Static_assert(offsetof(gr_lane_ctl, req_seq) == 64, "lane layout: req_seq");
_Static_assert(offsetof(gr_lane_ctl, server_waiting) == 72, "lane layout: server_waiting");
_Static_assert(offsetof(gr_lane_ctl, rows) == 76, "lane layout: rows");
_Static_assert(offsetof(gr_lane_ctl, done_seq) == 128, "lane layout: done_seq");
_Static_assert(offsetof(gr_lane_ctl, status) == 136, "lane layout: status");
_Static_assert(offsetof(gr_lane_ctl, client_waiting) == 140, "lane layout: client_waiting");
_Static_assert(offsetof(gr_lane_ctl, steps) == 168, "lane layout: steps");
_Static_assert(offsetof(gr_lane_ctl, message) == 256, "lane layout: message");
_Static_assert(sizeof(gr_lane_ctl) <= GR_LANE_HEADER_BYTES, "lane layout: header");
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "lanes wait on the low 32 bits of a 64-bit sequence number: little-endian hosts only"
#endif

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)

static void futex_wait(const void *word, uint32_t expect, long timeout_ns) {
    struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
    syscall(SYS_futex, word, FUTEX_WAIT, expect, &ts, NULL, 0);
}

static void futex_wake(const void *word) {
    syscall(SYS_futex, word, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

void gr_lane_ctl_init(gr_lane_ctl *c, uint64_t lane_id) {
    memset(c, 0, sizeof(*c));
    c->magic = GR_LANE_MAGIC;
    c->version = GR_LANE_VERSION;
    c->lane_id = lane_id;
    c->service_pid = (uint32_t)getpid();
    FENCE();
    STORE(&c->state, (uint32_t)GR_LANE_OPEN);
}

int gr_lane_await_request(gr_lane_ctl *c, uint64_t done, double spin_us, const int *stop,
                          uint64_t *seq) {
    double until = spin_us > 0 ? gr_now_us() + spin_us : 0;
    unsigned k = 0;
    for (;;) {
        if (__atomic_load_n(stop, __ATOMIC_ACQUIRE)) return 0;
        uint64_t s = LOAD(&c->req_seq);
        if (s != done) {
            *seq = s;
            return 1;
        }
        if (until > 0 && ((++k & 63) != 0 || gr_now_us() < until)) {
            cpu_relax();
            continue;
        }
        STORE(&c->server_waiting, 1u);
        FENCE();
        s = LOAD(&c->req_seq);
        if (s == done && !__atomic_load_n(stop, __ATOMIC_ACQUIRE))
            futex_wait(&c->req_seq, (uint32_t)done, 1000000L);
        STORE(&c->server_waiting, 0u);
        until = 0; /* after a sleep: keep sleeping until the next request */
    }
}

void gr_lane_publish(gr_lane_ctl *c, uint64_t seq, int status, const char *message,
                     double graph_us, double step_us, double lock_us) {
    c->status = status;
    c->graph_us = graph_us;
    c->step_us = step_us;
    c->lock_us = lock_us;
    if (status == 0) c->steps++;
    if (message) snprintf(c->message, sizeof(c->message), "%s", message);
    else c->message[0] = '\0';
    STORE(&c->done_seq, seq);
    FENCE();
    if (LOAD(&c->client_waiting)) futex_wake(&c->done_seq);
}

void gr_lane_mark_closed(gr_lane_ctl *c, const char *why) {
    snprintf(c->message, sizeof(c->message), "%s", why ? why : "the lane was closed");
    FENCE();
    STORE(&c->state, (uint32_t)GR_LANE_CLOSED);
    FENCE();
    futex_wake(&c->done_seq);
    futex_wake(&c->req_seq);
}

void gr_lane_wake_server(gr_lane_ctl *c) {
    FENCE();
    futex_wake(&c->req_seq);
}

/* 1 while the service process that opened the lane exists (or is unknown). */
static int service_alive(const gr_lane_ctl *c) {
    pid_t pid = (pid_t)LOAD(&c->service_pid);
    return pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH;
}

/* Wait until done_seq reaches seq: spin for spin_us, then sleep on the futex, looking at the
 * lane's state and (every ~50 ms) the service's process. */
static gr_status wait_done(gr_lane_ctl *c, uint64_t seq, double t0, double spin_us, int timeout_ms,
                           gr_error *err) {
    double spin_until = t0 + (spin_us > 0 ? spin_us : 0), next_alive = t0 + 50e3;
    unsigned k = 0;
    for (;;) {
        uint64_t d = LOAD(&c->done_seq);
        if (d == seq) return GR_OK;
        if (LOAD(&c->state) != GR_LANE_OPEN)
            return gr_error_set(err, GR_ERR_SERVICE, NULL, "lane %llu closed during the step: %s",
                                (unsigned long long)c->lane_id, c->message);
        if ((++k & 63) != 0) {
            cpu_relax();
            continue;
        }
        double now = gr_now_us();
        if (timeout_ms >= 0 && now - t0 > timeout_ms * 1e3)
            return gr_error_set(err, GR_ERR_SERVICE, NULL,
                                "lane %llu: step %llu not answered within %d ms (the service's "
                                "lane thread is gone or the GPU is held by a long request: "
                                "`graphrun status` shows what runs)",
                                (unsigned long long)c->lane_id, (unsigned long long)seq,
                                timeout_ms);
        if (now >= next_alive) {
            next_alive = now + 50e3;
            if (!service_alive(c))
                return gr_error_set(err, GR_ERR_SERVICE, NULL,
                                    "lane %llu: the service (pid %u) is gone: step %llu was not "
                                    "answered (its log next to the socket says why)",
                                    (unsigned long long)c->lane_id, (unsigned)c->service_pid,
                                    (unsigned long long)seq);
        }
        if (now < spin_until) {
            cpu_relax();
            continue;
        }
        STORE(&c->client_waiting, 1u);
        FENCE();
        if (LOAD(&c->done_seq) != seq && LOAD(&c->state) == GR_LANE_OPEN)
            futex_wait(&c->done_seq, (uint32_t)d, 1000000L);
        STORE(&c->client_waiting, 0u);
    }
}

gr_status gr_lane_step(gr_lane_ctl *c, double spin_us, int timeout_ms, gr_error *err) {
    if (LOAD(&c->magic) != GR_LANE_MAGIC || LOAD(&c->version) != GR_LANE_VERSION)
        return gr_error_set(err, GR_ERR_PROTOCOL, NULL,
                            "not a lane's control block (magic/version): open the lane with "
                            "`lane_open` before stepping");
    uint32_t state = LOAD(&c->state);
    if (state != GR_LANE_OPEN)
        return gr_error_set(err, GR_ERR_SERVICE, NULL, "lane %llu is closed: %s",
                            (unsigned long long)c->lane_id,
                            c->message[0] ? c->message : "not open");
    double t0 = gr_now_us();
    uint64_t pending = LOAD(&c->req_seq);
    gr_status st = GR_OK;
    if (pending != LOAD(&c->done_seq)) /* an earlier call gave up on this one: let it end */
        st = wait_done(c, pending, t0, spin_us, timeout_ms, err);
    if (st != GR_OK) return st;
    uint64_t seq = LOAD(&c->done_seq) + 1;
    STORE(&c->req_seq, seq);
    FENCE();
    if (LOAD(&c->server_waiting)) futex_wake(&c->req_seq);
    st = wait_done(c, seq, t0, spin_us, timeout_ms, err);
    if (st != GR_OK) return st;
    int status = c->status;
    if (status != 0)
        return gr_error_set(err, (gr_status)status, NULL, "lane %llu step %llu: %s",
                            (unsigned long long)c->lane_id, (unsigned long long)seq, c->message);
    return GR_OK;
}

gr_status gr_lane_check_layout(size_t seg_bytes, const gr_lane_region *r, int n, gr_error *err) {
    gr_status st = GR_OK;
    for (int i = 0; i < n; i++) {
        unsigned long long off = (unsigned long long)r[i].offset;
        if (r[i].offset < (long long)GR_LANE_HEADER_BYTES) {
            st = gr_error_set(err, GR_ERR_INPUT, r[i].field,
                              "offset %lld of buffer \"%s\" lies in the lane's control block: data "
                              "starts at offset %u or later",
                              r[i].offset, r[i].buffer, GR_LANE_HEADER_BYTES);
            continue;
        }
        if (off > seg_bytes || r[i].bytes > seg_bytes - off) {
            st = gr_error_set(err, GR_ERR_INPUT, r[i].field,
                              "buffer \"%s\" (%zu bytes at offset %lld) runs past the end of the "
                              "segment (%zu bytes): make the segment at least %llu bytes",
                              r[i].buffer, r[i].bytes, r[i].offset, seg_bytes,
                              off + (unsigned long long)r[i].bytes);
            continue;
        }
        for (int k = 0; k < i; k++) {
            unsigned long long ko = (unsigned long long)r[k].offset;
            if (r[k].offset < (long long)GR_LANE_HEADER_BYTES || ko > seg_bytes) continue;
            if (off < ko + r[k].bytes && ko < off + r[i].bytes && r[i].bytes && r[k].bytes)
                st = gr_error_set(err, GR_ERR_INPUT, r[i].field,
                                  "buffer \"%s\" [%llu, %llu) overlaps %s (\"%s\" [%llu, %llu)): "
                                  "give each buffer its own bytes",
                                  r[i].buffer, off, off + r[i].bytes, r[k].field, r[k].buffer, ko,
                                  ko + r[k].bytes);
        }
    }
    return st;
}
