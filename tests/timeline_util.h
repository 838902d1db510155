/* Checks shared by the timeline suites (test_timeline.c, test_gpu_timeline.c): a structural
 * validator of Chrome Trace Event JSON written by cupti_tools/chrome.c, HTML report checks, the
 * NVTX injection's record file, and running the built tools. */
#ifndef GR_TIMELINE_UTIL_H
#define GR_TIMELINE_UTIL_H

#include <stddef.h>

#define TL_MAX_NAMES 96

typedef struct tl_chrome {
    int ok;         /* every rule below held */
    char why[1024]; /* the first rule broken */
    size_t events, slices, meta;
    size_t kernels, graph_kernels, kernels_with_op, graph_kernels_with_op, eager_kernels_with_op;
    size_t nvtx_slices, api_slices, memops;
    size_t flows;       /* ids with both ends */
    size_t graph_flows; /* flow ends bound to graph-node kernels */
    double kernel_us;   /* sum of kernel durations */
    char procs[TL_MAX_NAMES][160];
    int nprocs;
    char threads[TL_MAX_NAMES * 4][128];
    int nthreads;
} tl_chrome;

/* Parses the file and checks: valid JSON with a traceEvents array; every event has ph, pid,
 * tid; X slices have name, cat, ts, dur >= 0; times never go back on a track (pid, tid) in file
 * order; X slices nest on every track; every flow id has exactly one start (s) and one end (f),
 * each inside an X slice of its own track; kernels carry grid and block (3 numbers each) and a
 * correlation id, graph kernels a graph node id. Fills the counts either way. */
int tl_check_chrome(const char *path, tl_chrome *out);
int tl_has_name(char names[][160], int n, const char *needle);
int tl_has_thread(const tl_chrome *c, const char *needle);

/* CUnit checks that an HTML report is one self-contained file: no http(s) URL, no script, no
 * src= or <link>, no CSS url() or @import. */
void tl_check_self_contained(const char *html);
/* A number as the HTML report formats it. */
const char *tl_fmt_num(double v);

/* Counted from the trace alone: complete kernels and their total time, GPU records whose
 * correlation id an API record carries (each must get a flow), and of those the graph kernels. */
typedef struct tl_expect {
    size_t kernels, flows, graph_flows;
    double kernel_us;
} tl_expect;
typedef struct gr_trace gr_trace;
tl_expect tl_expected(const gr_trace *t);

/* The whole file in a static buffer (NULL when it cannot be read). */
const char *tl_slurp(const char *path, size_t *len);
size_t tl_count(const char *hay, const char *needle);

/* The built tool under the build directory (GR_BUILD_DIR, else next to the test binary). */
const char *tl_bin(const char *name);
/* Runs a shell command from the source tree with its output (stdout + stderr) in tl_out. */
extern char tl_out[1 << 20];
int tl_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The NVTX injection's record file (tests/nvtx/nvtx_rec.c). */
typedef struct tl_nvtx_rec {
    int inits, domain_id;
    char cat_name[8][32];
    size_t pushes, pops, unbalanced;
    size_t by_cat[8];
    size_t steps_by_cat[8], ops_by_cat[8], phases_by_cat[8];
    size_t step_payload_ok; /* step pushes whose payload is their number in the message */
    size_t max_depth;
} tl_nvtx_rec;
/* Reads the records of domain "graphrun"; `must` lists messages (substrings) that must each be
 * pushed at least once (NULL-terminated); returns the first missing one, or NULL. */
const char *tl_read_nvtx(const char *path, tl_nvtx_rec *out, const char *const *must);
/* Pushes in the file whose message contains `needle`. */
size_t tl_nvtx_count(const char *path, const char *needle);

#endif
