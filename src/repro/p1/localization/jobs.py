"""The jobs of the chapter ``p1_localization`` (P1 §2-3: Table 2, Table 1, Figs. 2-5), declared from its plan.

:func:`jobs` reads :func:`repro.p1.localization.plan.localization_plan` and
:func:`~repro.p1.localization.plan.variant_recipes` exactly as ``notebooks/p1_localization.md`` does and lists every
cached artifact the notebook computes (fine-tunes, grafts, re-trained regions), as :class:`repro.jobs.JobSpec`.
Regions that are not cached (top-movement, random, movement-matched, lottery tickets) and the evaluations are not
jobs.  :func:`repro.p1.regions.ft_and_graft_jobs` is the Table 2 pair every P1 chapter shares.

A re-training job of a learned region is declared whatever the region's size; when the region came out empty (tiny
smoke models) its driver returns :data:`repro.jobs.SKIPPED` and :func:`repro.p1.regions.retrained_region` scores
the pre-trained model: the notebook obtains every declared job, nothing more.
"""

from __future__ import annotations

from typing import Any, Sequence

from repro.jobs import JobSpec, finetune_job, graft_job
from repro.p1.localization.plan import localization_plan, variant_recipes
from repro.p1.regions import ft_and_graft_jobs, n_classes
from repro.profiles import GraftRecipe, Profile

NOTEBOOK = "p1_localization"

#: (hidden width, FFN width) of the BERT-like blocks of each P1 model: the graftable set and its biases follow
#: from them (4h² + 2hf + 9h + f and 7h + f per layer; roberta-base gives the 85,054,464 graftable parameters)
BLOCK_DIMS: dict[str, tuple[int, int]] = {"tiny-bert": (32, 64), "minilm": (384, 1536), "roberta-base": (768, 3072),
                                          "random-roberta-base": (768, 3072)}


def bias_share(model: str) -> float | None:
    """|biases| / |graftable| of a P1 model's blocks (None: a model whose block widths are not listed)."""
    if model not in BLOCK_DIMS:
        return None
    h, f = BLOCK_DIMS[model]
    return (7 * h + f) / (4 * h * h + 2 * h * f + 9 * h + f)


#: the roles of the chapter's models (:func:`jobs`): the fine-tuned model of each sweep of Figs. 2-5, by its label
MODEL_ROLES: dict[str, str] = {"SGD": "fig2-sgd", "standard FT (linear head)": "fig3-linear", "AdamW": "fig5-adamw",
                               "AdamW + l1": "fig5-adamw-l1"}


def curve_jobs(profile: Profile, notebook: str, task: str, vector: JobSpec, sparsities: Sequence[float], *,
               base: float, k: int, seed: int, sweep: GraftRecipe, scope: str = "graftable",
               role: str = "") -> list[JobSpec]:
    """The learned regions of one model's sweep (:func:`repro.p1.localization.runs.curve_grafts` finds them): γ_base's
    point with the profile's graft recipe (graftable scope only), the other sparsities with the ``sweep`` recipe."""
    out = []
    if scope == "graftable":
        out.append(graft_job(profile, notebook, task, vector, base, k=k, seed=seed, n_classes=n_classes(task),
                             role=role))
    for s in sparsities:
        if s != base:
            out.append(graft_job(profile, notebook, task, vector, s, k=k, seed=seed, recipe=sweep, scope=scope,
                                 n_classes=n_classes(task), role=role))
    return out


def jobs(profile: Profile, seed: int = 13, **overrides: Any) -> list[JobSpec]:
    """Every cached artifact of ``p1_localization`` on ``profile`` (the notebook's parameters in ``overrides``).

    An artifact two sections share keeps the role of its first declaration (:class:`repro.jobcall.ChapterJobs`), so
    the order is chosen for the notebook's queries: the SGD models of Figs. 2-5 first ("fig2-sgd", also Table 2 /
    Table 1 models), then Table 2's grafts ("table2"), the sweeps' grafts, Table 1's re-trainings ("table1-retrain",
    "table1-bitfit"; their grafts are found as the re-training's upstream job) and the models of Figs. 3 and 5."""
    plan = localization_plan(profile, **overrides)
    seeds = plan.seeds(profile, seed)
    base = profile.graft_base_sparsity
    rec = variant_recipes(profile)
    vk = plan.variant_k or profile.k_shot
    sweep = plan.sweep_graft(profile)
    curve = dict(base=base, k=vk, seed=seed, sweep=sweep)
    # Fig. 2 (and the SGD curves Figs. 3-5 reuse): the SGD model of each task
    sgd = {task: finetune_job(profile, NOTEBOOK, task, rec.sgd, k=vk, seed=seed, role=MODEL_ROLES["SGD"])
           for task in dict.fromkeys((*plan.curve_tasks, *plan.variant_tasks))}
    out: list[JobSpec] = list(sgd.values())
    # Table 2: FT and its graft per (task, k, seed)
    for k, tasks in ((profile.k_shot, plan.tasks), (profile.k_shot_large, plan.large_tasks)):
        for task in tasks:
            for s in seeds:
                graft = plan.large_graft(profile) if k == profile.k_shot_large else None
                out += ft_and_graft_jobs(profile, NOTEBOOK, task, k=k, seed=s, base=base, graft=graft, role="table2")
    # Fig. 2: the SGD model's learned regions per sparsity
    for task, ft in sgd.items():
        out += curve_jobs(profile, NOTEBOOK, task, ft, plan.sparsities, **curve, role=MODEL_ROLES["SGD"])
    # Table 1: FT, graft, the graft region re-trained, BitFit per (task, seed)
    for task in plan.variant_tasks:
        for s in seeds:
            ft, graft = ft_and_graft_jobs(profile, NOTEBOOK, task, k=vk, seed=s, base=base, role="table1")
            out += [ft, graft,
                    finetune_job(profile, NOTEBOOK, task, rec.retrain, k=vk, seed=s, trainable=graft,
                                 role="table1-retrain"),
                    finetune_job(profile, NOTEBOOK, task, rec.bitfit, k=vk, seed=s, trainable="bias",
                                 role="table1-bitfit")]
    share = bias_share(profile.model)
    bias_sp = [s for s in plan.sparsities if share is None or s <= share]
    for task in plan.variant_tasks:
        # Fig. 3: the linear-head model and its learned regions
        role = MODEL_ROLES["standard FT (linear head)"]
        lin = finetune_job(profile, NOTEBOOK, task, rec.sgd, k=vk, seed=seed, linear_heads=True, role=role)
        out += [lin, *curve_jobs(profile, NOTEBOOK, task, lin, plan.sparsities, **curve, role=role)]
        # Fig. 4a: bias-only learned regions of the SGD model
        out += curve_jobs(profile, NOTEBOOK, task, sgd[task], bias_sp, **curve, scope="bias", role="fig4a-bias")
        # Fig. 5: AdamW and AdamW + l1 models and their learned regions
        for label, l1 in (("AdamW", 0.0), ("AdamW + l1", rec.l1)):
            role = MODEL_ROLES[label]
            tau = finetune_job(profile, NOTEBOOK, task, rec.adamw, k=vk, seed=seed, l1=l1, role=role)
            out += [tau, *curve_jobs(profile, NOTEBOOK, task, tau, plan.sparsities, **curve, role=role)]
    return out


__all__ = ["BLOCK_DIMS", "MODEL_ROLES", "NOTEBOOK", "bias_share", "curve_jobs", "jobs"]
