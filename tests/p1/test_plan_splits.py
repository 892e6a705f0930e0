"""The P1 paper plans ask only for k-shot splits that exist (C1), checked when the plan is built; Table 9's profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.data import DataError, check_splits
from repro.p1.appendix.runs import GPT2_BASE, GPT2_REGION_CAP, gpt2_profile
from repro.p1.appendix.plan import appendix_plan
from repro.p1.localization.plan import localization_plan
from repro.profiles import get_profile


def _rte(root: Path, per_class: tuple[int, int]) -> None:
    d = root / "RTE"
    d.mkdir(parents=True)
    (d / "LABELS.json").write_text(json.dumps(["entailment", "not_entailment"]))
    rows = [{"text_a": f"p {lab} {i}", "text_b": "h", "label": lab} for lab, n in enumerate(per_class) for i in range(n)]
    (d / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:3]))


def test_paper_localization_plan_on_rte_shaped_data(tmp_path: Path):
    """RTE's ~1,245 examples per class at the paper's 4096-shot: dev is 5 % of each class, never empty."""
    paper = get_profile("paper")
    plan = localization_plan(paper, tasks=["RTE"], large_tasks=["RTE"], curve_tasks=[], variant_tasks=[])
    assert plan.splits(paper) == [("RTE", 64), ("RTE", 4096)]
    _rte(tmp_path / "ok", (1249, 1241))
    sizes = check_splits(paper, plan.splits(paper), data_dir=tmp_path / "ok")
    assert sizes[("RTE", 64)] == {"entailment": (64, 64), "not_entailment": (64, 64)}
    assert sizes[("RTE", 4096)] == {"entailment": (1186, 63), "not_entailment": (1178, 63)}
    _rte(tmp_path / "bad", (1249, 1))
    with pytest.raises(DataError, match=r"RTE at k = 64: .*not_entailment.*entailment: 1249, not_entailment: 1"):
        check_splits(paper, plan.splits(paper), data_dir=tmp_path / "bad")


def test_every_paper_plan_lists_its_splits():
    paper = get_profile("paper")
    loc = localization_plan(paper).splits(paper)
    assert ("RTE", 4096) in loc and ("TREC", 64) in loc and ("TREC", 4096) not in loc
    app = appendix_plan(paper).splits(paper)
    assert ("SNLI", 50_000) in app and ("QQP", 4096) in app and ("MRPC", 4096) in app  # Table 9 at 4096-shot
    smoke = get_profile("smoke")
    assert localization_plan(smoke).splits(smoke) == [("SST-2", 8), ("QNLI", 8), ("SST-2", 32), ("SST-2", 8)]
    assert check_splits(smoke, localization_plan(smoke).splits(smoke))[("SST-2", 32)]["positive"] == (32, 32)


def test_table9_profile_follows_the_paper():
    """S10: GPT-2 small without clipping, 5 seeds, γ_base 10x under the 0.05 % cap; elsewhere the code path on the
    profile's own device (full-size random GPT-2 for the GPU check)."""
    paper = get_profile("paper")
    g = gpt2_profile(paper)
    assert g.model == "gpt2" and g.p1_finetune.grad_clip == 0.0 and g.p1_finetune.steps == 0
    assert GPT2_BASE < GPT2_REGION_CAP == 5e-4 and appendix_plan(paper).n_seeds == 5
    assert appendix_plan(get_profile("cpu")).n_seeds == 1
    check = gpt2_profile(get_profile("gpu-check"))
    assert check.model == "random-gpt2" and check.device == "cuda"
    cpu = gpt2_profile(get_profile("cpu"))
    assert cpu.model == "tiny-gpt2" and cpu.name == "cpu-tiny-gpt2" and cpu.device == "cpu"
