"""P2 §5.2-5.3 analysis helpers: mask overlaps and structure, grid / localization summaries, Table 3-4 rows."""

from __future__ import annotations

import math

import pytest
import torch

from repro.p2.cost import measure_iteration
from repro.p2.efficiency import (calibration_iterations, inject_lora, paper_ratios, table3_rows, table4_rows)
from repro.p2.function_localization import grid_summary, localization_summary, mask_overlap_rows, structure_summary
from repro.core.masks import Mask
from repro.profiles import FinetuneRecipe
from repro.core.masks import placement_rows


def test_mask_overlap_rows_against_hand_counts():
    shapes = {"w": (10,)}
    a = Mask({"w": torch.tensor([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], dtype=torch.bool)}, shapes)
    b = Mask({"w": torch.tensor([0, 0, 1, 1, 1, 1, 0, 0, 0, 0], dtype=torch.bool)}, shapes)
    rows = {(r["a"], r["b"]): r for r in mask_overlap_rows({"a": a, "b": b}, task="t")}
    ab = rows[("a", "b")]
    assert ab["task"] == "t" and abs(ab["iou"] - 2 / 6) < 1e-12 and abs(ab["containment"] - 0.5) < 1e-12
    assert abs(ab["containment_random"] - 0.4) < 1e-12
    assert abs(ab["iou_random"] - 0.16 / (0.8 - 0.16)) < 1e-12
    assert len(rows) == 2


def test_structure_summary_finds_qk(tiny_model):
    names = tiny_model.maskable_names()
    shapes = {n: tuple(p.shape) for n, p in tiny_model.named_parameters() if n in names}
    qk = Mask({n: torch.full(s, ("query" in n or "key" in n) and n.endswith("weight"), dtype=torch.bool)
               for n, s in shapes.items()}, shapes)
    s = structure_summary(placement_rows(qk))
    assert set(s["top_weight_types"][:2]) == {"Q", "K"} and s["qk_top_layers"] == 1.0
    assert s["weight_share"]["Q"] == 100.0 and s["weight_share"]["V"] == 0.0
    uniform = structure_summary(placement_rows(Mask.full(shapes)))
    assert uniform["spread_cv"] == 0.0 and s["spread_cv"] > 0.5


def test_grid_and_localization_summaries():
    rows = [{"alpha1": a, "alpha2": b, "xi": abs(a) + abs(b)} for a in (-2.0, 0.0, 2.0) for b in (-2.0, 0.0, 2.0)]
    s = grid_summary(rows)
    assert abs(s["xi_mean"] - 24 / 9) < 1e-12 and abs(s["xi_addition"] - 2.0) < 1e-12 and s["xi_unit"] == 0.0
    loc = [{"ratio": 1.5, "diagonal": True}, {"ratio": 0.8, "diagonal": False}, {"ratio": 1.0, "diagonal": False}]
    out = localization_summary(loc)
    assert out["diag_mean"] == 1.5 and abs(out["off_abs_dev"] - 0.1) < 1e-12 and out["off_min"] == 0.8


def _cost(method, t, mem):
    return {"key": method, "method": method, "fwd_bwd_s": t, "fwd_bwd_std": 0.0, "optim_step_s": t / 10,
            "optim_step_std": 0.0, "total_iter_s": 1.1 * t, "total_iter_std": 0.0, "peak_memory_gib": mem,
            "trainable": 1, "optimizer_state": 2}


def test_table3_and_table4_rows():
    costs = [_cost("Non-linear FT", 1.0, 2.0), _cost("TaLoS", 0.5, 0.0)]
    ratio_rows, abs_rows = table3_rows(costs, "SST-2")
    by = {(r["method"], r["metric"]): r for r in ratio_rows}
    assert by[("TaLoS", "total_iter_time_ratio")]["value"] == pytest.approx(0.5)
    assert by[("TaLoS", "total_iter_time_ratio")]["paper"] == pytest.approx(0.1644 / 0.3722)
    assert by[("Non-linear FT", "peak_memory_ratio")]["value"] == 1.0
    absd = {(r["method"], r["metric"]): r for r in abs_rows}
    assert absd[("TaLoS", "optim_step_time")]["value"] == pytest.approx(0.05) and \
        absd[("TaLoS", "optim_step_time")]["std"] == 0.0
    zero = [_cost("Non-linear FT", 1.0, 0.0), _cost("TaLoS", 0.5, 0.0)]
    assert all(r["value"] is None for r in table3_rows(zero, "t")[0] if r["metric"] == "peak_memory_ratio")
    printed = paper_ratios(3)
    assert printed[("ViT-L/14", "TaLoS", "total_iter_time")] == pytest.approx(0.3263 / 1.2330)
    keyed = {"ft": costs[0], "lota": _cost("LoTA", 0.8, 1.5), "talos": costs[1]}
    t4 = table4_rows(keyed, {"seconds": 3.0, "peak_memory_gib": 0.5}, steps=100, calib_iterations=8)
    assert t4["talos"]["total_time"] == pytest.approx(100 * 0.55 + 3.0)
    assert t4["lota"]["mask_calibration_time"] == pytest.approx(8 * 1.1)
    assert t4["ft"]["mask_calibration_time"] is None and t4["talos"]["overall_peak_memory"] == 0.5
    assert calibration_iterations(128, 16, 4) == 32 and calibration_iterations(130, 16, 4) == 36
    assert calibration_iterations(16, rounds=1) >= 1


def test_l_lora_iteration_cost(tiny_model, sent_examples):
    names = inject_lora(tiny_model, rank=2, alpha=4.0)
    recipe = FinetuneRecipe(optimizer="adamw", lr=1e-3, batch_size=4, steps=1)
    cost = measure_iteration(tiny_model, sent_examples, "sent", "L-LoRA", names, recipe, linearized=False,
                             iterations=1, warmup=1)
    assert cost.trainable == sum(p.numel() for n, p in tiny_model.named_parameters() if n in names)
    assert cost.optimizer_state == 2 * cost.trainable and math.isfinite(cost.total_iter_s)


def test_an_isolated_measurement_whose_process_dies_raises_instead_of_waiting():
    """Table 3's isolated runs (isolate=True: cpu and paper plans): a killed worker is an error, not a hang."""
    import os
    from concurrent.futures.process import BrokenProcessPool

    from repro.p2.efficiency import _spawn

    assert _spawn(abs, -3) == 3
    with pytest.raises(BrokenProcessPool):
        _spawn(os._exit, 1)
