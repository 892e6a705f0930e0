"""The figures of the P1 §4 chapter (``notebooks/p1_calibration_ood.md``): Fig. 6 (confidence histograms of FT and
the graft), Fig. 7 (OOD accuracy against the graft's size, FT as a line) and Fig. 7e-f (the WiSE curves).  Each
draws into a new figure and returns it; the notebook shows it."""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from repro.p1.ood import PRINTED_NAME
from repro.report.display import plotting


def fig6(hist: pd.DataFrame, ece: Mapping[str, float], task: str, n_seeds: int):
    """P1 Fig. 6: share of ``task``'s test examples per top-probability bin, FT beside the graft (``ece``:
    method → ECE, a fraction)."""
    plt, _ = plotting()

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), sharey=True)
    for ax, m in zip(axes, ("FT", "Graft")):
        d = hist[hist.method == m]
        ax.bar(d.bin_lo + 0.05, d.fraction, width=0.1, edgecolor="k")
        ax.set_title(f"{task}: {m} (ECE {100 * ece[m]:.1f}%, {n_seeds} seed{'s' if n_seeds != 1 else ''})")
        ax.set_xlabel("top prediction probability")
    axes[0].set_ylabel("fraction of test examples")
    fig.tight_layout()
    return fig


def fig7(ood: pd.DataFrame, pairs: Sequence[tuple[str, str]]):
    """P1 Fig. 7: OOD accuracy of the grafts against their size (% of the block parameters), FT dashed, one panel
    per (source, target) pair."""
    plt, _ = plotting()

    fig, axes = plt.subplots(1, len(pairs), figsize=(3.2 * len(pairs), 3.2), squeeze=False)
    for ax, (s, t) in zip(axes[0], pairs):
        d = ood[(ood.source == s) & (ood.target == t)]
        gr = d[d.method == "Grafting"].sort_values("sparsity")
        ax.plot(gr.sparsity, 100 * gr.acc, "o-", label="graft")
        ax.axhline(100 * d[d.method == "FT"].acc.iloc[0], color="C3", ls="--", label="FT")
        ax.set_xscale("log")
        shown = d.shown.iloc[0] if "shown" in d and len(d) else PRINTED_NAME.get(t, t)
        ax.set_title(f"{s} → {shown}")
        ax.set_xlabel("region size (% of block params)")
    axes[0][0].set_ylabel("OOD accuracy (%)")
    axes[0][0].legend()
    fig.tight_layout()
    return fig


def fig7_wise(wise: pd.DataFrame, sources: Sequence[str], title: Mapping[str, str]):
    """P1 Fig. 7e-f: OOD (mean over the targets) against ID accuracy along the WiSE-FT and WiSE-Graft curves, one
    panel per source (``title``: source → its panel title), each point labelled with its α."""
    plt, sns = plotting()

    fig, axes = plt.subplots(1, len(sources), figsize=(4.5 * len(sources), 3.6), squeeze=False)
    for ax, s in zip(axes[0], sources):
        d = wise[wise.source == s]
        sns.lineplot(data=d.assign(ID=100 * d.id, OOD=100 * d.ood), x="ID", y="OOD", hue="method", marker="o",
                     sort=False, ax=ax)
        for _, r in d.iterrows():
            ax.annotate(f"{r.alpha:g}", (100 * r.id, 100 * r.ood), fontsize=7)
        ax.set_title(title[s])
    fig.tight_layout()
    return fig


__all__ = ["fig6", "fig7", "fig7_wise"]
