# One run per issue target, for a short GPU visit: the numbers the issues' targets name, each
# from an untraced `graphrun run` that also verifies graph == eager == reference. The full
# suites (foundation, decode, dlrm, tp, capcheck, service, cupti) have more context. PDL is on by
# default on cc 9.0+ GPUs now: the plain runs say --no-pdl so that their labels keep meaning what
# they meant in earlier bench/results.
bench_targets() {
    local w=workloads/decode_step.json
    # the README's main job exactly as a user types it (issue 26: its default is its best form)
    one t_main_job run $w --quiet
    # issue 3
    one t_decode_default run $w --iters 1000 --no-pdl --quiet
    one t_decode_default_pdl run $w --variant fused --iters 1000 --pdl --quiet
    one t_decode_gemv_only run $w --variant gemv_only --iters 2000 --no-pdl --quiet
    one t_decode_gemv_stream run $w --variant gemv_stream --iters 2000 --no-pdl --quiet
    one t_decode_fp32_B4 run $w --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4 --iters 2000 --no-pdl --quiet
    one t_decode_fp32_B4_pdl run $w --variant fused --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4 --iters 2000 --pdl --quiet
    one t_decode_B64 run $w --set B=64 --iters 200 --no-cpu-ref --no-pdl --quiet
    # issue 4
    one t_dlrm_b128 run workloads/dlrm_small.json --set B=128 --iters 5000 --batches 40 --no-pdl --quiet
    one t_dlrm_b2048 run workloads/dlrm_small.json --set B=2048 --iters 2000 --batches 40 --no-pdl --quiet
    one t_dlrm_b128_pdl run workloads/dlrm_small.json --variant fused --set B=128 --iters 5000 --batches 40 --pdl --quiet
    # issue 2 (launch-bound figures vary between runs: see bench/results/README.md)
    one t_launch_bound run workloads/launch_bound.json --iters 1000 --no-pdl --quiet
    one t_launch_bound_pdl run workloads/launch_bound.json --iters 1000 --pdl --quiet
    one t_pointwise_4096_t1024_u20_pdl run workloads/pointwise_fusion.json --variant unfused --set n=4096 --set threads=1024 --iters 20000 --batches 40 --unroll 20 --pdl --quiet
}
