"""Claim rules of P2 Figs. 1, 10, 11 (repro.p2.sensitivity.claims) on hand-made ratio tables, and the plan."""

import numpy as np
import pandas as pd
import pytest

from repro.p2.sensitivity import claims
from repro.p2.sensitivity.runs import RANDOM_SOURCE
from repro.p2.sensitivity.plan import sensitivity_plan
from repro.p2.sensitivity.views import PRETRAINED
from repro.profiles import get_profile
from repro.report.gates import learned
from repro.report.results import Results


def _res() -> Results:
    """Results whose pre-trained model beats chance (80 % vs 50 %) on the hand-made tasks A-D: the gate passes."""
    res = Results("p2_sensitivity", "smoke", params={})
    res.record_learning(*(learned(t, (np.arange(1000) % 5 != 0).astype(float), chance=0.5, model="zero-shot")
                          for t in "ABCD"))
    return res


def test_a_pretrained_model_at_chance_keeps_nothing_worth_keeping():
    df, ex = _edits(1000, 0, 0)  # the edits change nothing: every ratio is exactly 1
    ex = {k: {t: v * 0 + (np.arange(1000) % 2) for t, v in d.items()} for k, d in ex.items()}  # 50 %: chance
    res = Results("p2_sensitivity", "smoke", params={})
    res.record_learning(*(learned(t, ex[PRETRAINED][t], chance=0.5, model="zero-shot") for t in "AB"))
    c = claims.fig1_pruning(res, df, ex, "m", 2, 1000)
    assert c["verdict"] == "not-testable" and "learning gate" in c["note"] and "A: zero-shot − chance" in c["note"]


def _flip(x: np.ndarray, k: int) -> np.ndarray:
    """``x`` with its first ``k`` right examples made wrong (an edit that breaks k examples, fixes none)."""
    y = x.copy()
    y[np.flatnonzero(y == 1)[:k]] = 0
    return y


def _edits(n: int, diag: int, off: int, noise: int = 0, tasks: str = "AB") -> tuple[pd.DataFrame, dict]:
    """Hand-made Figs. 1 / 10 inputs: the pre-trained model right on 80 % of n examples per task; the model with
    task s's mask loses ``diag`` examples on s and ``off`` on the other tasks (``noise``: also swaps examples); a
    random mask loses half.  Returns (the ratio rows, the per-example correctness)."""
    pre = {t: (np.arange(n) % 5 != 0).astype(float) for t in tasks}
    correct = {PRETRAINED: pre}
    for s in [*tasks, RANDOM_SOURCE]:
        lost = {t: n * 2 // 5 if s == RANDOM_SOURCE else diag if s == t else off for t in tasks}
        correct[s] = {t: np.roll(_flip(pre[t], lost[t]), noise) for t in tasks}
    rows = [{"source": s, "task": t, "ratio": correct[s][t].mean() / pre[t].mean()}
            for s in [*tasks, RANDOM_SOURCE] for t in tasks]
    return pd.DataFrame(rows), correct


def test_pruning_and_perturb_rules():
    # 1000 examples per task, edits lose ≤ 0.5 % of them: every CI (paired) lies above its threshold
    c = claims.fig1_pruning(_res(), *_edits(1000, 2, 4), "m", 2, 1000)
    assert c["verdict"] == "holds" and c["evidence"]["n_examples"] == 2000 and "every pair" in c["note"]
    # one mask loses 20 % of another task: that pair's ratio CI lies below 0.90
    df, ex = _edits(1000, 0, 0)
    ex["A"]["B"] = _flip(ex[PRETRAINED]["B"], 200)
    c = claims.fig1_pruning(_res(), df, ex, "m", 2, 1000)
    assert c["verdict"] == "does-not-hold" and c["evidence"]["ci_high"] < claims.KEPT_MIN
    assert claims.fig10_perturb(_res(), *_edits(1000, 3, 3))["verdict"] == "holds"
    assert claims.fig10_perturb(_res(), *_edits(1000, 60, 60))["verdict"] == "does-not-hold"  # ratio 0.925 < 0.97
    # 60 examples per task, 2 lost and examples swapped around: ratio ≈ 0.96, CIs straddle the thresholds
    assert claims.fig10_perturb(_res(), *_edits(60, 2, 2, noise=7))["verdict"] == "inconclusive"


def test_kept_parts_test_the_mean_and_every_pair():
    df, ex = _edits(500, 0, 10)
    parts = claims.kept_parts(ex, ["A", "B"], ["A", "B"])
    assert set(parts) == {"mean ratio", "A → A", "A → B", "B → A", "B → B"}
    ev = parts["mean ratio"][1]
    assert ev.statistic == pytest.approx(df[df.source != RANDOM_SOURCE].ratio.mean()) and ev.margin == claims.KEPT_MEAN
    assert parts["A → B"][1].statistic == pytest.approx(390 / 400) and parts["A → A"][1].statistic == 1.0


def test_shared_rule_compares_off_diagonal_with_diagonal():
    assert claims.fig1_shared(_res(), *_edits(1000, 2, 4))["verdict"] == "holds"
    # another task's mask loses 6 points more than the own one: off − diagonal CI lies below −0.02
    c = claims.fig1_shared(_res(), *_edits(1000, 0, 50))
    assert c["verdict"] == "does-not-hold" and "off − diagonal" in c["ours"]
    assert claims.fig1_shared(_res(), *_edits(50, 0, 1, noise=3))["verdict"] == "inconclusive"


def _iou(off: dict[tuple[str, str], float]) -> pd.DataFrame:
    """A long-form IoU table (a, b, iou) of the tasks in ``off`` (unordered pairs → IoU; 1 on the diagonal)."""
    tasks = list(dict.fromkeys(t for pair in off for t in pair))
    sym = {**off, **{(b, a): v for (a, b), v in off.items()}}
    return pd.DataFrame([{"a": a, "b": b, "iou": 1.0 if a == b else sym[(a, b)]} for a in tasks for b in tasks])


def test_overlap_is_bootstrapped_over_tasks():
    iou = _iou({("A", "B"): 0.40, ("A", "C"): 0.50, ("B", "C"): 0.45, ("A", "D"): 0.35, ("B", "D"): 0.42,
                ("C", "D"): 0.38})
    c = claims.fig11_overlap(_res(), iou, 0.05)
    ev = c["evidence"]
    assert c["verdict"] == "holds" and ev["statistic"] == pytest.approx(2.5 / 6) and ev["n_examples"] == 4
    assert ev["margin"] == 0.3 and ev["op"] == ">=" and 0.349 <= ev["ci_low"] <= ev["ci_high"] <= 0.501
    assert "bootstrap over the 4 tasks" in ev["test"] and "6 pairs" in c["note"] and "chance 0.050" in c["ours"]
    low = iou.assign(iou=np.where(iou.a == iou.b, 1.0, iou.iou - 0.3))
    c = claims.fig11_overlap(_res(), low, 0.05)
    assert c["verdict"] == "does-not-hold" and c["evidence"]["ci_high"] < 0.3
    # one task far from the others: the CI over tasks straddles 0.3
    mixed = _iou({("A", "B"): 0.45, ("A", "C"): 0.45, ("B", "C"): 0.45, ("A", "D"): 0.05, ("B", "D"): 0.05,
                  ("C", "D"): 0.05})
    assert claims.fig11_overlap(_res(), mixed, 0.05)["verdict"] == "inconclusive"


def test_overlap_rules_and_gates():
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
