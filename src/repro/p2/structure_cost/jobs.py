"""The jobs of the chapter ``p2_structure_cost`` (P2 §5.3: Figs. 4-5, Tables 3-4), declared from its plan.

:func:`jobs` reads :func:`repro.p2.structure_cost.plan.structure_cost_plan` as ``notebooks/p2_structure_cost.md``
does: the zoo's FT run and TaLoS mask (:func:`repro.p2.zoo.method_jobs`; the LoTA mask is the FT run's top
|τ|, :func:`repro.p2.efficiency.method_masks`) of ``mask_task`` (Figs. 4-5) and of ``cost_task`` (the masks Table
3 times), and the zoo's TaLoS fine-tune of ``mask_task`` (the page's learning gate), all of the first seed and
shared with the task-arithmetic chapter.  The iteration and calibration timings of Tables 3-4 are measurements in
fresh processes, not cached artifacts, so they are not jobs.
"""

from __future__ import annotations

from typing import Any

from repro.jobs import JobSpec
from repro.p2.structure_cost.plan import structure_cost_plan
from repro.p2.zoo import method_jobs
from repro.profiles import Profile

NOTEBOOK = "p2_structure_cost"


def jobs(profile: Profile, seed: int = 13, model_family: str = "", **overrides: Any) -> list[JobSpec]:
    """Every cached artifact of ``p2_structure_cost`` on ``profile`` for ``model_family`` ("" = the profile's)."""
    prof = profile.for_p2(model_family, NOTEBOOK)
    plan = structure_cost_plan(prof, **overrides)
    out: list[JobSpec] = []
    for task in dict.fromkeys([plan.mask_task, plan.cost_task]):
        out += method_jobs(prof, NOTEBOOK, task, "ft", seed)
        out.append(method_jobs(prof, NOTEBOOK, task, "talos", seed)[0])  # the TaLoS mask
    out += method_jobs(prof, NOTEBOOK, plan.mask_task, "talos", seed)[1:]  # its fine-tune: the learning gate
    return out


__all__ = ["NOTEBOOK", "jobs"]
