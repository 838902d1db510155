#!/usr/bin/env python3
"""The tables of a bench/peers/run.sh folder: every run's figures (peers_table.md) and graphrun
beside the best PyTorch figure per workload, with the ratio (ratio_table.md).

    python3 bench/peers/tables.py DIR

Reads DIR/*.json (graphrun --json, gr_launch_probe, torch_peers.py --json) and DIR/runs.tsv
(run.sh's manifest: kind, label, file, exit code, arguments) to name runs that failed or left no
JSON. A run repeated (run.sh DIR R) has files LABEL.json, LABEL.r2.json, ...: each side's best
figure over the repeats is taken. Prints both tables and writes them to DIR. Exit 0, or 2 when DIR
is not a folder.
"""
import glob
import json
import os
import sys

# graphrun variants that compute the workload's function (gemv_only and gemv_stream do not;
# fused_tf32 is TF32-accurate, so it only meets PyTorch's TF32 rows)
DECODE_VARIANTS = ("unfused", "fused", "fused_persistent")
DLRM_FP32 = ("unfused", "fused", "fused_tbe", "fused_2stream", "fused_tf32x3")
TORCH_STEP_MODES = ("eager", "cuda_graph", "compile", "compile_reduce_overhead")

# one row per figure the issue asks for: graphrun runs (run.sh labels) with the variants and
# figures that count, the PyTorch case and modes, the bare probe where it applies
ROWS = [
    {"name": "pointwise y = relu((a + b) * c), n = 1e8 fp32", "gr": ["pw_1e8"],
     "torch": ("pointwise_n100000000", TORCH_STEP_MODES)},
    {"name": "pointwise n = 4096, one step per launch", "gr": ["pw_4096"],
     "torch": ("pointwise_n4096", TORCH_STEP_MODES)},
    {"name": "pointwise n = 4096, 20 steps per launch", "gr": ["pw_4096_unfused_u20_pdl", "pw_4096_unfused_loop20"],
     "figures": ("graph", "loop"), "torch": ("pointwise_n4096", ("cuda_graph_unroll20",))},
    {"name": "launch_bound tiny K = 1000, plain graph", "gbps": False, "gr": ["lb"], "variants": ("tiny",),
     "torch": ("launch_bound_tiny_K1000", ("eager", "cuda_graph")), "probe": ("tiny", False)},
    {"name": "launch_bound tiny K = 1000, PDL", "gbps": False, "gr": ["lb_pdl"], "variants": ("tiny",),
     "torch": ("launch_bound_tiny_K1000", ("eager", "cuda_graph")), "probe": ("tiny", True)},
    {"name": "launch_bound empty K = 1000, plain graph", "gbps": False, "gr": ["lb"], "variants": ("empty",),
     "probe": ("empty", False)},
    {"name": "launch_bound empty K = 1000, PDL", "gbps": False, "gr": ["lb_pdl"], "variants": ("empty",),
     "probe": ("empty", True)},
    {"name": "decode_step default (bf16 L16 d2048 f8192 r16 B1)",
     "gr": ["decode", "decode_fused", "decode_fused_nopdl"], "variants": DECODE_VARIANTS,
     "torch": ("decode_bf16_L16_d2048_f8192_r16_B1", TORCH_STEP_MODES)},
    {"name": "decode_step fp32 L8 d1024 f4096 r16 B4", "gr": ["decode_fp32_b4", "decode_fp32_b4_nopdl"],
     "variants": DECODE_VARIANTS, "torch": ("decode_fp32_L8_d1024_f4096_r16_B4", TORCH_STEP_MODES)},
    {"name": "dlrm_small B = 128, fp32", "gr": ["dlrm_b128", "dlrm_b128_nopdl"], "variants": DLRM_FP32,
     "torch": ("dlrm_B128_fp32", TORCH_STEP_MODES)},
    {"name": "dlrm_small B = 2048, fp32-level (TF32 off in PyTorch)",
     "gr": ["dlrm_b2048_x3", "dlrm_b2048_x3_nopdl"], "variants": DLRM_FP32,
     "torch": ("dlrm_B2048_fp32", TORCH_STEP_MODES)},
    {"name": "dlrm_small B = 128, PyTorch with TF32 (graphrun fp32: fused_tf32 is fused at B <= 256)",
     "gr": ["dlrm_b128", "dlrm_b128_nopdl"], "variants": DLRM_FP32,
     "torch": ("dlrm_B128_tf32", TORCH_STEP_MODES)},
    {"name": "dlrm_small B = 2048, TF32 on both sides", "gr": ["dlrm_b2048_tf32"], "variants": ("fused_tf32",),
     "torch": ("dlrm_B2048_tf32", TORCH_STEP_MODES)},
]


def load(p):
    try:
        with open(p) as f:
            return json.load(f)
    except Exception:
        return None


def files_of(d, label):
    """LABEL.json and its repeats LABEL.r2.json, ..."""
    return sorted(glob.glob(os.path.join(d, glob.escape(label) + ".json"))
                  + glob.glob(os.path.join(d, glob.escape(label) + ".r[0-9]*.json")))


def manifest(d):
    """run.sh's runs.tsv: [(kind, label, file, rc, args)]; empty when absent."""
    out = []
    try:
        with open(os.path.join(d, "runs.tsv")) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t")
                if len(parts) >= 4 and parts[0] != "kind":
                    out.append((parts[0], parts[1], parts[2], parts[3], parts[4] if len(parts) > 4 else ""))
    except OSError:
        pass
    return out


def fmt(s):
    return f"{s['median']:.2f} [{s['p10']:.2f}, {s['p90']:.2f}]"


def gr_figures(r):
    """(figure kind, step_us summary, variant json) of each timed variant of one graphrun JSON:
    graph replay (per step, also with --unroll N) and the device loop when present."""
    out = []
    for v in r.get("variants", []):
        g = (v.get("graph_replay") or {}).get("step_us")
        if g:
            out.append(("graph", g, v))
        lp = (v.get("device_loop") or {}).get("step_us")
        if lp:
            out.append(("loop", lp, v))
    return out


def peers_table(d):
    lines = ["| run | variant / mode | graph us/step [p10, p90] | eager us/step | other | verified | file |",
             "|---|---|---|---|---|---|---|"]
    for p in sorted(glob.glob(os.path.join(d, "*.json"))):
        r = load(p)
        name = os.path.basename(p)
        if not isinstance(r, dict):
            lines.append(f"| {name} | (not JSON) | | | | | {name} |")
            continue
        if r.get("tool") == "graphrun":
            flags = []
            if r.get("unroll", 1) > 1:
                flags.append(f"unroll {r['unroll']}")
            if "pdl" in r:
                flags.append("pdl" if r["pdl"] else "no pdl")
            for v in r.get("variants", []):
                g = (v.get("graph_replay") or {}).get("step_us")
                e = (v.get("eager") or {}).get("step_us")
                lp = (v.get("device_loop") or {}).get("step_us")
                other = ", ".join(flags + ([f"device loop {fmt(lp)}"] if lp else []))
                if not g:
                    lines.append(f"| {r.get('workload')} | {v.get('variant')} | {v.get('status', 'not timed')} | | "
                                 f"{other} | {v.get('verified')} | {name} |")
                    continue
                es = f"{e['median']:.2f}" if e else ""
                lines.append(f"| {r.get('workload')} | {v.get('variant')} | {fmt(g)} | {es} | {other} | "
                             f"{v.get('verified')} | {name} |")
        elif r.get("tool") == "gr_launch_probe":
            s = r.get("step_us", {})
            lines.append(f"| probe {r.get('kernel')} {r.get('mode')}{' pdl' if r.get('pdl') else ''} | K={r.get('k')} "
                         f"| {fmt(s) if s else '-'} | | {r.get('us_per_kernel', 0):.3f} us/kernel | "
                         f"{r.get('verified')} | {name} |")
        elif r.get("tool") == "torch_peers":
            for row in r.get("rows", []):
                s = row.get("step_us")
                spl = row.get("steps_per_launch", 1)
                other = f"{spl} steps per launch" if spl and spl > 1 else ""
                if row.get("gbps"):
                    other += (", " if other else "") + f"{row['gbps']:.0f} GB/s"
                lines.append(f"| torch {row.get('case', row.get('workload'))} | {row.get('mode')} | "
                             f"{fmt(s) if s else 'FAILED: ' + str(row.get('error', ''))[:80]} | | {other} | "
                             f"{row.get('verified')} | {name} |")
    return lines


def best_gr(d, spec):
    """The best graphrun figure of a row: (candidate or None, candidates, notes)."""
    cands, notes = [], []
    figures = spec.get("figures", ("graph",))
    for label in spec["gr"]:
        fs = files_of(d, label)
        if not fs:
            notes.append(f"{label}: no JSON")
        for p in fs:
            r = load(p)
            if not isinstance(r, dict) or r.get("tool") != "graphrun":
                notes.append(f"{os.path.basename(p)}: unreadable")
                continue
            run = os.path.basename(p)[:-5]
            for kind, s, v in gr_figures(r):
                if kind not in figures:
                    continue
                if spec.get("variants") and v.get("variant") not in spec["variants"]:
                    continue
                how = []
                if kind == "loop":
                    how.append(f"device loop {r.get('device_loop')}")
                elif r.get("unroll", 1) > 1:
                    how.append(f"unroll {r['unroll']}")
                how.append("pdl" if r.get("pdl") else "no pdl")
                fl = v.get("hbm_floor_us")
                pct = v.get("graph_pct_of_floor") if kind == "graph" else None
                if pct is None and fl:
                    pct = 100.0 * fl / s["median"]
                lf = r.get("launch_floor") or {}
                lf_node = (lf.get("pdl_node_us") if r.get("pdl") else None) or lf.get("node_us")
                cands.append({"us": s["median"], "s": s, "run": run, "variant": v.get("variant"),
                              "how": ", ".join(how), "verified": bool(v.get("verified")), "pct": pct,
                              "bytes": v.get("bytes_per_step"), "kernels": v.get("kernels_per_step"),
                              "launch_floor_node_us": lf_node if lf.get("measured") else None})
            if not any(c["run"] == run for c in cands):
                st = [f"{v.get('variant')}: {v.get('status')}" for v in r.get("variants", [])
                      if not spec.get("variants") or v.get("variant") in spec["variants"]]
                notes.append(f"{run}: no timed figure ({'; '.join(st) or 'no matching variant'})")
    good = [c for c in cands if c["verified"]]
    pick = min(good or cands, key=lambda c: c["us"]) if cands else None
    return pick, cands, notes


def torch_rows(d):
    rows = []
    for p in sorted(glob.glob(os.path.join(d, "*.json"))):
        r = load(p)
        if isinstance(r, dict) and r.get("tool") == "torch_peers":
            for row in r.get("rows", []):
                if "case" not in row:  # files from before the case key
                    row["case"] = (f"pointwise_n{row['n']}" if "n" in row else
                                   f"launch_bound_tiny_K{row['k']}" if "k" in row else "")
                rows.append({**row, "_file": os.path.basename(p)})
    return rows


def best_torch(rows, spec):
    if "torch" not in spec:
        return None, []
    case, modes = spec["torch"]
    mine = [r for r in rows if r.get("case") == case and r.get("mode") in modes]
    timed = [r for r in mine if r.get("step_us")]
    good = [r for r in timed if r.get("verified")]
    pick = min(good or timed, key=lambda r: r["step_us"]["median"]) if timed else None
    return pick, mine


def probes(d):
    out = []
    for p in sorted(glob.glob(os.path.join(d, "*.json"))):
        r = load(p)
        if isinstance(r, dict) and r.get("tool") == "gr_launch_probe":
            out.append(r)
    return out


def ratio_table(d):
    trows = torch_rows(d)
    prs = probes(d)
    man = manifest(d)
    meta = {}
    for p in sorted(glob.glob(os.path.join(d, "*.json"))):
        r = load(p)
        if isinstance(r, dict) and r.get("tool") == "graphrun" and "gr" not in meta:
            meta["gr"] = f"graphrun {r.get('graphrun_version', '?')}, {r.get('date', '?')}, " \
                         f"{(r.get('device') or {}).get('name', '?')}"
        if isinstance(r, dict) and r.get("tool") == "torch_peers" and "torch" not in meta:
            meta["torch"] = f"PyTorch {r.get('torch', '?')} on {r.get('device', '?')}"
    lines = [f"# graphrun beside PyTorch and the bare launch probe: {os.path.basename(os.path.abspath(d))}", "",
             f"{meta.get('gr', 'graphrun: no JSON')}; {meta.get('torch', 'PyTorch: no JSON')}. "
             "Per step, median [p10, p90] over batches, CUDA events, untraced. Each side's best over "
             "its runs, variants, modes and repeats, verified figures only (a figure that failed its "
             "check is shown only when there is no other, marked NOT verified). ratio = graphrun / "
             "PyTorch (< 1: graphrun faster). probe: gr_launch_probe us per kernel in a graph, "
             "fresh and after graphrun's bandwidth probe and one eager step (the state graphrun's variants "
             "are timed in; issue 26), each with graphrun's us per node (step / kernels per step) over it in "
             "brackets, and graphrun's own launch floor per node (measured in its process after the variants). % floor: graphrun's HBM floor "
             "(graph_pct_of_floor, bytes at the read-only/write-only bandwidth of the same run) over "
             "the figure. GB/s: the workload's bytes per step (PyTorch's count: every weight and input read "
             "once, outputs written once; no intermediates) over each side's figure.", "",
             "| workload | graphrun best us/step | graphrun run / variant | PyTorch best us/step | PyTorch mode "
             "| graphrun / PyTorch | probe us/kernel (graphrun us/node, ratio) | graphrun % floor | GB/s graphrun / PyTorch |",
             "|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for spec in ROWS:
        g, _, gnotes = best_gr(d, spec)
        t, tall = best_torch(trows, spec)
        notes += [f"{spec['name']}: {n}" for n in gnotes]
        if g:
            gfig = fmt(g["s"])
            grun = f"{g['run']} / {g['variant']} ({g['how']})" + ("" if g["verified"] else " NOT verified")
        else:
            gfig, grun = "no result", "graphrun run failed or missing: " + "; ".join(gnotes or ["-"])
        if "torch" not in spec:
            tfig, tmode = "n/a", "(no PyTorch peer)"
        elif t:
            tfig = fmt(t["step_us"])
            spl = t.get("steps_per_launch", 1)
            tmode = t["mode"] + (f" ({spl} steps per launch)" if spl and spl > 1 else "") + \
                ("" if t.get("verified") else " NOT verified")
        else:
            errs = [f"{r.get('mode')}: {str(r.get('error', 'not timed'))[:60]}" for r in tall]
            tfig, tmode = "no result", "PyTorch failed or missing" + (": " + "; ".join(errs) if errs else "")
        ratio = f"{g['us'] / t['step_us']['median']:.3f}" if g and t else "-"
        probe = "-"
        if "probe" in spec:
            kern, pdl = spec["probe"]
            ps = [p for p in prs if p.get("kernel") == kern and p.get("mode") == "graph"
                  and bool(p.get("pdl")) == pdl and p.get("us_per_kernel")]
            # the two process states (issue 26): fresh, and after earlier GPU work (--before)
            parts = []
            node = g["us"] / g["kernels"] if g and g.get("kernels") else None
            for state, sel in (("fresh", [p for p in ps if not p.get("before")]),
                               ("after work", [p for p in ps if p.get("before")])):
                if not sel:
                    continue
                p = min(sel, key=lambda p: p["us_per_kernel"])
                pk = p["us_per_kernel"]
                parts.append(f"{state} {pk:.3f}" + (f" ({node / pk:.2f})" if node else "") +
                             ("" if p.get("verified", True) else " NOT verified"))
            if parts:
                probe = "; ".join(parts) + (f"; graphrun {node:.3f}" if node else "")
                if g and g.get("launch_floor_node_us"):
                    probe += f", its launch floor {g['launch_floor_node_us']:.3f}"
            else:
                probe = f"no probe {kern} graph{' pdl' if pdl else ''}"
        pct = f"{g['pct']:.1f}%" if g and g.get("pct") is not None else "-"
        # one byte count for both sides (PyTorch's: the workload's own bytes, weights read once;
        # graphrun's bytes_per_step also counts a variant's intermediates), so the two compare
        gb = "-"
        if g and t and t.get("bytes_per_step") and spec.get("gbps", True):
            nb = t["bytes_per_step"]
            gb = f"{nb / g['us'] / 1e3:.0f} / {nb / t['step_us']['median'] / 1e3:.0f}"
        lines.append(f"| {spec['name']} | {gfig} | {grun} | {tfig} | {tmode} | {ratio} | {probe} | {pct} | {gb} |")
    failed = [m for m in man if m[3] not in ("0", "")]
    missing = [m for m in man if m[2] and not os.path.exists(os.path.join(d, m[2]))]
    if failed or missing or notes:
        lines += ["", "Runs that failed, left no JSON or gave no figure:"]
        for kind, label, f, rc, args in failed:
            log = os.path.splitext(f)[0] + (".err" if kind == "probe" else ".txt")
            lines.append(f"- {kind} {label}: exit {rc} ({f}; log {log}){': ' + args if args else ''}")
        for kind, label, f, rc, args in missing:
            if (kind, label, f, rc, args) not in failed:
                lines.append(f"- {kind} {label}: {f} missing")
        gone = {label for _, label, _, _, _ in failed}
        for n in notes:
            if not any(n.endswith(f": {label}: no JSON") for label in gone):
                lines.append(f"- {n}")
    return lines


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: bench/peers/tables.py DIR (a bench/peers/run.sh output folder)", file=sys.stderr)
        return 2
    d = sys.argv[1]
    for name, lines in (("peers_table.md", peers_table(d)), ("ratio_table.md", ratio_table(d))):
        text = "\n".join(lines) + "\n"
        print(text)
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
