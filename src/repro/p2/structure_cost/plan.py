"""The plan of P2 §5.3 (Figs. 4-5, Tables 3-4): how many iterations are timed, and where.

:func:`structure_cost_plan` picks the defaults by ``profile.plan`` ("smoke" for smoke and paper-smoke, "cpu", or
anything else = the paper's setting); a notebook parameter that is not None overrides a default.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

#: The paper's fine-tuning budget (ViT, P2 App. A.1: 2,000 steps): Table 4's calibration share is judged at it.
PAPER_FT_STEPS = 2000


@dataclass(frozen=True)
class StructureCostPlan:
    """What the §5.3 notebook times.

    ``iterations`` timed training iterations per method after ``warmup`` untimed ones; ``isolate`` times each
    method in a fresh process (its own peak memory); ``mask_task`` / ``cost_task`` are the tasks whose masks
    (Figs. 4-5) and batches (Tables 3-4) are used (None: the profile's first P2 task); ``paper_steps`` is the
    fine-tuning budget at which Table 4's calibration share is compared with the paper's."""

    iterations: int
    warmup: int
    isolate: bool
    mask_task: Optional[str] = None
    cost_task: Optional[str] = None
    paper_steps: int = PAPER_FT_STEPS


# smoke measures in-process: six fresh Python processes would cost ~40 s of imports for meaningless numbers
PLANS: dict[str, StructureCostPlan] = {
    "smoke": StructureCostPlan(iterations=2, warmup=1, isolate=False),
    "cpu": StructureCostPlan(iterations=8, warmup=2, isolate=True),
    "paper": StructureCostPlan(iterations=50, warmup=5, isolate=True),
}


def structure_cost_plan(profile: Any, **overrides: Any) -> StructureCostPlan:
    """The plan of ``profile`` (by ``profile.plan``), with the non-None ``overrides`` applied; tasks default to
    the profile's first P2 task."""
    plan = PLANS.get(profile.plan, PLANS["paper"])
    unknown = sorted(set(overrides) - set(StructureCostPlan.__dataclass_fields__))
    if unknown:
        raise TypeError(f"unknown StructureCostPlan fields {unknown}; known: "
                        f"{sorted(StructureCostPlan.__dataclass_fields__)}")
    plan = replace(plan, **{k: v for k, v in overrides.items() if v is not None})
    first = profile.p2_tasks[0]
    return replace(plan, mask_task=plan.mask_task or first, cost_task=plan.cost_task or first)


__all__ = ["PAPER_FT_STEPS", "PLANS", "StructureCostPlan", "structure_cost_plan"]
