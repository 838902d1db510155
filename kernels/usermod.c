/* User modules and the registry's "user" entry: NVRTC compilation (dlopen'ed) with a content-hash
 * cache, reading kernels' parameter lists from PTX and cubins without a GPU, the argument check,
 * and the load (cuLibraryLoadData, before any capture) and launch (cuLaunchKernelEx) through the
 * driver entry points the CUDA runtime hands out, so nothing links libcuda directly. */
#define _GNU_SOURCE
#include "kernels/usermod.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <nvrtc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/plan.h"

#ifndef GR_NVRTC_BUILD_DIR
#define GR_NVRTC_BUILD_DIR "/usr/local/cuda/lib64"
#endif
#ifndef GR_CUDA_INCLUDE_DIR
#define GR_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

/* ---------- kernels' parameter lists: PTX and cubin ---------- */

void gr_ufuncs_free(gr_ufunc *f, int n) {
    if (!f) return;
    for (int i = 0; i < n; i++) {
        free(f[i].name);
        free(f[i].params);
    }
    free(f);
}

static int add_func(gr_ufunc **list, int *n, int *cap, const char *name, size_t nlen) {
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        gr_ufunc *nl = realloc(*list, (size_t)nc * sizeof(gr_ufunc));
        if (!nl) return -1;
        *list = nl;
        *cap = nc;
    }
    gr_ufunc *f = &(*list)[*n];
    memset(f, 0, sizeof(*f));
    f->name = strndup(name, nlen);
    if (!f->name) return -1;
    (*n)++;
    return 0;
}

static int add_param(gr_ufunc *f, int index, unsigned size, const char *type) {
    if (index < 0 || index > 4096) return -1;
    if (index >= f->nparams) {
        gr_ufunc_param *np = realloc(f->params, (size_t)(index + 1) * sizeof(gr_ufunc_param));
        if (!np) return -1;
        memset(np + f->nparams, 0, (size_t)(index + 1 - f->nparams) * sizeof(gr_ufunc_param));
        f->params = np;
        f->nparams = index + 1;
    }
    f->params[index].size = size;
    snprintf(f->params[index].type, sizeof(f->params[index].type), "%s", type);
    return 0;
}

static unsigned ptx_type_size(const char *t) {
    /* .u8 .s16 .f32 .b64 ... : the digits are bits */
    const char *d = t + 2;
    if (t[0] != '.' || !strchr("usfb", t[1])) return 0;
    unsigned bits = (unsigned)strtoul(d, NULL, 10);
    return bits % 8 == 0 ? bits / 8 : 0;
}

static const char *skip_ws(const char *p, const char *end) {
    for (;;) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
            p++;
        if (p + 1 < end && p[0] == '/' && p[1] == '/') {
            while (p < end && *p != '\n')
                p++;
            continue;
        }
        if (p + 1 < end && p[0] == '/' && p[1] == '*') {
            const char *q = p + 2;
            while (q + 1 < end && !(q[0] == '*' && q[1] == '/'))
                q++;
            p = q + 2 < end ? q + 2 : end;
            continue;
        }
        return p;
    }
}

static const char *ptx_token(const char *p, const char *end, char *tok, size_t size) {
    p = skip_ws(p, end);
    size_t n = 0;
    if (p < end && strchr("(),[];", *p)) {
        tok[0] = *p;
        tok[1] = '\0';
        return p + 1;
    }
    while (p < end && !strchr(" \t\r\n(),[];", *p)) {
        if (n + 1 < size) tok[n++] = *p;
        p++;
    }
    tok[n] = '\0';
    return p;
}

int gr_usermod_ptx_entries(const char *ptx, size_t len, gr_ufunc **out, int *sm) {
    *out = NULL;
    *sm = 0;
    const char *end = ptx + len;
    if (!memmem(ptx, len, ".version", 8) || !memmem(ptx, len, ".target", 7)) return -1;
    const char *t = memmem(ptx, len, ".target", 7);
    if (t) {
        const char *s = t + 7;
        while (s < end && (*s == ' ' || *s == '\t'))
            s++;
        if (end - s > 3 && !strncmp(s, "sm_", 3)) *sm = atoi(s + 3);
    }
    gr_ufunc *list = NULL;
    int n = 0, cap = 0;
    char tok[512];
    const char *p = ptx;
    while (p < end) {
        p = ptx_token(p, end, tok, sizeof(tok));
        if (!tok[0]) {
            if (p >= end) break;
            continue;
        }
        if (strcmp(tok, ".entry") != 0) continue;
        const char *name_start = skip_ws(p, end);
        p = ptx_token(p, end, tok, sizeof(tok));
        if (!tok[0] || add_func(&list, &n, &cap, name_start, strlen(tok)) != 0) break;
        gr_ufunc *f = &list[n - 1];
        const char *q = ptx_token(p, end, tok, sizeof(tok));
        if (strcmp(tok, "(") != 0) continue; /* no parameters */
        p = q;
        int index = 0;
        while (p < end) {
            /* .param [.attrs] .TYPE [.ptr .space] [.align N] NAME [ '[' N ']' ] , or ) */
            p = ptx_token(p, end, tok, sizeof(tok));
            if (!strcmp(tok, ")") || !tok[0]) break;
            if (strcmp(tok, ".param") != 0) continue;
            char type[16] = "";
            unsigned count = 1;
            for (;;) {
                const char *save = p;
                p = ptx_token(p, end, tok, sizeof(tok));
                if (!strcmp(tok, ",") || !strcmp(tok, ")") || !tok[0]) {
                    p = save;
                    break;
                }
                if (!strcmp(tok, "[")) {
                    p = ptx_token(p, end, tok, sizeof(tok));
                    count = (unsigned)strtoul(tok, NULL, 10);
                    p = ptx_token(p, end, tok, sizeof(tok)); /* ] */
                    continue;
                }
                if (!strcmp(tok, ".align")) {
                    p = ptx_token(p, end, tok, sizeof(tok));
                    continue;
                }
                if (tok[0] == '.' && ptx_type_size(tok) && !type[0])
                    snprintf(type, sizeof(type), "%s", tok);
            }
            add_param(f, index++, ptx_type_size(type) * count, type);
            p = ptx_token(p, end, tok, sizeof(tok));
            if (!strcmp(tok, ")")) break;
        }
    }
    *out = list;
    return n;
}

/* ELF64 little-endian, read by offsets (no elf.h structs, so that alignment is never assumed). */
static uint64_t rd64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static uint16_t rd16(const unsigned char *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}

int gr_usermod_elf_entries(const void *elf, size_t len, gr_ufunc **out, int *sm) {
    const unsigned char *d = elf;
    *out = NULL;
    *sm = 0;
    if (len < 64 || memcmp(d, "\177ELF", 4) != 0 || d[4] != 2 || d[5] != 1) return -1;
    if (rd16(d + 0x12) != 190 /* EM_CUDA */) return -1;
    uint32_t flags = rd32(d + 0x30);
    *sm = d[8] >= 8 ? (int)((flags >> 8) & 0xff) : (int)(flags & 0xff);
    uint64_t shoff = rd64(d + 0x28);
    unsigned shentsize = rd16(d + 0x3a), shnum = rd16(d + 0x3c), shstrndx = rd16(d + 0x3e);
    if (shentsize < 64 || shoff > len || (uint64_t)shnum * shentsize > len - shoff ||
        shstrndx >= shnum)
        return -1;
    const unsigned char *strsec = d + shoff + (size_t)shstrndx * shentsize;
    uint64_t stroff = rd64(strsec + 0x18), strsize = rd64(strsec + 0x20);
    if (stroff > len || strsize > len - stroff) return -1;
    gr_ufunc *list = NULL;
    int n = 0, cap = 0;
    /* kernels: the .text.NAME sections that a .nv.info.NAME describes (device functions have none)
     */
    for (int pass = 0; pass < 2; pass++)
        for (unsigned i = 0; i < shnum; i++) {
            const unsigned char *sh = d + shoff + (size_t)i * shentsize;
            uint32_t nameoff = rd32(sh);
            if (nameoff >= strsize) continue;
            const char *name = (const char *)d + stroff + nameoff;
            size_t maxn = strsize - nameoff;
            if (!memchr(name, '\0', maxn) || strncmp(name, ".nv.info.", 9) != 0) continue;
            const char *fn = name + 9;
            uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20);
            if (off > len || size > len - off) continue;
            if (pass == 0) {
                if (add_func(&list, &n, &cap, fn, strlen(fn)) != 0) goto fail;
                continue;
            }
            gr_ufunc *f = NULL;
            for (int k = 0; k < n; k++)
                if (!strcmp(list[k].name, fn)) f = &list[k];
            const unsigned char *a = d + off, *e = a + size;
            while (f && a + 2 <= e) {
                unsigned fmt = a[0], attr = a[1];
                if (fmt == 4) { /* EIFMT_SVAL: u16 size, then the value */
                    if (a + 4 > e) break;
                    unsigned sz = rd16(a + 2);
                    if (a + 4 + sz > e) break;
                    if (attr == 0x17 && sz >= 12) { /* EIATTR_KPARAM_INFO */
                        unsigned ordinal = rd16(a + 8);
                        uint32_t w = rd32(a + 12);
                        if (add_param(f, (int)ordinal, (w >> 18) & 0x3fff, "") != 0) goto fail;
                    }
                    a += 4 + sz;
                } else if (fmt == 3) { /* EIFMT_HVAL: u16 value */
                    a += 4;
                } else if (fmt == 2) { /* EIFMT_BVAL */
                    a += 3;
                } else {
                    a += 2;
                }
            }
        }
    *out = list;
    return n;
fail:
    gr_ufuncs_free(list, n);
    return -1;
}

/* A fatbin's images: the uncompressed ELF for `want_sm` (else the newest <= it of that major),
 * else its PTX. Returns 1 with *img and *ilen set (is_ptx says which), 0 when none can be read
 * here. */
static int fatbin_pick(const unsigned char *d, size_t len, int want_sm, const unsigned char **img,
                       size_t *ilen, int *is_ptx, int *found_sm) {
    const unsigned char *best = NULL, *ptx = NULL;
    size_t best_len = 0, ptx_len = 0;
    int best_sm = -1, ptx_sm = 0;
    size_t pos = 0;
    while (pos + 16 <= len && rd32(d + pos) == 0xBA55ED50u) {
        unsigned hsize = rd16(d + pos + 6);
        uint64_t fsize = rd64(d + pos + 8);
        size_t e = pos + hsize;
        if (fsize > len - pos - hsize) break;
        size_t end = e + (size_t)fsize;
        while (e + 64 <= end) {
            unsigned kind = rd16(d + e);
            uint32_t eh = rd32(d + e + 4);
            uint64_t psize = rd64(d + e + 8);
            unsigned esm = rd32(d + e + 28);
            uint64_t eflags = rd64(d + e + 40);
            if (eh < 64 || psize > end - e - eh) break;
            const unsigned char *payload = d + e + eh;
            int compressed = (eflags & 0xA000) != 0; /* 0x2000 LZ4 (older), 0x8000 zstd */
            if (!compressed && kind == 2 && payload[0] == 0x7f && (int)esm <= want_sm &&
                (int)esm / 10 == want_sm / 10 && (int)esm > best_sm) {
                best = payload;
                best_len = (size_t)psize;
                best_sm = (int)esm;
            }
            if (!compressed && kind == 1 && (int)esm <= want_sm && (int)esm >= ptx_sm) {
                ptx = payload;
                ptx_len = (size_t)psize;
                ptx_sm = (int)esm;
            }
            e += eh + (size_t)psize;
        }
        pos = end;
    }
    if (best) {
        *img = best;
        *ilen = best_len;
        *is_ptx = 0;
        *found_sm = best_sm;
        return 1;
    }
    if (ptx) {
        while (ptx_len && ptx[ptx_len - 1] == '\0')
            ptx_len--;
        *img = ptx;
        *ilen = ptx_len;
        *is_ptx = 1;
        *found_sm = ptx_sm;
        return 1;
    }
    return 0;
}

/* ---------- NVRTC, loaded at first use ---------- */

typedef struct nvrtc_api {
    nvrtcResult (*Version)(int *, int *);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int,
                                 const char *const *, const char *const *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    const char *(*GetErrorString)(nvrtcResult);
} nvrtc_api;

static nvrtc_api nv;
static int nv_state; /* 0 not tried, 1 loaded, -1 failed */
static char nv_why[1024], nv_version[32];
static pthread_mutex_t nv_lock = PTHREAD_MUTEX_INITIALIZER;

#define STR_(x) #x
#define STR(x) STR_(x)

static int nvrtc_load(void) {
    pthread_mutex_lock(&nv_lock);
    if (nv_state == 0) {
        char soname[64], build[600];
        snprintf(soname, sizeof(soname), "libnvrtc.so.%d", CUDA_VERSION / 1000);
        snprintf(build, sizeof(build), "%s/%s", GR_NVRTC_BUILD_DIR, soname);
        const char *tries[] = {soname, "libnvrtc.so", build};
        void *h = NULL;
        size_t o = (size_t)snprintf(nv_why, sizeof(nv_why),
                                    "NVRTC (the CUDA toolkit's runtime compiler) "
                                    "could not be loaded; tried:");
        for (size_t i = 0; i < 3 && !h; i++) {
            h = dlopen(tries[i], RTLD_NOW | RTLD_LOCAL);
            if (!h && o < sizeof(nv_why)) {
                const char *e = dlerror();
                o += (size_t)snprintf(nv_why + o, sizeof(nv_why) - o, " %s (%s);", tries[i],
                                      e ? e : "not loadable");
            }
        }
        if (h) {
#define BIND(f)                                                                                    \
    if (!(*(void **)&nv.f = dlsym(h, "nvrtc" #f))) h = NULL
            BIND(Version);
            if (h) BIND(CreateProgram);
            if (h) BIND(CompileProgram);
            if (h) BIND(GetProgramLogSize);
            if (h) BIND(GetProgramLog);
            if (h) BIND(GetPTXSize);
            if (h) BIND(GetPTX);
            if (h) BIND(GetCUBINSize);
            if (h) BIND(GetCUBIN);
            if (h) BIND(DestroyProgram);
            if (h) BIND(GetErrorString);
#undef BIND
            if (!h)
                snprintf(nv_why, sizeof(nv_why),
                         "the NVRTC library found lacks a symbol (older than CUDA 11.1?)");
        }
        if (h) {
            int ma = 0, mi = 0;
            nv.Version(&ma, &mi);
            snprintf(nv_version, sizeof(nv_version), "%d.%d", ma, mi);
            nv_state = 1;
        } else {
            nv_state = -1;
        }
    }
    int ok = nv_state == 1;
    pthread_mutex_unlock(&nv_lock);
    return ok;
}

int gr_usermod_nvrtc_version(char *out, size_t size) {
    if (!nvrtc_load()) {
        snprintf(out, size, "%s", nv_why);
        return -1;
    }
    snprintf(out, size, "%s", nv_version);
    return 0;
}

/* ---------- the cache ---------- */

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static char cache_override[1024];
static int cache_overridden;
static gr_usermod_stats stats;

void gr_usermod_set_cache_dir(const char *dir) {
    pthread_mutex_lock(&cache_lock);
    cache_overridden = dir != NULL;
    snprintf(cache_override, sizeof(cache_override), "%s", dir ? dir : "");
    pthread_mutex_unlock(&cache_lock);
}

const char *gr_usermod_cache_dir(void) {
    static __thread char buf[1024];
    pthread_mutex_lock(&cache_lock);
    if (cache_overridden)
        snprintf(buf, sizeof(buf), "%s", cache_override);
    else {
        const char *e = getenv("GRAPHRUN_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"),
                   *h = getenv("HOME");
        if (e)
            snprintf(buf, sizeof(buf), "%s", e);
        else if (x && x[0] == '/')
            snprintf(buf, sizeof(buf), "%s/graphrun", x);
        else if (h && h[0])
            snprintf(buf, sizeof(buf), "%s/.cache/graphrun", h);
        else
            buf[0] = '\0';
    }
    pthread_mutex_unlock(&cache_lock);
    return buf;
}

void gr_usermod_get_stats(gr_usermod_stats *out) {
    pthread_mutex_lock(&cache_lock);
    *out = stats;
    pthread_mutex_unlock(&cache_lock);
}

static void count(int *field) {
    pthread_mutex_lock(&cache_lock);
    (*field)++;
    pthread_mutex_unlock(&cache_lock);
}

typedef struct hash128 {
    uint64_t a, b;
} hash128;

static void hfeed(hash128 *h, const void *data, size_t len) {
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h->a = (h->a ^ p[i]) * 0x100000001b3ull;
        h->b = (h->b ^ p[i]) * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
        h->b ^= h->b >> 29;
    }
    /* a separator, so that ("ab", "c") and ("a", "bc") differ */
    h->a = (h->a ^ 0xff) * 0x100000001b3ull;
    h->b = (h->b ^ len) * 0x9E3779B97F4A7C15ull;
}

/* The headers an include directory holds (.h, .cuh, .hpp, .inl, .inc, .cu ...): their names and
 * contents, so that a changed header changes the key (NVRTC does not list what it included); the
 * workload's JSON beside the source does not. Sorted, so the listing order is stable. */
static int read_whole(const char *path, unsigned char **out, size_t *len);

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void hfeed_dir(hash128 *h, const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    char *names[512] = {NULL};
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 512)
        if (e->d_name[0] != '.' && (names[n] = strdup(e->d_name))) n++;
    closedir(d);
    qsort(names, (size_t)n, sizeof(names[0]), cmp_str);
    for (int i = 0; i < n; i++) {
        char path[2048];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        struct stat st;
        const char *ext = strrchr(names[i], '.');
        static const char *const hdr[] = {".h",   ".hh",  ".hpp", ".hxx", ".cuh",
                                          ".inl", ".inc", ".cu",  NULL};
        int is_hdr = 0;
        for (int k = 0; ext && hdr[k]; k++)
            is_hdr |= !strcmp(ext, hdr[k]);
        if (is_hdr && stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (16 << 20)) {
            unsigned char *data = NULL;
            size_t len = 0;
            hfeed(h, names[i], strlen(names[i]));
            if (read_whole(path, &data, &len) == 0) hfeed(h, data, len);
            free(data);
        }
        free(names[i]);
    }
}

static int mkdirs(const char *path) {
    char tmp[1100];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

static int read_whole(const char *path, unsigned char **out, size_t *len) {
    gr_error e;
    gr_error_clear(&e);
    char *text = NULL;
    if (gr_file_read_all(path, GR_FILE_DATA, &text, len, &e) != GR_OK) return -1;
    *out = (unsigned char *)text;
    return 0;
}

static void write_atomic(const char *path, const void *data, size_t len) {
    char tmp[1200];
    snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return;
    int ok = fwrite(data, 1, len, f) == len;
    ok &= fclose(f) == 0;
    if (ok && rename(tmp, path) == 0)
        count(&stats.cache_writes);
    else
        unlink(tmp);
}

/* ---------- module state ---------- */

typedef struct uimpl {
    char arch[16]; /* what the image was made or checked for */
    int failed;    /* 1: the message below is the module's problem */
    char *msg;
    unsigned char *image; /* what the driver loads: cubin, fatbin, or NUL-terminated PTX */
    size_t image_len;
    int nfuncs; /* -1: the parameter lists could not be read here (checked at load) */
    gr_ufunc *funcs;
    CUlibrary lib; /* loaded on the GPU (setup), once */
    int lib_tried;
    char lib_err[2048];
} uimpl;

static void uimpl_free(void *p);

/* cuLibraryUnload through the driver table; declared ahead of the driver section. */
static void driver_unload(CUlibrary lib);

static void uimpl_free(void *p) {
    uimpl *u = p;
    if (!u) return;
    if (u->lib) driver_unload(u->lib);
    gr_ufuncs_free(u->funcs, u->nfuncs > 0 ? u->nfuncs : 0);
    free(u->image);
    free(u->msg);
    free(u);
}

static void reset_impl(uimpl *u) {
    if (u->lib) driver_unload(u->lib);
    gr_ufuncs_free(u->funcs, u->nfuncs > 0 ? u->nfuncs : 0);
    free(u->image);
    free(u->msg);
    memset(u, 0, sizeof(*u));
}

static void set_failed(uimpl *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_failed(uimpl *u, const char *fmt, ...) {
    char *m = malloc(6144);
    if (!m) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, 6144, fmt, ap);
    va_end(ap);
    free(u->msg);
    u->msg = m;
    u->failed = 1;
}

/* A compiler or JIT log as problem lines: NVRTC's "file(12): error: ..." becomes
 * "file:12: error: ...", one line each (the error model is a line per problem); the source echo
 * and caret lines and the "N errors detected" summary are dropped. At most 40 lines, each on a
 * new line of out (which starts with a newline when anything was kept). */
static void format_log(const char *log, char *out, size_t size) {
    size_t o = 0;
    const char *p = log;
    int lines = 0;
    out[0] = '\0';
    while (*p && o + 8 < size) {
        const char *nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        char line[1024];
        snprintf(line, sizeof(line), "%.*s", (int)(l < 1000 ? l : 1000), p);
        p += l + (nl ? 1 : 0);
        size_t lead = strspn(line, " \t\r");
        if (!line[lead] || lead > 0 || strstr(line, " detected in the compilation of ") ||
            !strncmp(line, "Remark", 6))
            continue;
        if (++lines > 40) {
            o += (size_t)snprintf(out + o, size - o, "\n(more compiler messages not shown)");
            break;
        }
        line[strcspn(line, "\r")] = '\0';
        char *paren = strstr(line, "): ");
        char *open = paren;
        while (open && open > line && *open != '(')
            open--;
        if (paren && open && open > line && *open == '(' &&
            strspn(open + 1, "0123456789") == (size_t)(paren - open - 1) && paren > open + 1) {
            *open = '\0';
            *paren = '\0';
            o += (size_t)snprintf(out + o, size - o, "\n%s:%s: %s", line, open + 1, paren + 3);
        } else {
            o += (size_t)snprintf(out + o, size - o, "\n%s", line);
        }
    }
}

/* Records a message of several lines (a headline and compiler messages) as one problem per line,
 * each at `path`: identical lines from another op or variant are counted, not repeated. */
static gr_status set_lines(gr_error *err, gr_status code, const char *path, const char *msg) {
    const char *p = msg;
    while (*p) {
        size_t l = strcspn(p, "\n");
        gr_error_set(err, code, path, "%.*s", (int)l, p);
        p += l;
        if (*p) p++;
    }
    return code;
}

static int arch_sm(const char *arch) {
    return !strncmp(arch, "sm_", 3) ? atoi(arch + 3) : 0;
}

static gr_status compile_source(gr_module *m, uimpl *u, const char *arch) {
    unsigned char *src = NULL;
    size_t slen = 0;
    if (read_whole(m->file, &src, &slen) != 0) {
        set_failed(u, "cannot read \"%s\"", m->file);
        return GR_ERR_INPUT;
    }
    if (!nvrtc_load()) {
        free(src);
        set_failed(u,
                   "%s (install the CUDA toolkit's NVRTC, or give the module as \"ptx\" or "
                   "\"cubin\")",
                   nv_why);
        return GR_ERR_INPUT;
    }
    char archopt[32];
    snprintf(archopt, sizeof(archopt), "-arch=%s", arch);
    const char *opts[GR_MODULE_MAX_OPTIONS + 5];
    int nopts = 0;
    for (int i = 0; i < m->noptions; i++)
        opts[nopts++] = m->options[i];
    opts[nopts++] = archopt;
    opts[nopts++] = "-lineinfo";
    struct stat sst;
    char cudainc[600];
    snprintf(cudainc, sizeof(cudainc), "-I%s", GR_CUDA_INCLUDE_DIR);
    if (stat(GR_CUDA_INCLUDE_DIR, &sst) == 0) opts[nopts++] = cudainc;
    /* CUDA 13 keeps libcu++/CUB/Thrust (cuda/std/..., needed by cooperative_groups.h) in cccl/,
     * which nvcc adds by itself */
    char cccl[620];
    snprintf(cccl, sizeof(cccl), "-I%s/cccl", GR_CUDA_INCLUDE_DIR);
    if (stat(cccl + 2, &sst) == 0) opts[nopts++] = cccl;
    /* the key: source, options, arch, NVRTC's version, the include directories' listings */
    hash128 h = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
    hfeed(&h, src, slen);
    for (int i = 0; i < nopts; i++) {
        hfeed(&h, opts[i], strlen(opts[i]));
        /* the toolkit's headers come with its NVRTC version, hashed below */
        if (!strncmp(opts[i], "-I", 2) && opts[i] != cudainc && opts[i] != cccl)
            hfeed_dir(&h, opts[i] + 2);
    }
    hfeed(&h, nv_version, strlen(nv_version));
    char key[40], dir[1100], cubin_path[1200], ptx_path[1200];
    snprintf(key, sizeof(key), "%016llx%016llx", (unsigned long long)h.a, (unsigned long long)h.b);
    const char *cdir = gr_usermod_cache_dir();
    int use_cache = cdir[0] != '\0';
    if (use_cache) {
        snprintf(dir, sizeof(dir), "%s/nvrtc", cdir);
        snprintf(cubin_path, sizeof(cubin_path), "%s/%s.%s.cubin", dir, key, arch);
        snprintf(ptx_path, sizeof(ptx_path), "%s/%s.%s.ptx", dir, key, arch);
        unsigned char *cub = NULL, *ptx = NULL;
        size_t clen = 0, plen = 0;
        if (read_whole(cubin_path, &cub, &clen) == 0 && read_whole(ptx_path, &ptx, &plen) == 0) {
            int sm = 0;
            u->nfuncs = gr_usermod_ptx_entries((char *)ptx, plen, &u->funcs, &sm);
            free(ptx);
            if (u->nfuncs >= 0) {
                free(src);
                u->image = cub;
                u->image_len = clen;
                count(&stats.cache_hits);
                snprintf(m->status, sizeof(m->status), "NVRTC %s for %s, from the cache (%s)",
                         nv_version, arch, cubin_path);
                return GR_OK;
            }
            u->nfuncs = 0;
        }
        free(cub);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    nvrtcProgram prog;
    char *text = realloc(src, slen + 1);
    if (!text) {
        free(src);
        set_failed(u, "out of memory");
        return GR_ERR_NOMEM;
    }
    text[slen] = '\0';
    nvrtcResult rc = nv.CreateProgram(&prog, text, m->given, 0, NULL, NULL);
    free(text);
    if (rc != NVRTC_SUCCESS) {
        set_failed(u, "NVRTC could not take the source: %s", nv.GetErrorString(rc));
        return GR_ERR_INPUT;
    }
    count(&stats.compiles);
    rc = nv.CompileProgram(prog, nopts, opts);
    size_t loglen = 0;
    nv.GetProgramLogSize(prog, &loglen);
    char *log = malloc(loglen + 1);
    if (log) {
        log[0] = '\0';
        if (loglen) nv.GetProgramLog(prog, log);
        log[loglen] = '\0';
    }
    if (rc != NVRTC_SUCCESS) {
        char shown[4096];
        shown[0] = '\0';
        format_log(log ? log : "", shown, sizeof(shown));
        char optlist[600];
        size_t oo = 0;
        optlist[0] = '\0';
        for (int i = 0; i < m->noptions && oo < sizeof(optlist); i++)
            if (strncmp(m->options[i], "-I", 2) != 0)
                oo += (size_t)snprintf(optlist + oo, sizeof(optlist) - oo, " %s", m->options[i]);
        set_failed(u, "\"%s\" does not compile (NVRTC %s for %s, options:%s)%s%s", m->given,
                   nv_version, arch, oo ? optlist : " none",
                   shown[0] ? "; the compiler says:" : ": ",
                   shown[0] ? shown : nv.GetErrorString(rc));
        free(log);
        nv.DestroyProgram(&prog);
        return GR_ERR_INPUT;
    }
    free(log);
    size_t clen = 0, plen = 0;
    nv.GetCUBINSize(prog, &clen);
    nv.GetPTXSize(prog, &plen);
    unsigned char *cub = malloc(clen ? clen : 1);
    char *ptx = malloc(plen + 1);
    if (!cub || !ptx || nv.GetCUBIN(prog, (char *)cub) != NVRTC_SUCCESS ||
        nv.GetPTX(prog, ptx) != NVRTC_SUCCESS) {
        free(cub);
        free(ptx);
        nv.DestroyProgram(&prog);
        set_failed(u, "NVRTC compiled \"%s\" but gave no cubin/PTX for %s", m->given, arch);
        return GR_ERR_INPUT;
    }
    ptx[plen] = '\0';
    nv.DestroyProgram(&prog);
    while (plen && ptx[plen - 1] == '\0')
        plen--;
    int sm = 0;
    u->nfuncs = gr_usermod_ptx_entries(ptx, plen, &u->funcs, &sm);
    if (u->nfuncs < 0) u->nfuncs = 0;
    u->image = cub;
    u->image_len = clen;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    int cached = 0;
    if (use_cache && mkdirs(dir) == 0) {
        gr_usermod_stats before;
        gr_usermod_get_stats(&before);
        write_atomic(ptx_path, ptx, plen);
        write_atomic(cubin_path, cub, clen);
        gr_usermod_stats after;
        gr_usermod_get_stats(&after);
        cached = after.cache_writes - before.cache_writes == 2;
    }
    free(ptx);
    snprintf(m->status, sizeof(m->status), "NVRTC %s for %s, compiled in %.2f s%s", nv_version,
             arch, secs,
             !use_cache ? " (cache off)"
             : cached   ? ", saved in the cache"
                        : " (the cache is not writable: not saved)");
    return GR_OK;
}

static gr_status read_image(gr_module *m, uimpl *u, const char *arch) {
    unsigned char *data = NULL;
    size_t len = 0;
    if (read_whole(m->file, &data, &len) != 0) {
        set_failed(u, "cannot read \"%s\"", m->file);
        return GR_ERR_INPUT;
    }
    int want = arch_sm(arch), sm = 0;
    const char *kind = gr_module_kind_name(m->kind);
    if (m->kind == GR_MOD_PTX) {
        u->nfuncs = gr_usermod_ptx_entries((char *)data, len, &u->funcs, &sm);
        if (u->nfuncs < 0) {
            free(data);
            set_failed(u, "\"%s\" is not PTX text (no .version/.target)", m->given);
            return GR_ERR_INPUT;
        }
        if (sm > want) {
            free(data);
            set_failed(u,
                       "\"%s\" is PTX for sm_%d; the target is %s, which cannot run it "
                       "(make the PTX for %s or older)",
                       m->given, sm, arch, arch);
            return GR_ERR_INPUT;
        }
        snprintf(m->status, sizeof(m->status), "PTX for sm_%d, JIT-compiled by the driver at load",
                 sm);
    } else if (m->kind == GR_MOD_CUBIN) {
        u->nfuncs = gr_usermod_elf_entries(data, len, &u->funcs, &sm);
        if (u->nfuncs < 0) {
            free(data);
            set_failed(u, "\"%s\" is not a CUDA cubin (ELF for EM_CUDA)", m->given);
            return GR_ERR_INPUT;
        }
        if (sm / 10 != want / 10 || sm > want) {
            free(data);
            set_failed(u,
                       "\"%s\" is a cubin for sm_%d; the target is %s (a cubin runs on its own "
                       "major architecture, same or newer minor): rebuild it with -arch=%s, or "
                       "ship PTX or a fatbin",
                       m->given, sm, arch, arch);
            return GR_ERR_INPUT;
        }
        snprintf(m->status, sizeof(m->status), "cubin for sm_%d", sm);
    } else {
        const unsigned char *img;
        size_t ilen;
        int is_ptx = 0;
        if (len < 16 || rd32(data) != 0xBA55ED50u) {
            free(data);
            set_failed(u, "\"%s\" is not a fatbin (no fatbin header)", m->given);
            return GR_ERR_INPUT;
        }
        if (fatbin_pick(data, len, want, &img, &ilen, &is_ptx, &sm)) {
            int found = sm;
            u->nfuncs = is_ptx ? gr_usermod_ptx_entries((const char *)img, ilen, &u->funcs, &sm)
                               : gr_usermod_elf_entries(img, ilen, &u->funcs, &sm);
            if (u->nfuncs >= 0)
                snprintf(m->status, sizeof(m->status),
                         "fatbin; its %s for sm_%d read for the argument check",
                         is_ptx ? "PTX" : "cubin", found);
            else
                snprintf(m->status, sizeof(m->status),
                         "fatbin whose %s for sm_%d could not be read here: functions and "
                         "arguments are checked at load on the GPU",
                         is_ptx ? "PTX" : "cubin", found);
        } else {
            u->nfuncs = -1;
            snprintf(m->status, sizeof(m->status),
                     "fatbin with no uncompressed image for %s: functions and arguments are "
                     "checked at load on the GPU",
                     arch);
        }
    }
    (void)kind;
    if (m->kind == GR_MOD_PTX) { /* the driver wants NUL-terminated PTX */
        unsigned char *t = realloc(data, len + 1);
        if (!t) {
            free(data);
            set_failed(u, "out of memory");
            return GR_ERR_NOMEM;
        }
        data = t;
        data[len] = '\0';
    }
    u->image = data;
    u->image_len = len;
    return GR_OK;
}

gr_status gr_usermod_prepare(gr_module *m, const char *arch, gr_error *err) {
    pthread_mutex_lock(&m->lock);
    uimpl *u = m->impl;
    if (!u) {
        u = calloc(1, sizeof(*u));
        if (!u) {
            pthread_mutex_unlock(&m->lock);
            return gr_error_set(err, GR_ERR_NOMEM, m->path, "out of memory");
        }
        m->impl = u;
        m->impl_free = uimpl_free;
    }
    gr_status st = GR_OK;
    if (strcmp(u->arch, arch) != 0 || (!u->image && !u->failed)) {
        if (u->lib) { /* loaded for another arch: keep it loaded (it is what runs) */
            pthread_mutex_unlock(&m->lock);
            return GR_OK;
        }
        reset_impl(u);
        snprintf(u->arch, sizeof(u->arch), "%s", arch);
        st = m->kind == GR_MOD_SOURCE ? compile_source(m, u, arch) : read_image(m, u, arch);
    }
    if (u->failed) {
        /* every op and variant of the module records the same lines: shown once, counted each */
        char fpath[128];
        snprintf(fpath, sizeof(fpath), "%s.%s", m->path, gr_module_kind_name(m->kind));
        st = set_lines(err, st != GR_OK ? st : GR_ERR_INPUT, fpath, u->msg ? u->msg : "failed");
    }
    pthread_mutex_unlock(&m->lock);
    return st;
}

/* ---------- the argument check (no GPU) ---------- */

static void target_arch(const gr_target *t, char *out, size_t size) {
    if (t->arch[0])
        snprintf(out, size, "%s", t->arch);
    else
        snprintf(out, size, "sm_%d%d", t->cc_major, t->cc_minor);
}

static int float_type(const char *t) {
    return t[0] == '.' && t[1] == 'f';
}
static int int_type(const char *t) {
    return t[0] == '.' && (t[1] == 'u' || t[1] == 's');
}

static void arg_desc(const gr_plan *plan, const gr_user_arg *a, char *out, size_t size) {
    if (a->type == GR_ARG_BUFFER)
        snprintf(out, size, "buffer \"%s\" (a pointer, 8 bytes)",
                 a->buffer >= 0 ? plan->bufs[a->buffer].name : "?");
    else
        snprintf(out, size, "%s (%zu bytes)", gr_arg_type_name(a->type), gr_arg_size(a->type));
}

static void param_desc(const gr_ufunc_param *p, char *out, size_t size) {
    if (p->type[0] && !strcmp(p->type, ".b8") && p->size != 1)
        snprintf(out, size, "a %u-byte parameter (.b8 array: a struct or array by value)", p->size);
    else if (p->type[0])
        snprintf(out, size, "%s (%u bytes)", p->type, p->size);
    else
        snprintf(out, size, "a %u-byte parameter", p->size);
}

static gr_status check_user(gr_op *op, const gr_plan *plan, gr_error *err) {
    gr_user_op *u = op->user;
    if (!u || !u->module) return gr_error_set(err, GR_ERR_INTERNAL, op->path, "not a user op");
    gr_module *m = u->module;
    char arch[16];
    target_arch(&plan->target, arch, sizeof(arch));
    /* "arch_specific": the architecture's own features (wgmma, setmaxnreg on sm_90a) */
    size_t al = strlen(arch);
    if (m->arch_specific && arch_sm(arch) < 90) {
        char apath[128];
        snprintf(apath, sizeof(apath), "%s.arch_specific", m->path);
        return gr_error_set(err, GR_ERR_INPUT, apath,
                            "the target is %s; architecture-specific code (sm_90a and newer) needs "
                            "compute capability 9.0 or newer",
                            arch);
    }
    if (m->arch_specific && al && arch[al - 1] != 'a' && arch[al - 1] != 'f' &&
        al + 1 < sizeof(arch))
        arch[al] = 'a', arch[al + 1] = '\0';
    gr_status st = gr_usermod_prepare(m, arch, err);
    if (st != GR_OK) return st;
    pthread_mutex_lock(&m->lock);
    uimpl *im = m->impl;
    const gr_ufunc *f = NULL;
    int nfuncs = im->nfuncs;
    for (int i = 0; i < nfuncs; i++)
        if (!strcmp(im->funcs[i].name, u->function)) f = &im->funcs[i];
    char fpath[GR_PATH_MAX + 16];
    snprintf(fpath, sizeof(fpath), "%s.function", op->path);
    if (nfuncs >= 0 && !f) {
        char list[600], hint[400];
        size_t o = 0;
        list[0] = hint[0] = '\0';
        for (int i = 0; i < nfuncs && o < sizeof(list); i++) {
            o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "",
                                  im->funcs[i].name);
            if (!hint[0] && strstr(im->funcs[i].name, u->function))
                snprintf(hint, sizeof(hint),
                         "; \"%.200s\" looks like its C++ (mangled) name: declare the kernel "
                         "extern \"C\" or give that name",
                         im->funcs[i].name);
        }
        st = gr_error_set(err, GR_ERR_INPUT, fpath,
                          "no kernel \"%s\" in module \"%s\" (%s; its kernels: %s)%s", u->function,
                          m->name, m->given, nfuncs ? list : "none", hint);
    } else if (f) {
        char apath[GR_PATH_MAX + 16];
        snprintf(apath, sizeof(apath), "%s.args", op->path);
        if (f->nparams != u->nargs)
            st = gr_error_set(err, GR_ERR_INPUT, apath,
                              "kernel \"%s\" (module \"%s\") takes %d parameter%s; the op gives %d "
                              "argument%s",
                              u->function, m->name, f->nparams, f->nparams == 1 ? "" : "s",
                              u->nargs, u->nargs == 1 ? "" : "s");
        for (int i = 0; i < f->nparams && i < u->nargs; i++) {
            const gr_ufunc_param *p = &f->params[i];
            const gr_user_arg *a = &u->args[i];
            size_t asz = gr_arg_size(a->type);
            int bad = p->size != asz;
            if (!bad && p->type[0] && a->type != GR_ARG_BUFFER) {
                int af = a->type == GR_ARG_F32 || a->type == GR_ARG_F64;
                bad = (af && int_type(p->type)) || (!af && float_type(p->type));
            }
            if (!bad && p->type[0] && a->type == GR_ARG_BUFFER) bad = float_type(p->type);
            if (!bad) continue;
            char want[120], got[160], ipath[GR_PATH_MAX + 32];
            param_desc(p, want, sizeof(want));
            arg_desc(plan, a, got, sizeof(got));
            snprintf(ipath, sizeof(ipath), "%s.args[%d]", op->path, i);
            st = gr_error_set(err, GR_ERR_INPUT, ipath,
                              "kernel \"%s\" (module \"%s\") parameter %d is %s; the op gives %s",
                              u->function, m->name, i, want, got);
        }
    }
    pthread_mutex_unlock(&m->lock);
    return st;
}

/* ---------- the driver, through the runtime's entry points ---------- */

typedef struct drv_api {
    CUresult (*LibraryLoadData)(CUlibrary *, const void *, CUjit_option *, void **, unsigned,
                                CUlibraryOption *, void **, unsigned);
    CUresult (*LibraryUnload)(CUlibrary);
    CUresult (*LibraryGetKernel)(CUkernel *, CUlibrary, const char *);
    CUresult (*KernelGetFunction)(CUfunction *, CUkernel);
    CUresult (*FuncGetParamInfo)(CUfunction, size_t, size_t *, size_t *);
    CUresult (*FuncSetAttribute)(CUfunction, CUfunction_attribute, int);
    CUresult (*FuncGetAttribute)(int *, CUfunction_attribute, CUfunction);
    CUresult (*LaunchKernelEx)(const CUlaunchConfig *, CUfunction, void **, void **);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*CtxGetDevice)(CUdevice *);
    CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
} drv_api;

static drv_api drv;
static int drv_state;
static char drv_why[256];
static pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;

static int drv_load(void) {
    pthread_mutex_lock(&drv_lock);
    if (drv_state == 0) {
        struct {
            const char *name;
            void **slot;
            unsigned ver;
        } syms[] = {
            {"cuLibraryLoadData", (void **)&drv.LibraryLoadData, 12000},
            {"cuLibraryUnload", (void **)&drv.LibraryUnload, 12000},
            {"cuLibraryGetKernel", (void **)&drv.LibraryGetKernel, 12000},
            {"cuKernelGetFunction", (void **)&drv.KernelGetFunction, 12000},
            {"cuFuncGetParamInfo", (void **)&drv.FuncGetParamInfo, 12040},
            {"cuFuncSetAttribute", (void **)&drv.FuncSetAttribute, 12000},
            {"cuFuncGetAttribute", (void **)&drv.FuncGetAttribute, 12000},
            {"cuLaunchKernelEx", (void **)&drv.LaunchKernelEx, 12000},
            {"cuGetErrorName", (void **)&drv.GetErrorName, 12000},
            {"cuCtxGetDevice", (void **)&drv.CtxGetDevice, 12000},
            {"cuDeviceGetAttribute", (void **)&drv.DeviceGetAttribute, 12000},
        };
        drv_state = 1;
        for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
            enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
            cudaError_t rc = cudaGetDriverEntryPointByVersion(syms[i].name, syms[i].slot,
                                                              syms[i].ver, cudaEnableDefault, &q);
            if (rc != cudaSuccess || q != cudaDriverEntryPointSuccess || !*syms[i].slot) {
                /* cuFuncGetParamInfo is optional (driver < 12.4): the PTX/cubin check stands */
                if (syms[i].slot == (void **)&drv.FuncGetParamInfo) {
                    *syms[i].slot = NULL;
                    cudaGetLastError();
                    continue;
                }
                snprintf(drv_why, sizeof(drv_why),
                         "the CUDA driver has no %s (%s): driver too old?", syms[i].name,
                         cudaGetErrorName(rc));
                cudaGetLastError();
                drv_state = -1;
                break;
            }
        }
    }
    int ok = drv_state == 1;
    pthread_mutex_unlock(&drv_lock);
    return ok;
}

static void driver_unload(CUlibrary lib) {
    if (lib && drv_state == 1) drv.LibraryUnload(lib);
}

static const char *cu_name(CUresult r) {
    const char *s = NULL;
    if (drv_state == 1 && drv.GetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
    return "CUDA_ERROR_?";
}

typedef struct ustate {
    CUfunction f;
    void **params;
    uint64_t *storage;
} ustate;

static void teardown_user(void *p) {
    ustate *s = p;
    if (!s) return;
    free(s->params);
    free(s->storage);
    free(s);
}

/* The library once per module (context-independent), then the function in this context. */
static gr_status load_library(gr_module *m, uimpl *im, gr_error *err) {
    if (im->lib) return GR_OK;
    char fpath[128];
    snprintf(fpath, sizeof(fpath), "%s.%s", m->path, gr_module_kind_name(m->kind));
    if (im->lib_tried) return set_lines(err, GR_ERR_INPUT, fpath, im->lib_err);
    im->lib_tried = 1;
    char log[8192];
    log[0] = '\0';
    CUjit_option opt[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)sizeof(log)};
    CUresult r = drv.LibraryLoadData(&im->lib, im->image, opt, val, 2, NULL, NULL, 0);
    if (r == CUDA_SUCCESS) return GR_OK;
    im->lib = NULL;
    char shown[4096];
    shown[0] = '\0';
    format_log(log, shown, sizeof(shown));
    const char *why =
        r == CUDA_ERROR_NO_BINARY_FOR_GPU
            ? "it holds no code for this GPU's architecture (rebuild for it, or ship PTX)"
        : r == CUDA_ERROR_INVALID_PTX ? "the driver rejects the PTX"
        : r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION
            ? "its PTX ISA version is newer than this driver reads (update the driver "
              "or make PTX with an older toolkit)"
            : "the driver cannot load it";
    snprintf(im->lib_err, sizeof(im->lib_err), "loading \"%s\": %s (cuLibraryLoadData: %s)%s%s",
             m->given, why, cu_name(r), shown[0] ? "; the JIT compiler says:" : "", shown);
    return set_lines(err, GR_ERR_INPUT, fpath, im->lib_err);
}

static gr_status setup_user(const gr_op *op, const gr_launch_ctx *ctx, void **state,
                            gr_error *err) {
    const gr_user_op *u = op->user;
    gr_module *m = u->module;
    const gr_plan *plan = ctx->plan;
    if (!drv_load()) return gr_error_set(err, GR_ERR_CUDA, op->path, "%s", drv_why);
    pthread_mutex_lock(&m->lock);
    uimpl *im = m->impl;
    gr_status st = GR_OK;
    CUfunction f = NULL;
    if (!im || !im->image) st = gr_error_set(err, GR_ERR_INTERNAL, m->path, "module not prepared");
    if (st == GR_OK) st = load_library(m, im, err);
    char fpath[GR_PATH_MAX + 16];
    snprintf(fpath, sizeof(fpath), "%s.function", op->path);
    if (st == GR_OK) {
        CUkernel k;
        CUresult r = drv.LibraryGetKernel(&k, im->lib, u->function);
        if (r != CUDA_SUCCESS)
            st =
                gr_error_set(err, GR_ERR_INPUT, fpath, "no kernel \"%s\" in module \"%s\" (%s: %s)",
                             u->function, m->name, "cuLibraryGetKernel", cu_name(r));
        else if ((r = drv.KernelGetFunction(&f, k)) != CUDA_SUCCESS)
            st = gr_error_set(err, GR_ERR_CUDA, fpath, "cuKernelGetFunction: %s", cu_name(r));
    }
    pthread_mutex_unlock(&m->lock);
    if (st != GR_OK) return st;
    /* parameters as the driver sees them (a fatbin whose images are compressed is checked here) */
    if (drv.FuncGetParamInfo) {
        int n = 0;
        size_t off, size;
        char apath[GR_PATH_MAX + 32];
        while (n < 4096 && drv.FuncGetParamInfo(f, (size_t)n, &off, &size) == CUDA_SUCCESS) {
            if (n < u->nargs && size != gr_arg_size(u->args[n].type)) {
                char got[160];
                arg_desc(plan, &u->args[n], got, sizeof(got));
                snprintf(apath, sizeof(apath), "%s.args[%d]", op->path, n);
                st = gr_error_set(err, GR_ERR_INPUT, apath,
                                  "kernel \"%s\" (module \"%s\") parameter %d is a %zu-byte "
                                  "parameter; the op gives %s",
                                  u->function, m->name, n, size, got);
            }
            n++;
        }
        cudaGetLastError();
        if (n != u->nargs) {
            snprintf(apath, sizeof(apath), "%s.args", op->path);
            st = gr_error_set(err, GR_ERR_INPUT, apath,
                              "kernel \"%s\" (module \"%s\") takes %d parameter%s; the op gives %d",
                              u->function, m->name, n, n == 1 ? "" : "s", u->nargs);
        }
        if (st != GR_OK) return st;
    }
    /* device limits: threads per block for this kernel (registers), opt-in shared memory */
    CUdevice dev;
    int maxthreads = 1024, optin = 0, static_smem = 0;
    if (drv.CtxGetDevice(&dev) == CUDA_SUCCESS)
        drv.DeviceGetAttribute(&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev);
    drv.FuncGetAttribute(&maxthreads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f);
    drv.FuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f);
    unsigned threads = op->block[0] * op->block[1] * op->block[2];
    if ((int)threads > maxthreads)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "block of %u threads; kernel \"%s\" can run at most %d per block on "
                            "this GPU (its register use limits it)",
                            threads, u->function, maxthreads);
    if (optin > 0 && op->smem + (size_t)static_smem > (size_t)optin)
        return gr_error_set(err, GR_ERR_INPUT, op->path,
                            "smem %zu bytes + %d static: this GPU allows %d per block", op->smem,
                            static_smem, optin);
    if (op->smem > 48 * 1024) {
        CUresult r =
            drv.FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)op->smem);
        if (r != CUDA_SUCCESS)
            return gr_error_set(err, GR_ERR_INPUT, op->path,
                                "cannot opt in to %zu bytes of dynamic shared memory: %s", op->smem,
                                cu_name(r));
    }
    unsigned cl = u->cluster[0] * u->cluster[1] * u->cluster[2];
    if (cl > 8) {
        CUresult r =
            drv.FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
        if (r != CUDA_SUCCESS)
            return gr_error_set(err, GR_ERR_INPUT, op->path, "clusters of %u blocks: %s", cl,
                                cu_name(r));
    }
    ustate *s = calloc(1, sizeof(*s));
    if (!s) return gr_error_set(err, GR_ERR_NOMEM, op->path, "out of host memory");
    s->f = f;
    s->params = calloc((size_t)u->nargs + 1, sizeof(void *));
    s->storage = calloc((size_t)u->nargs + 1, sizeof(uint64_t));
    if (!s->params || !s->storage) {
        teardown_user(s);
        return gr_error_set(err, GR_ERR_NOMEM, op->path, "out of host memory");
    }
    /* the device pointers are fixed for the device state's life: the argument block is too */
    for (int i = 0; i < u->nargs; i++) {
        const gr_user_arg *a = &u->args[i];
        void *slot = &s->storage[i];
        switch (a->type) {
        case GR_ARG_BUFFER: {
            void *p = ctx->dptr[a->buffer];
            memcpy(slot, &p, sizeof(p));
            break;
        }
        case GR_ARG_I32:
            memcpy(slot, &a->v.i32, 4);
            break;
        case GR_ARG_U32:
            memcpy(slot, &a->v.u32, 4);
            break;
        case GR_ARG_F32:
            memcpy(slot, &a->v.f32, 4);
            break;
        case GR_ARG_I64:
            memcpy(slot, &a->v.i64, 8);
            break;
        case GR_ARG_U64:
            memcpy(slot, &a->v.u64, 8);
            break;
        case GR_ARG_F64:
            memcpy(slot, &a->v.f64, 8);
            break;
        }
        s->params[i] = slot;
    }
    *state = s;
    return GR_OK;
}

static gr_status launch_user(const gr_op *op, const gr_launch_ctx *ctx, gr_error *err) {
    const ustate *s = ctx->op_state;
    const gr_user_op *u = op->user;
    if (!s) return gr_error_set(err, GR_ERR_INTERNAL, op->path, "user op launched without setup");
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.gridDimX = op->grid[0];
    cfg.gridDimY = op->grid[1];
    cfg.gridDimZ = op->grid[2];
    cfg.blockDimX = op->block[0];
    cfg.blockDimY = op->block[1];
    cfg.blockDimZ = op->block[2];
    cfg.sharedMemBytes = (unsigned)op->smem;
    cfg.hStream = (CUstream)ctx->stream;
    CUlaunchAttribute attr[2];
    memset(attr, 0, sizeof(attr));
    unsigned n = 0;
    if (ctx->pdl) { /* ctx->pdl: --pdl and the op declares "pdl": true (gr_op_pdl_capable) */
        attr[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr[n++].value.programmaticStreamSerializationAllowed = 1;
    }
    if (u->cluster[0]) {
        attr[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr[n].value.clusterDim.x = u->cluster[0];
        attr[n].value.clusterDim.y = u->cluster[1];
        attr[n++].value.clusterDim.z = u->cluster[2];
    }
    cfg.attrs = n ? attr : NULL;
    cfg.numAttrs = n;
    CUresult r = drv.LaunchKernelEx(&cfg, s->f, s->params, NULL);
    if (r != CUDA_SUCCESS) {
        gr_error_set(err, GR_ERR_CUDA, op->path, "launching user kernel \"%s\" (module \"%s\"): %s",
                     u->function, u->module->name, cu_name(r));
        snprintf(err->api, sizeof(err->api), "cuLaunchKernelEx");
        snprintf(err->api_error, sizeof(err->api_error), "%s", cu_name(r));
        return GR_ERR_CUDA;
    }
    return GR_OK;
}

const gr_kernel_def gr_user_kernel = {
    .name = GR_USER_KERNEL_NAME,
    .summary = "a kernel from the workload's own modules ({\"module\", \"function\", ...})",
    .inputs_doc = "the buffers the kernel reads",
    .outputs_doc = "the buffers it writes",
    .min_inputs = 0,
    .max_inputs = GR_MAX_INPUTS,
    .min_outputs = 0,
    .max_outputs = GR_MAX_OUTPUTS,
    .flags = GR_KF_USER,
    .check = check_user,
    .launch = launch_user,
    .reference = NULL, /* verified against a "reference" variant, "expect" files, or eager */
    .setup = setup_user,
    .teardown = teardown_user,
};
