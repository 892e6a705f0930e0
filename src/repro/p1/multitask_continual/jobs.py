"""The jobs of the chapter ``p1_multitask_continual`` (P1 §5: Fig. 8, Figs. 11-13, Table 4), declared from its plan.

:func:`jobs` reads :func:`repro.p1.multitask_continual.plan.multitask_plan`, :func:`~repro.p1.multitask_continual.plan.mt_recipe` and
:func:`~repro.p1.multitask_continual.plan.continual_recipe` as ``notebooks/p1_multitask_continual.md`` does: the multi-task
models, the per-task regions (read by :func:`repro.p1.multitask.region_study`), the tuned unions
(:func:`repro.p1.multitask.tune_union`), and the continual stages (:func:`repro.p1.continual.sequential_finetune`),
whose first stage is the single-task FT / graft re-training other chapters also declare.

Each spec carries a :attr:`~repro.jobs.JobSpec.role` (:data:`ROLES`), by which the notebook's
:class:`~repro.jobcall.ChapterJobs` finds it (:mod:`repro.p1.multitask_continual.runs`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from repro.jobs import DataUse, JobSpec, finetune_job, graft_job, make_job, ref
from repro.p1.multitask_continual.plan import continual_recipe, mt_recipe, multitask_plan
from repro.p1.regions import n_classes
from repro.profiles import FinetuneRecipe, Profile

NOTEBOOK = "p1_multitask_continual"
#: the notebook's Table 4 task order (its ``continual_sequence`` parameter)
CONTINUAL_SEQUENCE: tuple[str, ...] = ("QNLI", "AGNews", "SST-2")
#: what each declared artifact is for (its spec's role): the SGD / AdamW multi-task models, the single-task FT
#: models, the per-task regions of an MT model, the tuned unions (Fig. 8d), the single-task regions of Table 4, and
#: the stages of naive continual FT / grafting-continual
ROLES = ("mt", "mt-adamw", "single-ft", "mt-region", "tuned-union", "continual-region", "continual-naive",
         "continual-graft")


def _as(role: str, spec: JobSpec) -> JobSpec:
    """``spec`` with its role (outside the id)."""
    return replace(spec, role=role)


def continual_jobs(profile: Profile, sequence: Sequence[str], recipe: FinetuneRecipe, later: FinetuneRecipe, *,
                   seed: int, regions: dict[str, JobSpec] | None = None) -> list[JobSpec]:
    """:func:`repro.p1.continual.sequential_finetune`: stage 1 is the cached FT (naive) or graft re-training
    (grafting-continual); every later stage is one cached task vector that starts from the previous one.  Role
    "continual-naive" or "continual-graft" (the naive stage 1 is the single-task FT, declared first as
    "single-ft")."""
    role = "continual-naive" if regions is None else "continual-graft"
    first = sequence[0]
    given = {"recipe": recipe, "later_recipe": later}  # as the notebook passes them (the job runner's call)
    recipe = profile.p1_recipe([n_classes(first)], profile.k_shot, recipe)  # as repro.p1.continual resolves it
    prev = _as(role, finetune_job(profile, NOTEBOOK, first, recipe, seed=seed,
                                  trainable="graftable" if regions is None else regions[first]))
    out = [prev]
    for n in range(1, len(sequence)):
        prefix = list(sequence[: n + 1])
        deps = [prev] + ([regions[t] for t in prefix] if regions else [])
        stage = profile.p1_recipe([n_classes(sequence[n])], profile.k_shot, later)  # a step budget resolved
        prev = make_job("continual", "repro.p1.continual.sequential_finetune", profile, NOTEBOOK, deps=deps,
                        cost=stage.steps * stage.batch_size, role=role,
                        uses=[DataUse(sequence[n], "kshot", profile.k_shot, seed)],
                        sequence=prefix, k=profile.k_shot, seed=seed, recipe=recipe, later_recipe=stage,
                        regions=None if regions is None else {t: ref(regions[t]) for t in prefix},
                        model=profile.model, given=given)
        out.append(prev)
    return out


def jobs(profile: Profile, seed: int = 13, continual_sequence: Sequence[str] = CONTINUAL_SEQUENCE,
         **overrides: Any) -> list[JobSpec]:
    """Every cached artifact of ``p1_multitask_continual`` on ``profile`` (notebook parameters in ``overrides``)."""
    plan = multitask_plan(profile, **overrides)
    profile = plan.profile_for(profile)  # the chapter's workbench runs at the plan's k (the paper: 4096-shot)
    tasks, groups = list(plan.mt_tasks), plan.group_map()
    mt_rec = mt_recipe(profile, plan)
    out: list[JobSpec] = []

    def study(vector: JobSpec, base: float, tune: int | None) -> None:
        """The artifacts :func:`repro.p1.multitask.region_study` reads: the per-task regions of the MT model
        ``vector`` on γ_base = top-``base`` and, when ``tune``, the tuned union of every group."""
        graft = plan.region_graft(profile, base)
        regions = {t: _as("mt-region", graft_job(profile, NOTEBOOK, t, vector, base, seed=seed, recipe=graft,
                                                 n_classes=n_classes(t))) for t in tasks}
        out.extend(regions.values())
        if tune:
            rec = plan.tune_graft(profile)
            for g, members in groups.items():
                n = sum(min(rec.max_examples, profile.k_shot * n_classes(t)) for t in members)
                out.append(make_job(
                    "joint-graft", "repro.p1.multitask.tune_union", profile, NOTEBOOK, role="tuned-union",
                    deps=[vector, *(regions[t] for t in members)], cost=tune * n * (1 + 2 * 1 / 3),
                    uses=[DataUse(t, "kshot", profile.k_shot, seed, select=rec.max_examples, max_dev=rec.max_dev,
                                  joint=True) for t in members],
                    tasks=list(members), k=profile.k_shot, seed=seed, vector=ref(vector),
                    union={t: ref(regions[t]) for t in members}, lr=rec.lr, steps=rec.steps, bs=rec.batch_size,
                    max_examples=rec.max_examples, b=rec.sigmoid_bias, max_dev=rec.max_dev))

    tau_mt = _as("mt", finetune_job(profile, NOTEBOOK, tasks, mt_rec, seed=seed))
    out.append(tau_mt)
    out += [_as("single-ft", finetune_job(profile, NOTEBOOK, t, profile.p1_finetune, seed=seed)) for t in tasks
            if t in continual_sequence]
    study(tau_mt, 0.0, plan.tune_steps)  # Fig. 8
    for base in (1e-5, 1e-4):  # Figs. 11-12
        if base in plan.region_bases:
            study(tau_mt, base, None)
    if plan.adamw_mt:  # Fig. 13
        adamw = replace(profile.p2_finetune, steps=mt_rec.steps, eval_every=mt_rec.eval_every)
        tau_adamw = _as("mt-adamw", finetune_job(profile, NOTEBOOK, tasks, adamw, seed=seed))
        out.append(tau_adamw)
        study(tau_adamw, 0.0, None)
    # Table 4: single-task FT and regions, naive continual FT, grafting-continual
    seq = list(continual_sequence)
    single = {t: _as("single-ft", finetune_job(profile, NOTEBOOK, t, profile.p1_finetune, seed=seed)) for t in seq}
    regions = {t: _as("continual-region", graft_job(profile, NOTEBOOK, t, single[t], plan.continual_base, seed=seed,
                                                    recipe=plan.continual_graft(profile), n_classes=n_classes(t)))
               for t in seq}
    out += [*single.values(), *regions.values()]
    later = {"steps": plan.continual_steps} if plan.continual_steps else {}
    retrain = continual_recipe(profile)
    out += continual_jobs(profile, seq, profile.p1_finetune, replace(profile.p1_finetune, **later), seed=seed)
    out += continual_jobs(profile, seq, retrain, replace(retrain, **later), seed=seed, regions=regions)
    return out


__all__ = ["CONTINUAL_SEQUENCE", "NOTEBOOK", "ROLES", "continual_jobs", "jobs"]
