"""The P1 appendix drivers (repro.p1.appendix.runs): table helpers on hand-made runs and masks, and the declared
jobs each driver finds."""

from types import SimpleNamespace

import pandas as pd
import pytest
import torch

from repro.core.masks import Mask
from repro.jobcall import ChapterJobs
from repro.p1.appendix import runs as app
from repro.p1.appendix.plan import appendix_plan
from repro.profiles import get_profile


def _declared(profile):
    """The chapter's declared jobs on a stub Workbench of ``profile`` (only the declarations are read)."""
    return ChapterJobs(SimpleNamespace(profile=profile, linear_heads=False), "p1_appendix", profile, seed=13)
def _score(method, target, acc, count, task="SST-2", **extra):
    return {"task": task, "method": method, "target": target, "acc": acc, "value": acc, "ece": 0.1,
            "count": count, "sparsity_pct": 100.0 if target is None else 100 * target, **extra}


def test_table5_rows_name_the_papers_sentiment_row_and_sizes():
    runs = [_score("FT", None, 0.9, 1000), _score("Graft", 3e-4, 0.88, 3)]
    rows = app.table5_rows(runs, 512)
    by = {(r["method"], r["metric"]): r for r in rows}
    assert by[("Graft", "acc")]["paper_task"] == "Sentiment" and by[("Graft", "acc")]["paper_sparsity"] == 0.03
    assert by[("FT", "acc")]["paper_sparsity"] == 100.0 and by[("FT", "acc")]["value"] == pytest.approx(90.0)
    assert all(r["examples_per_class"] == 512 for r in rows)


def test_table8_rows_and_scores_side_by_side():
    runs = [{"task": "SST-2", "method": "Graft vs FISH mask", "target": 1e-3, "overlap": 0.05, "count": 10,
             "fish_count": 10, "degenerate": []}]
    runs += [_score(m, 1e-3, a, 10) for m, a in (("Graft", 0.8), ("Graft with FISH mask", 0.7),
                                                   ("Random Graft", 0.5))]
    rows = app.table8_rows(runs, 64)
    assert {r["method"] for r in rows} == {"Graft vs FISH mask", "Graft", "Graft with FISH mask", "Random Graft"}
    assert all(r["sparsity"] == pytest.approx(0.1) and r["shots"] == 64 for r in rows)
    scores = app.table8_scores(runs)
    assert scores.loc[("SST-2", 1e-3), ("value", "Graft")] == pytest.approx(0.8)
    assert scores.loc[("SST-2", 1e-3), ("count", "Random Graft")] == 10


def test_table9_ratios_use_f1_where_the_task_reports_it():
    runs = [{"task": "SST-2", "method": "FT", "shots": 64, "acc": 0.8}, {"task": "SST-2", "method": "Graft",
                                                                       "shots": 64, "acc": 0.6},
            {"task": "MRPC", "method": "FT", "shots": 64, "f1": 0.5}, {"task": "MRPC", "method": "Graft",
                                                                     "shots": 64, "f1": 0.5}]
    assert app.table9_ratios(runs, 64) == pytest.approx({"SST-2": 0.75, "MRPC": 1.0})


def test_placement_helpers_on_two_regions():
    names = [f"encoder.layer.{i}.attention.self.value.weight" for i in range(3)]
    names += [f"encoder.layer.{i}.intermediate.dense.weight" for i in range(3)]
    shapes = {n: (4, 4) for n in names}
    only_v = Mask({n: torch.ones(4, 4, dtype=torch.bool) if "value" in n and ".1." in n
                   else torch.zeros(4, 4, dtype=torch.bool) for n in names})
    regions = {("SST-2", 1e-5): only_v, ("SST-2", 1e-3): Mask.random(shapes, 20, seed=0)}
    place = pd.DataFrame(app.placement_table(regions))
    assert set(place.region_size) == {16, 20}
    eligible = app.eligible_shares(place, "type")
    assert eligible.sum() == pytest.approx(1.0) and eligible["V"] == pytest.approx(0.5)
    by_type = app.module_shares(place)
    v = by_type[(by_type.target_sparsity == 1e-5) & (by_type.type == "V")].share_of_region.item()
    assert v == pytest.approx(1.0)
    thirds, shares = app.placement_claim_inputs(regions, by_type)
    assert thirds[0]["middle_share"] == pytest.approx(1.0) and shares[("SST-2", 1e-5)]["V"] == pytest.approx(1.0)
    assert sum(shares[("SST-2", 1e-3)].values()) == pytest.approx(1.0)


def test_drivers_find_one_declared_graft_per_use_of_this_workbenchs_model():
    prof = get_profile("smoke")
    plan, jobs = appendix_plan(prof), _declared(prof)
    large = plan.large_graft(prof)
    g5 = app.graft_spec(jobs, "SST-2", plan.large_sparsities[0], large, k=plan.large_k, seed=13)
    assert g5.kwargs["k"] == plan.large_k and g5.kwargs["steps"] == large.steps
    grafts = app.placement_grafts(jobs, plan, prof.graft_base_sparsity, 13)
    assert set(grafts) == {(t, s) for t in plan.placement_tasks
                           for s in (prof.graft_base_sparsity, *plan.placement_sparsities)}
    assert all(jobs.deps(g, "finetune")[0].kwargs["model"] == prof.model for g in grafts.values())
    with pytest.raises(LookupError, match="0 declared grafts"):
        app.graft_spec(jobs, "SST-2", 0.5, large, k=plan.large_k, seed=13)
    # Table 9: the same kwargs on the GPT-2 Workbench find its own grafts (role "table9"), not the main model's
    gpt2 = app.gpt2_profile(prof)
    jobs9 = jobs.on(SimpleNamespace(profile=gpt2, linear_heads=False))
    t9 = jobs9.select(kind="graft", role="table9")
    assert {g.kwargs["task"] for g in t9} == {"SST-2", "QNLI"}
    assert all(jobs9.deps(g, "finetune")[0].kwargs["model"] == gpt2.model for g in t9)
    assert app.graft_spec(jobs9, "SST-2", 1e-2, gpt2.graft, k=gpt2.k_shot, seed=13) in t9
    fish = jobs.select(kind="fish")
    assert [f.kwargs["task"] for f in fish] == list(plan.fish_tasks)
    assert sorted(g.kwargs["base"] for g in jobs.deps(fish[0], "graft")) == sorted(plan.fish_densities)
