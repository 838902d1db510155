/* Replay service suites without a GPU: the protocol (parsing, validation, replies, framing, a
 * generated battery of bad requests), the protocol fuzz corpus, and the service end to end
 * through the graphrun binary and raw sockets: start/stop, status/list answered while the worker
 * is busy, every malformed request, size limit, slow clients, a killed client, concurrent
 * auto-starts, stale sockets and crashed services, wrong-uid refusal, daemonization, signals
 * and the Python client of replay/PROTOCOL.md. Every test uses its own temporary socket and
 * stops the services it starts. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/timer.h"
#include "replay/client.h"
#include "replay/protocol.h"
#include "replay/run.h"
#include "service_util.h"
#include "tests.h"

/* ================================================================ protocol (unit) */

static void test_parse_valid(void) {
    gr_request r;
    gr_error e;
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\": 1, \"cmd\": \"status\"}", &r, &e), GR_OK);
    CU_ASSERT_EQUAL(r.cmd, GR_CMD_STATUS);
    CU_ASSERT_PTR_NULL(r.id);
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"/w/x.json\", "
                          "\"name\": \"g.1-a\", \"sets\": [\"n=4096\", \"act=gelu\"], \"variant\": "
                          "\"fused\", \"capture_mode\": \"relaxed\", \"force\": true, "
                          "\"cpu_reference\": false, \"progress\": true, \"id\": \"abc\"}",
                          &r, &e),
                    GR_OK);
    CU_ASSERT_EQUAL(r.cmd, GR_CMD_CAPTURE);
    CU_ASSERT_STRING_EQUAL(r.workload, "/w/x.json");
    CU_ASSERT_STRING_EQUAL(r.name, "g.1-a");
    CU_ASSERT_EQUAL(r.nsets, 2);
    CU_ASSERT_STRING_EQUAL(r.sets[1], "act=gelu");
    CU_ASSERT_STRING_EQUAL(r.variant, "fused");
    CU_ASSERT_EQUAL(r.mode, GR_CAPTURE_RELAXED);
    CU_ASSERT_TRUE(r.force);
    CU_ASSERT_FALSE(r.cpu_reference);
    CU_ASSERT_TRUE(r.progress);
    CU_ASSERT_STRING_EQUAL(json_string_value((json_t *)r.id), "abc");
    gr_request_clear(&r);
    /* defaults */
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\": 1, \"cmd\": \"replay\"}", &r, &e), GR_OK);
    CU_ASSERT_EQUAL(r.iters, 1000);
    CU_ASSERT_EQUAL(r.warmup, -1);
    CU_ASSERT_EQUAL(r.batches, 20);
    CU_ASSERT_FALSE(r.compare_eager);
    CU_ASSERT_EQUAL(r.name[0], '\0');
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\": 1.0, \"cmd\": \"replay\", \"iters\": 1e4, \"warmup\": 0,"
                          " \"batches\": 7, \"compare_eager\": true, \"name\": \"x\", \"id\": 42}",
                          &r, &e),
                    GR_OK);
    CU_ASSERT_EQUAL(r.iters, 10000);
    CU_ASSERT_EQUAL(r.warmup, 0);
    CU_ASSERT_EQUAL(r.batches, 7);
    CU_ASSERT_TRUE(r.compare_eager);
    CU_ASSERT_EQUAL(json_integer_value((json_t *)r.id), 42);
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\": 1, \"cmd\": \"drop\", \"name\": \"x\"}", &r, &e), GR_OK);
    CU_ASSERT_EQUAL(r.cmd, GR_CMD_DROP);
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"cmd\": \"stop\", \"schema_version\": 1}\r", &r, &e), GR_OK); /* JSON whitespace */
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("  {\"cmd\": \"stop\", \"schema_version\": 1}  ", &r, &e), GR_OK);
    CU_ASSERT_EQUAL(r.cmd, GR_CMD_STOP);
    gr_request_clear(&r);
    CU_ASSERT_TRUE(gr_cmd_is_queued(GR_CMD_CAPTURE));
    CU_ASSERT_FALSE(gr_cmd_is_queued(GR_CMD_STATUS));
    CU_ASSERT_STRING_EQUAL(gr_cmd_name(GR_CMD_REPLAY), "replay");
}

typedef struct bad_case {
    const char *line;
    const char *field;   /* err.path, "" for the line as a whole */
    const char *message; /* substring */
} bad_case;

static const bad_case bad_cases[] = {
    {"", "", "invalid JSON"},
    {"{", "", "request:1:"},
    {"not json", "", "invalid JSON"},
    {"[1, 2]", "request", "expected a JSON object"},
    {"\"status\"", "", "invalid JSON"},
    {"{\"schema_version\": 1, \"cmd\": \"status\"} {}", "", "invalid JSON"},
    {"{\"schema_version\": 1, \"cmd\": \"status\", \"cmd\": \"list\"}", "", "duplicate"},
    {"{\"cmd\": \"status\"}", "schema_version", "missing"},
    {"{\"schema_version\": \"1\", \"cmd\": \"status\"}", "schema_version", "expected an integer, got a string"},
    {"{\"schema_version\": 2, \"cmd\": \"status\"}", "schema_version", "speaks schema_version 1, the request has 2"},
    {"{\"schema_version\": 1}", "cmd", "missing (one of: status, list, capture, replay, drop, stop, lane_open, lane_close)"},
    {"{\"schema_version\": 1, \"cmd\": 3}", "cmd", "expected a string"},
    {"{\"schema_version\": 1, \"cmd\": \"frobnicate\"}", "cmd", "unknown command \"frobnicate\""},
    {"{\"schema_version\": 1, \"cmd\": \"status\", \"iters\": 3}", "iters", "unknown key for command status"},
    {"{\"schema_version\": 1, \"cmd\": \"replay\", \"itres\": 3}", "itres", "unknown key for command replay (keys: name, iters, warmup, batches, compare_eager, output_digest, inputs, batch, outputs, progress)"},
    {"{\"schema_version\": 1, \"cmd\": \"replay\", \"iters\": \"many\"}", "iters", "expected an integer, got a string"},
    {"{\"schema_version\": 1, \"cmd\": \"replay\", \"iters\": 1.5}", "iters", "expected an integer, got a number"},
    {"{\"schema_version\": 1, \"cmd\": \"replay\", \"iters\": 0}", "iters", "0 is outside [1, 100000000]"},
    {"{\"schema_version\": 1, \"cmd\": \"replay\", \"iters\": 100000001}", "iters", "outside"},
    {"{\"schema_version\": 1, \"cmd\": \"replay\", \"warmup\": -1}", "warmup", "outside [0,"},
    {"{\"schema_version\": 1, \"cmd\": \"replay\", \"batches\": null}", "batches", "expected an integer, got null"},
    {"{\"schema_version\": 1, \"cmd\": \"replay\", \"compare_eager\": 1}", "compare_eager", "expected true or false, got an integer"},
    {"{\"schema_version\": 1, \"cmd\": \"replay\", \"name\": \"-x\"}", "name", "not a valid graph name"},
    {"{\"schema_version\": 1, \"cmd\": \"replay\", \"name\": \"a/b\"}", "name", "not a valid graph name"},
    {"{\"schema_version\": 1, \"cmd\": \"replay\", \"name\": \"\"}", "name", "expected 1 to 64 characters, got 0"},
    {"{\"schema_version\": 1, \"cmd\": \"capture\"}", "workload", "missing (command capture needs it)"},
    {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"rel/x.json\"}", "workload", "must be an absolute path"},
    {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": 5}", "workload", "expected a string, got an integer"},
    {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"/x\", \"sets\": \"n=1\"}", "sets", "expected an array of strings, got a string"},
    {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"/x\", \"sets\": [\"n=1\", 2]}", "sets[1]", "expected a string \"name=value\", got an integer"},
    {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"/x\", \"sets\": [\"n\"]}", "sets[0]", "expected \"name=value\""},
    {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"/x\", \"capture_mode\": \"sideways\"}", "capture_mode", "unknown mode \"sideways\" (modes: global, thread-local, relaxed)"},
    {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"/x\", \"force\": \"yes\"}", "force", "expected true or false, got a string"},
    {"{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"/x\", \"variant\": {}}", "variant", "expected a string, got an object"},
    {"{\"schema_version\": 1, \"cmd\": \"drop\"}", "name", "missing (command drop needs it)"},
    {"{\"schema_version\": 1, \"cmd\": \"status\", \"id\": [1]}", "id", "expected a string (at most 128 characters) or an integer, got an array"},
    {"{\"schema_version\": 1, \"cmd\": \"debug_sleep\"}", "ms", "missing"},
    {"{\"schema_version\": 1, \"cmd\": \"debug_sleep\", \"ms\": 600001}", "ms", "outside"},
    {"{\"schema_version\": 1, \"cmd\": \"status\", \"x\\u0000\": 1}", "", "invalid JSON"},
};

static void test_parse_errors_name_field(void) {
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const bad_case *c = &bad_cases[i];
        gr_request r;
        gr_error e;
        gr_status st = svc_parse(c->line, &r, &e);
        if (st != GR_ERR_PROTOCOL || strcmp(e.path, c->field) != 0 || !strstr(e.msg, c->message))
            fprintf(stderr, "\n    case %zu %s: status %d path \"%s\" msg %s", i, c->line, st, e.path, e.msg);
        CU_ASSERT_EQUAL(st, GR_ERR_PROTOCOL);
        CU_ASSERT_STRING_EQUAL(e.path, c->field);
        GR_ASSERT_CONTAINS(e.msg, c->message);
        /* the message names the field too (the reply's text stands on its own) */
        if (c->field[0]) GR_ASSERT_CONTAINS(e.msg, c->field);
        gr_request_clear(&r);
    }
}

static void test_parse_reports_every_problem(void) {
    gr_request r;
    gr_error e;
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\": 1, \"cmd\": \"replay\", \"iters\": \"x\", \"warmup\": -5, "
                          "\"bogus\": 1, \"name\": \"/\", \"id\": \"req-9\"}",
                          &r, &e),
                    GR_ERR_PROTOCOL);
    CU_ASSERT_EQUAL(e.count, 4);
    GR_ASSERT_CONTAINS(e.msg, "iters: expected an integer");
    GR_ASSERT_CONTAINS(e.msg, "warmup: -5 is outside");
    GR_ASSERT_CONTAINS(e.msg, "bogus: unknown key");
    GR_ASSERT_CONTAINS(e.msg, "name: \"/\" is not a valid graph name");
    /* the id is kept for the error reply */
    CU_ASSERT_STRING_EQUAL(json_string_value((json_t *)r.id), "req-9");
    char *line = gr_reply_error(r.id, GR_ERR_PROTOCOL, e.path, e.msg, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(line);
    json_t *j = json_loads(line, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "id")), "req-9");
    json_decref(j);
    free(line);
    gr_request_clear(&r);
}

/* Generated bad requests: every field of every command given every wrong type, every required
 * field removed, unknown keys added; then seeded random mutations of valid lines. Each must end
 * in GR_OK or an error that names a place, and every error must make a reply the client reads. */
static void check_reply_roundtrip(const gr_request *r, gr_status st, const gr_error *e) {
    char *line = gr_reply_error(r->id, st, e->path, e->msg, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(line);
    size_t n = strlen(line);
    CU_ASSERT_EQUAL(line[n - 1], '\n');
    CU_ASSERT_PTR_NULL(memchr(line, '\n', n - 1));
    gr_reply rep;
    gr_error pe;
    gr_error_clear(&pe);
    CU_ASSERT_EQUAL(gr_reply_parse(line, n - 1, &rep, &pe), GR_OK);
    CU_ASSERT_FALSE(rep.ok);
    CU_ASSERT_EQUAL(rep.code, st);
    CU_ASSERT_TRUE(rep.message[0] != '\0');
    gr_reply_clear(&rep);
    free(line);
}

static void test_generated_battery(void) {
    static const char *valid[] = {
        "{\"schema_version\": 1, \"cmd\": \"capture\", \"workload\": \"/w.json\", \"name\": \"n\", "
        "\"sets\": [\"a=1\"], \"variant\": \"v\", \"capture_mode\": \"global\", \"force\": false, "
        "\"cpu_reference\": true, \"progress\": false}",
        "{\"schema_version\": 1, \"cmd\": \"replay\", \"name\": \"n\", \"iters\": 5, \"warmup\": 1, "
        "\"batches\": 2, \"compare_eager\": false, \"progress\": true}",
        "{\"schema_version\": 1, \"cmd\": \"drop\", \"name\": \"n\"}",
        "{\"schema_version\": 1, \"cmd\": \"status\"}",
        "{\"schema_version\": 1, \"cmd\": \"list\"}",
        "{\"schema_version\": 1, \"cmd\": \"stop\"}",
    };
    static const char *required[] = {"schema_version", "cmd", "workload", "name"};
    json_t *wrong[] = {json_string("x"), json_integer(-7), json_real(2.5), json_true(), json_null(),
                       json_array(), json_object()};
    int cases = 0, errors = 0;
    for (size_t v = 0; v < sizeof(valid) / sizeof(valid[0]); v++) {
        json_t *base = json_loads(valid[v], 0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(base);
        gr_request r;
        gr_error e;
        CU_ASSERT_EQUAL_FATAL(svc_parse(valid[v], &r, &e), GR_OK);
        gr_request_clear(&r);
        const char *key;
        json_t *val;
        json_object_foreach(base, key, val) {
            /* every wrong type */
            for (size_t w = 0; w < sizeof(wrong) / sizeof(wrong[0]); w++) {
                if (json_typeof(wrong[w]) == json_typeof(val)) continue;
                if (json_is_boolean(wrong[w]) && json_is_boolean(val)) continue;
                json_t *m = json_deep_copy(base);
                json_object_set(m, key, wrong[w]);
                char *text = json_dumps(m, JSON_COMPACT);
                gr_status st = svc_parse(text, &r, &e);
                cases++;
                /* schema_version 2.5 / -7 and the like: wrong all the same */
                if (st == GR_OK) fprintf(stderr, "\n    accepted: %s", text);
                CU_ASSERT_EQUAL(st, GR_ERR_PROTOCOL);
                if (st != GR_OK) {
                    errors++;
                    /* the error names the mutated field (cmd mutations make it "cmd") */
                    GR_ASSERT_CONTAINS(e.msg, key);
                    check_reply_roundtrip(&r, st, &e);
                }
                gr_request_clear(&r);
                free(text);
                json_decref(m);
            }
            /* removed */
            json_t *m = json_deep_copy(base);
            json_object_del(m, key);
            char *text = json_dumps(m, JSON_COMPACT);
            gr_status st = svc_parse(text, &r, &e);
            cases++;
            int is_required = 0;
            for (size_t q = 0; q < sizeof(required) / sizeof(required[0]); q++)
                if (!strcmp(required[q], key) &&
                    (strcmp(key, "name") || strstr(valid[v], "\"drop\"")) &&
                    (strcmp(key, "workload") || strstr(valid[v], "\"capture\"")))
                    is_required = 1;
            if (is_required) {
                CU_ASSERT_EQUAL(st, GR_ERR_PROTOCOL);
                GR_ASSERT_CONTAINS(e.msg, key);
                GR_ASSERT_CONTAINS(e.msg, "missing");
                if (st != GR_OK) check_reply_roundtrip(&r, st, &e);
            } else {
                CU_ASSERT_EQUAL(st, GR_OK);
            }
            gr_request_clear(&r);
            free(text);
            json_decref(m);
        }
        /* an unknown key */
        json_t *m = json_deep_copy(base);
        json_object_set_new(m, "surprise", json_integer(1));
        char *text = json_dumps(m, JSON_COMPACT);
        CU_ASSERT_EQUAL(svc_parse(text, &r, &e), GR_ERR_PROTOCOL);
        GR_ASSERT_CONTAINS(e.msg, "surprise: unknown key for command");
        gr_request_clear(&r);
        free(text);
        json_decref(m);
        json_decref(base);
    }
    for (size_t w = 0; w < sizeof(wrong) / sizeof(wrong[0]); w++) json_decref(wrong[w]);
    CU_ASSERT_TRUE(cases > 100);
    CU_ASSERT_TRUE(errors > 80);

    /* seeded random mutations: truncations, byte flips, insertions */
    unsigned seed = 20261129;
    int oks = 0, fails = 0;
    for (int it = 0; it < 20000; it++) {
        const char *src = valid[(size_t)it % (sizeof(valid) / sizeof(valid[0]))];
        char buf[1024];
        size_t n = strlen(src);
        memcpy(buf, src, n + 1);
        seed = seed * 1103515245u + 12345u;
        int kind = (int)((seed >> 16) % 4);
        seed = seed * 1103515245u + 12345u;
        size_t pos = (seed >> 8) % n;
        seed = seed * 1103515245u + 12345u;
        unsigned char byte = (unsigned char)(seed >> 16);
        if (kind == 0) buf[pos] = '\0';
        else if (kind == 1) buf[pos] = (char)byte;
        else if (kind == 2 && n + 2 < sizeof(buf)) {
            memmove(buf + pos + 1, buf + pos, n - pos + 1);
            buf[pos] = (char)byte;
        } else buf[pos] ^= (char)(1u << (byte % 7));
        size_t len = strnlen(buf, sizeof(buf));
        gr_request r;
        gr_error e;
        gr_error_clear(&e);
        gr_status st = gr_request_parse(buf, len, &r, &e);
        if (st == GR_OK) {
            oks++;
            CU_ASSERT_NOT_EQUAL(r.cmd, GR_CMD_NONE);
        } else {
            fails++;
            CU_ASSERT_EQUAL(st, GR_ERR_PROTOCOL);
            CU_ASSERT_TRUE(e.msg[0] != '\0');
            if (e.msg[0] == '\0' || st != GR_ERR_PROTOCOL) fprintf(stderr, "\n    mutation: %s", buf);
            check_reply_roundtrip(&r, st, &e);
        }
        gr_request_clear(&r);
    }
    CU_ASSERT_TRUE(fails > 10000);
    CU_ASSERT_TRUE(oks > 100);
}

static void test_replies(void) {
    json_t *id = json_integer(7);
    char *ok = gr_reply_ok(id, GR_CMD_LIST, json_pack("{s:[], s:n}", "graphs", "latest"));
    CU_ASSERT_PTR_NOT_NULL_FATAL(ok);
    gr_reply r;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_reply_parse(ok, strlen(ok), &r, &e), GR_OK);
    CU_ASSERT_TRUE(r.ok);
    CU_ASSERT_FALSE(r.is_progress);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(r.body, "id")), 7);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r.body, "cmd")), "list");
    CU_ASSERT_TRUE(json_is_array(json_object_get(r.body, "graphs")));
    gr_reply_clear(&r);
    free(ok);
    char *pr = gr_reply_progress(id, "graph", 500, 1000);
    CU_ASSERT_EQUAL(gr_reply_parse(pr, strlen(pr), &r, &e), GR_OK);
    CU_ASSERT_TRUE(r.is_progress);
    CU_ASSERT_STRING_EQUAL(r.phase, "graph");
    CU_ASSERT_EQUAL(r.done, 500);
    CU_ASSERT_EQUAL(r.total, 1000);
    gr_reply_clear(&r);
    free(pr);
    /* every status survives the trip, with the exit code the CLI uses */
    gr_status all[] = {GR_ERR_USAGE, GR_ERR_INPUT, GR_ERR_IO, GR_ERR_NODEV, GR_ERR_CUDA, GR_ERR_VERIFY,
                       GR_ERR_CAPTURE, GR_ERR_NOMEM, GR_ERR_PROTOCOL, GR_ERR_SERVICE, GR_ERR_INTERNAL};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        char *line = gr_reply_error(NULL, all[i], "f", "f: what (fix)", json_pack("{s:s}", "report_text", "R"));
        CU_ASSERT_EQUAL(gr_reply_parse(line, strlen(line), &r, &e), GR_OK);
        CU_ASSERT_FALSE(r.ok);
        CU_ASSERT_EQUAL(r.code, all[i]);
        CU_ASSERT_STRING_EQUAL(r.field, "f");
        CU_ASSERT_STRING_EQUAL(r.message, "f: what (fix)");
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(r.body, "error"), "exit_code")),
                        gr_exit_code(all[i]));
        CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(r.body, "report_text")), "R");
        CU_ASSERT_EQUAL(gr_proto_code_parse(gr_proto_code_name(all[i])), all[i]);
        gr_reply_clear(&r);
        free(line);
    }
    CU_ASSERT_EQUAL(gr_proto_code_parse("nonsense"), GR_ERR_INTERNAL);
    /* a message quoting invalid UTF-8 (cut in the middle of a character) still makes JSON */
    char *bad = gr_reply_error(NULL, GR_ERR_PROTOCOL, "k\xc3", "k\xc3: unknown key \xff\xfe", NULL);
    json_t *j = json_loads(bad, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL(j);
    GR_ASSERT_CONTAINS(json_string_value(json_object_get(json_object_get(j, "error"), "message")), "unknown key ??");
    json_decref(j);
    free(bad);
    /* what a client must refuse */
    const char *broken[] = {"nope", "[]", "{\"schema_version\": 2, \"ok\": true}", "{\"schema_version\": 1}",
                            "{\"schema_version\": 1, \"ok\": false}",
                            "{\"schema_version\": 1, \"progress\": {\"phase\": 1}}"};
    for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
        gr_error_clear(&e);
        CU_ASSERT_EQUAL(gr_reply_parse(broken[i], strlen(broken[i]), &r, &e), GR_ERR_PROTOCOL);
        GR_ASSERT_CONTAINS(e.msg, "reply");
        gr_reply_clear(&r);
    }
    json_decref(id);
}

static void test_linebuf(void) {
    gr_linebuf lb;
    gr_linebuf_init(&lb, 16);
    char *line;
    size_t len;
    CU_ASSERT_EQUAL(gr_linebuf_next(&lb, &line, &len), 0);
    gr_linebuf_append(&lb, "ab\ncd\r\nef", 9);
    CU_ASSERT_EQUAL(gr_linebuf_next(&lb, &line, &len), 1);
    CU_ASSERT_STRING_EQUAL(line, "ab");
    free(line);
    CU_ASSERT_EQUAL(gr_linebuf_next(&lb, &line, &len), 1);
    CU_ASSERT_STRING_EQUAL(line, "cd");
    CU_ASSERT_EQUAL(len, 2);
    free(line);
    CU_ASSERT_EQUAL(gr_linebuf_next(&lb, &line, &len), 0);
    CU_ASSERT_TRUE(gr_linebuf_pending(&lb));
    gr_linebuf_append(&lb, "gh\n\n", 4);
    CU_ASSERT_EQUAL(gr_linebuf_next(&lb, &line, &len), 1);
    CU_ASSERT_STRING_EQUAL(line, "efgh");
    free(line);
    CU_ASSERT_EQUAL(gr_linebuf_next(&lb, &line, &len), 1);
    CU_ASSERT_EQUAL(len, 0);
    free(line);
    CU_ASSERT_FALSE(gr_linebuf_pending(&lb));
    /* exactly the limit (15 bytes + newline) passes; one more does not */
    gr_linebuf_append(&lb, "123456789012345\n", 16);
    CU_ASSERT_EQUAL(gr_linebuf_next(&lb, &line, &len), 1);
    CU_ASSERT_EQUAL(len, 15);
    free(line);
    gr_linebuf_append(&lb, "1234567890123456\n", 17);
    CU_ASSERT_EQUAL(gr_linebuf_next(&lb, &line, &len), -1);
    gr_linebuf_free(&lb);
    gr_linebuf_init(&lb, 16);
    gr_linebuf_append(&lb, "12345678901234567890", 20); /* no newline, past the limit */
    CU_ASSERT_EQUAL(gr_linebuf_next(&lb, &line, &len), -1);
    gr_linebuf_free(&lb);
    /* names */
    CU_ASSERT_TRUE(gr_proto_valid_name("launch_bound.fused-2"));
    CU_ASSERT_FALSE(gr_proto_valid_name(".hidden"));
    CU_ASSERT_FALSE(gr_proto_valid_name("a b"));
    CU_ASSERT_FALSE(gr_proto_valid_name(""));
    char longname[80];
    memset(longname, 'a', 65);
    longname[65] = '\0';
    CU_ASSERT_FALSE(gr_proto_valid_name(longname));
    longname[64] = '\0';
    CU_ASSERT_TRUE(gr_proto_valid_name(longname));
}

static void test_socket_paths(void) {
    gr_service_paths p;
    gr_error e;
    gr_error_clear(&e);
    char *saved_sock = getenv("GRAPHRUN_SOCKET") ? strdup(getenv("GRAPHRUN_SOCKET")) : NULL;
    char *saved_xdg = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
    unsetenv("GRAPHRUN_SOCKET");
    setenv("XDG_RUNTIME_DIR", "/run/user/1234", 1);
    CU_ASSERT_EQUAL(gr_service_paths_resolve(NULL, &p, &e), GR_OK);
    CU_ASSERT_STRING_EQUAL(p.socket, "/run/user/1234/graphrun/graphrun.sock");
    CU_ASSERT_STRING_EQUAL(p.dir, "/run/user/1234/graphrun");
    CU_ASSERT_STRING_EQUAL(p.lock, "/run/user/1234/graphrun/graphrun.sock.lock");
    CU_ASSERT_STRING_EQUAL(p.log, "/run/user/1234/graphrun/graphrun.sock.log");
    CU_ASSERT_TRUE(p.is_default);
    unsetenv("XDG_RUNTIME_DIR");
    CU_ASSERT_EQUAL(gr_service_paths_resolve(NULL, &p, &e), GR_OK);
    char want[64];
    snprintf(want, sizeof(want), "/tmp/graphrun-%u/graphrun.sock", (unsigned)geteuid());
    CU_ASSERT_STRING_EQUAL(p.socket, want);
    setenv("GRAPHRUN_SOCKET", "/x/env.sock", 1);
    CU_ASSERT_EQUAL(gr_service_paths_resolve(NULL, &p, &e), GR_OK);
    CU_ASSERT_STRING_EQUAL(p.socket, "/x/env.sock");
    CU_ASSERT_STRING_EQUAL(p.dir, "/x");
    CU_ASSERT_FALSE(p.is_default);
    CU_ASSERT_EQUAL(gr_service_paths_resolve("/opt/s.sock", &p, &e), GR_OK); /* --socket wins */
    CU_ASSERT_STRING_EQUAL(p.socket, "/opt/s.sock");
    CU_ASSERT_STRING_EQUAL(p.origin, "--socket");
    char cwd[PATH_MAX];
    CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(cwd, sizeof(cwd)));
    CU_ASSERT_EQUAL(gr_service_paths_resolve("rel.sock", &p, &e), GR_OK);
    CU_ASSERT_EQUAL(p.socket[0], '/');
    GR_ASSERT_CONTAINS(p.socket, "/rel.sock");
    char longp[200];
    memset(longp, 'a', sizeof(longp) - 1);
    longp[0] = '/';
    longp[sizeof(longp) - 1] = '\0';
    CU_ASSERT_EQUAL(gr_service_paths_resolve(longp, &p, &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg, "--socket: socket path");
    GR_ASSERT_CONTAINS(e.msg, "shorter than 108 bytes");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_service_paths_resolve("", &p, &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg, "--socket: empty path");
    if (saved_sock) setenv("GRAPHRUN_SOCKET", saved_sock, 1);
    else unsetenv("GRAPHRUN_SOCKET");
    if (saved_xdg) setenv("XDG_RUNTIME_DIR", saved_xdg, 1);
    else unsetenv("XDG_RUNTIME_DIR");
    free(saved_sock);
    free(saved_xdg);
}

/* ================================================================ protocol fuzz corpus */

/* What tests/fuzz/fuzz_protocol.c checks, for one input. */
static void fuzz_one(const char *data, size_t size) {
    gr_linebuf lb;
    gr_linebuf_init(&lb, GR_PROTO_MAX_LINE);
    CU_ASSERT_EQUAL_FATAL(gr_linebuf_append(&lb, data, size), GR_OK);
    gr_linebuf_append(&lb, "\n", 1);
    char *line;
    size_t len;
    while (gr_linebuf_next(&lb, &line, &len) == 1) {
        gr_request req;
        gr_error err;
        gr_error_clear(&err);
        gr_status st = gr_request_parse(line, len, &req, &err);
        if (st != GR_OK) {
            CU_ASSERT_TRUE(err.msg[0] != '\0');
            check_reply_roundtrip(&req, st, &err);
        } else {
            CU_ASSERT_NOT_EQUAL(req.cmd, GR_CMD_NONE);
        }
        gr_request_clear(&req);
        gr_reply r;
        gr_error pe;
        gr_error_clear(&pe);
        gr_reply_parse(line, len, &r, &pe);
        gr_reply_clear(&r);
        free(line);
    }
    gr_linebuf_free(&lb);
}

static void test_protocol_corpus(void) {
    const char *dir = svc_src("tests/fuzz/protocol_corpus");
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    struct dirent *ent;
    int files = 0;
    while ((ent = readdir(d))) {
        if (ent->d_name[0] == '.') continue;
        char path[2048];
        snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
        FILE *f = fopen(path, "rb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        static char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof(buf), f);
        fclose(f);
        fuzz_one(buf, n);
        files++;
    }
    closedir(d);
    CU_ASSERT_TRUE(files >= 10);
}

/* ================================================================ service end to end */

static void test_start_status_stop(void) {
    svc_env s;
    svc_env_make(&s);
    char args[512];
    CU_ASSERT_EQUAL(svc_start_service(&s, NULL, NULL), 0);
    GR_ASSERT_CONTAINS(svc_out, "replay service started (pid ");
    int pid = svc_read_pid(&s);
    CU_ASSERT_TRUE(svc_pid_alive(pid));
    struct stat st;
    CU_ASSERT_EQUAL(stat(s.sock, &st), 0);
    CU_ASSERT_TRUE(S_ISSOCK(st.st_mode));
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
    CU_ASSERT_EQUAL(stat(s.lock, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
    snprintf(args, sizeof(args), "status --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "service   pid ");
    GR_ASSERT_CONTAINS(svc_out, "graphs    0 held");
    GR_ASSERT_CONTAINS(svc_out, "device    ");
    if (!gr_test_have_gpu()) GR_ASSERT_CONTAINS(svc_out, "device    none: no CUDA device found");
    snprintf(args, sizeof(args), "status --socket %s --json -", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    json_t *j = json_loads(svc_out, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "pid")), pid);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "graphs")), 0);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(j, "limits"), "max_request_bytes")), 1 << 20);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "socket")), s.sock);
    json_decref(j);
    snprintf(args, sizeof(args), "list --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "no graphs held");
    snprintf(args, sizeof(args), "list --socket %s --json -", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    j = json_loads(svc_out, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_EQUAL(json_array_size(json_object_get(j, "graphs")), 0);
    json_decref(j);
    /* a second service on the same socket is refused, naming the first */
    CU_ASSERT_EQUAL(svc_start_service(&s, NULL, NULL), 1);
    char want[128];
    snprintf(want, sizeof(want), "already running at %s (pid %d)", s.sock, pid);
    GR_ASSERT_CONTAINS(svc_out, want);
    snprintf(args, sizeof(args), "serve --foreground --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 1);
    GR_ASSERT_CONTAINS(svc_out, "a replay service is already running here");
    /* stop returns once the service is gone */
    snprintf(args, sizeof(args), "stop --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "stopped");
    CU_ASSERT_FALSE(svc_lock_held(&s));
    CU_ASSERT_TRUE(svc_wait_gone(pid, 5));
    CU_ASSERT_NOT_EQUAL(stat(s.sock, &st), 0);
    snprintf(args, sizeof(args), "status --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 1);
    GR_ASSERT_CONTAINS(svc_out, "no replay service is running here");
    GR_ASSERT_CONTAINS(svc_out, s.sock);
    snprintf(args, sizeof(args), "stop --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "nothing to stop");
    char *log = svc_slurp(s.log);
    GR_ASSERT_CONTAINS(log, "service started: socket");
    GR_ASSERT_CONTAINS(log, "stopping: stop requested by pid");
    GR_ASSERT_CONTAINS(log, "service stopped");
    GR_ASSERT_CONTAINS(log, "): status"); /* each request is logged */
    free(log);
    svc_env_done(&s);
}

static void test_cli_usage(void) {
    CU_ASSERT_EQUAL(svc_grun(NULL, "capture", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "capture needs a WORKLOAD file");
    GR_ASSERT_CONTAINS(svc_out, "usage: graphrun capture");
    CU_ASSERT_EQUAL(svc_grun(NULL, "capture --help", svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "example:");
    CU_ASSERT_EQUAL(svc_grun(NULL, "help replay", svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "--compare-eager");
    CU_ASSERT_EQUAL(svc_grun(NULL, "--help", svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "capture WORKLOAD");
    for (const char **c = (const char *[]){"serve", "list", "drop", "status", "stop", NULL}; *c; c++) {
        char args[64];
        snprintf(args, sizeof(args), "%s --help", *c);
        CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
        GR_ASSERT_CONTAINS(svc_out, "example:");
    }
    CU_ASSERT_EQUAL(svc_grun(NULL, "replay --iters 0 --socket /tmp/none.sock", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "--iters takes a whole number in [1, 100000000], got \"0\"");
    CU_ASSERT_EQUAL(svc_grun(NULL, "replay --iters", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "option --iters needs a value");
    CU_ASSERT_EQUAL(svc_grun(NULL, "replay a/b", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "\"a/b\" is not a graph name");
    CU_ASSERT_EQUAL(svc_grun(NULL, "replay x y", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "unexpected argument \"y\"");
    CU_ASSERT_EQUAL(svc_grun(NULL, "serve --max-memory 12Q", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "--max-memory takes a size such as 8G");
    CU_ASSERT_EQUAL(svc_grun(NULL, "serve --max-graphs 0", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "--max-graphs takes a whole number in [1, 1024]");
    CU_ASSERT_EQUAL(svc_grun(NULL, "serve --client-timeout 0", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "--client-timeout takes seconds");
    CU_ASSERT_EQUAL(svc_grun(NULL, "status --bogus", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "unknown option --bogus");
    CU_ASSERT_EQUAL(svc_grun(NULL, "stop --force", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "unknown option --force");
    CU_ASSERT_EQUAL(svc_grun(NULL, "drop", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "drop needs the NAME of a graph");
    CU_ASSERT_EQUAL(svc_grun(NULL, "list --compare-eager", svc_out, sizeof(svc_out)), 2);
    CU_ASSERT_EQUAL(svc_grun(NULL, "capture w.json --name '../x'", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "--name takes 1 to 64 letters");
    CU_ASSERT_EQUAL(svc_grun(NULL, "capture w.json --set n", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "--set takes NAME=VALUE, got \"n\"");
    CU_ASSERT_EQUAL(svc_grun(NULL, "capture w.json --capture-mode sideways", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "unknown mode \"sideways\"");
    CU_ASSERT_EQUAL(svc_grun(NULL, "capture w.json --force=1", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "option --force takes no value");
    /* a missing workload fails in the client: no service is started for it */
    CU_ASSERT_EQUAL(svc_grun(NULL, "capture /nonexistent/w.json --socket /tmp/gr_never.sock", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "/nonexistent/w.json: cannot open the workload file");
    struct stat st;
    CU_ASSERT_NOT_EQUAL(stat("/tmp/gr_never.sock", &st), 0);
    char longsock[300] = "--socket /tmp/";
    memset(longsock + strlen(longsock), 'x', 150);
    char args[400];
    snprintf(args, sizeof(args), "status %s", longsock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "--socket: socket path");
    GR_ASSERT_CONTAINS(svc_out, "shorter than 108");
}

static void test_requests_without_gpu(void) {
    svc_env s;
    svc_env_make(&s);
    char args[1024];
    CU_ASSERT_EQUAL(svc_start_service(&s, NULL, "--max-memory 2K"), 0);
    int gpu = gr_test_have_gpu();
    /* bad workloads are bad input (exit 2) with or without a GPU, naming the place */
    const char *syntax = "{\"name\": \"b\",\n \"buffers\": [],\n \"ops\": [,]}";
    const char *p = gr_test_tmpfile(".json", syntax, strlen(syntax));
    snprintf(args, sizeof(args), "capture %s --socket %s", p, s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, p);
    GR_ASSERT_CONTAINS(svc_out, ":3:");
    GR_ASSERT_CONTAINS(svc_out, "invalid JSON");
    snprintf(args, sizeof(args), "capture workloads/pointwise_fusion.json --set m=3 --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "unknown param \"m\" (params of pointwise_fusion:");
    snprintf(args, sizeof(args), "capture workloads/pointwise_fusion.json --variant nope --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "--variant: pointwise_fusion has no variant \"nope\"");
    snprintf(args, sizeof(args), "capture workloads --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "/workloads: is a directory, not a regular file");
    /* over the device-memory limit: known before any GPU work */
    snprintf(args, sizeof(args), "capture workloads/pointwise_fusion.json --set n=4096 --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 1);
    GR_ASSERT_CONTAINS(svc_out, "device memory limit: pointwise_fusion fused_vec needs 65.5 KB of device buffers");
    GR_ASSERT_CONTAINS(svc_out, "--max-memory");
    if (!gpu) {
        snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=10 --socket %s", s.sock);
        CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 3);
        GR_ASSERT_CONTAINS(svc_out, "no CUDA device found");
        GR_ASSERT_CONTAINS(svc_out, "the workload is valid (variant tiny: 10 ops, 10 kernel launches per step) but nothing was captured");
        snprintf(args, sizeof(args), "replay --iters 10 --socket %s", s.sock);
        CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 3);
        GR_ASSERT_CONTAINS(svc_out, "no CUDA device found");
        snprintf(args, sizeof(args), "replay nothere --socket %s", s.sock);
        CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 3);
    } else {
        snprintf(args, sizeof(args), "replay nothere --socket %s", s.sock);
        CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
        GR_ASSERT_CONTAINS(svc_out, "no graph named \"nothere\"");
    }
    snprintf(args, sizeof(args), "drop nothere --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "name: no graph named \"nothere\" is held");
    /* the C client's lane_open: no graph held, named or latest, is refused before any segment
     * is made (each a `list` request) */
    {
        gr_service_paths paths;
        gr_client *c = NULL;
        gr_error e;
        gr_error_clear(&e);
        CU_ASSERT_EQUAL_FATAL(gr_service_paths_resolve(s.sock, &paths, &e), GR_OK);
        CU_ASSERT_EQUAL_FATAL(gr_client_connect(&paths, 0, &c, &e), GR_OK);
        const char *io[] = {"a"};
        gr_client_lane *lane = NULL;
        CU_ASSERT_EQUAL(gr_client_lane_open(c, "nothere", io, 1, io, 1, 0, -1, &lane, &e), GR_ERR_USAGE);
        CU_ASSERT_STRING_EQUAL(e.path, "name");
        GR_ASSERT_CONTAINS(e.msg, "no graph named \"nothere\" is held");
        CU_ASSERT_PTR_NULL(lane);
        gr_error_clear(&e);
        CU_ASSERT_EQUAL(gr_client_lane_open(c, NULL, io, 1, NULL, 0, 0, -1, &lane, &e), GR_ERR_USAGE);
        GR_ASSERT_CONTAINS(e.msg, "no graph captured yet");
        CU_ASSERT_EQUAL(gr_client_lane_close(c, NULL, &e), GR_OK); /* NULL: nothing */
        gr_client_close(c);
    }
    /* the service is still there and counted every request */
    snprintf(args, sizeof(args), "status --socket %s --json -", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    json_t *j = json_loads(svc_out, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    /* the four bad workloads above were refused by the client (validated before sending); the
     * two lane_opens asked `list` */
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "requests_served")), gpu ? 5 : 7);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(json_object_get(j, "device"), "state")),
                           gpu ? "ready" : "none");
    json_decref(j);
    svc_env_done(&s);
}

/* Every kind of malformed request over one raw connection: each gets an error reply naming
 * the field, and the connection (and the service) keep going. */
static void test_malformed_requests(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL(svc_start_service(&s, NULL, NULL), 0);
    int fd = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        if (!bad_cases[i].line[0]) continue; /* blank lines are skipped, not answered */
        json_t *j = svc_raw_call(fd, bad_cases[i].line, 5000);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        CU_ASSERT_TRUE(json_is_false(json_object_get(j, "ok")));
        SVC_ASSERT_STR(j, svc_err_code(j), "protocol");
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_object_get(j, "error"), "exit_code")), 2);
        SVC_ASSERT_STR(j, svc_err_field(j), bad_cases[i].field[0] ? bad_cases[i].field : "");
        GR_ASSERT_CONTAINS(svc_err_msg(j), bad_cases[i].message);
        json_decref(j);
    }
    /* test hooks are off in a normal service */
    json_t *j = svc_raw_call(fd, "{\"schema_version\": 1, \"cmd\": \"debug_sleep\", \"ms\": 1}", 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    SVC_ASSERT_STR(j, svc_err_field(j), "cmd");
    GR_ASSERT_CONTAINS(svc_err_msg(j), "test hook");
    json_decref(j);
    /* an error the worker finds names its request field too (here before any device check:
     * no graph was captured with --buckets); run 79's reply had field "" for batch */
    j = svc_raw_call(fd, "{\"schema_version\": 1, \"cmd\": \"replay\", \"name\": \"g\", \"batch\": 3}",
                     5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_TRUE(json_is_false(json_object_get(j, "ok")));
    SVC_ASSERT_STR(j, svc_err_field(j), "batch");
    GR_ASSERT_CONTAINS(svc_err_msg(j), "was not captured with --buckets");
    json_decref(j);
    /* lanes: opening one needs a device and a held graph; closing names the lane field */
    j = svc_raw_call(fd, "{\"schema_version\": 1, \"cmd\": \"lane_open\", \"shm\": \"/gr-no-such\", "
                         "\"inputs\": [{\"buffer\": \"x\", \"offset\": 4096}]}",
                     5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_TRUE(json_is_false(json_object_get(j, "ok")));
    SVC_ASSERT_STR(j, svc_err_code(j), "no_device");
    json_decref(j);
    j = svc_raw_call(fd, "{\"schema_version\": 1, \"cmd\": \"lane_close\", \"lane\": 5}", 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    SVC_ASSERT_STR(j, svc_err_code(j), "usage");
    SVC_ASSERT_STR(j, svc_err_field(j), "lane");
    GR_ASSERT_CONTAINS(svc_err_msg(j), "no lane 5 is open on this connection");
    json_decref(j);
    j = svc_raw_call(fd, "{\"schema_version\": 1, \"cmd\": \"status\"}", 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_TRUE(json_is_integer(json_object_get(j, "lanes")));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "lanes")), 0);
    json_decref(j);
    /* ids come back, on errors too */
    j = svc_raw_call(fd, "{\"schema_version\": 1, \"cmd\": \"nope\", \"id\": \"x-1\"}", 5000);
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(j, "id")), "x-1");
    json_decref(j);
    /* pipelined: three requests in one write, three replies in order */
    const char *three = "{\"schema_version\": 1, \"cmd\": \"status\", \"id\": 1}\n\n"
                        "{\"schema_version\": 1, \"cmd\": \"bad\", \"id\": 2}\r\n"
                        "{\"schema_version\": 1, \"cmd\": \"list\", \"id\": 3}\n";
    CU_ASSERT_EQUAL(svc_raw_send(fd, three, strlen(three)), 0);
    char buf[65536];
    for (int k = 1; k <= 3; k++) {
        CU_ASSERT_TRUE(svc_raw_line(fd, buf, sizeof(buf), 5000) > 0);
        j = json_loads(buf, 0, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "id")), k);
        CU_ASSERT_EQUAL(json_is_true(json_object_get(j, "ok")), k != 2);
        json_decref(j);
    }
    /* a line just under the limit is fine */
    size_t big = GR_PROTO_MAX_LINE - 64;
    char *line = malloc(big + 2);
    const char *st = "{\"schema_version\": 1, \"cmd\": \"status\"";
    memcpy(line, st, strlen(st));
    memset(line + strlen(st), ' ', big - strlen(st) - 1);
    line[big - 1] = '}';
    line[big] = '\n';
    CU_ASSERT_EQUAL(svc_raw_send(fd, line, big + 1), 0);
    CU_ASSERT_TRUE(svc_raw_line(fd, buf, sizeof(buf), 5000) > 0);
    GR_ASSERT_CONTAINS(buf, "\"ok\":true");
    free(line);
    close(fd);

    /* over the limit: an error reply, then the connection is closed; the service stays up */
    fd = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    size_t huge = GR_PROTO_MAX_LINE + 100;
    line = malloc(huge);
    memset(line, 'x', huge);
    svc_raw_send(fd, line, huge); /* may fail part way once the service closes: fine */
    free(line);
    CU_ASSERT_TRUE(svc_raw_line(fd, buf, sizeof(buf), 5000) > 0);
    j = json_loads(buf, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    SVC_ASSERT_STR(j, svc_err_field(j), "request");
    GR_ASSERT_CONTAINS(svc_err_msg(j), "request line longer than 1048576 bytes");
    json_decref(j);
    long eof = svc_raw_line(fd, buf, sizeof(buf), 5000);
    CU_ASSERT_TRUE(eof == 0 || eof == -1);
    close(fd);
    fd = svc_raw_connect(s.sock);
    j = svc_raw_call(fd, "{\"schema_version\": 1, \"cmd\": \"status\"}", 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_TRUE(json_is_true(json_object_get(j, "ok")));
    json_decref(j);
    close(fd);
    char *log = svc_slurp(s.log);
    GR_ASSERT_CONTAINS(log, "bad request: cmd: unknown command");
    GR_ASSERT_CONTAINS(log, "request line longer than 1048576 bytes");
    free(log);
    svc_env_done(&s);
}

static void test_slow_clients_time_out(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL(svc_start_service(&s, NULL, "--client-timeout 0.5"), 0);
    /* half a request, then silence: an error reply and the connection closes */
    int fd = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    svc_raw_send(fd, "{\"schema_version\": 1, \"cm", 25);
    double t0 = gr_now_us();
    char buf[4096];
    CU_ASSERT_TRUE(svc_raw_line(fd, buf, sizeof(buf), 5000) > 0);
    double waited = (gr_now_us() - t0) / 1e6;
    CU_ASSERT_TRUE(waited > 0.3 && waited < 3);
    GR_ASSERT_CONTAINS(buf, "timed out: the request line was not completed within 0.5 s");
    CU_ASSERT_EQUAL(svc_raw_line(fd, buf, sizeof(buf), 5000), 0);
    close(fd);
    /* a silent client is disconnected */
    fd = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    t0 = gr_now_us();
    CU_ASSERT_EQUAL(svc_raw_line(fd, buf, sizeof(buf), 5000), 0);
    CU_ASSERT_TRUE((gr_now_us() - t0) / 1e6 < 3);
    close(fd);
    /* meanwhile others are served */
    fd = svc_raw_connect(s.sock);
    json_t *j = svc_raw_call(fd, "{\"schema_version\": 1, \"cmd\": \"status\"}", 5000);
    CU_ASSERT_PTR_NOT_NULL(j);
    json_decref(j);
    close(fd);
    char *log = svc_slurp(s.log);
    GR_ASSERT_CONTAINS(log, "timed out");
    free(log);
    svc_env_done(&s);
}

/* A child that sends one request (without reading) and then waits to be killed. */
static pid_t client_that_hangs(const char *sock, const char *line) {
    pid_t pid = fork();
    if (pid == 0) {
        int fd = svc_raw_connect(sock);
        if (fd < 0) _exit(1);
        char req[512];
        snprintf(req, sizeof(req), "%s\n", line);
        if (svc_raw_send(fd, req, strlen(req)) != 0) _exit(1);
        for (;;) pause();
    }
    return pid;
}

/* status/list answer while the worker is busy; a client killed mid-request gets its request
 * cancelled and its connection freed; waiting requests queue behind the running one. */
static void test_busy_worker_and_killed_client(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL(svc_start_service(&s, "GRAPHRUN_SERVICE_TEST_HOOKS=1", NULL), 0);
    pid_t child = client_that_hangs(s.sock, "{\"schema_version\": 1, \"cmd\": \"debug_sleep\", \"ms\": 20000}");
    CU_ASSERT_TRUE_FATAL(child > 0);
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 1, -1, 5000));
    int fd = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    double t0 = gr_now_us();
    json_t *j = svc_raw_call(fd, "{\"schema_version\": 1, \"cmd\": \"status\"}", 5000);
    double ms = (gr_now_us() - t0) / 1e3;
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_TRUE(ms < 1000);
    json_t *run = json_object_get(json_object_get(j, "queue"), "running");
    CU_ASSERT_TRUE(json_is_object(run));
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(run, "cmd")), "debug_sleep");
    json_decref(j);
    j = svc_raw_call(fd, "{\"schema_version\": 1, \"cmd\": \"list\"}", 5000);
    CU_ASSERT_PTR_NOT_NULL(j);
    json_decref(j);
    /* a second GPU request waits in the queue, and says so when asked for progress */
    int fd2 = svc_raw_connect(s.sock);
    const char *q = "{\"schema_version\": 1, \"cmd\": \"debug_sleep\", \"ms\": 10, \"progress\": true, \"id\": 5}\n";
    svc_raw_send(fd2, q, strlen(q));
    char buf[4096];
    CU_ASSERT_TRUE(svc_raw_line(fd2, buf, sizeof(buf), 5000) > 0);
    GR_ASSERT_CONTAINS(buf, "\"phase\":\"queued\"");
    /* kill -9 the client whose request runs */
    t0 = gr_now_us();
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    /* the queued request runs next, well before the 20 s sleep would have ended */
    json_t *done = svc_raw_final(fd2, 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(done);
    CU_ASSERT_TRUE(json_is_true(json_object_get(done, "ok")));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(done, "id")), 5);
    json_decref(done);
    CU_ASSERT_TRUE((gr_now_us() - t0) / 1e6 < 3);
    close(fd2);
    j = svc_raw_call(fd, "{\"schema_version\": 1, \"cmd\": \"status\"}", 5000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(j);
    CU_ASSERT_TRUE(json_is_null(json_object_get(json_object_get(j, "queue"), "running")));
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(j, "connections")), 1); /* ours only */
    json_decref(j);
    /* a client killed while its request waits in the queue: the request is dropped */
    pid_t a = client_that_hangs(s.sock, "{\"schema_version\": 1, \"cmd\": \"debug_sleep\", \"ms\": 1500}");
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 1, 0, 5000));
    pid_t b = client_that_hangs(s.sock, "{\"schema_version\": 1, \"cmd\": \"debug_sleep\", \"ms\": 20000}");
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 1, 1, 5000));
    kill(b, SIGKILL);
    waitpid(b, NULL, 0);
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, -1, 0, 5000));
    kill(a, SIGKILL);
    waitpid(a, NULL, 0);
    close(fd);
    CU_ASSERT_TRUE(svc_wait_log(s.log, "client went away; cancelling its running request", 5000));
    CU_ASSERT_TRUE(svc_wait_log(s.log, "cancelled: the client disconnected", 5000));
    CU_ASSERT_TRUE(svc_wait_log(s.log, "client went away; dropping its waiting request", 5000));
    svc_env_done(&s);
}

static void test_stop_while_busy(void) {
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL(svc_start_service(&s, "GRAPHRUN_SERVICE_TEST_HOOKS=1", NULL), 0);
    int pid = svc_read_pid(&s);
    int a = svc_raw_connect(s.sock), b = svc_raw_connect(s.sock);
    CU_ASSERT_TRUE_FATAL(a >= 0 && b >= 0);
    const char *sleep = "{\"schema_version\": 1, \"cmd\": \"debug_sleep\", \"ms\": 30000}\n";
    svc_raw_send(a, sleep, strlen(sleep));
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 1, 0, 5000));
    svc_raw_send(b, sleep, strlen(sleep)); /* waits behind a's */
    CU_ASSERT_TRUE(svc_wait_queue(s.sock, 1, 1, 5000));
    char args[256];
    snprintf(args, sizeof(args), "stop --socket %s", s.sock);
    double t0 = gr_now_us();
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    CU_ASSERT_TRUE((gr_now_us() - t0) / 1e6 < 5);
    CU_ASSERT_TRUE(svc_wait_gone(pid, 5));
    char buf[4096];
    CU_ASSERT_TRUE(svc_raw_line(a, buf, sizeof(buf), 5000) > 0);
    GR_ASSERT_CONTAINS(buf, "cancelled: the service is stopping");
    CU_ASSERT_TRUE(svc_raw_line(b, buf, sizeof(buf), 5000) > 0);
    GR_ASSERT_CONTAINS(buf, "the service is stopping");
    GR_ASSERT_CONTAINS(buf, "did not run this request");
    close(a);
    close(b);
    svc_env_done(&s);
}

static void test_concurrent_autostarts(void) {
    svc_env s;
    svc_env_make(&s);
    /* six captures at once, no service yet: they must end with one service */
    char script[4096];
    snprintf(script, sizeof(script),
             "cd '%s' && for i in 1 2 3 4 5 6; do (timeout -k 5 60 '%s' capture "
             "workloads/launch_bound.json --set K=10 --socket %s > %s/out.$i 2>&1; echo $? > "
             "%s/rc.$i) & done; wait",
             svc_source_dir(), svc_graphrun_bin(), s.sock, s.dir, s.dir);
    CU_ASSERT_EQUAL(system(script), 0);
    int want = gr_test_have_gpu() ? 0 : 3, started = 0;
    for (int i = 1; i <= 6; i++) {
        char path[256];
        snprintf(path, sizeof(path), "%s/rc.%d", s.dir, i);
        char *rc = svc_slurp(path);
        CU_ASSERT_EQUAL(atoi(rc), want);
        free(rc);
        snprintf(path, sizeof(path), "%s/out.%d", s.dir, i);
        char *o = svc_slurp(path);
        started += strstr(o, "started a replay service") != NULL;
        if (!want) GR_ASSERT_CONTAINS(o, "launch_bound");
        else GR_ASSERT_CONTAINS(o, "no CUDA device found");
        free(o);
    }
    CU_ASSERT_EQUAL(started, 1);
    char *log = svc_slurp(s.log);
    CU_ASSERT_EQUAL(svc_count_of(log, "service started: socket"), 1);
    int lines = svc_count_of(log, ": capture /");
    CU_ASSERT_EQUAL(lines, 12); /* a request line and a result line each */
    if (lines != 12) fprintf(stderr, "\n    %d lines; log:\n%s", lines, log);
    free(log);
    CU_ASSERT_TRUE(svc_lock_held(&s));
    /* one process serves that socket (the services that lost the race are on their way out) */
    int pid = svc_read_pid(&s), found = 0;
    for (int tries = 0; tries < 300; tries++) {
    found = 0;
    DIR *d = opendir("/proc");
    struct dirent *ent;
    while (d && (ent = readdir(d))) {
        int p = atoi(ent->d_name);
        if (p <= 0 || !svc_pid_alive(p)) continue;
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/cmdline", p);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        char cmd[4096];
        size_t n = fread(cmd, 1, sizeof(cmd) - 1, f);
        fclose(f);
        for (size_t k = 0; k < n; k++)
            if (!cmd[k]) cmd[k] = ' ';
        cmd[n] = '\0';
        if (strstr(cmd, " serve ") && strstr(cmd, s.sock)) found += p == pid ? 1 : 1000;
    }
    if (d) closedir(d);
    if (found == 1) break;
    usleep(10000);
    }
    CU_ASSERT_EQUAL(found, 1);
    svc_env_done(&s);
}

static void make_stale_socket(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    CU_ASSERT_EQUAL(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    close(fd); /* the file stays; nobody listens: connect gives ECONNREFUSED */
}

static void test_stale_socket_and_crash(void) {
    svc_env s;
    svc_env_make(&s);
    char args[512];
    make_stale_socket(s.sock);
    snprintf(args, sizeof(args), "status --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 1);
    GR_ASSERT_CONTAINS(svc_out, "a stale socket file of a stopped or crashed service is there");
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=10 --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), gr_test_have_gpu() ? 0 : 3);
    GR_ASSERT_CONTAINS(svc_out, "started a replay service");
    int pid1 = svc_read_pid(&s);
    CU_ASSERT_TRUE(svc_pid_alive(pid1));
    char *log = svc_slurp(s.log);
    GR_ASSERT_CONTAINS(log, "removed the stale socket file");
    free(log);
    /* the service crashes (kill -9): its socket file stays behind, its lock goes */
    kill(pid1, SIGKILL);
    CU_ASSERT_TRUE(svc_wait_gone(pid1, 5));
    struct stat st;
    CU_ASSERT_EQUAL(stat(s.sock, &st), 0);
    /* the lock goes with the last thread (the pid turns zombie when the first one exits) */
    for (int i = 0; i < 500 && svc_lock_held(&s); i++) usleep(10000);
    CU_ASSERT_FALSE(svc_lock_held(&s));
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), gr_test_have_gpu() ? 0 : 3);
    GR_ASSERT_CONTAINS(svc_out, "started a replay service");
    int pid2 = svc_read_pid(&s);
    CU_ASSERT_NOT_EQUAL(pid1, pid2);
    CU_ASSERT_TRUE(svc_pid_alive(pid2));
    log = svc_slurp(s.log);
    CU_ASSERT_EQUAL(svc_count_of(log, "removed the stale socket file"), 2);
    free(log);
    svc_env_done(&s);
    /* something that is not a socket is never removed */
    svc_env_make(&s);
    FILE *f = fopen(s.sock, "w");
    fputs("keep me", f);
    fclose(f);
    CU_ASSERT_EQUAL(svc_start_service(&s, NULL, NULL), 2);
    GR_ASSERT_CONTAINS(svc_out, "exists and is not a socket: remove it, or choose another socket path");
    char *kept = svc_slurp(s.sock);
    CU_ASSERT_STRING_EQUAL(kept, "keep me");
    free(kept);
    svc_env_done(&s);
}

static void test_wrong_uid_refused(void) {
    if (geteuid() != 0) {
        gr_test_skip(__func__, "wrong-uid refusal needs root to run a client as another user");
        return;
    }
    svc_env s;
    svc_env_make(&s);
    CU_ASSERT_EQUAL(svc_start_service(&s, NULL, NULL), 0);
    /* let another user reach the socket at all, so SO_PEERCRED is what refuses it */
    CU_ASSERT_EQUAL(chmod(s.dir, 0711), 0);
    CU_ASSERT_EQUAL(chmod(s.sock, 0666), 0);
    int pipefd[2];
    CU_ASSERT_EQUAL_FATAL(pipe(pipefd), 0);
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        if (setgid(65534) != 0 || setuid(65534) != 0) {
            dprintf(pipefd[1], "SETUID-FAILED");
            _exit(0);
        }
        int fd = svc_raw_connect(s.sock);
        if (fd < 0) {
            dprintf(pipefd[1], "CONNECT-FAILED %d", errno);
            _exit(0);
        }
        const char *q = "{\"schema_version\": 1, \"cmd\": \"status\"}\n";
        svc_raw_send(fd, q, strlen(q));
        char buf[4096];
        long n = svc_raw_line(fd, buf, sizeof(buf), 5000);
        dprintf(pipefd[1], "%s", n > 0 ? buf : "NO-REPLY");
        _exit(0);
    }
    close(pipefd[1]);
    char buf[4096];
    ssize_t n = 0, k;
    while ((k = read(pipefd[0], buf + n, sizeof(buf) - 1 - (size_t)n)) > 0) n += k;
    buf[n > 0 ? n : 0] = '\0';
    close(pipefd[0]);
    waitpid(pid, NULL, 0);
    if (!strcmp(buf, "SETUID-FAILED")) {
        gr_test_skip(__func__, "cannot switch to uid 65534 here");
    } else {
        GR_ASSERT_CONTAINS(buf, "refused: this service serves uid 0 only, and the client runs as uid 65534");
        GR_ASSERT_CONTAINS(buf, "\"ok\":false");
        char *log = svc_slurp(s.log);
        GR_ASSERT_CONTAINS(log, "refused a connection from uid 65534");
        free(log);
    }
    svc_env_done(&s);
}

static void test_default_paths(void) {
    svc_env s;
    svc_env_make(&s);
    char env[512], args[256];
    /* the default under $XDG_RUNTIME_DIR: made private, socket 0600 */
    snprintf(env, sizeof(env), "env -u GRAPHRUN_SOCKET XDG_RUNTIME_DIR=%s", s.dir);
    CU_ASSERT_EQUAL(svc_grun(env, "serve", svc_out, sizeof(svc_out)), 0);
    char dir[256], sock[256];
    snprintf(dir, sizeof(dir), "%s/graphrun", s.dir);
    snprintf(sock, sizeof(sock), "%s/graphrun/graphrun.sock", s.dir);
    GR_ASSERT_CONTAINS(svc_out, sock);
    struct stat st;
    CU_ASSERT_EQUAL(stat(dir, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0700);
    CU_ASSERT_EQUAL(stat(sock, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
    CU_ASSERT_EQUAL(svc_grun(env, "status", svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, sock);
    /* GRAPHRUN_SOCKET names the same one */
    snprintf(env, sizeof(env), "GRAPHRUN_SOCKET=%s", sock);
    CU_ASSERT_EQUAL(svc_grun(env, "status", svc_out, sizeof(svc_out)), 0);
    snprintf(env, sizeof(env), "GRAPHRUN_SOCKET=%s", sock);
    CU_ASSERT_EQUAL(svc_grun(env, "stop", svc_out, sizeof(svc_out)), 0);
    GR_ASSERT_CONTAINS(svc_out, "stopped");
    /* a default directory others can enter is refused */
    CU_ASSERT_EQUAL(chmod(dir, 0755), 0);
    snprintf(env, sizeof(env), "env -u GRAPHRUN_SOCKET XDG_RUNTIME_DIR=%s", s.dir);
    CU_ASSERT_EQUAL(svc_grun(env, "serve --foreground", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "the service directory must belong to you and be private");
    GR_ASSERT_CONTAINS(svc_out, "mode 0755");
    GR_ASSERT_CONTAINS(svc_out, "chmod 700");
    CU_ASSERT_EQUAL(svc_grun(env, "capture workloads/launch_bound.json", svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "the replay service did not start");
    GR_ASSERT_CONTAINS(svc_out, "must belong to you and be private");
    /* an explicit socket in a directory that is not there */
    snprintf(args, sizeof(args), "serve --socket %s/no/such/s.sock", s.dir);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "no/such does not exist and cannot be created");
    /* a relative --socket is made absolute, so the service (which runs in /) finds it */
    snprintf(env, sizeof(env), "cd %s &&", s.dir);
    CU_ASSERT_EQUAL(svc_grun(env, "serve --socket rel.sock", svc_out, sizeof(svc_out)), 0);
    snprintf(sock, sizeof(sock), "%s/rel.sock", s.dir);
    CU_ASSERT_EQUAL(stat(sock, &st), 0);
    snprintf(args, sizeof(args), "stop --socket %s", sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 0);
    svc_env_done(&s);
}

/* The auto-started service is a proper daemon: its own session, stdin from /dev/null, stdout to
 * /dev/null, stderr to its log, and none of the client's pipes (the popen read above returned,
 * which it would not while the daemon held the pipe). */
static void test_daemonized(void) {
    svc_env s;
    svc_env_make(&s);
    char args[512];
    snprintf(args, sizeof(args), "capture workloads/launch_bound.json --set K=10 --socket %s", s.sock);
    double t0 = gr_now_us();
    svc_grun(NULL, args, svc_out, sizeof(svc_out));
    CU_ASSERT_TRUE((gr_now_us() - t0) / 1e6 < 20); /* had the daemon kept our pipe, this read would hang */
    int pid = svc_read_pid(&s);
    CU_ASSERT_TRUE_FATAL(svc_pid_alive(pid));
    char path[128], target[PATH_MAX];
    snprintf(path, sizeof(path), "/proc/%d/fd/0", pid);
    ssize_t n = readlink(path, target, sizeof(target) - 1);
    target[n > 0 ? n : 0] = '\0';
    CU_ASSERT_STRING_EQUAL(target, "/dev/null");
    snprintf(path, sizeof(path), "/proc/%d/fd/1", pid);
    n = readlink(path, target, sizeof(target) - 1);
    target[n > 0 ? n : 0] = '\0';
    CU_ASSERT_STRING_EQUAL(target, "/dev/null");
    snprintf(path, sizeof(path), "/proc/%d/fd/2", pid);
    n = readlink(path, target, sizeof(target) - 1);
    target[n > 0 ? n : 0] = '\0';
    CU_ASSERT_STRING_EQUAL(target, s.log);
    /* its own session, not ours */
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    char *stat_text = svc_slurp(path);
    char *rp = strrchr(stat_text, ')');
    int ppid = 0, pgrp = 0, sid = 0;
    char state;
    CU_ASSERT_EQUAL(sscanf(rp + 2, "%c %d %d %d", &state, &ppid, &pgrp, &sid), 4);
    CU_ASSERT_NOT_EQUAL(sid, getsid(0));
    CU_ASSERT_NOT_EQUAL(ppid, getpid());
    free(stat_text);
    svc_env_done(&s);
}

static void test_signal_stops_foreground(void) {
    svc_env s;
    svc_env_make(&s);
    char errpath[256];
    snprintf(errpath, sizeof(errpath), "%s/stderr", s.dir);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        dup2(fd, 2);
        dup2(fd, 1);
        execl(svc_graphrun_bin(), "graphrun", "serve", "--foreground", "--socket", s.sock, (char *)NULL);
        _exit(127);
    }
    int up = 0;
    for (int i = 0; i < 500 && !up; i++) {
        int fd = svc_raw_connect(s.sock);
        if (fd >= 0) {
            up = 1;
            close(fd);
        } else {
            usleep(10000);
        }
    }
    CU_ASSERT_TRUE_FATAL(up);
    kill(pid, SIGTERM);
    int status = 0;
    double t0 = gr_now_us();
    while (waitpid(pid, &status, WNOHANG) == 0 && gr_now_us() - t0 < 10e6) usleep(10000);
    CU_ASSERT_TRUE(WIFEXITED(status));
    CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
    struct stat st;
    CU_ASSERT_NOT_EQUAL(stat(s.sock, &st), 0);
    CU_ASSERT_FALSE(svc_lock_held(&s));
    char *log = svc_slurp(errpath);
    GR_ASSERT_CONTAINS(log, "service started: socket");
    GR_ASSERT_CONTAINS(log, "stopping: signal 15");
    GR_ASSERT_CONTAINS(log, "service stopped");
    CU_ASSERT_PTR_NULL(strstr(log, "Sanitizer"));
    free(log);
    svc_env_done(&s);
}

/* The Python example of replay/PROTOCOL.md, run against a live service. */
static void test_python_client(void) {
    if (system("python3 -c 'import json, socket' >/dev/null 2>&1") != 0) {
        gr_test_skip(__func__, "python3 is not available to run the PROTOCOL.md example");
        return;
    }
    char *doc = svc_slurp(svc_src("replay/PROTOCOL.md"));
    char *b = strstr(doc, "<!-- python-example-begin -->");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    b = strstr(b, "```python\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    b += strlen("```python\n");
    char *e = strstr(b, "```\n<!-- python-example-end -->");
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    svc_env s;
    svc_env_make(&s);
    char py[256];
    snprintf(py, sizeof(py), "%s/example.py", s.dir);
    FILE *f = fopen(py, "w");
    fwrite(b, 1, (size_t)(e - b), f);
    fclose(f);
    free(doc);
    CU_ASSERT_EQUAL(svc_start_service(&s, NULL, NULL), 0);
    char cmd[1024];
    snprintf(cmd, sizeof(cmd), "cd '%s' && timeout 120 python3 %s %s %s/workloads/launch_bound.json 2>&1",
             svc_source_dir(), py, s.sock, svc_source_dir());
    FILE *p = popen(cmd, "r");
    size_t n = fread(svc_out, 1, sizeof(svc_out) - 1, p);
    svc_out[n] = '\0';
    int st = pclose(p);
    CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    GR_ASSERT_CONTAINS(svc_out, "status: ok");
    GR_ASSERT_CONTAINS(svc_out, "bad request: error protocol (exit 2) field='iters': iters: expected an integer, got a string");
    GR_ASSERT_CONTAINS(svc_out, "list: ok");
    if (gr_test_have_gpu()) {
        GR_ASSERT_CONTAINS(svc_out, "capture: ok");
        GR_ASSERT_CONTAINS(svc_out, "graph replay: ");
        GR_ASSERT_CONTAINS(svc_out, "verified=True");
    } else {
        GR_ASSERT_CONTAINS(svc_out, "device: none");
        GR_ASSERT_CONTAINS(svc_out, "capture: error no_device (exit 3)");
    }
    svc_env_done(&s);
}

/* The report `graphrun replay` prints: run's report with the eager columns shown as "-" when
 * only graph replays were timed, and no eager keys in its JSON. */
static void test_replay_report_without_eager(void) {
    gr_error e;
    gr_error_clear(&e);
    char *text = NULL;
    {
        FILE *f = fopen(svc_src("workloads/launch_bound.json"), "rb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        text = calloc(1, 1 << 16);
        size_t n = fread(text, 1, (1 << 16) - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    gr_plan *p = gr_test_plan(text, NULL, &e);
    free(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_run_report *r = gr_run_report_create(NULL, NULL, NULL);
    snprintf(r->date, sizeof(r->date), "today");
    snprintf(r->dev.name, sizeof(r->dev.name), "Test GPU");
    r->have_bw = 1;
    double gb[3] = {4000, 4100, 3900};
    r->bw.memcpy_d2d.gbps = gr_summarize(gb, 3);
    r->bw.memcpy_d2d.bytes = 2e9;
    r->bw.read_only = r->bw.write_only = r->bw.copy_kernel = r->bw.memcpy_d2d;
    gr_variant_run *v = gr_run_report_add(r, p);
    v->captured = v->timed = 1;
    v->graph.nodes = v->graph.kernel_nodes = 1000;
    double g[4] = {480, 500, 510, 520};
    v->graph_t.step_us = gr_summarize(g, 4);
    v->graph_t.submit_us = gr_summarize(g, 4);
    v->graph_t.batches = 20;
    v->graph_t.steps_per_batch = 500;
    v->graph_t.warmup = 1000;
    v->graph_t.steps_per_launch = 1;
    char *buf = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&buf, &size);
    gr_report_text(f, r);
    fclose(f);
    GR_ASSERT_CONTAINS(buf, "over 20 batches of 500 steps after 1000 warm-up steps");
    GR_ASSERT_CONTAINS(buf, "  tiny                1000                          -    505.00 [486.00, 517.00]        -            -        - |  505.00");
    GR_ASSERT_CONTAINS(buf, "HBM roofline");
    CU_ASSERT_PTR_NULL(strstr(buf, "inf"));
    CU_ASSERT_PTR_NULL(strstr(buf, "nan"));
    free(buf);
    json_t *j = gr_report_json(r);
    json_t *jv = json_array_get(json_object_get(j, "variants"), 0);
    CU_ASSERT_PTR_NOT_NULL(json_object_get(jv, "graph_replay"));
    CU_ASSERT_PTR_NOT_NULL(json_object_get(jv, "graph_gbps"));
    CU_ASSERT_PTR_NULL(json_object_get(jv, "eager"));
    CU_ASSERT_PTR_NULL(json_object_get(jv, "speedup"));
    json_decref(j);
    /* with eager timed (--compare-eager) the table is run's, speedup and all */
    double eg[4] = {3500, 3600, 3700, 3800};
    v->eager = v->graph_t;
    v->eager.step_us = gr_summarize(eg, 4);
    f = open_memstream(&buf, &size);
    gr_report_text(f, r);
    fclose(f);
    GR_ASSERT_CONTAINS(buf, "3650.00 [");
    GR_ASSERT_CONTAINS(buf, "7.23x");
    CU_ASSERT_PTR_NULL(strstr(buf, "hint:")); /* cc 0.0: no PDL on that GPU */
    free(buf);
    /* the timing section says whether launches used PDL and why: by default on a cc 9.0+ GPU
     * (with the PDL kernels per step), --no-pdl, or a GPU without it */
    static const struct {
        int cc, ask;
        const char *says;
    } hc[] = {{9, GR_PDL_AUTO, "launches use programmatic dependent launch (default; --no-pdl turns "
                               "it off) for the kernels that support it, per step: tiny 1000"},
              {9, GR_PDL_OFF, "launches are plain (--no-pdl)"},
              {8, GR_PDL_AUTO, "this GPU is 8.0"},
              {10, GR_PDL_ON, "programmatic dependent launch (--pdl) for the kernels"}};
    for (int i = 0; i < 4; i++) {
        r->dev.cc_major = hc[i].cc;
        r->dev.cc_minor = 0;
        gr_run_opts_default(&r->opts);
        r->opts.pdl = hc[i].ask;
        gr_error pe;
        gr_error_clear(&pe);
        CU_ASSERT_EQUAL(gr_run_opts_resolve_pdl(&r->opts, hc[i].cc, 0, &pe), GR_OK);
        f = open_memstream(&buf, &size);
        gr_report_text(f, r);
        fclose(f);
        GR_ASSERT_CONTAINS(buf, hc[i].says);
        CU_ASSERT_PTR_NULL(strstr(buf, "hint:"));
        free(buf);
    }
    r->dev.cc_major = 0;
    r->opts.pdl = 0;
    j = gr_report_json(r);
    jv = json_array_get(json_object_get(j, "variants"), 0);
    CU_ASSERT_PTR_NOT_NULL(json_object_get(jv, "eager"));
    CU_ASSERT_PTR_NOT_NULL(json_object_get(jv, "speedup"));
    json_decref(j);
    gr_run_report_destroy(r);
    gr_plan_destroy(p);
}

static CU_TestInfo protocol_tests[] = {{"valid requests", test_parse_valid},
                                       {"errors name the field", test_parse_errors_name_field},
                                       {"every problem reported", test_parse_reports_every_problem},
                                       {"generated bad requests", test_generated_battery},
                                       {"replies", test_replies},
                                       {"line framing and names", test_linebuf},
                                       {"socket paths", test_socket_paths},
                                       {"replay report without eager", test_replay_report_without_eager},
                                       CU_TEST_INFO_NULL};
static CU_TestInfo corpus_tests[] = {{"corpus replays cleanly", test_protocol_corpus}, CU_TEST_INFO_NULL};
static CU_TestInfo service_tests[] = {
    {"start, status, list, stop", test_start_status_stop},
    {"usage errors", test_cli_usage},
    {"requests without a GPU", test_requests_without_gpu},
    {"malformed requests and size limit", test_malformed_requests},
    {"slow clients time out", test_slow_clients_time_out},
    {"busy worker, killed client", test_busy_worker_and_killed_client},
    {"stop while busy", test_stop_while_busy},
    {"concurrent auto-starts", test_concurrent_autostarts},
    {"stale socket and crashed service", test_stale_socket_and_crash},
    {"default socket paths", test_default_paths},
    {"auto-started service is a daemon", test_daemonized},
    {"SIGTERM stops a foreground service", test_signal_stops_foreground},
    CU_TEST_INFO_NULL};
/* Tests that need something of the machine (root and a second uid, python3): a suite of their
 * own, so that where they skip the rest of `service` still counts as passed. */
static CU_TestInfo service_env_tests[] = {
    {"wrong uid refused", test_wrong_uid_refused},
    {"python client from PROTOCOL.md", test_python_client},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_service_suites[] = {{"protocol", protocol_tests, 0},
                                           {"protocol_corpus", corpus_tests, 0},
                                           {"service", service_tests, 0},
                                           {"service_env", service_env_tests, 0},
                                           {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_service_suites)
