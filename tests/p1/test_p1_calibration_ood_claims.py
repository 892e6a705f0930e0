"""P1 §4 plan and claim rules (repro.p1.calibration_ood.plan, repro.p1.calibration_ood.claims)."""

from __future__ import annotations

import numpy as np
import pytest

from repro.p1.calibration_ood import claims as cc
from repro.p1.calibration_ood.plan import CalibrationPlan, calibration_plan, calibration_recipes
from repro.profiles import get_profile
from repro.report.gates import learned
from repro.report.results import Results


def _res() -> Results:
    """Results of a run whose FT learned QNLI and SST-2 (90 % against chance): the learning gate passes."""
    res = Results("t", "smoke")
    res.record_learning(*(learned(t, np.r_[np.ones(180), np.zeros(20)]) for t in ("QNLI", "SST-2")))
    return res


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


def _peft(method, params, ece, acc, ood, rank=None, sparsity=0.1, label=None):
    return {"source": "QNLI", "method": method, "label": label or f"{method}-{params}", "rank": rank,
            "params": params, "sparsity": sparsity, "id_acc": acc, "id_ece": ece, "ood:MNLI": ood}


def _peft_runs(rows, n=400):
    """A PeftRuns whose per-example scores reproduce each row's ECE and OOD accuracy: constant confidence 0.8 and ID
    accuracy 0.8 − ``id_ece`` (so ECE = ``id_ece``), OOD correctness with the row's accuracy; nested correct sets."""
    from repro.p1.calibration_ood.runs import PeftRuns

    def scores(r):
        return {"conf": np.full(n, 0.8), "correct": _correct(0.8 - r["id_ece"], n),
                "ood:MNLI": _correct(r["ood:MNLI"], n, seed=1)}
    return PeftRuns(rows=rows, scores={(r["source"], r["label"]): scores(r) for r in rows})


def test_peft_claims_compare_the_graft_closest_in_size_not_the_best():
    runs = [_peft("Grafting", 100, ece=0.30, acc=0.6, ood=0.50),       # small graft, badly calibrated
            _peft("Grafting", 80_000, ece=0.01, acc=0.8, ood=0.90),    # big graft: best, but not matched
            _peft("Grafting", 10**6, ece=0.2, acc=0.9, ood=0.6, sparsity=100.0),  # FT: never a match
            _peft("LoRA", 120, ece=0.10, acc=0.7, ood=0.60, rank=1)]
    pairs = cc.matched_pairs(runs)
    assert len(pairs) == 1 and pairs[0][1]["params"] == 100
    c6 = cc.table6_peft(_res(), _peft_runs(runs), n_resamples=300)
    ev = c6["evidence"]  # PEFT ECE 10 − graft ECE 30 = −20 points on 400 ID examples
    assert c6["verdict"] == "does-not-hold" and "120 params" in c6["ours"] and "(100)" in c6["ours"]
    assert ev["statistic"] == pytest.approx(-20.0) and ev["ci_high"] < 0 and ev["n_examples"] == 400
    assert ev["op"] == ">" and ev["margin"] == 0 and ev["seeds"] == 1
    c7 = cc.table7_peft_ood(_res(), _peft_runs(runs), n_resamples=300)
    assert c7["verdict"] == "does-not-hold" and c7["evidence"]["statistic"] == pytest.approx(-10.0)
    runs[0].update(id_ece=0.05, **{"ood:MNLI": 0.7})  # the matched graft: 5 points lower ECE, +10 OOD
    c6 = cc.table6_peft(_res(), _peft_runs(runs), n_resamples=300)
    assert c6["verdict"] == "holds" and c6["evidence"]["ci_low"] > 0
    c7 = cc.table7_peft_ood(_res(), _peft_runs(runs), n_resamples=300)
    assert c7["verdict"] == "holds" and c7["evidence"]["statistic"] == pytest.approx(10.0)
    assert cc.table6_peft(_res(), _peft_runs(runs[:2]))["verdict"] == "not-testable"
    assert cc.table7_peft_ood(_res(), _peft_runs(runs[:2]))["verdict"] == "not-testable"


def test_strata_ci_recomputes_each_set_on_its_drawn_examples():
    a, b = np.r_[np.ones(30), np.zeros(10)], np.r_[np.ones(100), np.zeros(100)]  # sets of 40 and 200 examples
    est, lo, hi, n = cc.strata_ci([[a], [b]], lambda d: d[0][0].mean() - d[1][0].mean(), n_resamples=300)
    assert n == 240 and est == pytest.approx(0.25) and lo < 0.25 < hi
    with pytest.raises(ValueError, match="same examples"):
        cc.strata_ci([[a, b]], lambda d: 0.0, n_resamples=10)


def _wise_runs(graft_id, graft_ood, ft_id=0.80, ft_ood=0.70, n=200):
    """WiSE runs of QNLI: WiSE-FT at α = 0.5 and the graft (WiSE-Graft α = 1) with the given accuracies on the
    same nested examples; OOD on MNLI and SNLI (same accuracy on both)."""
    from repro.p1.calibration_ood.runs import WiseRuns

    def model(id_, ood):
        return {"QNLI": _correct(id_, n), "MNLI": _correct(ood, n, seed=1), "SNLI": _correct(ood, n, seed=2)}
    return WiseRuns(correct={("QNLI", "WiSE-FT", 0.5): model(ft_id, ft_ood),
                             ("QNLI", "WiSE-Graft", 1.0): model(graft_id, graft_ood)})


def _wise(method, alpha, id_, ood):
    return {"source": "QNLI", "method": method, "alpha": alpha, "id": id_, "ood": ood}


def test_wise_claim_needs_both_id_and_ood():
    best = {"WiSE-FT": _wise("WiSE-FT", 0.5, 0.80, 0.70), "WiSE-Graft": _wise("WiSE-Graft", 0.5, 0.8, 0.7)}
    good = cc.fig7e_wise(_res(), _wise_runs(0.84, 0.71), best, n_resamples=300)
    ev = good["evidence"]
    assert good["verdict"] == "holds" and ev["ci_low"] >= -1 and ev["op"] == ">=" and ev["margin"] == -1
    assert ev["n_examples"] in (200, 400) and ev["seeds"] == 1
    # better OOD, 10 points worse ID: dominated on ID (the deciding coordinate)
    low_id = cc.fig7e_wise(_res(), _wise_runs(0.70, 0.75), best, n_resamples=300)
    assert low_id["verdict"] == "does-not-hold" and low_id["evidence"]["statistic"] == pytest.approx(-10.0)
    assert low_id["evidence"]["n_examples"] == 200 and "(ID)" in low_id["note"]
    low_ood = cc.fig7e_wise(_res(), _wise_runs(0.84, 0.60), best, n_resamples=300)
    assert low_ood["verdict"] == "does-not-hold" and low_ood["evidence"]["n_examples"] == 400  # MNLI + SNLI pooled


def test_fig6_needs_confident_ft_fewer_confident_graft_and_lower_ece():
    correct = [1] * 70 + [0] * 30  # accuracy 0.7
    pe = _per_example(0.99, 0.72, correct)  # FT: every example above 0.9, ECE 29; graft: none, ECE 2
    c = cc.fig6_confidence(_res(), pe, "SST-2", n_resamples=300)
    ev = c["evidence"]
    assert c["verdict"] == "holds" and ev["seeds"] == 3 and ev["n_examples"] == 100
    assert "FT 100%" in c["ours"] and "graft 0%" in c["ours"]
    bad = cc.fig6_confidence(_res(), _per_example(0.85, 0.72, correct), "SST-2", n_resamples=300)
    assert bad["verdict"] == "does-not-hold" and "FT share above 0.9" in bad["note"]
    assert bad["evidence"]["statistic"] == 0 and bad["evidence"]["margin"] == 50 and bad["evidence"]["op"] == ">"


def _correct(acc, n=400, seed=0):
    """0/1 correctness of n examples with accuracy ``acc`` (shuffled, exact count)."""
    k = np.zeros(n, dtype=np.uint8)
    k[: round(acc * n)] = 1
    return np.random.default_rng(seed).permutation(k)


def _ood_runs(accs, n=400):
    """An OodRuns with per-example correctness of the given {(source, target, label): accuracy}; the models of one
    (source, target) get nested correct sets (one shuffled order), as real models on the same examples correlate."""
    from repro.p1.calibration_ood.runs import OodRuns

    sets = sorted({(s, t) for s, t, _ in accs})
    return OodRuns(correct={(s, t, m): _correct(a, n, seed=sets.index((s, t))) for (s, t, m), a in accs.items()})


def test_ood_gap_and_bitfit_rules_decide_on_the_paired_ci():
    runs = _ood_runs({("QNLI", "MNLI", "Grafting"): 0.70, ("QNLI", "MNLI", "FT"): 0.52,
                      ("QNLI", "SNLI", "Grafting"): 0.68, ("QNLI", "SNLI", "FT"): 0.55,
                      ("QNLI", "SNLI", "BitFit"): 0.50, ("QNLI", "MNLI", "Graft re-training"): 0.69,
                      ("QNLI", "SNLI", "Graft re-training"): 0.67})
    gap = cc.fig7_ood_gap(_res(), runs, [("QNLI", "MNLI"), ("QNLI", "SNLI")])
    assert gap["verdict"] == "holds" and gap["evidence"]["ci_low"] >= 5.0  # +15.5 points on 800 examples
    assert gap["evidence"]["n_examples"] == 800 and gap["evidence"]["seeds"] == 1
    bitfit = cc.table3_bitfit_ood(_res(), runs)
    assert bitfit["verdict"] == "holds" and bitfit["evidence"]["statistic"] == pytest.approx(18.0)
    # graft − re-train = +1 point, and the nested models differ on few examples: the CI lies below the +2 margin
    retrain = cc.table3_retrain_ood(_res(), runs, ["MNLI", "SNLI"])
    assert retrain["verdict"] == "does-not-hold" and retrain["evidence"]["ci_high"] < 2.0
    assert cc.fig7_ood_gap(_res(), runs, [])["verdict"] == "not-testable"


def test_small_shift_needs_every_target_below_five_points():
    runs = _ood_runs({("SST-2", "IMDb", "Grafting"): 0.80, ("SST-2", "IMDb", "FT"): 0.80,
                      ("SST-2", "Yelp", "Grafting"): 0.81, ("SST-2", "Yelp", "FT"): 0.80})
    assert cc.fig7_small_shift(_res(), runs, ["IMDb", "Yelp"])["verdict"] == "holds"
    runs.correct[("SST-2", "Yelp", "Grafting")] = _correct(0.95, seed=1)  # +15 points on Yelp
    c = cc.fig7_small_shift(_res(), runs, ["IMDb", "Yelp"])
    assert c["verdict"] == "does-not-hold" and "Yelp" in c["note"]


def test_table1_calibration_bootstraps_the_ece_differences():
    from repro.p1.calibration_ood.runs import OodRuns

    rng = np.random.default_rng(0)
    correct = (rng.random(500) < 0.8).astype(np.uint8)

    def model(conf):
        return {"conf": np.full(500, conf), "correct": correct}
    # accuracy 0.8: ECE = |0.8 − conf|; re-train 1 point, FT 15, graft 2, BitFit 12
    sc = {("SST-2", "Graft re-training"): model(0.81), ("SST-2", "FT"): model(0.95), ("SST-2", "Grafting"): model(0.82),
          ("SST-2", "BitFit"): model(0.92)}
    c = cc.table1_calibration(_res(), OodRuns(id_scores=sc), ["SST-2"])
    assert c["verdict"] == "holds" and c["evidence"]["n_examples"] == 500
    sc[("SST-2", "BitFit")] = model(0.82)  # BitFit as well calibrated as the graft: not worse
    assert cc.table1_calibration(_res(), OodRuns(id_scores=sc), ["SST-2"])["verdict"] != "holds"


def _per_example(ft_conf, graft_conf, correct, seeds=(13, 21, 42), agree=None):
    """Hand-made per-example arrays: every seed has the same examples."""
    n = len(correct)
    return {("SST-2", s): {"conf_ft": np.full(n, ft_conf), "correct_ft": np.asarray(correct),
                       "conf_graft": np.full(n, graft_conf), "correct_graft": np.asarray(correct),
                       "agree": np.ones(n) if agree is None else np.asarray(agree)} for s in seeds}


def test_ece_reduction_ci_decides_on_the_bootstrap():
    correct = [1] * 70 + [0] * 30  # accuracy 0.7
    red = [{"task": "SST-2", "reduction": 0.9, "within_5pct": True, "relative_drop": 0.0}]
    # FT over-confident (0.99 → ECE 0.29), graft at 0.72 (ECE 0.02): ~93% lower, far above 35%
    good = cc.ece_reduction(_res(), red, _per_example(0.99, 0.72, correct), 16, 1e-3,
                            n_resamples=300)
    ev = good["evidence"]
    assert good["verdict"] == "holds" and ev["seeds"] == 3 and ev["n_examples"] == 100
    assert 35 < ev["ci_low"] <= ev["statistic"] <= ev["ci_high"] <= 100
    # graft as over-confident as FT: no reduction → does not hold
    bad = cc.ece_reduction(_res(), red, _per_example(0.99, 0.98, correct), 16, 1e-3,
                           n_resamples=300)
    assert bad["verdict"] == "does-not-hold" and bad["evidence"]["ci_high"] < 35
    est, lo, hi = cc.reduction_ci(_per_example(0.99, 0.72, correct), "SST-2", n_resamples=200)
    assert lo <= est <= hi
    red[0]["within_5pct"] = False  # the graft loses > 5%: the claim's condition is never met
    assert cc.ece_reduction(_res(), red, _per_example(0.99, 0.72, correct), 16,
                            1e-3)["verdict"] == "not-testable"


def test_ece_reduction_refuses_seeds_of_different_test_sizes():
    pe = _per_example(0.99, 0.72, [1, 0, 1])
    pe[("SST-2", 99)] = _per_example(0.99, 0.72, [1, 0])[("SST-2", 13)]
    with pytest.raises(ValueError, match="same test examples"):
        cc.reduction_ci(pe, "SST-2", n_resamples=10)


def test_agreement_claim_uses_the_ci_of_the_mean():
    hi = cc.agreement(_res(), _per_example(0.9, 0.8, [1] * 100, agree=[1] * 95 + [0] * 5),
                      n_resamples=300)
    assert hi["verdict"] == "holds" and hi["evidence"]["ci_low"] >= 80
    lo = cc.agreement(_res(), _per_example(0.9, 0.8, [1] * 100, agree=[1] * 60 + [0] * 40),
                      n_resamples=300)
    assert lo["verdict"] == "does-not-hold"
    near = cc.agreement(_res(), _per_example(0.9, 0.8, [1] * 20, seeds=(13,),
                                                            agree=[1] * 16 + [0] * 4), n_resamples=300)
    assert near["verdict"] == "inconclusive"  # 80% on 20 examples: the CI straddles the margin


def _gap_runs(re_train, ft_train, test=0.70, tasks=("QNLI",), n_train=128, n_test=500):
    """GapRuns with the given training accuracies of the re-trained graft and FT, and ``test`` accuracy for both."""
    from repro.p1.calibration_ood.runs import GapRuns

    out = GapRuns()
    for t in tasks:
        for m, tr in (("Graft re-training", re_train), ("FT", ft_train)):
            out.correct[(t, m, "train")] = _correct(tr, n_train)
            out.correct[(t, m, "test")] = _correct(test, n_test, seed=1)
            out.rows.append({"task": t, "method": m, "gap_acc": tr - test, "n_train": n_train, "n_test": n_test})
    return out


def test_gap_rule_resamples_train_and_test_examples():
    # gaps: re-train 2, FT 25 points → 2 − 12.5 = −10.5 below 0
    c = cc.table1_gap(_res(), _gap_runs(0.72, 0.95, tasks=("QNLI", "SST-2")), ["QNLI", "SST-2"],
                      n_resamples=300)
    ev = c["evidence"]
    assert c["verdict"] == "holds" and ev["statistic"] == pytest.approx(2 - 12.5, abs=0.5) and ev["ci_high"] < 0
    assert ev["n_examples"] == 2 * (128 + 500) and ev["op"] == "<" and ev["margin"] == 0
    assert "training and 1000 test examples" in c["note"]
    # re-train gap 15, FT 20 → 15 − 10 = +5: not below half of FT's
    bad = cc.table1_gap(_res(), _gap_runs(0.85, 0.90), ["QNLI"], n_resamples=300)
    assert bad["verdict"] == "does-not-hold" and bad["evidence"]["ci_low"] > 0
