"""What the P2 §5.1 chapter (``notebooks/p2_task_arithmetic.md``) runs for each profile: one typed plan.

:data:`PLANS` holds the :class:`ArithmeticPlan` of each profile plan; :func:`arithmetic_plan` resolves the
profile's and applies the notebook's non-None parameters.  Tables 1 and 2 are run once per seed and reported as the mean (and std) over seeds, as the
paper averages its runs; Table 5 runs on the first seed.

- ``smoke`` (smoke and paper-smoke): the profile's tasks, 1 seed.
- ``cpu``: the zoo's tasks (:func:`repro.p2.zoo.zoo_tasks`) and 3 seeds.  The cpu book runs this chapter on the
  profile's **vision family** (issue 26: EfficientNet-Lite0 on MNIST-5k, digits and textures, real images, faces
  as the control), whose models stand beside the paper's ViT-B/32 column.  This is the issue's breadth cut: the
  text family's Tables 1-2 (MiniLM on SST-2, TREC, QNLI, which stood beside T5-Small) are no longer in the cpu
  book, to keep it within 90 minutes; ``-p model_family text`` still runs them (the zoo's 3 text tasks).
- anything else (``paper``): the profile's tasks, 3 seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from repro.p2.zoo import CPU_TASKS, zoo_tasks
from repro.plans import ChapterPlan, plan_for, ranged
from repro.profiles import Profile


@dataclass(frozen=True)
class ArithmeticPlan(ChapterPlan):
    """Tasks and seeds of P2 Tables 1, 2 (mean over seeds) and 5 (first seed)."""

    tasks: tuple[str, ...] | None = None  #: addition / negation target tasks (None: the profile's p2_tasks)
    n_seeds: int = ranged(1, 1)           #: seeds per Table 1 / Table 2 cell (fine-tuning and data seed)

    def task_list(self, profile: Profile) -> list[str]:
        """The tasks this plan runs for ``profile`` (its own, else the zoo's: :func:`repro.p2.zoo.zoo_tasks`)."""
        return zoo_tasks(profile) if self.tasks is None else list(self.tasks)


#: The chapter's plan per profile plan name (``repro.plans``: any other name takes "paper").
PLANS: dict[str, ArithmeticPlan] = {
    "smoke": ArithmeticPlan(n_seeds=1),
    # 3 seeds (issue 15: 3 seeds for the headline P2 Tables 1-2).  In the cpu build of 2026-11-24 (1 thread,
    # the other core busy with P1) one seed took 1,055 s: 429 s to train the P2 zoo (5 methods x 3 tasks) and
    # 626 s for the Table 1/2 protocol (10 methods, 500 test examples per task); the two extra seeds add about
    # 35 min of one core to the book.  The Table 1/2 CIs are paired bootstraps over seeds and the 1,500 shared
    # test examples
    "cpu": ArithmeticPlan(n_seeds=3),
    # the paper (and any GPU profile): the profile's tasks, 3 seeds as the paper averages
    "paper": ArithmeticPlan(n_seeds=3),
}


def arithmetic_plan(profile: Profile, **overrides: Any) -> ArithmeticPlan:
    """The profile's plan for the chapter (:data:`PLANS`), with the notebook's non-None parameters applied."""
    return plan_for(PLANS, profile).with_overrides(**overrides)


__all__ = ["ArithmeticPlan", "PLANS", "CPU_TASKS", "arithmetic_plan"]
