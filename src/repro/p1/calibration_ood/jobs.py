"""The jobs of the chapter ``p1_calibration_ood`` (P1 §4: Table 2 ECE, Table 3, Fig. 7, Tables 6-7, App. D),
declared from its plan.

:func:`jobs` reads :func:`repro.p1.calibration_ood.plan.calibration_plan` and
:func:`~repro.p1.calibration_ood.plan.calibration_recipes` as ``notebooks/p1_calibration_ood.md`` does and lists the
artifacts :class:`repro.p1.calibration_ood.runs.ChapterModels` and :func:`repro.p1.calibration.ece_table` obtain:
FT models and grafts (mostly the localization chapter's Table 2 artifacts, the same ids), re-trained regions,
BitFit, LoRA and bottleneck adapters.  WiSE curves, OOD scores and the train-test gaps are evaluations, not jobs.
"""

from __future__ import annotations

from typing import Any

from repro.jobs import DataUse, JobSpec, finetune_job, graft_job, make_job
from repro.p1.calibration_ood.plan import calibration_plan, calibration_recipes
from repro.p1.regions import ft_and_graft_jobs, n_classes
from repro.profiles import Profile

NOTEBOOK = "p1_calibration_ood"


def jobs(profile: Profile, seed: int = 13, **overrides: Any) -> list[JobSpec]:
    """Every cached artifact of ``p1_calibration_ood`` on ``profile`` (the notebook's parameters in ``overrides``)."""
    plan = calibration_plan(profile, **overrides)
    rec = calibration_recipes(profile, plan)
    k = plan.shots(profile)  # every model's k-shot (paper: 4096)
    out: list[JobSpec] = []
    # Table 2 (ECE columns): the localization chapter's Table 2 pairs at k (its k_shot or k_shot_large column)
    for task in plan.ece_tasks:
        for s in plan.seeds(profile, seed):
            out += ft_and_graft_jobs(profile, NOTEBOOK, task, k=k, seed=s, base=plan.base)
    models: dict[str, tuple[JobSpec, JobSpec]] = {}

    def chapter_models(task: str) -> tuple[JobSpec, JobSpec]:
        """ChapterModels.ft / .graft of ``task`` (the workbench seed), then its re-trained region and BitFit."""
        if task not in models:
            ft, graft = ft_and_graft_jobs(profile, NOTEBOOK, task, k=k, seed=seed, base=plan.base)
            out.extend([ft, graft, finetune_job(profile, NOTEBOOK, task, rec.retrain, k=k, seed=seed, trainable=graft),
                        finetune_job(profile, NOTEBOOK, task, rec.bitfit, k=k, seed=seed, trainable="bias")])
            models[task] = (ft, graft)
        return models[task]

    def sweep_grafts(task: str, ft: JobSpec) -> None:
        for b in plan.sweep_bases:
            graft = None if b == plan.base else plan.sweep_graft(profile)
            out.append(graft_job(profile, NOTEBOOK, task, ft, b, k=k, seed=seed, recipe=graft,
                                 n_classes=n_classes(task)))

    # Table 3 / Fig. 7: FT, graft, re-trained graft, BitFit per source, and the sweep's other graft sizes
    for task in plan.ood_sources:
        ft, _ = chapter_models(task)
        if task in plan.sweep_sources:
            sweep_grafts(task, ft)
    # Fig. 7e-f (WiSE) and Tables 6-7: the grafts of every size, LoRA and adapters per sweep source (role: the plan's
    # PEFT spec, e.g. "lora:1")
    for task in plan.sweep_sources:
        ft, graft = ft_and_graft_jobs(profile, NOTEBOOK, task, k=k, seed=seed, base=plan.base)
        out += [ft, graft]
        sweep_grafts(task, ft)
        for spec in plan.peft:
            kind, size = spec.split(":")[0], int(spec.split(":")[1])
            uses = [DataUse(task, "kshot", k, seed)]
            peft = profile.p1_recipe([n_classes(task)], k, rec.peft)  # a step budget resolved, as
            cost = peft.steps * peft.batch_size                                   # peft_baselines resolves it
            if kind == "lora":
                out.append(make_job("adapter", "repro.p1.peft_baselines.lora_run", profile, NOTEBOOK, cost=cost,
                                    uses=uses, role=spec, task=task, rank=size, alpha=float(2 * size), recipe=peft,
                                    seed=seed, k=k, model=profile.model))
            else:
                out.append(make_job("adapter", "repro.p1.peft_baselines.adapter_run", profile, NOTEBOOK, cost=cost,
                                    uses=uses, role=spec, task=task, kind=kind, size=size, recipe=peft, seed=seed,
                                    k=k, model=profile.model))
    # App. D: train-test gaps of FT, graft, re-trained graft and BitFit
    for task in plan.gap_tasks:
        chapter_models(task)
    return out


__all__ = ["NOTEBOOK", "jobs"]
