# DLRM targets (issue #4): dlrm_small at B = 128 (graph-fused <= 40 us per batch) and B = 2048
# (graph-fused <= 60 us). One run per size gives every variant, eager and graph: unfused,
# fused (8 kernels: the lookups inside the interaction), fused_tbe (9 kernels, one chain) and
# fused_2stream (the same 9 with TBE on a parallel branch: read the overlap off these two),
# fused_tf32 (TF32 tensor cores where cuBLASLt runs the layers, B > 256; its own tolerances) and
# fused_tf32x3 (3xTF32 on tensor cores in graphrun's own mma.sync kernel, fp32 tolerances).
# Around them: the same with --pdl, the fused Linear layers forced to one impl (simt, tiled,
# cuBLASLt) to check the auto choice per shape, and real Criteo rows (--input) when the checkout has the
# sample. docs/dlrm_small.md says what each number was predicted to be. Sourced by bench/run.sh;
# `one LABEL graphrun-args...` runs and summarises.
bench_dlrm() {
    one dlrm_b128 run workloads/dlrm_small.json --set B=128 --iters 5000 --batches 40 --no-pdl --quiet
    one dlrm_b2048 run workloads/dlrm_small.json --set B=2048 --iters 2000 --batches 40 --no-pdl --quiet
    one dlrm_b128_pdl run workloads/dlrm_small.json --set B=128 --iters 5000 --batches 40 --pdl --quiet
    one dlrm_b2048_pdl run workloads/dlrm_small.json --set B=2048 --iters 2000 --batches 40 --pdl --quiet
    one dlrm_b128_lt run workloads/dlrm_small.json --variant fused --set B=128 --set linear_impl=lt --iters 5000 --batches 40 --no-pdl --quiet
    one dlrm_b2048_simt run workloads/dlrm_small.json --variant fused --set B=2048 --set linear_impl=simt --iters 2000 --batches 40 --no-pdl --quiet
    one dlrm_b2048_tiled run workloads/dlrm_small.json --variant fused --set B=2048 --set linear_impl=tiled --iters 2000 --batches 40 --no-pdl --quiet
    one dlrm_b2048_lt run workloads/dlrm_small.json --variant fused --set B=2048 --set linear_impl=lt --iters 2000 --batches 40 --no-pdl --quiet
    one dlrm_b2048_x3_alltc run workloads/dlrm_small.json --variant fused_tf32x3 --set B=2048 --set x3_impl=tc --iters 2000 --batches 40 --no-pdl --quiet
    if [ -f tests/data/criteo_sample.tsv ]; then
        one dlrm_b128_criteo run workloads/dlrm_small.json --input tests/data/criteo_sample.tsv --set B=128 --iters 5000 --batches 40 --no-pdl --quiet
    fi
}
