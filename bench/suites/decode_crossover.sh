# Where decode_step's fused ops should hand over from the weight-streaming GEMV kernels to cuBLAS
# (the workload param gemv_max_b; docs/decode_step.md, "gemv_max_b"). The fused variant at
# B = 4..8, each B > 4 once on the GEMV path (gemv_max_b=8) and once on the cuBLAS path
# (gemv_max_b=4); B = 4 once (both values give the same GEMV plan). Two repeats, the paths
# alternating within each, each run its own log and JSON (xover_B<b>_m<m>_r<n>). bf16 at the
# default size, PDL as run's default (the setting of run 81's 477-1168 us figures), --no-cpu-ref
# (graph == eager is still checked). Prints a table of graph-replay us/step (CUDA events, median
# per run) and the smallest B at which cuBLAS wins. Sourced by bench/run.sh:
#   bench/run.sh decode_crossover. About 18 runs of a few seconds each on an H200.
bench_decode_crossover() {
    local w=workloads/decode_step.json rep b m
    for rep in 1 2; do
        for b in 4 5 6 7 8; do
            for m in 8 4; do
                [ "$b" -le 4 ] && [ "$m" -eq 4 ] && continue # B <= 4: the same plan as m = 8
                one "xover_B${b}_m${m}_r$rep" run "$w" --variant fused --set "B=$b" \
                    --set "gemv_max_b=$m" --iters 1000 --no-cpu-ref --quiet
            done
        done
    done
    python3 - "$O" <<'PY' | tee "$O/decode_crossover.md"
import json, os, statistics, sys
out = sys.argv[1]
rows, device = {}, ""
for b in (4, 5, 6, 7, 8):
    for m in (8, 4):
        if b <= 4 and m == 4:
            continue
        us, kern = [], set()
        for rep in (1, 2):
            f = os.path.join(out, f"xover_B{b}_m{m}_r{rep}.json")
            try:
                r = json.load(open(f))
                v = r["variants"][0]
                device = device or r["device"]["name"]
                us.append(v["graph_replay"]["step_us"]["median"])
                kern.add(v["kernels_per_step"])
            except (OSError, KeyError, IndexError, ValueError):
                pass
        rows[b, m] = (us, kern)
print(f"decode_step fused, bf16 L16 d2048 f8192 r16: graph replay us/step (CUDA events, median of "
      f"1000 steps per run; runs r1, r2); {device or 'no device'}")
print()
print("| B | GEMV (gemv_max_b=8) us | kernels | cuBLAS (gemv_max_b=4) us | kernels | faster |")
print("|---|---|---|---|---|---|")
def cell(b, m):
    us, kern = rows.get((b, m), ([], set()))
    if not us:
        return "-", "-", None
    return ", ".join(f"{u:.1f}" for u in us), "/".join(str(k) for k in sorted(kern)), statistics.median(us)
first_blas = None
for b in (4, 5, 6, 7, 8):
    g, gk, gm = cell(b, 8)
    c, ck, cm = cell(b, 4) if b > 4 else ("(= GEMV)", "", None)
    faster = "-"
    if gm is not None and cm is not None:
        faster = "cuBLAS" if cm < gm else "GEMV"
        if cm < gm and first_blas is None:
            first_blas = b
        elif cm >= gm:
            first_blas = None  # the crossover is where cuBLAS wins from there on
    print(f"| {b} | {g} | {gk} | {c} | {ck} | {faster} |")
print()
if first_blas is not None:
    print(f"cuBLAS is faster from B = {first_blas} up: gemv_max_b = {first_blas - 1} "
          f"(workloads/decode_step.json params.gemv_max_b.default)")
    if first_blas == 5:
        print("B = 4 was not compared: --set B=4 --set gemv_max_b=3 (cuBLAS) looks lower")
else:
    print("GEMV is faster at B = 8 (or a run is missing): keep gemv_max_b = 8")
PY
}
