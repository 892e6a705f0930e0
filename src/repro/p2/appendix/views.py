"""Tables and figures of the P2 appendix chapter (``notebooks/p2_appendix.md``: Figs. 8-9 and the beyond-the-paper
grafted vectors and mask overlaps).

The inputs are task-arithmetic summaries (:func:`repro.p2.sparse_vectors.arithmetic_summary`), single-task scores
(:func:`repro.p2.arithmetic.single_task`) and mask-overlap rows (:func:`repro.p2.function_localization.mask_overlap_rows`);
the outputs are the rows the chapter stores and its figures.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from repro.report.results import pct
from repro.report.display import plotting

#: Fig. 8's metrics: summary key → result metric.
FIG8_METRICS = {"single": "single_acc", "abs": "abs_acc", "norm": "norm_acc", "target": "targ_acc",
                "control": "cont_acc"}
ZERO_SHOT = "Pre-trained (Zero-shot)"


def fig9_rows(single: Mapping[str, Mapping[str, Mapping[str, float]]], zero: Mapping[str, float],
              tasks: Sequence[str]) -> list[dict]:
    """Fig. 9 rows: each method's single-task test accuracy (%) per task (``single[label][task]["test"]``), then
    the zero-shot model's."""
    rows = [dict(task=t, method=label, sparsity=None, metric="acc", value=pct(r[t]["test"]), std=None, paper=None)
            for label, r in single.items() for t in tasks]
    return rows + [dict(task=t, method=ZERO_SHOT, sparsity=None, metric="acc", value=pct(v), std=None, paper=None)
                   for t, v in zero.items()]


def fig9_table(rows: Sequence[Mapping], tasks: Sequence[str]) -> pd.DataFrame:
    """Fig. 9 as a method × task table (%) with the mean over tasks."""
    table = pd.DataFrame(rows).pivot(index="method", columns="task", values="value")[list(tasks)]
    table["mean"] = table.mean(axis=1)
    return table


def plot_fig9(table: pd.DataFrame, tasks: Sequence[str]) -> Any:
    """Fig. 9: a radar of single-task accuracy per method, the zero-shot model dashed."""
    plt, _ = plotting()

    angles = np.linspace(0, 2 * np.pi, len(tasks), endpoint=False).tolist()
    fig = plt.figure(figsize=(5, 5))
    ax = fig.add_subplot(polar=True)
    for method, row in table.iterrows():
        vals = [row[t] for t in tasks]
        style = dict(ls="--", color="gray") if method.startswith("Pre-trained") else dict(marker="o", ms=3)
        ax.plot(angles + angles[:1], vals + vals[:1], label=method, **style)
    ax.set_xticks(angles, list(tasks))
    ax.set_title("Fig. 9 — single-task test accuracy (%)")
    ax.legend(fontsize=7, bbox_to_anchor=(1.05, 1.0), loc="upper left")
    return fig


def fig8_rows(sweep: Mapping[float, Mapping[str, float]]) -> list[dict]:
    """Fig. 8 rows: per TaLoS sparsity k the task-addition and task-negation averages (%)."""
    return [dict(task="Average", method="TaLoS", sparsity=100 * (1 - k), metric=m, value=pct(s[key]), std=None,
                 paper=None, k=k, density=s["density"], alpha=s["alpha"])
            for k, s in sweep.items() for key, m in FIG8_METRICS.items()]


def plot_fig8(rows: Sequence[Mapping]) -> Any:
    """Fig. 8: task addition and task negation against TaLoS's sparsity k."""
    plt, sns = plotting()

    df = pd.DataFrame(rows)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for ax, ms, title in ((axes[0], ["single_acc", "abs_acc", "norm_acc"], "task addition"),
                          (axes[1], ["targ_acc", "cont_acc"], "task negation")):
        sns.lineplot(data=df[df.metric.isin(ms)], x="k", y="value", hue="metric", marker="o", ax=ax)
        ax.set(xlabel="sparsity k", ylabel="accuracy (%)", title=f"Fig. 8 — {title}")
    fig.tight_layout()
    return fig


def graft_comparison_rows(compare: Mapping[str, Mapping[str, float] | None]) -> list[dict]:
    """The grafted vectors beside non-linear FT and TaLoS: the Fig. 8 metrics per method (a missing method is
    skipped)."""
    return [dict(task="Average", method=name, sparsity=100 * s["density"], metric=m, value=pct(s[key]), std=None,
                 paper=None, alpha=s["alpha"]) for name, s in compare.items() if s for key, m in FIG8_METRICS.items()]


def overlap_iou_rows(overlap_rows: Sequence[Mapping]) -> list[dict]:
    """IoU (and containment) of every unordered pair of masks per task, in %, beside independent random masks."""
    return [dict(task=r["task"], method=f"{r['a']} vs {r['b']}", sparsity=None, metric="overlap_iou_pct",
                 value=100 * r["iou"], std=None, paper=None, random=100 * r["iou_random"],
                 containment=100 * r["containment"], containment_random=100 * r["containment_random"])
            for r in overlap_rows if r["a"] < r["b"]]


def plot_containment(overlap_rows: Sequence[Mapping]) -> Any:
    """Mean containment (% of the row's mask inside the column's) over tasks, beside independent random masks."""
    plt, sns = plotting()

    mean = pd.DataFrame(overlap_rows).groupby(["a", "b"])[["containment", "containment_random"]].mean().mul(100)
    mean = mean.round(2)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for ax, col, title in ((axes[0], "containment", "containment (% of row mask inside column mask)"),
                           (axes[1], "containment_random", "same, independent random masks")):
        sns.heatmap(mean[col].unstack(), annot=True, fmt=".1f", cmap="mako_r", ax=ax, cbar=False)
        ax.set(title=title, xlabel="", ylabel="")
    fig.tight_layout()
    return fig


__all__ = ["FIG8_METRICS", "ZERO_SHOT", "fig8_rows", "fig9_rows", "fig9_table", "graft_comparison_rows",
           "overlap_iou_rows", "plot_containment", "plot_fig8", "plot_fig9"]
