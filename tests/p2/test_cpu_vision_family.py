"""The cpu profile's vision family (issue 26): its profile, its data and one P2 method run end to end on a tiny
random-init EfficientNet-Lite of the same classes over the real packaged images."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from repro.core.fisher import talos_select
from repro.core.masks import Mask
from repro.data.provenance import task_provenance
from repro.p2.sensitivity.runs import lowest_sensitivity_mask
from repro.p2.task_arithmetic.plan import arithmetic_plan
from repro.p2.zoo import CPU_TASKS, zoo_tasks
from repro.profiles import get_profile


def _vision():
    return get_profile("cpu").for_p2("", "p2_task_arithmetic")


def test_the_cpu_book_runs_tables_1_2_and_fig_1_on_the_vision_family():
    prof = _vision()
    assert prof.model == "efficientnet-lite0" and prof.p2_model_family == "vision"
    assert prof.paper_model == "ViT-B/32" and prof.data_source == "packaged-images"
    assert prof.p2_tasks == ("mnist5k", "digits", "textures") and prof.p2_control == "faces"
    assert prof.image_size == 32 and prof.talos.exclude_zero and prof.talos.target == "logit"
    assert dict(prof.p2_method_lr) and all(lr > 0 for _, lr in prof.p2_method_lr)
    assert get_profile("cpu").for_p2("", "p2_sensitivity").model == "efficientnet-lite0"
    # the other P2 pages stay on text, whose zoo is the 3 text tasks
    text = get_profile("cpu").for_p2("", "p2_disentanglement")
    assert text.model == "minilm" and zoo_tasks(text) == list(CPU_TASKS)
    assert arithmetic_plan(prof).task_list(prof) == ["mnist5k", "digits", "textures"]
    assert arithmetic_plan(prof).seeds(prof, 13) == [13, 21, 42]
    assert not get_profile("paper").for_p2("vision").talos.exclude_zero  # the paper keeps the literal rule


def test_vision_tasks_are_real_images_with_their_licence():
    prof = _vision()
    for task in (*prof.p2_tasks, prof.p2_control):
        rec = task_provenance(prof, task)
        assert rec.real and rec.licence and task in rec.source


def test_talos_select_can_leave_exact_zeros_out():
    scores = {"a": torch.tensor([0.0, 0.0, 0.0, 1.0]), "b": torch.tensor([2.0, 3.0, 0.5, 4.0])}
    full = Mask.full({"a": (4,), "b": (4,)})
    literal, _ = talos_select(scores, full, density=2 / 8)  # k = 2: the tied zeros win (ties kept: all 3)
    assert literal.tensors["a"].tolist() == [True, True, True, False] and literal.count() == 3
    live, t = talos_select(scores, full, density=2 / 8, exclude_zero=True)
    assert live.tensors["a"].tolist() == [False, False, False, True] and live.tensors["b"].tolist() == [
        False, False, True, False] and t == 1.0


@pytest.fixture(scope="module")
def tiny_wb(tmp_path_factory):
    from repro.workbench import Workbench

    prof = _vision().with_(model="tiny-efficientnet-lite", image_size=16, talos_calibration_examples=8,
                           p2_finetune=replace(_vision().p2_finetune, steps=2, warmup_steps=1, batch_size=4))
    return Workbench(prof, artifacts_dir=tmp_path_factory.mktemp("artifacts"))


def test_a_tiny_talos_run_on_real_textures(tiny_wb):
    from repro.p2.methods import finetune_method, talos_mask

    mask, meta = talos_mask(tiny_wb, "textures")
    zeros = meta["report"]["zero_scores"]
    assert len(zeros) == tiny_wb.profile.talos.rounds and mask.density() == pytest.approx(0.1, abs=0.02)
    tau = finetune_method(tiny_wb, "textures", "talos")
    moved = {n: (v != 0) for n, v in tau.items()}
    assert any(bool(m.any()) for m in moved.values())
    for n, m in moved.items():  # TaLoS moves only its mask
        assert not bool((m & ~mask.tensors[n].to(m.device)).any()), n


def test_fig1_mask_never_prunes_dead_weights(tiny_wb):
    from repro.p2.methods import calibration_examples

    wb = tiny_wb
    ex = calibration_examples(wb, "textures", 8, seed=13)
    names = wb.names("maskable")
    m = lowest_sensitivity_mask(wb.model, ex, "textures", names, fraction=0.1, seed=0, progress=False,
                                exclude_zero=True)
    literal = lowest_sensitivity_mask(wb.model, ex, "textures", names, fraction=0.1, seed=0, progress=False)
    assert m.count() == literal.count()


def test_cache_keys_cover_the_image_size_and_the_package_files(tmp_path):
    from repro.data.packaged_images import source_digest
    from repro.workbench import Workbench

    prof = _vision().with_(model="tiny-efficientnet-lite")
    a = Workbench(prof, artifacts_dir=tmp_path).data_key()["data"]
    b = Workbench(prof.with_(image_size=16), artifacts_dir=tmp_path).data_key()["data"]
    assert a != b and ":px=32+" in a and f"mnist5k@{source_digest('mnist5k')}" in a
