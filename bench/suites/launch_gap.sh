# Why graphrun's graph node costs more than the bare probe's (issue #26: 1.101 vs 0.780 us per
# tiny node, 0.655 vs 0.476 per empty node in run 82, the same kernel source, the capture checker
# ruled out). Four candidates, each measured with the SM clock sampled by nvidia-smi every 50 ms
# while it runs (a lower clock in one process would show):
#   probe        gr_launch_probe: bare kernels, shared CUDA runtime
#   probe_ef     the same after 330 eager steps of the same kernels, as graphrun run times eager
#                before it captures (run 85: graphrun +0.18 us per node over the probe)
#   probe_gr     gr_launch_probe_gr --via bare: the same kernels, linked with graphrun's kernel
#                library and the static runtime graphrun uses
#   probe_grk    gr_launch_probe_gr --via graphrun: graphrun's own kernels through their launch
#                functions, in the bare program
#   graphrun     graphrun run launch_bound (--no-pdl), with and without the in-process bandwidth
#                probe that runs before the timing (--no-bandwidth)
# Two rounds, in alternating order; each run its own log. Sourced by bench/run.sh.
bench_launch_gap() {
    local P="${GR_BUILD_DIR:-build}/gr_launch_probe" PG="${GR_BUILD_DIR:-build}/gr_launch_probe_gr"
    local d="$O/launch_gap"
    mkdir -p "$d"
    clocked() { # label, command...: run it with the SM clock sampled; one log each
        local label="$1"
        shift
        nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
            --format=csv,noheader -lms 50 > "$d/$label.clocks.csv" 2>/dev/null &
        local smi=$!
        "$@" > "$d/$label.out" 2>&1
        local rc=$?
        kill $smi 2>/dev/null
        wait $smi 2>/dev/null
        [ $rc -ne 0 ] && { status=1; echo "   $label: exit $rc"; tail -3 "$d/$label.out"; }
    }
    local r k
    for r in 1 2; do
        local order=(probe probe_ef probe_gr probe_grk graphrun graphrun_nobw)
        [ $r -eq 2 ] && order=(graphrun_nobw graphrun probe_grk probe_gr probe_ef probe)
        for what in "${order[@]}"; do
            for k in tiny empty; do
                case $what in
                probe) clocked "${what}_${k}_r$r" "$P" --kernel $k --k 1000 --mode graph ;;
                probe_ef) clocked "${what}_${k}_r$r" "$P" --kernel $k --k 1000 --mode graph --eager-first 330 ;;
                probe_gr) clocked "${what}_${k}_r$r" "$PG" --via bare --kernel $k --k 1000 --mode graph ;;
                probe_grk) clocked "${what}_${k}_r$r" "$PG" --via graphrun --kernel $k --k 1000 --mode graph ;;
                graphrun) clocked "${what}_${k}_r$r" "$B" run workloads/launch_bound.json --variant $k \
                    --no-pdl --iters 300 --quiet --json "$d/${what}_${k}_r$r.json" ;;
                graphrun_nobw) clocked "${what}_${k}_r$r" "$B" run workloads/launch_bound.json --variant $k \
                    --no-pdl --no-bandwidth --iters 300 --quiet --json "$d/${what}_${k}_r$r.json" ;;
                esac
            done
        done
    done
    python3 - "$d" <<'PY' || status=1
import csv, glob, json, os, statistics, sys
d = sys.argv[1]
def per_node(label):
    out = os.path.join(d, label + ".out")
    js = os.path.join(d, label + ".json")
    try:
        if os.path.exists(js):
            r = json.load(open(js))
            v = r["variants"][0]
            return v["graph_replay"]["step_us"]["median"] / max(v["kernels_per_step"], 1)
        line = [l for l in open(out) if l.startswith("{")][-1]
        return json.loads(line)["us_per_kernel"]
    except Exception as e:
        return None
def clocks(label):
    sm = []
    try:
        for row in csv.reader(open(os.path.join(d, label + ".clocks.csv"))):
            try:
                sm.append(float(row[1].strip().split()[0]))
            except (IndexError, ValueError):
                pass
    except OSError:
        pass
    return (min(sm), statistics.median(sm), max(sm)) if sm else None
print("   us per node (graph, --no-pdl), SM clock MHz min/median/max while it ran")
for what in ("probe", "probe_ef", "probe_gr", "probe_grk", "graphrun", "graphrun_nobw"):
    for k in ("tiny", "empty"):
        cells = []
        for r in (1, 2):
            lab = f"{what}_{k}_r{r}"
            pn, ck = per_node(lab), clocks(lab)
            cells.append((f"{pn:.3f}" if pn else "-") + (f" @{ck[0]:.0f}/{ck[1]:.0f}/{ck[2]:.0f}" if ck else ""))
        print(f"   {what:<14} {k:<5}  r1 {cells[0]:<24} r2 {cells[1]}")
PY
}
