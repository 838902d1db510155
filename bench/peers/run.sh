#!/usr/bin/env bash
# graphrun beside its peers, back to back in one device call: the PyTorch peers
# (bench/peers/torch_peers.py), the bare CUDA launch probe (gr_launch_probe) and graphrun on the
# same workloads. Each run writes its own log and JSON under DIR (never overwritten: a repeat gets
# its own suffix); a ratio table is printed last and written to DIR/peers_table.md.
#   bench/peers/run.sh DIR [REPEATS]     (build/ from scripts/setup; untraced, CUDA events)
set -uo pipefail
cd "$(dirname "$0")/../.."
D="${1:?usage: bench/peers/run.sh DIR [REPEATS]}"
R="${2:-1}"
B="${GR_BUILD_DIR:-build}"
mkdir -p "$D"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
status=0

fresh() { # a log name that does not exist yet: NAME.ext, NAME.r2.ext, ...
    local base="$1" ext="$2" k=1 p="$D/$1.$2"
    while [ -e "$p" ]; do k=$((k + 1)); p="$D/$base.r$k.$ext"; done
    echo "$p"
}

gr() { # label, then graphrun run args
    local label="$1"; shift
    local txt json
    txt=$(fresh "$label" txt); json="${txt%.txt}.json"
    "$B/graphrun" run "$@" --quiet --json "$json" > "$txt" 2>&1
    local rc=$?
    [ $rc -ne 0 ] && { status=1; echo "!! $label exit $rc"; tail -5 "$txt"; }
}

probe() { # label, then probe args
    local label="$1"; shift
    local out
    out=$(fresh "$label" json)
    "$B/gr_launch_probe" "$@" > "$out" 2> "${out%.json}.err"
    local rc=$?
    [ $rc -ne 0 ] && { status=1; echo "!! $label exit $rc"; cat "${out%.json}.err"; }
}

for rep in $(seq 1 "$R"); do
    # PyTorch first, then the probe, then graphrun: the same order every repeat
    out=$(fresh torch_peers json)
    PYTHONUNBUFFERED=1 python3 bench/peers/torch_peers.py --json "$out" > "${out%.json}.txt" 2>&1
    rc=$?
    [ $rc -ne 0 ] && { status=1; echo "!! torch_peers exit $rc"; tail -5 "${out%.json}.txt"; }
    for k in empty tiny; do
        probe "probe_${k}_eager" --kernel $k --k 1000 --mode eager --steps 5
        probe "probe_${k}_graph" --kernel $k --k 1000 --mode graph
        probe "probe_${k}_graph_pdl" --kernel $k --k 1000 --mode graph --pdl
    done
    gr pw_1e8 workloads/pointwise_fusion.json --iters 1000
    gr pw_4096 workloads/pointwise_fusion.json --set n=4096 --iters 20000 --batches 40
    gr pw_4096_unfused_u20_pdl workloads/pointwise_fusion.json --variant unfused --set n=4096 --iters 20000 --batches 40 --unroll 20 --pdl
    gr lb workloads/launch_bound.json --iters 1000
    gr lb_pdl workloads/launch_bound.json --iters 1000 --pdl
    gr decode workloads/decode_step.json --variant unfused --iters 1000
    gr decode_fused workloads/decode_step.json --variant fused --iters 1000
    gr decode_fused_pdl workloads/decode_step.json --variant fused --iters 1000 --pdl
    gr dlrm_b128 workloads/dlrm_small.json --set B=128 --variant fused --iters 5000 --batches 40
    gr dlrm_b128_pdl workloads/dlrm_small.json --set B=128 --variant fused --iters 5000 --batches 40 --pdl
    gr dlrm_b2048_x3_pdl workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --iters 2000 --batches 40 --pdl
done

python3 - "$D" <<'PY' | tee "$D/peers_table.md"
import glob, json, os, sys
d = sys.argv[1]
def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None
print("| run | variant | graph us/step [p10, p90] | eager us/step | verified | file |")
print("|---|---|---|---|---|---|")
for p in sorted(glob.glob(os.path.join(d, "*.json"))):
    r = load(p)
    if not r:
        continue
    name = os.path.basename(p)
    if r.get("tool") == "graphrun":
        for v in r.get("variants", []):
            g = v.get("graph_replay", {}).get("step_us", {})
            e = v.get("eager", {}).get("step_us", {})
            if not g:
                print(f"| {name} | {v['variant']} | {v.get('status')} | | | |")
                continue
            print(f"| {r['workload']} | {v['variant']} | {g['median']:.2f} [{g['p10']:.2f}, {g['p90']:.2f}] "
                  f"| {e.get('median', 0):.2f} | {v.get('verified')} | {name} |")
    elif r.get("tool") == "gr_launch_probe":
        s = r["step_us"]
        print(f"| probe {r['kernel']} {r['mode']}{' pdl' if r['pdl'] else ''} | K={r['k']} "
              f"| {s['median']:.2f} [{s['p10']:.2f}, {s['p90']:.2f}] ({r['us_per_kernel']:.3f} us/kernel) | | {r['verified']} | {name} |")
    elif r.get("tool") == "torch_peers":
        for row in r["rows"]:
            s = row["step_us"]
            size = f"n={row['n']}" if "n" in row else f"K={row['k']}"
            print(f"| torch {row['workload']} {size} | {row['mode']} | {s['median']:.2f} [{s['p10']:.2f}, {s['p90']:.2f}] "
                  f"| | {row['verified']} | {name} |")
PY
exit $status
