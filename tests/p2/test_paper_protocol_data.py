"""S3 / S13: the paper profile's α-selection sets and TaLoS calibration inputs follow the official code per family
(vision: the whole ``<Task>Val`` / ImageNetVal, calibration on ``<Task>Val`` with the train transform; T5: the 32
validation examples for both), while the cpu / smoke profiles keep their own choices."""

from __future__ import annotations

import pytest

from repro.p2 import arithmetic as ar
from repro.p2.evaluator import Evaluator
from repro.p2.methods import calibration_examples, talos_mask
from repro.profiles import ArithmeticProtocol, get_profile


def test_paper_families_declare_the_official_n_val_and_calibration_split():
    paper = get_profile("paper")
    vision, nlp, base = paper.for_p2("vision"), paper.for_p2("nlp"), paper.for_p2("nlp-base")
    assert vision.p2_protocol.n_val == 0 and ar.protocol_settings(vision)["n_val"] == 0  # 0 = the whole split
    assert nlp.p2_protocol.n_val == 32 and base.p2_protocol.n_val == 32
    assert vision.talos.calibration_split == "dev" and nlp.talos.calibration_split == "dev"
    assert vision.talos.calibration_examples == 5000 and nlp.talos.calibration_examples == 32
    for name in ("cpu", "smoke"):
        assert get_profile(name).talos.calibration_split == "train"
    assert get_profile("paper-smoke").for_p2("vision").p2_protocol.n_val == 32  # CI size kept
    with pytest.raises(ValueError, match="n_val must be >= 0"):
        ArithmeticProtocol(n_val=-1)
    with pytest.raises(ValueError, match="calibration_split must be train or dev"):
        get_profile("smoke", talos_calibration_split="test")


@pytest.fixture(scope="module")
def vision_wb(tmp_path_factory):
    from repro.workbench import Workbench

    prof = get_profile("paper-smoke").for_p2("vision", device="cpu").with_(p2_protocol_n_val=0)
    return Workbench(prof, artifacts_dir=tmp_path_factory.mktemp("artifacts"))


def test_n_val_zero_selects_on_the_whole_dev_split(vision_wb):
    prof = vision_wb.profile
    task = prof.p2_tasks[0]
    ev = Evaluator(vision_wb, [task], prof.p2_control, ar.protocol_settings(prof)["n_val"], 8)
    for t in (task, prof.p2_control):
        assert ev.sets[t]["val"] == list(vision_wb.task(t).dev) and len(ev.sets[t]["val"]) > 8


def test_talos_calibrates_on_the_held_out_split_with_the_train_transform(vision_wb, monkeypatch):
    task = vision_wb.profile.p2_tasks[0]
    dev = vision_wb.task(task).dev
    chosen = calibration_examples(vision_wb, task)
    assert chosen and all(any(c is d for d in dev) for c in chosen)
    modes = []
    real = type(vision_wb.model).collate

    def spy(self, t, examples, train=False):
        modes.append(train)
        return real(self, t, examples, train)

    monkeypatch.setattr(type(vision_wb.model), "collate", spy)
    mask, meta = talos_mask(vision_wb, task)
    assert modes and all(modes)  # every calibration batch went through the training preprocessing
    assert meta["config"]["calibration_split"] == "dev" and not vision_wb.model.training
    assert 0 < mask.count() < mask.eligible_count


def test_smoke_calibrates_on_the_training_split(tmp_path):
    from repro.workbench import Workbench

    wb = Workbench(get_profile("smoke"), artifacts_dir=tmp_path)
    train = wb.task("SST-2").train
    chosen = calibration_examples(wb, "SST-2")
    assert chosen and all(any(c is d for d in train) for c in chosen)
