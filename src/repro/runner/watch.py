"""Progress where people wait: which notebook and cell is running, for how long, and how long is left.

:func:`watched_engine` is a papermill engine that reports each code cell as it starts; :class:`CellProgress` turns
that into lines such as::

    p1_appendix: cell 7/21 `tab5 = table5(wb, plan)` · 35 s elapsed · ~1 min 20 s left (last run 2 min 5 s)
    p1_localization: cell 6/23 `runs2, outs2 = table2_runs(jobs)` · 12 min elapsed · jobs 9/35 (31% of their cost; ~26 min left)

The jobs part comes from the kernel's :class:`repro.jobcall.ChapterJobs` (the declared jobs obtained so far and their
share of the plan's estimated cost, in the file ``$REPRO_JOBS_PROGRESS``); its time left extrapolates the time spent
since the first job at the same cost rate.  The cell estimate comes from the per-cell durations of the notebook's previous run, kept in its sidecar
(``cell_seconds``; :mod:`repro.runner.execute`).  A line is printed when a cell starts (at most one every
``every`` seconds) and, during a long cell, every ``heartbeat`` seconds.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence


def fmt_seconds(s: float) -> str:
    """``42 s``, ``3 min 5 s``, ``1 h 2 min``."""
    s = int(round(max(s, 0.0)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


class CellProgress:
    """Reports one notebook's progress through ``log``; ``last_cells`` are the previous run's code-cell durations."""

    def __init__(self, notebook: str, log: Callable[[str], None], last_cells: Sequence[float] | None = None,
                 every: float = 10.0, heartbeat: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 jobs_file: Path | None = None) -> None:
        self.notebook, self.log, self.last = notebook, log, list(last_cells or [])
        self.jobs_file = jobs_file
        self.every, self.heartbeat, self.clock = every, heartbeat, clock
        self.start = clock()
        self.cell_start = self.start
        self.position = (0, 0, "")
        self.printed = -float("inf")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def estimate_left(self, index: int, total: int, in_cell: float) -> float | None:
        """Seconds left by the last run's durations (None without a comparable last run)."""
        if len(self.last) != total or index < 1:
            return None
        return max(sum(self.last[index - 1:]) - in_cell, 0.0)

    def line(self) -> str:
        index, total, first = self.position
        now = self.clock()
        parts = [f"{self.notebook}: cell {index}/{total}" + (f" `{first[:60]}`" if first else ""),
                 f"{fmt_seconds(now - self.start)} elapsed"]
        left = self.estimate_left(index, total, now - self.cell_start)
        if left is not None:
            parts.append(f"~{fmt_seconds(left)} left (last run {fmt_seconds(sum(self.last))})")
        jobs = self.jobs_line()
        if jobs:
            parts.append(jobs)
        return " · ".join(parts)

    def jobs_line(self) -> str:
        """``jobs 9/35 (31% of their cost; ~26 min left)`` from the kernel's jobs file ("" when there is none)."""
        try:
            j = json.loads(self.jobs_file.read_text()) if self.jobs_file else None
        except (OSError, ValueError):
            return ""
        if not j or not j.get("declared"):
            return ""
        done, total = float(j.get("cost_done", 0.0)), float(j.get("cost_total", 0.0))
        share = done / total if total > 0 else j["obtained"] / j["declared"]
        text = f"jobs {j['obtained']}/{j['declared']} ({share:.0%} of their cost"
        # the time since the notebook's jobs began, now (not at the last job's end: a fast first job, then a long
        # one running, would promise seconds left)
        spent = max(float(j.get("seconds", 0.0)), time.time() - float(j.get("started", time.time())))
        if 0 < share < 1 and spent > 0:
            text += f"; ~{fmt_seconds(spent * (1 - share) / share)} left"
        return text + ")"

    def cell_started(self, index: int, total: int, source: str) -> None:
        """Code cell ``index`` (1-based) of ``total`` starts."""
        lines = [ln for ln in source.strip().splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
        self.position = (index, total, lines[0].strip() if lines else "")
        self.cell_start = self.clock()
        if self.cell_start - self.printed >= self.every:
            self._emit()

    def _emit(self) -> None:
        self.printed = self.clock()
        self.log(self.line())

    def _beat(self) -> None:
        while not self._stop.wait(min(self.heartbeat, 5.0)):
            if self.clock() - self.printed >= self.heartbeat:
                self._emit()

    def __enter__(self) -> "CellProgress":
        if self.heartbeat > 0:
            self._thread = threading.Thread(target=self._beat, name=f"progress-{self.notebook}", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)


def watched_engine(progress: CellProgress) -> str:
    """Register (once per process) and return the name of a papermill engine that calls
    ``progress.cell_started`` as each code cell starts; the engine reads the current reporter from a class
    attribute, so one notebook at a time per process (the worker pool runs one notebook per process)."""
    from papermill.engines import NBClientEngine, papermill_engines  # heavy (~1 s): only to execute a notebook

    class _WatchedEngine(NBClientEngine):
        current: CellProgress | None = None

        @classmethod
        def execute_managed_notebook(cls, nb_man: Any, kernel_name: str, **kwargs: Any) -> Any:
            code = [i for i, c in enumerate(nb_man.nb.cells) if c.cell_type == "code"]
            original = nb_man.cell_start

            def cell_start(cell: Any, cell_index: int | None = None, **kw: Any) -> Any:
                out = original(cell, cell_index, **kw)
                if cls.current is not None and cell_index in code:
                    cls.current.cell_started(code.index(cell_index) + 1, len(code), cell.source)
                return out

            nb_man.cell_start = cell_start
            return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)

    name = "repro-watched"
    try:
        engine = papermill_engines.get_engine(name)
    except Exception:  # noqa: BLE001 - papermill raises its own PapermillException for an unknown engine
        papermill_engines.register(name, _WatchedEngine)
        engine = _WatchedEngine
    engine.current = progress
    return name
