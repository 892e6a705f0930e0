"""Sparse task vectors beyond the method zoo's defaults, scored with the P2 task-arithmetic protocol.

- :func:`talos_vector` — TaLoS at any sparsity k (P2 Fig. 8, App. A.5) by exactly the zoo's path
  (:func:`repro.p2.methods.talos_mask` + masked :meth:`Workbench.finetune`), so k = ``profile.talos.sparsity`` is
  the zoo's own cached run and k = 0 is non-linear FT (the paper: "at 0% sparsity we recover full FT").
- :func:`grafted_vectors` — *beyond the paper*: P1 grafting (Eq. 2-4, :meth:`repro.workbench.Workbench.graft`)
  applied to the P2 non-linear FT task vectors, giving sparse task vectors γ_t ⊙ τ_t whose support is learned
  to keep the fine-tuned *skill* rather than chosen by sensitivity (TaLoS) or magnitude (LoTA).
- :func:`arithmetic_summary` — single-task, addition and negation of any such family of vectors with
  :mod:`repro.p2.arithmetic` (α on validation, grid × 1/(1 − k) for a k-sparse family, P2 App. A.1).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import torch
import numpy as np

from repro.core.masks import Mask
from repro.core.taskvec import TaskVector
from repro.p2.arithmetic import ArithmeticMethod, single_task, task_addition, task_negation
from repro.p2.methods import finetune_method, p2_recipe, talos_mask

if TYPE_CHECKING:  # pragma: no cover
    from repro.p2.evaluator import Evaluator
    from repro.profiles import GraftRecipe
    from repro.workbench import Workbench


def talos_vector(wb: "Workbench", task: str, sparsity: float, seed: int | None = None) -> dict[str, torch.Tensor]:
    """τ of TaLoS calibrated at ``sparsity`` on ``task`` (P2 Alg. 1), trained with the P2 recipe; cached.

    ``sparsity = 0`` returns the non-linear FT vector (every maskable entry trainable).
    """
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    if sparsity == 0.0:
        return finetune_method(wb, task, "ft", seed=seed)
    seed = wb.seed if seed is None else seed
    mask, _ = talos_mask(wb, task, seed=seed, sparsity=sparsity)
    return wb.finetune(task, p2_recipe(wb.profile, "talos"), trainable=mask, seed=seed, tag="p2-talos")


def grafted_vectors(wb: "Workbench", tasks: Sequence[str], sparsity: float, graft: GraftRecipe | None = None,
                    seed: int | None = None) -> tuple[dict[str, dict[str, torch.Tensor]], dict[str, Mask]]:
    """Beyond the paper: ``({task: γ_t ⊙ τ_t}, {task: γ_t})`` with τ_t the P2 non-linear FT vector and γ_t its P1
    graft region (γ_base = top-``sparsity`` movement of the graftable set, then P1 Eq. 2-4 with ``graft``, None: the
    profile's recipe; cached)."""
    vectors, masks = {}, {}
    for t in tasks:
        tau = finetune_method(wb, t, "ft", seed=seed)
        mask, _ = wb.graft(t, tau, base=sparsity, recipe=graft, seed=seed)  # the P1 graft on the graftable set
        masks[t] = mask
        vectors[t] = {n: tau[n] * mask.tensors[n].to(tau[n].dtype) if n in mask.shapes else torch.zeros_like(tau[n])
                      for n in tau}
    return vectors, masks


def arithmetic_summary(wb: "Workbench", ev: "Evaluator", vectors: Mapping[str, Mapping[str, torch.Tensor]],
                       sparsity: float, alphas: Sequence[float] | None = None, label: str = "",
                       negation: bool = True) -> dict[str, Any]:
    """Single-task, task-addition and task-negation results (fractions) of one family of task vectors.

    The α grid is ``alphas`` (default ``profile.alphas``) stretched by 1/(1 − ``sparsity``) (P2 App. A.1).
    Returns ``{"single": mean single-task test acc, "abs", "norm", "alpha", "target", "control", ...}`` and
    ``"correct": {kind: {task: per-example 0/1 test correctness}}`` (kind ``single``, ``addition``, and with
    negation ``target`` / ``control``: the evaluations behind those numbers, for paired bootstraps).
    """

    method = ArithmeticMethod(label or f"sparse-{sparsity}", label or f"k={sparsity}", "Sparse", "ft")
    vecs = {t: TaskVector(dict(vectors[t])) for t in ev.tasks}
    if not 0.0 <= sparsity < 1.0:
        raise ValueError(f"sparsity must be in [0, 1), got {sparsity}")
    grid = [round(float(a) / (1.0 - sparsity), 6) for a in (wb.profile.alphas if alphas is None else alphas)]
    single = single_task(ev, method, vecs)
    add = task_addition(ev, method, vecs, grid, single=single)
    out: dict[str, Any] = {"label": method.label, "sparsity": sparsity, "grid_max": max(grid),
                           "single": float(np.mean([single[t]["test"] for t in ev.tasks])),
                           "single_per_task": {t: single[t]["test"] for t in ev.tasks},
                           "abs": add["abs"], "norm": add["norm"], "alpha": add["alpha"],
                           "density": float(np.mean([vecs[t].count_nonzero() / sum(wb.pre[n].numel()
                                                     for n in wb.names("maskable")) for t in ev.tasks])),
                           "correct": {"single": {t: single[t]["test_correct"] for t in ev.tasks},
                                       "addition": dict(add["test_correct"])}}
    if negation:
        neg = task_negation(ev, method, vecs, grid)
        out.update(target=neg["target"], control=neg["control"],
                   negation_alpha={t: r["alpha"] for t, r in neg["per_task"].items()})
        out["correct"].update({k: {t: r[f"{k}_correct"] for t, r in neg["per_task"].items()}
                               for k in ("target", "control")})
    return out
