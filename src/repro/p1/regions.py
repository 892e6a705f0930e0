"""P1 §2-3 and App. B: where a fine-tuned skill lives.  Region baselines and sweeps over region size.

A *region* is a :class:`~repro.core.masks.Mask` over an eligible parameter set; the grafted model is
θ_pre + γ ⊙ τ (P1 Eq. 1, τ = θ_ft − θ_pre), evaluated through overrides.  This module builds and scores the
regions the paper compares:

- ``learned``: the graft learned by P1 Eq. 2-4 on top of γ_base = top-s movement (a chapter's graft job);
- ``movement``: γ_base alone, the top-s entries by |τ| (P1 Fig. 2);
- ``random``: a uniformly random region of the same size (P1 Fig. 2, Table 8);
- ``movement-matched``: the top entries by |τ|, exactly as many as the learned region has (issue 15 §2: the
  learned graft grows past γ_base, so Fig. 2 compares it with top-movement at equal actual size too);
- bias-only versions of the first two (P1 Fig. 4a: the learned graft restricted to the biases);
- lottery-ticket localization (P1 Fig. 4b): θ_ft inside a region of the largest |θ_ft| entries, 0 outside;
- any given mask (FISH, P1 Table 8; the learned region re-trained, P1 Table 1).

Sizes are always reported relative to the *graftable* set (P1's convention), whatever the region's own eligible
set: ``count`` entries, ``density = count / |graftable|`` and ``sparsity_pct = 100 · density``.
:meth:`repro.core.masks.Mask.placement` says where a region's entries sit (per layer and sub-module type, P1 Fig. 9-10).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

import torch

from repro.data import Example, get_spec
from repro.core.evaluation import Predictions, score
from repro.core.fisher import fish_masks
from repro.core.grafting import movement_mask, zero_outside_params
from repro.core.masks import Mask
from repro.core.metrics import agreement
from repro.jobs import SKIPPED, JobSpec, finetune_job, graft_job
from repro.models.base import layer_index
from repro.workbench import MASK, scope_fraction
from repro.jobcall import register_driver

if TYPE_CHECKING:  # pragma: no cover
    from repro.jobs import Artifacts
    from repro.profiles import FinetuneRecipe, GraftRecipe, Profile
    from repro.workbench import Workbench

REGIONS: tuple[str, ...] = ("learned", "movement", "random", "movement-matched")


# --- helpers ----------------------------------------------------------------------------------------
def restrict(vector: Mapping[str, torch.Tensor], shapes: Mapping[str, tuple[int, ...]]) -> dict[str, torch.Tensor]:
    """``vector`` on exactly the tensors of ``shapes`` (zeros where the vector has no entry)."""
    return {n: vector[n] if n in vector else torch.zeros(s) for n, s in shapes.items()}


def graftable_total(wb: "Workbench") -> int:
    """|graftable set|: the denominator of every reported sparsity (P1: the transformer-block parameters)."""
    return sum(int(torch.Size(s).numel()) for s in wb.shapes("graftable").values())


def size_fields(mask: Mask, total: int) -> dict[str, float]:
    """Region size as P1 reports it: entries, density and percentage of the graftable set."""
    c = mask.count()
    return {"count": c, "density": c / total, "sparsity_pct": 100.0 * c / total}


def score_predictions(wb: "Workbench", task: str, pred: Predictions,
                      reference: Predictions | None = None) -> dict[str, float]:
    """Task metric, accuracy, F1 (binary) and ECE as fractions, plus agreement with ``reference`` predictions."""
    out = score(pred, wb.model.specs[task].metric)
    if reference is not None:
        out["agreement"] = agreement(pred.preds, reference.preds)
    return out


def evaluate_overrides(wb: "Workbench", task: str, overrides: Mapping[str, torch.Tensor] | None, *,
                       examples: Sequence[Example] | None = None, reference: Predictions | None = None,
                       split: str = "test") -> tuple[dict[str, float], Predictions]:
    """Score a model given as overrides on ``task`` (``examples`` default to the split); returns (scores, preds)."""
    pred = wb.predict(task, split, overrides, examples=examples)
    return score_predictions(wb, task, pred, reference), pred


def evaluate_region(wb: "Workbench", task: str, vector: Mapping[str, torch.Tensor], mask: Mask, *,
                    examples: Sequence[Example] | None = None, reference: Predictions | None = None,
                    split: str = "test") -> dict[str, float]:
    """P1 Eq. 1 graft θ_pre + γ ⊙ τ scored on ``task`` (fractions), with the region's size fields."""
    scores, _ = evaluate_overrides(wb, task, wb.overrides(vector, mask=mask), examples=examples,
                                   reference=reference, split=split)
    return {**scores, **size_fields(mask, graftable_total(wb))}


# --- region builders --------------------------------------------------------------------------------
def movement_region(wb: "Workbench", vector: Mapping[str, torch.Tensor], sparsity: float,
                    scope: str = "graftable") -> Mask:
    """γ_base: the top entries by |τ| within ``scope``, ``sparsity`` × |graftable| of them (P1 §3.1, Fig. 2)."""
    shapes = wb.shapes(scope)
    return movement_mask(restrict(vector, shapes), scope_fraction(wb, sparsity, scope))


def random_region(wb: "Workbench", count: int, seed: int = 0, scope: str = "graftable") -> Mask:
    """A uniformly random region of ``count`` entries of ``scope`` (P1 Fig. 2, Table 8 "Random Graft")."""
    return Mask.random(wb.shapes(scope), count, seed=seed)


def magnitude_region(wb: "Workbench", vector: Mapping[str, torch.Tensor], density: float) -> Mask:
    """Lottery-ticket region (P1 Fig. 4b): the ``density`` fraction of graftable entries with the largest |θ_ft|."""
    shapes = wb.shapes("graftable")
    theta_ft = {n: (wb.pre[n] + vector[n]) if n in vector else wb.pre[n] for n in shapes}
    return Mask.top_fraction({n: t.abs() for n, t in theta_ft.items()}, density, largest=True)


def fish_regions(wb: "Workbench", task: str, densities: Sequence[float], *, k: int | None = None,
                 seed: int | None = None, batch_size: int = 16) -> dict[float, Mask]:
    """FISH masks (Sung et al. 2021; P1 App. B.4, Table 8) over the graftable set, one per density (cached).

    One empirical Fisher Σ_x (∂ log p(y|x)/∂θ)² of the *pre-trained* model on ``task``'s k-shot training set
    (true labels), then the top-``density`` entries for each density: :func:`repro.core.fisher.fish_masks`.
    """
    seed = wb.seed if seed is None else seed
    p = wb.profile
    data = wb.task(task, k=k, seed=seed)
    base = {"what": "fish", "task": task, "k": k or p.k_shot, "seed": seed, **wb.data_key(),
            "target": "logprob", "labels": "true"}

    out: dict[float, Mask] = {}
    fresh: dict[float, Mask] = {}  # one Fisher, computed for every density on the first one not stored

    def compute(d: float) -> tuple[Mask, dict]:
        if not fresh:
            fresh.update(fish_masks(wb.model, data.train, task, wb.names("graftable"), densities,
                                    batch_size=batch_size, seed=seed, progress=False))
        return fresh[d], {}

    for d in densities:
        out[d] = wb.cached("fish", {**base, "density": d}, lambda d=d: compute(d), MASK)[0]
    return out


# --- one fine-tuned model vs its graft (P1 Table 1-2) ------------------------------------------------------
def ft_and_graft(jobs: "Artifacts", graft: JobSpec, *, examples: Sequence[Example] | None = None) -> dict:
    """P1 Table 2 for one declared graft job: its FT model (the graft's upstream job) and the learned graft on
    γ_base = top-``base``, both scored on ``examples`` (default the test split).

    Returns ``{"tau", "mask", "meta", "ft", "graft", "correct"}``; ``ft`` / ``graft`` are score dicts (fractions)
    with the region size fields, and ``graft["agreement"]`` = share of test examples on which graft and FT agree;
    ``correct`` holds per-example 0/1 arrays ``ft``, ``graft`` (correct) and ``agree`` on the same examples, for
    paired bootstraps (:mod:`repro.report.verdicts`).
    """
    wb, task = jobs.wb, graft.kwargs["task"]
    tau = jobs.value(jobs.deps(graft, "finetune")[0])
    mask, meta = jobs.artifact(graft)
    ft, ft_pred = evaluate_overrides(wb, task, wb.overrides(tau), examples=examples)
    scored, graft_pred = evaluate_overrides(wb, task, wb.overrides(tau, mask=mask), examples=examples,
                                            reference=ft_pred)
    total = graftable_total(wb)
    scored.update(size_fields(mask, total))
    ft.update({"count": total, "density": 1.0, "sparsity_pct": 100.0})
    scored["base_count"] = meta.get("base_count")
    correct = {"ft": ft_pred.correct(),
               "graft": graft_pred.correct(),
               "agree": (graft_pred.preds == ft_pred.preds).to(torch.uint8).cpu().numpy()}
    return {"tau": tau, "mask": mask, "meta": meta, "ft": ft, "graft": scored, "correct": correct}


def retrained_region(jobs: "Artifacts", spec: JobSpec, *, examples: Sequence[Example] | None = None) -> dict:
    """P1 Table 1 for one declared fine-tune job of a region: from θ_pre, only its ``trainable`` entries updated (a
    learned graft region: graft re-training; "bias": BitFit), then scored; ``count`` / ``sparsity_pct`` give the
    number of updated entries and ``correct`` the per-example 0/1 correctness.  An empty learned region trains
    nothing (the job is skipped) and scores as the pre-trained model."""
    wb, task = jobs.wb, spec.kwargs["tasks"][0]
    regions = jobs.deps(spec, "graft")
    region = jobs.value(regions[0]) if regions else None
    out = jobs.artifact(spec)
    tau = None if out is SKIPPED else out[0]
    scores, pred = evaluate_overrides(wb, task, wb.overrides(tau), examples=examples)
    scores["correct"] = pred.correct()  # per example, for bootstraps
    total = graftable_total(wb)
    if region is not None:
        count = region.count()
    else:
        count = sum(int(torch.Size(s).numel()) for s in wb.shapes(spec.kwargs["trainable"]).values())
    return {**scores, "count": count, "density": count / total, "sparsity_pct": 100.0 * count / total}


# --- sweeps -----------------------------------------------------------------------------------------
def sparsity_curve(wb: "Workbench", task: str, vector: Mapping[str, torch.Tensor], sparsities: Iterable[float],
                   regions: Sequence[str] = REGIONS, *, scope: str = "graftable",
                   learned: Mapping[float, Mask] | None = None, random_seeds: Sequence[int] = (0,),
                   examples: Sequence[Example] | None = None, label: str = "") -> list[dict]:
    """P1 Fig. 2 / 3 / 4a / 5: accuracy of learned, movement (γ_base) and random regions vs region size.

    ``learned``: the learned graft of each sparsity (the chapter's declared graft jobs, P1 Eq. 2-4 on γ_base), needed
    when ``regions`` holds "learned".  One row per (sparsity, region[, random seed]): ``task, region, scope, target_sparsity`` (fraction of the
    graftable set asked for), the size fields (of the region actually used: a learned graft may end larger or
    smaller than γ_base), ``value/acc/ece`` (fractions), ``correct`` (per-example 0/1 on ``examples``, for paired
    bootstraps; :func:`plotted` drops it) and ``label`` (e.g. the FT variant).  Random and movement-matched
    regions have the learned region's size when it was learned (random: else γ_base's).
    """
    unknown = set(regions) - set(REGIONS)
    if unknown:
        raise ValueError(f"unknown regions {sorted(unknown)}; choose from {REGIONS}")
    total = graftable_total(wb)
    rows = []
    for s in sparsities:
        base = movement_region(wb, vector, s, scope)
        grafted = None
        if "learned" in regions:
            if learned is None or s not in learned:
                raise ValueError(f"region 'learned' at sparsity {s}: pass its graft (the chapter's graft job) in "
                                 "learned")
            grafted = learned[s]
        for region in regions:
            if region == "random":
                size = grafted.count() if grafted is not None else base.count()
                masks = [(seed, random_region(wb, size, seed, scope)) for seed in random_seeds]
            elif region == "movement-matched":
                if grafted is None:
                    raise ValueError("region 'movement-matched' has the learned region's size: add 'learned'")
                shapes = wb.shapes(scope)
                scores = {n: d.abs() for n, d in restrict(vector, shapes).items()}
                masks = [(None, Mask.top_k(scores, grafted.count()))]
            else:
                masks = [(None, grafted if region == "learned" else base)]
            for seed, mask in masks:
                scores, pred = evaluate_overrides(wb, task, wb.overrides(vector, mask=mask), examples=examples)
                rows.append({"task": task, "label": label, "region": region, "scope": scope,
                             "target_sparsity": s, "random_seed": seed, "base_count": base.count(),
                             **size_fields(mask, total), "value": scores["value"], "acc": scores["acc"],
                             "ece": scores["ece"],
                             "correct": pred.correct()})
    return rows


def plotted(rows: Iterable[Mapping]) -> list[dict]:
    """Curve rows without their per-example ``correct`` arrays (what a results file stores for a figure)."""
    return [{k: v for k, v in r.items() if k != "correct"} for r in rows]


def lottery_curve(wb: "Workbench", task: str, vector: Mapping[str, torch.Tensor], densities: Iterable[float], *,
                  examples: Sequence[Example] | None = None) -> list[dict]:
    """P1 Fig. 4b: lottery-ticket localization without re-training vs grafting the same region.

    For each density d the region is the top-d graftable entries by |θ_ft| (magnitude pruning, the lottery-ticket
    criterion); ``zero_outside`` keeps θ_ft inside and sets the rest of the graftable set to 0, ``graft`` keeps
    θ_pre outside (P1 Eq. 1).  Rows: ``task, density, count, method, value, acc, ece`` and the per-example 0/1
    ``correct`` (for the claim's bootstrap; :func:`plotted` drops it).
    """
    total = graftable_total(wb)
    rows = []
    shapes = wb.shapes("graftable")
    delta = restrict(vector, shapes)
    for d in densities:
        region = magnitude_region(wb, vector, d)
        wb.restore_pre()
        lottery = zero_outside_params(wb.model, delta, region)
        for method, ov in (("zero_outside", lottery), ("graft", wb.overrides(vector, mask=region))):
            r, pred = evaluate_overrides(wb, task, ov, examples=examples)
            rows.append({"task": task, "method": method, "target_density": d, **size_fields(region, total),
                         "value": r["value"], "acc": r["acc"], "ece": r["ece"],
                         "correct": pred.correct()})
    return rows


# --- where the region sits (P1 Fig. 9-10; the per-group table is repro.core.masks.Mask.placement) ------
def middle_layer_share(mask: Mask) -> dict[str, float]:
    """Share of a region in the first / middle / last third of the layers (P1 Fig. 9 "middle layers" claim)."""
    layers = sorted({li for n in mask.tensors if (li := layer_index(n)) is not None})
    if not layers:
        raise ValueError("mask has no per-layer tensors")
    n = len(layers)
    thirds = {"first": layers[: n // 3], "middle": layers[n // 3 : n - n // 3], "last": layers[n - n // 3 :]}
    counts = {k: 0 for k in thirds}
    for name, t in mask.tensors.items():
        li = layer_index(name)
        for k, ls in thirds.items():
            if li in ls:
                counts[k] += int(t.sum())
    total = max(sum(counts.values()), 1)
    out = {f"{k}_share": v / total for k, v in counts.items()}
    out.update({f"{k}_layers": len(v) for k, v in thirds.items()})
    return out


# --- the jobs of the FT + graft pair every P1 chapter shares (repro.jobs; declared beside ft_and_graft) ------------
def n_classes(task: str) -> int:
    """The number of labels of ``task`` (a graft job's head size)."""
    return get_spec(task).num_labels


def ft_and_graft_jobs(profile: Profile, notebook: str, task: str, *, k: int | None = None, seed: int = 13,
                      base: float | None = None, graft: GraftRecipe | None = None,
                      recipe: FinetuneRecipe | None = None, role: str = "") -> tuple[JobSpec, JobSpec]:
    """:func:`repro.p1.regions.ft_and_graft`: the FT model and its learned graft on γ_base = top-``base`` (both with
    ``role``)."""
    base = profile.graft_base_sparsity if base is None else base
    ft = finetune_job(profile, notebook, task, recipe or profile.p1_finetune, k=k, seed=seed, role=role)
    return ft, graft_job(profile, notebook, task, ft, base, k=k, seed=seed, recipe=graft, n_classes=n_classes(task),
                         role=role)


def _fish_job(wb: "Workbench", k: dict, value: Any) -> dict[float, Mask]:
    total = graftable_total(wb)  # the FISH densities that select exactly the learned regions' counts
    learned = [value(i) for i in k["matched_to"]]
    return fish_regions(wb, k["task"], sorted({(m.count() + 0.5) / total for m in learned}), k=k["k"], seed=k["seed"])


register_driver("repro.p1.regions.fish_regions", _fish_job, pair=False)
