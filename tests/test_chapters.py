"""Issue 31: chapters are named once (repro.chapters) and a notebook obtains its artifacts only through the jobs its
chapter declares (repro.jobcall.ChapterJobs)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

import repro
from repro import chapters as reg
from repro.chapters import chapter_names, chapters, discover, toc, toc_text
from repro.jobcall import ChapterJobs, UndeclaredJob
from repro.jobs import finetune_job, graft_job
from repro.paths import book_dir, notebooks_dir
from repro.profiles import get_profile
from repro.workbench import UndeclaredArtifact, Workbench

SRC = Path(repro.__file__).resolve().parent


def test_every_chapter_package_has_its_notebook_and_a_place():
    names = chapter_names()
    assert names == tuple(p.stem for p in _toc_files())  # the book's order is the registry's
    for c in chapters():
        assert c.notebook.exists()
        if c.package:
            assert c.module("jobs").NOTEBOOK == c.name and hasattr(c.module("plan"), "PLANS")


def test_the_committed_toc_is_the_registrys():
    """`repro book` writes book/_toc.yml from the registry; the committed file must be what it writes."""
    assert (book_dir() / "_toc.yml").read_text(encoding="utf-8") == toc_text()


def _toc_files() -> list[Path]:
    files = [e["file"] for part in toc()["parts"] for e in part["chapters"]]
    return [Path(f) for f in files if f.startswith("executed/")]


@pytest.fixture
def dummy_chapter(tmp_path, monkeypatch):
    """A copy of the package tree and the notebooks with one more P2 chapter, ``p2_dummy`` (a package with ORDER 99
    and a jobs.py declaring one mask, and its notebook)."""
    src, nbs = tmp_path / "repro", tmp_path / "notebooks"
    shutil.copytree(SRC, src, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(notebooks_dir(), nbs)
    pkg = src / "p2" / "dummy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""A dummy chapter."""\n\nORDER = 99\n')
    (pkg / "jobs.py").write_text("NOTEBOOK = 'p2_dummy'\n\ndef jobs(profile, **kw):\n    return []\n")
    (nbs / "p2_dummy.md").write_text("# A dummy chapter\n")
    found = discover(src, nbs)
    monkeypatch.setattr(reg, "chapters", lambda: found)
    return found


def test_a_new_chapter_is_seen_by_the_plan_the_toc_and_the_runner(dummy_chapter):
    dummy = next(c for c in dummy_chapter if c.name == "p2_dummy")
    assert (dummy.paper, dummy.order, dummy.package) == ("p2", 99, "repro.p2.dummy")
    assert [c.name for c in dummy_chapter if c.paper == "p2"][-1] == "p2_dummy"  # last of the P2 part
    p2_part = next(p for p in toc(dummy_chapter)["parts"] if p["caption"].startswith("P2"))
    assert p2_part["chapters"][-1] == {"file": "executed/p2_dummy"}
    assert "executed/p2_dummy" in yaml.safe_load(toc_text(dummy_chapter))["parts"][2]["chapters"][-1]["file"]


def test_discovery_refuses_a_package_without_notebook_or_order(tmp_path):
    src, nbs = tmp_path / "repro", tmp_path / "notebooks"
    (src / "p1" / "lonely").mkdir(parents=True)
    (src / "p1" / "lonely" / "jobs.py").write_text("")
    (src / "p1" / "lonely" / "__init__.py").write_text("ORDER = 1\n")
    nbs.mkdir()
    with pytest.raises(ValueError, match="has no notebook"):
        discover(src, nbs)
    (nbs / "p1_lonely.md").write_text("# lonely\n")
    (src / "p1" / "lonely" / "__init__.py").write_text('"""no order"""\n')
    with pytest.raises(ValueError, match="ORDER"):
        discover(src, nbs)


# --- ChapterJobs: the notebook's artifacts only through declared specs -------------------------------------------
@pytest.fixture
def wb(tmp_path):
    prof = get_profile("smoke").with_(p1_finetune=get_profile("smoke").p1_finetune.__class__(
        optimizer="sgd", lr=1e-2, batch_size=4, steps=2, eval_every=0), graft_steps=1)
    return Workbench(prof, artifacts_dir=tmp_path)


def test_an_undeclared_artifact_fails_naming_it(wb):
    ft = finetune_job(wb.profile, "p1_test", "SST-2", wb.profile.p1_finetune)
    other = finetune_job(wb.profile, "p1_test", "QNLI", wb.profile.p1_finetune)
    jobs = ChapterJobs(wb, "p1_test", None, specs=[ft])
    with pytest.raises(UndeclaredJob, match=rf"p1_test asks for finetune {other.id} .*tasks=\['QNLI'\]"):
        jobs.artifact(other)
    with pytest.raises(UndeclaredArtifact, match="p1_test: taskvec .* outside a declared job"):
        wb.finetune("SST-2", k=wb.profile.k_shot)  # rebuilding a job's arguments by hand: refused
    with pytest.raises(UndeclaredJob, match="0 declared jobs match kind=graft"):
        jobs.one(kind="graft")


def test_a_notebook_gets_what_the_cluster_computes_and_records_it(wb):
    from repro.report.results import Results

    ft = finetune_job(wb.profile, "p1_test", "SST-2", wb.profile.p1_finetune, role="table2")
    graft = graft_job(wb.profile, "p1_test", "SST-2", ft, 1e-2)
    res = Results("p1_test", "smoke")
    jobs = ChapterJobs(wb, "p1_test", None, specs=[ft, graft], results=res)
    assert res.meta["jobs"]["unused"] == [ft.id, graft.id]
    mask, meta = jobs.artifact(graft)  # its upstream fine-tune first
    assert jobs.one(role="table2") == ft and jobs.deps(graft, "finetune") == [ft]
    assert res.meta["jobs"] == {"chapter": "p1_test", "declared": 2, "obtained": 2,
                                "by_kind": {"finetune": [1, 1], "graft": [1, 1]}, "unused": []}
    # the FT computed, loaded read-only as the graft's input (as on a node), the graft computed
    assert [e["computed"] for e in wb.ledger] == [True, False, True] and mask.count() == meta["count"]
    again = jobs.value(graft)  # a second ask loads the stored artifact
    assert again == mask and wb.ledger[-1]["computed"] is False


def test_a_batch_kernel_reports_its_jobs_for_the_progress_line(wb, tmp_path, monkeypatch):
    import json

    from repro.paths import JOBS_PROGRESS_ENV

    monkeypatch.setenv(JOBS_PROGRESS_ENV, str(tmp_path / "jobs.json"))
    ft = finetune_job(wb.profile, "p1_test", "SST-2", wb.profile.p1_finetune)
    graft = graft_job(wb.profile, "p1_test", "SST-2", ft, 1e-2)
    jobs = ChapterJobs(wb, "p1_test", None, specs=[ft, graft])
    jobs.artifact(ft)
    record = json.loads((tmp_path / "jobs.json").read_text())
    assert (record["declared"], record["obtained"]) == (2, 1)
    assert record["cost_done"] == ft.cost and record["cost_total"] == ft.cost + graft.cost


def test_the_jobs_on_another_workbench_keep_the_notebooks_clock(wb, tmp_path, monkeypatch):
    """ChapterJobs.on (another Workbench of the notebook, e.g. a later seed's) reports one record with the notebook's
    start, so the time left extrapolates from the first job, not from when the other Workbench appeared."""
    import json
    import time

    from repro.paths import JOBS_PROGRESS_ENV

    monkeypatch.setenv(JOBS_PROGRESS_ENV, str(tmp_path / "jobs.json"))
    ft = finetune_job(wb.profile, "p1_test", "SST-2", wb.profile.p1_finetune)
    jobs = ChapterJobs(wb, "p1_test", None, specs=[ft])
    first = json.loads((tmp_path / "jobs.json").read_text())["started"]
    time.sleep(0.05)
    other = jobs.on(wb)
    record = json.loads((tmp_path / "jobs.json").read_text())
    assert record["started"] == pytest.approx(first, abs=0.02) and record["seconds"] >= 0.05
    assert other.obtained is jobs.obtained
