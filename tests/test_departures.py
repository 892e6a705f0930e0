"""The paper profile against the papers' values: every difference is a registered departure
(:mod:`repro.departures`), and the registry renders as the book page "Where this reproduction differs from the
papers".

:data:`PAPER_VALUES` is transcribed from the papers and the official code (``shared/spec/official-code-facts.md``:
A3-A5 for grafting, B1-B4 for P1 fine-tuning, D3-D4 and D7 for TaLoS).  A field is addressed by a dotted path on
``PROFILES["paper"]``; ``family.<name>.<field>`` reads a P2 model family.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from repro.departures import DEPARTURES, Departure, departure, departures_fields, departures_for, departures_markdown
from repro.profiles import PROFILES

ROOT = Path(__file__).resolve().parents[1]

#: dotted field of the paper profile -> (the papers' / official code's value, where it is stated)
PAPER_VALUES: dict[str, tuple[Any, str]] = {
    # P1 fine-tuning (B4: run_task.sh / trainer.py)
    "p1_finetune.optimizer": ("sgd", "B4"),
    "p1_finetune.lr": (1e-3, "B4"),
    "p1_finetune.batch_size": (2, "B4"),
    "p1_finetune.steps": (0, "A.2 (0 = the step budget p1_budget, resolved per task; run_task.sh: 1,000)"),
    "p1_budget.per_example": (16, "A.2 (16 x n x k steps)"),
    "p1_budget.shot_cap": (512, "A.2 (capped at 16 x n x 512 for 4096-shot)"),
    "p1_finetune.weight_decay": (1e-4, "B4"),
    "p1_finetune.grad_clip": (1.0, "B4 (HF max_grad_norm)"),
    "p1_finetune.schedule": ("constant", "B4"),
    "p1_finetune.eval_every": (100, "B4 (eval_steps)"),
    "k_shot": (64, "P1 Table 2"),
    "k_shot_large": (4096, "P1 Table 2"),
    "seeds": ((13, 21, 42, 87, 100), "B1 (LM-BFF data seeds)"),
    "n_test": (0, "A6 (the whole test split)"),
    # P1 grafting (A3-A5: graft_trainer.py, README)
    "graft.lr": (1e7, "A4"),
    "graft.steps": (100, "A4 (README)"),
    "graft.batch_size": (8, "A4"),
    "graft.max_examples": (1024, "A4 (128 batches of 8)"),
    "graft.sigmoid_bias": (10.0, "A3"),
    "graft.max_dev": (None, "A4 (the whole dev set)"),
    # TaLoS calibration (D3)
    "talos.sparsity": (0.9, "D3"),
    "talos.rounds": (4, "D3"),
    "talos.soft_value": (0.1, "D3 (code; the appendix says ~0.01)"),
    "alphas": (tuple(round(i * 0.05, 2) for i in range(21)), "D7 (linspace(0, 1, 21))"),
    # P2 vision family (D4, D7)
    "family.vision.model": ("clip-vit-b32", "P2 Tables 1-2 (ViT-B/32)"),
    "family.vision.tasks": (("Cars", "DTD", "EuroSAT", "GTSRB", "MNIST", "RESISC45", "SUN397", "SVHN"), "D7"),
    "family.vision.control": ("ImageNet", "D7"),
    "family.vision.talos_target": ("logit", "D3"),
    "family.vision.calibration_examples": (5000, "D3 (the Val split, at most 5000)"),
    "family.vision.finetune.optimizer": ("adamw", "D4"),
    "family.vision.finetune.lr": (1e-5, "D4"),
    "family.vision.finetune.weight_decay": (0.1, "D4"),
    "family.vision.finetune.batch_size": (128, "D4"),
    "family.vision.finetune.steps": (2000, "D4 (≈ 2,000 iterations per task)"),
    "family.vision.finetune.warmup_steps": (500, "D4"),
    "family.vision.finetune.schedule": ("cosine", "D4"),
    "family.vision.finetune.grad_clip": (1.0, "D4"),
    # P2 T5 family (D4)
    "family.nlp.model": ("t5-small", "P2 Tables 1-2 (T5-Small)"),
    "family.nlp.control": ("rte", "D7"),
    "family.nlp.talos_target": ("sequence-loglik", "D3"),
    "family.nlp.calibration_examples": (32, "D3 (the 32 validation examples)"),
    "family.nlp.finetune.optimizer": ("adamw", "D4"),
    "family.nlp.finetune.lr": (1e-4, "D4"),
    "family.nlp.finetune.weight_decay": (0.0, "D4"),
    "family.nlp.finetune.batch_size": (1024, "D4 (64 x 16 accumulation)"),
    "family.nlp.finetune.steps": (75000, "D4"),
    "family.nlp.finetune.schedule": ("constant", "D4"),
    "family.nlp.finetune.grad_clip": (0.0, "D4 (no clipping)"),
    # --- p2model --- P2 baselines per family (D9)
    "family.vision.tall_lambda": (0.2, "D9 (vision eval_tallmask_*)"),
    "family.nlp.tall_lambda": (0.6, "D9 (nlp eval_tallmask_*)"),
    "family.nlp-base.tall_lambda": (0.6, "D9 (nlp eval_tallmask_*)"),
    "family.vision.lora_style": ("official-vision", "D9 (vision/lora.py: s = α, A = xavier / √r, B = 0)"),
    "family.nlp.lora_style": ("peft", "D9 (nlp/lora_finetune.py: peft LoraConfig, s = α / r)"),
    "family.nlp-base.lora_style": ("peft", "D9 (nlp/lora_finetune.py: peft LoraConfig, s = α / r)"),
}


def paper_field(path: str) -> Any:
    """The paper profile's value at a dotted ``path`` (``family.<name>.`` reads a P2 model family)."""
    obj: Any = PROFILES["paper"]
    parts = path.split(".")
    if parts[0] == "family":
        obj, parts = obj.family(parts[1]), parts[2:]
    for part in parts:
        obj = getattr(obj, part)
    return obj


def same(ours: Any, paper: Any) -> bool:
    if isinstance(paper, float) and isinstance(ours, (int, float)):
        return math.isclose(float(ours), paper, rel_tol=1e-9)
    return ours == paper


@pytest.mark.parametrize("path", sorted(PAPER_VALUES))
def test_paper_profile_matches_the_paper_or_declares_why(path):
    paper, where = PAPER_VALUES[path]
    ours = paper_field(path)
    if not same(ours, paper):
        assert path in departures_fields(), (
            f"paper profile {path} = {ours!r}, the paper's is {paper!r} ({where}); register a Departure in "
            f"repro.departures naming {path!r} in its fields, or use the paper's value")


def test_every_declared_field_exists_and_differs():
    """A departure's ``fields`` name real fields, and (where the table has the field) a real difference."""
    for d in DEPARTURES:
        for path in d.fields:
            paper_field(path)  # raises AttributeError on a typo
            if path in PAPER_VALUES:
                assert not same(paper_field(path), PAPER_VALUES[path][0]), (
                    f"departure {d.key!r} declares {path}, which now equals the paper's value: drop it")


def test_registry_is_well_formed_and_renders():
    keys = [d.key for d in DEPARTURES]
    assert len(keys) == len(set(keys)), "departure keys must be unique"
    known = {p.stem.split("_table")[0] for p in (ROOT / "book" / "reference").glob("*.csv")}
    assert known  # the printed tables are there
    for d in DEPARTURES:
        assert d.sections, f"{d.key}: name the tables / figures it touches"
        assert all(s.startswith(d.paper.lower() + "-") for s in d.sections), (d.key, d.sections)
        assert departure(d.key) is d and d in departures_for(d.sections[0])
    page = departures_markdown()
    for d in DEPARTURES:
        assert f"({d.key})=" in page and d.what in page
    with pytest.raises(KeyError, match="no departure"):
        departure("no-such-key")
    with pytest.raises(ValueError, match="paper must be"):
        Departure("x", "P3", ("p3-table1",), "w", "p", "o", "y")


def test_each_table_links_the_departures_that_touch_it():
    from repro.report.display import DEPARTURES_PAGE, departure_note

    for d in DEPARTURES:
        for section in d.sections:
            note = departure_note(section + "-subset")  # a sub-table counts under its table's base id
            assert note is not None and f'href="{DEPARTURES_PAGE}#{d.key}"' in note._repr_html_()
    touched = {s for d in DEPARTURES for s in d.sections}
    assert departure_note("p9-table1") is None and "p9-table1" not in touched
