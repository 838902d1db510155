/* `graphrun run`'s capture check and piecewise run (replay/capcheck.h): the checked full
 * capture, the decision, the piecewise run verified and timed, the fixed plan, and their report
 * sections (text and JSON). */
#include "replay/capcheck.h"

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"
#include "kernels/breakers.h"
#include "replay/run.h"
#include "replay/session.h"

void gr_cc_findings_set(gr_cc_findings *out, const gr_capcheck_result *r) {
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < r->n; i++) {
        const gr_finding *f = &r->f[i];
        if (out->n < GR_CC_MAX_FINDINGS) out->f[out->n++] = *f;
        out->blocking += gr_finding_blocks(f);
        out->errors += f->sev == GR_FS_ERROR;
        out->consequences += f->sev == GR_FS_CONSEQUENCE;
        out->escapes += f->sev == GR_FS_ESCAPE;
        out->hazards += f->sev == GR_FS_HAZARD;
    }
    out->total = r->total;
    out->captures = r->captures;
    out->captures_ok = r->captures_ok;
    out->captures_failed = r->captures_failed;
    out->calls = r->calls;
    out->dropped = r->dropped;
    out->deliberate = r->deliberate;
    out->unconfirmed = r->unconfirmed;
}

void gr_capcheck_record_path(const char *base, const char *variant, int nplans, char *out,
                             size_t size) {
    if (nplans <= 1) {
        snprintf(out, size, "%s", base);
        return;
    }
    const char *slash = strrchr(base, '/');
    const char *dot = strrchr(base, '.');
    if (dot && (!slash || dot > slash + 1))
        snprintf(out, size, "%.*s.%s%s", (int)(dot - base), base, variant, dot);
    else
        snprintf(out, size, "%s.%s", base, variant);
}

static void add_check(gr_session *s, gr_check c) {
    gr_checks_add(&s->checks, &c);
}

typedef struct pw_ctx {
    const gr_piecewise *pw;
    gr_session *s;
    const gr_exec_hooks *hooks;
} pw_ctx;

static gr_status pw_step(void *user, gr_error *err) {
    pw_ctx *c = user;
    return gr_piecewise_step(c->pw, c->s->plan, c->s->dev, c->hooks, err);
}


/* The first blocking finding, on one line, for error messages. */
static void first_blocking(const gr_cc_findings *cf, char *out, size_t size) {
    snprintf(out, size, "no finding names the cause");
    for (int i = 0; i < cf->n; i++)
        if (gr_finding_blocks(&cf->f[i])) {
            gr_finding_str(&cf->f[i], out, size);
            return;
        }
}

/* Breaking ops replaced by their clean counterparts: captured (checked), verified, timed. */
static gr_status run_fixed(gr_session *s, const gr_run_opts *o, const gr_piecewise *pw,
                           gr_capcheck_variant *cv, gr_error *err) {
    const gr_plan *p = s->plan;
    int *ops = calloc((size_t)p->nops + 1, sizeof(int));
    if (!ops) return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    int n = 0;
    for (int k = 0; k < pw->nseg; k++)
        if (!pw->seg[k].graph)
            for (int i = pw->seg[k].begin; i < pw->seg[k].end; i++)
                ops[n++] = i;
    gr_plan *fp = NULL;
    int nfixed = 0;
    gr_status st = gr_breaker_fix_plan(p, ops, n, &fp, &nfixed, err);
    free(ops);
    if (st != GR_OK) return st;
    if (nfixed == 0) {
        gr_plan_destroy(fp);
        return GR_OK;
    }
    cv->fixed = 1;
    cv->fixed_ops = nfixed;
    gr_session *fs = NULL;
    st = gr_session_create(fp, s->dev->sm_count, &fs, err);
    if (st == GR_OK) {
        fs->dev->pdl = s->dev->pdl;
        fs->ref_plan = s->ref_plan;
        fs->steps = s->steps;
        if (s->ref) st = gr_session_reference(fs, err);
    }
    if (st == GR_OK) st = gr_session_verify_eager(fs, err);
    gr_checked_capture cc;
    memset(&cc, 0, sizeof(cc));
    if (st == GR_OK) {
        int avail = 0;
        char why[512];
        st = gr_capture_checker_open(&avail, why, sizeof(why), err);
        if (st == GR_OK)
            st = gr_capture_checked(fp, fs->dev, 0, fp->nops, o->mode, o->hooks, &fs->graph, &cc,
                                    err);
        gr_status cst = gr_capture_checker_close(err);
        if (st == GR_OK) st = cst;
    }
    if (st == GR_OK) {
        cv->fixed_blocking = gr_capcheck_blocking(&cc.result);
        if (cc.capture_status != GR_OK || cv->fixed_blocking) {
            snprintf(cv->fixed_error, sizeof(cv->fixed_error),
                     "the fixed plan still breaks capture: %s",
                     cc.capture_status != GR_OK ? cc.capture_error : "work escaped the capture");
            gr_graph_destroy(&fs->graph);
        } else {
            fs->captured = 1;
            st = gr_session_verify_graph(fs, err);
            for (int i = 0; i < fs->checks.n && st == GR_OK; i++) {
                gr_check c = fs->checks.v[i];
                if (strncmp(c.what, "graph", 5) != 0) continue;
                char what[sizeof(c.what)];
                snprintf(what, sizeof(what), "fixed %.24s", c.what);
                snprintf(c.what, sizeof(c.what), "%s", what);
                add_check(s, c);
            }
            cv->fixed_verified = st == GR_OK && fs->checks.verified;
            if (st == GR_OK && fs->checks.verified) {
                gr_time_opts t = gr_run_opts_time(o);
                t.label = "fixed plan graph";
                st = gr_session_time_graph(fs, &t, &cv->fixed_t, err);
                cv->fixed_timed = st == GR_OK;
            }
        }
    }
    if (st != GR_OK && !cv->fixed_error[0])
        snprintf(cv->fixed_error, sizeof(cv->fixed_error), "%s", err->msg);
    gr_checked_capture_free(&cc);
    gr_session_destroy(fs);
    gr_plan_destroy(fp);
    return st;
}

gr_status gr_capcheck_run_variant(gr_session *s, const gr_run_opts *o, int nplans,
                                  gr_capcheck_variant *cv, int *piecewise, gr_error *err) {
    memset(cv, 0, sizeof(*cv));
    *piecewise = 0;
    cv->mode = (int)o->mode;
    const gr_plan *p = s->plan;
    if (o->no_capture_check) return GR_OK;
    cv->attempted = 1;
    int avail = 0;
    GR_TRY(gr_capture_checker_open(&avail, cv->why, sizeof(cv->why), err));
    if (!avail) {
        if (o->piecewise == GR_PW_ON)
            return gr_error_set(
                err, GR_ERR_CUDA, "--piecewise",
                "piecewise capture needs the capture checker, which cannot run here: %s", cv->why);
        return GR_OK; /* the plain capture follows; the report says it was not checked */
    }
    gr_checked_capture cc;
    gr_graph g;
    gr_status st = gr_capture_checked(p, s->dev, 0, p->nops, o->mode, o->hooks, &g, &cc, err);
    /* the graph is not kept: the plain capture after this gives the capture times the report
     * shows, without callbacks in them */
    gr_graph_destroy(&g);
    if (st == GR_OK && cc.capture_status != GR_OK && cc.capture_status != GR_ERR_CAPTURE)
        st = gr_error_set(err, cc.capture_status, NULL, "%s", cc.capture_error);
    if (st != GR_OK) {
        gr_checked_capture_free(&cc);
        gr_capture_checker_close(err);
        return st;
    }
    cv->checked = 1;
    gr_cc_findings_set(&cv->full, &cc.result);
    cv->full_failed = cc.capture_status != GR_OK;
    cv->full_blocked = cv->full_failed || cv->full.blocking > 0;
    snprintf(cv->full_error, sizeof(cv->full_error), "%s", cc.capture_error);
    if (o->capture_record) {
        gr_capcheck_record_path(o->capture_record, p->variant, nplans, cv->recorded,
                                sizeof(cv->recorded));
        snprintf(cc.events.hdr.note, sizeof(cc.events.hdr.note),
                 "workload %s variant %s params %s capture mode %s", p->workload, p->variant,
                 p->params, gr_capture_mode_name(o->mode));
        st = gr_capev_save(cv->recorded, &cc.events, err);
        if (st != GR_OK) cv->recorded[0] = '\0';
    }
    int want = o->piecewise == GR_PW_ON || (o->piecewise == GR_PW_AUTO && cv->full_blocked);
    int *cul = calloc((size_t)p->nops + 1, sizeof(int));
    int ncul =
        cul ? gr_capcheck_culprit_ops(&cc.result, o->piecewise == GR_PW_ON, cul, p->nops) : 0;
    gr_checked_capture_free(&cc);
    if (st == GR_OK && !cul) st = gr_error_set(err, GR_ERR_NOMEM, NULL, "out of host memory");
    if (st != GR_OK || !want) {
        gr_status cst = gr_capture_checker_close(err);
        free(cul);
        if (st != GR_OK) return st;
        if (cst != GR_OK) return cst;
        if (cv->full_blocked) {
            char first[1400];
            first_blocking(&cv->full, first, sizeof(first));
            return gr_error_set(
                err, GR_ERR_CAPTURE, NULL,
                "the %s capture %s: %s (--no-piecewise; without it graphrun captures the other ops "
                "piecewise and runs these eagerly between the graphs)",
                gr_capture_mode_name(o->mode), cv->full_failed ? "failed" : "lets work escape",
                first);
        }
        return GR_OK;
    }
    if (cv->full_failed && ncul == 0) {
        char first[1400];
        first_blocking(&cv->full, first, sizeof(first));
        gr_capture_checker_close(err);
        free(cul);
        return gr_error_set(
            err, GR_ERR_CAPTURE, NULL,
            "the %s capture failed and the capture checker names no op to run eagerly (%s): %s",
            gr_capture_mode_name(o->mode), first, cv->full_error);
    }
    *piecewise = 1;
    cv->piecewise = 1;
    gr_piecewise pw;
    st = gr_piecewise_build(p, s->dev, o->mode, o->hooks, cul, ncul, o->piecewise == GR_PW_ON, &pw,
                            err);
    free(cul);
    gr_status cst = gr_capture_checker_close(err);
    if (st != GR_OK) return st;
    if (cst != GR_OK) {
        gr_piecewise_destroy(&pw);
        return cst;
    }
    gr_piecewise_str(&pw, p, cv->pw_desc, sizeof(cv->pw_desc));
    cv->pw_segments = pw.nseg;
    cv->pw_graphs = pw.graphs;
    cv->pw_eager_ops = pw.eager_ops;
    cv->pw_captures = pw.captures;
    cv->pw_rounds = pw.rounds;
    gr_cc_findings_set(&cv->pw, &pw.findings);
    /* verified like any run: outputs poisoned, one step, compared */
    pw_ctx pc = {&pw, s, o->hooks};
    st = gr_devstate_init_buffers(s->dev, err);
    if (st == GR_OK) st = pw_step(&pc, err);
    if (st == GR_OK) {
        cudaError_t rc = cudaDeviceSynchronize();
        if (rc != cudaSuccess)
            st = gr_cuda_fail(rc, "cudaDeviceSynchronize", __FILE__, __LINE__, err);
    }
    if (st == GR_OK) st = gr_session_check_outputs(s, "piecewise", NULL, err);
    cv->pw_verified = st == GR_OK && s->checks.verified;
    if (st == GR_OK && s->checks.verified) {
        gr_time_opts t = gr_run_opts_time(o);
        char label[96];
        snprintf(label, sizeof(label), "%s eager", p->variant);
        t.label = label;
        st = gr_session_time_eager(s, &t, o->hooks, &cv->eager, err);
        if (st == GR_OK) {
            snprintf(label, sizeof(label), "%s piecewise", p->variant);
            st = gr_time_steps(pw_step, &pc, s->dev->streams[0], &t, &cv->pw_t, err);
        }
        cv->pw_timed = st == GR_OK;
    }
    if (st == GR_OK && s->checks.verified) st = run_fixed(s, o, &pw, cv, err);
    gr_piecewise_destroy(&pw);
    return st;
}

/* ---- report ---- */

static void timing_str(const gr_timing *t, char *out, size_t size) {
    snprintf(out, size, "%.2f [%.2f, %.2f]", t->step_us.median, t->step_us.p10, t->step_us.p90);
}

static void print_findings(FILE *f, const gr_cc_findings *cf, const char *indent) {
    char line[1400];
    for (int i = 0; i < cf->n; i++) {
        gr_finding_str(&cf->f[i], line, sizeof(line));
        fprintf(f, "%s[%s] %s\n", indent, gr_find_sev_name(cf->f[i].sev), line);
    }
    if (cf->total > (size_t)cf->n)
        fprintf(f, "%s(%zu more findings in the JSON report's counts)\n", indent,
                cf->total - (size_t)cf->n);
    if (cf->dropped)
        fprintf(f, "%swarning: the recorder dropped %llu calls; findings may be missing\n", indent,
                (unsigned long long)cf->dropped);
    if (cf->unconfirmed)
        fprintf(f,
                "%swarning: %zu launch escape%s contradicted by the captured graph and not counted "
                "(the checker "
                "misread a stream: please report it with the recording)\n",
                indent, cf->unconfirmed, cf->unconfirmed == 1 ? " was" : "s were");
    if (cf->deliberate)
        fprintf(f,
                "%s(%zu allocation%s made in sections the program deliberately switched to relaxed "
                "mode not flagged)\n",
                indent, cf->deliberate, cf->deliberate == 1 ? "" : "s");
}

void gr_capcheck_report_text(FILE *f, const gr_run_report *r) {
    int any = 0, any_pw = 0;
    for (int i = 0; i < r->nv; i++) {
        any |= r->v[i].cc.attempted;
        any_pw |= r->v[i].cc.piecewise;
    }
    if (!any) return;
    fprintf(f,
            "\ncapture check (CUPTI callbacks on every runtime and driver API call while a stream "
            "captures; "
            "%s mode)\n",
            gr_capture_mode_name(r->opts.mode));
    for (int i = 0; i < r->nv; i++) {
        const gr_variant_run *v = &r->v[i];
        const gr_capcheck_variant *cv = &v->cc;
        if (!cv->attempted) continue;
        const char *name = v->plan->variant;
        if (!cv->checked) {
            fprintf(f, "  %-16s not checked: %s\n", name,
                    cv->why[0] ? cv->why : "the run stopped before the capture");
            continue;
        }
        const gr_cc_findings *cf = &cv->full;
        if (cf->total == 0) {
            fprintf(f, "  %-16s no findings (%zu calls checked while capturing)\n", name,
                    cf->calls);
        } else {
            fprintf(f, "  %-16s %s: %d error%s, %d consequence%s, %d escape%s, %d hazard%s\n", name,
                    cv->full_failed    ? "the capture failed"
                    : cv->full_blocked ? "work escaped the capture: its graph is incomplete"
                                       : "the capture is usable; hazards flagged",
                    cf->errors, cf->errors == 1 ? "" : "s", cf->consequences,
                    cf->consequences == 1 ? "" : "s", cf->escapes, cf->escapes == 1 ? "" : "s",
                    cf->hazards, cf->hazards == 1 ? "" : "s");
            print_findings(f, cf, "    ");
        }
        if (cv->recorded[0]) fprintf(f, "  %-16s recording written to %s\n", "", cv->recorded);
    }
    if (!any_pw) return;
    fprintf(f, "\npiecewise capture (capturable segments replayed as graphs, breaking ops run "
               "eagerly between them; "
               "per step: CUDA events, median [p10, p90] over batches, untraced)\n");
    fprintf(f, "  %-16s %26s %26s %8s %26s %8s\n", "variant", "full eager us/step",
            "piecewise us/step", "speedup", "fixed: full graph us/step", "speedup");
    for (int i = 0; i < r->nv; i++) {
        const gr_variant_run *v = &r->v[i];
        const gr_capcheck_variant *cv = &v->cc;
        if (!cv->piecewise) continue;
        char e[48] = "-", pws[48] = "-", fx[48] = "-", sp[16] = "-", fsp[16] = "-";
        if (cv->pw_timed) {
            timing_str(&cv->eager, e, sizeof(e));
            timing_str(&cv->pw_t, pws, sizeof(pws));
            if (cv->pw_t.step_us.median > 0)
                snprintf(sp, sizeof(sp), "%.2fx",
                         cv->eager.step_us.median / cv->pw_t.step_us.median);
        }
        if (cv->fixed_timed) {
            timing_str(&cv->fixed_t, fx, sizeof(fx));
            if (cv->fixed_t.step_us.median > 0 && cv->pw_timed)
                snprintf(fsp, sizeof(fsp), "%.2fx",
                         cv->eager.step_us.median / cv->fixed_t.step_us.median);
        }
        fprintf(f, "  %-16s %26s %26s %8s %26s %8s\n", v->plan->variant, e, pws, sp, fx, fsp);
        fprintf(f, "  %-16s %s (%d checked capture%s, %d round%s); %s\n", "", cv->pw_desc,
                cv->pw_captures, cv->pw_captures == 1 ? "" : "s", cv->pw_rounds,
                cv->pw_rounds == 1 ? "" : "s",
                cv->pw_verified ? "outputs verified" : "outputs NOT verified");
        if (cv->fixed)
            fprintf(f, "  %-16s fixed: %d op%s replaced by %s clean counterpart%s%s%s\n", "",
                    cv->fixed_ops, cv->fixed_ops == 1 ? "" : "s",
                    cv->fixed_ops == 1 ? "its" : "their", cv->fixed_verified ? ", verified" : "",
                    cv->fixed_error[0] ? ": " : "", cv->fixed_error);
        else
            fprintf(f,
                    "  %-16s fixed: no clean counterpart known for the eager ops (capture_breaker "
                    "ops have one)\n",
                    "");
        if (cv->pw.total) {
            fprintf(f, "  %-16s segment captures that still broke:\n", "");
            print_findings(f, &cv->pw, "    ");
        }
    }
    fprintf(f,
            "  (speedup = full eager / piecewise, and full eager / the fixed plan's full graph)\n");
}

static json_t *summary_json(const gr_summary *s) {
    return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I}", "median", s->median, "p10", s->p10,
                     "p90", s->p90, "min", s->min, "max", s->max, "mean", s->mean, "stddev",
                     s->stddev, "n", (json_int_t)s->n);
}

static json_t *timing_json(const gr_timing *t) {
    return json_pack("{s:o, s:o, s:i, s:i, s:i, s:s}", "step_us", summary_json(&t->step_us),
                     "submit_us", summary_json(&t->submit_us), "batches", t->batches,
                     "steps_per_batch", t->steps_per_batch, "warmup", t->warmup, "method",
                     "CUDA events per batch on the main stream, untraced; submit: host clock");
}

static json_t *findings_json(const gr_cc_findings *cf) {
    gr_capcheck_result view;
    memset(&view, 0, sizeof(view));
    view.f = (gr_finding *)cf->f;
    view.n = view.cap = (size_t)cf->n;
    view.total = cf->total;
    view.calls = cf->calls;
    view.captures = cf->captures;
    view.captures_ok = cf->captures_ok;
    view.captures_failed = cf->captures_failed;
    view.dropped = cf->dropped;
    view.deliberate = cf->deliberate;
    view.unconfirmed = cf->unconfirmed;
    json_t *j = gr_capcheck_json(&view);
    json_object_set_new(j, "blocking", json_integer((json_int_t)cf->blocking));
    json_object_set_new(j, "counts",
                        json_pack("{s:i, s:i, s:i, s:i}", "error", cf->errors, "consequence",
                                  cf->consequences, "escape", cf->escapes, "hazard", cf->hazards));
    return j;
}

void *gr_capcheck_variant_json(const gr_capcheck_variant *cv) {
    json_t *j = findings_json(&cv->full);
    json_object_set_new(j, "checked", json_boolean(cv->checked));
    if (!cv->checked) json_object_set_new(j, "why", json_string(cv->why));
    json_object_set_new(j, "capture_mode",
                        json_string(gr_capture_mode_name((gr_capture_mode)cv->mode)));
    json_object_set_new(j, "full_capture",
                        json_string(!cv->checked       ? "unchecked"
                                    : cv->full_failed  ? "failed"
                                    : cv->full_blocked ? "escaped"
                                                       : "ok"));
    if (cv->full_error[0]) json_object_set_new(j, "capture_error", json_string(cv->full_error));
    if (cv->recorded[0]) json_object_set_new(j, "recorded", json_string(cv->recorded));
    if (cv->piecewise) {
        json_t *pw = json_object();
        json_object_set_new(pw, "description", json_string(cv->pw_desc));
        json_object_set_new(pw, "segments", json_integer(cv->pw_segments));
        json_object_set_new(pw, "graphs", json_integer(cv->pw_graphs));
        json_object_set_new(pw, "eager_ops", json_integer(cv->pw_eager_ops));
        json_object_set_new(pw, "captures", json_integer(cv->pw_captures));
        json_object_set_new(pw, "rounds", json_integer(cv->pw_rounds));
        json_object_set_new(pw, "verified", json_boolean(cv->pw_verified));
        json_object_set_new(pw, "segment_findings", findings_json(&cv->pw));
        if (cv->pw_timed) {
            json_object_set_new(pw, "eager", timing_json(&cv->eager));
            json_object_set_new(pw, "piecewise", timing_json(&cv->pw_t));
            if (cv->pw_t.step_us.median > 0)
                json_object_set_new(pw, "speedup",
                                    json_real(cv->eager.step_us.median / cv->pw_t.step_us.median));
        }
        if (cv->fixed) {
            json_t *fx = json_object();
            json_object_set_new(fx, "ops_replaced", json_integer(cv->fixed_ops));
            json_object_set_new(fx, "verified", json_boolean(cv->fixed_verified));
            json_object_set_new(fx, "blocking_findings",
                                json_integer((json_int_t)cv->fixed_blocking));
            if (cv->fixed_error[0]) json_object_set_new(fx, "error", json_string(cv->fixed_error));
            if (cv->fixed_timed) {
                json_object_set_new(fx, "graph", timing_json(&cv->fixed_t));
                if (cv->pw_timed && cv->fixed_t.step_us.median > 0)
                    json_object_set_new(
                        fx, "speedup_vs_eager",
                        json_real(cv->eager.step_us.median / cv->fixed_t.step_us.median));
            }
            json_object_set_new(pw, "fixed", fx);
        }
        json_object_set_new(j, "piecewise", pw);
    }
    return j;
}
