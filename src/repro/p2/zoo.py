"""What every P2 chapter shares of the method zoo (:mod:`repro.p2.methods`): the tasks it is trained on and its jobs.

- :func:`zoo_tasks`: the tasks of the profile's zoo, those of the §5.1 plan (``repro.p2.task_arithmetic.plan``),
  which the P2 chapters after it (Figs. 2-3, 6-9) reuse from the artifact store instead of training more tasks.
- :func:`zoo_jobs`, :func:`method_jobs`, :func:`talos_jobs`: the jobs (:class:`repro.jobs.JobSpec`) of the zoo's
  runs, which each P2 chapter's ``jobs.py`` declares from its plan; :func:`data_how` is how they read their data.
  The zoo's own specs carry a role (:func:`zoo_role`: ``zoo-<method>`` on each method's task-vector job,
  :data:`TALOS_MASK_ROLE` on its TaLoS mask), outside the job ids.
- :func:`vector_spec`, :func:`method_run`, :func:`method_vector`, :func:`zoo_vectors`, :func:`talos_mask_of`,
  :func:`lota_mask_of`: how every P2 notebook reads the zoo from its declared jobs
  (:class:`repro.jobcall.ChapterJobs`, typed :class:`repro.jobs.Artifacts`), so none rebuilds a zoo run's arguments.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Sequence

from repro.data.families import FAMILY_SOURCES
from repro.jobs import DataUse, JobSpec, finetune_job, make_job, ref
from repro.p2.methods import LORA_ALPHA, LORA_RANK, LOTA_DENSITY, P2_METHODS, ft_scope, lota_mask_from, p2_recipe
from repro.profiles import Profile

if TYPE_CHECKING:  # pragma: no cover
    import torch

    from repro.core.masks import Mask
    from repro.jobs import Artifacts

#: the cpu plan's text tasks (a breadth cut from the profile's six; all accuracy tasks): the zoo's on the text family
CPU_TASKS: tuple[str, ...] = ("SST-2", "TREC", "QNLI")


#: the role of the zoo's TaLoS mask (at ``profile.talos.sparsity``)
TALOS_MASK_ROLE = "zoo-talos-mask"


def zoo_role(method: str) -> str:
    """The role of the zoo's task-vector job of ``method`` (``zoo-ft``, ``zoo-talos``, ...)."""
    return f"zoo-{method}"


def zoo_tasks(profile: Profile) -> list[str]:
    """The tasks the profile's P2 zoo is trained on (cpu text family: :data:`CPU_TASKS`; else the profile's, or its
    model family's, ``p2_tasks``), which the P2 chapters (Tables 1-2, Figs. 2-3, 6-9) share through the artifact
    store instead of training more tasks."""
    return list(CPU_TASKS if profile.plan == "cpu" and profile.p2_model_family == "text" else profile.p2_tasks)


def data_how(profile: Profile) -> str:
    """``"family"`` for a P2 family's own splits, else ``"kshot"`` (the text profiles' k-shot splits)."""
    return "family" if profile.data_source in FAMILY_SOURCES else "kshot"


def talos_jobs(profile: Profile, notebook: str, task: str, seed: int, sparsity: float | None = None
               ) -> tuple[JobSpec, JobSpec]:
    """:func:`repro.p2.methods.talos_mask` at ``sparsity`` and the masked fine-tune it trains (the zoo's TaLoS at
    ``profile.talos.sparsity``; P2 Fig. 8's sweep at the others)."""
    t = profile.talos
    sparsity = t.sparsity if sparsity is None else float(sparsity)
    how = data_how(profile)
    mask = make_job("mask", "repro.p2.methods.talos_mask", profile, notebook, cost=t.rounds * t.calibration_examples,
                    uses=[DataUse(task, how, profile.k_shot, seed, need=((t.calibration_split, t.calibration_examples),))],
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
        return [replace(finetune_job(profile, notebook, task, recipe, seed=seed, trainable=ft_scope(profile), tag="p2",
                                     linearized=method == "linearized", how=how), role=zoo_role(method))]
    if method == "l-lora":
        return [make_job("finetune", "repro.p2.methods.finetune_method_run", profile, notebook,
                         cost=2 * recipe.steps * recipe.batch_size, uses=[DataUse(task, how, profile.k_shot, seed)],
                         task=task, method=method, seed=seed, recipe=recipe, rank=LORA_RANK, alpha=LORA_ALPHA,
                         k=profile.k_shot, model=profile.model, max_length=profile.max_length,
                         role=zoo_role(method))]
    if method == "lota":  # the mask is the top |τ_ft| entries of the FT run: no artifact of its own
        ft = method_jobs(profile, notebook, task, "ft", seed)[-1]
        return [make_job("finetune", "repro.workbench.Workbench.finetune_run", profile, notebook, deps=[ft],
                         cost=recipe.steps * recipe.batch_size, uses=[DataUse(task, how, profile.k_shot, seed)],
                         tasks=[task], k=profile.k_shot, seed=seed, recipe=recipe,
                         trainable={"lota_of": ref(ft), "density": LOTA_DENSITY}, tag="p2-lota",
                         model=profile.model, max_length=profile.max_length, role=zoo_role(method))]
    if method == "talos":
        mask, ft = talos_jobs(profile, notebook, task, seed)
        return [replace(mask, role=TALOS_MASK_ROLE), replace(ft, role=zoo_role(method))]
    raise ValueError(f"unknown P2 method {method!r}; choose one of {list(P2_METHODS)}")


def zoo_jobs(profile: Profile, notebook: str, tasks: Sequence[str], seed: int,
             methods: Sequence[str] = P2_METHODS) -> dict[tuple[str, str], list[JobSpec]]:
    """:func:`method_jobs` of every method × task: ``{(method, task): jobs}`` (the vector's job last)."""
    return {(m, t): method_jobs(profile, notebook, t, m, seed) for m in methods for t in tasks}


# ==============================================================================================================
# reading the zoo from a chapter's declared jobs
# ==============================================================================================================
def _of_task(spec: JobSpec, task: str) -> bool:
    return spec.kwargs.get("tasks") == [task] or spec.kwargs.get("task") == task


def _seed(jobs: "Artifacts", seed: int | None) -> int:
    return jobs.wb.seed if seed is None else seed


def vector_spec(jobs: "Artifacts", task: str, method: str, seed: int | None = None, **fields: Any) -> JobSpec:
    """The declared job of the zoo's ``method`` task vector on ``task`` at ``seed`` (None: the notebook
    Workbench's seed; role :func:`zoo_role`; ``fields``: further kwargs to match)."""
    seed = _seed(jobs, seed)
    found = [s for s in jobs.select(kind="finetune", role=zoo_role(method), seed=seed, **fields) if _of_task(s, task)]
    if len(found) != 1:  # jobs.one's message names the query
        return jobs.one(kind="finetune", role=zoo_role(method), seed=seed, task=task, **fields)
    return found[0]


def method_run(jobs: "Artifacts", task: str, method: str, seed: int | None = None
               ) -> tuple[dict[str, "torch.Tensor"], dict]:
    """``(τ, metadata)`` of the zoo's ``method`` on ``task`` (:func:`repro.p2.methods.finetune_method_run`), loaded
    or trained through its declared job."""
    return jobs.artifact(vector_spec(jobs, task, method, seed))


def method_vector(jobs: "Artifacts", task: str, method: str, seed: int | None = None) -> dict[str, "torch.Tensor"]:
    """τ of the zoo's ``method`` on ``task`` at ``seed`` (:func:`method_run` without its metadata)."""
    return jobs.value(vector_spec(jobs, task, method, seed))


def zoo_vectors(jobs: "Artifacts", tasks: Sequence[str], seed: int | None = None,
                methods: Sequence[str] = P2_METHODS) -> dict[str, dict[str, dict[str, "torch.Tensor"]]]:
    """``{method: {task: τ}}`` of the zoo's declared runs (:func:`method_vector`)."""
    return {m: {t: method_vector(jobs, t, m, seed) for t in tasks} for m in methods}


def talos_mask_of(jobs: "Artifacts", task: str, seed: int | None = None) -> "Mask":
    """The zoo's TaLoS mask of ``task`` (:func:`repro.p2.methods.talos_mask` at ``profile.talos.sparsity``)."""
    return jobs.value(jobs.one(kind="mask", role=TALOS_MASK_ROLE, task=task, seed=_seed(jobs, seed)))


def lota_mask_of(jobs: "Artifacts", task: str, seed: int | None = None, density: float = LOTA_DENSITY) -> "Mask":
    """The zoo's LoTA mask of ``task``: the top-``density`` maskable entries by |τ_ft| of its declared FT run
    (:func:`repro.p2.methods.lota_mask_from`, as the LoTA job computes it)."""
    return lota_mask_from(jobs.wb, method_vector(jobs, task, "ft", seed), density)


__all__ = ["CPU_TASKS", "TALOS_MASK_ROLE", "data_how", "lota_mask_of", "method_jobs", "method_run", "method_vector",
           "talos_jobs", "talos_mask_of", "vector_spec", "zoo_jobs", "zoo_role", "zoo_tasks", "zoo_vectors"]
