"""What the P1 §4 chapter (``notebooks/p1_calibration_ood.md``) runs for each profile: one typed plan.

:data:`PLANS` holds the :class:`CalibrationPlan` of each profile plan ("smoke" for smoke and paper-smoke, "cpu",
"paper" = the paper's setting, for any other plan too); :func:`calibration_plan` resolves the profile's and applies
the notebook's non-None parameters.  :func:`calibration_recipes` gives the re-training, BitFit and LoRA/adapter recipes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from repro.p1.ood import OOD_PAIRS, PRINTED_NAME
from repro.plans import ChapterPlan, FromProfile, plan_for, ranged
from repro.profiles import FinetuneRecipe, GraftRecipe, Profile


@dataclass(frozen=True)
class CalibrationPlan(ChapterPlan):
    """Tasks, seeds, sweeps and evaluation sizes of P1 Table 2 (ECE), Table 3, Fig. 6-7, Tables 6-7 and App. D."""

    n_seeds: int = ranged(1, 1)                        #: seeds per Table 2 ECE cell (cpu 3, paper 5), as Table 2
    #: k-shot of every model of the chapter (None: profile.k_shot; paper: k_shot_large, P1's "4096-shot unless
    #: mentioned otherwise": Tables 1, 6, 7 and Fig. 6 say 4096-shot)
    k: int | None = ranged(None, 1)
    ece_tasks: tuple[str, ...] = ("SST-2", "QNLI")     #: Table 2 ECE columns and the 40-90% claim
    ood_sources: tuple[str, ...] = ("SST-2", "QNLI")   #: Table 3 / Fig. 7 sources (targets: repro.p1.ood.OOD_PAIRS)
    sweep_sources: tuple[str, ...] = ("QNLI",)         #: sources with the graft-size sweep, WiSE and PEFT
    sweep_bases: tuple[float, ...] = ranged((1e-2,), 0.0, 1.0)  #: γ_base sparsities of the sweep, besides ``base``
    sweep_steps: int | None = ranged(2, 0)             #: graft steps of the sweep points (None: profile.graft_steps)
    wise_alphas: tuple[float, ...] = (0.0, 0.5, 1.0)   #: WiSE-FT / WiSE-Graft interpolation coefficients
    peft: tuple[str, ...] = ("lora:1", "houlsby:1")    #: PEFT baselines "lora:<rank>", "houlsby:<n>", "pfeiffer:<n>"
    gap_tasks: tuple[str, ...] = ("QNLI",)             #: App. D train-test gaps
    n_eval: int | None = ranged(32, 0)                 #: test examples per OOD / WiSE evaluation (None: all)
    base: float = ranged(1e-3, 0.0, 1.0)               #: γ_base of "the" graft (cpu, paper: the profile's)
    peft_recipe: tuple[tuple[str, Any], ...] = (       #: fields of profile.p1_finetune replaced for LoRA/adapters
        ("optimizer", "adamw"), ("lr", 1e-3), ("weight_decay", 0.0), ("schedule", "linear"))
    #: (source, targets) where the profile's OOD targets are not the paper's: the i-th target stands in for the
    #: i-th of repro.p1.ood.OOD_PAIRS[source] (another domain of real text); a source not here has the paper's
    ood_pairs: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def targets(self, source: str) -> list[str]:
        """The OOD targets of ``source`` in this plan (the paper's unless :attr:`ood_pairs` replaces them)."""
        own = dict(self.ood_pairs)
        if source in own:
            if len(own[source]) != len(OOD_PAIRS[source]):
                raise ValueError(f"ood_pairs[{source!r}] has {len(own[source])} targets; each stands in for one of the "
                                 f"paper's {list(OOD_PAIRS[source])}")
            return list(own[source])
        return list(OOD_PAIRS[source])

    def paper_target(self, source: str, target: str) -> str:
        """The paper's OOD target that ``target`` stands in for (itself where the plan keeps the paper's)."""
        mine = self.targets(source)
        return OOD_PAIRS[source][mine.index(target)] if target in mine else target

    def target_label(self, source: str, target: str) -> str:
        """How a table or panel names an OOD target: the paper's printed name, or "ours (for the paper's)"."""
        paper = PRINTED_NAME.get(self.paper_target(source, target), self.paper_target(source, target))
        shown = PRINTED_NAME.get(target, target)
        return shown if shown == paper else f"{shown} (for {paper})"

    def sweep_graft(self, profile: Profile) -> GraftRecipe:
        """The graft recipe of the sweep's other sizes: the profile's with ``sweep_steps``."""
        return profile.graft.updated(steps=self.sweep_steps)

    def shots(self, profile: Profile) -> int:
        """The k-shot every model of the chapter trains at: ``k``, else the profile's ``k_shot``."""
        return int(self.k or profile.k_shot)

    def splits(self, profile: Profile) -> list[tuple[str, int]]:
        """Every (task, k) whose k-shot split the chapter trains on."""
        k = self.shots(profile)
        return [(t, k) for t in dict.fromkeys((*self.ece_tasks, *self.ood_sources, *self.sweep_sources,
                                              *self.gap_tasks))]


    def shown(self) -> dict[str, Any]:
        """The plan as the notebook records it in its results' params (recipe excluded)."""
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v)
                for f in fields(self) if f.name != "peft_recipe"}


#: The chapter's plan per profile plan name (``repro.plans``: any other name takes "paper").
PLANS: dict[str, CalibrationPlan] = {
    "smoke": CalibrationPlan(),
    # Table 2's ECE columns on the localization chapter's Table 2 tasks and seeds (the same cached FT models and
    # grafts): a breadth cut that keeps 3 seeds and 500 test examples (issue 15 budget), on the real tasks
    # (issue 24: real tweets and movie-review sentences, where it was generated QNLI).  The OOD shifts are between
    # real domains, each standing in for the paper's pair: tweets (SST-2) -> movie reviews (MR, for IMDb) and
    # product reviews (CR, for Yelp); NYT editorial opinion (MPQA) -> tweets (SST-2) and product reviews (CR, for
    # Yelp); QNLI -> MNLI / SNLI stays generated (no package ships sentence pairs)
    "cpu": CalibrationPlan(n_seeds=3, ece_tasks=("SST-2", "MR"), ood_sources=("SST-2", "MPQA", "QNLI"),
                           sweep_bases=(1e-3,), sweep_steps=3, wise_alphas=(0.0, 0.25, 0.5, 0.75, 1.0),
                           gap_tasks=("SST-2", "MR"), n_eval=200, base=FromProfile("graft_base_sparsity"),
                           ood_pairs=(("SST-2", ("MR", "CR")), ("MPQA", ("SST-2", "CR"))),
                           peft_recipe=(("optimizer", "adamw"), ("lr", 1e-3), ("weight_decay", 0.0),
                                        ("warmup_steps", 18), ("schedule", "linear"))),
    # the paper's setting (and any GPU profile's): every model at 4096-shot (k_shot_large), the ECE columns on the
    # localization chapter's 4096-shot Table 2 tasks (TREC has too few examples), the same FT models and grafts
    "paper": CalibrationPlan(n_seeds=5, k=FromProfile("k_shot_large"),
                             ece_tasks=FromProfile("p1_tasks but TREC",
                                                   lambda p: tuple(t for t in p.p1_tasks if t != "TREC")),
                             ood_sources=("SST-2", "MPQA", "QNLI"),
                             sweep_sources=("SST-2", "MPQA", "QNLI"), sweep_bases=(5e-5, 1e-4, 1e-3),
                             sweep_steps=None, wise_alphas=tuple(round(0.1 * i, 1) for i in range(11)),
                             peft=("lora:1", "lora:2", "lora:8", "houlsby:1", "houlsby:2", "houlsby:16",
                                   "houlsby:64", "pfeiffer:1", "pfeiffer:2", "pfeiffer:16", "pfeiffer:64"),
                             gap_tasks=("SST-2", "AGNews", "QNLI", "QQP"), n_eval=None,
                             base=FromProfile("graft_base_sparsity"),
                             peft_recipe=(("optimizer", "adamw"), ("lr", 5e-4), ("batch_size", 16),
                                          ("weight_decay", 0.0), ("warmup_steps", 60), ("schedule", "linear"))),
}


def calibration_plan(profile: Profile, **overrides: Any) -> CalibrationPlan:
    """The profile's plan for the chapter (:data:`PLANS`, resolved), with the notebook's non-None parameters
    applied."""
    return plan_for(PLANS, profile).with_overrides(**overrides)


@dataclass(frozen=True)
class CalibrationRecipes:
    """FT (SGD), graft re-training, BitFit and LoRA/adapter recipes of the chapter."""

    sgd: FinetuneRecipe
    retrain: FinetuneRecipe
    bitfit: FinetuneRecipe
    peft: FinetuneRecipe


def calibration_recipes(profile: Profile, plan: CalibrationPlan) -> CalibrationRecipes:
    """The recipes: re-training and BitFit are those of the localization chapter's Table 1 (the same cached runs;
    the cpu profile's SGD lr 0.1 was chosen on dev data there); PEFT = the FT recipe with ``plan.peft_recipe``."""
    sgd = profile.p1_finetune
    sparse = replace(sgd, lr=1e-1) if profile.name == "cpu" else sgd
    return CalibrationRecipes(sgd=sgd, retrain=sparse, bitfit=sparse, peft=replace(sgd, **dict(plan.peft_recipe)))


__all__ = ["CalibrationPlan", "PLANS", "CalibrationRecipes", "calibration_plan", "calibration_recipes"]
