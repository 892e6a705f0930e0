"""The jobs of the chapter ``p2_task_arithmetic`` (P2 §5.1: Tables 1, 2, 5), declared from its plan, and the
P2 zoo's job builders the other P2 chapters share.
(The file is named after the notebook; issue 21 moves it to that chapter's package as ``jobs.py``.)

:func:`jobs` reads :func:`repro.p2.task_arithmetic.plan.arithmetic_plan` and :func:`repro.p2.arithmetic.protocol_settings`
as ``notebooks/p2_task_arithmetic.md`` does: per seed, every zoo method × task (:func:`method_jobs`: the fine-tunes
and the TaLoS masks they train in), one cached ``p2-arith`` result per Table-1 method
(:func:`repro.p2.arithmetic.run_method`), and on the first seed the Table 5 merges
(:func:`repro.p2.arithmetic.merging_scheme`).  The model family is the notebook's (``Profile.for_p2``).
"""

from __future__ import annotations

from typing import Any, Sequence

from repro.jobs import EVAL_PASS, DataUse, JobSpec, finetune_job, make_job, ref
from repro.p2.arithmetic import ARITHMETIC_METHODS, MERGE_SCHEMES, TABLE1_METHODS, protocol_settings
from repro.p2.task_arithmetic.plan import arithmetic_plan
from repro.p2.methods import LORA_ALPHA, LORA_RANK, LOTA_DENSITY, P2_METHODS, p2_recipe
from repro.profiles import Profile

NOTEBOOK = "p2_task_arithmetic"
FAMILY_SOURCES = ("hub-vision", "hub-nlp", "synthetic-images")


def data_how(profile: Profile) -> str:
    """``"family"`` for a P2 family's own splits, else ``"kshot"`` (the text profiles' k-shot splits)."""
    return "family" if profile.data_source in FAMILY_SOURCES else "kshot"


def talos_jobs(profile: Profile, notebook: str, task: str, seed: int, sparsity: float | None = None
               ) -> tuple[JobSpec, JobSpec]:
    """:func:`repro.p2.methods.talos_mask` at ``sparsity`` and the masked fine-tune it trains
    (:func:`repro.p2.sparse_vectors.talos_vector`; the zoo's TaLoS at ``profile.talos.sparsity``)."""
    t = profile.talos
    sparsity = t.sparsity if sparsity is None else float(sparsity)
    how = data_how(profile)
    mask = make_job("mask", "repro.p2.methods.talos_mask", profile, notebook, cost=t.rounds * t.calibration_examples,
                    uses=[DataUse(task, how, profile.k_shot, seed, need=(("train", t.calibration_examples),))],
                    task=task, seed=seed, sparsity=sparsity, rounds=t.rounds, soft=t.soft_value,
                    n=t.calibration_examples, target=t.target, k=profile.k_shot, model=profile.model,
                    max_length=profile.max_length)
    ft = finetune_job(profile, notebook, task, p2_recipe(profile, "talos"), seed=seed, trainable=mask,
                      tag="p2-talos", how=how)
    return mask, ft


def method_jobs(profile: Profile, notebook: str, task: str, method: str, seed: int) -> list[JobSpec]:
    """:func:`repro.p2.methods.finetune_method_run` of ``method`` on ``task``: its jobs, the vector's job last."""
    how = data_how(profile)
    recipe = p2_recipe(profile, method)
    if method in ("ft", "linearized"):
        return [finetune_job(profile, notebook, task, recipe, seed=seed, trainable="maskable", tag="p2",
                             linearized=method == "linearized", how=how)]
    if method == "l-lora":
        return [make_job("finetune", "repro.p2.methods.finetune_method_run", profile, notebook,
                         cost=2 * recipe.steps * recipe.batch_size, uses=[DataUse(task, how, profile.k_shot, seed)],
                         task=task, method=method, seed=seed, recipe=recipe, rank=LORA_RANK, alpha=LORA_ALPHA,
                         k=profile.k_shot, model=profile.model, max_length=profile.max_length)]
    if method == "lota":  # the mask is the top |τ_ft| entries of the FT run: no artifact of its own
        ft = method_jobs(profile, notebook, task, "ft", seed)[-1]
        return [make_job("finetune", "repro.workbench.Workbench.finetune_run", profile, notebook, deps=[ft],
                         cost=recipe.steps * recipe.batch_size, uses=[DataUse(task, how, profile.k_shot, seed)],
                         tasks=[task], k=profile.k_shot, seed=seed, recipe=recipe,
                         trainable={"lota_of": ref(ft), "density": LOTA_DENSITY}, tag="p2-lota",
                         model=profile.model, max_length=profile.max_length)]
    if method == "talos":
        return list(talos_jobs(profile, notebook, task, seed))
    raise ValueError(f"unknown P2 method {method!r}; choose one of {list(P2_METHODS)}")


def zoo_jobs(profile: Profile, notebook: str, tasks: Sequence[str], seed: int,
             methods: Sequence[str] = P2_METHODS) -> dict[tuple[str, str], list[JobSpec]]:
    """:func:`repro.p2.methods.finetune_all`: ``{(method, task): jobs}`` (the vector's job last)."""
    return {(m, t): method_jobs(profile, notebook, t, m, seed) for m in methods for t in tasks}


def _eval_cost(n_tasks: int, n_alphas: int, n_val: int, n_test: int) -> float:
    """Evaluated example-passes of one method's addition + negation sweeps (n_test 0 counts as 1,000)."""
    return EVAL_PASS * n_tasks * (2 * n_alphas * n_val + 3 * (n_test or 1000))


def jobs(profile: Profile, seed: int = 13, model_family: str = "", **overrides: Any) -> list[JobSpec]:
    """Every cached artifact of ``p2_task_arithmetic`` on ``profile`` for ``model_family`` ("" = the profile's)."""
    prof = profile.for_p2(model_family, NOTEBOOK)
    plan = arithmetic_plan(prof, **overrides)
    tasks, control = plan.task_list(prof), prof.p2_control
    settings = protocol_settings(prof)
    how = data_how(prof)
    out: list[JobSpec] = []
    for i, s in enumerate(plan.seeds(prof, seed)):
        zoo = zoo_jobs(prof, NOTEBOOK, tasks, s)
        for js in zoo.values():
            out += js
        vectors = {m: [zoo[(m, t)][-1] for t in tasks] for m in P2_METHODS}
        uses = [DataUse(t, how, prof.k_shot, s, need=(("dev", settings["n_val"]),)) for t in tasks]
        if control:
            uses.append(DataUse(control, how, prof.k_shot, s, need=(("dev", settings["n_val"]),)))
        common = dict(seed=s, tasks=tasks, control=control, n_val=settings["n_val"], n_test=settings["n_test"],
                      alphas=settings["alphas"], model=prof.model)
        for key in TABLE1_METHODS:
            src = ARITHMETIC_METHODS[key].source
            out.append(make_job("arithmetic", "repro.p2.arithmetic.run_method", prof, NOTEBOOK, deps=vectors[src],
                                cost=_eval_cost(len(tasks), len(settings["alphas"]), settings["n_val"],
                                                settings["n_test"]),
                                uses=uses, key=key, negation=bool(control), **common))
        if i == 0:  # Table 5 on the first seed
            for src in ("ft", "talos"):
                for scheme in MERGE_SCHEMES:
                    steps = settings["adamerging_steps"] if scheme.startswith("adamerging") else 0
                    out.append(make_job(
                        "merge", "repro.p2.arithmetic.merging_scheme", prof, NOTEBOOK, deps=vectors[src],
                        cost=_eval_cost(len(tasks), len(settings["alphas"]), settings["n_val"], settings["n_test"])
                        + steps * len(tasks) * settings["n_val"],
                        uses=uses, source=src, scheme=scheme, adamerging_steps=steps, **common))
    return out


__all__ = ["NOTEBOOK", "data_how", "jobs", "method_jobs", "talos_jobs", "zoo_jobs"]
