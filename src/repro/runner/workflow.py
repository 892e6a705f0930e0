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

from repro.artifacts import code_text
from repro.paths import repo_root
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


def memory_mb(job: Mapping[str, Any], attempt: int = 1, scale: float = 1.0) -> int:
    """Host memory of a job (:data:`MEMORY_MB` of its kind × ``scale``), 1.5× per retry."""
    return int(MEMORY_MB.get(job["kind"], 24000) * scale * (1.5 ** (attempt - 1)))


__all__ = ["EVALUATION_KINDS", "MEMORY_MB", "driver_modules", "job_code", "memory_mb", "modules_fingerprint",
           "notebook_code", "plan", "runtime_minutes"]
