"""The P2 appendix claim functions on hand-made inputs, and the chapter's plan per profile."""

from __future__ import annotations

import numpy as np
import pytest

from repro.p2.appendix import claims as ca
from repro.p2.appendix.plan import appendix_plan
from repro.p2.zoo import zoo_tasks
from repro.profiles import get_profile
from claims_fakes import learned_res as _learned_res


TASKS = ["A", "B"]


N = 400  # test examples per task


def correct(acc: float, n: int = N, shift: int = 0) -> list[int]:
    """``n`` per-example 0/1 scores with accuracy ``acc`` (the first ``round(acc·n)`` examples, rolled by ``shift``)."""
    k = int(round(acc * n))
    return list(np.roll([1] * k + [0] * (n - k), shift))


def single(talos=(0.80, 0.80), llora=(0.70, 0.70), ft=0.81, lota=0.80):
    """``single_task``-shaped results of the five Fig. 9 methods on TASKS."""
    accs = {"TaLoS": dict(zip(TASKS, talos)), "L-LoRA": dict(zip(TASKS, llora)), "Non-linear FT": dict.fromkeys(TASKS, ft),
            "Linearized FT": dict.fromkeys(TASKS, 0.78), "LoTA": dict.fromkeys(TASKS, lota)}
    return {m: {t: {"test": a, "test_correct": correct(a)} for t, a in by.items()} for m, by in accs.items()}


def test_fig9_single_task():
    c = ca.fig9_single_task(_learned_res("a"), single(), TASKS, N)
    ev = c["evidence"]
    assert c["verdict"] == "holds" and ev["n_examples"] == 2 * N and ev["seeds"] == 1
    assert "paired bootstrap" in ev["test"] and "deciding part" in c["note"]
    c = ca.fig9_single_task(_learned_res("a"), single(ft=0.95), TASKS, N)  # FT far above TaLoS
    assert c["verdict"] == "does-not-hold" and c["evidence"]["op"] == "<=" and c["evidence"]["margin"] == 2.0
    assert c["evidence"]["ci_low"] > 2.0
    c = ca.fig9_single_task(_learned_res("a"), single(llora=(0.95, 0.95)), TASKS, N)  # L-LoRA above everywhere
    assert c["verdict"] == "does-not-hold" and c["evidence"]["statistic"] == 0.0 and c["evidence"]["margin"] == 0.5
    s = single()
    del s["L-LoRA"]
    with pytest.raises(ValueError, match="L-LoRA"):
        ca.fig9_single_task(_learned_res("a"), s, TASKS, N)


def point(single_acc, abs_, target):
    """An ``arithmetic_summary``-shaped point: means and the per-example correctness behind them."""
    return {"single": single_acc, "abs": abs_, "target": target, "norm": abs_ / single_acc,
            "single_per_task": dict.fromkeys(TASKS, single_acc),
            "correct": {"single": {t: correct(single_acc) for t in TASKS}, "addition": {t: correct(abs_) for t in TASKS},
                        "target": {t: correct(target) for t in TASKS}}}


def test_fig8_sparsity():
    sweep = {0.0: point(0.85, 0.60, 0.5), 0.9: point(0.84, 0.70, 0.3), 0.99: point(0.80, 0.60, 0.4)}
    c = ca.fig8_sparsity(_learned_res("a"), sweep, TASKS)
    assert c["verdict"] == "holds" and c["evidence"]["n_examples"] == 2 * N and c["evidence"]["ci_low"] <= \
        c["evidence"]["statistic"] <= c["evidence"]["ci_high"]
    sweep[0.99] = point(0.80, 0.85, 0.4)  # 0.99 adds much better
    c = ca.fig8_sparsity(_learned_res("a"), sweep, TASKS)
    assert c["verdict"] == "does-not-hold" and c["evidence"]["op"] == ">=" and c["evidence"]["ci_high"] < 0
    assert "abs k=0.9 − k=0.99" in c["note"]
    assert ca.fig8_sparsity(_learned_res("a"), {0.0: sweep[0.0]}, TASKS)["verdict"] == "not-testable"
    del sweep[0.0]["correct"]
    with pytest.raises(KeyError, match="per-example"):
        ca.fig8_sparsity(_learned_res("a"), sweep, TASKS)


def test_fig8_graft_paired_normalized_gap():
    g, ft = point(0.80, 0.78, 0.3), point(0.90, 0.60, 0.4)  # normalized 0.975 vs 0.667
    c = ca.fig8_graft(_learned_res("a"), g, ft, None, 1e-4, 3)
    ev = c["evidence"]
    assert c["verdict"] == "holds" and c["beyond_paper"] is True and ev["op"] == ">" and ev["ci_low"] > 0
    assert ev["n_examples"] == 2 * N and abs(ev["statistic"] - 100 * (0.78 / 0.80 - 0.60 / 0.90)) < 1e-6
    c = ca.fig8_graft(_learned_res("a"), ft, g, None, 1e-4, 3)
    assert c["verdict"] == "does-not-hold" and c["evidence"]["ci_high"] < 0
    c = ca.fig8_graft(_learned_res("a"), g, None, None, 1e-4, 3)
    assert c["verdict"] == "not-testable" and c["beyond_paper"] is True


def test_fig4_iou_is_exact():
    rows = [dict(a="TaLoS", b="FISH 10%", containment=0.05, containment_random=0.1),
            dict(a="P1 graft", b="TaLoS", containment=0.02, containment_random=0.1)]
    c = ca.fig4_iou(_learned_res("a"), rows, TASKS)
    ev = c["evidence"]
    assert c["verdict"] == "holds" and c["beyond_paper"] is True
    assert ev["statistic"] == ev["ci_low"] == ev["ci_high"] == pytest.approx(-5.0) and ev["op"] == "<"
    assert ev["n_examples"] == 2 and "no sampling" in ev["test"]
    rows[1]["containment"] = 0.5
    c = ca.fig4_iou(_learned_res("a"), rows, TASKS)
    assert c["verdict"] == "does-not-hold" and c["evidence"]["statistic"] == pytest.approx(40.0)
    assert "P1 graft in TaLoS" in c["note"]


@pytest.mark.parametrize("name", ["smoke", "paper-smoke", "cpu", "paper"])
def test_plan_gives_each_profile_its_sizes(name):
    profile = get_profile(name)
    plan = appendix_plan(profile)
    tasks = tuple(zoo_tasks(profile))  # the §5.1 zoo's tasks (cpu: 3 of 6)
    former = {"smoke": ((0.0, 0.9, 0.99), tasks[:2], 32, 2, 4), "cpu": ((0.0, 0.9, 0.99), tasks[:2], 200, 3, 1),
              "paper": ((0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99), tasks, 0,
                        profile.graft.steps, 1)}[profile.plan]
    assert (plan.sparsities, plan.ablation_tasks, plan.n_test_ablation, plan.graft_steps, plan.alpha_stride) == former
    assert plan.graft_sparsity == max(profile.sparsities)
    assert plan.alphas([1, 2, 3, 4, 5]) == [1, 2, 3, 4, 5][:: plan.alpha_stride]


def test_plan_overrides_and_errors():
    profile = get_profile("cpu")
    plan = appendix_plan(profile, sparsities=[0, 0.5], n_test_ablation=0, ablation_tasks=["X"])
    assert plan.sparsities == (0.0, 0.5) and plan.n_test_ablation == 0 and plan.ablation_tasks == ("X",)
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        appendix_plan(profile, sparsities=[1.0])
    with pytest.raises(ValueError, match="unknown plan fields"):
        appendix_plan(profile, n_test=3)
