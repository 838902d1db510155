#!/usr/bin/env bash
# run 82, from the default (fat) build: calibrate (tiny chain), graphrun vs the bare probe, the
# served-step breakdown, bucket memory, #28's proof, every GPU suite, pointwise forms; one
# deadline, priority order
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); DL=$((T0 + ${DEADLINE_S:-350}))
left() { local l=$((DL - $(date +%s))); [ $l -lt 5 ] && l=5; [ $l -gt $1 ] && l=$1; echo $l; }
tar -C .gpu -xJf .gpu/b.txz || { echo "no xz"; exit 9; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GR_BUILD_DIR=$PWD/.gpu/b NCCL_NVLS_ENABLE=0
L=$OUT/run82; mkdir -p $L
S=$L/summary.txt
step() { echo "$(date -u +%T) $*" | tee -a $S; tar -C $OUT -czf $OUT/run82.tgz.part run82 2>/dev/null && mv $OUT/run82.tgz.part $OUT/run82.tgz; }
nvidia-smi > $L/nvidia-smi.txt 2>&1
T=.gpu/b/tests/gr_tests; G=.gpu/b/graphrun; P=.gpu/b/gr_launch_probe
timeout $(left 90) $T --suite gpu_calibrate > $L/suite_gpu_calibrate.log 2>&1; step "gpu_calibrate rc=$? $(tail -1 $L/suite_gpu_calibrate.log)"
# graphrun's graph per node vs the bare probe: is the capture checker (CUPTI) what costs?
mkdir -p $L/launch
for rep in 1 2; do
  for k in tiny empty; do $P --kernel $k --k 1000 --mode graph > $L/launch/probe_${k}_r$rep.json 2>&1; done
  timeout $(left 60) $G run workloads/launch_bound.json --iters 1000 --no-pdl --json $L/launch/lb_r$rep.json > $L/launch/lb_r$rep.txt 2>&1
  timeout $(left 60) $G run workloads/launch_bound.json --iters 1000 --no-pdl --no-capture-check --json $L/launch/lb_nocc_r$rep.json > $L/launch/lb_nocc_r$rep.txt 2>&1
done
step "launch experiments done"
( OUT=$L/serve GR_BUILD_DIR=$PWD/.gpu/b timeout $(left 120) scripts/gpu-check serve > $L/serve.log 2>&1 ); step "serve rc=$?"
sock=/tmp/gr82.sock
timeout $(left 120) $G capture workloads/decode_step.json --variant fused --name dec --buckets B=1,2,4,8,16,32,64 --no-cpu-ref --socket $sock --quiet > $L/buckets_capture.txt 2>&1
$G list --socket $sock > $L/buckets_list.txt 2>&1; $G list --socket $sock --json $L/buckets_list.json > /dev/null 2>&1
$G capture workloads/decode_step.json --variant fused --name one --no-cpu-ref --socket $sock --quiet > $L/one_capture.txt 2>&1
$G list --socket $sock --json $L/buckets_list2.json > /dev/null 2>&1
$G stop --socket $sock > /dev/null 2>&1; cp $sock.log $L/buckets_service.log 2>/dev/null
step "buckets memory done"
# every GPU suite from this (fat: sm_80/86/89/90 + PTX, sm_90a) build, six at a time
( OUT=$L/suites GR_BUILD_DIR=$PWD/.gpu/b GR_SUITES='^gpu_' GR_SUITE_TIMEOUT=$(left 100) GR_TEST_JOBS=6 timeout $(left 120) scripts/gpu-check tests > $L/suites.log 2>&1 ); step "gpu suites rc=$?"
GR_BUILD_DIR=.gpu/b BENCH_OUT=$L/bench timeout $(left 240) bench/run.sh predict_proof > $L/predict_proof.log 2>&1; rc=$?; rm -f $L/bench/*.jsonl; step "predict_proof rc=$rc"
tar -C $OUT -czf $OUT/run82.tgz run82
rm -rf $L
