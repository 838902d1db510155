/* Tensor-parallel kernel family: the NCCL binding (loaded with dlopen, see tp.h for why and where
 * it looks) and the allreduce_sum op: its schema, check, byte accounting, launch (one
 * ncclAllReduce on the op's stream, so eager runs and stream capture put the collective in the
 * same place) and its CPU reference for one rank (a copy; several ranks are summed by the
 * tensor-parallel reference in replay/tp_shard.c, which sees every rank's buffers).
 * Napkin math: a ring all-reduce of n bytes moves 2 (P-1)/P n bytes over the links per rank;
 * the decode step's are B x d x 2 bytes (4 KB at B = 1), so they are latency-bound (~10 us). */
#define _GNU_SOURCE /* dladdr */
#include "kernels/tp.h"

#include <dlfcn.h>
#include <glob.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "kernels/common.h"

#ifndef GR_HAVE_NCCL
#define GR_HAVE_NCCL 1
#endif
#if GR_HAVE_NCCL
#include <nccl.h>
#endif

#ifndef GR_NCCL_BUILD_DIR
#define GR_NCCL_BUILD_DIR "/usr/local/cuda/lib64"
#endif

int gr_nccl_built(void) {
    return GR_HAVE_NCCL;
}

static gr_status revoked_error(const char *what, gr_error *err) {
    return gr_error_set(err, GR_ERR_CUDA, NULL,
                        "%s: the NCCL communicator was aborted after another rank failed (its "
                        "error comes first)",
                        what);
}

#if GR_HAVE_NCCL
/* ---------- the NCCL binding ---------- */

typedef struct nccl_api {
    ncclResult_t (*GetVersion)(int *);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *);
    ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*CommDestroy)(ncclComm_t);
    ncclResult_t (*CommAbort)(ncclComm_t);
    ncclResult_t (*CommCount)(const ncclComm_t, int *);
    ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t *);
    ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                              cudaStream_t);
    const char *(*GetErrorString)(ncclResult_t);
    const char *(*GetLastError)(ncclComm_t);
} nccl_api;

struct gr_nccl_comm {
    ncclComm_t nccl;
    atomic_int revoked;
};

static nccl_api api;
static void *lib;
static char lib_path[1024];
static char lib_version[32];
static gr_error load_err; /* the outcome of the one load attempt, replayed to later callers */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static const char *result_name(int rc) {
    switch ((ncclResult_t)rc) {
    case ncclSuccess:
        return "ncclSuccess";
    case ncclUnhandledCudaError:
        return "ncclUnhandledCudaError";
    case ncclSystemError:
        return "ncclSystemError";
    case ncclInternalError:
        return "ncclInternalError";
    case ncclInvalidArgument:
        return "ncclInvalidArgument";
    case ncclInvalidUsage:
        return "ncclInvalidUsage";
    case ncclRemoteError:
        return "ncclRemoteError";
    case ncclInProgress:
        return "ncclInProgress";
    default:
        return "ncclResult_?";
    }
}

/* A failed NCCL call as a gr_error: the call's text, the result's name and string, NCCL's last
 * error message (it may belong to an earlier asynchronous failure, so it is labelled), and
 * where in graphrun. */
static gr_status nccl_fail(int rc, ncclComm_t comm, const char *expr, const char *file, int line,
                           gr_error *err) {
    const char *str = api.GetErrorString ? api.GetErrorString((ncclResult_t)rc) : "";
    const char *last = api.GetLastError ? api.GetLastError(comm) : NULL;
    char call[256]; /* "api.AllReduce(...)" as NCCL names it: "ncclAllReduce(...)" */
    snprintf(call, sizeof(call), "%s%s", strncmp(expr, "api.", 4) ? "" : "nccl",
             strncmp(expr, "api.", 4) ? expr : expr + 4);
    expr = call;
    if (err && err->count == 0) {
        snprintf(err->api, sizeof(err->api), "%.*s", (int)(sizeof(err->api) - 1), expr);
        snprintf(err->api_error, sizeof(err->api_error), "%s", result_name(rc));
    }
    const char *base = strrchr(file, '/');
    return gr_error_set(
        err, GR_ERR_CUDA, NULL, "%s failed: %s (%s)%s%s%s [%s:%d]", expr, result_name(rc),
        str ? str : "", last && last[0] ? "; NCCL's last error: \"" : "",
        last && last[0] ? last : "", last && last[0] ? "\"" : "", base ? base + 1 : file, line);
}

#define GR_NCCL(call, comm, err)                                                                   \
    do {                                                                                           \
        ncclResult_t gr_nrc_ = (call);                                                             \
        if (gr_nrc_ != ncclSuccess && gr_nrc_ != ncclInProgress)                                   \
            return nccl_fail((int)gr_nrc_, (comm), #call, __FILE__, __LINE__, (err));              \
    } while (0)

/* Every symbol graphrun calls, or NULL naming the first one missing. */
static const char *bind_symbols(void *h, nccl_api *a) {
    struct {
        const char *name;
        void **slot;
    } syms[] = {
        {"ncclGetVersion", (void **)&a->GetVersion},
        {"ncclGetUniqueId", (void **)&a->GetUniqueId},
        {"ncclCommInitRank", (void **)&a->CommInitRank},
        {"ncclCommDestroy", (void **)&a->CommDestroy},
        {"ncclCommAbort", (void **)&a->CommAbort},
        {"ncclCommCount", (void **)&a->CommCount},
        {"ncclCommGetAsyncError", (void **)&a->CommGetAsyncError},
        {"ncclAllReduce", (void **)&a->AllReduce},
        {"ncclGetErrorString", (void **)&a->GetErrorString},
        {"ncclGetLastError", (void **)&a->GetLastError},
    };
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        void *p = dlsym(h, syms[i].name);
        if (!p) return syms[i].name;
        memcpy(syms[i].slot, &p, sizeof(p)); /* object -> function pointer, as POSIX allows */
    }
    return NULL;
}

/* Try one candidate; on failure append why to `tried`. */
static int try_open(const char *path, char *tried, size_t size) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    size_t o = strlen(tried);
    if (!h) {
        const char *why = dlerror();
        snprintf(tried + o, size - o, "\n  %s: %s", path, why ? why : "not loadable");
        return 0;
    }
    nccl_api a;
    memset(&a, 0, sizeof(a));
    const char *missing = bind_symbols(h, &a);
    if (missing) {
        snprintf(tried + o, size - o, "\n  %s: no symbol %s (NCCL older than 2.13?)", path,
                 missing);
        dlclose(h);
        return 0;
    }
    api = a;
    lib = h;
    Dl_info info;
    if (dladdr((const void *)dlsym(h, "ncclAllReduce"), &info) && info.dli_fname)
        snprintf(lib_path, sizeof(lib_path), "%s", info.dli_fname);
    else
        snprintf(lib_path, sizeof(lib_path), "%s", path);
    return 1;
}

static void load_nccl(void) {
    /* Before NCCL reads its environment (at its first call): NVLink SHARP multicast stays off,
     * whatever the caller's environment says (KINDS.md: it can take the shared GPUs down). */
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    char tried[4096] = "";
    const char *forced = getenv("GR_NCCL_LIBRARY");
    int ok = 0;
    if (forced && forced[0]) {
        ok = try_open(forced, tried, sizeof(tried));
    } else {
        ok = try_open("libnccl.so.2", tried, sizeof(tried)) ||
             try_open(GR_NCCL_BUILD_DIR "/libnccl.so.2", tried, sizeof(tried));
        /* the nvidia-nccl wheels: nvidia/nccl/lib, or nvidia/cu13/lib for CUDA 13's layout */
        const char *patterns[] = {
            "/opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib/libnccl.so.2",
            "/usr/local/lib/python3*/dist-packages/nvidia/*/lib/libnccl.so.2",
            "/usr/local/lib/python3*/site-packages/nvidia/*/lib/libnccl.so.2",
            "/usr/lib/python3/dist-packages/nvidia/*/lib/libnccl.so.2"};
        for (size_t p = 0; !ok && p < sizeof(patterns) / sizeof(patterns[0]); p++) {
            glob_t g;
            if (glob(patterns[p], 0, NULL, &g) == 0)
                for (size_t i = 0; !ok && i < g.gl_pathc; i++)
                    ok = try_open(g.gl_pathv[i], tried, sizeof(tried));
            else {
                size_t o = strlen(tried);
                snprintf(tried + o, sizeof(tried) - o, "\n  %s: no match", patterns[p]);
            }
            globfree(&g);
        }
    }
    if (!ok) {
        gr_error_set(&load_err, GR_ERR_NODEV, "NCCL",
                     "cannot load libnccl.so.2, which graphrun tp needs for its all-reduce. "
                     "Tried:%s\nInstall NCCL (it comes with the CUDA toolkit's NCCL package or "
                     "the nvidia-nccl Python wheel) or point GR_NCCL_LIBRARY at the library",
                     tried);
        return;
    }
    int v = 0;
    ncclResult_t rc = api.GetVersion(&v);
    if (rc != ncclSuccess) {
        nccl_fail((int)rc, NULL, "ncclGetVersion(&v)", __FILE__, __LINE__, &load_err);
        return;
    }
    /* 2.8 and older: 1000 major + 100 minor + patch; later 10000 major + 100 minor + patch */
    if (v >= 10000)
        snprintf(lib_version, sizeof(lib_version), "%d.%d.%d", v / 10000, (v % 10000) / 100,
                 v % 100);
    else
        snprintf(lib_version, sizeof(lib_version), "%d.%d.%d", v / 1000, (v % 1000) / 100, v % 100);
}

gr_status gr_nccl_load(gr_error *err) {
    pthread_once(&load_once, load_nccl);
    if (load_err.count == 0) return GR_OK;
    if (err) {
        gr_error_set(err, load_err.code, NULL, "%s", load_err.msg);
        if (!err->api[0]) {
            snprintf(err->api, sizeof(err->api), "%s", load_err.api);
            snprintf(err->api_error, sizeof(err->api_error), "%s", load_err.api_error);
        }
    }
    return load_err.code;
}

const char *gr_nccl_path(void) {
    return lib_path;
}

const char *gr_nccl_version(void) {
    return lib_version;
}

static gr_status need_loaded(gr_error *err) {
    if (lib) return GR_OK;
    return gr_error_set(err, GR_ERR_INTERNAL, "NCCL", "an NCCL call before gr_nccl_load");
}

gr_status gr_nccl_unique_id(gr_nccl_id *id, gr_error *err) {
    GR_TRY(need_loaded(err));
    ncclUniqueId u;
    GR_NCCL(api.GetUniqueId(&u), NULL, err);
    _Static_assert(sizeof(u) == sizeof(id->bytes), "ncclUniqueId is 128 bytes");
    memcpy(id->bytes, &u, sizeof(u));
    return GR_OK;
}

gr_status gr_nccl_comm_init(gr_nccl_comm **comm, int nranks, const gr_nccl_id *id, int rank,
                            gr_error *err) {
    *comm = NULL;
    GR_TRY(need_loaded(err));
    gr_nccl_comm *h = calloc(1, sizeof(*h));
    if (!h) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    atomic_init(&h->revoked, 0);
    ncclUniqueId u;
    memcpy(&u, id->bytes, sizeof(u));
    ncclResult_t rc = api.CommInitRank(&h->nccl, nranks, u, rank);
    if (rc != ncclSuccess) {
        free(h);
        return nccl_fail((int)rc, NULL, "ncclCommInitRank(&comm, nranks, id, rank)", __FILE__,
                         __LINE__, err);
    }
    *comm = h;
    return GR_OK;
}

int gr_nccl_comm_revoked(const gr_nccl_comm *comm) {
    return comm && atomic_load(&((gr_nccl_comm *)comm)->revoked);
}

gr_status gr_nccl_comm_destroy(gr_nccl_comm *comm, gr_error *err) {
    if (!comm) return GR_OK;
    if (gr_nccl_comm_revoked(comm)) return revoked_error("ncclCommDestroy", err);
    GR_TRY(need_loaded(err));
    ncclResult_t rc = api.CommDestroy(comm->nccl);
    gr_status st = rc == ncclSuccess
                       ? GR_OK
                       : nccl_fail((int)rc, NULL, "ncclCommDestroy(comm)", __FILE__, __LINE__, err);
    free(comm);
    return st;
}

void gr_nccl_comm_abort(gr_nccl_comm *comm) {
    if (!comm || !lib || atomic_exchange(&comm->revoked, 1)) return;
    api.CommAbort(comm->nccl);
}

void gr_nccl_comm_free(gr_nccl_comm *comm) {
    free(comm);
}

gr_status gr_nccl_comm_check(gr_nccl_comm *comm, const char *where, gr_error *err) {
    if (!comm) return GR_OK;
    if (gr_nccl_comm_revoked(comm)) return revoked_error(where ? where : "NCCL", err);
    GR_TRY(need_loaded(err));
    ncclResult_t async = ncclSuccess;
    GR_NCCL(api.CommGetAsyncError(comm->nccl, &async), comm->nccl, err);
    if (async == ncclSuccess || async == ncclInProgress) return GR_OK;
    char what[160];
    snprintf(what, sizeof(what), "asynchronous NCCL error %s", where ? where : "");
    return nccl_fail((int)async, comm->nccl, what, __FILE__, __LINE__, err);
}

#else /* !GR_HAVE_NCCL: nccl.h was missing at build time; every NCCL entry point says so */

struct gr_nccl_comm {
    atomic_int revoked;
};

static gr_status not_built(gr_error *err) {
    return gr_error_set(err, GR_ERR_USAGE, "NCCL", "%s", GR_NCCL_NOT_BUILT);
}

gr_status gr_nccl_load(gr_error *err) {
    return err ? not_built(err) : GR_ERR_USAGE;
}
const char *gr_nccl_path(void) {
    return "";
}
const char *gr_nccl_version(void) {
    return "";
}
gr_status gr_nccl_unique_id(gr_nccl_id *id, gr_error *err) {
    return not_built(err);
}
gr_status gr_nccl_comm_init(gr_nccl_comm **comm, int nranks, const gr_nccl_id *id, int rank,
                            gr_error *err) {
    *comm = NULL;
    return not_built(err);
}
int gr_nccl_comm_revoked(const gr_nccl_comm *comm) {
    return comm && atomic_load(&((gr_nccl_comm *)comm)->revoked);
}
gr_status gr_nccl_comm_destroy(gr_nccl_comm *comm, gr_error *err) {
    free(comm);
    return GR_OK;
}
void gr_nccl_comm_abort(gr_nccl_comm *comm) {
    if (comm) atomic_store(&comm->revoked, 1);
}
void gr_nccl_comm_free(gr_nccl_comm *comm) {
    free(comm);
}
gr_status gr_nccl_comm_check(gr_nccl_comm *comm, const char *where, gr_error *err) {
    return GR_OK;
}
#endif

/* ---------- allreduce_sum ---------- */

static const gr_dtype ar_dtypes[] = {GR_FP32, GR_BF16, GR_FP16, GR_INT32, GR_DTYPE_INVALID};

#if GR_HAVE_NCCL
static ncclDataType_t nccl_type(gr_dtype t) {
    switch (t) {
    case GR_BF16:
        return ncclBfloat16;
    case GR_FP16:
        return ncclFloat16;
    case GR_INT32:
        return ncclInt32;
    default:
        return ncclFloat32;
    }
}
#endif

/* allreduce_sum: inputs src, outputs dst (same dtype and element count; dst may be src). */
static gr_status check_allreduce(gr_op *op, const gr_plan *plan, gr_error *err) {
    const gr_buffer *src = gr_in(op, plan, 0), *dst = gr_out(op, plan, 0);
    gr_status st = gr_check_dtype(op, src, "inputs[0] (src)", ar_dtypes, err);
    if (st != GR_OK) return st;
    if (dst->dtype != src->dtype)
        st = gr_error_set(err, GR_ERR_INPUT, op->path,
                          "kernel \"%s\": dst \"%s\" is %s but src \"%s\" is %s; an all-reduce "
                          "keeps the dtype (give dst the dtype of src)",
                          op->kernel->name, dst->name, gr_dtype_name(dst->dtype), src->name,
                          gr_dtype_name(src->dtype));
    if (dst->numel != src->numel) {
        char s1[96], s2[96];
        gr_shape_str(dst, s1, sizeof(s1));
        gr_shape_str(src, s2, sizeof(s2));
        st = gr_error_set(err, GR_ERR_INPUT, op->path,
                          "kernel \"%s\": dst \"%s\" %s has %lld elements but src \"%s\" %s has "
                          "%lld; they must match",
                          op->kernel->name, dst->name, s1, (long long)dst->numel, src->name, s2,
                          (long long)src->numel);
    }
    double ranks = gr_op_attr_num(op, "ranks", 0);
    if (ranks < 1 || ranks > 4096)
        st = gr_error_set(err, GR_ERR_INPUT, op->path,
                          "kernel \"%s\": ranks = %g; it is the number of ranks the all-reduce "
                          "spans (1 to 4096), e.g. \"P\"",
                          op->kernel->name, ranks);
    if (st != GR_OK) return st;
    op->ip[GR_TP_AR_COUNT] = src->numel;
    op->ip[GR_TP_AR_DTYPE] = src->dtype;
    op->ip[GR_TP_AR_RANKS] = (int64_t)ranks;
    op->grid[0] = op->grid[1] = op->grid[2] = 0; /* NCCL picks its own launch */
    op->block[0] = op->block[1] = op->block[2] = 0;
    op->smem = 0;
    op->bytes_read = gr_bytes_in(op, plan);
    op->bytes_written = gr_bytes_out(op, plan);
    op->flops = (double)src->numel * (ranks - 1);
    op->launches = 1; /* one NCCL launch: a kernel across ranks, a device copy for one rank */
    return GR_OK;
}

static gr_status launch_allreduce(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    gr_nccl_comm *h = ctx->comm;
    if (!h)
        return gr_error_set(err, GR_ERR_USAGE, op->path,
                            "kernel \"%s\" needs an NCCL communicator, which `graphrun run` does "
                            "not make: run this workload with `graphrun tp` "
                            "(docs/tensor_parallel.md)",
                            op->kernel->name);
    if (gr_nccl_comm_revoked(h)) return revoked_error(op->path, err);
#if !GR_HAVE_NCCL
    return gr_error_set(err, GR_ERR_USAGE, op->path, "%s", GR_NCCL_NOT_BUILT);
#else
    GR_TRY(need_loaded(err));
    ncclComm_t comm = h->nccl;
    int count = 0;
    GR_NCCL(api.CommCount(comm, &count), comm, err);
    if (count != op->ip[GR_TP_AR_RANKS])
        return gr_error_set(err, GR_ERR_INTERNAL, op->path,
                            "kernel \"%s\": the op spans ranks = %lld but its communicator has %d "
                            "ranks (the plan was resolved for another P)",
                            op->kernel->name, (long long)op->ip[GR_TP_AR_RANKS], count);
    GR_NCCL(api.AllReduce(ctx->dptr[op->inputs[0]], ctx->dptr[op->outputs[0]],
                          (size_t)op->ip[GR_TP_AR_COUNT],
                          nccl_type((gr_dtype)op->ip[GR_TP_AR_DTYPE]), ncclSum, comm,
                          (cudaStream_t)ctx->stream),
            comm, err);
    return GR_OK;
#endif
}

/* One rank: the sum over ranks is the buffer itself. More: only the tensor-parallel reference
 * (replay/tp_shard.c) sees every rank's src; this one must not silently return one rank's. */
static gr_status ref_allreduce(const gr_op *op, const gr_plan *plan, void *const *host,
                               gr_error *err) {
    if (op->ip[GR_TP_AR_RANKS] != 1)
        return gr_error_set(err, GR_ERR_USAGE, op->path,
                            "kernel \"%s\": the CPU reference of a %lld-rank all-reduce needs "
                            "every rank's buffers; run the workload with `graphrun tp`, whose "
                            "reference sums them (docs/tensor_parallel.md)",
                            op->kernel->name, (long long)op->ip[GR_TP_AR_RANKS]);
    const gr_buffer *src = gr_in(op, plan, 0);
    memmove(host[op->outputs[0]], host[op->inputs[0]], src->bytes);
    return GR_OK;
}

static const gr_attr_spec allreduce_attrs[] = {
    {"ranks", GR_ATTR_INT, 1, 1.0, NULL, NULL,
     "ranks of the communicator the op runs on (the tensor-parallel degree P)"}};

static const gr_kernel_def k_allreduce_sum = {
    "allreduce_sum",
    "dst = sum over the ranks of a communicator of each rank's src (ncclAllReduce, ncclSum), "
    "enqueued on the op's stream so that it is captured into the graph; needs `graphrun tp`",
    "src (fp32, bf16, fp16 or int32)",
    "dst (src's dtype and element count; may be src)",
    1,
    1,
    1,
    1,
    allreduce_attrs,
    1,
    GR_KF_INPLACE,
    check_allreduce,
    launch_allreduce,
    ref_allreduce,
    NULL,
    NULL};

const gr_kernel_def *const gr_tp_kernels[] = {&k_allreduce_sum, NULL};

int gr_tp_is_collective(const gr_op *op) {
    return op && op->kind == GR_OP_KERNEL && op->kernel == &k_allreduce_sum;
}
