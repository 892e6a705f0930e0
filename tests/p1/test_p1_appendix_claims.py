"""Claim rules of the P1 appendix (repro.p1.appendix.claims) on hand-made inputs, and its plan object."""

import numpy as np
import pytest

from repro.p1.appendix import claims
from repro.p1.appendix.plan import AppendixPlan, appendix_plan
from repro.profiles import get_profile
from repro.report.gates import learned
from repro.report.results import Results


def _res() -> Results:
    res = Results("p1_appendix", "smoke", params={})
    res.record_learning(*(learned(t, np.r_[np.ones(180), np.zeros(20)]) for t in ("SST-2", "QNLI", "AGNews")))
    return res  # FT learned every task (90 %): the learning gate passes


def _run(ft_acc: float, graft_acc: float, ft_conf: float = 0.95, graft_conf: float | None = None,
         n: int = 400) -> tuple[dict, dict]:
    """Table 5 inputs for one task: (ft_and_graft-like run, per-example conf/correct), the graft flipping some of
    FT's correct examples; the confidences are constant, so ECE = |conf − accuracy|."""
    rng = np.random.default_rng(0)
    ft = (rng.random(n) < ft_acc).astype(np.uint8)
    graft = ft.copy()
    graft[np.flatnonzero(ft)[: int(round((ft_acc - graft_acc) * n))]] = 0
    graft_conf = graft_acc if graft_conf is None else graft_conf
    run = {"correct": {"ft": ft, "graft": graft}, "graft": {"count": 10}}
    scores = {"ft": {"conf": np.full(n, ft_conf), "correct": ft}, "graft": {"conf": np.full(n, graft_conf),
                                                                           "correct": graft}}
    return run, scores


def _table5(**kw) -> dict:
    run, scores = _run(**kw)
    return claims.table5_recovery(_res(), {"SST-2": run}, {"SST-2": scores}, 512, (3e-4,), 3)


def test_table5_recovery_holds_when_graft_matches_ft_and_is_calibrated():
    c = _table5(ft_acc=0.8, graft_acc=0.8)
    assert c["verdict"] == "holds" and "ECE graft − FT" in c["ours"]
    ev = c["evidence"]
    assert ev["n_examples"] == 400 and ev["seeds"] == 1 and ev["op"] in (">=", "<")
    assert ev["ci_high"] < 0 if ev["op"] == "<" else ev["ci_low"] >= 0.95


def test_table5_recovery_fails_on_calibration_or_accuracy():
    c = _table5(ft_acc=0.8, graft_acc=0.8, ft_conf=0.8, graft_conf=0.95)  # graft over-confident: ECE 15 points worse
    assert c["verdict"] == "does-not-hold" and c["evidence"]["op"] == "<" and c["evidence"]["ci_low"] > 0
    c = _table5(ft_acc=0.9, graft_acc=0.5)
    assert c["verdict"] == "does-not-hold"
    assert c["evidence"]["op"] == ">=" and c["evidence"]["margin"] == 0.95 and c["evidence"]["ci_high"] < 0.95


@pytest.mark.parametrize("sizes, expected", [({64: 100, 512: 200}, "holds"), ({64: 100, 512: 900}, "does-not-hold"),
                                             ({64: 100, 512: 600}, "does-not-hold")])
def test_table5_size_compares_region_growth_with_data_growth(sizes, expected):
    c = claims.table5_size(_res(), {"SST-2": sizes}, 3e-4)
    assert c["verdict"] == expected and "×8" in c["ours"]
    ev = c["evidence"]
    ratio = sizes[512] / sizes[64] / 8
    assert ev["statistic"] == ev["ci_low"] == ev["ci_high"] == pytest.approx(ratio)
    assert (ev["op"], ev["margin"], ev["n_examples"]) == ("<=", 0.5, 2) and ev["test"].startswith("exact")


def test_table5_size_needs_two_data_sizes():
    assert claims.table5_size(_res(), {"SST-2": {64: 100}}, 3e-4)["verdict"] == "not-testable"


def test_table8_overlap_states_counts():
    rows = [{"task": "SST-2", "target": 1e-3, "overlap": 0.05, "count": 17, "fish_count": 17.0}]
    c = claims.table8_overlap(_res(), rows, 64, 3)
    assert c["verdict"] == "holds" and "17 vs 17 parameters" in c["ours"]
    assert (c["evidence"]["statistic"], c["evidence"]["op"], c["evidence"]["margin"]) == (0.05, "<", 0.10)
    rows.append(dict(rows[0], target=1e-2, overlap=0.2))
    c = claims.table8_overlap(_res(), rows, 64, 3)
    assert c["verdict"] == "does-not-hold"
    assert c["evidence"]["ci_low"] == c["evidence"]["ci_high"] == 0.2 and c["evidence"]["n_examples"] == 2


def _pair(learned: float, fish: float, n: int = 500) -> dict:
    rng = np.random.default_rng(1)
    base = rng.random(n)
    return {"Graft": (base < learned).astype(np.uint8), "Graft with FISH mask": (base < fish).astype(np.uint8)}


def test_table8_graft_at_equal_size():
    correct = {"SST-2": {1e-4: _pair(0.8, 0.6), 1e-2: _pair(0.8, 0.78)}}
    counts = {("SST-2", 1e-4): 17, ("SST-2", 1e-2): 1700}
    c = claims.table8_graft(_res(), correct, counts)
    assert c["verdict"] == "holds" and "1700" in c["note"] and c["evidence"]["n_examples"] == 500
    assert c["evidence"]["ci_low"] > 2 or c["evidence"]["ci_high"] < 0
    no_shrink = {"SST-2": {1e-4: _pair(0.8, 0.6), 1e-2: _pair(0.9, 0.6)}}
    c = claims.table8_graft(_res(), no_shrink, counts)
    assert c["verdict"] == "does-not-hold"
    assert (c["evidence"]["op"], c["evidence"]["margin"]) == ("<", 0.0) and c["evidence"]["ci_low"] > 0
    equal = {"SST-2": {1e-4: _pair(0.7, 0.7), 1e-2: _pair(0.7, 0.7)}}
    c = claims.table8_graft(_res(), equal, counts)
    assert c["verdict"] == "does-not-hold" and (c["evidence"]["op"], c["evidence"]["margin"]) == (">", 2.0)
    assert c["evidence"]["statistic"] == c["evidence"]["ci_high"] == 0.0


def _summary(ft_after: float, graft_after: float, graft_to_ckpt: float = 0.2) -> list[dict]:
    return [{"model": "FT", "target_sparsity": None, "start": 0.5, "at_checkpoint": 0.7, "end": 0.7 + ft_after,
             "gain_after_checkpoint": ft_after},
            {"model": "graft", "target_sparsity": 1e-3, "start": 0.5, "at_checkpoint": 0.5 + graft_to_ckpt,
             "end": 0.5 + graft_to_ckpt + graft_after, "gain_after_checkpoint": graft_after}]


def test_fig15_rule():
    held = claims.fig15_core_skills(_res(), _summary(0.1, 0.01), 50, 100, 10_000)
    assert held["verdict"] == "holds" and held["evidence"]["n_examples"] == 10_000
    assert held["evidence"]["ci_low"] < held["evidence"]["statistic"] < held["evidence"]["ci_high"]
    assert "normal approximation" in held["evidence"]["test"]
    failed = claims.fig15_core_skills(_res(), _summary(0.1, 0.2), 50, 100, 10_000)
    assert failed["verdict"] == "does-not-hold" and failed["evidence"]["op"] == "<"
    assert failed["evidence"]["statistic"] == pytest.approx(10.0)  # graft gains 20 points after, FT 10
    assert claims.fig15_core_skills(_res(), _summary(0.1, 0.01), 50, 100, 50)["verdict"] == "inconclusive"
    assert claims.fig15_core_skills(_res(), _summary(0.0, 0.0), 50, 100, 200)["verdict"] == "not-testable"
    assert claims.fig15_core_skills(_res(), _summary(0.1, 0.0), 100, 100, 200)["verdict"] == "not-testable"


def _thirds(task: str, first: float, middle: float, last: float) -> dict:
    return {"task": task, "target_sparsity": 1e-3, "first_share": first, "middle_share": middle, "last_share": last,
            "middle_layers": "4-7"}


def test_fig9_most_regions_have_the_middle_third_largest_ag_news_excepted():
    thirds = [_thirds("SST-2", 0.2, 0.6, 0.2), _thirds("QNLI", 0.3, 0.4, 0.3), _thirds("AGNews", 0.6, 0.2, 0.2)]
    c = claims.fig9_layers(_res(), thirds, "m", 12)
    assert c["verdict"] == "holds"
    assert (c["evidence"]["statistic"], c["evidence"]["op"], c["evidence"]["margin"]) == (1.0, ">", 0.5)
    assert c["evidence"]["n_examples"] == 2 and c["evidence"]["ci_low"] == c["evidence"]["ci_high"]
    c = claims.fig9_layers(_res(), thirds[:1] + [_thirds("QNLI", 0.2, 0.3, 0.5)], "m", 12)  # 1 of 2: not "most"
    assert c["verdict"] == "does-not-hold" and c["evidence"]["statistic"] == 0.5
    assert claims.fig9_layers(_res(), thirds[2:], "m", 12)["verdict"] == "not-testable"


def test_fig10_most_of_every_region_in_v_ffn_in_layernorm():
    c = claims.fig10_modules(_res(), {("SST-2", 1e-3): {"V": 0.2, "FFN-in": 0.3, "LayerNorm": 0.1, "O": 0.4},
                                      ("QNLI", 1e-3): {"V": 0.5, "FFN-in": 0.4, "K": 0.1}})
    assert c["verdict"] == "holds" and c["evidence"]["n_examples"] == 2
    assert c["evidence"]["statistic"] == pytest.approx(0.6) and (c["evidence"]["op"], c["evidence"]["margin"]) \
        == (">", 0.5)
    c = claims.fig10_modules(_res(), {("SST-2", 1e-3): {"V": 0.1, "FFN-in": 0.4, "K": 0.5}})
    assert c["verdict"] == "does-not-hold" and c["evidence"]["ci_high"] == pytest.approx(0.5)


def test_table9_not_testable_without_gpt2():
    assert claims.table9_gpt2(_res(), None, 4)["verdict"] == "not-testable"
    assert claims.table9_gpt2(_res(), {"SST-2": 0.97})["verdict"] == "holds"


@pytest.mark.parametrize("name, checkpoint", [("smoke", 10), ("paper-smoke", 10), ("cpu", 50), ("paper", 1000)])
def test_plan_fig15_checkpoint_is_intermediate(name, checkpoint):
    profile = get_profile(name)
    plan = appendix_plan(profile)
    steps = profile.p1_recipe([2]).steps  # the paper: its A.2 budget, 2,048 steps for binary SST-2 at 64-shot
    assert plan.checkpoint(steps) == checkpoint < steps


def test_plan_profiles_and_overrides():
    cpu = appendix_plan(get_profile("cpu"))
    assert cpu.fish_tasks == ("SST-2",) and cpu.large_steps is None and cpu.n_eval == 200
    assert cpu.large_k == get_profile("cpu").k_shot_large and cpu.fish_k == get_profile("cpu").k_shot
    smoke = appendix_plan(get_profile("smoke"), fish_tasks=["QNLI"], n_eval=None)
    assert smoke.fish_tasks == ("QNLI",) and smoke.n_eval == 64 and smoke.fish_densities == (1e-3, 1e-2, 1e-1)
    paper = appendix_plan(get_profile("paper"))
    assert paper.large_k == 50_000 and paper.large_steps == 10 * get_profile("paper").graft.steps
    with pytest.raises(ValueError, match="unknown plan fields"):
        appendix_plan(get_profile("cpu"), bogus=1)
    with pytest.raises(ValueError, match="track_every"):
        AppendixPlan(track_every=50, track_checkpoint=100).checkpoint(100)


def test_appendix_claims_are_not_testable_when_ft_did_not_learn():
    res = Results("p1_appendix", "smoke", params={})  # no learning recorded for SST-2
    c = claims.table5_size(res, {"SST-2": {64: 100, 640: 120}}, 3e-4)
    assert c["verdict"] == "not-testable" and "no FT accuracy was measured" in c["note"]
    c = claims.table5_size(_res(), {"SST-2": {64: 0, 640: 0}}, 3e-4)
    assert c["verdict"] == "not-testable" and "empty-region gate" in c["note"]
    assert c["data"] == [dict(c["data"][0], task="SST-2", kind="generated")]
