"""Per-example results of the P1 §5 chapter (``notebooks/p1_multitask_continual.md``) for its statistical claims.

The frozen drivers (:mod:`repro.p1.multitask`, :mod:`repro.p1.continual`) give accuracies only; the claims of
Fig. 8 (MT vs single-task FT, the Eq. 5 Rel values of the regions) and Table 4 (continual learning) compare models
on *the same* test examples, so this module scores every model of one comparison on one list of examples and keeps
the per-example 0/1 correctness (the input of :mod:`repro.report.verdicts`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import torch

from repro.core.masks import Mask
from repro.data import fixed_subset
from repro.p1.calibration import per_example
from repro.p1.multitask import tune_union, union_regions

if TYPE_CHECKING:  # pragma: no cover
    from repro.profiles import GraftRecipe
    from repro.workbench import Workbench

Overrides = Mapping[str, torch.Tensor] | None


def paired_correct(wb: "Workbench", task: str, models: Mapping[str, Overrides], split: str = "test",
                   limit: int | None = None) -> dict[str, np.ndarray]:
    """Per-example 0/1 correctness of each model (name → overrides) on the same examples of ``task``'s ``split``
    (the label-balanced subset of :func:`repro.data.fixed_subset` when ``limit`` is set, as the Eq. 5
    accuracies use; all of them otherwise); the mean of each array is the model's accuracy (Table 4, Fig. 8)."""
    examples = fixed_subset(wb.task(task).split(split), limit)
    return {name: per_example(wb.predict(task, split, ov, examples=examples))["correct"]
            for name, ov in models.items()}


def fig8_regions(wb: "Workbench", regions: Mapping[str, Mask], groups: Mapping[str, Sequence[str]],
                 vector: Mapping[str, torch.Tensor], tune: GraftRecipe | None = None
                 ) -> tuple[dict[str, Mask], dict[str, list[str]]]:
    """The regions behind P1 Fig. 8b-d by Rel key — ``single:<task>``, ``union:<group>``, ``tuned:<group>`` — and
    the tasks each is scored on (single: every task; union / tuned: the group's own tasks, what the claims use).

    The unions are recomputed (set operations) and the tuned unions come from :func:`repro.p1.multitask.tune_union`
    with the recipe ``tune`` :func:`repro.p1.multitask.region_study` used (None: no tuned unions), i.e. from its
    cache: nothing is trained."""
    tasks = list(regions)
    masks = {f"single:{t}": m for t, m in regions.items()}
    on = {f"single:{t}": tasks for t in regions}
    unions = union_regions(regions, groups) if groups else {}
    for g, u in unions.items():
        masks[f"union:{g}"], on[f"union:{g}"] = u, list(groups[g])
        if tune is not None:
            masks[f"tuned:{g}"] = tune_union(wb, groups[g], vector, u, tune)[0]
            on[f"tuned:{g}"] = list(groups[g])
    return masks, on


def rel_correct(wb: "Workbench", tasks: Sequence[str], vector: Mapping[str, torch.Tensor],
                regions: Mapping[str, Mask], on: Mapping[str, Sequence[str]], limit: int | None = None
                ) -> dict[str, dict[str, np.ndarray]]:
    """Per-example 0/1 correctness behind P1 Eq. 5 on each task's Eq. 5 examples (the label-balanced subset of
    :func:`repro.data.fixed_subset`, as :func:`repro.p1.multitask.transfer_rows` scores them): ``pre``
    (θ_pre, P_0), ``MT`` (the MT model, P_1) and every region θ_pre + γ ⊙ τ_MT (P_γ) on the tasks ``on[name]``.
    Returns ``{task: {model: array}}``; the Rel values computed from it equal the driver's."""
    out: dict[str, dict[str, np.ndarray]] = {}
    examples = {t: fixed_subset(wb.task(t).split("test"), limit) for t in tasks}

    def score(name: str, overrides: Overrides, on_tasks: Sequence[str]) -> None:
        for t in on_tasks:
            pred = wb.predict(t, "test", overrides, examples=examples[t])
            out.setdefault(t, {})[name] = per_example(pred)["correct"]

    score("pre", None, tasks)
    score("MT", wb.overrides(vector), tasks)
    for name, mask in regions.items():
        score(name, wb.overrides(vector, 1.0, mask), on[name])
    return out


__all__ = ["fig8_regions", "paired_correct", "rel_correct"]
