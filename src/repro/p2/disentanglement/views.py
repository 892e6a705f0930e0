"""Tables and figures of the P2 §5.2 chapter (``notebooks/p2_disentanglement.md``, Figs. 2, 3, 6, 7).

Each ``fig*_tables`` function runs one figure's analysis over the zoo's task vectors of every P2 method
(:mod:`repro.p2.function_localization`, :mod:`repro.p2.linear_regime`) and returns the rows the chapter stores; each
``plot_fig*`` draws the figure from those rows.  The linearized methods are evaluated on their linearized network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pandas as pd

from repro.core.evaluation import predict, score
from repro.data import Example
from repro.p2.function_localization import disentanglement_grid, function_localization, grid_summary, localization_summary
from repro.p2.methods import METHODS
from repro.report.results import pct
from repro.report.display import plotting

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench

Vectors = Mapping[str, Mapping[str, Mapping[str, Any]]]  #: ``{method key: {task: τ}}``


# --- Fig. 2: weight disentanglement ------------------------------------------------------------------------------
def fig2_tables(wb: "Workbench", vectors: Vectors, methods: Sequence[str], pairs: Sequence[tuple[str, str]],
                sets: Mapping[str, Sequence[Example]], grid: Sequence[float], grid_points: int,
                n_grid: int) -> tuple[list[dict], list[dict], dict[str, dict[str, tuple[list[float], list[float]]]]]:
    """P2 Eq. 10 on ``grid``² for every task pair and method: (grid rows with ``pair`` and ``method``, one
    summary row per pair and method: mean ξ, and ξ over the addition quadrant and the unit square, and
    ``{method: {pair: (d1, d2)}}``: each test example's share of grid points that disagree, per task of the pair,
    from the same predictions — the per-example terms of the mean ξ, for a bootstrap over examples).
    ``grid_points`` and ``n_grid`` (the plan's) label the summary rows."""
    grid_rows, rows = [], []
    disagreement: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for t1, t2 in pairs:
        for key in methods:
            label = METHODS[key].label
            cells, per_example = disentanglement_grid(wb, vectors[key][t1], vectors[key][t2], t1, t2, sets[t1],
                                                      sets[t2], grid, linear=METHODS[key].linear)
            disagreement.setdefault(label, {})[f"{t1} + {t2}"] = per_example
            grid_rows += [dict(r, pair=f"{t1} + {t2}", method=label) for r in cells]
            s = grid_summary(cells)
            rows.append(dict(task=f"{t1} + {t2}", method=label, sparsity=None, metric="disentanglement_error",
                             value=s["xi_mean"], std=None, paper=None, xi_addition=s["xi_addition"],
                             xi_unit=s["xi_unit"], grid=f"{grid_points}x{grid_points} on [-3,3]^2",
                             n_per_task=n_grid))
    return grid_rows, rows, disagreement


def plot_fig2(grid_rows: Sequence[Mapping], pairs: Sequence[tuple[str, str]], labels: Sequence[str]) -> Any:
    """Fig. 2: one ξ(α₁, α₂) heatmap per pair (row) and method (column), the α ≥ 0 quadrant boxed in red."""
    plt, sns = plotting()

    df = pd.DataFrame(grid_rows)
    methods = [m for m in labels if m in set(df.method)]
    fig, axes = plt.subplots(len(pairs), len(methods), figsize=(2.6 * len(methods), 2.5 * len(pairs)),
                             squeeze=False)
    for i, (t1, t2) in enumerate(pairs):
        for j, m in enumerate(methods):
            d = df[(df.pair == f"{t1} + {t2}") & (df.method == m)]
            mat = d.pivot(index="alpha2", columns="alpha1", values="xi").sort_index(ascending=False)
            sns.heatmap(mat, ax=axes[i, j], vmin=0, vmax=1, cmap="rocket_r", cbar=j == len(methods) - 1,
                        xticklabels=[f"{a:g}" for a in mat.columns], yticklabels=[f"{a:g}" for a in mat.index])
            x0 = int(np.argmax(np.asarray(mat.columns) >= 0))  # first column with α₁ ≥ 0; rows run from α₂ = +3
            axes[i, j].add_patch(plt.Rectangle((x0, 0), int((mat.columns >= 0).sum()), int((mat.index >= 0).sum()),
                                               fill=False, ec="red", lw=1.5))
            axes[i, j].set(title=m if i == 0 else "", xlabel=f"α₁ ({t1})", ylabel=f"α₂ ({t2})" if j == 0 else "")
    fig.suptitle("Fig. 2 — disentanglement error ξ(α₁, α₂) (lighter = more disentangled; red: α ≥ 0)")
    fig.tight_layout()
    return fig


# --- Fig. 3: function localization -------------------------------------------------------------------------------
def fig3_tables(wb: "Workbench", vectors: Vectors, methods: Sequence[str], tasks: Sequence[str],
                sets: Mapping[str, Sequence[Example]]) -> tuple[list[dict], list[dict]]:
    """P2 Eq. 6 for every method: (one row per fine-tuned task, evaluation task and method with the accuracy ratio
    to θ0, two summary rows per method: mean diagonal ratio and mean |ratio − 1| off the diagonal)."""
    pre_scores = {t: wb.evaluate(t, examples=sets[t])["value"] for t in tasks}
    loc_rows, rows = [], []
    for key in methods:
        label = METHODS[key].label
        cells = function_localization(wb, vectors[key], tasks, sets, linear=METHODS[key].linear,
                                      pre_scores=pre_scores)
        loc_rows += [dict(r, method=label) for r in cells]
        s = localization_summary(cells)
        rows += [dict(task="all", method=label, sparsity=None, metric="diagonal_ratio", value=s["diag_mean"],
                      std=None, paper=None, unit="×"),
                 dict(task="all", method=label, sparsity=None, metric="off_diagonal_abs_dev", value=s["off_abs_dev"],
                      std=None, paper=None, unit="×", off_min=s["off_min"])]
    return loc_rows, rows


def plot_fig3(loc_rows: Sequence[Mapping], tasks: Sequence[str], labels: Sequence[str]) -> Any:
    """Fig. 3: per method the heatmap of accuracy ratios to θ0 (rows: fine-tuned on, columns: evaluated on)."""
    plt, sns = plotting()

    df = pd.DataFrame(loc_rows)
    fig, axes = plt.subplots(1, len(labels), figsize=(3.1 * len(labels), 3.0), squeeze=False)
    lo, hi = df.ratio.min(), df.ratio.max()
    for j, (ax, label) in enumerate(zip(axes[0], labels)):
        mat = df[df.method == label].pivot(index="ft_task", columns="eval_task", values="ratio").loc[tasks, tasks]
        sns.heatmap(mat, ax=ax, vmin=min(lo, 0.5), vmax=max(hi, 1.5), center=1.0, cmap="RdBu_r",
                    annot=len(tasks) <= 6, fmt=".2f", cbar=False, annot_kws={"size": 7})
        for k in range(len(tasks)):
            ax.add_patch(plt.Rectangle((k, k), 1, 1, fill=False, ec="red", lw=1.2))
        ax.set(title=label, xlabel="evaluated on", ylabel="fine-tuned on" if j == 0 else "")
    fig.suptitle("Fig. 3 — accuracy ratio to the pre-trained model (1 = no interference)")
    fig.tight_layout()
    return fig


# --- Fig. 6: post-hoc linearization ------------------------------------------------------------------------------
def linearized_scores(model: Any, examples: Sequence[Example], task: str, pre: Mapping[str, Any],
                      vector: Mapping[str, Any], batch_size: int = 64) -> dict[str, Any]:
    """P2 Fig. 6 for θ0 + τ: :func:`repro.p2.linear_regime.linearized_accuracy`'s scores (the same two prediction
    passes, on the network and on its post-hoc linearization) plus the per-example 0/1 correctness of each
    (``ft_correct``, ``lin_correct``), for a paired bootstrap over the examples."""
    if not vector:
        raise ValueError("empty task vector")
    over = {n: pre[n] + v for n, v in vector.items()}
    metric = model.specs[task].metric
    p_ft = predict(model, examples, task, over, batch_size=batch_size)
    p_lin = predict(model, examples, task, over, batch_size=batch_size, linear_base={n: pre[n] for n in vector})
    return {"ft": score(p_ft, metric)["value"], "lin": score(p_lin, metric)["value"],
            "agreement": float((p_ft.preds == p_lin.preds).float().mean()), "ft_correct": p_ft.correct().tolist(),
            "lin_correct": p_lin.correct().tolist()}


def fig6_tables(wb: "Workbench", vectors: Vectors, methods: Sequence[str], tasks: Sequence[str],
                sets: Mapping[str, Sequence[Example]], loc_rows: Sequence[Mapping],
                batch_size: int) -> tuple[list[dict], dict[str, dict[str, dict[str, list[int]]]]]:
    """Fig. 6: (rows: each method's fine-tuned accuracy beside its post-hoc linearization's (pp), and
    ``{method: {task: {"ft": per-example 0/1, "lin": per-example 0/1}}}`` for the methods linearized post hoc).  A
    linearized method is its own linearization, so its row reuses the Fig. 3 diagonal (``by_construction``)."""
    diag = {(r["method"], r["ft_task"]): r["value"] for r in loc_rows if r["diagonal"]}
    rows, correct = [], {}
    for key in methods:
        label = METHODS[key].label
        for t in tasks:
            if METHODS[key].linear:
                out = {"ft": diag[(label, t)], "lin": diag[(label, t)], "agreement": 1.0}
            else:
                out = linearized_scores(wb.model, sets[t], t, wb.pre, vectors[key][t], batch_size=batch_size)
                correct.setdefault(label, {})[t] = {"ft": out["ft_correct"], "lin": out["lin_correct"]}
            rows.append(dict(task=t, method=label, sparsity=None, metric="acc_gap_lin_minus_ft",
                             value=pct(out["lin"] - out["ft"]), std=None, paper=None, unit="pp",
                             ft_acc=pct(out["ft"]), lin_acc=pct(out["lin"]), agreement=pct(out["agreement"]),
                             by_construction=METHODS[key].linear))
    return rows, correct


def plot_fig6(lin_rows: Sequence[Mapping]) -> Any:
    """Fig. 6: fine-tuned vs post-hoc linearized accuracy, one point per method and task, with the bisector."""
    plt, sns = plotting()

    df = pd.DataFrame(lin_rows)
    fig, ax = plt.subplots(figsize=(4.6, 4.2))
    sns.scatterplot(data=df, x="ft_acc", y="lin_acc", hue="method", style="task", s=60, ax=ax)
    lims = [min(df.ft_acc.min(), df.lin_acc.min()) - 2, 100]
    ax.plot(lims, lims, "k--", lw=1)
    ax.set(xlabel="fine-tuned accuracy (%)", ylabel="post-hoc linearized accuracy (%)", title="Fig. 6")
    ax.legend(fontsize=6, bbox_to_anchor=(1.02, 1), loc="upper left")
    return fig


def fig6_summary(lin_rows: Sequence[Mapping]) -> pd.DataFrame:
    """Per method the mean |gap| (pp) and the mean agreement (%) of the network and its linearization."""
    df = pd.DataFrame(lin_rows)
    return df.assign(abs_gap=df.value.abs()).groupby("method", sort=False)[["abs_gap", "agreement"]].mean().round(2)


# --- Fig. 7: gradient drift --------------------------------------------------------------------------------------
def fig7_table(drift_rows: Sequence[Mapping], task: str, step: int, of_steps: int) -> tuple[list[dict], dict]:
    """Fig. 7 at the last checkpoint ``step``: (rows, ``{method: per-example relative gradient change}``)."""
    at = {r["method"]: r for r in drift_rows if r["step"] == step}
    rows = [dict(task=task, method=m, sparsity=None, metric="grad_rel_change", value=float(r["rel_change"]),
                 std=None, paper=None, step=step, of_steps=of_steps) for m, r in at.items()]
    return rows, {m: np.asarray(r["rel_per_example"], dtype=float) for m, r in at.items()}


def plot_fig7(drift_rows: Sequence[Mapping], task: str, n_examples: int, of_steps: int) -> Any:
    """Fig. 7: the relative change of ∇θ f against the optimizer step, one line per method."""
    plt, sns = plotting()

    fig, ax = plt.subplots(figsize=(5, 3.2))
    sns.lineplot(data=pd.DataFrame(drift_rows), x="step", y="rel_change", hue="method", marker="o", ax=ax)
    ax.set(xscale="symlog", ylabel="relative change of ∇θ f", xlabel=f"optimizer step (of {of_steps})",
           title=f"Fig. 7 — {task}, {n_examples} examples")
    return fig


__all__ = ["fig2_tables", "fig3_tables", "fig6_summary", "fig6_tables", "fig7_table", "linearized_scores", "plot_fig2",
           "plot_fig3", "plot_fig6", "plot_fig7"]
