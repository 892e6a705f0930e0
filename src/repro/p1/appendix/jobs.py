"""The jobs of the chapter ``p1_appendix`` (P1 Tables 5, 8, 9, Figs. 9-10, Fig. 15), declared from its plan.

:func:`jobs` reads :func:`repro.p1.appendix.plan.appendix_plan` as ``notebooks/p1_appendix.md`` does: Table 5's FT
on ``large_k`` examples per class and its grafts (the longest grafts of P1), the region-growth grafts, Table 8's
learned regions and FISH masks, Table 9's GPT-2 FT and grafts (the paper profile; other profiles run tiny-gpt2 on
a profile of their own name), the Figs. 9-10 regions and the Fig. 15 tracking run.  A FISH job is one empirical
Fisher of a task, stored as one mask per density (sized like the learned regions it depends on).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from repro.jobs import DataUse, JobSpec, finetune_job, graft_job, make_job
from repro.p1.appendix.plan import appendix_plan
from repro.p1.appendix.runs import GPT2_BASE, gpt2_profile
from repro.p1.regions import ft_and_graft_jobs, n_classes
from repro.profiles import Profile

NOTEBOOK = "p1_appendix"


def jobs(profile: Profile, seed: int = 13, **overrides: Any) -> list[JobSpec]:
    """Every cached artifact of ``p1_appendix`` on ``profile`` (the notebook's parameters in ``overrides``)."""
    plan = appendix_plan(profile, **overrides)
    large, sweep = plan.large_graft(profile), plan.sweep_graft(profile)
    base = profile.graft_base_sparsity
    out: list[JobSpec] = []
    # Table 5: FT on large_k per class, one graft per size
    for task in plan.large_tasks:
        for s in plan.large_sparsities:
            out += ft_and_graft_jobs(profile, NOTEBOOK, task, k=plan.large_k, seed=seed, base=s, graft=large)
    # Table 5 size: the smallest size's region at profile.k_shot and at large_k
    s5 = min(plan.large_sparsities)
    for task in plan.large_tasks:
        for k in (profile.k_shot, plan.large_k):
            out += ft_and_graft_jobs(profile, NOTEBOOK, task, k=k, seed=seed, base=s5, graft=large)
    # Table 8: learned regions per density, FISH masks of the learned regions' sizes
    for task in plan.fish_tasks:
        ft = finetune_job(profile, NOTEBOOK, task, profile.p1_finetune, k=plan.fish_k, seed=seed)
        learned = [graft_job(profile, NOTEBOOK, task, ft, d, k=plan.fish_k, seed=seed, recipe=sweep,
                             n_classes=n_classes(task)) for d in plan.fish_densities]
        out += [ft, *learned]
        k = plan.fish_k or profile.k_shot
        out.append(make_job("fish", "repro.p1.regions.fish_regions", profile, NOTEBOOK, deps=learned,
                            cost=k * n_classes(task), uses=[DataUse(task, "kshot", k, seed)],
                            task=task, k=k, seed=seed, densities=list(plan.fish_densities),
                            matched_to=[g.id for g in learned], model=profile.model, max_length=profile.max_length))
    # Table 9: GPT-2 (paper) or its code path (repro.p1.appendix.runs.table9_runs), one job per seed of the plan;
    # role "table9" (the notebook obtains them on a Workbench of the GPT-2 profile)
    gpt2 = gpt2_profile(profile)
    if profile.plan == "paper":
        tasks9, base9 = [t for t in profile.p1_tasks if t != "TREC"], GPT2_BASE
        ks9 = (gpt2.k_shot, gpt2.k_shot_large)
    else:
        tasks9, base9, ks9 = ["SST-2", "QNLI"], 1e-2, (gpt2.k_shot,)
    for s9 in plan.seeds(profile, seed):
        for k in ks9:
            for task in tasks9:
                ft, graft = ft_and_graft_jobs(gpt2, NOTEBOOK, task, k=k, seed=s9, base=base9)
                out += [replace(ft, role="table9"), replace(graft, role="table9")]
    # Figs. 9-10: the Table 2 graft (at placement_k: the paper's 4096-shot column) and the learned regions of
    # placement_sparsities
    pk = plan.placement_k or profile.k_shot
    for task in plan.placement_tasks:
        ft, graft = ft_and_graft_jobs(profile, NOTEBOOK, task, k=pk, seed=seed, base=base)
        out += [ft, graft] + [graft_job(profile, NOTEBOOK, task, ft, s, k=pk, seed=seed, recipe=sweep,
                                        n_classes=n_classes(task)) for s in plan.placement_sparsities]
    # Fig. 15: one cached run (FT snapshots, the checkpoint's regions, their scores along training)
    ft_rec = profile.p1_recipe([n_classes(plan.track_task)])  # the step budget resolved, as the notebook
    steps = sweep.steps
    out.append(make_job("tracking", "repro.p1.trajectory.checkpoint_tracking", profile, NOTEBOOK,
                        cost=ft_rec.steps * ft_rec.batch_size + len(plan.track_sparsities) * steps
                        * profile.graft.max_examples,
                        uses=[DataUse(plan.track_task, "kshot", profile.k_shot, seed)],
                        task=plan.track_task, sparsities=list(plan.track_sparsities),
                        checkpoint=plan.checkpoint(ft_rec.steps), every=plan.track_every, recipe=ft_rec,
                        graft_steps=steps, k=profile.k_shot, seed=seed, n_eval=plan.n_eval,
                        model=profile.model))
    return out


__all__ = ["NOTEBOOK", "jobs"]
