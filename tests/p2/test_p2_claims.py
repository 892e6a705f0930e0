"""Gates of the P2 task-arithmetic claims (repro.report.gates)."""

from __future__ import annotations

import pytest

import numpy as np

from repro.report.gates import (gate, learned, learned_from_accuracy, learning_reason, low_gain_tasks,
                                negation_control_reason, normalized_reason, unmeasured)
from repro.report.results import Results


def test_low_gain_tasks_and_normalized_reason_are_the_learning_gate():
    n = 1000
    ones = lambda k: np.r_[np.ones(k), np.zeros(n - k)]  # noqa: E731
    checks = [learned("SST-2", ones(800), reference_acc=0.70, model="TaLoS"),   # +10 points, CI well above 5
              learned("QNLI", ones(530), reference_acc=0.50, model="TaLoS"),    # +3 points
              learned("TREC", ones(720), reference_acc=0.66, model="TaLoS")]    # +6 points, CI reaches below 5
    low = low_gain_tasks(checks)
    assert set(low) == {"QNLI", "TREC"} and low["QNLI"] == pytest.approx(3.0) and low["TREC"] == pytest.approx(6.0)
    reason = normalized_reason(checks)
    assert "learning gate" in reason and "QNLI: TaLoS − zero-shot +3.0 points" in reason and "TaLoS's" in reason
    assert normalized_reason(checks[:1]) is None
    assert "no fine-tuned-vs-reference accuracy" in normalized_reason([])


def test_learning_reason_names_each_failed_gate_with_numbers():
    ok = learned("SST-2", np.r_[np.ones(900), np.zeros(100)])        # 90 % vs chance 50 %
    chance = learned("SST-2", np.r_[np.ones(500), np.zeros(500)])    # at chance
    assert ok.ok and not chance.ok and chance.reference == "chance (50%)" and chance.gain == pytest.approx(0.0)
    assert learning_reason([ok]) is None
    assert learning_reason([ok], regions={"SST-2 region": 3}, distinct={"graft vs FT": True}) is None
    r = learning_reason([chance], regions={"SST-2 region": 0}, distinct={"graft vs FT": False})
    assert "learning gate" in r and "SST-2: FT − chance (50%) +0.0 points" in r
    assert "empty-region gate: SST-2 region has 0 parameters" in r and "identical-models gate: " in r
    # paired against a zero-shot model on the same examples; and from accuracies only (normal approximation)
    zs = learned("SST-2", np.r_[np.ones(900), np.zeros(100)], reference=np.r_[np.ones(880), np.zeros(120)])
    assert zs.reference == "zero-shot" and zs.gain == pytest.approx(2.0) and not zs.ok
    acc = learned_from_accuracy("SST-2", 0.9, 0.7, 1000)
    assert acc.ok and acc.gain == pytest.approx(20.0) and acc.ci_low < 20.0 < acc.ci_high
    assert not unmeasured("SST-2").ok and "no FT accuracy was measured" in unmeasured("SST-2").text()


def test_negation_control_needs_chance_plus_ten():
    assert negation_control_reason(0.60, 2) is None              # 60 % >= 50 + 10
    assert "below chance + 10" in negation_control_reason(0.55, 2)
    assert negation_control_reason(0.44, 3) is None              # 44 % >= 33.3 + 10
    with pytest.raises(ValueError):
        negation_control_reason(0.5, 1)


def test_gate_gives_add_claim_arguments():
    res = Results("p2_task_arithmetic", "smoke")
    c = res.add_claim("p2-table2-best", "t", **gate(True, "negation not testable: x", note="rule"))
    assert c["verdict"] == "not-testable" and c["holds"] is None and c["note"].startswith("negation not testable")
    c = res.add_claim("p2-table1-best", "t", **gate(False, None, note="rule"))
    assert c["verdict"] == "does-not-hold" and c["note"] == "rule"


def test_vision_claims_are_judged_only_on_vision_models():
    from repro.report.gates import vision_reason

    assert vision_reason("clip-vit-b32") is None
    assert "minilm" in vision_reason("minilm") and vision_reason("t5-small") is not None
