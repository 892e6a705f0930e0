"""Statistical verdicts (repro.report.verdicts) and the claim schema that stores them (repro.report.results)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from repro.report.results import Results, ResultsError, claim_verdict, validate
from repro.report.verdicts import (Evidence, VerdictError, check_consistent, compare, decide, difference,
                                   exact, independent_bootstrap, mean, normal_combination, paired_bootstrap,
                                   ratio)


# ---------------------------------------------------------------- decide: the verdict from a CI
@pytest.mark.parametrize("low, high, op, margin, expected", [
    (0.96, 0.99, ">=", 0.95, "holds"),          # conservative end (low) above the bound
    (0.95, 0.99, ">=", 0.95, "holds"),          # >= includes the bound
    (0.95, 0.99, ">", 0.95, "inconclusive"),    # > does not
    (0.90, 0.94, ">=", 0.95, "does-not-hold"),  # the other end (high) below the bound
    (0.90, 0.97, ">=", 0.95, "inconclusive"),   # straddles
    (-3.0, -1.0, "<", 0.0, "holds"),            # e.g. ECE(graft) − ECE(FT) < 0
    (1.0, 3.0, "<", 0.0, "does-not-hold"),
    (0.0, 3.0, "<", 0.0, "does-not-hold"),      # the opposite of < 0 is >= 0, and low = 0 satisfies it
    (-1.0, 3.0, "<=", 0.0, "inconclusive"),
])
def test_decide_reads_the_conservative_end(low, high, op, margin, expected):
    assert decide(low, high, op, margin) == expected


def test_decide_rejects_bad_input():
    with pytest.raises(VerdictError, match="operator"):
        decide(0.0, 1.0, "=>", 0.0)
    with pytest.raises(VerdictError, match="ci_low <= ci_high"):
        decide(1.0, 0.0, ">=", 0.0)


# ---------------------------------------------------------------- the bootstrap, by hand
def test_two_examples_bootstrap_by_hand():
    # a = [1, 0], b = [0, 0]: a resample of 2 examples has mean 0, 0.5, 1 with probability 1/4, 1/2, 1/4, so the
    # 2.5 % and 97.5 % quantiles are 0 and 1; the point estimate is 0.5.
    est, lo, hi = difference([1, 0], [0, 0], n_resamples=4000, seed=1)
    assert (est, lo, hi) == (0.5, 0.0, 1.0)


def test_identical_models_have_a_zero_width_ci():
    a = np.random.default_rng(0).integers(0, 2, size=50)
    assert difference(a, a) == (0.0, 0.0, 0.0)
    assert ratio(a, a) == (1.0, 1.0, 1.0)


def test_the_bootstrap_is_paired():
    # a is right wherever b is right, plus on 5 more of 100 examples: every paired resample has a − b >= 0
    # (an unpaired bootstrap of two accuracies near 0.5 would put much of the CI below 0).
    rng = np.random.default_rng(3)
    b = rng.integers(0, 2, size=100)
    a = b.copy()
    a[np.flatnonzero(b == 0)[:5]] = 1
    est, lo, hi = difference(a, b, seed=0)
    assert est == pytest.approx(0.05) and lo >= 0.0 and hi <= 0.12
    assert lo < est < hi


def test_seeds_are_resampled_too():
    # two seeds that disagree completely: seed 0 always right, seed 1 always wrong.  Resampling seeds gives the mean
    # 1 (both draws seed 0, p = 1/4), 0.5 (p = 1/2) or 0 (p = 1/4): CI [0, 1].  Over examples alone it would be 0.5.
    a = np.array([[1.0] * 20, [0.0] * 20])
    est, lo, hi = mean(a, n_resamples=4000, seed=2)
    assert (est, lo, hi) == (0.5, 0.0, 1.0)


def test_bootstrap_is_seeded_and_checks_shapes():
    rng = np.random.default_rng(5)
    a, b = rng.random(30), rng.random(30)
    assert difference(a, b, seed=7) == difference(a, b, seed=7)
    with pytest.raises(VerdictError, match="same shape"):
        difference(a, b[:20])
    with pytest.raises(VerdictError, match="NaN"):
        mean([1.0, float("nan")])
    with pytest.raises(VerdictError, match="at least one"):
        paired_bootstrap([], np.mean)


def test_independent_bootstrap_resamples_each_sample_alone():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    diff = lambda x, y: x.mean() - y.mean()  # noqa: E731
    assert paired_bootstrap([a, a], diff) == (0.0, 0.0, 0.0)  # paired: identical samples never differ
    est, lo, hi = independent_bootstrap([a, a], diff)  # unpaired: they do
    assert est == 0.0 and lo < 0.0 < hi
    est, lo, hi = independent_bootstrap([a, np.array([10.0, 10.0])], diff)  # lengths may differ
    assert est == -7.5 and lo < -7.5 < hi and independent_bootstrap([a, a], diff) == independent_bootstrap([a, a], diff)
    with pytest.raises(VerdictError, match="1-d"):
        independent_bootstrap([np.ones((2, 3))], lambda x: x.mean())


def test_ratio_ci_contains_the_estimate():
    a = np.r_[np.ones(90), np.zeros(10)]  # 90 %
    b = np.r_[np.ones(95), np.zeros(5)]   # 95 %
    est, lo, hi = ratio(a, b)
    assert est == pytest.approx(0.90 / 0.95) and lo < est < hi < 1.0


# ---------------------------------------------------------------- compare: verdict + evidence
def test_compare_gives_verdict_and_evidence_in_reported_units():
    ft = np.r_[np.ones(180), np.zeros(20)]            # 90 %
    graft = ft.copy()                                  # same predictions: ratio exactly 1
    verdict, ev = compare(graft, ft, kind="ratio", op=">=", margin=0.95)
    assert verdict == "holds" and (ev.statistic, ev.ci_low, ev.ci_high) == (1.0, 1.0, 1.0)
    assert (ev.n_examples, ev.seeds, ev.margin, ev.op) == (200, 1, 0.95, ">=") and "ratio" in ev.test
    worse = ft.copy()
    worse[:40] = 0                                     # 70 %: 0.78 of FT
    verdict, ev = compare(worse, ft, kind="ratio", op=">=", margin=0.95)
    assert verdict == "does-not-hold" and ev.ci_high < 0.95
    verdict, ev = compare(worse, ft, kind="difference", scale=100, op=">=", margin=0.0)
    assert verdict == "does-not-hold" and ev.statistic == pytest.approx(-20.0)   # percentage points
    with pytest.raises(VerdictError, match="pass b"):
        compare(ft, kind="ratio")


# ---------------------------------------------------------------- the claim schema
def _ev(**kw):
    d = Evidence(n_examples=100, seeds=3, statistic=0.97, ci_low=0.96, ci_high=0.98, margin=0.95,
                 test="paired bootstrap", op=">=").to_dict()
    d.update(kw)
    return d


def _obj(claim):
    return {"tables": {"p1-table2": [dict(task="SST-2", method="Graft", sparsity=0.01, metric="acc", value=91.0,
                                          std=None, paper=92.4)]}, "figures": {}, "claims": [claim]}


def test_consistency_is_enforced():
    check_consistent("holds", True, _ev())
    with pytest.raises(VerdictError, match="contradicts its evidence"):
        check_consistent("holds", True, _ev(ci_low=0.90))          # the CI straddles 0.95: inconclusive
    with pytest.raises(VerdictError, match="holds=None contradicts"):
        check_consistent("holds", None, _ev())
    with pytest.raises(VerdictError, match="reason"):
        check_consistent("not-testable", None, None, note="")
    with pytest.raises(VerdictError, match="misses"):
        check_consistent("holds", True, {"statistic": 1.0})
    with pytest.raises(VerdictError, match="positive integer"):
        check_consistent("holds", True, _ev(seeds=0))
    with pytest.raises(VerdictError, match="needs evidence"):
        check_consistent("inconclusive", None, None)


def test_results_store_verdicts_and_reject_inconsistent_claims(tmp_path):
    res = Results("p1_localization", "smoke")
    verdict, ev = compare(np.ones(50), np.ones(50), kind="ratio", margin=0.95)
    c = res.add_claim("p1-table2-recovery", "graft ≥ 95 % of FT", verdict=verdict, evidence=ev)
    assert c["holds"] is True and c["evidence"]["n_examples"] == 50
    c = res.add_claim("p1-table2-x", "a claim", verdict="inconclusive",
                      evidence=_ev(ci_low=0.9), note="straddles")
    assert c["holds"] is None
    c = res.add_claim("p1-fig3-x", "ours only", holds=False, beyond_paper=True)
    assert c["verdict"] == "does-not-hold" and c["beyond_paper"] is True
    c = res.add_claim("p1-fig4-x", "untested")
    assert c["verdict"] == "not-testable" and c["note"]
    with pytest.raises(ResultsError, match="contradicts"):
        res.add_claim("p1-fig5-x", "bad", verdict="holds", evidence=_ev(ci_high=0.94, ci_low=0.9))
    with pytest.raises(ResultsError, match="contradicts"):
        res.add_claim("p1-fig5-y", "bad", verdict="holds", holds=False)
    res.add_table("p1-table2", _obj({})["tables"]["p1-table2"])
    res.save(tmp_path)
    with pytest.raises(ResultsError, match="verdict"):
        validate(_obj(dict(id="p1-table2-y", text="t", paper=None, ours=None, holds=None, note="",
                           verdict="maybe", evidence=None)))


def test_legacy_claims_map_to_verdicts():
    assert claim_verdict({"holds": True}) == "holds"
    assert claim_verdict({"holds": False}) == "does-not-hold"
    assert claim_verdict({"holds": None}) == "not-testable"
    assert claim_verdict({"holds": None, "verdict": "inconclusive"}) == "inconclusive"


def test_exact_is_a_zero_width_interval_decided_at_the_number():
    verdict, ev = exact(0.0089, "<=", 0.01, 9, "size of the largest region", seeds=3)
    assert verdict == "holds" and ev.ci_low == ev.ci_high == ev.statistic == 0.0089
    assert (ev.n_examples, ev.seeds, ev.test) == (9, 3, "exact size of the largest region; no sampling")
    check_consistent(verdict, True, ev.to_dict())
    assert exact(0.2, "<", 0.2, 12, "overlap")[0] == "does-not-hold"  # never inconclusive: no interval
    with pytest.raises(VerdictError):
        exact(1.0, "=>", 0.0, 1, "bad operator")


def test_normal_combination_is_the_binomial_normal_ci_of_a_linear_combination():
    verdict, ev = normal_combination([(1.0, 0.8), (-1.0, 0.7)], 400, op=">", test="unpaired")
    half = 1.959963984540054 * 100 * math.sqrt((0.8 * 0.2 + 0.7 * 0.3) / 400)
    assert ev.statistic == pytest.approx(10.0) and ev.ci_low == pytest.approx(10.0 - half)
    assert verdict == "holds" and (ev.n_examples, ev.seeds, ev.test) == (400, 1, "unpaired")
    assert normal_combination([(1.0, 0.8), (-1.0, 0.7)], 20, op=">", test="t")[0] == "inconclusive"
    assert normal_combination([(1.0, 0.5), (-1.0, 0.7)], 400, op=">", test="t")[0] == "does-not-hold"
    with pytest.raises(VerdictError):
        normal_combination([(1.0, 0.5)], 0, op=">", test="t")
