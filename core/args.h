/* Command-line values, read one way by the four tools (graphrun, its service and tp commands,
 * cupti-launchstat): whole numbers in a range (digits, or an exponent such as 1e4; the range is
 * checked before any conversion), byte sizes with units, and comma-separated lists. */
#ifndef GR_ARGS_H
#define GR_ARGS_H

#ifdef __cplusplus
extern "C" {
#endif

/* One command-line token, taken the same way by every tool: "--name=value", "--name value" for an
 * option in `with_value` (NULL-terminated), "--name" for a flag, "-h" as "--help", or a positional
 * argument. A value that is itself an option ("--chrome --json x") or empty is refused: write
 * --name=VALUE for a value starting with "-" (negative numbers are values). */
typedef enum gr_arg_kind { GR_ARG_OPTION, GR_ARG_POSITIONAL, GR_ARG_ERROR } gr_arg_kind;

typedef struct gr_arg {
    gr_arg_kind kind;
    char name[64];     /* GR_ARG_OPTION: "--iters" */
    const char *value; /* its value (NULL for a flag); GR_ARG_POSITIONAL: the argument */
    char error[256];   /* GR_ARG_ERROR: "option --iters needs a value" (no program prefix) */
} gr_arg;

/* Takes argv[*i] (and its value, advancing *i) into *a. With `flags` (the options that take no
 * value; NULL when the caller does not list them), a name in neither list is returned as it is
 * for the caller to call unknown, rather than refused for its value. */
void gr_arg_take(int argc, char **argv, int *i, const char *const *with_value,
                 const char *const *flags, gr_arg *a);

/* 1 with *out set when s is a whole number in [lo, hi], else 0 (out untouched). */
int gr_arg_int(const char *s, long long lo, long long hi, long long *out);
int gr_arg_int32(const char *s, int lo, int hi, int *out);
/* "8G", "512M", "2GiB", "1000000": a byte count >= 1 (K/M/G/T powers of 1000, KiB/MiB/GiB/TiB of 1024). */
int gr_arg_bytes(const char *s, double *out);
/* "1,2,4" into out: at most max whole numbers in [lo, hi], none repeated. The count, -1 if bad. */
int gr_arg_list(const char *s, int lo, int hi, int *out, int max);

#ifdef __cplusplus
}
#endif
#endif
