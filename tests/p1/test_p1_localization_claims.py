"""P1 §2-3 plan and Table 2 claim rules (repro.p1.localization.plan, repro.p1.localization.claims)."""

from __future__ import annotations

import numpy as np
import pytest

from repro.core.masks import Mask
from repro.p1.localization import claims as c2
from repro.p1.localization.plan import LocalizationPlan, localization_plan, variant_recipes
from repro.profiles import get_profile
from repro.report.gates import learned
from repro.report.results import Results, validate


def _res() -> Results:
    """Results of a run whose FT learned SST-2 and QNLI (90 % against chance 50 %): the learning gate passes."""
    res = Results("p1_localization", "smoke")
    res.record_learning(*(learned(t, np.r_[np.ones(180), np.zeros(20)]) for t in ("SST-2", "QNLI")))
    return res


def test_plans_per_profile_and_overrides():
    smoke, cpu, paper = (localization_plan(get_profile(p)) for p in ("smoke", "cpu", "paper"))
    assert smoke.sparsities == (1e-3, 1e-2) and cpu.curve_tasks == ("SST-2",) and cpu.n_seeds == 3 and paper.n_seeds == 5
    assert "TREC" not in paper.large_tasks and paper.n_eval == 0
    p = localization_plan(get_profile("cpu"), tasks=["QNLI"], n_eval=None)
    assert p.tasks == ("QNLI",) and p.n_eval == cpu.n_eval
    with pytest.raises(ValueError, match="unknown plan fields"):
        LocalizationPlan().with_overrides(nope=1)
    prof = get_profile("cpu")
    assert LocalizationPlan(n_seeds=2).seeds(prof, prof.seeds[0]) == list(prof.seeds[:2])
    assert variant_recipes(prof).adamw.optimizer == "adamw"


def _run(ft, graft, count=5):
    ft, graft = np.asarray(ft), np.asarray(graft)
    return {"correct": {"ft": ft, "graft": graft, "agree": (ft == graft).astype(float)},
            "mask": Mask.random({"w": (100, 100)}, count, seed=0)}


def test_table2_claims_use_paired_bootstraps():
    n = 200
    ft = np.r_[np.ones(180), np.zeros(20)]
    runs = {("SST-2", 32, 1): _run(ft, ft), ("SST-2", 32, 2): _run(ft, ft),
            ("QNLI", 8, 1): _run(ft, np.r_[np.ones(100), np.zeros(100)])}
    res = _res()
    rec = c2.table2_recovery(res, runs, 32, 1e-5)
    assert rec["verdict"] == "holds" and rec["evidence"]["seeds"] == 2 and rec["evidence"]["n_examples"] == n
    low = c2.table2_recovery(res, runs, 8, 1e-5, beyond_paper=True)
    assert low["verdict"] == "does-not-hold" and low["beyond_paper"] and low["id"] == "p1-table2-64shot"
    drop = c2.table2_drop(res, runs, 32, ["QNLI"], pair=False)
    assert drop["verdict"] == "holds" and drop["evidence"]["statistic"] == 0.0
    assert c2.table2_drop(res, runs, 32, ["QNLI"], pair=True)["verdict"] == "not-testable"
    assert c2.table2_agreement(res, runs, 32)["verdict"] == "holds"
    size = c2.table2_size(res, runs, 10_000)          # 5 of 10,000 = 0.05 % > 0.01 %
    assert size["verdict"] == "does-not-hold" and "0.0500%" in size["ours"]
    res.add_table("p1-table2", [dict(task="SST-2", method="FT", sparsity=None, metric="acc", value=90.0, std=None,
                                     paper=None)])
    validate(res.to_dict(), require_nonempty=True)


def _ones(n_right: int, n: int = 200) -> np.ndarray:
    return np.r_[np.ones(n_right), np.zeros(n - n_right)]


def _curve_row(task, region, correct, count, scope="graftable", s=1e-3):
    return {"task": task, "region": region, "scope": scope, "target_sparsity": s, "count": count,
            "acc": float(np.mean(correct)), "correct": correct}


def test_fig2_compares_at_the_learned_size_and_decides_per_pair():
    learned = _ones(180)
    rows = [_curve_row("SST-2", "learned", learned, 120), _curve_row("SST-2", "movement", _ones(100), 100),
            _curve_row("SST-2", "movement-matched", _ones(120), 120), _curve_row("SST-2", "random", _ones(100), 120)]
    res = _res()
    claim = c2.fig2_learned_region(res, rows, 32)
    assert claim["verdict"] == "holds" and claim["evidence"]["n_examples"] == 200
    assert "movement-matched (120)" in claim["ours"] and "γ_base 100" in claim["note"]
    # same size, same accuracy as the learned region: the movement-matched gap is 0, so the claim does not hold
    rows[2] = _curve_row("SST-2", "movement-matched", learned.copy(), 120)
    claim = c2.fig2_learned_region(_res(), rows, 32)
    assert claim["verdict"] == "does-not-hold" and "movement-matched" in claim["note"]
    assert c2.fig2_learned_region(_res(), [], 32)["verdict"] == "not-testable"


def test_table1_claims_pair_examples_and_state_sizes():
    runs = {("SST-2", 1): {"graft": _ones(150), "retrain": _ones(160), "bitfit": _ones(150),
                           "graft_count": 40, "bitfit_count": 400},
            ("QNLI", 1): {"graft": _ones(120), "retrain": _ones(125), "bitfit": _ones(60),
                          "graft_count": 50, "bitfit_count": 400}}
    res = _res()
    rt = c2.table1_retrain(res, runs, "sgd")
    assert rt["verdict"] == "holds" and rt["evidence"]["n_examples"] == 400
    assert rt["evidence"]["statistic"] == pytest.approx(100 * (285 - 270) / 400)
    bf = c2.table1_bitfit(res, runs, "sgd")
    assert bf["verdict"] == "does-not-hold" and "400 biases" in bf["ours"] and "50 entries" in bf["ours"]
    assert c2.table1_retrain(_res(), {}, "sgd")["verdict"] == "not-testable"


def _ci_fields(claim: dict) -> dict:
    ev = claim["evidence"]
    assert {"n_examples", "seeds", "statistic", "ci_low", "ci_high", "margin", "test", "op"} <= set(ev)
    assert ev["ci_low"] <= ev["statistic"] <= ev["ci_high"] and ev["seeds"] == 1 and ev["n_examples"] == 200
    return ev


def test_fig3_ratio_of_linear_head_graft_to_its_ft():
    lin = "standard FT (linear head)"
    refs = [{"task": "SST-2", "label": lin, "model": "FT", "acc": 0.9, "correct": _ones(180)},
            {"task": "SST-2", "label": lin, "model": "pre-trained", "acc": 0.5, "correct": _ones(100)}]

    def claim(n_right: int) -> dict:
        rows = [dict(_curve_row("SST-2", "learned", _ones(n_right), 120), label=lin),
                dict(_curve_row("SST-2", "learned", _ones(60), 120), label="frozen zero-shot head")]  # no FT ref
        return c2.fig3_standard_ft(_res(), rows, refs)

    ok = claim(178)  # 178/180 = 98.9 %, paired
    ev = _ci_fields(ok)
    assert ok["verdict"] == "holds" and ev["statistic"] == pytest.approx(178 / 180) and ev["op"] == ">="
    assert ev["margin"] == 0.95 and ev["ci_low"] >= 0.95 and "ratio" in ev["test"] and "SST-2 at 0.1%" in ok["note"]
    bad = claim(120)  # 66.7 %
    assert bad["verdict"] == "does-not-hold" and _ci_fields(bad)["ci_high"] < 0.95
    mid = claim(171)  # exactly 95 %: the CI straddles the margin
    ev = _ci_fields(mid)
    assert mid["verdict"] == "inconclusive" and ev["ci_low"] < 0.95 < ev["ci_high"]
    assert c2.fig3_standard_ft(_res(), [], refs)["verdict"] == "not-testable"


def test_fig4b_zero_outside_accuracy_bounded_by_chance_plus_10():
    def claim(n_right: int) -> dict:
        rows = [{"task": "SST-2", "method": "zero_outside", "target_density": 0.1, "acc": 0.45, "correct": _ones(90)},
                {"task": "SST-2", "method": "zero_outside", "target_density": 0.9, "acc": n_right / 200,
                 "correct": _ones(n_right)},
                {"task": "SST-2", "method": "graft", "target_density": 0.9, "acc": 0.8, "correct": _ones(160)}]
        return c2.fig4b_lottery(_res(), rows, {"SST-2": 0.5})

    ok = claim(80)  # 40 % and 45 %, bound 60 %
    ev = _ci_fields(ok)
    assert ok["verdict"] == "holds" and ev["op"] == "<=" and ev["margin"] == 60.0 and ev["ci_high"] <= 60.0
    assert ev["statistic"] == pytest.approx(45.0) and "density 0.1" in ok["note"]  # deciding: the density nearer 60
    bad = claim(160)  # 80 % at density 0.9
    ev = _ci_fields(bad)
    assert bad["verdict"] == "does-not-hold" and ev["ci_low"] > 60.0 and "density 0.9" in bad["note"]
    mid = claim(120)  # 60 %: on the bound
    ev = _ci_fields(mid)
    assert mid["verdict"] == "inconclusive" and ev["ci_low"] < 60.0 < ev["ci_high"]
    assert c2.fig4b_lottery(_res(), [], {})["verdict"] == "not-testable"


def test_fig5_paired_gaps_of_relative_accuracy():
    ft = {("SST-2", lab): _ones(180) for lab in c2.FIG5_LABELS}

    def claim(sgd: int, adamw: int, l1: int) -> dict:
        rows = [dict(_curve_row("SST-2", "learned", _ones(n), 100), label=lab)
                for lab, n in zip(c2.FIG5_LABELS, (sgd, adamw, l1))]
        rows.append(dict(_curve_row("SST-2", "learned", _ones(10), 900, s=1e-2), label="AdamW"))  # not the smallest
        return c2.fig5_adamw(_res(), rows, ft, "adamw")

    ok = claim(175, 120, 170)
    ev = _ci_fields(ok)
    assert ok["verdict"] == "holds" and ev["op"] == ">" and ev["margin"] == 2.0 and ev["ci_low"] > 2.0
    assert ev["statistic"] == pytest.approx(100 * 50 / 180) and "(AdamW + l1) − AdamW" in ok["note"]
    assert "at 0.1%" in ok["ours"] and "difference of two graft/FT accuracy ratios" in ev["test"]
    bad = claim(175, 120, 120)  # l1 restores nothing: that gap is 0 on every resample
    ev = _ci_fields(bad)
    assert bad["verdict"] == "does-not-hold" and ev["statistic"] == 0.0 and ev["ci_high"] < 2.0
    assert "deciding SST-2: (AdamW + l1) − AdamW" in bad["note"]
    mid = claim(175, 120, 124)  # l1 gap 2.2 points from 4 examples
    ev = _ci_fields(mid)
    assert mid["verdict"] == "inconclusive" and ev["ci_low"] < 2.0 < ev["ci_high"]
    missing = c2.fig5_adamw(_res(), [], ft, "adamw")
    assert missing["verdict"] == "not-testable"


def test_ratio_gap_is_paired_over_four_models():
    verdict, ev = c2.ratio_gap(_ones(90), _ones(180), _ones(60), _ones(120), margin=0.0)
    assert ev.statistic == pytest.approx(0.0) and ev.ci_low < 0 < ev.ci_high and verdict == "inconclusive"
    with pytest.raises(ValueError, match="same shape"):
        c2.ratio_gap(_ones(90), _ones(180), _ones(60, 100), _ones(60, 100))


def test_fig4a_and_schema():
    res = _res()
    rows = [_curve_row("SST-2", "learned", _ones(180), 100), _curve_row("SST-2", "learned", _ones(100), 90, "bias")]
    a = c2.fig4a_bias_only(res, rows)
    assert a["verdict"] == "holds" and "unrestricted 100 vs bias-only 90" in a["note"]
    lottery = [{"task": "SST-2", "method": "zero_outside", "target_density": 0.9, "acc": 0.45, "correct": _ones(90)}]
    assert c2.fig4b_lottery(res, lottery, {"SST-2": 0.5})["verdict"] == "holds"
    ft = {("SST-2", lab): _ones(180) for lab in c2.FIG5_LABELS}
    f5 = c2.fig5_adamw(res, [dict(_curve_row("SST-2", "learned", _ones(n), 100), label=lab)
                             for lab, n in zip(c2.FIG5_LABELS, (175, 120, 170))], ft, "adamw")
    assert f5["verdict"] == "holds"
    validate(res.to_dict())  # every claim above satisfies the results schema


def test_the_learning_gate_withholds_claims_on_models_that_did_not_learn():
    chance = np.r_[np.ones(100), np.zeros(100)]  # FT at 50 % on a 2-class task: no skill to localize
    runs = {("SST-2", 32, 1): _run(chance, chance)}
    res = Results("p1_localization", "smoke")
    rec = c2.table2_recovery(res, runs, 32, 1e-5)  # graft/FT = 100 %, vacuously
    assert rec["verdict"] == "not-testable" and "learning gate" in rec["note"]
    assert "SST-2: FT − chance (50%) +0.0 points" in rec["note"] and "ratio" in rec["evidence"]["test"]
    assert rec["evidence"]["per_task"]["SST-2"]["verdict"] == "holds"  # what the rule alone would say
    assert rec["data"][0]["task"] == "SST-2" and rec["data"][0]["kind"] == "generated"
    # later claims of the chapter read the recorded check
    rows = [_curve_row("SST-2", "learned", _ones(180), 120), _curve_row("SST-2", "random", _ones(100), 120)]
    assert "learning gate" in c2.fig2_learned_region(res, rows, 32)["note"]
    # a task whose FT accuracy was never measured fails the gate too
    rows = [_curve_row("QNLI", "learned", _ones(180), 120), _curve_row("QNLI", "random", _ones(100), 120)]
    assert "no FT accuracy was measured" in c2.fig2_learned_region(Results("p1_localization", "smoke"), rows, 32)["note"]


def test_an_empty_region_cannot_hold():
    ft = np.r_[np.ones(180), np.zeros(20)]
    runs = {("SST-2", 32, 1): _run(ft, ft, count=0)}
    res = _res()
    size = c2.table2_size(res, runs, 10_000)  # 0 parameters <= 0.01 %: vacuous
    assert size["verdict"] == "not-testable" and "empty-region gate: SST-2 region has 0 parameters" in size["note"]
    assert c2.table2_recovery(res, runs, 32, 1e-5)["verdict"] == "not-testable"
