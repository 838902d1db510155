/* Expected output data: raw little-endian files and NumPy .npy (format 1.0-3.0) headers checked
 * against the buffer they stand for, then read as that output's reference. */
#include "core/expect.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"

/* The .npy descr strings of a dtype (bf16 has none in NumPy: its 2-byte raw forms are taken). */
static int descr_ok(gr_dtype t, const char *d) {
    if (d[0] == '<' || d[0] == '|' || d[0] == '=') d++;
    switch (t) {
    case GR_FP32:
        return !strcmp(d, "f4");
    case GR_FP16:
        return !strcmp(d, "f2");
    case GR_BF16:
        return !strcmp(d, "u2") || !strcmp(d, "i2") || !strcmp(d, "V2") || !strcmp(d, "bfloat16");
    case GR_INT32:
        return !strcmp(d, "i4");
    case GR_INT64:
        return !strcmp(d, "i8");
    default:
        return 0;
    }
}

static const char *npy_descr_for(gr_dtype t) {
    switch (t) {
    case GR_FP32:
        return "<f4";
    case GR_FP16:
        return "<f2";
    case GR_BF16:
        return "<u2 (raw bf16 bits)";
    case GR_INT32:
        return "<i4";
    case GR_INT64:
        return "<i8";
    default:
        return "?";
    }
}

/* The value of 'key' in the header dict, copied to out (quotes dropped for strings). */
static int npy_field(const char *hdr, const char *key, char *out, size_t size) {
    char pat[32];
    snprintf(pat, sizeof(pat), "'%s'", key);
    const char *p = strstr(hdr, pat);
    if (!p) return 0;
    p += strlen(pat);
    while (*p == ' ' || *p == ':')
        p++;
    size_t n = 0;
    if (*p == '\'') {
        p++;
        while (*p && *p != '\'' && n + 1 < size)
            out[n++] = *p++;
    } else if (*p == '(') {
        while (*p && *p != ')' && n + 1 < size)
            out[n++] = *p++;
        if (*p == ')' && n + 1 < size) out[n++] = ')';
    } else {
        while (*p && *p != ',' && *p != '}' && n + 1 < size)
            out[n++] = *p++;
    }
    out[n] = '\0';
    return 1;
}

gr_status gr_expect_check(const char *file, const gr_buffer *b, const char *path, size_t *offset,
                          gr_error *err) {
    FILE *f = NULL;
    uint64_t size = 0;
    gr_error fe;
    gr_error_clear(&fe);
    if (gr_file_open(file, GR_FILE_DATA, &f, &size, &fe) != GR_OK)
        return gr_error_set(err, GR_ERR_INPUT, path, "%s (paths are relative to the workload file)",
                            fe.msg);
    unsigned char magic[12];
    size_t got = fread(magic, 1, sizeof(magic), f);
    *offset = 0;
    if (got >= 10 && !memcmp(magic, "\x93NUMPY", 6)) {
        unsigned major = magic[6];
        size_t hlen, hstart;
        if (major == 1) {
            hlen = (size_t)magic[8] | ((size_t)magic[9] << 8);
            hstart = 10;
        } else if ((major == 2 || major == 3) && got >= 12) {
            hlen = (size_t)magic[8] | ((size_t)magic[9] << 8) | ((size_t)magic[10] << 16) |
                   ((size_t)magic[11] << 24);
            hstart = 12;
        } else {
            fclose(f);
            return gr_error_set(err, GR_ERR_INPUT, path,
                                "\"%s\": .npy format version %u is not read", file, major);
        }
        if (hlen > 65536 || hstart + hlen > size) {
            fclose(f);
            return gr_error_set(err, GR_ERR_INPUT, path, "\"%s\": .npy header is cut or too long",
                                file);
        }
        char *hdr = malloc(hlen + 1);
        if (!hdr || fseek(f, (long)hstart, SEEK_SET) != 0 || fread(hdr, 1, hlen, f) != hlen) {
            free(hdr);
            fclose(f);
            return gr_error_set(err, GR_ERR_INPUT, path, "\"%s\": cannot read the .npy header",
                                file);
        }
        hdr[hlen] = '\0';
        fclose(f);
        char descr[32] = "", order[16] = "", shape[256] = "";
        npy_field(hdr, "descr", descr, sizeof(descr));
        npy_field(hdr, "fortran_order", order, sizeof(order));
        npy_field(hdr, "shape", shape, sizeof(shape));
        free(hdr);
        if (!descr_ok(b->dtype, descr))
            return gr_error_set(err, GR_ERR_INPUT, path,
                                "\"%s\" holds dtype '%s'; buffer \"%s\" is %s (save it as '%s')",
                                file, descr, b->name, gr_dtype_name(b->dtype),
                                npy_descr_for(b->dtype));
        if (strncmp(order, "False", 5) != 0)
            return gr_error_set(
                err, GR_ERR_INPUT, path,
                "\"%s\" is in Fortran order; save it C-contiguous (np.ascontiguousarray)", file);
        long long numel = 1, dims[8];
        int nd = 0, same = 1;
        const char *p = shape[0] == '(' ? shape + 1 : shape;
        while (*p && *p != ')') {
            char *end;
            long long d = strtoll(p, &end, 10);
            if (end == p) break;
            numel *= d;
            if (nd < 8) dims[nd] = d;
            nd++;
            p = end;
            while (*p == ',' || *p == ' ' || *p == 'L')
                p++;
        }
        if (numel != b->numel)
            return gr_error_set(err, GR_ERR_INPUT, path,
                                "\"%s\" has shape %s (%lld elements); buffer \"%s\" has %lld", file,
                                shape, numel, b->name, (long long)b->numel);
        /* a flat array fills any shape; one with dimensions must have the buffer's */
        if (nd > 1) {
            same = nd == b->ndim;
            for (int d = 0; d < nd && d < 8 && same; d++) same = dims[d] == b->shape[d];
        }
        if (!same) {
            char want[160];
            size_t o = (size_t)snprintf(want, sizeof(want), "(");
            for (int d = 0; d < b->ndim && o < sizeof(want); d++)
                o += (size_t)snprintf(want + o, sizeof(want) - o, "%lld%s", (long long)b->shape[d],
                                      d + 1 < b->ndim ? ", " : b->ndim == 1 ? ",)" : ")");
            return gr_error_set(err, GR_ERR_INPUT, path,
                                "\"%s\" has shape %s; buffer \"%s\" is %s (reshape it, or save it "
                                "flat)", file, shape, b->name, want);
        }
        *offset = hstart + hlen;
        if (size - *offset != (uint64_t)b->bytes)
            return gr_error_set(
                err, GR_ERR_INPUT, path,
                "\"%s\": %llu data bytes after the .npy header; buffer \"%s\" needs %zu", file,
                (unsigned long long)(size - *offset), b->name, b->bytes);
        return GR_OK;
    }
    fclose(f);
    if (size != (uint64_t)b->bytes)
        return gr_error_set(err, GR_ERR_INPUT, path,
                            "file \"%s\" has %llu bytes; buffer \"%s\" (%s, %lld elements) needs "
                            "exactly %zu (raw little-endian, or a .npy file)",
                            file, (unsigned long long)size, b->name, gr_dtype_name(b->dtype),
                            (long long)b->numel, b->bytes);
    return GR_OK;
}

gr_status gr_expect_read(const gr_buffer *b, void *host, gr_error *err) {
    FILE *f = NULL;
    uint64_t size = 0;
    if (!b->expect_path[0])
        return gr_error_set(err, GR_ERR_INTERNAL, b->path, "buffer \"%s\" has no expected data",
                            b->name);
    if (gr_file_open(b->expect_path, GR_FILE_DATA, &f, &size, err) != GR_OK) return err->code;
    gr_status st = GR_OK;
    if (size < (uint64_t)b->expect_offset + b->bytes ||
        fseek(f, (long)b->expect_offset, SEEK_SET) != 0 || fread(host, 1, b->bytes, f) != b->bytes)
        st = gr_error_set(err, GR_ERR_IO, b->expect_path,
                          "cannot read %zu bytes of expected data for \"%s\" (the file changed "
                          "since it was checked?)",
                          b->bytes, b->name);
    fclose(f);
    return st;
}
