"""The tables and figures of the P1 §2-3 chapter (``notebooks/p1_localization.md``): the Table 2 graft sizes and the
plots of Figs. 2-5 (rows from :mod:`repro.p1.localization.runs`)."""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from repro.report.display import plotting, style_table


def graft_sizes(outs: Mapping[tuple[str, int, int], Mapping[str, Any]], n_graftable: int) -> pd.DataFrame:
    """The final size of every Table 2 graft (γ_base, learned size, its share of the graftable set, best step and
    its train + dev score), formatted for reading."""
    rows = []
    for (t, k, s), o in outs.items():
        history = o["meta"]["history"]
        rows.append({"task": t, "k": k, "seed": s, "γ_base": o["meta"]["base_count"], "graft": o["mask"].count(),
                     "share of graftable (%)": 100 * o["mask"].count() / n_graftable,
                     "best step": o["meta"]["best_step"],
                     "train+dev at best": max(h["score"] for h in history) if history else None})
    return style_table(pd.DataFrame(rows), counts=["γ_base", "graft", "seed", "k", "best step"])


def plot_curves(df: Any, refs: Any, title: str, hue: str = "region", style: str | None = None,
                col: str = "task") -> None:
    """Accuracy vs region size, one panel per ``col``, with the FT (dashed) and pre-trained (dotted) levels."""
    plt, sns = plotting()

    g = sns.relplot(data=df, x="sparsity_pct", y="acc", hue=hue, style=style, col=col, kind="line", marker="o",
                    height=3.4, aspect=1.2, facet_kws={"sharey": False})
    for ax, (name, _) in zip(g.axes.flat, df.groupby(col, sort=False)):
        for r in refs[refs[col] == name].itertuples():
            ax.axhline(r.acc, ls="--" if r.model == "FT" else ":", color="gray", lw=1)
            ax.annotate(r.model, (ax.get_xlim()[0], r.acc), fontsize=8, color="gray", va="bottom")
        ax.set(xscale="log", xlabel="region size (% of graftable parameters)", ylabel="test accuracy")
    g.figure.suptitle(title, y=1.03)
    plt.show()



def plot_bias_and_lottery(fig4a: Any, fig4b: Any, n_bias: int, n_graftable: int) -> None:
    """P1 Fig. 4: (a) bias-only vs unrestricted learned regions by size, (b) lottery-ticket (zero outside) vs graft
    by region density."""
    plt, sns = plotting()

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    sns.lineplot(data=fig4a, x="sparsity_pct", y="acc", hue="what", style="task", marker="o", ax=axes[0])
    axes[0].set(xscale="log", xlabel="region size (% of graftable)", ylabel="test accuracy",
                title=f"(a) bias-only regions ({n_bias:,} biases = {100 * n_bias / n_graftable:.2f}%)")
    sns.lineplot(data=fig4b, x="target_density", y="acc", hue="method", style="task", marker="o", ax=axes[1])
    axes[1].set(xlabel="region density (top |θ_ft|)", ylabel="test accuracy", title="(b) zero outside vs graft")
    plt.tight_layout()
    plt.show()


def plot_relative(df: Any, level: float = 0.95) -> None:
    """P1 Fig. 5: graft accuracy / FT accuracy by region size, one line per fine-tuning recipe, one panel per task,
    with the ``level`` the claim asks for."""
    plt, sns = plotting()

    g = sns.relplot(data=df.assign(rel=df.acc / df.ft_acc), x="sparsity_pct", y="rel", hue="label", col="task",
                    kind="line", marker="o", height=3.4, aspect=1.2)
    for ax in g.axes.flat:
        ax.set(xscale="log", xlabel="region size (% of graftable)", ylabel="graft accuracy / FT accuracy")
        ax.axhline(level, color="gray", ls="--", lw=1)
    plt.show()


__all__ = ["graft_sizes", "plot_bias_and_lottery", "plot_curves", "plot_relative"]
