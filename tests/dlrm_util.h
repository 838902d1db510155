/* Workloads shared by the dlrm suites (tests/test_dlrm.c, tests/test_gpu_dlrm.c). */
#ifndef GR_TESTS_DLRM_UTIL_H
#define GR_TESTS_DLRM_UTIL_H

/* A workload with mlp_interaction (op "mi") on h [B, K], W_a [NA, K], W_b [D, NA] and T tables
 * of D (bag indices of type idt per row, pooling pool), and after it the chain it replaces on
 * the same buffers: linear_act (relu) twice ("l2", "l3"), then embedding_interaction ("ei").
 * Outputs bot, R (mlp_interaction) and bot2, R2 (the chain), each at 1e-5 against the
 * reference. Random, non-zero data. With `written`, W_a is the output of a bias_add op (so
 * nothing may be read before the PDL wait). Returns a static buffer (overwritten by the next
 * call), or NULL when the workload would not fit it. */
const char *gr_test_mlp_json(int B, int K, int NA, int D, int T, int bag, const char *idt,
                             const char *pool, int written);

#endif
