/* An output's expected contents from a file ("expect": {"file": "y.npy"}): raw little-endian
 * elements of the buffer's dtype, or a .npy array of the same dtype and element count. Checked at
 * resolve (no GPU), read by the run pipeline as the output's reference. */
#ifndef GR_EXPECT_H
#define GR_EXPECT_H

#include <stddef.h>

#include "core/error.h"
#include "core/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks `file` against buffer `b` (size, or the .npy header's dtype, order and shape); on
 * success *offset is where the elements start. Errors are recorded at `path`. */
gr_status gr_expect_check(const char *file, const gr_buffer *b, const char *path, size_t *offset,
                          gr_error *err);
/* Reads b->bytes of b->expect_path (from b->expect_offset) into host. */
gr_status gr_expect_read(const gr_buffer *b, void *host, gr_error *err);

#ifdef __cplusplus
}
#endif
#endif
