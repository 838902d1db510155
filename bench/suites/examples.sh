# User kernels (issue 24): the examples a user brings (workloads/examples), every variant eager vs
# graph, at the lecture's size and at a launch-bound one, with and without --pdl; the PTX module
# built by nvcc (build/examples). Sourced by bench/run.sh; `one LABEL graphrun-args...`.
bench_examples() {
    one add_mul_act_16m run workloads/examples/add_mul_act.json --iters 2000 --no-pdl --quiet
    one add_mul_act_4096 run workloads/examples/add_mul_act.json --set n=4096 --iters 20000 --batches 40 --no-pdl --quiet
    one add_mul_act_4096_pdl run workloads/examples/add_mul_act.json --set n=4096 --iters 20000 --batches 40 --pdl --quiet
    one softmax_1024x4096 run workloads/examples/softmax.json --iters 2000 --no-pdl --quiet
    one softmax_64x16384 run workloads/examples/softmax.json --set rows=64 --set n=16384 --iters 5000 --no-pdl --quiet
    local b="${GR_BUILD_DIR:-build}/examples/softmax_ptx.json"
    if [ -e "$b" ]; then one softmax_ptx run "$b" --iters 2000 --no-pdl --quiet; fi
}
