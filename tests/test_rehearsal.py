"""Issue 31 §3: the paper rehearsal runs the paper plans' DAG (same jobs per notebook and kind) on tiny stand-ins."""

from __future__ import annotations

from collections import Counter
from dataclasses import fields

import pytest

from repro.chapters import chapters
from repro.inventory import inventory
from repro.plans import plan_for
from repro.profiles import get_profile
from repro.rehearsal import PROFILE, snakemake_command


@pytest.mark.parametrize("family", ["vision", "nlp"])
def test_the_rehearsal_plan_has_the_paper_plans_shape(family):
    """Every notebook declares as many jobs of each kind as in the paper plan (4096-shot, 50,000-shot, the 8 vision
    tasks, the T5 tasks), and every job names the paper's model: only the profile and the cut recipes differ."""
    paper, rehearsal = inventory("paper", family=family), inventory(PROFILE, family=family)
    shape = lambda jobs: Counter((j.notebooks[0], j.kind) for j in jobs)  # noqa: E731
    assert shape(rehearsal) == shape(paper) and len(paper) > 1000
    assert {j.kwargs.get("model") for j in rehearsal} == {j.kwargs.get("model") for j in paper}
    assert {j.kwargs.get("k") for j in paper} >= {64, 4096, 50_000}  # the paper's k-shot sizes, in the fixture's
    assert {j.kwargs.get("k") for j in rehearsal} >= {1, 64, 50_000}  # units (50,000 = all of a task's data)


def test_the_rehearsal_cuts_name_real_plan_fields_and_stand_in_tiny_models():
    prof = get_profile(PROFILE)
    plan_types = {f"{type(p).__module__}.{type(p).__name__}": type(p)
                  for c in chapters() if c.package for p in c.module("plan").PLANS.values()}
    for cls, name, _ in prof.plan_cuts:
        assert name in {f.name for f in fields(plan_types[cls])}, (cls, name)
    assert all(tiny.startswith("tiny-") for _, tiny in prof.stand_ins)
    appendix = next(c for c in chapters() if c.name == "p1_appendix").module("plan")
    assert plan_for(appendix.PLANS, prof).track_every == 1 and plan_for(appendix.PLANS, get_profile("paper")).track_every == 100


def test_snakemake_gets_the_rehearsal_config(tmp_path):
    cmd = snakemake_command("vision", tmp_path, ["p2_sensitivity"], 2, "book")
    assert cmd[-1] == "book" and f"profile={PROFILE}" in cmd and "only=p2_sensitivity" in cmd and "gpu=2" in cmd
