/* Loading a workload document: JSON syntax (file:line:column), the top-level schema (strict:
 * unknown keys are errors), params and their constraints, variants, and --set overrides. */
#include "core/workload.h"

#include <jansson.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr.h"
#include "core/fileio.h"

const char *gr_json_type_word(const void *vv) {
    const json_t *v = vv;
    if (!v) return "nothing";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "a value";
}

#define json_type_word gr_json_type_word

static int type_bit(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return GR_JT_OBJECT;
    case JSON_ARRAY:
        return GR_JT_ARRAY;
    case JSON_STRING:
        return GR_JT_STRING;
    case JSON_INTEGER:
        return GR_JT_INT;
    case JSON_REAL:
        return GR_JT_REAL;
    case JSON_TRUE:
    case JSON_FALSE:
        return GR_JT_BOOL;
    case JSON_NULL:
        return GR_JT_NULL;
    }
    return 0;
}

static void types_text(int t, char *out, size_t size) {
    static const struct {
        int bit;
        const char *word;
    } w[] = {{GR_JT_OBJECT, "an object"},
             {GR_JT_ARRAY, "an array"},
             {GR_JT_STRING, "a string"},
             {GR_JT_BOOL, "true or false"},
             {GR_JT_NULL, "null"}};
    size_t o = 0;
    out[0] = '\0';
    int n = 0;
    if ((t & GR_JT_NUMBER) == GR_JT_NUMBER)
        n += snprintf(out, size, "a number");
    else if (t & GR_JT_INT)
        n += snprintf(out, size, "a whole number");
    o = (size_t)n;
    for (size_t i = 0; i < sizeof(w) / sizeof(w[0]) && o < size; i++)
        if (t & w[i].bit)
            o += (size_t)snprintf(out + o, size - o, "%s%s", o ? " or " : "", w[i].word);
}

int gr_json_check_keys(const void *vobj, const char *path, const gr_json_key *keys,
                       const char *what, gr_error *err) {
    const json_t *obj = vobj;
    const char *here = path && path[0] ? path : "(top level)";
    int problems = 0;
    char allowed[512];
    size_t o = 0;
    allowed[0] = '\0';
    for (const gr_json_key *k = keys; k->name && o < sizeof(allowed); k++)
        o += (size_t)snprintf(allowed + o, sizeof(allowed) - o, "%s%s", o ? ", " : "", k->name);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)obj, key, val) {
        const gr_json_key *k = keys;
        while (k->name && strcmp(k->name, key) != 0)
            k++;
        char kpath[320];
        snprintf(kpath, sizeof(kpath), "%s%s%.200s", path && path[0] ? path : "",
                 path && path[0] ? "." : "", key);
        if (!k->name) {
            gr_error_set(err, GR_ERR_INPUT, here, "unknown key \"%.80s\" in %s (allowed keys: %s)",
                         key, what, allowed);
            problems++;
        } else if (!(type_bit(val) & k->types)) {
            char want[160];
            if (k->expect)
                snprintf(want, sizeof(want), "%s", k->expect);
            else
                types_text(k->types, want, sizeof(want));
            gr_error_set(err, GR_ERR_INPUT, kpath, "expected %s, got %s", want,
                         json_type_word(val));
            problems++;
        }
    }
    for (const gr_json_key *k = keys; k->name; k++)
        if (k->required && !json_object_get(obj, k->name)) {
            char want[160];
            if (k->expect)
                snprintf(want, sizeof(want), "%s", k->expect);
            else
                types_text(k->types, want, sizeof(want));
            gr_error_set(err, GR_ERR_INPUT, here, "missing \"%s\" (%s)", k->name, want);
            problems++;
        }
    return problems;
}

static int valid_ident(const char *s) {
    if (!s || !*s || strlen(s) >= 64) return 0;
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return 0;
    for (const char *c = s; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_'))
            return 0;
    return 1;
}

/* ---------- modules ---------- */

const char *gr_module_kind_name(gr_module_kind k) {
    switch (k) {
    case GR_MOD_SOURCE:
        return "source";
    case GR_MOD_PTX:
        return "ptx";
    case GR_MOD_CUBIN:
        return "cubin";
    case GR_MOD_FATBIN:
        return "fatbin";
    }
    return "?";
}

gr_module *gr_module_ref(gr_module *m) {
    if (m) __atomic_add_fetch(&m->refs, 1, __ATOMIC_ACQ_REL);
    return m;
}

void gr_module_unref(gr_module *m) {
    if (!m || __atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
    if (m->impl && m->impl_free) m->impl_free(m->impl);
    for (int i = 0; i < m->noptions; i++)
        free(m->options[i]);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

gr_module *gr_workload_module(const gr_workload *wl, const char *name) {
    for (int i = 0; i < wl->nmodules; i++)
        if (!strcmp(wl->modules[i]->name, name)) return wl->modules[i];
    return NULL;
}

/* `rel` against the workload's directory (an absolute path stays). */
static void rel_path(const gr_workload *wl, const char *rel, char *out, size_t size) {
    if (rel[0] == '/' || !strcmp(wl->dir, "."))
        snprintf(out, size, "%s", rel);
    else
        snprintf(out, size, "%s/%s", wl->dir, rel);
}

static int add_option(gr_module *m, const char *opt) {
    if (m->noptions >= GR_MODULE_MAX_OPTIONS) return -1;
    m->options[m->noptions] = strdup(opt);
    if (!m->options[m->noptions]) return -1;
    m->noptions++;
    return 0;
}

/* One entry of "modules": exactly one of source/ptx/cubin/fatbin (a file relative to the workload),
 * NVRTC "options" and "include" directories for a source. Files are checked here, before anything
 * else happens, so that a missing kernel file is reported with the workload's other problems. */
static void load_module(gr_workload *wl, const char *name, json_t *val, gr_error *err) {
    char path[160];
    snprintf(path, sizeof(path), "modules.%.100s", name);
    static const gr_json_key mkeys[] = {
        {"source", GR_JT_STRING, 0, "a CUDA source file (.cu), relative to the workload file"},
        {"ptx", GR_JT_STRING, 0, "a PTX file, relative to the workload file"},
        {"cubin", GR_JT_STRING, 0, "a cubin file, relative to the workload file"},
        {"fatbin", GR_JT_STRING, 0, "a fatbin file, relative to the workload file"},
        {"options", GR_JT_ARRAY, 0, "an array of NVRTC options, e.g. [\"--use_fast_math\"]"},
        {"include", GR_JT_ARRAY, 0,
         "an array of include directories, relative to the workload file"},
        {"arch_specific", GR_JT_BOOL, 0, NULL},
        {"doc", GR_JT_STRING, 0, NULL},
        {NULL, 0, 0, NULL}};
    if (!valid_ident(name)) {
        gr_error_set(err, GR_ERR_INPUT, path,
                     "a module name must be an identifier (letters, digits, _; at most 63)");
        return;
    }
    if (!json_is_object(val)) {
        gr_error_set(err, GR_ERR_INPUT, path,
                     "expected an object such as {\"source\": \"my_kernels.cu\"} (or \"ptx\", "
                     "\"cubin\", \"fatbin\"), got %s",
                     json_type_word(val));
        return;
    }
    if (gr_json_check_keys(val, path, mkeys, "a module", err)) return;
    static const char *kinds[] = {"source", "ptx", "cubin", "fatbin"};
    int kind = -1, nkinds = 0;
    for (int k = 0; k < 4; k++)
        if (json_object_get(val, kinds[k])) {
            kind = k;
            nkinds++;
        }
    if (nkinds != 1) {
        gr_error_set(err, GR_ERR_INPUT, path,
                     "%s; a module is exactly one of \"source\" (CUDA C++, compiled with NVRTC), "
                     "\"ptx\", \"cubin\" or \"fatbin\"",
                     nkinds ? "names more than one file" : "names no file");
        return;
    }
    json_t *options = json_object_get(val, "options"), *include = json_object_get(val, "include");
    json_t *archsp = json_object_get(val, "arch_specific");
    if (kind != GR_MOD_SOURCE && (options || include || archsp)) {
        gr_error_set(err, GR_ERR_INPUT, path,
                     "\"%s\" applies to \"source\" modules only (a %s is already compiled)",
                     options ? "options" : include ? "include" : "arch_specific", kinds[kind]);
        return;
    }
    if (wl->nmodules >= GR_MAX_MODULES) {
        gr_error_set(err, GR_ERR_INPUT, "modules", "more than %d modules", GR_MAX_MODULES);
        return;
    }
    gr_module *m = calloc(1, sizeof(*m));
    if (!m) {
        gr_error_set(err, GR_ERR_NOMEM, path, "out of memory");
        return;
    }
    pthread_mutex_init(&m->lock, NULL);
    m->refs = 1;
    m->kind = (gr_module_kind)kind;
    m->arch_specific = archsp && json_is_true(archsp);
    snprintf(m->name, sizeof(m->name), "%s", name);
    snprintf(m->path, sizeof(m->path), "%s", path);
    const char *given = json_string_value(json_object_get(val, kinds[kind]));
    char fpath[200];
    snprintf(fpath, sizeof(fpath), "%s.%s", path, kinds[kind]);
    int bad = 0;
    if (!given[0] || strlen(given) >= sizeof(m->given)) {
        gr_error_set(err, GR_ERR_INPUT, fpath, "expected a file name of 1 to %zu characters",
                     sizeof(m->given) - 1);
        bad = 1;
    } else {
        snprintf(m->given, sizeof(m->given), "%s", given);
        rel_path(wl, given, m->file, sizeof(m->file));
        struct stat st;
        if (stat(m->file, &st) != 0) {
            gr_error_set(err, GR_ERR_INPUT, fpath,
                         "file \"%s\" not found (paths are relative to the workload file)",
                         m->file);
            bad = 1;
        } else if (!S_ISREG(st.st_mode)) {
            gr_error_set(err, GR_ERR_INPUT, fpath, "\"%s\" is not a regular file", m->file);
            bad = 1;
        }
    }
    size_t i;
    json_t *el;
    json_array_foreach(options, i, el) {
        if (!json_is_string(el) || json_string_length(el) == 0) {
            gr_error_set(err, GR_ERR_INPUT, path,
                         "options[%zu]: expected a non-empty string, got %s", i,
                         json_type_word(el));
            bad = 1;
            continue;
        }
        const char *o = json_string_value(el);
        /* the target is graphrun's choice (the GPU's, or --arch): one image per device */
        if (!strncmp(o, "-arch", 5) || !strncmp(o, "--gpu-architecture", 18)) {
            gr_error_set(err, GR_ERR_INPUT, path,
                         "options[%zu]: \"%s\": the architecture is the GPU's own (graphrun "
                         "validate --arch sm_XY picks it without a GPU); drop this option",
                         i, o);
            bad = 1;
            continue;
        }
        if (add_option(m, o) != 0) {
            gr_error_set(err, GR_ERR_INPUT, path, "options: more than %d",
                         GR_MODULE_MAX_OPTIONS - 8);
            bad = 1;
            break;
        }
    }
    json_array_foreach(include, i, el) {
        char ipath[200];
        snprintf(ipath, sizeof(ipath), "%s.include[%zu]", path, i);
        if (!json_is_string(el) || json_string_length(el) == 0 || json_string_length(el) > 900) {
            gr_error_set(err, GR_ERR_INPUT, ipath, "expected a directory name, got %s",
                         json_type_word(el));
            bad = 1;
            continue;
        }
        char dir[1024], opt[1100];
        rel_path(wl, json_string_value(el), dir, sizeof(dir));
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            gr_error_set(err, GR_ERR_INPUT, ipath,
                         "directory \"%s\" not found (paths are relative to the workload file)",
                         dir);
            bad = 1;
            continue;
        }
        snprintf(opt, sizeof(opt), "-I%s", dir);
        if (add_option(m, opt) != 0) bad = 1;
    }
    if (kind == GR_MOD_SOURCE && !bad) {
        /* #include "x.cuh" next to the source, as nvcc finds it */
        char dir[1024], opt[1100];
        snprintf(dir, sizeof(dir), "%s", m->file);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof(dir), ".");
        snprintf(opt, sizeof(opt), "-I%s", dir);
        if (add_option(m, opt) != 0) bad = 1;
    }
    if (bad) {
        gr_module_unref(m);
        return;
    }
    wl->modules[wl->nmodules++] = m;
}

static void load_modules(gr_workload *wl, json_t *modules, gr_error *err) {
    if (!modules) return;
    const char *key;
    json_t *val;
    json_object_foreach(modules, key, val) load_module(wl, key, val, err);
}

/* The variant marked "reference": true (at most one); its keys are checked with the variant's. */
static void find_reference_variant(gr_workload *wl, json_t *variants, gr_error *err) {
    const char *key;
    json_t *val;
    if (!json_is_object(variants)) return;
    json_object_foreach(variants, key, val) {
        json_t *r = json_is_object(val) ? json_object_get(val, "reference") : NULL;
        if (!r) continue;
        char path[128];
        snprintf(path, sizeof(path), "variants.%.60s.reference", key);
        if (!json_is_boolean(r)) {
            gr_error_set(err, GR_ERR_INPUT, path, "expected true or false, got %s",
                         json_type_word(r));
            continue;
        }
        if (!json_is_true(r)) continue;
        if (wl->reference_variant[0]) {
            gr_error_set(err, GR_ERR_INPUT, path,
                         "variant \"%s\" is already the reference; mark one variant only",
                         wl->reference_variant);
            continue;
        }
        snprintf(wl->reference_variant, sizeof(wl->reference_variant), "%s", key);
    }
}

static gr_status parse_param_value(gr_param *p, const json_t *v, const char *path, gr_error *err) {
    if (json_is_number(v)) {
        p->is_str = 0;
        p->num = json_number_value(v);
        return GR_OK;
    }
    if (json_is_string(v)) {
        if (json_string_length(v) >= sizeof(p->str))
            return gr_error_set(err, GR_ERR_INPUT, path, "value longer than %zu characters",
                                sizeof(p->str) - 1);
        p->is_str = 1;
        snprintf(p->str, sizeof(p->str), "%s", json_string_value(v));
        return GR_OK;
    }
    return gr_error_set(err, GR_ERR_INPUT, path, "expected a number or a string, got %s",
                        json_type_word(v));
}

static void load_params(gr_workload *wl, json_t *params, gr_error *err) {
    if (!params) return;
    if (!json_is_object(params)) {
        gr_error_set(err, GR_ERR_INPUT, "params", "expected an object of name: default, got %s",
                     json_type_word(params));
        return;
    }
    const char *key;
    json_t *val;
    json_object_foreach(params, key, val) {
        char path[160];
        snprintf(path, sizeof(path), "params.%s", key);
        if (!valid_ident(key)) {
            gr_error_set(err, GR_ERR_INPUT, path,
                         "a param name must be an identifier (letters, digits, _; at most 63)");
            continue;
        }
        if (wl->nparams >= GR_MAX_PARAMS) {
            gr_error_set(err, GR_ERR_INPUT, path, "more than %d params", GR_MAX_PARAMS);
            return;
        }
        gr_param *p = &wl->params[wl->nparams];
        memset(p, 0, sizeof(*p));
        snprintf(p->name, sizeof(p->name), "%s", key);
        if (json_is_object(val)) {
            json_t *dflt = NULL, *choices = NULL;
            const char *help = NULL;
            json_t *mn = NULL, *mx = NULL;
            json_error_t jerr;
            static const gr_json_key pkeys[] = {{"default", GR_JT_NUMBER | GR_JT_STRING, 1, NULL},
                                                {"help", GR_JT_STRING, 0, NULL},
                                                {"choices", GR_JT_ARRAY, 0, NULL},
                                                {"min", GR_JT_NUMBER, 0, NULL},
                                                {"max", GR_JT_NUMBER, 0, NULL},
                                                {NULL, 0, 0, NULL}};
            if (gr_json_check_keys(val, path, pkeys, "a param object", err)) continue;
            if (json_unpack_ex(val, &jerr, JSON_STRICT, "{s:o, s?:s, s?:o, s?:o, s?:o}", "default",
                               &dflt, "help", &help, "choices", &choices, "min", &mn, "max",
                               &mx) != 0) {
                gr_error_set(err, GR_ERR_INPUT, path,
                             "%s (a param is a number, a string, or {\"default\", \"help\", "
                             "\"choices\", \"min\", \"max\"})",
                             jerr.text);
                continue;
            }
            if (parse_param_value(p, dflt, path, err) != GR_OK) continue;
            if (help) snprintf(p->help, sizeof(p->help), "%s", help);
            if (choices) {
                size_t i;
                json_t *c;
                if (!json_is_array(choices)) {
                    gr_error_set(err, GR_ERR_INPUT, path, "choices: expected an array of strings");
                    continue;
                }
                char cpath[200];
                snprintf(cpath, sizeof(cpath), "%s.choices", path);
                if (json_array_size(choices) == 0) {
                    gr_error_set(err, GR_ERR_INPUT, cpath,
                                 "is empty: no value could be chosen; list the allowed values or "
                                 "drop \"choices\"");
                    continue;
                }
                if (json_array_size(choices) > 16) {
                    gr_error_set(err, GR_ERR_INPUT, cpath, "has %zu entries; at most 16",
                                 json_array_size(choices));
                    continue;
                }
                int bad = 0;
                json_array_foreach(choices, i, c) {
                    if (!json_is_string(c) || json_string_length(c) == 0 ||
                        json_string_length(c) >= 48) {
                        gr_error_set(err, GR_ERR_INPUT, cpath,
                                     "[%zu]: expected a string of 1 to 47 characters, got %s", i,
                                     json_type_word(c));
                        bad = 1;
                        break;
                    }
                    for (int k = 0; k < p->nchoices; k++)
                        if (!strcmp(p->choices[k], json_string_value(c))) {
                            gr_error_set(err, GR_ERR_INPUT, cpath, "[%zu]: \"%s\" is listed twice",
                                         i, p->choices[k]);
                            bad = 1;
                        }
                    snprintf(p->choices[p->nchoices++], 48, "%s", json_string_value(c));
                }
                if (bad) continue;
            }
            if (mn) {
                if (!json_is_number(mn)) gr_error_set(err, GR_ERR_INPUT, path, "min: expected a number");
                p->has_min = 1;
                p->min = json_number_value(mn);
            }
            if (mx) {
                if (!json_is_number(mx)) gr_error_set(err, GR_ERR_INPUT, path, "max: expected a number");
                p->has_max = 1;
                p->max = json_number_value(mx);
            }
            if (p->has_min && p->has_max && p->min > p->max) {
                gr_error_set(err, GR_ERR_INPUT, path, "min %g is above max %g: no value is allowed",
                             p->min, p->max);
                continue;
            }
        } else if (parse_param_value(p, val, path, err) != GR_OK) {
            continue;
        }
        wl->nparams++;
    }
}

static gr_status load_root(gr_workload *wl, json_t *root, gr_error *err) {
    json_error_t jerr;
    int schema = 1;
    const char *name = NULL, *desc = NULL, *dvar = NULL;
    json_t *params = NULL, *buffers = NULL, *outputs = NULL, *ops = NULL, *variants = NULL;
    json_t *modules = NULL;
    json_int_t seed = 0;
    if (!json_is_object(root))
        return gr_error_set(err, GR_ERR_INPUT, "(top level)",
                            "expected an object with name, params, buffers, outputs and ops or "
                            "variants, got %s",
                            json_type_word(root));
    static const gr_json_key top[] = {
        {"schema_version", GR_JT_INT, 0, NULL},
        {"name", GR_JT_STRING, 1, NULL},
        {"description", GR_JT_STRING, 0, NULL},
        {"params", GR_JT_OBJECT, 0, NULL},
        {"buffers", GR_JT_ARRAY, 1, NULL},
        {"outputs", GR_JT_ARRAY, 0, NULL},
        {"ops", GR_JT_ARRAY, 0, NULL},
        {"variants", GR_JT_OBJECT, 0, NULL},
        {"default_variant", GR_JT_STRING, 0, NULL},
        {"seed", GR_JT_INT, 0, NULL},
        {"modules", GR_JT_OBJECT, 0,
         "an object of name: {\"source\"|\"ptx\"|\"cubin\"|\"fatbin\": FILE}"},
        {NULL, 0, 0, NULL}};
    if (gr_json_check_keys(root, "", top, "a workload", err)) return err->code;
    if (json_unpack_ex(root, &jerr, JSON_STRICT,
                       "{s?:i, s:s, s?:s, s?:o, s:o, s?:o, s?:o, s?:o, s?:s, s?:I, s?:o}",
                       "schema_version", &schema, "name", &name, "description", &desc, "params",
                       &params, "buffers", &buffers, "outputs", &outputs, "ops", &ops, "variants",
                       &variants, "default_variant", &dvar, "seed", &seed, "modules",
                       &modules) != 0) {
        return gr_error_set(err, GR_ERR_INPUT, "(top level)",
                            "%s (allowed keys: schema_version, name, description, params, "
                            "buffers, outputs, ops, variants, default_variant, seed, modules)",
                            jerr.text);
    }
    if (schema != 1)
        gr_error_set(err, GR_ERR_INPUT, "schema_version",
                     "this graphrun reads schema_version 1, the file says %d", schema);
    if (seed < 0)
        gr_error_set(err, GR_ERR_INPUT, "seed",
                     "%lld is negative; a seed is a whole number >= 0 (as --seed)",
                     (long long)seed);
    if (!name[0]) gr_error_set(err, GR_ERR_INPUT, "name", "is empty; name the workload");
    if (strlen(name) >= sizeof(wl->name))
        gr_error_set(err, GR_ERR_INPUT, "name", "is %zu characters; at most %zu", strlen(name),
                     sizeof(wl->name) - 1);
    snprintf(wl->name, sizeof(wl->name), "%s", name);
    if (desc) snprintf(wl->description, sizeof(wl->description), "%s", desc);
    wl->seed = (uint64_t)seed;
    if (!json_is_array(buffers))
        gr_error_set(err, GR_ERR_INPUT, "buffers", "expected an array of buffers, got %s",
                     json_type_word(buffers));
    if (outputs && !json_is_array(outputs))
        gr_error_set(err, GR_ERR_INPUT, "outputs", "expected an array of buffer names, got %s",
                     json_type_word(outputs));
    load_params(wl, params, err);
    load_modules(wl, modules, err);
    find_reference_variant(wl, variants, err);
    if (ops && variants)
        gr_error_set(err, GR_ERR_INPUT, "(top level)",
                     "has both \"ops\" and \"variants\"; use \"ops\" for a single variant or "
                     "put each op list under \"variants\"");
    else if (!ops && !variants)
        gr_error_set(err, GR_ERR_INPUT, "(top level)",
                     "needs \"ops\" (a list of ops) or \"variants\" (name: {\"ops\": [...]})");
    if (ops && !json_is_array(ops))
        gr_error_set(err, GR_ERR_INPUT, "ops", "expected an array of ops, got %s", json_type_word(ops));
    if (variants) {
        if (!json_is_object(variants) || json_object_size(variants) == 0) {
            gr_error_set(err, GR_ERR_INPUT, "variants",
                         "expected a non-empty object of variant name: {\"ops\": [...]}");
        } else {
            const char *key;
            json_t *val;
            json_object_foreach(variants, key, val) {
                if (wl->nvariants >= GR_MAX_VARIANTS) {
                    gr_error_set(err, GR_ERR_INPUT, "variants", "more than %d variants",
                                 GR_MAX_VARIANTS);
                    break;
                }
                if (strlen(key) == 0 || strlen(key) >= 64) {
                    gr_error_set(err, GR_ERR_INPUT, "variants", "a variant name must be 1-63 characters");
                    continue;
                }
                snprintf(wl->variants[wl->nvariants++], 64, "%s", key);
            }
        }
    }
    if (dvar) {
        if (!variants) {
            gr_error_set(err, GR_ERR_INPUT, "default_variant", "given but there are no variants");
        } else if (!json_object_get(variants, dvar)) {
            gr_error_set(err, GR_ERR_INPUT, "default_variant", "\"%s\" is not one of the variants",
                         dvar);
        }
        snprintf(wl->default_variant, sizeof(wl->default_variant), "%s", dvar);
    } else if (wl->nvariants > 0) {
        snprintf(wl->default_variant, sizeof(wl->default_variant), "%s", wl->variants[0]);
    } else {
        snprintf(wl->default_variant, sizeof(wl->default_variant), "default");
    }
    return gr_error_failed(err) ? err->code : GR_OK;
}

static void set_dir(gr_workload *wl, const char *path) {
    snprintf(wl->path, sizeof(wl->path), "%s", path);
    snprintf(wl->dir, sizeof(wl->dir), "%s", path);
    char *slash = strrchr(wl->dir, '/');
    if (slash) *slash = '\0';
    else snprintf(wl->dir, sizeof(wl->dir), ".");
}

static gr_status finish_load(gr_workload *wl, json_t *root, gr_workload **out, gr_error *err) {
    wl->root = root;
    if (load_root(wl, root, err) != GR_OK) {
        gr_error_prefix(err, "%s: ", wl->path);
        gr_workload_destroy(wl);
        return err->code;
    }
    *out = wl;
    return GR_OK;
}

gr_status gr_workload_load_file(const char *path, gr_workload **out, gr_error *err) {
    *out = NULL;
    char *text = NULL;
    size_t len = 0;
    gr_status st = gr_file_read_all(path, GR_FILE_WORKLOAD, &text, &len, err);
    if (st != GR_OK) return st;
    st = gr_workload_load_string(text, len, path, out, err);
    free(text);
    return st;
}

gr_status gr_workload_load_string(const char *text, size_t len, const char *label,
                                  gr_workload **out, gr_error *err) {
    *out = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return gr_error_at(err, GR_ERR_INPUT, label, jerr.line, jerr.column, "invalid JSON: %s",
                           jerr.text);
    gr_workload *wl = calloc(1, sizeof(*wl));
    if (!wl) {
        json_decref(root);
        return gr_error_set(err, GR_ERR_NOMEM, label, "out of memory");
    }
    set_dir(wl, label ? label : "<input>");
    return finish_load(wl, root, out, err);
}

void gr_workload_destroy(gr_workload *wl) {
    if (!wl) return;
    json_decref((json_t *)wl->root);
    for (int i = 0; i < wl->nmodules; i++)
        gr_module_unref(wl->modules[i]);
    free(wl);
}

const gr_param *gr_workload_param(const gr_workload *wl, const char *name) {
    for (int i = 0; i < wl->nparams; i++)
        if (!strcmp(wl->params[i].name, name)) return &wl->params[i];
    return NULL;
}

void gr_workload_param_names(const gr_workload *wl, char *buf, size_t size) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < wl->nparams && o + 1 < size; i++) {
        int n = snprintf(buf + o, size - o, "%s%s", i ? ", " : "", wl->params[i].name);
        if (n < 0) break;
        o += (size_t)n;
    }
    if (wl->nparams == 0) snprintf(buf, size, "(none)");
}

gr_status gr_workload_set(gr_workload *wl, const char *assignment, gr_error *err) {
    const char *eq = strchr(assignment, '=');
    char where[320];
    snprintf(where, sizeof(where), "--set %.100s%s", assignment,
             strlen(assignment) > 100 ? "..." : "");
    if (!eq || eq == assignment)
        return gr_error_set(err, GR_ERR_USAGE, where, "expected name=value, e.g. --set n=4096");
    char name[64];
    size_t nlen = (size_t)(eq - assignment);
    if (nlen >= sizeof(name))
        return gr_error_set(err, GR_ERR_USAGE, where, "param name too long");
    memcpy(name, assignment, nlen);
    name[nlen] = '\0';
    gr_param *p = (gr_param *)gr_workload_param(wl, name);
    if (!p) {
        char names[1024];
        gr_workload_param_names(wl, names, sizeof(names));
        return gr_error_set(err, GR_ERR_USAGE, where, "unknown param \"%s\" (params of %s: %s)",
                            name, wl->name, names);
    }
    const char *val = eq + 1;
    if (!*val) return gr_error_set(err, GR_ERR_USAGE, where, "empty value");
    if (strlen(val) >= sizeof(p->str))
        return gr_error_set(err, GR_ERR_USAGE, where, "value longer than %zu characters",
                            sizeof(p->str) - 1);
    double num;
    if (gr_parse_number(val, &num)) {
        p->is_str = 0;
        p->num = num;
    } else {
        p->is_str = 1;
        snprintf(p->str, sizeof(p->str), "%s", val);
    }
    p->overridden = 1;
    return GR_OK;
}

const char *gr_workload_variant(const gr_workload *wl, const char *requested, gr_error *err) {
    if (wl->nvariants == 0) {
        if (!requested || !strcmp(requested, "default")) return "default";
        return gr_error_set(err, GR_ERR_USAGE, "--variant",
                            "%s has no variants (it has one op list); drop --variant", wl->name),
               NULL;
    }
    if (!requested) return wl->default_variant;
    for (int i = 0; i < wl->nvariants; i++)
        if (!strcmp(wl->variants[i], requested)) return wl->variants[i];
    char list[1024];
    size_t o = 0;
    list[0] = '\0';
    for (int i = 0; i < wl->nvariants && o + 1 < sizeof(list); i++) {
        int n = snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", wl->variants[i]);
        if (n < 0) break;
        o += (size_t)n;
    }
    gr_error_set(err, GR_ERR_USAGE, "--variant", "%s has no variant \"%.64s%s\" (variants: %s)",
                 wl->name, requested, strlen(requested) > 64 ? "..." : "", list);
    return NULL;
}
