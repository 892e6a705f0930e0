"""GPU-hours of a profile's job inventory from measured seconds per unit of each job kind.

Each job's cost in example-passes (:mod:`repro.jobs`, what ``repro plan`` prints) × the seconds per example-pass of
its kind on its model family.  ``per_step`` maps a unit name to ``{"seconds", "batch", ...}``:

=====================  ==========================================================================================
unit                   priced jobs
=====================  ==========================================================================================
``p1_ft_step``         P1 fine-tunes / adapters / continual runs at batch ≤ 2 (seconds per step / batch)
``p1_graft_example``   every other P1 training kind (graft, joint graft, fish, ...): seconds per example-pass
``p1_eval_example``    P1 evaluations (× 3: the inventory counts an evaluated example as 1/3 of a pass)
``vit_ft_step``        P2 vision training kinds; ``talos_example`` its calibration (``mask``); ``vit_eval_example``
``t5_ft_step``         P2 T5 training kinds; ``t5_eval_example`` its evaluations
=====================  ==========================================================================================

A unit that was not measured prices its jobs at None: the notebook's hours are then reported as not measured
(``gpu_hours`` None, ``unpriced`` jobs counted), never guessed.  ``benchmarks/gpu_paper_path.py`` and ``repro bench``
(steady-state figures, :mod:`repro.bench.steady`) both use it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Mapping

from repro.inventory import inventory

#: job kinds priced at a model's training rate; the others at its evaluation rate
TRAINING_KINDS = frozenset({"finetune", "adapter", "continual", "graft", "joint-graft", "fish", "tracking", "mask"})


def _per(per_step: Mapping[str, Mapping], unit: str, divide_by_batch: bool = False) -> float | None:
    row = per_step.get(unit)
    if not row or row.get("seconds") is None:
        return None
    return row["seconds"] / row["batch"] if divide_by_batch else row["seconds"]


def rate(kind: str, family: str, per_step: Mapping[str, Mapping], batch: int = 2) -> float | None:
    """Seconds per example-pass of a job of ``kind`` on the model of ``family`` ("" = P1's roberta-base); None when
    its unit was not measured.  A P1 training run at ``batch`` ≤ 2 (the official SGD recipe) is priced by the batch-2
    step, a larger batch by the per-example rate of the graft's gradients."""
    three = lambda v: None if v is None else 3 * v  # noqa: E731 - an evaluated example is 1/3 of a pass
    if family == "":
        if kind in ("finetune", "adapter", "continual") and batch <= 2:
            return _per(per_step, "p1_ft_step", True)
        if kind in TRAINING_KINDS:
            return _per(per_step, "p1_graft_example")
        return three(_per(per_step, "p1_eval_example"))
    if family == "vision":
        if kind == "mask":
            return _per(per_step, "talos_example")
        if kind in TRAINING_KINDS:
            return _per(per_step, "vit_ft_step", True)
        return three(_per(per_step, "vit_eval_example"))
    if kind in TRAINING_KINDS:  # T5 (nlp, nlp-base): the t5-base step
        return _per(per_step, "t5_ft_step", True)
    return three(_per(per_step, "t5_eval_example"))


def _priced_jobs(profile: str, family: str):
    for job in inventory(profile, family=family):
        nb = job.notebooks[0]
        batch = int((job.kwargs.get("recipe") or {}).get("batch_size", 2))
        yield nb, job, (job.family if nb.startswith("p2") else ""), batch


def estimate_hours(per_step: Mapping[str, Mapping], profile: str = "paper",
                   families: tuple[str, ...] = ("vision", "nlp")) -> dict[str, dict]:
    """{family: {notebook: {"jobs", "gpu_hours" (None if a job's unit was not measured), "unpriced"}}}; P1 is
    counted once, with the first family."""
    out: dict[str, dict] = {}
    for i, family in enumerate(families):
        hours: dict[str, float] = defaultdict(float)
        counts: dict[str, int] = defaultdict(int)
        unpriced: dict[str, int] = defaultdict(int)
        for nb, job, fam, batch in _priced_jobs(profile, family):
            if i > 0 and not nb.startswith("p2"):
                continue  # P1 is the same in every family; counted with the first
            counts[nb] += 1
            r = rate(job.kind, fam, per_step, batch)
            if r is None:
                unpriced[nb] += 1
            else:
                hours[nb] += job.cost * r / 3600
        out[family] = {nb: {"jobs": counts[nb], "gpu_hours": None if unpriced[nb] else hours[nb],
                            "unpriced": unpriced[nb]} for nb in counts}
    return out


def total_hours(estimate: Mapping[str, Mapping[str, Mapping]]) -> float | None:
    """The sum over families and notebooks; None when any notebook was not priced."""
    vals = [v["gpu_hours"] for nbs in estimate.values() for v in nbs.values()]
    return None if any(v is None for v in vals) else float(sum(vals))


def hours_by_kind(per_step: Mapping[str, Mapping], profile: str = "paper", family: str = "vision") -> dict[str, float]:
    """GPU-hours of ``family``'s plans per (notebook, kind, k), largest first (priced jobs only): where the time
    goes."""
    out: dict[str, float] = defaultdict(float)
    for nb, job, fam, batch in _priced_jobs(profile, family):
        r = rate(job.kind, fam, per_step, batch)
        if r is None:
            continue
        key = f"{nb} {job.kind}" + (f" k={job.kwargs['k']}" if "k" in job.kwargs else "")
        out[key] += job.cost * r / 3600
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))
