"""Claim rules of P2 Figs. 1, 10, 11 (repro.p2.claims_sensitivity) on hand-made ratio tables, and the plan."""

import pandas as pd
import pytest

from repro.p2 import claims_sensitivity as claims
from repro.p2.sensitivity import RANDOM_SOURCE
from repro.p2.sensitivity_plan import sensitivity_plan
from repro.profiles import get_profile
from repro.report.results import Results


def _res() -> Results:
    return Results("p2_sensitivity", "smoke", params={})


def _ratios(diag: float, off: float, rnd: float = 0.5) -> pd.DataFrame:
    tasks = ["A", "B"]
    rows = [{"source": s, "task": t, "ratio": diag if s == t else off} for s in tasks for t in tasks]
    return pd.DataFrame(rows + [{"source": RANDOM_SOURCE, "task": t, "ratio": rnd} for t in tasks])


def test_pruning_and_perturb_rules():
    assert claims.fig1_pruning(_res(), _ratios(1.0, 0.99), "m", 2, 200)["verdict"] == "holds"
    assert claims.fig1_pruning(_res(), _ratios(1.0, 0.85), "m", 2, 200)["verdict"] == "does-not-hold"
    assert claims.fig10_perturb(_res(), _ratios(0.98, 0.98))["verdict"] == "holds"
    assert claims.fig10_perturb(_res(), _ratios(0.95, 0.95))["verdict"] == "does-not-hold"


def test_shared_rule_compares_off_diagonal_with_diagonal():
    assert claims.fig1_shared(_res(), _ratios(1.0, 0.99))["verdict"] == "holds"
    assert claims.fig1_shared(_res(), _ratios(1.05, 0.98))["verdict"] == "does-not-hold"


def test_overlap_rules_and_gates():
    assert claims.fig11_overlap(_res(), 0.4, 0.05)["verdict"] == "holds"
    assert claims.fig11_overlap(_res(), 0.1, 0.05)["verdict"] == "does-not-hold"
    assert claims.fig11_vit(_res(), 0.8, "all-MiniLM-L6-v2")["verdict"] == "not-testable"
    assert claims.fig11_t5(_res(), 0.4, "t5-small")["verdict"] == "holds"
    assert claims.fig11_t5(_res(), 0.4, "all-MiniLM-L6-v2")["verdict"] == "not-testable"


@pytest.mark.parametrize("name", ["smoke", "paper-smoke", "cpu", "paper"])
def test_plan_matches_the_profile_rule(name):
    p = get_profile(name)
    plan = sensitivity_plan(p)
    assert plan.n_fisher == p.talos.calibration_examples and plan.fraction == 0.1
    assert plan.n_eval == ((min(p.n_test, 200) if p.n_test else 0))
    assert sensitivity_plan(p, n_eval=0, n_fisher=None).n_eval == 0
    with pytest.raises(ValueError, match="unknown plan fields"):
        sensitivity_plan(p, bogus=1)
