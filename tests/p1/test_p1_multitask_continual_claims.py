"""P1 §5 plan and claim rules (repro.p1.multitask_continual.plan, repro.p1.multitask_continual.claims)."""

from __future__ import annotations

import numpy as np
import pytest

from repro.p1.multitask_continual import claims as cm
from repro.p1.multitask_continual.plan import MultitaskPlan, continual_recipe, mt_recipe, multitask_plan
from repro.profiles import get_profile
from repro.report.gates import learned
from repro.report.results import Results


def _res() -> Results:
    """Results of a run whose MT model learned every task (90 % against chance): the learning gate passes."""
    res = Results("t", "smoke")
    res.record_learning(*(learned(t, np.r_[np.ones(180), np.zeros(20)], model="MT")
                          for t in ("SST-2", "CR", "QNLI", "QQP", "MRPC")))
    return res


def test_plans_per_profile_and_overrides():
    smoke, cpu, paper = (multitask_plan(get_profile(p)) for p in ("smoke", "cpu", "paper"))
    assert smoke.mt_steps == 20 and cpu.mt_steps == 200 and paper.mt_steps is None and paper.adamw_mt
    # S9: the paper's multi-task / continual runs are 4096-shot per task (App. C.1, C.3), for the 8 tasks' summed
    # single-task budgets (16·n·512 each: 6 binary + 2 three-class + AG News ... = 163,840 steps)
    assert paper.k == 4096 and smoke.k is None and cpu.k is None
    assert mt_recipe(get_profile("paper"), paper).steps == 163_840
    assert paper.profile_for(get_profile("paper")).k_shot == 4096
    assert cpu.profile_for(get_profile("cpu")) is get_profile("cpu")  # cpu / smoke keep their k (same cache keys)
    splits = paper.splits(get_profile("paper"), ("QNLI", "AGNews", "SST-2", "MR"))
    assert len(splits) == 9 and {k for _, k in splits} == {4096} and splits[-1] == ("MR", 4096)
    assert set(cpu.group_map()) == {"sentiment", "NLI"} and len(paper.group_map()) == 5
    assert multitask_plan(get_profile("paper-smoke")) == smoke
    p = multitask_plan(get_profile("cpu"), mt_tasks=["SST-2", "CR"], n_eval=None)
    assert p.mt_tasks == ("SST-2", "CR") and p.n_eval == 200 and p.group_map() == {"sentiment": ["SST-2", "CR"]}
    with pytest.raises(ValueError, match="unknown plan fields"):
        MultitaskPlan().with_overrides(nope=1)
    assert mt_recipe(get_profile("cpu"), cpu).steps == 200
    assert continual_recipe(get_profile("cpu")).lr == 0.1
    assert continual_recipe(get_profile("smoke")) == get_profile("smoke").p1_finetune


def _rel_task(n: int, rels: dict, pre: float = 0.5, mt: float = 0.9) -> dict:
    """One task's per-example correctness: θ_pre at ``pre``, MT at ``mt`` and each region at the accuracy giving it
    the Eq. 5 Rel of ``rels[name]`` (nested correct sets, as ``_ok`` makes them)."""
    return {"pre": _ok(n, round(pre * n)), "MT": _ok(n, round(mt * n)),
            **{m: _ok(n, round((pre + r * (mt - pre)) * n)) for m, r in rels.items()}}


def _union(rel_a: float, rel_b: float, tuned: float | None, n: int = 1000) -> dict:
    extra = (lambda r: {} if tuned is None else {"tuned:g": tuned})
    return {"A": _rel_task(n, {"union:g": rel_a, **extra(tuned)}), "B": _rel_task(n, {"union:g": rel_b,
                                                                                       **extra(tuned)})}


def test_union_rule_needs_every_value_above_07_and_a_test_gain():
    groups = {"g": ["A", "B"]}
    r = cm.fig8_union(Results("t", "smoke"), _union(0.9, 0.9, 1.0), groups, 10)
    assert r["verdict"] == "holds" and r["evidence"]["n_examples"] == 2000 and r["evidence"]["ci_low"] > 0.05
    # a mean of 0.8 with one value at 0.6: the caption says all values > 0.7
    c = cm.fig8_union(Results("t", "smoke"), _union(1.0, 0.6, 1.0), groups, 10)
    _check(c, "does-not-hold", ">", 0.7)
    assert c["evidence"]["statistic"] == pytest.approx(0.6) and c["evidence"]["ci_high"] < 0.7
    # tuned == union on test: guaranteed by construction on train+dev, not evidence of the claim
    c = cm.fig8_union(Results("t", "smoke"), _union(0.9, 0.9, 0.9), groups, 10)
    _check(c, "does-not-hold", ">=", 0.05)
    assert c["evidence"]["statistic"] == pytest.approx(0.0)
    assert cm.fig8_union(Results("t", "smoke"), _union(0.9, 0.9, None), groups, 10)["verdict"] == "holds"
    assert cm.fig8_union(Results("t", "smoke"), {}, {}, 10)["verdict"] == "not-testable"


def _single(diag: float, off: float, n: int = 1000) -> dict:
    return {t: _rel_task(n, {f"single:{r}": diag if r == t else off for r in ("A", "B")}) for t in ("A", "B")}


def test_isolation_is_a_paired_ci_of_diagonal_minus_off_diagonal_rel():
    c = cm.fig8_isolation(Results("t", "smoke"), _single(0.9, 0.1), ["A", "B"])
    _check(c, "holds", ">", 0.2)
    assert c["evidence"]["statistic"] == pytest.approx(0.8) and c["evidence"]["n_examples"] == 2000
    c = cm.fig8_isolation(Results("t", "smoke"), _single(0.5, 0.5), ["A", "B"])
    _check(c, "does-not-hold", ">", 0.2)
    assert c["evidence"]["ci_high"] < 0.2


def test_disjoint_is_exact():
    ov = {"mean_offdiag": 0.05, "max_offdiag": 0.1, "mean_similar": 0.08, "mean_other": 0.02}
    c = cm.fig8_disjoint(_res(), ov, 4, tasks=["SST-2", "CR"])
    assert c["verdict"] == "holds" and c["evidence"]["n_examples"] == 12 and c["evidence"]["test"].startswith("exact")
    c = cm.fig8_disjoint(_res(), dict(ov, mean_offdiag=0.25), 4, tasks=["SST-2", "CR"])
    assert c["verdict"] == "does-not-hold" and c["evidence"]["statistic"] == c["evidence"]["ci_low"] == 0.25
    assert (c["evidence"]["op"], c["evidence"]["margin"]) == ("<", 0.2)
    c = cm.fig8_disjoint(_res(), dict(ov, mean_similar=0.01), 4, tasks=["SST-2", "CR"])
    assert c["verdict"] == "does-not-hold" and (c["evidence"]["op"], c["evidence"]["margin"]) == (">", 0.0)
    nan = float("nan")
    assert cm.fig8_disjoint(_res(), dict(ov, mean_similar=nan), 4, tasks=["SST-2", "CR"])["verdict"] == "holds"


def test_region_and_continual_rules():
    single = [{"region": a, "task": b, "rel": 1.0 if a == b else 0.1} for a in ("QNLI", "QQP") for b in ("QNLI", "QQP")]
    assert cm.fig8_asymmetry(_res(), single)["verdict"] == "does-not-hold"  # Rel(QNLI->QQP)=0.1
    assert cm.fig8_asymmetry(_res(), single[:1]) is None


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
    flat = {t: _rel_task(100, {"union:g": 0.5, "single:A": 0.5, "single:B": 0.5}, mt=0.5) for t in ("A", "B")}
    assert cm.fig8_union(Results("t", "smoke"), flat, {"g": ["A", "B"]}, 2)["verdict"] == "not-testable"
    assert cm.fig8_isolation(Results("t", "smoke"), flat, ["A", "B"])["verdict"] == "not-testable"


def _fake_workbench(labels, log):
    """A workbench whose θ_pre (overrides None) is always right and every other model always wrong; ``log`` gets
    ``(task, examples, overrides)`` of each predict call."""
    import torch

    from repro.core.evaluation import Predictions

    class Split:
        def split(self, name):
            return [f"{name}-{i}" for i in range(len(labels))]

    class FakeWb:
        def task(self, name):
            return Split()

        def overrides(self, vector, alpha=1.0, mask=None):
            return {"mask": mask}

        def predict(self, task, split, overrides, examples=None):
            log.append((task, list(examples), overrides))
            pred = labels if overrides is None else 1 - labels
            return Predictions(logits=torch.nn.functional.one_hot(pred, 2).float(), labels=labels)

    return FakeWb()


def test_paired_correct_scores_every_model_on_the_same_examples():
    import torch

    from repro.p1.multitask_continual.runs import paired_correct

    seen = []
    out = paired_correct(_fake_workbench(torch.tensor([0, 1, 1, 0, 1]), seen), "SST-2",
                         {"pre": None, "other": {"w": torch.zeros(1)}})
    assert list(out) == ["pre", "other"] and out["pre"].tolist() == [1] * 5 and out["other"].tolist() == [0] * 5
    assert seen[0][1] == seen[1][1] == [f"test-{i}" for i in range(5)]


def test_rel_correct_scores_pre_mt_and_each_region_on_its_tasks():
    import torch

    from repro.p1.multitask_continual.runs import rel_correct

    calls = []
    out = rel_correct(_fake_workbench(torch.tensor([0, 1, 1, 0]), calls), ["A", "B"], {},
                      {"single:A": "mA", "union:g": "mg"}, {"single:A": ["A", "B"], "union:g": ["B"]})
    assert set(out["A"]) == {"pre", "MT", "single:A"} and set(out["B"]) == {"pre", "MT", "single:A", "union:g"}
    assert out["A"]["pre"].tolist() == [1] * 4 and out["B"]["union:g"].tolist() == [0] * 4
    assert len(calls) == 2 + 2 + 2 + 1


def test_fig8_regions_keys_the_studys_regions_unions_and_tuned_unions():
    import torch

    from repro.core.masks import Mask
    from repro.p1.multitask_continual.runs import fig8_regions

    def mask(*on: int) -> Mask:
        m = torch.zeros(4, dtype=torch.bool)
        m[list(on)] = True
        return Mask({"w": m})

    study = {"regions": {"A": mask(0), "B": mask(1), "C": mask(2)}, "unions": {"g": mask(0, 1)},
             "tuned_regions": {"g": mask(3)}}
    masks, on = fig8_regions(study, {"g": ["A", "B"]})
    assert set(masks) == {"single:A", "single:B", "single:C", "union:g", "tuned:g"}
    assert masks["union:g"].count() == 2 and masks["tuned:g"] is study["tuned_regions"]["g"]
    assert on["union:g"] == on["tuned:g"] == ["A", "B"] and on["single:C"] == ["A", "B", "C"]
    masks, _ = fig8_regions({"regions": study["regions"]}, {"g": ["A", "B"]})
    assert set(masks) == {"single:A", "single:B", "single:C"}


def test_disjoint_regions_of_a_model_that_learned_nothing_are_not_testable():
    ov = {"mean_offdiag": 0.0, "max_offdiag": 0.0, "mean_similar": float("nan"), "mean_other": 0.0}
    c = cm.fig8_disjoint(Results("t", "smoke"), ov, 4, tasks=["SST-2"])  # no MT accuracy recorded
    assert c["verdict"] == "not-testable" and "learning gate" in c["note"] and c["data"][0]["task"] == "SST-2"
