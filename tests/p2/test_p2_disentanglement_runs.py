"""P2 §5.2 chapter: what the notebook obtains from its declared jobs (repro.p2.disentanglement.runs).

The driver calls are replaced by a stub (each artifact is its job id), so the test checks the queries and the
parity of declared and obtained jobs on the smoke and cpu declarations without training."""

from __future__ import annotations

import types

import pytest

import repro.jobcall
from repro.jobcall import ChapterJobs
from repro.p2.disentanglement.plan import disentanglement_plan
from repro.p2.disentanglement.runs import DRIFT_METHODS, drift_rows
from repro.p2.linear_regime import constant_drift
from repro.p2.methods import METHODS, P2_METHODS
from repro.p2.zoo import TALOS_MASK_ROLE, vector_spec, zoo_role, zoo_tasks, zoo_vectors
from repro.profiles import get_profile


def _stub(wb, spec, upstream):
    if spec.kind == "drift":
        return [{"step": s, "rel_change": 0.5, "job": spec.id} for s in [0, *spec.kwargs["steps"]]]
    return spec.id, {}


@pytest.fixture
def chapter(monkeypatch):
    monkeypatch.setattr(repro.jobcall, "call_job", _stub)

    def make(profile, **overrides):
        wb = types.SimpleNamespace(linear_heads=False, declared=None, seed=13)
        return ChapterJobs(wb, "p2_disentanglement", profile, **overrides)
    return make


@pytest.mark.parametrize("profile", ["smoke", "cpu"])
def test_zoo_vectors_and_drift_obtain_every_declared_job(chapter, profile):
    jobs = chapter(profile)
    prof = get_profile(profile).for_p2("", "p2_disentanglement")
    plan = disentanglement_plan(prof)
    vectors = zoo_vectors(jobs, zoo_tasks(prof), 13, P2_METHODS)
    assert list(vectors) == list(P2_METHODS)
    for m in P2_METHODS:
        assert list(vectors[m]) == zoo_tasks(prof)
        assert all(vectors[m][t] in {s.id for s in jobs.select(role=zoo_role(m))} for t in vectors[m])
    rows = drift_rows(jobs, plan.drift_task, plan.drift_steps, 3, DRIFT_METHODS)
    assert [r["method"] for r in rows if r["step"] == 0] == [METHODS[k].label for k in DRIFT_METHODS]
    lin = [r for r in rows if r["method"] == METHODS["linearized"].label]
    assert lin == [dict(r, method=METHODS["linearized"].label) for r in constant_drift(plan.drift_steps, 3)]
    assert jobs.record()["unused"] == [] and jobs.record()["declared"] == jobs.record()["obtained"]


def test_zoo_roles_mark_one_vector_per_method_and_task(chapter):
    jobs = chapter("smoke")
    tasks = zoo_tasks(get_profile("smoke").for_p2("", "p2_disentanglement"))
    for m in P2_METHODS:
        specs = jobs.select(role=zoo_role(m))
        assert specs == [vector_spec(jobs, t, m) for t in tasks]  # the seed: the Workbench's
        assert all(s.kind == "finetune" for s in specs)
    talos = jobs.select(role=zoo_role("talos"))[0]
    assert jobs.deps(talos) == jobs.select(role=TALOS_MASK_ROLE)[:1]


def test_drift_task_outside_the_zoo_declares_what_its_drift_reads(chapter):
    prof = get_profile("smoke").for_p2("", "p2_disentanglement")
    other = next(t for t in prof.p1_tasks if t not in zoo_tasks(prof))
    jobs = chapter("smoke", drift_task=other)
    drift_rows(jobs, other, [1, 2], 2)
    assert jobs.record()["by_kind"]["drift"] == [3, 3]
    lota = jobs.one(kind="drift", method="lota")
    assert jobs.deps(lota)[0].kwargs["tasks"] == [other]


def test_constant_drift_rows():
    rows = constant_drift([5, 1, 5], 2)
    assert [r["step"] for r in rows] == [0, 1, 5]
    assert all(r["rel_change"] == 0.0 and r["rel_per_example"] == [0.0, 0.0] for r in rows)
