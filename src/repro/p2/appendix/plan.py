"""What the P2 appendix chapter (``notebooks/p2_appendix.md``) runs for each profile: one typed plan.

:func:`appendix_plan` gives the profile's :class:`AppendixPlan`; a notebook parameter that is not None overrides
its field.  Plans by ``profile.plan``: ``smoke`` (smoke and paper-smoke) and ``cpu`` run three sparsities on the
first two P2 tasks (32 / 200 test examples per task); anything else is the paper's sweep (12 sparsities, every task, the
whole test split, P1's graft steps).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

from repro.p2.zoo import zoo_tasks
from repro.plans import ChapterPlan
from repro.profiles import GraftRecipe, Profile


@dataclass(frozen=True)
class AppendixPlan(ChapterPlan):
    """Sparsities, tasks, evaluation sizes and graft settings of P2 Figs. 8-9 and the beyond-the-paper sections."""

    sparsities: tuple[float, ...] = (0.0, 0.9, 0.99)  #: Fig. 8 TaLoS sparsities k (0: non-linear FT)
    ablation_tasks: tuple[str, ...] = ()       #: Fig. 8 / beyond-the-paper tasks (default: the first two P2 tasks)
    n_test_ablation: int = 32                  #: test examples per task in Figs. 8-9 / beyond (0: all)
    graft_sparsity: float = 0.0                #: P1 graft region size, fraction of the graftable set (default: the profile's largest)
    graft_steps: int = 2                       #: P1 graft optimization steps (P1 uses 100)
    alpha_stride: int = 1                      #: every n-th α of the task-arithmetic protocol's grid

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


def appendix_plan(profile: Profile, **overrides: Any) -> AppendixPlan:
    """The profile's plan for the chapter, with the notebook's non-None parameters applied."""
    tasks = tuple(zoo_tasks(profile))  # the §5.1 zoo's tasks (cpu: 3 of the profile's 6), reused from the store
    base = AppendixPlan(ablation_tasks=tasks[:2], graft_sparsity=float(max(profile.sparsities)))
    if profile.plan == "smoke":
        plan = replace(base, n_test_ablation=32, graft_steps=2, alpha_stride=4)
    elif profile.plan == "cpu":  # the protocol's cpu grid is already every 4th α
        # 200 test examples per task (issue 15: >= 200 per point in figures; it was 64)
        plan = replace(base, n_test_ablation=200, graft_steps=3)
    else:  # paper (and any GPU profile): the paper's sweep
        plan = replace(base, sparsities=(0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99),
                       ablation_tasks=tasks, n_test_ablation=0, graft_steps=profile.graft.steps)
    return plan.with_overrides(**overrides)


__all__ = ["AppendixPlan", "appendix_plan"]
