"""workflow/Snakefile and its profiles (issue 23), with Snakemake when it is installed (`pip install -e .[cluster]`):
the slurm profile's dry run lists the paper plan's whole DAG; the local profile runs one chapter end to end (its
jobs, then its render with the store read-only), a second invocation runs nothing, and touching one module re-runs
only the jobs that run it and the pages that read them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repro.runner.workflow import driver_modules, job_code, memory_mb, runtime_minutes

ROOT = Path(__file__).resolve().parents[2]
HEADER = ("---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
          "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n")
needs_snakemake = pytest.mark.skipif(shutil.which("snakemake", path=str(Path(sys.executable).parent)) is None
                                     and shutil.which("snakemake") is None,
                                     reason="snakemake is not installed (pip install -e .[cluster])")


def snakemake(root: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "snakemake"
    cmd = [str(exe) if exe.exists() else "snakemake", "-s", str(root / "workflow" / "Snakefile"),
           "--directory", str(root), *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=root,
                          env={**os.environ, "PYTHONPATH": str(root / "src"), "OMP_NUM_THREADS": "1",
                               "TQDM_DISABLE": "1", **(env or {})})


def job_stats(out: str) -> dict[str, int]:
    """Snakemake's "Job stats" table: rule -> count (empty: nothing to do)."""
    m = re.search(r"Job stats:\n.*?\n-+\s+-+\n(.*?)\ntotal", out, re.S)
    return {} if not m else {r: int(n) for r, n in re.findall(r"^(\S+)\s+(\d+)$", m.group(1), re.M)}


def test_job_params_follow_the_code_the_job_runs():
    ft = {"driver": "repro.workbench.Workbench.finetune_run", "kwargs": {"trainable": "graftable"}, "kind": "finetune",
          "cost": 1e6}
    lota = {**ft, "kwargs": {"trainable": {"lota_of": {"job": "x"}, "density": 0.1}}}
    mask = {"driver": "repro.p2.sensitivity.runs.low_sensitivity_mask", "kwargs": {}, "kind": "mask", "cost": 10}
    assert driver_modules(ft) == ["repro.workbench"] and driver_modules(lota) == ["repro.workbench", "repro.p2.methods"]
    assert len({job_code(ft), job_code(lota), job_code(mask)}) == 3 and re.fullmatch(r"[0-9a-f]{16}", job_code(ft))
    assert runtime_minutes(mask) == 10 and runtime_minutes(ft, 2, passes_per_second=1000) == 2 * 34
    assert memory_mb(ft, 2) == int(1.5 * memory_mb(ft))


@needs_snakemake
def test_the_slurm_profile_dry_run_lists_the_whole_paper_dag(tmp_path):
    r = snakemake(ROOT, "-n", "--profile", "workflow/profiles/slurm", "--config", "profile=paper", "family=vision",
                  f"artifacts={tmp_path}/art", f"results={tmp_path}/res")
    assert r.returncode == 0, r.stderr[-3000:]
    stats = job_stats(r.stdout + r.stderr)
    assert stats["job"] + stats["evaluate"] == 1076 and stats["render"] == 9 and stats["book"] == 1, stats
    assert "gpu_model=a100" in r.stdout + r.stderr and "repro.runner.cli job run" in r.stdout + r.stderr


@needs_snakemake
def test_the_local_profile_runs_a_chapter_then_nothing_then_what_a_change_affects(tmp_path):
    """One chapter (p2_sensitivity: its jobs, then its render with the store read-only) in a copy of the repository,
    so that a module can be touched: the whole smoke book takes minutes of fresh processes on 2 cores."""
    root = tmp_path / "repo"
    for part in ("src", "notebooks", "workflow", "book"):
        shutil.copytree(ROOT / part, root / part, ignore=shutil.ignore_patterns("__pycache__", "_build", ".snakemake"))
    for f in ("pyproject.toml", "_config.yml"):
        shutil.copy(ROOT / f, root / f)
    args = ["--profile", "workflow/profiles/local", "--resources", "gpu=2", "--config", "profile=smoke",
            "only=p2_sensitivity", f"artifacts={tmp_path}/art", f"results={tmp_path}/res", "--", "notebooks"]
    first = snakemake(root, *args)
    assert first.returncode == 0, first.stderr[-4000:]
    assert job_stats(first.stderr) == {"job": 3, "render": 1, "notebooks": 1}, first.stderr[-3000:]
    markers = sorted((tmp_path / "art" / "jobs").glob("*.done.json"))
    assert len(markers) == 3 and all(json.loads(m.read_text())["sha256"] for m in markers)
    assert (tmp_path / "res" / "smoke" / "p2_sensitivity.json").is_file()

    with open(root / "src" / "repro" / "p1" / "continual.py", "a") as f:  # code no job of the chapter runs
        f.write("\n_WORKFLOW_TEST_TOUCH = 1\n")
    again = snakemake(root, *args)  # the second invocation, after a change elsewhere: nothing to do
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stderr[-3000:]
    with open(root / "src" / "repro" / "p2" / "sensitivity.py", "a") as f:  # the chapter's driver
        f.write("\n_WORKFLOW_TEST_TOUCH = 1\n")
    touched = snakemake(root, *args)
    assert touched.returncode == 0, touched.stderr[-4000:]
    assert job_stats(touched.stderr) == {"job": 3, "render": 1, "notebooks": 1}, touched.stderr[-3000:]
    assert "params" in touched.stderr.lower()


def test_a_render_with_the_store_read_only_fails_naming_what_it_would_compute(tmp_path, monkeypatch):
    """`repro run --read-only-store` (the workflow's renders): the kernel's Workbench computes nothing."""
    from repro.runner.execute import NotebookError, run_notebook

    monkeypatch.setenv("REPRO_ARTIFACTS", str(tmp_path / "art"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT / "src"))
    nb = tmp_path / "computes.md"
    nb.write_text(HEADER + '''# Computes

```{code-cell} ipython3
:tags: [parameters]

from typing import Optional

profile: str = "smoke"  # smoke | cpu | paper
seed: int = 13  # first seed
data_dir: Optional[str] = None  # local data folder
output_dir: str = "results"  # writes <output_dir>/<profile>/computes.json
```

```{code-cell} ipython3
from repro.workbench import Workbench

Workbench(profile, seed=seed).finetune("SST-2")
```
''')
    with pytest.raises(NotebookError, match="read-only store: would compute taskvec") as e:
        run_notebook(str(nb), "smoke", output_dir=tmp_path / "out", read_only_store=True, log=lambda line: None)
    assert e.value.ename == "StoreMiss" and not (tmp_path / "art").exists()
    assert "REPRO_STORE_READ_ONLY" not in os.environ
