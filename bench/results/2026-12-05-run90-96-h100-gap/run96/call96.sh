#!/usr/bin/env bash
# run 96 (session 19): which part of the bandwidth probe, before the setup, with one eager step
# before the capture, gaps the graph (run 95 reproduced the gap in the bare probe that way)
set -u
cd "$(dirname "$0")/.."
[ -d .gpu/b ] || tar -C .gpu -xJf .gpu/b.txz || { echo "no xz"; exit 9; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
R=run96; L=$OUT/$R; mkdir -p $L/gap
nvidia-smi > $L/nvidia-smi.txt 2>&1
echo "$(cat .gpu/PACKED_AT | tr '\n' ' ') (packed build)" > $L/commit.txt
B=.gpu/b/graphrun PP=.gpu/b/gr_pipe_probe P=.gpu/b/gr_launch_probe
capfirst=session,capture,reference,eager_check,capture_check,graph_check,verdict,time_eager,time_graph
row() { # label, command...
  local l=$1; shift
  "$@" > $L/gap/$l.out 2>&1 || echo "$l: exit $?" >> $L/errors.txt
}
PF=.gpu/b/gr_launch_probe_full
g="--kernel empty --k 1000 --mode graph"
for r in 1 2; do
  row probe_r$r $P $g
  row bw_e1_r$r $PF $g --before-setup --before bwprobe --eager-first 1
  row ev81_e1_r$r $PF $g --before-setup --before events:81 --eager-first 1
  row ev2_e1_r$r $PF $g --before-setup --before events:2 --eager-first 1
  row memcpy_e1_r$r $PF $g --before-setup --before memcpy:1024 --eager-first 1
  row kernel_e1_r$r $PF $g --before-setup --before kernel:1024 --eager-first 1
  row sync_e1_r$r $PF $g --before-setup --before sync --eager-first 1
done
python3 - $L/gap > $L/summary.txt <<'PY'
import json, os, sys, glob
d = sys.argv[1]
rows = {}
for f in sorted(glob.glob(d + "/*.out")):
    lab = os.path.basename(f)[:-4]
    js = f[:-4] + ".json"
    base, r = lab.rsplit("_r", 1)
    try:
        if os.path.exists(js):
            for v in json.load(open(js))["variants"]:
                pn = v["graph_replay"]["step_us"]["median"] / max(v["kernels_per_step"], 1)
                rows.setdefault(base + "." + v["variant"], {})[r] = pn
        else:
            for l in open(f):
                if l.startswith("{"):
                    j = json.loads(l)
                    rows.setdefault(base + "." + j.get("variant", "probe"), {})[r] = j["us_per_kernel"]
    except Exception as e:
        rows.setdefault(base, {})[r] = None
for k, v in rows.items():
    print(f"{k:<32} " + "  ".join(f"r{r} {v[r]:.3f}" if v[r] else f"r{r} -" for r in sorted(v)))
PY
cat $L/summary.txt; cat $L/errors.txt 2>/dev/null
tar -C $OUT -czf $OUT/$R.tgz $R && rm -rf $L
