"""P1 §4.1: calibration of fine-tuned vs grafted models (Table 2's ECE columns, Fig. 6).

ECE and the confidence histogram are :mod:`repro.core.metrics` (equal-width bins, M = 10, Guo et al. 2017 as in
P1 App. A.3).  Here: scoring several models of one task against the fine-tuned reference, the relative ECE
reduction of the abstract's "40-90%" claim, and the claim's condition ("sparsity levels that cause < 5%
reduction in accuracy").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

import torch

from repro.core.evaluation import Predictions, score
from repro.core.metrics import agreement, confidence_histogram

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench


def compare_models(wb: "Workbench", task: str, models: Mapping[str, Mapping[str, torch.Tensor] | None],
                   reference: str = "FT", split: str = "test", n_bins: int = 10
                   ) -> tuple[list[dict], list[dict], dict[str, Predictions]]:
    """Score each model (name → overrides) on ``task``: rows ``task, method, value, acc, f1, ece, agreement``
    (fractions; agreement with the ``reference`` model's predictions), Fig. 6 histogram rows
    ``task, method, bin_lo, bin_hi, fraction``, and the predictions."""
    preds = {m: wb.predict(task, split, ov) for m, ov in models.items()}
    if reference not in preds:
        raise KeyError(f"reference model {reference!r} not among {sorted(preds)}")
    metric = wb.model.specs[task].metric
    rows, hist = [], []
    for m, p in preds.items():
        s = score(p, metric, n_bins=n_bins)
        rows.append({"task": task, "method": m, **s, "agreement": agreement(p.preds, preds[reference].preds)})
        hist += [{"task": task, "method": m, **h} for h in confidence_histogram(p.probs, n_bins)]
    return rows, hist, preds


def ece_reduction(ece_ft: float, ece_graft: float) -> float:
    """Relative ECE reduction (ECE_FT − ECE_graft) / ECE_FT (the abstract's "40-90% error reduction")."""
    return float("nan") if ece_ft <= 0 else (ece_ft - ece_graft) / ece_ft


def reduction_rows(rows: Sequence[Mapping], graft: str = "Graft", reference: str = "FT",
                   max_drop: float = 0.05) -> list[dict]:
    """Per task: the graft's relative ECE reduction and whether it costs < ``max_drop`` (relative) of the FT
    metric, the condition under which P1 §4.1 states the 40-90% range."""
    by = {(r["task"], r["method"]): r for r in rows}
    out = []
    for task in dict.fromkeys(r["task"] for r in rows):
        ft, gr = by.get((task, reference)), by.get((task, graft))
        if ft is None or gr is None:
            continue
        rel_drop = (ft["value"] - gr["value"]) / ft["value"] if ft["value"] else float("nan")
        out.append({"task": task, "ece_ft": ft["ece"], "ece_graft": gr["ece"],
                    "reduction": ece_reduction(ft["ece"], gr["ece"]), "metric_ft": ft["value"],
                    "metric_graft": gr["value"], "relative_drop": rel_drop, "within_5pct": rel_drop < max_drop})
    return out
