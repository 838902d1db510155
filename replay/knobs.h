/* The environment variables that change a kernel's choice (tuning overrides read with getenv in
 * kernels/), so a report can say which of them were set for its run. Reading them changes nothing. */
#ifndef GR_KNOBS_H
#define GR_KNOBS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_knob {
    const char *name;
    const char *where; /* the kernel file that reads it */
    const char *what;  /* what it changes */
} gr_knob;

/* The table, NULL-name terminated. */
const gr_knob *gr_knobs(void);
/* The value of knob k in this process's environment, NULL when unset or empty. */
const char *gr_knob_value(const gr_knob *k);

#ifdef __cplusplus
}
#endif
#endif
