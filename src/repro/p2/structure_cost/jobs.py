"""The jobs of the chapter ``p2_structure_cost`` (P2 §5.3: Figs. 4-5, Tables 3-4), declared from its plan.

:func:`jobs` reads :func:`repro.p2.structure_cost.plan.structure_cost_plan` as ``notebooks/p2_structure_cost.md``
does: the LoTA and TaLoS masks of ``mask_task`` (:func:`repro.p2.efficiency.method_masks`: the zoo's FT run and
TaLoS mask of the first seed, shared with the task-arithmetic chapter).  The iteration and calibration timings of
Tables 3-4 are measurements in fresh processes, not cached artifacts, so they are not jobs.
"""

from __future__ import annotations

from typing import Any

from repro.jobs import JobSpec
from repro.p2.structure_cost.plan import structure_cost_plan
from repro.p2.zoo import method_jobs, talos_jobs
from repro.profiles import Profile

NOTEBOOK = "p2_structure_cost"


def jobs(profile: Profile, seed: int = 13, model_family: str = "", **overrides: Any) -> list[JobSpec]:
    """Every cached artifact of ``p2_structure_cost`` on ``profile`` for ``model_family`` ("" = the profile's)."""
    prof = profile.for_p2(model_family, NOTEBOOK)
    plan = structure_cost_plan(prof, **overrides)
    return [*method_jobs(prof, NOTEBOOK, plan.mask_task, "ft", seed),
            talos_jobs(prof, NOTEBOOK, plan.mask_task, seed)[0]]


__all__ = ["NOTEBOOK", "jobs"]
