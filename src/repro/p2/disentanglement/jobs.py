"""The jobs of the chapter ``p2_disentanglement`` (P2 §5.2, App. A.4: Figs. 2, 3, 6, 7), declared from its plan.

:func:`jobs` reads :func:`repro.p2.disentanglement.plan.disentanglement_plan` as ``notebooks/p2_disentanglement.md``
does: the zoo of the first seed (the task-arithmetic chapter's artifacts, the same ids) and one cached gradient-drift
measurement (:func:`repro.p2.linear_regime.drift_curve`) per non-linearized method.  The disentanglement grids,
the localization and linear-regime scores are evaluations, not jobs.  The zoo's jobs carry the zoo's roles
(:func:`repro.p2.zoo.zoo_role`), how :func:`repro.p2.zoo.zoo_vectors` finds them.
"""

from __future__ import annotations

from typing import Any

from repro.jobs import EVAL_PASS, DataUse, JobSpec, make_job
from repro.p2.disentanglement.plan import disentanglement_plan
from repro.p2.linear_regime import LINEAR_BY_CONSTRUCTION, drift_scope
from repro.p2.methods import p2_recipe
from repro.p2.zoo import data_how, zoo_jobs, zoo_tasks
from repro.profiles import Profile

NOTEBOOK = "p2_disentanglement"
def jobs(profile: Profile, seed: int = 13, model_family: str = "", **overrides: Any) -> list[JobSpec]:
    """Every cached artifact of ``p2_disentanglement`` on ``profile`` for ``model_family`` ("" = the profile's)."""
    prof = profile.for_p2(model_family, NOTEBOOK)
    plan = disentanglement_plan(prof, **overrides)
    tasks = zoo_tasks(prof)
    zoo = zoo_jobs(prof, NOTEBOOK, tasks, seed)
    out = [j for js in zoo.values() for j in js]
    task, steps = plan.drift_task, sorted({int(s) for s in plan.drift_steps})
    if task not in tasks:  # a drift task outside the zoo: the runs its drift jobs read are declared too
        zoo.update(zoo_jobs(prof, NOTEBOOK, [task], seed, methods=("ft", "talos")))
        out += [zoo[("ft", task)][-1], zoo[("talos", task)][0]]
    for key in ("ft", "linearized", "lota", "talos"):
        if key in LINEAR_BY_CONSTRUCTION:
            continue
        recipe = p2_recipe(prof, key)
        trainable = {"ft": [], "lota": [zoo[("ft", task)][-1]], "talos": zoo[("talos", task)][:1]}[key]
        out.append(make_job("drift", "repro.p2.linear_regime.drift_curve", prof, NOTEBOOK, deps=trainable,
                            role="fig7",
                            cost=max(steps) * recipe.batch_size + EVAL_PASS * 3 * len(steps) * plan.drift_examples,
                            uses=[DataUse(task, data_how(prof), prof.k_shot, seed,
                                          need=(("test", plan.drift_examples),))],
                            task=task, method=key, steps=steps, seed=seed, recipe=recipe,
                            examples=plan.drift_examples, model=prof.model, max_length=prof.max_length,
                            **drift_scope(prof, key)))
    return out


__all__ = ["NOTEBOOK", "jobs"]
