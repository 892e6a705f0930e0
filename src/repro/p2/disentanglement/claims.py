"""The claims of P2 §5.2 and App. A.4 (``notebooks/p2_disentanglement.md``), one function each.

Each function takes the chapter's table rows, adds one claim to ``res`` and returns it (the notebook shows it
as a verdict box); each docstring quotes what the paper says.  The T5 ξ claim (Fig. 2) and the post-hoc
linearization claim (Fig. 6) are judged with a paired bootstrap over the same test examples: the mean ξ is a mean
over examples of each example's share of disagreeing grid points (:func:`xi_gap`), and the linearization gap a
difference of per-example correctness (:func:`linear_gap_parts`).  The other rules compare means over a grid, over
tasks or over a few examples whose per-example values the chapter does not keep, so they stay point rules (no CI)
and each note says so.  The claims about ViT-B/32 are judged only on a vision model
(:func:`repro.report.gates.vision_reason`); the T5 claim only on a language model.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from repro.report.gates import gate, is_vision_model, vision_reason
from repro.p2.claim_stats import finite_mean, task_means
from repro.p2.methods import METHODS, P2_METHODS
from repro.report.results import Results
from repro.report.verdicts import N_RESAMPLES, Evidence, combine_all, paired_bootstrap, verdict_from_ci

LABELS: dict[str, str] = {k: METHODS[k].label for k in P2_METHODS}
FT, LIN, LLORA, LOTA, TALOS = (LABELS[k] for k in ("ft", "linearized", "l-lora", "lota", "talos"))
POINT_RULE = "point rule on means (no per-example pairing, no CI)"


def _by_method(rows: Sequence[Mapping], what: str, metric: str | None = None) -> dict[str, float]:
    """Mean ``value`` per method; every P2 method must be there (a missing one is an error, not a dropped clause)."""
    vals: dict[str, list[float]] = {}
    for r in rows:
        if metric is None or r.get("metric") == metric:
            vals.setdefault(r["method"], []).append(float(r["value"]))
    missing = [m for m in LABELS.values() if m not in vals]
    if missing:
        raise ValueError(f"{what}: no rows for {missing}; every P2 method ({list(LABELS.values())}) must be "
                         "evaluated (the linearized ones on their linearized network) before its claim is judged")
    return {m: float(np.mean(v)) for m, v in vals.items()}


def row_tasks(rows: Sequence[Mapping]) -> list[str]:
    """The tasks named in a chapter's rows (``task``, ``a``, ``b``, ``task_a``, ``task_b``, ``pair`` entries; a
    pair row's "A + B" names two tasks, as :mod:`repro.p2.disentanglement.views` writes them)."""
    out: list[str] = []
    for r in rows:
        for k in ("task", "a", "b", "task_a", "task_b", "pair"):
            v = r.get(k)
            for t in (v if isinstance(v, (list, tuple)) else [v]):
                for one in (t.split(" + ") if isinstance(t, str) else []):
                    if one not in out:
                        out.append(one)
    return out


def _learned(res: Results, rows: Sequence[Mapping]) -> list:
    """The recorded learning checks of the rows' tasks (of every recorded task when the rows name none); a claim
    with no recorded check fails the learning gate."""
    tasks = row_tasks(rows) or list(res.learning)
    return res.learned_on(tasks or ["the chapter's tasks"])


def language_reason(model: str) -> str | None:
    """Why a T5 (language) claim is not testable with ``model`` (or None for a text model)."""
    if not is_vision_model(model):
        return None
    return f"language claim: judged only on a text model, and this profile's model is {model}"


def fig2_vision(res: Results, fig2_rows: Sequence[Mapping], model: str, setting: str) -> dict:
    """"non-linear FT is much less disentangled than linearized FT, L-LoRA and TaLoS, TaLoS being the most
    disentangled; LoTA is much less" — P2 Fig. 2 (ViT-B/32).  Holds when ξ(TaLoS) is the lowest, LoTA is above
    TaLoS and both linearized methods are below non-linear FT (mean ξ over the grid and the pairs)."""
    xi = _by_method(fig2_rows, "p2-fig2", "disentanglement_error")
    ok = (xi[TALOS] <= min(xi.values()) and xi[TALOS] < xi[FT] and xi[LOTA] > xi[TALOS]
          and xi[LIN] < xi[FT] and xi[LLORA] < xi[FT])
    txt = ", ".join(f"{m} {v:.3f}" for m, v in sorted(xi.items(), key=lambda kv: kv[1]))
    return res.add_claim(
        "p2-fig2-vision",
        "On ViT-B/32, linearized FT, L-LoRA and TaLoS are more weight-disentangled than non-linear FT, TaLoS the "
        "most; LoTA is much less disentangled.",
        paper="Fig. 2 (heatmaps)", ours=f"mean ξ: {txt}",
        tasks=row_tasks(fig2_rows), learned=_learned(res, fig2_rows),
        **gate(bool(ok), vision_reason(model),
               note=f"{model}, {setting}; holds = TaLoS lowest ξ, LoTA above TaLoS, and Linearized FT and L-LoRA "
                    f"(on their linearized network) below non-linear FT; {POINT_RULE}"))


#: ``{method: {pair: (d1, d2)}}``: each test example's share of disagreeing grid points, per task of the pair
#: (:func:`repro.p2.disentanglement.views.fig2_tables`)
Disagreement = Mapping[str, Mapping[str, Sequence[Sequence[float]]]]


def _ci(ev: Evidence) -> str:
    return f"{ev.statistic:+.3g} [{ev.ci_low:+.3g}, {ev.ci_high:+.3g}]"


def xi_gap(disagreement: Disagreement, a: str, b: str, *, op: str = "<", margin: float = 0.0,
           n_resamples: int = N_RESAMPLES, seed: int = 0) -> tuple[str, Evidence]:
    """Verdict of ``ξ̄(a) − ξ̄(b) op margin`` (P2 Eq. 10, ξ averaged over the grid and the task pairs) with a paired
    bootstrap over the test examples: ξ̄ = mean over pairs of Σ_t (mean over task t's examples of the share of grid
    points at which the example disagrees); every method is scored on the same examples, and the (pair, task)
    group of each resampled example travels with it."""
    pairs = sorted(disagreement[a])
    if sorted(disagreement[b]) != pairs:
        raise ValueError(f"p2-fig2: {a} and {b} are evaluated on different pairs")
    xs = {m: np.concatenate([np.asarray(d, dtype=float) for p in pairs for d in disagreement[m][p]])[None, :]
          for m in (a, b)}
    ids = np.concatenate([np.full(len(d), g, dtype=float) for g, d in
                          enumerate(d for p in pairs for d in disagreement[a][p])])[None, :]
    n_groups = int(ids.max()) + 1

    def stat(x: np.ndarray, y: np.ndarray, i: np.ndarray) -> float:
        per_pair = n_groups / len(pairs)  # ξ of a pair sums its tasks' terms
        return per_pair * (finite_mean(task_means(x, i, n_groups)) - finite_mean(task_means(y, i, n_groups)))

    est, lo, hi = paired_bootstrap([xs[a], xs[b], ids], stat, n_resamples=n_resamples, seed=seed)
    return verdict_from_ci(est, lo, hi, n_examples=int(ids.shape[1]), seeds=1, margin=float(margin), op=op,
                           test=f"paired bootstrap over the test examples of {len(pairs)} task pairs, {n_resamples} "
                                f"resamples, 95% CI of the difference in mean ξ")


def fig2_language(res: Results, fig2_rows: Sequence[Mapping], disagreement: Disagreement, model: str,
                  setting: str) -> dict:
    """"On T5-Small […] LoTA is more disentangled than non-linear FT but less than TaLoS" — P2 Fig. 2.
    Holds when ξ(LoTA) − ξ(non-linear FT) < 0 and ξ(TaLoS) − ξ(LoTA) < 0 at the high ends of their paired-bootstrap
    95 % CIs over the test examples (:func:`xi_gap`)."""
    xi = _by_method(fig2_rows, "p2-fig2", "disentanglement_error")
    text = "On T5-Small the patterns are consistent across methods; LoTA beats non-linear FT but loses to TaLoS."
    ours = f"LoTA {xi[LOTA]:.3f}, non-linear FT {xi[FT]:.3f}, TaLoS {xi[TALOS]:.3f}"
    rule = (f"{model} on text tasks, {setting}; holds if the 95% CIs of ξ(LoTA) − ξ(non-linear FT) and of "
            f"ξ(TaLoS) − ξ(LoTA) (mean ξ over the grid and the pairs) both lie below 0, does not hold if one lies "
            f"above 0; paired bootstrap over the test examples (each example's share of disagreeing grid points)")
    reason = language_reason(model)
    if reason:
        return res.add_claim("p2-fig2-language", text, paper="Fig. 2 (heatmaps)", ours=ours, tasks=row_tasks(fig2_rows),
                             **gate(None, reason, rule))
    parts = {"LoTA − non-linear FT": xi_gap(disagreement, LOTA, FT),
             "TaLoS − LoTA": xi_gap(disagreement, TALOS, LOTA)}
    verdict, ev, worst = combine_all(parts)
    return res.add_claim(
        "p2-fig2-language", text, paper="Fig. 2 (heatmaps)",
        ours=ours + "; " + ", ".join(f"{k} {_ci(e)}" for k, (_, e) in parts.items()),
        verdict=verdict, evidence=ev, note=f"{rule}; n = {ev.n_examples} examples; deciding part: {worst}",
        tasks=row_tasks(fig2_rows), learned=_learned(res, fig2_rows))


def fig3_localization(res: Results, fig3_rows: Sequence[Mapping], model: str, setting: str) -> dict:
    """"TaLoS […] only affects the accuracy of the task it was fine-tuned on (diagonal), while the other methods
    interfere with the other tasks" — P2 Fig. 3 (ViT-B/32).  Holds when TaLoS has the smallest off-diagonal
    mean |ratio − 1| (ties count) and a diagonal ratio above 1."""
    off = _by_method(fig3_rows, "p2-fig3", "off_diagonal_abs_dev")
    diag = _by_method(fig3_rows, "p2-fig3", "diagonal_ratio")
    ok = off[TALOS] <= min(off.values()) and diag[TALOS] > 1.0
    return res.add_claim(
        "p2-fig3-localization",
        "A ViT-B/32 fine-tuned with TaLoS on task i changes only task i's accuracy (diagonal only); the other methods "
        "interfere with other tasks.",
        paper="Fig. 3 (heatmaps)",
        ours="off-diagonal mean |ratio − 1|: " + ", ".join(f"{m} {v:.3f}" for m, v in
                                                           sorted(off.items(), key=lambda kv: kv[1]))
             + f"; TaLoS diagonal ratio {diag[TALOS]:.2f}",
        tasks=row_tasks(fig3_rows), learned=_learned(res, fig3_rows),
        **gate(bool(ok), vision_reason(model),
               note=f"{setting}; holds = TaLoS has the smallest off-diagonal deviation from the pre-trained "
                    f"accuracy (ties count) and improves its own task; {POINT_RULE}"))


#: ``{method: {task: {"ft": per-example 0/1, "lin": per-example 0/1}}}``
#: (:func:`repro.p2.disentanglement.views.fig6_tables`)
LinCorrect = Mapping[str, Mapping[str, Mapping[str, Sequence[int]]]]


def linear_gap_parts(correct: LinCorrect, within_pp: float = 2.0, n_resamples: int = N_RESAMPLES,
                     seed: int = 0) -> dict[str, tuple[str, Evidence]]:
    """The Fig. 6 comparisons on the same test examples (one paired bootstrap, the task of each example travelling
    with it): mean over tasks of |lin − ft| accuracy (pp) of TaLoS − that of non-linear FT and of LoTA (≤ 0), and
    the share of tasks where TaLoS's |lin − ft| ≤ ``within_pp`` (> 0.5)."""
    tasks = sorted(correct[TALOS])
    methods = [TALOS, FT, LOTA]
    samples = [np.concatenate([np.asarray(correct[m][t][k], dtype=float) for t in tasks])[None, :]
               for m in methods for k in ("ft", "lin")]
    ids = np.concatenate([np.full(len(correct[TALOS][t]["ft"]), i, dtype=float) for i, t in enumerate(tasks)])[None, :]
    n = len(tasks)

    def gaps(x: np.ndarray, y: np.ndarray, i: np.ndarray) -> np.ndarray:
        return 100.0 * np.abs(task_means(y, i, n) - task_means(x, i, n))

    def excess(other: int) -> Any:  # TaLoS's mean |gap| − that of the method at samples[2·other], [2·other + 1]
        return lambda *m: finite_mean(gaps(m[0], m[1], m[6])) - finite_mean(gaps(m[2 * other], m[2 * other + 1], m[6]))

    stats = {f"|gap| TaLoS − {FT}": excess(1), f"|gap| TaLoS − {LOTA}": excess(2),
             f"share of tasks with TaLoS |gap| ≤ {within_pp:g} pp":
                 lambda *m: finite_mean((gaps(m[0], m[1], m[6]) <= within_pp).astype(float))}
    parts = {}
    for name, stat in stats.items():
        op, margin = (">", 0.5) if name.startswith("share") else ("<=", 0.0)
        est, lo, hi = paired_bootstrap([*samples, ids], stat, n_resamples=n_resamples, seed=seed)
        what = "share of tasks" if op == ">" else "difference in mean-over-tasks |lin − ft| accuracy (pp)"
        parts[name] = verdict_from_ci(est, lo, hi, n_examples=int(ids.shape[1]), seeds=1, margin=margin, op=op,
                                      test=f"paired bootstrap over the test examples of {n} tasks, {n_resamples} resamples, "
                                           f"95% CI of the {what}")
    return parts


def fig6_linear(res: Results, lin_rows: Sequence[Mapping], correct: LinCorrect, model: str,
                within_pp: float = 2.0) -> dict:
    """"TaLoS models […] lie close to the bisector on most tasks, LoTA does not consistently" — P2 Fig. 6
    (vision).  Holds when TaLoS's mean |linearized − fine-tuned| accuracy gap is at most that of non-linear FT and
    of LoTA (the other methods linearized post hoc), and its gap is within ``within_pp`` points on more than half
    of the tasks, each at the conservative end of a paired-bootstrap 95 % CI (:func:`linear_gap_parts`)."""
    gaps: dict[str, list[float]] = {}
    for r in lin_rows:
        if not r["by_construction"]:
            gaps.setdefault(r["method"], []).append(abs(float(r["value"])))
    need = [FT, LOTA, TALOS]
    missing = [m for m in need if m not in gaps or m not in correct]
    if missing:
        raise ValueError(f"p2-fig6: no post-hoc linearization rows for {missing}; evaluate {need}")
    gap = {m: float(np.mean(v)) for m, v in gaps.items()}
    near = float(np.mean([g <= within_pp for g in gaps[TALOS]]))
    ours = ("mean |lin − ft| (pp): " + ", ".join(f"{m} {v:.1f}" for m, v in sorted(gap.items(), key=lambda kv: kv[1]))
            + f"; TaLoS within {within_pp:g} pp on {100 * near:.0f} % of tasks")
    rule = (f"holds if the 95% CIs give TaLoS's mean |lin − ft| accuracy gap − that of non-linear FT ≤ 0 and − that "
            f"of LoTA ≤ 0, and TaLoS within {within_pp:g} pp of its linearization on more than half of the tasks; "
            f"does not hold if one CI lies entirely on the wrong side; paired bootstrap over the same test examples "
            f"(per-example correctness of each network and its linearization)")
    text = "TaLoS models behave like their post-hoc linearization on most vision tasks; LoTA does not consistently."
    reason = vision_reason(model)
    if reason:
        return res.add_claim("p2-fig6-linear", text, paper="Fig. 6 (plotted only)", ours=ours,
                             tasks=row_tasks(lin_rows), **gate(None, reason, rule))
    verdict, ev, worst = combine_all(linear_gap_parts(correct, within_pp))
    return res.add_claim("p2-fig6-linear", text, paper="Fig. 6 (plotted only)", ours=ours + f"; deciding {worst}: "
                         f"{_ci(ev)}", verdict=verdict, evidence=ev, tasks=row_tasks(lin_rows),
                         learned=_learned(res, lin_rows),
                         note=f"{rule}; n = {ev.n_examples} examples; deciding part: {worst}")


def fig7_gradient(res: Results, per_example: Mapping[str, Sequence[float]], drift_task: str, n_examples: int,
                  step: int, of_steps: int, n_resamples: int = N_RESAMPLES) -> dict:
    """"the gradients of TaLoS stay almost constant during fine-tuning, as for linearized FT, while LoTA's change
    like non-linear FT's" — P2 Fig. 7.  ``per_example[method]`` = each example's relative change of ∇θ f at the
    last checkpoint (the same examples for every method).  Holds when TaLoS's mean change is less than half of
    LoTA's and less than half of non-linear FT's: mean(TaLoS) − mean(other) / 2 < 0 at the upper end of its 95 % CI,
    paired bootstrap over the examples, for both others."""
    missing = [m for m in (FT, LOTA, TALOS) if m not in per_example]
    if missing:
        raise ValueError(f"p2-fig7: no drift at step {step} for {missing}")
    x = {m: np.asarray(v, dtype=float) for m, v in per_example.items()}
    if len({len(v) for v in x.values()}) != 1:
        raise ValueError("p2-fig7: every method's drift must be on the same examples")

    def half_gap(t: np.ndarray, o: np.ndarray) -> float:
        return float(t.mean() - 0.5 * o.mean())

    parts = {}
    for other in (LOTA, FT):
        est, lo, hi = paired_bootstrap([x[TALOS], x[other]], half_gap, n_resamples=n_resamples)
        parts[f"vs {other}"] = verdict_from_ci(
            est, lo, hi, n_examples=len(x[TALOS]), seeds=1, margin=0.0, op="<",
            test=f"paired bootstrap over the examples, {n_resamples} resamples, 95% CI of mean(TaLoS) − mean({other}) / 2")
    verdict, ev, worst = combine_all(parts)
    means = {m: float(v.mean()) for m, v in x.items()}
    return res.add_claim(
        "p2-fig7-gradient",
        "During TaLoS fine-tuning the output gradient stays almost constant, like linearized FT; LoTA drifts like "
        "non-linear FT.",
        paper="Fig. 7 (plotted only)",
        ours=", ".join(f"{m} {v:.3g}" for m, v in sorted(means.items(), key=lambda kv: kv[1]))
             + f" (relative change after {step} of {of_steps} steps)",
        verdict=verdict, evidence=ev, tasks=[drift_task], learned=res.learned_on([drift_task]),
        note=f"{drift_task}, {n_examples} examples; holds if TaLoS's mean change is less than half of LoTA's and of "
             f"non-linear FT's, each as mean(TaLoS) − mean(other)/2 < 0 at the upper end of its 95% CI (paired "
             f"bootstrap over the examples); the evidence shown is the deciding part's ({worst})"
             + ("" if step >= of_steps else f"; only the first {step} steps are replayed"))


__all__ = ["row_tasks", "LABELS", "fig2_language", "fig2_vision", "fig3_localization", "fig6_linear", "fig7_gradient",
           "language_reason", "linear_gap_parts", "xi_gap"]
