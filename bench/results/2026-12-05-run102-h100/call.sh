#!/usr/bin/env bash
# run 102 (session 20; call101.sh again, for an H200): the launch floor with 256-thread empty kernels (launch_bound, plain and
# PDL: floor / graph of the empty variant should not pass 100%); the fusion what-if's plan bytes
# with liveness on decode unfused; on an H200 also #26's peers folder and torch_node_state
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); DL=$((T0 + ${DEADLINE_S:-560}))
left() { local l=$((DL - $(date +%s))); [ $l -lt 5 ] && l=5; [ $l -gt $1 ] && l=$1; echo $l; }
[ -d .gpu/b ] || tar -C .gpu -xJf .gpu/b.txz || { echo "no xz"; exit 9; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GR_BUILD_DIR=$PWD/.gpu/b NCCL_NVLS_ENABLE=0
R=run102; L=$OUT/$R; mkdir -p $L
S=$L/summary.txt
step() { echo "$(date -u +%T) $*" | tee -a $S; tar -C $OUT -czf $OUT/$R.tgz.part $R 2>/dev/null && mv $OUT/$R.tgz.part $OUT/$R.tgz; }
nvidia-smi > $L/nvidia-smi.txt 2>&1
echo "$(cat .gpu/PACKED_AT | tr '\n' ' ') (packed build)" > $L/commit.txt
G=.gpu/b/graphrun; C=.gpu/b/cupti-launchstat
timeout $(left 40) $G run workloads/launch_bound.json --iters 300 --json $L/lb.json > $L/lb_report.txt 2>&1; step "lb rc=$?"
timeout $(left 40) $G run workloads/launch_bound.json --iters 300 --no-pdl --json $L/lb_nopdl.json > $L/lb_nopdl_report.txt 2>&1; step "lb nopdl rc=$?"
for f in lb lb_nopdl; do sed -n '/launch floor/,/^$/p' $L/${f}_report.txt | tee -a $S; done
timeout $(left 60) $G run workloads/decode_step.json --variant unfused --iters 200 --no-pdl --trace $L/dec.jsonl --trace-iters 10 --quiet --json $L/dec.json > $L/dec.txt 2>&1; step "decode traced rc=$?"
timeout $(left 60) $C report $L/dec.jsonl --predict > $L/dec_predict.txt 2>&1; step "decode predict rc=$?"
grep -A14 "fusion what-if" $L/dec_predict.txt | head -16 | tee -a $S
rm -f $L/dec.jsonl
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  timeout $(left 60) python3 bench/peers/torch_node_state.py --json $L/torch_node_state.json > $L/torch_node_state.log 2>&1; step "torch_node_state rc=$? $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print({k: j[k]["median"] for k in ("fresh", "fresh_after", "captured_after")}, {k: {kk: v["median"] for kk, v in j[k].items()} for k in ("bare_fresh", "bare_fresh_after", "bare_captured_after")}, j["verified"])' $L/torch_node_state.json 2>&1 | tail -1)"
  timeout $(left 400) bench/peers/run.sh $L/peers > $L/peers.log 2>&1; step "peers rc=$?"
  cat $L/peers/ratio_table.md >> $S 2>/dev/null
fi
tar -C $OUT -czf $OUT/$R.tgz $R
rm -rf $L $OUT/$R.tgz.part
