"""Tables and figures of the P2 sensitivity chapter (``notebooks/p2_sensitivity.md``, Figs. 1, 10, 11).

The inputs are :func:`edit_examples` (the rows of :func:`repro.p2.sensitivity.runs.edit_matrix`, one per mask source and
evaluation task with the accuracy ``ratio``, plus every model's per-example test correctness for the claims' CIs)
and :func:`repro.p2.sensitivity.runs.iou_matrix`; the outputs are the rows the chapter stores (``res.add_table``) and its
heatmaps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pandas as pd

from repro.p2.sensitivity.runs import RANDOM_SOURCE, mean_off_diagonal, perturb, prune, selection_stats
from repro.report.display import plotting
from repro.core.evaluation import score

if TYPE_CHECKING:  # pragma: no cover
    from repro.core.masks import Mask
    from repro.data import Example
    from repro.workbench import Workbench

PRETRAINED = "pre-trained"  #: key of the unedited model in :func:`edit_examples`' correctness


def edit_examples(wb: "Workbench", masks: Mapping[str, "Mask"], sets: Mapping[str, Sequence["Example"]],
                  edit: str = "prune", std_scale: float = 2.0, seed: int = 0,
                  ) -> tuple[pd.DataFrame, dict[str, dict[str, np.ndarray]]]:
    """Figs. 1 / 10: the rows of :func:`repro.p2.sensitivity.runs.edit_matrix` (same edits, same columns) and the
    per-example 0/1 test correctness of every model, ``{mask source or PRETRAINED: {task: [examples]}}``, from one
    prediction pass (that frozen function keeps no per-example results)."""
    if edit not in ("prune", "perturb"):
        raise ValueError(f"unknown edit {edit!r}; choose prune or perturb")

    def run(task: str, over) -> tuple[float, np.ndarray]:
        pred = wb.predict(task, "test", over, examples=sets[task])
        return score(pred, wb.model.specs[task].metric)["value"], pred.correct().astype(float)

    pre = {t: run(t, None) for t in sets}
    correct = {PRETRAINED: {t: v[1] for t, v in pre.items()}}
    rows = []
    for s, mask in masks.items():
        stats = selection_stats(wb.pre, mask)
        over = prune(wb.pre, mask) if edit == "prune" else perturb(wb.pre, mask, std_scale=std_scale, seed=seed)
        correct[s] = {}
        for t in sets:
            acc, correct[s][t] = run(t, over)
            rows.append({"source": s, "task": t, "edit": edit, "acc": acc, "acc_pre": pre[t][0],
                         "ratio": acc / pre[t][0] if pre[t][0] > 0 else float("nan"),
                         "mean_abs": stats["mean_abs"], "std": stats["std"]})
        del over
    return pd.DataFrame(rows), correct


def edit_summary_rows(df: pd.DataFrame, method: str, what: str, fraction: float, model: str) -> list[dict]:
    """Figs. 1 / 10 summarised: mean and min ratio over all pairs, the diagonal and off-diagonal means, and the
    random mask's mean (a reference row), as result rows (``what`` names the paper's figure)."""
    fisher = df[df.source != RANDOM_SOURCE]
    rnd = df[df.source == RANDOM_SOURCE]
    diag = fisher[fisher.source == fisher.task]
    common = dict(method=method, sparsity=100 * fraction, std=None, paper=None, model=model)
    return [
        dict(task="all task pairs", metric="mean_acc_ratio", value=float(fisher.ratio.mean()),
             paper_text=f"≈ 1 ({what}: heatmaps, no numbers)", **common),
        dict(task="all task pairs", metric="min_acc_ratio", value=float(fisher.ratio.min()), **common),
        dict(task="same task (diagonal)", metric="mean_acc_ratio", value=float(diag.ratio.mean()), **common),
        dict(task="other tasks (off-diagonal)", metric="mean_acc_ratio",
             value=mean_off_diagonal(fisher, "source", "task", "ratio"), **common),
        dict(task="all tasks", metric="mean_acc_ratio", value=float(rnd.ratio.mean()),
             **{**common, "method": method.replace("least sensitive", "random") + " (reference)"}),
    ]


def overlap_summary(iou: pd.DataFrame, fraction: float) -> tuple[list[dict], float, float]:
    """Fig. 11 summarised: (rows beside the paper's ViT and T5 values and chance, mIoU over pairs of different
    tasks, the expected IoU f / (2 − f) of two independent random masks of density f)."""
    miou = mean_off_diagonal(iou, "a", "b", "iou")
    chance = fraction / (2 - fraction)
    std = float(iou[iou.a != iou.b].iou.std())
    common = dict(task="all task pairs", sparsity=100 * fraction, metric="miou")
    method = f"{fraction:.0%} least sensitive"
    rows = [
        dict(method=method, value=miou, std=std, paper=0.7, model="ViT-B/32 (paper)", paper_text="> 0.7", **common),
        dict(method=method, value=miou, std=std, paper=None, model="T5-Small (paper)", paper_text="0.3–0.5",
             **common),
        dict(method=f"two random {fraction:.0%} masks (expected)", value=chance, std=None, paper=None, model="any",
             **common),
    ]
    return rows, miou, chance


def selection_table(perturbed: pd.DataFrame) -> pd.DataFrame:
    """Fig. 10's caption numbers: mean |w| and σ of the selected weights, one row per mask source."""
    return perturbed.groupby("source", sort=False)[["mean_abs", "std"]].first().rename(
        columns={"mean_abs": "mean |w| of selected", "std": "σ of selected"})


def plot_ratio_heatmap(df: pd.DataFrame, sources: Sequence[str], tasks: Sequence[str], title: str) -> Any:
    """Figs. 1 / 10: the accuracy-ratio heatmap (rows: mask source, columns: evaluation task)."""
    plt, sns = plotting()

    grid = df.pivot(index="source", columns="task", values="ratio").loc[list(sources), list(tasks)]
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    sns.heatmap(grid, annot=True, fmt=".2f", cmap="viridis", vmin=min(0.5, float(np.nanmin(grid.values))),
                vmax=1.05, cbar_kws={"label": "accuracy ratio"}, ax=ax)
    ax.set(title=title, xlabel="evaluated on", ylabel="mask found on")
    fig.tight_layout()
    return fig


def plot_iou_heatmap(iou: pd.DataFrame, tasks: Sequence[str], title: str) -> Any:
    """Fig. 11: the IoU heatmap of the masks of every pair of tasks."""
    plt, sns = plotting()

    fig, ax = plt.subplots(figsize=(6.5, 5.2))
    sns.heatmap(iou.pivot(index="a", columns="b", values="iou").loc[list(tasks), list(tasks)], annot=True, fmt=".2f",
                cmap="magma", vmin=0, vmax=1, cbar_kws={"label": "IoU"}, ax=ax)
    ax.set(title=title, xlabel="", ylabel="")
    fig.tight_layout()
    return fig


__all__ = ["PRETRAINED", "edit_examples", "edit_summary_rows", "overlap_summary", "plot_iou_heatmap",
           "plot_ratio_heatmap", "selection_table"]
