# Tensor-parallel decode step (issue #9). Sourced by bench/run.sh; `one LABEL graphrun-args...`
# runs and summarises (its summary reads the "variants" entries of graphrun tp's JSON: the
# unsharded single-GPU step and one per P). Default size: bf16, L16 d2048 f8192 r16, B = 1.
#   - P = 1 everywhere: the all-reduce is a real NCCL call (a device copy on one rank) inside the
#     graph; the report also times the unsharded step on the same GPU.
#   - P = 2, 4, 8 only when that many CUDA devices are visible (graphrun tp --count-devices), then
#     one sweep over all of them (one report with the summary table across P).
# Targets: at P = 2, graph us/step below the single-GPU graph ("vs 1 GPU" above 1.00x); at P = 8,
# "removed>=" (a lower bound on the share of the eager step's launch overhead the graph removes)
# at least 50%. See docs/tensor_parallel.md.
bench_tp() {
    local n
    n=$("$B" tp --count-devices 2>/dev/null) || n=0
    one tp_p1_default tp --tp 1 --iters 1000 --quiet
    for P in 2 4 8; do
        if [ "$n" -ge "$P" ]; then
            one "tp_p${P}_default" tp --tp "$P" --iters 1000 --quiet
        else
            echo "== tp_p${P}_default: skipped (needs $P CUDA devices, found $n)"
        fi
    done
    if [ "$n" -ge 2 ]; then
        one tp_sweep_default tp --tp auto --iters 1000 --quiet
    fi
}
