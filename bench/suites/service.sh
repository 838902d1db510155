# Replay service targets (issue #7): capture once, then `graphrun replay --iters 10000` in the
# service, against one-shot `graphrun run --iters 10000` of the same workload and variant.
# workloads/decode_step.json when it exists, else launch_bound. Sourced by bench/run.sh; `one
# LABEL graphrun-args...` runs and summarises. The service runs on a socket of its own and is
# stopped at the end.
bench_service() {
    local wl=workloads/decode_step.json
    [ -f "$wl" ] || wl=workloads/launch_bound.json
    local dir sock
    dir="$(mktemp -d /tmp/gr_bench_service.XXXXXX)"
    sock="$dir/graphrun.sock"
    local t0 t1 t2
    t0=$(date +%s.%N)
    one service_capture capture "$wl" --socket "$sock" --quiet
    t1=$(date +%s.%N)
    one service_replay_10000 replay --iters 10000 --compare-eager --socket "$sock" --quiet
    t2=$(date +%s.%N)
    local variant
    variant=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["variants"][0]["variant"])' \
        "$O/service_capture.json" 2>/dev/null)
    local t3 t4
    t3=$(date +%s.%N)
    one service_run_10000 run "$wl" ${variant:+--variant "$variant"} --iters 10000 --quiet
    t4=$(date +%s.%N)
    "$B" stop --socket "$sock" > "$O/service_stop.txt" 2>&1 || status=1
    cp "$sock.log" "$O/service.log" 2>/dev/null
    rm -rf "$dir"
    python3 - "$O/service_replay_10000.json" "$O/service_run_10000.json" "$t0" "$t1" "$t2" "$t3" "$t4" <<'PY' || true
import json, sys
rep, run = (json.load(open(p))["variants"][0] for p in sys.argv[1:3])
t0, t1, t2, t3, t4 = map(float, sys.argv[3:8])
def med(v, k):
    return v[k]["step_us"]["median"]
print(f"   service vs run ({rep['variant']}): graph {med(rep, 'graph_replay'):.3f} vs {med(run, 'graph_replay'):.3f} us/step"
      f" (x{med(rep, 'graph_replay') / med(run, 'graph_replay'):.3f}), eager {med(rep, 'eager'):.3f} vs"
      f" {med(run, 'eager'):.3f} us/step; checks equal: {[c['rel_l2'] for c in rep['checks']] == [c['rel_l2'] for c in run['checks']]}")
print(f"   wall clock: capture {t1 - t0:.2f} s (service start, reference, capture) + replay 10000 {t2 - t1:.2f} s;"
      f" one-shot run {t4 - t3:.2f} s")
PY
}
