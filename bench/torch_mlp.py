#!/usr/bin/env python3
"""A small MLP in PyTorch, run eagerly or replayed from a torch.cuda.graph capture: the
cupti-launchstat cross-check on a program graphrun did not write.

    python3 bench/torch_mlp.py --mode eager|graph [--iters N] [--warmup N] [--layers L]
                               [--width W] [--batch B] [--json FILE|-]

After the warm-up, torch.cuda.profiler.start()/stop() (cudaProfilerStart/Stop) bracket the N
measured steps, so `cupti-launchstat --steps N -- python3 bench/torch_mlp.py ...` reports exactly
those steps. The per-step time printed here is measured with CUDA events around the N steps
(untraced unless run under cupti-launchstat). Exit codes: 0 ok, 1 graph output differs from eager,
2 bad arguments, 3 no PyTorch or no CUDA device.
"""
import argparse
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["eager", "graph"], required=True)
    ap.add_argument("--iters", type=int, default=1000, help="measured steps (default 1000)")
    ap.add_argument("--warmup", type=int, default=50, help="steps before measuring (default 50)")
    ap.add_argument("--layers", type=int, default=8, help="Linear+GELU layers (default 8)")
    ap.add_argument("--width", type=int, default=256, help="features (default 256)")
    ap.add_argument("--batch", type=int, default=8, help="rows (default 8)")
    ap.add_argument("--json", help="write the result as JSON to FILE (- for stdout)")
    a = ap.parse_args()
    for name in ("iters", "layers", "width", "batch"):
        if getattr(a, name) < 1:
            ap.error(f"--{name} must be >= 1")
    if a.warmup < 0:
        ap.error("--warmup must be >= 0")

    try:
        import torch
    except ImportError:
        print("torch_mlp: PyTorch is not installed for this python3 (pip install torch)", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_mlp: no CUDA device (torch.cuda.is_available() is False)", file=sys.stderr)
        return 3
    torch.manual_seed(0)
    dev = torch.device("cuda")
    mods = []
    for _ in range(a.layers):
        mods += [torch.nn.Linear(a.width, a.width), torch.nn.GELU()]
    model = torch.nn.Sequential(*mods).to(dev).eval()
    static_in = torch.randn(a.batch, a.width, device=dev)

    with torch.no_grad():
        if a.mode == "graph":
            # warm up on a side stream before capture, as the torch.cuda.graph docs require
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    model(static_in)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = model(static_in)
            step = graph.replay
        else:
            def step():
                return model(static_in)

        for _ in range(a.warmup):
            step()
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.profiler.start()
        t0 = time.perf_counter()
        start.record()
        for _ in range(a.iters):
            step()
        end.record()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        if a.mode == "graph":
            ref = model(static_in)
            torch.cuda.synchronize()
            if not torch.allclose(static_out, ref, rtol=1e-4, atol=1e-5):
                print("torch_mlp: graph replay output differs from eager", file=sys.stderr)
                return 1

    step_us = start.elapsed_time(end) * 1000.0 / a.iters
    res = {
        "schema_version": 1,
        "mode": a.mode,
        "iters": a.iters,
        "warmup": a.warmup,
        "layers": a.layers,
        "width": a.width,
        "batch": a.batch,
        "step_us": step_us,
        "submit_us": (t1 - t0) * 1e6 / a.iters,
        "method": "CUDA events around the measured steps; submit_us: host clock for enqueueing them",
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
    }
    print(f"torch_mlp {a.mode}: {step_us:.2f} us/step (CUDA events, {a.iters} steps after {a.warmup} warm-up; "
          f"{a.layers} x Linear({a.width})+GELU, batch {a.batch}); host submit {res['submit_us']:.2f} us/step")
    if a.json:
        text = json.dumps(res, indent=2)
        if a.json == "-":
            print(text)
        else:
            with open(a.json, "w") as f:
                f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
