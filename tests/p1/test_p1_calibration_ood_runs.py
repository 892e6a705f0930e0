"""P1 §4 chapter drivers (repro.p1.calibration_ood.runs): table rows from hand-made runs, and the declared models."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from repro.p1.calibration_ood import runs as cr
from repro.p1.calibration_ood.plan import calibration_plan, calibration_recipes
from repro.profiles import get_profile


def _ood(source, target, label, acc, sparsity):
    return {"source": source, "target": target, "split": "ID" if source == target else "OOD",
            "method": label.split("@")[0], "label": label, "sparsity": sparsity, "acc": acc, "ece": None}


def test_table3_rows_keep_the_four_models_in_percent_and_skip_sweep_sizes():
    runs = [_ood("QNLI", "QNLI", "Grafting", 0.8, 0.01), _ood("QNLI", "SNLI", "Grafting", 0.6, 0.01),
            _ood("QNLI", "SNLI", "FT", 0.5, 100.0), _ood("QNLI", "SNLI", "BitFit", 0.4, 0.1),
            _ood("QNLI", "SNLI", "Grafting@0.01", 0.7, 1.0)]
    rows = cr.table3_rows(runs)
    assert sorted(r["method"] for r in rows) == ["BitFit", "FT", "Grafting"]  # no ID row, no sweep size
    graft = next(r for r in rows if r["method"] == "Grafting")
    assert graft["value"] == pytest.approx(60.0) and graft["id_task"] == "QNLI"
    assert next(r for r in rows if r["method"] == "FT")["paper"] is None  # FT is not in the printed Table 3


def test_table3_rows_name_a_stand_in_target_and_look_up_the_papers_cell():
    runs = [dict(_ood("SST-2", "MR", "Grafting", 0.7, 0.01), shown="MR (for IMDb)", paper_target="IMDb"),
            dict(_ood("SST-2", "MR", "BitFit", 0.6, 0.1), shown="MR (for IMDb)", paper_target="IMDb")]
    rows = cr.table3_rows(runs)
    assert {r["task"] for r in rows} == {"MR (for IMDb)"}
    assert all(r["paper"] is not None for r in rows)  # the printed SST-2 -> IMDb cells sit beside ours


def test_peft_tables_and_gap_rows():
    wb = SimpleNamespace(model=SimpleNamespace(specs={"QNLI": SimpleNamespace(metric="acc")}))
    runs = [{"source": "QNLI", "method": "Grafting", "rank": None, "params": 100, "sparsity": 0.01, "id_acc": 0.8,
             "id_ece": 0.05, "ood:MNLI": 0.6},
            {"source": "QNLI", "method": "LoRA", "rank": 1, "params": 120, "sparsity": 0.012, "id_acc": 0.82,
             "id_ece": 0.10, "ood:MNLI": 0.55}]
    t6, t7 = cr.peft_tables(wb, runs)
    assert {(r["method"], r["metric"]) for r in t6} == {("Grafting", "acc"), ("Grafting", "ece"), ("LoRA", "acc"),
                                                        ("LoRA", "ece")}
    assert next(r for r in t6 if r["method"] == "LoRA" and r["metric"] == "ece")["value"] == pytest.approx(10.0)
    assert {(r["method"], r["split"]) for r in t7} == {(m, s) for m in ("Grafting", "LoRA") for s in ("ID", "OOD")}
    assert next(r for r in t7 if r["split"] == "OOD" and r["method"] == "LoRA")["value"] == pytest.approx(55.0)
    gaps = cr.gap_table_rows([{"task": "QNLI", "method": "FT", "gap_acc": 0.125, "n_train": 32}])
    assert gaps[0]["value"] == pytest.approx(12.5) and gaps[0]["unit"] == "pp" and gaps[0]["n_train"] == 32


def test_chapter_models_find_the_declared_jobs_of_each_role(monkeypatch):
    from repro.jobcall import ChapterJobs
    from repro.jobs import SKIPPED

    profile = get_profile("smoke")
    plan = calibration_plan(profile)
    wb = SimpleNamespace(profile=profile, linear_heads=False)  # only the declarations are read: nothing trains
    jobs = ChapterJobs(wb, "p1_calibration_ood", "smoke", seed=13)
    models = cr.ChapterModels(jobs, plan, calibration_recipes(profile, plan), 13)
    src = plan.sweep_sources[0]
    main = models.graft_spec(src)
    assert main.kwargs["base"] == plan.base and main.kwargs["steps"] == profile.graft.steps
    other = next(b for b in plan.sweep_bases if b != plan.base)
    assert models.graft_spec(src, other).kwargs["steps"] == plan.sweep_graft(profile).steps
    assert jobs.deps(main, "finetune")[0].kwargs["trainable"] == "graftable"
    assert {models.peft(src, p).kwargs["task"] for p in plan.peft} == {src}
    seeds = plan.seeds(profile, 13)
    assert [models.graft_spec(plan.ece_tasks[0], seed=s).kwargs["seed"] for s in seeds] == list(seeds)
    obtained = []
    monkeypatch.setattr(jobs, "artifact", lambda spec: obtained.append(spec) or SKIPPED)  # an empty graft region
    assert models.retrained(src) is None and obtained[0].kwargs["trainable"] == {"job": main.id}


def test_an_empty_graft_has_no_printed_counterpart():
    """Found by the paper rehearsal: a graft region that came out empty (sparsity 0) made Tables 6-7 divide by 0."""
    from repro.p1.calibration_ood.runs import _printed_key

    assert _printed_key({"method": "Graft", "rank": None, "sparsity": 0.0}, task="SST-2") is None
    assert _printed_key({"method": "Graft", "rank": None, "sparsity": 0.012}, task="SST-2")["sparsity"] == 0.01
    assert _printed_key({"method": "LoRA", "rank": 4, "sparsity": 0.3}, task="SST-2") == {"method": "LoRA",
                                                                                         "task": "SST-2", "rank": 4}
