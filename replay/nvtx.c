/* NVTX ranges for graphrun's phases, steps and ops, and their copy into graphrun's own CUPTI
 * trace. The domain is created once per process; a NULL domain means no tool is attached, and
 * then nothing is formatted or pushed. Per thread: a stack of the ranges open (phase > step >
 * op), each pushed to NVTX and/or written to the trace at its end. */
#include "replay/nvtx.h"

#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cupti_tools/collector.h"
#include "cupti_tools/jsonl.h"

#define STACK_MAX 8

enum { LVL_PHASE = 0, LVL_STEP = 1, LVL_OP = 2 };
static const char *const level_names[] = {"phase", "step", "op"};

typedef struct range {
    uint64_t t0; /* CUPTI clock at the push, when recorded into the trace */
    int level, op;
    int64_t step;
    int nvtx, rec; /* pushed to NVTX / to be written to the trace */
    char msg[256];
} range;

typedef struct thread_state {
    const gr_plan *plan;
    gr_nvtx_cat cat;
    int in_phase;
    int nvtx_on, rec_on; /* checked once per phase: the tool and the trace, which take locks */
    int64_t steps;
    range stack[STACK_MAX];
    int depth; /* may exceed STACK_MAX; deeper ranges are not annotated */
} thread_state;

static _Thread_local thread_state tl;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static nvtxDomainHandle_t domain;

static gr_nvtx_sink sink;
static void *sink_user;
static uint64_t (*sink_clock)(void);

void gr_nvtx_set_sink(gr_nvtx_sink fn, void *user, uint64_t (*clock)(void)) {
    sink = fn;
    sink_user = user;
    sink_clock = clock;
}

/* Records go to graphrun's trace while one is written (or to a test's sink). */
static int recording(void) {
    return sink ? 1 : gr_cupti_active();
}

static uint64_t now(void) {
    return sink && sink_clock ? sink_clock() : gr_cupti_now();
}

static const uint32_t cat_color[] = {0xFF7F7F7F, 0xFF4E79A7, 0xFF9C755F, 0xFFF28E2B};

const char *gr_nvtx_cat_name(gr_nvtx_cat c) {
    switch (c) {
    case GR_NVTX_EAGER:
        return "eager";
    case GR_NVTX_CAPTURE:
        return "capture";
    case GR_NVTX_REPLAY:
        return "replay";
    default:
        return "none";
    }
}

static void init_domain(void) {
    domain = nvtxDomainCreateA(GR_NVTX_DOMAIN);
    if (!domain) return;
    for (int c = GR_NVTX_EAGER; c <= GR_NVTX_REPLAY; c++)
        nvtxDomainNameCategoryA(domain, (uint32_t)c, gr_nvtx_cat_name((gr_nvtx_cat)c));
}

int gr_nvtx_tool_attached(void) {
    pthread_once(&once, init_domain);
    return domain != NULL;
}

static const char *plan_workload(const gr_plan *p) {
    return p && p->workload[0] ? p->workload : "graphrun";
}

static const char *plan_variant(const gr_plan *p) {
    return p && p->variant[0] ? p->variant : "-";
}

static void push(int level, int op, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void push(int level, int op, const char *fmt, ...) {
    int d = tl.depth++;
    if (d >= STACK_MAX) return;
    range *r = &tl.stack[d];
    if (tl.in_phase && level != LVL_PHASE) {
        r->nvtx = tl.nvtx_on;
        r->rec = tl.rec_on;
    } else {
        r->nvtx = gr_nvtx_tool_attached();
        r->rec = recording();
    }
    r->level = level;
    r->op = op;
    r->step = tl.steps;
    if (!r->nvtx && !r->rec) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
    va_end(ap);
    if (r->nvtx) {
        nvtxEventAttributes_t a;
        memset(&a, 0, sizeof(a));
        a.version = NVTX_VERSION;
        a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        a.category = (uint32_t)tl.cat;
        a.colorType = NVTX_COLOR_ARGB;
        a.color = cat_color[tl.cat <= GR_NVTX_REPLAY ? tl.cat : 0];
        a.messageType = NVTX_MESSAGE_TYPE_ASCII;
        a.message.ascii = r->msg;
        if (level == LVL_STEP) {
            a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
            a.payload.ullValue = (uint64_t)tl.steps;
        }
        nvtxDomainRangePushEx(domain, &a);
    }
    if (r->rec) r->t0 = now();
}

/* The range as an "nvtx" trace record (cupti_tools/README.md). */
static void record(const range *r, uint64_t t1) {
    gr_sbuf b;
    gr_sb_init(&b);
    gr_sb_raw(&b, "{\"t\":\"nvtx\"", 11);
    gr_sb_kv_str(&b, "dom", GR_NVTX_DOMAIN);
    gr_sb_kv_str(&b, "cat", gr_nvtx_cat_name(tl.cat));
    gr_sb_kv_str(&b, "lvl", level_names[r->level]);
    gr_sb_kv_str(&b, "msg", r->msg);
    gr_sb_kv_str(&b, "wl", plan_workload(tl.plan));
    gr_sb_kv_str(&b, "variant", plan_variant(tl.plan));
    if (r->level == LVL_OP) gr_sb_kv_i64(&b, "op", r->op);
    if (r->level == LVL_STEP) gr_sb_kv_i64(&b, "step", r->step);
    gr_sb_kv_i64(&b, "s", sink ? (int64_t)r->t0 : gr_cupti_rel(r->t0));
    gr_sb_kv_i64(&b, "e", sink ? (int64_t)t1 : gr_cupti_rel(t1));
    gr_sb_kv_u64(&b, "tid", (uint64_t)syscall(SYS_gettid));
    gr_sb_raw(&b, "}", 1);
    if (!b.oom) {
        if (sink)
            sink(sink_user, b.p, b.len);
        else
            gr_cupti_line(b.p, b.len);
    }
    gr_sb_free(&b);
}

static void pop(void) {
    if (tl.depth <= 0) return;
    int d = --tl.depth;
    if (d >= STACK_MAX) return;
    range *r = &tl.stack[d];
    if (r->rec) record(r, now());
    if (r->nvtx) nvtxDomainRangePop(domain);
    r->nvtx = r->rec = 0;
}

void gr_nvtx_phase_begin(const gr_plan *plan, gr_nvtx_cat cat, const char *what) {
    if (tl.in_phase) gr_nvtx_phase_end();
    tl.plan = plan;
    tl.cat = cat;
    tl.in_phase = 1;
    tl.nvtx_on = gr_nvtx_tool_attached();
    tl.rec_on = recording();
    tl.steps = 0;
    push(LVL_PHASE, -1, "%s/%s %s%s%s", plan_workload(plan), plan_variant(plan),
         gr_nvtx_cat_name(cat), what && what[0] ? " " : "", what ? what : "");
}

void gr_nvtx_phase_end(void) {
    while (tl.depth > 0)
        pop();
    tl.in_phase = 0;
    tl.plan = NULL;
    tl.cat = GR_NVTX_NONE;
}

void gr_nvtx_step_begin(void) {
    tl.steps++;
    push(LVL_STEP, -1, "%s/%s %s step %lld", plan_workload(tl.plan), plan_variant(tl.plan),
         gr_nvtx_cat_name(tl.cat), (long long)tl.steps);
}

void gr_nvtx_step_end(void) {
    /* closes the step and any op range a failure left open inside it */
    while (tl.depth > 1)
        pop();
    if (!tl.in_phase) pop();
}

static void before_op(void *user, const gr_op *op) {
    (void)user;
    const char *kernel = op->kind == GR_OP_KERNEL ? (op->kernel ? op->kernel->name : "?")
                         : op->kind == GR_OP_FORK ? "fork"
                                                  : "join";
    push(LVL_OP, op->index, "%s/%s op %d %s (%s)", plan_workload(tl.plan), plan_variant(tl.plan),
         op->index, op->name[0] ? op->name : op->path, kernel);
}

static void after_op(void *user, const gr_op *op) {
    (void)user;
    (void)op;
    pop();
}

static const gr_exec_hooks op_hooks = {before_op, after_op, NULL};

const gr_exec_hooks *gr_nvtx_op_hooks(void) {
    return &op_hooks;
}
