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
