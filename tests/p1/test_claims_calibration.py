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


def _correct(acc, n=400, seed=0):
    """0/1 correctness of n examples with accuracy ``acc`` (shuffled, exact count)."""
    k = np.zeros(n, dtype=np.uint8)
    k[: round(acc * n)] = 1
    return np.random.default_rng(seed).permutation(k)


def _ood_runs(accs, n=400):
    """An OodRuns with per-example correctness of the given {(source, target, label): accuracy}; the models of one
    (source, target) get nested correct sets (one shuffled order), as real models on the same examples correlate."""
    from repro.p1.calibration_runs import OodRuns

    sets = sorted({(s, t) for s, t, _ in accs})
    return OodRuns(correct={(s, t, m): _correct(a, n, seed=sets.index((s, t))) for (s, t, m), a in accs.items()})


def test_ood_gap_and_bitfit_rules_decide_on_the_paired_ci():
    runs = _ood_runs({("QNLI", "MNLI", "Grafting"): 0.70, ("QNLI", "MNLI", "FT"): 0.52,
                      ("QNLI", "SNLI", "Grafting"): 0.68, ("QNLI", "SNLI", "FT"): 0.55,
                      ("QNLI", "SNLI", "BitFit"): 0.50, ("QNLI", "MNLI", "Graft re-training"): 0.69,
                      ("QNLI", "SNLI", "Graft re-training"): 0.67})
    gap = cc.fig7_ood_gap(Results("t", "smoke"), runs, [("QNLI", "MNLI"), ("QNLI", "SNLI")])
    assert gap["verdict"] == "holds" and gap["evidence"]["ci_low"] >= 5.0  # +15.5 points on 800 examples
    assert gap["evidence"]["n_examples"] == 800 and gap["evidence"]["seeds"] == 1
    bitfit = cc.table3_bitfit_ood(Results("t", "smoke"), runs)
    assert bitfit["verdict"] == "holds" and bitfit["evidence"]["statistic"] == pytest.approx(18.0)
    # graft − re-train = +1 point, and the nested models differ on few examples: the CI lies below the +2 margin
    retrain = cc.table3_retrain_ood(Results("t", "smoke"), runs, ["MNLI", "SNLI"])
    assert retrain["verdict"] == "does-not-hold" and retrain["evidence"]["ci_high"] < 2.0
    assert cc.fig7_ood_gap(Results("t", "smoke"), runs, [])["verdict"] == "not-testable"


def test_small_shift_needs_every_target_below_five_points():
    runs = _ood_runs({("SST-2", "IMDb", "Grafting"): 0.80, ("SST-2", "IMDb", "FT"): 0.80,
                      ("SST-2", "Yelp", "Grafting"): 0.81, ("SST-2", "Yelp", "FT"): 0.80})
    assert cc.fig7_small_shift(Results("t", "smoke"), runs, ["IMDb", "Yelp"])["verdict"] == "holds"
    runs.correct[("SST-2", "Yelp", "Grafting")] = _correct(0.95, seed=1)  # +15 points on Yelp
    c = cc.fig7_small_shift(Results("t", "smoke"), runs, ["IMDb", "Yelp"])
    assert c["verdict"] == "does-not-hold" and "Yelp" in c["note"]


def test_table1_calibration_bootstraps_the_ece_differences():
    from repro.p1.calibration_runs import OodRuns

    rng = np.random.default_rng(0)
    correct = (rng.random(500) < 0.8).astype(np.uint8)

    def model(conf):
        return {"conf": np.full(500, conf), "correct": correct}
    # accuracy 0.8: ECE = |0.8 − conf|; re-train 1 point, FT 15, graft 2, BitFit 12
    sc = {("A", "Graft re-training"): model(0.81), ("A", "FT"): model(0.95), ("A", "Grafting"): model(0.82),
          ("A", "BitFit"): model(0.92)}
    c = cc.table1_calibration(Results("t", "smoke"), OodRuns(id_scores=sc), ["A"])
    assert c["verdict"] == "holds" and c["evidence"]["n_examples"] == 500
    sc[("A", "BitFit")] = model(0.82)  # BitFit as well calibrated as the graft: not worse
    assert cc.table1_calibration(Results("t", "smoke"), OodRuns(id_scores=sc), ["A"])["verdict"] != "holds"


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
