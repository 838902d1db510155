#!/usr/bin/env bash
# run 80: failing suites alone, example, main job as typed, pipeline before/after
set -u
cd "$(dirname "$0")/.."
tar -C .gpu -xzf .gpu/b.tgz
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GR_BUILD_DIR=$PWD/.gpu/b
L=$OUT/logs; mkdir -p $L
nvidia-smi > $L/nvidia-smi.txt 2>&1
T=.gpu/b/tests/gr_tests
for s in gpu_usermod gpu_service gpu_calibrate; do
  timeout 150 $T --suite $s > $L/suite_$s.log 2>&1; echo "suite $s rc=$?" | tee -a $L/summary.txt
done
G=.gpu/b/graphrun
for ex in add_mul_act softmax softmax_ptx; do
  timeout 60 $G run workloads/examples/$ex.json --json $L/ex_$ex.json > $L/ex_$ex.txt 2>&1; echo "example $ex rc=$?" | tee -a $L/summary.txt
done
timeout 90 $G run workloads/decode_step.json --json $L/main_job.json > $L/main_job.txt 2>&1; echo "main job rc=$?" | tee -a $L/summary.txt
GR_BASELINE=$PWD/.gpu/b/baseline/graphrun GR_BASELINE_WORKLOADS=$PWD/.gpu/b/baseline/workloads BENCH_OUT=$L/ab timeout 300 bench/run.sh pipeline_ab > $L/pipeline_ab.log 2>&1; echo "pipeline_ab rc=$?" | tee -a $L/summary.txt
tar -C $OUT -czf $OUT/run80.tgz logs
rm -rf $OUT/logs
