"""The jobs of the chapter ``p2_sensitivity`` (P2 §4.1, App. A.7: Figs. 1, 10, 11), declared from its plan.

:func:`jobs` reads :func:`repro.p2.sensitivity.plan.sensitivity_plan` as ``notebooks/p2_sensitivity.md`` does: one
cached low-sensitivity mask (:func:`repro.p2.sensitivity.runs.low_sensitivity_mask`) per task of the notebook's model
family.  The pruning / perturbation scores and the random reference mask are evaluations, not jobs.
"""

from __future__ import annotations

from typing import Any

from repro.jobs import DataUse, JobSpec, make_job
from repro.p2.sensitivity.plan import sensitivity_plan
from repro.p2.zoo import data_how
from repro.profiles import Profile

NOTEBOOK = "p2_sensitivity"


def jobs(profile: Profile, seed: int = 13, model_family: str = "", fraction: float = 0.1,
         **overrides: Any) -> list[JobSpec]:
    """Every cached artifact of ``p2_sensitivity`` on ``profile`` for ``model_family`` ("" = the profile's)."""
    prof = profile.for_p2(model_family, NOTEBOOK)
    plan = sensitivity_plan(prof, fraction=fraction, **overrides)
    how = data_how(prof)
    return [make_job("mask", "repro.p2.sensitivity.runs.low_sensitivity_mask", prof, NOTEBOOK, cost=plan.n_fisher,
                     uses=[DataUse(t, how, prof.k_shot, seed, need=((prof.talos.calibration_split, plan.n_fisher),))],
                     task=t, n=plan.n_fisher, fraction=plan.fraction, seed=seed, k=prof.k_shot, target="logprob",
                     model=prof.model, max_length=prof.max_length)
            for t in prof.p2_tasks]


__all__ = ["NOTEBOOK", "jobs"]
