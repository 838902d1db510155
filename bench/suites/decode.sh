# decode_step targets (issue #3). Sourced by bench/run.sh; `one LABEL graphrun-args...` runs and
# summarises. Each run takes well under a minute on an H200.
#   - default size (bf16, L16 d2048 f8192 r16 B1), every variant (fused_persistent: the step as
#     one persistent kernel, the comparison of docs/decode_step.md):
#     graph-fused <= 500 us per step;
#     the HBM floor (weights + activations over the copy bandwidth of the same run) is ~395 us.
#     Once more with --pdl (programmatic dependent launch; labelled in the report).
#   - gemv_only alone: the fused GEMV kernels over the 16 layers' weights; its "% of copy" is
#     the weight-streaming bandwidth including 32 kernel boundaries (target >= 85%).
#   - gemv_stream alone: the same kernels over the same 1.62 GB as 2 kernels (stacked weights):
#     the streaming rate itself; gemv_only - gemv_stream is what the kernel boundaries cost.
#   - fp32, L8 d1024 f4096 r16 B4: graph-fused <= 150 us per step.
#   - bf16 B=4, 8 and 64: larger batches (speed matters at B <= 8; above 8 the fused ops run
#     cuBLAS plus epilogue kernels and must beat unfused). The CPU reference grows with B (~30 s
#     at B=4, minutes at B=64, mostly the gemm reference), so these check graph == eager and
#     fused == unfused only (--no-cpu-ref).
bench_decode() {
    local w=workloads/decode_step.json
    one decode_default_bf16 run $w --iters 1000 --no-pdl --quiet
    one decode_default_bf16_pdl run $w --iters 1000 --pdl --quiet
    one decode_gemv_only run $w --variant gemv_only --iters 2000 --no-pdl --quiet
    one decode_gemv_only_pdl run $w --variant gemv_only --iters 2000 --pdl --quiet
    one decode_gemv_stream run $w --variant gemv_stream --iters 2000 --no-pdl --quiet
    one decode_gemv_stream_pdl run $w --variant gemv_stream --iters 2000 --pdl --quiet
    one decode_fp32_L8_d1024_B4 run $w --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 \
        --set r=16 --set B=4 --iters 2000 --no-pdl --quiet
    one decode_fp32_L8_d1024_B4_pdl run $w --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 \
        --set r=16 --set B=4 --iters 2000 --pdl --quiet
    one decode_B4_bf16 run $w --set B=4 --iters 1000 --no-cpu-ref --no-pdl --quiet
    one decode_B8_bf16 run $w --set B=8 --iters 1000 --no-cpu-ref --no-pdl --quiet
    one decode_B64_bf16 run $w --set B=64 --iters 200 --no-cpu-ref --no-pdl --quiet
}
