"""Is a fine-tuning run in the linear (kernel) regime?  The two checks of P2 App. A.4.

- **Post-hoc linearization** (P2 Fig. 6, after Ortiz-Jiménez et al. 2023): evaluate a task vector τ both on the
  network, f(x; θ0 + τ), and on its first-order Taylor expansion around θ0, f_lin(x; θ0 + τ) = f(x; θ0) +
  J_θ0(x)·τ (the ``linear_base`` forward of :func:`repro.core.evaluation.forward`).  Equal accuracies (points on the
  bisector) mean the run behaved linearly.
- **Output-gradient drift** (P2 Fig. 7, after Malladi et al. 2023): along training, the relative change of the
  output Jacobian E_x ‖∇_θ f(x; θ^(i)) − ∇_θ f(x; θ0)‖² / ‖∇_θ f(x; θ0)‖², θ^(i) = the parameters after step i.
  A constant Jacobian is what keeps fine-tuning linear.  Checkpoints θ^(i) are collected by a
  :class:`SnapshotRecorder` passed as the ``callback`` of the one training loop (:func:`repro.core.finetune.train`).

For a *linearized* model (Linearized FT) the trained function is f_lin itself, whose Jacobian is J_θ0 at every
step: its drift is 0 by construction and its post-hoc linearization is the model itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence
import hashlib
import math
from dataclasses import asdict

import torch

from repro.data import Example, chunks
from repro.core.evaluation import score, predict
from repro.core.finetune import TrainResult, train
from repro.core.masks import Mask
from repro.models.base import Classifier
from repro.profiles import FinetuneRecipe
from repro.core.fisher import logit_target, per_example_grads, per_example_grads_loop
from repro.p2.function_localization import eval_subset
from repro.p2.methods import finetune_method, ft_scope, lota_mask_from, p2_recipe, talos_mask
from repro.workbench import JSON
from repro.jobcall import register_driver

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench


# --- Fig. 6: post-hoc linearization ---------------------------------------------------------------------
def linearized_accuracy(model: Classifier, examples: Sequence[Example], task: str,
                        pre: Mapping[str, torch.Tensor], vector: Mapping[str, torch.Tensor], alpha: float = 1.0,
                        batch_size: int = 64) -> dict[str, float]:
    """P2 Fig. 6: scores of θ0 + ατ on the network and on its post-hoc linearization f(θ0) + J_θ0·ατ.

    Returns ``{"ft": metric of f(x; θ0+ατ), "lin": metric of f_lin(x; θ0+ατ), "agreement": fraction of
    examples where both predict the same class}`` (the task's own metric, fractions).
    """
    if not vector:
        raise ValueError("empty task vector")
    over = {n: pre[n] + alpha * v for n, v in vector.items()}
    base = {n: pre[n] for n in vector}
    metric = model.specs[task].metric
    p_ft = predict(model, examples, task, over, batch_size=batch_size)
    p_lin = predict(model, examples, task, over, batch_size=batch_size, linear_base=base)
    return {"ft": score(p_ft, metric)["value"], "lin": score(p_lin, metric)["value"],
            "agreement": float((p_ft.preds == p_lin.preds).float().mean())}


# --- Fig. 7: checkpoints along training ----------------------------------------------------------------
class SnapshotRecorder:
    """``callback(step, model)`` for :func:`repro.core.finetune.train`: copies the parameters ``names`` after the
    optimizer steps in ``steps`` (1-based) into ``snapshots[step]``."""

    def __init__(self, steps: Sequence[int], names: Sequence[str]) -> None:
        self.steps = {int(s) for s in steps}
        self.names = list(names)
        self.snapshots: dict[int, dict[str, torch.Tensor]] = {}

    def __call__(self, step: int, model: Classifier) -> None:
        if step in self.steps:
            params = dict(model.named_parameters())
            self.snapshots[step] = {n: params[n].detach().clone() for n in self.names}


def snapshot_steps(total: int, points: int) -> list[int]:
    """``points`` roughly log-spaced steps in [1, total] (denser early, where the Jacobian moves most), + total."""
    if total < 1 or points < 1:
        raise ValueError(f"need total >= 1 and points >= 1, got {total}, {points}")
    if points == 1:
        return [total]

    raw = {max(1, min(total, round(math.exp(math.log(total) * i / (points - 1))))) for i in range(points)}
    return sorted(raw | {total})


class _StopTraining(Exception):
    """Raised by :class:`SnapshotRecorder` after its last step when asked to stop the run early."""


def train_with_snapshots(model: Classifier, train_data: Mapping[str, Sequence[Example]], recipe: FinetuneRecipe,
                         trainable: Sequence[str] | Mask, steps: Sequence[int], seed: int = 0,
                         linearized: bool = False, progress: bool = False, stop_early: bool = True,
                         dev_data: Mapping[str, Sequence[Example]] | None = None
                         ) -> tuple[TrainResult | None, dict[int, dict[str, torch.Tensor]]]:
    """Run :func:`repro.core.finetune.train` once, recording the trained tensors after each step in ``steps``.

    With ``stop_early`` the run is interrupted right after the last requested step: the snapshots are then those
    of the first steps of exactly the run ``train`` would make with this recipe and seed (the learning-rate
    schedule still spans ``recipe.steps``), and no TrainResult is returned.  The model is restored to its
    starting parameters (eval mode, frozen) afterwards; ``snapshots[0]`` holds the starting values.
    """
    names = list(trainable.nonempty_names()) if isinstance(trainable, Mask) else list(trainable)
    params = dict(model.named_parameters())
    start = {n: params[n].detach().clone() for n in names}
    last = max(steps) if steps else 0
    rec = SnapshotRecorder(steps, names)

    def callback(step: int, m: Classifier) -> None:
        rec(step, m)
        if stop_early and step >= last:
            raise _StopTraining

    res = None
    try:
        res = train(model, train_data, recipe, trainable, dev_data=dev_data, seed=seed, linearized=linearized,
                    progress=progress, callback=callback)
    except _StopTraining:
        pass
    finally:
        with torch.no_grad():
            for n in names:
                params[n].copy_(start[n])
        model.eval()
        for p in params.values():
            p.requires_grad_(False)
            p.grad = None
    return res, {0: start, **rec.snapshots}


def _class_gradients(model: Classifier, batch: dict[str, torch.Tensor], task: str, names: Sequence[str],
                     overrides: Mapping[str, torch.Tensor] | None, c: int) -> dict[str, torch.Tensor]:
    """∇_θ z_c(x) per example of ``batch``, ``{name: [B, *shape]}``: one row of the output Jacobian (vmap, with the
    per-example loop as fallback)."""
    b = dict(batch)
    b["labels"] = torch.full_like(batch["labels"], c)
    try:
        return per_example_grads(model, b, task, names, logit_target, overrides)
    except RuntimeError:
        return per_example_grads_loop(model, b, task, names, logit_target, overrides)


def _squared_norm(grads: Mapping[str, torch.Tensor], names: Sequence[str],
                  minus: Mapping[str, torch.Tensor] | None = None) -> torch.Tensor:
    """Per example, Σ_names ‖grads − minus‖² in float64 ([B])."""
    return sum((grads[n].double() - (minus[n].double() if minus is not None else 0)).pow(2).flatten(1).sum(1)
               for n in names)


def gradient_drift(model: Classifier, examples: Sequence[Example], task: str,
                   checkpoints: Mapping[int, Mapping[str, torch.Tensor]], names: Sequence[str] | None = None,
                   reference: Mapping[str, torch.Tensor] | None = None, chunk_size: int = 4) -> list[dict]:
    """P2 Fig. 7: E_x ‖J_i(x) − J_0(x)‖²_F / ‖J_0(x)‖²_F for each checkpoint i (J = ∂ logits / ∂θ over ``names``).

    ``checkpoints[step]`` are parameter overrides (θ^(i) on the trained tensors); ``reference`` = θ0 overrides
    (default: the model's own parameters).  The Jacobian is taken w.r.t. ``names`` (default: the maskable set,
    the same for every method so the numbers compare), every output class, eval mode.  Returns one row per
    checkpoint: ``step``, ``rel_change`` (mean over examples of the per-example ratio), ``abs_change`` and
    ``rel_per_example`` (the ratio of each example, in order: what a paired bootstrap over examples resamples).
    """
    if not examples:
        raise ValueError("no examples")
    names = list(model.maskable_names() if names is None else names)
    n_classes = model.specs[task].num_labels
    steps = sorted(checkpoints)
    rel = {s: [] for s in steps}
    absd = {s: [] for s in steps}
    overrides = {s: {**(reference or {}), **checkpoints[s]} for s in steps}
    for chunk in chunks(list(examples), chunk_size):
        batch = model.tokenize(task, chunk)
        # one output class at a time: its gradient at θ0 and at every checkpoint, summed into the norms, then
        # dropped (the whole Jacobian of a chunk would be classes x examples x parameters: 276 GB for Cars on
        # ViT-B/32 at the paper's chunk of 4)
        norm0 = torch.zeros(len(chunk), dtype=torch.float64)
        diff = {s: torch.zeros(len(chunk), dtype=torch.float64) for s in steps}
        for c in range(n_classes):
            g0 = _class_gradients(model, batch, task, names, reference, c)
            norm0 += _squared_norm(g0, names).cpu()
            for s in steps:
                diff[s] += _squared_norm(_class_gradients(model, batch, task, names, overrides[s], c), names,
                                         minus=g0).cpu()
            del g0
        for s in steps:
            rel[s].extend((diff[s] / norm0.clamp_min(1e-30)).tolist())
            absd[s].extend(diff[s].tolist())
    return [{"step": s, "rel_change": sum(rel[s]) / len(rel[s]), "abs_change": sum(absd[s]) / len(absd[s]),
             "n_examples": len(rel[s]), "rel_per_example": rel[s]} for s in steps]


# --- Workbench drivers (the P2 method zoo's runs) ---------------------------------------------------------
#: methods whose trained function is linear in its parameters: the output Jacobian never changes
LINEAR_BY_CONSTRUCTION = ("linearized",)


def zoo_trainable(wb: "Workbench", task: str, method: str, seed: int | None = None) -> Sequence[str] | Mask:
    """The trainable set :func:`repro.p2.methods.finetune_method` trains for ``method`` (ft, lota, talos)."""
    if method == "ft":
        return wb.names(ft_scope(wb.profile))
    if method == "lota":
        return lota_mask_from(wb, finetune_method(wb, task, "ft", seed=seed))
    if method == "talos":
        return talos_mask(wb, task, seed=seed)[0]
    raise ValueError(f"gradient drift is measured for ft, lota and talos (linearized: 0 by construction; "
                     f"l-lora trains adapter factors, not the backbone); got {method!r}")


def _example_key(example, index: int) -> list:
    """What identifies one evaluation example in a cache key: its texts and label, or (images) a digest of the
    preprocessed tensor / the file path / its position (lazy hub images, drawn deterministically)."""
    if hasattr(example, "text_a"):
        return [example.text_a, example.text_b, example.label]

    img = example.image
    if isinstance(img, torch.Tensor):
        ident = hashlib.sha256(img.detach().float().cpu().numpy().tobytes()).hexdigest()[:16]
    elif isinstance(img, (str, bytes)) or hasattr(img, "__fspath__"):
        ident = str(img)
    else:
        ident = f"item:{index}"
    return [ident, None, example.label]


def constant_drift(steps: Sequence[int], n_examples: int) -> list[dict]:
    """The Fig. 7 rows of a method linear by construction (:data:`LINEAR_BY_CONSTRUCTION`): its Jacobian is J_θ0 at
    every step, so the drift is 0 at step 0 and at each of ``steps`` (no job: nothing to compute)."""
    return [{"step": s, "rel_change": 0.0, "abs_change": 0.0, "n_examples": n_examples,
             "rel_per_example": [0.0] * n_examples, "note": "0 by construction"}
            for s in [0, *sorted({int(s) for s in steps})]]


def drift_scope(profile, method: str) -> dict[str, str]:
    """What a drift run's job kwargs and cache key hold of the zoo's FT scope (:func:`repro.p2.methods.ft_scope`):
    ``{"ft_scope": "all"}`` for FT and LoTA (whose mask comes from the FT run) when the family's FT trains more
    than the maskable set, else nothing (the keys made before the scope existed stay valid)."""
    scope = ft_scope(profile)
    return {"ft_scope": scope} if method in ("ft", "lota") and scope != "maskable" else {}


def drift_curve(wb: "Workbench", task: str, method: str, steps: Sequence[int], examples: Sequence[Example],
                seed: int | None = None, chunk_size: int = 4) -> list[dict]:
    """P2 Fig. 7 for one zoo method: relative output-Jacobian change after each of ``steps`` (cached JSON).

    The checkpoints are those of the zoo's own run of ``method`` on ``task`` (same data, recipe, seed and
    trainable set as :func:`repro.p2.methods.finetune_method`), replayed up to ``max(steps)``; the Jacobian is taken
    over the whole maskable set on ``examples``.  Linearized FT returns zeros (its Jacobian is J_θ0 throughout).
    """

    seed = wb.seed if seed is None else seed
    steps = sorted({int(s) for s in steps})
    if method in LINEAR_BY_CONSTRUCTION:
        return constant_drift(steps, len(examples))
    recipe = p2_recipe(wb.profile, method)
    trainable = zoo_trainable(wb, task, method, seed)
    mask_key = trainable.count() if isinstance(trainable, Mask) else len(trainable)
    config = {"task": task, "method": method, "steps": steps, "seed": seed, "recipe": asdict(recipe),
              "trainable": mask_key, "examples": [_example_key(e, i) for i, e in enumerate(examples)],
              **drift_scope(wb.profile, method), **wb.data_key()}
    data = wb.task(task, seed=seed)

    def compute() -> tuple[list[dict], dict]:
        _, snaps = train_with_snapshots(wb.model, {task: data.train}, recipe, trainable, steps, seed=seed)
        wb.restore_pre()
        return gradient_drift(wb.model, examples, task, snaps, wb.names("maskable"), chunk_size=chunk_size), {}

    return wb.cached("p2-drift", config, compute, JSON)[0]


register_driver("repro.p2.linear_regime.drift_curve",
                lambda wb, k, value: drift_curve(wb, k["task"], k["method"], k["steps"],
                                                 eval_subset(wb, k["task"], k["examples"]), seed=k["seed"]),
                pair=False)
