"""Views of the P2 §5.1 chapter beyond Tables 1, 2 and 5: what each method's single-task models learned, and the
figures (the addition α sweeps, the negation scatter)."""

from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from repro.p2.task_arithmetic.runs import Correctness
from repro.report.display import plotting


def single_task_frame(ex: Correctness, zero_shot: Mapping[str, float]) -> pd.DataFrame:
    """Test accuracy (%) of every method's single-task model θ_0 + τ_t on its own task t (mean over seeds), beside
    the zero-shot (head-only) model: the normalizers of Table 1's normalized accuracy, and each task's gain."""
    rows = [{"method": "Pre-trained (Zero-shot)", **{t: 100 * zero_shot[t] for t in ex.tasks}}]
    for (label, kind), by_task in ex.data.items():
        if kind == "single":
            rows.append({"method": label, **{t: 100 * float(by_task[t].mean()) for t in ex.tasks}})
    frame = pd.DataFrame(rows).set_index("method")
    frame["mean gain over zero-shot"] = frame[ex.tasks].mean(axis=1) - frame.loc["Pre-trained (Zero-shot)",
                                                                               ex.tasks].mean()
    return frame.round(1)


def plot_addition_sweep(sweep: pd.DataFrame) -> Any:
    """Normalized validation accuracy of the task-addition α sweep per method (± std over seeds): the dense,
    post-hoc and L-LoRA methods on the α grid, the sparse ones on the grid × 1/(1 − k)."""
    plt, sns = plotting()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    sparse = sweep.method.isin(["LoTA", "TaLoS"])
    for ax, part, title in ((axes[0], sweep[~sparse], "dense / post-hoc / L-LoRA (α grid)"),
                            (axes[1], sweep[sparse], "sparse FT (α grid × 1/(1−k))")):
        sns.lineplot(data=part, x="alpha", y="normalized validation accuracy", hue="method", marker="o",
                     errorbar="sd", ax=ax)
        ax.set_title(title)
        ax.legend(fontsize=8)
    plt.tight_layout()
    return fig


def plot_negation(neg: pd.DataFrame, control_zero: float) -> Any:
    """Task negation: target against control test accuracy per method, with 95 % of the zero-shot control
    (``control_zero``, a fraction) as a line."""
    plt, sns = plotting()
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    sns.scatterplot(data=neg, x="target accuracy", y="control accuracy", hue="method", style="method", s=90, ax=ax)
    ax.axhline(95 * control_zero, color="grey", ls="--", lw=1, label="95 % of zero-shot control (test)")
    ax.set_title("Task negation: lower target, same control is better")
    ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    plt.tight_layout()
    return fig


__all__ = ["plot_addition_sweep", "plot_negation", "single_task_frame"]
