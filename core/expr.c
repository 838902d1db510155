/* Recursive-descent evaluator for param arithmetic. Depth and length are bounded so that no
 * workload can make the loader recurse without end. */
#include "core/expr.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPR_MAX_DEPTH 64
#define EXPR_MAX_LEN 1024

typedef struct parser {
    const char *text, *p;
    gr_expr_lookup lookup;
    void *ctx;
    const char *path, *hint;
    gr_error *err;
    int depth;
    int failed;
} parser;

static void fail(parser *ps, const char *fmt, const char *detail) {
    if (ps->failed) return;
    ps->failed = 1;
    char why[256];
    snprintf(why, sizeof(why), fmt, detail ? detail : "");
    gr_error_set(ps->err, GR_ERR_INPUT, ps->path, "expression \"%s\": %s (at column %d)", ps->text,
                 why, (int)(ps->p - ps->text) + 1);
}

static void skip_ws(parser *ps) {
    while (*ps->p == ' ' || *ps->p == '\t') ps->p++;
}

static double parse_expr(parser *ps);

static double call_function(parser *ps, const char *name, double *args, int nargs) {
    struct {
        const char *name;
        int nargs;
    } fns[] = {{"min", 2}, {"max", 2}, {"cdiv", 2}, {"floor", 1}, {"ceil", 1}, {"sqrt", 1}};
    for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        if (strcmp(fns[i].name, name) != 0) continue;
        if (nargs != fns[i].nargs) {
            char d[64];
            snprintf(d, sizeof(d), "%s() takes %d argument%s", name, fns[i].nargs,
                     fns[i].nargs == 1 ? "" : "s");
            fail(ps, "%s", d);
            return 0;
        }
        switch (i) {
        case 0: return args[0] < args[1] ? args[0] : args[1];
        case 1: return args[0] > args[1] ? args[0] : args[1];
        case 2:
            if (args[1] == 0) {
                fail(ps, "%s", "cdiv by zero");
                return 0;
            }
            return ceil(args[0] / args[1]);
        case 3: return floor(args[0]);
        case 4: return ceil(args[0]);
        case 5:
            if (args[0] < 0) {
                fail(ps, "%s", "sqrt of a negative number");
                return 0;
            }
            return sqrt(args[0]);
        }
    }
    fail(ps, "unknown function \"%s\" (functions: min, max, cdiv, floor, ceil, sqrt)", name);
    return 0;
}

static double parse_primary(parser *ps) {
    skip_ws(ps);
    if (ps->failed) return 0;
    if (++ps->depth > EXPR_MAX_DEPTH) {
        fail(ps, "%s", "nested too deeply");
        return 0;
    }
    double v = 0;
    const char *c = ps->p;
    if (*c == '(') {
        ps->p++;
        v = parse_expr(ps);
        skip_ws(ps);
        if (*ps->p != ')') fail(ps, "%s", "expected ')'");
        else ps->p++;
    } else if (isdigit((unsigned char)*c) || (*c == '.' && isdigit((unsigned char)c[1]))) {
        char *end;
        v = strtod(c, &end);
        ps->p = end;
    } else if (isalpha((unsigned char)*c) || *c == '_') {
        char name[128];
        size_t n = 0;
        while ((isalnum((unsigned char)*ps->p) || *ps->p == '_') && n + 1 < sizeof(name))
            name[n++] = *ps->p++;
        name[n] = '\0';
        skip_ws(ps);
        if (*ps->p == '(') {
            ps->p++;
            double args[4];
            int nargs = 0;
            skip_ws(ps);
            if (*ps->p != ')') {
                for (;;) {
                    double a = parse_expr(ps);
                    if (nargs < 4) args[nargs] = a;
                    nargs++;
                    skip_ws(ps);
                    if (*ps->p == ',') {
                        ps->p++;
                        continue;
                    }
                    break;
                }
            }
            if (*ps->p != ')') fail(ps, "%s", "expected ')' after function arguments");
            else ps->p++;
            if (!ps->failed) v = call_function(ps, name, args, nargs > 4 ? 4 : nargs);
        } else {
            int r = ps->lookup ? ps->lookup(ps->ctx, name, &v, ps->err) : 0;
            if (r == 0) {
                char d[512];
                snprintf(d, sizeof(d), "unknown name \"%s\"%s%s", name, ps->hint ? " " : "",
                         ps->hint ? ps->hint : "");
                fail(ps, "%s", d);
            } else if (r < 0) {
                ps->failed = 1;
            }
        }
    } else if (*c == '\0') {
        fail(ps, "%s", "unexpected end of expression");
    } else {
        char d[8] = {*c, 0};
        fail(ps, "unexpected character '%s'", d);
    }
    ps->depth--;
    return v;
}

static double parse_unary(parser *ps);

static double parse_power(parser *ps) {
    double base = parse_primary(ps);
    skip_ws(ps);
    if (ps->p[0] == '*' && ps->p[1] == '*') {
        ps->p += 2;
        double e = parse_unary(ps);
        return pow(base, e);
    }
    return base;
}

static double parse_unary(parser *ps) {
    skip_ws(ps);
    if (++ps->depth > EXPR_MAX_DEPTH) {
        fail(ps, "%s", "nested too deeply");
        return 0;
    }
    double v;
    if (*ps->p == '-') {
        ps->p++;
        v = -parse_unary(ps);
    } else if (*ps->p == '+') {
        ps->p++;
        v = parse_unary(ps);
    } else {
        v = parse_power(ps);
    }
    ps->depth--;
    return v;
}

static double parse_term(parser *ps) {
    double v = parse_unary(ps);
    for (;;) {
        skip_ws(ps);
        if (ps->failed) return v;
        const char *p = ps->p;
        if (p[0] == '*' && p[1] != '*') {
            ps->p++;
            v *= parse_unary(ps);
        } else if (p[0] == '/' && p[1] == '/') {
            ps->p += 2;
            double d = parse_unary(ps);
            if (d == 0) fail(ps, "%s", "division by zero");
            else v = floor(v / d);
        } else if (p[0] == '/') {
            ps->p++;
            double d = parse_unary(ps);
            if (d == 0) fail(ps, "%s", "division by zero");
            else v /= d;
        } else if (p[0] == '%') {
            ps->p++;
            double d = parse_unary(ps);
            if (d == 0) fail(ps, "%s", "modulo by zero");
            else v = fmod(v, d);
        } else {
            return v;
        }
    }
}

static double parse_expr(parser *ps) {
    double v = parse_term(ps);
    for (;;) {
        skip_ws(ps);
        if (ps->failed) return v;
        if (*ps->p == '+') {
            ps->p++;
            v += parse_term(ps);
        } else if (*ps->p == '-') {
            ps->p++;
            v -= parse_term(ps);
        } else {
            return v;
        }
    }
}

gr_status gr_expr_eval(const char *text, gr_expr_lookup lookup, void *ctx, const char *path,
                       const char *names_hint, double *out, gr_error *err) {
    parser ps = {text, text, lookup, ctx, path, names_hint, err, 0, 0};
    if (!text || strlen(text) > EXPR_MAX_LEN) {
        gr_error_set(err, GR_ERR_INPUT, path, "expression longer than %d characters", EXPR_MAX_LEN);
        return GR_ERR_INPUT;
    }
    double v = parse_expr(&ps);
    skip_ws(&ps);
    if (!ps.failed && *ps.p != '\0') fail(&ps, "unexpected '%s' after the expression", ps.p);
    if (!ps.failed && !isfinite(v)) fail(&ps, "%s", "result is not a finite number");
    if (ps.failed) return GR_ERR_INPUT;
    *out = v;
    return GR_OK;
}

int gr_parse_number(const char *text, double *out) {
    if (!text || !*text) return 0;
    char *end;
    double v = strtod(text, &end);
    while (*end == ' ') end++;
    if (*end != '\0' || !isfinite(v)) return 0;
    /* strtod accepts "inf"/"nan"/hex; only plain decimal numbers are numbers here */
    for (const char *c = text; *c; c++)
        if (isalpha((unsigned char)*c) && *c != 'e' && *c != 'E') return 0;
    *out = v;
    return 1;
}
