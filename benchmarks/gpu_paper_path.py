"""The paper profile's code paths on a GPU, and what the full paper profile would cost: one command.

    python benchmarks/gpu_paper_path.py              # on a machine with a CUDA GPU (no hub access needed)
    python benchmarks/gpu_paper_path.py --dry-run    # CPU, tiny models, 2 steps: checks this script itself

What it does (hub weights are not needed: every model is random-init at the real size):

1. **Every notebook's paper path on CUDA.**  ``repro book --profile gpu-check --device cuda --jobs 1``: the
   paper-smoke code paths (roberta prompt and CLS heads, GPT-2, CLIP ViT, T5) with random-init full-size models
   (roberta-base, ViT-B/32 at 224 px, t5-base shapes) on generated text and synthetic images, reduced steps.
   Per-notebook wall time is printed.  (``--skip-book`` leaves it out.)
2. **Time per step of each job kind** (``torch.cuda.synchronize`` around ``--steps`` measured steps after
   ``--warmup``): P1 prompt fine-tuning (roberta-base, SGD, batch 2), a P1 graft step (a full-batch gradient on
   ≤ 128 × 8 examples is ``n_batches`` of these), P2 ViT-B/32 fine-tuning (AdamW, batch 128, bf16 autocast), P2
   t5-base fine-tuning (batch 64), one TaLoS calibration example (per-example gradient), evaluation forwards.
3. **P2 Tables 3 / 4 on the GPU**: every P2 method's iteration time and ``torch.cuda.max_memory_allocated``
   (:func:`repro.p2.efficiency.iteration_costs`, ViT-B/32, batch 128) as ratios to non-linear FT, beside the
   paper's ratios (its ViT-L/14 column, :func:`repro.p2.efficiency.paper_ratios`).
4. **Estimated GPU-hours per notebook of the full paper profile** = Σ (job count of the notebook × measured time per
   step); the job counts are written out in :data:`JOBS` from the paper profile's settings.

Paste the printed summary into the README's "GPU-hours" section.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from repro.profiles import FinetuneRecipe, GraftRecipe, get_profile  # noqa: E402

#: full paper profile job counts per notebook, in units of the step kinds measured below.  Paper settings:
#: P1 13 tasks × 5 seeds × 1000 SGD steps; grafts 100 steps of ≤ 128 batches; P2 8 vision tasks × 5 methods ×
#: 2000 steps; TaLoS calibration 4 rounds × ≤ 5000 examples; T5 7 tasks × 5 methods × 2000 steps (our budget).
JOBS: dict[str, dict[str, float]] = {
    "p1_localization": {"p1_ft_step": 13 * 5 * 1000 * 2, "p1_graft_batch": 13 * 5 * 4 * 100 * 128,
                        "p1_eval_batch": 13 * 5 * 40 * 60},
    "p1_calibration_ood": {"p1_ft_step": 6 * 5 * 1000, "p1_graft_batch": 6 * 5 * 6 * 100 * 128,
                           "p1_eval_batch": 6 * 5 * 30 * 150},
    "p1_multitask_continual": {"p1_ft_step": 8 * 8 * 1000 + 8 * 1000, "p1_graft_batch": 8 * 3 * 100 * 128,
                               "p1_eval_batch": 8 * 40 * 60},
    "p1_appendix": {"p1_ft_step": 13 * 2 * 1000 + 4 * 10000, "p1_graft_batch": 13 * 4 * 100 * 128,
                    "p1_eval_batch": 13 * 30 * 60},
    "p2_task_arithmetic": {"vit_ft_step": 8 * 5 * 2000, "talos_example": 8 * 4 * 5000, "vit_eval_batch": 21 * 9 * 60,
                           "t5_ft_step": 7 * 5 * 2000, "t5_eval_batch": 21 * 8 * 30},
    "p2_sensitivity": {"talos_example": 8 * 4 * 5000, "vit_eval_batch": 8 * 10 * 60},
    "p2_disentanglement": {"vit_eval_batch": 2 * 20 * 20 * 2 * 16 + 8 * 60, "vit_ft_step": 2 * 2000},
    "p2_structure_cost": {"vit_ft_step": 5 * 60, "talos_example": 4 * 5000},
    "p2_appendix": {"vit_ft_step": 12 * 2 * 2000, "talos_example": 12 * 2 * 4 * 5000, "vit_eval_batch": 12 * 2 * 60},
}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_steps(fn: Callable[[], None], steps: int, warmup: int, device: torch.device) -> tuple[float, float]:
    """(seconds per call, peak GiB) of ``fn`` after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    _sync(device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    _sync(device)
    per = (time.perf_counter() - start) / max(steps, 1)
    peak = torch.cuda.max_memory_allocated(device) / 2 ** 30 if device.type == "cuda" else float("nan")
    return per, peak


def _workbench(profile, family: str | None, device: str, tmp: Path):
    from repro.workbench import Workbench

    prof = profile.for_p2(family, device=device) if family else profile.with_device(device)
    return Workbench(prof, artifacts_dir=tmp)


def measure_steps(profile_name: str, device: str, steps: int, warmup: int, tmp: Path, small: bool) -> dict:
    """Seconds per step of each job kind (see the module docstring)."""
    from repro.core.evaluation import predict
    from repro.core.fisher import diagonal_fisher
    from repro.core.grafting import learn_graft

    prof = get_profile(profile_name)
    out: dict[str, dict] = {}
    dev = torch.device(device)
    # P1: roberta prompt FT (SGD, batch 2), graft gradient batches (8), evaluation batches (64)
    wb = _workbench(prof, None, device, tmp / "p1")
    data = wb.task("SST-2")
    sgd = FinetuneRecipe(optimizer="sgd", lr=1e-3, batch_size=2, steps=1, eval_every=0)
    out["p1_ft_step"] = _per_train_step(wb, "SST-2", data.train, sgd, "graftable", steps, warmup, dev)
    delta = {n: torch.full_like(wb.pre[n], 1e-4) for n in wb.names("graftable")}

    def graft_batch() -> None:
        learn_graft(wb.model, "SST-2", delta, data.train[:8], data.dev[:8], 1e-5,
                    GraftRecipe(lr=1e7, steps=1, batch_size=8, max_examples=8, sigmoid_bias=10.0), seed=0,
                    eval_batch_size=8)

    out["p1_graft_batch"] = _row(*time_steps(graft_batch, steps, warmup, dev))
    out["p1_eval_batch"] = _row(*time_steps(lambda: predict(wb.model, data.test[:64], "SST-2", batch_size=64),
                                            steps, warmup, dev))
    del wb
    # P2 vision: ViT-B/32 AdamW batch 128 (bf16 autocast on CUDA), TaLoS calibration examples, eval batches
    vprof = prof.for_p2("vision", device=device)
    vprof = replace(vprof, precision="bf16") if dev.type == "cuda" else vprof
    from repro.workbench import Workbench

    wb = Workbench(vprof, artifacts_dir=tmp / "vision")
    task = vprof.p2_tasks[0]
    data = wb.task(task)
    bs = 128 if not small else 4
    rec = replace(vprof.p2_finetune, batch_size=bs, steps=1, warmup_steps=0)
    out["vit_ft_step"] = _per_train_step(wb, task, data.train, rec, "maskable", steps, warmup, dev)
    ex = data.train[:8]
    per8, peak = time_steps(lambda: diagonal_fisher(wb.model, ex, task, wb.names("maskable"), target="logit",
                                                    batch_size=8, progress=False), max(1, steps // 2), 1, dev)
    out["talos_example"] = _row(per8 / len(ex), peak)
    out["vit_eval_batch"] = _row(*time_steps(lambda: predict(wb.model, data.test[:bs], task, batch_size=bs),
                                             steps, warmup, dev))
    del wb
    # P2 NLP: t5-base shapes, batch 64
    nprof = prof.for_p2("nlp", device=device)
    wb = Workbench(nprof, artifacts_dir=tmp / "nlp")
    task = nprof.p2_tasks[0]
    data = wb.task(task)
    rec = replace(nprof.p2_finetune, batch_size=64 if not small else 4, steps=1)
    out["t5_ft_step"] = _per_train_step(wb, task, data.train, rec, "maskable", steps, warmup, dev)
    out["t5_eval_batch"] = _row(*time_steps(lambda: predict(wb.model, data.test[:64], task, batch_size=64),
                                            steps, warmup, dev))
    return out


def _row(seconds: float, peak: float) -> dict:
    return {"seconds": seconds, "peak_gib": peak}


def _per_train_step(wb, task: str, train_set, recipe, scope: str, steps: int, warmup: int,
                    dev: torch.device) -> dict:
    """One optimizer step of the one training loop (``recipe.steps`` = 1) on ``task``."""
    from repro.core.finetune import train

    names = wb.names(scope)

    def step() -> None:
        wb.restore_pre()
        train(wb.model, {task: train_set}, recipe, names, seed=0, progress=False)

    return _row(*time_steps(step, steps, warmup, dev))


def table3(profile_name: str, device: str, iterations: int, warmup: int, tmp: Path) -> list[dict]:
    """P2 Table 3 rows on the vision family (fresh process per method on CUDA) with ratios to non-linear FT."""
    from repro.p2.efficiency import iteration_costs, paper_ratios
    from repro.workbench import Workbench

    prof = get_profile(profile_name).for_p2("vision", device=device)
    wb = Workbench(prof, artifacts_dir=tmp / "table3")
    rows = iteration_costs(wb, prof.p2_tasks[0], iterations=iterations, warmup=warmup, device=device,
                           subprocess=torch.device(device).type == "cuda")
    ft = next(r for r in rows if r["key"] == "ft")
    paper = paper_ratios(3)
    for r in rows:
        for key in ("total_iter_s", "peak_memory_gib"):
            r[f"{key}_ratio"] = r[key] / ft[key] if ft.get(key) else None
        r["paper_ratios"] = {f"{model} {metric}": round(v, 2) for (model, method, metric), v in paper.items()
                             if method == r["method"] and metric in ("total_iter_time", "peak_memory")}
    return rows


def estimate_hours(per_step: dict) -> dict[str, float]:
    """GPU-hours per notebook of the full paper profile = Σ job count × measured seconds per step."""
    return {nb: sum(n * per_step[k]["seconds"] for k, n in jobs.items() if k in per_step) / 3600
            for nb, jobs in JOBS.items()}


def run_book(device: str) -> dict[str, float]:
    """``repro book --profile gpu-check --device cuda``; per-notebook seconds from its log."""
    cmd = [sys.executable, "-m", "repro.runner.cli", "book", "--profile", "gpu-check", "--device", device,
           "--force"]
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    print(proc.stdout[-4000:], proc.stderr[-2000:], sep="\n")
    times = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[0].startswith("[") and parts[2] == "ran":
            times[parts[1]] = float(parts[4])
    if proc.returncode:
        raise SystemExit(f"gpu-check book failed (exit {proc.returncode}); see the log above")
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU, paper-smoke's tiny models, 2 steps (checks the script)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--skip-book", action="store_true", help="do not build the gpu-check book")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "gpu_paper_path.json"))
    args = ap.parse_args(argv)
    import tempfile

    if args.dry_run:
        profile, device, steps, warmup, small = "paper-smoke", "cpu", 2, 1, True
    else:
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA GPU visible: run this on a GPU machine (or --dry-run to check the script)")
        profile, device, steps, warmup, small = "gpu-check", "cuda", args.steps, args.warmup, False
    report: dict = {"device": device, "gpu": torch.cuda.get_device_name(0) if device == "cuda" else None,
                    "torch": torch.__version__, "profile": profile}
    with tempfile.TemporaryDirectory(prefix="repro-gpu-") as tmp:
        if not args.dry_run and not args.skip_book:
            report["book_seconds"] = run_book(device)
        report["per_step"] = measure_steps(profile, device, steps, warmup, Path(tmp), small)
        report["table3"] = table3(profile, device, iterations=steps, warmup=warmup, tmp=Path(tmp))
    report["gpu_hours"] = estimate_hours(report["per_step"])
    print(f"\n== time per step ({device}{', ' + report['gpu'] if report['gpu'] else ''})")
    for k, v in report["per_step"].items():
        print(f"  {k:16s} {v['seconds'] * 1000:9.1f} ms   peak {v['peak_gib']:.2f} GiB")
    print("\n== P2 Table 3 (ratios to non-linear FT; the paper's ratios beside)")
    for r in report["table3"]:
        print(f"  {r['method']:14s} iter {r.get('total_iter_s_ratio') or float('nan'):.2f}x   "
              f"memory {r.get('peak_memory_gib_ratio') or float('nan'):.2f}x   paper {r['paper_ratios']}")
    print("\n== estimated GPU-hours of the full paper profile, per notebook")
    for nb, h in report["gpu_hours"].items():
        print(f"  {nb:24s} {h:8.2f} h")
    print(f"  {'total':24s} {sum(report['gpu_hours'].values()):8.2f} h")
    Path(args.out).write_text(json.dumps(report, indent=1, default=str))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
