"""Probe of the vision family (issue 26): per task, the accuracy of the frozen head alone vs after a short dense
fine-tune of the backbone (head frozen), EfficientNet-Lite0 at 64 px, heads fitted on 5 examples per class.

    OMP_NUM_THREADS=1 nice -n 19 python benchmarks/vision_probe.py [--steps 150] [--lr 1e-4 3e-4] [--tasks ...]

Per task and lr: dense FT on the task's train split (AdamW, cosine with 10 % warmup, weight decay 0, batch 32,
clip 1.0; BN statistics frozen), val and test accuracy; the lr is chosen on val.  Writes
``benchmarks/sweeps/vision-probe-<tag>.json``.  Exploratory: one seed, no CI.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from repro.core.evaluation import evaluate
from repro.core.finetune import train
from repro.data import packaged_images as P
from repro.models.efficientnet_classifier import build_efficientnet_lite0
from repro.profiles import FinetuneRecipe


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", nargs="+", default=list(P.IMAGE_SOURCES))
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--lr", type=float, nargs="+", default=[1e-4, 3e-4])
    ap.add_argument("--shots", type=int, default=5)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--tag", default="shots5-64px")
    args = ap.parse_args()
    torch.set_num_threads(1)
    out: dict = {"setting": {"model": "efficientnet-lite0", "image_size": args.size, "head_shots": args.shots,
                             "steps": args.steps, "batch_size": args.batch, "lrs": args.lr, "optimizer": "adamw",
                             "schedule": "cosine, 10% warmup", "weight_decay": 0.0, "seed": 0, "threads": 1,
                             "bn": "running statistics frozen; scale/shift trained", "trained": "whole backbone",
                             "machine": platform.processor() or platform.machine()},
                 "tasks": {}}
    for task in args.tasks:
        splits = P.load_images(task)
        spec = P.task_spec(task)
        rows = {}
        for lr in args.lr:
            model = build_efficientnet_lite0(image_size=args.size)
            t0 = time.perf_counter()
            model.add_task(spec, examples=P.head_examples(task, shots=args.shots, seed=0))
            head_s = time.perf_counter() - t0
            for p in model.parameters():
                p.requires_grad_(False)
            if not rows:
                head = {s: evaluate(model, splits[s], task, batch_size=128)["value"] for s in ("val", "test")}
                out["tasks"][task] = {"sizes": P.split_sizes(task), "head_only": head, "head_fit_s": round(head_s, 1),
                                      "head_train_accuracy": model.head_records[task]["train_accuracy"]}
                print(f"{task}: head only val {head['val']:.3f} test {head['test']:.3f}", flush=True)
            recipe = FinetuneRecipe(optimizer="adamw", lr=lr, batch_size=args.batch, steps=args.steps,
                                    weight_decay=0.0, warmup_steps=max(1, args.steps // 10), schedule="cosine",
                                    eval_every=0, grad_clip=1.0)
            res = train(model, {task: splits["train"]}, recipe, model.backbone_names(), seed=0, progress=False)
            acc = {s: evaluate(model, splits[s], task, batch_size=128)["value"] for s in ("val", "test")}
            rows[f"{lr:g}"] = {**acc, "ft_seconds": round(res.seconds, 1),
                               "final_loss": round(res.history[-1]["loss"], 4)}
            print(f"  lr {lr:g}: val {acc['val']:.3f} test {acc['test']:.3f} ({res.seconds:.0f} s)", flush=True)
        best = max(rows, key=lambda k: rows[k]["val"])
        rec = out["tasks"][task]
        rec.update(ft=rows, lr_on_val=best, ft_test=rows[best]["test"],
                   ft_gain_points=round(100 * (rows[best]["test"] - rec["head_only"]["test"]), 1))
        path = Path(__file__).parent / "sweeps" / f"vision-probe-{args.tag}.json"
        path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({t: (r["head_only"]["test"], r["ft_test"], r["ft_gain_points"]) for t, r in out["tasks"].items()}))


if __name__ == "__main__":
    main()
