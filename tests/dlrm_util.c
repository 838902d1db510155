/* Workloads shared by the dlrm suites: see dlrm_util.h. */
#include "dlrm_util.h"

#include <math.h>
#include <stdio.h>

const char *gr_test_mlp_json(int B, int K, int NA, int D, int T, int bag, const char *idt,
                             const char *pool, int written) {
    static char json[65536];
    const int P = (T + 1) * T / 2;
    const double wa = sqrt(6.0 / K), wb = sqrt(6.0 / NA);
    char wa_init[128] = "";
    if (!written)
        snprintf(wa_init, sizeof(wa_init),
                 ", \"init\": {\"kind\": \"uniform\", \"low\": %.6f, \"high\": %.6f}", -wa, wa);
    int o = snprintf(
        json, sizeof(json),
        "{\"name\": \"mi\", \"buffers\": ["
        "{\"name\": \"h\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": \"normal\"},"
        "{\"name\": \"wa0\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": {\"kind\": "
        "\"uniform\", \"low\": %.6f, \"high\": %.6f}},"
        "{\"name\": \"dwa\", \"dtype\": \"fp32\", \"shape\": [%d], \"init\": {\"kind\": "
        "\"uniform\", \"low\": -0.01, \"high\": 0.01}},"
        "{\"name\": \"wa\", \"dtype\": \"fp32\", \"shape\": [%d, %d]%s},"
        "{\"name\": \"ba\", \"dtype\": \"fp32\", \"shape\": [%d], \"init\": {\"kind\": "
        "\"uniform\", \"low\": -0.3, \"high\": 0.3}},"
        "{\"name\": \"wb\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": {\"kind\": "
        "\"uniform\", \"low\": %.6f, \"high\": %.6f}},"
        "{\"name\": \"bb\", \"dtype\": \"fp32\", \"shape\": [%d], \"init\": {\"kind\": "
        "\"uniform\", \"low\": -0.3, \"high\": 0.3}},",
        B, K, NA, K, -wa, wa, K, NA, K, wa_init, NA, D, NA, -wb, wb, D);
    for (int t = 0; t < T; t++) {
        const int rows = 1 + (t * 37) % 1000;
        o += snprintf(json + o, sizeof(json) - (size_t)o,
                      "{\"name\": \"t%d\", \"dtype\": \"fp32\", \"shape\": [%d, %d], \"init\": "
                      "{\"kind\": \"uniform\", \"low\": -0.5, \"high\": 0.5}},"
                      "{\"name\": \"i%d\", \"dtype\": \"%s\", \"shape\": [%d, %d], \"init\": "
                      "{\"kind\": \"zipf\", \"range\": %d}},",
                      t, rows, D, t, idt, B, bag, rows);
    }
    o += snprintf(
        json + o, sizeof(json) - (size_t)o,
        "{\"name\": \"bot\", \"dtype\": \"fp32\", \"shape\": [%d, %d]},"
        "{\"name\": \"R\", \"dtype\": \"fp32\", \"shape\": [%d, %d]},"
        "{\"name\": \"a2\", \"dtype\": \"fp32\", \"shape\": [%d, %d]},"
        "{\"name\": \"bot2\", \"dtype\": \"fp32\", \"shape\": [%d, %d]},"
        "{\"name\": \"R2\", \"dtype\": \"fp32\", \"shape\": [%d, %d]}],"
        " \"outputs\": [{\"buffer\": \"bot\", \"rtol\": 1e-5}, {\"buffer\": \"R\", \"rtol\": 1e-5},"
        " {\"buffer\": \"bot2\", \"rtol\": 1e-5}, {\"buffer\": \"R2\", \"rtol\": 1e-5}], \"ops\": "
        "[",
        B, D, B, D + P, B, NA, B, D, B, D + P);
    if (written)
        o += snprintf(
            json + o, sizeof(json) - (size_t)o,
            "{\"kernel\": \"bias_add\", \"inputs\": [\"wa0\", \"dwa\"], \"outputs\": [\"wa\"]},");
    char tabs[1024] = "", idxs[1024] = "";
    size_t lt = 0, li = 0;
    for (int t = 0; t < T; t++) {
        lt += (size_t)snprintf(tabs + lt, sizeof(tabs) - lt, ", \"t%d\"", t);
        li += (size_t)snprintf(idxs + li, sizeof(idxs) - li, ", \"i%d\"", t);
    }
    o += snprintf(
        json + o, sizeof(json) - (size_t)o,
        "{\"name\": \"mi\", \"kernel\": \"mlp_interaction\", \"inputs\": [\"h\", \"wa\", \"ba\", "
        "\"wb\", \"bb\"%s%s], \"outputs\": [\"bot\", \"R\"], \"attrs\": {\"pooling\": \"%s\"}},"
        "{\"name\": \"l2\", \"kernel\": \"linear_act\", \"inputs\": [\"h\", \"wa\", \"ba\"], "
        "\"outputs\": [\"a2\"]},"
        "{\"name\": \"l3\", \"kernel\": \"linear_act\", \"inputs\": [\"a2\", \"wb\", \"bb\"], "
        "\"outputs\": [\"bot2\"]},"
        "{\"name\": \"ei\", \"kernel\": \"embedding_interaction\", \"inputs\": [\"bot2\"%s%s], "
        "\"outputs\": [\"R2\"], \"attrs\": {\"pooling\": \"%s\"}}]}",
        tabs, idxs, pool, tabs, idxs, pool);
    return (size_t)o < sizeof(json) ? json : NULL;
}
