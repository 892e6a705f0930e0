"""What the P2 sensitivity chapter (``notebooks/p2_sensitivity.md``) runs for each profile: one typed plan.

:data:`PLANS` holds one rule for every profile plan: the Fisher uses ``profile.talos.calibration_examples`` inputs per task (of the
``profile.talos.calibration_split`` split, as TaLoS: :func:`repro.p2.methods.calibration_examples`),
and each task is evaluated on min(profile.n_test, 200) test examples (0 = all when the profile caps nothing); a
notebook parameter that is not None overrides its field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from repro.plans import ChapterPlan, FromProfile, plan_for, ranged
from repro.profiles import Profile


@dataclass(frozen=True)
class SensitivityPlan(ChapterPlan):
    """Fisher and evaluation sizes of P2 Figs. 1, 10 and 11."""

    fraction: float = ranged(0.1, 0.0, 1.0, low_open=True)  #: share of the maskable parameters selected (the paper's 10 %)
    n_fisher: int = ranged(1, 1)  #: training inputs per task for the diagonal Fisher
    n_eval: int = ranged(0, 0)    #: test examples per task (0: all)

    def _checked(self, clean: dict[str, Any]) -> dict[str, Any]:
        if "n_fisher" in clean and int(clean["n_fisher"]) < 1:  # 0 would silently mean "every training input"
            raise ValueError(f"n_fisher must be >= 1 (training inputs per task for the Fisher), got "
                             f"{clean['n_fisher']}; leave it None for the profile's "
                             f"talos.calibration_examples")
        return clean


_RULE = SensitivityPlan(n_fisher=FromProfile("talos.calibration_examples", lambda p: p.talos.calibration_examples),
                        n_eval=FromProfile("min(n_test, 200)", lambda p: min(p.n_test, 200) if p.n_test else 0))
#: The chapter's plan per profile plan name (``repro.plans``): the same rule for every profile.
PLANS: dict[str, SensitivityPlan] = {"smoke": _RULE, "cpu": _RULE, "paper": _RULE}


def sensitivity_plan(profile: Profile, **overrides: Any) -> SensitivityPlan:
    """The profile's plan for the chapter (:data:`PLANS`, resolved), with the notebook's non-None parameters
    applied."""
    return plan_for(PLANS, profile).with_overrides(**overrides)


__all__ = ["PLANS", "SensitivityPlan", "sensitivity_plan"]
