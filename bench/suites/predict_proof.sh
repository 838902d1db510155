# Issue 28's proof: for every bundled workload, cupti-launchstat's prediction from the eager
# trace against the graph measured untraced in the same `graphrun run` (the trace's region records
# carry graphrun's own untraced figures), with this GPU's calibration (`cupti-launchstat calibrate`,
# run first) and with the table's row. Plain graphs (--no-pdl): the prediction's graph_predicted_us
# is a plain graph; where PDL matters most, a second run with PDL compares graph_pdl_predicted_us
# with the PDL graph.
# Traces are deleted after their report (they are large); the reports' JSON stay.
# Sourced by bench/run.sh; bench/peers/predict_table.py prints the table.
bench_predict_proof() {
    local L
    L="$(dirname "$B")/cupti-launchstat"
    "$L" calibrate -o "$O/calibration.json" > "$O/calibrate.txt" 2>&1 || status=1
    tail -25 "$O/calibrate.txt"
    local cases=( # label|workload|args|modes (plain: --no-pdl; pdl: --pdl)
        "pw_4096|pointwise_fusion.json|--set n=4096 --iters 20000 --batches 40|plain pdl"
        "lb|launch_bound.json|--iters 500|plain pdl"
        "decode_fused|decode_step.json|--variant fused --iters 1000|plain pdl"
        "dlrm_b128|dlrm_small.json|--set B=128 --variant fused --iters 5000 --batches 40|plain"
        "pw_1e8|pointwise_fusion.json|--iters 500|plain"
        "dlrm_b2048|dlrm_small.json|--set B=2048 --variant fused_tf32x3 --iters 2000 --batches 40|plain"
        "decode_unfused|decode_step.json|--variant unfused --iters 500|plain"
    )
    local c label wl args modes mode flag t
    for c in "${cases[@]}"; do
        IFS='|' read -r label wl args modes <<< "$c"
        for mode in $modes; do
            flag=--no-pdl
            [ "$mode" = pdl ] && flag=--pdl
            t="$O/pp_${label}_$mode.jsonl"
            # shellcheck disable=SC2086 # args is a word list
            one "pp_${label}_$mode" run "workloads/$wl" $args $flag --trace "$t" --trace-iters 50 --quiet
            "$L" report "$t" --predict --calibration "$O/calibration.json" \
                --json "$O/pp_${label}_${mode}_predict.json" > "$O/pp_${label}_${mode}_predict.txt" 2>&1 || status=1
            "$L" report "$t" --predict --json "$O/pp_${label}_${mode}_predict_table.json" \
                > /dev/null 2>&1 || status=1
            rm -f "$t"
        done
    done
    python3 bench/peers/predict_table.py "$O" | tee "$O/predict_table.md"
}
