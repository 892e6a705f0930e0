"""Drivers of the P1 appendix chapter that need more than one region builder: Table 5's region growth with the
data size and Table 8's learned-vs-FISH comparison at equal actual parameter counts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import torch

from repro.p1.regions import (evaluate_overrides, fish_regions, graftable_total, learned_region, random_region,
                              size_fields)

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench


def region_growth(wb: "Workbench", task: str, base: float, ks: Sequence[int], *, steps: int | None = None,
                  seed: int | None = None) -> dict[int, int]:
    """P1 Table 5 size: actual learned-region size (entries) on γ_base = top-``base`` at each k-shot data size."""
    out = {}
    for k in ks:
        tau = wb.finetune(task, k=k, seed=seed)
        out[int(k)] = learned_region(wb, task, tau, base, steps=steps, k=k, seed=seed)[0].count()
    return out


def _correct(pred: Any) -> Any:
    return (pred.preds == pred.labels).to(torch.uint8).cpu().numpy()


def fish_vs_learned(wb: "Workbench", task: str, densities: Sequence[float], *, k: int | None = None,
                    steps: int | None = None, seed: int | None = None) -> tuple[list[dict], dict]:
    """P1 Table 8 at equal size: for each target density, the learned graft region, the FISH mask with the learned
    region's *actual* entry count, and a random region of that count, scored on the same test examples.

    Returns ``(runs, correct)``: table rows (IoU rows and one score row per method, with ``count``) and
    ``correct[density][method]`` = per-example 0/1 correctness (for paired bootstraps)."""
    total = graftable_total(wb)
    tau = wb.finetune(task, k=k, seed=seed)
    learned = {d: learned_region(wb, task, tau, d, steps=steps, k=k, seed=seed)[0] for d in densities}
    # the FISH density that selects exactly the learned count (Mask.top_fraction takes int(fraction · total))
    matched = {d: (m.count() + 0.5) / total for d, m in learned.items()}
    fish = fish_regions(wb, task, sorted(set(matched.values())), k=k, seed=seed)
    runs: list[dict] = []
    correct: dict[float, dict[str, Any]] = {}
    metric = wb.model.specs[task].metric
    for d, mask in learned.items():
        fm = fish[matched[d]]
        rnd = random_region(wb, mask.count(), seed=wb.seed if seed is None else seed)
        runs.append({"task": task, "method": "Graft vs FISH mask", "target": d, "overlap": mask.iou(fm),
                     "count": mask.count(), "fish_count": fm.count()})
        correct[d] = {}
        for method, m in (("Graft", mask), ("Graft with FISH mask", fm), ("Random Graft", rnd)):
            scores, pred = evaluate_overrides(wb, task, wb.overrides(tau, mask=m))
            runs.append({"task": task, "method": method, "target": d, metric: scores["value"], "ece": scores["ece"],
                         **size_fields(m, total)})
            correct[d][method] = _correct(pred)
    return runs, correct


__all__ = ["fish_vs_learned", "region_growth"]
