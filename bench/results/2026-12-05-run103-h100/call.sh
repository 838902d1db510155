#!/usr/bin/env bash
# run 103 (session 20): the final build's GPU checks after the review fixes: gpu_workloads (the
# run driver and its launch floor), gpu_cupti (dataflow records), launch_bound's floor report, the
# decode fusion what-if's bytes
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); DL=$((T0 + ${DEADLINE_S:-200}))
left() { local l=$((DL - $(date +%s))); [ $l -lt 5 ] && l=5; [ $l -gt $1 ] && l=$1; echo $l; }
[ -d .gpu/b ] || tar -C .gpu -xJf .gpu/b.txz || { echo "no xz"; exit 9; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GR_BUILD_DIR=$PWD/.gpu/b NCCL_NVLS_ENABLE=0
R=run103; L=$OUT/$R; mkdir -p $L
S=$L/summary.txt
step() { echo "$(date -u +%T) $*" | tee -a $S; tar -C $OUT -czf $OUT/$R.tgz.part $R 2>/dev/null && mv $OUT/$R.tgz.part $OUT/$R.tgz; }
nvidia-smi > $L/nvidia-smi.txt 2>&1
echo "$(cat .gpu/PACKED_AT | tr '\n' ' ') (packed build)" > $L/commit.txt
G=.gpu/b/graphrun; C=.gpu/b/cupti-launchstat
timeout $(left 60) .gpu/b/tests/gr_tests --suite gpu_workloads > $L/gpu_workloads.log 2>&1; step "gpu_workloads rc=$? $(tail -1 $L/gpu_workloads.log)"
timeout $(left 60) .gpu/b/tests/gr_tests --suite gpu_cupti > $L/gpu_cupti.log 2>&1; step "gpu_cupti rc=$? $(tail -1 $L/gpu_cupti.log)"
timeout $(left 30) $G run workloads/launch_bound.json --iters 300 --json $L/lb.json > $L/lb_report.txt 2>&1; step "lb rc=$?"
sed -n '/launch floor/,/^$/p' $L/lb_report.txt | tee -a $S
timeout $(left 40) $G run workloads/decode_step.json --variant unfused --iters 200 --no-pdl --trace $L/dec.jsonl --trace-iters 10 --quiet --json $L/dec.json > $L/dec.txt 2>&1; step "decode traced rc=$?"
timeout $(left 40) $C report $L/dec.jsonl --predict > $L/dec_predict.txt 2>&1; step "decode predict rc=$?"
grep -A12 "fusion what-if" $L/dec_predict.txt | head -12 | tee -a $S
rm -f $L/dec.jsonl
tar -C $OUT -czf $OUT/$R.tgz $R
rm -rf $L $OUT/$R.tgz.part
