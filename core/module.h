/* A workload's user modules ("modules": {"mine": {"source": "k.cu"}}): what the JSON says, resolved
 * against the workload's directory. Core only describes a module; kernels/usermod.c compiles,
 * inspects and loads it, keeping its state in `impl` and freeing it through `impl_free`. */
#ifndef GR_MODULE_H
#define GR_MODULE_H

#include <pthread.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GR_MAX_MODULES 32
#define GR_MODULE_MAX_OPTIONS 64

typedef enum gr_module_kind {
    GR_MOD_SOURCE,
    GR_MOD_PTX,
    GR_MOD_CUBIN,
    GR_MOD_FATBIN
} gr_module_kind;

typedef struct gr_module {
    char name[64];
    char path[96]; /* JSON path, "modules.mine" */
    gr_module_kind kind;
    char given[512];   /* the file as the workload names it (compiler messages use it) */
    char file[1024];   /* the file to read: relative to the workload's directory */
    int arch_specific; /* "arch_specific": true: compile for sm_XYa (wgmma, setmaxnreg) */
    int noptions;
    char *options[GR_MODULE_MAX_OPTIONS]; /* NVRTC options; "include" dirs become -I<dir> */
    int refs;             /* the workload and every plan with an op of this module */
    pthread_mutex_t lock; /* held by kernels/usermod while it compiles or loads */
    void *impl;           /* kernels/usermod's state (compiled image, functions, loaded library) */
    void (*impl_free)(void *impl);
    char status[200]; /* how the image was obtained ("NVRTC 13.0 for sm_90, 0.41 s"), for plans */
} gr_module;

const char *gr_module_kind_name(gr_module_kind k); /* "source", "ptx", "cubin", "fatbin" */
gr_module *gr_module_ref(gr_module *m);
void gr_module_unref(gr_module *m); /* the last reference frees it; NULL is a no-op */

#ifdef __cplusplus
}
#endif
#endif
