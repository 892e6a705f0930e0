"""The P2 §5.2 claim functions on hand-made rows, and the chapter's plan per profile."""

from __future__ import annotations

import numpy as np
import pytest

from repro.p2.disentanglement import claims as cd
from repro.p2.disentanglement.plan import default_pairs, disentanglement_plan
from repro.p2.linear_regime import snapshot_steps
from repro.p2.methods import p2_recipe
from repro.p2.zoo import zoo_tasks
from repro.profiles import get_profile
from repro.report.results import Results
from claims_fakes import learned_res as _learned_res


TEXT, VIT = "sentence-transformers/all-MiniLM-L6-v2", "openai/clip-vit-base-patch32"


def xi_rows(**xi):
    names = {"ft": "Non-linear FT", "lin": "Linearized FT", "llora": "L-LoRA", "lota": "LoTA", "talos": "TaLoS"}
    return [dict(task="A + B", method=names[k], metric="disentanglement_error", value=v) for k, v in xi.items()]


GOOD = dict(ft=0.9, lin=0.3, llora=0.4, lota=0.7, talos=0.2)


def test_fig2_vision_holds_on_vit_and_is_not_testable_on_text():
    c = cd.fig2_vision(_learned_res("p2_disentanglement"), xi_rows(**GOOD), VIT, "3x3 grid")
    assert c["verdict"] == "holds"
    c = cd.fig2_vision(_learned_res("p2_disentanglement"), xi_rows(**GOOD), TEXT, "3x3 grid")
    assert c["verdict"] == "not-testable" and "vision claim" in c["note"]


def test_fig2_vision_fails_when_a_linearized_method_is_above_ft():
    c = cd.fig2_vision(_learned_res("p2_disentanglement"), xi_rows(**dict(GOOD, llora=1.0)), VIT, "g")
    assert c["verdict"] == "does-not-hold"


N = 300  # test examples per task


def shares(mean: float, n: int = N) -> list[float]:
    """Per-example shares of disagreeing grid points with the given mean (0 or 1 each)."""
    k = int(round(mean * n))
    return [1.0] * k + [0.0] * (n - k)


def disagreement(**xi):
    """``fig2_tables``-shaped per-example disagreement: each task of the pair A + B contributes ξ / 2."""
    names = {"ft": "Non-linear FT", "lin": "Linearized FT", "llora": "L-LoRA", "lota": "LoTA", "talos": "TaLoS"}
    return {names[k]: {"A + B": (shares(v / 2), shares(v / 2))} for k, v in xi.items()}


def test_fig2_fails_loudly_without_the_linearized_methods():
    rows = [r for r in xi_rows(**GOOD) if r["method"] not in ("Linearized FT", "L-LoRA")]
    with pytest.raises(ValueError, match="Linearized FT"):
        cd.fig2_vision(_learned_res("p2_disentanglement"), rows, VIT, "g")
    with pytest.raises(ValueError, match="L-LoRA"):
        cd.fig2_language(_learned_res("p2_disentanglement"), rows, disagreement(**GOOD), TEXT, "g")


def test_fig2_language_order_and_gate():
    c = cd.fig2_language(_learned_res("p2_disentanglement"), xi_rows(**GOOD), disagreement(**GOOD), TEXT, "g")
    ev = c["evidence"]
    assert c["verdict"] == "holds" and ev["n_examples"] == 2 * N and ev["op"] == "<" and ev["ci_high"] < 0
    assert ev["statistic"] in (pytest.approx(0.7 - 0.9), pytest.approx(0.2 - 0.7)) and "deciding part" in c["note"]
    bad = dict(GOOD, talos=0.8)  # TaLoS above LoTA
    c = cd.fig2_language(_learned_res("p2_disentanglement"), xi_rows(**bad), disagreement(**bad), TEXT, "g")
    assert c["verdict"] == "does-not-hold" and c["evidence"]["statistic"] == pytest.approx(0.1)
    assert c["evidence"]["ci_low"] > 0 and "TaLoS − LoTA" in c["note"]
    c = cd.fig2_language(Results("x", "smoke"), xi_rows(**GOOD), disagreement(**GOOD), VIT, "g")
    assert c["verdict"] == "not-testable" and c["evidence"] is None


def fig3_rows(off_talos, diag_talos):
    rows = []
    for m in cd.LABELS.values():
        rows += [dict(method=m, metric="diagonal_ratio", value=diag_talos if m == "TaLoS" else 1.2),
                 dict(method=m, metric="off_diagonal_abs_dev", value=off_talos if m == "TaLoS" else 0.1)]
    return rows


def test_fig3_localization_rule_and_vision_gate():
    assert cd.fig3_localization(_learned_res("a"), fig3_rows(0.01, 1.1), VIT, "s")["verdict"] == "holds"
    assert cd.fig3_localization(_learned_res("a"), fig3_rows(0.2, 1.1), VIT, "s")["verdict"] == "does-not-hold"
    assert cd.fig3_localization(_learned_res("a"), fig3_rows(0.01, 0.9), VIT, "s")["verdict"] == "does-not-hold"
    assert cd.fig3_localization(_learned_res("a"), fig3_rows(0.01, 1.1), TEXT, "s")["verdict"] == "not-testable"


def lin_rows(talos_gaps, lota_gap=5.0):
    rows = [dict(method="TaLoS", task=f"t{i}", value=g, by_construction=False) for i, g in enumerate(talos_gaps)]
    rows += [dict(method=m, task="t0", value=lota_gap, by_construction=False) for m in ("LoTA", "Non-linear FT")]
    rows += [dict(method="L-LoRA", task="t0", value=0.0, by_construction=True)]  # by construction: ignored
    return rows


def lin_correct(talos_flips, other_flips=40, n=400):
    """``fig6_tables``-shaped correctness on 3 tasks: the linearization flips ``flips`` correct examples to wrong."""
    def pair(flips):
        ft = [1] * 300 + [0] * (n - 300)
        return {"ft": ft, "lin": [0] * flips + ft[flips:]}
    return {m: {f"t{i}": pair(f) for i, f in enumerate(flips)} for m, flips in
            (("TaLoS", talos_flips), ("Non-linear FT", [other_flips] * 3), ("LoTA", [other_flips] * 3))}


def test_fig6_linear():
    c = cd.fig6_linear(_learned_res("a"), lin_rows([0.5, -0.5, 0.5]), lin_correct([2, 2, 2]), VIT)
    ev = c["evidence"]
    assert c["verdict"] == "holds" and ev["n_examples"] == 1200 and "paired bootstrap" in ev["test"]
    c = cd.fig6_linear(_learned_res("a"), lin_rows([10, 10, 10]), lin_correct([40, 40, 40], 2), VIT)
    ev = c["evidence"]
    assert c["verdict"] == "does-not-hold" and ev["op"] in ("<=", ">") and "deciding part" in c["note"]
    assert (ev["ci_low"] > ev["margin"]) if ev["op"] == "<=" else (ev["ci_high"] <= ev["margin"])
    c = cd.fig6_linear(_learned_res("a"), lin_rows([0.5]), lin_correct([2, 2, 2]), TEXT)
    assert c["verdict"] == "not-testable" and c["evidence"] is None
    with pytest.raises(ValueError, match="LoTA"):
        cd.fig6_linear(_learned_res("a"), lin_rows([0.5]), {"TaLoS": {}, "Non-linear FT": {}}, VIT)


def test_fig7_gradient():
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.02, 12)
    per = {"Non-linear FT": 1.0 + noise, "LoTA": 0.8 + noise, "TaLoS": 0.1 + noise, "Linearized FT": np.zeros(12)}
    c = cd.fig7_gradient(_learned_res("a"), per, "SST-2", 12, 30, 40)
    assert c["verdict"] == "holds" and "first 30 steps" in c["note"]
    ev = c["evidence"]
    assert (ev["n_examples"], ev["seeds"], ev["op"], ev["margin"]) == (12, 1, "<", 0.0)
    assert ev["ci_high"] < 0 and ev["statistic"] == pytest.approx(0.1 - 0.4, abs=0.02)  # vs LoTA decides
    c = cd.fig7_gradient(_learned_res("a"), dict(per, TaLoS=0.5 + noise), "SST-2", 12, 40, 40)
    assert c["verdict"] == "does-not-hold" and c["evidence"]["ci_low"] > 0
    wide = dict(per, TaLoS=0.4 + rng.normal(0, 0.5, 12))  # mean near half of LoTA's, very noisy
    assert cd.fig7_gradient(_learned_res("a"), wide, "SST-2", 12, 40, 40)["verdict"] == "inconclusive"
    with pytest.raises(ValueError, match="same examples"):
        cd.fig7_gradient(_learned_res("a"), dict(per, TaLoS=np.zeros(5)), "SST-2", 12, 40, 40)


@pytest.mark.parametrize("name", ["smoke", "paper-smoke", "cpu", "paper"])
def test_plan_gives_each_profile_its_sizes(name):
    profile = get_profile(name)
    plan = disentanglement_plan(profile)
    tasks = zoo_tasks(profile)  # the §5.1 zoo's tasks (cpu: 3 of 6)
    former = {"smoke": (3, 8, 16, (1, 2, 5), 4), "cpu": (5, 24, 200, (1, 3, 10, 30), 12),
              "paper": (20, 2048, 0, tuple(snapshot_steps(p2_recipe(profile).steps, 8)), 256)}[profile.plan]
    assert (plan.grid_points, plan.n_grid, plan.n_eval, plan.drift_steps, plan.drift_examples) == former
    assert plan.drift_task == tasks[0] and plan.pairs == default_pairs(tasks)
    assert len(plan.grid) == plan.grid_points and plan.grid[0] == -3.0 and plan.grid[-1] == 3.0


def test_plan_overrides_and_errors():
    profile = get_profile("smoke")
    plan = disentanglement_plan(profile, pairs=[["A", "B"]], n_eval=0, drift_steps=[1, 4], grid_points=None)
    assert plan.pairs == (("A", "B"),) and plan.n_eval == 0 and plan.drift_steps == (1, 4) and plan.grid_points == 3
    with pytest.raises(ValueError, match="two tasks"):
        disentanglement_plan(profile, pairs=[["A"]])
    with pytest.raises(ValueError, match="unknown plan fields"):
        disentanglement_plan(profile, grid=3)
    assert default_pairs(["a", "b", "c"]) == (("a", "b"), ("b", "c"))


def test_disentanglement_claims_need_a_recorded_learning_check():
    c = cd.fig2_vision(Results("p2_disentanglement", "smoke"), xi_rows(**GOOD), VIT, "3x3 grid")
    assert c["verdict"] == "not-testable" and "learning gate" in c["note"]


def test_row_tasks_split_a_pair_row_into_its_two_tasks():
    rows = [{"pair": "SST-2 + TREC", "method": "TaLoS"}, {"task": "TREC + QNLI"}, {"task": "SST-2"}]
    assert cd.row_tasks(rows) == ["SST-2", "TREC", "QNLI"]
