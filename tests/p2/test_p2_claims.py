"""Gates of the P2 task-arithmetic claims (repro.report.gates)."""

from __future__ import annotations

import pytest

from repro.report.gates import gate, low_gain_tasks, negation_control_reason, normalized_reason
from repro.report.results import Results


def test_low_gain_tasks_by_hand():
    single = {"SST-2": 0.80, "QNLI": 0.53, "TREC": 0.70}
    zero = {"SST-2": 0.70, "QNLI": 0.50, "TREC": 0.66}
    low = low_gain_tasks(single, zero)
    assert set(low) == {"QNLI", "TREC"} and low["QNLI"] == pytest.approx(3.0) and low["TREC"] == pytest.approx(4.0)
    assert "QNLI +3.0" in normalized_reason(single, zero)
    assert normalized_reason({"SST-2": 0.8}, {"SST-2": 0.7}) is None
    with pytest.raises(KeyError, match="zero-shot"):
        low_gain_tasks({"X": 0.5}, {})


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
