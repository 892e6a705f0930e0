"""P1 App. D: the uniform-convergence variance bound of Theorem D.2."""

from __future__ import annotations

import math

import pytest

from repro.p1.generalization import bound_terms, gap_from_splits, log_theta_trivial, uc_variance_bound


def test_variance_bound_formula_and_monotonicity():
    s, n = 100, 10_000
    want = 2 * math.sqrt((s * 32 * math.log(2) + math.log(20)) / n)
    assert uc_variance_bound(s, n) == pytest.approx(want)
    assert uc_variance_bound(s, 4 * n) == pytest.approx(uc_variance_bound(s, n) / 2, rel=1e-3)
    assert uc_variance_bound(2 * s, n) > uc_variance_bound(s, n)
    assert log_theta_trivial(3, 1000) == pytest.approx(3 * math.log(1000))
    with pytest.raises(ValueError):
        uc_variance_bound(1, 0)


def test_bound_terms_full_model_is_looser():
    t = bound_terms(s=50, d=10_000, n=256, retrain_test_loss=0.40, ft_test_loss=0.35)
    assert t["variance_fixed_region"] < t["variance_any_region"] < t["variance_full_model"]
    assert t["bias_proxy"] == pytest.approx(0.05)


def test_gap_from_splits():
    tr = {"acc": 0.9, "loss": 0.2, "n": 128, "correct": None}
    te = {"acc": 0.75, "loss": 0.5, "n": 500, "correct": None}
    g = gap_from_splits(tr, te)
    assert g["gap_acc"] == pytest.approx(0.15) and g["gap_loss"] == pytest.approx(0.3)
    assert (g["n_train"], g["n_test"]) == (128, 500) and "correct" not in g
