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
