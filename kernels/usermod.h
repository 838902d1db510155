/* User kernels: modules a workload brings (CUDA source compiled with NVRTC, PTX, cubin, fatbin),
 * their functions' parameter lists read without a GPU (PTX .entry lists, cubin .nv.info), and the
 * registry's "user" entry that checks, loads (driver API, before capture) and launches user ops
 * through the same launch path as the built-in kernels. NVRTC and the driver are loaded at first
 * use, so graphrun starts and validates on machines without them. */
#ifndef GR_KERNELS_USERMOD_H
#define GR_KERNELS_USERMOD_H

#include <stddef.h>

#include "core/kernel.h"
#include "core/module.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const gr_kernel_def gr_user_kernel; /* registry name GR_USER_KERNEL_NAME */

/* A kernel's parameters as a module image tells them: sizes in bytes and, from PTX, the type
 * (".u64", ".f32", ".b8" for byte arrays such as structs); type "" from a cubin. */
typedef struct gr_ufunc_param {
    unsigned size;
    char type[8];
} gr_ufunc_param;
typedef struct gr_ufunc {
    char *name;
    int nparams;
    gr_ufunc_param *params;
} gr_ufunc;

/* The .entry functions of PTX text, with their parameters. Returns the count (>= 0) and a list to
 * free with gr_ufuncs_free, or -1 when the text is not PTX. *sm gets the ".target sm_XY" (0 if
 * none). */
int gr_usermod_ptx_entries(const char *ptx, size_t len, gr_ufunc **out, int *sm);
/* The kernels of a cubin (ELF) with their parameter sizes (.nv.info KPARAM_INFO); *sm gets the
 * architecture in its header (90 for sm_90). -1 when it is not a CUDA ELF. */
int gr_usermod_elf_entries(const void *elf, size_t len, gr_ufunc **out, int *sm);
void gr_ufuncs_free(gr_ufunc *f, int n);

/* Compile or read module `m` for `arch` ("sm_90") and read its functions, once per arch: what
 * the "user" entry's check() does first. Errors (compile log with file:line, a missing or foreign
 * file) are recorded at the module's JSON path. */
gr_status gr_usermod_prepare(gr_module *m, const char *arch, gr_error *err);

/* The compiled-image cache (NVRTC cubin and PTX by content hash): NULL restores the default
 * ($GRAPHRUN_CACHE_DIR, else $XDG_CACHE_HOME/graphrun, else ~/.cache/graphrun); "" turns it off.
 * An unwritable cache never fails a run; it is only not used. */
void gr_usermod_set_cache_dir(const char *dir);
const char *gr_usermod_cache_dir(void); /* "" when off */

/* Counts since the process started, for tests and the plan's module status. */
typedef struct gr_usermod_stats {
    int compiles;   /* NVRTC compilations */
    int cache_hits; /* images read from the cache instead */
    int cache_writes;
} gr_usermod_stats;
void gr_usermod_get_stats(gr_usermod_stats *out);

/* The NVRTC library's version ("13.0"), or why it could not be loaded. Returns 0 when loaded. */
int gr_usermod_nvrtc_version(char *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif
