#!/usr/bin/env bash
# run 104 (session 20): issue 26's 3-node graph beside torch's in one call: PyTorch's pointwise
# peers (n = 4096 and 1e8), then graphrun's pointwise n = 4096 plain (--no-pdl) and with PDL
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); DL=$((T0 + ${DEADLINE_S:-200}))
left() { local l=$((DL - $(date +%s))); [ $l -lt 5 ] && l=5; [ $l -gt $1 ] && l=$1; echo $l; }
[ -d .gpu/b ] || tar -C .gpu -xJf .gpu/b.txz || { echo "no xz"; exit 9; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GR_BUILD_DIR=$PWD/.gpu/b NCCL_NVLS_ENABLE=0
R=run104; L=$OUT/$R; mkdir -p $L
S=$L/summary.txt
step() { echo "$(date -u +%T) $*" | tee -a $S; tar -C $OUT -czf $OUT/$R.tgz.part $R 2>/dev/null && mv $OUT/$R.tgz.part $OUT/$R.tgz; }
nvidia-smi > $L/nvidia-smi.txt 2>&1
echo "$(cat .gpu/PACKED_AT | tr '\n' ' ') (packed build)" > $L/commit.txt
G=.gpu/b/graphrun
for r in 1 2; do
  timeout $(left 90) python3 bench/peers/torch_peers.py --only pointwise --json $L/torch_r$r.json > $L/torch_r$r.txt 2>&1; step "torch r$r rc=$?"
  grep -E "pointwise_n4096" $L/torch_r$r.txt | head -8 | tee -a $S
  timeout $(left 30) $G run workloads/pointwise_fusion.json --set n=4096 --iters 20000 --batches 40 --no-pdl --json $L/gr_plain_r$r.json > $L/gr_plain_r$r.txt 2>&1; step "gr plain r$r rc=$?"
  timeout $(left 30) $G run workloads/pointwise_fusion.json --set n=4096 --iters 20000 --batches 40 --json $L/gr_pdl_r$r.json > $L/gr_pdl_r$r.txt 2>&1; step "gr pdl r$r rc=$?"
  for m in plain pdl; do python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(sys.argv[2], {v["variant"]: round(v["graph_replay"]["step_us"]["median"], 3) for v in j["variants"] if v.get("graph_replay")})' $L/gr_${m}_r$r.json $m 2>&1 | tee -a $S; done
done
tar -C $OUT -czf $OUT/$R.tgz $R
rm -rf $L $OUT/$R.tgz.part
