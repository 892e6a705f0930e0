"""``repro rehearse``: the paper DAG end to end on a CPU, before any GPU runs it (issue 31 §3).

The ``paper-rehearsal`` profile (:mod:`repro.profiles`) is the paper profile with the paper plans (every job of
``repro plan --profile paper``, per notebook and kind; the jobs' kwargs name the paper's models) on tiny random-init
stand-ins of the paper's model classes, fixture folders shaped like the real datasets
(:func:`repro.data.fixtures.make_fixture_tree`: real task and label names, real split names, per-label counts
divided by 64) and 2-step recipes.  A rehearsal:

1. writes the fixture tree (``<dir>/data``);
2. runs ``workflow/Snakefile`` through the local profile (``workflow/profiles/local``): every job as
   ``repro job run ID`` in its own process, upstream artifacts read-only; then every notebook's render with the store
   read-only (a render that would compute anything fails naming the artifact); then the book (target ``book``; or
   the renders alone, target ``notebooks``);
   With ``in_process`` the jobs themselves run first in ``cores`` long-lived worker processes instead
   (:class:`repro.jobrun.JobRunner`, the very code of ``repro job run``: a fresh Workbench per job, upstream
   artifacts read-only, the same done-markers), each as soon as its upstream jobs are done; Snakemake then finds
   every job done and runs the renders and the book.  A job process costs
   about 12 CPU-seconds of imports and set-up on 2 cores (open_clip, torchvision, transformers), which for the 1,076
   jobs of the vision plan is over an hour before any job computes; in one process it is paid once.
3. checks what the DAG produced: a done-marker for every job of the plan (a job the DAG never reached is a failure
   naming its id), a results file for every notebook, and in each results file ``meta["jobs"]``: the notebook asked
   for every job its chapter declares (:class:`repro.jobcall.ChapterJobs`).

``python -m repro.rehearsal --family vision [--only NB ...] [--dir DIR] [--cores N] [--target book|notebooks]``
(``repro rehearse`` from the runner).  Exit status: 0 when every check holds, 1 otherwise, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from repro.chapters import chapter_names, get_chapter
from repro.data.fixtures import make_fixture_tree
from repro.inventory import inventory
from repro.jobrun import JobRunner, done_path
from repro.paths import repo_root, results_path
from repro.runner.workflow import pending

PROFILE = "paper-rehearsal"
FAMILIES: tuple[str, ...] = ("vision", "nlp")
TARGETS: tuple[str, ...] = ("book", "notebooks")


@dataclass
class Rehearsal:
    """What one rehearsal ran and found: the plan's jobs per kind, the notebooks rendered, the problems (each one line
    naming a job id or a notebook) and the wall time."""

    family: str
    notebooks: list[str]
    jobs: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0
    snakemake_rc: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems and self.snakemake_rc == 0

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.jobs.items()))
        head = (f"rehearsal {'passed' if self.ok else 'FAILED'}: profile {PROFILE}, family {self.family}, "
                f"{sum(self.jobs.values())} jobs ({kinds}), {len(self.notebooks)} notebooks, "
                f"{self.seconds / 60:.1f} min")
        return "\n".join([head, *(f"  {p}" for p in self.problems)])


def snakemake_command(family: str, root: Path, only: Sequence[str], cores: int, target: str) -> list[str]:
    """The Snakemake call of a rehearsal (the local profile; ``cores`` jobs side by side)."""
    workflow = repo_root() / "workflow"
    config = [f"profile={PROFILE}", f"family={family}", f"data={root / 'data'}", f"artifacts={root / 'artifacts'}",
              f"results={root / 'results'}", f"repro={sys.executable} -m repro.runner.cli"]
    if only:
        config.append(f"only={','.join(only)}")
    return [sys.executable, "-m", "snakemake", "-s", str(workflow / "Snakefile"), "--profile",
            str(workflow / "profiles" / "local"), "--cores", str(cores), "--resources", f"gpu={cores}",
            "--config", *config, "--", target]


def _chapters(notebooks: Sequence[str]) -> list[str]:
    """The chapters among ``notebooks``: those with jobs and a render (not the reference pages, e.g. Performance)."""
    return [n for n in notebooks if get_chapter(n).paper]


def check_outputs(family: str, root: Path, notebooks: Sequence[str]) -> tuple[Counter, list[str]]:
    """The plan's jobs per kind, and one line per problem: a job without a done-marker, a notebook without results,
    a notebook that never asked for some of its declared jobs."""
    jobs = inventory(PROFILE, _chapters(notebooks), family)
    problems = [f"job {j.id} ({j.kind}, {', '.join(j.notebooks)}): never run (no done-marker)"
                for j in jobs if not done_path(j.id, root / "artifacts").exists()]
    for nb in notebooks:
        path = results_path(root / "results", PROFILE, nb)
        if not path.exists():
            problems.append(f"notebook {nb}: no render ({path})")
            continue
        record = json.loads(path.read_text()).get("meta", {}).get("jobs")
        if get_chapter(nb).paper and record is None:
            problems.append(f"notebook {nb}: its results record no jobs (it does not obtain artifacts through "
                            "ChapterJobs)")
        elif record and record["unused"]:
            problems.append(f"notebook {nb}: {len(record['unused'])} declared jobs never asked for, e.g. "
                            f"{record['unused'][0]}")
    return Counter(j.kind for j in jobs), problems


_RUNNER: JobRunner | None = None


def _start_worker(family: str, notebooks: Sequence[str], root: str) -> None:
    """A worker process's set-up: the plan and its job runner, built once (the imports are paid once per worker)."""
    global _RUNNER
    os.environ.setdefault("TQDM_DISABLE", "1")  # a batch run: one progress line per 25 jobs, no bars
    jobs = inventory(PROFILE, _chapters(notebooks), family)
    _RUNNER = JobRunner({j.id: j for j in jobs}, data_dir=Path(root) / "data", artifacts=Path(root) / "artifacts",
                        plan=f"{PROFILE} --family {family}")


def _run_one(job_id: str) -> str | None:
    """One job in a worker (:meth:`repro.jobrun.JobRunner.run`); the error as a line, None when it ran."""
    assert _RUNNER is not None
    try:
        _RUNNER.run(job_id)
        return None
    except Exception as e:  # noqa: BLE001 - every failure is reported with its job id (UpstreamMissing too)
        return f"{type(e).__name__}: {e}"


def run_in_process(family: str, notebooks: Sequence[str], root: Path, workers: int = 2) -> list[str]:
    """Every job of the plan of ``notebooks`` without a trustworthy done-marker (:func:`repro.runner.workflow.pending`),
    in ``workers`` long-lived processes, each job as soon as its upstream jobs are done (the very code of ``repro
    job run``: :class:`repro.jobrun.JobRunner`); returns one line per failed job (its id and the error).  A job whose
    upstream job failed is not run and is reported as such."""
    jobs = inventory(PROFILE, _chapters(notebooks), family)
    undone = set(pending([j.to_dict() for j in jobs], root / "artifacts"))  # once: every marker is read
    todo = {j.id: j for j in jobs if j.id in undone}
    failed: dict[str, str] = {}
    done: set[str] = set()
    running: dict[Any, str] = {}
    start = time.perf_counter()
    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter per worker (torch and threads)
    with cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_start_worker,
                                initargs=(family, list(notebooks), str(root))) as pool:
        while todo or running:
            blocked = [i for i, j in todo.items() if any(d in failed for d in j.deps)]
            for i in blocked:
                failed[i] = f"not run: an upstream job failed ({next(d for d in todo[i].deps if d in failed)})"
                del todo[i]
            ready = [i for i, j in todo.items() if not any(d in todo or d in running.values() for d in j.deps)]
            for i in ready[:max(0, 2 * workers - len(running))]:
                running[pool.submit(_run_one, i)] = i
                del todo[i]
            if not running:
                continue
            finished, _ = cf.wait(list(running), return_when=cf.FIRST_COMPLETED)
            for fut in finished:
                i = running.pop(fut)
                error = fut.result()
                if error:
                    failed[i] = error
                else:
                    done.add(i)
                n = len(done) + len(failed)
                if n % 25 == 0 or not (todo or running):
                    print(f"rehearsal: {n} jobs run in {workers} worker processes, {len(failed)} failed, "
                          f"{time.perf_counter() - start:.0f} s", flush=True)
    by_id = {j.id: j for j in jobs}
    return [f"job {i} ({by_id[i].kind}, {', '.join(by_id[i].notebooks)}): {e}" for i, e in failed.items()]


def rehearse(family: str, only: Sequence[str] = (), root: str | Path | None = None, cores: int = 2,
             target: str = "book", in_process: bool = False) -> Rehearsal:
    """Run the rehearsal of ``family`` for ``only`` (default every notebook) under ``root`` (default a new
    temporary folder) and check what it produced."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {list(FAMILIES)}")
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; choose one of {list(TARGETS)}")
    names = list(chapter_names())
    unknown = [n for n in only if n not in names]
    if unknown:
        raise ValueError(f"unknown notebooks {unknown}; choose from {names}")
    notebooks = list(only) or names
    root = Path(root) if root else Path(tempfile.mkdtemp(prefix="repro-rehearsal-"))
    root.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if not (root / "data").is_dir():
        make_fixture_tree(root / "data", "all")
    failed = run_in_process(family, notebooks, root, cores) if in_process else []
    cmd = snakemake_command(family, root, only, cores, target)
    print("$ " + " ".join(cmd), flush=True)
    rc = subprocess.call(cmd, cwd=repo_root(), env={**os.environ, "REPRO_ARTIFACTS": str(root / "artifacts")})
    # the renders are the chapters' (workflow's `render` rule); a page without a package (Performance) only the book's
    rendered = notebooks if target == "book" else _chapters(notebooks)
    kinds, problems = check_outputs(family, root, rendered)
    return Rehearsal(family, notebooks, kinds, failed + problems, time.perf_counter() - start, rc)


def main(argv: Sequence[str] | None = None) -> int:
    """``repro rehearse``: see the module docstring."""
    parser = argparse.ArgumentParser(prog="repro rehearse", description="the paper DAG on tiny models, end to end")
    parser.add_argument("--family", choices=FAMILIES, default="vision", help="P2 model family of the P2 notebooks")
    parser.add_argument("--only", nargs="+", default=[], metavar="NOTEBOOK", help="these notebooks (default all)")
    parser.add_argument("--dir", default=None, help="working folder: data/, artifacts/, results/ (default: a new "
                                                    "temporary folder; an existing one resumes)")
    parser.add_argument("--cores", type=int, default=2, help="jobs side by side (default 2)")
    parser.add_argument("--target", choices=TARGETS, default="book", help="book (default) or notebooks (no HTML)")
    parser.add_argument("--in-process", action="store_true", help="run the jobs in this process first (the same "
                                                                   "job runner; Snakemake then renders)")
    args = parser.parse_args(argv)
    try:
        report = rehearse(args.family, args.only, args.dir, args.cores, args.target, args.in_process)
    except ValueError as e:
        print(f"repro rehearse: error: {e}", file=sys.stderr)
        return 2
    print(report.summary())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["FAMILIES", "PROFILE", "Rehearsal", "check_outputs", "main", "rehearse", "run_in_process", "snakemake_command"]
