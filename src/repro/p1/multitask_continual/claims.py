"""The claims of P1 §5 (multi-task regions, Fig. 8; continual learning, Table 4), one function each.

Every function takes the rows the chapter (``notebooks/p1_multitask_continual.md``) computed, adds one claim to
``res`` and returns it.  Each docstring quotes the sentence of the paper it tests.

The MT-vs-FT claim (Fig. 8 / App. C.1), the Eq. 5 Rel claims (Fig. 8b-d) and the Table 4 claims take per-example
0/1 correctness of the compared models on the same test examples (:func:`repro.p1.multitask_continual.runs.paired_correct`,
:func:`repro.p1.multitask_continual.runs.rel_correct`) and are judged with :mod:`repro.report.verdicts` (paired bootstrap
CI, verdict + evidence).  The overlap claim (Fig. 8a) is exact (counts of trained regions, no sampling) and is
recorded with a zero-width CI; the Rel asymmetry claim keeps a point rule, its note says so.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

from repro.p1.multitask import relative_gain
from repro.report.gates import Learned, learned, not_testable
from repro.report.results import Results
from repro.report.verdicts import N_RESAMPLES, Evidence, combine_all, compare, exact, paired_bootstrap, verdict_from_ci

Rows = Sequence[Mapping[str, Any]]
#: task → model name → per-example 0/1 correctness on the same test examples
#: (:func:`repro.p1.multitask_continual.runs.paired_correct`)
Correct = Mapping[str, Mapping[str, Any]]
UNDEFINED = ("Rel (Eq. 5) is undefined: the MT model gains nothing over θ_pre on some task of this run (the "
             "denominator P_1 − P_0 ≤ 0)")
POINT = "point rule, no CI (the driver gives accuracies per task, not per-example correctness)"


def _mean(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x == x]
    return sum(xs) / len(xs) if xs else float("nan")


def _learned_mt(res: Results, correct: Correct, tasks: Sequence[str]) -> list[Learned]:
    """The learning gate's checks of the MT model: its per-example correctness against θ_pre's on the same test
    examples (paired), recorded on ``res``."""
    res.record_learning(*(learned(t, correct[t]["MT"], reference=correct[t]["pre"], model="MT") for t in tasks
                          if t in correct and "MT" in correct[t] and "pre" in correct[t]))
    return res.learned_on(tasks)


def fig8_disjoint(res: Results, ov_sum: Mapping[str, float], n_regions: int, tasks: Sequence[str] = ()) -> dict:
    """"Similar tasks, like (SST-2, CR), and (SNLI, MNLI), show relatively higher overlap in grafting regions"
    (Fig. 8a), the regions being nearly disjoint otherwise: mean off-diagonal overlap < 0.2 and the similar pairs
    overlap more than the others (when a similar pair is among the tasks).  Overlaps are exact counts of the
    ``n_regions`` trained regions (no sampling): each part is an exact statistic, combined with :func:`combine_all`."""
    pairs = n_regions * (n_regions - 1)
    parts = {"mean off-diagonal overlap < 0.2": exact(ov_sum["mean_offdiag"], "<", 0.2, pairs,
                                                      "mean overlap over the ordered pairs of distinct regions")}
    if ov_sum["mean_similar"] == ov_sum["mean_similar"]:  # a similar pair is among the MT tasks
        parts["similar − other pairs > 0"] = exact(ov_sum["mean_similar"] - ov_sum["mean_other"], ">", 0.0, pairs,
                                                   "mean overlap of the similar pairs minus that of the other pairs")
    verdict, ev, worst = combine_all(parts)
    return res.add_claim(
        "p1-fig8-disjoint",
        "Task-specific regions of a multi-task model overlap very little, and similar tasks (SST-2/CR, SNLI/MNLI) "
        "overlap more.", paper="Fig. 8a (heatmap, values not printed)",
        ours=f"mean off-diagonal overlap {ov_sum['mean_offdiag']:.3f} (max {ov_sum['max_offdiag']:.3f}); similar "
             f"pairs {ov_sum['mean_similar']:.3f} vs other pairs {ov_sum['mean_other']:.3f}",
        verdict=verdict, evidence=ev, tasks=list(tasks), learned=res.learned_on(tasks),
        regions={"regions": n_regions},
        note=f"holds if the mean overlap |γi ∩ γj| / |γj| over the {pairs} ordered pairs of distinct regions is < 0.2 "
             "and the similar pairs overlap more than the others (when a similar pair is among the tasks), does not "
             f"hold otherwise; exact counts of the learned regions, no sampling; the evidence shown is the deciding "
             f"part's ({worst})")


def _rel_test(correct: Correct, cells: Sequence[tuple[str, str]], reduce: Callable[[dict], float], op: str,
              margin: float, what: str) -> tuple[str, Evidence]:
    """``reduce({(model, task): Rel})  op  margin`` for Eq. 5 Rel values, Rel = (P_γ − P_0) / (P_1 − P_0), with a
    paired bootstrap over the pooled test examples of the tasks in ``cells``: θ_pre (``pre``), the MT model
    (``MT``) and every grafted model are resampled with the same indices, Rel recomputed on each resample."""
    tasks = list(dict.fromkeys(t for _, t in cells))
    models = list(dict.fromkeys(m for m, _ in cells))
    n = {t: len(correct[t]["pre"]) for t in tasks}
    task_id = np.concatenate([np.full(n[t], i, dtype=float) for i, t in enumerate(tasks)])

    def pooled(model: str) -> np.ndarray:  # zeros where a model is not scored on a task: never read
        return np.concatenate([np.asarray(correct[t].get(model, np.zeros(n[t])), dtype=float).ravel()
                               for t in tasks])

    def stat(tid: np.ndarray, pre: np.ndarray, mt: np.ndarray, *grafted: np.ndarray) -> float:
        arrays = {"pre": pre, "MT": mt, **dict(zip(models, grafted))}
        on = {t: tid == i for i, t in enumerate(tasks)}
        acc = {(m, t): float(arrays[m][on[t]].mean()) if on[t].any() else float("nan")
               for m, t in {*cells, *((x, t) for t in tasks for x in ("pre", "MT"))}}
        return reduce({(m, t): relative_gain(acc[(m, t)], acc[("pre", t)], acc[("MT", t)]) for m, t in cells})

    est, lo, hi = paired_bootstrap([task_id, pooled("pre"), pooled("MT"), *map(pooled, models)], stat)
    return verdict_from_ci(est, lo, hi, n_examples=int(task_id.size), seeds=1, margin=float(margin), op=op,
                           test=f"paired bootstrap over the pooled test examples of {', '.join(tasks)} (θ_pre, MT and "
                                f"grafted models on the same examples), {N_RESAMPLES} resamples, 95% CI of {what}")


def _point_rel(correct: Correct, cells: Sequence[tuple[str, str]]) -> dict[tuple[str, str], float]:
    """Eq. 5 Rel of every (model, task) cell from the per-example correctness (the driver's values)."""
    acc = (lambda t, m: float(np.mean(correct[t][m])))
    return {(m, t): relative_gain(acc(t, m), acc(t, "pre"), acc(t, "MT")) for m, t in cells}


def _diag_off(rel: Mapping[tuple[str, str], float]) -> tuple[float, float]:
    """Mean Rel of the single-task regions (``single:<task>``) on their own task, and on the other tasks."""
    return (_mean([v for (m, t), v in rel.items() if m == f"single:{t}"]),
            _mean([v for (m, t), v in rel.items() if m != f"single:{t}"]))


def fig8_isolation(res: Results, correct: Correct, tasks: Sequence[str], margin: float = 0.2) -> dict:
    """"The grafted model of a task only does well on itself and a few similar tasks" (Fig. 8b): mean Rel on the
    region's own task exceeds the mean off-diagonal Rel by > ``margin``.  ``correct`` is
    :func:`repro.p1.multitask_continual.runs.rel_correct`'s output (regions ``single:<task>``); the CI of the difference comes
    from a paired bootstrap over the pooled test examples (Rel recomputed on each resample)."""
    text = "The grafted model of a single task's region only does well on that task and a few similar tasks."
    cells = [(f"single:{r}", t) for r in tasks for t in tasks]
    diag, off = _diag_off(_point_rel(correct, cells))
    if diag != diag or off != off:
        return res.add_claim("p1-fig8-isolation", text, paper="Fig. 8b", tasks=list(tasks),
                             **not_testable(UNDEFINED))
    verdict, ev = _rel_test(correct, cells, lambda rel: float(np.subtract(*_diag_off(rel))), ">", margin,
                            "mean diagonal − mean off-diagonal Rel")
    return res.add_claim(
        "p1-fig8-isolation", text, paper="Fig. 8b",
        ours=f"mean Rel on its own task {diag:.2f}, on the other tasks {off:.2f}; difference {ev.statistic:+.2f} "
             f"[{ev.ci_low:+.2f}, {ev.ci_high:+.2f}]",
        verdict=verdict, evidence=ev, tasks=list(tasks), learned=_learned_mt(res, correct, tasks),
        note=f"Rel = Eq. 5 on each task's label-balanced test subset; holds if the 95 % CI of (mean Rel of a region "
             f"on its own task − mean Rel on the other tasks) lies above +{margin:g}, does not hold if it lies below; "
             f"paired bootstrap over the {ev.n_examples} pooled test examples ({len(tasks)} regions × {len(tasks)} "
             "tasks, θ_pre, MT and grafted models on the same examples, Rel recomputed on each resample)")


def fig8_union(res: Results, correct: Correct, groups: Mapping[str, Sequence[str]], tune_steps: int,
               threshold: float = 0.7, margin: float = 0.05) -> dict:
    """"The grafted model with union of regions for a subset G of tasks only does well on the tasks in G and
    similar tasks (all values higher than 0.7)" (Fig. 8c); "10 gradient steps […] cause the accuracy gain on
    relevant tasks to be even higher (around ∼80 %)" (§5.1, Fig. 8d).

    ``correct`` is :func:`repro.p1.multitask_continual.runs.rel_correct`'s output (regions ``union:<group>``,
    ``tuned:<group>`` on the group's tasks).  (c) every in-group Rel of the unions > ``threshold``, as the caption
    states it (not a mean): the smallest one.  (d) the tuned unions' mean in-group Rel on the *test* split exceeds
    the unions' by ≥ ``margin``.  "Tuned ≥ union" alone would be guaranteed by construction — the union itself
    (step 0) is a candidate of ``learn_joint_graft``, selected on train+dev — so the rule asks for a gain on held-out
    test data instead.  Each part a paired bootstrap over the pooled test examples of the groups' tasks."""
    text = ("The union of a task group's regions keeps about 70% of the accuracy gains for the group and related "
            "tasks (every value > 0.7), about 80% after 10 gradient steps.")
    paper = "~70% (all > 0.7) -> ~80%"
    if not groups:
        return res.add_claim("p1-fig8-union", text, paper=paper, tasks=(),
                             **not_testable("no task group among this run's MT tasks"))
    union = [(f"union:{g}", t) for g, members in groups.items() for t in members]
    members_all = list(dict.fromkeys(t for _, t in union))
    tuned = [(f"tuned:{g}", t) for g, members in groups.items() for t in members
             if f"tuned:{g}" in correct.get(t, {})]

    def group_mean(rel: dict, kind: str) -> float:  # the mean over groups of each group's mean in-group Rel
        return _mean([_mean([rel[(f"{kind}:{g}", t)] for t in members]) for g, members in groups.items()])

    point = _point_rel(correct, union + tuned)
    if any(v != v for v in point.values()):
        return res.add_claim("p1-fig8-union", text, paper=paper, tasks=members_all, **not_testable(UNDEFINED))
    parts = {f"min in-group Rel of the unions > {threshold:g}": _rel_test(
        correct, union, lambda rel: min(rel.values()), ">", threshold, "the smallest in-group Rel of the unions")}
    ours = f"unions: min in-group Rel {min(point.values()):.2f} (mean {group_mean(point, 'union'):.2f})"
    if tuned:
        parts[f"tuned − union mean in-group Rel ≥ {margin:g}"] = _rel_test(
            correct, union + tuned, lambda rel: group_mean(rel, "tuned") - group_mean(rel, "union"), ">=", margin,
            "tuned − union mean in-group Rel")
        d_in = group_mean(point, "tuned")
        ours += (f"; after {tune_steps} joint graft steps mean in-group Rel {d_in:.2f} "
                 f"({d_in - group_mean(point, 'union'):+.2f} on test)")
    else:
        ours += "; the joint-loss steps were not run"
    verdict, ev, worst = combine_all(parts)
    ours += "; " + "; ".join(f"{name}: {e.statistic:+.2f} [{e.ci_low:+.2f}, {e.ci_high:+.2f}]"
                             for name, (_, e) in parts.items())
    return res.add_claim(
        "p1-fig8-union", text, paper=paper, ours=ours, verdict=verdict, evidence=ev, tasks=members_all,
        learned=_learned_mt(res, correct, members_all),
        note=f"holds if the 95 % CI of the smallest in-group Rel of the unions lies above {threshold:g} (Fig. 8c "
             f"caption: every value) and that of the tuned unions' mean in-group Rel minus the unions' on the test "
             f"split above +{margin:g}; does not hold if one lies wholly on the wrong side; 'tuned ≥ union' alone is "
             "guaranteed by construction (the union is step 0 of learn_joint_graft, selected on train+dev), so only "
             f"a held-out test gain counts; paired bootstrap over the {ev.n_examples} pooled test examples of the "
             f"groups' tasks (Rel recomputed on each resample); the evidence shown is the deciding part's ({worst})")


def fig8_asymmetry(res: Results, single: Rows, threshold: float = 0.3) -> dict | None:
    """"the MRPC region helps QQP but the QQP region does not help MRPC; the QNLI region helps QQP" (Fig. 8b).
    'helps' = Rel > 0.3; None (no claim) when QNLI and QQP are not both among the MT tasks."""
    rel = {(r["region"], r["task"]): r["rel"] for r in single}
    if ("QNLI", "QQP") not in rel:
        return None
    parts = [f"Rel(γ_QNLI → QQP) = {rel[('QNLI', 'QQP')]:.2f}"]
    ok = rel[("QNLI", "QQP")] > threshold
    mrpc = ("MRPC", "QQP") in rel
    if mrpc:
        parts.append(f"Rel(γ_MRPC → QQP) = {rel[('MRPC', 'QQP')]:.2f}, Rel(γ_QQP → MRPC) = {rel[('QQP', 'MRPC')]:.2f}")
        ok = ok and rel[("MRPC", "QQP")] > rel[("QQP", "MRPC")]
    return res.add_claim("p1-fig8-asymmetry", "The MRPC region helps QQP but the QQP region does not help MRPC; the "
                         "QNLI region helps QQP.", paper="Fig. 8b", ours="; ".join(parts), holds=bool(ok),
                         tasks=["QNLI", "QQP"] + (["MRPC"] if mrpc else []),
                         learned=res.learned_on(["QNLI", "QQP"] + (["MRPC"] if mrpc else [])),
                         note=f"'helps' = Rel > {threshold:g}" + ("" if mrpc else "; MRPC is not among this "
                                                                   "profile's MT tasks, only the QNLI -> QQP part is "
                                                                   "tested") + f"; {POINT}")


def _pooled(correct: Correct, tasks: Sequence[str], model: str) -> np.ndarray:
    """``model``'s per-example 0/1 correctness on ``tasks``, concatenated (the same examples for every model)."""
    return np.concatenate([np.asarray(correct[t][model], dtype=float).ravel() for t in tasks])


def _acc(correct: Correct, task: str, model: str) -> float:
    """Accuracy in points of ``model`` on ``task`` from its per-example correctness."""
    return 100.0 * float(np.mean(correct[task][model]))


def _ci(ev: Evidence) -> str:
    """The evidence's difference and its CI in points, as the ``ours`` texts print it."""
    return f"{ev.statistic:+.1f} points [{ev.ci_low:+.1f}, {ev.ci_high:+.1f}]"


def fig8_mt_accuracy(res: Results, correct: Correct, margin: float = 3.0) -> dict | None:
    """"the multi-task model's accuracy is comparable with single-task FT" (App. C.1): MT − FT accuracy within
    ±``margin`` points, pooled over the tasks with a single-task FT reference.  None when there is none.

    ``correct[task]`` = ``{"MT": …, "FT": …}`` per-example 0/1 on the same test examples.  "Within ±3" is an
    equivalence statement, so it holds only when the whole 95 % CI of the signed difference lies inside [−3, +3]:
    two one-sided checks on the same bootstrap CI (MT − FT ≥ −3 and ≤ +3), combined with :func:`combine_all`.
    The signed CI (rather than a percentile CI of |MT − FT|, which is folded and biased upwards near 0) also
    shows which model is ahead."""
    tasks = [t for t, c in correct.items() if "MT" in c and "FT" in c]
    if not tasks:
        return None
    mt, ft = _pooled(correct, tasks, "MT"), _pooled(correct, tasks, "FT")
    parts = {f"MT − FT ≥ −{margin:g}": compare(mt, ft, kind="difference", scale=100, op=">=", margin=-margin),
             f"MT − FT ≤ +{margin:g}": compare(mt, ft, kind="difference", scale=100, op="<=", margin=margin)}
    verdict, ev, side = combine_all(parts)
    res.record_learning(*(learned(t, correct[t]["MT"], model="MT") for t in tasks))
    per_task = "; ".join(f"{t}: MT {_acc(correct, t, 'MT'):.1f} vs FT {_acc(correct, t, 'FT'):.1f}" for t in tasks)
    return res.add_claim("p1-fig8-mt-accuracy", "The multi-task model's accuracy is comparable with single-task FT.",
                         paper="comparable (no numbers printed)", ours=f"MT − FT {_ci(ev)} ({per_task})",
                         verdict=verdict, evidence=ev, tasks=tasks,
                         learned=[learned(t, correct[t]["FT"]) for t in tasks]
                         + [learned(t, correct[t]["MT"], model="MT") for t in tasks],
                         per_task={t: compare(correct[t]["MT"], correct[t]["FT"], kind="difference", scale=100,
                                              op=">=", margin=-margin) for t in tasks},
                         note=f"holds if the 95 % CI of MT − FT test accuracy (points) lies inside [−{margin:g}, "
                              f"+{margin:g}], does not hold if it lies wholly outside; paired bootstrap over the "
                              f"{ev.n_examples} pooled test examples of {', '.join(tasks)} (each task's label-balanced "
                              f"subset of the Eq. 5 heatmaps, both models on the same examples); two one-sided "
                              f"checks on one CI, the evidence shown is the binding side ({side})")


def table4_forgetting(res: Results, correct: Correct, sequence: Sequence[str], margin: float = 10.0) -> dict:
    """"naive continual fine-tuning loses about 20 % on QNLI (88.0 → 67.5)" (Table 4): FT − naive continual FT
    accuracy on the first task ≥ ``margin`` points, paired bootstrap over its test examples.

    ``correct[task]`` = ``{"FT", "ContinualFT", "GraftingContinual"}`` per-example 0/1 on the task's test set."""
    q = sequence[0]
    verdict, ev = compare(correct[q]["FT"], correct[q]["ContinualFT"], kind="difference", scale=100, op=">=",
                          margin=margin)
    return res.add_claim("p1-table4-forgetting",
                         "Naive continual fine-tuning loses about 20% accuracy on the first task, QNLI (88.0 -> 67.5).",
                         paper="88.0 -> 67.5",
                         ours=f"{q} {_acc(correct, q, 'FT'):.1f} -> {_acc(correct, q, 'ContinualFT'):.1f}; "
                              f"FT − naive {_ci(ev)}",
                         verdict=verdict, evidence=ev, tasks=[q], learned=[learned(q, correct[q]["FT"])],
                         note=f"holds if the 95 % CI of FT − naive-continual test accuracy on the first task ({q}) "
                              f"lies above +{margin:g} points, does not hold if it lies below; paired bootstrap over its "
                              f"{ev.n_examples} test examples, both models on the same examples")


def table4_graft_continual(res: Results, correct: Correct, sequence: Sequence[str], keep: float = 5.0,
                           first: float = 3.0, newer: float = 5.0) -> dict:
    """"grafting-based continual learning keeps QNLI (86.5) and changes the newer tasks little (AGNews 90.8,
    SST-2 92.5)" (Table 4): on the first task graft-continual − naive ≥ ``keep`` and FT − graft-continual ≤
    ``first`` points; on each newer task FT − graft-continual ≤ ``newer``.  Each part a paired bootstrap over that
    task's test examples; the claim holds when every part holds (:func:`combine_all`)."""
    q = sequence[0]
    c = correct[q]
    parts = {f"{q}: graft-continual − naive ≥ {keep:g}": compare(c["GraftingContinual"], c["ContinualFT"],
                                                                  scale=100, op=">=", margin=keep),
             f"{q}: FT − graft-continual ≤ {first:g}": compare(c["FT"], c["GraftingContinual"], scale=100, op="<=",
                                                               margin=first)}
    for t in sequence[1:]:
        parts[f"{t}: FT − graft-continual ≤ {newer:g}"] = compare(correct[t]["FT"], correct[t]["GraftingContinual"],
                                                                  scale=100, op="<=", margin=newer)
    verdict, ev, worst = combine_all(parts)
    accs = "; ".join(f"{t} {_acc(correct, t, 'GraftingContinual'):.1f} (FT {_acc(correct, t, 'FT'):.1f}"
                     + (f", naive {_acc(correct, t, 'ContinualFT'):.1f})" if t == q else ")") for t in sequence)
    return res.add_claim("p1-table4-graft-continual",
                         "Grafting-based continual learning keeps QNLI (86.5) and changes the newer tasks little "
                         "(AGNews 90.8, SST-2 92.5).", paper="86.5 / 90.8 / 92.5",
                         ours=f"{accs}; deciding part {worst}: {_ci(ev)}", verdict=verdict, evidence=ev,
                         tasks=list(sequence), learned=[learned(t, correct[t]["FT"]) for t in sequence],
                         per_task=parts,
                         note=f"holds if every part holds: on the first task ({q}) the 95 % CI of graft-continual − "
                              f"naive test accuracy lies above +{keep:g} points and that of FT − graft-continual "
                              f"below +{first:g}; on each newer task that of FT − graft-continual below +{newer:g}; "
                              "does not hold if one part's CI lies wholly on the wrong side; paired bootstrap over "
                              "each task's test examples (all models on the same examples); the evidence shown is "
                              f"the deciding part's ({worst})")


def fig11_not_run(res: Results, profile: str, region_bases: Sequence[float]) -> dict:
    """Figs. 11-12 ("with γ_base = top-1e-5 / top-1e-4 the regions intersect more") when the plan skips them."""
    return res.add_claim("p1-fig11-base", "With γ_base = top-1e-5 / top-1e-4 the regions intersect more, with the "
                         "same pattern as Fig. 8.", paper="Figs. 11-12", ours=None, holds=None, tasks=(),
                         note=f"not run in the {profile} profile (region_bases={list(region_bases)})")


__all__ = ["fig11_not_run", "fig8_asymmetry", "fig8_disjoint", "fig8_isolation", "fig8_mt_accuracy", "fig8_union",
           "table4_forgetting", "table4_graft_continual"]
