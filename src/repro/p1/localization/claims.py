"""The claims of P1 Table 2 (§3), one function each, judged with :mod:`repro.report.verdicts`.

Every function takes the chapter's Table 2 runs, ``{(task, k, seed): ft_and_graft(...) output}`` (whose
``correct`` holds per-example correctness of FT and the graft on the same test examples, so every bootstrap is
paired), adds one claim to ``res`` and returns it (a notebook shows it as its verdict box).  Each docstring quotes
the sentence of the paper it tests.

The claims of Fig. 2-5 and Table 1 follow.  Fig. 2 and Fig. 4a compare regions scored on the same test examples
(``sparsity_curve`` rows carry per-example ``correct``), with a paired bootstrap and the regions' actual sizes
stated; Fig. 2 compares the learned region with the top-movement region of *the same actual size*
(``movement-matched``) and a random region of that size (issue 15 §2).  Table 1 pairs grafting, re-training and
BitFit on the same examples.  Fig. 3 and Fig. 5 pair each graft with its FT model scored on the same test
examples (the :class:`~repro.p1.localization.runs.LocalizationSweeps` references and FT scores carry per-example
``correct``); Fig. 4b bounds each zero-outside model's accuracy with a bootstrap CI.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from repro.report.gates import Learned, learned, not_testable
from repro.report.results import Results
from repro.report.verdicts import (LEVEL, N_RESAMPLES, Evidence, combine_all, compare, exact, paired_bootstrap,
                                   verdict_from_ci)

Runs = Mapping[tuple[str, int, int], Mapping[str, Any]]
Row = Mapping[str, Any]


def _stack(runs: Runs, task: str, k: int, key: str) -> np.ndarray | None:
    """``[seeds, examples]`` per-example scores ``key`` of one (task, k), or None if not run."""
    rows = [np.asarray(o["correct"][key], dtype=float) for (t, kk, _), o in sorted(runs.items(), key=lambda kv: kv[0])
            if t == task and kk == k]
    if not rows or len({r.shape for r in rows}) != 1:
        return None
    return np.stack(rows)


def _tasks(runs: Runs, k: int) -> list[str]:
    return sorted({t for (t, kk, _) in runs if kk == k})


def _learning(res: Results, runs: Runs, k: int, tasks: Iterable[str]) -> list[Learned]:
    """The learning gate's checks of ``tasks`` at ``k``-shot: FT's per-example correctness against chance (Table 2
    keeps no per-example zero-shot predictions), recorded on ``res`` for the chapter's later claims."""
    checks = []
    for t in tasks:
        f = _stack(runs, t, k, "ft")
        if f is not None:
            checks.append(learned(t, f))
    res.record_learning(*checks)
    return res.learned_on(tasks)


def _regions(runs: Runs, k: int | None = None) -> dict[str, int]:
    """The smallest learned region of each task (at ``k``-shot), for the empty-region gate."""
    out: dict[str, int] = {}
    for (t, kk, _), o in runs.items():
        if k is None or kk == k:
            out[f"{t} region"] = min(out.get(f"{t} region", 10 ** 18), int(o["mask"].count()))
    return out


def table2_recovery(res: Results, runs: Runs, k: int, base: float, *, beyond_paper: bool = False) -> dict:
    """"grafting […] just this tiny subset onto the pre-trained model gives performance almost as well as the
    fine-tuned model" — Table 2: the graft (≤ 0.01 %) recovers > 95 % of FT's performance on every task (4096-shot).

    Tested per task as accuracy(graft) / accuracy(FT) ≥ 0.95, the CI of the ratio from a paired bootstrap over test
    examples and seeds; the claim holds when every task holds, does not hold when one task does not."""
    per_task = {}
    for task in _tasks(runs, k):
        g, f = _stack(runs, task, k, "graft"), _stack(runs, task, k, "ft")
        if g is not None:
            per_task[task] = compare(g, f, kind="ratio", op=">=", margin=0.95)
    cid = "p1-table2-64shot" if beyond_paper else "p1-table2-recovery"
    if beyond_paper:
        text = "Beyond the paper: does the >95% recovery also hold at 64-shot?"
        paper = "not claimed (the printed 64-shot column falls below 95% for TREC, MRPC, SNLI)"
    else:
        text = ("A graft region of at most 0.01% of the parameters recovers >95% of the fine-tuned model's "
                "performance on every task at 4096-shot, without re-training.")
        paper = ">95% on all 13 tasks (lowest printed ratio 95.4%, MNLI)"
    if not per_task:
        return res.add_claim(cid, text, paper=paper, beyond_paper=beyond_paper, tasks=(),
                             **not_testable(f"no task was run at {k}-shot in this profile's plan"))
    verdict, ev, worst = combine_all(per_task)
    gate = dict(tasks=list(per_task), learned=_learning(res, runs, k, per_task), regions=_regions(runs, k),
                per_task=per_task)
    ours = "; ".join(f"{t} {100 * e.statistic:.1f}% [{100 * e.ci_low:.1f}, {100 * e.ci_high:.1f}]"
                     for t, (_, e) in per_task.items())
    return res.add_claim(cid, text, paper=paper, ours=f"graft/FT accuracy: {ours}", verdict=verdict, evidence=ev,
                         beyond_paper=beyond_paper, **gate,
                         note=f"{k}-shot; γ_base = top-{base:g}; accuracy ratio per task (F1 tasks too); the "
                              f"evidence shown is the deciding task's ({worst})")


def table2_drop(res: Results, runs: Runs, k: int, pair_tasks: Sequence[str], *, pair: bool) -> dict:
    """"the average drop in performance is 0.7 % for single-sentence and 3.4 % for two-sentence tasks" (Table 2,
    4096-shot).  Tested as FT − graft accuracy ≤ 5 points (the > 95 % criterion), on the pooled test examples of
    the group's tasks, paired bootstrap."""
    printed = 3.4 if pair else 0.7
    kind = "Two-sentence" if pair else "Single-sentence"
    cid = "p1-table2-pair-drop" if pair else "p1-table2-single-drop"
    tasks = [t for t in _tasks(runs, k) if (t in pair_tasks) == pair]
    text = (f"{kind} tasks, 4096-shot: the graft loses only a little accuracy on average (the paper: "
            f"{printed} points).")
    stacks = [(_stack(runs, t, k, "ft"), _stack(runs, t, k, "graft")) for t in tasks]
    tasks = [t for t, (f, _) in zip(tasks, stacks) if f is not None]
    stacks = [(f, g) for f, g in stacks if f is not None]
    if not stacks or len({f.shape[0] for f, _ in stacks}) != 1:
        return res.add_claim(cid, text, paper=f"-{printed} points", tasks=tasks,
                             **not_testable(f"no {kind.lower()} task was run at {k}-shot in this profile's plan"))
    ft = np.concatenate([f for f, _ in stacks], axis=1)
    graft = np.concatenate([g for _, g in stacks], axis=1)
    verdict, ev = compare(ft, graft, kind="difference", scale=100, op="<=", margin=5.0)
    per_task = {t: compare(f, g, kind="difference", scale=100, op="<=", margin=5.0) for t, (f, g) in zip(tasks, stacks)}
    return res.add_claim(cid, text, paper=f"-{printed} points", ours=f"-{ev.statistic:.1f} points "
                         f"({', '.join(tasks)})", verdict=verdict, evidence=ev, tasks=tasks,
                         learned=_learning(res, runs, k, tasks), regions=_regions(runs, k), per_task=per_task,
                         note=f"{k}-shot; FT − graft accuracy in points must be ≤ 5 (the >95% criterion)")


def table2_agreement(res: Results, runs: Runs, k: int) -> dict:
    """"the grafted model […] agrees with the fine-tuned model on 93 % (single-sentence) and 86 % (two-sentence)
    of the test examples" (Table 2).  Tested per task as agreement ≥ 86 %, bootstrap over examples and seeds."""
    per_task = {}
    for task in _tasks(runs, k):
        a = _stack(runs, task, k, "agree")
        if a is not None:
            per_task[task] = compare(a, kind="mean", scale=100, op=">=", margin=86.0)
    text = ("Grafted and fine-tuned models agree on most test labels: 93% (single-sentence) and 86% "
            "(two-sentence).")
    paper = "93% / 86% (Table 2 prints 95.2 average for single-sentence)"
    if not per_task:
        return res.add_claim("p1-table2-agreement", text, paper=paper, tasks=(),
                             **not_testable(f"no task was run at {k}-shot"))
    verdict, ev, worst = combine_all(per_task)
    ours = ", ".join(f"{t} {e.statistic:.1f}%" for t, (_, e) in per_task.items())
    return res.add_claim("p1-table2-agreement", text, paper=paper, ours=ours, verdict=verdict, evidence=ev,
                         tasks=list(per_task), learned=_learning(res, runs, k, per_task), regions=_regions(runs, k),
                         per_task=per_task,
                         note=f"{k}-shot; every task must agree on ≥ 86% of test examples; deciding task {worst}")


def table2_size(res: Results, runs: Runs, n_graftable: int) -> dict:
    """"a very small subset of parameters (∼0.01 % of model parameters)" — the learned regions' *actual* sizes,
    ≤ 0.01 % of the graftable parameters (< 8500 of RoBERTa-base's).  An exact count: no CI."""
    sizes = {key: int(o["mask"].count()) for key, o in runs.items()}
    biggest = max(sizes.values())
    share = 100 * biggest / n_graftable
    verdict, ev = exact(share, "<=", 0.01, len(sizes), "size of the largest learned region (% of the graftable "
                        "parameters)", seeds=len({s for (_, _, s) in sizes}))
    return res.add_claim("p1-table2-size", "The graft regions have at most 0.01% of the parameters (< 8500 of "
                         "RoBERTa-base's).", paper="≤ 0.01%, < 8500 parameters",
                         ours=f"largest graft {biggest:,} parameters = {share:.4f}% of {n_graftable:,}",
                         verdict=verdict, evidence=ev, tasks=sorted({t for (t, _, _) in runs}),
                         regions=_regions(runs),
                         note="actual sizes of every learned region of Table 2 (n = number of regions); the "
                              "procedure does not enforce the size")




def _pick(rows: Iterable[Row], **where: Any) -> list[Row]:
    return [r for r in rows if all(r.get(k) == v for k, v in where.items())]


def _one(rows: Iterable[Row], **where: Any) -> Row | None:
    found = _pick(rows, **where)
    return found[0] if found else None


def fig2_learned_region(res: Results, rows: Sequence[Row], k: int) -> dict:
    """"the learned region is much better than the top-movement region and a random region of the same size"
    (Fig. 2, low sparsity).  Tested per task at the smallest target sparsity as accuracy(learned) − accuracy(other)
    > 2 points, other = top-movement with the learned region's actual size and random of that size, paired
    bootstrap over the test examples; holds when every (task, other) pair holds."""
    text = ("At low sparsity the learned region is much better than the top-movement region and than a random "
            "region of the same size.")
    graftable = [r for r in rows if r.get("scope", "graftable") == "graftable"]
    if not graftable:
        return res.add_claim("p1-fig2-learned-region", text, paper="Fig. 2 (plotted only)", tasks=(),
                             **not_testable("no Fig. 2 sweep was run"))
    low = min(r["target_sparsity"] for r in graftable)
    parts, sizes, gaps = {}, [], []
    for task in sorted({r["task"] for r in graftable}):
        at = dict(task=task, target_sparsity=low)
        mine = _one(graftable, region="learned", **at)
        base = _one(graftable, region="movement", **at)
        if mine is None:
            continue
        for other in ("movement-matched", "random"):
            o = _one(graftable, region=other, **at)
            if o is not None:
                parts[f"{task} vs {other}"] = compare(mine["correct"], o["correct"], kind="difference",
                                                      scale=100, op=">", margin=2.0)
                gaps.append(f"{task} − {other} ({o['count']:,}) {parts[f'{task} vs {other}'][1].statistic:+.1f}")
        sizes.append(f"{task}: learned {mine['count']:,}"
                     + (f", γ_base {base['count']:,} ({100 * (mine['acc'] - base['acc']):+.1f} points)"
                        if base is not None else ""))
    if not parts:
        return res.add_claim("p1-fig2-learned-region", text, paper="Fig. 2 (plotted only)", tasks=(),
                             **not_testable("the sweep has no learned region to compare"))
    verdict, ev, worst = combine_all(parts)
    tasks = sorted({r["task"] for r in graftable})
    counts = {f"{r['task']} {r['region']} region": r["count"] for r in graftable if r["target_sparsity"] == low
              and r["region"] in ("learned", "movement-matched", "random")}
    return res.add_claim("p1-fig2-learned-region", text, paper="Fig. 2 (plotted only)",
                         ours=f"at {100 * low:g}%, learned − other in points: {'; '.join(gaps)}",
                         verdict=verdict, evidence=ev, tasks=tasks, learned=res.learned_on(tasks), regions=counts,
                         per_task=parts,
                         note=f"{k}-shot; equal actual sizes (movement-matched = top-|τ| with the learned count; "
                              f"random of the learned count); every gap must exceed 2 points; deciding pair "
                              f"{worst}; sizes {'; '.join(sizes)} (γ_base shown for reference, not decided on)")


def _pooled(runs: Mapping[tuple[str, int], Mapping[str, Any]], key: str) -> np.ndarray | None:
    """``[seeds, examples of every task]`` of ``key``; None when the seeds differ across tasks."""
    tasks = sorted({t for t, _ in runs})
    per_task = [np.stack([np.asarray(runs[(t, s)][key], dtype=float) for s in sorted(s for tt, s in runs if tt == t)])
                for t in tasks]
    if not per_task or len({m.shape[0] for m in per_task}) != 1:
        return None
    return np.concatenate(per_task, axis=1)


def table1_retrain(res: Results, runs: Mapping[tuple[str, int], Mapping[str, Any]], recipe: str) -> dict:
    """"re-training only the graft region […] performs comparably to (slightly better than) grafting" (Table 1:
    +2.2 points on average).  Tested as re-training − grafting ≥ −2 points on the pooled test examples of every
    task and seed, paired bootstrap; both update exactly the learned region's entries (equal size by
    construction).  ``runs[(task, seed)]`` holds per-example ``graft`` / ``retrain`` / ``bitfit`` correctness
    and the ``graft_count`` / ``bitfit_count`` sizes."""
    text = ("Re-training only the graft region from the pre-trained weights is about as good as grafting "
            "(slightly better), so the region is a sub-network of its own.")
    paper = "re-training − grafting: +2.2 points on average (Table 1)"
    g, r = _pooled(runs, "graft"), _pooled(runs, "retrain")
    if g is None or r is None:
        return res.add_claim("p1-table1-retrain", text, paper=paper, tasks=(),
                             **not_testable("no Table 1 task was run (or the tasks have different seed counts)"))
    verdict, ev = compare(r, g, kind="difference", scale=100, op=">=", margin=-2.0)
    tasks = sorted({t for t, _ in runs})
    per_task = {t: compare(_pooled({kk: v for kk, v in runs.items() if kk[0] == t}, "retrain"),
                           _pooled({kk: v for kk, v in runs.items() if kk[0] == t}, "graft"), kind="difference",
                           scale=100, op=">=", margin=-2.0) for t in tasks}
    gate = dict(tasks=tasks, learned=res.learned_on(tasks), per_task=per_task,
                regions={f"{t} region (seed {s})": int(o["graft_count"]) for (t, s), o in runs.items()})
    counts = ", ".join(f"{t} {int(o['graft_count']):,}" for (t, s), o in sorted(runs.items()))
    return res.add_claim("p1-table1-retrain", text, paper=paper, ours=f"re-training − grafting "
                         f"{ev.statistic:+.1f} points", verdict=verdict, evidence=ev, **gate,
                         note=f"re-training may be at most 2 points below grafting; both use the learned region "
                              f"(entries per task and seed: {counts}); re-training recipe {recipe}")


def table1_bitfit(res: Results, runs: Mapping[tuple[str, int], Mapping[str, Any]], recipe: str) -> dict:
    """"BitFit […] performs slightly better than grafting" (Table 1: +2.0 points; BitFit updates ~10× more
    parameters).  Tested as BitFit − grafting ≥ 0 on the pooled test examples, paired bootstrap.  The paper
    compares at unequal size (all biases vs the 0.01 % graft); the counts are stated, the driver has no graft of
    BitFit's size to match."""
    text = "BitFit (all biases, 10x denser than the graft) is slightly more accurate than the 0.01% graft."
    paper = "BitFit − grafting: +2.0 points on average (Table 1)"
    g, b = _pooled(runs, "graft"), _pooled(runs, "bitfit")
    if g is None or b is None:
        return res.add_claim("p1-table1-bitfit", text, paper=paper, tasks=(),
                             **not_testable("no Table 1 task was run (or the tasks have different seed counts)"))
    verdict, ev = compare(b, g, kind="difference", scale=100, op=">=", margin=0.0)
    tasks = sorted({t for t, _ in runs})
    per_task = {t: compare(_pooled({kk: v for kk, v in runs.items() if kk[0] == t}, "bitfit"),
                           _pooled({kk: v for kk, v in runs.items() if kk[0] == t}, "graft"), kind="difference",
                           scale=100, op=">=", margin=0.0) for t in tasks}
    gate = dict(tasks=tasks, learned=res.learned_on(tasks), per_task=per_task,
                regions={f"{t} region (seed {s})": int(o["graft_count"]) for (t, s), o in runs.items()})
    n_bias = max(int(o["bitfit_count"]) for o in runs.values())
    n_graft = max(int(o["graft_count"]) for o in runs.values())
    return res.add_claim("p1-table1-bitfit", text, paper=paper,
                         ours=f"BitFit − grafting {ev.statistic:+.1f} points ({n_bias:,} biases vs grafts of ≤ "
                              f"{n_graft:,} entries" + (f", {n_bias / n_graft:.0f}×)" if n_graft else ")"),
                         verdict=verdict, evidence=ev, **gate,
                         note=f"unequal sizes as in the paper (the claim is about the denser BitFit); BitFit recipe "
                              f"{recipe}")


def fig3_standard_ft(res: Results, rows: Sequence[Row], refs: Sequence[Row]) -> dict:
    """"skill localization is equally good for standard fine-tuning" (Fig. 3).  Tested per task and region size as
    accuracy(learned graft) / accuracy(FT) ≥ 0.95 of the linear-head model, paired bootstrap over the test examples
    both are scored on; holds when every point holds.  ``rows`` are curve rows, ``refs`` the
    :meth:`~repro.p1.localization.runs.LocalizationSweeps.references` rows (FT and pre-trained, with ``correct``)
    of the model(s) to test: a learned row is tested against the FT row of its task and ``label``."""
    text = "Skill localization is equally good for standard fine-tuning (linear head)."
    ft = {(r["task"], r["label"]): r for r in refs if r["model"] == "FT"}
    parts, sizes = {}, []
    for r in _pick(rows, region="learned"):
        f = ft.get((r["task"], r["label"]))
        if f is None:
            continue
        name = f"{r['task']} at {100 * r['target_sparsity']:g}%"
        parts[name] = compare(r["correct"], f["correct"], kind="ratio", op=">=", margin=0.95)
        sizes.append(f"{name}: {r['count']:,} entries")
    if not parts:
        return res.add_claim("p1-fig3-standard-ft", text, paper="Fig. 3 (plotted only)", tasks=(),
                             **not_testable("no Fig. 3 sweep was run"))
    verdict, ev, worst = combine_all(parts)
    ours = "; ".join(f"{n} {100 * e.statistic:.1f}% [{100 * e.ci_low:.1f}, {100 * e.ci_high:.1f}]"
                     for n, (_, e) in parts.items())
    heads = ", ".join(f"{r['task']} {100 * r['acc']:.1f}%" for r in refs if r["model"] == "pre-trained")
    pre = {(r["task"], r["label"]): r for r in refs if r["model"] == "pre-trained"}
    checks = [learned(t, f["correct"], reference=pre[(t, lab)]["correct"] if (t, lab) in pre else None,
                      model=f"FT ({lab})") for (t, lab), f in ft.items()]
    tasks = sorted({t for t, _ in ft})
    return res.add_claim("p1-fig3-standard-ft", text, paper="Fig. 3 (plotted only)",
                         ours=f"learned graft / FT accuracy of the linear-head model: {ours} (its head alone on "
                              f"θ_pre: {heads})", verdict=verdict, evidence=ev, tasks=tasks, learned=checks,
                         regions={f"{r['task']} at {100 * r['target_sparsity']:g}% region": int(r["count"])
                                  for r in _pick(rows, region="learned")}, per_task=parts,
                         note=f"holds if the 95% CI of accuracy(learned graft) / accuracy(FT) of the standard-FT "
                              f"model lies above 0.95 at every region size; paired bootstrap over the test examples "
                              f"both are scored on; deciding {worst}; actual sizes {'; '.join(sizes)}")


def fig4a_bias_only(res: Results, rows: Sequence[Row]) -> dict:
    """"regions made only of biases […] localize the skill poorly" (Fig. 4a).  Tested per task and target size as
    accuracy(unrestricted learned graft) − accuracy(bias-only learned graft) > 2 points, paired bootstrap on the
    same test examples; the actual counts of both regions are stated (the bias graft may grow differently)."""
    text = "Regions made only of biases localize the skill poorly, so FT and BitFit work differently."
    parts, sizes = {}, []
    for b in _pick(rows, region="learned", scope="bias"):
        full = _one(rows, region="learned", scope="graftable", task=b["task"], target_sparsity=b["target_sparsity"])
        if full is None:
            continue
        name = f"{b['task']} at {100 * b['target_sparsity']:g}%"
        parts[name] = compare(full["correct"], b["correct"], kind="difference", scale=100, op=">", margin=2.0)
        sizes.append(f"{name}: unrestricted {full['count']:,} vs bias-only {b['count']:,}")
    if not parts:
        return res.add_claim("p1-fig4a-bias-only", text, paper="Fig. 4a (plotted only)", tasks=(),
                             **not_testable("no target size fits in the biases (or no bias-only graft was run)"))
    verdict, ev, worst = combine_all(parts)
    ours = "; ".join(f"{n} {e.statistic:+.1f} points" for n, (_, e) in parts.items())
    tasks = sorted({b["task"] for b in _pick(rows, region="learned", scope="bias")})
    return res.add_claim("p1-fig4a-bias-only", text, paper="Fig. 4a (plotted only)",
                         ours=f"unrestricted − bias-only learned graft: {ours}", verdict=verdict, evidence=ev,
                         tasks=tasks, learned=res.learned_on(tasks), per_task=parts,
                         regions={f"{b['task']} {b['scope']} region at {100 * b['target_sparsity']:g}%": int(b["count"])
                                  for b in _pick(rows, region="learned")},
                         note=f"every gap must exceed 2 points; deciding {worst}; actual sizes {'; '.join(sizes)}")


def fig4b_lottery(res: Results, rows: Sequence[Row], chance: Mapping[str, float]) -> dict:
    """"keeping a region and zeroing the rest […] captures no skill" (Fig. 4b, lottery tickets without
    re-training).  Tested per task and density as accuracy(zero-outside model) ≤ chance + 10 points at the upper end
    of its bootstrap CI over the test examples (``rows`` from
    :meth:`~repro.p1.localization.runs.LocalizationSweeps.lottery`, with ``correct``); holds when every density
    holds."""
    text = ("Keeping a region and zeroing the other parameters (lottery-ticket style, no re-training) captures no "
            "skill, even for regions as dense as 90%.")
    zo = _pick(rows, method="zero_outside")
    if not zo:
        return res.add_claim("p1-fig4b-lottery", text, paper="Fig. 4b (plotted only)", tasks=(),
                             **not_testable("no lottery density was run"))
    parts = {f"{r['task']} at density {r['target_density']:g}":
             compare(r["correct"], kind="mean", scale=100, op="<=", margin=100 * (chance[r["task"]] + 0.1))
             for r in zo}
    verdict, ev, worst = combine_all(parts)
    ours = "; ".join(f"{n} {e.statistic:.1f}% [{e.ci_low:.1f}, {e.ci_high:.1f}]" for n, (_, e) in parts.items())
    grafts = ", ".join(f"{r['target_density']:g}: {100 * r['acc']:.1f}%" for r in _pick(rows, method="graft"))
    chances = ", ".join(f"{t} {100 * c:.0f}%" for t, c in chance.items())
    return res.add_claim("p1-fig4b-lottery", text, paper="Fig. 4b (plotted only)",
                         ours=f"zero-outside accuracy: {ours} (chance {chances}); grafting the same regions: {grafts}",
                         verdict=verdict, evidence=ev, tasks=sorted({r["task"] for r in zo}),
                         learned=res.learned_on(sorted({r["task"] for r in zo})), per_task=parts,
                         note=f"holds if the 95% CI of every zero-outside model's accuracy lies below chance + 10 "
                              f"points; bootstrap over the test examples; deciding {worst}")


def ratio_gap(ga: Any, fa: Any, gb: Any, fb: Any, *, op: str = ">", margin: float = 2.0,
              n_resamples: int = N_RESAMPLES, seed: int = 0) -> tuple[str, Evidence]:
    """P1 Fig. 5's relative accuracy gap 100 · (acc(ga)/acc(fa) − acc(gb)/acc(fb)) ``op margin`` (points), the CI
    from a paired bootstrap of the four models' per-example correctness on the same test examples."""
    def stat(ga: np.ndarray, fa: np.ndarray, gb: np.ndarray, fb: np.ndarray) -> float:
        da, db = fa.mean(), fb.mean()
        return 100.0 * (ga.mean() / da - gb.mean() / db) if da > 0 and db > 0 else math.nan
    est, lo, hi = paired_bootstrap([ga, fa, gb, fb], stat, n_resamples=n_resamples, seed=seed)
    m = np.atleast_2d(np.asarray(ga, dtype=float))
    test = (f"paired bootstrap over {'seeds and ' if m.shape[0] > 1 else ''}examples, {n_resamples} resamples, "
            f"{LEVEL:.0%} CI of the difference of two graft/FT accuracy ratios (points)")
    return verdict_from_ci(est, lo, hi, n_examples=int(m.shape[1]), seeds=int(m.shape[0]), margin=float(margin),
                           test=test, op=op)


FIG5_LABELS: tuple[str, ...] = ("SGD", "AdamW", "AdamW + l1")


def fig5_adamw(res: Results, rows: Sequence[Row], ft_correct: Mapping[tuple[str, str], Any], recipe: str) -> dict:
    """"models fine-tuned with AdamW […] localize much worse […]; adding an ℓ1 penalty […] restores" sparse
    grafts (Fig. 5).  Tested per task at the smallest region as relative accuracy (graft / FT) of SGD − AdamW > 2
    points and of AdamW + l1 − AdamW > 2 points, paired bootstrap over the test examples every model is scored on
    (:func:`ratio_gap`); holds when both gaps hold on every task.  ``rows``: learned curve rows with ``label`` in
    :data:`FIG5_LABELS` and ``correct``; ``ft_correct[(task, label)]``: that FT model's per-example correctness."""
    text = ("Models fine-tuned with AdamW localize much worse than with SGD; a small l1 penalty (0.001) on the "
            "parameter movement restores sparse grafts.")
    learned_rows = _pick(rows, region="learned")
    at = min((r["target_sparsity"] for r in learned_rows), default=None)
    parts, rel, skipped = {}, [], []
    for task in sorted({r["task"] for r in learned_rows}):
        g = {lab: _one(learned_rows, task=task, label=lab, target_sparsity=at) for lab in FIG5_LABELS}
        f = {lab: ft_correct.get((task, lab)) for lab in FIG5_LABELS}
        if any(v is None for v in (*g.values(), *f.values())):
            continue
        if any(float(np.mean(v)) == 0 for v in f.values()):
            skipped.append(task)
            continue
        for lab, name in (("SGD", "SGD − AdamW"), ("AdamW + l1", "(AdamW + l1) − AdamW")):
            parts[f"{task}: {name}"] = ratio_gap(g[lab]["correct"], f[lab], g["AdamW"]["correct"], f["AdamW"])
        rel.append(f"{task} " + ", ".join(f"{lab} {100 * g[lab]['acc'] / float(np.mean(f[lab])):.1f}%"
                                          for lab in FIG5_LABELS))
    if not parts:
        why = (f"FT accuracy 0 on {', '.join(skipped)}" if skipped
               else "the SGD / AdamW / AdamW + l1 sweeps were not all run")
        return res.add_claim("p1-fig5-adamw", text, paper="Fig. 5 (plotted only)", tasks=skipped,
                             **not_testable(why))
    verdict, ev, worst = combine_all(parts)
    gaps = "; ".join(f"{n} {e.statistic:+.1f} [{e.ci_low:+.1f}, {e.ci_high:+.1f}]" for n, (_, e) in parts.items())
    return res.add_claim("p1-fig5-adamw", text, paper="Fig. 5 (plotted only)",
                         ours=f"at {100 * at:g}%, graft / FT accuracy: {'; '.join(rel)}; gaps in points: {gaps}",
                         verdict=verdict, evidence=ev, tasks=sorted({n.split(":")[0] for n in parts}),
                         learned=[learned(t, v, model=f"FT ({lab})") for (t, lab), v in ft_correct.items()
                                  if any(n.startswith(f"{t}:") for n in parts)],
                         regions={f"{r['task']} {r['label']} region": int(r["count"]) for r in learned_rows
                                  if r["target_sparsity"] == at}, per_task=parts,
                         note=f"holds if the 95% CIs of both gaps in relative accuracy (graft / FT; SGD − AdamW and "
                              f"(AdamW + l1) − AdamW) lie above +2 points on every task, at the smallest region; "
                              f"paired bootstrap over the test examples all six models are scored on; deciding "
                              f"{worst}; AdamW recipe {recipe}"
                              + (f"; not tested (FT accuracy 0): {', '.join(skipped)}" if skipped else ""))


__all__ = ["FIG5_LABELS", "fig2_learned_region", "fig3_standard_ft", "fig4a_bias_only", "fig4b_lottery", "fig5_adamw",
           "ratio_gap", "table1_bitfit", "table1_retrain", "table2_agreement", "table2_drop", "table2_recovery",
           "table2_size"]
