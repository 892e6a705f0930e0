"""The jobs of the chapter ``p2_appendix`` (P2 App. A.5-A.6: Figs. 8-9, grafted sparse vectors, mask overlaps),
declared from its plan.

:func:`jobs` reads :func:`repro.p2.appendix.plan.appendix_plan` as ``notebooks/p2_appendix.md`` does: the zoo of the
first seed (Fig. 9), TaLoS calibrated and fine-tuned at every sparsity of the Fig. 8 sweep (the zoo's path,
:func:`repro.p2.zoo.talos_jobs`: k = 0 is the zoo's FT, k = ``talos.sparsity`` the zoo's TaLoS), and
P1 grafts of the zoo's FT vectors (:meth:`repro.workbench.Workbench.graft`, role ``graft``).  The arithmetic
summaries, the LoTA and FISH overlap masks are computed in-process (not cached), so they are not jobs.  The zoo's
jobs carry the zoo's roles (:func:`repro.p2.zoo.zoo_role`), how :func:`repro.p2.zoo.zoo_vectors` finds them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from repro.jobs import JobSpec, graft_job
from repro.p2.appendix.plan import appendix_plan
from repro.p2.zoo import data_how, method_jobs, talos_jobs, zoo_jobs, zoo_tasks
from repro.profiles import Profile

NOTEBOOK = "p2_appendix"


def jobs(profile: Profile, seed: int = 13, model_family: str = "", **overrides: Any) -> list[JobSpec]:
    """Every cached artifact of ``p2_appendix`` on ``profile`` for ``model_family`` ("" = the profile's)."""
    prof = profile.for_p2(model_family, NOTEBOOK)
    plan = appendix_plan(prof, **overrides)
    tasks = zoo_tasks(prof)
    out = [j for js in zoo_jobs(prof, NOTEBOOK, tasks, seed).values() for j in js]  # Fig. 9
    for k in plan.sparsities:  # Fig. 8
        for t in plan.ablation_tasks:
            out += (method_jobs(prof, NOTEBOOK, t, "ft", seed) if k == 0.0
                    else list(talos_jobs(prof, NOTEBOOK, t, seed, k)))
    for t in plan.ablation_tasks:  # grafted sparse task vectors (beyond the paper)
        ft = method_jobs(prof, NOTEBOOK, t, "ft", seed)[-1]
        out += [ft, replace(graft_job(prof, NOTEBOOK, t, ft, plan.graft_sparsity, seed=seed,
                                      recipe=plan.graft_recipe(prof), how=data_how(prof)), role="graft")]
    out += [talos_jobs(prof, NOTEBOOK, t, seed)[0] for t in plan.ablation_tasks]  # the overlap's TaLoS masks
    return out


__all__ = ["NOTEBOOK", "jobs"]
