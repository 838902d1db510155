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
#include "replay/protocol.h"
#include "tests.h"

static gr_status parse(const char *line, gr_request *r, gr_error *e) {
    gr_error_clear(e);
    return gr_request_parse(line, strlen(line), r, e);
}

static void test_io_fields(void) {
    gr_request r;
    gr_error e;
    CU_ASSERT_EQUAL(parse("{\"schema_version\":1,\"cmd\":\"replay\",\"name\":\"g\",\"inputs\":["
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
    CU_ASSERT_EQUAL(parse("{\"schema_version\":1,\"cmd\":\"replay\",\"inputs\":["
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
    CU_ASSERT_EQUAL(parse("{\"schema_version\":1,\"cmd\":\"replay\",\"iters\":5,\"outputs\":"
                          "[{\"buffer\":\"y\",\"file\":\"/y\"}]}",
                          &r, &e),
                    GR_ERR_PROTOCOL);
    GR_ASSERT_CONTAINS(e.msg, "iters: a replay with inputs or outputs serves one step");
    gr_request_clear(&r);
    CU_ASSERT_EQUAL(parse("{\"schema_version\":1,\"cmd\":\"capture\",\"workload\":\"/w\","
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
    CU_ASSERT_EQUAL(parse(line, &r, &e), GR_ERR_PROTOCOL);
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

static CU_TestInfo serve_tests[] = {
    {"replay request: inputs and outputs, errors by field", test_io_fields},
    {".npy written as the input check reads it", test_npy_roundtrip},
    {"graphrun replay --input/--output checked locally", test_replay_io_flags},
    CU_TEST_INFO_NULL};

static gr_suite_def gr_serve_suites[] = {{"serve", serve_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_serve_suites)
