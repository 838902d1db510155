/* Serving data through the replay service (CPU): the replay request's inputs/outputs (files and
 * shared-memory segments, every error by its field), the .npy writer read back by the reader the
 * service checks inputs with, and `graphrun replay --input/--output` refusing bad use before any
 * service is asked. The served step itself runs in gpu_service and python/tests/test_gpu.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/expect.h"
#include "core/npy.h"
#include "replay/bucket.h"
#include "replay/load.h"
#include "replay/protocol.h"
#include "service_util.h"
#include "tests.h"

static void test_io_fields(void) {
    gr_request r;
    gr_error e;
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"replay\",\"name\":\"g\",\"inputs\":["
                          "{\"buffer\":\"x\",\"file\":\"/d/x.npy\"},"
                          "{\"buffer\":\"w\",\"shm\":\"/seg1\",\"offset\":4096}],"
                          "\"outputs\":[{\"buffer\":\"y\",\"shm\":\"/seg2\"}]}",
                          &r, &e),
                    GR_OK);
    CU_ASSERT_EQUAL(r.ninputs, 2);
    CU_ASSERT_EQUAL(r.noutputs, 1);
    CU_ASSERT_STRING_EQUAL(r.inputs[0].buffer, "x");
    CU_ASSERT_STRING_EQUAL(r.inputs[0].file, "/d/x.npy");
    CU_ASSERT_STRING_EQUAL(r.inputs[1].shm, "/seg1");
    CU_ASSERT_EQUAL(r.inputs[1].offset, 4096);
    CU_ASSERT_STRING_EQUAL(r.outputs[0].shm, "/seg2");
    gr_request_clear(&r);
    /* every problem, each by its field, in one reply */
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"replay\",\"inputs\":["
                          "{\"buffer\":\"x\",\"file\":\"x.npy\"},"
                          "{\"buffer\":\"w\",\"shm\":\"seg\"},"
                          "{\"buffer\":\"v\",\"file\":\"/a\",\"shm\":\"/b\"},"
                          "{\"file\":\"/a\"},"
                          "{\"buffer\":\"u\",\"file\":\"/a\",\"offset\":8},"
                          "{\"buffer\":\"t\",\"file\":\"/a\",\"mode\":1},"
                          "{\"buffer\":\"s\",\"shm\":\"/a\",\"offset\":-1},"
                          "7],"
                          "\"outputs\":[{\"buffer\":\"y\",\"file\":\"/y\"},{\"buffer\":\"y\",\"file\":\"/z\"}]}",
                          &r, &e),
                    GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "inputs[0].file: must be an absolute path");
    GR_ASSERT_CONTAINS(e.msg, "inputs[1].shm: expected a shared-memory name \"/name\"");
    GR_ASSERT_CONTAINS(e.msg, "inputs[2]: give exactly one of \"file\" and \"shm\"");
    GR_ASSERT_CONTAINS(e.msg, "inputs[3]: missing \"buffer\"");
    GR_ASSERT_CONTAINS(e.msg, "inputs[4]: \"offset\" goes with \"shm\"");
    GR_ASSERT_CONTAINS(e.msg, "inputs[5].mode: unknown key");
    GR_ASSERT_CONTAINS(e.msg, "inputs[6].offset: expected a whole number of bytes");
    GR_ASSERT_CONTAINS(e.msg, "inputs[7]: expected an object");
    GR_ASSERT_CONTAINS(e.msg, "outputs[1]: buffer \"y\" is listed twice");
    gr_request_clear(&r);
    /* a served step does not take the timing loop's fields; capture does not take inputs */
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"replay\",\"iters\":5,\"outputs\":"
                          "[{\"buffer\":\"y\",\"file\":\"/y\"}]}",
                          &r, &e),
                    GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "iters: a replay with inputs or outputs serves one step");
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"capture\",\"workload\":\"/w\","
                          "\"inputs\":[]}",
                          &r, &e),
                    GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "inputs: unknown key for command capture");
    gr_request_clear(&r);
    /* too many entries */
    char line[8192];
    size_t o = (size_t)snprintf(line, sizeof(line), "{\"schema_version\":1,\"cmd\":\"replay\",\"inputs\":[");
    for (int i = 0; i <= GR_PROTO_MAX_IO; i++)
        o += (size_t)snprintf(line + o, sizeof(line) - o, "%s{\"buffer\":\"b%d\",\"file\":\"/f\"}",
                              i ? "," : "", i);
    snprintf(line + o, sizeof(line) - o, "]}");
    CU_ASSERT_EQUAL(svc_parse(line, &r, &e), GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "inputs: at most 32 entries");
    gr_request_clear(&r);
}

/* what the service writes for an output is what it accepts as an input */
static void test_npy_roundtrip(void) {
    gr_error e;
    gr_error_clear(&e);
    float data[6] = {1, -2, 3.5f, 0, 1e-3f, 7};
    int64_t shape[2] = {2, 3};
    const char *path = gr_test_tmpfile(".npy", "", 0);
    CU_ASSERT_EQUAL_FATAL(gr_npy_write(path, GR_FP32, 2, shape, data, &e), GR_OK);
    gr_buffer b;
    memset(&b, 0, sizeof(b));
    snprintf(b.name, sizeof(b.name), "y");
    b.dtype = GR_FP32;
    b.ndim = 2;
    b.shape[0] = 2;
    b.shape[1] = 3;
    b.numel = 6;
    b.bytes = sizeof(data);
    size_t off = 0;
    CU_ASSERT_EQUAL_FATAL(gr_expect_check(path, &b, "inputs[0]", &off, &e), GR_OK);
    CU_ASSERT_EQUAL(off % 64, 0); /* the header is padded to 64 bytes */
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    float back[6];
    CU_ASSERT_EQUAL(fseek(f, (long)off, SEEK_SET), 0);
    CU_ASSERT_EQUAL(fread(back, sizeof(float), 6, f), 6);
    fclose(f);
    CU_ASSERT_EQUAL(memcmp(back, data, sizeof(data)), 0);
    /* a 1-d shape is a 1-tuple, "(6,)" */
    int64_t s1 = 6;
    CU_ASSERT_EQUAL_FATAL(gr_npy_write(path, GR_FP32, 1, &s1, data, &e), GR_OK);
    f = fopen(path, "rb");
    char hdr[128] = {0};
    CU_ASSERT_EQUAL(fread(hdr, 1, sizeof(hdr) - 1, f), sizeof(hdr) - 1);
    fclose(f);
    GR_ASSERT_CONTAINS(hdr + 10, "'shape': (6,)");
    GR_ASSERT_CONTAINS(hdr + 10, "'descr': '<f4'");
    /* a flat array fills a [3, 2] buffer; a [2, 3] one is refused, naming the field */
    b.shape[0] = 3;
    b.shape[1] = 2;
    CU_ASSERT_EQUAL(gr_expect_check(path, &b, "inputs[0]", &off, &e), GR_OK);
    CU_ASSERT_EQUAL_FATAL(gr_npy_write(path, GR_FP32, 2, shape, data, &e), GR_OK);
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_expect_check(path, &b, "inputs[0]", &off, &e), GR_ERR_INPUT);
    CU_ASSERT_STRING_EQUAL(e.path, "inputs[0]");
    GR_ASSERT_CONTAINS(e.msg, "has shape (2, 3); buffer \"y\" is (3, 2)");
    /* and another dtype */
    gr_error_clear(&e);
    b.dtype = GR_FP16;
    b.bytes = 12;
    b.shape[0] = 2;
    b.shape[1] = 3;
    CU_ASSERT_EQUAL(gr_expect_check(path, &b, "inputs[0]", &off, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "holds dtype '<f4'");
    /* an unwritable place */
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_npy_write("/nonexistent-dir/y.npy", GR_FP32, 1, &s1, data, &e), GR_ERR_IO);
    GR_ASSERT_CONTAINS(e.msg, "cannot write");
    unlink(path);
}

static void test_replay_io_flags(void) {
    char out[8192];
    CU_ASSERT_EQUAL(gr_test_graphrun("replay --input x", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--input takes BUFFER=FILE");
    CU_ASSERT_EQUAL(gr_test_graphrun("replay --output =y.npy", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--output takes BUFFER=FILE");
    CU_ASSERT_EQUAL(gr_test_graphrun("replay --input x=/dev/null --iters 5", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--input/--output serve one step");
    CU_ASSERT_EQUAL(gr_test_graphrun("replay --input x=/nonexistent/x.npy", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "cannot open /nonexistent/x.npy");
    CU_ASSERT_EQUAL(gr_test_graphrun("replay --output y=/nonexistent/dir/y.npy", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "no directory for /nonexistent/dir/y.npy");
    CU_ASSERT_EQUAL(gr_test_graphrun("replay --help", out, sizeof(out)), 0);
    GR_ASSERT_CONTAINS(out, "--input BUF=FILE");
}

static void test_bucket_parse_pick(void) {
    gr_bucket_spec s;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_bucket_parse("B=8,1,64,2", "--buckets", &s, &e), GR_OK);
    CU_ASSERT_STRING_EQUAL(s.param, "B");
    CU_ASSERT_EQUAL(s.n, 4);
    CU_ASSERT_EQUAL(s.values[0], 1);
    CU_ASSERT_EQUAL(s.values[3], 64);
    CU_ASSERT_EQUAL(gr_bucket_pick(&s, 1), 0);
    CU_ASSERT_EQUAL(gr_bucket_pick(&s, 3), 2); /* 3 -> 8 */
    CU_ASSERT_EQUAL(gr_bucket_pick(&s, 8), 2);
    CU_ASSERT_EQUAL(gr_bucket_pick(&s, 64), 3);
    CU_ASSERT_EQUAL(gr_bucket_pick(&s, 65), -1);
    CU_ASSERT_EQUAL(gr_bucket_pick(&s, 0), -1);
    const char *bad[][2] = {{"8,16", "expected PARAM=V1,V2"},   {"=1,2", "expected PARAM=V1,V2"},
                            {"B=1,x", "\"x\" in \"B=1,x\" is not one"}, {"B=0,2", "is not one"},
                            {"B=2,2", "bucket 2 is given twice"}, {"B=1,2,", "ends with a comma"},
                            {"B=", "no bucket values"},       {"B=1;2", "is not one"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gr_error_clear(&e);
        CU_ASSERT_EQUAL(gr_bucket_parse(bad[i][0], "--buckets", &s, &e), GR_ERR_USAGE);
        GR_ASSERT_CONTAINS(e.msg, bad[i][1]);
        CU_ASSERT_STRING_EQUAL(e.path, "--buckets");
    }
}

/* decode_step at B = 1, 2, 8: the weights are the same in every bucket and exist once; x and the
 * per-row scratch change along dimension 0 and are sized for B = 8 */
static void test_bucket_layout(void) {
    gr_bucket_spec s;
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL_FATAL(gr_bucket_parse("B=1,2,8", "--buckets", &s, &e), GR_OK);
    gr_target t = gr_target_default();
    gr_loaded ld[3];
    const gr_plan *plans[3];
    for (int i = 0; i < 3; i++) {
        char set[32];
        snprintf(set, sizeof(set), "B=%lld", (long long)s.values[i]);
        const char *sets[] = {"L=2", "d=256", "f=512", "r=8", set};
        gr_load_req req = {gr_test_src("workloads/decode_step.json"), "fused", sets, 5, NULL, 0, NULL, 0};
        CU_ASSERT_EQUAL_FATAL(gr_load_resolve(&req, &t, &ld[i], &e), GR_OK);
        plans[i] = ld[i].plans[0];
    }
    gr_bucket_layout l;
    CU_ASSERT_EQUAL_FATAL(gr_bucket_layout_make(plans, 3, &s, &l, &e), GR_OK);
    const gr_bucket_buffer *w = gr_bucket_find(&l, "W_gate.0"), *x = gr_bucket_find(&l, "x");
    CU_ASSERT_PTR_NOT_NULL_FATAL(w);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_TRUE(w->same);
    CU_ASSERT_EQUAL(w->batch_dim, -1);
    size_t es = gr_dtype_size(w->dtype); /* the workload's dtype (bf16 by default) */
    CU_ASSERT_EQUAL(w->bytes, (size_t)512 * 256 * es);
    CU_ASSERT_FALSE(x->same);
    CU_ASSERT_EQUAL(x->batch_dim, 0);
    CU_ASSERT_EQUAL(x->bytes, (size_t)8 * 256 * es);
    CU_ASSERT_EQUAL(x->row_bytes, (size_t)256 * es);
    /* one copy of the weights instead of three */
    double weights = gr_plan_input_bytes(plans[0]);
    CU_ASSERT_TRUE(l.shared_bytes < 1.2 * weights + plans[2]->used_bytes - gr_plan_input_bytes(plans[2]));
    CU_ASSERT_TRUE(l.separate_bytes > 2.9 * weights);
    CU_ASSERT_PTR_NULL(gr_bucket_find(&l, "no_such"));
    gr_bucket_layout_free(&l);
    /* plans that do not share buffers (another rank of L) are refused by name */
    gr_loaded other;
    const char *sets[] = {"L=3", "d=256", "f=512", "r=8", "B=4"};
    gr_load_req req = {gr_test_src("workloads/decode_step.json"), "fused", sets, 5, NULL, 0, NULL, 0};
    CU_ASSERT_EQUAL_FATAL(gr_load_resolve(&req, &t, &other, &e), GR_OK);
    const gr_plan *mixed[2] = {plans[0], other.plans[0]};
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_bucket_layout_make(mixed, 2, &s, &l, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "every bucket must use the same ones");
    gr_bucket_layout_free(&l);
    gr_loaded_free(&other);
    for (int i = 0; i < 3; i++) gr_loaded_free(&ld[i]);
}

/* capture --buckets: bad specs and unshareable plans refused before a service starts; without a
 * device the service validates every bucket and says what sharing would save */
static void test_buckets_cli(void) {
    char out[8192];
    CU_ASSERT_EQUAL(gr_test_graphrun("capture workloads/decode_step.json --buckets B=2,x", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--buckets: bucket values are whole numbers");
    CU_ASSERT_EQUAL(gr_test_graphrun("capture workloads/launch_bound.json --buckets B=1,2 --socket /tmp/gr-never/s.sock",
                                     out, sizeof(out)),
                    2);
    GR_ASSERT_CONTAINS(out, "bucket B=1: ");
    GR_ASSERT_CONTAINS(out, "unknown param \"B\"");
    CU_ASSERT_NOT_EQUAL(access("/tmp/gr-never/s.sock", F_OK), 0); /* no service was started */
    CU_ASSERT_EQUAL(gr_test_graphrun("capture workloads/launch_bound.json --update --socket /tmp/gr-never/s.sock",
                                     out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--update needs --name NAME");
    CU_ASSERT_NOT_EQUAL(access("/tmp/gr-never/s.sock", F_OK), 0);
    CU_ASSERT_EQUAL(gr_test_graphrun("replay --batch 0", out, sizeof(out)), 2);
    GR_ASSERT_CONTAINS(out, "--batch takes a whole number >= 1");
    if (gr_test_have_gpu()) return; /* gpu_service captures buckets for real */
    svc_env s;
    svc_env_make(&s);
    char args[1024];
    snprintf(args, sizeof(args), "capture workloads/decode_step.json --variant fused --set L=2 --set d=256 "
             "--set f=512 --set r=8 --buckets B=1,2,8 --socket %s --quiet", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 3);
    GR_ASSERT_CONTAINS(svc_out, "the workload and its 3 buckets are valid (shared buffers");
    snprintf(args, sizeof(args), "replay nothing --batch 3 --socket %s", s.sock);
    CU_ASSERT_EQUAL(svc_grun(NULL, args, svc_out, sizeof(svc_out)), 2);
    GR_ASSERT_CONTAINS(svc_out, "\"nothing\" was not captured with --buckets");
    svc_env_done(&s);
}

static void test_bucket_fields(void) {
    gr_request r;
    gr_error e;
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"capture\",\"workload\":\"/w\",\"buckets\":\"B=4,1\"}", &r, &e), GR_OK);
    CU_ASSERT_EQUAL(r.buckets.n, 2);
    CU_ASSERT_EQUAL(r.buckets.values[0], 1);
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"capture\",\"workload\":\"/w\",\"buckets\":\"B=4,4\"}", &r, &e), GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "buckets: bucket 4 is given twice");
    CU_ASSERT_STRING_EQUAL(e.path, "buckets");
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"capture\",\"workload\":\"/w\",\"update\":true}", &r, &e), GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "update: needs \"name\"");
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"capture\",\"workload\":\"/w\",\"name\":\"g\","
                          "\"update\":true,\"buckets\":\"B=1,2\"}", &r, &e), GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "update: does not go with \"buckets\"");
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"capture\",\"workload\":\"/w\",\"name\":\"g\","
                          "\"update\":true}", &r, &e), GR_OK);
    CU_ASSERT_EQUAL(r.update, 1);
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"replay\",\"batch\":5}", &r, &e), GR_OK);
    CU_ASSERT_EQUAL(r.batch, 5);
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(svc_parse("{\"schema_version\":1,\"cmd\":\"replay\",\"batch\":0}", &r, &e), GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "batch: 0 is outside");
    gr_request_clear(&r);
}

static CU_TestInfo serve_tests[] = {
    {"request fields: buckets, batch", test_bucket_fields},
    {"capture --buckets / replay --batch from the CLI", test_buckets_cli},
    {"bucket specs parsed, buckets picked", test_bucket_parse_pick},
    {"bucket layout: weights once, batch rows for the largest", test_bucket_layout},
    {"replay request: inputs and outputs, errors by field", test_io_fields},
    {".npy written as the input check reads it", test_npy_roundtrip},
    {"graphrun replay --input/--output checked locally", test_replay_io_flags},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_serve_suites[] = {{"serve", serve_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_serve_suites)
