"""P1 App. D.4 / Fig. 15 ("core skills are learned first"): graft regions computed at an intermediate
fine-tuning checkpoint, applied to every checkpoint along training.

1. :func:`finetune_snapshots` fine-tunes exactly as :meth:`Workbench.finetune` does (same data, recipe, seed,
   trainable set) and keeps τ_t = θ_t − θ_pre on the graftable set every ``every`` optimizer steps
   (through the ``callback`` of :func:`repro.core.finetune.train`).
2. :func:`model_labels` relabels examples with a checkpoint's own predictions: the paper fits the regions "to match
   the labels of the model rather than the ground-truth labels".
3. :func:`checkpoint_tracking` learns a graft (P1 Eq. 2-4) at checkpoint c for each sparsity, on the relabeled
   train/dev sets, then scores θ_t and θ_pre + γ_c ⊙ τ_t on the test set for every snapshot t.

Snapshots are dense (SGD moves every trainable entry) and live only in memory; what is cached is the tracking
table itself (JSON in the Workbench artifact store) and the learned masks.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Sequence

import torch

from repro.data import Example
from repro.core.finetune import train
from repro.core.grafting import learn_graft, movement_mask
from repro.core.masks import Mask
from repro.profiles import FinetuneRecipe, GraftRecipe
from repro.p1.regions import evaluate_overrides, graftable_total, restrict, size_fields
from repro.workbench import JSON
from repro.jobcall import recipe_of, register_driver

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench


def finetune_snapshots(wb: "Workbench", task: str, recipe: FinetuneRecipe | None = None, *, every: int = 50,
                       k: int | None = None, seed: int | None = None,
                       progress: bool = True) -> dict[int, dict[str, torch.Tensor]]:
    """τ_t = θ_t − θ_pre (graftable set) after every ``every`` steps and after the last step, keyed by step.

    The run matches :meth:`Workbench.finetune` on ``task`` (zero-shot heads), but keeps the raw trajectory:
    the best-dev checkpoint restored at the end of training is not part of it.  The model is left at θ_pre.
    """
    if every < 1:
        raise ValueError(f"every must be >= 1, got {every}")
    recipe = wb.p1_recipe(task, recipe, k=k)  # steps = 0: the profile's P1 step budget
    seed = wb.seed if seed is None else seed
    data = wb.task(task, k=k, seed=seed)
    names = wb.names("graftable")
    snaps: dict[int, dict[str, torch.Tensor]] = {0: {n: torch.zeros_like(wb.pre[n]) for n in names}}

    def keep(step: int, model) -> None:
        if step % every == 0 or step == recipe.steps:
            own = dict(model.named_parameters())
            snaps[step] = {n: (own[n].detach() - wb.pre[n]).clone() for n in names}

    wb.restore_pre()
    train(wb.model, {task: data.train}, recipe, names, dev_data={task: data.dev}, seed=seed, progress=progress,
          eval_batch_size=wb.profile.eval_batch_size, callback=keep)
    wb.restore_pre()
    return snaps


@torch.no_grad()
def model_labels(wb: "Workbench", task: str, vector: dict[str, torch.Tensor],
                 examples: Sequence[Example]) -> list[Example]:
    """``examples`` with each label replaced by the prediction of θ_pre + τ (P1 Fig. 15 graft targets)."""
    pred = wb.predict(task, "train", wb.overrides(vector), examples=examples)
    return [replace(e, label=int(p)) for e, p in zip(examples, pred.preds.tolist())]


def checkpoint_tracking(wb: "Workbench", task: str, sparsities: Sequence[float], checkpoint: int, *,
                        every: int = 50, recipe: FinetuneRecipe | None = None, graft: GraftRecipe | None = None,
                        k: int | None = None, seed: int | None = None, n_eval: int | None = None,
                        progress: bool = True) -> dict:
    """P1 Fig. 15: regions learned at step ``checkpoint`` (one per sparsity), applied along the FT trajectory.

    Returns ``{"rows": [...], "regions": {sparsity: meta}}``; rows have ``task, step, model`` (``"FT"`` or
    ``"graft"``), ``target_sparsity``, the region size fields, and test ``value/acc/ece`` (fractions).  ``n_eval``
    caps the test examples scored at each checkpoint.  Cached as one JSON artifact.
    """
    p = wb.profile
    recipe = wb.p1_recipe(task, recipe, k=k)  # steps = 0: the profile's P1 step budget
    seed = wb.seed if seed is None else seed
    recipe_g = p.graft if graft is None else graft
    if checkpoint % every and checkpoint != recipe.steps:
        raise ValueError(f"checkpoint {checkpoint} is not a snapshot step (multiples of every={every})")
    config = {"what": "p1-fig15", "task": task, "sparsities": list(sparsities), "checkpoint": checkpoint,
              "every": every, "recipe": asdict(recipe), "graft_steps": recipe_g.steps, "k": k or p.k_shot, "seed": seed,
              "n_eval": n_eval, **wb.data_key(),
              "graft": [recipe_g.lr, recipe_g.batch_size, recipe_g.max_examples, recipe_g.sigmoid_bias]}

    return wb.cached("tracking", config, lambda: (_tracking(wb, task, sparsities, checkpoint, every, recipe, recipe_g,
                                                            k, seed, n_eval, progress), {}), JSON)[0]


def _tracking(wb: "Workbench", task: str, sparsities: Sequence[float], checkpoint: int, every: int,
              recipe: FinetuneRecipe, recipe_g: GraftRecipe, k: int | None, seed: int, n_eval: int | None,
              progress: bool) -> dict:
    p = wb.profile
    snaps = finetune_snapshots(wb, task, recipe, every=every, k=k, seed=seed, progress=progress)
    if checkpoint not in snaps:
        raise ValueError(f"checkpoint {checkpoint} not among the snapshot steps {sorted(snaps)}")
    data = wb.task(task, k=k, seed=seed)
    test = data.test[:n_eval] if n_eval else data.test
    tau_c = snaps[checkpoint]
    train_c = model_labels(wb, task, tau_c, data.train)
    dev_c = model_labels(wb, task, tau_c, data.dev)
    total = graftable_total(wb)
    regions: dict[float, Mask] = {}
    metas: dict[str, dict] = {}
    for s in sparsities:
        wb.restore_pre()
        res = learn_graft(wb.model, task, tau_c, train_c, dev_c, movement_mask(tau_c, s), recipe_g, seed=seed,
                          progress=progress, eval_batch_size=p.eval_batch_size)
        regions[s] = res.mask
        metas[str(s)] = {"best_step": res.best_step, "base_count": res.base_count, **size_fields(res.mask, total)}
    rows = []
    for step in sorted(snaps):
        tau = snaps[step]
        ft, _ = evaluate_overrides(wb, task, wb.overrides(tau), examples=test)
        rows.append({"task": task, "step": step, "model": "FT", "target_sparsity": None, "count": None,
                     "density": None, "sparsity_pct": 100.0, "value": ft["value"], "acc": ft["acc"],
                     "ece": ft["ece"]})
        for s, mask in regions.items():
            g, _ = evaluate_overrides(wb, task, wb.overrides(restrict(tau, mask.shapes), mask=mask), examples=test)
            rows.append({"task": task, "step": step, "model": "graft", "target_sparsity": s,
                         **size_fields(mask, total), "value": g["value"], "acc": g["acc"], "ece": g["ece"]})
    return {"rows": rows, "regions": metas, "checkpoint": checkpoint}


def tracking_summary(rows: Sequence[dict], checkpoint: int) -> list[dict]:
    """Per model/sparsity: value at step 0, at the checkpoint and at the end, and the share of the final gain
    already reached at the checkpoint (P1 Fig. 15: graft regions saturate early, FT keeps improving)."""
    out = []
    keys = sorted({(r["model"], r["target_sparsity"]) for r in rows}, key=lambda x: (x[0], x[1] or 0))
    for model, s in keys:
        sel = sorted((r for r in rows if r["model"] == model and r["target_sparsity"] == s), key=lambda r: r["step"])
        at = {r["step"]: r["value"] for r in sel}
        v0, vc, vend = at[sel[0]["step"]], at[checkpoint], at[sel[-1]["step"]]
        gain = vend - v0
        out.append({"model": model, "target_sparsity": s, "start": v0, "at_checkpoint": vc, "end": vend,
                    "gain_after_checkpoint": vend - vc,
                    "share_of_gain_at_checkpoint": (vc - v0) / gain if abs(gain) > 1e-12 else None})
    return out


register_driver("repro.p1.trajectory.checkpoint_tracking",
                lambda wb, k, value: checkpoint_tracking(
                    wb, k["task"], k["sparsities"], k["checkpoint"], every=k["every"], recipe=recipe_of(k["recipe"]),
                    graft=replace(wb.profile.graft, steps=k["graft_steps"]), k=k["k"], seed=k["seed"],
                    n_eval=k["n_eval"], progress=False), pair=False)
