"""What the P1 §2-3 chapter (``notebooks/p1_localization.md``) runs for each profile: one typed plan.

:data:`PLANS` holds the :class:`LocalizationPlan` of each profile plan (``smoke`` checks the code paths, ``cpu`` is
sized for the chapter's budget on 2 cores, ``paper`` is the paper's setting: all 13 tasks, 5 seeds, the full test
sets); :func:`localization_plan` resolves the profile's and applies the notebook's non-None parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from repro.plans import ChapterPlan, FromProfile, plan_for, ranged
from repro.profiles import FinetuneRecipe, GraftRecipe, Profile


@dataclass(frozen=True)
class LocalizationPlan(ChapterPlan):
    """Tasks, seeds, region sizes and evaluation sizes of P1 Table 2, Table 1 and Figs. 2-5."""

    n_seeds: int = ranged(1, 1)               #: seeds per Table 2 / Table 1 cell (paper: 5)
    tasks: tuple[str, ...] = ("SST-2", "QNLI")  #: Table 2 tasks at profile.k_shot ("64-shot")
    large_tasks: tuple[str, ...] = ("SST-2",)   #: Table 2 tasks at profile.k_shot_large ("4096-shot")
    large_steps: int | None = ranged(None, 0)  #: graft steps at k_shot_large (None: profile.graft_steps)
    curve_tasks: tuple[str, ...] = ("SST-2",)   #: Fig. 2 tasks (paper: SST-2 and QNLI)
    variant_tasks: tuple[str, ...] = ("SST-2",)  #: Table 1 and Figs. 3-5 tasks
    variant_k: int | None = ranged(None, 0)   #: k-shot of Figs. 2-5 / Table 1 (None: profile.k_shot)
    #: region sizes of the Fig. 2-5 sweeps, fractions of the graftable set
    sparsities: tuple[float, ...] = ranged((1e-3,), 0.0, 1.0, low_open=True)
    sweep_steps: int | None = ranged(None, 0)  #: graft steps of the sweep points (None: profile.graft_steps)
    lottery_densities: tuple[float, ...] = ranged((0.1, 0.5, 0.9), 0.0, 1.0, low_open=True)  #: Fig. 4b region densities
    n_eval: int = ranged(0, 0)                #: test examples per figure point (0: the whole test split)

    def sweep_graft(self, profile: Profile) -> GraftRecipe:
        """The graft recipe of the Fig. 2-5 sweep points: the profile's with ``sweep_steps``."""
        return profile.graft.updated(steps=self.sweep_steps)

    def large_graft(self, profile: Profile) -> GraftRecipe:
        """The graft recipe of the Table 2 grafts at k_shot_large: the profile's with ``large_steps``."""
        return profile.graft.updated(steps=self.large_steps)

    def splits(self, profile: Profile) -> list[tuple[str, int]]:
        """Every (task, k) whose k-shot split the chapter trains on (checked by :func:`repro.data.check_splits`
        when the plan is built)."""
        variant_k = self.variant_k or profile.k_shot
        return ([(t, profile.k_shot) for t in self.tasks] + [(t, profile.k_shot_large) for t in self.large_tasks]
                + [(t, variant_k) for t in dict.fromkeys(self.curve_tasks + self.variant_tasks)])


def p1_tasks_but_trec(profile: Profile) -> tuple[str, ...]:
    """The profile's P1 tasks without TREC (the paper's 4096-shot columns: TREC has too few examples)."""
    return tuple(t for t in profile.p1_tasks if t != "TREC")


#: The chapter's plan per profile plan name (``repro.plans``: any other name takes "paper").
PLANS: dict[str, LocalizationPlan] = {
    "smoke": LocalizationPlan(large_steps=2, variant_k=FromProfile("k_shot"), sparsities=(1e-3, 1e-2), sweep_steps=2,
                              n_eval=64),
    # issue 15: 3 seeds for the headline Table 2 / Table 1 cells (depth), Fig. 2-5 on SST-2 only at 200 test
    # examples per point (breadth cut to fit the 90-minute book on 2 cores).  The 512-per-class grafts take the
    # profile's full graft steps, as the 64-per-class ones (3 steps left their regions at γ_base)
    # issue 24: Table 2's second 64-shot task is real movie-review sentences (MR), where it was generated QNLI
    "cpu": LocalizationPlan(n_seeds=3, tasks=("SST-2", "MR"), large_steps=None, curve_tasks=("SST-2",),
                            variant_k=FromProfile("k_shot"),
                            sparsities=(1e-3,), sweep_steps=3, n_eval=200),
    # the paper's setting (and any GPU profile's)
    "paper": LocalizationPlan(n_seeds=5, tasks=FromProfile("p1_tasks", lambda p: tuple(p.p1_tasks)),
                              large_tasks=FromProfile("p1_tasks but TREC", p1_tasks_but_trec),
                              curve_tasks=("SST-2", "QNLI"), variant_tasks=("SST-2", "AGNews", "QNLI", "QQP"),
                              variant_k=FromProfile("k_shot_large"), sparsities=(1e-5, 1e-4, 1e-3, 1e-2),
                              lottery_densities=(0.1, 0.3, 0.5, 0.7, 0.9), n_eval=0),
}


def localization_plan(profile: Profile, **overrides: Any) -> LocalizationPlan:
    """The profile's plan for the chapter (:data:`PLANS`, resolved), with the notebook's non-None parameters
    applied."""
    return plan_for(PLANS, profile).with_overrides(**overrides)


@dataclass(frozen=True)
class VariantRecipes:
    """The fine-tuning recipes of Table 1 and Fig. 5 next to the profile's SGD recipe."""

    sgd: FinetuneRecipe
    adamw: FinetuneRecipe
    retrain: FinetuneRecipe
    bitfit: FinetuneRecipe
    l1: float = 1e-3  #: the paper's l1 strength on the movement (Fig. 5)


#: Per profile plan name: the AdamW recipe of Fig. 5 (a whole recipe, or the fields replaced in the profile's SGD
#: recipe) and the fields of the SGD recipe replaced for re-training and BitFit (Table 1).  The paper plan uses the
#: paper's settings; for MiniLM (cpu) the learning rates were chosen on dev data.
VARIANTS: dict[str, tuple[FinetuneRecipe | dict[str, Any], dict[str, Any]]] = {
    "smoke": (FinetuneRecipe(optimizer="adamw", lr=1e-3, batch_size=4, steps=20, weight_decay=1e-4,
                             schedule="linear", eval_every=10), {}),
    "cpu": ({"optimizer": "adamw", "lr": 1e-4, "schedule": "linear"}, {"lr": 1e-1}),
    "paper": ({"optimizer": "adamw", "lr": 1e-5, "schedule": "linear"}, {}),
}


def variant_recipes(profile: Profile) -> VariantRecipes:
    """AdamW (Fig. 5), re-training (Table 1) and BitFit (Table 1) recipes of the profile's plan (:data:`VARIANTS`)."""
    sgd = profile.p1_finetune
    adamw, sparse = VARIANTS.get(profile.plan, VARIANTS["paper"])
    adamw = adamw if isinstance(adamw, FinetuneRecipe) else replace(sgd, **adamw)
    retrain = bitfit = replace(sgd, **sparse) if sparse else sgd
    return VariantRecipes(sgd=sgd, adamw=adamw, retrain=retrain, bitfit=bitfit)


__all__ = ["LocalizationPlan", "PLANS", "VARIANTS", "VariantRecipes", "localization_plan",
           "p1_tasks_but_trec", "variant_recipes"]
