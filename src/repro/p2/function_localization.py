"""Where task vectors live and where they act (P2 §5.2-5.3 and the "beyond the paper" comparisons).

- :func:`eval_subset` — the fixed, label-balanced evaluation subset every analysis here scores on (small in the
  cpu profile, all of the test split in the paper profile).
- :func:`function_localization` — P2 Fig. 3: accuracy of θ0 + τ_i on every task j, as a ratio to the pre-trained
  model's accuracy on j.  Function localization (P2 Eq. 6) predicts ratio > 1 on the diagonal and = 1 off it.
- :func:`disentanglement_grid` — P2 Fig. 2: the weight-disentanglement error ξ(α1, α2) of a task pair on a grid
  (:func:`disentanglement_error`, evaluated on the linearized network for linearized methods).
- :func:`mask_overlap_rows` — IoU and containment of masks of different origin on the same task (P1 graft
  regions, P2 TaLoS / LoTA masks, FISH masks), next to what random masks of the same sizes would give.

The per-layer / per-type structure of a mask (P2 Fig. 4-5) is :meth:`repro.core.masks.Mask.placement`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np
import torch

from repro.core.evaluation import predict, score
from repro.core.fisher import fish_masks as core_fish_masks
from repro.core.masks import Mask
from repro.core.taskvec import Tensors, TaskVector
from repro.data import Example, fixed_subset
from repro.models.base import Classifier
from repro.progress import progress_bar

if TYPE_CHECKING:  # pragma: no cover
    from repro.workbench import Workbench


def eval_subset(wb: "Workbench", task: str, n: int | None, split: str = "test", seed: int = 0) -> list[Example]:
    """A label-balanced, seeded subset of ``n`` examples of ``task``'s ``split`` (``n`` None or 0: the whole split)."""
    return fixed_subset(wb.task(task).split(split), n, seed=seed)


def _linear_base(wb: "Workbench", vector: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {n: wb.pre[n] for n in vector}


def _value(wb: "Workbench", task: str, examples: Sequence[Example], vector: Mapping[str, torch.Tensor] | None,
           linear: bool) -> float:
    over = wb.overrides(vector) if vector else None
    kw = {"linear_base": _linear_base(wb, vector)} if (linear and vector) else {}
    pred = wb.predict(task, overrides=over, examples=examples, **kw)
    return score(pred, wb.model.specs[task].metric)["value"]


def function_localization(wb: "Workbench", vectors: Mapping[str, Mapping[str, torch.Tensor]], tasks: Sequence[str],
                          examples: Mapping[str, Sequence[Example]], linear: bool = False,
                          pre_scores: Mapping[str, float] | None = None) -> list[dict]:
    """P2 Fig. 3: one row per (fine-tuned on ``ft_task``, evaluated on ``eval_task``) with the task metric of
    θ0 + τ_ft_task, the pre-trained metric and their ratio.

    ``vectors[task]`` is the task vector fine-tuned on ``task``; ``linear`` evaluates the linearized network
    (Linearized FT, L-LoRA).  ``pre_scores`` (metric of θ0 per task) is computed when not given.
    """
    missing = [t for t in tasks if t not in vectors or t not in examples]
    if missing:
        raise KeyError(f"no task vector or evaluation examples for {missing}")
    pre = dict(pre_scores or {})
    for t in tasks:
        if t not in pre:
            pre[t] = _value(wb, t, examples[t], None, False)
    rows = []
    for i in tasks:
        for j in tasks:
            acc = _value(wb, j, examples[j], vectors[i], linear)
            rows.append({"ft_task": i, "eval_task": j, "value": acc, "pre": pre[j],
                         "ratio": acc / pre[j] if pre[j] > 0 else float("nan"), "diagonal": i == j})
    return rows


def localization_summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """Mean ratio on / off the diagonal and the mean |ratio − 1| off it (0 = perfectly localized).

    Undefined ratios (θ0 scores 0 on the evaluation task, e.g. a random-init smoke model) are left out."""
    on = [r["ratio"] for r in rows if r["diagonal"] and np.isfinite(r["ratio"])]
    off = [r["ratio"] for r in rows if not r["diagonal"] and np.isfinite(r["ratio"])]
    return {"diag_mean": float(np.mean(on)) if on else float("nan"),
            "off_mean": float(np.mean(off)) if off else float("nan"),
            "off_abs_dev": float(np.mean([abs(x - 1.0) for x in off])) if off else float("nan"),
            "off_min": float(np.min(off)) if off else float("nan")}


def disentanglement_error(model: Classifier, pre: Tensors, tau1: TaskVector, tau2: TaskVector,
                          data1: Sequence[Example], data2: Sequence[Example], task1: str, task2: str,
                          grid: Sequence[float], grid2: Sequence[float] | None = None, *, batch_size: int = 64,
                          progress: bool = True, linear_base: Mapping[str, torch.Tensor] | None = None,
                          per_example: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P2 Eq. 10 (Ortiz-Jiménez et al. 2023): ξ(α1, α2) = Σ_t E_{D_t} 1[f_t(θ0+α_tτ_t) ≠ f_t(θ0+α1τ1+α2τ2)].

    ``f_t`` is the arg-max prediction with task t's own head.  Returns an array [len(grid), len(grid2)] whose
    entry (i, j) is ξ(grid[i], grid2[j]) (``grid2`` defaults to ``grid``); values lie in [0, 2].

    With ``linear_base`` (θ0 over the parameters the vectors touch) ``f`` is the linearized network (Linearized
    FT, L-LoRA), which is exactly linear in its offset: f(θ0 + α1τ1 + α2τ2) = f(θ0) + α1·Jτ1 + α2·Jτ2.  The
    tangent logits Jτ1, Jτ2 are computed once per task's data (one jvp pass each) and every grid point is that
    sum, as :class:`repro.p2.evaluator.Evaluator` scores linearized vectors.

    With ``per_example`` it returns ``(ξ, d1, d2)``: ``d_t[x]`` is the share of grid points at which example x of
    task t is predicted differently (from the same predictions), so the grid mean of ξ is mean(d1) + mean(d2).
    """
    g1 = [float(a) for a in grid]
    g2 = g1 if grid2 is None else [float(a) for a in grid2]
    u1, u2 = tau1 + tau2 * 0.0, tau1 * 0.0 + tau2  # both over the union of names: every eval overrides the same set
    if linear_base is not None:
        missing = sorted(set(u1.names) - set(linear_base))
        if missing:
            raise KeyError(f"linear_base has no θ0 for {missing[:5]}; pass θ0 for every parameter of τ1 and τ2")
        out, d1, d2 = _linear_disentanglement(model, pre, u1, u2, data1, data2, task1, task2, g1, g2,
                                              batch_size=batch_size, linear_base=linear_base)
        return (out, d1, d2) if per_example else out

    def preds(vec: TaskVector, data: Sequence[Example], task: str) -> torch.Tensor:
        return predict(model, data, task, vec.apply(pre, 1.0), batch_size=batch_size).preds

    single1 = [preds(u1 * a, data1, task1) for a in g1]
    single2 = [preds(u2 * b, data2, task2) for b in g2]
    out = np.zeros((len(g1), len(g2)))
    d1, d2 = np.zeros(len(data1)), np.zeros(len(data2))
    bar = progress_bar(total=len(g1) * len(g2), enabled=progress, desc="disentanglement", leave=False)
    for i, a in enumerate(g1):
        for j, b in enumerate(g2):
            both = u1 * a + u2 * b
            x1 = (preds(both, data1, task1) != single1[i]).double().cpu().numpy()
            x2 = (preds(both, data2, task2) != single2[j]).double().cpu().numpy()
            out[i, j] = x1.mean() + x2.mean()
            d1 += x1
            d2 += x2
            bar.update(1)
    bar.close()
    cells = len(g1) * len(g2)
    return (out, d1 / cells, d2 / cells) if per_example else out


def _linear_disentanglement(model: Classifier, pre: Tensors, u1: TaskVector, u2: TaskVector,
                            data1: Sequence[Example], data2: Sequence[Example], task1: str, task2: str,
                            g1: Sequence[float], g2: Sequence[float], *, batch_size: int,
                            linear_base: Mapping[str, torch.Tensor]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ξ of P2 Eq. 10 on the linearized network, from f(θ0) and the tangent logits Jτ1, Jτ2 on each task's data,
    with each example's share of grid points that disagree (``(ξ, d1, d2)`` of :func:`disentanglement_error`)."""
    base = {n: linear_base[n] for n in u1.names}

    def parts(data: Sequence[Example], task: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        zero = predict(model, data, task, None, batch_size=batch_size).logits
        j1 = predict(model, data, task, u1.apply(pre, 1.0), batch_size=batch_size, linear_base=base).logits - zero
        j2 = predict(model, data, task, u2.apply(pre, 1.0), batch_size=batch_size, linear_base=base).logits - zero
        return zero, j1, j2

    z1, a1, b1 = parts(data1, task1)
    z2, a2, b2 = parts(data2, task2)
    out = np.zeros((len(g1), len(g2)))
    d1, d2 = np.zeros(len(data1)), np.zeros(len(data2))
    for i, a in enumerate(g1):
        single1 = (z1 + a * a1).argmax(-1)
        for j, b in enumerate(g2):
            single2 = (z2 + b * b2).argmax(-1)
            x1 = ((z1 + a * a1 + b * b1).argmax(-1) != single1).double().cpu().numpy()
            x2 = ((z2 + a * a2 + b * b2).argmax(-1) != single2).double().cpu().numpy()
            out[i, j] = x1.mean() + x2.mean()
            d1 += x1
            d2 += x2
    cells = len(g1) * len(g2)
    return out, d1 / cells, d2 / cells


def disentanglement_grid(wb: "Workbench", tau1: Mapping[str, torch.Tensor], tau2: Mapping[str, torch.Tensor],
                         task1: str, task2: str, examples1: Sequence[Example], examples2: Sequence[Example],
                         grid: Sequence[float], linear: bool = False,
                         ) -> tuple[list[dict], tuple[list[float], list[float]]]:
    """P2 Fig. 2: ξ(α1, α2) on ``grid`` × ``grid`` as rows ``{alpha1, alpha2, xi}`` (ξ ∈ [0, 2]), and each
    example's share of grid points that disagree, ``(d1 over examples1, d2 over examples2)``.

    ``linear`` evaluates every combination on the linearized network around θ0 (Linearized FT, L-LoRA), in the
    exact tangent-logit form of :func:`disentanglement_error`.
    """
    kw = {"linear_base": {n: wb.pre[n] for n in set(tau1) | set(tau2)}} if linear else {}
    xi, d1, d2 = disentanglement_error(wb.model, wb.pre, TaskVector(dict(tau1)), TaskVector(dict(tau2)), examples1,
                                       examples2, task1, task2, list(grid), batch_size=wb.profile.eval_batch_size,
                                       progress=False, per_example=True, **kw)
    return ([{"alpha1": float(a), "alpha2": float(b), "xi": float(xi[i, j])}
             for i, a in enumerate(grid) for j, b in enumerate(grid)], (d1.tolist(), d2.tolist()))


def grid_summary(rows: Sequence[Mapping]) -> dict[str, float]:
    """Mean ξ over the whole grid, over the addition quadrant (α1, α2 ≥ 0, where task addition searches) and over
    the |α| ≤ 1 square."""
    def mean(sel):
        vals = [r["xi"] for r in rows if sel(r)]
        return float(np.mean(vals)) if vals else float("nan")

    return {"xi_mean": mean(lambda r: True),
            "xi_addition": mean(lambda r: r["alpha1"] >= 0 and r["alpha2"] >= 0),
            "xi_unit": mean(lambda r: abs(r["alpha1"]) <= 1 + 1e-9 and abs(r["alpha2"]) <= 1 + 1e-9)}


def _on_common_set(masks: Mapping[str, Mask]) -> dict[str, Mask]:
    """The masks restricted to the parameters all of them are defined on (P1's graftable set and P2's maskable
    set differ for T5 / CLIP: the final layer norms, the patch embedding); unchanged when the sets agree."""
    common = set.intersection(*(set(m.shapes) for m in masks.values())) if masks else set()
    out = {}
    for k, m in masks.items():
        if set(m.shapes) == common:
            out[k] = m
        else:
            keep = [n for n in m.shapes if n in common]
            out[k] = Mask({n: m.tensors[n] for n in keep}, {n: m.shapes[n] for n in keep})
    return out


def mask_overlap_rows(masks: Mapping[str, Mask], **labels: object) -> list[dict]:
    """Pairwise comparison of masks over the same eligible set: one row per ordered pair (a, b), a ≠ b.

    ``iou`` = |a ∩ b| / |a ∪ b|; ``containment`` = |a ∩ b| / |a| (how much of a lies inside b);
    ``iou_random`` / ``containment_random`` are the expected values for independent uniformly random masks of
    the same sizes (containment: density of b; IoU: pq / (p + q − pq) with densities p, q).
    """
    names = list(masks)
    masks = _on_common_set(masks)
    rows = []
    for a in names:
        for b in names:
            if a == b:
                continue
            ma, mb = masks[a], masks[b]
            inter = (ma & mb).count()
            union = (ma | mb).count()
            p, q = ma.density(), mb.density()
            rows.append({**labels, "a": a, "b": b, "count_a": ma.count(), "count_b": mb.count(),
                         "density_a": p, "density_b": q, "iou": inter / union if union else 1.0,
                         "containment": inter / max(ma.count(), 1),
                         "iou_random": (p * q) / (p + q - p * q) if (p + q - p * q) > 0 else 0.0,
                         "containment_random": q})
    return rows


#: weight-matrix groups of a transformer block, as :func:`repro.models.base.module_type` names them
BLOCK_WEIGHT_TYPES: tuple[str, ...] = ("Q", "K", "V", "QKV", "O", "FFN-in", "FFN-out")


def structure_summary(rows: Sequence[Mapping]) -> dict[str, object]:
    """P2 Fig. 4-5 in numbers, from :meth:`repro.core.masks.Mask.placement` rows of one mask.

    ``type_share``: % of each (type, weight/bias) group selected, over all blocks; ``top_weight_types``: the weight
    matrices sorted by that share; ``spread_cv``: coefficient of variation of the weight-matrix shares (0 = the
    mask takes the same fraction of every matrix, i.e. unstructured); ``layer_top``: per block, the weight matrix
    with the largest selected share; ``qk_top_layers``: fraction of blocks whose top matrix is Q or K.
    """
    groups: dict[tuple[str, str], list[int]] = {}
    per_layer: dict[int, dict[str, list[int]]] = {}
    for r in rows:
        g = groups.setdefault((r["type"], r["kind"]), [0, 0])
        g[0] += r["selected"]
        g[1] += r["eligible"]
        if r["kind"] == "weight" and r["type"] in BLOCK_WEIGHT_TYPES and r["layer"] >= 0:
            lt = per_layer.setdefault(r["layer"], {}).setdefault(r["type"], [0, 0])
            lt[0] += r["selected"]
            lt[1] += r["eligible"]
    share = {f"{t} {k}": 100.0 * s / max(e, 1) for (t, k), (s, e) in groups.items()}
    weights = {t: 100.0 * s / max(e, 1) for (t, k), (s, e) in groups.items()
               if k == "weight" and t in BLOCK_WEIGHT_TYPES}
    vals = np.array(list(weights.values())) if weights else np.zeros(1)
    layer_top = {layer: max(types, key=lambda t: types[t][0] / max(types[t][1], 1))
                 for layer, types in sorted(per_layer.items())}
    qk = [t in ("Q", "K") for t in layer_top.values()]
    return {"type_share": share, "top_weight_types": sorted(weights, key=weights.get, reverse=True),
            "weight_share": weights, "spread_cv": float(vals.std() / vals.mean()) if vals.mean() > 0 else 0.0,
            "layer_top": layer_top, "qk_top_layers": float(np.mean(qk)) if qk else float("nan")}


def fish_masks(wb: "Workbench", task: str, densities: Sequence[float],
               examples: Sequence[Example]) -> dict[float, Mask]:
    """FISH masks (Sung et al. 2021; P1 Table 8) of ``task`` over the maskable set, one per density, from one
    empirical Fisher of θ_pre on ``examples`` (:func:`repro.core.fisher.fish_masks`)."""
    wb.restore_pre()
    return core_fish_masks(wb.model, examples, task, wb.names("maskable"), densities, progress=False)
