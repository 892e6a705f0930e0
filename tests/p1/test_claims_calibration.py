"""P1 §4 plan and claim rules (repro.p1.calibration_plan, repro.p1.claims_calibration)."""

from __future__ import annotations

import numpy as np
import pytest

from repro.p1 import claims_calibration as cc
from repro.p1.calibration_plan import CalibrationPlan, calibration_plan, calibration_recipes
from repro.profiles import get_profile
from repro.report.results import Results


def test_plans_per_profile_and_overrides():
    smoke, cpu, paper = (calibration_plan(get_profile(p)) for p in ("smoke", "cpu", "paper"))
    assert smoke.n_eval == 32 and smoke.base == 1e-3 and cpu.n_eval == 200 and paper.n_eval is None
    assert (smoke.n_seeds, cpu.n_seeds, paper.n_seeds) == (1, 3, 5)
    assert cpu.seeds(get_profile("cpu"), 13) == [13, 21, 42] and smoke.seeds(get_profile("smoke"), 13) == [13]
    assert cpu.seeds(get_profile("cpu"), 7) == [7, 1007, 2007]  # a seed outside the profile's list, then +1000s
    assert cpu.base == get_profile("cpu").graft_base_sparsity and len(paper.peft) == 11
    assert calibration_plan(get_profile("paper-smoke")) == smoke
    p = calibration_plan(get_profile("cpu"), ece_tasks=["QNLI"], n_eval=None)
    assert p.ece_tasks == ("QNLI",) and p.n_eval == 200
    with pytest.raises(ValueError, match="unknown plan fields"):
        CalibrationPlan().with_overrides(nope=1)
    cpu_r = calibration_recipes(get_profile("cpu"), cpu)
    assert cpu_r.retrain.lr == 0.1 and cpu_r.peft.optimizer == "adamw" and cpu_r.peft.warmup_steps == 18
    assert calibration_recipes(get_profile("smoke"), smoke).retrain == get_profile("smoke").p1_finetune


def _peft(method, params, ece, acc, ood, rank=None, sparsity=0.1):
    return {"source": "QNLI", "method": method, "rank": rank, "params": params, "sparsity": sparsity,
            "id_acc": acc, "id_ece": ece, "ood:MNLI": ood}


def test_peft_claims_compare_the_graft_closest_in_size_not_the_best():
    runs = [_peft("Grafting", 100, ece=0.30, acc=0.6, ood=0.50),       # small graft, badly calibrated
            _peft("Grafting", 80_000, ece=0.01, acc=0.8, ood=0.90),    # big graft: best, but not matched
            _peft("Grafting", 10**6, ece=0.2, acc=0.9, ood=0.6, sparsity=100.0),  # FT: never a match
            _peft("LoRA", 120, ece=0.10, acc=0.7, ood=0.60, rank=1)]
    pairs = cc.matched_pairs(runs)
    assert len(pairs) == 1 and pairs[0][1]["params"] == 100
    c6 = cc.table6_peft(Results("t", "smoke"), runs)
    assert c6["verdict"] == "does-not-hold" and "120 params" in c6["ours"] and "(100)" in c6["ours"]
    c7 = cc.table7_peft_ood(Results("t", "smoke"), runs)
    assert c7["verdict"] == "does-not-hold"
    runs[0].update(id_ece=0.05, **{"ood:MNLI": 0.7})
    assert cc.table6_peft(Results("t", "smoke"), runs)["verdict"] == "holds"
    assert cc.table7_peft_ood(Results("t", "smoke"), runs)["verdict"] == "holds"
    assert cc.table6_peft(Results("t", "smoke"), runs[:2])["verdict"] == "not-testable"


def _wise(method, alpha, id_, ood):
    return {"source": "QNLI", "method": method, "alpha": alpha, "id": id_, "ood": ood}


def test_wise_claim_needs_both_id_and_ood():
    best = {"WiSE-FT": _wise("WiSE-FT", 0.5, 0.80, 0.70), "WiSE-Graft": _wise("WiSE-Graft", 0.5, 0.8, 0.7)}
    good = [_wise("WiSE-Graft", 1.0, 0.84, 0.71)]
    assert cc.fig7e_wise(Results("t", "smoke"), good, best)["verdict"] == "holds"
    low_id = [_wise("WiSE-Graft", 1.0, 0.70, 0.75)]  # better OOD, 10 points worse ID: dominated on ID
    assert cc.fig7e_wise(Results("t", "smoke"), low_id, best)["verdict"] == "does-not-hold"


def _ood(source, target, label, acc):
    return {"source": source, "target": target, "split": "OOD", "label": label, "acc": acc, "ece": None}


def test_ood_gap_and_bitfit_rules():
    runs = [_ood("QNLI", "MNLI", "Grafting", 0.60), _ood("QNLI", "MNLI", "FT", 0.52),
            _ood("QNLI", "SNLI", "Grafting", 0.58), _ood("QNLI", "SNLI", "FT", 0.55),
            _ood("QNLI", "SNLI", "BitFit", 0.50)]
    gap = cc.fig7_ood_gap(Results("t", "smoke"), runs, [("QNLI", "MNLI"), ("QNLI", "SNLI")])
    assert gap["verdict"] == "holds"  # mean (8 + 3) / 2 = 5.5 >= 5
    assert cc.table3_bitfit_ood(Results("t", "smoke"), runs)["verdict"] == "holds"  # 58 - 50 >= 5
    assert cc.fig7_ood_gap(Results("t", "smoke"), runs, [])["verdict"] == "not-testable"


def _per_example(ft_conf, graft_conf, correct, seeds=(13, 21, 42), agree=None):
    """Hand-made per-example arrays: every seed has the same examples."""
    n = len(correct)
    return {("A", s): {"conf_ft": np.full(n, ft_conf), "correct_ft": np.asarray(correct),
                       "conf_graft": np.full(n, graft_conf), "correct_graft": np.asarray(correct),
                       "agree": np.ones(n) if agree is None else np.asarray(agree)} for s in seeds}


def test_ece_reduction_ci_decides_on_the_bootstrap():
    correct = [1] * 70 + [0] * 30  # accuracy 0.7
    red = [{"task": "A", "reduction": 0.9, "within_5pct": True, "relative_drop": 0.0}]
    # FT over-confident (0.99 → ECE 0.29), graft at 0.72 (ECE 0.02): ~93% lower, far above 35%
    good = cc.ece_reduction(Results("t", "smoke"), red, _per_example(0.99, 0.72, correct), 16, 1e-3,
                            n_resamples=300)
    ev = good["evidence"]
    assert good["verdict"] == "holds" and ev["seeds"] == 3 and ev["n_examples"] == 100
    assert 35 < ev["ci_low"] <= ev["statistic"] <= ev["ci_high"] <= 100
    # graft as over-confident as FT: no reduction → does not hold
    bad = cc.ece_reduction(Results("t", "smoke"), red, _per_example(0.99, 0.98, correct), 16, 1e-3,
                           n_resamples=300)
    assert bad["verdict"] == "does-not-hold" and bad["evidence"]["ci_high"] < 35
    est, lo, hi = cc.reduction_ci(_per_example(0.99, 0.72, correct), "A", n_resamples=200)
    assert lo <= est <= hi
    red[0]["within_5pct"] = False  # the graft loses > 5%: the claim's condition is never met
    assert cc.ece_reduction(Results("t", "smoke"), red, _per_example(0.99, 0.72, correct), 16,
                            1e-3)["verdict"] == "not-testable"


def test_ece_reduction_refuses_seeds_of_different_test_sizes():
    pe = _per_example(0.99, 0.72, [1, 0, 1])
    pe[("A", 99)] = _per_example(0.99, 0.72, [1, 0])[("A", 13)]
    with pytest.raises(ValueError, match="same test examples"):
        cc.reduction_ci(pe, "A", n_resamples=10)


def test_agreement_claim_uses_the_ci_of_the_mean():
    hi = cc.agreement(Results("t", "smoke"), _per_example(0.9, 0.8, [1] * 100, agree=[1] * 95 + [0] * 5),
                      n_resamples=300)
    assert hi["verdict"] == "holds" and hi["evidence"]["ci_low"] >= 80
    lo = cc.agreement(Results("t", "smoke"), _per_example(0.9, 0.8, [1] * 100, agree=[1] * 60 + [0] * 40),
                      n_resamples=300)
    assert lo["verdict"] == "does-not-hold"
    near = cc.agreement(Results("t", "smoke"), _per_example(0.9, 0.8, [1] * 20, seeds=(13,),
                                                            agree=[1] * 16 + [0] * 4), n_resamples=300)
    assert near["verdict"] == "inconclusive"  # 80% on 20 examples: the CI straddles the margin


def test_gap_rule():
    gaps = [{"task": "QNLI", "method": "FT", "gap_acc": 0.2, "n_train": 32},
            {"task": "QNLI", "method": "Graft re-training", "gap_acc": 0.05, "n_train": 32}]
    assert cc.table1_gap(Results("t", "smoke"), gaps, ["QNLI"])["verdict"] == "holds"
