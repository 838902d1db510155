# Foundation targets (issue #2): pointwise fusion at n = 1e8 (fp32, bf16), launch_bound K=1000,
# pointwise n = 4096. Each launch-bound case also runs with --pdl (programmatic dependent launch)
# and --unroll (several steps per graph), reported separately. Sourced by bench/run.sh;
# `one LABEL graphrun-args...` runs and summarises.
bench_foundation() {
    one pointwise_1e8 run workloads/pointwise_fusion.json --iters 2000 --no-pdl --quiet
    one pointwise_1e8_bf16 run workloads/pointwise_fusion.json --set dtype=bf16 --iters 2000 --no-pdl --quiet
    one launch_bound_k1000 run workloads/launch_bound.json --iters 2000 --no-pdl --quiet
    one launch_bound_k1000_pdl run workloads/launch_bound.json --iters 2000 --pdl --quiet
    one launch_bound_k1000_t32 run workloads/launch_bound.json --set threads=32 --iters 2000 --no-pdl --quiet
    one pointwise_4096 run workloads/pointwise_fusion.json --set n=4096 --iters 20000 --batches 40 --no-pdl --quiet
    one pointwise_4096_pdl run workloads/pointwise_fusion.json --set n=4096 --iters 20000 --batches 40 --pdl --quiet
    one pointwise_4096_unroll20 run workloads/pointwise_fusion.json --set n=4096 --iters 20000 --batches 40 --unroll 20 --no-pdl --quiet
    one pointwise_4096_unroll20_pdl run workloads/pointwise_fusion.json --set n=4096 --iters 20000 --batches 40 --unroll 20 --pdl --quiet
    # fewer, larger blocks for the tiny size: 4 blocks of 1024 threads instead of 16 of 256
    one pointwise_4096_t1024 run workloads/pointwise_fusion.json --set n=4096 --set threads=1024 --iters 20000 --batches 40 --no-pdl --quiet
    one pointwise_4096_t1024_unroll20_pdl run workloads/pointwise_fusion.json --set n=4096 --set threads=1024 --iters 20000 --batches 40 --unroll 20 --pdl --quiet
}
