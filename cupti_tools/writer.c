/* Writer thread and buffer pool. One mutex guards the queue, the free list and the pending side
 * lines; formatting and file I/O happen outside it, so CUPTI's callbacks only ever wait for
 * another callback's few instructions (or, by design, for a free buffer when the pool is at its
 * bound). */
#include "cupti_tools/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define OUT_FLUSH_BYTES (1u << 20)

typedef struct qitem {
    uint8_t *buf;
    size_t valid;
} qitem;

struct gr_trace_writer {
    gr_writer_config c;
    char path[1024];
    FILE *f;
    pthread_t th;
    int th_started;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_free, cv_idle;
    uint8_t **freelist;
    int nfree;
    qitem *queue;
    size_t qhead, qlen, qcap;
    gr_sbuf side;
    int closing, busy, held;
    int allocated;
    gr_writer_stats st;
    int first_errno; /* why the first failed write failed (the message names it) */
    /* writer thread only */
    gr_sbuf out;
    int header_done;
};

static uint64_t count_lines(const char *p, size_t n) {
    uint64_t c = 0;
    for (const char *q = p; (q = memchr(q, '\n', n - (size_t)(q - p))) != NULL; q++) c++;
    return c;
}

/* Writes the output buffer (writer thread, or close after the thread ended). */
static void write_out(gr_trace_writer *w) {
    uint64_t errors = 0, lines = 0;
    size_t n = 0;
    int why = 0;
    if (w->out.oom) {
        /* formatting ran out of memory: what is in the buffer is incomplete */
        errors++;
        why = ENOMEM;
    } else if (w->out.len > 0) {
        errno = 0;
        n = fwrite(w->out.p, 1, w->out.len, w->f);
        if (n != w->out.len) {
            errors++;
            why = errno ? errno : EIO;
        }
        lines = count_lines(w->out.p, n);
    }
    w->out.len = 0;
    w->out.oom = 0;
    if (w->out.p) w->out.p[0] = '\0';
    pthread_mutex_lock(&w->mu);
    if (why && !w->first_errno) w->first_errno = why;
    w->st.write_errors += errors;
    w->st.bytes += n;
    w->st.lines += lines;
    pthread_mutex_unlock(&w->mu);
}

static void ensure_header(gr_trace_writer *w) {
    if (w->header_done) return;
    w->header_done = 1;
    if (w->c.header) w->c.header(w->c.user, &w->out);
}

static void *writer_main(void *arg) {
    gr_trace_writer *w = arg;
    gr_sbuf side;
    gr_sb_init(&side);
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (((w->qlen == 0 && w->side.len == 0) || w->held) && !w->closing)
            pthread_cond_wait(&w->cv_work, &w->mu);
        if (w->qlen == 0 && w->side.len == 0) break; /* closing and nothing left */
        qitem it = {NULL, 0};
        if (w->qlen > 0) {
            it = w->queue[w->qhead];
            w->qhead = (w->qhead + 1) % w->qcap;
            w->qlen--;
        }
        if (w->side.len > 0) {
            gr_sbuf t = side;
            side = w->side;
            w->side = t;
            w->side.len = 0;
        }
        w->busy = 1;
        pthread_mutex_unlock(&w->mu);

        ensure_header(w);
        uint64_t records = 0;
        if (it.buf) {
            void *rec = NULL;
            while (w->c.next(it.buf, it.valid, &rec)) {
                records += (uint64_t)w->c.format(w->c.user, rec, &w->out);
                if (w->out.len >= OUT_FLUSH_BYTES) write_out(w);
            }
            /* CUPTI is told it gets zeroed buffers: zero here, off its threads */
            memset(it.buf, 0, w->c.buffer_bytes);
        }
        if (side.len > 0) {
            gr_sb_raw(&w->out, side.p, side.len);
            side.len = 0;
        }
        pthread_mutex_lock(&w->mu);
        w->st.records += records;
        int idle = w->qlen == 0 && w->side.len == 0;
        pthread_mutex_unlock(&w->mu);
        if (w->out.len >= OUT_FLUSH_BYTES || idle || w->out.oom) write_out(w);
        if (idle && fflush(w->f) != 0) {
            int why = errno ? errno : EIO;
            pthread_mutex_lock(&w->mu);
            if (!w->first_errno) w->first_errno = why;
            w->st.write_errors++;
            pthread_mutex_unlock(&w->mu);
        }
        pthread_mutex_lock(&w->mu);
        if (it.buf) {
            if (w->nfree < w->c.max_buffers) {
                w->freelist[w->nfree++] = it.buf;
                pthread_cond_signal(&w->cv_free);
            } else {
                free(it.buf);
            }
        }
        w->busy = 0;
        if (w->qlen == 0 && w->side.len == 0) pthread_cond_broadcast(&w->cv_idle);
    }
    w->busy = 0;
    pthread_cond_broadcast(&w->cv_idle);
    pthread_mutex_unlock(&w->mu);
    gr_sb_free(&side);
    return NULL;
}

gr_status gr_writer_open(const gr_writer_config *c, gr_trace_writer **out, gr_error *err) {
    *out = NULL;
    gr_trace_writer *w = calloc(1, sizeof(*w));
    if (!w) return gr_error_set(err, GR_ERR_NOMEM, c->path, "out of host memory");
    w->c = *c;
    if (!w->c.buffer_bytes) w->c.buffer_bytes = (size_t)8 << 20;
    if (w->c.max_buffers <= 0) w->c.max_buffers = 32;
    if (w->c.wait_ms <= 0) w->c.wait_ms = 60000;
    snprintf(w->path, sizeof(w->path), "%s", c->path);
    w->freelist = calloc((size_t)w->c.max_buffers + 1, sizeof(uint8_t *));
    w->qcap = (size_t)w->c.max_buffers + 8;
    w->queue = calloc(w->qcap, sizeof(qitem));
    if (!w->freelist || !w->queue) {
        free(w->freelist);
        free(w->queue);
        free(w);
        return gr_error_set(err, GR_ERR_NOMEM, c->path, "out of host memory");
    }
    int fd = open(c->path, O_WRONLY | O_CREAT | O_CLOEXEC | (c->exclusive ? O_EXCL : O_TRUNC), 0644);
    if (fd < 0) {
        int e = errno;
        free(w->freelist);
        free(w->queue);
        free(w);
        errno = e;
        return gr_error_set(err, GR_ERR_IO, c->path, "cannot create the trace file: %s (is the directory writable?)",
                            strerror(e));
    }
    w->f = fdopen(fd, "w");
    if (!w->f) {
        close(fd);
        free(w->freelist);
        free(w->queue);
        free(w);
        return gr_error_set(err, GR_ERR_NOMEM, c->path, "out of host memory");
    }
    setvbuf(w->f, NULL, _IOFBF, 1 << 20);
    gr_sb_init(&w->side);
    gr_sb_init(&w->out);
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv_free, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&w->cv_work, NULL);
    pthread_cond_init(&w->cv_idle, NULL);
    int rc = pthread_create(&w->th, NULL, writer_main, w);
    if (rc != 0) {
        fclose(w->f);
        unlink(c->path);
        free(w->freelist);
        free(w->queue);
        free(w);
        return gr_error_set(err, GR_ERR_INTERNAL, c->path, "cannot start the trace writer thread: %s", strerror(rc));
    }
    w->th_started = 1;
    *out = w;
    return GR_OK;
}

uint8_t *gr_writer_buffer(gr_trace_writer *w, size_t *size) {
    *size = 0;
    pthread_mutex_lock(&w->mu);
    int waited = 0;
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += w->c.wait_ms / 1000;
    deadline.tv_nsec += (long)(w->c.wait_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    while (w->nfree == 0) {
        if (w->closing) {
            w->st.refused++;
            pthread_mutex_unlock(&w->mu);
            return NULL;
        }
        if (w->allocated < w->c.max_buffers) {
            w->allocated++;
            w->st.buffers = (uint64_t)w->allocated;
            pthread_mutex_unlock(&w->mu);
            uint8_t *b = calloc(1, w->c.buffer_bytes);
            if (!b) {
                pthread_mutex_lock(&w->mu);
                w->allocated--;
                w->st.refused++;
                pthread_mutex_unlock(&w->mu);
                return NULL;
            }
            *size = w->c.buffer_bytes;
            return b;
        }
        if (!waited) {
            waited = 1;
            w->st.waits++;
        }
        if (pthread_cond_timedwait(&w->cv_free, &w->mu, &deadline) == ETIMEDOUT && w->nfree == 0) {
            w->st.refused++;
            pthread_mutex_unlock(&w->mu);
            return NULL;
        }
    }
    uint8_t *b = w->freelist[--w->nfree];
    pthread_mutex_unlock(&w->mu);
    *size = w->c.buffer_bytes;
    return b;
}

void gr_writer_submit(gr_trace_writer *w, uint8_t *buf, size_t valid) {
    if (!buf) return;
    pthread_mutex_lock(&w->mu);
    w->st.completed++;
    if (w->qlen == w->qcap) {
        /* more buffers than the pool made (not from gr_writer_buffer): grow the ring */
        size_t cap = w->qcap * 2;
        qitem *q = malloc(cap * sizeof(qitem));
        if (!q) {
            w->st.write_errors++;
            pthread_mutex_unlock(&w->mu);
            free(buf);
            return;
        }
        for (size_t i = 0; i < w->qlen; i++) q[i] = w->queue[(w->qhead + i) % w->qcap];
        free(w->queue);
        w->queue = q;
        w->qcap = cap;
        w->qhead = 0;
    }
    w->queue[(w->qhead + w->qlen) % w->qcap] = (qitem){buf, valid};
    w->qlen++;
    pthread_cond_signal(&w->cv_work);
    pthread_mutex_unlock(&w->mu);
}

void gr_writer_line(gr_trace_writer *w, const char *line, size_t len) {
    pthread_mutex_lock(&w->mu);
    gr_sb_raw(&w->side, line, len);
    gr_sb_raw(&w->side, "\n", 1);
    if (w->side.oom) {
        w->st.write_errors++;
        w->side.oom = 0;
    }
    pthread_cond_signal(&w->cv_work);
    pthread_mutex_unlock(&w->mu);
}

void gr_writer_drain(gr_trace_writer *w) {
    pthread_mutex_lock(&w->mu);
    while ((w->qlen > 0 || w->side.len > 0 || w->busy) && w->th_started && !w->held)
        pthread_cond_wait(&w->cv_idle, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

void gr_writer_hold(gr_trace_writer *w, int hold) {
    pthread_mutex_lock(&w->mu);
    w->held = hold != 0;
    if (!w->held)
        pthread_cond_broadcast(&w->cv_work);
    else
        pthread_cond_broadcast(&w->cv_idle); /* a drain under way returns rather than wait */
    pthread_mutex_unlock(&w->mu);
}

void gr_writer_get_stats(gr_trace_writer *w, gr_writer_stats *st) {
    pthread_mutex_lock(&w->mu);
    *st = w->st;
    pthread_mutex_unlock(&w->mu);
}

gr_status gr_writer_close(gr_trace_writer *w, gr_writer_end_fn end, void *user, gr_writer_stats *stats,
                          gr_error *err) {
    if (!w) return GR_OK;
    pthread_mutex_lock(&w->mu);
    w->closing = 1;
    pthread_cond_broadcast(&w->cv_work);
    pthread_cond_broadcast(&w->cv_free);
    pthread_mutex_unlock(&w->mu);
    if (w->th_started) pthread_join(w->th, NULL);
    w->th_started = 0;
    ensure_header(w);
    gr_writer_stats st;
    gr_writer_get_stats(w, &st);
    if (end) end(user, &st, &w->out);
    write_out(w);
    gr_writer_get_stats(w, &st);
    if (fflush(w->f) != 0) {
        st.write_errors++;
        if (!w->first_errno) w->first_errno = errno ? errno : EIO;
    }
    if (fclose(w->f) != 0) {
        st.write_errors++;
        if (!w->first_errno) w->first_errno = errno ? errno : EIO;
    }
    if (stats) *stats = st;
    gr_status rc = GR_OK;
    if (st.write_errors)
        rc = gr_error_set(err, GR_ERR_IO, w->path,
                          "%llu writes to the trace failed (disk full?): %s; the trace is incomplete",
                          (unsigned long long)st.write_errors,
                          w->first_errno ? strerror(w->first_errno) : "out of host memory for a record");
    for (int i = 0; i < w->nfree; i++) free(w->freelist[i]);
    for (size_t i = 0; i < w->qlen; i++) free(w->queue[(w->qhead + i) % w->qcap].buf);
    free(w->freelist);
    free(w->queue);
    gr_sb_free(&w->side);
    gr_sb_free(&w->out);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv_work);
    pthread_cond_destroy(&w->cv_free);
    pthread_cond_destroy(&w->cv_idle);
    free(w);
    return rc;
}
