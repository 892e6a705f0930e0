"""The claims of P1 §4 (calibration, OOD, PEFT baselines, App. D), one function each.

Every function takes the rows the chapter (``notebooks/p1_calibration_ood.md``) computed, adds one claim to ``res``
and returns it.  Each docstring quotes the sentence of the paper it tests.  Claims comparing models on the same
examples are decided on a paired-bootstrap CI: Table 2's ECE reduction and agreement (per-example confidence and
correctness of FT and the graft over several seeds, :func:`repro.p1.calibration.ece_table`), Table 1's ECE and the
Table 3 / Fig. 7 OOD comparisons (per-example results of :func:`repro.p1.calibration_runs.ood_runs`).  The rest
(WiSE, PEFT, Fig. 6, App. D) give one number per model and task and are point rules (each note says so).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from repro.p1.calibration import ece_from_confidence
from repro.p1.calibration_runs import OodRuns
from repro.report.results import Results
from repro.report.verdicts import N_RESAMPLES, Evidence, combine_all, compare, decide, paired_bootstrap

Rows = Sequence[Mapping[str, Any]]
PerExample = Mapping[tuple[str, int], Mapping[str, Any]]  #: (task, seed) → per-example arrays (calibration.ece_table)
POINT = "point rule, no CI (the driver gives one number per model and task)"


def _mean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x == x]
    return sum(xs) / len(xs) if xs else float("nan")


def _stack(per_example: PerExample, task: str, key: str) -> np.ndarray:
    """``[seeds, examples]`` per-example scores ``key`` of one task (seeds in order)."""
    rows = [np.asarray(d[key], dtype=float) for (t, _), d in sorted(per_example.items()) if t == task]
    if len({r.shape for r in rows}) != 1:
        raise ValueError(f"{task}: the seeds were scored on test sets of different sizes {[r.shape for r in rows]}; "
                         f"a paired bootstrap needs the same test examples for every seed")
    return np.stack(rows)


def reduction_ci(per_example: PerExample, task: str, n_bins: int = 10, n_resamples: int = N_RESAMPLES,
                 seed: int = 0) -> tuple[float, float, float]:
    """Relative ECE reduction 100·(1 − ECE_graft / ECE_FT) of one task with its 95 % paired-bootstrap CI: examples
    (and seeds) resampled with one set of indices for both models, ECE recomputed on the pooled resample."""
    def stat(cf: np.ndarray, kf: np.ndarray, cg: np.ndarray, kg: np.ndarray) -> float:
        e_ft = ece_from_confidence(cf, kf, n_bins)
        return 100.0 * (1.0 - ece_from_confidence(cg, kg, n_bins) / e_ft) if e_ft > 0 else math.nan
    arrays = [_stack(per_example, task, k) for k in ("conf_ft", "correct_ft", "conf_graft", "correct_graft")]
    return paired_bootstrap(arrays, stat, n_resamples=n_resamples, seed=seed)


def ece_reduction(res: Results, reduction: Rows, per_example: PerExample, k_shot: int, base: float,
                  n_resamples: int = N_RESAMPLES) -> dict:
    """"sparsity levels that cost less than 5 % accuracy give a 40-90 % lower ECE" (Table 2).  Every task whose
    graft keeps ≥ 95 % of FT's metric (mean over seeds) must have ≥ 35 % lower ECE (the printed reductions range
    37.5-90.2 %): per task, 1 − ECE_graft/ECE_FT with its paired-bootstrap CI over examples and seeds, decided at
    the CI's lower end; the claim holds when every such task holds, does not hold when one does not."""
    text = "Sparsity levels that cost less than 5% accuracy give a 40-90% lower ECE than fine-tuning."
    ok = [r["task"] for r in reduction if r["within_5pct"]]
    rule = (f"k={k_shot} per class, γ_base top-{base:g}; tasks whose graft keeps >= 95% of the FT metric (mean over "
            f"seeds): {', '.join(ok) or 'none'}; each must have >= 35% lower ECE (the printed table ranges from "
            f"37.5% to 90.2%) at the lower end of the 95% CI of 1 − ECE_graft/ECE_FT (paired bootstrap over seeds "
            f"and test examples, ECE of the pooled resample)")
    if not ok:
        return res.add_claim("p1-table2-ece-reduction", text, paper="40-90% relative ECE reduction",
                             ours="; ".join(f"{r['task']} {100 * r['reduction']:.0f}% (graft at "
                                            f"{100 * (1 - r['relative_drop']):.0f}% of FT)" for r in reduction),
                             verdict="not-testable", note=f"no graft keeps >= 95% of FT's metric; {rule}")
    parts, shown = {}, []
    for task in ok:
        est, lo, hi = reduction_ci(per_example, task, n_resamples=n_resamples)
        n_seeds, n = _stack(per_example, task, "conf_ft").shape
        over = "seeds and examples" if n_seeds > 1 else "examples"
        ev = Evidence(n_examples=int(n), seeds=int(n_seeds), statistic=est, ci_low=lo, ci_high=hi, margin=35.0,
                      op=">=", test=f"paired bootstrap over {over}, {n_resamples} resamples, 95% CI of "
                                    f"1 − ECE_graft/ECE_FT (%)")
        parts[task] = (decide(lo, hi, ">=", 35.0), ev)
        shown.append(f"{task} {est:.0f}% [{lo:.0f}, {hi:.0f}]")
    verdict, ev, worst = combine_all(parts)
    outside = [f"{r['task']} {100 * r['reduction']:.0f}% (not within 5%)" for r in reduction if not r["within_5pct"]]
    return res.add_claim("p1-table2-ece-reduction", text, paper="40-90% relative ECE reduction",
                         ours="; ".join(shown + outside), verdict=verdict, evidence=ev,
                         note=f"{rule}; the evidence shown is the deciding task's ({worst})")


def agreement(res: Results, per_example: PerExample, n_resamples: int = N_RESAMPLES) -> dict:
    """"the grafted model agrees with the fine-tuned model on 93 % (single-sentence) and 86 % (two-sentence) of
    the test examples" — here at the chapter's k: every task ≥ 80 % at the lower end of the bootstrap CI of the
    mean agreement (over examples and seeds)."""
    parts = {t: compare(_stack(per_example, t, "agree"), kind="mean", scale=100, op=">=", margin=80.0,
                        n_resamples=n_resamples) for t in dict.fromkeys(t for t, _ in sorted(per_example))}
    text = ("Grafted and fine-tuned models agree on 93% (single-sentence) and 86% (two-sentence) of the test "
            "predictions.")
    if not parts:
        return res.add_claim("p1-table2-agreement-calibration", text, paper="93% / 86%", verdict="not-testable",
                             note="no Table 2 ECE task was run in this profile's plan")
    verdict, ev, worst = combine_all(parts)
    return res.add_claim(
        "p1-table2-agreement-calibration", text, paper="93% / 86%",
        ours="; ".join(f"{t} {e.statistic:.1f}% [{e.ci_low:.1f}, {e.ci_high:.1f}]" for t, (_, e) in parts.items()),
        verdict=verdict, evidence=ev,
        note=f"holds if every task's mean agreement is >= 80% at the lower end of its 95% CI (bootstrap over seeds "
             f"and test examples); the evidence shown is the deciding task's ({worst})")


def fig6_confidence(res: Results, cal_rows: Rows, hist_rows: Rows, task: str) -> dict:
    """"the fine-tuned model is highly confident on most QNLI examples […] the graft's confidence is spread out"
    (Fig. 6).  FT puts > 50 % of the examples above 0.9 confidence, the graft fewer, and the graft's ECE is lower."""
    ece = {r["method"]: r["ece"] for r in cal_rows if r["task"] == task}
    top = {m: sum(h["fraction"] for h in hist_rows if h["task"] == task and h["method"] == m and h["bin_lo"] >= 0.9)
           for m in ("FT", "Graft")}
    return res.add_claim(
        "p1-fig6-confidence",
        "Fine-tuned models are highly confident on most QNLI test examples; the graft's confidence is spread out, "
        "which explains its better calibration.", paper="Fig. 6 (plotted only)",
        ours=f"{task}: share of test examples with confidence > 0.9: FT {100 * top['FT']:.0f}%, graft "
             f"{100 * top['Graft']:.0f}%; ECE {100 * ece['FT']:.1f}% vs {100 * ece['Graft']:.1f}%",
        holds=bool(top["FT"] > 0.5 and top["Graft"] < top["FT"] and ece["Graft"] < ece["FT"]),
        note=f"holds if FT puts > 50% of the examples above 0.9 confidence, the graft fewer, and the graft's ECE is "
             f"lower; ECE = mean over the seeds, shares over the test examples of every seed pooled; point rule, no "
             f"CI (the CIs of the ECE reduction are in p1-table2-ece-reduction)")


def ece_difference(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray], op: str,
                    n_resamples: int = N_RESAMPLES) -> tuple[str, Evidence]:
    """``ECE(a) − ECE(b)`` in points ``op`` 0 from per-example ``conf`` / ``correct`` of two models on the same test
    examples, its CI from a paired bootstrap (ECE recomputed on each resample)."""
    def stat(ca: np.ndarray, ka: np.ndarray, cb: np.ndarray, kb: np.ndarray) -> float:
        return 100.0 * (ece_from_confidence(ca, ka) - ece_from_confidence(cb, kb))
    arrays = [a["conf"], a["correct"], b["conf"], b["correct"]]
    est, lo, hi = paired_bootstrap(arrays, stat, n_resamples=n_resamples)
    ev = Evidence(n_examples=int(np.asarray(a["conf"]).size), seeds=1, statistic=est, ci_low=lo, ci_high=hi,
                  margin=0.0, op=op, test=f"paired bootstrap over test examples, {n_resamples} resamples, 95% CI of "
                                        f"the ECE difference (points)")
    return decide(lo, hi, op, 0.0), ev


def table1_calibration(res: Results, runs: OodRuns, sources: Sequence[str]) -> dict:
    """"re-training the graft region keeps the calibration benefit, BitFit does not" (Table 1 ECE columns):
    on every source task the re-trained graft's ECE < FT's and BitFit's ECE > the graft's (paired bootstrap of each
    ECE difference over the full ID test set)."""
    sc = runs.id_scores
    parts = {}
    for s in sources:
        parts[f"{s} re-train − FT"] = ece_difference(sc[(s, "Graft re-training")], sc[(s, "FT")], "<")
        parts[f"{s} BitFit − graft"] = ece_difference(sc[(s, "BitFit")], sc[(s, "Grafting")], ">")
    verdict, ev, worst = combine_all(parts)

    def ece(s: str, m: str) -> float:
        return 100 * ece_from_confidence(sc[(s, m)]["conf"], sc[(s, m)]["correct"])
    return res.add_claim(
        "p1-table1-calibration",
        "Re-training the graft region keeps the good calibration; BitFit is much worse calibrated than grafting.",
        paper="Table 1 ECE columns",
        ours="; ".join(f"{s}: ECE FT {ece(s, 'FT'):.1f}, graft {ece(s, 'Grafting'):.1f}, re-train "
                       f"{ece(s, 'Graft re-training'):.1f}, BitFit {ece(s, 'BitFit'):.1f}" for s in sources),
        verdict=verdict, evidence=ev,
        note=f"holds if, on every source task, the 95% CI of ECE(re-trained graft) − ECE(FT) lies below 0 and that "
             f"of ECE(BitFit) − ECE(graft) above 0 (paired bootstrap over the test examples, one seed); the evidence "
             f"shown is the deciding comparison's ({worst})")


def _pooled(runs: OodRuns, pairs: Sequence[tuple[str, str]], label: str) -> np.ndarray:
    """``[1, examples]`` 0/1 correctness of one model, the OOD examples of ``pairs`` (source, target) pooled."""
    return np.concatenate([runs.correct[(s, t, label)] for s, t in pairs])[None, :].astype(float)


def _gap_text(runs: OodRuns, pairs: Sequence[tuple[str, str]], a: str, b: str) -> str:
    return "; ".join(f"{s}→{t}: {100 * (runs.correct[(s, t, a)].mean() - runs.correct[(s, t, b)].mean()):+.1f}"
                     for s, t in pairs)


def table3_retrain_ood(res: Results, runs: OodRuns, targets: Sequence[str]) -> dict:
    """"for NLI, re-training the graft region is about 5 % worse out of distribution" (Table 3): the graft beats
    its re-training by ≥ 2 points on the QNLI → targets examples (pooled), paired bootstrap."""
    pairs = [("QNLI", t) for t in targets]
    verdict, ev = compare(_pooled(runs, pairs, "Grafting"), _pooled(runs, pairs, "Graft re-training"),
                          kind="difference", scale=100, op=">=", margin=2.0)
    return res.add_claim("p1-table3-retrain-ood", "For NLI, re-training the graft region is about 5% worse out of "
                         "distribution than grafting.", paper="about 5% worse",
                         ours=f"graft − re-train OOD accuracy {_gap_text(runs, pairs, 'Grafting', 'Graft re-training')}",
                         verdict=verdict, evidence=ev,
                         note="holds if the 95% CI of graft − re-trained graft OOD accuracy (points, the QNLI → "
                              "MNLI/SNLI examples pooled) lies above +2; paired bootstrap over the examples")


def table3_bitfit_ood(res: Results, runs: OodRuns) -> dict:
    """"BitFit fails under large shifts (QNLI → SNLI: 57.4 vs 80.1)" (Table 3): BitFit ≥ 5 points below the graft."""
    pairs = [("QNLI", "SNLI")]
    verdict, ev = compare(_pooled(runs, pairs, "Grafting"), _pooled(runs, pairs, "BitFit"), kind="difference",
                          scale=100, op=">=", margin=5.0)
    g, b = (100 * runs.correct[("QNLI", "SNLI", m)].mean() for m in ("Grafting", "BitFit"))
    return res.add_claim("p1-table3-bitfit-ood", "BitFit fails under large shifts (QNLI -> SNLI: 57.4 vs 80.1 for "
                         "the graft).", paper="57.4 vs 80.1", ours=f"QNLI→SNLI: BitFit {b:.1f} vs graft {g:.1f}",
                         verdict=verdict, evidence=ev,
                         note="holds if the 95% CI of graft − BitFit OOD accuracy on QNLI → SNLI lies above +5 points; "
                              "paired bootstrap over the examples")


def fig7_ood_gap(res: Results, runs: OodRuns, pairs: Sequence[tuple[str, str]]) -> dict:
    """"the grafted model for MPQA performs at least 5 % better than the fine-tuned model […] for QNLI again
    performs around 5 % better" (§4.2, Fig. 7): graft − FT OOD accuracy ≥ 5 points on the large-shift pairs'
    examples pooled (pooled because the QNLI half is "around" 5)."""
    text = ("Under large shifts (MPQA -> SST-2/Yelp, QNLI -> MNLI/SNLI) the graft is at least 5% better than "
            "fine-tuning out of distribution.")
    if not pairs:
        return res.add_claim("p1-fig7-ood-gap", text, paper=">=5% OOD gap", verdict="not-testable",
                             note="no large-shift source (MPQA, QNLI) in this profile's plan")
    verdict, ev = compare(_pooled(runs, pairs, "Grafting"), _pooled(runs, pairs, "FT"), kind="difference",
                          scale=100, op=">=", margin=5.0)
    return res.add_claim(
        "p1-fig7-ood-gap", text, paper=">=5% OOD gap", ours=_gap_text(runs, pairs, "Grafting", "FT"),
        verdict=verdict, evidence=ev,
        note="graft − FT OOD accuracy (points); holds if its 95% CI on the large-shift pairs' examples pooled lies "
             "above +5 (paired bootstrap; the 'gap grows with the number of ID samples' part, Fig. 7c, is not run)")


def fig7_small_shift(res: Results, runs: OodRuns, targets: Sequence[str]) -> dict:
    """"when the distribution shift is small (SST-2 → IMDb/Yelp) grafting gives little advantage" (§4.2): no
    small-shift gain reaches 5 points (each target's graft − FT below +5 at the upper end of its CI)."""
    parts = {t: compare(_pooled(runs, [("SST-2", t)], "Grafting"), _pooled(runs, [("SST-2", t)], "FT"),
                        kind="difference", scale=100, op="<", margin=5.0) for t in targets}
    verdict, ev, worst = combine_all(parts)
    return res.add_claim("p1-fig7-small-shift", "When the shift is small (SST-2 -> IMDb/Yelp) grafting gives little "
                         "or no advantage over FT.", paper="Fig. 7 / §4.2",
                         ours=_gap_text(runs, [("SST-2", t) for t in targets], "Grafting", "FT"),
                         verdict=verdict, evidence=ev,
                         note=f"holds if, on every small-shift target, the 95% CI of graft − FT OOD accuracy lies below "
                              f"+5 points (paired bootstrap over the examples); deciding target {worst}")


def fig7e_wise(res: Results, wise: Rows, best: Mapping[str, Mapping[str, Any]], source: str = "QNLI") -> dict:
    """"the best (ID, OOD) point of WiSE-FT is (80.5, 79.6), against (84.2, 80.0) for grafting" (Fig. 7e): the graft
    is not dominated — both its ID and its OOD accuracy are within 1 point of (or above) WiSE-FT's best point
    (highest mean OOD on the α grid).  The earlier rule looked at OOD only (audit: ignored the ID coordinate)."""
    g = next(r for r in wise if r["source"] == source and r["method"] == "WiSE-Graft" and r["alpha"] == 1.0)
    ft, gr = best["WiSE-FT"], best["WiSE-Graft"]
    d_id, d_ood = 100 * (g["id"] - ft["id"]), 100 * (g["ood"] - ft["ood"])
    return res.add_claim(
        "p1-fig7e-wise", "For NLI the best (ID, OOD) point of WiSE-FT is (80.5, 79.6) against (84.2, 80.0) for "
        "grafting.", paper="(80.5, 79.6) vs (84.2, 80.0): graft +3.7 ID, +0.4 OOD",
        ours=f"WiSE-FT best ({100 * ft['id']:.1f}, {100 * ft['ood']:.1f}) at α={ft['alpha']:g}; graft "
             f"({100 * g['id']:.1f}, {100 * g['ood']:.1f}): {d_id:+.1f} ID, {d_ood:+.1f} OOD; WiSE-Graft best "
             f"({100 * gr['id']:.1f}, {100 * gr['ood']:.1f}) at α={gr['alpha']:g}",
        holds=bool(d_id >= -1.0 and d_ood >= -1.0),
        note="best = highest mean OOD accuracy on the α grid; holds if the graft's ID and OOD accuracies are both "
             f"within 1 point of (or above) WiSE-FT's best point; {POINT}")


def matched_pairs(peft_runs: Rows) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """Each PEFT run paired with the graft (< 100 %) of the same source closest to its budget (log ratio of the
    parameter counts) — not the best graft (audit: the old rule took the best graft of any size)."""
    pairs = []
    for p in peft_runs:
        if p["method"] == "Grafting":
            continue
        grafts = [g for g in peft_runs if g["method"] == "Grafting" and g["source"] == p["source"]
                  and g["sparsity"] < 100 and g["params"] > 0]
        if grafts:
            pairs.append((p, min(grafts, key=lambda g: abs(math.log(g["params"] / max(p["params"], 1))))))
    return pairs


def _pair_text(pairs: list, field: str) -> str:
    return "; ".join(f"{p['source']} {p['method']}-{p['rank']} ({p['params']:,} params) vs graft ({g['params']:,}): "
                     f"{100 * p[field]:.1f} vs {100 * g[field]:.1f}" for p, g in pairs)


def table6_peft(res: Results, peft_runs: Rows) -> dict:
    """"at similar sparsity (0.05-0.1 %) grafting has a 4.6 % lower ECE than LoRA and adapters while being only
    1.7 % lower in accuracy" (App. B.3, Table 6): mean over PEFT runs of (PEFT ECE − ECE of the graft closest in
    size) > 0."""
    pairs = matched_pairs(peft_runs)
    text = ("At similar sparsity (0.05-0.1%) grafting has a 4.6% lower ECE than LoRA and adapters while being only "
            "1.7% lower in accuracy.")
    if not pairs:
        return res.add_claim("p1-table6-peft", text, paper="ECE -4.6, acc -1.7", holds=None,
                             note="no PEFT run and graft of the same source in this profile")
    d_ece = _mean([p["id_ece"] - g["id_ece"] for p, g in pairs])
    d_acc = _mean([g["id_acc"] - p["id_acc"] for p, g in pairs])
    return res.add_claim("p1-table6-peft", text, paper="ECE -4.6, acc -1.7",
                         ours=f"PEFT ECE − size-matched graft ECE = {100 * d_ece:+.1f} points, graft − PEFT ID "
                              f"accuracy {100 * d_acc:+.1f} (ECE: {_pair_text(pairs, 'id_ece')})",
                         holds=bool(d_ece > 0),
                         note="each PEFT run is compared with the graft closest to its parameter count (counts "
                              "stated; sizes are matched only as far as the sweep's graft sizes allow); holds if "
                              f"the mean ECE difference is > 0; {POINT}")


def table7_peft_ood(res: Results, peft_runs: Rows) -> dict:
    """"at similar sparsity grafting gains 7.9 % OOD accuracy over LoRA and adapters at 1.0 % lower ID accuracy"
    (Table 7): mean over PEFT runs of (OOD of the graft closest in size − PEFT OOD) > 0."""
    def ood(r: Mapping[str, Any]) -> float:
        return _mean([v for k, v in r.items() if k.startswith("ood:")])

    pairs = matched_pairs(peft_runs)
    text = "At similar sparsity grafting gains 7.9% OOD accuracy over LoRA and adapters at 1.0% lower ID accuracy."
    if not pairs:
        return res.add_claim("p1-table7-peft-ood", text, paper="+7.9 OOD, -1.0 ID", holds=None,
                             note="no PEFT run and graft of the same source in this profile")
    pairs = [({**p, "ood": ood(p)}, {**g, "ood": ood(g)}) for p, g in pairs]
    d_ood = _mean([g["ood"] - p["ood"] for p, g in pairs])
    return res.add_claim("p1-table7-peft-ood", text, paper="+7.9 OOD, -1.0 ID",
                         ours=f"size-matched graft OOD − PEFT OOD = {100 * d_ood:+.1f} points ("
                              f"{_pair_text(pairs, 'ood')})",
                         holds=bool(d_ood > 0),
                         note="each PEFT run is compared with the graft closest to its parameter count (counts "
                              f"stated); holds if the mean OOD difference is > 0; {POINT}")


def table1_gap(res: Results, gap_rows: Rows, tasks: Sequence[str]) -> dict:
    """"re-training on the graft region keeps the train-test gap small (~1 %), whereas full FT fits the training
    set" (§4.3, App. D): relative test, the re-trained graft's mean gap < half of FT's."""
    gap = {(r["task"], r["method"]): r for r in gap_rows}
    re_gap = _mean([gap[(t, "Graft re-training")]["gap_acc"] for t in tasks])
    ft_gap = _mean([gap[(t, "FT")]["gap_acc"] for t in tasks])
    n = gap[(tasks[0], "FT")]["n_train"]
    return res.add_claim("p1-table1-gap", "Re-training on the graft region keeps the train-test gap small (about 1% "
                         "with a few thousand examples), whereas full FT fits the training set (gap ~10%).",
                         paper="~1% vs ~10%",
                         ours=f"mean train−test accuracy gap: re-trained graft {100 * re_gap:.1f} points, FT "
                              f"{100 * ft_gap:.1f} points (n = {int(n)} training examples)",
                         holds=bool(re_gap < ft_gap / 2),
                         note="our k-shot training sets are far below 'a few thousand' examples, so the test is "
                              "relative: holds if the re-trained graft's gap is < half of FT's. The variance bound of "
                              f"Thm. D.2 is vacuous (> 1) at this n, see the table above; {POINT}")


__all__ = ["agreement", "ece_difference", "ece_reduction", "fig6_confidence", "fig7_ood_gap", "fig7_small_shift",
           "fig7e_wise", "matched_pairs", "reduction_ci", "table1_calibration", "table1_gap", "table3_bitfit_ood",
           "table3_retrain_ood", "table6_peft", "table7_peft_ood"]
