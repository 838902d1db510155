/* Helpers of the replay service suites: see service_util.h. */
#include "service_util.h"
#include "tests.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/timer.h"
#include "replay/client.h"

char svc_out[1 << 20];

const char *svc_source_dir(void) {
    const char *env = getenv("GR_SOURCE_DIR");
    return env && env[0] ? env : GR_SOURCE_DIR;
}

const char *svc_src(const char *rel) {
    static char paths[4][PATH_MAX];
    static int slot;
    char *p = paths[slot++ % 4];
    snprintf(p, PATH_MAX, "%s/%s", svc_source_dir(), rel);
    return p;
}

const char *svc_graphrun_bin(void) {
    return gr_test_bin("graphrun");
}

/* Runs `ENV graphrun ARGS` under `timeout` (a hang fails the test, never the suite), from the
 * source tree, stdout+stderr captured. Returns the exit code (124 on timeout). */
int svc_grun(const char *env, const char *args, char *out, size_t size) {
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "cd '%s' && %s timeout -k 5 60 '%s' %s 2>&1", svc_source_dir(),
             env ? env : "", svc_graphrun_bin(), args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}


/* The directories of tests that did not reach svc_env_done (a failed fatal assert leaves the test
 * function): their services are killed and the directories removed before the next test and
 * at exit, so no service outlives the test run. */
#define MAX_ENVS 64
static char svc_live_dirs[MAX_ENVS][64];

static void svc_kill_services_in(const char *dir) {
    /* every socket a test may have used in its directory */
    static const char *socks[] = {"s.sock", "rel.sock", "graphrun/graphrun.sock"};
    for (size_t i = 0; i < sizeof(socks) / sizeof(socks[0]); i++) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dir, socks[i]);
        gr_service_paths p;
        gr_error e;
        gr_error_clear(&e);
        if (gr_service_paths_resolve(path, &p, &e) != GR_OK || !gr_service_lock_held(&p)) continue;
        int pid = gr_service_lock_pid(&p);
        if (pid > 0) {
            fprintf(stderr, "\n    killing service pid %d left by a failed test (%s)", pid, path);
            kill(pid, SIGKILL);
        }
    }
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "\n    could not remove %s", dir);
}

static void svc_reap_leftovers(void) {
    for (int i = 0; i < MAX_ENVS; i++)
        if (svc_live_dirs[i][0]) {
            svc_kill_services_in(svc_live_dirs[i]);
            svc_live_dirs[i][0] = '\0';
        }
}

void svc_env_make(svc_env *s) {
    static int registered;
    if (!registered) registered = atexit(svc_reap_leftovers) == 0;
    svc_reap_leftovers();
    snprintf(s->dir, sizeof(s->dir), "/tmp/gr_svc_XXXXXX");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(s->dir));
    for (int i = 0; i < MAX_ENVS; i++)
        if (!svc_live_dirs[i][0]) {
            snprintf(svc_live_dirs[i], sizeof(svc_live_dirs[i]), "%s", s->dir);
            break;
        }
    snprintf(s->sock, sizeof(s->sock), "%s/s.sock", s->dir);
    snprintf(s->log, sizeof(s->log), "%s.log", s->sock);
    snprintf(s->lock, sizeof(s->lock), "%s.lock", s->sock);
}

int svc_read_pid(const svc_env *s) {
    gr_service_paths p;
    gr_error e;
    gr_error_clear(&e);
    if (gr_service_paths_resolve(s->sock, &p, &e) != GR_OK) return 0;
    return gr_service_lock_pid(&p);
}

int svc_lock_held(const svc_env *s) {
    gr_service_paths p;
    gr_error e;
    gr_error_clear(&e);
    if (gr_service_paths_resolve(s->sock, &p, &e) != GR_OK) return 0;
    return gr_service_lock_held(&p);
}

/* Alive and not a zombie (daemons are reparented to a pid 1 that may not reap them). */
int svc_pid_alive(int pid) {
    if (pid <= 0) return 0;
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *rp = strrchr(buf, ')');
    return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

int svc_wait_gone(int pid, double seconds) {
    double end = gr_now_us() + seconds * 1e6;
    while (svc_pid_alive(pid) && gr_now_us() < end) usleep(10000);
    return !svc_pid_alive(pid);
}

/* A whole file (also /proc files, whose size reads as 0), NUL-terminated; "" when missing. */
char *svc_slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    size_t cap = 4096, n = 0, got;
    char *b = malloc(cap);
    while (b && (got = fread(b + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *bigger = realloc(b, cap * 2);
            if (!bigger) break;
            b = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!b) return strdup("");
    b[n] = '\0';
    return b;
}

int svc_count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Stop the service of this env (through the CLI), make sure no process is left, check its log
 * for sanitizer reports, remove the directory. */
void svc_env_done(svc_env *s) {
    char buf[4096];
    int pid = svc_read_pid(s);
    if (svc_lock_held(s)) {
        char args[256];
        snprintf(args, sizeof(args), "stop --socket %s", s->sock);
        int rc = svc_grun(NULL, args, buf, sizeof(buf));
        CU_ASSERT_EQUAL(rc, 0);
        if (rc != 0) fprintf(stderr, "\n    stop: %s", buf);
    }
    if (pid > 0 && !svc_wait_gone(pid, 10)) {
        fprintf(stderr, "\n    service pid %d did not exit: killing it", pid);
        kill(pid, SIGKILL);
        CU_FAIL("service left running");
    }
    char *log = svc_slurp(s->log);
    int clean = !strstr(log, "AddressSanitizer") && !strstr(log, "LeakSanitizer") &&
                !strstr(log, "runtime error:") && !strstr(log, "ThreadSanitizer");
    if (!clean) fprintf(stderr, "\n    sanitizer report in %s:\n%s", s->log, log);
    CU_ASSERT_TRUE(clean);
    free(log);
    for (int i = 0; i < MAX_ENVS; i++)
        if (!strcmp(svc_live_dirs[i], s->dir)) svc_live_dirs[i][0] = '\0';
    svc_kill_services_in(s->dir); /* normally none left: this only removes the directory */
}

int svc_start_service(svc_env *s, const char *env, const char *extra) {
    char args[512];
    snprintf(args, sizeof(args), "serve --socket %s %s", s->sock, extra ? extra : "");
    return svc_grun(env, args, svc_out, sizeof(svc_out));
}

int svc_raw_connect(const char *sock) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int svc_raw_send(int fd, const char *data, size_t n) {
    while (n > 0) {
        ssize_t k = send(fd, data, n, MSG_NOSIGNAL);
        if (k <= 0) return -1;
        data += k;
        n -= (size_t)k;
    }
    return 0;
}

/* One line (newline stripped): its length, 0 at EOF, -1 on timeout or error. */
long svc_raw_line(int fd, char *buf, size_t size, int timeout_ms) {
    size_t n = 0;
    double end = gr_now_us() + timeout_ms * 1e3;
    while (n + 1 < size) {
        int left = (int)((end - gr_now_us()) / 1e3);
        if (left <= 0) return -1;
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, left) <= 0) return -1;
        char c;
        ssize_t k = recv(fd, &c, 1, 0);
        if (k == 0) {
            buf[n] = '\0';
            return n ? (long)n : 0;
        }
        if (k < 0) return -1;
        if (c == '\n') break;
        buf[n++] = c;
    }
    buf[n] = '\0';
    return (long)n;
}

/* Send one line and read the final reply (skipping progress). Returns the parsed reply or NULL. */
json_t *svc_raw_call(int fd, const char *line, int timeout_ms) {
    char req[4096];
    snprintf(req, sizeof(req), "%s\n", line);
    if (svc_raw_send(fd, req, strlen(req)) != 0) return NULL;
    static char buf[1 << 20];
    for (;;) {
        if (svc_raw_line(fd, buf, sizeof(buf), timeout_ms) <= 0) return NULL;
        json_t *j = json_loads(buf, 0, NULL);
        if (!j) return NULL;
        if (!json_object_get(j, "progress")) return j;
        json_decref(j);
    }
}

json_t *svc_raw_final(int fd, int timeout_ms) {
    static char buf[1 << 16];
    while (svc_raw_line(fd, buf, sizeof(buf), timeout_ms) > 0) {
        json_t *j = json_loads(buf, 0, NULL);
        if (j && !json_object_get(j, "progress")) return j;
        json_decref(j);
    }
    return NULL;
}

const char *svc_err_field(json_t *j) {
    return json_string_value(json_object_get(json_object_get(j, "error"), "field"));
}
const char *svc_err_msg(json_t *j) {
    return json_string_value(json_object_get(json_object_get(j, "error"), "message"));
}
const char *svc_err_code(json_t *j) {
    return json_string_value(json_object_get(json_object_get(j, "error"), "code"));
}


/* The service's queue as `status` reports it, polled until it matches (running: 1 when a request
 * runs, waiting: the queued count; -1 ignores one) or ms pass. Fixed sleeps here made the suite
 * flaky on a loaded machine; the observable state is what the assertions are about. */
int svc_wait_queue(const char *sock, int running, int waiting, int ms) {
    double t0 = gr_now_us();
    for (;;) {
        int fd = svc_raw_connect(sock), ok = 0;
        if (fd >= 0) {
            json_t *j = svc_raw_call(fd, "{\"schema_version\": 1, \"cmd\": \"status\"}", 5000);
            json_t *q = json_object_get(j, "queue");
            int r = json_is_object(json_object_get(q, "running")) ? 1 : 0;
            int w = (int)json_integer_value(json_object_get(q, "waiting"));
            ok = q && (running < 0 || r == running) && (waiting < 0 || w == waiting);
            json_decref(j);
            close(fd);
        }
        if (ok) return 1;
        if ((gr_now_us() - t0) / 1e3 > ms) return 0;
        usleep(20000);
    }
}

/* The service log, polled until it contains needle or ms pass. */
int svc_wait_log(const char *path, const char *needle, int ms) {
    double t0 = gr_now_us();
    for (;;) {
        char *log = svc_slurp(path);
        int ok = log && strstr(log, needle) != NULL;
        free(log);
        if (ok) return 1;
        if ((gr_now_us() - t0) / 1e3 > ms) {
            fprintf(stderr, "\n    the service log has no \"%s\" after %d ms", needle, ms);
            return 0;
        }
        usleep(20000);
    }
}

/* Resident memory of a process in KiB (VmRSS), -1 when it is gone. */
long svc_rss_kib(int pid) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    char *st = svc_slurp(path);
    const char *p = strstr(st, "VmRSS:");
    long kib = p ? strtol(p + 6, NULL, 10) : -1;
    free(st);
    return kib;
}

/* Sends status requests with ids 0, 1, 2... as fast as the service takes them, until a send has
 * blocked for a second (*blocked = 1: the service pushed back), max_s pass or 256 MiB went
 * (*blocked = 0). Returns the bytes sent; fd is blocking again afterwards. */
size_t svc_flood_until_blocked(int fd, double max_s, int *blocked) {
    static char chunk[1 << 16];
    long next_id = 0;
    size_t sent = 0, pend = 0, off = 0;
    double t0 = gr_now_us(), blocked_since = 0;
    *blocked = 0;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    while ((gr_now_us() - t0) / 1e6 < max_s && sent < ((size_t)256 << 20)) {
        if (off == pend) {
            pend = off = 0;
            while (pend + 80 < sizeof(chunk))
                pend += (size_t)snprintf(chunk + pend, sizeof(chunk) - pend,
                                         "{\"schema_version\":1,\"cmd\":\"status\",\"id\":%ld}\n", next_id++);
        }
        ssize_t k = send(fd, chunk + off, pend - off, MSG_NOSIGNAL);
        if (k > 0) {
            off += (size_t)k;
            sent += (size_t)k;
            blocked_since = 0;
            continue;
        }
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break; /* closed on us */
        if (!blocked_since) blocked_since = gr_now_us();
        if (gr_now_us() - blocked_since > 1e6) {
            *blocked = 1;
            break;
        }
        usleep(1000);
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return sent;
}

gr_status svc_parse(const char *line, gr_request *req, gr_error *err) {
    gr_error_clear(err);
    return gr_request_parse(line, strlen(line), req, err);
}
