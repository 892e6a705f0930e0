"""The claims of the P2 appendix chapter (``notebooks/p2_appendix.md``), one function each.

Each function adds one claim to ``res`` and returns it; each docstring quotes what the paper says.  The scores
come from the task-arithmetic protocol as means over tasks, not per-example correctness, so every rule is a
point rule (no CI) and its note says so.  Two claims are our own questions, not the paper's: they are tagged
``beyond_paper`` and are not counted in the paper's tally.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from repro.report.results import Results

POINT_RULE = "point rule on means (no per-example pairing, no CI)"
Scores = Mapping[str, Mapping[str, float]]  # method label -> task -> accuracy (%)


def fig9_single_task(res: Results, scores: Scores, tasks: Sequence[str], n_test: int, close_pp: float = 2.0) -> dict:
    """"TaLoS achieves single-task accuracy close to full fine-tuning, almost always above L-LoRA, and on par with
    LoTA" — P2 Fig. 9.  Holds when TaLoS is within ``close_pp`` points of non-linear FT and of LoTA on average and
    at least L-LoRA's accuracy on at least half of the tasks."""
    need = ["Non-linear FT", "Linearized FT", "L-LoRA", "LoTA", "TaLoS"]
    missing = [m for m in need if m not in scores or any(t not in scores[m] for t in tasks)]
    if missing:
        raise ValueError(f"p2-fig9: no single-task accuracy on every task {list(tasks)} for {missing}")
    mean = {m: float(np.mean([scores[m][t] for t in tasks])) for m in need}
    above = float(np.mean([scores["TaLoS"][t] >= scores["L-LoRA"][t] for t in tasks]))
    ok = (mean["Non-linear FT"] - mean["TaLoS"] <= close_pp and above >= 0.5
          and abs(mean["TaLoS"] - mean["LoTA"]) <= close_pp)
    return res.add_claim(
        "p2-fig9-single-task",
        "TaLoS's single-task accuracy is close to full fine-tuning, almost always above L-LoRA, and matches LoTA.",
        paper="Fig. 9 (radar plots)",
        ours=f"mean over {len(tasks)} tasks: " + ", ".join(f"{m} {mean[m]:.1f}" for m in
                                                           ["TaLoS"] + need[:-1]) + " (%)",
        holds=bool(ok),
        note=f"{n_test or 'all'} test examples per task; holds = TaLoS within {close_pp:g} pp of non-linear FT and "
             f"of LoTA on average, and ≥ L-LoRA on at least half of the tasks; {POINT_RULE}")


def fig8_sparsity(res: Results, sweep: Mapping[float, Mapping[str, float]], tasks: Sequence[str],
                  best: float = 0.9) -> dict:
    """"higher sparsity improves task arithmetic […] at a small cost in single-task accuracy; 90 % is the best
    sparsity across models" — P2 Fig. 8.  ``sweep[k]`` holds fractions ``single``, ``abs``, ``target``.  Holds
    when k = ``best`` gives the best absolute addition accuracy and the lowest negation target accuracy, and
    single-task accuracy does not rise from the lowest k to it; not testable without k = ``best`` and another k."""
    ks = sorted(sweep)
    text = ("Higher sparsity improves task arithmetic and slightly lowers single-task accuracy; 90% is the best "
            "sparsity across models.")
    ours = "; ".join(f"k={k:g}: single {100 * sweep[k]['single']:.1f}, abs {100 * sweep[k]['abs']:.1f}, targ "
                     f"{100 * sweep[k]['target']:.1f}" for k in ks)
    rule = (f"tasks {list(tasks)}, sparsities {ks}; holds = k = {best:g} gives the best absolute addition accuracy "
            f"and the lowest negation target accuracy, and single-task accuracy does not rise with sparsity; "
            f"{POINT_RULE}")
    if best not in sweep or len(ks) < 2:
        return res.add_claim("p2-fig8-sparsity", text, paper="90%", ours=ours, verdict="not-testable",
                             note=f"needs k = {best:g} and at least one other sparsity; {rule}")
    best_abs = max(ks, key=lambda k: sweep[k]["abs"])
    best_targ = min(ks, key=lambda k: sweep[k]["target"])
    ok = best_abs == best and best_targ == best and sweep[best]["single"] <= sweep[ks[0]]["single"] + 0.01
    return res.add_claim("p2-fig8-sparsity", text, paper="90%",
                         ours=ours + f"; best abs at k={best_abs:g}, best target at k={best_targ:g}",
                         holds=bool(ok), note=rule)


def fig8_graft(res: Results, graft: Mapping[str, float], ft: Mapping[str, float] | None,
               talos: Mapping[str, float] | None, density: float, steps: int) -> dict:
    """Beyond the paper (no paper sentence): P1 graft regions γ ⊙ τ as sparse task vectors compose better than
    non-linear FT.  Holds when the grafted vectors' normalized addition accuracy is above non-linear FT's."""
    def triple(s: Mapping[str, float]) -> str:
        return f"{100 * s['abs']:.1f} / {100 * s['norm']:.1f} / {100 * s['target']:.1f}"

    ours = f"abs / norm / targ: grafted {triple(graft)}" + (f"; FT {triple(ft)}" if ft else "") + \
        (f"; TaLoS {triple(talos)}" if talos else "")
    note = (f"our own question, not a paper claim (not counted in the paper's tally); graft density "
            f"{100 * density:.2g} % of the graftable set, {steps} graft steps; holds = higher normalized addition "
            f"accuracy than non-linear FT; {POINT_RULE}")
    text = ("Beyond the paper: P1 graft regions turn fine-tuned vectors into sparse task vectors that compose better "
            "than non-linear FT (as TaLoS's do).")
    if not ft:
        return res.add_claim("p2-fig8-graft", text, ours=ours, verdict="not-testable", beyond_paper=True,
                             note="needs the k = 0 (non-linear FT) point of the sparsity sweep; " + note)
    return res.add_claim("p2-fig8-graft", text, ours=ours, holds=bool(graft["norm"] > ft["norm"]), note=note,
                         beyond_paper=True)


def fig4_iou(res: Results, overlap_rows: Sequence[Mapping], tasks: Sequence[str]) -> dict:
    """Beyond the paper (no paper sentence): TaLoS (least-sensitive) masks avoid the entries FISH (most-sensitive)
    masks and P1 graft regions select.  Holds when both mean containments are below those of independent random
    masks of the same sizes."""
    def mean_of(a: str, b: str) -> dict[str, float]:
        sel = [r for r in overlap_rows if r["a"] == a and r["b"] == b]
        if not sel:
            raise ValueError(f"p2-fig4-iou: no overlap rows for {a!r} vs {b!r}")
        return {k: float(np.mean([r[k] for r in sel])) for k in ("containment", "containment_random")}

    tf, gt = mean_of("TaLoS", "FISH 10%"), mean_of("P1 graft", "TaLoS")
    ok = tf["containment"] < tf["containment_random"] and gt["containment"] < gt["containment_random"]
    return res.add_claim(
        "p2-fig4-iou",
        "Beyond the paper: TaLoS (least-sensitive) masks avoid the entries FISH (most-sensitive) and P1 grafts select.",
        ours=f"TaLoS ∩ FISH-10% = {100 * tf['containment']:.1f} % of TaLoS (random: "
             f"{100 * tf['containment_random']:.1f} %); P1 graft inside TaLoS: {100 * gt['containment']:.1f} % "
             f"(random: {100 * gt['containment_random']:.1f} %)",
        holds=bool(ok), beyond_paper=True,
        note=f"our own question, not a paper claim (not counted in the paper's tally); tasks {list(tasks)}; holds = "
             "both overlaps are below what independent random masks give")


__all__ = ["fig4_iou", "fig8_graft", "fig8_sparsity", "fig9_single_task"]
