"""P2 §4.1 and App. A.7: are the least-sensitive parameters the same for every task?  (Figs. 1, 10, 11)

For each task t, the ``fraction`` (10 %) of maskable entries with the lowest diagonal Fisher (P2 Eq. 7, sampled
labels, on t's training inputs only) form the mask M_t (:func:`low_sensitivity_masks`, cached).  Then

- Fig. 1: prune M_t (set to 0) and evaluate the zero-shot model on every task t';
- Fig. 10: perturb M_t with Gaussian noise of standard deviation 2σ (σ = std of the selected weights);
- Fig. 11: IoU of M_t and M_t' for every pair.

Heatmap cells are accuracy ratios acc(pruned / perturbed model on t') / acc(pre-trained model on t').  A random
10 % mask is evaluated alongside as a reference (what "any 10 %" does), not part of the paper's figures.
The primitives are here (:func:`lowest_sensitivity_mask`, :func:`prune`, :func:`perturb`, :func:`selection_stats`),
on top of :func:`repro.core.fisher.diagonal_fisher`.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Mapping, Sequence

import pandas as pd
import torch

from repro.core.checks import check_fraction
from repro.core.fisher import diagonal_fisher
from repro.core.masks import Mask
from repro.data import Example, fixed_subset
from repro.models.base import Classifier
from repro.core.evaluation import score
from repro.p2.methods import calibration_examples, calibration_key
from repro.workbench import MASK
from repro.jobcall import register_driver

if TYPE_CHECKING:  # pragma: no cover
    from repro.jobs import Artifacts
    from repro.workbench import Workbench

RANDOM_SOURCE = "random 10%"


# --- the primitives: select, prune, perturb -------------------------------------------------------------
def lowest_sensitivity_mask(model: Classifier, examples: Sequence[Example], task: str,
                            names: Sequence[str] | None = None, fraction: float = 0.1, target: str = "logprob",
                            batch_size: int = 16, seed: int = 0, overrides: Mapping[str, torch.Tensor] | None = None,
                            method: str = "auto", progress: bool = True, exclude_zero: bool = False) -> Mask:
    """P2 §4.1 (Fig. 1, 10, 11): the ``fraction`` of entries with the lowest Eq. 7 Fisher (one round, sampled labels).

    ``exclude_zero`` (TalosRecipe.exclude_zero): exact-zero scores (dead units) are never selected; the fraction
    is still of all entries, taken from the others."""
    check_fraction(fraction, "fraction")
    scores = diagonal_fisher(model, examples, task, names, target=target, label_source="sampled",
                             batch_size=batch_size, seed=seed, overrides=overrides, method=method, progress=progress)
    if exclude_zero:  # a NaN score is never selected (Mask.top_k)
        scores = {n: s.masked_fill(s == 0, float("nan")) for n, s in scores.items()}
    return Mask.top_fraction(scores, fraction, largest=False)


def prune(params: Mapping[str, torch.Tensor], mask: Mask) -> dict[str, torch.Tensor]:
    """P2 Fig. 1: overrides with the selected entries set to zero (over the mask's eligible tensors)."""
    out = {}
    for n in mask.shapes:
        p = params[n].detach()
        out[n] = torch.where(mask.tensors[n].to(p.device), torch.zeros((), dtype=p.dtype, device=p.device), p)
    return out


def selection_stats(params: Mapping[str, torch.Tensor], mask: Mask) -> dict[str, float]:
    """P2 Fig. 10 caption: mean |w| and (population) std of the selected entries, before any noise."""
    vals = torch.cat([params[n].detach().reshape(-1)[mask.tensors[n].reshape(-1).to(params[n].device)].double().cpu()
                      for n in mask.shapes])
    if vals.numel() == 0:
        return {"count": 0, "mean_abs": 0.0, "std": 0.0}
    return {"count": int(vals.numel()), "mean_abs": float(vals.abs().mean()),
            "std": float(vals.std(correction=0))}


def perturb(params: Mapping[str, torch.Tensor], mask: Mask, std_scale: float = 2.0, seed: int = 0,
            per_tensor: bool = False, literal_covariance: bool = False) -> dict[str, torch.Tensor]:
    """P2 App. A.7 / Fig. 10: overrides adding Gaussian noise to the selected entries only.

    σ = std of the selected entries before perturbation (pooled over all tensors, or per tensor with
    ``per_tensor``).  Default: noise ~ N(0, (std_scale·σ)²), i.e. standard deviation 2σ.  The paper writes
    "N(0, 2σI)", which read literally as a covariance is variance 2σ (std √(2σ), not scale-consistent);
    ``literal_covariance=True`` gives that reading (std = √(std_scale·σ)).
    """
    gen = torch.Generator().manual_seed(int(seed))
    pooled = selection_stats(params, mask)["std"]
    out = {}
    for n in mask.shapes:
        p = params[n].detach()
        sel = mask.tensors[n].to(p.device)
        if per_tensor:
            v = p[sel].double()
            sigma = float(v.std(correction=0)) if v.numel() else 0.0
        else:
            sigma = pooled
        std = math.sqrt(std_scale * sigma) if literal_covariance else std_scale * sigma
        noise = torch.randn(p.shape, generator=gen, dtype=torch.float32).to(p.device, p.dtype) * std
        out[n] = torch.where(sel, p + noise, p)
    return out


# --- the experiments (cached) ---------------------------------------------------------------------------


def low_sensitivity_mask(wb: "Workbench", task: str, n_examples: int, fraction: float = 0.1,
                         seed: int | None = None) -> tuple[Mask, dict]:
    """P2 §4.1: the ``fraction`` of maskable entries with the lowest Eq. 7 Fisher on ``task`` (cached)."""
    seed = wb.seed if seed is None else seed
    config = {"kind": "low-sensitivity", "task": task, "n": n_examples, "fraction": fraction, "seed": seed,
              "k": wb.profile.k_shot, "target": "logprob", **wb.data_key(),
              **({"exclude_zero": True} if wb.profile.talos.exclude_zero else {}), **calibration_key(wb)}

    def compute() -> tuple[Mask, dict]:
        examples = calibration_examples(wb, task, n_examples, seed=seed)
        start = time.perf_counter()
        mask = lowest_sensitivity_mask(wb.model, examples, task, wb.names("maskable"), fraction=fraction,
                                       target="logprob", seed=seed, progress=False,
                                       exclude_zero=wb.profile.talos.exclude_zero)
        return mask, {"seconds": time.perf_counter() - start, "n_examples": len(examples)}

    return wb.cached("mask", config, compute, MASK)


def low_sensitivity_masks(jobs: "Artifacts") -> dict[str, Mask]:
    """``{task: M_task}``: the chapter's declared low-sensitivity masks (its ``jobs()``), each loaded or computed."""
    return {spec.kwargs["task"]: jobs.value(spec) for spec in jobs.select(kind="mask")}


def random_mask(wb: "Workbench", fraction: float = 0.1, seed: int = 0) -> Mask:
    """A uniformly random ``fraction`` of the maskable entries (the reference row)."""
    shapes = wb.shapes("maskable")
    total = sum(wb.pre[n].numel() for n in shapes)
    return Mask.random(shapes, int(fraction * total), seed=seed)


def eval_sets(wb: "Workbench", tasks: Sequence[str], n_eval: int, seed: int | None = None) -> dict[str, list[Example]]:
    """A label-balanced subset of ``n_eval`` test examples per task (0 = the whole test split)."""
    seed = wb.seed if seed is None else seed
    return {t: fixed_subset(wb.task(t, seed=seed).test, n_eval) for t in tasks}


def _acc(wb: "Workbench", task: str, examples: Sequence[Example], overrides) -> float:
    return score(wb.predict(task, "test", overrides, examples=examples), wb.model.specs[task].metric)["value"]


def edit_matrix(wb: "Workbench", masks: Mapping[str, Mask], sets: Mapping[str, Sequence[Example]],
                edit: str = "prune", std_scale: float = 2.0, seed: int = 0) -> pd.DataFrame:
    """Figs. 1 / 10 as long-form rows: for each mask source s and evaluation task t, the accuracy of the edited
    pre-trained model on t and its ratio to the unedited accuracy.

    ``edit="prune"``: the masked entries are set to 0 (:func:`prune`); ``"perturb"``: noise of std
    ``std_scale``·σ is added to them (:func:`perturb`, σ pooled over the selected entries).
    Columns: source, task, acc, acc_pre, ratio, plus mean_abs / std of the selected weights (Fig. 10 caption).
    """

    if edit not in ("prune", "perturb"):
        raise ValueError(f"unknown edit {edit!r}; choose prune or perturb")
    pre = {t: _acc(wb, t, ex, None) for t, ex in sets.items()}
    rows = []
    for s, mask in masks.items():
        stats = selection_stats(wb.pre, mask)
        over = prune(wb.pre, mask) if edit == "prune" else perturb(wb.pre, mask, std_scale=std_scale, seed=seed)
        for t, ex in sets.items():
            acc = _acc(wb, t, ex, over)
            rows.append({"source": s, "task": t, "edit": edit, "acc": acc, "acc_pre": pre[t],
                         "ratio": acc / pre[t] if pre[t] > 0 else float("nan"),
                         "mean_abs": stats["mean_abs"], "std": stats["std"]})
        del over
    return pd.DataFrame(rows)


def iou_matrix(masks: Mapping[str, Mask]) -> pd.DataFrame:
    """Fig. 11: IoU |M_a ∩ M_b| / |M_a ∪ M_b| for every ordered pair of tasks (long form: a, b, iou)."""
    names = list(masks)
    return pd.DataFrame([{"a": a, "b": b, "iou": masks[a].iou(masks[b])} for a in names for b in names])


def mean_off_diagonal(df: pd.DataFrame, row: str, col: str, value: str) -> float:
    """Mean of ``value`` over the cells with ``row != col`` (pairs of different tasks)."""
    off = df[df[row] != df[col]]
    return float(off[value].mean()) if len(off) else float("nan")


register_driver("repro.p2.sensitivity.runs.low_sensitivity_mask",
                lambda wb, k, value: low_sensitivity_mask(wb, k["task"], k["n"], k["fraction"], k["seed"]))
