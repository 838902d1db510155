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
    int report;        /* 1: graphrun's own, a report lists it when set; 0: a general variable
                          (HOME, TMPDIR, XDG_*, CUDA's own) read as a fallback or set for a child */
} gr_knob;

/* The table, NULL-name terminated. */
const gr_knob *gr_knobs(void);
/* The value of knob k in this process's environment, NULL when unset or empty. */
const char *gr_knob_value(const gr_knob *k);

#ifdef __cplusplus
}
#endif
#endif
