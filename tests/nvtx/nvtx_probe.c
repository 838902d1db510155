/* gr_nvtx_probe: drives graphrun's NVTX annotation (replay/nvtx.h) the way the sessions do, with
 * no GPU: for each variant of a workload, a capture phase with an op range per op, an eager
 * timing phase of N steps with op ranges, and a replay phase of N steps. The timeline suite runs
 * it as a fresh process under the recording injection (tests/nvtx/nvtx_rec.c), since NVTX picks
 * its tool once per process, at the first NVTX call.
 *   gr_nvtx_probe WORKLOAD STEPS [name=value ...]
 * Prints "tool attached: 0|1" and the ranges it opened per category. */
#include <stdio.h>
#include <stdlib.h>

#include "core/device.h"
#include "replay/load.h"
#include "replay/nvtx.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: gr_nvtx_probe WORKLOAD STEPS [name=value ...]\n");
        return 2;
    }
    int steps = atoi(argv[2]);
    gr_error err;
    gr_error_clear(&err);
    gr_load_req req = {argv[1], NULL, (const char *const *)(argv + 3), argc - 3, NULL, 0, NULL, 0};
    gr_target target = gr_target_default();
    gr_loaded l;
    if (gr_load_resolve(&req, &target, &l, &err) != GR_OK) {
        fprintf(stderr, "gr_nvtx_probe: %s\n", err.msg);
        gr_loaded_free(&l);
        return 2;
    }
    const gr_exec_hooks *h = gr_nvtx_op_hooks();
    long ranges[4] = {0, 0, 0, 0};
    for (int v = 0; v < l.nplans; v++) {
        const gr_plan *p = l.plans[v];
        gr_nvtx_phase_begin(p, GR_NVTX_CAPTURE, "");
        ranges[GR_NVTX_CAPTURE]++;
        for (int i = 0; i < p->nops; i++) {
            h->before_op(h->user, &p->ops[i]);
            h->after_op(h->user, &p->ops[i]);
            ranges[GR_NVTX_CAPTURE]++;
        }
        gr_nvtx_phase_end();
        gr_nvtx_phase_begin(p, GR_NVTX_EAGER, "timing");
        ranges[GR_NVTX_EAGER]++;
        for (int s = 0; s < steps; s++) {
            gr_nvtx_step_begin();
            ranges[GR_NVTX_EAGER]++;
            for (int i = 0; i < p->nops; i++) {
                h->before_op(h->user, &p->ops[i]);
                h->after_op(h->user, &p->ops[i]);
                ranges[GR_NVTX_EAGER]++;
            }
            gr_nvtx_step_end();
        }
        gr_nvtx_phase_end();
        gr_nvtx_phase_begin(p, GR_NVTX_REPLAY, "timing");
        ranges[GR_NVTX_REPLAY]++;
        for (int s = 0; s < steps; s++) {
            gr_nvtx_step_begin();
            gr_nvtx_step_end();
            ranges[GR_NVTX_REPLAY]++;
        }
        gr_nvtx_phase_end();
    }
    printf("tool attached: %d\n", gr_nvtx_tool_attached());
    printf("ranges: eager %ld, capture %ld, replay %ld\n", ranges[GR_NVTX_EAGER],
           ranges[GR_NVTX_CAPTURE], ranges[GR_NVTX_REPLAY]);
    gr_loaded_free(&l);
    return 0;
}
