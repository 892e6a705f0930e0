"""What ``workflow/Snakefile`` reads (issue 23): the plan, each job's code fingerprint, each job's resources.

The runner imports no chapter code, so the plan comes from ``python -m repro.inventory --json`` (``repro plan
--json``).  A job's code fingerprint is the hash of the docstring- and comment-free source of the static import
closure of the module its driver lives in (:func:`repro.runner.execute.import_closure`), plus the torch and
transformers versions: the Snakefile passes it as a rule parameter, so ``--rerun-triggers params`` re-runs exactly
the jobs whose code changed (and, as Snakemake does, whatever reads their outputs).  A render's parameter is the
notebook's own :func:`~repro.runner.execute.source_fingerprint`.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from repro.artifacts import STORE_FIELD, ArtifactError, check_entry, code_text, read_json, stale_reason
from repro.paths import artifacts_dir, done_path, repo_root
from repro.runner.execute import import_closure, source_fingerprint

#: job kinds that only evaluate stored models (many small jobs: grouped on SLURM)
EVALUATION_KINDS: tuple[str, ...] = ("arithmetic", "merge", "drift")
#: host memory (MB) a job of each kind asks for, before the profile's scale (the paper's ViT-B/32 / RoBERTa-base)
MEMORY_MB: dict[str, int] = {"finetune": 32000, "mask": 32000, "graft": 24000, "joint-graft": 32000, "fish": 24000,
                             "adapter": 24000, "continual": 32000, "tracking": 32000, "drift": 24000,
                             "arithmetic": 24000, "merge": 32000}


def plan(profile: str, family: str = "", only: Sequence[str] = ()) -> dict[str, Any]:
    """``repro plan --profile P [--family F] [--only ...] --json`` as a dict."""
    cmd = [sys.executable, "-m", "repro.inventory", "--profile", profile, "--json"]
    cmd += ["--family", family] if family else []
    cmd += ["--only", *only] if only else []
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def driver_modules(job: Mapping[str, Any]) -> list[str]:
    """The repro modules a job's call runs: its driver's module (+ LoTA's mask for a LoTA fine-tune)."""
    parts = job["driver"].split(".")
    mod = ".".join(parts[:-2]) if parts[-2][:1].isupper() else ".".join(parts[:-1])  # a method: drop the class
    extra = ["repro.p2.methods"] if "lota_of" in json.dumps(job["kwargs"]) else []
    return [mod, *extra]


@functools.lru_cache(maxsize=None)
def modules_fingerprint(modules: tuple[str, ...]) -> str:
    """16 hex digits: the code of the import closure of ``modules`` (docstrings and comments left out) and the torch
    and transformers versions."""
    src = repo_root() / "src" / "repro"
    h = hashlib.sha256()
    for f in import_closure(src, set(modules)):
        h.update(f.relative_to(src).as_posix().encode() + b"\0" + _file_code(f) + b"\0")
    for dist in ("torch", "transformers"):
        try:
            h.update(f"{dist}={importlib.metadata.version(dist)}".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{dist}=absent".encode())
    return h.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def _file_code(path: Path) -> bytes:
    return hashlib.sha256(code_text(path).encode()).digest()


def job_code(job: Mapping[str, Any]) -> str:
    """A job's code fingerprint (its rule parameter)."""
    return modules_fingerprint(tuple(sorted(driver_modules(job))))


def notebook_code(notebook: str) -> str:
    """A render's code fingerprint: the notebook's source and its import closure (16 hex digits)."""
    return source_fingerprint(notebook)[:16]


def runtime_minutes(job: Mapping[str, Any], attempt: int = 1, passes_per_second: float = 400.0,
                    minimum: int = 10) -> int:
    """SLURM runtime of a job: its cost (example-passes) at ``passes_per_second``, doubled for safety, at least
    ``minimum`` minutes, times ``attempt`` (a retry asks for more time)."""
    return int(max(minimum, math.ceil(2 * float(job.get("cost", 0.0)) / passes_per_second / 60)) * attempt)


#: GPU models a job asks for, smallest first: a retry (after a GPU out-of-memory error) asks for the next one
#: (config ``gpu_models=a,b,c`` on the command line: your cluster's names)
GPU_MODELS: tuple[str, ...] = ("a100", "a100_80gb", "h100")


def gpu_model(attempt: int = 1, models: Sequence[str] = GPU_MODELS) -> str:
    """The GPU model of a job's ``attempt``-th try: the first of ``models``, then one bigger per retry."""
    if not models:
        raise ValueError("gpu_models is empty; give the cluster's GPU models, smallest first (a100,h100)")
    return models[min(max(attempt, 1), len(models)) - 1]


def memory_mb(job: Mapping[str, Any], attempt: int = 1, scale: float = 1.0) -> int:
    """Host memory of a job (:data:`MEMORY_MB` of its kind × ``scale``), 1.5× per retry."""
    return int(MEMORY_MB.get(job["kind"], 24000) * scale * (1.5 ** (attempt - 1)))


# ------------------------------------------------------------------------------------------------------------
# done-markers that lie (issue 35): a marker is only as good as the artifacts it names
# ------------------------------------------------------------------------------------------------------------
def marker_problems(job: Mapping[str, Any], root: str | Path | None = None, full: bool = True) -> list[str]:
    """Every reason job ``job``'s done-marker cannot be trusted, one line each (empty: it holds).

    No marker, or an unreadable one; per entry it names: the artifact is missing, its sidecar records another
    sha256 than the marker (recomputed or replaced since), its code fingerprint is stale (another code wrote it) or
    its files were modified after the marker was written.  ``full`` also re-hashes every file (an edited tensor file
    whose mtime was kept); without it the check reads the sidecars only."""
    marker = done_path(job["id"], root)
    what = f"{job.get('kind', 'job')} {job['id']}"
    try:
        record = read_json(marker)
        marker_time = marker.stat().st_mtime
    except FileNotFoundError:
        return [f"{what}: not run (no done-marker)"]
    except (ArtifactError, OSError) as e:
        return [f"{what}: its done-marker is unreadable ({e})"]
    base = artifacts_dir(root)
    out = []
    for e in record.get("entries") or []:
        path = base / e["path"]
        files = [f for f in (path.with_suffix(".safetensors"), path.with_suffix(".json")) if f.exists()]
        status = check_entry(path) if full else _sidecar_status(path)
        if status != "ok":
            out.append(f"{what}: {e['path']} {status}")
            continue
        stamp = read_json(path.with_suffix(".json")).get(STORE_FIELD, {})
        if e.get("sha256") and stamp.get("sha256") != e["sha256"]:
            out.append(f"{what}: {e['path']} is not the artifact its done-marker names (another sha256)")
        elif any(f.stat().st_mtime > marker_time + 1.0 for f in files):
            out.append(f"{what}: {e['path']} was modified after the job finished")
    return out


def _sidecar_status(path: Path) -> str:
    """:func:`repro.artifacts.check_entry` without hashing the tensor file: both parts present, the sidecar's own
    checksums and its code fingerprint current."""
    st, js = path.with_suffix(".safetensors"), path.with_suffix(".json")
    if not js.exists():
        return "missing" if not st.exists() else "incomplete: its .json is missing"
    try:
        meta = read_json(js)
        if not st.exists():
            return check_entry(path)  # a JSON-only entry (cheap), or a tensor entry's sidecar alone
    except ArtifactError as e:
        return e.reason
    return stale_reason(meta) or "ok"


def store_problems(jobs: Sequence[Mapping[str, Any]], root: str | Path | None = None, full: bool = True
                   ) -> list[str]:
    """Every missing or stale artifact of ``jobs`` (:func:`marker_problems` of each), not only the first."""
    return [p for job in jobs for p in marker_problems(job, root, full)]


def prune_lying_markers(jobs: Sequence[Mapping[str, Any]], root: str | Path | None = None, full: bool = False,
                        log: Any = print) -> list[str]:
    """Remove the done-marker of every job whose marker exists but lies (:func:`marker_problems`), one line each,
    so that the workflow runs that job again (and what reads it); returns their ids.  A job without a marker is
    left alone: it is simply not done."""
    pruned = []
    for job in jobs:
        marker = done_path(job["id"], root)
        if not marker.exists():
            continue
        problems = marker_problems(job, root, full)
        if problems:
            marker.unlink(missing_ok=True)
            log(f"re-running {problems[0]}" + (f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""))
            pruned.append(job["id"])
    return pruned


def pending(jobs: Sequence[Mapping[str, Any]], root: str | Path | None = None, full: bool = False) -> list[str]:
    """The ids of ``jobs`` still to run after a node died: no done-marker, or one that lies (in plan order)."""
    return [j["id"] for j in jobs if marker_problems(j, root, full)]


class StoreIncomplete(RuntimeError):
    """A read-only render whose artifacts are not all stored and current: names every one."""


def check_render(notebook: str, profile: str, family: str = "", root: str | Path | None = None,
                 jobs: Sequence[Mapping[str, Any]] | None = None) -> None:
    """Raise :class:`StoreIncomplete` in one line naming every missing or stale artifact the render of ``notebook``
    reads (its jobs of the plan; ``jobs`` skips asking the plan), so a render never starts on a partial store."""
    if jobs is None:
        try:
            jobs = plan(profile, family, [notebook])["jobs"]
        except subprocess.CalledProcessError:  # a page the plan does not know (no jobs): nothing to check
            return
    by_id = {j["id"]: j for j in jobs}
    todo = [i for i, j in by_id.items() if notebook in j.get("notebooks", [notebook])]
    need: dict[str, None] = {}
    while todo:  # its jobs and, transitively, the upstream jobs whose artifacts they read
        i = todo.pop(0)
        if i not in need and i in by_id:
            need[i] = None
            todo += list(by_id[i].get("deps", ()))
    mine = [by_id[i] for i in by_id if i in need]
    problems = store_problems(mine, root, full=True)
    if problems:
        fam = f" --family {family}" if family else ""
        raise StoreIncomplete(f"the store lacks {len(problems)} artifact(s) of {notebook}'s {len(mine)} job(s): "
                              + "; ".join(problems) + f"; run them first (`repro job run ID --profile {profile}{fam}`"
                              " or the workflow)")


__all__ = ["EVALUATION_KINDS", "GPU_MODELS", "MEMORY_MB", "StoreIncomplete", "check_render", "driver_modules", "gpu_model", "job_code",
           "marker_problems", "memory_mb", "modules_fingerprint", "notebook_code", "pending", "plan",
           "prune_lying_markers", "runtime_minutes", "store_problems"]
