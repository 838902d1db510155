/* A tiny NVTX injection library for the tests (libgr_nvtx_rec.so): the NVTX loader of a program
 * started with NVTX_INJECTION64_PATH pointing here calls InitializeInjectionNvtx2, which attaches
 * recorders for domain creation, category naming and range push/pop. Every call becomes one
 * tab-separated line in the file GR_NVTX_REC_OUT names:
 *   domain  ID NAME | category DOMAIN ID NAME | push DOMAIN CATEGORY TID PAYLOAD MESSAGE |
 *   pop DOMAIN TID
 * (DOMAIN 0: the default domain). Tests read the file after the program exits. */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct rec_domain {
    int id;
    char name[128];
} rec_domain;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static rec_domain domains[64];
static int ndomains;

static unsigned long tid(void) {
    return (unsigned long)syscall(SYS_gettid);
}

static int domain_id(nvtxDomainHandle_t d) {
    return d ? ((const rec_domain *)(const void *)d)->id : 0;
}

/* Messages without tabs or newlines, so each record stays one line. */
static void put_clean(const char *s) {
    for (; s && *s; s++)
        fputc(*s == '\t' || *s == '\n' ? ' ' : *s, out);
}

static nvtxDomainHandle_t rec_domain_create(const char *name) {
    pthread_mutex_lock(&mu);
    rec_domain *d = NULL;
    if (ndomains < 64) {
        d = &domains[ndomains];
        d->id = ++ndomains;
        snprintf(d->name, sizeof(d->name), "%s", name ? name : "");
        if (out) {
            fprintf(out, "domain\t%d\t", d->id);
            put_clean(d->name);
            fputc('\n', out);
        }
    }
    pthread_mutex_unlock(&mu);
    return (nvtxDomainHandle_t)(void *)d;
}

static void rec_name_category(nvtxDomainHandle_t d, uint32_t category, const char *name) {
    pthread_mutex_lock(&mu);
    if (out) {
        fprintf(out, "category\t%d\t%u\t", domain_id(d), category);
        put_clean(name);
        fputc('\n', out);
    }
    pthread_mutex_unlock(&mu);
}

static void rec_push(int domain, const nvtxEventAttributes_t *a) {
    pthread_mutex_lock(&mu);
    if (out) {
        unsigned long long payload = 0;
        if (a && a->payloadType == NVTX_PAYLOAD_TYPE_UNSIGNED_INT64) payload = a->payload.ullValue;
        fprintf(out, "push\t%d\t%u\t%lu\t%llu\t", domain, a ? a->category : 0, tid(), payload);
        if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII) put_clean(a->message.ascii);
        fputc('\n', out);
    }
    pthread_mutex_unlock(&mu);
}

static void rec_pop(int domain) {
    pthread_mutex_lock(&mu);
    if (out) fprintf(out, "pop\t%d\t%lu\n", domain, tid());
    pthread_mutex_unlock(&mu);
}

static int rec_domain_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    rec_push(domain_id(d), a);
    return 0;
}

static int rec_domain_pop(nvtxDomainHandle_t d) {
    rec_pop(domain_id(d));
    return 0;
}

static int rec_push_a(const char *msg) {
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof(a));
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = msg;
    rec_push(0, &a);
    return 0;
}

static int rec_push_ex(const nvtxEventAttributes_t *a) {
    rec_push(0, a);
    return 0;
}

static int rec_pop0(void) {
    rec_pop(0);
    return 0;
}

static void set(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer fn) {
    if (id < size && table[id]) *table[id] = fn;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
    const char *path = getenv("GR_NVTX_REC_OUT");
    if (!path || !get) return 0;
    out = fopen(path, "a");
    if (!out) return 0;
    const NvtxExportTableCallbacks *cb = (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    if (!cb || !cb->GetModuleFunctionTable) return 0;
    NvtxFunctionTable core2 = NULL, core = NULL;
    unsigned n2 = 0, n1 = 0;
    if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &n2) || !core2) return 0;
    set(core2, n2, NVTX_CBID_CORE2_DomainCreateA, (NvtxFunctionPointer)rec_domain_create);
    set(core2, n2, NVTX_CBID_CORE2_DomainNameCategoryA, (NvtxFunctionPointer)rec_name_category);
    set(core2, n2, NVTX_CBID_CORE2_DomainRangePushEx, (NvtxFunctionPointer)rec_domain_push);
    set(core2, n2, NVTX_CBID_CORE2_DomainRangePop, (NvtxFunctionPointer)rec_domain_pop);
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &n1) && core) {
        set(core, n1, NVTX_CBID_CORE_RangePushA, (NvtxFunctionPointer)rec_push_a);
        set(core, n1, NVTX_CBID_CORE_RangePushEx, (NvtxFunctionPointer)rec_push_ex);
        set(core, n1, NVTX_CBID_CORE_RangePop, (NvtxFunctionPointer)rec_pop0);
    }
    fprintf(out, "init\t%d\n", (int)getpid());
    return 1;
}
