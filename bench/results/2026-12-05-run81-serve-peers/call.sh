#!/usr/bin/env bash
# run 81: the fixed suites, the examples, #25 buckets/update/serve, #26 peers, under one deadline
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); DL=$((T0 + ${DEADLINE_S:-520}))
left() { local l=$((DL - $(date +%s))); [ $l -lt 5 ] && l=5; [ $l -gt $1 ] && l=$1; echo $l; }
tar -C .gpu -xzf .gpu/b.tgz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GR_BUILD_DIR=$PWD/.gpu/b NCCL_NVLS_ENABLE=0
L=$OUT/run81; mkdir -p $L
S=$L/summary.txt
step() { echo "$(date -u +%T) $*" | tee -a $S; }
nvidia-smi > $L/nvidia-smi.txt 2>&1
T=.gpu/b/tests/gr_tests; G=.gpu/b/graphrun
for s in gpu_usermod gpu_service; do
  timeout $(left 120) $T --suite $s > $L/suite_$s.log 2>&1; step "suite $s rc=$? $(tail -1 $L/suite_$s.log)"
done
timeout $(left 60) $G run workloads/examples/softmax.json --json $L/ex_softmax.json > $L/ex_softmax.txt 2>&1; step "softmax rc=$?"
timeout $(left 60) $G run .gpu/b/examples/softmax_ptx.json --json $L/ex_softmax_ptx.json > $L/ex_softmax_ptx.txt 2>&1; step "softmax_ptx rc=$?"
GR_BUILD_DIR=.gpu/b BENCH_OUT=$L/bench timeout $(left 240) bench/run.sh buckets > $L/buckets.log 2>&1; step "buckets rc=$?"
( OUT=$L/serve GR_BUILD_DIR=$PWD/.gpu/b timeout $(left 120) scripts/gpu-check serve > $L/serve.log 2>&1 ); step "serve rc=$?"
GR_BUILD_DIR=.gpu/b timeout $(left 400) bench/peers/run.sh $L/peers > $L/peers.log 2>&1; step "peers rc=$?"
tar -C $OUT -czf $OUT/run81.tgz run81
rm -rf $L
