"""Every setting the two papers state (``book/reference/paper_settings.csv``) against the paper profile and every
chapter's paper plan: equal, or a record of :mod:`repro.departures` names the difference."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from repro.departures import DEPARTURES
from repro.p1.appendix import plan as p1_appendix_plan
from repro.p1.multitask_continual import plan as mt_plan
from repro.paper_settings import RULES, check_settings, load_settings, ours, undeclared
from repro.plans import FromProfile
from repro.profiles import PROFILES


def test_the_table_covers_both_papers_and_every_chapter():
    rows = load_settings()
    per_paper = Counter(r.paper for r in rows)
    assert per_paper["P1"] >= 60 and per_paper["P2"] >= 60, per_paper
    assert all(r.section and r.experiment and r.setting and r.code for r in rows)
    chapters = {r.code.split(".")[1].split("@")[0] for r in rows if r.code.startswith("plan.")}
    assert {"p1_localization", "p1_calibration_ood", "p1_multitask_continual", "p1_appendix",
            "p2_disentanglement", "p2_sensitivity", "p2_appendix"} <= chapters
    assert {r.code[5:] for r in rows if r.code.startswith("rule.")} <= set(RULES)


def test_every_paper_setting_is_ours_or_declared():
    bad = undeclared()
    assert not bad, "\n".join(
        f"{c.setting.paper} {c.setting.section} / {c.setting.experiment} / {c.setting.setting}: paper "
        f"{c.setting.value!r}, ours {c.ours!r} ({c.setting.code}); register a Departure naming {c.setting.code!r} "
        f"in its fields, or use the paper's value" for c in bad)


def test_the_fixed_items_of_issue_32_are_equal():
    status = {c.setting.code: c.status for c in check_settings()}
    assert status["rule.p1_mt_task_sampling"] == "equal"  # item 7: uniform task per batch
    assert status["rule.p2_resisc45_val_share"] == "equal"  # item 3: 10 % of train held out
    assert ours("rule.p2_resisc45_val_share") == pytest.approx(0.1)
    assert status["plan.p1_multitask_continual.k"] == "equal"
    assert status["rule.p1_calibration_k"] == "equal"  # item 1: P1 §4 at 4096-shot
    assert status["rule.p1_placement_k"] == "equal"  # item 1: Figs. 9-10 at 4096-shot
    assert status["rule.p2_ft_scope"] == status["rule.p2_ft_scope_nlp"] == "equal"  # item 2: FT trains "all"


def test_the_section4_chapter_shares_the_localization_chapters_4096_shot_models():
    """Issue 32 item 1: the paper plan's §4 models train at k_shot_large; its ECE pairs are the localization
    chapter's Table 2 4096-shot pairs (the same job ids), and the smaller plans keep the profile's k_shot."""
    from repro.p1.calibration_ood.jobs import jobs as calibration_jobs
    from repro.p1.localization.jobs import jobs as localization_jobs

    paper = PROFILES["paper"]
    cal = calibration_jobs(paper)
    assert {j.kwargs["k"] for j in cal if "k" in j.kwargs} == {paper.k_shot_large}
    table2 = {j.id for j in localization_jobs(paper) if j.kwargs.get("k") == paper.k_shot_large}
    shared = [j for j in cal if j.id in table2]
    assert len(shared) >= 2 * 12 * 5  # FT + graft of the 12 4096-shot tasks at 5 seeds
    for name in ("smoke", "cpu"):
        prof = PROFILES[name]
        assert {j.kwargs["k"] for j in calibration_jobs(prof) if "k" in j.kwargs} == {prof.k_shot}


def test_a_changed_multitask_k_without_a_record_fails(monkeypatch):
    monkeypatch.setitem(mt_plan.PLANS, "paper", replace(mt_plan.PLANS["paper"], k=FromProfile("k_shot")))
    bad = {c.setting.code for c in undeclared()}
    assert "plan.p1_multitask_continual.k" in bad


def test_a_changed_resisc45_split_without_a_record_fails(monkeypatch):
    from repro.data import hub_vision

    real = hub_vision.official_splits

    def torchgeo_val(task, stored):  # the former rule: torchgeo's val split, all of train trained on
        if task == "RESISC45":
            return list(stored["train"]), list(stored["val"]), list(stored["test"])
        return real(task, stored)

    monkeypatch.setattr(hub_vision, "official_splits", torchgeo_val)
    assert "rule.p2_resisc45_val_share" in {c.setting.code for c in undeclared()}


def test_a_changed_profile_value_or_appendix_plan_without_a_record_fails(monkeypatch):
    paper = PROFILES["paper"]
    monkeypatch.setitem(PROFILES, "paper", paper.with_(graft_steps=50))
    assert "graft.steps" in {c.setting.code for c in undeclared()}
    monkeypatch.setitem(PROFILES, "paper", paper)
    monkeypatch.setitem(p1_appendix_plan.PLANS, "paper",
                        replace(p1_appendix_plan.PLANS["paper"], fish_densities=(1e-3,)))
    assert "plan.p1_appendix.fish_densities" in {c.setting.code for c in undeclared()}


def test_a_declared_difference_names_its_records():
    checks = {c.setting.code: c for c in check_settings()}
    assert checks["rule.p1_sentiment_tasks"].status == "declared"
    assert checks["rule.p1_sentiment_tasks"].departures == ("p1-table5-sentiment",)
    keys = {d.key for d in DEPARTURES}
    assert all(set(c.departures) <= keys for c in checks.values())
