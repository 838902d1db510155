/* The resolved plan: what a workload becomes after validation, for one variant and one set of
 * params. Buffers with sizes and dtypes, ops with kernel entries, streams, launch dims and the
 * bytes each op reads and writes. Everything downstream (executor, capture, report) reads the
 * plan; nothing downstream re-parses JSON. */
#ifndef GR_PLAN_H
#define GR_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_MAX_DIMS 6
#define GR_MAX_INPUTS 512
#define GR_MAX_OUTPUTS 8
#define GR_MAX_ATTRS 12
#define GR_MAX_STREAMS 8
#define GR_NAME_MAX 96
#define GR_PATH_MAX 192
#define GR_MAX_OPS 65536
#define GR_MAX_BUFFERS 100000

typedef struct gr_kernel_def gr_kernel_def;
typedef struct gr_module gr_module;

typedef enum gr_init_kind {
    GR_INIT_NONE = 0, /* no init: poisoned; must be written before it is read */
    GR_INIT_NORMAL,   /* a = mean, b = std */
    GR_INIT_UNIFORM,  /* a = low, b = high */
    GR_INIT_ZEROS,
    GR_INIT_ONES,
    GR_INIT_CONST,   /* a = value */
    GR_INIT_IOTA,    /* a = start, b = step */
    GR_INIT_RANDINT, /* integers in [a, b) */
    GR_INIT_ZIPF,    /* integers in [0, b) with P(k) ~ 1/(k+1)^a, ranks scattered by a permutation */
    GR_INIT_FILE,    /* raw little-endian elements from `path` */
    GR_INIT_HOST     /* filled by the program from host memory (e.g. a Criteo TSV reader) */
} gr_init_kind;

typedef struct gr_init {
    gr_init_kind kind;
    double a, b;
    uint64_t seed; /* final seed: workload seed mixed with the buffer's seed or name */
    char path[512];
} gr_init;

typedef struct gr_buffer {
    char name[GR_NAME_MAX];
    char path[GR_PATH_MAX]; /* where it was declared, e.g. buffers[3]{i=2} */
    gr_dtype dtype;
    int ndim;
    int64_t shape[GR_MAX_DIMS];
    int64_t numel;
    size_t bytes;
    gr_init init;
    /* dataflow of this variant */
    int used;           /* referenced by an op of this variant: allocated */
    int first_read;     /* op index, -1 if never read */
    int first_write;    /* op index, -1 if never written */
    int is_output;      /* checked against the reference */
    int is_intermediate; /* written then read inside one step and not an output */
    /* outputs' tolerances (core/dtype.h gr_tol, docs/verification.md); see gr_buffer_tol */
    double rtol;        /* relative L2 tolerance */
    double atol;        /* element-wise, in units of rms(ref); 0: GR_TOL_ATOL_K * rtol */
    double rtol_elem;   /* element-wise relative; 0: max(rtol, 2 u(dtype)) */
    double tol_roundings, tol_depth; /* the formula's inputs when derived ("depth" given) */
    int tol_source;     /* GR_TOL_DEFAULT, GR_TOL_DERIVED or GR_TOL_EXPLICIT ("rtol" given) */
    const void *host_data; /* GR_INIT_HOST: bytes to copy in (owned by the caller) */
    /* an output's expected contents ("expect": {"file"}): raw little-endian, or .npy whose header
     * resolve checked against dtype and shape; data starts at expect_offset (core/expect.h) */
    char expect_path[512];
    size_t expect_offset;
} gr_buffer;

enum { GR_TOL_DEFAULT = 0, GR_TOL_DERIVED, GR_TOL_EXPLICIT };

/* An output's effective tolerances: its rtol with atol and rtol_elem filled in when unset, so a
 * test that changes only rtol moves the element bound with it. */
static inline gr_tol gr_buffer_tol(const gr_buffer *b) {
    gr_tol t = gr_tol_from_rtol(b->dtype, b->rtol);
    if (b->atol > 0) t.atol = b->atol;
    if (b->rtol_elem > 0) t.rtol_elem = b->rtol_elem;
    return t;
}
/* "derived", "explicit" or "dtype default" */
static inline const char *gr_tol_source_name(int s) {
    return s == GR_TOL_DERIVED ? "derived" : s == GR_TOL_EXPLICIT ? "explicit" : "dtype default";
}

typedef enum gr_attr_type { GR_ATTR_INT, GR_ATTR_FLOAT, GR_ATTR_ENUM, GR_ATTR_BOOL } gr_attr_type;

typedef struct gr_attr_val {
    const char *name; /* points into the kernel's attr spec */
    gr_attr_type type;
    double num;   /* INT, FLOAT, BOOL */
    char str[40]; /* ENUM */
} gr_attr_val;

typedef enum gr_op_kind { GR_OP_KERNEL, GR_OP_FORK, GR_OP_JOIN } gr_op_kind;

/* A user op's argument ("args"): a buffer's device pointer, or a scalar of the JSON's type. */
typedef enum gr_arg_type {
    GR_ARG_BUFFER = 0,
    GR_ARG_I32,
    GR_ARG_U32,
    GR_ARG_I64,
    GR_ARG_U64,
    GR_ARG_F32,
    GR_ARG_F64
} gr_arg_type;

typedef struct gr_user_arg {
    gr_arg_type type;
    int buffer; /* GR_ARG_BUFFER: plan buffer index */
    union {
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        float f32;
        double f64;
    } v;
} gr_user_arg;

/* What a user op ({"module", "function", ...}) adds to a gr_op; kernels/usermod.c launches it. */
typedef struct gr_user_op {
    gr_module *module;  /* a reference (core/module.h), released with the plan */
    char function[256]; /* the symbol: an extern "C" name or a mangled one */
    int nargs;
    gr_user_arg *args;
    int pdl;             /* "pdl": true: waits for its predecessor (griddepcontrol.wait) */
    unsigned cluster[3]; /* "cluster": thread-block cluster dims; 0 0 0 when not given */
    int bytes_given;     /* 1: "bytes.read" given, 2: "bytes.written" given (else buffer sizes) */
} gr_user_op;

/* Bytes of one argument type ("i32": 4, a buffer pointer: 8) and its JSON name. */
size_t gr_arg_size(gr_arg_type t);
const char *gr_arg_type_name(gr_arg_type t);

typedef struct gr_op {
    int index;
    gr_op_kind kind;
    char name[GR_NAME_MAX];
    char path[GR_PATH_MAX];
    const gr_kernel_def *kernel; /* GR_OP_KERNEL only */
    int ninputs, noutputs;
    int inputs[GR_MAX_INPUTS];
    int outputs[GR_MAX_OUTPUTS];
    int nattrs;
    gr_attr_val attrs[GR_MAX_ATTRS];
    int stream;       /* stream the op is enqueued on (index into plan->streams) */
    int other_stream; /* FORK: the stream forked off; JOIN: the stream joined back */
    int event;        /* FORK/JOIN: index of the event it records/waits */
    /* filled by the kernel's check() */
    unsigned grid[3], block[3];
    size_t smem;
    int64_t ip[12];   /* integer launch params the check derived (sizes, strides) */
    double fp[4];     /* float launch params (scales) */
    double bytes_read, bytes_written, flops;
    int launches;     /* kernels this op enqueues; -1 when a library decides */
    size_t scratch;   /* device bytes the op needs while it runs and not after (check() sets it;
                         the launch gets them as ctx->scratch): ops on one stream share them */
    /* which implementation the check chose, for kernels that have several (e.g. linear_act's
     * "wg w64 tf32x3"); empty otherwise. Printed by validate and in the plan JSON. */
    char form[40];
    gr_user_op *user; /* user ops ("module"/"function"): kernel is the "user" entry; else NULL */
} gr_op;

/* May this op be launched with PDL (--pdl)? A built-in kernel registered GR_KF_PDL, or a user op
 * that declares "pdl": true (defined in resolve.c, which knows kernel.h's flags). */
int gr_op_pdl_capable(const gr_op *op);

typedef struct gr_target {
    char name[96];
    int sm_count;
    int cc_major, cc_minor;
    size_t l2_bytes;
    int from_device; /* 1 when read off a real device, 0 for the default (H200) */
    char arch[16];   /* user modules' target, "sm_90a" (--arch); "": sm_<cc_major><cc_minor> */
} gr_target;

typedef struct gr_plan {
    char workload[128];
    char variant[64];
    char source[512];  /* workload file */
    char params[1024]; /* "n=4096 act=relu" as resolved */
    gr_target target;
    gr_buffer *bufs;
    int nbufs;
    gr_op *ops;
    int nops;
    char streams[GR_MAX_STREAMS][32];
    int nstreams;
    int nevents;
    /* totals over one step */
    double bytes_read, bytes_written, flops;
    int kernels;         /* sum of op launches (library ops counted as 1 each) */
    int library_ops;     /* ops whose launch count a library decides (e.g. cuBLAS) */
    int intermediates;   /* buffers written then read back within the step: HBM round trips */
    double intermediate_bytes; /* bytes of those round trips (write + read) */
    double used_bytes;   /* device memory of the buffers this variant uses */
    /* Verification (docs/verification.md). has_cpu_reference: every kernel op has a CPU reference,
     * so gr_reference_step can run; 0 when a user op is in the plan. reference_variant: the
     * workload's variant marked "reference": true whose eager outputs check this variant ("" when
     * none, and for that variant itself, which sets is_reference_variant). expect_outputs: outputs
     * with an "expect" file. With no CPU reference, no reference variant and no expect file, only
     * graph == eager is checked: gr_plan_checks_text (plan_print.h) says so. */
    int has_cpu_reference;
    char reference_variant[64];
    int is_reference_variant;
    int expect_outputs;
    int user_ops; /* ops of user modules */
} gr_plan;

void gr_plan_destroy(gr_plan *plan);
/* The largest op->scratch of a plan: the scratch arena's slice per stream its device state needs
 * (core/device.c allocates it). */
size_t gr_plan_scratch(const gr_plan *plan);
/* After a plan's ops were copied into another plan (memcpy, e.g. kernels/breakers.c's fixed
 * plan), gives the copy its own user-op data (op->user, a module reference) so that each plan can
 * be destroyed. On failure the copy's user ops are dropped (op->user NULL): destroy it. */
gr_status gr_plan_own_user_ops(gr_plan *copy, gr_error *err);

/* Attribute access for kernel code: the resolved value, or the spec default. */
const gr_attr_val *gr_op_attr(const gr_op *op, const char *name);
double gr_op_attr_num(const gr_op *op, const char *name, double dflt);
const char *gr_op_attr_str(const gr_op *op, const char *name, const char *dflt);

gr_target gr_target_default(void);
/* Make the target the architecture `arch` names ("sm_80", "sm_90a", "sm_100f", or a compute
 * capability "8.6"): what `graphrun validate --arch` compiles user modules for and checks limits
 * against without a GPU. Errors are GR_ERR_USAGE at "--arch". */
gr_status gr_target_set_arch(gr_target *t, const char *arch, gr_error *err);
/* Bytes of the buffers the variant only reads (weights, embedding tables, inputs). */
double gr_plan_input_bytes(const gr_plan *plan);

#ifdef __cplusplus
}
#endif
#endif
