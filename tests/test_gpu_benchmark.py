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
    per_step = report["per_step"]
    assert all(v["seconds"] > 0 for v in per_step.values())
    # every Table 3 method at the recipe batch, and every unit the GPU-hours estimate prices
    assert {f"vit_{m}_step" for m in bench.TABLE3} <= set(per_step)
    for kind in bench.TRAINING_KINDS | bench.EVAL_KINDS:
        for family in ("", "vision", "nlp"):
            assert bench.rate(kind, family, per_step) > 0
    methods = {r["key"] for r in report["table3"]}
    assert methods == set(bench.TABLE3)
    assert next(r for r in report["table3"] if r["key"] == "ft")["total_iter_s_ratio"] == 1.0
    # the job counts are the paper plans' inventory (repro plan --profile paper), every P1 / P2 notebook priced
    vision = report["gpu_hours"]["vision"]
    assert sum(v["jobs"] for v in vision.values()) == len(bench.inventory("paper", family="vision"))
    notebooks = {p.stem for p in (ROOT / "notebooks").glob("p[12]_*.md")} - {"p2_structure_cost"}  # no job there
    assert set(vision) == notebooks and all(v["gpu_hours"] > 0 for v in vision.values())
    assert set(report["gpu_hours"]["nlp"]) <= {n for n in notebooks if n.startswith("p2")}
    assert set(report["loader"]["images_per_s"]) == {"0", "2"}
    printed = capsys.readouterr().out
    assert "estimated GPU-hours" in printed and "P2 Table 3" in printed and "image decoding" in printed


def test_without_a_gpu_the_real_run_says_so(monkeypatch):
    import pytest
    import torch

    bench = _load()
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit, match="no CUDA GPU"):
        bench.main([])
