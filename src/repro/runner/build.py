"""Building the book: stage the executed notebooks into ``book/executed``, write the claims page and the build
info, run jupyter-book.

Layout (everything under ``results/`` and ``book/executed/`` is generated and git-ignored)::

    notebooks/<name>.md                    jupytext MyST sources (what you edit; open them in JupyterLab)
    results/<profile>/<name>.ipynb         the executed copy (kept on failure, for inspection)
    results/<profile>/<name>.json          the results JSON the notebook wrote (repro.report.results)
    results/<profile>/<name>.cache.json    the runner's record of a complete run: cache key, parameters, sha256 of
                                           the executed copy and the results JSON, run time, per-cell durations
    book/executed/<name>.ipynb             the copy the book renders (staged from the profile being built)
    book/executed/claims_body.md           the generated claims table (included by book/claims.md)
    book/executed/departures_body.md       the departures of the paper profile (included by book/departures.md)
    book/executed/data_body.md             every task the profile reads, real or generated (book/generated_tasks.md)
    book/executed/build_info.md            profile / date / what ran (included by book/intro.md)
    book/executed/book_facts.md            the settings, the measured cpu build time, the paper profile's GPU-hours
                                           (from benchmarks/*.json; included by book/intro.md)
    results/<profile>.build.json           this build's record: wall and Sphinx seconds, each notebook's time
    book/_build/html/                      the HTML book

``book/_toc.yml`` is the single list of book notebooks (its ``executed/<name>`` entries); ``_config.yml`` at the
repository root has ``execute_notebooks: "off"``, so Jupyter Book only renders what papermill executed.  The
Sphinx step alone is ``jupyter-book build book --config _config.yml --path-output book`` (after ``repro book``
has staged ``book/executed/``).

A notebook is re-executed when the hash of (its source, its parameters, the profile, the code and tables it can
read: :func:`repro.runner.execute.source_fingerprint`, the data files it reads:
:data:`repro.runner.notebooks.INPUT_FILES`, e.g. ``results/bench.json`` for the Performance page) changed, or
when :func:`repro.runner.execute.check_run` finds that its executed copy and results JSON are not the ones the
runner recorded after a complete run (a run from JupyterLab or plain papermill, another seed, a killed run, a
truncated file).  Only such recorded runs are staged into ``book/executed``; anything else gets a placeholder
page and a one-line notice.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import nbformat

from repro.paths import book_dir, repo_root, resolve_path, results_path
from repro.profiles import PROFILES
from repro.chapters import write_toc
from repro.report.results import ResultsError, load_results, validate
from repro.departures import departures_markdown
from repro.report.book_facts import GPU_HOURS_FILE, book_facts_markdown
from repro.report.claims_page import claims_page_markdown
from repro.report.matrix import (SettingRuns, default_family, discover, families_line, matrix_markdown,
                                 paper_gpu_hours, setting_of, setting_order)
from repro.runner.execute import (RunResult, check_run, kernel_params, param_path, run_many,
                                  source_fingerprint, utc_now)
from repro.runner.notebooks import (KERNEL, ParameterError, book_notebooks, notebook_parameters,
                                    notebook_title, schedule_order)


class BuildError(RuntimeError):
    """The book build stopped (a notebook failed, a results file is invalid, or Sphinx failed)."""


@dataclass
class BuildReport:
    profile: str
    runs: list[RunResult]
    missing: list[str]
    html: str
    seconds: float
    sphinx_seconds: float

    def summary(self) -> str:
        width = max([len(r.notebook) for r in self.runs] + [len(m) for m in self.missing] + [8])
        lines = [f"{'notebook':<{width}}  status   seconds"]
        for r in self.runs:
            note = "" if r.status == "ran" else " (time of the cached run)"
            lines.append(f"{r.notebook:<{width}}  {r.status:<7}  {r.seconds:7.1f}{note}")
        for m in self.missing:
            lines.append(f"{m:<{width}}  missing        -  (not executed for this profile: placeholder page)")
        ran = sum(r.status == "ran" for r in self.runs)
        cached = sum(r.status == "cached" for r in self.runs)
        lines += ["", f"{ran} ran, {cached} cached, {len(self.missing)} missing; jupyter-book "
                      f"{self.sphinx_seconds:.1f} s; total {self.seconds:.1f} s",
                  f"HTML: {self.html}"]
        return "\n".join(lines)


def _copy_if_changed(src: Path, dst: Path) -> None:
    if dst.exists() and dst.read_bytes() == src.read_bytes():
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def _write_if_changed(dst: Path, text: str) -> None:
    if dst.exists() and dst.read_text() == text:
        return
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(text)


def data_page_body(profile: str) -> str:
    """The data table of ``profile`` (``python -m repro.data_page``, in a subprocess: the runner does not import
    the data package); on failure, one line saying why instead of the table."""
    proc = subprocess.run([sys.executable, "-m", "repro.data_page", "--profile", profile], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(repo_root()))
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return f"*The data table of the {profile} profile could not be built: {last}*"
    return proc.stdout.strip()


def _placeholder(name: str, profile: str) -> str:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": KERNEL}
    nb.cells.append(nbformat.v4.new_markdown_cell(
        f"# {notebook_title(name)}\n\n```{{note}}\nThis notebook was not executed for the `{profile}` profile in this "
        f"build. Run `repro book --profile {profile} --only {name}` to execute it.\n```\n"))
    return nbformat.writes(nb)


def build_info_markdown(profile: str, results: dict[str, dict[str, Any]], runs: dict[str, RunResult],
                        names: list[str], missing: list[str], built: str | None = None) -> str:
    """The intro's "what this build ran" line: profile and model, device(s), how many notebooks ran and how long
    their execution took (the runner's recorded run times), when it was built; all from the results and records."""
    metas = [r.get("meta") or {} for r in results.values()]
    devices = sorted({str(m["device"]) for m in metas if m.get("device")})
    seconds = sum(r.seconds for r in runs.values())
    minutes = f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"
    built = built or utc_now()[:16].replace("T", " ") + " UTC"
    line = (f"**This build** ran profile **{profile}** (`{PROFILES[profile].model}`)"
            + (f" on {', '.join(devices)}" if devices else "")
            + f": {len(runs)} of {len(names)} notebooks, {minutes} of notebook execution in all (the recorded run "
            f"time of each, on the machine that ran it); built {built}"
            + (f"; not executed for this profile: {', '.join(missing)}" if missing else "") + ".")
    return line + "\n"


def matrix_settings(output_dir: str | Path, profile: str, results: dict[str, dict[str, Any]]) -> list[SettingRuns]:
    """The settings of the claims matrix: every complete recorded run under ``output_dir``
    (:func:`repro.report.matrix.discover` with :func:`check_run`), where the profile being built shows exactly
    the ``results`` staged into this book."""
    def check(results_json: Path) -> str | None:
        return check_run(results_json.with_suffix(".ipynb"), results_json)[1]

    found = discover(resolve_path(output_dir), check, shown_profile=profile)
    staged: dict[str, SettingRuns] = {}
    for name, res in results.items():
        setting = setting_of(results_path(output_dir, profile, name), res)
        staged.setdefault(setting.key, SettingRuns(setting)).results[name] = res
    keep = [r for r in found if r.setting.profile != profile]
    for r in found:  # a notebook of the built profile run again in another family (into a folder of its own)
        for name, res in r.results.items():
            if r.setting.profile == profile and r.setting.family != default_family(profile, name):
                staged.setdefault(r.setting.key, SettingRuns(r.setting)).results.setdefault(name, res)
    return sorted(list(staged.values()) + keep, key=lambda r: setting_order(r.setting, profile))


def build_record_path(output_dir: str | Path, profile: str) -> Path:
    """``results/<profile>.build.json``: beside the profile's folder, so no results reader takes it for a
    notebook's results."""
    return resolve_path(output_dir) / f"{profile}.build.json"


def _git_commit() -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo_root(), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def write_build_record(path: Path, report: BuildReport, jobs: int) -> dict[str, Any]:
    """The build's own record of its times (the format of ``benchmarks/cpu_book_build.json``): wall and Sphinx
    seconds, each notebook's run time and whether it ran now or came from the cache, cores, jobs, commit, date.
    ``from_empty_store`` is true when every notebook ran (a first build's time, the one the intro quotes)."""
    record = {"profile": report.profile, "command": f"repro book --profile {report.profile} --jobs {jobs}",
              "commit": _git_commit(), "date": utc_now()[:10], "finished": utc_now(),
              "from_empty_store": bool(report.runs) and not report.missing
              and all(r.status == "ran" for r in report.runs),
              "cores": os.cpu_count(), "jobs": jobs, "wall_seconds": round(report.seconds, 1),
              "sphinx_seconds": round(report.sphinx_seconds, 1),
              "notebooks": {r.notebook: {"status": r.status, "seconds": round(r.seconds, 1)} for r in report.runs},
              "missing": list(report.missing)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    os.replace(tmp, path)
    return record


def run_jupyter_book(warnings_as_errors: bool = False, log: Callable[[str], None] = print) -> float:
    """``jupyter-book build book --config _config.yml --path-output book`` (the toc is ``book/_toc.yml``) into
    ``book/_build/html``; ``-W --keep-going --all`` with ``warnings_as_errors``."""
    root = repo_root()
    cmd = [sys.executable, "-c", "from jupyter_book.cli.main import main; main()", "build", str(book_dir()),
           "--config", str(root / "_config.yml"), "--toc", str(book_dir() / "_toc.yml"),
           "--path-output", str(book_dir()), "-q"]
    if warnings_as_errors:
        cmd += ["-W", "--keep-going", "--all"]  # a fresh full build, so every page's warnings are seen
    log("$ jupyter-book build book --config _config.yml --path-output book -q"
        + (" -W --keep-going --all" if warnings_as_errors else ""))
    start = time.time()
    proc = subprocess.run(cmd, cwd=root, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.strip()
    if out:
        log(out)
    if proc.returncode != 0:
        raise BuildError(f"jupyter-book build failed (exit {proc.returncode})"
                         + (" — warnings are errors with --warnings-as-errors" if warnings_as_errors else ""))
    return time.time() - start


def build_book(profile: str = "cpu", only: Iterable[str] | None = None, jobs: int = 1,
               warnings_as_errors: bool = False, output_dir: str | Path = "results", data_dir: str | None = None,
               force: bool = False, log: Callable[[str], None] = print, device: str | None = None,
               precision: str | None = None, family: str = "") -> BuildReport:
    """Execute the book's notebooks for ``profile`` (cached), regenerate the claims page, build the HTML.

    ``family`` ("vision" / "nlp" / "text"; "" = each notebook's default) is the P2 notebooks' ``model_family``, as
    ``repro run NB -p model_family F`` and the workflow's renders pass it: a book of the nlp family's renders reuses
    them instead of re-executing the P2 pages with the profile's default family.

    ``only`` restricts execution to some notebooks (the others use their executed copy from an earlier build, or a
    placeholder page).  ``jobs`` > 1 runs notebooks in parallel processes.  ``data_dir`` is passed to notebooks
    that declare a ``data_dir`` parameter.  ``force`` ignores the cache.  A failing notebook stops the build with a
    :class:`BuildError` naming it, the failing cell and the error (its executed copy is kept).
    """
    t0 = time.time()
    if profile not in PROFILES:
        raise ParameterError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
    names = book_notebooks()
    selected = list(dict.fromkeys(Path(n).stem for n in only)) if only else list(names)
    unknown = [n for n in selected if n not in names]
    if unknown:
        raise ParameterError(f"unknown notebook(s) {unknown}; the book's notebooks are {names}")
    if jobs < 1:
        raise ParameterError("--jobs must be >= 1")
    out_rel = param_path(str(output_dir), keep_relative=True)
    fingerprints = {n: source_fingerprint(n) for n in selected}  # each notebook's own import closure
    threads = max(1, (os.cpu_count() or 1) // jobs) if jobs > 1 else None  # parallel kernels split the cores

    job_args = []
    book_params: dict[str, dict[str, Any]] = {}  # what the book runs each notebook with (fail fast if invalid)
    for name in names:
        declared = notebook_parameters(name)
        params: dict[str, Any] = {}
        if data_dir and "data_dir" in declared:
            params["data_dir"] = data_dir
        if device and "device" in declared:  # --device: every notebook's device parameter (repro.device)
            params["device"] = device
        if precision and "precision" in declared:  # --precision: likewise, the notebooks' precision parameter
            params["precision"] = precision
        if family and "model_family" in declared:  # --family: the P2 notebooks' model family
            params["model_family"] = family
        book_params[name] = kernel_params(name, profile, params, out_rel, declared)
        if name not in selected:
            continue
        job_args.append(dict(name=name, profile=profile, params=params, output_dir=out_rel, use_cache=not force,
                             fingerprint=fingerprints[name], threads=threads))

    log(f"repro book: profile={profile}, {len(selected)} of {len(names)} notebooks to execute (cached when "
        f"unchanged), jobs={jobs}")
    if jobs > 1:  # the two longest notebooks start first
        order = schedule_order([kw["name"] for kw in job_args])
        job_args.sort(key=lambda kw: order.index(kw["name"]))
    runs, failure = run_many(job_args, jobs, log)
    if failure is not None:
        raise BuildError(f"build stopped: {failure}")

    # every book notebook: executed now, or from an earlier build of this profile, or a placeholder
    results: dict[str, dict[str, Any]] = {}
    missing: list[str] = []
    staged = book_dir() / "executed"
    for name in names:
        res_path = results_path(out_rel, profile, name)
        executed = res_path.with_suffix(".ipynb")
        if name not in runs:
            info, why = check_run(executed, res_path)
            if why is None and (info.get("profile", profile) != profile
                                or {k: v for k, v in info.get("params", {}).items() if k != "output_dir"}
                                != {k: v for k, v in book_params[name].items() if k != "output_dir"}):
                why = (f"its last run used other parameters ({info.get('params')}) than the book "
                       f"({book_params[name]})")
            if why is not None:
                if why != "never executed":
                    log(f"{name}: not staged: {why}; run `repro book --profile {profile} --only {name}`")
                missing.append(name)
                _write_if_changed(staged / f"{name}.ipynb", _placeholder(name, profile))
                continue
            runs[name] = RunResult(name, profile, "cached", float(info.get("seconds", 0.0)), str(executed),
                                   str(res_path))
        try:
            results[name] = load_results(res_path)
            validate(results[name], require_nonempty=True)
        except ResultsError as e:
            raise BuildError(f"build stopped: results of notebook {name!r} are invalid: {e}") from None
        _copy_if_changed(executed, staged / f"{name}.ipynb")

    built = utc_now()[:16].replace("T", " ")
    claims = claims_page_markdown(profile, results, names, model=PROFILES[profile].description,
                                  titles={n: notebook_title(n) for n in names}, built=built,
                                  seconds={n: r.seconds for n, r in runs.items()}, executed_dir=staged,
                                  matrix=matrix_markdown(matrix_settings(out_rel, profile, results),
                                                         gpu_hours=paper_gpu_hours(repo_root() / GPU_HOURS_FILE),
                                                         order=[c["id"] for n in names
                                                                for c in results.get(n, {}).get("claims", [])]),
                                  families=families_line(profile, names))
    _write_if_changed(staged / "claims_body.md", claims + "\n")
    _write_if_changed(staged / "departures_body.md", departures_markdown() + "\n")
    _write_if_changed(staged / "data_body.md", data_page_body(profile) + "\n")
    n_claims = sum(len(r["claims"]) for r in results.values())
    _write_if_changed(staged / "build_info.md", build_info_markdown(profile, results, runs, names, missing,
                                                                       built + " UTC"))
    log(f"claims page: {n_claims} claims from {len(results)} results files")

    unused = {n: r["meta"]["jobs"]["unused"] for n, r in results.items() if n in selected
              and r.get("meta", {}).get("jobs", {}).get("unused")}
    for n, ids in unused.items():
        log(f"{n}: {len(ids)} declared jobs the notebook never asked for (its jobs.py declares more than it "
            f"computes; a cluster would run them for nothing), e.g. {ids[0]}")
    if unused and warnings_as_errors:
        raise BuildError(f"build stopped: notebooks declare jobs they never obtain: {sorted(unused)}")
    if write_toc(book_dir() / "_toc.yml"):  # the chapter registry's table of contents (repro.chapters)
        log("book/_toc.yml: rewritten from the chapter registry")
    _write_if_changed(staged / "book_facts.md", book_facts_markdown(repo_root()))

    ordered = [runs[nm] for nm in names if nm in runs]
    sphinx_s = run_jupyter_book(warnings_as_errors=warnings_as_errors, log=log)
    html = book_dir() / "_build" / "html" / "index.html"
    report_ = BuildReport(profile, ordered, missing, str(html), time.time() - t0, sphinx_s)
    write_build_record(build_record_path(out_rel, profile), report_, jobs)
    log("")
    log(report_.summary())
    return report_

