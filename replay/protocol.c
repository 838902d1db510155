/* Replay service protocol: request validation (strict: unknown keys, wrong types and values out
 * of range are errors naming the field, all reported in one pass), reply lines, line framing. */
#include "replay/protocol.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum ftype { F_STR, F_INT, F_BOOL, F_STRARR, F_IOARR } ftype;

typedef struct field_spec {
    const char *name;
    ftype type;
    int required;
    long long lo, hi; /* F_INT: range; F_STR: max length; F_STRARR: max entries */
} field_spec;

static const field_spec no_fields[] = {{NULL, F_STR, 0, 0, 0}};
static const field_spec capture_fields[] = {
    {"workload", F_STR, 1, 0, GR_PROTO_PATH_MAX - 1},
    {"name", F_STR, 0, 0, GR_PROTO_NAME_MAX},
    {"variant", F_STR, 0, 0, 63},
    {"sets", F_STRARR, 0, 0, GR_PROTO_MAX_SETS},
    {"capture_mode", F_STR, 0, 0, 32},
    {"force", F_BOOL, 0, 0, 0},
    {"cpu_reference", F_BOOL, 0, 0, 0},
    {"capture_check", F_BOOL, 0, 0, 0},
    {"pdl", F_BOOL, 0, 0, 0},
    {"unroll", F_INT, 0, 1, 1024},
    {"input", F_STR, 0, 0, GR_PROTO_PATH_MAX - 1},
    {"skip_bad_lines", F_BOOL, 0, 0, 0},
    {"buckets", F_STR, 0, 0, 511},
    {"update", F_BOOL, 0, 0, 0},
    {"progress", F_BOOL, 0, 0, 0},
    {NULL, F_STR, 0, 0, 0}};
static const field_spec replay_fields[] = {
    {"name", F_STR, 0, 0, GR_PROTO_NAME_MAX},
    {"iters", F_INT, 0, 1, 100000000},
    {"warmup", F_INT, 0, 0, 100000000},
    {"batches", F_INT, 0, 1, 100000},
    {"compare_eager", F_BOOL, 0, 0, 0},
    {"output_digest", F_BOOL, 0, 0, 0},
    {"inputs", F_IOARR, 0, 0, GR_PROTO_MAX_IO},
    {"batch", F_INT, 0, 1, 1LL << 30},
    {"outputs", F_IOARR, 0, 0, GR_PROTO_MAX_IO},
    {"progress", F_BOOL, 0, 0, 0},
    {NULL, F_STR, 0, 0, 0}};
static const field_spec drop_fields[] = {{"name", F_STR, 1, 0, GR_PROTO_NAME_MAX},
                                         {NULL, F_STR, 0, 0, 0}};
static const field_spec lane_open_fields[] = {
    {"shm", F_STR, 1, 0, 255},
    {"inputs", F_IOARR, 0, 0, GR_PROTO_MAX_IO},
    {"outputs", F_IOARR, 0, 0, GR_PROTO_MAX_IO},
    {"name", F_STR, 0, 0, GR_PROTO_NAME_MAX},
    {"batch", F_INT, 0, 1, 1LL << 30},
    {"spin_us", F_INT, 0, 0, 1000000},
    {NULL, F_STR, 0, 0, 0}};
static const field_spec lane_close_fields[] = {{"lane", F_INT, 1, 1, 1LL << 62},
                                               {NULL, F_STR, 0, 0, 0}};
static const field_spec sleep_fields[] = {{"ms", F_INT, 1, 0, 600000},
                                          {"hang", F_BOOL, 0, 0, 0},
                                          {"progress", F_BOOL, 0, 0, 0},
                                          {NULL, F_STR, 0, 0, 0}};

typedef struct cmd_spec {
    gr_cmd cmd;
    const char *name;
    int queued;
    const field_spec *fields;
} cmd_spec;

static const cmd_spec commands[] = {
    {GR_CMD_STATUS, "status", 0, no_fields},        {GR_CMD_LIST, "list", 0, no_fields},
    {GR_CMD_CAPTURE, "capture", 1, capture_fields}, {GR_CMD_REPLAY, "replay", 1, replay_fields},
    {GR_CMD_DROP, "drop", 1, drop_fields},          {GR_CMD_STOP, "stop", 0, no_fields},
    {GR_CMD_LANE_OPEN, "lane_open", 1, lane_open_fields},
    {GR_CMD_LANE_CLOSE, "lane_close", 1, lane_close_fields},
    {GR_CMD_DEBUG_SLEEP, "debug_sleep", 1, sleep_fields},
    {GR_CMD_DEBUG_FAULT, "debug_fault", 1, no_fields},
    {GR_CMD_NONE, NULL, 0, NULL}};

#define PUBLIC_COMMANDS "status, list, capture, replay, drop, stop, lane_open, lane_close"

const char *gr_cmd_name(gr_cmd cmd) {
    for (const cmd_spec *c = commands; c->name; c++)
        if (c->cmd == cmd) return c->name;
    return "none";
}

int gr_cmd_is_queued(gr_cmd cmd) {
    for (const cmd_spec *c = commands; c->name; c++)
        if (c->cmd == cmd) return c->queued;
    return 0;
}

static const char *type_word(const json_t *v) {
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

/* A JSON integer, or a real with a whole value (some clients write 1e4). */
static int whole_number(const json_t *v, long long *out) {
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 1;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d >= -9e15 && d <= 9e15 && d == (double)(long long)d) {
            *out = (long long)d;
            return 1;
        }
    }
    return 0;
}

static void key_list(const field_spec *fields, char *buf, size_t size) {
    size_t o = 0;
    buf[0] = '\0';
    for (const field_spec *f = fields; f->name && o + 1 < size; f++) {
        int n = snprintf(buf + o, size - o, "%s%s", o ? ", " : "", f->name);
        if (n < 0) break;
        o += (size_t)n;
    }
    if (!fields[0].name) snprintf(buf, size, "none besides schema_version, cmd and id");
}

static void store(gr_request *req, const char *name, const json_t *v, gr_error *err) {
    if (!strcmp(name, "workload")) {
        const char *s = json_string_value(v);
        if (s[0] != '/')
            gr_error_set(err, GR_ERR_PROTOCOL, name,
                         "must be an absolute path (the service runs in /), got \"%.200s\"", s);
        else
            snprintf(req->workload, sizeof(req->workload), "%s", s);
    } else if (!strcmp(name, "name")) {
        const char *s = json_string_value(v);
        if (!gr_proto_valid_name(s))
            gr_error_set(err, GR_ERR_PROTOCOL, name,
                         "\"%.80s\" is not a valid graph name (1 to %d of letters, digits, _ . -; "
                         "not starting with - or .)",
                         s, GR_PROTO_NAME_MAX);
        else
            snprintf(req->name, sizeof(req->name), "%s", s);
    } else if (!strcmp(name, "input")) {
        const char *s = json_string_value(v);
        if (s[0] != '/')
            gr_error_set(err, GR_ERR_PROTOCOL, name,
                         "must be an absolute path (the service runs in /), got \"%.200s\"", s);
        else
            snprintf(req->input, sizeof(req->input), "%s", s);
    } else if (!strcmp(name, "buckets")) {
        gr_error e;
        gr_error_clear(&e);
        if (gr_bucket_parse(json_string_value(v), NULL, &req->buckets, &e) != GR_OK)
            gr_error_set(err, GR_ERR_PROTOCOL, name, "%s", e.msg);
    } else if (!strcmp(name, "variant")) {
        snprintf(req->variant, sizeof(req->variant), "%s", json_string_value(v));
    } else if (!strcmp(name, "capture_mode")) {
        gr_error scratch;
        gr_error_clear(&scratch);
        if (gr_capture_mode_parse(json_string_value(v), &req->mode, &scratch) != GR_OK)
            gr_error_set(err, GR_ERR_PROTOCOL, name,
                         "unknown mode \"%.40s\" (modes: global, thread-local, relaxed)",
                         json_string_value(v));
    } else if (!strcmp(name, "sets")) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) {
            char path[64];
            snprintf(path, sizeof(path), "sets[%zu]", i);
            if (!json_is_string(e)) {
                gr_error_set(err, GR_ERR_PROTOCOL, path, "expected a string \"name=value\", got %s",
                             type_word(e));
                continue;
            }
            const char *s = json_string_value(e);
            if (json_string_length(e) >= GR_PROTO_SET_MAX)
                gr_error_set(err, GR_ERR_PROTOCOL, path, "longer than %d characters",
                             GR_PROTO_SET_MAX - 1);
            else if (!strchr(s, '=') || s[0] == '=')
                gr_error_set(err, GR_ERR_PROTOCOL, path,
                             "expected \"name=value\" (as --set takes), got \"%.80s\"", s);
            else
                snprintf(req->sets[req->nsets++], GR_PROTO_SET_MAX, "%s", s);
        }
    } else if (!strcmp(name, "force")) req->force = json_is_true(v);
    else if (!strcmp(name, "cpu_reference")) req->cpu_reference = json_is_true(v);
    else if (!strcmp(name, "progress")) req->progress = json_is_true(v);
    else if (!strcmp(name, "capture_check")) req->capture_check = json_is_true(v);
    else if (!strcmp(name, "pdl")) req->pdl = json_is_true(v) ? 1 : 0;
    else if (!strcmp(name, "skip_bad_lines")) req->skip_bad_lines = json_is_true(v);
    else if (!strcmp(name, "unroll")) req->unroll = (int)json_integer_value(v);
    else if (!strcmp(name, "batch")) req->batch = json_integer_value(v);
    else if (!strcmp(name, "update")) req->update = json_is_true(v);
    else if (!strcmp(name, "compare_eager")) req->compare_eager = json_is_true(v);
    else if (!strcmp(name, "output_digest")) req->output_digest = json_is_true(v);
    else if (!strcmp(name, "hang")) req->hang = json_is_true(v);
    else if (!strcmp(name, "iters")) req->iters = (int)json_integer_value(v);
    else if (!strcmp(name, "warmup")) req->warmup = (int)json_integer_value(v);
    else if (!strcmp(name, "batches")) req->batches = (int)json_integer_value(v);
    else if (!strcmp(name, "ms")) req->ms = (int)json_integer_value(v);
    else if (!strcmp(name, "spin_us")) req->spin_us = (int)json_integer_value(v);
    else if (!strcmp(name, "lane")) req->lane = json_integer_value(v);
    else if (!strcmp(name, "shm")) {
        const char *sv = json_string_value(v);
        if (sv[0] != '/' || strchr(sv + 1, '/') || !sv[1])
            gr_error_set(err, GR_ERR_PROTOCOL, name,
                         "expected a shared-memory name \"/name\" (one leading slash, none after "
                         "it), got \"%.200s\"",
                         sv);
        else
            snprintf(req->shm, sizeof(req->shm), "%s", sv);
    }
}

/* "inputs" / "outputs": [{"buffer": NAME, "file": "/abs/x.npy"} | {"buffer": NAME, "shm": "/seg",
 * "offset": N}, ...], each entry checked with its path ("inputs[1].shm"). */
static void store_io(gr_request *req, const char *name, const json_t *arr, gr_error *err) {
    int out = !strcmp(name, "outputs");
    int lane = req->cmd == GR_CMD_LANE_OPEN; /* {buffer, offset} in the request's one segment */
    gr_io_spec *specs = out ? req->outputs : req->inputs;
    int *n = out ? &req->noutputs : &req->ninputs;
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        char path[64];
        snprintf(path, sizeof(path), "%s[%zu]", name, i);
        if (!json_is_object(e)) {
            if (lane)
                gr_error_set(err, GR_ERR_PROTOCOL, path,
                             "expected an object {\"buffer\": NAME, \"offset\": N}, got %s",
                             type_word(e));
            else
                gr_error_set(err, GR_ERR_PROTOCOL, path,
                             "expected an object {\"buffer\": NAME, \"file\": PATH} or "
                             "{\"buffer\": NAME, \"shm\": \"/segment\", \"offset\": N}, got %s",
                             type_word(e));
            continue;
        }
        int has_offset = 0;
        gr_io_spec sp;
        memset(&sp, 0, sizeof(sp));
        int bad = 0;
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)e, key, v) {
            char kp[96];
            snprintf(kp, sizeof(kp), "%s.%.24s", path, key);
            if (lane && (!strcmp(key, "file") || !strcmp(key, "shm"))) {
                gr_error_set(err, GR_ERR_PROTOCOL, kp,
                             "a lane's buffers live in its one segment (the request's \"shm\"): "
                             "give \"buffer\" and \"offset\" only");
                bad = 1;
            } else if (!strcmp(key, "buffer") || !strcmp(key, "file") || !strcmp(key, "shm")) {
                size_t max = !strcmp(key, "buffer") ? sizeof(sp.buffer) - 1
                             : !strcmp(key, "file") ? sizeof(sp.file) - 1
                                                    : sizeof(sp.shm) - 1;
                if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > max) {
                    gr_error_set(err, GR_ERR_PROTOCOL, kp, "expected a string of 1 to %zu characters",
                                 max);
                    bad = 1;
                    continue;
                }
                const char *sv = json_string_value(v);
                if (!strcmp(key, "buffer")) snprintf(sp.buffer, sizeof(sp.buffer), "%s", sv);
                else if (!strcmp(key, "file")) {
                    if (sv[0] != '/') {
                        gr_error_set(err, GR_ERR_PROTOCOL, kp,
                                     "must be an absolute path (the service runs in /), got "
                                     "\"%.200s\"", sv);
                        bad = 1;
                    }
                    snprintf(sp.file, sizeof(sp.file), "%s", sv);
                } else {
                    if (sv[0] != '/' || strchr(sv + 1, '/')) {
                        gr_error_set(err, GR_ERR_PROTOCOL, kp,
                                     "expected a shared-memory name \"/name\" (one leading slash, "
                                     "none after it), got \"%.200s\"", sv);
                        bad = 1;
                    }
                    snprintf(sp.shm, sizeof(sp.shm), "%s", sv);
                }
            } else if (!strcmp(key, "offset")) {
                long long off;
                if (!whole_number(v, &off) || off < 0) {
                    gr_error_set(err, GR_ERR_PROTOCOL, kp, "expected a whole number of bytes >= 0");
                    bad = 1;
                } else {
                    sp.offset = off;
                    has_offset = 1;
                }
            } else {
                gr_error_set(err, GR_ERR_PROTOCOL, kp,
                             lane ? "unknown key (keys: buffer, offset)"
                                  : "unknown key (keys: buffer, file, shm, offset)");
                bad = 1;
            }
        }
        if (!sp.buffer[0]) {
            gr_error_set(err, GR_ERR_PROTOCOL, path, "missing \"buffer\" (the workload buffer's name)");
            bad = 1;
        }
        if (lane && !has_offset) {
            gr_error_set(err, GR_ERR_PROTOCOL, path,
                         "missing \"offset\" (where the buffer's bytes start in the segment, 4096 "
                         "or more: the first 4096 bytes are the lane's control block)");
            bad = 1;
        }
        if (!lane && !!sp.file[0] == !!sp.shm[0]) {
            gr_error_set(err, GR_ERR_PROTOCOL, path, "give exactly one of \"file\" and \"shm\"");
            bad = 1;
        }
        if (!lane && sp.offset && !sp.shm[0]) {
            gr_error_set(err, GR_ERR_PROTOCOL, path, "\"offset\" goes with \"shm\"");
            bad = 1;
        }
        for (int k = 0; k < *n && !bad; k++)
            if (!strcmp(specs[k].buffer, sp.buffer)) {
                gr_error_set(err, GR_ERR_PROTOCOL, path, "buffer \"%s\" is listed twice", sp.buffer);
                bad = 1;
            }
        if (!bad) specs[(*n)++] = sp;
    }
}

/* Type and range of one field; on success the value is stored. */
static void check_field(gr_request *req, const field_spec *f, json_t *v, gr_error *err) {
    switch (f->type) {
    case F_STR:
        if (!json_is_string(v)) {
            gr_error_set(err, GR_ERR_PROTOCOL, f->name, "expected a string, got %s", type_word(v));
            return;
        }
        if ((long long)json_string_length(v) > f->hi || json_string_length(v) == 0) {
            gr_error_set(err, GR_ERR_PROTOCOL, f->name, "expected 1 to %lld characters, got %zu",
                         f->hi, json_string_length(v));
            return;
        }
        store(req, f->name, v, err);
        return;
    case F_INT: {
        long long n;
        if (!whole_number(v, &n)) {
            gr_error_set(err, GR_ERR_PROTOCOL, f->name, "expected an integer, got %s", type_word(v));
            return;
        }
        if (n < f->lo || n > f->hi) {
            gr_error_set(err, GR_ERR_PROTOCOL, f->name, "%lld is outside [%lld, %lld]", n, f->lo,
                         f->hi);
            return;
        }
        json_t *iv = json_integer(n);
        store(req, f->name, iv, err);
        json_decref(iv);
        return;
    }
    case F_BOOL:
        if (!json_is_boolean(v)) {
            gr_error_set(err, GR_ERR_PROTOCOL, f->name, "expected true or false, got %s", type_word(v));
            return;
        }
        store(req, f->name, v, err);
        return;
    case F_STRARR:
    case F_IOARR:
        if (!json_is_array(v)) {
            gr_error_set(err, GR_ERR_PROTOCOL, f->name, "expected an array of %s, got %s",
                         f->type == F_IOARR ? "objects" : "strings", type_word(v));
            return;
        }
        if ((long long)json_array_size(v) > f->hi) {
            gr_error_set(err, GR_ERR_PROTOCOL, f->name, "at most %lld entries, got %zu", f->hi,
                         json_array_size(v));
            return;
        }
        if (f->type == F_IOARR) store_io(req, f->name, v, err);
        else store(req, f->name, v, err);
        return;
    }
}

static void defaults(gr_request *req) {
    memset(req, 0, sizeof(*req));
    req->mode = GR_CAPTURE_GLOBAL;
    req->cpu_reference = 1;
    req->capture_check = 1;
    req->pdl = -1; /* GR_PDL_AUTO */
    req->unroll = 1;
    req->iters = 1000;
    req->warmup = -1;
    req->batches = 20;
    req->spin_us = 2000;
}

gr_status gr_request_parse(const char *line, size_t len, gr_request *req, gr_error *err) {
    defaults(req);
    json_error_t je;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return gr_error_at(err, GR_ERR_PROTOCOL, "request", je.line, je.column,
                           "invalid JSON: %s (send one JSON object per line)", je.text);
    if (!json_is_object(root)) {
        gr_error_set(err, GR_ERR_PROTOCOL, "request",
                     "expected a JSON object such as {\"schema_version\": 1, \"cmd\": \"status\"}, got %s",
                     type_word(root));
        json_decref(root);
        return err->code;
    }
    json_t *id = json_object_get(root, "id");
    if (id) {
        if ((json_is_string(id) && json_string_length(id) <= 128) || json_is_integer(id))
            req->id = json_incref(id);
        else
            gr_error_set(err, GR_ERR_PROTOCOL, "id", "expected a string (at most 128 characters) or "
                         "an integer, got %s", type_word(id));
    }
    json_t *ver = json_object_get(root, "schema_version");
    long long vn = 0;
    if (!ver)
        gr_error_set(err, GR_ERR_PROTOCOL, "schema_version",
                     "missing (every request carries \"schema_version\": %d)", GR_PROTO_SCHEMA_VERSION);
    else if (!whole_number(ver, &vn))
        gr_error_set(err, GR_ERR_PROTOCOL, "schema_version", "expected an integer, got %s",
                     type_word(ver));
    else if (vn != GR_PROTO_SCHEMA_VERSION)
        gr_error_set(err, GR_ERR_PROTOCOL, "schema_version",
                     "this service speaks schema_version %d, the request has %lld (upgrade the "
                     "client, or restart the service with the matching graphrun)",
                     GR_PROTO_SCHEMA_VERSION, vn);
    json_t *cmdv = json_object_get(root, "cmd");
    const cmd_spec *spec = NULL;
    if (!cmdv) {
        gr_error_set(err, GR_ERR_PROTOCOL, "cmd", "missing (one of: " PUBLIC_COMMANDS ")");
    } else if (!json_is_string(cmdv)) {
        gr_error_set(err, GR_ERR_PROTOCOL, "cmd", "expected a string (one of: " PUBLIC_COMMANDS
                     "), got %s", type_word(cmdv));
    } else {
        for (const cmd_spec *c = commands; c->name; c++)
            if (!strcmp(c->name, json_string_value(cmdv))) spec = c;
        if (!spec)
            gr_error_set(err, GR_ERR_PROTOCOL, "cmd", "unknown command \"%.64s\" (commands: "
                         PUBLIC_COMMANDS ")", json_string_value(cmdv));
    }
    if (spec) {
        req->cmd = spec->cmd;
        const char *key;
        json_t *v;
        json_object_foreach(root, key, v) {
            if (!strcmp(key, "schema_version") || !strcmp(key, "cmd") || !strcmp(key, "id")) continue;
            const field_spec *f = NULL;
            for (const field_spec *s = spec->fields; s->name; s++)
                if (!strcmp(s->name, key)) f = s;
            if (!f) {
                char keys[256];
                key_list(spec->fields, keys, sizeof(keys));
                char shown[72];
                snprintf(shown, sizeof(shown), "%.64s", key);
                gr_error_set(err, GR_ERR_PROTOCOL, shown, "unknown key for command %s (keys: %s)",
                             spec->name, keys);
                continue;
            }
            check_field(req, f, v, err);
        }
        for (const field_spec *s = spec->fields; s->name; s++)
            if (s->required && !json_object_get(root, s->name))
                gr_error_set(err, GR_ERR_PROTOCOL, s->name, "missing (command %s needs it)",
                             spec->name);
        if (req->update && !req->name[0])
            gr_error_set(err, GR_ERR_PROTOCOL, "update", "needs \"name\": the held graph to update");
        if (req->update && req->buckets.n)
            gr_error_set(err, GR_ERR_PROTOCOL, "update", "does not go with \"buckets\"");
        if (req->ninputs || req->noutputs)
            for (const char *const *k = (const char *const[]){"iters", "warmup", "batches",
                                                              "compare_eager", NULL};
                 *k; k++)
                if (json_object_get(root, *k))
                    gr_error_set(err, GR_ERR_PROTOCOL, *k,
                                 "a replay with inputs or outputs serves one step (copy in, "
                                 "replay, copy out); time replays in a separate request");
    }
    json_decref(root);
    return gr_error_failed(err) ? err->code : GR_OK;
}

void gr_request_clear(gr_request *req) {
    if (!req) return;
    json_decref((json_t *)req->id);
    req->id = NULL;
}

static const struct {
    gr_status code;
    const char *name;
} code_names[] = {{GR_OK, "ok"},
                  {GR_ERR_USAGE, "usage"},
                  {GR_ERR_INPUT, "bad_input"},
                  {GR_ERR_IO, "io"},
                  {GR_ERR_NODEV, "no_device"},
                  {GR_ERR_CUDA, "cuda"},
                  {GR_ERR_VERIFY, "verify"},
                  {GR_ERR_CAPTURE, "capture"},
                  {GR_ERR_NOMEM, "out_of_memory"},
                  {GR_ERR_PROTOCOL, "protocol"},
                  {GR_ERR_SERVICE, "service"},
                  {GR_ERR_INTERNAL, "internal"}};

const char *gr_proto_code_name(gr_status code) {
    for (size_t i = 0; i < sizeof(code_names) / sizeof(code_names[0]); i++)
        if (code_names[i].code == code) return code_names[i].name;
    return "internal";
}

gr_status gr_proto_code_parse(const char *name) {
    for (size_t i = 0; name && i < sizeof(code_names) / sizeof(code_names[0]); i++)
        if (!strcmp(code_names[i].name, name)) return code_names[i].code;
    return GR_ERR_INTERNAL;
}

static json_t *reply_base(const void *id) {
    json_t *r = json_object();
    if (!r) return NULL;
    json_object_set_new(r, "schema_version", json_integer(GR_PROTO_SCHEMA_VERSION));
    if (id) json_object_set(r, "id", (json_t *)id);
    return r;
}

static char *finish(json_t *r, json_t *body) {
    if (body && r) json_object_update(r, body);
    json_decref(body);
    if (!r) return NULL;
    char *text = json_dumps(r, JSON_COMPACT | JSON_REAL_PRECISION(12));
    json_decref(r);
    if (!text) return NULL;
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) {
        free(text);
        return NULL;
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    return line;
}

char *gr_reply_ok(const void *id, gr_cmd cmd, void *body) {
    json_t *r = reply_base(id);
    if (r) {
        json_object_set_new(r, "ok", json_true());
        json_object_set_new(r, "cmd", json_string(gr_cmd_name(cmd)));
    }
    return finish(r, body);
}

/* Length of the valid UTF-8 sequence at p (strict: no overlong forms, no surrogates, at most
 * U+10FFFF), 0 when invalid. */
static int utf8_seq(const unsigned char *p) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    int n;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF) n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, cp = c & 0x07;
    else return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

/* Messages quote client bytes and may be cut in the middle of a character: make them valid
 * UTF-8 (invalid bytes become '?') so that they always fit in a JSON string. */
static json_t *utf8_string(const char *s) {
    size_t n = strlen(s);
    char *out = malloc(n + 1);
    if (!out) return json_string("");
    size_t o = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int k = utf8_seq(p);
        if (k == 0) {
            out[o++] = '?';
            p++;
        } else {
            memcpy(out + o, p, (size_t)k);
            o += (size_t)k;
            p += k;
        }
    }
    out[o] = '\0';
    json_t *j = json_string(out);
    free(out);
    return j ? j : json_string("");
}

char *gr_reply_error(const void *id, gr_status code, const char *field, const char *message,
                     void *body) {
    json_t *r = reply_base(id);
    if (r) {
        json_object_set_new(r, "ok", json_false());
        json_t *e = json_object();
        json_object_set_new(e, "code", json_string(gr_proto_code_name(code)));
        json_object_set_new(e, "exit_code", json_integer(gr_exit_code(code)));
        json_object_set_new(e, "message", utf8_string(message ? message : ""));
        json_object_set_new(e, "field", utf8_string(field ? field : ""));
        json_object_set_new(r, "error", e);
    }
    json_t *b = body;
    if (b) json_object_del(b, "error");
    return finish(r, b);
}

char *gr_reply_progress(const void *id, const char *phase, long long done, long long total) {
    json_t *r = reply_base(id);
    if (r)
        json_object_set_new(r, "progress", json_pack("{s:s, s:I, s:I}", "phase", phase, "done",
                                                     (json_int_t)done, "total", (json_int_t)total));
    return finish(r, NULL);
}

gr_status gr_reply_parse(const char *line, size_t len, gr_reply *out, gr_error *err) {
    memset(out, 0, sizeof(*out));
    json_error_t je;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return gr_error_at(err, GR_ERR_PROTOCOL, "reply", je.line, je.column,
                           "the service sent invalid JSON: %s", je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return gr_error_set(err, GR_ERR_PROTOCOL, "reply", "expected a JSON object");
    }
    out->body = root;
    json_t *ver = json_object_get(root, "schema_version");
    if (!json_is_integer(ver) || json_integer_value(ver) != GR_PROTO_SCHEMA_VERSION)
        return gr_error_set(err, GR_ERR_PROTOCOL, "reply.schema_version",
                            "the service speaks another protocol version (this client speaks %d): "
                            "stop it with `graphrun stop` and let this graphrun start its own",
                            GR_PROTO_SCHEMA_VERSION);
    json_t *prog = json_object_get(root, "progress");
    if (prog) {
        json_t *ph = json_object_get(prog, "phase");
        json_t *d = json_object_get(prog, "done"), *t = json_object_get(prog, "total");
        if (!json_is_string(ph) || !json_is_integer(d) || !json_is_integer(t))
            return gr_error_set(err, GR_ERR_PROTOCOL, "reply.progress",
                                "expected {phase: string, done: integer, total: integer}");
        out->is_progress = 1;
        snprintf(out->phase, sizeof(out->phase), "%s", json_string_value(ph));
        out->done = json_integer_value(d);
        out->total = json_integer_value(t);
        return GR_OK;
    }
    json_t *ok = json_object_get(root, "ok");
    if (!json_is_boolean(ok))
        return gr_error_set(err, GR_ERR_PROTOCOL, "reply.ok", "missing or not a boolean");
    out->ok = json_is_true(ok);
    if (!out->ok) {
        json_t *e = json_object_get(root, "error");
        json_t *code = json_object_get(e, "code"), *msg = json_object_get(e, "message");
        json_t *field = json_object_get(e, "field");
        if (!json_is_string(code) || !json_is_string(msg))
            return gr_error_set(err, GR_ERR_PROTOCOL, "reply.error",
                                "expected {code: string, message: string}");
        out->code = gr_proto_code_parse(json_string_value(code));
        if (out->code == GR_OK) out->code = GR_ERR_INTERNAL;
        snprintf(out->message, sizeof(out->message), "%s", json_string_value(msg));
        if (json_is_string(field)) snprintf(out->field, sizeof(out->field), "%s", json_string_value(field));
    }
    return GR_OK;
}

void gr_reply_clear(gr_reply *r) {
    if (!r) return;
    json_decref((json_t *)r->body);
    r->body = NULL;
}

void gr_linebuf_init(gr_linebuf *lb, size_t max) {
    memset(lb, 0, sizeof(*lb));
    lb->max = max;
}

void gr_linebuf_free(gr_linebuf *lb) {
    free(lb->buf);
    memset(lb, 0, sizeof(*lb));
}

gr_status gr_linebuf_append(gr_linebuf *lb, const char *data, size_t n) {
    if (lb->len + n + 1 > lb->cap) {
        size_t cap = lb->cap ? lb->cap : 4096;
        while (cap < lb->len + n + 1) cap *= 2;
        char *b = realloc(lb->buf, cap);
        if (!b) return GR_ERR_NOMEM;
        lb->buf = b;
        lb->cap = cap;
    }
    memcpy(lb->buf + lb->len, data, n);
    lb->len += n;
    lb->buf[lb->len] = '\0';
    return GR_OK;
}

int gr_linebuf_next(gr_linebuf *lb, char **line, size_t *len) {
    *line = NULL;
    *len = 0;
    const char *nl = lb->len > lb->scanned ? memchr(lb->buf + lb->scanned, '\n', lb->len - lb->scanned)
                                           : NULL;
    if (!nl) {
        lb->scanned = lb->len;
        return lb->len >= lb->max ? -1 : 0;
    }
    size_t n = (size_t)(nl - lb->buf);
    if (n + 1 > lb->max) return -1;
    char *out = malloc(n + 1);
    if (!out) return -1;
    memcpy(out, lb->buf, n);
    out[n] = '\0';
    if (n > 0 && out[n - 1] == '\r') out[--n] = '\0';
    memmove(lb->buf, nl + 1, lb->len - (size_t)(nl + 1 - lb->buf));
    lb->len -= (size_t)(nl + 1 - lb->buf);
    lb->buf[lb->len] = '\0';
    lb->scanned = 0;
    *line = out;
    *len = n;
    return 1;
}

int gr_linebuf_pending(const gr_linebuf *lb) {
    return lb->len > 0;
}

int gr_proto_valid_name(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > GR_PROTO_NAME_MAX || s[0] == '-' || s[0] == '.') return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}
