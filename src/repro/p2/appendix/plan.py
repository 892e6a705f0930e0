"""What the P2 appendix chapter (``notebooks/p2_appendix.md``) runs for each profile: one typed plan.

:data:`PLANS` holds the :class:`AppendixPlan` of each profile plan; :func:`appendix_plan` resolves the profile's
and applies the notebook's non-None parameters.  ``smoke`` (smoke and paper-smoke) and ``cpu`` run three sparsities
on the first two P2 tasks (32 / 200 test examples per task); anything else is the paper's sweep (12 sparsities, every task, the
whole test split, P1's graft steps).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from repro.p2.zoo import zoo_tasks
from repro.plans import ChapterPlan, FromProfile, plan_for, ranged
from repro.profiles import GraftRecipe, Profile


@dataclass(frozen=True)
class AppendixPlan(ChapterPlan):
    """Sparsities, tasks, evaluation sizes and graft settings of P2 Figs. 8-9 and the beyond-the-paper sections."""

    #: Fig. 8 TaLoS sparsities k (0: non-linear FT)
    sparsities: tuple[float, ...] = ranged((0.0, 0.9, 0.99), 0.0, 1.0, high_open=True)
    ablation_tasks: tuple[str, ...] = ()       #: Fig. 8 / beyond-the-paper tasks (default: the first two P2 tasks)
    n_test_ablation: int = ranged(32, 0)       #: test examples per task in Figs. 8-9 / beyond (0: all)
    #: P1 graft region size, fraction of the graftable set (default: the profile's largest)
    graft_sparsity: float = ranged(1e-2, 0.0, 1.0, low_open=True)
    graft_steps: int = ranged(2, 0)            #: P1 graft optimization steps (P1 uses 100; 0: the profile's)
    alpha_stride: int = ranged(1, 1)           #: every n-th α of the task-arithmetic protocol's grid

    def graft_recipe(self, profile: Profile) -> GraftRecipe:
        """The P1 graft recipe of the grafted sparse task vectors: the profile's with ``graft_steps``."""
        return profile.graft.updated(steps=self.graft_steps)

    def _checked(self, clean: dict[str, Any]) -> dict[str, Any]:
        """Empty values keep the plan's; TaLoS sparsities must lie in [0, 1)."""
        clean = {k: v for k, v in clean.items() if v != "" and v != ()}
        if "sparsities" in clean:
            clean["sparsities"] = tuple(float(k) for k in clean["sparsities"])
            bad = [k for k in clean["sparsities"] if not 0.0 <= k < 1.0]
            if bad:
                raise ValueError(f"TaLoS sparsities must lie in [0, 1), got {bad}")
        return clean

    def alphas(self, protocol_alphas: Sequence[float]) -> list[float]:
        """The α grid of Fig. 8 / beyond: every ``alpha_stride``-th α of the protocol's grid."""
        return list(protocol_alphas)[:: self.alpha_stride]


#: the §5.1 zoo's tasks (cpu: 3 of the profile's 6), reused from the store; the first two of them
ZOO_TASKS = FromProfile("zoo tasks", lambda p: tuple(zoo_tasks(p)))
FIRST_TWO = FromProfile("first two zoo tasks", lambda p: tuple(zoo_tasks(p))[:2])
LARGEST = FromProfile("largest of sparsities", lambda p: float(max(p.sparsities)))

#: The chapter's plan per profile plan name (``repro.plans``: any other name takes "paper").
PLANS: dict[str, AppendixPlan] = {
    "smoke": AppendixPlan(ablation_tasks=FIRST_TWO, graft_sparsity=LARGEST, n_test_ablation=32, graft_steps=2,
                          alpha_stride=4),
    # the protocol's cpu grid is already every 4th α; 200 test examples per task (issue 15: >= 200 per point in
    # figures; it was 64)
    "cpu": AppendixPlan(ablation_tasks=FIRST_TWO, graft_sparsity=LARGEST, n_test_ablation=200, graft_steps=3),
    # the paper's sweep (and any GPU profile's)
    "paper": AppendixPlan(sparsities=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99),
                          ablation_tasks=ZOO_TASKS, graft_sparsity=LARGEST, n_test_ablation=0,
                          graft_steps=FromProfile("graft.steps", lambda p: p.graft.steps)),
}


def appendix_plan(profile: Profile, **overrides: Any) -> AppendixPlan:
    """The profile's plan for the chapter (:data:`PLANS`, resolved), with the notebook's non-None parameters
    applied."""
    return plan_for(PLANS, profile).with_overrides(**overrides)


__all__ = ["AppendixPlan", "PLANS", "appendix_plan"]
