/* CUPTI activity records -> trace lines (the "k", "cpy", "set", "api", "ext" and "ovh" records
 * of cupti_tools/README.md), and the program's NVTX calls -> "nvtx_push"/"nvtx_pop" lines. Kernel
 * and API names are interned: the first use of a name emits a "name" line and records refer to it
 * by id, which keeps traces of long C++ kernel names small. One formatter state per trace, used by
 * the writer thread only. */
#ifndef GR_CUPTI_FORMAT_H
#define GR_CUPTI_FORMAT_H

#include <cupti_activity.h>
#include <stdint.h>

#include "cupti_tools/jsonl.h"
#include "cupti_tools/u64map.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Name of a runtime (driver 0) or driver (1) API callback id, or NULL. */
typedef const char *(*gr_api_name_fn)(int driver, uint32_t cbid);

typedef struct gr_fmt {
    uint64_t t0;             /* CUPTI timestamp that record times are counted from */
    gr_api_name_fn api_name; /* default: cuptiGetCallbackName */
    gr_u64map by_hash;       /* name hash -> id */
    char **strs;             /* id - 1 -> name */
    size_t nstrs, cap;
    int32_t *api_ids[2];     /* callback id -> name id (0: not yet interned) */
    size_t api_n[2];
} gr_fmt;

void gr_fmt_init(gr_fmt *f, uint64_t t0, gr_api_name_fn api_name);
void gr_fmt_free(gr_fmt *f);
/* Appends the line(s) for one record; returns 1 when it wrote an activity record line, 0 for
 * kinds the trace does not keep. */
int gr_fmt_record(gr_fmt *f, const CUpti_Activity *rec, gr_sbuf *out);
/* The id of `name`, emitting its "name" line first when new (0 when out of memory). */
int32_t gr_fmt_intern(gr_fmt *f, const char *name, gr_sbuf *out);
/* cuptiGetCallbackName with the "_vNNNN" suffix removed (static storage per call site). */
const char *gr_fmt_cupti_api_name(int driver, uint32_t cbid);
const char *gr_fmt_overhead_kind(int kind);
/* An NVTX call of the traced program as an "nvtx_push" (push 1) or "nvtx_pop" line, without its
 * newline: host time `s` (ns since t0), thread, domain (NULL or "": the default domain), range id
 * (start/end ranges: has_id), and for pushes the message (cut at GR_FMT_NVTX_MSG_MAX bytes) and
 * the depth (< 0: not written). The collector's callbacks call it on the program's threads. */
#define GR_FMT_NVTX_MSG_MAX 1023
void gr_fmt_nvtx(gr_sbuf *b, int push, int64_t s, uint32_t tid, const char *dom, int has_id,
                 uint64_t id, const char *msg, int depth);
const char *gr_fmt_copy_kind(int kind);

#ifdef __cplusplus
}
#endif
#endif
