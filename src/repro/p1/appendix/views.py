"""The figures of the P1 appendix chapter (``notebooks/p1_appendix.md``): Fig. 9 (graft parameters per layer),
Fig. 10 (per sub-module type) and Fig. 15 (regions of an intermediate checkpoint along training)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from repro.report.display import plotting

#: Fig. 10's sub-module types in the paper's order.
MODULE_ORDER = ("Q", "K", "V", "QKV", "O", "FFN-in", "FFN-out", "LayerNorm", "other")


def plot_layers(place: pd.DataFrame) -> None:
    """P1 Fig. 9: share of the graft parameters per layer, for all and for the V, FFN-in and LayerNorm entries."""
    plt, sns = plotting()

    panels = {"all": None, "V": ["V", "QKV"], "FFN-in": ["FFN-in"], "LayerNorm": ["LayerNorm"]}
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.4), sharex=True)
    for ax, (name, types) in zip(axes, panels.items()):
        sel = place if types is None else place[place.type.isin(types)]
        d = sel.groupby(["task", "target_sparsity", "layer"])["selected"].sum()
        d = (d / d.groupby(level=[0, 1]).transform("sum")).rename("share").reset_index()
        sns.lineplot(data=d, x="layer", y="share", hue="task", style="target_sparsity", marker="o", ax=ax,
                     legend=name == "all")
        ax.set(title=f"Fig. 9: {name}", ylabel="share of these graft parameters")
    plt.tight_layout()
    plt.show()


def plot_modules(by_type: pd.DataFrame, eligible: pd.Series) -> list[str]:
    """P1 Fig. 10: share of each graft per sub-module type, with the type's share of the graftable set; returns the
    types shown, in the paper's order."""
    plt, sns = plotting()

    order = [t for t in MODULE_ORDER if t in set(by_type.type)]
    g = sns.catplot(data=by_type, x="type", y="share_of_region", hue="task", col="target_sparsity", kind="bar",
                    order=order, height=3.4, aspect=1.4)
    for ax in g.axes.flat:
        ax.plot(range(len(order)), [eligible.get(t, 0) for t in order], "k_", markersize=20, label="eligible share")
        ax.set(xlabel="", ylabel="share of the graft")
    g.figure.suptitle("Fig. 10: graft parameters per sub-module type (black: share of the graftable set)", y=1.04)
    plt.show()
    return order


def plot_tracking(rows: Sequence[Mapping[str, Any]], checkpoint: int, task: str) -> None:
    """P1 Fig. 15: test accuracy along fine-tuning of θ_t and of the regions found at ``checkpoint``."""
    plt, sns = plotting()

    tr = pd.DataFrame(rows)
    tr["model"] = tr.apply(lambda r: "FT" if r.model == "FT" else f"graft {100 * r.target_sparsity:g}% "
                           f"({int(r['count'])})", axis=1)
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    sns.lineplot(data=tr, x="step", y="acc", hue="model", marker="o", ax=ax)
    ax.axvline(checkpoint, color="gray", ls="--", lw=1)
    ax.set(title=f"Fig. 15 ({task}): regions found at step {checkpoint}", ylabel="test accuracy")
    plt.show()


__all__ = ["MODULE_ORDER", "plot_layers", "plot_modules", "plot_tracking"]
