/* Replay service client: socket paths, auto-start (daemonized, race-free through the service's
 * lifetime lock), connect with a check of the service's uid, request/reply with progress. */
#define _GNU_SOURCE /* struct ucred, pipe2 */
#include "replay/client.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/cuda_check.h"
#include "core/timer.h"

struct gr_client {
    int fd;
    gr_service_paths paths;
    int started_pid;
    gr_linebuf in;
};

#define REPLY_MAX ((size_t)256 << 20) /* a reply line (reports can be large) */

gr_status gr_service_paths_resolve(const char *opt, gr_service_paths *p, gr_error *err) {
    memset(p, 0, sizeof(*p));
    const char *env = getenv("GRAPHRUN_SOCKET");
    char path[PATH_MAX];
    if (opt) {
        snprintf(p->origin, sizeof(p->origin), "--socket");
        if (!opt[0]) return gr_error_set(err, GR_ERR_USAGE, "--socket", "empty path");
        snprintf(path, sizeof(path), "%s", opt);
    } else if (env && env[0]) {
        snprintf(p->origin, sizeof(p->origin), "GRAPHRUN_SOCKET");
        snprintf(path, sizeof(path), "%s", env);
    } else {
        snprintf(p->origin, sizeof(p->origin), "default");
        const char *xdg = getenv("XDG_RUNTIME_DIR");
        if (xdg && xdg[0] == '/')
            snprintf(p->dir, sizeof(p->dir), "%s/graphrun", xdg);
        else
            snprintf(p->dir, sizeof(p->dir), "/tmp/graphrun-%u", (unsigned)geteuid());
        snprintf(path, sizeof(path), "%s/graphrun.sock", p->dir);
        p->is_default = 1;
    }
    if (path[0] != '/') {
        /* the service runs in / : keep the path valid there */
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd)))
            return gr_error_set(err, GR_ERR_IO, p->origin, "cannot resolve the relative socket path "
                                "\"%s\" (getcwd: %s); give an absolute path", path, strerror(errno));
        char abs[PATH_MAX];
        if ((size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, path) >= sizeof(abs))
            return gr_error_set(err, GR_ERR_USAGE, p->origin, "socket path too long");
        snprintf(path, sizeof(path), "%s", abs);
    }
    size_t n = strlen(path);
    if (n >= GR_SOCKET_PATH_MAX || path[n - 1] == '/')
        return gr_error_set(err, GR_ERR_USAGE, p->origin,
                            "socket path \"%s\" is %zu bytes%s; a UNIX socket path must be a file "
                            "name shorter than %d bytes (pick a shorter one with --socket or "
                            "GRAPHRUN_SOCKET)",
                            path, n, path[n - 1] == '/' ? " and ends in /" : "", GR_SOCKET_PATH_MAX);
    snprintf(p->socket, sizeof(p->socket), "%s", path);
    if (!p->is_default) {
        snprintf(p->dir, sizeof(p->dir), "%s", path);
        char *slash = strrchr(p->dir, '/');
        if (slash == p->dir) slash[1] = '\0';
        else *slash = '\0';
    }
    snprintf(p->lock, sizeof(p->lock), "%s.lock", p->socket);
    snprintf(p->log, sizeof(p->log), "%s.log", p->socket);
    return GR_OK;
}

gr_status gr_service_dir_prepare(const gr_service_paths *p, gr_error *err) {
    struct stat st;
    if (!p->is_default) {
        /* A missing directory is created private (its parent must exist); an existing one must
         * keep others from replacing the socket, its lock or its log: not writable by group or
         * others (sticky or not: /tmp itself is refused), owned by you or root. */
        if (stat(p->dir, &st) != 0) {
            if (errno != ENOENT || mkdir(p->dir, 0700) != 0 || stat(p->dir, &st) != 0)
                return gr_error_set(err, GR_ERR_IO, p->origin,
                                    "the socket's directory %s does not exist and cannot be "
                                    "created (%s): create it (mkdir -m 700), or choose another "
                                    "socket path",
                                    p->dir, strerror(errno));
        }
        if (!S_ISDIR(st.st_mode))
            return gr_error_set(err, GR_ERR_IO, p->origin,
                                "the socket's directory %s is not a directory: choose another "
                                "socket path",
                                p->dir);
        if ((st.st_mode & 022) || (st.st_uid != geteuid() && st.st_uid != 0))
            return gr_error_set(err, GR_ERR_IO, p->origin,
                                "the socket's directory %s has owner uid %u and mode %04o: others "
                                "could replace the socket, its lock or its log there; put the "
                                "socket in a directory of yours that only you can write to "
                                "(mkdir -m 700 DIR; --socket DIR/graphrun.sock), or leave "
                                "--socket out for the private default",
                                p->dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        return GR_OK;
    }
    if (mkdir(p->dir, 0700) != 0 && errno != EEXIST)
        return gr_error_set(err, GR_ERR_IO, p->dir,
                            "cannot create the service directory: %s (set XDG_RUNTIME_DIR to a "
                            "directory of yours, or pass --socket)",
                            strerror(errno));
    if (lstat(p->dir, &st) != 0)
        return gr_error_set(err, GR_ERR_IO, p->dir, "cannot inspect the service directory: %s",
                            strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return gr_error_set(err, GR_ERR_IO, p->dir,
                            "is not a directory (a symlink or a file is in the way): remove it, or "
                            "pass --socket");
    if (st.st_uid != geteuid() || (st.st_mode & 077))
        return gr_error_set(err, GR_ERR_IO, p->dir,
                            "the service directory must belong to you and be private, but it has "
                            "owner uid %u and mode %04o: `chmod 700 %s` (if it is yours), or pass "
                            "--socket",
                            (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), p->dir);
    return GR_OK;
}

int gr_service_lock_pid(const gr_service_paths *p) {
    int fd = open(p->lock, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[32];
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    return atoi(buf);
}

int gr_service_lock_held(const gr_service_paths *p) {
    int fd = open(p->lock, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    int held = 0;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0) held = errno == EWOULDBLOCK;
    else flock(fd, LOCK_UN);
    close(fd);
    return held;
}

/* Close every fd above `keep` (between fork and exec: no allocation). */
static void close_from(int first) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)first, ~0u, 0u) == 0) return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    if (max < 0 || max > 65536) max = 65536;
    for (int fd = first; fd < max; fd++) close(fd);
}

gr_status gr_service_spawn(const gr_service_paths *p, const char *exe, char *const *args,
                           int *pid_out, int *already, gr_error *err) {
    *pid_out = 0;
    *already = 0;
    char self[PATH_MAX];
    if (!exe) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (n <= 0)
            return gr_error_set(err, GR_ERR_SERVICE, NULL,
                                "cannot find this program to start the replay service "
                                "(/proc/self/exe: %s); start one with `graphrun serve`",
                                strerror(errno));
        self[n] = '\0';
        exe = self;
    }
    const char *argv[48];
    int a = 0;
    argv[a++] = exe;
    argv[a++] = "serve";
    if (!p->is_default) { /* the default is found again from the environment, and made private */
        argv[a++] = "--socket";
        argv[a++] = p->socket;
    }
    argv[a++] = "--notify-fd";
    argv[a++] = "3";
    for (int i = 0; args && args[i] && a < 47; i++) argv[a++] = args[i];
    argv[a] = NULL;

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return gr_error_set(err, GR_ERR_SERVICE, NULL, "cannot start the replay service: pipe: %s",
                            strerror(errno));
    pid_t child = fork();
    if (child < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return gr_error_set(err, GR_ERR_SERVICE, NULL, "cannot start the replay service: fork: %s",
                            strerror(e));
    }
    if (child == 0) {
        /* first child: a new session without a terminal, then the daemon is its child (it can
         * never reacquire a terminal, and our caller reaps this one at once) */
        if (setsid() < 0) _exit(1);
        pid_t d = fork();
        if (d < 0) _exit(1);
        if (d > 0) _exit(0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        umask(077);
        if (chdir("/") != 0) _exit(1);
        int w = fcntl(fds[1], F_DUPFD, 10); /* the notify pipe, out of the way, inheritable */
        int nul = open("/dev/null", O_RDWR);
        if (w < 0 || nul < 0) _exit(1);
        dup2(nul, 0);
        dup2(nul, 1);
        dup2(nul, 2);
        dup2(w, 3);
        close_from(4);
        execv(exe, (char *const *)argv);
        dprintf(3, "error service cannot run %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    char msg[2048];
    size_t n = 0;
    double deadline = gr_now_us() + 30e6;
    int timed_out = 0;
    while (n + 1 < sizeof(msg)) {
        int left = (int)((deadline - gr_now_us()) / 1e3);
        if (left <= 0) {
            timed_out = 1;
            break;
        }
        struct pollfd pf = {fds[0], POLLIN, 0};
        int r = poll(&pf, 1, left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            timed_out = r == 0;
            break;
        }
        ssize_t got = read(fds[0], msg + n, sizeof(msg) - 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
        if (memchr(msg, '\n', n)) break;
    }
    close(fds[0]);
    msg[n] = '\0';
    char *nl = strchr(msg, '\n');
    if (nl) *nl = '\0';
    if (!strncmp(msg, "ready ", 6) || !strncmp(msg, "running ", 8)) {
        *already = msg[0] == 'r' && msg[1] == 'u';
        *pid_out = atoi(strchr(msg, ' ') + 1);
        return GR_OK;
    }
    if (!strncmp(msg, "error ", 6)) {
        char *code = msg + 6;
        char *text = strchr(code, ' ');
        if (text) *text++ = '\0';
        gr_status st = gr_proto_code_parse(code);
        if (st == GR_OK) st = GR_ERR_SERVICE;
        return gr_error_set(err, st, NULL, "the replay service did not start: %s", text ? text : code);
    }
    if (timed_out)
        return gr_error_set(err, GR_ERR_SERVICE, NULL,
                            "the replay service did not report ready within 30 s (see its log %s)",
                            p->log);
    return gr_error_set(err, GR_ERR_SERVICE, NULL,
                        "the replay service exited without starting (run `graphrun serve "
                        "--foreground --socket %s` to see why; its log is %s)",
                        p->socket, p->log);
}

/* 0 on success (fd set), else errno. */
static int try_connect(const char *path, int *fd_out) {
    *fd_out = -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int rc;
    while ((rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa))) != 0 && errno == EINTR) {
    }
    if (rc != 0) {
        int e = errno;
        close(fd);
        return e;
    }
    *fd_out = fd;
    return 0;
}

gr_status gr_client_connect(const gr_service_paths *p, int autostart, gr_client **out, gr_error *err) {
    *out = NULL;
    int started = 0;
    for (int attempt = 0; attempt < 3; attempt++) {
        int fd;
        int e = try_connect(p->socket, &fd);
        if (e == 0) {
            struct ucred cred;
            socklen_t len = sizeof(cred);
            if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid != geteuid()) {
                close(fd);
                return gr_error_set(err, GR_ERR_SERVICE, p->socket,
                                    "the service there runs as uid %u, not as you (uid %u): "
                                    "refusing to use it (use a socket of your own with --socket)",
                                    (unsigned)cred.uid, (unsigned)geteuid());
            }
            gr_client *c = calloc(1, sizeof(*c));
            if (!c) {
                close(fd);
                return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of memory");
            }
            c->fd = fd;
            c->paths = *p;
            c->started_pid = started;
            gr_linebuf_init(&c->in, REPLY_MAX);
            *out = c;
            return GR_OK;
        }
        if (e != ENOENT && e != ECONNREFUSED)
            return gr_error_set(err, GR_ERR_SERVICE, p->socket,
                                "cannot connect to the replay service: %s%s", strerror(e),
                                e == EACCES ? " (the socket or its directory is not yours: use "
                                              "your own --socket)"
                                            : "");
        if (!autostart)
            return gr_error_set(err, GR_ERR_SERVICE, p->socket,
                                "no replay service is running here%s (`graphrun capture WORKLOAD` "
                                "starts one, as does `graphrun serve`)",
                                e == ECONNREFUSED ? "; a stale socket file of a stopped or crashed "
                                                    "service is there, the next service removes it"
                                                  : "");
        int pid = 0, already = 0;
        GR_TRY(gr_service_spawn(p, NULL, NULL, &pid, &already, err));
        if (!already) started = pid;
    }
    return gr_error_set(err, GR_ERR_SERVICE, p->socket,
                        "a replay service was started but does not accept connections (see its "
                        "log %s)",
                        p->log);
}

int gr_client_started_pid(const gr_client *c) {
    return c ? c->started_pid : 0;
}

void gr_client_close(gr_client *c) {
    if (!c) return;
    if (c->fd >= 0) close(c->fd);
    gr_linebuf_free(&c->in);
    free(c);
}

static gr_status send_all(gr_client *c, const char *data, size_t n, gr_error *err) {
    while (n > 0) {
        ssize_t k = send(c->fd, data, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0)
            return gr_error_set(err, GR_ERR_SERVICE, c->paths.socket,
                                "cannot send the request: %s (the service closed the connection; "
                                "its log is %s)",
                                strerror(errno), c->paths.log);
        data += k;
        n -= (size_t)k;
    }
    return GR_OK;
}

/* Reads more bytes into the line buffer. */
static gr_status read_more(gr_client *c, double deadline, int timeout_ms, gr_error *err) {
    for (;;) {
        int wait = -1;
        if (timeout_ms >= 0) {
            double left = (deadline - gr_now_us()) / 1e3;
            if (left <= 0)
                return gr_error_set(err, GR_ERR_SERVICE, c->paths.socket,
                                    "the replay service did not answer within %d s (is it stuck? "
                                    "its log is %s)",
                                    timeout_ms / 1000, c->paths.log);
            wait = (int)left + 1;
        }
        struct pollfd pf = {c->fd, POLLIN, 0};
        int r = poll(&pf, 1, wait);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return gr_error_set(err, GR_ERR_SERVICE, c->paths.socket, "poll: %s", strerror(errno));
        if (r == 0) continue;
        char buf[65536];
        ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n == 0)
            return gr_error_set(err, GR_ERR_SERVICE, c->paths.socket,
                                "the replay service closed the connection before replying (it may "
                                "have stopped or hit a CUDA error; its log is %s)",
                                c->paths.log);
        if (n < 0)
            return gr_error_set(err, GR_ERR_SERVICE, c->paths.socket,
                                "reading the reply: %s (its log is %s)", strerror(errno),
                                c->paths.log);
        if (gr_linebuf_append(&c->in, buf, (size_t)n) != GR_OK)
            return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of memory reading the reply");
        return GR_OK;
    }
}

gr_status gr_client_call(gr_client *c, void *request, int timeout_ms, gr_progress_fn progress,
                         void *user, gr_reply *reply, gr_error *err) {
    memset(reply, 0, sizeof(*reply));
    char *text = json_dumps((json_t *)request, JSON_COMPACT);
    if (!text) return gr_error_set(err, GR_ERR_NOMEM, NULL, "cannot serialize the request");
    size_t n = strlen(text);
    char *line = realloc(text, n + 2);
    if (!line) {
        free(text);
        return gr_error_set(err, GR_ERR_NOMEM, NULL, "out of memory");
    }
    line[n] = '\n';
    line[n + 1] = '\0';
    gr_status st = send_all(c, line, n + 1, err);
    free(line);
    if (st != GR_OK) return st;
    double deadline = gr_now_us() + (double)timeout_ms * 1e3;
    for (;;) {
        char *l;
        size_t len;
        int rc;
        while ((rc = gr_linebuf_next(&c->in, &l, &len)) == 1) {
            if (len == 0) {
                free(l);
                continue;
            }
            gr_reply r;
            gr_error pe;
            gr_error_clear(&pe);
            st = gr_reply_parse(l, len, &r, &pe);
            free(l);
            if (st != GR_OK) {
                gr_reply_clear(&r);
                gr_error_set(err, pe.code, NULL, "%s", pe.msg);
                return err->code;
            }
            if (r.is_progress) {
                if (progress) progress(user, &r);
                gr_reply_clear(&r);
                continue;
            }
            *reply = r;
            return GR_OK;
        }
        if (rc < 0)
            return gr_error_set(err, GR_ERR_PROTOCOL, c->paths.socket,
                                "the service sent a reply line longer than %zu bytes", REPLY_MAX);
        GR_TRY(read_more(c, deadline, timeout_ms, err));
    }
}

gr_status gr_client_wait_gone(gr_client *c, int timeout_ms, gr_error *err) {
    double deadline = gr_now_us() + (double)timeout_ms * 1e3;
    for (;;) {
        double left = (deadline - gr_now_us()) / 1e3;
        if (left <= 0) break;
        struct pollfd pf = {c->fd, POLLIN, 0};
        int r = poll(&pf, 1, (int)left + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        char buf[4096];
        ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* closed: the service is on its way out */
    }
    while (gr_service_lock_held(&c->paths)) {
        if (gr_now_us() > deadline)
            return gr_error_set(err, GR_ERR_SERVICE, c->paths.socket,
                                "the replay service (pid %d) did not exit within %d s (its log is %s)",
                                gr_service_lock_pid(&c->paths), timeout_ms / 1000, c->paths.log);
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return GR_OK;
}

void gr_progress_bar(FILE *f, const char *label, long long done, long long total) {
    int width = 30;
    int fill = total > 0 ? (int)(done * width / total) : width;
    if (fill > width) fill = width;
    fprintf(f, "\r  %-24.24s [", label ? label : "");
    for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', f);
    fprintf(f, "] %lld/%lld steps", done, total);
    if (done >= total) fprintf(f, "\r%*s\r", 80, "");
    fflush(f);
}
