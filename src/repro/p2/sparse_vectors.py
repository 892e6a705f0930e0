"""Sparse task vectors beyond the method zoo's defaults, scored with the P2 task-arithmetic protocol.

:func:`arithmetic_summary` — single-task, addition and negation of any family of task vectors (P2 Fig. 8's TaLoS at
each sparsity k, the P1-grafted FT vectors γ_t ⊙ τ_t of ``repro.p2.appendix.runs``) with :mod:`repro.p2.arithmetic`
(α on validation, grid × 1/(1 − k) for a k-sparse family, P2 App. A.1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import torch
import numpy as np

from repro.core.taskvec import TaskVector
from repro.p2.arithmetic import ArithmeticMethod, single_task, task_addition, task_negation

if TYPE_CHECKING:  # pragma: no cover
    from repro.p2.evaluator import Evaluator
    from repro.workbench import Workbench


def arithmetic_summary(wb: "Workbench", ev: "Evaluator", vectors: Mapping[str, Mapping[str, torch.Tensor]],
                       sparsity: float, alphas: Sequence[float] | None = None, label: str = "",
                       negation: bool = True) -> dict[str, Any]:
    """Single-task, task-addition and task-negation results (fractions) of one family of task vectors.

    The α grid is ``alphas`` (default ``profile.alphas``) stretched by 1/(1 − ``sparsity``) (P2 App. A.1).
    Returns ``{"single": mean single-task test acc, "abs", "norm", "alpha", "target", "control", ...}`` and
    ``"correct": {kind: {task: per-example 0/1 test correctness}}`` (kind ``single``, ``addition``, and with
    negation ``target`` / ``control``: the evaluations behind those numbers, for paired bootstraps).
    """

    method = ArithmeticMethod(label or f"sparse-{sparsity}", label or f"k={sparsity}", "Sparse", "ft")
    vecs = {t: TaskVector(dict(vectors[t])) for t in ev.tasks}
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    grid = [round(float(a) / (1.0 - sparsity), 6) for a in (wb.profile.alphas if alphas is None else alphas)]
    single = single_task(ev, method, vecs)
    add = task_addition(ev, method, vecs, grid, single=single)
    out: dict[str, Any] = {"label": method.label, "sparsity": sparsity, "grid_max": max(grid),
                           "single": float(np.mean([single[t]["test"] for t in ev.tasks])),
                           "single_per_task": {t: single[t]["test"] for t in ev.tasks},
                           "abs": add["abs"], "norm": add["norm"], "alpha": add["alpha"],
                           "density": float(np.mean([vecs[t].count_nonzero() / sum(wb.pre[n].numel()
                                                     for n in wb.names("maskable")) for t in ev.tasks])),
                           "correct": {"single": {t: single[t]["test_correct"] for t in ev.tasks},
                                       "addition": dict(add["test_correct"])}}
    if negation:
        neg = task_negation(ev, method, vecs, grid)
        out.update(target=neg["target"], control=neg["control"],
                   negation_alpha={t: r["alpha"] for t, r in neg["per_task"].items()})
        out["correct"].update({k: {t: r[f"{k}_correct"] for t, r in neg["per_task"].items()}
                               for k in ("target", "control")})
    return out
