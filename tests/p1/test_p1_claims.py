"""P1 §2-3 plan and Table 2 claim rules (repro.p1.localization_plan, repro.p1.claims_localization)."""

from __future__ import annotations

import numpy as np
import pytest

from repro.core.masks import Mask
from repro.p1 import claims_localization as c2
from repro.p1.localization_plan import LocalizationPlan, localization_plan, variant_recipes
from repro.profiles import get_profile
from repro.report.results import Results, validate


def test_plans_per_profile_and_overrides():
    smoke, cpu, paper = (localization_plan(get_profile(p)) for p in ("smoke", "cpu", "paper"))
    assert smoke.sparsities == (1e-3, 1e-2) and cpu.curve_tasks == ("SST-2", "QNLI") and paper.n_seeds == 5
    assert "TREC" not in paper.large_tasks and paper.n_eval == 0
    p = localization_plan(get_profile("cpu"), tasks=["QNLI"], n_eval=None)
    assert p.tasks == ("QNLI",) and p.n_eval == cpu.n_eval
    with pytest.raises(ValueError, match="unknown plan fields"):
        LocalizationPlan().with_overrides(nope=1)
    prof = get_profile("cpu")
    assert LocalizationPlan(n_seeds=2).seeds(prof, prof.seeds[0]) == list(prof.seeds[:2])
    assert variant_recipes(prof).adamw.optimizer == "adamw"


def _run(ft, graft, count=5):
    ft, graft = np.asarray(ft), np.asarray(graft)
    return {"correct": {"ft": ft, "graft": graft, "agree": (ft == graft).astype(float)},
            "mask": Mask.random({"w": (100, 100)}, count, seed=0)}


def test_table2_claims_use_paired_bootstraps():
    n = 200
    ft = np.r_[np.ones(180), np.zeros(20)]
    runs = {("SST-2", 32, 1): _run(ft, ft), ("SST-2", 32, 2): _run(ft, ft),
            ("QNLI", 8, 1): _run(ft, np.r_[np.ones(100), np.zeros(100)])}
    res = Results("p1_localization", "smoke")
    rec = c2.table2_recovery(res, runs, 32, 1e-5)
    assert rec["verdict"] == "holds" and rec["evidence"]["seeds"] == 2 and rec["evidence"]["n_examples"] == n
    low = c2.table2_recovery(res, runs, 8, 1e-5, beyond_paper=True)
    assert low["verdict"] == "does-not-hold" and low["beyond_paper"] and low["id"] == "p1-table2-64shot"
    drop = c2.table2_drop(res, runs, 32, ["QNLI"], pair=False)
    assert drop["verdict"] == "holds" and drop["evidence"]["statistic"] == 0.0
    assert c2.table2_drop(res, runs, 32, ["QNLI"], pair=True)["verdict"] == "not-testable"
    assert c2.table2_agreement(res, runs, 32)["verdict"] == "holds"
    size = c2.table2_size(res, runs, 10_000)          # 5 of 10,000 = 0.05 % > 0.01 %
    assert size["verdict"] == "does-not-hold" and "0.0500%" in size["ours"]
    res.add_table("p1-table2", [dict(task="SST-2", method="FT", sparsity=None, metric="acc", value=90.0, std=None,
                                     paper=None)])
    validate(res.to_dict(), require_nonempty=True)
