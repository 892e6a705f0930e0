"""The claims of P2 Figs. 1, 10 and 11 (parameter sensitivity), one function each.

The inputs of Figs. 1 / 10 are the chapter's accuracy-ratio tables and per-example test correctness
(:func:`repro.p2.sensitivity.views.edit_examples`: one row per (mask task ``source``, evaluation task ``task``)
with ``ratio``, and ``{source or PRETRAINED: {task: 0/1 per example}}``).  The paper prints heatmaps without
numbers; "keeps the zero-shot performance" is read as mean ratio ≥ 0.97 and every ratio ≥ 0.90, each tested on the
accuracy ratio (edited / pre-trained model on the same test examples) with a paired bootstrap
(:mod:`repro.report.verdicts`): every pair with :func:`repro.report.verdicts.compare`, a mean over pairs with
:func:`ratio_evidence` (all models resampled with the same examples, so a task's ratios move together).  For an F1
task (MRPC) the CI is of the accuracy ratio, while the table shows the F1 ratio.  Fig. 11: the IoUs of masks are
exact; the general overlap claim's CI is a bootstrap over the tasks (:func:`overlap_evidence`), the model-specific
ones are point rules.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from repro.report.gates import Learned, gate, learned, unmeasured, vision_reason
from repro.report.gates import chance_of
from repro.p2.claim_stats import finite_mean, task_means
from repro.p2.sensitivity.runs import RANDOM_SOURCE, mean_off_diagonal
from repro.p2.sensitivity.views import PRETRAINED
from repro.report.results import Results
from repro.report.verdicts import N_RESAMPLES, Evidence, combine_all, compare, paired_bootstrap, verdict_from_ci

KEPT_MEAN, KEPT_MIN = 0.97, 0.90  #: "keeps the zero-shot performance": mean ratio ≥ 0.97, every ratio ≥ 0.90
SHARED_GAP = 0.02  #: "as harmless as the task's own": off-diagonal mean ratio ≥ diagonal mean − 0.02
Correct = Mapping[str, Mapping[str, np.ndarray]]


def learned_zero_shot(res: Results, correct: Correct, tasks: Sequence[str]) -> list[Learned]:
    """The learning gate of a claim about the pre-trained model: its zero-shot per-example correctness must beat
    chance by the margin on every task (a model at chance keeps "its performance" under any edit), recorded on
    ``res``; a task of unknown chance level fails the gate."""
    checks = []
    for t in tasks:
        try:
            checks.append(learned(t, correct[PRETRAINED][t], chance=chance_of(t), model="zero-shot"))
        except KeyError:  # not a task of repro.data.TASKS: a check recorded by the notebook, else a failing one
            checks.append(res.learning.get(t) or unmeasured(t, "zero-shot (no chance level known)"))
    res.record_learning(*checks)
    return res.learned_on(tasks)


def _split(df: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    return df[df.source != RANDOM_SOURCE], float(df[df.source == RANDOM_SOURCE].ratio.mean())


def ratio_evidence(correct: Correct, sources: Sequence[str], tasks: Sequence[str],
                   reduce: Callable[[np.ndarray], float], *, op: str, margin: float, what: str,
                   n_resamples: int = N_RESAMPLES, seed: int = 0) -> tuple[str, Evidence]:
    """Verdict of ``reduce(R) op margin`` for the accuracy-ratio matrix ``R[s, t]`` = acc(model with mask ``s`` on
    t) / acc(pre-trained on t) (Figs. 1 / 10), with a paired bootstrap over the test examples of all tasks: every
    model is resampled with the same examples, the task of each drawn example travels with it (as in
    :func:`repro.p2.task_arithmetic.claims.paired_gap`), and ``R`` is recomputed from the per-task means."""
    cols = {k: np.concatenate([np.asarray(correct[k][t], dtype=float) for t in tasks]) for k in (PRETRAINED, *sources)}
    ids = np.concatenate([np.full(len(correct[PRETRAINED][t]), i, dtype=float) for i, t in enumerate(tasks)])
    samples = [cols[PRETRAINED], *[cols[s] for s in sources], ids]

    def stat(*m: np.ndarray) -> float:
        pre = task_means(m[0], m[-1], len(tasks))[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.stack([np.where(pre > 0, task_means(x, m[-1], len(tasks))[0] / pre, np.nan) for x in m[1:-1]])
        return reduce(r)

    est, lo, hi = paired_bootstrap(samples, stat, n_resamples=n_resamples, seed=seed)
    test = (f"paired bootstrap over the test examples of all tasks (the same for every model), {n_resamples} "
            f"resamples, 95% CI of the {what}")
    return verdict_from_ci(est, lo, hi, n_examples=int(ids.size), seeds=1, margin=float(margin), test=test, op=op)


def kept_parts(correct: Correct, sources: Sequence[str], tasks: Sequence[str]) -> dict[str, tuple[str, Evidence]]:
    """"Keeps the zero-shot performance" as parts for :func:`repro.report.verdicts.combine_all`: the mean ratio over
    all (source, task) pairs ≥ KEPT_MEAN (:func:`ratio_evidence`) and each pair's ratio ≥ KEPT_MIN (``compare``)."""
    parts = {"mean ratio": ratio_evidence(correct, sources, tasks, lambda r: finite_mean(r.ravel()), op=">=",
                                          margin=KEPT_MEAN, what="mean accuracy ratio over all pairs")}
    for s in sources:
        for t in tasks:
            parts[f"{s} → {t}"] = compare(correct[s][t], correct[PRETRAINED][t], op=">=", margin=KEPT_MIN,
                                          kind="ratio")
    return parts


def scored_tasks(correct: Correct, tasks: Sequence[str]) -> list[str]:
    """The tasks on which the pre-trained model gets some example right: an accuracy ratio is defined on them only
    (a random-init stand-in, as in the paper rehearsal, can score 0 on a many-class task)."""
    return [t for t in tasks if float(np.mean(correct[PRETRAINED][t])) > 0]


def undefined_claim(res: Results, cid: str, text: str, paper: str, tasks: Sequence[str]) -> dict:
    """The claim as not testable: the pre-trained model scores 0 on every task, so no accuracy ratio is defined."""
    return res.add_claim(cid, text, paper=paper, ours="no accuracy ratio: the pre-trained model scores 0 on every task",
                         verdict="not-testable", tasks=tasks,
                         note="not testable: the pre-trained model gets no test example right on any task, so every "
                              "accuracy ratio (edited / pre-trained) is undefined")


def _kept_claim(res: Results, cid: str, text: str, paper: str, df: pd.DataFrame, correct: Correct,
                note: str) -> dict:
    fisher, rnd = _split(df)
    sources, every = list(dict.fromkeys(fisher.source)), list(dict.fromkeys(fisher.task))
    tasks = scored_tasks(correct, every)
    if not tasks:
        return undefined_claim(res, cid, text, paper, every)
    if len(tasks) < len(every):
        note += f"; left out (pre-trained accuracy 0, ratio undefined): {', '.join(t for t in every if t not in tasks)}"
    parts = kept_parts(correct, sources, tasks)
    verdict, ev, worst = combine_all(parts)
    return res.add_claim(
        cid, text, paper=paper,
        ours=f"accuracy ratio min {fisher.ratio.min():.3f}, mean {fisher.ratio.mean():.3f} over {len(fisher)} pairs "
             f"(random 10%: mean {rnd:.3f}); deciding part {worst}: {ev.statistic:.3f}, 95% CI "
             f"[{ev.ci_low:.3f}, {ev.ci_high:.3f}]",
        verdict=verdict, evidence=ev, tasks=tasks, learned=learned_zero_shot(res, correct, tasks), per_task=parts,
        note=f"{note}; holds if the 95% CI of the mean accuracy ratio over all pairs lies above {KEPT_MEAN} and that "
             f"of every pair's ratio above {KEPT_MIN}; does not hold if one lies entirely below; paired bootstrap "
             f"over the test examples (edited vs pre-trained model on the same examples) of accuracy ratios (the "
             f"table's ratio is F1 for an F1 task)")


def fig1_pruning(res: Results, pruned: pd.DataFrame, correct: Correct, model: str, n_tasks: int,
                 n_eval: int) -> dict:
    """"pruning the 10 % least-sensitive parameters (diagonal FIM on any task) keeps the zero-shot performance on
    all tasks" (Fig. 1).  Mean ratio ≥ 0.97 and every ratio ≥ 0.90, each at the CI's low end
    (:func:`kept_parts`)."""
    fisher, _ = _split(pruned)
    return _kept_claim(
        res, "p2-fig1-pruning", "Pruning the 10% least-sensitive parameters (diagonal FIM on any one task) keeps the "
        "zero-shot performance on all tasks.", "Fig. 1 (heatmaps ≈ 1)", pruned, correct,
        f"{model}, {n_tasks} tasks, {n_eval or 'all'} test examples each; {int((fisher.ratio < 0.95).sum())} of the "
        "pairs below 0.95")


def fig1_shared(res: Results, pruned: pd.DataFrame, correct: Correct) -> dict:
    """"the least-sensitive parameters can be identified regardless of the task" (contribution 2, Fig. 1).
    Off-diagonal mean ratio ≥ 0.97 and off-diagonal − diagonal mean ≥ −0.02, each at the CI's low end
    (:func:`ratio_evidence`)."""
    fisher, _ = _split(pruned)
    sources, every = list(dict.fromkeys(fisher.source)), list(dict.fromkeys(fisher.task))
    tasks = scored_tasks(correct, every)
    text = ("The least-sensitive parameters can be identified regardless of the task: masks found on another task are "
            "as harmless as the task's own.")
    if not tasks or not any(s in tasks for s in sources):
        return undefined_claim(res, "p2-fig1-shared", text, "contribution 2; Fig. 1", every)
    diag = np.array([[s == t for t in tasks] for s in sources])
    off_mean = lambda r: finite_mean(r[~diag])  # noqa: E731
    parts = {"off-diagonal mean": ratio_evidence(correct, sources, tasks, off_mean, op=">=", margin=KEPT_MEAN,
                                                 what="mean accuracy ratio with another task's mask"),
             "off − diagonal": ratio_evidence(correct, sources, tasks, lambda r: off_mean(r) - finite_mean(r[diag]),
                                              op=">=", margin=-SHARED_GAP,
                                              what="off-diagonal minus diagonal mean accuracy ratio")}
    verdict, ev, worst = combine_all(parts)
    off = mean_off_diagonal(fisher, "source", "task", "ratio")
    own = float(fisher[fisher.source == fisher.task].ratio.mean())
    return res.add_claim(
        "p2-fig1-shared", "The least-sensitive parameters can be identified regardless of the task: masks found on "
        "another task are as harmless as the task's own.", paper="contribution 2; Fig. 1",
        ours=f"mean ratio with another task's mask {off:.3f} vs own mask {own:.3f}; deciding part {worst}: "
             f"{ev.statistic:+.3f}, 95% CI [{ev.ci_low:+.3f}, {ev.ci_high:+.3f}]",
        verdict=verdict, evidence=ev, tasks=tasks, learned=learned_zero_shot(res, correct, tasks),
        note=f"holds if the 95% CI of the off-diagonal mean accuracy ratio lies above {KEPT_MEAN} and that of "
             f"off-diagonal − diagonal mean above −{SHARED_GAP}; does not hold if one lies entirely below; paired "
             "bootstrap over the test examples of all tasks")


def fig10_perturb(res: Results, perturbed: pd.DataFrame, correct: Correct) -> dict:
    """"perturbing the least-sensitive parameters with Gaussian noise also keeps performance" (App. A.7, Fig. 10).
    Mean ratio ≥ 0.97 and every ratio ≥ 0.90, each at the CI's low end (:func:`kept_parts`)."""
    return _kept_claim(
        res, "p2-fig10-perturb", "Perturbing the 10% least-sensitive parameters with Gaussian noise also keeps "
        "performance on all tasks.", "Fig. 10 (heatmaps ≈ 1)", perturbed, correct,
        "noise std 2σ (σ pooled over the selected weights)")


def overlap_evidence(iou: pd.DataFrame, *, op: str, margin: float, n_resamples: int = N_RESAMPLES,
                     seed: int = 0) -> tuple[str, Evidence]:
    """Verdict of ``mIoU op margin`` for the mean IoU over pairs of different tasks (Fig. 11; ``iou``: long form
    ``a, b, iou`` of :func:`repro.p2.sensitivity.runs.iou_matrix`).  The IoUs are exact; the CI is a bootstrap over the
    tasks (each pair shares its tasks with other pairs, so tasks, not pairs, are resampled): the mIoU is recomputed
    over the pairs of drawn tasks that are different tasks."""
    tasks = list(dict.fromkeys(iou.a))
    if len(tasks) < 2:
        raise ValueError(f"Fig. 11 needs masks of at least two tasks, got {tasks}")
    m = iou.pivot(index="a", columns="b", values="iou").loc[tasks, tasks].to_numpy(dtype=float)

    def stat(drawn: np.ndarray) -> float:
        idx = drawn.ravel().astype(int)
        i, j = np.triu_indices(idx.size, 1)
        a, b = idx[i], idx[j]
        keep = a != b
        return float(m[a[keep], b[keep]].mean()) if keep.any() else np.nan

    est, lo, hi = paired_bootstrap([np.arange(len(tasks), dtype=float)], stat, n_resamples=n_resamples, seed=seed)
    test = (f"IoUs exact; bootstrap over the {len(tasks)} tasks (mIoU over the pairs of different drawn tasks), "
            f"{n_resamples} resamples, 95% CI of the mIoU")
    return verdict_from_ci(est, lo, hi, n_examples=len(tasks), seeds=1, margin=float(margin), test=test, op=op)


def fig11_overlap(res: Results, iou: pd.DataFrame, chance: float) -> dict:
    """"low-sensitivity masks of different tasks overlap substantially" (App. A.7, Fig. 11: mIoU 0.3-0.5 for T5,
    > 0.7 for ViT).  mIoU ≥ 0.3, the lowest value the paper reports, at the CI's low end of a bootstrap over tasks
    (:func:`overlap_evidence`)."""
    verdict, ev = overlap_evidence(iou, op=">=", margin=0.3)
    n_tasks = ev.n_examples
    return res.add_claim(
        "p2-fig11-overlap", "Low-sensitivity masks found on different tasks overlap substantially.",
        paper="mIoU 0.3–0.5 (T5-Small) to > 0.7 (ViT-B/32)",
        ours=f"mIoU {ev.statistic:.3f}, 95% CI [{ev.ci_low:.3f}, {ev.ci_high:.3f}] (chance {chance:.3f})",
        verdict=verdict, evidence=ev, tasks=list(dict.fromkeys(iou.a)),
        learned=res.learned_on(dict.fromkeys(iou.a)),
        note=f"holds if the 95% CI of the mIoU over the {n_tasks * (n_tasks - 1) // 2} pairs of different tasks lies "
             "at or above 0.3, the lowest value the paper reports; does not hold if it lies entirely below; the IoUs "
             f"are exact, the CI is a bootstrap over the {n_tasks} tasks (pairs share tasks, so tasks are resampled, "
             "and the mIoU is recomputed over the pairs of different drawn tasks)")


def fig11_vit(res: Results, miou: float, model: str) -> dict:
    """"mIoU > 0.7 for ViT-B/32" (Fig. 11); a vision-only claim (:func:`repro.report.gates.vision_reason`)."""
    return res.add_claim("p2-fig11-vit", "Low-sensitivity masks of different tasks overlap with mIoU > 0.7 for "
                         "ViT-B/32.", paper="> 0.7", ours=f"{miou:.3f} ({model})", tasks=list(res.learning),
                         learned=res.learned_on(res.learning),
                         **gate(bool(miou > 0.7), vision_reason(model), note="holds = mIoU over pairs of different "
                                                                             "tasks > 0.7"))


def fig11_t5(res: Results, miou: float, model: str) -> dict:
    """"for T5-Small the overlap is 0.3-0.5, and larger models share more" (Fig. 11); judged only for t5-small."""
    is_t5 = model == "t5-small"
    return res.add_claim("p2-fig11-t5", "For T5-Small the overlap is 0.3-0.5, and larger models share more "
                         "parameters.", paper="0.3-0.5", ours=f"{miou:.3f} ({model})",
                         holds=bool(0.3 <= miou <= 0.5) if is_t5 else None, tasks=list(res.learning),
                         learned=res.learned_on(res.learning) if is_t5 else None,
                         note="judged only for t5-small; the model-size trend needs several sizes"
                              + ("" if is_t5 else f"; ours is {model}"))


__all__ = ["KEPT_MEAN", "KEPT_MIN", "SHARED_GAP", "fig10_perturb", "fig11_overlap", "fig11_t5", "fig11_vit",
           "fig1_pruning", "fig1_shared", "kept_parts", "overlap_evidence", "ratio_evidence"]
