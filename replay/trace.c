/* graphrun's traced run: sessions made again per variant, the collector started once around
 * all of them, op tags pushed by executor hooks, one trace region per (variant, mode). */
#include "replay/trace.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cuda_check.h"
#include "cupti_tools/jsonl.h"
#include "cupti_tools/report.h"
#include "replay/pipeline.h"
#include "replay/report.h"

gr_status gr_trace_check_path(const char *path, gr_error *err) {
    if (!path || !path[0]) return gr_error_set(err, GR_ERR_USAGE, "--trace", "needs a file name");
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        if (!slash[1]) return gr_error_set(err, GR_ERR_USAGE, "--trace", "\"%s\" is a directory; give a file name", path);
        *slash = '\0';
        if (!dir[0]) snprintf(dir, sizeof(dir), "/");
    } else {
        snprintf(dir, sizeof(dir), ".");
    }
    if (access(dir, W_OK) != 0)
        return gr_error_set(err, GR_ERR_IO, "--trace", "cannot write the trace to %s: %s (does the directory exist "
                            "and is it writable?)", path, strerror(errno));
    return GR_OK;
}

typedef struct tag_hooks {
    uint64_t base;
    const gr_exec_hooks *inner;
} tag_hooks;

static uint64_t op_tag(uint64_t base, const gr_op *op) {
    return base | (uint64_t)(op->index + 1);
}

static void before_op(void *user, const gr_op *op) {
    tag_hooks *h = user;
    gr_cupti_tag_push(op_tag(h->base, op));
    if (h->inner && h->inner->before_op) h->inner->before_op(h->inner->user, op);
}

static void after_op(void *user, const gr_op *op) {
    tag_hooks *h = user;
    if (h->inner && h->inner->after_op) h->inner->after_op(h->inner->user, op);
    gr_cupti_tag_pop();
}

/* "3,5": buffer indices, for the op record's "in" and "out" */
static void index_list(char *out, size_t size, const int *v, int n) {
    size_t off = 0;
    out[0] = '\0';
    for (int k = 0; k < n && off < size; k++)
        off += (size_t)snprintf(out + off, size - off, "%s%d", k ? "," : "", v[k]);
}

/* The variant's ops and the buffers they use: each kernel's tag, and the plan's dataflow (the
 * buffers each op reads and writes, its bytes, each buffer's size and whether it is an output),
 * so that cupti-launchstat's fusion what-if counts a chain's bytes from the plan. */
static void emit_ops(const gr_plan *p, uint64_t base) {
    gr_sbuf b;
    gr_sb_init(&b);
    char list[GR_MAX_INPUTS * 12 + GR_MAX_OUTPUTS * 12];
    for (int i = 0; i < p->nops; i++) {
        const gr_op *op = &p->ops[i];
        b.len = 0;
        gr_sb_raw(&b, "{\"t\":\"op\"", 9);
        gr_sb_kv_u64(&b, "tag", op_tag(base, op));
        gr_sb_kv_str(&b, "variant", p->variant);
        gr_sb_kv_i64(&b, "index", op->index);
        gr_sb_kv_str(&b, "name", op->name[0] ? op->name : op->path);
        gr_sb_kv_str(&b, "kernel", op->kind == GR_OP_KERNEL ? op->kernel->name : op->kind == GR_OP_FORK ? "fork" : "join");
        if (op->kind == GR_OP_KERNEL) {
            index_list(list, sizeof(list), op->inputs, op->ninputs);
            gr_sb_kv_str(&b, "in", list);
            index_list(list, sizeof(list), op->outputs, op->noutputs);
            gr_sb_kv_str(&b, "out", list);
            gr_sb_kv_dbl(&b, "rd", op->bytes_read);
            gr_sb_kv_dbl(&b, "wr", op->bytes_written);
            gr_sb_kv_i64(&b, "launches", op->launches);
        }
        gr_sb_raw(&b, "}", 1);
        if (!b.oom) gr_cupti_line(b.p, b.len);
    }
    for (int i = 0; i < p->nbufs; i++) {
        const gr_buffer *buf = &p->bufs[i];
        if (!buf->used) continue;
        b.len = 0;
        gr_sb_raw(&b, "{\"t\":\"buf\"", 10);
        gr_sb_kv_str(&b, "variant", p->variant);
        gr_sb_kv_i64(&b, "index", i);
        gr_sb_kv_str(&b, "name", buf->name);
        gr_sb_kv_u64(&b, "bytes", buf->bytes);
        gr_sb_kv_i64(&b, "output", buf->is_output);
        gr_sb_raw(&b, "}", 1);
        if (!b.oom) gr_cupti_line(b.p, b.len);
    }
    gr_sb_free(&b);
}

static void emit_region(const gr_plan *p, const char *mode, uint64_t s, uint64_t e, int64_t steps, double traced,
                        double untraced) {
    gr_sbuf b;
    gr_sb_init(&b);
    char name[160];
    snprintf(name, sizeof(name), "%s %s", p->variant, mode);
    gr_sb_raw(&b, "{\"t\":\"region\"", 13);
    gr_sb_kv_str(&b, "name", name);
    gr_sb_kv_str(&b, "variant", p->variant);
    gr_sb_kv_str(&b, "mode", mode);
    gr_sb_kv_i64(&b, "s", gr_cupti_rel(s));
    gr_sb_kv_i64(&b, "e", gr_cupti_rel(e));
    gr_sb_kv_i64(&b, "steps", steps);
    gr_sb_kv_dbl(&b, "traced_step_us", traced);
    if (untraced > 0) gr_sb_kv_dbl(&b, "untraced_step_us", untraced);
    gr_sb_raw(&b, "}", 1);
    if (!b.oom) gr_cupti_line(b.p, b.len);
    gr_sb_free(&b);
}

/* The collector's start-up probe of runtime API records: a call every trace records (sync). */
static void probe_runtime(void) {
    (void)cudaDeviceSynchronize();
}

static int64_t plan_steps(const gr_timing *t) {
    int per_launch = t->steps_per_launch > 0 ? t->steps_per_launch : 1;
    return ((int64_t)t->warmup + (int64_t)t->batches * t->steps_per_batch) * per_launch;
}

/* Trace regions around the timing stages: one per (variant, mode). */
typedef struct trace_hooks {
    gr_traced_variant *tv;
    uint64_t t0;
} trace_hooks;

static gr_status before_stage(void *user, gr_pipe *p, const gr_stage *s, int *skip, gr_error *err) {
    (void)p, (void)skip, (void)err;
    trace_hooks *h = user;
    if (s == &gr_stage_time_eager || s == &gr_stage_time_graph) h->t0 = gr_cupti_now();
    return GR_OK;
}

static gr_status after_stage(void *user, gr_pipe *p, const gr_stage *s, gr_status st, gr_error *err) {
    trace_hooks *h = user;
    gr_traced_variant *tv = h->tv;
    if (st != GR_OK) return GR_OK;
    uint64_t t1 = gr_cupti_now();
    if (s == &gr_stage_time_eager) {
        tv->eager = p->v->eager;
        emit_region(p->plan, "eager", h->t0, t1, plan_steps(&tv->eager), tv->eager.step_us.median,
                    tv->untraced_eager_us);
    } else if (s == &gr_stage_time_graph) {
        tv->graph = p->v->graph_t;
        emit_region(p->plan, "graph", h->t0, t1, plan_steps(&tv->graph), tv->graph.step_us.median,
                    tv->untraced_graph_us);
        GR_CUDA(cudaDeviceSynchronize(), err);
    }
    return GR_OK;
}

/* The traced stage list over a fresh session: capture (tagged), unrolled graph, both timings. */
static gr_status trace_variant(const gr_variant_run *u, int vi, const gr_device_info *dev,
                               const gr_run_opts *o, const gr_trace_result *r,
                               gr_traced_variant *tv, gr_error *err) {
    const gr_plan *p = u->plan;
    uint64_t base = (uint64_t)(vi + 1) << 32;
    tag_hooks th = {base, o->hooks};
    gr_exec_hooks hooks = {before_op, after_op, &th};
    emit_ops(p, base);
    gr_run_opts to = *o;
    to.hooks = &hooks;
    to.warmup = r->warmup;
    to.iters = r->iters;
    trace_hooks h = {tv, 0};
    gr_pipe_hooks ph = {before_stage, after_stage, NULL, NULL, &h};
    gr_variant_run v;
    memset(&v, 0, sizeof(v));
    gr_pipe pp;
    gr_pipe_init(&pp, p, dev->sm_count, &to, &v);
    pp.label = "traced";
    pp.hooks = &ph;
    gr_status st = gr_pipe_run(&pp, gr_pipe_traced_stages, gr_pipe_traced_nstages, err);
    gr_pipe_free(&pp);
    gr_variant_run_clear(&v);
    return st;
}

static gr_traced_variant *trace_add(gr_trace_result *r) {
    if (r->nv == r->cap) {
        int cap = r->cap ? 2 * r->cap : 8;
        gr_traced_variant *v = realloc(r->v, (size_t)cap * sizeof(*v));
        if (!v) return NULL;
        r->v = v;
        r->cap = cap;
    }
    gr_traced_variant *v = &r->v[r->nv++];
    memset(v, 0, sizeof(*v));
    return v;
}

gr_status gr_trace_run(const gr_run_report *untraced, const gr_run_opts *o, const gr_trace_opts *topt,
                       gr_trace_result *out, gr_error *err) {
    memset(out, 0, sizeof(*out));
    snprintf(out->path, sizeof(out->path), "%s", topt->path);
    out->iters = topt->iters > 0 ? topt->iters : (o->iters < 200 ? o->iters : 200);
    out->warmup = out->iters / 10 < 3 ? 3 : out->iters / 10;
    const gr_device_info *dev = &untraced->dev;
    int any = 0;
    for (int i = 0; i < untraced->nv; i++) any |= untraced->v[i].timed;
    if (!any)
        return gr_error_set(err, GR_ERR_INTERNAL, "--trace", "no variant was timed untraced, so none is traced");
    gr_cupti_config c;
    gr_cupti_config_default(&c);
    c.trace_path = topt->path;
    c.mode = "in-process";
    c.command = topt->command;
    c.tags = 1;
    c.device = dev->name;
    char cc[16];
    snprintf(cc, sizeof(cc), "%d.%d", dev->cc_major, dev->cc_minor);
    c.cc = cc;
    c.runtime_version = dev->runtime_version;
    c.probe_runtime = probe_runtime;
    GR_CUDA(cudaDeviceSynchronize(), err);
    gr_status cst = gr_cupti_start(&c, err);
    if (cst != GR_OK) {
        gr_error_prefix(err, "--trace: ");
        return cst;
    }
    gr_status st = GR_OK;
    for (int i = 0; i < untraced->nv; i++) {
        const gr_variant_run *u = &untraced->v[i];
        if (!u->timed) continue;
        gr_traced_variant *tv = trace_add(out);
        if (!tv) {
            st = gr_error_set(err, GR_ERR_NOMEM, "--trace", "out of host memory");
            break;
        }
        tv->plan = u->plan;
        tv->untraced_eager_us = u->eager.step_us.median;
        tv->untraced_graph_us = u->graph_t.step_us.median;
        tv->kernels = gr_variant_kernels(u);
        gr_error e;
        gr_error_clear(&e);
        tv->status = trace_variant(u, i, dev, o, out, tv, &e);
        tv->done = tv->status == GR_OK;
        if (tv->status != GR_OK) {
            snprintf(tv->error, sizeof(tv->error), "%s", e.msg);
            gr_error_set(err, tv->status, "--trace", "variant %s: %s", u->plan->variant, e.msg);
            if (st == GR_OK) st = tv->status;
            if (tv->status == GR_ERR_CUDA) break;
        }
    }
    cudaError_t rc = cudaDeviceSynchronize();
    if (rc != cudaSuccess && st == GR_OK) st = gr_cuda_fail(rc, "cudaDeviceSynchronize", __FILE__, __LINE__, err);
    gr_error se;
    gr_error_clear(&se);
    gr_status sst = gr_cupti_stop(st == GR_OK ? "graphrun traced run complete" : "graphrun traced run failed", 1,
                                  &out->cupti, &se);
    if (sst != GR_OK) {
        gr_error_set(err, sst, "--trace", "%s", se.msg);
        if (st == GR_OK) st = sst;
    }
    if (st != GR_OK) return st;
    st = gr_trace_load(out->path, 0, &out->trace, err);
    if (st == GR_OK) {
        gr_ls_opts lo;
        gr_ls_opts_default(&lo);
        st = gr_ls_analyze(out->trace, &lo, &out->analysis, err);
    }
    if (st == GR_OK) { /* what the eager trace alone predicts a graph gives, checked right here */
        gr_pred_opts po;
        gr_pred_opts_default(&po);
        st = gr_pred_run(out->analysis, &po, &out->prediction, err);
    }
    if (st != GR_OK) gr_error_prefix(err, "reading back the trace: ");
    return st;
}

void gr_trace_result_free(gr_trace_result *r) {
    if (!r) return;
    gr_pred_report_destroy(r->prediction);
    r->prediction = NULL;
    gr_ls_report_destroy(r->analysis);
    gr_trace_destroy(r->trace);
    free(r->v);
    r->v = NULL;
    r->nv = r->cap = 0;
    r->analysis = NULL;
    r->trace = NULL;
}

void gr_trace_print(FILE *f, const gr_trace_result *r) {
    fprintf(f, "\ntraced run (CUPTI activity tracing on, in this process; %d steps per mode after %d warm-up "
               "steps): trace %s, %llu records, %llu dropped, %.1f MB\n",
            r->iters, r->warmup, r->path, (unsigned long long)r->cupti.records, (unsigned long long)r->cupti.dropped,
            (double)r->cupti.bytes / 1e6);
    if (r->cupti.dropped)
        fprintf(f, "  WARNING: CUPTI dropped %llu records; traced counts and gaps are incomplete\n",
                (unsigned long long)r->cupti.dropped);
    if (r->trace && r->trace->dropped_detail[0])
        fprintf(f, "  dropped records reported: %s\n", r->trace->dropped_detail);
    if (r->trace) fprintf(f, "  API records: %s\n", r->trace->apis);
    if (r->analysis) {
        gr_ls_warning w[8];
        size_t nw = gr_ls_warnings(r->analysis, w, 8);
        for (size_t i = 0; i < nw && i < 8; i++)
            fprintf(f, "  WARNING: %s\n", w[i].msg);
    }
    fprintf(f, "  %-16s %7s %20s %20s %10s %20s %20s %10s\n", "variant", "kernels", "eager us untraced",
            "eager us traced", "inflation", "graph us untraced", "graph us traced", "inflation");
    for (int i = 0; i < r->nv; i++) {
        const gr_traced_variant *v = &r->v[i];
        if (!v->done) {
            fprintf(f, "  %-16s not traced: %s\n", v->plan->variant, v->error);
            continue;
        }
        double e = v->eager.step_us.median, g = v->graph.step_us.median;
        fprintf(f, "  %-16s %7d %20.2f %20.2f %9.2fx %20.2f %20.2f %9.2fx\n", v->plan->variant, v->kernels,
                v->untraced_eager_us, e, v->untraced_eager_us > 0 ? e / v->untraced_eager_us : 0.0,
                v->untraced_graph_us, g, v->untraced_graph_us > 0 ? g / v->untraced_graph_us : 0.0);
    }
    fprintf(f, "  (us per step, median over batches, CUDA events on the main stream in both runs; inflation = "
               "traced / untraced. The untraced numbers above are graphrun's measurement; the traced ones only "
               "show what tracing costs)\n");
    if (!r->analysis) return;
    gr_ls_print_regions(f, r->analysis);
    const gr_ls_scope *e[32], *g[32];
    size_t np = gr_ls_mode_pairs(r->analysis, e, g, 32);
    for (size_t i = 0; i < np; i++) {
        fprintf(f, "\n");
        gr_ls_print_compare(f, e[i]->name, e[i], g[i]->name, g[i]);
    }
    if (r->prediction) {
        fprintf(f, "\n");
        gr_pred_print(f, r->prediction);
    }
    fprintf(f, "\nfull traced report: cupti-launchstat report %s\n", r->path);
}

void *gr_trace_json(const gr_trace_result *r) {
    json_t *j = json_object();
    json_object_set_new(j, "path", json_string(r->path));
    json_object_set_new(j, "traced", json_true());
    json_object_set_new(j, "note", json_string(gr_ls_inflation_note));
    json_object_set_new(j, "steps_per_mode", json_integer(r->iters));
    json_object_set_new(j, "warmup", json_integer(r->warmup));
    json_object_set_new(j, "records", json_integer((json_int_t)r->cupti.records));
    json_object_set_new(j, "dropped", json_integer((json_int_t)r->cupti.dropped));
    json_object_set_new(j, "bytes", json_integer((json_int_t)r->cupti.bytes));
    json_t *vs = json_array();
    for (int i = 0; i < r->nv; i++) {
        const gr_traced_variant *v = &r->v[i];
        json_t *jv = json_object();
        json_object_set_new(jv, "variant", json_string(v->plan->variant));
        json_object_set_new(jv, "status", json_string(gr_status_name((gr_status)v->status)));
        if (v->error[0]) json_object_set_new(jv, "error", json_string(v->error));
        if (v->done) {
            double e = v->eager.step_us.median, g = v->graph.step_us.median;
            json_object_set_new(jv, "kernels_per_step", json_integer(v->kernels));
            json_object_set_new(jv, "eager_untraced_us", json_real(v->untraced_eager_us));
            json_object_set_new(jv, "eager_traced_us", json_real(e));
            json_object_set_new(jv, "eager_inflation", json_real(v->untraced_eager_us > 0 ? e / v->untraced_eager_us : 0));
            json_object_set_new(jv, "graph_untraced_us", json_real(v->untraced_graph_us));
            json_object_set_new(jv, "graph_traced_us", json_real(g));
            json_object_set_new(jv, "graph_inflation", json_real(v->untraced_graph_us > 0 ? g / v->untraced_graph_us : 0));
        }
        json_array_append_new(vs, jv);
    }
    json_object_set_new(j, "variants", vs);
    if (r->analysis) json_object_set_new(j, "analysis", (json_t *)gr_ls_json(r->analysis));
    if (r->prediction) json_object_set_new(j, "prediction", (json_t *)gr_pred_json(r->prediction));
    return j;
}
