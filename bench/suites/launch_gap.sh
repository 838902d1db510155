# Why graphrun's graph node costs more than the bare probe's (issue #26): the rows that found
# it. Run 88 (H100): 0.762 us per empty node, the probe's, with graphrun's bandwidth probe and
# capture checker both off, 0.940 with either. Runs 89-90: the bare probe with either stage, or
# any of their generic parts, before its capture did not reproduce it. Runs 91-92 (these rows):
# graphrun's own stages through gr_pipe_probe, in the order named: the bandwidth probe then the
# eager check before the capture, or the capture check before it, bring +0.178 us per node; a
# re-capture keeps it. Runs 93-96 (.gpu scripts kept in bench/results/2026-12-05-run90-96-h100-gap):
# not module loading, not the graph's size; a previous variant brings it too; the bare probe
# shows it after graphrun's bandwidth probe and one eager step (gr_launch_probe_full
# --before-setup --before bwprobe --eager-first 1). Empty kernels, K = 1000, plain graphs, the SM
# clock sampled by nvidia-smi every 50 ms; two rounds in alternating order, each run its own log.
# Sourced by bench/run.sh.
bench_launch_gap() {
    local P="${GR_BUILD_DIR:-build}/gr_launch_probe" PP="${GR_BUILD_DIR:-build}/gr_pipe_probe"
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
    local rows=(probe graphrun graphrun_nobw_nocc bw_eager bw_init bw_capture_first bw_recapture
        bw_all_capture_first cc cc_capture_first cc_recapture all_capture_first)
    local r what
    # graphrun run's stages with the capture moved to the front
    local capfirst=session,capture,reference,eager_check,capture_check,graph_check,verdict,time_eager,time_graph
    for r in 1 2; do
        local order=("${rows[@]}")
        [ $r -eq 2 ] && order=($(printf '%s\n' "${rows[@]}" | tac))
        for what in "${order[@]}"; do
            local l="${what}_r$r" g=(--kernel empty --k 1000 --mode graph)
            local w=(workloads/launch_bound.json empty --iters 300)
            case $what in
            probe) clocked "$l" "$P" "${g[@]}" ;;
            bw_eager) clocked "$l" "$PP" "${w[@]}" --bandwidth --stages session,eager_check,capture,time_graph ;;
            bw_init) clocked "$l" "$PP" "${w[@]}" --bandwidth --stages session,init,capture,time_graph ;;
            bw_capture_first) clocked "$l" "$PP" "${w[@]}" --bandwidth --stages session,capture,eager_check,time_graph ;;
            bw_recapture) clocked "$l" "$PP" "${w[@]}" --bandwidth \
                --stages session,eager_check,capture,capture,time_graph ;;
            bw_all_capture_first) clocked "$l" "$PP" "${w[@]}" --bandwidth --stages "$capfirst" ;;
            cc) clocked "$l" "$PP" "${w[@]}" --stages session,capture_check,capture,time_graph ;;
            cc_capture_first) clocked "$l" "$PP" "${w[@]}" --stages session,capture,capture_check,time_graph ;;
            cc_recapture) clocked "$l" "$PP" "${w[@]}" --stages session,capture_check,capture,capture,time_graph ;;
            all_capture_first) clocked "$l" "$PP" "${w[@]}" --stages "$capfirst" ;;
            graphrun) clocked "$l" "$B" run workloads/launch_bound.json --variant empty \
                --no-pdl --iters 300 --quiet --json "$d/$l.json" ;;
            graphrun_nobw_nocc) clocked "$l" "$B" run workloads/launch_bound.json --variant empty \
                --no-pdl --no-bandwidth --no-capture-check --iters 300 --quiet --json "$d/$l.json" ;;
            esac
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
print("   us per empty node (graph, --no-pdl), SM clock MHz min/median/max while it ran")
for what in ("probe", "graphrun", "graphrun_nobw_nocc", "bw_eager", "bw_init", "bw_capture_first",
             "bw_recapture", "bw_all_capture_first", "cc", "cc_capture_first", "cc_recapture",
             "all_capture_first"):
    cells = []
    for r in (1, 2):
        lab = f"{what}_r{r}"
        pn, ck = per_node(lab), clocks(lab)
        cells.append((f"{pn:.3f}" if pn else "-") + (f" @{ck[0]:.0f}/{ck[1]:.0f}/{ck[2]:.0f}" if ck else ""))
    print(f"   {what:<20} r1 {cells[0]:<24} r2 {cells[1]}")
PY
}
