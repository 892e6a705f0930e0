"""The run drivers of the P1 §5 chapter (``notebooks/p1_multitask_continual.md``) on its declared jobs, and the
per-example results of its statistical claims.

Every artifact comes from the chapter's declared jobs (:mod:`repro.p1.multitask_continual.jobs`), found by role
through :class:`repro.jobs.Artifacts` (the notebook's :class:`repro.jobcall.ChapterJobs`): the multi-task models
(``mt``, ``mt-adamw``), their per-task regions (``mt-region``) and tuned unions (``tuned-union``), the single-task
FT models (``single-ft``), the single-task regions of Table 4 (``continual-region``) and the continual stages
(``continual-naive``, ``continual-graft``).  Nothing here decides which artifacts exist.

The claims of Fig. 8 (MT vs single-task FT, the Eq. 5 Rel values of the regions) and Table 4 (continual learning)
compare models on *the same* test examples, so this module scores every model of one comparison on one list of
examples and keeps the per-example 0/1 correctness (the input of :mod:`repro.report.verdicts`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import torch

from repro.core.masks import Mask
from repro.data import fixed_subset
from repro.jobs import SKIPPED, JobSpec, ref
from repro.p1.calibration import per_example
from repro.p1.continual import continual_overrides
from repro.p1.multitask import region_study

if TYPE_CHECKING:  # pragma: no cover
    from repro.jobs import Artifacts
    from repro.workbench import Workbench

Overrides = Mapping[str, torch.Tensor] | None
#: the Fig. 11-13 studies: (figure id, title, MT model role, γ_base)
EXTRA_STUDIES: tuple[tuple[str, str, str, float], ...] = (
    ("p1-fig11", "SGD MT, γ_base = top-1e-05", "mt", 1e-5), ("p1-fig12", "SGD MT, γ_base = top-0.0001", "mt", 1e-4),
    ("p1-fig13", "AdamW MT, γ_base = ∅", "mt-adamw", 0.0))


def paired_correct(wb: "Workbench", task: str, models: Mapping[str, Overrides], split: str = "test",
                   limit: int | None = None) -> dict[str, np.ndarray]:
    """Per-example 0/1 correctness of each model (name → overrides) on the same examples of ``task``'s ``split``
    (the label-balanced subset of :func:`repro.data.fixed_subset` when ``limit`` is set, as the Eq. 5
    accuracies use; all of them otherwise); the mean of each array is the model's accuracy (Table 4, Fig. 8)."""
    examples = fixed_subset(wb.task(task).split(split), limit)
    return {name: per_example(wb.predict(task, split, ov, examples=examples))["correct"]
            for name, ov in models.items()}


def _tau(jobs: "Artifacts", spec: JobSpec) -> dict[str, torch.Tensor]:
    """The task vector of a fine-tune job (empty for the skipped re-training of an empty region: θ_pre)."""
    value = jobs.value(spec)
    return {} if value is SKIPPED else value


# --- the multi-task model (Fig. 8 / App. C.1) ------------------------------------------------------------------
def mt_vs_ft(jobs: "Artifacts", limit: int | None = None) -> tuple[dict[str, torch.Tensor], dict]:
    """The SGD multi-task model's task vector, and for each of its tasks with a declared single-task FT model
    (those the continual experiment fine-tunes anyway) the per-example correctness of ``MT`` and ``FT`` on the same
    test examples (:func:`paired_correct`): ``(tau_mt, {task: {"MT": array, "FT": array}})``."""
    wb, mt = jobs.wb, jobs.one("finetune", role="mt")
    tau_mt = jobs.value(mt)
    out = {}
    for spec in jobs.select("finetune", role="single-ft"):
        task = spec.kwargs["tasks"][0]
        if task in mt.kwargs["tasks"]:
            out[task] = paired_correct(wb, task, {"MT": wb.overrides(tau_mt), "FT": wb.overrides(_tau(jobs, spec))},
                                       limit=limit)
    return tau_mt, out


# --- Fig. 8 and Figs. 11-13 ------------------------------------------------------------------------------------
def fig8_study(jobs: "Artifacts", groups: Mapping[str, Sequence[str]], limit: int | None = None) -> dict[str, Any]:
    """P1 Fig. 8: :func:`repro.p1.multitask.region_study` of the SGD MT model's regions on γ_base = ∅, with the
    unions of ``groups`` and their tuned versions when the chapter declares them (``tune_steps`` > 0)."""
    mt = jobs.one("finetune", role="mt")
    tuned = bool(jobs.select("joint-graft", role="tuned-union", vector=ref(mt)))
    return region_study(jobs, mt, groups, base=0.0, tuned=tuned, limit=limit)


def extra_studies(jobs: "Artifacts", limit: int | None = None) -> dict[str, tuple[str, dict[str, Any]]]:
    """P1 Figs. 11-13: ``{figure id: (title, region study)}`` for each study of :data:`EXTRA_STUDIES` whose
    regions the chapter declares (the plan's ``region_bases`` / ``adamw_mt``); regions only, no unions."""
    out = {}
    for fid, title, role, base in EXTRA_STUDIES:
        models = jobs.select("finetune", role=role)
        if models and jobs.select("graft", role="mt-region", vector=ref(models[0]), base=base):
            out[fid] = (title, region_study(jobs, models[0], {}, base=base, limit=limit))
    return out


def fig8_regions(study: Mapping[str, Any], groups: Mapping[str, Sequence[str]]
                 ) -> tuple[dict[str, Mask], dict[str, list[str]]]:
    """The regions behind P1 Fig. 8b-d by Rel key — ``single:<task>``, ``union:<group>``, ``tuned:<group>`` — and
    the tasks each is scored on (single: every task; union / tuned: the group's own tasks, what the claims use),
    from :func:`fig8_study`'s result (unions and tuned unions only where it has them)."""
    tasks = list(study["regions"])
    masks: dict[str, Mask] = {f"single:{t}": m for t, m in study["regions"].items()}
    on = {f"single:{t}": tasks for t in tasks}
    for g, u in study.get("unions", {}).items():
        masks[f"union:{g}"], on[f"union:{g}"] = u, list(groups[g])
    for g, u in study.get("tuned_regions", {}).items():
        masks[f"tuned:{g}"], on[f"tuned:{g}"] = u, list(groups[g])
    return masks, on


def rel_correct(wb: "Workbench", tasks: Sequence[str], vector: Mapping[str, torch.Tensor],
                regions: Mapping[str, Mask], on: Mapping[str, Sequence[str]], limit: int | None = None
                ) -> dict[str, dict[str, np.ndarray]]:
    """Per-example 0/1 correctness behind P1 Eq. 5 on each task's Eq. 5 examples (the label-balanced subset of
    :func:`repro.data.fixed_subset`, as :func:`repro.p1.multitask.transfer_rows` scores them): ``pre``
    (θ_pre, P_0), ``MT`` (the MT model, P_1) and every region θ_pre + γ ⊙ τ_MT (P_γ) on the tasks ``on[name]``.
    Returns ``{task: {model: array}}``; the Rel values computed from it equal the driver's."""
    out: dict[str, dict[str, np.ndarray]] = {}
    examples = {t: fixed_subset(wb.task(t).split("test"), limit) for t in tasks}

    def score(name: str, overrides: Overrides, on_tasks: Sequence[str]) -> None:
        for t in on_tasks:
            pred = wb.predict(t, "test", overrides, examples=examples[t])
            out.setdefault(t, {})[name] = per_example(pred)["correct"]

    score("pre", None, tasks)
    score("MT", wb.overrides(vector), tasks)
    for name, mask in regions.items():
        score(name, wb.overrides(vector, 1.0, mask), on[name])
    return out


# --- Table 4 ---------------------------------------------------------------------------------------------------
def continual_final(jobs: "Artifacts", role: str, sequence: Sequence[str]) -> dict[str, torch.Tensor]:
    """τ after the whole ``sequence`` of the declared continual stages of ``role`` ("continual-naive" /
    "continual-graft"): the last stage's (its upstream stages obtained first); for a one-task sequence, stage 1
    (the single-task FT, or the graft re-training)."""
    stages = jobs.select("continual", role=role, sequence=list(sequence))
    if stages:
        return jobs.value(stages[0])[-1]
    first = jobs.select("finetune", role=role, tasks=[sequence[0]]) or \
        jobs.select("finetune", role="single-ft", tasks=[sequence[0]])
    return _tau(jobs, first[0])


def table4(jobs: "Artifacts", sequence: Sequence[str]) -> dict[str, Any]:
    """P1 Table 4 on ``sequence``: the per-example correctness of single-task FT (``FT``), naive continual FT
    (``ContinualFT``, its final model) and grafting-continual (``GraftingContinual``, the final model grafted on the
    union of the regions up to the task) on each task's test split, the same examples for the three.

    Returns ``{"correct": {task: {method: array}}, "regions": {task: Mask}, "metas": {task: graft metadata}}``."""
    seq, wb = list(sequence), jobs.wb
    single = {t: _tau(jobs, jobs.one("finetune", role="single-ft", tasks=[t])) for t in seq}
    grafts = {t: jobs.artifact(jobs.one("graft", role="continual-region", task=t)) for t in seq}
    regions = {t: mask for t, (mask, _) in grafts.items()}
    naive = continual_final(jobs, "continual-naive", seq)
    graftc = continual_final(jobs, "continual-graft", seq)
    correct = {t: paired_correct(wb, t, {"FT": wb.overrides(single[t]),
                                         "ContinualFT": continual_overrides(wb, naive, None, seq, t),
                                         "GraftingContinual": continual_overrides(wb, graftc, regions, seq, t)})
               for t in seq}
    return {"correct": correct, "regions": regions, "metas": {t: meta for t, (_, meta) in grafts.items()}}


__all__ = ["EXTRA_STUDIES", "continual_final", "extra_studies", "fig8_regions", "fig8_study", "mt_vs_ft",
           "paired_correct", "rel_correct", "table4"]
