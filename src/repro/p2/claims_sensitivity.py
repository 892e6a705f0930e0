"""The claims of P2 Figs. 1, 10 and 11 (parameter sensitivity), one function each.

The inputs are the chapter's accuracy-ratio tables (:func:`repro.p2.sensitivity.edit_matrix`: one row per (mask
task ``source``, evaluation task ``task``) with ``ratio``) and the IoU table.  The paper prints heatmaps without
numbers, so the rules are point rules on the ratios (no per-example CI; said in each note).
"""

from __future__ import annotations

import pandas as pd

from repro.p2.claim_gates import gate, vision_reason
from repro.p2.sensitivity import RANDOM_SOURCE, mean_off_diagonal
from repro.report.results import Results

KEPT_MEAN, KEPT_MIN = 0.97, 0.90  #: "keeps the zero-shot performance": mean ratio ≥ 0.97, every ratio ≥ 0.90


def _split(df: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    return df[df.source != RANDOM_SOURCE], float(df[df.source == RANDOM_SOURCE].ratio.mean())


def fig1_pruning(res: Results, pruned: pd.DataFrame, model: str, n_tasks: int, n_eval: int) -> dict:
    """"pruning the 10 % least-sensitive parameters (diagonal FIM on any task) keeps the zero-shot performance on
    all tasks" (Fig. 1).  Point rule: mean ratio ≥ 0.97 and every ratio ≥ 0.90."""
    fisher, rnd = _split(pruned)
    return res.add_claim(
        "p2-fig1-pruning", "Pruning the 10% least-sensitive parameters (diagonal FIM on any one task) keeps the "
        "zero-shot performance on all tasks.", paper="Fig. 1 (heatmaps ≈ 1)",
        ours=f"accuracy ratio min {fisher.ratio.min():.3f}, mean {fisher.ratio.mean():.3f} over {len(fisher)} pairs "
             f"(random 10%: mean {rnd:.3f})",
        holds=bool(fisher.ratio.mean() >= KEPT_MEAN and fisher.ratio.min() >= KEPT_MIN),
        note=f"{model}, {n_tasks} tasks, {n_eval or 'all'} test examples each; {int((fisher.ratio < 0.95).sum())} of "
             f"the pairs below 0.95; point rule: holds = mean ratio ≥ {KEPT_MEAN} and every ratio ≥ {KEPT_MIN}")


def fig1_shared(res: Results, pruned: pd.DataFrame) -> dict:
    """"the least-sensitive parameters can be identified regardless of the task" (contribution 2, Fig. 1).
    Point rule: off-diagonal mean ratio ≥ 0.97 and within 0.02 of the diagonal mean."""
    fisher, _ = _split(pruned)
    off = mean_off_diagonal(fisher, "source", "task", "ratio")
    diag = float(fisher[fisher.source == fisher.task].ratio.mean())
    return res.add_claim(
        "p2-fig1-shared", "The least-sensitive parameters can be identified regardless of the task: masks found on "
        "another task are as harmless as the task's own.", paper="contribution 2; Fig. 1",
        ours=f"mean ratio with another task's mask {off:.3f} vs own mask {diag:.3f}",
        holds=bool(off >= KEPT_MEAN and off >= diag - 0.02),
        note=f"point rule: holds = off-diagonal mean ratio ≥ {KEPT_MEAN} and within 0.02 of the diagonal mean")


def fig10_perturb(res: Results, perturbed: pd.DataFrame) -> dict:
    """"perturbing the least-sensitive parameters with Gaussian noise also keeps performance" (App. A.7, Fig. 10).
    Point rule: mean ratio ≥ 0.97 and every ratio ≥ 0.90."""
    fisher, rnd = _split(perturbed)
    return res.add_claim(
        "p2-fig10-perturb", "Perturbing the 10% least-sensitive parameters with Gaussian noise also keeps "
        "performance on all tasks.", paper="Fig. 10 (heatmaps ≈ 1)",
        ours=f"accuracy ratio min {fisher.ratio.min():.3f}, mean {fisher.ratio.mean():.3f} (random 10%: mean "
             f"{rnd:.3f})", holds=bool(fisher.ratio.mean() >= KEPT_MEAN and fisher.ratio.min() >= KEPT_MIN),
        note=f"noise std 2σ (σ pooled over the selected weights); point rule: holds = mean ratio ≥ {KEPT_MEAN} and "
             f"every ratio ≥ {KEPT_MIN}")


def fig11_overlap(res: Results, miou: float, chance: float) -> dict:
    """"low-sensitivity masks of different tasks overlap substantially" (App. A.7, Fig. 11: mIoU 0.3-0.5 for T5,
    > 0.7 for ViT).  Point rule (IoU is exact): mIoU ≥ 0.3, the lowest value the paper reports."""
    return res.add_claim(
        "p2-fig11-overlap", "Low-sensitivity masks found on different tasks overlap substantially.",
        paper="mIoU 0.3–0.5 (T5-Small) to > 0.7 (ViT-B/32)", ours=f"mIoU {miou:.3f} (chance {chance:.3f})",
        holds=bool(miou >= 0.3), note="holds = mIoU over pairs of different tasks ≥ 0.3, the lowest value the paper "
                                      "reports")


def fig11_vit(res: Results, miou: float, model: str) -> dict:
    """"mIoU > 0.7 for ViT-B/32" (Fig. 11); a vision-only claim (:func:`repro.p2.claim_gates.vision_reason`)."""
    return res.add_claim("p2-fig11-vit", "Low-sensitivity masks of different tasks overlap with mIoU > 0.7 for "
                         "ViT-B/32.", paper="> 0.7", ours=f"{miou:.3f} ({model})",
                         **gate(bool(miou > 0.7), vision_reason(model), note="holds = mIoU over pairs of different "
                                                                             "tasks > 0.7"))


def fig11_t5(res: Results, miou: float, model: str) -> dict:
    """"for T5-Small the overlap is 0.3-0.5, and larger models share more" (Fig. 11); judged only for t5-small."""
    is_t5 = model == "t5-small"
    return res.add_claim("p2-fig11-t5", "For T5-Small the overlap is 0.3-0.5, and larger models share more "
                         "parameters.", paper="0.3-0.5", ours=f"{miou:.3f} ({model})",
                         holds=bool(0.3 <= miou <= 0.5) if is_t5 else None,
                         note="judged only for t5-small; the model-size trend needs several sizes"
                              + ("" if is_t5 else f"; ours is {model}"))


__all__ = ["fig10_perturb", "fig11_overlap", "fig11_t5", "fig11_vit", "fig1_pruning", "fig1_shared"]
