"""The run drivers of the P1 §5 chapter find their artifacts among the chapter's declared jobs, by role
(repro.p1.multitask_continual.runs on a ChapterJobs of the chapter's own declaration; nothing is trained)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from repro.jobcall import ChapterJobs
from repro.jobs import ref
from repro.p1.multitask_continual import runs
from repro.p1.multitask_continual.jobs import NOTEBOOK, ROLES, jobs
from repro.profiles import get_profile


class Recorded(ChapterJobs):
    """The chapter's declared jobs whose artifacts are their own ids (a continual job's: the list of its stages')."""

    def artifact(self, spec):
        assert spec.id in self.specs, spec.id
        self.obtained[spec.id] = None
        return [*spec.deps, spec.id] if spec.kind == "continual" else (spec.id, {})

    def value(self, spec):
        out = self.artifact(spec)
        return out if spec.kind == "continual" else out[0]


def declared(**overrides) -> Recorded:
    return Recorded(SimpleNamespace(), NOTEBOOK, None, specs=jobs(get_profile("smoke"), **overrides))


def test_every_declared_job_has_a_role_of_the_chapter():
    specs = declared(region_bases=(0.0, 1e-5), adamw_mt=True).specs.values()
    assert {s.role for s in specs} <= set(ROLES) and all(s.role for s in specs)


def test_fig8_and_extra_studies_read_the_declared_regions(monkeypatch: pytest.MonkeyPatch):
    seen = []
    monkeypatch.setattr(runs, "region_study", lambda jobs, vector, groups, base, tuned=False, limit=None:
                        seen.append((vector.role, base, dict(groups), tuned)) or {})
    js = declared(region_bases=(0.0, 1e-5), adamw_mt=True)
    runs.fig8_study(js, {"sentiment": ["SST-2", "CR"]})
    assert seen.pop() == ("mt", 0.0, {"sentiment": ["SST-2", "CR"]}, True)
    assert list(runs.extra_studies(js)) == ["p1-fig11", "p1-fig13"]  # no top-1e-4 regions declared
    assert seen == [("mt", 1e-5, {}, False), ("mt-adamw", 0.0, {}, False)]
    runs.fig8_study(declared(tune_steps=0), {"sentiment": ["SST-2", "CR"]})
    assert seen.pop()[-1] is False  # no joint-graft jobs declared: no tuned unions


def test_continual_final_is_the_last_stage_or_stage_one():
    js = declared()
    naive = js.one("continual", role="continual-naive", sequence=["QNLI", "AGNews", "SST-2"])
    assert runs.continual_final(js, "continual-naive", ["QNLI", "AGNews", "SST-2"]) == naive.id
    one = declared(continual_sequence=["QNLI"])
    assert runs.continual_final(one, "continual-naive", ["QNLI"]) == \
        one.one("finetune", role="single-ft", tasks=["QNLI"]).id
    region = one.one("graft", role="continual-region", task="QNLI")
    graft = one.one("finetune", role="continual-graft", tasks=["QNLI"])
    assert graft.kwargs["trainable"] == ref(region)
    assert runs.continual_final(one, "continual-graft", ["QNLI"]) == graft.id
