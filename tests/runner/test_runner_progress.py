"""Progress where people wait: cell-by-cell lines with elapsed time and an estimate from the last run; executed
notebooks free of tqdm's IProgress warning."""

from __future__ import annotations

import json

import nbformat
import pytest

from repro.runner.execute import run_notebook
from repro.runner.watch import CellProgress, fmt_seconds


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_lines_name_the_cell_elapsed_time_and_the_estimate_from_the_last_run():
    clock, lines = Clock(), []
    p = CellProgress("p1_x", lines.append, last_cells=[1.0, 30.0, 60.0], every=10.0, heartbeat=0, clock=clock)
    p.cell_started(1, 3, "# a comment\nprofile = 'smoke'\n")
    assert lines == ["p1_x: cell 1/3 `profile = 'smoke'` · 0 s elapsed · ~1 min 31 s left (last run 1 min 31 s)"]
    clock.t = 1.0
    p.cell_started(2, 3, "wb = Workbench(PROFILE)")
    assert len(lines) == 1  # throttled: at most one line every 10 s
    clock.t = 31.0
    p.cell_started(3, 3, "table = run()")
    assert lines[-1] == "p1_x: cell 3/3 `table = run()` · 31 s elapsed · ~1 min 0 s left (last run 1 min 31 s)"
    clock.t = 51.0
    assert p.line().endswith("51 s elapsed · ~40 s left (last run 1 min 31 s)")


def test_no_estimate_without_a_comparable_last_run():
    lines = []
    p = CellProgress("p1_x", lines.append, last_cells=[1.0, 2.0], heartbeat=0, clock=Clock())
    p.cell_started(1, 3, "x = 1")
    assert lines == ["p1_x: cell 1/3 `x = 1` · 0 s elapsed"]
    assert fmt_seconds(3725) == "1 h 2 min" and fmt_seconds(59.6) == "1 min 0 s"


STUB = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# Stub

```{code-cell} ipython3
:tags: [parameters]

profile: str = "cpu"
output_dir: str = "results"
```

```{code-cell} ipython3
from repro.progress import progress_bar
from repro.report.results import NOT_REPRODUCED, Results

total = sum(progress_bar(range(3), enabled=True))
res = Results("p1_progress", profile, params={})
res.add_table("p1-table2", [dict(task="SST-2", method="FT", sparsity=None, metric="acc", value=None, std=None,
                                 paper=90.0)])
res.add_claim("p1-table2-a", "a claim", note=NOT_REPRODUCED)
res.save(output_dir)
```
"""


@pytest.mark.slow
def test_run_reports_cells_records_durations_and_leaves_no_tqdm_warning(tmp_path):
    nb = tmp_path / "p1_progress.md"
    nb.write_text(STUB)
    lines: list[str] = []
    run_notebook(str(nb), "smoke", output_dir=tmp_path / "out", log=lines.append)
    assert lines and lines[0].startswith("p1_progress: cell 1/3 ")  # injected parameters + 2 cells
    sidecar = json.loads((tmp_path / "out" / "smoke" / "p1_progress.cache.json").read_text())
    assert len(sidecar["cell_seconds"]) == 3 and all(s >= 0 for s in sidecar["cell_seconds"])
    executed = nbformat.read(tmp_path / "out" / "smoke" / "p1_progress.ipynb", as_version=4)
    text = json.dumps([c.get("outputs", []) for c in executed.cells])
    assert "IProgress" not in text and "TqdmWarning" not in text and "stderr" not in text
    lines.clear()
    run_notebook(str(nb), "smoke", output_dir=tmp_path / "out", log=lines.append)  # second run: an estimate
    assert "left (last run" in lines[0]


def test_parallel_build_starts_the_two_longest_notebooks_first():
    from repro.runner.notebooks import book_notebooks, schedule_order

    names = book_notebooks()
    order = schedule_order(names)
    assert order[:2] == ["p1_localization", "p2_task_arithmetic"] and sorted(order) == sorted(names)


def test_a_long_cell_says_how_many_declared_jobs_are_done_and_the_time_left(tmp_path):
    """Issue 34: the progress line reads the kernel's ChapterJobs record (jobs done / declared, cost share, time
    left at the same cost rate)."""
    import json

    from repro.runner.watch import CellProgress

    jobs = tmp_path / "jobs.json"
    lines: list[str] = []
    clock = iter([0.0, 0.0, 600.0, 600.0])
    p = CellProgress("p1_localization", lines.append, jobs_file=jobs, heartbeat=0, clock=lambda: next(clock))
    assert p.jobs_line() == ""  # no record yet
    jobs.write_text(json.dumps({"declared": 35, "obtained": 9, "cost_done": 25.0, "cost_total": 100.0,
                                "seconds": 600.0}))
    p.cell_started(6, 23, "runs2, outs2 = table2_runs(jobs)")
    assert lines[-1].endswith("jobs 9/35 (25% of their cost; ~30 min 0 s left)")
    # a fast first job, then a long one still running: the rate is taken now, not at the last job's end
    import time

    jobs.write_text(json.dumps({"declared": 35, "obtained": 1, "cost_done": 1.0, "cost_total": 100.0,
                                "seconds": 0.3, "started": time.time() - 65.0}))
    left = p.jobs_line().split("~")[1]
    assert left.startswith(("1 h 47 min", "1 h 48 min")), left
