"""The paper profile on a GPU at the papers' sizes, and what the whole paper profile costs: one command.

    python benchmarks/gpu_paper_path.py              # on a machine with a CUDA GPU (no hub access needed)
    python benchmarks/gpu_paper_path.py --dry-run    # CPU, tiny models, 2 steps: checks this script itself

Hub weights are not needed: every model is random-init at the real size (roberta-base, ViT-B/32 at 224 px with
QuickGELU, t5-base shapes).  What it measures, each after ``--warmup`` calls, ``torch.cuda.synchronize`` around
``--steps`` timed calls, under ``--precision`` (default bf16 autocast, as the official P2 code; P1 runs fp32, as the
official P1 code):

1. **Seconds per unit of each job kind**, at the paper batch sizes: P1 prompt fine-tuning (SGD, batch 2), one
   example through a graft step (its gradient in chunks of 8, then the rounded graft scored), P1 evaluation (batch
   64); every P2 method's training iteration on ViT-B/32 at batch **128**, linearized FT and L-LoRA included (this
   is P2 Table 3: :func:`repro.p2.efficiency.iteration_costs`, each method in a fresh process, with the ratios to
   non-linear FT beside the paper's); one TaLoS calibration example (per-example gradient); ViT evaluation (batch
   128); t5-base training (batch 64) and evaluation.
2. **Image decoding**: JPEG files decoded and preprocessed through :func:`repro.core.evaluation.batches` (the one
   DataLoader path of the training and evaluation loops) with 0 and ``--workers`` workers and pinned memory,
   beside the images per second the GPU consumes in a ViT training step.  Below that rate the GPU starves.
3. **Estimated GPU-hours per notebook** of the full paper profile: the job inventory of the paper plans
   (:func:`repro.inventory.inventory`, the jobs ``repro plan --profile paper`` prints, both P2 families) × each
   job's cost in example-passes (:mod:`repro.jobs`) × the measured seconds per example-pass of its kind and model.

Paste the printed summary into the README's "GPU-hours" section.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from repro.core.evaluation import batches, predict  # noqa: E402
from repro.core.finetune import train  # noqa: E402
from repro.core.fisher import diagonal_fisher, talos_calibrate  # noqa: E402
from repro.core.masks import Mask  # noqa: E402
from repro.core.grafting import learn_graft  # noqa: E402
from repro.bench.hours import TRAINING_KINDS, estimate_hours, hours_by_kind, rate  # noqa: E402,F401
from repro.inventory import inventory  # noqa: E402,F401 - the jobs priced (tests count them)
from repro.data.tasks import ImageExample  # noqa: E402
from repro.p2.efficiency import iteration_costs, paper_ratios  # noqa: E402
from repro.p2.methods import LOTA_DENSITY  # noqa: E402
from repro.profiles import NLP_RECIPE, VISION_RECIPE, FinetuneRecipe, GraftRecipe, Profile, get_profile  # noqa: E402
from repro.workbench import Workbench  # noqa: E402

#: the P2 methods of Table 3 (the inventory's P2 fine-tunes are priced at non-linear FT's rate × their own cost)
TABLE3 = ("ft", "linearized", "l-lora", "lota", "talos")
#: job kinds priced at a model's evaluation rate (× 3: the inventory counts an evaluated example as 1/3 of an
#: example-pass); the training kinds and the pricing itself are repro.bench.hours' (repro bench uses them too)
EVAL_KINDS = {"arithmetic", "merge", "drift"}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_calls(fn: Callable[[], None], steps: int, warmup: int, device: torch.device) -> tuple[float, float]:
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


def _row(seconds: float, peak: float, per: str, batch: int) -> dict:
    return {"seconds": seconds, "peak_gib": peak, "per": per, "batch": batch}


def bench_profile(dry_run: bool, precision: str) -> Profile:
    """gpu-check (random-init full-size models) with the paper's P2 recipes: ViT batch 128, T5 batch 64; the
    dry run keeps paper-smoke's tiny models and batches of 4."""
    if dry_run:
        prof = get_profile("paper-smoke").with_(device="cpu")
        fams = tuple(replace(f, finetune=replace(f.finetune, batch_size=4)) for f in prof.p2_families)
        return replace(prof, p2_families=fams)
    prof = get_profile("gpu-check").with_(device="cuda", precision=precision)
    recipes = {"vision": VISION_RECIPE, "nlp": NLP_RECIPE}
    fams = tuple(replace(f, finetune=replace(recipes[f.name], steps=1, warmup_steps=0)) for f in prof.p2_families)
    return replace(prof, p2_families=fams)


def _repeat(examples: list, n: int) -> list:
    """``n`` examples, cycling through ``examples`` (a generated task's k-shot split is small; timing needs n)."""
    return [examples[i % len(examples)] for i in range(n)]


def _train_step(wb: Workbench, task: str, examples: list, recipe: FinetuneRecipe, scope: str) -> Callable[[], None]:
    names = wb.names(scope)

    def step() -> None:
        wb.restore_pre()
        train(wb.model, {task: examples}, replace(recipe, steps=1, eval_every=0), names, seed=0, progress=False)

    return step


def measure_p1(prof: Profile, device: torch.device, steps: int, warmup: int, tmp: Path, small: bool) -> dict:
    """P1 on roberta-base (fp32, as the official P1 code): FT step at batch 2, graft example, eval example."""
    out = {}
    wb = Workbench(prof.with_(precision="fp32"), artifacts_dir=tmp / "p1")
    data = wb.task("SST-2")
    sgd = FinetuneRecipe(optimizer="sgd", lr=1e-3, batch_size=2, steps=1, eval_every=0)
    out["p1_ft_step"] = _row(*time_calls(_train_step(wb, "SST-2", data.train, sgd, "graftable"), steps, warmup,
                                         device), "step", 2)
    delta = {n: torch.full_like(wb.pre[n], 1e-4) for n in wb.names("graftable")}
    n = 16 if small else 256
    train_set, dev_set = _repeat(data.train, n), _repeat(data.dev, n // 4)

    def graft(n_steps: int) -> Callable[[], None]:
        recipe = GraftRecipe(lr=1e7, steps=n_steps, batch_size=8, max_examples=n, sigmoid_bias=10.0)
        return lambda: learn_graft(wb.model, "SST-2", delta, train_set, dev_set, 1e-5, recipe, seed=0,
                                   eval_batch_size=64)

    one, peak = time_calls(graft(1), max(1, steps // 3), 1, device)
    two, _ = time_calls(graft(2), max(1, steps // 3), 1, device)
    per_step = max(two - one, 1e-9)  # one more step: the gradient over n examples + the rounded graft scored
    passes = n + (n + len(dev_set)) / 3  # the inventory's example-passes of one graft step
    out["p1_graft_example"] = _row(per_step / passes, peak, "example-pass", 8)
    ev = _repeat(data.test, 64)
    per, peak = time_calls(lambda: predict(wb.model, ev, "SST-2", batch_size=64), steps, warmup, device)
    out["p1_eval_example"] = _row(per / len(ev), peak, "example", 64)
    return out


def cost_masks(wb: Workbench, task: str) -> dict[str, Mask]:
    """LoTA's and TaLoS's trainable masks for the cost measurement (random-init weights: what matters is their
    density and which tensors they freeze): TaLoS = one calibration round at its sparsity on 16 training examples
    (P2 Alg. 1), LoTA = a uniformly random region at LoTA's density (its task-vector magnitudes are not there)."""
    names = wb.names("maskable")
    talos, _ = talos_calibrate(wb.model, _repeat(wb.task(task).train, 16), task, names,
                               sparsity=wb.profile.talos.sparsity, rounds=1, progress=False)
    shapes = Mask.shapes_of({n: wb.model.get_parameter(n) for n in names})
    total = sum(wb.model.get_parameter(n).numel() for n in names)
    return {"talos": talos, "lota": Mask.random(shapes, int(LOTA_DENSITY * total), seed=0)}


def measure_vision(prof: Profile, device: torch.device, steps: int, warmup: int, tmp: Path) -> tuple[dict, list]:
    """P2 on ViT-B/32: Table 3 (every method's iteration at the recipe batch), TaLoS example, eval example."""
    vprof = prof.for_p2("vision")
    wb = Workbench(vprof, artifacts_dir=tmp / "vision")
    task = vprof.p2_tasks[0]
    bs = vprof.p2_finetune.batch_size
    rows = iteration_costs(wb, task, cost_masks(wb, task), methods=TABLE3, iterations=steps, warmup=warmup,
                           device=str(device), subprocess=device.type == "cuda")
    ft = next(r for r in rows if r["key"] == "ft")
    paper = paper_ratios(3)
    out = {}
    for r in rows:
        for key in ("total_iter_s", "peak_memory_gib"):
            r[f"{key}_ratio"] = r[key] / ft[key] if ft.get(key) else None
        r["paper_ratios"] = {f"{model} {metric}": round(v, 2) for (model, method, metric), v in paper.items()
                             if method == r["method"] and metric in ("total_iter_time", "peak_memory")}
        out[f"vit_{r['key']}_step"] = _row(r["total_iter_s"], r["peak_memory_gib"], "step", bs)
    data = wb.task(task)
    ex = _repeat(data.train, 8)
    per8, peak = time_calls(lambda: diagonal_fisher(wb.model, ex, task, wb.names("maskable"), target="logit",
                                                    batch_size=8, progress=False), max(1, steps // 3), 1, device)
    out["talos_example"] = _row(per8 / len(ex), peak, "example", 8)
    ev = _repeat(data.test, bs)
    per, peak = time_calls(lambda: predict(wb.model, ev, task, batch_size=bs), steps, warmup, device)
    out["vit_eval_example"] = _row(per / len(ev), peak, "example", bs)
    return out, rows


def measure_t5(prof: Profile, device: torch.device, steps: int, warmup: int, tmp: Path) -> dict:
    """P2 on t5-base shapes: a training step at the recipe batch (token-level CE) and an eval example."""
    nprof = prof.for_p2("nlp")
    wb = Workbench(nprof, artifacts_dir=tmp / "nlp")
    task = nprof.p2_tasks[0]
    data = wb.task(task)
    bs = nprof.p2_finetune.batch_size
    out = {"t5_ft_step": _row(*time_calls(_train_step(wb, task, _repeat(data.train, bs), nprof.p2_finetune,
                                                      "maskable"), steps, warmup, device), "step", bs)}
    ev = _repeat(data.test, bs)
    per, peak = time_calls(lambda: predict(wb.model, ev, task, batch_size=bs), steps, warmup, device)
    out["t5_eval_example"] = _row(per / len(ev), peak, "example", bs)
    return out


def measure_loader(prof: Profile, tmp: Path, workers: int, n_batches: int) -> dict:
    """Images per second through the training loop's batch path (JPEG decode + augmentation + pinned copy), with
    0 and ``workers`` DataLoader workers."""
    from PIL import Image

    vprof = prof.for_p2("vision")
    wb = Workbench(vprof, artifacts_dir=tmp / "loader")
    task = vprof.p2_tasks[0]
    wb.task(task)  # registers the task's zero-shot head (collate checks it)
    bs = vprof.p2_finetune.batch_size
    folder = tmp / "jpeg"
    folder.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(0)
    files = []
    for i in range(64):  # 500 x 375 JPEGs (the size of a typical DTD / SUN397 / Cars image), noise + a gradient
        pixels = (torch.rand(375, 500, 3, generator=gen) * 64 + torch.linspace(0, 191, 500)[None, :, None])
        path = folder / f"{i:03d}.jpg"
        Image.fromarray(pixels.clamp(0, 255).to(torch.uint8).numpy()).save(path, quality=90)
        files.append(path)
    examples = [ImageExample(str(files[i % len(files)]), i % 2) for i in range(bs * n_batches)]
    plan = [(task, examples[i:i + bs]) for i in range(0, len(examples), bs)]
    out = {}
    for w in sorted({0, workers}):
        start = time.perf_counter()
        seen = sum(len(b["labels"]) for _, b in batches(wb.model, plan, train=True, seed=0, num_workers=w))
        out[str(w)] = seen / (time.perf_counter() - start)
    return {"images_per_s": out, "batch": bs, "batches": n_batches}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU, paper-smoke's tiny models, 2 steps (checks the script)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--precision", choices=("bf16", "fp32", "tf32"), default="bf16",
                    help="P2 training and evaluation precision on CUDA (P1 runs fp32, as the official code)")
    ap.add_argument("--workers", type=int, default=8, help="DataLoader workers of the image-decoding check")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "gpu_paper_path.json"))
    args = ap.parse_args(argv)
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.touch()  # an unwritable --out fails now, not after the measurements

    if args.dry_run:
        device, steps, warmup, small, workers, n_batches = torch.device("cpu"), 2, 1, True, 2, 2
    else:
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA GPU visible: run this on a GPU machine (or --dry-run to check the script)")
        device, steps, warmup, small, workers, n_batches = (torch.device("cuda"), args.steps, args.warmup, False,
                                                            args.workers, 8)
    prof = bench_profile(args.dry_run, args.precision)
    report: dict = {"device": str(device), "gpu": torch.cuda.get_device_name(0) if device.type == "cuda" else None,
                    "torch": torch.__version__, "profile": prof.name, "precision": prof.precision}
    with tempfile.TemporaryDirectory(prefix="repro-gpu-") as tmp:
        per_step = measure_p1(prof, device, steps, warmup, Path(tmp), small)
        vision, report["table3"] = measure_vision(prof, device, steps, warmup, Path(tmp))
        per_step |= vision
        per_step |= measure_t5(prof, device, steps, warmup, Path(tmp))
        report["per_step"] = per_step
        report["loader"] = measure_loader(prof, Path(tmp), workers, n_batches)
    report["gpu_hours"] = estimate_hours(per_step)
    report["gpu_hours_by_kind"] = hours_by_kind(per_step)

    print(f"\n== seconds per unit ({device}{', ' + report['gpu'] if report['gpu'] else ''}, P2 {prof.precision})")
    for k, v in per_step.items():
        print(f"  {k:20s} {v['seconds'] * 1000:10.3f} ms per {v['per']:12s} batch {v['batch']:4d}   "
              f"peak {v['peak_gib']:.2f} GiB")
    print(f"\n== P2 Table 3 at batch {per_step['vit_ft_step']['batch']} (ratios to non-linear FT; the paper's beside)")
    for r in report["table3"]:
        print(f"  {r['method']:14s} iter {r['total_iter_s'] * 1000:7.1f} ms = {r.get('total_iter_s_ratio') or 0:.2f}x"
              f"   memory {r['peak_memory_gib']:.2f} GiB = {r.get('peak_memory_gib_ratio') or 0:.2f}x   "
              f"paper ViT-B/32 {r['paper_ratios'].get('ViT-B/32 total_iter_time')}x / "
              f"{r['paper_ratios'].get('ViT-B/32 peak_memory')}x")
    gpu_rate = per_step["vit_ft_step"]["batch"] / per_step["vit_ft_step"]["seconds"]
    print(f"\n== image decoding (JPEG 500x375 -> {prof.image_size} px, train augmentation, pinned), images/s")
    for w, ips in report["loader"]["images_per_s"].items():
        print(f"  {w:>2s} workers {ips:9.0f} images/s   ({ips / gpu_rate:.2f}x what a ViT FT step consumes: "
              f"{gpu_rate:.0f} images/s)")
    print("\n== the paper plans: jobs and estimated GPU-hours per notebook")
    total = 0.0
    for family, nbs in report["gpu_hours"].items():
        for nb, v in nbs.items():
            print(f"  {family:7s} {nb:24s} {v['jobs']:5d} jobs {v['gpu_hours']:9.1f} h")
            total += v["gpu_hours"]
    for family, nbs in report["gpu_hours"].items():
        print(f"  {family:7s} {'total':24s} {sum(v['jobs'] for v in nbs.values()):5d} jobs "
              f"{sum(v['gpu_hours'] for v in nbs.values()):9.1f} h")
    print(f"  both families, P1 once: {total:.1f} GPU-hours")
    print("  where the time goes (vision family, the largest five):")
    for key, h in list(report["gpu_hours_by_kind"].items())[:5]:
        print(f"    {key:40s} {h:9.1f} h")
    out_path.write_text(json.dumps(report, indent=1, default=str))
    print(f"\nwrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
