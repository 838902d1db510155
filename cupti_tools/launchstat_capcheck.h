/* `cupti-launchstat --capture-check -- CMD`: after CMD ran with the capture checker injected
 * (inject.c, GR_LAUNCHSTAT_CAPCHECK=1), its recording is classified (capclass.c) and every
 * finding printed. */
#ifndef GR_LAUNCHSTAT_CAPCHECK_H
#define GR_LAUNCHSTAT_CAPCHECK_H

#ifdef __cplusplus
extern "C" {
#endif

/* Reads the recording at `path`, prints the findings on stdout (and as JSON to json_path, "-"
 * for stdout), and returns the exit code: CMD's own `code` when it failed, else 1 when a capture
 * broke or work escaped one (or CMD ran unchecked), else 0. */
int gr_launchstat_capcheck_report(const char *path, const char *json_path, const char *cmdline,
                                  int code);

#ifdef __cplusplus
}
#endif
#endif
