"""The claims of the P2 appendix chapter (``notebooks/p2_appendix.md``), one function each.

Each function adds one claim to ``res`` and returns it; each docstring quotes what the paper says.  Figs. 8-9 and
the grafted vectors are judged on per-example test correctness: every model is scored on the same test examples
(the task-arithmetic protocol's :class:`repro.p2.evaluator.Evaluator`), so each comparison is a paired bootstrap
over those examples (:func:`repro.p2.task_arithmetic.claims.paired_gap` on a :class:`repro.p2.task_arithmetic.runs.Correctness`
of the notebook's results) and a claim about several comparisons holds when each holds
(:func:`repro.report.verdicts.combine_all`).  The mask overlap (Fig. 4, beyond the paper) is a property of the masks
themselves, with no sampling over examples: exact evidence.  Two claims are our own questions, not the paper's: they
are tagged ``beyond_paper`` and are not counted in the paper's tally.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from repro.p2.claim_stats import band, paired_gap, per_task_gaps, task_means
from repro.p2.task_arithmetic.runs import Correctness
from repro.report.gates import not_testable
from repro.report.results import Results
from repro.report.verdicts import N_RESAMPLES, Evidence, combine_all, exact, paired_bootstrap, verdict_from_ci

#: ``{method label: {task: {"test": accuracy, "test_correct": per-example 0/1}}}``
#: (:func:`repro.p2.arithmetic.single_task`)
Single = Mapping[str, Mapping[str, Mapping[str, Any]]]


def _ci(ev: Evidence, unit: str = " pt") -> str:
    return f"{ev.statistic:+.2f}{unit} [{ev.ci_low:+.2f}, {ev.ci_high:+.2f}]"


def single_correctness(single: Single, tasks: Sequence[str]) -> Correctness:
    """The single-task per-example test correctness of each method (kind ``single``), one seed."""
    return Correctness({(m, "single"): {t: r[t]["test_correct"] for t in tasks} for m, r in single.items()}, tasks)


def task_share(ex: Correctness, a: str, b: str, kind: str = "single", *, op: str = ">=", margin: float = 0.5,
               n_resamples: int = N_RESAMPLES, seed: int = 0) -> tuple[str, Evidence]:
    """Verdict of ``share of tasks where acc(a) ≥ acc(b)`` ``op margin``, paired bootstrap over the test examples
    (the task of each resampled example travels with it, as in :func:`repro.p2.task_arithmetic.claims.paired_gap`)."""
    xa, ids = ex.stacked(a, kind)
    xb, _ = ex.stacked(b, kind)
    n_tasks = len(ex.tasks)

    def stat(x: np.ndarray, y: np.ndarray, i: np.ndarray) -> float:
        ta, tb = task_means(x, i, n_tasks), task_means(y, i, n_tasks)
        ok = np.isfinite(ta) & np.isfinite(tb)
        return float(np.mean(ta[ok] >= tb[ok])) if ok.any() else float("nan")

    est, lo, hi = paired_bootstrap([xa, xb, ids], stat, n_resamples=n_resamples, seed=seed)
    return verdict_from_ci(est, lo, hi, n_examples=int(xa.shape[1]), seeds=int(xa.shape[0]), margin=float(margin), op=op,
                           test=f"paired bootstrap over test examples, {n_resamples} resamples, 95% CI of the share of "
                                f"{n_tasks} tasks where {a} ≥ {b}")


def fig9_single_task(res: Results, single: Single, tasks: Sequence[str], n_test: int, close_pp: float = 2.0) -> dict:
    """"TaLoS achieves single-task accuracy close to full fine-tuning, almost always above L-LoRA, and on par with
    LoTA" — P2 Fig. 9.  Holds when, on the same test examples (paired bootstrap, mean over tasks of each task's
    accuracy), non-linear FT − TaLoS ≤ ``close_pp`` points, TaLoS − LoTA lies in [−``close_pp``, +``close_pp``]
    and TaLoS ≥ L-LoRA on at least half of the tasks, each at the conservative end of its 95 % CI."""
    need = ["Non-linear FT", "Linearized FT", "L-LoRA", "LoTA", "TaLoS"]
    missing = [m for m in need if m not in single or any(t not in single[m] for t in tasks)]
    if missing:
        raise ValueError(f"p2-fig9: no single-task accuracy on every task {list(tasks)} for {missing}")
    ex = single_correctness({m: single[m] for m in need}, tasks)
    mean = {m: 100 * float(np.mean([single[m][t]["test"] for t in tasks])) for m in need}
    near_ft = paired_gap(ex, "Non-linear FT", "TaLoS", kind="single", op="<=", margin=close_pp)
    lota = paired_gap(ex, "TaLoS", "LoTA", kind="single", op=">=", margin=-close_pp)
    above = task_share(ex, "TaLoS", "L-LoRA", op=">=", margin=0.5)
    parts = {"FT − TaLoS": near_ft, **{f"TaLoS − LoTA {k}": p for k, p in band(lota, -close_pp, close_pp).items()},
             "share TaLoS ≥ L-LoRA": above}
    verdict, ev, worst = combine_all(parts)
    return res.add_claim(
        "p2-fig9-single-task",
        "TaLoS's single-task accuracy is close to full fine-tuning, almost always above L-LoRA, and matches LoTA.",
        paper="Fig. 9 (radar plots)",
        ours=f"mean over {len(tasks)} tasks: " + ", ".join(f"{m} {mean[m]:.1f}" for m in ["TaLoS"] + need[:-1])
             + f" (%); FT − TaLoS {_ci(near_ft[1])}, TaLoS − LoTA {_ci(lota[1])}, TaLoS ≥ L-LoRA on "
               f"{100 * above[1].statistic:.0f} % of tasks",
        verdict=verdict, evidence=ev, tasks=list(tasks), learned=res.learned_on(tasks),
        per_task=per_task_gaps(ex, "Non-linear FT", "TaLoS", kind="single", op="<=", margin=close_pp),
        note=f"holds if the 95% CIs give non-linear FT − TaLoS ≤ {close_pp:g} pt, TaLoS − LoTA within ±{close_pp:g} "
             f"pt (two one-sided comparisons) and TaLoS ≥ L-LoRA on ≥ 50 % of the tasks (mean over tasks of "
             f"per-task accuracy); paired bootstrap over the {ev.n_examples} test examples ({n_test or 'all'} per "
             f"task); does not hold if one CI lies entirely on the wrong side; deciding part: {worst}")


def sweep_correctness(sweep: Mapping[Any, Mapping[str, Any]], tasks: Sequence[str]) -> Correctness:
    """Per-example test correctness of each :func:`repro.p2.sparse_vectors.arithmetic_summary` in ``sweep``
    (``sweep[key]["correct"][kind][task]``), labelled by the key."""
    data = {}
    for key, s in sweep.items():
        if "correct" not in s:
            raise KeyError(f"summary {key!r} has no per-example correctness: it was computed before "
                           "arithmetic_summary kept it")
        for kind, by_task in s["correct"].items():
            data[(str(key), kind)] = {t: by_task[t] for t in tasks}
    return Correctness(data, tasks)


def fig8_sparsity(res: Results, sweep: Mapping[float, Mapping[str, Any]], tasks: Sequence[str],
                  best: float = 0.9, single_pp: float = 1.0) -> dict:
    """"higher sparsity improves task arithmetic […] at a small cost in single-task accuracy; 90 % is the best
    sparsity across models" — P2 Fig. 8.  ``sweep[k]`` is an :func:`repro.p2.sparse_vectors.arithmetic_summary`
    (fractions and per-example ``correct``).  Holds when, against every other k, k = ``best`` has an absolute
    addition accuracy at least as high (≥ 0) and a negation target accuracy at least as low (≤ 0), and its
    single-task accuracy is at most ``single_pp`` points above the lowest k's, each at the conservative end of a
    paired-bootstrap 95 % CI over the test examples; not testable without k = ``best`` and another k."""
    ks = sorted(sweep)
    text = ("Higher sparsity improves task arithmetic and slightly lowers single-task accuracy; 90% is the best "
            "sparsity across models.")
    ours = "; ".join(f"k={k:g}: single {100 * sweep[k]['single']:.1f}, abs {100 * sweep[k]['abs']:.1f}, targ "
                     f"{100 * sweep[k]['target']:.1f}" for k in ks)
    rule = (f"holds if, against every other sparsity, k = {best:g} has absolute addition accuracy − other ≥ 0 pt, "
            f"negation target accuracy − other ≤ 0 pt, and single-task accuracy − that of k = {ks[0]:g} ≤ "
            f"{single_pp:g} pt, each at the conservative end of its 95% CI (mean over tasks {list(tasks)}); paired "
            f"bootstrap over the same test examples; sparsities {ks}")
    if best not in sweep or len(ks) < 2:
        return res.add_claim("p2-fig8-sparsity", text, paper="90%", ours=ours, tasks=list(tasks),
                             **not_testable(f"needs k = {best:g} and at least one other sparsity; {rule}"))
    ex = sweep_correctness(sweep, tasks)
    b = str(best)
    parts: dict[str, tuple[str, Evidence]] = {}
    for k in ks:
        if k == best:
            continue
        parts[f"abs k={best:g} − k={k:g}"] = paired_gap(ex, b, str(k), kind="addition", op=">=", margin=0.0)
        parts[f"target k={best:g} − k={k:g}"] = paired_gap(ex, b, str(k), kind="target", op="<=", margin=0.0)
    if ks[0] != best:
        parts[f"single k={best:g} − k={ks[0]:g}"] = paired_gap(ex, b, str(ks[0]), kind="single", op="<=",
                                                               margin=single_pp)
    verdict, ev, worst = combine_all(parts)
    best_abs = max(ks, key=lambda k: sweep[k]["abs"])
    best_targ = min(ks, key=lambda k: sweep[k]["target"])
    return res.add_claim("p2-fig8-sparsity", text, paper="90%",
                         ours=ours + f"; best abs at k={best_abs:g}, best target at k={best_targ:g}; deciding "
                                     f"{worst}: {_ci(ev)}",
                         verdict=verdict, evidence=ev, tasks=list(tasks), learned=res.learned_on(tasks),
                         note=f"{rule}; n = {ev.n_examples} test examples; deciding part: {worst}")


def fig8_graft(res: Results, graft: Mapping[str, Any], ft: Mapping[str, Any] | None,
               talos: Mapping[str, Any] | None, density: float, steps: int) -> dict:
    """Beyond the paper (no paper sentence): P1 graft regions γ ⊙ τ as sparse task vectors compose better than
    non-linear FT.  Holds when the grafted vectors' normalized addition accuracy − non-linear FT's > 0 at the low end
    of a paired-bootstrap 95 % CI over the same test examples (each resample re-normalizes by each family's own
    single-task accuracy, :func:`repro.p2.task_arithmetic.claims.paired_gap`)."""
    def triple(s: Mapping[str, float]) -> str:
        return f"{100 * s['abs']:.1f} / {100 * s['norm']:.1f} / {100 * s['target']:.1f}"

    ours = f"abs / norm / targ: grafted {triple(graft)}" + (f"; FT {triple(ft)}" if ft else "") + \
        (f"; TaLoS {triple(talos)}" if talos else "")
    note = (f"our own question, not a paper claim (not counted in the paper's tally); graft density "
            f"{100 * density:.2g} % of the graftable set, {steps} graft steps; holds if the 95% CI of grafted − "
            f"non-linear FT normalized addition accuracy lies above 0 pt, does not hold if it lies below; paired "
            f"bootstrap over the same test examples")
    text = ("Beyond the paper: P1 graft regions turn fine-tuned vectors into sparse task vectors that compose better "
            "than non-linear FT (as TaLoS's do).")
    if not ft:
        return res.add_claim("p2-fig8-graft", text, ours=ours, beyond_paper=True, tasks=(),
                             **not_testable("needs the k = 0 (non-linear FT) point of the sparsity sweep; " + note))
    ex = sweep_correctness({"graft": graft, "ft": ft}, list(graft["single_per_task"]))
    verdict, ev = paired_gap(ex, "graft", "ft", normalized=True, op=">", margin=0.0)
    return res.add_claim("p2-fig8-graft", text, ours=ours + f" (%); grafted − FT normalized {_ci(ev)}",
                         verdict=verdict, evidence=ev, note=f"{note}, n = {ev.n_examples}", beyond_paper=True,
                         tasks=ex.tasks, learned=res.learned_on(ex.tasks))


def fig4_iou(res: Results, overlap_rows: Sequence[Mapping], tasks: Sequence[str]) -> dict:
    """Beyond the paper (no paper sentence): TaLoS (least-sensitive) masks avoid the entries FISH (most-sensitive)
    masks and P1 graft regions select.  Holds when both mean containments are below those of independent random
    masks of the same sizes: the larger of the two excesses (containment − random, points) < 0.  The masks are
    the trained ones, not a sample of test examples, so the evidence is exact (no CI)."""
    def rows_of(a: str, b: str) -> list[Mapping]:
        sel = [r for r in overlap_rows if r["a"] == a and r["b"] == b]
        if not sel:
            raise ValueError(f"p2-fig4-iou: no overlap rows for {a!r} vs {b!r}")
        return sel

    def mean_of(sel: Sequence[Mapping]) -> dict[str, float]:
        return {k: float(np.mean([r[k] for r in sel])) for k in ("containment", "containment_random")}

    tf_rows, gt_rows = rows_of("TaLoS", "FISH 10%"), rows_of("P1 graft", "TaLoS")
    tf, gt = mean_of(tf_rows), mean_of(gt_rows)
    excess = {k: 100 * (v["containment"] - v["containment_random"]) for k, v in
              (("TaLoS in FISH 10%", tf), ("P1 graft in TaLoS", gt))}
    worst = max(excess, key=excess.get)
    s = excess[worst]
    verdict_iou, ev = exact(s, "<", 0.0, len(tf_rows) + len(gt_rows), "mask overlap: the larger of the two mean "
                            "containment excesses over independent random masks of the same sizes (points)")
    return res.add_claim(
        "p2-fig4-iou",
        "Beyond the paper: TaLoS (least-sensitive) masks avoid the entries FISH (most-sensitive) and P1 grafts select.",
        ours=f"TaLoS ∩ FISH-10% = {100 * tf['containment']:.1f} % of TaLoS (random: "
             f"{100 * tf['containment_random']:.1f} %); P1 graft inside TaLoS: {100 * gt['containment']:.1f} % "
             f"(random: {100 * gt['containment_random']:.1f} %)",
        verdict=verdict_iou, evidence=ev, beyond_paper=True, tasks=list(tasks), learned=res.learned_on(tasks),
        note=f"our own question, not a paper claim (not counted in the paper's tally); tasks {list(tasks)}; holds if "
             f"both mean containments (over the tasks' masks, n = {ev.n_examples} mask pairs) are below those of "
             f"independent random masks of the same sizes, i.e. the larger excess ({worst}) < 0 pt; exact, no "
             f"sampling")


__all__ = ["fig4_iou", "fig8_graft", "fig8_sparsity", "fig9_single_task", "single_correctness", "sweep_correctness",
           "task_share"]
