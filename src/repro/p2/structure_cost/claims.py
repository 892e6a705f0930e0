"""The claims of P2 §5.3 (Figs. 4-5 mask structure, Tables 3-4 cost), one function each.

Each function adds one claim to ``res`` and returns it; its docstring quotes the sentence of the paper it tests.
There are no per-example data here.  Mask shares (Figs. 4-5) are exact properties of the two masks: their evidence
is the exact number with no CI (:func:`repro.report.verdicts.exact`).  Iteration times keep every timed iteration of every method
(:class:`repro.p2.cost.IterationCost` ``*_repeats``); each method is timed in its own process, so a time ratio's CI
is a bootstrap over the repeats of each method resampled independently (:func:`timing_part`,
:func:`repro.report.verdicts.independent_bootstrap`).  Peak memory and TaLoS's calibration time are one measurement
each (the calibration is one call of the zoo's frozen calibration): they enter as fixed numbers.  A claim with
several conditions combines them with :func:`repro.report.verdicts.combine_all` (every part must hold).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np

from repro.report.gates import not_testable
from repro.report.results import Results
from repro.report.verdicts import (LEVEL, N_RESAMPLES, Evidence, combine_all, exact, independent_bootstrap,
                                   verdict_from_ci)

#: TaLoS and LoTA masks are compared only when their sizes (densities) agree within this relative tolerance.
EQUAL_SIZE_TOL = 0.05
#: Table 4: calibration must stay under this share of TaLoS's total time (the paper's ViT-L/14: 63 / 719 = 9 %).
CALIBRATION_SHARE = 0.10

Summary = Mapping[str, Any]
Costs = Mapping[str, Mapping[str, Any]]
Part = tuple[str, Evidence]


def size_mismatch(sizes: Mapping[str, int], tol: float = EQUAL_SIZE_TOL) -> str | None:
    """Why masks cannot be compared (their selected-entry counts differ by more than ``tol`` relative), or None."""
    lo, hi = min(sizes.values()), max(sizes.values())
    if hi <= 0:
        return "masks not compared: a mask is empty"
    if (hi - lo) / hi <= tol:
        return None
    listed = ", ".join(f"{k} {v:,}" for k, v in sizes.items())
    return f"masks not compared: their sizes differ by more than {100 * tol:g}% ({listed} selected entries)"


def repeats(cost: Mapping[str, Any], key: str) -> np.ndarray:
    """The timed iterations of ``key`` (``total_iter_s`` → ``total_iter_repeats``) of one method's cost row."""
    name = key[:-2] + "_repeats" if key.endswith("_s") else key + "_repeats"
    values = cost.get(name)
    if not values:
        raise ValueError(f"the cost row has no {name!r}: time it with repro.p2.cost.measure_iteration, which keeps "
                         "every timed iteration")
    return np.asarray(values, dtype=float)


def timing_part(samples: list[np.ndarray], statistic: Callable[..., float], *, op: str, margin: float, what: str,
                n_resamples: int = N_RESAMPLES, seed: int = 0) -> Part:
    """Verdict and evidence of ``statistic(*samples) op margin`` for repeated timings of methods each timed in its
    own process: bootstrap over the repeats, every method's resampled independently."""
    est, lo, hi = independent_bootstrap(samples, statistic, n_resamples=n_resamples, seed=seed)
    n = min(len(x) for x in samples)
    test = (f"bootstrap over the {n} timed iterations of each method, resampled independently (each method is timed "
            f"in its own process), {n_resamples} resamples, {LEVEL:.0%} CI of {what}")
    return verdict_from_ci(est, lo, hi, n_examples=n, seeds=1, margin=float(margin), test=test, op=op)


def mean_ratio(a: np.ndarray, b: np.ndarray) -> float:
    """``mean(a) / mean(b)``: the ratio of two methods' mean iteration times (Table 3's comparison)."""
    d = float(np.mean(b))
    return float(np.mean(a)) / d if d > 0 else math.nan


def _ci(ev: Evidence, fmt: str = ".3f") -> str:
    if ev.ci_low == ev.ci_high:
        return f"{ev.statistic:{fmt}} (no CI)"
    return f"{ev.statistic:{fmt}}, 95% CI [{ev.ci_low:{fmt}}, {ev.ci_high:{fmt}}]"


def qk_lead(summary: Summary) -> float:
    """Fig. 4: the smaller of the Q and K shares minus the largest share of any other weight matrix (points of
    entries selected); > 0 exactly when Q and K are the mask's two most-selected weight matrices."""
    w = summary["weight_share"]
    return min(w.get("Q", 0.0), w.get("K", 0.0)) - max((v for t, v in w.items() if t not in ("Q", "K")), default=0.0)


def fig4_qk(res: Results, talos: Summary, lota: Summary, sizes: Mapping[str, int], *, task: str,
            model: str) -> dict:
    """"TaLoS masks keep mostly the query and key projections of self-attention […] LoTA masks are spread out"
    (Fig. 4).  Exact, on masks of equal size: Q and K are TaLoS's two most-selected weight matrices
    (:func:`qk_lead` > 0) and TaLoS's per-matrix shares vary more than LoTA's (coefficient of variation)."""
    text = ("TaLoS masks keep mostly the query and key projections of self-attention (and biases in ViT-B/32); "
            "LoTA masks are spread out.")
    ours = (f"TaLoS top matrices {talos['top_weight_types'][:3]} (CV {talos['spread_cv']:.2f}); LoTA top "
            f"{lota['top_weight_types'][:3]} (CV {lota['spread_cv']:.2f})")
    listed = ", ".join(f"{k} {v:,}" for k, v in sizes.items())
    n = len(talos["weight_share"])
    note = (f"{task}, {model}; masks of {listed} selected entries; holds if Q and K are TaLoS's two most-selected "
            f"weight matrices (min(Q, K share) − largest other share > 0 points, over the {n} weight-matrix types) "
            "and TaLoS's per-matrix shares vary more than LoTA's (CV difference > 0); exact shares of the two "
            "masks, no sampling, so no CI")
    reason = size_mismatch(sizes)
    if reason:
        return res.add_claim("p2-fig4-qk", text, paper="Fig. 4 (plotted only)", ours=ours, tasks=[task],
                             **not_testable(f"{reason}; rule otherwise: {note}"))
    parts = {"Q and K lead": exact(qk_lead(talos), ">", 0.0, n, "share of Q and K minus the largest other weight-matrix share "
                                   "of the TaLoS mask (points of entries selected)"),
             "spread": exact(talos["spread_cv"] - lota["spread_cv"], ">", 0.0, n,
                             "coefficient of variation of TaLoS's per-matrix shares minus LoTA's")}
    verdict, ev, worst = combine_all(parts)
    return res.add_claim("p2-fig4-qk", text, paper="Fig. 4 (plotted only)",
                         ours=f"{ours}; deciding part {worst}: {ev.statistic:+.2f}", verdict=verdict, evidence=ev,
                         note=note, tasks=[task], regions={f"{k} mask": v for k, v in sizes.items()},
                         learned=res.learned_on([task]),
                         distinct={"TaLoS vs LoTA shares": talos["weight_share"] != lota["weight_share"]})


def fig5_blocks(res: Results, talos: Summary, lota: Summary) -> dict:
    """"The TaLoS pattern repeats in every transformer block" (Fig. 5).  Exact: in every block the TaLoS mask's
    most-selected weight matrix is Q or K (share of such blocks ≥ 1)."""
    text = "The TaLoS pattern repeats in every transformer block."
    blocks = len(talos.get("layer_top") or {})
    rule = ("holds if in every transformer block the TaLoS mask's most-selected weight matrix is Q or K (share of "
            "such blocks ≥ 1)")
    if blocks == 0:
        return res.add_claim("p2-fig5-blocks", text, paper="Fig. 5 (plotted only)", tasks=(),
                             **not_testable("the mask placement has no transformer-block weight matrices", rule))
    share = float(talos["qk_top_layers"])
    verdict, ev = exact(share, ">=", 1.0, blocks,
                        "share of the TaLoS mask's blocks whose most-selected weight matrix is Q or K")
    return res.add_claim(
        "p2-fig5-blocks", text, paper="Fig. 5 (plotted only)",
        ours=f"top matrix is Q or K in {100 * share:.0f} % of {blocks} blocks (LoTA: "
             f"{100 * lota['qk_top_layers']:.0f} %)",
        verdict=verdict, evidence=ev, note=f"{rule}; exact, over the {blocks} blocks of one mask, no sampling",
        tasks=list(res.learning), learned=res.learned_on(res.learning),
        regions={"TaLoS mask": float(sum(talos["weight_share"].values())) if isinstance(
            talos.get("weight_share"), Mapping) else float(blocks)})


def table3_fastest(res: Results, by: Costs, labels: Mapping[str, str], *, context: str, model: str = "") -> dict:
    """"TaLoS has the fastest total iteration time and the lowest peak memory" (Table 3).  Against every other
    method: mean total iteration time TaLoS / other < 1 at the CI's high end (bootstrap over the timed iterations,
    :func:`timing_part`) and TaLoS's peak memory lower (one reading per method, :func:`repro.report.verdicts.exact`)."""
    t = by["talos"]
    parts: dict[str, Part] = {}
    for key, c in by.items():
        if key == "talos":
            continue
        parts[f"time vs {labels[key]}"] = timing_part(
            [repeats(t, "total_iter_s"), repeats(c, "total_iter_s")], mean_ratio, op="<", margin=1.0,
            what=f"the ratio of mean total iteration times TaLoS / {labels[key]}")
        parts[f"memory vs {labels[key]}"] = exact(
            t["peak_memory_gib"] - c["peak_memory_gib"], "<", 0.0, 1,
            f"peak memory, TaLoS − {labels[key]} in GiB (one reading per method, no repeats to resample)")
    verdict, ev, worst = combine_all(parts)
    best_time = min(by, key=lambda k: by[k]["total_iter_s"])
    best_mem = min(by, key=lambda k: by[k]["peak_memory_gib"])
    n = len(repeats(t, "total_iter_s"))
    return res.add_claim(
        "p2-table3-fastest",
        "TaLoS has the fastest total iteration time and the lowest peak memory (ViT-L/14: 0.3263 s vs 1.2330 s and "
        "7.8 vs 18.6 GiB for non-linear FT; T5-Large 12.1 vs 30.0 GiB).",
        paper="0.3263 vs 1.2330 s; 7.8 vs 18.6 GiB",
        ours=f"TaLoS {t['total_iter_s']:.4f} s vs FT {by['ft']['total_iter_s']:.4f} s "
             f"(fastest: {labels[best_time]}); peak {t['peak_memory_gib']:.2f} vs "
             f"{by['ft']['peak_memory_gib']:.2f} GiB (lowest: {labels[best_mem]}); deciding part {worst}: "
             f"{_ci(ev)}",
        tasks=(), verdict=verdict, evidence=ev, measured_on=model,
        note=f"{context}; holds if against each of the {len(by) - 1} other methods the 95% CI of the ratio of mean "
             f"total iteration times TaLoS / other lies below 1 (bootstrap over the {n} timed iterations of each "
             "method, resampled independently) and TaLoS's peak memory is lower (one reading per method, no CI); "
             "does not hold if one ratio's CI lies entirely above 1 or one memory reading is not lower. CPU memory "
             "= RSS growth in a fresh process")


def table3_optimizer(res: Results, by: Costs, model: str = "") -> dict:
    """"TaLoS's optimizer step is slower than other approaches […] but the faster forward-backward pass more than
    compensates" (Table 3).  Ratios of mean times, each at the CI's conservative end (:func:`timing_part`): TaLoS /
    L-LoRA optimizer step > 1, TaLoS / FT forward-backward < 1 and total iteration < 1."""
    t, f, lo = by["talos"], by["ft"], by["l-lora"]

    def part(key: str, other: Mapping[str, Any], op: str, what: str) -> Part:
        return timing_part([repeats(t, key), repeats(other, key)], mean_ratio, op=op, margin=1.0, what=what)

    parts = {"step vs L-LoRA": part("optim_step_s", lo, ">", "the ratio of mean optimizer-step times TaLoS / L-LoRA"),
             "fwd-bwd vs FT": part("fwd_bwd_s", f, "<", "the ratio of mean forward-backward times TaLoS / FT"),
             "total vs FT": part("total_iter_s", f, "<", "the ratio of mean total iteration times TaLoS / FT")}
    verdict, ev, worst = combine_all(parts)
    return res.add_claim(
        "p2-table3-optimizer",
        "TaLoS's optimizer step is slower than other approaches (mask multiply), but the faster forward-backward "
        "pass more than compensates.",
        paper="Table 3",
        ours=f"optimizer step TaLoS {t['optim_step_s']:.4f} s vs FT {f['optim_step_s']:.4f} s, L-LoRA "
             f"{lo['optim_step_s']:.4f} s; fwd-bwd TaLoS {t['fwd_bwd_s']:.4f} s vs FT {f['fwd_bwd_s']:.4f} s; "
             f"deciding part {worst}: {_ci(ev)}",
        tasks=(), verdict=verdict, evidence=ev, measured_on=model,
        note=f"holds if the 95% CI of the ratio of mean optimizer-step times TaLoS / L-LoRA lies above 1 and those of "
             "TaLoS / FT mean forward-backward and total iteration times lie below 1; does not hold if one lies "
             f"entirely on the wrong side; bootstrap over the {ev.n_examples} timed iterations of each method, "
             "resampled independently. Our optimizer touches only the trainable entries (no dense mask multiply), "
             "unlike the paper's AdaptW")


def calibration_at_steps(t4: Mapping[str, Mapping[str, float]], by: Costs, steps: int) -> dict[str, float]:
    """Table 4 re-costed at ``steps`` fine-tuning steps: calibration share of TaLoS's total, TaLoS and FT totals."""
    calib = t4["talos"]["mask_calibration_time"]
    talos_total = calib + steps * by["talos"]["total_iter_s"]
    ft_total = steps * by["ft"]["total_iter_s"]
    return {"steps": steps, "share": calib / talos_total, "talos_total": talos_total, "ft_total": ft_total}


def table4_calibration(res: Results, t4: Mapping[str, Mapping[str, float]], by: Costs, *, steps: int,
                       paper_steps: int, model: str = "") -> dict:
    """"Mask calibration costs about as much time as LoTA's […] with much less memory […], negligible next to
    fine-tuning" (Table 4).  Judged at the paper's fine-tuning budget (``paper_steps`` × our measured iteration
    times, since the share depends on the budget): calibration < 10 % of TaLoS's total time and TaLoS total < FT
    total, each at the CI's high end of a bootstrap over the timed iterations (:func:`timing_part`; the calibration
    time is one measurement, held fixed), and less memory than LoTA's calibration (one reading each)."""
    at_paper = calibration_at_steps(t4, by, paper_steps)
    at_ours = calibration_at_steps(t4, by, steps)
    tal, lota = t4["talos"], t4["lota"]
    calib, p = tal["mask_calibration_time"], paper_steps
    tal_rep, ft_rep = repeats(by["talos"], "total_iter_s"), repeats(by["ft"], "total_iter_s")
    parts = {
        "calibration share": timing_part(
            [tal_rep], lambda a: calib / (calib + p * float(np.mean(a))), op="<", margin=CALIBRATION_SHARE,
            what=f"calibration / TaLoS total time at {p} steps (the calibration time, one measurement, held fixed)"),
        "calibration memory": exact(
            tal["mask_calibration_peak_memory"] - lota["mask_calibration_peak_memory"], "<", 0.0, 1,
            "calibration peak memory, TaLoS − LoTA in GiB (one reading per calibration, no repeats to resample)"),
        "total vs FT": timing_part(
            [tal_rep, ft_rep], lambda a, b: (calib + p * float(np.mean(a))) / (p * float(np.mean(b))), op="<",
            margin=1.0, what=f"TaLoS total / FT total time at {p} steps (the calibration time held fixed)"),
    }
    verdict, ev, worst = combine_all(parts)
    n = len(tal_rep)
    return res.add_claim(
        "p2-table4-calibration",
        "Mask calibration costs about as much time as LoTA's (63.04 s vs 51.84 s) with much less memory (7.8 vs "
        "12.9 GiB), negligible next to fine-tuning (TaLoS total 719.27 s vs 2479.99 s for non-linear FT).",
        paper="63.04 vs 51.84 s; 719.27 vs 2479.99 s",
        ours=f"TaLoS calibration {tal['mask_calibration_time']:.1f} s vs LoTA {lota['mask_calibration_time']:.1f} s, "
             f"memory {tal['mask_calibration_peak_memory']:.2f} vs {lota['mask_calibration_peak_memory']:.2f} GiB; "
             f"at {paper_steps} steps calibration = {100 * at_paper['share']:.1f} % of TaLoS's total, TaLoS total "
             f"{at_paper['talos_total']:.0f} s vs FT {at_paper['ft_total']:.0f} s (at our {steps} steps: "
             f"{100 * at_ours['share']:.0f} %); deciding part {worst}: {_ci(ev)}",
        tasks=(), verdict=verdict, evidence=ev, measured_on=model,
        note=f"judged at the paper's budget of {paper_steps} fine-tuning steps (our measured iteration times × "
             f"{paper_steps}): holds if the 95% CI of calibration / TaLoS total time lies below "
             f"{CALIBRATION_SHARE:g} (paper: 9 %) and that of TaLoS total / FT total below 1 (bootstrap over the "
             f"{n} timed iterations of each method, resampled independently; TaLoS's calibration time is one "
             "measurement, held fixed), and TaLoS's calibration peak memory is below LoTA's (one reading each, no "
             "CI); does not hold if one CI lies entirely on the wrong side or the memory is not lower. Our "
             "calibration computes per-example gradients with vmap (batches of 16), which trades memory for speed")


__all__ = ["CALIBRATION_SHARE", "EQUAL_SIZE_TOL", "calibration_at_steps", "fig4_qk", "fig5_blocks",
           "mean_ratio", "qk_lead", "repeats", "size_mismatch", "table3_fastest", "table3_optimizer",
           "table4_calibration", "timing_part"]
