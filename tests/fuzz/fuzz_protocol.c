/* libFuzzer target for the replay service protocol: any bytes, split into lines as the service
 * splits them, must parse into a request or an error naming a field, and every error must make
 * a valid reply line; reply parsing (the client side) must never crash either. Build:
 * cmake -DGR_FUZZ=ON with clang; the corpus is tests/fuzz/protocol_corpus/. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "replay/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gr_linebuf lb;
    gr_linebuf_init(&lb, 4096);
    if (gr_linebuf_append(&lb, (const char *)data, size) != GR_OK) abort();
    gr_linebuf_append(&lb, "\n", 1);
    char *line;
    size_t len;
    int rc;
    while ((rc = gr_linebuf_next(&lb, &line, &len)) == 1) {
        gr_request req;
        gr_error err;
        gr_error_clear(&err);
        gr_status st = gr_request_parse(line, len, &req, &err);
        if (st != GR_OK) {
            if (!err.msg[0]) abort();
            char *reply = gr_reply_error(req.id, st, err.path, err.msg, NULL);
            if (!reply || reply[strlen(reply) - 1] != '\n') abort();
            gr_reply r;
            gr_error pe;
            gr_error_clear(&pe);
            /* what the service sends, the client must read back */
            if (gr_reply_parse(reply, strlen(reply) - 1, &r, &pe) != GR_OK || r.ok) abort();
            gr_reply_clear(&r);
            free(reply);
        } else if (req.cmd == GR_CMD_NONE) {
            abort();
        }
        gr_request_clear(&req);
        gr_reply r;
        gr_error pe;
        gr_error_clear(&pe);
        gr_reply_parse(line, len, &r, &pe);
        gr_reply_clear(&r);
        free(line);
    }
    gr_linebuf_free(&lb);
    return 0;
}
