/* Writing NumPy .npy files (format 1.0): what the replay service hands back for a served step's
 * outputs. bf16, which NumPy lacks, is written as its 2-byte patterns ('<u2'), the form
 * core/expect.c reads back. */
#ifndef GR_NPY_H
#define GR_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"
#include "core/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The .npy descr of a dtype ("<f4", ...). */
const char *gr_npy_descr(gr_dtype t);
/* Writes data (numel = product of shape, C order) to path; GR_ERR_IO naming the path. */
gr_status gr_npy_write(const char *path, gr_dtype t, int ndim, const int64_t *shape, const void *data,
                       gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
