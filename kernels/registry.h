/* The kernel registry: every kernel graphrun can launch, by name. Families register an array of
 * definitions in registry.c. */
#ifndef GR_KERNELS_REGISTRY_H
#define GR_KERNELS_REGISTRY_H

#include "core/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

const gr_kernel_def *gr_kernel_find(const char *name);
/* All kernel names, NULL-terminated, in registry order. */
const char *const *gr_kernel_all_names(void);
/* All definitions, NULL-terminated. */
const gr_kernel_def *const *gr_kernel_all(void);

#ifdef __cplusplus
}
#endif
#endif
