/* A workload as loaded from JSON: the document (kept for resolution), its params with defaults
 * and --set overrides, and its variant names. Syntax errors carry file:line:column; resolution
 * into a plan (core/resolve.c) does the semantic checks. */
#ifndef GR_WORKLOAD_H
#define GR_WORKLOAD_H

#include "core/error.h"
#include "core/kernel.h"
#include "core/module.h"
#include "core/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GR_MAX_PARAMS 128
#define GR_MAX_VARIANTS 32

typedef struct gr_param {
    char name[64];
    int is_str;    /* value is a string: an enum-like word or an expression of other params */
    double num;
    char str[256];
    int overridden; /* set with --set */
    char help[160];
    /* optional constraints from the {default, choices, min, max} form */
    int nchoices;
    char choices[16][48];
    int has_min, has_max;
    double min, max;
} gr_param;

typedef struct gr_workload {
    char path[512]; /* file as given, or a label for in-memory documents */
    char dir[512];  /* directory of the file, for relative init paths */
    char name[128];
    char description[512];
    void *root;     /* json_t *, owned */
    gr_param params[GR_MAX_PARAMS];
    int nparams;
    char variants[GR_MAX_VARIANTS][64];
    int nvariants;   /* 0: the workload has top-level "ops" and one implicit variant */
    char default_variant[64];
    uint64_t seed;   /* global seed, mixed into every buffer's seed; --seed overrides */
    gr_module *modules[GR_MAX_MODULES]; /* "modules": the user's kernels (core/module.h) */
    int nmodules;
    char reference_variant[64]; /* the variant marked "reference": true, "" when none */
} gr_workload;

/* The keys an object of a workload may have, with the JSON types each takes (GR_JT_*): checked by
 * gr_json_check_keys so that a wrong type names its key ("name: expected a string, got null"),
 * which json_unpack_ex's messages do not. */
enum {
    GR_JT_OBJECT = 1,
    GR_JT_ARRAY = 2,
    GR_JT_STRING = 4,
    GR_JT_INT = 8,
    GR_JT_REAL = 16,
    GR_JT_BOOL = 32,
    GR_JT_NULL = 64,
    GR_JT_NUMBER = GR_JT_INT | GR_JT_REAL,
    GR_JT_ANY = 127
};
typedef struct gr_json_key {
    const char *name;
    int types;
    int required;
    const char *expect; /* what the value should be, for the message; NULL: from types */
} gr_json_key;
/* Reports every unknown key, missing required key and value of the wrong type of `obj` (a
 * json_t object), at "PATH.KEY" ("KEY" when path is ""; unknown keys at PATH or "(top level)").
 * `what` names the object in the hint ("a buffer"). Returns the number of problems. */
int gr_json_check_keys(const void *obj, const char *path, const gr_json_key *keys, const char *what,
                       gr_error *err);
/* "a string", "null", ...: a JSON value's type, for messages. */
const char *gr_json_type_word(const void *v);

gr_status gr_workload_load_file(const char *path, gr_workload **out, gr_error *err);
gr_status gr_workload_load_string(const char *text, size_t len, const char *label,
                                  gr_workload **out, gr_error *err);
void gr_workload_destroy(gr_workload *wl);

/* The module named `name`, NULL when the workload has none of that name. */
gr_module *gr_workload_module(const gr_workload *wl, const char *name);

/* Apply "name=value" (the --set option). */
gr_status gr_workload_set(gr_workload *wl, const char *assignment, gr_error *err);
const gr_param *gr_workload_param(const gr_workload *wl, const char *name);
/* "n, act, dtype": the param names, for messages. */
void gr_workload_param_names(const gr_workload *wl, char *buf, size_t size);
/* Resolve the name given with --variant (NULL: the default). Returns the canonical name or
 * NULL with an error naming the variants that exist. */
const char *gr_workload_variant(const gr_workload *wl, const char *requested, gr_error *err);

/* The params' own constraints (choices, min, max, expressions that evaluate), as
 * gr_plan_resolve checks them first: once per workload, so that a bad --set is reported once
 * rather than once per variant (replay/load.c calls it before resolving the variants). */
gr_status gr_workload_check_params(const gr_workload *wl, gr_error *err);

/* Resolve one variant into a plan for `target`. `lookup` finds kernels (kernels/registry). */
gr_status gr_plan_resolve(const gr_workload *wl, const char *variant, const gr_target *target,
                          gr_kernel_lookup lookup, gr_kernel_names names, gr_plan **out,
                          gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
