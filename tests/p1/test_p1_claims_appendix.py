"""Claim rules of the P1 appendix (repro.p1.claims_appendix) on hand-made inputs, and its plan object."""

import numpy as np
import pytest

from repro.p1 import claims_appendix as claims
from repro.p1.appendix_plan import AppendixPlan, appendix_plan
from repro.profiles import get_profile
from repro.report.results import Results


def _res() -> Results:
    return Results("p1_appendix", "smoke", params={})


def _run(ft_acc: float, graft_acc: float, ft_ece: float = 0.2, graft_ece: float = 0.1, n: int = 400) -> dict:
    rng = np.random.default_rng(0)
    ft = (rng.random(n) < ft_acc).astype(np.uint8)
    graft = ft.copy()
    flip = np.flatnonzero(ft)[: int(round((ft_acc - graft_acc) * n))]
    graft[flip] = 0
    return {"correct": {"ft": ft, "graft": graft}, "ft": {"ece": ft_ece}, "graft": {"ece": graft_ece, "count": 10}}


def test_table5_recovery_holds_when_graft_matches_ft_and_is_calibrated():
    c = claims.table5_recovery(_res(), {"SST-2": _run(0.8, 0.8)}, 512, (3e-4,), 3)
    assert c["verdict"] == "holds" and c["evidence"]["ci_low"] >= 0.95


def test_table5_recovery_fails_on_calibration_or_accuracy():
    assert claims.table5_recovery(_res(), {"SST-2": _run(0.8, 0.8, graft_ece=0.3)}, 512, (3e-4,), 3)["verdict"] \
        == "does-not-hold"
    assert claims.table5_recovery(_res(), {"SST-2": _run(0.9, 0.5)}, 512, (3e-4,), 3)["verdict"] == "does-not-hold"


@pytest.mark.parametrize("sizes, expected", [({64: 100, 512: 200}, "holds"), ({64: 100, 512: 900}, "does-not-hold"),
                                             ({64: 100, 512: 600}, "does-not-hold")])
def test_table5_size_compares_region_growth_with_data_growth(sizes, expected):
    c = claims.table5_size(_res(), {"SST-2": sizes}, 3e-4)
    assert c["verdict"] == expected and "×8" in c["ours"]


def test_table5_size_needs_two_data_sizes():
    assert claims.table5_size(_res(), {"SST-2": {64: 100}}, 3e-4)["verdict"] == "not-testable"


def test_table8_overlap_states_counts():
    rows = [{"task": "SST-2", "target": 1e-3, "overlap": 0.05, "count": 17, "fish_count": 17.0}]
    c = claims.table8_overlap(_res(), rows, 64, 3)
    assert c["verdict"] == "holds" and "17 vs 17 parameters" in c["ours"]
    rows[0]["overlap"] = 0.2
    assert claims.table8_overlap(_res(), rows, 64, 3)["verdict"] == "does-not-hold"


def _pair(learned: float, fish: float, n: int = 500) -> dict:
    rng = np.random.default_rng(1)
    base = rng.random(n)
    return {"Graft": (base < learned).astype(np.uint8), "Graft with FISH mask": (base < fish).astype(np.uint8)}


def test_table8_graft_at_equal_size():
    correct = {"SST-2": {1e-4: _pair(0.8, 0.6), 1e-2: _pair(0.8, 0.78)}}
    counts = {("SST-2", 1e-4): 17, ("SST-2", 1e-2): 1700}
    c = claims.table8_graft(_res(), correct, counts)
    assert c["verdict"] == "holds" and "1700" in c["note"]
    no_shrink = {"SST-2": {1e-4: _pair(0.8, 0.6), 1e-2: _pair(0.9, 0.6)}}
    assert claims.table8_graft(_res(), no_shrink, counts)["verdict"] == "does-not-hold"
    equal = {"SST-2": {1e-4: _pair(0.7, 0.7), 1e-2: _pair(0.7, 0.7)}}
    assert claims.table8_graft(_res(), equal, counts)["verdict"] == "does-not-hold"


def _summary(ft_after: float, graft_after: float, graft_to_ckpt: float = 0.2) -> list[dict]:
    return [{"model": "FT", "target_sparsity": None, "start": 0.5, "at_checkpoint": 0.7, "end": 0.7 + ft_after,
             "gain_after_checkpoint": ft_after},
            {"model": "graft", "target_sparsity": 1e-3, "start": 0.5, "at_checkpoint": 0.5 + graft_to_ckpt,
             "end": 0.5 + graft_to_ckpt + graft_after, "gain_after_checkpoint": graft_after}]


def test_fig15_rule():
    assert claims.fig15_core_skills(_res(), _summary(0.1, 0.01), 50, 100)["verdict"] == "holds"
    assert claims.fig15_core_skills(_res(), _summary(0.1, 0.2), 50, 100)["verdict"] == "does-not-hold"
    assert claims.fig15_core_skills(_res(), _summary(0.0, 0.0), 50, 100)["verdict"] == "not-testable"
    assert claims.fig15_core_skills(_res(), _summary(0.1, 0.0), 100, 100)["verdict"] == "not-testable"


def test_fig9_fig10_rules():
    thirds = [{"task": "SST-2", "target_sparsity": 1e-3, "first_share": 0.2, "middle_share": 0.6, "last_share": 0.2,
               "middle_layers": "4-7"}]
    assert claims.fig9_layers(_res(), thirds, "m", 12)["verdict"] == "holds"
    assert claims.fig10_modules(_res(), {("SST-2", 1e-3): {"V", "FFN-in", "O"}})["verdict"] == "holds"
    assert claims.fig10_modules(_res(), {("SST-2", 1e-3): {"K", "FFN-in", "O"}})["verdict"] == "does-not-hold"


def test_table9_not_testable_without_gpt2():
    assert claims.table9_gpt2(_res(), None, 4)["verdict"] == "not-testable"
    assert claims.table9_gpt2(_res(), {"SST-2": 0.97})["verdict"] == "holds"


@pytest.mark.parametrize("name, checkpoint", [("smoke", 10), ("paper-smoke", 10), ("cpu", 50), ("paper", 500)])
def test_plan_fig15_checkpoint_is_intermediate(name, checkpoint):
    profile = get_profile(name)
    plan = appendix_plan(profile)
    assert plan.checkpoint(profile.p1_finetune.steps) == checkpoint < profile.p1_finetune.steps


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
