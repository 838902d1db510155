/* decode_step suites without a GPU: the CPU references of the decode kernels against
 * hand-computed cases and against an independent fp64 implementation of the math, the three
 * variants against each other, workload expansion and byte/launch accounting, and every error
 * message the decode kernels' checks can give (each must name the op and the buffer). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/device.h"
#include "core/hoststate.h"
#include "core/workload.h"
#include "kernels/decode.h"
#include "kernels/registry.h"
#include "tests.h"

#define DECODE_JSON "workloads/decode_step.json"

/* The bundled workload with --set assignments, resolved for target t; on failure NULL, with the
 * message in *msg when msg is given (else printed). */
static gr_plan *decode_plan_for(const char *variant, const char *const *sets, int nsets,
                                const gr_target *t, char *msg, size_t msgsize) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(gr_test_src(DECODE_JSON), &wl, &e) != GR_OK) {
        fprintf(stderr, "\n    %s", e.msg);
        return NULL;
    }
    for (int i = 0; i < nsets; i++)
        if (gr_workload_set(wl, sets[i], &e) != GR_OK) fprintf(stderr, "\n    %s", e.msg);
    gr_plan *p = NULL;
    if (gr_plan_resolve(wl, variant, t, gr_kernel_find, gr_kernel_all_names, &p, &e) != GR_OK) {
        if (msg)
            snprintf(msg, msgsize, "%s", e.msg);
        else
            fprintf(stderr, "\n    %s", e.msg);
    }
    gr_workload_destroy(wl);
    return p;
}

static gr_plan *decode_plan(const char *variant, const char *const *sets, int nsets) {
    gr_target t = gr_target_default();
    return decode_plan_for(variant, sets, nsets, &t, NULL, 0);
}

static int buf_index(const gr_plan *p, const char *name) {
    for (int b = 0; b < p->nbufs; b++)
        if (!strcmp(p->bufs[b].name, name)) return b;
    return -1;
}

static const gr_op *op_named(const gr_plan *p, const char *name) {
    for (int i = 0; i < p->nops; i++)
        if (!strcmp(p->ops[i].name, name)) return &p->ops[i];
    return NULL;
}

/* Filled host state (the initial data) and, when run, after one reference step. */
static gr_hoststate *host_state(const gr_plan *p, int run) {
    gr_error e;
    gr_error_clear(&e);
    gr_hoststate *hs = NULL;
    if (gr_hoststate_create(p, &hs, &e) != GR_OK || gr_hoststate_fill(hs, &e) != GR_OK ||
        (run && gr_reference_step(p, hs, &e) != GR_OK)) {
        fprintf(stderr, "\n    %s", e.msg);
        gr_hoststate_destroy(hs);
        return NULL;
    }
    return hs;
}

static double *as_doubles(const gr_plan *p, const gr_hoststate *hs, const char *name) {
    int b = buf_index(p, name);
    if (b < 0 || !hs->hptr[b]) return NULL;
    const gr_buffer *buf = &p->bufs[b];
    double *v = malloc((size_t)buf->numel * sizeof(double));
    for (int64_t i = 0; v && i < buf->numel; i++)
        v[i] = gr_load(hs->hptr[b], buf->dtype, (size_t)i);
    return v;
}

static double rel_l2(const double *a, const double *ref, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += (a[i] - ref[i]) * (a[i] - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* ---------- an independent fp64 implementation of the decode step ---------- */

/* The formulas, straight: per layer h = x * rsqrt(mean(x^2) + eps) * w_norm;
 * g = W_gate h + s B_gate (A_gate h); u likewise; a = silu(g) * u;
 * x += W_down a + s B_down (A_down a). No intermediate rounding. */
static double *naive_step(const gr_plan *p, const gr_hoststate *init, int L, int B, int d, int f,
                          int r, double s, double eps) {
    double *x = as_doubles(p, init, "x");
    double *h = malloc((size_t)d * sizeof(double)), *a = malloc((size_t)f * sizeof(double));
    double *t = malloc((size_t)r * sizeof(double)), *y = malloc((size_t)d * sizeof(double));
    for (int l = 0; l < L; l++) {
        char nm[10][32];
        const char *stem[] = {"w_norm", "W_gate", "W_up",   "W_down", "A_gate",
                              "A_up",   "A_down", "B_gate", "B_up",   "B_down"};
        double *w[10];
        for (int k = 0; k < 10; k++) {
            snprintf(nm[k], sizeof(nm[k]), "%s.%d", stem[k], l);
            w[k] = as_doubles(p, init, nm[k]);
        }
        for (int b = 0; b < B; b++) {
            double *xb = x + (size_t)b * d, ms = 0;
            for (int k = 0; k < d; k++)
                ms += xb[k] * xb[k];
            double rs = 1.0 / sqrt(ms / d + eps);
            for (int k = 0; k < d; k++)
                h[k] = xb[k] * rs * w[0][k];
            double tg[64], tu[64];
            for (int j = 0; j < r; j++) {
                tg[j] = tu[j] = 0;
                for (int k = 0; k < d; k++) {
                    tg[j] += w[4][(size_t)j * d + k] * h[k];
                    tu[j] += w[5][(size_t)j * d + k] * h[k];
                }
            }
            for (int n = 0; n < f; n++) {
                double g = 0, u = 0;
                for (int k = 0; k < d; k++) {
                    g += w[1][(size_t)n * d + k] * h[k];
                    u += w[2][(size_t)n * d + k] * h[k];
                }
                for (int j = 0; j < r; j++) {
                    g += s * w[7][(size_t)n * r + j] * tg[j];
                    u += s * w[8][(size_t)n * r + j] * tu[j];
                }
                a[n] = g / (1 + exp(-g)) * u;
            }
            for (int j = 0; j < r; j++) {
                t[j] = 0;
                for (int n = 0; n < f; n++)
                    t[j] += w[6][(size_t)j * f + n] * a[n];
            }
            for (int m = 0; m < d; m++) {
                y[m] = 0;
                for (int n = 0; n < f; n++)
                    y[m] += w[3][(size_t)m * f + n] * a[n];
                for (int j = 0; j < r; j++)
                    y[m] += s * w[9][(size_t)m * r + j] * t[j];
            }
            for (int m = 0; m < d; m++)
                xb[m] += y[m];
        }
        for (int k = 0; k < 10; k++)
            free(w[k]);
    }
    free(h);
    free(a);
    free(t);
    free(y);
    return x;
}

/* ---------- references by hand ---------- */

static void test_small_kernels_by_hand(void) {
    /* x = [1, 2, 3, 4, 5, 6] as [2, 3]; w = [0.5, 1, 2]; s = [[2], [-1]] */
    const char *json =
        "{\"name\": \"t\", \"buffers\": ["
        "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [2, 3], \"init\": {\"kind\": \"iota\", "
        "\"start\": 1}},"
        "{\"name\": \"w\", \"dtype\": \"bf16\", \"shape\": [3], \"init\": {\"kind\": \"iota\", "
        "\"start\": 0.5, \"step\": 0.5}},"
        "{\"name\": \"s\", \"dtype\": \"fp32\", \"shape\": [2, 1], \"init\": {\"kind\": \"iota\", "
        "\"start\": 2, \"step\": -3}},"
        "{\"name\": \"sq\", \"dtype\": \"fp32\", \"shape\": [2, 3]}, {\"name\": \"ms\", \"dtype\": "
        "\"fp32\", \"shape\": [2, 1]},"
        "{\"name\": \"rs\", \"dtype\": \"fp32\", \"shape\": [2, 1]}, {\"name\": \"xr\", \"dtype\": "
        "\"bf16\", \"shape\": [2, 3]},"
        "{\"name\": \"xc\", \"dtype\": \"fp32\", \"shape\": [2, 3]}, {\"name\": \"sa\", \"dtype\": "
        "\"fp32\", \"shape\": [2, 3]}],"
        "\"outputs\": [\"sq\", \"ms\", \"rs\", \"xr\", \"xc\", \"sa\"], \"ops\": ["
        "{\"kernel\": \"square\", \"inputs\": [\"x\"], \"outputs\": [\"sq\"]},"
        "{\"kernel\": \"mean_lastdim\", \"inputs\": [\"sq\"], \"outputs\": [\"ms\"]},"
        "{\"kernel\": \"rsqrt_eps\", \"inputs\": [\"ms\"], \"outputs\": [\"rs\"], \"attrs\": "
        "{\"eps\": 0.5}},"
        "{\"kernel\": \"mul_bcast\", \"inputs\": [\"x\", \"s\"], \"outputs\": [\"xr\"]},"
        "{\"kernel\": \"mul_bcast\", \"inputs\": [\"x\", \"w\"], \"outputs\": [\"xc\"]},"
        "{\"kernel\": \"scale_add\", \"inputs\": [\"x\", \"sq\"], \"outputs\": [\"sa\"], "
        "\"attrs\": {\"s\": -0.5}}]}";
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(json, NULL, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_hoststate *hs = host_state(p, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
    double *sq = as_doubles(p, hs, "sq"), *ms = as_doubles(p, hs, "ms"),
           *rs = as_doubles(p, hs, "rs");
    double *xr = as_doubles(p, hs, "xr"), *xc = as_doubles(p, hs, "xc"),
           *sa = as_doubles(p, hs, "sa");
    for (int i = 0; i < 6; i++)
        CU_ASSERT_DOUBLE_EQUAL(sq[i], (i + 1.0) * (i + 1.0), 0);
    CU_ASSERT_DOUBLE_EQUAL(ms[0], 14.0 / 3.0, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(ms[1], 77.0 / 3.0, 1e-5);
    CU_ASSERT_DOUBLE_EQUAL(rs[0], 1.0 / sqrt(14.0 / 3.0 + 0.5), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(rs[1], 1.0 / sqrt(77.0 / 3.0 + 0.5), 1e-6);
    double want_xr[6] = {2, 4, 6, -4, -5, -6}, want_xc[6] = {0.5, 2, 4.5, 2, 5, 9};
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_DOUBLE_EQUAL(xr[i], want_xr[i], 0); /* exact in bf16 */
        CU_ASSERT_DOUBLE_EQUAL(xc[i], want_xc[i], 0);
        CU_ASSERT_DOUBLE_EQUAL(sa[i], (i + 1.0) - 0.5 * (i + 1.0) * (i + 1.0), 0);
    }
    free(sq), free(ms), free(rs), free(xr), free(xc), free(sa);
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
}

/* One layer, B = 1, d = f = r = 4, fp32, constant weights: every row of every matrix is the
 * same, so the step has a closed form. x = [1, 2, 3, 4], w_norm = 1, eps = 0.5. */
static const char *const_layer_json(char *buf, size_t size, const char *variant_ops) {
    snprintf(buf, size,
             "{\"name\": \"c\", \"params\": {\"s\": 0.75, \"eps\": 0.5}, \"buffers\": ["
             "{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [1, 4], \"init\": {\"kind\": "
             "\"iota\", \"start\": 1}},"
             "{\"name\": \"w\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": \"ones\"},"
             "{\"name\": \"Wg\", \"dtype\": \"fp32\", \"shape\": [4, 4], \"init\": {\"kind\": "
             "\"const\", \"value\": 0.1}},"
             "{\"name\": \"Wu\", \"dtype\": \"fp32\", \"shape\": [4, 4], \"init\": {\"kind\": "
             "\"const\", \"value\": 0.2}},"
             "{\"name\": \"Wd\", \"dtype\": \"fp32\", \"shape\": [4, 4], \"init\": {\"kind\": "
             "\"const\", \"value\": -0.3}},"
             "{\"name\": \"Ag\", \"dtype\": \"fp32\", \"shape\": [4, 4], \"init\": {\"kind\": "
             "\"const\", \"value\": 0.05}},"
             "{\"name\": \"Au\", \"dtype\": \"fp32\", \"shape\": [4, 4], \"init\": {\"kind\": "
             "\"const\", \"value\": -0.1}},"
             "{\"name\": \"Ad\", \"dtype\": \"fp32\", \"shape\": [4, 4], \"init\": {\"kind\": "
             "\"const\", \"value\": 0.15}},"
             "{\"name\": \"Bg\", \"dtype\": \"fp32\", \"shape\": [4, 4], \"init\": {\"kind\": "
             "\"const\", \"value\": 0.4}},"
             "{\"name\": \"Bu\", \"dtype\": \"fp32\", \"shape\": [4, 4], \"init\": {\"kind\": "
             "\"const\", \"value\": 0.3}},"
             "{\"name\": \"Bd\", \"dtype\": \"fp32\", \"shape\": [4, 4], \"init\": {\"kind\": "
             "\"const\", \"value\": -0.2}},"
             "{\"name\": \"ssq\", \"dtype\": \"fp32\", \"shape\": [1]}, {\"name\": \"tin\", "
             "\"dtype\": \"fp32\", \"shape\": [8, 1]},"
             "{\"name\": \"td\", \"dtype\": \"fp32\", \"shape\": [4, 1]}, {\"name\": \"act\", "
             "\"dtype\": \"fp32\", \"shape\": [1, 4]},"
             "{\"name\": \"xsq\", \"dtype\": \"fp32\", \"shape\": [1, 4]}, {\"name\": \"ms\", "
             "\"dtype\": \"fp32\", \"shape\": [1, 1]},"
             "{\"name\": \"rstd\", \"dtype\": \"fp32\", \"shape\": [1, 1]}, {\"name\": \"xn\", "
             "\"dtype\": \"fp32\", \"shape\": [1, 4]},"
             "{\"name\": \"h\", \"dtype\": \"fp32\", \"shape\": [1, 4]}, {\"name\": \"p1\", "
             "\"dtype\": \"fp32\", \"shape\": [1, 4]},"
             "{\"name\": \"p2\", \"dtype\": \"fp32\", \"shape\": [1, 4]}, {\"name\": \"t\", "
             "\"dtype\": \"fp32\", \"shape\": [1, 4]},"
             "{\"name\": \"g\", \"dtype\": \"fp32\", \"shape\": [1, 4]}, {\"name\": \"u\", "
             "\"dtype\": \"fp32\", \"shape\": [1, 4]},"
             "{\"name\": \"sg\", \"dtype\": \"fp32\", \"shape\": [1, 4]}, {\"name\": \"y\", "
             "\"dtype\": \"fp32\", \"shape\": [1, 4]}],"
             "\"outputs\": [\"x\"], \"ops\": [%s]}",
             variant_ops);
    return buf;
}

static const char *const_fused_ops =
    "{\"kernel\": \"decode_norm_stats\", \"inputs\": [\"x\", \"w\", \"Ag\", \"Au\"], \"outputs\": "
    "[\"ssq\", \"tin\", \"td\"]},"
    "{\"kernel\": \"decode_gate_up\", \"inputs\": [\"x\", \"w\", \"ssq\", \"tin\", \"Wg\", \"Wu\", "
    "\"Bg\", \"Bu\", \"Ad\"], \"outputs\": [\"act\", \"td\"], \"attrs\": {\"scale\": \"s\", "
    "\"eps\": \"eps\"}},"
    "{\"kernel\": \"decode_down\", \"inputs\": [\"x\", \"act\", \"Wd\", \"Bd\", \"td\"], "
    "\"outputs\": [\"x\"], \"attrs\": {\"scale\": \"s\"}}";

static const char *const_unfused_ops =
    "{\"kernel\": \"square\", \"inputs\": [\"x\"], \"outputs\": [\"xsq\"]},"
    "{\"kernel\": \"mean_lastdim\", \"inputs\": [\"xsq\"], \"outputs\": [\"ms\"]},"
    "{\"kernel\": \"rsqrt_eps\", \"inputs\": [\"ms\"], \"outputs\": [\"rstd\"], \"attrs\": "
    "{\"eps\": \"eps\"}},"
    "{\"kernel\": \"mul_bcast\", \"inputs\": [\"x\", \"rstd\"], \"outputs\": [\"xn\"]},"
    "{\"kernel\": \"mul_bcast\", \"inputs\": [\"xn\", \"w\"], \"outputs\": [\"h\"]},"
    "{\"kernel\": \"gemm\", \"inputs\": [\"h\", \"Wg\"], \"outputs\": [\"p1\"], \"attrs\": "
    "{\"trans_b\": true}},"
    "{\"kernel\": \"gemm\", \"inputs\": [\"h\", \"Ag\"], \"outputs\": [\"t\"], \"attrs\": "
    "{\"trans_b\": true}},"
    "{\"kernel\": \"gemm\", \"inputs\": [\"t\", \"Bg\"], \"outputs\": [\"p2\"], \"attrs\": "
    "{\"trans_b\": true}},"
    "{\"kernel\": \"scale_add\", \"inputs\": [\"p1\", \"p2\"], \"outputs\": [\"g\"], \"attrs\": "
    "{\"s\": \"s\"}},"
    "{\"kernel\": \"gemm\", \"inputs\": [\"h\", \"Wu\"], \"outputs\": [\"p1\"], \"attrs\": "
    "{\"trans_b\": true}},"
    "{\"kernel\": \"gemm\", \"inputs\": [\"h\", \"Au\"], \"outputs\": [\"t\"], \"attrs\": "
    "{\"trans_b\": true}},"
    "{\"kernel\": \"gemm\", \"inputs\": [\"t\", \"Bu\"], \"outputs\": [\"p2\"], \"attrs\": "
    "{\"trans_b\": true}},"
    "{\"kernel\": \"scale_add\", \"inputs\": [\"p1\", \"p2\"], \"outputs\": [\"u\"], \"attrs\": "
    "{\"s\": \"s\"}},"
    "{\"kernel\": \"silu\", \"inputs\": [\"g\"], \"outputs\": [\"sg\"]},"
    "{\"kernel\": \"mul\", \"inputs\": [\"sg\", \"u\"], \"outputs\": [\"act\"]},"
    "{\"kernel\": \"gemm\", \"inputs\": [\"act\", \"Wd\"], \"outputs\": [\"p1\"], \"attrs\": "
    "{\"trans_b\": true}},"
    "{\"kernel\": \"gemm\", \"inputs\": [\"act\", \"Ad\"], \"outputs\": [\"t\"], \"attrs\": "
    "{\"trans_b\": true}},"
    "{\"kernel\": \"gemm\", \"inputs\": [\"t\", \"Bd\"], \"outputs\": [\"p2\"], \"attrs\": "
    "{\"trans_b\": true}},"
    "{\"kernel\": \"scale_add\", \"inputs\": [\"p1\", \"p2\"], \"outputs\": [\"y\"], \"attrs\": "
    "{\"s\": \"s\"}},"
    "{\"kernel\": \"add\", \"inputs\": [\"x\", \"y\"], \"outputs\": [\"x\"]}";

static void test_decode_layer_by_hand(void) {
    /* mean(x^2) = 7.5, rstd = 1/sqrt(8); sum(h) = 10 rstd. With 4 equal rows everywhere:
     * g = 4*0.1*S... written out: Wh = c * sum(h); A h = a * sum(h) per rank row; B (A h) =
     * 4 b a sum(h). g = (0.4/4*4...) computed below term by term. */
    double rstd = 1.0 / sqrt(7.5 + 0.5), sh = 10.0 * rstd, s = 0.75;
    double g = 0.1 * sh + s * 4 * 0.4 * (0.05 * sh);
    double u = 0.2 * sh + s * 4 * 0.3 * (-0.1 * sh);
    double a = g / (1 + exp(-g)) * u;                        /* every element of act */
    double y = -0.3 * 4 * a + s * 4 * -0.2 * (0.15 * 4 * a); /* every element of y */
    const char *ops[2] = {const_fused_ops, const_unfused_ops};
    for (int v = 0; v < 2; v++) {
        char json[8192];
        gr_error e;
        gr_error_clear(&e);
        gr_plan *p = gr_test_plan(const_layer_json(json, sizeof(json), ops[v]), NULL, &e);
        if (!p) fprintf(stderr, "\n    %s", e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        gr_hoststate *hs = host_state(p, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
        double *x = as_doubles(p, hs, "x"), *act = as_doubles(p, hs, "act");
        for (int i = 0; i < 4; i++) {
            CU_ASSERT_DOUBLE_EQUAL(act[i], a, 1e-6 * fabs(a));
            CU_ASSERT_DOUBLE_EQUAL(x[i], (i + 1.0) + y, 1e-6 * (i + 1.0));
        }
        CU_ASSERT_TRUE(fabs(y) > 0.05); /* the step moved x */
        if (v == 0) {                   /* the fused accumulators hold the intermediate sums */
            double *ssq = as_doubles(p, hs, "ssq"), *tin = as_doubles(p, hs, "tin"),
                   *td = as_doubles(p, hs, "td");
            CU_ASSERT_DOUBLE_EQUAL(ssq[0], 30.0, 1e-5);
            CU_ASSERT_DOUBLE_EQUAL(tin[0], 0.05 * 10, 1e-6); /* A (x w), rstd factored out */
            CU_ASSERT_DOUBLE_EQUAL(tin[4], -0.1 * 10, 1e-6);
            CU_ASSERT_DOUBLE_EQUAL(td[3], 0.15 * 4 * a, 1e-6);
            free(ssq), free(tin), free(td);
        }
        free(x), free(act);
        gr_hoststate_destroy(hs);
        gr_plan_destroy(p);
    }
}

/* Both variants of the bundled workload against the fp64 implementation: fp32 to ~1e-6 (the
 * references accumulate in double; only fp32 storage rounds), bf16 within its rounding. */
static void test_variants_vs_naive(void) {
    struct {
        const char *dtype;
        int B, L;
        double tol;
    } cases[] = {
        {"fp32", 1, 2, 2e-6}, {"fp32", 3, 3, 2e-6}, {"fp32", 13, 2, 2e-6}, {"bf16", 2, 2, 2e-2}};
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        char sb[16], sl[16], st[24];
        snprintf(sb, sizeof(sb), "B=%d", cases[c].B);
        snprintf(sl, sizeof(sl), "L=%d", cases[c].L);
        snprintf(st, sizeof(st), "dtype=%s", cases[c].dtype);
        const char *sets[] = {sb, sl, st, "d=64", "f=96", "r=8"};
        /* fused_persistent is a one-kernel step at B <= 8 and the per-layer kernels at B = 13 */
        const char *variants[] = {"unfused", "fused_persistent", "fused"};
        double *xv[3] = {NULL, NULL, NULL}, *want = NULL, *x0 = NULL;
        for (int v = 0; v < 3; v++) {
            gr_plan *p = decode_plan(variants[v], sets, 6);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            gr_hoststate *init = host_state(p, 0), *hs = host_state(p, 1);
            CU_ASSERT_PTR_NOT_NULL_FATAL(init);
            CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
            if (!want) {
                want = naive_step(p, init, cases[c].L, cases[c].B, 64, 96, 8, 2.0, 1e-5);
                x0 = as_doubles(p, init, "x");
            }
            xv[v] = as_doubles(p, hs, "x");
            gr_hoststate_destroy(init);
            gr_hoststate_destroy(hs);
            gr_plan_destroy(p);
        }
        int64_t n = (int64_t)cases[c].B * 64;
        for (int v = 0; v < 3; v++) {
            double err = rel_l2(xv[v], want, n);
            if (err > cases[c].tol)
                fprintf(stderr, "\n    %s %s B=%d L=%d: rel L2 %.2e", variants[v], cases[c].dtype,
                        cases[c].B, cases[c].L, err);
            CU_ASSERT_TRUE(err <= cases[c].tol);
        }
        /* the layers changed x substantially: the comparison is not of x with itself */
        CU_ASSERT_TRUE(rel_l2(want, x0, n) > 0.3);
        for (int v = 0; v < 3; v++)
            free(xv[v]);
        free(want), free(x0);
    }
}

/* fused: after down.{i}, ssq.{i+1} / tin.{i+1} must equal the statistics computed from scratch
 * from the new x (what norm_stats computes for layer 0); tdown.{i+1} was zeroed by down.{i}
 * and then accumulated by gate_up.{i+1}: it equals A_down.{i+1} act. Checked by replaying the
 * reference op by op. */
static void test_fused_next_layer_statistics(void) {
    const char *sets[] = {"B=3", "L=3", "dtype=fp32", "d=64", "f=96", "r=8"};
    gr_plan *p = decode_plan("fused", sets, 6);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->nops, 7);
    gr_hoststate *hs = host_state(p, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
    gr_error e;
    gr_error_clear(&e);
    int checked = 0;
    for (int i = 0; i < p->nops; i++) {
        const gr_op *op = &p->ops[i];
        CU_ASSERT_EQUAL_FATAL(op->kernel->reference(op, p, hs->hptr, &e), GR_OK);
        if (strcmp(op->kernel->name, "decode_down") || !(op->ip[GR_DEC_FLAGS] & GR_DEC_F_NEXT))
            continue;
        int layer = atoi(strchr(op->name, '.') + 1) + 1;
        char nw[32], nag[32], nau[32], nssq[32], ntin[32];
        snprintf(nw, sizeof(nw), "w_norm.%d", layer);
        snprintf(nag, sizeof(nag), "A_gate.%d", layer);
        snprintf(nau, sizeof(nau), "A_up.%d", layer);
        snprintf(nssq, sizeof(nssq), "ssq.%d", layer);
        snprintf(ntin, sizeof(ntin), "tin.%d", layer);
        double *x = as_doubles(p, hs, "x"), *w = as_doubles(p, hs, nw),
               *ag = as_doubles(p, hs, nag);
        double *au = as_doubles(p, hs, nau), *ssq = as_doubles(p, hs, nssq),
               *tin = as_doubles(p, hs, ntin);
        for (int b = 0; b < 3; b++) {
            double ss = 0;
            for (int k = 0; k < 64; k++)
                ss += x[b * 64 + k] * x[b * 64 + k];
            CU_ASSERT_DOUBLE_EQUAL(ssq[b], ss, 1e-5 * ss);
            for (int j = 0; j < 16; j++) {
                const double *A = j < 8 ? ag + j * 64 : au + (j - 8) * 64;
                double t = 0, mag = 0;
                for (int k = 0; k < 64; k++) {
                    t += A[k] * x[b * 64 + k] * w[k];
                    mag += fabs(A[k] * x[b * 64 + k] * w[k]);
                }
                CU_ASSERT_DOUBLE_EQUAL(tin[j * 3 + b], t, 1e-5 * mag);
                checked++;
            }
        }
        free(x), free(w), free(ag), free(au), free(ssq), free(tin);
    }
    CU_ASSERT_EQUAL(checked, 2 * 3 * 16);
    /* the last gate_up accumulated into tdown.2 starting from the zero down.1 left there */
    double *act = as_doubles(p, hs, "act"), *ad = as_doubles(p, hs, "A_down.2"),
           *td = as_doubles(p, hs, "tdown.2");
    for (int b = 0; b < 3; b++)
        for (int j = 0; j < 8; j++) {
            double t = 0;
            for (int n = 0; n < 96; n++)
                t += ad[j * 96 + n] * act[b * 96 + n];
            CU_ASSERT_DOUBLE_EQUAL(td[j * 3 + b], t, 1e-5);
        }
    free(act), free(ad), free(td);
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
}

/* gemv_only: one layer is x + W_down act + s B_down tdown_c with act from fixed statistics; its
 * reference against a direct computation of the last layer (tdown_c sums all layers). */
static void test_gemv_only_reference(void) {
    const char *sets[] = {"B=2", "L=2", "dtype=fp32", "d=64", "f=96", "r=8"};
    gr_plan *p = decode_plan("gemv_only", sets, 6);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_hoststate *init = host_state(p, 0), *hs = host_state(p, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(init);
    CU_ASSERT_PTR_NOT_NULL_FATAL(hs);
    double *x = as_doubles(p, init, "x"), *tin = as_doubles(p, init, "tin_c"),
           *yg = as_doubles(p, hs, "y_g");
    double td[8 * 2] = {0}, act[2 * 96];
    for (int l = 0; l < 2; l++) {
        char nm[10][32];
        const char *stem[] = {"w_norm", "W_gate", "W_up", "W_down",
                              "A_down", "B_gate", "B_up", "B_down"};
        double *w[8];
        for (int k = 0; k < 8; k++) {
            snprintf(nm[k], sizeof(nm[k]), "%s.%d", stem[k], l);
            w[k] = as_doubles(p, init, nm[k]);
        }
        for (int b = 0; b < 2; b++) {
            double rs = 1.0 / sqrt(64.0 / 64.0 + 1e-5); /* ssq_c = d */
            for (int n = 0; n < 96; n++) {
                double g = 0, u = 0;
                for (int k = 0; k < 64; k++) {
                    g += w[1][n * 64 + k] * x[b * 64 + k] * w[0][k];
                    u += w[2][n * 64 + k] * x[b * 64 + k] * w[0][k];
                }
                for (int j = 0; j < 8; j++) {
                    g += 2.0 * w[5][n * 8 + j] * tin[j * 2 + b];
                    u += 2.0 * w[6][n * 8 + j] * tin[(8 + j) * 2 + b];
                }
                g *= rs;
                u *= rs;
                act[b * 96 + n] = (float)(g / (1 + exp(-g)) * u);
            }
            for (int j = 0; j < 8; j++)
                for (int n = 0; n < 96; n++)
                    td[j * 2 + b] += w[4][j * 96 + n] * act[b * 96 + n];
        }
        if (l == 1)
            for (int b = 0; b < 2; b++)
                for (int m = 0; m < 64; m++) {
                    double y = x[b * 64 + m];
                    for (int n = 0; n < 96; n++)
                        y += w[3][m * 96 + n] * act[b * 96 + n];
                    for (int j = 0; j < 8; j++)
                        y += 2.0 * w[7][m * 8 + j] * td[j * 2 + b];
                    CU_ASSERT_DOUBLE_EQUAL(yg[b * 64 + m], y, 1e-5 * (1 + fabs(y)));
                }
        for (int k = 0; k < 8; k++)
            free(w[k]);
    }
    free(x), free(tin), free(yg);
    gr_hoststate_destroy(init);
    gr_hoststate_destroy(hs);
    gr_plan_destroy(p);
}

/* ---------- expansion and accounting ---------- */

static void test_expansion_and_kernel_counts(void) {
    int Ls[] = {1, 2, 16};
    for (int i = 0; i < 3; i++) {
        char sl[16];
        snprintf(sl, sizeof(sl), "L=%d", Ls[i]);
        const char *sets[] = {sl, "d=256", "f=512"};
        gr_plan *u = decode_plan("unfused", sets, 3), *f = decode_plan("fused", sets, 3);
        gr_plan *g = decode_plan("gemv_only", sets, 3), *gs = decode_plan("gemv_stream", sets, 3);
        CU_ASSERT_PTR_NOT_NULL_FATAL(u);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        CU_ASSERT_PTR_NOT_NULL_FATAL(gs);
        int L = Ls[i];
        CU_ASSERT_EQUAL(gs->kernels, 2); /* the same bytes as 2 L kernels, in 2 */
        CU_ASSERT_EQUAL(gs->library_ops, 0);
        CU_ASSERT_EQUAL(u->nops, 20 * L);
        CU_ASSERT_EQUAL(u->kernels, 20 * L); /* cuBLAS ops count as one each */
        CU_ASSERT_EQUAL(u->library_ops, 9 * L);
        CU_ASSERT_EQUAL(f->nops, 2 * L + 1);
        CU_ASSERT_EQUAL(f->kernels, 2 * L + 1);
        CU_ASSERT_EQUAL(f->library_ops, 0);
        CU_ASSERT_EQUAL(g->kernels, 2 * L);
        /* the last layer does not compute statistics for a next one */
        char last[32];
        snprintf(last, sizeof(last), "down.%d", L - 1);
        const gr_op *ld = op_named(f, last);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ld);
        CU_ASSERT_EQUAL(ld->ip[GR_DEC_FLAGS], 0);
        CU_ASSERT_EQUAL(ld->ninputs, 5);
        if (L > 1) {
            const gr_op *d0 = op_named(f, "down.0");
            CU_ASSERT_PTR_NOT_NULL_FATAL(d0);
            CU_ASSERT_EQUAL(d0->ip[GR_DEC_FLAGS], GR_DEC_F_NEXT | GR_DEC_F_ZERO);
            CU_ASSERT_STRING_EQUAL(f->bufs[d0->inputs[5]].name, "w_norm.1");
        }
        gr_plan_destroy(u);
        gr_plan_destroy(f);
        gr_plan_destroy(g);
        gr_plan_destroy(gs);
    }
}

static void test_weight_bytes(void) {
    /* per layer: w_norm d + W_gate, W_up fd + W_down df + A_gate, A_up rd + A_down rf +
     * B_gate, B_up fr + B_down dr elements */
    struct {
        const char *dtype;
        double esize;
    } dts[] = {{"dtype=bf16", 2}, {"dtype=fp32", 4}};
    for (int k = 0; k < 2; k++) {
        const char *sets[] = {dts[k].dtype};
        double L = 16, d = 2048, f = 8192, r = 16;
        double weights = L * (d + 3 * f * d + 3 * r * d + 3 * r * f) * dts[k].esize;
        gr_plan *u = decode_plan("unfused", sets, 1), *fu = decode_plan("fused", sets, 1);
        gr_plan *g = decode_plan("gemv_only", sets, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(u);
        CU_ASSERT_PTR_NOT_NULL_FATAL(fu);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        CU_ASSERT_DOUBLE_EQUAL(gr_plan_input_bytes(u), weights, 0.5);
        CU_ASSERT_DOUBLE_EQUAL(gr_plan_input_bytes(fu), weights, 0.5);
        /* gemv_only: no A_gate / A_up (its statistics are fixed), plus x and those statistics */
        CU_ASSERT_DOUBLE_EQUAL(
            gr_plan_input_bytes(g),
            weights - L * 2 * r * d * dts[k].esize + d * dts[k].esize + (1 + 2 * r) * 4, 0.5);
        if (k == 0) {
            CU_ASSERT_DOUBLE_EQUAL(weights, 1.6264e9, 0.0001e9); /* 397 us at 4.1 TB/s */
        }
        /* bytes per step: the weights once plus activation traffic (< 1%) */
        double fb = fu->bytes_read + fu->bytes_written;
        CU_ASSERT_TRUE(fb >= weights && fb < weights * 1.01);
        double ub = u->bytes_read + u->bytes_written;
        CU_ASSERT_TRUE(ub > fb && ub < weights * 1.01);
        /* fused reads every weight once (w_norm twice): the per-op reads add up to that plus
         * the activations (x, act) and statistics each op touches */
        double acts = 0;
        for (int i = 0; i < fu->nops; i++) {
            const gr_op *op = &fu->ops[i];
            for (int j = 0; j < op->ninputs; j++)
                if (fu->bufs[op->inputs[j]].first_write >= 0)
                    acts += (double)fu->bufs[op->inputs[j]].bytes;
        }
        /* w_norm.i is read twice: by the op that computes layer i's statistics (norm_stats or
         * down.{i-1}) and by gate_up.i */
        CU_ASSERT_DOUBLE_EQUAL(fu->bytes_read - acts, weights + L * d * dts[k].esize, 0.5);
        /* gemv_stream streams what gemv_only does (no A_gate, A_up), as 2 kernels: its stacked
         * weights are exactly the L layers' W and LoRA-B, A_down */
        gr_plan *gs = decode_plan("gemv_stream", sets, 1);
        CU_ASSERT_PTR_NOT_NULL_FATAL(gs);
        double stacked = L * (3 * f * d + 3 * r * f + r * d) * dts[k].esize;
        double gs_in = gr_plan_input_bytes(gs);
        CU_ASSERT_TRUE(gs_in >= stacked && gs_in < stacked * 1.001);
        CU_ASSERT_DOUBLE_EQUAL(gs->bytes_read + gs->bytes_written, g->bytes_read + g->bytes_written,
                               0.002 * weights);
        gr_plan_destroy(gs);
        gr_plan_destroy(u);
        gr_plan_destroy(fu);
        gr_plan_destroy(g);
    }
}

static void test_launch_geometry(void) {
    /* default: bf16 B = 1 -> gate_up one warp per task (4096 tasks over 2112 warps); down
     * 4 warps per task, so its 512 tasks (4 rows x 8192) give each team one: 256 blocks of 2 */
    gr_plan *p = decode_plan("fused", NULL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    const gr_op *gu = op_named(p, "gate_up.0"), *dn = op_named(p, "down.0"),
                *ns = op_named(p, "norm_stats.0");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gu);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dn);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ns);
    CU_ASSERT_EQUAL(gu->grid[0], 264);
    CU_ASSERT_EQUAL(gu->block[0], 256);
    CU_ASSERT_EQUAL(gu->ip[GR_DEC_BT], 1);
    CU_ASSERT_EQUAL(gu->ip[GR_DEC_TW], 1);
    CU_ASSERT_EQUAL(gu->ip[GR_DEC_TILES], 1);
    CU_ASSERT_EQUAL(gu->smem, gr_dec_smem_layout(0, 1, 2048, 16, 2).total);
    CU_ASSERT_TRUE(gu->smem >= 2048 * 4 && gu->smem < 12 * 1024);
    CU_ASSERT_EQUAL(dn->grid[0], 256);
    CU_ASSERT_EQUAL(dn->ip[GR_DEC_TW], 4);
    CU_ASSERT_EQUAL(dn->ip[GR_DEC_K], 8192);
    CU_ASSERT_EQUAL(dn->smem, gr_dec_smem_layout(1, 1, 8192, 16, 2).total);
    CU_ASSERT_EQUAL(ns->grid[0], 33);
    CU_ASSERT_EQUAL(ns->grid[1], 1);
    gr_plan_destroy(p);
    /* B = 8: one tile of 8; the kernels' registers allow one block per SM at BT = 8 (and down's
     * act tile of 8 x 8192 bf16 = 128 KB alone would too): gate_up 4096 tasks on 132 x 8 warps,
     * one warp per task; down 512 tasks, 2 warps per task (528 teams), trimmed to 128 blocks */
    const char *s8b[] = {"B=8", "gemv_max_b=8"}; /* the GEMV path at its limit (default: 4) */
    p = decode_plan("fused", s8b, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gu = op_named(p, "gate_up.0");
    dn = op_named(p, "down.0");
    CU_ASSERT_EQUAL(gu->ip[GR_DEC_BT], 8);
    CU_ASSERT_EQUAL(gu->ip[GR_DEC_TILES], 1);
    CU_ASSERT_EQUAL(gu->grid[0], 132);
    CU_ASSERT_EQUAL(gu->ip[GR_DEC_TW], 1);
    CU_ASSERT_EQUAL(dn->ip[GR_DEC_BT], 8);
    CU_ASSERT_EQUAL(dn->grid[0], 128);
    CU_ASSERT_EQUAL(dn->ip[GR_DEC_TW], 2);
    CU_ASSERT_TRUE(dn->smem > 128 * 1024 && dn->smem <= 227 * 1024);
    CU_ASSERT_EQUAL(gu->ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS, 0);
    CU_ASSERT_EQUAL(p->library_ops, 0);
    gr_plan_destroy(p);
    /* B = 13: past gemv_max_b (default GR_DEC_GEMV_MAX_B), cuBLAS for W x and the epilogue
     * kernel's dims: a block of 128 threads per 128 outputs and batch row */
    const char *s13[] = {"B=13"};
    p = decode_plan("fused", s13, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gu = op_named(p, "gate_up.0");
    dn = op_named(p, "down.0");
    CU_ASSERT_TRUE((gu->ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS) != 0);
    CU_ASSERT_TRUE((dn->ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS) != 0);
    CU_ASSERT_EQUAL(gu->grid[0], 8192 / GR_DEC_EPI_THREADS);
    CU_ASSERT_EQUAL(gu->grid[1], 13);
    CU_ASSERT_EQUAL(gu->block[0], GR_DEC_EPI_THREADS);
    CU_ASSERT_EQUAL(dn->grid[0], 2048 / GR_DEC_EPI_THREADS);
    CU_ASSERT_EQUAL(dn->grid[1], 13);
    CU_ASSERT_EQUAL(gu->launches, -1);
    CU_ASSERT_EQUAL(dn->launches, -1);
    CU_ASSERT_EQUAL(p->library_ops, 32);
    CU_ASSERT_EQUAL(p->kernels, 33); /* library ops count once each */
    /* the scratch the GEMMs write and the epilogue reads back counts as HBM traffic: gate_up
     * x * w_norm [B, d] bf16 and two fp32 [B, f] products; down one fp32 [B, d] */
    double in = 0, dn_in = 0;
    for (int j = 0; j < gu->ninputs; j++)
        in += (double)p->bufs[gu->inputs[j]].bytes;
    for (int j = 0; j < dn->ninputs; j++)
        dn_in += (double)p->bufs[dn->inputs[j]].bytes;
    CU_ASSERT_DOUBLE_EQUAL(gu->bytes_read - in, 13.0 * 2048 * 2 + 2.0 * 13 * 8192 * 4, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(dn->bytes_read - dn_in, 13.0 * 2048 * 4, 0.5);
    gr_plan_destroy(p);
    /* fp32 at f = 8192: a tile of 8 rows would need 256 KB; the check falls back to 4 */
    const char *s8[] = {"B=8", "dtype=fp32", "gemv_max_b=8"};
    p = decode_plan("fused", s8, 3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    dn = op_named(p, "down.0");
    CU_ASSERT_EQUAL(dn->ip[GR_DEC_BT], 4);
    CU_ASSERT_EQUAL(dn->ip[GR_DEC_TILES], 2);
    gr_plan_destroy(p);
    /* the fp32 target size: L8 d1024 f4096 r16 B4 */
    const char *sfp[] = {"dtype=fp32", "L=8", "d=1024", "f=4096", "B=4"};
    p = decode_plan("fused", sfp, 5);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->kernels, 17);
    dn = op_named(p, "down.0");
    CU_ASSERT_EQUAL(dn->ip[GR_DEC_BT], 4);
    CU_ASSERT_EQUAL(dn->ip[GR_DEC_TW], 8);
    CU_ASSERT_EQUAL(dn->grid[0], 256); /* 256 tasks: one per block */
    gr_plan_destroy(p);
}

/* gemv_max_b (decode_step.json's param, passed to every GEMV op as the attr of that name) moves
 * the GEMV/cuBLAS crossover below the kernels' limit of 8. At B = 8 with gemv_max_b = 4 every
 * gate_up and down op takes the cuBLAS path: the flag (the op needs the library handles and
 * its scratch), the epilogue's launch dims, a library launch count, and the scratch's bytes on
 * top of the GEMV's; the flops are the same. At B = 4 with gemv_max_b = 4 (the default since run
 * 85), and at B = 8 with gemv_max_b = 8, the ops stay GEMV. fused_persistent and gemv_only follow
 * the same param. */
static void test_gemv_max_b(void) {
    const char *s_def[] = {"B=8", "gemv_max_b=8"}, *s_lo[] = {"B=8", "gemv_max_b=4"};
    const char *s_b4[] = {"B=4", "gemv_max_b=4"}, *s_b4d[] = {"B=4", "gemv_max_b=8"}, *s_b8d[] = {"B=8"};
    gr_plan *g = decode_plan("fused", s_def, 2), *c = decode_plan("fused", s_lo, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    /* the default is 4 since run 85 (H100: cuBLAS faster from B = 5): B = 8 takes cuBLAS */
    gr_plan *d8 = decode_plan("fused", s_b8d, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d8);
    const gr_op *d8o = op_named(d8, "gate_up.0");
    CU_ASSERT_PTR_NOT_NULL_FATAL(d8o);
    CU_ASSERT_EQUAL(d8o->ip[GR_DEC_MAXB], 4);
    CU_ASSERT_TRUE((d8o->ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS) != 0);
    CU_ASSERT_EQUAL(d8->library_ops, 32);
    gr_plan_destroy(d8);
    const char *names[] = {"gate_up.0", "down.0", "gate_up.7", "down.7", "gate_up.15", "down.15"};
    for (int i = 0; i < 6; i++) {
        const gr_op *go = op_named(g, names[i]), *co = op_named(c, names[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(go);
        CU_ASSERT_PTR_NOT_NULL_FATAL(co);
        int is_down = names[i][0] == 'd';
        /* default: GEMV, one tile of 8 rows */
        CU_ASSERT_EQUAL(go->ip[GR_DEC_MAXB], 8);
        CU_ASSERT_EQUAL(go->ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS, 0);
        CU_ASSERT_EQUAL(go->ip[GR_DEC_BT], 8);
        CU_ASSERT_EQUAL(go->block[0], 256);
        CU_ASSERT_EQUAL(go->grid[1], 1);
        CU_ASSERT_EQUAL(go->launches, 1);
        CU_ASSERT_STRING_EQUAL(go->form, "gemv bt8, gemv_max_b 8");
        /* gemv_max_b = 4: cuBLAS and the epilogue kernel (a block per 128 outputs and row) */
        CU_ASSERT_EQUAL(co->ip[GR_DEC_MAXB], 4);
        CU_ASSERT_TRUE((co->ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS) != 0);
        CU_ASSERT_EQUAL(co->ip[GR_DEC_FLAGS] & ~GR_DEC_F_BLAS, go->ip[GR_DEC_FLAGS]);
        CU_ASSERT_EQUAL(co->ip[GR_DEC_BT], 0);
        CU_ASSERT_EQUAL(co->ip[GR_DEC_TILES], 0);
        CU_ASSERT_EQUAL(co->block[0], GR_DEC_EPI_THREADS);
        CU_ASSERT_EQUAL(co->grid[0], (is_down ? 2048 : 8192) / GR_DEC_EPI_THREADS);
        CU_ASSERT_EQUAL(co->grid[1], 8);
        CU_ASSERT_EQUAL(co->launches, -1);
        CU_ASSERT_STRING_EQUAL(co->form, "cublas, gemv_max_b 4");
        /* the scratch (gate_up: x * w_norm [8, d] bf16 and two fp32 [8, f]; down: fp32 [8, d])
         * is written by the GEMMs and read back by the epilogue */
        double scratch = is_down ? 8.0 * 2048 * 4 : 8.0 * 2048 * 2 + 2.0 * 8 * 8192 * 4;
        CU_ASSERT_DOUBLE_EQUAL(co->bytes_read - go->bytes_read, scratch, 0.5);
        CU_ASSERT_DOUBLE_EQUAL(co->bytes_written - go->bytes_written, scratch, 0.5);
        CU_ASSERT_DOUBLE_EQUAL(co->flops, go->flops, 0.5);
        /* that scratch is the op's slice of the device state's arena, not an allocation per op;
         * the GEMV path needs none */
        CU_ASSERT_EQUAL(co->scratch, (size_t)scratch);
        CU_ASSERT_EQUAL(go->scratch, 0);
    }
    /* one arena slice for the whole plan: the largest op (gate_up), not the sum over 32 ops */
    CU_ASSERT_EQUAL(gr_plan_scratch(c), (size_t)(8 * 2048 * 2 + 2 * 8 * 8192 * 4));
    CU_ASSERT_EQUAL(gr_plan_scratch(g), 0);
    CU_ASSERT_EQUAL(g->library_ops, 0);
    CU_ASSERT_EQUAL(c->library_ops, 32);
    CU_ASSERT_EQUAL(c->kernels, 33); /* library ops count once each */
    CU_ASSERT_TRUE(c->bytes_read > g->bytes_read);
    /* norm_stats has one form: unchanged */
    CU_ASSERT_EQUAL(op_named(c, "norm_stats.0")->grid[0], op_named(g, "norm_stats.0")->grid[0]);
    CU_ASSERT_EQUAL(op_named(c, "norm_stats.0")->form[0], '\0');
    gr_plan_destroy(g);
    gr_plan_destroy(c);
    /* B = 4 with gemv_max_b = 4: GEMV, the same plan as with gemv_max_b = 8 at B = 4 */
    gr_plan *k = decode_plan("fused", s_b4, 2), *kd = decode_plan("fused", s_b4d, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(k);
    CU_ASSERT_PTR_NOT_NULL_FATAL(kd);
    CU_ASSERT_EQUAL(k->library_ops, 0);
    CU_ASSERT_EQUAL(k->nops, kd->nops);
    for (int i = 0; i < k->nops; i++) {
        const gr_op *a = &k->ops[i], *b = &kd->ops[i];
        CU_ASSERT_EQUAL(a->ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS, 0);
        CU_ASSERT_EQUAL(a->grid[0], b->grid[0]);
        CU_ASSERT_EQUAL(a->smem, b->smem);
        CU_ASSERT_EQUAL(a->ip[GR_DEC_BT], b->ip[GR_DEC_BT]);
        CU_ASSERT_EQUAL(a->launches, b->launches);
        CU_ASSERT_DOUBLE_EQUAL(a->bytes_read + a->bytes_written, b->bytes_read + b->bytes_written,
                               0.5);
    }
    const gr_op *gu4 = op_named(k, "gate_up.0");
    CU_ASSERT_PTR_NOT_NULL_FATAL(gu4);
    CU_ASSERT_EQUAL(gu4->ip[GR_DEC_BT], 4);
    CU_ASSERT_EQUAL(gu4->ip[GR_DEC_MAXB], 4);
    CU_ASSERT_EQUAL(op_named(kd, "gate_up.0")->ip[GR_DEC_MAXB], 8);
    gr_plan_destroy(k);
    gr_plan_destroy(kd);
    /* fused_persistent: one decode_step op for B <= gemv_max_b, the per-layer kernels (here on
     * the cuBLAS path) above it */
    gr_plan *p = decode_plan("fused_persistent", s_def, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->nops, 1);
    CU_ASSERT_STRING_EQUAL(p->ops[0].kernel->name, "decode_step");
    CU_ASSERT_EQUAL(p->ops[0].ip[GR_DEC_MAXB], 8);
    gr_plan_destroy(p);
    p = decode_plan("fused_persistent", s_lo, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->nops, 2 * 16 + 1);
    CU_ASSERT_EQUAL(p->library_ops, 32);
    CU_ASSERT_TRUE((op_named(p, "down.3")->ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS) != 0);
    gr_plan_destroy(p);
    p = decode_plan("fused_persistent", s_b4, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->nops, 1);
    CU_ASSERT_EQUAL(p->ops[0].ip[GR_DEC_MAXB], 4);
    gr_plan_destroy(p);
    /* gemv_only and gemv_stream pass it too */
    const char *names2[] = {"gemv_only", "gemv_stream"};
    for (int v = 0; v < 2; v++) {
        p = decode_plan(names2[v], s_lo, 2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(p->library_ops, p->nops);
        gr_plan_destroy(p);
    }
}

/* fused_persistent at B <= 8: the whole step is one decode_step op; its inputs list x and then each
 * layer's ten weights in GR_DEC_P_* order (a repeat block in the op's inputs); above B = 8 or L =
 * 48 the variant falls back to the per-layer kernels. */
static void test_step_expansion(void) {
    static const char *roles[GR_DEC_P_PER_LAYER] = {"w_norm", "W_gate", "W_up",   "W_down",
                                                    "A_gate", "A_up",   "A_down", "B_gate",
                                                    "B_up",   "B_down"};
    int Ls[] = {1, 3, 16, 48};
    for (int i = 0; i < 4; i++) {
        char sl[16];
        snprintf(sl, sizeof(sl), "L=%d", Ls[i % 4]);
        const char *sets[] = {sl, "d=256", "f=512"};
        gr_plan *f = decode_plan("fused_persistent", sets, 3);
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        const int launches = 1;
        CU_ASSERT_EQUAL(f->nops, 1);
        CU_ASSERT_EQUAL(f->kernels, launches);
        const gr_op *op = &f->ops[0];
        CU_ASSERT_STRING_EQUAL(op->kernel->name, "decode_step");
        CU_ASSERT_EQUAL(op->ninputs, 1 + GR_DEC_P_PER_LAYER * Ls[i % 4]);
        CU_ASSERT_STRING_EQUAL(f->bufs[op->inputs[0]].name, "x");
        CU_ASSERT_EQUAL(op->outputs[0], op->inputs[0]);
        int ok = 1;
        for (int l = 0; l < Ls[i % 4]; l++)
            for (int k = 0; k < GR_DEC_P_PER_LAYER; k++) {
                char want[32];
                snprintf(want, sizeof(want), "%s.%d", roles[k], l);
                ok &= !strcmp(f->bufs[op->inputs[1 + GR_DEC_P_PER_LAYER * l + k]].name, want);
            }
        CU_ASSERT_TRUE(ok);
        CU_ASSERT_EQUAL(op->launches, launches);
        gr_plan_destroy(f);
    }
    /* past the kernel's limits the variant is the per-layer one */
    {
        const char *big_b[] = {"B=9", "L=2", "d=256", "f=512"};
        const char *big_l[] = {"L=49", "d=256", "f=512"};
        gr_plan *a = decode_plan("fused_persistent", big_b, 4),
                *b = decode_plan("fused_persistent", big_l, 3);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        CU_ASSERT_PTR_NOT_NULL_FATAL(b);
        CU_ASSERT_EQUAL(a->nops, 5);
        CU_ASSERT_EQUAL(b->nops, 2 * 49 + 1);
        CU_ASSERT_PTR_NOT_NULL(op_named(b, "down.48"));
        gr_plan_destroy(a);
        gr_plan_destroy(b);
    }
}

/* decode_step's grid is one resident set for both phases: at the default size 2 blocks per SM
 * (264), one batch row per tile; gate_up's 4096 tasks one warp each, down's 512 tasks on teams
 * of 4 warps (528 teams); shared memory the larger (down: the 8192-element act row) layout.
 * Bytes: every weight once plus the activation traffic of the per-layer kernels. */
static void test_step_geometry_and_bytes(void) {
    gr_plan *p = decode_plan("fused_persistent", NULL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    const gr_op *op = &p->ops[0];
    CU_ASSERT_EQUAL(op->grid[0], 264);
    CU_ASSERT_EQUAL(op->block[0], 256);
    CU_ASSERT_EQUAL(op->ip[GR_DEC_BT], 1);
    CU_ASSERT_EQUAL(op->ip[GR_DEC_TILES], 1);
    CU_ASSERT_EQUAL(op->ip[GR_DEC_TW], 1);
    CU_ASSERT_EQUAL(op->ip[GR_DEC_S_TW_DOWN], 4);
    CU_ASSERT_EQUAL(op->smem, gr_dec_smem_layout(1, 1, 8192, 16, 2).total);
    double L = 16, d = 2048, f = 8192, r = 16, es = 2;
    double weights = L * (d + 3 * f * d + 3 * r * d + 3 * r * f) * es;
    CU_ASSERT_DOUBLE_EQUAL(op->bytes_read, weights + L * (2 * d + f) * es, 0.5);
    CU_ASSERT_DOUBLE_EQUAL(op->bytes_written, L * (d + f) * es, 0.5);
    /* the same flops as the per-layer kernels */
    gr_plan *fl = decode_plan("fused", NULL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fl);
    CU_ASSERT_DOUBLE_EQUAL(p->flops, fl->flops, 1e-9 * fl->flops);
    gr_plan_destroy(fl);
    gr_plan_destroy(p);
    /* B = 8 bf16: one tile of 8, one block per SM (registers at BT = 8) */
    const char *s8[] = {"B=8", "gemv_max_b=8"};
    p = decode_plan("fused_persistent", s8, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->ops[0].ip[GR_DEC_BT], 8);
    CU_ASSERT_EQUAL(p->ops[0].grid[0], 132);
    gr_plan_destroy(p);
    /* B = 3 fp32 at f = 8192: a tile of 4 rows of fp32 act (128 KB) allows one block per SM;
     * B = 5 fp32 needs 2 tiles of 4, and every block belongs to one tile */
    const char *s3[] = {"B=3", "dtype=fp32"};
    p = decode_plan("fused_persistent", s3, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->ops[0].ip[GR_DEC_BT], 4);
    CU_ASSERT_EQUAL(p->ops[0].grid[0], 132);
    gr_plan_destroy(p);
    const char *s5[] = {"B=5", "dtype=fp32", "gemv_max_b=8"};
    p = decode_plan("fused_persistent", s5, 3);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->ops[0].ip[GR_DEC_BT], 4);
    CU_ASSERT_EQUAL(p->ops[0].ip[GR_DEC_TILES], 2);
    CU_ASSERT_EQUAL(p->ops[0].grid[0] % 2, 0);
    gr_plan_destroy(p);
    /* the fp32 target size (B = 4, d = 1024, f = 4096): 2 blocks per SM */
    const char *sfp[] = {"dtype=fp32", "L=8", "d=1024", "f=4096", "B=4"};
    p = decode_plan("fused_persistent", sfp, 5);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->ops[0].grid[0], 264);
    CU_ASSERT_EQUAL(p->ops[0].ip[GR_DEC_BT], 4);
    gr_plan_destroy(p);
}

/* A decode_step workload of L layers (d = 64, f = 96, r = 8) with its inputs given as JSON. */
static const char *step_json(char *buf, size_t size, int L, const char *x_shape, const char *inputs,
                             const char *outputs) {
    snprintf(buf, size,
             "{\"name\": \"s\", \"params\": {\"L\": %d}, \"buffers\": ["
             "{\"name\": \"x\", \"dtype\": \"bf16\", \"shape\": %s, \"init\": \"normal\"},"
             "{\"name\": \"act\", \"dtype\": \"bf16\", \"shape\": [2, 96]},"
             "{\"repeat\": \"L\", \"var\": \"i\", \"buffers\": ["
             "{\"name\": \"w_norm.{i}\", \"dtype\": \"bf16\", \"shape\": [64], \"init\": \"ones\"},"
             "{\"name\": \"W_gate.{i}\", \"dtype\": \"bf16\", \"shape\": [96, 64], \"init\": "
             "\"normal\"},"
             "{\"name\": \"W_up.{i}\", \"dtype\": \"bf16\", \"shape\": [96, 64], \"init\": "
             "\"normal\"},"
             "{\"name\": \"W_down.{i}\", \"dtype\": \"bf16\", \"shape\": [64, 96], \"init\": "
             "\"normal\"},"
             "{\"name\": \"A_gate.{i}\", \"dtype\": \"bf16\", \"shape\": [8, 64], \"init\": "
             "\"normal\"},"
             "{\"name\": \"A_up.{i}\", \"dtype\": \"bf16\", \"shape\": [8, 64], \"init\": "
             "\"normal\"},"
             "{\"name\": \"A_down.{i}\", \"dtype\": \"bf16\", \"shape\": [8, 96], \"init\": "
             "\"normal\"},"
             "{\"name\": \"B_gate.{i}\", \"dtype\": \"bf16\", \"shape\": [96, 8], \"init\": "
             "\"normal\"},"
             "{\"name\": \"B_up.{i}\", \"dtype\": \"bf16\", \"shape\": [96, 8], \"init\": "
             "\"normal\"},"
             "{\"name\": \"B_down.{i}\", \"dtype\": \"bf16\", \"shape\": [64, 8], \"init\": "
             "\"normal\"}]}],"
             "\"outputs\": [\"x\"], \"ops\": [{\"kernel\": \"decode_step\", \"inputs\": %s, "
             "\"outputs\": %s, \"attrs\": {\"scale\": 2}}]}",
             L, x_shape, inputs, outputs);
    return buf;
}

#define STEP_NAMES                                                                                 \
    "[\"w_norm.{i}\", \"W_gate.{i}\", \"W_up.{i}\", \"W_down.{i}\", \"A_gate.{i}\", "              \
    "\"A_up.{i}\", \"A_down.{i}\", \"B_gate.{i}\", \"B_up.{i}\", \"B_down.{i}\"]"

static void test_step_errors(void) {
    char json[8192];
    const char *all = "[\"x\", {\"repeat\": \"L\", \"var\": \"i\", \"names\": " STEP_NAMES "}]";
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(step_json(json, sizeof(json), 2, "[2, 64]", all, "[\"x\", \"act\"]"),
                              NULL, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->ops[0].ninputs, 21);
    gr_plan_destroy(p);
    /* a weight too many: the count names the layout and the repeat block that lists it */
    const char *extra =
        "[\"x\", {\"repeat\": \"L\", \"var\": \"i\", \"names\": " STEP_NAMES "}, \"x\"]";
    const char *m = gr_test_plan_error(
        step_json(json, sizeof(json), 2, "[2, 64]", extra, "[\"x\", \"act\"]"), NULL);
    GR_ASSERT_CONTAINS(m, "kernel \"decode_step\" takes x and then 10 weights per layer (w_norm, "
                          "W_gate, W_up, W_down, A_gate, A_up, A_down, B_gate, B_up, B_down), "
                          "for 1 to 48 layers: 1 + 10 L inputs; got 22");
    /* layers swapped within a layer: W_up where W_down belongs has shape [96, 64] */
    const char *swapped = "[\"x\", {\"repeat\": \"L\", \"var\": \"i\", \"names\": [\"w_norm.{i}\", "
                          "\"W_gate.{i}\", \"W_up.{i}\", \"W_up.{i}\", \"A_gate.{i}\", "
                          "\"A_up.{i}\", \"A_down.{i}\", \"B_gate.{i}\", \"B_up.{i}\", "
                          "\"B_down.{i}\"]}]";
    m = gr_test_plan_error(step_json(json, sizeof(json), 2, "[2, 64]", swapped, "[\"x\", \"act\"]"),
                           NULL);
    GR_ASSERT_CONTAINS(m, "inputs[4] (W_down of layer 0) \"W_up.0\"");
    GR_ASSERT_CONTAINS(m, "inputs[14] (W_down of layer 1) \"W_up.1\"");
    /* not in place */
    m = gr_test_plan_error(step_json(json, sizeof(json), 1, "[2, 64]", all, "[\"act\", \"x\"]"),
                           NULL);
    GR_ASSERT_CONTAINS(m,
                       "outputs[0] \"act\" must be inputs[0] \"x\": the step updates x in place");
    /* B = 9: the GEMV streams the weights per batch tile of 8 */
    m = gr_test_plan_error(step_json(json, sizeof(json), 1, "[9, 64]", all, "[\"x\", \"act\"]"),
                           NULL);
    GR_ASSERT_CONTAINS(m, "kernel \"decode_step\" streams the weights once per batch tile and "
                          "serves B <= gemv_max_b = 8 (at most 8); B = 9: use the per-layer "
                          "kernels");
    /* an unknown name inside an inputs repeat block names its iteration */
    const char *typo = "[\"x\", {\"repeat\": \"L\", \"var\": \"i\", \"names\": [\"w_norm.{i}\", "
                       "\"W_gate.{i}\", \"W_up.{i}\", \"W_dwn.{i}\", \"A_gate.{i}\", "
                       "\"A_up.{i}\", \"A_down.{i}\", \"B_gate.{i}\", \"B_up.{i}\", "
                       "\"B_down.{i}\"]}]";
    m = gr_test_plan_error(step_json(json, sizeof(json), 2, "[2, 64]", typo, "[\"x\", \"act\"]"),
                           NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].inputs[1].names[3]{i=0}: unknown buffer \"W_dwn.0\" (did you "
                          "mean \"W_down.0\"?)");
    /* a malformed block and a non-name element */
    m = gr_test_plan_error(step_json(json, sizeof(json), 1, "[2, 64]",
                                     "[\"x\", {\"repeat\": \"L\", \"var\": \"i\"}]",
                                     "[\"x\", \"act\"]"),
                           NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].inputs[1]: ");
    GR_ASSERT_CONTAINS(m,
                       "(a repeat block is {\"repeat\": COUNT, \"var\": \"i\", \"names\": [...]})");
    m = gr_test_plan_error(
        step_json(json, sizeof(json), 1, "[2, 64]", "[\"x\", 3]", "[\"x\", \"act\"]"), NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].inputs[1]: expected a buffer name or a repeat block");
    /* more names than an op takes */
    m = gr_test_plan_error(step_json(json, sizeof(json), 1, "[2, 64]",
                                     "[\"x\", {\"repeat\": 600, \"var\": \"j\", \"names\": "
                                     "[\"x\"]}]",
                                     "[\"x\", \"act\"]"),
                           NULL);
    GR_ASSERT_CONTAINS(m, "more than 512 inputs");
    /* outputs take repeat blocks too, with their own limit */
    gr_error_clear(&e);
    p = gr_test_plan(step_json(json, sizeof(json), 1, "[2, 64]", all,
                               "[{\"repeat\": 1, \"var\": \"k\", \"names\": [\"x\"]}, \"act\"]"),
                     NULL, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->ops[0].noutputs, 2);
    CU_ASSERT_EQUAL(p->ops[0].outputs[0], p->ops[0].inputs[0]);
    gr_plan_destroy(p);
    m = gr_test_plan_error(step_json(json, sizeof(json), 1, "[2, 64]", all,
                                     "[{\"repeat\": 9, \"var\": \"k\", \"names\": [\"act\"]}]"),
                           NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].outputs[0].names[0]{k=8}: more than 8 outputs");
}

/* ---------- every error message, naming its place ---------- */

/* A gate_up / down / norm_stats workload whose buffers can be reshaped one at a time. */
typedef struct over {
    const char *name, *dtype, *shape;
} over;

static const char *fused_json_n(char *buf, size_t size, const over *ov, int nov, const char *ops) {
    struct {
        const char *name, *dtype, *shape;
    } b[] = {{"x", "bf16", "[2, 64]"},   {"w", "bf16", "[64]"},       {"ssq", "fp32", "[2]"},
             {"tin", "fp32", "[16, 2]"}, {"Wg", "bf16", "[96, 64]"},  {"Wu", "bf16", "[96, 64]"},
             {"Bg", "bf16", "[96, 8]"},  {"Bu", "bf16", "[96, 8]"},   {"Ad", "bf16", "[8, 96]"},
             {"act", "bf16", "[2, 96]"}, {"td", "fp32", "[8, 2]"},    {"Wd", "bf16", "[64, 96]"},
             {"Bd", "bf16", "[64, 8]"},  {"Ag", "bf16", "[8, 64]"},   {"Au", "bf16", "[8, 64]"},
             {"ssq2", "fp32", "[2]"},    {"tin2", "fp32", "[16, 2]"}, {"td2", "fp32", "[8, 2]"},
             {"xi", "int32", "[2, 64]"}};
    size_t o = (size_t)snprintf(buf, size, "{\"name\": \"e\", \"buffers\": [");
    for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
        const char *dt = b[i].dtype, *sh = b[i].shape;
        for (int k = 0; k < nov; k++)
            if (ov[k].name && !strcmp(ov[k].name, b[i].name)) {
                if (ov[k].dtype) dt = ov[k].dtype;
                if (ov[k].shape) sh = ov[k].shape;
            }
        o += (size_t)snprintf(
            buf + o, size - o,
            "%s{\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": %s, \"init\": \"%s\"}",
            i ? "," : "", b[i].name, dt, sh, !strcmp(b[i].name, "xi") ? "zeros" : "normal");
    }
    snprintf(buf + o, size - o,
             "], \"outputs\": [\"x\"], \"ops\": [{\"kernel\": \"add\", \"inputs\": [\"x\", \"x\"], "
             "\"outputs\": [\"x\"]}, %s]}",
             ops);
    return buf;
}

static const char *fused_json(char *buf, size_t size, const char *name, const char *dtype,
                              const char *shape, const char *ops) {
    over ov = {name, dtype, shape};
    return fused_json_n(buf, size, &ov, 1, ops);
}

#define GATE_UP_OP                                                                                 \
    "{\"kernel\": \"decode_gate_up\", \"inputs\": [\"x\", \"w\", \"ssq\", \"tin\", \"Wg\", "       \
    "\"Wu\", \"Bg\", \"Bu\", \"Ad\"], "                                                            \
    "\"outputs\": [\"act\", \"td\"], \"attrs\": {\"scale\": 2}}"
#define DOWN_OP                                                                                    \
    "{\"kernel\": \"decode_down\", \"inputs\": [\"x\", \"act\", \"Wd\", \"Bd\", \"td\", \"w\", "   \
    "\"Ag\", \"Au\"], "                                                                            \
    "\"outputs\": [\"x\", \"ssq2\", \"tin2\", \"td2\"], \"attrs\": {\"scale\": 2}}"
#define STATS_OP                                                                                   \
    "{\"kernel\": \"decode_norm_stats\", \"inputs\": [\"x\", \"w\", \"Ag\", \"Au\"], "             \
    "\"outputs\": [\"ssq\", \"tin\", \"td\"]}"

static const char *fused_error(const char *name, const char *dtype, const char *shape,
                               const char *ops) {
    static char json[8192];
    return gr_test_plan_error(fused_json(json, sizeof(json), name, dtype, shape, ops), NULL);
}

static void test_fused_valid_baseline(void) {
    char json[8192];
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(
        fused_json(json, sizeof(json), NULL, NULL, NULL, STATS_OP ", " GATE_UP_OP ", " DOWN_OP),
        NULL, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p); /* so every error below is caused by the one change */
    CU_ASSERT_EQUAL(p->ops[3].ip[GR_DEC_FLAGS], GR_DEC_F_NEXT | GR_DEC_F_ZERO);
    CU_ASSERT_EQUAL(p->ops[2].ip[GR_DEC_BT], 2);
    gr_plan_destroy(p);
}

static void test_gate_up_errors(void) {
    const char *m;
    m = fused_error("Wg", NULL, "[96, 32]", GATE_UP_OP);
    GR_ASSERT_CONTAINS(m, "ops[1]: kernel \"decode_gate_up\": inputs[4] (W_gate) \"Wg\" has shape "
                          "[96, 32]; it must be [f, d] = [96, 64]");
    m = fused_error("Bu", NULL, "[8, 96]", GATE_UP_OP);
    GR_ASSERT_CONTAINS(m, "inputs[7] (B_up) \"Bu\" has shape [8, 96]; it must be [f, r] = [96, 8]");
    m = fused_error("Ad", NULL, "[8, 95]", GATE_UP_OP);
    GR_ASSERT_CONTAINS(m,
                       "inputs[8] (A_down) \"Ad\" has shape [8, 95]; it must be [r, f] = [8, 96]");
    m = fused_error("w", NULL, "[63]", GATE_UP_OP);
    GR_ASSERT_CONTAINS(m, "inputs[1] (w_norm) \"w\" has shape [63]; it must be [d] = [64]");
    m = fused_error("Wu", "fp32", NULL, GATE_UP_OP);
    GR_ASSERT_CONTAINS(
        m,
        "ops[1]: kernel \"decode_gate_up\": inputs[5] (W_up) \"Wu\" is fp32 but x \"x\" is bf16");
    m = fused_error("ssq", "bf16", NULL, GATE_UP_OP);
    GR_ASSERT_CONTAINS(
        m, "ops[1]: kernel \"decode_gate_up\": inputs[2] (ssq) \"ssq\" is bf16; it takes fp32");
    m = fused_error("tin", NULL, "[8, 2]", GATE_UP_OP);
    GR_ASSERT_CONTAINS(m, "inputs[3] (tin) \"tin\" has shape [8, 2] (16 elements); it must hold "
                          "[2r, B] = [16, 2] fp32 values (32 elements)");
    m = fused_error("td", NULL, "[8, 3]", GATE_UP_OP);
    GR_ASSERT_CONTAINS(m, "outputs[1] (tdown) \"td\" has shape [8, 3]");
    m = fused_error("act", NULL, "[3, 96]", GATE_UP_OP);
    GR_ASSERT_CONTAINS(m,
                       "outputs[0] (act) \"act\" has shape [3, 96]; it must be [B, f] = [2, 96]");
    m = fused_error("x", NULL, "[128]", GATE_UP_OP);
    GR_ASSERT_CONTAINS(m, "ops[1]: kernel \"decode_gate_up\": x \"x\" [128] must be [B, d]");
    m = fused_error("xi", NULL, NULL,
                    "{\"kernel\": \"decode_gate_up\", \"inputs\": [\"xi\", \"w\", \"ssq\", "
                    "\"tin\", \"Wg\", \"Wu\", \"Bg\", \"Bu\", \"Ad\"], \"outputs\": [\"act\", "
                    "\"td\"], \"attrs\": {\"scale\": 2}}");
    GR_ASSERT_CONTAINS(m, "ops[1]: kernel \"decode_gate_up\": inputs[0] (x) \"xi\" is int32; it "
                          "takes fp32, bf16, fp16");
    /* d not a multiple of 8 bf16 elements (x, w, W_gate, W_up reshaped together) */
    char json[8192];
    over d60[] = {{"x", NULL, "[2, 60]"},
                  {"w", NULL, "[60]"},
                  {"Wg", NULL, "[96, 60]"},
                  {"Wu", NULL, "[96, 60]"}};
    m = gr_test_plan_error(fused_json_n(json, sizeof(json), d60, 4, GATE_UP_OP), NULL);
    GR_ASSERT_CONTAINS(m, "ops[1]: kernel \"decode_gate_up\": d = 60 is not a multiple of 8; the "
                          "fused kernels read 16 bytes (8 bf16 elements) at a time");
    /* r not a multiple of 8 */
    over r4[] = {{"Bg", NULL, "[96, 4]"},
                 {"Bu", NULL, "[96, 4]"},
                 {"Ad", NULL, "[4, 96]"},
                 {"tin", NULL, "[8, 2]"},
                 {"td", NULL, "[4, 2]"}};
    m = gr_test_plan_error(fused_json_n(json, sizeof(json), r4, 5, GATE_UP_OP), NULL);
    GR_ASSERT_CONTAINS(m, "ops[1]: kernel \"decode_gate_up\": r = 4 is not a multiple of 8");
    /* aliasing */
    m = fused_error(NULL, NULL, NULL,
                    "{\"kernel\": \"decode_gate_up\", \"inputs\": [\"x\", \"w\", \"ssq\", \"tin\", "
                    "\"Wg\", \"Wu\", \"Bg\", \"Bu\", \"Ad\"], \"outputs\": [\"act\", \"tin\"], "
                    "\"attrs\": {\"scale\": 2}}");
    GR_ASSERT_CONTAINS(m, "ops[1]: kernel \"decode_gate_up\": outputs[1] \"tin\" is also "
                          "inputs[3]; give it its own buffer");
    m = fused_error(NULL, NULL, NULL,
                    "{\"kernel\": \"decode_gate_up\", \"inputs\": [\"x\", \"w\", \"ssq\", \"tin\", "
                    "\"Wg\", \"Wu\", \"Bg\", \"Bu\", \"Ad\"], \"outputs\": [\"act\", \"td\", "
                    "\"td2\", \"td2\"], \"attrs\": {\"scale\": 2}}");
    GR_ASSERT_CONTAINS(m, "outputs[2] and outputs[3] are both \"td2\"");
    /* three outputs */
    m = fused_error(NULL, NULL, NULL,
                    "{\"kernel\": \"decode_gate_up\", \"inputs\": [\"x\", \"w\", \"ssq\", \"tin\", "
                    "\"Wg\", \"Wu\", \"Bg\", \"Bu\", \"Ad\"], \"outputs\": [\"act\", \"td\", "
                    "\"ssq2\"], \"attrs\": {\"scale\": 2}}");
    GR_ASSERT_CONTAINS(m, "ops[1]: kernel \"decode_gate_up\": give both outputs[2] (ssq_next) and "
                          "outputs[3] (tin_next)");
    /* eps */
    m = fused_error(NULL, NULL, NULL,
                    "{\"kernel\": \"decode_gate_up\", \"inputs\": [\"x\", \"w\", \"ssq\", \"tin\", "
                    "\"Wg\", \"Wu\", \"Bg\", \"Bu\", \"Ad\"], \"outputs\": [\"act\", \"td\"], "
                    "\"attrs\": {\"scale\": 2, \"eps\": -1}}");
    GR_ASSERT_CONTAINS(m, "ops[1]: kernel \"decode_gate_up\": eps = -1 must be >= 0");
    /* scale is required */
    m = fused_error(NULL, NULL, NULL,
                    "{\"kernel\": \"decode_gate_up\", \"inputs\": [\"x\", \"w\", \"ssq\", \"tin\", "
                    "\"Wg\", \"Wu\", \"Bg\", \"Bu\", \"Ad\"], \"outputs\": [\"act\", \"td\"]}");
    GR_ASSERT_CONTAINS(m, "kernel \"decode_gate_up\" needs attribute \"scale\"");
}

static void test_down_and_stats_errors(void) {
    const char *m;
    m = fused_error("Wd", NULL, "[96, 64]", DOWN_OP);
    GR_ASSERT_CONTAINS(m, "ops[1]: kernel \"decode_down\": inputs[2] (W_down) \"Wd\" has shape "
                          "[96, 64]; it must be [d, f] = [64, 96]");
    m = fused_error("Ag", NULL, "[8, 32]", DOWN_OP);
    GR_ASSERT_CONTAINS(
        m, "inputs[6] (A_gate_next) \"Ag\" has shape [8, 32]; it must be [r, d] = [8, 64]");
    m = fused_error("td", "bf16", NULL, DOWN_OP);
    GR_ASSERT_CONTAINS(
        m, "ops[1]: kernel \"decode_down\": inputs[4] (tdown) \"td\" is bf16; it takes fp32");
    m = fused_error("tin2", NULL, "[2]", DOWN_OP);
    GR_ASSERT_CONTAINS(
        m, "outputs[2] (tin_next) \"tin2\" has shape [2] (2 elements); it must hold [2r, B]");
    m = fused_error("td2", NULL, "[4]", DOWN_OP);
    GR_ASSERT_CONTAINS(m, "last output (tdown_next, zeroed) \"td2\" has shape [4]");
    m = fused_error("Bd", NULL, "[64]", DOWN_OP);
    GR_ASSERT_CONTAINS(m, "ops[1]: kernel \"decode_down\": x \"x\" [2, 64] must be [B, d], act "
                          "\"act\" [2, 96] must be [B, f] and B_down \"Bd\" [64] must be [d, r]");
    m = fused_error("act", NULL, "[2, 92]", DOWN_OP);
    GR_ASSERT_CONTAINS(
        m, "inputs[2] (W_down) \"Wd\" has shape [64, 96]; it must be [d, f] = [64, 92]");
    m = fused_error(NULL, NULL, NULL,
                    "{\"kernel\": \"decode_down\", \"inputs\": [\"x\", \"act\", \"Wd\", \"Bd\", "
                    "\"td\", \"w\"], \"outputs\": [\"x\"], \"attrs\": {\"scale\": 2}}");
    GR_ASSERT_CONTAINS(
        m, "ops[1]: kernel \"decode_down\" takes 5 inputs (x, act, W_down, B_down, tdown) or 8");
    m = fused_error(
        NULL, NULL, NULL,
        "{\"kernel\": \"decode_down\", \"inputs\": [\"x\", \"act\", \"Wd\", \"Bd\", \"td\", \"w\", "
        "\"Ag\", \"Au\"], \"outputs\": [\"x\"], \"attrs\": {\"scale\": 2}}");
    GR_ASSERT_CONTAINS(
        m, "ops[1]: kernel \"decode_down\": with 8 inputs the outputs are x, ssq_next, tin_next "
           "(the next layer's statistics) and optionally a tdown to zero (3 or 4 outputs); got 1");
    m = fused_error(NULL, NULL, NULL,
                    "{\"kernel\": \"decode_down\", \"inputs\": [\"x\", \"act\", \"Wd\", \"Bd\", "
                    "\"td\"], \"outputs\": [\"act\"], \"attrs\": {\"scale\": 2}}");
    GR_ASSERT_CONTAINS(m, "outputs[0] \"act\" is also inputs[1]; give it its own buffer");
    m = fused_error("x", NULL, "[2, 60]",
                    "{\"kernel\": \"decode_down\", \"inputs\": [\"x\", \"act\", \"Wd\", \"Bd\", "
                    "\"td\"], \"outputs\": [\"x\"], \"attrs\": {\"scale\": 2}}");
    GR_ASSERT_CONTAINS(
        m, "inputs[2] (W_down) \"Wd\" has shape [64, 96]; it must be [d, f] = [60, 96]");
    /* f not a multiple of 8 */
    char json[8192];
    over f92[] = {{"act", NULL, "[2, 92]"}, {"Wd", NULL, "[64, 92]"}};
    GR_ASSERT_CONTAINS(
        gr_test_plan_error(
            fused_json_n(json, sizeof(json), f92, 2,
                         "{\"kernel\": \"decode_down\", \"inputs\": [\"x\", \"act\", \"Wd\", "
                         "\"Bd\", \"td\"], \"outputs\": [\"x\"], \"attrs\": {\"scale\": 2}}"),
            NULL),
        "ops[1]: kernel \"decode_down\": f = 92 is not a multiple of 8");
    /* d (down's output rows, read 4 at a time) not a multiple of 8 */
    over d60[] = {{"x", NULL, "[2, 60]"}, {"Wd", NULL, "[60, 96]"}, {"Bd", NULL, "[60, 8]"}};
    GR_ASSERT_CONTAINS(
        gr_test_plan_error(
            fused_json_n(json, sizeof(json), d60, 3,
                         "{\"kernel\": \"decode_down\", \"inputs\": [\"x\", \"act\", \"Wd\", "
                         "\"Bd\", \"td\"], \"outputs\": [\"x\"], \"attrs\": {\"scale\": 2}}"),
            NULL),
        "ops[1]: kernel \"decode_down\": d = 60 is not a multiple of 8");
    /* gate_up: f (its output rows, two per task) not a multiple of 8 */
    over gf92[] = {{"act", NULL, "[2, 92]"}, {"Wg", NULL, "[92, 64]"}, {"Wu", NULL, "[92, 64]"},
                   {"Bg", NULL, "[92, 8]"},  {"Bu", NULL, "[92, 8]"},  {"Ad", NULL, "[8, 92]"}};
    GR_ASSERT_CONTAINS(
        gr_test_plan_error(fused_json_n(json, sizeof(json), gf92, 6, GATE_UP_OP), NULL),
        "ops[1]: kernel \"decode_gate_up\": f = 92 is not a multiple of 8");
    /* the cuBLAS path (B > gemv_max_b) keeps 2r fp32 values per block in 48 KB of shared memory */
    over big_r[] = {{"x", NULL, "[9, 64]"},      {"ssq", NULL, "[9]"},
                    {"tin", NULL, "[12288, 9]"}, {"Bg", NULL, "[96, 6144]"},
                    {"Bu", NULL, "[96, 6144]"},  {"Ad", NULL, "[6144, 96]"},
                    {"act", NULL, "[9, 96]"},    {"td", NULL, "[6144, 9]"}};
    GR_ASSERT_CONTAINS(
        gr_test_plan_error(fused_json_n(json, sizeof(json), big_r, 8, GATE_UP_OP), NULL),
        "ops[1]: kernel \"decode_gate_up\": r = 6144 or B = 9 is too large for the cuBLAS path "
        "(B > gemv_max_b = 8)");
    /* norm_stats */
    m = fused_error("Au", NULL, "[8, 63]", STATS_OP);
    GR_ASSERT_CONTAINS(m, "ops[1]: kernel \"decode_norm_stats\": inputs[3] (A_up) \"Au\" has shape "
                          "[8, 63]; it must be [r, d] = [8, 64]");
    m = fused_error("Ag", NULL, "[512]", STATS_OP);
    GR_ASSERT_CONTAINS(m, "ops[1]: kernel \"decode_norm_stats\": x \"x\" [2, 64] must be [B, d] "
                          "and A_gate \"Ag\" [512] must be [r, d]");
    m = fused_error("ssq", NULL, "[3]", STATS_OP);
    GR_ASSERT_CONTAINS(m, "outputs[0] (ssq) \"ssq\" has shape [3] (3 elements); it must hold [1, "
                          "B] = [1, 2] fp32 values");
    m = fused_error("td", NULL, "[9]", STATS_OP);
    GR_ASSERT_CONTAINS(m, "outputs[2] (tdown, zeroed) \"td\" has shape [9]");
    m = fused_error("w", "fp32", NULL, STATS_OP);
    GR_ASSERT_CONTAINS(m, "inputs[1] (w_norm) \"w\" is fp32 but x \"x\" is bf16");
    m = fused_error(NULL, NULL, NULL,
                    "{\"kernel\": \"decode_norm_stats\", \"inputs\": [\"x\", \"w\", \"Ag\", "
                    "\"Au\"], \"outputs\": [\"ssq\", \"ssq\"]}");
    GR_ASSERT_CONTAINS(m, "outputs[0] and outputs[1] are both \"ssq\"");
}

static void test_size_limit_errors(void) {
    /* shared memory: one fp32 row of x * w_norm of d = 60000 elements needs 234 KB */
    const char *big[] = {"d=60000", "f=64", "dtype=fp32"};
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_workload_load_file(gr_test_src(DECODE_JSON), &wl, &e), GR_OK);
    for (int i = 0; i < 3; i++)
        gr_workload_set(wl, big[i], &e);
    gr_plan *p = NULL;
    gr_target t = gr_target_default();
    CU_ASSERT_NOT_EQUAL(
        gr_plan_resolve(wl, "fused", &t, gr_kernel_find, gr_kernel_all_names, &p, &e), GR_OK);
    GR_ASSERT_CONTAINS(
        e.msg, "variants.fused.ops[1].ops[0]{i=0}: kernel \"decode_gate_up\": d = 60000 needs "
               "234.");
    GR_ASSERT_CONTAINS(
        e.msg, "KB of shared memory per block for one batch row; the target (NVIDIA H200 (assumed; "
               "no device read), cc 9.0) allows 227.0 KB. Use a smaller d or the unfused variant");
    /* a smaller GPU allows less: d = 32768 fits an H200 but not a cc 8.6 part */
    gr_error_clear(&e);
    gr_workload_set(wl, "d=32768", &e);
    gr_target small = t;
    small.cc_major = 8;
    small.cc_minor = 6;
    snprintf(small.name, sizeof(small.name), "RTX");
    CU_ASSERT_EQUAL(gr_plan_resolve(wl, "fused", &t, gr_kernel_find, gr_kernel_all_names, &p, &e),
                    GR_OK);
    gr_plan_destroy(p);
    p = NULL;
    CU_ASSERT_NOT_EQUAL(
        gr_plan_resolve(wl, "fused", &small, gr_kernel_find, gr_kernel_all_names, &p, &e), GR_OK);
    GR_ASSERT_CONTAINS(e.msg, "d = 32768 needs 128.");
    GR_ASSERT_CONTAINS(e.msg, "the target (RTX, cc 8.6) allows 99.0 KB");
    gr_workload_destroy(wl);
    /* B beyond one grid dimension of norm_stats; no memory is allocated by validation */
    const char *json =
        "{\"name\": \"b\", \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [70000, "
        "4], \"init\": \"normal\"},"
        "{\"name\": \"w\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": \"normal\"},"
        "{\"name\": \"A\", \"dtype\": \"fp32\", \"shape\": [4, 4], \"init\": \"normal\"},"
        "{\"name\": \"s\", \"dtype\": \"fp32\", \"shape\": [70000]}, {\"name\": \"t\", \"dtype\": "
        "\"fp32\", \"shape\": [8, 70000]}],"
        "\"outputs\": [\"s\"], \"ops\": [{\"kernel\": \"decode_norm_stats\", \"inputs\": [\"x\", "
        "\"w\", \"A\", \"A\"], \"outputs\": [\"s\", \"t\"]}]}";
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL),
                       "ops[0]: kernel \"decode_norm_stats\": B = 70000 exceeds 65535");
    /* d or f beyond 2^30 */
    const char *huge =
        "{\"name\": \"h\", \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [1, 4], "
        "\"init\": \"normal\"},"
        "{\"name\": \"w\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": \"normal\"},"
        "{\"name\": \"s\", \"dtype\": \"fp32\", \"shape\": [1], \"init\": \"ones\"}, {\"name\": "
        "\"t\", \"dtype\": \"fp32\", \"shape\": [8, 1], \"init\": \"ones\"},"
        "{\"name\": \"W\", \"dtype\": \"fp32\", \"shape\": [1073741832, 4], \"init\": \"normal\"},"
        "{\"name\": \"Bm\", \"dtype\": \"fp32\", \"shape\": [1073741832, 4], \"init\": \"normal\"},"
        "{\"name\": \"Ad\", \"dtype\": \"fp32\", \"shape\": [4, 1073741832], \"init\": \"normal\"},"
        "{\"name\": \"a\", \"dtype\": \"fp32\", \"shape\": [1, 1073741832]}, {\"name\": \"td\", "
        "\"dtype\": \"fp32\", \"shape\": [4, 1]}],"
        "\"outputs\": [\"a\"], \"ops\": [{\"kernel\": \"decode_gate_up\", \"inputs\": [\"x\", "
        "\"w\", \"s\", \"t\", \"W\", \"W\", \"Bm\", \"Bm\", \"Ad\"], \"outputs\": [\"a\", \"td\"], "
        "\"attrs\": {\"scale\": 1}}]}";
    GR_ASSERT_CONTAINS(gr_test_plan_error(huge, NULL),
                       "ops[0]: kernel \"decode_gate_up\": d or f exceeds 2^30");
}

static void test_small_kernel_errors(void) {
    const char *fmt =
        "{\"name\": \"s\", \"buffers\": ["
        "{\"name\": \"a\", \"dtype\": \"%s\", \"shape\": %s, \"init\": \"ones\"},"
        "{\"name\": \"b\", \"dtype\": \"fp32\", \"shape\": %s, \"init\": \"ones\"},"
        "{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": %s}], \"outputs\": [\"y\"],"
        "\"ops\": [{\"kernel\": \"%s\", \"inputs\": %s, \"outputs\": [\"y\"]%s}]}";
    char json[2048];
    snprintf(json, sizeof(json), fmt, "fp32", "[4, 3]", "[3]", "[4, 4]", "square", "[\"a\"]", "");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL),
                       "ops[0]: kernel \"square\": outputs[0] \"y\" has shape [4, 4] (16 elements) "
                       "but inputs[0] \"a\" has [4, 3] (12); elementwise operands must match");
    snprintf(json, sizeof(json), fmt, "fp32", "[4, 3]", "[5]", "[4, 3]", "scale_add",
             "[\"a\", \"b\"]", ", \"attrs\": {\"s\": 2}");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL),
                       "ops[0]: kernel \"scale_add\": inputs[1] \"b\" has shape [5] (5 elements)");
    snprintf(json, sizeof(json), fmt, "fp32", "[4, 3]", "[4, 3]", "[4, 3]", "scale_add",
             "[\"a\", \"b\"]", "");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL),
                       "kernel \"scale_add\" needs attribute \"s\"");
    snprintf(json, sizeof(json), fmt, "int32", "[4, 3]", "[4, 3]", "[4, 3]", "rsqrt_eps", "[\"a\"]",
             "");
    GR_ASSERT_CONTAINS(
        gr_test_plan_error(json, NULL),
        "ops[0]: kernel \"rsqrt_eps\": inputs[0] \"a\" is int32; it takes fp32, bf16, fp16");
    snprintf(json, sizeof(json), fmt, "fp32", "[4, 3]", "[3]", "[3, 1]", "mean_lastdim", "[\"a\"]",
             "");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL),
                       "ops[0]: kernel \"mean_lastdim\": y \"y\" has shape [3, 1] (3 elements); "
                       "the mean over the last dim of x \"a\" [4, 3] gives 4 values");
    snprintf(json, sizeof(json), fmt, "fp32", "[4, 3]", "[4]", "[4, 3]", "mul_bcast",
             "[\"a\", \"b\"]", "");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL),
                       "ops[0]: kernel \"mul_bcast\": b \"b\" [4] does not broadcast against a "
                       "\"a\" [4, 3]; give b [4, 1] (one value per row) or [3] (one per column)");
    snprintf(json, sizeof(json), fmt, "fp32", "[4, 3]", "[4, 1]", "[4, 2]", "mul_bcast",
             "[\"a\", \"b\"]", "");
    GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL),
                       "ops[0]: kernel \"mul_bcast\": outputs[0] \"y\" has shape [4, 2] (8 "
                       "elements) but inputs[0] \"a\" has [4, 3] (12)");
    /* valid broadcasts: per row and per column, including a 1 x C row vector */
    const char *ok[][2] = {{"[4, 1]", "per-row"}, {"[3]", "per-col"}, {"[1, 3]", "per-col"}};
    for (int i = 0; i < 3; i++) {
        snprintf(json, sizeof(json), fmt, "bf16", "[4, 3]", ok[i][0], "[4, 3]", "mul_bcast",
                 "[\"a\", \"b\"]", "");
        gr_error e;
        gr_error_clear(&e);
        gr_plan *p = gr_test_plan(json, NULL, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_EQUAL(p->ops[0].ip[2], ok[i][1][4] == 'r');
        gr_plan_destroy(p);
    }
}

/* gemv_max_b outside [1, 8]: the workload's param names itself (--set params.gemv_max_b), an op
 * attr given directly names the op and the attr; decode_step refuses a B above its gemv_max_b. */
static void test_gemv_max_b_errors(void) {
    const char *bad[][2] = {{"gemv_max_b=9", "9 is outside [1, 8]"},
                            {"gemv_max_b=0", "0 is outside [1, 8]"}};
    for (int i = 0; i < 2; i++) {
        const char *sets[] = {"B=8", bad[i][0]};
        char msg[2048] = "";
        gr_target t = gr_target_default();
        gr_plan *p = decode_plan_for("fused", sets, 2, &t, msg, sizeof(msg));
        CU_ASSERT_PTR_NULL(p);
        gr_plan_destroy(p);
        GR_ASSERT_CONTAINS(msg, "params.gemv_max_b");
        GR_ASSERT_CONTAINS(msg, bad[i][1]);
    }
    /* not a whole number: the attr it is passed to says so */
    {
        const char *sets[] = {"gemv_max_b=4.5"};
        char msg[2048] = "";
        gr_target t = gr_target_default();
        gr_plan *p = decode_plan_for("fused", sets, 1, &t, msg, sizeof(msg));
        CU_ASSERT_PTR_NULL(p);
        gr_plan_destroy(p);
        GR_ASSERT_CONTAINS(msg, ".attrs.gemv_max_b: expected a whole number, got 4.5");
    }
    /* the attr itself, without the param's range */
    const char *m = fused_error(
        NULL, NULL, NULL,
        "{\"kernel\": \"decode_gate_up\", \"inputs\": [\"x\", \"w\", \"ssq\", \"tin\", \"Wg\", "
        "\"Wu\", \"Bg\", \"Bu\", \"Ad\"], \"outputs\": [\"act\", \"td\"], \"attrs\": "
        "{\"scale\": 2, \"gemv_max_b\": 9}}");
    GR_ASSERT_CONTAINS(m, "ops[1].attrs.gemv_max_b: kernel \"decode_gate_up\": gemv_max_b = 9 is "
                          "outside [1, 8]: it is the largest batch the weight-streaming GEMV "
                          "kernels run, and they serve at most 8 rows");
    m = fused_error(NULL, NULL, NULL,
                    "{\"kernel\": \"decode_down\", \"inputs\": [\"x\", \"act\", \"Wd\", \"Bd\", "
                    "\"td\"], \"outputs\": [\"x\"], \"attrs\": {\"scale\": 2, \"gemv_max_b\": 0}}");
    GR_ASSERT_CONTAINS(m, "ops[1].attrs.gemv_max_b: kernel \"decode_down\": gemv_max_b = 0 is "
                          "outside [1, 8]");
    /* in range: B = 2 above gemv_max_b = 1 takes the cuBLAS path */
    char json[8192];
    gr_error e;
    gr_error_clear(&e);
    gr_plan *p = gr_test_plan(
        fused_json(json, sizeof(json), NULL, NULL, NULL,
                   "{\"kernel\": \"decode_gate_up\", \"inputs\": [\"x\", \"w\", \"ssq\", \"tin\", "
                   "\"Wg\", \"Wu\", \"Bg\", \"Bu\", \"Ad\"], \"outputs\": [\"act\", \"td\"], "
                   "\"attrs\": {\"scale\": 2, \"gemv_max_b\": 1}}"),
        NULL, &e);
    if (!p) fprintf(stderr, "\n    %s", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_TRUE((p->ops[1].ip[GR_DEC_FLAGS] & GR_DEC_F_BLAS) != 0);
    CU_ASSERT_EQUAL(p->library_ops, 1);
    gr_plan_destroy(p);
    /* decode_step: B = 2 above gemv_max_b = 1, and gemv_max_b = 9 */
    const char *all = "[\"x\", {\"repeat\": \"L\", \"var\": \"i\", \"names\": " STEP_NAMES "}]";
    const char *attrs[][2] = {
        {"\"gemv_max_b\": 1",
         "ops[0]: kernel \"decode_step\" streams the weights once per batch tile and serves B <= "
         "gemv_max_b = 1 (at most 8); B = 2: use the per-layer kernels"},
        {"\"gemv_max_b\": 9",
         "ops[0].attrs.gemv_max_b: kernel \"decode_step\": gemv_max_b = 9 is outside [1, 8]"}};
    for (int i = 0; i < 2; i++) {
        step_json(json, sizeof(json), 1, "[2, 64]", all, "[\"x\", \"act\"]");
        char *at = strstr(json, "\"attrs\": {\"scale\": 2}");
        CU_ASSERT_PTR_NOT_NULL_FATAL(at);
        char tail[256];
        snprintf(tail, sizeof(tail), "%s", at + strlen("\"attrs\": {\"scale\": 2"));
        snprintf(at, sizeof(json) - (size_t)(at - json), "\"attrs\": {\"scale\": 2, %s%s",
                 attrs[i][0], tail);
        GR_ASSERT_CONTAINS(gr_test_plan_error(json, NULL), attrs[i][1]);
    }
}

static CU_TestInfo decode_reference_tests[] = {
    {"small kernels by hand", test_small_kernels_by_hand},
    {"one layer by hand (fused and unfused)", test_decode_layer_by_hand},
    {"variants vs fp64 implementation", test_variants_vs_naive},
    {"fused next-layer statistics", test_fused_next_layer_statistics},
    {"gemv_only reference", test_gemv_only_reference},
    CU_TEST_INFO_NULL};
static CU_TestInfo decode_accounting_tests[] = {
    {"expansion and kernel counts", test_expansion_and_kernel_counts},
    {"weight bytes", test_weight_bytes},
    {"launch geometry", test_launch_geometry},
    {"decode_step expansion", test_step_expansion},
    {"decode_step geometry and bytes", test_step_geometry_and_bytes},
    {"gemv_max_b: GEMV or cuBLAS", test_gemv_max_b},
    CU_TEST_INFO_NULL};
static CU_TestInfo decode_error_tests[] = {
    {"valid baseline", test_fused_valid_baseline},
    {"decode_gate_up", test_gate_up_errors},
    {"decode_down and decode_norm_stats", test_down_and_stats_errors},
    {"size limits", test_size_limit_errors},
    {"small kernels", test_small_kernel_errors},
    {"decode_step", test_step_errors},
    {"gemv_max_b", test_gemv_max_b_errors},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_decode_suites[] = {{"decode_reference", decode_reference_tests, 0},
                                          {"decode_accounting", decode_accounting_tests, 0},
                                          {"decode_errors", decode_error_tests, 0},
                                          {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_decode_suites)
