/* The value parsers of core/args.h, on gr_parse_number (core/expr.h) for numbers. */
#include "core/args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"

int gr_arg_int(const char *s, long long lo, long long hi, long long *out) {
    double v;
    if (!s || !gr_parse_number(s, &v)) return 0;
    if (!(v >= (double)lo && v <= (double)hi)) return 0; /* before the conversion: 1e99 */
    if (v != (double)(long long)v) return 0;
    *out = (long long)v;
    return 1;
}

int gr_arg_int32(const char *s, int lo, int hi, int *out) {
    long long v;
    if (!gr_arg_int(s, lo, hi, &v)) return 0;
    *out = (int)v;
    return 1;
}

int gr_arg_bytes(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !(v > 0)) return 0;
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {{"", 1},          {"B", 1},          {"K", 1e3},        {"KB", 1e3},
                 {"M", 1e6},       {"MB", 1e6},       {"G", 1e9},        {"GB", 1e9},
                 {"T", 1e12},      {"TB", 1e12},      {"KiB", 1024.0},   {"MiB", 1048576.0},
                 {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (!strcmp(end, units[i].suffix)) {
            *out = v * units[i].mult;
            return *out >= 1;
        }
    return 0;
}

int gr_arg_list(const char *s, int lo, int hi, int *out, int max) {
    int n = 0;
    char buf[256];
    if (!s || strlen(s) >= sizeof(buf)) return -1;
    snprintf(buf, sizeof(buf), "%s", s);
    if (!buf[0] || buf[0] == ',' || buf[strlen(buf) - 1] == ',' || strstr(buf, ",,")) return -1;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int v;
        if (n >= max || !gr_arg_int32(tok, lo, hi, &v)) return -1;
        for (int i = 0; i < n; i++)
            if (out[i] == v) return -1;
        out[n++] = v;
    }
    return n > 0 ? n : -1;
}

static int is_option_text(const char *v) {
    /* "-x" or "--x", but not a negative number such as -1 or -.5 */
    return v[0] == '-' && v[1] && !(v[1] >= '0' && v[1] <= '9') && v[1] != '.';
}

void gr_arg_take(int argc, char **argv, int *i, const char *const *with_value,
                 const char *const *flags, gr_arg *a) {
    memset(a, 0, sizeof(*a));
    const char *t = argv[*i];
    if (!(t[0] == '-' && t[1]) || !strcmp(t, "-")) { /* "-" is a positional (stdin) */
        a->kind = GR_ARG_POSITIONAL;
        a->value = t;
        return;
    }
    a->kind = GR_ARG_OPTION;
    const char *eq = t[1] == '-' ? strchr(t, '=') : NULL;
    size_t n = eq ? (size_t)(eq - t) : strlen(t);
    if (n >= sizeof(a->name)) {
        a->kind = GR_ARG_ERROR;
        snprintf(a->error, sizeof(a->error), "unknown option %.60s...", t);
        return;
    }
    memcpy(a->name, t, n);
    a->name[n] = '\0';
    if (!strcmp(a->name, "-h")) snprintf(a->name, sizeof(a->name), "--help");
    if (eq) a->value = eq + 1;
    int needs = 0, flag = 0;
    for (const char *const *w = with_value; w && *w; w++) needs |= !strcmp(*w, a->name);
    for (const char *const *f = flags; f && *f; f++) flag |= !strcmp(*f, a->name);
    if (flags && !needs && !flag && strcmp(a->name, "--help") != 0) return; /* unknown: caller's */
    if (needs && !a->value) {
        if (*i + 1 >= argc) {
            a->kind = GR_ARG_ERROR;
            snprintf(a->error, sizeof(a->error), "option %s needs a value", a->name);
            return;
        }
        a->value = argv[++*i];
        if (is_option_text(a->value)) {
            a->kind = GR_ARG_ERROR;
            snprintf(a->error, sizeof(a->error),
                     "option %s needs a value, got the option %.60s (write %s=VALUE for a value "
                     "that starts with -)",
                     a->name, a->value, a->name);
            return;
        }
    }
    if (needs && !a->value[0]) {
        a->kind = GR_ARG_ERROR;
        snprintf(a->error, sizeof(a->error), "option %s needs a value, got an empty one", a->name);
    } else if (!needs && a->value) {
        a->kind = GR_ARG_ERROR;
        snprintf(a->error, sizeof(a->error), "option %s takes no value", a->name);
    }
}
