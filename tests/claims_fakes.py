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


def claim(id: str, verdict: str, *, ours: str = "96 %", paper: str = ">95 %", kind: str | None = "real",
          statistic: float = 0.97, beyond: bool = False) -> dict:
    """A results-file claim with paired-bootstrap evidence (``verdict`` must agree with it: holds → CI above 0.95,
    does-not-hold → below, inconclusive → across) and one deciding task of ``kind`` (None: no task data)."""
    lo, hi = {"holds": (statistic - 0.01, statistic + 0.01), "does-not-hold": (0.5, 0.6),
              "inconclusive": (0.9, 0.99)}.get(verdict, (statistic, statistic))
    if verdict == "does-not-hold":
        statistic = 0.55
    ev = None if verdict == "not-testable" else {
        "n_examples": 500, "seeds": 3, "statistic": statistic, "ci_low": lo, "ci_high": hi, "margin": 0.95,
        "test": "paired bootstrap", "op": ">="}
    data = [] if kind is None else [{"task": "SST-2", "kind": kind, "source": "s", "title": "t", "licence": "l",
                                     "label_rule": "r"}]
    return {"id": id, "text": f"Claim {id}. More.", "paper": paper, "ours": ours,
            "holds": {"holds": True, "does-not-hold": False}.get(verdict), "note": "why", "verdict": verdict,
            "evidence": ev, "beyond_paper": beyond, "data": data}


def write_run(root, profile: str, notebook: str, claims: list, *, folder: str = "",
              model_family: str | None = None, recorded: bool = True):
    """Write ``<root>/[folder/]<profile>/<notebook>.json`` (valid results), its executed copy and, with
    ``recorded``, the runner's record (``.cache.json``, ``model_family`` in its params) that
    :func:`repro.runner.execute.check_run` accepts; returns the results path."""
    import hashlib
    import json
    from pathlib import Path

    import nbformat

    out = Path(root) / folder / profile if folder else Path(root) / profile
    out.mkdir(parents=True, exist_ok=True)
    res = out / f"{notebook}.json"
    res.write_text(json.dumps({"meta": {"notebook": notebook, "profile": profile, "params": {}},
                               "tables": {"p1-table2": [{"task": "SST-2", "method": "FT", "sparsity": None,
                                                         "metric": "acc", "value": 90.0, "std": None,
                                                         "paper": 92.0}]},
                               "figures": {}, "claims": claims}))
    executed = res.with_suffix(".ipynb")
    nbformat.write(nbformat.v4.new_notebook(), executed)
    if recorded:
        params = {} if model_family is None else {"model_family": model_family}
        sha = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (res, executed)}
        (out / f"{notebook}.cache.json").write_text(json.dumps({
            "key": "k", "seconds": 1.0, "params": params, "profile": profile, "executed_sha256": sha[executed],
            "results_sha256": sha[res]}))
    return res
