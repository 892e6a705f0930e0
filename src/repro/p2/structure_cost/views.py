"""Tables and figures of the P2 structure-and-cost chapter (``notebooks/p2_structure_cost.md``, Figs. 4-5,
Tables 3-4).

Figs. 4-5 start from :meth:`repro.core.masks.Mask.placement` rows (one per tensor: type, kind, layer, selected,
eligible); Tables 3-4 from :func:`repro.p2.efficiency.table3_rows` / :func:`repro.p2.efficiency.table4_rows`.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from repro.core.masks import Mask
from repro.p2.function_localization import structure_summary
from repro.report.display import plotting


# --- Figs. 4-5: where the masks sit ----------------------------------------------------------------------------
def mask_placement(masks: Mapping[str, Mask], labels: Mapping[str, str]) -> pd.DataFrame:
    """Every mask's placement rows (one per tensor), with ``method`` = ``labels[key]``."""
    return pd.DataFrame([r for key, m in masks.items() for r in m.placement(method=labels[key])])


def placement_summaries(placement: pd.DataFrame) -> dict[str, dict]:
    """P2 Figs. 4-5 in numbers per method (:func:`repro.p2.function_localization.structure_summary`)."""
    return {m: structure_summary(placement[placement.method == m].to_dict("records"))
            for m in placement.method.unique()}


def placement_by_type(placement: pd.DataFrame) -> pd.DataFrame:
    """Fig. 4: per method and sub-module group (``type kind``) the share of entries selected, ``selected_pct``."""
    by_type = (placement.assign(group=placement["type"] + " " + placement["kind"])
               .groupby(["method", "group"], sort=False)[["selected", "eligible"]].sum().reset_index())
    by_type["selected_pct"] = 100 * by_type["selected"] / by_type["eligible"]
    return by_type


def fig4_rows(by_type: pd.DataFrame, task: str, densities: Mapping[str, float]) -> list[dict]:
    """Fig. 4 as result rows (``densities``: each method label's mask density)."""
    return [dict(task=task, method=r.method, sparsity=None, metric="selected_pct", value=r.selected_pct, std=None,
                 paper=None, unit="%", group=r.group, density=densities[r.method]) for r in by_type.itertuples()]


def summary_table(summaries: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The structure of each mask in three numbers (top weight matrices, spread, blocks led by Q or K)."""
    return pd.DataFrame({k: {"top weight matrices": ", ".join(v["top_weight_types"][:3]),
                             "spread (CV of shares)": round(v["spread_cv"], 2),
                             "blocks whose top matrix is Q or K": f"{100 * v['qk_top_layers']:.0f} %"}
                         for k, v in summaries.items()})


def plot_fig4(by_type: pd.DataFrame, task: str) -> Any:
    """Fig. 4: % of entries selected per sub-module group, one bar per method."""
    plt, sns = plotting()

    fig, ax = plt.subplots(figsize=(9, 3.2))
    sns.barplot(data=by_type, x="group", y="selected_pct", hue="method", ax=ax)
    ax.set(xlabel="", ylabel="% of entries selected", title=f"Fig. 4 — masks at 90 % sparsity ({task})")
    ax.tick_params(axis="x", rotation=45)
    return fig


def plot_fig5(placement: pd.DataFrame) -> Any:
    """Fig. 5: per method a heatmap of the % selected of each weight matrix, block by block."""
    plt, sns = plotting()

    weights = placement[placement.kind == "weight"].copy()
    weights["selected_pct"] = 100 * weights["selected"] / weights["eligible"]
    labels = sorted(weights.method.unique())
    fig, axes = plt.subplots(1, len(labels), figsize=(5 * len(labels), 3.2), sharey=True, squeeze=False)
    for ax, label in zip(axes[0], labels):
        grid = weights[weights.method == label].pivot_table(index="layer", columns="type", values="selected_pct")
        sns.heatmap(grid, ax=ax, cmap="viridis", vmin=0, annot=grid.shape[0] <= 12, fmt=".0f")
        ax.set_title(f"Fig. 5 — {label} (% selected per weight matrix)")
    fig.tight_layout()
    return fig


# --- Tables 3-4: cost ------------------------------------------------------------------------------------------
def plot_cost_ratios(ratio_rows: Sequence[Mapping[str, Any]]) -> Any:
    """Table 3 as bars: ours and the paper's (ViT-B/32) ratio to non-linear FT, one panel per metric."""
    _, sns = plotting()

    long = pd.DataFrame(ratio_rows)
    cols = ["method", "metric", "value", "source"]
    paper = long.assign(source="paper (ViT-B/32)", value=long["paper"])[cols]
    long = pd.concat([long.assign(source="ours")[cols], paper], ignore_index=True)
    g = sns.catplot(data=long, x="method", y="value", hue="source", col="metric", kind="bar", col_wrap=4,
                    height=2.8, aspect=1.1, sharey=False)
    g.set_xticklabels(rotation=45)
    g.set_axis_labels("", "× non-linear FT")
    return g


def table4_result_rows(t4: Mapping[str, Mapping[str, float]], printed: pd.DataFrame, labels: Mapping[str, str],
                       task: str) -> list[dict]:
    """Table 4 as result rows beside the printed ViT-L/14 cell of the same method and metric."""
    rows = []
    for key, metrics in t4.items():
        for metric, value in metrics.items():
            cell = printed[(printed.method == labels[key]) & (printed.metric == metric)]
            rows.append(dict(task=task, method=labels[key], sparsity=None, metric=metric, value=value, std=None,
                             paper=None if cell.empty else float(cell.value.iloc[0]),
                             unit="s" if metric.endswith("time") else "GiB", paper_model="ViT-L/14"))
    return rows


def table4_ratios(t4: Mapping[str, Mapping[str, float]], printed: pd.DataFrame, calibration_seconds: float,
                  n_calibration: int, fwd_bwd_s: float) -> pd.DataFrame:
    """The Table 4 ratios the claims are about, ours beside the paper's (printed ViT-L/14 cells)."""
    p4 = {(r.method, r.metric): r.value for r in printed.itertuples()}
    return pd.DataFrame([
        dict(quantity="TaLoS calibration time / LoTA calibration time",
             ours=t4["talos"]["mask_calibration_time"] / t4["lota"]["mask_calibration_time"],
             paper=p4[("TaLoS", "mask_calibration_time")] / p4[("LoTA", "mask_calibration_time")]),
        dict(quantity="TaLoS calibration memory / LoTA calibration memory",
             ours=t4["talos"]["mask_calibration_peak_memory"] / max(t4["lota"]["mask_calibration_peak_memory"], 1e-9),
             paper=p4[("TaLoS", "mask_calibration_peak_memory")] / p4[("LoTA", "mask_calibration_peak_memory")]),
        dict(quantity="TaLoS calibration time / TaLoS training time",
             ours=t4["talos"]["mask_calibration_time"] / t4["talos"]["train_time"],
             paper=p4[("TaLoS", "mask_calibration_time")] / p4[("TaLoS", "train_time")]),
        dict(quantity="TaLoS total time / non-linear FT total time",
             ours=t4["talos"]["total_time"] / t4["ft"]["total_time"],
             paper=p4[("TaLoS", "total_time")] / p4[("Non-linear FT", "total_time")]),
        dict(quantity="one calibration batch / one FT forward-backward",
             ours=calibration_seconds / n_calibration / fwd_bwd_s, paper=None),
    ])


__all__ = ["fig4_rows", "mask_placement", "placement_by_type", "placement_summaries", "plot_cost_ratios",
           "plot_fig4", "plot_fig5", "summary_table", "table4_ratios", "table4_result_rows"]
