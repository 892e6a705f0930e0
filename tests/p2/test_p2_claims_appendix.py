"""The P2 appendix claim functions on hand-made inputs, and the chapter's plan per profile."""

from __future__ import annotations

import pytest

from repro.p2 import claims_appendix as ca
from repro.p2.appendix_plan import appendix_plan
from repro.p2.arithmetic_plan import zoo_tasks
from repro.profiles import get_profile
from repro.report.results import Results

TASKS = ["A", "B"]


def scores(talos=(80.0, 80.0), llora=(79.0, 81.0), ft=81.0, lota=80.5):
    return {"TaLoS": dict(zip(TASKS, talos)), "L-LoRA": dict(zip(TASKS, llora)),
            "Non-linear FT": {t: ft for t in TASKS}, "Linearized FT": {t: 78.0 for t in TASKS},
            "LoTA": {t: lota for t in TASKS}}


def test_fig9_single_task():
    assert ca.fig9_single_task(Results("a", "smoke"), scores(), TASKS, 64)["verdict"] == "holds"
    assert ca.fig9_single_task(Results("a", "smoke"), scores(ft=85.0), TASKS, 64)["verdict"] == "does-not-hold"
    assert ca.fig9_single_task(Results("a", "smoke"), scores(llora=(90, 90)), TASKS, 64)["verdict"] == "does-not-hold"
    s = scores()
    del s["L-LoRA"]
    with pytest.raises(ValueError, match="L-LoRA"):
        ca.fig9_single_task(Results("a", "smoke"), s, TASKS, 64)


def point(single, abs_, target):
    return {"single": single, "abs": abs_, "target": target}


def test_fig8_sparsity():
    sweep = {0.0: point(0.85, 0.60, 0.5), 0.9: point(0.84, 0.70, 0.3), 0.99: point(0.80, 0.65, 0.4)}
    assert ca.fig8_sparsity(Results("a", "smoke"), sweep, TASKS)["verdict"] == "holds"
    sweep[0.99] = point(0.80, 0.75, 0.4)  # 0.99 adds better
    assert ca.fig8_sparsity(Results("a", "smoke"), sweep, TASKS)["verdict"] == "does-not-hold"
    assert ca.fig8_sparsity(Results("a", "smoke"), {0.0: sweep[0.0]}, TASKS)["verdict"] == "not-testable"


def test_beyond_paper_claims_are_tagged():
    g, ft = {"abs": 0.7, "norm": 0.9, "target": 0.3}, {"abs": 0.6, "norm": 0.8, "target": 0.4}
    c = ca.fig8_graft(Results("a", "smoke"), g, ft, None, 1e-4, 3)
    assert c["verdict"] == "holds" and c["beyond_paper"] is True
    c = ca.fig8_graft(Results("a", "smoke"), g, None, None, 1e-4, 3)
    assert c["verdict"] == "not-testable" and c["beyond_paper"] is True
    rows = [dict(a="TaLoS", b="FISH 10%", containment=0.05, containment_random=0.1),
            dict(a="P1 graft", b="TaLoS", containment=0.02, containment_random=0.1)]
    c = ca.fig4_iou(Results("a", "smoke"), rows, TASKS)
    assert c["verdict"] == "holds" and c["beyond_paper"] is True
    rows[1]["containment"] = 0.5
    assert ca.fig4_iou(Results("a", "smoke"), rows, TASKS)["verdict"] == "does-not-hold"


@pytest.mark.parametrize("name", ["smoke", "paper-smoke", "cpu", "paper"])
def test_plan_matches_the_former_notebook_defaults(name):
    profile = get_profile(name)
    plan = appendix_plan(profile)
    tasks = tuple(zoo_tasks(profile))  # the §5.1 zoo's tasks (cpu: 3 of 6)
    former = {"smoke": ((0.0, 0.9, 0.99), tasks[:2], 32, 2, 4), "cpu": ((0.0, 0.9, 0.99), tasks[:2], 64, 3, 1),
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
