"""The one not-testable gate (repro.report.gates): both papers' claims withhold a verdict through it."""

from __future__ import annotations

import pytest

from repro.report.gates import gate, not_testable
from repro.report.results import Results


def test_not_testable_carries_the_reason_then_the_rule():
    assert not_testable("no task in this plan") == {"verdict": "not-testable", "note": "no task in this plan"}
    assert not_testable("no GPU", "ratio >= 0.95") == {"verdict": "not-testable",
                                                       "note": "no GPU; rule otherwise: ratio >= 0.95"}
    assert gate(True, "no GPU", "ratio >= 0.95") == not_testable("no GPU", "ratio >= 0.95")
    assert gate(True, None, "ratio >= 0.95") == {"holds": True, "note": "ratio >= 0.95"}
    with pytest.raises(ValueError, match="reason"):
        not_testable("")


def test_a_withheld_claim_is_stored_as_not_testable():
    res = Results("t", "smoke")
    c = res.add_claim("p1-table5-gate", "a claim", paper="p", **not_testable("no task in this plan"))
    assert c["verdict"] == "not-testable" and c["holds"] is None and c["note"] == "no task in this plan"
