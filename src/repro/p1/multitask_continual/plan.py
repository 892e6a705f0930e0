"""What the P1 §5 chapter (``notebooks/p1_multitask_continual.md``) runs for each profile: one typed plan.

:data:`PLANS` holds the :class:`MultitaskPlan` of each profile plan ("smoke" for smoke and paper-smoke, "cpu",
"paper" = the paper's setting, for any other plan too); :func:`multitask_plan` resolves the profile's and applies
the notebook's non-None parameters.  :func:`mt_recipe` and :func:`continual_recipe` give the training recipes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from repro.data import get_spec
from repro.plans import ChapterPlan, FromProfile, plan_for, ranged
from repro.profiles import FinetuneRecipe, GraftRecipe, Profile

SIMILAR = (("SST-2", "CR"), ("MNLI", "SNLI"))  #: the task pairs the paper calls similar (Fig. 8a)


@dataclass(frozen=True)
class MultitaskPlan(ChapterPlan):
    """Tasks, steps and evaluation sizes of P1 Fig. 8, Figs. 11-13 and Table 4."""

    mt_tasks: tuple[str, ...] = ("SST-2", "CR", "QNLI")  #: tasks of the multi-task model (paper: 8)
    k: int | None = ranged(None, 0)         #: examples per class of every task (None: profile.k_shot; paper: 4096)
    #: SGD steps of the multi-task model (None: the tasks' single-task step budgets summed, the paper's "8 times as
    #: many iterations" for 8 tasks, App. C.1)
    mt_steps: int | None = ranged(20, 0)
    #: γ_base of the per-task regions: 0 = Fig. 8, 1e-5/1e-4 = Figs. 11-12
    region_bases: tuple[float, ...] = ranged((0.0,), 0.0, 1.0)
    mt_graft_steps: int = ranged(3, 0)      #: graft steps of each per-task region
    mt_graft_lr: float = ranged(1e9, 0.0, 1e30, low_open=True)  #: graft learning rate of the per-task regions with an empty γ_base
    #: training examples per graft step and task (None: the profile's graft.max_examples)
    mt_graft_examples: int | None = ranged(16, 1)
    adamw_mt: bool = False                  #: also the AdamW multi-task model (Fig. 13)
    n_eval: int | None = ranged(32, 0)      #: test examples per task of the Eq. 5 heatmaps (None: all)
    tune_steps: int = ranged(2, 0)          #: joint-loss graft steps after the union, Fig. 8d (0: none; paper: 10)
    #: γ_base of the single-task regions of grafting-continual (cpu, paper: the profile's graft_base_sparsity)
    continual_base: float = ranged(1e-2, 0.0, 1.0)
    continual_steps: int | None = ranged(10, 0)  #: SGD steps of each continual stage after the first (None: the recipe's)
    continual_graft_steps: int | None = ranged(None, 0)  #: graft steps of the single-task regions (None: the profile's)
    groups: tuple[tuple[str, tuple[str, ...]], ...] = (("sentiment", ("SST-2", "CR")),)  #: Fig. 8c-d task groups

    def region_graft(self, profile: Profile, base: float) -> GraftRecipe:
        """The graft recipe of the per-task regions on γ_base = top-``base``: the profile's with ``mt_graft_steps``
        and ``mt_graft_examples``, and ``mt_graft_lr`` for an empty γ_base (every σ(S − b) ≈ 0 needs a larger step)."""
        return profile.graft.updated(steps=self.mt_graft_steps, lr=self.mt_graft_lr if base == 0.0 else None,
                                     max_examples=self.mt_graft_examples)

    def tune_graft(self, profile: Profile) -> GraftRecipe:
        """The graft recipe of Fig. 8d's joint-loss steps: the profile's with ``tune_steps`` and half of
        ``mt_graft_examples`` per task."""
        half = self.mt_graft_examples and self.mt_graft_examples // 2
        return profile.graft.updated(steps=self.tune_steps, max_examples=half)

    def continual_graft(self, profile: Profile) -> GraftRecipe:
        """The graft recipe of the single-task regions of grafting-continual: the profile's with
        ``continual_graft_steps``."""
        return profile.graft.updated(steps=self.continual_graft_steps)

    def group_map(self) -> dict[str, list[str]]:
        """The groups whose tasks are all among ``mt_tasks``."""
        return {g: list(ts) for g, ts in self.groups if all(t in self.mt_tasks for t in ts)}

    def profile_for(self, profile: Profile) -> Profile:
        """The profile the chapter's workbench runs: ``profile`` with ``k_shot`` = the plan's k, so every run of the
        chapter (multi-task model, regions, single-task FT, continual stages) uses the same k-shot data."""
        return profile if self.k in (None, profile.k_shot) else profile.with_(k_shot=int(self.k))

    def splits(self, profile: Profile, extra: tuple[str, ...] = ()) -> list[tuple[str, int]]:
        """Every (task, k) the chapter trains on (the multi-task tasks and ``extra``, e.g. the continual sequence),
        checked by :func:`repro.data.check_splits` when the plan is built."""
        k = int(self.k or profile.k_shot)
        return [(t, k) for t in dict.fromkeys((*self.mt_tasks, *extra))]

    def shown(self) -> dict[str, Any]:
        """The plan as the notebook records it in its results' params."""
        out = {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}
        out["groups"] = {g: list(ts) for g, ts in self.groups}
        return out


#: The chapter's plan per profile plan name (``repro.plans``: any other name takes "paper").
PLANS: dict[str, MultitaskPlan] = {
    "smoke": MultitaskPlan(),
    # 4 of the paper's 8 tasks: its two similar pairs (a breadth cut for the 90-minute book, issue 15)
    "cpu": MultitaskPlan(mt_tasks=("SST-2", "CR", "MNLI", "SNLI"), mt_steps=200,
                         mt_graft_steps=4, mt_graft_lr=1e8, mt_graft_examples=64, n_eval=200, tune_steps=10,
                         continual_base=FromProfile("graft_base_sparsity"), continual_steps=50,
                         groups=(("sentiment", ("SST-2", "CR")), ("NLI", ("MNLI", "SNLI")))),
    # the paper's setting (and any GPU profile's), App. C.1 / C.3: every task at 4096-shot; the multi-task model
    # for the summed single-task budgets
    "paper": MultitaskPlan(mt_tasks=("SST-2", "CR", "MNLI", "SNLI", "QNLI", "QQP", "MRPC", "AGNews"),
                           k=FromProfile("k_shot_large"), mt_steps=None, region_bases=(0.0, 1e-5, 1e-4),
                           mt_graft_steps=100, mt_graft_lr=1e7,
                           adamw_mt=True, n_eval=None, mt_graft_examples=None, tune_steps=10,
                           continual_base=FromProfile("graft_base_sparsity"), continual_steps=None,
                           groups=(("sentiment", ("SST-2", "CR")), ("NLI", ("MNLI", "SNLI")),
                                   ("paraphrase", ("QQP", "MRPC")), ("question", ("QNLI", "QQP")),
                                   ("topic+sentiment", ("AGNews", "SST-2")))),
}


def multitask_plan(profile: Profile, **overrides: Any) -> MultitaskPlan:
    """The profile's plan for the chapter (:data:`PLANS`, resolved), with the notebook's non-None parameters
    applied."""
    return plan_for(PLANS, profile).with_overrides(**overrides)


def mt_recipe(profile: Profile, plan: MultitaskPlan) -> FinetuneRecipe:
    """The multi-task model's recipe: the single-task SGD recipe with ``plan.mt_steps`` steps (None: the tasks'
    single-task budgets at the plan's k, summed), its best-dev checkpoint chosen among 6 evaluations."""
    ft = profile.p1_finetune
    steps = plan.mt_steps or profile.p1_recipe([get_spec(t).num_labels for t in plan.mt_tasks],
                                              plan.k or profile.k_shot, replace(ft, steps=0)).steps
    return replace(ft, steps=steps, eval_every=max(steps // 6, 1) if ft.eval_every else 0)


def continual_recipe(profile: Profile) -> FinetuneRecipe:
    """The sparse continual stages' recipe: the localization chapter's graft re-training recipe (cpu: SGD lr 0.1,
    chosen on dev data there; otherwise the FT recipe)."""
    return replace(profile.p1_finetune, lr=1e-1) if profile.name == "cpu" else profile.p1_finetune


__all__ = ["MultitaskPlan", "PLANS", "SIMILAR", "continual_recipe", "mt_recipe", "multitask_plan"]
