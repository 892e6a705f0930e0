#!/usr/bin/env bash
# Issue 33's GPU measurement, one prepared script (not yet run; estimated 8-10 minutes on one H200, the two bench
# commands can run as separate calls under a 10-minute limit): the steady-state bench at the
# papers' sizes, then the GPU-hours priced from it.  Run from the repository root on a machine with a CUDA GPU:
#
#     bash benchmarks/gpu_steady.sh [OUT_DIR]        # default OUT_DIR: results/gpu-steady
#
# It prints, and writes to OUT_DIR/bench-cuda.json (repro bench's JSON: rows, steady, gpu_hours):
#   - per model (random-init roberta-base-sized = P1's units, ViT-B/32-sized = P2 vision's): the steady train step
#     (one train() of 400 SGD steps at batch 2, per-step median and IQR), the graft step (one learn_graft() of 8
#     steps over 64 examples + scoring), whole evaluations, each with GFLOP/s beside the torch.mm peak;
#   - the batch-2 SGD step with the foreach update vs the per-tensor one (ratio, CI, verdict, max |Δθ|);
#   - Table 3 (non-linear FT, linearized FT, TaLoS 90 % sparse; fp32) from 12 interleaved rounds: ratios with 95 % CIs and
#     holds / does-not-hold / inconclusive;
#   - the graft pair (graft step vs FT fwd+bwd) and the TaLoS / linearized iteration pairs;
#   - the paper profile's GPU-hours per notebook priced from the steady figures; the units the steady bench does not
#     time (TaLoS calibration per example, t5-base) come from benchmarks/gpu_paper_path.json and are marked so.
# Then it runs the same bench a second time (--only steady) so that Table 3's ratios can be compared between two
# runs (target: within ±10 %), printed as the last lines.
set -euo pipefail
OUT=${1:-results/gpu-steady}
mkdir -p "$OUT"
PY=${PYTHON:-python}
nvidia-smi --query-gpu=name,memory.total,clocks.sm --format=csv,noheader || true
$PY -m repro.bench --device cuda --models roberta-base-sized vit-b32-sized --only steady graft training flops \
    --no-scaling --no-book --units-from benchmarks/gpu_paper_path.json --output "$OUT/bench-cuda.json"
$PY -m repro.bench --device cuda --models vit-b32-sized --only steady --no-scaling --no-book --quick \
    --output "$OUT/bench-cuda-repeat.json"
$PY - "$OUT" <<'PY'
import json, sys
a = json.load(open(f"{sys.argv[1]}/bench-cuda.json"))["steady"]["vit-b32-sized"]["table3"]
b = json.load(open(f"{sys.argv[1]}/bench-cuda-repeat.json"))["steady"]["vit-b32-sized"]["table3"]
for x, y in zip(a, b):
    print(f"Table 3 {x['method']:<32} run 1 {x['ratio']:.3f} [{x['ci_low']:.3f}, {x['ci_high']:.3f}]  "
          f"run 2 {y['ratio']:.3f} [{y['ci_low']:.3f}, {y['ci_high']:.3f}]  change {100 * (y['ratio'] / x['ratio'] - 1):+.1f} %")
PY
