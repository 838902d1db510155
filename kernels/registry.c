/* Registry: the list of kernel families. A new family adds its array here. */
#include "kernels/registry.h"

#include <pthread.h>
#include <string.h>

#include "kernels/decode.h"
#include "kernels/dlrm.h"
#include "kernels/gemm.h"
#include "kernels/pointwise.h"
#include "kernels/probe.h"
#include "kernels/breakers.h"
#include "kernels/tp.h"
#include "kernels/usermod.h"

#define MAX_KERNELS 256

/* Each family adds its array here (one line) and its header above. */
static const gr_kernel_def *const *const families[] = {
    gr_pointwise_kernels,
    gr_probe_kernels,
    gr_gemm_kernels,
    gr_dlrm_kernels,
    gr_decode_kernels,
    gr_tp_kernels,
    gr_breaker_kernels,
};
#define NFAMILIES (sizeof(families) / sizeof(families[0]))

static const gr_kernel_def *all_defs[MAX_KERNELS + 1];
static const char *all_names[MAX_KERNELS + 1];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build_once(void) {
    int n = 0;
    for (size_t f = 0; f < NFAMILIES; f++) {
        const gr_kernel_def *const *fam = families[f];
        for (const gr_kernel_def *const *k = fam; *k && n < MAX_KERNELS; k++) {
            all_defs[n] = *k;
            all_names[n] = (*k)->name;
            n++;
        }
    }
    all_defs[n] = NULL;
    all_names[n] = NULL;
}

static void build(void) {
    pthread_once(&once, build_once);
}

const gr_kernel_def *gr_kernel_find(const char *name) {
    build();
    if (!strcmp(name, GR_USER_KERNEL_NAME)) return &gr_user_kernel; /* user ops: not listed */
    for (int i = 0; all_defs[i]; i++)
        if (!strcmp(all_defs[i]->name, name)) return all_defs[i];
    return NULL;
}

const char *const *gr_kernel_all_names(void) {
    build();
    return all_names;
}

const gr_kernel_def *const *gr_kernel_all(void) {
    build();
    return all_defs;
}
