/* The HTML report: step picking and gap histograms from the timeline model, then one file of
 * HTML with inline CSS and SVG (no scripts, no external resources). Layout constants are in
 * CSS pixels; times are drawn on one scale per figure so the two modes compare directly. */
#include "cupti_tools/html.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/plan_print.h"
#include "cupti_tools/report.h"

#define US(ns) ((double)(ns) / 1000.0)

const double gr_html_gap_edges[GR_HTML_GAP_BINS] = {0, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64, 128};

/* ---- steps ---- */

static const gr_trace *cmp_tr;
static int cmp_gpu_start(const void *x, const void *y) {
    const gr_tr_gpu *a = &cmp_tr->gpu.v[*(const size_t *)x],
                    *b = &cmp_tr->gpu.v[*(const size_t *)y];
    if (a->s != b->s) return a->s < b->s ? -1 : 1;
    if (a->e != b->e) return a->e < b->e ? -1 : 1;
    return (*(const size_t *)x > *(const size_t *)y) - (*(const size_t *)x < *(const size_t *)y);
}

static int is_graph_op(const gr_tr_gpu *g) {
    return g->graph != 0 || g->node != 0;
}

void gr_html_step_free(gr_html_step *s) {
    if (!s) return;
    free(s->gpu);
    s->gpu = NULL;
    s->ngpu = 0;
}

static int cmp_i64(const void *x, const void *y) {
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

gr_status gr_html_pick_step(const gr_timeline *tl, int proc, gr_html_step *out, gr_error *err) {
    memset(out, 0, sizeof(*out));
    out->per_launch = 1;
    const gr_trace *t = tl->tr;
    if (proc < 0 || (size_t)proc >= tl->nprocs) {
        snprintf(out->why, sizeof(out->why), "no such run");
        return GR_OK;
    }
    const gr_tl_proc *p = &tl->procs[proc];
    size_t *ops = malloc((t->gpu.n + 1) * sizeof(size_t));
    size_t *b = malloc((t->gpu.n + 2) * sizeof(size_t));
    if (!ops || !b) {
        free(ops);
        free(b);
        return gr_error_set(err, GR_ERR_NOMEM, t->path, "out of host memory picking a step");
    }
    size_t n = 0, nk = 0, ngk = 0, ntag = 0;
    for (size_t i = 0; i < t->gpu.n; i++)
        if (tl->gpu_proc[i] == proc) {
            ops[n++] = i;
            const gr_tr_gpu *g = &t->gpu.v[i];
            if (g->kind == GR_GPU_KERNEL) {
                nk++;
                if (is_graph_op(g)) ngk++;
                if (tl->gpu_op[i] >= 0) ntag++;
            }
        }
    if (n == 0) {
        snprintf(out->why, sizeof(out->why), "no GPU work was recorded in this run");
        free(ops);
        free(b);
        return GR_OK;
    }
    cmp_tr = t;
    qsort(ops, n, sizeof(size_t), cmp_gpu_start);
    size_t nb = 0, limit = n; /* step k holds ops [b[k], b[k+1]) (the last: up to limit) */
    int64_t steps = p->steps;
    if (ngk * 2 > nk) {
        out->graph = 1;
        uint32_t prev = 0;
        int have = 0;
        for (size_t k = 0; k < n; k++) {
            const gr_tr_gpu *g = &t->gpu.v[ops[k]];
            if (!is_graph_op(g)) continue;
            if (!have || g->corr != prev) b[nb++] = k;
            prev = g->corr;
            have = 1;
        }
        if (steps > 0 && (int64_t)nb > 0 && steps % (int64_t)nb == 0 && steps / (int64_t)nb > 1)
            out->per_launch = (int)(steps / (int64_t)nb);
        snprintf(out->why, sizeof(out->why), "steps are graph launches (%zu in the run)", nb);
    } else if (steps > 0 && n % (size_t)steps == 0) {
        size_t per = n / (size_t)steps;
        for (size_t k = 0; k < n; k += per)
            b[nb++] = k;
        snprintf(out->why, sizeof(out->why), "%zu GPU ops per step (%zu over %lld steps)", per, n,
                 (long long)steps);
    } else if (nk > 0 && ntag * 10 >= nk * 9) {
        int last = -1;
        for (size_t k = 0; k < n; k++) {
            const gr_tr_op *op = gr_tl_gpu_op(tl, ops[k]);
            if (!op) continue;
            if (nb == 0 || op->index <= last) b[nb++] = k;
            last = op->index;
        }
        snprintf(out->why, sizeof(out->why), "steps found from the ops' order (op tags)");
    } else if (steps > 0 && n >= (size_t)steps) {
        size_t per = n / (size_t)steps;
        for (int64_t k = 0; k < steps; k++)
            b[nb++] = (size_t)k * per;
        limit = (size_t)steps * per;
        snprintf(out->why, sizeof(out->why),
                 "about %zu GPU ops per step (%zu ops do not divide into %lld steps)", per, n,
                 (long long)steps);
    } else {
        size_t w = n < 50 ? n : 50, at = n / 2 > w / 2 ? n / 2 - w / 2 : 0;
        if (at + w > n) at = n - w;
        b[nb++] = at;
        limit = at + w;
        snprintf(out->why, sizeof(out->why),
                 "the run's steps are unknown (give --steps): %zu GPU ops from its middle", w);
    }
    if (nb == 0) {
        snprintf(out->why, sizeof(out->why), "no steps found in this run");
        free(ops);
        free(b);
        return GR_OK;
    }
    b[nb] = limit;
    /* a median-length step from the second half (warm-up is over there) */
    size_t pick = 0;
    if (nb >= 3) {
        size_t lo = nb / 2, hi = nb - 1; /* candidates [lo, hi): each has a next step */
        int64_t *len = malloc((hi - lo + 1) * sizeof(int64_t) * 2);
        if (!len) {
            free(ops);
            free(b);
            return gr_error_set(err, GR_ERR_NOMEM, t->path, "out of host memory picking a step");
        }
        for (size_t k = lo; k < hi; k++) {
            len[2 * (k - lo)] = t->gpu.v[ops[b[k + 1]]].s - t->gpu.v[ops[b[k]]].s;
            len[2 * (k - lo) + 1] = (int64_t)k;
        }
        /* sort (length, index) pairs by length */
        size_t m = hi - lo;
        for (size_t x = 1; x < m; x++)
            for (size_t y = x; y > 0 && cmp_i64(&len[2 * (y - 1)], &len[2 * y]) > 0; y--) {
                int64_t a0 = len[2 * y], a1 = len[2 * y + 1];
                len[2 * y] = len[2 * (y - 1)];
                len[2 * y + 1] = len[2 * (y - 1) + 1];
                len[2 * (y - 1)] = a0;
                len[2 * (y - 1) + 1] = a1;
            }
        pick = (size_t)len[2 * (m / 2) + 1];
        free(len);
    }
    size_t first = b[pick], end = b[pick + 1];
    if (first >= end) end = first + 1;
    out->gpu = malloc((end - first) * sizeof(size_t));
    if (!out->gpu) {
        free(ops);
        free(b);
        return gr_error_set(err, GR_ERR_NOMEM, t->path, "out of host memory picking a step");
    }
    int64_t s = t->gpu.v[ops[first]].s, maxe = s;
    for (size_t k = first; k < end; k++) {
        const gr_tr_gpu *g = &t->gpu.v[ops[k]];
        out->gpu[out->ngpu++] = ops[k];
        if (g->kind == GR_GPU_KERNEL) out->kernels++;
        if (g->e > maxe) maxe = g->e;
    }
    int64_t e = end < limit ? t->gpu.v[ops[end]].s : maxe;
    if (maxe > e) e = maxe;
    out->ok = 1;
    out->index = (int64_t)pick + 1;
    out->count = (int64_t)nb;
    out->s = s;
    out->e = e;
    out->span_us = US(e - s);
    /* busy: union of the step's intervals; holes in it (and before the next step) are idle gaps */
    int64_t cs = s, ce = s;
    double busy = 0;
    for (size_t k = 0; k < out->ngpu; k++) {
        const gr_tr_gpu *g = &t->gpu.v[out->gpu[k]];
        if (g->s > ce) {
            busy += US(ce - cs);
            double hole = US(g->s - ce);
            out->ngaps++;
            if (hole > out->max_gap_us) out->max_gap_us = hole;
            cs = g->s;
            ce = g->e;
        } else if (g->e > ce) {
            ce = g->e;
        }
    }
    busy += US(ce - cs);
    if (e > ce) {
        out->ngaps++;
        if (US(e - ce) > out->max_gap_us) out->max_gap_us = US(e - ce);
    }
    out->busy_us = busy;
    out->idle_us = out->span_us - busy > 0 ? out->span_us - busy : 0;
    /* the drawing starts at the launch call of the first op when it is close (one step or less) */
    out->w0 = s;
    int32_t a = tl->gpu_api[ops[first]];
    if (a >= 0) {
        int64_t as = t->api.v[a].s;
        if (as < s && s - as <= (e - s)) out->w0 = as;
    }
    free(ops);
    free(b);
    return GR_OK;
}

typedef struct stream_end {
    uint32_t ctx, stream;
    int64_t e;
} stream_end;

void gr_html_proc_gaps(const gr_timeline *tl, int proc, gr_html_gaps *out) {
    memset(out, 0, sizeof(*out));
    const gr_trace *t = tl->tr;
    size_t n = 0;
    size_t *ops = malloc((t->gpu.n + 1) * sizeof(size_t));
    stream_end *se = NULL;
    size_t nse = 0, cap = 0;
    if (!ops) return;
    for (size_t i = 0; i < t->gpu.n; i++)
        if (tl->gpu_proc[i] == proc) ops[n++] = i;
    cmp_tr = t;
    qsort(ops, n, sizeof(size_t), cmp_gpu_start);
    for (size_t k = 0; k < n; k++) {
        const gr_tr_gpu *g = &t->gpu.v[ops[k]];
        size_t j = 0;
        while (j < nse && (se[j].ctx != g->ctx || se[j].stream != g->stream))
            j++;
        if (j == nse) {
            if (nse == cap) {
                size_t c = cap ? cap * 2 : 8;
                stream_end *p = realloc(se, c * sizeof(*se));
                if (!p) break;
                se = p;
                cap = c;
            }
            se[nse++] = (stream_end){g->ctx, g->stream, g->e};
            continue;
        }
        if (g->kind == GR_GPU_KERNEL) {
            double gap = g->s > se[j].e ? US(g->s - se[j].e) : 0.0;
            int bin = GR_HTML_GAP_BINS - 1;
            while (bin > 0 && gap < gr_html_gap_edges[bin])
                bin--;
            out->count[bin]++;
            out->n++;
            out->total_us += gap;
        }
        if (g->e > se[j].e) se[j].e = g->e;
    }
    free(se);
    free(ops);
}

size_t gr_html_mode_figures(const gr_timeline *tl, gr_html_figure *out, size_t max) {
    size_t n = 0;
    for (size_t i = 0; i < tl->nprocs && n < max; i++) {
        const gr_tl_proc *e = &tl->procs[i];
        if (e->region < 0 || strcmp(e->mode, "eager") != 0) continue;
        for (size_t j = 0; j < tl->nprocs; j++) {
            const gr_tl_proc *g = &tl->procs[j];
            if (g->region < 0 || strcmp(g->mode, "graph") != 0 ||
                strcmp(g->variant, e->variant) != 0)
                continue;
            gr_html_figure *f = &out[n++];
            memset(f, 0, sizeof(*f));
            snprintf(f->title, sizeof(f->title), "%s", e->variant);
            f->side[0] = (gr_html_side){tl, (int)i, "eager"};
            f->side[1] = (gr_html_side){tl, (int)j, "graph replay"};
            f->nsides = 2;
            break;
        }
    }
    return n;
}

/* ---- output ---- */

typedef struct out {
    FILE *f;
    int failed;
} out;

static void put(out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(out *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (vfprintf(o->f, fmt, ap) < 0) o->failed = 1;
    va_end(ap);
}

static void esc(out *o, const char *s) {
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            put(o, "&amp;");
            break;
        case '<':
            put(o, "&lt;");
            break;
        case '>':
            put(o, "&gt;");
            break;
        case '"':
            put(o, "&quot;");
            break;
        case '\'':
            put(o, "&#39;");
            break;
        default:
            if (fputc(*s, o->f) == EOF) o->failed = 1;
        }
    }
}

/* Numbers with the digits their size needs. */
static const char *num(double v) {
    static char bufs[16][32];
    static unsigned next;
    char *b = bufs[next++ % 16];
    double a = fabs(v);
    if (!isfinite(v))
        snprintf(b, 32, "-");
    else if (a == 0)
        snprintf(b, 32, "0");
    else if (a < 10)
        snprintf(b, 32, "%.2f", v);
    else if (a < 1000)
        snprintf(b, 32, "%.1f", v);
    else
        snprintf(b, 32, "%.0f", v);
    return b;
}

/* ---- kernel names and colours ---- */

static const char *const palette[] = {
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#2f6f9f", "#c75b00", "#3b8a3a", "#a83a3c", "#4a9995", "#b59b1c", "#7c5484"};
#define NPAL (sizeof(palette) / sizeof(palette[0]))

typedef struct names {
    int32_t *id; /* trace string index (kernel name) per colour slot */
    const gr_trace **tr;
    size_t n, cap;
} names;

/* Colour slot of a kernel name: the same name gets the same colour across the document. */
static size_t name_slot(names *nm, const gr_trace *t, int32_t id) {
    const char *s = gr_trace_str(t, id);
    for (size_t i = 0; i < nm->n; i++)
        if (!strcmp(gr_trace_str(nm->tr[i], nm->id[i]), s)) return i;
    if (nm->n == nm->cap) {
        size_t c = nm->cap ? nm->cap * 2 : 16;
        int32_t *a = realloc(nm->id, c * sizeof(int32_t));
        if (a) nm->id = a;
        const gr_trace **b = realloc(nm->tr, c * sizeof(*b));
        if (b) nm->tr = b;
        if (!a || !b) return 0;
        nm->cap = c;
    }
    nm->id[nm->n] = id;
    nm->tr[nm->n] = t;
    return nm->n++;
}

static const char *slot_color(size_t slot) {
    return palette[slot % NPAL];
}

/* "void (anonymous namespace)::binary_kernel<float, 0>(float const*, ...)" -> "binary_kernel<float,
 * 0>" */
static const char *short_kernel(const char *raw, char *buf, size_t size) {
    char full[1024];
    gr_ls_kernel_name(raw, 0, full, sizeof(full));
    char *p = full;
    if (!strncmp(p, "void ", 5)) p += 5;
    char tmp[1024];
    size_t o = 0;
    int depth = 0;
    for (const char *q = p; *q && o + 1 < sizeof(tmp); q++) {
        if (!strncmp(q, "(anonymous namespace)::", 23)) {
            q += 22;
            continue;
        }
        if (*q == '<') depth++;
        if (*q == '>') depth--;
        if (*q == '(' && depth == 0 && o > 0) break; /* the parameter list */
        tmp[o++] = *q;
    }
    tmp[o] = '\0';
    /* drop leading namespaces outside template arguments: at::native::foo<...> -> foo<...> */
    const char *start = tmp;
    depth = 0;
    for (const char *q = tmp; *q; q++) {
        if (*q == '<')
            depth++;
        else if (*q == '>')
            depth--;
        else if (depth == 0 && q[0] == ':' && q[1] == ':')
            start = q + 2;
    }
    size_t n = strlen(start);
    if (n > 64)
        snprintf(buf, size, "%.61s...", start);
    else
        snprintf(buf, size, "%s", start);
    return buf;
}

/* ---- the timeline figure ---- */

#define FIG_W 1160
#define LABEL_W 190
#define PLOT_W (FIG_W - LABEL_W - 24)
#define LANE_H 22
#define LANE_GAP 5
#define BAND_HEAD 24
#define AXIS_H 26

typedef struct lane {
    int kind; /* 0 host API, 1 NVTX ops, 2 GPU stream lane */
    int32_t track;
    uint16_t lane;
    char label[96];
} lane;

typedef struct side_view {
    const gr_html_side *sd;
    gr_html_step st;
    lane lanes[24];
    int nlanes;
    gr_html_gaps gaps;
} side_view;

static void ns_px(int64_t ns, int64_t w0, double px_per_ns, double *x) {
    *x = LABEL_W + (double)(ns - w0) * px_per_ns;
}

static void make_lanes(side_view *v) {
    const gr_timeline *tl = v->sd->tl;
    const gr_trace *t = tl->tr;
    int proc = v->sd->proc;
    v->nlanes = 0;
    if (!v->st.ok) return;
    for (size_t k = 0; k < tl->ntracks && v->nlanes < 24; k++) {
        const gr_tl_track *tk = &tl->tracks[k];
        if (tk->proc != proc || tk->kind != GR_TL_TRACK_HOST) continue;
        int any = 0;
        for (size_t i = 0; i < tk->n && !any; i++)
            any = tk->v[i].e > v->st.w0 && tk->v[i].s < v->st.e &&
                  tl->api_top[tk->v[i].rec] == tk->v[i].rec;
        if (!any) continue;
        lane *l = &v->lanes[v->nlanes++];
        l->kind = 0;
        l->track = (int32_t)k;
        snprintf(l->label, sizeof(l->label), "host: API calls");
    }
    for (size_t k = 0; k < tl->ntracks && v->nlanes < 24; k++) {
        const gr_tl_track *tk = &tl->tracks[k];
        if (tk->proc != proc || tk->kind != GR_TL_TRACK_NVTX) continue;
        int any = 0;
        for (size_t i = 0; i < tk->n && !any; i++)
            any =
                tk->v[i].e > v->st.w0 && tk->v[i].s < v->st.e && tl->nvtx[tk->v[i].rec].level == 2;
        if (!any) continue;
        lane *l = &v->lanes[v->nlanes++];
        l->kind = 1;
        l->track = (int32_t)k;
        snprintf(l->label, sizeof(l->label), "host: NVTX op ranges");
    }
    /* GPU lanes the step uses, in track order */
    for (size_t k = 0; k < tl->ntracks; k++) {
        const gr_tl_track *tk = &tl->tracks[k];
        if (tk->proc != proc || tk->kind != GR_TL_TRACK_STREAM) continue;
        for (int ln = 0; ln < tk->lanes && v->nlanes < 24; ln++) {
            int used = 0;
            for (size_t i = 0; i < v->st.ngpu && !used; i++)
                used =
                    tl->gpu_track[v->st.gpu[i]] == (int32_t)k && tl->gpu_lane[v->st.gpu[i]] == ln;
            if (!used) continue;
            lane *l = &v->lanes[v->nlanes++];
            l->kind = 2;
            l->track = (int32_t)k;
            l->lane = (uint16_t)ln;
            if (ln == 0)
                snprintf(l->label, sizeof(l->label), "GPU stream %u", tk->stream);
            else
                snprintf(l->label, sizeof(l->label), "GPU stream %u (overlap)", tk->stream);
        }
    }
    (void)t;
}

static double nice_tick(double range_us) {
    double raw = range_us / 8.0;
    if (raw <= 0) return 1;
    double p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static void box(out *o, double x0, double x1, double y, double h, double xmax, const char *fill,
                const char *cls, const char *title, const char *extra) {
    if (x1 <= LABEL_W || x0 >= xmax) return;
    if (x0 < LABEL_W) x0 = LABEL_W;
    if (x1 > xmax) x1 = xmax;
    double w = x1 - x0;
    if (w < 1) w = 1;
    put(o,
        "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
        "fill=\"%s\"%s><title>",
        cls, x0, y, w, h, fill, extra ? extra : "");
    esc(o, title);
    put(o, "</title></rect>\n");
}

static void draw_band(out *o, const side_view *v, double y, double px_per_ns, names *nm,
                      const char *mode) {
    const gr_timeline *tl = v->sd->tl;
    const gr_trace *t = tl->tr;
    const gr_tl_proc *p = &tl->procs[v->sd->proc];
    const gr_html_step *st = &v->st;
    double xmax = LABEL_W + PLOT_W;
    put(o,
        "<g class=\"band\" data-mode=\"%s\" data-step=\"%lld\" data-steps=\"%lld\" "
        "data-kernels=\"%zu\" "
        "data-span-us=\"%.3f\" data-busy-us=\"%.3f\">\n",
        mode, (long long)st->index, (long long)st->count, st->kernels, st->span_us, st->busy_us);
    put(o, "<text x=\"4\" y=\"%.1f\"><tspan class=\"bandtitle\">", y + 16);
    esc(o, v->sd->label);
    put(o, " (traced)</tspan><tspan class=\"bandsub\" dx=\"12\">");
    if (!st->ok) {
        esc(o, st->why);
        put(o, "</tspan></text>\n</g>\n");
        return;
    }
    char sub[320];
    snprintf(sub, sizeof(sub),
             "step %lld of %lld%s: %s us, %zu kernel%s, GPU busy %s us (%.0f%%), idle %s us in %zu "
             "gap%s",
             (long long)st->index, (long long)st->count,
             st->per_launch > 1 ? " (graph launches)" : "", num(st->span_us), st->kernels,
             st->kernels == 1 ? "" : "s", num(st->busy_us),
             st->span_us > 0 ? 100.0 * st->busy_us / st->span_us : 0.0, num(st->idle_us), st->ngaps,
             st->ngaps == 1 ? "" : "s");
    esc(o, sub);
    if (st->per_launch > 1) put(o, "; one launch = %d steps", st->per_launch);
    put(o, "</tspan></text>\n");
    double ly = y + BAND_HEAD;
    double x;
    for (int li = 0; li < v->nlanes; li++, ly += LANE_H + LANE_GAP) {
        const lane *l = &v->lanes[li];
        const gr_tl_track *tk = &tl->tracks[l->track];
        put(o, "<text class=\"lane\" x=\"%d\" y=\"%.1f\">", LABEL_W - 8, ly + 15);
        esc(o, l->label);
        put(o, "</text>\n<rect class=\"lanebg\" x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%d\"/>\n",
            LABEL_W, ly, PLOT_W, LANE_H);
        if (l->kind == 0 || l->kind == 1) {
            for (size_t i = 0; i < tk->n; i++) {
                const gr_tl_slice *sl = &tk->v[i];
                if (sl->e <= st->w0 || sl->s >= st->e) continue;
                char title[512], nm2[160];
                double x0, x1;
                ns_px(sl->s, st->w0, px_per_ns, &x0);
                ns_px(sl->e, st->w0, px_per_ns, &x1);
                if (l->kind == 0) {
                    if (tl->api_top[sl->rec] != sl->rec) continue;
                    const gr_tr_api *a = &t->api.v[sl->rec];
                    gr_api_strip_version(gr_trace_str(t, a->name), nm2, sizeof(nm2));
                    snprintf(title, sizeof(title), "%s: %s us (host, traced), correlation id %u",
                             nm2, num(US(a->e - a->s)), a->corr);
                    int launch = a->cat == GR_API_LAUNCH || a->cat == GR_API_GRAPH_LAUNCH;
                    box(o, x0, x1, ly + 3, LANE_H - 6, xmax, launch ? "#8d8d8d" : "#c9c9c9", "api",
                        title, NULL);
                } else {
                    const gr_tl_nvtx *r = &tl->nvtx[sl->rec];
                    if (r->level != 2) continue;
                    snprintf(title, sizeof(title), "%s: %s us (NVTX, traced)",
                             gr_tl_str(tl, r->msg), num(US(r->e - r->s)));
                    box(o, x0, x1, ly + 3, LANE_H - 6, xmax, "#b8c7d9", "nvtx", title, NULL);
                }
            }
            continue;
        }
        /* GPU lane: the step's ops, gaps between them labelled */
        int64_t prev_e = -1;
        for (size_t i = 0; i < st->ngpu; i++) {
            size_t gi = st->gpu[i];
            if (tl->gpu_track[gi] != l->track || tl->gpu_lane[gi] != l->lane) continue;
            const gr_tr_gpu *g = &t->gpu.v[gi];
            double x0, x1;
            ns_px(g->s, st->w0, px_per_ns, &x0);
            ns_px(g->e, st->w0, px_per_ns, &x1);
            if (prev_e >= 0 && g->s > prev_e) {
                double gx0;
                ns_px(prev_e, st->w0, px_per_ns, &gx0);
                if (x0 - gx0 >= 36)
                    put(o, "<text class=\"gap\" x=\"%.1f\" y=\"%.1f\">%s us</text>\n",
                        (gx0 + x0) / 2, ly + 15, num(US(g->s - prev_e)));
            }
            if (g->e > prev_e) prev_e = g->e;
            char title[1024], extra[64];
            const gr_tr_op *op = gr_tl_gpu_op(tl, gi);
            if (g->kind == GR_GPU_KERNEL) {
                size_t slot = name_slot(nm, t, g->name);
                char full[600];
                gr_ls_kernel_name(gr_trace_str(t, g->name), 300, full, sizeof(full));
                int n =
                    snprintf(title, sizeof(title), "%s\n%s us, grid [%d,%d,%d], block [%d,%d,%d]",
                             full, num(US(g->e - g->s)), g->grid[0], g->grid[1], g->grid[2],
                             g->block[0], g->block[1], g->block[2]);
                if (op && n > 0 && (size_t)n < sizeof(title))
                    n +=
                        snprintf(title + n, sizeof(title) - (size_t)n, "\nop %d %s (%s)", op->index,
                                 gr_trace_str(t, op->name), gr_trace_str(t, op->kernel));
                if ((g->graph || g->node) && n > 0 && (size_t)n < sizeof(title))
                    snprintf(title + n, sizeof(title) - (size_t)n, "\ngraph node %llu",
                             (unsigned long long)g->node);
                snprintf(extra, sizeof(extra), " data-kernel=\"%zu\"", slot);
                box(o, x0, x1, ly + 2, LANE_H - 4, xmax, slot_color(slot), "k", title, extra);
            } else {
                snprintf(title, sizeof(title), "%s %s, %llu bytes, %s us",
                         g->kind == GR_GPU_MEMCPY ? "memcpy" : "memset",
                         g->kind == GR_GPU_MEMCPY ? gr_trace_str(t, g->name) : "",
                         (unsigned long long)g->bytes, num(US(g->e - g->s)));
                box(o, x0, x1, ly + 2, LANE_H - 4, xmax, "#555555", "cpy", title, NULL);
            }
        }
        if (prev_e >= 0 && st->e > prev_e) {
            double gx0, gx1;
            ns_px(prev_e, st->w0, px_per_ns, &gx0);
            ns_px(st->e, st->w0, px_per_ns, &gx1);
            if (gx1 - gx0 >= 36)
                put(o, "<text class=\"gap\" x=\"%.1f\" y=\"%.1f\">%s us</text>\n", (gx0 + gx1) / 2,
                    ly + 15, num(US(st->e - prev_e)));
        }
    }
    /* the step's end: where the next step's first kernel starts */
    ns_px(st->e, st->w0, px_per_ns, &x);
    if (x <= xmax + 0.5) {
        put(o, "<line class=\"stepend\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x,
            y + BAND_HEAD - 2, x, ly - LANE_GAP + 2);
        put(o, "<text class=\"stepend\" x=\"%.1f\" y=\"%.1f\">next step</text>\n", x - 3, ly + 9);
    }
    (void)p;
    put(o, "</g>\n");
}

static double band_height(const side_view *v) {
    int n = v->nlanes > 0 ? v->nlanes : 1;
    return BAND_HEAD + n * (LANE_H + LANE_GAP) + 14;
}

static void draw_timeline(out *o, side_view *v, int nv, names *nm) {
    double len_ns = 1;
    for (int i = 0; i < nv; i++)
        if (v[i].st.ok && (double)(v[i].st.e - v[i].st.w0) > len_ns)
            len_ns = (double)(v[i].st.e - v[i].st.w0);
    double px_per_ns = PLOT_W / len_ns;
    double h = AXIS_H + 8;
    for (int i = 0; i < nv; i++)
        h += band_height(&v[i]);
    put(o,
        "<svg class=\"timeline\" width=\"%d\" height=\"%.0f\" viewBox=\"0 0 %d %.0f\" "
        "data-window-us=\"%.3f\" "
        "data-us-per-px=\"%.6f\" role=\"img\">\n",
        FIG_W, h, FIG_W, h, len_ns / 1000.0, len_ns / 1000.0 / PLOT_W);
    double tick = nice_tick(len_ns / 1000.0);
    for (double tu = 0; tu <= len_ns / 1000.0 + 1e-9; tu += tick) {
        double x = LABEL_W + tu * 1000.0 * px_per_ns;
        put(o, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.0f\"/>\n", x,
            AXIS_H - 6, x, h - 4);
        put(o, "<text class=\"ttick\" x=\"%.1f\" y=\"%d\">%s</text>\n", x, AXIS_H - 10, num(tu));
    }
    put(o, "<text class=\"axis\" x=\"%d\" y=\"%d\">us from the step's first launch</text>\n",
        LABEL_W - 8, AXIS_H - 10);
    double y = AXIS_H + 4;
    for (int i = 0; i < nv; i++) {
        draw_band(o, &v[i], y, px_per_ns, nm, i == 0 ? "a" : "b");
        y += band_height(&v[i]);
    }
    put(o, "</svg>\n");
}

static void draw_hist(out *o, const side_view *v, int nv) {
    const int W = 560, H = 262, L = 44, B = 78, T = 26;
    const int PW = W - L - 10, PH = H - B - T;
    static const char *const col[] = {"#6b6b6b", "#17becf"}; /* not kernel colours */
    double maxf = 0;
    for (int i = 0; i < nv; i++)
        for (int b = 0; b < GR_HTML_GAP_BINS; b++)
            if (v[i].gaps.n && (double)v[i].gaps.count[b] / (double)v[i].gaps.n > maxf)
                maxf = (double)v[i].gaps.count[b] / (double)v[i].gaps.n;
    if (maxf <= 0) maxf = 1;
    put(o, "<svg class=\"gaphist\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" data-gaps=\"",
        W, H, W, H);
    for (int i = 0; i < nv; i++)
        put(o, "%s%zu", i ? "," : "", v[i].gaps.n);
    put(o, "\" data-bins=\"");
    for (int i = 0; i < nv; i++)
        for (int b = 0; b < GR_HTML_GAP_BINS; b++)
            put(o, "%s%zu", i || b ? "," : "", v[i].gaps.count[b]);
    put(o,
        "\" role=\"img\">\n<text class=\"htitle\" x=\"%d\" y=\"16\">GPU idle gap before each "
        "kernel, whole run "
        "(traced)</text>\n",
        L);
    for (int k = 0; k <= 4; k++) {
        double y = T + PH - PH * k / 4.0;
        put(o, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", L, y, L + PW,
            y);
        put(o, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f%%</text>\n",
            L - 4, y + 4, 100.0 * maxf * k / 4.0);
    }
    double bw = (double)PW / GR_HTML_GAP_BINS;
    for (int b = 0; b < GR_HTML_GAP_BINS; b++) {
        double x = L + b * bw;
        char lab[32];
        if (b == GR_HTML_GAP_BINS - 1)
            snprintf(lab, sizeof(lab), "%g+", gr_html_gap_edges[b]);
        else
            snprintf(lab, sizeof(lab), "%g", gr_html_gap_edges[b]);
        put(o, "<text class=\"tick\" x=\"%.1f\" y=\"%d\">%s</text>\n", x + 2, T + PH + 14, lab);
        for (int i = 0; i < nv; i++) {
            if (!v[i].gaps.n) continue;
            double f = (double)v[i].gaps.count[b] / (double)v[i].gaps.n;
            double bh = PH * f / maxf, bx = x + 3 + i * (bw - 6) / nv;
            put(o,
                "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                "fill=\"%s\"><title>%s: %zu of "
                "%zu gaps (%.1f%%)</title></rect>\n",
                bx, T + PH - bh, (bw - 6) / nv - 1, bh, col[i % 2], v[i].sd->label,
                v[i].gaps.count[b], v[i].gaps.n, 100.0 * f);
        }
    }
    put(o, "<text class=\"tick\" x=\"%d\" y=\"%d\">gap us (bin from its edge to the next)</text>\n",
        L, T + PH + 30);
    for (int i = 0; i < nv; i++) {
        int ly = T + PH + 40 + i * 16;
        put(o,
            "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text class=\"tick\" "
            "x=\"%d\" y=\"%d\">",
            L, ly, col[i % 2], L + 16, ly + 9);
        esc(o, v[i].sd->label);
        put(o, ": %zu gaps, %s us in all</text>\n", v[i].gaps.n, num(v[i].gaps.total_us));
    }
    put(o, "</svg>\n");
}

static void draw_figure(out *o, const gr_html_figure *fig, names *nm, int idx, gr_error *err,
                        gr_status *st) {
    side_view v[2];
    memset(v, 0, sizeof(v));
    int nv = fig->nsides > 2 ? 2 : fig->nsides;
    for (int i = 0; i < nv && *st == GR_OK; i++) {
        v[i].sd = &fig->side[i];
        *st = gr_html_pick_step(fig->side[i].tl, fig->side[i].proc, &v[i].st, err);
        make_lanes(&v[i]);
        gr_html_proc_gaps(fig->side[i].tl, fig->side[i].proc, &v[i].gaps);
    }
    if (*st != GR_OK) {
        for (int i = 0; i < nv; i++)
            gr_html_step_free(&v[i].st);
        return;
    }
    put(o, "<section class=\"figure\" id=\"fig%d\">\n<h2>", idx);
    esc(o, fig->title);
    put(o, ": ");
    for (int i = 0; i < nv; i++) {
        if (i) put(o, " vs ");
        esc(o, v[i].sd->label);
    }
    put(o, ", one step each on one time scale</h2>\n");
    draw_timeline(o, v, nv, nm);
    put(o, "<div class=\"row\">\n");
    draw_hist(o, v, nv);
    put(o, "<div class=\"side\">\n<table class=\"steps\"><tr><th></th><th>step shown</th><th>span "
           "us</th><th>kernels</th>"
           "<th>GPU busy us</th><th>GPU idle us</th><th>idle gaps</th><th>largest gap "
           "us</th><th>run: us/step, traced</th>"
           "</tr>\n");
    for (int i = 0; i < nv; i++) {
        const gr_html_step *s = &v[i].st;
        const gr_tl_proc *p = &v[i].sd->tl->procs[v[i].sd->proc];
        put(o, "<tr><th>");
        esc(o, v[i].sd->label);
        if (!s->ok) {
            put(o, "</th><td colspan=\"8\">");
            esc(o, s->why);
            put(o, "</td></tr>\n");
            continue;
        }
        double run_us = p->traced_step_us;
        if (run_us <= 0 && p->steps > 0 && p->region >= 0 && p->e > p->s)
            run_us = US(p->e - p->s) / (double)p->steps;
        put(o,
            "</th><td>%lld of %lld</td><td>%s</td><td>%zu</td><td>%s</td><td>%s "
            "(%.0f%%)</td><td>%zu</td><td>%s</td>"
            "<td>%s</td></tr>\n",
            (long long)s->index, (long long)s->count, num(s->span_us), s->kernels, num(s->busy_us),
            num(s->idle_us), s->span_us > 0 ? 100.0 * s->idle_us / s->span_us : 0.0, s->ngaps,
            num(s->max_gap_us), run_us > 0 ? num(run_us) : "-");
    }
    put(o, "</table>\n<p class=\"how\">");
    for (int i = 0; i < nv; i++) {
        if (!v[i].st.ok) continue;
        esc(o, v[i].sd->label);
        put(o, ": ");
        esc(o, v[i].st.why);
        put(o, ". ");
    }
    put(o, "Idle = the step's span minus the union of its GPU work. Hover a box for its kernel, "
           "launch dims, op and "
           "graph node.</p>\n<ul class=\"legend\">\n");
    /* legend: kernels in the steps shown */
    size_t shown[64];
    size_t ns = 0;
    for (int i = 0; i < nv; i++) {
        const gr_trace *t = v[i].sd->tl->tr;
        for (size_t k = 0; k < v[i].st.ngpu && ns < 64; k++) {
            const gr_tr_gpu *g = &t->gpu.v[v[i].st.gpu[k]];
            if (g->kind != GR_GPU_KERNEL) continue;
            size_t slot = name_slot(nm, t, g->name), j = 0;
            while (j < ns && shown[j] != slot)
                j++;
            if (j < ns) continue;
            shown[ns++] = slot;
            char sk[160];
            put(o, "<li><span class=\"sw\" style=\"background:%s\"></span>", slot_color(slot));
            esc(o, short_kernel(gr_trace_str(t, g->name), sk, sizeof(sk)));
            put(o, "</li>\n");
        }
    }
    put(o, "</ul>\n</div>\n</div>\n</section>\n");
    for (int i = 0; i < nv; i++)
        gr_html_step_free(&v[i].st);
}

/* ---- tables ---- */

static const gr_tl_proc *fig_proc(const gr_html_doc *d, const char *variant, int side) {
    for (int f = 0; f < d->nfigs; f++)
        if (d->figs[f].nsides > side && !strcmp(d->figs[f].title, variant))
            return &d->figs[f].side[side].tl->procs[d->figs[f].side[side].proc];
    return NULL;
}

static void summary_cell(out *o, const gr_summary *s) {
    if (s->n == 0) {
        put(o, "<td>-</td>");
        return;
    }
    put(o, "<td>%s", num(s->median));
    if (s->n > 1) put(o, " <span class=\"spread\">[%s, %s]</span>", num(s->p10), num(s->p90));
    put(o, "</td>");
}

static void headline(out *o, const gr_html_doc *d) {
    put(o, "<div class=\"headline\">\n");
    for (int i = 0; i < d->ntiming; i++) {
        const gr_html_timing *r = &d->timing[i];
        if (r->eager_us.n == 0 || r->graph_us.n == 0 || r->graph_us.median <= 0) continue;
        double e = r->eager_us.median, g = r->graph_us.median;
        put(o, "<p><b>");
        esc(o, r->variant);
        put(o, "</b>: eager %s us &rarr; graph %s us per step (<b>%.2fx</b>", num(e), num(g),
            e / g);
        if (r->kernels > 0) put(o, ", %s us saved per kernel", num((e - g) / r->kernels));
        put(o, "; untraced, CUDA events)</p>\n");
    }
    put(o, "</div>\n");
}

static void timing_table(out *o, const gr_html_doc *d) {
    put(o, "<section id=\"timing\"><h2>Step time</h2>\n<p class=\"how\">");
    if (d->timing_method) {
        put(o, "<b>Untraced</b> columns are the measurement: ");
        esc(o, d->timing_method);
        put(o, ". ");
    } else {
        put(o, "No untraced run came with this trace: untraced columns come from the trace's "
               "region records where "
               "graphrun wrote them. ");
    }
    put(o, "<b>Traced</b> columns: CUDA events inside the traced run (host span / steps for "
           "profiler ranges); CUPTI "
           "tracing inflates launch costs, so they only show where the time goes.</p>\n");
    put(o, "<table class=\"timing\"><tr><th>variant</th><th>kernels/step</th><th>eager "
           "us/step<br>untraced</th>"
           "<th>graph us/step<br>untraced</th><th>speedup</th><th>saved us/kernel</th><th>submit "
           "us e | g</th>"
           "<th>eager us/step<br>traced</th><th>graph us/step<br>traced</th></tr>\n");
    int rows = 0;
    for (int i = 0; i < d->ntiming; i++) {
        const gr_html_timing *r = &d->timing[i];
        const gr_tl_proc *pe = fig_proc(d, r->variant, 0), *pg = fig_proc(d, r->variant, 1);
        put(o, "<tr><td>");
        esc(o, r->variant);
        put(o, "</td><td>%d</td>", r->kernels);
        summary_cell(o, &r->eager_us);
        summary_cell(o, &r->graph_us);
        double e = r->eager_us.median, g = r->graph_us.median;
        if (r->eager_us.n && r->graph_us.n && g > 0)
            put(o, "<td>%.2fx</td><td>%s</td>", e / g,
                r->kernels > 0 ? num((e - g) / r->kernels) : "-");
        else
            put(o, "<td>-</td><td>-</td>");
        if (r->eager_submit_us > 0 || r->graph_submit_us > 0)
            put(o, "<td>%s | %s</td>", num(r->eager_submit_us), num(r->graph_submit_us));
        else
            put(o, "<td>-</td>");
        put(o, "<td>%s</td><td>%s</td></tr>\n",
            pe && pe->traced_step_us > 0 ? num(pe->traced_step_us) : "-",
            pg && pg->traced_step_us > 0 ? num(pg->traced_step_us) : "-");
        rows++;
    }
    if (d->ntiming == 0) {
        /* from the figures: the traces' own region records */
        for (int f = 0; f < d->nfigs; f++) {
            const gr_html_figure *fg = &d->figs[f];
            const gr_tl_proc *pe = &fg->side[0].tl->procs[fg->side[0].proc];
            const gr_tl_proc *pg = fg->nsides > 1 ? &fg->side[1].tl->procs[fg->side[1].proc] : NULL;
            double te = pe->traced_step_us, tg = pg ? pg->traced_step_us : 0;
            if (te <= 0 && pe->steps > 0 && pe->region >= 0 && pe->e > pe->s)
                te = US(pe->e - pe->s) / (double)pe->steps;
            if (pg && tg <= 0 && pg->steps > 0 && pg->region >= 0 && pg->e > pg->s)
                tg = US(pg->e - pg->s) / (double)pg->steps;
            double ue = pe->untraced_step_us, ug = pg ? pg->untraced_step_us : 0;
            size_t nk = 0; /* kernels per step of the first run, when its steps divide them */
            for (size_t i = 0; i < fg->side[0].tl->tr->gpu.n; i++)
                nk += fg->side[0].tl->gpu_proc[i] == fg->side[0].proc &&
                      fg->side[0].tl->tr->gpu.v[i].kind == GR_GPU_KERNEL;
            put(o, "<tr><td>");
            esc(o, fg->title);
            if (pe->steps > 0 && nk % (size_t)pe->steps == 0)
                put(o, "</td><td>%zu</td>", nk / (size_t)pe->steps);
            else
                put(o, "</td><td>-</td>");
            put(o, "<td>%s</td><td>%s</td>", ue > 0 ? num(ue) : "-", ug > 0 ? num(ug) : "-");
            if (ue > 0 && ug > 0)
                put(o, "<td>%.2fx</td>", ue / ug);
            else if (te > 0 && tg > 0)
                put(o, "<td>%.2fx (traced)</td>", te / tg);
            else
                put(o, "<td>-</td>");
            put(o, "<td>-</td><td>-</td><td>%s</td><td>%s</td></tr>\n", te > 0 ? num(te) : "-",
                tg > 0 ? num(tg) : "-");
            rows++;
        }
    }
    if (!rows) put(o, "<tr><td colspan=\"9\">no timed variant</td></tr>\n");
    put(o, "</table>\n</section>\n");
}

static void hbm_table(out *o, const gr_html_doc *d) {
    put(o, "<section id=\"hbm\"><h2>HBM accounting</h2>\n");
    if (!d->plans || d->nplans <= 0) {
        put(o, "<p class=\"how\">Not available: a trace alone does not carry the workload's plan. "
               "<code>graphrun run WORKLOAD --html FILE</code> includes the bytes each variant "
               "must move per step and "
               "the HBM floor.</p>\n</section>\n");
        return;
    }
    int h = 0;
    for (int i = 1; i < d->nplans; i++)
        if (d->plans[i]->bytes_read + d->plans[i]->bytes_written >
            d->plans[h]->bytes_read + d->plans[h]->bytes_written)
            h = i;
    double base = d->plans[h]->bytes_read + d->plans[h]->bytes_written;
    put(o, "<p class=\"how\">Bytes each kernel must move per step, from the plan (intermediates "
           "are round trips: "
           "written, then read back)");
    if (d->floor_model) {
        put(o, "; the floor is ");
        esc(o, d->floor_model);
    }
    put(o, ".</p>\n<table "
           "class=\"hbm\"><tr><th>variant</th><th>kernels</th><th>read</th><th>written</"
           "th><th>total</th>"
           "<th>round trips</th><th>saved vs ");
    esc(o, d->plans[h]->variant);
    put(o, "</th><th>less traffic</th><th>floor us</th><th>eager / floor</th><th>graph / "
           "floor</th></tr>\n");
    for (int i = 0; i < d->nplans; i++) {
        const gr_plan *p = d->plans[i];
        double tot = p->bytes_read + p->bytes_written;
        char r[24], w[24], t[24], s[24];
        gr_fmt_bytes(p->bytes_read, r, sizeof(r));
        gr_fmt_bytes(p->bytes_written, w, sizeof(w));
        gr_fmt_bytes(tot, t, sizeof(t));
        gr_fmt_bytes(base - tot, s, sizeof(s));
        put(o, "<tr><td>");
        esc(o, p->variant);
        put(o,
            "</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%.2fx</td>",
            p->kernels, r, w, t, p->intermediates, i == h ? "(baseline)" : s,
            tot > 0 ? base / tot : 0.0);
        double fl = d->floor_us ? d->floor_us[i] : 0;
        const gr_html_timing *tm = NULL;
        for (int k = 0; k < d->ntiming; k++)
            if (!strcmp(d->timing[k].variant, p->variant)) tm = &d->timing[k];
        if (fl > 0) {
            put(o, "<td>%s</td>", num(fl));
            put(o, "<td>%s</td>", tm && tm->eager_us.n ? num(tm->eager_us.median / fl) : "-");
            put(o, "<td>%s</td>", tm && tm->graph_us.n ? num(tm->graph_us.median / fl) : "-");
        } else {
            put(o, "<td>-</td><td>-</td><td>-</td>");
        }
        put(o, "</tr>\n");
    }
    put(o, "</table>\n");
    if (!d->floor_model)
        put(o, "<p class=\"how\">No bandwidth was measured (--no-bandwidth), so there is no "
               "floor.</p>\n");
    put(o, "</section>\n");
}

static const char *css =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:18px "
    "24px;color:#222;"
    "background:#fff}\n"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:22px 0 6px}\n"
    ".sub{color:#555;margin:0 0 8px}.note{background:#fff6e0;border-left:4px solid "
    "#e0a800;padding:6px 10px;"
    "margin:8px 0;max-width:1120px}\n"
    ".headline p{margin:2px 0;font-size:15px}\n"
    "svg text{font:11px system-ui,sans-serif;fill:#333}svg "
    ".bandtitle{font-weight:bold;font-size:13px}"
    "svg .bandsub{font-size:12px;fill:#444}\n"
    "svg .lane{text-anchor:end}svg .tick{fill:#666}svg .ttick{fill:#666;text-anchor:middle}svg "
    ".axis{fill:#666;text-anchor:end}svg .htitle{font-weight:bold}\n"
    "svg .gap{text-anchor:middle;fill:#b03030;font-size:10px}svg "
    "text.stepend{text-anchor:end;fill:#b03030;font-size:10px}\n"
    "svg line.grid{stroke:#e6e6e6}svg line.stepend{stroke:#b03030;stroke-dasharray:4 3}\n"
    "svg .lanebg{fill:#f4f4f4}svg rect.k,svg rect.cpy,svg rect.api,svg "
    "rect.nvtx{shape-rendering:crispEdges}\n"
    ".row{display:flex;gap:18px;align-items:flex-start;flex-wrap:wrap}.side{flex:1;min-width:420px}"
    "\n"
    "table{border-collapse:collapse;margin:4px 0}th,td{border:1px solid #ddd;padding:3px "
    "7px;text-align:right}"
    "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}\n"
    ".spread{color:#777;font-size:12px}.how{color:#555;font-size:12px;max-width:1120px}\n"
    "ul.legend{list-style:none;padding:0;margin:6px 0;columns:2}ul.legend li{margin:1px "
    "0;font-size:12px;"
    "break-inside:avoid}\n"
    ".sw{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:-2px}\n"
    "footer{color:#888;font-size:12px;margin-top:24px}\n";

/* Horizontal bars on one scale per scope: measured eager, predicted graph (plain, PDL, fused),
 * measured graph. */
static void pred_bars(out *o, const gr_html_pred_row *rows, int nrows, const char *note) {
    put(o, "<section id=\"prediction\"><h2>Predicted graph step vs measured</h2>\n<p class=\"how\">"
           "Predicted from the eager trace: each step replayed as one graph launch whose nodes take their "
           "kernels' own durations plus a per-node cost, with the per-launch cost; both costs measured "
           "untraced on this GPU model. PDL and fused bars are what-ifs (fused: an <b>estimate</b> at the "
           "memory floor). Measured bars say whether they are traced.");
    if (note && note[0]) {
        put(o, " ");
        esc(o, note);
    }
    put(o, "</p>\n");
    const int W = 560, L = 230, BH = 14;
    for (int i = 0; i < nrows; i++) {
        const gr_html_pred_row *r = &rows[i];
        struct {
            const char *what, *color;
            double us;
            int traced;
        } b[6] = {{"eager, measured", "#c0504d", r->eager_us, r->eager_traced},
                  {"graph, predicted", "#4f81bd", r->graph_us, 0},
                  {"graph + PDL, predicted", "#7fa7d6", r->pdl_us, 0},
                  {"graph + fusion, estimate", "#9bbb59", r->fused_us, 0},
                  {"graph, measured", "#1f497d", r->truth_us, r->truth_traced},
                  {"graph GPU span per launch", "#5a6f8f", r->truth_gpu_us, 1}};
        double mx = 0;
        int nb = 0;
        for (int k = 0; k < 6; k++)
            if (b[k].us > 0) {
                nb++;
                if (b[k].us > mx) mx = b[k].us;
            }
        if (nb == 0 || mx <= 0) continue;
        put(o, "<h3 style=\"font-size:14px;margin:10px 0 2px\">");
        esc(o, r->label);
        put(o, "</h3>\n<svg width=\"%d\" height=\"%d\" role=\"img\">\n", L + W + 90, nb * (BH + 6) + 4);
        int y = 2;
        for (int k = 0; k < 6; k++) {
            if (!(b[k].us > 0)) continue;
            double w = b[k].us / mx * W;
            put(o, "<text class=\"lane\" x=\"%d\" y=\"%d\">%s%s</text>", L - 6, y + BH - 3, b[k].what,
                b[k].traced ? " (traced)" : "");
            put(o, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>%s: %s us</title></rect>",
                L, y, w < 1 ? 1.0 : w, BH, b[k].color, b[k].what, num(b[k].us));
            put(o, "<text x=\"%.1f\" y=\"%d\">%s us</text>\n", L + (w < 1 ? 1.0 : w) + 4, y + BH - 3, num(b[k].us));
            y += BH + 6;
        }
        put(o, "</svg>\n");
    }
    put(o, "</section>\n");
}

gr_status gr_html_write(const gr_html_doc *d, const char *path, gr_error *err) {
    return gr_html_write_pred(d, NULL, 0, NULL, path, err);
}

gr_status gr_html_write_pred(const gr_html_doc *d, const gr_html_pred_row *rows, int nrows, const char *note,
                             const char *path, gr_error *err) {
    FILE *f = fopen(path, "w");
    if (!f)
        return gr_error_set(err, GR_ERR_IO, path,
                            "cannot write the HTML report: %s (does the directory exist and is it "
                            "writable?)",
                            strerror(errno));
    out o = {f, 0};
    names nm = {NULL, NULL, 0, 0};
    gr_status st = GR_OK;
    put(&o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>graphrun: ");
    esc(&o, d->title ? d->title : "timeline");
    put(&o, " eager vs graph</title>\n<style>\n%s</style>\n</head>\n<body>\n<h1>", css);
    esc(&o, d->title ? d->title : "timeline");
    put(&o, ": eager launches vs CUDA graph replay</h1>\n");
    if (d->subtitle) {
        put(&o, "<p class=\"sub\">");
        esc(&o, d->subtitle);
        put(&o, "</p>\n");
    }
    headline(&o, d);
    put(&o, "<p class=\"note\"><b>Timelines are traced</b>: recorded with CUPTI activity tracing, "
            "which inflates "
            "launch costs several-fold, so gaps here are larger than in an untraced run. They show "
            "where the time "
            "goes; the untraced step times in the table are the measurement.</p>\n");
    if (d->nfigs == 0)
        put(&o, "<p>No timeline: the trace has no eager/graph runs to compare (graphrun traces "
                "have one pair per "
                "variant; cupti-launchstat report --compare OTHER pairs two traces).</p>\n");
    for (int i = 0; i < d->nfigs && st == GR_OK; i++)
        draw_figure(&o, &d->figs[i], &nm, i, err, &st);
    if (st == GR_OK) {
        if (rows && nrows > 0) pred_bars(&o, rows, nrows, note);
        timing_table(&o, d);
        hbm_table(&o, d);
        put(&o, "<footer>");
        if (d->source) {
            esc(&o, d->source);
            put(&o, ". ");
        }
        put(&o, "Written by graphrun's timeline exporter (cupti-launchstat " GR_LAUNCHSTAT_VERSION
                "): one self-contained file, no scripts, no network.</footer>\n</body>\n</html>\n");
    }
    free(nm.id);
    free(nm.tr);
    if (fclose(f) != 0) o.failed = 1;
    if (st == GR_OK && o.failed)
        st = gr_error_set(err, GR_ERR_IO, path,
                          "cannot write the HTML report: %s (is the disk full?)", strerror(errno));
    return st;
}
