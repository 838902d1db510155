/* The trace writer: a pool of activity buffers handed to CUPTI and a writer thread that turns
 * filled buffers into JSONL lines and streams them to the file, so memory stays bounded however
 * long the traced program runs.
 *   - buffer requests take a recycled (zeroed) buffer, allocate one while fewer than
 *     max_buffers exist, else wait for the writer to free one (backpressure on the traced
 *     program instead of dropped records); after wait_ms they give up (CUPTI then counts the
 *     records it could not store as dropped)
 *   - completed buffers are queued in O(1) under a mutex: the CUPTI thread never waits for I/O
 *   - side lines (graph nodes, contexts, ops, regions) come from any thread
 * CUPTI-independent: the record iterator and formatter are function pointers, so the tests drive
 * the writer with fake buffers. */
#ifndef GR_WRITER_H
#define GR_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "cupti_tools/jsonl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_trace_writer gr_trace_writer;

/* Next record of a filled buffer (*rec NULL on input: the first). Returns 1 with *rec set, or 0
 * at the end of the buffer. */
typedef int (*gr_writer_next_fn)(uint8_t *buf, size_t valid, void **rec);
/* Appends the line(s) for one record to `out` ('\n'-terminated; may append nothing). Returns 1
 * when the record counts as an activity record line. Writer thread only. */
typedef int (*gr_writer_format_fn)(void *user, void *rec, gr_sbuf *out);
/* Appends the header line. Called once, on the writer thread, before the first other line. */
typedef void (*gr_writer_header_fn)(void *user, gr_sbuf *out);

typedef struct gr_writer_stats {
    uint64_t records;      /* activity record lines written */
    uint64_t lines, bytes;
    uint64_t buffers;      /* buffers allocated (the pool's high-water mark) */
    uint64_t waits;        /* buffer requests that had to wait for the writer */
    uint64_t refused;      /* buffer requests answered with NULL */
    uint64_t write_errors; /* failed writes (disk full, ...) */
    uint64_t completed;    /* buffers handed back by CUPTI */
} gr_writer_stats;

/* Appends the end line given the final counts. */
typedef void (*gr_writer_end_fn)(void *user, const gr_writer_stats *st, gr_sbuf *out);

typedef struct gr_writer_config {
    const char *path;
    int exclusive;       /* fail with EEXIST instead of truncating an existing file */
    size_t buffer_bytes; /* per activity buffer (default 8 MiB) */
    int max_buffers;     /* the memory bound (default 32) */
    int wait_ms;         /* how long a buffer request may wait (default 60000) */
    gr_writer_next_fn next;
    gr_writer_format_fn format;
    gr_writer_header_fn header;
    void *user;
} gr_writer_config;

/* Opens the file and starts the writer thread. GR_ERR_IO naming the path when the file cannot
 * be created (errno is left as open() set it). */
gr_status gr_writer_open(const gr_writer_config *c, gr_trace_writer **out, gr_error *err);
/* For CUPTI's buffer-requested callback: a zeroed buffer of *size bytes, or NULL. */
uint8_t *gr_writer_buffer(gr_trace_writer *w, size_t *size);
/* For CUPTI's buffer-completed callback: queue the buffer for writing (and recycling). */
void gr_writer_submit(gr_trace_writer *w, uint8_t *buf, size_t valid);
/* One record line from any thread (a JSON object without the newline). */
void gr_writer_line(gr_trace_writer *w, const char *line, size_t len);
/* Waits until every queued buffer and line has been written (returns at once while held). */
void gr_writer_drain(gr_trace_writer *w);
/* While held (hold 1), the writer thread writes nothing (not even the header): buffers and lines
 * queue up, buffer requests are still served. The collector holds it while its start-up probe
 * decides how API records are enabled, so the header describes what was finally enabled.
 * Release with hold 0. */
void gr_writer_hold(gr_trace_writer *w, int hold);
/* Current counts (thread-safe snapshot). */
void gr_writer_get_stats(gr_trace_writer *w, gr_writer_stats *st);
/* Drains, writes the end line, closes the file and frees the pool; `w` is freed. Buffers are
 * plain heap memory: one CUPTI hands back after this must be released with free() by the
 * caller's callback. Fills *stats when not NULL. GR_ERR_IO when a write failed. */
gr_status gr_writer_close(gr_trace_writer *w, gr_writer_end_fn end, void *user, gr_writer_stats *stats,
                          gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
