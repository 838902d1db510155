/* Opening the files a user names, bounded: a path must name a regular file (a FIFO, a device
 * such as /dev/zero or a directory is refused before anything is read), no larger than the
 * documented limit of its kind; streams without a size (stdin) are read up to that limit. */
#ifndef GR_FILEIO_H
#define GR_FILEIO_H

#include <stdint.h>
#include <stdio.h>

#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gr_file_kind {
    GR_FILE_WORKLOAD, /* workload JSON                       64 MiB */
    GR_FILE_TSV,      /* Criteo TSV (--input)                64 GiB */
    GR_FILE_TRACE,    /* cupti-launchstat trace (JSON lines)  8 GiB */
    GR_FILE_DATA,     /* raw or .npy buffer contents         64 GiB */
    GR_FILE_KINDS
} gr_file_kind;

/* The size limit of a kind in bytes, and its name for messages ("workload file"). */
uint64_t gr_file_limit(gr_file_kind kind);
const char *gr_file_kind_name(gr_file_kind kind);

/* Opens `path` for reading after checking, without blocking (a FIFO is not waited on), that it
 * is a regular file within the kind's limit. On failure *out is NULL and err names the path,
 * what it is and what to do (GR_ERR_IO for a missing or unreadable file, GR_ERR_INPUT for one of
 * the wrong type or size). *size gets the file's size when not NULL. */
gr_status gr_file_open(const char *path, gr_file_kind kind, FILE **out, uint64_t *size,
                       gr_error *err);

/* The whole file, NUL-terminated (not counted in *len), opened with gr_file_open. */
gr_status gr_file_read_all(const char *path, gr_file_kind kind, char **out, size_t *len,
                           gr_error *err);

/* Reads an open stream (e.g. stdin) to its end, NUL-terminated, failing with GR_ERR_INPUT once
 * it passes `limit` bytes; `label` names the stream in messages. */
gr_status gr_stream_read_all(FILE *f, const char *label, uint64_t limit, char **out, size_t *len,
                             gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
