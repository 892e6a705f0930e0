"""The plan of P2 §5.3 (Figs. 4-5, Tables 3-4): how many iterations are timed, and where.

:data:`PLANS` holds the plan of each profile plan ("smoke" for smoke and paper-smoke, "cpu", "paper" = the paper's
setting, for any other plan too); :func:`structure_cost_plan` resolves the profile's and applies the notebook's
non-None parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from repro.plans import ChapterPlan, FromProfile, plan_for, ranged

#: The paper's fine-tuning budget (ViT, P2 App. A.1: 2,000 steps): Table 4's calibration share is judged at it.
PAPER_FT_STEPS = 2000


@dataclass(frozen=True)
class StructureCostPlan(ChapterPlan):
    """What the §5.3 notebook times.

    ``iterations`` timed training iterations per method after ``warmup`` untimed ones; ``isolate`` times each
    method in a fresh process (its own peak memory); ``mask_task`` / ``cost_task`` are the tasks whose masks
    (Figs. 4-5) and batches (Tables 3-4) are used (None: the profile's first P2 task); ``paper_steps`` is the
    fine-tuning budget at which Table 4's calibration share is compared with the paper's."""

    iterations: int = ranged(2, 1)
    warmup: int = ranged(1, 0)
    isolate: bool = False
    mask_task: Optional[str] = None
    cost_task: Optional[str] = None
    paper_steps: int = ranged(PAPER_FT_STEPS, 1)


_FIRST = FromProfile("first P2 task", lambda p: p.p2_tasks[0])
#: The chapter's plan per profile plan name (``repro.plans``: any other name takes "paper").  smoke measures
#: in-process: six fresh Python processes would cost ~40 s of imports for meaningless numbers
PLANS: dict[str, StructureCostPlan] = {
    "smoke": StructureCostPlan(iterations=2, warmup=1, isolate=False, mask_task=_FIRST, cost_task=_FIRST),
    "cpu": StructureCostPlan(iterations=8, warmup=2, isolate=True, mask_task=_FIRST, cost_task=_FIRST),
    "paper": StructureCostPlan(iterations=50, warmup=5, isolate=True, mask_task=_FIRST, cost_task=_FIRST),
}


def structure_cost_plan(profile: Any, **overrides: Any) -> StructureCostPlan:
    """The plan of ``profile`` (by ``profile.plan``), with the non-None ``overrides`` applied; tasks default to
    the profile's first P2 task."""
    unknown = sorted(set(overrides) - set(StructureCostPlan.__dataclass_fields__))
    if unknown:
        raise TypeError(f"unknown StructureCostPlan fields {unknown}; known: "
                        f"{sorted(StructureCostPlan.__dataclass_fields__)}")
    return plan_for(PLANS, profile).with_overrides(**{k: v for k, v in overrides.items() if v != ""})


__all__ = ["PAPER_FT_STEPS", "PLANS", "StructureCostPlan", "structure_cost_plan"]
