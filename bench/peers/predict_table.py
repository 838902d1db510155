#!/usr/bin/env python3
"""Issue 28's proof table from bench/suites/predict_proof.sh's folder: per workload, run mode
(plain graph or PDL) and eager region, the measured eager step, the predicted graph step (this
GPU's calibration; the table's row beside it), the graph measured untraced in the same run, the
error, and the verdict against the measured gain. Usage: predict_table.py DIR"""
import glob
import json
import os
import sys


def scopes(path):
    try:
        r = json.load(open(path))
    except (OSError, ValueError):
        return {}
    return {s["scope"]: s for s in r.get("prediction", {}).get("scopes", []) if s.get("predicted")}


def main():
    d = sys.argv[1]
    print("| run | region | nodes/step | eager us (untraced) | predicted graph us (calibrated; table) "
          "| measured graph us (untraced) | error (calibrated; table) | predicted gain | measured gain | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    bad = 0
    rows = 0
    for f in sorted(glob.glob(os.path.join(d, "pp_*_predict.json"))):
        run = os.path.basename(f)[3:-len("_predict.json")]
        pdl = run.endswith("_pdl")
        cal, tab = scopes(f), scopes(f.replace("_predict.json", "_predict_table.json"))
        for name, s in cal.items():
            key = "graph_pdl_predicted_us" if pdl else "graph_predicted_us"
            pred = s.get(key)
            if pdl and pred is None:  # the eager run already used PDL: its plain prediction is the PDL one
                pred = s.get("graph_predicted_us")
            m = s.get("graph_measured") or {}
            meas = m.get("us")
            eager = s.get("eager_measured_us")
            if pred is None or meas is None or not eager:
                continue
            t = tab.get(name, {})
            tpred = t.get(key) if t.get(key) is not None else t.get("graph_predicted_us")
            err = 100 * (pred - meas) / meas
            terr = 100 * (tpred - meas) / meas if tpred else float("nan")
            pg, mg = eager - pred, eager - meas
            noise = 0.03 * eager
            verdict_ok = (pg >= noise) == (mg >= noise) or abs(mg) < noise
            rows += 1
            bad += abs(err) > 15 or not verdict_ok
            print(f"| {run} | {name} | {s.get('nodes_per_step')} | {eager:.2f} | {pred:.2f}; {tpred:.2f} | "
                  f"{meas:.2f} | {err:+.1f}%; {terr:+.1f}% | {pg:.1f} us ({pg / eager * 100:.1f}%) | "
                  f"{mg:.1f} us ({mg / eager * 100:.1f}%) | {'ok' if verdict_ok else 'WRONG'} |")
    print(f"\n{rows} rows; {bad} outside 15% or with the wrong verdict")


if __name__ == "__main__":
    main()
