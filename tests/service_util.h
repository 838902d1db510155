/* Helpers of the replay service suites (tests/test_service.c, tests/test_gpu_service.c): run
 * graphrun under a timeout, a temporary directory per test whose services are always stopped
 * (killed and removed if a test failed half way), raw socket requests, process checks. */
#ifndef GR_TESTS_SERVICE_UTIL_H
#define GR_TESTS_SERVICE_UTIL_H

#include <jansson.h>
#include <stddef.h>
#include <sys/types.h>

#include "replay/protocol.h"

typedef struct svc_env {
    char dir[64];
    char sock[128];
    char log[160];
    char lock[160];
} svc_env;

/* Output of the last svc_grun that wrote here (svc_start_service does). */
extern char svc_out[1 << 20];

/* The source tree: $GR_SOURCE_DIR when set (a build used where the tree sits elsewhere, as on
 * the GPU machine), else the one the tests were built from. */
const char *svc_source_dir(void);
const char *svc_src(const char *rel);
const char *svc_graphrun_bin(void);
/* `cd SOURCE && ENV timeout 60 graphrun ARGS 2>&1`; the exit code (124: it hung). */
int svc_grun(const char *env, const char *args, char *out, size_t size);
/* `graphrun serve --socket DIR/s.sock EXTRA` with ENV (background); output in svc_out. */
int svc_start_service(svc_env *s, const char *env, const char *extra);
/* A fresh temporary directory; services of earlier unfinished tests are killed first. */
void svc_env_make(svc_env *s);
/* Stop the service (graphrun stop), check no process is left and its log has no sanitizer
 * report, remove the directory. */
void svc_env_done(svc_env *s);
int svc_read_pid(const svc_env *s);
int svc_lock_held(const svc_env *s);
int svc_pid_alive(int pid);
int svc_wait_gone(int pid, double seconds);
char *svc_slurp(const char *path); /* malloc'd; "" when missing */
int svc_count_of(const char *hay, const char *needle);
int svc_raw_connect(const char *sock);
int svc_raw_send(int fd, const char *data, size_t n);
/* One line without its newline: its length, 0 at end of stream, -1 on timeout or error. */
long svc_raw_line(int fd, char *buf, size_t size, int timeout_ms);
/* Send one request line, return the final reply (progress skipped), or NULL. */
json_t *svc_raw_call(int fd, const char *line, int timeout_ms);
/* gr_request_parse of a NUL-terminated line with a cleared error (the protocol unit tests). */
gr_status svc_parse(const char *line, gr_request *req, gr_error *err);
/* The next final reply on fd (progress and unparsable lines skipped), or NULL when the stream
 * ends or a line takes longer than timeout_ms. */
json_t *svc_raw_final(int fd, int timeout_ms);
/* Poll `status` until the queue matches (running: 1 when a request runs, waiting: the queued
 * count; -1 ignores one) or ms pass. 1 when it matched. */
int svc_wait_queue(const char *sock, int running, int waiting, int ms);
/* Poll the log until it contains needle or ms pass (then says so on stderr). 1 when found. */
int svc_wait_log(const char *path, const char *needle, int ms);
/* Pipelines status requests (ids 0, 1, ...) without reading until a send blocks for a second
 * (*blocked = 1), max_s pass or 256 MiB went; the bytes sent. */
size_t svc_flood_until_blocked(int fd, double max_s, int *blocked);
/* Resident memory of a process in KiB (VmRSS), -1 when it is gone. */
long svc_rss_kib(int pid);
const char *svc_err_field(json_t *j);
const char *svc_err_msg(json_t *j);
const char *svc_err_code(json_t *j);

/* A string field of a reply equals `want`; a missing field fails (and prints the reply) instead of
 * crashing strcmp. */
#define SVC_ASSERT_STR(j, got, want)                                                               \
    do {                                                                                           \
        const char *g_ = (got);                                                                    \
        int ok_ = g_ && !strcmp(g_, (want));                                                       \
        if (!ok_) {                                                                                \
            char *dump_ = json_dumps((j), JSON_COMPACT);                                           \
            fprintf(stderr, "\n    expected \"%s\", reply was: %s", (want), dump_ ? dump_ : "?");  \
            free(dump_);                                                                           \
        }                                                                                          \
        CU_ASSERT(ok_);                                                                            \
    } while (0)

#endif
