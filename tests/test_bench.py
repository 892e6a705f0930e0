"""`repro bench` plumbing on the tiny model: row schema, ratio / verdict logic (the claims' words), the JSON, the official-loop
Fisher baseline's agreement with ours, the CLI hand-off.  No timed assertions (speed goals live in the bench)."""

from __future__ import annotations

import json

import pytest
import torch

from repro.bench.rows import ROW_KEYS, load_bench, make_row, status, validate_rows, verdict, write_bench


def test_ratio_and_verdict_logic():
    r = make_row("x", 2.0, 4.0, "s", device="cpu", model="m", target=0.6)
    assert r["ratio"] == 0.5 and r["pass"] is True and status(r) == "holds"
    fast = make_row("f", 1.0, 8.0, "s", device="cpu", model="m", target=5.0, op=">=", speedup=True)
    assert fast["ratio"] == 8.0 and fast["pass"] is True and fast["ratio_def"] == "baseline / ours"
    slow = make_row("f", 1.0, 3.0, "s", device="cpu", model="m", target=5.0, op=">=", speedup=True)
    assert slow["pass"] is False and status(slow) == "does-not-hold"
    report = make_row("r", 1.0, 2.0, "s", device="cpu", model="m")
    assert report["pass"] is None and status(report) == "report"
    missing = make_row("n", None, None, "s", device="cpu", model="m", target=60.0)
    assert missing["ratio"] is None and missing["pass"] is None and status(missing) == "not-testable"
    exact = make_row("e", 10, 100, "entries", device="cpu", model="m", passed=False)
    assert exact["pass"] is False
    assert make_row("z", 1.0, 0.0, "s", device="cpu", model="m", target=1.0)["ratio"] is None
    assert verdict(1.0, 1.0, "<=") and verdict(1.0, 1.0, ">=") and verdict(None, 1.0) is None
    with pytest.raises(ValueError, match="comparison"):
        verdict(1.0, 1.0, "<")
    assert set(ROW_KEYS) <= set(r)


def test_bench_json_round_trip_and_validation(tmp_path):
    rows = [make_row("a", 1.0, 2.0, "s", device="cpu", model="m", target=1.0)]
    path = write_bench(tmp_path / "bench.json", rows, [{"layers": 2, "eligible": 10}], meta={"device": "cpu"})
    data = load_bench(path)
    assert data["rows"] == rows and data["scaling"][0]["layers"] == 2 and data["meta"]["device"] == "cpu"
    with pytest.raises(ValueError, match="lacks"):
        validate_rows([{"name": "a", "ours": 1.0}])
    with pytest.raises(ValueError, match="finite"):
        validate_rows([{**rows[0], "ratio": float("nan")}])
    (tmp_path / "bad.json").write_text(json.dumps({"meta": {}}))
    with pytest.raises(ValueError, match="repro bench"):
        load_bench(tmp_path / "bad.json")


@pytest.fixture
def setup(tiny_model, sent_examples):
    from repro.bench.pairs import Setup

    tiny_model.eval()
    return Setup(model=tiny_model, task="sent", examples=sent_examples, device="cpu", label="tiny", batch_size=4,
                 n_calibration=8, n_eval=8, grid_points=3, repeats=1, iterations=1, warmup=0)


def test_official_fisher_loop_equals_our_vmap_round(tiny_model, sent_examples):
    from repro.bench.pairs import official_fisher_round
    from repro.core.fisher import diagonal_fisher

    names = tiny_model.maskable_names()
    ours = diagonal_fisher(tiny_model, sent_examples, "sent", names, batch_size=4, seed=3, method="vmap",
                           progress=False)
    official = official_fisher_round(tiny_model, sent_examples, "sent", names, batch_size=4, seed=3)
    for n in names:
        torch.testing.assert_close(ours[n], official[n], rtol=1e-4, atol=1e-7)
    assert all(not p.requires_grad and p.grad is None for p in tiny_model.parameters())


def test_every_pair_gives_schema_rows_on_the_tiny_model(setup):
    from repro.bench.pairs import run_pairs

    before = {n: p.detach().clone() for n, p in setup.model.named_parameters()}
    lines = []
    rows = run_pairs(setup, log=lines.append)
    validate_rows(rows)
    by = {r["name"]: r for r in rows}
    assert len(lines) == len(rows) and all("seconds" in r for r in rows)
    assert {"graft step time", "Fisher round time", "TaLoS iteration time (90% sparse)", "α grid, linearized model",
            "stored 90%-sparse TaLoS vector vs dense checkpoint"} <= set(by)
    assert by["Fisher scores max relative difference"]["pass"] is True  # equal scores, not a timing
    assert by["TaLoS optimizer state entries"]["pass"] is True  # state only for trainable entries
    assert by["TaLoS optimizer state entries"]["ours"] < by["TaLoS optimizer state entries"]["baseline"]
    assert 0 < by["stored 90%-sparse TaLoS vector vs dense checkpoint"]["ratio"] < 1
    assert by["graft peak memory vs official 3 copies"]["ratio"] < 1  # one model copy instead of three
    assert "max |logit difference|" in by["α grid, linearized model"]["note"]
    for n, p in setup.model.named_parameters():  # timed training iterations leave the model as it was
        assert torch.equal(p, before[n]), n


def test_scaling_fit_and_truncation(setup):
    from repro.bench.scaling import fit_exponent, truncated

    assert fit_exponent([1, 2, 4], [3.0, 6.0, 12.0]) == pytest.approx(1.0)
    assert fit_exponent([1, 2, 4], [1.0, 4.0, 16.0]) == pytest.approx(2.0)
    assert fit_exponent([5], [1.0]) is None
    one = truncated(setup.model, 1)
    assert len(one.backbone.encoder.layer) == 1 and len(setup.model.backbone.encoder.layer) == 2
    assert len(one.graftable_names()) == len(setup.model.graftable_names()) // 2
    with pytest.raises(ValueError, match="layers"):
        truncated(setup.model, 3)


def test_book_rebuild_is_not_measured_without_a_built_book(tmp_path):
    from repro.bench.scaling import book_rebuild_row

    row = book_rebuild_row("cpu", output_dir=str(tmp_path))
    validate_rows([row])
    assert row["ours"] is None and row["pass"] is None and row["note"].startswith("not measured")


def test_run_writes_the_json_and_leaves_the_runner_records_alone(tmp_path):
    """The Performance page's cache key covers bench.json (repro.runner.notebooks.INPUT_FILES): nothing to delete."""
    from repro.bench.main import run

    record = tmp_path / "smoke" / "performance.cache.json"
    record.parent.mkdir()
    record.write_text("{}")
    out = run("cpu", quick=True, models=["tiny-bert"], only=["storage"], scaling=False, book=False,
              output=tmp_path / "bench.json", log=lambda s: None)
    data = load_bench(tmp_path / "bench.json")
    assert [r["name"] for r in data["rows"]] == [r["name"] for r in out["rows"]]
    assert data["meta"]["quick"] is True and all(r["model"].startswith("tiny") for r in data["rows"])
    assert record.read_text() == "{}"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_a_gpu_fails_with_a_clear_message(capsys):
    from repro.bench.main import main

    assert main(["--device", "cuda", "--quick"]) == 2
    assert "no CUDA GPU is available" in capsys.readouterr().err


def test_cli_bench_runs_the_kernel_in_a_subprocess(monkeypatch):
    import subprocess

    from repro.runner import cli

    seen = {}

    class Done:
        returncode = 0

    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: seen.setdefault("cmd", cmd) and Done())
    assert cli.main(["bench", "--quick", "--no-book"]) == 0
    assert seen["cmd"][1:] == ["-m", "repro.bench", "--device", "cpu", "--quick", "--no-book"]
