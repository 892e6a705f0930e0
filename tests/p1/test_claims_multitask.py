"""P1 §5 plan and claim rules (repro.p1.multitask_plan, repro.p1.claims_multitask)."""

from __future__ import annotations

import numpy as np
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


def _ok(n: int, k: int, start: int = 0) -> np.ndarray:
    """0/1 correctness on ``n`` examples: examples ``start`` .. ``start + k - 1`` correct (wrapping around)."""
    a = np.zeros(n, dtype=np.uint8)
    a[(start + np.arange(k)) % n] = 1
    return a


def _check(claim: dict, verdict: str, op: str, margin: float) -> None:
    ev = claim["evidence"]
    assert claim["verdict"] == verdict and ev["op"] == op and ev["margin"] == margin
    assert set(check := ("n_examples", "seeds", "statistic", "ci_low", "ci_high", "margin", "test")) <= set(ev), check
    assert ev["ci_low"] <= ev["statistic"] <= ev["ci_high"] and ev["seeds"] == 1


def test_mt_accuracy_needs_the_whole_ci_inside_plus_minus_3():
    close = {"SST-2": {"MT": _ok(500, 445), "FT": _ok(500, 450)}, "CR": {"MT": _ok(500, 400), "FT": _ok(500, 400)}}
    c = cm.fig8_mt_accuracy(Results("t", "smoke"), close)  # pooled: −0.5 points, CI well inside [−3, 3]
    _check(c, "holds", ">=", -3.0)  # the binding side of the two one-sided checks (MT is behind)
    assert c["evidence"]["n_examples"] == 1000 and c["evidence"]["statistic"] == pytest.approx(-0.5)
    far = {"SST-2": {"MT": _ok(500, 350), "FT": _ok(500, 450)}}  # −20 points: the CI lies below −3
    _check(cm.fig8_mt_accuracy(Results("t", "smoke"), far), "does-not-hold", ">=", -3.0)
    # equal accuracies, but on 20 examples where the two models disagree on 8: the CI straddles ±3
    noisy = {"SST-2": {"MT": _ok(20, 16), "FT": _ok(20, 16, start=4)}}
    c = cm.fig8_mt_accuracy(Results("t", "smoke"), noisy)
    assert c["verdict"] == "inconclusive" and c["evidence"]["ci_low"] < -3 < 3 < c["evidence"]["ci_high"]
    assert cm.fig8_mt_accuracy(Results("t", "smoke"), {}) is None
    assert cm.fig8_mt_accuracy(Results("t", "smoke"), {"QNLI": {"MT": _ok(10, 8)}}) is None


def _table4(n_q: int, naive: float, graft_q: float, n_new: int, graft_new: float) -> dict:
    """QNLI (FT 88 %) and SST-2 (FT 92 %) per-example correctness, the other models nested inside FT's."""
    q = {"FT": _ok(n_q, round(0.88 * n_q)), "ContinualFT": _ok(n_q, round(naive * n_q)),
         "GraftingContinual": _ok(n_q, round(graft_q * n_q))}
    s = {"FT": _ok(n_new, round(0.92 * n_new)), "ContinualFT": _ok(n_new, round(0.9 * n_new)),
         "GraftingContinual": _ok(n_new, round(graft_new * n_new))}
    return {"QNLI": q, "SST-2": s}


def test_table4_forgetting_is_a_paired_ci_above_10_points():
    seq = ["QNLI", "SST-2"]
    _check(cm.table4_forgetting(Results("t", "smoke"), _table4(400, 0.675, 0.865, 400, 0.925), seq),
           "holds", ">=", 10.0)  # 88.0 -> 67.5: +20.5 points, CI above 10
    _check(cm.table4_forgetting(Results("t", "smoke"), _table4(400, 0.85, 0.865, 400, 0.925), seq),
           "does-not-hold", ">=", 10.0)  # 3 points lost, CI below 10
    _check(cm.table4_forgetting(Results("t", "smoke"), _table4(50, 0.78, 0.86, 50, 0.92), seq),
           "inconclusive", ">=", 10.0)  # 10 points on 50 examples: the CI straddles 10


def test_table4_graft_continual_needs_every_part():
    seq = ["QNLI", "SST-2"]
    c = cm.table4_graft_continual(Results("t", "smoke"), _table4(800, 0.675, 0.87, 800, 0.925), seq)
    assert c["verdict"] == "holds" and c["evidence"]["n_examples"] == 800
    # the newer task loses 20 points: that part does not hold, and it decides
    c = cm.table4_graft_continual(Results("t", "smoke"), _table4(800, 0.675, 0.87, 800, 0.72), seq)
    _check(c, "does-not-hold", "<=", 5.0)
    assert "SST-2" in c["note"]
    # no better than naive on the first task
    _check(cm.table4_graft_continual(Results("t", "smoke"), _table4(800, 0.85, 0.865, 800, 0.925), seq),
           "does-not-hold", ">=", 5.0)
    # the newer task 5 points below FT on 40 examples: the CI straddles 5, the rest holds
    _check(cm.table4_graft_continual(Results("t", "smoke"), _table4(800, 0.675, 0.87, 40, 0.87), seq),
           "inconclusive", "<=", 5.0)


def test_undefined_rel_is_not_testable():
    nan = float("nan")
    assert cm.fig8_union(Results("t", "smoke"), [_g("union", nan, nan)], [], 2)["verdict"] == "not-testable"
    single = [{"region": "a", "task": "a", "rel": nan}, {"region": "a", "task": "b", "rel": nan}]
    assert cm.fig8_isolation(Results("t", "smoke"), single)["verdict"] == "not-testable"


def test_paired_correct_scores_every_model_on_the_same_examples():
    import torch

    from repro.core.evaluation import Predictions
    from repro.p1.multitask_runs import paired_correct

    labels = torch.tensor([0, 1, 1, 0, 1])
    seen = []

    class Split:
        def split(self, name):
            return [f"{name}-{i}" for i in range(len(labels))]

    class FakeWb:
        def task(self, name):
            return Split()

        def predict(self, task, split, overrides, examples=None):
            seen.append(list(examples))
            pred = labels if overrides is None else 1 - labels  # "pre" always right, the other always wrong
            return Predictions(logits=torch.nn.functional.one_hot(pred, 2).float(), labels=labels)

    out = paired_correct(FakeWb(), "SST-2", {"pre": None, "other": {"w": torch.zeros(1)}})
    assert list(out) == ["pre", "other"] and out["pre"].tolist() == [1] * 5 and out["other"].tolist() == [0] * 5
    assert seen[0] == seen[1] == [f"test-{i}" for i in range(5)]
