"""Profiles hold validated recipes (GraftRecipe, TalosRecipe, ArithmeticProtocol) instead of flat fields."""

from __future__ import annotations

from dataclasses import fields

import pytest

from repro.profiles import PROFILES, ArithmeticProtocol, GraftRecipe, Profile, TalosRecipe, get_profile


def test_profiles_hold_recipes_and_no_escape_hatch():
    names = {f.name for f in fields(Profile)}
    assert "extra" not in names and not any(n.startswith(("talos_", "graft_l", "graft_s")) for n in names)
    cpu = PROFILES["cpu"]
    assert cpu.graft == GraftRecipe(lr=1e7, steps=20, batch_size=32, max_examples=256, max_dev=256)
    assert cpu.talos.calibration_examples == 32 and cpu.talos.sparsity == 0.9
    assert cpu.p2_protocol == ArithmeticProtocol(n_test=500, alpha_stride=4, adamerging_steps=30)
    assert PROFILES["smoke"].graft.steps == 3 and PROFILES["paper"].graft == GraftRecipe()


def test_with_sets_one_recipe_field_by_flat_name():
    p = get_profile("cpu", graft_lr=1e7, talos_sparsity=0.8, p2_protocol_n_val=8, graft_base_sparsity=1e-4)
    assert p.graft == GraftRecipe(lr=1e7, steps=20, batch_size=32, max_examples=256, max_dev=256)
    assert p.talos.sparsity == 0.8 and p.talos.rounds == 4 and p.p2_protocol.n_val == 8
    assert p.graft_base_sparsity == 1e-4  # a real Profile field wins over the recipe prefix
    with pytest.raises(KeyError, match="graft_lr"):
        get_profile("smoke", graft_learning_rate=1.0)


@pytest.mark.parametrize("make, message", [
    (lambda: GraftRecipe(steps=0), "GraftRecipe: steps must be >= 1"),
    (lambda: GraftRecipe(lr=-1.0), r"GraftRecipe: lr must be in \(0, 1e30\]"),
    (lambda: GraftRecipe(batch_size=0), "batch_size and max_examples"),
    (lambda: TalosRecipe(sparsity=1.0), "TalosRecipe: sparsity must be in"),
    (lambda: TalosRecipe(rounds=0), "TalosRecipe: rounds"),
    (lambda: TalosRecipe(soft_value=2.0), "soft_value"),
    (lambda: ArithmeticProtocol(alpha_stride=0), "alpha_stride"),
    (lambda: get_profile("smoke", talos_sparsity=1.5), "TalosRecipe: sparsity"),
])
def test_recipes_validate_with_clear_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_p2_recipe_gives_a_method_its_own_lr_and_keeps_the_rest_shared():
    from repro.p2.methods import p2_recipe

    prof = get_profile("smoke").with_(p2_method_lr=(("talos", 5e-3),))
    shared = prof.p2_finetune
    assert p2_recipe(prof) == shared and p2_recipe(prof, "ft") == shared
    talos = p2_recipe(prof, "talos")
    assert talos.lr == 5e-3 and talos.steps == shared.steps and talos.batch_size == shared.batch_size
    with pytest.raises(ValueError, match="unknown P2 method"):
        p2_recipe(prof, "lotta")
    with pytest.raises(ValueError, match=r"unknown P2 methods \['tallos'\]"):
        p2_recipe(prof.with_(p2_method_lr=(("tallos", 1e-3),)), "ft")
    # a P2 model family brings its own recipe: the text profile's per-method lrs do not carry over
    paper = get_profile("paper").with_(p2_method_lr=(("talos", 5e-3),))
    assert paper.for_p2("vision").p2_method_lr == ()


def test_paper_p1_step_budget_is_the_papers_a2_rule():
    """S8: 16·n·k steps, capped at 16·n·512 (App. A.2); a recipe with steps = 0 takes the budget, others keep theirs."""
    from dataclasses import replace

    from repro.core.finetune import train
    from repro.profiles import FinetuneRecipe, StepBudget

    paper = get_profile("paper")
    assert paper.p1_finetune.steps == 0 and paper.p1_budget == StepBudget(16, 512)
    assert paper.p1_recipe([2], 64).steps == 2048 and paper.p1_recipe([2], 4096).steps == 16_384
    assert paper.p1_recipe([3], 4096).steps == 24_576 and paper.p1_recipe([4], 4096).steps == 32_768
    assert paper.p1_recipe([6]).steps == 6144  # TREC at 64-shot
    adamw = replace(paper.p1_finetune, optimizer="adamw", lr=1e-5)  # a variant inherits the budget
    assert paper.p1_recipe([2], 4096, adamw) == replace(adamw, steps=16_384)
    for name in ("smoke", "cpu"):  # their recipes keep their own steps
        prof = get_profile(name)
        assert prof.p1_budget is None and prof.p1_recipe([2], prof.k_shot_large) is prof.p1_finetune
    with pytest.raises(ValueError, match="p1_budget"):
        get_profile("smoke", p1_finetune=FinetuneRecipe(steps=0)).p1_recipe([2])
    with pytest.raises(ValueError, match="steps must be >= 0"):
        FinetuneRecipe(steps=-1)
    with pytest.raises(ValueError, match="resolve it first"):
        train(None, {"t": [1]}, FinetuneRecipe(steps=0), [])


def test_workbench_resolves_the_step_budget_into_the_cache_key(tmp_path):
    from dataclasses import replace

    from repro.profiles import StepBudget
    from repro.workbench import Workbench

    smoke = get_profile("smoke")
    prof = smoke.with_(p1_finetune=replace(smoke.p1_finetune, steps=0), p1_budget=StepBudget(1, 2))
    wb = Workbench(prof, artifacts_dir=tmp_path)
    _, meta = wb.finetune_run("SST-2")
    assert meta["config"]["recipe"]["steps"] == 1 * 2 * 2
    assert wb.p1_recipe(["SST-2", "QNLI"]).steps == 8  # several tasks: the budgets summed


def test_notebook_profile_is_the_one_way_a_notebook_builds_its_profile():
    """issue 31 §2: every notebook builds its profile with ``notebook_profile`` and nothing else."""
    import re

    from repro.chapters import chapter_names
    from repro.paths import repo_root
    from repro.profiles import get_profile, notebook_profile

    for name in chapter_names():
        text = (repo_root() / "notebooks" / f"{name}.md").read_text()
        assert len(re.findall(r"\bnotebook_profile\(profile, NOTEBOOK\b", text)) == 1, name
        assert not re.search(r"\bget_profile\(|\.for_p2\(|\.with_device\(|graft_profile", text), name
    smoke = get_profile("smoke")
    prof = notebook_profile("smoke", "p1_localization", "cpu", graft_lr=3.0)
    assert prof.graft.lr == 3.0 and prof.graft.steps == smoke.graft.steps and prof.device == "cpu"
    assert notebook_profile("smoke", "p1_calibration_ood") == smoke
    p2 = notebook_profile("paper", "p2_task_arithmetic", model_family="nlp")
    assert p2 == get_profile("paper").for_p2("nlp", "p2_task_arithmetic")
    assert p2.for_p2("nlp", "p2_task_arithmetic") == p2  # the chapter's jobs() may apply it again: idempotent
    assert (notebook_profile("paper", "p2_task_arithmetic").for_p2("", "p2_task_arithmetic")
            == notebook_profile("paper", "p2_task_arithmetic"))
    with pytest.raises(ValueError, match="unknown profile"):
        notebook_profile("nope", "p1_localization")
    with pytest.raises(ValueError, match="no model family"):
        notebook_profile("smoke", "p1_localization", model_family="vision")
