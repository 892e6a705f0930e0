"""P1 §2-3 / App. B region analyses: sweeps, bias-only and lottery regions, placement, Fig. 15 tracking."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from repro.report.comparison import attach_printed, mean_std, seed_rows
from repro.data import TaskData
from repro.core.finetune import train
from repro.core.masks import Mask, placement_rows
from repro.profiles import FinetuneRecipe, get_profile
from repro.jobcall import ChapterJobs, UndeclaredJob
from repro.jobs import finetune_job, graft_job
from repro.p1.regions import (evaluate_region, fish_regions, ft_and_graft, graftable_total, lottery_curve,
                              magnitude_region, middle_layer_share, movement_region, random_region, plotted,
                              retrained_region, scope_fraction, sparsity_curve)
from repro.p1.trajectory import checkpoint_tracking, finetune_snapshots, model_labels, tracking_summary

from conftest import SENTIMENT

RECIPE = FinetuneRecipe(optimizer="sgd", lr=5e-2, batch_size=4, steps=12, eval_every=0)


@pytest.fixture
def wb(tmp_path, monkeypatch, sent_examples):
    """A smoke Workbench whose only task is the fixture sentiment task (no dependence on the data module)."""
    import repro.workbench
    from repro.workbench import Workbench

    def fake_load_task(name, profile, seed=13, k=None, data_dir=None):
        return TaskData(SENTIMENT, train=list(sent_examples), dev=list(sent_examples[::2]),
                        test=list(sent_examples))

    monkeypatch.setattr(repro.workbench, "load_task", fake_load_task)  # the name Workbench.task calls
    prof = get_profile("smoke").with_(p1_finetune=RECIPE, graft_steps=2)
    return Workbench(prof, artifacts_dir=tmp_path)


@pytest.fixture
def tau(wb):
    return wb.finetune("sent")


def declared(wb, *, base=0.05, sweep=(), scope="graftable"):
    """A chapter of the fixture task: its FT job, the graft on top-``base`` and the ``sweep`` grafts (``scope``),
    the graft re-trained and BitFit, all obtained through :class:`ChapterJobs` as a notebook does."""
    prof = wb.profile
    ft = finetune_job(prof, "p1_test", "sent", prof.p1_finetune)
    grafts = [graft_job(prof, "p1_test", "sent", ft, base)]
    grafts += [graft_job(prof, "p1_test", "sent", ft, s, scope=scope) for s in sweep]
    retrain = finetune_job(prof, "p1_test", "sent", prof.p1_finetune, trainable=grafts[0])
    bitfit = finetune_job(prof, "p1_test", "sent", prof.p1_finetune, trainable="bias")
    return ChapterJobs(wb, "p1_test", None, specs=[ft, *grafts, retrain, bitfit])


def learned_of(jobs, scope="graftable"):
    """{sparsity: learned graft} of the declared graft jobs of ``scope``."""
    return {g.kwargs["base"]: jobs.value(g) for g in jobs.select(kind="graft", scope=scope)}


def test_region_builders_sizes(wb, tau):
    total = graftable_total(wb)
    s = 0.05
    base = movement_region(wb, tau, s)
    assert base.count() == int(s * total)
    top = max(abs(float(v.abs().max())) for v in tau.values())
    assert any(bool((tau[n].abs() == top).logical_and(base.tensors[n]).any()) for n in base.shapes)
    rnd = random_region(wb, base.count(), seed=1)
    assert rnd.count() == base.count() and rnd != base
    bias = movement_region(wb, tau, 0.01, scope="bias")
    assert all(n.endswith("bias") for n in bias.shapes)
    assert bias.count() == int(scope_fraction(wb, 0.01, "bias") * bias.eligible_count)
    with pytest.raises(ValueError, match="more than the whole 'bias' set"):
        scope_fraction(wb, 0.9, "bias")
    mag = magnitude_region(wb, tau, 0.5)
    assert mag.density() == pytest.approx(0.5, abs=1e-3)


def test_sparsity_curve_rows_and_graft_cache(wb, tau):
    jobs = declared(wb, sweep=[0.01])
    grafts = learned_of(jobs)
    rows = sparsity_curve(wb, "sent", tau, [0.01, 0.05], random_seeds=(0, 1), label="SGD", learned=grafts)
    assert {r["region"] for r in rows} == {"learned", "movement", "random", "movement-matched"}
    assert len(rows) == 2 * (1 + 1 + 2 + 1)
    total = graftable_total(wb)
    for r in rows:
        assert r["label"] == "SGD" and 0 <= r["value"] <= 1
        assert r["sparsity_pct"] == pytest.approx(100 * r["count"] / total)
    for s in (0.01, 0.05):
        learned = next(r for r in rows if r["region"] == "learned" and r["target_sparsity"] == s)
        rand = [r for r in rows if r["region"] == "random" and r["target_sparsity"] == s]
        assert all(r["count"] == learned["count"] for r in rand)
        matched = next(r for r in rows if r["region"] == "movement-matched" and r["target_sparsity"] == s)
        assert matched["count"] == learned["count"]  # top-|τ| at the learned region's actual size
        assert len(matched["correct"]) == len(learned["correct"]) and set(matched["correct"]) <= {0, 1}
        assert matched["acc"] == pytest.approx(float(np.mean(matched["correct"])))
        move = next(r for r in rows if r["region"] == "movement" and r["target_sparsity"] == s)
        assert move["count"] == int(s * total)
    assert grafts[0.05].count() == next(r["count"] for r in rows
                                         if r["region"] == "learned" and r["target_sparsity"] == 0.05)
    assert all("correct" not in r for r in plotted(rows)) and len(plotted(rows)) == len(rows)
    with pytest.raises(ValueError, match="pass its graft"):
        sparsity_curve(wb, "sent", tau, [0.2], regions=("learned",), learned=grafts)
    bias_jobs = declared(wb, sweep=[0.01], scope="bias")
    bias = {s: bias_jobs.value(g) for s, g in zip([0.01], bias_jobs.select(kind="graft", scope="bias"))}
    bias_rows = sparsity_curve(wb, "sent", tau, [0.01], regions=("learned", "movement"), scope="bias", learned=bias)
    assert all(r["scope"] == "bias" for r in bias_rows)


def test_evaluate_region_full_mask_is_ft(wb, tau):
    full = Mask.full(wb.shapes("graftable"))
    ft = wb.evaluate("sent", "test", wb.overrides(tau))
    r = evaluate_region(wb, "sent", tau, full)
    assert r["value"] == ft["value"] and r["ece"] == pytest.approx(ft["ece"]) and r["density"] == 1.0


def test_lottery_curve_dense_end_is_ft(wb, tau):
    rows = lottery_curve(wb, "sent", tau, [0.3, 1.0])
    ft = wb.evaluate("sent", "test", wb.overrides(tau))["value"]
    dense = {r["method"]: r for r in rows if r["target_density"] == 1.0}
    assert dense["zero_outside"]["value"] == ft and dense["graft"]["value"] == ft
    assert {r["method"] for r in rows} == {"zero_outside", "graft"}


def test_placement_rows_cover_the_region(wb, tau):
    mask = movement_region(wb, tau, 0.05)
    rows = placement_rows(mask, task="sent")
    assert sum(r["selected"] for r in rows) == mask.count()
    assert sum(r["eligible"] for r in rows) == mask.eligible_count
    assert sum(r["share_of_region"] for r in rows) == pytest.approx(1.0)
    assert {"Q", "K", "V", "O", "FFN-in", "FFN-out", "LayerNorm"} <= {r["type"] for r in rows}
    assert all(r["task"] == "sent" for r in rows)
    third = middle_layer_share(mask)
    assert sum(third[k] for k in ("first_share", "middle_share", "last_share")) == pytest.approx(1.0)


def test_train_callback_sees_every_step(tiny_model, sent_examples):
    seen = []
    train(tiny_model, {"sent": sent_examples}, RECIPE, tiny_model.graftable_names(), progress=False,
          callback=lambda step, model: seen.append(step))
    assert seen == list(range(1, RECIPE.steps + 1))


def test_snapshots_match_workbench_finetune(wb, tau):
    snaps = finetune_snapshots(wb, "sent", every=5, progress=False)
    assert sorted(snaps) == [0, 5, 10, 12]
    for n, v in tau.items():  # eval_every=0: Workbench keeps the last step, the trajectory's end
        assert torch.allclose(snaps[12][n], v, atol=1e-7)
    assert all(torch.equal(p, wb.pre[n]) for n, p in wb.model.named_parameters() if n in wb.pre)
    relabeled = model_labels(wb, "sent", snaps[12], wb.task("sent").train)
    preds = wb.predict("sent", "train", wb.overrides(snaps[12])).preds.tolist()
    assert [e.label for e in relabeled] == preds


def test_checkpoint_tracking_rows_and_cache(wb):
    out = checkpoint_tracking(wb, "sent", [0.01, 0.05], checkpoint=6, every=3,
                              graft=replace(wb.profile.graft, steps=2), progress=False)
    steps = sorted({r["step"] for r in out["rows"]})
    assert steps == [0, 3, 6, 9, 12]
    assert len(out["rows"]) == len(steps) * 3
    assert set(out["regions"]) == {"0.01", "0.05"}
    again = checkpoint_tracking(wb, "sent", [0.01, 0.05], checkpoint=6, every=3,
                              graft=replace(wb.profile.graft, steps=2), progress=False)
    assert again["rows"] == out["rows"]
    summary = tracking_summary(out["rows"], checkpoint=6)
    assert {(s["model"], s["target_sparsity"]) for s in summary} == {("FT", None), ("graft", 0.01), ("graft", 0.05)}
    with pytest.raises(ValueError, match="not a snapshot step"):
        checkpoint_tracking(wb, "sent", [0.01], checkpoint=5, every=3, progress=False)


def test_seed_rows_and_printed_cells():
    runs = [{"task": "SST-2", "method": "Graft", "sparsity": 0.01, "value": 0.90, "ece": 0.05},
            {"task": "SST-2", "method": "Graft", "sparsity": 0.01, "value": 0.92, "ece": 0.07}]
    rows = seed_rows(runs, ["task", "method", "sparsity"], {"value": "acc", "ece": "ece"}, extra={"shots": 4096})
    grouped = seed_rows([dict(r, sparsity=0.01 * (i + 1), count=10 * (i + 1)) for i, r in enumerate(runs)],
                        ["task", "method"], {"value": "acc"})
    assert len(grouped) == 1 and grouped[0]["sparsity"] == pytest.approx(0.015) and grouped[0]["count"] == 15
    acc = next(r for r in rows if r["metric"] == "acc")
    assert acc["value"] == pytest.approx(91.0) and acc["std"] == pytest.approx(mean_std([90, 92])[1])
    assert acc["n_seeds"] == 2 and acc["shots"] == 4096
    filled = attach_printed(rows, "p1", 2, lambda r: {"task": r["task"], "method": r["method"],
                                                      "shots": r["shots"], "metric": r["metric"]})
    assert next(r for r in filled if r["metric"] == "acc")["paper"] == 92.4
    none = attach_printed(rows, "p1", 2, lambda r: {"task": "TREC", "method": "Graft", "shots": 4096,
                                                    "metric": r["metric"]})
    assert all(r["paper"] is None for r in none)


def test_ft_and_graft_and_retraining(wb, tau):
    jobs = declared(wb)
    out = ft_and_graft(jobs, jobs.one(kind="graft"))
    assert out["ft"]["value"] == wb.evaluate("sent", "test", wb.overrides(tau))["value"]
    assert 0 <= out["graft"]["agreement"] <= 1 and out["graft"]["count"] == out["mask"].count()
    assert out["ft"]["sparsity_pct"] == 100.0
    bitfit = retrained_region(jobs, jobs.one(kind="finetune", trainable="bias"))
    assert bitfit["count"] == sum(wb.pre[n].numel() for n in wb.names("bias"))
    spec = next(s for s in jobs.select(kind="finetune") if s.deps)
    region = retrained_region(jobs, spec)
    assert region["count"] == out["mask"].count()
    assert len(region["correct"]) == len(out["correct"]["graft"])  # same test examples: paired with the graft
    assert region["acc"] == pytest.approx(float(np.mean(region["correct"])))


def test_fish_regions_nested_and_cached(wb):
    masks = fish_regions(wb, "sent", [0.01, 0.1])
    total = graftable_total(wb)
    assert masks[0.01].count() == int(0.01 * total) and masks[0.1].count() == int(0.1 * total)
    assert (masks[0.01] & masks[0.1]) == masks[0.01]  # top-k of one Fisher: the smaller mask is inside
    again = fish_regions(wb, "sent", [0.1])
    assert again[0.1] == masks[0.1]


def localization(wb, *, base=0.05, sweep=(0.01,)):
    """The fixture task as the localization chapter declares it, with its roles: the SGD model first ("fig2-sgd"),
    its Table 2 graft ("table2"; also γ_base's sweep point), the other sweep points ("fig2-sgd"), a bias graft
    ("fig4a-bias"), the Table 1 re-training and BitFit, and an AdamW model ("fig5-adamw") with its sweep."""
    prof = wb.profile
    sweep_recipe = prof.graft.updated(steps=1)

    def curve_jobs(model, sparsities, role, scope="graftable"):  # as jobs.curve_jobs (which reads the task registry)
        return [graft_job(prof, "p1_test", "sent", model, s, seed=wb.seed, scope=scope, role=role,
                          recipe=None if s == base else sweep_recipe) for s in sparsities]

    sgd = finetune_job(prof, "p1_test", "sent", prof.p1_finetune, seed=wb.seed, role="fig2-sgd")
    table2 = graft_job(prof, "p1_test", "sent", sgd, base, seed=wb.seed, role="table2")
    grafts = curve_jobs(sgd, (base, *sweep), "fig2-sgd")
    bias = curve_jobs(sgd, sweep, "fig4a-bias", scope="bias")
    retrain = finetune_job(prof, "p1_test", "sent", prof.p1_finetune, seed=wb.seed, trainable=table2,
                           role="table1-retrain")
    bitfit = finetune_job(prof, "p1_test", "sent", prof.p1_finetune, seed=wb.seed, trainable="bias",
                          role="table1-bitfit")
    adamw = []
    for role, l1 in (("fig5-adamw", 0.0), ("fig5-adamw-l1", 1e-3)):
        model = finetune_job(prof, "p1_test", "sent", replace(prof.p1_finetune, optimizer="adamw", lr=1e-3),
                             seed=wb.seed, l1=l1, role=role)
        adamw += [model, *curve_jobs(model, sweep, role)]
    return ChapterJobs(wb, "p1_test", None, specs=[sgd, table2, *grafts, *bias, retrain, bitfit, *adamw])


def test_localization_sweeps_share_the_sgd_curve_and_pair_table1(wb, tau):
    from repro.p1.localization.plan import LocalizationPlan
    from repro.p1.localization.runs import LocalizationSweeps, curve_grafts, fig4a_runs, fig5_runs, table1_runs

    plan = LocalizationPlan(sparsities=(0.01, 0.05), sweep_steps=1, n_eval=0)
    jobs = localization(wb)
    sgd = jobs.one(kind="finetune", role="fig2-sgd")
    points = curve_grafts(jobs, sgd)
    assert list(points) == [0.05, 0.01] and points[0.05].role == "table2"  # γ_base's point is the Table 2 graft
    sw = LocalizationSweeps(jobs, plan)
    assert sw.model("SGD", "sent") == sgd
    rows = sw.sgd_curve("sent")
    assert sw.sgd_curve("sent") is rows  # computed once, shared by Figs. 2-5
    assert [r["target_sparsity"] for r in rows if r["region"] == "learned"] == [0.05, 0.01]
    assert len(sw.subset("sent")) == len(wb.task("sent").test)
    bias = fig4a_runs(sw, ["sent"], [0.01])
    assert [(r["scope"], r["region"], r["target_sparsity"]) for r in bias] == [
        ("bias", "learned", 0.01), ("bias", "movement", 0.01), ("graftable", "learned", 0.01)]
    refs = sw.references(jobs, sgd, "SGD")
    assert [r["model"] for r in refs] == ["FT", "pre-trained"] and refs[1]["count"] == 0
    ref = evaluate_region(wb, "sent", tau, Mask.full(wb.shapes("graftable")), examples=sw.subset("sent"))
    assert {k: refs[0][k] for k in ref} == ref and refs[0]["correct"].mean() == pytest.approx(refs[0]["acc"])
    assert plotted(refs)[0] == ref | {"task": "sent", "label": "SGD", "model": "FT"}
    ft = sw.scored(wb, "sent", wb.overrides(tau))
    assert ft["acc"] == wb.evaluate("sent", "test", wb.overrides(tau), examples=sw.subset("sent"))["acc"]
    lottery = sw.lottery("sent")  # lottery_curve's rows, plus per-example correctness
    assert plotted(lottery) == plotted(lottery_curve(wb, "sent", tau, plan.lottery_densities,
                                                     examples=sw.subset("sent")))
    assert all(r["correct"].mean() == pytest.approx(r["acc"]) for r in lottery)
    runs, paired = table1_runs(jobs)
    assert [r["method"] for r in runs] == ["FT", "Grafting", "Graft re-training", "BitFit"]
    one = paired[("sent", wb.seed)]
    assert one["graft_count"] == runs[2]["count"] == jobs.value(jobs.one(kind="graft", role="table2")).count()
    assert len(one["graft"]) == len(one["retrain"]) == len(one["bitfit"])
    fig5, ft5 = fig5_runs(sw, ["sent"])
    assert [(r["label"], r["target_sparsity"]) for r in fig5] == [
        ("SGD", 0.05), ("SGD", 0.01), ("AdamW", 0.01), ("AdamW + l1", 0.01)]
    assert set(ft5) == {("sent", "SGD"), ("sent", "AdamW"), ("sent", "AdamW + l1")}
    with pytest.raises(UndeclaredJob, match="0 declared jobs match"):  # only what jobs.py declares
        sw.model("standard FT (linear head)", "sent")
    assert jobs.record()["unused"] == []  # every declared job obtained


def test_table2_runs_rows_and_graft_sizes(wb):
    from repro.p1.localization.runs import table2_rows, table2_runs
    from repro.p1.localization.views import graft_sizes

    prof = wb.profile
    ks = (prof.k_shot, prof.k_shot_large)
    specs = []
    for k in ks:
        ft = finetune_job(prof, "p1_test", "sent", prof.p1_finetune, k=k, seed=wb.seed, role="table2")
        specs += [ft, graft_job(prof, "p1_test", "sent", ft, 0.05, k=k, seed=wb.seed, role="table2",
                                recipe=prof.graft.updated(steps=1) if k == ks[1] else None)]
    runs, outs = table2_runs(ChapterJobs(wb, "p1_test", None, specs=specs))
    assert list(outs) == [("sent", ks[0], wb.seed), ("sent", ks[1], wb.seed)]
    assert [(r["method"], r["shots"], r["paper_shots"]) for r in runs] == [
        ("FT", ks[0], 64), ("Graft", ks[0], 64), ("FT", ks[1], 4096), ("Graft", ks[1], 4096)]
    graft = runs[1]
    assert graft["count"] == outs[("sent", ks[0], wb.seed)]["mask"].count() and 0 <= graft["agreement"] <= 1
    rows = table2_rows(runs)
    assert {(r["method"], r["metric"]) for r in rows} >= {("FT", "acc"), ("Graft", "acc"), ("Graft", "agreement")}
    assert all(r["paper"] is None for r in rows)  # the fixture task is not in the paper's Table 2
    sizes = graft_sizes(outs, graftable_total(wb))
    assert list(sizes["graft"]) == [f"{o['mask'].count():,}" for o in outs.values()]
    assert list(sizes["task"]) == ["sent", "sent"] and "train+dev at best" in sizes
