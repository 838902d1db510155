# add_mul_act_vec's forms beside torch.compile (issue #26, "Pointwise at the limit";
# docs/pointwise.md): y = relu((a + b) * c) fp32 at n = 1e8 and n = 4096. PyTorch's peers first
# (eager, torch.cuda.graph, torch.compile's one Triton kernel, reduce-overhead), then graphrun with
# every form as a variant of one workload, so the forms are timed back to back in one process on
# the same buffers. The workload is pointwise_fusion.json with its variants replaced (written to
# the output folder, so it stays in step with the bundled one). Sourced by bench/run.sh;
# `one LABEL graphrun-args...` runs and summarises. About two minutes on an H200.
bench_pointwise_forms() {
    local w="$O/pointwise_forms.json"
    python3 - workloads/pointwise_fusion.json "$w" <<'PY' || { echo "   could not write $w"; status=1; return; }
import copy, json, sys
wl = json.load(open(sys.argv[1]))
base = wl["variants"]["fused_vec"]["ops"][0]
# name: (form, threads, vecs); fused_vec is the grid_stride form (the bundled default until run
# 85); tile_t256_v2 is the bundled default now (form tile, 256 threads, vecs auto = 2)
forms = {
    "fused_vec": ("grid_stride", 256, "auto"),
    "gs_v2": ("grid_stride", 256, "2"),        # 32 registers: 8 blocks of 256 resident, one wave
    "tile_t128_v2": ("tile", 128, "2"),       # Inductor's config at n = 1e8: XBLOCK 1024, 4 warps
    "tile_t256_v2": ("tile", 256, "2"),
    "tile_t256_v1": ("tile", 256, "1"),
    "tile_t128_v4": ("tile", 128, "4"),
    "tile_t256_v4": ("tile", 256, "4"),
    "tile_cs_t128_v2": ("tile_cs", 128, "2"),
    "tile_cs_t256_v4": ("tile_cs", 256, "4"),
}
wl["name"] = "pointwise_forms"
wl["description"] = ("fused_vec (add_mul_act_vec) in each form (grid_stride, tile, tile_cs), threads "
                     "per block and 16-byte vectors per operand per thread: bench/suites/pointwise_forms.sh")
wl["default_variant"] = "fused_vec"
wl["variants"] = {}
for name, (form, threads, vecs) in forms.items():
    op = copy.deepcopy(base)
    op["name"] = name
    op["attrs"] = {"act": "$act", "threads": threads, "form": form, "vecs": vecs}
    wl["variants"][name] = {"description": f"form {form}, {threads} threads, vecs {vecs}", "ops": [op]}
json.dump(wl, open(sys.argv[2], "w"), indent=1)
PY
    # a fresh Inductor cache: torch.compile generates and autotunes its kernels in this run, and
    # what it chose (the Triton source, the autotuner's best config, the PTX's loads and stores)
    # is kept in torch_pointwise_kernel.txt; the cache itself is removed
    local cache="$O/inductor_cache"
    echo "== torch_pointwise: bench/peers/torch_peers.py --only pointwise"
    TORCHINDUCTOR_CACHE_DIR="$cache" python3 bench/peers/torch_peers.py --only pointwise \
        --json "$O/torch_pointwise.json" > "$O/torch_pointwise.txt" 2>&1
    local rc=$?
    [ $rc -ne 0 ] && { status=1; echo "   exit $rc"; }
    sed 's/^/   /' "$O/torch_pointwise.txt"
    if [ -d "$cache" ]; then
        {
            grep -rl --include='*.py' 'def triton_poi_' "$cache" | while read -r f; do
                echo "## $f"; cat "$f"; done
            find "$cache" -name '*.best_config' | while read -r f; do
                echo "## $f"; cat "$f"; echo; done
            find "$cache" -name '*.ptx' | while read -r f; do
                echo "## $f"; grep -E 'ld\.global|st\.global|\.maxntid|\.reqntid|\.entry' "$f"; done
        } > "$O/torch_pointwise_kernel.txt" 2>&1
        grep -h -A1 'best_config' "$O/torch_pointwise_kernel.txt" | sed 's/^/   /' | head -8
        rm -rf "$cache"
    fi
    one pointwise_forms_1e8 run "$w" --iters 1000 --quiet
    one pointwise_forms_4096 run "$w" --set n=4096 --iters 20000 --batches 40 --quiet
}
