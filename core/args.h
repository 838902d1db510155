/* Command-line values, read one way by the four tools (graphrun, its service and tp commands,
 * cupti-launchstat): whole numbers in a range (digits, or an exponent such as 1e4; the range is
 * checked before any conversion), byte sizes with units, and comma-separated lists. */
#ifndef GR_ARGS_H
#define GR_ARGS_H

#ifdef __cplusplus
extern "C" {
#endif

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
