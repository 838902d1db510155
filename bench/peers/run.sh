#!/usr/bin/env bash
# graphrun beside its peers, back to back in one device call: the PyTorch peers
# (bench/peers/torch_peers.py), the bare CUDA launch probe (gr_launch_probe) and graphrun on the
# same workloads. Each run writes its own log and JSON under DIR (never overwritten: a repeat gets
# its own suffix) and a line in DIR/runs.tsv (kind, label, file, exit code, arguments); then
# bench/peers/tables.py prints every run (DIR/peers_table.md) and graphrun beside the best PyTorch
# figure and the probe per workload, with the ratio (DIR/ratio_table.md).
#   bench/peers/run.sh DIR [REPEATS]     (build/ from scripts/setup; untraced, CUDA events)
# GR_PEERS_PARTS picks parts (default "torch probe gr"; the tables always run, over everything in
# DIR), so a run can be split over several commands into one DIR; GR_PEERS_TORCH_ARGS is passed
# to torch_peers.py (e.g. "--only decode_step,dlrm_small"). PDL is on by default on compute
# capability 9.0+: the plain runs say --no-pdl.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
D="${1:?usage: bench/peers/run.sh DIR [REPEATS]}"
R="${2:-1}"
B="${GR_BUILD_DIR:-build}"
P="${GR_PEERS_PARTS:-torch probe gr}"
mkdir -p "$D"
M="$D/runs.tsv"
[ -e "$M" ] || printf 'kind\tlabel\tfile\trc\targs\n' > "$M"
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
    printf 'gr\t%s\t%s\t%s\t%s\n' "$label" "$(basename "$json")" "$rc" "$*" >> "$M"
    [ $rc -ne 0 ] && { status=1; echo "!! $label exit $rc"; tail -5 "$txt"; }
}

probe() { # label, binary, then probe args
    local label="$1" bin="$2"; shift 2
    local out
    out=$(fresh "$label" json)
    "$B/$bin" "$@" > "$out" 2> "${out%.json}.err"
    local rc=$?
    printf 'probe\t%s\t%s\t%s\t%s\n' "$label" "$(basename "$out")" "$rc" "$bin $*" >> "$M"
    [ $rc -ne 0 ] && { status=1; echo "!! $label exit $rc"; cat "${out%.json}.err"; }
}

has() { case " $P " in *" $1 "*) return 0 ;; esac; return 1; }

for _ in $(seq 1 "$R"); do
    # PyTorch first, then the probe, then graphrun: the same order every repeat
    if has torch; then
        out=$(fresh torch_peers txt) # the log's name: a run that fails may leave no JSON
        out="${out%.txt}.json"
        # shellcheck disable=SC2086
        PYTHONUNBUFFERED=1 python3 bench/peers/torch_peers.py --json "$out" ${GR_PEERS_TORCH_ARGS:-} \
            > "${out%.json}.txt" 2>&1
        rc=$?
        printf 'torch\ttorch_peers\t%s\t%s\t%s\n' "$(basename "$out")" "$rc" "${GR_PEERS_TORCH_ARGS:-}" >> "$M"
        [ $rc -ne 0 ] && { status=1; echo "!! torch_peers exit $rc"; tail -5 "${out%.json}.txt"; }
    fi
    if has probe; then
        # each graph in both process states (issue 26): fresh, and after graphrun's bandwidth
        # probe and one eager step (the state graphrun's variants are timed in; gr_launch_probe_full
        # is the same program linked with graphrun's stages)
        warm=(--before-setup --before bwprobe --eager-first 1)
        for k in empty tiny; do
            probe "probe_${k}_eager" gr_launch_probe --kernel $k --k 1000 --mode eager --steps 5
            probe "probe_${k}_graph" gr_launch_probe --kernel $k --k 1000 --mode graph
            probe "probe_${k}_graph_pdl" gr_launch_probe --kernel $k --k 1000 --mode graph --pdl
            probe "probe_${k}_graph_after" gr_launch_probe_full --kernel $k --k 1000 --mode graph "${warm[@]}"
            probe "probe_${k}_graph_pdl_after" gr_launch_probe_full --kernel $k --k 1000 --mode graph --pdl "${warm[@]}"
        done
    fi
    has gr || continue
    gr pw_1e8 workloads/pointwise_fusion.json --iters 1000
    gr pw_4096 workloads/pointwise_fusion.json --set n=4096 --iters 20000 --batches 40
    gr pw_4096_unfused_u20_pdl workloads/pointwise_fusion.json --variant unfused --set n=4096 --iters 20000 --batches 40 --unroll 20
    gr pw_4096_unfused_loop20 workloads/pointwise_fusion.json --variant unfused --set n=4096 --iters 20000 --batches 40 --device-loop 20 --unroll 20
    gr lb workloads/launch_bound.json --iters 1000 --no-pdl
    gr lb_pdl workloads/launch_bound.json --iters 1000
    gr decode workloads/decode_step.json --variant unfused --iters 1000
    gr decode_fused workloads/decode_step.json --variant fused --iters 1000
    gr decode_fused_nopdl workloads/decode_step.json --variant fused --iters 1000 --no-pdl
    gr decode_fp32_b4 workloads/decode_step.json --variant fused --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4 --iters 2000
    gr decode_fp32_b4_nopdl workloads/decode_step.json --variant fused --set dtype=fp32 --set L=8 --set d=1024 --set f=4096 --set r=16 --set B=4 --iters 2000 --no-pdl
    gr dlrm_b128 workloads/dlrm_small.json --set B=128 --variant fused --iters 5000 --batches 40
    gr dlrm_b128_nopdl workloads/dlrm_small.json --set B=128 --variant fused --iters 5000 --batches 40 --no-pdl
    gr dlrm_b2048_x3 workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --iters 2000 --batches 40
    gr dlrm_b2048_x3_nopdl workloads/dlrm_small.json --set B=2048 --variant fused_tf32x3 --iters 2000 --batches 40 --no-pdl
    gr dlrm_b2048_tf32 workloads/dlrm_small.json --set B=2048 --variant fused_tf32 --iters 2000 --batches 40
done

python3 bench/peers/tables.py "$D" || status=1
exit $status
