/* The table of kernel environment knobs (grep getenv in kernels/ to keep it whole). */
#include "replay/knobs.h"

#include <stdlib.h>

static const gr_knob knobs[] = {
    {"GR_DEC_CARVEOUT", "kernels/decode_gemv.cu", "shared-memory carveout of the decode kernels"},
    {"GR_DEC_S_INFLIGHT", "kernels/decode_gemv.cu", "decode_step_stream: weight loads in flight"},
    {"GR_STEP_TIMES", "kernels/decode_gemv.cu, decode_splitk.cu",
     "decode step kernels write per-block timestamps"},
    {"GR_IX_RB", "kernels/dlrm.c", "embedding_interaction: rows per block"},
    {"GR_IX_REG", "kernels/dlrm.c", "embedding_interaction: gather through registers"},
    {"GR_MI_RB", "kernels/dlrm.c", "mlp_interaction: rows per block"},
    {"GR_LIN_TC_CFG", "kernels/dlrm.c", "linear_act tensor-core tile configuration"},
    {"GR_LIN_WG_CFG", "kernels/dlrm.c", "linear_act wgmma configuration"},
    {"GR_LIN_WG_REGA", "kernels/dlrm.c", "linear_act wgmma register-A form"},
    {"GR_LIN_WG_BULK", "kernels/dlrm.c", "linear_act wgmma bulk (TMA) form"},
    {"GR_LIN_WG_TALL", "kernels/dlrm.c", "linear_act wgmma tall bulk form"},
    {"GR_NCCL_LIBRARY", "kernels/tp.c", "the NCCL library loaded for allreduce_sum"},
    {NULL, NULL, NULL},
};

const gr_knob *gr_knobs(void) {
    return knobs;
}

const char *gr_knob_value(const gr_knob *k) {
    const char *v = getenv(k->name);
    return v && *v ? v : NULL;
}
