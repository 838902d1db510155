#!/usr/bin/env bash
# run 105 (session 20): the three-kernel n = 4096 graph's block size (threads 64..1024, plain)
# beside torch.cuda.graph's in one call: is the 0.17 us of run 104 the kernels' shape?
set -u
cd "$(dirname "$0")/.."
T0=$(date +%s); DL=$((T0 + ${DEADLINE_S:-200}))
left() { local l=$((DL - $(date +%s))); [ $l -lt 5 ] && l=5; [ $l -gt $1 ] && l=$1; echo $l; }
[ -d .gpu/b ] || tar -C .gpu -xJf .gpu/b.txz || { echo "no xz"; exit 9; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
export GR_BUILD_DIR=$PWD/.gpu/b NCCL_NVLS_ENABLE=0
R=run105; L=$OUT/$R; mkdir -p $L
S=$L/summary.txt
step() { echo "$(date -u +%T) $*" | tee -a $S; tar -C $OUT -czf $OUT/$R.tgz.part $R 2>/dev/null && mv $OUT/$R.tgz.part $OUT/$R.tgz; }
nvidia-smi > $L/nvidia-smi.txt 2>&1
echo "$(cat .gpu/PACKED_AT | tr '\n' ' ') (packed build)" > $L/commit.txt
G=.gpu/b/graphrun
timeout $(left 60) python3 bench/peers/torch_peers.py --only pointwise --json $L/torch.json > $L/torch.txt 2>&1; step "torch rc=$?"
grep -E "pointwise_n4096 cuda_graph:" $L/torch.txt | tee -a $S
for r in 1 2; do for t in 64 128 256 512 1024; do
  timeout $(left 20) $G run workloads/pointwise_fusion.json --variant unfused --set n=4096 --set threads=$t --iters 20000 --batches 40 --no-pdl --no-launch-floor --json $L/t${t}_r$r.json > $L/t${t}_r$r.txt 2>&1
  echo "r$r threads $t rc=$? $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); v=j["variants"][0]; print(round(v["graph_replay"]["step_us"]["median"], 3), v.get("verified"))' $L/t${t}_r$r.json 2>&1)" | tee -a $S
done; done
tar -C $OUT -czf $OUT/$R.tgz $R
rm -rf $L $OUT/$R.tgz.part
