/* .npy 1.0: magic, version, a little-endian u16 header length, a Python dict literal padded with
 * spaces to a multiple of 64 bytes and ended by a newline, then the raw elements. */
#include "core/npy.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *gr_npy_descr(gr_dtype t) {
    switch (t) {
    case GR_FP32: return "<f4";
    case GR_BF16: return "<u2";
    case GR_FP16: return "<f2";
    case GR_INT32: return "<i4";
    case GR_INT64: return "<i8";
    default: return NULL;
    }
}

gr_status gr_npy_write(const char *path, gr_dtype t, int ndim, const int64_t *shape, const void *data,
                       gr_error *err) {
    const char *descr = gr_npy_descr(t);
    if (!descr) return gr_error_set(err, GR_ERR_INTERNAL, path, "no .npy form for dtype %d", (int)t);
    char dict[512];
    int n = snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    int64_t numel = 1;
    for (int i = 0; i < ndim && n < (int)sizeof(dict); i++) {
        n += snprintf(dict + n, sizeof(dict) - (size_t)n, "%lld,%s", (long long)shape[i],
                      i + 1 < ndim ? " " : "");
        numel *= shape[i];
    }
    if (ndim > 1 && n > 0 && dict[n - 1] == ',') n--; /* (2, 3) not (2, 3,); a 1-tuple keeps it */
    n += snprintf(dict + n, sizeof(dict) - (size_t)n, "), }");
    if (n <= 0 || n >= (int)sizeof(dict) - 70)
        return gr_error_set(err, GR_ERR_INTERNAL, path, ".npy header too long");
    size_t head = 10 + (size_t)n + 1; /* magic(6) version(2) len(2), dict, newline */
    size_t pad = (64 - head % 64) % 64;
    char hdr[640];
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    uint16_t hl = (uint16_t)((size_t)n + pad + 1);
    hdr[8] = (char)(hl & 0xff);
    hdr[9] = (char)(hl >> 8);
    memcpy(hdr + 10, dict, (size_t)n);
    memset(hdr + 10 + n, ' ', pad);
    hdr[10 + (size_t)n + pad] = '\n';
    size_t total = 10 + (size_t)n + pad + 1;
    FILE *f = fopen(path, "wb");
    if (!f)
        return gr_error_set(err, GR_ERR_IO, path, "cannot write: %s (does the directory exist and is it "
                            "writable?)", strerror(errno));
    size_t bytes = (size_t)numel * gr_dtype_size(t);
    int ok = fwrite(hdr, 1, total, f) == total && (bytes == 0 || fwrite(data, 1, bytes, f) == bytes);
    int cerr = fclose(f);
    if (!ok || cerr != 0)
        return gr_error_set(err, GR_ERR_IO, path, "cannot write %zu bytes: %s", total + bytes,
                            strerror(errno ? errno : EIO));
    return GR_OK;
}
