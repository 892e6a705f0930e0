"""The data page (repro.data_page) and the OOD stand-ins of the calibration plan: which tasks a profile reads,
real or generated, and which of the paper's OOD targets each of ours stands in for."""

from __future__ import annotations

import pytest

from repro.data_page import data_page_markdown, used_tasks
from repro.p1.calibration_ood.plan import CalibrationPlan, calibration_plan
from repro.profiles import get_profile


def _rows(page: str) -> dict[str, str]:
    return {line.split("|")[1].strip(): line.split("|")[2].strip() for line in page.splitlines()
            if line.startswith("| ") and not line.startswith("| task")}


def test_the_cpu_page_marks_the_packaged_tasks_real_and_the_pairs_generated(tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_CORPORA", str(tmp_path))  # not fetched: the page still builds and says so
    page = data_page_markdown("cpu")
    rows = _rows(page)
    assert {t: rows[t] for t in ("SST-2", "MR", "CR", "MPQA")} == dict.fromkeys(("SST-2", "MR", "CR", "MPQA"),
                                                                                  "**real**")
    assert rows["QNLI"] == "generated" and rows["MNLI"] == "generated"
    # the vision family's images (P2 Tables 1-2, Fig. 1) and its control
    assert {t: rows[t] for t in ("mnist5k", "digits", "textures", "faces")} == dict.fromkeys(
        ("mnist5k", "digits", "textures", "faces"), "**real**")
    assert "3,500 train + 500 val + 1,000 test (10 classes)" in page
    assert "not available here" in page and "repro fetch --profile cpu" in page
    n_real = sum(v == "**real**" for v in rows.values())
    assert f"**{n_real} real**, **{len(rows) - n_real} generated**" in page


def test_the_smoke_page_is_all_generated_and_lists_what_the_plans_use():
    rows = _rows(data_page_markdown("smoke"))
    assert rows and set(rows.values()) == {"generated"}
    assert set(rows) == set(used_tasks(get_profile("smoke")))


def test_cpu_ood_targets_stand_in_for_the_papers_by_position():
    plan = calibration_plan(get_profile("cpu"))
    assert plan.targets("SST-2") == ["MR", "CR"] and plan.targets("QNLI") == ["MNLI", "SNLI"]
    assert plan.target_label("SST-2", "MR") == "MR (for IMDb)"
    assert plan.target_label("MPQA", "CR") == "CR (for Yelp)"
    assert plan.target_label("MPQA", "SST-2") == "SST-2"  # the paper's own target
    assert plan.target_label("QNLI", "MNLI") == "MNLI(0/1)"
    assert calibration_plan(get_profile("paper")).targets("SST-2") == ["IMDb", "Yelp"]


def test_a_stand_in_list_must_match_the_papers_length():
    plan = CalibrationPlan(ood_pairs=(("SST-2", ("MR",)),))
    with pytest.raises(ValueError, match="stands in for one of the paper's"):
        plan.targets("SST-2")
