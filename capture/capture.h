/* Stream capture of a plan's step into a CUDA graph (mode global / thread-local / relaxed),
 * instantiation, launch, introspection (node and edge counts by node type) and DOT export. */
#ifndef GR_CAPTURE_H
#define GR_CAPTURE_H

#include <stddef.h>

#include "core/device.h"
#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gr_capture_mode {
    GR_CAPTURE_GLOBAL = 0,
    GR_CAPTURE_THREAD_LOCAL = 1,
    GR_CAPTURE_RELAXED = 2
} gr_capture_mode;

typedef struct gr_graph {
    void *graph; /* cudaGraph_t */
    void *exec;  /* cudaGraphExec_t */
    gr_capture_mode mode;
    size_t nodes, edges;
    size_t kernel_nodes, memcpy_nodes, memset_nodes, event_nodes, empty_nodes, other_nodes;
    double capture_us;     /* host clock: begin capture .. end capture */
    double instantiate_us; /* host clock: cudaGraphInstantiate */
    double upload_us;      /* host clock: cudaGraphUpload */
    int steps;             /* plan steps per launch (1 unless --unroll or --device-loop) */
    int device_loop;       /* 1: a conditional WHILE node runs the step `steps` times on the GPU;
                              the counts above are the body's (one step, without the loop's
                              own tail kernel) */
    void *loop_counter;    /* device memory the loop counts down (owned) */
} gr_graph;

gr_status gr_capture_mode_parse(const char *name, gr_capture_mode *out, gr_error *err);
const char *gr_capture_mode_name(gr_capture_mode mode);

/* Capture ops [begin, end) of the plan on its main stream and instantiate the graph. */
gr_status gr_graph_capture_range(const gr_plan *plan, gr_devstate *dev, int begin, int end,
                                 gr_capture_mode mode, const gr_exec_hooks *hooks, gr_graph *out,
                                 gr_error *err);
gr_status gr_graph_capture(const gr_plan *plan, gr_devstate *dev, gr_capture_mode mode,
                           const gr_exec_hooks *hooks, gr_graph *out, gr_error *err);
/* Capture `steps` consecutive steps of the plan into one graph (--unroll). */
gr_status gr_graph_capture_steps(const gr_plan *plan, gr_devstate *dev, gr_capture_mode mode,
                                 int steps, const gr_exec_hooks *hooks, gr_graph *out,
                                 gr_error *err);
/* A device-resident loop (--device-loop): one step captured into the body of a conditional WHILE
 * node (CUDA 12.4+), after a memset that loads a counter with `steps` and followed by a kernel that
 * counts it down, so that one launch runs `steps` steps with no host in between. A step that holds
 * nodes a conditional body may not (host callbacks, events) is GR_ERR_CAPTURE naming them. */
gr_status gr_graph_capture_loop(const gr_plan *plan, gr_devstate *dev, gr_capture_mode mode,
                                int steps, const gr_exec_hooks *hooks, gr_graph *out,
                                gr_error *err);
/* Whether this build and driver can make device loops; when not, why (for the report). */
int gr_graph_loop_supported(char *why, size_t size);
/* What a custom capture enqueues on the device state's main stream (streams it forks must be
 * joined back): a step made of something other than a range of the plan's ops, e.g. the step
 * without its collectives, or the collectives alone (replay/tp.c). */
typedef gr_status (*gr_enqueue_fn)(void *user, gr_error *err);
/* Capture `steps` calls of `enqueue` into one graph and instantiate it, as the functions above
 * do for plan ranges (they go through it). */
gr_status gr_graph_capture_fn(gr_devstate *dev, gr_capture_mode mode, int steps,
                              gr_enqueue_fn enqueue, void *user, gr_graph *out, gr_error *err);
gr_status gr_graph_launch(const gr_graph *g, gr_stream_t stream, gr_error *err);
gr_status gr_graph_dot(const gr_graph *g, const char *path, gr_error *err);
void gr_graph_destroy(gr_graph *g);

/* What cudaGraphExecUpdate did with a held graph's instantiated form. */
typedef struct gr_graph_update {
    int updated;      /* 1: `into`'s exec now runs `from`'s graph; 0: the topology differs */
    double update_us; /* host clock around cudaGraphExecUpdate */
    char why[256];    /* when not updated: CUDA's result and the node it names */
} gr_graph_update;

/* Updates into->exec in place to run from->graph (cudaGraphExecUpdate): same topology, new
 * kernel parameters (scalars, buffer pointers). On success `into` takes from's graph and keeps its
 * exec, and from's own exec is destroyed (from is left empty); otherwise both are unchanged and
 * u->why says why. GR_ERR_CUDA only for a failure other than an incompatible graph. */
gr_status gr_graph_exec_update(gr_graph *into, gr_graph *from, gr_graph_update *u, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
