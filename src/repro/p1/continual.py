"""P1 §5.2 / App. C.3 continual learning: tasks t_1, t_2, … arrive one at a time.

- **Naive continual FT** (Table 4 "ContinualFT"): fine-tune on t_1, then continue fine-tuning the *same* model on
  t_2, and so on, every stage with the same recipe and all eligible parameters trainable.
- **Grafting-continual** (Table 4 "GraftingContinual"): γ_{t_n} is the graft region of t_n found from an
  independent single-task run (FT on t_n, then P1 Eq. 3).  When t_n arrives only the parameters in
  γ_{t_n} \\ ∪_{i<n} γ_{t_i} are trained (starting from the current model, i.e. θ_pre there); to infer for t_n
  the grafted model θ_pre + (∪_{i≤n} γ_{t_i}) ⊙ (θ_final − θ_pre) is used (:func:`continual_overrides`).

The model after stage n is stored as the cumulative task vector τ_n = θ_n − θ_pre (cached per stage: a longer
sequence reuses its prefix).  Neither procedure is in the official code; this follows App. C.3's text.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import torch

from repro.core.finetune import train
from repro.core.masks import Mask
from repro.profiles import FinetuneRecipe
from repro.workbench import VECTOR
from repro.jobcall import recipe_of, register_driver

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench


def continual_trainable(regions: Mapping[str, Mask], sequence: Sequence[str], n: int) -> Mask:
    """γ_{t_n} \\ ∪_{i<n} γ_{t_i} (0-based ``n``): the entries grafting-continual trains at stage n."""
    missing = [t for t in sequence[: n + 1] if t not in regions]
    if missing:
        raise KeyError(f"no region for {missing}; regions exist for {sorted(regions)}")
    own = regions[sequence[n]]
    if n == 0:
        return own
    return own - Mask.union(regions[t] for t in sequence[:n])


def inference_region(regions: Mapping[str, Mask], sequence: Sequence[str], task: str) -> Mask:
    """∪_{i≤n} γ_{t_i} for the task at position n of ``sequence`` (the grafted model used to infer for it)."""
    if task not in sequence:
        raise KeyError(f"{task!r} is not in the sequence {list(sequence)}")
    n = list(sequence).index(task)
    return Mask.union(regions[t] for t in sequence[: n + 1])


def continual_overrides(wb: "Workbench", tau: Mapping[str, torch.Tensor], regions: Mapping[str, Mask] | None,
                        sequence: Sequence[str], task: str) -> dict[str, torch.Tensor]:
    """Overrides to evaluate ``task`` after the sequence: the final model (naive), or its graft on the union of
    the regions up to ``task`` (grafting-continual)."""
    if regions is None:
        return wb.overrides(tau)
    return wb.overrides(tau, 1.0, inference_region(regions, sequence, task))


def sequential_finetune(wb: "Workbench", sequence: Sequence[str], recipe: FinetuneRecipe | None = None,
                        regions: Mapping[str, Mask] | None = None, seed: int | None = None,
                        tag: str = "", later_recipe: FinetuneRecipe | None = None) -> list[dict[str, torch.Tensor]]:
    """Train on ``sequence`` one task after the other; returns τ_n = θ_n − θ_pre after every stage (cached).

    ``regions=None``: naive continual FT (all eligible parameters).  ``regions`` (task → Mask over the eligible
    set): grafting-continual, stage n trains only :func:`continual_trainable` (a stage whose trainable set is
    empty leaves the model unchanged).  Each stage keeps its best-dev checkpoint on its own task, as single-task
    FT does.  ``recipe`` trains stage 1 (so it is the cached single-task FT / graft re-training run) and, unless
    ``later_recipe`` is given, every later stage too.
    """
    if not sequence:
        raise ValueError("empty task sequence")
    given, given_later = recipe, later_recipe
    seed = wb.seed if seed is None else seed
    names = wb.names("graftable")
    taus: list[dict[str, torch.Tensor]] = []
    prev: dict[str, torch.Tensor] = {}
    for n, task in enumerate(sequence):
        recipe = wb.p1_recipe(task, given)  # steps = 0: the profile's P1 step budget for this task
        later_recipe = wb.p1_recipe(task, given_later or given)
        data = wb.task(task, seed=seed)
        trainable: Sequence[str] | Mask = names
        if regions is not None:
            trainable = continual_trainable(regions, sequence, n)
        config = {"kind": "continual", "sequence": list(sequence[: n + 1]), "k": wb.profile.k_shot, "seed": seed,
                  "recipe": asdict(recipe), "later_recipe": asdict(later_recipe), **wb.data_key(),
                  "tag": tag,
                  "regions": None if regions is None else
                  {t: f"{regions[t].count()}:{regions[t].digest()}" for t in sequence[: n + 1]}}
        count = trainable.count() if isinstance(trainable, Mask) else len(trainable)
        if n == 0:  # stage 1 is plain FT (naive) or graft re-training (grafting-continual): share their cache
            prev = wb.finetune(task, recipe, trainable="graftable" if regions is None else trainable,
                               seed=seed) if count else {}
            taus.append(prev)
            continue

        def compute(prev=prev, task=task, data=data, trainable=trainable, count=count) -> tuple[dict, dict]:
            info: dict = {"trainable_count": 0}
            _load_state(wb, prev)
            if count:
                res = train(wb.model, {task: data.train}, later_recipe, trainable, dev_data={task: data.dev},
                            seed=seed)
                info = {"best_step": res.best_step, "best_dev": res.best_dev,
                        "trainable_count": res.trainable_count, "seconds": res.seconds}
            own = dict(wb.model.named_parameters())
            return {nm: own[nm].detach() - wb.pre[nm] for nm in names
                    if not torch.equal(own[nm].detach(), wb.pre[nm])}, {"train": info}

        prev = wb.cached("taskvec", config, compute, VECTOR)[0]
        taus.append(prev)
    return taus


def _load_state(wb: "Workbench", tau: Mapping[str, torch.Tensor]) -> None:
    """Put the workbench model at θ_pre + τ (in place; callers restore θ_pre afterwards)."""
    wb.restore_pre()
    with torch.no_grad():
        own = dict(wb.model.named_parameters())
        for n, v in tau.items():
            own[n].add_(v)


def _continual_job(wb: "Workbench", k: dict, value: Any) -> list[dict[str, torch.Tensor]]:
    given = k.get("given") or {}
    return sequential_finetune(wb, k["sequence"], recipe_of(given.get("recipe", k["recipe"])), regions=k["regions"],
                               seed=k["seed"], later_recipe=recipe_of(given.get("later_recipe", k["later_recipe"])))


register_driver("repro.p1.continual.sequential_finetune", _continual_job, pair=False)
