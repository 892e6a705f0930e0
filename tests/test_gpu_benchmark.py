"""benchmarks/gpu_paper_path.py runs end to end in its CPU dry-run mode (tiny models, 2 steps)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load():
    spec = importlib.util.spec_from_file_location("gpu_paper_path", ROOT / "benchmarks" / "gpu_paper_path.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_dry_run_measures_every_job_kind_and_estimates_every_notebook(tmp_path, capsys):
    bench = _load()
    out = tmp_path / "report.json"
    assert bench.main(["--dry-run", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    kinds = {k for jobs in bench.JOBS.values() for k in jobs}
    assert kinds <= set(report["per_step"]) and all(v["seconds"] > 0 for v in report["per_step"].values())
    notebooks = {p.stem for p in (ROOT / "notebooks").glob("p[12]_*.md")}  # the papers' sections
    assert set(report["gpu_hours"]) == notebooks and all(h > 0 for h in report["gpu_hours"].values())
    methods = {r["key"] for r in report["table3"]}
    assert methods == {"ft", "linearized", "l-lora", "lota", "talos"}
    assert next(r for r in report["table3"] if r["key"] == "ft")["total_iter_s_ratio"] == 1.0
    printed = capsys.readouterr().out
    assert "estimated GPU-hours" in printed and "P2 Table 3" in printed


def test_without_a_gpu_the_real_run_says_so(monkeypatch):
    import pytest
    import torch

    bench = _load()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit, match="no CUDA GPU"):
        bench.main([])
