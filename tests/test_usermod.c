/* User kernels (issue 24): the workload's "modules" and user ops, NVRTC compilation on the CPU,
 * parameter lists from PTX and cubins, the argument check, the compiled-image cache, every error
 * a user can hit (each named by its JSON path), and graphrun validate on the examples. The
 * gpu_usermod suite runs each module kind, mixed with built-in ops, with PDL and in every
 * capture mode; it skips without a device. */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/capture.h"
#include "core/device.h"
#include "core/expect.h"
#include "core/hoststate.h"
#include "core/plan_print.h"
#include "core/workload.h"
#include "kernels/registry.h"
#include "kernels/usermod.h"
#include "tests.h"

#include <jansson.h>

/* ---------- a scratch directory of kernels and workloads ---------- */

static char tdir[256];

static void rm_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[1024];
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rm_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

static void clean_dir(void) {
    if (tdir[0]) rm_tree(tdir);
}

/* The scratch directory and a cache of this process's own (the user's is never touched). */
static void ensure_dir(void) {
    if (tdir[0]) return;
    snprintf(tdir, sizeof(tdir), "/tmp/gr_usermod_%d", (int)getpid());
    mkdir(tdir, 0755);
    char cache[300];
    snprintf(cache, sizeof(cache), "%s/cache", tdir);
    gr_usermod_set_cache_dir(cache);
    setenv("GRAPHRUN_CACHE_DIR", cache, 1); /* for the graphrun processes the tests start */
    atexit(clean_dir);
}

static const char *put(const char *name, const char *text) {
    ensure_dir();
    static char paths[8][512];
    static int slot;
    char *p = paths[slot++ % 8];
    snprintf(p, 512, "%s/%s", tdir, name);
    FILE *f = fopen(p, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return p;
}

static const char *KERNELS =
    "// test kernels\n"
    "extern \"C\" __global__ void scale(const float *x, float *y, int n, float s) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) y[i] = x[i] * s;\n"
    "}\n"
    "extern \"C\" __global__ void big(const float *x, float *y, long long n, double s) {\n"
    "    extern __shared__ float t[];\n"
    "    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "    t[threadIdx.x] = i < n ? x[i] : 0.f;\n"
    "    __syncthreads();\n"
    "    if (i < n) y[i] = t[threadIdx.x] * (float)s;\n"
    "}\n"
    "__global__ void cxx_name(float *y) { y[0] = 1.f; }\n";

/* A workload around KERNELS: OPS is the op list; EXTRA goes at the top level. */
static const char *workload(const char *ops, const char *extra) {
    static char buf[8192];
    snprintf(buf, sizeof(buf),
             "{\"name\": \"t\", \"modules\": {\"k\": {\"source\": \"k.cu\"}}, %s"
             " \"params\": {\"n\": 1000},"
             " \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [\"n\"], \"init\": "
             "\"normal\"},"
             "  {\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [\"n\"]},"
             "  {\"name\": \"z\", \"dtype\": \"fp32\", \"shape\": [\"n\"]}],"
             " \"outputs\": [\"y\"], \"ops\": [%s]}",
             extra ? extra : "", ops);
    return buf;
}

#define SCALE_OP(args)                                                                             \
    "{\"name\": \"s\", \"module\": \"k\", \"function\": \"scale\", \"grid\": [\"cdiv(n, 256)\"], " \
    "\"block\": [256], \"args\": " args ", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}"

/* Load the workload text as tdir/w.json and resolve every variant for `target` (NULL: default).
 * Returns the first plan (caller destroys it and *wl), or NULL with err filled. */
static gr_plan *load_plan(const char *json, const char *variant, const gr_target *target,
                          gr_workload **wl_out, gr_error *err) {
    put("k.cu", KERNELS);
    const char *path = put("w.json", json);
    gr_workload *wl = NULL;
    *wl_out = NULL;
    if (gr_workload_load_file(path, &wl, err) != GR_OK) return NULL;
    gr_target t = target ? *target : gr_target_default();
    const char *v = gr_workload_variant(wl, variant, err);
    gr_plan *p = NULL;
    if (v) gr_plan_resolve(wl, v, &t, gr_kernel_find, gr_kernel_all_names, &p, err);
    if (!p) {
        gr_workload_destroy(wl);
        return NULL;
    }
    *wl_out = wl;
    return p;
}

/* The message of a workload that must fail (every variant resolved, as validate does). */
static const char *fail_msg(const char *json, const gr_target *target) {
    static char msg[GR_ERROR_MSG_MAX];
    gr_error e;
    gr_error_clear(&e);
    put("k.cu", KERNELS);
    const char *path = put("w.json", json);
    gr_workload *wl = NULL;
    if (gr_workload_load_file(path, &wl, &e) == GR_OK) {
        gr_target t = target ? *target : gr_target_default();
        int n = wl->nvariants ? wl->nvariants : 1;
        for (int i = 0; i < n; i++) {
            gr_plan *p = NULL;
            gr_plan_resolve(wl, wl->nvariants ? wl->variants[i] : "default", &t, gr_kernel_find,
                            gr_kernel_all_names, &p, &e);
            gr_plan_destroy(p);
        }
        gr_workload_destroy(wl);
    }
    snprintf(msg, sizeof(msg), "%s", gr_error_failed(&e) ? e.msg : "(no error)");
    if (gr_error_failed(&e)) CU_ASSERT(e.code == GR_ERR_INPUT || e.code == GR_ERR_USAGE);
    return msg;
}

/* ---------- parsing ---------- */

static void test_parse_user_op(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl;
    const char *ops = SCALE_OP(
        "[\"x\", \"y\", {\"i32\": \"n\"}, {\"f32\": 0.5}]") ","
                                                            "{\"name\": \"b\", \"module\": \"k\", "
                                                            "\"function\": \"big\", \"grid\": [4, "
                                                            "2], \"block\": [\"n // 4\"],"
                                                            " \"smem\": \"(n // 4) * 4\", "
                                                            "\"args\": [\"y\", \"z\", {\"i64\": "
                                                            "5000000000}, {\"f64\": \"n / 8\"}],"
                                                            " \"inputs\": [\"y\"], \"outputs\": "
                                                            "[\"z\"], \"pdl\": true, \"bytes\": "
                                                            "{\"read\": \"n\", \"written\": 12}}";
    gr_plan *p = load_plan(workload(ops, NULL), NULL, NULL, &wl, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->nops, 2);
    CU_ASSERT_EQUAL(p->user_ops, 2);
    CU_ASSERT_EQUAL(p->has_cpu_reference, 0);
    const gr_op *s = &p->ops[0], *b = &p->ops[1];
    CU_ASSERT_PTR_NOT_NULL_FATAL(s->user);
    CU_ASSERT_STRING_EQUAL(s->kernel->name, GR_USER_KERNEL_NAME);
    CU_ASSERT_STRING_EQUAL(s->user->function, "scale");
    CU_ASSERT_STRING_EQUAL(s->user->module->name, "k");
    CU_ASSERT_STRING_EQUAL(s->form, "k.scale");
    CU_ASSERT_EQUAL(s->grid[0], 4);
    CU_ASSERT_EQUAL(s->block[0], 256);
    CU_ASSERT_EQUAL(s->user->nargs, 4);
    CU_ASSERT_EQUAL(s->user->args[0].type, GR_ARG_BUFFER);
    CU_ASSERT_EQUAL(s->user->args[2].type, GR_ARG_I32);
    CU_ASSERT_EQUAL(s->user->args[2].v.i32, 1000);
    CU_ASSERT_EQUAL(s->user->args[3].v.f32, 0.5f);
    CU_ASSERT_EQUAL(s->bytes_read, 4000.0);    /* each input once */
    CU_ASSERT_EQUAL(s->bytes_written, 4000.0); /* each output once */
    CU_ASSERT_EQUAL(s->user->pdl, 0);
    CU_ASSERT_EQUAL(b->grid[0] * b->grid[1], 8);
    CU_ASSERT_EQUAL(b->block[0], 250);
    CU_ASSERT_EQUAL(b->smem, 1000);
    CU_ASSERT_EQUAL(b->user->args[2].v.i64, 5000000000LL);
    CU_ASSERT_EQUAL(b->user->args[3].v.f64, 125.0);
    CU_ASSERT_EQUAL(b->bytes_read, 1000.0);
    CU_ASSERT_EQUAL(b->bytes_written, 12.0);
    CU_ASSERT_EQUAL(b->user->bytes_given, 3);
    CU_ASSERT(gr_op_pdl_capable(b));
    CU_ASSERT(!gr_op_pdl_capable(s));
    CU_ASSERT_EQUAL(p->bytes_read, 5000.0);
    CU_ASSERT_EQUAL(p->kernels, 2);
    char text[600];
    const char *kind = NULL;
    CU_ASSERT_EQUAL(gr_plan_checks_text(p, text, sizeof(text), &kind), 0);
    CU_ASSERT_STRING_EQUAL(kind, "none");
    GR_ASSERT_CONTAINS(text, "nothing but graph == eager");
    /* the plan as JSON says the same */
    json_t *j = gr_plan_to_json(p);
    json_t *ver = json_object_get(j, "verification");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(ver, "against")), "none");
    json_t *u = json_object_get(json_array_get(json_object_get(j, "ops"), 1), "user");
    CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(u, "function")), "big");
    CU_ASSERT_EQUAL(json_array_size(json_object_get(u, "args")), 4);
    json_decref(j);
    /* no CPU reference: the executor says so and what to do, by the op's path */
    gr_hoststate *hs = NULL;
    CU_ASSERT_EQUAL_FATAL(gr_hoststate_create(p, &hs, &e), GR_OK);
    gr_error re;
    gr_error_clear(&re);
    CU_ASSERT_EQUAL(gr_reference_step(p, hs, &re), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(re.msg, "ops[0]: op \"s\" runs the user kernel \"scale\", which has no CPU "
                               "reference: mark a variant \"reference\": true");
    gr_hoststate_destroy(hs);
    /* a copy of the ops (kernels/breakers.c's fixed plan) owns its user ops: both destroyable */
    gr_plan *cp = malloc(sizeof(*cp));
    CU_ASSERT_PTR_NOT_NULL_FATAL(cp);
    *cp = *p;
    cp->bufs = malloc((size_t)p->nbufs * sizeof(gr_buffer));
    cp->ops = malloc((size_t)p->nops * sizeof(gr_op));
    memcpy(cp->bufs, p->bufs, (size_t)p->nbufs * sizeof(gr_buffer));
    memcpy(cp->ops, p->ops, (size_t)p->nops * sizeof(gr_op));
    CU_ASSERT_EQUAL(gr_plan_own_user_ops(cp, &e), GR_OK);
    CU_ASSERT(cp->ops[1].user != p->ops[1].user);
    CU_ASSERT_EQUAL(cp->ops[1].user->args[2].v.i64, 5000000000LL);
    CU_ASSERT(cp->ops[1].user->module == p->ops[1].user->module);
    gr_plan_destroy(cp);
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
}

static void test_reference_variant_and_mix(void) {
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl;
    const char *json =
        "{\"name\": \"t\", \"modules\": {\"k\": {\"source\": \"k.cu\"}}, \"params\": {\"n\": 1000},"
        " \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [\"n\"], \"init\": "
        "\"normal\"},"
        "  {\"name\": \"t\", \"dtype\": \"fp32\", \"shape\": [\"n\"]},"
        "  {\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [\"n\"]}], \"outputs\": [\"y\"],"
        " \"variants\": {"
        "  \"builtin\": {\"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"x\"], \"outputs\": "
        "[\"y\"]}]},"
        "  \"mine\": {\"reference\": true, \"ops\": [" SCALE_OP(
            "[\"x\", \"y\", {\"i32\": \"n\"}, {\"f32\": 1}]") "]},"
                                                              "  \"mixed\": {\"ops\": "
                                                              "[{\"kernel\": \"relu\", \"inputs\": "
                                                              "[\"x\"], \"outputs\": [\"t\"]},"
                                                              "    {\"module\": \"k\", "
                                                              "\"function\": \"scale\", \"grid\": "
                                                              "[4], \"block\": [256],"
                                                              "     \"args\": [\"t\", \"y\", "
                                                              "{\"u32\": \"n\"}, {\"f32\": 2}], "
                                                              "\"inputs\": [\"t\"], \"outputs\": "
                                                              "[\"y\"]}]}}}";
    gr_plan *p = load_plan(json, "builtin", NULL, &wl, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_STRING_EQUAL(wl->reference_variant, "mine");
    CU_ASSERT_EQUAL(p->has_cpu_reference, 1);
    CU_ASSERT_STRING_EQUAL(p->reference_variant, "mine");
    char text[600];
    const char *kind;
    gr_plan_checks_text(p, text, sizeof(text), &kind);
    CU_ASSERT_STRING_EQUAL(kind, "cpu");
    gr_plan_destroy(p);
    gr_workload_destroy(wl);

    p = load_plan(json, "mine", NULL, &wl, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->is_reference_variant, 1);
    CU_ASSERT_STRING_EQUAL(p->reference_variant, "");
    gr_plan_checks_text(p, text, sizeof(text), &kind);
    CU_ASSERT_STRING_EQUAL(kind, "none");
    GR_ASSERT_CONTAINS(text, "this variant is the workload's reference");
    gr_plan_destroy(p);
    gr_workload_destroy(wl);

    p = load_plan(json, "mixed", NULL, &wl, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->nops, 2);
    CU_ASSERT_PTR_NULL(p->ops[0].user);
    CU_ASSERT_PTR_NOT_NULL(p->ops[1].user);
    CU_ASSERT_EQUAL(p->ops[1].user->args[2].type, GR_ARG_U32);
    CU_ASSERT_EQUAL(p->has_cpu_reference, 0);
    gr_plan_checks_text(p, text, sizeof(text), &kind);
    CU_ASSERT_STRING_EQUAL(kind, "variant");
    GR_ASSERT_CONTAINS(text, "variant mine");
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
    if (gr_error_failed(&e)) fprintf(stderr, "\n%s\n", e.msg);
}

/* ---------- parameter lists ---------- */

static void test_ptx_params(void) {
    const char *ptx =
        "//\n// Generated by hand\n//\n.version 8.0\n.target sm_80\n.address_size 64\n"
        "\t// .globl\tk1\n"
        ".visible .entry k1(\n"
        "\t.param .u64 .ptr .global .align 4 k1_param_0, // a pointer\n"
        "\t.param .u32 k1_param_1,\n"
        "\t.param .f32 k1_param_2,\n"
        "\t.param .align 8 .b8 k1_param_3[24],\n"
        "\t.param .f64 k1_param_4\n"
        ")\n{\n\tret;\n}\n"
        ".entry _Z2k2Pf(\n\t.param .u64 _Z2k2Pf_param_0\n)\n{\n\tret;\n}\n"
        ".visible .entry noparams()\n{\n\tret;\n}\n"
        "/* .entry not_me( */\n";
    gr_ufunc *f = NULL;
    int sm = 0;
    int n = gr_usermod_ptx_entries(ptx, strlen(ptx), &f, &sm);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_EQUAL(sm, 80);
    CU_ASSERT_STRING_EQUAL(f[0].name, "k1");
    CU_ASSERT_EQUAL_FATAL(f[0].nparams, 5);
    CU_ASSERT_EQUAL(f[0].params[0].size, 8);
    CU_ASSERT_STRING_EQUAL(f[0].params[0].type, ".u64");
    CU_ASSERT_EQUAL(f[0].params[1].size, 4);
    CU_ASSERT_STRING_EQUAL(f[0].params[2].type, ".f32");
    CU_ASSERT_EQUAL(f[0].params[3].size, 24);
    CU_ASSERT_STRING_EQUAL(f[0].params[3].type, ".b8");
    CU_ASSERT_EQUAL(f[0].params[4].size, 8);
    CU_ASSERT_STRING_EQUAL(f[1].name, "_Z2k2Pf");
    CU_ASSERT_EQUAL(f[1].nparams, 1);
    CU_ASSERT_STRING_EQUAL(f[2].name, "noparams");
    CU_ASSERT_EQUAL(f[2].nparams, 0);
    gr_ufuncs_free(f, n);
    CU_ASSERT_EQUAL(gr_usermod_ptx_entries("hello", 5, &f, &sm), -1);
}

/* The nvcc-built cubin and PTX of workloads/examples/softmax.cu (CMake target gr_examples). */
static const char *example_file(const char *name) {
    static char p[4][1024];
    static int slot;
    char *out = p[slot++ % 4];
    const char *bd = getenv("GR_BUILD_DIR");
    char abs[PATH_MAX];
    if (bd && bd[0] != '/' && realpath(bd, abs)) bd = abs; /* workloads name it from /tmp */
    if (bd)
        snprintf(out, 1024, "%s/examples/%s", bd, name);
    else
        snprintf(out, 1024, "%s/build/examples/%s", GR_SOURCE_DIR, name);
    return out;
}

static void test_cubin_params(void) {
    FILE *f = fopen(example_file("softmax.cubin"), "rb");
    if (!f) {
        gr_test_skip(__func__, "%s missing (cmake --build build --target gr_examples)",
                     example_file("softmax.cubin"));
        return;
    }
    static unsigned char buf[1 << 20];
    size_t len = fread(buf, 1, sizeof(buf), f);
    fclose(f);
    gr_ufunc *fn = NULL;
    int sm = 0;
    int n = gr_usermod_elf_entries(buf, len, &fn, &sm);
    CU_ASSERT_FATAL(n >= 4);
    CU_ASSERT_EQUAL(sm, 90);
    int found = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(fn[i].name, "softmax_fused")) {
            found = 1;
            CU_ASSERT_EQUAL_FATAL(fn[i].nparams, 3);
            CU_ASSERT_EQUAL(fn[i].params[0].size, 8);
            CU_ASSERT_EQUAL(fn[i].params[1].size, 8);
            CU_ASSERT_EQUAL(fn[i].params[2].size, 4);
        }
        if (!strcmp(fn[i].name, "row_normalize")) CU_ASSERT_EQUAL(fn[i].nparams, 6);
    }
    CU_ASSERT(found);
    gr_ufuncs_free(fn, n);
    CU_ASSERT_EQUAL(gr_usermod_elf_entries("\177ELFnot really", 14, &fn, &sm), -1);
}

/* ---------- NVRTC on the CPU, and the cache ---------- */

static void test_nvrtc_compile_and_cache(void) {
    ensure_dir();
    char ver[1100];
    if (gr_usermod_nvrtc_version(ver, sizeof(ver)) != 0) {
        gr_test_skip(__func__, "%s", ver);
        return;
    }
    char cache[300];
    snprintf(cache, sizeof(cache), "%s/cache_fresh", tdir);
    gr_usermod_set_cache_dir(cache);
    gr_usermod_stats s0, s1, s2;
    gr_usermod_get_stats(&s0);
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl;
    gr_plan *p =
        load_plan(workload(SCALE_OP("[\"x\", \"y\", {\"i32\": \"n\"}, {\"f32\": 2}]"), NULL), NULL,
                  NULL, &wl, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_usermod_get_stats(&s1);
    CU_ASSERT_EQUAL(s1.compiles, s0.compiles + 1);
    CU_ASSERT_EQUAL(s1.cache_writes, s0.cache_writes + 2);
    GR_ASSERT_CONTAINS(wl->modules[0]->status, "NVRTC");
    GR_ASSERT_CONTAINS(wl->modules[0]->status, "sm_90");
    GR_ASSERT_CONTAINS(wl->modules[0]->status, "saved in the cache");
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
    /* a second load (a new process would be the same): from the cache, no compilation */
    p = load_plan(workload(SCALE_OP("[\"x\", \"y\", {\"i32\": \"n\"}, {\"f32\": 2}]"), NULL), NULL,
                  NULL, &wl, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_usermod_get_stats(&s2);
    CU_ASSERT_EQUAL(s2.compiles, s1.compiles);
    CU_ASSERT_EQUAL(s2.cache_hits, s1.cache_hits + 1);
    GR_ASSERT_CONTAINS(wl->modules[0]->status, "from the cache");
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
    /* another architecture is another image */
    gr_target t = gr_target_default();
    CU_ASSERT_EQUAL(gr_target_set_arch(&t, "sm_80", &e), GR_OK);
    p = load_plan(workload(SCALE_OP("[\"x\", \"y\", {\"i32\": \"n\"}, {\"f32\": 2}]"), NULL), NULL,
                  &t, &wl, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    GR_ASSERT_CONTAINS(wl->modules[0]->status, "sm_80");
    gr_usermod_get_stats(&s1);
    CU_ASSERT_EQUAL(s1.compiles, s2.compiles + 1);
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
    /* an unwritable cache never fails a run */
    gr_usermod_set_cache_dir("/proc/graphrun_cache_cannot_be_here");
    put("k.cu", KERNELS);
    p = load_plan(workload(SCALE_OP("[\"x\", \"y\", {\"i32\": \"n\"}, {\"f32\": 2}]"), NULL), NULL,
                  NULL, &wl, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    GR_ASSERT_CONTAINS(wl->modules[0]->status, "the cache is not writable: not saved");
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
    gr_usermod_set_cache_dir("");
    CU_ASSERT_STRING_EQUAL(gr_usermod_cache_dir(), "");
    snprintf(cache, sizeof(cache), "%s/cache", tdir);
    gr_usermod_set_cache_dir(cache);
    if (gr_error_failed(&e)) fprintf(stderr, "\n%s\n", e.msg);
}

/* The toolkit's device headers (fp16, bf16, cooperative groups, which needs CCCL's cuda/std)
 * are found as nvcc finds them. */
static void test_nvrtc_toolkit_headers(void) {
    char ver[1100];
    if (gr_usermod_nvrtc_version(ver, sizeof(ver)) != 0) {
        gr_test_skip(__func__, "%s", ver);
        return;
    }
    put("h.cu", "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cooperative_groups.h>\n"
                "extern \"C\" __global__ void hk(const __half *x, __nv_bfloat16 *y, int n) {\n"
                "    cooperative_groups::this_thread_block().sync();\n"
                "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                "    if (i < n) y[i] = __float2bfloat16(__half2float(x[i]));\n}\n");
    const char *m = fail_msg(
        "{\"name\": \"h\", \"modules\": {\"m\": {\"source\": \"h.cu\"}},"
        " \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp16\", \"shape\": [256], \"init\": "
        "\"normal\"},"
        " {\"name\": \"y\", \"dtype\": \"bf16\", \"shape\": [256]}], \"outputs\": [\"y\"],"
        " \"ops\": [{\"module\": \"m\", \"function\": \"hk\", \"grid\": [1], \"block\": [256],"
        " \"args\": [\"x\", \"y\", {\"i32\": 256}], \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]}",
        NULL);
    CU_ASSERT_STRING_EQUAL(m, "(no error)");
}

/* "arch_specific": true compiles for sm_90a, where the architecture's own instructions are */
static void test_arch_specific(void) {
    char ver[1100];
    if (gr_usermod_nvrtc_version(ver, sizeof(ver)) != 0) {
        gr_test_skip(__func__, "%s", ver);
        return;
    }
    put("a.cu", "extern \"C\" __global__ void setmax(float *y) {\n"
                "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
                "    asm volatile(\"setmaxnreg.inc.sync.aligned.u32 240;\");\n"
                "#else\n"
                "    y[0] = not_sm90a;\n"
                "#endif\n}\n");
    const char *tmpl =
        "{\"name\": \"a\", \"modules\": {\"m\": {\"source\": \"a.cu\"%s}},"
        " \"buffers\": [{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [4]}],"
        " \"outputs\": [\"y\"], \"ops\": [{\"module\": \"m\", \"function\": "
        "\"setmax\", \"grid\": [1], \"block\": [128], \"args\": [\"y\"], \"inputs\": [],"
        " \"outputs\": [\"y\"]}]}";
    char json[1024];
    snprintf(json, sizeof(json), tmpl, ", \"arch_specific\": true");
    const char *m = fail_msg(json, NULL);
    CU_ASSERT_STRING_EQUAL(m, "(no error)");
    gr_target t = gr_target_default();
    gr_error e;
    gr_error_clear(&e);
    gr_target_set_arch(&t, "sm_86", &e);
    GR_ASSERT_CONTAINS(fail_msg(json, &t), "modules.m.arch_specific: the target is sm_86; "
                                           "architecture-specific code");
    snprintf(json, sizeof(json), tmpl, "");
    GR_ASSERT_CONTAINS(fail_msg(json, NULL),
                       "a.cu:5: error: identifier \"not_sm90a\" is undefined");
}

/* ---------- the argument check ---------- */

static void test_arg_check(void) {
    /* count */
    const char *m = fail_msg(workload(SCALE_OP("[\"x\", \"y\", {\"i32\": \"n\"}]"), NULL), NULL);
    GR_ASSERT_CONTAINS(
        m, "ops[0].args: kernel \"scale\" (module \"k\") takes 4 parameters; the op gives 3");
    /* size: an 8-byte scalar where the kernel takes an int */
    m = fail_msg(workload(SCALE_OP("[\"x\", \"y\", {\"i64\": \"n\"}, {\"f32\": 1}]"), NULL), NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].args[2]: kernel \"scale\" (module \"k\") parameter 2 is .u32 (4 "
                          "bytes); the op gives i64 (8 bytes)");
    /* kind: a float where the kernel takes an int, a buffer where it takes a double */
    m = fail_msg(workload(SCALE_OP("[\"x\", \"y\", {\"f32\": \"n\"}, {\"i32\": 1}]"), NULL), NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].args[2]: kernel \"scale\" (module \"k\") parameter 2 is .u32 (4 "
                          "bytes); the op gives f32 (4 bytes)");
    GR_ASSERT_CONTAINS(m, "ops[0].args[3]: kernel \"scale\" (module \"k\") parameter 3 is .f32 (4 "
                          "bytes); the op gives i32 (4 bytes)");
    m = fail_msg(
        workload("{\"module\": \"k\", \"function\": \"big\", \"grid\": [4], \"block\": [256],"
                 " \"args\": [\"x\", \"y\", {\"i64\": \"n\"}, \"x\"], \"inputs\": [\"x\"], "
                 "\"outputs\": [\"y\"]}",
                 NULL),
        NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].args[3]: kernel \"big\" (module \"k\") parameter 3 is .f64 (8 "
                          "bytes); the op gives buffer \"x\" (a pointer, 8 bytes)");
    /* a C++ kernel is found by its mangled name, and its plain name gets a hint */
    m = fail_msg(
        workload("{\"module\": \"k\", \"function\": \"cxx_name\", \"grid\": [1], \"block\": [1],"
                 " \"args\": [\"y\"], \"inputs\": [], \"outputs\": [\"y\"]}",
                 NULL),
        NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].function: no kernel \"cxx_name\" in module \"k\"");
    GR_ASSERT_CONTAINS(m, "\"_Z8cxx_namePf\" looks like its C++ (mangled) name");
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl;
    gr_plan *p = load_plan(
        workload("{\"module\": \"k\", \"function\": \"_Z8cxx_namePf\", \"grid\": [1],"
                 " \"block\": [1], \"args\": [\"y\"], \"inputs\": [], \"outputs\": [\"y\"]}",
                 NULL),
        NULL, NULL, &wl, &e);
    CU_ASSERT_PTR_NOT_NULL(p);
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
}

/* ---------- every error of the issue, each named by its JSON path ---------- */

static void test_errors_files_and_modules(void) {
    const char *m = fail_msg("{\"name\": \"t\", \"modules\": {\"k\": {\"source\": \"nope.cu\"}},"
                             " \"buffers\": [], \"outputs\": [\"y\"], \"ops\": []}",
                             NULL);
    GR_ASSERT_CONTAINS(m, "modules.k.source: file \"");
    GR_ASSERT_CONTAINS(m, "nope.cu\" not found (paths are relative to the workload file)");
    m = fail_msg(
        "{\"name\": \"t\", \"modules\": {\"k\": {\"source\": \"k.cu\", \"ptx\": \"k.ptx\"},"
        " \"p\": {\"ptx\": \"k.cu\", \"options\": [\"-G\"]}, \"q\": {\"source\": \"k.cu\", "
        "\"options\": [\"-arch=sm_80\"]},"
        " \"r\": {\"source\": \"k.cu\", \"optoins\": []}, \"s\": {\"source\": \"k.cu\", "
        "\"include\": [\"no_such_dir\"]}},"
        " \"buffers\": [], \"outputs\": [\"y\"], \"ops\": []}",
        NULL);
    GR_ASSERT_CONTAINS(m, "modules.k: names more than one file");
    GR_ASSERT_CONTAINS(m, "modules.p: \"options\" applies to \"source\" modules only");
    GR_ASSERT_CONTAINS(m,
                       "modules.q: options[0]: \"-arch=sm_80\": the architecture is the GPU's own");
    GR_ASSERT_CONTAINS(m, "modules.r: unknown key \"optoins\" in a module");
    GR_ASSERT_CONTAINS(m, "modules.s.include[0]: directory \"");
    /* unknown module, unknown key of a user op, "kernel": "user" */
    m = fail_msg(workload("{\"module\": \"kk\", \"function\": \"scale\", \"grid\": [4], \"block\": "
                          "[256], \"args\": [],"
                          " \"inputs\": [], \"outputs\": [\"y\"], \"threads\": 3},"
                          "{\"kernel\": \"user\", \"inputs\": [], \"outputs\": [\"y\"]}",
                          NULL),
                 NULL);
    GR_ASSERT_CONTAINS(m, "ops[0]: unknown key \"threads\" in a user op");
    GR_ASSERT_CONTAINS(m, "ops[1].kernel: unknown kernel \"user\"");
    m = fail_msg(workload("{\"module\": \"kk\", \"function\": \"scale\", \"grid\": [4], \"block\": "
                          "[256], \"args\": [],"
                          " \"inputs\": [], \"outputs\": [\"y\"]}",
                          NULL),
                 NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].module: unknown module \"kk\" (modules: k)");
    /* two reference variants */
    m = fail_msg(
        "{\"name\": \"t\", \"buffers\": [{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [4]}],"
        " \"outputs\": [\"y\"], \"variants\": {\"a\": {\"reference\": true, \"ops\": []},"
        " \"b\": {\"reference\": true, \"ops\": []}, \"c\": {\"reference\": 1, \"ops\": []}}}",
        NULL);
    GR_ASSERT_CONTAINS(m, "variants.b.reference: variant \"a\" is already the reference");
    GR_ASSERT_CONTAINS(m, "variants.c.reference: expected true or false, got an integer");
}

static void test_errors_compile(void) {
    char ver[1100];
    if (gr_usermod_nvrtc_version(ver, sizeof(ver)) != 0) {
        gr_test_skip(__func__, "%s", ver);
        return;
    }
    put("bad.cu", "extern \"C\" __global__ void f(float *y) {\n"
                  "    y[0] = 1.f;\n"
                  "    y[1] = undeclared_thing;\n"
                  "}\n");
    const char *m =
        fail_msg("{\"name\": \"t\", \"modules\": {\"b\": {\"source\": \"bad.cu\"}},"
                 " \"buffers\": [{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [4]}],"
                 " \"outputs\": [\"y\"], \"variants\": {"
                 " \"v1\": {\"ops\": [{\"module\": \"b\", \"function\": \"f\", \"grid\": [1], "
                 "\"block\": [1],"
                 "  \"args\": [\"y\"], \"inputs\": [], \"outputs\": [\"y\"]}]},"
                 " \"v2\": {\"ops\": [{\"module\": \"b\", \"function\": \"f\", \"grid\": [1], "
                 "\"block\": [1],"
                 "  \"args\": [\"y\"], \"inputs\": [], \"outputs\": [\"y\"]}]}}}",
                 NULL);
    GR_ASSERT_CONTAINS(m, "modules.b.source: \"bad.cu\" does not compile");
    GR_ASSERT_CONTAINS(m, "bad.cu:3: error: identifier \"undeclared_thing\" is undefined");
    /* reported once, not once per op or variant */
    const char *second = strstr(m, "does not compile");
    CU_ASSERT(second && !strstr(second + 1, "does not compile"));
}

static void test_errors_args_and_limits(void) {
    const char *m =
        fail_msg(workload(SCALE_OP("[\"x\", \"yy\", {\"i32\": \"n\"}, {\"f32\": 1}]"), NULL), NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].args[1]: unknown buffer \"yy\" (did you mean \"y\"?)");
    m = fail_msg(workload(SCALE_OP("[\"x\", \"z\", {\"i32\": \"n\"}, {\"f32\": 1}]"), NULL), NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].args[1]: buffer \"z\" is passed to the kernel but is not in the "
                          "op's \"inputs\" or \"outputs\"");
    m = fail_msg(workload(SCALE_OP("[\"x\", \"y\", {\"i32\": 3000000000}, {\"f32\": 1e39}]"), NULL),
                 NULL);
    GR_ASSERT_CONTAINS(
        m, "ops[0].args[2].i32: 3000000000 is out of i32's range [-2147483648, 2147483647]");
    GR_ASSERT_CONTAINS(m, "ops[0].args[3].f32: 9.9999999999999994e+38 is out of f32's range "
                          "finite, |x| <= 3.4028235e38");
    m = fail_msg(
        workload(SCALE_OP("[\"x\", \"y\", {\"u32\": \"n - 1001\"}, {\"i32\": 1.5}]"), NULL), NULL);
    GR_ASSERT_CONTAINS(
        m, "ops[0].args[2].u32: -1 (\"n - 1001\") is out of u32's range [0, 4294967295]");
    GR_ASSERT_CONTAINS(m, "ops[0].args[3].i32: i32 takes a whole number, got 1.5");
    m = fail_msg(workload(SCALE_OP("[\"x\", \"y\", {\"i16\": 1}, 7]"), NULL), NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].args[2]: expected a buffer name or one scalar {\"TYPE\": VALUE}");
    GR_ASSERT_CONTAINS(m, "ops[0].args[3]: expected a buffer name or a scalar");
    /* launch limits */
    m = fail_msg(
        workload("{\"module\": \"k\", \"function\": \"scale\", \"grid\": [4], \"block\": [64, 32],"
                 " \"args\": [\"x\", \"y\", {\"i32\": \"n\"}, {\"f32\": 1}], \"inputs\": [\"x\"], "
                 "\"outputs\": [\"y\"]},"
                 "{\"module\": \"k\", \"function\": \"scale\", \"grid\": [4, 1, 1, 1], \"block\": "
                 "[2048],"
                 " \"args\": [\"x\", \"y\", {\"i32\": \"n\"}, {\"f32\": 1}], \"inputs\": [\"x\"], "
                 "\"outputs\": [\"y\"]}",
                 NULL),
        NULL);
    GR_ASSERT_CONTAINS(m, "ops[0]: block: 64 x 32 x 1 = 2048 threads; a block has at most 1024");
    GR_ASSERT_CONTAINS(m, "ops[1].grid: expected 1 to 3 dimensions");
    GR_ASSERT_CONTAINS(m, "ops[1].block[0]: 2048 is out of range [1, 1024]");
    m = fail_msg(workload("{\"module\": \"k\", \"function\": \"big\", \"grid\": [4], \"block\": "
                          "[256], \"smem\": \"300 * 1024\","
                          " \"args\": [\"x\", \"y\", {\"i64\": \"n\"}, {\"f64\": 1}], \"inputs\": "
                          "[\"x\"], \"outputs\": [\"y\"]}",
                          NULL),
                 NULL);
    GR_ASSERT_CONTAINS(m, "ops[0].smem: 307200 bytes of dynamic shared memory; NVIDIA H200");
    GR_ASSERT_CONTAINS(m, "allows at most 232448 per block");
    gr_target t = gr_target_default();
    gr_error e;
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_target_set_arch(&t, "sm_86", &e), GR_OK);
    m = fail_msg(workload("{\"module\": \"k\", \"function\": \"big\", \"grid\": [4], \"block\": "
                          "[256], \"smem\": 120000,"
                          " \"args\": [\"x\", \"y\", {\"i64\": \"n\"}, {\"f64\": 1}], \"inputs\": "
                          "[\"x\"], \"outputs\": [\"y\"], \"cluster\": [2]}",
                          NULL),
                 &t);
    GR_ASSERT_CONTAINS(m, "ops[0].smem: 120000 bytes of dynamic shared memory; sm_86");
    GR_ASSERT_CONTAINS(m, "allows at most 101376");
    GR_ASSERT_CONTAINS(m, "ops[0].cluster: thread-block clusters need compute capability 9.0");
    m = fail_msg(
        workload("{\"module\": \"k\", \"function\": \"big\", \"grid\": [5], \"block\": [256],"
                 " \"args\": [\"x\", \"y\", {\"i64\": \"n\"}, {\"f64\": 1}], \"inputs\": [\"x\"], "
                 "\"outputs\": [\"y\"], \"cluster\": [2]}",
                 NULL),
        NULL);
    GR_ASSERT_CONTAINS(
        m, "ops[0].cluster: grid dimension 0 (5) is not a multiple of the cluster's (2)");
    CU_ASSERT_EQUAL(gr_target_set_arch(&t, "sm_2", &e), GR_ERR_USAGE);
    GR_ASSERT_CONTAINS(e.msg, "--arch: \"sm_2\"");
    gr_error_clear(&e);
    CU_ASSERT_EQUAL(gr_target_set_arch(&t, "sm_90a", &e), GR_OK);
    CU_ASSERT_STRING_EQUAL(t.arch, "sm_90a");
    CU_ASSERT_EQUAL(gr_target_set_arch(&t, "8.9", &e), GR_OK);
    CU_ASSERT_EQUAL(t.cc_major * 10 + t.cc_minor, 89);
}

/* PTX for a newer architecture, a cubin for another one, a file that is not what it says */
static void test_errors_images(void) {
    put("new.ptx", ".version 8.8\n.target sm_100\n.address_size 64\n.visible .entry f(\n.param "
                   ".u64 p\n)\n{\nret;\n}\n");
    put("notptx.ptx", "hello\n");
    const char *m = fail_msg("{\"name\": \"t\", \"modules\": {\"p\": {\"ptx\": \"new.ptx\"}, "
                             "\"q\": {\"ptx\": \"notptx.ptx\"},"
                             " \"c\": {\"cubin\": \"new.ptx\"}, \"f\": {\"fatbin\": \"new.ptx\"}},"
                             " \"buffers\": [{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": "
                             "[4]}], \"outputs\": [\"y\"], \"ops\": ["
                             " {\"module\": \"p\", \"function\": \"f\", \"grid\": [1], \"block\": "
                             "[1], \"args\": [\"y\"], \"inputs\": [], \"outputs\": [\"y\"]},"
                             " {\"module\": \"q\", \"function\": \"f\", \"grid\": [1], \"block\": "
                             "[1], \"args\": [\"y\"], \"inputs\": [], \"outputs\": [\"y\"]},"
                             " {\"module\": \"c\", \"function\": \"f\", \"grid\": [1], \"block\": "
                             "[1], \"args\": [\"y\"], \"inputs\": [], \"outputs\": [\"y\"]},"
                             " {\"module\": \"f\", \"function\": \"f\", \"grid\": [1], \"block\": "
                             "[1], \"args\": [\"y\"], \"inputs\": [], \"outputs\": [\"y\"]}]}",
                             NULL);
    GR_ASSERT_CONTAINS(m, "modules.p.ptx: \"new.ptx\" is PTX for sm_100; the target is sm_90");
    GR_ASSERT_CONTAINS(m, "modules.q.ptx: \"notptx.ptx\" is not PTX text");
    GR_ASSERT_CONTAINS(m, "modules.c.cubin: \"new.ptx\" is not a CUDA cubin");
    GR_ASSERT_CONTAINS(m, "modules.f.fatbin: \"new.ptx\" is not a fatbin");
    if (access(example_file("softmax.cubin"), R_OK) != 0) {
        gr_test_skip(__func__, "%s missing (cmake --build build --target gr_examples)",
                     example_file("softmax.cubin"));
        return;
    }
    char json[2048];
    snprintf(json, sizeof(json),
             "{\"name\": \"t\", \"modules\": {\"c\": {\"cubin\": \"%s\"}},"
             " \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": "
             "\"normal\"}, {\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [4]}],"
             " \"outputs\": [\"y\"], \"ops\": [{\"module\": \"c\", \"function\": "
             "\"softmax_fused\", \"grid\": [1], \"block\": [32],"
             " \"smem\": 16, \"args\": [\"x\", \"y\", {\"i32\": 4}], \"inputs\": [\"x\"], "
             "\"outputs\": [\"y\"]}]}",
             example_file("softmax.cubin"));
    gr_target t = gr_target_default();
    gr_error e;
    gr_error_clear(&e);
    gr_target_set_arch(&t, "sm_80", &e);
    m = fail_msg(json, &t);
    GR_ASSERT_CONTAINS(m, "modules.c.cubin: \"");
    GR_ASSERT_CONTAINS(m, "softmax.cubin\" is a cubin for sm_90; the target is sm_80");
    m = fail_msg(json, NULL);
    if (strcmp(m, "(no error)") != 0) fprintf(stderr, "\n%s\n", m);
    CU_ASSERT_STRING_EQUAL(m, "(no error)");
    /* a compressed fatbin cannot be read here: a wrong call passes validation, the GPU checks it */
    if (access(example_file("softmax_z.fatbin"), R_OK) == 0) {
        snprintf(json, sizeof(json),
                 "{\"name\": \"t\", \"modules\": {\"z\": {\"fatbin\": \"%s\"}},"
                 " \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [4], \"init\": "
                 "\"normal\"}, {\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [4]}],"
                 " \"outputs\": [\"y\"], \"ops\": [{\"module\": \"z\", \"function\": \"no_such\", "
                 "\"grid\": [1], \"block\": [32], \"args\": [\"x\"], \"inputs\": [\"x\"], "
                 "\"outputs\": [\"y\"]}]}",
                 example_file("softmax_z.fatbin"));
        gr_workload *wl;
        gr_plan *p = load_plan(json, NULL, NULL, &wl, &e);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        GR_ASSERT_CONTAINS(wl->modules[0]->status, "checked at load on the GPU");
        gr_plan_destroy(p);
        gr_workload_destroy(wl);
    }
}

/* "expect": raw and .npy files checked against the buffer at resolve */
static void test_expect_files(void) {
    float raw[4] = {1, 2, 3, 4};
    FILE *f = fopen(put("y4.bin", ""), "wb");
    fwrite(raw, sizeof(float), 4, f);
    fclose(f);
    const char *hdr = "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }";
    f = fopen(put("y4i.npy", ""), "wb");
    unsigned short hl = (unsigned short)strlen(hdr);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&hl, 2, 1, f);
    fwrite(hdr, 1, hl, f);
    fwrite(raw, sizeof(float), 4, f);
    fclose(f);
    const char *tmpl =
        "{\"name\": \"t\", \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [%d], "
        "\"init\": \"ones\"},"
        " {\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [%d]}],"
        " \"outputs\": [{\"buffer\": \"y\", \"expect\": {\"file\": \"%s\"}}],"
        " \"ops\": [{\"kernel\": \"relu\", \"inputs\": [\"x\"], \"outputs\": [\"y\"]}]}";
    char json[1024];
    snprintf(json, sizeof(json), tmpl, 4, 4, "y4.bin");
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl;
    gr_plan *p = load_plan(json, NULL, NULL, &wl, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->expect_outputs, 1);
    const gr_buffer *y = &p->bufs[1];
    float back[4] = {0};
    CU_ASSERT_EQUAL(gr_expect_read(y, back, &e), GR_OK);
    CU_ASSERT_EQUAL(back[3], 4.0f);
    char text[600];
    const char *kind;
    gr_plan_checks_text(p, text, sizeof(text), &kind);
    CU_ASSERT_STRING_EQUAL(kind, "cpu");
    GR_ASSERT_CONTAINS(text, "and expected data from files (y)");
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
    snprintf(json, sizeof(json), tmpl, 5, 5, "y4.bin");
    GR_ASSERT_CONTAINS(fail_msg(json, NULL), "outputs[0].expect.file: file \"");
    GR_ASSERT_CONTAINS(fail_msg(json, NULL),
                       "y4.bin\" has 16 bytes; buffer \"y\" (fp32, 5 elements) needs exactly 20");
    snprintf(json, sizeof(json), tmpl, 4, 4, "y4i.npy");
    GR_ASSERT_CONTAINS(fail_msg(json, NULL), "outputs[0].expect.file: \"");
    GR_ASSERT_CONTAINS(fail_msg(json, NULL),
                       "y4i.npy\" holds dtype '<i4'; buffer \"y\" is fp32 (save it as '<f4')");
    snprintf(json, sizeof(json), tmpl, 4, 4, "missing.npy");
    GR_ASSERT_CONTAINS(fail_msg(json, NULL), "outputs[0].expect.file: ");
    GR_ASSERT_CONTAINS(fail_msg(json, NULL), "missing.npy");
}

/* ---------- graphrun validate on the examples ---------- */

static void test_validate_examples(void) {
    static char out[1 << 16];
    char ver[1100];
    if (gr_usermod_nvrtc_version(ver, sizeof(ver)) != 0) {
        gr_test_skip(__func__, "%s", ver);
        return;
    }
    char args[2048];
    snprintf(args, sizeof(args), "validate workloads/examples/add_mul_act.json");
    int rc = gr_test_graphrun(args, out, sizeof(out));
    CU_ASSERT_EQUAL(rc, 0);
    GR_ASSERT_CONTAINS(out, "valid (4 variants)");
    GR_ASSERT_CONTAINS(
        out, "verified against: the eager outputs of variant unfused (\"reference\": true)");
    GR_ASSERT_CONTAINS(
        out,
        "amr.add_mul_relu_vec4<<<[1056,1,1], [256,1,1], 0>>>(a, b, c, y, i32 16777216, f32 1) pdl");
    rc = gr_test_graphrun("validate workloads/examples/softmax.json --set n=16384", out,
                          sizeof(out));
    CU_ASSERT_EQUAL(rc, 0);
    GR_ASSERT_CONTAINS(out, "sm.softmax_fused<<<[1024,1,1], [256,1,1], 65536>>>");
    rc = gr_test_graphrun("validate workloads/examples/softmax.json --arch sm_80 --set n=50000",
                          out, sizeof(out));
    CU_ASSERT_EQUAL(rc, 2);
    GR_ASSERT_CONTAINS(out,
                       "variants.fused.ops[0].smem: 200000 bytes of dynamic shared memory; sm_80");
    rc = gr_test_graphrun("run workloads/examples/softmax.json --arch sm_80", out, sizeof(out));
    CU_ASSERT_EQUAL(rc, 2);
    GR_ASSERT_CONTAINS(out, "--arch is for graphrun validate");
    if (access(example_file("softmax_ptx.json"), R_OK) == 0) {
        snprintf(args, sizeof(args), "validate %s --json -", example_file("softmax_ptx.json"));
        rc = gr_test_graphrun(args, out, sizeof(out));
        CU_ASSERT_EQUAL(rc, 0);
        GR_ASSERT_CONTAINS(out, "\"against\": \"expect\"");
        GR_ASSERT_CONTAINS(out, "PTX for sm_90, JIT-compiled by the driver at load");
    } else {
        gr_test_skip(__func__, "%s missing (cmake --build build --target gr_examples)",
                     example_file("softmax_ptx.json"));
    }
}

static CU_TestInfo usermod_tests[] = {
    {"parse_user_op", test_parse_user_op},
    {"reference_variant_and_mix", test_reference_variant_and_mix},
    {"ptx_params", test_ptx_params},
    {"cubin_params", test_cubin_params},
    {"nvrtc_compile_and_cache", test_nvrtc_compile_and_cache},
    {"nvrtc_toolkit_headers", test_nvrtc_toolkit_headers},
    {"arch_specific", test_arch_specific},
    {"arg_check", test_arg_check},
    {"errors_files_and_modules", test_errors_files_and_modules},
    {"errors_compile", test_errors_compile},
    {"errors_args_and_limits", test_errors_args_and_limits},
    {"errors_images", test_errors_images},
    {"expect_files", test_expect_files},
    {"validate_examples", test_validate_examples},
    CU_TEST_INFO_NULL,
};

static gr_suite_def gr_usermod_suites[] = {{"usermod", usermod_tests, 0}, {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_usermod_suites)

/* ---------- on the GPU ---------- */

/* Relative L2 error of out against ref (n floats); NaN never passes. */
static double rel_l2(const float *out, const float *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)out[i] - (double)ref[i];
        if (isnan(out[i])) return INFINITY;
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* Run the plan eagerly once (pdl as given), and captured in `mode`; return the output buffer
 * `name` of both runs (malloc'ed, caller frees) or NULL on failure. */
static float *run_plan(const gr_plan *p, const char *name, int pdl, gr_capture_mode mode,
                       float **graph_out) {
    gr_error e;
    gr_error_clear(&e);
    gr_device_info info;
    *graph_out = NULL;
    if (gr_device_probe(0, &info, &e) != GR_OK) return NULL;
    gr_devstate *dev = NULL;
    if (gr_devstate_create(p, info.sm_count, &dev, &e) != GR_OK) {
        fprintf(stderr, "\n%s\n", e.msg);
        CU_FAIL("gr_devstate_create");
        return NULL;
    }
    dev->pdl = pdl;
    int b = -1;
    for (int i = 0; i < p->nbufs; i++)
        if (!strcmp(p->bufs[i].name, name)) b = i;
    float *eager = malloc(p->bufs[b].bytes), *graph = malloc(p->bufs[b].bytes);
    gr_graph g;
    memset(&g, 0, sizeof(g));
    gr_status st = gr_devstate_init_buffers(dev, &e);
    if (st == GR_OK) st = gr_exec_step(p, dev, NULL, &e);
    if (st == GR_OK) st = gr_devstate_download(dev, b, eager, &e);
    if (st == GR_OK) st = gr_graph_capture(p, dev, mode, NULL, &g, &e);
    if (st == GR_OK) st = gr_devstate_init_buffers(dev, &e);
    if (st == GR_OK) st = gr_graph_launch(&g, dev->streams[0], &e);
    if (st == GR_OK) st = gr_devstate_download(dev, b, graph, &e);
    gr_graph_destroy(&g);
    gr_devstate_destroy(dev);
    if (st != GR_OK) {
        fprintf(stderr, "\n%s\n", e.msg);
        CU_FAIL("run");
        free(eager);
        free(graph);
        return NULL;
    }
    *graph_out = graph;
    return eager;
}

/* softmax_fused of each module kind (source, ptx, cubin, fatbin) on the example's data, against
 * its expected .npy, eager and captured, with and without PDL, in every capture mode. */
static void test_gpu_module_kinds(void) {
    GR_REQUIRE_GPU();
    ensure_dir();
    const char *kinds[] = {"source", "ptx", "cubin", "fatbin", "fatbin"};
    for (int k = 0; k < 5; k++) {
        char file[1024], json[4096];
        if (k == 0)
            snprintf(file, sizeof(file), "%s", gr_test_src("workloads/examples/softmax.cu"));
        else
            snprintf(file, sizeof(file), "%s",
                     example_file(k == 1   ? "softmax.ptx"
                                  : k == 2 ? "softmax.cubin"
                                  : k == 3 ? "softmax.fatbin"
                                           : "softmax_z.fatbin"));
        snprintf(json, sizeof(json),
                 "{\"name\": \"t\", \"modules\": {\"m\": {\"%s\": \"%s\"}},"
                 " \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [8, 128], "
                 "\"init\": {\"kind\": \"file\", \"path\": \"%s\"}},"
                 "  {\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [8, 128]}],"
                 " \"outputs\": [{\"buffer\": \"y\", \"expect\": {\"file\": \"%s\"}}],"
                 " \"ops\": [{\"module\": \"m\", \"function\": \"softmax_fused\", \"grid\": [8], "
                 "\"block\": [128], \"smem\": 512,"
                 "  \"args\": [\"x\", \"y\", {\"i32\": 128}], \"inputs\": [\"x\"], \"outputs\": "
                 "[\"y\"], \"pdl\": true}]}",
                 kinds[k], file, gr_test_src("workloads/examples/softmax_x.bin"),
                 gr_test_src("workloads/examples/softmax_y.npy"));
        gr_error e;
        gr_error_clear(&e);
        gr_workload *wl;
        gr_device_info info;
        CU_ASSERT_EQUAL_FATAL(gr_device_probe(0, &info, &e), GR_OK);
        gr_target t = gr_target_from_info(&info);
        gr_plan *p = load_plan(json, NULL, &t, &wl, &e);
        if (!p) fprintf(stderr, "\n%s: %s\n", kinds[k], e.msg);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        float want[8 * 128];
        CU_ASSERT_EQUAL(gr_expect_read(&p->bufs[1], want, &e), GR_OK);
        for (int mode = 0; mode < 3; mode++)
            for (int pdl = 0; pdl < 2; pdl++) {
                float *graph = NULL;
                float *eager = run_plan(p, "y", pdl, (gr_capture_mode)mode, &graph);
                CU_ASSERT_PTR_NOT_NULL(eager);
                if (eager && graph) {
                    double err_e = rel_l2(eager, want, 8 * 128);
                    if (!(err_e < 1e-5))
                        fprintf(stderr, "\n%s mode %d pdl %d: rel L2 %g\n", kinds[k], mode, pdl,
                                err_e);
                    CU_ASSERT(err_e < 1e-5);
                    CU_ASSERT_EQUAL(memcmp(eager, graph, sizeof(want)), 0);
                }
                free(eager);
                free(graph);
            }
        gr_plan_destroy(p);
        gr_workload_destroy(wl);
    }
}

/* The examples: each variant against the reference variant's eager outputs, the mixed one
 * (built-in add, then user kernels) included; softmax with 64 KB of opted-in shared memory. */
static void test_gpu_examples_against_reference(void) {
    GR_REQUIRE_GPU();
    ensure_dir();
    struct {
        const char *file, *out, *set;
    } ex[] = {{"workloads/examples/add_mul_act.json", "y", "n=1000003"},
              {"workloads/examples/softmax.json", "y", "n=16384"}};
    for (int w = 0; w < 2; w++) {
        gr_error e;
        gr_error_clear(&e);
        gr_workload *wl = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_workload_load_file(gr_test_src(ex[w].file), &wl, &e), GR_OK);
        CU_ASSERT_EQUAL_FATAL(gr_workload_set(wl, ex[w].set, &e), GR_OK);
        gr_device_info info;
        CU_ASSERT_EQUAL_FATAL(gr_device_probe(0, &info, &e), GR_OK);
        gr_target t = gr_target_from_info(&info);
        gr_plan *ref = NULL;
        CU_ASSERT_EQUAL_FATAL(gr_plan_resolve(wl, wl->reference_variant, &t, gr_kernel_find,
                                              gr_kernel_all_names, &ref, &e),
                              GR_OK);
        float *g0 = NULL;
        float *want = run_plan(ref, ex[w].out, 0, GR_CAPTURE_GLOBAL, &g0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(want);
        size_t n = 0;
        for (int b = 0; b < ref->nbufs; b++)
            if (!strcmp(ref->bufs[b].name, ex[w].out)) n = (size_t)ref->bufs[b].numel;
        for (int v = 0; v < wl->nvariants; v++) {
            gr_plan *p = NULL;
            if (gr_plan_resolve(wl, wl->variants[v], &t, gr_kernel_find, gr_kernel_all_names, &p,
                                &e) != GR_OK) {
                fprintf(stderr, "\n%s\n", e.msg);
                CU_FAIL("resolve");
                continue;
            }
            float *graph = NULL;
            float *eager = run_plan(p, ex[w].out, 1, GR_CAPTURE_THREAD_LOCAL, &graph);
            if (eager && graph) {
                /* the output's own tolerance (softmax declares its accumulation depth) */
                double rtol = 1e-5;
                for (int b = 0; b < p->nbufs; b++)
                    if (!strcmp(p->bufs[b].name, ex[w].out)) rtol = gr_buffer_tol(&p->bufs[b]).rtol;
                double err = rel_l2(eager, want, n);
                if (!(err <= rtol))
                    fprintf(stderr, "\n%s %s: rel L2 %g > %g\n", ex[w].file, wl->variants[v], err,
                            rtol);
                CU_ASSERT(err <= rtol);
                CU_ASSERT_EQUAL(memcmp(eager, graph, n * sizeof(float)), 0);
            }
            free(eager);
            free(graph);
            gr_plan_destroy(p);
        }
        free(want);
        free(g0);
        gr_plan_destroy(ref);
        gr_workload_destroy(wl);
    }
}

/* A mismatch only the driver can see (a fatbin is read here; a wrong count is caught before) and
 * a kernel that cannot take the block it is given are load-time errors, exit 2, before any launch.
 */
static void test_gpu_load_errors(void) {
    GR_REQUIRE_GPU();
    ensure_dir();
    put("regs.cu", "extern \"C\" __global__ void __launch_bounds__(128) f(float *y) { "
                   "y[threadIdx.x] = 1.f; }\n");
    const char *json =
        "{\"name\": \"t\", \"modules\": {\"m\": {\"source\": \"regs.cu\"}},"
        " \"buffers\": [{\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [1024]}], \"outputs\": "
        "[\"y\"],"
        " \"ops\": [{\"module\": \"m\", \"function\": \"f\", \"grid\": [1], \"block\": [1024],"
        "  \"args\": [\"y\"], \"inputs\": [], \"outputs\": [\"y\"]}]}";
    gr_error e;
    gr_error_clear(&e);
    gr_workload *wl;
    gr_device_info info;
    CU_ASSERT_EQUAL_FATAL(gr_device_probe(0, &info, &e), GR_OK);
    gr_target t = gr_target_from_info(&info);
    gr_plan *p = load_plan(json, NULL, &t, &wl, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gr_devstate *dev = NULL;
    CU_ASSERT_EQUAL(gr_devstate_create(p, info.sm_count, &dev, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(e.msg, "ops[0]: block of 1024 threads; kernel \"f\" can run at most 128");
    gr_devstate_destroy(dev);
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
    /* a compressed fatbin's parameters are read by the driver (cuFuncGetParamInfo) */
    char zjson[2048];
    snprintf(
        zjson, sizeof(zjson),
        "{\"name\": \"t\", \"modules\": {\"z\": {\"fatbin\": \"%s\"}},"
        " \"buffers\": [{\"name\": \"x\", \"dtype\": \"fp32\", \"shape\": [128], \"init\": "
        "\"normal\"}, {\"name\": \"y\", \"dtype\": \"fp32\", \"shape\": [128]}],"
        " \"outputs\": [\"y\"], \"ops\": [{\"module\": \"z\", \"function\": \"softmax_fused\", "
        "\"grid\": [1], \"block\": [128], \"smem\": 512, \"args\": [\"x\", \"y\"], "
        "\"inputs\": [\"x\"], \"outputs\": [\"y\"]}]}",
        example_file("softmax_z.fatbin"));
    gr_error_clear(&e);
    p = load_plan(zjson, NULL, &t, &wl, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    dev = NULL;
    CU_ASSERT_EQUAL(gr_devstate_create(p, info.sm_count, &dev, &e), GR_ERR_INPUT);
    GR_ASSERT_CONTAINS(
        e.msg,
        "ops[0].args: kernel \"softmax_fused\" (module \"z\") takes 3 parameters; the op gives 2");
    gr_devstate_destroy(dev);
    gr_plan_destroy(p);
    gr_workload_destroy(wl);
}

static CU_TestInfo gpu_usermod_tests[] = {
    {"module_kinds", test_gpu_module_kinds},
    {"examples_against_reference", test_gpu_examples_against_reference},
    {"load_errors", test_gpu_load_errors},
    CU_TEST_INFO_NULL,
};
static gr_suite_def gr_gpu_usermod_suites[] = {{"gpu_usermod", gpu_usermod_tests, 1},
                                               {NULL, NULL, 0}};
GR_REGISTER_SUITES(gr_gpu_usermod_suites)
