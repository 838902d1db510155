#!/usr/bin/env python3
"""PyTorch programs that break torch.cuda.graph capture, for `cupti-launchstat --capture-check`:
the same capture checker graphrun uses, on a program graphrun did not write.

    python3 bench/torch_capture_break.py --break item|alloc|pinned|none [--mode global|thread_local|relaxed]
                                         [--n N] [--json FILE|-]

One step, y = x * w; loss; y + 1, captured with torch.cuda.graph after a warm-up on a side stream
(as PyTorch recommends). Inside the capture, in NVTX ranges "step" > "loss" (so the checker's
findings name the place):

  item    loss = y.sum().item(): a device value read back to the host; capture fails
          (cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing")
  alloc   a fresh 256 MB tensor on a side stream that is not capturing: memory from the caching
          allocator's ordinary pool, not the graph's private pool, so a new segment is cudaMalloc'ed
          during the capture (refused in global mode; let through and flagged in relaxed mode)
  pinned  a pinned host tensor (cudaHostAlloc) inside the capture: refused in global mode
  none    no breaker: the capture succeeds and replays (the checker must find nothing blocking)

Exit codes: 0 the capture succeeded and replayed, 1 it failed (the error is printed), 2 bad
arguments, 3 no PyTorch or no CUDA device. --json writes {"break", "mode", "captured", "error"}.
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--break", dest="brk", choices=["item", "alloc", "pinned", "none"], default="item")
    ap.add_argument("--mode", choices=["global", "thread_local", "relaxed"], default="global",
                    help="torch.cuda.graph capture_error_mode (default global)")
    ap.add_argument("--n", type=int, default=4096, help="elements of x and w (default 4096)")
    ap.add_argument("--json", help="write the result as JSON to FILE (- for stdout)")
    a = ap.parse_args()
    if a.n < 1:
        ap.error("--n must be >= 1")
    try:
        import torch
    except ImportError:
        print("torch_capture_break: PyTorch is not installed for this python3 (pip install torch)", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_capture_break: no CUDA device (torch.cuda.is_available() is False)", file=sys.stderr)
        return 3

    dev = torch.device("cuda")
    torch.manual_seed(0)
    x = torch.randn(a.n, device=dev)
    w = torch.randn(a.n, device=dev)
    side = torch.cuda.Stream()
    keep = []

    def step(capturing):
        y = x * w
        torch.cuda.nvtx.range_push("loss")
        if a.brk == "item":
            s = y.sum().item()  # the host needs the value: a read-back
            y = y * s
        elif a.brk == "alloc" and capturing:
            with torch.cuda.stream(side):
                keep.append(torch.empty(64 << 20, device=dev))  # 256 MB, a fresh segment
        elif a.brk == "pinned" and capturing:
            keep.append(torch.empty(a.n, pin_memory=True))
        torch.cuda.nvtx.range_pop()
        return y + 1

    # warm-up on a side stream, as torch.cuda.graph's documentation recommends
    warm = torch.cuda.Stream()
    warm.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(warm):
        for _ in range(3):
            step(False)
    torch.cuda.current_stream().wait_stream(warm)
    torch.cuda.synchronize()

    g = torch.cuda.CUDAGraph()
    captured, error = False, ""
    try:
        with torch.cuda.graph(g, capture_error_mode=a.mode):
            torch.cuda.nvtx.range_push("step")
            out = step(True)
            torch.cuda.nvtx.range_pop()
        g.replay()
        torch.cuda.synchronize()
        want = step(False)
        torch.cuda.synchronize()
        captured = bool(torch.allclose(out, want, rtol=1e-5, atol=1e-5))
        if not captured:
            error = "the replayed graph's output differs from an eager step"
    except Exception as e:  # the capture failed: say why, like a framework would
        error = f"{type(e).__name__}: {e}".strip().splitlines()[0]
    print(f"torch_capture_break --break {a.brk} --mode {a.mode}: "
          + ("captured and replayed" if captured else f"capture failed: {error}"))
    if a.json:
        r = {"break": a.brk, "mode": a.mode, "captured": captured, "error": error, "torch": torch.__version__}
        if a.json == "-":
            json.dump(r, sys.stdout, indent=2)
            print()
        else:
            with open(a.json, "w") as f:
                json.dump(r, f, indent=2)
    return 0 if captured else 1


if __name__ == "__main__":
    sys.exit(main())
