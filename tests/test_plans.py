"""repro.plans: every chapter declares PLANS keyed by the profile's plan name, profile-dependent values resolve, and
the ranges on the plan fields are checked."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, fields

import pytest

from repro.chapters import chapters
from repro.plans import ChapterPlan, FromProfile, check_ranges, field_range, plan_for, ranged
from repro.profiles import GraftRecipe, get_profile

#: every chapter package, from the chapter registry (a new chapter is checked here without editing this file)
CHAPTERS = tuple(c.package.removeprefix("repro.") for c in chapters() if c.package)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_declares_its_plans_by_plan_name(chapter):
    mod = importlib.import_module(f"repro.{chapter}.plan")
    assert set(mod.PLANS) == {"smoke", "cpu", "paper"}
    kinds = {type(p) for p in mod.PLANS.values()}
    assert len(kinds) == 1 and issubclass(kinds.pop(), ChapterPlan)


@dataclass(frozen=True)
class _Plan(ChapterPlan):
    n_seeds: int = ranged(1, 1)
    k: int | None = ranged(None, 1)
    sizes: tuple[float, ...] = ranged((0.1,), 0.0, 1.0)
    name: str = ""


def test_plan_for_resolves_profile_values_and_falls_back_to_paper():
    plans = {"smoke": _Plan(k=FromProfile("k_shot")), "cpu": _Plan(), "paper": _Plan(k=FromProfile("k_shot_large"),
                                                                                      name="paper")}
    smoke, other = get_profile("smoke"), get_profile("paper").with_(plan_name="a-cluster")
    assert plan_for(plans, smoke).k == smoke.k_shot
    assert plan_for(plans, get_profile("paper-smoke")).k == get_profile("paper-smoke").k_shot  # its plan: smoke
    assert plan_for(plans, other) == _Plan(k=other.k_shot_large, name="paper")
    assert "k_shot_large" in repr(FromProfile("k_shot_large"))


def test_ranges_sit_on_the_fields_and_are_checked():
    assert field_range(_Plan, "n_seeds") == (1, None) and field_range(_Plan, "name") is None
    with pytest.raises(ValueError, match=r"_Plan.n_seeds must be in \[1, inf\), got 0"):
        _Plan(n_seeds=0)
    with pytest.raises(ValueError, match=r"_Plan.sizes must be in \[0.0, 1.0\], got \(0.5, 2.0\)"):
        _Plan().with_overrides(sizes=[0.5, 2.0])
    with pytest.raises(ValueError, match="must be in"):
        _Plan(sizes=(float("nan"),))
    check_ranges(_Plan(k=FromProfile("k_shot")))  # unresolved and None values are not checked


@pytest.mark.parametrize("chapter", CHAPTERS)
@pytest.mark.parametrize("profile", ["smoke", "cpu", "paper"])
def test_every_resolved_plan_is_in_range_and_plain(chapter, profile):
    mod = importlib.import_module(f"repro.{chapter}.plan")
    prof = get_profile(profile)
    plan = plan_for(mod.PLANS, prof.for_p2(None, "p2_appendix") if chapter.startswith("p2") else prof)
    check_ranges(plan)
    assert not any(isinstance(getattr(plan, f.name), FromProfile) for f in fields(plan))


def test_a_chapter_plan_builds_one_graft_recipe_from_its_scalars():
    from repro.p1.multitask_continual.plan import multitask_plan

    prof = get_profile("cpu")
    plan = multitask_plan(prof)
    g = plan.region_graft(prof, 0.0)
    assert isinstance(g, GraftRecipe) and (g.steps, g.lr, g.max_examples) == (4, 1e8, 64)
    assert plan.region_graft(prof, 1e-5).lr == prof.graft.lr  # the larger step only for an empty γ_base
    assert plan.tune_graft(prof).max_examples == 32 and plan.tune_graft(prof).steps == plan.tune_steps
    assert plan.continual_graft(prof) == prof.graft  # None: the profile's
    assert prof.graft.updated() == prof.graft and prof.graft.updated(steps=0) == prof.graft


def test_the_runner_reads_the_plans_ranges_from_their_json():
    """The runner's fail-fast check (before any kernel) takes a plan field's range from repro/plan_ranges.json,
    written from the fields' metadata; the file must be in step with the plans."""
    from repro.inventory import plan_ranges
    from repro.plans import read_ranges
    from repro.runner.notebooks import ParameterError, parameter_rule, validate_params

    assert read_ranges() == plan_ranges(), ("src/repro/plan_ranges.json is stale: run "
                                            "`python -c 'from repro.inventory import write_plan_ranges as w; w()'`")
    rule = parameter_rule("p1_appendix", "track_every")  # the plan's [1, inf), not the name pattern's [0, inf)
    assert (rule.low, rule.high, rule.item) == (1, None, "int") and rule.meaning == "a count"
    with pytest.raises(ParameterError, match=r"'track_every' is 0, outside \[1, inf\)"):
        validate_params("p1_appendix", "smoke", {"track_every": 0})
    assert parameter_rule("p1_appendix", "graft_lr").low_open  # not a plan field: the name pattern's range
