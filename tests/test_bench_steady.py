"""`repro bench`'s steady-state figures on the tiny model: per-step times from inside one call, spreads, Table 3
ratios with a CI and their verdicts, the GPU-hours pricing, the paired timing's memory call.  No timed
assertions: only counts, structure, verdict logic on synthetic times and bitwise equalities."""

from __future__ import annotations

import json

import pytest
import torch

from repro.bench import hours
from repro.bench.measure import paired
from repro.bench.rows import status, validate_rows
from repro.bench.steady import StepClock, graft_steps, spread, steady_report, table3_ratios, train_steps


@pytest.fixture
def setup(tiny_model, sent_examples):
    from repro.bench.pairs import Setup

    tiny_model.eval()
    return Setup(model=tiny_model, task="sent", examples=sent_examples * 2, device="cpu", label="tiny", batch_size=4,
                 n_calibration=8, n_eval=8, grid_points=3, repeats=1, iterations=1, warmup=0)


def test_spread_summarises_repeats():
    sp = spread([1.0, 2.0, 3.0, 4.0, 5.0])
    assert sp["median"] == 3.0 and sp["q1"] == 2.0 and sp["q3"] == 4.0 and sp["n"] == 5
    assert sp["rel_iqr"] == pytest.approx(2 / 3) and sp["min"] == 1.0 and sp["max"] == 5.0
    assert spread([])["median"] is None


def test_step_clock_gives_intervals_between_steps():
    clock = StepClock("cpu")
    clock.stamps = [0.0, 1.0, 3.0, 6.0, 10.0, 15.0, 21.0, 28.0]
    assert clock.times(skip=0) == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    assert clock.times(skip=3) == [4.0, 5.0, 6.0, 7.0]
    clock.stamps = [0.0, 1.0, 3.0]
    assert clock.times(skip=3) == [1.0, 2.0]  # too few intervals to drop any


def test_train_steps_are_timed_inside_one_call_and_leave_the_model_as_it_was(setup):
    before = {n: p.detach().clone() for n, p in setup.model.named_parameters()}
    times = train_steps(setup, steps=10)
    assert len(times) == 9 - 3 and all(t > 0 for t in times)  # 9 intervals, the first 3 dropped
    assert all(torch.equal(before[n], p) for n, p in setup.model.named_parameters())


def test_learn_graft_calls_back_after_every_step_and_graft_steps_counts_passes(setup, sent_examples):
    from repro.core.grafting import learn_graft, movement_mask
    from repro.profiles import GraftRecipe

    delta = {n: torch.full_like(setup.model.get_parameter(n), 1e-3) for n in setup.model.graftable_names()}
    seen = []
    learn_graft(setup.model, "sent", delta, sent_examples, sent_examples, movement_mask(delta, 0.1),
                GraftRecipe(steps=3, max_examples=4, batch_size=2), progress=False, callback=seen.append)
    assert seen == [1, 2, 3]
    times, passes = graft_steps(setup, steps=3, n_examples=8)
    assert len(times) == 2 and all(t > 0 for t in times)
    assert passes == 8 + (8 + 2) / 3  # gradient over 8, then 8 scored train + 2 dev at 1/3 each


def test_graft_update_with_precomputed_base_entries_is_bitwise_the_same(setup):
    from repro.core.grafting import base_entries, graft_update, init_scores, movement_mask

    names = setup.model.graftable_names()
    gen = torch.Generator().manual_seed(1)
    delta = {n: torch.randn(setup.model.get_parameter(n).shape, generator=gen) * 1e-2 for n in names}
    base = movement_mask(delta, 0.05)
    S = init_scores(delta, seed=0)
    a = graft_update(setup.model, "sent", setup.batch, delta, S, base, lr=1e7, batch_size=2)
    b = graft_update(setup.model, "sent", setup.batch, delta, S, base, lr=1e7, batch_size=2, idx=base_entries(base, S))
    assert base.count() > 0 and all(torch.equal(a[n], b[n]) for n in a)


def test_table3_ratios_give_a_ci_and_the_claims_verdicts():
    ft = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0]
    times = {"ft": ft, "linearized": [2 * t for t in ft], "talos": [0.5 * t for t in ft]}
    by = {r["key"]: r for r in table3_ratios(times, n_resamples=200)}
    assert by["linearized"]["ratio"] == pytest.approx(2.0) and by["linearized"]["verdict"] == "holds"
    assert by["talos"]["ratio"] == pytest.approx(0.5) and by["talos"]["verdict"] == "holds"
    assert by["talos/linearized"]["verdict"] == "holds"
    assert all(r["ci_low"] <= r["ratio"] <= r["ci_high"] for r in by.values())
    slower = table3_ratios({"ft": ft, "talos": [1.5 * t for t in ft]}, n_resamples=200)[0]
    assert slower["verdict"] == "does-not-hold"
    noisy = table3_ratios({"ft": ft, "talos": [0.6, 1.4, 0.7, 1.3, 0.8, 1.2]}, n_resamples=200)[0]
    assert noisy["verdict"] == "inconclusive" and noisy["ci_low"] < 1 < noisy["ci_high"]


def test_pricing_reports_unmeasured_units_and_never_guesses():
    p1 = {"p1_ft_step": {"seconds": 0.01, "batch": 2}, "p1_graft_example": {"seconds": 0.001, "batch": 8},
          "p1_eval_example": {"seconds": 0.0001, "batch": 64}}
    assert hours.rate("finetune", "", p1) == 0.005 and hours.rate("arithmetic", "", p1) == pytest.approx(3e-4)
    assert hours.rate("finetune", "vision", p1) is None and hours.rate("merge", "nlp", p1) is None
    est = hours.estimate_hours(p1, families=("vision",))["vision"]
    assert all(v["gpu_hours"] > 0 and v["unpriced"] == 0 for nb, v in est.items() if nb.startswith("p1"))
    assert all(v["gpu_hours"] is None and v["unpriced"] == v["jobs"] > 0 for nb, v in est.items()
               if nb.startswith("p2"))
    assert hours.total_hours({"vision": est}) is None
    doubled = hours.estimate_hours({k: {**v, "seconds": 2 * v["seconds"]} for k, v in p1.items()},
                                   families=("vision",))["vision"]
    assert doubled["p1_appendix"]["gpu_hours"] == pytest.approx(2 * est["p1_appendix"]["gpu_hours"])


def test_paired_measures_memory_on_an_extra_call_unless_a_side_runs_once():
    calls = {"a": 0, "b": 0}

    def f(key):
        def g():
            calls[key] += 1
            return calls[key]
        return g

    a, b = paired(f("a"), f("b"), "cpu", repeats=3, warmup=1, repeats_b=1)
    assert calls == {"a": 1 + 1 + 3, "b": 1 + 1}  # warm-up, the memory call, the timed calls (b: its one call)
    assert a.output == 5 and b.output == 2 and a.seconds > 0 and b.seconds > 0


def test_steady_report_rows_and_json(setup, tmp_path):
    from repro.bench.rows import write_bench

    settings = dict(train_steps=8, graft_steps=3, graft_examples=4, eval_repeats=2, rounds=3, iterations=1)
    report, rows = steady_report(setup, settings, peak_gflops=10.0, log=lambda s: None)
    validate_rows(rows)
    assert set(report["kinds"]) == {"train_step", "graft_step", "eval"}
    assert {r["key"] for r in report["table3"]} == {"linearized", "talos", "talos/linearized"}
    assert all(len(v) == 3 for v in report["table3_times"].values())
    assert set(report["per_step"]) == {"p1_ft_step", "p1_graft_example", "p1_eval_example"}
    ci_rows = [r for r in rows if r["name"].startswith("Table 3")]
    assert ci_rows and all(status(r) in ("holds", "does-not-hold", "inconclusive") for r in ci_rows)
    assert all(report["kinds"][k]["gflop"] > 0 for k in report["kinds"])
    path = write_bench(tmp_path / "b.json", rows, extra={"steady": {"tiny": report}})
    assert json.loads(path.read_text())["steady"]["tiny"]["per_step"]["p1_ft_step"]["batch"] == 2


def test_foreach_sgd_is_bitwise_the_per_tensor_update(setup):
    """SGD with weight decay (the no-decay biases and LayerNorms form a second group) through torch._foreach_*."""
    from repro.bench.steady import foreach_ab
    from repro.core.finetune import MaskedOptimizer

    ab = foreach_ab(setup, steps=4, rounds=2)
    assert ab["max_abs_diff"] == 0.0 and len(ab["times"]["foreach"]) == 2
    assert ab["verdict"] in ("holds", "does-not-hold", "inconclusive") and MaskedOptimizer.foreach is False
