#!/usr/bin/env bash
# run 100 (session 20): the launch floor at 64 and 1024 nodes (launch_bound and pointwise n = 4096
# reports), gpu_cupti (the traces' dataflow records) and #28's proof (bench/run.sh predict_proof:
# the fusion what-if counting bytes from graphrun's plan)
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); DL=$((T0 + ${DEADLINE_S:-560}))
left() { local l=$((DL - $(date +%s))); [ $l -lt 5 ] && l=5; [ $l -gt $1 ] && l=$1; echo $l; }
[ -d .gpu/b ] || tar -C .gpu -xJf .gpu/b.txz || { echo "no xz"; exit 9; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GR_BUILD_DIR=$PWD/.gpu/b NCCL_NVLS_ENABLE=0
R=run100; L=$OUT/$R; mkdir -p $L
S=$L/summary.txt
step() { echo "$(date -u +%T) $*" | tee -a $S; tar -C $OUT -czf $OUT/$R.tgz.part $R 2>/dev/null && mv $OUT/$R.tgz.part $OUT/$R.tgz; }
nvidia-smi > $L/nvidia-smi.txt 2>&1
echo "$(cat .gpu/PACKED_AT | tr '\n' ' ') (packed build)" > $L/commit.txt
timeout $(left 40) .gpu/b/graphrun run workloads/launch_bound.json --iters 300 --json $L/lb.json > $L/lb_report.txt 2>&1; step "lb rc=$?"
timeout $(left 40) .gpu/b/graphrun run workloads/launch_bound.json --iters 300 --no-pdl --json $L/lb_nopdl.json > $L/lb_nopdl_report.txt 2>&1; step "lb nopdl rc=$?"
timeout $(left 40) .gpu/b/graphrun run workloads/pointwise_fusion.json --set n=4096 --iters 20000 --batches 40 --json $L/pw4096.json > $L/pw4096_report.txt 2>&1; step "pw4096 rc=$?"
for f in lb lb_nopdl pw4096; do sed -n '/launch floor/,/^$/p' $L/${f}_report.txt | tee -a $S; done
timeout $(left 100) .gpu/b/tests/gr_tests --suite gpu_cupti > $L/gpu_cupti.log 2>&1; step "gpu_cupti rc=$? $(tail -1 $L/gpu_cupti.log)"
BENCH_OUT=$L/proof timeout $(left 450) bench/run.sh predict_proof > $L/predict_proof.log 2>&1; step "predict_proof rc=$?"
tail -40 $L/predict_proof.log >> $S
tar -C $OUT -czf $OUT/$R.tgz $R
rm -rf $L $OUT/$R.tgz.part
