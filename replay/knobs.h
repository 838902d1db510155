/* The environment variables graphrun and its tools read: plumbing only (where a library, socket,
 * temporary file or trace goes). No environment variable changes a kernel choice: those are plan
 * attributes (graphrun kernels, graphrun validate). README.md, "Environment", prints this table. */
#ifndef GR_KNOBS_H
#define GR_KNOBS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gr_knob {
    const char *name;
    const char *where; /* the file that reads it */
    const char *what;  /* what it sets */
} gr_knob;

/* The table, NULL-name terminated. */
const gr_knob *gr_knobs(void);
/* The value of knob k in this process's environment, NULL when unset or empty. */
const char *gr_knob_value(const gr_knob *k);

#ifdef __cplusplus
}
#endif
#endif
