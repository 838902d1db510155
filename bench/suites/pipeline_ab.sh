# Issue 23's before/after: the step times of graphrun before the run pipeline (GR_BASELINE: a
# graphrun binary from commit 70a1637, e.g. .gpu/b/baseline/graphrun from
# `GR_PACK_BASELINE=70a1637 scripts/gpu-pack`, with its own workloads in GR_BASELINE_WORKLOADS)
# and the current one, alternating A B A B A B on the same GPU in one call, each repeat its own
# log. Both plain (the baseline had no PDL default): the pipeline must not change a timed step.
# Sourced by bench/run.sh; `one LABEL graphrun-args...`.
bench_pipeline_ab() {
    local base="${GR_BASELINE:-}" bw="${GR_BASELINE_WORKLOADS:-}"
    if [ -z "$base" ] || [ ! -x "$base" ] || [ -z "$bw" ]; then
        echo "   pipeline_ab: set GR_BASELINE (graphrun binary) and GR_BASELINE_WORKLOADS (its workloads/)"
        status=1
        return
    fi
    local cases=(
        "lb_tiny|launch_bound.json|--variant tiny --iters 2000"
        "pw_4096_unfused|pointwise_fusion.json|--variant unfused --set n=4096 --iters 20000 --batches 40"
        "pw_1e8|pointwise_fusion.json|--variant fused_vec --iters 1000"
        "decode_fused|decode_step.json|--variant fused --iters 1000"
        "dlrm_b128|dlrm_small.json|--variant fused --set B=128 --iters 5000 --batches 40"
    )
    local c label wl args rep
    for c in "${cases[@]}"; do
        IFS='|' read -r label wl args <<< "$c"
        for rep in 1 2 3; do
            # shellcheck disable=SC2086 # args is a word list
            B="$base" one "ab_${label}_before_r$rep" run "$bw/$wl" $args --quiet
            # shellcheck disable=SC2086
            one "ab_${label}_after_r$rep" run "workloads/$wl" $args --no-pdl --quiet
        done
    done
}
