"""P1 §5 plan and claim rules (repro.p1.multitask_plan, repro.p1.claims_multitask)."""

from __future__ import annotations

import pytest

from repro.p1 import claims_multitask as cm
from repro.p1.multitask_plan import MultitaskPlan, continual_recipe, mt_recipe, multitask_plan
from repro.profiles import get_profile
from repro.report.results import Results


def test_plans_per_profile_and_overrides():
    smoke, cpu, paper = (multitask_plan(get_profile(p)) for p in ("smoke", "cpu", "paper"))
    assert smoke.mt_steps == 20 and cpu.mt_steps == 200 and paper.mt_steps == 8000 and paper.adamw_mt
    assert set(cpu.group_map()) == {"sentiment", "NLI"} and len(paper.group_map()) == 5
    assert multitask_plan(get_profile("paper-smoke")) == smoke
    p = multitask_plan(get_profile("cpu"), mt_tasks=["SST-2", "CR"], n_eval=None)
    assert p.mt_tasks == ("SST-2", "CR") and p.n_eval == 200 and p.group_map() == {"sentiment": ["SST-2", "CR"]}
    with pytest.raises(ValueError, match="unknown plan fields"):
        MultitaskPlan().with_overrides(nope=1)
    assert mt_recipe(get_profile("cpu"), cpu).steps == 200
    assert continual_recipe(get_profile("cpu")).lr == 0.1
    assert continual_recipe(get_profile("smoke")) == get_profile("smoke").p1_finetune


def _g(kind, mean_in, min_in, mean_out=0.1):
    return {"group": "g", "kind": kind, "tasks": "a+b", "mean_in": mean_in, "min_in": min_in, "mean_out": mean_out}


def test_union_rule_needs_every_value_above_07_and_a_test_gain():
    r = cm.fig8_union(Results("t", "smoke"), [_g("union", 0.8, 0.75)], [_g("tuned", 0.9, 0.85)], 10)
    assert r["verdict"] == "holds"
    # a mean of 0.8 with one value at 0.6: the caption says all values > 0.7
    assert cm.fig8_union(Results("t", "smoke"), [_g("union", 0.8, 0.6)], [_g("tuned", 0.9, 0.85)],
                         10)["verdict"] == "does-not-hold"
    # tuned == union on test: guaranteed by construction on train+dev, not evidence of the claim
    assert cm.fig8_union(Results("t", "smoke"), [_g("union", 0.8, 0.75)], [_g("tuned", 0.8, 0.75)],
                         10)["verdict"] == "does-not-hold"
    assert cm.fig8_union(Results("t", "smoke"), [], [], 10)["verdict"] == "not-testable"


def test_region_and_continual_rules():
    single = [{"region": a, "task": b, "rel": 1.0 if a == b else 0.1} for a in ("QNLI", "QQP") for b in ("QNLI", "QQP")]
    assert cm.fig8_isolation(Results("t", "smoke"), single)["verdict"] == "holds"
    assert cm.fig8_asymmetry(Results("t", "smoke"), single)["verdict"] == "does-not-hold"  # Rel(QNLI->QQP)=0.1
    assert cm.fig8_asymmetry(Results("t", "smoke"), single[:1]) is None
    ov = {"mean_offdiag": 0.05, "max_offdiag": 0.1, "mean_similar": 0.08, "mean_other": 0.02}
    assert cm.fig8_disjoint(Results("t", "smoke"), ov)["verdict"] == "holds"
    rows = [{"task": t, "method": m, "value": v} for t, m, v in
            (("QNLI", "FT", 88.0), ("QNLI", "ContinualFT", 67.5), ("QNLI", "GraftingContinual", 86.5),
             ("SST-2", "FT", 92.0), ("SST-2", "GraftingContinual", 92.5))]
    assert cm.table4_forgetting(Results("t", "smoke"), rows, ["QNLI", "SST-2"])["verdict"] == "holds"
    assert cm.table4_graft_continual(Results("t", "smoke"), rows, ["QNLI", "SST-2"])["verdict"] == "holds"
    assert cm.fig8_mt_accuracy(Results("t", "smoke"), [{"task": "QNLI", "mt": 80.0}]) is None


def test_undefined_rel_is_not_testable():
    nan = float("nan")
    assert cm.fig8_union(Results("t", "smoke"), [_g("union", nan, nan)], [], 2)["verdict"] == "not-testable"
    single = [{"region": "a", "task": "a", "rel": nan}, {"region": "a", "task": "b", "rel": nan}]
    assert cm.fig8_isolation(Results("t", "smoke"), single)["verdict"] == "not-testable"
