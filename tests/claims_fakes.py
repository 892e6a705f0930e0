"""Results objects for claim-rule tests (``from claims_fakes import learned_res``): every task's learning check
passes, so a test is about its claim's rule, not about the learning gate (tests/report/test_gates*.py test that)."""

from __future__ import annotations

from repro.report.gates import learned_from_accuracy
from repro.report.results import Results


class AllLearned(dict):
    """Every task's learning check passes (90 % vs 50 % on 1,000 examples)."""

    def get(self, task, default=None):
        return learned_from_accuracy(task, 0.9, 0.5, 1000)


def learned_res(notebook: str, profile: str = "smoke") -> Results:
    """A :class:`Results` whose recorded learning checks pass for every task."""
    res = Results(notebook, profile)
    res.learning = AllLearned()
    return res
