"""The P2 §5.1 and §5.3 claim functions (hand-made rows → expected verdict) and the §5.3 plan object."""

from __future__ import annotations

import numpy as np
import pytest

from repro.p2.task_arithmetic import claims as ca
from repro.p2.task_arithmetic.runs import Correctness, table5_correctness
from repro.p2.structure_cost import claims as cs
from repro.p2.structure_cost.plan import PAPER_FT_STEPS, StructureCostPlan, structure_cost_plan
from repro.profiles import get_profile
from repro.report.gates import learned_from_accuracy
from repro.report.results import Results


def _res() -> Results:
    """Results whose TaLoS single-task models learned the hand-made tasks (90 % vs 50 % zero-shot)."""
    res = Results("p2_test", "smoke")
    res.record_learning(*(learned_from_accuracy(t, 0.9, 0.5, 1000, model="TaLoS") for t in ("A", "B", "C")))
    return res


def test_record_learning_gates_every_claim_on_talos_single_task_gains():
    ex = _ex1(72, 95, 70, 93, 400)  # TaLoS single-task ≈ 75.8 % on A and B
    res = Results("p2_test", "smoke")
    checks = ca.record_learning(res, ex, {"A": 0.74, "B": 0.30})
    assert [c.ok for c in checks] == [False, True] and checks[0].reference == "zero-shot"
    c = ca.table1_abs_best(res, _table1(72, 95, 70, 93), ex)
    assert c["verdict"] == "not-testable" and "A: TaLoS − zero-shot" in c["note"]
    assert set(c["evidence"]["per_task"]) == {"A", "B"} and [d["task"] for d in c["data"]] == ["A", "B"]


def _rows(values: dict[tuple[str, str], float]) -> list[dict]:
    return [{"method": m, "metric": k, "value": v} for (m, k), v in values.items()]


def _table1(talos_abs: float, talos_norm: float, other_abs: float, other_norm: float) -> list[dict]:
    vals = {("TaLoS", "abs_acc"): talos_abs, ("TaLoS", "norm_acc"): talos_norm}
    for m in ca.FT_POSTHOC:
        vals[(m, "abs_acc")], vals[(m, "norm_acc")] = other_abs, other_norm
    vals[("Pre-trained (Zero-shot)", "abs_acc")] = 50.0
    return _rows(vals)


def test_gap_evidence_by_hand():
    verdict, ev = ca.gap_evidence(80.0, 70.0, 80.0, 70.0, 400, op=">")
    half = 1.959964 * 100 * ((0.8 * 0.2 + 0.7 * 0.3) / 400) ** 0.5
    assert ev.statistic == pytest.approx(10.0) and ev.ci_low == pytest.approx(10.0 - half)
    assert verdict == "holds" and ev.n_examples == 400
    assert ca.gap_evidence(71.0, 70.0, 71.0, 70.0, 100, op=">")[0] == "inconclusive"
    assert ca.gap_evidence(60.0, 80.0, 60.0, 80.0, 400, op=">=")[0] == "does-not-hold"
    with pytest.raises(ValueError, match="n ≥ 1"):
        ca.gap_evidence(1.0, 0.0, 1.0, 0.0, 0, op=">")


def _correct(p: float, n: int, shift: int = 0) -> np.ndarray:
    """n hand-made 0/1 scores with round(p·n) ones, rotated by ``shift`` (which examples are right)."""
    k = int(round(p * n))
    return np.roll(np.array([1] * k + [0] * (n - k)), shift)


def _ex1(talos_abs: float, talos_norm: float, other_abs: float, other_norm: float, n: int) -> Correctness:
    """Per-example correctness matching :func:`_table1`: two tasks of n/2 examples, the same for every method."""
    data = {}
    for i, (label, a, norm) in enumerate([("TaLoS", talos_abs, talos_norm)]
                                         + [(m, other_abs, other_norm) for m in ca.FT_POSTHOC]):
        shift = 7 * i  # the methods get different examples right
        data[(label, "addition")] = {t: _correct(a / 100, n // 2, shift) for t in ("A", "B")}
        data[(label, "single")] = {t: _correct(a / norm, n // 2, shift) for t in ("A", "B")}
    return Correctness(data, ["A", "B"])


def test_table1_best_needs_the_ci_not_a_point_gap():
    res = _res()
    c = ca.table1_best(res, _table1(72, 95, 70, 93), _ex1(72, 95, 70, 93, 64), reason=None, context="x")
    assert c["verdict"] == "inconclusive"
    c = ca.table1_best(res := _res(), _table1(85, 99, 70, 85), _ex1(85, 99, 70, 85, 2000), reason=None, context="x")
    assert c["verdict"] == "holds" and c["evidence"]["n_examples"] == 2000
    assert c["evidence"]["statistic"] == pytest.approx(14.0, abs=0.2)  # normalized 99 − 85 from the arrays
    c = ca.table1_best(_res(), _table1(85, 99, 70, 85), _ex1(85, 99, 70, 85, 2000),
                       reason="normalized accuracy withheld", context="x")
    assert c["verdict"] == "not-testable" and "withheld" in c["note"]


def test_table1_abs_best_tie_is_not_a_failure_and_vs_ft_combines_pairs():
    assert ca.table1_abs_best(_res(), _table1(70, 90, 70, 90), _ex1(70, 90, 70, 90, 500))["verdict"] == "inconclusive"
    assert ca.table1_abs_best(_res(), _table1(60, 90, 80, 90), _ex1(60, 90, 80, 90, 2000))["verdict"] == "does-not-hold"
    assert ca.table1_vs_ft(_res(), _table1(90, 99, 60, 70), _ex1(90, 99, 60, 70, 2000), reason=None)["verdict"] == "holds"
    assert ca.table1_vs_ft(_res(), _table1(50, 60, 80, 90), _ex1(50, 60, 80, 90, 2000),
                           reason=None)["verdict"] == "does-not-hold"


def test_paired_gap_bootstraps_over_seeds_and_keeps_tasks_apart():
    # TaLoS is worse in absolute accuracy but better normalized: task A 0.6 of single 0.6, task B 0.4 of 0.5
    talos = {"addition": {"A": _correct(0.6, 200), "B": _correct(0.4, 200)},
             "single": {"A": _correct(0.6, 200), "B": _correct(0.5, 200)}}
    ft = {"addition": {"A": _correct(0.7, 200, 3), "B": _correct(0.5, 200, 3)},
          "single": {"A": _correct(0.9, 200, 3), "B": _correct(0.9, 200, 3)}}
    three = {(lab, k): {t: np.stack([v, np.roll(v, 1), np.roll(v, 2)]) for t, v in d[k].items()}
             for lab, d in (("TaLoS", talos), ("Non-linear FT", ft)) for k in ("addition", "single")}
    ex = Correctness(three, ["A", "B"])
    v, ev = ca.paired_gap(ex, "TaLoS", "Non-linear FT", normalized=True, op=">")
    expected = 100 * ((1.0 + 0.8) / 2 - (0.7 / 0.9 + 0.5 / 0.9) / 2)  # per-task ratios, then the task mean
    assert ev.statistic == pytest.approx(expected) and ev.seeds == 3 and ev.n_examples == 400 and v == "holds"
    v, ev = ca.paired_gap(ex, "TaLoS", "Non-linear FT", op=">")
    assert ev.statistic == pytest.approx(-10.0) and v == "does-not-hold" and "seeds and" in ev.test
    with pytest.raises(KeyError, match="no target correctness"):
        ca.paired_gap(ex, "TaLoS", "Non-linear FT", kind="target")


def test_vision_claims_are_judged_on_image_models_only():
    rows, ex = _table1(85, 99, 70, 85), _ex1(85, 99, 70, 85, 2000)
    assert ca.table1_abs_vision(_res(), rows, ex, model="MiniLM")["verdict"] == "not-testable"
    c = ca.table1_abs_vision(_res(), rows, ex, model="efficientnet-lite0")
    assert c["verdict"] == "holds" and c["evidence"]["statistic"] == pytest.approx(15.0, abs=0.2)
    assert ca.table1_abs_vision(_res(), _table1(60, 90, 80, 90), _ex1(60, 90, 80, 90, 2000),
                                model="clip-vit-b32")["verdict"] == "does-not-hold"
    rows2 = _rows({("TaLoS", "targ_acc"): 40.0, ("TaLoS", "cont_acc"): 70.0, ("DARE", "targ_acc"): 60.0})
    ex2 = Correctness({("TaLoS", "target"): {"A": _correct(0.4, 1000)},
                       ("DARE", "target"): {"A": _correct(0.6, 1000, 11)}}, ["A"])
    assert ca.table2_vision(_res(), rows2, ex2, model="MiniLM")["verdict"] == "not-testable"
    assert ca.table2_vision(_res(), rows2, ex2, model="efficientnet-lite0")["verdict"] == "holds"
    c = ca.table2_vision(_res(), rows2, ex2, model="efficientnet-lite0", reason="negation not testable: control")
    assert c["verdict"] == "not-testable" and "control" in c["note"]
    assert ca.table2_t5large(_res(), rows2, model="MiniLM")["verdict"] == "not-testable"


def test_table2_best_lower_is_better_and_gated():
    rows2 = _rows({("TaLoS", "targ_acc"): 40.0, ("TaLoS", "cont_acc"): 70.0, ("DARE", "targ_acc"): 60.0,
                   ("DARE", "cont_acc"): 70.0})
    ex = Correctness({("TaLoS", "target"): {"A": _correct(0.4, 1000)},
                      ("DARE", "target"): {"A": _correct(0.6, 1000, 11)}}, ["A"])
    assert ca.table2_best(_res(), rows2, ex, zero_control=0.7, reason=None)["verdict"] == "holds"
    c = ca.table2_best(_res(), rows2, ex, zero_control=0.52, reason="negation not testable: control")
    assert c["verdict"] == "not-testable"


def test_table5_claims():
    vals = {("TaLoS", "norm_acc"): 95.0, ("TaLoS", "abs_acc"): 75.0, ("TaLoS + TIES-Merging", "norm_acc"): 80.0,
            ("TaLoS + TIES-Merging", "abs_acc"): 63.0, ("TaLoS + Task-wise AdaMerging", "norm_acc"): 95.5,
            ("TaLoS + Layer-wise AdaMerging", "norm_acc"): 96.0}
    for m, v in (("Non-linear FT", 80.0), ("TIES-Merging", 78.0), ("Task-wise AdaMerging", 81.0),
                 ("Layer-wise AdaMerging", 82.0)):
        vals[(m, "norm_acc")], vals[(m, "abs_acc")] = v, v - 10
    rows5 = _rows(vals)
    assert ca.table5_ties(_res(), rows5, n=2000)["verdict"] == "holds"
    c = ca.table5_vs_ft_merging(_res(), rows5, n=2000)
    assert c["verdict"] == "holds" and "Layer-wise AdaMerging" in c["ours"]


def _summary(shares: dict[str, float], cv: float, layer_top: dict[int, str]) -> dict:
    """A hand-made structure summary (repro.p2.function_localization.structure_summary's keys the claims read)."""
    qk = [t in ("Q", "K") for t in layer_top.values()]
    return {"top_weight_types": sorted(shares, key=shares.get, reverse=True), "weight_share": shares,
            "spread_cv": cv, "layer_top": layer_top, "qk_top_layers": sum(qk) / len(qk) if qk else float("nan")}


TALOS = _summary({"Q": 30.0, "K": 25.0, "V": 5.0, "O": 3.0, "FFN-in": 2.0, "FFN-out": 1.0}, 1.4, {0: "Q", 1: "K"})
LOTA = _summary({"Q": 10.0, "K": 10.0, "V": 10.0, "O": 11.0, "FFN-in": 9.0, "FFN-out": 10.0}, 0.2, {0: "Q", 1: "O"})


def test_masks_compared_only_at_equal_sizes():
    assert cs.size_mismatch({"LoTA": 1000, "TaLoS": 990}) is None
    assert "differ" in cs.size_mismatch({"LoTA": 1000, "TaLoS": 500})
    c = cs.fig4_qk(_res(), TALOS, LOTA, {"LoTA": 1000, "TaLoS": 500}, task="A", model="m")
    assert c["verdict"] == "not-testable" and "500" in c["note"] and c["evidence"] is None


def test_fig4_is_exact_on_both_conditions():
    assert cs.qk_lead(TALOS) == pytest.approx(20.0) and cs.qk_lead(LOTA) == pytest.approx(-1.0)
    c = cs.fig4_qk(_res(), TALOS, LOTA, {"LoTA": 1000, "TaLoS": 1000}, task="A", model="m")
    ev = c["evidence"]
    assert c["verdict"] == "holds" and "deciding part spread" in c["ours"]  # CV gap 1.2 is nearer its margin
    assert ev["statistic"] == ev["ci_low"] == ev["ci_high"] == pytest.approx(1.2)
    assert ev["n_examples"] == 6 and ev["seeds"] == 1 and ev["op"] == ">" and ev["margin"] == 0.0
    assert ev["test"].startswith("exact") and "no sampling" in ev["test"]
    v_leads = _summary({**TALOS["weight_share"], "V": 40.0}, 1.4, {0: "Q", 1: "K"})  # V above K
    c = cs.fig4_qk(_res(), v_leads, LOTA, {"LoTA": 1000, "TaLoS": 1000}, task="A", model="m")
    assert c["verdict"] == "does-not-hold" and c["evidence"]["statistic"] == pytest.approx(-15.0)
    assert "Q and K lead" in c["ours"]


def test_fig5_is_exact_over_blocks():
    c = cs.fig5_blocks(_res(), TALOS, LOTA)
    ev = c["evidence"]
    assert c["verdict"] == "holds" and ev["statistic"] == ev["ci_low"] == ev["ci_high"] == 1.0
    assert ev["n_examples"] == 2 and ev["op"] == ">=" and ev["margin"] == 1.0 and "no sampling" in ev["test"]
    c = cs.fig5_blocks(_res(), LOTA, TALOS)  # one block of two led by O
    assert c["verdict"] == "does-not-hold" and c["evidence"]["statistic"] == 0.5
    assert cs.fig5_blocks(_res(), _summary({"Q": 1.0}, 0.0, {}), LOTA)["verdict"] == "not-testable"


NOISE = np.array([-0.02, -0.01, 0.0, 0.01, 0.02, -0.015, 0.015, 0.0])  # 8 timed iterations, mean exactly 1


def _method(total: float, fwd_bwd: float, step: float, memory: float) -> dict:
    """One method's cost row with its 8 timed iterations (means = the given values)."""
    row = {"total_iter_s": total, "fwd_bwd_s": fwd_bwd, "optim_step_s": step, "peak_memory_gib": memory}
    for key in ("total_iter", "fwd_bwd", "optim_step"):
        row[f"{key}_repeats"] = list(row[f"{key}_s"] * (1 + NOISE))
    return row


def _costs(talos_iter: float, ft_iter: float, talos_step: float = 0.02) -> dict:
    return {"talos": _method(talos_iter, talos_iter * 0.9, talos_step, 1.0),
            "ft": _method(ft_iter, ft_iter * 0.8, 0.05, 3.0),
            "l-lora": _method(ft_iter, ft_iter, 0.01, 2.0)}


LABELS = {"talos": "TaLoS", "ft": "Non-linear FT", "l-lora": "L-LoRA"}


def test_table3_fastest_bootstraps_over_timed_iterations():
    c = cs.table3_fastest(_res(), _costs(0.3, 1.2), LABELS, context="c")
    ev = c["evidence"]
    assert c["verdict"] == "holds" and "deciding part time vs" in c["ours"]
    assert ev["statistic"] == pytest.approx(0.25) and ev["ci_low"] < 0.25 < ev["ci_high"] < 1.0
    assert ev["n_examples"] == 8 and ev["op"] == "<" and ev["margin"] == 1.0 and "8 timed iterations" in ev["test"]
    assert cs.table3_fastest(_res(), _costs(2.0, 1.2), LABELS, context="c")["verdict"] == "does-not-hold"
    c = cs.table3_fastest(_res(), _costs(1.195, 1.2), LABELS, context="c")  # 0.4 % faster, ±1.4 % noise
    assert c["verdict"] == "inconclusive" and c["evidence"]["ci_low"] < 1.0 < c["evidence"]["ci_high"]
    more_memory = _costs(0.3, 1.2)
    more_memory["talos"]["peak_memory_gib"] = 2.5  # above L-LoRA's 2.0: one reading, no CI
    c = cs.table3_fastest(_res(), more_memory, LABELS, context="c")
    assert c["verdict"] == "does-not-hold" and c["evidence"]["statistic"] == pytest.approx(0.5)
    assert c["evidence"]["ci_low"] == c["evidence"]["ci_high"] and "memory vs L-LoRA" in c["ours"]
    with pytest.raises(ValueError, match="total_iter_repeats"):
        cs.table3_fastest(_res(), {k: {**v, "total_iter_repeats": []} for k, v in _costs(0.3, 1.2).items()},
                          LABELS, context="c")


def test_table3_optimizer_needs_every_ratio_on_its_side():
    c = cs.table3_optimizer(_res(), _costs(0.3, 1.2))
    ev = c["evidence"]
    assert c["verdict"] == "holds" and ev["n_examples"] == 8 and "bootstrap" in ev["test"]
    assert "deciding part fwd-bwd vs FT" in c["ours"] and ev["statistic"] == pytest.approx(0.27 / 0.96)
    c = cs.table3_optimizer(_res(), _costs(0.3, 1.2, talos_step=0.005))  # step faster than L-LoRA's
    assert c["verdict"] == "does-not-hold" and "step vs L-LoRA" in c["ours"]
    assert c["evidence"]["statistic"] == pytest.approx(0.5) and c["evidence"]["op"] == ">"


def test_table4_calibration_is_judged_at_the_paper_budget():
    by = _costs(0.3, 1.2)
    t4 = {"talos": {"mask_calibration_time": 20.0, "mask_calibration_peak_memory": 1.0},
          "lota": {"mask_calibration_time": 15.0, "mask_calibration_peak_memory": 3.0}}
    at40 = cs.calibration_at_steps(t4, by, 40)
    assert at40["share"] == pytest.approx(20 / (20 + 12))  # 62 %: fails at the profile's 40 steps
    at_paper = cs.calibration_at_steps(t4, by, PAPER_FT_STEPS)
    assert at_paper["share"] == pytest.approx(20 / (20 + 600)) and at_paper["ft_total"] == pytest.approx(2400)
    c = cs.table4_calibration(_res(), t4, by, steps=40, paper_steps=PAPER_FT_STEPS)
    ev = c["evidence"]
    assert c["verdict"] == "holds" and "2000 steps" in c["ours"] and "deciding part calibration share" in c["ours"]
    assert ev["statistic"] == pytest.approx(20 / 620) and ev["ci_low"] < 20 / 620 < ev["ci_high"] < 0.1
    assert ev["op"] == "<" and ev["margin"] == cs.CALIBRATION_SHARE and ev["n_examples"] == 8
    assert "held fixed" in ev["test"]
    t4["talos"]["mask_calibration_peak_memory"] = 5.0
    c = cs.table4_calibration(_res(), t4, by, steps=40, paper_steps=PAPER_FT_STEPS)
    assert c["verdict"] == "does-not-hold" and "calibration memory" in c["ours"]
    assert c["evidence"]["statistic"] == c["evidence"]["ci_high"] == pytest.approx(2.0)


def test_structure_cost_plan_per_profile():
    smoke, ps, cpu = (structure_cost_plan(get_profile(n)) for n in ("smoke", "paper-smoke", "cpu"))
    assert (smoke.iterations, smoke.warmup, smoke.isolate) == (2, 1, False) and ps == smoke
    assert (cpu.iterations, cpu.warmup, cpu.isolate) == (8, 2, True)
    assert smoke.mask_task == smoke.cost_task == get_profile("smoke").p2_tasks[0]
    paper = structure_cost_plan(get_profile("paper"))
    assert (paper.iterations, paper.warmup, paper.isolate, paper.paper_steps) == (50, 5, True, 2000)
    over = structure_cost_plan(get_profile("cpu"), iterations=3, isolate=False, cost_task="QNLI")
    assert isinstance(over, StructureCostPlan) and (over.iterations, over.isolate, over.cost_task) == (3, False, "QNLI")
    with pytest.raises(TypeError, match="unknown StructureCostPlan"):
        structure_cost_plan(get_profile("cpu"), itrations=3)


def _gain(x: np.ndarray, k: int) -> np.ndarray:
    """``x`` with its first ``k`` wrong examples made right (a merge that fixes k examples, breaks none)."""
    y = x.copy()
    y[np.flatnonzero(y == 0)[:k]] = 1
    return y


def _ex5(n: int, task_k: int, layer_k: int, noise: int = 0) -> Correctness:
    """First-seed Table 5 correctness via :func:`table5_correctness`: TaLoS at 70 % (single-task 80 %) on two tasks
    of n examples and two seeds; AdaMerging fixes ``*_k`` examples per task (and swaps ``noise`` right for wrong)."""
    talos = {t: _correct(0.7, n, i) for i, t in enumerate("AB")}
    data = {("TaLoS", "addition"): {t: np.stack([v, 1 - v]) for t, v in talos.items()},
            ("TaLoS", "single"): {t: np.stack([_correct(0.8, n, 5)] * 2) for t in "AB"}}
    ex = Correctness(data, ["A", "B"])

    def ada(k: int) -> dict:
        return {t: np.roll(_gain(v, k), noise) if noise else _gain(v, k) for t, v in talos.items()}
    return table5_correctness(ex, {"TaLoS + Task-wise AdaMerging": ada(task_k),
                                   "TaLoS + Layer-wise AdaMerging": ada(layer_k)})


def _rows5(task: float, layer: float) -> list[dict]:
    return _rows({("TaLoS", "norm_acc"): 87.5, ("TaLoS + Task-wise AdaMerging", "norm_acc"): 87.5 + task,
                  ("TaLoS + Layer-wise AdaMerging", "norm_acc"): 87.5 + layer})


def test_table5_correctness_keeps_the_first_seed_and_the_source_normalizer():
    ex5 = _ex5(100, 1, 2)
    assert ex5.n_seeds == 1 and ex5.has("TaLoS + Task-wise AdaMerging", "single")
    np.testing.assert_array_equal(ex5.stacked("TaLoS + Layer-wise AdaMerging", "single")[0],
                                  ex5.stacked("TaLoS", "single")[0])
    assert ex5.stacked("TaLoS", "addition")[0].mean() == pytest.approx(0.7)  # seed 0, not 1 − it


def test_table5_adamerging_band_from_per_example_results():
    # +1 pt absolute on 2000 examples per task, paired: normalized +1.25 pt, CI well inside [−0.5, +2.5]
    c = ca.table5_adamerging(_res(), _rows5(1.25, 1.25), _ex5(2000, 20, 20))
    assert c["verdict"] == "holds" and c["evidence"]["n_examples"] == 4000 and c["evidence"]["seeds"] == 1
    assert "differs" not in c["note"] and "[-0.5, +2.5]" in c["note"]
    # layer-wise +8 pt absolute (+10 normalized): its CI lies entirely above +2.5
    c = ca.table5_adamerging(_res(), _rows5(1.25, 10.0), _ex5(2000, 20, 160))
    assert c["verdict"] == "does-not-hold" and c["evidence"]["op"] == "<=" and c["evidence"]["ci_low"] > 2.5
    assert "layer-wise <= 2.5" in c["note"]
    # +2 pt on 100 examples per task with examples swapped around: the CI straddles +2.5
    c = ca.table5_adamerging(_res(), _rows5(2.5, 2.5), _ex5(100, 2, 2, noise=3))
    assert c["verdict"] == "inconclusive"
    assert c["evidence"]["ci_low"] < c["evidence"]["margin"] < c["evidence"]["ci_high"]


def test_band_splits_a_two_sided_claim_into_one_sided_parts():
    ex5 = _ex5(2000, 20, 20)
    one = ca.paired_gap(ex5, "TaLoS + Task-wise AdaMerging", "TaLoS", normalized=True, op=">=", margin=-0.5)
    parts = ca.band(one, -0.5, 2.5)
    assert [p[0] for p in parts.values()] == ["holds", "holds"]
    assert [p[1].op for p in parts.values()] == [">=", "<="] and parts["<= 2.5"][1].ci_low == one[1].ci_low
    with pytest.raises(ValueError, match="band needs"):
        ca.band(one, 0.0, 2.5)


def test_per_task_gaps_leave_out_a_task_whose_normalized_gap_is_undefined():
    from repro.p2.claim_stats import per_task_gaps

    zero = np.zeros(200)
    talos = {"addition": {"A": _correct(0.6, 200), "B": _correct(0.4, 200)},
             "single": {"A": _correct(0.6, 200), "B": zero}}  # B: a single-task model that gets nothing right
    ft = {"addition": {"A": _correct(0.7, 200, 3), "B": _correct(0.5, 200, 3)},
          "single": {"A": _correct(0.9, 200, 3), "B": zero}}
    ex = Correctness({(lab, k): d[k] for lab, d in (("TaLoS", talos), ("Non-linear FT", ft))
                      for k in ("addition", "single")}, ["A", "B"])
    rows = per_task_gaps(ex, "TaLoS", "Non-linear FT", normalized=True, op=">")
    assert list(rows) == ["A"]  # B's normalizer is 0 on every resample: no per-task row, no error
    assert rows["A"][1].statistic == pytest.approx(100 * (1.0 - 0.7 / 0.9))


def test_correctness_lets_the_control_have_its_own_test_size():
    """The control scores its own test examples (vision family: 80 faces against 200+ per task)."""
    ok = Correctness({("TaLoS", "target"): {"A": _correct(0.4, 200)}, ("TaLoS", "control"): {"A": _correct(0.9, 80)},
                      ("DARE", "target"): {"A": _correct(0.6, 200)}, ("DARE", "control"): {"A": _correct(0.9, 80)}},
                     ["A"])
    assert ok.data[("TaLoS", "control")]["A"].shape == (1, 80)
    with pytest.raises(ValueError, match="differ in shape"):
        Correctness({("TaLoS", "target"): {"A": _correct(0.4, 200)}, ("DARE", "target"): {"A": _correct(0.6, 80)}},
                    ["A"])


def test_a_comparator_that_did_not_learn_is_not_a_normalized_rival():
    """Breadcrumbs whose single-task models sit at zero-shot has normalized accuracy ≈ 100 % by construction."""
    n = 1000
    data = {("TaLoS", "addition"): {t: _correct(0.80, n) for t in "AB"},
            ("TaLoS", "single"): {t: _correct(0.90, n) for t in "AB"},
            ("TIES-Merging", "addition"): {t: _correct(0.70, n, 5) for t in "AB"},
            ("TIES-Merging", "single"): {t: _correct(0.90, n, 5) for t in "AB"},
            ("Breadcrumbs", "addition"): {t: _correct(0.52, n, 9) for t in "AB"},
            ("Breadcrumbs", "single"): {t: _correct(0.52, n, 9) for t in "AB"}}
    ex = Correctness(data, ["A", "B"])
    zero = {"A": 0.50, "B": 0.50}
    out = ca.unlearned_methods(ex, zero)
    assert list(out) == ["Breadcrumbs"] and out["Breadcrumbs"] == pytest.approx(2.0)
    rows = _rows({("TaLoS", "norm_acc"): 88.9, ("TIES-Merging", "norm_acc"): 77.8, ("Breadcrumbs", "norm_acc"): 100.0,
                  ("TaLoS", "abs_acc"): 80.0, ("TIES-Merging", "abs_acc"): 70.0, ("Breadcrumbs", "abs_acc"): 52.0})
    assert ca.table1_best(_res(), rows, ex, reason=None, context="x")["verdict"] == "does-not-hold"
    c = ca.table1_best(_res(), rows, ex, reason=None, context="x", unlearned=out)
    assert c["verdict"] == "holds" and "TIES-Merging" in c["ours"] and "Breadcrumbs +2.0" in c["note"]


def test_table5_adamerging_that_ends_below_zero_shot_is_not_a_test():
    rows = _rows5(1.25, 1.25) + _rows({("Pre-trained (Zero-shot)", "abs_acc"): 60.0, ("TaLoS", "abs_acc"): 70.0,
                                       ("TaLoS + Task-wise AdaMerging", "abs_acc"): 25.0,
                                       ("TaLoS + Layer-wise AdaMerging", "abs_acc"): 71.0})
    c = ca.table5_adamerging(_res(), rows, _ex5(2000, 20, 20))
    assert c["verdict"] == "not-testable" and "diverged" in c["note"] and "task-wise 25.0 %" in c["note"]


def test_single_task_frame_shows_each_methods_normalizers_and_gain():
    from repro.p2.task_arithmetic.views import single_task_frame

    ex = Correctness({("TaLoS", "single"): {"A": _correct(0.9, 100), "B": _correct(0.7, 100)},
                      ("Breadcrumbs", "single"): {"A": _correct(0.5, 100), "B": _correct(0.5, 100)}}, ["A", "B"])
    f = single_task_frame(ex, {"A": 0.5, "B": 0.5})
    assert f.loc["TaLoS", "A"] == 90.0 and f.loc["TaLoS", "mean gain over zero-shot"] == 30.0
    assert f.loc["Breadcrumbs", "mean gain over zero-shot"] == 0.0


def test_table1_best_with_no_learned_rival_is_not_testable():
    rows = _rows({("TaLoS", "norm_acc"): 88.9, ("Breadcrumbs", "norm_acc"): 100.0})
    ex = Correctness({("TaLoS", "single"): {"A": _correct(0.9, 100)}, ("Breadcrumbs", "single"): {"A": _correct(0.5, 100)},
                      ("TaLoS", "addition"): {"A": _correct(0.8, 100)},
                      ("Breadcrumbs", "addition"): {"A": _correct(0.5, 100)}}, ["A"])
    c = ca.table1_best(_res(), rows, ex, reason=None, context="x", unlearned={"Breadcrumbs": 0.0})
    assert c["verdict"] == "not-testable" and "no normalized rival" in c["note"] and "Breadcrumbs" in c["note"]
