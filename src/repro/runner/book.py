"""Run the notebooks with papermill and build the Jupyter Book.

Layout (everything under ``results/`` and ``book/executed/`` is generated and git-ignored)::

    notebooks/<name>.md                    jupytext MyST sources (what you edit; open them in JupyterLab)
    results/<profile>/<name>.ipynb         the executed copy (kept on failure, for inspection)
    results/<profile>/<name>.json          the results JSON the notebook wrote (repro.report.results)
    results/<profile>/<name>.cache.json    cache key + run time of that execution
    book/executed/<name>.ipynb             the copy the book renders (staged from the profile being built)
    book/executed/claims_body.md           the generated claims table (included by book/claims.md)
    book/executed/build_info.md            profile / date / what ran (included by book/intro.md)
    book/_build/html/                      the HTML book

``book/_toc.yml`` is the single list of book notebooks (its ``executed/<name>`` entries); ``_config.yml`` at the
repository root has ``execute_notebooks: "off"``, so Jupyter Book only renders what papermill executed.  The
Sphinx step alone is ``jupyter-book build book --config _config.yml --path-output book`` (after ``repro book``
has staged ``book/executed/``).

A notebook is re-executed only when the hash of (its source, its parameters, the profile, every
``src/repro/**/*.py`` and the reference CSVs) changed, or its executed copy or results JSON is missing.
"""

from __future__ import annotations

import ast
import concurrent.futures as cf
import contextlib
import datetime as _dt
import hashlib
import json
import logging
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from repro.profiles import PROFILES
from repro.paths import book_dir, notebooks_dir, project_root, repo_root, resolve_path, results_path
from repro.report.claims_page import claims_page_markdown
from repro.report.results import ResultsError, load_results, validate

KERNEL = "python3"


class ParameterError(ValueError):
    """Bad notebook parameters / profile / notebook name (the message lists the valid choices)."""


class NotebookError(RuntimeError):
    """A notebook failed while executing (or did not write a valid results JSON)."""

    def __init__(self, notebook: str, message: str, cell_index: int | None = None, cell_source: str | None = None,
                 ename: str | None = None, evalue: str | None = None, executed: str | None = None) -> None:
        self.notebook, self.message, self.cell_index, self.cell_source = notebook, message, cell_index, cell_source
        self.ename, self.evalue, self.executed = ename, evalue, executed
        super().__init__(str(self))

    def __reduce__(self):  # picklable across worker processes
        return (NotebookError, (self.notebook, self.message, self.cell_index, self.cell_source, self.ename,
                                self.evalue, self.executed))

    def __str__(self) -> str:
        lines = [f"notebook {self.notebook!r} failed: {self.message}"]
        if self.cell_index is not None:
            src = (self.cell_source or "").strip().splitlines()
            first = src[0] if src else ""
            lines.append(f"  failing cell: #{self.cell_index} (code cell starting `{first[:100]}`)")
        if self.ename:
            lines.append(f"  error: {self.ename}: {self.evalue}")
        if self.executed:
            lines.append(f"  executed copy kept for inspection: {self.executed}")
        return "\n".join(lines)


class BuildError(RuntimeError):
    """The book build stopped (a notebook failed, a results file is invalid, or Sphinx failed)."""


# --------------------------------------------------------------------------------------------------------
# locations
# --------------------------------------------------------------------------------------------------------


def book_notebooks() -> list[str]:
    """The notebooks of the book, in ``book/_toc.yml`` order (entries ``executed/<name>``)."""
    import yaml

    toc = yaml.safe_load((book_dir() / "_toc.yml").read_text())
    names: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            f = node.get("file")
            if isinstance(f, str) and f.startswith("executed/"):
                name = f.split("/", 1)[1].removesuffix(".ipynb")
                if (notebooks_dir() / f"{name}.md").exists() and name not in names:
                    names.append(name)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(toc)
    return names


def list_notebooks() -> list[str]:
    """Every runnable notebook: the book's (toc order), then any other ``notebooks/*.md``."""
    names = book_notebooks()
    return names + sorted(p.stem for p in notebooks_dir().glob("*.md") if p.stem not in names)


def notebook_path(name: str | Path) -> Path:
    """``p1_localization``, ``p1_localization.md`` or a path to a ``.md``/``.ipynb`` notebook."""
    p = Path(name)
    if p.suffix in (".md", ".ipynb") and p.exists():
        return p.resolve()
    cand = notebooks_dir() / f"{p.stem if p.suffix == '.md' else p.name}.md"
    if cand.exists():
        return cand
    raise ParameterError(f"unknown notebook {str(name)!r}; choose one of {list_notebooks()}")


def notebook_title(name: str) -> str:
    for line in notebook_path(name).read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return name


# --------------------------------------------------------------------------------------------------------
# notebooks and parameters
# --------------------------------------------------------------------------------------------------------
def read_notebook(path: str | Path):
    """A notebook as an nbformat node, jupytext sources converted in memory; kernel forced to ``python3``."""
    import jupytext
    import nbformat

    path = Path(path)
    nb = jupytext.read(path) if path.suffix == ".md" else nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": KERNEL}
    nb.metadata.setdefault("language_info", {"name": "python"})
    nb.metadata.pop("jupytext", None)
    return nb


@dataclass(frozen=True)
class NotebookParam:
    name: str
    type: str | None  # the annotation as written (or None)
    default: str  # the default's source text
    help: str = ""

    def describe(self) -> str:
        t = f": {self.type}" if self.type else ""
        h = f"  # {self.help}" if self.help else ""
        return f"{self.name}{t} = {self.default}{h}"


def _parameters_cell(nb) -> str | None:
    for cell in nb.cells:
        if cell.cell_type == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            return cell.source
    return None


def notebook_parameters(name: str | Path) -> dict[str, NotebookParam]:
    """The parameters of a notebook's ``parameters``-tagged cell, with their annotated types and defaults.

    Names come from ``papermill.inspect_notebook`` and from parsing the cell (papermill skips annotations such as
    ``str | None``); types from the annotation.
    """
    import nbformat
    import papermill

    nb = read_notebook(notebook_path(name))
    source = _parameters_cell(nb)
    if source is None:
        return {}
    params: dict[str, NotebookParam] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_nb = Path(tmp) / "nb.ipynb"
        nbformat.write(nb, tmp_nb)
        pm_logger = logging.getLogger("papermill")
        level = pm_logger.level
        pm_logger.setLevel(logging.ERROR)  # "Unable to parse line ..." for comments with '='; ast below reads them
        try:
            inspected = papermill.inspect_notebook(str(tmp_nb))
        finally:
            pm_logger.setLevel(level)
        for p in inspected.values():
            t = None if p["inferred_type_name"] == "None" else p["inferred_type_name"]
            params[p["name"]] = NotebookParam(p["name"], t, p["default"], p.get("help", ""))
    lines = source.splitlines()
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name_, ann = node.target.id, ast.unparse(node.annotation)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name_, ann = node.targets[0].id, None
        else:
            continue
        line = lines[node.lineno - 1]
        comment = line.split("#", 1)[1].strip() if "#" in line[node.value.end_col_offset:] else ""
        old = params.get(name_)
        params[name_] = NotebookParam(name_, ann or (old.type if old else None), ast.unparse(node.value),
                                      comment or (old.help if old else ""))
    return params


_BASE_TYPES = {"str": "str", "int": "int", "float": "float", "bool": "bool", "list": "list", "dict": "dict",
               "tuple": "tuple", "List": "list", "Dict": "dict", "Tuple": "tuple", "Sequence": "list",
               "Any": "any", "None": "none", "NoneType": "none"}


def _allowed(param: NotebookParam) -> set[str]:
    """Type names a value may have: from the annotation, else from the default's literal type."""
    if param.type:
        out: set[str] = set()
        ann = param.type.replace(" ", "")
        m = re.fullmatch(r"(?:typing\.)?Optional\[(.*)\]", ann)
        if m:
            out.add("none")
            ann = m.group(1)
        for part in ann.split("|"):
            base = re.split(r"\[", part, maxsplit=1)[0].removeprefix("typing.")
            out.add(_BASE_TYPES.get(base, "any"))
        return out
    try:
        default = ast.literal_eval(param.default)
    except (ValueError, SyntaxError):
        return {"any"}
    if default is None:
        return {"any"}
    return {_type_name(default)}


def _type_name(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "bool"
    for t in (int, float, str, list, dict, tuple):
        if isinstance(v, t):
            return t.__name__
    return type(v).__name__


def _coerce(param: NotebookParam, value: Any) -> Any:
    allowed = _allowed(param)
    kind = _type_name(value)
    if "any" in allowed or kind in allowed:
        return list(value) if kind == "tuple" and "list" in allowed else value
    if kind == "int" and "float" in allowed:
        return float(value)
    if kind == "tuple" and "list" in allowed:
        return list(value)
    if kind == "list" and "tuple" in allowed:
        return value
    want = param.type or " | ".join(sorted(allowed))
    raise ParameterError(f"parameter {param.name!r} must be {want} (declared `{param.describe()}`), "
                         f"got {value!r} of type {type(value).__name__}")


def parse_cli_value(text: str) -> Any:
    """A ``-p key value`` value as YAML (``13`` → int, ``0.5`` → float, ``true``, ``null``, ``[1, 2]``), else the
    string itself."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def validate_params(name: str, profile: str, params: Mapping[str, Any] | None = None,
                    declared: Mapping[str, NotebookParam] | None = None) -> dict[str, Any]:
    """Check ``params`` against the notebook's parameters cell before anything runs; return them coerced.

    Rejects an unknown profile (listing ``repro.profiles.PROFILES``), unknown parameter names and wrong types
    (listing the notebook's parameters with their types and defaults).  ``profile`` is added to the result.
    """
    params = dict(params or {})
    if profile not in PROFILES:
        raise ParameterError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}")
    if "profile" in params and params["profile"] != profile:
        raise ParameterError(f"parameter profile={params['profile']!r} contradicts --profile {profile!r}")
    declared = dict(declared) if declared is not None else notebook_parameters(name)
    valid = "\n".join(f"    {p.describe()}" for p in declared.values()) or "    (none)"
    unknown = sorted(set(params) - set(declared))
    if unknown:
        raise ParameterError(f"unknown parameter(s) {unknown} for notebook {Path(str(name)).stem!r}; "
                             f"valid parameters:\n{valid}")
    if "profile" not in declared:
        raise ParameterError(f"notebook {name!r} has no `profile` parameter; every notebook must declare one")
    out = {}
    for key, value in params.items():
        try:
            out[key] = _coerce(declared[key], value)
        except ParameterError as e:
            raise ParameterError(f"{e}\n  valid parameters of {Path(str(name)).stem!r}:\n{valid}") from None
    out["profile"] = profile
    return out


# --------------------------------------------------------------------------------------------------------
# cache
# --------------------------------------------------------------------------------------------------------
def source_fingerprint() -> str:
    """Hash of every ``src/repro/**/*.py`` and ``book/reference/*.csv`` (code and data the notebooks read)."""
    root = repo_root()
    h = hashlib.sha256()
    files = sorted((root / "src" / "repro").rglob("*.py")) + sorted((root / "book" / "reference").glob("*.csv"))
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def cache_key(name: str, profile: str, params: Mapping[str, Any], fingerprint: str | None = None) -> str:
    """Hash of (notebook source, parameters, profile, source fingerprint)."""
    blob = json.dumps({"notebook": notebook_path(name).read_text(), "params": dict(params), "profile": profile,
                       "src": fingerprint or source_fingerprint()}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


# --------------------------------------------------------------------------------------------------------
# running one notebook
# --------------------------------------------------------------------------------------------------------
@dataclass
class RunResult:
    notebook: str
    profile: str
    status: str  # "ran" | "cached"
    seconds: float
    executed: str
    results: str
    params: dict[str, Any] = field(default_factory=dict)


def _param_path(value: str, keep_relative: bool) -> str:
    """A path parameter as the kernel should see it.  Relative paths mean relative to the repository root (as in
    :func:`repro.paths.resolve_path`; the CLI makes the user's paths absolute first).  Written back relative to
    the root when inside it and ``keep_relative`` (short, machine-independent paths in the executed notebook),
    else absolute (a notebook's own code may resolve it against its cwd, ``notebooks/``)."""
    p = Path(os.path.normpath(resolve_path(value)))
    root = project_root()
    if keep_relative and root is not None:
        try:
            return p.relative_to(root).as_posix() or "."
        except ValueError:
            pass
    return str(p)


@contextlib.contextmanager
def _batch_environment(threads: int | None = None) -> Iterator[None]:
    """Environment of a batch kernel: no tqdm bars (they would fill the executed notebook with thousands of
    redrawn lines; interactive runs keep them), and with ``threads`` a cap on its OpenMP / MKL threads.

    Parallel notebooks (``--jobs``) must split the cores: two kernels each spinning 2 OpenMP threads on 2 cores
    ran 5-6x slower than one after the other (measured on the smoke book, 2026-11-23).
    """
    changes = {"TQDM_DISABLE": "1", "PYTHONWARNINGS": "ignore:IProgress not found"}  # tqdm.auto without ipywidgets
    if threads:
        changes.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    before = {k: os.environ.get(k) for k in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_notebook(name: str, profile: str = "cpu", params: Mapping[str, Any] | None = None,
                 output_dir: str | Path = "results", *, executed_path: str | Path | None = None,
                 use_cache: bool = False, fingerprint: str | None = None, threads: int | None = None) -> RunResult:
    """Execute one notebook with papermill in a fresh ``python3`` kernel (cwd ``notebooks/``, as in JupyterLab).

    ``params`` are validated first (:func:`validate_params`).  ``output_dir`` (or ``params['output_dir']``) is the
    results root passed to the notebook: it writes ``<output_dir>/<profile>/<name>.json``; the executed copy goes
    next to it as ``<name>.ipynb`` unless ``executed_path`` is given.  With ``use_cache`` an unchanged notebook
    (same :func:`cache_key`) whose executed copy and results exist is not re-run.  ``threads`` caps the kernel's
    OpenMP / MKL threads (:func:`build_book` sets it to cores // jobs when notebooks run in parallel).
    Raises :class:`ParameterError` before running, :class:`NotebookError` if a cell fails or no valid results
    JSON was written.
    """
    import nbformat
    import papermill

    path = notebook_path(name)
    name = path.stem
    params = dict(params or {})
    declared = notebook_parameters(path)
    if "output_dir" in declared:
        params.setdefault("output_dir", str(output_dir))
    params = validate_params(name, profile, params, declared)
    for key, value in list(params.items()):  # path parameters: make them independent of the caller's cwd
        if key.endswith("_dir") and isinstance(value, str) and value:
            params[key] = _param_path(value, keep_relative=(key == "output_dir"))
    out_root = resolve_path(params.get("output_dir", output_dir))
    res_path = results_path(out_root, profile, name)
    executed = Path(executed_path).resolve() if executed_path else res_path.with_suffix(".ipynb")
    sidecar = res_path.with_name(f"{name}.cache.json")
    key = cache_key(path, profile, params, fingerprint)

    if use_cache and executed.exists() and res_path.exists() and sidecar.exists():
        try:
            info = json.loads(sidecar.read_text())
        except json.JSONDecodeError:
            info = {}
        if info.get("key") == key:
            return RunResult(name, profile, "cached", float(info.get("seconds", 0.0)), str(executed),
                             str(res_path), params)

    sidecar.unlink(missing_ok=True)
    executed.parent.mkdir(parents=True, exist_ok=True)
    nb = read_notebook(path)
    rel_source = os.path.relpath(path, repo_root()) if project_root() else str(path)
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="repro-nb-") as tmp, _batch_environment(threads):
        tmp_in = Path(tmp) / f"{name}.ipynb"
        nbformat.write(nb, tmp_in)
        try:
            papermill.execute_notebook(str(tmp_in), str(executed), parameters=params, kernel_name=KERNEL,
                                       language="python", cwd=str(path.parent), progress_bar=False,
                                       log_output=False, extra_arguments=KERNEL_ARGS)
        except papermill.PapermillExecutionError as e:
            _tidy_executed(executed, rel_source)
            raise NotebookError(name, "a cell raised an exception", cell_index=e.cell_index, cell_source=e.source,
                                ename=e.ename, evalue=e.evalue, executed=str(executed)) from None
        except Exception as e:  # kernel died, timeout, ...
            if executed.exists():
                _tidy_executed(executed, rel_source)
            raise NotebookError(name, f"execution aborted ({type(e).__name__}: {e})",
                                executed=str(executed) if executed.exists() else None) from None
    seconds = time.time() - start
    _tidy_executed(executed, rel_source)
    if not res_path.exists() or res_path.stat().st_mtime < start - 1:
        raise NotebookError(name, f"it did not write its results JSON {res_path} (call Results(...).save(output_dir) "
                                  f"at the end)", executed=str(executed))
    try:
        load_results(res_path, require_nonempty=True)
    except ResultsError as e:
        raise NotebookError(name, f"invalid results JSON: {e}", executed=str(executed)) from None
    sidecar.write_text(json.dumps({"key": key, "seconds": round(seconds, 2), "params": params,
                                   "finished": _now()}, indent=1))
    return RunResult(name, profile, "ran", seconds, str(executed), str(res_path), params)


# ipykernel logs a warning about unencrypted local TCP on every start, and sometimes an interrupt at shutdown;
# cell output and errors travel over the kernel protocol, so the kernel process's own log is not needed.
KERNEL_ARGS = ["--IPKernelApp.log_level=CRITICAL"]


def _tidy_executed(executed: Path, rel_source: str) -> None:
    """Point the executed copy's papermill metadata at the real source instead of the temporary .ipynb."""
    import nbformat

    try:
        nb = nbformat.read(executed, as_version=4)
    except Exception:
        return
    pm = nb.metadata.get("papermill", {})
    pm["input_path"] = rel_source
    pm["output_path"] = executed.name
    nb.metadata["papermill"] = pm
    for cell in nb.cells:  # the book folds the parameters and hides papermill's injected copy
        tags = cell.get("metadata", {}).get("tags", [])
        extra = "remove-input" if "injected-parameters" in tags else "hide-input" if "parameters" in tags else None
        if extra and extra not in tags:
            cell.metadata["tags"] = tags + [extra]
    nbformat.write(nb, executed)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _run_job(kwargs: dict[str, Any]) -> RunResult | NotebookError:
    """Worker entry point (module level so it pickles): return the failure instead of raising it."""
    try:
        return run_notebook(**kwargs)
    except NotebookError as e:
        return e
    except Exception as e:  # noqa: BLE001 - reported with the notebook's name
        return NotebookError(kwargs["name"], f"{type(e).__name__}: {e}")


# --------------------------------------------------------------------------------------------------------
# claims page
# --------------------------------------------------------------------------------------------------------
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|$#])")
VERDICT = {True: "✓ holds", False: "✗ does not hold", None: "○ not tested"}


def _md(x: Any) -> str:
    if x is None or x == "":
        return "—"
    s = str(x).replace("\n", " ")
    return _MD_SPECIAL.sub(r"\\\1", s)


def claims_markdown(profile: str, results: Mapping[str, Mapping[str, Any]], notebooks: Sequence[str]) -> str:
    """The claims table for one profile: every claim of every notebook's results JSON, with its verdict."""
    counts = {True: 0, False: 0, None: 0}
    for name in notebooks:
        for c in results.get(name, {}).get("claims", []):
            counts[c["holds"]] += 1
    total = sum(counts.values())
    out = [f"Profile **{profile}** — {total} claims: {counts[True]} hold, {counts[False]} do not hold, "
           f"{counts[None]} not tested yet.", ""]
    for name in notebooks:
        title = notebook_title(name)
        out += [f"## {_md(title)}", ""]
        res = results.get(name)
        if res is None:
            out += [f"Notebook `{name}` has no results for the `{profile}` profile in this build "
                    f"(run `repro book --profile {profile} --only {name}`).", ""]
            continue
        out += [f"From {{doc}}`executed/{name}` (`results/{profile}/{name}.json`).", "",
                "| id | claim | paper | ours | verdict | note |", "|---|---|---|---|---|---|"]
        for c in res["claims"]:
            out.append(f"| `{c['id']}` | {_md(c['text'])} | {_md(c['paper'])} | {_md(c['ours'])} | "
                       f"{VERDICT[c['holds']]} | {_md(c['note'])} |")
        out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------------------------------------
# the book
# --------------------------------------------------------------------------------------------------------
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


def _placeholder(name: str, profile: str) -> str:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": KERNEL}
    nb.cells.append(nbformat.v4.new_markdown_cell(
        f"# {notebook_title(name)}\n\n```{{note}}\nThis notebook was not executed for the `{profile}` profile in this "
        f"build. Run `repro book --profile {profile} --only {name}` to execute it.\n```\n"))
    return nbformat.writes(nb)


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
               force: bool = False, log: Callable[[str], None] = print) -> BuildReport:
    """Execute the book's notebooks for ``profile`` (cached), regenerate the claims page, build the HTML.

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
    out_rel = _param_path(str(output_dir), keep_relative=True)
    fingerprint = source_fingerprint()
    threads = max(1, (os.cpu_count() or 1) // jobs) if jobs > 1 else None  # parallel kernels split the cores

    job_args = []
    for name in selected:
        declared = notebook_parameters(name)
        params: dict[str, Any] = {}
        if data_dir and "data_dir" in declared:
            params["data_dir"] = data_dir
        validate_params(name, profile, params, declared)  # fail fast, before anything runs
        job_args.append(dict(name=name, profile=profile, params=params, output_dir=out_rel, use_cache=not force,
                             fingerprint=fingerprint, threads=threads))

    log(f"repro book: profile={profile}, {len(selected)} of {len(names)} notebooks to execute (cached when "
        f"unchanged), jobs={jobs}")
    runs: dict[str, RunResult] = {}
    failure: NotebookError | None = None
    n = len(job_args)

    def report(i: int, r: RunResult | NotebookError) -> None:
        if isinstance(r, NotebookError):
            log(f"[{i}/{n}] {r.notebook:<26} FAILED")
        else:
            what = f"ran in {r.seconds:.1f} s" if r.status == "ran" else "cached (unchanged)"
            log(f"[{i}/{n}] {r.notebook:<26} {what}")

    if jobs == 1 or n <= 1:
        for i, kw in enumerate(job_args, 1):
            log(f"[{i}/{n}] {kw['name']:<26} executing ...")
            r = _run_job(kw)
            report(i, r)
            if isinstance(r, NotebookError):
                failure = r
                break
            runs[r.notebook] = r
    else:
        ctx = multiprocessing.get_context("spawn")
        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            futures = {pool.submit(_run_job, kw): kw["name"] for kw in job_args}
            log(f"executing {n} notebooks in {min(jobs, n)} processes ...")
            for i, fut in enumerate(cf.as_completed(futures), 1):
                r = fut.result()
                report(i, r)
                if isinstance(r, NotebookError):
                    failure = failure or r
                    for f in futures:
                        f.cancel()
                else:
                    runs[r.notebook] = r
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
            if executed.exists() and res_path.exists():
                info = {}
                sidecar = res_path.with_name(f"{name}.cache.json")
                if sidecar.exists():
                    info = json.loads(sidecar.read_text())
                runs[name] = RunResult(name, profile, "cached", float(info.get("seconds", 0.0)), str(executed),
                                       str(res_path))
            else:
                missing.append(name)
                _write_if_changed(staged / f"{name}.ipynb", _placeholder(name, profile))
                continue
        try:
            results[name] = load_results(res_path)
            validate(results[name], require_nonempty=True)
        except ResultsError as e:
            raise BuildError(f"build stopped: results of notebook {name!r} are invalid: {e}") from None
        _copy_if_changed(executed, staged / f"{name}.ipynb")

    claims = claims_page_markdown(profile, results, names, model=PROFILES[profile].description,
                                  titles={n: notebook_title(n) for n in names}, built=_now()[:16].replace("T", " "),
                                  seconds={n: r.seconds for n, r in runs.items()}, executed_dir=staged)
    _write_if_changed(staged / "claims_body.md", claims + "\n")
    n_claims = sum(len(r["claims"]) for r in results.values())
    info = [f"This build: profile **{profile}** ({PROFILES[profile].description}); built {_now()[:10]}; "
            f"{len(runs)} of {len(names)} notebooks executed"
            + (f", {len(missing)} not executed for this profile ({', '.join(missing)})" if missing else "") + "."]
    _write_if_changed(staged / "build_info.md", "\n".join(info) + "\n")
    log(f"claims page: {n_claims} claims from {len(results)} results files")

    ordered = [runs[nm] for nm in names if nm in runs]
    sphinx_s = run_jupyter_book(warnings_as_errors=warnings_as_errors, log=log)
    html = book_dir() / "_build" / "html" / "index.html"
    report_ = BuildReport(profile, ordered, missing, str(html), time.time() - t0, sphinx_s)
    log("")
    log(report_.summary())
    return report_


def describe_notebooks() -> str:
    """``repro list``: every notebook with its title and parameters."""
    book = set(book_notebooks())
    out = []
    for name in list_notebooks():
        tag = "" if name in book else "  (not in the book)"
        out.append(f"{name}: {notebook_title(name)}{tag}")
        for p in notebook_parameters(name).values():
            out.append(f"    {p.describe()}")
    return "\n".join(out)


__all__ = ["BuildError", "BuildReport", "NotebookError", "NotebookParam", "ParameterError", "RunResult",
           "book_notebooks", "build_book", "cache_key", "claims_markdown", "describe_notebooks", "list_notebooks",
           "notebook_parameters", "parse_cli_value", "run_jupyter_book", "run_notebook", "source_fingerprint",
           "validate_params"]
