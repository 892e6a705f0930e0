"""What the P2 §5.2 chapter (``notebooks/p2_disentanglement.md``) runs for each profile: one typed plan.

:data:`PLANS` holds the :class:`DisentanglementPlan` of each profile plan; :func:`disentanglement_plan` resolves
the profile's and applies the notebook's non-None parameters.  ``smoke`` (smoke and paper-smoke: a 3 × 3 grid on 8
examples), ``cpu`` (a 5 × 5 grid on 24 examples per task, Figs. 3/6 on 200), anything else the paper's setting
(20 × 20 grid on 2,048 test points per task, whole test splits, 8 drift checkpoints over the whole run).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from repro.p2.linear_regime import snapshot_steps
from repro.p2.methods import p2_recipe
from repro.p2.zoo import zoo_tasks
from repro.plans import ChapterPlan, FromProfile, plan_for, ranged
from repro.profiles import Profile


@dataclass(frozen=True)
class DisentanglementPlan(ChapterPlan):
    """Grid, evaluation sizes and drift checkpoints of P2 Figs. 2, 3, 6 and 7."""

    pairs: tuple[tuple[str, str], ...] = ()   #: Fig. 2 task pairs (default: the first two disjoint pairs of tasks)
    grid_points: int = ranged(3, 1)           #: Fig. 2 grid points per axis on [-3, 3] (paper: 20)
    n_grid: int = ranged(8, 0)                #: Fig. 2 test examples per task (paper: 2048)
    n_eval: int = ranged(16, 0)               #: Figs. 3 and 6 test examples per task (0: the whole test split)
    drift_task: str = ""                      #: Fig. 7 task (default: the profile's first P2 task)
    drift_steps: tuple[int, ...] = ranged((1, 2, 5), 0)  #: Fig. 7 checkpoints (optimizer steps)
    drift_examples: int = ranged(4, 0)        #: Fig. 7 examples (paper: 2048; we use 256)

    def _checked(self, clean: dict[str, Any]) -> dict[str, Any]:
        """Empty values keep the plan's; pairs must name two tasks; drift steps are integers."""
        clean = {k: v for k, v in clean.items() if v != "" and v != ()}
        if "pairs" in clean:
            clean["pairs"] = tuple(tuple(p) for p in clean["pairs"])
            bad = [p for p in clean["pairs"] if len(p) != 2]
            if bad:
                raise ValueError(f"each Fig. 2 pair names two tasks, got {bad}; e.g. [['SST-2', 'AGNews']]")
        if "drift_steps" in clean:
            clean["drift_steps"] = tuple(int(s) for s in clean["drift_steps"])
        return clean

    @property
    def grid(self) -> list[float]:
        """The Fig. 2 α values: ``grid_points`` equispaced on [-3, 3]."""
        return [round(float(a), 4) for a in np.linspace(-3, 3, self.grid_points)]


def default_pairs(tasks: list[str]) -> tuple[tuple[str, str], ...]:
    """Two Fig. 2 pairs: tasks 1+2 and 3+4 (or 2+3 when there are fewer than four tasks)."""
    if len(tasks) < 3:
        raise ValueError(f"Fig. 2 needs at least 3 P2 tasks for its default pairs, got {tasks}; pass pairs")
    picked = [tasks[0:2], tasks[2:4]] if len(tasks) >= 4 else [tasks[0:2], tasks[1:3]]
    return tuple((a, b) for a, b in picked)


#: the §5.1 zoo's tasks (cpu: 3 of the profile's 6, reused from the store): Fig. 2's pairs, Fig. 7's first task
PAIRS = FromProfile("pairs of the zoo tasks", lambda p: default_pairs(zoo_tasks(p)))
FIRST = FromProfile("first zoo task", lambda p: zoo_tasks(p)[0])

#: The chapter's plan per profile plan name (``repro.plans``: any other name takes "paper").
PLANS: dict[str, DisentanglementPlan] = {
    "smoke": DisentanglementPlan(pairs=PAIRS, drift_task=FIRST),
    # Figs. 3/6 on 200 test examples per task (issue 15: >= 200 per point; it was 48).  Fig. 2 stays at 24 per
    # task on a 5 × 5 grid: 200 would add ~640 s of one core to the cpu build (88.9 of its 90 minutes, no margin)
    "cpu": DisentanglementPlan(pairs=PAIRS, drift_task=FIRST, grid_points=5, n_grid=24, n_eval=200,
                               drift_steps=(1, 3, 10, 30), drift_examples=12),
    # the paper's setting (and any GPU profile's): 8 drift checkpoints over the whole run
    "paper": DisentanglementPlan(pairs=PAIRS, drift_task=FIRST, grid_points=20, n_grid=2048, n_eval=0,
                                 drift_steps=FromProfile("8 snapshots of the P2 run",
                                                         lambda p: tuple(snapshot_steps(p2_recipe(p).steps, 8))),
                                 drift_examples=256),
}


def disentanglement_plan(profile: Profile, **overrides: Any) -> DisentanglementPlan:
    """The profile's plan for the chapter (:data:`PLANS`, resolved), with the notebook's non-None parameters
    applied."""
    return plan_for(PLANS, profile).with_overrides(**overrides)


__all__ = ["DisentanglementPlan", "PLANS", "default_pairs", "disentanglement_plan"]
