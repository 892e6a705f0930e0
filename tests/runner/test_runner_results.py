"""Results that match their notebook: the runner's sidecar, the completed-status check, staging into the book."""

from __future__ import annotations

import json

import nbformat
import pytest

from repro.report.results import Results
from repro.runner import build, execute
from repro.runner.execute import check_run, file_sha256, run_notebook, sidecar_path, write_sidecar

STUB_HEADER = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
               "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n")
STUB = STUB_HEADER + """# Stub {title}

```{{code-cell}} ipython3
:tags: [parameters]

profile: str = "cpu"
seed: int = 13
output_dir: str = "results"
```

```{{code-cell}} ipython3
from repro.report.results import NOT_REPRODUCED, Results

res = Results("{name}", profile, params={{"seed": seed}})
res.add_table("p1-table2", [dict(task="SST-2", method="FT", sparsity=None, metric="acc", value=None, std=None,
                                 paper=90.0)])
res.add_claim("p1-table2-a", "a claim", note=NOT_REPRODUCED)
res.save(output_dir)
```
"""


ROW = dict(task="SST-2", method="FT", sparsity=None, metric="acc", value=None, std=None, paper=90.0)


def _executed(path, statuses=("completed", "completed")):
    nb = nbformat.v4.new_notebook()
    for s in statuses:
        cell = nbformat.v4.new_code_cell("x = 1")
        cell.metadata["papermill"] = {"status": s}
        nb.cells.append(cell)
    nb.metadata["papermill"] = {"exception": None}
    nbformat.write(nb, path)


def _results(folder, name="p1_a", profile="smoke", seed=13):
    res = Results(name, profile, params={"seed": seed})
    res.add_table("p1-table2", [ROW])
    res.add_claim("p1-table2-a", "a claim", note="not yet reproduced")
    return res.save(folder)


def _recorded_run(folder, name="p1_a", profile="smoke", params=None, statuses=("completed", "completed")):
    res_path = _results(folder, name, profile)
    executed = res_path.with_suffix(".ipynb")
    _executed(executed, statuses)
    write_sidecar(sidecar_path(res_path), {
        "key": "k", "seconds": 1.0, "profile": profile,
        "params": params if params is not None else {"profile": profile, "output_dir": str(folder)},
        "executed_sha256": file_sha256(executed), "results_sha256": file_sha256(res_path)})
    return executed, res_path


def test_a_recorded_complete_run_passes_the_check(tmp_path):
    executed, res_path = _recorded_run(tmp_path)
    info, why = check_run(executed, res_path)
    assert why is None and info["key"] == "k"


@pytest.mark.parametrize("damage,reason", [
    (lambda e, r: sidecar_path(r).unlink(), "no runner record"),
    (lambda e, r: sidecar_path(r).write_text("{trunc"), "unreadable"),
    (lambda e, r: r.write_text(r.read_text()[:40]), "invalid"),
    (lambda e, r: r.write_text(""), "invalid"),
    (lambda e, r: r.write_text('{"tables": {}, "figures": {}, "claims": []}'), "invalid"),
    (lambda e, r: r.write_bytes(b"\xff\xfe\x00"), "invalid"),
    (lambda e, r: _results(r.parent.parent, seed=21), "rewritten after the recorded run"),  # JupyterLab / another seed
    (lambda e, r: e.unlink(), "is missing"),
    (lambda e, r: _executed(e, ("completed", "completed", "completed")), "rewritten after the recorded run"),
])
def test_anything_but_the_recorded_files_fails_the_check(tmp_path, damage, reason):
    executed, res_path = _recorded_run(tmp_path)
    damage(executed, res_path)
    assert reason in check_run(executed, res_path)[1]


def test_a_half_executed_notebook_fails_the_check_even_with_matching_hashes(tmp_path):
    executed, res_path = _recorded_run(tmp_path, statuses=("completed", "running"))
    assert "half-executed" in check_run(executed, res_path)[1]
    assert "code cell 2 of 2 is running" in execute.notebook_incomplete(executed)


def _fake_book(root, names):
    (root / "pyproject.toml").write_text("")
    (root / "src" / "repro").mkdir(parents=True)
    (root / "book" / "reference").mkdir(parents=True)
    (root / "notebooks").mkdir()
    toc = "format: jb-book\nroot: intro\nchapters:\n" + "".join(f"  - file: executed/{n}\n" for n in names)
    (root / "book" / "_toc.yml").write_text(toc)
    for n in names:
        (root / "notebooks" / f"{n}.md").write_text(STUB.format(title=n, name=n))


def test_book_stages_only_recorded_complete_runs_with_the_books_parameters(tmp_path, monkeypatch):
    names = ["p1_good", "p1_killed", "p1_lab", "p1_seed"]
    _fake_book(tmp_path, names)
    monkeypatch.setenv("REPRO_ROOT", str(tmp_path))
    monkeypatch.setattr(build, "run_jupyter_book", lambda **kw: 0.0)
    monkeypatch.setattr(build, "run_many", lambda jobs, n, log: ({}, None))  # nothing to execute: all staged
    out = tmp_path / "results"
    params = {"output_dir": "results", "profile": "smoke"}
    _recorded_run(out, "p1_good", params=params)
    _recorded_run(out, "p1_killed", params=params, statuses=("completed", "running"))
    _, lab = _recorded_run(out, "p1_lab", params=params)
    _results(out, "p1_lab", seed=21)  # rewritten from JupyterLab after the recorded run
    _recorded_run(out, "p1_seed", params={**params, "seed": 21})
    lines: list[str] = []
    report = build.build_book("smoke", only=["p1_good"], output_dir=out, log=lines.append)
    assert [r.notebook for r in report.runs] == ["p1_good"]
    assert report.missing == ["p1_killed", "p1_lab", "p1_seed"]
    staged = tmp_path / "book" / "executed"
    assert "papermill" in (staged / "p1_good.ipynb").read_text()
    for name in report.missing:
        assert "was not executed" in (staged / f"{name}.ipynb").read_text()
    text = "\n".join(lines)
    assert "p1_killed: not staged: executed notebook" in text and "half-executed" in text
    assert "p1_lab: not staged: results JSON" in text and "other parameters" in text


@pytest.mark.slow
def test_cached_reruns_over_a_foreign_truncated_or_half_executed_run(tmp_path):
    """`repro run --cached`: a hit only for the runner's own complete run; otherwise a re-run with one notice."""
    nb = tmp_path / "p1_stub.md"
    nb.write_text(STUB.format(title="s", name="p1_stub"))
    out = tmp_path / "out"
    lines: list[str] = []
    run = lambda: run_notebook(str(nb), "smoke", output_dir=out, use_cache=True, log=lines.append)  # noqa: E731
    notices = lambda: [ln for ln in lines if "re-running" in ln]  # noqa: E731  (the rest are progress lines)
    assert run().status == "ran" and not notices()
    info = json.loads((out / "smoke" / "p1_stub.cache.json").read_text())
    assert set(info) >= {"key", "executed_sha256", "results_sha256", "seconds"}
    assert run().status == "cached"
    res_path = out / "smoke" / "p1_stub.json"
    res_path.write_text(res_path.read_text()[:50])  # truncated
    assert run().status == "ran" and len(notices()) == 1
    assert "invalid" in notices()[0] and notices()[0].startswith("p1_stub: results JSON")
    nbf = nbformat.read(out / "smoke" / "p1_stub.ipynb", as_version=4)
    nbf.cells[-1].metadata.papermill["status"] = "running"  # as a killed run leaves it
    nbformat.write(nbf, out / "smoke" / "p1_stub.ipynb")
    assert run().status == "ran" and "rewritten" in notices()[-1]
    assert run().status == "cached"


def test_book_family_reaches_the_p2_notebooks_only(monkeypatch):
    """``repro book --family nlp`` runs the P2 pages with ``model_family`` nlp, as the workflow's renders do (their
    cached executions are then reused: the rehearsal's book re-executed every P2 page with the default family)."""
    from repro.chapters import get_chapter
    from repro.runner import build, cli

    captured = {}

    class Stop(Exception):
        pass

    def fake_run_many(job_args, jobs, log):
        captured.update({kw["name"]: kw["params"] for kw in job_args})
        raise Stop

    monkeypatch.setattr(build, "run_many", fake_run_many)
    with pytest.raises(Stop):
        build.build_book("smoke", family="nlp", log=lambda line: None)
    assert captured and all((p.get("model_family") == "nlp") == (get_chapter(n).paper == "p2")
                            for n, p in captured.items() if n != "performance"), captured
    seen = {}
    monkeypatch.setattr(build, "build_book", lambda **kw: seen.update(kw))
    assert cli.main(["book", "--profile", "smoke", "--family", "vision"]) == 0 and seen["family"] == "vision"
