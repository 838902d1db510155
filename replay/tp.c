/* `graphrun tp`: the decode step split over P GPUs. The main thread loads the plans, runs the
 * unsharded step on one GPU (its host copy of the weights is what the ranks' shards are cut
 * from), computes the CPU references, then starts one thread per rank. Rank threads go through
 * the same phases separated by barriers (set up, eager step, graph, checks, timings), so that
 * every collective has all its ranks and a failure on one rank stops the others at the next
 * barrier. A rank blocked in a collective whose peer failed is released by ncclCommAbort from
 * the main thread after a grace period. Report: text and JSON (schema_version 1). */
#include "replay/tp.h"

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cuda_check.h"
#include "core/hoststate.h"
#include "core/plan_print.h"
#include "core/timer.h"
#include "kernels/tp.h"
#include "replay/report.h"
#include "replay/session.h"

#define ABORT_GRACE_US 15e6 /* a rank failed: how long the others get to reach a barrier */

void gr_tp_opts_default(gr_tp_opts *o) {
    memset(o, 0, sizeof(*o));
    gr_run_opts_default(&o->run);
    o->run.mode = GR_CAPTURE_THREAD_LOCAL;
    o->run.hooks = NULL;
    o->comm_share = 1;
    o->single_timing = 1;
}

const char *gr_tp_mode_name(gr_tp_mode m) {
    switch (m) {
    case GR_TP_EAGER:
        return "eager";
    case GR_TP_GRAPH:
        return "graph";
    case GR_TP_EAGER_COMPUTE:
        return "eager, no all-reduce";
    case GR_TP_GRAPH_COMPUTE:
        return "graph, no all-reduce";
    case GR_TP_EAGER_COMM:
        return "eager, all-reduces only";
    case GR_TP_GRAPH_COMM:
        return "graph, all-reduces only";
    default:
        return "?";
    }
}

static int device_of(const gr_tp_opts *o, int p) {
    return o->ndevices > 0 ? o->devices[p] : p;
}


static gr_status download_copy(const gr_devstate *dev, int b, void **out, gr_error *err) {
    const gr_buffer *buf = &dev->plan->bufs[b];
    *out = malloc(buf->bytes ? buf->bytes : 1);
    if (!*out) return gr_error_set(err, GR_ERR_NOMEM, buf->path, "out of host memory");
    return gr_devstate_download(dev, b, *out, err);
}

static void *dup_bytes(const void *p, size_t n) {
    void *q = malloc(n ? n : 1);
    if (q) memcpy(q, p, n);
    return q;
}

static gr_graph stats_only(const gr_graph *g) {
    gr_graph s = *g;
    s.graph = s.exec = NULL;
    return s;
}

/* ---------- checks ---------- */

static void add(gr_tp_result *x, gr_check c) {
    gr_checks_add(&x->checks, &c);
}

/* Rank 0's x, act gathered over ranks, tdown summed: the unsharded layout of each. */
static gr_status reassemble(const gr_tp_plans *tp, const void *const *x, const void *const *act,
                            const void *const *tdown, void **ox, void **oact, void **otd,
                            gr_error *err) {
    const gr_plan *r0 = tp->rank[0];
    int xb = gr_tp_buffer(r0, "x"), ab = gr_tp_buffer(r0, "act"), tb = gr_tp_buffer(r0, "tdown");
    *ox = *oact = *otd = NULL;
    if (tp->P < 1) return gr_error_set(err, GR_ERR_INTERNAL, NULL, "no ranks to reassemble");
    if (xb < 0 || ab < 0 || tb < 0)
        return gr_error_set(err, GR_ERR_INPUT, r0->source,
                            "a rank plan needs buffers x, act and tdown (they are checked)");
    *ox = dup_bytes(x[0], r0->bufs[xb].bytes);
    *oact = malloc(r0->bufs[ab].bytes * (size_t)tp->P);
    *otd = malloc(r0->bufs[tb].bytes);
    if (!*ox || !*oact || !*otd) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    void *a[GR_TP_MAX_RANKS], *t[GR_TP_MAX_RANKS];
    for (int p = 0; p < tp->P; p++) {
        a[p] = (void *)act[p];
        t[p] = (void *)tdown[p];
    }
    GR_TRY(gr_tp_gather(tp, "act", GR_TP_COLS, 0, a, *oact, err));
    return gr_tp_gather(tp, "tdown", GR_TP_REPL, 1, t, *otd, err);
}

void gr_tp_refs_free_sharded(gr_tp_refs *refs) {
    free(refs->sref_x);
    free(refs->sref_act);
    free(refs->sref_tdown);
    refs->sref_x = refs->sref_act = refs->sref_tdown = NULL;
}

gr_status gr_tp_sharded_reference(const gr_tp_plans *tp, int steps, gr_tp_refs *refs,
                                  gr_tp_result *x, gr_error *err) {
    gr_tp_refs_free_sharded(refs);
    gr_tp_ref *ref = NULL;
    double t0 = gr_now_us();
    gr_status st = gr_tp_ref_create(tp, &ref, err);
    for (int k = 0; k < steps && st == GR_OK; k++)
        st = gr_tp_ref_step(ref, err);
    x->sharded_reference_ms = (gr_now_us() - t0) / 1e3;
    const void *xs[GR_TP_MAX_RANKS], *as[GR_TP_MAX_RANKS], *ts[GR_TP_MAX_RANKS];
    for (int p = 0; st == GR_OK && p < tp->P; p++) {
        const gr_plan *rp = tp->rank[p];
        xs[p] = ref->hptr[p][gr_tp_buffer(rp, "x")];
        as[p] = ref->hptr[p][gr_tp_buffer(rp, "act")];
        ts[p] = ref->hptr[p][gr_tp_buffer(rp, "tdown")];
    }
    if (st == GR_OK)
        st = reassemble(tp, xs, as, ts, &refs->sref_x, &refs->sref_act, &refs->sref_tdown, err);
    gr_tp_ref_destroy(ref);
    if (st != GR_OK) {
        gr_tp_refs_free_sharded(refs);
        return st;
    }
    if (refs->ref_x) { /* the sharded computation, reassembled, against the unsharded one */
        const gr_plan *r0 = tp->rank[0];
        const gr_buffer *bx = &r0->bufs[gr_tp_buffer(r0, "x")],
                        *ba = &r0->bufs[gr_tp_buffer(r0, "act")],
                        *bt = &r0->bufs[gr_tp_buffer(r0, "tdown")];
        add(x, gr_compare("x", "shard ref vs ref", refs->sref_x, refs->ref_x, bx->dtype, bx->numel,
                          refs->rtol));
        add(x, gr_compare("act (gathered)", "shard ref vs ref", refs->sref_act, refs->ref_act,
                          ba->dtype, ba->numel * tp->P, refs->rtol));
        add(x, gr_compare("tdown (summed)", "shard ref vs ref", refs->sref_tdown, refs->ref_tdown,
                          GR_FP32, bt->numel, refs->rtol));
    }
    return GR_OK;
}

gr_status gr_tp_check_outputs(const gr_tp_plans *tp, const gr_tp_outputs *out,
                              const gr_tp_refs *refs, gr_tp_result *x, gr_error *err) {
    const gr_plan *r0 = tp->rank[0];
    int xb = gr_tp_buffer(r0, "x");
    if (xb < 0) return gr_error_set(err, GR_ERR_INPUT, r0->source, "a rank plan needs a buffer x");
    const gr_buffer *xbuf = &r0->bufs[xb];
    gr_dtype t = xbuf->dtype;
    int64_t n = xbuf->numel;
    double tol = refs->rtol;
    char name[96];
    for (int p = 0; p < tp->P; p++) {
        snprintf(name, sizeof(name), "x (rank %d)", p);
        add(x, gr_compare(name, "graph vs eager", out->x_graph[p], out->x_eager[p], t, n, tol));
        if (p > 0)
            add(x,
                gr_compare(name, "eager vs rank 0", out->x_eager[p], out->x_eager[0], t, n, tol));
    }
    add(x, gr_compare("x", "eager vs 1 GPU", out->x_eager[0], refs->single_x, t, n, tol));
    if (refs->ref_x)
        add(x, gr_compare("x", "eager vs ref", out->x_eager[0], refs->ref_x, t, n, tol));
    if (refs->sref_x) {
        add(x, gr_compare("x", "eager vs shard ref", out->x_eager[0], refs->sref_x, t, n, tol));
        add(x, gr_compare("x", "graph vs shard ref", out->x_graph[0], refs->sref_x, t, n, tol));
        /* the last layer's act and A_down act, reassembled from the ranks: a shard computed
         * from the wrong rows or columns shows here by name */
        void *ox = NULL, *oact = NULL, *otd = NULL;
        gr_status st = reassemble(tp, out->x_eager, out->act, out->tdown, &ox, &oact, &otd, err);
        if (st == GR_OK) {
            const gr_buffer *ab = &r0->bufs[gr_tp_buffer(r0, "act")],
                            *tb = &r0->bufs[gr_tp_buffer(r0, "tdown")];
            add(x, gr_compare("act (gathered)", "eager vs shard ref", oact, refs->sref_act,
                              ab->dtype, ab->numel * tp->P, tol));
            add(x, gr_compare("tdown (summed)", "eager vs shard ref", otd, refs->sref_tdown,
                              GR_FP32, tb->numel, tol));
        }
        free(ox), free(oact), free(otd);
        GR_TRY(st);
    }
    x->verified = x->checks.verified;
    return GR_OK;
}

/* ---------- rank threads ---------- */

typedef struct tp_rank tp_rank;

typedef struct tp_shared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n, arrived, gen;
    int started;       /* the start gate: every rank thread exists (or failed to) */
    int failed;        /* a rank failed: the others skip to teardown at the next barrier */
    int verify_failed; /* the checks failed: no timing */
    int first_failed;  /* the rank that failed first: its error is the cause */
    int done, aborted;
    double failed_at;
    /* each rank's communicator while the rank may still use it; the main thread takes these to
     * abort them, a rank takes its own back to destroy it (under mu, so never both) */
    gr_nccl_comm *comms[GR_TP_MAX_RANKS];
    gr_nccl_id id;
    const gr_tp_opts *o;
    const gr_tp_plans *tp;
    tp_rank *ranks;
    const gr_tp_refs *refs;
    gr_tp_result *res;
} tp_shared;

struct tp_rank {
    tp_shared *sh;
    int rank, device;
    gr_plan *plan;
    gr_pipe pipe;       /* the rank's stage list over its session (replay/pipeline.h) */
    gr_variant_run v;   /* what the pipe's built-in stages record */
    gr_devstate *dev;   /* the session's, once made */
    gr_nccl_comm *comm; /* freed by the rank (destroy) or, once aborted, by the main thread */
    gr_graph g[2];      /* the step without all-reduces, the all-reduces alone (the step's own
                           graph is the session's) */
    int xb, actb, tdb;
    void *x_eager, *x_graph, *act_eager, *tdown_eager;
    int barriers;       /* barriers passed in the stage list */
    gr_status status;
    gr_error err;
    gr_tp_rank_result *out;
};

static tp_rank *rank_of(gr_pipe *p) {
    return (tp_rank *)(void *)((char *)p - offsetof(tp_rank, pipe));
}

/* Returns 1 when the ranks may go on: nobody failed and the checks passed. */
static int barrier(tp_shared *sh) {
    pthread_mutex_lock(&sh->mu);
    int gen = sh->gen;
    if (++sh->arrived == sh->n) {
        sh->arrived = 0;
        sh->gen++;
        pthread_cond_broadcast(&sh->cv);
    } else {
        while (gen == sh->gen)
            pthread_cond_wait(&sh->cv, &sh->mu);
    }
    int go = !sh->failed && !sh->verify_failed;
    pthread_mutex_unlock(&sh->mu);
    return go;
}

static void rank_fail(tp_rank *R, gr_status st) {
    tp_shared *sh = R->sh;
    R->status = st;
    pthread_mutex_lock(&sh->mu);
    if (!sh->failed) {
        sh->failed = 1;
        sh->first_failed = R->rank;
        sh->failed_at = gr_now_us();
    }
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
}

/* The plan's ops with (want_coll = 1) or without (0) its collectives, as ranges through the
 * executor: the one launch path, minus some ops. */
static gr_status enqueue_filtered(tp_rank *R, int want_coll, gr_error *err) {
    const gr_plan *p = R->plan;
    int i = 0;
    while (i < p->nops) {
        if (gr_tp_is_collective(&p->ops[i]) != want_coll) {
            i++;
            continue;
        }
        int j = i + 1;
        while (j < p->nops && gr_tp_is_collective(&p->ops[j]) == want_coll)
            j++;
        GR_TRY(gr_exec_range(p, R->dev, i, j, NULL, err));
        i = j;
    }
    return GR_OK;
}

static gr_status enqueue_compute(void *user, gr_error *err) {
    return enqueue_filtered(user, 0, err);
}

static gr_status enqueue_comm(void *user, gr_error *err) {
    return enqueue_filtered(user, 1, err);
}

typedef struct tp_step {
    tp_rank *R;
    gr_tp_mode m;
} tp_step;

/* The split timings (the step and its graph are the pipe's built-in timing stages). */
static gr_status timed_step(void *user, gr_error *err) {
    tp_step *s = user;
    tp_rank *R = s->R;
    gr_stream_t st = R->dev->streams[0];
    switch (s->m) {
    case GR_TP_EAGER_COMPUTE:
        return enqueue_filtered(R, 0, err);
    case GR_TP_GRAPH_COMPUTE:
        return gr_graph_launch(&R->g[0], st, err);
    case GR_TP_EAGER_COMM:
        return enqueue_filtered(R, 1, err);
    case GR_TP_GRAPH_COMM:
        return gr_graph_launch(&R->g[1], st, err);
    default:
        return gr_error_set(err, GR_ERR_INTERNAL, NULL, "timing mode %d", (int)s->m);
    }
}

static gr_status sync_and_check(tp_rank *R, const char *where, gr_error *err) {
    GR_CUDA(cudaStreamSynchronize((cudaStream_t)R->dev->streams[0]), err);
    return gr_nccl_comm_check(R->comm, where, err);
}

/* ---- the rank's stages ---- */

/* The device, the session (the pipeline's session stage: buffers, op setup, --pdl), the
 * communicator handed to the collectives, the device's bandwidth probe (its HBM floor). */
static gr_status st_setup(gr_pipe *p, gr_error *e) {
    tp_rank *R = rank_of(p);
    const gr_tp_opts *o = R->sh->o;
    gr_tp_rank_result *out = R->out;
    GR_TRY(gr_device_probe(R->device, &out->info, e));
    p->sm_count = out->info.sm_count;
    GR_TRY(gr_stage_session.run(p, e));
    R->dev = p->s->dev;
    R->dev->comm = R->comm;
    out->bytes_per_step = R->plan->bytes_read + R->plan->bytes_written;
    if (o->run.bandwidth) {
        GR_TRY(gr_bandwidth_probe(gr_bandwidth_bytes(out->info.mem_free), GR_BANDWIDTH_REPS,
                                  &out->bw, e));
        out->have_bw = out->bw.read_only.gbps.median > 0;
        out->floor_us = gr_floor_us(R->plan->bytes_read, R->plan->bytes_written, &out->bw);
    }
    return GR_OK;
}

/* `steps` eager steps from the initial state; x, act and tdown kept for rank 0's checks. */
static gr_status st_eager(gr_pipe *p, gr_error *e) {
    tp_rank *R = rank_of(p);
    GR_TRY(gr_devstate_init_buffers(R->dev, e));
    for (int k = 0; k < p->o.steps; k++)
        GR_TRY(gr_exec_step(R->plan, R->dev, NULL, e));
    GR_TRY(sync_and_check(R, "after the eager step", e));
    GR_TRY(download_copy(R->dev, R->xb, &R->x_eager, e));
    GR_TRY(download_copy(R->dev, R->actb, &R->act_eager, e));
    return download_copy(R->dev, R->tdb, &R->tdown_eager, e);
}

/* The captured step (the pipeline's capture stage) replayed `steps` times from the start. */
static gr_status st_replay(gr_pipe *p, gr_error *e) {
    tp_rank *R = rank_of(p);
    R->out->graph = p->v->graph;
    GR_TRY(gr_devstate_init_buffers(R->dev, e));
    for (int k = 0; k < p->o.steps; k++)
        GR_TRY(gr_graph_launch(&p->s->graph, R->dev->streams[0], e));
    GR_TRY(sync_and_check(R, "after the graph replay", e));
    return download_copy(R->dev, R->xb, &R->x_graph, e);
}

/* Rank 0, between barriers (every rank's copies are there): all the checks of this P. */
static gr_status st_verify(gr_pipe *p, gr_error *e) {
    tp_rank *R = rank_of(p);
    tp_shared *sh = R->sh;
    if (R->rank != 0) return GR_OK;
    gr_tp_outputs out;
    memset(&out, 0, sizeof(out));
    for (int q = 0; q < sh->n; q++) {
        out.x_eager[q] = sh->ranks[q].x_eager;
        out.x_graph[q] = sh->ranks[q].x_graph;
        out.act[q] = sh->ranks[q].act_eager;
        out.tdown[q] = sh->ranks[q].tdown_eager;
    }
    GR_TRY(gr_tp_check_outputs(sh->tp, &out, sh->refs, sh->res, e));
    if (!sh->res->verified) {
        pthread_mutex_lock(&sh->mu);
        sh->verify_failed = 1;
        pthread_mutex_unlock(&sh->mu);
    }
    return GR_OK;
}

static gr_status st_split(gr_pipe *p, gr_error *e) {
    tp_rank *R = rank_of(p);
    if (!R->sh->o->comm_share) return GR_OK;
    GR_TRY(gr_graph_capture_fn(R->dev, p->o.mode, 1, enqueue_compute, R, &R->g[0], e));
    R->out->graph_compute = stats_only(&R->g[0]);
    GR_TRY(gr_graph_capture_fn(R->dev, p->o.mode, 1, enqueue_comm, R, &R->g[1], e));
    R->out->graph_comm = stats_only(&R->g[1]);
    return GR_OK;
}

/* After each timed batch: a rank failed, so this one stops instead of timing against it. */
static gr_status stop_if_failed(void *user, int done, int total, gr_error *err) {
    tp_shared *sh = ((tp_rank *)user)->sh;
    pthread_mutex_lock(&sh->mu);
    int failed = sh->failed, first = sh->first_failed;
    pthread_mutex_unlock(&sh->mu);
    if (!failed) return GR_OK;
    return gr_error_set(err, GR_ERR_CUDA, NULL,
                        "timing stopped after %d of %d steps: rank %d failed", done, total, first);
}

static gr_status time_split(gr_pipe *p, gr_tp_mode m, gr_error *e) {
    tp_rank *R = rank_of(p);
    if (!R->sh->o->comm_share) return GR_OK;
    gr_time_opts t = gr_run_opts_time(&p->o);
    char label[64];
    snprintf(label, sizeof(label), "P=%d %s", R->sh->n, gr_tp_mode_name(m));
    t.label = label;
    t.on_batch = stop_if_failed;
    t.on_batch_user = R;
    tp_step s = {R, m};
    GR_TRY(gr_time_steps(timed_step, &s, R->dev->streams[0], &t, &R->out->t[m], e));
    R->out->timed[m] = 1;
    return gr_nccl_comm_check(R->comm, "after timing", e);
}

static gr_status st_time_eager_compute(gr_pipe *p, gr_error *e) {
    return time_split(p, GR_TP_EAGER_COMPUTE, e);
}
static gr_status st_time_graph_compute(gr_pipe *p, gr_error *e) {
    return time_split(p, GR_TP_GRAPH_COMPUTE, e);
}
static gr_status st_time_eager_comm(gr_pipe *p, gr_error *e) {
    return time_split(p, GR_TP_EAGER_COMM, e);
}
static gr_status st_time_graph_comm(gr_pipe *p, gr_error *e) {
    return time_split(p, GR_TP_GRAPH_COMM, e);
}

static const gr_stage tp_setup = {"tp_setup", st_setup};
static const gr_stage tp_eager = {"tp_eager", st_eager};
static const gr_stage tp_replay = {"tp_replay", st_replay};
static const gr_stage tp_verify = {"tp_verify", st_verify};
static const gr_stage tp_split = {"tp_split", st_split};
static const gr_stage tp_time_ec = {"time_eager_compute", st_time_eager_compute};
static const gr_stage tp_time_gc = {"time_graph_compute", st_time_graph_compute};
static const gr_stage tp_time_em = {"time_eager_comm", st_time_eager_comm};
static const gr_stage tp_time_gm = {"time_graph_comm", st_time_graph_comm};

/* A rank: the pipeline's capture and timing stages between its own, a barrier before each. */
static const gr_stage *const rank_stages[] = {
    &tp_setup,  &tp_eager,  &gr_stage_capture, &tp_replay,  &tp_verify,  &tp_split,
    &gr_stage_time_eager, &gr_stage_time_graph, &tp_time_ec, &tp_time_gc, &tp_time_em, &tp_time_gm,
};
#define RANK_NSTAGES ((int)(sizeof(rank_stages) / sizeof(rank_stages[0])))

/* Every rank passes the barrier before every stage; a failed rank, or every rank once one failed
 * or the checks failed, skips the stages' work. */
static gr_status rank_before(void *user, gr_pipe *p, const gr_stage *s, int *skip, gr_error *e) {
    (void)p, (void)s, (void)e;
    tp_rank *R = user;
    R->barriers++;
    int go = barrier(R->sh);
    if (!go || R->status != GR_OK) *skip = 1;
    return GR_OK;
}

static gr_status rank_after(void *user, gr_pipe *p, const gr_stage *s, gr_status st, gr_error *e) {
    tp_rank *R = user;
    if (st != GR_OK) {
        rank_fail(R, st);
        return GR_OK;
    }
    gr_tp_mode m = s == &gr_stage_time_eager ? GR_TP_EAGER : GR_TP_GRAPH;
    if (s != &gr_stage_time_eager && s != &gr_stage_time_graph) return GR_OK;
    R->out->t[m] = m == GR_TP_EAGER ? p->v->eager : p->v->graph_t;
    R->out->timed[m] = 1;
    return gr_nccl_comm_check(R->comm, "after timing", e);
}

/* Graphs first (NCCL releases what it kept for captured collectives with them), then the
 * communicator, then the buffers it may have registered, so nothing is freed under NCCL. */
static void teardown(tp_rank *R) {
    tp_shared *sh = R->sh;
    for (int i = 0; i < 2; i++)
        gr_graph_destroy(&R->g[i]);
    if (R->pipe.s) {
        gr_graph_destroy(&R->pipe.s->graph);
        gr_graph_destroy(&R->pipe.s->graph_n);
    }
    cudaError_t rc = cudaDeviceSynchronize();
    if (rc != cudaSuccess && R->status == GR_OK)
        R->status =
            gr_cuda_fail(rc, "cudaDeviceSynchronize (teardown)", __FILE__, __LINE__, &R->err);
    pthread_mutex_lock(&sh->mu);
    gr_nccl_comm *mine = sh->comms[R->rank]; /* NULL: the main thread took it to abort it */
    sh->comms[R->rank] = NULL;
    pthread_mutex_unlock(&sh->mu);
    if (mine) {
        gr_error e;
        gr_error_clear(&e);
        if (gr_nccl_comm_destroy(mine, &e) != GR_OK && R->status == GR_OK) {
            R->err = e;
            R->status = e.code;
        }
        R->comm = NULL;
    }
    gr_pipe_free(&R->pipe);
    gr_variant_run_clear(&R->v);
    R->dev = NULL;
    free(R->x_eager);
    free(R->x_graph);
    free(R->act_eager);
    free(R->tdown_eager);
    R->x_eager = R->x_graph = R->act_eager = R->tdown_eager = NULL;
}

static void *rank_main(void *arg) {
    tp_rank *R = arg;
    tp_shared *sh = R->sh;
    pthread_mutex_lock(&sh->mu);
    while (!sh->started)
        pthread_cond_wait(&sh->cv, &sh->mu);
    pthread_mutex_unlock(&sh->mu);
    cudaError_t rc = cudaSetDevice(R->device);
    if (rc != cudaSuccess)
        rank_fail(R, gr_cuda_fail(rc, "cudaSetDevice", __FILE__, __LINE__, &R->err));
    /* every rank has its device before any enters ncclCommInitRank, which waits for all */
    if (barrier(sh) && R->status == GR_OK) {
        gr_status st = gr_nccl_comm_init(&R->comm, sh->n, &sh->id, R->rank, &R->err);
        if (st != GR_OK) {
            rank_fail(R, st);
        } else {
            pthread_mutex_lock(&sh->mu);
            sh->comms[R->rank] = R->comm;
            pthread_mutex_unlock(&sh->mu);
        }
    }
    gr_run_opts o = sh->o->run;
    o.progress = o.progress && R->rank == 0;
    o.cpu_reference = 0; /* the references are the main thread's (sharded and unsharded) */
    o.unroll = 1;
    gr_pipe_init(&R->pipe, R->plan, 0, &o, &R->v);
    gr_pipe_hooks hooks = {rank_before, rank_after, stop_if_failed, NULL, R};
    R->pipe.hooks = &hooks;
    gr_status st = gr_pipe_run(&R->pipe, rank_stages, RANK_NSTAGES, &R->err);
    if (st != GR_OK && R->status == GR_OK) rank_fail(R, st);
    while (R->barriers < RANK_NSTAGES) { /* the stages a failure left: their barriers still */
        R->barriers++;
        barrier(sh);
    }
    barrier(sh);
    teardown(R);
    pthread_mutex_lock(&sh->mu);
    sh->done++;
    pthread_cond_broadcast(&sh->cv);
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

/* Start the rank threads and wait for them; abort the communicators when a failed rank left
 * the others blocked in a collective past the grace period. */
static gr_status run_ranks(const gr_tp_plans *tp, const gr_tp_opts *o, const gr_tp_refs *refs,
                           gr_tp_result *x, gr_error *err) {
    int P = tp->P;
    tp_shared sh;
    memset(&sh, 0, sizeof(sh));
    tp_rank *R = calloc((size_t)P, sizeof(tp_rank));
    pthread_t *th = calloc((size_t)P, sizeof(pthread_t));
    int *made = calloc((size_t)P, sizeof(int));
    if (!R || !th || !made) {
        free(R), free(th), free(made);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    }
    pthread_mutex_init(&sh.mu, NULL);
    pthread_cond_init(&sh.cv, NULL);
    sh.n = P;
    sh.o = o;
    sh.tp = tp;
    sh.ranks = R;
    sh.refs = refs;
    sh.res = x;
    gr_status st = gr_nccl_unique_id(&sh.id, err);
    for (int p = 0; p < P && st == GR_OK; p++) {
        R[p].sh = &sh;
        R[p].rank = p;
        R[p].device = device_of(o, p);
        R[p].plan = tp->rank[p];
        R[p].xb = gr_tp_buffer(tp->rank[p], "x");
        R[p].actb = gr_tp_buffer(tp->rank[p], "act");
        R[p].tdb = gr_tp_buffer(tp->rank[p], "tdown");
        R[p].out = &x->rank[p];
        x->rank[p].rank = p;
        x->rank[p].device = R[p].device;
        if (R[p].xb < 0 || R[p].actb < 0 || R[p].tdb < 0)
            st = gr_error_set(err, GR_ERR_INPUT, tp->rank[p]->source,
                              "a rank plan needs buffers x, act and tdown (they are checked)");
    }
    int nmade = 0;
    for (int p = 0; p < P && st == GR_OK; p++) {
        if (pthread_create(&th[p], NULL, rank_main, &R[p]) != 0) {
            st = gr_error_set(err, GR_ERR_NOMEM, NULL, "cannot start the thread of rank %d", p);
            break;
        }
        made[p] = 1;
        nmade++;
    }
    pthread_mutex_lock(&sh.mu);
    if (st != GR_OK) {
        sh.failed = 1; /* the threads that exist go straight to their teardown */
        sh.n = nmade;  /* and their barriers count only them */
    }
    sh.started = 1;
    pthread_cond_broadcast(&sh.cv);
    while (sh.done < nmade) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200L * 1000 * 1000; /* wake every 200 ms to watch for a stuck rank */
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&sh.cv, &sh.mu, &ts);
        if (sh.failed && !sh.aborted && gr_now_us() - sh.failed_at > ABORT_GRACE_US) {
            /* a rank failed and the others are still not at the next barrier: blocked in a
             * collective that will never complete. Abort (NCCL's way to release them); the
             * handles are revoked first, so the released ranks make no further NCCL call */
            sh.aborted = 1;
            gr_nccl_comm *c[GR_TP_MAX_RANKS];
            for (int p = 0; p < P; p++) {
                c[p] = sh.comms[p];
                sh.comms[p] = NULL;
            }
            pthread_mutex_unlock(&sh.mu);
            for (int p = 0; p < P; p++)
                gr_nccl_comm_abort(c[p]);
            pthread_mutex_lock(&sh.mu);
        }
    }
    pthread_mutex_unlock(&sh.mu);
    for (int p = 0; p < P; p++)
        if (made[p]) pthread_join(th[p], NULL);
    for (int p = 0; p < P; p++)
        gr_nccl_comm_free(R[p].comm); /* the aborted ones */
    /* the first failure is the cause, the others' follow from it */
    int first = sh.failed ? sh.first_failed : 0;
    for (int k = 0; k < P && st == GR_OK; k++) {
        int p = (first + k) % P;
        if (R[p].status == GR_OK) continue;
        st = gr_error_set(err, R[p].status, NULL, "rank %d (device %d): %s", p, R[p].device,
                          R[p].err.msg);
        if (R[p].err.api[0]) {
            snprintf(err->api, sizeof(err->api), "%s", R[p].err.api);
            snprintf(err->api_error, sizeof(err->api_error), "%s", R[p].err.api_error);
        }
        for (int q = 0; q < P; q++)
            if (q != p && R[q].status != GR_OK)
                gr_error_set(err, R[q].status, NULL, "then rank %d (device %d): %s", q, R[q].device,
                             R[q].err.msg);
    }
    if (st == GR_OK && sh.aborted)
        st = gr_error_set(err, GR_ERR_CUDA, NULL,
                          "a rank stopped answering; the NCCL communicators were aborted");
    if (st == GR_OK && !x->verified) {
        for (int i = 0; i < x->checks.n; i++) {
            const gr_check *c = &x->checks.v[i];
            if (c->passed) continue;
            char line[256];
            gr_check_str(c, line, sizeof(line));
            st = gr_error_set(err, GR_ERR_VERIFY, NULL,
                              "P = %d: \"%s\" %s: %s (tolerance rel L2 %.1e, element %.1e rms + "
                              "%.1e |ref|)", P, c->buffer, c->what, line, c->rtol, c->atol,
                              c->rtol_elem);
        }
        if (st == GR_OK) st = gr_error_set(err, GR_ERR_INTERNAL, NULL, "P = %d: not verified", P);
    }
    if (st == GR_OK) x->timed = 1;
    pthread_mutex_destroy(&sh.mu);
    pthread_cond_destroy(&sh.cv);
    free(R);
    free(th);
    free(made);
    return st;
}

/* ---------- the unsharded step on one GPU ---------- */

typedef struct single_host {
    gr_hoststate *init;                /* the unsharded step's initial contents (weights, x0) */
    void *single_x;                    /* its eager x after `steps` steps on one GPU */
    void *ref_x, *ref_act, *ref_tdown; /* its CPU reference after `steps` steps */
} single_host;

static void single_host_free(single_host *h) {
    gr_hoststate_destroy(h->init);
    free(h->single_x);
    free(h->ref_x);
    free(h->ref_act);
    free(h->ref_tdown);
    memset(h, 0, sizeof(*h));
}

/* The unsharded step's stages around the pipeline's: its initial contents downloaded (what the
 * ranks' shards are cut from), and the device's bandwidth probe. */
typedef struct single_ctx {
    const gr_tp_opts *o;
    gr_tp_single *out;
    single_host *h;
    int xb, ab, tb;
} single_ctx;

static single_ctx *single_of(gr_pipe *p) {
    return (single_ctx *)p->hooks->user;
}

static gr_status st_single_init(gr_pipe *p, gr_error *err) {
    single_ctx *c = single_of(p);
    const gr_plan *base = p->plan;
    GR_TRY(gr_devstate_init_buffers(p->s->dev, err));
    GR_TRY(gr_hoststate_create(base, &c->h->init, err));
    for (int b = 0; b < base->nbufs; b++)
        if (base->bufs[b].used) GR_TRY(gr_devstate_download(p->s->dev, b, c->h->init->hptr[b], err));
    return GR_OK;
}

static gr_status st_single_bw(gr_pipe *p, gr_error *err) {
    single_ctx *c = single_of(p);
    gr_tp_single *out = c->out;
    if (!c->o->run.bandwidth) return GR_OK;
    GR_TRY(gr_bandwidth_probe(gr_bandwidth_bytes(out->info.mem_free), GR_BANDWIDTH_REPS, &out->bw,
                              err));
    out->have_bw = out->bw.read_only.gbps.median > 0;
    out->floor_us = gr_floor_us(p->plan->bytes_read, p->plan->bytes_written, &out->bw);
    return GR_OK;
}

static const gr_stage single_init = {"tp_single_init", st_single_init};
static const gr_stage single_bw = {"tp_single_bandwidth", st_single_bw};

static const gr_stage *const single_stages[] = {
    &gr_stage_session,     &single_init,         &gr_stage_reference, &gr_stage_eager_check,
    &gr_stage_capture,     &gr_stage_graph_check, &single_bw,         &gr_stage_time_eager,
    &gr_stage_time_graph,
};

/* Timing only when the checks passed and --no-single-timing is not given. */
static gr_status single_before(void *user, gr_pipe *p, const gr_stage *s, int *skip, gr_error *err) {
    (void)err;
    single_ctx *c = user;
    if ((s == &gr_stage_time_eager || s == &gr_stage_time_graph) &&
        (!c->o->single_timing || !p->s || !p->s->checks.verified))
        *skip = 1;
    return GR_OK;
}

/* The host copies the ranks are checked against: the reference's x, act and tdown, the eager x. */
static gr_status single_after(void *user, gr_pipe *p, const gr_stage *s, gr_status st, gr_error *err) {
    single_ctx *c = user;
    single_host *h = c->h;
    if (st != GR_OK) return GR_OK;
    const gr_plan *base = p->plan;
    if (s == &gr_stage_reference) {
        h->ref_x = dup_bytes(p->s->ref->hptr[c->xb], base->bufs[c->xb].bytes);
        h->ref_act = dup_bytes(p->s->ref->hptr[c->ab], base->bufs[c->ab].bytes);
        h->ref_tdown = dup_bytes(p->s->ref->hptr[c->tb], base->bufs[c->tb].bytes);
        if (!h->ref_x || !h->ref_act || !h->ref_tdown)
            return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    } else if (s == &gr_stage_eager_check) {
        if (!p->s->eager_out[c->xb])
            return gr_error_set(err, GR_ERR_INPUT, base->source,
                                "the unsharded step must have x among its outputs");
        h->single_x = dup_bytes(p->s->eager_out[c->xb], base->bufs[c->xb].bytes);
        if (!h->single_x) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    } else if (s == &gr_stage_capture) {
        c->out->graph = p->v->graph;
    }
    return GR_OK;
}

static gr_status single_gpu(const gr_tp_plans *tp, const gr_tp_opts *o, double rtol,
                            gr_tp_single *out, single_host *h, gr_error *err) {
    const gr_plan *base = tp->base;
    out->device = device_of(o, 0);
    GR_TRY(gr_device_probe(out->device, &out->info, err));
    single_ctx c = {o, out, h, gr_tp_buffer(base, "x"), gr_tp_buffer(base, "act"), -1};
    char tdname[48];
    snprintf(tdname, sizeof(tdname), "tdown.%lld", (long long)(tp->shape.L - 1));
    c.tb = gr_tp_buffer(base, tdname);
    if (c.xb < 0 || c.ab < 0 || c.tb < 0)
        return gr_error_set(err, GR_ERR_INPUT, base->source,
                            "the unsharded step needs buffers x, act and %s", tdname);
    out->bytes_per_step = base->bytes_read + base->bytes_written;
    gr_run_opts ro = o->run;
    ro.rtol = rtol;
    ro.unroll = 1;
    gr_variant_run v;
    memset(&v, 0, sizeof(v));
    gr_pipe p;
    gr_pipe_init(&p, base, out->info.sm_count, &ro, &v);
    p.label = "1 GPU";
    gr_pipe_hooks hooks = {single_before, single_after, NULL, NULL, &c};
    p.hooks = &hooks;
    gr_status st = gr_pipe_run(&p, single_stages, (int)(sizeof(single_stages) / sizeof(single_stages[0])), err);
    gr_pipe_free(&p);
    gr_checks_take(&out->checks, &v.checks);
    out->verified = out->checks.verified;
    out->reference_ms = v.reference_ms;
    out->kernels_per_step = (int)out->graph.kernel_nodes;
    if (v.timed) {
        out->eager = v.eager;
        out->graph_t = v.graph_t;
        out->timed = 1;
    }
    gr_variant_run_clear(&v);
    out->status = st;
    if (st != GR_OK) snprintf(out->error, sizeof(out->error), "%s", err->msg);
    return st;
}

/* ---------- one P ---------- */

static gr_status run_degree(const gr_tp_req *req, int P, const gr_target *t, gr_tp_plans *tp,
                            const gr_tp_opts *o, double rtol, single_host *h, gr_tp_result *x,
                            gr_error *err) {
    x->P = P;
    GR_TRY(gr_tp_load_ranks(req, P, t, tp, err));
    x->kernels_per_step = tp->rank[0]->kernels;
    x->collectives_per_step = tp->ncollectives;
    gr_tp_host host;
    GR_TRY(gr_tp_host_shard(tp, h->init->hptr, &host, err));
    x->shard_host_bytes = host.bytes_copied;
    gr_tp_host_bind(tp, &host);
    gr_tp_refs refs;
    memset(&refs, 0, sizeof(refs));
    refs.single_x = h->single_x;
    refs.ref_x = h->ref_x;
    refs.ref_act = h->ref_act;
    refs.ref_tdown = h->ref_tdown;
    refs.rtol = rtol;
    gr_status st = GR_OK;
    if (o->run.cpu_reference) st = gr_tp_sharded_reference(tp, o->run.steps, &refs, x, err);
    if (st == GR_OK) st = run_ranks(tp, o, &refs, x, err);
    gr_tp_refs_free_sharded(&refs);
    gr_tp_host_free(&host);
    return st;
}

/* ---------- the whole run ---------- */

int gr_tp_visible_devices(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n;
}

gr_status gr_tp_run(const gr_tp_req *req, const int *Ps, int nP, const gr_tp_opts *o,
                    gr_tp_report *r, gr_error *err) {
    memset(r, 0, sizeof(*r));
    r->opts = *o;
    time_t now = time(NULL);
    struct tm tmv;
    gmtime_r(&now, &tmv);
    strftime(r->date, sizeof(r->date), "%Y-%m-%d %H:%M UTC", &tmv);
    if (nP < 1 || nP > GR_TP_MAX_RUNS)
        return gr_error_set(err, GR_ERR_USAGE, "--tp", "give 1 to %d degrees, got %d",
                            GR_TP_MAX_RUNS, nP);
    int visible = gr_tp_visible_devices();
    r->visible_devices = visible;
    int maxP = 0;
    for (int i = 0; i < nP; i++)
        maxP = Ps[i] > maxP ? Ps[i] : maxP;
    if (o->ndevices > 0) {
        if (o->ndevices < maxP)
            return gr_error_set(err, GR_ERR_USAGE, "--devices",
                                "%d devices listed for --tp %d: give one per rank", o->ndevices,
                                maxP);
        for (int p = 0; p < o->ndevices; p++) {
            if (o->devices[p] < 0 || o->devices[p] >= visible)
                return gr_error_set(err, visible ? GR_ERR_USAGE : GR_ERR_NODEV, "--devices",
                                    "device %d does not exist (%d visible)", o->devices[p],
                                    visible);
            for (int q = 0; q < p; q++)
                if (o->devices[q] == o->devices[p])
                    return gr_error_set(err, GR_ERR_USAGE, "--devices",
                                        "device %d is listed twice: NCCL needs one device per rank",
                                        o->devices[p]);
        }
    }
    for (int i = 0; i < nP; i++)
        GR_TRY(gr_tp_check_devices(Ps[i], visible, err));
    gr_device_info d0;
    GR_TRY(gr_device_probe(device_of(o, 0), &d0, err));
    /* PDL for this GPU (the default: where it has it); the ranks run with the resolved copy */
    GR_TRY(gr_run_opts_resolve_pdl(&r->opts.run, d0.cc_major, d0.cc_minor, err));
    o = &r->opts;
    gr_target t = gr_target_from_info(&d0);
    gr_tp_plans *tp = calloc(1, sizeof(*tp));
    if (!tp) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    gr_status st = gr_tp_load_base(req, &t, tp, err);
    for (int i = 0; i < nP && st == GR_OK; i++)
        st = gr_tp_check_degree(&tp->shape, Ps[i], err);
    if (st == GR_OK) {
        snprintf(r->workload_path, sizeof(r->workload_path), "%s", req->workload);
        snprintf(r->base, sizeof(r->base), "%s", tp->base->workload);
        snprintf(r->base_path, sizeof(r->base_path), "%s", tp->base_path);
        snprintf(r->params, sizeof(r->params), "%s", tp->base->params);
        r->shape = tp->shape;
        st = gr_nccl_load(err);
    }
    if (st == GR_OK) {
        snprintf(r->nccl_path, sizeof(r->nccl_path), "%s", gr_nccl_path());
        snprintf(r->nccl_version, sizeof(r->nccl_version), "%s", gr_nccl_version());
    }
    single_host h;
    memset(&h, 0, sizeof(h));
    double rtol = o->run.rtol;
    if (st == GR_OK && rtol <= 0) rtol = tp->base->bufs[gr_tp_buffer(tp->base, "x")].rtol;
    if (st == GR_OK) {
        st = single_gpu(tp, o, rtol, &r->single, &h, err);
        if (st == GR_OK && !r->single.verified) {
            for (int i = 0; i < r->single.checks.n; i++)
                if (!r->single.checks.v[i].passed) {
                    char line[256];
                    gr_check_str(&r->single.checks.v[i], line, sizeof(line));
                    st = gr_error_set(err, GR_ERR_VERIFY, NULL,
                                      "the unsharded step on one GPU: \"%s\" %s: %s",
                                      r->single.checks.v[i].buffer, r->single.checks.v[i].what, line);
                }
            r->single.status = st;
        }
    }
    gr_status worst = st;
    for (int i = 0; i < nP && st == GR_OK; i++) {
        gr_tp_result *x = &r->runs[r->nruns++];
        gr_error e;
        gr_error_clear(&e);
        gr_status s = run_degree(req, Ps[i], &t, tp, o, rtol, &h, x, &e);
        x->status = s;
        if (r->workload[0] == '\0' && tp->rank_ld[0].wl)
            snprintf(r->workload, sizeof(r->workload), "%s", tp->rank_ld[0].wl->name);
        if (s != GR_OK) {
            snprintf(x->error, sizeof(x->error), "%s", e.msg);
            gr_error_set(err, s, NULL, "--tp %d: %s", Ps[i], e.msg);
            if (worst == GR_OK || worst == GR_ERR_VERIFY) worst = s;
            if (s == GR_ERR_CUDA || s == GR_ERR_CAPTURE) break; /* the contexts may be broken */
        }
        gr_tp_free_ranks(tp);
    }
    if (r->workload[0] == '\0') snprintf(r->workload, sizeof(r->workload), "decode_tp");
    single_host_free(&h);
    gr_tp_plans_free(tp);
    free(tp);
    return worst;
}

/* ---------- derived numbers and the report ---------- */

void gr_tp_derive(const gr_tp_report *r, const gr_tp_result *x, gr_tp_derived *d) {
    memset(d, 0, sizeof(*d));
    if (!x->timed) return;
    d->valid = 1;
    for (int m = 0; m < GR_TP_NMODES; m++) {
        d->slowest[m] = -1;
        for (int p = 0; p < x->P; p++) {
            const gr_tp_rank_result *rk = &x->rank[p];
            if (!rk->timed[m]) continue;
            if (d->slowest[m] < 0 || rk->t[m].step_us.median > d->us[m]) {
                d->us[m] = rk->t[m].step_us.median;
                d->slowest[m] = p;
            }
        }
    }
    for (int p = 0; p < x->P; p++)
        if (x->rank[p].floor_us > d->floor_us) d->floor_us = x->rank[p].floor_us;
    double e = d->us[GR_TP_EAGER], g = d->us[GR_TP_GRAPH];
    if (e > 0 && d->us[GR_TP_EAGER_COMPUTE] > 0)
        d->comm_share_eager = 1.0 - d->us[GR_TP_EAGER_COMPUTE] / e;
    if (g > 0 && d->us[GR_TP_GRAPH_COMPUTE] > 0)
        d->comm_share_graph = 1.0 - d->us[GR_TP_GRAPH_COMPUTE] / g;
    if (g > 0 && d->us[GR_TP_GRAPH_COMM] > 0) d->comm_alone_graph = d->us[GR_TP_GRAPH_COMM] / g;
    d->removed_us = e - g;
    if (x->kernels_per_step > 0) d->removed_per_launch_us = d->removed_us / x->kernels_per_step;
    if (d->floor_us > 0 && e > d->floor_us)
        d->removed_share_min = d->removed_us / (e - d->floor_us);
    if (d->floor_us > 0) {
        d->eager_over_floor = e / d->floor_us;
        d->graph_over_floor = g / d->floor_us;
    }
    if (g > 0 && r->single.timed) d->vs_single_graph = r->single.graph_t.step_us.median / g;
}

static void check_lines(FILE *f, const gr_check *c, int n) {
    for (int i = 0; i < n; i++) {
        char line[256];
        gr_check_str(&c[i], line, sizeof(line));
        fprintf(f, "  %-16.16s %-20s %s\n", c[i].buffer, c[i].what, line);
    }
}

static void timing_cell(char *out, size_t size, const gr_timing *t) {
    snprintf(out, size, "%.2f [%.2f, %.2f]", t->step_us.median, t->step_us.p10, t->step_us.p90);
}

void gr_tp_report_text(FILE *f, const gr_tp_report *r) {
    const gr_tp_opts *o = &r->opts;
    fprintf(f, "graphrun tp: %s (%s) sharding %s (%s, variant fused); %s\n", r->workload,
            r->workload_path, r->base, r->base_path, r->date);
    fprintf(f, "params   %s\n", r->params);
    fprintf(f,
            "design   one process, one host thread per GPU; NCCL %s (%s), communicators from "
            "ncclGetUniqueId + ncclCommInitRank; each rank captures its own stream (%s mode), "
            "its all-reduces inside its graph; NVLink SHARP off (NCCL_NVLS_ENABLE=0)\n",
            r->nccl_version[0] ? r->nccl_version : "?",
            r->nccl_path[0] ? r->nccl_path : "not loaded", gr_capture_mode_name(o->run.mode));
    if (o->run.pdl)
        fprintf(f, "launches programmatic dependent launch (%s) for the kernels that support it, "
                   "on every rank and the single GPU\n",
                o->run.pdl_default ? "default on this GPU; --no-pdl turns it off" : "--pdl");
    else
        fprintf(f, "launches plain (%s)\n",
                o->run.pdl_default ? "this GPU has no programmatic dependent launch" : "--no-pdl");
    const gr_tp_single *s = &r->single;
    fprintf(f, "devices  %d visible; rank 0 / the single-GPU run on device %d: %s, %d SMs\n",
            r->visible_devices, s->device, s->info.name, s->info.sm_count);

    fprintf(f, "checks   %s\n",
            o->run.cpu_reference ? "against the unsharded and sharded CPU references, graph against "
                               "eager, ranks against rank 0 and against the single-GPU step"
                             : "NO CPU REFERENCE (--no-cpu-ref): graph against eager, ranks against "
                               "rank 0 and against the single-GPU step only");
    fprintf(f, "\nsingle GPU: %s, variant fused, unsharded, on device %d%s\n", r->base, s->device,
            s->status && !s->checks.n ? " (failed)" : "");
    check_lines(f, s->checks.v, s->checks.n);
    if (s->reference_ms > 0) fprintf(f, "  (CPU reference took %.0f ms)\n", s->reference_ms);
    if (s->status && s->error[0]) fprintf(f, "  failed: %s\n", s->error);

    for (int i = 0; i < r->nruns; i++) {
        const gr_tp_result *x = &r->runs[i];
        int64_t lo, hi;
        fprintf(f, "\nP = %d: %d ops per rank per step (%d kernel launches + %d all-reduces)\n",
                x->P, x->kernels_per_step, x->kernels_per_step - x->collectives_per_step,
                x->collectives_per_step);
        for (int p = 0; p < x->P; p++) {
            gr_tp_owned(r->shape.f, x->P, p, &lo, &hi);
            fprintf(f,
                    "  rank %d on device %d: rows %lld..%lld of W_gate, W_up, B_gate, B_up and "
                    "columns %lld..%lld of W_down, A_down (f = %lld); %.1f MB per step\n",
                    p, x->rank[p].device, (long long)lo, (long long)hi - 1, (long long)lo,
                    (long long)hi - 1, (long long)r->shape.f, x->rank[p].bytes_per_step / 1e6);
        }
        fprintf(f, "  verification (x after %d step%s; rel = relative L2)\n", o->run.steps,
                o->run.steps == 1 ? "" : "s");
        check_lines(f, x->checks.v, x->checks.n);
        if (x->sharded_reference_ms > 0)
            fprintf(f, "  (sharded CPU reference took %.0f ms)\n", x->sharded_reference_ms);
        if (x->status && x->error[0]) fprintf(f, "  failed: %s\n", x->error);
        if (x->rank[0].graph.nodes) {
            fprintf(f, "  graphs per rank (host clock)   nodes kernels  memcpy   other   edges  "
                       "capture us  instantiate us\n");
            for (int p = 0; p < x->P; p++) {
                const gr_graph *g = &x->rank[p].graph;
                fprintf(f, "    rank %-3d %-19s %7zu %7zu %7zu %7zu %7zu %11.1f %15.1f\n", p,
                        "step", g->nodes, g->kernel_nodes, g->memcpy_nodes,
                        g->nodes - g->kernel_nodes - g->memcpy_nodes, g->edges, g->capture_us,
                        g->instantiate_us);
            }
        }
        gr_tp_derived d;
        gr_tp_derive(r, x, &d);
        if (!d.valid) continue;
        const gr_tp_rank_result *rk0 =
            &x->rank[d.slowest[GR_TP_EAGER] >= 0 ? d.slowest[GR_TP_EAGER] : 0];
        fprintf(f,
                "  timing per step, untraced: CUDA events around batches on each rank's stream; "
                "median [p10, p90] over %d batches of %d steps after %d warm-up steps; the "
                "slowest rank is the step\n",
                rk0->t[GR_TP_EAGER].batches, rk0->t[GR_TP_EAGER].steps_per_batch,
                rk0->t[GR_TP_EAGER].warmup);
        fprintf(f, "    %-26s %26s %8s  %s\n", "mode", "us/step (slowest rank)", "rank",
                "every rank's median us");
        for (int m = 0; m < GR_TP_NMODES; m++) {
            if (d.slowest[m] < 0) continue;
            char cell[64], all[512];
            timing_cell(cell, sizeof(cell), &x->rank[d.slowest[m]].t[m]);
            size_t o2 = 0;
            all[0] = '\0';
            for (int p = 0; p < x->P && o2 < sizeof(all) - 16; p++)
                o2 += (size_t)snprintf(all + o2, sizeof(all) - o2, "%s%.1f", p ? " " : "",
                                       x->rank[p].t[m].step_us.median);
            fprintf(f, "    %-26s %26s %8d  %s\n", gr_tp_mode_name((gr_tp_mode)m), cell,
                    d.slowest[m], all);
        }
        fprintf(f,
                "  launch overhead the graph removes: %.2f us/step (%.3f us per launch; host "
                "submit %.1f | %.1f us/step eager | graph)",
                d.removed_us, d.removed_per_launch_us, rk0->t[GR_TP_EAGER].submit_us.median,
                rk0->t[GR_TP_GRAPH].submit_us.median);
        if (d.removed_share_min > 0)
            fprintf(f,
                    "; at least %.0f%% of the eager step's overhead ((eager - graph) / (eager - "
                    "floor))",
                    100.0 * d.removed_share_min);
        fprintf(f, "\n");
        if (d.us[GR_TP_GRAPH_COMPUTE] > 0)
            fprintf(f,
                    "  communication: %.1f%% of the eager step, %.1f%% of the graph step "
                    "(1 - step without all-reduces / step); the %d all-reduces alone take "
                    "%.1f%% of the graph step\n",
                    100.0 * d.comm_share_eager, 100.0 * d.comm_share_graph, x->collectives_per_step,
                    100.0 * d.comm_alone_graph);
        if (d.floor_us > 0)
            fprintf(f,
                    "  HBM floor per GPU %.2f us (the largest rank's: bytes read at its read-only "
                    "bandwidth + bytes written at its write-only bandwidth, docs/floors.md): eager "
                    "%.2fx, graph %.2fx the floor (%.1f%%, %.1f%% of it)\n",
                    d.floor_us, d.eager_over_floor, d.graph_over_floor,
                    gr_pct_of_floor(d.floor_us, d.us[GR_TP_EAGER]),
                    gr_pct_of_floor(d.floor_us, d.us[GR_TP_GRAPH]));
        if (d.vs_single_graph > 0)
            fprintf(f, "  against the unsharded step on one GPU (graph %.2f us): %.2fx\n",
                    r->single.graph_t.step_us.median, d.vs_single_graph);
    }

    fprintf(f, "\nsummary (us per step, slowest rank, medians; comm = share of the step lost to "
               "the all-reduces)\n");
    fprintf(f, "  %-9s %8s %11s %11s %9s %9s %8s %8s %11s %10s %9s\n", "run", "ops/step",
            "eager us", "graph us", "eager/fl", "graph/fl", "comm e", "comm g", "removed us",
            "removed>=", "vs 1 GPU");
    if (s->timed) {
        double fl = s->floor_us;
        fprintf(f, "  %-9s %8d %11.2f %11.2f %8.2fx %8.2fx %8s %8s %11.2f %9s %9s\n", "1 GPU",
                s->kernels_per_step, s->eager.step_us.median, s->graph_t.step_us.median,
                fl > 0 ? s->eager.step_us.median / fl : 0.0,
                fl > 0 ? s->graph_t.step_us.median / fl : 0.0, "-", "-",
                s->eager.step_us.median - s->graph_t.step_us.median, "-", "1.00x");
    }
    for (int i = 0; i < r->nruns; i++) {
        const gr_tp_result *x = &r->runs[i];
        gr_tp_derived d;
        gr_tp_derive(r, x, &d);
        char run[16];
        snprintf(run, sizeof(run), "P = %d", x->P);
        if (!d.valid) {
            fprintf(f, "  %-9s not timed: %s\n", run, gr_status_name((gr_status)x->status));
            continue;
        }
        char ce[16] = "-", cg[16] = "-", rm[16] = "-", vs[16] = "-";
        if (d.us[GR_TP_EAGER_COMPUTE] > 0)
            snprintf(ce, sizeof(ce), "%.1f%%", 100 * d.comm_share_eager);
        if (d.us[GR_TP_GRAPH_COMPUTE] > 0)
            snprintf(cg, sizeof(cg), "%.1f%%", 100 * d.comm_share_graph);
        if (d.removed_share_min > 0) snprintf(rm, sizeof(rm), "%.0f%%", 100 * d.removed_share_min);
        if (d.vs_single_graph > 0) snprintf(vs, sizeof(vs), "%.2fx", d.vs_single_graph);
        fprintf(f, "  %-9s %8d %11.2f %11.2f %8.2fx %8.2fx %8s %8s %11.2f %9s %9s\n", run,
                x->kernels_per_step, d.us[GR_TP_EAGER], d.us[GR_TP_GRAPH], d.eager_over_floor,
                d.graph_over_floor, ce, cg, d.removed_us, rm, vs);
    }
    fprintf(f, "  (eager/fl, graph/fl: multiples of the per-GPU HBM floor; removed>= : lower bound "
               "on the share of the eager step's launch overhead the graph removes, taking the "
               "floor as the overhead-free step; vs 1 GPU: unsharded graph / this graph)\n");
}





static const char *mode_key(gr_tp_mode m) {
    switch (m) {
    case GR_TP_EAGER:
        return "eager";
    case GR_TP_GRAPH:
        return "graph_replay";
    case GR_TP_EAGER_COMPUTE:
        return "eager_no_allreduce";
    case GR_TP_GRAPH_COMPUTE:
        return "graph_no_allreduce";
    case GR_TP_EAGER_COMM:
        return "eager_allreduce_only";
    case GR_TP_GRAPH_COMM:
        return "graph_allreduce_only";
    default:
        return "?";
    }
}

/* An entry shaped like `graphrun run --json`'s variants, so that bench/run.sh's summary reads
 * it: kernels_per_step, eager, graph_replay, speedup, graph_gbps, graph_pct_of_copy_bw, ... */
static json_t *run_like(const char *name, int kernels, double bytes, const gr_timing *e,
                        const gr_timing *g, double floor_us, double bw_gbps, int verified,
                        const char *status) {
    json_t *v = json_object();
    json_object_set_new(v, "variant", json_string(name));
    json_object_set_new(v, "status", json_string(status));
    json_object_set_new(v, "kernels_per_step", json_integer(kernels));
    json_object_set_new(v, "bytes_per_step", json_real(bytes));
    json_object_set_new(v, "verified", json_boolean(verified));
    if (e && g) {
        double em = e->step_us.median, gm = g->step_us.median;
        json_object_set_new(v, "eager", (json_t *)gr_report_timing_json(e, "rank's stream"));
        json_object_set_new(v, "graph_replay", (json_t *)gr_report_timing_json(g, "rank's stream"));
        json_object_set_new(v, "speedup", json_real(gm > 0 ? em / gm : 0));
        json_object_set_new(v, "overhead_removed_us_per_kernel",
                            json_real(kernels > 0 ? (em - gm) / kernels : 0));
        json_object_set_new(v, "eager_gbps", json_real(em > 0 ? bytes / (em * 1e-6) / 1e9 : 0));
        json_object_set_new(v, "graph_gbps", json_real(gm > 0 ? bytes / (gm * 1e-6) / 1e9 : 0));
        if (floor_us > 0) {
            json_object_set_new(v, "hbm_floor_us", json_real(floor_us));
            json_object_set_new(v, "eager_over_floor", json_real(em / floor_us));
            json_object_set_new(v, "graph_over_floor", json_real(gm / floor_us));
            json_object_set_new(v, "eager_pct_of_floor", json_real(gr_pct_of_floor(floor_us, em)));
            json_object_set_new(v, "graph_pct_of_floor", json_real(gr_pct_of_floor(floor_us, gm)));
        }
        if (bw_gbps > 0 && gm > 0)
            json_object_set_new(v, "graph_pct_of_copy_bw",
                                json_real(100.0 * bytes / (gm * 1e-6) / 1e9 / bw_gbps));
    }
    return v;
}

void *gr_tp_report_json(const gr_tp_report *r) {
    json_t *root = json_object();
    json_object_set_new(root, "schema_version", json_integer(1));
    json_object_set_new(root, "tool", json_string("graphrun"));
    json_object_set_new(root, "command", json_string("tp"));
    json_object_set_new(root, "date", json_string(r->date));
    json_object_set_new(root, "workload", json_string(r->workload));
    json_object_set_new(root, "source", json_string(r->workload_path));
    json_object_set_new(root, "base",
                        json_pack("{s:s, s:s, s:s}", "workload", r->base, "source", r->base_path,
                                  "variant", "fused"));
    json_object_set_new(root, "params", json_string(r->params));
    json_object_set_new(root, "cpu_reference", json_boolean(r->opts.run.cpu_reference));
    json_object_set_new(root, "pdl", json_boolean(r->opts.run.pdl));
    json_object_set_new(root, "pdl_source",
                        json_string(gr_run_opts_pdl_source(&r->opts.run)));
    json_object_set_new(root, "shape",
                        json_pack("{s:I, s:I, s:I, s:I, s:I, s:s}", "B", (json_int_t)r->shape.B,
                                  "L", (json_int_t)r->shape.L, "d", (json_int_t)r->shape.d, "f",
                                  (json_int_t)r->shape.f, "r", (json_int_t)r->shape.r, "dtype",
                                  gr_dtype_name(r->shape.dtype)));
    json_object_set_new(
        root, "design",
        json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "processes",
                  "one process, one host thread per GPU", "communicators",
                  "ncclGetUniqueId + ncclCommInitRank (one per rank thread)", "capture",
                  "each rank captures its own stream, all-reduces included", "capture_mode",
                  gr_capture_mode_name(r->opts.run.mode), "nccl_version", r->nccl_version,
                  "nccl_library", r->nccl_path, "nvls", "off (NCCL_NVLS_ENABLE=0)"));
    json_object_set_new(root, "visible_devices", json_integer(r->visible_devices));
    /* as graphrun run --json: the device of rank 0 (and of the single-GPU run), its copy bw */
    const gr_device_info *di = &r->single.info;
    json_object_set_new(root, "device",
                        json_pack("{s:s, s:i, s:i, s:i, s:I, s:i, s:i, s:i}", "name", di->name,
                                  "sm_count", di->sm_count, "cc_major", di->cc_major, "cc_minor",
                                  di->cc_minor, "memory_bytes", (json_int_t)di->mem_total,
                                  "driver_version", di->driver_version, "runtime_version",
                                  di->runtime_version, "clock_khz", di->clock_khz));
    if (r->single.have_bw)
        json_object_set_new(root, "copy_bandwidth",
                            (json_t *)gr_report_bandwidth_json(&r->single.bw, "on device 0"));
    json_object_set_new(root, "steps_checked", json_integer(r->opts.run.steps));
    json_object_set_new(
        root, "comm_share_method",
        json_string(
            "1 - (step without its all-reduces) / (step), per mode, slowest rank's medians: "
            "the time the step loses to communication, the all-reduces' own time and the "
            "ranks' waits on each other; all-reduces alone: a graph (and an eager loop) of "
            "just the step's all-reduces"));
    json_object_set_new(root, "launch_overhead_method",
                        json_string("removed_us = eager - graph per step (slowest ranks); "
                                    "removed_share_min = (eager - graph) / (eager - hbm_floor): a "
                                    "lower bound on the share of the eager step's launch overhead "
                                    "that the graph removes, since the overhead-free step cannot "
                                    "be faster than the floor"));

    const gr_tp_single *s = &r->single;
    json_t *js = json_object();
    json_object_set_new(js, "device", json_integer(s->device));
    json_object_set_new(js, "device_name", json_string(s->info.name));
    json_object_set_new(js, "status", json_string(gr_status_name((gr_status)s->status)));
    if (s->error[0]) json_object_set_new(js, "error", json_string(s->error));
    json_object_set_new(js, "kernels_per_step", json_integer(s->kernels_per_step));
    json_object_set_new(js, "bytes_per_step", json_real(s->bytes_per_step));
    json_object_set_new(js, "verified", json_boolean(s->verified));
    json_object_set_new(js, "checks", (json_t *)gr_report_checks_json(s->checks.v, s->checks.n));
    if (s->reference_ms > 0)
        json_object_set_new(js, "cpu_reference_ms", json_real(s->reference_ms));
    if (s->graph.nodes) json_object_set_new(js, "graph", (json_t *)gr_report_graph_json(&s->graph));
    if (s->have_bw) {
        json_object_set_new(js, "copy_gbps",
                            (json_t *)gr_report_summary_json(&s->bw.memcpy_d2d.gbps));
        json_object_set_new(js, "read_gbps",
                            (json_t *)gr_report_summary_json(&s->bw.read_only.gbps));
        json_object_set_new(js, "write_gbps",
                            (json_t *)gr_report_summary_json(&s->bw.write_only.gbps));
    }
    if (s->floor_us > 0) json_object_set_new(js, "hbm_floor_us", json_real(s->floor_us));
    if (s->timed) {
        json_object_set_new(js, "eager", (json_t *)gr_report_timing_json(&s->eager, "rank's stream"));
        json_object_set_new(js, "graph_replay", (json_t *)gr_report_timing_json(&s->graph_t, "rank's stream"));
    }
    json_object_set_new(root, "single_gpu", js);

    json_t *runs = json_array();
    json_t *variants = json_array();
    json_array_append_new(variants,
                          run_like("single_gpu", s->kernels_per_step, s->bytes_per_step,
                                   s->timed ? &s->eager : NULL, s->timed ? &s->graph_t : NULL,
                                   s->floor_us, s->have_bw ? s->bw.memcpy_d2d.gbps.median : 0,
                                   s->verified, gr_status_name((gr_status)s->status)));
    for (int i = 0; i < r->nruns; i++) {
        const gr_tp_result *x = &r->runs[i];
        gr_tp_derived d;
        gr_tp_derive(r, x, &d);
        json_t *jr = json_object();
        json_object_set_new(jr, "P", json_integer(x->P));
        json_object_set_new(jr, "status", json_string(gr_status_name((gr_status)x->status)));
        if (x->error[0]) json_object_set_new(jr, "error", json_string(x->error));
        json_object_set_new(jr, "ops_per_step", json_integer(x->kernels_per_step));
        json_object_set_new(jr, "allreduces_per_step", json_integer(x->collectives_per_step));
        json_object_set_new(jr, "verified", json_boolean(x->verified));
        json_object_set_new(jr, "checks", (json_t *)gr_report_checks_json(x->checks.v, x->checks.n));
        if (x->sharded_reference_ms > 0)
            json_object_set_new(jr, "sharded_cpu_reference_ms", json_real(x->sharded_reference_ms));
        json_t *ranks = json_array();
        for (int p = 0; p < x->P; p++) {
            const gr_tp_rank_result *rk = &x->rank[p];
            int64_t lo, hi;
            gr_tp_owned(r->shape.f, x->P, p, &lo, &hi);
            json_t *jk = json_object();
            json_object_set_new(jk, "rank", json_integer(p));
            json_object_set_new(jk, "device", json_integer(rk->device));
            json_object_set_new(jk, "device_name", json_string(rk->info.name));
            json_object_set_new(jk, "f_range", json_pack("[I, I]", (json_int_t)lo, (json_int_t)hi));
            json_object_set_new(jk, "bytes_per_step", json_real(rk->bytes_per_step));
            if (rk->have_bw) {
                json_object_set_new(jk, "copy_gbps",
                                    (json_t *)gr_report_summary_json(&rk->bw.memcpy_d2d.gbps));
                json_object_set_new(jk, "read_gbps",
                                    (json_t *)gr_report_summary_json(&rk->bw.read_only.gbps));
                json_object_set_new(jk, "write_gbps",
                                    (json_t *)gr_report_summary_json(&rk->bw.write_only.gbps));
            }
            if (rk->floor_us > 0) json_object_set_new(jk, "hbm_floor_us", json_real(rk->floor_us));
            if (rk->graph.nodes) json_object_set_new(jk, "graph", (json_t *)gr_report_graph_json(&rk->graph));
            if (rk->graph_compute.nodes)
                json_object_set_new(jk, "graph_no_allreduce", (json_t *)gr_report_graph_json(&rk->graph_compute));
            if (rk->graph_comm.nodes)
                json_object_set_new(jk, "graph_allreduce_only", (json_t *)gr_report_graph_json(&rk->graph_comm));
            for (int m = 0; m < GR_TP_NMODES; m++)
                if (rk->timed[m])
                    json_object_set_new(jk, mode_key((gr_tp_mode)m), (json_t *)gr_report_timing_json(&rk->t[m], "rank's stream"));
            json_array_append_new(ranks, jk);
        }
        json_object_set_new(jr, "ranks", ranks);
        if (d.valid) {
            json_t *st = json_object();
            for (int m = 0; m < GR_TP_NMODES; m++)
                if (d.slowest[m] >= 0)
                    json_object_set_new(
                        st, mode_key((gr_tp_mode)m),
                        json_pack("{s:f, s:i}", "us", d.us[m], "rank", d.slowest[m]));
            json_object_set_new(jr, "step_us_slowest_rank", st);
            if (d.us[GR_TP_EAGER_COMPUTE] > 0)
                json_object_set_new(jr, "comm_share",
                                    json_pack("{s:f, s:f, s:f}", "eager", d.comm_share_eager,
                                              "graph", d.comm_share_graph, "allreduces_alone_graph",
                                              d.comm_alone_graph));
            json_object_set_new(jr, "launch_overhead",
                                json_pack("{s:f, s:f, s:f}", "removed_us", d.removed_us,
                                          "removed_us_per_launch", d.removed_per_launch_us,
                                          "removed_share_min", d.removed_share_min));
            if (d.floor_us > 0) {
                json_object_set_new(jr, "hbm_floor_us", json_real(d.floor_us));
                json_object_set_new(jr, "eager_over_floor", json_real(d.eager_over_floor));
                json_object_set_new(jr, "graph_over_floor", json_real(d.graph_over_floor));
            }
            if (d.vs_single_graph > 0)
                json_object_set_new(jr, "speedup_vs_single_gpu_graph",
                                    json_real(d.vs_single_graph));
        }
        json_array_append_new(runs, jr);
        char name[16];
        snprintf(name, sizeof(name), "tp%d", x->P);
        const gr_tp_rank_result *se = d.valid ? &x->rank[d.slowest[GR_TP_EAGER]] : NULL;
        const gr_tp_rank_result *sg = d.valid ? &x->rank[d.slowest[GR_TP_GRAPH]] : NULL;
        json_array_append_new(
            variants,
            run_like(name, x->kernels_per_step, x->rank[0].bytes_per_step,
                     se ? &se->t[GR_TP_EAGER] : NULL, sg ? &sg->t[GR_TP_GRAPH] : NULL, d.floor_us,
                     x->rank[0].have_bw ? x->rank[0].bw.memcpy_d2d.gbps.median : 0, x->verified,
                     gr_status_name((gr_status)x->status)));
    }
    json_object_set_new(root, "runs", runs);
    json_object_set_new(root, "variants", variants);
    return root;
}

void gr_tp_report_clear(gr_tp_report *r) {
    if (!r) return;
    gr_checks_free(&r->single.checks);
    for (int i = 0; i < r->nruns; i++) gr_checks_free(&r->runs[i].checks);
}
