"""The figures of the P1 §5 chapter (``notebooks/p1_multitask_continual.md``): Fig. 8 (overlap and Eq. 5 Rel
heatmaps of the multi-task model's regions, their unions and tuned unions) and Figs. 11-13 (overlap and Rel for
another γ_base or an AdamW multi-task model).  Each figure function draws into a new figure and returns it; the
notebook shows it."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from repro.report.display import plotting

REL = {"cmap": "RdBu", "center": 0, "vmin": -1, "vmax": 1}  #: the colour scale of every Rel panel
OVERLAP = {"cmap": "Blues", "vmin": 0, "vmax": 1}  #: the colour scale of every overlap panel


def plot_heatmap(ax: Any, rows: Sequence[Mapping], value: str, title: str, index: str = "row", columns: str = "col",
                 fmt: str = ".2f", order: Sequence[str] = (), **kw: Any) -> None:
    """One Fig. 8 panel: ``value`` of ``rows`` as an annotated heatmap, tasks in ``order`` (groups after them)."""
    _, sns = plotting()

    df = pd.DataFrame(rows).pivot(index=index, columns=columns, values=value)
    order_c = [t for t in order if t in df.columns]
    order_r = [t for t in order if t in df.index] + [g for g in df.index if g not in order]
    sns.heatmap(df.loc[order_r, order_c], annot=True, fmt=fmt, cbar=False, ax=ax, **kw)
    ax.set_title(title)
    ax.set_xlabel("")
    ax.set_ylabel("")


def fig8(study: Mapping[str, Any], order: Sequence[str], tune_steps: int):
    """P1 Fig. 8: (a) |γi ∩ γj| / |γj|, (b) Rel of γi on task j, (c) Rel of the unions over a group, (d) the same
    after ``tune_steps`` joint graft steps; a panel the study lacks stays empty.  ``study`` is
    :func:`repro.p1.multitask_continual.runs.fig8_study`'s result, tasks in ``order``."""
    plt, _ = plotting()

    fig, axes = plt.subplots(1, 4, figsize=(22, 5))
    plot_heatmap(axes[0], study["overlap"], "overlap", "(a) |γi ∩ γj| / |γj|", order=order, **OVERLAP)
    plot_heatmap(axes[1], study["single"], "rel", "(b) Rel of γi on task j", index="region", columns="task",
                 order=order, **REL)
    if study.get("union"):
        plot_heatmap(axes[2], study["union"], "rel", "(c) Rel of ∪ γ over a group", index="region", columns="task",
                     order=order, **REL)
    if study.get("tuned"):
        plot_heatmap(axes[3], study["tuned"], "rel", f"(d) (c) + {tune_steps} joint graft steps", index="region",
                     columns="task", order=order, **REL)
    fig.tight_layout()
    return fig


def overlap_and_rel(study: Mapping[str, Any], title: str, order: Sequence[str]):
    """P1 Figs. 11-13: the overlap and the Rel heatmap of one region study (``title`` names the MT model and
    γ_base), tasks in ``order``."""
    plt, _ = plotting()

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    plot_heatmap(axes[0], study["overlap"], "overlap", f"{title}: overlap", order=order, **OVERLAP)
    plot_heatmap(axes[1], study["single"], "rel", f"{title}: Rel", index="region", columns="task", order=order, **REL)
    fig.tight_layout()
    return fig


__all__ = ["OVERLAP", "REL", "fig8", "overlap_and_rel", "plot_heatmap"]
