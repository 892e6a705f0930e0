"""Figures and a summary table for the book page "How the cpu profile was chosen", from the committed sweep JSON.

    python benchmarks/plot_tune_cpu.py     # reads benchmarks/sweeps/*.json, writes book/_static/cpu_profile/*.png

Prints one markdown table row per p1-check result (zero-shot, FT, each graft's actual size, accuracy and ECE).
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "sweeps"
FIGURES = ROOT / "book" / "_static" / "cpu_profile"


def _load(prefix: str) -> list[dict]:
    return [json.loads(p.read_text()) | {"file": p.name} for p in sorted(RESULTS.glob(f"{prefix}*.json"))]


def ft_curves() -> None:
    runs = _load("ft-curve-")
    if not runs:
        return
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for r in runs:
        steps = [c["step"] for c in r["curve"]]
        ax.plot(steps, [c["dev"] for c in r["curve"]], marker="o", ms=3,
                label=f"{r['task']} ({r['data']}), {r['k']}/class, lr {r['recipe']['lr']:g}")
    ax.set_xlabel("SGD step (batch 8)")
    ax.set_ylabel("dev accuracy")
    ax.set_title("P1 fine-tuning: dev accuracy along training")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(FIGURES / "ft_curves.png", dpi=120)
    plt.close(fig)


def graft_curves() -> None:
    runs = _load("p1-check-")
    if not runs:
        return
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 3.6))
    for r in runs:
        for g in r["grafts"]:
            steps = [h["step"] for h in g["history"]]
            lab = f"{r['task']} ({r['data']}), γ_base {g['base']:g}"
            a1.plot(steps, [100 * h["density"] for h in g["history"]], marker="o", ms=3, label=lab)
            a2.plot(steps, [h["dev"] for h in g["history"]], marker="o", ms=3, label=lab)
            a2.axvline(g["best_step"], color=a2.lines[-1].get_color(), ls=":", lw=0.8)
    a1.set_yscale("log")
    a1.axhline(0.01, color="k", ls="--", lw=0.8)
    a1.set_xlabel("graft step (lr 1e7)")
    a1.set_ylabel("region size (% of graftable blocks)")
    a2.set_xlabel("graft step (dotted: selected best S)")
    a2.set_ylabel("dev accuracy of the rounded graft")
    a2.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(FIGURES / "graft_curves.png", dpi=120)
    plt.close(fig)


def p2_curves() -> None:
    """One panel per task: every method's dev accuracy against steps, one line per (method, lr); the files of one
    task (the shared-lr sweep and any ``--p2-lr`` sweeps) are merged."""
    files = [r for r in _load("p2-curve-") if r["data"] != VISION_DATA]
    if not files:
        return
    by_task: dict[str, list[dict]] = {}
    for r in files:
        by_task.setdefault(r["task"], []).append(r)
    colors = {label: f"C{i}" for i, label in enumerate(dict.fromkeys(x["label"] for r in files for x in r["runs"]))}
    fig, axes = plt.subplots(1, len(by_task), figsize=(4.6 * len(by_task), 3.8), squeeze=False)
    for ax, (task, group) in zip(axes[0], by_task.items()):
        series: dict[tuple[str, float], list[tuple[int, float]]] = {}
        for r in group:
            for x in r["runs"]:
                series.setdefault((x["label"], float(x.get("lr", r["recipe"]["lr"]))), []).append((x["steps"], x["dev"]))
        lrs = sorted({lr for _, lr in series})
        shared_lr = next((lr for label, lr in series if label == "Non-linear FT"), lrs[0])  # FT: the shared rate
        styles = {lr: ls for lr, ls in zip(lrs, ["-", "--", "-.", (0, (1, 1))])}
        for (label, lr), pts in series.items():
            pts = sorted(pts)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, color=colors[label],
                    ls=styles[lr], label=f"{label}, lr {lr:g}")
        ax.axhline(group[0]["zero_shot"], color="k", ls="--", lw=0.8, label="zero-shot")
        ax.axvline(group[0]["recipe"]["steps"], color="grey", ls=":", lw=0.8)
        ax.set_xscale("log")
        steps = sorted({p[0] for pts in series.values() for p in pts})
        ax.set_xticks(steps, [str(x) for x in steps])
        ax.minorticks_off()
        ax.set_xlabel(f"AdamW steps (dotted: the profile's; shared lr {shared_lr:g})")
        ax.set_ylabel(f"dev accuracy (n = {group[0]['n_dev']})")
        ax.set_title(f"P2 {task} ({group[0]['data']})")
    axes[0][-1].legend(fontsize=6, loc="lower right", ncol=2)
    fig.tight_layout()
    fig.savefig(FIGURES / "p2_curves.png", dpi=120)
    plt.close(fig)


ONE_SE = 0.01  #: one standard error of a mean of two 256-image dev accuracies near 0.95
VISION_DATA = "packaged-images"  #: the data tag of the vision family's sweeps (tune_cpu.py --model-family vision)


def vision_lr() -> None:
    """The vision family's learning-rate sweep: one panel per task, each method's dev accuracy (at the family's
    steps) against the lr, the chosen lr circled: the smallest whose mean over the tasks is within one standard
    error (:data:`ONE_SE`) of the best."""
    files = [r for r in _load("p2-curve-") if r["data"] == VISION_DATA]
    if not files:
        return
    acc: dict[tuple[str, str, float], float] = {}
    for r in files:
        for x in r["runs"]:
            if x["steps"] == r["recipe"]["steps"]:
                acc[(r["task"], x["label"], float(x["lr"]))] = x["dev"]
    tasks = sorted({t for t, _, _ in acc})
    labels = list(dict.fromkeys(lab for _, lab, _ in acc))
    chosen = {}
    for lab in labels:
        lrs = sorted({lr for t, m, lr in acc if m == lab and all((u, m, lr) in acc for u in tasks)})
        mean = {lr: sum(acc[(t, lab, lr)] for t in tasks) / len(tasks) for lr in lrs}
        chosen[lab] = min(lr for lr in lrs if mean[lr] >= max(mean.values()) - ONE_SE)  # the one-SE rule
    fig, axes = plt.subplots(1, len(tasks), figsize=(4.8 * len(tasks), 3.8), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        zero = next(r["zero_shot"] for r in files if r["task"] == task)
        for i, lab in enumerate(labels):
            pts = sorted((lr, a) for (t, m, lr), a in acc.items() if t == task and m == lab)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=3, color=f"C{i}", label=lab)
            ax.plot([chosen[lab]], [acc[(task, lab, chosen[lab])]], "o", ms=10, mfc="none", color=f"C{i}")
        ax.axhline(zero, color="k", ls="--", lw=0.8, label="head only")
        ax.set_xscale("log")
        ax.set_xlabel("AdamW learning rate")
        ax.set_ylabel(f"dev accuracy (n = {files[0]['n_dev']})")
        ax.set_title(f"vision family: {task}, {files[0]['recipe']['steps']} steps")
    axes[0][-1].legend(fontsize=7, loc="lower left")
    fig.suptitle("circled: each method's lr, the smallest within one standard error (1 point) of the best mean dev "
                 "accuracy over the panels", fontsize=9)
    fig.tight_layout()
    fig.savefig(FIGURES / "vision_lr.png", dpi=120)
    plt.close(fig)
    print("vision lrs:", {lab: f"{lr:g}" for lab, lr in chosen.items()})


def table() -> None:
    print("| task (data) | k | FT recipe | zero-shot acc / ECE | FT acc / ECE | graft: γ_base → actual size | "
          "graft acc / ECE | % of FT | gain recovered | ECE cut |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in _load("p1-check-"):
        z, f, rec = r["zero_shot"], r["ft"], r["recipe"]
        for g in r["grafts"]:
            gain = "–" if g["gain_recovered"] is None else f"{100 * g['gain_recovered']:.0f} %"
            cut = "–" if g["ece_cut"] is None else f"{100 * g['ece_cut']:.0f} %"
            print(f"| {r['task']} ({r['data']}, n={r['n_test']}) | {r['k']} | SGD {rec['lr']:g} × {rec['steps']} | "
                  f"{100 * z['acc']:.1f} / {100 * z['ece']:.1f} | {100 * f['acc']:.1f} / {100 * f['ece']:.1f} | "
                  f"{g['base']:g} → {g['count']:,} ({100 * g['density']:.4f} %) | "
                  f"{100 * g['acc']:.1f} / {100 * g['ece']:.1f} | {100 * g['ratio_ft']:.1f} % | {gain} | {cut} |")


def main() -> None:
    FIGURES.mkdir(parents=True, exist_ok=True)
    ft_curves()
    graft_curves()
    p2_curves()
    vision_lr()
    table()


if __name__ == "__main__":
    main()
